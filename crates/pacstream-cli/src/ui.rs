//! What the user sees while a command runs: notes on stderr, the human-readable report, and
//! a progress bar for long runs.
//!
//! Notes go to stderr so that stdout stays clean for data (`--output -`, `--summary -`).
//! `--quiet` silences notes and the report, never errors.

use std::io::{self, IsTerminal, Write};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Where notes and warnings go.
#[derive(Clone, Copy, Debug)]
pub struct Notes {
    quiet: bool,
}

impl Notes {
    /// Notes that print unless `quiet`.
    pub fn new(quiet: bool) -> Self {
        Self { quiet }
    }

    /// Whether `--quiet` was given.
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// Prints `note: {message}` on stderr (unless quiet). A note that cannot be written is
    /// dropped: a closed stderr must not fail a run whose results go elsewhere.
    pub fn note(&self, message: impl std::fmt::Display) {
        if !self.quiet {
            let _ = writeln!(io::stderr().lock(), "note: {message}");
        }
    }
}

/// Prints an error the way every failure is shown: `error: {message}` on stderr.
pub fn print_error(error: &anyhow::Error) {
    let _ = writeln!(io::stderr().lock(), "error: {error:#}");
}

/// The human-readable report: to stdout, or to stderr when stdout carries data.
pub fn report_writer(stdout_carries_data: bool) -> Box<dyn Write> {
    if stdout_carries_data {
        Box::new(io::stderr())
    } else {
        Box::new(io::stdout())
    }
}

/// A progress bar on stderr that appears only when stderr is a terminal, `--quiet` is off,
/// and the run has already lasted [`Progress::DELAY`]: short runs and redirected stderr stay
/// silent.
#[derive(Debug)]
pub struct Progress {
    enabled: bool,
    started: Instant,
    /// The total in bytes when the input is a file of known size.
    total_bytes: Option<u64>,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// How long a run must last before its progress bar appears.
    pub const DELAY: Duration = Duration::from_millis(800);

    /// A progress tracker; `total_bytes` is the input's size if known.
    pub fn new(notes: Notes, total_bytes: Option<u64>) -> Self {
        Self {
            enabled: !notes.is_quiet() && io::stderr().is_terminal(),
            started: Instant::now(),
            total_bytes,
            bar: None,
        }
    }

    /// Reports progress: `rows` consumed, `bytes` of input read. Cheap enough to call every
    /// few thousand rows.
    pub fn update(&mut self, rows: u64, bytes: u64) {
        if !self.enabled {
            return;
        }
        if self.bar.is_none() {
            if self.started.elapsed() < Self::DELAY {
                return;
            }
            self.bar = Some(self.make_bar());
        }
        if let Some(bar) = &self.bar {
            if self.total_bytes.is_some() {
                bar.set_position(bytes);
            } else {
                bar.set_position(rows);
            }
            bar.set_message(format!("{rows} rows"));
        }
    }

    fn make_bar(&self) -> ProgressBar {
        let bar = match self.total_bytes {
            Some(total) => {
                let bar = ProgressBar::new(total);
                if let Ok(style) = ProgressStyle::with_template(
                    "{bar:40} {percent:>3}% {msg} ({elapsed}, eta {eta})",
                ) {
                    bar.set_style(style);
                }
                bar
            }
            None => {
                let bar = ProgressBar::new_spinner();
                if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
                    bar.set_style(style);
                }
                bar
            }
        };
        // The bar appears late: its clock starts with the run, not with the bar.
        bar.with_elapsed(self.started.elapsed())
    }

    /// Removes the bar, if one was shown.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
