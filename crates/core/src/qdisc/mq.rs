//! mq, the multi-queue root (Linux net/sched/sch_mq.c `mq_init`): one child
//! qdisc per TX queue, created as the device's default qdisc with parent
//! `handle:(i+1)`. A frame goes to queue `queue_mapping % N` (ingress derives
//! queue_mapping from the flow hash), so two flows on different queues never
//! share a child's fairness or AQM. mq's own counters are the sum of its
//! children's, computed at dump time; its classes `:1..:N` report each child.
//!
//! The kernel runs each TX queue separately (each child is attached to its
//! own `netdev_queue` by `mq_attach`, and `__qdisc_run` runs it against that
//! queue only: net/sched/sch_generic.c `qdisc_restart`, `sch_direct_xmit`
//! checks `netif_xmit_frozen_or_stopped(txq)` of that queue), each with its
//! own ring and BQL (`netdev_queue.dql`, include/linux/netdevice.h
//! `netdev_tx_sent_queue`). `link::Path` does the same: it keeps a ring and a
//! DQL per child (`tx_queue_count`) and dequeues child i into ring i
//! (`dequeue_queue`), so a stopped queue stops only its own child. mq's own
//! `dequeue` (round robin over the children) serves only callers that take
//! the whole tree at once. mq never bypasses (the kernel's bypass happens in
//! the per-queue child, which does not know the queue here), so every frame
//! is enqueued and counted in its child.

use super::options::foreign as foreign_options;
use super::{
    tc_h_major, tc_h_make, tc_h_minor, ClassDump, Classful, FlowListing, Handle, Qdisc, QdiscCtx,
    QdiscDump, QdiscStats, TcError, Verdict, TC_H_ROOT,
};
use super::{ClassOptions, QdiscOptions};
use crate::packet::{Drops, Packet};
use crate::time::{earliest, Instant};
use serde::{Deserialize, Serialize};

/// TX queues of an emulated device (`link.tx_queues`). The kernel allows
/// 4096, but each child is a whole qdisc (an fq_codel with 65536 flows
/// holds 8 MB), so bloatbox stops at a real multi-queue NIC's size.
pub const MAX_QUEUES: u16 = 64;

/// mq's options: the kernel's mq takes none (`mq_init` ignores
/// `TCA_OPTIONS`); `queues` is a bloatbox extension that sets the emulated
/// device's TX queue count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MqOptions {
    /// TX queues (children) to make on a single-queue device, 2..=`MAX_QUEUES`
    /// (tc's `mq queues N`); on a multi-queue device it must equal
    /// `link.tx_queues`.
    pub queues: u16,
}

/// mq with one child qdisc per TX queue.
pub struct Mq {
    ctx: QdiscCtx,
    queues: Vec<Box<dyn Qdisc>>,
    /// The queue dequeue looks at first (round-robin cursor).
    next: usize,
}

fn not_supported(why: &str) -> TcError {
    TcError::new(format!(
        "RTNETLINK answers: Operation not supported\n({why})"
    ))
}

impl Mq {
    /// mq over `n` TX queues; `child` builds queue i's qdisc from its ctx
    /// (handle 0, parent `handle:(i+1)`).
    pub fn new(
        ctx: QdiscCtx,
        n: u16,
        child: &mut dyn FnMut(QdiscCtx) -> Box<dyn Qdisc>,
    ) -> Result<Mq, TcError> {
        if ctx.parent != TC_H_ROOT {
            return Err(not_supported("mq can only be the root qdisc of a device"));
        }
        if !(2..=MAX_QUEUES).contains(&n) {
            return Err(not_supported(&format!(
                "mq needs a multi-queue device (2..{MAX_QUEUES} TX queues) and this one has {n}; \
                 configure more TX queues or write \"mq queues N\""
            )));
        }
        let mut mq = Mq {
            ctx,
            queues: Vec::with_capacity(n as usize),
            next: 0,
        };
        for i in 0..n {
            let classid = mq.classid(i as usize);
            let c = mq.child_ctx(0, classid);
            mq.queues.push(child(c));
        }
        Ok(mq)
    }

    /// mq on a device with `dev_queues` TX queues: as many children, or,
    /// on a single-queue device, as many as `queues` asks for.
    pub fn build(
        ctx: QdiscCtx,
        dev_queues: u16,
        options: &QdiscOptions,
        child: &mut dyn FnMut(QdiscCtx) -> Box<dyn Qdisc>,
    ) -> Result<Mq, TcError> {
        let n = match options {
            QdiscOptions::None => dev_queues,
            QdiscOptions::Mq(MqOptions { queues: n }) => {
                let n = *n;
                if dev_queues > 1 && n != dev_queues {
                    return Err(TcError::new(format!(
                        "Error: argument \"{n}\" is wrong: this device has {dev_queues} TX queues \
                         (link.tx_queues) and mq makes one child per queue; leave out \"queues\" \
                         or set tx_queues = {n}"
                    )));
                }
                n
            }
            _ => return Err(foreign_options("mq")),
        };
        Mq::new(ctx, n, child)
    }

    /// The number of TX queues (children).
    pub fn queue_count(&self) -> usize {
        self.queues.len()
    }

    /// The class id of queue `i`: `handle:(i+1)`.
    fn classid(&self, i: usize) -> Handle {
        tc_h_make(tc_h_major(self.ctx.handle), (i + 1) as u16)
    }

    /// The queue behind class id `classid` (the major is ignored, like the
    /// kernel's `mq_find`).
    fn index_of(&self, classid: Handle) -> Option<usize> {
        let minor = tc_h_minor(classid) as usize;
        (1..=self.queues.len()).contains(&minor).then(|| minor - 1)
    }

    fn class_not_found(&self, classid: Handle) -> TcError {
        TcError::new(format!(
            "Error: Specified class not found.\n(mq class {:x}:{:x}; it has :1..:{:x})",
            tc_h_major(classid),
            tc_h_minor(classid),
            self.queues.len()
        ))
    }

    /// The first non-empty queue from the cursor on, for peek/dequeue.
    fn first_ready(&mut self, now: Instant, drops: &mut Drops) -> Option<usize> {
        let n = self.queues.len();
        (0..n)
            .map(|k| (self.next + k) % n)
            .find(|&i| self.queues[i].peek(now, drops).is_some())
    }
}

impl Qdisc for Mq {
    fn kind(&self) -> &'static str {
        "mq"
    }

    fn enqueue(&mut self, pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        let i = pkt.meta.queue_mapping as usize % self.queues.len();
        self.queues[i].enqueue(pkt, now, drops)
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        let n = self.queues.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            if let Some(p) = self.queues[i].dequeue(now, drops) {
                self.next = (i + 1) % n;
                return Some(p);
            }
        }
        None
    }

    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        let i = self.first_ready(now, drops)?;
        self.queues[i].peek(now, drops)
    }

    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        self.queues
            .iter()
            .fold(None, |acc, q| earliest(acc, q.next_wakeup(now)))
    }

    fn qlen(&self) -> u32 {
        self.queues.iter().map(|q| q.qlen()).sum()
    }

    fn backlog(&self) -> u64 {
        self.queues.iter().map(|q| q.backlog()).sum()
    }

    /// mq keeps no counters of its own: they are the children's sum
    /// (net/sched/sch_mq.c `mq_dump`).
    fn counters(&self) -> QdiscStats {
        self.queues.iter().fold(QdiscStats::default(), |mut s, q| {
            let c = q.counters();
            s.bytes += c.bytes;
            s.packets += c.packets;
            s.drops += c.drops;
            s.overlimits += c.overlimits;
            s.requeues += c.requeues;
            s
        })
    }

    fn reset(&mut self, drops: &mut Drops) {
        for q in &mut self.queues {
            q.reset(drops);
        }
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let children: Vec<QdiscDump> = self
            .queues
            .iter()
            .map(|q| q.dump_listing(now, listing))
            .collect();
        let classes = children
            .iter()
            .enumerate()
            .map(|(i, c)| ClassDump {
                kind: "mq".into(),
                classid: self.classid(i),
                parent: TC_H_ROOT,
                leaf: Some(c.handle),
                stats: Some(c.stats),
                queue: c.stats,
                ..ClassDump::default()
            })
            .collect();
        QdiscDump {
            kind: "mq".into(),
            handle: self.ctx.handle,
            // mq_dump puts no TCA_OPTIONS.
            options: QdiscOptions::None,
            parent: self.ctx.parent,
            stats: self.stats(),
            classes,
            children,
            ..QdiscDump::default()
        }
    }

    fn as_classful(&mut self) -> Option<&mut dyn Classful> {
        Some(self)
    }

    fn tx_queue_count(&self) -> usize {
        self.queues.len()
    }

    fn dequeue_queue(&mut self, queue: usize, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.queues.get_mut(queue)?.dequeue(now, drops)
    }

    fn queue_qlen(&self, queue: usize) -> u32 {
        self.queues.get(queue).map_or(0, |q| q.qlen())
    }

    fn queue_wakeup(&self, queue: usize, now: Instant) -> Option<Instant> {
        self.queues.get(queue)?.next_wakeup(now)
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        // Interleave the queues from the cursor on, as dequeue would.
        let n = self.queues.len();
        let mut per_queue: Vec<std::vec::IntoIter<Packet>> = (0..n)
            .map(|k| self.queues[(self.next + k) % n].drain_all().into_iter())
            .collect();
        let mut out = Vec::new();
        loop {
            let before = out.len();
            out.extend(per_queue.iter_mut().filter_map(Iterator::next));
            if out.len() == before {
                return out;
            }
        }
    }
}

impl Classful for Mq {
    fn add_class(
        &mut self,
        _classid: Handle,
        _parent: Handle,
        _options: &ClassOptions,
    ) -> Result<(), TcError> {
        Err(not_supported(
            "mq classes are its TX queues; they cannot be added",
        ))
    }

    fn change_class(&mut self, _classid: Handle, _options: &ClassOptions) -> Result<(), TcError> {
        Err(not_supported(
            "mq classes are its TX queues and have no options",
        ))
    }

    fn delete_class(&mut self, _classid: Handle, _drops: &mut Drops) -> Result<(), TcError> {
        Err(not_supported(
            "mq classes are its TX queues; they cannot be deleted",
        ))
    }

    fn graft(
        &mut self,
        classid: Handle,
        child: Box<dyn Qdisc>,
    ) -> Result<Option<Box<dyn Qdisc>>, TcError> {
        let i = self
            .index_of(classid)
            .ok_or_else(|| self.class_not_found(classid))?;
        Ok(Some(std::mem::replace(&mut self.queues[i], child)))
    }

    fn child_mut(&mut self, classid: Handle) -> Option<&mut Box<dyn Qdisc>> {
        let i = self.index_of(classid)?;
        self.queues.get_mut(i)
    }

    fn children_mut(&mut self) -> Vec<&mut Box<dyn Qdisc>> {
        self.queues.iter_mut().collect()
    }

    fn child_ctx(&self, handle: Handle, parent: Handle) -> QdiscCtx {
        self.ctx.child(handle, parent)
    }

    /// `mq_graft` grafts through `dev_graft_qdisc`, which puts the noop
    /// qdisc on a TX queue left without one: that queue drops everything.
    fn after_delete(&self, classid: Handle) -> Box<dyn Qdisc> {
        Box::new(crate::qdisc::noop::Noop::new(classid))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::fifo::{Fifo, FifoKind};
    use crate::qdisc::pfifo_fast::PfifoFast;
    use crate::qdisc::testutil::flow_pkt;

    fn root_ctx() -> QdiscCtx {
        QdiscCtx {
            handle: 0,
            ..QdiscCtx::default()
        }
    }

    fn mq(n: u16) -> Mq {
        Mq::new(root_ctx(), n, &mut |c| Box::new(PfifoFast::new(c))).unwrap()
    }

    fn on_queue(id: u64, len: u32, q: u16) -> Packet {
        let mut p = flow_pkt(id, len, q);
        p.meta.queue_mapping = q;
        p
    }

    #[test]
    fn children_get_parent_colon_n() {
        let m = mq(4);
        let d = m.dump(Instant::ZERO);
        let parents: Vec<Handle> = d.children.iter().map(|c| c.parent).collect();
        assert_eq!(parents, vec![1, 2, 3, 4]);
        assert!(d
            .children
            .iter()
            .all(|c| c.handle == 0 && c.kind == "pfifo_fast"));
        let classes: Vec<Handle> = d.classes.iter().map(|c| c.classid).collect();
        assert_eq!(classes, vec![1, 2, 3, 4]);
        assert!(d.classes.iter().all(|c| c.parent == TC_H_ROOT));
    }

    #[test]
    fn queue_selection_by_queue_mapping_modulo_n() {
        let mut m = mq(4);
        let mut d = Drops::new();
        for (id, qm) in [(1, 0u16), (2, 5), (3, 7), (4, 6)] {
            m.enqueue(on_queue(id, 100, qm), Instant::ZERO, &mut d);
        }
        let lens: Vec<u32> = m.queues.iter().map(|q| q.qlen()).collect();
        assert_eq!(lens, vec![1, 1, 1, 1]);
        let mut p = on_queue(5, 100, 9);
        p.meta.queue_mapping = 9;
        m.enqueue(p, Instant::ZERO, &mut d);
        assert_eq!(m.queues[1].qlen(), 2);
    }

    #[test]
    fn dequeue_round_robins_over_queues() {
        let mut m = mq(3);
        let mut d = Drops::new();
        let t = Instant::ZERO;
        // queue 0: ids 1,2,3; queue 2: ids 10,11
        for id in 1..=3 {
            m.enqueue(on_queue(id, 100, 0), t, &mut d);
        }
        for id in 10..=11 {
            m.enqueue(on_queue(id, 100, 2), t, &mut d);
        }
        assert_eq!(m.peek(t, &mut d).unwrap().meta.id, 1);
        let order: Vec<u64> = std::iter::from_fn(|| m.dequeue(t, &mut d))
            .map(|p| p.meta.id)
            .collect();
        assert_eq!(order, vec![1, 10, 2, 11, 3]);
        assert_eq!(m.qlen(), 0);
    }

    #[test]
    fn vector_m1_aggregated_stats() {
        let mut m = mq(4);
        let mut d = Drops::new();
        let t = Instant::ZERO;
        // children send 1000/2000/3000/4000 bytes
        for q in 0..4u16 {
            for k in 0..=q as u64 {
                m.enqueue(on_queue(q as u64 * 10 + k, 1000, q), t, &mut d);
            }
        }
        while m.dequeue(t, &mut d).is_some() {}
        let s = m.stats();
        assert_eq!((s.bytes, s.packets), (10_000, 10));
        let dump = m.dump(t);
        assert_eq!(dump.stats.bytes, 10_000);
        let per: Vec<u64> = dump.children.iter().map(|c| c.stats.bytes).collect();
        assert_eq!(per, vec![1000, 2000, 3000, 4000]);
        let class_bytes: Vec<u64> = dump
            .classes
            .iter()
            .map(|c| c.stats.unwrap().bytes)
            .collect();
        assert_eq!(class_bytes, per);
    }

    #[test]
    fn flows_on_different_queues_are_isolated() {
        // A queue full of one flow does not block another queue.
        let mut m = Mq::new(root_ctx(), 2, &mut |c| {
            Box::new(Fifo::with_limit(FifoKind::Pfifo, c, 2))
        })
        .unwrap();
        let mut d = Drops::new();
        let t = Instant::ZERO;
        for id in 0..5 {
            m.enqueue(on_queue(id, 100, 0), t, &mut d);
        }
        assert_eq!(d.len(), 3);
        assert_eq!(m.enqueue(on_queue(9, 100, 1), t, &mut d), Verdict::Queued);
        assert_eq!(m.stats().drops, 3);
        assert_eq!(m.dump(t).children[1].stats.drops, 0);
    }

    #[test]
    fn graft_replaces_one_queue() {
        let mut m = mq(4);
        let c = m.child_ctx(tc_h_make(0x8001, 0), 3);
        let old = m
            .graft(3, Box::new(Fifo::new(FifoKind::Pfifo, c)))
            .unwrap()
            .unwrap();
        assert_eq!(old.kind(), "pfifo_fast");
        let d = m.dump(Instant::ZERO);
        assert_eq!(d.children[2].kind, "pfifo");
        assert_eq!(d.classes[2].leaf, Some(tc_h_make(0x8001, 0)));
        assert!(m.graft(5, Box::new(PfifoFast::new(c))).is_err());
        assert!(m.graft(0, Box::new(PfifoFast::new(c))).is_err());
        assert!(m.child_mut(4).is_some());
        assert!(m.child_mut(5).is_none());
        assert_ne!(m.child_ctx(0, 1).seed, m.child_ctx(0, 2).seed);
    }

    #[test]
    fn rejects_single_queue_and_non_root() {
        let mut f = |c| -> Box<dyn Qdisc> { Box::new(PfifoFast::new(c)) };
        assert!(Mq::new(root_ctx(), 1, &mut f)
            .err()
            .unwrap()
            .0
            .contains("multi-queue"));
        let child = QdiscCtx {
            parent: tc_h_make(1, 1),
            ..root_ctx()
        };
        assert!(Mq::new(child, 4, &mut f).err().unwrap().0.contains("root"));
        let queues = |n| QdiscOptions::Mq(MqOptions { queues: n });
        assert_eq!(
            Mq::build(root_ctx(), 1, &queues(8), &mut f)
                .unwrap()
                .queue_count(),
            8
        );
        assert!(Mq::build(root_ctx(), 4, &queues(1), &mut f).is_err());
        let fifo = QdiscOptions::Fifo(crate::qdisc::fifo::FifoOptions { limit: 1 });
        assert!(Mq::build(root_ctx(), 4, &fifo, &mut f).is_err());
        // Past the emulated device's limit (each child is a whole qdisc).
        assert!(Mq::build(root_ctx(), 1, &queues(4096), &mut f).is_err());
        assert!(Mq::build(root_ctx(), 1, &queues(1), &mut f).is_err());
        // A multi-queue device keeps its own count.
        let e = Mq::build(root_ctx(), 4, &queues(8), &mut f)
            .err()
            .unwrap()
            .0;
        assert!(
            e.contains("has 4 TX queues") && e.contains("tx_queues = 8"),
            "{e}"
        );
        assert_eq!(
            Mq::build(root_ctx(), 4, &queues(4), &mut f)
                .unwrap()
                .queue_count(),
            4
        );
        assert_eq!(
            Mq::build(root_ctx(), 4, &QdiscOptions::None, &mut f)
                .unwrap()
                .queue_count(),
            4
        );
        assert!(mq(2).add_class(1, TC_H_ROOT, &ClassOptions::None).is_err());
    }

    #[test]
    fn drain_all_interleaves_and_empties() {
        let mut m = mq(2);
        let mut d = Drops::new();
        let t = Instant::ZERO;
        for id in 1..=3 {
            m.enqueue(on_queue(id, 100, 0), t, &mut d);
        }
        m.enqueue(on_queue(10, 100, 1), t, &mut d);
        let ids: Vec<u64> = m.drain_all().iter().map(|p| p.meta.id).collect();
        assert_eq!(ids, vec![1, 10, 2, 3]);
        assert_eq!(m.qlen(), 0);
    }
}
