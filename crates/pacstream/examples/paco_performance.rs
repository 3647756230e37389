//! Performance of PACBO: the R package's example, the cost of a round, a long run.
//!
//! `cargo run --release -p pacstream --example paco_performance -- [part] [options]` prints
//! markdown tables; the `Performance` section of `docs/paco-calibration.md` was made with it
//! (the criterion bench `benches/paco.rs` times the same cases with statistics).
//!
//! Parts (default: all three):
//! - `r-example`: the R package's documented example — 4 Gaussian clusters in d = 5, means
//!   uniform on [−10, 10]^5 (new means per seed), unit covariance, T = 100, N = 500 — with
//!   the default settings, for `--seeds S` seeds (20): k̂_T per seed and the wall time of
//!   each whole online run (reference: R PACBO 0.1.0, online mode, 184 s).
//!   `--warmup W` changes the number of warm-up points (default 50, so 50 rounds are
//!   predicted; the R package predicts all 100); `--given-radius` gives R = the largest norm
//!   of the data instead (as the package recommends), so that round 1 is a draw from the
//!   prior and all 100 rounds are predicted.
//! - `rounds`: one round (pay the loss, store the point, N = 500 iterations) with t points in
//!   memory, for `--t 1000,10000`, `--dims 2,5,20`, exact memory and a window of 1,000
//!   points: rounds per second, acceptance rate, the mean fraction of the memory summed per
//!   iteration, and the number and mean fraction of the early rejections. Data: 4 Gaussian
//!   clusters with means uniform on [−10, 10]^d. The learner reaches t by buffering t − 8
//!   warm-up points, then plays 8 rounds, then `--rounds M` (20) measured rounds.
//! - `long`: a whole online run of `--horizon T` (10,000) points in `--dims d` (5), exact
//!   memory, N = 500, default settings, with the elapsed time and the mean cost of a round at
//!   every tenth of the run (wall and CPU time), and the CPU time of the whole run; S_t summed point by point,
//!   then with the default (`--summation auto`: the index where it pays) — or only one of
//!   them with `--summation linear|auto`. Each run ends with a fingerprint: a hash (FNV-1a)
//!   of every round's k̂_t, loss and acceptance count and of the final centres' bits, so that
//!   two builds can be checked to make the same run bit for bit.
//! - `crossover`: the CPU time of a round with S_t summed point by point, on the index
//!   (forced) and as `Summation::Auto` decides (with the rounds it put on the index), side
//!   by side, for `--t 250,..,8000` and `--dims 2,5,20`, with the fractions of the memory
//!   summed and summed one by one; `--svg FILE` draws the cost per round against t (of the
//!   first stream). Each d has its stream of 4 clusters (seed d); `--stream-seeds 0,1,2`
//!   adds draws with the seeds d + 1000·s, and "closest means" is the smallest distance
//!   between two of a stream's means.
//! - `profile`: the set-up of `rounds` for one case, then `--rounds M` rounds in one
//!   function, for instruction counts under callgrind.
//!
//! Not in the default set: `crossover`, `profile`.

// A report program: its output is the tables on stdout.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod support;

use std::time::Instant;

use pacstream::OnlineLearner;
use pacstream::paco::{Memory, Paco, PacoParams, Radius, Summation};
use support::{closest_means, list, mixture, option};

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        0.5 * (values[n / 2 - 1] + values[n / 2])
    }
}

fn r_example(args: &[String]) {
    let seeds: u64 = option(args, "--seeds").map_or(20, |s| s.parse().expect("a number"));
    let warmup: Option<usize> = option(args, "--warmup").map(|s| s.parse().expect("a number"));
    let given_radius = args.iter().any(|a| a == "--given-radius");
    let dim = 5;
    println!(
        "## R package example: T = 100, d = 5, 4 clusters, N = 500 ({})\n",
        match (given_radius, warmup) {
            (true, _) => "R given = the largest norm of the data".to_string(),
            (false, Some(w)) => format!("R auto, warm-up {w}"),
            (false, None) => "default settings: R auto, warm-up 50".to_string(),
        }
    );
    println!("| seed | k̂_T | rounds predicted | run time (ms) |");
    println!("|---:|---:|---:|---:|");
    let mut times = Vec::new();
    let mut histogram = std::collections::BTreeMap::new();
    for seed in 0..seeds {
        let points = mixture(100, 4, dim, 1000 + seed);
        let mut params = PacoParams::new().seed(seed);
        if given_radius {
            let radius = points
                .chunks_exact(dim)
                .map(|p| p.iter().map(|v| v * v).sum::<f64>().sqrt())
                .fold(0.0, f64::max);
            params = params.radius(Radius::Given(radius));
        } else if let Some(w) = warmup {
            params = params.warmup(w);
        }
        let config = params.check().expect("valid settings");
        let started = Instant::now();
        let mut learner = config.build();
        let mut predicted = 0;
        for point in points.chunks_exact(dim) {
            let step = learner.learn_one(point).expect("valid point");
            if step.loss.is_some() {
                predicted += 1;
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        let k = learner.n_clusters().unwrap_or(0);
        *histogram.entry(k).or_insert(0) += 1;
        times.push(seconds);
        println!("| {seed} | {k} | {predicted} | {:.1} |", 1e3 * seconds);
    }
    let total: f64 = times.iter().sum();
    let max = times.iter().copied().fold(0.0, f64::max);
    let med = median(&mut times);
    println!(
        "\nk̂_T: {}; run time: median {:.1} ms, max {:.1} ms, total {:.2} s for {seeds} runs; \
         R online mode 184 s: {:.0}× (median)\n",
        histogram
            .iter()
            .map(|(k, n)| format!("{k} for {n} seeds"))
            .collect::<Vec<_>>()
            .join(", "),
        1e3 * med,
        1e3 * max,
        total,
        184.0 / med
    );
}

fn rounds(args: &[String]) {
    let ts = option(args, "--t").map_or(vec![1_000, 10_000], |s| list(&s));
    let dims = option(args, "--dims").map_or(vec![2, 5, 20], |s| list(&s));
    let measured: usize = option(args, "--rounds").map_or(20, |s| s.parse().expect("a number"));
    let windows: Vec<(String, Memory)> = match option(args, "--memory").as_deref() {
        Some("exact") => vec![("exact".into(), Memory::All)],
        Some("window") => vec![("window 1000".into(), Memory::Window(1000))],
        _ => vec![
            ("exact".into(), Memory::All),
            ("window 1000".into(), Memory::Window(1000)),
        ],
    };
    println!("## One round: N = 500, 4 clusters, {measured} measured rounds per case\n");
    println!(
        "| t | d | memory | rounds/s | ms/round | k̂ | acceptance | data summed per \
         iteration | early rejections per round | data summed by an early rejection | summed \
         one by one | nodes per evaluation |"
    );
    println!("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &t in &ts {
        for &dim in &dims {
            let points = mixture(t + measured, 4, dim, dim as u64);
            for (name, memory) in &windows {
                let (mut learner, mut rows) = warmed_up(
                    PacoParams::new().warmup(t - 8).memory(*memory).seed(1),
                    &points,
                    dim,
                    t,
                );
                let mut fraction = 0.0;
                let mut early = 0.0;
                let mut early_fraction = 0.0;
                let mut acceptance = 0.0;
                let mut direct = 0.0;
                let mut nodes = 0.0;
                let started = Instant::now();
                for point in rows.by_ref().take(measured) {
                    let step = learner.learn_one(point).expect("valid point");
                    let report = step.sampler.expect("a chain ran");
                    fraction += report.data_fraction;
                    early += report.early_rejections as f64;
                    early_fraction += report.early_rejection_fraction;
                    acceptance += report.acceptance_rate;
                    direct += report.direct_fraction;
                    nodes += report.nodes_per_evaluation;
                }
                let seconds = started.elapsed().as_secs_f64() / measured as f64;
                let m = measured as f64;
                println!(
                    "| {t} | {dim} | {name} | {:.1} | {:.2} | {} | {:.3} | {:.3} | {:.0} | {:.3} | {:.3} | {:.1} |",
                    1.0 / seconds,
                    1e3 * seconds,
                    learner.n_clusters().unwrap_or(0),
                    acceptance / m,
                    fraction / m,
                    early / m,
                    early_fraction / m,
                    direct / m,
                    nodes / m
                );
            }
        }
    }
    println!();
}

/// `crossover --t 250,500,.. --dims 2,5,.. --rounds M`: the CPU time of a round, S_t summed
/// point by point and on the index (forced, [`Summation::Index`]), side by side for each
/// (t, d), with the ratio. The learners reach t by buffering t − 8 warm-up points and
/// playing 8 rounds.
fn crossover(args: &[String]) {
    let ts = option(args, "--t").map_or(vec![250, 500, 1000, 2000, 4000, 8000], |s| list(&s));
    let dims = option(args, "--dims").map_or(vec![2, 5, 20], |s| list(&s));
    let measured: usize = option(args, "--rounds").map_or(30, |s| s.parse().expect("a number"));
    let svg_path = option(args, "--svg");
    // The stream of each d: 4 clusters drawn with the seed d, as in the published table;
    // `--stream-seeds` adds other draws (seed d + 1000·s) to see how much the crossover
    // depends on where the clusters fell.
    let stream_seeds: Vec<u64> = option(args, "--stream-seeds").map_or(vec![0], |s| {
        list(&s).into_iter().map(|v| v as u64).collect()
    });
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    println!("## CPU time of a round: N = 500, 4 clusters, {measured} rounds per case\n");
    println!(
        "| t | d | stream | closest means | point by point (ms/round) | index (ms/round) | ratio | auto (ms/round) | auto's rounds on the index | nodes per evaluation | summed, point by point | summed, index | one by one, index | load |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &dim in &dims {
        for &t in &ts {
            for &stream in &stream_seeds {
                let stream_seed = dim as u64 + 1000 * stream;
                let points = mixture(t + measured, 4, dim, stream_seed);
                let mut costs = Vec::new();
                let mut fractions = [[0.0; 2]; 3];
                let mut auto_indexed = 0;
                let mut round_nodes = [0.0; 3];
                for (mode, summation) in
                    [Summation::PointByPoint, Summation::Index, Summation::Auto]
                        .into_iter()
                        .enumerate()
                {
                    let (mut learner, mut rows) = warmed_up(
                        PacoParams::new().warmup(t - 8).seed(1).summation(summation),
                        &points,
                        dim,
                        t,
                    );
                    let started = cpu_seconds();
                    for point in rows.by_ref().take(measured) {
                        let step = learner.learn_one(point).expect("valid point");
                        let visited = step
                            .sampler
                            .as_ref()
                            .map_or(0.0, |r| r.nodes_per_evaluation);
                        round_nodes[mode] += visited;
                        // A round summed point by point sums every point it covers one by
                        // one; on the index some in closed form.
                        auto_indexed += usize::from(
                            mode == 2
                                && step
                                    .sampler
                                    .as_ref()
                                    .is_some_and(|r| r.direct_fraction < r.data_fraction),
                        );
                        if let Some(report) = &step.sampler {
                            fractions[mode][0] += report.data_fraction / measured as f64;
                            fractions[mode][1] += report.direct_fraction / measured as f64;
                        }
                    }
                    costs.push(1e3 * (cpu_seconds() - started) / measured as f64);
                }
                // The figure draws the first stream of each d.
                let drawn = if stream == stream_seeds[0] { 2 } else { 0 };
                for (name, cost) in [("point by point", costs[0]), ("index", costs[1])]
                    .into_iter()
                    .take(drawn)
                {
                    let label = format!("d = {dim}, {name}");
                    match series.iter_mut().find(|(l, _)| *l == label) {
                        Some((_, values)) => values.push((t as f64, cost)),
                        None => series.push((label, vec![(t as f64, cost)])),
                    }
                }
                println!(
                    "| {t} | {dim} | {stream} | {:.1} | {:.2} | {:.2} | {:.2} | {:.2} | {auto_indexed} | {:.1} | {:.3} | {:.3} | {:.3} | {} |",
                    closest_means(4, dim, stream_seed),
                    costs[0],
                    costs[1],
                    costs[0] / costs[1],
                    costs[2],
                    round_nodes[1] / measured as f64,
                    fractions[0][0],
                    fractions[1][0],
                    fractions[1][1],
                    load()
                );
            }
        }
    }
    println!();
    if let Some(path) = svg_path {
        std::fs::write(&path, log_log_svg(&series)).expect("a writable path");
        println!("(figure written to {path})\n");
    }
}

/// A log-log line chart of (t, ms per round) series, as a self-contained SVG: dashed lines
/// for the point-by-point series, solid for the index, one colour per d.
fn log_log_svg(series: &[(String, Vec<(f64, f64)>)]) -> String {
    let (width, height, left, right, top, bottom) = (720.0, 440.0, 70.0, 200.0, 20.0, 50.0);
    let all = series.iter().flat_map(|(_, v)| v.iter().copied());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in all.filter(|(_, y)| *y > 0.0) {
        x0 = x0.min(x.log10());
        x1 = x1.max(x.log10());
        y0 = y0.min(y.log10());
        y1 = y1.max(y.log10());
    }
    let (y0, y1) = (y0.floor(), y1.ceil());
    let px = |x: f64| left + (x.log10() - x0) / (x1 - x0).max(1e-9) * (width - left - right);
    let py =
        |y: f64| height - bottom - (y.log10() - y0) / (y1 - y0).max(1e-9) * (height - top - bottom);
    let colours = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e"];
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    let mut decade = y0;
    while decade <= y1 {
        let y = py(10f64.powf(decade));
        out += &format!(
            "<line x1=\"{left}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\n\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{} ms</text>\n",
            width - right,
            left - 6.0,
            y + 4.0,
            10f64.powf(decade)
        );
        decade += 1.0;
    }
    if let Some((_, first)) = series.first() {
        for (t, _) in first {
            let x = px(*t);
            out += &format!(
                "<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{t}</text>\n",
                height - bottom + 18.0
            );
        }
    }
    out += &format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">t, points in memory (log scale)</text>\n\
         <text x=\"14\" y=\"{}\" transform=\"rotate(-90 14 {})\" text-anchor=\"middle\">CPU ms per round (N = 500)</text>\n",
        (left + width - right) / 2.0,
        height - 10.0,
        height / 2.0,
        height / 2.0
    );
    for (i, (label, values)) in series.iter().enumerate() {
        let colour = colours[(i / 2) % colours.len()];
        let dash = if label.ends_with("point by point") {
            " stroke-dasharray=\"6 4\""
        } else {
            ""
        };
        let points: Vec<String> = values
            .iter()
            .filter(|(_, y)| *y > 0.0)
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect();
        out += &format!(
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"{dash} points=\"{}\"/>\n\
             <line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{colour}\" stroke-width=\"2\"{dash}/>\n\
             <text x=\"{}\" y=\"{}\">{label}</text>\n",
            points.join(" "),
            width - right + 10.0,
            width - right + 40.0,
            top + 10.0 + 20.0 * i as f64,
            top + 10.0 + 20.0 * i as f64,
            width - right + 46.0,
            top + 14.0 + 20.0 * i as f64
        );
    }
    out + "</svg>\n"
}

/// The rounds measured by `profile`, kept out of line so that
/// `valgrind --tool=callgrind --collect-atstart=no --toggle-collect=*measured_rounds*`
/// counts their instructions alone.
#[inline(never)]
fn measured_rounds(learner: &mut Paco, points: &[f64], dim: usize) -> usize {
    let mut accepted = 0;
    for point in points.chunks_exact(dim) {
        let step = learner.learn_one(point).expect("valid point");
        accepted += step.sampler.map_or(0, |report| report.accepted);
    }
    accepted
}

/// `profile --t T --dims D --rounds M`: the set-up of `rounds` for one case, then M rounds
/// in [`measured_rounds`] (for instruction counts under callgrind).
///
/// With `--state FILE`, the rounds are those of `long` instead (seed 77, default settings,
/// every round played, so the stored ℓ̂_s and their variance weights are the run's own):
/// if FILE does not exist, the run is played to t and its learner written there (JSON);
/// otherwise the learner is read from FILE and plays the next M rounds of the same stream.
fn profile(args: &[String]) {
    let t: usize = option(args, "--t").map_or(10_000, |s| s.parse().expect("a number"));
    let dim: usize = option(args, "--dims").map_or(5, |s| s.parse().expect("a number"));
    let measured: usize = option(args, "--rounds").map_or(5, |s| s.parse().expect("a number"));
    if let Some(path) = option(args, "--state") {
        let points = mixture(t + measured, 4, dim, 77);
        let (head, tail) = points.split_at(t * dim);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let mut learner: Paco = serde_json::from_str(&text).expect("a saved learner");
                let accepted = measured_rounds(&mut learner, tail, dim);
                println!(
                    "{measured} rounds of the long run after t = {t}, d = {dim}: {accepted} moves accepted"
                );
            }
            Err(_) => {
                let mut learner = PacoParams::new()
                    .seed(77)
                    .check()
                    .expect("valid settings")
                    .build();
                measured_rounds(&mut learner, head, dim);
                let text = serde_json::to_string(&learner).expect("a serialisable learner");
                std::fs::write(&path, text).expect("a writable state file");
                println!("the long run played to t = {t}, d = {dim}; its learner is in {path}");
            }
        }
        return;
    }
    let points = mixture(t + measured, 4, dim, dim as u64);
    let mut learner = PacoParams::new()
        .warmup(t - 8)
        .seed(1)
        .check()
        .expect("valid settings")
        .build();
    for point in points[..t * dim].chunks_exact(dim) {
        learner.learn_one(point).expect("valid point");
    }
    let accepted = measured_rounds(&mut learner, &points[t * dim..], dim);
    println!("{measured} rounds at t = {t}, d = {dim}: {accepted} moves accepted");
}

/// The load average of the machine (the first field of /proc/loadavg), for the record.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// The CPU time of this process so far, in seconds: the time all its threads (the rayon
/// workers, which may run the chain, persist for the whole run) spent on a CPU, from the
/// process clock (`CLOCK_PROCESS_CPUTIME_ID`, nanosecond resolution). On a loaded machine it
/// is closer to the time the run would take alone than the wall time is. (It used to be read
/// from /proc/self/task/*/schedstat, which kernels built without scheduler statistics lack;
/// the fallback then, /proc/self/stat, counts in ticks of 10 ms, too coarse for a round.)
fn cpu_seconds() -> f64 {
    static START: std::sync::OnceLock<cpu_time::ProcessTime> = std::sync::OnceLock::new();
    // Counted from the first call: only differences are used.
    START
        .get_or_init(cpu_time::ProcessTime::now)
        .elapsed()
        .as_secs_f64()
}

/// A 64-bit FNV-1a hash of a sequence of words: the fingerprint of a run.
struct Fingerprint(u64);

impl Default for Fingerprint {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fingerprint {
    fn add(&mut self, word: u64) {
        for byte in word.to_le_bytes() {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

fn long(args: &[String]) {
    let horizon: usize = option(args, "--horizon").map_or(10_000, |s| s.parse().expect("a number"));
    let dim: usize = option(args, "--dims").map_or(5, |s| s.parse().expect("a number"));
    let summations: Vec<(&str, Summation)> = match option(args, "--summation").as_deref() {
        Some("auto") => vec![("index (auto)", Summation::Auto)],
        Some("linear") => vec![("point by point", Summation::PointByPoint)],
        _ => vec![
            ("point by point", Summation::PointByPoint),
            ("index (auto)", Summation::Auto),
        ],
    };
    let points = mixture(horizon, 4, dim, 77);
    println!(
        "## A whole run: T = {horizon}, d = {dim}, 4 clusters, N = 500, exact memory, defaults\n"
    );
    let mut totals = Vec::new();
    for (name, summation) in summations {
        let mut learner = PacoParams::new()
            .seed(77)
            .summation(summation)
            .check()
            .expect("valid settings")
            .build();
        println!("### S_t summed {name} (load {} at the start)\n", load());
        println!(
            "| rounds | elapsed (s) | ms per round over the last tenth | CPU ms per round over the last tenth | data summed one by one per iteration | k̂ | load |"
        );
        println!("|---:|---:|---:|---:|---:|---:|---:|");
        let tenth = (horizon / 10).max(1);
        let started = Instant::now();
        let cpu_started = cpu_seconds();
        let mut last = 0.0;
        let mut last_cpu = cpu_started;
        let mut direct = 0.0;
        let mut chains = 0;
        let mut fingerprint = Fingerprint::default();
        for (t, point) in points.chunks_exact(dim).enumerate() {
            let step = learner.learn_one(point).expect("valid point");
            fingerprint.add(step.n_clusters.unwrap_or(0) as u64);
            fingerprint.add(step.loss.map_or(u64::MAX, f64::to_bits));
            fingerprint.add(step.sampler.as_ref().map_or(0, |r| r.accepted as u64));
            if let Some(report) = step.sampler {
                direct += report.direct_fraction;
                chains += 1;
            }
            if (t + 1) % tenth == 0 || t + 1 == horizon {
                let elapsed = started.elapsed().as_secs_f64();
                let cpu = cpu_seconds();
                println!(
                    "| {} | {:.2} | {:.3} | {:.3} | {:.4} | {} | {} |",
                    t + 1,
                    elapsed,
                    1e3 * (elapsed - last) / tenth as f64,
                    1e3 * (cpu - last_cpu) / tenth as f64,
                    direct / f64::from(chains.max(1)),
                    learner.n_clusters().unwrap_or(0),
                    load()
                );
                last = elapsed;
                last_cpu = cpu;
                direct = 0.0;
                chains = 0;
            }
        }
        let total = started.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu_started;
        for centre in learner.centres().map(|c| c.as_slice()).unwrap_or_default() {
            fingerprint.add(centre.to_bits());
        }
        println!(
            "\nTotal: {total:.2} s wall, {cpu:.2} s CPU for {horizon} rounds ({name}; load {} at the end)\n",
            load()
        );
        println!(
            "Fingerprint of the run (k̂_t, losses, acceptances, final centres): {:016x}\n",
            fingerprint.0
        );
        totals.push((name, cpu));
    }
    if let [(_, linear), (_, index)] = totals[..] {
        println!(
            "Ratio of the CPU times, point by point / index: {:.1}×\n",
            linear / index
        );
    }
}

/// A learner with `params` that has learned the first `t` points of `points`, and the rows
/// that follow.
fn warmed_up(
    params: PacoParams,
    points: &[f64],
    dim: usize,
    t: usize,
) -> (Paco, std::slice::ChunksExact<'_, f64>) {
    let mut learner = params.check().expect("valid settings").build();
    let mut rows = points.chunks_exact(dim);
    for point in rows.by_ref().take(t) {
        learner.learn_one(point).expect("valid point");
    }
    (learner, rows)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        // The usage is the module's doc comment: print it rather than run the defaults.
        let usage = include_str!("paco_performance.rs")
            .lines()
            .take_while(|line| line.starts_with("//!"))
            .map(|line| {
                line.trim_start_matches("//!")
                    .strip_prefix(' ')
                    .unwrap_or("")
            })
            .collect::<Vec<_>>()
            .join("\n");
        println!("{usage}");
        return;
    }
    let part = args.first().filter(|a| !a.starts_with("--")).cloned();
    match part.as_deref() {
        Some("r-example") => r_example(&args),
        Some("rounds") => rounds(&args),
        Some("long") => long(&args),
        Some("profile") => profile(&args),
        Some("crossover") => crossover(&args),
        None => {
            r_example(&args);
            rounds(&args);
            long(&args);
        }
        Some(other) => {
            eprintln!("unknown part {other}: r-example, rounds, long, crossover or profile");
            std::process::exit(2);
        }
    }
}
