//! Checkpoints and resume: a run killed at random moments and resumed from its checkpoint
//! ends with exactly the output, summary and figure of an uninterrupted run; the checkpoint
//! always parses; a resume that cannot continue the same run is refused.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{TestRng, blobs_csv, data, pacstream, run, write};
use serde_json::Value;

/// A way of running online k-means, killed and resumed.
struct Scenario {
    name: &'static str,
    rows: usize,
    dim: usize,
    weights: bool,
    /// Replace every n-th data row with a bad one (0: none).
    bad_every: usize,
    checkpoint_every: &'static str,
    options: &'static [&'static str],
    /// Files the run writes, compared byte for byte with the uninterrupted run's.
    outputs: &'static [&'static str],
}

fn input_text(scenario: &Scenario) -> String {
    let text = blobs_csv(scenario.rows, scenario.dim, 42, scenario.weights);
    if scenario.bad_every == 0 {
        return text;
    }
    text.lines()
        .enumerate()
        .map(|(index, line)| {
            if index > 0 && index % scenario.bad_every == 0 {
                "1.0,oops\n".to_string()
            } else {
                format!("{line}\n")
            }
        })
        .collect()
}

fn base_args(scenario: &Scenario, prefix: &str) -> Vec<String> {
    let mut args: Vec<String> = ["kmeans", "--k", "4", "--online", "input.csv", "-q"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(scenario.options.iter().map(|s| s.to_string()));
    for (flag, name) in [("--output", "rounds.jsonl"), ("--summary", "summary.json")] {
        if scenario.outputs.contains(&name) {
            args.push(flag.to_string());
            args.push(format!("{prefix}{name}"));
        }
    }
    if scenario.outputs.contains(&"figure.svg") {
        args.push("--plot".to_string());
        args.push(format!("{prefix}figure.svg"));
    }
    args
}

fn checkpoint_args(scenario: &Scenario, resume: bool) -> Vec<String> {
    let mut args = vec![
        "--checkpoint".to_string(),
        "ck.json".to_string(),
        "--checkpoint-every".to_string(),
        scenario.checkpoint_every.to_string(),
    ];
    if resume {
        args.push("--resume".to_string());
        args.push("ck.json".to_string());
    }
    args
}

fn run_to_end(dir: &Path, args: &[String]) -> Duration {
    let started = Instant::now();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let outcome = run(dir, &args);
    assert_eq!(outcome.code, 0, "{args:?}: {outcome:?}");
    started.elapsed()
}

/// The checkpoint left by a killed run is whole: it parses and says how far it got.
fn check_checkpoint(path: &Path, rows: usize) {
    let bytes = std::fs::read(path).expect("the checkpoint is readable");
    let checkpoint: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "torn checkpoint ({e}): {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
        )
    });
    assert_eq!(checkpoint["format"], "pacstream-checkpoint");
    let consumed = checkpoint["input"]["rows_consumed"]
        .as_u64()
        .expect("rows consumed");
    assert!(consumed as usize <= rows);
}

fn kill_and_resume(scenario: &Scenario) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    write(dir, "input.csv", input_text(scenario));

    // The uninterrupted run, without checkpoints: the reference.
    run_to_end(dir, &base_args(scenario, "reference-"));
    // The same with checkpoints: same results, and its duration sets the kill window.
    let mut args = base_args(scenario, "");
    args.extend(checkpoint_args(scenario, false));
    let duration = run_to_end(dir, &args);
    for name in scenario.outputs {
        assert_eq!(
            std::fs::read(dir.join(name)).expect("output"),
            std::fs::read(dir.join(format!("reference-{name}"))).expect("reference"),
            "{}: checkpointing changed {name}",
            scenario.name
        );
        std::fs::remove_file(dir.join(name)).expect("removed");
    }
    std::fs::remove_file(dir.join("ck.json")).expect("removed");

    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(7, |d| d.as_nanos() as u64);
    let mut rng = TestRng::new(seed);
    // Kill when the output has grown past a random point of what is left to write (plus a
    // random few milliseconds, to land anywhere: mid-row, mid-flush, mid-checkpoint), so the
    // kills fall inside the run whatever the machine's speed.
    let output = dir.join("rounds.jsonl");
    let final_length = std::fs::metadata(dir.join("reference-rounds.jsonl"))
        .expect("reference output")
        .len();
    let mut kills = 0;
    let mut finished = false;
    for _ in 0..8 {
        let checkpoint = dir.join("ck.json");
        let resume = checkpoint.exists();
        let start = std::fs::metadata(&output).map_or(0, |m| m.len());
        let target = start
            + ((final_length - start.min(final_length)) as f64 * (0.05 + 0.9 * rng.next_f64()))
                as u64;
        let mut args = base_args(scenario, "");
        args.extend(checkpoint_args(scenario, resume));
        let mut child = pacstream()
            .args(&args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the binary starts");
        let deadline = Instant::now() + 20 * duration + Duration::from_secs(5);
        let status = loop {
            if let Some(status) = child.try_wait().expect("the child can be polled") {
                break Some(status);
            }
            if std::fs::metadata(&output).is_ok_and(|m| m.len() >= target)
                || Instant::now() > deadline
            {
                std::thread::sleep(Duration::from_micros(rng.below(3000)));
                break None;
            }
            std::thread::sleep(Duration::from_micros(300));
        };
        match status {
            Some(status) => {
                assert!(status.success(), "{}: {status}", scenario.name);
                finished = true;
                break;
            }
            None => {
                child.kill().expect("SIGKILL");
                child.wait().expect("reaped");
                kills += 1;
            }
        }
        if checkpoint.exists() {
            check_checkpoint(&checkpoint, scenario.rows);
        }
        if kills == 4 {
            break;
        }
    }
    if !finished {
        let resume = dir.join("ck.json").exists();
        let mut args = base_args(scenario, "");
        args.extend(checkpoint_args(scenario, resume));
        run_to_end(dir, &args);
    }
    // A kill between creating a checkpoint's temporary file and renaming it leaves the
    // temporary behind; the next run clears it.
    let leftovers: Vec<String> = std::fs::read_dir(dir)
        .expect("listable")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert!(
        kills >= 2,
        "{}: only {kills} kills landed inside the run (seed {seed})",
        scenario.name
    );
    for name in scenario.outputs {
        let resumed = std::fs::read(dir.join(name)).expect("output");
        let reference = std::fs::read(dir.join(format!("reference-{name}"))).expect("reference");
        assert!(
            resumed == reference,
            "{}: {name} differs after {kills} kills (seed {seed}): {} vs {} bytes",
            scenario.name,
            resumed.len(),
            reference.len()
        );
    }
}

#[test]
fn killed_and_resumed_equals_uninterrupted() {
    kill_and_resume(&Scenario {
        name: "one row at a time",
        rows: 150_000,
        dim: 3,
        weights: false,
        bad_every: 0,
        checkpoint_every: "400",
        options: &[],
        outputs: &["rounds.jsonl", "summary.json"],
    });
}

#[test]
fn killed_and_resumed_mini_batches_with_weights_bad_rows_and_plot() {
    kill_and_resume(&Scenario {
        name: "mini-batches",
        rows: 80_000,
        dim: 2,
        weights: true,
        bad_every: 997,
        checkpoint_every: "250",
        options: &[
            "--batch-size",
            "7",
            "--weights",
            "w",
            "--on-bad-row",
            "skip",
            "--decay",
            "2000",
            "--reassignment-ratio",
            "0.05",
            "--plot-points",
            "300",
            "--seed",
            "9",
        ],
        outputs: &["rounds.jsonl", "summary.json", "figure.svg"],
    });
}

/// A finished faithful run with a checkpoint, in a fresh directory.
fn checkpointed_faithful(dir: &Path) -> String {
    let faithful = data("faithful.csv")
        .to_str()
        .expect("a UTF-8 path")
        .to_string();
    let outcome = run(
        dir,
        &[
            "kmeans",
            "--k",
            "2",
            "--online",
            &faithful,
            "--checkpoint",
            "ck.json",
            "--checkpoint-every",
            "50",
            "-o",
            "rounds.csv",
            "-q",
        ],
    );
    assert_eq!(outcome.code, 0, "{outcome:?}");
    faithful
}

#[test]
fn resuming_with_other_settings_or_input_is_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    let faithful = checkpointed_faithful(dir);
    let resume = |extra: &[&str]| {
        let mut args = vec!["kmeans", "--online", &faithful, "--resume", "ck.json", "-q"];
        args.extend_from_slice(extra);
        run(dir, &args)
    };
    let outcome = resume(&["--k", "3"]);
    assert_eq!(outcome.code, 2);
    assert!(
        outcome.stderr.contains("it was made with other settings"),
        "{}",
        outcome.stderr
    );
    assert!(
        outcome.stderr.contains("--k was 2, now 3"),
        "{}",
        outcome.stderr
    );
    let outcome = resume(&["--k", "2", "--decay", "100"]);
    assert_eq!(outcome.code, 2);
    assert!(
        outcome.stderr.contains("--decay was not given, now 100.0"),
        "{}",
        outcome.stderr
    );
    let outcome = resume(&["--k", "2", "--columns", "2"]);
    assert!(
        outcome.stderr.contains("--columns was [1,2], now [2]"),
        "{}",
        outcome.stderr
    );
    // The same settings resume (the run had finished: nothing is left to do).
    let outcome = resume(&["--k", "2", "-o", "rounds.csv"]);
    assert_eq!(outcome.code, 0, "{outcome:?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("rounds.csv"))
            .expect("output")
            .lines()
            .count(),
        273
    );
    // The output must continue in its format.
    let outcome = resume(&["--k", "2", "-o", "rounds.csv", "--format", "jsonl"]);
    assert_eq!(outcome.code, 2);
    assert!(
        outcome.stderr.contains("resume with --format csv"),
        "{}",
        outcome.stderr
    );
    // Another input with the same columns.
    let mut other = std::fs::read_to_string(&faithful).expect("faithful");
    other = other.replacen("3.6,79", "3.6,80", 1);
    write(dir, "other.csv", other);
    let outcome = run(
        dir,
        &[
            "kmeans",
            "--k",
            "2",
            "--online",
            "other.csv",
            "--resume",
            "ck.json",
        ],
    );
    assert_eq!(outcome.code, 2);
    assert!(
        outcome
            .stderr
            .contains("differ from those the checkpoint was made from"),
        "{}",
        outcome.stderr
    );
    // An output file changed since the checkpoint.
    write(dir, "rounds.csv", "t\n");
    let outcome = resume(&["--k", "2", "-o", "rounds.csv"]);
    assert_eq!(outcome.code, 2);
    assert!(
        outcome.stderr.contains("it was changed"),
        "{}",
        outcome.stderr
    );
    // Batch mode has no checkpoints.
    let outcome = run(
        dir,
        &["kmeans", "--k", "2", &faithful, "--resume", "ck.json"],
    );
    assert_eq!(outcome.code, 2);
}

#[test]
fn corrupt_checkpoints_are_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    let faithful = checkpointed_faithful(dir);
    let good = std::fs::read_to_string(dir.join("ck.json")).expect("checkpoint");
    let resume = || {
        run(
            dir,
            &[
                "kmeans", "--k", "2", "--online", &faithful, "--resume", "bad.json",
            ],
        )
    };
    let cases: Vec<(String, &str)> = vec![
        (
            good[..good.len() / 2].to_string(),
            "is not a valid checkpoint",
        ),
        ("{}".to_string(), "is not a valid checkpoint"),
        (
            good.replace("\"version\":1", "\"version\":99"),
            "version 99",
        ),
        (
            good.replace("\"command\":\"kmeans\"", "\"command\":\"paco\""),
            "not of `pacstream kmeans`",
        ),
        // The learner's state contradicts itself: the library refuses the snapshot.
        (
            good.replacen("\"n_clusters\":2", "\"n_clusters\":3", 1),
            "invalid snapshot",
        ),
        // The learner's own settings contradict the recorded ones.
        (
            good.replacen("\"seed\":0}", "\"seed\":5}", 1),
            "inconsistent",
        ),
        // Centres of another dimension: the library refuses the snapshot.
        (
            good.replacen("\"dim\":2", "\"dim\":3", 1),
            "is not a valid checkpoint",
        ),
        (
            good.replace("\"rows_consumed\":272", "\"rows_consumed\":100"),
            "inconsistent",
        ),
    ];
    for (text, message) in cases {
        assert_ne!(text, good, "the corruption of {message:?} changed nothing");
        write(dir, "bad.json", &text);
        let outcome = resume();
        assert_eq!(outcome.code, 2, "{message}: {outcome:?}");
        assert!(
            outcome.stderr.contains(message),
            "expected {message:?}: {}",
            outcome.stderr
        );
    }
    let outcome = run(
        dir,
        &[
            "kmeans",
            "--k",
            "2",
            "--online",
            &faithful,
            "--resume",
            "none.json",
        ],
    );
    assert_eq!(outcome.code, 2);
    assert!(outcome.stderr.contains("cannot open 'none.json'"));
}

#[test]
fn a_bad_row_stops_the_run_but_keeps_what_was_learned() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    let clean = blobs_csv(3000, 2, 5, false);
    let mut lines: Vec<&str> = clean.lines().collect();
    lines[1500] = "4.0,NaN";
    write(dir, "input.csv", lines.join("\n") + "\n");
    let args = [
        "kmeans",
        "--k",
        "4",
        "--online",
        "input.csv",
        "-o",
        "rounds.csv",
        "--checkpoint",
        "ck.json",
        "--checkpoint-every",
        "1000",
    ];
    let outcome = run(dir, &args);
    assert_eq!(outcome.code, 2);
    assert!(
        outcome
            .stderr
            .contains("input.csv: line 1501, column 2 (\"x2\"): \"NaN\" is not a finite number"),
        "{}",
        outcome.stderr
    );
    assert!(
        outcome
            .stderr
            .contains("the 1499 rows before the bad row are learned and saved"),
        "{}",
        outcome.stderr
    );
    // Fix the row and continue: the result is that of a run on the fixed file.
    write(dir, "input.csv", &clean);
    let mut resumed = args.to_vec();
    resumed.extend(["--resume", "ck.json", "-q"]);
    let outcome = run(dir, &resumed);
    assert_eq!(outcome.code, 0, "{outcome:?}");
    let outcome = run(
        dir,
        &[
            "kmeans",
            "--k",
            "4",
            "--online",
            "input.csv",
            "-o",
            "reference.csv",
            "-q",
        ],
    );
    assert_eq!(outcome.code, 0);
    assert_eq!(
        std::fs::read(dir.join("rounds.csv")).expect("output"),
        std::fs::read(dir.join("reference.csv")).expect("reference")
    );
}
