//! Rows per second of the three patterns on 1 and 2 worker threads, on rows generated in
//! memory (so that parsing a file does not dominate); each worker generates only the rows of
//! its share, as it would parse only its share of a file. Per-worker CPU time is printed
//! beside the wall-clock time, so that the division of the work shows even on a busy
//! machine. Run with
//! `cargo run --release -p pacstream-dataflow --example throughput -- [rows [pattern
//! [workers [keyed epoch size [nosummary]]]]]`, for example `... -- 10000000 keyed 1,2 4096`.
//! Keyed learners write their summary document to a sink (worker 0 merging every worker's
//! entries, as the command line does with `--summary`), unless told `nosummary`.
#![allow(clippy::print_stdout)]

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use pacstream::experts::{AggregatorParams, LearningRate, Rule};
use pacstream::kmeans::SequentialKMeansParams;
use pacstream_dataflow::experts::{ConstantGrid, ShardedHedge, run_sharded_hedge};
use pacstream_dataflow::keyed::{AggregatorFamily, run_keyed};
use pacstream_dataflow::kmeans::{KMeansJob, run_kmeans};
use pacstream_dataflow::{Result, Rows, RunFiles, Selection, Source};
use timely::Config;

/// The allocator of the `pacstream` binary (mimalloc), so that the figures are those of the
/// command line's (rows are held flat, but records, summaries and the learners of new keys
/// are allocations).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Rows generated from their index: d values around one of 8 centres.
#[derive(Debug)]
struct Generated {
    next: u64,
    end: u64,
    dim: usize,
}

fn value(index: u64, coordinate: usize) -> f64 {
    let mut x = index
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(coordinate as u64 * 0xbf58_476d_1ce4_e5b9);
    x ^= x >> 31;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 29;
    let centre = (index % 8) as f64 * 3.0 + coordinate as f64;
    centre + (x >> 11) as f64 / (1u64 << 53) as f64
}

impl Source for Generated {
    fn next_batch(&mut self, n: usize, out: &mut Rows) -> Result<()> {
        let mut values = Vec::with_capacity(self.dim);
        for offset in 0..n as u64 {
            if self.next >= self.end {
                break;
            }
            values.clear();
            values.extend((0..self.dim).map(|c| value(self.next, c)));
            out.push(offset, "", &values);
            self.next += 1;
        }
        Ok(())
    }
    fn skip_rows(&mut self, n: u64) -> Result<()> {
        self.next = (self.next + n).min(self.end);
        Ok(())
    }
    fn next_selected(&mut self, n: usize, keep: &Selection, out: &mut Rows) -> Result<usize> {
        let passed = (n as u64).min(self.end - self.next) as usize;
        let mut values = Vec::with_capacity(self.dim);
        for offset in selected(keep, passed) {
            let index = self.next + offset as u64;
            values.clear();
            values.extend((0..self.dim).map(|c| value(index, c)));
            out.push(offset as u64, "", &values);
        }
        self.next += passed as u64;
        Ok(passed)
    }
}

/// The offsets below `passed` that `keep` selects, range by range.
fn selected(keep: &Selection, passed: usize) -> impl Iterator<Item = usize> + '_ {
    let mut next = 0;
    std::iter::from_fn(move || {
        (next < passed).then(|| {
            let range = keep.next_range(next);
            let range = range.start.min(passed)..range.end.min(passed);
            next = range.end;
            range
        })
    })
    .flatten()
}

/// Keyed rows: 10 experts' advice and the outcome, keys cycling over `keys`.
#[derive(Debug)]
struct KeyedGenerated {
    inner: Generated,
    keys: u64,
}

impl Source for KeyedGenerated {
    fn next_batch(&mut self, n: usize, out: &mut Rows) -> Result<()> {
        self.next_selected(n, &Selection::all(), out).map(|_| ())
    }
    fn skip_rows(&mut self, n: u64) -> Result<()> {
        self.inner.skip_rows(n)
    }
    fn next_selected(&mut self, n: usize, keep: &Selection, out: &mut Rows) -> Result<usize> {
        let start = self.inner.next;
        let passed = (n as u64).min(self.inner.end - start) as usize;
        let mut values = Vec::with_capacity(self.inner.dim);
        let mut key = String::new();
        for offset in selected(keep, passed) {
            let i = start + offset as u64;
            values.clear();
            values.extend((0..self.inner.dim).map(|c| value(i, c) / 30.0));
            key.clear();
            // Writing to a String cannot fail.
            let _ = write!(key, "k{}", i % self.keys);
            out.push(offset as u64, &key, &values);
        }
        self.inner.next += passed as u64;
        Ok(passed)
    }
}

/// Seconds this thread has run on a CPU and seconds it has waited for one while runnable
/// (Linux's per-thread scheduler statistics), if known. What is left of the wall-clock time
/// is time the thread slept: waiting for the other workers, not for a core.
fn thread_times() -> Option<(f64, f64)> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let mut fields = text.split_whitespace();
    let run: f64 = fields.next()?.parse().ok()?;
    let queued: f64 = fields.next()?.parse().ok()?;
    Some((run / 1e9, queued / 1e9))
}

/// A run's speed-up over the 1-worker run of its pattern, whose seconds `base` keeps.
fn ratio_to_one_worker(workers: usize, seconds: f64, base: &mut f64) -> f64 {
    if workers == 1 {
        *base = seconds;
    }
    *base / seconds
}

/// Wall-clock seconds of a run, and the CPU seconds of each worker thread.
fn timed(
    workers: usize,
    work: impl Fn(&mut timely::worker::Worker) + Send + Sync + 'static,
) -> (f64, String) {
    let start = Instant::now();
    let times: Vec<Option<(f64, f64, f64)>> =
        timely::execute(Config::process(workers), move |worker| {
            let begun = Instant::now();
            let before = thread_times();
            work(worker);
            let (run, queued) = thread_times()?;
            let (run_before, queued_before) = before?;
            let (run, queued) = (run - run_before, queued - queued_before);
            Some((run, queued, begun.elapsed().as_secs_f64() - run - queued))
        })
        .unwrap()
        .join()
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    let seconds = start.elapsed().as_secs_f64();
    let column = |pick: fn(&(f64, f64, f64)) -> f64| {
        times
            .iter()
            .map(|t| {
                t.as_ref()
                    .map_or_else(|| "?".to_string(), |t| format!("{:.2}", pick(t)))
            })
            .collect::<Vec<_>>()
            .join(" + ")
    };
    let cpu = format!(
        "{} | {} | {}",
        column(|t| t.0),
        column(|t| t.1),
        column(|t| t.2)
    );
    (seconds, cpu)
}

fn main() {
    let rows: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    // Optionally only one pattern: kmeans, keyed or sharded.
    let only = std::env::args().nth(2);
    let runs = |name: &str| only.as_deref().is_none_or(|o| o == name);
    // Optionally only some worker counts (for a profiler): "1", "2" or "1,2" (the default).
    let counts: Vec<usize> = std::env::args()
        .nth(3)
        .map(|a| a.split(',').filter_map(|w| w.parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 2]);
    // Optionally the keyed pattern's rows per epoch (default 65,536).
    let epoch_size: usize = std::env::args()
        .nth(4)
        .and_then(|a| a.parse().ok())
        .unwrap_or(65_536);
    // Keyed learners write their summary (every key's entry, merged by worker 0 into a sink,
    // as `pacstream experts --key --summary` writes the file) unless told "nosummary".
    let summary = std::env::args().nth(5).as_deref() != Some("nosummary");
    println!(
        "pattern | workers | rows (or rounds) | seconds | rows/s | ratio to 1 worker | CPU seconds per worker | seconds waiting for a core | seconds asleep (waiting for the other workers)"
    );
    let mut base = 0.0;
    for workers in counts.iter().copied().filter(|_| runs("kmeans")) {
        let job = KMeansJob {
            config: SequentialKMeansParams::new(8).seed(1).check().unwrap(),
            batch_size: 65_536,
            chunk_size: 8_192,
        };
        let (seconds, cpu) = timed(workers, move |worker| {
            let mut source = Generated {
                next: 0,
                end: rows,
                dim: 5,
            };
            run_kmeans(worker, &job, &mut source, &RunFiles::default()).unwrap();
        });
        println!(
            "data-parallel k-means (k = 8, d = 5) | {workers} | {rows} | {seconds:.2} | {:.0} | {:.2} | {cpu}",
            rows as f64 / seconds,
            ratio_to_one_worker(workers, seconds, &mut base)
        );
    }
    let keyed_rows = rows / 10;
    for workers in counts.iter().copied().filter(|_| runs("keyed")) {
        let family = Arc::new(AggregatorFamily {
            config: AggregatorParams::new(Rule::Hedge, 10)
                .rate(LearningRate::AdaHedge)
                .check()
                .unwrap(),
            names: (0..10).map(|i| format!("e{i}")).collect(),
        });
        let (seconds, cpu) = timed(workers, move |worker| {
            let mut source = KeyedGenerated {
                inner: Generated {
                    next: 0,
                    end: keyed_rows,
                    dim: 11,
                },
                keys: 100_000,
            };
            let files = RunFiles {
                summary,
                ..RunFiles::default()
            };
            let outcome = run_keyed(worker, &*family, epoch_size, &mut source, &files).unwrap();
            outcome.summary.write_to(&mut std::io::sink()).unwrap();
        });
        println!(
            "keyed Hedge (10^5 keys x 10 experts) | {workers} | {keyed_rows} | {seconds:.2} | {:.0} | {:.2} | {cpu}",
            keyed_rows as f64 / seconds,
            ratio_to_one_worker(workers, seconds, &mut base)
        );
    }
    for (n_experts, rounds) in [(10_000_000u64, 20usize), (100_000_000, 3)] {
        for workers in counts.iter().copied().filter(|_| runs("sharded")) {
            let outcomes: Arc<Vec<Vec<f64>>> = Arc::new(
                (0..rounds)
                    .map(|r| vec![value(r as u64, 0) / 3.0])
                    .collect(),
            );
            let (seconds, cpu) = timed(workers, move |worker| {
                let grid = ConstantGrid {
                    low: 0.0,
                    high: 10.0,
                    n_experts,
                };
                let settings = ShardedHedge {
                    eta: 0.1,
                    block_size: 1 << 16,
                    loss_bound: None,
                };
                run_sharded_hedge(worker, &settings, &grid, &outcomes).unwrap();
            });
            println!(
                "sharded Hedge (N = {n_experts}) | {workers} | {rounds} | {seconds:.2} | {:.1} ns per expert-round | {:.2} | {cpu}",
                seconds * 1e9 / (n_experts as f64 * rounds as f64),
                ratio_to_one_worker(workers, seconds, &mut base)
            );
        }
    }
}
