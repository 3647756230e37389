//! What several examples share.

use std::time::Instant;

/// Seconds of CPU time of this thread (Linux: /proc/thread-self/schedstat), or of wall time
/// where that is not available: on a machine shared with other work, CPU time is slowed
/// only by contention for caches and memory, not by waiting for a core.
pub fn clock() -> f64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let cpu = std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<f64>().ok());
    match cpu {
        Some(nanoseconds) => 1e-9 * nanoseconds,
        None => START.get_or_init(Instant::now).elapsed().as_secs_f64(),
    }
}
