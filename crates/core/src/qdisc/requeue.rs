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
//! into what it dumps, so `tc -s qdisc show` reads as the kernel's.

use super::dump::QdiscDump;
use super::{tc_h_major, tc_h_make, QdiscStats};

/// Frames waiting in the requeue slot, and how often frames were put
/// there, per TX queue (`meta.queue_mapping`).
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
    fn queue(&mut self, queue: u16) -> &mut SlotQueue {
        let i = usize::from(queue);
        if self.queues.len() <= i {
            self.queues.resize(i + 1, SlotQueue::default());
        }
        &mut self.queues[i]
    }

    /// A frame of `len` bytes of TX queue `queue` was refused by the
    /// driver and parked.
    pub fn requeued(&mut self, queue: u16, len: u32) {
        let q = self.queue(queue);
        q.frames += 1;
        q.bytes += u64::from(len);
        q.requeues += 1;
    }

    /// A parked frame was handed to the driver again.
    pub fn resent(&mut self, queue: u16, len: u32) {
        let q = self.queue(queue);
        q.frames = q.frames.saturating_sub(1);
        q.bytes = q.bytes.saturating_sub(u64::from(len));
    }

    /// A new root qdisc starts counting requeues from zero (the kernel's
    /// counters belong to the qdisc); frames still waiting stay.
    pub fn new_root(&mut self) {
        for q in &mut self.queues {
            q.requeues = 0;
        }
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
    use crate::qdisc::dump::ClassDump;

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

        // A new root counts requeues anew; the waiting frames stay.
        slot.new_root();
        let mut d = mq_dump();
        slot.fold_into(&mut d, false);
        assert_eq!((d.stats.qlen, d.stats.requeues), (2, 0));
    }
}
