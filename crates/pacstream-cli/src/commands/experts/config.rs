//! The rule's settings from the arguments: the library resolves the defaults and what each
//! rule takes.

use pacstream::experts::{AggregatorConfig, AggregatorParams, LearningRate, Loss, check_rate};

use super::{ExpertsArgs, library_error};
use crate::commands::Given;
use crate::failure::bad_input;

/// `--loss`, by the library's names of the losses.
pub(super) fn parse_loss(text: &str) -> Result<Loss, String> {
    text.parse().map_err(|error| match error {
        pacstream::Error::InvalidParameter { reason, .. } => reason,
        other => other.to_string(),
    })
}

/// The rule's settings from the arguments: which rate option was given, and the library
/// resolves the rest (defaults, what each rule takes).
pub(super) fn aggregator_config(
    args: &ExpertsArgs,
    n_experts: usize,
    seed: u64,
) -> anyhow::Result<AggregatorConfig> {
    let rule = args.rule;
    if !args.losses && args.outcome.is_none() {
        return Err(bad_input(
            "name the outcome column with --outcome (or give losses with --losses)",
        ));
    }
    if args.beta.is_some() && !rule.is_binary() {
        return Err(bad_input(
            "--beta is weighted majority's parameter; the other rules take --eta",
        ));
    }
    let rate = if let Some(beta) = args.beta {
        Some(LearningRate::beta(beta).map_err(|e| bad_input(format!("--beta: {e}")))?)
    } else if let Some(eta) = args.eta {
        // Checked as the η given, before weighted majority turns it into β = e^{−η}.
        let rate = LearningRate::Fixed(eta);
        check_rate(rate).map_err(library_error)?;
        Some(rate)
    } else if let Some(horizon) = args.horizon {
        Some(LearningRate::Horizon(horizon))
    } else if args.anytime {
        Some(LearningRate::Anytime)
    } else if args.doubling {
        Some(LearningRate::Doubling)
    } else if args.adahedge {
        Some(LearningRate::AdaHedge)
    } else {
        None
    };
    AggregatorParams::new(rule, n_experts)
        .given(rate, AggregatorParams::rate)
        .given(args.loss, AggregatorParams::loss)
        .given(args.loss_bound, AggregatorParams::loss_bound)
        .given(args.prior.clone(), AggregatorParams::prior)
        .given(args.alpha, AggregatorParams::alpha)
        .given(args.lambda, AggregatorParams::lambda)
        .given(args.regulariser, AggregatorParams::regulariser)
        .gradient(args.gradient)
        .sample(args.sample)
        .losses_given(args.losses)
        .seed(seed)
        .check()
        .map_err(library_error)
}
