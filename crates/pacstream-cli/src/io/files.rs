//! Files as a run meets them: which file a path (or standard input) really is, where a
//! document written to a path really goes, and bounded reads of JSON inputs.
//!
//! - **Identity.** Two names are the same file when they have the same device and inode:
//!   a hard link, a symlink, `a/../b`, or standard input redirected from a file all are
//!   recognised ([`check_distinct`], the one same-file check of every command). A file that
//!   does not exist yet is compared by its resolved path.
//! - **Writing.** A document (summary, figure, checkpoint) replaces a regular file
//!   atomically; a symlink is followed and its target replaced; a device, FIFO or socket is
//!   written through, never replaced ([`Destination`]).
//! - **Reading JSON.** Checkpoints and curve summaries are read up to a size limit, so that
//!   `--resume /dev/zero` or a runaway FIFO ends with a message instead of a hang.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::failure::{bad_input, cannot_open, describe_io};
use crate::options::resolve;

/// The device and inode of a file: what makes two names the same file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId {
    device: u64,
    inode: u64,
    /// A character device (`/dev/null`) may be written by several outputs at once.
    is_char_device: bool,
}

impl FileId {
    #[cfg(unix)]
    fn of(metadata: &Metadata) -> Option<Self> {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        Some(Self {
            device: metadata.dev(),
            inode: metadata.ino(),
            is_char_device: metadata.file_type().is_char_device(),
        })
    }

    #[cfg(not(unix))]
    fn of(_metadata: &Metadata) -> Option<Self> {
        None
    }
}

/// The identity of the file `path` names (symlinks followed), if it exists.
pub fn file_id(path: &Path) -> Option<FileId> {
    std::fs::metadata(path).ok().as_ref().and_then(FileId::of)
}

/// The identity of what standard input reads: the file it is redirected from, or a pipe or
/// terminal (which no output can be).
pub fn stdin_id() -> Option<FileId> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let duplicate = io::stdin().as_fd().try_clone_to_owned().ok()?;
        File::from(duplicate)
            .metadata()
            .ok()
            .as_ref()
            .and_then(FileId::of)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// A file a run reads: a path, or standard input.
#[derive(Clone, Debug)]
pub enum Source {
    /// Standard input (`-`).
    Stdin,
    /// A file.
    Path(PathBuf),
}

/// A file a run reads, under the option that names it (`the input`, `--curve`).
#[derive(Clone, Debug)]
pub struct InputFile {
    /// How messages name it.
    pub option: String,
    /// What it is.
    pub source: Source,
    /// The output option this input may be (`--resume` may be the `--checkpoint` it
    /// continues).
    pub may_be: Option<&'static str>,
}

/// A file a run writes, under the option that names it.
#[derive(Clone, Debug)]
pub struct OutputFile {
    /// How messages name it (`--output`).
    pub option: String,
    /// Its path.
    pub path: PathBuf,
}

/// How an output compares with others: by identity when it exists, else by resolved path.
#[derive(Debug, PartialEq, Eq)]
enum Key {
    Existing(FileId),
    New(PathBuf),
}

fn key(path: &Path) -> Key {
    match file_id(path) {
        Some(id) => Key::Existing(id),
        None => Key::New(resolve(path)),
    }
}

/// Refuses a run whose outputs would overwrite one of its inputs (by another name, a hard
/// link, or standard input redirected from it), or write one file twice. Called before
/// anything is read or written. Several outputs may go to one character device
/// (`/dev/null`).
pub fn check_distinct(inputs: &[InputFile], outputs: &[OutputFile]) -> anyhow::Result<()> {
    let output_keys: Vec<Key> = outputs.iter().map(|o| key(&o.path)).collect();
    for (i, output) in outputs.iter().enumerate() {
        if let Some(j) = (0..i).find(|&j| output_keys[j] == output_keys[i]) {
            let shareable = matches!(output_keys[i], Key::Existing(id) if id.is_char_device);
            if !shareable {
                return Err(bad_input(format!(
                    "{} and {} are the same file '{}'",
                    outputs[j].option,
                    output.option,
                    output.path.display()
                )));
            }
        }
    }
    // Two inputs of different roles in one file (`--resume data.csv data.csv`) is a mistake
    // the messages of either reader would explain less well.
    let input_ids: Vec<Option<FileId>> = inputs
        .iter()
        .map(|input| match &input.source {
            Source::Stdin => stdin_id(),
            Source::Path(path) => file_id(path),
        })
        .collect();
    for (i, id) in input_ids.iter().enumerate() {
        if let Some(j) = (0..i).find(|&j| id.is_some() && input_ids[j] == *id) {
            return Err(bad_input(format!(
                "{} and {} are the same file",
                inputs[j].option, inputs[i].option
            )));
        }
    }
    for input in inputs {
        let (id, resolved, input_name) = match &input.source {
            Source::Stdin => (
                stdin_id(),
                None,
                format!("{} (standard input)", input.option),
            ),
            Source::Path(path) => (file_id(path), Some(resolve(path)), input.option.clone()),
        };
        for (output, output_key) in outputs.iter().zip(&output_keys) {
            let same = match output_key {
                Key::Existing(output_id) => id == Some(*output_id),
                Key::New(path) => resolved.as_ref() == Some(path),
            };
            if same && input.may_be != Some(output.option.as_str()) {
                return Err(bad_input(format!(
                    "{} and {input_name} are the same file '{}': writing it would destroy what \
                     the run reads",
                    output.option,
                    output.path.display()
                )));
            }
        }
    }
    Ok(())
}

/// Where a document written to a path goes.
#[derive(Debug, PartialEq, Eq)]
pub enum Destination {
    /// A regular file (or none yet) at this path, replaced atomically. For a symlink, the
    /// path of its final target.
    Replace(PathBuf),
    /// A device, FIFO or socket (possibly behind symlinks): written through, never replaced.
    WriteThrough(PathBuf),
}

/// The most symlinks followed before giving up (as the kernel's ELOOP).
const MAX_LINKS: usize = 40;

/// Where writing to `path` goes: symlinks are followed to their final target (which need not
/// exist yet), so that the link stays a link and its target gets the content.
pub fn destination(path: &Path) -> anyhow::Result<Destination> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let metadata = match std::fs::symlink_metadata(&current) {
            Ok(metadata) => metadata,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Destination::Replace(current));
            }
            Err(e) => {
                return Err(bad_input(format!(
                    "cannot write '{}': {}",
                    path.display(),
                    describe_io(&e)
                )));
            }
        };
        let kind = metadata.file_type();
        if kind.is_symlink() {
            let target = std::fs::read_link(&current).map_err(|e| {
                bad_input(format!(
                    "cannot follow the link '{}': {}",
                    current.display(),
                    describe_io(&e)
                ))
            })?;
            current = match current.parent() {
                Some(parent) if target.is_relative() => parent.join(target),
                _ => target,
            };
        } else if kind.is_dir() {
            return Err(bad_input(format!(
                "cannot write '{}': it is a directory",
                path.display()
            )));
        } else if kind.is_file() {
            return Ok(Destination::Replace(current));
        } else {
            return Ok(Destination::WriteThrough(current));
        }
    }
    Err(bad_input(format!(
        "cannot write '{}': too many levels of symbolic links",
        path.display()
    )))
}

/// Reads a JSON document of at most `limit` bytes (a checkpoint, a curve summary). A larger
/// file, or a stream that goes on past the limit (`/dev/zero`, a FIFO), is refused; so is
/// one that does not start like a JSON object, as soon as its first bytes are read.
pub fn read_json_document(path: &Path, what: &str, limit: u64) -> anyhow::Result<Vec<u8>> {
    let file = File::open(path).map_err(|e| cannot_open(path, &e))?;
    let metadata = file.metadata().map_err(|e| cannot_open(path, &e))?;
    let too_large = || {
        bad_input(format!(
            "'{}' is larger than {} MiB, the limit of {what}: it is not one",
            path.display(),
            limit >> 20
        ))
    };
    if metadata.is_dir() {
        return Err(bad_input(format!(
            "cannot open '{}': Is a directory",
            path.display()
        )));
    }
    if metadata.is_file() && metadata.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    let mut reader = file.take(limit + 1);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let read = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(bad_input(format!(
                    "cannot read '{}': {}",
                    path.display(),
                    describe_io(&e)
                )));
            }
        };
        bytes.extend_from_slice(&chunk[..read]);
        if let Some(&first) = bytes.iter().find(|b| !b.is_ascii_whitespace())
            && first != b'{'
        {
            return Err(bad_input(format!(
                "'{}' is not {what}: it is not a JSON object",
                path.display()
            )));
        }
    }
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(option: &str, path: &Path) -> OutputFile {
        OutputFile {
            option: option.to_string(),
            path: path.to_path_buf(),
        }
    }

    fn input(option: &str, path: &Path) -> InputFile {
        InputFile {
            option: option.to_string(),
            source: Source::Path(path.to_path_buf()),
            may_be: None,
        }
    }

    #[test]
    fn hard_links_and_symlinks_are_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.csv");
        std::fs::write(&a, "x\n1\n").unwrap();
        let b = dir.path().join("b.csv");
        std::fs::hard_link(&a, &b).unwrap();
        let error = check_distinct(&[input("the input", &a)], &[output("--output", &b)])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("--output and the input are the same file"),
            "{error}"
        );
        #[cfg(unix)]
        {
            let link = dir.path().join("link.csv");
            std::os::unix::fs::symlink(&a, &link).unwrap();
            assert!(check_distinct(&[input("the input", &a)], &[output("-o", &link)]).is_err());
        }
        let new = dir.path().join("new.csv");
        assert!(check_distinct(&[input("the input", &a)], &[output("-o", &new)]).is_ok());
        let twice = [output("--output", &new), output("--summary", &new)];
        assert!(check_distinct(&[], &twice).is_err());
        let mut resume = input("--resume", &new);
        resume.may_be = Some("--checkpoint");
        assert!(check_distinct(&[resume.clone()], &[output("--checkpoint", &new)]).is_ok());
        assert!(check_distinct(&[resume], &[output("--output", &new)]).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn links_are_followed_to_their_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.json");
        let link = dir.path().join("l.json");
        std::os::unix::fs::symlink("t.json", &link).unwrap();
        // A dangling link leads to its (future) target.
        assert_eq!(
            destination(&link).unwrap(),
            Destination::Replace(target.clone())
        );
        std::fs::write(&target, "x").unwrap();
        assert_eq!(destination(&link).unwrap(), Destination::Replace(target));
        let fifo = dir.path().join("f");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .is_ok_and(|s| s.success())
        );
        assert_eq!(
            destination(&fifo).unwrap(),
            Destination::WriteThrough(fifo.clone())
        );
        let looped = dir.path().join("loop");
        std::os::unix::fs::symlink("loop", &looped).unwrap();
        assert!(destination(&looped).is_err());
        assert!(destination(dir.path()).is_err());
    }

    #[test]
    fn json_reads_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        std::fs::write(&path, b"  {\"a\": 1}").unwrap();
        assert_eq!(
            read_json_document(&path, "a checkpoint", 100).unwrap(),
            b"  {\"a\": 1}"
        );
        let error = read_json_document(&path, "a checkpoint", 5).unwrap_err();
        assert!(error.to_string().contains("larger than"), "{error}");
        std::fs::write(&path, b"\0\0\0").unwrap();
        let error = read_json_document(&path, "a checkpoint", 100).unwrap_err();
        assert!(error.to_string().contains("not a JSON object"), "{error}");
    }
}
