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

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread::sleep;
use std::time::Duration;

use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::{AllocatorBuilder, ProcessBuilder};
use timely::communication::{Hooks, WorkerGuards};
use timely::worker::Worker;
use timely::{CommunicationConfig, Config};

/// The wait before a refused connection is tried again.
pub const RETRY: Duration = Duration::from_millis(10);
/// The wait between two polls of the listening socket.
pub const POLL: Duration = Duration::from_millis(5);

/// Runs `func` on every worker of this process, as `timely::execute` does; a cluster's
/// processes are connected by [`connect`].
///
/// # Errors
/// timely's errors, and a failure to listen at this process's address or to exchange the
/// processes' indices.
pub fn execute<T, F>(config: Config, func: F) -> Result<WorkerGuards<T>, String>
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
    let sockets = connect(&addresses, process)
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
/// after it.
///
/// # Errors
/// When this process cannot listen at its address, or a peer's index is not one of the
/// processes after `me`.
pub fn connect(addresses: &[String], me: usize) -> io::Result<Vec<Option<TcpStream>>> {
    // Listen first, so that the peers after this one can connect while it connects.
    let listeners = addresses[me]
        .split_whitespace()
        .map(TcpListener::bind)
        .collect::<io::Result<Vec<_>>>()?;
    for listener in &listeners {
        listener.set_nonblocking(true)?;
    }
    let mut sockets: Vec<Option<TcpStream>> = Vec::with_capacity(addresses.len());
    for address in addresses.iter().take(me) {
        let mut stream = loop {
            match TcpStream::connect(address) {
                Ok(stream) => break stream,
                // Not listening yet (or not reachable): like timely, wait for it.
                Err(_) => sleep(RETRY),
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
                    let mut index = [0u8; 8];
                    stream.read_exact(&mut index)?;
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
            sleep(POLL);
        }
    }
    sockets.extend(accepted);
    Ok(sockets)
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
                    let mut sockets = connect(&addresses, me).unwrap();
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
}
