//! The device's requeue slot as tc shows it. When the driver refuses a frame
//! (`NETDEV_TX_BUSY` in the middle of a batch, or a TX queue already stopped
//! when an empty qdisc is bypassed), the kernel parks it on the qdisc of
//! that TX queue, in its `gso_skb` list (net/sched/sch_generic.c
//! `dev_requeue_skb`, called from `sch_direct_xmit`): it counts in that
//! qdisc's qlen and backlog, its `requeues` counter goes up, and
//! `dequeue_skb` hands it out before anything else. That qdisc is the root,
//! or under mq the TX queue's own child, whose counters mq's dump adds up
//! (net/sched/sch_mq.c `mq_dump`). `link::Path` holds the frames themselves;
//! `RequeueSlot` is their tally, which the device's `tree::QdiscTree` folds
//! into what it dumps, so `tc -s qdisc show` reads as the kernel's, and
//! hands to the qdisc of each TX queue (`Qdisc::set_requeued`), whose
//! limit checks count the frames as the kernel's `sch->q.qlen` does.

use super::dump::QdiscDump;
use super::{tc_h_major, tc_h_make, QdiscStats};

/// Frames waiting in the requeue slot, and how often frames were put
/// there, per TX queue: its index among the device's TX queues (0 on a
/// single-queue device), as `link::Path` keeps its rings, not a frame's
/// `meta.queue_mapping` (the top 16 bits of its flow hash, which mq takes
/// modulo its queue count).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequeueSlot {
    queues: Vec<SlotQueue>,
}

/// One TX queue's share of the slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct SlotQueue {
    /// Frames waiting now.
    frames: u32,
    /// Their bytes (`qdisc_pkt_len`).
    bytes: u64,
    /// Frames put into the slot since the root qdisc was created.
    requeues: u64,
}

impl RequeueSlot {
    fn queue(&mut self, queue: usize) -> &mut SlotQueue {
        if self.queues.len() <= queue {
            self.queues.resize(queue + 1, SlotQueue::default());
        }
        &mut self.queues[queue]
    }

    /// A frame of `len` bytes of TX queue `queue` was refused by the
    /// driver and parked.
    pub fn requeued(&mut self, queue: usize, len: u32) {
        let q = self.queue(queue);
        q.frames += 1;
        q.bytes += u64::from(len);
        q.requeues += 1;
    }

    /// A parked frame was handed to the driver again.
    pub fn resent(&mut self, queue: usize, len: u32) {
        let q = self.queue(queue);
        q.frames = q.frames.saturating_sub(1);
        q.bytes = q.bytes.saturating_sub(u64::from(len));
    }

    /// A parked frame moved from TX queue `from` to `to` (the device's
    /// queue count changed): it waits on in `to`'s slot, and the move is
    /// not another requeue.
    pub fn moved(&mut self, from: usize, to: usize, len: u32) {
        self.resent(from, len);
        let q = self.queue(to);
        q.frames += 1;
        q.bytes += u64::from(len);
    }

    /// A new root qdisc starts counting requeues from zero (the kernel's
    /// counters belong to the qdisc); frames still waiting stay.
    pub fn new_root(&mut self) {
        for q in &mut self.queues {
            q.requeues = 0;
        }
    }

    /// Frames and bytes of TX queue `queue` waiting in the slot.
    pub fn waiting(&self, queue: usize) -> (u32, u64) {
        self.queues
            .get(queue)
            .map_or((0, 0), |q| (q.frames, q.bytes))
    }

    /// Bytes waiting in the slot, over every TX queue.
    pub fn bytes(&self) -> u64 {
        self.queues.iter().map(|q| q.bytes).sum()
    }

    /// Frames waiting in the slot, over every TX queue.
    pub fn frames(&self) -> u32 {
        self.queues.iter().map(|q| q.frames).sum()
    }

    /// Adds the slot to `root`, the device's root dump: every queue's
    /// share to the root's counters; with `per_queue_children` (an mq
    /// root) also to the child of class `root:N+1` for TX queue N and to
    /// that class's counters, as `mq_dump` and `mq_dump_class_stats` read
    /// them from the queue's qdisc.
    pub fn fold_into(&self, root: &mut QdiscDump, per_queue_children: bool) {
        for (i, q) in self.queues.iter().enumerate() {
            if *q == SlotQueue::default() {
                continue;
            }
            add(&mut root.stats, q);
            if !per_queue_children {
                continue;
            }
            let Ok(minor) = u16::try_from(i + 1) else {
                continue;
            };
            let classid = tc_h_make(tc_h_major(root.handle), minor);
            if let Some(child) = root.children.iter_mut().find(|c| c.parent == classid) {
                add(&mut child.stats, q);
            }
            if let Some(class) = root.classes.iter_mut().find(|c| c.classid == classid) {
                add(&mut class.queue, q);
                if let Some(s) = class.stats.as_mut() {
                    add(s, q);
                }
            }
        }
    }
}

fn add(s: &mut QdiscStats, q: &SlotQueue) {
    s.qlen += q.frames;
    s.backlog += q.bytes;
    s.requeues += q.requeues;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dir::Dir;
    use crate::packet::{Drops, Packet};
    use crate::qdisc::codel::{CodelOptions, CodelQdisc};
    use crate::qdisc::dump::ClassDump;
    use crate::qdisc::fifo::{Fifo, FifoKind};
    use crate::qdisc::fq_codel::{FqCodel, FqCodelOptions};
    use crate::qdisc::fq_pie::{FqPie, FqPieOptions};
    use crate::qdisc::kinds::BUILTIN;
    use crate::qdisc::netem::{Netem, NetemOptions};
    use crate::qdisc::pie::{Pie, PieOptions};
    use crate::qdisc::sfq::{Sfq, SfqOptions};
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::tree::{DevSpec, QdiscTree};
    use crate::qdisc::{Qdisc, QdiscCtx, QdiscOptions};
    use crate::time::Instant;

    /// Roots of limit 10 packets (bfifo: 10 frames of 1000 bytes).
    fn roots() -> Vec<Box<dyn Qdisc>> {
        let ctx = QdiscCtx::default;
        vec![
            Box::new(Fifo::with_limit(FifoKind::Pfifo, ctx(), 10)),
            Box::new(Fifo::with_limit(FifoKind::Bfifo, ctx(), 10_000)),
            Box::new(Fifo::with_limit(FifoKind::PfifoHeadDrop, ctx(), 10)),
            Box::new(
                Sfq::with_options(
                    ctx(),
                    &SfqOptions {
                        limit: 10,
                        ..SfqOptions::default()
                    },
                )
                .unwrap(),
            ),
            Box::new(
                FqCodel::with_options(
                    ctx(),
                    &FqCodelOptions {
                        limit: Some(10),
                        ..FqCodelOptions::default()
                    },
                )
                .unwrap(),
            ),
            Box::new(
                Pie::build(
                    ctx(),
                    &QdiscOptions::Pie(PieOptions {
                        limit: Some(10),
                        ..PieOptions::default()
                    }),
                )
                .unwrap(),
            ),
            Box::new(
                FqPie::build(
                    ctx(),
                    &QdiscOptions::FqPie(FqPieOptions {
                        pie: PieOptions {
                            limit: Some(10),
                            ..PieOptions::default()
                        },
                        ..FqPieOptions::default()
                    }),
                )
                .unwrap(),
            ),
            Box::new(
                Netem::build(
                    ctx(),
                    &QdiscOptions::Netem(Box::new(NetemOptions {
                        limit: 10,
                        ..NetemOptions::default()
                    })),
                )
                .unwrap(),
            ),
            Box::new(CodelQdisc::with_options(
                ctx(),
                &CodelOptions {
                    limit: Some(10),
                    ..CodelOptions::default()
                },
            )),
        ]
    }

    /// Ten 1000-byte frames of one flow into `root` with `parked` frames in
    /// the requeue slot: how many the qdisc dropped, and what it holds.
    fn fill(root: Box<dyn Qdisc>, parked: u32) -> (&'static str, usize, u32) {
        let kind = root.kind();
        let mut tree = QdiscTree::with_root(DevSpec::new(Dir::LeftToRight, BUILTIN), root);
        for _ in 0..parked {
            tree.requeued(0, 1000);
        }
        let mut drops = Drops::new();
        for id in 0..10 {
            tree.enqueue(pkt(id, 1000), Instant::ZERO, &mut drops);
        }
        // The qdisc's own frames (its dump adds the parked ones).
        let held = tree.qlen();
        (kind, drops.len(), held)
    }

    /// `dev_requeue_skb` counts the parked frame in the qdisc's `q.qlen`
    /// and backlog, so ten frames into a limit of 10 with one parked lose
    /// one (the arriving frame, the head, or SFQ's tail; PIE's and
    /// FQ-PIE's and netem's `sch->q.qlen >= sch->limit`); fq_codel's
    /// overlimit drops half the fattest flow (`fq_codel_drop`).
    #[test]
    fn requeued_frames_count_against_the_limit() {
        for root in roots() {
            let (kind, dropped, held) = fill(root, 0);
            assert_eq!((dropped, held), (0, 10), "{kind} with nothing parked");
        }
        for root in roots() {
            let (kind, dropped, held) = fill(root, 1);
            let expected = if kind == "fq_codel" { (5, 5) } else { (1, 9) };
            assert_eq!((dropped, held), expected, "{kind} with one frame parked");
        }
    }

    /// A frame resent from the slot frees its place in the limit again.
    #[test]
    fn a_resent_frame_frees_its_place() {
        let mut tree = QdiscTree::with_root(
            DevSpec::new(Dir::LeftToRight, BUILTIN),
            Box::new(Fifo::with_limit(FifoKind::Pfifo, QdiscCtx::default(), 2)),
        );
        let mut drops = Drops::new();
        tree.requeued(0, 1000);
        tree.enqueue(pkt(1, 1000), Instant::ZERO, &mut drops);
        tree.enqueue(pkt(2, 1000), Instant::ZERO, &mut drops);
        assert_eq!(drops.len(), 1);
        tree.resent(0, 1000);
        tree.enqueue(pkt(3, 1000), Instant::ZERO, &mut drops);
        assert_eq!(drops.len(), 1);
        let ids: Vec<u64> = std::iter::from_fn(|| tree.dequeue(Instant::ZERO, &mut drops))
            .map(|p: Packet| p.meta.id)
            .collect();
        assert_eq!(ids, [1, 3]);
    }

    fn mq_dump() -> QdiscDump {
        let child = |n: u16| QdiscDump {
            kind: "pfifo_fast".into(),
            parent: tc_h_make(1, n),
            ..QdiscDump::default()
        };
        let class = |n: u16| ClassDump {
            kind: "mq".into(),
            classid: tc_h_make(1, n),
            stats: Some(QdiscStats::default()),
            ..ClassDump::default()
        };
        QdiscDump {
            kind: "mq".into(),
            handle: 0x10000,
            children: vec![child(1), child(2)],
            classes: vec![class(1), class(2)],
            ..QdiscDump::default()
        }
    }

    #[test]
    fn the_slot_counts_in_the_root_and_in_its_queues_child() {
        let mut slot = RequeueSlot::default();
        slot.requeued(1, 1000);
        slot.requeued(1, 500);
        slot.requeued(0, 60);
        slot.resent(0, 60);
        assert_eq!(slot.frames(), 2);
        let mut d = mq_dump();
        slot.fold_into(&mut d, true);
        assert_eq!(
            (d.stats.qlen, d.stats.backlog, d.stats.requeues),
            (2, 1500, 3)
        );
        let c0 = d.children[0].stats;
        let c1 = d.children[1].stats;
        assert_eq!((c0.qlen, c0.backlog, c0.requeues), (0, 0, 1));
        assert_eq!((c1.qlen, c1.backlog, c1.requeues), (2, 1500, 2));
        assert_eq!(d.classes[1].stats.unwrap().requeues, 2);
        assert_eq!(d.classes[1].queue.qlen, 2);

        // Not mq: the root alone.
        let mut d = mq_dump();
        slot.fold_into(&mut d, false);
        assert_eq!(d.stats.qlen, 2);
        assert_eq!(d.children[1].stats.qlen, 0);

        // The device's queue count changed: queue 1's frames wait in
        // queue 0's slot now, requeued no more often.
        let mut moved = slot.clone();
        moved.moved(1, 0, 1000);
        moved.moved(1, 0, 500);
        assert_eq!((moved.waiting(0), moved.waiting(1)), ((2, 1500), (0, 0)));
        let mut d = mq_dump();
        moved.fold_into(&mut d, true);
        assert_eq!((d.stats.qlen, d.stats.requeues), (2, 3));

        // A new root counts requeues anew; the waiting frames stay.
        slot.new_root();
        let mut d = mq_dump();
        slot.fold_into(&mut d, false);
        assert_eq!((d.stats.qlen, d.stats.requeues), (2, 0));
    }
}
