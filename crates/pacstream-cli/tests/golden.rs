//! Golden runs: every command on the shipped data with fixed settings, its records,
//! summaries, checkpoints and figures compared byte for byte (length and SHA-256) with the
//! manifests recorded in `tests/golden/` (the cases are listed in `tests/golden/cases.txt`,
//! which says how to record them again). A refactoring must leave them all unchanged.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// The folder of the cases and their manifests.
fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The shipped data.
fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data")
}

/// The cases, each its steps (argument lists) in order.
fn cases() -> BTreeMap<String, Vec<Vec<String>>> {
    let text = std::fs::read_to_string(golden_dir().join("cases.txt")).expect("cases.txt");
    let mut cases: BTreeMap<String, Vec<Vec<String>>> = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, args) = line.split_once(':').expect("CASE: ARGS");
        cases
            .entry(name.trim().to_string())
            .or_default()
            .push(args.split_whitespace().map(str::to_string).collect());
    }
    cases
}

/// Runs one case in a fresh folder; returns the files it wrote (the data copies left out)
/// with their bytes.
fn run_case(binary: &Path, steps: &[Vec<String>]) -> BTreeMap<String, Vec<u8>> {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut data_files = Vec::new();
    for arg in steps.iter().flatten() {
        let source = data_dir().join(arg);
        if arg.ends_with(".csv") && source.is_file() && !data_files.contains(arg) {
            std::fs::copy(&source, dir.path().join(arg)).expect("a copy of the data");
            data_files.push(arg.clone());
        }
    }
    for args in steps {
        let output = Command::new(binary)
            .args(args)
            .current_dir(dir.path())
            .output()
            .expect("the binary runs");
        assert!(
            output.status.success(),
            "pacstream {}: {}\n{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let mut written = BTreeMap::new();
    for entry in std::fs::read_dir(dir.path()).expect("a readable folder") {
        let entry = entry.expect("an entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        if !data_files.contains(&name) {
            written.insert(name, std::fs::read(entry.path()).expect("a readable file"));
        }
    }
    written
}

/// `bytes` with every wall-clock time (the value of a JSON key ending in `seconds`) written
/// as 0, and, in a checkpoint holding one, its envelope checksum as zeros: everything else
/// is compared as written.
fn without_timings(bytes: &[u8]) -> Vec<u8> {
    const CHECKPOINT: &[u8] = b"{\"format\":\"pacstream-checkpoint\",\"version\":2,\"sha256\":\"";
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let mut timed = false;
    while i < bytes.len() {
        out.push(bytes[i]);
        i += 1;
        if out.ends_with(b"seconds\":") || out.ends_with(b"seconds\": ") {
            let start = i;
            while i < bytes.len()
                && matches!(bytes[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'-' | b'+')
            {
                i += 1;
            }
            if i > start {
                out.push(b'0');
                timed = true;
            }
        }
    }
    if timed && out.starts_with(CHECKPOINT) {
        for byte in &mut out[CHECKPOINT.len()..CHECKPOINT.len() + 64] {
            *byte = b'0';
        }
    }
    out
}

/// One line per file: its name, length and SHA-256 (timings left out).
fn manifest(files: &BTreeMap<String, Vec<u8>>) -> String {
    let mut text = String::new();
    for (name, bytes) in files {
        let bytes = &without_timings(bytes);
        let digest: String = Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let _ = writeln!(text, "{name} {} {digest}", bytes.len());
    }
    text
}

#[test]
fn every_command_writes_what_it_wrote_before() {
    let record = std::env::var("PACSTREAM_GOLDEN").is_ok_and(|mode| mode == "record");
    let keep = std::env::var_os("PACSTREAM_GOLDEN_KEEP").map(PathBuf::from);
    let binary = std::env::var_os("PACSTREAM_GOLDEN_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_pacstream")),
        PathBuf::from,
    );
    let cases = cases();
    for command in ["experts", "kmeans", "paco", "curve", "project"] {
        assert!(
            cases.values().flatten().any(|args| args[0] == command),
            "no golden run of {command}"
        );
    }
    let mut differences = Vec::new();
    for (name, steps) in &cases {
        let written = run_case(&binary, steps);
        assert!(!written.is_empty(), "{name} wrote nothing");
        if let Some(keep) = &keep {
            let folder = keep.join(name);
            std::fs::create_dir_all(&folder).expect("a folder to keep the files in");
            for (file, bytes) in &written {
                std::fs::write(folder.join(file), bytes).expect("a kept file");
            }
        }
        let path = golden_dir().join(format!("{name}.sha256"));
        let found = manifest(&written);
        if record {
            std::fs::write(&path, &found).expect("a manifest");
            continue;
        }
        let recorded = std::fs::read_to_string(&path).unwrap_or_default();
        if recorded != found {
            differences.push(format!("{name}: wrote\n{found}recorded\n{recorded}",));
        }
    }
    assert!(
        differences.is_empty(),
        "outputs changed (PACSTREAM_GOLDEN_KEEP=DIR keeps them):\n{}",
        differences.join("\n")
    );
}
