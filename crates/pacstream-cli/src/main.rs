//! `pacstream`: learning from data streams with regret guarantees, from the command line.
//! The code lives in the `pacstream_cli` library (`src/lib.rs`).

/// mimalloc instead of the system allocator (glibc's malloc here). On several worker
/// threads (`--workers`) rows are allocated by the thread that reads them and freed by the
/// thread that learns them, and every row is a small allocation or two; glibc's per-thread
/// arenas make those frees slow and its small allocations cost more instructions.
/// Measured in docs/benchmarks.md (Scale-out).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    pacstream_cli::main()
}
