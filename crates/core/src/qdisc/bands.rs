//! The fixed bands of prio and multiq (net/sched/sch_prio.c,
//! sch_multiq.c): one child qdisc per band, band 0 first
//! (`q->queues[0..bands]`), as classes `X:1..X:bands` that tc can neither
//! add, change nor delete (their `Qdisc_class_ops` have no `change` or
//! `delete`: `tc_ctl_tclass` answers EOPNOTSUPP, EEXIST for an add of a
//! band that exists), found by their minor (`prio_find`, `multiq_find`),
//! grafted in place, and dumped with the child's handle as leaf and the
//! child's counters (`prio_dump_class`/`_stats`, `multiq_dump_class`/
//! `_stats`). What the kinds do with their bands (classification, the
//! order of dequeue, their options) stays in their own modules.

use super::fifo::{Fifo, FifoKind};
use super::{
    tc_h_major, tc_h_make, tc_h_minor, ClassDump, Errno, FlowListing, Handle, Qdisc, QdiscCtx,
    QdiscDump, QdiscStats, Refusal,
};
use crate::packet::{Drops, Packet};
use crate::time::{earliest, Instant};

/// A qdisc's fixed bands, each holding a child.
pub struct Bands {
    /// The kind that owns them (`prio`, `multiq`), as tc names it.
    kind: &'static str,
    /// What one band stands for, as the refusals say it (`one per band`).
    per: &'static str,
    /// The children, band 0 first.
    pub queues: Vec<Box<dyn Qdisc>>,
}

impl Bands {
    /// No bands yet, for `kind`, each band standing for `per`.
    pub fn new(kind: &'static str, per: &'static str, capacity: usize) -> Bands {
        Bands {
            kind,
            per,
            queues: Vec::with_capacity(capacity),
        }
    }

    /// The class id of band `band` of the qdisc `handle`: `X:band+1`.
    pub fn classid(handle: Handle, band: usize) -> Handle {
        tc_h_make(tc_h_major(handle), band as u16 + 1)
    }

    /// Appends a band with a default pfifo (`qdisc_create_dflt`).
    pub fn push_default(&mut self, ctx: &QdiscCtx) {
        let classid = Bands::classid(ctx.handle, self.queues.len());
        let child = Fifo::new(FifoKind::Pfifo, ctx.child(0, classid));
        self.queues.push(Box::new(child));
    }

    /// The band of class `classid` (its minor, 1..=bands) of the qdisc
    /// `handle`.
    pub fn band(&self, handle: Handle, classid: Handle) -> Result<usize, Refusal> {
        let minor = tc_h_minor(classid) as usize;
        if (1..=self.queues.len()).contains(&minor) {
            return Ok(minor - 1);
        }
        Err(Refusal::new(
            Errno::ENOENT,
            format!(
                "class {:x}:{:x} does not exist: this {} has classes {:x}:1..{:x}:{:x} ({}).",
                tc_h_major(classid),
                tc_h_minor(classid),
                self.kind,
                tc_h_major(handle),
                tc_h_major(handle),
                self.queues.len(),
                self.per
            ),
        ))
    }

    /// The refusal of a class add, change or delete other than an add of
    /// an existing band (EOPNOTSUPP); `how` says how the bands are set.
    pub fn fixed(&self, handle: Handle, how: &str) -> Refusal {
        let major = tc_h_major(handle);
        Refusal::bare(Errno::EOPNOTSUPP).below(format!(
            "{}'s classes are its bands {major:x}:1..{major:x}:N, {how}; attach a qdisc to one \
             with `tc qdisc add ... parent {major:x}:1 ...`",
            self.kind
        ))
    }

    /// `tc class add` of `classid`: EEXIST for a band, else `fixed`.
    pub fn add_class(&self, handle: Handle, classid: Handle, how: &str) -> Refusal {
        match self.band(handle, classid) {
            Ok(_) => Refusal::bare(Errno::EEXIST).below(format!(
                "class {:x}:{:x} is a band of this {}",
                tc_h_major(classid),
                tc_h_minor(classid),
                self.kind
            )),
            Err(_) => self.fixed(handle, how),
        }
    }

    /// The band's child replaced by `child`; the old one is returned with
    /// what it holds, for the caller to drain or reset.
    pub fn graft(
        &mut self,
        handle: Handle,
        classid: Handle,
        child: Box<dyn Qdisc>,
    ) -> Result<Option<Box<dyn Qdisc>>, Refusal> {
        let band = self.band(handle, classid)?;
        Ok(Some(std::mem::replace(&mut self.queues[band], child)))
    }

    /// The child of class `classid`.
    pub fn child_mut(&mut self, handle: Handle, classid: Handle) -> Option<&mut Box<dyn Qdisc>> {
        let band = self.band(handle, classid).ok()?;
        Some(&mut self.queues[band])
    }

    /// Runs `f` on band `band`'s child, counting the frames it frees as
    /// the owner's drops in `stats` (the kernel's
    /// `qdisc_tree_reduce_backlog`).
    pub fn on_child<T>(
        &mut self,
        band: usize,
        stats: &mut QdiscStats,
        drops: &mut Drops,
        f: impl FnOnce(&mut dyn Qdisc, &mut Drops) -> T,
    ) -> T {
        let before = drops.len();
        let out = f(self.queues[band].as_mut(), drops);
        stats.drops += (drops.len() - before) as u64;
        out
    }

    /// The earliest wake-up of a band that holds frames.
    pub fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        self.queues
            .iter()
            .filter(|c| c.qlen() > 0)
            .fold(None, |acc, c| earliest(acc, c.next_wakeup(now)))
    }

    /// Frames in every band.
    pub fn qlen(&self) -> u32 {
        self.queues.iter().map(|c| c.qlen()).sum()
    }

    /// Bytes in every band.
    pub fn backlog(&self) -> u64 {
        self.queues.iter().map(|c| c.backlog()).sum()
    }

    /// Every band's child reset.
    pub fn reset(&mut self, drops: &mut Drops) {
        for c in &mut self.queues {
            c.reset(drops);
        }
    }

    /// Every frame of every band, band 0 first.
    pub fn drain_all(&mut self) -> Vec<Packet> {
        self.queues.iter_mut().flat_map(|c| c.drain_all()).collect()
    }

    /// The children's dumps and, per band, its class (parent: the qdisc
    /// `handle`; leaf: the child's handle, none for a default child; the
    /// child's counters).
    pub fn dump(
        &self,
        handle: Handle,
        now: Instant,
        listing: FlowListing,
    ) -> (Vec<ClassDump>, Vec<QdiscDump>) {
        let children: Vec<QdiscDump> = self
            .queues
            .iter()
            .map(|c| c.dump_listing(now, listing))
            .collect();
        let classes = children
            .iter()
            .enumerate()
            .map(|(band, child)| ClassDump {
                kind: self.kind.into(),
                classid: Bands::classid(handle, band),
                parent: handle,
                leaf: (child.handle != 0).then_some(child.handle),
                stats: Some(child.stats),
                ..ClassDump::default()
            })
            .collect();
        (classes, children)
    }
}
