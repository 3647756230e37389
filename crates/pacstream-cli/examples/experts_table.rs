//! The comparison table of the README: every real-valued aggregation rule on
//! `data/eustock-forecasts.csv` (the DAX close and six forecasts of it), square loss, with
//! its RMSE and its regret against each hindsight oracle (best expert, best convex
//! combination, best linear combination, best sequence of experts with 10 and 50 switches).
//!
//! Run from the repository root:
//! `cargo run --release -p pacstream-cli --example experts_table`.

// The table is the program's output.
#![allow(clippy::print_stdout)]

use std::error::Error;

use pacstream::experts::{
    AdviceRound, Aggregator, AggregatorParams, ConvexCombinationOracle, LearningRate, Loss,
    Regulariser, Rule, ShiftingOracle,
};

fn main() -> Result<(), Box<dyn Error>> {
    let text = std::fs::read_to_string("data/eustock-forecasts.csv")?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty file")?.split(',').collect();
    let rows: Vec<Vec<f64>> = lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(',').map(|f| f.trim().parse::<f64>()).collect())
        .collect::<Result<_, _>>()?;
    let n = header.len() - 1;
    let t = rows.len() as f64;

    let mut convex = ConvexCombinationOracle::new(n);
    let mut shifting = ShiftingOracle::new(n, 50)?;
    let mut expert_losses = vec![0.0; n];
    for row in &rows {
        let losses: Vec<f64> = row[1..]
            .iter()
            .map(|a| Loss::Square.value(*a, row[0]))
            .collect();
        convex.observe(&row[1..], row[0])?;
        shifting.observe(&losses)?;
        expert_losses
            .iter_mut()
            .zip(&losses)
            .for_each(|(l, x)| *l += x);
    }
    let (best, best_loss) = expert_losses.iter().enumerate().fold(
        (0, f64::INFINITY),
        |b, (i, &l)| if l < b.1 { (i, l) } else { b },
    );
    let oracles = [
        (format!("best expert ({})", header[best + 1]), best_loss),
        ("best convex combination".to_string(), convex.solve().1),
        (
            "best linear combination".to_string(),
            convex.solve_linear().1,
        ),
        (
            "best expert with 10 switches".to_string(),
            shifting.best_loss(10),
        ),
        (
            "best expert with 50 switches".to_string(),
            shifting.best_loss(50),
        ),
    ];

    // A range B covering every round's square losses on this file (the largest is about
    // 3.8e5), so that the rules that need it run the papers' rates and report their bounds.
    let loss_bound = 4e5;
    let rules: [(&str, AggregatorParams); 18] = [
        ("ewa (AdaHedge)", AggregatorParams::new(Rule::Ewa, n)),
        (
            "ewa --gradient (AdaHedge)",
            AggregatorParams::new(Rule::Ewa, n).gradient(true),
        ),
        ("mlpol", AggregatorParams::new(Rule::Mlpol, n)),
        (
            "mlpol --gradient",
            AggregatorParams::new(Rule::Mlpol, n).gradient(true),
        ),
        ("mlprod", AggregatorParams::new(Rule::Mlprod, n)),
        (
            "mlprod --gradient",
            AggregatorParams::new(Rule::Mlprod, n).gradient(true),
        ),
        (
            "mlprod --loss-bound 4e5",
            AggregatorParams::new(Rule::Mlprod, n).loss_bound(loss_bound),
        ),
        ("mlewa", AggregatorParams::new(Rule::Mlewa, n)),
        (
            "mlewa --gradient",
            AggregatorParams::new(Rule::Mlewa, n).gradient(true),
        ),
        ("boa", AggregatorParams::new(Rule::Boa, n)),
        (
            "boa --gradient",
            AggregatorParams::new(Rule::Boa, n).gradient(true),
        ),
        (
            "boa --loss-bound 4e5",
            AggregatorParams::new(Rule::Boa, n).loss_bound(loss_bound),
        ),
        (
            "fixed-share --eta 1e-4 --alpha 0.01",
            AggregatorParams::new(Rule::FixedShare, n)
                .rate(LearningRate::Fixed(1e-4))
                .alpha(0.01),
        ),
        (
            "fixed-share --eta 1e-4 --alpha 0.01 --gradient",
            AggregatorParams::new(Rule::FixedShare, n)
                .rate(LearningRate::Fixed(1e-4))
                .alpha(0.01)
                .gradient(true),
        ),
        (
            "ftrl --eta 1e-6",
            AggregatorParams::new(Rule::Ftrl, n).rate(LearningRate::Fixed(1e-6)),
        ),
        (
            "ftrl --eta 1e-5 --regulariser entropic",
            AggregatorParams::new(Rule::Ftrl, n)
                .rate(LearningRate::Fixed(1e-5))
                .regulariser(Regulariser::Entropic),
        ),
        (
            "ogd --eta 1e-5",
            AggregatorParams::new(Rule::Ogd, n).rate(LearningRate::Fixed(1e-5)),
        ),
        (
            "ridge --lambda 1",
            AggregatorParams::new(Rule::Ridge, n).lambda(1.0),
        ),
    ];
    print!("| rule | RMSE |");
    for (name, _) in &oracles {
        print!(" regret vs {name} |");
    }
    println!(" its bound vs the best expert |");
    println!("|---|---|{}", "---|".repeat(oracles.len() + 1));
    for (name, params) in rules {
        let config = params.check()?;
        let mut rule = config.build()?;
        for row in &rows {
            rule.learn_advice(AdviceRound::new(&row[1..], row[0]), config.loss)?;
        }
        let loss = rule.ledger().learner_loss();
        print!("| `{name}` | {:.2} |", (loss / t).sqrt());
        for (_, oracle) in &oracles {
            print!(" {:.0} |", loss - oracle);
        }
        // The rule's own guarantee, against the expert of least loss (for FTRL, OGD and
        // ridge it holds against every convex or linear combination, so against it too).
        match rule.regret_bound().value() {
            Some(bound) => println!(" {bound:.0} |"),
            None => println!(" — |"),
        }
    }
    for (name, loss) in &oracles {
        print!("| *{name}* | {:.2} |", (loss / t).sqrt());
        println!("{}", " |".repeat(oracles.len() + 1));
    }
    Ok(())
}
