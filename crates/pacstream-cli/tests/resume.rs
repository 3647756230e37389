//! Checkpoints and resume: every streaming command (k-means, PACBO, principal curves,
//! experts), killed with SIGKILL at 20 random moments and resumed from its checkpoint each
//! time, ends with exactly the output, summary and figure of an uninterrupted run; the
//! checkpoint always parses; a resume that cannot continue the same run is refused.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{
    TestRng, blobs_csv, data_arg, pacstream, refused, run, run_line, run_ok, words, write,
};
use serde_json::Value;

/// A streaming run, killed and resumed.
struct Scenario {
    name: &'static str,
    /// The input file's text.
    input: String,
    /// The command and its options, without the input and the outputs (as typed).
    args: &'static str,
    checkpoint_every: &'static str,
    /// Files the run writes, compared byte for byte with the uninterrupted run's (the
    /// summary without its wall times).
    outputs: &'static [&'static str],
}

/// The kills per scenario.
const KILLS: usize = 20;

/// `rows` rows of blobs with every n-th replaced by a bad row (0: none).
fn with_bad_rows(text: &str, bad_every: usize) -> String {
    text.lines()
        .enumerate()
        .map(|(index, line)| {
            if bad_every > 0 && index > 0 && index % bad_every == 0 {
                "1.0,oops\n".to_string()
            } else {
                format!("{line}\n")
            }
        })
        .collect()
}

/// Rounds of advice: an outcome and four experts, one of them asleep now and then.
fn experts_csv(rows: usize, seed: u64) -> String {
    let mut rng = TestRng::new(seed);
    let mut text = String::from("y,steady,noisy,late,contrarian\n");
    for t in 0..rows {
        let y = (t as f64 * 0.01).sin() * 10.0 + rng.next_f64();
        let late = if rng.below(10) == 0 {
            String::new()
        } else {
            format!("{:.4}", y + 2.0 * rng.next_f64() - 1.0)
        };
        text.push_str(&format!(
            "{y:.4},{:.4},{:.4},{late},{:.4}\n",
            y + 0.5,
            y + 6.0 * rng.next_f64() - 3.0,
            -y
        ));
    }
    text
}

fn base_args(scenario: &Scenario, prefix: &str) -> Vec<String> {
    let mut args = words(scenario.args);
    args.extend(["input.csv".to_string(), "-q".to_string()]);
    for (flag, name) in [
        ("--output", "rounds.jsonl"),
        ("--summary", "summary.json"),
        ("--plot", "figure.svg"),
    ] {
        if scenario.outputs.contains(&name) {
            args.push(flag.to_string());
            args.push(format!("{prefix}{name}"));
        }
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
    let consumed = checkpoint["content"]["input"]["rows_consumed"]
        .as_u64()
        .expect("rows consumed");
    assert!(consumed as usize <= rows);
}

/// A file of the run as compared: a summary without its wall times, anything else as is.
fn comparable(name: &str, bytes: Vec<u8>) -> Vec<u8> {
    if name != "summary.json" {
        return bytes;
    }
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.retain(|key, _| !key.ends_with("_seconds"));
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut value: Value = serde_json::from_slice(&bytes).expect("a JSON summary");
    strip(&mut value);
    serde_json::to_vec(&value).expect("serialisable")
}

fn kill_and_resume(scenario: &Scenario) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    write(dir, "input.csv", &scenario.input);
    let rows = scenario.input.lines().count();

    // The uninterrupted run, without checkpoints: the reference.
    run_to_end(dir, &base_args(scenario, "reference-"));
    // The same with checkpoints: same results, and its duration sets the deadlines.
    let mut args = base_args(scenario, "");
    args.extend(checkpoint_args(scenario, false));
    let duration = run_to_end(dir, &args);
    for name in scenario.outputs {
        assert_eq!(
            comparable(name, std::fs::read(dir.join(name)).expect("output")),
            comparable(
                name,
                std::fs::read(dir.join(format!("reference-{name}"))).expect("reference")
            ),
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
    // The i-th kill comes once the output has grown past a random point of the i-th of 20
    // slices of the run (plus a random few milliseconds, to land anywhere: mid-row,
    // mid-flush, mid-checkpoint, mid-resume), so the kills spread over the whole stream.
    let output = dir.join("rounds.jsonl");
    let final_length = std::fs::metadata(dir.join("reference-rounds.jsonl"))
        .expect("reference output")
        .len();
    let mut kills = 0;
    let mut finished = false;
    for attempt in 0..3 * KILLS {
        if kills == KILLS {
            break;
        }
        let checkpoint = dir.join("ck.json");
        let resume = checkpoint.exists();
        let slice = (kills as f64 + rng.next_f64()) / KILLS as f64;
        let target = (final_length as f64 * (0.02 + 0.9 * slice)) as u64;
        let mut args = base_args(scenario, "");
        args.extend(checkpoint_args(scenario, resume));
        let mut child = pacstream()
            .args(&args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
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
                let mut stderr = String::new();
                if let Some(mut pipe) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
                }
                assert!(
                    status.success(),
                    "{} (attempt {attempt}, seed {seed}): {status}: {stderr}",
                    scenario.name
                );
                finished = true;
                if kills < KILLS {
                    // On a loaded machine the run can end between reaching the target and
                    // the kill: check what it wrote, then start the stream again from
                    // nothing for the remaining kills.
                    assert_outputs_match(dir, scenario, kills, seed);
                    for name in scenario.outputs.iter().chain(&["ck.json"]) {
                        let _ = std::fs::remove_file(dir.join(name));
                    }
                    finished = false;
                    continue;
                }
                break;
            }
            None => {
                if child.try_wait().expect("pollable").is_none() {
                    kills += 1;
                }
                child.kill().expect("SIGKILL");
                child.wait().expect("reaped");
            }
        }
        if checkpoint.exists() {
            check_checkpoint(&checkpoint, rows);
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
        kills >= KILLS,
        "{}: only {kills} kills landed inside the run (seed {seed})",
        scenario.name
    );
    assert_outputs_match(dir, scenario, kills, seed);
}

/// Every output of a finished run equals the uninterrupted reference's.
fn assert_outputs_match(dir: &Path, scenario: &Scenario, kills: usize, seed: u64) {
    for name in scenario.outputs {
        let resumed = comparable(name, std::fs::read(dir.join(name)).expect("output"));
        let reference = comparable(
            name,
            std::fs::read(dir.join(format!("reference-{name}"))).expect("reference"),
        );
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
fn killed_and_resumed_kmeans_equals_uninterrupted() {
    kill_and_resume(&Scenario {
        name: "k-means, one row at a time",
        input: blobs_csv(60_000, 3, 42, false),
        args: "kmeans --k 4 --online",
        checkpoint_every: "400",
        outputs: &["rounds.jsonl", "summary.json"],
    });
}

#[test]
fn killed_and_resumed_kmeans_mini_batches_with_weights_bad_rows_and_plot() {
    kill_and_resume(&Scenario {
        name: "k-means, mini-batches",
        input: with_bad_rows(&blobs_csv(40_000, 2, 42, true), 997),
        args: "kmeans --k 4 --online --batch-size 7 --weights w --on-bad-row skip --decay 2000 --reassignment-ratio 0.05 --plot-points 300 --seed 9",
        checkpoint_every: "250",
        outputs: &["rounds.jsonl", "summary.json", "figure.svg"],
    });
}

#[test]
fn killed_and_resumed_paco_equals_uninterrupted() {
    kill_and_resume(&Scenario {
        name: "PACBO, window memory",
        input: with_bad_rows(&blobs_csv(3_000, 2, 11, false), 499),
        args: "paco --iterations 20 --window 300 --warmup 30 --on-bad-row skip --plot-points 200 --seed 3",
        checkpoint_every: "30",
        outputs: &["rounds.jsonl", "summary.json", "figure.svg"],
    });
}

#[test]
fn killed_and_resumed_curve_equals_uninterrupted() {
    kill_and_resume(&Scenario {
        name: "principal curve, window memory",
        input: blobs_csv(4_000, 2, 5, false),
        args: "curve --window 300 --plot-points 200 --seed 4",
        checkpoint_every: "40",
        outputs: &["rounds.jsonl", "summary.json", "figure.svg"],
    });
}

#[test]
fn killed_and_resumed_experts_equals_uninterrupted() {
    kill_and_resume(&Scenario {
        name: "experts, EWA with a sleeping expert",
        input: experts_csv(40_000, 8),
        args: "experts --rule ewa --outcome y --weights",
        checkpoint_every: "300",
        outputs: &["rounds.jsonl", "summary.json", "figure.svg"],
    });
}

/// A finished faithful run with a checkpoint, in a fresh directory.
fn checkpointed_faithful(dir: &Path) -> String {
    let faithful = data_arg("faithful.csv");
    run_ok(
        dir,
        "kmeans --k 2 --online @faithful.csv --checkpoint ck.json --checkpoint-every 50 -o rounds.csv -q",
    );
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
    refused(&outcome, "it was made with other settings");
    assert!(
        outcome.stderr.contains("--k was 2, now 3"),
        "{}",
        outcome.stderr
    );
    let outcome = resume(&["--k", "2", "--decay", "100"]);
    refused(&outcome, "--decay was not given, now 100.0");
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
    refused(&outcome, "resume with --format csv");
    // Another input with the same columns.
    let mut other = std::fs::read_to_string(&faithful).expect("faithful");
    other = other.replacen("3.6,79", "3.6,80", 1);
    write(dir, "other.csv", other);
    let outcome = run_line(dir, "kmeans --k 2 --online other.csv --resume ck.json");
    refused(&outcome, "differ from those the checkpoint was made from");
    // An output file changed since the checkpoint: refused, and left as it is.
    write(dir, "rounds.csv", "t\n");
    let outcome = resume(&["--k", "2", "-o", "rounds.csv"]);
    refused(&outcome, "is not the output the checkpoint recorded");
    assert_eq!(
        std::fs::read_to_string(dir.join("rounds.csv")).expect("output"),
        "t\n"
    );
    // Batch mode has no checkpoints.
    let outcome = run_line(dir, "kmeans --k 2 @faithful.csv --resume ck.json");
    assert_eq!(outcome.code, 2);
}

/// The content of a checkpoint, sealed again with a valid checksum (as only someone who
/// forges one would): what lies behind the checksum is checked too.
fn reseal(content: &str) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let digest: String = Sha256::digest(content.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(
        "{{\"format\":\"pacstream-checkpoint\",\"version\":2,\"sha256\":\"{digest}\",\"content\":{content}}}\n"
    )
    .into_bytes()
}

/// The exact text of a checkpoint's content.
fn content_of(checkpoint: &str) -> String {
    let start = checkpoint.find("\"content\":").expect("a content") + "\"content\":".len();
    let end = checkpoint.trim_end().len() - 1;
    checkpoint[start..end].to_string()
}

#[test]
fn corrupt_checkpoints_are_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    checkpointed_faithful(dir);
    let good = std::fs::read_to_string(dir.join("ck.json")).expect("checkpoint");
    let output = std::fs::read(dir.join("rounds.csv")).expect("output");
    let resume = || {
        run_line(
            dir,
            "kmeans --k 2 --online @faithful.csv --resume bad.json -o rounds.csv",
        )
    };
    let refused = |bytes: &[u8], message: &str| {
        write(dir, "bad.json", bytes);
        let outcome = resume();
        assert_eq!(outcome.code, 2, "{message}: {outcome:?}");
        assert!(
            outcome.stderr.contains(message),
            "expected {message:?}: {}",
            outcome.stderr
        );
        assert_eq!(
            std::fs::read(dir.join("rounds.csv")).expect("output"),
            output,
            "{message}: the output was touched"
        );
    };
    // Edits of the content: the checksum no longer matches, whatever was edited.
    for (from, to) in [
        ("\"bytes\":", "\"bytes\":1"),
        ("\"rows_consumed\":272", "\"rows_consumed\":100"),
        ("\"n_rounds\":272", "\"n_rounds\":271"),
        ("\"sum\":", "\"sum\":1"),
        ("\"values\":[4.", "\"values\":[5."),
    ] {
        assert!(good.contains(from), "{from}");
        refused(
            good.replacen(from, to, 1).as_bytes(),
            "its checksum does not match its content",
        );
    }
    refused(
        &good.as_bytes()[..good.len() / 2],
        "is not a valid checkpoint",
    );
    refused(b"{}", "is not a valid checkpoint");
    refused(
        good.replace("\"version\":2", "\"version\":1").as_bytes(),
        "version 1",
    );
    // Forged checkpoints (edited, then sealed with a valid checksum) meet the checks behind
    // it: the library's, the command's, the output's.
    let content = content_of(&good);
    assert_eq!(reseal(&content), good.as_bytes(), "the checksum is SHA-256");
    let output_bytes = output.len();
    for (from, to, message) in [
        (
            "\"command\":\"kmeans\"".to_string(),
            "\"command\":\"paco\"".to_string(),
            "not of `pacstream kmeans`",
        ),
        (
            "\"n_clusters\":2".to_string(),
            "\"n_clusters\":3".to_string(),
            "invalid snapshot",
        ),
        (
            "\"seed\":0}".to_string(),
            "\"seed\":5}".to_string(),
            "inconsistent",
        ),
        (
            "\"dim\":2".to_string(),
            "\"dim\":3".to_string(),
            "is not a valid checkpoint",
        ),
        (
            "\"rows_consumed\":272".to_string(),
            "\"rows_consumed\":100".to_string(),
            "inconsistent",
        ),
        (
            format!("\"bytes\":{output_bytes}"),
            format!("\"bytes\":{}", output_bytes - 3),
            "is not the output the checkpoint recorded",
        ),
        (
            "\"records\":272".to_string(),
            "\"records\":271".to_string(),
            "inconsistent",
        ),
        (
            "\"n_clusters\":2".to_string(),
            "\"n_clusters\":1000000000".to_string(),
            "is not a valid checkpoint",
        ),
    ] {
        assert!(content.contains(&from), "{from}");
        refused(&reseal(&content.replacen(&from, &to, 1)), message);
    }
    let outcome = run_line(
        dir,
        "kmeans --k 2 --online @faithful.csv --resume none.json",
    );
    assert_eq!(outcome.code, 2);
    assert!(outcome.stderr.contains("cannot open 'none.json'"));
}

/// Random single-bit flips of the checkpoint of every streaming command are refused (exit
/// 2, the output untouched, no checkpoint written), or change nothing: the resumed run ends
/// with the uninterrupted run's output.
#[test]
fn flipped_bits_are_refused_or_harmless() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    write(dir, "points.csv", blobs_csv(300, 2, 3, false));
    write(dir, "advice.csv", experts_csv(300, 2));
    let commands = [
        "kmeans --k 3 --online points.csv",
        "paco --iterations 10 --warmup 20 points.csv",
        "curve --window 100 points.csv",
        "experts --rule hedge --outcome y advice.csv",
    ];
    let mut rng = TestRng::new(17);
    for command in commands {
        let with = |extra: &str| words(&format!("{command} {extra} -q"));
        let outcome = run(dir, &with("-o reference.jsonl"));
        assert_eq!(outcome.code, 0, "{outcome:?}");
        let reference = std::fs::read(dir.join("reference.jsonl")).expect("reference");
        // A run stopped half-way: its checkpoint and output.
        let half: String = {
            let input = if command.contains("advice.csv") {
                "advice.csv"
            } else {
                "points.csv"
            };
            let text = std::fs::read_to_string(dir.join(input)).expect("input");
            text.lines().take(151).map(|l| format!("{l}\n")).collect()
        };
        write(dir, "half.csv", &half);
        let half_args: Vec<String> = with("-o out.jsonl --checkpoint ck.json")
            .into_iter()
            .map(|a| {
                if a.ends_with(".csv") {
                    "half.csv".to_string()
                } else {
                    a
                }
            })
            .collect();
        assert_eq!(run(dir, &half_args).code, 0);
        let checkpoint = std::fs::read(dir.join("ck.json")).expect("checkpoint");
        let output = std::fs::read(dir.join("out.jsonl")).expect("output");
        let (mut refused, mut harmless) = (0, 0);
        for _ in 0..40 {
            let mut flipped = checkpoint.clone();
            let position = rng.below(flipped.len() as u64) as usize;
            flipped[position] ^= 1 << rng.below(8);
            write(dir, "flipped.json", &flipped);
            write(dir, "out.jsonl", &output);
            let _ = std::fs::remove_file(dir.join("next.json"));
            let outcome = run(
                dir,
                &with("-o out.jsonl --resume flipped.json --checkpoint next.json"),
            );
            if outcome.code == 2 {
                refused += 1;
                assert_eq!(
                    std::fs::read(dir.join("out.jsonl")).expect("output"),
                    output,
                    "{command:?}: a refused resume touched the output"
                );
                assert!(!dir.join("next.json").exists());
            } else {
                assert_eq!(outcome.code, 0, "{outcome:?}");
                harmless += 1;
                assert_eq!(
                    std::fs::read(dir.join("out.jsonl")).expect("output"),
                    reference,
                    "{command:?}: a flip at byte {position} changed the results"
                );
            }
        }
        assert!(
            refused > 30,
            "{command:?}: {refused} refused, {harmless} harmless"
        );
    }
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
    refused(
        &outcome,
        "input.csv: line 1501, column 2 (\"x2\"): \"NaN\" is not a finite number",
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
    let outcome = run_line(dir, "kmeans --k 4 --online input.csv -o reference.csv -q");
    assert_eq!(outcome.code, 0);
    assert_eq!(
        std::fs::read(dir.join("rounds.csv")).expect("output"),
        std::fs::read(dir.join("reference.csv")).expect("reference")
    );
}
