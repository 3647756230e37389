//! timely's configuration from the options, the run of every worker of this process, and
//! what worker 0's process writes at the end.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use pacstream_dataflow::checkpoint::Checkpoints;
use pacstream_dataflow::{Error as FlowError, RunFiles};
use timely::communication::WorkerGuards;
use timely::{CommunicationConfig, Config, WorkerConfig};

use super::ClusterArgs;
use crate::failure::bad_input;
use crate::io::files::file_id;
use crate::ui::Notes;

/// The largest number of worker threads per process, and of processes.
pub const WORKERS_LIMIT: usize = 256;
/// The largest number of processes.
pub const PROCESSES_LIMIT: usize = 1024;
/// The largest hostfile read (bytes).
const HOSTFILE_LIMIT: u64 = 1 << 20;
/// `--connect-timeout`'s default, in seconds: time to start the processes of a cluster by
/// hand on several machines.
const DEFAULT_CONNECT_TIMEOUT: u64 = 300;
/// The longest `--connect-timeout`, in seconds (a day).
pub const CONNECT_TIMEOUT_LIMIT: u64 = 86_400;

/// What the workers of this process run on: timely's configuration, and how long a
/// cluster's process waits for the others to connect.
#[derive(Debug)]
pub struct ClusterConfig {
    /// timely's configuration.
    pub timely: Config,
    /// The wait for the other processes of a cluster.
    pub connect_timeout: Duration,
}

impl ClusterConfig {
    /// The worker threads of this process.
    pub fn workers_per_process(&self) -> usize {
        match &self.timely.communication {
            CommunicationConfig::Thread => 1,
            CommunicationConfig::Process(threads) | CommunicationConfig::ProcessBinary(threads) => {
                *threads
            }
            CommunicationConfig::Cluster { threads, .. } => *threads,
        }
    }
}

/// timely's configuration from the options, every count checked before anything starts.
pub fn timely_config(args: &ClusterArgs) -> anyhow::Result<ClusterConfig> {
    if args.workers == 0 || args.workers > WORKERS_LIMIT {
        return Err(bad_input(format!(
            "--workers must be between 1 and {WORKERS_LIMIT}, got {}",
            args.workers
        )));
    }
    if args.processes == 0 || args.processes > PROCESSES_LIMIT {
        return Err(bad_input(format!(
            "--processes must be between 1 and {PROCESSES_LIMIT}, got {}",
            args.processes
        )));
    }
    if args.process >= args.processes {
        return Err(bad_input(format!(
            "--process must be below --processes ({}), got {}",
            args.processes, args.process
        )));
    }
    let communication = if args.processes > 1 {
        let Some(hostfile) = &args.hostfile else {
            return Err(bad_input("--processes above 1 needs --hostfile"));
        };
        let addresses = read_hostfile(hostfile, args.processes)?;
        CommunicationConfig::Cluster {
            threads: args.workers,
            process: args.process,
            addresses,
            report: false,
            zerocopy: false,
        }
    } else if args.hostfile.is_some() {
        return Err(bad_input("--hostfile needs --processes above 1"));
    } else if args.workers > 1 {
        CommunicationConfig::Process(args.workers)
    } else {
        CommunicationConfig::Thread
    };
    if args.checkpoint_every == 0 {
        return Err(bad_input("--checkpoint-every must be >= 1"));
    }
    let connect_timeout = match args.connect_timeout {
        None => DEFAULT_CONNECT_TIMEOUT,
        Some(_) if args.processes == 1 => {
            return Err(bad_input("--connect-timeout needs --processes above 1"));
        }
        Some(seconds) if seconds == 0 || seconds > CONNECT_TIMEOUT_LIMIT => {
            return Err(bad_input(format!(
                "--connect-timeout must be between 1 and {CONNECT_TIMEOUT_LIMIT} seconds, got \
                 {seconds}"
            )));
        }
        Some(seconds) => seconds,
    };
    check_outputs(args)?;
    Ok(ClusterConfig {
        timely: Config {
            communication,
            worker: WorkerConfig::default(),
        },
        connect_timeout: Duration::from_secs(connect_timeout),
    })
}

fn read_hostfile(path: &Path, processes: usize) -> anyhow::Result<Vec<String>> {
    let file = File::open(path)
        .map_err(|e| bad_input(format!("cannot open '{}': {e}", path.display())))?;
    let mut addresses = Vec::new();
    let mut reader = BufReader::new(file.take_bounded());
    let mut line = String::new();
    while addresses.len() < processes {
        line.clear();
        if reader
            .read_line(&mut line)
            .context("reading the hostfile")?
            == 0
        {
            break;
        }
        let address = line.trim();
        if !address.is_empty() {
            addresses.push(address.to_string());
        }
    }
    if addresses.len() < processes {
        return Err(bad_input(format!(
            "'{}' names {} hosts for {processes} processes",
            path.display(),
            addresses.len()
        )));
    }
    Ok(addresses)
}

trait TakeBounded {
    fn take_bounded(self) -> std::io::Take<File>;
}

impl TakeBounded for File {
    fn take_bounded(self) -> std::io::Take<File> {
        std::io::Read::take(self, HOSTFILE_LIMIT)
    }
}

/// Refuses an output that is the input, or another output, under another name (compared by
/// device and inode, before anything is written).
fn check_outputs(args: &ClusterArgs) -> anyhow::Result<()> {
    let input = file_id(&args.input);
    let outputs: Vec<&PathBuf> = args.output.iter().chain(&args.summary).collect();
    for (i, output) in outputs.iter().enumerate() {
        let id = file_id(output);
        if id.is_some() && id == input {
            return Err(bad_input(format!(
                "'{}' is the input '{}': refusing to overwrite it",
                output.display(),
                args.input.display()
            )));
        }
        if outputs[..i]
            .iter()
            .any(|o| o == output || (id.is_some() && file_id(o) == id))
        {
            return Err(bad_input(format!(
                "'{}' is given as two outputs",
                output.display()
            )));
        }
    }
    Ok(())
}

pub(crate) fn files(args: &ClusterArgs) -> RunFiles {
    RunFiles {
        records: args.output.clone(),
        checkpoints: args.checkpoint_dir.clone().map(|dir| Checkpoints {
            dir,
            every: args.checkpoint_every,
        }),
        summary: args.summary.is_some(),
    }
}

pub(crate) fn flow_error(error: FlowError) -> anyhow::Error {
    match error {
        FlowError::Library(_) | FlowError::Row { .. } | FlowError::Usage(_) => {
            bad_input(error.to_string())
        }
        other => anyhow::Error::new(other),
    }
}

/// Runs `work` on every worker of this process; returns worker 0's result (if this process
/// holds worker 0).
pub(super) fn execute<T, F>(config: ClusterConfig, work: F) -> anyhow::Result<Option<T>>
where
    T: Send + 'static,
    F: Fn(&mut timely::worker::Worker) -> Result<Option<T>, FlowError> + Send + Sync + 'static,
{
    join(start(config, work)?)
}

/// Starts `work` on every worker of this process, and returns while they run.
pub(super) fn start<T, F>(
    config: ClusterConfig,
    work: F,
) -> anyhow::Result<WorkerGuards<Result<Option<T>, FlowError>>>
where
    T: Send + 'static,
    F: Fn(&mut timely::worker::Worker) -> Result<Option<T>, FlowError> + Send + Sync + 'static,
{
    // timely's workers, the processes of a cluster connected without timely's one-second
    // retries.
    pacstream_dataflow::cluster::execute(config.timely, config.connect_timeout, work)
        .map_err(|e| anyhow::anyhow!("cluster: {e}"))
}

/// Waits for the workers [`start`] started; returns worker 0's result (if this process holds
/// worker 0), or the first failure.
pub(super) fn join<T: Send + 'static>(
    guards: WorkerGuards<Result<Option<T>, FlowError>>,
) -> anyhow::Result<Option<T>> {
    let mut first = None;
    for result in guards.join() {
        match result {
            Ok(Ok(Some(value))) => first = Some(value),
            Ok(Ok(None)) => {}
            Ok(Err(error)) => return Err(flow_error(error)),
            Err(panic) => return Err(anyhow::anyhow!("a worker stopped: {panic}")),
        }
    }
    Ok(first)
}

/// Worker 0's process notes a resumption and writes the summary (`summary` writes it, at
/// the path it is given).
pub(super) fn finish(
    outcome: Option<(impl FnOnce(&Path) -> anyhow::Result<()>, Option<u64>)>,
    cluster: &ClusterArgs,
) -> anyhow::Result<()> {
    let Some((summary, resumed_from)) = outcome else {
        return Ok(());
    };
    note_resumption(resumed_from, cluster);
    if let Some(path) = &cluster.summary {
        summary(path)?;
    }
    Ok(())
}

/// Says that the run resumed from the checkpoints of an epoch (on worker 0's process).
pub(super) fn note_resumption(resumed_from: Option<u64>, cluster: &ClusterArgs) {
    if let Some(epoch) = resumed_from {
        Notes::new(false).note(format!(
            "resumed from the checkpoints of epoch {epoch} in '{}'",
            cluster
                .checkpoint_dir
                .as_deref()
                .unwrap_or(Path::new(""))
                .display()
        ));
    }
}
