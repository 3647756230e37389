//! One synchronous round of communication between the workers, on a timely dataflow.
//!
//! Every pattern of this crate moves data in rounds: a worker sends what it has for round r
//! (rows to the worker that owns their key, statistics to every worker), closes round r, and
//! steps the dataflow until timely's progress tracking says that no worker can send anything
//! more for round r. What it then holds is exactly everything sent to it for round r, from
//! every worker and process, whatever the interleaving of the messages: the patterns sort it
//! by a stream position before using it, so the result never depends on the arrival order.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use timely::ExchangeData;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::operator::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::operators::{Exchange, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};
use timely::worker::Worker;

type Received<D> = Rc<RefCell<BTreeMap<u64, Vec<D>>>>;

/// A channel of one dataflow: items routed to one worker each, or broadcast to all.
pub struct Channel<D: ExchangeData + Clone> {
    input: InputHandle<u64, CapacityContainerBuilder<Vec<(u64, D)>>>,
    probe: ProbeHandle<u64>,
    received: Received<D>,
    round: u64,
}

impl<D: ExchangeData + Clone> std::fmt::Debug for Channel<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("round", &self.round)
            .finish_non_exhaustive()
    }
}

impl<D: ExchangeData + Clone> Channel<D> {
    /// A channel that delivers each item to worker `route(item) % peers`.
    pub fn exchange(worker: &mut Worker, route: impl Fn(&D) -> u64 + 'static) -> Self {
        Self::build(worker, Some(Box::new(route)))
    }

    /// A channel that delivers every item to every worker.
    pub fn broadcast(worker: &mut Worker) -> Self {
        Self::build(worker, None)
    }

    #[allow(clippy::type_complexity)]
    fn build(worker: &mut Worker, route: Option<Box<dyn Fn(&D) -> u64>>) -> Self {
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        let received: Received<D> = Rc::new(RefCell::new(BTreeMap::new()));
        let sink = Rc::clone(&received);
        worker.dataflow::<u64, _, _>(|scope| {
            let stream = input.to_stream(scope);
            let moved = match route {
                Some(route) => stream.exchange(move |(_, item): &(u64, D)| route(item)),
                None => stream.broadcast(),
            };
            // The items are moved out of timely's buffers, not cloned: a row crosses the
            // channel once.
            moved
                .unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(
                    Pipeline,
                    "Collect",
                    move |_, _| {
                        move |input, _| {
                            input.for_each(|_, items: &mut Vec<(u64, D)>| {
                                let mut received = sink.borrow_mut();
                                for (round, item) in items.drain(..) {
                                    received.entry(round).or_default().push(item);
                                }
                            });
                        }
                    },
                )
                .probe_with(&probe);
        });
        Self {
            input,
            probe,
            received,
            round: 0,
        }
    }

    /// The next round's index (rounds count from 0).
    pub fn next_round(&self) -> u64 {
        self.round
    }

    /// Sends `items`, closes the round and waits until every worker has closed it; returns
    /// everything sent to this worker in the round, in arrival order (callers sort it).
    pub fn round(&mut self, worker: &mut Worker, items: impl IntoIterator<Item = D>) -> Vec<D> {
        let round = self.round;
        for item in items {
            self.input.send((round, item));
        }
        self.round += 1;
        self.input.advance_to(self.round);
        while self.probe.less_than(&self.round) {
            // Parks when there is nothing to do: several processes may share few cores.
            worker.step_or_park(Some(Duration::from_millis(5)));
        }
        self.received
            .borrow_mut()
            .remove(&round)
            .unwrap_or_default()
    }
}
