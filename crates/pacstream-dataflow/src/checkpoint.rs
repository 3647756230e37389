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

    /// The numbers of workers other than this run's that wrote checkpoints in the directory
    /// (a restart must have the same number of workers: each one's state holds the keys and
    /// chunks of its share).
    pub(crate) fn other_cluster_sizes(&self, peers: usize) -> Result<Vec<u64>> {
        let mut sizes = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(|e| Error::io(&self.dir, e))? {
            let entry = entry.map_err(|e| Error::io(&self.dir, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(rest) = name.strip_prefix("worker-")
                && let Some((_, rest)) = rest.split_once("-of-")
                && let Some((size, rest)) = rest.split_once("-epoch-")
                && rest.ends_with(".json")
                && let Ok(size) = size.parse::<u64>()
                && size != peers as u64
                && !sizes.contains(&size)
            {
                sizes.push(size);
            }
        }
        sizes.sort_unstable();
        Ok(sizes)
    }

    pub(crate) fn save<S: Serialize>(&self, epoch: u64, state: &S) -> Result<()> {
        let path = self.path(epoch);
        // A symlink under a checkpoint's name keeps being a link: its target is replaced,
        // as the command line's other writes do; a device or FIFO is refused.
        let target = regular_target(&path)?;
        let directory = match target.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temporary = directory.join(format!(".{name}.tmp"));
        let bytes = serde_json::to_vec(state).map_err(|e| Error::Checkpoint(e.to_string()))?;
        let mut file = fs::File::create(&temporary).map_err(|e| Error::io(&temporary, e))?;
        file.write_all(&bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| Error::io(&temporary, e))?;
        fs::rename(&temporary, &target).map_err(|e| Error::io(&path, e))?;
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

/// How a worker starts a run: its checkpoint store, the epoch the cluster resumes from with
/// this worker's state of that epoch, and whether any worker writes records, a summary or
/// checkpoints.
pub(crate) struct Start<S> {
    pub(crate) store: Option<Store>,
    pub(crate) resumed: Option<(u64, S)>,
    pub(crate) want_records: bool,
    pub(crate) want_summary: bool,
    pub(crate) any_checkpoints: bool,
}

/// Opens this worker's checkpoints and agrees with the others on where to start
/// ([`agree_on_epoch`]). Every worker must call it, at the start of the run.
pub(crate) fn start<S: DeserializeOwned>(
    worker: &mut Worker,
    files: &crate::RunFiles,
) -> Result<Start<S>> {
    let index = worker.index();
    let store = files
        .checkpoints
        .as_ref()
        .map(|config| Store::new(config, index, worker.peers()))
        .transpose()?;
    let writes = Writes {
        records: index == 0 && files.records.is_some(),
        summary: index == 0 && files.summary,
        checkpoints: store.is_some(),
    };
    let (resume, wanted) = agree_on_epoch(worker, store.as_ref(), writes)?;
    let resumed = match (resume, &store) {
        (Some(epoch), Some(store)) => Some((epoch, store.load(epoch)?)),
        _ => None,
    };
    Ok(Start {
        store,
        resumed,
        want_records: wanted.records,
        want_summary: wanted.summary,
        any_checkpoints: wanted.checkpoints,
    })
}

/// At the end of epoch `epoch`, if a checkpoint is due: syncs the records file (worker 0)
/// and saves the state that `state` builds from its length.
pub(crate) fn save_if_due<S: Serialize>(
    store: Option<&Store>,
    records: Option<&mut crate::sink::Records>,
    epoch: u64,
    state: impl FnOnce(Option<u64>) -> S,
) -> Result<()> {
    if let Some(store) = store
        && store.due(epoch)
    {
        let records_len = records.map(|records| records.sync()).transpose()?;
        store.save(epoch, &state(records_len))?;
    }
    Ok(())
}

/// What a worker writes, or (agreed) what some worker of the cluster writes.
#[derive(Clone, Copy, Debug, Default, Serialize, serde::Deserialize)]
pub(crate) struct Writes {
    pub(crate) records: bool,
    pub(crate) summary: bool,
    pub(crate) checkpoints: bool,
}

/// The epoch the cluster resumes from: the largest one every worker holds (None: start
/// afresh); and whether any worker writes records or a summary (only process 0 may be given
/// the files, yet every worker must know whether to send records and summary entries).
/// Every worker must call it, at the same point of the run.
pub(crate) fn agree_on_epoch(
    worker: &mut Worker,
    store: Option<&Store>,
    writes: Writes,
) -> Result<(Option<u64>, Writes)> {
    let peers = worker.peers();
    let (mine, others) = match store {
        Some(store) => (store.epochs()?, store.other_cluster_sizes(peers)?),
        None => (Vec::new(), Vec::new()),
    };
    let mut channel = Channel::<(Vec<u64>, Writes, Vec<u64>)>::broadcast(worker);
    let all = channel.round(worker, [(mine, writes, others)]);
    // Every worker sees every worker's answer, so all refuse together.
    let mut sizes: Vec<u64> = all.iter().flat_map(|(_, _, o)| o.iter().copied()).collect();
    sizes.sort_unstable();
    sizes.dedup();
    if !sizes.is_empty() {
        let sizes: Vec<String> = sizes.iter().map(u64::to_string).collect();
        return Err(Error::Usage(format!(
            "the checkpoint directory holds checkpoints of a run on {} workers in all, and \
             this run has {peers}: restart with the same number of workers and processes, \
             or remove the checkpoints to start afresh",
            sizes.join(" or ")
        )));
    }
    let wanted = Writes {
        records: all.iter().any(|(_, writes, _)| writes.records),
        summary: all.iter().any(|(_, writes, _)| writes.summary),
        checkpoints: all.iter().any(|(_, writes, _)| writes.checkpoints),
    };
    let mut common: Option<Vec<u64>> = None;
    for (epochs, _, _) in all {
        common = Some(match common {
            None => epochs,
            Some(common) => common.into_iter().filter(|e| epochs.contains(e)).collect(),
        });
    }
    Ok((common.and_then(|c| c.into_iter().max()), wanted))
}

/// The most symlinks followed before giving up (as the kernel's ELOOP).
const MAX_LINKS: usize = 40;

/// The regular file (or nothing yet) that writing `path` replaces: symlinks followed to
/// their final target; a directory, device, FIFO or socket refused (a checkpoint is
/// replaced atomically, which only a regular file allows).
fn regular_target(path: &Path) -> Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let metadata = match fs::symlink_metadata(&current) {
            Ok(metadata) => metadata,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(Error::io(path, e)),
        };
        let kind = metadata.file_type();
        if kind.is_symlink() {
            let target = fs::read_link(&current).map_err(|e| Error::io(&current, e))?;
            current = match current.parent() {
                Some(parent) if target.is_relative() => parent.join(target),
                _ => target,
            };
        } else if kind.is_file() {
            return Ok(current);
        } else {
            return Err(Error::Checkpoint(format!(
                "'{}' is not a regular file: a checkpoint is replaced atomically at every \
                 save, which only a regular file allows",
                path.display()
            )));
        }
    }
    Err(Error::Checkpoint(format!(
        "'{}': too many levels of symbolic links",
        path.display()
    )))
}

/// Truncates `path` to `len` bytes (a restart drops what was written after its checkpoint).
pub(crate) fn truncate(path: &Path, len: u64) -> Result<()> {
    let file = fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    file.set_len(len).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_symlink_under_a_checkpoint_name_stays_a_link_and_its_target_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let store = Store::new(
            &Checkpoints {
                dir: dir.path().to_path_buf(),
                every: 1,
            },
            0,
            1,
        )
        .unwrap();
        let target = elsewhere.path().join("kept.json");
        fs::write(&target, b"old").unwrap();
        let link = dir.path().join("worker-0-of-1-epoch-3.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        store.save(3, &vec![1u32, 2]).unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&target).unwrap(), "[1,2]");
        assert_eq!(store.load::<Vec<u32>>(3).unwrap(), vec![1, 2]);
        // A directory under a checkpoint's name is refused, not replaced.
        fs::create_dir(dir.path().join("worker-0-of-1-epoch-4.json")).unwrap();
        let error = store.save(4, &0u32).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
    }
}
