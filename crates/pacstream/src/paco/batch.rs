//! Batch mode: one chain on a static data set.
//!
//! For a data set x_1..x_T (what the R package does by default): one chain of N iterations
//! targeting exp(−λ S_T(c)) π(c) with λ = λ_T (n = T) and no variance term, started from
//! k = 1 at the mean of the data, with the proposal means of §2 (k-means of the whole data
//! set). It estimates the number of clusters and the centres of the data set. The frame
//! (centre, scales, R `auto`) is taken from the whole data set rather than a warm-up; the
//! memory setting does not apply.

use ndarray::ArrayView2;
use serde::{Deserialize, Serialize};

use super::cover::CoverCache;
use super::frame::Frame;
use super::learner::nearest;
use super::means::{KMeansSource, MeansHistory};
use super::memory::PointMemory;
use super::params::{Memory, PacoConfig};
use super::sampler::{ChainSettings, ProposalRule, SamplerReport, Target, run_chain};
use super::temperature::lambda;
use crate::data::Points;
use crate::error::{Error, Result};
use crate::geometry::squared_norm;
use crate::kmeans::Centres;
use crate::rng::StreamRng;

/// The result of the batch chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PacoFit {
    centres: Centres,
    labels: Vec<usize>,
    frame: Frame,
    cumulative_loss: f64,
    report: SamplerReport,
}

impl PacoFit {
    /// The final state of the chain, in the user's coordinates.
    pub fn centres(&self) -> &Centres {
        &self.centres
    }

    /// k̂, the number of clusters found.
    pub fn n_clusters(&self) -> usize {
        self.centres.n_centres()
    }

    /// The index of the nearest centre to each data point.
    pub fn labels(&self) -> &[usize] {
        &self.labels
    }

    /// The frame (μ_0, scales, R) taken from the data.
    pub fn frame(&self) -> &Frame {
        &self.frame
    }

    /// S_T of the final state: Σ_s min_j ‖x_s − c_j‖² in internal coordinates.
    pub fn cumulative_loss(&self) -> f64 {
        self.cumulative_loss
    }

    /// What the chain did.
    pub fn report(&self) -> &SamplerReport {
        &self.report
    }
}

impl PacoConfig {
    /// Runs the batch chain on the rows of `data` (n × d, every value finite).
    ///
    /// ```
    /// use ndarray::Array2;
    /// use pacstream::paco::PacoParams;
    ///
    /// // Three tight groups on a line.
    /// let data = Array2::from_shape_fn((90, 1), |(i, _)| (i % 3) as f64 * 10.0 + 0.01 * (i / 3) as f64);
    /// let fit = PacoParams::new().iterations(300).seed(1).check()?.fit(data.view())?;
    /// assert_eq!(fit.n_clusters(), 3);
    /// # Ok::<(), pacstream::Error>(())
    /// ```
    pub fn fit(&self, data: ArrayView2<'_, f64>) -> Result<PacoFit> {
        let points = Points::from_array(data)?;
        let dim = points.dim();
        self.check_dim(dim)?;
        let frame = Frame::from_points(points.as_slice(), dim, self)?;
        let mut memory = PointMemory::with_summation(dim, Memory::All, self.summation);
        let mut internal = vec![0.0; dim];
        let mut start = vec![0.0; dim];
        for (row, point) in points.rows().enumerate() {
            frame.to_internal(point, &mut internal);
            if !squared_norm(&internal).is_finite() {
                return Err(Error::ValueTooLarge {
                    row: Some(row),
                    column: 0,
                    value: point[0],
                });
            }
            memory.push(&internal, 0.0, 0.0);
            for (s, x) in start.iter_mut().zip(&internal) {
                *s += x;
            }
        }
        let n = memory.len();
        for s in &mut start {
            *s /= n as f64;
        }
        let n_points = n as u64;
        let target = Target {
            memory: &memory,
            lambda: lambda(self.coeff, dim, n_points, frame.radius()),
            radius: frame.radius(),
            max_k: self.max_k,
            eta: self.eta,
            n_points,
        };
        let mut rng = StreamRng::seed_from(self.seed);
        let mut history = MeansHistory::default();
        let mut source = KMeansSource::new(&memory, &mut history, n_points, &rng, self.max_k);
        // In the pool, so that the parallel parts cost a join each (see the learner).
        let outcome = rayon::scope(|_| {
            run_chain(
                target,
                ProposalRule {
                    scale: self.proposal,
                    multiplier: self.proposal_scale,
                },
                &mut source,
                &mut CoverCache::default(),
                start,
                &mut rng,
                ChainSettings::round(self.iterations, false),
            )
        });
        let centres = Centres::new(frame.to_user(&outcome.centres), dim)?;
        // Labels in the coordinates the chain worked in (the user's unless scaled).
        let labels = memory
            .rows()
            .chunks_exact(dim)
            .map(|p| nearest(&outcome.centres, p).0)
            .collect();
        Ok(PacoFit {
            centres,
            labels,
            frame,
            cumulative_loss: outcome.cumulative_loss,
            report: outcome.report,
        })
    }
}
