//! Checkpoints of online runs: a versioned, checksummed JSON envelope around a command's
//! state.
//!
//! ```text
//! {"format":"pacstream-checkpoint","version":2,"sha256":"<hex>","content":{...}}
//! ```
//!
//! The `content` holds what a resumed run needs to continue bit for bit and to refuse what
//! it cannot continue: the command and its settings (a resume with other settings is
//! refused, naming the differences), the input's progress (rows consumed, bad rows skipped, a
//! fingerprint of the rows), what the run had written to `--output` ([`OutputMark`]: length,
//! SHA-256 of those bytes, records, format), and the state itself (the learner's snapshot,
//! the running totals, whatever else the command keeps). It is generic over the state, so
//! every command family uses the same file format.
//!
//! **Integrity.** `sha256` is the SHA-256 of the exact bytes of `content` as written. A load
//! checks it before it believes anything the content says, and before anything of the run
//! is touched: any change of the content's bytes (an edited count, a flipped bit) is
//! refused. Changes outside the content either break the envelope (refused) or are
//! whitespace and key order, which change nothing. The restored state is validated again by
//! the library (snapshots) and by the command (its consistency with the input).
//!
//! Files are replaced atomically ([`super::atomic`]); floats are written with serde_json's
//! `float_roundtrip`, so a restored state is exactly the saved one. Reads are bounded
//! ([`MAX_BYTES`]).

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

use super::atomic::{checkpoint_path, replace};
use super::files::read_json_document;
use super::reader::InputProgress;
use crate::failure::bad_input;

/// The `format` tag of every checkpoint.
pub const FORMAT: &str = "pacstream-checkpoint";
/// The version of the envelope; bumped when its layout changes (2: the checksum and the
/// output's hash).
pub const VERSION: u32 = 2;
/// The largest checkpoint read, in bytes (4 GiB): far above the state of any run this
/// machine could hold, small enough that a wrong file ends the run instead of filling
/// memory.
pub const MAX_BYTES: u64 = 4 << 30;

/// What a run had written to `--output` when a checkpoint was made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputMark {
    /// The output's length in bytes.
    pub bytes: u64,
    /// The SHA-256 of those bytes, in hex.
    pub sha256: String,
    /// The records written (one per row learned).
    pub records: u64,
    /// Their format (`jsonl`, `csv`, `tsv`): a resumed run must append in the same format.
    pub format: String,
}

/// A checkpoint's content: the command's settings, progress and state `S`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint<S> {
    /// The command that wrote it (`kmeans`).
    pub command: String,
    /// The command's settings, keyed by option name (without the dashes).
    pub settings: Value,
    /// How far the input had been read.
    pub input: InputProgress,
    /// What had been written to `--output`, if the run had one.
    pub output: Option<OutputMark>,
    /// The command's state.
    pub state: S,
}

/// The envelope as read, its content kept as the exact bytes that were hashed.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a> {
    #[allow(dead_code, reason = "checked by the probe first")]
    format: &'a str,
    #[allow(dead_code, reason = "checked by the probe first")]
    version: u64,
    sha256: &'a str,
    #[serde(borrow)]
    content: &'a RawValue,
}

/// The fields that say what a file is, read leniently first so that a checkpoint of another
/// version or another program is named as such.
#[derive(Deserialize)]
struct Probe {
    format: Option<Value>,
    version: Option<Value>,
}

/// The SHA-256 of `bytes` in lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex of a digest.
pub fn hex(digest: &[u8]) -> String {
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The bytes of a checkpoint file around `content` (the JSON of a [`Checkpoint`]).
pub fn seal(content: &[u8]) -> Vec<u8> {
    let mut bytes = format!(
        "{{\"format\":\"{FORMAT}\",\"version\":{VERSION},\"sha256\":\"{}\",\"content\":",
        sha256_hex(content)
    )
    .into_bytes();
    bytes.extend_from_slice(content);
    bytes.extend_from_slice(b"}\n");
    bytes
}

/// Saves a checkpoint atomically (a symlink's target is replaced; a device or FIFO is
/// refused).
pub fn save<S: Serialize>(path: &Path, checkpoint: &Checkpoint<&S>) -> anyhow::Result<()> {
    let content = serde_json::to_vec(checkpoint)?;
    replace(&checkpoint_path(path)?, path, &seal(&content))
}

/// Loads a checkpoint for `command`, refusing one whose checksum does not match its content,
/// of another format, version or command, or made with settings other than `settings`.
/// Nothing else is read or written before these checks pass.
pub fn load<S: DeserializeOwned>(
    path: &Path,
    command: &str,
    settings: &Value,
) -> anyhow::Result<Checkpoint<S>> {
    // `--checkpoint` only ever writes regular files: a device or FIFO (`/dev/zero`) is not
    // one, and is refused before a byte of it is read.
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Err(bad_input(format!(
            "'{}' is not a checkpoint: it is not a regular file (--checkpoint writes regular \
             files)",
            path.display()
        )));
    }
    let bytes = read_json_document(path, "a checkpoint", MAX_BYTES)?;
    parse(&bytes, &path.display().to_string(), command, settings)
}

/// [`load`] on the bytes of a checkpoint named `name` in messages.
pub fn parse<S: DeserializeOwned>(
    bytes: &[u8],
    name: &str,
    command: &str,
    settings: &Value,
) -> anyhow::Result<Checkpoint<S>> {
    let corrupt =
        |detail: String| bad_input(format!("'{name}' is not a valid checkpoint: {detail}"));
    let probe: Probe = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    match probe.format.as_ref().and_then(Value::as_str) {
        Some(FORMAT) => {}
        _ => return Err(corrupt(format!("it has no \"format\": \"{FORMAT}\" tag"))),
    }
    match probe.version.as_ref().and_then(Value::as_u64) {
        Some(version) if version == u64::from(VERSION) => {}
        Some(version) => {
            return Err(bad_input(format!(
                "'{name}' is a checkpoint of version {version}; this pacstream reads version \
                 {VERSION} (start a new run)"
            )));
        }
        None => return Err(corrupt("it has no version".to_string())),
    }
    let envelope: Envelope<'_> =
        serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    let content = envelope.content.get().as_bytes();
    if sha256_hex(content) != envelope.sha256 {
        return Err(corrupt(
            "its checksum does not match its content: the file was changed or damaged since \
             it was saved"
                .to_string(),
        ));
    }
    // The checksum holds: the content is what a run of pacstream wrote.
    let head: Head = serde_json::from_slice(content).map_err(|e| corrupt(e.to_string()))?;
    if head.command != command {
        return Err(bad_input(format!(
            "'{name}' is a checkpoint of `pacstream {}`, not of `pacstream {command}`",
            head.command
        )));
    }
    let differences = settings_differences(&head.settings, settings);
    if !differences.is_empty() {
        return Err(bad_input(format!(
            "cannot resume from '{name}': it was made with other settings ({}); resume with \
             the same options, or start a new run",
            differences.join("; ")
        )));
    }
    serde_json::from_slice(content).map_err(|e| corrupt(e.to_string()))
}

/// The command and settings of a checkpoint's content, read before its state.
#[derive(Deserialize)]
struct Head {
    command: String,
    settings: Value,
}

/// The settings that differ, as `--k was 3, now 4`.
fn settings_differences(saved: &Value, current: &Value) -> Vec<String> {
    let (Value::Object(saved), Value::Object(current)) = (saved, current) else {
        return vec!["the settings are unreadable".to_string()];
    };
    let mut keys: Vec<&String> = saved.keys().chain(current.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|key| {
            let before = saved.get(key).unwrap_or(&Value::Null);
            let now = current.get(key).unwrap_or(&Value::Null);
            (before != now).then(|| {
                format!(
                    "--{} was {}, now {}",
                    key.replace('_', "-"),
                    show(before),
                    show(now)
                )
            })
        })
        .collect()
}

fn show(value: &Value) -> String {
    match value {
        Value::Null => "not given".to_string(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample(settings: Value) -> Checkpoint<Vec<f64>> {
        Checkpoint {
            command: "kmeans".to_string(),
            settings,
            input: InputProgress::default(),
            output: Some(OutputMark {
                bytes: 10,
                sha256: sha256_hex(b"t,loss\n1,\n"),
                records: 1,
                format: "csv".to_string(),
            }),
            state: vec![0.1, 1.0 / 3.0],
        }
    }

    fn save_sample(path: &Path, checkpoint: &Checkpoint<Vec<f64>>) {
        save(
            path,
            &Checkpoint {
                command: checkpoint.command.clone(),
                settings: checkpoint.settings.clone(),
                input: checkpoint.input,
                output: checkpoint.output.clone(),
                state: &checkpoint.state,
            },
        )
        .unwrap();
    }

    #[test]
    fn round_trip_and_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ck.json");
        let settings = json!({"k": 3, "decay": null});
        save_sample(&path, &sample(settings.clone()));
        let loaded: Checkpoint<Vec<f64>> = load(&path, "kmeans", &settings).unwrap();
        assert_eq!(loaded.state, vec![0.1, 1.0 / 3.0]);
        assert_eq!(loaded.output.unwrap().bytes, 10);

        let error = load::<Vec<f64>>(&path, "kmeans", &json!({"k": 4, "decay": 50.0}))
            .unwrap_err()
            .to_string();
        assert!(error.contains("--decay was not given, now 50.0"), "{error}");
        assert!(error.contains("--k was 3, now 4"), "{error}");
        let error = load::<Vec<f64>>(&path, "experts", &settings)
            .unwrap_err()
            .to_string();
        assert!(error.contains("not of `pacstream experts`"), "{error}");

        std::fs::write(&path, b"{\"format\": \"pacstream-checkpoint\", \"vers").unwrap();
        let error = load::<Vec<f64>>(&path, "kmeans", &settings)
            .unwrap_err()
            .to_string();
        assert!(error.contains("is not a valid checkpoint"), "{error}");
        std::fs::write(
            &path,
            b"{\"format\":\"pacstream-checkpoint\",\"version\":1}",
        )
        .unwrap();
        let error = load::<Vec<f64>>(&path, "kmeans", &settings)
            .unwrap_err()
            .to_string();
        assert!(error.contains("version 1"), "{error}");
    }

    /// Every single-bit flip of a checkpoint's bytes is refused, or leaves what is loaded
    /// exactly as saved.
    #[test]
    fn every_bit_flip_is_refused_or_harmless() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ck.json");
        let settings = json!({"k": 3});
        let original = sample(settings.clone());
        save_sample(&path, &original);
        let bytes = std::fs::read(&path).unwrap();
        let expected = serde_json::to_string(&original).unwrap();
        let (mut refused, mut harmless) = (0, 0);
        for position in 0..bytes.len() {
            for bit in 0..8 {
                let mut flipped = bytes.clone();
                flipped[position] ^= 1 << bit;
                match parse::<Vec<f64>>(&flipped, "ck.json", "kmeans", &settings) {
                    Err(_) => refused += 1,
                    Ok(loaded) => {
                        assert_eq!(
                            serde_json::to_string(&loaded).unwrap(),
                            expected,
                            "flipping bit {bit} of byte {position} changed the checkpoint"
                        );
                        harmless += 1;
                    }
                }
            }
        }
        assert!(refused > 0);
        // Only the final newline's flips to other whitespace (tab, space...) can be harmless.
        assert!(harmless <= 8, "{harmless} harmless flips");
    }
}
