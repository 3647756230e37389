//! `pacstream experts` on real and made-up data: the shipped DAX example, sleeping experts,
//! bad input, and resuming from a checkpoint.

mod common;

use common::{data, refused, run, run_line, run_ok, write};
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
    // The largest error of a forecaster on these data is 615.59 index points.
    let cases = [
        "--rule wm --beta 0.7 --outcome up @eustock-updown.csv",
        "--rule rwm --doubling --outcome up @eustock-updown.csv",
        "--rule rwm --horizon 1839 --outcome up @eustock-updown.csv",
        "--rule ewa --adahedge --outcome DAX @eustock-forecasts.csv",
        "--rule ewa --anytime --loss absolute --loss-bound 650 --outcome DAX @eustock-forecasts.csv",
        "--rule hedge --doubling --loss square --loss-bound 400000 --outcome DAX @eustock-forecasts.csv",
        "--rule fpl --horizon 1839 --loss absolute --loss-bound 650 --outcome DAX @eustock-forecasts.csv",
    ];
    for case in cases {
        run_ok(
            dir.path(),
            &format!("experts {case} -q --summary s.json -o r.csv --plot f.svg"),
        );
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
    let cases = [
        ("--rule ewa a.csv", "--outcome"),
        ("--rule ewa --outcome nope a.csv", "nope"),
        ("--rule ewa --horizon 10 --outcome y a.csv", "--loss-bound"),
        ("--rule fpl --outcome y --loss-bound 1 a.csv", "--eta"),
        ("--rule wm --loss square --outcome y a.csv", "zero-one"),
        ("--rule hedge --beta 0.5 --outcome y a.csv", "--beta"),
        ("--rule wm --beta 1.5 --outcome y a.csv", "beta"),
        ("--rule ewa --loss pinball:2 --outcome y a.csv", "pinball"),
        ("--rule ewa --outcome y missing.csv", "outcome is missing"),
        (
            "--rule ewa --anytime --doubling --outcome y a.csv",
            "cannot be used",
        ),
        // experts picks its columns with --outcome and --experts: it has no --columns.
        (
            "--rule ewa --columns 1,2 --outcome y a.csv",
            "unexpected argument '--columns'",
        ),
    ];
    for (case, reason) in cases {
        refused(&run_line(dir.path(), &format!("experts {case}")), reason);
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

/// The per-round records of a run: (regret, regret bound if printed).
fn regrets_and_bounds(path: &std::path::Path) -> Vec<(f64, Option<f64>)> {
    let text = std::fs::read_to_string(path).expect("records");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let (regret, bound) = (column("regret"), column("regret_bound"));
    lines
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            (
                cells[regret].parse().expect("a regret"),
                cells[bound].parse().ok(),
            )
        })
        .collect()
}

/// The adversaries: loss files made against the weights of the very learner the command
/// builds (same settings, same weights: the command is deterministic), so that each file is
/// adversarial to the run that reads it.
mod adversary {
    use pacstream::OnlineLearner;
    use pacstream::experts::testing::{
        against_the_majority, against_weighted_majority, halves_losses,
    };
    use pacstream::experts::{
        AdviceRound, HedgeParams, LearningRate, LossRound, RandomizedWeightedMajorityParams,
        WeightedMajorityParams,
    };

    /// Loss 1 to the heaviest experts until they hold half the weight; expert 0 of a
    /// prior-weighted run is spared every other round, so that a bound with the wrong prior
    /// term shows.
    pub fn hedge_losses(
        n: usize,
        rounds: usize,
        rate: LearningRate,
        prior: Option<Vec<f64>>,
        one_right: bool,
    ) -> String {
        let mut params = HedgeParams::new(n).learning_rate(rate).loss_bound(1.0);
        if let Some(prior) = prior {
            params = params.prior(prior);
        }
        let mut hedge = params.check().unwrap().build();
        let names: Vec<String> = (0..n).map(|i| format!("e{i}")).collect();
        let mut text = names.join(",") + "\n";
        for _ in 0..rounds {
            let weights = hedge.weights();
            let losses: Vec<f64> = if one_right {
                (0..n).map(|i| if i == 0 { 0.0 } else { 1.0 }).collect()
            } else {
                halves_losses(&weights, 1.0)
            };
            hedge.learn_one(LossRound::new(&losses)).unwrap();
            let cells: Vec<String> = losses.iter().map(|l| l.to_string()).collect();
            text += &(cells.join(",") + "\n");
        }
        text
    }

    /// Binary advice, the outcome against the learner: the opposite of weighted majority's
    /// prediction, or of the side holding most of randomized weighted majority's weight.
    pub fn binary_rounds(n: usize, rounds: usize, randomized: bool) -> String {
        let mut wm = WeightedMajorityParams::new(n)
            .beta(0.7)
            .check()
            .unwrap()
            .build();
        let mut rwm = RandomizedWeightedMajorityParams::new(n)
            .learning_rate(LearningRate::Doubling)
            .check()
            .unwrap()
            .build();
        let names: Vec<String> = (0..n).map(|i| format!("e{i}")).collect();
        let mut text = format!("y,{}\n", names.join(","));
        let mut state = 12345u64;
        for _ in 0..rounds {
            let advice: Vec<f64> = (0..n)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    f64::from(u8::from(state >> 63 == 1))
                })
                .collect();
            let y = if randomized {
                against_the_majority(&rwm.weights(), &advice)
            } else {
                against_weighted_majority(&wm, &advice)
            };
            wm.learn_one(AdviceRound::new(&advice, y)).unwrap();
            rwm.learn_one(AdviceRound::new(&advice, y)).unwrap();
            let cells: Vec<String> = advice.iter().map(|a| a.to_string()).collect();
            text += &format!("{y},{}\n", cells.join(","));
        }
        text
    }
}

/// Every bound the command prints holds on every round of runs made against it: Hedge with
/// every schedule, uniform prior and a prior that weighs the best expert 0.001 (the run that
/// once printed regret 93.3 beside a bound of 18.6), sleeping experts, EWA with a prior,
/// weighted majority and its randomised form against their adversaries, FPL. Where no theorem
/// covers the settings (EWA on the zero-one loss of real-valued advice, AdaHedge with
/// sleeping experts, losses beyond --loss-bound), no bound is printed and the summary says
/// why.
#[test]
fn printed_bounds_hold_on_adversarial_runs_with_priors() {
    use pacstream::experts::LearningRate;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let n = 4;
    let rounds = 1000;
    let prior = vec![0.001, 1.0, 1.0, 1.0];
    let prior_text = "0.001,1,1,1";
    let rates: [(LearningRate, &[&str]); 5] = [
        (LearningRate::Fixed(0.05), &["--eta", "0.05"]),
        (LearningRate::Horizon(1000), &["--horizon", "1000"]),
        (LearningRate::Anytime, &["--anytime"]),
        (LearningRate::Doubling, &["--doubling"]),
        (LearningRate::AdaHedge, &["--adahedge"]),
    ];
    let mut cases: Vec<(String, Vec<String>)> = Vec::new();
    for (rate, flags) in rates {
        for with_prior in [false, true] {
            for one_right in [false, true] {
                let name = format!("hedge-{}-{with_prior}-{one_right}.csv", rate.name());
                let text = adversary::hedge_losses(
                    n,
                    rounds,
                    rate,
                    with_prior.then(|| prior.clone()),
                    one_right,
                );
                write(dir.path(), &name, text);
                let mut args: Vec<String> = ["--rule", "hedge", "--losses", "--loss-bound", "1"]
                    .map(String::from)
                    .to_vec();
                args.extend(flags.iter().map(|s| s.to_string()));
                if with_prior {
                    args.extend(["--prior".to_string(), prior_text.to_string()]);
                }
                args.push(name);
                cases.push((
                    format!("hedge {flags:?} prior {with_prior} right {one_right}"),
                    args,
                ));
            }
        }
    }
    // EWA with a prior against its best expert: expert 0 is right, the others off by 1.
    let mut ewa = String::from("y,e0,e1,e2,e3\n");
    for t in 0..rounds {
        let y = (t as f64 * 0.1).sin();
        ewa += &format!("{y},{y},{},{},{}\n", y + 1.0, y - 1.0, y + 0.5);
    }
    write(dir.path(), "ewa.csv", ewa);
    for flags in [&["--horizon", "1000"][..], &["--anytime"], &["--adahedge"]] {
        let mut args: Vec<String> = [
            "--rule",
            "ewa",
            "--loss",
            "square",
            "--loss-bound",
            "1",
            "--outcome",
            "y",
            "--prior",
            prior_text,
        ]
        .map(String::from)
        .to_vec();
        args.extend(flags.iter().map(|s| s.to_string()));
        args.push("ewa.csv".into());
        cases.push((format!("ewa {flags:?} prior"), args));
    }
    write(
        dir.path(),
        "wm.csv",
        adversary::binary_rounds(n, rounds, false),
    );
    cases.push((
        "wm".into(),
        ["--rule", "wm", "--beta", "0.7", "--outcome", "y", "wm.csv"]
            .map(String::from)
            .to_vec(),
    ));
    write(
        dir.path(),
        "rwm.csv",
        adversary::binary_rounds(n, rounds, true),
    );
    cases.push((
        "rwm".into(),
        ["--rule", "rwm", "--doubling", "--outcome", "y", "rwm.csv"]
            .map(String::from)
            .to_vec(),
    ));
    write(
        dir.path(),
        "fpl.csv",
        adversary::hedge_losses(n, rounds, LearningRate::Fixed(0.5), None, false),
    );
    cases.push((
        "fpl".into(),
        [
            "--rule",
            "fpl",
            "--losses",
            "--loss-bound",
            "1",
            "--eta",
            "0.5",
            "fpl.csv",
        ]
        .map(String::from)
        .to_vec(),
    ));
    for (case, args) in &cases {
        let mut command = vec!["experts"];
        command.extend(args.iter().map(String::as_str));
        command.extend(["-q", "-o", "r.csv", "--summary", "s.json"]);
        let outcome = run(dir.path(), &command);
        assert_eq!(outcome.code, 0, "{case}: {outcome:?}");
        let records = regrets_and_bounds(&dir.path().join("r.csv"));
        assert_eq!(records.len(), rounds, "{case}");
        for (t, (regret, bound)) in records.iter().enumerate() {
            let bound = bound.unwrap_or_else(|| panic!("{case}: no bound at round {}", t + 1));
            assert!(
                *regret <= bound * (1.0 + 1e-9),
                "{case}: round {}: regret {regret} > bound {bound}",
                t + 1
            );
        }
        let summary = summary(dir.path(), "s.json");
        for expert in summary["experts"].as_array().expect("experts") {
            let regret = expert["regret_against"].as_f64().expect("regret");
            let bound = expert["regret_bound"].as_f64().expect("bound");
            assert!(regret <= bound * (1.0 + 1e-9), "{case}: {expert}");
        }
        assert!(summary["guarantee"]["theorem"].is_string(), "{case}");
    }

    // No theorem: EWA on the zero-one loss (the mixture of 0 and 1 advice misses every round
    // while expert 1 never does), AdaHedge with a sleeping expert, losses beyond the bound.
    let mut zero_one = String::from("y,e0,e1\n");
    let mut sleeping = String::from("e0,e1,e2\n");
    for t in 0..200 {
        zero_one += "1,0,1\n";
        sleeping += if t % 3 == 0 { ",1,0\n" } else { "0,1,0.5\n" };
    }
    write(dir.path(), "zero-one.csv", zero_one);
    write(dir.path(), "sleeping.csv", sleeping);
    write(dir.path(), "beyond.csv", "e0,e1\n0,2\n0,1\n");
    let none = [
        (
            "--rule ewa --loss zero-one --outcome y zero-one.csv",
            "zero-one loss",
        ),
        ("--rule hedge --losses --adahedge sleeping.csv", "sleeping"),
        (
            "--rule hedge --losses --loss-bound 1 --anytime beyond.csv",
            "outside the range",
        ),
    ];
    for (args, reason) in none {
        let outcome = run_line(
            dir.path(),
            &format!("experts {args} -o r.csv --summary s.json"),
        );
        assert_eq!(outcome.code, 0, "{args:?}: {outcome:?}");
        assert!(
            outcome.stdout.contains("bound              none: "),
            "{}",
            outcome.stdout
        );
        let summary = summary(dir.path(), "s.json");
        assert!(summary["regret_bound"].is_null(), "{args:?}");
        let why = summary["guarantee"]["reason"].as_str().expect("a reason");
        assert!(why.contains(reason), "{args:?}: {why}");
        let records = regrets_and_bounds(&dir.path().join("r.csv"));
        assert!(records.iter().all(|(_, bound)| bound.is_none()), "{args:?}");
    }
    // With a rate that keeps the weights mixed, the zero-one run misses every round: its
    // regret grows like T, as no rate-of-learning bound allows.
    let summary = {
        let outcome = run(
            dir.path(),
            &[
                "experts",
                "--rule",
                "ewa",
                "--loss",
                "zero-one",
                "--eta",
                "0.01",
                "--outcome",
                "y",
                "zero-one.csv",
                "-q",
                "--summary",
                "s.json",
            ],
        );
        assert_eq!(outcome.code, 0);
        summary(dir.path(), "s.json")
    };
    assert_eq!(summary["regret"], 200.0);
}

/// `--plot-loss` and `--plot-contributions` write well-formed SVG figures that name every
/// expert (and, with the square loss, the oracles), for a rule with weights of any sign as
/// well; they refuse PNG, another extension, an input under another name and a path shared
/// with another output, before anything is written.
#[test]
fn loss_and_contribution_figures() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let forecasts = data("eustock-forecasts.csv");
    let forecasts = forecasts.to_str().expect("a UTF-8 path");
    let experts = ["last", "mean5", "trend"];
    for (rule, extra) in [
        ("mlpol", &[][..]),
        ("ridge", &["--lambda", "1"][..]),
        ("boa", &["--loss", "absolute"][..]),
    ] {
        let mut args = vec!["experts", "--rule", rule];
        args.extend_from_slice(extra);
        args.extend([
            "--outcome",
            "DAX",
            "--experts",
            "last,mean5,trend",
            forecasts,
            "-q",
            "--plot-loss",
            "loss.svg",
            "--plot-contributions",
            "contributions.svg",
        ]);
        let outcome = run(dir.path(), &args);
        assert_eq!(outcome.code, 0, "{rule}: {outcome:?}");
        let loss = std::fs::read_to_string(dir.path().join("loss.svg")).expect("loss figure");
        let contributions =
            std::fs::read_to_string(dir.path().join("contributions.svg")).expect("figure");
        for (name, svg) in [("loss", &loss), ("contributions", &contributions)] {
            assert!(
                svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
                "{rule} {name}: not an SVG document"
            );
            assert!(
                svg.contains("<polyline") || svg.contains("<path"),
                "{rule} {name}"
            );
            for expert in experts {
                assert!(svg.contains(expert), "{rule} {name}: no {expert}");
            }
        }
        assert!(loss.contains("cumulative loss minus the learner"), "{rule}");
        assert!(contributions.contains("weight × forecast"), "{rule}");
        // The oracles are solved for the square loss only, and the figure says so.
        let square = rule != "boa";
        assert_eq!(
            loss.contains("best convex combination so far"),
            square,
            "{rule}"
        );
        assert_eq!(
            loss.contains("best linear combination so far"),
            square,
            "{rule}"
        );
        assert_eq!(loss.contains("no convex/linear oracle"), !square, "{rule}");
        std::fs::remove_file(dir.path().join("loss.svg")).expect("removed");
        std::fs::remove_file(dir.path().join("contributions.svg")).expect("removed");
    }

    write(dir.path(), "a.csv", "y,e1,e2\n1,1,0\n0,1,0\n");
    std::os::unix::fs::symlink("a.csv", dir.path().join("s.svg")).expect("a symlink");
    let input = std::fs::read(dir.path().join("a.csv")).expect("input");
    for option in ["--plot-loss", "--plot-contributions"] {
        let cases: &[(&[&str], &str)] = &[
            (&[option, "f.png"], "PNG is not supported"),
            (&[option, "f.pdf"], "must end in .svg"),
            (&[option, "s.svg"], "are the same file"),
            (&[option, "same.svg", "--plot", "same.svg"], "same file"),
            (&[option, "same.svg", "-o", "same.svg"], "same file"),
        ];
        for (case, reason) in cases {
            let mut args = vec!["experts", "--rule", "mlpol", "--outcome", "y", "a.csv"];
            args.extend_from_slice(case);
            let outcome = run(dir.path(), &args);
            assert_eq!(outcome.code, 2, "{case:?}: {outcome:?}");
            assert!(
                outcome.stderr.contains(reason),
                "{case:?}: expected {reason:?} in {}",
                outcome.stderr
            );
            for written in ["f.png", "f.pdf", "same.svg"] {
                assert!(
                    !dir.path().join(written).exists(),
                    "{case:?} wrote {written}"
                );
            }
            assert_eq!(
                std::fs::read(dir.path().join("a.csv")).expect("input"),
                input,
                "{case:?} changed the input"
            );
        }
    }
    let outcome = run(
        dir.path(),
        &[
            "experts",
            "--losses",
            "--rule",
            "ewa",
            "--adahedge",
            "a.csv",
            "--plot-contributions",
            "c.svg",
        ],
    );
    assert_eq!(outcome.code, 2, "{outcome:?}");
    assert!(
        outcome.stderr.contains("needs advice"),
        "{}",
        outcome.stderr
    );
}
