//! The scale-out options of the streaming commands (`--workers`, `--processes`, `--process`,
//! `--hostfile`, `--connect-timeout`): the command runs on timely dataflow through the code of `pacstream
//! dataflow`, and writes the files its one-process run writes.
//!
//! Every process of a cluster runs the same command with its own `--process`; each reads
//! the input file itself, and the process holding worker 0 writes the records, the summary
//! and the report (`--summary -` included: the processes connect without writing to the
//! standard output, see `pacstream_dataflow::cluster`). The shared options that have no
//! counterpart on a cluster are refused (exit code 2, nothing written) by
//! [`check_shared_options`], each with the reason.

use std::path::PathBuf;

use clap::Args;

use super::dataflow::{ClusterArgs, ClusterConfig, timely_config};
use crate::failure::bad_input;
use crate::options::{BadRowPolicy, InputSource, OutputTarget, RecordFormat, RunOptions};

/// `--workers`, `--processes`, `--process`, `--hostfile`, `--connect-timeout`.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Scale-out (timely dataflow)")]
pub struct ScaleOutArgs {
    /// Worker threads per process (1 to 256). The output is the same bytes as the
    /// one-process run's.
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,

    /// Processes of a cluster (1 to 1,024), each started with the same arguments and its
    /// own --process; they talk over TCP at the addresses of --hostfile.
    #[arg(long, value_name = "P")]
    pub processes: Option<usize>,

    /// This process's index in the cluster (0-based; process 0 writes the outputs).
    #[arg(long, value_name = "I")]
    pub process: Option<usize>,

    /// File of host:port lines, one per process (process i listens on line i + 1).
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,

    /// Seconds a process of a cluster waits for the others to connect before it gives up
    /// (1 to 86,400; default 300).
    #[arg(long, value_name = "SECONDS")]
    pub connect_timeout: Option<u64>,
}

impl ScaleOutArgs {
    /// Whether any scale-out option was given.
    pub fn is_given(&self) -> bool {
        self.workers.is_some()
            || self.processes.is_some()
            || self.process.is_some()
            || self.hostfile.is_some()
            || self.connect_timeout.is_some()
    }

    /// timely's configuration, every count checked (as `pacstream dataflow` checks it)
    /// before anything is read or written.
    pub fn config(&self, files: &ScaleOutFiles) -> anyhow::Result<ClusterConfig> {
        timely_config(&ClusterArgs {
            input: files.input.clone(),
            columns: None,
            output: files.records.clone(),
            summary: None,
            checkpoint_dir: None,
            checkpoint_every: 1,
            workers: self.workers.unwrap_or(1),
            processes: self.processes.unwrap_or(1),
            process: self.process.unwrap_or(0),
            hostfile: self.hostfile.clone(),
            connect_timeout: self.connect_timeout,
        })
    }
}

/// The files of a scale-out run: the input every process reads, and the records file
/// worker 0 writes (JSON lines).
#[derive(Clone, Debug)]
pub struct ScaleOutFiles {
    /// The input file.
    pub input: PathBuf,
    /// `--output`.
    pub records: Option<PathBuf>,
}

/// Refuses, with the reason, each shared option that has no counterpart on a cluster;
/// returns the files the run reads and writes. `command` names the command in messages.
pub fn check_shared_options(options: &RunOptions, command: &str) -> anyhow::Result<ScaleOutFiles> {
    let refuse = |what: &str| bad_input(format!("{command} on several workers: {what}"));
    let input = match &options.input.source {
        InputSource::File(path) => path.clone(),
        InputSource::Stdin => {
            return Err(refuse(
                "every process reads the input itself, so it must be a file, not standard input",
            ));
        }
    };
    let records = match &options.output {
        None => None,
        Some(output) => {
            let OutputTarget::File(path) = &output.target else {
                return Err(refuse(
                    "--output - is not available: worker 0 writes the records to a file",
                ));
            };
            if output.format != RecordFormat::Jsonl {
                return Err(refuse(&format!(
                    "the records are written as JSON lines, not {}: give --output a .jsonl \
                     name (or --format jsonl)",
                    output.format.name()
                )));
            }
            Some(path.clone())
        }
    };
    if options.plot.is_some() {
        return Err(refuse(
            "--plot draws a sample of the whole stream, which no worker holds; draw it with \
             a one-process run",
        ));
    }
    if options.checkpoints.save.is_some() || options.checkpoints.resume.is_some() {
        return Err(refuse(
            "--checkpoint and --resume save and restore one process's state; a cluster \
             checkpoints every worker at epoch boundaries: use pacstream dataflow with \
             --checkpoint-dir",
        ));
    }
    if options.input.on_bad_row == BadRowPolicy::Skip {
        return Err(refuse(
            "--on-bad-row skip is not available: a bad row stops every worker (the rows are \
             shared out by their position in the input)",
        ));
    }
    Ok(ScaleOutFiles { input, records })
}
