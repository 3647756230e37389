//! The report of a stream, printed at the end.

use std::io::Write;

use pacstream::paco::Paco;
use pacstream::paco::oracle::{HindsightReport, IdealSamplerBound};

use pacstream::describe::StreamTotals;

use super::OnlineState;
use crate::commands::clusters::write_centres_table;
use crate::commands::{human_number, human_seconds, plural, report_heading};
use crate::io::reader::RowReader;

pub(super) fn print_online(
    out: &mut dyn Write,
    reader: &RowReader,
    learner: &Paco,
    totals: &StreamTotals,
    state: &OnlineState,
    hindsight: Option<&HindsightReport>,
) -> anyhow::Result<()> {
    let labels = &reader.layout().feature_labels;
    writeln!(
        out,
        "{}",
        report_heading("PACBO", reader, totals.rounds, "round")
    )?;
    if let Some(k) = learner.n_clusters() {
        writeln!(out, "  clusters (k̂)           {k}")?;
    }
    let changes = state.k_path.total_changes.saturating_sub(1) as usize;
    let sketch = if state.k_path.is_complete() {
        ""
    } else {
        ", a sketch of them"
    };
    writeln!(
        out,
        "  k̂_t path               {} (see --summary{sketch})",
        plural(changes as u64, "change")
    )?;
    writeln!(
        out,
        "  cumulative loss        {} over {} (this chain)",
        human_number(totals.cumulative_loss),
        plural(totals.scored_rounds, "predicted row")
    )?;
    if let Some(mean) = totals.mean_loss {
        writeln!(out, "  mean loss per round    {}", human_number(mean))?;
    }
    let warmup = totals.rounds - totals.scored_rounds;
    if warmup > 0 {
        writeln!(
            out,
            "  warm-up rows           {warmup} (not predicted: they fix the centre and R)"
        )?;
    }
    let report = learner.report();
    if report.iterations > 0 {
        writeln!(
            out,
            "  acceptance rate        {}% of {} iterations",
            human_number(100.0 * report.accepted as f64 / report.iterations as f64),
            report.iterations
        )?;
    }
    if let Some(frame) = learner.frame() {
        writeln!(
            out,
            "  radius R               {}",
            human_number(frame.radius())
        )?;
    }
    if report.points_beyond_radius > 0 {
        writeln!(
            out,
            "  rows beyond R          {} (the bound assumes none; the run went on)",
            report.points_beyond_radius
        )?;
    }
    if let Some(hindsight) = hindsight {
        print_hindsight(out, learner, hindsight)?;
    }
    writeln!(
        out,
        "  learning time          {}",
        human_seconds(state.seconds)
    )?;
    if let Some(centres) = learner.centres() {
        write_centres_table(out, labels, centres, "", |_| String::new())?;
    }
    Ok(())
}

/// The regret against the best fixed clusterings in hindsight and the bound, as the library
/// reports them.
fn print_hindsight(
    out: &mut dyn Write,
    learner: &Paco,
    hindsight: &HindsightReport,
) -> anyhow::Result<()> {
    match hindsight.no_fits {
        Some(reason) => writeln!(out, "  regret                 not computed: {reason}")?,
        None => {
            writeln!(
                out,
                "  regret against the best fixed clustering in hindsight of the predicted rows \
                 (k-means, best of {} restarts; every k in --summary):",
                hindsight.restarts
            )?;
            let best = hindsight.best().map(|f| f.n_clusters);
            let shown: Vec<usize> = (1..=6)
                .chain(learner.n_clusters())
                .chain(best)
                .filter(|&k| hindsight.fit(k).is_some())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            for k in shown {
                let fit = hindsight.fit(k).expect("filtered above");
                let mut tags = Vec::new();
                if Some(k) == learner.n_clusters() {
                    tags.push("k̂_T");
                }
                if Some(k) == best {
                    tags.push("the best in hindsight");
                }
                writeln!(
                    out,
                    "    k = {k:<4} loss {:<12} regret {}{}",
                    human_number(fit.loss),
                    human_number(fit.regret),
                    if tags.is_empty() {
                        String::new()
                    } else {
                        format!("  ({})", tags.join(", "))
                    }
                )?;
            }
        }
    }
    match &hindsight.bound {
        IdealSamplerBound::Bound(bound) => {
            writeln!(
                out,
                "  bound                  {} on {}",
                human_number(bound.value),
                IdealSamplerBound::WHAT
            )?;
            writeln!(
                out,
                "                         ({}: a = {}; the k that minimises it: {}; {})",
                IdealSamplerBound::THEOREM,
                human_number(bound.settings.coeff),
                bound.bound_k,
                IdealSamplerBound::WARMUP_ROWS
            )?;
        }
        IdealSamplerBound::NoBound { reason } => {
            writeln!(out, "  bound                  none: {reason}")?;
        }
    }
    Ok(())
}
