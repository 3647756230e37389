//! `pacstream`: learning from data streams with regret guarantees, from the command line.
//!
//! A thin binary: the arguments become validated settings, the library does the learning,
//! and this crate reads the input, writes the outputs, draws the figures and keeps
//! checkpoints. `pacstream <command> [options] <input>`, one command per algorithm family.
//!
//! Exit codes: 0 success, 2 bad input or usage, 1 internal failure.

// The binary never unwraps: every failure becomes a message and an exit code.
#![warn(clippy::unwrap_used)]

mod commands;
mod failure;
mod io;
mod options;
mod plot;
mod stream;
mod ui;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::failure::{EXIT_FAILURE, EXIT_SUCCESS, exit_code, is_broken_pipe};

/// Learning from data streams with regret guarantees.
#[derive(Parser, Debug)]
#[command(
    name = "pacstream",
    version,
    about,
    long_about = "Learning from data streams with regret guarantees.\n\n\
        Every command reads a CSV or TSV file (or - for standard input) as a stream, learns \
        from it, and writes what the options ask for: per-round records (--output), the final \
        model (--summary), a figure (--plot).\n\n\
        Exit codes: 0 success, 2 bad input or usage, 1 internal failure.",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The commands, one per algorithm family.
#[derive(Subcommand, Debug)]
enum Command {
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
}

fn main() -> ExitCode {
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

fn run(cli: &Cli) -> anyhow::Result<()> {
    match &cli.command {
        Command::Experts(args) => commands::experts::run(args),
        Command::Kmeans(args) => commands::kmeans::run(args),
        Command::Paco(args) => commands::paco::run(args),
        Command::Curve(args) => commands::curve::run(args),
        Command::Project(args) => commands::project::run(args),
    }
}
