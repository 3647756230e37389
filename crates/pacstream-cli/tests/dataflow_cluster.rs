//! `pacstream dataflow` as a real cluster: 2, 3 and 4 processes on 127.0.0.1 started by the
//! test, each bounded in time, against the one-process run; a process killed with SIGKILL
//! mid-stream and the cluster restarted from its epoch checkpoints.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_pacstream");
/// No process of these tests may run longer than this.
const LIMIT: Duration = Duration::from_secs(60);

/// A reproducible stream of 2-d points around four centres, with a key column in which
/// one key ("hot") holds half of the rows.
fn write_data(path: &Path, n: usize) {
    let mut state: u64 = 12_345;
    let mut uniform = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
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
fn hostfile(dir: &Path, processes: usize) -> PathBuf {
    let listeners: Vec<TcpListener> = (0..processes)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let lines: String = listeners
        .iter()
        .map(|l| format!("{}\n", l.local_addr().unwrap()))
        .collect();
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

fn kmeans_args(data: &Path) -> Vec<String> {
    strings(&[
        "dataflow",
        "kmeans",
        data.to_str().unwrap(),
        "--columns",
        "x,y",
        "--k",
        "4",
        "--batch-size",
        "500",
        "--chunk-size",
        "100",
        "--decay",
        "2000",
    ])
}

#[test]
fn data_parallel_kmeans_on_2_3_and_4_processes_equals_one_process() {
    let (dir, data) = data_in_tempdir(6000);
    let args = kmeans_args(&data);
    let (records, summary) = cluster(dir.path(), "one", &args, 1, 1);
    assert_eq!(records.lines().count(), 6000);
    for (processes, workers) in [(2, 1), (3, 1), (4, 1), (2, 2)] {
        let name = format!("p{processes}w{workers}");
        let (r, s) = cluster(dir.path(), &name, &args, processes, workers);
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

#[test]
fn data_parallel_kmeans_with_whole_batches_equals_the_one_process_command() {
    let (dir, data) = data_in_tempdir(3000);
    let single = dir.path().join("single.jsonl");
    let (code, stderr) = run_one(&strings(&[
        "kmeans",
        "--online",
        "--k",
        "4",
        "--batch-size",
        "500",
        "--columns",
        "x,y",
        "--output",
        single.to_str().unwrap(),
        data.to_str().unwrap(),
    ]));
    assert_eq!(code, Some(0), "{stderr}");
    let args = strings(&[
        "dataflow",
        "kmeans",
        data.to_str().unwrap(),
        "--columns",
        "x,y",
        "--k",
        "4",
        "--batch-size",
        "500",
        "--chunk-size",
        "500",
    ]);
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
    let (r, s) = cluster(dir.path(), "p3", &args, 3, 1);
    assert!(r == records, "records differ on 3 processes");
    assert!(s == summary, "summaries differ on 3 processes");
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
        (vec!["--output", data.to_str().unwrap()], "is the input"),
    ] {
        let mut args = base.clone();
        args.extend(strings(&extra));
        let (code, stderr) = run_one(&args);
        assert_eq!(code, Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(message), "{extra:?}: {stderr}");
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
    // 1,501 to 1,800), which only worker 1 of 2 parses.
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
