//! DRR (Linux net/sched/sch_drr.c; Shreedhar and Varghese, "Efficient Fair
//! Queuing using Deficit Round Robin", SIGCOMM 1995): a flat set of
//! classes added with `tc class add ... drr [quantum BYTES]` (the quantum
//! defaults to the device's `psched_mtu`), each holding a child qdisc (a
//! default pfifo until `tc qdisc add parent X:Y` replaces it). Backlogged
//! classes take turns on the active list (`super::rounds`): each sends
//! frames while their lengths fit its deficit, and earns its quantum again
//! when the head frame does not fit, so backlogged classes share the link
//! in proportion to their quanta. `drr_classify`: a `skb->priority` naming
//! one of the classes, else the filters' class; a frame with no class is
//! dropped and counted as the qdisc's drop (`__NET_XMIT_BYPASS`). The
//! qdisc itself takes no options and dumps none; a class dumps its quantum
//! (`TCA_DRR_QUANTUM`) and, with `-s`, its deficit (`struct
//! tc_drr_stats`, 0 while the class holds nothing). Peeking parks the next
//! frame (the kernel's `qdisc_peek_dequeued`). Follows Linux v6.18.

use super::class_hash::ClassHash;
use super::dump::QueueOccupancy;
use super::fifo::{Fifo, FifoKind};
use super::park::ParkOnPeek;
use super::rounds::{Member, RoundClass, Rounds};
use super::{
    ClassDump, ClassOptions, Classful, Errno, FilterHost, FlowListing, Handle, Qdisc, QdiscCtx,
    QdiscDump, QdiscOptions, QdiscStats, Refusal, Verdict, Xstats, TC_H_ROOT,
};
use crate::packet::filter::FilterChain;
use crate::packet::{DropReason, Drops, Packet};
use crate::time::{earliest, Instant};

/// A DRR class's `TCA_OPTIONS` (`TCA_DRR_QUANTUM`, tc's `quantum`):
/// `None` is the attribute left out (on add: the device's psched_mtu; on
/// change: the quantum kept). A dump fills it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DrrClassOptions {
    /// `TCA_DRR_QUANTUM`, bytes; 0 is refused.
    pub quantum: Option<u32>,
}

/// `struct tc_drr_stats`: a class's extended statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DrrXstats {
    /// The class's deficit, bytes (0 while its child holds nothing,
    /// `drr_dump_class_stats`).
    pub deficit: u32,
}

/// One DRR class.
struct Class {
    classid: Handle,
    quantum: u32,
    deficit: u32,
    child: Box<dyn Qdisc>,
    /// `cl->bstats`: what the class sent, counted at DRR's dequeue.
    bytes: u64,
    packets: u64,
}

impl RoundClass for Class {
    fn member(&mut self) -> Member<'_> {
        Member {
            child: self.child.as_mut(),
            quantum: self.quantum,
            deficit: &mut self.deficit,
        }
    }
}

/// The DRR qdisc.
pub struct Drr {
    ctx: QdiscCtx,
    /// The classes, sorted by classid.
    classes: Vec<Class>,
    /// The order `drr_walk` lists the classes in.
    hash: ClassHash,
    rounds: Rounds<Handle>,
    filters: FilterChain,
    /// The frame `peek` took out (`qdisc_peek_dequeued`).
    parked: Option<Packet>,
    stats: QdiscStats,
}

/// The class of `classid` in `classes` (sorted by classid).
fn index(classes: &[Class], classid: Handle) -> Option<usize> {
    classes.binary_search_by_key(&classid, |c| c.classid).ok()
}

/// `drr_change_class`'s attributes: `None` where the request carried no
/// `TCA_OPTIONS` ("DRR options are required for this operation.").
fn request(options: &ClassOptions) -> Result<DrrClassOptions, Refusal> {
    let o = match options {
        ClassOptions::Drr(o) => *o,
        ClassOptions::None => {
            return Err(Refusal::new(
                Errno::EINVAL,
                "DRR options are required for this operation.",
            ))
        }
        _ => return Err(super::options::foreign("drr")),
    };
    if o.quantum == Some(0) {
        return Err(Refusal::new(
            Errno::EINVAL,
            "Specified DRR quantum cannot be zero.",
        ));
    }
    Ok(o)
}

impl Drr {
    /// `drr_init_qdisc`: no classes yet; DRR's qdisc takes no options.
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        match options {
            QdiscOptions::None => Ok(Drr {
                ctx,
                classes: Vec::new(),
                hash: ClassHash::new(),
                rounds: Rounds::new(),
                filters: FilterChain::new(),
                parked: None,
                stats: QdiscStats::default(),
            }),
            _ => Err(super::options::foreign("drr")),
        }
    }

    /// `drr_classify`: `skb->priority` naming a class, else the filters'
    /// class; `None`: no class.
    fn classify(&self, pkt: &mut Packet) -> Option<usize> {
        let prio = pkt.meta.priority;
        if super::tc_h_major(prio) == super::tc_h_major(self.ctx.handle) {
            if let Some(i) = index(&self.classes, prio) {
                return Some(i);
            }
        }
        let (classid, skbedit) = self.filters.classify(&pkt.meta)?;
        if let Some(p) = skbedit {
            pkt.meta.priority = p;
        }
        index(&self.classes, classid)
    }

    /// Runs `f` on class `i`'s child, counting the frames it frees as this
    /// qdisc's drops (the kernel's `qdisc_tree_reduce_backlog`).
    fn on_child<T>(
        &mut self,
        i: usize,
        drops: &mut Drops,
        f: impl FnOnce(&mut dyn Qdisc, &mut Drops) -> T,
    ) -> T {
        let before = drops.len();
        let out = f(self.classes[i].child.as_mut(), drops);
        self.stats.drops += (drops.len() - before) as u64;
        out
    }

    /// Puts class `i` on the active list if its child holds frames and it
    /// is not there, or takes it off if its child is empty.
    fn sync_active(&mut self, i: usize) {
        let c = &mut self.classes[i];
        self.rounds.sync(c.classid, c.member());
    }

    /// A class as `drr_dump_class` and `drr_dump_class_stats` give it;
    /// `child` is its qdisc's dump.
    fn class_dump(c: &Class, child: &QdiscDump) -> ClassDump {
        ClassDump {
            kind: "drr".into(),
            classid: c.classid,
            parent: TC_H_ROOT,
            leaf: (child.handle != 0).then_some(child.handle),
            options: ClassOptions::Drr(DrrClassOptions {
                quantum: Some(c.quantum),
            }),
            stats: Some(QdiscStats {
                bytes: c.bytes,
                packets: c.packets,
                ..child.stats
            }),
            xstats: Some(Xstats::DrrClass(DrrXstats {
                deficit: if child.stats.qlen > 0 { c.deficit } else { 0 },
            })),
            ..ClassDump::default()
        }
    }
}

impl ParkOnPeek for Drr {
    fn parked_slot(&mut self) -> &mut Option<Packet> {
        &mut self.parked
    }

    fn sent_stats(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }

    /// `drr_dequeue`: the round robin's next frame, counted in its class's
    /// `bstats`.
    fn dequeue_next(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        let before = drops.len();
        let next = self.rounds.dequeue(&mut self.classes, index, now, drops);
        self.stats.drops += (drops.len() - before) as u64;
        let (classid, pkt) = next?;
        if let Some(i) = index(&self.classes, classid) {
            self.classes[i].bytes += pkt.len as u64;
            self.classes[i].packets += pkt.segs() as u64;
        }
        Some(pkt)
    }
}

impl Qdisc for Drr {
    fn kind(&self) -> &'static str {
        "drr"
    }

    /// `drr_enqueue`. A class joins the active list when its child holds
    /// frames after the enqueue; the kernel skips that on a child's
    /// NET_XMIT_CN (a frame queued, another dropped), which would leave a
    /// backlogged class off the list, so bloatbox does not.
    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        let Some(i) = self.classify(&mut pkt) else {
            return self.stats.reject(pkt, DropReason::Unclassified, drops);
        };
        let verdict = self.on_child(i, drops, |child, drops| child.enqueue(pkt, now, drops));
        self.sync_active(i);
        verdict
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.dequeue_parked_first(now, drops)
    }

    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        self.peek_parking(now, drops)
    }

    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        if self.parked.is_some() {
            return None;
        }
        self.classes
            .iter()
            .filter(|c| c.child.qlen() > 0)
            .fold(None, |acc, c| earliest(acc, c.child.next_wakeup(now)))
    }

    fn qlen(&self) -> u32 {
        self.parked.is_some() as u32 + self.classes.iter().map(|c| c.child.qlen()).sum::<u32>()
    }

    fn backlog(&self) -> u64 {
        self.parked.as_ref().map_or(0, |p| p.len as u64)
            + self.classes.iter().map(|c| c.child.backlog()).sum::<u64>()
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    /// `drr_reset_qdisc`: every class off the active list, every child
    /// reset; the parked frame is dropped too.
    fn reset(&mut self, drops: &mut Drops) {
        if let Some(p) = self.parked.take() {
            drops.push(p, DropReason::QdiscReset);
        }
        for c in &mut self.classes {
            c.child.reset(drops);
        }
        self.rounds.clear();
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    /// The qdisc (no `TCA_OPTIONS`: DRR has no `dump`) and its classes in
    /// `drr_walk`'s order, each with its child.
    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let mut classes = Vec::with_capacity(self.classes.len());
        let mut children = Vec::with_capacity(self.classes.len());
        for classid in self.hash.walk() {
            let Some(i) = index(&self.classes, classid) else {
                continue;
            };
            let c = &self.classes[i];
            let child = c.child.dump_listing(now, listing);
            classes.push(Drr::class_dump(c, &child));
            children.push(child);
        }
        QdiscDump {
            kind: "drr".into(),
            handle: self.ctx.handle,
            parent: self.ctx.parent,
            stats: self.stats(),
            classes,
            children,
            occupancy: QueueOccupancy::parked(self.parked.as_ref(), now),
            ..QdiscDump::default()
        }
    }

    fn as_classful(&mut self) -> Option<&mut dyn Classful> {
        Some(self)
    }

    fn as_filter_host(&mut self) -> Option<&mut dyn FilterHost> {
        Some(self)
    }

    /// The parked frame, then each active class's frames in list order,
    /// then any other class's.
    fn drain_all(&mut self) -> Vec<Packet> {
        let mut frames: Vec<Packet> = self.parked.take().into_iter().collect();
        let order: Vec<Handle> = self.rounds.iter().collect();
        for classid in order {
            if let Some(i) = index(&self.classes, classid) {
                frames.extend(self.classes[i].child.drain_all());
            }
        }
        for c in &mut self.classes {
            frames.extend(c.child.drain_all());
        }
        self.rounds.clear();
        frames
    }
}

impl FilterHost for Drr {
    fn filter_qdisc(&self) -> Handle {
        self.ctx.handle
    }

    /// `drr_tcf_block`: only the qdisc's own block ("DRR classid must be
    /// zero").
    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, Refusal> {
        match parent {
            Some(p) if p != TC_H_ROOT && super::tc_h_minor(p) != 0 => {
                Err(Refusal::new(Errno::EINVAL, "DRR classid must be zero."))
            }
            _ => Ok(&mut self.filters),
        }
    }
}

/// The refusal of an operation on a class DRR does not have.
fn no_class(classid: Handle) -> Refusal {
    Refusal::bare(Errno::ENOENT).below(format!(
        "class {:x}:{:x} does not exist",
        super::tc_h_major(classid),
        super::tc_h_minor(classid)
    ))
}

impl Classful for Drr {
    /// `drr_change_class` for a new class: its quantum (psched_mtu when
    /// left out), a default pfifo. The parent is not read: DRR's classes
    /// are flat.
    fn add_class(
        &mut self,
        classid: Handle,
        _: Handle,
        options: &ClassOptions,
    ) -> Result<(), Refusal> {
        let o = request(options)?;
        let Err(pos) = self.classes.binary_search_by_key(&classid, |c| c.classid) else {
            return self.change_class(classid, options);
        };
        let child = Fifo::new(FifoKind::Pfifo, self.child_ctx(0, classid));
        self.classes.insert(
            pos,
            Class {
                classid,
                quantum: o.quantum.unwrap_or(self.ctx.psched_mtu),
                deficit: 0,
                child: Box::new(child),
                bytes: 0,
                packets: 0,
            },
        );
        self.hash.insert(classid);
        self.hash.grow();
        Ok(())
    }

    /// `drr_change_class` for a class that exists: a quantum given
    /// replaces the class's; one left out keeps it.
    fn change_class(&mut self, classid: Handle, options: &ClassOptions) -> Result<(), Refusal> {
        let o = request(options)?;
        let i = index(&self.classes, classid).ok_or_else(|| no_class(classid))?;
        if let Some(q) = o.quantum {
            self.classes[i].quantum = q;
        }
        Ok(())
    }

    /// `drr_class_ops` has `change` and reads `TCA_RATE` there.
    fn class_bstats(&self, classid: Handle) -> Option<(u64, u64)> {
        let c = &self.classes[index(&self.classes, classid)?];
        Some((c.bytes, c.packets))
    }

    /// `drr_delete_class`: refused while a filter points to the class;
    /// else its frames are purged (counted as this qdisc's drops) and it
    /// leaves the active list.
    fn delete_class(&mut self, classid: Handle, drops: &mut Drops) -> Result<(), Refusal> {
        let i = index(&self.classes, classid).ok_or_else(|| no_class(classid))?;
        if self.filters.targets(classid) {
            return Err(Refusal::new(Errno::EBUSY, "DRR class is in use."));
        }
        self.on_child(i, drops, |child, drops| child.reset(drops));
        self.rounds.leave(classid);
        self.classes.remove(i);
        self.hash.remove(classid);
        Ok(())
    }

    /// `drr_graft_class`: the class's qdisc is replaced; the old one is
    /// returned with what it holds (the caller purges it, and the class
    /// leaves the active list as `qlen_notify` has it).
    fn graft(
        &mut self,
        classid: Handle,
        child: Box<dyn Qdisc>,
    ) -> Result<Option<Box<dyn Qdisc>>, Refusal> {
        let i = index(&self.classes, classid).ok_or_else(|| no_class(classid))?;
        let old = std::mem::replace(&mut self.classes[i].child, child);
        self.sync_active(i);
        Ok(Some(old))
    }

    fn child_mut(&mut self, classid: Handle) -> Option<&mut Box<dyn Qdisc>> {
        let i = index(&self.classes, classid)?;
        Some(&mut self.classes[i].child)
    }

    fn children_mut(&mut self) -> Vec<&mut Box<dyn Qdisc>> {
        self.classes.iter_mut().map(|c| &mut c.child).collect()
    }

    fn child_ctx(&self, handle: Handle, parent: Handle) -> QdiscCtx {
        self.ctx.child(handle, parent)
    }
}

#[cfg(test)]
mod tests;
