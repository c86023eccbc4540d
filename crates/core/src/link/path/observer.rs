//! What a path tells its observer. A `PathObserver`, when one is installed,
//! is told what happens to each frame inside the path (offered to the qdisc,
//! dequeued, bypassed, dropped with its reason, delivered), which its owner
//! cannot see from outside: the simulator traces departures from the qdisc
//! this way. Without one, each of those points costs one branch.

use crate::packet::{DropReason, Packet};
use crate::qdisc::Verdict;
use crate::time::Instant;
use std::any::Any;

/// What happened to a frame inside a path, as a `PathObserver` is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathEvent {
    /// Offered to the qdisc's `enqueue` (which may drop it: `Dropped`
    /// follows). Frames moved into a replacement qdisc are not offered
    /// again.
    Enqueued,
    /// Taken out of the qdisc by its `dequeue` (a requeued frame sent again
    /// is not dequeued again).
    Dequeued,
    /// Sent past the empty qdisc without entering it (`TCQ_F_CAN_BYPASS`,
    /// net/core/dev.c `__dev_xmit_skb`); counted as sent by the qdisc.
    Bypassed,
    /// Freed by the path (qdisc, wire loss), with the reason it carries.
    Dropped(DropReason),
    /// Handed to the receiving side.
    Delivered,
    /// Its last bit left the NIC (the serializer is done with it): it is
    /// on the wire, and its TX completion is pending.
    Departed,
}

/// What the driver does for a batch of frames, not for one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriverEvent {
    /// A TX completion interrupt reaped `frames` frames of `bytes`
    /// (`dql_completed`), leaving BQL at `bql_limit` with `bql_inflight`
    /// bytes still in the ring (`None` without BQL). Under mq one event per
    /// TX queue the pass cleaned (`netdev_tx_completed_queue` per queue).
    TxCompletion {
        /// The TX queue, under mq (`None` on a path with one ring).
        queue: Option<u16>,
        /// Frames reaped.
        frames: u32,
        /// Their bytes.
        bytes: u64,
        /// BQL's limit after the completion, bytes.
        bql_limit: Option<u32>,
        /// Bytes BQL counts in the ring after it.
        bql_inflight: Option<u32>,
    },
    /// An RX interrupt handed `frames` frames to the receiving side.
    RxInterrupt {
        /// Frames delivered.
        frames: u32,
    },
}

/// Sees the frames inside a path (installed with `Path::set_observer`).
/// Called on the per-frame path: it must neither block nor allocate once
/// warmed up. Frames the caller refuses before the path takes them
/// (`Path::count_rejected`) are not shown: the caller has them.
pub trait PathObserver: Any + Send {
    /// `pkt` went through `event` at `at`.
    fn event(&mut self, event: PathEvent, pkt: &Packet, at: Instant);

    /// The qdisc's verdict on the frame last `Enqueued` (NET_XMIT_SUCCESS,
    /// _DROP or _CN), at `at`.
    fn verdict(&mut self, _verdict: Verdict, _at: Instant) {}

    /// The driver did `event` at `at`.
    fn driver(&mut self, _event: DriverEvent, _at: Instant) {}

    /// `pkt` reached the receiving NIC (out of the delay line, into RX
    /// coalescing) at `at`, the logical time it arrived.
    fn received(&mut self, _pkt: &Packet, _at: Instant) {}
}

/// Tells `observer`, if there is one, of `event`.
#[inline]
pub(super) fn notify(
    observer: &mut Option<Box<dyn PathObserver>>,
    event: PathEvent,
    pkt: &Packet,
    at: Instant,
) {
    if let Some(o) = observer {
        o.event(event, pkt, at);
    }
}
