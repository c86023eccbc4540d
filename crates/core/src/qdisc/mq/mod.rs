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
    tc_h_major, tc_h_make, tc_h_minor, ClassDump, Classful, Errno, FlowListing, Handle, Qdisc,
    QdiscCtx, QdiscDump, QdiscStats, Refusal, Verdict, TC_H_ROOT,
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

fn not_supported(why: &str) -> Refusal {
    Refusal::bare(Errno::EOPNOTSUPP).below(why)
}

impl Mq {
    /// mq over `n` TX queues; `child` builds queue i's qdisc from its ctx
    /// (handle 0, parent `handle:(i+1)`).
    pub fn new(
        ctx: QdiscCtx,
        n: u16,
        child: &mut dyn FnMut(QdiscCtx) -> Box<dyn Qdisc>,
    ) -> Result<Mq, Refusal> {
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
    ) -> Result<Mq, Refusal> {
        let n = match options {
            QdiscOptions::None => dev_queues,
            QdiscOptions::Mq(MqOptions { queues: n }) => {
                let n = *n;
                if dev_queues > 1 && n != dev_queues {
                    return Err(Refusal::new(
                        Errno::EINVAL,
                        format!(
                            "argument \"{n}\" is wrong: this device has {dev_queues} TX queues \
                             (link.tx_queues) and mq makes one child per queue; leave out \
                             \"queues\" or set tx_queues = {n}"
                        ),
                    ));
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

    fn class_not_found(&self, classid: Handle) -> Refusal {
        Refusal::new(Errno::ENOENT, "Specified class not found.").below(format!(
            "mq class {:x}:{:x}; it has :1..:{:x}",
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

    fn queue_set_requeued(&mut self, queue: usize, frames: u32, bytes: u64) {
        if let Some(q) = self.queues.get_mut(queue) {
            q.set_requeued(frames, bytes);
        }
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
    ) -> Result<(), Refusal> {
        Err(not_supported(
            "mq classes are its TX queues; they cannot be added",
        ))
    }

    fn change_class(&mut self, _classid: Handle, _options: &ClassOptions) -> Result<(), Refusal> {
        Err(not_supported(
            "mq classes are its TX queues and have no options",
        ))
    }

    fn delete_class(&mut self, _classid: Handle, _drops: &mut Drops) -> Result<(), Refusal> {
        Err(not_supported(
            "mq classes are its TX queues; they cannot be deleted",
        ))
    }

    fn graft(
        &mut self,
        classid: Handle,
        child: Box<dyn Qdisc>,
    ) -> Result<Option<Box<dyn Qdisc>>, Refusal> {
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
mod tests;
