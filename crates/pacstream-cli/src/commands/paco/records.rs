//! One `--output` record of a stream.

use serde::Serialize;

/// The centres of a record: nested arrays in JSON lines, JSON text in delimited files
/// (which cannot hold nested values).
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum CentresField {
    Nested(Vec<Vec<f64>>),
    Text(String),
}

/// One `--output` record of online mode.
#[derive(Serialize)]
pub(super) struct RoundRecord {
    /// The round t (1-based; bad rows skipped are not rounds).
    pub(super) t: u64,
    /// k̂_t, the number of clusters that predicted the row (undefined during the warm-up).
    pub(super) k: Option<usize>,
    /// ℓ(ĉ_t, x_t) (undefined during the warm-up).
    pub(super) loss: Option<f64>,
    /// The sum of the losses so far.
    pub(super) cumulative_loss: f64,
    /// The nearest centre of ĉ_t.
    pub(super) label: Option<usize>,
    /// The acceptance rate of the chain run after the row (none while the warm-up buffers).
    pub(super) acceptance_rate: Option<f64>,
    /// The --labels value of the row (a column only with --labels).
    #[serde(skip_serializing_if = "Column::is_absent")]
    pub(super) true_label: Column<f64>,
    /// The centres of ĉ_t (a column only with --centres; undefined during the warm-up).
    #[serde(skip_serializing_if = "Column::is_absent")]
    pub(super) centres: Column<CentresField>,
}

/// An optional column of the records: absent from every record, or present in every record
/// (undefined in some), so that delimited files keep one width.
pub(super) enum Column<T> {
    Absent,
    Present(Option<T>),
}

impl<T> Column<T> {
    pub(super) fn is_absent(&self) -> bool {
        matches!(self, Column::Absent)
    }
}

impl<T: Serialize> Serialize for Column<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Column::Present(Some(value)) => value.serialize(serializer),
            _ => serializer.serialize_none(),
        }
    }
}
