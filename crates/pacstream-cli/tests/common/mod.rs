//! Helpers shared by the integration tests: run the real binary, make input files.

#![allow(
    dead_code,
    reason = "each test file uses a different part of these helpers"
)]

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The `pacstream` binary built by cargo for these tests.
pub fn pacstream() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pacstream"))
}

/// What a finished run left.
#[derive(Debug)]
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `pacstream args...` in `dir` and waits for it.
pub fn run<S: AsRef<OsStr> + std::fmt::Debug>(dir: &Path, args: &[S]) -> Outcome {
    run_with_stdin(dir, args, None)
}

/// The arguments written in `line`, split at white space, each word `@NAME` replaced by the
/// path of the shipped data file `NAME` (so that a command reads as it would be typed).
pub fn words(line: &str) -> Vec<String> {
    line.split_whitespace()
        .map(|word| match word.strip_prefix('@') {
            Some(name) => data_arg(name),
            None => word.to_string(),
        })
        .collect()
}

/// Runs `pacstream` with the arguments written in `line` (see [`words`]) in `dir`.
pub fn run_line(dir: &Path, line: &str) -> Outcome {
    run(dir, &words(line))
}

/// [`run_line`], asserting that the run succeeded (exit code 0).
pub fn run_ok(dir: &Path, line: &str) -> Outcome {
    let outcome = run_line(dir, line);
    assert_eq!(outcome.code, 0, "{outcome:?}");
    outcome
}

/// The longest any single run may take in the tests: a run that hangs fails the test
/// instead of hanging the suite.
pub const RUN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs `pacstream args...` in `dir` with `stdin` piped in.
pub fn run_with_stdin<S: AsRef<OsStr> + std::fmt::Debug>(
    dir: &Path,
    args: &[S],
    stdin: Option<&[u8]>,
) -> Outcome {
    run_within(dir, args, stdin, RUN_DEADLINE)
}

/// [`run_with_stdin`], failing the test if the run takes longer than `deadline` (a hang).
pub fn run_within<S: AsRef<OsStr> + std::fmt::Debug>(
    dir: &Path,
    args: &[S],
    stdin: Option<&[u8]>,
    deadline: std::time::Duration,
) -> Outcome {
    let mut child = pacstream()
        .args(args)
        .current_dir(dir)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    // Drain both pipes on their own threads so that a chatty child never blocks.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().expect("stdin is piped");
        // The binary may stop reading early (an error on the first rows): ignore EPIPE.
        let _ = pipe.write_all(bytes);
    }
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child can be polled") {
            break status;
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("pacstream {args:?} did not finish within {deadline:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    let outcome = Outcome {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout.join().expect("stdout drained")).into_owned(),
        stderr: String::from_utf8_lossy(&stderr.join().expect("stderr drained")).into_owned(),
    };
    assert!(
        !outcome.stderr.contains("panicked"),
        "the binary panicked on {args:?}: {}",
        outcome.stderr
    );
    outcome
}

/// A file of the project's `data/` folder.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data")
        .join(name)
}

/// Writes `bytes` to `dir/name`; returns the path.
pub fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("the test file is written");
    path
}

/// A small deterministic generator (xorshift64*), so tests need no extra dependency.
#[derive(Debug, Clone)]
pub struct TestRng(u64);

impl TestRng {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in 0..n.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// CSV text of `rows` points in `dim` dimensions around four well-separated centres, with a
/// header `x1,...,xd` (and a `w` weight column when `weights`).
pub fn blobs_csv(rows: usize, dim: usize, seed: u64, weights: bool) -> String {
    let mut rng = TestRng::new(seed);
    let mut text = String::with_capacity(rows * dim * 12);
    let names: Vec<String> = (1..=dim).map(|j| format!("x{j}")).collect();
    text.push_str(&names.join(","));
    if weights {
        text.push_str(",w");
    }
    text.push('\n');
    for _ in 0..rows {
        let blob = rng.below(4);
        let fields: Vec<String> = (0..dim)
            .map(|j| {
                let centre = if (blob >> (j % 2)) & 1 == 1 {
                    10.0
                } else {
                    0.0
                };
                format!("{:.6}", centre + 2.0 * rng.next_f64() - 1.0)
            })
            .collect();
        text.push_str(&fields.join(","));
        if weights {
            text.push_str(&format!(",{:.3}", 0.5 + rng.next_f64()));
        }
        text.push('\n');
    }
    text
}

/// Asserts a usage or input error (exit code 2) whose message contains `message`.
pub fn refused(outcome: &Outcome, message: &str) {
    assert_eq!(outcome.code, 2, "{outcome:?}");
    assert!(
        outcome.stderr.contains(message),
        "expected {message:?} in: {}",
        outcome.stderr
    );
}

/// Makes a FIFO at `path`.
#[cfg(unix)]
pub fn make_fifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// The path of a shipped data set, as an argument.
pub fn data_arg(name: &str) -> String {
    data(name).to_str().expect("a UTF-8 path").to_string()
}

/// The JSON value in the file at `path`.
pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).expect("the file exists")).expect("valid JSON")
}

/// The figure at `path`, checked to be a whole SVG document.
pub fn read_svg(path: &Path) -> String {
    let svg = std::fs::read_to_string(path).expect("the figure exists");
    assert!(
        svg.starts_with("<svg"),
        "not an SVG: {}",
        &svg[..svg.len().min(80)]
    );
    assert!(svg.trim_end().ends_with("</svg>"));
    svg
}

/// Fits a principal curve to the shipped quakes (longitude, latitude) in `dir`, its summary
/// written to `summary`; returns the path of the quakes.
pub fn fit_quakes_curve(dir: &Path, summary: &str) -> String {
    run_ok(
        dir,
        &format!("curve --columns long,lat @quakes.csv -q --summary {summary}"),
    );
    data_arg("quakes.csv")
}
