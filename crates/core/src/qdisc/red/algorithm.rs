//! The RED algorithm as the kernel codes it in fixed point
//! (include/net/red.h), apart from the qdisc that runs it so that other
//! RED-family kinds (choke, gred, sfq's RED) can share it: the parameters
//! `red_set_parms` derives (`RedParms`: thresholds scaled by 2^Wlog, the
//! Stab table of idle decay, max_P in Q0.32 and the divisor of the random
//! number), the variables (`RedVars`: the average `qavg` with its point at
//! Wlog, `qcount`, the cached random `qR`, the start of the idle period),
//! the EWMA (`red_calc_qavg` and its idle form with Stab/Scell_log), the
//! decision (`red_cmp_thresh`, `red_action`, `red_mark_probability`), the
//! check of the parameters (`red_check_params`) and adaptive RED's
//! `red_adaptative_algo`. Every function takes `now` and the random draw
//! from its caller, so it is pure and its tests can fix both.

use crate::time::{Instant, NS_PER_US};

/// `RED_STAB_SIZE`: entries of the idle-decay table.
pub const RED_STAB_SIZE: usize = 256;

/// `RED_ONE_PERCENT`: 1 % in Q0.32, `DIV_ROUND_CLOSEST(1 << 32, 100)`
/// = round(42949672.96).
pub const RED_ONE_PERCENT: u32 = 42_949_673;
/// `MAX_P_MIN`: adaptive RED lowers max_P only while it is at least 1 %.
pub const MAX_P_MIN: u32 = RED_ONE_PERCENT;
/// `MAX_P_MAX`: adaptive RED raises max_P only while it is at most 50 %.
pub const MAX_P_MAX: u32 = 50 * RED_ONE_PERCENT;

/// `MAX_P_ALPHA`: adaptive RED's additive step, min(1 %, max_P / 4).
fn max_p_alpha(max_p: u32) -> u32 {
    MAX_P_MIN.min(max_p / 4)
}

/// The kernel's `fls`: the 1-based index of the highest set bit, 0 for 0.
fn fls(x: u32) -> u32 {
    32 - x.leading_zeros()
}

/// `red_check_params` (include/net/red.h): the thresholds scaled by 2^Wlog
/// must fit 31 bits, Scell_log be below 32, `qth_max` not below `qth_min`,
/// and every Stab entry (a shift) below 32. `sch_red.c` answers a failure
/// with a bare EINVAL.
pub fn red_check_params(qth_min: u32, qth_max: u32, wlog: u8, scell_log: u8, stab: &[u8]) -> bool {
    fls(qth_min) + u32::from(wlog) < 32
        && fls(qth_max) + u32::from(wlog) < 32
        && scell_log < 32
        && qth_max >= qth_min
        && stab.iter().all(|&s| s < 32)
}

/// `red_maxp`: max_P (Q0.32) per byte of threshold span for a Plog,
/// `~0U >> Plog`.
pub fn red_maxp(plog: u8) -> u32 {
    if plog < 32 {
        u32::MAX >> plog
    } else {
        u32::MAX
    }
}

/// `struct red_parms`: what `red_set_parms` derives from the options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedParms {
    /// `qth_min << Wlog`.
    pub qth_min: u32,
    /// `qth_max << Wlog`.
    pub qth_max: u32,
    /// `255 << Scell_log`: the longest idle time (µs) the table covers.
    pub scell_max: u32,
    /// The largest marking probability, Q0.32.
    pub max_p: u32,
    /// The divisor `max_P_reciprocal` stands for: a random u32 divided by
    /// it is qR (the kernel's `reciprocal_divide` is exact division).
    pub max_p_delta: u32,
    /// `qth_max - qth_min` in bytes, at least 1.
    pub qth_delta: u32,
    /// Adaptive RED's target band, bytes: min + 0.4 × span ...
    pub target_min: u32,
    /// ... to min + 0.6 × span (each fifth of the span truncated).
    pub target_max: u32,
    /// log2 of the idle-table cell, µs.
    pub scell_log: u8,
    /// log2(1/W), the EWMA's weight.
    pub wlog: u8,
    /// log2 of max_P's denominator, as tc computed it (dumped back).
    pub plog: u8,
    /// The idle-decay table: for idle time t µs, `Stab[t >> Scell_log]` is
    /// the shift that divides qavg.
    pub stab: [u8; RED_STAB_SIZE],
}

impl RedParms {
    /// `red_set_parms`: `qth_min`/`qth_max` in bytes, `max_p` 0 for "from
    /// Plog" (max_P = span / 2^Plog). The caller has run
    /// `red_check_params`, so the scaled thresholds fit and Wlog < 32.
    pub fn new(
        qth_min: u32,
        qth_max: u32,
        wlog: u8,
        plog: u8,
        scell_log: u8,
        stab: &[u8; RED_STAB_SIZE],
        max_p: u32,
    ) -> RedParms {
        // `int delta = qth_max - qth_min`, at least 1.
        let delta = (qth_max.wrapping_sub(qth_min) as i32).max(1) as u32;
        let max_p = if max_p == 0 {
            red_maxp(plog).wrapping_mul(delta)
        } else {
            max_p
        };
        let fifth = delta / 5;
        RedParms {
            qth_min: qth_min.wrapping_shl(u32::from(wlog)),
            qth_max: qth_max.wrapping_shl(u32::from(wlog)),
            // `255 << Scell_log` in 32 bits.
            scell_max: (255u64 << (scell_log & 31)) as u32,
            max_p,
            max_p_delta: (max_p / delta).max(1),
            qth_delta: delta,
            target_min: qth_min.wrapping_add(2 * fifth),
            target_max: qth_min.wrapping_add(3 * fifth),
            scell_log,
            wlog,
            plog,
            stab: *stab,
        }
    }

    /// `red_random`: a random u32 divided by max_P / span, so that qR is
    /// uniform in 0 .. span / max_P (= 2^Plog when max_P comes from Plog).
    pub fn random(&self, draw: u32) -> u32 {
        draw / self.max_p_delta
    }
}

/// `struct red_vars`: the state RED keeps between packets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedVars {
    /// Packets since the last mark, -1 below the band (`qcount`).
    pub qcount: i32,
    /// The cached random number (`qR`).
    pub qr: u32,
    /// The average backlog, bytes scaled by 2^Wlog (`qavg`).
    pub qavg: u64,
    /// When the queue went idle (`qidlestart`; the kernel's 0 is `None`).
    pub idle_since: Option<Instant>,
}

impl Default for RedVars {
    /// `red_set_vars` with no idle period: qavg 0, qcount -1.
    fn default() -> Self {
        RedVars {
            qcount: -1,
            qr: 0,
            qavg: 0,
            idle_since: None,
        }
    }
}

/// `red_action`'s verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedAction {
    /// `RED_DONT_MARK`: below min, or lucky in the band.
    DontMark,
    /// `RED_PROB_MARK`: in the band, chosen by the random test.
    ProbMark,
    /// `RED_HARD_MARK`: at or above max.
    HardMark,
}

/// `red_cmp_thresh`'s three cases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Thresh {
    /// `RED_BELOW_MIN_THRESH`.
    BelowMin,
    /// `RED_BETWEEN_TRESH`.
    Between,
    /// `RED_ABOVE_MAX_TRESH` (qavg ≥ max).
    AboveMax,
}

/// `red_cmp_thresh`: where the scaled average lies against the scaled
/// thresholds.
pub fn red_cmp_thresh(p: &RedParms, qavg: u64) -> Thresh {
    if qavg < u64::from(p.qth_min) {
        Thresh::BelowMin
    } else if qavg >= u64::from(p.qth_max) {
        Thresh::AboveMax
    } else {
        Thresh::Between
    }
}

impl RedVars {
    /// `red_is_idling`.
    pub fn is_idling(&self) -> bool {
        self.idle_since.is_some()
    }

    /// `red_start_of_idle_period` at `now`.
    pub fn start_idle(&mut self, now: Instant) {
        self.idle_since = Some(now);
    }

    /// `red_end_of_idle_period`.
    pub fn end_idle(&mut self) {
        self.idle_since = None;
    }

    /// `red_restart`: no idle period, qavg 0, qcount -1.
    pub fn restart(&mut self) {
        *self = RedVars::default();
    }

    /// `red_calc_qavg_from_idle_time`: qavg after the idle period up to
    /// `now`. The idle time in whole µs (`ktime_us_delta`), capped at
    /// Scell_max, picks a shift from Stab; a zero shift means a short
    /// idle, approximated linearly (qavg × (1 - t / 2^Scell_log)), never
    /// below half of qavg.
    pub fn qavg_from_idle_time(&self, p: &RedParms, now: Instant) -> u64 {
        let start = self.idle_since.unwrap_or(now);
        let delta_us = now.signed_since(start) / NS_PER_US as i64;
        let us_idle = delta_us.min(i64::from(p.scell_max));
        // Scell_log and the table's shifts are below 32 (red_check_params);
        // the wrapping shifts only keep other values from panicking.
        let scell_log = u32::from(p.scell_log);
        let cell = us_idle.wrapping_shr(scell_log) & (RED_STAB_SIZE as i64 - 1);
        let shift = p.stab[cell as usize];
        if shift != 0 {
            return self.qavg.wrapping_shr(u32::from(shift));
        }
        let linear = self
            .qavg
            .wrapping_mul(us_idle as u64)
            .wrapping_shr(scell_log);
        if linear < self.qavg >> 1 {
            self.qavg - linear
        } else {
            self.qavg >> 1
        }
    }

    /// `red_calc_qavg_no_idle_time`: qavg × (1 - W) + backlog × W, in
    /// fixed point with the point at Wlog: qavg + backlog - qavg >> Wlog
    /// (unsigned long arithmetic, wrapping as C's does).
    pub fn qavg_no_idle_time(&self, p: &RedParms, backlog: u32) -> u64 {
        self.qavg.wrapping_add(
            u64::from(backlog).wrapping_sub(self.qavg.wrapping_shr(u32::from(p.wlog))),
        )
    }

    /// `red_calc_qavg`: the new average for a packet arriving at `now` to
    /// a child holding `backlog` bytes.
    pub fn calc_qavg(&self, p: &RedParms, backlog: u32, now: Instant) -> u64 {
        if self.is_idling() {
            self.qavg_from_idle_time(p, now)
        } else {
            self.qavg_no_idle_time(p, backlog)
        }
    }

    /// `red_mark_probability`: in the band, mark when
    /// ((qavg - min) >> Wlog) × qcount ≥ qR, the fixed-point form of
    /// max_P × (avg - min) / (max - min) ≥ rnd / qcount.
    pub fn mark_probability(&self, p: &RedParms, qavg: u64) -> bool {
        let excess = qavg
            .wrapping_sub(u64::from(p.qth_min))
            .wrapping_shr(u32::from(p.wlog));
        excess.wrapping_mul(self.qcount as i64 as u64) >= u64::from(self.qr)
    }

    /// `red_action`: the verdict for `qavg`; `draw` gives the random u32
    /// (`get_random_u32`) when a new qR is needed: at the first packet in
    /// the band and after each mark.
    pub fn action(&mut self, p: &RedParms, qavg: u64, draw: &mut impl FnMut() -> u32) -> RedAction {
        match red_cmp_thresh(p, qavg) {
            Thresh::BelowMin => {
                self.qcount = -1;
                RedAction::DontMark
            }
            Thresh::Between => {
                self.qcount = self.qcount.wrapping_add(1);
                if self.qcount != 0 {
                    if self.mark_probability(p, qavg) {
                        self.qcount = 0;
                        self.qr = p.random(draw());
                        return RedAction::ProbMark;
                    }
                } else {
                    self.qr = p.random(draw());
                }
                RedAction::DontMark
            }
            Thresh::AboveMax => {
                self.qcount = -1;
                RedAction::HardMark
            }
        }
    }
}

/// `red_adaptative_algo`, run by adaptive RED's timer at `now`: with the
/// average (decayed if idle) above the target band and max_P at most
/// 50 %, max_P += min(1 %, max_P / 4); below the band and max_P at least
/// 1 %, max_P = max_P / 10 × 9; then the divisor is recomputed, rounded
/// to nearest this time (`DIV_ROUND_CLOSEST`, u32 arithmetic).
pub fn red_adaptative_algo(p: &mut RedParms, v: &RedVars, now: Instant) {
    let qavg = if v.is_idling() {
        v.qavg_from_idle_time(p, now)
    } else {
        v.qavg
    };
    let qavg = qavg.wrapping_shr(u32::from(p.wlog));
    if qavg > u64::from(p.target_max) && p.max_p <= MAX_P_MAX {
        p.max_p = p.max_p.wrapping_add(max_p_alpha(p.max_p));
    } else if qavg < u64::from(p.target_min) && p.max_p >= MAX_P_MIN {
        p.max_p = p.max_p / 10 * 9;
    }
    let rounded = p.max_p.wrapping_add(p.qth_delta / 2) / p.qth_delta;
    p.max_p_delta = rounded.max(1);
}
