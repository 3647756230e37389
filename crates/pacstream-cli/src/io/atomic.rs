//! Atomic file replacement: a crash at any moment leaves the old file or the new one, never
//! a torn mixture.
//!
//! The new content goes to a temporary file in the same directory (so that the rename does
//! not cross file systems), which is flushed to disk (fsync) and renamed over the target;
//! then the directory is fsynced so that the rename itself survives a power cut.
//!
//! Only regular files are replaced. A symlink is followed and its final target replaced (the
//! link stays); a device, FIFO or socket is written through, as a shell redirection would
//! ([`super::files::destination`]); checkpoints, which must be replaced atomically to be
//! safe, refuse them.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::files::{Destination, destination};
use crate::failure::{bad_input, describe_io, io_failure};
use crate::options::OutputTarget;
use pacstream_dataflow::keyed::write_all_slices;

/// The random part of a temporary file's name (`.{name}.XXXXXX.tmp`).
const TEMPORARY_RANDOM_CHARS: usize = 6;

/// Writes a document (a summary, a figure) to `path`: atomically over a regular file (or a
/// symlink's target); through to a device or FIFO, which is never replaced.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_atomically_with(path, |out| out.write_all(bytes))
}

/// [`write_atomically`] of the bytes `write` writes, straight to the file (through a
/// buffer): a document of hundreds of megabytes need not be built in memory first.
pub fn write_atomically_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    match destination(path)? {
        Destination::Replace(target) => replace_with(&target, path, write),
        Destination::WriteThrough(target) => {
            let name = path.display();
            let file = OpenOptions::new()
                .write(true)
                .open(&target)
                .map_err(|e| bad_input(format!("cannot open '{name}': {}", describe_io(&e))))?;
            let mut out = BufWriter::new(file);
            write(&mut out)
                .and_then(|()| out.flush())
                .map_err(|e| io_failure(format!("cannot write to '{name}'"), &e))
        }
    }
}

/// The regular file a checkpoint at `path` is written to (a symlink's target); a device,
/// FIFO or socket is refused, since a checkpoint must be replaced atomically to survive a
/// crash.
pub fn checkpoint_path(path: &Path) -> anyhow::Result<PathBuf> {
    match destination(path)? {
        Destination::Replace(target) => Ok(target),
        Destination::WriteThrough(_) => Err(bad_input(format!(
            "--checkpoint '{}' is not a regular file: a checkpoint is replaced atomically at \
             every save, which only a regular file allows",
            path.display()
        ))),
    }
}

/// Replaces the regular file (or nothing) at `target` with `bytes`, atomically; `shown` is
/// the name given by the user, for messages.
pub fn replace(target: &Path, shown: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    replace_with(target, shown, |out| out.write_all(bytes))
}

/// [`replace`] with the bytes `write` writes.
fn replace_with(
    target: &Path,
    shown: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    replace_with_file(target, shown, |file| {
        let mut out = BufWriter::new(file);
        write(&mut out).and_then(|()| out.flush())
    })
}

/// How many bytes of a new file are written before the kernel is asked to start writing
/// them to disk ([`Writeback`]).
const WRITEBACK_BYTES: u64 = 8 << 20;

/// The new file of an atomic replacement, which asks the kernel to start writing each
/// stretch of [`WRITEBACK_BYTES`] to disk once it is written, so that the disk works while
/// the rest is produced. Without it a document waited whole in the page cache for the
/// final fsync: the 366 MB keyed summary of 10^5 keys, written while the workers print it,
/// still took 0.54 s of fsync after they had finished.
///
/// The request is a hint: the fsync that follows is what makes the file durable, so a
/// failed request changes nothing but the timing and is ignored.
struct Writeback<'a> {
    file: &'a File,
    written: u64,
    requested: u64,
}

impl<'a> Writeback<'a> {
    fn new(file: &'a File) -> Self {
        Self {
            file,
            written: 0,
            requested: 0,
        }
    }

    /// Counts `n` more bytes written, and starts the disk writes of a full stretch.
    fn wrote(&mut self, n: usize) -> usize {
        self.written += n as u64;
        if let Some((offset, len)) = writeback_due(self.requested, self.written) {
            start_writeback(self.file, offset, len);
            self.requested = offset + len;
        }
        n
    }
}

/// The stretch `(offset, length)` whose disk writes to start when `written` bytes have been
/// written and those of the first `requested` were asked for: all that was not asked for,
/// once it is at least [`WRITEBACK_BYTES`].
fn writeback_due(requested: u64, written: u64) -> Option<(u64, u64)> {
    let pending = written.saturating_sub(requested);
    (pending >= WRITEBACK_BYTES).then_some((requested, pending))
}

/// Starts writing `len` bytes of `file` from `offset` to disk, without waiting for them.
/// On Linux, `POSIX_FADV_DONTNEED` starts the writeback of the range's dirty pages (and
/// drops only its clean pages, which pages just written are not): PostgreSQL uses it so
/// where `sync_file_range` is not available. Elsewhere the final fsync does all the
/// writing, as before.
fn start_writeback(file: &File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        let _ = rustix::fs::fadvise(
            file,
            offset,
            std::num::NonZeroU64::new(len),
            rustix::fs::Advice::DontNeed,
        );
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, offset, len);
    }
}

impl Write for Writeback<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = (&mut &*self.file).write(buf)?;
        Ok(self.wrote(n))
    }

    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        let n = (&mut &*self.file).write_vectored(bufs)?;
        Ok(self.wrote(n))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// [`replace`] with what `fill` writes into the new (empty) file, by whatever means.
fn replace_with_file(
    target: &Path,
    shown: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    prepare_replacement(target, shown, fill)?.commit()
}

/// A regular file's new content, written and flushed to disk beside it, not yet in its
/// place: [`Replacement::commit`] renames it over the file; dropped, it is deleted and the
/// file is untouched. A document written while the run that makes it is still going is
/// put in place only once the run has succeeded.
#[derive(Debug)]
pub struct Replacement {
    temporary: tempfile::NamedTempFile,
    path: PathBuf,
    directory: PathBuf,
    name: String,
}

/// Writes what `fill` writes into a new temporary file beside the regular file (or
/// nothing) at `target` and flushes it to disk; `shown` is the name given by the user, for
/// messages.
pub fn prepare_replacement(
    target: &Path,
    shown: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<Replacement> {
    let path = target;
    let name = shown.display().to_string();
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let file_name = path
        .file_name()
        .ok_or_else(|| bad_input(format!("'{name}' is not a file name")))?;
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(file_name);
    prefix.push(".");
    let mut builder = tempfile::Builder::new();
    builder
        .prefix(&prefix)
        .rand_bytes(TEMPORARY_RANDOM_CHARS)
        .suffix(".tmp");
    // Like any new file (0666 less the umask), not the private 0600 of temporary files: the
    // temporary file becomes the user's summary, figure or checkpoint.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let temporary = builder
        .tempfile_in(directory)
        .map_err(|e| bad_input(format!("cannot create '{name}': {}", describe_io(&e))))?;
    fill(&mut Writeback::new(temporary.as_file()))
        .and_then(|()| temporary.as_file().sync_all())
        .map_err(|e| io_failure(format!("cannot write '{name}'"), &e))?;
    Ok(Replacement {
        temporary,
        path: path.to_path_buf(),
        directory: directory.to_path_buf(),
        name,
    })
}

impl Replacement {
    /// Renames the new content over the file, then flushes the directory so that the
    /// rename itself survives a power cut.
    pub fn commit(self) -> anyhow::Result<()> {
        let Self {
            temporary,
            path,
            directory,
            name,
        } = self;
        temporary
            .persist(&path)
            .map_err(|e| bad_input(format!("cannot create '{name}': {}", describe_io(&e.error))))?;
        sync_directory(&directory)
            .map_err(|e| io_failure(format!("cannot sync the directory of '{name}'"), &e))?;
        Ok(())
    }
}

/// Removes the temporary files that [`write_atomically`] leaves behind when its process is
/// killed between creating one and renaming it (`.{name}.XXXXXX.tmp` beside `path`). Called
/// before a run starts writing `path`; failures are ignored (a stale file is only clutter).
pub fn remove_stale_temporaries(path: &Path) {
    let Some(file_name) = path.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let prefix = format!(".{file_name}.");
    let Ok(entries) = std::fs::read_dir(directory) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let is_ours = name.starts_with(&prefix)
            && name.ends_with(".tmp")
            && name.len() == prefix.len() + TEMPORARY_RANDOM_CHARS + ".tmp".len();
        if is_ours && entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Flushes a directory's entries to disk (a no-op where directories cannot be opened).
fn sync_directory(directory: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        File::open(directory)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = directory;
        Ok(())
    }
}

/// Writes a whole document (a summary, a figure) to a file atomically or to stdout.
pub fn write_document(target: &OutputTarget, bytes: &[u8]) -> anyhow::Result<()> {
    write_document_with(target, |out| out.write_all(bytes))
}

/// [`write_document`] of the bytes `write` writes, straight to the file or stdout.
pub fn write_document_with(
    target: &OutputTarget,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    match target {
        OutputTarget::File(path) => write_atomically_with(path, write),
        OutputTarget::Stdout => {
            let mut out = BufWriter::new(std::io::stdout().lock());
            write(&mut out)
                .and_then(|()| out.flush())
                .map_err(|e| io_failure("cannot write to '<stdout>'", &e))
        }
    }
}

/// [`write_document`] of a document given as byte slices in order, written with vectored
/// writes: nothing is copied before the kernel copies it. (Several threads writing runs of
/// the slices in place, with positional writes, were tried for the 366 MB keyed summary:
/// ext4 takes the file's lock for every buffered write, so the threads took turns and
/// their copies cost more than one thread's.)
pub fn write_slices(target: &OutputTarget, slices: &[&[u8]]) -> anyhow::Result<()> {
    // A regular file is written without the buffer `write_document_with` puts in front
    // of it; a device, a FIFO or stdout take the same vectored writes through it.
    if let OutputTarget::File(path) = target
        && let Destination::Replace(file) = destination(path)?
    {
        return replace_with_file(&file, path, |file| write_all_slices(file, slices));
    }
    write_document_with(target, |out| write_all_slices(out, slices))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        write_atomically(&path, b"old").unwrap();
        write_atomically(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let missing = dir.path().join("no/such/dir/state.json");
        let error = write_atomically(&missing, b"x").unwrap_err();
        assert!(
            error.to_string().contains("No such file or directory"),
            "{error}"
        );
    }

    /// The disk writes are asked for by whole stretches, each byte once, in order.
    #[test]
    fn writeback_is_asked_for_each_full_stretch_once() {
        let stretch = WRITEBACK_BYTES;
        assert_eq!(writeback_due(0, stretch - 1), None);
        assert_eq!(writeback_due(0, stretch), Some((0, stretch)));
        assert_eq!(writeback_due(stretch, 2 * stretch - 1), None);
        assert_eq!(
            writeback_due(stretch, 3 * stretch + 5),
            Some((stretch, 2 * stretch + 5))
        );
        // Written in uneven calls, the stretches asked for tile what was written.
        let dir = tempfile::tempdir().unwrap();
        let file = File::create(dir.path().join("f")).unwrap();
        let mut out = Writeback::new(&file);
        let (mut asked, mut total) = (0, 0u64);
        for n in [1, stretch as usize - 2, 3, 5 << 20, 11 << 20, 7] {
            total += n as u64;
            assert_eq!(out.wrote(n), n);
            assert_eq!(out.written, total);
            assert!(out.requested >= asked && out.requested <= total);
            assert!(
                total - out.requested < stretch,
                "{total} written, {} asked",
                out.requested
            );
            asked = out.requested;
        }
    }

    /// A replacement written through the writeback wrapper, by plain and vectored writes
    /// over several stretches, holds every byte in order.
    #[test]
    fn a_large_replacement_holds_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        let owned: Vec<Vec<u8>> = (0..40u8)
            .map(|i| vec![i; (1 << 20) + usize::from(i) * 977])
            .collect();
        let slices: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let target = OutputTarget::File(path.clone());
        write_slices(&target, &slices).unwrap();
        assert!(std::fs::read(&path).unwrap() == slices.concat());
        write_atomically(&path, &owned.concat()[1..]).unwrap();
        assert!(std::fs::read(&path).unwrap() == slices.concat()[1..]);
    }

    #[test]
    fn stale_temporaries_are_removed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ck.json");
        for name in [
            ".ck.json.a1B2c3.tmp",
            ".ck.json.long-name.tmp",
            "ck.json",
            ".other.x1y2z3.tmp",
        ] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        remove_stale_temporaries(&path);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [".ck.json.long-name.tmp", ".other.x1y2z3.tmp", "ck.json"]
        );
    }
}
