//! What the figures of the online commands keep of a stream, in memory bounded whatever its
//! length, and serialisable into checkpoints: a uniform sample of its rows and series
//! thinned by doubling strides.

use pacstream::StreamRng;
use serde::{Deserialize, Serialize};

/// A uniform random sample of at most `capacity` rows of a stream (reservoir sampling,
/// Vitter's algorithm R), with each row's data row number (the y axis of one-dimensional
/// figures). It draws from its own child stream of the run's seed, so asking for a figure
/// changes none of the learner's draws.
#[derive(Debug, Serialize, Deserialize)]
pub struct RowSample {
    capacity: usize,
    dim: usize,
    /// Rows offered so far.
    seen: u64,
    /// Row-major sampled rows.
    points: Vec<f64>,
    /// The data row number of each sampled row.
    numbers: Vec<u64>,
    rng: StreamRng,
}

impl RowSample {
    /// The child stream of the seed used for the reservoir (the learner uses the root).
    const STREAM: u64 = 0x706c_6f74; // "plot"

    /// An empty sample of at most `capacity` rows of `dim` values.
    pub fn new(capacity: usize, dim: usize, seed: u64) -> Self {
        Self {
            capacity,
            dim,
            seen: 0,
            points: Vec::new(),
            numbers: Vec::new(),
            rng: StreamRng::seed_from(seed).child(Self::STREAM),
        }
    }

    /// Offers the next row of the stream.
    pub fn add(&mut self, point: &[f64], number: u64) {
        if self.numbers.len() < self.capacity {
            self.points.extend_from_slice(point);
            self.numbers.push(number);
        } else {
            let population = usize::try_from(self.seen + 1).unwrap_or(usize::MAX);
            let slot = self.rng.index_below(population);
            if slot < self.capacity {
                self.points[slot * self.dim..(slot + 1) * self.dim].copy_from_slice(point);
                self.numbers[slot] = number;
            }
        }
        self.seen += 1;
    }

    /// The most rows the sample holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The sampled rows, row-major.
    pub fn points(&self) -> &[f64] {
        &self.points
    }

    /// The data row number of each sampled row.
    pub fn numbers(&self) -> &[u64] {
        &self.numbers
    }

    /// The figure's note on sampling: ` (N sampled)` when rows were left out, else nothing.
    pub fn sampled_note(&self) -> String {
        if self.seen > self.numbers.len() as u64 {
            format!(" ({} sampled)", self.numbers.len())
        } else {
            String::new()
        }
    }

    /// Checks a sample read from a checkpoint against the run's settings, so that drawing it
    /// cannot fail.
    pub fn validate(&self, capacity: usize, dim: usize) -> Result<(), String> {
        let n = self.numbers.len();
        if self.capacity != capacity || self.dim != dim {
            return Err("its plot sample has another size".to_string());
        }
        if n > capacity
            || self.points.len() != n * dim
            || (n as u64) > self.seen
            || self.points.iter().any(|v| !v.is_finite())
        {
            return Err("its plot sample is inconsistent".to_string());
        }
        Ok(())
    }
}

/// A series over the rounds of a stream, thinned to at most [`ThinnedSeries::LIMIT`] points:
/// it keeps the points whose index is a multiple of its stride, and doubles the stride (and
/// drops the points no longer on it) whenever it would hold more.
#[derive(Debug, Serialize, Deserialize)]
pub struct ThinnedSeries<T> {
    /// (index, value), in increasing index.
    points: Vec<(u64, T)>,
    stride: u64,
}

impl<T> Default for ThinnedSeries<T> {
    fn default() -> Self {
        Self {
            points: Vec::new(),
            stride: 1,
        }
    }
}

impl<T> ThinnedSeries<T> {
    /// The most points a series holds.
    pub const LIMIT: usize = 1000;

    /// Offers the point of index `index` (indices increase from call to call).
    pub fn push(&mut self, index: u64, value: T) {
        if !index.is_multiple_of(self.stride) {
            return;
        }
        self.points.push((index, value));
        if self.points.len() > Self::LIMIT {
            self.stride *= 2;
            let stride = self.stride;
            self.points.retain(|(index, _)| index % stride == 0);
        }
    }

    /// The points kept, (index, value) in increasing index.
    pub fn points(&self) -> &[(u64, T)] {
        &self.points
    }

    /// Checks a series read from a checkpoint; `finite` tells whether a value can be drawn.
    pub fn validate(&self, finite: impl Fn(&T) -> bool) -> Result<(), String> {
        if self.stride == 0
            || self.points.len() > Self::LIMIT
            || !self.points.iter().all(|(_, value)| finite(value))
        {
            return Err("its figure series is inconsistent".to_string());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservoir_keeps_capacity_rows_drawn_from_the_whole_stream() {
        let mut sample = RowSample::new(10, 1, 3);
        for number in 1..=10_000u64 {
            sample.add(&[number as f64], number);
        }
        assert_eq!(sample.numbers().len(), 10);
        assert_eq!(sample.points().len(), 10);
        // The chance that all ten rows come from the first tenth of the stream is 1e-10.
        assert!(sample.numbers().iter().any(|&n| n > 1_000));
        assert_eq!(sample.sampled_note(), " (10 sampled)");
        assert!(sample.validate(10, 1).is_ok());
        assert!(sample.validate(11, 1).is_err());
    }

    #[test]
    fn a_series_stays_bounded_and_keeps_the_stride_multiples() {
        let mut series = ThinnedSeries::default();
        for index in 0..100_000u64 {
            series.push(index, index as f64);
        }
        let points = series.points();
        assert!(points.len() <= ThinnedSeries::<f64>::LIMIT);
        assert!(points.len() > ThinnedSeries::<f64>::LIMIT / 2);
        let stride = points[1].0 - points[0].0;
        assert!(points.iter().all(|(index, _)| index % stride == 0));
        assert!(series.validate(|v| v.is_finite()).is_ok());
    }
}
