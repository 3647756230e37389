//! The columns the command line adds to PACBO's `--output` records.

use serde::Serialize;

/// The centres of a record: nested arrays in JSON lines, JSON text in delimited files
/// (which cannot hold nested values).
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum CentresField {
    Nested(Vec<Vec<f64>>),
    Text(String),
}

/// The columns the command line adds to the library's record of a round
/// ([`pacstream::paco::PacoRecord`]) in online mode.
#[derive(Serialize)]
pub(super) struct ExtraColumns {
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
