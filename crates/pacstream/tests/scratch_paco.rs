#![allow(clippy::print_stderr)]
use pacstream::StreamRng;

fn bound_general(
    t: f64,
    d: f64,
    r: f64,
    max_norm: f64,
    p: f64,
    eta: f64,
    a: f64,
    lstar: f64,
    k: f64,
) -> f64 {
    let r2 = r * r;
    let eps2 = r2 * (1.0f64).min(1.0 / (a * t.sqrt()));
    let c1 = (2.0 * r + max_norm).powi(2);
    let per = d * r2 / (a * (d + 2.0)) * t.sqrt() * (4.0 * r2 / eps2).ln()
        + 2.0 * r2 * eta / (a * (d + 2.0)) * t.sqrt();
    let constant = t * d * eps2 / (d + 2.0)
        + 2.0 * r2 * p.ln() / (a * (d + 2.0)) * t.sqrt()
        + a * (d + 2.0) * c1 * c1 / (2.0 * r2) * t.sqrt();
    lstar + k * per + constant
}

fn simulate(a: f64, t_max: usize, kind: &str, reps: usize, cells: usize) -> (f64, f64, f64, f64) {
    let r = 1.0;
    let lo = -2.0 * r;
    let h = 4.0 * r / cells as f64;
    let grid: Vec<f64> = (0..cells).map(|j| lo + (j as f64 + 0.5) * h).collect();
    let lambda = |n: usize| a * 3.0 / (2.0 * (n.max(1) as f64).sqrt() * r * r);
    let mut lhs = 0.0;
    let mut rhs2 = 0.0;
    let mut lstar_avg = 0.0;
    let mut maxn = 0.0f64;
    for rep in 0..reps {
        let mut rng = StreamRng::seed_from(rep as u64);
        let mut s = vec![0.0; cells];
        let mut xs = Vec::new();
        let mut total = 0.0;
        let mut p = vec![0.0; cells];
        for t in 1..=t_max {
            let lam = lambda(t - 1);
            let m = s.iter().map(|v| -lam * v).fold(f64::NEG_INFINITY, f64::max);
            let mut z = 0.0;
            for j in 0..cells {
                p[j] = (-lam * s[j] - m).exp();
                z += p[j];
            }
            for j in 0..cells {
                p[j] /= z;
            }
            let mean: f64 = (0..cells).map(|j| p[j] * grid[j]).sum();
            let x = match kind {
                "zero" => 0.0,
                "alt" => {
                    if t % 2 == 0 {
                        r
                    } else {
                        -r
                    }
                }
                "adv" => {
                    if mean > 0.0 {
                        -r
                    } else {
                        r
                    }
                }
                "half" => 0.5 * r,
                _ => unreachable!(),
            };
            let e: f64 = (0..cells).map(|j| p[j] * (grid[j] - x).powi(2)).sum();
            total += e;
            // draw
            let u = rng.next_f64();
            let mut acc = 0.0;
            let mut jj = cells - 1;
            for j in 0..cells {
                acc += p[j];
                if acc > u {
                    jj = j;
                    break;
                }
            }
            let c = grid[jj] + h * (rng.next_f64() - 0.5);
            let lhat = (c - x).powi(2);
            for j in 0..cells {
                let l = (grid[j] - x).powi(2);
                s[j] += l + lam / 2.0 * (l - lhat).powi(2);
            }
            xs.push(x);
            maxn = maxn.max(x.abs());
        }
        lhs += total;
        let lam_t = lambda(t_max);
        let m = s
            .iter()
            .map(|v| -lam_t * v)
            .fold(f64::NEG_INFINITY, f64::max);
        let w: f64 = s
            .iter()
            .map(|v| (-lam_t * v - m).exp() * h / (4.0 * r))
            .sum();
        rhs2 += -(w.ln() + m) / lam_t;
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let c = mean.clamp(-r, r);
        lstar_avg += xs.iter().map(|x| (x - c).powi(2)).sum::<f64>();
    }
    let n = reps as f64;
    let lstar = lstar_avg / n;
    let b = bound_general(t_max as f64, 1.0, r, maxn, 1.0, 0.0, a, lstar, 1.0);
    (lhs / n, rhs2 / n, lstar, b)
}

#[test]
fn explore() {
    for kind in ["zero", "alt", "adv", "half"] {
        for a in [0.01, 0.03, 0.1, 0.3, 1.0] {
            for t in [100usize, 1000] {
                let (lhs, rhs2, lstar, b) = simulate(a, t, kind, 40, 800);
                eprintln!(
                    "{kind:5} a {a:5} T {t:5}: LHS {lhs:9.2} thm2 {rhs2:9.2} L* {lstar:8.2} cor {b:10.2} | regret frac thm2 {:.3} cor {:.3} | loss frac cor {:.3}",
                    (lhs - lstar) / (rhs2 - lstar),
                    (lhs - lstar) / (b - lstar),
                    lhs / b
                );
            }
        }
    }
}
