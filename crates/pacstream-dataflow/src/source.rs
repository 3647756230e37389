//! Where the rows come from: every worker reads the whole stream (each process its own
//! copy of the input) and keeps its share, so no worker waits on a single reader.

use std::sync::Arc;

use crate::error::Result;

/// A stream of rows read in batches.
pub trait Source {
    /// One row.
    type Row;
    /// Appends up to `n` next rows to `out` (none at the end of the stream).
    fn next_batch(&mut self, n: usize, out: &mut Vec<Self::Row>) -> Result<()>;
    /// Skips the first `n` rows (a restart does not replay them).
    fn skip_rows(&mut self, n: u64) -> Result<()>;
}

/// Rows held in memory, shared by the workers of a process.
#[derive(Debug)]
pub struct VecSource<R> {
    rows: Arc<Vec<R>>,
    next: usize,
}

impl<R> VecSource<R> {
    /// A source over `rows`.
    pub fn new(rows: Arc<Vec<R>>) -> Self {
        Self { rows, next: 0 }
    }
}

impl<R: Clone> Source for VecSource<R> {
    type Row = R;

    fn next_batch(&mut self, n: usize, out: &mut Vec<R>) -> Result<()> {
        let end = self.rows.len().min(self.next.saturating_add(n));
        out.extend_from_slice(&self.rows[self.next..end]);
        self.next = end;
        Ok(())
    }

    fn skip_rows(&mut self, n: u64) -> Result<()> {
        self.next = self
            .rows
            .len()
            .min(usize::try_from(n).unwrap_or(usize::MAX));
        Ok(())
    }
}
