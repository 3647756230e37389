//! How a failed run is reported: the message on stderr and the exit code.
//!
//! Exit codes: 0 success, 2 bad input or usage (the user can fix it: a malformed row, a
//! missing file, an option out of range, a checkpoint from other settings), 1 internal
//! failure (everything else: a write that fails half-way, a broken invariant).
//!
//! Errors travel as `anyhow::Error`. An error is a usage error when its chain holds a
//! [`BadInput`] (raised by the binary) or a [`pacstream::Error`] (the library only fails on
//! what it was given: parameters, points, weights, snapshots).

use std::fmt;
use std::io;

/// Exit code of a successful run.
pub const EXIT_SUCCESS: u8 = 0;
/// Exit code of an internal failure.
pub const EXIT_FAILURE: u8 = 1;
/// Exit code of bad input or usage (also clap's code for usage errors).
pub const EXIT_BAD_INPUT: u8 = 2;

/// An error the user can fix by changing the input or the options; exits with code 2.
#[derive(Debug)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// A [`BadInput`] error with this message.
pub fn bad_input(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(message.into()))
}

/// The exit code for `error`.
pub fn exit_code(error: &anyhow::Error) -> u8 {
    let is_usage = error.chain().any(|cause| {
        cause.downcast_ref::<BadInput>().is_some()
            || cause.downcast_ref::<pacstream::Error>().is_some()
    });
    if is_usage {
        EXIT_BAD_INPUT
    } else {
        EXIT_FAILURE
    }
}

/// An I/O failure described for a person ("cannot write to 'x': No space left on device"),
/// keeping the kind of the underlying error so that a closed pipe can be recognised. Exits
/// with code 1: the input and options were fine, the environment failed.
#[derive(Debug)]
pub struct IoFailure {
    /// The whole message.
    pub message: String,
    /// The kind of the underlying `io::Error`.
    pub kind: io::ErrorKind,
}

impl fmt::Display for IoFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for IoFailure {}

/// An [`IoFailure`]: `{what}: {the error, without its OS error number}`.
pub fn io_failure(what: impl fmt::Display, error: &io::Error) -> anyhow::Error {
    anyhow::Error::new(IoFailure {
        message: format!("{what}: {}", describe_io(error)),
        kind: error.kind(),
    })
}

/// Whether `error` comes from writing to a closed pipe (`pacstream ... --output - | head`):
/// the reader has all it wanted, so the run ends quietly.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<IoFailure>()
                .is_some_and(|e| e.kind == io::ErrorKind::BrokenPipe)
    })
}

/// An I/O error as a person reads it: "No such file or directory", without the
/// "(os error 2)" suffix the standard library appends.
pub fn describe_io(error: &io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(cut) if text.ends_with(')') => text[..cut].to_string(),
        _ => text,
    }
}

/// A library error as the command line says it: a bad setting is named by the option that
/// gives it, the argument of `A` whose id is the library's parameter name (`invalid
/// --loss-bound: ...`); any other error keeps its text, under `context`. So no command keeps
/// a table of parameter names: an option takes the id of the parameter it sets.
pub fn library_error<A: clap::Args>(context: &str, error: pacstream::Error) -> anyhow::Error {
    if let pacstream::Error::InvalidParameter { name, reason } = &error {
        let command = A::augment_args(clap::Command::new("pacstream"));
        let option = command
            .get_arguments()
            .find(|arg| arg.get_id().as_str() == *name)
            .and_then(|arg| arg.get_long());
        if let Some(option) = option {
            return bad_input(format!(
                "invalid --{option}: {}",
                reason.replace(name, option)
            ));
        }
    }
    anyhow::Error::new(error).context(context.to_string())
}

/// A [`BadInput`] for a file that cannot be opened: `cannot open 'x.csv': No such file or
/// directory`.
pub fn cannot_open(path: &std::path::Path, error: &io::Error) -> anyhow::Error {
    bad_input(format!(
        "cannot open '{}': {}",
        path.display(),
        describe_io(error)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn usage_errors_are_found_through_context() {
        let error = Err::<(), _>(bad_input("bad row"))
            .context("reading the input")
            .expect_err("an error");
        assert_eq!(exit_code(&error), EXIT_BAD_INPUT);
        let library = anyhow::Error::new(pacstream::Error::EmptyInput("nothing")).context("fit");
        assert_eq!(exit_code(&library), EXIT_BAD_INPUT);
        let other = anyhow::anyhow!("disk on fire");
        assert_eq!(exit_code(&other), EXIT_FAILURE);
    }

    #[test]
    fn closed_pipes_are_recognised() {
        let pipe = io::Error::from(io::ErrorKind::BrokenPipe);
        assert!(is_broken_pipe(&io_failure(
            "cannot write to '<stdout>'",
            &pipe
        )));
        assert!(is_broken_pipe(&anyhow::Error::new(pipe).context("writing")));
        let full = io::Error::from_raw_os_error(28);
        let error = io_failure("cannot write to 'x'", &full);
        assert!(!is_broken_pipe(&error));
        assert_eq!(
            format!("{error:#}"),
            "cannot write to 'x': No space left on device"
        );
        assert_eq!(exit_code(&error), EXIT_FAILURE);
    }

    #[test]
    fn io_messages_drop_the_os_error_number() {
        let error = io::Error::from_raw_os_error(2);
        assert_eq!(describe_io(&error), "No such file or directory");
        let error = cannot_open(std::path::Path::new("x.csv"), &error);
        assert_eq!(
            error.to_string(),
            "cannot open 'x.csv': No such file or directory"
        );
    }
}
