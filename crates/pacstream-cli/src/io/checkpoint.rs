//! Checkpoints of online runs: a versioned JSON envelope around a command's state.
//!
//! The envelope holds what a resumed run needs to continue bit for bit and to refuse what it
//! cannot continue: the command and its settings (a resume with other settings is refused,
//! naming the differences), the input's progress (rows consumed, bad rows skipped, a
//! fingerprint of the rows), the length of `--output` at that moment, and the state itself
//! (the learner's snapshot, the running totals, whatever else the command keeps). It is
//! generic over the state, so every command family uses the same file format.
//!
//! Files are replaced atomically ([`super::atomic`]); floats are written with serde_json's
//! `float_roundtrip`, so a restored state is exactly the saved one. Restored learners are
//! validated by the library on deserialisation.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::atomic::write_atomically;
use super::reader::InputProgress;
use crate::failure::{bad_input, cannot_open};

/// The `format` tag of every checkpoint.
pub const FORMAT: &str = "pacstream-checkpoint";
/// The version of the envelope; bumped when its layout changes.
pub const VERSION: u32 = 1;

/// A checkpoint: the envelope and the command's state `S`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Checkpoint<S> {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`] when written.
    pub version: u32,
    /// The command that wrote it (`kmeans`).
    pub command: String,
    /// The command's settings, keyed by option name (without the dashes).
    pub settings: Value,
    /// How far the input had been read.
    pub input: InputProgress,
    /// The length of `--output` in bytes, if the run had one.
    pub output_bytes: Option<u64>,
    /// The format of `--output` (`jsonl`, `csv`, `tsv`), if the run had one: a resumed run
    /// must append in the same format.
    pub output_format: Option<String>,
    /// The command's state.
    pub state: S,
}

/// Saves a checkpoint atomically.
pub fn save<S: Serialize>(path: &Path, checkpoint: &Checkpoint<&S>) -> anyhow::Result<()> {
    let bytes = serde_json::to_vec(checkpoint)?;
    write_atomically(path, &bytes)
}

/// Loads a checkpoint for `command`, refusing one of another format, version or command, or
/// made with settings other than `settings`.
pub fn load<S: DeserializeOwned>(
    path: &Path,
    command: &str,
    settings: &Value,
) -> anyhow::Result<Checkpoint<S>> {
    let name = path.display();
    let bytes = std::fs::read(path).map_err(|e| cannot_open(path, &e))?;
    let corrupt =
        |detail: String| bad_input(format!("'{name}' is not a valid checkpoint: {detail}"));
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
    match value.get("format").and_then(Value::as_str) {
        Some(FORMAT) => {}
        _ => return Err(corrupt(format!("it has no \"format\": \"{FORMAT}\" tag"))),
    }
    match value.get("version").and_then(Value::as_u64) {
        Some(version) if version == u64::from(VERSION) => {}
        Some(version) => {
            return Err(bad_input(format!(
                "'{name}' is a checkpoint of version {version}; this pacstream reads version {VERSION}"
            )));
        }
        None => return Err(corrupt("it has no version".to_string())),
    }
    match value.get("command").and_then(Value::as_str) {
        Some(found) if found == command => {}
        Some(found) => {
            return Err(bad_input(format!(
                "'{name}' is a checkpoint of `pacstream {found}`, not of `pacstream {command}`"
            )));
        }
        None => return Err(corrupt("it names no command".to_string())),
    }
    let differences = settings_differences(value.get("settings").unwrap_or(&Value::Null), settings);
    if !differences.is_empty() {
        return Err(bad_input(format!(
            "cannot resume from '{name}': it was made with other settings ({}); resume with \
             the same options, or start a new run",
            differences.join("; ")
        )));
    }
    serde_json::from_value(value).map_err(|e| corrupt(e.to_string()))
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
            format: FORMAT.to_string(),
            version: VERSION,
            command: "kmeans".to_string(),
            settings,
            input: InputProgress::default(),
            output_bytes: Some(10),
            output_format: Some("jsonl".to_string()),
            state: vec![0.1, 1.0 / 3.0],
        }
    }

    #[test]
    fn round_trip_and_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ck.json");
        let settings = json!({"k": 3, "decay": null});
        let checkpoint = sample(settings.clone());
        save(
            &path,
            &Checkpoint {
                format: checkpoint.format.clone(),
                version: checkpoint.version,
                command: checkpoint.command.clone(),
                settings: checkpoint.settings.clone(),
                input: checkpoint.input,
                output_bytes: checkpoint.output_bytes,
                output_format: checkpoint.output_format.clone(),
                state: &checkpoint.state,
            },
        )
        .unwrap();
        let loaded: Checkpoint<Vec<f64>> = load(&path, "kmeans", &settings).unwrap();
        assert_eq!(loaded.state, vec![0.1, 1.0 / 3.0]);
        assert_eq!(loaded.output_bytes, Some(10));

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
    }
}
