//! Starting the workers, with the processes of a cluster connected without timely's
//! one-second waits.
//!
//! timely 0.32 connects the processes of a `CommunicationConfig::Cluster` itself: a process
//! whose peer is not listening yet retries after one second, and a listening process polls
//! for new connections once a second, so every multi-process run spent one to two seconds
//! connecting, whatever the order the processes started in. Neither interval is a setting.
//! timely also takes sockets its caller has connected
//! (`initialize_networking_from_sockets`): [`execute`] connects them as timely does
//! (process i connects to every process j < i and sends its index; it accepts every
//! j > i, which send theirs), retrying every [`RETRY`] and polling every [`POLL`], then
//! hands them to timely. Every other configuration goes to `timely::execute` unchanged.
//! All the processes of a cluster must connect this way (the index is sent as 8
//! little-endian bytes, which a process connecting through timely's own code does not
//! agree with).
//!
//! timely waits for its peers for ever: a process that never starts (a wrong line in the
//! hostfile, a port taken, a typo in `--process`) left the others retrying without a word.
//! [`connect`] gives up after a time the caller chooses and names the processes it is
//! still waiting for.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::thread::sleep;
use std::time::{Duration, Instant};

use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::{AllocatorBuilder, ProcessBuilder};
use timely::communication::{Hooks, WorkerGuards};
use timely::worker::Worker;
use timely::{CommunicationConfig, Config};

/// The wait before a refused connection is tried again.
pub const RETRY: Duration = Duration::from_millis(10);
/// The wait between two polls of the listening socket.
pub const POLL: Duration = Duration::from_millis(5);
/// The longest one attempt to connect may block (an address that drops the packets,
/// rather than refusing them, would otherwise hold a `connect` for minutes).
const ATTEMPT: Duration = Duration::from_secs(2);

/// Runs `func` on every worker of this process, as `timely::execute` does; a cluster's
/// processes are connected by [`connect`].
///
/// A cluster's process waits at most `connect_timeout` for the others to connect.
///
/// # Errors
/// timely's errors, a failure to listen at this process's address or to exchange the
/// processes' indices, and processes that did not connect within `connect_timeout`.
pub fn execute<T, F>(
    config: Config,
    connect_timeout: Duration,
    func: F,
) -> Result<WorkerGuards<T>, String>
where
    T: Send + 'static,
    F: Fn(&mut Worker) -> T + Send + Sync + 'static,
{
    let CommunicationConfig::Cluster {
        threads,
        process,
        addresses,
        zerocopy: false,
        ..
    } = config.communication
    else {
        return timely::execute(config, func);
    };
    let sockets = connect(&addresses, process, connect_timeout)
        .map_err(|e| format!("failed to connect the processes: {e}"))?;
    let hooks = Hooks::default();
    let allocators =
        ProcessBuilder::new_typed_vector(threads, hooks.refill.clone(), hooks.spill.clone());
    let (builders, guard) =
        initialize_networking_from_sockets(allocators, sockets, process, threads, hooks)
            .map_err(|e| format!("failed to initialize networking: {e}"))?;
    let builders = builders.into_iter().map(AllocatorBuilder::Tcp).collect();
    timely::execute::execute_from(builders, Box::new(guard), config.worker, func)
}

/// One socket per process, in process order, `None` at `me`: connected to every process
/// before `me` (retrying every [`RETRY`] until it listens), accepted from every process
/// after it, all within `timeout`.
///
/// # Errors
/// When this process cannot listen at its address, a peer's index is not one of the
/// processes after `me`, or a process has not connected (or not sent its index) within
/// `timeout` (`ErrorKind::TimedOut`, naming the processes still awaited).
pub fn connect(
    addresses: &[String],
    me: usize,
    timeout: Duration,
) -> io::Result<Vec<Option<TcpStream>>> {
    let deadline = Instant::now() + timeout;
    let late = |what: String| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "process {me} waited {} s for {what}; is every process started, with the \
                 same hostfile and its own --process?",
                timeout.as_secs_f64()
            ),
        )
    };
    // Before connecting: a process that cannot listen fails at once, and its peers time out.
    let listeners = addresses[me]
        .split_whitespace()
        .map(TcpListener::bind)
        .collect::<io::Result<Vec<_>>>()?;
    for listener in &listeners {
        listener.set_nonblocking(true)?;
    }
    let mut sockets: Vec<Option<TcpStream>> = Vec::with_capacity(addresses.len());
    for (peer, address) in addresses.iter().enumerate().take(me) {
        let mut stream = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(late(format!("process {peer} at {address}")));
            }
            match connect_once(address, left.min(ATTEMPT)) {
                Ok(stream) => break stream,
                Err(_) => sleep(RETRY.min(left)),
            }
        };
        stream.set_nodelay(true)?;
        stream.write_all(&(me as u64).to_le_bytes())?;
        sockets.push(Some(stream));
    }
    sockets.push(None);
    let later = addresses.len() - me - 1;
    let mut accepted: Vec<Option<TcpStream>> = (0..later).map(|_| None).collect();
    let mut waiting = later;
    while waiting > 0 {
        let mut any = false;
        for listener in &listeners {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    stream.set_nonblocking(false)?;
                    stream.set_nodelay(true)?;
                    // A peer that connects and says nothing must not hold this process
                    // past the deadline.
                    let left = deadline.saturating_duration_since(Instant::now());
                    stream.set_read_timeout(Some(left.max(POLL)))?;
                    let mut index = [0u8; 8];
                    stream.read_exact(&mut index).map_err(|e| match e.kind() {
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                            late("a connected peer to send its index".to_string())
                        }
                        _ => e,
                    })?;
                    stream.set_read_timeout(None)?;
                    let index = u64::from_le_bytes(index) as usize;
                    let slot = index
                        .checked_sub(me + 1)
                        .and_then(|i| accepted.get_mut(i))
                        .filter(|slot| slot.is_none())
                        .ok_or_else(|| {
                            io::Error::other(format!(
                                "a peer said it was process {index}, not one of the {later} \
                                 processes after {me} still awaited"
                            ))
                        })?;
                    *slot = Some(stream);
                    waiting -= 1;
                    any = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        if !any {
            if Instant::now() >= deadline {
                let missing: Vec<String> = accepted
                    .iter()
                    .enumerate()
                    .filter(|(_, slot)| slot.is_none())
                    .map(|(i, _)| (me + 1 + i).to_string())
                    .collect();
                return Err(late(format!(
                    "process{} {} to connect",
                    if missing.len() > 1 { "es" } else { "" },
                    missing.join(", ")
                )));
            }
            sleep(POLL);
        }
    }
    sockets.extend(accepted);
    Ok(sockets)
}

/// One attempt to connect to `address` (each of its resolved addresses in turn), blocking
/// at most `wait` on each.
fn connect_once(address: &str, wait: Duration) -> io::Result<TcpStream> {
    let mut last = io::Error::new(
        io::ErrorKind::NotFound,
        format!("'{address}' resolves to no address"),
    );
    for resolved in address.to_socket_addrs()? {
        match TcpStream::connect_timeout(&resolved, wait) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three processes (threads here) started last-first, 50 ms apart: each ends with a
    /// socket to every other one, in process order, and a byte sent by process i on its
    /// socket j arrives on process j's socket i.
    #[test]
    fn processes_started_in_any_order_connect_each_to_each() {
        let addresses: Vec<String> = (0..3)
            .map(|_| {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                listener.local_addr().unwrap().to_string()
            })
            .collect();
        let handles: Vec<_> = (0..3)
            .rev()
            .map(|me| {
                let addresses = addresses.clone();
                sleep(Duration::from_millis(50));
                std::thread::spawn(move || {
                    let mut sockets = connect(&addresses, me, Duration::from_secs(60)).unwrap();
                    for (peer, socket) in sockets.iter_mut().enumerate() {
                        match socket {
                            None => assert_eq!(peer, me),
                            Some(stream) => stream.write_all(&[me as u8]).unwrap(),
                        }
                    }
                    for (peer, socket) in sockets.iter_mut().enumerate() {
                        if let Some(stream) = socket {
                            let mut byte = [0u8];
                            stream.read_exact(&mut byte).unwrap();
                            assert_eq!(usize::from(byte[0]), peer, "process {me}");
                        }
                    }
                    sockets.iter().filter(|s| s.is_some()).count()
                })
            })
            .collect();
        for handle in handles {
            assert_eq!(handle.join().unwrap(), 2);
        }
    }

    /// Free loopback addresses, each bound once and released.
    fn addresses(n: usize) -> Vec<String> {
        let listeners: Vec<TcpListener> = (0..n)
            .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        listeners
            .iter()
            .map(|l| l.local_addr().unwrap().to_string())
            .collect()
    }

    /// A process whose peers never come gives up after the time it was given, naming them,
    /// whether it waits to accept them, to connect to them, or for a connected peer's index.
    #[test]
    fn a_process_whose_peers_never_come_gives_up_naming_them() {
        let wait = Duration::from_millis(300);
        let all = addresses(3);
        let started = Instant::now();
        let error = connect(&all, 0, wait).unwrap_err();
        let waited = started.elapsed();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(
            error.to_string().contains("processes 1, 2 to connect"),
            "{error}"
        );
        assert!(waited >= wait && waited < wait * 10, "{waited:?}");

        let all = addresses(2);
        let error = connect(&all, 1, wait).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(
            error
                .to_string()
                .contains(&format!("process 0 at {}", all[0])),
            "{error}"
        );

        // A peer that connects and says nothing.
        let all = addresses(2);
        let silent = all[0].clone();
        let peer = std::thread::spawn(move || {
            let stream = loop {
                if let Ok(stream) = TcpStream::connect(&silent) {
                    break stream;
                }
                sleep(RETRY);
            };
            sleep(Duration::from_millis(900));
            drop(stream);
        });
        let started = Instant::now();
        let error = connect(&all, 0, wait).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut, "{error}");
        assert!(error.to_string().contains("to send its index"), "{error}");
        assert!(started.elapsed() < Duration::from_millis(800));
        peer.join().unwrap();
    }
}
