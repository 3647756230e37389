//! A hostile user's settings and inputs: every reproducer of the "nothing lost, nothing
//! hung" review, as a test that stays. Each run exits 0 with correct output, or 2 with a
//! message naming the fault (the option, or the file, line and column); none panics, aborts
//! on an allocation, hangs, or writes NaN (or a null standing for one).

mod common;

use std::path::Path;
use std::time::Duration;

use common::{Outcome, fit_quakes_curve, make_fifo, refused, run_ok, run_within, words, write};
use serde_json::Value;

/// A run that must end quickly: a refusal is immediate, and a hang fails the test.
const PROMPT: Duration = Duration::from_secs(20);

fn run_prompt<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(dir: &Path, args: &[S]) -> Outcome {
    run_within(dir, args, None, PROMPT)
}

// ---------------------------------------------------------------------------------------
// Settings: every count has an upper bound, checked before anything is allocated.

#[test]
fn huge_counts_are_refused_before_anything_is_allocated() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // Each line: the settings, then what the refusal says.
    let cases = "\
paco --max-k 18446744073709551615 => invalid --max-k: must be at most 1000, got 18446744073709551615
paco --max-k 1000000000 => invalid --max-k: must be at most 1000
kmeans --k 2 --n-init 1000000000 => invalid --n-init: must be at most 1000
paco --iterations 18446744073709551615 => invalid --iterations: must be at most 1000000
curve --local-vertices 100000 => invalid --local-vertices: must be at most 1024
kmeans --k 10001 => invalid --k: must be at most 10000
kmeans --k 2 --max-iter 1000001 => invalid --max-iter: must be at most 1000000
kmeans --k 2 --online --init-size 10000001 => invalid --init-size: must be at most 10000000
paco --warmup 1000001 => invalid --warmup: must be at most 1000000
paco --window 100000001 => invalid --window: must be at most 100000000
curve --max-segments 1001 => invalid --max-segments: must be at most 1000
curve --max-candidates 65537 => invalid --max-candidates: must be at most 65536
curve --warmup 1000001 => invalid --warmup: must be at most 1000000
curve --window 100000001 => invalid --window: must be at most 100000000
kmeans --k 2 --online --batch-size 1000001 => --batch-size
paco --oracle-restarts 1001 => --oracle-restarts
kmeans --k 2 --plot-points 1000001 => --plot-points
kmeans --k 2 --online --checkpoint c.json --checkpoint-every 1000000000001 => --checkpoint-every";
    for case in cases.lines() {
        let (settings, message) = case.split_once(" => ").expect("SETTINGS => MESSAGE");
        let args = words(&format!("{settings} @faithful.csv"));
        refused(&run_prompt(dir.path(), &args), message);
    }
    // At the bound itself, the settings are accepted.
    let outcome = run_prompt(
        dir.path(),
        &words("kmeans --k 2 --n-init 1000 @faithful.csv -q"),
    );
    assert_eq!(outcome.code, 0, "{outcome:?}");
}

#[test]
fn experts_rates_are_bounded_and_named() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // The rate given as η is named as η, even where the rule turns it into β = e^{−η}.
    let outcome = run_prompt(
        dir.path(),
        &words("experts --rule rwm --eta=-1 --outcome up @eustock-updown.csv"),
    );
    refused(&outcome, "invalid --eta: must be finite and > 0, got -1");
    assert!(!outcome.stderr.contains("--beta"), "{}", outcome.stderr);
    refused(
        &run_prompt(
            dir.path(),
            &words("experts --rule wm --eta 1000 --outcome up @eustock-updown.csv"),
        ),
        "invalid --eta",
    );
    // Before any row is read, not as a complaint about a row or the state.
    refused(
        &run_prompt(
            dir.path(),
            &words(
                "experts --rule fpl --eta 1e308 --loss-bound 1 --outcome up @eustock-updown.csv",
            ),
        ),
        "invalid --eta: must be at most 1e50, got 1e308",
    );
    refused(
        &run_prompt(dir.path(), &words("paco --eta 1e308 @faithful.csv")),
        "invalid --eta: must be in [0, 100], got 1e308",
    );
    refused(
        &run_prompt(
            dir.path(),
            &words(
                "experts --rule hedge --horizon 9007199254740993 --loss-bound 1 --outcome up @eustock-updown.csv",
            ),
        ),
        "invalid --horizon: must be at most 9007199254740992",
    );
    refused(
        &run_prompt(
            dir.path(),
            &words(
                "experts --rule hedge --anytime --loss-bound 1e-300 --outcome up @eustock-updown.csv",
            ),
        ),
        "invalid --loss-bound",
    );
}

// ---------------------------------------------------------------------------------------
// Hangs: unbounded reads and costs beyond linear in the number of columns.

/// A CSV of `rows` rows under a header of `columns` columns (`y`, then `e1`, `e2`, ...).
fn wide_csv(columns: usize, rows: usize) -> String {
    let mut text = String::from("y");
    for i in 1..columns {
        text.push_str(&format!(",e{i}"));
    }
    text.push('\n');
    for r in 0..rows {
        let row: Vec<String> = (0..columns).map(|i| format!("{}", (r + i) % 2)).collect();
        text.push_str(&row.join(","));
        text.push('\n');
    }
    text
}

#[test]
fn a_wide_header_costs_linear_time() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // 100,000 experts on 3 rows: quadratic costs in the number of columns took minutes.
    write(dir.path(), "wide.csv", wide_csv(100_001, 3));
    for rule in [
        &["hedge"][..],
        &["ewa"],
        &["fpl", "--eta", "1", "--loss-bound", "1"],
    ] {
        let mut args = vec!["experts", "--rule"];
        args.extend_from_slice(rule);
        args.extend(["--outcome", "y", "wide.csv", "--summary", "s.json", "-q"]);
        let outcome = run_prompt(dir.path(), &args);
        assert_eq!(outcome.code, 0, "{outcome:?}");
    }
    // A million experts (and their outcome) are read; the point learners refuse that many
    // dimensions at once, naming what to change.
    write(dir.path(), "million.csv", wide_csv(1_000_001, 3));
    let outcome = run_prompt(
        dir.path(),
        &words("experts --rule hedge --outcome y million.csv -q"),
    );
    assert_eq!(outcome.code, 0, "{outcome:?}");
    refused(
        &run_prompt(dir.path(), &["paco", "million.csv"]),
        "invalid --max-k: p × d must be at most 10000000",
    );
    refused(
        &run_prompt(dir.path(), &["curve", "million.csv"]),
        "the principal curve learner takes at most 100",
    );
    write(dir.path(), "too-wide.csv", wide_csv(1_048_577, 1));
    refused(
        &run_prompt(dir.path(), &words("kmeans --k 1 too-wide.csv")),
        "more than 1048576",
    );
}

/// Feeds `head`, then `chunk` again and again, into the FIFO at `path` until its reader
/// goes away.
#[cfg(unix)]
fn feed_forever(path: &Path, head: &[u8], chunk: Vec<u8>) -> std::thread::JoinHandle<()> {
    let path = path.to_path_buf();
    let head = head.to_vec();
    std::thread::spawn(move || {
        use std::io::Write;
        if let Ok(mut fifo) = std::fs::OpenOptions::new().write(true).open(path)
            && fifo.write_all(&head).is_ok()
        {
            while fifo.write_all(&chunk).is_ok() {}
        }
    })
}

#[cfg(unix)]
#[test]
#[allow(clippy::print_stderr, reason = "a skipped check says so")]
fn endless_inputs_are_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    // A zero device as the checkpoint (made here, not the system's /dev/zero).
    let zero = dir.join("zero");
    let made = std::process::Command::new("mknod")
        .arg(&zero)
        .args(["c", "1", "5"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if made {
        refused(
            &run_prompt(
                dir,
                &words("kmeans --k 2 --online @faithful.csv --resume zero"),
            ),
            "'zero' is not a checkpoint: it is not a regular file",
        );
    } else {
        eprintln!("skipping the zero device: cannot create a device node here (mknod needs root)");
    }
    // A FIFO that never ends, as the checkpoint.
    let fifo = dir.join("endless.json");
    make_fifo(&fifo);
    let feeder = feed_forever(&fifo, b"{\"a\":\"", b"0000000000000000".repeat(1000));
    refused(
        &run_prompt(
            dir,
            &words("kmeans --k 2 --online @faithful.csv --resume endless.json"),
        ),
        "is not a checkpoint: it is not a regular file",
    );
    drop(std::fs::File::open(&fifo)); // release the feeder if it is still waiting
    feeder.join().expect("the feeder ends");
    // FIFOs that never end, as the curve of `project`: an endless list of vertices, and an
    // endless field that `project` skips.
    let feeder = feed_forever(&fifo, b"{\"vertices\":[", b"[1,2],".repeat(1000));
    refused(
        &run_prompt(dir, &words("project --curve endless.json @faithful.csv")),
        "an array of more than 1001 items",
    );
    feeder.join().expect("the feeder ends");
    let feeder = feed_forever(&fifo, b"{\"projections\":[", b"0,".repeat(10000));
    let outcome = run_within(
        dir,
        &words("project --curve endless.json @faithful.csv"),
        None,
        Duration::from_secs(60),
    );
    refused(
        &outcome,
        "larger than 1024 MiB, the limit of a curve summary",
    );
    feeder.join().expect("the feeder ends");
    // An input with no line end: refused at 64 MiB.
    let input = dir.join("endless.csv");
    make_fifo(&input);
    let feeder = feed_forever(&input, b"", vec![b'1'; 1 << 20]);
    refused(
        &run_prompt(dir, &words("kmeans --k 2 --online endless.csv")),
        "a line is longer than 64 MiB",
    );
    feeder.join().expect("the feeder ends");
}

// ---------------------------------------------------------------------------------------
// Numbers: no NaN (or null standing for one) in any output.

/// Every number of the experts' per-round records and summary that must be defined is a
/// number (not null).
fn assert_no_undefined(records: &str, summary: &Value) {
    for line in records.lines() {
        let record: Value = serde_json::from_str(line).expect("a JSON record");
        for field in ["loss", "cumulative_loss", "best_expert_loss", "regret"] {
            assert!(record[field].is_number(), "{field} in {line}");
        }
        for (name, value) in record.as_object().expect("an object") {
            if name.starts_with("weight_") {
                assert!(value.is_number(), "{name} in {line}");
            }
        }
    }
    for field in ["cumulative_loss", "best_expert_loss", "regret"] {
        assert!(summary[field].is_number(), "{field}: {summary}");
    }
    for expert in summary["experts"].as_array().expect("experts") {
        for field in ["cumulative_loss", "regret_against", "final_weight"] {
            assert!(expert[field].is_number(), "{field}: {expert}");
        }
    }
}

#[test]
fn huge_advice_is_refused_by_line_and_column_or_skipped() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    write(
        dir,
        "big.csv",
        "y,a,b\n1,1e200,2\n1,2,3\n0,1,1e100\n-1e100,2,3\n1,2,3\n",
    );
    refused(
        &run_prompt(dir, &words("experts --rule ewa --outcome y big.csv")),
        "big.csv: line 2, column 2 (\"a\"): \"1e200\" is too large: values must lie within ±1e100",
    );
    for rule in [
        &["ewa"][..],
        &["ewa", "--gradient"],
        &["hedge"],
        &["fpl", "--eta", "1e-3", "--loss-bound", "1e200"],
        &["ewa", "--eta", "1e50", "--loss-bound", "1"],
    ] {
        let mut args = vec!["experts", "--rule"];
        args.extend_from_slice(rule);
        args.extend([
            "--outcome",
            "y",
            "big.csv",
            "--on-bad-row",
            "skip",
            "--weights",
            "-o",
            "rounds.jsonl",
            "--summary",
            "summary.json",
            "-q",
        ]);
        let outcome = run_prompt(dir, &args);
        assert_eq!(outcome.code, 0, "{rule:?}: {outcome:?}");
        let summary: Value =
            serde_json::from_slice(&std::fs::read(dir.join("summary.json")).expect("summary"))
                .expect("JSON");
        assert_eq!(summary["input"]["bad_rows_skipped"], 1, "{rule:?}");
        let records = std::fs::read_to_string(dir.join("rounds.jsonl")).expect("records");
        assert_eq!(records.lines().count(), 4);
        assert_no_undefined(&records, &summary);
    }
}

#[test]
fn priors_whose_sum_overflows_are_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    write(dir.path(), "a.csv", "y,a,b\n1,1,2\n0,2,3\n");
    for rule in ["hedge", "ewa"] {
        let mut args = vec!["experts", "--rule", rule, "--prior", "1e308,1e308"];
        if rule == "hedge" {
            args.extend(["--loss-bound", "10"]);
        }
        args.extend(["--outcome", "y", "a.csv"]);
        refused(
            &run_prompt(dir.path(), &args),
            "invalid --prior: the prior weights' sum overflows",
        );
    }
    // Large priors whose sum is finite are only ratios.
    let outcome = run_prompt(
        dir.path(),
        &words("experts --rule ewa --prior 1e307,3e307 --outcome y a.csv --summary - -q"),
    );
    assert_eq!(outcome.code, 0, "{outcome:?}");
    let summary: Value = serde_json::from_str(&outcome.stdout).expect("JSON");
    assert!(summary["experts"][0]["final_weight"].is_number());
}

#[test]
fn project_matches_the_columns_of_the_curve_or_refuses() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    let quakes = fit_quakes_curve(dir, "c.json");
    let quakes = quakes.as_str();
    refused(
        &run_prompt(
            dir,
            &words("project --curve c.json --columns lat,long @quakes.csv"),
        ),
        "was fitted on the columns long, lat (in this order), and --columns picks lat, long",
    );
    // Without --columns, the curve's own columns, by name: the same as naming them.
    let by_name = run_prompt(dir, &words("project --curve c.json @quakes.csv"));
    let named = run_prompt(
        dir,
        &words("project --curve c.json --columns long,lat @quakes.csv"),
    );
    assert_eq!(by_name.code, 0, "{by_name:?}");
    assert_eq!(named.code, 0, "{named:?}");
    assert_eq!(by_name.stdout, named.stdout);
    // A file without those columns.
    refused(
        &run_prompt(dir, &words("project --curve c.json @faithful.csv")),
        "was fitted on the columns long, lat, which",
    );
    // A curve fitted on a file without a header: its columns by index.
    let text = std::fs::read_to_string(quakes).expect("quakes");
    let body: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    write(dir, "bare.csv", &body);
    run_ok(dir, "curve --columns 2,1 bare.csv -q --summary bare.json");
    let outcome = run_prompt(dir, &words("project --curve bare.json bare.csv"));
    assert_eq!(outcome.code, 0, "{outcome:?}");
    assert_eq!(outcome.stdout, by_name.stdout);
}

#[test]
fn duplicate_column_names_are_refused_not_resolved_to_the_first() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    write(dir.path(), "dup.csv", "a,a,b\n1,10,5\n2,20,6\n3,30,7\n");
    refused(
        &run_prompt(dir.path(), &words("kmeans --k 1 --columns a,b dup.csv")),
        "the name \"a\" is ambiguous: columns 1 and 2 of 'dup.csv' both have it",
    );
    refused(
        &run_prompt(dir.path(), &words("kmeans --k 1 dup.csv")),
        "columns 1 and 2 of 'dup.csv' are both named \"a\"",
    );
    refused(
        &run_prompt(
            dir.path(),
            &words("experts --rule hedge --outcome a dup.csv"),
        ),
        "ambiguous",
    );
    // By index, one of them is fine.
    let outcome = run_prompt(dir.path(), &words("kmeans --k 1 --columns 2,3 dup.csv -q"));
    assert_eq!(outcome.code, 0, "{outcome:?}");
}

// ---------------------------------------------------------------------------------------
// Messages: rows the learner refuses are bad rows, named and skippable.

#[test]
fn rows_the_learner_refuses_are_named_and_skippable() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    write(
        dir.path(),
        "rounds.csv",
        "y,a,b,b_awake\n1,1,0,1\n,1,0,1\n0,0,1,2\n1,1,1,1\n",
    );
    let base = ["experts", "--rule", "hedge", "--outcome", "y", "rounds.csv"];
    refused(
        &run_prompt(dir.path(), &base),
        "rounds.csv: line 3, column 1 (\"y\"): the outcome is missing",
    );
    let mut skip = base.to_vec();
    skip.extend(["--on-bad-row", "skip"]);
    let outcome = run_prompt(dir.path(), &skip);
    assert_eq!(outcome.code, 0, "{outcome:?}");
    assert!(
        outcome.stderr.contains(
            "rounds.csv: line 4, column 4 (\"b_awake\"): an <expert>_awake column holds 2"
        ),
        "{}",
        outcome.stderr
    );
    assert!(
        outcome.stderr.contains("skipped 2 bad rows"),
        "{}",
        outcome.stderr
    );
    // With checkpoints, a refused row stops the run after saving what came before it, and
    // the run continues from there once the row is fixed.
    let mut checkpointed = base.to_vec();
    checkpointed.extend([
        "--checkpoint",
        "ck.json",
        "--checkpoint-every",
        "1",
        "-o",
        "out.csv",
    ]);
    let outcome = run_prompt(dir.path(), &checkpointed);
    refused(&outcome, "the outcome is missing");
    assert!(
        outcome
            .stderr
            .contains("the 1 rows before the bad row are learned and saved")
    );
    write(
        dir.path(),
        "rounds.csv",
        "y,a,b,b_awake\n1,1,0,1\n0,1,0,1\n0,0,1,1\n1,1,1,1\n",
    );
    let mut resumed = checkpointed.clone();
    resumed.extend(["--resume", "ck.json", "-q"]);
    let outcome = run_prompt(dir.path(), &resumed);
    assert_eq!(outcome.code, 0, "{outcome:?}");
    let outcome = run_prompt(
        dir.path(),
        &words("experts --rule hedge --outcome y rounds.csv -o reference.csv -q"),
    );
    assert_eq!(outcome.code, 0, "{outcome:?}");
    assert_eq!(
        std::fs::read(dir.path().join("out.csv")).expect("output"),
        std::fs::read(dir.path().join("reference.csv")).expect("reference")
    );
}
