//! Where the rows come from: every worker reads its own share of the stream (each process
//! its own copy of the input), so no worker waits on a single reader and no row is parsed or
//! generated twice. A source passes over the rows of other workers' shares without building
//! them ([`Source::next_selected`]); the row's position in the stream stays known, which the
//! patterns need for results that do not depend on the number of workers.

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

    /// Passes over the next `n` rows (fewer at the end of the stream) and appends to `out`
    /// those whose offset among them `keep` selects, each with its offset; returns the
    /// number of rows passed over. A source that can pass over a row without building it
    /// (without parsing a CSV line's numbers, or generating its values) should override
    /// this: it is what divides the reading between the workers. An error may only come
    /// from a row that `keep` selects or from the stream itself (which every worker sees).
    fn next_selected(
        &mut self,
        n: usize,
        keep: &dyn Fn(usize) -> bool,
        out: &mut Vec<(usize, Self::Row)>,
    ) -> Result<usize> {
        let mut all = Vec::new();
        self.next_batch(n, &mut all)?;
        let passed = all.len();
        out.extend(
            all.into_iter()
                .enumerate()
                .filter(|(offset, _)| keep(*offset)),
        );
        Ok(passed)
    }
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

    fn next_selected(
        &mut self,
        n: usize,
        keep: &dyn Fn(usize) -> bool,
        out: &mut Vec<(usize, R)>,
    ) -> Result<usize> {
        let end = self.rows.len().min(self.next.saturating_add(n));
        let rows = &self.rows[self.next..end];
        out.extend(
            rows.iter()
                .enumerate()
                .filter(|(offset, _)| keep(*offset))
                .map(|(offset, row)| (offset, row.clone())),
        );
        self.next = end;
        Ok(rows.len())
    }
}
