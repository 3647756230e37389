//! Checkpoint and snapshot loading on arbitrary bytes.
//!
//! Three ways in: (1) arbitrary bytes as `--resume` of each streaming command; (2) arbitrary
//! bytes as a checkpoint's content, sealed with a valid checksum, so that what lies behind
//! the checksum (the envelope, the settings, the state, the output mark, the command's
//! consistency checks) is explored too; (3) arbitrary bytes as a library snapshot of each
//! learner, which then learns a point. None may panic or fail internally; a restored learner
//! must learn or refuse a point cleanly.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pacstream::OnlineLearner;
use pacstream::experts::{AdviceRound, LossRound};
use pacstream_cli::io::checkpoint::seal;

mod common;
use common::{file, path, run_line};

/// The streaming commands and the arguments that make each resume.
fn command_line(command: &str) -> Vec<String> {
    let mut args: Vec<String> = vec!["pacstream".into(), command.into(), "-q".into()];
    match command {
        "kmeans" => args.extend(["--k".into(), "2".into(), "--online".into()]),
        "paco" => args.extend([
            "--warmup".into(),
            "5".into(),
            "--iterations".into(),
            "5".into(),
        ]),
        "curve" => args.extend(["--warmup".into(), "5".into()]),
        _ => args.extend([
            "--rule".into(),
            "hedge".into(),
            "--outcome".into(),
            "y".into(),
        ]),
    }
    args.extend([
        "-o".into(),
        file("resumed.jsonl"),
        "--resume".into(),
        file("fuzzed-ck.json"),
        "--checkpoint".into(),
        file("next-ck.json"),
    ]);
    args.push(file(if command == "experts" {
        "experts.csv"
    } else {
        "points.csv"
    }));
    args
}

/// Deserialises a learner from `bytes` and, if that works, gives it one input.
fn snapshot<L>(bytes: &[u8], input: L::Input<'_>)
where
    L: OnlineLearner + serde::de::DeserializeOwned,
{
    if let Ok(mut learner) = serde_json::from_slice::<L>(bytes) {
        let _ = learner.learn_one(input);
    }
}

/// The input: byte 0 picks the way in, byte 1 the command or learner, the rest is the file.
fn run(data: &[u8]) {
    let [mode, which, bytes @ ..] = data else {
        return;
    };
    let which = usize::from(*which);
    match mode % 3 {
        0 | 1 => {
            let command = ["kmeans", "paco", "curve", "experts"][which % 4];
            let content = if mode % 3 == 1 {
                seal(bytes)
            } else {
                bytes.to_vec()
            };
            std::fs::write(path("fuzzed-ck.json"), content).expect("written");
            run_line(&command_line(command));
        }
        _ => {
            let point = [1.0, 2.0];
            let advice = AdviceRound::new(&[0.0, 1.0], 1.0);
            let losses = LossRound::new(&[0.5, 0.25]);
            match which % 8 {
                0 => snapshot::<pacstream::kmeans::SequentialKMeans>(bytes, &point),
                1 => snapshot::<pacstream::paco::Paco>(bytes, &point),
                2 => snapshot::<pacstream::curves::PrincipalCurveLearner>(bytes, &point),
                3 => snapshot::<pacstream::experts::WeightedMajority>(bytes, advice),
                4 => snapshot::<pacstream::experts::RandomizedWeightedMajority>(bytes, advice),
                5 => snapshot::<pacstream::experts::Hedge>(bytes, losses),
                6 => snapshot::<pacstream::experts::Ewa>(bytes, advice),
                _ => snapshot::<pacstream::experts::FollowThePerturbedLeader>(bytes, losses),
            }
        }
    }
}

fuzz_target!(|data: &[u8]| run(data));
