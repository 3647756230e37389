//! `pacstream dataflow` as a real cluster: 2, 3 and 4 processes on 127.0.0.1 started by the
//! test, each bounded in time, against the one-process run; a process killed with SIGKILL
//! mid-stream and the cluster restarted from its epoch checkpoints.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_pacstream");
/// No process of these tests may run longer than this.
const LIMIT: Duration = Duration::from_secs(60);

/// A reproducible stream of 2-d points around four centres, with a key column in which
/// one key ("hot") holds half of the rows.
fn write_data(path: &Path, n: usize) {
    let mut rng = pacstream::StreamRng::seed_from(12_345);
    let mut uniform = move || rng.next_f64();
    let centres = [[0.0, 0.0], [5.0, 1.0], [1.0, 6.0], [7.0, 7.0]];
    let mut text = String::from("key,x,y\n");
    for i in 0..n {
        let c = centres[(uniform() * 4.0) as usize % 4];
        let key = if i % 2 == 0 {
            "hot".to_string()
        } else {
            format!("k{}", (i * 7919) % 40)
        };
        text += &format!("{key},{:.6},{:.6}\n", c[0] + uniform(), c[1] + uniform());
    }
    fs::write(path, text).unwrap();
}

/// A temporary directory holding `n` rows of [`write_data`] as `data.csv`.
fn data_in_tempdir(n: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.csv");
    write_data(&data, n);
    (dir, data)
}

/// Free loopback ports, one per process, written as a hostfile.
///
/// The ports are taken below the kernel's ephemeral range (32768 and up on Linux), each once
/// per run of these tests. A port found free by binding port 0 is an ephemeral one: before
/// the cluster's process 0 bound it, the kernel could hand it out again as the local port
/// of another test's connection, and process 0 then failed while the others waited for it
/// (seen once in about ten runs of this file).
fn hostfile(dir: &Path, processes: usize) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const FIRST: u32 = 20_000;
    const PORTS: u32 = 12_000;
    // Runs of this file at the same time start at different places.
    let start = std::process::id().wrapping_mul(2_654_435_761) % PORTS;
    let mut lines = String::new();
    let mut found = 0;
    while found < processes {
        let taken = NEXT.fetch_add(1, Ordering::Relaxed);
        assert!(taken < PORTS, "no free loopback port left below 32768");
        let port = FIRST + (start + taken) % PORTS;
        let address = format!("127.0.0.1:{port}");
        if TcpListener::bind(&address).is_ok() {
            lines += &format!("{address}\n");
            found += 1;
        }
    }
    let path = dir.join(format!("hosts-{processes}"));
    fs::write(&path, lines).unwrap();
    path
}

fn spawn(args: &[String]) -> Child {
    spawn_to(args, Stdio::null())
}

fn spawn_to(args: &[String], stderr: Stdio) -> Child {
    Command::new(BIN)
        .args(args)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// Waits until every child has ended, killing all of them if any outlives the limit.
fn watch(children: &mut [Child]) {
    let start = Instant::now();
    while children.iter_mut().any(|c| c.try_wait().unwrap().is_none()) {
        if start.elapsed() > LIMIT {
            for child in children.iter_mut() {
                let _ = child.kill();
                let _ = child.wait();
            }
            panic!("the cluster did not finish within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits for every child (bounded by [`watch`]); each must succeed.
fn wait_all(mut children: Vec<Child>) {
    watch(&mut children);
    for child in &mut children {
        let status = child.wait().unwrap();
        assert!(status.success(), "a process failed: {status}");
    }
}

/// Runs one process to its end; returns its exit code and standard error.
fn run_one(args: &[String]) -> (Option<i32>, String) {
    let output = Command::new(BIN)
        .args(args)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// The arguments of process `process` of a cluster of `processes` processes of `workers`
/// threads each: `base`, the cluster options, and (process 0) the records and summary files.
fn process_args(
    base: &[String],
    (processes, process, workers): (usize, usize, usize),
    hosts: Option<&Path>,
    outputs: (&Path, &Path),
) -> Vec<String> {
    let mut all = base.to_vec();
    all.extend(strings(&["--workers", &workers.to_string()]));
    if let Some(hosts) = hosts {
        all.extend(strings(&[
            "--processes",
            &processes.to_string(),
            "--process",
            &process.to_string(),
            "--hostfile",
            hosts.to_str().unwrap(),
        ]));
    }
    if process == 0 {
        all.extend(strings(&[
            "--output",
            outputs.0.to_str().unwrap(),
            "--summary",
            outputs.1.to_str().unwrap(),
        ]));
    }
    all
}

/// Runs `args` on `processes` processes of `workers` threads; returns (records, summary).
fn cluster(
    dir: &Path,
    name: &str,
    args: &[String],
    processes: usize,
    workers: usize,
) -> (String, String) {
    let output = dir.join(format!("{name}.jsonl"));
    let summary = dir.join(format!("{name}.json"));
    let hosts = (processes > 1).then(|| hostfile(dir, processes));
    let children = (0..processes)
        .map(|process| {
            spawn(&process_args(
                args,
                (processes, process, workers),
                hosts.as_deref(),
                (&output, &summary),
            ))
        })
        .collect();
    wait_all(children);
    (
        fs::read_to_string(output).unwrap(),
        fs::read_to_string(summary).unwrap(),
    )
}

/// Runs `args` on each cluster `layouts` (processes, workers) and asserts that each writes
/// the one-process run's `records` and `summary`, byte for byte.
fn assert_clusters_write(
    dir: &Path,
    args: &[String],
    layouts: &[(usize, usize)],
    (records, summary): (&str, &str),
) {
    for &(processes, workers) in layouts {
        let name = format!("p{processes}w{workers}");
        let (r, s) = cluster(dir, &name, args, processes, workers);
        assert!(
            r == records,
            "records differ on {processes} processes x {workers} workers"
        );
        assert!(
            s == summary,
            "summary differs on {processes} processes x {workers} workers"
        );
    }
}

/// Keyed sequential k-means (k = 3) on the key column, in epochs of `epoch_size` rows.
fn keyed_args(data: &Path, epoch_size: usize) -> Vec<String> {
    strings(&[
        "dataflow",
        "keyed",
        data.to_str().unwrap(),
        "--key",
        "key",
        "--k",
        "3",
        "--init-size",
        "20",
        "--epoch-size",
        &epoch_size.to_string(),
    ])
}

/// The k-means `command` (`dataflow kmeans`, or `kmeans --online`) on `data` with the
/// settings of every k-means test here (k = 4 on x and y, mini-batches of 500 rows), then
/// `extra`.
fn kmeans_command(command: &[&str], data: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = strings(command);
    args.push(data.to_str().unwrap().to_string());
    args.extend(strings(&[
        "--columns",
        "x,y",
        "--k",
        "4",
        "--batch-size",
        "500",
    ]));
    args.extend(strings(extra));
    args
}

/// Data-parallel k-means, by chunks of 100 rows, forgetting with a half-life of 2000 rows.
fn kmeans_args(data: &Path) -> Vec<String> {
    let extra = ["--chunk-size", "100", "--decay", "2000"];
    kmeans_command(&["dataflow", "kmeans"], data, &extra)
}

#[test]
fn data_parallel_kmeans_on_2_3_and_4_processes_equals_one_process() {
    let (dir, data) = data_in_tempdir(6000);
    let args = kmeans_args(&data);
    let (records, summary) = cluster(dir.path(), "one", &args, 1, 1);
    assert_eq!(records.lines().count(), 6000);
    let layouts = [(2, 1), (3, 1), (4, 1), (2, 2)];
    assert_clusters_write(dir.path(), &args, &layouts, (&records, &summary));
}

#[test]
fn data_parallel_kmeans_with_whole_batches_equals_the_one_process_command() {
    let (dir, data) = data_in_tempdir(3000);
    let single = dir.path().join("single.jsonl");
    let output = ["--output", single.to_str().unwrap()];
    let (code, stderr) = run_one(&kmeans_command(&["kmeans", "--online"], &data, &output));
    assert_eq!(code, Some(0), "{stderr}");
    let whole_batches = ["--chunk-size", "500"];
    let args = kmeans_command(&["dataflow", "kmeans"], &data, &whole_batches);
    let (records, _) = cluster(dir.path(), "p3", &args, 3, 1);
    assert!(
        records == fs::read_to_string(single).unwrap(),
        "records differ from pacstream kmeans --online"
    );
}

#[test]
fn keyed_learners_with_a_skewed_key_on_3_processes_equal_one_process() {
    let (dir, data) = data_in_tempdir(4000);
    let args = keyed_args(&data, 300);
    let (records, summary) = cluster(dir.path(), "one", &args, 1, 1);
    assert_eq!(
        records
            .lines()
            .filter(|l| l.contains("\"key\":\"hot\""))
            .count(),
        2000
    );
    assert_clusters_write(dir.path(), &args, &[(3, 1)], (&records, &summary));
}

/// The largest epoch of any checkpoint of `worker` in `dir`.
fn newest_checkpoint(dir: &Path, worker: usize) -> Option<u64> {
    fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|name| {
            name.strip_prefix(&format!("worker-{worker}-of-2-epoch-"))?
                .strip_suffix(".json")?
                .parse()
                .ok()
        })
        .max()
}

#[test]
fn a_process_killed_mid_stream_restarts_from_the_checkpoints_to_the_same_output() {
    let (dir, data) = data_in_tempdir(40_000);
    let mut args = keyed_args(&data, 200);
    args.extend(strings(&["--checkpoint-every", "2"]));
    let (records, summary) = cluster(dir.path(), "uninterrupted", &args, 1, 1);

    let checkpoints = dir.path().join("checkpoints");
    let mut with_checkpoints = args.clone();
    with_checkpoints.extend(strings(&[
        "--checkpoint-dir",
        checkpoints.to_str().unwrap(),
    ]));
    let output = dir.path().join("restarted.jsonl");
    let summary_path = dir.path().join("restarted.json");
    let notes = dir.path().join("notes.txt");
    let run = |hosts: &Path| -> Vec<Child> {
        (0..2)
            .map(|process| {
                let all = process_args(
                    &with_checkpoints,
                    (2, process, 1),
                    Some(hosts),
                    (&output, &summary_path),
                );
                if process == 0 {
                    spawn_to(&all, fs::File::create(&notes).unwrap().into())
                } else {
                    spawn(&all)
                }
            })
            .collect()
    };
    let mut children = run(&hostfile(dir.path(), 2));
    // Kill process 1 with SIGKILL once both workers are a few epochs in.
    let start = Instant::now();
    while newest_checkpoint(&checkpoints, 1).is_none_or(|e| e < 10) {
        assert!(start.elapsed() < LIMIT, "no checkpoint appeared");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        children[1].try_wait().unwrap().is_none(),
        "process 1 ended before it was killed"
    );
    let killed_at = newest_checkpoint(&checkpoints, 1).unwrap();
    children[1].kill().unwrap();
    children[1].wait().unwrap();
    // Its peer cannot go on without it: stop it too, as an operator would.
    let _ = children[0].kill();
    let _ = children[0].wait();
    assert!(killed_at < 200, "the run was over before the kill");
    // The whole cluster restarts (new ports) and resumes from the common epoch.
    wait_all(run(&hostfile(dir.path(), 2)));
    let notes = fs::read_to_string(&notes).unwrap();
    assert!(
        notes.contains("resumed from the checkpoints of epoch"),
        "the restart did not resume: {notes}"
    );
    assert!(
        fs::read_to_string(&output).unwrap() == records,
        "records differ after the restart"
    );
    assert!(
        fs::read_to_string(&summary_path).unwrap() == summary,
        "summaries differ after the restart"
    );
}

#[test]
fn cluster_options_out_of_range_are_refused_before_anything_starts() {
    let (dir, data) = data_in_tempdir(10);
    let hosts = hostfile(dir.path(), 2);
    let base = kmeans_args(&data);
    for (extra, message) in [
        (
            vec!["--workers", "0"],
            "--workers must be between 1 and 256",
        ),
        (
            vec!["--workers", "100000"],
            "--workers must be between 1 and 256",
        ),
        (
            vec!["--processes", "5000"],
            "--processes must be between 1 and 1024",
        ),
        (
            vec!["--processes", "2"],
            "--processes above 1 needs --hostfile",
        ),
        (
            vec![
                "--processes",
                "2",
                "--process",
                "2",
                "--hostfile",
                hosts.to_str().unwrap(),
            ],
            "--process must be below --processes",
        ),
        (
            vec!["--processes", "3", "--hostfile", hosts.to_str().unwrap()],
            "names 2 hosts for 3 processes",
        ),
        (
            vec!["--checkpoint-every", "0"],
            "--checkpoint-every must be >= 1",
        ),
        (
            vec![
                "--processes",
                "2",
                "--hostfile",
                hosts.to_str().unwrap(),
                "--connect-timeout",
                "0",
            ],
            "--connect-timeout must be between 1 and 86400",
        ),
        (
            vec![
                "--processes",
                "2",
                "--hostfile",
                hosts.to_str().unwrap(),
                "--connect-timeout",
                "86401",
            ],
            "--connect-timeout must be between 1 and 86400",
        ),
        (
            vec!["--connect-timeout", "5"],
            "--connect-timeout needs --processes above 1",
        ),
        (vec!["--output", data.to_str().unwrap()], "is the input"),
    ] {
        let mut args = base.clone();
        args.extend(strings(&extra));
        let (code, stderr) = run_one(&args);
        assert_eq!(code, Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(message), "{extra:?}: {stderr}");
    }
}

/// A process whose peer never starts gives up after `--connect-timeout` and says which
/// process it waited for, on `pacstream dataflow` and on a streaming command alike; no
/// output is written.
#[test]
fn a_process_whose_peer_never_starts_gives_up_after_the_connect_timeout() {
    let (dir, data) = data_in_tempdir(10);
    let hosts = hostfile(dir.path(), 2);
    let summary = dir.path().join("summary.json");
    let hosts = hosts.to_str().unwrap();
    for (command, process, awaited) in [
        (kmeans_args(&data), "0", "process 1 to connect"),
        (kmeans_args(&data), "1", "for process 0 at 127.0.0.1:"),
        (
            kmeans_command(&["kmeans", "--online"], &data, &[]),
            "1",
            "for process 0 at 127.0.0.1:",
        ),
    ] {
        let mut args = command;
        args.extend(strings(&[
            "--processes",
            "2",
            "--process",
            process,
            "--hostfile",
            hosts,
            "--connect-timeout",
            "1",
            "--summary",
            summary.to_str().unwrap(),
        ]));
        let started = Instant::now();
        let (code, stderr) = run_one(&args);
        let waited = started.elapsed();
        assert_ne!(code, Some(0), "{args:?}: {stderr}");
        assert!(stderr.contains(awaited), "{args:?}: {stderr}");
        assert!(stderr.contains("waited 1 s"), "{args:?}: {stderr}");
        assert!(waited < Duration::from_secs(30), "{args:?}: {waited:?}");
        assert!(!summary.exists());
    }
}

/// Starts every process of a cluster and returns, per process, its exit code and stderr,
/// killing them all if one outlives the limit.
fn outcomes(dir: &Path, args: &[String], processes: usize) -> Vec<(Option<i32>, String)> {
    let hosts = (processes > 1).then(|| hostfile(dir, processes));
    let output = dir.join("failed.jsonl");
    let summary = dir.join("failed.json");
    let mut children: Vec<Child> = (0..processes)
        .map(|process| {
            let all = process_args(
                args,
                (processes, process, 1),
                hosts.as_deref(),
                (&output, &summary),
            );
            spawn_to(&all, Stdio::piped())
        })
        .collect();
    watch(&mut children);
    children
        .into_iter()
        .map(|child| {
            let output = child.wait_with_output().unwrap();
            (
                output.status.code(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        })
        .collect()
}

#[test]
fn a_bad_row_read_by_one_worker_of_its_share_stops_every_process() {
    let (dir, data) = data_in_tempdir(3000);
    // Data row 1,750 is row 250 of its k-means batch (rows 1,501 to 2,000), in chunk 2 (of
    // 100 rows), which only worker 0 of 2 parses; it is row 250 of its keyed epoch (rows
    // 1,501 to 1,800), in the epoch's first chunk of 256 rows (chunk 10 of the stream),
    // which only process 0 of 2 parses.
    let text = fs::read_to_string(&data).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[1750] = "hot,1.0,oops";
    fs::write(&data, lines.join("\n") + "\n").unwrap();
    for args in [kmeans_args(&data), keyed_args(&data, 300)] {
        for (process, (code, stderr)) in outcomes(dir.path(), &args, 2).into_iter().enumerate() {
            assert_eq!(code, Some(2), "process {process} of {args:?}: {stderr}");
            assert!(
                stderr.contains("input row 1750"),
                "process {process} of {args:?}: {stderr}"
            );
        }
    }
}

/// Lines replaced: (line, its new bytes).
type Changes<'a> = Vec<(usize, &'a [u8])>;

/// The lines of `data` (line 0 the header, line r data row r) with `changes` made, joined
/// by `end`, written as `name` in `dir`.
fn rewritten(
    dir: &Path,
    data: &Path,
    name: &str,
    changes: &[(usize, &[u8])],
    end: &[u8],
) -> PathBuf {
    let text = fs::read(data).unwrap();
    let mut lines: Vec<Vec<u8>> = text
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    for (i, line) in changes {
        lines[*i] = line.to_vec();
    }
    let mut bytes = lines.join(end);
    bytes.extend_from_slice(end);
    let path = dir.join(name);
    fs::write(&path, bytes).unwrap();
    path
}

/// `args` stop with exit code 2 on every layout (1 worker; 2 and 3 threads; every process of
/// 2 and of 3 processes), each printing the one-worker run's standard error, which names
/// `expected`.
fn assert_every_layout_stops_as_one_worker(dir: &Path, args: &[String], expected: &str) {
    let (code, one) = run_one(args);
    assert_eq!(code, Some(2), "{args:?}: {one}");
    assert!(one.contains(expected), "{args:?}: {one}");
    for workers in [2, 3] {
        let mut threads = args.to_vec();
        threads.extend(strings(&["--workers", &workers.to_string()]));
        let (code, stderr) = run_one(&threads);
        assert_eq!(code, Some(2), "{workers} threads, {args:?}: {stderr}");
        assert_eq!(stderr, one, "{workers} threads, {args:?}");
    }
    for processes in [2, 3] {
        for (process, (code, stderr)) in outcomes(dir, args, processes).into_iter().enumerate() {
            assert_eq!(code, Some(2), "process {process} of {processes}: {stderr}");
            assert_eq!(stderr, one, "process {process} of {processes}, {args:?}");
        }
    }
}

#[test]
fn bad_rows_in_any_workers_share_stop_every_layout_with_the_one_worker_error() {
    let (dir, data) = data_in_tempdir(3000);
    // Keyed epochs of 300 rows are read in chunks of 256 rows from each epoch's first row,
    // dealt to the processes in turn and claimed by the workers of a process as they reach
    // them: on 2 processes, data row 880 (chunk 5, rows 857 to 900) is read by process 1
    // only, row 1,000 (chunk 6, rows 901 to 1,156) by process 0 only; on 2 threads, each by
    // whichever worker claims its chunk. k-means chunks of 100 in batches of 500: row 1,650
    // (chunk 1 of rows 1,501 to 2,000) by worker 1 only, row 1,750 (chunk 2) by worker 0 only.
    for (args_of, early, late) in [
        (
            (|data: &Path| keyed_args(data, 300)) as fn(&Path) -> Vec<String>,
            880,
            1000,
        ),
        (kmeans_args, 1650, 1750),
    ] {
        let cases: [(&str, Changes<'_>, String); 5] = [
            // Two bad rows: the earlier one, in worker 1's share, is the error, though
            // worker 0 met the later one (each worker used to report its own).
            (
                "two",
                vec![(early, b"k1,1.0,bad"), (late, b"k1,1.0,oops")],
                format!("input row {early}: column 'y': 'bad' is not a number"),
            ),
            // A row of another width, passed over by worker 0 (which does not check it) and
            // read by worker 1.
            (
                "width",
                vec![(early, b"k1,1.0"), (late, b"k1,1.0,oops")],
                format!(
                    "input row {early}: CSV error: record {early} (line: {}, byte: ",
                    early + 1
                ),
            ),
            // Not UTF-8.
            (
                "utf8",
                vec![(early, b"k1,1.0,\xff2")],
                format!(
                    "input row {early}: CSV parse error: record {early} (line {}, field: 2, ",
                    early + 1
                ),
            ),
            // A quoted key holding a line end, in worker 1's share, then a bad row in
            // worker 0's: the lines and bytes counted past the quoted record are right.
            (
                "quoted",
                vec![(early, b"\"k\n1\",1.0,2.0"), (late, b"k1,1.0")],
                format!(
                    "input row {late}: CSV error: record {late} (line: {}, byte: ",
                    late + 2
                ),
            ),
            // An empty line and a line holding a space (a record of one field); `csv` gives
            // a record the position from before the empty lines that precede it.
            (
                "blank",
                vec![(late - 1, b"k1,1.0,2.0\n"), (late, b" ")],
                format!(
                    "input row {late}: CSV error: record {late} (line: {}, byte: ",
                    late + 1
                ),
            ),
        ];
        for (name, changes, expected) in cases {
            for (end, ends) in [("lf", &b"\n"[..]), ("crlf", b"\r\n"), ("cr", b"\r")] {
                let file = format!("{name}-{end}.csv");
                let path = rewritten(dir.path(), &data, &file, &changes, ends);
                let expected = match end {
                    // `csv` counts lines by `\n`; a CRLF record's position is before its
                    // `\n`: only a record's own line end tells, the rows are the same.
                    "lf" => expected.clone(),
                    _ => expected.split(" (line").next().unwrap().to_string(),
                };
                assert_every_layout_stops_as_one_worker(dir.path(), &args_of(&path), &expected);
            }
        }
    }
}

/// Line ends of every kind, empty lines, quoted fields holding line ends and delimiters,
/// and a byte-order mark: every layout writes the one-worker run's files, which are those
/// of the same rows written plainly.
#[test]
fn every_line_end_and_quoting_gives_the_rows_of_the_plain_file() {
    let (dir, data) = data_in_tempdir(3000);
    let args_of = |data: &Path| -> [Vec<String>; 2] { [keyed_args(data, 300), kmeans_args(data)] };
    let plain: Vec<(String, String)> = args_of(&data)
        .iter()
        .map(|args| cluster(dir.path(), "plain", args, 1, 1))
        .collect();
    // Quoted numbers and a quoted key holding a delimiter (rows the same as plain ones).
    let text = fs::read_to_string(&data).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let quote = |row: usize| {
        let fields: Vec<&str> = lines[row].split(',').collect();
        format!("\"{}\",\"{}\",{}", fields[0], fields[1], fields[2])
    };
    let (q1, q2, q3) = (quote(7), quote(1001), quote(1651));
    let changes: Vec<(usize, &[u8])> = vec![
        (7, q1.as_bytes()),
        (1001, q2.as_bytes()),
        (1651, q3.as_bytes()),
    ];
    for (name, ends) in [
        ("crlf", &b"\r\n"[..]),
        ("cr", b"\r"),
        ("blank-lines", b"\n\n\r\n"),
        ("lf", b"\n"),
    ] {
        let path = rewritten(dir.path(), &data, &format!("{name}.csv"), &changes, ends);
        for (args, expected) in args_of(&path).iter().zip(&plain) {
            let one = cluster(dir.path(), &format!("{name}-one"), args, 1, 1);
            assert!(
                one == *expected,
                "{name}: differs from the plain file's, {args:?}"
            );
            assert_clusters_write(
                dir.path(),
                args,
                &[(1, 2), (1, 3), (2, 1)],
                (&one.0, &one.1),
            );
        }
    }
    // A byte-order mark before the header.
    let mut bytes = b"\xef\xbb\xbf".to_vec();
    bytes.extend(fs::read(&data).unwrap());
    let marked = dir.path().join("bom.csv");
    fs::write(&marked, bytes).unwrap();
    for (args, expected) in args_of(&marked).iter().zip(&plain) {
        assert_clusters_write(
            dir.path(),
            args,
            &[(1, 1), (1, 2)],
            (&expected.0, &expected.1),
        );
    }
}

#[test]
fn a_restart_with_another_number_of_workers_is_refused() {
    let (dir, data) = data_in_tempdir(2000);
    let checkpoints = dir.path().join("checkpoints");
    let mut args = keyed_args(&data, 200);
    args.extend(strings(&[
        "--checkpoint-dir",
        checkpoints.to_str().unwrap(),
    ]));
    // Two workers write their checkpoints, then a one-worker and a three-worker run are
    // pointed at them.
    cluster(dir.path(), "two", &args, 1, 2);
    for (processes, workers) in [(1, 1), (1, 3)] {
        let mut again = args.clone();
        again.extend(strings(&["--workers", &workers.to_string()]));
        let (code, stderr) = run_one(&again);
        assert_eq!(code, Some(2), "{processes} x {workers}: {stderr}");
        assert!(
            stderr.contains("checkpoints of a run on 2 workers in all, and this run has"),
            "{stderr}"
        );
    }
}

// The streaming commands' scale-out options: `pacstream kmeans --online --workers` and
// `pacstream experts --key --workers` run the code of `pacstream dataflow` and write the
// files of their one-process run.

/// Runs one process with its standard output captured; returns (exit code, stdout, stderr).
fn run_captured(args: &[String]) -> (Option<i32>, String, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("{args:?} did not finish within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let output = child.wait_with_output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `base` run as one process with no scale-out option, writing `name`.jsonl and
/// `name`.json; returns (records, summary, report).
fn one_process(dir: &Path, name: &str, base: &[String]) -> (String, String, String) {
    let records = dir.join(format!("{name}.jsonl"));
    let summary = dir.join(format!("{name}.json"));
    let mut args = base.to_vec();
    args.extend(strings(&[
        "--output",
        records.to_str().unwrap(),
        "--summary",
        summary.to_str().unwrap(),
    ]));
    let (code, stdout, stderr) = run_captured(&args);
    assert_eq!(code, Some(0), "{stderr}");
    (
        fs::read_to_string(records).unwrap(),
        fs::read_to_string(summary).unwrap(),
        stdout,
    )
}

/// `pacstream kmeans --online` with the settings of [`kmeans_args`], on one process.
fn online_kmeans_args(data: &Path) -> Vec<String> {
    kmeans_command(&["kmeans", "--online"], data, &["--decay", "2000"])
}

#[test]
fn online_kmeans_on_workers_and_processes_writes_the_one_process_files() {
    let (dir, data) = data_in_tempdir(6000);
    let args = online_kmeans_args(&data);
    let (records, summary, report) = one_process(dir.path(), "one", &args);
    assert_eq!(records.lines().count(), 6000);
    let layouts = [(1, 3), (2, 2), (3, 1)];
    assert_clusters_write(dir.path(), &args, &layouts, (&records, &summary));
    // The report, too (on processes: see the test of `--summary -` on a cluster).
    let mut threads = args.clone();
    threads.extend(strings(&["--workers", "2"]));
    let (code, stdout, stderr) = run_captured(&threads);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout == report,
        "the report differs:\n{stdout}\n---\n{report}"
    );
}

#[test]
fn online_kmeans_by_chunks_is_the_same_on_one_process_and_on_a_cluster() {
    let (dir, data) = data_in_tempdir(6000);
    let mut args = online_kmeans_args(&data);
    let (whole_batches, ..) = one_process(dir.path(), "whole", &args);
    args.extend(strings(&["--chunk-size", "100"]));
    let (records, summary, _) = one_process(dir.path(), "one", &args);
    // Sums grouped by chunks of 100 rows round differently from one pass over the batch:
    // on this stream the centres, and so later losses, differ in their last bits.
    assert!(records != whole_batches, "--chunk-size changed nothing");
    assert!(summary.contains("\"chunk_size\": 100"), "{summary}");
    assert_clusters_write(dir.path(), &args, &[(2, 1), (3, 2)], (&records, &summary));
}

/// `--summary -` on a cluster: process 0 writes to its standard output the bytes the
/// one-process run writes to its own (the report where the command prints one, and the
/// summary), and the other process writes nothing there: the processes connect without
/// printing anything.
#[test]
fn the_summary_on_the_standard_output_of_a_cluster_is_the_one_process_runs() {
    let dir = tempfile::tempdir().unwrap();
    let experts_data = dir.path().join("experts.csv");
    write_expert_data(&experts_data, 3000);
    let kmeans_data = dir.path().join("data.csv");
    write_data(&kmeans_data, 6000);
    for base in [
        keyed_experts_args(&experts_data),
        online_kmeans_args(&kmeans_data),
    ] {
        let mut args = base;
        args.extend(strings(&["--summary", "-"]));
        let (code, expected, stderr) = run_captured(&args);
        assert_eq!(code, Some(0), "{stderr}");
        assert!(expected.contains("\"settings\""), "{expected}");
        let hosts = hostfile(dir.path(), 2);
        // Files, not pipes: a pipe left unread would stall a process writing a long summary.
        let stdouts: Vec<PathBuf> = (0..2)
            .map(|process| dir.path().join(format!("stdout-{process}")))
            .collect();
        let children = (0..2)
            .map(|process| {
                let mut all = args.clone();
                all.extend(strings(&["--processes", "2", "--process"]));
                all.extend(strings(&[&process.to_string(), "--hostfile"]));
                all.push(hosts.to_str().unwrap().to_string());
                Command::new(BIN)
                    .args(&all)
                    .stdout(fs::File::create(&stdouts[process]).unwrap())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        wait_all(children);
        let first = fs::read_to_string(&stdouts[0]).unwrap();
        assert!(
            first == expected,
            "{args:?}: process 0 wrote\n{first}\n---\nthe one-process run\n{expected}"
        );
        assert_eq!(fs::read_to_string(&stdouts[1]).unwrap(), "", "{args:?}");
    }
}

/// A keyed stream of three experts' forecasts and the outcome, one key ("hot") holding
/// half of the rows.
fn write_expert_data(path: &Path, n: usize) {
    let mut rng = pacstream::StreamRng::seed_from(987_654_321);
    let mut uniform = move || rng.next_f64();
    // The key is not the first column, so that a reader taking column 1 as the key fails.
    let mut text = String::from("a,site,b,c,y\n");
    for i in 0..n {
        let key = if i % 2 == 0 {
            "hot".to_string()
        } else {
            format!("s{}", (i * 7919) % 13)
        };
        let y = uniform();
        let (a, b, c) = (y + 0.1 * uniform(), 0.5, uniform());
        text += &format!("{a:.6},{key},{b:.6},{c:.6},{y:.6}\n");
    }
    fs::write(path, text).unwrap();
}

fn keyed_experts_args(data: &Path) -> Vec<String> {
    let mut args = strings(&["experts", data.to_str().unwrap(), "--rule", "ewa"]);
    args.extend(strings(&["--outcome", "y", "--key", "site"]));
    args
}

#[test]
fn keyed_experts_on_workers_and_processes_write_the_one_process_files() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("experts.csv");
    write_expert_data(&data, 3000);
    let args = keyed_experts_args(&data);
    let (records, summary, _) = one_process(dir.path(), "one", &args);
    assert_eq!(records.lines().count(), 3000);
    let layouts = [(1, 2), (3, 1), (2, 2)];
    assert_clusters_write(dir.path(), &args, &layouts, (&records, &summary));
}

/// Each key's records and summary are those `pacstream experts` writes on the key's rows
/// alone: the records byte for byte after the key, the summary field for field except the
/// file's name and column numbers. Two rules: EWA (a prediction, no bound without a loss
/// range) and Hedge with a fixed rate, a loss range and a sampled expert (a bound, a chosen
/// expert and its realised loss in every record).
#[test]
fn each_keys_records_and_summary_are_those_of_the_command_on_its_rows_alone() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("experts.csv");
    write_expert_data(&data, 3000);
    let text = fs::read_to_string(&data).unwrap();
    let rules: [&[&str]; 2] = [
        &["--rule", "ewa"],
        &[
            "--rule",
            "hedge",
            "--eta",
            "2",
            "--loss-bound",
            "1",
            "--sample",
        ],
    ];
    for (r, rule) in rules.into_iter().enumerate() {
        let mut args = strings(&["experts", data.to_str().unwrap(), "--outcome", "y"]);
        args.extend(strings(rule));
        let mut keyed_args = args.clone();
        keyed_args.extend(strings(&["--key", "site", "--workers", "2"]));
        let (records, summary, _) = one_process(dir.path(), &format!("keyed-{r}"), &keyed_args);
        let summaries: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&summary).unwrap();
        assert_eq!(summaries.len(), 14);
        for key in ["hot", "s3"] {
            let rows: String = text
                .lines()
                .skip(1)
                .map(|line| line.split(',').collect::<Vec<_>>())
                .filter(|fields| fields[1] == key)
                .map(|fields| format!("{},{}\n", fields[0], fields[2..].join(",")))
                .collect();
            let alone = dir.path().join(format!("{key}.csv"));
            fs::write(&alone, format!("a,b,c,y\n{rows}")).unwrap();
            let mut single = strings(&["experts", alone.to_str().unwrap(), "--outcome", "y"]);
            single.extend(strings(rule));
            single.push("--quiet".into());
            let (mine, theirs, _) = one_process(dir.path(), &format!("{key}-{r}"), &single);
            let keyed: Vec<&str> = records
                .lines()
                .filter(|l| l.starts_with(&format!("{{\"key\":\"{key}\",")))
                .collect();
            let alone: Vec<String> = mine
                .lines()
                .map(|l| format!("{{\"key\":\"{key}\",{}", &l[1..]))
                .collect();
            assert_eq!(keyed.len(), alone.len(), "{key}");
            assert!(keyed.len() > 50, "{key}");
            for (k, a) in keyed.iter().zip(&alone) {
                assert_eq!(k, a, "{rule:?}, {key}");
            }
            let last: serde_json::Value =
                serde_json::from_str(mine.lines().last().unwrap()).unwrap();
            if r == 1 {
                for field in ["regret_bound", "chosen", "realised_loss"] {
                    assert!(!last[field].is_null(), "{field}: {last}");
                }
            }
            let theirs: serde_json::Value = serde_json::from_str(&theirs).unwrap();
            let mut expected = theirs.clone();
            expected["input"]["source"] = data.to_str().unwrap().into();
            expected["settings"]["columns"] = serde_json::json!([5, 1, 3, 4]);
            assert_eq!(summaries[key], expected, "{rule:?}, summary of {key}");
        }
    }
}

/// Runs `args` and checks that it exits with code 2, says `message`, and leaves the
/// directory as it was (no output, no summary, nothing else).
fn refused_writing_nothing(dir: &Path, args: &[String], message: &str) {
    let before: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let (code, _, stderr) = run_captured(args);
    assert_eq!(code, Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(message), "{args:?}: {stderr}");
    let after: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(before.len(), after.len(), "{args:?} wrote {after:?}");
}

#[test]
fn scale_out_options_that_would_change_the_output_are_refused_writing_nothing() {
    let (dir, data) = data_in_tempdir(600);
    let dir = dir.path();
    let hosts = hostfile(dir, 2);
    let out = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let files = strings(&["--output", &out("r.jsonl"), "--summary", &out("s.json")]);
    let data_arg = data.to_str().unwrap();
    let kmeans = |extra: &str| {
        let mut args = strings(&["kmeans", data_arg, "--columns", "x,y", "--k", "3"]);
        args.extend(extra.split_whitespace().map(str::to_string));
        args.extend(files.clone());
        args
    };
    let cases: Vec<(String, &str)> = vec![
        ("--workers 2".into(), "apply to --online --batch-size runs"),
        ("--online --workers 2".into(), "give --batch-size B"),
        ("--online --chunk-size 10".into(), "--batch-size"),
        (
            "--online --batch-size 100 --workers 2 --sample-weights x".into(),
            "--sample-weights is not available",
        ),
        (
            format!(
                "--online --batch-size 100 --workers 2 --plot {}",
                out("f.svg")
            ),
            "--plot draws a sample",
        ),
        (
            format!(
                "--online --batch-size 100 --workers 2 --checkpoint {}",
                out("c")
            ),
            "--checkpoint and --resume",
        ),
        (
            "--online --batch-size 100 --workers 2 --on-bad-row skip".into(),
            "--on-bad-row skip is not available",
        ),
        (
            "--online --batch-size 100 --workers 2 --format csv".into(),
            "JSON lines, not csv",
        ),
        (
            "--online --batch-size 100 --workers 0".into(),
            "--workers must be between 1 and 256",
        ),
        (
            "--online --batch-size 100 --workers 100000".into(),
            "--workers must be between 1 and 256",
        ),
        (
            "--online --batch-size 100 --processes 2".into(),
            "--processes above 1 needs --hostfile",
        ),
        (
            "--online --batch-size 100 --processes 5000".into(),
            "--processes must be between 1 and 1024",
        ),
        (
            format!(
                "--online --batch-size 100 --processes 3 --hostfile {}",
                hosts.display()
            ),
            "names 2 hosts for 3 processes",
        ),
        (
            "--online --batch-size 100 --chunk-size 0".into(),
            "0 is not in 1..=1000000",
        ),
        (
            "--online --batch-size 100 --chunk-size 2000000".into(),
            "2000000 is not in 1..=1000000",
        ),
        (
            "--online --batch-size 100 --workers 2 --reassignment-ratio 0.1".into(),
            "reassignment of dying centres is not available",
        ),
    ];
    for (extra, message) in &cases {
        refused_writing_nothing(dir, &kmeans(extra), message);
    }
    // Standard input, and records on stdout.
    let mut stdin = strings(&["kmeans", "-", "--online", "--batch-size", "100"]);
    stdin.extend(strings(&["--k", "3", "--workers", "2"]));
    refused_writing_nothing(dir, &stdin, "not standard input");
    let mut records_out = strings(&["kmeans", data_arg, "--online", "--k", "3"]);
    records_out.extend(strings(&[
        "--batch-size",
        "100",
        "--workers",
        "2",
        "-o",
        "-",
    ]));
    refused_writing_nothing(dir, &records_out, "--output - is not available");

    let experts_data = dir.join("experts.csv");
    write_expert_data(&experts_data, 50);
    let experts = |extra: &str| {
        let mut args = strings(&["experts", experts_data.to_str().unwrap(), "--rule", "ewa"]);
        args.extend(extra.split_whitespace().map(str::to_string));
        args.extend(files.clone());
        args
    };
    let plot = format!("--outcome y --key site --plot-loss {}", out("l.svg"));
    for (extra, message) in [
        // Refused by the argument parser: the workers share out keys.
        ("--outcome y --workers 2", "--key <COL>"),
        (
            "--losses --key site --workers 2",
            "--losses is not available",
        ),
        (
            "--outcome y --key site --weights",
            "--weights is not available",
        ),
        (plot.as_str(), "--plot-loss and --plot-contributions"),
        (
            "--outcome site --key site",
            "--outcome and --key name the same",
        ),
        (
            "--outcome y --experts a,site --key site",
            "is the --key column",
        ),
        (
            "--outcome y --key site --workers 300",
            "--workers must be between",
        ),
    ] {
        refused_writing_nothing(dir, &experts(extra), message);
    }
    let masked = dir.join("masked.csv");
    fs::write(&masked, "site,a,b,a_awake,y\nu,1,2,1,1.5\nv,1,2,0,1.5\n").unwrap();
    let mut args = strings(&["experts", masked.to_str().unwrap(), "--rule", "ewa"]);
    args.extend(strings(&["--outcome", "y", "--key", "site"]));
    args.extend(files.clone());
    refused_writing_nothing(dir, &args, "sleeping experts");
}

/// A keyed summary written into a file while the workers print it is the document printed
/// whole on the standard output (a stream is never replaced, so it gets the document only
/// once the run has succeeded), on 1 and 2 workers. A run that stops at a bad row leaves a
/// summary file as it was, and no temporary file beside it.
#[test]
fn a_keyed_summary_written_as_printed_is_the_whole_document_and_a_failed_run_keeps_the_old() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("experts.csv");
    write_expert_data(&data, 3000);
    let summary = dir.path().join("summary.json");
    let summary_arg = summary.to_str().unwrap();
    let mut whole = keyed_experts_args(&data);
    whole.extend(strings(&["--summary", "-"]));
    let (code, expected, stderr) = run_captured(&whole);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(expected.starts_with("{\n  \"hot\": {"), "{expected}");
    for workers in ["1", "2"] {
        let mut args = keyed_experts_args(&data);
        args.extend(strings(&["--workers", workers, "--summary", summary_arg]));
        let (code, _, stderr) = run_captured(&args);
        assert_eq!(code, Some(0), "{stderr}");
        let written = fs::read_to_string(&summary).unwrap();
        assert!(
            written == expected,
            "{workers} workers:\n{written}\n---\n{expected}"
        );
    }

    // A bad row near the end of the stream: the run stops before its summary.
    let bad = dir.path().join("bad.csv");
    let text = fs::read_to_string(&data).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2900] = "0.5,hot,oops,0.5,0.5";
    fs::write(&bad, lines.join("\n") + "\n").unwrap();
    fs::write(&summary, "the previous summary").unwrap();
    for workers in ["1", "2"] {
        let mut args = keyed_experts_args(&bad);
        args.extend(strings(&["--workers", workers, "--summary", summary_arg]));
        let (code, _, stderr) = run_captured(&args);
        assert_eq!(code, Some(2), "{workers} workers: {stderr}");
        assert!(stderr.contains("row 2900"), "{workers} workers: {stderr}");
        assert_eq!(
            fs::read_to_string(&summary).unwrap(),
            "the previous summary"
        );
        let left: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{workers} workers left {left:?}");
    }
}
