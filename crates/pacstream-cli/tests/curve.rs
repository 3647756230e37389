//! `pacstream curve` and `pacstream project` on the seismic data: the curve, the files
//! written, projections of new points, and a run stopped by a bad row then resumed.

mod common;

use common::{data, read_json, refused, run, run_line, run_ok, write};
use serde_json::Value;

#[test]
fn curve_on_quakes_writes_rounds_summary_and_figure() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run_ok(
        dir.path(),
        "curve --columns long,lat @quakes.csv --output rounds.csv --summary curve.json --plot quakes.svg",
    );
    assert!(
        outcome.stdout.contains("mean squared distance"),
        "{}",
        outcome.stdout
    );
    assert!(
        outcome.stdout.contains("regret, penalised"),
        "{}",
        outcome.stdout
    );
    assert!(outcome.stdout.contains("regret, same K"));
    assert!(outcome.stdout.contains("lower estimate"));

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
    assert!(msd <= 0.8, "MSD {msd}");
    // Every stored row has its projection index, within the curve's length.
    let length = summary["length"].as_f64().unwrap();
    let projections = summary["projections"].as_array().unwrap();
    assert_eq!(projections.len(), 1000);
    assert!(projections.iter().all(|p| {
        let s = p["arc_length"].as_f64().unwrap();
        (0.0..=length * (1.0 + 1e-12)).contains(&s)
    }));
    // The comparators: the penalised objective with the last round's learning rate, and the
    // best curve with the learner's number of segments; each regret is the cumulative loss
    // minus the objective reached.
    let comparators = summary["comparators"].as_array().unwrap();
    assert_eq!(comparators.len(), 2);
    let cumulative = summary["totals"]["cumulative_loss"].as_f64().unwrap();
    let penalised = &comparators[0];
    assert_eq!(penalised["comparator"], "penalised");
    let eta = penalised["learning_rate"].as_f64().unwrap();
    let per_segment = penalised["penalty_per_segment"].as_f64().unwrap();
    let spacing = summary["lattice"]["spacing"].as_f64().unwrap();
    let radius = summary["lattice"]["radius"].as_f64().unwrap();
    // κ = 1, c_1 = d ln(1 + 2√d R/δ).
    let c1 = 2.0 * (2.0 * 2f64.sqrt() * radius / spacing).ln_1p();
    assert!((per_segment - c1 / eta).abs() <= 1e-9 * per_segment);
    let segments = penalised["segments"].as_f64().unwrap();
    let objective = penalised["objective"].as_f64().unwrap();
    let loss = penalised["loss"].as_f64().unwrap();
    assert!((objective - loss - per_segment * segments).abs() <= 1e-9 * objective);
    let regret = penalised["regret"].as_f64().unwrap();
    assert!((cumulative - objective - regret).abs() < 1e-6);
    let same = &comparators[1];
    assert_eq!(same["comparator"], "same-segments");
    assert_eq!(same["max_segments"], summary["segments"]);
    assert!(same["segments"].as_u64().unwrap() <= summary["segments"].as_u64().unwrap());
    assert!(
        (cumulative - same["loss"].as_f64().unwrap() - same["regret"].as_f64().unwrap()).abs()
            < 1e-6
    );
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
    run_ok(
        dir.path(),
        "curve --columns long,lat @quakes.csv --summary curve.json -q",
    );
    write(
        dir.path(),
        "new.csv",
        "lat,long\n-20.0,182.0\n-30.0,181.0\n",
    );
    run_ok(
        dir.path(),
        "project --curve curve.json --columns long,lat new.csv -o projected.csv --summary projected.json",
    );
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
    let wrong = run_line(dir.path(), "project --curve curve.json new.csv");
    assert_eq!(wrong.code, 0, "both columns are numeric: {wrong:?}");
    write(dir.path(), "three.csv", "a,b,c\n1,2,3\n");
    let wrong = run_line(dir.path(), "project --curve curve.json three.csv");
    assert_eq!(wrong.code, 2, "{wrong:?}");
    assert!(wrong.stderr.contains("--columns"), "{}", wrong.stderr);
    let missing = run_line(dir.path(), "project --curve nothing.json new.csv");
    assert_eq!(missing.code, 2, "{missing:?}");
    let plot = run_line(
        dir.path(),
        "project --curve curve.json new.csv --plot p.svg",
    );
    assert_eq!(plot.code, 2, "{plot:?}");
    assert!(plot.stderr.contains("--plot"), "{}", plot.stderr);
    // A curve file that is not a polygonal line: no panic, a usage error.
    write(dir.path(), "equal.json", r#"{"vertices":[[1,2],[1,2]]}"#);
    let equal = run_line(dir.path(), "project --curve equal.json new.csv");
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
    refused(&run(dir.path(), &first), "line 602");
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
        ("--bin-side", "-1"),
        ("--bin-side", "3"),
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
    let outcome = run_line(dir.path(), "curve far.csv --columns long,lat --window 500");
    refused(&outcome, "far.csv: line 102: a point lies");
    // It is a bad row like any other: skipped and counted on request.
    let outcome = run_ok(
        dir.path(),
        "curve far.csv --columns long,lat --window 500 --on-bad-row skip --summary -",
    );
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

/// The squared distance from `x` to the polygonal line through `vertices`.
fn squared_distance_to_polyline(x: &[f64], vertices: &[Vec<f64>]) -> f64 {
    let squared = |v: &[f64]| v.iter().map(|a| a * a).sum::<f64>();
    let mut best = f64::INFINITY;
    for pair in vertices.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let ab: Vec<f64> = a.iter().zip(b).map(|(p, q)| q - p).collect();
        let ax: Vec<f64> = a.iter().zip(x).map(|(p, q)| q - p).collect();
        let dot: f64 = ab.iter().zip(&ax).map(|(p, q)| p * q).sum();
        let s = (dot / squared(&ab)).clamp(0.0, 1.0);
        let gap: Vec<f64> = ax.iter().zip(&ab).map(|(p, q)| p - s * q).collect();
        best = best.min(squared(&gap));
    }
    best
}

/// The number printed after `label` on the line that starts with it (after the indent).
fn printed_after(stdout: &str, label: &str) -> f64 {
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no line '{label}' in\n{stdout}"));
    line.trim_start()[label.len()..]
        .split_whitespace()
        .next()
        .and_then(|word| word.trim_end_matches(',').parse().ok())
        .unwrap_or_else(|| panic!("no number after '{label}' in '{line}'"))
}

/// The number printed after the first `key` within `line`.
fn printed_in(line: &str, key: &str) -> f64 {
    let start = line
        .find(key)
        .unwrap_or_else(|| panic!("no '{key}' in '{line}'"))
        + key.len();
    line[start..]
        .split_whitespace()
        .next()
        .and_then(|word| word.trim_end_matches([',', ')']).parse().ok())
        .unwrap_or_else(|| panic!("no number after '{key}' in '{line}'"))
}

/// Printed numbers have six significant digits.
fn agrees(printed: f64, exact: f64) -> bool {
    (printed - exact).abs() <= 1e-5 * exact.abs().max(1e-9)
}

/// An adversarial stream (a cross: blocks of 100 rows alternate between a horizontal and a
/// vertical segment, so the learner keeps being caught on the wrong one) with non-default κ,
/// e_mult and p. Every regret printed is checked against an independent recomputation from
/// its definition: the cumulative loss from the per-round records, η_T from the formula
/// (with T the number of rounds and e_mult), the penalty κ·c_1·K/η_T, and each comparator's
/// loss as the sum of squared distances of the scored rows to its vertices. No bound is
/// printed, and the output says so.
#[test]
fn printed_regrets_are_what_their_labels_say_on_an_adversarial_stream() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = common::TestRng::new(17);
    let warmup = 20;
    let mut rows: Vec<[f64; 2]> = Vec::new();
    for t in 0..(warmup + 800) {
        let along = 2.0 * rng.next_f64() - 1.0;
        let across = 0.04 * (rng.next_f64() - 0.5);
        let vertical = t >= warmup && ((t - warmup) / 100) % 2 == 1;
        rows.push(if vertical {
            [across, along]
        } else {
            [along, across]
        });
    }
    let text: String = std::iter::once("x,y\n".to_string())
        .chain(rows.iter().map(|[x, y]| format!("{x},{y}\n")))
        .collect();
    let input = write(dir.path(), "cross.csv", text);
    let (penalty, eta_scale, max_segments) = (2.0, 300.0, 20usize);
    let outcome = run(
        dir.path(),
        &[
            "curve",
            input.to_str().unwrap(),
            "--penalty",
            "2",
            "--eta-scale",
            "300",
            "--max-segments",
            "20",
            "--output",
            "rounds.csv",
            "--summary",
            "curve.json",
        ],
    );
    assert_eq!(outcome.code, 0, "{outcome:?}");
    let stdout = &outcome.stdout;
    assert!(stdout.contains("regret bound           none"), "{stdout}");

    // The cumulative loss: the sum of the per-round losses.
    let records = std::fs::read_to_string(dir.path().join("rounds.csv")).unwrap();
    let cumulative: f64 = records
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(1)?.parse::<f64>().ok())
        .sum();
    assert!(agrees(printed_after(stdout, "cumulative loss"), cumulative));

    // η_T = e_mult · min(√(c_1 p)/(c_0 √((e − 1) T)), 1/c_0), c_0 = d(2R + δ)²,
    // c_1 = d ln(1 + 2√d R/δ), T the last round.
    let summary = read_json(&dir.path().join("curve.json"));
    let radius = summary["lattice"]["radius"].as_f64().unwrap();
    let spacing = summary["lattice"]["spacing"].as_f64().unwrap();
    let d = 2.0;
    let c0 = d * (2.0 * radius + spacing).powi(2);
    let c1 = d * (2.0 * d.sqrt() * radius / spacing).ln_1p();
    let rounds = rows.len() as f64;
    let eta = eta_scale
        * ((c1 * max_segments as f64).sqrt()
            / (c0 * ((std::f64::consts::E - 1.0) * rounds).sqrt()))
        .min(1.0 / c0);
    let per_segment = penalty * c1 / eta;
    let scored = &rows[warmup..];
    let loss_of = |vertices: &[Vec<f64>]| -> f64 {
        scored
            .iter()
            .map(|x| squared_distance_to_polyline(x, vertices))
            .sum()
    };
    let vertices_of = |value: &Value| -> Vec<Vec<f64>> {
        value
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                v.as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_f64().unwrap())
                    .collect()
            })
            .collect()
    };
    let learner_vertices = vertices_of(&summary["vertices"]);
    let learner_segments = learner_vertices.len() - 1;

    let comparators = summary["comparators"].as_array().unwrap();
    assert_eq!(comparators.len(), 2);
    // The penalised objective.
    let penalised = &comparators[0];
    assert_eq!(penalised["comparator"], "penalised");
    let found = vertices_of(&penalised["vertices"]);
    let segments = found.len() - 1;
    let loss = loss_of(&found);
    let objective = loss + per_segment * segments as f64;
    let regret = cumulative - objective;
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("regret, penalised"))
        .unwrap();
    assert!(
        line.contains("κ·c_1·K(f)/η_T") && line.contains("lower estimate"),
        "{line}"
    );
    assert!(
        agrees(printed_after(stdout, "regret, penalised"), regret),
        "{stdout}\nregret {regret}"
    );
    let detail = stdout
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("regret, penalised"))
        .nth(1)
        .unwrap();
    assert!(
        agrees(printed_after(detail, "best f found"), segments as f64),
        "{detail}"
    );
    assert!(
        agrees(printed_in(detail, "loss"), loss),
        "{detail}\nloss {loss}"
    );
    assert!(
        agrees(printed_in(detail, "penalty"), per_segment * segments as f64),
        "{detail}"
    );
    assert!(
        agrees(printed_in(detail, "("), per_segment),
        "{detail}\nper segment {per_segment}"
    );
    assert!(
        agrees(printed_in(detail, "η_T ="), eta),
        "{detail}\nη_T {eta}"
    );
    assert!(
        agrees(printed_in(detail, ") ="), objective),
        "{detail}\nobjective {objective}"
    );
    for (key, value) in [
        ("loss", loss),
        ("objective", objective),
        ("regret", regret),
        ("learning_rate", eta),
        ("penalty_per_segment", per_segment),
    ] {
        let reported = penalised[key].as_f64().unwrap();
        assert!(
            (reported - value).abs() <= 1e-9 * value.abs().max(1.0),
            "{key}: {reported} vs {value}"
        );
    }

    // The best curve found with at most the learner's number of segments.
    let same = &comparators[1];
    assert_eq!(same["comparator"], "same-segments");
    let found = vertices_of(&same["vertices"]);
    assert!(found.len() - 1 <= learner_segments);
    let loss = loss_of(&found);
    let regret = cumulative - loss;
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("regret, same K"))
        .unwrap();
    assert!(
        line.contains(&format!("at most {learner_segments} segment"))
            && line.contains("lower estimate"),
        "{line}"
    );
    assert!(
        agrees(printed_after(stdout, "regret, same K"), regret),
        "{stdout}\nregret {regret}"
    );
    assert!((same["regret"].as_f64().unwrap() - regret).abs() <= 1e-9 * regret.abs());
    assert!((same["loss"].as_f64().unwrap() - loss).abs() <= 1e-9 * loss);
    // The stream is adversarial: the learner pays for being caught on the wrong segment.
    assert!(regret > 0.0, "{regret}");
}
