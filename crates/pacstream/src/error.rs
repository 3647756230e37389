//! The library's error type.
//!
//! Errors are for failures the caller can act on: a parameter out of range, a point with the
//! wrong dimension or a non-finite value, too few points for the requested model, a snapshot
//! whose parts contradict each other. Things that are not failures ("not converged", "empty
//! cluster re-seeded", "duplicate centres") are fields of reports, never errors.
//!
//! Every fallible operation of a learner is atomic: when it returns an `Err`, the learner is
//! exactly as it was before the call.

use std::fmt;

/// Shorthand for `Result<T, pacstream::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the library.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter is outside its valid range. `name` is the parameter's name in the params
    /// builder (and, with dashes, in the command line).
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// Why the value is rejected, including the value.
        reason: String,
    },

    /// A point (or a row of a batch) does not have the dimension the learner expects.
    #[error("{}expected {expected} values, found {found}", Location(*.row))]
    DimensionMismatch {
        /// Index of the offending row in a batch (0-based), if the point came from a batch.
        row: Option<usize>,
        /// The dimension the learner was set up with (or saw first).
        expected: usize,
        /// The dimension of the offending point.
        found: usize,
    },

    /// A coordinate is NaN or infinite.
    #[error("{}value {value} in column {column} is not finite", Location(*.row))]
    NonFinite {
        /// Index of the offending row in a batch (0-based), if the point came from a batch.
        row: Option<usize>,
        /// Index of the offending coordinate (0-based).
        column: usize,
        /// The offending value.
        value: f64,
    },

    /// A coordinate of a point is larger in absolute value than
    /// [`crate::data::MAX_COORDINATE`], beyond which squared distances would overflow.
    #[error("{}value {value} in column {column} is too large: coordinates must lie within ±{}, so that squared distances stay finite", Location(*.row), crate::data::MAX_COORDINATE)]
    ValueTooLarge {
        /// Index of the offending row in a batch (0-based), if the point came from a batch.
        row: Option<usize>,
        /// Index of the offending coordinate (0-based).
        column: usize,
        /// The offending value.
        value: f64,
    },

    /// A sample weight is negative or not finite, or all weights are zero.
    #[error("{}", match .row {
        Some(row) => format!("sample weight {value} of row {row} must be finite and >= 0"),
        None => "sample weights must not all be zero".to_string(),
    })]
    InvalidWeight {
        /// Index of the offending weight (0-based); `None` when the weights sum to zero.
        row: Option<usize>,
        /// The offending value (0 when the weights sum to zero).
        value: f64,
    },

    /// Too few points for the requested model (for example n < k in k-means).
    #[error("need at least {required} points, got {found}")]
    NotEnoughPoints {
        /// The minimum number of points.
        required: usize,
        /// The number of points given.
        found: usize,
    },

    /// A batch holds no points, or a point has no coordinates.
    #[error("empty input: {0}")]
    EmptyInput(&'static str),

    /// Inputs that belong together disagree (for example a weight vector whose length is not
    /// the number of points, or advice and outcome of different sizes).
    #[error("inconsistent input: {0}")]
    InconsistentInput(String),

    /// A deserialised snapshot contradicts itself (for example `k` centres of the wrong
    /// dimension). Restoring never produces a learner with broken invariants.
    #[error("invalid snapshot: {0}")]
    InvalidSnapshot(String),
}

impl Error {
    /// An [`Error::InvalidParameter`] for `name`, with the reason.
    pub fn invalid_parameter(name: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidParameter {
            name,
            reason: reason.into(),
        }
    }

    /// Checks a count parameter against its documented range `[min, max]`: below `min` it is
    /// refused as `must be >= min`, above `max` as `must be at most max`. Every count a
    /// learner allocates or loops by has such an upper bound, checked before anything is
    /// allocated (each family's `limits` module lists them).
    pub(crate) fn check_count(
        name: &'static str,
        value: usize,
        min: usize,
        max: usize,
    ) -> Result<()> {
        if value < min {
            return Err(Error::invalid_parameter(
                name,
                format!("must be >= {min}, got {value}"),
            ));
        }
        if value > max {
            return Err(Error::invalid_parameter(
                name,
                format!("must be at most {max}, got {value}"),
            ));
        }
        Ok(())
    }

    /// The same error, attributed to row `row` of a batch (a no-op for errors without a row).
    #[must_use]
    pub fn at_row(self, row: usize) -> Self {
        match self {
            Error::DimensionMismatch {
                expected, found, ..
            } => Error::DimensionMismatch {
                row: Some(row),
                expected,
                found,
            },
            Error::NonFinite { column, value, .. } => Error::NonFinite {
                row: Some(row),
                column,
                value,
            },
            Error::ValueTooLarge { column, value, .. } => Error::ValueTooLarge {
                row: Some(row),
                column,
                value,
            },
            Error::InvalidWeight { value, .. } => Error::InvalidWeight {
                row: Some(row),
                value,
            },
            other => other,
        }
    }
}

/// Formats the optional row prefix of point errors ("row 3: ").
struct Location(Option<usize>);

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(row) => write!(f, "row {row}: "),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_row_and_column() {
        let err = Error::NonFinite {
            row: None,
            column: 1,
            value: f64::NAN,
        }
        .at_row(7);
        assert_eq!(
            err.to_string(),
            "row 7: value NaN in column 1 is not finite"
        );
        let err = Error::DimensionMismatch {
            row: None,
            expected: 2,
            found: 3,
        };
        assert_eq!(err.to_string(), "expected 2 values, found 3");
        assert_eq!(
            Error::invalid_parameter("n_clusters", "must be >= 1, got 0").to_string(),
            "invalid parameter `n_clusters`: must be >= 1, got 0"
        );
    }
}
