//! Builds the expert-advice example files from `data/eustock.csv` (daily closes of the DAX,
//! SMI, CAC and FTSE, 1991–1998):
//!
//! - `data/eustock-forecasts.csv`: the DAX close of each day (the outcome) and six simple
//!   forecasts of it made from the previous days only: yesterday's close (`last`), the means
//!   of the last 5 and 20 closes, the linear extrapolation of the last two (`trend`),
//!   yesterday's close moved as the SMI moved yesterday (`smi_move`), and yesterday's close
//!   plus the mean daily change of the last 20 days (`drift20`);
//! - `data/eustock-updown.csv`: whether the DAX closed up (1) or not (0), and eight binary
//!   forecasters of that: yesterday's direction and its reversal, always up, yesterday's
//!   direction of the SMI, CAC and FTSE, the 5-day momentum, and yesterday's close above its
//!   20-day mean.
//!
//! The first 21 days of the index only feed the forecasters (1,839 rounds remain).
//!
//! Run from the repository root: `cargo run -p pacstream-cli --example eustock_experts`.
//! The files are shipped; a test checks that they are what this program writes.

use std::error::Error;
use std::fmt::Write as _;

/// Days of history every forecaster needs before the first forecast.
const HISTORY: usize = 21;

fn main() -> Result<(), Box<dyn Error>> {
    let text = std::fs::read_to_string("data/eustock.csv")?;
    let (forecasts, updown) = build(&text)?;
    std::fs::write("data/eustock-forecasts.csv", forecasts)?;
    std::fs::write("data/eustock-updown.csv", updown)?;
    Ok(())
}

/// The two files' contents, from the text of `eustock.csv`.
pub fn build(text: &str) -> Result<(String, String), Box<dyn Error>> {
    let mut rows: Vec<[f64; 5]> = Vec::new();
    for line in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let fields: Vec<f64> = line
            .split(',')
            .map(|f| f.trim().parse::<f64>())
            .collect::<Result<_, _>>()?;
        let row: [f64; 5] = fields
            .try_into()
            .map_err(|f: Vec<f64>| format!("expected 5 fields, found {}", f.len()))?;
        rows.push(row);
    }
    let (dax, smi, cac, ftse) = (1, 2, 3, 4);
    let mean =
        |t: usize, days: usize| rows[t - days..t].iter().map(|r| r[dax]).sum::<f64>() / days as f64;
    let up = |t: usize, column: usize| u8::from(rows[t][column] > rows[t - 1][column]);

    // No date column: every column but the outcome is an expert.
    let mut forecasts = String::from("DAX,last,mean5,mean20,trend,smi_move,drift20\n");
    let mut updown = String::from(
        "up,same_as_yesterday,reversal,always_up,smi_yesterday,cac_yesterday,ftse_yesterday,momentum5,above_mean20\n",
    );
    for t in HISTORY..rows.len() {
        let previous = rows[t - 1][dax];
        writeln!(
            forecasts,
            "{},{},{},{},{},{},{}",
            rows[t][dax],
            previous,
            round(mean(t, 5)),
            round(mean(t, 20)),
            round(2.0 * previous - rows[t - 2][dax]),
            round(previous * rows[t - 1][smi] / rows[t - 2][smi]),
            round(previous + (previous - rows[t - 21][dax]) / 20.0),
        )?;
        let yesterday = up(t - 1, dax);
        writeln!(
            updown,
            "{},{},{},1,{},{},{},{},{}",
            up(t, dax),
            yesterday,
            1 - yesterday,
            up(t - 1, smi),
            up(t - 1, cac),
            up(t - 1, ftse),
            u8::from(previous > rows[t - 6][dax]),
            u8::from(previous > mean(t, 20)),
        )?;
    }
    Ok((forecasts, updown))
}

/// Index points to the hundredth, as the closes themselves are quoted.
fn round(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}
