//! Which columns of the input are the outcome, the experts and their `<expert>_awake`
//! masks.

use crate::failure::bad_input;
use crate::io::columns::{parse_column_list, parse_selector};
use crate::io::reader::{FirstRow, Row};
use crate::stream::{FaultAt, row_fault};

use super::ExpertsArgs;

/// Where each part of a row is, among the feature columns the reader returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Columns {
    /// Whether feature 0 is the outcome.
    pub(super) has_outcome: bool,
    /// The number of experts (the features after the outcome).
    pub(super) n_experts: usize,
    /// For each expert, the position of its `<expert>_awake` column among the features.
    pub(super) masks: Vec<Option<usize>>,
}

/// Chooses the columns: the outcome, the experts (given, or every other numeric column not
/// named `*_awake`), and the masks named after the experts.
pub(super) fn plan_columns(
    args: &ExpertsArgs,
    first: &FirstRow<'_>,
) -> anyhow::Result<(Vec<usize>, Columns)> {
    let names = &first.names;
    let outcome = match &args.outcome {
        Some(text) => {
            let selector =
                parse_selector(text).map_err(|r| bad_input(format!("--outcome: {r}")))?;
            Some(
                names
                    .resolve_one(&selector)
                    .map_err(|r| bad_input(format!("--outcome: {r}")))?,
            )
        }
        None => None,
    };
    let labels: Vec<String> = (0..names.width).map(|i| names.label(i)).collect();
    let is_mask = |index: usize| labels[index].ends_with("_awake");
    let experts: Vec<usize> = match &args.experts {
        Some(text) => {
            let selectors =
                parse_column_list(text).map_err(|r| bad_input(format!("--experts: {r}")))?;
            let experts = names
                .resolve_list(&selectors)
                .map_err(|r| bad_input(format!("--experts: {r}")))?;
            if let Some(outcome) = outcome.filter(|o| experts.contains(o)) {
                return Err(bad_input(format!(
                    "--experts: column {} is also the outcome",
                    names.describe(outcome)
                )));
            }
            experts
        }
        None => (0..names.width)
            .filter(|&i| Some(i) != outcome && !is_mask(i) && first.numeric[i])
            .collect(),
    };
    if experts.is_empty() {
        return Err(bad_input(format!(
            "'{}' has no expert column (line {}): name them with --experts",
            names.source, first.line
        )));
    }
    let mut features: Vec<usize> = outcome.into_iter().chain(experts.iter().copied()).collect();
    let mut masks = Vec::with_capacity(experts.len());
    // Each expert's mask by name, in one pass over the header (linear in its width).
    let mut mask_columns: std::collections::HashMap<&str, usize> = Default::default();
    for (index, label) in labels.iter().enumerate() {
        if let Some(expert) = label.strip_suffix("_awake") {
            mask_columns.entry(expert).or_insert(index);
        }
    }
    for &expert in &experts {
        match mask_columns.get(labels[expert].as_str()).copied() {
            Some(index) => {
                masks.push(Some(features.len()));
                features.push(index);
            }
            None => masks.push(None),
        }
    }
    Ok((
        features,
        Columns {
            has_outcome: outcome.is_some(),
            n_experts: experts.len(),
            masks,
        },
    ))
}

impl Columns {
    /// Splits a row into the advice (or losses) and awake flags of the experts; returns the
    /// outcome (0 without one) and whether some expert sleeps. A missing outcome, or a mask
    /// that is not 0 or 1, is a fault of the row.
    pub(super) fn split(
        &self,
        row: &Row<'_>,
        advice: &mut Vec<f64>,
        awake: &mut Vec<bool>,
    ) -> anyhow::Result<(f64, bool)> {
        let n = self.n_experts;
        let start = usize::from(self.has_outcome);
        let outcome = if self.has_outcome { row.values[0] } else { 0.0 };
        if outcome.is_nan() {
            return Err(row_fault(FaultAt::Feature(0), "the outcome is missing"));
        }
        advice.clear();
        advice.extend_from_slice(&row.values[start..start + n]);
        awake.clear();
        let mut sleeping = false;
        for i in 0..n {
            let mut is_awake = !advice[i].is_nan();
            if let Some(position) = self.masks[i] {
                let flag = row.values[position];
                match flag {
                    1.0 => {}
                    0.0 => is_awake = false,
                    _ if flag.is_nan() => is_awake = false,
                    _ => {
                        return Err(row_fault(
                            FaultAt::Feature(position),
                            format!("an <expert>_awake column holds {flag}, not 0 or 1"),
                        ));
                    }
                }
            }
            sleeping |= !is_awake;
            awake.push(is_awake);
        }
        Ok((outcome, sleeping))
    }
}
