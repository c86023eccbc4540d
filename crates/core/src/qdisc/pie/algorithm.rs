//! PIE's control law as include/net/pie.h declares it and net/sched/sch_pie.c
//! implements it (RFC 8033), shared by `pie` and `fq_pie`: the parameters
//! (`PieParams`), the per-queue variables (`PieVars`), the early-drop test at
//! enqueue (`drop_early`, `pie_drop_early`), the delay and drain-rate update
//! at dequeue (`process_dequeue`, `pie_process_dequeue`), the probability
//! update every `tupdate` (`calculate_probability`,
//! `pie_calculate_probability`) and the timer that runs it (`AdaptTimer`).
//! Times are psched ticks (64 ns, `PSCHED_SHIFT` 6), the probability a u64
//! fraction of `MAX_PROB` (2^56 - 1), the arithmetic the kernel's, wrapping
//! where C's unsigned arithmetic wraps.

use crate::qdisc::jiffies::HZ;
use crate::qdisc::jiffies::{usecs_to_jiffies, JIFFY_NS};
use crate::time::{Instant, NS_PER_MS, NS_PER_SEC, NS_PER_US};

/// `MAX_PROB`: a probability of 1 (`U64_MAX >> BITS_PER_BYTE`).
pub const MAX_PROB: u64 = u64::MAX >> 8;
/// `DTIME_INVALID`: no dequeue timestamp yet.
pub const DTIME_INVALID: u64 = u64::MAX;
/// `QUEUE_THRESHOLD`: bytes of backlog (and of dequeues) a drain-rate
/// measurement needs.
pub const QUEUE_THRESHOLD: u32 = 16384;
/// `DQCOUNT_INVALID` (-1 in a u64): no measurement cycle running.
pub const DQCOUNT_INVALID: u64 = u64::MAX;
/// `PIE_SCALE`: the drain rate's fixed-point shift.
pub const PIE_SCALE: u32 = 8;
/// `PSCHED_SHIFT`: a psched tick is 2^6 ns.
pub const PSCHED_SHIFT: u32 = 6;
/// `PSCHED_TICKS_PER_SEC`.
pub const PSCHED_TICKS_PER_SEC: u64 = NS_PER_SEC >> PSCHED_SHIFT;
/// The first run of the timer after `pie_init` / `fq_pie_init`: `HZ / 2`
/// jiffies.
pub const FIRST_TIMER_NS: u64 = (HZ / 2) * JIFFY_NS;

/// `PSCHED_NS2TICKS`.
pub fn ns_to_ticks(ns: u64) -> u64 {
    ns >> PSCHED_SHIFT
}

/// `psched_get_time()` at `now`.
pub fn ticks(now: Instant) -> u64 {
    ns_to_ticks(now.nanos())
}

/// A time attribute in µs as `pie_change` keeps it:
/// `PSCHED_NS2TICKS((u64)us * NSEC_PER_USEC)`.
pub fn us_to_ticks(us: u32) -> u64 {
    ns_to_ticks(u64::from(us) * NS_PER_US)
}

/// A time in ticks as `pie_dump` sends it:
/// `((u32)PSCHED_TICKS2NS(t)) / NSEC_PER_USEC` (the cast truncates).
pub fn ticks_to_us(t: u64) -> u32 {
    (t.wrapping_shl(PSCHED_SHIFT) as u32) / NS_PER_US as u32
}

/// `struct pie_params`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PieParams {
    /// Target queue delay, ticks.
    pub target: u64,
    /// The timer's period, jiffies (0: the timer stops).
    pub tupdate: u32,
    /// Packets.
    pub limit: u32,
    /// The integral gain, in 1/16 (tc's 0..32).
    pub alpha: u32,
    /// The proportional gain, in 1/16.
    pub beta: u32,
    /// Mark ECN-capable frames instead of dropping them (below a threshold).
    pub ecn: bool,
    /// Scale the probability by the frame's size.
    pub bytemode: bool,
    /// Estimate the delay from the drain rate (Little's law) rather than
    /// from timestamps.
    pub dq_rate_estimator: bool,
}

impl Default for PieParams {
    /// `pie_params_init`: target 15 ms, tupdate 15 ms (4 jiffies, 16 ms),
    /// limit 1000, alpha 2, beta 20, no ECN, no bytemode, timestamps.
    fn default() -> Self {
        PieParams {
            target: ns_to_ticks(15 * NS_PER_MS),
            tupdate: usecs_to_jiffies(15_000),
            limit: 1000,
            alpha: 2,
            beta: 20,
            ecn: false,
            bytemode: false,
            dq_rate_estimator: false,
        }
    }
}

/// `struct pie_vars`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PieVars {
    /// Current queue delay, ticks.
    pub qdelay: u64,
    /// The delay at the previous update, ticks.
    pub qdelay_old: u64,
    /// Burst allowance left, ticks.
    pub burst_time: u64,
    /// When the drain rate was last measured (or the last dequeue), ticks.
    pub dq_tstamp: u64,
    /// Drop probability, a fraction of `MAX_PROB`.
    pub prob: u64,
    /// Accumulated probability since the last drop (de-randomization).
    pub accu_prob: u64,
    /// Bytes dequeued in the measurement cycle (`DQCOUNT_INVALID`: none).
    pub dq_count: u64,
    /// Average drain rate, bytes per tick << `PIE_SCALE`.
    pub avg_dq_rate: u32,
    /// Backlog at the last update, bytes.
    pub backlog_old: u32,
}

impl Default for PieVars {
    /// A zeroed `pie_vars` (the kernel allocates it zeroed) after
    /// `pie_vars_init`.
    fn default() -> Self {
        let mut v = PieVars {
            qdelay: 0,
            qdelay_old: 0,
            burst_time: 0,
            dq_tstamp: 0,
            prob: 0,
            accu_prob: 0,
            dq_count: 0,
            avg_dq_rate: 0,
            backlog_old: 0,
        };
        v.init();
        v
    }
}

impl PieVars {
    /// `pie_vars_init`: a burst allowance of 150 ms, no dequeue timestamp,
    /// no measurement cycle, no drain rate (the probability and delays
    /// stay).
    pub fn init(&mut self) {
        self.burst_time = ns_to_ticks(150 * NS_PER_MS);
        self.dq_tstamp = DTIME_INVALID;
        self.accu_prob = 0;
        self.dq_count = DQCOUNT_INVALID;
        self.avg_dq_rate = 0;
    }
}

/// `struct pie_stats` (u32 counters, wrapping).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PieStats {
    /// Frames enqueued.
    pub packets_in: u32,
    /// Frames dropped (early drops and overlimit).
    pub dropped: u32,
    /// Frames dropped at the packet limit.
    pub overlimit: u32,
    /// Frames CE-marked instead of dropped.
    pub ecn_mark: u32,
    /// Most frames queued at an enqueue.
    pub maxq: u32,
}

/// `pie_drop_early`: whether the arriving frame of `packet_size` bytes is
/// dropped (or marked), with `backlog` bytes queued (the qdisc's, or the
/// flow's in fq_pie) on a device of `mtu` (`psched_mtu`). `random` is
/// `get_random_bytes` of 8 bytes, drawn only when the accumulated
/// probability leaves the choice to chance.
pub fn drop_early(
    params: &PieParams,
    vars: &mut PieVars,
    backlog: u32,
    packet_size: u32,
    mtu: u32,
    random: impl FnOnce() -> u64,
) -> bool {
    // Burst allowance left: no early drop.
    if vars.burst_time > 0 {
        return false;
    }
    // Below half the target with a low probability: no early drop.
    if vars.qdelay < params.target / 2 && vars.prob < MAX_PROB / 5 {
        return false;
    }
    // Fewer than two MTU-sized frames queued.
    if backlog < mtu.wrapping_mul(2) {
        return false;
    }
    let local_prob = if params.bytemode && packet_size <= mtu {
        u64::from(packet_size).wrapping_mul(vars.prob / u64::from(mtu.max(1)))
    } else {
        vars.prob
    };
    if local_prob == 0 {
        vars.accu_prob = 0;
    } else {
        vars.accu_prob = vars.accu_prob.wrapping_add(local_prob);
    }
    if vars.accu_prob < (MAX_PROB / 100) * 85 {
        return false;
    }
    if vars.accu_prob >= (MAX_PROB / 2) * 17 {
        return true;
    }
    if (random() >> 8) < local_prob {
        vars.accu_prob = 0;
        return true;
    }
    false
}

/// `pie_process_dequeue`: after a frame of `len` bytes enqueued at tick
/// `enqueued` leaves at tick `now`, with `backlog` bytes left (the qdisc's,
/// or the flow's): the delay from its timestamp, or the drain rate from
/// the bytes and time of a measurement cycle; the burst allowance shrinks
/// by the time since the previous dequeue (or cycle).
pub fn process_dequeue(
    params: &PieParams,
    vars: &mut PieVars,
    now: u64,
    enqueued: u64,
    len: u32,
    backlog: u32,
) {
    let dtime: u32;
    if !params.dq_rate_estimator {
        vars.qdelay = now.wrapping_sub(enqueued);
        let mut d = 0;
        if vars.dq_tstamp != DTIME_INVALID {
            d = now.wrapping_sub(vars.dq_tstamp) as u32;
        }
        vars.dq_tstamp = now;
        if backlog == 0 {
            vars.qdelay = 0;
        }
        if d == 0 {
            return;
        }
        dtime = d;
    } else {
        // Enough queued and no cycle running: start one.
        if backlog >= QUEUE_THRESHOLD && vars.dq_count == DQCOUNT_INVALID {
            vars.dq_tstamp = now;
            vars.dq_count = 0;
        }
        if vars.dq_count == DQCOUNT_INVALID {
            return;
        }
        vars.dq_count = vars.dq_count.wrapping_add(u64::from(len));
        if vars.dq_count < u64::from(QUEUE_THRESHOLD) {
            return;
        }
        let count = vars.dq_count.wrapping_shl(PIE_SCALE) as u32;
        let d = now.wrapping_sub(vars.dq_tstamp) as u32;
        if d == 0 {
            return;
        }
        let count = count / d;
        vars.avg_dq_rate = if vars.avg_dq_rate == 0 {
            count
        } else {
            (vars.avg_dq_rate - (vars.avg_dq_rate >> 3)).wrapping_add(count >> 3)
        };
        // Below the threshold the last rate is held; else a new cycle.
        if backlog < QUEUE_THRESHOLD {
            vars.dq_count = DQCOUNT_INVALID;
        } else {
            vars.dq_count = 0;
            vars.dq_tstamp = now;
        }
        dtime = d;
    }
    // burst_allowance_reduction
    if vars.burst_time > 0 {
        vars.burst_time = vars.burst_time.saturating_sub(u64::from(dtime));
    }
}

/// The gains of `pie_calculate_probability` at probability `prob`: alpha
/// and beta (1/16 units) scaled to probability per tick, halved below 10%
/// and quartered again for each decade below 1% (down to 0.0001%), as RFC
/// 8033 section 4.2 auto-tunes them.
pub fn scaled_gains(params: &PieParams, prob: u64) -> (u64, u64) {
    let unit = MAX_PROB / PSCHED_TICKS_PER_SEC;
    let mut alpha = u64::from(params.alpha).wrapping_mul(unit) >> 4;
    let mut beta = u64::from(params.beta).wrapping_mul(unit) >> 4;
    if prob < MAX_PROB / 10 {
        alpha >>= 1;
        beta >>= 1;
        let mut power: u64 = 100;
        while prob < MAX_PROB / power && power <= 1_000_000 {
            alpha >>= 2;
            beta >>= 2;
            power *= 10;
        }
    }
    (alpha, beta)
}

/// `pie_calculate_probability`: the update every `tupdate` with `backlog`
/// bytes queued (the qdisc's, or the flow's).
pub fn calculate_probability(params: &PieParams, vars: &mut PieVars, backlog: u32) {
    let (qdelay, qdelay_old) = if params.dq_rate_estimator {
        let old = vars.qdelay;
        vars.qdelay_old = vars.qdelay;
        // `(backlog << PIE_SCALE) / avg_dq_rate` in u32 (the shift drops
        // the top bits), 0 without a rate.
        let d = u64::from(
            (backlog << PIE_SCALE)
                .checked_div(vars.avg_dq_rate)
                .unwrap_or(0),
        );
        (d, old)
    } else {
        (vars.qdelay, vars.qdelay_old)
    };
    // A delay of 0 with a backlog: too small a queue to update on.
    let mut update_prob = !(qdelay == 0 && backlog != 0);

    let (alpha, beta) = scaled_gains(params, vars.prob);
    let mut delta: i64 = 0;
    delta = delta.wrapping_add(alpha.wrapping_mul(qdelay.wrapping_sub(params.target)) as i64);
    delta = delta.wrapping_add(beta.wrapping_mul(qdelay.wrapping_sub(qdelay_old)) as i64);

    let oldprob = vars.prob;
    // Steps of at most 2% above 10%.
    if delta > (MAX_PROB / 50) as i64 && vars.prob >= MAX_PROB / 10 {
        delta = ((MAX_PROB / 100) * 2) as i64;
    }
    // Above 250 ms of delay, 2% more each update.
    if qdelay > ns_to_ticks(250 * NS_PER_MS) {
        delta = delta.wrapping_add((MAX_PROB / 50) as i64);
    }
    vars.prob = vars.prob.wrapping_add(delta as u64);
    if delta > 0 {
        if vars.prob < oldprob {
            vars.prob = MAX_PROB;
            update_prob = false;
        }
    } else if vars.prob > oldprob {
        vars.prob = 0;
    }
    // No delay for two updates: decay to 63/64.
    if qdelay == 0 && qdelay_old == 0 && update_prob {
        vars.prob -= vars.prob / 64;
    }
    vars.qdelay = qdelay;
    vars.backlog_old = backlog;
    // Low delay twice, no probability (and a rate, if estimating): restart.
    if vars.qdelay < params.target / 2
        && vars.qdelay_old < params.target / 2
        && vars.prob == 0
        && (!params.dq_rate_estimator || vars.avg_dq_rate > 0)
    {
        vars.init();
    }
    if !params.dq_rate_estimator {
        vars.qdelay_old = qdelay;
    }
}

/// The adapt timer of `pie` and `fq_pie` (`pie_timer`, `fq_pie_timer`),
/// run when the qdisc is next touched for every expiry due by then: no
/// frame enters or leaves between two touches, so each run sees the state
/// the kernel's timer would. It is armed `HZ / 2` after creation and re-armed
/// each run `tupdate` jiffies later (never again once `tupdate` is 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdaptTimer {
    /// When it next runs (`None`: stopped).
    pub next: Option<Instant>,
}

impl AdaptTimer {
    /// Armed `HZ / 2` after `now` (`mod_timer(&q->adapt_timer, jiffies + HZ / 2)`).
    pub fn armed(now: Instant) -> Self {
        AdaptTimer {
            next: Some(now + FIRST_TIMER_NS),
        }
    }

    /// Runs every expiry due by `now`: `run(at)` is one run and returns the
    /// jiffies to the next (`None`: not re-armed) and whether it changed any
    /// state (`run_every` in jiffies).
    pub fn run_until(&mut self, now: Instant, mut run: impl FnMut(Instant) -> (Option<u32>, bool)) {
        self.run_every(now, |t| {
            let (after, changed) = run(t);
            (after.map(|j| u64::from(j).max(1) * JIFFY_NS), changed)
        });
    }

    /// Runs every expiry due by `now`: `run(at)` is one run and returns the
    /// nanoseconds to the next (`None`: not re-armed; an hrtimer's period
    /// for DualPI2) and whether it changed any state. Once a run changes
    /// nothing, the runs left before `now` would change nothing either
    /// (nothing else moves between touches) and are skipped, keeping the
    /// phase.
    pub fn run_every(&mut self, now: Instant, mut run: impl FnMut(Instant) -> (Option<u64>, bool)) {
        while let Some(t) = self.next.filter(|t| *t <= now) {
            let (after, changed) = run(t);
            let Some(ns) = after else {
                self.next = None;
                return;
            };
            let period = ns.max(1);
            let mut following = t + period;
            if !changed && following <= now {
                following += (now.saturating_since(following) / period) * period;
            }
            // At the end of time (the instant saturates) the timer stops.
            self.next = (following > t).then_some(following);
        }
    }
}
