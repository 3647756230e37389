//! The report printed at the end of a run.

use std::io::Write;

use pacstream::curves::{Comparator, PrincipalCurveLearner};

use super::summary::{ComparatorSummary, CurveTotals};
use crate::commands::{human_number, human_seconds, plural, report_heading};
use crate::io::reader::RowReader;

pub(super) fn print(
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
        "{}",
        report_heading("principal curve", reader, totals.stream.rounds, "round")
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
        human_number(totals.stream.cumulative_loss),
        plural(totals.stream.scored_rounds, "scored round")
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
