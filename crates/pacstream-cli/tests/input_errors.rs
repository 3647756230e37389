//! Bad input and bad usage: exit code 2 and a message that names the problem (and the line
//! and column where there is one). Nothing panics, whatever the bytes.

mod common;

use common::{TestRng, data, refused, run, run_line, run_ok, run_with_stdin, words, write};

const FAITHFUL_HEAD: &str = "\"eruptions\",\"waiting\"\n3.6,79\n1.8,54\n";

/// Runs batch k-means (k = 1) on a file holding `text`; returns the outcome.
fn kmeans_on(text: &str, extra: &[&str]) -> common::Outcome {
    let dir = tempfile::tempdir().expect("a temporary directory");
    write(dir.path(), "faithful.csv", text);
    let mut args = vec!["kmeans", "--k", "1", "faithful.csv"];
    args.extend_from_slice(extra);
    run(dir.path(), &args)
}

#[test]
fn a_malformed_value_names_file_line_and_column() {
    let outcome = kmeans_on(&format!("{FAITHFUL_HEAD}4.1,abc\n"), &[]);
    refused(
        &outcome,
        "error: faithful.csv: line 4, column 2 (\"waiting\"): \"abc\" is not a number",
    );
}

#[test]
fn nan_and_infinities_are_refused() {
    for value in ["NaN", "nan", "inf", "-Infinity", "1e999"] {
        let outcome = kmeans_on(&format!("{FAITHFUL_HEAD}{value},70\n"), &[]);
        refused(
            &outcome,
            &format!(
                "faithful.csv: line 4, column 1 (\"eruptions\"): \"{value}\" is not a finite number"
            ),
        );
    }
}

#[test]
fn a_row_of_the_wrong_width_is_refused() {
    let outcome = kmeans_on(&format!("{FAITHFUL_HEAD}4.1,70,3\n"), &[]);
    refused(&outcome, "faithful.csv: line 4: expected 2 fields, found 3");
    let outcome = kmeans_on(&format!("{FAITHFUL_HEAD}4.1\n"), &[]);
    refused(&outcome, "faithful.csv: line 4: expected 2 fields, found 1");
}

#[test]
fn empty_and_header_only_files_are_refused() {
    refused(&kmeans_on("", &[]), "'faithful.csv' is empty");
    refused(&kmeans_on("\n\r\n\n", &[]), "'faithful.csv' is empty");
    refused(
        &kmeans_on("\"eruptions\",\"waiting\"\n", &[]),
        "'faithful.csv' has a header but no data rows",
    );
}

#[test]
fn a_missing_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run_line(dir.path(), "kmeans --k 2 x.csv");
    assert_eq!(outcome.code, 2);
    assert_eq!(
        outcome.stderr.trim_end(),
        "error: cannot open 'x.csv': No such file or directory"
    );
    let outcome = run_line(dir.path(), "kmeans --k 2 .");
    refused(&outcome, "cannot open '.': Is a directory");
}

#[test]
fn bad_columns_are_named() {
    let text = format!("{FAITHFUL_HEAD}4.1,70\n");
    refused(
        &kmeans_on(&text, &["--columns", "wait"]),
        "--columns: no column named \"wait\" in 'faithful.csv' (its columns: \"eruptions\", \"waiting\")",
    );
    refused(
        &kmeans_on(&text, &["--columns", "1,3"]),
        "--columns: there is no column 3: 'faithful.csv' has 2 columns",
    );
    refused(
        &kmeans_on(&text, &["--columns", "0"]),
        "--columns: column indices start at 1",
    );
    refused(
        &kmeans_on(&text, &["--columns", "waiting,2"]),
        "selected twice",
    );
    refused(
        &kmeans_on("1,2\n3,4\n", &["--columns", "a"]),
        "\"a\" is not a column index, and 'faithful.csv' has no header",
    );
    // A column chosen by hand that holds text: the first row says so.
    let outcome = kmeans_on("\"a\",\"s\"\n1,x\n", &["--columns", "s"]);
    refused(&outcome, "line 2, column 2 (\"s\"): \"x\" is not a number");
}

#[test]
fn bad_rows_can_be_skipped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{FAITHFUL_HEAD}x,1\n4.1,70\n5,NaN\n1,2,3\n4.2,71\n");
    write(dir.path(), "f.csv", text);
    let outcome = run_ok(
        dir.path(),
        "kmeans --k 1 f.csv --on-bad-row skip --summary s.json -o labels.csv",
    );
    assert!(
        outcome
            .stderr
            .contains("skipping a bad row: f.csv: line 4, column 1")
    );
    assert!(
        outcome
            .stderr
            .contains("skipped 3 bad rows of 'f.csv' (of 7 data rows)"),
        "{}",
        outcome.stderr
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("s.json")).unwrap()).unwrap();
    assert_eq!(summary["input"]["bad_rows_skipped"], 3);
    assert_eq!(summary["input"]["rows"], 4);
    // Output rows are numbered as in the input, so the skipped ones leave gaps.
    let labels = std::fs::read_to_string(dir.path().join("labels.csv")).unwrap();
    let rows: Vec<&str> = labels
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(rows, ["1", "2", "4", "7"]);

    // Quiet: the count is in the summary, not on stderr.
    let outcome = run_line(dir.path(), "kmeans --k 1 f.csv --on-bad-row skip -q");
    assert_eq!((outcome.code, outcome.stderr.as_str()), (0, ""));

    // Every row bad: nothing to learn from.
    write(dir.path(), "g.csv", "\"a\"\nx\ny\n");
    let outcome = run_line(
        dir.path(),
        "kmeans --k 1 g.csv --on-bad-row skip --columns a",
    );
    refused(&outcome, "no good rows");
}

#[test]
fn bad_settings_are_usage_errors() {
    let faithful = data("faithful.csv");
    let faithful = faithful.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["kmeans", "--k", "0", faithful],
            "invalid --k: must be >= 1, got 0",
        ),
        (
            &["kmeans", "--k", "300", faithful],
            "need at least 300 points, got 272",
        ),
        (
            &["kmeans", "--k", "2", "--tol", "-1", faithful],
            "invalid --tol",
        ),
        (
            &["kmeans", "--k", "2", "--online", "--decay", "0", faithful],
            "invalid --decay",
        ),
        (
            &[
                "kmeans",
                "--k",
                "2",
                "--online",
                "--init-size",
                "1",
                faithful,
            ],
            "invalid --init-size",
        ),
        (
            &["kmeans", "--k", "2", "--decay", "5", faithful],
            "--online",
        ),
        (
            &[
                "kmeans",
                "--k",
                "2",
                "--online",
                "--max-iter",
                "5",
                faithful,
            ],
            "cannot be used",
        ),
        (
            &["kmeans", "--k", "2", "--plot", "x.png", faithful],
            "PNG is not supported",
        ),
        (
            &["kmeans", "--k", "2", "--plot", "x.pdf", faithful],
            "must end in .svg",
        ),
        (
            &["kmeans", "--k", "2", "--checkpoint", "c.json", faithful],
            "apply to --online runs",
        ),
        (
            &[
                "kmeans", "--k", "2", "--plot", "x.svg", "--axes", "waiting", faithful,
            ],
            "two columns",
        ),
        (
            &["kmeans", "--k", "2", "--sample-weights", "nope", faithful],
            "--sample-weights: no column named",
        ),
        (
            &[
                "kmeans",
                "--k",
                "2",
                "--sample-weights",
                "waiting",
                "--columns",
                "1-2",
                faithful,
            ],
            "is also the --sample-weights column",
        ),
        (
            &["kmeans", "--k", "2", "-o", "no/such/dir/out.csv", faithful],
            "cannot create",
        ),
        (
            &["kmeans", "--k", "2", "--bogus", faithful],
            "unexpected argument",
        ),
        (&["kmeans", faithful], "--k <K>"),
    ];
    for (args, message) in cases {
        let outcome = run(dir.path(), args);
        assert_eq!(outcome.code, 2, "{args:?}: {outcome:?}");
        assert!(
            outcome.stderr.contains(message),
            "{args:?}: expected {message:?} in {}",
            outcome.stderr
        );
    }
}

#[test]
fn odd_but_valid_files_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[u8], usize)] = &[
        // BOM, CRLF, quoted header and values, blank lines.
        (
            "bom.csv",
            b"\xEF\xBB\xBF\"a\",\"b\"\r\n1,2\r\n\r\n\"3\",4\r\n",
            2,
        ),
        // Semicolons, spaces around numbers, exponents, large values.
        ("semi.csv", b"a;b\n 1e150 ; -1.5E-3\n+2;.5\n", 2),
        // Tab-separated by extension, no header, one column.
        ("one.tsv", b"1\n2\n3\n", 3),
        // No final newline.
        ("last.csv", b"1,2\n3,4", 2),
    ];
    for (name, bytes, rows) in cases {
        write(dir.path(), name, bytes);
        let outcome = run(
            dir.path(),
            &["kmeans", "--k", "1", name, "--summary", "-", "-q"],
        );
        assert_eq!(outcome.code, 0, "{name}: {outcome:?}");
        let summary: serde_json::Value = serde_json::from_str(&outcome.stdout).unwrap();
        assert_eq!(summary["input"]["rows"], *rows, "{name}");
    }
}

#[test]
fn standard_input_is_read_as_a_stream() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run_with_stdin(
        dir.path(),
        &words("kmeans --k 1 --online - -o - -q"),
        Some(b"x\n1\n2\n3\n"),
    );
    assert_eq!(outcome.code, 0, "{outcome:?}");
    assert_eq!(outcome.stdout.lines().count(), 3);
    let outcome = run_with_stdin(dir.path(), &words("kmeans --k 1 -"), Some(b"x\n1\nzz\n"));
    refused(
        &outcome,
        "<stdin>: line 3, column 1 (\"x\"): \"zz\" is not a number",
    );
}

/// Values near the largest double, whose squared distances would overflow, are refused by
/// line like any bad row (or skipped with `--on-bad-row skip`), in every mode; values at
/// the limit are learned, and nothing crashes.
#[test]
fn extreme_values_are_refused_by_line_or_skipped() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    write(
        dir.path(),
        "extreme.csv",
        "x,y\n1e150,-1e150\n1e308,1e308\n-1e150,1e150\n0,0\n5e-324,5e149\n",
    );
    let modes: &[&[&str]] = &[
        &[],
        &["--online"],
        &["--online", "--batch-size", "2"],
        &[
            "--online",
            "--init-size",
            "2",
            "--reassignment-ratio",
            "0.5",
        ],
    ];
    for mode in modes {
        let mut args = vec![
            "kmeans",
            "--k",
            "2",
            "extreme.csv",
            "-q",
            "--plot",
            "e.svg",
            "-o",
            "e.csv",
            "--summary",
            "s.json",
        ];
        args.extend_from_slice(mode);
        let outcome = run(dir.path(), &args);
        assert_eq!(outcome.code, 2, "{mode:?}: {outcome:?}");
        assert!(
            outcome.stderr.contains("line 3, column 1") && outcome.stderr.contains("too large"),
            "{mode:?}: {}",
            outcome.stderr
        );
        args.extend_from_slice(&["--on-bad-row", "skip"]);
        let outcome = run(dir.path(), &args);
        assert_eq!(outcome.code, 0, "{mode:?}: {outcome:?}");
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("s.json")).expect("a summary"),
        )
        .expect("valid JSON");
        assert_eq!(summary["input"]["bad_rows_skipped"], 1, "{mode:?}");
        let centres = summary["centres"].as_array().expect("centres");
        assert_eq!(centres.len(), 2, "{mode:?}");
        for centre in centres {
            for value in centre.as_array().expect("a centre") {
                assert!(
                    value.as_f64().is_some_and(f64::is_finite),
                    "{mode:?}: {centre}"
                );
            }
        }
    }
}

/// Random bytes, and random mixtures of CSV-ish characters, never crash the binary: it
/// succeeds or says what is wrong, with exit code 2.
#[test]
fn arbitrary_bytes_never_crash_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    eprintln!("fuzz seed {seed}");
    let mut rng = TestRng::new(seed);
    const ALPHABET: &[u8] = b"0123456789.,;\t\"\n\r-eE+nNaAiIf \xEF\xBB\xBF";
    for case in 0..40 {
        let length = rng.below(300) as usize;
        let bytes: Vec<u8> = (0..length)
            .map(|_| {
                if case % 4 == 0 {
                    rng.next_u64() as u8
                } else {
                    ALPHABET[rng.below(ALPHABET.len() as u64) as usize]
                }
            })
            .collect();
        write(dir.path(), "fuzz.csv", &bytes);
        let mode = if case % 2 == 0 { "--online" } else { "--quiet" };
        let policy = if case % 3 == 0 { "skip" } else { "error" };
        let outcome = run(
            dir.path(),
            &[
                "kmeans",
                "--k",
                "2",
                mode,
                "--on-bad-row",
                policy,
                "fuzz.csv",
                "-o",
                "out.csv",
            ],
        );
        assert!(
            outcome.code == 0 || outcome.code == 2,
            "case {case} (seed {seed}): {outcome:?} on {bytes:?}"
        );
        if outcome.code == 2 {
            assert!(outcome.stderr.starts_with("error: ") || outcome.stderr.contains("\nerror: "));
        }
    }
}

#[test]
fn a_run_never_overwrites_its_input_or_writes_a_file_twice() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let text = format!("{FAITHFUL_HEAD}4.1,70\n");
    write(dir.path(), "f.csv", &text);
    let cases = [
        "kmeans --k 1 f.csv -o ./f.csv",
        "kmeans --k 1 f.csv --summary f.csv",
        "kmeans --k 1 --online f.csv -o a.csv --checkpoint a.csv",
        "kmeans --k 1 --online f.csv --resume f.csv",
    ];
    for args in cases {
        refused(&run_line(dir.path(), args), "are the same file");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.csv")).expect("input"),
        text
    );
}

#[test]
fn a_closed_pipe_ends_the_run_quietly() {
    use std::io::Read;
    let dir = tempfile::tempdir().expect("a temporary directory");
    write(
        dir.path(),
        "big.csv",
        common::blobs_csv(200_000, 2, 3, false),
    );
    let mut child = common::pacstream()
        .args(["kmeans", "--k", "2", "--online", "big.csv", "-o", "-", "-q"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut stdout = child.stdout.take().expect("piped");
    let mut first = [0u8; 100];
    stdout.read_exact(&mut first).expect("the first records");
    drop(stdout);
    let output = child.wait_with_output().expect("the binary ends");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
