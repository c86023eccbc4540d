//! SFB, Stochastic Fair Blue (Linux net/sched/sch_sfb.c, followed as in
//! the 6.18 tree): a classful qdisc with one class `:1` whose child (by
//! default a pfifo of `limit` frames, made by `fifo_create_dflt`) holds
//! the frames. Each flow is hashed into one bin of each of 8 levels of 16
//! bins (the 32-bit hash keyed by the set's perturbation, cut into eight
//! nibbles); a bin counts the frames of the flows hashed into it (its
//! virtual queue) and carries a marking probability (Q0.16) that BLUE
//! raises by `increment` when an arrival finds the bin at `target`
//! (`bin_size`) frames or more and lowers by `decrement` when it finds it
//! empty. A frame is marked CE (or dropped, when it cannot be marked or
//! the probability is above one half) with the smallest probability of its
//! flow's bins; a flow whose every bin is at the maximum is inelastic and
//! goes to the penalty box, which passes `penalty_rate` frames a second
//! with a burst of `penalty_burst` and drops the rest. A flow whose every
//! bin holds `max` frames or more is dropped. Two sets of bins take turns
//! (double buffering): every `rehash_interval` the active set is re-keyed
//! and the other one becomes active, the other set having learnt the
//! inelastic flows during the last `warmup_time` (`db`) before the swap.
//! Its options are `struct tc_sfb_qopt` (`SfbOptions`), its xstats
//! `tc_sfb_xstats`; the kernel's clock here is jiffies of HZ 250 (as fq's
//! and pie's).

pub mod xstats;

pub use xstats::SfbXstats;

use super::dump::QueueOccupancy;
use super::fifo::{Fifo, FifoKind};
use super::jiffies::{jiffies, jiffies_to_msecs, msecs_to_jiffies, time_after, HZ};
use super::one_class::{self, OneClass};
use super::options::foreign as foreign_options;
use super::{
    Classful, FilterHost, FlowListing, Handle, Qdisc, QdiscCtx, QdiscDump, QdiscOptions,
    QdiscStats, Refusal, Verdict, Xstats,
};
use crate::handle::tc_h_minor;
use crate::packet::classify::flow_hash;
use crate::packet::ecn::mark_ce;
use crate::packet::filter::FilterChain;
use crate::packet::{keyed_flow_hash, DropReason, Drops, Packet};
use crate::time::Instant;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `SFB_BUCKET_SHIFT`: bits of the hash a level takes.
pub const SFB_BUCKET_SHIFT: u32 = 4;
/// `SFB_NUMBUCKETS`: bins per level.
pub const SFB_NUMBUCKETS: usize = 1 << SFB_BUCKET_SHIFT;
/// `SFB_BUCKET_MASK`.
const SFB_BUCKET_MASK: u32 = SFB_NUMBUCKETS as u32 - 1;
/// `SFB_LEVELS`: the levels one 32-bit hash feeds.
pub const SFB_LEVELS: usize = 32 / SFB_BUCKET_SHIFT as usize;
/// `SFB_MAX_PROB`: probability 1 in Q0.16 (65535/65536).
pub const SFB_MAX_PROB: u32 = 0xFFFF;

/// SFB's `TCA_OPTIONS`: `struct tc_sfb_qopt` in `TCA_SFB_PARMS`
/// (`sfb_change`, `sfb_dump`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SfbOptions {
    /// Rehash (swap of the bin sets) period, ms (0: never).
    pub rehash_interval: u32,
    /// Double buffering warm-up before a swap, ms (tc's `db`).
    pub warmup_time: u32,
    /// A flow whose every bin holds this many frames is dropped.
    pub max: u32,
    /// A bin's target length (tc's `target`): at or above it, arrivals
    /// raise its probability.
    pub bin_size: u32,
    /// Probability increment, Q0.16.
    pub increment: u32,
    /// Probability decrement, Q0.16.
    pub decrement: u32,
    /// Frames the qdisc (and its default pfifo) may hold; 0: the device's
    /// `tx_queue_len`.
    pub limit: u32,
    /// The penalty box's rate, frames a second (0: it passes nothing).
    pub penalty_rate: u32,
    /// The penalty box's burst, frames (0: it passes nothing).
    pub penalty_burst: u32,
}

/// `sfb_default_ops`: what the kernel uses when no options are given (tc
/// always sends its own).
impl Default for SfbOptions {
    fn default() -> Self {
        SfbOptions {
            rehash_interval: 600 * 1000,
            warmup_time: 60 * 1000,
            limit: 0,
            max: 25,
            bin_size: 20,
            increment: (SFB_MAX_PROB + 500) / 1000,
            decrement: (SFB_MAX_PROB + 3000) / 6000,
            penalty_rate: 10,
            penalty_burst: 20,
        }
    }
}

/// `struct sfb_bucket`: a bin's virtual queue and marking probability.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bucket {
    /// Frames of the flows hashed here (saturating at 0xFFFF).
    pub qlen: u16,
    /// Marking probability, Q0.16.
    pub p_mark: u16,
}

/// `struct sfb_bins`: one set of bins with the key of its hash.
#[derive(Clone, Copy, Debug, Default)]
struct Bins {
    /// The siphash key of `skb_get_hash_perturb` (here `flow_hash`'s).
    perturbation: u64,
    bins: [[Bucket; SFB_NUMBUCKETS]; SFB_LEVELS],
}

/// The bin of each level a hash selects (`sfbhash & SFB_BUCKET_MASK`, then
/// shifted by `SFB_BUCKET_SHIFT` for the next level).
fn levels(hash: u32) -> impl Iterator<Item = (usize, usize)> {
    (0..SFB_LEVELS).map(move |i| {
        (
            i,
            ((hash >> (SFB_BUCKET_SHIFT * i as u32)) & SFB_BUCKET_MASK) as usize,
        )
    })
}

impl Bins {
    /// `increment_one_qlen`.
    fn increment_qlen(&mut self, hash: u32) {
        for (i, n) in levels(hash) {
            let b = &mut self.bins[i][n];
            b.qlen = b.qlen.saturating_add(1);
        }
    }

    /// `decrement_one_qlen`.
    fn decrement_qlen(&mut self, hash: u32) {
        for (i, n) in levels(hash) {
            let b = &mut self.bins[i][n];
            b.qlen = b.qlen.saturating_sub(1);
        }
    }

    /// BLUE's update of a flow's bins at an arrival (`decrement_prob` on
    /// an empty bin, `increment_prob` on one at `bin_size` or more), with
    /// the smallest length and probability among them.
    fn update(&mut self, hash: u32, p: &Params) -> (u32, u32) {
        let (mut minqlen, mut p_min) = (u32::MAX, u32::MAX);
        for (i, n) in levels(hash) {
            let b = &mut self.bins[i][n];
            let qlen = u32::from(b.qlen);
            if qlen == 0 {
                b.p_mark = u32::from(b.p_mark).saturating_sub(p.decrement) as u16;
            } else if qlen >= p.bin_size {
                b.p_mark = u32::from(b.p_mark)
                    .saturating_add(p.increment)
                    .min(SFB_MAX_PROB) as u16;
            }
            minqlen = minqlen.min(qlen);
            p_min = p_min.min(u32::from(b.p_mark));
        }
        (minqlen, p_min)
    }

    /// `sfb_compute_qlen`: the longest bin, the highest probability and
    /// the mean probability.
    fn compute_qlen(&self) -> (u32, u32, u32) {
        let all = self.bins.iter().flatten();
        let qlen = all.clone().map(|b| u32::from(b.qlen)).max().unwrap_or(0);
        let prob = all.clone().map(|b| u32::from(b.p_mark)).max().unwrap_or(0);
        let total: u32 = all.map(|b| u32::from(b.p_mark)).sum();
        (qlen, prob, total / (SFB_LEVELS * SFB_NUMBUCKETS) as u32)
    }
}

/// The parameters `sfb_change` installs (times in jiffies).
#[derive(Clone, Copy, Debug)]
struct Params {
    rehash_interval: u64,
    warmup_time: u64,
    limit: u32,
    max: u32,
    bin_size: u32,
    increment: u32,
    decrement: u32,
    penalty_rate: u32,
    penalty_burst: u32,
}

/// `struct sfb_skb_cb` of a frame in the child: the hash of each set it
/// was counted in (0: not counted there), kept beside the child by the
/// frame's id since a bloatbox frame carries no control block.
#[derive(Clone, Copy, Debug)]
struct Cb {
    id: u64,
    hashes: [u32; 2],
}

/// What SFB counts of its decisions (`q->stats`).
#[derive(Clone, Copy, Debug, Default)]
struct SfbStats {
    earlydrop: u32,
    penaltydrop: u32,
    bucketdrop: u32,
    queuedrop: u32,
    childdrop: u32,
    marked: u32,
}

/// Bumps a kernel `u32` counter.
fn bump(c: &mut u32) {
    *c = c.wrapping_add(1);
}

/// The SFB qdisc.
pub struct Sfb {
    ctx: QdiscCtx,
    p: Params,
    child: Box<dyn Qdisc>,
    /// `tc filter`s whose class minor salts the hash (`sfb_classify`).
    filters: FilterChain,
    /// The two sets of bins; `slot` is the active one.
    bins: [Bins; 2],
    slot: usize,
    double_buffering: bool,
    /// Jiffy of the last swap (`rehash_time`).
    rehash_time: u64,
    /// The penalty box's tokens and the jiffy they were last refilled.
    tokens_avail: u32,
    token_time: u64,
    /// The control blocks of the frames in the child, oldest first.
    cbs: VecDeque<Cb>,
    sfb_stats: SfbStats,
    stats: QdiscStats,
    /// `get_random_bytes`/`get_random_u16`, seeded.
    rng: SmallRng,
}

impl Sfb {
    /// `sfb_init`: the noop child, then `sfb_change` with `options`
    /// (`QdiscOptions::None`: the kernel's `sfb_default_ops`) at time
    /// zero.
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        let o = match options {
            QdiscOptions::None => SfbOptions::default(),
            QdiscOptions::Sfb(o) => *o,
            _ => return Err(foreign_options("sfb")),
        };
        let mut q = Sfb {
            ctx,
            p: Sfb::params(&o, ctx.txqueuelen),
            child: one_class::after_delete(ctx.handle),
            filters: FilterChain::new(),
            bins: [Bins::default(); 2],
            slot: 0,
            double_buffering: false,
            rehash_time: 0,
            tokens_avail: 0,
            token_time: 0,
            cbs: VecDeque::new(),
            sfb_stats: SfbStats::default(),
            stats: QdiscStats::default(),
            rng: SmallRng::seed_from_u64(ctx.seed ^ 0x0073_6662), // "sfb"
        };
        q.install(&o, Instant::ZERO, &mut Drops::new());
        Ok(q)
    }

    /// The parameters of `o` (a zero limit: the device's `tx_queue_len`).
    fn params(o: &SfbOptions, txqueuelen: u32) -> Params {
        Params {
            rehash_interval: msecs_to_jiffies(o.rehash_interval),
            warmup_time: msecs_to_jiffies(o.warmup_time),
            limit: if o.limit == 0 { txqueuelen } else { o.limit },
            max: o.max,
            bin_size: o.bin_size,
            increment: o.increment,
            decrement: o.decrement,
            penalty_rate: o.penalty_rate,
            penalty_burst: o.penalty_burst,
        }
    }

    /// `sfb_change` (it has no refusal of its own): a fresh default pfifo
    /// of `limit` frames replaces the child (its frames are dropped,
    /// `qdisc_purge_queue`), the parameters, the penalty box full, both
    /// sets zeroed and re-keyed, set 0 active.
    fn install(&mut self, o: &SfbOptions, now: Instant, drops: &mut Drops) {
        let p = Sfb::params(o, self.ctx.txqueuelen);
        let ctx = self.ctx.child(0, one_class::classid(self.ctx.handle));
        let fresh = Box::new(Fifo::with_limit(FifoKind::Pfifo, ctx, u64::from(p.limit)));
        let mut old = std::mem::replace(&mut self.child, fresh);
        for pkt in old.drain_all() {
            self.stats.count_drop(pkt, DropReason::QdiscReset, drops);
        }
        self.cbs.clear();
        let j = jiffies(now);
        self.p = p;
        self.rehash_time = j;
        self.tokens_avail = p.penalty_burst;
        self.token_time = j;
        self.slot = 0;
        self.double_buffering = false;
        self.bins = [Bins::default(); 2];
        self.init_perturbation(0);
        self.init_perturbation(1);
    }

    /// `sfb_init_perturbation`: a new key for set `slot`.
    fn init_perturbation(&mut self, slot: usize) {
        self.bins[slot].perturbation = self.rng.gen();
    }

    /// `sfb_swap_slot`: the active set is re-keyed and the other one takes
    /// over (its bins as the warm-up left them).
    fn swap_slot(&mut self) {
        self.init_perturbation(self.slot);
        self.slot ^= 1;
        self.double_buffering = false;
    }

    /// The hash of `pkt` in set `slot`: `skb_get_hash_perturb`, the flow
    /// hash keyed by the set's perturbation (never 0).
    fn flow_hash(&self, pkt: &Packet, slot: usize) -> u32 {
        nonzero(flow_hash(&pkt.meta.flow, self.bins[slot & 1].perturbation))
    }

    /// `sfb_rate_limit`: whether the penalty box drops an inelastic
    /// flow's frame at jiffy `j` (true), or passes it with a token.
    fn rate_limit(&mut self, j: u64) -> bool {
        if self.p.penalty_rate == 0 || self.p.penalty_burst == 0 {
            return true;
        }
        if self.tokens_avail < 1 {
            let age = (10 * HZ).min(j.wrapping_sub(self.token_time));
            // An `unsigned long` product stored in a u32.
            self.tokens_avail = ((age * u64::from(self.p.penalty_rate)) / HZ) as u32;
            self.tokens_avail = self.tokens_avail.min(self.p.penalty_burst);
            self.token_time = j;
            if self.tokens_avail < 1 {
                return true;
            }
        }
        self.tokens_avail -= 1;
        false
    }

    /// Forgets the control blocks of the frames the child dropped since
    /// `before` (the kernel never decrements their bins either).
    fn forget_child_drops(&mut self, before: usize, drops: &Drops) {
        for (p, _) in drops.since(before) {
            if let Some(i) = self.cbs.iter().position(|c| c.id == p.meta.id) {
                self.cbs.remove(i);
            }
        }
    }

    /// `sfb_dump`'s `tc_sfb_qopt`.
    fn dumped_options(&self) -> SfbOptions {
        let p = &self.p;
        SfbOptions {
            rehash_interval: jiffies_to_msecs(p.rehash_interval),
            warmup_time: jiffies_to_msecs(p.warmup_time),
            limit: p.limit,
            max: p.max,
            bin_size: p.bin_size,
            increment: p.increment,
            decrement: p.decrement,
            penalty_rate: p.penalty_rate,
            penalty_burst: p.penalty_burst,
        }
    }

    /// `sfb_dump_stats`.
    pub fn xstats(&self) -> SfbXstats {
        let s = &self.sfb_stats;
        let (maxqlen, maxprob, avgprob) = self.bins[self.slot].compute_qlen();
        SfbXstats {
            earlydrop: s.earlydrop,
            penaltydrop: s.penaltydrop,
            bucketdrop: s.bucketdrop,
            queuedrop: s.queuedrop,
            childdrop: s.childdrop,
            marked: s.marked,
            maxqlen,
            maxprob,
            avgprob,
        }
    }

    /// `qdisc_drop_reason` of the arriving frame, counted as an overlimit
    /// first where the kernel counts one.
    fn drop(&mut self, pkt: Packet, reason: DropReason, drops: &mut Drops) -> Verdict {
        if reason == DropReason::SfbOverlimit {
            self.stats.overlimits += 1;
        }
        self.stats.reject(pkt, reason, drops)
    }
}

/// A zero hash is made 1 (0 marks a set the frame is not counted in).
fn nonzero(h: u32) -> u32 {
    h.max(1)
}

impl Qdisc for Sfb {
    fn kind(&self) -> &'static str {
        "sfb"
    }

    /// `sfb_enqueue`.
    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        if self.child.qlen() >= self.p.limit {
            bump(&mut self.sfb_stats.queuedrop);
            return self.drop(pkt, DropReason::SfbOverlimit, drops);
        }
        let j = jiffies(now);
        if self.p.rehash_interval > 0 {
            let limit = self.rehash_time.wrapping_add(self.p.rehash_interval);
            if time_after(j, limit) {
                self.swap_slot();
                self.rehash_time = j;
            } else if !self.double_buffering
                && self.p.warmup_time > 0
                && time_after(j, limit.wrapping_sub(self.p.warmup_time))
            {
                self.double_buffering = true;
            }
        }
        let slot = self.slot;
        let hash = if self.filters.is_empty() {
            self.flow_hash(&pkt, slot)
        } else {
            // sfb_classify: the class minor salts the hash; no match is
            // the kernel's `other_drop` (a drop, not an overlimit).
            let Some((classid, skbedit)) = self.filters.classify(&pkt.meta) else {
                return self.stats.reject(pkt, DropReason::Unclassified, drops);
            };
            if let Some(prio) = skbedit {
                pkt.meta.priority = prio;
            }
            let key = self.bins[slot].perturbation;
            nonzero(keyed_flow_hash(
                u32::from(tc_h_minor(classid)),
                (key ^ (key >> 32)) as u32,
            ))
        };
        let mut cb = Cb {
            id: pkt.meta.id,
            hashes: [0; 2],
        };
        cb.hashes[slot] = hash;
        let (minqlen, p_min) = self.bins[slot].update(hash, &self.p);
        let other = slot ^ 1;
        if minqlen >= self.p.max {
            bump(&mut self.sfb_stats.bucketdrop);
            return self.drop(pkt, DropReason::SfbOverlimit, drops);
        }
        if p_min >= SFB_MAX_PROB {
            // An inelastic flow: the set being warmed up learns it (with
            // the flow hash, filters or not, as the kernel does), and the
            // penalty box decides.
            if self.double_buffering {
                let h = self.flow_hash(&pkt, other);
                cb.hashes[other] = h;
                self.bins[other].update(h, &self.p);
            }
            if self.rate_limit(j) {
                bump(&mut self.sfb_stats.penaltydrop);
                return self.drop(pkt, DropReason::SfbOverlimit, drops);
            }
        } else {
            let r = u32::from(self.rng.gen::<u16>()) & SFB_MAX_PROB;
            if r < p_min {
                // Marking that many frames: the flow is unresponsive or
                // the link badly congested, so drop some outright.
                if p_min > SFB_MAX_PROB / 2 && r < (p_min - SFB_MAX_PROB / 2) * 2 {
                    bump(&mut self.sfb_stats.earlydrop);
                    return self.drop(pkt, DropReason::SfbCongested, drops);
                }
                if mark_ce(&mut pkt) {
                    bump(&mut self.sfb_stats.marked);
                } else {
                    bump(&mut self.sfb_stats.earlydrop);
                    return self.drop(pkt, DropReason::SfbCongested, drops);
                }
            }
        }
        let before = drops.len();
        let verdict = self.child.enqueue(pkt, now, drops);
        self.stats.drops += (drops.len() - before) as u64;
        self.forget_child_drops(before, drops);
        match verdict {
            Verdict::Queued => {
                for (s, h) in cb.hashes.iter().enumerate().filter(|(_, h)| **h != 0) {
                    self.bins[s].increment_qlen(*h);
                }
                self.cbs.push_back(cb);
            }
            // NET_XMIT_CN: queued, another frame dropped; the kernel
            // counts a child drop and leaves the bins as they were (the
            // frame's dequeue still decrements them).
            Verdict::Congested => {
                bump(&mut self.sfb_stats.childdrop);
                self.cbs.push_back(cb);
            }
            Verdict::Dropped => bump(&mut self.sfb_stats.childdrop),
        }
        verdict
    }

    /// `sfb_dequeue`: the frame leaves the bins it was counted in.
    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        let before = drops.len();
        let pkt = self.child.dequeue(now, drops);
        self.stats.drops += (drops.len() - before) as u64;
        self.forget_child_drops(before, drops);
        let pkt = pkt?;
        self.stats.count_sent(&pkt);
        let at = if self.cbs.front().is_some_and(|c| c.id == pkt.meta.id) {
            Some(0)
        } else {
            self.cbs.iter().position(|c| c.id == pkt.meta.id)
        };
        if let Some(cb) = at.and_then(|i| self.cbs.remove(i)) {
            for (s, h) in cb.hashes.iter().enumerate().filter(|(_, h)| **h != 0) {
                self.bins[s].decrement_qlen(*h);
            }
        }
        Some(pkt)
    }

    /// `sfb_peek`: the child's.
    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        // A child that drops on peek (an AQM parking its head) has done so
        // by the second call, which returns the parked frame.
        let before = drops.len();
        self.child.peek(now, drops);
        self.stats.drops += (drops.len() - before) as u64;
        self.forget_child_drops(before, drops);
        self.child.peek(now, drops)
    }

    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        self.child.next_wakeup(now)
    }

    fn qlen(&self) -> u32 {
        self.child.qlen()
    }

    fn backlog(&self) -> u64 {
        self.child.backlog()
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    /// `sfb_reset`: the child reset, set 0 active and re-keyed, every bin
    /// zeroed.
    fn reset(&mut self, drops: &mut Drops) {
        self.child.reset(drops);
        self.cbs.clear();
        self.slot = 0;
        self.double_buffering = false;
        self.bins = [Bins::default(); 2];
        self.init_perturbation(0);
    }

    /// `sfb_change`.
    fn change(
        &mut self,
        options: &QdiscOptions,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        let o = match options {
            QdiscOptions::None => SfbOptions::default(),
            QdiscOptions::Sfb(o) => *o,
            _ => return Err(foreign_options("sfb")),
        };
        self.install(&o, now, drops);
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    /// `sfb_dump`, `sfb_dump_stats`; `sfb_dump_class` answers ENOSYS, so
    /// `tc class show` lists no class of SFB.
    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let child = self.child.dump_listing(now, listing);
        let mut occupancy: Vec<QueueOccupancy> = Vec::new();
        let (_, children) = one_class::dump("sfb", self.ctx.handle, child, &mut occupancy);
        QdiscDump {
            kind: "sfb".into(),
            handle: self.ctx.handle,
            parent: self.ctx.parent,
            options: QdiscOptions::Sfb(self.dumped_options()),
            stats: self.stats(),
            xstats: Some(Xstats::Sfb(self.xstats())),
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
        self.cbs.clear();
        self.child.drain_all()
    }
}

impl OneClass for Sfb {
    const KIND: &'static str = "sfb";
    const DUMPS_CLASS: bool = false;

    fn ctx(&self) -> &QdiscCtx {
        &self.ctx
    }

    fn child(&mut self) -> &mut Box<dyn Qdisc> {
        &mut self.child
    }

    /// `sfb_graft` (`qdisc_replace`): the old child's frames leave without
    /// their bins being decremented.
    fn grafted(&mut self) {
        self.cbs.clear();
    }
}

/// `sfb_tcf_block`: filters attach to the qdisc, not to its class.
impl FilterHost for Sfb {
    fn filter_qdisc(&self) -> Handle {
        self.ctx.handle
    }

    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, Refusal> {
        super::own_chain(&mut self.filters, "sfb", parent)
    }
}

#[cfg(test)]
mod tests;
