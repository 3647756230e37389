//! Fits batch k-means to a CSV file (numbers only, one header row), for counting the
//! instructions of a whole fit with `valgrind --tool=callgrind` (repeatable whatever else
//! runs on the machine) and for comparing settings on the same data:
//!
//! ```sh
//! cargo build --release -p pacstream --example kmeans_fit
//! RAYON_NUM_THREADS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/kmeans_fit digits.csv 10 10 0
//! ```
//!
//! Arguments: FILE K N_INIT SEED [TOL [ALGORITHM [STOPPING]]] with ALGORITHM one of `auto`,
//! `lloyd`, `hamerly` and STOPPING one of `labels`, `shift`; `KMEANS_FIT_REFINEMENT=none`
//! (or `hartigan`, the default) chooses what runs after Lloyd. Prints the inertia, the iterations of the winning restart and the wall time of
//! the fit.

use std::time::Instant;

use ndarray::Array2;
use pacstream::kmeans::{Algorithm, KMeansParams, Refinement, Stopping};

#[allow(clippy::print_stdout)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        return Err("usage: kmeans_fit FILE K N_INIT SEED [TOL [ALGORITHM [STOPPING]]]".into());
    }
    let text = std::fs::read_to_string(&args[1])?;
    let k: usize = args[2].parse()?;
    let n_init: usize = args[3].parse()?;
    let seed: u64 = args[4].parse()?;
    let mut values = Vec::new();
    let mut n_rows = 0;
    for line in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        for field in line.split(',') {
            values.push(field.trim().parse::<f64>()?);
        }
        n_rows += 1;
    }
    let data = Array2::from_shape_vec((n_rows, values.len() / n_rows), values)?;
    let mut params = KMeansParams::new(k).n_init(n_init).seed(seed);
    if let Some(tol) = args.get(5) {
        params = params.tol(tol.parse()?);
    }
    if let Some(algorithm) = args.get(6) {
        params = params.algorithm(match algorithm.as_str() {
            "lloyd" => Algorithm::Lloyd,
            "hamerly" => Algorithm::Hamerly,
            "auto" => Algorithm::Auto,
            other => return Err(format!("unknown algorithm {other}").into()),
        });
    }
    if let Ok(max_iter) = std::env::var("KMEANS_FIT_MAX_ITER") {
        params = params.max_iter(max_iter.parse()?);
    }
    if let Some(stopping) = args.get(7) {
        params = params.stopping(match stopping.as_str() {
            "labels" => Stopping::ChangedLabels,
            "shift" => Stopping::CentreShift,
            other => return Err(format!("unknown stopping rule {other}").into()),
        });
    }
    if let Ok(refinement) = std::env::var("KMEANS_FIT_REFINEMENT") {
        params = params.refinement(match refinement.as_str() {
            "none" => Refinement::None,
            "hartigan" => Refinement::Hartigan,
            other => return Err(format!("unknown refinement {other}").into()),
        });
    }
    let config = params.check()?;
    let start = Instant::now();
    let fit = config.fit(data.view())?;
    let seconds = start.elapsed().as_secs_f64();
    let report = fit.report();
    println!(
        "inertia {:.6} n_iter {} converged {} single_point_moves {} seconds {seconds:.4}",
        report.inertia, report.n_iter, report.converged, report.single_point_moves
    );
    Ok(())
}
