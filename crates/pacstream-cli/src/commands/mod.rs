//! One module per command family. Each turns its arguments into validated library settings,
//! runs the library, and writes what the shared options ask for.

pub mod kmeans;
pub mod paco;

/// A number for a human-readable report: six significant digits, plain notation for
/// everyday magnitudes and scientific notation otherwise.
pub fn human_number(value: f64) -> String {
    let magnitude = value.abs();
    if value == 0.0 || (1e-3..1e7).contains(&magnitude) {
        let decimals = if value == 0.0 {
            0
        } else {
            (5 - magnitude.log10().floor() as i32).clamp(0, 9) as usize
        };
        let text = format!("{value:.decimals$}");
        if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            text
        }
    } else {
        format!("{value:.5e}")
    }
}

#[cfg(test)]
mod tests {
    use super::human_number;

    #[test]
    fn numbers_read_well() {
        assert_eq!(human_number(0.0), "0");
        assert_eq!(human_number(8901.768852), "8901.77");
        assert_eq!(human_number(3.5), "3.5");
        assert_eq!(human_number(-0.0123456789), "-0.0123457");
        assert_eq!(human_number(1.5e-9), "1.50000e-9");
        assert_eq!(human_number(2.0e12), "2.00000e12");
    }
}
