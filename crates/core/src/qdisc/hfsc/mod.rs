//! HFSC, the Hierarchical Fair Service Curve scheduler (Linux
//! net/sched/sch_hfsc.c as of 6.18; Stoica, Zhang, Ng, SIGCOMM'97): a tree
//! of classes, each leaf with a child qdisc (a pfifo by default), served by
//! two criteria. The real-time one serves the eligible leaf (eligible time
//! `cl_e` reached) with the earliest deadline `cl_d`, both read off the
//! class's `rt` curve against the bytes it got that way (`cl_cumul`); when
//! no leaf is eligible, the link-sharing one walks from the root down the
//! children with the smallest virtual time `cl_vt` whose fit time `cl_f`
//! (from an `ul` upper-limit curve, theirs or a descendant's) has come,
//! the virtual times growing along each class's `ls` curve with the bytes
//! it sent (`cl_total`). Time is the kernel's psched clock, nanoseconds
//! shifted right by `PSCHED_SHIFT` (`psched_get_time`), and the curves'
//! arithmetic is `curve.rs`, the kernel's to the rounding. The kernel's
//! red-black trees (the eligible tree, each class's vt and cf trees) are
//! vectors kept sorted by the key at insertion, a new key going after its
//! equals as the kernel's `>=` goes right; a sleeping qdisc wakes when the
//! kernel's watchdog would (`hfsc_schedule_watchdog`). Frames are
//! classified as `hfsc_classify` does: `skb->priority` naming a leaf, else
//! the filters from the root down (a filter may only point downwards),
//! else the default class (`hfsc default X`), else dropped.

pub mod curve;
#[cfg(test)]
mod tests;

use super::class_hash::ClassHash;
use super::dump::{lift_hidden_child, QueueOccupancy};
use super::fifo::{Fifo, FifoKind};
use super::park::{drop_all_held, ParkOnPeek};
use super::{
    tc_h_major, tc_h_make, ClassDump, ClassOptions, Classful, Errno, FilterHost, FlowListing,
    Handle, Qdisc, QdiscCtx, QdiscDump, QdiscOptions, QdiscStats, Refusal, Verdict, TC_H_ROOT,
};
use crate::packet::filter::FilterChain;
use crate::packet::{DropReason, Drops, Packet};
use crate::time::{earliest, Instant};
use curve::{InternalSc, RuntimeSc, ServiceCurve, PSCHED_SHIFT};
use std::collections::BTreeMap;

/// The qdisc's options (`struct tc_hfsc_qopt`): the default class's minor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HfscOptions {
    /// `defcls`: unclassified frames go to class `major:defcls` (0: none).
    pub defcls: u16,
}

/// A class's `TCA_OPTIONS`: `TCA_HFSC_RSC` (tc's `rt`), `TCA_HFSC_FSC`
/// (`ls`) and `TCA_HFSC_USC` (`ul`), each present or not (`sc` sets the
/// first two alike).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HfscClassOptions {
    /// The real-time curve.
    pub rsc: Option<ServiceCurve>,
    /// The link-sharing curve.
    pub fsc: Option<ServiceCurve>,
    /// The upper-limit curve.
    pub usc: Option<ServiceCurve>,
}

/// `struct tc_hfsc_stats`, a class's (`hfsc_dump_class_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HfscXstats {
    /// `cl_vtperiod`: the class's backlog periods under link-sharing.
    pub period: u32,
    /// `cl_total`: bytes sent.
    pub work: u64,
    /// `cl_cumul`: bytes sent by the real-time criterion.
    pub rtwork: u64,
    /// The class's level (0: a leaf).
    pub level: u32,
}

/// A sorted stand-in for one of the kernel's red-black trees: (key at
/// insertion, class slot), equal keys in insertion order.
type Tree = Vec<(u64, usize)>;

/// Inserts `slot` with `key` after every entry whose key is `<= key`
/// (the kernel's insert goes right on `>=`).
fn tree_insert(tree: &mut Tree, key: u64, slot: usize) {
    let at = tree.partition_point(|&(k, _)| k <= key);
    tree.insert(at, (key, slot));
}

/// Takes `slot` out of `tree`.
fn tree_remove(tree: &mut Tree, slot: usize) {
    if let Some(at) = tree.iter().position(|&(_, s)| s == slot) {
        tree.remove(at);
    }
}

/// One class (`struct hfsc_class`); the root class is slot 0.
struct Class {
    classid: Handle,
    /// `cl_parent`'s slot; `None` for the root.
    parent: Option<usize>,
    children: Vec<usize>,
    level: u32,
    qdisc: Box<dyn Qdisc>,
    filters: FilterChain,
    /// `cl->bstats`, counted at dequeue.
    bytes: u64,
    packets: u64,
    /// `cl->qstats.drops`: frames its qdisc refused.
    drops: u64,
    total: u64,
    cumul: u64,
    d: u64,
    e: u64,
    vt: u64,
    f: u64,
    myf: u64,
    cfmin: u64,
    cvtmin: u64,
    vtadj: u64,
    cvtoff: u64,
    rsc: Option<InternalSc>,
    fsc: Option<InternalSc>,
    usc: Option<InternalSc>,
    deadline: RuntimeSc,
    eligible: RuntimeSc,
    virtual_: RuntimeSc,
    ulimit: RuntimeSc,
    vtperiod: u32,
    parentperiod: u32,
    nactive: u32,
    /// In the eligible tree (`!RB_EMPTY_NODE(&cl->el_node)`).
    in_el: bool,
    /// Active children by `cl_vt`, and by `cl_f`.
    vt_tree: Tree,
    cf_tree: Tree,
}

impl Class {
    fn new(classid: Handle, parent: Option<usize>, qdisc: Box<dyn Qdisc>) -> Class {
        Class {
            classid,
            parent,
            children: Vec::new(),
            level: 0,
            qdisc,
            filters: FilterChain::new(),
            bytes: 0,
            packets: 0,
            drops: 0,
            total: 0,
            cumul: 0,
            d: 0,
            e: 0,
            vt: 0,
            f: 0,
            myf: 0,
            cfmin: 0,
            cvtmin: 0,
            vtadj: 0,
            cvtoff: 0,
            rsc: None,
            fsc: None,
            usc: None,
            deadline: RuntimeSc::default(),
            eligible: RuntimeSc::default(),
            virtual_: RuntimeSc::default(),
            ulimit: RuntimeSc::default(),
            vtperiod: 0,
            parentperiod: 0,
            nactive: 0,
            in_el: false,
            vt_tree: Vec::new(),
            cf_tree: Vec::new(),
        }
    }

    /// `hfsc_change_rsc`: the deadline curve restarts at (now, cumul); the
    /// eligible curve is it, or for a convex curve its line of slope m2.
    fn change_rsc(&mut self, sc: &ServiceCurve, cur: u64) {
        let isc = InternalSc::new(sc);
        self.deadline = RuntimeSc::new(&isc, cur, self.cumul);
        self.eligible = eligible_of(&self.deadline, &isc);
        self.rsc = Some(isc);
    }

    /// `hfsc_change_fsc`.
    fn change_fsc(&mut self, sc: &ServiceCurve) {
        self.set_fsc(InternalSc::new(sc));
    }

    fn set_fsc(&mut self, isc: InternalSc) {
        self.virtual_ = RuntimeSc::new(&isc, self.vt, self.total);
        self.fsc = Some(isc);
    }

    /// `hfsc_change_usc`.
    fn change_usc(&mut self, sc: &ServiceCurve, cur: u64) {
        let isc = InternalSc::new(sc);
        self.ulimit = RuntimeSc::new(&isc, cur, self.total);
        self.usc = Some(isc);
    }

    /// `hfsc_reset_class`'s scheduling state (the counters stay).
    fn reset_state(&mut self) {
        self.total = 0;
        self.cumul = 0;
        self.d = 0;
        self.e = 0;
        self.vt = 0;
        self.vtadj = 0;
        self.cvtmin = 0;
        self.cvtoff = 0;
        self.vtperiod = 0;
        self.parentperiod = 0;
        self.f = 0;
        self.myf = 0;
        self.cfmin = 0;
        self.nactive = 0;
        self.in_el = false;
        self.vt_tree.clear();
        self.cf_tree.clear();
        if let Some(isc) = self.rsc {
            self.deadline = RuntimeSc::new(&isc, 0, 0);
        }
        if let Some(isc) = self.fsc {
            self.virtual_ = RuntimeSc::new(&isc, 0, 0);
        }
        if let Some(isc) = self.usc {
            self.ulimit = RuntimeSc::new(&isc, 0, 0);
        }
    }

    /// The curves as `hfsc_dump_curves` dumps them.
    fn options(&self) -> HfscClassOptions {
        let dump = |isc: &InternalSc| ServiceCurve {
            m1: curve::sm2m(isc.sm1),
            d: curve::dx2d(isc.dx),
            m2: curve::sm2m(isc.sm2),
        };
        HfscClassOptions {
            rsc: self.rsc.as_ref().map(dump),
            fsc: self.fsc.as_ref().map(dump),
            usc: self.usc.as_ref().map(dump),
        }
    }
}

/// The eligible curve of a deadline curve (`init_ed`): the same for a
/// concave curve, its second segment alone for a convex one.
fn eligible_of(deadline: &RuntimeSc, rsc: &InternalSc) -> RuntimeSc {
    let mut e = *deadline;
    if rsc.convex() {
        e.sc.dx = 0;
        e.sc.dy = 0;
    }
    e
}

/// `psched_get_time()` at `now`.
fn psched_time(now: Instant) -> u64 {
    now.nanos() >> PSCHED_SHIFT
}

/// The HFSC qdisc (`struct hfsc_sched`).
pub struct Hfsc {
    ctx: QdiscCtx,
    defcls: u16,
    /// Class slots; slot 0 is the root class (`q->root`).
    slots: Vec<Option<Class>>,
    ids: BTreeMap<Handle, usize>,
    clhash: ClassHash,
    /// The eligible tree: leaves with a real-time curve by `cl_e`.
    eligible: Tree,
    /// When the kernel's watchdog fires (`qdisc_watchdog_schedule`).
    watchdog: Option<Instant>,
    /// The latest time the qdisc was run at: class changes read the clock
    /// there (`psched_get_time` in `hfsc_change_class`).
    clock: Instant,
    parked: Option<Packet>,
    /// Frames purged by class operations, for `flush_freed`.
    freed: Vec<Packet>,
    warnings: Vec<String>,
    stats: QdiscStats,
}

impl Hfsc {
    /// `hfsc_init_qdisc`: the root class alone, with its default pfifo.
    pub fn new(ctx: QdiscCtx, options: HfscOptions) -> Hfsc {
        let root_q = Box::new(Fifo::new(FifoKind::Pfifo, ctx.child(0, ctx.handle)));
        let mut clhash = ClassHash::new();
        clhash.insert(ctx.handle);
        clhash.grow();
        Hfsc {
            ctx,
            defcls: options.defcls,
            slots: vec![Some(Class::new(ctx.handle, None, root_q))],
            ids: BTreeMap::from([(ctx.handle, 0)]),
            clhash,
            eligible: Vec::new(),
            watchdog: None,
            clock: Instant::ZERO,
            parked: None,
            freed: Vec::new(),
            warnings: Vec::new(),
            stats: QdiscStats::default(),
        }
    }

    /// `hfsc_init_qdisc` from a request: `tc_hfsc_qopt` is required.
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        match options {
            QdiscOptions::Hfsc(o) => Ok(Hfsc::new(ctx, *o)),
            _ => Err(Refusal::bare(Errno::EINVAL).below("hfsc needs its tc_hfsc_qopt")),
        }
    }

    fn cl(&self, slot: usize) -> &Class {
        self.slots[slot].as_ref().expect("live class slot")
    }

    fn cl_mut(&mut self, slot: usize) -> &mut Class {
        self.slots[slot].as_mut().expect("live class slot")
    }

    fn find(&self, classid: Handle) -> Option<usize> {
        self.ids.get(&classid).copied()
    }

    fn parent_of(&self, slot: usize) -> usize {
        self.cl(slot).parent.unwrap_or(0)
    }

    // ---- the trees ----

    fn eltree_insert(&mut self, i: usize) {
        let e = self.cl(i).e;
        tree_insert(&mut self.eligible, e, i);
        self.cl_mut(i).in_el = true;
    }

    fn eltree_remove(&mut self, i: usize) {
        if self.cl(i).in_el {
            tree_remove(&mut self.eligible, i);
            self.cl_mut(i).in_el = false;
        }
    }

    /// `eltree_get_mindl`: the eligible class with the earliest deadline.
    fn eltree_get_mindl(&self, cur: u64) -> Option<usize> {
        let mut best: Option<usize> = None;
        for &(_, s) in &self.eligible {
            let p = self.cl(s);
            if p.e > cur {
                break;
            }
            if best.is_none_or(|b| p.d < self.cl(b).d) {
                best = Some(s);
            }
        }
        best
    }

    fn vttree_insert(&mut self, i: usize) {
        let (vt, p) = (self.cl(i).vt, self.parent_of(i));
        tree_insert(&mut self.cl_mut(p).vt_tree, vt, i);
    }

    fn vttree_remove(&mut self, i: usize) {
        let p = self.parent_of(i);
        tree_remove(&mut self.cl_mut(p).vt_tree, i);
    }

    fn cftree_insert(&mut self, i: usize) {
        let (f, p) = (self.cl(i).f, self.parent_of(i));
        tree_insert(&mut self.cl_mut(p).cf_tree, f, i);
    }

    fn cftree_remove(&mut self, i: usize) {
        let p = self.parent_of(i);
        tree_remove(&mut self.cl_mut(p).cf_tree, i);
    }

    fn cftree_update(&mut self, i: usize) {
        self.cftree_remove(i);
        self.cftree_insert(i);
    }

    /// `update_cfmin`.
    fn update_cfmin(&mut self, i: usize) {
        let cfmin = self.cl(i).cf_tree.first().map_or(0, |&(_, s)| self.cl(s).f);
        self.cl_mut(i).cfmin = cfmin;
    }

    /// `vttree_get_minvt`: the leaf link-sharing serves, walking down the
    /// first fit child (`vttree_firstfit`) from the root.
    fn vttree_get_minvt(&mut self, cur: u64) -> Option<usize> {
        if self.cl(0).cfmin > cur {
            return None;
        }
        let mut i = 0;
        while self.cl(i).level > 0 {
            let next = self
                .cl(i)
                .vt_tree
                .iter()
                .map(|&(_, s)| s)
                .find(|&s| self.cl(s).f <= cur)?;
            let vt = self.cl(next).vt;
            let p = self.cl_mut(i);
            if p.cvtmin < vt {
                p.cvtmin = vt;
            }
            i = next;
        }
        Some(i)
    }

    /// `cl_in_el_or_vttree`.
    fn in_el_or_vttree(&self, i: usize) -> bool {
        let c = self.cl(i);
        (c.fsc.is_some() && c.nactive > 0) || (c.rsc.is_some() && c.in_el)
    }

    // ---- real-time ----

    /// `init_ed`: the deadline curve becomes the minimum of itself and the
    /// rt curve from (now, cumul); e and d are read off it.
    fn init_ed(&mut self, i: usize, next_len: u32, cur: u64) {
        let c = self.cl_mut(i);
        let Some(rsc) = c.rsc else { return };
        c.deadline.min_with(&rsc, cur, c.cumul);
        c.eligible = eligible_of(&c.deadline, &rsc);
        c.e = c.eligible.y2x(c.cumul);
        c.d = c.deadline.y2x(c.cumul + next_len as u64);
        self.eltree_insert(i);
    }

    /// `update_ed`.
    fn update_ed(&mut self, i: usize, next_len: u32) {
        let c = self.cl_mut(i);
        c.e = c.eligible.y2x(c.cumul);
        c.d = c.deadline.y2x(c.cumul + next_len as u64);
        self.eltree_remove(i);
        self.eltree_insert(i);
    }

    /// `update_d`.
    fn update_d(&mut self, i: usize, next_len: u32) {
        let c = self.cl_mut(i);
        c.d = c.deadline.y2x(c.cumul + next_len as u64);
    }

    // ---- link-sharing ----

    /// `init_vf`: class `i` and the ancestors it wakes become active, each
    /// with a virtual time among its siblings' and a fresh period.
    fn init_vf(&mut self, i: usize, cur: u64) {
        let mut go_active = true;
        let mut i = i;
        while let Some(p) = self.cl(i).parent {
            let c = self.cl_mut(i);
            go_active = go_active && {
                c.nactive += 1;
                c.nactive == 1
            };
            if go_active {
                let max_vt = self.cl(p).vt_tree.last().map(|&(_, s)| self.cl(s).vt);
                let (p_cvtmin, p_cvtoff, p_period) = {
                    let pc = self.cl(p);
                    (pc.cvtmin, pc.cvtoff, pc.vtperiod)
                };
                match max_vt {
                    Some(max_vt) => {
                        // The average of the min and max classes; the vt
                        // does not go back within the parent's period.
                        let vt = if p_cvtmin != 0 {
                            p_cvtmin.wrapping_add(max_vt) / 2
                        } else {
                            max_vt
                        };
                        let c = self.cl_mut(i);
                        if p_period != c.parentperiod || vt > c.vt {
                            c.vt = vt;
                        }
                    }
                    None => {
                        self.cl_mut(i).vt = p_cvtoff;
                        self.cl_mut(p).cvtmin = 0;
                    }
                }
                let p_nactive = self.cl(p).nactive;
                let c = self.cl_mut(i);
                if let Some(fsc) = c.fsc {
                    c.virtual_.min_with(&fsc, c.vt, c.total);
                }
                c.vtadj = 0;
                c.vtperiod = c.vtperiod.wrapping_add(1);
                c.parentperiod = p_period;
                if p_nactive == 0 {
                    c.parentperiod = c.parentperiod.wrapping_add(1);
                }
                c.f = 0;
                self.vttree_insert(i);
                self.cftree_insert(i);
                let c = self.cl_mut(i);
                if let Some(usc) = c.usc {
                    c.ulimit.min_with(&usc, cur, c.total);
                    c.myf = c.ulimit.y2x(c.total);
                }
            }
            let c = self.cl(i);
            let f = c.myf.max(c.cfmin);
            if f != c.f {
                self.cl_mut(i).f = f;
                self.cftree_update(i);
            }
            self.update_cfmin(p);
            i = p;
        }
    }

    /// `update_vf`: `len` bytes sent by leaf `i` move the virtual times up
    /// its ancestry; a leaf left empty and the ancestors it leaves without
    /// an active child go passive.
    fn update_vf(&mut self, i: usize, len: u32) {
        let c = self.cl(i);
        let mut go_passive = c.qdisc.qlen() == 0 && c.fsc.is_some() && c.nactive > 0;
        let mut i = i;
        while let Some(p) = self.cl(i).parent {
            let c = self.cl_mut(i);
            c.total += len as u64;
            if c.fsc.is_none() || c.nactive == 0 {
                i = p;
                continue;
            }
            go_passive = go_passive && {
                c.nactive -= 1;
                c.nactive == 0
            };
            c.vt = c.virtual_.y2x(c.total).wrapping_add(c.vtadj);
            let p_cvtmin = self.cl(p).cvtmin;
            let c = self.cl_mut(i);
            // Skipped in the past for not fitting: catch up with cvtmin.
            if c.vt < p_cvtmin {
                c.vtadj = c.vtadj.wrapping_add(p_cvtmin - c.vt);
                c.vt = p_cvtmin;
            }
            if go_passive {
                let vt = c.vt;
                let pc = self.cl_mut(p);
                if vt > pc.cvtoff {
                    pc.cvtoff = vt;
                }
                self.vttree_remove(i);
                self.cftree_remove(i);
                self.update_cfmin(p);
                i = p;
                continue;
            }
            self.vttree_remove(i);
            self.vttree_insert(i);
            let c = self.cl_mut(i);
            if c.usc.is_some() {
                c.myf = c.ulimit.y2x(c.total);
            }
            let f = c.myf.max(c.cfmin);
            if f != c.f {
                c.f = f;
                self.cftree_update(i);
                self.update_cfmin(p);
            }
            i = p;
        }
    }

    /// `hfsc_qlen_notify`: class `i`'s qdisc went empty outside a dequeue.
    fn qlen_notify(&mut self, i: usize) {
        if self.cl(i).nactive > 0 {
            self.update_vf(i, 0);
        }
        if self.cl(i).rsc.is_some() {
            self.eltree_remove(i);
        }
    }

    /// What the kernel's `qdisc_tree_reduce_backlog` does for a leaf whose
    /// qdisc emptied itself (a dropping AQM below): `qlen_notify`.
    fn notify_if_emptied(&mut self, i: usize) {
        if self.cl(i).qdisc.qlen() == 0 && self.in_el_or_vttree(i) {
            self.qlen_notify(i);
        }
    }

    /// `hfsc_adjust_levels` from class `i` up.
    fn adjust_levels(&mut self, i: usize) {
        let mut i = Some(i);
        while let Some(s) = i {
            let level = self
                .cl(s)
                .children
                .iter()
                .map(|&c| self.cl(c).level + 1)
                .max()
                .unwrap_or(0);
            self.cl_mut(s).level = level;
            i = self.cl(s).parent;
        }
    }

    /// `qdisc_peek_len` of leaf `i`'s qdisc (0 when it shows no frame).
    fn peek_len(&mut self, i: usize, now: Instant, drops: &mut Drops) -> u32 {
        let before = drops.len();
        let len = self.cl_mut(i).qdisc.peek(now, drops).map_or(0, |p| p.len);
        self.stats.drops += (drops.len() - before) as u64;
        len
    }

    // ---- classification ----

    /// `hfsc_classify`: the leaf a frame goes to, `None` to drop it.
    fn classify(&self, pkt: &mut Packet) -> Option<usize> {
        let prio = pkt.meta.priority;
        if tc_h_major(prio ^ self.ctx.handle) == 0 {
            if let Some(i) = self.find(prio).filter(|&i| self.cl(i).level == 0) {
                return Some(i);
            }
        }
        let mut head = 0;
        while let Some((classid, skbedit)) = self.cl(head).filters.classify(&pkt.meta) {
            if let Some(p) = skbedit {
                pkt.meta.priority = p;
            }
            let Some(i) = self.find(classid) else { break };
            if self.cl(i).level >= self.cl(head).level {
                break; // a filter may only point downwards
            }
            if self.cl(i).level == 0 {
                return Some(i);
            }
            head = i;
        }
        let def = tc_h_make(tc_h_major(self.ctx.handle), self.defcls);
        self.find(def).filter(|&i| self.cl(i).level == 0)
    }

    /// `hfsc_dequeue` without counting the qdisc's Sent.
    fn dequeue_inner(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.clock = self.clock.max(now);
        if self.children_qlen() == 0 {
            return None;
        }
        let cur = psched_time(now);
        let (i, realtime) = match self.eltree_get_mindl(cur) {
            Some(i) => (i, true),
            None => match self.vttree_get_minvt(cur) {
                Some(i) => (i, false),
                None => {
                    self.stats.overlimits += 1;
                    self.schedule_watchdog();
                    return None;
                }
            },
        };
        let before = drops.len();
        let pkt = self.cl_mut(i).qdisc.dequeue(now, drops);
        self.stats.drops += (drops.len() - before) as u64;
        let Some(pkt) = pkt else {
            self.notify_if_emptied(i);
            return None;
        };
        let c = self.cl_mut(i);
        c.bytes += pkt.len as u64;
        c.packets += pkt.segs() as u64;
        self.update_vf(i, pkt.len);
        if realtime {
            self.cl_mut(i).cumul += pkt.len as u64;
        }
        if self.cl(i).rsc.is_some() {
            if self.cl(i).qdisc.qlen() != 0 {
                let next_len = self.peek_len(i, now, drops);
                if self.cl(i).qdisc.qlen() != 0 {
                    if realtime {
                        self.update_ed(i, next_len);
                    } else {
                        self.update_d(i, next_len);
                    }
                } else {
                    self.notify_if_emptied(i);
                }
            } else {
                self.eltree_remove(i);
            }
        }
        Some(pkt)
    }

    /// `hfsc_schedule_watchdog`: the earliest eligible time, or the root's
    /// earliest fit time if sooner.
    fn schedule_watchdog(&mut self) {
        let mut next = self.eligible.first().map_or(0, |&(_, s)| self.cl(s).e);
        let cfmin = self.cl(0).cfmin;
        if cfmin != 0 && (next == 0 || next > cfmin) {
            next = cfmin;
        }
        if next != 0 {
            self.watchdog = Some(Instant::from_nanos(next << PSCHED_SHIFT));
        }
    }

    fn children_qlen(&self) -> u32 {
        self.slots.iter().flatten().map(|c| c.qdisc.qlen()).sum()
    }

    /// Clears every class's scheduling state (`hfsc_reset_class`), its
    /// frames already taken.
    fn reset_state(&mut self) {
        for c in self.slots.iter_mut().flatten() {
            c.reset_state();
        }
        self.eligible.clear();
        self.watchdog = None;
    }

    /// A class as `hfsc_dump_class` and `hfsc_dump_class_stats` give it.
    fn class_dump(&self, c: &Class, leaf: Option<Handle>) -> ClassDump {
        let q = c.qdisc.stats();
        ClassDump {
            kind: "hfsc".into(),
            classid: c.classid,
            parent: c.parent.map_or(TC_H_ROOT, |p| self.cl(p).classid),
            leaf: leaf.filter(|_| c.level == 0),
            options: ClassOptions::Hfsc(c.options()),
            stats: Some(QdiscStats {
                bytes: c.bytes,
                packets: c.packets,
                drops: c.drops,
                qlen: q.qlen,
                backlog: q.backlog,
                ..QdiscStats::default()
            }),
            xstats: Some(super::Xstats::HfscClass(HfscXstats {
                period: c.vtperiod,
                work: c.total,
                rtwork: c.cumul,
                level: c.level,
            })),
            ..ClassDump::default()
        }
    }

    /// The class options of a request: `TCA_OPTIONS` is required, and a
    /// curve with two zero slopes is none (`hfsc_change_class`).
    fn request_curves(options: &ClassOptions) -> Result<HfscClassOptions, Refusal> {
        match options {
            ClassOptions::Hfsc(o) => {
                let keep = |sc: Option<ServiceCurve>| sc.filter(|sc| !sc.is_zero());
                Ok(HfscClassOptions {
                    rsc: keep(o.rsc),
                    fsc: keep(o.fsc),
                    usc: keep(o.usc),
                })
            }
            _ => Err(Refusal::bare(Errno::EINVAL).below("an hfsc class needs rt, ls or sc")),
        }
    }
}

impl ParkOnPeek for Hfsc {
    fn parked_slot(&mut self) -> &mut Option<Packet> {
        &mut self.parked
    }
    fn sent_stats(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }
    fn dequeue_next(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.dequeue_inner(now, drops)
    }
}

impl Qdisc for Hfsc {
    fn kind(&self) -> &'static str {
        "hfsc"
    }

    /// `hfsc_enqueue`.
    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        self.clock = self.clock.max(now);
        let Some(i) = self.classify(&mut pkt) else {
            return self.stats.reject(pkt, DropReason::Unclassified, drops);
        };
        let len = pkt.len;
        let first = self.cl(i).qdisc.qlen() == 0;
        let before = drops.len();
        let verdict = self.cl_mut(i).qdisc.enqueue(pkt, now, drops);
        self.stats.drops += (drops.len() - before) as u64;
        if verdict == Verdict::Dropped {
            self.cl_mut(i).drops += 1;
            return verdict;
        }
        if first && !self.in_el_or_vttree(i) {
            let cur = psched_time(now);
            if self.cl(i).rsc.is_some() {
                self.init_ed(i, len, cur);
            }
            if self.cl(i).fsc.is_some() {
                self.init_vf(i, cur);
            }
            // The head isolated so that a head drop cannot move the
            // deadline before the first dequeue.
            if self.cl(i).rsc.is_some() {
                self.peek_len(i, now, drops);
            }
        }
        verdict
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.dequeue_parked_first(now, drops)
    }

    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        self.peek_parking(now, drops)
    }

    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        if self.qlen() == 0 {
            return None;
        }
        if self.parked.is_some() {
            return Some(now);
        }
        let mut t = self.watchdog.filter(|&w| w > now);
        for c in self.slots.iter().flatten().filter(|c| c.qdisc.qlen() > 0) {
            t = earliest(t, c.qdisc.next_wakeup(now).filter(|&w| w > now));
        }
        t
    }

    fn qlen(&self) -> u32 {
        self.children_qlen() + self.parked.is_some() as u32
    }

    fn backlog(&self) -> u64 {
        let held: u64 = self.slots.iter().flatten().map(|c| c.qdisc.backlog()).sum();
        held + self.parked.as_ref().map_or(0, |p| p.len as u64)
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    /// `hfsc_reset_qdisc`.
    fn reset(&mut self, drops: &mut Drops) {
        if let Some(p) = self.parked.take() {
            drops.push(p, DropReason::QdiscReset);
        }
        for c in self.slots.iter_mut().flatten() {
            drop_all_held(c.qdisc.as_mut(), drops);
            c.qdisc.reset(drops);
        }
        self.reset_state();
    }

    /// `hfsc_change_qdisc`: the default class.
    fn change(
        &mut self,
        options: &QdiscOptions,
        _now: Instant,
        _drops: &mut Drops,
    ) -> Result<(), Refusal> {
        match options {
            QdiscOptions::Hfsc(o) => {
                self.defcls = o.defcls;
                Ok(())
            }
            _ => Err(Refusal::bare(Errno::EINVAL).below("hfsc needs its tc_hfsc_qopt")),
        }
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let mut classes = Vec::new();
        let mut children = Vec::new();
        let mut occupancy = QueueOccupancy::parked(self.parked.as_ref(), now);
        // hfsc_walk: the class hash's buckets in order.
        for id in self.clhash.walk() {
            let Some(c) = self.find(id).map(|s| self.cl(s)) else {
                continue;
            };
            let child = c.qdisc.dump_listing(now, listing);
            let leaf = child.handle;
            if leaf == 0 {
                // Default pfifos (handle 0) stay out of `tc qdisc show`.
                occupancy.extend(lift_hidden_child(child, c.classid));
            } else if c.level == 0 {
                children.push(child);
            }
            classes.push(self.class_dump(c, (leaf != 0).then_some(leaf)));
        }
        QdiscDump {
            kind: "hfsc".into(),
            handle: self.ctx.handle,
            parent: self.ctx.parent,
            options: QdiscOptions::Hfsc(HfscOptions {
                defcls: self.defcls,
            }),
            stats: self.stats(),
            classes,
            children,
            occupancy,
            ..QdiscDump::default()
        }
    }

    fn as_classful(&mut self) -> Option<&mut dyn Classful> {
        Some(self)
    }

    fn as_filter_host(&mut self) -> Option<&mut dyn FilterHost> {
        Some(self)
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        let mut frames: Vec<Packet> = self.parked.take().into_iter().collect();
        for c in self.slots.iter_mut().flatten() {
            frames.extend(c.qdisc.drain_all());
        }
        self.reset_state();
        frames
    }
}

impl FilterHost for Hfsc {
    fn filter_qdisc(&self) -> Handle {
        self.ctx.handle
    }

    /// `hfsc_tcf_block`: the root class's block for the qdisc, else the
    /// class's own.
    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, Refusal> {
        let slot = match parent {
            None => 0,
            Some(p) if p == TC_H_ROOT || p == self.ctx.handle => 0,
            Some(p) => self.find(p).ok_or_else(|| no_class(p))?,
        };
        Ok(&mut self.cl_mut(slot).filters)
    }
}

/// The refusal of an operation on a class HFSC does not have.
fn no_class(classid: Handle) -> Refusal {
    Refusal::bare(Errno::ENOENT).below(format!(
        "no hfsc class {}",
        crate::handle::tc_handle(classid)
    ))
}

impl Classful for Hfsc {
    /// `hfsc_change_class` creating a class.
    fn add_class(
        &mut self,
        classid: Handle,
        parent: Handle,
        options: &ClassOptions,
    ) -> Result<(), Refusal> {
        let o = Hfsc::request_curves(options)?;
        if parent == TC_H_ROOT {
            return Err(Refusal::bare(Errno::EEXIST)
                .below("hfsc has one root class, the qdisc's own: give \"parent M:\""));
        }
        let p = self.find(parent).ok_or_else(|| no_class(parent))?;
        if classid == 0 || tc_h_major(classid ^ self.ctx.handle) != 0 {
            return Err(
                Refusal::bare(Errno::EINVAL).below("the classid's major is not the qdisc's")
            );
        }
        if self.find(classid).is_some() {
            return Err(Refusal::bare(Errno::EEXIST));
        }
        if o.rsc.is_none() && o.fsc.is_none() {
            return Err(Refusal::bare(Errno::EINVAL)
                .below("a new hfsc class needs a real-time or link-sharing curve (rt, ls or sc)"));
        }
        let qdisc = Box::new(Fifo::new(FifoKind::Pfifo, self.child_ctx(0, classid)));
        let mut cl = Class::new(classid, Some(p), qdisc);
        if let Some(sc) = &o.rsc {
            cl.change_rsc(sc, 0);
        }
        if let Some(sc) = &o.fsc {
            cl.change_fsc(sc);
        }
        if let Some(sc) = &o.usc {
            cl.change_usc(sc, 0);
        }
        let pc = self.cl(p);
        if pc.fsc.is_none() && p != 0 {
            self.warnings
                .push("Forced curve change on parent 'rt' to 'sc'".into());
            // hfsc_upgrade_rt
            let pc = self.cl_mut(p);
            if let Some(rsc) = pc.rsc {
                pc.set_fsc(rsc);
            }
        }
        let slot = match self.slots.iter().position(Option::is_none) {
            Some(s) => {
                self.slots[s] = Some(cl);
                s
            }
            None => {
                self.slots.push(Some(cl));
                self.slots.len() - 1
            }
        };
        self.ids.insert(classid, slot);
        self.clhash.insert(classid);
        self.cl_mut(p).children.push(slot);
        if self.cl(p).level == 0 {
            // qdisc_purge_queue of the parent's leaf qdisc.
            let pc = self.cl_mut(p);
            let frames = pc.qdisc.drain_all();
            self.stats.drops += frames.len() as u64;
            self.freed.extend(frames);
            self.notify_if_emptied(p);
        }
        self.adjust_levels(p);
        self.clhash.grow();
        // Room for every class in the trees, so the packet path never
        // allocates.
        let n = self.slots.len();
        self.eligible.reserve(n);
        for c in self.slots.iter_mut().flatten() {
            c.vt_tree.reserve(n);
            c.cf_tree.reserve(n);
        }
        Ok(())
    }

    /// `hfsc_change_class` on an existing class: the curves given replace
    /// theirs (restarting at the present); a backlogged class is
    /// rescheduled with them.
    fn change_class(&mut self, classid: Handle, options: &ClassOptions) -> Result<(), Refusal> {
        let o = Hfsc::request_curves(options)?;
        let i = self.find(classid).ok_or_else(|| no_class(classid))?;
        let now = self.clock;
        let cur = psched_time(now);
        let (old_rsc, old_fsc) = (self.cl(i).rsc.is_some(), self.cl(i).fsc.is_some());
        let c = self.cl_mut(i);
        if let Some(sc) = &o.rsc {
            c.change_rsc(sc, cur);
        }
        if let Some(sc) = &o.fsc {
            c.change_fsc(sc);
        }
        if let Some(sc) = &o.usc {
            c.change_usc(sc, cur);
        }
        if self.cl(i).qdisc.qlen() != 0 {
            let mut drops = Drops::new();
            let len = self.peek_len(i, now, &mut drops);
            self.freed.extend(drops.drain().map(|(p, _)| p));
            if self.cl(i).qdisc.qlen() != 0 {
                if self.cl(i).rsc.is_some() {
                    if old_rsc {
                        self.update_ed(i, len);
                    } else {
                        self.init_ed(i, len, cur);
                    }
                }
                if self.cl(i).fsc.is_some() {
                    if old_fsc {
                        self.update_vf(i, 0);
                    } else {
                        self.init_vf(i, cur);
                    }
                }
            }
        }
        Ok(())
    }

    /// `hfsc_change_class` hands `TCA_RATE` the class's `bstats`.
    fn class_bstats(&self, classid: Handle) -> Option<(u64, u64)> {
        let c = self.cl(self.find(classid)?);
        Some((c.bytes, c.packets))
    }

    fn flush_freed(&mut self, drops: &mut Drops) {
        for p in self.freed.drain(..) {
            drops.push(p, DropReason::QdiscReset);
        }
    }

    /// `hfsc_delete_class`: an inner class, one a filter points to, and the
    /// root are in use.
    fn delete_class(&mut self, classid: Handle, drops: &mut Drops) -> Result<(), Refusal> {
        let i = self.find(classid).ok_or_else(|| no_class(classid))?;
        let targeted = self
            .slots
            .iter()
            .flatten()
            .any(|c| c.filters.targets(classid));
        if self.cl(i).level > 0 || targeted || i == 0 {
            return Err(Refusal::new(Errno::EBUSY, "HFSC class in use"));
        }
        let p = self.parent_of(i);
        self.cl_mut(p).children.retain(|&c| c != i);
        self.adjust_levels(p);
        let frames = self.cl_mut(i).qdisc.drain_all();
        self.stats.drops += frames.len() as u64;
        for f in frames {
            drops.push(f, DropReason::QdiscReset);
        }
        self.notify_if_emptied(i);
        self.clhash.remove(classid);
        self.ids.remove(&classid);
        self.slots[i] = None;
        Ok(())
    }

    /// `hfsc_graft_class`: leaves only.
    fn graft(
        &mut self,
        classid: Handle,
        child: Box<dyn Qdisc>,
    ) -> Result<Option<Box<dyn Qdisc>>, Refusal> {
        let i = self.find(classid).ok_or_else(|| no_class(classid))?;
        if self.cl(i).level > 0 {
            return Err(Refusal::bare(Errno::EINVAL).below("only a leaf hfsc class holds a qdisc"));
        }
        let old = std::mem::replace(&mut self.cl_mut(i).qdisc, child);
        self.notify_if_emptied(i);
        Ok(Some(old))
    }

    fn child_mut(&mut self, classid: Handle) -> Option<&mut Box<dyn Qdisc>> {
        let i = self.find(classid)?;
        Some(&mut self.cl_mut(i).qdisc)
    }

    fn children_mut(&mut self) -> Vec<&mut Box<dyn Qdisc>> {
        self.slots
            .iter_mut()
            .flatten()
            .map(|c| &mut c.qdisc)
            .collect()
    }

    fn child_ctx(&self, handle: Handle, parent: Handle) -> QdiscCtx {
        self.ctx.child(handle, parent)
    }

    fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}
