//! DualPI2, the coupled dual-queue AQM of L4S (Linux 6.18
//! net/sched/sch_dualpi2.c; RFC 9332): frames whose ECN field has a bit of
//! `ecn_mask` (ECT(1) and CE by default), or that `skb->priority` or a
//! filter puts in class 1 or 2, wait in the L-queue; the others in the
//! C-queue. A PI controller run every `tupdate` (`calculate_probability`,
//! the kernel's fixed-point arithmetic: probabilities in `u32::MAX`ths,
//! alpha and beta in 64 ns units) moves the base probability p' from the
//! larger head delay's distance to `target` and its trend; C frames are
//! marked or dropped with p'^2, L4S frames marked with k*p', and a step
//! threshold in time or packets marks L4S frames on its own. A WRR credit
//! (`classic_protection`, the C-queue's share in %) keeps the L-queue's
//! priority from starving the C-queue. Both queues share `limit` packets
//! and `memlimit` bytes of truesize. Defaults: limit 10000p, target 15ms,
//! tupdate 16ms, alpha 0.16, beta 3.2 (as 41 and 819 in 1/256 Hz),
//! step_thresh 1ms, min_qlen_step 0, coupling_factor 2, drop_on_overload,
//! drop_dequeue, classic_protection 10%, l4s_ect, split_gso. Its options
//! are the TCA_DUALPI2_* attributes (`Dualpi2Options`), its xstats
//! `tc_dualpi2_xstats`.

mod xstats;

pub use xstats::Dualpi2Xstats;

use super::dump::{QueueId, QueueOccupancy, Xstats};
use super::park::{drop_all_held, ParkOnPeek};
use super::pie::algorithm::AdaptTimer;
use super::{
    own_chain, tc_h_major, tc_h_minor, Errno, FilterHost, Handle, Qdisc, QdiscCtx, QdiscDump,
    QdiscOptions, QdiscStats, Refusal, Verdict,
};
use crate::packet::ecn::{mark_ce, ECN_NOT_ECT};
use crate::packet::filter::FilterChain;
use crate::packet::{truesize, DropReason, Drops, Packet, L3};
use crate::time::{Instant, NS_PER_MS, NS_PER_SEC, NS_PER_US};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `MAX_PROB`: a probability of 1.
pub const MAX_PROB: u32 = u32::MAX;
/// `ALPHA_BETA_MAX`: the largest alpha or beta netlink takes (1/256 Hz).
pub const ALPHA_BETA_MAX: u32 = (1 << 31) - 1;
/// `ALPHA_BETA_GRANULARITY`: internal alpha and beta are in 64 ns units.
const ALPHA_BETA_GRANULARITY: u32 = 6;
/// `ALPHA_BETA_SCALING`: `ALPHA_BETA_SHIFT` (8) - `ALPHA_BETA_GRANULARITY`.
const ALPHA_BETA_SCALING: u32 = 8 - ALPHA_BETA_GRANULARITY;
/// `MAX_WC`: the weights are in %.
const MAX_WC: u8 = 100;
/// `TC_DUALPI2_ECN_MASK_L4S_ECT`: ECT(1) (and CE) to the L-queue.
pub const ECN_MASK_L4S_ECT: u8 = 1;
/// `TC_DUALPI2_ECN_MASK_CLA_ECT`: ECT(0) (and CE).
pub const ECN_MASK_CLA_ECT: u8 = 2;
/// `TC_DUALPI2_ECN_MASK_ANY_ECT`: any ECT codepoint.
pub const ECN_MASK_ANY_ECT: u8 = 3;

/// The step threshold as netlink carries it: one of
/// `TCA_DUALPI2_STEP_THRESH_PKTS` and `TCA_DUALPI2_STEP_THRESH_US` (the
/// kernel refuses both at once; one field cannot hold both).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StepThresh {
    /// The L-queue's length, packets.
    Packets(u32),
    /// The frame's sojourn time, µs.
    Micros(u32),
}

/// The `TCA_DUALPI2_*` attributes (include/uapi/linux/pkt_sched.h). An
/// absent attribute keeps the current value; `dualpi2_dump` sends all.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dualpi2Options {
    /// `TCA_DUALPI2_LIMIT`, packets (at least 1); sets the memory limit to
    /// `limit` × 2 × psched_mtu.
    pub limit: Option<u32>,
    /// `TCA_DUALPI2_MEMORY_LIMIT`, bytes (at least 1).
    pub memory_limit: Option<u32>,
    /// `TCA_DUALPI2_TARGET`, µs.
    pub target: Option<u32>,
    /// `TCA_DUALPI2_TUPDATE`, µs (at least 1).
    pub tupdate: Option<u32>,
    /// `TCA_DUALPI2_ALPHA`, 1/256 Hz (1..=2^31-1).
    pub alpha: Option<u32>,
    /// `TCA_DUALPI2_BETA`, 1/256 Hz (1..=2^31-1).
    pub beta: Option<u32>,
    /// `TCA_DUALPI2_STEP_THRESH_PKTS` or `_US`.
    pub step_thresh: Option<StepThresh>,
    /// `TCA_DUALPI2_MIN_QLEN_STEP`, packets.
    pub min_qlen_step: Option<u32>,
    /// `TCA_DUALPI2_COUPLING`, k (at least 1).
    pub coupling: Option<u8>,
    /// `TCA_DUALPI2_DROP_OVERLOAD`: drop (true) or overflow on overload.
    pub drop_overload: Option<bool>,
    /// `TCA_DUALPI2_DROP_EARLY`: drop at enqueue (true) or at dequeue.
    pub drop_early: Option<bool>,
    /// `TCA_DUALPI2_C_PROTECTION`, the C-queue's WRR weight in % (0..=100).
    pub c_protection: Option<u8>,
    /// `TCA_DUALPI2_ECN_MASK` (1..=3).
    pub ecn_mask: Option<u8>,
    /// `TCA_DUALPI2_SPLIT_GSO`.
    pub split_gso: Option<bool>,
}

/// `dualpi2_scale_alpha_beta`: 1/256 Hz to the internal 64 ns units of
/// `MAX_PROB`.
pub fn scale_alpha_beta(param: u32) -> u32 {
    (((u64::from(param) * u64::from(MAX_PROB)) >> ALPHA_BETA_SCALING) / NS_PER_SEC) as u32
}

/// `dualpi2_unscale_alpha_beta`: back to 1/256 Hz (rounded down).
pub fn unscale_alpha_beta(param: u32) -> u32 {
    (((u64::from(param) * NS_PER_SEC) << ALPHA_BETA_SCALING) / u64::from(MAX_PROB)) as u32
}

/// `convert_us_to_nsec`, saturating at `u32::MAX`.
fn us_to_ns(us: u32) -> u32 {
    u32::try_from(u64::from(us) * NS_PER_US).unwrap_or(u32::MAX)
}

/// `convert_ns_to_usec`, saturating at `u32::MAX`.
fn ns_to_us(ns: u64) -> u32 {
    u32::try_from(ns / NS_PER_US).unwrap_or(u32::MAX)
}

/// `get_memory_limit`: `limit` × 2 × psched_mtu, saturating.
fn memory_limit_of(limit: u32, mtu: u32) -> u32 {
    u32::try_from(u64::from(limit) * 2 * u64::from(mtu)).unwrap_or(u32::MAX)
}

/// The parameters in force (`struct dualpi2_sched_data`'s configuration,
/// as the kernel keeps them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// `sch->limit`, packets.
    pub limit: u32,
    /// `memory_limit`, bytes.
    pub memory_limit: u32,
    /// `pi2_target`, ns.
    pub target: u64,
    /// `pi2_tupdate`, ns.
    pub tupdate: u32,
    /// `pi2_alpha`, scaled.
    pub alpha: u32,
    /// `pi2_beta`, scaled.
    pub beta: u32,
    /// `step_thresh`: packets, or ns.
    pub step_thresh: u32,
    /// `step_in_packets`.
    pub step_in_packets: bool,
    /// `min_qlen_step`.
    pub min_qlen_step: u32,
    /// `coupling_factor`.
    pub coupling: u8,
    /// `drop_overload`.
    pub drop_overload: bool,
    /// `drop_early`.
    pub drop_early: bool,
    /// `split_gso`.
    pub split_gso: bool,
    /// `ecn_mask`.
    pub ecn_mask: u8,
    /// `c_protection_wc`.
    pub wc: u8,
    /// `c_protection_wl`.
    pub wl: u8,
    /// `c_protection_init`.
    pub c_protection_init: i32,
}

impl Params {
    /// `dualpi2_reset_default` on a device of `mtu` (psched_mtu).
    pub fn defaults(mtu: u32) -> Self {
        let mut p = Params {
            limit: 10_000,
            memory_limit: memory_limit_of(10_000, mtu),
            target: 15 * NS_PER_MS,
            tupdate: (16 * NS_PER_MS) as u32,
            alpha: scale_alpha_beta(41),
            beta: scale_alpha_beta(819),
            step_thresh: NS_PER_MS as u32,
            step_in_packets: false,
            min_qlen_step: 0,
            coupling: 2,
            drop_overload: true,
            drop_early: false,
            split_gso: true,
            ecn_mask: ECN_MASK_L4S_ECT,
            wc: 0,
            wl: 0,
            c_protection_init: 0,
        };
        p.set_c_protection(10, mtu);
        p
    }

    /// `dualpi2_calculate_c_protection`: the weights and the credit's
    /// reset value, `psched_mtu` × (wc - wl).
    fn set_c_protection(&mut self, wc: u8, mtu: u32) {
        self.wc = wc;
        self.wl = MAX_WC - wc;
        self.c_protection_init = (mtu as i32).wrapping_mul(i32::from(wc) - i32::from(self.wl));
    }

    /// The attributes as `dualpi2_dump` sends them.
    pub fn options(&self) -> Dualpi2Options {
        Dualpi2Options {
            limit: Some(self.limit),
            memory_limit: Some(self.memory_limit),
            target: Some(ns_to_us(self.target)),
            tupdate: Some(ns_to_us(u64::from(self.tupdate))),
            alpha: Some(unscale_alpha_beta(self.alpha)),
            beta: Some(unscale_alpha_beta(self.beta)),
            step_thresh: Some(if self.step_in_packets {
                StepThresh::Packets(self.step_thresh)
            } else {
                StepThresh::Micros(ns_to_us(u64::from(self.step_thresh)))
            }),
            min_qlen_step: Some(self.min_qlen_step),
            coupling: Some(self.coupling),
            drop_overload: Some(self.drop_overload),
            drop_early: Some(self.drop_early),
            c_protection: Some(self.wc),
            ecn_mask: Some(self.ecn_mask),
            split_gso: Some(self.split_gso),
        }
    }
}

/// The netlink policy's refusal (`dualpi2_policy`: `nla_validate_range`'s
/// "integer out of range", ERANGE), with the attribute and its range.
fn out_of_range(attr: &str, v: u64, range: &str) -> Refusal {
    Refusal::new(Errno::ERANGE, "integer out of range.")
        .beside(format!("{attr} {v}: allowed {range}"))
}

/// `dualpi2_policy`'s checks of the attributes present.
fn validate(o: &Dualpi2Options) -> Result<(), Refusal> {
    let at_least_one = [
        ("limit", o.limit),
        ("memlimit", o.memory_limit),
        ("tupdate", o.tupdate),
        ("coupling_factor", o.coupling.map(u32::from)),
    ];
    for (name, v) in at_least_one {
        if v == Some(0) {
            return Err(out_of_range(name, 0, "1 and more"));
        }
    }
    for (name, v) in [("alpha", o.alpha), ("beta", o.beta)] {
        if let Some(v) = v.filter(|v| !(1..=ALPHA_BETA_MAX).contains(v)) {
            return Err(out_of_range(name, v.into(), "1..=2147483647 (in 1/256 Hz)"));
        }
    }
    if let Some(v) = o.c_protection.filter(|v| *v > MAX_WC) {
        return Err(out_of_range("classic_protection", v.into(), "0..=100"));
    }
    if let Some(v) = o
        .ecn_mask
        .filter(|v| !(ECN_MASK_L4S_ECT..=ECN_MASK_ANY_ECT).contains(v))
    {
        return Err(out_of_range("ecn_mask", v.into(), "1..=3"));
    }
    Ok(())
}

/// The classification of a frame (`enum dualpi2_classification_results`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// `DUALPI2_C_CLASSIC`: the C-queue.
    Classic,
    /// `DUALPI2_C_L4S`: the L-queue, scalable marking (classic drop if
    /// Not-ECT).
    L4s,
    /// `DUALPI2_C_LLLL`: the L-queue, never marked or dropped by the AQM.
    Llll,
}

impl Class {
    /// The class of a classid's minor (0, 1, 2), if one.
    fn of_minor(minor: u16) -> Option<Class> {
        match minor {
            0 => Some(Class::Classic),
            1 => Some(Class::L4s),
            2 => Some(Class::Llll),
            _ => None,
        }
    }
}

/// `struct dualpi2_skb_cb`: what the qdisc keeps beside a queued frame
/// (its enqueue time is `meta.enqueue_time`).
#[derive(Clone, Copy, Debug)]
struct Cb {
    class: Class,
    /// The ECN codepoint read at enqueue (`dualpi2_read_ect`).
    ect: u8,
    apply_step: bool,
}

/// The PI controller's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pi2 {
    /// `pi2_prob`.
    pub prob: u32,
    /// `last_qdelay`, ns.
    pub last_qdelay: u64,
}

/// `calculate_probability`: the new base probability from the queue
/// delays (ns) at a run of the timer; `pi2.last_qdelay` becomes their
/// maximum. Signed 64-bit products, the kernel's wrap and clamps.
pub fn calculate_probability(p: &Params, pi2: &mut Pi2, qdelay_c: u64, qdelay_l: u64) -> u32 {
    let qdelay = qdelay_c.max(qdelay_l);
    let mut delta = (qdelay as i64)
        .wrapping_sub(p.target as i64)
        .wrapping_mul(i64::from(p.alpha));
    delta = delta.wrapping_add(
        (qdelay as i64)
            .wrapping_sub(pi2.last_qdelay as i64)
            .wrapping_mul(i64::from(p.beta)),
    );
    pi2.last_qdelay = qdelay;
    // `__scale_delta`: an unsigned division by 2^6.
    let scale = |d: u64| (d >> ALPHA_BETA_GRANULARITY) as i64;
    let new_prob = if delta > 0 {
        let v = (scale(delta as u64) + i64::from(pi2.prob)) as u32;
        if v < pi2.prob {
            MAX_PROB
        } else {
            v
        }
    } else {
        let v = (i64::from(pi2.prob) - scale(delta.wrapping_neg() as u64)) as u32;
        if v > pi2.prob {
            0
        } else {
            v
        }
    };
    if p.drop_overload {
        new_prob
    } else {
        new_prob.min(MAX_PROB / u32::from(p.coupling))
    }
}

/// The counters of `tc_dualpi2_xstats` the qdisc keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    packets_in_c: u32,
    packets_in_l: u32,
    maxq: u32,
    ecn_mark: u32,
    step_marks: u32,
    memory_used: u32,
    max_memory_used: u32,
}

/// The `dualpi2` qdisc.
pub struct Dualpi2 {
    handle: Handle,
    parent: Handle,
    mtu: u32,
    params: Params,
    pi2: Pi2,
    /// `pi2_timer` (run when the qdisc is next touched).
    timer: AdaptTimer,
    /// The C-queue (the qdisc's own `sch->q`).
    c_queue: VecDeque<(Packet, Cb)>,
    /// The L-queue (`l_queue`, a pfifo).
    l_queue: VecDeque<(Packet, Cb)>,
    /// `c_head_ts`, `l_head_ts` (the kernel's 0: `None`).
    c_head_ts: Option<Instant>,
    l_head_ts: Option<Instant>,
    /// `c_protection_credit`.
    credit: i32,
    counts: Counts,
    /// Bytes in both queues.
    backlog: u64,
    /// A frame dequeued by `peek` (`dualpi2_peek`'s `gso_skb`).
    parked: Option<Packet>,
    /// Frames of this qdisc's TX queue in the device's requeue slot and
    /// their bytes (`Qdisc::set_requeued`).
    requeued: (u32, u64),
    stats: QdiscStats,
    filters: FilterChain,
    /// `get_random_u32`, seeded.
    rng: SmallRng,
}

impl Dualpi2 {
    /// `dualpi2_init` with `options` (`QdiscOptions::None`: the defaults).
    /// Built without a clock, it starts at time zero: the timer's first
    /// run is `tupdate` later.
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        let o = match options {
            QdiscOptions::None => &Dualpi2Options::default(),
            QdiscOptions::Dualpi2(o) => o,
            _ => return Err(super::options::foreign("dualpi2")),
        };
        validate(o)?;
        let mut params = Params::defaults(ctx.psched_mtu);
        apply(o, &mut params, ctx.psched_mtu);
        Ok(Dualpi2 {
            handle: ctx.handle,
            parent: ctx.parent,
            mtu: ctx.psched_mtu,
            timer: AdaptTimer {
                next: Some(Instant::ZERO + u64::from(params.tupdate)),
            },
            credit: params.c_protection_init,
            params,
            pi2: Pi2::default(),
            c_queue: VecDeque::new(),
            l_queue: VecDeque::new(),
            c_head_ts: None,
            l_head_ts: None,
            counts: Counts::default(),
            backlog: 0,
            parked: None,
            requeued: (0, 0),
            stats: QdiscStats::default(),
            filters: FilterChain::default(),
            rng: SmallRng::seed_from_u64(ctx.seed ^ 0x0064_7561_6c70_6932), // "dualpi2"
        })
    }

    /// The parameters in force.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The controller as of the last touch.
    pub fn pi2(&self) -> Pi2 {
        self.pi2
    }

    /// `get_queue_delays` at `now`, ns.
    fn delays(c: Option<Instant>, l: Option<Instant>, now: Instant) -> (u64, u64) {
        let since = |ts: Option<Instant>| ts.map_or(0, |t| now.nanos().wrapping_sub(t.nanos()));
        (since(c), since(l))
    }

    /// Runs the timer's expiries due by `now` (`dualpi2_timer`: the
    /// probability computed, the next run `tupdate` after this one).
    /// Between touches the heads stay, so each run sees what the kernel's
    /// would have seen.
    fn run_timer(
        params: &Params,
        pi2: &mut Pi2,
        timer: &mut AdaptTimer,
        heads: (Option<Instant>, Option<Instant>),
        now: Instant,
    ) {
        timer.run_every(now, |t| {
            let before = *pi2;
            let (c, l) = Dualpi2::delays(heads.0, heads.1, t);
            pi2.prob = calculate_probability(params, pi2, c, l);
            (Some(u64::from(params.tupdate).max(1)), *pi2 != before)
        });
    }

    fn catch_up(&mut self, now: Instant) {
        let heads = (self.c_head_ts, self.l_head_ts);
        Dualpi2::run_timer(&self.params, &mut self.pi2, &mut self.timer, heads, now);
    }

    /// `sch->q.qlen`: both queues, the parked frame and the requeued ones.
    fn sch_qlen(&self) -> u32 {
        self.qlen().saturating_add(self.requeued.0)
    }

    /// `sch->qstats.backlog`, requeued bytes in.
    fn sch_backlog(&self) -> u64 {
        self.backlog() + self.requeued.1
    }

    /// `dualpi2_skb_classify` (filter actions other than a class are not
    /// modelled: a match gives its class).
    fn classify(&self, pkt: &mut Packet) -> Cb {
        // `dualpi2_read_ect`: only IPv4 and IPv6 frames have one.
        let ect = match pkt.meta.l3 {
            L3::Ipv4 { .. } | L3::Ipv6 { .. } => pkt.meta.ecn(),
            L3::Other => ECN_NOT_ECT,
        };
        let cb = |class| Cb {
            class,
            ect,
            apply_step: false,
        };
        if ect & self.params.ecn_mask != 0 {
            return cb(Class::L4s);
        }
        let prio = pkt.meta.priority;
        if tc_h_major(prio) == tc_h_major(self.handle) {
            if let Some(c) = Class::of_minor(tc_h_minor(prio)) {
                return cb(c);
            }
        }
        if self.filters.is_empty() {
            return cb(Class::Classic);
        }
        match self.filters.classify(&pkt.meta) {
            Some((classid, skbedit)) => {
                if let Some(p) = skbedit {
                    pkt.meta.priority = p;
                }
                cb(Class::of_minor(tc_h_minor(classid)).unwrap_or(Class::Classic))
            }
            None => cb(Class::Classic),
        }
    }

    /// `dualpi2_roll`.
    fn roll(rng: &mut SmallRng, prob: u32) -> bool {
        rng.gen::<u32>() <= prob
    }

    /// `dualpi2_mark`: CE on an ECT frame, counted.
    fn mark(&mut self, pkt: &mut Packet) -> bool {
        let marked = mark_ce(pkt);
        if marked {
            self.counts.ecn_mark = self.counts.ecn_mark.wrapping_add(1);
        }
        marked
    }

    /// `must_drop` (with `dualpi2_classic_marking` and
    /// `dualpi2_scalable_marking`): whether the frame is to be dropped;
    /// an ECT frame the probability chose is marked instead. Never below a
    /// backlog of two MTUs.
    fn must_drop(&mut self, pkt: &mut Packet, cb: Cb) -> bool {
        if self.sch_backlog() < 2 * u64::from(self.mtu) {
            return false;
        }
        let prob = self.pi2.prob;
        let local_l_prob = u64::from(prob) * u64::from(self.params.coupling);
        let overload = local_l_prob > u64::from(MAX_PROB);
        let rng = &mut self.rng;
        match cb.class {
            Class::Classic => {
                if Dualpi2::roll(rng, prob) && Dualpi2::roll(rng, prob) {
                    if overload || cb.ect == ECN_NOT_ECT {
                        return true;
                    }
                    self.mark(pkt);
                }
                false
            }
            Class::L4s => {
                if overload {
                    if self.params.drop_overload
                        && Dualpi2::roll(rng, prob)
                        && Dualpi2::roll(rng, prob)
                    {
                        return true;
                    }
                    self.mark(pkt);
                } else if Dualpi2::roll(rng, local_l_prob as u32) {
                    // Non-ECT frames may be L4S by a filter's choice.
                    if cb.ect == ECN_NOT_ECT {
                        return true;
                    }
                    self.mark(pkt);
                }
                false
            }
            Class::Llll => false,
        }
    }

    /// `dualpi2_enqueue_skb`.
    fn enqueue_classified(
        &mut self,
        mut pkt: Packet,
        mut cb: Cb,
        now: Instant,
        drops: &mut Drops,
    ) -> Verdict {
        let size = truesize(pkt.len);
        if self.sch_qlen() >= self.params.limit
            || u64::from(self.counts.memory_used) + u64::from(size)
                > u64::from(self.params.memory_limit)
        {
            self.stats.overlimits += 1;
            return self.stats.reject(pkt, DropReason::Dualpi2Overlimit, drops);
        }
        if self.params.drop_early && self.must_drop(&mut pkt, cb) {
            return self.stats.reject(pkt, DropReason::Dualpi2Congested, drops);
        }
        pkt.meta.enqueue_time = now;
        let held = self.sch_qlen();
        let c = &mut self.counts;
        c.memory_used = c.memory_used.wrapping_add(size);
        c.max_memory_used = c.max_memory_used.max(c.memory_used);
        c.maxq = c.maxq.max(held);
        self.backlog += u64::from(pkt.len);
        if cb.class != Class::Classic {
            cb.apply_step = cb.class == Class::L4s
                && self.l_queue.len() as u64 >= u64::from(self.params.min_qlen_step);
            c.packets_in_l = c.packets_in_l.wrapping_add(1);
            self.l_head_ts.get_or_insert(now);
            self.l_queue.push_back((pkt, cb));
        } else {
            c.packets_in_c = c.packets_in_c.wrapping_add(1);
            self.c_head_ts.get_or_insert(now);
            self.c_queue.push_back((pkt, cb));
        }
        Verdict::Queued
    }

    /// `dequeue_packet`: the WRR's pick (the L-queue unless the C-queue
    /// has frames and a positive credit) and the credit change it makes
    /// once the frame is sent.
    fn dequeue_packet(&mut self) -> Option<(Packet, Cb, i32)> {
        let c_len = self.c_queue.len();
        let (pkt, cb, change) = if !self.l_queue.is_empty() && (c_len == 0 || self.credit <= 0) {
            let (p, cb) = self.l_queue.pop_front()?;
            self.l_head_ts = self.l_queue.front().map(|(p, _)| p.meta.enqueue_time);
            let change = if c_len > 0 {
                i32::from(self.params.wc)
            } else {
                0
            };
            (p, cb, change)
        } else if let Some((p, cb)) = self.c_queue.pop_front() {
            self.c_head_ts = self.c_queue.front().map(|(p, _)| p.meta.enqueue_time);
            let change = if self.l_queue.is_empty() {
                0
            } else {
                -i32::from(self.params.wl)
            };
            (p, cb, change)
        } else {
            self.credit = self.params.c_protection_init;
            return None;
        };
        let c = &mut self.counts;
        c.memory_used = c.memory_used.wrapping_sub(truesize(pkt.len));
        self.backlog -= u64::from(pkt.len);
        let change = change.wrapping_mul(pkt.len as i32);
        Some((pkt, cb, change))
    }

    /// `do_step_aqm`: true where a Not-ECT frame over the step is to be
    /// dropped; an ECT one is marked.
    fn step_aqm(&mut self, pkt: &mut Packet, cb: Cb, now: Instant) -> bool {
        let qdelay = if self.params.step_in_packets {
            self.l_queue.len() as u64
        } else {
            now.nanos().wrapping_sub(pkt.meta.enqueue_time.nanos())
        };
        if cb.apply_step && qdelay > u64::from(self.params.step_thresh) {
            if cb.ect == ECN_NOT_ECT {
                return true;
            }
            if self.mark(pkt) {
                self.counts.step_marks = self.counts.step_marks.wrapping_add(1);
            }
        }
        false
    }

    /// `__dualpi2_qdisc_dequeue` without Sent counting: frames the AQM
    /// drops at dequeue are dropped and the next one tried.
    fn dequeue_inner(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.catch_up(now);
        while let Some((mut pkt, cb, change)) = self.dequeue_packet() {
            if !self.params.drop_early && self.must_drop(&mut pkt, cb) {
                self.stats
                    .count_drop(pkt, DropReason::Dualpi2Congested, drops);
                continue;
            }
            if cb.class != Class::Classic && self.step_aqm(&mut pkt, cb, now) {
                self.stats
                    .count_drop(pkt, DropReason::Dualpi2StepDrop, drops);
                continue;
            }
            self.credit = self.credit.wrapping_add(change);
            return Some(pkt);
        }
        None
    }

    /// The xstats at `now` from a controller `pi2`.
    fn xstats(&self, pi2: Pi2, now: Instant) -> Dualpi2Xstats {
        let (c, l) = Dualpi2::delays(self.c_head_ts, self.l_head_ts, now);
        let k = &self.counts;
        Dualpi2Xstats {
            prob: pi2.prob,
            delay_c: ns_to_us(c),
            delay_l: ns_to_us(l),
            packets_in_c: k.packets_in_c,
            packets_in_l: k.packets_in_l,
            maxq: k.maxq,
            ecn_mark: k.ecn_mark,
            step_marks: k.step_marks,
            credit: self.credit,
            memory_used: k.memory_used,
            max_memory_used: k.max_memory_used,
            memory_limit: self.params.memory_limit,
        }
    }
}

/// `dualpi2_change`'s assignments of the attributes present (checked by
/// `validate`).
fn apply(o: &Dualpi2Options, p: &mut Params, mtu: u32) {
    if let Some(v) = o.limit {
        p.limit = v;
        p.memory_limit = memory_limit_of(v, mtu);
    }
    if let Some(v) = o.memory_limit {
        p.memory_limit = v;
    }
    if let Some(v) = o.target {
        p.target = u64::from(v) * NS_PER_US;
    }
    if let Some(v) = o.tupdate {
        p.tupdate = us_to_ns(v);
    }
    if let Some(v) = o.alpha {
        p.alpha = scale_alpha_beta(v);
    }
    if let Some(v) = o.beta {
        p.beta = scale_alpha_beta(v);
    }
    match o.step_thresh {
        Some(StepThresh::Packets(v)) => {
            p.step_in_packets = true;
            p.step_thresh = v;
        }
        Some(StepThresh::Micros(v)) => {
            p.step_in_packets = false;
            p.step_thresh = us_to_ns(v);
        }
        None => {}
    }
    if let Some(v) = o.min_qlen_step {
        p.min_qlen_step = v;
    }
    if let Some(v) = o.coupling {
        p.coupling = v;
    }
    if let Some(v) = o.drop_overload {
        p.drop_overload = v;
    }
    if let Some(v) = o.drop_early {
        p.drop_early = v;
    }
    if let Some(v) = o.c_protection {
        p.set_c_protection(v, mtu);
    }
    if let Some(v) = o.ecn_mask {
        p.ecn_mask = v;
    }
    if let Some(v) = o.split_gso {
        p.split_gso = v;
    }
}

impl ParkOnPeek for Dualpi2 {
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

impl FilterHost for Dualpi2 {
    /// `dualpi2_tcf_block`: the qdisc's own block only.
    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, Refusal> {
        own_chain(&mut self.filters, "dualpi2", parent)
    }
    fn filter_qdisc(&self) -> Handle {
        self.handle
    }
}

impl Qdisc for Dualpi2 {
    fn kind(&self) -> &'static str {
        "dualpi2"
    }

    /// `dualpi2_qdisc_enqueue`. A GSO super-frame is queued whole here;
    /// with `split_gso` the link segments before the qdisc instead
    /// (`link::offload`), which is what the kernel's split gives.
    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        self.catch_up(now);
        let cb = self.classify(&mut pkt);
        self.enqueue_classified(pkt, cb, now, drops)
    }

    fn set_requeued(&mut self, frames: u32, bytes: u64) {
        self.requeued = (frames, bytes);
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.dequeue_parked_first(now, drops)
    }

    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        self.peek_parking(now, drops)
    }

    fn qlen(&self) -> u32 {
        (self.c_queue.len() + self.l_queue.len() + usize::from(self.parked.is_some())) as u32
    }

    fn backlog(&self) -> u64 {
        self.backlog + self.parked.as_ref().map_or(0, |p| u64::from(p.len))
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    /// `dualpi2_reset`: both queues emptied; the probability, the
    /// counters, the memory in use, the head times and the credit reset
    /// (the configuration and `last_qdelay` stay).
    fn reset(&mut self, drops: &mut Drops) {
        drop_all_held(self, drops);
        self.c_head_ts = None;
        self.l_head_ts = None;
        self.pi2.prob = 0;
        self.counts = Counts::default();
        self.credit = self.params.c_protection_init;
    }

    /// `dualpi2_change`: the policy's checks, the attributes given, then
    /// frames dropped while over the limits, the C-queue's first (its
    /// head time is left as it was, as the kernel leaves it).
    fn change(
        &mut self,
        options: &QdiscOptions,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        let o = match options {
            QdiscOptions::None => &Dualpi2Options::default(),
            QdiscOptions::Dualpi2(o) => o,
            _ => return Err(super::options::foreign("dualpi2")),
        };
        if *o == Dualpi2Options::default() {
            return Err(Refusal::new(
                Errno::EINVAL,
                "sch_dualpi2: Dualpi2 options are required.",
            ));
        }
        validate(o)?;
        self.catch_up(now);
        apply(o, &mut self.params, self.mtu);
        if o.c_protection.is_some() {
            self.credit = self.params.c_protection_init;
        }
        while self.sch_qlen() > self.params.limit
            || self.counts.memory_used > self.params.memory_limit
        {
            // `qdisc_dequeue_internal(sch)`: the parked frame (its memory
            // already given back at its dequeue), else the C-queue's head.
            let p = if let Some(p) = self.parked.take() {
                p
            } else if let Some((p, _)) = self
                .c_queue
                .pop_front()
                .or_else(|| self.l_queue.pop_front())
            {
                self.counts.memory_used = self.counts.memory_used.wrapping_sub(truesize(p.len));
                self.backlog -= u64::from(p.len);
                p
            } else {
                break;
            };
            self.stats.count_drop(p, DropReason::QdiscReset, drops);
        }
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        let (mut pi2, mut timer) = (self.pi2, self.timer);
        let heads = (self.c_head_ts, self.l_head_ts);
        Dualpi2::run_timer(&self.params, &mut pi2, &mut timer, heads, now);
        QdiscDump {
            kind: "dualpi2".into(),
            handle: self.handle,
            parent: self.parent,
            options: QdiscOptions::Dualpi2(self.params.options()),
            stats: self.stats(),
            xstats: Some(Xstats::Dualpi2(self.xstats(pi2, now))),
            occupancy: vec![
                QueueOccupancy::of_qdisc(
                    QueueId::Band(0),
                    self.parked
                        .iter()
                        .chain(self.c_queue.iter().map(|(p, _)| p)),
                    now,
                ),
                QueueOccupancy::of_qdisc(
                    QueueId::Band(1),
                    self.l_queue.iter().map(|(p, _)| p),
                    now,
                ),
            ],
            ..QdiscDump::default()
        }
    }

    fn as_filter_host(&mut self) -> Option<&mut dyn FilterHost> {
        Some(self)
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        let mut out: Vec<Packet> = self.parked.take().into_iter().collect();
        // In the order the WRR would have sent them, roughly: L first.
        out.extend(self.l_queue.drain(..).map(|(p, _)| p));
        out.extend(self.c_queue.drain(..).map(|(p, _)| p));
        self.backlog = 0;
        self.counts.memory_used = 0;
        out
    }
}

#[cfg(test)]
mod tests;
