//! `pacstream curve`: sequential learning of a principal curve over a stream (slpc).
//!
//! The rows stream through [`PrincipalCurveLearner`] one at a time; `--output` gets one
//! record per round (t, loss, cumulative loss, K, phase, candidates, whether the curve
//! changed), `--summary` the final vertices, the projection index of every stored point, the
//! two hindsight comparators and the regrets against them (lower estimates), and the time
//! spent learning and searching the comparators; `--plot` draws the data with the curve (and a few earlier curves, faded), K over
//! time and the cumulative regret. Runs can be checkpointed and resumed.

mod family;
mod figure;
mod report;
mod summary;

use std::time::Instant;

use clap::Args;
use pacstream::curves::{
    Estimator, Feedback, Memory, PrincipalCurveConfig, PrincipalCurveLearner, PrincipalCurveParams,
    Radius,
};
use pacstream::eval::Prequential;

use self::family::{CurveFamily, PlotTrace};
use super::Given;
use super::clusters::AxesArg;
use super::stream_input;
use crate::failure::bad_input;
use crate::io::reader::RowReader;
use crate::options::CommonArgs;
use crate::stream::{PointTask, point_settings};
use crate::ui::Notes;

/// Arguments of `pacstream curve`.
#[derive(Args, Debug, Clone)]
#[command(
    about = "Learn a principal curve from a stream (sequential principal curves, slpc)",
    long_about = "Learn a principal curve from a stream: a polygonal line through the middle \
        of the data, updated at every row, whose number of segments is chosen on the fly \
        (Li & Guedj's sequential principal curves).\n\n\
        The first --warmup rows fix the centre, the radius and the lattice of vertices, and \
        the first curve (a segment along their first principal component). Then every row \
        pays its squared distance to the current curve and the curve moves to the best \
        neighbour under follow the perturbed leader.\n\n\
        --output gets one record per round: t, loss, cumulative_loss, segments, phase, \
        candidates, changed (loss and segments are empty during the warm-up). --summary gets \
        the final vertices, the projection index of every stored row, and the regrets \
        against two hindsight curves: the curve minimising the squared distances plus \
        κ·c_1·K/η_T (the objective follow the perturbed leader targets at the last round T), \
        and the best curve with the learner's final number of segments; both are local \
        optima, so both regrets are lower estimates. Project new points on the curve with \
        `pacstream project --curve SUMMARY.json`.",
    after_help = "Examples:\n  \
        pacstream curve --columns long,lat data/quakes.csv --plot quakes.svg --summary curve.json\n  \
        pacstream curve --feedback bandit --window 5000 big.csv -o rounds.csv"
)]
pub struct CurveArgs {
    /// R: the data are assumed in a ball of radius √d·R around the warm-up mean; `auto` is
    /// 1.5 × the largest distance of a warm-up row to their mean, over √d.
    #[arg(
        long,
        value_name = "R|auto",
        default_value = "auto",
        allow_negative_numbers = true
    )]
    pub radius: Radius,

    /// δ, the lattice spacing of the vertices [default: 2√d·R/100].
    #[arg(long, value_name = "D", allow_negative_numbers = true)]
    pub delta: Option<f64>,

    /// p, the largest number of segments (1 to 1,000).
    #[arg(long, value_name = "P", default_value_t = 50)]
    pub max_segments: usize,

    /// L, the largest length of the curve [default: no limit].
    #[arg(long, value_name = "L", allow_negative_numbers = true)]
    pub max_length: Option<f64>,

    /// κ, the multiplier of the penalty per segment (0: no penalty). Curves are ranked by
    /// η·reward − penalty, so --eta-scale divides its weight: with the default 1000, κ = 1
    /// acts as κ = 0.001 would at the theory's learning rate [default: 1].
    #[arg(long, value_name = "K", allow_negative_numbers = true)]
    pub penalty: Option<f64>,

    /// e_mult, the multiplier of the learning rate η_t (it also divides the weight of the
    /// penalty and of the perturbations) [default: 1000].
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    pub eta_scale: Option<f64>,

    /// What each round observes: `full` (every candidate's reward on every stored row) or
    /// `bandit` (the paper's Algorithm 3: every reward in exploration rounds, the chosen
    /// curve's only otherwise).
    #[arg(long, value_enum, value_name = "MODE")]
    pub feedback: Option<Feedback>,

    /// How `bandit` feedback estimates unobserved rewards.
    #[arg(
        long,
        value_enum,
        value_name = "NAME",
        default_value = "label-efficient"
    )]
    pub estimator: Estimator,

    /// ε, the probability of an exploration round.
    #[arg(
        long,
        value_name = "EPS",
        default_value_t = 0.1,
        allow_negative_numbers = true
    )]
    pub explore: f64,

    /// α, the reward the `paper` estimator gives unobserved curves [default: c_0/2].
    #[arg(long, value_name = "A", allow_negative_numbers = true)]
    pub alpha: Option<f64>,

    /// M, the size of a window's local vertex set (2 to 1,024).
    #[arg(long, value_name = "M", default_value_t = 16)]
    pub local_vertices: usize,

    /// The largest number of candidate curves scored per round (1 to 65,536).
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_candidates: usize,

    /// t_0, the rows collected before the first curve (2 to 1,000,000).
    #[arg(long, value_name = "T0", default_value_t = 20)]
    pub warmup: usize,

    /// Keep only the last W rows (constant memory and cost per row; 2 to 100,000,000) instead
    /// of all. The hindsight curve and the regret need every row and are left out.
    #[arg(long, value_name = "W")]
    pub window: Option<usize>,

    /// With every row kept, rows of one kind (exploration, exploitation, warm-up) within a
    /// cube of side F·δ are merged into one summary (count, mean, scatter), so that the cost
    /// per row stops growing with the stream; 0 keeps every row apart (exact scores).
    #[arg(long, value_name = "F", default_value_t = pacstream::curves::DEFAULT_BIN_SIDE,
          allow_negative_numbers = true)]
    pub bin_side: f64,

    /// With every row kept, the largest number of row summaries: beyond it the cubes double
    /// in side and merge, so that the cost per row stays bounded (0: no limit).
    #[arg(long, value_name = "N", default_value_t = pacstream::curves::DEFAULT_MAX_ATOMS)]
    pub max_atoms: usize,

    #[command(flatten)]
    pub axes: AxesArg,

    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `pacstream curve`.
pub fn run(args: &CurveArgs) -> anyhow::Result<()> {
    let mut options = args.common.validate()?;
    options.input.max_magnitude = Some(pacstream::data::MAX_COORDINATE);
    let notes = Notes::new(options.quiet);
    let config = config(args, options.seed)?;
    let mut reader = RowReader::open(&options.input, &[], notes)?;
    let axes = args.axes.choose(&reader)?;
    let layout = reader.layout().clone();
    let dim = layout.features.len();
    if config.check_dim(dim).is_err() {
        return Err(bad_input(format!(
            "'{}' has {dim} columns to learn from; the principal curve learner takes at most {} \
             (its cost grows with the square of the number of columns): choose them with \
             --columns",
            reader.source_name(),
            pacstream::curves::limits::MAX_DIM
        )));
    }
    let plot = options.plot.is_some();
    let settings = point_settings(config.settings(), &layout, None, &options)?;
    let mut task = PointTask {
        family: CurveFamily {
            config: config.clone(),
        },
        settings,
        dim,
        state: CurveState {
            learner: config.build(),
            totals: Prequential::new(),
            last: None,
            learn_seconds: 0.0,
            plot: plot.then(|| PlotTrace::new(options.plot_points, dim, options.seed)),
        },
    };
    let started = Instant::now();
    let input = stream_input(&mut task, &mut reader, &options, notes)?;
    summary::finish(&task, &reader, &input, &options, &config, axes, started)
}

fn config(args: &CurveArgs, seed: u64) -> anyhow::Result<PrincipalCurveConfig> {
    let params = PrincipalCurveParams::new()
        .radius(args.radius)
        .max_segments(args.max_segments)
        .estimator(args.estimator)
        .explore(args.explore)
        .local_vertices(args.local_vertices)
        .max_candidates(args.max_candidates)
        .warmup(args.warmup)
        .bin_side(args.bin_side)
        .max_atoms(args.max_atoms)
        .seed(seed)
        .given(args.delta, PrincipalCurveParams::delta)
        .given(args.max_length, PrincipalCurveParams::max_length)
        .given(args.penalty, PrincipalCurveParams::penalty)
        .given(args.eta_scale, PrincipalCurveParams::eta_scale)
        .given(args.feedback, PrincipalCurveParams::feedback)
        .given(args.alpha, PrincipalCurveParams::alpha)
        .given(
            args.window.map(Memory::Window),
            PrincipalCurveParams::memory,
        );
    params.check().map_err(library_error)
}

fn library_error(error: pacstream::Error) -> anyhow::Error {
    crate::failure::library_error::<CurveArgs>("principal curve", error)
}

crate::point_state!(
    /// Everything a checkpoint holds.
    CurveState<PrincipalCurveLearner> {
        /// Wall time spent in the learner so far (not part of any record).
        learn_seconds: f64,
        plot: Option<PlotTrace>,
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_name_the_parameter() {
        let error = library_error(pacstream::Error::invalid_parameter("max_segments", "bad"));
        assert!(error.to_string().contains("--max-segments"), "{error}");
    }
}
