//! The first principal component of a set of points: mean, covariance, and the eigenvector
//! of the largest eigenvalue of the d × d covariance matrix.
//!
//! The eigenvector comes from the cyclic Jacobi method, written here rather than taken from
//! a linear-algebra crate: it is one small symmetric matrix (d × d, usually 2 × 2) per
//! window, and the crate that would do it (nalgebra, without default features) costs about
//! 30 s of a clean release build on the project's two-core machines and a dozen transitive
//! crates, for forty lines of textbook code. Jacobi is exact to machine precision for
//! symmetric matrices, whatever the multiplicity of the eigenvalues (a power iteration is
//! not, when the two largest are close), and deterministic.

/// The mean of the row-major `points` (dimension `dim`, at least one row), in `mean`.
pub(crate) fn mean_of(points: &[f64], dim: usize, mean: &mut [f64]) {
    mean.iter_mut().for_each(|m| *m = 0.0);
    for row in points.chunks_exact(dim) {
        for (m, x) in mean.iter_mut().zip(row) {
            *m += x;
        }
    }
    let n = (points.len() / dim).max(1) as f64;
    mean.iter_mut().for_each(|m| *m /= n);
}

/// The first principal direction (unit vector) of the row-major `points` around `mean`, or
/// `None` when they do not spread (zero covariance).
///
/// Sign convention: the first non-zero coordinate is positive, so the direction is a
/// function of the data alone.
pub(crate) fn first_component(points: &[f64], dim: usize, mean: &[f64]) -> Option<Vec<f64>> {
    let mut covariance = vec![0.0; dim * dim];
    let mut centred = vec![0.0; dim];
    for row in points.chunks_exact(dim) {
        for ((c, x), m) in centred.iter_mut().zip(row).zip(mean) {
            *c = x - m;
        }
        for r in 0..dim {
            for c in r..dim {
                covariance[r * dim + c] += centred[r] * centred[c];
            }
        }
    }
    for r in 0..dim {
        for c in 0..r {
            covariance[r * dim + c] = covariance[c * dim + r];
        }
    }
    top_eigenvector(&mut covariance, dim)
}

/// The unit eigenvector of the largest eigenvalue of the symmetric `dim × dim` matrix (which
/// is overwritten), by cyclic Jacobi rotations; `None` for the zero matrix. Among equal
/// largest eigenvalues, the one whose Jacobi column comes first.
pub(crate) fn top_eigenvector(matrix: &mut [f64], dim: usize) -> Option<Vec<f64>> {
    debug_assert_eq!(matrix.len(), dim * dim);
    let scale: f64 = matrix.iter().map(|v| v * v).sum::<f64>().sqrt();
    if !(scale > 0.0 && scale.is_finite()) {
        return None;
    }
    // Columns of `vectors` accumulate the rotations: A = V D Vᵀ at the end.
    let mut vectors = vec![0.0; dim * dim];
    for i in 0..dim {
        vectors[i * dim + i] = 1.0;
    }
    for _sweep in 0..64 {
        let off: f64 = (0..dim)
            .flat_map(|r| (0..dim).filter(move |&c| c != r).map(move |c| (r, c)))
            .map(|(r, c)| matrix[r * dim + c] * matrix[r * dim + c])
            .sum();
        if off.sqrt() <= f64::EPSILON * scale * 1e-2 {
            break;
        }
        for p in 0..dim {
            for q in p + 1..dim {
                let apq = matrix[p * dim + q];
                if apq == 0.0 {
                    continue;
                }
                let app = matrix[p * dim + p];
                let aqq = matrix[q * dim + q];
                // The rotation that zeroes a_pq (Golub & Van Loan, Algorithm 8.5.1).
                let theta = (aqq - app) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..dim {
                    let akp = matrix[k * dim + p];
                    let akq = matrix[k * dim + q];
                    matrix[k * dim + p] = c * akp - s * akq;
                    matrix[k * dim + q] = s * akp + c * akq;
                }
                for k in 0..dim {
                    let apk = matrix[p * dim + k];
                    let aqk = matrix[q * dim + k];
                    matrix[p * dim + k] = c * apk - s * aqk;
                    matrix[q * dim + k] = s * apk + c * aqk;
                }
                for k in 0..dim {
                    let vkp = vectors[k * dim + p];
                    let vkq = vectors[k * dim + q];
                    vectors[k * dim + p] = c * vkp - s * vkq;
                    vectors[k * dim + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    let mut best = 0;
    for i in 1..dim {
        if matrix[i * dim + i] > matrix[best * dim + best] {
            best = i;
        }
    }
    let mut vector: Vec<f64> = (0..dim).map(|k| vectors[k * dim + best]).collect();
    let norm = vector.iter().map(|v| v * v).sum::<f64>().sqrt();
    let sign = match vector.iter().find(|v| **v != 0.0) {
        Some(v) if *v < 0.0 => -1.0,
        _ => 1.0,
    };
    vector.iter_mut().for_each(|v| *v *= sign / norm);
    Some(vector)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StreamRng;

    #[test]
    fn two_by_two_closed_form() {
        // [[2, 1], [1, 2]]: eigenvalues 3 and 1, top eigenvector (1, 1)/√2.
        let v = top_eigenvector(&mut [2.0, 1.0, 1.0, 2.0], 2).unwrap();
        let h = std::f64::consts::FRAC_1_SQRT_2;
        assert!(
            (v[0] - h).abs() < 1e-15 && (v[1] - h).abs() < 1e-15,
            "{v:?}"
        );
        // Diagonal: the larger axis.
        assert_eq!(
            top_eigenvector(&mut [1.0, 0.0, 0.0, 5.0], 2).unwrap(),
            vec![0.0, 1.0]
        );
        assert!(top_eigenvector(&mut [0.0; 4], 2).is_none());
    }

    /// A v = λ_max v on random symmetric matrices, λ_max checked against the largest Rayleigh
    /// quotient over many random directions.
    #[test]
    fn random_symmetric_matrices() {
        let mut rng = StreamRng::seed_from(3);
        for dim in [1, 2, 3, 5, 8] {
            for _ in 0..20 {
                let mut a = vec![0.0; dim * dim];
                for r in 0..dim {
                    for c in r..dim {
                        let v = rng.standard_normal();
                        a[r * dim + c] = v;
                        a[c * dim + r] = v;
                    }
                }
                let original = a.clone();
                let v = top_eigenvector(&mut a, dim).unwrap();
                let av: Vec<f64> = (0..dim)
                    .map(|r| (0..dim).map(|c| original[r * dim + c] * v[c]).sum())
                    .collect();
                let lambda: f64 = av.iter().zip(&v).map(|(x, y)| x * y).sum();
                let residual: f64 = av
                    .iter()
                    .zip(&v)
                    .map(|(x, y)| (x - lambda * y).powi(2))
                    .sum::<f64>()
                    .sqrt();
                assert!(residual < 1e-12, "dim {dim}: residual {residual:e}");
                for _ in 0..200 {
                    let u: Vec<f64> = (0..dim).map(|_| rng.standard_normal()).collect();
                    let norm2: f64 = u.iter().map(|x| x * x).sum();
                    let quotient: f64 = (0..dim)
                        .flat_map(|r| (0..dim).map(move |c| (r, c)))
                        .map(|(r, c)| u[r] * original[r * dim + c] * u[c])
                        .sum::<f64>()
                        / norm2;
                    assert!(
                        quotient <= lambda + 1e-12,
                        "dim {dim}: {quotient} > {lambda}"
                    );
                }
            }
        }
    }

    #[test]
    fn first_component_of_a_line_of_points() {
        let points = [0.0, 0.0, 1.0, 2.0, 2.0, 4.0, 3.0, 6.0];
        let mut mean = [0.0; 2];
        mean_of(&points, 2, &mut mean);
        assert_eq!(mean, [1.5, 3.0]);
        let u = first_component(&points, 2, &mean).unwrap();
        let expected = [1.0 / 5f64.sqrt(), 2.0 / 5f64.sqrt()];
        assert!((u[0] - expected[0]).abs() < 1e-15 && (u[1] - expected[1]).abs() < 1e-15);
        assert!(first_component(&points[2..4], 2, &[1.0, 2.0]).is_none());
    }
}
