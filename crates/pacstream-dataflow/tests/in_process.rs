//! The patterns on 1, 2, 3 and 4 worker threads of one process, against the library run in
//! one thread.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use ndarray::Array2;
use pacstream::describe::Describe;
use pacstream::eval::Prequential;
use pacstream::experts::{AggregatorParams, LearningRate, Rule};
use pacstream::kmeans::{SequentialKMeans, SequentialKMeansConfig, SequentialKMeansParams};
use pacstream::{OnlineLearner, StreamRng};
use pacstream_dataflow::keyed::{
    AggregatorFamily, CLAIM_ROWS, ChunkClaims, KeyedFamily, KeyedRow, PointFamily, SummaryMerge,
    SummaryPiece, run_keyed, run_keyed_claiming, run_keyed_streaming, summary_entry,
};
use pacstream_dataflow::kmeans::{KMeansJob, reference, run_kmeans};
use pacstream_dataflow::{RunFiles, VecSource};
use timely::Config;

/// A reproducible stream of 2-d points around four centres (seeded, so the test needs no
/// data file).
fn points(n: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = StreamRng::seed_from(seed);
    let mut uniform = move || rng.next_f64();
    let centres = [[0.0, 0.0], [5.0, 1.0], [1.0, 6.0], [7.0, 7.0]];
    (0..n)
        .map(|_| {
            let c = centres[(uniform() * 4.0) as usize % 4];
            vec![c[0] + uniform() - 0.5, c[1] + uniform() - 0.5]
        })
        .collect()
}

/// Run files that write the records to `records.jsonl` in a fresh temporary directory (kept
/// while the returned guard lives) and no checkpoints.
fn records_only() -> (tempfile::TempDir, PathBuf, RunFiles) {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records.jsonl");
    let files = RunFiles {
        records: Some(records.clone()),
        checkpoints: None,
        summary: true,
    };
    (dir, records, files)
}

/// 2-d points as the rows of a matrix, for `learn_batch`.
fn as_matrix(points: &[Vec<f64>]) -> Array2<f64> {
    let flat: Vec<f64> = points.iter().flatten().copied().collect();
    Array2::from_shape_vec((points.len(), 2), flat).unwrap()
}

fn kmeans_config() -> SequentialKMeansConfig {
    SequentialKMeansParams::new(4)
        .init_size(40)
        .decay_half_life(500.0)
        .seed(7)
        .check()
        .unwrap()
}

/// Runs data-parallel k-means on `workers` threads; returns worker 0's learner and records.
fn kmeans_on(
    workers: usize,
    rows: &Arc<Vec<Vec<f64>>>,
    batch: usize,
    chunk: usize,
) -> (SequentialKMeans, String) {
    let (_dir, records, files) = records_only();
    let rows = Arc::clone(rows);
    let job = KMeansJob {
        config: kmeans_config(),
        batch_size: batch,
        chunk_size: chunk,
    };
    let learners = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&learners);
    timely::execute(Config::process(workers), move |worker| {
        let mut source = VecSource::new(Arc::clone(&rows));
        let outcome = run_kmeans(worker, &job, &mut source, &files).unwrap();
        sink.lock().unwrap().push(outcome.learner);
    })
    .unwrap()
    .join()
    .into_iter()
    .for_each(|r| r.unwrap());
    let learners = learners.lock().unwrap();
    // Every replica ends the same.
    assert!(learners.iter().all(|l| l == &learners[0]));
    (
        learners[0].clone(),
        std::fs::read_to_string(records).unwrap(),
    )
}

#[test]
fn data_parallel_kmeans_is_the_same_bits_for_any_number_of_workers() {
    let rows = Arc::new(points(3000, 1));
    let expected = reference(&kmeans_config(), &rows, 256, 64).unwrap();
    let (one, records_one) = kmeans_on(1, &rows, 256, 64);
    assert_eq!(one, expected);
    for workers in [2, 3, 4] {
        let (learner, records) = kmeans_on(workers, &rows, 256, 64);
        assert_eq!(learner, expected, "{workers} workers");
        assert!(
            records == records_one,
            "records differ on {workers} workers"
        );
    }
    // The chunked sums differ from the one-pass sums of learn_batch only by rounding.
    let mut batch = kmeans_config().build();
    for chunk in rows.chunks(256) {
        batch.learn_batch(as_matrix(chunk).view(), None).unwrap();
    }
    let (a, b) = (batch.centres().unwrap(), expected.centres().unwrap());
    let mut largest = 0.0f64;
    for j in 0..4 {
        for (x, y) in a.centre(j).iter().zip(b.centre(j)) {
            largest = largest.max((x - y).abs() / y.abs().max(1.0));
        }
    }
    assert!(largest < 1e-12, "relative difference {largest}");
}

/// Worker 0's totals of a data-parallel k-means run on `workers` threads with `files`.
fn kmeans_totals(
    workers: usize,
    rows: &Arc<Vec<Vec<f64>>>,
    files: RunFiles,
) -> (Prequential, Option<pacstream::eval::Totals>) {
    let rows = Arc::clone(rows);
    let job = KMeansJob {
        config: kmeans_config(),
        batch_size: 256,
        chunk_size: 64,
    };
    let totals = Arc::new(Mutex::new(None));
    let sink = Arc::clone(&totals);
    timely::execute(Config::process(workers), move |worker| {
        let mut source = VecSource::new(Arc::clone(&rows));
        let outcome = run_kmeans(worker, &job, &mut source, &files).unwrap();
        if worker.index() == 0 {
            *sink.lock().unwrap() = Some((outcome.totals, outcome.last));
        }
    })
    .unwrap()
    .join()
    .into_iter()
    .for_each(|r| r.unwrap());
    let outcome = totals.lock().unwrap().take();
    outcome.unwrap()
}

/// Without records or checkpoints only worker 0 replays the totals, from losses sent to it
/// alone: its totals (the summary's) are those of a run with records, on any number of
/// workers.
#[test]
fn data_parallel_kmeans_without_records_keeps_worker_0s_totals() {
    let rows = Arc::new(points(3000, 4));
    let (_dir, _records, files) = records_only();
    let expected = kmeans_totals(1, &rows, files);
    assert_eq!(expected.0.rounds(), 3000);
    for workers in [1, 2, 3] {
        let totals = kmeans_totals(workers, &rows, RunFiles::default());
        assert_eq!(totals, expected, "{workers} workers");
    }
}

#[test]
fn data_parallel_kmeans_with_one_chunk_per_batch_is_learn_batch() {
    let rows = Arc::new(points(1000, 2));
    let mut batch = kmeans_config().build();
    let mut totals = Prequential::new();
    let mut expected_records = String::new();
    for chunk in rows.chunks(100) {
        let steps = batch.learn_batch(as_matrix(chunk).view(), None).unwrap();
        for step in &steps {
            let round = totals.record(step);
            expected_records += &serde_json::to_string(&batch.record(step, &round)).unwrap();
            expected_records.push('\n');
        }
    }
    for workers in [1, 2] {
        let (learner, records) = kmeans_on(workers, &rows, 100, 100);
        assert_eq!(learner, batch, "{workers} workers");
        assert_eq!(records, expected_records, "{workers} workers");
    }
}

/// Keyed rows with one key holding half of them (skew) and 40 others sharing the rest.
fn keyed_points(n: usize) -> Vec<KeyedRow> {
    points(n, 3)
        .into_iter()
        .enumerate()
        .map(|(i, row)| {
            let key = if i % 2 == 0 {
                "hot".to_string()
            } else {
                format!("k{}", (i * 7919) % 40)
            };
            (key, row)
        })
        .collect()
}

fn keyed_on<F: KeyedFamily + Send + Sync + 'static>(
    workers: usize,
    rows: &Arc<Vec<KeyedRow>>,
    family: F,
) -> (BTreeMap<String, serde_json::Value>, String) {
    let (_dir, records, files) = records_only();
    let rows = Arc::clone(rows);
    let family = Arc::new(family);
    let summaries = Arc::new(Mutex::new(BTreeMap::new()));
    let sink = Arc::clone(&summaries);
    timely::execute(Config::process(workers), move |worker| {
        let mut source = VecSource::new(Arc::clone(&rows));
        let outcome = run_keyed(worker, &*family, 97, &mut source, &files).unwrap();
        if worker.index() == 0 {
            *sink.lock().unwrap() = outcome.summaries();
        }
    })
    .unwrap()
    .join()
    .into_iter()
    .for_each(|r| r.unwrap());
    let summaries = summaries.lock().unwrap().clone();
    (summaries, std::fs::read_to_string(records).unwrap())
}

#[test]
fn keyed_kmeans_equals_one_library_learner_per_key_for_any_number_of_workers() {
    let rows = Arc::new(keyed_points(2000));
    let family = || PointFamily(|| kmeans_config().build());
    // The library, one learner per key, fed in stream order.
    let mut expected = BTreeMap::new();
    let mut states = BTreeMap::new();
    let mut expected_records = String::new();
    let reference = family();
    for (key, row) in rows.iter() {
        let state = states
            .entry(key.clone())
            .or_insert_with(|| reference.build().unwrap());
        let mut record = Vec::new();
        reference.learn(state, row, Some(&mut record)).unwrap();
        // The key first, then the library's record as it serialises.
        let record = String::from_utf8(record).unwrap();
        expected_records += &format!("{{\"key\":{},{}\n", serde_json::json!(key), &record[1..]);
    }
    for (key, state) in &states {
        let summary = state.learner.summary(&state.totals, state.last.as_ref());
        expected.insert(key.clone(), serde_json::to_value(summary).unwrap());
    }
    assert_eq!(states["hot"].learner.n_rounds(), 1000);
    for workers in [1, 2, 3, 4] {
        let (summaries, records) = keyed_on(workers, &rows, family());
        assert!(
            summaries == expected,
            "summaries differ on {workers} workers"
        );
        assert!(
            records == expected_records,
            "records differ on {workers} workers"
        );
    }
}

#[test]
fn keyed_hedge_is_the_same_for_any_number_of_workers() {
    // Rows: three experts' advice, then the outcome.
    let rows: Vec<KeyedRow> = points(1500, 4)
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            (
                format!("s{}", i % 5),
                vec![p[0], p[1], 0.5 * (p[0] + p[1]), p[0] * 0.9],
            )
        })
        .collect();
    let rows = Arc::new(rows);
    let family = || AggregatorFamily {
        config: AggregatorParams::new(Rule::Ewa, 3)
            .rate(LearningRate::AdaHedge)
            .check()
            .unwrap(),
        names: vec!["a".into(), "b".into(), "c".into()],
    };
    let (one, records_one) = keyed_on(1, &rows, family());
    assert_eq!(one.len(), 5);
    assert_eq!(one["s0"]["rounds"], 300);
    for workers in [2, 4] {
        let (summaries, records) = keyed_on(workers, &rows, family());
        assert!(summaries == one, "summaries differ on {workers} workers");
        assert!(
            records == records_one,
            "records differ on {workers} workers"
        );
    }
}

#[test]
fn sharded_hedge_is_the_same_bits_for_any_number_of_workers_and_matches_the_library() {
    use pacstream::experts::{Aggregator, LossRound};
    use pacstream_dataflow::experts::{
        ConstantGrid, ExpertFamily, ShardedHedge, ShardedSummary, run_sharded_hedge,
    };
    let grid = ConstantGrid {
        low: 0.0,
        high: 8.0,
        n_experts: 1001,
    };
    let rows: Arc<Vec<Vec<f64>>> =
        Arc::new(points(400, 5).into_iter().map(|p| vec![p[0]]).collect());
    let settings = ShardedHedge {
        eta: 0.05,
        block_size: 64,
        loss_bound: Some(81.0),
    };
    let run = |workers: usize| -> ShardedSummary {
        let rows = Arc::clone(&rows);
        let settings = settings.clone();
        let out = Arc::new(Mutex::new(None));
        let sink = Arc::clone(&out);
        timely::execute(Config::process(workers), move |worker| {
            let summary = run_sharded_hedge(worker, &settings, &grid, &rows).unwrap();
            if worker.index() == 0 {
                *sink.lock().unwrap() = Some(summary);
            }
        })
        .unwrap()
        .join()
        .into_iter()
        .for_each(|r| r.unwrap());
        out.lock().unwrap().take().unwrap()
    };
    let one = run(1);
    for workers in [2, 3] {
        let other = run(workers);
        assert!(other == one, "{workers} workers differ");
        assert!(
            other.records == one.records,
            "{workers} workers' records differ"
        );
    }
    // The library's Hedge on the same losses, one process.
    let mut hedge = AggregatorParams::new(Rule::Hedge, 1001)
        .rate(LearningRate::Fixed(0.05))
        .loss_bound(81.0)
        .check()
        .unwrap()
        .build()
        .unwrap();
    let mut losses = vec![0.0; 1001];
    let tolerance = 4.0 * 1001.0 * f64::EPSILON;
    for (row, record) in rows.iter().zip(&one.records) {
        grid.losses(0, row, &mut losses);
        let step = hedge.learn_losses(LossRound::new(&losses)).unwrap();
        let relative = (step.loss - record.loss).abs() / step.loss.abs().max(f64::MIN_POSITIVE);
        assert!(
            relative <= tolerance,
            "round {}: {} against {}",
            record.t,
            record.loss,
            step.loss
        );
    }
    let ledger = hedge.ledger();
    let (best, _) = ledger.best_expert();
    assert_eq!(best as u64, one.best_expert);
    assert_eq!(ledger.expert_losses()[best], one.best_expert_loss);
    let relative = (ledger.learner_loss() - one.cumulative_loss).abs() / one.cumulative_loss;
    assert!(relative <= tolerance, "cumulative loss {relative}");
    assert!(one.regret_bound.unwrap() >= one.regret);
}

/// A source that counts the rows it builds (parses, in a file): the rows a worker reads;
/// each call of `next_selected` that builds rows then takes `pause` more (a worker on a
/// slower core).
struct Counting<R = Vec<f64>> {
    inner: VecSource<R>,
    built: Arc<std::sync::atomic::AtomicUsize>,
    pause: std::time::Duration,
}

impl<R: pacstream_dataflow::AsRow> pacstream_dataflow::Source for Counting<R> {
    fn next_batch(
        &mut self,
        n: usize,
        out: &mut pacstream_dataflow::Rows,
    ) -> pacstream_dataflow::Result<()> {
        let before = out.len();
        self.inner.next_batch(n, out)?;
        self.built
            .fetch_add(out.len() - before, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
    fn skip_rows(&mut self, n: u64) -> pacstream_dataflow::Result<()> {
        self.inner.skip_rows(n)
    }
    fn next_selected(
        &mut self,
        n: usize,
        keep: &pacstream_dataflow::Selection,
        out: &mut pacstream_dataflow::Rows,
    ) -> pacstream_dataflow::Result<usize> {
        let before = out.len();
        let passed = self.inner.next_selected(n, keep, out)?;
        self.built
            .fetch_add(out.len() - before, std::sync::atomic::Ordering::Relaxed);
        if out.len() > before {
            std::thread::sleep(self.pause);
        }
        Ok(passed)
    }
}

#[test]
fn data_parallel_kmeans_workers_read_only_their_share_of_the_rows() {
    let n = 4000;
    let rows = Arc::new(points(n, 3));
    let expected = reference(&kmeans_config(), &rows, 256, 64).unwrap();
    for workers in [2, 4] {
        let counts: Arc<Vec<Arc<std::sync::atomic::AtomicUsize>>> =
            Arc::new((0..workers).map(|_| Arc::default()).collect());
        let learners = Arc::new(Mutex::new(Vec::new()));
        let (sink, shared, source_rows) = (
            Arc::clone(&learners),
            Arc::clone(&counts),
            Arc::clone(&rows),
        );
        let job = KMeansJob {
            config: kmeans_config(),
            batch_size: 256,
            chunk_size: 64,
        };
        timely::execute(Config::process(workers), move |worker| {
            let mut source = Counting {
                inner: VecSource::new(Arc::clone(&source_rows)),
                built: Arc::clone(&shared[worker.index()]),
                pause: std::time::Duration::ZERO,
            };
            let outcome = run_kmeans(worker, &job, &mut source, &RunFiles::default()).unwrap();
            sink.lock().unwrap().push(outcome.learner);
        })
        .unwrap()
        .join()
        .into_iter()
        .for_each(|r| r.unwrap());
        assert!(learners.lock().unwrap().iter().all(|l| l == &expected));
        // The warm-up (40 rows) lies in the first batch, which every worker reads whole;
        // after it, chunks of 64 rows go round the workers, 4 chunks a batch.
        let first_batch = 256;
        let share = (n - first_batch) / workers;
        let counts: Vec<usize> = counts
            .iter()
            .map(|c| c.load(std::sync::atomic::Ordering::Relaxed))
            .collect();
        // Every row is built once, and the first batch once more on every other worker.
        assert_eq!(
            counts.iter().sum::<usize>(),
            n + (workers - 1) * first_batch,
            "{counts:?}"
        );
        for (worker, count) in counts.iter().enumerate() {
            assert!(
                *count <= first_batch + share + 64,
                "worker {worker} of {workers} built {count} rows (its share: {share} + {first_batch})"
            );
        }
    }
}

/// Keyed learners whose workers claim the chunks they read ([`ChunkClaims`]) give the
/// summaries and records of one worker; every row is built once; and a worker slowed on
/// every chunk it reads leaves most chunks to the others.
#[test]
fn keyed_workers_claiming_their_chunks_read_each_row_once_and_give_one_workers_results() {
    let n = 6000;
    let epoch = 1000;
    let rows = Arc::new(keyed_points(n));
    let family = || PointFamily(|| kmeans_config().build());
    let (expected, expected_records) = keyed_on(1, &rows, family());
    assert!(epoch > 3 * CLAIM_ROWS, "several chunks an epoch");
    for workers in [2, 3, 4] {
        let (_dir, records, files) = records_only();
        let counts: Arc<Vec<Arc<std::sync::atomic::AtomicUsize>>> =
            Arc::new((0..workers).map(|_| Arc::default()).collect());
        let summaries = Arc::new(Mutex::new(BTreeMap::new()));
        let (sink, shared, source_rows) = (
            Arc::clone(&summaries),
            Arc::clone(&counts),
            Arc::clone(&rows),
        );
        let family = Arc::new(family());
        let claims = Arc::new(ChunkClaims::new(workers));
        timely::execute(Config::process(workers), move |worker| {
            // The last worker takes 20 ms more for every chunk it reads (not worker 0, which
            // reads less than its share even unslowed: it also writes the records).
            let slowed = worker.index() + 1 == worker.peers();
            let pause = std::time::Duration::from_millis(if slowed { 20 } else { 0 });
            let mut source = Counting {
                inner: VecSource::new(Arc::clone(&source_rows)),
                built: Arc::clone(&shared[worker.index()]),
                pause,
            };
            let outcome =
                run_keyed_claiming(worker, &*family, epoch, &mut source, &files, &claims, None)
                    .unwrap();
            if worker.index() == 0 {
                *sink.lock().unwrap() = outcome.summaries();
            }
        })
        .unwrap()
        .join()
        .into_iter()
        .for_each(|r| r.unwrap());
        assert!(*summaries.lock().unwrap() == expected, "{workers} workers");
        assert_eq!(
            std::fs::read_to_string(records).unwrap(),
            expected_records,
            "{workers} workers"
        );
        let counts: Vec<usize> = counts
            .iter()
            .map(|c| c.load(std::sync::atomic::Ordering::Relaxed))
            .collect();
        assert_eq!(counts.iter().sum::<usize>(), n, "{counts:?}");
        // Dealt in turn, the last worker would read n / workers rows (3,000 of 6,000 on two);
        // each chunk it reads holds it 20 ms, in which the others read the rest of the
        // epoch, so it reads about one chunk an epoch.
        let one_chunk_an_epoch = n.div_ceil(epoch) * CLAIM_ROWS;
        assert!(
            counts[workers - 1] <= one_chunk_an_epoch,
            "{workers} workers read {counts:?}"
        );
    }
}

/// A family whose summary entries are large (a key's entry is about `ENTRY_BYTES`), so
/// that each worker's run takes several pieces of [`PIECE_BYTES`], and a different number
/// of them on each worker.
struct Padded;

const ENTRY_BYTES: usize = 1 << 20;

impl KeyedFamily for Padded {
    type State = u64;
    fn build(&self) -> pacstream_dataflow::Result<u64> {
        Ok(0)
    }
    fn learn(
        &self,
        state: &mut u64,
        _: &[f64],
        _: Option<&mut Vec<u8>>,
    ) -> pacstream_dataflow::Result<()> {
        *state += 1;
        Ok(())
    }
    fn summary_entry(
        &self,
        key: &str,
        state: &u64,
        out: &mut Vec<u8>,
    ) -> pacstream_dataflow::Result<()> {
        // Entries of different lengths, so that pieces end at different keys.
        let padding = "x".repeat(ENTRY_BYTES + (*state as usize % 7) * 1000);
        summary_entry(
            key,
            &serde_json::json!({"rows": state, "padding": padding}),
            out,
        )
    }
}

/// The summary sent piece by piece as the workers print it ([`run_keyed_streaming`]) and
/// merged on another thread as it arrives is the document worker 0 holds whole
/// ([`run_keyed`]), on 1 to 4 workers whose runs take several rounds each.
#[test]
fn the_summary_streamed_as_printed_is_the_document_held_whole() {
    let rows: Arc<Vec<KeyedRow>> = Arc::new(
        (0..300)
            .map(|i| (format!("key{}", (i * 7) % 61), vec![i as f64]))
            .collect(),
    );
    let summary_only = RunFiles {
        records: None,
        checkpoints: None,
        summary: true,
    };
    let whole = |workers: usize| {
        let files = summary_only.clone();
        let rows = Arc::clone(&rows);
        let document = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&document);
        timely::execute(Config::process(workers), move |worker| {
            let mut source = VecSource::new(Arc::clone(&rows));
            let outcome = run_keyed(worker, &Padded, 50, &mut source, &files).unwrap();
            if worker.index() == 0 {
                *sink.lock().unwrap() = outcome.summary.to_json();
            }
        })
        .unwrap()
        .join()
        .into_iter()
        .for_each(|r| r.unwrap());
        document.lock().unwrap().clone()
    };
    let streamed = |workers: usize| {
        let files = summary_only.clone();
        let rows = Arc::clone(&rows);
        let (sender, receiver) = std::sync::mpsc::channel::<SummaryPiece>();
        let guards = timely::execute(Config::process(workers), move |worker| {
            let mut source = VecSource::new(Arc::clone(&rows));
            let outcome =
                run_keyed_streaming(worker, &Padded, 50, &mut source, &files, &sender).unwrap();
            assert!(outcome.summary.is_empty(), "a streamed summary is not held");
        })
        .unwrap();
        let mut merge = SummaryMerge::default();
        let mut out = Vec::new();
        let mut pieces = 0;
        while !merge.is_complete() {
            let piece = receiver.recv().expect("every worker's last piece");
            merge.push(piece).unwrap();
            merge.write_ready(&mut out).unwrap();
            pieces += 1;
        }
        merge.finish(&mut out).unwrap();
        guards.join().into_iter().for_each(|r| r.unwrap());
        (String::from_utf8(out).unwrap(), pieces)
    };
    for workers in 1..=4 {
        let expected = whole(workers);
        assert!(expected.len() > 61 * ENTRY_BYTES, "{workers} workers");
        let (document, pieces) = streamed(workers);
        // 61 entries of about 1 MB in pieces of 16 MB: on up to 3 workers, some worker's
        // run takes more than one round.
        assert!(
            pieces >= workers && (workers == 4 || pieces > workers),
            "{workers} workers: {pieces} pieces"
        );
        assert!(
            document == expected,
            "{workers} workers: the documents differ"
        );
    }
}
