//! QFQ (Linux net/sched/sch_qfq.c; Checconi, Rizzo, Valente, "QFQ: Efficient
//! Packet Scheduling With Tight Guarantees", IEEE/ACM ToN 2013): a flat set of
//! weighted classes, each with a child qdisc (a pfifo by default), scheduled so
//! that backlogged classes get throughput in proportion to their weights.
//!
//! Scheduling is exact WF2Q+ over classes, in place of the kernel's grouped
//! O(1) approximation (the contract is the same): every class is its own
//! aggregate with budget `lmax`. A class has a virtual start S and finish F;
//! the system virtual time V grows by `len / Σweights` per frame sent and
//! jumps to the smallest S when no class is eligible (S ≤ V), so idle time is
//! never credited. The eligible class with the smallest F is put in service
//! and sends while its head frame fits the rest of its `lmax` budget; then it
//! is charged the bytes it actually sent (`F = S + sent/weight`) and, still
//! backlogged, requeued with `S = F`. A class that becomes backlogged starts
//! at `S = max(F, V)`. Timestamps are fixed point with 30 fractional bits, as
//! in the kernel. The backlogged classes out of service wait in two indexed
//! heaps, those not yet eligible by S and the eligible ones by F; V only
//! grows, so a class moves from the first to the second once, and choosing
//! the next class costs O(log n) (the kernel's groups make it O(1)), without
//! allocating once the heaps have held every class.
//!
//! Classification: `skb->priority` naming one of the classes (same major as
//! the qdisc), else the filter chain (`tc filter ... flowid`), else the frame
//! is dropped (`Unclassified`): QFQ has no default class.

use super::fifo::{Fifo, FifoKind};
use super::{
    tc_h_major, tc_h_minor, ClassDump, Classful, FilterHost, FlowListing, Handle, Qdisc, QdiscCtx,
    QdiscDump, QdiscStats, TcError, Verdict, TC_H_ROOT,
};
use super::{ClassOptions, QdiscOptions};
use crate::packet::filter::FilterChain;
use crate::packet::{DropReason, Drops, Packet};
use crate::time::{earliest, Instant};
use priority_queue::PriorityQueue;
use std::cmp::Reverse;

/// Largest class weight.
pub const QFQ_MAX_WEIGHT: u32 = 1 << 10;
/// Largest sum of all class weights.
pub const QFQ_MAX_WSUM: u32 = 64 * QFQ_MAX_WEIGHT;
/// `maxpkt` range.
pub const QFQ_MIN_LMAX: u32 = 512;
/// Largest `maxpkt` (lmax), bytes.
pub const QFQ_MAX_LMAX: u32 = 1 << 16;
/// Fixed point of the virtual times.
const FRAC_BITS: u32 = 30;
const ONE_FP: u128 = 1 << FRAC_BITS;

/// One QFQ class and its scheduling state.
struct Class {
    classid: Handle,
    weight: u32,
    /// `ONE_FP / weight`, the virtual time one byte costs this class.
    inv_w: u128,
    /// `maxpkt`: the class's budget per turn, raised by longer frames.
    lmax: u32,
    child: Box<dyn Qdisc>,
    /// Virtual start and finish times.
    start: u128,
    finish: u128,
    /// Backlogged (known to the scheduler).
    active: bool,
    /// Bytes sent in the current turn (when in service).
    served: u64,
    /// The `select` pass that found the child unable to send (e.g. a
    /// throttled shaper below); such a class is skipped for that pass.
    blocked_pass: u64,
    /// The class's basic counters (`Sent`). As in the kernel, a class counts
    /// a frame when its child accepts it (the qdisc counts at dequeue).
    bytes: u64,
    packets: u64,
}

impl Class {
    fn set_weight(&mut self, weight: u32) {
        self.weight = weight;
        self.inv_w = ONE_FP / weight as u128;
    }
    /// The finish time of a full turn starting at `start`.
    fn full_turn_finish(&self) -> u128 {
        self.start + self.lmax as u128 * self.inv_w
    }
}

/// The QFQ qdisc.
pub struct Qfq {
    ctx: QdiscCtx,
    /// Sorted by classid.
    classes: Vec<Class>,
    filters: FilterChain,
    /// System virtual time V.
    vtime: u128,
    /// Σ weights of all classes, and `ONE_FP / wsum`.
    wsum: u32,
    iwsum: u128,
    /// Index of the class in service.
    in_service: Option<usize>,
    /// Backlogged classes out of service with S > V, smallest (S, classid)
    /// first.
    pending: ClassHeap,
    /// Backlogged classes out of service with S ≤ V, smallest (F, classid)
    /// first.
    eligible: ClassHeap,
    /// Where `first_unblocked` sets aside blocked classes (kept for its
    /// capacity).
    skipped: Vec<(Handle, Reverse<(u128, Handle)>)>,
    select_pass: u64,
    stats: QdiscStats,
}

/// Classes by a virtual time, ties by classid: a min-heap with removal and
/// re-keying by classid.
type ClassHeap = PriorityQueue<Handle, Reverse<(u128, Handle)>>;

/// Which of the scheduler's two heaps.
#[derive(Clone, Copy)]
enum Set {
    Pending,
    Eligible,
}

/// A QFQ class's `TCA_OPTIONS` (`TCA_QFQ_WEIGHT`, `TCA_QFQ_LMAX`, tc's
/// `weight` and `maxpkt`): `None` is an attribute left out, which
/// `qfq_change_class` replaces by its default (weight 1, lmax psched_mtu),
/// on a change too. A dump fills both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QfqClassOptions {
    /// `TCA_QFQ_WEIGHT`, tc's `weight`: 1..=`QFQ_MAX_WEIGHT`; None: 1.
    pub weight: Option<u32>,
    /// `TCA_QFQ_LMAX`, tc's `maxpkt`, bytes: `QFQ_MIN_LMAX`..=`QFQ_MAX_LMAX`;
    /// None: the device's psched_mtu.
    pub lmax: Option<u32>,
}

impl QfqClassOptions {
    /// The attributes of a class request (`ClassOptions::None`: none given),
    /// checked against `qfq_policy`'s ranges (`NLA_POLICY_RANGE`).
    fn from_request(options: &ClassOptions) -> Result<Self, TcError> {
        let o = match options {
            ClassOptions::Qfq(o) => *o,
            ClassOptions::None => QfqClassOptions::default(),
            _ => return Err(TcError::new("Error: qfq: class options of another kind.")),
        };
        let ranges = [
            (o.weight, "weight", 1, QFQ_MAX_WEIGHT),
            (o.lmax, "maxpkt", QFQ_MIN_LMAX, QFQ_MAX_LMAX),
        ];
        for (value, name, lo, hi) in ranges {
            if let Some(n) = value.filter(|n| !(lo..=hi).contains(n)) {
                return Err(TcError::new(format!(
                    "Error: qfq: invalid {name} {n}: allowed {lo}..{hi}."
                )));
            }
        }
        Ok(o)
    }
}

impl Qfq {
    /// An empty QFQ (net/sched/sch_qfq.c `qfq_init`): no classes yet.
    pub fn new(ctx: QdiscCtx) -> Self {
        Qfq {
            ctx,
            classes: Vec::new(),
            filters: FilterChain::new(),
            vtime: 0,
            wsum: 0,
            iwsum: 0,
            in_service: None,
            pending: ClassHeap::new(),
            eligible: ClassHeap::new(),
            skipped: Vec::new(),
            select_pass: 0,
            stats: QdiscStats::default(),
        }
    }

    /// `qfq_init`: QFQ's qdisc has no options.
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, TcError> {
        match options {
            QdiscOptions::None => Ok(Qfq::new(ctx)),
            _ => Err(TcError::new("Error: qfq: options of another kind.")),
        }
    }

    fn find(&self, classid: Handle) -> Result<usize, usize> {
        self.classes.binary_search_by_key(&classid, |c| c.classid)
    }

    fn set_wsum(&mut self, wsum: u32) {
        self.wsum = wsum;
        self.iwsum = if wsum == 0 { 0 } else { ONE_FP / wsum as u128 };
    }

    /// The weight sum after replacing `old` by `new`, checked.
    fn checked_wsum(&self, old: u32, new: u32) -> Result<u32, TcError> {
        let wsum = self.wsum - old + new;
        if wsum > QFQ_MAX_WSUM {
            return Err(TcError::new(format!(
                "Error: qfq: total weight out of range ({} + {}): the sum of all class weights \
                 may not exceed {QFQ_MAX_WSUM}.",
                new as i64 - old as i64,
                self.wsum
            )));
        }
        Ok(wsum)
    }

    /// `maxpkt` as given, else psched_mtu, which must be in range too.
    fn lmax_or_default(&self, lmax: Option<u32>) -> Result<u32, TcError> {
        let mtu = self.ctx.psched_mtu;
        match lmax {
            Some(l) => Ok(l),
            None if (QFQ_MIN_LMAX..=QFQ_MAX_LMAX).contains(&mtu) => Ok(mtu),
            None => Err(TcError::new(format!(
                "Error: qfq: MTU size out of bounds for qfq (psched_mtu {mtu}, allowed \
                 {QFQ_MIN_LMAX}..{QFQ_MAX_LMAX}): give \"maxpkt BYTES\"."
            ))),
        }
    }

    /// skb->priority naming a class, else the filters; `None`: unclassified.
    fn classify(&self, pkt: &mut Packet) -> Option<usize> {
        let prio = pkt.meta.priority;
        if tc_h_major(prio) == tc_h_major(self.ctx.handle) {
            if let Ok(i) = self.find(prio) {
                return Some(i);
            }
        }
        let (flowid, skbedit) = self.filters.classify(&pkt.meta)?;
        if let Some(p) = skbedit {
            pkt.meta.priority = p;
        }
        self.find(flowid).ok()
    }

    /// A class that just became backlogged joins the scheduler, its idle
    /// time not credited.
    fn activate(&mut self, i: usize) {
        let vtime = self.vtime;
        let c = &mut self.classes[i];
        c.start = c.finish.max(vtime);
        c.finish = c.full_turn_finish();
        c.active = true;
        self.schedule(i);
    }

    /// Puts backlogged class `i` (out of service) into its heap.
    fn schedule(&mut self, i: usize) {
        let c = &self.classes[i];
        if c.start <= self.vtime {
            self.eligible
                .push(c.classid, Reverse((c.finish, c.classid)));
        } else {
            self.pending.push(c.classid, Reverse((c.start, c.classid)));
        }
    }

    /// Takes class `i` out of whichever heap holds it.
    fn unschedule(&mut self, i: usize) {
        let classid = self.classes[i].classid;
        if self.eligible.remove(&classid).is_none() {
            self.pending.remove(&classid);
        }
    }

    /// Sets class `i`'s finish time, keeping the eligible heap in order.
    fn set_finish(&mut self, i: usize, finish: u128) {
        let c = &mut self.classes[i];
        c.finish = finish;
        self.eligible
            .change_priority(&c.classid, Reverse((finish, c.classid)));
    }

    /// Ends the turn of class `i`: charges what it sent and requeues it if
    /// it is still backlogged.
    fn end_turn(&mut self, i: usize) {
        if self.in_service == Some(i) {
            self.in_service = None;
        } else {
            self.unschedule(i);
        }
        let c = &mut self.classes[i];
        c.finish = c.start + c.served as u128 * c.inv_w;
        c.served = 0;
        if c.child.qlen() > 0 {
            c.start = c.finish;
            c.finish = c.full_turn_finish();
            self.schedule(i);
        } else {
            c.active = false;
        }
    }

    /// The eligible class with the smallest finish time, after moving V up
    /// to the smallest start when none is eligible; taken out of its heap.
    /// Classes found blocked in this `select` pass are passed over.
    fn pick(&mut self) -> Option<usize> {
        self.promote();
        let (_, classid) = match self.first_unblocked(Set::Eligible) {
            Some(key) => key,
            None => {
                let (start, _) = self.first_unblocked(Set::Pending)?;
                self.vtime = self.vtime.max(start);
                self.promote();
                self.first_unblocked(Set::Eligible)?
            }
        };
        self.eligible.remove(&classid);
        self.find(classid).ok()
    }

    /// Moves the pending classes whose start V has reached to the eligible
    /// heap.
    fn promote(&mut self) {
        while let Some((_, &Reverse((start, _)))) = self.pending.peek() {
            if start > self.vtime {
                break;
            }
            let Some((classid, _)) = self.pending.pop() else {
                break;
            };
            if let Ok(i) = self.find(classid) {
                self.eligible
                    .push(classid, Reverse((self.classes[i].finish, classid)));
            }
        }
    }

    /// The smallest key of a heap whose class was not found blocked in this
    /// `select` pass (blocked ones are popped aside and put back).
    fn first_unblocked(&mut self, set: Set) -> Option<(u128, Handle)> {
        let (classes, pass) = (&self.classes, self.select_pass);
        let heap = match set {
            Set::Pending => &mut self.pending,
            Set::Eligible => &mut self.eligible,
        };
        let found = loop {
            let Some((&classid, &Reverse(key))) = heap.peek() else {
                break None;
            };
            let blocked = classes
                .binary_search_by_key(&classid, |c| c.classid)
                .is_ok_and(|i| classes[i].blocked_pass == pass);
            if !blocked {
                break Some(key);
            }
            self.skipped.extend(heap.pop());
        };
        for (classid, key) in self.skipped.drain(..) {
            heap.push(classid, key);
        }
        found
    }

    /// The class whose head frame is next, with its turn started. Shared by
    /// `peek` and `dequeue`, so both see the same frame.
    fn select(&mut self, now: Instant, drops: &mut Drops) -> Option<usize> {
        self.select_pass += 1;
        loop {
            if let Some(i) = self.in_service {
                let before = drops.len();
                let head = self.classes[i].child.peek(now, drops).map(|p| p.len);
                self.stats.drops += (drops.len() - before) as u64;
                let c = &mut self.classes[i];
                match head {
                    // A fresh turn always sends its head (lmax may have been
                    // lowered below a queued frame by `tc class change`).
                    Some(len) if c.served == 0 || c.served + len as u64 <= c.lmax as u64 => {
                        return Some(i)
                    }
                    Some(_) => {}
                    None => c.blocked_pass = self.select_pass,
                }
                self.end_turn(i);
            }
            let next = self.pick()?;
            self.classes[next].served = 0;
            self.in_service = Some(next);
        }
    }

    /// Raises a class's lmax to fit a longer frame.
    fn raise_lmax(&mut self, i: usize, len: u32) {
        let in_service = self.in_service == Some(i);
        let c = &mut self.classes[i];
        c.lmax = len;
        if c.active && !in_service {
            let finish = c.full_turn_finish();
            self.set_finish(i, finish);
        }
    }

    /// Takes every class out of the scheduler (their children were just
    /// emptied by `reset` or `drain_all`).
    fn forget_schedule(&mut self) {
        self.in_service = None;
        self.pending.clear();
        self.eligible.clear();
        for c in &mut self.classes {
            c.active = false;
            c.served = 0;
        }
    }

    /// A class as `tc class show` prints it; `child` is its qdisc's dump.
    fn class_dump(c: &Class, child: &QdiscDump) -> ClassDump {
        ClassDump {
            kind: "qfq".into(),
            classid: c.classid,
            parent: TC_H_ROOT,
            leaf: (child.handle != 0).then_some(child.handle),
            options: ClassOptions::Qfq(QfqClassOptions {
                weight: Some(c.weight),
                lmax: Some(c.lmax),
            }),
            stats: Some(QdiscStats {
                bytes: c.bytes,
                packets: c.packets,
                ..child.stats
            }),
            ..ClassDump::default()
        }
    }
}

impl Qdisc for Qfq {
    fn kind(&self) -> &'static str {
        "qfq"
    }

    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        let Some(i) = self.classify(&mut pkt) else {
            return self.stats.reject(pkt, DropReason::Unclassified, drops);
        };
        if pkt.len > self.classes[i].lmax {
            if pkt.len > QFQ_MAX_LMAX {
                return self.stats.reject(pkt, DropReason::Oversize, drops);
            }
            self.raise_lmax(i, pkt.len);
        }
        let (len, segs) = (pkt.len, pkt.segs());
        let before = drops.len();
        let verdict = self.classes[i].child.enqueue(pkt, now, drops);
        self.stats.drops += (drops.len() - before) as u64;
        if verdict == Verdict::Queued {
            self.classes[i].bytes += len as u64;
            self.classes[i].packets += segs as u64;
        }
        if !self.classes[i].active && self.classes[i].child.qlen() > 0 {
            self.activate(i);
        }
        verdict
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        let i = self.select(now, drops)?;
        let before = drops.len();
        let pkt = self.classes[i].child.dequeue(now, drops);
        self.stats.drops += (drops.len() - before) as u64;
        let Some(pkt) = pkt else {
            // The child showed a head at peek but released nothing.
            self.end_turn(i);
            return None;
        };
        self.classes[i].served += pkt.len as u64;
        self.vtime += pkt.len as u128 * self.iwsum;
        self.stats.count_sent(&pkt);
        if self.classes[i].child.qlen() == 0 {
            self.end_turn(i);
        }
        Some(pkt)
    }

    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        let i = self.select(now, drops)?;
        self.classes[i].child.peek(now, drops)
    }

    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        self.classes
            .iter()
            .filter(|c| c.child.qlen() > 0)
            .fold(None, |acc, c| earliest(acc, c.child.next_wakeup(now)))
    }

    fn qlen(&self) -> u32 {
        self.classes.iter().map(|c| c.child.qlen()).sum()
    }

    fn backlog(&self) -> u64 {
        self.classes.iter().map(|c| c.child.backlog()).sum()
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    fn reset(&mut self, drops: &mut Drops) {
        for c in &mut self.classes {
            c.child.reset(drops);
        }
        self.forget_schedule();
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let children: Vec<QdiscDump> = self
            .classes
            .iter()
            .map(|c| c.child.dump_listing(now, listing))
            .collect();
        QdiscDump {
            kind: "qfq".into(),
            handle: self.ctx.handle,
            parent: self.ctx.parent,
            stats: self.stats(),
            classes: self
                .classes
                .iter()
                .zip(&children)
                .map(|(c, child)| Qfq::class_dump(c, child))
                .collect(),
            children,
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
        let frames = self
            .classes
            .iter_mut()
            .flat_map(|c| c.child.drain_all())
            .collect();
        self.forget_schedule();
        frames
    }
}

impl FilterHost for Qfq {
    fn filter_qdisc(&self) -> Handle {
        self.ctx.handle
    }

    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, TcError> {
        super::own_chain(&mut self.filters, "qfq", parent)
    }
}

impl Classful for Qfq {
    fn add_class(
        &mut self,
        classid: Handle,
        parent: Handle,
        options: &ClassOptions,
    ) -> Result<(), TcError> {
        let major = tc_h_major(self.ctx.handle);
        if parent != TC_H_ROOT && parent != self.ctx.handle {
            return Err(TcError::new(format!(
                "Error: qfq classes are flat: parent must be {major:x}: (got {:x}:{:x}).",
                tc_h_major(parent),
                tc_h_minor(parent)
            )));
        }
        if tc_h_major(classid) != major || tc_h_minor(classid) == 0 {
            return Err(TcError::new(format!(
                "Error: invalid classid {:x}:{:x}: use {major:x}:N with N 1..ffff.",
                tc_h_major(classid),
                tc_h_minor(classid)
            )));
        }
        let Err(pos) = self.find(classid) else {
            return Err(TcError::new(format!(
                "Error: class {major:x}:{:x} already exists (use tc class change).",
                tc_h_minor(classid)
            )));
        };
        let opts = QfqClassOptions::from_request(options)?;
        let weight = opts.weight.unwrap_or(1);
        let lmax = self.lmax_or_default(opts.lmax)?;
        let wsum = self.checked_wsum(0, weight)?;
        let child = Fifo::new(FifoKind::Pfifo, self.child_ctx(0, classid));
        let mut class = Class {
            classid,
            weight,
            inv_w: 0,
            lmax,
            child: Box::new(child),
            start: 0,
            finish: 0,
            active: false,
            served: 0,
            blocked_pass: 0,
            bytes: 0,
            packets: 0,
        };
        class.set_weight(weight);
        self.classes.insert(pos, class);
        if let Some(s) = self.in_service.as_mut() {
            *s += (*s >= pos) as usize;
        }
        self.set_wsum(wsum);
        Ok(())
    }

    /// Like the kernel, an option left out of `tc class change` returns to
    /// its default (weight 1, maxpkt psched_mtu).
    fn change_class(&mut self, classid: Handle, options: &ClassOptions) -> Result<(), TcError> {
        let i = self.find(classid).map_err(|_| {
            TcError::new(format!(
                "Error: class {:x}:{:x} does not exist.",
                tc_h_major(classid),
                tc_h_minor(classid)
            ))
        })?;
        let opts = QfqClassOptions::from_request(options)?;
        let weight = opts.weight.unwrap_or(1);
        let lmax = self.lmax_or_default(opts.lmax)?;
        let wsum = self.checked_wsum(self.classes[i].weight, weight)?;
        self.set_wsum(wsum);
        let in_service = self.in_service == Some(i);
        let c = &mut self.classes[i];
        c.set_weight(weight);
        c.lmax = lmax;
        if c.active && !in_service {
            let finish = c.full_turn_finish();
            self.set_finish(i, finish);
        }
        Ok(())
    }

    /// Purges the class's frames (`QdiscReset`, counted as qdisc drops) and
    /// frees its weight. Like the kernel, refuses while a filter points to
    /// the class.
    fn delete_class(&mut self, classid: Handle, drops: &mut Drops) -> Result<(), TcError> {
        let i = self.find(classid).map_err(|_| {
            TcError::new(format!(
                "Error: class {:x}:{:x} does not exist.",
                tc_h_major(classid),
                tc_h_minor(classid)
            ))
        })?;
        if self.filters.targets(classid) {
            return Err(TcError::new(format!(
                "Error: qfq: QFQ class in use: filters send frames to {:x}:{:x}; delete them \
                 first (tc filter del ... prio N).",
                tc_h_major(classid),
                tc_h_minor(classid)
            )));
        }
        if self.in_service == Some(i) {
            self.in_service = None;
        } else if self.classes[i].active {
            self.unschedule(i);
        }
        let mut class = self.classes.remove(i);
        if let Some(s) = self.in_service.as_mut() {
            *s -= (*s > i) as usize;
        }
        let before = drops.len();
        class.child.reset(drops);
        self.stats.drops += (drops.len() - before) as u64;
        self.set_wsum(self.wsum - class.weight);
        Ok(())
    }

    /// Replaces the class's qdisc. The old one is returned with whatever it
    /// still holds; the caller drains or resets it.
    fn graft(
        &mut self,
        classid: Handle,
        child: Box<dyn Qdisc>,
    ) -> Result<Option<Box<dyn Qdisc>>, TcError> {
        let i = self.find(classid).map_err(|_| {
            TcError::new(format!(
                "Error: class {:x}:{:x} does not exist.",
                tc_h_major(classid),
                tc_h_minor(classid)
            ))
        })?;
        let old = std::mem::replace(&mut self.classes[i].child, child);
        let c = &self.classes[i];
        if self.in_service == Some(i) || (c.active && c.child.qlen() == 0) {
            self.end_turn(i);
        } else if !c.active && c.child.qlen() > 0 {
            self.activate(i);
        }
        Ok(Some(old))
    }

    fn child_mut(&mut self, classid: Handle) -> Option<&mut Box<dyn Qdisc>> {
        let i = self.find(classid).ok()?;
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
mod tests {
    use super::*;
    use crate::qdisc::testutil::{flow_pkt, pkt};
    use crate::qdisc::{tc_h_major, tc_h_make};

    const H: Handle = 0x0001_0000;

    fn ctx() -> QdiscCtx {
        QdiscCtx {
            handle: H,
            ..QdiscCtx::default()
        }
    }

    fn cid(minor: u16) -> Handle {
        tc_h_make(1, minor)
    }

    /// A frame steered to class 1:`minor` by skb->priority.
    fn to_class(id: u64, len: u32, minor: u16) -> Packet {
        let mut p = flow_pkt(id, len, minor);
        p.meta.priority = cid(minor);
        p
    }

    /// A class's attributes (`None`: left out).
    fn copts(weight: Option<u32>, lmax: Option<u32>) -> ClassOptions {
        ClassOptions::Qfq(QfqClassOptions { weight, lmax })
    }

    /// Weight `w`, lmax left out.
    fn w(weight: u32) -> ClassOptions {
        copts(Some(weight), None)
    }

    /// Both attributes left out.
    fn dflt() -> ClassOptions {
        copts(None, None)
    }

    fn qfq_with(classes: &[(u16, ClassOptions)]) -> Qfq {
        let mut q = Qfq::build(ctx(), &QdiscOptions::None).unwrap();
        for (minor, options) in classes {
            q.add_class(cid(*minor), H, options).unwrap();
        }
        q
    }

    /// Keeps every class backlogged with frames of `len_of(class, n)` and
    /// returns the bytes each class sent in `rounds` dequeues.
    fn run_backlogged(
        q: &mut Qfq,
        minors: &[u16],
        rounds: usize,
        mut len_of: impl FnMut(u16, u64) -> u32,
    ) -> Vec<u64> {
        let mut d = Drops::new();
        let t = Instant::ZERO;
        let mut id = 0;
        for &m in minors {
            for _ in 0..20 {
                id += 1;
                q.enqueue(to_class(id, len_of(m, id), m), t, &mut d);
            }
        }
        let mut bytes = vec![0u64; minors.len()];
        for _ in 0..rounds {
            let p = q.dequeue(t, &mut d).expect("backlogged");
            let k = minors
                .iter()
                .position(|&m| cid(m) == p.meta.priority)
                .unwrap();
            bytes[k] += p.len as u64;
            id += 1;
            q.enqueue(to_class(id, len_of(minors[k], id), minors[k]), t, &mut d);
        }
        assert!(d.is_empty());
        bytes
    }

    fn assert_shares(bytes: &[u64], weights: &[u64], tolerance: f64) {
        let total: u64 = bytes.iter().sum();
        let wsum: u64 = weights.iter().sum();
        for (b, w) in bytes.iter().zip(weights) {
            let share = *b as f64 / total as f64;
            let ideal = *w as f64 / wsum as f64;
            assert!(
                (share / ideal - 1.0).abs() < tolerance,
                "share {share:.4} vs ideal {ideal:.4} (bytes {bytes:?})"
            );
        }
    }

    #[test]
    fn weights_1_2_4_share_throughput() {
        let mut q = qfq_with(&[(1, w(1)), (2, w(2)), (3, w(4))]);
        let bytes = run_backlogged(&mut q, &[1, 2, 3], 70_000, |_, _| 1000);
        assert_shares(&bytes, &[1, 2, 4], 0.02);
    }

    #[test]
    fn two_hundred_classes_with_mixed_weights_share_by_weight() {
        let minors: Vec<u16> = (1..=200).collect();
        let weights: Vec<u64> = minors.iter().map(|&m| 1 + (m as u64 * 7) % 8).collect();
        let spec: Vec<(u16, ClassOptions)> = minors
            .iter()
            .zip(&weights)
            .map(|(&m, &weight)| (m, w(weight as u32)))
            .collect();
        let mut q = qfq_with(&spec);
        // Sizes differ per class and per frame, so the eligible order keeps
        // changing.
        let bytes = run_backlogged(&mut q, &minors, 400_000, |m, n| {
            200 + ((m as u64 * 131 + n * 17) % 1300) as u32
        });
        assert_shares(&bytes, &weights, 0.03);
    }

    #[test]
    fn mixed_sizes_share_bytes_not_packets() {
        // Class 1 sends 1514 B frames, class 2 random 64..1514 B: equal
        // weights give equal bytes.
        let mut rng = 0x1234_5678u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut q = qfq_with(&[(1, dflt()), (2, dflt())]);
        let bytes = run_backlogged(&mut q, &[1, 2], 50_000, |m, _| {
            if m == 1 {
                1514
            } else {
                64 + (next() % 1451) as u32
            }
        });
        assert_shares(&bytes, &[1, 1], 0.02);
        // And 1:3 with both classes of mixed sizes.
        let mut q = qfq_with(&[(1, w(1)), (2, w(3))]);
        let bytes = run_backlogged(&mut q, &[1, 2], 60_000, |_, _| 64 + (next() % 1451) as u32);
        assert_shares(&bytes, &[1, 3], 0.02);
    }

    #[test]
    fn service_lag_is_bounded_by_a_few_lmax() {
        let mut q = qfq_with(&[(1, w(1)), (2, w(2)), (3, w(4))]);
        let mut d = Drops::new();
        let t = Instant::ZERO;
        let minors = [1u16, 2, 3];
        let weights = [1.0, 2.0, 4.0];
        let mut id = 0;
        for &m in &minors {
            for _ in 0..10 {
                id += 1;
                q.enqueue(to_class(id, 1514, m), t, &mut d);
            }
        }
        let mut sent = [0f64; 3];
        let mut total = 0f64;
        let mut worst = 0f64;
        for _ in 0..10_000 {
            let p = q.dequeue(t, &mut d).unwrap();
            let k = minors
                .iter()
                .position(|&m| cid(m) == p.meta.priority)
                .unwrap();
            sent[k] += p.len as f64;
            total += p.len as f64;
            for k in 0..3 {
                let lag = (total * weights[k] / 7.0 - sent[k]).abs();
                worst = worst.max(lag);
            }
            id += 1;
            q.enqueue(to_class(id, 1514, minors[k]), t, &mut d);
        }
        assert!(worst <= 2.0 * 1514.0, "worst lag {worst} bytes");
    }

    #[test]
    fn idle_time_is_not_credited() {
        let mut q = qfq_with(&[(1, dflt()), (2, dflt())]);
        let mut d = Drops::new();
        let t = Instant::ZERO;
        // Class 1 alone for a long while.
        for id in 0..1000 {
            q.enqueue(to_class(id, 1000, 1), t, &mut d);
            assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, id);
        }
        // Both backlogged: class 2 gets its share, not a catch-up burst.
        for id in 0..100 {
            q.enqueue(to_class(10_000 + id, 1000, 1), t, &mut d);
            q.enqueue(to_class(20_000 + id, 1000, 2), t, &mut d);
        }
        let first: Vec<u64> = (0..20)
            .map(|_| q.dequeue(t, &mut d).unwrap().meta.id)
            .collect();
        let from_2 = first.iter().filter(|&&id| id >= 20_000).count();
        assert!(
            (9..=11).contains(&from_2),
            "class 2 sent {from_2} of 20: {first:?}"
        );
    }

    #[test]
    fn longer_frame_raises_lmax_and_giant_is_dropped() {
        let mut q = qfq_with(&[(1, copts(None, Some(512)))]);
        let mut d = Drops::new();
        let t = Instant::ZERO;
        assert_eq!(q.enqueue(to_class(1, 3000, 1), t, &mut d), Verdict::Queued);
        assert_eq!(q.dump(t).classes[0].options, copts(Some(1), Some(3000)));
        assert_eq!(
            q.enqueue(to_class(2, 70_000, 1), t, &mut d),
            Verdict::Dropped
        );
        assert_eq!(d.since(0)[0].1, DropReason::Oversize);
        assert_eq!(q.stats().drops, 1);
        assert_eq!(q.dequeue(t, &mut d).unwrap().len, 3000);
    }

    #[test]
    fn unclassified_frames_are_dropped() {
        let mut q = qfq_with(&[(1, dflt())]);
        let mut d = Drops::new();
        let t = Instant::ZERO;
        // priority 0 and no filter.
        assert_eq!(q.enqueue(pkt(1, 100), t, &mut d), Verdict::Dropped);
        // priority naming a missing class of this qdisc.
        assert_eq!(q.enqueue(to_class(2, 100, 9), t, &mut d), Verdict::Dropped);
        // priority of another qdisc's class.
        let mut p = pkt(3, 100);
        p.meta.priority = tc_h_make(2, 1);
        assert_eq!(q.enqueue(p, t, &mut d), Verdict::Dropped);
        assert!(d
            .since(0)
            .iter()
            .all(|(_, r)| *r == DropReason::Unclassified));
        let s = q.stats();
        assert_eq!((s.drops, s.qlen), (3, 0));
        assert!(q.dequeue(t, &mut d).is_none());
    }

    #[test]
    fn filters_classify_and_skbedit_sets_priority() {
        let mut q = qfq_with(&[(1, dflt()), (2, dflt())]);
        use crate::packet::filter::{Family, Field, Filter, FilterKind, FilterProtocol, Match};
        // parent 1: protocol all prio 1 u32 match ip dport 5001 0xffff flowid 1:2
        let dport = Match::new(Family::V4, Field::Dport, 5001, 0xffff);
        q.add_filter(Filter {
            parent: Some(H),
            prio: 1,
            ..Filter::new(FilterProtocol::All, FilterKind::U32, vec![dport], cid(2))
        })
        .unwrap();
        // parent 1: protocol all prio 2 matchall flowid 1:1 action skbedit priority 5
        q.add_filter(Filter {
            parent: Some(H),
            prio: 2,
            skbedit_priority: Some(5),
            ..Filter::new(
                FilterProtocol::All,
                FilterKind::Matchall,
                Vec::new(),
                cid(1),
            )
        })
        .unwrap();
        let mut d = Drops::new();
        let t = Instant::ZERO;
        let mut ip = pkt(1, 100);
        ip.meta.l3 = crate::packet::L3::Ipv4 { offset: 14 };
        q.enqueue(ip, t, &mut d);
        q.enqueue(pkt(2, 100), t, &mut d); // non-IP: matchall
        assert!(d.is_empty());
        let dump = q.dump(t);
        assert_eq!(dump.classes[0].stats.unwrap().qlen, 1);
        assert_eq!(dump.classes[1].stats.unwrap().qlen, 1);
        let mut out: Vec<Packet> = (0..2).map(|_| q.dequeue(t, &mut d).unwrap()).collect();
        out.sort_by_key(|p| p.meta.id);
        assert_eq!(out[0].meta.priority, 0);
        assert_eq!(out[1].meta.priority, 5, "skbedit");
        // skb->priority selects before the filters do.
        q.enqueue(to_class(3, 100, 2), t, &mut d);
        assert_eq!(q.dump(t).classes[1].stats.unwrap().qlen, 1);
        // A class filters point to cannot be deleted until they go.
        let e = q.delete_class(cid(2), &mut d).unwrap_err().0;
        assert!(e.contains("QFQ class in use"), "{e}");
        assert_eq!(q.filters.filters().len(), 2);
        assert_eq!(q.chain_mut(None).unwrap().delete(Some(1)), 1);
        q.delete_class(cid(2), &mut d).unwrap();
        assert!(q
            .filters
            .filters()
            .iter()
            .any(|f| f.kind == FilterKind::Matchall));
        assert_eq!(q.chain_mut(Some(H)).unwrap().delete(None), 1);
        let e = q.chain_mut(Some(cid(1))).unwrap_err().0;
        assert!(
            e.contains("Invalid argument") && e.contains("parent 1:"),
            "{e}"
        );
    }

    #[test]
    fn child_drops_count_in_the_qdisc() {
        let mut q = Qfq::new(QdiscCtx {
            txqueuelen: 2,
            ..ctx()
        });
        q.add_class(cid(1), H, &dflt()).unwrap();
        let mut d = Drops::new();
        let t = Instant::ZERO;
        for id in 0..5 {
            q.enqueue(to_class(id, 100, 1), t, &mut d);
        }
        assert_eq!(d.len(), 3);
        let s = q.stats();
        assert_eq!((s.drops, s.qlen, s.backlog), (3, 2, 200));
        let c = q.dump(t).classes[0].stats.unwrap();
        assert_eq!((c.drops, c.qlen, c.backlog), (3, 2, 200));
    }

    #[test]
    fn delete_class_drops_its_frames_and_frees_weight() {
        let mut q = qfq_with(&[(1, w(1024)), (2, w(1024))]);
        for m in 3..=64 {
            q.add_class(cid(m), H, &w(1024)).unwrap();
        }
        assert!(q
            .add_class(cid(65), H, &w(1))
            .unwrap_err()
            .0
            .contains("total weight"));
        let mut d = Drops::new();
        let t = Instant::ZERO;
        for id in 0..4 {
            q.enqueue(to_class(id, 100, 1), t, &mut d);
            q.enqueue(to_class(10 + id, 100, 2), t, &mut d);
        }
        // Put class 1 or 2 in service, then delete both in turn.
        let first = q.dequeue(t, &mut d).unwrap();
        q.delete_class(first.meta.priority, &mut d).unwrap();
        assert_eq!(d.len(), 3);
        assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::QdiscReset));
        assert_eq!(q.stats().drops, 3);
        assert_eq!(q.qlen(), 4);
        for _ in 0..4 {
            let p = q.dequeue(t, &mut d).unwrap();
            assert_ne!(p.meta.priority, first.meta.priority);
        }
        assert!(q.dequeue(t, &mut d).is_none());
        q.add_class(cid(65), H, &w(1024)).unwrap();
        assert!(q.delete_class(cid(99), &mut d).is_err());
        // Frames for the deleted class are now unclassified.
        assert_eq!(
            q.enqueue(
                to_class(50, 100, tc_h_minor(first.meta.priority)),
                t,
                &mut d
            ),
            Verdict::Dropped
        );
    }

    #[test]
    fn delete_before_the_class_in_service_keeps_scheduling() {
        let mut q = qfq_with(&[(1, dflt()), (2, dflt()), (3, dflt())]);
        let mut d = Drops::new();
        let t = Instant::ZERO;
        for id in 0..3 {
            q.enqueue(to_class(id, 600, 3), t, &mut d);
        }
        q.enqueue(to_class(9, 600, 1), t, &mut d);
        // Class 1 or 3 is in service; delete class 2 (an index shift).
        q.dequeue(t, &mut d).unwrap();
        q.delete_class(cid(2), &mut d).unwrap();
        let mut left = 0;
        while q.dequeue(t, &mut d).is_some() {
            left += 1;
        }
        assert_eq!(left, 3);
        assert_eq!(q.qlen(), 0);
    }

    #[test]
    fn graft_replaces_the_child() {
        let mut q = qfq_with(&[(1, dflt()), (2, dflt())]);
        let mut d = Drops::new();
        let t = Instant::ZERO;
        for id in 0..3 {
            q.enqueue(to_class(id, 100, 1), t, &mut d);
        }
        let new_ctx = q.child_ctx(tc_h_make(0x10, 0), cid(1));
        let new = Fifo::with_limit(FifoKind::Pfifo, new_ctx, 1);
        let old = q.graft(cid(1), Box::new(new)).unwrap().unwrap();
        assert_eq!(old.qlen(), 3, "old child keeps its frames for the caller");
        assert_eq!(q.qlen(), 0);
        assert!(q.dequeue(t, &mut d).is_none());
        q.enqueue(to_class(5, 100, 1), t, &mut d);
        assert_eq!(q.enqueue(to_class(6, 100, 1), t, &mut d), Verdict::Dropped);
        assert_eq!(q.stats().drops, 1);
        let dump = q.dump(t);
        assert_eq!(dump.classes[0].leaf, Some(tc_h_make(0x10, 0)));
        assert_eq!(dump.classes[1].leaf, None);
        assert_eq!(
            dump.children[0].options,
            crate::qdisc::QdiscOptions::Fifo(crate::qdisc::fifo::FifoOptions { limit: 1 })
        );
        assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, 5);
        assert!(q
            .graft(cid(7), Box::new(Fifo::new(FifoKind::Pfifo, new_ctx)))
            .is_err());
        // Grafting a non-empty child activates the class.
        let mut full = Fifo::new(FifoKind::Pfifo, new_ctx);
        full.enqueue(to_class(7, 100, 2), t, &mut d);
        q.graft(cid(2), Box::new(full)).unwrap();
        assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, 7);
        assert!(q.child_mut(cid(2)).is_some());
        assert_eq!(q.children_mut().len(), 2);
    }

    #[test]
    fn dump_prints_like_tc() {
        let mut q = qfq_with(&[(1, dflt()), (0x20, copts(Some(10), Some(2000)))]);
        let mut d = Drops::new();
        let t = Instant::ZERO;
        q.enqueue(to_class(1, 500, 0x20), t, &mut d);
        q.enqueue(to_class(2, 700, 0x20), t, &mut d);
        q.dequeue(t, &mut d).unwrap();
        let dump = q.dump(t);
        assert_eq!(
            (dump.kind.as_str(), dump.handle, dump.parent),
            ("qfq", H, TC_H_ROOT)
        );
        assert_eq!(dump.options, QdiscOptions::None);
        let c = &dump.classes[1];
        assert_eq!(
            (c.kind.as_str(), c.classid, c.parent, c.leaf),
            ("qfq", cid(0x20), TC_H_ROOT, None)
        );
        assert_eq!(c.options, copts(Some(10), Some(2000)));
        let s = c.stats.unwrap();
        // The class counts at enqueue, the qdisc at dequeue.
        assert_eq!((s.bytes, s.packets, s.qlen, s.backlog), (1200, 2, 1, 700));
        assert_eq!(dump.classes[0].options, copts(Some(1), Some(1514)));
        assert_eq!(dump.children.len(), 2);
        assert_eq!(dump.children[1].kind, "pfifo");
        assert_eq!(
            (dump.children[1].handle, dump.children[1].parent),
            (0, cid(0x20))
        );
        assert_eq!(
            dump.children[1].options,
            crate::qdisc::QdiscOptions::Fifo(crate::qdisc::fifo::FifoOptions { limit: 1000 })
        );
        assert_eq!(
            (dump.stats.bytes, dump.stats.packets, dump.stats.backlog),
            (500, 1, 700)
        );
    }

    #[test]
    fn class_options_are_validated() {
        let mut q = qfq_with(&[]);
        // (The words tc refuses before sending: crate::tc::opts::qfq.)
        let bad = [
            (cid(1), H, w(0), "invalid weight 0"),
            (cid(1), H, w(1025), "1..1024"),
            (cid(1), H, copts(None, Some(511)), "512..65536"),
            (cid(1), H, copts(None, Some(65537)), "65537"),
            (tc_h_make(2, 1), H, dflt(), "2:1"),
            (cid(0), H, dflt(), "1:0"),
            (cid(1), cid(5), dflt(), "flat"),
        ];
        for (classid, parent, options, needle) in bad {
            let e = q.add_class(classid, parent, &options).unwrap_err().0;
            assert!(e.contains(needle), "{options:?}: {e}");
        }
        assert!(q.classes.is_empty());
        let mut tiny = Qfq::new(QdiscCtx {
            psched_mtu: 300,
            ..ctx()
        });
        let e = tiny.add_class(cid(1), H, &dflt()).unwrap_err().0;
        assert!(e.contains("MTU size out of bounds"), "{e}");
        tiny.add_class(cid(1), H, &copts(None, Some(512))).unwrap();
        q.add_class(cid(1), TC_H_ROOT, &copts(Some(1024), Some(65536)))
            .unwrap();
        assert!(q
            .add_class(cid(1), H, &dflt())
            .unwrap_err()
            .0
            .contains("already exists"));
        // No ClassOptions at all: the defaults.
        q.add_class(cid(2), H, &ClassOptions::None).unwrap();
        assert_eq!(tc_h_major(q.classes[0].classid), 1);
    }

    #[test]
    fn change_class_reweights_at_runtime() {
        let mut q = qfq_with(&[(1, w(1)), (2, w(1))]);
        let bytes = run_backlogged(&mut q, &[1, 2], 10_000, |_, _| 1000);
        assert_shares(&bytes, &[1, 1], 0.02);
        q.change_class(cid(2), &w(3)).unwrap();
        let bytes = run_backlogged(&mut q, &[1, 2], 40_000, |_, _| 1000);
        assert_shares(&bytes, &[1, 3], 0.02);
        // Omitted options go back to the defaults, as in the kernel.
        q.change_class(cid(2), &copts(None, Some(4000))).unwrap();
        assert_eq!(
            q.dump(Instant::ZERO).classes[1].options,
            copts(Some(1), Some(4000))
        );
        assert!(q.change_class(cid(9), &dflt()).is_err());
        assert!(q.change_class(cid(1), &w(2000)).is_err());
        // Lowering maxpkt below queued frames does not stall them.
        q.change_class(cid(1), &copts(None, Some(512))).unwrap();
        q.change_class(cid(2), &copts(None, Some(512))).unwrap();
        let mut d = Drops::new();
        let mut n = 0;
        while q.dequeue(Instant::ZERO, &mut d).is_some() {
            n += 1;
        }
        assert_eq!(n, 80);
    }

    #[test]
    fn peek_shows_what_dequeue_returns() {
        let mut q = qfq_with(&[(1, w(1)), (2, w(3))]);
        let mut d = Drops::new();
        let t = Instant::ZERO;
        for id in 0..30 {
            q.enqueue(
                to_class(id, 300 + (id as u32 % 7) * 100, 1 + (id % 2) as u16),
                t,
                &mut d,
            );
        }
        while let Some(id) = q.peek(t, &mut d).map(|p| p.meta.id) {
            assert_eq!(q.peek(t, &mut d).unwrap().meta.id, id);
            assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, id);
        }
        assert_eq!(q.qlen(), 0);
    }

    #[test]
    fn reset_and_drain_all_empty_every_class() {
        let mut q = qfq_with(&[(1, dflt()), (2, dflt())]);
        let mut d = Drops::new();
        let t = Instant::ZERO;
        for id in 0..6 {
            q.enqueue(to_class(id, 100, 1 + (id % 2) as u16), t, &mut d);
        }
        q.dequeue(t, &mut d).unwrap();
        let drained = q.drain_all();
        assert_eq!(drained.len(), 5);
        assert_eq!((q.qlen(), q.backlog()), (0, 0));
        assert!(q.dequeue(t, &mut d).is_none());
        for id in 10..14 {
            q.enqueue(to_class(id, 100, 1), t, &mut d);
        }
        q.reset(&mut d);
        assert_eq!(d.len(), 4);
        assert_eq!(q.qlen(), 0);
        // Counters survive a reset.
        assert_eq!(q.stats().packets, 1);
        q.enqueue(to_class(20, 100, 2), t, &mut d);
        assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, 20);
    }

    #[test]
    fn fifo_order_within_a_class() {
        let mut q = qfq_with(&[(1, dflt()), (2, w(7))]);
        let mut d = Drops::new();
        let t = Instant::ZERO;
        for id in 0..200 {
            q.enqueue(
                to_class(id, 64 + (id as u32 * 37) % 1400, 1 + (id % 2) as u16),
                t,
                &mut d,
            );
        }
        let mut last = [None::<u64>; 2];
        while let Some(p) = q.dequeue(t, &mut d) {
            let k = (p.meta.id % 2) as usize;
            assert!(last[k].is_none_or(|l| l < p.meta.id));
            last[k] = Some(p.meta.id);
        }
    }

    proptest::proptest! {
        #[test]
        fn random_operations_conserve_frames(
            ops in proptest::collection::vec((0u8..8, 0u16..6, 60u32..3000), 1..300)
        ) {
            let mut q = Qfq::new(QdiscCtx { txqueuelen: 5, ..ctx() });
            let mut d = Drops::new();
            let t = Instant::ZERO;
            let (mut offered, mut sent) = (0u64, 0u64);
            for (id, (op, minor, len)) in ops.into_iter().enumerate() {
                match op {
                    0..=3 => {
                        offered += 1;
                        q.enqueue(to_class(id as u64, len, minor), t, &mut d);
                    }
                    4 | 5 => sent += q.dequeue(t, &mut d).is_some() as u64,
                    6 => {
                        let _ = q.add_class(cid(minor), H, &w(len % 1024 + 1));
                    }
                    _ => {
                        let _ = q.delete_class(cid(minor), &mut d);
                    }
                }
                let held = q.qlen() as u64;
                proptest::prop_assert_eq!(offered, sent + d.len() as u64 + held);
                proptest::prop_assert_eq!(q.stats().drops, d.len() as u64);
                proptest::prop_assert_eq!(q.stats().packets, sent);
                let backlog: u64 = q.classes.iter().map(|c| c.child.backlog()).sum();
                proptest::prop_assert_eq!(q.backlog(), backlog);
            }
            while q.dequeue(t, &mut d).is_some() {
                sent += 1;
            }
            proptest::prop_assert_eq!(offered, sent + d.len() as u64);
        }
    }
}
