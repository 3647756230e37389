//! `pacstream kmeans` on real data: the clusters it finds and the files it writes.

mod common;

use std::path::Path;

use common::{blobs_csv, data_arg, read_json, read_svg, refused, run, run_line, run_ok, write};
use serde_json::Value;

/// Checks the figure at `path`: a whole SVG document drawing at least `at_least_circles`
/// circles.
fn assert_svg(path: &Path, at_least_circles: usize) {
    let svg = read_svg(path);
    let circles = svg.matches("<circle").count();
    assert!(circles >= at_least_circles, "{circles} circles");
}

/// The cluster sizes of a batch summary, smallest first.
fn sorted_cluster_sizes(summary: &Value) -> Vec<u64> {
    let mut sizes: Vec<u64> = summary["cluster_sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    sizes.sort_unstable();
    sizes
}

#[test]
fn batch_kmeans_finds_the_two_eruption_types_of_old_faithful() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run_ok(
        dir.path(),
        "kmeans --k 2 @faithful.csv --output labels.csv --summary summary.json --plot faithful.svg",
    );
    assert!(outcome.stdout.contains("inertia"), "{}", outcome.stdout);
    assert!(outcome.stdout.contains("converged"));

    let summary = read_json(&dir.path().join("summary.json"));
    assert_eq!(summary["mode"], "batch");
    assert_eq!(summary["input"]["rows"], 272);
    assert_eq!(
        summary["input"]["columns"],
        serde_json::json!(["eruptions", "waiting"])
    );
    assert!(summary["fit_seconds"].as_f64().unwrap() >= 0.0);
    assert_eq!(summary["report"]["converged"], true);
    let mut centres: Vec<(f64, f64)> = summary["centres"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c[0].as_f64().unwrap(), c[1].as_f64().unwrap()))
        .collect();
    centres.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Short eruptions with short waits, long eruptions with long waits.
    assert!(
        (centres[0].0 - 2.09).abs() < 0.05 && (centres[0].1 - 54.75).abs() < 0.5,
        "{centres:?}"
    );
    assert!(
        (centres[1].0 - 4.30).abs() < 0.05 && (centres[1].1 - 80.28).abs() < 0.5,
        "{centres:?}"
    );
    let sizes = sorted_cluster_sizes(&summary);
    assert_eq!(sizes, [100, 172]);
    let inertia = summary["report"]["inertia"].as_f64().unwrap();

    // One record per row: row, label, squared distance; their sum is the inertia.
    let labels = std::fs::read_to_string(dir.path().join("labels.csv")).unwrap();
    let mut lines = labels.lines();
    assert_eq!(lines.next(), Some("row,label,squared_distance"));
    let mut total = 0.0;
    for (index, line) in lines.enumerate() {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields[0], (index + 1).to_string());
        assert!(fields[1] == "0" || fields[1] == "1");
        total += fields[2].parse::<f64>().unwrap();
    }
    assert!((total - inertia).abs() < 1e-6 * inertia);
    assert_svg(&dir.path().join("faithful.svg"), 272);
}

#[test]
fn batch_output_as_json_lines_and_summary_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run_ok(
        dir.path(),
        "kmeans --k 3 @xclara.csv -o labels.jsonl --summary -",
    );
    // The report moved to stderr, so stdout is exactly the summary.
    assert!(outcome.stderr.contains("inertia"));
    let summary: Value = serde_json::from_str(&outcome.stdout).unwrap();
    let sizes = sorted_cluster_sizes(&summary);
    assert_eq!(sizes.iter().sum::<u64>(), 3000);
    assert!(
        sizes[0] > 800,
        "three clusters of about a thousand: {sizes:?}"
    );
    let labels = std::fs::read_to_string(dir.path().join("labels.jsonl")).unwrap();
    assert_eq!(labels.lines().count(), 3000);
    for line in labels.lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        assert!(record["label"].as_u64().unwrap() < 3);
        assert!(record["squared_distance"].as_f64().unwrap() >= 0.0);
    }
}

#[test]
fn iris_text_column_is_left_out_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run_ok(dir.path(), "kmeans --k 3 @iris.csv --summary s.json");
    assert!(
        outcome
            .stderr
            .contains("leaving out column 5 (\"Species\") of"),
        "{}",
        outcome.stderr
    );
    assert_eq!(
        read_json(&dir.path().join("s.json"))["input"]["columns"]
            .as_array()
            .unwrap()
            .len(),
        4
    );

    // Columns by name and index; plot axes by name.
    let outcome = run_line(
        dir.path(),
        "kmeans --k 3 @iris.csv --columns Petal.Length,4 --summary s.json --plot iris.svg --axes Petal.Width,Petal.Length -q",
    );
    assert_eq!(
        (
            outcome.code,
            outcome.stdout.as_str(),
            outcome.stderr.as_str()
        ),
        (0, "", "")
    );
    let summary = read_json(&dir.path().join("s.json"));
    assert_eq!(
        summary["input"]["columns"],
        serde_json::json!(["Petal.Length", "Petal.Width"])
    );
    assert_svg(&dir.path().join("iris.svg"), 150);
    let svg = std::fs::read_to_string(dir.path().join("iris.svg")).unwrap();
    assert!(svg.contains("Petal.Width"));
}

#[test]
fn weights_pull_the_centre() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "w.csv", "x,w\n0,1\n10,3\n");
    let outcome = run_ok(
        dir.path(),
        "kmeans --k 1 w.csv --sample-weights w --summary - -q",
    );
    let summary: Value = serde_json::from_str(&outcome.stdout).unwrap();
    assert_eq!(summary["centres"][0][0], 7.5);
    assert_eq!(summary["input"]["weights"], "w");
    assert_eq!(summary["cluster_weights"][0], 4.0);
    // A negative weight is a bad row (named by the option's former spelling, still
    // accepted).
    write(dir.path(), "neg.csv", "x,w\n0,1\n10,-3\n");
    let outcome = run_line(dir.path(), "kmeans --k 1 neg.csv --weights 2");
    refused(&outcome, "line 3, column 2 (\"w\"): \"-3\" is negative");
}

#[test]
fn online_kmeans_writes_one_record_per_round() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run_ok(
        dir.path(),
        "kmeans --k 2 --online @faithful.csv -o rounds.csv --summary s.json --plot online.svg",
    );
    assert!(outcome.stdout.contains("cumulative loss"));
    let rounds = std::fs::read_to_string(dir.path().join("rounds.csv")).unwrap();
    let mut lines = rounds.lines();
    assert_eq!(lines.next(), Some("t,label,loss,cumulative_loss"));
    // Round 1 has no model: its label and loss are undefined (empty).
    assert_eq!(lines.next(), Some("1,,,0.0"));
    let mut sum = 0.0;
    let mut last = 0.0;
    for (index, line) in lines.enumerate() {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields[0], (index + 2).to_string());
        sum += fields[2].parse::<f64>().unwrap();
        last = fields[3].parse::<f64>().unwrap();
    }
    assert!((sum - last).abs() <= 1e-9 * last, "{sum} vs {last}");
    let summary = read_json(&dir.path().join("s.json"));
    assert_eq!(summary["mode"], "online");
    assert_eq!(summary["totals"]["rounds"], 272);
    assert_eq!(summary["totals"]["scored_rounds"], 271);
    assert_eq!(summary["totals"]["cumulative_loss"].as_f64().unwrap(), last);
    assert_eq!(summary["centres"].as_array().unwrap().len(), 2);
    assert_eq!(summary["warming_up"], false);
    assert_svg(&dir.path().join("online.svg"), 272);
}

#[test]
fn online_mini_batches_and_json_lines_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "blobs.csv", blobs_csv(2000, 2, 7, false));
    let outcome = run_ok(
        dir.path(),
        "kmeans --k 4 --online --batch-size 64 --decay 500 blobs.csv -o -",
    );
    // The report goes to stderr when stdout carries the records.
    assert!(outcome.stderr.contains("sequential k-means"));
    let records: Vec<Value> = outcome
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2000);
    assert_eq!(records[0]["loss"], Value::Null);
    assert_eq!(records[1999]["t"], 2000);
    // Four well-separated blobs of radius ~1: late rounds pay little.
    let late: f64 = records[1000..]
        .iter()
        .map(|r| r["loss"].as_f64().unwrap())
        .sum::<f64>()
        / 1000.0;
    assert!(late < 2.0, "mean late loss {late}");
}

#[test]
fn help_and_version_exit_zero() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run(dir.path(), &["kmeans", "--help"]);
    assert_eq!(outcome.code, 0);
    assert!(outcome.stdout.contains("--checkpoint-every"));
    assert!(outcome.stdout.contains("reservoir"));
    // One name per idea: the sample weights are `--sample-weights`; the former spelling is
    // still accepted but not shown, so that `--weights` reads as the experts' weights only.
    assert!(outcome.stdout.contains("--sample-weights <COL>"));
    assert!(!outcome.stdout.contains("--weights"));
    let outcome = run(dir.path(), &["--version"]);
    assert_eq!(outcome.code, 0);
    assert!(outcome.stdout.starts_with("pacstream "));
}

/// `--stopping` reaches the library and the summary names the rule. On quakes at k = 3
/// the centre-shift rule (the default) stops while a centre still drifts, 13 iterations in;
/// the changed-labels rule follows the drift to a lower inertia.
#[test]
fn the_stopping_rule_is_chosen_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let quakes = data_arg("quakes.csv");
    let fit = |rule: &str| {
        let outcome = run_ok(
            dir.path(),
            &format!("kmeans --k 3 --refinement none {rule} {quakes} --summary - -q"),
        );
        serde_json::from_str::<Value>(&outcome.stdout).unwrap()
    };
    let default = fit("");
    let shift = fit("--stopping centre-shift");
    let labels = fit("--stopping changed-labels");
    assert_eq!(default["settings"]["stopping"], "centre-shift");
    assert_eq!(labels["settings"]["stopping"], "changed-labels");
    assert_eq!(default["report"], shift["report"]);
    let iterations = |s: &Value| s["report"]["n_iter"].as_u64().unwrap();
    let inertia = |s: &Value| s["report"]["inertia"].as_f64().unwrap();
    assert!(iterations(&shift) < iterations(&labels), "{shift} {labels}");
    assert!(inertia(&labels) < inertia(&shift));
    let outcome = run_line(
        dir.path(),
        &format!("kmeans --k 3 --online --stopping centre-shift {quakes}"),
    );
    refused(&outcome, "--stopping");
}
