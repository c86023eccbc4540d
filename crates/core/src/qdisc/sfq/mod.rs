//! SFQ, Stochastic Fairness Queueing (Linux net/sched/sch_sfq.c; McKenney,
//! "Stochastic Fairness Queueing", INFOCOM 1990): frames hash into `divisor`
//! buckets; each active bucket owns one of `flows` slots (a FIFO of at most
//! `depth` frames). Active slots are served by deficit round robin with a
//! per-slot byte allot (credit checked before sending, debt carried); a slot
//! that becomes active joins at the end of the round with a full quantum. Past
//! `limit` frames, the longest slot loses its tail (or head with `headdrop`).
//! With `perturb S` the hash key changes every S seconds (driven by the `now`
//! of the calls) and queued frames are rehashed, keeping per-flow order. With
//! per-flow RED (`tc_sfq_qopt_v1.qth_min` set; tc's `redflowlimit`) each slot
//! keeps a RED average of its own backlog (`red::algorithm`, no idle decay)
//! and an arrival to a busy slot may be marked CE (the slot's head instead
//! with `headdrop`) or dropped before the depth check, counted in
//! `tc_sfqred_stats`.

mod xstats;
pub use xstats::{SfqRedStats, SfqXstats};

use super::drr_ahead::{drr_ahead, DrrQueue};
use super::dump::{list_flows, ClassDump, FlowDump, FlowListing, QueueOccupancy, Xstats};
use super::keyed_flow_hash;
use super::park::{drop_all_held, ParkOnPeek};
use super::red::algorithm::{red_check_params, RedAction, RedParms, RedVars, RED_STAB_SIZE};
use super::red::{TC_RED_ECN, TC_RED_HARDDROP};
use super::{
    Errno, FilterHost, Handle, Qdisc, QdiscCtx, QdiscDump, QdiscOptions, QdiscStats, Refusal,
    Verdict,
};
use crate::packet::ecn::mark_ce;
use crate::packet::filter::FilterChain;
use crate::packet::{DropReason, Drops, Packet};
use crate::time::{Instant, NS_PER_SEC};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `SFQ_MAX_DEPTH`: default and maximum frames per slot (and default limit).
pub const MAX_DEPTH: u32 = 127;
/// `SFQ_DEFAULT_FLOWS`.
pub const DEFAULT_FLOWS: u32 = 128;
/// `SFQ_MAX_FLOWS` = 0x10000 - SFQ_MAX_DEPTH - 1.
pub const MAX_FLOWS: u32 = 0x10000 - MAX_DEPTH - 1;
/// `SFQ_DEFAULT_HASH_DIVISOR`.
pub const DEFAULT_DIVISOR: u32 = 1024;
/// The kernel's `INT_MAX / HZ` bound on `perturb` (HZ = 1000).
const MAX_PERTURB_SECS: i32 = i32::MAX / 1000;
const EMPTY: u16 = u16::MAX;

/// One slot: the FIFO of the bucket it serves and its DRR credit.
struct Slot {
    queue: VecDeque<Packet>,
    backlog: u64,
    allot: i32,
    /// Next slot in the round (valid while active).
    next: u16,
    /// The hash bucket this slot serves.
    bucket: u32,
    /// When the slot last changed depth (the kernel's dep[] lists keep the
    /// most recent first; ties for "longest" go to the latest).
    depth_stamp: u64,
    /// The slot's RED state (`slot->vars`), used with per-flow RED.
    vars: RedVars,
}

impl Slot {
    fn new() -> Self {
        Slot {
            queue: VecDeque::new(),
            backlog: 0,
            allot: 0,
            next: 0,
            bucket: 0,
            depth_stamp: 0,
            vars: RedVars::default(),
        }
    }
}

/// `struct tc_sfq_qopt_v1` (include/uapi/linux/pkt_sched.h): its
/// `tc_sfq_qopt` part, `depth`, `headdrop` and the per-flow RED fields. A
/// zero keeps the kernel's default (net/sched/sch_sfq.c `sfq_change`);
/// `sfq_dump` sends every field as in effect, the thresholds unscaled
/// (`qth_min >> Wlog`), `limit` (redflowlimit) as 0 and the RED counters in
/// `red_stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SfqOptions {
    /// Bytes per round (default: psched_mtu).
    pub quantum: u32,
    /// Seconds between hash perturbations (0: never).
    pub perturb_period: i32,
    /// Packets in the qdisc.
    pub limit: u32,
    /// Hash buckets, a power of two.
    pub divisor: u32,
    /// Flow slots.
    pub flows: u32,
    /// Packets per flow slot.
    pub depth: u32,
    /// Drop from the head of a full slot, not the arriving frame.
    pub headdrop: bool,
    /// `tc_sfq_qopt_v1.limit`: tc's `redflowlimit`, bytes. tc requires and
    /// sends it; `sfq_change` never reads it and `sfq_dump` leaves it 0.
    #[serde(default, skip_serializing_if = "is_default")]
    pub red_limit: u32,
    /// RED's lower threshold, bytes of a slot's backlog; 0: no RED.
    #[serde(default, skip_serializing_if = "is_default")]
    pub qth_min: u32,
    /// RED's upper threshold, bytes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub qth_max: u32,
    /// log2(1/W) of the slot average's EWMA.
    #[serde(default, skip_serializing_if = "is_default")]
    pub wlog: u8,
    /// log2 of span / max_P (used when `max_p` is 0).
    #[serde(default, skip_serializing_if = "is_default")]
    pub plog: u8,
    /// log2 of the idle table's cell (kept and dumped; SFQ's RED has no
    /// idle decay).
    #[serde(default, skip_serializing_if = "is_default")]
    pub scell_log: u8,
    /// `TC_RED_ECN` / `TC_RED_HARDDROP` (other bits kept and dumped).
    #[serde(default, skip_serializing_if = "is_default")]
    pub flags: u32,
    /// The largest marking probability, Q0.32 (0: from Plog).
    #[serde(default, skip_serializing_if = "is_default")]
    pub max_p: u32,
    /// `tc_sfqred_stats` (dump only; ignored when building).
    #[serde(default, skip_serializing_if = "is_default")]
    pub red_stats: SfqRedStats,
}

/// Whether a RED field of `SfqOptions` holds its default (left out of the
/// serialized options, so that sfq without RED serializes as before).
fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// The `sfq` qdisc (net/sched/sch_sfq.c): flows hashed into slots served round
/// robin, a quantum at a time; a full qdisc drops from the longest slot.
pub struct Sfq {
    handle: Handle,
    parent: Handle,
    limit: u32,
    maxdepth: u32,
    maxflows: u32,
    divisor: u32,
    quantum: u32,
    perturb_secs: u32,
    headdrop: bool,
    /// Per-flow RED's parameters (`q->red_parms`), when `qth_min` was set.
    red: Option<RedParms>,
    /// `q->flags`: TC_RED_ECN, TC_RED_HARDDROP.
    flags: u32,
    red_stats: SfqRedStats,
    /// bucket → slot index or EMPTY.
    ht: Vec<u16>,
    slots: Vec<Slot>,
    /// Free slots, the last pushed is taken first (the kernel's dep[0]).
    free: Vec<u16>,
    /// The last slot of the round; `tail.next` is served next.
    tail: Option<u16>,
    qlen: u32,
    backlog: u64,
    hash_key: u32,
    rng: SmallRng,
    next_perturb: Option<Instant>,
    /// `tc filter`s that pick the bucket (`flow_bucket`).
    filters: FilterChain,
    stamp: u64,
    /// A frame dequeued by `peek` (qdisc_peek_dequeued), still counted.
    parked: Option<Packet>,
    /// Frames of this qdisc's TX queue in the device's requeue slot and
    /// their bytes, which its limit counts (`Qdisc::set_requeued`).
    requeued: (u32, u64),
    stats: QdiscStats,
}

impl Sfq {
    /// An sfq qdisc with `options` (`QdiscOptions::None`: the defaults).
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        match options {
            QdiscOptions::None => Sfq::with_options(ctx, &SfqOptions::default()),
            QdiscOptions::Sfq(o) => Sfq::with_options(ctx, o),
            _ => Err(super::options::foreign("sfq")),
        }
    }

    /// An sfq qdisc with the defaults changed by `a`, validated as
    /// `sfq_change` does.
    pub fn with_options(ctx: QdiscCtx, a: &SfqOptions) -> Result<Self, Refusal> {
        if a.divisor != 0 && (!a.divisor.is_power_of_two() || a.divisor > 65536) {
            return Err(Refusal::bare(Errno::EINVAL).beside(format!(
                "divisor {}: must be a power of two up to 65536",
                a.divisor
            )));
        }
        if a.quantum > i32::MAX as u32 {
            return Err(
                Refusal::new(Errno::EINVAL, "sch_sfq: invalid quantum.").beside(format!(
                    "quantum {}: at most {} bytes",
                    a.quantum,
                    i32::MAX
                )),
            );
        }
        if !(0..=MAX_PERTURB_SECS).contains(&a.perturb_period) {
            return Err(
                Refusal::new(Errno::EINVAL, "sch_sfq: invalid perturb period.").beside(format!(
                    "perturb {}: allowed 0..{MAX_PERTURB_SECS} seconds",
                    a.perturb_period
                )),
            );
        }
        // Newer kernels' `sfq_change` (no Stab: SFQ has no idle decay).
        if !red_check_params(a.qth_min, a.qth_max, a.wlog, a.scell_log, &[]) {
            return Err(Refusal::bare(Errno::EINVAL).beside(format!(
                "RED min {} max {} ewma {} Scell_log {}: the thresholds scaled by 2^ewma \
                 must fit 31 bits, max not below min, Scell_log below 32",
                a.qth_min, a.qth_max, a.wlog, a.scell_log
            )));
        }
        let red = (a.qth_min != 0).then(|| {
            RedParms::new(
                a.qth_min,
                a.qth_max,
                a.wlog,
                a.plog,
                a.scell_log,
                &[0; RED_STAB_SIZE],
                a.max_p,
            )
        });
        let mut limit = MAX_DEPTH;
        let mut maxdepth = MAX_DEPTH;
        let mut maxflows = DEFAULT_FLOWS;
        let mut divisor = DEFAULT_DIVISOR;
        let mut quantum = ctx.psched_mtu.max(1);
        if a.quantum != 0 {
            quantum = a.quantum;
        }
        if a.flows != 0 {
            maxflows = a.flows.min(MAX_FLOWS);
        }
        if a.divisor != 0 {
            divisor = a.divisor;
            maxflows = maxflows.min(divisor);
        }
        if a.depth != 0 {
            maxdepth = a.depth.min(MAX_DEPTH);
        }
        if a.limit != 0 {
            limit = a.limit.min(maxdepth.saturating_mul(maxflows));
            maxflows = maxflows.min(limit);
        }
        if limit == 1 {
            return Err(
                Refusal::new(Errno::EINVAL, "sch_sfq: invalid limit.").beside(format!(
                    "limit {} with depth {maxdepth} and flows {maxflows} allows only one packet; \
                     raise depth or flows",
                    a.limit
                )),
            );
        }
        let mut rng = SmallRng::seed_from_u64(ctx.seed ^ 0x0073_6671); // "sfq"
        let hash_key = rng.gen();
        Ok(Sfq {
            handle: ctx.handle,
            parent: ctx.parent,
            limit,
            maxdepth,
            maxflows,
            divisor,
            quantum,
            perturb_secs: a.perturb_period.unsigned_abs(),
            headdrop: a.headdrop,
            red,
            flags: a.flags,
            red_stats: SfqRedStats::default(),
            ht: vec![EMPTY; divisor as usize],
            slots: (0..maxflows).map(|_| Slot::new()).collect(),
            free: (0..maxflows as u16).collect(),
            tail: None,
            qlen: 0,
            backlog: 0,
            hash_key,
            rng,
            next_perturb: None,
            filters: FilterChain::new(),
            stamp: 0,
            parked: None,
            requeued: (0, 0),
            stats: QdiscStats::default(),
        })
    }

    /// The effective packet limit.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// The bucket of a frame (`sfq_classify`, `super::flow_bucket`):
    /// without priority or filters steering it, `hash_bucket`. `None`:
    /// filters are attached and none placed it.
    pub fn classify(&self, pkt: &mut Packet) -> Option<usize> {
        super::flow_bucket(self.handle, &self.filters, pkt, self.divisor, |pkt| {
            self.hash_bucket(pkt)
        })
    }

    /// `sfq_hash`: the low bits of the keyed flow hash.
    fn hash_bucket(&self, pkt: &Packet) -> usize {
        (keyed_flow_hash(pkt.meta.hash, self.hash_key) & (self.divisor - 1)) as usize
    }

    fn touch(&mut self, x: u16) {
        self.stamp += 1;
        self.slots[x as usize].depth_stamp = self.stamp;
    }

    /// Appends slot `x` at the end of the round with a full quantum.
    fn link_at_tail(&mut self, x: u16) {
        match self.tail {
            None => self.slots[x as usize].next = x,
            Some(t) => {
                self.slots[x as usize].next = self.slots[t as usize].next;
                self.slots[t as usize].next = x;
            }
        }
        self.tail = Some(x);
        self.slots[x as usize].allot = self.quantum as i32;
    }

    /// Puts `pkt` into slot `x` (taken by the caller), linking it if new.
    fn slot_push(&mut self, x: u16, pkt: Packet) {
        let s = &mut self.slots[x as usize];
        s.backlog += pkt.len as u64;
        s.queue.push_back(pkt);
        let new = s.queue.len() == 1;
        self.touch(x);
        if new {
            self.link_at_tail(x);
        }
    }

    /// Frees slot `x` (now empty) and clears its bucket.
    fn free_slot(&mut self, x: u16) {
        let bucket = self.slots[x as usize].bucket;
        self.ht[bucket as usize] = EMPTY;
        self.free.push(x);
    }

    /// `sfq_drop`: drops one frame from the longest slot (ties: the slot
    /// that most recently reached that depth); if every slot holds one
    /// frame, drops the slot served next. Returns the slot and the frame id
    /// dropped.
    fn drop_longest(&mut self, drops: &mut Drops) -> Option<(u16, u64)> {
        let tail = self.tail?;
        let mut best = tail;
        let mut x = tail;
        loop {
            let (s, b) = (&self.slots[x as usize], &self.slots[best as usize]);
            if (s.queue.len(), s.depth_stamp) > (b.queue.len(), b.depth_stamp) {
                best = x;
            }
            x = s.next;
            if x == tail {
                break;
            }
        }
        let depth = self.slots[best as usize].queue.len();
        if depth == 0 {
            return None;
        }
        if depth == 1 {
            // All slots have one frame: unlink the slot served next.
            best = self.slots[tail as usize].next;
            let after = self.slots[best as usize].next;
            if best == tail {
                self.tail = None;
            } else {
                self.slots[tail as usize].next = after;
            }
        }
        let s = &mut self.slots[best as usize];
        let p = if self.headdrop {
            s.queue.pop_front()
        } else {
            s.queue.pop_back()
        }?;
        s.backlog -= p.len as u64;
        let emptied = s.queue.is_empty();
        self.touch(best);
        if emptied {
            self.free_slot(best);
        }
        self.qlen -= 1;
        self.backlog -= p.len as u64;
        let id = p.meta.id;
        self.stats.count_drop(p, DropReason::SfqOverflow, drops);
        Some((best, id))
    }

    /// Re-keys the hash every `perturb` seconds and rehashes what is queued.
    fn maybe_perturb(&mut self, now: Instant, drops: &mut Drops) {
        if self.perturb_secs == 0 {
            return;
        }
        let period = self.perturb_secs as u64 * NS_PER_SEC;
        let due = *self.next_perturb.get_or_insert(now + period);
        if now < due {
            return;
        }
        let mut next = due + period;
        if next <= now {
            next = now + period;
        }
        self.next_perturb = Some(next);
        self.hash_key = self.rng.gen();
        // As `sfq_perturbation`: frames that filters placed stay put.
        if self.tail.is_some() && self.filters.is_empty() {
            self.rehash(drops);
        }
    }

    /// `sfq_rehash`: takes every frame out (slot index order, FIFO within a
    /// slot) and re-enqueues it under the new key; frames that find no free
    /// slot or a full one are freed (the kernel does not count them in this
    /// qdisc's `dropped`).
    fn rehash(&mut self, drops: &mut Drops) {
        let mut all = Vec::with_capacity(self.qlen as usize);
        for i in 0..self.slots.len() {
            if self.slots[i].queue.is_empty() {
                continue;
            }
            all.extend(self.slots[i].queue.drain(..));
            self.slots[i].backlog = 0;
            self.slots[i].vars.restart();
            self.touch(i as u16);
            self.free_slot(i as u16);
        }
        self.tail = None;
        for p in all {
            let bucket = self.hash_bucket(&p);
            let mut x = self.ht[bucket];
            if x == EMPTY {
                match self.free.pop() {
                    Some(f) => {
                        x = f;
                        self.ht[bucket] = x;
                        self.slots[x as usize].bucket = bucket as u32;
                    }
                    None => {
                        self.rehash_drop(p, drops);
                        continue;
                    }
                }
            }
            if self.slots[x as usize].queue.len() >= self.maxdepth as usize {
                self.rehash_drop(p, drops);
                continue;
            }
            // `red_calc_qavg` on the backlog before this frame (the vars
            // were just reset, so never idling).
            if let Some(parms) = &self.red {
                let s = &mut self.slots[x as usize];
                s.vars.qavg = s.vars.qavg_no_idle_time(parms, s.backlog as u32);
            }
            self.slot_push(x, p);
        }
    }

    fn rehash_drop(&mut self, p: Packet, drops: &mut Drops) {
        self.qlen -= 1;
        self.backlog -= p.len as u64;
        drops.push(p, DropReason::SfqOverflow);
    }

    /// `sfq_dequeue` without Sent counting.
    fn dequeue_inner(&mut self) -> Option<Packet> {
        let tail = self.tail?;
        let mut a = self.slots[tail as usize].next;
        let mut cur_tail = tail;
        while self.slots[a as usize].allot <= 0 {
            self.slots[a as usize].allot += self.quantum as i32;
            cur_tail = a;
            a = self.slots[a as usize].next;
        }
        self.tail = Some(cur_tail);
        let s = &mut self.slots[a as usize];
        let p = s.queue.pop_front()?;
        s.backlog -= p.len as u64;
        let emptied = s.queue.is_empty();
        if !emptied {
            s.allot = s.allot.saturating_sub(p.len.min(i32::MAX as u32) as i32);
        }
        let next_a = s.next;
        self.touch(a);
        self.qlen -= 1;
        self.backlog -= p.len as u64;
        if emptied {
            self.free_slot(a);
            if next_a == a {
                self.tail = None;
            } else {
                self.slots[cur_tail as usize].next = next_a;
            }
        }
        Some(p)
    }

    fn total_qlen(&self) -> u32 {
        self.qlen + self.parked.is_some() as u32
    }

    /// The `sch->q.qlen` the enqueue's limit check reads: the requeued
    /// frames of the device's slot in (net/sched/sch_generic.c
    /// `dev_requeue_skb`).
    fn qlen_at_enqueue(&self) -> u32 {
        self.total_qlen().saturating_add(self.requeued.0)
    }

    /// The options as `sfq_dump` sends them.
    pub fn options(&self) -> SfqOptions {
        SfqOptions {
            quantum: self.quantum,
            perturb_period: self.perturb_secs as i32,
            limit: self.limit,
            divisor: self.divisor,
            flows: self.maxflows,
            depth: self.maxdepth,
            headdrop: self.headdrop,
            red_limit: 0,
            qth_min: self.red.as_ref().map_or(0, |p| p.qth_min >> p.wlog),
            qth_max: self.red.as_ref().map_or(0, |p| p.qth_max >> p.wlog),
            wlog: self.red.as_ref().map_or(0, |p| p.wlog),
            plog: self.red.as_ref().map_or(0, |p| p.plog),
            scell_log: self.red.as_ref().map_or(0, |p| p.scell_log),
            max_p: self.red.as_ref().map_or(0, |p| p.max_p),
            flags: self.flags,
            red_stats: self.red_stats,
        }
    }

    /// `sfq_enqueue`'s RED block for an arrival to busy slot `x`: updates
    /// the slot's average (`red_calc_qavg_no_idle_time` on its backlog) and
    /// acts on `red_action`: a mark of the slot's head (`headdrop`) or of
    /// `pkt` when ECN allows (`sfq_prob_mark`, `sfq_hard_mark`), else the
    /// reason to drop. Each early or forced decision counts an overlimit.
    fn red_verdict(&mut self, x: u16, pkt: &mut Packet) -> Option<DropReason> {
        let parms = self.red.as_ref()?;
        let slot = &mut self.slots[x as usize];
        slot.vars.qavg = slot.vars.qavg_no_idle_time(parms, slot.backlog as u32);
        let rng = &mut self.rng;
        let action = slot
            .vars
            .action(parms, slot.vars.qavg, &mut || rng.gen::<u32>());
        let (may_mark, reason) = match action {
            RedAction::DontMark => return None,
            RedAction::ProbMark => (self.flags & TC_RED_ECN != 0, DropReason::SfqRedProb),
            RedAction::HardMark => (
                self.flags & (TC_RED_ECN | TC_RED_HARDDROP) == TC_RED_ECN,
                DropReason::SfqRedForced,
            ),
        };
        self.stats.overlimits += 1;
        let st = &mut self.red_stats;
        let (mark_head, mark, drop) = if reason == DropReason::SfqRedProb {
            (&mut st.prob_mark_head, &mut st.prob_mark, &mut st.prob_drop)
        } else {
            (
                &mut st.forced_mark_head,
                &mut st.forced_mark,
                &mut st.forced_drop,
            )
        };
        if may_mark {
            // The slot holds at least one frame: it is busy.
            if self.headdrop && slot.queue.front_mut().is_some_and(mark_ce) {
                *mark_head = mark_head.wrapping_add(1);
                return None;
            }
            if mark_ce(pkt) {
                *mark = mark.wrapping_add(1);
                return None;
            }
        }
        *drop = drop.wrapping_add(1);
        Some(reason)
    }

    /// The active slots in the order the round serves them, from
    /// `tail.next` (each slot once, however the links read).
    fn round(&self) -> impl Iterator<Item = &Slot> {
        let start = self.tail.map(|t| self.slots[t as usize].next);
        let mut at = start;
        let mut seen = 0;
        std::iter::from_fn(move || {
            let a = at?;
            let s = self.slots.get(a as usize)?;
            seen += 1;
            at = (s.next != start? && seen < self.slots.len()).then_some(s.next);
            Some(s)
        })
    }

    /// Active (bucket, slot) pairs in bucket order, as `sfq_walk` visits them.
    fn active(&self) -> impl Iterator<Item = (usize, &Slot)> {
        self.ht
            .iter()
            .enumerate()
            .filter(|(_, x)| **x != EMPTY)
            .map(|(b, x)| (b, &self.slots[*x as usize]))
    }
}

impl ParkOnPeek for Sfq {
    fn parked_slot(&mut self) -> &mut Option<Packet> {
        &mut self.parked
    }
    fn sent_stats(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }
    fn dequeue_next(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.maybe_perturb(now, drops);
        self.dequeue_inner()
    }
}

impl FilterHost for Sfq {
    fn filter_qdisc(&self) -> Handle {
        self.handle
    }

    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, Refusal> {
        super::own_chain(&mut self.filters, "sfq", parent)
    }
}

impl Qdisc for Sfq {
    fn kind(&self) -> &'static str {
        "sfq"
    }

    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        self.maybe_perturb(now, drops);
        pkt.meta.enqueue_time = now;
        let Some(bucket) = self.classify(&mut pkt) else {
            return self.stats.reject(pkt, DropReason::Unclassified, drops);
        };
        let mut x = self.ht[bucket];
        if x == EMPTY {
            let Some(f) = self.free.pop() else {
                return self.stats.reject(pkt, DropReason::SfqOverflow, drops);
            };
            x = f;
            self.ht[bucket] = x;
            self.slots[x as usize].bucket = bucket as u32;
            // `red_set_vars`: qavg 0, qcount -1 (a slot is never idling).
            self.slots[x as usize].vars.restart();
        } else {
            // RED first, then the depth check; both end in
            // `congestion_drop`.
            let congestion = self.red_verdict(x, &mut pkt).or_else(|| {
                let full = self.slots[x as usize].queue.len() >= self.maxdepth as usize;
                full.then_some(if self.headdrop {
                    DropReason::HeadDrop
                } else {
                    DropReason::QueueFull
                })
            });
            if let Some(reason) = congestion {
                if !self.headdrop {
                    return self.stats.reject(pkt, reason, drops);
                }
                let s = &mut self.slots[x as usize];
                let Some(head) = s.queue.pop_front() else {
                    return self.stats.reject(pkt, reason, drops);
                };
                s.backlog = s.backlog - head.len as u64 + pkt.len as u64;
                self.backlog = self.backlog - head.len as u64 + pkt.len as u64;
                s.queue.push_back(pkt);
                self.stats.count_drop(head, reason, drops);
                return Verdict::Congested;
            }
        }
        let id = pkt.meta.id;
        self.backlog += pkt.len as u64;
        self.qlen += 1;
        self.slot_push(x, pkt);
        if self.qlen_at_enqueue() <= self.limit {
            return Verdict::Queued;
        }
        match self.drop_longest(drops) {
            // The arriving frame itself was the one dropped.
            Some((slot, dropped_id)) if slot == x && dropped_id == id => Verdict::Dropped,
            // Another frame of the same slot was dropped (NET_XMIT_CN).
            Some((slot, _)) if slot == x => Verdict::Congested,
            _ => Verdict::Queued,
        }
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
        self.total_qlen()
    }

    fn backlog(&self) -> u64 {
        self.backlog + self.parked.as_ref().map_or(0, |p| p.len as u64)
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    fn can_bypass(&self) -> bool {
        self.limit >= 1
    }

    fn count_bypass(&mut self, pkt: &Packet) {
        self.stats.count_sent(pkt);
    }

    fn reset(&mut self, drops: &mut Drops) {
        drop_all_held(self, drops);
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let active = self.active().map(|(b, s)| FlowDump {
            bucket: b as u32,
            flow: s.queue.front().map(|p| p.meta.flow),
            backlog: s.backlog,
            qlen: s.queue.len() as u32,
            head_sojourn_ns: s
                .queue
                .front()
                .map_or(0, |p| now.saturating_since(p.meta.enqueue_time)),
            deficit: s.allot as i64,
            hash: super::dump::flow_queue_hash(s.queue.front(), None),
            ..FlowDump::default()
        });
        let class_of = |b: u32| {
            let s = &self.slots[self.ht[b as usize] as usize];
            ClassDump {
                kind: "sfq".into(),
                classid: self.handle | (b + 1),
                parent: self.handle,
                stats: None,
                queue: QdiscStats {
                    backlog: s.backlog,
                    qlen: s.queue.len() as u32,
                    ..QdiscStats::default()
                },
                xstats: Some(Xstats::SfqClass(SfqXstats { allot: s.allot })),
                ..ClassDump::default()
            }
        };
        let (mut flows, classes, other_flows) = list_flows(listing, active, class_of);
        let mut listed: Vec<u32> = flows.iter().map(|f| f.bucket).collect();
        listed.sort_unstable();
        let mut ahead = drr_ahead(
            self.quantum,
            self.parked.as_ref(),
            std::iter::empty(),
            self.round().map(|s| DrrQueue {
                id: s.bucket,
                deficit: i64::from(s.allot),
                frames: &s.queue,
            }),
            &listed,
        );
        for f in &mut flows {
            f.ahead = ahead.take(f.bucket, f.qlen);
        }
        QdiscDump {
            kind: "sfq".into(),
            handle: self.handle,
            parent: self.parent,
            options: QdiscOptions::Sfq(self.options()),
            stats: self.stats(),
            classes,
            flows,
            other_flows,
            occupancy: QueueOccupancy::parked(self.parked.as_ref(), now),
            ..QdiscDump::default()
        }
    }

    fn as_filter_host(&mut self) -> Option<&mut dyn FilterHost> {
        Some(self)
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        let mut out: Vec<Packet> = self.parked.take().into_iter().collect();
        if let Some(tail) = self.tail.take() {
            let mut x = self.slots[tail as usize].next;
            loop {
                let next = self.slots[x as usize].next;
                out.extend(self.slots[x as usize].queue.drain(..));
                self.slots[x as usize].backlog = 0;
                self.free_slot(x);
                if x == tail {
                    break;
                }
                x = next;
            }
        }
        self.qlen = 0;
        self.backlog = 0;
        out
    }
}

#[cfg(test)]
mod tests;
