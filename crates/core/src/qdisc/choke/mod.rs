//! CHOKe, "CHOose and Keep for responsive flows, CHOose and Kill for
//! unresponsive flows" (Linux net/sched/sch_choke.c as of 6.18): RED
//! counted in packets (the EWMA of the queue length and the marking
//! decision of include/net/red.h, here `red::algorithm`), with one step
//! more once the average is above `min`: a frame drawn at random from the
//! queue is compared with the arriving one, and when both belong to the
//! same flow (the flow dissector's keys, `choke_match_flow`) both are
//! dropped (`matched`). The queue is a ring of `2^k` slots (the smallest
//! above `limit`) in which such a drop leaves a hole; the head skips the
//! holes (`choke_zap_head_holes`) and the random draw retries a hole
//! twice before taking the head (`choke_peek_random`). Above `max` every
//! arrival is marked (`ecn`, ECN-capable) or dropped (`harddrop`: always
//! dropped), between the thresholds RED's probability decides, and at
//! `limit` frames the arrival is dropped (`pdrop`). Its options are
//! `struct tc_red_qopt` with TCA_CHOKE_STAB and TCA_CHOKE_MAX_P
//! (`ChokeOptions`); its xstats `tc_choke_xstats`. 6.18's choke has no
//! classes and no filters (both went in Linux 4.x).

pub mod xstats;

pub use xstats::ChokeXstats;

use super::dump::{QueueId, QueueOccupancy};
use super::options::foreign as foreign_options;
use super::red::algorithm::{red_check_params, RedParms, RedVars, RED_STAB_SIZE};
use super::red::{TC_RED_ECN, TC_RED_HARDDROP};
use super::{Errno, Qdisc, QdiscCtx, QdiscDump, QdiscOptions, QdiscStats, Refusal, Verdict};
use super::{Handle, Xstats};
use crate::packet::ecn::mark_ce;
use crate::packet::{DropReason, Drops, Packet, L3};
use crate::time::Instant;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// `CHOKE_MAX_QUEUE`: the largest `limit`, packets.
pub const CHOKE_MAX_QUEUE: u32 = 128 * 1024 - 1;

/// choke's `TCA_OPTIONS` (sch_choke.c `choke_change`, `choke_dump`):
/// TCA_CHOKE_PARMS (`struct tc_red_qopt`, thresholds in packets),
/// TCA_CHOKE_STAB (the 256-byte idle table tc computes) and
/// TCA_CHOKE_MAX_P. `choke_dump` fills the struct and MAX_P and leaves
/// STAB out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChokeOptions {
    /// Frames the queue may hold.
    pub limit: u32,
    /// The band's lower threshold, packets.
    pub qth_min: u32,
    /// The band's upper threshold, packets.
    pub qth_max: u32,
    /// log2(1/W) of the EWMA.
    pub wlog: u8,
    /// log2 of span / max_P (used when MAX_P is absent or 0).
    pub plog: u8,
    /// log2 of the idle table's cell, µs.
    pub scell_log: u8,
    /// `tc_red_qopt.flags`: TC_RED_ECN, TC_RED_HARDDROP (kept whole and
    /// dumped back as given).
    pub flags: u8,
    /// TCA_CHOKE_STAB: the idle table (required, 256 bytes).
    pub stab: Option<Vec<u8>>,
    /// TCA_CHOKE_MAX_P: max_P in Q0.32 (absent or 0: from Plog).
    pub max_p: Option<u32>,
}

/// choke's `q->stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ChokeStats {
    prob_drop: u32,
    prob_mark: u32,
    forced_drop: u32,
    forced_mark: u32,
    pdrop: u32,
    matched: u32,
}

/// The kernel's `get_random_u32_below` (lib/random32.c in 6.x,
/// `__get_random_u32_below`): Lemire's multiply-and-shift of a random
/// u32 by `ceil`, redrawing while the low half falls in the biased
/// remainder.
fn random_below(rng: &mut SmallRng, ceil: u32) -> u32 {
    let mut mult = u64::from(ceil) * u64::from(rng.gen::<u32>());
    if ceil == 0 {
        return mult as u32;
    }
    if (mult as u32) < ceil {
        let bound = ceil.wrapping_neg() % ceil;
        while (mult as u32) < bound {
            mult = u64::from(ceil) * u64::from(rng.gen::<u32>());
        }
    }
    (mult >> 32) as u32
}

/// What `choke_match_flow` compares of a frame: `skb->protocol` and the
/// `flow_keys_digest` of its dissected keys (`make_flow_keys_digest`:
/// n_proto, ip_proto, the ports and the 8 bytes of `v4addrs`). For IPv6
/// the kernel reads `v4addrs` out of the union with the IPv6 addresses,
/// so it compares the first 8 bytes of the source address and none of the
/// destination's; that is kept. Non-IP frames carry the all-zero key.
fn same_flow(a: &Packet, b: &Packet) -> bool {
    let (fa, fb) = (&a.meta.flow, &b.meta.flow);
    let l4 = fa.proto == fb.proto && fa.src_port == fb.src_port && fa.dst_port == fb.dst_port;
    match (a.meta.l3, b.meta.l3) {
        (L3::Ipv6 { .. }, L3::Ipv6 { .. }) => l4 && fa.src[..8] == fb.src[..8],
        (L3::Ipv4 { .. }, L3::Ipv4 { .. }) | (L3::Other, L3::Other) => {
            l4 && fa.src == fb.src && fa.dst == fb.dst
        }
        _ => false,
    }
}

/// What `choke_change` makes of valid options.
struct Config {
    limit: u32,
    flags: u8,
    parms: RedParms,
}

/// `choke_change` up to its point of no return: the checks in the
/// kernel's order.
fn configure(o: &ChokeOptions) -> Result<Config, Refusal> {
    // TCA_CHOKE_STAB missing (or shorter than RED_STAB_SIZE, which the
    // policy refuses): a bare EINVAL.
    let stab: &[u8; RED_STAB_SIZE] = o
        .stab
        .as_deref()
        .and_then(|s| s.get(..RED_STAB_SIZE))
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| {
            Refusal::bare(Errno::EINVAL).below("choke needs its idle table (TCA_CHOKE_STAB)")
        })?;
    if !red_check_params(o.qth_min, o.qth_max, o.wlog, o.scell_log, stab) {
        return Err(Refusal::bare(Errno::EINVAL).below(format!(
            "red_check_params: min {} max {} ewma {} Scell_log {}: max must not be below min, \
             each threshold shifted by ewma must fit 31 bits, Scell_log and the idle table's \
             entries must be below 32",
            o.qth_min, o.qth_max, o.wlog, o.scell_log
        )));
    }
    if o.limit > CHOKE_MAX_QUEUE {
        return Err(Refusal::bare(Errno::EINVAL).below(format!(
            "choke's limit {} is above CHOKE_MAX_QUEUE ({CHOKE_MAX_QUEUE} packets)",
            o.limit
        )));
    }
    Ok(Config {
        limit: o.limit,
        flags: o.flags,
        parms: RedParms::new(
            o.qth_min,
            o.qth_max,
            o.wlog,
            o.plog,
            o.scell_log,
            stab,
            o.max_p.unwrap_or(0),
        ),
    })
}

/// Mixed into the instance's seed for its random source ("choke").
const SEED_SALT: u64 = 0x0063_686f_6b65;

/// `roundup_pow_of_two(limit + 1) - 1`: the ring's index mask.
fn ring_mask(limit: u32) -> u32 {
    (limit + 1).next_power_of_two() - 1
}

/// The choke qdisc (`struct choke_sched_data`).
pub struct Choke {
    handle: Handle,
    parent: Handle,
    limit: u32,
    /// `q->flags`: TC_RED_* bits as given.
    flags: u8,
    parms: RedParms,
    vars: RedVars,
    choke_stats: ChokeStats,
    /// The ring (`q->tab`), `mask + 1` slots; `None` is a hole or free.
    tab: Vec<Option<Packet>>,
    head: u32,
    tail: u32,
    mask: u32,
    qlen: u32,
    backlog: u64,
    stats: QdiscStats,
    /// `get_random_u32` of `red_random` and of the draw, seeded.
    rng: SmallRng,
}

impl Choke {
    /// `choke_init` (= `choke_change` on a fresh instance): no options is
    /// EINVAL. The kernel's zeroed `red_vars` start outside any idle
    /// period, and `choke_change` ends the idle period of an empty queue.
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        let o = match options {
            QdiscOptions::Choke(o) => o,
            QdiscOptions::None => {
                return Err(Refusal::bare(Errno::EINVAL)
                    .below("choke needs options (limit, bandwidth, ...)"))
            }
            _ => return Err(foreign_options("choke")),
        };
        let config = configure(o)?;
        let mut choke = Choke {
            handle: ctx.handle,
            parent: ctx.parent,
            limit: 0,
            flags: 0,
            parms: config.parms.clone(),
            vars: RedVars::default(),
            choke_stats: ChokeStats::default(),
            tab: Vec::new(),
            head: 0,
            tail: 0,
            // No table yet: the first change always makes one.
            mask: u32::MAX,
            qlen: 0,
            backlog: 0,
            stats: QdiscStats::default(),
            rng: SmallRng::seed_from_u64(ctx.seed ^ SEED_SALT),
        };
        choke.install(config, &mut Drops::new());
        Ok(choke)
    }

    /// The rest of `choke_change`: a new ring when the mask changes (the
    /// frames moved to its front in order, holes closed, those beyond
    /// `mask` slots dropped), then the flags, the limit, the parameters,
    /// `red_set_vars` (qavg 0, qcount -1; an idle period goes on) and,
    /// with an empty ring, the idle period ended.
    fn install(&mut self, c: Config, drops: &mut Drops) {
        let mask = ring_mask(c.limit);
        if mask != self.mask {
            let mut ntab: Vec<Option<Packet>> = Vec::new();
            ntab.resize_with(mask as usize + 1, || None);
            let mut tail = 0u32;
            while self.head != self.tail {
                let slot = self.tab[self.head as usize].take();
                self.head = (self.head + 1) & self.mask;
                let Some(p) = slot else { continue };
                if tail < mask {
                    ntab[tail as usize] = Some(p);
                    tail += 1;
                    continue;
                }
                self.qlen -= 1;
                self.backlog -= u64::from(p.len);
                self.stats.count_drop(p, DropReason::QdiscReset, drops);
            }
            self.tab = ntab;
            self.mask = mask;
            self.head = 0;
            self.tail = tail;
        }
        self.flags = c.flags;
        self.limit = c.limit;
        self.parms = c.parms;
        self.vars.qavg = 0;
        self.vars.qcount = -1;
        if self.head == self.tail {
            self.vars.end_idle();
        }
    }

    /// The parameters in force.
    pub fn parms(&self) -> &RedParms {
        &self.parms
    }

    /// The variables: qavg (packets scaled by 2^Wlog), qcount, qR, the
    /// idle period.
    pub fn vars(&self) -> &RedVars {
        &self.vars
    }

    /// `choke_len`: slots from head to tail, holes included.
    fn len(&self) -> u32 {
        self.tail.wrapping_sub(self.head) & self.mask
    }

    /// `choke_zap_head_holes`.
    fn zap_head_holes(&mut self) {
        loop {
            self.head = (self.head + 1) & self.mask;
            if self.head == self.tail || self.tab[self.head as usize].is_some() {
                break;
            }
        }
    }

    /// `choke_zap_tail_holes`.
    fn zap_tail_holes(&mut self) {
        loop {
            self.tail = self.tail.wrapping_sub(1) & self.mask;
            if self.head == self.tail || self.tab[self.tail as usize].is_some() {
                break;
            }
        }
    }

    /// `choke_peek_random`: the index of a frame drawn at random between
    /// head and tail; after three holes, the head's. The ring is not
    /// empty.
    fn peek_random(&mut self) -> u32 {
        let len = self.len();
        for _ in 0..3 {
            let idx = (self.head + random_below(&mut self.rng, len)) & self.mask;
            if self.tab[idx as usize].is_some() {
                return idx;
            }
        }
        self.head
    }

    /// `choke_match_random`: the index of a queued frame of `pkt`'s flow,
    /// drawn at random, if the draw found one.
    fn match_random(&mut self, pkt: &Packet) -> Option<u32> {
        if self.head == self.tail {
            return None;
        }
        let idx = self.peek_random();
        let queued = self.tab[idx as usize].as_ref()?;
        same_flow(queued, pkt).then_some(idx)
    }

    /// `choke_drop_by_idx`: the frame at `idx` dropped, a hole left.
    fn drop_by_idx(&mut self, idx: u32, drops: &mut Drops) {
        let Some(p) = self.tab[idx as usize].take() else {
            return;
        };
        if idx == self.head {
            self.zap_head_holes();
        }
        if idx == self.tail {
            self.zap_tail_holes();
        }
        self.qlen -= 1;
        self.backlog -= u64::from(p.len);
        self.stats.count_drop(p, DropReason::ChokeMatched, drops);
    }

    /// Closes the holes when the next frame would fill the ring's last
    /// free slot. The kernel does not: its tail would then meet the head
    /// and the ring look empty with frames in it (from then on lost). The
    /// order of the frames is kept, and nothing the kernel can reach
    /// otherwise changes.
    fn make_room(&mut self) {
        if (self.tail + 1) & self.mask != self.head {
            return;
        }
        let head = self.head as usize;
        self.tab.rotate_left(head);
        let mut w = 0usize;
        for r in 0..self.tab.len() {
            if self.tab[r].is_some() {
                self.tab.swap(w, r);
                w += 1;
            }
        }
        self.head = 0;
        self.tail = w as u32;
    }

    fn ecn(&self) -> bool {
        u32::from(self.flags) & TC_RED_ECN != 0
    }

    fn harddrop(&self) -> bool {
        u32::from(self.flags) & TC_RED_HARDDROP != 0
    }

    /// The frames in dequeue order.
    fn queued(&self) -> impl Iterator<Item = &Packet> + Clone {
        (0..self.len())
            .filter_map(move |i| self.tab[((self.head + i) & self.mask) as usize].as_ref())
    }

    /// The options as `choke_dump` fills them.
    fn dumped_options(&self) -> ChokeOptions {
        let p = &self.parms;
        ChokeOptions {
            limit: self.limit,
            qth_min: p.qth_min.wrapping_shr(u32::from(p.wlog)),
            qth_max: p.qth_max.wrapping_shr(u32::from(p.wlog)),
            wlog: p.wlog,
            plog: p.plog,
            scell_log: p.scell_log,
            flags: self.flags,
            stab: None,
            max_p: Some(p.max_p),
        }
    }

    /// `choke_dump_stats`.
    fn xstats(&self) -> ChokeXstats {
        let s = &self.choke_stats;
        ChokeXstats {
            early: s.prob_drop.wrapping_add(s.forced_drop),
            pdrop: s.pdrop,
            other: 0,
            marked: s.prob_mark.wrapping_add(s.forced_mark),
            matched: s.matched,
        }
    }
}

impl Qdisc for Choke {
    fn kind(&self) -> &'static str {
        "choke"
    }

    /// `choke_enqueue`.
    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        self.vars.qavg = self.vars.calc_qavg(&self.parms, self.qlen, now);
        if self.vars.is_idling() {
            self.vars.end_idle();
        }
        let qavg = self.vars.qavg;
        if qavg <= u64::from(self.parms.qth_min) {
            self.vars.qcount = -1;
        } else {
            if let Some(idx) = self.match_random(&pkt) {
                self.choke_stats.matched = self.choke_stats.matched.wrapping_add(1);
                self.drop_by_idx(idx, drops);
                return self.stats.reject(pkt, DropReason::ChokeMatched, drops);
            }
            if qavg > u64::from(self.parms.qth_max) {
                self.vars.qcount = -1;
                self.stats.overlimits += 1;
                if self.harddrop() || !self.ecn() || !mark_ce(&mut pkt) {
                    self.choke_stats.forced_drop = self.choke_stats.forced_drop.wrapping_add(1);
                    return self.stats.reject(pkt, DropReason::RedForced, drops);
                }
                self.choke_stats.forced_mark = self.choke_stats.forced_mark.wrapping_add(1);
            } else {
                self.vars.qcount = self.vars.qcount.wrapping_add(1);
                if self.vars.qcount != 0 {
                    if self.vars.mark_probability(&self.parms, qavg) {
                        self.vars.qcount = 0;
                        self.vars.qr = self.parms.random(self.rng.gen::<u32>());
                        self.stats.overlimits += 1;
                        if !self.ecn() || !mark_ce(&mut pkt) {
                            self.choke_stats.prob_drop = self.choke_stats.prob_drop.wrapping_add(1);
                            return self.stats.reject(pkt, DropReason::RedEarly, drops);
                        }
                        self.choke_stats.prob_mark = self.choke_stats.prob_mark.wrapping_add(1);
                    }
                } else {
                    self.vars.qr = self.parms.random(self.rng.gen::<u32>());
                }
            }
        }
        if self.qlen < self.limit {
            self.make_room();
            pkt.meta.enqueue_time = now;
            self.backlog += u64::from(pkt.len);
            self.tab[self.tail as usize] = Some(pkt);
            self.tail = (self.tail + 1) & self.mask;
            self.qlen += 1;
            return Verdict::Queued;
        }
        self.choke_stats.pdrop = self.choke_stats.pdrop.wrapping_add(1);
        self.stats.reject(pkt, DropReason::QueueFull, drops)
    }

    /// `choke_dequeue`: an empty ring begins an idle period.
    fn dequeue(&mut self, now: Instant, _drops: &mut Drops) -> Option<Packet> {
        if self.head == self.tail {
            if !self.vars.is_idling() {
                self.vars.start_idle(now);
            }
            return None;
        }
        let pkt = self.tab[self.head as usize].take()?;
        self.zap_head_holes();
        self.qlen -= 1;
        self.backlog -= u64::from(pkt.len);
        self.stats.count_sent(&pkt);
        Some(pkt)
    }

    /// `choke_peek_head`.
    fn peek(&mut self, _now: Instant, _drops: &mut Drops) -> Option<&Packet> {
        if self.head == self.tail {
            return None;
        }
        self.tab[self.head as usize].as_ref()
    }

    fn qlen(&self) -> u32 {
        self.qlen
    }

    fn backlog(&self) -> u64 {
        self.backlog
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    /// `choke_reset`: every frame dropped (`rtnl_qdisc_drop` counts it),
    /// the ring emptied, `red_restart`.
    fn reset(&mut self, drops: &mut Drops) {
        for p in self.drain_all() {
            self.stats.count_drop(p, DropReason::QdiscReset, drops);
        }
        self.vars.restart();
    }

    /// `choke_change`: every check first; a refused change leaves choke
    /// as it was. No TCA_OPTIONS: `qdisc_change` does not call it.
    fn change(
        &mut self,
        options: &QdiscOptions,
        _now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        let o = match options {
            QdiscOptions::Choke(o) => o,
            QdiscOptions::None => return Ok(()),
            _ => return Err(foreign_options("choke")),
        };
        let config = configure(o)?;
        self.install(config, drops);
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        let occupancy = if self.qlen == 0 {
            Vec::new()
        } else {
            vec![QueueOccupancy::of_qdisc(QueueId::Fifo, self.queued(), now)]
        };
        QdiscDump {
            kind: "choke".into(),
            handle: self.handle,
            parent: self.parent,
            options: QdiscOptions::Choke(self.dumped_options()),
            stats: self.stats(),
            xstats: Some(Xstats::Choke(self.xstats())),
            occupancy,
            ..QdiscDump::default()
        }
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        let mut out = Vec::with_capacity(self.qlen as usize);
        while self.head != self.tail {
            if let Some(p) = self.tab[self.head as usize].take() {
                out.push(p);
            }
            self.head = (self.head + 1) & self.mask;
        }
        self.head = 0;
        self.tail = 0;
        self.qlen = 0;
        self.backlog = 0;
        out
    }
}

#[cfg(test)]
mod tests;
