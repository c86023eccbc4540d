//! The device's TX queues as the path runs them. Each queue (`TxQueue`, the
//! kernel's `struct netdev_queue`) has its ring with its DQL, the requeue
//! slot of its qdisc and the driver's doorbell, and its qdisc is run like
//! the kernel's `__qdisc_run`/`qdisc_restart`: bypass
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

use super::super::ring::{BulkBudget, TxRing, DEV_TX_WEIGHT};
use super::super::LinkParams;
use super::observer::{notify, PathEvent};
use super::Path;
use crate::packet::Packet;
use crate::qdisc::Qdisc;
use crate::time::Instant;
use std::collections::VecDeque;

/// One TX queue of the device (`struct netdev_queue`): its ring with its
/// DQL, the requeue slot of its qdisc (`gso_skb`) and whether that qdisc
/// may have something to dequeue.
pub(super) struct TxQueue {
    pub(super) ring: TxRing,
    /// The kernel's `gso_skb` list: frames the driver refused, sent first.
    pub(super) requeued: VecDeque<Packet>,
    /// The qdisc may have something to dequeue now (else see `wakeup`).
    pub(super) ready: bool,
    pub(super) wakeup: Option<Instant>,
    /// When the driver is done posting to this queue's ring (its last
    /// doorbell): posts to one queue follow each other (`HARD_TX_LOCK`).
    pub(super) driver_free: Instant,
}

impl TxQueue {
    pub(super) fn new(params: &LinkParams, now: Instant) -> TxQueue {
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
    pub(super) fn doorbell(&mut self, t: Instant, k: u64, post_ns: u64) -> Instant {
        let at = t.max(self.driver_free) + k.saturating_mul(post_ns);
        self.driver_free = at;
        at
    }
}

impl Path {
    /// Makes one TX queue per queue the qdisc runs separately (one per mq
    /// child, else one). When the count changes the rings are made afresh,
    /// each counting the frames of its queue still in flight (posted, or
    /// departed with the completion not reaped), and requeued frames move
    /// to their queue's slot.
    pub(super) fn sync_queues(&mut self) {
        let n = self.qdisc.tx_queue_count().max(1);
        if n == self.queues.len() {
            return;
        }
        let t = self.now;
        let requeued: Vec<(usize, Packet)> = self
            .queues
            .iter_mut()
            .enumerate()
            .flat_map(|(i, q)| q.requeued.drain(..).map(move |pkt| (i, pkt)))
            .collect();
        self.queues = (0..n).map(|_| TxQueue::new(&self.params, t)).collect();
        for (pkt, _) in self.serializer.queued() {
            let q = super::super::serializer::queue_of(pkt, n);
            self.queues[q].ring.adopt(pkt.len);
        }
        for ((mapping, len), _) in self.tx_done.queued() {
            self.queues[usize::from(*mapping) % n].ring.adopt(*len);
        }
        for (from, pkt) in requeued {
            let q = self.queue_of(&pkt);
            if q != from {
                self.qdisc.requeued_moved(from, q, pkt.len);
            }
            self.queues[q].requeued.push_back(pkt);
        }
        self.serializer.set_queues(n);
        self.reaped = vec![(0, 0); n];
    }

    /// When TX queue `i`'s qdisc should be run: now if it may have
    /// something and the queue is not stopped, else its wake-up.
    pub(super) fn queue_event(&self, i: usize) -> Option<Instant> {
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

    /// `__qdisc_run` of TX queue `i`'s qdisc at `t`: `qdisc_restart` until
    /// the queue stops or its qdisc has nothing to give.
    pub(super) fn run_queue(&mut self, i: usize, t: Instant) {
        self.queues[i].ready = true;
        self.queues[i].wakeup = None;
        let mut quota = DEV_TX_WEIGHT;
        let mut batch = std::mem::take(&mut self.batch);
        while self.queues[i].ring.can_post() {
            if let Some(pkt) = self.queues[i].requeued.pop_front() {
                self.qdisc.resent(i, pkt.len);
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
    /// A ring that refuses a frame refuses every later one of the batch
    /// (nothing frees a slot in between: `TxRing::post` fails only without
    /// one), so the frames it takes are the batch's head and stay in it
    /// until the doorbell.
    pub(super) fn xmit(&mut self, i: usize, batch: &mut Vec<Packet>, t: Instant) {
        self.counters.xmit_batches += 1;
        let ring = &mut self.queues[i].ring;
        let taken = batch.iter().take_while(|p| ring.post(p.len)).count();
        for (refused, pkt) in batch.drain(taken..).enumerate() {
            self.park(i, pkt, refused);
        }
        let at = self.queues[i].doorbell(t, taken as u64, self.params.tx_post_ns);
        for pkt in batch.drain(..) {
            self.serializer.post(pkt, at);
        }
    }

    /// `dev_requeue_skb`: parks a frame the driver refused at position `at`
    /// of the requeue slot, counted in the root's slot tally.
    pub(super) fn park(&mut self, i: usize, pkt: Packet, at: usize) {
        self.qdisc.requeued(i, pkt.len);
        self.queues[i].requeued.insert(at, pkt);
        self.requeues += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{assert_conserved, drain, fifo, mq2, on_queue, path};
    use super::super::Path;
    use crate::link::LinkParams;
    use crate::qdisc::testutil::pkt;
    use crate::time::{Instant, NS_PER_MS};

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

    /// Twenty 1514-byte frames mapped to `mapping` into a 1 Gbit/s path
    /// of `queues` TX queues with rings of 4, its default root (mq) and
    /// BQL pinned to 10 000 bytes on their queue, polled at the first
    /// completion: as in `bulk_batch_overrunning_the_ring_is_requeued`,
    /// the bulk batch then overruns the ring and 3 frames are requeued,
    /// 12 wait in the queue's qdisc. Returns the path and the poll's time.
    fn overrun_one_queue(queues: u16, mapping: u16) -> (Path, Instant) {
        use crate::qdisc::tree::{DevSpec, QdiscTree};
        let params = LinkParams {
            rate_bytes_ps: 125_000_000,
            tx_ring: 4,
            tx_queues: queues,
            ..LinkParams::default()
        };
        let dev = DevSpec {
            tx_queues: queues,
            ..DevSpec::new(crate::dir::Dir::LeftToRight, crate::qdisc::kinds::BUILTIN)
        };
        let mut p = Path::new(params, QdiscTree::new(dev).unwrap());
        let q = usize::from(mapping) % usize::from(queues);
        assert!(p.set_queue_bql_bounds(q, 10_000, 10_000));
        for id in 0..20 {
            p.ingress(on_queue(id, 1514, mapping), Instant::ZERO);
        }
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        let t1 = p.poll_at().unwrap();
        p.poll(t1, &mut out, &mut freed);
        (p, t1)
    }

    /// A requeued frame counts in the slot of its TX queue, which is its
    /// `queue_mapping` modulo the queue count, not the mapping itself (the
    /// top bits of its flow hash): mapped to 40 003, a frame is queue 1's
    /// of two, and mq's child and class of queue 1 (`1:2`) count it, as
    /// `mq_dump` reads them from that queue's qdisc (and the root's
    /// counters are the children's sums).
    #[test]
    fn a_requeued_frame_counts_in_its_tx_queue() {
        let (mut p, t1) = overrun_one_queue(2, 40_003);
        let s = p.snapshot(t1);
        // 3 of the batch requeued, 12 in queue 1's qdisc.
        assert_eq!((s.ring_used, s.requeued, s.requeues), (4, 3, 3));
        let (c0, c1) = (s.qdisc.children[0].stats, s.qdisc.children[1].stats);
        assert_eq!((c0.qlen, c0.backlog, c0.requeues), (0, 0, 0));
        assert_eq!((c1.qlen, c1.backlog, c1.requeues), (15, 15 * 1514, 3));
        let class = &s.qdisc.classes[1];
        assert_eq!((class.queue.qlen, class.stats.unwrap().requeues), (15, 3));
        let root = s.qdisc.stats;
        assert_eq!((root.qlen, root.backlog, root.requeues), (15, 15 * 1514, 3));
        assert_conserved(&p);
        let ids: Vec<u64> = drain(&mut p).into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, (1..20).collect::<Vec<_>>());
    }

    /// `ethtool -L` from three queues to two while frames wait in queue
    /// 2's requeue slot: the default mq root is rebuilt with two children,
    /// the frames (mapped to 40 004: queue 2 of three, 0 of two) move to
    /// queue 0's slot and count in its child and in the root's qlen and
    /// backlog (requeues count anew: the counters are the qdisc's), and
    /// they still leave first, in order.
    #[test]
    fn requeued_frames_follow_a_change_of_queue_count() {
        let (mut p, t1) = overrun_one_queue(3, 40_004);
        let s = p.snapshot(t1);
        assert_eq!((s.requeued, s.qdisc.children[2].stats.qlen), (3, 15));
        p.set_tx_queues(2, t1).unwrap();
        let s = p.snapshot(t1);
        assert_eq!((s.qdisc.kind.as_str(), s.qdisc.children.len()), ("mq", 2));
        let (c0, c1) = (s.qdisc.children[0].stats, s.qdisc.children[1].stats);
        assert_eq!((c0.qlen, c0.backlog, c0.requeues), (15, 15 * 1514, 0));
        assert_eq!((c1.qlen, c1.backlog), (0, 0));
        assert_eq!((s.qdisc.stats.qlen, s.qdisc.stats.backlog), (15, 15 * 1514));
        assert_eq!(s.requeued, 3);
        assert_conserved(&p);
        let ids: Vec<u64> = drain(&mut p).into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, (1..20).collect::<Vec<_>>());
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
}
