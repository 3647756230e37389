//! `pacstream dataflow`: the streaming learners on several worker threads and processes
//! (timely dataflow), with the same records and summary as a one-worker run.
//!
//! Every worker (thread) of every process reads the whole input file and keeps its share,
//! so the input must be a file every process can read (not standard input). Worker 0 of
//! process 0 writes the records and the summary.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand};
use pacstream::describe::Describe;
use pacstream::experts::{AggregatorParams, Rule};
use pacstream::kmeans::{SequentialKMeansConfig, SequentialKMeansParams};
use pacstream_dataflow::checkpoint::Checkpoints;
use pacstream_dataflow::keyed::{AggregatorFamily, KeyedFamily, KeyedRow, PointFamily, run_keyed};
use pacstream_dataflow::kmeans::{KMeansJob, run_kmeans};
use pacstream_dataflow::{Error as FlowError, RunFiles, Source};
use timely::{CommunicationConfig, Config, WorkerConfig};

use crate::failure::bad_input;
use crate::io::atomic::write_atomically;
use crate::io::files::file_id;
use crate::ui::Notes;

/// The largest number of worker threads per process, and of processes.
pub const WORKERS_LIMIT: usize = 256;
/// The largest number of processes.
pub const PROCESSES_LIMIT: usize = 1024;
/// The largest hostfile read (bytes).
const HOSTFILE_LIMIT: u64 = 1 << 20;

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

/// timely's configuration from the options, every count checked before anything starts.
pub fn timely_config(args: &ClusterArgs) -> anyhow::Result<Config> {
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
    check_outputs(args)?;
    Ok(Config {
        communication,
        worker: WorkerConfig::default(),
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

fn files(args: &ClusterArgs) -> RunFiles {
    RunFiles {
        records: args.output.clone(),
        checkpoints: args.checkpoint_dir.clone().map(|dir| Checkpoints {
            dir,
            every: args.checkpoint_every,
        }),
    }
}

fn flow_error(error: FlowError) -> anyhow::Error {
    match error {
        FlowError::Library(_) | FlowError::Row { .. } | FlowError::Usage(_) => {
            bad_input(error.to_string())
        }
        other => anyhow::Error::new(other),
    }
}

/// Runs `work` on every worker of this process; returns worker 0's result (if this process
/// holds worker 0).
fn execute<T, F>(config: Config, work: F) -> anyhow::Result<Option<T>>
where
    T: Send + 'static,
    F: Fn(&mut timely::worker::Worker) -> Result<Option<T>, FlowError> + Send + Sync + 'static,
{
    let guards = timely::execute(config, work).map_err(|e| anyhow::anyhow!("cluster: {e}"))?;
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
    let files = files(cluster);
    let outcome = execute(config, move |worker| {
        let mut source = CsvSource::open(&columns)?;
        let outcome = run_kmeans(worker, &job, &mut source, &files)?;
        Ok((worker.index() == 0).then(|| {
            let summary = outcome
                .learner
                .summary(&outcome.totals, outcome.last.as_ref());
            let bytes = serde_json::to_vec_pretty(&summary).unwrap_or_default();
            (bytes, outcome.resumed_from)
        }))
    })?;
    finish(outcome, cluster)
}

fn run_keyed_command(args: &KeyedArgs) -> anyhow::Result<()> {
    let cluster = &args.cluster;
    let config = timely_config(cluster)?;
    let columns = CsvColumns::resolve(&cluster.input, cluster.columns.as_deref(), Some(&args.key))?;
    let files = files(cluster);
    let epoch_size = args.epoch_size;
    let summary = match (args.rule, args.n_clusters) {
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
            keyed(config, columns, family, epoch_size, files)?
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
            keyed(config, columns, family, epoch_size, files)?
        }
        _ => return Err(bad_input("give exactly one of --k and --rule")),
    };
    finish(summary, cluster)
}

/// Worker 0's process notes a resumption and writes the summary.
fn finish(outcome: Option<(Vec<u8>, Option<u64>)>, cluster: &ClusterArgs) -> anyhow::Result<()> {
    let Some((summary, resumed_from)) = outcome else {
        return Ok(());
    };
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
    if let Some(path) = &cluster.summary {
        write_atomically(path, &summary)?;
    }
    Ok(())
}

fn keyed<F>(
    config: Config,
    columns: CsvColumns,
    family: Arc<F>,
    epoch_size: usize,
    files: RunFiles,
) -> anyhow::Result<Option<(Vec<u8>, Option<u64>)>>
where
    F: KeyedFamily + Send + Sync + 'static,
{
    execute(config, move |worker| {
        let mut source = KeyedCsv(CsvSource::open(&columns)?);
        let outcome = run_keyed(worker, &*family, epoch_size, &mut source, &files)?;
        Ok(
            (worker.index() == 0)
                .then(|| (outcome.summary_json.into_bytes(), outcome.resumed_from)),
        )
    })
}

/// The input's columns, resolved from its header before the workers start.
#[derive(Clone, Debug)]
struct CsvColumns {
    path: PathBuf,
    key: Option<usize>,
    values: Vec<usize>,
    names: Vec<String>,
}

impl CsvColumns {
    fn resolve(path: &Path, columns: Option<&[String]>, key: Option<&str>) -> anyhow::Result<Self> {
        let mut reader = csv::Reader::from_path(path)
            .map_err(|e| bad_input(format!("cannot open '{}': {e}", path.display())))?;
        let header: Vec<String> = reader
            .headers()
            .map_err(|e| bad_input(format!("'{}': {e}", path.display())))?
            .iter()
            .map(str::to_string)
            .collect();
        let find = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .ok_or_else(|| bad_input(format!("no column '{name}' in '{}'", path.display())))
        };
        let key = key.map(find).transpose()?;
        let values = match columns {
            Some(names) => names
                .iter()
                .map(|n| find(n))
                .collect::<anyhow::Result<Vec<_>>>()?,
            None => (0..header.len()).filter(|i| Some(*i) != key).collect(),
        };
        if values.is_empty() {
            return Err(bad_input("no numeric column to learn from"));
        }
        let names = values.iter().map(|&i| header[i].clone()).collect();
        Ok(Self {
            path: path.to_path_buf(),
            key,
            values,
            names,
        })
    }
}

/// The rows of a CSV file (each worker opens its own reader, and parses the numbers of its
/// own rows only: the others are passed over as bytes).
struct CsvSource {
    columns: CsvColumns,
    reader: csv::Reader<File>,
    record: csv::StringRecord,
    passed: csv::ByteRecord,
    row: u64,
}

impl CsvSource {
    fn open(columns: &CsvColumns) -> Result<Self, FlowError> {
        let reader =
            csv::Reader::from_path(&columns.path).map_err(|e| FlowError::Usage(e.to_string()))?;
        Ok(Self {
            columns: columns.clone(),
            reader,
            record: csv::StringRecord::new(),
            passed: csv::ByteRecord::new(),
            row: 0,
        })
    }

    fn next_row(&mut self) -> Result<Option<(String, Vec<f64>)>, FlowError> {
        let more = self
            .reader
            .read_record(&mut self.record)
            .map_err(|e| FlowError::Row {
                row: self.row + 1,
                message: e.to_string(),
            })?;
        if !more {
            return Ok(None);
        }
        self.row += 1;
        let mut values = Vec::with_capacity(self.columns.values.len());
        for (&index, name) in self.columns.values.iter().zip(&self.columns.names) {
            let field = self.record.get(index).unwrap_or("");
            let value: f64 = field.trim().parse().map_err(|_| FlowError::Row {
                row: self.row,
                message: format!("column '{name}': '{field}' is not a number"),
            })?;
            values.push(value);
        }
        let key = self
            .columns
            .key
            .map(|k| self.record.get(k).unwrap_or("").to_string())
            .unwrap_or_default();
        Ok(Some((key, values)))
    }

    /// [`Source::next_selected`] for both views: the rows `keep` does not select are split
    /// into fields (to find where they end) but neither decoded nor parsed.
    fn next_selected_rows<R>(
        &mut self,
        n: usize,
        keep: &dyn Fn(usize) -> bool,
        out: &mut Vec<(usize, R)>,
        view: impl Fn((String, Vec<f64>)) -> R,
    ) -> Result<usize, FlowError> {
        let mut passed = 0;
        while passed < n {
            if keep(passed) {
                match self.next_row()? {
                    Some(row) => out.push((passed, view(row))),
                    None => break,
                }
            } else {
                let more = self
                    .reader
                    .read_byte_record(&mut self.passed)
                    .map_err(|e| FlowError::Row {
                        row: self.row + 1,
                        message: e.to_string(),
                    })?;
                if !more {
                    break;
                }
                self.row += 1;
            }
            passed += 1;
        }
        Ok(passed)
    }
}

impl Source for CsvSource {
    type Row = Vec<f64>;

    fn next_batch(&mut self, n: usize, out: &mut Vec<Vec<f64>>) -> Result<(), FlowError> {
        while out.len() < n {
            match self.next_row()? {
                Some((_, values)) => out.push(values),
                None => break,
            }
        }
        Ok(())
    }

    fn skip_rows(&mut self, n: u64) -> Result<(), FlowError> {
        let mut left = n;
        while left > 0 {
            let step = usize::try_from(left).unwrap_or(usize::MAX);
            let passed = self.next_selected_rows(step, &|_| false, &mut Vec::new(), |_| ())?;
            if passed == 0 {
                break;
            }
            left -= passed as u64;
        }
        Ok(())
    }

    fn next_selected(
        &mut self,
        n: usize,
        keep: &dyn Fn(usize) -> bool,
        out: &mut Vec<(usize, Vec<f64>)>,
    ) -> Result<usize, FlowError> {
        self.next_selected_rows(n, keep, out, |(_, values)| values)
    }
}

/// The keyed view of a CSV source.
struct KeyedCsv(CsvSource);

impl Source for KeyedCsv {
    type Row = KeyedRow;

    fn next_batch(&mut self, n: usize, out: &mut Vec<KeyedRow>) -> Result<(), FlowError> {
        while out.len() < n {
            match self.0.next_row()? {
                Some(row) => out.push(row),
                None => break,
            }
        }
        Ok(())
    }

    fn skip_rows(&mut self, n: u64) -> Result<(), FlowError> {
        self.0.skip_rows(n)
    }

    fn next_selected(
        &mut self,
        n: usize,
        keep: &dyn Fn(usize) -> bool,
        out: &mut Vec<(usize, KeyedRow)>,
    ) -> Result<usize, FlowError> {
        self.0.next_selected_rows(n, keep, out, |row| row)
    }
}
