//! What a stream's checkpoint keeps of the number of clusters over time.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

/// Run-length path of a count over rounds: (first round, value) at every change, in bounded
/// memory: once it holds [`CountPath::LIMIT`] changes, every other one is dropped (the first
/// and the last kept), so that a long stream whose k̂_t keeps changing keeps a sketch of the
/// path, not all of it.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct CountPath {
    pub(super) changes: Vec<(u64, usize)>,
    last_round: u64,
    /// Every change seen, kept or dropped.
    pub(super) total_changes: u64,
}

impl CountPath {
    const LIMIT: usize = 20_000;

    pub(super) fn record(&mut self, round: u64, value: usize) {
        if self.changes.last().is_none_or(|&(_, v)| v != value) {
            self.changes.push((round, value));
            self.total_changes += 1;
            if self.changes.len() >= Self::LIMIT {
                let last = self.changes.len() - 1;
                let mut index = 0;
                self.changes.retain(|_| {
                    index += 1;
                    (index - 1) % 2 == 0 || index - 1 == last
                });
            }
        }
        self.last_round = round;
    }

    /// Whether every change is kept.
    pub(super) fn is_complete(&self) -> bool {
        self.total_changes == self.changes.len() as u64
    }

    /// The staircase points (round, value), closed at the last round.
    pub(super) fn points(&self) -> Vec<(f64, f64)> {
        let mut points: Vec<(f64, f64)> = self
            .changes
            .iter()
            .map(|&(t, v)| (t as f64, v as f64))
            .collect();
        if let Some(&(t, v)) = self.changes.last()
            && self.last_round > t
        {
            points.push((self.last_round as f64, v as f64));
        }
        points
    }
}

/// The number of distinct true labels among the rows in memory (all rows, or the last W).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct LabelTracker {
    window: Option<usize>,
    /// Labels of the rows in the window, oldest first (window memory only).
    recent: VecDeque<u64>,
    /// How many rows in memory carry each label (keyed by the bits of the value).
    counts: BTreeMap<u64, u64>,
}

impl LabelTracker {
    pub(super) fn new(window: Option<usize>) -> Self {
        Self {
            window,
            recent: VecDeque::new(),
            counts: BTreeMap::new(),
        }
    }

    pub(super) fn add(&mut self, label: f64) -> usize {
        let key = (label + 0.0).to_bits();
        *self.counts.entry(key).or_insert(0) += 1;
        if let Some(window) = self.window {
            self.recent.push_back(key);
            if self.recent.len() > window
                && let Some(old) = self.recent.pop_front()
                && let Some(count) = self.counts.get_mut(&old)
            {
                *count -= 1;
                if *count == 0 {
                    self.counts.remove(&old);
                }
            }
        }
        self.counts.len()
    }
}
