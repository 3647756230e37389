//! Writes `data/changing.csv`: a stream whose number of clusters changes from 2 to 5.
//!
//! `cargo run --release -p pacstream --example changing_stream > data/changing.csv`
//!
//! 1200 rows `x,y,cluster`: rows 1–400 come from two Gaussian clusters (centres (0, 0) and
//! (10, 0)); rows 401–1200 from five (those two, and (0, 10), (10, 10), (5, 17)); every
//! cluster has unit variance per coordinate, and each row picks its cluster uniformly among
//! the clusters of its phase. The draws come from `StreamRng::seed_from(2024)`, so the file
//! is the same on every machine; values are written with four decimals.

// The output of this program is the CSV on stdout.
#![allow(clippy::print_stdout)]

use pacstream::StreamRng;

fn main() {
    let centres = [
        [0.0, 0.0],
        [10.0, 0.0],
        [0.0, 10.0],
        [10.0, 10.0],
        [5.0, 17.0],
    ];
    let mut rng = StreamRng::seed_from(2024);
    println!("x,y,cluster");
    for row in 0..1200 {
        let active = if row < 400 { 2 } else { 5 };
        let cluster = rng.index_below(active);
        let [cx, cy] = centres[cluster];
        let x = cx + rng.standard_normal();
        let y = cy + rng.standard_normal();
        println!("{x:.4},{y:.4},{}", cluster + 1);
    }
}
