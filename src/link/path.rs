//! One direction of the emulated link: a qdisc in front of the TX ring
//! (+BQL), the serializer, TX completion coalescing, the propagation delay
//! line and RX coalescing. `Path` advances all stages together in time
//! order, so a completion at t1 that frees a ring slot lets the qdisc
//! dequeue at t1, however late the driver polls.
//!
//! The qdisc is run like the kernel's `__qdisc_run`/`qdisc_restart`: bypass
//! of an empty work-conserving qdisc (LINUX-TC.md 1.2), nothing dequeued
//! while the TX queue is stopped (ring full or BQL STACK_XOFF), bulk dequeue
//! bounded by `dql_avail` and the quota (1.3, 11.3), and requeue of a batch
//! remainder that did not fit in the ring.

use super::coalesce::Coalescer;
use super::delay::DelayLine;
use super::ring::{BulkBudget, TxRing, DEV_TX_WEIGHT};
use super::serializer::Serializer;
use super::LinkParams;
use crate::packet::{DropReason, Drops, Packet};
use crate::qdisc::{Qdisc, QdiscDump};
use crate::time::{earliest, Instant};
use std::collections::{BTreeMap, VecDeque};

/// Per-direction conservation counters: `frames_in = frames_out + drops + held`.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PathCounters {
    pub frames_in: u64,
    pub bytes_in: u64,
    pub frames_out: u64,
    pub bytes_out: u64,
    /// Indexed by `DropReason::index()`.
    pub drops: [u64; DropReason::ALL.len()],
}

impl PathCounters {
    /// All drops, whatever the reason.
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }
}

/// What a path looks like at one instant (for the TUI, the control socket
/// and reports).
#[derive(Clone, Debug, serde::Serialize)]
pub struct PathSnapshot {
    pub at: Instant,
    pub params: LinkParams,
    pub counters: PathCounters,
    /// Drops by `DropReason::name()`, only the non-zero ones.
    pub drops_by_reason: BTreeMap<&'static str, u64>,
    /// Frames inside the path (qdisc, requeued, ring, wire, delay, RX).
    pub held: u64,
    /// Frames put back by the driver (`NETDEV_TX_BUSY`) waiting to be resent,
    /// and how often that happened.
    pub requeued: u32,
    pub requeues: u64,
    /// TX ring: descriptors in use, of how many, and their bytes.
    pub ring_used: u32,
    pub ring_size: u32,
    pub ring_bytes: u64,
    /// BQL limit and in-flight bytes (None with BQL off).
    pub bql_limit: Option<u32>,
    pub bql_inflight: Option<u32>,
    /// Frames posted to the NIC and not yet departed.
    pub on_wire: u32,
    /// Frames in propagation.
    pub in_flight: u32,
    /// Frames held by RX coalescing.
    pub rx_held: u32,
    pub qdisc: QdiscDump,
}

pub struct Path {
    params: LinkParams,
    qdisc: Box<dyn Qdisc>,
    /// The kernel's `gso_skb` list: frames the driver refused, sent first.
    requeued: VecDeque<Packet>,
    requeues: u64,
    ring: TxRing,
    serializer: Serializer,
    /// Lengths of sent frames whose completions are not reaped yet.
    tx_done: Coalescer<u32>,
    delay: DelayLine,
    rx: Coalescer<Packet>,
    drops: Drops,
    /// Delivered and freed frames not yet handed out by `poll`.
    outbox: Vec<Packet>,
    freed: Vec<Packet>,
    batch: Vec<Packet>,
    counters: PathCounters,
    /// The time the path has advanced to.
    now: Instant,
    /// The qdisc may have something to dequeue now (else see `qdisc_wakeup`).
    qdisc_ready: bool,
    qdisc_wakeup: Option<Instant>,
}

/// Counts every frame in `drops` by reason and moves it to `freed`.
fn absorb(drops: &mut Drops, counters: &mut PathCounters, freed: &mut Vec<Packet>) {
    for (pkt, reason) in drops.drain() {
        counters.drops[reason.index()] += 1;
        freed.push(pkt);
    }
}

impl Path {
    pub fn new(params: LinkParams, qdisc: Box<dyn Qdisc>) -> Path {
        Path {
            params,
            qdisc,
            requeued: VecDeque::new(),
            requeues: 0,
            ring: TxRing::new(params.tx_ring, params.bql, Instant::ZERO),
            serializer: Serializer::new(params.rate_bytes_ps, params.overhead),
            tx_done: Coalescer::new(params.tx_usecs, params.tx_frames),
            delay: DelayLine::new(params.delay_ns),
            rx: Coalescer::new(params.rx_usecs, params.rx_frames),
            drops: Drops::new(),
            outbox: Vec::new(),
            freed: Vec::new(),
            batch: Vec::with_capacity(DEV_TX_WEIGHT as usize + 1),
            counters: PathCounters::default(),
            now: Instant::ZERO,
            qdisc_ready: false,
            qdisc_wakeup: None,
        }
    }

    pub fn params(&self) -> &LinkParams {
        &self.params
    }

    pub fn qdisc(&self) -> &dyn Qdisc {
        &*self.qdisc
    }

    pub fn counters(&self) -> &PathCounters {
        &self.counters
    }

    /// Frames inside the path: `frames_in - frames_out - drops`.
    pub fn held(&self) -> u64 {
        self.qdisc.qlen() as u64
            + self.requeued.len() as u64
            + self.serializer.len() as u64
            + self.delay.len() as u64
            + self.rx.len() as u64
    }

    /// A frame arrives from the sending side at `now`.
    pub fn ingress(&mut self, pkt: Packet, now: Instant) {
        self.advance(now);
        let t = self.now;
        self.counters.frames_in += 1;
        self.counters.bytes_in += pkt.len as u64;
        if self.requeued.is_empty()
            && self.qdisc.can_bypass()
            && self.qdisc.qlen() == 0
            && self.ring.can_post()
        {
            self.qdisc.count_bypass(pkt.len);
            self.ring.post(pkt.len);
            self.serializer.post(pkt, t);
        } else {
            self.qdisc.enqueue(pkt, t, &mut self.drops);
            absorb(&mut self.drops, &mut self.counters, &mut self.freed);
            self.qdisc_ready = true;
        }
        self.advance(t);
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
        out.append(&mut self.outbox);
        freed.append(&mut self.freed);
    }

    /// The next time `poll` has something to do.
    pub fn poll_at(&self) -> Option<Instant> {
        if !self.outbox.is_empty() || !self.freed.is_empty() {
            return Some(self.now);
        }
        self.next_event()
    }

    /// Changes rate, overhead, delay, ring, BQL and coalescing at `now`
    /// without losing frames: the frame on the wire keeps its departure,
    /// frames in propagation keep their arrival, held completions and RX
    /// frames fall under the new coalescing rule.
    pub fn set_params(&mut self, params: LinkParams, now: Instant) {
        self.advance(now);
        let t = self.now;
        self.ring.reconfigure(params.tx_ring, params.bql, t);
        self.serializer
            .set_rate(params.rate_bytes_ps, params.overhead);
        self.delay.set_delay(params.delay_ns);
        self.tx_done.set(params.tx_usecs, params.tx_frames);
        self.rx.set(params.rx_usecs, params.rx_frames);
        self.params = params;
        self.qdisc_ready = true;
        self.advance(t);
    }

    /// Swaps the qdisc at `now`: the frames the old one holds (and requeued
    /// ones) are enqueued into the new one, which may refuse some (counted as
    /// drops). Returns the old, empty qdisc.
    pub fn replace_qdisc(&mut self, new: Box<dyn Qdisc>, now: Instant) -> Box<dyn Qdisc> {
        self.advance(now);
        let t = self.now;
        let mut old = std::mem::replace(&mut self.qdisc, new);
        let moved = self.requeued.drain(..).chain(old.drain_all());
        for pkt in moved {
            self.qdisc.enqueue(pkt, t, &mut self.drops);
        }
        absorb(&mut self.drops, &mut self.counters, &mut self.freed);
        self.qdisc_ready = true;
        self.advance(t);
        old
    }

    /// Runs `edit` on the qdisc at `now` (tc change, class and filter
    /// edits); whatever it drops is counted, and the qdisc is run afterwards.
    pub fn edit_qdisc<R>(
        &mut self,
        now: Instant,
        edit: impl FnOnce(&mut dyn Qdisc, Instant, &mut Drops) -> R,
    ) -> R {
        self.advance(now);
        let t = self.now;
        let r = edit(&mut *self.qdisc, t, &mut self.drops);
        absorb(&mut self.drops, &mut self.counters, &mut self.freed);
        self.qdisc_ready = true;
        self.advance(t);
        r
    }

    pub fn snapshot(&self, now: Instant) -> PathSnapshot {
        let drops_by_reason = DropReason::ALL
            .iter()
            .map(|r| (r.name(), self.counters.drops[r.index()]))
            .filter(|(_, n)| *n > 0)
            .collect();
        let dql = self.ring.dql();
        PathSnapshot {
            at: now,
            params: self.params,
            counters: self.counters.clone(),
            drops_by_reason,
            held: self.held(),
            requeued: self.requeued.len() as u32,
            requeues: self.requeues,
            ring_used: self.ring.busy(),
            ring_size: self.ring.size(),
            ring_bytes: self.ring.busy_bytes(),
            bql_limit: dql.map(|d| d.limit()),
            bql_inflight: dql.map(|d| d.inflight()),
            on_wire: self.serializer.len() as u32,
            in_flight: self.delay.len() as u32,
            rx_held: self.rx.len() as u32,
            qdisc: self.qdisc.dump(now),
        }
    }

    /// When the qdisc should be run: now if it may have something and the
    /// TX queue is not stopped, else its wake-up.
    fn qdisc_event(&self) -> Option<Instant> {
        if !self.ring.can_post() {
            return None;
        }
        if !self.requeued.is_empty() || (self.qdisc_ready && self.qdisc.qlen() > 0) {
            return Some(self.now);
        }
        if self.qdisc.qlen() > 0 {
            self.qdisc_wakeup
        } else {
            None
        }
    }

    fn next_event(&self) -> Option<Instant> {
        [
            self.serializer.next_event(),
            self.tx_done.next_event(),
            self.delay.next_event(),
            self.rx.next_event(),
            self.qdisc_event(),
        ]
        .into_iter()
        .fold(None, earliest)
    }

    /// Processes every event up to `now` in time order.
    fn advance(&mut self, now: Instant) {
        let now = now.max(self.now);
        while let Some(ev) = self.next_event().filter(|t| *t <= now) {
            self.now = ev.max(self.now);
            self.step();
        }
        self.now = now;
    }

    /// Runs every stage whose event is due at `self.now`, in pipeline order.
    fn step(&mut self) {
        let t = self.now;
        while let Some((pkt, departed)) = self.serializer.pop(t) {
            self.tx_done.push(pkt.len, departed);
            self.delay.push(pkt, departed);
        }
        let (mut frames, mut bytes) = (0u32, 0u64);
        if let Some(at) = self.tx_done.fire(t, |len| {
            frames += 1;
            bytes += len as u64;
        }) {
            self.ring.reap(frames, bytes, at.max(t));
        }
        if self.qdisc_event().is_some_and(|e| e <= t) {
            self.run_qdisc(t);
        }
        while let Some((pkt, arrived)) = self.delay.pop(t) {
            self.rx.push(pkt, arrived);
        }
        let (outbox, counters) = (&mut self.outbox, &mut self.counters);
        self.rx.fire(t, |pkt| {
            counters.frames_out += 1;
            counters.bytes_out += pkt.len as u64;
            outbox.push(pkt);
        });
    }

    /// `__qdisc_run` at `t`: `qdisc_restart` until the TX queue stops or the
    /// qdisc has nothing to give.
    fn run_qdisc(&mut self, t: Instant) {
        self.qdisc_ready = true;
        self.qdisc_wakeup = None;
        let mut quota = DEV_TX_WEIGHT;
        let mut batch = std::mem::take(&mut self.batch);
        while self.ring.can_post() {
            if let Some(pkt) = self.requeued.pop_front() {
                batch.push(pkt);
            } else if let Some(first) = self.qdisc.dequeue(t, &mut self.drops) {
                let bulk = self.params.bulk_dequeue && self.ring.dql().is_some();
                let mut budget = BulkBudget::new(self.ring.dql_avail(), first.len, quota);
                batch.push(first);
                while bulk && budget.wants_more() {
                    let Some(pkt) = self.qdisc.dequeue(t, &mut self.drops) else {
                        break;
                    };
                    budget.take(pkt.len);
                    batch.push(pkt);
                }
            } else {
                self.qdisc_ready = false;
                self.qdisc_wakeup = self.qdisc.next_wakeup(t).filter(|w| *w > t);
                break;
            }
            quota = quota.saturating_sub(batch.len() as u32);
            if quota == 0 {
                // The softirq reschedules the run at once with a fresh quota.
                quota = DEV_TX_WEIGHT;
            }
            self.xmit(&mut batch, t);
        }
        self.batch = batch;
        absorb(&mut self.drops, &mut self.counters, &mut self.freed);
    }

    /// `dev_hard_start_xmit`: posts the batch until the ring is full; the
    /// driver refuses the rest (NETDEV_TX_BUSY) and it is requeued.
    fn xmit(&mut self, batch: &mut Vec<Packet>, t: Instant) {
        let mut refused = 0;
        for pkt in batch.drain(..) {
            if self.ring.post(pkt.len) {
                self.serializer.post(pkt, t);
            } else {
                self.requeued.insert(refused, pkt);
                refused += 1;
            }
        }
        self.requeues += refused as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::fifo::{Fifo, FifoKind};
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::QdiscCtx;
    use crate::time::{NS_PER_MS, NS_PER_US};

    fn fifo(limit: u64) -> Box<dyn Qdisc> {
        Box::new(Fifo::with_limit(
            FifoKind::Pfifo,
            QdiscCtx::default(),
            limit,
        ))
    }

    fn path(params: LinkParams) -> Path {
        Path::new(params, fifo(1000))
    }

    fn assert_conserved(p: &Path) {
        let c = p.counters();
        assert_eq!(
            c.frames_in,
            c.frames_out + c.total_drops() + p.held(),
            "conservation: {c:?} held {}",
            p.held()
        );
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
}
