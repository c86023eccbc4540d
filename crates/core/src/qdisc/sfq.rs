//! SFQ, Stochastic Fairness Queueing (Linux net/sched/sch_sfq.c; McKenney,
//! "Stochastic Fairness Queueing", INFOCOM 1990): frames hash into `divisor`
//! buckets; each active bucket owns one of `flows` slots (a FIFO of at most
//! `depth` frames). Active slots are served by deficit round robin with a
//! per-slot byte allot (credit checked before sending, debt carried); a slot
//! that becomes active joins at the end of the round with a full quantum. Past
//! `limit` frames, the longest slot loses its tail (or head with `headdrop`).
//! With `perturb S` the hash key changes every S seconds (driven by the `now`
//! of the calls) and queued frames are rehashed, keeping per-flow order. No RED
//! (`redflowlimit`) support.

use super::drr_ahead::{drr_ahead, DrrQueue};
use super::dump::{
    list_flows, ClassDump, FlowDump, FlowListing, QueueOccupancy, SfqXstats, Xstats,
};
use super::keyed_flow_hash;
use super::park::{drop_all_held, ParkOnPeek};
use super::{
    FilterHost, Handle, Qdisc, QdiscCtx, QdiscDump, QdiscOptions, QdiscStats, TcError, Verdict,
};
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
        }
    }
}

/// `struct tc_sfq_qopt_v1` (include/uapi/linux/pkt_sched.h) as far as
/// bloatbox uses it: its `tc_sfq_qopt` part, `depth` and `headdrop` (no
/// per-flow RED). A zero keeps the kernel's default (net/sched/sch_sfq.c
/// `sfq_change`); `sfq_dump` sends every field as in effect.
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
    stats: QdiscStats,
}

impl Sfq {
    /// An sfq qdisc with `options` (`QdiscOptions::None`: the defaults).
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, TcError> {
        match options {
            QdiscOptions::None => Sfq::with_options(ctx, &SfqOptions::default()),
            QdiscOptions::Sfq(o) => Sfq::with_options(ctx, o),
            _ => Err(super::options::foreign("sfq")),
        }
    }

    /// An sfq qdisc with the defaults changed by `a`, validated as
    /// `sfq_change` does.
    pub fn with_options(ctx: QdiscCtx, a: &SfqOptions) -> Result<Self, TcError> {
        if a.divisor != 0 && (!a.divisor.is_power_of_two() || a.divisor > 65536) {
            return Err(TcError::new(format!(
                "RTNETLINK answers: Invalid argument (divisor {}: must be a power of two up to 65536)",
                a.divisor
            )));
        }
        if a.quantum > i32::MAX as u32 {
            return Err(TcError::new(format!(
                "Error: sch_sfq: invalid quantum. (quantum {}: at most {} bytes)",
                a.quantum,
                i32::MAX
            )));
        }
        if !(0..=MAX_PERTURB_SECS).contains(&a.perturb_period) {
            return Err(TcError::new(format!(
                "Error: sch_sfq: invalid perturb period. (perturb {}: allowed 0..{MAX_PERTURB_SECS} seconds)",
                a.perturb_period
            )));
        }
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
            return Err(TcError::new(format!(
                "Error: sch_sfq: invalid limit. (limit {} with depth {maxdepth} and flows {maxflows} allows only one packet; raise depth or flows)",
                a.limit
            )));
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
        }
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

    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, TcError> {
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
        } else if self.slots[x as usize].queue.len() >= self.maxdepth as usize {
            if !self.headdrop {
                return self.stats.reject(pkt, DropReason::QueueFull, drops);
            }
            let s = &mut self.slots[x as usize];
            let Some(head) = s.queue.pop_front() else {
                return self.stats.reject(pkt, DropReason::QueueFull, drops);
            };
            s.backlog = s.backlog - head.len as u64 + pkt.len as u64;
            self.backlog = self.backlog - head.len as u64 + pkt.len as u64;
            s.queue.push_back(pkt);
            self.stats.count_drop(head, DropReason::HeadDrop, drops);
            return Verdict::Congested;
        }
        let id = pkt.meta.id;
        self.backlog += pkt.len as u64;
        self.qlen += 1;
        self.slot_push(x, pkt);
        if self.total_qlen() <= self.limit {
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
mod tests {
    use super::*;
    use crate::qdisc::tc_h_make;
    use crate::qdisc::testutil::flow_pkt;

    fn ctx() -> QdiscCtx {
        QdiscCtx::default()
    }

    fn sfq(o: SfqOptions) -> Sfq {
        Sfq::with_options(ctx(), &o).unwrap()
    }

    /// No options given.
    fn none() -> SfqOptions {
        SfqOptions::default()
    }

    /// A frame steered into `bucket` by `skb->priority = 8001:(bucket+1)`.
    fn bpkt(id: u64, len: u32, bucket: u16) -> Packet {
        let mut p = flow_pkt(id, len, bucket);
        p.meta.priority = tc_h_make(0x8001, bucket + 1);
        p
    }

    fn t0() -> Instant {
        Instant::ZERO
    }

    fn drain_ids(q: &mut Sfq, d: &mut Drops) -> Vec<u64> {
        std::iter::from_fn(|| q.dequeue(t0(), d))
            .map(|p| p.meta.id)
            .collect()
    }

    #[test]
    fn s6_dump() {
        let q = Sfq::build(ctx(), &QdiscOptions::None).unwrap();
        let d = q.dump(t0());
        assert_eq!(
            d.options,
            QdiscOptions::Sfq(SfqOptions {
                quantum: 1514,
                perturb_period: 0,
                limit: 127,
                divisor: 1024,
                flows: 128,
                depth: 127,
                headdrop: false,
            })
        );
        assert!(d.xstats.is_none());
        let q = sfq(SfqOptions {
            perturb_period: 10,
            ..none()
        });
        assert_eq!(q.options().perturb_period, 10);
        let q = sfq(SfqOptions {
            headdrop: true,
            quantum: 3000,
            depth: 20,
            ..none()
        });
        let o = q.options();
        assert_eq!(
            (o.limit, o.quantum, o.depth, o.headdrop),
            (127, 3000, 20, true)
        );
    }

    #[test]
    fn parameter_rules() {
        // Effective limit = min(limit, depth × flows); flows capped by limit.
        let q = sfq(SfqOptions {
            limit: 1000,
            depth: 10,
            flows: 20,
            ..none()
        });
        assert_eq!((q.limit, q.maxflows), (200, 20));
        let q = sfq(SfqOptions {
            limit: 50,
            ..none()
        });
        assert_eq!((q.limit, q.maxflows), (50, 50));
        // depth clamped to 127; flows capped by divisor.
        let q = sfq(SfqOptions {
            depth: 500,
            divisor: 64,
            flows: 1000,
            ..none()
        });
        assert_eq!((q.maxdepth, q.maxflows, q.divisor), (127, 64, 64));
        let q = sfq(SfqOptions {
            flows: 100000,
            ..none()
        });
        assert_eq!(q.maxflows, MAX_FLOWS);
        let fails = |o: SfqOptions| Sfq::with_options(ctx(), &o).err().unwrap();
        let e = fails(SfqOptions {
            limit: 5,
            depth: 1,
            flows: 1,
            ..none()
        });
        assert!(e.0.starts_with("Error: sch_sfq: invalid limit."), "{e}");
        let e = fails(SfqOptions {
            divisor: 1000,
            ..none()
        });
        assert!(e.0.contains("divisor 1000"), "{e}");
        fails(SfqOptions {
            divisor: 131072,
            ..none()
        });
        let e = fails(SfqOptions {
            perturb_period: -1,
            ..none()
        });
        assert!(e.0.contains("invalid perturb period"), "{e}");
        let e = fails(SfqOptions {
            quantum: 1 << 31,
            ..none()
        });
        assert!(e.0.starts_with("Error: sch_sfq: invalid quantum."), "{e}");
        let e = Sfq::build(ctx(), &QdiscOptions::Codel(Default::default()))
            .err()
            .unwrap();
        assert!(e.0.contains("sfq"), "{e}");
    }

    #[test]
    fn change_is_not_supported() {
        let mut q = sfq(none());
        let e = q
            .change(
                &QdiscOptions::Sfq(SfqOptions {
                    limit: 10,
                    ..none()
                }),
                t0(),
                &mut Drops::new(),
            )
            .err()
            .unwrap();
        assert_eq!(
            e.0,
            "Error: Change operation not supported by specified qdisc."
        );
    }

    #[test]
    fn s1_dequeue_order() {
        let mut q = sfq(none());
        let mut d = Drops::new();
        for i in 0..10 {
            q.enqueue(bpkt(100 + i, 1500, 1), t0(), &mut d);
        }
        for i in 0..10 {
            q.enqueue(bpkt(200 + i, 100, 2), t0(), &mut d);
        }
        let order: String = drain_ids(&mut q, &mut d)
            .iter()
            .map(|id| if *id < 200 { 'A' } else { 'B' })
            .collect();
        assert_eq!(order, "AABBBBBBBBBBAAAAAAAA");
        assert_eq!(q.stats().packets, 20);
        assert_eq!(q.qlen(), 0);
        assert!(q.tail.is_none());
        assert_eq!(q.free.len(), 128);
    }

    #[test]
    fn s1_allot_trace() {
        let mut q = sfq(none());
        let mut d = Drops::new();
        for i in 0..10 {
            q.enqueue(bpkt(i, 1500, 1), t0(), &mut d);
        }
        for i in 0..10 {
            q.enqueue(bpkt(100 + i, 100, 2), t0(), &mut d);
        }
        let allot = |q: &Sfq| q.dump(t0()).classes[0].xstats.clone();
        let sx = |allot| Some(Xstats::SfqClass(SfqXstats { allot }));
        assert_eq!(allot(&q), sx(1514));
        q.dequeue(t0(), &mut d);
        assert_eq!(allot(&q), sx(14));
        q.dequeue(t0(), &mut d);
        assert_eq!(allot(&q), sx(-1486));
        q.dequeue(t0(), &mut d); // A rotated (+1514 = 28), B sends.
        assert_eq!(allot(&q), sx(28));
        let c = &q.dump(t0()).classes;
        assert_eq!(c[0].classid, 0x8001_0002);
        assert_eq!(c[1].classid, 0x8001_0003);
        assert_eq!((c[1].queue.qlen, c[1].queue.backlog), (9, 900));
        assert_eq!(c[1].xstats, sx(1414));
    }

    #[test]
    fn s2_byte_fairness_exact_counts() {
        let mut q = sfq(none());
        let mut d = Drops::new();
        let (mut a_bytes, mut b_bytes, mut a_pkts, mut b_pkts) = (0u64, 0u64, 0u64, 0u64);
        let mut id = 0;
        let mut refill = |q: &mut Sfq, d: &mut Drops| {
            for (bucket, len) in [(1u16, 1500u32), (2, 100)] {
                let x = q.ht[bucket as usize];
                let have = if x == EMPTY {
                    0
                } else {
                    q.slots[x as usize].queue.len()
                };
                for _ in have..4 {
                    q.enqueue(bpkt(id, len, bucket), t0(), d);
                    id += 1;
                }
            }
        };
        for _ in 0..100_000 {
            refill(&mut q, &mut d);
            let p = q.dequeue(t0(), &mut d).unwrap();
            if p.len == 1500 {
                a_bytes += 1500;
                a_pkts += 1;
            } else {
                b_bytes += 100;
                b_pkts += 1;
            }
        }
        assert!(d.is_empty());
        assert_eq!((a_bytes, b_bytes), (9_376_500, 9_374_900));
        assert_eq!((a_pkts, b_pkts), (6251, 93749));
    }

    #[test]
    fn new_slot_joins_end_of_round() {
        let mut q = sfq(none());
        let mut d = Drops::new();
        for i in 0..3 {
            q.enqueue(bpkt(10 + i, 1500, 1), t0(), &mut d);
            q.enqueue(bpkt(20 + i, 1500, 2), t0(), &mut d);
        }
        assert_eq!(q.dequeue(t0(), &mut d).unwrap().meta.id, 10);
        // C arrives: served after A's and B's current turns.
        q.enqueue(bpkt(30, 100, 3), t0(), &mut d);
        assert_eq!(drain_ids(&mut q, &mut d), vec![11, 20, 21, 30, 12, 22]);
    }

    #[test]
    fn overflow_drops_tail_of_longest_slot() {
        let mut q = sfq(SfqOptions {
            limit: 10,
            ..none()
        });
        let mut d = Drops::new();
        for i in 0..6 {
            q.enqueue(bpkt(i, 100, 1), t0(), &mut d);
        }
        for i in 0..4 {
            q.enqueue(bpkt(10 + i, 100, 2), t0(), &mut d);
        }
        assert_eq!(q.enqueue(bpkt(20, 100, 3), t0(), &mut d), Verdict::Queued);
        assert_eq!(d.since(0)[0].0.meta.id, 5);
        assert_eq!(d.since(0)[0].1, DropReason::SfqOverflow);
        assert_eq!((q.qlen(), q.backlog()), (10, 1000));
        assert_eq!(q.stats().drops, 1);
        // Arriving into the longest slot: the arriving frame is the tail.
        assert_eq!(q.enqueue(bpkt(6, 100, 1), t0(), &mut d), Verdict::Dropped);
        assert_eq!(d.since(1)[0].0.meta.id, 6);
    }

    #[test]
    fn overflow_tie_goes_to_most_recent() {
        let mut q = sfq(SfqOptions {
            limit: 10,
            ..none()
        });
        let mut d = Drops::new();
        for i in 0..5 {
            q.enqueue(bpkt(i, 100, 1), t0(), &mut d);
        }
        for i in 0..5 {
            q.enqueue(bpkt(10 + i, 100, 2), t0(), &mut d);
        }
        // Both hold 5; B reached 5 last.
        q.enqueue(bpkt(20, 100, 3), t0(), &mut d);
        assert_eq!(d.since(0)[0].0.meta.id, 14);
        // Now A 5, B 4, C 1. Bring B back to 5: B is again the latest.
        q.enqueue(bpkt(15, 100, 2), t0(), &mut d);
        assert_eq!(d.since(1)[0].0.meta.id, 15, "arriving frame of B dropped");
        // Dequeue one of A (A 4) then refill A to 5: A is now the latest.
        assert_eq!(q.dequeue(t0(), &mut d).unwrap().meta.id, 0);
        q.enqueue(bpkt(5, 100, 1), t0(), &mut d);
        assert!(d.len() == 2, "9 + 1 = 10 frames, no drop");
        q.enqueue(bpkt(6, 100, 1), t0(), &mut d);
        assert_eq!(d.since(2)[0].0.meta.id, 6);
    }

    #[test]
    fn headdrop_overflow_and_depth() {
        let mut q = sfq(SfqOptions {
            limit: 10,
            headdrop: true,
            ..none()
        });
        let mut d = Drops::new();
        for i in 0..10 {
            q.enqueue(bpkt(i, 100, 1), t0(), &mut d);
        }
        assert_eq!(
            q.enqueue(bpkt(10, 100, 1), t0(), &mut d),
            Verdict::Congested
        );
        assert_eq!(d.since(0)[0].0.meta.id, 0);
        assert_eq!(d.since(0)[0].1, DropReason::SfqOverflow);

        let mut q = sfq(SfqOptions {
            depth: 3,
            headdrop: true,
            ..none()
        });
        let mut d = Drops::new();
        for i in 0..3 {
            q.enqueue(bpkt(i, 100 + i as u32, 1), t0(), &mut d);
        }
        assert_eq!(q.enqueue(bpkt(3, 500, 1), t0(), &mut d), Verdict::Congested);
        assert_eq!(d.since(0)[0].0.meta.id, 0);
        assert_eq!(d.since(0)[0].1, DropReason::HeadDrop);
        assert_eq!((q.qlen(), q.backlog()), (3, 101 + 102 + 500));
        assert_eq!(drain_ids(&mut q, &mut d), vec![1, 2, 3]);

        let mut q = sfq(SfqOptions { depth: 3, ..none() });
        let mut d = Drops::new();
        for i in 0..4 {
            q.enqueue(bpkt(i, 100, 1), t0(), &mut d);
        }
        assert_eq!(d.since(0)[0].0.meta.id, 3);
        assert_eq!(d.since(0)[0].1, DropReason::QueueFull);
        assert_eq!(q.stats().drops, 1);
    }

    #[test]
    fn all_slots_one_packet_drops_next_served_slot() {
        // Default: 128 slots, limit 127.
        let mut q = sfq(none());
        let mut d = Drops::new();
        for b in 0..128u16 {
            q.enqueue(bpkt(b as u64, 100, b), t0(), &mut d);
        }
        assert_eq!(d.len(), 1);
        assert_eq!(d.since(0)[0].0.meta.id, 0, "slot served next");
        assert_eq!(q.qlen(), 127);
        assert_eq!(q.ht[0], EMPTY);
        assert_eq!(q.dequeue(t0(), &mut d).unwrap().meta.id, 1);
        assert_eq!(q.dump(t0()).classes.len(), 126);
    }

    #[test]
    fn no_free_slot_drops_arrival() {
        let mut q = sfq(SfqOptions { flows: 2, ..none() });
        let mut d = Drops::new();
        q.enqueue(bpkt(1, 100, 1), t0(), &mut d);
        q.enqueue(bpkt(2, 100, 2), t0(), &mut d);
        assert_eq!(q.enqueue(bpkt(3, 100, 3), t0(), &mut d), Verdict::Dropped);
        assert_eq!(d.since(0)[0].1, DropReason::SfqOverflow);
        q.dequeue(t0(), &mut d);
        assert_eq!(q.enqueue(bpkt(4, 100, 3), t0(), &mut d), Verdict::Queued);
    }

    #[test]
    fn perturb_rekeys_and_rehashes_keeping_flow_order() {
        let mut q = sfq(SfqOptions {
            perturb_period: 1,
            ..none()
        });
        let mut d = Drops::new();
        let mut id = 0;
        for round in 0..5 {
            for f in 0..20u16 {
                let mut p = flow_pkt(id, 100 + round, f);
                p.meta.id = (f as u64) * 1000 + round as u64;
                q.enqueue(p, Instant::from_millis(100), &mut d);
                id += 1;
            }
        }
        let key0 = q.hash_key;
        let buckets0: Vec<u32> = q.dump(t0()).classes.iter().map(|c| c.classid).collect();
        // Before the period: no change.
        q.dequeue(Instant::from_millis(900), &mut d).unwrap();
        assert_eq!(q.hash_key, key0);
        // After 1 s from the first call: re-keyed and rehashed.
        q.enqueue(
            flow_pkt(999_999, 64, 99),
            Instant::from_millis(1100),
            &mut d,
        );
        assert_ne!(q.hash_key, key0);
        let buckets1: Vec<u32> = q.dump(t0()).classes.iter().map(|c| c.classid).collect();
        assert_ne!(buckets0, buckets1);
        assert!(d.is_empty());
        assert_eq!(q.qlen(), 100);
        let out = drain_ids(&mut q, &mut d);
        assert_eq!(out.len(), 100);
        for f in 0..20u64 {
            let rounds: Vec<u64> = out
                .iter()
                .filter(|id| **id / 1000 == f && **id < 999_999)
                .map(|id| id % 1000)
                .collect();
            let expected: Vec<u64> = if f == 0 {
                (1..5).collect()
            } else {
                (0..5).collect()
            };
            assert_eq!(rounds, expected, "flow {f}");
        }
    }

    #[test]
    fn with_filters_perturb_rekeys_but_leaves_frames_where_filters_put_them() {
        let mut q = sfq(SfqOptions {
            perturb_period: 1,
            ..none()
        });
        // tc filter add ... parent 8001: protocol all matchall flowid 8001:7
        let f = crate::packet::filter::Filter {
            parent: Some(0x8001_0000),
            ..crate::packet::filter::Filter::new(
                crate::packet::filter::FilterProtocol::All,
                crate::packet::filter::FilterKind::Matchall,
                Vec::new(),
                0x8001_0007,
            )
        };
        q.add_filter(f).unwrap();
        let mut d = Drops::new();
        for f in 0..10u16 {
            q.enqueue(
                flow_pkt(f as u64, 100, f),
                Instant::from_millis(100),
                &mut d,
            );
        }
        let key0 = q.hash_key;
        q.enqueue(flow_pkt(10, 100, 10), Instant::from_millis(1200), &mut d);
        assert_ne!(q.hash_key, key0, "re-keyed");
        let classes: Vec<u32> = q.dump(t0()).classes.iter().map(|c| c.classid).collect();
        assert_eq!(
            classes,
            vec![0x8001_0007],
            "all 11 frames still in bucket 7"
        );
        assert!(d.is_empty());
    }

    #[test]
    fn perturb_rehash_drops_beyond_depth() {
        let mut q = sfq(SfqOptions {
            perturb_period: 1,
            depth: 4,
            divisor: 2,
            ..none()
        });
        let key0 = q.hash_key;
        let key1: u32 = q.rng.clone().gen();
        let bucket = |f: u16, key: u32| keyed_flow_hash(flow_pkt(0, 1, f).meta.hash, key) & 1;
        // Two flows apart under the old key that collide under the new one.
        let (f1, f2) = (0..200u16)
            .flat_map(|a| (0..200u16).map(move |b| (a, b)))
            .find(|&(a, b)| {
                bucket(a, key0) != bucket(b, key0) && bucket(a, key1) == bucket(b, key1)
            })
            .expect("some pair collides");
        let mut d = Drops::new();
        for i in 0..3 {
            q.enqueue(flow_pkt(i, 100, f1), t0(), &mut d);
            q.enqueue(flow_pkt(10 + i, 100, f2), t0(), &mut d);
        }
        assert_eq!(q.dump(t0()).classes.len(), 2);
        q.peek(Instant::from_millis(1500), &mut d);
        assert_eq!(q.hash_key, key1);
        assert_eq!(d.len(), 2, "6 frames into one slot of depth 4");
        assert!(d
            .since(0)
            .iter()
            .all(|(_, r)| *r == DropReason::SfqOverflow));
        assert_eq!(q.stats().drops, 0, "rehash frees are not counted (kernel)");
        assert_eq!(q.qlen(), 4);
        assert_eq!(q.dump(t0()).classes.len(), 1);
    }

    #[test]
    fn peek_reset_drain() {
        let mut q = sfq(none());
        let mut d = Drops::new();
        for i in 0..4 {
            q.enqueue(bpkt(i, 100, (i % 2) as u16), t0(), &mut d);
        }
        assert_eq!(q.peek(t0(), &mut d).unwrap().meta.id, 0);
        assert_eq!((q.qlen(), q.backlog()), (4, 400));
        assert_eq!(q.stats().packets, 0);
        assert_eq!(q.dequeue(t0(), &mut d).unwrap().meta.id, 0);
        q.peek(t0(), &mut d);
        let drained: Vec<u64> = q.drain_all().iter().map(|p| p.meta.id).collect();
        assert_eq!(drained.len(), 3);
        assert_eq!((q.qlen(), q.backlog()), (0, 0));
        assert_eq!(q.free.len(), 128);
        for i in 0..4 {
            q.enqueue(bpkt(i, 100, i as u16), t0(), &mut d);
        }
        q.reset(&mut d);
        assert_eq!(d.len(), 4);
        assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::QdiscReset));
        assert!(q.dump(t0()).classes.is_empty());
        assert!(q.can_bypass());
    }

    #[test]
    fn hash_buckets_low_bits() {
        let q = sfq(SfqOptions {
            divisor: 16,
            ..none()
        });
        for f in 0..100 {
            assert!(q.classify(&mut flow_pkt(0, 64, f)).unwrap() < 16);
        }
        let mut p = flow_pkt(0, 64, 1);
        p.meta.priority = tc_h_make(0x8001, 16);
        assert_eq!(q.classify(&mut p), Some(15));
        p.meta.priority = tc_h_make(0x8001, 17);
        assert!(q.classify(&mut p).unwrap() < 16);
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        #[derive(Clone, Debug)]
        enum Op {
            Enq { flow: u16, len: u32 },
            Deq,
            Peek,
            Wait(u64),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                5 => (0u16..12, 60u32..1515).prop_map(|(flow, len)| Op::Enq { flow, len }),
                3 => Just(Op::Deq),
                1 => Just(Op::Peek),
                1 => (0u64..700).prop_map(Op::Wait),
            ]
        }

        fn check(o: SfqOptions, ops: Vec<Op>, perturb: bool) -> Result<(), TestCaseError> {
            let mut q = sfq(o);
            let mut d = Drops::new();
            let mut now = 0u64;
            let (mut enq, mut sent) = (0u64, 0u64);
            let mut last_out: std::collections::HashMap<u16, u64> = Default::default();
            for (i, o) in ops.into_iter().enumerate() {
                let t = Instant::from_millis(now);
                match o {
                    Op::Enq { flow, len } => {
                        enq += 1;
                        let mut p = flow_pkt(i as u64, len, flow);
                        p.meta.id = i as u64;
                        q.enqueue(p, t, &mut d);
                    }
                    Op::Deq => {
                        if let Some(p) = q.dequeue(t, &mut d) {
                            sent += 1;
                            // Per-flow FIFO order holds, perturbation or not.
                            let flow = p.meta.flow.src_port;
                            let prev = last_out.insert(flow, p.meta.id);
                            prop_assert!(prev.is_none_or(|x| x < p.meta.id));
                        }
                    }
                    Op::Peek => {
                        q.peek(t, &mut d);
                    }
                    Op::Wait(ms) => now += ms,
                }
                let active: Vec<usize> =
                    q.ht.iter()
                        .filter(|x| **x != EMPTY)
                        .map(|x| *x as usize)
                        .collect();
                let held: usize = active.iter().map(|x| q.slots[*x].queue.len()).sum();
                let bytes: u64 = active.iter().map(|x| q.slots[*x].backlog).sum();
                prop_assert_eq!(held as u32, q.qlen);
                prop_assert_eq!(bytes, q.backlog);
                prop_assert!(active.iter().all(|x| !q.slots[*x].queue.is_empty()));
                prop_assert!(active
                    .iter()
                    .all(|x| q.slots[*x].queue.len() <= q.maxdepth as usize));
                prop_assert_eq!(active.len() + q.free.len(), q.maxflows as usize);
                prop_assert!(q.qlen() <= q.limit);
                prop_assert_eq!(enq, sent + d.len() as u64 + q.qlen() as u64);
                if !perturb {
                    prop_assert_eq!(q.stats().drops, d.len() as u64);
                }
                // The round visits exactly the active slots.
                let mut ring = 0;
                if let Some(t) = q.tail {
                    let mut x = t;
                    loop {
                        ring += 1;
                        x = q.slots[x as usize].next;
                        if x == t || ring > q.maxflows {
                            break;
                        }
                    }
                }
                prop_assert_eq!(ring as usize, active.len());
            }
            Ok(())
        }

        proptest! {
            #[test]
            fn invariants_hold(ops in proptest::collection::vec(op(), 1..400)) {
                check(SfqOptions { limit: 20, depth: 6, flows: 5, divisor: 8, ..none() }, ops, false)?;
            }

            #[test]
            fn invariants_hold_with_headdrop(ops in proptest::collection::vec(op(), 1..400)) {
                check(SfqOptions { limit: 20, depth: 6, headdrop: true, divisor: 16, ..none() }, ops, false)?;
            }

            #[test]
            fn invariants_hold_with_perturb(ops in proptest::collection::vec(op(), 1..400)) {
                check(SfqOptions { limit: 20, depth: 6, flows: 5, divisor: 8, perturb_period: 1, ..none() }, ops, true)?;
            }
        }
    }
}
