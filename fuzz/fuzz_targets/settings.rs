//! Every command's settings: arbitrary values (huge, negative, NaN, malformed, at and beyond
//! every documented limit) for every option of every command, run in-process on small inputs.
//!
//! A run may refuse its settings (a usage error); it must never panic, abort on an
//! allocation (libFuzzer's `-rss_limit_mb` catches it), hang (`-timeout`), or fail
//! internally (exit code 1).

#![no_main]

use libfuzzer_sys::fuzz_target;

mod common;
use common::{file, run_line};

/// Values given to options: the edges of every range, and what is not a number.
const VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "-1",
    "0.5",
    "1.5",
    "-0.0",
    "7",
    "50",
    "100",
    "101",
    "745",
    "1000",
    "1001",
    "1024",
    "1025",
    "10000",
    "10001",
    "65536",
    "65537",
    "1000000",
    "1000001",
    "10000000",
    "100000000",
    "100000001",
    "9007199254740992",
    "9007199254740993",
    "18446744073709551615",
    "18446744073709551616",
    "1e-300",
    "1e-320",
    "1e-40",
    "1e-41",
    "1e50",
    "1e51",
    "1e100",
    "1e150",
    "1e200",
    "1e201",
    "1e300",
    "1e308",
    "-1e308",
    "NaN",
    "inf",
    "-inf",
    "auto",
    "",
    "x",
    "y",
    "1,2",
    "x,y",
    "2,1",
    "1-2",
    "1,1",
    "3",
    "label",
    "a,b",
    "b",
    "c",
    "b_awake",
    "1e-12",
    "1e12",
    "0.999",
    "pinball:0.5",
    "pinball:2",
];

/// An option of a command: its flag, and whether it takes a value (from [`VALUES`] or the
/// given choices).
struct Flag(&'static str, &'static [&'static str]);

const ANY: &[&str] = &[];
const SWITCH: &[&str] = &["-"];

const COMMON: &[Flag] = &[
    Flag("--columns", ANY),
    Flag("--on-bad-row", &["error", "skip"]),
    Flag("--header", &["auto", "yes", "no"]),
    Flag("--delimiter", &[",", ";", "tab", "x"]),
    Flag("--seed", ANY),
    Flag("--format", &["jsonl", "csv", "tsv"]),
    Flag("--plot-points", ANY),
    Flag("--checkpoint-every", ANY),
];

const KMEANS: &[Flag] = &[
    Flag("--k", ANY),
    Flag("--init", &["greedy++", "k-means++", "random"]),
    Flag("--n-init", ANY),
    Flag("--max-iter", ANY),
    Flag("--tol", ANY),
    Flag("--online", SWITCH),
    Flag("--decay", ANY),
    Flag("--batch-size", ANY),
    Flag("--init-size", ANY),
    Flag("--reassignment-ratio", ANY),
    Flag("--weights", ANY),
    Flag("--axes", ANY),
];

const PACO: &[Flag] = &[
    Flag("--max-k", ANY),
    Flag("--radius", ANY),
    Flag("--center", SWITCH),
    Flag("--no-center", SWITCH),
    Flag("--scale", SWITCH),
    Flag("--warmup", ANY),
    Flag("--eta", ANY),
    Flag("--coeff", ANY),
    Flag("--proposal", &["laplace", "seed"]),
    Flag("--proposal-scale", ANY),
    Flag("--iterations", ANY),
    Flag("--window", ANY),
    Flag("--restart", SWITCH),
    Flag("--batch", SWITCH),
    Flag("--labels", ANY),
    Flag("--centres", SWITCH),
    Flag("--axes", ANY),
    Flag("--oracle-restarts", ANY),
];

const CURVE: &[Flag] = &[
    Flag("--radius", ANY),
    Flag("--delta", ANY),
    Flag("--max-segments", ANY),
    Flag("--max-length", ANY),
    Flag("--penalty", ANY),
    Flag("--eta-scale", ANY),
    Flag("--feedback", &["bandit", "full"]),
    Flag("--estimator", &["label-efficient", "paper"]),
    Flag("--explore", ANY),
    Flag("--alpha", ANY),
    Flag("--local-vertices", ANY),
    Flag("--max-candidates", ANY),
    Flag("--warmup", ANY),
    Flag("--window", ANY),
    Flag("--axes", ANY),
];

const EXPERTS: &[Flag] = &[
    Flag("--rule", &["wm", "rwm", "hedge", "ewa", "fpl"]),
    Flag("--beta", ANY),
    Flag("--eta", ANY),
    Flag("--horizon", ANY),
    Flag("--anytime", SWITCH),
    Flag("--doubling", SWITCH),
    Flag("--adahedge", SWITCH),
    Flag(
        "--loss",
        &["zero-one", "square", "absolute", "pinball:0.3", "pinball:7"],
    ),
    Flag("--loss-bound", ANY),
    Flag("--gradient", SWITCH),
    Flag("--prior", ANY),
    Flag("--sample", SWITCH),
    Flag("--outcome", ANY),
    Flag("--experts", ANY),
    Flag("--losses", SWITCH),
    Flag("--weights", SWITCH),
];

/// Options whose large values make a run long (but bounded): with one of them large, the
/// run reads a 3-row input.
const COSTLY: &[&str] = &[
    "--iterations",
    "--n-init",
    "--max-iter",
    "--max-candidates",
    "--local-vertices",
    "--oracle-restarts",
    "--warmup",
    "--max-k",
    "--max-segments",
    "--k",
    "--init-size",
];

/// The input: byte 0 picks the command, byte 1 the outputs (bits), then pairs of bytes
/// (option, value), each an index into the tables (modulo their length).
fn run(data: &[u8]) {
    let [command, outputs, rest @ ..] = data else {
        return;
    };
    let command = ["kmeans", "paco", "curve", "experts", "project"][usize::from(*command) % 5];
    let own: &[Flag] = match command {
        "kmeans" => KMEANS,
        "paco" => PACO,
        "curve" => CURVE,
        "experts" => EXPERTS,
        _ => &[],
    };
    let mut args: Vec<String> = vec!["pacstream".into(), command.into(), "-q".into()];
    let mut costly = false;
    for pair in rest.chunks_exact(2).take(8) {
        let index = usize::from(pair[0]) % (COMMON.len() + own.len());
        let Flag(flag, choices) = if index < COMMON.len() {
            &COMMON[index]
        } else {
            &own[index - COMMON.len()]
        };
        args.push((*flag).to_string());
        if *choices == SWITCH {
            continue;
        }
        let table = if choices.is_empty() { VALUES } else { choices };
        let value = table[usize::from(pair[1]) % table.len()];
        costly |= COSTLY.contains(flag) && value.parse::<f64>().is_ok_and(|v| v > 64.0);
        args.push(value.to_string());
    }
    let bit = |n: u8| outputs & (1 << n) != 0;
    if bit(0) || command == "project" {
        let name = if bit(1) { "out.csv" } else { "out.jsonl" };
        args.extend(["-o".into(), file(name)]);
    }
    if bit(2) {
        args.extend(["--summary".into(), file("summary.json")]);
    }
    if bit(3) {
        args.extend(["--plot".into(), file("figure.svg")]);
    }
    if command != "project" && bit(4) {
        args.extend(["--checkpoint".into(), file("ck.json")]);
        if bit(5) {
            args.extend(["--resume".into(), file("ck.json")]);
        }
    }
    match command {
        "experts" => {
            if !args.iter().any(|a| a == "--rule") {
                args.extend(["--rule".into(), "hedge".into()]);
            }
            if !args.iter().any(|a| a == "--outcome" || a == "--losses") {
                args.extend(["--outcome".into(), "y".into()]);
            }
            args.push(file("experts.csv"));
        }
        "project" => {
            args.extend(["--curve".into(), file("curve.json")]);
            args.push(file("points.csv"));
        }
        _ => {
            if command == "kmeans" && !args.iter().any(|a| a == "--k") {
                args.extend(["--k".into(), "2".into()]);
            }
            args.push(file(if costly { "few.csv" } else { "points.csv" }));
        }
    }
    run_line(&args);
}

fuzz_target!(|data: &[u8]| run(data));
