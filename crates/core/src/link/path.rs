//! One direction of the emulated link: a qdisc in front of the TX ring
//! (+BQL), the serializer, TX completion coalescing, the propagation delay
//! line and RX coalescing. `Path` advances all stages together in time
//! order, so a completion at t1 that frees a ring slot lets the qdisc
//! dequeue at t1, however late the driver polls.
//!
//! The qdisc is run like the kernel's `__qdisc_run`/`qdisc_restart`: bypass
//! of an empty work-conserving qdisc (`TCQ_F_CAN_BYPASS`, net/core/dev.c
//! `__dev_xmit_skb`), nothing dequeued while the TX queue is stopped (ring
//! full or BQL STACK_XOFF), bulk dequeue bounded by `dql_avail` and the
//! quota (net/sched/sch_generic.c `dequeue_skb`, `try_bulk_dequeue_skb`;
//! include/linux/dynamic_queue_limits.h `dql_avail`), and requeue of a batch
//! remainder that did not fit in the ring, or of a frame that bypassed the
//! empty qdisc while the queue was stopped (`sch_direct_xmit`,
//! `dev_requeue_skb`): requeued frames leave first, one at a time, and
//! count in the root's qlen, backlog and requeues as tc shows them
//! (`qdisc::requeue`). The NIC learns of a batch at its doorbell, rung
//! once after the batch's last frame is posted (`netdev_xmit_more()`): with
//! `tx_post_ns` each posted frame costs the driver that long, so the first
//! frame of a batch of k reaches the wire k × `tx_post_ns` after the
//! dequeue at the earliest.
//!
//! Under an mq root every TX queue runs on its own, as the kernel's
//! `netdev_queue`s do: each has its own ring, DQL and requeue slot
//! (`TxQueue`), mq's child i is dequeued only into ring i
//! (`Qdisc::dequeue_queue`), and a stopped queue stops only its own child
//! (net/sched/sch_generic.c `dequeue_skb`: `netif_xmit_frozen_or_stopped`
//! of the qdisc's own `dev_queue`). The serializer shares the one wire
//! between the rings round robin. Any other root runs as one queue with
//! one ring. Switching between an mq root and another rebuilds the rings:
//! their DQLs start afresh, counting the frames in flight as queued.
//!
//! At one instant stages run in pipeline order: departures, TX completions
//! (freeing slots and feeding BQL), the qdisc, arrivals from the delay line,
//! RX delivery; so a frame reaching the RX NIC exactly when its coalescing
//! timer fires is part of that batch.
//!
//! `LinkShape` adds to this: the framing and the schedule act in the
//! serializer; impairments act on each frame as it leaves the serializer,
//! after its TX completion is recorded and before the delay line (see
//! `impair`). A duplicated frame adds one frame to the path, so
//! conservation reads `frames_in + duplicated = frames_out + drops + held`.
//!
//! A `FlowMeter` (on unless `set_flow_meter(false)`) counts each frame
//! delivered or dropped against its flow, O(1) and without allocating;
//! snapshots add it to the occupancy of every queue (the qdisc's, the TX
//! ring's and the delay line's), which they work out by walking the queued
//! frames, so the per-frame path pays only the meter.
//!
//! A `PathObserver`, when one is installed, is told what happens to each
//! frame inside the path (offered to the qdisc, dequeued, bypassed, dropped
//! with its reason, delivered), which its owner cannot see from outside: the
//! simulator traces departures from the qdisc this way. Without one, each
//! of those points costs one branch.

use super::coalesce::Coalescer;
use super::delay::DelayLine;
use super::impair::{Fate, Impair, Impairments};
use super::meter::FlowMeter;
use super::ring::{BulkBudget, TxRing, DEV_TX_WEIGHT};
use super::serializer::Serializer;
use super::transit::{Transit, TransitSummary};
use super::{LinkParams, LinkShape, ShapeError};
use crate::packet::{DropReason, Drops, Packet};
use crate::qdisc::dump::{FlowTraffic, QueueId, QueueOccupancy};
use crate::qdisc::tree::QdiscTree;
use crate::qdisc::{FlowListing, Qdisc, QdiscDump, Verdict};
use crate::time::{earliest, Instant};
use std::any::Any;
use std::collections::{BTreeMap, VecDeque};

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
}

/// Tells `observer`, if there is one, of `event`.
#[inline]
fn notify(
    observer: &mut Option<Box<dyn PathObserver>>,
    event: PathEvent,
    pkt: &Packet,
    at: Instant,
) {
    if let Some(o) = observer {
        o.event(event, pkt, at);
    }
}

/// Per-direction conservation counters:
/// `frames_in + duplicated = frames_out + drops + held`.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct PathCounters {
    /// Frames that entered the path (admitted at ingress or refused there).
    pub frames_in: u64,
    /// Bytes of the frames that entered the path (accounted lengths).
    pub bytes_in: u64,
    /// Frames delivered to the receiving side.
    pub frames_out: u64,
    /// Bytes of the frames delivered to the receiving side.
    pub bytes_out: u64,
    /// Extra copies made by the duplication impairment.
    pub duplicated: u64,
    /// Frames delivered with a flipped bit by the corruption impairment.
    pub corrupted: u64,
    /// Indexed by `DropReason::index()`.
    pub drops: [u64; DropReason::ALL.len()],
    /// Batches handed to the NIC (`dev_hard_start_xmit` calls, one TX
    /// doorbell each): bulk dequeue makes them fewer per frame.
    #[serde(default)]
    pub xmit_batches: u64,
}

impl PathCounters {
    /// All drops, whatever the reason.
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }

    /// Checks `frames_in + duplicated = frames_out + drops + held`, with
    /// `held` the frames still inside the path; the error shows both sides.
    pub fn check_conservation(&self, held: u64) -> Result<(), String> {
        let (arrived, left) = (
            u128::from(self.frames_in) + u128::from(self.duplicated),
            u128::from(self.frames_out) + u128::from(self.total_drops()) + u128::from(held),
        );
        if arrived == left {
            Ok(())
        } else {
            Err(format!(
                "conservation broken: in {} + duplicated {} = {arrived} but out {} + dropped {} + held {held} = {left}",
                self.frames_in,
                self.duplicated,
                self.frames_out,
                self.total_drops()
            ))
        }
    }
}

/// What a path looks like at one instant (for the TUI, the control socket
/// and reports).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PathSnapshot {
    /// When the snapshot was taken.
    pub at: Instant,
    /// The link settings in force.
    pub params: LinkParams,
    /// Seed of the impairments' random generator.
    pub seed: u64,
    /// The conservation counters.
    pub counters: PathCounters,
    /// Drops by `DropReason::name()`, only the non-zero ones (not read back
    /// from JSON: rebuild it from `counters.drops`).
    #[serde(default, skip_deserializing)]
    pub drops_by_reason: BTreeMap<&'static str, u64>,
    /// Frames inside the path (qdisc, requeued, ring, wire, delay, RX).
    pub held: u64,
    /// Frames put back by the driver (`NETDEV_TX_BUSY`) waiting to be resent,
    /// and how often that happened.
    pub requeued: u32,
    /// Times the driver put a frame back (`NETDEV_TX_BUSY`; the qdisc's
    /// `requeues`).
    pub requeues: u64,
    /// TX ring: descriptors in use, of how many, and their bytes.
    pub ring_used: u32,
    /// The ring's depth in descriptors.
    pub ring_size: u32,
    /// Bytes of the frames in the used descriptors.
    pub ring_bytes: u64,
    /// BQL limit and in-flight bytes (None with BQL off).
    pub bql_limit: Option<u32>,
    /// Bytes queued to the ring and not yet completed, BQL's `inflight` (None
    /// with BQL off).
    pub bql_inflight: Option<u32>,
    /// Each TX queue's ring and BQL under mq (one entry per queue; the
    /// `ring_*` and `bql_*` fields above are their sums); a path with one
    /// ring lists it alone.
    #[serde(default)]
    pub tx_queues: Vec<TxQueueStats>,
    /// Frames posted to the NIC and not yet departed.
    pub on_wire: u32,
    /// When the frame on the wire leaves (none: the wire is idle).
    #[serde(default)]
    pub wire_departs: Option<Instant>,
    /// Frames in propagation.
    pub in_flight: u32,
    /// Frames held by RX coalescing.
    pub rx_held: u32,
    /// The interrupt moderation in force, `[tx, rx]` as (usecs, frames):
    /// the ethtool values, or net_dim's current profile under
    /// `adaptive-tx`/`adaptive-rx`.
    #[serde(default)]
    pub moderation: [(u32, u32); 2],
    /// The qdisc tree as `tc -s qdisc show` and `tc -s class show` dump it.
    pub qdisc: QdiscDump,
    /// Transit times (ingress to delivery) of the delivered frames.
    #[serde(default)]
    pub transit: TransitSummary,
    /// The flows of the frames in the TX ring (the one being serialized
    /// included), each waiting since it was posted.
    #[serde(default)]
    pub ring_flows: QueueOccupancy,
    /// The flows of the frames in propagation ("on the wire"), each
    /// waiting since it left the serializer.
    #[serde(default)]
    pub wire_flows: QueueOccupancy,
    /// The flows of the frames in the requeue slot, each waiting since it
    /// arrived at the path (they count in the root's qlen and backlog, as
    /// tc shows them, but are in no qdisc queue's `occupancy`).
    #[serde(default = "requeued_queue")]
    pub requeued_flows: QueueOccupancy,
    /// The flows of the frames held by RX coalescing, each waiting since
    /// it arrived at the far end.
    #[serde(default = "rx_queue")]
    pub rx_flows: QueueOccupancy,
    /// The flow meter's flows with the highest rate over the last second
    /// (as many as the listing's bound; all tracked ones for
    /// `FlowListing::All`), empty with the meter off.
    #[serde(default)]
    pub flows: Vec<FlowTraffic>,
    /// Every other flow the meter counted, summed up (its `flow` and
    /// `hash` are zero).
    #[serde(default)]
    pub other_flows: FlowTraffic,
    /// Flows the meter tracks by name (of `meter::FLOWS`).
    #[serde(default)]
    pub flows_tracked: u32,
    /// When the path first ran (the first instant its driver advanced it
    /// to: the link coming up), `None` before that.
    #[serde(default)]
    pub up_since: Option<Instant>,
}

/// A frame on the wire that leaves later than this has stalled the link
/// (a rate typed as 100 for 100mbit): reports say so.
pub const STALL_NS: u64 = crate::time::NS_PER_SEC;

/// One TX queue's ring and BQL in a `PathSnapshot` (sysfs
/// `/sys/class/net/DEV/queues/tx-N/byte_queue_limits/{limit,inflight}`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TxQueueStats {
    /// Descriptors in use.
    pub ring_used: u32,
    /// The ring's depth in descriptors.
    pub ring_size: u32,
    /// Bytes of the frames in the used descriptors.
    pub ring_bytes: u64,
    /// BQL's limit (None with BQL off).
    pub bql_limit: Option<u32>,
    /// BQL's in-flight bytes (None with BQL off).
    pub bql_inflight: Option<u32>,
    /// Times the driver stopped the queue (DRV_XOFF: the ring full, or
    /// fewer free descriptors than `tx_stop_threshold`).
    #[serde(default)]
    pub stops: u64,
}

impl TxQueueStats {
    fn of(ring: &TxRing) -> TxQueueStats {
        let dql = ring.dql();
        TxQueueStats {
            ring_used: ring.busy(),
            ring_size: ring.size(),
            ring_bytes: ring.busy_bytes(),
            bql_limit: dql.map(|d| d.limit()),
            bql_inflight: dql.map(|d| d.inflight()),
            stops: ring.stops(),
        }
    }
}

/// One TX queue of the device (`struct netdev_queue`): its ring with its
/// DQL, the requeue slot of its qdisc (`gso_skb`) and whether that qdisc
/// may have something to dequeue.
struct TxQueue {
    ring: TxRing,
    /// The kernel's `gso_skb` list: frames the driver refused, sent first.
    requeued: VecDeque<Packet>,
    /// The qdisc may have something to dequeue now (else see `wakeup`).
    ready: bool,
    wakeup: Option<Instant>,
    /// When the driver is done posting to this queue's ring (its last
    /// doorbell): posts to one queue follow each other (`HARD_TX_LOCK`).
    driver_free: Instant,
}

impl TxQueue {
    fn new(params: &LinkParams, now: Instant) -> TxQueue {
        let mut ring = TxRing::new(params.tx_ring, params.bql, now);
        ring.set_stop_threshold(params.tx_stop_threshold);
        TxQueue {
            ring,
            requeued: VecDeque::new(),
            ready: true,
            wakeup: None,
            driver_free: now,
        }
    }

    /// The doorbell of a batch of `k` frames handed to the driver at `t`:
    /// it posts them one after the other, `post_ns` each, from when it is
    /// free, and rings once after the last (`netdev_xmit_more()` is false
    /// only there).
    fn doorbell(&mut self, t: Instant, k: u64, post_ns: u64) -> Instant {
        let at = t.max(self.driver_free) + k.saturating_mul(post_ns);
        self.driver_free = at;
        at
    }
}

fn requeued_queue() -> QueueOccupancy {
    QueueOccupancy {
        queue: QueueId::Requeued,
        ..QueueOccupancy::default()
    }
}

fn rx_queue() -> QueueOccupancy {
    QueueOccupancy {
        queue: QueueId::RxHeld,
        ..QueueOccupancy::default()
    }
}

impl PathSnapshot {
    /// The link's own queues past the qdisc, in the order a frame goes
    /// through them: the requeue slot, the TX ring, the wire, RX held.
    /// With the qdisc tree's queues they hold every frame of `held`.
    pub fn link_queues(&self) -> [&QueueOccupancy; 4] {
        [
            &self.requeued_flows,
            &self.ring_flows,
            &self.wire_flows,
            &self.rx_flows,
        ]
    }

    /// How long until the frame on the wire leaves, when that is more
    /// than `STALL_NS`: everything behind it waits that long.
    pub fn stall_ns(&self) -> Option<u64> {
        let wait = self.wire_departs?.saturating_since(self.at);
        (wait > STALL_NS).then_some(wait)
    }
}

/// One direction of the emulated link: the qdisc tree, the driver's requeue
/// list, the TX ring with BQL, TX completion coalescing, the serializer, the
/// impairments, the propagation delay line and RX coalescing, driven with
/// explicit times.
pub struct Path {
    params: LinkParams,
    shape: LinkShape,
    impair: Impair,
    /// Frames leaving the impairment stage, reused per departure.
    wire: Vec<(Packet, Fate)>,
    qdisc: QdiscTree,
    requeues: u64,
    /// The TX queues: one, or one per mq child (`Qdisc::tx_queue_count`).
    queues: Vec<TxQueue>,
    serializer: Serializer,
    /// `queue_mapping` and length of sent frames whose completions are not
    /// reaped yet.
    tx_done: Coalescer<(u16, u32)>,
    /// Frames and bytes per TX queue of the completion being reaped.
    reaped: Vec<(u32, u64)>,
    /// The frames of a batch the ring took, waiting for its doorbell.
    posted: Vec<Packet>,
    delay: DelayLine,
    rx: Coalescer<Packet>,
    drops: Drops,
    /// Delivered and freed frames not yet handed out by `poll`.
    outbox: Vec<Packet>,
    freed: Vec<Packet>,
    batch: Vec<Packet>,
    counters: PathCounters,
    /// Ingress-to-delivery time of every delivered frame.
    transit: Transit,
    /// The time the path has advanced to.
    now: Instant,
    observer: Option<Box<dyn PathObserver>>,
    meter: Option<Box<FlowMeter>>,
    /// The first instant the path was advanced to.
    up_since: Option<Instant>,
    /// `next_event` as the last `advance` left it, while nothing has
    /// changed since (None: to be computed). It spares the frame path a
    /// scan of every stage when it advances again with nothing due.
    settled: Option<Option<Instant>>,
}

impl Path {
    /// A path behind the qdisc tree `qdisc` with the settings `params`, no
    /// impairment, schedule or framing, empty, at time 0.
    pub fn new(params: LinkParams, qdisc: QdiscTree) -> Path {
        let mut path = Path {
            params,
            shape: LinkShape::default(),
            impair: Impair::new(Impairments::default()),
            wire: Vec::with_capacity(2),
            qdisc,
            requeues: 0,
            queues: vec![TxQueue::new(&params, Instant::ZERO)],
            serializer: Serializer::new(params.rate_bytes_ps, params.overhead),
            tx_done: Coalescer::configured(params.tx_coalescing()),
            reaped: vec![(0, 0)],
            posted: Vec::with_capacity(DEV_TX_WEIGHT as usize + 1),
            delay: DelayLine::new(params.delay_ns),
            rx: Coalescer::configured(params.rx_coalescing()),
            drops: Drops::new(),
            outbox: Vec::new(),
            freed: Vec::new(),
            batch: Vec::with_capacity(DEV_TX_WEIGHT as usize + 1),
            counters: PathCounters::default(),
            transit: Transit::new(),
            now: Instant::ZERO,
            observer: None,
            meter: Some(Box::new(FlowMeter::new())),
            up_since: None,
            settled: None,
        };
        path.sync_queues();
        path
    }

    /// Marks every TX queue's qdisc as maybe having something to dequeue.
    fn kick(&mut self) {
        for q in &mut self.queues {
            q.ready = true;
        }
        self.unsettle();
    }

    /// Forgets the settled next event: something changed outside `advance`.
    fn unsettle(&mut self) {
        self.settled = None;
    }

    /// The TX queue `pkt` goes to.
    fn queue_of(&self, pkt: &Packet) -> usize {
        super::serializer::queue_of(pkt, self.queues.len())
    }

    /// Makes one TX queue per queue the qdisc runs separately (one per mq
    /// child, else one). When the count changes the rings are made afresh,
    /// each counting the frames of its queue still in flight (posted, or
    /// departed with the completion not reaped), and requeued frames move
    /// to their queue's slot.
    fn sync_queues(&mut self) {
        let n = self.qdisc.tx_queue_count().max(1);
        if n == self.queues.len() {
            return;
        }
        let t = self.now;
        let requeued: Vec<Packet> = self
            .queues
            .iter_mut()
            .flat_map(|q| q.requeued.drain(..))
            .collect();
        self.queues = (0..n).map(|_| TxQueue::new(&self.params, t)).collect();
        for (pkt, _) in self.serializer.queued() {
            let q = super::serializer::queue_of(pkt, n);
            self.queues[q].ring.adopt(pkt.len);
        }
        for ((mapping, len), _) in self.tx_done.queued() {
            self.queues[usize::from(*mapping) % n].ring.adopt(*len);
        }
        for pkt in requeued {
            let q = self.queue_of(&pkt);
            self.queues[q].requeued.push_back(pkt);
        }
        self.serializer.set_queues(n);
        self.reaped = vec![(0, 0); n];
    }

    /// Turns the per-flow meter on (a fresh, empty one) or off (the
    /// benchmark's reference; snapshots then carry no `FlowTraffic`).
    pub fn set_flow_meter(&mut self, on: bool) {
        self.meter = on.then(|| Box::new(FlowMeter::new()));
    }

    /// Tells `observer` from now on what happens to every frame inside the
    /// path (replacing any observer installed before).
    pub fn set_observer(&mut self, observer: Box<dyn PathObserver>) {
        self.observer = Some(observer);
    }

    /// The installed observer, if it is a `T`.
    pub fn observer_mut<T: PathObserver>(&mut self) -> Option<&mut T> {
        let observer: &mut dyn Any = self.observer.as_deref_mut()?;
        observer.downcast_mut()
    }

    /// The link settings in force.
    pub fn params(&self) -> &LinkParams {
        &self.params
    }

    /// The impairments, schedule and framing in force.
    pub fn shape(&self) -> &LinkShape {
        &self.shape
    }

    /// Installs impairments, schedule and framing at `now`. Frames on the
    /// wire keep their departure, frames in propagation their arrival; the
    /// random generator restarts from the seed; a new schedule starts at
    /// `now` (one equal to the running schedule keeps running, with its
    /// start and trace position).
    pub fn set_shape(&mut self, shape: LinkShape, now: Instant) -> Result<(), ShapeError> {
        shape.validate()?;
        self.advance(now);
        let t = self.now;
        self.serializer.set_framing(shape.framing);
        if shape.schedule != self.shape.schedule {
            self.serializer.set_schedule(shape.schedule.clone(), t);
        }
        self.impair = Impair::new(shape.impairments.clone());
        self.delay.set_reorder(self.impair.reorders());
        self.shape = shape;
        self.kick();
        self.advance(t);
        Ok(())
    }

    /// Replaces only the impairments (schedule and framing stay).
    pub fn set_impairments(&mut self, imp: Impairments, now: Instant) -> Result<(), ShapeError> {
        let shape = LinkShape {
            impairments: imp,
            ..self.shape.clone()
        };
        self.set_shape(shape, now)
    }

    /// The path's qdisc tree.
    pub fn qdisc(&self) -> &QdiscTree {
        &self.qdisc
    }

    /// The conservation counters so far.
    pub fn counters(&self) -> &PathCounters {
        &self.counters
    }

    /// Frames inside the path: `frames_in + duplicated - frames_out - drops`.
    pub fn held(&self) -> u64 {
        self.qdisc.qlen() as u64
            + self.requeued_len() as u64
            + self.serializer.len() as u64
            + self.delay.len() as u64
            + self.rx.len() as u64
    }

    /// Frames in the requeue slots of every TX queue.
    fn requeued_len(&self) -> usize {
        self.queues.iter().map(|q| q.requeued.len()).sum()
    }

    /// `PathCounters::check_conservation` with the frames held now.
    pub fn check_conservation(&self) -> Result<(), String> {
        self.counters.check_conservation(self.held())
    }

    /// A frame arrives from the sending side at `now` (its
    /// `meta.arrival`, from which its transit time is measured).
    pub fn ingress(&mut self, mut pkt: Packet, now: Instant) {
        self.advance(now);
        self.unsettle();
        let t = self.now;
        pkt.meta.arrival = t;
        self.counters.frames_in += 1;
        self.counters.bytes_in += pkt.len as u64;
        let q = self.queue_of(&pkt);
        if self.queues[q].requeued.is_empty() && self.qdisc.can_bypass() && self.qdisc.qlen() == 0 {
            // `__dev_xmit_skb`'s bypass counts the frame Sent and calls
            // `sch_direct_xmit`, which finds a stopped queue without asking
            // the driver and requeues the frame (`dev_requeue_skb`).
            self.qdisc.count_bypass(&pkt);
            notify(&mut self.observer, PathEvent::Bypassed, &pkt, t);
            if self.queues[q].ring.can_post() {
                self.counters.xmit_batches += 1;
                self.queues[q].ring.post(pkt.len);
                let at = self.queues[q].doorbell(t, 1, self.params.tx_post_ns);
                self.serializer.post(pkt, at);
            } else {
                self.park(q, pkt, 0);
            }
        } else {
            notify(&mut self.observer, PathEvent::Enqueued, &pkt, t);
            let verdict = self.qdisc.enqueue(pkt, t, &mut self.drops);
            if let Some(o) = &mut self.observer {
                o.verdict(verdict, t);
            }
            self.absorb();
            self.queues[q].ready = true;
        }
        self.advance(t);
    }

    /// BQL's `limit_min`/`limit_max` (sysfs) of every TX queue; effective
    /// from the next completion. False when BQL is off.
    pub fn set_bql_bounds(&mut self, min_limit: u32, max_limit: u32) -> bool {
        (0..self.queues.len()).fold(false, |set, q| {
            self.set_queue_bql_bounds(q, min_limit, max_limit) | set
        })
    }

    /// BQL's `limit_min`/`limit_max` of TX queue `queue` alone (sysfs
    /// `queues/tx-N/byte_queue_limits`). False when BQL is off or there is
    /// no such queue.
    pub fn set_queue_bql_bounds(&mut self, queue: usize, min_limit: u32, max_limit: u32) -> bool {
        self.unsettle();
        self.queues
            .get_mut(queue)
            .and_then(|q| q.ring.dql_mut())
            .map(|d| d.set_bounds(min_limit, max_limit))
            .is_some()
    }

    /// Counts a frame refused before the qdisc (runt, oversize) as in and
    /// dropped; the caller recycles its buffer.
    pub fn count_rejected(&mut self, len: u32, reason: DropReason) {
        self.counters.frames_in += 1;
        self.counters.bytes_in += len as u64;
        self.counters.drops[reason.index()] += 1;
    }

    /// Advances every stage to `now`; frames handed to the receiving side are
    /// appended to `out`; freed frames (drops) are appended to `freed`.
    pub fn poll(&mut self, now: Instant, out: &mut Vec<Packet>, freed: &mut Vec<Packet>) {
        self.advance(now);
        hand_over(&mut self.outbox, out);
        hand_over(&mut self.freed, freed);
    }

    /// The next time `poll` has something to do.
    pub fn poll_at(&self) -> Option<Instant> {
        if !self.outbox.is_empty() || !self.freed.is_empty() {
            return Some(self.now);
        }
        self.settled.unwrap_or_else(|| self.next_event())
    }

    /// Changes rate, overhead, delay, ring, BQL and coalescing at `now`
    /// without losing frames: the rest of the frame on the wire goes at the
    /// new rate, frames in propagation keep their arrival, held completions and RX
    /// frames fall under the new coalescing rule.
    pub fn set_params(&mut self, mut params: LinkParams, now: Instant) {
        // The device's queues change only through `set_tx_queues`.
        params.tx_queues = self.params.tx_queues;
        self.advance(now);
        let t = self.now;
        for q in &mut self.queues {
            q.ring.reconfigure(params.tx_ring, params.bql, t);
            q.ring.set_stop_threshold(params.tx_stop_threshold);
        }
        self.serializer
            .set_rate(params.rate_bytes_ps, params.overhead, t);
        self.delay.set_delay(params.delay_ns);
        self.tx_done.configure(params.tx_coalescing());
        self.rx.configure(params.rx_coalescing());
        self.params = params;
        self.kick();
        self.advance(t);
    }

    /// The RX coalescer's `usecs` and `frames` in force: the fixed ones,
    /// or net_dim's current profile under `adaptive-rx`.
    pub fn rx_moderation(&self) -> (u32, u32) {
        self.rx.moderation()
    }

    /// Changes the device's TX queue count at `now` (`QdiscTree::
    /// set_tx_queues`: a default root is rebuilt for it). On error nothing
    /// changes.
    pub fn set_tx_queues(&mut self, n: u16, now: Instant) -> Result<(), String> {
        if n == self.params.tx_queues {
            return Ok(());
        }
        self.edit_qdisc(now, |tree, t, drops| {
            tree.set_tx_queues(n, t, drops).map_err(|e| e.0)
        })?;
        self.params.tx_queues = n;
        Ok(())
    }

    /// Swaps the qdisc tree at `now`: the frames the old one holds (and
    /// requeued ones) are enqueued into the new one, which may refuse some
    /// (counted as drops). Returns the old, empty tree.
    pub fn replace_qdisc(&mut self, new: QdiscTree, now: Instant) -> QdiscTree {
        self.advance(now);
        let t = self.now;
        let mut old = std::mem::replace(&mut self.qdisc, new);
        let requeued = self.queues.iter_mut().flat_map(|q| q.requeued.drain(..));
        let moved: Vec<Packet> = requeued.chain(old.drain_all()).collect();
        for pkt in moved {
            self.qdisc.enqueue(pkt, t, &mut self.drops);
        }
        self.absorb();
        self.sync_queues();
        self.kick();
        self.advance(t);
        old
    }

    /// Runs `edit` on the qdisc tree at `now` (tc change, class and filter
    /// edits); whatever it drops is counted. Only an edit that succeeded
    /// runs the qdisc afterwards: as in the kernel, a command that fails
    /// makes no dequeue, so it cannot tick a throttled qdisc's counters
    /// (`tbf_dequeue`'s overlimits, net/sched/sch_tbf.c).
    pub fn edit_qdisc<T, E>(
        &mut self,
        now: Instant,
        edit: impl FnOnce(&mut QdiscTree, Instant, &mut Drops) -> Result<T, E>,
    ) -> Result<T, E> {
        self.advance(now);
        let t = self.now;
        let r = edit(&mut self.qdisc, t, &mut self.drops);
        self.unsettle();
        self.absorb();
        self.sync_queues();
        if r.is_ok() {
            self.kick();
            self.advance(t);
        }
        r
    }

    /// Reads the qdisc tree at `now` (a dump, `tc ... show`) without running
    /// it: the kernel's dumps make no dequeue, so reading changes no
    /// counter. `read` gets the tree mutably only because
    /// `QdiscTree::filters` reaches a qdisc's filters through it; it must
    /// not change it.
    pub fn inspect_qdisc<R>(
        &mut self,
        now: Instant,
        read: impl FnOnce(&mut QdiscTree, Instant) -> R,
    ) -> R {
        self.advance(now);
        let r = read(&mut self.qdisc, self.now);
        self.unsettle();
        r
    }

    /// The path at `now`, every flow of its flow-queueing qdiscs listed.
    pub fn snapshot(&self, now: Instant) -> PathSnapshot {
        self.snapshot_listing(now, FlowListing::All)
    }

    /// `snapshot` with the qdisc's flow queues listed as `listing` says
    /// (live snapshots are bounded: `FlowListing::Top`).
    pub fn snapshot_listing(&self, now: Instant, listing: FlowListing) -> PathSnapshot {
        let drops_by_reason = DropReason::ALL
            .iter()
            .map(|r| (r.name(), self.counters.drops[r.index()]))
            .filter(|(_, n)| *n > 0)
            .collect();
        let tx_queues: Vec<TxQueueStats> = self
            .queues
            .iter()
            .map(|q| TxQueueStats::of(&q.ring))
            .collect();
        let sum = |f: fn(&TxQueueStats) -> Option<u32>| {
            tx_queues
                .iter()
                .map(f)
                .try_fold(0u32, |acc, v| v.map(|v| acc.saturating_add(v)))
        };
        let (bql_limit, bql_inflight) = (sum(|q| q.bql_limit), sum(|q| q.bql_inflight));
        let mut qdisc = self.qdisc.dump_listing(now, listing);
        self.annotate(&mut qdisc, now);
        let ring_flows = self.occupancy(QueueId::Ring, self.serializer.queued(), now);
        let wire_flows = self.occupancy(QueueId::Wire, self.delay.queued(), now);
        let requeued = self
            .queues
            .iter()
            .flat_map(|q| q.requeued.iter())
            .map(|p| (p, p.meta.arrival));
        let requeued_flows = self.occupancy(QueueId::Requeued, requeued, now);
        let rx_flows = self.occupancy(QueueId::RxHeld, self.rx.queued(), now);
        let bound = match listing {
            FlowListing::All => usize::MAX,
            FlowListing::Top(n) => n,
        };
        let (flows, other_flows) = self
            .meter
            .as_ref()
            .map(|m| m.top(bound, now))
            .unwrap_or_default();
        PathSnapshot {
            at: now,
            params: self.params,
            seed: self.shape.impairments.seed,
            counters: self.counters.clone(),
            drops_by_reason,
            held: self.held(),
            requeued: self.requeued_len() as u32,
            requeues: self.requeues,
            ring_used: tx_queues.iter().map(|q| q.ring_used).sum(),
            ring_size: tx_queues.iter().map(|q| q.ring_size).sum(),
            ring_bytes: tx_queues.iter().map(|q| q.ring_bytes).sum(),
            bql_limit,
            bql_inflight,
            tx_queues,
            on_wire: self.serializer.len() as u32,
            wire_departs: self.serializer.next_event(),
            in_flight: self.delay.len() as u32,
            rx_held: self.rx.len() as u32,
            moderation: [self.tx_done.moderation(), self.rx.moderation()],
            qdisc,
            transit: self.transit.summary(),
            ring_flows,
            wire_flows,
            requeued_flows,
            rx_flows,
            flows,
            other_flows,
            flows_tracked: self.meter.as_ref().map_or(0, |m| m.tracked()),
            up_since: self.up_since,
        }
    }

    /// Fills in the meter's counts of every flow row of `dump` and below.
    fn annotate(&self, dump: &mut QdiscDump, now: Instant) {
        let Some(m) = &self.meter else {
            return;
        };
        for f in &mut dump.flows {
            f.traffic = m.lookup(f.hash, now);
        }
        for f in dump.occupancy.iter_mut().flat_map(|o| o.flows.iter_mut()) {
            f.traffic = m.lookup(f.hash, now);
        }
        for ch in &mut dump.children {
            self.annotate(ch, now);
        }
    }

    /// `QueueOccupancy::of` with the meter's counts filled in.
    fn occupancy<'a>(
        &self,
        queue: QueueId,
        queued: impl Iterator<Item = (&'a Packet, Instant)> + Clone,
        now: Instant,
    ) -> QueueOccupancy {
        let mut o = QueueOccupancy::of(queue, queued, now);
        if let Some(m) = &self.meter {
            for f in &mut o.flows {
                f.traffic = m.lookup(f.hash, now);
            }
        }
        o
    }

    /// When TX queue `i`'s qdisc should be run: now if it may have
    /// something and the queue is not stopped, else its wake-up.
    fn queue_event(&self, i: usize) -> Option<Instant> {
        let q = &self.queues[i];
        if !q.ring.can_post() {
            return None;
        }
        let qlen = self.qdisc.queue_qlen(i);
        if !q.requeued.is_empty() || (q.ready && qlen > 0) {
            return Some(self.now);
        }
        if qlen > 0 {
            q.wakeup
        } else {
            None
        }
    }

    /// The earliest event of any stage or TX queue (called several times
    /// per frame: written as a chain, without an iterator over the queues
    /// when there is only one).
    fn next_event(&self) -> Option<Instant> {
        let mut ev = earliest(self.serializer.next_event(), self.tx_done.next_event());
        ev = earliest(ev, self.delay.next_event());
        ev = earliest(ev, self.rx.next_event());
        ev = earliest(ev, self.queue_event(0));
        for i in 1..self.queues.len() {
            ev = earliest(ev, self.queue_event(i));
        }
        ev
    }

    /// Processes every event up to `now` in time order.
    fn advance(&mut self, now: Instant) {
        let now = now.max(self.now);
        self.up_since.get_or_insert(now);
        let mut next = match self.settled {
            Some(next) => {
                debug_assert_eq!(next, self.next_event(), "a change left the path unsettled");
                next
            }
            None => self.next_event(),
        };
        while let Some(ev) = next.filter(|t| *t <= now) {
            self.now = ev.max(self.now);
            self.step();
            next = self.next_event();
        }
        self.now = now;
        // What is left is later than `now`, so it does not depend on
        // `self.now` (only a due TX queue reports `self.now`).
        self.settled = Some(next);
    }

    /// Runs every stage whose event is due at `self.now`, in pipeline order.
    fn step(&mut self) {
        let t = self.now;
        while let Some((pkt, departed)) = self.serializer.pop(t) {
            notify(&mut self.observer, PathEvent::Departed, &pkt, departed);
            self.tx_done.push(
                (pkt.meta.queue_mapping, pkt.len),
                u64::from(pkt.len),
                departed,
            );
            let delay = self.serializer.scheduled_delay(departed);
            self.delay.set_delay(delay.unwrap_or(self.params.delay_ns));
            if self.impair.is_inactive() {
                // Nothing to decide: straight into propagation. A frame
                // that reaches the far end by now with none in flight
                // ahead of it goes on to the receiver at once, as the
                // line would hand it over later in this step.
                let arrives = departed + self.delay.delay_ns();
                if self.delay.is_empty() && arrives <= t {
                    let len = u64::from(pkt.len);
                    self.rx.push(pkt, len, arrives);
                } else {
                    self.delay.push(pkt, departed, 0);
                }
            } else {
                let effects = self.impair.transmit(pkt, &mut self.wire);
                self.counters.duplicated += effects.duplicated as u64;
                self.counters.corrupted += effects.corrupted as u64;
                for (pkt, fate) in self.wire.drain(..) {
                    match fate {
                        Fate::Lost => self.drops.push(pkt, DropReason::WireLoss),
                        Fate::Delayed(extra) => self.delay.push(pkt, departed, extra),
                    }
                }
            }
            self.absorb();
        }
        let n = self.queues.len();
        let reaped = &mut self.reaped;
        if let Some(at) = self.tx_done.fire(t, |(mapping, len)| {
            let r = &mut reaped[super::serializer::queue_index(mapping, n)];
            r.0 += 1;
            r.1 += u64::from(len);
        }) {
            // One clean pass; each queue's completions reach its own DQL
            // (`netdev_tx_completed_queue(txq, ...)` per queue).
            for (i, q) in self.queues.iter_mut().enumerate() {
                let (frames, bytes) = std::mem::take(&mut self.reaped[i]);
                if frames == 0 {
                    continue;
                }
                q.ring.reap(frames, bytes, at.max(t));
                if let Some(o) = &mut self.observer {
                    let dql = q.ring.dql();
                    let event = DriverEvent::TxCompletion {
                        queue: (n > 1).then(|| u16::try_from(i).unwrap_or(u16::MAX)),
                        frames,
                        bytes,
                        bql_limit: dql.map(|d| d.limit()),
                        bql_inflight: dql.map(|d| d.inflight()),
                    };
                    o.driver(event, at.max(t));
                }
            }
        }
        for i in 0..self.queues.len() {
            if self.queue_event(i).is_some_and(|e| e <= t) {
                self.run_queue(i, t);
            }
        }
        self.absorb();
        while let Some((pkt, arrived)) = self.delay.pop(t) {
            let len = u64::from(pkt.len);
            self.rx.push(pkt, len, arrived);
        }
        let (outbox, counters, transit, observer, meter) = (
            &mut self.outbox,
            &mut self.counters,
            &mut self.transit,
            &mut self.observer,
            &mut self.meter,
        );
        let mut frames = 0u32;
        let fired = self.rx.fire(t, |mut pkt| {
            frames += 1;
            counters.frames_out += 1;
            counters.bytes_out += pkt.len as u64;
            if let Some(m) = meter {
                m.delivered(&pkt, t);
            }
            transit.record(t.saturating_since(pkt.meta.arrival));
            pkt.meta.delivered = t;
            notify(observer, PathEvent::Delivered, &pkt, t);
            outbox.push(pkt);
        });
        if let (Some(at), Some(o)) = (fired, &mut self.observer) {
            o.driver(DriverEvent::RxInterrupt { frames }, at);
        }
    }

    /// Counts every frame in `drops` by reason and moves it to `freed`, the
    /// reason noted in its metadata; they were dropped at `self.now`.
    fn absorb(&mut self) {
        let t = self.now;
        for (mut pkt, reason) in self.drops.drain() {
            self.counters.drops[reason.index()] += 1;
            if let Some(m) = &mut self.meter {
                m.dropped(&pkt, reason, t);
            }
            pkt.meta.dropped = Some(reason);
            notify(&mut self.observer, PathEvent::Dropped(reason), &pkt, t);
            self.freed.push(pkt);
        }
    }

    /// `__qdisc_run` of TX queue `i`'s qdisc at `t`: `qdisc_restart` until
    /// the queue stops or its qdisc has nothing to give.
    fn run_queue(&mut self, i: usize, t: Instant) {
        self.queues[i].ready = true;
        self.queues[i].wakeup = None;
        let mut quota = DEV_TX_WEIGHT;
        let mut batch = std::mem::take(&mut self.batch);
        while self.queues[i].ring.can_post() {
            if let Some(pkt) = self.queues[i].requeued.pop_front() {
                self.qdisc
                    .requeue_slot()
                    .resent(pkt.meta.queue_mapping, pkt.len);
                batch.push(pkt);
            } else if let Some(first) = self.qdisc.dequeue_queue(i, t, &mut self.drops) {
                notify(&mut self.observer, PathEvent::Dequeued, &first, t);
                let ring = &self.queues[i].ring;
                let bulk = self.params.bulk_dequeue && ring.dql().is_some();
                let mut budget = BulkBudget::new(ring.dql_avail(), first.len, quota);
                batch.push(first);
                while bulk && budget.wants_more() {
                    let Some(pkt) = self.qdisc.dequeue_queue(i, t, &mut self.drops) else {
                        break;
                    };
                    notify(&mut self.observer, PathEvent::Dequeued, &pkt, t);
                    budget.take(pkt.len);
                    batch.push(pkt);
                }
            } else {
                self.queues[i].ready = false;
                self.queues[i].wakeup = self.qdisc.queue_wakeup(i, t).filter(|w| *w > t);
                break;
            }
            quota = quota.saturating_sub(batch.len() as u32);
            if quota == 0 {
                // The softirq reschedules the run at once with a fresh quota.
                quota = DEV_TX_WEIGHT;
            }
            self.xmit(i, &mut batch, t);
        }
        self.batch = batch;
    }

    /// `dev_hard_start_xmit`: posts the batch until the ring is full; the
    /// driver refuses the rest (NETDEV_TX_BUSY) and it is requeued, ahead
    /// of frames requeued before, in the root's slot (`dev_requeue_skb`).
    /// The frames the ring took reach the NIC at the batch's doorbell,
    /// rung after the last of them (`TxQueue::doorbell`; the driver also
    /// kicks when the queue stops, which ends the batch).
    fn xmit(&mut self, i: usize, batch: &mut Vec<Packet>, t: Instant) {
        self.counters.xmit_batches += 1;
        let mut refused = 0;
        for pkt in batch.drain(..) {
            if self.queues[i].ring.post(pkt.len) {
                self.posted.push(pkt);
            } else {
                self.park(i, pkt, refused);
                refused += 1;
            }
        }
        let k = self.posted.len() as u64;
        let at = self.queues[i].doorbell(t, k, self.params.tx_post_ns);
        for pkt in self.posted.drain(..) {
            self.serializer.post(pkt, at);
        }
    }

    /// `dev_requeue_skb`: parks a frame the driver refused at position `at`
    /// of the requeue slot, counted in the root's slot tally.
    fn park(&mut self, i: usize, pkt: Packet, at: usize) {
        self.qdisc
            .requeue_slot()
            .requeued(pkt.meta.queue_mapping, pkt.len);
        self.queues[i].requeued.insert(at, pkt);
        self.requeues += 1;
    }
}

/// Appends everything in `from` to `to`, leaving `from` empty: into an
/// empty `to` by swapping the two lists' buffers (the usual case, every
/// poll of the live datapath) rather than copying each frame.
fn hand_over(from: &mut Vec<Packet>, to: &mut Vec<Packet>) {
    if to.is_empty() {
        std::mem::swap(from, to);
    } else {
        to.append(from);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dir::Dir;
    use crate::link::impair::{Distribution, Loss, Reorder};
    use crate::link::Schedule;
    use crate::qdisc::fifo::{Fifo, FifoKind};
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::tree::DevSpec;
    use crate::qdisc::QdiscCtx;
    use crate::time::{NS_PER_MS, NS_PER_SEC, NS_PER_US};

    /// A device tree whose root is `root`.
    fn tree(root: Box<dyn Qdisc>) -> QdiscTree {
        QdiscTree::with_root(DevSpec::new(Dir::LeftToRight, &[]), root)
    }

    fn fifo(limit: u64) -> QdiscTree {
        tree(Box::new(Fifo::with_limit(
            FifoKind::Pfifo,
            QdiscCtx::default(),
            limit,
        )))
    }

    fn path(params: LinkParams) -> Path {
        Path::new(params, fifo(1000))
    }

    fn assert_conserved(p: &Path) {
        if let Err(e) = p.check_conservation() {
            panic!("{e}: {:?}", p.counters());
        }
    }

    /// Polls at every `poll_at` until nothing is left, returning (id, time).
    fn drain(p: &mut Path) -> Vec<(u64, Instant)> {
        let (mut out, mut freed, mut got) = (Vec::new(), Vec::new(), Vec::new());
        while let Some(t) = p.poll_at() {
            p.poll(t, &mut out, &mut freed);
            got.extend(out.drain(..).map(|pk: Packet| (pk.meta.id, t)));
            assert_conserved(p);
        }
        got
    }

    #[test]
    fn lone_frame_latency_is_serialization_delay_and_rx_usecs() {
        let params = LinkParams {
            rate_bytes_ps: 12_500_000, // 100 Mbit/s
            overhead: 24,
            delay_ns: 10 * NS_PER_MS,
            rx_usecs: 50,
            rx_frames: 32,
            ..LinkParams::default()
        };
        let mut p = path(params);
        let t0 = Instant::from_millis(5);
        p.ingress(pkt(1, 98), t0);
        // (98 + 24) B at 12.5 MB/s = 9760 ns.
        let got = drain(&mut p);
        assert_eq!(got, vec![(1, t0 + 9_760 + 10 * NS_PER_MS + 50 * NS_PER_US)]);
        assert_eq!(p.counters().frames_out, 1);
        assert_eq!(p.qdisc().stats().packets, 1, "bypass counts as Sent");
        assert_eq!(p.qdisc().stats().qlen, 0);
    }

    #[test]
    fn transit_histogram_of_an_idle_link_starts_at_delay_plus_serialization() {
        let params = LinkParams {
            rate_bytes_ps: 1_250_000, // 10 Mbit/s
            delay_ns: 3 * NS_PER_MS,
            ..LinkParams::default()
        };
        let mut p = path(params);
        // Frames 20 ms apart never queue: each takes 1000 B / 1.25 MB/s =
        // 800 us on the wire, then the delay.
        for i in 0..50 {
            p.ingress(pkt(i, 1000), Instant::from_millis(7 + 20 * i));
            p.poll(
                Instant::from_millis(7 + 20 * i + 10),
                &mut Vec::new(),
                &mut Vec::new(),
            );
        }
        // Then a burst of 10: the last waits for nine others (7.2 ms).
        let burst = Instant::from_millis(2_000);
        for i in 50..60 {
            p.ingress(pkt(i, 1000), burst);
        }
        drain(&mut p);
        let s = p.snapshot(Instant::from_millis(3_000)).transit;
        let idle = 3 * NS_PER_MS + 800 * NS_PER_US;
        // Min and max are exact; percentiles within the histogram's 1 %.
        let within = |got: u64, want: u64| got.abs_diff(want) <= want / 100;
        assert_eq!(s.count, p.counters().frames_out);
        assert_eq!(s.count, 60);
        assert_eq!(s.min_ns, idle);
        assert!(within(s.p50_ns, idle), "p50 {} want {idle}", s.p50_ns);
        assert_eq!(s.max_ns, idle + 9 * 800 * NS_PER_US);
        assert_eq!(s.buckets.iter().map(|b| b.count).sum::<u64>(), 60);
    }

    /// Every `PathEvent` with its frame id and time.
    #[derive(Default)]
    struct Recorder(Vec<(PathEvent, u64, Instant)>);

    impl PathObserver for Recorder {
        fn event(&mut self, event: PathEvent, pkt: &Packet, at: Instant) {
            self.0.push((event, pkt.meta.id, at));
        }
    }

    #[test]
    fn an_observer_sees_enqueue_bypass_dequeue_drops_and_delivery() {
        // One frame on the ring at a time, a one-frame qdisc; 1000 B at
        // 1 MB/s = 1 ms on the wire, then 2 ms of delay.
        let params = LinkParams {
            rate_bytes_ps: 1_000_000,
            delay_ns: 2 * NS_PER_MS,
            tx_ring: 1,
            bql: false,
            ..LinkParams::default()
        };
        let mut p = Path::new(params, fifo(1));
        assert!(p.observer_mut::<Recorder>().is_none());
        p.set_observer(Box::new(Recorder::default()));
        let t0 = Instant::from_millis(1);
        for i in 0..4 {
            p.ingress(pkt(i, 1000), t0);
        }
        // Frame 1 finds the qdisc empty and bypasses it, but the ring is
        // full: it waits in the requeue slot (`dev_requeue_skb`), goes out
        // first at the next completion and is not dequeued again. Frame 2
        // fills the one-frame pfifo, frame 3 is dropped. Each leaves the
        // NIC 1 ms after it went onto the ring.
        assert_eq!((p.snapshot(t0).requeued, p.snapshot(t0).requeues), (1, 1));
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        while let Some(t) = p.poll_at() {
            p.poll(t, &mut out, &mut freed);
        }
        use PathEvent::*;
        let ms = Instant::from_millis;
        assert_eq!(
            p.observer_mut::<Recorder>().unwrap().0,
            vec![
                (Bypassed, 0, t0),
                (Bypassed, 1, t0),
                (Enqueued, 2, t0),
                (Enqueued, 3, t0),
                (Dropped(DropReason::QueueFull), 3, t0),
                (Departed, 0, ms(2)),
                (Departed, 1, ms(3)),
                (Dequeued, 2, ms(3)),
                (Departed, 2, ms(4)),
                (Delivered, 0, ms(4)),
                (Delivered, 1, ms(5)),
                (Delivered, 2, ms(6)),
            ]
        );
        assert_eq!((out.len(), freed.len()), (3, 1));
        assert_eq!(freed[0].meta.dropped, Some(DropReason::QueueFull));
    }

    #[test]
    fn transit_counts_rx_coalescing_and_skips_dropped_frames() {
        let params = LinkParams {
            rate_bytes_ps: 12_500_000,
            delay_ns: NS_PER_MS,
            rx_usecs: 100,
            rx_frames: 64,
            ..LinkParams::default()
        };
        let mut p = Path::new(params, fifo(2));
        let t0 = Instant::from_millis(1);
        // BQL stops the queue after the first frame (which bypasses the
        // qdisc); the two-frame qdisc refuses some of the rest.
        for i in 0..6 {
            p.ingress(pkt(i, 1250), t0);
        }
        drain(&mut p);
        let c = p.counters().clone();
        let s = p.snapshot(Instant::from_millis(100)).transit;
        assert!(c.total_drops() > 0, "{c:?}");
        assert_eq!(s.count, c.frames_out);
        assert_eq!(s.count, c.frames_in - c.total_drops());
        // 1250 B = 100 us at 100 Mbit/s, 1 ms delay, 100 us of coalescing.
        let lone = 100 * NS_PER_US + NS_PER_MS + 100 * NS_PER_US;
        assert_eq!(s.min_ns, lone, "{s:?}");
    }

    /// The ring's descriptors in use and their bytes, and the frames in
    /// the qdisc (the root's dump counts the requeued ones too, as tc shows
    /// them: they are not in the qdisc).
    fn ring_of(p: &Path, now: Instant) -> (u32, u64, u32) {
        let s = p.snapshot(now);
        (s.ring_used, s.ring_bytes, s.qdisc.stats.qlen - s.requeued)
    }

    /// Offers `n` frames of 1514 B, one every 60.56 us (twice 100 Mbit/s),
    /// into a path with a 100 000-frame pfifo, polling just before each
    /// arrival; `each` looks at the path after every arrival.
    fn offer_twice_line_rate(
        params: LinkParams,
        n: u64,
        mut each: impl FnMut(&Path, Instant),
    ) -> Path {
        let mut p = Path::new(params, fifo(100_000));
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        for i in 0..n {
            let t = Instant::from_nanos(i * 60_560);
            p.poll(t, &mut out, &mut freed);
            p.ingress(pkt(i, 1514), t);
            each(&p, t);
        }
        p
    }

    /// B-3's link: 100 Mbit/s, a 256-descriptor ring, BQL on or off.
    fn b3_params(bql: bool) -> LinkParams {
        LinkParams {
            rate_bytes_ps: 12_500_000,
            tx_ring: 256,
            bql,
            ..LinkParams::default()
        }
    }

    /// B-3 without BQL: the ring absorbs 256 x 1514 B = 31.0 ms at 100 Mbit/s
    /// before the qdisc holds anything.
    #[test]
    fn b3_no_bql_ring_absorbs_31ms() {
        let mut max_ring_bytes = 0;
        // Offered load: twice the line rate for 100 ms.
        let p = offer_twice_line_rate(b3_params(false), 1651, |p, t| {
            let (used, bytes, qlen) = ring_of(p, t);
            if qlen > 0 {
                assert!(used >= 255, "qdisc holds {qlen} while ring has {used}");
            }
            max_ring_bytes = max_ring_bytes.max(bytes);
            assert_conserved(p);
        });
        assert_eq!(max_ring_bytes, 256 * 1514);
        let ring_ms = max_ring_bytes as f64 / 12_500_000.0 * 1e3;
        assert!((ring_ms - 31.0).abs() < 0.05, "{ring_ms} ms");
        let s = p.snapshot(Instant::from_millis(100));
        assert!(s.qdisc.stats.qlen > 500, "the rest waits in the qdisc");
        assert!(s.bql_limit.is_none());
    }

    /// B-3 with BQL: the ring keeps < 0.4 ms, the queue moves into the qdisc.
    #[test]
    fn b3_with_bql_ring_stays_below_400us() {
        let mut max_ring_bytes = 0;
        let p = offer_twice_line_rate(b3_params(true), 1651, |p, t| {
            max_ring_bytes = max_ring_bytes.max(ring_of(p, t).1);
            assert_conserved(p);
        });
        let ring_us = max_ring_bytes as f64 / 12_500_000.0 * 1e6;
        assert!(ring_us < 400.0, "ring held {ring_us} us");
        let s = p.snapshot(Instant::from_millis(100));
        assert!(s.qdisc.stats.qlen > 700, "qlen {}", s.qdisc.stats.qlen);
        assert!(s.bql_limit.unwrap() > 0);
        // The link stayed busy: ~100 ms worth of frames left.
        assert!(s.counters.frames_out >= 820, "{}", s.counters.frames_out);
    }

    /// Saturates a 100 Mbit/s BQL path for 300 ms and returns the BQL
    /// limit and the largest ring occupancy in bytes.
    fn saturated_bql(tx_usecs: u32, tx_frames: u32) -> (u32, u64) {
        let params = LinkParams {
            rate_bytes_ps: 12_500_000,
            tx_usecs,
            tx_frames,
            ..LinkParams::default()
        };
        let mut max_ring = 0;
        let p = offer_twice_line_rate(params, 5_000, |p, t| {
            max_ring = max_ring.max(p.snapshot(t).ring_bytes);
        });
        (p.snapshot(Instant::ZERO).bql_limit.unwrap(), max_ring)
    }

    /// TX completion coalescing inflates the BQL limit to about twice the
    /// bytes completed per completion event (lib/dynamic_queue_limits.c
    /// `dql_completed`: a starved completion grows the limit by the bytes
    /// completed since the previous one).
    #[test]
    fn tx_coalescing_inflates_bql_limit() {
        let (limit1, ring1) = saturated_bql(0, 1);
        let (limit8, ring8) = saturated_bql(1_000, 8);
        let per_completion = 8 * 1514;
        assert!(limit1 <= 2 * 1514, "per-frame completions: limit {limit1}");
        assert!(
            limit8 >= per_completion && limit8 <= 3 * per_completion,
            "limit {limit8} vs {per_completion} B per completion"
        );
        assert!(ring8 > 3 * ring1, "ring {ring8} vs {ring1}");
    }

    /// A shaping qdisc for tests: one frame per `gap_ns`, announcing its
    /// wake-up only if `announce`.
    struct Paced {
        queue: VecDeque<Packet>,
        gap_ns: u64,
        next: Instant,
        announce: bool,
    }

    impl Qdisc for Paced {
        fn kind(&self) -> &'static str {
            "paced"
        }
        fn enqueue(&mut self, pkt: Packet, _: Instant, _: &mut Drops) -> crate::qdisc::Verdict {
            self.queue.push_back(pkt);
            crate::qdisc::Verdict::Queued
        }
        fn dequeue(&mut self, now: Instant, _: &mut Drops) -> Option<Packet> {
            if self.queue.is_empty() || now < self.next {
                return None;
            }
            self.next = now + self.gap_ns;
            self.queue.pop_front()
        }
        fn peek(&mut self, _: Instant, _: &mut Drops) -> Option<&Packet> {
            self.queue.front()
        }
        fn next_wakeup(&self, now: Instant) -> Option<Instant> {
            (self.announce && !self.queue.is_empty()).then(|| self.next.max(now))
        }
        fn qlen(&self) -> u32 {
            self.queue.len() as u32
        }
        fn backlog(&self) -> u64 {
            self.queue.iter().map(|p| p.len as u64).sum()
        }
        fn counters(&self) -> crate::qdisc::QdiscStats {
            crate::qdisc::QdiscStats::default()
        }
        fn reset(&mut self, drops: &mut Drops) {
            for p in self.queue.drain(..) {
                drops.push(p, DropReason::QdiscReset);
            }
        }
        fn dump(&self, _: Instant) -> QdiscDump {
            QdiscDump::default()
        }
        fn drain_all(&mut self) -> Vec<Packet> {
            self.queue.drain(..).collect()
        }
    }

    fn paced(gap_ns: u64, announce: bool) -> QdiscTree {
        tree(Box::new(Paced {
            queue: VecDeque::new(),
            gap_ns,
            next: Instant::ZERO,
            announce,
        }))
    }

    #[test]
    fn throttled_qdisc_wakes_the_path() {
        let params = LinkParams {
            rate_bytes_ps: 125_000_000,
            ..LinkParams::default()
        };
        let mut p = Path::new(params, paced(NS_PER_MS, true));
        for i in 0..3 {
            p.ingress(pkt(i, 1514), Instant::ZERO);
        }
        let times: Vec<u64> = drain(&mut p).iter().map(|(_, t)| t.nanos()).collect();
        assert_eq!(
            times,
            vec![12_112, NS_PER_MS + 12_112, 2 * NS_PER_MS + 12_112]
        );
    }

    #[test]
    fn qdisc_wakeup_ignored_while_the_ring_is_full() {
        let params = LinkParams {
            rate_bytes_ps: 302_800, // 1514 B = 5 ms
            tx_ring: 1,
            bql: false,
            ..LinkParams::default()
        };
        let mut p = Path::new(params, paced(NS_PER_MS, true));
        p.ingress(pkt(0, 1514), Instant::ZERO);
        p.ingress(pkt(1, 1514), Instant::ZERO);
        assert_eq!(
            p.poll_at(),
            Some(Instant::from_millis(5)),
            "not the 1 ms wake-up"
        );
        assert_eq!(drain(&mut p).len(), 2);
    }

    #[test]
    fn qdisc_without_wakeup_does_not_spin() {
        let mut p = Path::new(LinkParams::default(), paced(NS_PER_MS, false));
        p.ingress(pkt(0, 100), Instant::ZERO);
        p.ingress(pkt(1, 100), Instant::ZERO);
        assert_eq!(drain(&mut p).len(), 1);
        assert_eq!(p.poll_at(), None);
        assert_eq!(p.held(), 1);
        // The next arrival runs the qdisc again.
        p.ingress(pkt(2, 100), Instant::from_millis(3));
        assert_eq!(drain(&mut p).len(), 1);
        assert_eq!(p.held(), 1);
    }

    #[test]
    fn path_and_bridge_can_move_to_the_datapath_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<Path>();
        assert_send::<crate::bridge::Bridge>();
    }

    fn bulk_setup(tx_ring: u32, bulk: bool) -> Path {
        let params = LinkParams {
            rate_bytes_ps: 125_000_000,
            tx_ring,
            bulk_dequeue: bulk,
            ..LinkParams::default()
        };
        let mut p = Path::new(params, fifo(1000));
        assert!(p.set_bql_bounds(10_000, 10_000));
        // The first frame bypasses and stops the queue (limit 0); the
        // second bypasses too, finds the queue stopped and is requeued
        // (`sch_direct_xmit`); 18 wait in the pfifo.
        for i in 0..20 {
            p.ingress(pkt(i, 1514), Instant::ZERO);
        }
        assert_eq!(ring_of(&p, Instant::ZERO), (1, 1514, 18));
        let s = p.snapshot(Instant::ZERO);
        assert_eq!((s.requeued, s.requeues, s.held), (1, 1, 20));
        p
    }

    /// B-4 through the path: at the completion the limit becomes 10000; the
    /// requeued frame goes first, alone (`dequeue_skb` takes `gso_skb`
    /// without bulking), then one bulk batch of 6: 7 frames (10598 B).
    #[test]
    fn b4_bulk_dequeue_after_completion() {
        let mut p = bulk_setup(256, true);
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        let t1 = p.poll_at().unwrap();
        assert_eq!(t1, Instant::from_nanos(12_112));
        p.poll(t1, &mut out, &mut freed);
        let s = p.snapshot(t1);
        assert_eq!(s.bql_limit, Some(10_000));
        assert_eq!((s.ring_used, s.ring_bytes), (7, 10_598));
        assert_eq!(s.qdisc.stats.qlen, 12);
        assert_eq!((s.requeued, s.requeues), (0, 1));
    }

    /// The `xmit_more` doorbell: at 5 µs per posted frame, frame 0 (a
    /// bypass, a batch of 1) reaches the NIC at 5 µs and leaves 12.112 µs
    /// later (1514 B at 125 MB/s). At its completion (17112 ns) the
    /// requeued frame 1 goes alone: doorbell 22112, leaves 34224. Then the
    /// bulk batch of six (B-4's rule with the limit pinned at 10000) is
    /// posted after it, the driver busy until 22112: its doorbell rings at
    /// 22112 + 6 × 5000 = 52112, so frame 2 leaves at 64224 although the
    /// wire was free from 34224; the rest follow back to back.
    #[test]
    fn xmit_more_doorbell_delays_a_batch_by_its_posting() {
        let params = LinkParams {
            rate_bytes_ps: 125_000_000,
            tx_post_ns: 5_000,
            ..LinkParams::default()
        };
        let mut p = Path::new(params, fifo(1000));
        assert!(p.set_bql_bounds(10_000, 10_000));
        for i in 0..20 {
            p.ingress(pkt(i, 1514), Instant::ZERO);
        }
        let got = drain(&mut p);
        let first: Vec<(u64, u64)> = got[..8].iter().map(|(id, t)| (*id, t.nanos())).collect();
        let mut want = vec![(0, 17_112), (1, 34_224)];
        want.extend((2..8).map(|id| (id, 52_112 + (id - 1) * 12_112)));
        assert_eq!(first, want);
        assert_eq!(got.len(), 20);
        // Cost 0: each frame reaches the NIC as it is posted (B-4's times).
        let mut p = Path::new(
            LinkParams {
                tx_post_ns: 0,
                ..params
            },
            fifo(1000),
        );
        p.ingress(pkt(0, 1514), Instant::ZERO);
        assert_eq!(drain(&mut p), vec![(0, Instant::from_nanos(12_112))]);
    }

    /// A batch larger than the free ring slots is partly refused and
    /// requeued (NETDEV_TX_BUSY); without bulk dequeue nothing is requeued.
    #[test]
    fn bulk_batch_overrunning_the_ring_is_requeued() {
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        let mut p = bulk_setup(4, true);
        let t1 = p.poll_at().unwrap();
        p.poll(t1, &mut out, &mut freed);
        let s = p.snapshot(t1);
        // 1 requeued at the bypass, 3 of the bulk batch of 6.
        assert_eq!((s.ring_used, s.requeued, s.requeues), (4, 3, 4));
        // 12 in the pfifo, and the root counts the 3 requeued (as tc
        // shows them).
        assert_eq!(s.qdisc.stats.qlen, 12 + 3);
        assert_eq!(s.held, 20 - 1);
        assert_conserved(&p);
        // Requeued frames go first and keep their order.
        let ids: Vec<u64> = drain(&mut p).into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, (1..20).collect::<Vec<_>>());

        let mut p = bulk_setup(4, false);
        let t1 = p.poll_at().unwrap();
        p.poll(t1, &mut out, &mut freed);
        let s = p.snapshot(t1);
        assert_eq!((s.ring_used, s.requeued, s.requeues), (4, 0, 1));
        assert_eq!(s.qdisc.stats.qlen, 15);
    }

    /// A completion that frees the only slot lets the qdisc send at that
    /// very instant, even when the driver polls much later.
    #[test]
    fn completion_frees_slot_and_qdisc_sends_at_once() {
        let params = LinkParams {
            rate_bytes_ps: 1_000_000, // 1000 B = 1 ms
            tx_ring: 1,
            bql: false,
            ..LinkParams::default()
        };
        let mut p = path(params);
        for i in 0..5 {
            p.ingress(pkt(i, 1000), Instant::ZERO);
        }
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        p.poll(Instant::from_micros(3_500), &mut out, &mut freed);
        assert_eq!(
            out.len(),
            3,
            "departures at 1, 2, 3 ms despite one late poll"
        );
        assert_eq!(p.poll_at(), Some(Instant::from_millis(4)));
        p.poll(Instant::from_millis(10), &mut out, &mut freed);
        assert_eq!(out.len(), 5);
    }

    /// TX completion coalescing holds ring slots: with tx-frames 4 and a
    /// ring of 4 the link idles until the 4th frame's completion.
    #[test]
    fn tx_coalescing_holds_ring_slots() {
        let params = LinkParams {
            rate_bytes_ps: 1_000_000,
            tx_ring: 4,
            bql: false,
            tx_usecs: 10_000,
            tx_frames: 4,
            ..LinkParams::default()
        };
        let mut p = path(params);
        for i in 0..8 {
            p.ingress(pkt(i, 1000), Instant::ZERO);
        }
        let got = drain(&mut p);
        let times: Vec<u64> = got.iter().map(|(_, t)| t.nanos() / 1000).collect();
        // 4 frames at 1..4 ms, reaped together at 4 ms, then 5..8 ms.
        assert_eq!(times, vec![1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000]);
        let mut p = path(LinkParams {
            tx_frames: 5,
            ..params
        });
        for i in 0..8 {
            p.ingress(pkt(i, 1000), Instant::ZERO);
        }
        let times: Vec<u64> = drain(&mut p)
            .iter()
            .map(|(_, t)| t.nanos() / 1000)
            .collect();
        // Only 4 can be outstanding: the timer (10 ms after the first
        // completion at 1 ms) reaps them at 11 ms.
        assert_eq!(
            times,
            vec![1000, 2000, 3000, 4000, 12_000, 13_000, 14_000, 15_000]
        );
    }

    /// N-1 through the whole path (unlimited rate, no delay): frames every
    /// 12 us leave in batches of 5 at 50, 110, 170 us.
    #[test]
    fn n1_through_the_path() {
        let params = LinkParams {
            rate_bytes_ps: 0,
            rx_usecs: 50,
            rx_frames: 0,
            ..LinkParams::default()
        };
        assert_eq!(
            n1_deliveries(params),
            [[50; 5], [110; 5], [170; 5]].concat()
        );
    }

    /// N-1's 15 frames of 100 bytes 12 us apart through a path of
    /// `params`: when each is delivered, us.
    fn n1_deliveries(params: LinkParams) -> Vec<u64> {
        let mut p = path(params);
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        let mut deliveries = Vec::new();
        for i in 0..15u64 {
            let t = Instant::from_micros(i * 12);
            // Deliver whatever is due before this arrival, at its time.
            while let Some(due) = p.poll_at().filter(|d| *d <= t) {
                p.poll(due, &mut out, &mut freed);
                deliveries.extend(out.drain(..).map(|_| due.nanos() / 1000));
            }
            p.ingress(pkt(i, 100), t);
        }
        deliveries.extend(drain(&mut p).iter().map(|(_, t)| t.nanos() / 1000));
        deliveries
    }

    /// N-1's frames through a path in CQE mode (`ethtool -C cqe-mode-rx
    /// on`): the timer restarts at every arrival 12 us apart, so the first
    /// interrupt waits for the quiet gap after the 15th frame (168 + 50
    /// us), unless `rx-frames` fires first: 8 frames at the 8th's arrival
    /// (84 us), the other 7 at 168 + 50.
    #[test]
    fn n1_through_the_path_in_cqe_mode() {
        for (rx_frames, want) in [
            (0, [218; 15].to_vec()),
            (8, [[84; 8].as_slice(), &[218; 7]].concat()),
        ] {
            let params = LinkParams {
                rate_bytes_ps: 0,
                rx_usecs: 50,
                rx_frames,
                rx_cqe: true,
                ..LinkParams::default()
            };
            assert_eq!(n1_deliveries(params), want, "rx-frames {rx_frames}");
        }
    }

    /// `adaptive-rx on`: the coalescer starts on net_dim's default EQE
    /// profile (8 us, 256 frames) whatever rx-usecs says, a lone frame
    /// waits those 8 us, and under steady traffic the tuner moves between
    /// its profiles (traffic the moderation cannot change reads the same
    /// each window, so it turns and steps until tired). Turning adaptive
    /// moderation off brings the fixed values back.
    #[test]
    fn adaptive_rx_moderates_with_net_dim_profiles() {
        let params = LinkParams {
            rate_bytes_ps: 0,
            rx_usecs: 50,
            rx_frames: 0,
            rx_adaptive: true,
            ..LinkParams::default()
        };
        let mut p = path(params);
        assert_eq!(p.rx_moderation(), (8, 256));
        // The snapshot shows the profile in force (the TUI's coal line).
        assert_eq!(p.snapshot(Instant::ZERO).moderation[1], (8, 256));
        let t0 = Instant::from_micros(100);
        p.ingress(pkt(0, 100), t0);
        assert_eq!(drain(&mut p), vec![(0, t0 + 8 * NS_PER_US)]);
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        let mut seen = std::collections::BTreeSet::new();
        for i in 1..2000u64 {
            let t = t0 + i * 4 * NS_PER_US;
            p.poll(t, &mut out, &mut freed);
            p.ingress(pkt(i, 100), t);
            seen.insert(p.rx_moderation());
        }
        drain(&mut p);
        assert_eq!(p.counters().frames_out, 2000);
        let profiles = [(1, 256), (8, 256), (64, 256), (128, 256), (256, 256)];
        assert!(seen.iter().all(|m| profiles.contains(m)), "{seen:?}");
        assert!(
            seen.contains(&(1, 256)) && seen.contains(&(8, 256)),
            "{seen:?}"
        );
        let t = t0 + 10 * NS_PER_MS;
        p.set_params(
            LinkParams {
                rx_adaptive: false,
                ..params
            },
            t,
        );
        assert_eq!(p.rx_moderation(), (50, 0));
        p.set_params(params, t);
        assert_eq!(p.rx_moderation(), (8, 256), "a fresh tuner");
    }

    /// A path polled only every 333 us (plus at arrivals) ends up in the
    /// same state as one polled at every event: no drift, no reordering of
    /// stage events.
    #[test]
    fn late_polls_match_exact_polls() {
        let params = LinkParams {
            rate_bytes_ps: 150_000_000,
            overhead: 24,
            delay_ns: NS_PER_MS,
            tx_ring: 64,
            tx_usecs: 20,
            tx_frames: 16,
            rx_usecs: 30,
            rx_frames: 8,
            ..LinkParams::default()
        };
        let mut exact = path(params);
        let mut late = path(params);
        let (mut out_exact, mut out_late, mut freed) = (Vec::new(), Vec::new(), Vec::new());
        let mut checked = 0;
        for i in 0..3_000u64 {
            // Bursts of 10 frames every 50 us: about 2x the line rate.
            let t = Instant::from_nanos((i / 10) * 50_000);
            while let Some(e) = exact.poll_at().filter(|e| *e <= t) {
                exact.poll(e, &mut out_exact, &mut freed);
            }
            if i % 40 == 0 {
                late.poll(t, &mut out_late, &mut freed);
                exact.poll(t, &mut out_exact, &mut freed);
                let (a, b) = (exact.snapshot(t), late.snapshot(t));
                assert_eq!(a.counters.frames_out, b.counters.frames_out, "at {t:?}");
                assert_eq!(a.counters.drops, b.counters.drops);
                assert_eq!((a.ring_used, a.bql_limit), (b.ring_used, b.bql_limit));
                checked += 1;
            }
            exact.ingress(pkt(i, 1514), t);
            late.ingress(pkt(i, 1514), t);
        }
        assert_eq!(checked, 75);
        let ids = |out: &Vec<Packet>| out.iter().map(|p| p.meta.id).collect::<Vec<u64>>();
        let (mut a, mut b) = (ids(&out_exact), ids(&out_late));
        a.extend(drain(&mut exact).iter().map(|(id, _)| *id));
        b.extend(drain(&mut late).iter().map(|(id, _)| *id));
        assert_eq!(a, b);
        assert_eq!(a.len() as u64, exact.counters().frames_out);
        assert!(
            exact.counters().total_drops() > 0,
            "the load overflows the qdisc"
        );
    }

    /// `set left.rate=100` (100 bit/s, tc's meaning) with frames queued,
    /// then the intended 100mbit a second later: the frame that was on the
    /// wire leaves at once, not 100 s later, and the backlog drains at the
    /// new rate.
    #[test]
    fn a_rate_typo_is_undone_by_setting_the_right_rate() {
        let fast = LinkParams {
            rate_bytes_ps: 12_500_000,
            delay_ns: 0,
            ..LinkParams::default()
        };
        let mut p = path(fast);
        for i in 0..20 {
            p.ingress(pkt(i, 1500), Instant::ZERO);
        }
        p.set_params(
            LinkParams {
                rate_bytes_ps: 12,
                ..fast
            },
            Instant::ZERO,
        );
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        let second = Instant::from_millis(1_000);
        p.poll(second, &mut out, &mut freed);
        assert!(out.is_empty(), "nothing leaves in the typo's second");
        assert!(p.poll_at().unwrap() > Instant::from_millis(100_000));
        p.set_params(fast, second);
        let got = drain(&mut p);
        assert_eq!(got.len(), 20);
        // 20 frames of 1538 wire bytes at 100 Mbit/s: under 2.5 ms.
        let last = got.last().unwrap().1;
        assert!(
            last.saturating_since(second) < 2_500_000,
            "drained {} ns after the fix",
            last.saturating_since(second)
        );
        assert_conserved(&p);
    }

    #[test]
    fn a_stalled_wire_is_seen_in_the_snapshot() {
        let fast = LinkParams {
            rate_bytes_ps: 12_500_000,
            ..LinkParams::default()
        };
        let mut p = path(fast);
        p.ingress(pkt(1, 1500), Instant::ZERO);
        assert_eq!(p.snapshot(Instant::ZERO).stall_ns(), None);
        p.set_params(
            LinkParams {
                rate_bytes_ps: 12,
                ..fast
            },
            Instant::ZERO,
        );
        let s = p.snapshot(Instant::from_millis(1_000));
        assert!(
            s.stall_ns().unwrap() > 100 * NS_PER_SEC,
            "{:?}",
            s.wire_departs
        );
        p.set_params(fast, Instant::from_millis(1_000));
        assert_eq!(p.snapshot(Instant::from_millis(1_000)).stall_ns(), None);
    }

    #[test]
    fn set_params_keeps_every_frame() {
        let mut p = path(LinkParams {
            rate_bytes_ps: 1_000_000,
            delay_ns: NS_PER_MS,
            ..LinkParams::default()
        });
        for i in 0..50 {
            p.ingress(pkt(i, 1000), Instant::ZERO);
        }
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        p.poll(Instant::from_micros(5_500), &mut out, &mut freed);
        let before = out.len() as u64;
        p.set_params(
            LinkParams {
                rate_bytes_ps: 10_000_000,
                delay_ns: 0,
                tx_ring: 2,
                bql: false,
                rx_usecs: 100,
                rx_frames: 8,
                tx_usecs: 30,
                tx_frames: 3,
                ..LinkParams::default()
            },
            Instant::from_micros(5_500),
        );
        assert_conserved(&p);
        let rest = drain(&mut p);
        assert_eq!(before + rest.len() as u64, 50);
        let mut ids: Vec<u64> = out.iter().map(|p| p.meta.id).collect();
        ids.extend(rest.iter().map(|(id, _)| *id));
        assert_eq!(ids, (0..50).collect::<Vec<_>>(), "FIFO order kept");
    }

    #[test]
    fn replace_qdisc_moves_frames_and_counts_refusals() {
        let mut p = path(LinkParams {
            rate_bytes_ps: 1_000_000,
            bql: false,
            tx_ring: 2,
            ..LinkParams::default()
        });
        for i in 0..10 {
            p.ingress(pkt(i, 1000), Instant::ZERO);
        }
        // Two on the ring, one requeued at the bypass, seven in the pfifo.
        assert_eq!(
            (p.qdisc().qlen(), p.snapshot(Instant::ZERO).requeued),
            (7, 1)
        );
        let old = p.replace_qdisc(fifo(5), Instant::from_micros(10));
        assert_eq!(old.qlen(), 0);
        assert_eq!(p.qdisc().qlen(), 5);
        assert_eq!(p.counters().drops[DropReason::QueueFull.index()], 3);
        assert_conserved(&p);
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        p.poll(Instant::from_micros(10), &mut out, &mut freed);
        assert_eq!(freed.len(), 3, "refused frames are handed back");
        let ids: Vec<u64> = drain(&mut p).into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, vec![0, 1, 2, 3, 4, 5, 6]);
        let snap = p.snapshot(Instant::from_millis(20));
        assert_eq!(snap.drops_by_reason.get("queue_full"), Some(&3));
        assert!(serde_json::to_string(&snap).is_ok());
    }

    #[test]
    fn edit_qdisc_counts_drops_of_a_lowered_limit() {
        let mut p = path(LinkParams {
            rate_bytes_ps: 1_000,
            tx_ring: 1,
            bql: false,
            ..LinkParams::default()
        });
        for i in 0..10 {
            p.ingress(pkt(i, 100), Instant::ZERO);
        }
        let r = p.edit_qdisc(Instant::ZERO, |q, now, drops| {
            let limit = crate::qdisc::fifo::FifoOptions { limit: 4 };
            q.change(&crate::qdisc::QdiscOptions::Fifo(limit), now, drops)
        });
        assert!(r.is_ok());
        // One on the ring, one requeued, eight in the pfifo: four dropped.
        assert_eq!(p.snapshot(Instant::ZERO).requeued, 1);
        assert_eq!(p.counters().total_drops(), 4);
        assert_conserved(&p);
    }

    /// The fuzz finding "a failed command ticks a throttled TBF's
    /// overlimits" (docs/fuzzing.md): neither a failed edit nor a read runs
    /// the qdisc, so a throttled TBF counts no overlimit for them; a
    /// successful edit runs it once, and then it does.
    #[test]
    fn a_failed_edit_or_a_read_does_not_run_a_throttled_qdisc() {
        use crate::qdisc::options::{QdiscOptions, RateSpec};
        use crate::qdisc::tbf::{Tbf, TbfOptions};
        // tbf rate 8kbit burst 1600b limit 10000b on a fast link: the
        // first frame takes the bucket, the rest wait for tokens.
        let opts = TbfOptions {
            rate: RateSpec::new(1_000),
            limit: 10_000,
            burst: Some(1_600),
            ..TbfOptions::default()
        };
        let tbf = Tbf::build(QdiscCtx::default(), &QdiscOptions::Tbf(opts)).unwrap();
        let mut p = Path::new(LinkParams::default(), tree(Box::new(tbf)));
        for i in 0..5 {
            p.ingress(pkt(i, 1000), Instant::ZERO);
        }
        let t = Instant::from_millis(1);
        let overlimits = |p: &mut Path| p.inspect_qdisc(t, |q, t| q.dump(t).stats.overlimits);
        let before = overlimits(&mut p);
        assert!(before > 0, "the TBF is throttled");
        assert_eq!(overlimits(&mut p), before, "a read ran the qdisc");
        let failed: Result<(), &str> = p.edit_qdisc(t, |_, _, _| Err("refused"));
        assert!(failed.is_err());
        assert_eq!(overlimits(&mut p), before, "a failed edit ran the qdisc");
        let done: Result<(), &str> = p.edit_qdisc(t, |_, _, _| Ok(()));
        assert!(done.is_ok());
        assert_eq!(overlimits(&mut p), before + 1, "a successful edit runs it");
        assert_conserved(&p);
    }

    #[test]
    fn poll_going_back_in_time_is_ignored() {
        let mut p = path(LinkParams::default());
        p.ingress(pkt(1, 1514), Instant::from_millis(10));
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        p.poll(Instant::from_millis(1), &mut out, &mut freed);
        p.ingress(pkt(2, 1514), Instant::from_millis(2));
        assert!(p.poll_at().unwrap() >= Instant::from_millis(10));
        assert_eq!(drain(&mut p).len(), 2);
    }

    /// Random loss of `percent` (no correlation) from generator `seed`.
    fn random_loss(percent: f64, seed: u64) -> Impairments {
        Impairments {
            seed,
            loss: Loss::Random {
                percent,
                correlation: 0.0,
            },
            ..Impairments::default()
        }
    }

    /// netem's `delay 10ms 5ms distribution normal seed 1`, with `reorder`.
    fn normal_jitter(reorder: Option<Reorder>) -> Impairments {
        Impairments {
            seed: 1,
            delay_ns: 10 * NS_PER_MS,
            jitter_ns: 5 * NS_PER_MS,
            distribution: Distribution::Normal,
            reorder,
            ..Impairments::default()
        }
    }

    /// Frames every `gap_ns` through a path (polled at every event), as
    /// (id, delivery time).
    fn feed(p: &mut Path, n: u64, gap_ns: u64, len: u32) -> Vec<(u64, Instant)> {
        let (mut out, mut freed, mut got) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..n {
            let t = Instant::from_nanos(i * gap_ns);
            while let Some(due) = p.poll_at().filter(|d| *d <= t) {
                p.poll(due, &mut out, &mut freed);
                got.extend(out.drain(..).map(|pk: Packet| (pk.meta.id, due)));
            }
            p.ingress(pkt(i, len), t);
            assert_conserved(p);
        }
        got.extend(drain(p));
        got
    }

    #[test]
    fn wire_loss_is_a_counted_drop_after_the_tx_completion() {
        let mut p = path(LinkParams {
            rate_bytes_ps: 12_500_000,
            ..LinkParams::default()
        });
        p.set_impairments(random_loss(30.0, 99), Instant::ZERO)
            .unwrap();
        let got = feed(&mut p, 2_000, 200_000, 1000);
        let c = p.counters().clone();
        let lost = c.drops[DropReason::WireLoss.index()];
        assert_eq!(c.total_drops(), lost);
        assert!((500..700).contains(&lost), "{lost}");
        assert_eq!(got.len() as u64 + lost, 2_000);
        // The sender saw every frame completed: the ring is empty, the
        // qdisc sent them all.
        let s = p.snapshot(Instant::from_millis(1_000));
        assert_eq!((s.ring_used, s.held), (0, 0));
        assert_eq!(s.qdisc.stats.packets, 2_000);
        assert_eq!(s.drops_by_reason.get("wire_loss"), Some(&lost));
        assert_eq!(s.seed, 99);
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"seed\":99") && json.contains("\"duplicated\":0"));
        // Lost frames are handed back as freed buffers.
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        let mut q = path(LinkParams::default());
        q.set_impairments(random_loss(100.0, 0), Instant::ZERO)
            .unwrap();
        q.ingress(pkt(0, 100), Instant::ZERO);
        q.poll(Instant::from_millis(1), &mut out, &mut freed);
        assert_eq!((out.len(), freed.len()), (0, 1));
    }

    #[test]
    fn jitter_never_reorders_unless_allowed() {
        let params = LinkParams {
            rate_bytes_ps: 125_000_000,
            delay_ns: NS_PER_MS,
            ..LinkParams::default()
        };
        let mut p = path(params);
        p.set_impairments(normal_jitter(None), Instant::ZERO)
            .unwrap();
        let got = feed(&mut p, 3_000, 100_000, 1000);
        let ids: Vec<u64> = got.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, (0..3_000).collect::<Vec<_>>(), "FIFO by default");
        // Latency: 1 ms link + 10 ms netem + 8 us wire, at least.
        let latency = |(id, t): &(u64, Instant)| t.nanos() - id * 100_000;
        assert!(got.iter().all(|g| latency(g) >= NS_PER_MS + 8_000));
        let mean = got.iter().map(latency).sum::<u64>() as f64 / 3_000.0;
        assert!(mean > 11.0e6, "{mean}");

        let mut p = path(params);
        let reorder = Reorder {
            percent: 0.0,
            correlation: 0.0,
            gap: 1,
        };
        p.set_impairments(normal_jitter(Some(reorder)), Instant::ZERO)
            .unwrap();
        let got = feed(&mut p, 3_000, 100_000, 1000);
        let overtaken = got.windows(2).filter(|w| w[1].0 < w[0].0).count();
        assert!(overtaken > 100, "{overtaken}");
        assert!(
            got.windows(2).all(|w| w[0].1 <= w[1].1),
            "delivered in time order"
        );
        let mut ids: Vec<u64> = got.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..3_000).collect::<Vec<_>>());
        // Latency is delay + jitter exactly (no FIFO push-back).
        let (m, _) = mean_sd(got.iter().map(latency));
        assert!((m - 11.008e6).abs() < 0.2e6, "{m}");
    }

    fn mean_sd(v: impl Iterator<Item = u64>) -> (f64, f64) {
        let v: Vec<f64> = v.map(|x| x as f64).collect();
        let m = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64;
        (m, var.sqrt())
    }

    #[test]
    fn conservation_check_accepts_balanced_counters_and_names_a_gap() {
        let mut c = PathCounters {
            frames_in: 5,
            duplicated: 1,
            frames_out: 3,
            ..PathCounters::default()
        };
        c.drops[0] = 2;
        assert_eq!(c.check_conservation(1), Ok(()));
        let e = c.check_conservation(0).unwrap_err();
        assert!(e.contains("= 6") && e.contains("= 5"), "{e}");
        // Counters near u64::MAX do not overflow the sums.
        c.frames_in = u64::MAX;
        assert!(c.check_conservation(u64::MAX).is_err());
    }

    #[test]
    fn duplicates_keep_conservation() {
        let mut p = path(LinkParams {
            rate_bytes_ps: 12_500_000,
            delay_ns: 2 * NS_PER_MS,
            ..LinkParams::default()
        });
        let imp = Impairments {
            duplicate: 20.0,
            corrupt: 1.0,
            ..random_loss(5.0, 5)
        };
        p.set_impairments(imp, Instant::ZERO).unwrap();
        let got = feed(&mut p, 5_000, 100_000, 1000);
        let c = p.counters();
        assert!((850..1_150).contains(&c.duplicated), "{}", c.duplicated);
        assert_eq!(c.frames_in + c.duplicated, c.frames_out + c.total_drops());
        assert_eq!(got.len() as u64, c.frames_out);
        assert!(c.frames_out > c.frames_in, "more out than in: {c:?}");
        // A duplicate arrives with its original, in order.
        assert!(got.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_eq!(c.corrupted, 0, "test frames carry no payload bytes");
    }

    #[test]
    fn schedule_rate_and_delay_through_the_path() {
        let mut p = path(LinkParams {
            rate_bytes_ps: 125_000_000,
            delay_ns: 3 * NS_PER_MS,
            bql: false,
            ..LinkParams::default()
        });
        let schedule =
            Schedule::parse_native("0 1mbit\n15ms 100kbit delay 20ms\nrepeat 1s").unwrap();
        let shape = LinkShape {
            schedule: Some(schedule),
            ..LinkShape::default()
        };
        p.set_shape(shape.clone(), Instant::ZERO).unwrap();
        assert_eq!(p.shape(), &shape);
        for i in 0..3 {
            p.ingress(pkt(i, 1250), Instant::ZERO);
        }
        let times: Vec<u64> = drain(&mut p)
            .iter()
            .map(|(_, t)| t.nanos() / NS_PER_MS)
            .collect();
        // Departures at 10, 65, 165 ms; the link's 3 ms before the step,
        // the schedule's 20 ms after it.
        assert_eq!(times, vec![13, 85, 185]);

        // A mahimahi trace gates departures; impairments keep it running.
        let trace = Schedule::parse_mahimahi("2\n4\n").unwrap();
        p.set_shape(
            LinkShape {
                schedule: Some(trace),
                ..LinkShape::default()
            },
            Instant::from_millis(200),
        )
        .unwrap();
        p.set_impairments(
            Impairments {
                delay_ns: NS_PER_MS,
                ..Impairments::default()
            },
            Instant::from_millis(200),
        )
        .unwrap();
        for i in 3..6 {
            p.ingress(pkt(i, 1514), Instant::from_millis(200));
        }
        let times: Vec<u64> = drain(&mut p)
            .iter()
            .map(|(_, t)| t.nanos() / NS_PER_MS)
            .collect();
        assert_eq!(times, vec![206, 208, 210]);
    }

    /// Changing impairments keeps the running trace's grid; a new trace
    /// starts when installed.
    #[test]
    fn set_impairments_keeps_the_running_schedule() {
        let mut p = path(LinkParams::default());
        let trace = || Schedule::parse_mahimahi("2\n4\n").unwrap();
        let shape = LinkShape {
            schedule: Some(trace()),
            ..LinkShape::default()
        };
        p.set_shape(shape, Instant::ZERO).unwrap();
        p.set_impairments(
            Impairments {
                seed: 3,
                ..Impairments::default()
            },
            Instant::from_millis(5),
        )
        .unwrap();
        p.ingress(pkt(0, 1514), Instant::from_millis(5));
        assert_eq!(drain(&mut p), vec![(0, Instant::from_millis(6))]);
        p.set_shape(
            LinkShape {
                schedule: Some(Schedule::parse_mahimahi("2\n5\n").unwrap()),
                ..p.shape().clone()
            },
            Instant::from_millis(10),
        )
        .unwrap();
        p.ingress(pkt(1, 1514), Instant::from_millis(10));
        assert_eq!(drain(&mut p), vec![(1, Instant::from_millis(12))]);
        assert_eq!(p.snapshot(Instant::from_millis(20)).seed, 3);
    }

    #[test]
    fn atm_framing_through_the_path_and_invalid_shapes_change_nothing() {
        let mut p = path(LinkParams {
            rate_bytes_ps: 1_696_000,
            ..LinkParams::default()
        });
        let shape = LinkShape {
            framing: crate::link::Framing {
                linklayer: crate::units::LinkLayer::Atm,
                ..crate::link::Framing::default()
            },
            ..LinkShape::default()
        };
        p.set_shape(shape.clone(), Instant::ZERO).unwrap();
        p.ingress(pkt(0, 1514), Instant::ZERO);
        assert_eq!(drain(&mut p), vec![(0, Instant::from_millis(1))]);
        let bad = LinkShape {
            impairments: Impairments {
                corrupt: -1.0,
                ..Impairments::default()
            },
            ..LinkShape::default()
        };
        let e = p.set_shape(bad, Instant::from_millis(2)).unwrap_err();
        assert_eq!(e.field, "corrupt");
        let e = p
            .set_impairments(
                Impairments {
                    loss: crate::link::impair::Loss::Random {
                        percent: 200.0,
                        correlation: 0.0,
                    },
                    ..Impairments::default()
                },
                Instant::from_millis(2),
            )
            .unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.value.as_str()),
            ("loss.percent", "200")
        );
        assert_eq!(p.shape(), &shape);
    }

    /// mq over two pfifo children (limit `limit`), each run on its own TX
    /// queue.
    fn mq2(limit: u64) -> QdiscTree {
        let mq = crate::qdisc::mq::Mq::new(QdiscCtx::default(), 2, &mut |c| {
            Box::new(Fifo::with_limit(FifoKind::Pfifo, c, limit)) as Box<dyn Qdisc>
        });
        tree(Box::new(mq.unwrap()))
    }

    /// A frame of TX queue `queue`.
    fn on_queue(id: u64, len: u32, queue: u16) -> Packet {
        let mut p = pkt(id, len);
        p.meta.queue_mapping = queue;
        p
    }

    /// Per-queue rings under mq (include/linux/netdevice.h: each
    /// `netdev_queue` its own ring and `dql`; net/sched/sch_generic.c
    /// `dequeue_skb` checks the qdisc's own `dev_queue`): ten frames on
    /// queue 0 fill its ring of 2 and stop it, but queue 1's three frames
    /// still go to ring 1, and the wire alternates between the rings.
    /// 1000 B at 1 MB/s is 1 ms; completions are reaped at departure.
    /// A0 leaves at 1 ms, then round robin: B0 2, A1 3, B1 4, A2 5, B2 6,
    /// then A3..A9 one a ms. With one shared ring B0 waited behind A1
    /// (3 ms).
    #[test]
    fn mq_queues_have_rings_of_their_own() {
        let params = LinkParams {
            rate_bytes_ps: 1_000_000,
            tx_ring: 2,
            bql: false,
            tx_queues: 2,
            ..LinkParams::default()
        };
        let mut p = Path::new(params, mq2(100));
        for id in 0..10 {
            p.ingress(on_queue(id, 1000, 0), Instant::ZERO);
        }
        for id in 100..103 {
            p.ingress(on_queue(id, 1000, 1), Instant::ZERO);
        }
        let s = p.snapshot(Instant::ZERO);
        let used: Vec<u32> = s.tx_queues.iter().map(|q| q.ring_used).collect();
        assert_eq!(used, vec![2, 2], "queue 1 posts while queue 0 is stopped");
        assert_eq!((s.ring_used, s.ring_size), (4, 4));
        assert_eq!(s.qdisc.children[0].stats.qlen, 8);
        assert_eq!(s.qdisc.children[1].stats.qlen, 1);
        let got: Vec<(u64, u64)> = drain(&mut p)
            .into_iter()
            .map(|(id, t)| (id, t.nanos() / NS_PER_MS))
            .collect();
        let mut want = vec![(0, 1), (100, 2), (1, 3), (101, 4), (2, 5), (102, 6)];
        want.extend((3..10).map(|id| (id, id + 4)));
        assert_eq!(got, want);
    }

    /// Each queue's BQL is its own: a completion of queue 0 moves only
    /// queue 0's DQL, the snapshot lists each queue's limit and in-flight
    /// bytes (their sums in `bql_*`), and pinning queue 1's limit leaves
    /// queue 0's alone.
    #[test]
    fn mq_queues_have_a_dql_each() {
        let params = LinkParams {
            rate_bytes_ps: 1_000_000,
            bulk_dequeue: false,
            tx_queues: 2,
            ..LinkParams::default()
        };
        let mut p = Path::new(params, mq2(100));
        assert!(p.set_queue_bql_bounds(1, 3000, 3000));
        assert!(!p.set_queue_bql_bounds(2, 3000, 3000), "no queue 2");
        for id in 0..3 {
            p.ingress(on_queue(id, 1000, 0), Instant::ZERO);
            p.ingress(on_queue(100 + id, 1000, 1), Instant::ZERO);
        }
        // Limit 0: each queue stops after its first frame (dql_queued
        // puts it over), whatever the other does.
        let bql = |p: &Path, t: u64| {
            let s = p.snapshot(Instant::from_millis(t));
            let q: Vec<(Option<u32>, Option<u32>)> = s
                .tx_queues
                .iter()
                .map(|q| (q.bql_limit, q.bql_inflight))
                .collect();
            (q, s.bql_limit, s.bql_inflight)
        };
        assert_eq!(
            bql(&p, 0),
            (
                vec![(Some(0), Some(1000)), (Some(0), Some(1000))],
                Some(0),
                Some(2000)
            )
        );
        // A0 leaves at 1 ms: queue 0 was starved (over its limit and
        // empty): limit 0 + 1000 completed (dql_completed). Queue 1 is
        // untouched: B0 is on the wire.
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        p.poll(Instant::from_millis(1), &mut out, &mut freed);
        let (q, _, _) = bql(&p, 1);
        assert_eq!(q[0].0, Some(1000));
        assert_eq!(q[1], (Some(0), Some(1000)));
        // B0 leaves at 2 ms: queue 1 takes its pinned 3000.
        p.poll(Instant::from_millis(2), &mut out, &mut freed);
        let (q, _, _) = bql(&p, 2);
        assert_eq!(q[1].0, Some(3000));
        assert_eq!(q[0].0, Some(1000));
        drain(&mut p);
        assert_eq!(p.counters().frames_out, 6);
    }

    /// Switching the root between mq and a single qdisc rebuilds the rings
    /// without losing the frames in flight: the new rings count them.
    #[test]
    fn rings_follow_the_root_between_mq_and_one_queue() {
        let params = LinkParams {
            rate_bytes_ps: 1_000_000,
            tx_ring: 4,
            bql: false,
            tx_queues: 2,
            ..LinkParams::default()
        };
        let mut p = Path::new(params, fifo(100));
        assert_eq!(p.snapshot(Instant::ZERO).tx_queues.len(), 1);
        p.replace_qdisc(mq2(100), Instant::ZERO);
        for id in 0..6 {
            p.ingress(on_queue(id, 1000, (id % 2) as u16), Instant::ZERO);
        }
        let s = p.snapshot(Instant::ZERO);
        assert_eq!(s.tx_queues.len(), 2);
        assert_eq!((s.tx_queues[0].ring_used, s.tx_queues[1].ring_used), (3, 3));
        p.replace_qdisc(fifo(100), Instant::from_micros(500));
        let s = p.snapshot(Instant::from_micros(500));
        assert_eq!(s.tx_queues.len(), 1);
        assert_eq!(
            (s.ring_used, s.ring_size),
            (6, 4),
            "in flight, past the new size"
        );
        drain(&mut p);
        assert_conserved(&p);
        assert_eq!(p.snapshot(Instant::from_millis(10)).ring_used, 0);
        assert_eq!(p.counters().frames_out, 6);
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        #[derive(Clone, Debug)]
        enum Op {
            Ingress { len: u32, dt: u64, queue: u16 },
            Advance { dt: u64 },
            SetParams(LinkParams),
            Replace { limit: u64, kind: u8 },
            Shape(Box<LinkShape>),
        }

        /// Random impairments, schedule and framing (all valid).
        fn shape() -> impl Strategy<Value = LinkShape> {
            (
                (0u32..30, 0u32..30, 0u32..5),
                (0u64..3_000, 1u64..3_000, any::<bool>(), any::<u64>()),
                prop_oneof![
                    Just(None),
                    (1u64..20, 1u64..5).prop_map(|(a, b)| Some(format!("{a}\n{}\n", a + b))),
                    (1u64..50_000_000, 1u64..50_000_000, 1u64..2_000).prop_map(|(r1, r2, d)| Some(
                        format!(
                            "0 {}bps\n{d}us down\n{}us {}bps delay {d}us\nrepeat 5ms",
                            r1,
                            d + 1,
                            r2
                        )
                    )),
                ],
                (-30i32..60, 0u32..100, any::<bool>()),
            )
                .prop_map(
                    |(
                        (loss, dup, corrupt),
                        (delay, jitter, reorder, seed),
                        sched,
                        (oh, mpu, atm),
                    )| {
                        // loss L% duplicate D% corrupt C% delay Tus Jus
                        // distribution pareto seed S [reorder 10%]
                        let impairments = Impairments {
                            seed,
                            delay_ns: delay * NS_PER_US,
                            jitter_ns: jitter * NS_PER_US,
                            distribution: Distribution::Pareto,
                            loss: Loss::Random {
                                percent: f64::from(loss),
                                correlation: 0.0,
                            },
                            duplicate: f64::from(dup),
                            corrupt: f64::from(corrupt),
                            reorder: (reorder && delay > 0).then_some(Reorder {
                                percent: 10.0,
                                correlation: 0.0,
                                gap: 1,
                            }),
                            ..Impairments::default()
                        };
                        let schedule = sched.map(|text| {
                            if text.contains("bps") {
                                Schedule::parse_native(&text).unwrap()
                            } else {
                                Schedule::parse_mahimahi(&text).unwrap()
                            }
                        });
                        LinkShape {
                            impairments,
                            schedule,
                            framing: crate::link::Framing {
                                overhead: oh,
                                mpu,
                                linklayer: if atm {
                                    crate::units::LinkLayer::Atm
                                } else {
                                    crate::units::LinkLayer::Ethernet
                                },
                            },
                        }
                    },
                )
        }

        fn params() -> impl Strategy<Value = LinkParams> {
            (
                prop_oneof![Just(0u64), 1_000u64..200_000_000],
                0u32..40,
                0u64..3_000_000,
                0u32..40,
                any::<bool>(),
                (0u32..300, 0u32..6),
                (0u32..300, 0u32..6),
                any::<bool>(),
                (0u32..45, prop_oneof![Just(0u64), 1u64..20_000]),
            )
                .prop_map(
                    |(rate, overhead, delay, ring, bql, tx, rx, bulk, driver)| {
                        LinkParams {
                            rate_bytes_ps: rate,
                            overhead,
                            delay_ns: delay,
                            tx_ring: ring,
                            bql,
                            // usecs 0 with frames > 1 never reaps a lone completion
                            // (as on real hardware); keep a timer in that case.
                            tx_usecs: if tx.1 > 1 { tx.0.max(1) } else { tx.0 },
                            tx_frames: tx.1,
                            rx_usecs: if rx.1 > 1 { rx.0.max(1) } else { rx.0 },
                            rx_frames: rx.1,
                            bulk_dequeue: bulk,
                            // A threshold past the ring (ethtool -G shrank it)
                            // stops at the ring's size.
                            tx_stop_threshold: driver.0,
                            tx_post_ns: driver.1,
                            ..LinkParams::default()
                        }
                    },
                )
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                6 => (1u32..3000, 0u64..200_000, 0u16..4)
                    .prop_map(|(len, dt, queue)| Op::Ingress { len, dt, queue }),
                2 => (0u64..2_000_000).prop_map(|dt| Op::Advance { dt }),
                1 => params().prop_map(Op::SetParams),
                1 => (0u64..40, 0u8..3).prop_map(|(limit, kind)| Op::Replace { limit, kind }),
                1 => shape().prop_map(|s| Op::Shape(Box::new(s))),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]

            /// Conservation after every step; a path polled at every event
            /// and one polled only at the operations agree; poll_at is never
            /// in the past; everything drains in the end.
            #[test]
            fn conservation_and_late_polls(
                start in params(),
                ops in proptest::collection::vec(op(), 1..120),
            ) {
                let mut exact = Path::new(start, fifo(30));
                let mut late = Path::new(start, fifo(30));
                let (mut out, mut freed) = (Vec::new(), Vec::new());
                let mut out_ids = Vec::new();
                let mut now = Instant::ZERO;
                let mut id = 0;
                for op in ops {
                    let dt = match &op {
                        Op::Ingress { dt, .. } | Op::Advance { dt } => *dt,
                        _ => 0,
                    };
                    let target = now + dt;
                    while let Some(t) = exact.poll_at().filter(|t| *t <= target) {
                        prop_assert!(t >= now, "poll_at {t:?} before {now:?}");
                        exact.poll(t, &mut out, &mut freed);
                        now = t;
                        let c = exact.counters();
                        prop_assert_eq!(
                            c.frames_in + c.duplicated,
                            c.frames_out + c.total_drops() + exact.held()
                        );
                    }
                    now = target;
                    for p in [&mut exact, &mut late] {
                        p.poll(now, &mut out, &mut freed);
                        match &op {
                            Op::Ingress { len, queue, .. } => {
                                p.ingress(on_queue(id, *len, *queue), now);
                            }
                            Op::Advance { .. } => {}
                            Op::SetParams(params) => p.set_params(*params, now),
                            Op::Replace { limit, kind: 0 } => {
                                p.replace_qdisc(fifo(*limit), now);
                            }
                            Op::Replace { limit, kind: 1 } => {
                                p.replace_qdisc(super::paced(*limit * 10_000, true), now);
                            }
                            Op::Replace { limit, .. } => {
                                // mq: a ring per queue, rebuilt on the way
                                // in and out.
                                p.replace_qdisc(mq2(*limit), now);
                            }
                            Op::Shape(shape) => {
                                prop_assert!(p.set_shape((**shape).clone(), now).is_ok());
                            }
                        }
                        let c = p.counters();
                        prop_assert_eq!(
                            c.frames_in + c.duplicated,
                            c.frames_out + c.total_drops() + p.held()
                        );
                    }
                    if matches!(op, Op::Ingress { .. }) {
                        id += 1;
                    }
                    out_ids.extend(out.drain(..).map(|p: Packet| p.meta.id));
                    let (a, b) = (exact.snapshot(now), late.snapshot(now));
                    prop_assert_eq!(a.counters.frames_out, b.counters.frames_out);
                    prop_assert_eq!(a.counters.drops, b.counters.drops);
                    prop_assert_eq!((a.ring_used, a.on_wire, a.in_flight, a.rx_held),
                                    (b.ring_used, b.on_wire, b.in_flight, b.rx_held));
                    prop_assert_eq!(a.bql_limit, b.bql_limit);
                }
                // Let everything drain (with a timer-less TX coalescing rule
                // frames could wait forever, which the strategy avoids).
                for p in [&mut exact, &mut late] {
                    let mut guard = 0;
                    while let Some(t) = p.poll_at() {
                        p.poll(t, &mut out, &mut freed);
                        guard += 1;
                        prop_assert!(guard < 1_000_000);
                    }
                    prop_assert_eq!(p.held(), 0);
                    let c = p.counters();
                    prop_assert_eq!(c.frames_in + c.duplicated, c.frames_out + c.total_drops());
                }
                let total_freed = freed.len() as u64;
                prop_assert_eq!(
                    total_freed,
                    exact.counters().total_drops() + late.counters().total_drops()
                );
            }
        }
    }
}
