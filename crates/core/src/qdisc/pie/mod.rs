//! PIE, Proportional Integral controller Enhanced (Linux net/sched/sch_pie.c,
//! include/net/pie.h; RFC 8033): one FIFO of at most `limit` packets whose
//! arrivals are dropped (or, with `ecn`, CE-marked while the probability is
//! at most 10%) with a probability that `algorithm::calculate_probability`
//! moves every `tupdate` from the queue delay's distance to `target` and its
//! trend. The delay is the head frame's sojourn time, or with
//! `dq_rate_estimator` the backlog over the measured drain rate; a burst
//! allowance of 150 ms spares a fresh queue; with `bytemode` small frames
//! are dropped less. Defaults: limit 1000p, target 15ms, tupdate 15ms, alpha
//! 2, beta 20, noecn, nobytemode, no_dq_rate_estimator. Its options are the
//! TCA_PIE_* attributes (`PieOptions`), its xstats `tc_pie_xstats`.

pub mod algorithm;
mod xstats;

pub use xstats::PieXstats;

use super::dump::{QueueId, QueueOccupancy, Xstats};
use super::jiffies::{jiffies_to_usecs, usecs_to_jiffies};
use super::park::{drop_all_held, ParkOnPeek};
use super::{Handle, Qdisc, QdiscCtx, QdiscDump, QdiscOptions, QdiscStats, Refusal, Verdict};
use crate::packet::ecn::mark_ce;
use crate::packet::{DropReason, Drops, Packet};
use crate::time::Instant;
use algorithm::{
    calculate_probability, drop_early, process_dequeue, ticks, ticks_to_us, us_to_ticks,
    AdaptTimer, PieParams, PieStats, PieVars, MAX_PROB, PIE_SCALE, PSCHED_TICKS_PER_SEC,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The `TCA_PIE_*` attributes (include/uapi/linux/pkt_sched.h), times in
/// µs. An absent attribute keeps the current value; `pie_dump` sends all.
/// `pie_change` takes every value as given (no range is checked).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PieOptions {
    /// `TCA_PIE_TARGET`, µs.
    pub target: Option<u32>,
    /// `TCA_PIE_LIMIT`, packets.
    pub limit: Option<u32>,
    /// `TCA_PIE_TUPDATE`, µs (kept in jiffies).
    pub tupdate: Option<u32>,
    /// `TCA_PIE_ALPHA`, 1/16 units.
    pub alpha: Option<u32>,
    /// `TCA_PIE_BETA`, 1/16 units.
    pub beta: Option<u32>,
    /// `TCA_PIE_ECN`.
    pub ecn: Option<bool>,
    /// `TCA_PIE_BYTEMODE`.
    pub bytemode: Option<bool>,
    /// `TCA_PIE_DQ_RATE_ESTIMATOR`.
    pub dq_rate_estimator: Option<bool>,
}

impl PieOptions {
    /// `pie_change`'s (and `fq_pie_change`'s) assignments to `pie_params`.
    pub fn apply_to(&self, p: &mut PieParams) {
        if let Some(v) = self.target {
            p.target = us_to_ticks(v);
        }
        if let Some(v) = self.tupdate {
            p.tupdate = usecs_to_jiffies(v);
        }
        if let Some(v) = self.limit {
            p.limit = v;
        }
        if let Some(v) = self.alpha {
            p.alpha = v;
        }
        if let Some(v) = self.beta {
            p.beta = v;
        }
        if let Some(v) = self.ecn {
            p.ecn = v;
        }
        if let Some(v) = self.bytemode {
            p.bytemode = v;
        }
        if let Some(v) = self.dq_rate_estimator {
            p.dq_rate_estimator = v;
        }
    }

    /// The parameters as `pie_dump` sends them.
    pub fn of(p: &PieParams) -> Self {
        PieOptions {
            target: Some(ticks_to_us(p.target)),
            limit: Some(p.limit),
            tupdate: Some(jiffies_to_usecs(p.tupdate)),
            alpha: Some(p.alpha),
            beta: Some(p.beta),
            ecn: Some(p.ecn),
            bytemode: Some(p.bytemode),
            dq_rate_estimator: Some(p.dq_rate_estimator),
        }
    }
}

/// `pie_dump_stats`' fields from the variables: the probability as a
/// fraction of 2^64, the delay in µs, the drain rate in bytes/s.
pub fn xstats_of(p: &PieParams, v: &PieVars, s: &PieStats) -> PieXstats {
    PieXstats {
        prob: v.prob.wrapping_shl(8),
        delay: ticks_to_us(v.qdelay),
        avg_dq_rate: if p.dq_rate_estimator {
            (u64::from(v.avg_dq_rate).wrapping_mul(PSCHED_TICKS_PER_SEC) >> PIE_SCALE) as u32
        } else {
            0
        },
        dq_rate_estimating: p.dq_rate_estimator,
        packets_in: s.packets_in,
        dropped: s.dropped,
        overlimit: s.overlimit,
        maxq: s.maxq,
        ecn_mark: s.ecn_mark,
    }
}

/// The `pie` qdisc.
pub struct Pie {
    handle: Handle,
    parent: Handle,
    mtu: u32,
    params: PieParams,
    vars: PieVars,
    pstats: PieStats,
    timer: AdaptTimer,
    queue: VecDeque<Packet>,
    /// Bytes in `queue`.
    backlog: u64,
    /// A frame dequeued by `peek` (qdisc_peek_dequeued), still counted.
    parked: Option<Packet>,
    /// Frames of this qdisc's TX queue in the device's requeue slot and
    /// their bytes, which its limit counts (`Qdisc::set_requeued`).
    requeued: (u32, u64),
    stats: QdiscStats,
    /// `get_random_bytes`, seeded.
    rng: SmallRng,
}

impl Pie {
    /// `pie_init` with `options` (`QdiscOptions::None`: the defaults).
    /// Built without a clock, it starts at time zero: the timer's first
    /// run is at 500 ms.
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        let o = match options {
            QdiscOptions::None => &PieOptions::default(),
            QdiscOptions::Pie(o) => o,
            _ => return Err(super::options::foreign("pie")),
        };
        let mut params = PieParams::default();
        o.apply_to(&mut params);
        Ok(Pie {
            handle: ctx.handle,
            parent: ctx.parent,
            mtu: ctx.psched_mtu,
            params,
            vars: PieVars::default(),
            pstats: PieStats::default(),
            timer: AdaptTimer::armed(Instant::ZERO),
            queue: VecDeque::new(),
            backlog: 0,
            parked: None,
            requeued: (0, 0),
            stats: QdiscStats::default(),
            rng: SmallRng::seed_from_u64(ctx.seed ^ 0x0070_6965), // "pie"
        })
    }

    /// The parameters in force.
    pub fn params(&self) -> &PieParams {
        &self.params
    }

    /// The variables as of the last touch (the timer's runs due since are
    /// made at the next one).
    pub fn vars(&self) -> &PieVars {
        &self.vars
    }

    /// `sch->qstats.backlog` (the parked frame included), as a u32.
    fn total_backlog(&self) -> u32 {
        self.backlog() as u32
    }

    /// Runs the timer's expiries due by `now` on `vars`.
    fn run_timer(
        params: &PieParams,
        vars: &mut PieVars,
        timer: &mut AdaptTimer,
        backlog: u32,
        now: Instant,
    ) {
        timer.run_until(now, |_| {
            let before = *vars;
            calculate_probability(params, vars, backlog);
            (
                (params.tupdate != 0).then_some(params.tupdate),
                *vars != before,
            )
        });
    }

    fn catch_up(&mut self, now: Instant) {
        let backlog = self.total_backlog();
        Pie::run_timer(&self.params, &mut self.vars, &mut self.timer, backlog, now);
    }

    /// `pie_qdisc_dequeue` without Sent counting.
    fn dequeue_inner(&mut self, now: Instant) -> Option<Packet> {
        self.catch_up(now);
        let p = self.queue.pop_front()?;
        self.backlog -= u64::from(p.len);
        let left = self.total_backlog();
        process_dequeue(
            &self.params,
            &mut self.vars,
            ticks(now),
            ticks(p.meta.enqueue_time),
            p.len,
            left,
        );
        Some(p)
    }
}

impl ParkOnPeek for Pie {
    fn parked_slot(&mut self) -> &mut Option<Packet> {
        &mut self.parked
    }
    fn sent_stats(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }
    fn dequeue_next(&mut self, now: Instant, _drops: &mut Drops) -> Option<Packet> {
        self.dequeue_inner(now)
    }
}

impl Qdisc for Pie {
    fn kind(&self) -> &'static str {
        "pie"
    }

    /// `pie_qdisc_enqueue`.
    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        self.catch_up(now);
        let reason = if self.qlen().saturating_add(self.requeued.0) >= self.params.limit {
            self.pstats.overlimit = self.pstats.overlimit.wrapping_add(1);
            DropReason::PieOverlimit
        } else {
            // `sch->qstats.backlog`, the requeued bytes in.
            let requeued = u32::try_from(self.requeued.1).unwrap_or(u32::MAX);
            let backlog = self.total_backlog().saturating_add(requeued);
            let rng = &mut self.rng;
            let early = drop_early(
                &self.params,
                &mut self.vars,
                backlog,
                pkt.len,
                self.mtu,
                || rng.gen::<u64>(),
            );
            let queue = if !early {
                true
            } else if self.params.ecn && self.vars.prob <= MAX_PROB / 10 && mark_ce(&mut pkt) {
                self.pstats.ecn_mark = self.pstats.ecn_mark.wrapping_add(1);
                true
            } else {
                false
            };
            if queue {
                // The timestamp is the kernel's only without the rate
                // estimator; the emulator's sojourn figures read it always.
                pkt.meta.enqueue_time = now;
                self.pstats.packets_in = self.pstats.packets_in.wrapping_add(1);
                self.pstats.maxq = self.pstats.maxq.max(self.qlen());
                self.backlog += u64::from(pkt.len);
                self.queue.push_back(pkt);
                return Verdict::Queued;
            }
            DropReason::PieEarly
        };
        self.pstats.dropped = self.pstats.dropped.wrapping_add(1);
        self.vars.accu_prob = 0;
        self.stats.reject(pkt, reason, drops)
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
        (self.queue.len() + usize::from(self.parked.is_some())) as u32
    }

    fn backlog(&self) -> u64 {
        self.backlog + self.parked.as_ref().map_or(0, |p| u64::from(p.len))
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    /// `pie_reset`: the queue emptied, `pie_vars_init` (the probability
    /// stays).
    fn reset(&mut self, drops: &mut Drops) {
        drop_all_held(self, drops);
        self.vars.init();
    }

    /// `pie_change`: every attribute as given, then frames dropped from the
    /// head while over a lowered limit.
    fn change(
        &mut self,
        options: &QdiscOptions,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        let o = match options {
            QdiscOptions::None => &PieOptions::default(),
            QdiscOptions::Pie(o) => o,
            _ => return Err(super::options::foreign("pie")),
        };
        self.catch_up(now);
        o.apply_to(&mut self.params);
        while self.qlen() > self.params.limit {
            let Some(p) = self.queue.pop_front() else {
                break;
            };
            self.backlog -= u64::from(p.len);
            self.stats.count_drop(p, DropReason::QdiscReset, drops);
        }
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        let (mut vars, mut timer) = (self.vars, self.timer);
        Pie::run_timer(
            &self.params,
            &mut vars,
            &mut timer,
            self.total_backlog(),
            now,
        );
        QdiscDump {
            kind: "pie".into(),
            handle: self.handle,
            parent: self.parent,
            options: QdiscOptions::Pie(PieOptions::of(&self.params)),
            stats: self.stats(),
            xstats: Some(Xstats::Pie(xstats_of(&self.params, &vars, &self.pstats))),
            occupancy: vec![QueueOccupancy::of_qdisc(
                QueueId::Fifo,
                self.parked.iter().chain(&self.queue),
                now,
            )],
            ..QdiscDump::default()
        }
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        let mut out: Vec<Packet> = self.parked.take().into_iter().collect();
        out.extend(self.queue.drain(..));
        self.backlog = 0;
        out
    }
}

#[cfg(test)]
mod tests;
