//! Writing never destroys what it should not: a device, FIFO or symlink named as an output
//! is written through (its target for a symlink), never replaced; an output that is an input
//! under another name (a hard link, a symlink, standard input redirected from it, the curve
//! of `project`) is refused before anything is written.
//!
//! Device nodes, FIFOs and symlinks are made in each test's temporary folder, never taken
//! from the system's /dev. Creating a device node needs root: without it, the device tests
//! say so and skip.

#![cfg(unix)]

mod common;

use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{data, fit_quakes_curve, make_fifo, pacstream, refused, run, run_line, run_ok, write};

/// Makes a character device node `major:minor` at `path`; `false` (and a note) when this
/// user cannot.
#[allow(clippy::print_stderr, reason = "a skipped check says so")]
fn make_device(path: &Path, major: u32, minor: u32) -> bool {
    let made = Command::new("mknod")
        .arg(path)
        .arg("c")
        .arg(major.to_string())
        .arg(minor.to_string())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!(
            "skipping the device part of this test: cannot create a device node here (mknod \
             needs root)"
        );
    }
    made
}

fn is_char_device(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_char_device())
}

fn faithful(dir: &Path) -> String {
    let text = std::fs::read_to_string(data("faithful.csv")).expect("faithful");
    write(dir, "a.csv", &text);
    text
}

#[test]
fn a_device_named_as_an_output_is_written_through() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    faithful(dir);
    // A full device (like /dev/full): the write fails, the device stays a device.
    if make_device(&dir.join("full"), 1, 7) {
        let outcome = run_line(dir, "kmeans --k 2 a.csv -q --summary full");
        assert_eq!(outcome.code, 1, "{outcome:?}");
        assert!(
            outcome
                .stderr
                .contains("cannot write to 'full': No space left on device"),
            "{}",
            outcome.stderr
        );
        assert!(is_char_device(&dir.join("full")), "the device was replaced");
        // A checkpoint is replaced atomically at every save: a device is refused.
        let outcome = run_line(dir, "kmeans --k 2 --online a.csv --checkpoint full");
        refused(&outcome, "is not a regular file");
        assert!(is_char_device(&dir.join("full")));
    }
    // A null device (like /dev/null) takes every output, several at once.
    if make_device(&dir.join("null"), 1, 3) {
        run_ok(dir, "kmeans --k 2 --online a.csv -q --summary null -o null");
        assert!(is_char_device(&dir.join("null")), "the device was replaced");
    }
}

#[test]
fn a_symlink_named_as_an_output_has_its_target_written() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    faithful(dir);
    write(dir, "target.json", "old");
    std::os::unix::fs::symlink("target.json", dir.join("link.json")).expect("a symlink");
    // A link to a file that does not exist yet: the file is created.
    std::os::unix::fs::symlink("new.svg", dir.join("dangling.svg")).expect("a symlink");
    std::os::unix::fs::symlink("ck-target.json", dir.join("ck.json")).expect("a symlink");
    run_ok(
        dir,
        "kmeans --k 2 --online a.csv -q --summary link.json --plot dangling.svg --checkpoint ck.json --checkpoint-every 50",
    );
    for (link, target) in [
        ("link.json", "target.json"),
        ("dangling.svg", "new.svg"),
        ("ck.json", "ck-target.json"),
    ] {
        let metadata = std::fs::symlink_metadata(dir.join(link)).expect("the link");
        assert!(metadata.file_type().is_symlink(), "{link} was replaced");
        assert!(
            std::fs::read(dir.join(target)).expect("the target").len() > 10,
            "{target} was not written"
        );
    }
    assert!(
        std::fs::read_to_string(dir.join("target.json"))
            .expect("summary")
            .contains("\"command\": \"kmeans\"")
    );
    // The checkpoint behind the link resumes.
    run_ok(
        dir,
        "kmeans --k 2 --online a.csv -q --plot dangling.svg --resume ck.json --checkpoint ck.json",
    );
    assert!(
        std::fs::symlink_metadata(dir.join("ck.json"))
            .expect("link")
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_fifo_named_as_an_output_is_written_through() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    faithful(dir);
    let fifo = dir.join("pipe");
    make_fifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).expect("the FIFO is read"))
    };
    run_ok(dir, "kmeans --k 2 a.csv -q --summary pipe");
    // Checked before the reader is joined: a replaced FIFO would leave it waiting forever.
    assert!(
        std::fs::symlink_metadata(&fifo)
            .expect("the FIFO")
            .file_type()
            .is_fifo(),
        "the FIFO was replaced"
    );
    let received = reader.join().expect("the reader ends");
    assert!(received.contains("\"command\": \"kmeans\""), "{received}");
    // A FIFO is refused as a checkpoint (before anything is read from it or written).
    let outcome = run_line(dir, "kmeans --k 2 --online a.csv --checkpoint pipe");
    refused(&outcome, "is not a regular file");
}

#[test]
fn an_input_is_never_an_output_under_another_name() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    let text = faithful(dir);
    std::fs::hard_link(dir.join("a.csv"), dir.join("b.csv")).expect("a hard link");
    std::os::unix::fs::symlink("a.csv", dir.join("s.csv")).expect("a symlink");
    std::os::unix::fs::symlink("a.csv", dir.join("s.svg")).expect("a symlink");
    std::fs::create_dir(dir.join("sub")).expect("a folder");
    for args in [
        "kmeans --k 2 --online a.csv -o b.csv",
        "kmeans --k 2 a.csv --summary s.csv",
        "kmeans --k 2 a.csv --summary sub/../b.csv",
        "kmeans --k 2 --online a.csv --checkpoint b.csv",
        "kmeans --k 2 --online a.csv --resume b.csv",
        "paco a.csv --plot-k s.svg",
    ] {
        refused(&run_line(dir, args), "are the same file");
        assert_eq!(
            std::fs::read_to_string(dir.join("a.csv")).expect("input"),
            text,
            "{args:?} changed the input"
        );
    }
}

#[test]
fn standard_input_redirected_from_an_output_is_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    let text = faithful(dir);
    let input = std::fs::File::open(dir.join("a.csv")).expect("the input");
    let output = pacstream()
        .args(["kmeans", "--k", "2", "--online", "-", "-o", "a.csv"])
        .current_dir(dir)
        .stdin(input)
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--output and the input (standard input) are the same file 'a.csv'"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("a.csv")).expect("input"),
        text
    );
    // From another file, the same run is fine.
    let input = std::fs::File::open(dir.join("a.csv")).expect("the input");
    let output = pacstream()
        .args(["kmeans", "--k", "2", "--online", "-", "-o", "out.csv", "-q"])
        .current_dir(dir)
        .stdin(input)
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn project_never_overwrites_its_curve() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir = dir.path();
    let quakes = fit_quakes_curve(dir, "c.json");
    let quakes = quakes.as_str();
    let curve = std::fs::read(dir.join("c.json")).expect("the curve");
    std::fs::hard_link(dir.join("c.json"), dir.join("d.json")).expect("a hard link");
    for output in ["c.json", "d.json"] {
        for flag in ["-o", "--summary"] {
            let outcome = run(dir, &["project", "--curve", "c.json", quakes, flag, output]);
            refused(
                &outcome,
                &format!("and --curve are the same file '{output}'"),
            );
        }
    }
    assert_eq!(std::fs::read(dir.join("c.json")).expect("the curve"), curve);
}
