//! Where the rows come from: every worker reads its own share of the stream (each process
//! its own copy of the input), so no worker waits on a single reader and no row is parsed or
//! generated twice. A source passes over the rows of other workers' shares without building
//! them ([`Source::next_selected`]); the row's position in the stream stays known, which the
//! patterns need for results that do not depend on the number of workers.

use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// The rows of a batch a worker reads, by their offset in the batch: blocks of `block`
/// consecutive offsets dealt round `every` workers, block b to worker b mod `every`; this
/// worker takes the blocks dealt to `index`. Keyed learners deal single rows (`block` 1),
/// data-parallel k-means deals chunks.
///
/// A source walks the selection by ranges ([`Selection::next_range`]), not offset by
/// offset: on a 10^7-row stream, testing every offset with a division cost every worker
/// about 25 instructions per row of the whole stream, its share or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selection {
    block: usize,
    every: usize,
    index: usize,
}

impl Selection {
    /// Every row.
    pub fn all() -> Self {
        Self {
            block: 1,
            every: 1,
            index: 0,
        }
    }

    /// Blocks of `block` offsets dealt round `every` workers, those of worker `index`
    /// (`block` and `every` at least 1; `index` below `every`).
    pub fn blocks(block: usize, every: usize, index: usize) -> Self {
        let every = every.max(1);
        Self {
            block: block.max(1),
            every,
            index: index % every,
        }
    }

    /// No row.
    pub fn none() -> Self {
        Self {
            block: usize::MAX,
            every: 2,
            index: 1,
        }
    }

    /// Whether the row at `offset` is selected.
    pub fn contains(&self, offset: usize) -> bool {
        (offset / self.block) % self.every == self.index
    }

    /// The selected offsets from `offset` on that are consecutive: the rest of `offset`'s
    /// block if it is selected, else the next selected block (possibly beyond the batch).
    pub fn next_range(&self, offset: usize) -> Range<usize> {
        let block = offset / self.block;
        let ahead = (self.index + self.every - block % self.every) % self.every;
        let next = block.saturating_add(ahead);
        let start = if ahead == 0 {
            offset
        } else {
            next.saturating_mul(self.block)
        };
        start..next.saturating_add(1).saturating_mul(self.block)
    }
}

/// Rows held flat: each row has an offset (in the batch it was read from, or a position
/// in the stream), a key ("" for a stream without keys) and its values. A batch is a few
/// vectors whatever its length: reading a row allocates nothing, and the rows a worker
/// sends to another in a round travel as one item, freed once by the receiver (as one
/// `(String, Vec<f64>)` per row, they were two allocations made by one thread and freed by
/// another, and a sort of 56-byte items).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rows {
    offsets: Vec<u64>,
    keys: String,
    key_ends: Vec<usize>,
    values: Vec<f64>,
    value_ends: Vec<usize>,
}

impl Rows {
    /// No rows.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// Removes every row (keeping the memory).
    pub fn clear(&mut self) {
        self.offsets.clear();
        self.keys.clear();
        self.key_ends.clear();
        self.values.clear();
        self.value_ends.clear();
    }

    /// Appends a row.
    pub fn push(&mut self, offset: u64, key: &str, values: &[f64]) {
        self.offsets.push(offset);
        self.keys.push_str(key);
        self.key_ends.push(self.keys.len());
        self.values.extend_from_slice(values);
        self.value_ends.push(self.values.len());
    }

    /// Row `i`'s offset.
    pub fn offset(&self, i: usize) -> u64 {
        self.offsets[i]
    }

    /// Row `i`'s key.
    pub fn key(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.key_ends[i - 1] };
        &self.keys[start..self.key_ends[i]]
    }

    /// Row `i`'s values.
    pub fn values(&self, i: usize) -> &[f64] {
        let start = if i == 0 { 0 } else { self.value_ends[i - 1] };
        &self.values[start..self.value_ends[i]]
    }

    /// Adds `by` to the offsets of the rows from the `from`-th on (rows read in several
    /// calls, each counting its offsets from 0, placed in one batch).
    pub fn shift_offsets(&mut self, from: usize, by: u64) {
        for offset in self.offsets.iter_mut().skip(from) {
            *offset += by;
        }
    }

    /// Every row, in order: (offset, key, values).
    pub fn iter(&self) -> impl Iterator<Item = (u64, &str, &[f64])> + '_ {
        (0..self.len()).map(|i| (self.offset(i), self.key(i), self.values(i)))
    }
}

/// A stream of rows read in batches.
pub trait Source {
    /// Appends up to `n` next rows to `out`, at offsets 0, 1, ... (none at the end of the
    /// stream).
    fn next_batch(&mut self, n: usize, out: &mut Rows) -> Result<()>;
    /// Skips the first `n` rows (a restart does not replay them).
    fn skip_rows(&mut self, n: u64) -> Result<()>;

    /// Passes over the next `n` rows (fewer at the end of the stream) and appends to `out`
    /// those whose offset among them `keep` selects, each with its offset; returns the
    /// number of rows passed over. A source that can pass over a row without building it
    /// (without parsing a CSV line's numbers, or generating its values) should override
    /// this: it is what divides the reading between the workers. An error may only come
    /// from a row that `keep` selects or from the stream itself (which every worker sees).
    fn next_selected(&mut self, n: usize, keep: &Selection, out: &mut Rows) -> Result<usize> {
        let mut all = Rows::new();
        self.next_batch(n, &mut all)?;
        for (offset, key, values) in all.iter() {
            if keep.contains(offset as usize) {
                out.push(offset, key, values);
            }
        }
        Ok(all.len())
    }
}

/// A row a [`VecSource`] can hold: values, with or without a key.
pub trait AsRow {
    /// The row's key ("" for none).
    fn key(&self) -> &str {
        ""
    }
    /// The row's values.
    fn values(&self) -> &[f64];
}

impl AsRow for Vec<f64> {
    fn values(&self) -> &[f64] {
        self
    }
}

impl AsRow for (String, Vec<f64>) {
    fn key(&self) -> &str {
        &self.0
    }
    fn values(&self) -> &[f64] {
        &self.1
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

impl<R: AsRow> Source for VecSource<R> {
    fn next_batch(&mut self, n: usize, out: &mut Rows) -> Result<()> {
        let end = self.rows.len().min(self.next.saturating_add(n));
        for (offset, row) in self.rows[self.next..end].iter().enumerate() {
            out.push(offset as u64, row.key(), row.values());
        }
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

    fn next_selected(&mut self, n: usize, keep: &Selection, out: &mut Rows) -> Result<usize> {
        let end = self.rows.len().min(self.next.saturating_add(n));
        let rows = &self.rows[self.next..end];
        let mut offset = 0;
        while offset < rows.len() {
            let range = keep.next_range(offset);
            let range = range.start.min(rows.len())..range.end.min(rows.len());
            for offset in range.clone() {
                let row = &rows[offset];
                out.push(offset as u64, row.key(), row.values());
            }
            offset = range.end;
        }
        self.next = end;
        Ok(rows.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows held flat give back what was pushed, and a source's own `next_selected` gives
    /// what the default (every row read, then filtered) gives.
    #[test]
    fn flat_rows_give_back_each_row() {
        let held: Vec<(String, Vec<f64>)> = (0..30)
            .map(|i| (format!("k{}", i % 4).repeat(i % 3), vec![i as f64; i % 5]))
            .collect();
        let mut rows = Rows::new();
        for (i, (key, values)) in held.iter().enumerate() {
            rows.push(i as u64 * 3, key, values);
        }
        assert_eq!(rows.len(), held.len());
        for (i, (offset, key, values)) in rows.iter().enumerate() {
            assert_eq!(
                (offset, key, values),
                (i as u64 * 3, &*held[i].0, &*held[i].1)
            );
        }
        /// A source with the default `next_selected`.
        struct Plain(VecSource<(String, Vec<f64>)>);
        impl Source for Plain {
            fn next_batch(&mut self, n: usize, out: &mut Rows) -> Result<()> {
                self.0.next_batch(n, out)
            }
            fn skip_rows(&mut self, n: u64) -> Result<()> {
                self.0.skip_rows(n)
            }
        }
        let held = Arc::new(held);
        for keep in [
            Selection::all(),
            Selection::blocks(1, 2, 1),
            Selection::blocks(4, 3, 2),
        ] {
            let (mut own, mut plain) = (
                VecSource::new(Arc::clone(&held)),
                Plain(VecSource::new(Arc::clone(&held))),
            );
            let (mut a, mut b) = (Rows::new(), Rows::new());
            loop {
                let passed = own.next_selected(7, &keep, &mut a).unwrap();
                assert_eq!(plain.next_selected(7, &keep, &mut b).unwrap(), passed);
                assert_eq!(a, b, "{keep:?}");
                if passed == 0 {
                    break;
                }
                a.clear();
                b.clear();
            }
        }
    }

    /// Walking a selection by ranges visits exactly the offsets it contains.
    #[test]
    fn ranges_cover_exactly_the_selected_offsets() {
        let n = 200;
        for (block, every) in [(1, 1), (1, 2), (1, 3), (7, 2), (8, 4), (64, 3), (300, 2)] {
            for index in 0..every {
                let selection = Selection::blocks(block, every, index);
                let mut walked = Vec::new();
                let mut offset = 0;
                while offset < n {
                    let range = selection.next_range(offset);
                    assert!(range.start >= offset && range.end > range.start);
                    walked.extend(range.start.min(n)..range.end.min(n));
                    offset = range.end;
                }
                let expected: Vec<usize> = (0..n).filter(|&o| selection.contains(o)).collect();
                assert_eq!(walked, expected, "blocks of {block}, {index} of {every}");
            }
        }
        assert!((0..50).all(|o| Selection::all().contains(o)));
        assert_eq!(Selection::all().next_range(5), 5..6);
    }
}
