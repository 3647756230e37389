//! `pacstream`: learning from data streams with regret guarantees, from the command line.
//!
//! A thin front-end: the arguments become validated settings, the `pacstream` library does
//! the learning, and this crate reads the input, writes the outputs, draws the figures and
//! keeps checkpoints. `pacstream <command> [options] <input>`, one command per algorithm
//! family.
//!
//! The binary is `src/main.rs`, which calls [`main`]. The modules are public so that the
//! fuzz targets (`fuzz/`) drive the same code as the binary; they are not a stable API.
//!
//! Exit codes: 0 success, 2 bad input or usage, 1 internal failure.

// The binary never unwraps: every failure becomes a message and an exit code.
#![warn(clippy::unwrap_used)]

pub mod commands;
pub mod failure;
pub mod io;
pub mod memory;
pub mod options;
pub mod plot;
pub mod stream;
pub mod ui;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::failure::{EXIT_FAILURE, EXIT_SUCCESS, exit_code, is_broken_pipe};

/// Learning from data streams with regret guarantees.
#[derive(Parser, Debug)]
#[command(
    name = "pacstream",
    bin_name = "pacstream",
    version,
    about,
    long_about = "Learning from data streams with regret guarantees.\n\n\
        Every command reads a CSV or TSV file (or - for standard input) as a stream, learns \
        from it, and writes what the options ask for: per-round records (--output), the final \
        model (--summary), a figure (--plot).\n\n\
        Exit codes: 0 success, 2 bad input or usage, 1 internal failure.",
    propagate_version = true
)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands, one per algorithm family.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Aggregate experts' advice over a stream, with the rule's regret bound.
    Experts(commands::experts::ExpertsArgs),
    /// Cluster points with k-means (batch) or sequential k-means (--online).
    Kmeans(commands::kmeans::KMeansArgs),
    /// Cluster a stream with PACBO: an unknown, changing number of clusters.
    Paco(commands::paco::PacoArgs),
    /// Learn a principal curve from a stream (sequential principal curves).
    Curve(commands::curve::CurveArgs),
    /// Project rows on a principal curve fitted by `pacstream curve`.
    Project(commands::project::ProjectArgs),
    /// Run on several worker threads and processes (timely dataflow): data-parallel
    /// k-means, or one learner per key.
    Dataflow(commands::dataflow::DataflowArgs),
}

/// The binary's `main`: parses the command line, runs the command, prints the error if any,
/// and returns the exit code.
pub fn main() -> ExitCode {
    // clap prints usage errors and exits with code 2, help and version with 0.
    let cli = Cli::parse();
    // A panic is a bug, never the user's fault: the hook has printed it; exit with 1.
    let outcome = catch_unwind(AssertUnwindSafe(|| run(&cli)));
    ExitCode::from(match outcome {
        Ok(Ok(())) => EXIT_SUCCESS,
        Ok(Err(error)) if is_broken_pipe(&error) => EXIT_SUCCESS,
        Ok(Err(error)) => {
            ui::print_error(&error);
            exit_code(&error)
        }
        Err(_) => EXIT_FAILURE,
    })
}

/// Runs a parsed command line.
pub fn run(cli: &Cli) -> anyhow::Result<()> {
    match &cli.command {
        Command::Experts(args) => commands::experts::run(args),
        Command::Kmeans(args) => commands::kmeans::run(args),
        Command::Paco(args) => commands::paco::run(args),
        Command::Curve(args) => commands::curve::run(args),
        Command::Project(args) => commands::project::run(args),
        Command::Dataflow(args) => commands::dataflow::run(args),
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// `12345` as the help writes it: `12,345`.
    fn grouped(value: u64) -> String {
        let digits = value.to_string();
        let mut out = String::new();
        for (i, digit) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(digit);
        }
        out
    }

    /// Every count option's help states the upper bound the library checks, so that the two
    /// cannot drift apart.
    #[test]
    fn help_states_the_library_limits() {
        use pacstream::curves::limits as curve;
        use pacstream::experts::limits as experts;
        use pacstream::kmeans::limits as kmeans;
        use pacstream::paco::limits as paco;
        // The counts, each written as the help groups its digits.
        let counts = [
            ("kmeans", "k", kmeans::MAX_CLUSTERS),
            ("kmeans", "n-init", kmeans::MAX_N_INIT),
            ("kmeans", "max-iter", kmeans::MAX_ITER),
            ("kmeans", "init-size", kmeans::MAX_INIT_SIZE),
            ("paco", "max-k", paco::MAX_K),
            ("paco", "max-k", paco::MAX_MODEL_VALUES),
            ("paco", "warmup", paco::MAX_WARMUP),
            ("paco", "iterations", paco::MAX_ITERATIONS),
            ("paco", "window", paco::MAX_WINDOW),
            ("curve", "max-segments", curve::MAX_SEGMENTS),
            ("curve", "local-vertices", curve::MAX_LOCAL_VERTICES),
            ("curve", "max-candidates", curve::MAX_CANDIDATES),
            ("curve", "warmup", curve::MAX_WARMUP),
            ("curve", "window", curve::MAX_WINDOW),
        ];
        let mut cases: Vec<(&str, &str, String)> = counts
            .into_iter()
            .map(|(command, option, bound)| (command, option, grouped(bound as u64)))
            .collect();
        cases.extend([
            ("paco", "eta", format!("0 to {}", paco::MAX_ETA)),
            ("experts", "eta", format!("{:e}", experts::MAX_ETA)),
            (
                "experts",
                "loss-bound",
                format!(
                    "[{:e}, {:e}]",
                    experts::MIN_LOSS_BOUND,
                    experts::MAX_LOSS_BOUND
                ),
            ),
        ]);
        let mut cli = Cli::command();
        for (command, option, bound) in &cases {
            let sub = cli
                .find_subcommand_mut(command)
                .unwrap_or_else(|| panic!("no command {command}"));
            let arg = sub
                .get_arguments()
                .find(|a| a.get_long() == Some(*option))
                .unwrap_or_else(|| panic!("no --{option} in {command}"));
            let help = arg
                .get_long_help()
                .or(arg.get_help())
                .map(ToString::to_string)
                .unwrap_or_default();
            assert!(
                help.contains(bound.as_str()),
                "{command} --{option}: the help does not say {bound}: {help}"
            );
        }
        assert_eq!(
            experts::MAX_HORIZON,
            1 << 53,
            "the help of --horizon says 2^53"
        );
    }
}
