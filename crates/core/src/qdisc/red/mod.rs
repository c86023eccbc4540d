//! RED, Random Early Detection (Linux net/sched/sch_red.c, its arithmetic
//! in include/net/red.h, here `algorithm`): a classful qdisc with one
//! class `:1` whose child (by default a bfifo of `limit` bytes, made by
//! `fifo_create_dflt`) holds the frames. At each arrival RED updates the
//! average backlog of the child (an EWMA of weight 2^-Wlog, decayed by the
//! Stab table after an idle period) and, with the average between `min`
//! and `max`, marks or drops the frame with a probability that rises to
//! max_P at `max`; at or above `max` every frame is marked or dropped.
//! With `ecn` an ECN-capable frame is marked CE instead of dropped (with
//! `harddrop`, not above `max`); with `nodrop` a frame that cannot be
//! marked is queued rather than dropped. With `adaptive` (when the kernel
//! arms its timer, see `RedOptions::flags`) max_P is moved every 500 ms
//! towards keeping the average in the middle of the band. Its options are
//! `struct tc_red_qopt` with the TCA_RED_STAB, TCA_RED_MAX_P and
//! TCA_RED_FLAGS attributes (`RedOptions`); its xstats `tc_red_xstats`.

pub mod algorithm;
pub mod xstats;

pub use xstats::RedXstats;

use super::dump::QueueOccupancy;
use super::fifo::{Fifo, FifoKind};
use super::one_class::{self, OneClass};
use super::options::foreign as foreign_options;
use super::{
    Classful, Errno, FlowListing, Qdisc, QdiscCtx, QdiscDump, QdiscOptions, QdiscStats, Refusal,
    Verdict, Xstats,
};
use crate::packet::ecn::mark_ce;
use crate::packet::{DropReason, Drops, Packet};
use crate::time::{Instant, NS_PER_MS, NS_PER_US};
use algorithm::RED_STAB_SIZE;
use algorithm::{red_adaptative_algo, red_check_params, RedAction, RedParms, RedVars};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// `TC_RED_ECN`: mark ECN-capable frames CE instead of dropping them.
pub const TC_RED_ECN: u32 = 1;
/// `TC_RED_HARDDROP`: at or above max, drop even ECN-capable frames.
pub const TC_RED_HARDDROP: u32 = 2;
/// `TC_RED_ADAPTATIVE`: adaptive RED (max_P moved every 500 ms).
pub const TC_RED_ADAPTATIVE: u32 = 4;
/// `TC_RED_NODROP`: with ECN, queue the frames that cannot be marked.
pub const TC_RED_NODROP: u32 = 8;
/// `TC_RED_HISTORIC_FLAGS`: the flags `tc_red_qopt.flags` may carry.
pub const TC_RED_HISTORIC_FLAGS: u32 = TC_RED_ECN | TC_RED_HARDDROP | TC_RED_ADAPTATIVE;
/// `TC_RED_SUPPORTED_FLAGS`: what TCA_RED_FLAGS may select.
pub const TC_RED_SUPPORTED_FLAGS: u32 = TC_RED_HISTORIC_FLAGS | TC_RED_NODROP;

/// Adaptive RED's period, `HZ/2` jiffies.
pub const ADAPT_PERIOD_NS: u64 = 500 * NS_PER_MS;

/// `struct nla_bitfield32`: the flags `value` among the `selector`ed bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bitfield32 {
    /// The flags' values.
    pub value: u32,
    /// The flags this message sets (others keep theirs).
    pub selector: u32,
}

/// RED's `TCA_OPTIONS` (sch_red.c `red_init`/`red_change`, `red_dump`):
/// `struct tc_red_qopt` (limit, thresholds, Wlog, Plog, Scell_log, flags)
/// and the attributes TCA_RED_STAB (the 256-byte idle table tc computes),
/// TCA_RED_MAX_P and TCA_RED_FLAGS. `red_dump` fills the struct, MAX_P
/// and FLAGS and leaves STAB out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedOptions {
    /// Bytes the default bfifo child may hold; 0 keeps the child there is
    /// (none at creation: the noop qdisc, which drops everything).
    pub limit: u32,
    /// The band's lower threshold, bytes.
    pub qth_min: u32,
    /// The band's upper threshold, bytes.
    pub qth_max: u32,
    /// log2(1/W) of the EWMA.
    pub wlog: u8,
    /// log2 of span / max_P (used when MAX_P is absent or 0).
    pub plog: u8,
    /// log2 of the idle table's cell, µs.
    pub scell_log: u8,
    /// `tc_red_qopt.flags`: the historic flags (iproute2 before 5.7 sent
    /// them here; today's sends 0 and the flags in `flags_attr`). The
    /// kernel arms adaptive RED's timer only from this field
    /// (`ctl->flags & TC_RED_ADAPTATIVE` in `__red_change`), so the
    /// `adaptive` that today's tc sends is kept and dumped but moves
    /// nothing.
    pub flags: u8,
    /// TCA_RED_STAB: the idle table (required, 256 bytes).
    pub stab: Option<Vec<u8>>,
    /// TCA_RED_MAX_P: max_P in Q0.32 (absent or 0: from Plog).
    pub max_p: Option<u32>,
    /// TCA_RED_FLAGS.
    pub flags_attr: Option<Bitfield32>,
}

/// `struct red_stats`: what RED counts of its decisions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct RedStats {
    prob_drop: u32,
    prob_mark: u32,
    forced_drop: u32,
    forced_mark: u32,
    pdrop: u32,
    other: u32,
}

/// What `__red_change` makes of valid options.
struct Config {
    limit: u32,
    flags: u32,
    userbits: u8,
    parms: RedParms,
    adaptive_timer: bool,
}

/// The policy check of TCA_RED_FLAGS (`NLA_POLICY_BITFIELD32` in
/// `red_policy`, lib/nlattr.c `validate_nla_bitfield32`): only supported
/// bits, and no value outside the selector.
fn bitfield_ok(bf: &Bitfield32) -> bool {
    bf.selector & !TC_RED_SUPPORTED_FLAGS == 0
        && bf.value & !TC_RED_SUPPORTED_FLAGS == 0
        && bf.value & !bf.selector == 0
}

/// `red_init`/`red_change` up to the point of no return: the checks in the
/// kernel's order and the values to install; `old_flags` are the current
/// flags (0 at creation).
fn configure(o: &RedOptions, old_flags: u32) -> Result<Config, Refusal> {
    if o.flags_attr.as_ref().is_some_and(|bf| !bitfield_ok(bf)) {
        return Err(Refusal::new(
            Errno::EINVAL,
            "Attribute failed policy validation.",
        ));
    }
    // TCA_RED_STAB missing (or shorter than RED_STAB_SIZE, which the
    // policy refuses): a bare EINVAL.
    let stab: &[u8; RED_STAB_SIZE] = o
        .stab
        .as_deref()
        .and_then(|s| s.get(..RED_STAB_SIZE))
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| {
            Refusal::bare(Errno::EINVAL).below("red needs its idle table (TCA_RED_STAB)")
        })?;
    if !red_check_params(o.qth_min, o.qth_max, o.wlog, o.scell_log, stab) {
        return Err(Refusal::bare(Errno::EINVAL).below(format!(
            "red_check_params: min {} max {} ewma {} Scell_log {}: max must not be below min, \
             each threshold shifted by ewma must fit 31 bits, Scell_log and the idle table's \
             entries must be below 32",
            o.qth_min, o.qth_max, o.wlog, o.scell_log
        )));
    }
    // red_get_flags.
    let historic = u32::from(o.flags) & TC_RED_HISTORIC_FLAGS;
    if o.flags != 0 && o.flags_attr.is_some() {
        return Err(Refusal::new(
            Errno::EINVAL,
            "sch_red: flags should be passed either through qopt, or through a dedicated \
             attribute.",
        ));
    }
    let bf = o.flags_attr.unwrap_or(Bitfield32 {
        value: historic,
        selector: TC_RED_HISTORIC_FLAGS,
    });
    let userbits = o.flags & !(TC_RED_HISTORIC_FLAGS as u8);
    let flags = (old_flags & !bf.selector) | bf.value;
    // red_validate_flags.
    if flags & TC_RED_NODROP != 0 && flags & TC_RED_ECN == 0 {
        return Err(Refusal::new(
            Errno::EINVAL,
            "sch_red: nodrop mode is only meaningful with ECN.",
        ));
    }
    Ok(Config {
        limit: o.limit,
        flags,
        userbits,
        parms: RedParms::new(
            o.qth_min,
            o.qth_max,
            o.wlog,
            o.plog,
            o.scell_log,
            stab,
            o.max_p.unwrap_or(0),
        ),
        adaptive_timer: u32::from(o.flags) & TC_RED_ADAPTATIVE != 0,
    })
}

/// Runs adaptive RED's timer for every period due by `now`
/// (`red_adaptative_timer`: `red_adaptative_algo`, re-armed HZ/2 later).
/// Once a run changes nothing and the average cannot change before `now`
/// (no idle period, or one older than the table's reach), the runs left
/// would change nothing either and are skipped; so a catch-up costs at
/// most the ticks of one idle period's first Scell_max µs (255 × 2^Scell_log,
/// about a minute for tc's usual Scell_log 15) plus the few dozen runs that take
/// max_P from any value to a bound.
fn run_adaptive_timer(
    parms: &mut RedParms,
    vars: &RedVars,
    next: &mut Option<Instant>,
    now: Instant,
) {
    while let Some(t) = next.filter(|t| *t <= now) {
        let before = (parms.max_p, parms.max_p_delta);
        red_adaptative_algo(parms, vars, t);
        let steady = vars
            .idle_since
            .is_none_or(|s| t.saturating_since(s) / NS_PER_US >= u64::from(parms.scell_max));
        let mut following = t + ADAPT_PERIOD_NS;
        if steady && before == (parms.max_p, parms.max_p_delta) && following <= now {
            following += (now.saturating_since(following) / ADAPT_PERIOD_NS) * ADAPT_PERIOD_NS;
        }
        // At the end of time (the instant saturates) the timer stops.
        *next = (following > t).then_some(following);
    }
}

/// The RED qdisc.
pub struct Red {
    ctx: QdiscCtx,
    limit: u32,
    /// `q->flags`: TC_RED_* bits.
    flags: u32,
    /// `q->userbits`: bits of `tc_red_qopt.flags` beyond the historic ones,
    /// dumped back as given.
    userbits: u8,
    parms: RedParms,
    vars: RedVars,
    red_stats: RedStats,
    child: Box<dyn Qdisc>,
    stats: QdiscStats,
    /// The random source of `red_random` (`get_random_u32`), seeded.
    rng: SmallRng,
    /// When adaptive RED's timer next runs (`None`: not armed).
    adapt_next: Option<Instant>,
}

impl Red {
    /// `red_init`: RED has no defaults (no options: EINVAL). Built
    /// without a clock, it starts at time zero: its idle period (which
    /// matters not, qavg being 0) and the adaptive timer's phase (ticks at
    /// every multiple of 500 ms) begin there.
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        let o = match options {
            QdiscOptions::Red(o) => o,
            QdiscOptions::None => {
                return Err(Refusal::bare(Errno::EINVAL)
                    .below("red needs options (limit, min, max, avpkt, ...)"))
            }
            _ => return Err(foreign_options("red")),
        };
        let config = configure(o, 0)?;
        let mut red = Red {
            ctx,
            limit: 0,
            flags: 0,
            userbits: 0,
            parms: config.parms.clone(),
            vars: RedVars::default(),
            red_stats: RedStats::default(),
            child: one_class::after_delete(ctx.handle),
            stats: QdiscStats::default(),
            rng: SmallRng::seed_from_u64(ctx.seed ^ 0x0072_6564), // "red"
            adapt_next: None,
        };
        red.install(config, Instant::ZERO, &mut Drops::new());
        Ok(red)
    }

    /// The rest of `__red_change`: a new default bfifo for a non-zero limit
    /// (the old child's frames are dropped, `qdisc_tree_flush_backlog`),
    /// the flags, the parameters, the variables reset, the timer re-armed
    /// and, with an empty child, an idle period begun.
    fn install(&mut self, c: Config, now: Instant, drops: &mut Drops) {
        self.flags = c.flags;
        self.userbits = c.userbits;
        self.limit = c.limit;
        if c.limit > 0 {
            let ctx = self.ctx.child(0, one_class::classid(self.ctx.handle));
            let fresh = Box::new(Fifo::with_limit(FifoKind::Bfifo, ctx, u64::from(c.limit)));
            let mut old = std::mem::replace(&mut self.child, fresh);
            for pkt in old.drain_all() {
                self.stats.count_drop(pkt, DropReason::QdiscReset, drops);
            }
        }
        self.parms = c.parms;
        // red_set_vars: the idle period, if any, goes on.
        self.vars.qavg = 0;
        self.vars.qcount = -1;
        self.adapt_next = c.adaptive_timer.then(|| now + ADAPT_PERIOD_NS);
        if self.child.qlen() == 0 {
            self.vars.start_idle(now);
        }
    }

    /// The parameters in force (max_P as adaptive RED last left it).
    pub fn parms(&self) -> &RedParms {
        &self.parms
    }

    /// The variables: qavg, qcount, qR, the idle period.
    pub fn vars(&self) -> &RedVars {
        &self.vars
    }

    fn flag(&self, f: u32) -> bool {
        self.flags & f != 0
    }

    /// Counts the frames a call into the child dropped.
    fn count_child_drops(&mut self, before: usize, drops: &Drops) {
        self.stats.drops += (drops.len() - before) as u64;
    }

    /// The options as `red_dump` fills them, max_P as of `now`.
    fn dumped_options(&self, now: Instant) -> RedOptions {
        let mut parms = self.parms.clone();
        let mut next = self.adapt_next;
        run_adaptive_timer(&mut parms, &self.vars, &mut next, now);
        RedOptions {
            limit: self.limit,
            qth_min: parms.qth_min.wrapping_shr(u32::from(parms.wlog)),
            qth_max: parms.qth_max.wrapping_shr(u32::from(parms.wlog)),
            wlog: parms.wlog,
            plog: parms.plog,
            scell_log: parms.scell_log,
            flags: (self.flags & TC_RED_HISTORIC_FLAGS) as u8 | self.userbits,
            stab: None,
            max_p: Some(parms.max_p),
            flags_attr: Some(Bitfield32 {
                value: self.flags,
                selector: TC_RED_SUPPORTED_FLAGS,
            }),
        }
    }

    /// `red_dump_stats`.
    fn xstats(&self) -> RedXstats {
        let s = &self.red_stats;
        RedXstats {
            early: s.prob_drop.wrapping_add(s.forced_drop),
            pdrop: s.pdrop,
            other: s.other,
            marked: s.prob_mark.wrapping_add(s.forced_mark),
        }
    }
}

impl Qdisc for Red {
    fn kind(&self) -> &'static str {
        "red"
    }

    /// `red_enqueue`.
    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        run_adaptive_timer(&mut self.parms, &self.vars, &mut self.adapt_next, now);
        let backlog = self.child.backlog() as u32;
        self.vars.qavg = self.vars.calc_qavg(&self.parms, backlog, now);
        if self.vars.is_idling() {
            self.vars.end_idle();
        }
        let rng = &mut self.rng;
        let action = self
            .vars
            .action(&self.parms, self.vars.qavg, &mut || rng.gen::<u32>());
        let ecn = self.flag(TC_RED_ECN);
        let nodrop = self.flag(TC_RED_NODROP);
        match action {
            RedAction::DontMark => {}
            RedAction::ProbMark => {
                self.stats.overlimits += 1;
                if !ecn {
                    self.red_stats.prob_drop = self.red_stats.prob_drop.wrapping_add(1);
                    return self.stats.reject(pkt, DropReason::RedEarly, drops);
                }
                if mark_ce(&mut pkt) {
                    self.red_stats.prob_mark = self.red_stats.prob_mark.wrapping_add(1);
                } else if !nodrop {
                    self.red_stats.prob_drop = self.red_stats.prob_drop.wrapping_add(1);
                    return self.stats.reject(pkt, DropReason::RedEarly, drops);
                }
            }
            RedAction::HardMark => {
                self.stats.overlimits += 1;
                if self.flag(TC_RED_HARDDROP) || !ecn {
                    self.red_stats.forced_drop = self.red_stats.forced_drop.wrapping_add(1);
                    return self.stats.reject(pkt, DropReason::RedForced, drops);
                }
                if mark_ce(&mut pkt) {
                    self.red_stats.forced_mark = self.red_stats.forced_mark.wrapping_add(1);
                } else if !nodrop {
                    self.red_stats.forced_drop = self.red_stats.forced_drop.wrapping_add(1);
                    return self.stats.reject(pkt, DropReason::RedForced, drops);
                }
            }
        }
        let before = drops.len();
        let verdict = self.child.enqueue(pkt, now, drops);
        self.count_child_drops(before, drops);
        if verdict != Verdict::Queued {
            // net_xmit_drop_count: the child refused the frame (its limit)
            // or dropped another to take it.
            self.red_stats.pdrop = self.red_stats.pdrop.wrapping_add(1);
        }
        verdict
    }

    /// `red_dequeue`: an empty child begins an idle period.
    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        run_adaptive_timer(&mut self.parms, &self.vars, &mut self.adapt_next, now);
        let before = drops.len();
        let pkt = self.child.dequeue(now, drops);
        self.count_child_drops(before, drops);
        match pkt {
            Some(p) => {
                self.stats.count_sent(&p);
                Some(p)
            }
            None => {
                if !self.vars.is_idling() {
                    self.vars.start_idle(now);
                }
                None
            }
        }
    }

    /// `red_peek`: the child's.
    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        let before = drops.len();
        let head = self.child.peek(now, drops);
        self.stats.drops += (drops.len() - before) as u64;
        head
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

    /// `red_reset`: the child reset, `red_restart` (no idle period).
    fn reset(&mut self, drops: &mut Drops) {
        self.child.reset(drops);
        self.vars.restart();
    }

    /// `red_change`: every check first; a refused change leaves RED as it
    /// was.
    fn change(
        &mut self,
        options: &QdiscOptions,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        let QdiscOptions::Red(o) = options else {
            return Err(foreign_options("red"));
        };
        run_adaptive_timer(&mut self.parms, &self.vars, &mut self.adapt_next, now);
        let config = configure(o, self.flags)?;
        self.install(config, now, drops);
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let child = self.child.dump_listing(now, listing);
        let mut occupancy: Vec<QueueOccupancy> = Vec::new();
        let (class, children) = one_class::dump("red", self.ctx.handle, child, &mut occupancy);
        QdiscDump {
            kind: "red".into(),
            handle: self.ctx.handle,
            parent: self.ctx.parent,
            options: QdiscOptions::Red(self.dumped_options(now)),
            stats: self.stats(),
            xstats: Some(Xstats::Red(self.xstats())),
            classes: vec![class],
            children,
            occupancy,
            ..QdiscDump::default()
        }
    }

    fn as_classful(&mut self) -> Option<&mut dyn Classful> {
        Some(self)
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        self.child.drain_all()
    }
}

impl OneClass for Red {
    const KIND: &'static str = "red";

    fn ctx(&self) -> &QdiscCtx {
        &self.ctx
    }

    fn child(&mut self) -> &mut Box<dyn Qdisc> {
        &mut self.child
    }
}

#[cfg(test)]
mod tests;
