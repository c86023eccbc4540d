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
    tc_h_major, tc_h_minor, ClassDump, Classful, Errno, FilterHost, FlowListing, Handle, Qdisc,
    QdiscCtx, QdiscDump, QdiscStats, Refusal, Verdict, TC_H_ROOT,
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
    fn from_request(options: &ClassOptions) -> Result<Self, Refusal> {
        let o = match options {
            ClassOptions::Qfq(o) => *o,
            ClassOptions::None => QfqClassOptions::default(),
            _ => {
                return Err(Refusal::new(
                    Errno::EINVAL,
                    "qfq: class options of another kind.",
                ))
            }
        };
        let ranges = [
            (o.weight, "weight", 1, QFQ_MAX_WEIGHT),
            (o.lmax, "maxpkt", QFQ_MIN_LMAX, QFQ_MAX_LMAX),
        ];
        for (value, name, lo, hi) in ranges {
            if let Some(n) = value.filter(|n| !(lo..=hi).contains(n)) {
                return Err(Refusal::new(
                    Errno::EINVAL,
                    format!("qfq: invalid {name} {n}: allowed {lo}..{hi}."),
                ));
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
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        match options {
            QdiscOptions::None => Ok(Qfq::new(ctx)),
            _ => Err(Refusal::new(Errno::EINVAL, "qfq: options of another kind.")),
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
    fn checked_wsum(&self, old: u32, new: u32) -> Result<u32, Refusal> {
        let wsum = self.wsum - old + new;
        if wsum > QFQ_MAX_WSUM {
            return Err(Refusal::new(
                Errno::EINVAL,
                format!(
                    "qfq: total weight out of range ({} + {}): the sum of all class weights \
                     may not exceed {QFQ_MAX_WSUM}.",
                    new as i64 - old as i64,
                    self.wsum
                ),
            ));
        }
        Ok(wsum)
    }

    /// `maxpkt` as given, else psched_mtu, which must be in range too.
    fn lmax_or_default(&self, lmax: Option<u32>) -> Result<u32, Refusal> {
        let mtu = self.ctx.psched_mtu;
        match lmax {
            Some(l) => Ok(l),
            None if (QFQ_MIN_LMAX..=QFQ_MAX_LMAX).contains(&mtu) => Ok(mtu),
            None => Err(Refusal::new(
                Errno::EINVAL,
                format!(
                    "qfq: MTU size out of bounds for qfq (psched_mtu {mtu}, allowed \
                     {QFQ_MIN_LMAX}..{QFQ_MAX_LMAX}): give \"maxpkt BYTES\"."
                ),
            )),
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

    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, Refusal> {
        super::own_chain(&mut self.filters, "qfq", parent)
    }
}

/// The refusal of a class operation on a class QFQ does not have.
fn no_class(classid: Handle) -> Refusal {
    Refusal::new(
        Errno::ENOENT,
        format!(
            "class {:x}:{:x} does not exist.",
            tc_h_major(classid),
            tc_h_minor(classid)
        ),
    )
}

impl Classful for Qfq {
    fn add_class(
        &mut self,
        classid: Handle,
        parent: Handle,
        options: &ClassOptions,
    ) -> Result<(), Refusal> {
        let major = tc_h_major(self.ctx.handle);
        if parent != TC_H_ROOT && parent != self.ctx.handle {
            return Err(Refusal::new(
                Errno::EINVAL,
                format!(
                    "qfq classes are flat: parent must be {major:x}: (got {:x}:{:x}).",
                    tc_h_major(parent),
                    tc_h_minor(parent)
                ),
            ));
        }
        if tc_h_major(classid) != major || tc_h_minor(classid) == 0 {
            return Err(Refusal::new(
                Errno::EINVAL,
                format!(
                    "invalid classid {:x}:{:x}: use {major:x}:N with N 1..ffff.",
                    tc_h_major(classid),
                    tc_h_minor(classid)
                ),
            ));
        }
        let Err(pos) = self.find(classid) else {
            return Err(Refusal::new(
                Errno::EEXIST,
                format!(
                    "class {major:x}:{:x} already exists (use tc class change).",
                    tc_h_minor(classid)
                ),
            ));
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

    /// `qfq_change_class` attaches `TCA_RATE` to the class.
    fn class_bstats(&self, classid: Handle) -> Option<(u64, u64)> {
        let c = &self.classes[self.find(classid).ok()?];
        Some((c.bytes, c.packets))
    }

    /// Like the kernel, an option left out of `tc class change` returns to
    /// its default (weight 1, maxpkt psched_mtu).
    fn change_class(&mut self, classid: Handle, options: &ClassOptions) -> Result<(), Refusal> {
        let i = self.find(classid).map_err(|_| no_class(classid))?;
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
    fn delete_class(&mut self, classid: Handle, drops: &mut Drops) -> Result<(), Refusal> {
        let i = self.find(classid).map_err(|_| no_class(classid))?;
        if self.filters.targets(classid) {
            return Err(Refusal::new(
                Errno::EBUSY,
                format!(
                    "qfq: QFQ class in use: filters send frames to {:x}:{:x}; delete them \
                     first (tc filter del ... prio N).",
                    tc_h_major(classid),
                    tc_h_minor(classid)
                ),
            ));
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
    ) -> Result<Option<Box<dyn Qdisc>>, Refusal> {
        let i = self.find(classid).map_err(|_| no_class(classid))?;
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
mod tests;
