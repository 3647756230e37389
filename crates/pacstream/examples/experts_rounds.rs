//! Runs R rounds of Hedge or EWA at N experts, for counting instructions per round with
//! `valgrind --tool=callgrind` (repeatable whatever else runs on the machine):
//!
//! ```sh
//! cargo build --release -p pacstream --example experts_rounds
//! valgrind --tool=callgrind target/release/examples/experts_rounds hedge 1000 2000
//! ```
//!
//! Arguments: `hedge|ewa|ewa-gradient|adahedge`, N, R. Prints the final cumulative loss (so
//! that the work cannot be optimised away).

use pacstream::experts::{AdviceRound, EwaParams, HedgeParams, LearningRate, Loss, LossRound};
use pacstream::{OnlineLearner, StreamRng};

#[allow(clippy::print_stdout)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let rule = args.get(1).map_or("hedge", String::as_str);
    let n: usize = args.get(2).map_or(Ok(1000), |a| a.parse())?;
    let rounds: usize = args.get(3).map_or(Ok(1000), |a| a.parse())?;
    let mut rng = StreamRng::seed_from(1);
    let table: Vec<f64> = (0..n * 64).map(|_| rng.next_f64()).collect();
    let outcomes: Vec<f64> = (0..64).map(|_| rng.next_f64()).collect();
    // Round r replays row r mod 64 of the table.
    let row = |r: usize| &table[(r % 64) * n..(r % 64 + 1) * n];
    let total = match rule {
        "hedge" | "adahedge" => {
            let rate = if rule == "hedge" {
                LearningRate::Fixed(0.1)
            } else {
                LearningRate::AdaHedge
            };
            let mut learner = HedgeParams::new(n)
                .learning_rate(rate)
                .loss_bound(1.0)
                .check()?
                .build();
            let mut total = 0.0;
            for r in 0..rounds {
                total += learner.learn_one(LossRound::new(row(r)))?.loss;
            }
            total
        }
        _ => {
            let gradient = rule == "ewa-gradient";
            let rate = if gradient {
                LearningRate::Anytime
            } else {
                LearningRate::Fixed(0.1)
            };
            let mut learner = EwaParams::new(n)
                .loss(Loss::Square)
                .learning_rate(rate)
                .gradient(gradient)
                .loss_bound(4.0)
                .check()?
                .build();
            let mut total = 0.0;
            for r in 0..rounds {
                total += learner
                    .learn_one(AdviceRound::new(row(r), outcomes[r % 64]))?
                    .loss;
            }
            total
        }
    };
    println!("{total}");
    Ok(())
}
