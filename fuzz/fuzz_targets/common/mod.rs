#![allow(dead_code, reason = "each target uses a part of it")]

//! What the command-line fuzz targets share: a scratch directory with small inputs, and
//! running a command line in-process.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use clap::Parser;
use pacstream_cli::Cli;
use pacstream_cli::failure::{EXIT_FAILURE, exit_code};

/// The scratch directory of this fuzzing process, with its inputs written once.
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a scratch directory");
        let mut points = String::from("x,y,label\n");
        let mut experts = String::from("y,a,b,c,b_awake\n");
        for i in 0..30u32 {
            let t = f64::from(i);
            let group = i % 3;
            points.push_str(&format!(
                "{},{},{group}\n",
                f64::from(group) * 5.0 + (t * 0.37).sin(),
                (t * 0.11).cos() * 3.0 - f64::from(group)
            ));
            let y = i % 2;
            experts.push_str(&format!(
                "{y},{},{},{},{}\n",
                (i / 2) % 2,
                if i % 5 == 0 {
                    String::new()
                } else {
                    y.to_string()
                },
                (t * 0.3).sin(),
                u32::from(i % 7 != 0)
            ));
        }
        let few: String = points.lines().take(4).map(|l| format!("{l}\n")).collect();
        std::fs::write(dir.path().join("points.csv"), points).expect("written");
        std::fs::write(dir.path().join("few.csv"), few).expect("written");
        std::fs::write(dir.path().join("experts.csv"), experts).expect("written");
        let curve = dir.path().join("curve.json");
        let points = dir.path().join("points.csv");
        let args = [
            "pacstream",
            "curve",
            "--columns",
            "x,y",
            "-q",
            "--summary",
            curve.to_str().expect("UTF-8"),
            points.to_str().expect("UTF-8"),
        ];
        run_line(&args.map(String::from));
        dir
    })
    .path()
}

/// A file of the scratch directory, as an argument.
pub fn file(name: &str) -> String {
    scratch().join(name).to_string_lossy().into_owned()
}

/// A path of the scratch directory.
pub fn path(name: &str) -> PathBuf {
    scratch().join(name)
}

/// Parses and runs a command line in-process. A usage error or a refusal is fine; a panic
/// (the fuzzer sees it) or an internal failure (exit code 1) is a bug.
pub fn run_line(args: &[String]) {
    let Ok(cli) = Cli::try_parse_from(args) else {
        return;
    };
    if let Err(error) = pacstream_cli::run(&cli) {
        assert_ne!(
            exit_code(&error),
            EXIT_FAILURE,
            "an internal failure on {args:?}: {error:#}"
        );
    }
}
