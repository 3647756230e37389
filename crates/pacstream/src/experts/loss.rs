//! Loss functions of a prediction against an outcome.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kernels::Lanes;

/// A loss ℓ(prediction, outcome).
///
/// - `ZeroOne`: 1 if the prediction differs from the outcome, else 0 (binary advice);
/// - `Square`: (ŷ − y)²;
/// - `Absolute`: |ŷ − y| (with binary outcomes and ŷ ∈ [0, 1], the expected zero-one loss of
///   predicting 1 with probability ŷ);
/// - `Pinball { tau }`: the quantile loss, τ(y − ŷ) if y ≥ ŷ, (1 − τ)(ŷ − y) otherwise,
///   whose minimiser in expectation is the τ-quantile of y.
///
/// ```
/// use pacstream::experts::Loss;
/// assert_eq!(Loss::Square.value(1.0, 3.0), 4.0);
/// assert_eq!(Loss::Pinball { tau: 0.9 }.value(1.0, 3.0), 1.8);
/// assert!((Loss::Pinball { tau: 0.9 }.value(3.0, 1.0) - 0.2).abs() < 1e-12);
/// assert_eq!(Loss::Absolute.gradient(2.0, 2.0), 0.0); // subgradient 0 at the kink
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Loss {
    /// 1 if prediction ≠ outcome.
    ZeroOne,
    /// (ŷ − y)².
    Square,
    /// |ŷ − y|.
    Absolute,
    /// The pinball (quantile) loss at level τ ∈ (0, 1).
    Pinball {
        /// The quantile level τ.
        tau: f64,
    },
}

impl Loss {
    /// Checks the loss's own parameter.
    pub fn check(&self) -> Result<()> {
        match *self {
            Loss::Pinball { tau } if !(tau > 0.0 && tau < 1.0) => Err(Error::invalid_parameter(
                "tau",
                format!("the pinball level must be in (0, 1), got {tau}"),
            )),
            _ => Ok(()),
        }
    }

    /// ℓ(prediction, outcome).
    #[inline]
    pub fn value(&self, prediction: f64, outcome: f64) -> f64 {
        match *self {
            Loss::ZeroOne => f64::from(u8::from(prediction != outcome)),
            Loss::Square => (prediction - outcome) * (prediction - outcome),
            Loss::Absolute => (prediction - outcome).abs(),
            Loss::Pinball { tau } => {
                let residual = outcome - prediction;
                if residual >= 0.0 {
                    tau * residual
                } else {
                    (tau - 1.0) * residual
                }
            }
        }
    }

    /// Which of the losses this is, as the constant the four-lane kernels are compiled for
    /// ([`value_lanes`]), and its level τ (pinball; 0 otherwise).
    pub(crate) fn kind(&self) -> (u8, f64) {
        match *self {
            Loss::Square => (SQUARE, 0.0),
            Loss::Absolute => (ABSOLUTE, 0.0),
            Loss::Pinball { tau } => (PINBALL, tau),
            Loss::ZeroOne => (ZERO_ONE, 0.0),
        }
    }

    /// ∂ℓ/∂prediction at (prediction, outcome): the slope used by the gradient trick. At the
    /// kink of the absolute and pinball losses the subgradient 0 is used; the zero-one loss is
    /// not differentiable and has gradient 0 everywhere (it is refused with the gradient
    /// option).
    #[inline]
    pub fn gradient(&self, prediction: f64, outcome: f64) -> f64 {
        match *self {
            Loss::ZeroOne => 0.0,
            Loss::Square => 2.0 * (prediction - outcome),
            Loss::Absolute => {
                if prediction > outcome {
                    1.0
                } else if prediction < outcome {
                    -1.0
                } else {
                    0.0
                }
            }
            Loss::Pinball { tau } => {
                if prediction > outcome {
                    1.0 - tau
                } else if prediction < outcome {
                    -tau
                } else {
                    0.0
                }
            }
        }
    }

    /// Whether ℓ(·, y) is convex (every loss here except zero-one).
    pub fn is_convex(&self) -> bool {
        !matches!(self, Loss::ZeroOne)
    }

    /// The name used on the command line (`zero-one`, `square`, `absolute`, `pinball:τ`).
    pub fn name(&self) -> String {
        match self {
            Loss::ZeroOne => "zero-one".into(),
            Loss::Square => "square".into(),
            Loss::Absolute => "absolute".into(),
            Loss::Pinball { tau } => format!("pinball:{tau}"),
        }
    }
}

/// Reads a loss by the name [`Loss::name`] gives it: `zero-one`, `square`, `absolute` or
/// `pinball:τ`, its level checked.
///
/// ```
/// use pacstream::experts::Loss;
/// assert_eq!("pinball:0.9".parse::<Loss>().unwrap(), Loss::Pinball { tau: 0.9 });
/// assert_eq!(Loss::Absolute.name().parse::<Loss>().unwrap(), Loss::Absolute);
/// assert!("pinball:2".parse::<Loss>().is_err());
/// assert!("hinge".parse::<Loss>().is_err());
/// ```
impl std::str::FromStr for Loss {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let loss = match text {
            "zero-one" => Loss::ZeroOne,
            "square" => Loss::Square,
            "absolute" => Loss::Absolute,
            other => match other.strip_prefix("pinball:") {
                Some(tau) => Loss::Pinball {
                    tau: tau.parse().map_err(|_| {
                        Error::invalid_parameter(
                            "tau",
                            format!("pinball:τ needs a number τ, got {tau:?}"),
                        )
                    })?,
                },
                None => {
                    return Err(Error::invalid_parameter(
                        "loss",
                        format!("unknown loss {other:?}: zero-one, square, absolute or pinball:τ"),
                    ));
                }
            },
        };
        loss.check()?;
        Ok(loss)
    }
}

pub(crate) const SQUARE: u8 = 0;
pub(crate) const ABSOLUTE: u8 = 1;
pub(crate) const PINBALL: u8 = 2;
pub(crate) const ZERO_ONE: u8 = 3;

/// [`Loss::value`] on four or eight lanes for the loss of kind `KIND` ([`Loss::kind`]): the
/// same operations, so the same bits. The kind is a constant so that a kernel is compiled for
/// one loss, with no branch in its loop.
#[inline(always)]
pub(crate) fn value_lanes<const KIND: u8, L: Lanes>(
    q: L,
    tau: f64,
    prediction: L::V,
    outcome: L::V,
) -> L::V {
    match KIND {
        SQUARE => {
            let difference = q.sub(prediction, outcome);
            q.mul(difference, difference)
        }
        ABSOLUTE => q.abs(q.sub(prediction, outcome)),
        PINBALL => {
            let residual = q.sub(outcome, prediction);
            q.select(
                q.ge(residual, q.splat(0.0)),
                q.mul(q.splat(tau), residual),
                q.mul(q.splat(tau - 1.0), residual),
            )
        }
        _ => q.select(q.ne(prediction, outcome), q.splat(1.0), q.splat(0.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gradients_match_finite_differences_away_from_kinks() {
        for loss in [Loss::Square, Loss::Absolute, Loss::Pinball { tau: 0.3 }] {
            for (p, y) in [(0.3, 1.0), (2.0, -1.0), (-0.5, 0.25)] {
                let h = 1e-6;
                let numeric = (loss.value(p + h, y) - loss.value(p - h, y)) / (2.0 * h);
                assert!(
                    (numeric - loss.gradient(p, y)).abs() < 1e-6,
                    "{loss:?} {p} {y}"
                );
            }
        }
    }

    #[test]
    fn pinball_level_is_checked() {
        assert!(Loss::Pinball { tau: 1.0 }.check().is_err());
        assert!(Loss::Pinball { tau: f64::NAN }.check().is_err());
        assert!(Loss::Pinball { tau: 0.5 }.check().is_ok());
    }
}
