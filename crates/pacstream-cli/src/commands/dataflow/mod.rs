//! `pacstream dataflow`: the streaming learners on several worker threads and processes
//! (timely dataflow), with the same records and summary as a one-worker run.
//!
//! Every worker (thread) of every process reads the whole input file and keeps its share,
//! so the input must be a file every process can read (not standard input). Worker 0 of
//! process 0 writes the records and the summary.
//!
//! The files: `mod.rs` the options and the patterns, `cluster.rs` timely's configuration
//! and the run of the workers, `csv_source.rs` the input as each worker reads it, and
//! `csv_scan.rs` the CSV reader under it, which passes over other workers' lines by their end.

mod cluster;
mod csv_scan;
mod csv_source;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver};

use clap::{Args, Subcommand};
use pacstream::describe::Describe;
use pacstream::experts::{AggregatorParams, Rule};
use pacstream::kmeans::{SequentialKMeansConfig, SequentialKMeansParams};
use pacstream_dataflow::RunFiles;
use pacstream_dataflow::keyed::{
    AggregatorFamily, ChunkClaims, KeyedFamily, PointFamily, SummaryMerge, SummaryPiece,
    run_keyed_claiming,
};
use pacstream_dataflow::kmeans::{KMeansJob, KMeansOutcome, run_kmeans};

pub use cluster::{
    CONNECT_TIMEOUT_LIMIT, ClusterConfig, PROCESSES_LIMIT, WORKERS_LIMIT, timely_config,
};
use cluster::{execute, finish, join, note_resumption, start};
pub(crate) use cluster::{files, flow_error};
pub(crate) use csv_source::CsvColumns;
use csv_source::CsvSource;

use crate::failure::bad_input;
use crate::io::atomic::{Replacement, prepare_replacement, write_atomically, write_slices};
use crate::io::files::{Destination, destination};
use crate::options::OutputTarget;

#[derive(Args, Debug)]
pub struct DataflowArgs {
    #[command(subcommand)]
    pub pattern: Pattern,
}

#[derive(Subcommand, Debug)]
pub enum Pattern {
    /// One sequential k-means over the stream, its mini-batches summarised by all workers.
    Kmeans(KMeansArgs),
    /// One learner per key (--key), the keys spread over the workers.
    Keyed(KeyedArgs),
}

/// Where to run and what to write, shared by the patterns.
#[derive(Args, Debug, Clone)]
pub struct ClusterArgs {
    /// Input CSV file with a header row (every process reads it).
    pub input: PathBuf,
    /// Numeric columns, by header name, comma-separated (default: every column but the key).
    #[arg(long, value_delimiter = ',')]
    pub columns: Option<Vec<String>>,
    /// Per-round records (JSON lines, in stream order).
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// The final model(s) as JSON.
    #[arg(long)]
    pub summary: Option<PathBuf>,
    /// Directory of the per-worker epoch checkpoints; a run finding checkpoints there
    /// resumes from the last epoch every worker holds.
    #[arg(long)]
    pub checkpoint_dir: Option<PathBuf>,
    /// Checkpoint every this many epochs.
    #[arg(long, default_value_t = 1)]
    pub checkpoint_every: u64,
    /// Worker threads per process.
    #[arg(long, default_value_t = 1)]
    pub workers: usize,
    /// Number of processes of the cluster.
    #[arg(long, default_value_t = 1)]
    pub processes: usize,
    /// This process's index (0-based).
    #[arg(long, default_value_t = 0)]
    pub process: usize,
    /// File of host:port lines, one per process (process i listens on line i+1).
    #[arg(long)]
    pub hostfile: Option<PathBuf>,
    /// Seconds a process of a cluster waits for the others to connect before it gives up
    /// (1 to 86,400; default 300).
    #[arg(long, value_name = "SECONDS")]
    pub connect_timeout: Option<u64>,
}

#[derive(Args, Debug)]
pub struct KMeansArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Number of clusters.
    #[arg(long = "k", id = "n_clusters")]
    pub n_clusters: usize,
    /// Warm-up points (default 10·k).
    #[arg(long)]
    pub init_size: Option<usize>,
    /// Half-life of the decay, in points.
    #[arg(long = "decay", id = "decay_half_life")]
    pub decay: Option<f64>,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Rows per mini-batch (an epoch).
    #[arg(long, default_value_t = 4096)]
    pub batch_size: usize,
    /// Rows per chunk of a mini-batch (the unit of work of a worker; fixed, so that the
    /// result does not depend on the number of workers).
    #[arg(long, default_value_t = 1024)]
    pub chunk_size: usize,
}

#[derive(Args, Debug)]
pub struct KeyedArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The key column (header name).
    #[arg(long)]
    pub key: String,
    /// Sequential k-means per key with this k; or, with --rule, experts per key.
    #[arg(long = "k", id = "n_clusters")]
    pub n_clusters: Option<usize>,
    /// Warm-up points of each key's k-means (default 10·k).
    #[arg(long)]
    pub init_size: Option<usize>,
    /// Half-life of each key's k-means decay.
    #[arg(long = "decay", id = "decay_half_life")]
    pub decay: Option<f64>,
    /// An expert rule per key: the columns are the experts' advice, then the outcome.
    #[arg(long, value_enum)]
    pub rule: Option<Rule>,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Rows per epoch.
    #[arg(long, default_value_t = 4096)]
    pub epoch_size: usize,
}

pub fn run(args: &DataflowArgs) -> anyhow::Result<()> {
    match &args.pattern {
        Pattern::Kmeans(args) => run_kmeans_command(args),
        Pattern::Keyed(args) => run_keyed_command(args),
    }
}

fn run_kmeans_command(args: &KMeansArgs) -> anyhow::Result<()> {
    let cluster = &args.cluster;
    let config = timely_config(cluster)?;
    let mut params = SequentialKMeansParams::new(args.n_clusters).seed(args.seed);
    if let Some(init_size) = args.init_size {
        params = params.init_size(init_size);
    }
    if let Some(decay) = args.decay {
        params = params.decay_half_life(decay);
    }
    let settings: SequentialKMeansConfig = params.check().map_err(|e| bad_input(e.to_string()))?;
    let job = KMeansJob {
        config: settings,
        batch_size: args.batch_size,
        chunk_size: args.chunk_size,
    };
    job.check().map_err(flow_error)?;
    let columns = CsvColumns::resolve(&cluster.input, cluster.columns.as_deref(), None)?;
    let outcome = kmeans_on_cluster(config, job, columns, files(cluster))?;
    let summary = outcome.map(|outcome| {
        let summary = outcome
            .learner
            .summary(&outcome.totals, outcome.last.as_ref());
        let bytes = serde_json::to_vec_pretty(&summary).unwrap_or_default();
        let write = move |path: &Path| write_atomically(path, &bytes);
        (write, outcome.resumed_from)
    });
    finish(summary, cluster)
}

/// Runs data-parallel k-means on every worker of this process; returns worker 0's outcome
/// (if this process holds worker 0). `pacstream dataflow kmeans` and `pacstream kmeans
/// --online --workers` both run through here.
pub(crate) fn kmeans_on_cluster(
    config: ClusterConfig,
    job: KMeansJob,
    columns: CsvColumns,
    files: RunFiles,
) -> anyhow::Result<Option<KMeansOutcome>> {
    execute(config, move |worker| {
        let mut source = CsvSource::open(&columns)?;
        let outcome = run_kmeans(worker, &job, &mut source, &files)?;
        Ok((worker.index() == 0).then_some(outcome))
    })
}

fn run_keyed_command(args: &KeyedArgs) -> anyhow::Result<()> {
    let cluster = &args.cluster;
    let config = timely_config(cluster)?;
    let columns = CsvColumns::resolve(&cluster.input, cluster.columns.as_deref(), Some(&args.key))?;
    let files = files(cluster);
    let epoch_size = args.epoch_size;
    let summary = cluster
        .summary
        .as_ref()
        .map(|path| OutputTarget::File(path.clone()));
    let summary = summary.as_ref();
    let resumed = match (args.rule, args.n_clusters) {
        (Some(rule), None) => {
            let n_experts = columns
                .values
                .len()
                .checked_sub(1)
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    bad_input("--rule needs the experts' advice columns, then the outcome")
                })?;
            let settings = AggregatorParams::new(rule, n_experts)
                .seed(args.seed)
                .check()
                .map_err(|e| bad_input(e.to_string()))?;
            let names = columns.names[..n_experts].to_vec();
            let family = Arc::new(AggregatorFamily {
                config: settings,
                names,
            });
            keyed(config, columns, family, epoch_size, files, summary, b"")?
        }
        (None, Some(k)) => {
            let mut params = SequentialKMeansParams::new(k).seed(args.seed);
            if let Some(init_size) = args.init_size {
                params = params.init_size(init_size);
            }
            if let Some(decay) = args.decay {
                params = params.decay_half_life(decay);
            }
            let settings = params.check().map_err(|e| bad_input(e.to_string()))?;
            let family = Arc::new(PointFamily(move || settings.build()));
            keyed(config, columns, family, epoch_size, files, summary, b"")?
        }
        _ => return Err(bad_input("give exactly one of --k and --rule")),
    };
    if let Some(resumed_from) = resumed {
        note_resumption(resumed_from, cluster);
    }
    Ok(())
}

/// Runs keyed learners on every worker of this process and writes the summary document to
/// `summary` (with `trailer` after it), if this process holds worker 0; returns then the
/// epoch the run resumed from.
///
/// Into a regular file the document is written as the workers print it: their pieces come
/// to this thread ([`run_keyed_streaming`]), which merges them in key order into a
/// temporary file beside the target while the workers go on, and puts the file in place
/// once every worker has finished well. At 10^5 keys the document is 366 MB: written after
/// the workers, the copy into the page cache and the disk's writing of it (about 1.3 s of
/// wall clock on this project's 2-core benchmark machine) came after everything else,
/// whatever the number of workers. Standard output, a FIFO or a device get the document
/// whole, once the run has succeeded, as every other summary.
pub(crate) fn keyed<F>(
    config: ClusterConfig,
    columns: CsvColumns,
    family: Arc<F>,
    epoch_size: usize,
    files: RunFiles,
    summary: Option<&OutputTarget>,
    trailer: &'static [u8],
) -> anyhow::Result<Option<Option<u64>>>
where
    F: KeyedFamily + Send + Sync + 'static,
{
    let streamed = match summary {
        Some(OutputTarget::File(path)) => match destination(path)? {
            Destination::Replace(file) => Some((file, path.clone())),
            Destination::WriteThrough(_) => None,
        },
        _ => None,
    };
    let (sender, receiver) = mpsc::channel();
    let pieces_to = streamed.is_some().then_some(sender);
    // The workers of this process share out the reading as they go (`ChunkClaims`).
    let claims = ChunkClaims::new(config.workers_per_process());
    let guards = start(config, move |worker| {
        let mut source = CsvSource::open(&columns)?;
        let outcome = run_keyed_claiming(
            worker,
            &*family,
            epoch_size,
            &mut source,
            &files,
            &claims,
            pieces_to.as_ref(),
        )?;
        Ok((worker.index() == 0).then_some((outcome.summary, outcome.resumed_from)))
    })?;
    let prepared = streamed.map(|(file, shown)| receive_summary(&file, &shown, receiver, trailer));
    // A worker's failure is the run's: a summary written meanwhile is deleted unseen.
    let Some((held, resumed_from)) = join(guards)? else {
        return Ok(None);
    };
    match (prepared, summary) {
        (Some(prepared), _) => prepared?
            .ok_or_else(|| anyhow::anyhow!("the workers finished without sending the summary"))?
            .commit()?,
        (None, Some(target)) => {
            let mut slices = held.slices();
            slices.push(trailer);
            write_slices(target, &slices)?;
        }
        (None, None) => {}
    }
    Ok(Some(resumed_from))
}

/// Writes the summary document from the pieces the workers send, as they come, into a new
/// file beside `file`, flushed to disk; none when no piece comes (another process holds
/// worker 0, or the run stopped before its summary).
fn receive_summary(
    file: &Path,
    shown: &Path,
    pieces: Receiver<SummaryPiece>,
    trailer: &[u8],
) -> anyhow::Result<Option<Replacement>> {
    let Ok(first) = pieces.recv() else {
        return Ok(None);
    };
    let replacement = prepare_replacement(file, shown, |out| {
        let mut merge = SummaryMerge::default();
        let mut next = Some(first);
        while let Some(piece) = next {
            merge.push(piece).map_err(std::io::Error::other)?;
            merge.write_ready(out)?;
            // Without its last pieces (the workers stopped), `finish` refuses the document.
            next = if merge.is_complete() {
                None
            } else {
                pieces.recv().ok()
            };
        }
        merge.finish(out)?;
        out.write_all(trailer)
    })?;
    Ok(Some(replacement))
}
