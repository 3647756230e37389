//! k-means++ seeding against its theorem and its exact law.
//!
//! Theorem (Arthur & Vassilvitskii 2007; lecture notes §10.2): the potential φ of the
//! k-means++ seeding satisfies E[φ] ≤ 8(ln k + 2)·φ_OPT. A Monte Carlo average cannot fail
//! that bound (typical ratios are 1–3 against a bound near 25), so on small instances
//! (n ≤ 10, k ≤ 3) this test computes E[φ] exactly, by enumerating every seeding sequence
//! with its probability under D² sampling, and φ_OPT exactly, by enumerating every partition
//! into k clusters; then asserts the bound with no margin.
//!
//! The sampler itself is then tested against the same exact law: a chi-square test of the
//! sequences drawn by the library's seeding (vanilla and greedy k-means++, weighted and not)
//! over many fixed seeds.

use std::collections::HashMap;

use ndarray::{Array1, Array2};
use pacstream::StreamRng;
use pacstream::kmeans::{Init, seed_indices};

/// A small instance: points (row-major), dimension, weights.
struct Instance {
    name: String,
    points: Vec<Vec<f64>>,
    weights: Vec<f64>,
}

impl Instance {
    fn unit(name: impl Into<String>, points: Vec<Vec<f64>>) -> Self {
        let weights = vec![1.0; points.len()];
        Self {
            name: name.into(),
            points,
            weights,
        }
    }

    fn n(&self) -> usize {
        self.points.len()
    }

    fn array(&self) -> Array2<f64> {
        let dim = self.points[0].len();
        Array2::from_shape_vec((self.n(), dim), self.points.concat()).expect("rectangular")
    }

    /// D²(x) of every point against the centres `chosen` (indices).
    fn closest(&self, chosen: &[usize]) -> Vec<f64> {
        self.points
            .iter()
            .map(|x| {
                chosen
                    .iter()
                    .map(|&c| squared_distance(x, &self.points[c]))
                    .fold(f64::INFINITY, f64::min)
            })
            .collect()
    }

    /// The weighted potential φ = Σ w(x)·D²(x) of the centres `chosen`.
    fn potential(&self, chosen: &[usize]) -> f64 {
        self.closest(chosen)
            .iter()
            .zip(&self.weights)
            .map(|(d2, w)| w * d2)
            .sum()
    }

    /// The law of the next centre given `chosen`: ∝ w (first centre) or ∝ w·D², then, for
    /// greedy seeding, the best of `trials` independent draws (lowest potential once added;
    /// ties to the first drawn), enumerated over every tuple of draws.
    fn next_law(&self, chosen: &[usize], trials: usize) -> Vec<f64> {
        let masses: Vec<f64> = if chosen.is_empty() {
            self.weights.clone()
        } else {
            self.closest(chosen)
                .iter()
                .zip(&self.weights)
                .map(|(d2, w)| w * d2)
                .collect()
        };
        let total: f64 = masses.iter().sum();
        let draw: Vec<f64> = masses.iter().map(|m| m / total).collect();
        if chosen.is_empty() || trials == 1 {
            return draw;
        }
        let gain: Vec<f64> = (0..self.n())
            .map(|c| {
                let mut with = chosen.to_vec();
                with.push(c);
                self.potential(&with)
            })
            .collect();
        let mut law = vec![0.0; self.n()];
        let mut tuple = vec![0usize; trials];
        loop {
            let probability: f64 = tuple.iter().map(|&t| draw[t]).product();
            if probability > 0.0 {
                let mut best = tuple[0];
                for &t in &tuple[1..] {
                    if gain[t] < gain[best] {
                        best = t;
                    }
                }
                law[best] += probability;
            }
            // Next tuple in lexicographic order.
            let mut position = trials;
            loop {
                if position == 0 {
                    return law;
                }
                position -= 1;
                tuple[position] += 1;
                if tuple[position] < self.n() {
                    break;
                }
                tuple[position] = 0;
            }
        }
    }

    /// Every seeding sequence of k centres with its probability.
    fn sequences(&self, n_clusters: usize, trials: usize) -> Vec<(Vec<usize>, f64)> {
        let mut out = Vec::new();
        let mut stack = vec![(Vec::new(), 1.0)];
        while let Some((chosen, probability)) = stack.pop() {
            if chosen.len() == n_clusters {
                out.push((chosen, probability));
                continue;
            }
            for (next, p) in self.next_law(&chosen, trials).into_iter().enumerate() {
                if p > 0.0 {
                    let mut longer = chosen.clone();
                    longer.push(next);
                    stack.push((longer, probability * p));
                }
            }
        }
        out
    }

    /// φ_OPT: the lowest weighted k-means cost over every partition into k non-empty
    /// clusters (restricted growth strings enumerate each partition once).
    fn optimal_potential(&self, n_clusters: usize) -> f64 {
        let mut labels = vec![0usize; self.n()];
        let mut best = f64::INFINITY;
        fn recurse(
            instance: &Instance,
            labels: &mut Vec<usize>,
            position: usize,
            used: usize,
            n_clusters: usize,
            best: &mut f64,
        ) {
            let n = instance.n();
            if position == n {
                if used == n_clusters {
                    *best = best.min(instance.partition_cost(labels, n_clusters));
                }
                return;
            }
            // Not enough points left to open the missing clusters.
            if n_clusters - used > n - position {
                return;
            }
            for label in 0..=used.min(n_clusters - 1) {
                labels[position] = label;
                let used = used.max(label + 1);
                recurse(instance, labels, position + 1, used, n_clusters, best);
            }
        }
        recurse(self, &mut labels, 0, 0, n_clusters, &mut best);
        best
    }

    fn partition_cost(&self, labels: &[usize], n_clusters: usize) -> f64 {
        let dim = self.points[0].len();
        let mut cost = 0.0;
        for cluster in 0..n_clusters {
            let members: Vec<usize> = (0..self.n()).filter(|&i| labels[i] == cluster).collect();
            let mass: f64 = members.iter().map(|&i| self.weights[i]).sum();
            if mass == 0.0 {
                continue;
            }
            let mut mean = vec![0.0; dim];
            for &i in &members {
                for (m, x) in mean.iter_mut().zip(&self.points[i]) {
                    *m += self.weights[i] * x / mass;
                }
            }
            cost += members
                .iter()
                .map(|&i| self.weights[i] * squared_distance(&self.points[i], &mean))
                .sum::<f64>();
        }
        cost
    }
}

fn squared_distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

fn random_instance(seed: u64, n: usize, dim: usize) -> Instance {
    let mut rng = StreamRng::seed_from(seed);
    let points = (0..n)
        .map(|_| (0..dim).map(|_| 10.0 * rng.next_f64()).collect())
        .collect();
    Instance::unit(format!("random seed {seed}, n = {n}, d = {dim}"), points)
}

fn instances() -> Vec<Instance> {
    let mut all = Vec::new();
    for seed in 0..6 {
        all.push(random_instance(
            seed,
            6 + (seed as usize % 5),
            1 + seed as usize % 2,
        ));
    }
    // Adversarial shapes: scales spanning orders of magnitude, an outlier, heavy
    // duplicates, tight far-apart groups, and points on a line at doubling distances.
    let line = |xs: &[f64]| xs.iter().map(|&x| vec![x]).collect::<Vec<_>>();
    all.push(Instance::unit(
        "doubling line",
        line(&[0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]),
    ));
    all.push(Instance::unit(
        "outlier",
        line(&[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1000.0]),
    ));
    all.push(Instance::unit(
        "duplicates",
        line(&[0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 10.0, 10.0, 10.0]),
    ));
    all.push(Instance::unit(
        "tight groups",
        vec![
            vec![0.0, 0.0],
            vec![0.01, 0.0],
            vec![0.0, 0.01],
            vec![100.0, 0.0],
            vec![100.01, 0.0],
            vec![100.0, 0.01],
            vec![50.0, 86.6],
            vec![50.01, 86.6],
            vec![50.0, 86.61],
        ],
    ));
    all.push(Instance::unit(
        "square with centre",
        vec![
            vec![0.0, 0.0],
            vec![1.0, 0.0],
            vec![0.0, 1.0],
            vec![1.0, 1.0],
            vec![0.5, 0.5],
            vec![0.5, 0.5],
        ],
    ));
    let mut weighted = random_instance(40, 8, 2);
    weighted.name = "weighted".into();
    weighted.weights = vec![1.0, 3.0, 0.5, 0.0, 2.0, 1.0, 7.0, 0.25];
    all.push(weighted);
    all
}

#[test]
fn expected_potential_is_within_the_theorem_bound() {
    let mut worst: f64 = 0.0;
    for instance in instances() {
        for n_clusters in 1..=3 {
            let sequences = instance.sequences(n_clusters, 1);
            let total_probability: f64 = sequences.iter().map(|(_, p)| p).sum();
            assert!((total_probability - 1.0).abs() < 1e-12, "{}", instance.name);
            let expected: f64 = sequences
                .iter()
                .map(|(chosen, p)| p * instance.potential(chosen))
                .sum();
            let optimum = instance.optimal_potential(n_clusters);
            if optimum == 0.0 {
                // k distinct points: D² sampling never picks a point twice, so φ = 0.
                assert_eq!(expected, 0.0, "{}", instance.name);
                continue;
            }
            let bound = 8.0 * ((n_clusters as f64).ln() + 2.0) * optimum;
            assert!(
                expected <= bound,
                "{}, k = {n_clusters}: E[φ] = {expected} > {bound}",
                instance.name
            );
            // The two sides are not trivially apart: E[φ] ≥ φ_OPT always.
            assert!(expected >= optimum * (1.0 - 1e-12), "{}", instance.name);
            worst = worst.max(expected / optimum);
        }
    }
    // k = 1 alone gives exactly 2 (E‖x − x'‖² = 2·variance): the ratios are real.
    assert!(worst >= 2.0 - 1e-12, "{worst}");
}

#[test]
fn one_centre_costs_exactly_twice_the_optimum() {
    // E[φ] for k = 1 is Σ_i w_i/W · Σ_x w(x)‖x − x_i‖² = 2·φ_OPT (the classic identity).
    for instance in instances() {
        let expected: f64 = instance
            .sequences(1, 1)
            .iter()
            .map(|(chosen, p)| p * instance.potential(chosen))
            .sum();
        let optimum = instance.optimal_potential(1);
        assert!(
            (expected - 2.0 * optimum).abs() <= 1e-9 * optimum,
            "{}",
            instance.name
        );
    }
}

/// Q(a, x), the regularised upper incomplete gamma function (series for x < a + 1,
/// continued fraction otherwise), so that the chi-square survival function with ν degrees
/// of freedom is Q(ν/2, χ²/2).
fn upper_incomplete_gamma(a: f64, x: f64) -> f64 {
    let ln_gamma = ln_gamma(a);
    if x <= 0.0 {
        return 1.0;
    }
    if x < a + 1.0 {
        let (mut sum, mut term, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        1.0 - sum * (-x + a * x.ln() - ln_gamma).exp()
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        (-x + a * x.ln() - ln_gamma).exp() * h
    }
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms; relative error below 1e-13).
fn ln_gamma(x: f64) -> f64 {
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[test]
fn the_incomplete_gamma_matches_known_values() {
    // Chi-square survival values: ν = 1, x = 3.841459 → 0.05; ν = 10, x = 23.2093 → 0.01;
    // ν = 100, x = 124.342 → 0.05; ν = 2: exp(−x/2).
    let survival = |nu: f64, x: f64| upper_incomplete_gamma(nu / 2.0, x / 2.0);
    assert!((survival(1.0, 3.841_459) - 0.05).abs() < 1e-6);
    assert!((survival(10.0, 23.209_3) - 0.01).abs() < 1e-6);
    assert!((survival(100.0, 124.342) - 0.05).abs() < 1e-5);
    assert!((survival(2.0, 7.0) - (-3.5f64).exp()).abs() < 1e-12);
    assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
}

/// Draws `draws` seedings from the library with fixed seeds and returns the chi-square
/// p-value of the observed sequence counts against the exact law. Sequences expected fewer
/// than 5 times are pooled into one cell.
fn sampler_p_value(instance: &Instance, init: &Init, n_clusters: usize, draws: usize) -> f64 {
    let trials = match init {
        Init::KMeansPlusPlus => 1,
        Init::GreedyKMeansPlusPlus { n_local_trials } => {
            Init::local_trials(*n_local_trials, n_clusters)
        }
        _ => unreachable!("k-means++ seedings only"),
    };
    let law: HashMap<Vec<usize>, f64> =
        instance.sequences(n_clusters, trials).into_iter().collect();
    let data = instance.array();
    let weights = Array1::from(instance.weights.clone());
    let mut counts: HashMap<Vec<usize>, usize> = HashMap::new();
    let root = StreamRng::seed_from(20_240_611);
    for draw in 0..draws {
        let mut rng = root.child(draw as u64);
        let sequence = seed_indices(
            data.view(),
            Some(weights.view()),
            init,
            n_clusters,
            &mut rng,
        )
        .expect("a valid instance");
        assert!(
            law.contains_key(&sequence),
            "impossible sequence {sequence:?}"
        );
        *counts.entry(sequence).or_default() += 1;
    }
    let (mut statistic, mut cells) = (0.0, 0usize);
    let (mut pooled_expected, mut pooled_observed) = (0.0, 0.0);
    for (sequence, probability) in &law {
        let expected = probability * draws as f64;
        let observed = counts.get(sequence).copied().unwrap_or(0) as f64;
        if expected < 5.0 {
            pooled_expected += expected;
            pooled_observed += observed;
        } else {
            statistic += (observed - expected).powi(2) / expected;
            cells += 1;
        }
    }
    if pooled_expected > 0.0 {
        statistic += (pooled_observed - pooled_expected).powi(2) / pooled_expected;
        cells += 1;
    }
    assert!(cells >= 10, "{}: too few cells ({cells})", instance.name);
    upper_incomplete_gamma((cells - 1) as f64 / 2.0, statistic / 2.0)
}

#[test]
fn the_sampler_follows_the_exact_law() {
    let draws = 20_000;
    let cases = [
        (random_instance(101, 8, 2), Init::KMeansPlusPlus, 3),
        (random_instance(102, 10, 1), Init::KMeansPlusPlus, 2),
        (
            instances().pop().expect("the weighted instance"),
            Init::KMeansPlusPlus,
            3,
        ),
        (random_instance(103, 7, 2), Init::default(), 3),
        (
            instances().pop().expect("the weighted instance"),
            Init::GreedyKMeansPlusPlus {
                n_local_trials: Some(2),
            },
            3,
        ),
    ];
    for (instance, init, n_clusters) in &cases {
        let p_value = sampler_p_value(instance, init, *n_clusters, draws);
        assert!(
            p_value > 1e-4,
            "{}, {init:?}, k = {n_clusters}: p = {p_value}",
            instance.name
        );
    }
}

#[test]
fn the_chi_square_test_rejects_a_wrong_law() {
    // The same counts against the law of a different instance must be rejected: the test
    // has power at this number of draws.
    let right = random_instance(101, 8, 2);
    let mut wrong = random_instance(101, 8, 2);
    wrong.points[0][0] += 3.0;
    let law: HashMap<Vec<usize>, f64> = wrong.sequences(3, 1).into_iter().collect();
    let data = right.array();
    let root = StreamRng::seed_from(7);
    let draws = 20_000;
    let mut counts: HashMap<Vec<usize>, usize> = HashMap::new();
    for draw in 0..draws {
        let mut rng = root.child(draw);
        let sequence = seed_indices(data.view(), None, &Init::KMeansPlusPlus, 3, &mut rng)
            .expect("a valid instance");
        *counts.entry(sequence).or_default() += 1;
    }
    let mut statistic = 0.0;
    let mut cells = 0;
    for (sequence, probability) in &law {
        let expected = probability * draws as f64;
        if expected >= 5.0 {
            let observed = counts.get(sequence).copied().unwrap_or(0) as f64;
            statistic += (observed - expected).powi(2) / expected;
            cells += 1;
        }
    }
    let p_value = upper_incomplete_gamma((cells - 1) as f64 / 2.0, statistic / 2.0);
    assert!(p_value < 1e-4, "p = {p_value}");
}
