//! `pacstream`: learning from data streams with regret guarantees, from the command line.
//! The code lives in the `pacstream_cli` library (`src/lib.rs`).

fn main() -> std::process::ExitCode {
    pacstream_cli::main()
}
