//! `pacstream experts` on real and made-up data: the shipped DAX example, sleeping experts,
//! bad input, and resuming from a checkpoint.

mod common;

use common::{data, run, write};
use serde_json::Value;

#[path = "../examples/eustock_experts.rs"]
#[allow(dead_code)]
mod eustock_experts;

fn summary(dir: &std::path::Path, name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(name)).expect("a summary"))
        .expect("valid JSON")
}

/// The shipped example files are exactly what the generator writes from eustock.csv.
#[test]
fn shipped_example_files_are_regenerated_exactly() {
    let text = std::fs::read_to_string(data("eustock.csv")).expect("eustock.csv");
    let (forecasts, updown) = eustock_experts::build(&text).expect("the generator runs");
    assert_eq!(
        forecasts,
        std::fs::read_to_string(data("eustock-forecasts.csv")).expect("shipped")
    );
    assert_eq!(
        updown,
        std::fs::read_to_string(data("eustock-updown.csv")).expect("shipped")
    );
}

/// Every rule on the DAX examples: the regret stays within the rule's bound, and the
/// outputs are well formed.
#[test]
fn every_rule_on_the_dax_examples() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let forecasts = data("eustock-forecasts.csv");
    let updown = data("eustock-updown.csv");
    let forecasts = forecasts.to_str().expect("a UTF-8 path");
    let updown = updown.to_str().expect("a UTF-8 path");
    // The largest error of a forecaster on these data is 615.59 index points.
    let cases: Vec<Vec<&str>> = vec![
        vec!["--rule", "wm", "--beta", "0.7", "--outcome", "up", updown],
        vec!["--rule", "rwm", "--doubling", "--outcome", "up", updown],
        vec![
            "--rule",
            "rwm",
            "--horizon",
            "1839",
            "--outcome",
            "up",
            updown,
        ],
        vec!["--rule", "ewa", "--adahedge", "--outcome", "DAX", forecasts],
        vec![
            "--rule",
            "ewa",
            "--anytime",
            "--loss",
            "absolute",
            "--loss-bound",
            "650",
            "--outcome",
            "DAX",
            forecasts,
        ],
        vec![
            "--rule",
            "hedge",
            "--doubling",
            "--loss",
            "square",
            "--loss-bound",
            "400000",
            "--outcome",
            "DAX",
            forecasts,
        ],
        vec![
            "--rule",
            "fpl",
            "--horizon",
            "1839",
            "--loss",
            "absolute",
            "--loss-bound",
            "650",
            "--outcome",
            "DAX",
            forecasts,
        ],
    ];
    for case in cases {
        let mut args = vec!["experts"];
        args.extend(&case);
        args.extend([
            "-q",
            "--summary",
            "s.json",
            "-o",
            "r.csv",
            "--plot",
            "f.svg",
        ]);
        let outcome = run(dir.path(), &args);
        assert_eq!(outcome.code, 0, "{case:?}: {outcome:?}");
        let summary = summary(dir.path(), "s.json");
        assert_eq!(summary["rounds"], 1839, "{case:?}");
        assert_eq!(summary["out_of_range_rounds"], 0, "{case:?}");
        let regret = summary["regret"].as_f64().expect("regret");
        let bound = summary["regret_bound"].as_f64().expect("a bound");
        assert!(regret <= bound, "{case:?}: regret {regret} > bound {bound}");
        let records = std::fs::read_to_string(dir.path().join("r.csv")).expect("records");
        assert_eq!(
            records.lines().count(),
            1840,
            "{case:?}: header and one row per round"
        );
        let svg = std::fs::read_to_string(dir.path().join("f.svg")).expect("figure");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    }
}

/// Empty cells and `<expert>_awake` columns put experts to sleep; Hedge compares the learner
/// with each expert on its awake rounds, and weighted majority refuses sleeping experts.
#[test]
fn sleeping_experts() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut text = String::from("y,good,bad,good_awake\n");
    for t in 0..200 {
        let y = (t % 2) as f64;
        // "good" sleeps every third round (its mask says so); "bad" has no advice in other
        // rounds (an empty cell); they never both sleep.
        let awake = u8::from(t % 3 != 0);
        let bad = if t % 3 == 1 && t % 2 == 0 {
            String::new()
        } else {
            format!("{}", 1.0 - y)
        };
        text.push_str(&format!("{y},{y},{bad},{awake}\n"));
    }
    write(dir.path(), "sleep.csv", &text);
    let outcome = run(
        dir.path(),
        &[
            "experts",
            "--rule",
            "hedge",
            "--horizon",
            "200",
            "--loss",
            "absolute",
            "--loss-bound",
            "1",
            "--outcome",
            "y",
            "sleep.csv",
            "-q",
            "--summary",
            "s.json",
            "--weights",
            "-o",
            "r.jsonl",
        ],
    );
    assert_eq!(outcome.code, 0, "{outcome:?}");
    let summary = summary(dir.path(), "s.json");
    let experts = summary["experts"].as_array().expect("experts");
    assert_eq!(experts.len(), 2, "the mask column is not an expert");
    // The good expert is charged only on its awake rounds (2 out of 3).
    assert_eq!(experts[0]["name"], "good");
    assert_eq!(experts[0]["cumulative_loss"], 0.0);
    // While it sleeps the good expert keeps its weight relative to the learner; awake, it
    // quickly takes all of it.
    let records = std::fs::read_to_string(dir.path().join("r.jsonl")).expect("records");
    let last: Value = serde_json::from_str(records.lines().last().expect("a round")).expect("JSON");
    assert!(
        last["weight_good"].as_f64().expect("a weight") > 0.99,
        "{last}"
    );
    // Its regret is counted on its awake rounds only: the learner paid on rounds when only
    // the bad expert was awake, and those do not count against the good one.
    let regret_good = experts[0]["regret_against"].as_f64().expect("regret");
    let learner = summary["cumulative_loss"].as_f64().expect("loss");
    assert!(regret_good < learner, "{regret_good} vs {learner}");
    let regret = summary["regret"].as_f64().expect("regret");
    assert!(regret <= summary["regret_bound"].as_f64().expect("bound"));

    let outcome = run(
        dir.path(),
        &[
            "experts",
            "--rule",
            "wm",
            "--outcome",
            "y",
            "sleep.csv",
            "-q",
        ],
    );
    assert_eq!(outcome.code, 2);
    assert!(
        outcome.stderr.contains("sleep.csv: line"),
        "{}",
        outcome.stderr
    );
}

#[test]
fn bad_settings_and_input_exit_2_with_a_reason() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    write(dir.path(), "a.csv", "y,e1,e2\n1,1,0\n0,1,0\n");
    write(dir.path(), "missing.csv", "y,e1,e2\n1,1,0\n,1,0\n");
    let cases: &[(&[&str], &str)] = &[
        (&["--rule", "ewa", "a.csv"], "--outcome"),
        (&["--rule", "ewa", "--outcome", "nope", "a.csv"], "nope"),
        (
            &[
                "--rule",
                "ewa",
                "--horizon",
                "10",
                "--outcome",
                "y",
                "a.csv",
            ],
            "--loss-bound",
        ),
        (
            &[
                "--rule",
                "fpl",
                "--outcome",
                "y",
                "--loss-bound",
                "1",
                "a.csv",
            ],
            "--eta",
        ),
        (
            &[
                "--rule",
                "wm",
                "--loss",
                "square",
                "--outcome",
                "y",
                "a.csv",
            ],
            "zero-one",
        ),
        (
            &[
                "--rule",
                "hedge",
                "--beta",
                "0.5",
                "--outcome",
                "y",
                "a.csv",
            ],
            "--beta",
        ),
        (
            &["--rule", "wm", "--beta", "1.5", "--outcome", "y", "a.csv"],
            "beta",
        ),
        (
            &[
                "--rule",
                "ewa",
                "--loss",
                "pinball:2",
                "--outcome",
                "y",
                "a.csv",
            ],
            "pinball",
        ),
        (
            &["--rule", "ewa", "--outcome", "y", "missing.csv"],
            "outcome is missing",
        ),
        (
            &[
                "--rule",
                "ewa",
                "--anytime",
                "--doubling",
                "--outcome",
                "y",
                "a.csv",
            ],
            "cannot be used",
        ),
        (
            &[
                "--rule",
                "ewa",
                "--columns",
                "1,2",
                "--outcome",
                "y",
                "a.csv",
            ],
            "--experts",
        ),
    ];
    for (case, reason) in cases {
        let mut args = vec!["experts"];
        args.extend_from_slice(case);
        let outcome = run(dir.path(), &args);
        assert_eq!(outcome.code, 2, "{case:?}: {outcome:?}");
        assert!(
            outcome.stderr.contains(reason),
            "{case:?}: expected {reason:?} in {}",
            outcome.stderr
        );
    }
}

fn as_str(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// A checkpointed run stopped by a bad row, fixed and resumed, writes exactly what an
/// uninterrupted run writes (randomised rules included: the generators are in the
/// checkpoint).
#[test]
fn resumed_runs_equal_uninterrupted_runs() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let clean = std::fs::read_to_string(data("eustock-updown.csv")).expect("data");
    let lines: Vec<&str> = clean.lines().collect();
    let mut broken = lines.clone();
    broken[900] = "1,0,1,1,oops,1,0,1,1";
    for rule in [
        &["--rule", "rwm", "--doubling"][..],
        &["--rule", "hedge", "--sample"][..],
    ] {
        let base = |input: &str, prefix: &str| -> Vec<String> {
            let mut args: Vec<String> = ["experts"].iter().map(|s| s.to_string()).collect();
            args.extend(rule.iter().map(|s| s.to_string()));
            for s in [
                "--outcome",
                "up",
                "--weights",
                "-q",
                "--seed",
                "5",
                "--plot",
            ] {
                args.push(s.to_string());
            }
            args.push(format!("{prefix}f.svg"));
            args.push("-o".into());
            args.push(format!("{prefix}r.csv"));
            args.push("--summary".into());
            args.push(format!("{prefix}s.json"));
            args.push(input.to_string());
            args
        };
        // The reference reads the same file name: the figure's title names the input.
        write(dir.path(), "input.csv", clean.clone());
        let reference = base("input.csv", "ref-");
        assert_eq!(run(dir.path(), &as_str(&reference)).code, 0);

        write(dir.path(), "input.csv", broken.join("\n") + "\n");
        let mut first = base("input.csv", "");
        first.extend(["--checkpoint", "ck.json", "--checkpoint-every", "50"].map(String::from));
        let outcome = run(dir.path(), &as_str(&first));
        assert_eq!(outcome.code, 2, "{outcome:?}");
        assert!(outcome.stderr.contains("oops"));
        write(dir.path(), "input.csv", clean.clone());
        let mut resumed = base("input.csv", "");
        resumed.extend(
            [
                "--checkpoint",
                "ck.json",
                "--checkpoint-every",
                "50",
                "--resume",
                "ck.json",
            ]
            .map(String::from),
        );
        let outcome = run(dir.path(), &as_str(&resumed));
        assert_eq!(outcome.code, 0, "{outcome:?}");
        for name in ["r.csv", "f.svg"] {
            let resumed = std::fs::read(dir.path().join(name)).expect("output");
            let reference =
                std::fs::read(dir.path().join(format!("ref-{name}"))).expect("reference");
            assert!(resumed == reference, "{rule:?}: {name} differs");
        }
        let (resumed, reference) = (
            summary(dir.path(), "s.json"),
            summary(dir.path(), "ref-s.json"),
        );
        assert_eq!(resumed["regret"], reference["regret"]);
        assert_eq!(resumed["experts"], reference["experts"]);
        std::fs::remove_file(dir.path().join("ck.json")).expect("removed");
    }
}
