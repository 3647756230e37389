//! Mergeable per-centre statistics: the contract of distributed streaming k-means.
//!
//! Against a shared set of centres, a batch of points reduces to one (weighted sum, weight)
//! pair per centre. These pairs merge associatively and commutatively, so several machines
//! (or threads) can each summarise their share of a batch and the summaries can be combined
//! in any grouping; applying the merged statistics to the learner
//! ([`super::SequentialKMeans::apply_stats`]) equals learning the batch whole
//! ([`super::SequentialKMeans::learn_batch`]), up to floating-point rounding of the sums.
//! This is the contract of Spark's and Flink's streaming k-means.
//!
//! ```
//! use pacstream::kmeans::{Centres, CentreStats};
//!
//! let centres = Centres::from_rows(&[[0.0], [10.0]])?;
//! let mut left = CentreStats::new(2, 1);
//! left.add(&centres, &[1.0], 1.0)?;
//! let mut right = CentreStats::new(2, 1);
//! right.add(&centres, &[3.0], 1.0)?;
//! right.add(&centres, &[9.0], 2.0)?;
//! left.merge(&right)?;
//! assert_eq!(left.weight(0), 2.0);
//! assert_eq!(left.mean(0), Some(vec![2.0]));
//! assert_eq!(left.mean(1), Some(vec![9.0]));
//! assert_eq!(left.n_points(), 3);
//! # Ok::<(), pacstream::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use super::centres::Centres;
use crate::data::{check_point, check_weight};
use crate::error::{Error, Result};

/// Per-centre (weighted sum, total weight) of the points assigned to each centre, plus the
/// number of points summarised.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct CentreStats {
    dim: usize,
    sums: Vec<f64>,
    weights: Vec<f64>,
    n_points: u64,
}

validated_snapshot!(CentreStats);

impl CentreStats {
    /// Empty statistics for `n_centres` centres of dimension `dim`.
    pub fn new(n_centres: usize, dim: usize) -> Self {
        Self {
            dim,
            sums: vec![0.0; n_centres * dim],
            weights: vec![0.0; n_centres],
            n_points: 0,
        }
    }

    pub(crate) fn validate_snapshot(&self) -> Result<()> {
        if self.sums.len() != self.weights.len() * self.dim {
            return Err(Error::InvalidSnapshot(format!(
                "{} sums for {} centres of dimension {}",
                self.sums.len(),
                self.weights.len(),
                self.dim
            )));
        }
        if self
            .sums
            .iter()
            .chain(&self.weights)
            .any(|v| !v.is_finite())
            || self.weights.iter().any(|&w| w < 0.0)
        {
            return Err(Error::InvalidSnapshot(
                "statistics must be finite, with non-negative weights".into(),
            ));
        }
        Ok(())
    }

    /// Assigns `point` (weight `weight`) to its nearest centre and adds it to that centre's
    /// statistics. Returns the label and the squared distance (the point's loss).
    pub fn add(&mut self, centres: &Centres, point: &[f64], weight: f64) -> Result<(usize, f64)> {
        self.check_shape(centres)?;
        check_point(point, self.dim)?;
        check_weight(weight)?;
        let (label, loss) = centres.nearest(point);
        self.add_assigned(label, point, weight);
        Ok((label, loss))
    }

    /// Adds a validated point to the statistics of centre `label`.
    #[inline]
    pub(crate) fn add_assigned(&mut self, label: usize, point: &[f64], weight: f64) {
        let sums = &mut self.sums[label * self.dim..(label + 1) * self.dim];
        for (sum, x) in sums.iter_mut().zip(point) {
            *sum += weight * x;
        }
        self.weights[label] += weight;
        self.n_points += 1;
    }

    /// Adds `other`'s statistics to these (same number of centres and dimension).
    pub fn merge(&mut self, other: &CentreStats) -> Result<()> {
        if other.dim != self.dim || other.weights.len() != self.weights.len() {
            return Err(Error::InconsistentInput(format!(
                "cannot merge statistics of {} centres in dimension {} into {} centres in dimension {}",
                other.weights.len(),
                other.dim,
                self.weights.len(),
                self.dim
            )));
        }
        for (sum, other_sum) in self.sums.iter_mut().zip(&other.sums) {
            *sum += other_sum;
        }
        for (weight, other_weight) in self.weights.iter_mut().zip(&other.weights) {
            *weight += other_weight;
        }
        self.n_points += other.n_points;
        Ok(())
    }

    pub(crate) fn check_shape(&self, centres: &Centres) -> Result<()> {
        if centres.n_centres() != self.weights.len() || centres.dim() != self.dim {
            return Err(Error::InconsistentInput(format!(
                "statistics of {} centres in dimension {} against {} centres in dimension {}",
                self.weights.len(),
                self.dim,
                centres.n_centres(),
                centres.dim()
            )));
        }
        Ok(())
    }

    /// The number of centres.
    pub fn n_centres(&self) -> usize {
        self.weights.len()
    }

    /// The dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The number of points summarised.
    pub fn n_points(&self) -> u64 {
        self.n_points
    }

    /// The total weight assigned to centre `index`.
    pub fn weight(&self, index: usize) -> f64 {
        self.weights[index]
    }

    /// The weighted sum of the points assigned to centre `index`.
    pub fn sum(&self, index: usize) -> &[f64] {
        &self.sums[index * self.dim..(index + 1) * self.dim]
    }

    /// The weighted mean of the points assigned to centre `index` (`None` if it has none).
    pub fn mean(&self, index: usize) -> Option<Vec<f64>> {
        let weight = self.weights[index];
        (weight > 0.0).then(|| self.sum(index).iter().map(|s| s / weight).collect())
    }
}
