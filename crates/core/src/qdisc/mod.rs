//! Queueing disciplines, each behind the one `Qdisc` trait and faithful to the
//! Linux algorithm of the same name (net/sched/sch_*.c; each discipline's
//! module cites its kernel file). A qdisc is pure: it receives `now`, never
//! reads a clock, and pushes every frame it frees into the `Drops` sink with a
//! reason. Classful disciplines own their children as `Box<dyn Qdisc>` and also
//! implement `Classful`.
//!
//! One folder per kind (`<kind>/`: the discipline and its typed options
//! in `mod.rs`, its xstats in `xstats.rs`, its unit tests in `tests.rs`;
//! `fifo/` holds pfifo, bfifo and pfifo_head_drop; `codel/algorithm.rs` is
//! the CoDel core that `codel` and `fq_codel` share), and one row per kind
//! in `kinds.rs`, the table of kinds; `options.rs` holds the enums of every
//! kind's options and xstats; `hfsc/curve.rs` is HFSC's service-curve
//! arithmetic; `one_class.rs` is the one fixed class of
//! TBF, RED and netem; `prio/` shares pfifo_fast's `tc_prio_qopt`, and
//! its band choice (`priomap.rs`) with `ets/`; `rounds.rs` is the deficit
//! round robin of `drr/` and ETS's bandwidth-sharing bands;
//! `red/algorithm.rs` is include/net/red.h (RED's and choke's); `pie/algorithm.rs`
//! is include/net/pie.h, the PIE core that `pie` and `fq_pie` share
//! (its timer runs `dualpi2`'s PI2 controller too);
//! `flow_bucket` picks the flow queue of sfq, fq_codel and fq_pie.
//! `bands.rs` is the fixed bands of prio and multiq;
//! `park.rs` is the peek-by-dequeue plumbing of codel, fq_codel, sfq, tbf,
//! pie and fq_pie; `request.rs` is a tc request as rtnetlink
//! carries it; `tree.rs` edits a device's tree by such requests; `noop.rs`
//! is what a deleted child leaves where the kernel grafts nothing;
//! `dump.rs` is the data `tc -s -d show`, the TUI and the control socket
//! read; `drr_ahead.rs` works out, for that data, what fq_codel's and SFQ's
//! round robin sends before a flow queue's newest frame.

pub mod bands;
pub mod cake;
pub mod choke;
pub mod class_hash;
pub mod codel;
pub mod drr;
pub mod drr_ahead;
pub mod dualpi2;
pub mod dump;
pub mod estimator;
pub mod ets;
pub mod fifo;
mod flow_queues;
pub mod fq;
pub mod fq_codel;
pub mod fq_pie;
pub mod hfsc;
pub mod hhf;
pub mod htb;
pub mod jiffies;
pub mod kinds;
pub mod mq;
pub mod multiq;
pub mod netem;
pub mod noop;
pub mod one_class;
pub mod options;
mod park;
pub mod pfifo_fast;
pub mod pie;
pub mod plug;
pub mod prio;
pub mod priomap;
pub mod qfq;
pub mod red;
pub mod request;
pub mod requeue;
mod rounds;
pub mod sfb;
pub mod sfq;
pub mod skbprio;
pub mod tbf;
#[cfg(any(test, feature = "testutil"))]
pub mod testutil;
pub mod tree;

pub use crate::handle::{tc_h_major, tc_h_make, tc_h_minor, Handle, TC_H_ROOT};
pub use crate::packet::keyed_flow_hash;
pub use crate::refusal::{Errno, Refusal};
pub use dump::{ClassDump, FlowListing, QdiscDump, Xstats};
pub use options::{AttrValue, Attrs, ClassOptions, QdiscOptions};

use crate::packet::{DropReason, Drops, Packet};
use crate::time::Instant;

/// The flow bucket, of `buckets`, that SFQ and fq_codel give a frame
/// (`sfq_classify`, `fq_codel_classify`): a `skb->priority` of `handle:N`
/// with N in 1..=buckets picks bucket N-1; else, where filters are
/// attached, the first match's class minor N in 1..=buckets (its skbedit
/// action applied) picks bucket N-1, and no match or any other minor gives
/// `None`: the frame is dropped as unclassified; else `hashed`.
pub fn flow_bucket(
    handle: Handle,
    filters: &crate::packet::filter::FilterChain,
    pkt: &mut Packet,
    buckets: u32,
    hashed: impl FnOnce(&Packet) -> usize,
) -> Option<usize> {
    let in_range = |classid: Handle| {
        let minor = tc_h_minor(classid) as u32;
        (1..=buckets).contains(&minor).then(|| minor as usize - 1)
    };
    let prio = pkt.meta.priority;
    if tc_h_major(prio) == tc_h_major(handle) {
        if let Some(bucket) = in_range(prio) {
            return Some(bucket);
        }
    }
    if filters.is_empty() {
        return Some(hashed(pkt));
    }
    let (classid, skbedit) = filters.classify(&pkt.meta)?;
    if let Some(p) = skbedit {
        pkt.meta.priority = p;
    }
    in_range(classid)
}

/// `seed` mixed with handle `h` (a Fibonacci-hashing multiply): the seed of
/// a qdisc created from a shared one (the device's, or a classful parent's
/// for the child of class `h`), so that each perturbs its hashes its own way.
pub fn seed_for(seed: u64, h: Handle) -> u64 {
    seed ^ (h as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// What the device below the qdisc tells a qdisc when it is created: the
/// values the kernel takes from `dev` (txqueuelen, psched_mtu) and the
/// handle it was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QdiscCtx {
    /// This qdisc's handle (major:0).
    pub handle: Handle,
    /// Its parent (TC_H_ROOT or a class id).
    pub parent: Handle,
    /// `dev->tx_queue_len`.
    pub txqueuelen: u32,
    /// `psched_mtu(dev)` = MTU + 14.
    pub psched_mtu: u32,
    /// Seed for hash perturbation and other randomness (deterministic in the
    /// simulator).
    pub seed: u64,
}

impl QdiscCtx {
    /// The ctx of a qdisc attached under class `parent` of this one, with
    /// handle `handle` (0 for a default child): the same device values and
    /// a seed of its own, derived from where it sits and its handle. The
    /// kernel draws a fresh perturbation key per instance (`sfq_init`,
    /// `fq_codel_init`: `get_random_u32()`); deriving it from the instance's
    /// identity keeps runs reproducible while no two children of one qdisc
    /// share it, and a child replaced by one with another handle re-keys as
    /// a new kernel instance would. Every classful qdisc makes its
    /// children's ctx here and nowhere else.
    pub fn child(&self, handle: Handle, parent: Handle) -> QdiscCtx {
        QdiscCtx {
            handle,
            parent,
            seed: seed_for(seed_for(self.seed, parent), handle),
            ..*self
        }
    }
}

impl Default for QdiscCtx {
    fn default() -> Self {
        QdiscCtx {
            handle: tc_h_make(0x8001, 0),
            parent: TC_H_ROOT,
            txqueuelen: 1000,
            psched_mtu: 1514,
            seed: 0,
        }
    }
}

/// The generic counters of `tc -s`: `Sent <bytes> bytes <packets> pkt
/// (dropped, overlimits, requeues)` and `backlog <bytes>b <qlen>p`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QdiscStats {
    /// Bytes dequeued (`gnet_stats_basic.bytes`).
    pub bytes: u64,
    /// Packets dequeued (`gnet_stats_basic.packets`).
    pub packets: u64,
    /// Packets dropped (`gnet_stats_queue.drops`).
    pub drops: u64,
    /// Times a shaper held back a packet it could not send yet
    /// (`gnet_stats_queue.overlimits`).
    pub overlimits: u64,
    /// Packets put back after a dequeue (`gnet_stats_queue.requeues`).
    pub requeues: u64,
    /// Bytes queued now (`gnet_stats_queue.backlog`).
    pub backlog: u64,
    /// Packets queued now (`gnet_stats_queue.qlen`).
    pub qlen: u32,
    /// The rate estimator's reading (`TCA_STATS_RATE_EST`), in a dump of a
    /// qdisc or class that has one (`estimator::Estimators`); `None` in
    /// every count a discipline keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_est: Option<estimator::RateEst>,
}

impl QdiscStats {
    /// Counts a frame as Sent (at dequeue, or at bypass): its bytes, and
    /// as packets its segments if it is a GSO super-frame (`bstats_update`).
    pub fn count_sent(&mut self, pkt: &Packet) {
        self.bytes += pkt.len as u64;
        self.packets += pkt.segs() as u64;
    }

    /// Counts a frame the qdisc drops and hands it to `drops` with its reason.
    pub fn count_drop(&mut self, pkt: Packet, reason: DropReason, drops: &mut Drops) {
        self.drops += 1;
        drops.push(pkt, reason);
    }

    /// Drops the arriving frame: `count_drop`, and the enqueue's verdict.
    pub fn reject(&mut self, pkt: Packet, reason: DropReason, drops: &mut Drops) -> Verdict {
        self.count_drop(pkt, reason, drops);
        Verdict::Dropped
    }
}

/// Result of an enqueue, the kernel's NET_XMIT_* codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Queued (NET_XMIT_SUCCESS).
    Queued,
    /// The arriving frame itself was dropped (NET_XMIT_DROP); it is in `drops`.
    Dropped,
    /// Queued, but the qdisc dropped something of the same flow to make room
    /// (NET_XMIT_CN).
    Congested,
}

/// One queueing discipline instance.
pub trait Qdisc: Send {
    /// The tc kind: "pfifo_fast", "fq_codel", ...
    fn kind(&self) -> &'static str;

    /// Offers a frame. Whatever is dropped (the frame itself or others) goes
    /// to `drops`; the qdisc's own `drops` counter and backlog are updated.
    fn enqueue(&mut self, pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict;

    /// Takes the next frame to hand to the device, or `None` if empty or
    /// throttled (then `next_wakeup` says when to try again). Counts it Sent.
    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet>;

    /// The frame `dequeue` would return, without counting it Sent. Like the
    /// kernel's `qdisc_peek_dequeued`, AQM qdiscs may run their dequeue logic
    /// here and park the frame; it still counts in qlen/backlog.
    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet>;

    /// When a throttled (shaping) qdisc may next release a frame. `None` when
    /// it is empty or work-conserving. Never earlier than `now`.
    fn next_wakeup(&self, _now: Instant) -> Option<Instant> {
        None
    }

    /// Frames held (including parked and requeued ones).
    fn qlen(&self) -> u32;
    /// Bytes held.
    fn backlog(&self) -> u64;

    /// The counters this qdisc keeps: bytes, packets, drops, overlimits,
    /// requeues (`qlen`/`backlog` are filled in by `stats`).
    fn counters(&self) -> QdiscStats;

    /// The generic counters, with `qlen`/`backlog` filled in.
    fn stats(&self) -> QdiscStats {
        QdiscStats {
            qlen: self.qlen(),
            backlog: self.backlog(),
            ..self.counters()
        }
    }

    /// TCQ_F_CAN_BYPASS: an empty instance may let a frame skip the queue.
    fn can_bypass(&self) -> bool {
        false
    }
    /// Counts a frame that bypassed this (empty) qdisc as Sent. Every qdisc
    /// whose `can_bypass` can return true overrides this.
    fn count_bypass(&mut self, _pkt: &Packet) {}

    /// Drops everything held (reason `QdiscReset`) and clears queue state,
    /// keeping the counters.
    fn reset(&mut self, drops: &mut Drops);

    /// `tc qdisc change`: applies `options` (what the request carries;
    /// absent fields keep their values). Invalid options leave the qdisc
    /// untouched. A lowered limit drops into `drops`.
    fn change(
        &mut self,
        options: &QdiscOptions,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        let _ = (options, now, drops);
        Err(Refusal::new(
            Errno::EINVAL,
            "Change operation not supported by specified qdisc.",
        ))
    }

    /// Everything `tc -s -d qdisc show` / `class show` print about this qdisc
    /// and, for classful ones, its classes and child qdiscs.
    fn dump(&self, now: Instant) -> QdiscDump;

    /// `dump` with the flow queues of flow-queueing disciplines listed as
    /// `listing` says (live snapshots list the top N by backlog; see
    /// `dump::FlowListing`). Classful qdiscs pass it on to their children.
    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let _ = listing;
        self.dump(now)
    }

    /// The class-management side of classful qdiscs.
    fn as_classful(&mut self) -> Option<&mut dyn Classful> {
        None
    }

    /// The filter chains of qdiscs that classify with `tc filter`s (HTB,
    /// QFQ, prio, DRR, ETS, and SFQ, fq_codel, FQ-PIE and CAKE, whose filters pick the flow
    /// queue).
    fn as_filter_host(&mut self) -> Option<&mut dyn FilterHost> {
        None
    }

    /// Takes every held frame out, in dequeue order where the discipline has
    /// one, without counting drops or Sent. Used to move frames into a
    /// replacement qdisc so a switch loses nothing in flight.
    fn drain_all(&mut self) -> Vec<Packet>;

    /// TX queues this root runs separately, each into its own TX ring: mq's
    /// children, each attached to its own `netdev_queue` (net/sched/sch_mq.c
    /// `mq_attach`) and run by its own `__qdisc_run` (net/core/dev.c
    /// `__dev_xmit_skb`); 1 for any other qdisc, run as one.
    fn tx_queue_count(&self) -> usize {
        1
    }

    /// The frames of this qdisc's TX queue waiting in the device's requeue
    /// slot (`link::Path` parks the frames the driver refuses), and their
    /// bytes. The kernel counts them in this qdisc's `sch->q.qlen` and
    /// backlog (net/sched/sch_generic.c `dev_requeue_skb`), so its limit
    /// checks at enqueue see them: the kinds whose checks read those keep
    /// the count; the others ignore it.
    fn set_requeued(&mut self, frames: u32, bytes: u64) {
        let _ = (frames, bytes);
    }

    /// Frames this qdisc made of those offered to it, since it was built:
    /// netem's `duplicate` at the root enqueues a copy into itself (the
    /// kernel's `rootq->enqueue`). The path counts them as duplicated, so
    /// that its frames stay conserved; no other kind makes any. (A netem
    /// below the root leaves its copies in `Drops` instead, for the path
    /// to enqueue at the root: `Drops::push_copy`.)
    fn copies(&self) -> u64 {
        0
    }

    /// `set_requeued` of TX queue `queue`'s own qdisc.
    fn queue_set_requeued(&mut self, queue: usize, frames: u32, bytes: u64) {
        let _ = queue;
        self.set_requeued(frames, bytes);
    }

    /// `dequeue` of TX queue `queue`'s own qdisc (mq's child `queue`); the
    /// qdisc itself where `tx_queue_count` is 1.
    fn dequeue_queue(&mut self, queue: usize, now: Instant, drops: &mut Drops) -> Option<Packet> {
        let _ = queue;
        self.dequeue(now, drops)
    }

    /// `qlen` of TX queue `queue`'s own qdisc.
    fn queue_qlen(&self, queue: usize) -> u32 {
        let _ = queue;
        self.qlen()
    }

    /// `next_wakeup` of TX queue `queue`'s own qdisc.
    fn queue_wakeup(&self, queue: usize, now: Instant) -> Option<Instant> {
        let _ = queue;
        self.next_wakeup(now)
    }
}

/// The `tc filter` side of a qdisc: its filter chains, one per block (the
/// qdisc's own, `parent X:`, and for HTB one per class, `parent X:Y`).
pub trait FilterHost {
    /// The chain of the block `parent` names (`None` or the qdisc's handle:
    /// the qdisc's own; `tc_new_tfilter` has checked the major); an error
    /// where that block does not exist.
    fn chain_mut(
        &mut self,
        parent: Option<Handle>,
    ) -> Result<&mut crate::packet::filter::FilterChain, Refusal>;

    /// The qdisc's handle (what a `flow` filter's default class derives
    /// from).
    fn filter_qdisc(&self) -> Handle;

    /// `tc filter add`: into the chain of the filter's parent.
    fn add_filter(&mut self, mut filter: crate::packet::filter::Filter) -> Result<(), Refusal> {
        filter.bind(self.filter_qdisc());
        self.chain_mut(filter.parent)?.add(filter)
    }
}

/// `FilterHost::chain_mut` of a qdisc with only its own block: a class
/// (`parent X:Y`) has none, as in the kernel's `sfq_tcf_block` and
/// `fq_codel_tcf_block` (the kernel's EINVAL).
pub fn own_chain<'a>(
    chain: &'a mut crate::packet::filter::FilterChain,
    kind: &str,
    parent: Option<Handle>,
) -> Result<&'a mut crate::packet::filter::FilterChain, Refusal> {
    match parent {
        Some(p) if p != TC_H_ROOT && tc_h_minor(p) != 0 => {
            Err(Refusal::bare(Errno::EINVAL).below(format!(
                "filters attach to the {kind} qdisc itself, parent {:x}:, not to a class",
                tc_h_major(p)
            )))
        }
        _ => Ok(chain),
    }
}

/// Class operations of classful qdiscs (HTB, QFQ, prio, DRR, ETS, TBF, RED,
/// netem, mq).
pub trait Classful {
    /// `tc class add ... classid C parent P <kind> OPTIONS`.
    fn add_class(
        &mut self,
        classid: Handle,
        parent: Handle,
        options: &ClassOptions,
    ) -> Result<(), Refusal>;
    /// `tc class change`.
    fn change_class(&mut self, classid: Handle, options: &ClassOptions) -> Result<(), Refusal>;
    /// The bytes and packets class `classid` sent (`cl->bstats`), for a
    /// kind whose `change_class` attaches the class a rate estimator
    /// (`TCA_RATE`: HTB, QFQ); `None` where the kernel's kind ignores it.
    fn class_bstats(&self, classid: Handle) -> Option<(u64, u64)> {
        let _ = classid;
        None
    }
    /// Hands frames that `add_class`/`change_class` purged (HTB turning a
    /// leaf into an inner class) to `drops`.
    fn flush_freed(&mut self, drops: &mut Drops) {
        let _ = drops;
    }
    /// `tc class del`.
    fn delete_class(&mut self, classid: Handle, drops: &mut Drops) -> Result<(), Refusal>;
    /// Attaches `child` under `classid`, returning the qdisc it replaces.
    fn graft(
        &mut self,
        classid: Handle,
        child: Box<dyn Qdisc>,
    ) -> Result<Option<Box<dyn Qdisc>>, Refusal>;
    /// The qdisc attached under `classid`.
    fn child_mut(&mut self, classid: Handle) -> Option<&mut Box<dyn Qdisc>>;
    /// The child qdiscs, for walking the tree (by handle lookups).
    fn children_mut(&mut self) -> Vec<&mut Box<dyn Qdisc>>;
    /// The ctx children get (txqueuelen, mtu, their own seed): always
    /// `QdiscCtx::child` of this qdisc's ctx.
    fn child_ctx(&self, handle: Handle, parent: Handle) -> QdiscCtx;
    /// The class `classid` names (`cops->find`): itself, except where a
    /// discipline answers to several ids (TBF's one class, any minor).
    fn find_class(&self, classid: Handle) -> Handle {
        classid
    }
    /// Whether the class `find_class` named exists though the dump lists
    /// it not: netem's one class while it holds no child (`netem_find`
    /// answers 1 for any id, `netem_dump_class` ENOENT without a child).
    fn undumped_class(&self, classid: Handle) -> bool {
        let _ = classid;
        false
    }
    /// What class `classid` holds once its qdisc is deleted (the kernel's
    /// `graft` called with no new qdisc): a default pfifo, as HTB's and
    /// QFQ's create (`qdisc_create_dflt`); TBF and mq override it with the
    /// noop qdisc, which drops everything.
    fn after_delete(&self, classid: Handle) -> Box<dyn Qdisc> {
        Box::new(fifo::Fifo::new(
            fifo::FifoKind::Pfifo,
            self.child_ctx(0, classid),
        ))
    }
    /// `tc qdisc del` of the qdisc under `classid` (the kernel's `graft`
    /// called with no new qdisc): returns the qdisc taken out. The class
    /// then holds `after_delete`'s qdisc; netem's holds none
    /// (`netem_graft` stores NULL: netem sends from its tfifo again).
    fn ungraft(&mut self, classid: Handle) -> Result<Option<Box<dyn Qdisc>>, Refusal> {
        let replacement = self.after_delete(classid);
        self.graft(classid, replacement)
    }
    /// Warnings the kernel attaches to successful class operations (tc
    /// prints them as `Warning: ...`, e.g. HTB's "quantum of class 10010 is
    /// big. Consider r2q change."), each returned once.
    fn take_warnings(&mut self) -> Vec<String> {
        Vec::new()
    }
}
