//! HTB, the Hierarchical Token Bucket (Linux net/sched/sch_htb.c; its tc
//! syntax is `crate::tc::opts::htb`): a tree of classes, each with a `rate`
//! bucket and a `ceil` bucket in nanoseconds of transmission time. Leaves
//! hold a child qdisc (pfifo by default). A class is CAN_SEND, MAY_BORROW or
//! CANT_SEND by the *sign* of its buckets; active leaves sit in the row of
//! their level (CAN_SEND) or in the feed of the ancestor they borrow from,
//! and dequeue serves levels bottom-up, prios in order, and DRR with
//! per-level deficits inside a (level, prio). Classes that are not CAN_SEND
//! wait in a per-level event queue keyed by the time their mode may change.
//! Unclassified frames go to the unshaped direct queue, which is served
//! first. This module holds the qdisc (build, enqueue, classification,
//! dump); `class` the class state and its buckets, `active` the rows and
//! feeds, `schedule` activity and dequeue, `classful` class management and
//! filters, `options` the netlink options.

mod xstats;
pub use xstats::HtbXstats;

mod active;
mod class;
mod classful;
mod options;
mod schedule;
#[cfg(test)]
mod tests;

pub use options::{HtbClassOptions, HtbGlob, HTB_VER};

use super::class_hash::ClassHash;
use super::dump::{lift_hidden_child, QueueId, QueueOccupancy};
use super::{
    tc_h_major, tc_h_make, Classful, Errno, FilterHost, FlowListing, Qdisc, QdiscCtx, QdiscDump,
    QdiscOptions, QdiscStats, Refusal, Verdict,
};
use crate::packet::filter::FilterChain;
use crate::packet::{DropReason, Drops, Packet};
use crate::time::{Instant, NS_PER_SEC};
use active::ActiveSet;
use class::{Class, Mode};
use std::collections::{BTreeSet, HashMap, VecDeque};

/// `TC_HTB_MAXDEPTH`: levels 0 (leaves) to 7 (root classes with children).
const MAXDEPTH: usize = 8;
/// `TC_HTB_NUMPRIO`.
const NUMPRIO: usize = 8;
/// Bound on how far tokens may be in debt or credit (`mbuffer`, 60 s).
const MBUFFER: i64 = 60 * NS_PER_SEC as i64;

/// Where `classify` sends a frame.
enum Target {
    Direct,
    Leaf(usize),
}

/// The HTB qdisc.
pub struct Htb {
    ctx: QdiscCtx,
    /// `default`: minor of the class for unclassified frames (0 = direct).
    defcls: u32,
    r2q: u32,
    direct_qlen: u32,
    classes: Vec<Option<Class>>,
    free_slots: Vec<usize>,
    ids: HashMap<u32, usize>,
    /// `q->clhash`: the order `htb_walk` (and so `tc class show`) visits
    /// the classes in.
    clhash: ClassHash,
    /// Filters attached to the qdisc itself.
    filters: FilterChain,
    rows: [[ActiveSet; NUMPRIO]; MAXDEPTH],
    row_mask: [u8; MAXDEPTH],
    wait_pq: [BTreeSet<(i64, u64, usize)>; MAXDEPTH],
    near_ev_cache: [i64; MAXDEPTH],
    pq_seq: u64,
    /// `q->now`: the time of the current dequeue.
    now: i64,
    /// The latest time seen (for class creation, which gets no `now`).
    clock: Instant,
    direct: VecDeque<Packet>,
    direct_pkts: u64,
    /// A frame taken out by `peek`, counted in qlen.
    parked: Option<Packet>,
    qlen: u32,
    backlog: u64,
    stats: QdiscStats,
    /// Slots whose leaf once held frames back (checked by `next_wakeup`).
    non_wc: Vec<usize>,
    /// The last dequeue found nothing sendable; `watchdog` is when to retry.
    stalled: bool,
    watchdog: Instant,
    /// A child qdisc was handed out mutably: recount qlen and activity.
    dirty: bool,
    /// Frames freed by class operations that have no drop sink, handed to
    /// the next `Drops` this qdisc sees.
    purged: Vec<Packet>,
    warnings: Vec<String>,
}

impl Htb {
    /// `htb_init`: the qdisc from its `TCA_OPTIONS` (`QdiscOptions::None`
    /// is what tc sends without options). The direct queue holds
    /// `direct_qlen` frames, by default the device's txqueuelen.
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        let glob = match options {
            QdiscOptions::Htb(o) => o.clone(),
            QdiscOptions::None => HtbGlob::default(),
            _ => return Err(Refusal::new(Errno::EINVAL, "htb: options of another kind.")),
        };
        if glob.version != HTB_VER >> 16 {
            return Err(Refusal::new(
                Errno::EINVAL,
                format!(
                    "HTB: need tc/htb version {} (minor is {}), you have {}.",
                    HTB_VER >> 16,
                    HTB_VER & 0xffff,
                    glob.version
                ),
            ));
        }
        Ok(Htb {
            direct_qlen: glob.direct_qlen.unwrap_or(ctx.txqueuelen),
            ctx,
            defcls: glob.defcls,
            r2q: glob.rate2quantum.max(1),
            classes: Vec::new(),
            free_slots: Vec::new(),
            ids: HashMap::new(),
            clhash: ClassHash::new(),
            filters: FilterChain::new(),
            rows: Default::default(),
            row_mask: [0; MAXDEPTH],
            wait_pq: Default::default(),
            near_ev_cache: [0; MAXDEPTH],
            pq_seq: 0,
            now: 0,
            clock: Instant::ZERO,
            direct: VecDeque::new(),
            direct_pkts: 0,
            parked: None,
            qlen: 0,
            backlog: 0,
            stats: QdiscStats::default(),
            stalled: false,
            watchdog: Instant::ZERO,
            dirty: false,
            purged: Vec::new(),
            warnings: Vec::new(),
            non_wc: Vec::new(),
        })
    }

    /// `htb_dump`'s `tc_htb_glob` and `TCA_HTB_DIRECT_QLEN`.
    pub fn options(&self) -> HtbGlob {
        HtbGlob {
            version: HTB_VER,
            rate2quantum: self.r2q,
            defcls: self.defcls,
            debug: 0,
            direct_pkts: self.direct_pkts,
            direct_qlen: Some(self.direct_qlen),
        }
    }

    /// Warnings of class operations so far (e.g. quantum clamping).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Frames the direct queue has taken (`direct_packets_stat`).
    pub fn direct_packets(&self) -> u64 {
        self.direct_pkts
    }

    #[inline]
    fn cl(&self, slot: usize) -> &Class {
        self.classes[slot].as_ref().expect("slot of a live class")
    }

    #[inline]
    fn cl_mut(&mut self, slot: usize) -> &mut Class {
        self.classes[slot].as_mut().expect("slot of a live class")
    }

    #[inline]
    fn find(&self, classid: u32) -> Option<usize> {
        self.ids.get(&classid).copied()
    }

    // ----- enqueue (5.6) -----

    /// `htb_classify`: `skb->priority` naming the qdisc (direct) or a leaf;
    /// else the filters of the qdisc (or of the inner class `priority`
    /// names), following flowids of inner classes into their filters; else
    /// the default class; else the direct queue. A filter's `skbedit
    /// priority` action rewrites `skb->priority`.
    fn classify(&self, pkt: &mut Packet) -> Target {
        let priority = pkt.meta.priority;
        if priority == self.ctx.handle {
            return Target::Direct;
        }
        let mut chain = &self.filters;
        if let Some(slot) = self.find(priority) {
            if self.cl(slot).level == 0 {
                return Target::Leaf(slot);
            }
            chain = &self.cl(slot).filters;
        }
        for _ in 0..MAXDEPTH {
            let Some((flowid, skbedit)) = chain.classify(&pkt.meta) else {
                break;
            };
            if let Some(p) = skbedit {
                pkt.meta.priority = p;
            }
            if flowid == self.ctx.handle {
                return Target::Direct;
            }
            let Some(slot) = self.find(flowid) else {
                break;
            };
            if self.cl(slot).level == 0 {
                return Target::Leaf(slot);
            }
            chain = &self.cl(slot).filters;
        }
        let def = tc_h_make(tc_h_major(self.ctx.handle), self.defcls as u16);
        match self.find(def) {
            Some(slot) if self.cl(slot).level == 0 => Target::Leaf(slot),
            _ => Target::Direct,
        }
    }

    // ----- bookkeeping -----

    /// Hands frames freed by class operations to a drop sink.
    fn flush_purged(&mut self, drops: &mut Drops) {
        for p in self.purged.drain(..) {
            drops.push(p, DropReason::QdiscReset);
        }
    }

    /// Purges a leaf's queue (`qdisc_purge_queue`): frames are dropped.
    fn purge_leaf(&mut self, slot: usize) {
        let Some(leaf) = self.cl_mut(slot).leaf.as_mut() else {
            return;
        };
        let frames = leaf.drain_all();
        for p in &frames {
            self.qlen = self.qlen.saturating_sub(1);
            self.backlog = self.backlog.saturating_sub(p.len as u64);
        }
        self.stats.drops += frames.len() as u64;
        self.purged.extend(frames);
    }

    /// After children were handed out mutably: recount qlen/backlog and put
    /// each leaf's activity in line with its queue.
    fn resync(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        self.stalled = false;
        self.qlen = self.direct.len() as u32 + self.parked.is_some() as u32;
        self.backlog = self.direct.iter().map(|p| p.len as u64).sum::<u64>()
            + self.parked.as_ref().map_or(0, |p| p.len as u64);
        for slot in 0..self.classes.len() {
            let Some(cl) = self.classes[slot].as_ref() else {
                continue;
            };
            let Some(leaf) = cl.leaf.as_ref() else {
                continue;
            };
            let (q, b) = (leaf.qlen(), leaf.backlog());
            self.qlen += q;
            self.backlog += b;
            if q > 0 {
                self.activate(slot);
            } else {
                self.deactivate(slot);
            }
        }
    }

    /// Empties rows, feeds and event queues (`htb_reset` minus the frames).
    fn clear_schedule(&mut self) {
        for cl in self.classes.iter_mut().flatten() {
            for f in cl.feeds.iter_mut() {
                f.clear();
            }
            cl.prio_activity = 0;
            cl.mode = Mode::CanSend;
            cl.pq = None;
        }
        for level in 0..MAXDEPTH {
            for row in self.rows[level].iter_mut() {
                row.clear();
            }
            self.wait_pq[level].clear();
        }
        self.row_mask = [0; MAXDEPTH];
        self.qlen = 0;
        self.backlog = 0;
        self.stalled = false;
        self.dirty = false;
    }
}

impl Qdisc for Htb {
    fn kind(&self) -> &'static str {
        "htb"
    }

    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        self.flush_purged(drops);
        self.resync();
        self.clock = self.clock.max(now);
        self.stalled = false;
        match self.classify(&mut pkt) {
            Target::Direct => {
                if (self.direct.len() as u64) < self.direct_qlen as u64 {
                    pkt.meta.enqueue_time = now;
                    self.qlen += 1;
                    self.backlog += pkt.len as u64;
                    self.direct.push_back(pkt);
                    self.direct_pkts += 1;
                    Verdict::Queued
                } else {
                    self.stats.reject(pkt, DropReason::QueueFull, drops)
                }
            }
            Target::Leaf(slot) => {
                if self.cl(slot).leaf.is_none() {
                    return self.stats.reject(pkt, DropReason::Unclassified, drops);
                }
                let (verdict, dropped) = self
                    .leaf_op(slot, drops, |q, d| q.enqueue(pkt, now, d))
                    .unwrap_or((Verdict::Dropped, 0));
                self.cl_mut(slot).drops += dropped;
                if self.leaf_qlen(slot) > 0 {
                    self.activate(slot);
                }
                verdict
            }
        }
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.flush_purged(drops);
        self.resync();
        self.clock = self.clock.max(now);
        let pkt = match self.parked.take() {
            Some(p) => {
                self.qlen -= 1;
                self.backlog -= p.len as u64;
                p
            }
            None => self.dequeue_inner(now, drops)?,
        };
        self.stalled = false;
        self.stats.count_sent(&pkt);
        Some(pkt)
    }

    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        self.flush_purged(drops);
        self.resync();
        self.clock = self.clock.max(now);
        if self.parked.is_none() {
            if let Some(p) = self.dequeue_inner(now, drops) {
                self.qlen += 1;
                self.backlog += p.len as u64;
                self.parked = Some(p);
            }
        }
        self.parked.as_ref()
    }

    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        if self.qlen() == 0 {
            return None;
        }
        if self.dirty || !self.stalled || self.parked.is_some() || !self.direct.is_empty() {
            return Some(now);
        }
        let mut t = self.watchdog;
        for cl in self.non_wc.iter().filter_map(|&s| self.classes[s].as_ref()) {
            if let (true, Some(leaf)) = (cl.non_work_conserving, &cl.leaf) {
                // A leaf that could send now is held back by HTB's own
                // tokens (its class waits for `watchdog`), not by itself:
                // only a later leaf wake-up is one to wait for.
                if let Some(w) = leaf.next_wakeup(now).filter(|w| *w > now) {
                    t = t.min(w);
                }
            }
        }
        Some(t.max(now))
    }

    fn qlen(&self) -> u32 {
        if !self.dirty {
            return self.qlen;
        }
        let leaves: u32 = self
            .classes
            .iter()
            .flatten()
            .filter_map(|c| c.leaf.as_ref())
            .map(|q| q.qlen())
            .sum();
        leaves + self.direct.len() as u32 + self.parked.is_some() as u32
    }

    fn backlog(&self) -> u64 {
        if !self.dirty {
            return self.backlog;
        }
        let leaves: u64 = self
            .classes
            .iter()
            .flatten()
            .filter_map(|c| c.leaf.as_ref())
            .map(|q| q.backlog())
            .sum();
        leaves
            + self.direct.iter().map(|p| p.len as u64).sum::<u64>()
            + self.parked.as_ref().map_or(0, |p| p.len as u64)
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    fn reset(&mut self, drops: &mut Drops) {
        self.flush_purged(drops);
        if let Some(p) = self.parked.take() {
            drops.push(p, DropReason::QdiscReset);
        }
        for p in self.direct.drain(..) {
            drops.push(p, DropReason::QdiscReset);
        }
        for cl in self.classes.iter_mut().flatten() {
            if let Some(leaf) = cl.leaf.as_mut() {
                leaf.reset(drops);
            }
        }
        self.clear_schedule();
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        // htb_walk: the class hash's buckets in order.
        let order: Vec<&Class> = self
            .clhash
            .walk()
            .filter_map(|id| self.ids.get(&id))
            .map(|&s| self.cl(s))
            .collect();
        let mut classes = Vec::with_capacity(order.len());
        let mut children = Vec::new();
        let mut occupancy = vec![QueueOccupancy::of_qdisc(
            QueueId::Direct,
            self.direct.iter(),
            now,
        )];
        occupancy.extend(QueueOccupancy::parked(self.parked.as_ref(), now));
        for cl in order {
            // Default pfifo leaves (handle 0) are invisible in `tc qdisc
            // show`; their frames are listed as the class's leaf queue.
            let child = cl.leaf.as_ref().map(|q| q.dump_listing(now, listing));
            let child = match child {
                Some(d) if d.handle == 0 => {
                    occupancy.extend(lift_hidden_child(d, cl.classid));
                    None
                }
                other => other,
            };
            classes.push(self.class_dump(cl, child.as_ref().map(|d| d.handle)));
            children.extend(child);
        }
        QdiscDump {
            kind: "htb".into(),
            handle: self.ctx.handle,
            parent: self.ctx.parent,
            options: QdiscOptions::Htb(self.options()),
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
        let mut out: Vec<Packet> = self.parked.take().into_iter().collect();
        out.extend(self.direct.drain(..));
        let mut order: Vec<usize> = (0..self.classes.len())
            .filter(|&s| self.classes[s].as_ref().is_some_and(|c| c.leaf.is_some()))
            .collect();
        order.sort_by_key(|&s| self.cl(s).classid);
        for slot in order {
            if let Some(leaf) = self.cl_mut(slot).leaf.as_mut() {
                out.extend(leaf.drain_all());
            }
        }
        self.clear_schedule();
        out
    }
}
