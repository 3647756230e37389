//! Per-worker epoch checkpoints, and the choice of the epoch a restarted cluster resumes from.
//!
//! Worker w of P writes `worker-w-of-P-epoch-E.json` after epoch E (atomically: a temporary
//! file, fsync, rename, so a kill -9 at any moment leaves whole files only) and keeps its last
//! two. Workers pass epoch boundaries in step but do not write at the same instant, so after
//! a crash one worker may hold epoch E+1 when another holds only E: a restart resumes from the
//! largest epoch every worker holds, found by a broadcast round (no shared file system is
//! assumed).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use timely::worker::Worker;

use crate::channel::Channel;
use crate::error::{Error, Result};

/// Where and how often a worker checkpoints.
#[derive(Clone, Debug)]
pub struct Checkpoints {
    /// The directory shared by the workers of the cluster (each writes its own files).
    pub dir: PathBuf,
    /// Checkpoint after every this many epochs (≥ 1).
    pub every: u64,
}

/// One worker's view of the checkpoint directory.
#[derive(Debug)]
pub(crate) struct Store {
    dir: PathBuf,
    every: u64,
    prefix: String,
}

impl Store {
    pub(crate) fn new(config: &Checkpoints, index: usize, peers: usize) -> Result<Self> {
        if config.every == 0 {
            return Err(Error::Usage("--checkpoint-every must be >= 1".into()));
        }
        fs::create_dir_all(&config.dir).map_err(|e| Error::io(&config.dir, e))?;
        Ok(Self {
            dir: config.dir.clone(),
            every: config.every,
            prefix: format!("worker-{index}-of-{peers}-epoch-"),
        })
    }

    pub(crate) fn due(&self, epochs_done: u64) -> bool {
        epochs_done.is_multiple_of(self.every)
    }

    fn path(&self, epoch: u64) -> PathBuf {
        self.dir.join(format!("{}{epoch}.json", self.prefix))
    }

    /// The epochs this worker holds a checkpoint of.
    pub(crate) fn epochs(&self) -> Result<Vec<u64>> {
        let mut epochs = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(|e| Error::io(&self.dir, e))? {
            let entry = entry.map_err(|e| Error::io(&self.dir, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(rest) = name.strip_prefix(&self.prefix)
                && let Some(epoch) = rest.strip_suffix(".json")
                && let Ok(epoch) = epoch.parse()
            {
                epochs.push(epoch);
            }
        }
        epochs.sort_unstable();
        Ok(epochs)
    }

    pub(crate) fn save<S: Serialize>(&self, epoch: u64, state: &S) -> Result<()> {
        let path = self.path(epoch);
        let temporary = self.dir.join(format!(".{}{epoch}.tmp", self.prefix));
        let bytes = serde_json::to_vec(state).map_err(|e| Error::Checkpoint(e.to_string()))?;
        let mut file = fs::File::create(&temporary).map_err(|e| Error::io(&temporary, e))?;
        file.write_all(&bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| Error::io(&temporary, e))?;
        fs::rename(&temporary, &path).map_err(|e| Error::io(&path, e))?;
        // Keep the last two: a restart may need the one before the newest.
        for old in self.epochs()? {
            if old + 2 * self.every <= epoch {
                let _ = fs::remove_file(self.path(old));
            }
        }
        Ok(())
    }

    pub(crate) fn load<S: DeserializeOwned>(&self, epoch: u64) -> Result<S> {
        let path = self.path(epoch);
        let bytes = fs::read(&path).map_err(|e| Error::io(&path, e))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| Error::Checkpoint(format!("{}: {e}", path.display())))
    }
}

/// The epoch the cluster resumes from: the largest one every worker holds (None: start
/// afresh); and whether any worker writes records (only process 0 may be given a records
/// file, yet every worker must know whether to send them). Every worker must call it, at the
/// same point of the run.
pub(crate) fn agree_on_epoch(
    worker: &mut Worker,
    store: Option<&Store>,
    writes_records: bool,
) -> Result<(Option<u64>, bool)> {
    let mine = match store {
        Some(store) => store.epochs()?,
        None => Vec::new(),
    };
    let mut channel = Channel::<(Vec<u64>, bool)>::broadcast(worker);
    let all = channel.round(worker, [(mine, writes_records)]);
    let records = all.iter().any(|(_, writes)| *writes);
    let mut common: Option<Vec<u64>> = None;
    for (epochs, _) in all {
        common = Some(match common {
            None => epochs,
            Some(common) => common.into_iter().filter(|e| epochs.contains(e)).collect(),
        });
    }
    Ok((common.and_then(|c| c.into_iter().max()), records))
}

/// Truncates `path` to `len` bytes (a restart drops what was written after its checkpoint).
pub(crate) fn truncate(path: &Path, len: u64) -> Result<()> {
    let file = fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    file.set_len(len).map_err(|e| Error::io(path, e))
}
