//! The report of an experts run, and its figure.

use std::io::Write;

use pacstream::experts::bounds::Guarantee;
use pacstream::experts::{AggregatorConfig, AggregatorSummary};

use super::history::History;
use crate::commands::{human_number, short_name};
use crate::io::atomic::write_atomically;
use crate::io::reader::RowReader;
use crate::plot::{ExpertsFigure, draw_experts};

pub(super) fn print_report(
    out: &mut dyn Write,
    reader: &RowReader,
    config: &AggregatorConfig,
    summary: &AggregatorSummary<'_>,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "{} on '{}': {} experts, {} rounds, rate {}",
        config.rule.name(),
        reader.source_name(),
        config.n_experts,
        summary.rounds,
        config.rate.name()
    )?;
    writeln!(
        out,
        "  cumulative loss    {}",
        human_number(summary.cumulative_loss)
    )?;
    writeln!(
        out,
        "  best expert        {} ({})",
        summary.best_expert,
        human_number(summary.best_expert_loss)
    )?;
    writeln!(
        out,
        "  {:<18} {} against {}",
        summary.guarantee_bounded.name(),
        human_number(summary.regret),
        summary.best_expert
    )?;
    match &summary.guarantee {
        Guarantee::Bound(bound) => writeln!(
            out,
            "  bound              {} on the {} ({})",
            human_number(bound.value),
            bound.bounded.name(),
            bound.theorem
        )?,
        Guarantee::NoBound { reason, .. } => writeln!(out, "  bound              none: {reason}")?,
    }
    if summary.out_of_range_rounds > 0 {
        writeln!(
            out,
            "  note: in {} rounds a loss fell outside the range the bound assumes (--loss-bound)",
            summary.out_of_range_rounds
        )?;
    }
    let width = summary
        .experts
        .iter()
        .map(|e| e.name.chars().count())
        .max()
        .unwrap_or(6)
        .max(6);
    writeln!(
        out,
        "  {:<width$}  {:>14}  {:>12}  {:>12}  {:>10}",
        "expert", "loss", "regret", "bound", "weight"
    )?;
    for expert in &summary.experts {
        writeln!(
            out,
            "  {:<width$}  {:>14}  {:>12}  {:>12}  {:>10}",
            expert.name,
            human_number(expert.cumulative_loss),
            human_number(expert.regret_against),
            expert.regret_bound.map_or("-".to_string(), human_number),
            human_number(expert.final_weight)
        )?;
    }
    Ok(())
}

pub(super) fn draw_figure(
    path: &std::path::Path,
    reader: &RowReader,
    config: &AggregatorConfig,
    names: &[String],
    history: &History,
    guarantee: &Guarantee,
) -> anyhow::Result<()> {
    let n = names.len();
    let figure = ExpertsFigure {
        title: format!(
            "{} ({}) on {}",
            config.rule.name(),
            config.rate.name(),
            short_name(reader.source_name())
        ),
        names: names.to_vec(),
        rounds: history.rounds.iter().map(|&r| r as f64).collect(),
        weights: history
            .weights
            .chunks_exact(n)
            .map(<[f64]>::to_vec)
            .collect(),
        regret: history.regret.clone(),
        bound: history.bound.clone(),
        regret_name: guarantee.bounded().name().to_string(),
        no_bound: guarantee.value().is_none(),
        learner_mean: history.learner_mean.clone(),
        expert_means: history
            .expert_means
            .chunks_exact(n)
            .map(<[f64]>::to_vec)
            .collect(),
    };
    write_atomically(path, draw_experts(&figure)?.as_bytes())
}
