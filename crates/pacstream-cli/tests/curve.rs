//! `pacstream curve` and `pacstream project` on the seismic data: the curve, the files
//! written, projections of new points, and a run stopped by a bad row then resumed.

mod common;

use std::path::Path;

use common::{data, run, write};
use serde_json::Value;

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("the file exists")).expect("valid JSON")
}

#[test]
fn curve_on_quakes_writes_rounds_summary_and_figure() {
    let dir = tempfile::tempdir().unwrap();
    let quakes = data("quakes.csv");
    let outcome = run(
        dir.path(),
        &[
            "curve",
            "--columns",
            "long,lat",
            quakes.to_str().unwrap(),
            "--output",
            "rounds.csv",
            "--summary",
            "curve.json",
            "--plot",
            "quakes.svg",
        ],
    );
    assert_eq!(outcome.code, 0, "{outcome:?}");
    assert!(
        outcome.stdout.contains("mean squared distance"),
        "{}",
        outcome.stdout
    );
    assert!(outcome.stdout.contains("regret (lower est.)"));

    let summary = read_json(&dir.path().join("curve.json"));
    assert_eq!(summary["command"], "curve");
    assert_eq!(summary["input"]["rows"], 1000);
    assert_eq!(
        summary["input"]["columns"],
        serde_json::json!(["long", "lat"])
    );
    let vertices = summary["vertices"].as_array().unwrap();
    assert_eq!(
        vertices.len(),
        summary["segments"].as_u64().unwrap() as usize + 1
    );
    let msd = summary["totals"]["mean_squared_distance"].as_f64().unwrap();
    assert!(msd <= 1.5 * 4.07, "MSD {msd} (princurve 4.07)");
    // Every stored row has its projection index, within the curve's length.
    let length = summary["length"].as_f64().unwrap();
    let projections = summary["projections"].as_array().unwrap();
    assert_eq!(projections.len(), 1000);
    assert!(projections.iter().all(|p| {
        let s = p["arc_length"].as_f64().unwrap();
        (0.0..=length * (1.0 + 1e-12)).contains(&s)
    }));
    // The comparator: a local optimum started from the final curve, so never worse.
    let comparator = &summary["comparator"];
    let cumulative = summary["totals"]["cumulative_loss"].as_f64().unwrap();
    let regret = comparator["regret"].as_f64().unwrap();
    assert!((cumulative - comparator["loss"].as_f64().unwrap() - regret).abs() < 1e-6);
    assert!(summary["learn_seconds"].as_f64().unwrap() > 0.0);

    let rounds = std::fs::read_to_string(dir.path().join("rounds.csv")).unwrap();
    let lines: Vec<&str> = rounds.lines().collect();
    assert_eq!(
        lines[0],
        "t,loss,cumulative_loss,segments,phase,candidates,changed"
    );
    assert_eq!(lines.len(), 1001);
    assert!(lines[1].starts_with("1,,0.0,,warm-up,0,"), "{}", lines[1]);
    assert!(
        lines[21].contains(",1,"),
        "round 21 pays with one segment: {}",
        lines[21]
    );

    let svg = std::fs::read_to_string(dir.path().join("quakes.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("cumulative regret (lower estimate)"));
    assert!(svg.contains("number of segments K"));
    assert!(svg.matches("<circle").count() >= 1000);
}

#[test]
fn project_puts_new_points_on_the_fitted_curve() {
    let dir = tempfile::tempdir().unwrap();
    let quakes = data("quakes.csv");
    let fit = run(
        dir.path(),
        &[
            "curve",
            "--columns",
            "long,lat",
            quakes.to_str().unwrap(),
            "--summary",
            "curve.json",
            "-q",
        ],
    );
    assert_eq!(fit.code, 0, "{fit:?}");
    write(
        dir.path(),
        "new.csv",
        "lat,long\n-20.0,182.0\n-30.0,181.0\n",
    );
    let outcome = run(
        dir.path(),
        &[
            "project",
            "--curve",
            "curve.json",
            "--columns",
            "long,lat",
            "new.csv",
            "-o",
            "projected.csv",
            "--summary",
            "projected.json",
        ],
    );
    assert_eq!(outcome.code, 0, "{outcome:?}");
    let text = std::fs::read_to_string(dir.path().join("projected.csv")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "row,arc_length,squared_distance,part,index,x1,x2");
    assert_eq!(lines.len(), 3);
    // The nearest point's coordinates and the reported squared distance agree.
    for (line, point) in lines[1..].iter().zip([[182.0, -20.0], [181.0, -30.0]]) {
        let fields: Vec<&str> = line.split(',').collect();
        let squared: f64 = fields[2].parse().unwrap();
        let x: f64 = fields[5].parse().unwrap();
        let y: f64 = fields[6].parse().unwrap();
        let direct = (x - point[0]).powi(2) + (y - point[1]).powi(2);
        assert!((direct - squared).abs() <= 1e-9 * (1.0 + direct), "{line}");
        assert!(fields[3] == "segment" || fields[3] == "vertex");
    }
    let summary = read_json(&dir.path().join("projected.json"));
    assert_eq!(summary["input"]["rows"], 2);

    // The wrong number of columns is refused with a hint.
    let wrong = run(dir.path(), &["project", "--curve", "curve.json", "new.csv"]);
    assert_eq!(wrong.code, 0, "both columns are numeric: {wrong:?}");
    write(dir.path(), "three.csv", "a,b,c\n1,2,3\n");
    let wrong = run(
        dir.path(),
        &["project", "--curve", "curve.json", "three.csv"],
    );
    assert_eq!(wrong.code, 2, "{wrong:?}");
    assert!(wrong.stderr.contains("--columns"), "{}", wrong.stderr);
    let missing = run(
        dir.path(),
        &["project", "--curve", "nothing.json", "new.csv"],
    );
    assert_eq!(missing.code, 2, "{missing:?}");
    let plot = run(
        dir.path(),
        &[
            "project",
            "--curve",
            "curve.json",
            "new.csv",
            "--plot",
            "p.svg",
        ],
    );
    assert_eq!(plot.code, 2, "{plot:?}");
    assert!(plot.stderr.contains("--plot"), "{}", plot.stderr);
    // A curve file that is not a polygonal line: no panic, a usage error.
    write(dir.path(), "equal.json", r#"{"vertices":[[1,2],[1,2]]}"#);
    let equal = run(dir.path(), &["project", "--curve", "equal.json", "new.csv"]);
    assert_eq!(equal.code, 2, "{equal:?}");
}

/// A bad row stops the run after saving what was learned; the fixed input resumed from the
/// checkpoint gives the records of an uninterrupted run, byte for byte.
#[test]
fn a_run_stopped_by_a_bad_row_resumes_to_the_uninterrupted_result() {
    let dir = tempfile::tempdir().unwrap();
    let quakes = std::fs::read_to_string(data("quakes.csv")).unwrap();
    let lines: Vec<&str> = quakes.lines().collect();
    write(dir.path(), "good.csv", &quakes);
    let mut broken: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    broken[601] = "-20.1,oops,100,4.5,20".to_string();
    write(dir.path(), "broken.csv", broken.join("\n") + "\n");
    let common = ["--columns", "long,lat", "--feedback", "bandit", "-q"];
    let mut whole = vec!["curve", "good.csv", "-o", "whole.jsonl"];
    whole.extend(common);
    assert_eq!(run(dir.path(), &whole).code, 0);

    let mut first = vec![
        "curve",
        "broken.csv",
        "-o",
        "resumed.jsonl",
        "--checkpoint",
        "ck.json",
        "--checkpoint-every",
        "250",
    ];
    first.extend(common);
    let stopped = run(dir.path(), &first);
    assert_eq!(stopped.code, 2, "{stopped:?}");
    assert!(stopped.stderr.contains("line 602"), "{}", stopped.stderr);
    // The fixed file: same rows, the bad one repaired.
    std::fs::copy(dir.path().join("good.csv"), dir.path().join("broken.csv")).unwrap();
    let mut second = first.clone();
    second.extend(["--resume", "ck.json"]);
    let resumed = run(dir.path(), &second);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let a = std::fs::read(dir.path().join("whole.jsonl")).unwrap();
    let b = std::fs::read(dir.path().join("resumed.jsonl")).unwrap();
    assert!(
        a == b,
        "the resumed records differ from the uninterrupted run's"
    );

    // Other settings cannot resume this checkpoint.
    let mut other = second.clone();
    other.extend(["--penalty", "0.5"]);
    let refused = run(dir.path(), &other);
    assert_eq!(refused.code, 2, "{refused:?}");
}

#[test]
fn bad_settings_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let quakes = data("quakes.csv");
    for (flag, value) in [
        ("--window", "1"),
        ("--explore", "0"),
        ("--max-segments", "0"),
        ("--radius", "-1"),
        ("--radius", "1e300"),
        ("--delta", "1e-300"),
        ("--radius", "1e-300"),
    ] {
        let outcome = run(
            dir.path(),
            &["curve", quakes.to_str().unwrap(), flag, value],
        );
        assert_eq!(outcome.code, 2, "{flag} {value}: {outcome:?}");
        assert!(outcome.stderr.contains(flag), "{flag}: {}", outcome.stderr);
    }
    // A row far beyond the ball fixed by the warm-up: refused, named, no panic.
    let quakes_text = std::fs::read_to_string(&quakes).unwrap();
    let mut far: Vec<&str> = quakes_text.lines().collect();
    far.insert(101, "-20.0,1e12,100,4.5,20");
    write(dir.path(), "far.csv", far.join("\n") + "\n");
    let outcome = run(
        dir.path(),
        &[
            "curve",
            "far.csv",
            "--columns",
            "long,lat",
            "--window",
            "500",
        ],
    );
    assert_eq!(outcome.code, 2, "{outcome:?}");
    assert!(
        outcome.stderr.contains("far.csv: line 102: a point lies"),
        "{}",
        outcome.stderr
    );
    // It is a bad row like any other: skipped and counted on request.
    let outcome = run(
        dir.path(),
        &[
            "curve",
            "far.csv",
            "--columns",
            "long,lat",
            "--window",
            "500",
            "--on-bad-row",
            "skip",
            "--summary",
            "-",
        ],
    );
    assert_eq!(outcome.code, 0, "{outcome:?}");
    assert!(
        outcome.stdout.contains("\"bad_rows_skipped\": 1"),
        "{}",
        outcome.stdout
    );
    write(dir.path(), "few.csv", "x,y\n1,2\n3,4\n");
    let outcome = run(dir.path(), &["curve", "few.csv"]);
    assert_eq!(outcome.code, 2, "{outcome:?}");
    assert!(outcome.stderr.contains("--warmup"), "{}", outcome.stderr);
}
