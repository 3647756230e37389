//! `pacstream curve`: sequential learning of a principal curve over a stream (slpc).
//!
//! The rows stream through [`PrincipalCurveLearner`] one at a time; `--output` gets one
//! record per round (t, loss, cumulative loss, K, phase, candidates, whether the curve
//! changed), `--summary` the final vertices, the projection index of every stored point, the
//! two hindsight comparators and the regrets against them (lower estimates), and the time
//! spent learning and searching the comparators; `--plot` draws the data with the curve (and a few earlier curves, faded), K over
//! time and the cumulative regret. Runs can be checkpointed and resumed.

use std::io::Write;
use std::time::Instant;

use clap::{Args, ValueEnum};
use pacstream::OnlineLearner;
use pacstream::curves::{
    Comparator, Estimator, Feedback, HindsightCurve, Memory, Phase, PrincipalCurveConfig,
    PrincipalCurveLearner, PrincipalCurveParams, PrincipalCurveReport, PrincipalCurveStep, Radius,
};
use pacstream::eval::{Prequential, Totals};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    InputSummary, human_number, human_seconds, no_good_rows, plural, short_name, stream_input,
    write_summary,
};
use crate::failure::bad_input;
use crate::io::atomic::write_atomically;
use crate::io::reader::{Row, RowReader};
use crate::io::records::RecordSink;
use crate::options::CommonArgs;
use crate::plot::{CurveFigure, RowSample, ThinnedSeries, draw_curve};
use crate::point_state;
use crate::stream::{PointFamily, PointTask, check_same_sample, point_fault};
use crate::ui::{Notes, report_writer};

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
    #[arg(long, value_name = "R|auto", default_value = "auto", value_parser = parse_radius,
          allow_negative_numbers = true)]
    pub radius: RadiusArg,

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
    pub feedback: Option<FeedbackArg>,

    /// How `bandit` feedback estimates unobserved rewards.
    #[arg(
        long,
        value_enum,
        value_name = "NAME",
        default_value = "label-efficient"
    )]
    pub estimator: EstimatorArg,

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

    /// The two columns drawn by --plot (default: the first two columns learned).
    #[arg(
        long,
        value_name = "COL,COL",
        requires = "plot",
        help_heading = "Output"
    )]
    pub axes: Option<String>,

    #[command(flatten)]
    pub common: CommonArgs,
}

/// `--radius` values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RadiusArg {
    /// From the warm-up rows.
    Auto,
    /// This value.
    Given(f64),
}

fn parse_radius(text: &str) -> Result<RadiusArg, String> {
    if text == "auto" {
        return Ok(RadiusArg::Auto);
    }
    text.parse::<f64>()
        .map(RadiusArg::Given)
        .map_err(|_| format!("expected a number or `auto`, got {text:?}"))
}

/// `--feedback` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FeedbackArg {
    /// Exploration and exploitation rounds (the paper's Algorithm 3).
    Bandit,
    /// Every reward every round.
    Full,
}

/// `--estimator` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EstimatorArg {
    /// Rewards of exploration rounds, scaled by 1/ε.
    LabelEfficient,
    /// The paper's importance-weighted estimator with α.
    Paper,
}

/// Runs `pacstream curve`.
pub fn run(args: &CurveArgs) -> anyhow::Result<()> {
    let mut options = args.common.validate()?;
    options.input.max_magnitude = Some(pacstream::data::MAX_COORDINATE);
    let notes = Notes::new(options.quiet);
    let config = config(args, options.seed)?;
    let mut reader = RowReader::open(&options.input, &[], notes)?;
    let axes = super::clusters::Axes::choose(args.axes.as_deref(), &reader)?;
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
    let settings = serde_json::json!({
        "radius": match config.radius() { Radius::Auto => Value::from("auto"), Radius::Given(r) => Value::from(r) },
        "delta": config.delta(),
        "max_segments": config.max_segments(),
        "max_length": config.max_length().is_finite().then_some(config.max_length()),
        "penalty": config.penalty(),
        "eta_scale": config.eta_scale(),
        "feedback": feedback_name(config.feedback()),
        "estimator": estimator_name(config.estimator()),
        "explore": config.explore(),
        "alpha": config.alpha(),
        "local_vertices": config.local_vertices(),
        "max_candidates": config.max_candidates(),
        "warmup": config.warmup(),
        "window": match config.memory() { Memory::All => None, Memory::Window(w) => Some(w) },
        "bin_side": config.bin_side(),
        "max_atoms": config.max_atoms(),
        "seed": config.seed(),
        "columns": layout.features.iter().map(|i| i + 1).collect::<Vec<_>>(),
        "on_bad_row": options.input.on_bad_row,
        "plot_points": plot.then_some(options.plot_points),
    });
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
    let state = &task.state;
    let learner = &state.learner;
    if learner.n_rounds() == 0 {
        return Err(no_good_rows(reader.source_name(), &input));
    }
    let Some(curve) = learner.curve() else {
        return Err(bad_input(format!(
            "'{}' has {} good rows: too few to start a curve (--warmup {}, and the rows must \
             not all be equal)",
            reader.source_name(),
            learner.n_rounds(),
            config.warmup()
        )));
    };
    // The comparators need every row of the stream: only with all rows kept. Each is a
    // local search started from the final curve, which costs a few of the learner's
    // exploration rounds (the unpenalised search to p segments is left to the library).
    let comparators_started = Instant::now();
    let (penalised, hindsight) = if matches!(config.memory(), Memory::All) {
        (
            learner.hindsight(Comparator::Penalised),
            learner.hindsight(Comparator::SameSegments),
        )
    } else {
        (None, None)
    };
    let comparator_seconds = comparators_started.elapsed().as_secs_f64();
    let stored = learner.stored_points();
    let mut projections = Vec::with_capacity(stored.len());
    let mut stored_loss = 0.0;
    let mut comparator_cumulative: Vec<(u64, f64)> = Vec::new();
    let first_scored = learner.report().initialised_at.map_or(u64::MAX, |r| r + 1);
    let mut comparator_sum = 0.0;
    for (round, point) in &stored {
        let projection = curve.polyline().project(point);
        stored_loss += projection.squared_distance;
        projections.push(ProjectionRecord {
            t: *round,
            arc_length: projection.arc_length,
            squared_distance: projection.squared_distance,
        });
        if let Some(h) = &hindsight {
            if *round >= first_scored {
                comparator_sum += h.curve.polyline().squared_distance(point);
                comparator_cumulative.push((*round, comparator_sum));
            }
        }
    }
    let last = state.last;
    let cumulative_loss = state.totals.cumulative_loss();
    let totals = CurveTotals {
        rounds: learner.n_rounds(),
        scored_rounds: last.map_or(0, |t| t.scored_rounds),
        cumulative_loss,
        mean_loss: last.and_then(|t| t.mean_loss()),
        stored_points: stored.len(),
        mean_squared_distance: stored_loss / stored.len().max(1) as f64,
    };
    let comparators: Vec<ComparatorSummary> = [&penalised, &hindsight]
        .into_iter()
        .flatten()
        .map(|h| ComparatorSummary::new(h, cumulative_loss))
        .collect();
    let lattice = learner.lattice().expect("a curve has a lattice");
    let total_seconds = started.elapsed().as_secs_f64();
    if !options.quiet {
        let mut out = report_writer(options.stdout_carries_data());
        print_report(
            &mut out,
            &reader,
            learner,
            &totals,
            &comparators,
            state.learn_seconds,
            comparator_seconds,
        )?;
    }
    let summary = CurveSummary {
        command: "curve",
        input: InputSummary::new(&reader, &input),
        settings: &task.settings,
        vertices: curve.vertex_rows().map(<[f64]>::to_vec).collect(),
        segments: curve.n_segments(),
        length: curve.length(),
        lattice: LatticeSummary {
            origin: lattice.origin(),
            radius: lattice.radius(),
            spacing: lattice.spacing(),
        },
        totals,
        comparators,
        report: learner.report(),
        learn_seconds: state.learn_seconds,
        comparator_seconds,
        total_seconds,
        projections,
    };
    write_summary(&options, &summary)?;
    if let (Some(path), Some(trace)) = (&options.plot, &state.plot) {
        let figure = curve_figure(
            &reader,
            axes,
            learner,
            trace,
            hindsight.as_ref(),
            &comparator_cumulative,
        );
        write_atomically(path, draw_curve(&figure)?.as_bytes())?;
    }
    Ok(())
}

fn config(args: &CurveArgs, seed: u64) -> anyhow::Result<PrincipalCurveConfig> {
    let mut params = PrincipalCurveParams::new()
        .radius(match args.radius {
            RadiusArg::Auto => Radius::Auto,
            RadiusArg::Given(r) => Radius::Given(r),
        })
        .max_segments(args.max_segments)
        .estimator(match args.estimator {
            EstimatorArg::LabelEfficient => Estimator::LabelEfficient,
            EstimatorArg::Paper => Estimator::Paper,
        })
        .explore(args.explore)
        .local_vertices(args.local_vertices)
        .max_candidates(args.max_candidates)
        .warmup(args.warmup)
        .bin_side(args.bin_side)
        .max_atoms(args.max_atoms)
        .seed(seed);
    if let Some(delta) = args.delta {
        params = params.delta(delta);
    }
    if let Some(length) = args.max_length {
        params = params.max_length(length);
    }
    if let Some(penalty) = args.penalty {
        params = params.penalty(penalty);
    }
    if let Some(eta) = args.eta_scale {
        params = params.eta_scale(eta);
    }
    if let Some(feedback) = args.feedback {
        params = params.feedback(match feedback {
            FeedbackArg::Bandit => Feedback::Bandit,
            FeedbackArg::Full => Feedback::Full,
        });
    }
    if let Some(alpha) = args.alpha {
        params = params.alpha(alpha);
    }
    if let Some(window) = args.window {
        params = params.memory(Memory::Window(window));
    }
    params.check().map_err(library_error)
}

fn library_error(error: pacstream::Error) -> anyhow::Error {
    crate::failure::library_error::<CurveArgs>("principal curve", error)
}

fn feedback_name(feedback: Feedback) -> &'static str {
    match feedback {
        Feedback::Bandit => "bandit",
        Feedback::Full => "full",
    }
}

fn estimator_name(estimator: Estimator) -> &'static str {
    match estimator {
        Estimator::LabelEfficient => "label-efficient",
        Estimator::Paper => "paper",
    }
}

/// One `--output` record.
#[derive(Serialize)]
struct RoundRecord {
    /// The round t (1-based; bad rows skipped are not rounds).
    t: u64,
    /// Δ(f̂_t, x_t), undefined during the warm-up.
    loss: Option<f64>,
    cumulative_loss: f64,
    /// K(f̂_t), undefined during the warm-up.
    segments: Option<usize>,
    phase: Phase,
    /// The number of curves the next one was chosen from.
    candidates: usize,
    /// Whether the next curve differs.
    changed: bool,
}

/// What `--plot` draws, kept in bounded memory: a uniform sample of the rows, K and the
/// cumulative loss thinned to at most [`ThinnedSeries::LIMIT`] rounds, and a few earlier
/// curves.
#[derive(Debug, Serialize, Deserialize)]
struct PlotTrace {
    rows: RowSample,
    dim: usize,
    /// (t, K(f̂_t), cumulative loss), indexed by scored rounds.
    series: ThinnedSeries<(u64, usize, f64)>,
    /// Earlier curves (t, vertices), taken at t = 2^j · 100.
    snapshots: Vec<(u64, Vec<f64>)>,
}

impl PlotTrace {
    const SNAPSHOTS: usize = 6;

    fn new(capacity: usize, dim: usize, seed: u64) -> Self {
        Self {
            rows: RowSample::new(capacity, dim, seed),
            dim,
            series: ThinnedSeries::default(),
            snapshots: Vec::new(),
        }
    }

    fn add(
        &mut self,
        point: &[f64],
        number: u64,
        step: &PrincipalCurveStep,
        totals: &Totals,
        learner: &PrincipalCurveLearner,
    ) {
        self.rows.add(point, number);
        if let Some(k) = step.segments {
            self.series.push(
                totals.scored_rounds,
                (step.round, k, totals.cumulative_loss),
            );
        }
        let t = step.round;
        if t >= 100 && (t / 100).is_power_of_two() && t % 100 == 0 {
            if let Some(curve) = learner.curve() {
                self.snapshots.push((t, curve.vertices().to_vec()));
                if self.snapshots.len() > Self::SNAPSHOTS {
                    self.snapshots.remove(0);
                }
            }
        }
    }

    fn validate(&self, capacity: usize, dim: usize) -> Result<(), String> {
        self.rows.validate(capacity, dim)?;
        self.series.validate(|(_, _, loss)| loss.is_finite())?;
        if self.dim != dim
            || self
                .snapshots
                .iter()
                .any(|(_, v)| v.len() % dim != 0 || v.len() < 2 * dim)
        {
            return Err("its plot sample is inconsistent".to_string());
        }
        Ok(())
    }
}

point_state!(
    /// Everything a checkpoint holds.
    CurveState<PrincipalCurveLearner> {
        /// Wall time spent in the learner so far (not part of any record).
        learn_seconds: f64,
        plot: Option<PlotTrace>,
    }
);

/// The curve's hooks into the streaming loop.
#[derive(Debug)]
struct CurveFamily {
    config: PrincipalCurveConfig,
}

impl PointFamily for CurveFamily {
    const COMMAND: &'static str = "curve";
    type State = CurveState;

    fn same_config(&self, learner: &PrincipalCurveLearner) -> bool {
        learner.config() == &self.config
    }

    fn check_extra(
        &self,
        mine: &CurveState,
        theirs: &CurveState,
        dim: usize,
    ) -> Result<(), String> {
        if !(theirs.learn_seconds.is_finite() && theirs.learn_seconds >= 0.0) {
            return Err("its learning time is not a duration".to_string());
        }
        check_same_sample(mine.plot.as_ref(), theirs.plot.as_ref(), |mine, theirs| {
            theirs.validate(mine.rows.capacity(), dim)
        })
    }

    fn learn(
        &mut self,
        state: &mut CurveState,
        row: &Row<'_>,
        sink: &mut RecordSink,
    ) -> anyhow::Result<()> {
        let started = Instant::now();
        let step = state
            .learner
            .learn_one(row.values)
            // A row the learner cannot take (e.g. far outside the ball) is a bad row.
            .map_err(|error| point_fault(error, 0, library_error))?;
        state.learn_seconds += started.elapsed().as_secs_f64();
        let totals = state.account(&step);
        sink.write(&RoundRecord {
            t: step.round,
            loss: step.loss,
            cumulative_loss: totals.cumulative_loss,
            segments: step.segments,
            phase: step.phase,
            candidates: step.candidates,
            changed: step.changed,
        })?;
        if let Some(trace) = &mut state.plot {
            trace.add(row.values, row.number, &step, &totals, &state.learner);
        }
        Ok(())
    }
}

#[derive(Serialize)]
struct CurveTotals {
    rounds: u64,
    scored_rounds: u64,
    cumulative_loss: f64,
    mean_loss: Option<f64>,
    /// The rows the learner keeps (all, or the last --window).
    stored_points: usize,
    /// The mean squared distance from the stored rows to the final curve.
    mean_squared_distance: f64,
}

#[derive(Serialize)]
struct LatticeSummary<'a> {
    origin: &'a [f64],
    radius: f64,
    spacing: f64,
}

/// A hindsight comparator and the regret against it.
#[derive(Serialize)]
struct ComparatorSummary {
    /// `penalised` or `same-segments`.
    comparator: Comparator,
    /// What the comparator minimises, in words.
    objective_minimised: &'static str,
    vertices: Vec<Vec<f64>>,
    segments: usize,
    /// Σ_s Δ(f*, x_s) over the scored rounds.
    loss: f64,
    /// h(f*)/η_T (0 for `same-segments`).
    penalty: f64,
    /// loss + penalty.
    objective: f64,
    /// η_T, for `penalised`.
    learning_rate: Option<f64>,
    /// κ c_1/η_T, for `penalised`.
    penalty_per_segment: f64,
    max_segments: usize,
    /// cumulative_loss − objective: a lower estimate of the regret against the best curve
    /// of the class (f* is a local optimum).
    regret: f64,
    moves: usize,
    converged: bool,
}

impl ComparatorSummary {
    fn new(h: &HindsightCurve, cumulative_loss: f64) -> Self {
        Self {
            comparator: h.comparator,
            objective_minimised: h.comparator.objective(),
            vertices: h.curve.vertex_rows().map(<[f64]>::to_vec).collect(),
            segments: h.curve.n_segments(),
            loss: h.loss,
            penalty: h.penalty,
            objective: h.objective,
            learning_rate: h.learning_rate,
            penalty_per_segment: h.penalty_per_segment,
            max_segments: h.max_segments,
            regret: h.regret(cumulative_loss),
            moves: h.moves,
            converged: h.converged,
        }
    }
}

/// The projection of a stored row on the final curve.
#[derive(Serialize)]
struct ProjectionRecord {
    /// The round of the row.
    t: u64,
    /// The projection index: the arc length from the first vertex.
    arc_length: f64,
    squared_distance: f64,
}

#[derive(Serialize)]
struct CurveSummary<'a> {
    command: &'static str,
    input: InputSummary<'a>,
    settings: &'a Value,
    /// The final curve's vertices, in the input's coordinates (what `pacstream project`
    /// reads).
    vertices: Vec<Vec<f64>>,
    segments: usize,
    length: f64,
    lattice: LatticeSummary<'a>,
    totals: CurveTotals,
    /// The hindsight comparators and the regrets against them (only when every row is
    /// kept): the penalised objective of follow the perturbed leader, and the best curve
    /// with the learner's number of segments.
    comparators: Vec<ComparatorSummary>,
    report: &'a PrincipalCurveReport,
    /// Wall time spent in the learner over the whole stream, in seconds.
    learn_seconds: f64,
    /// Wall time spent searching the hindsight comparators, in seconds.
    comparator_seconds: f64,
    /// Wall time of the command (reading, learning, comparator, outputs), in seconds.
    total_seconds: f64,
    projections: Vec<ProjectionRecord>,
}

fn print_report(
    out: &mut dyn Write,
    reader: &RowReader,
    learner: &PrincipalCurveLearner,
    totals: &CurveTotals,
    comparators: &[ComparatorSummary],
    learn_seconds: f64,
    comparator_seconds: f64,
) -> anyhow::Result<()> {
    let labels = &reader.layout().feature_labels;
    let curve = learner.curve().expect("a curve exists");
    writeln!(
        out,
        "principal curve on '{}': {} × {}",
        reader.source_name(),
        plural(totals.rounds, "round"),
        plural(labels.len() as u64, "column")
    )?;
    writeln!(out, "  segments               {}", curve.n_segments())?;
    writeln!(
        out,
        "  length                 {}",
        human_number(curve.length())
    )?;
    writeln!(
        out,
        "  mean squared distance  {} (stored rows to the final curve)",
        human_number(totals.mean_squared_distance)
    )?;
    writeln!(
        out,
        "  cumulative loss        {} over {}",
        human_number(totals.cumulative_loss),
        plural(totals.scored_rounds, "scored round")
    )?;
    // Each regret says what it is measured against; both comparators are local optima, so
    // both regrets are lower estimates. No bound is printed: the local search has none.
    for c in comparators {
        match c.comparator {
            Comparator::Penalised => {
                writeln!(
                    out,
                    "  regret, penalised      {} = cumulative loss − min over curves f of \
                     [loss(f) + κ·c_1·K(f)/η_T] (lower estimate: the minimum is searched locally)",
                    human_number(c.regret)
                )?;
                writeln!(
                    out,
                    "    best f found         {}, loss {} + penalty {} ({} per segment, \
                     η_T = {}) = {}",
                    plural(c.segments as u64, "segment"),
                    human_number(c.loss),
                    human_number(c.penalty),
                    human_number(c.penalty_per_segment),
                    human_number(c.learning_rate.unwrap_or(f64::NAN)),
                    human_number(c.objective)
                )?;
            }
            _ => {
                writeln!(
                    out,
                    "  regret, same K         {} = cumulative loss − min over curves f with at \
                     most {} of loss(f) (lower estimate: the minimum is searched locally)",
                    human_number(c.regret),
                    plural(c.max_segments as u64, "segment")
                )?;
                writeln!(
                    out,
                    "    best f found         {}, loss {}",
                    plural(c.segments as u64, "segment"),
                    human_number(c.loss)
                )?;
            }
        }
    }
    if comparators.is_empty() {
        writeln!(
            out,
            "  regret                 not computed: with --window the rows the comparators \
             need are forgotten"
        )?;
    }
    writeln!(
        out,
        "  regret bound           none: this local search has no guarantee (the bounds of \
         Li & Guedj 2021 are for follow the perturbed leader over every curve on the lattice)"
    )?;
    writeln!(
        out,
        "  learning time          {}",
        human_seconds(learn_seconds)
    )?;
    if !comparators.is_empty() {
        writeln!(
            out,
            "  hindsight searches     {}",
            human_seconds(comparator_seconds)
        )?;
    }
    let report = learner.report();
    writeln!(
        out,
        "  curve changes          {} ({} exploration, {} exploitation rounds)",
        report.curve_changes, report.exploration_rounds, report.exploitation_rounds
    )?;
    if report.points_outside_ball > 0 {
        writeln!(
            out,
            "  outside the ball       {} (their reward is clipped; consider a larger --radius)",
            plural(report.points_outside_ball, "row")
        )?;
    }
    write!(out, "  {:<8}", "vertex")?;
    for label in labels {
        write!(out, "  {label:>12}")?;
    }
    writeln!(out)?;
    for (i, vertex) in curve.vertex_rows().enumerate() {
        write!(out, "  {i:<8}")?;
        for value in vertex {
            write!(out, "  {:>12}", human_number(*value))?;
        }
        writeln!(out)?;
    }
    out.flush()?;
    Ok(())
}

fn curve_figure(
    reader: &RowReader,
    axes: super::clusters::Axes,
    learner: &PrincipalCurveLearner,
    trace: &PlotTrace,
    hindsight: Option<&HindsightCurve>,
    comparator_cumulative: &[(u64, f64)],
) -> CurveFigure {
    let labels = &reader.layout().feature_labels;
    let super::clusters::Axes { x, y } = axes;
    let dim = trace.dim;
    // One-dimensional data: the row's value against its position in the sample.
    let project = |values: &[f64], index: usize| match y {
        Some(y) => [values[x], values[y]],
        None => [values[x], index as f64],
    };
    let points = trace
        .rows
        .points()
        .chunks_exact(dim)
        .enumerate()
        .map(|(i, p)| project(p, i))
        .collect();
    let line = |vertices: &[f64]| -> Vec<[f64; 2]> {
        vertices
            .chunks_exact(dim)
            .enumerate()
            .map(|(i, v)| project(v, i))
            .collect()
    };
    let curve = learner.curve().expect("a curve exists");
    let segments = trace
        .series
        .points()
        .iter()
        .map(|&(_, (t, k, _))| (t as f64, k as f64))
        .collect();
    // Regret at the traced times: the learner's cumulative loss minus the comparator's.
    let regret = (!comparator_cumulative.is_empty()).then(|| {
        trace
            .series
            .points()
            .iter()
            .filter_map(|&(_, (t, _, loss))| {
                let position = comparator_cumulative.partition_point(|&(s, _)| s <= t);
                (position > 0).then(|| (t as f64, loss - comparator_cumulative[position - 1].1))
            })
            .collect()
    });
    let loss = trace
        .series
        .points()
        .iter()
        .map(|&(_, (t, _, l))| (t as f64, l))
        .collect();
    CurveFigure {
        title: format!(
            "principal curve of {}: {} after {} rounds",
            short_name(reader.source_name()),
            plural(curve.n_segments() as u64, "segment"),
            learner.n_rounds()
        ),
        x_label: labels[x].clone(),
        y_label: y.map_or_else(|| "sample index".to_string(), |y| labels[y].clone()),
        points,
        curve: line(curve.vertices()),
        earlier: trace.snapshots.iter().map(|(t, v)| (*t, line(v))).collect(),
        hindsight: hindsight.map(|h| line(h.curve.vertices())),
        segments,
        regret,
        cumulative_loss: loss,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radius_values() {
        assert_eq!(parse_radius("auto"), Ok(RadiusArg::Auto));
        assert_eq!(parse_radius("2.5"), Ok(RadiusArg::Given(2.5)));
        assert!(parse_radius("big").is_err());
    }

    #[test]
    fn options_name_the_parameter() {
        let error = library_error(pacstream::Error::invalid_parameter("max_segments", "bad"));
        assert!(error.to_string().contains("--max-segments"), "{error}");
    }
}
