//! A TCP bulk-transfer model counted in segments: the sender with Reno
//! (RFC 5681) or CUBIC (RFC 8312) congestion control, SACK-based loss
//! recovery (RFC 6675: fast retransmit after three duplicate ACKs or three
//! SACKed segments, recovery until `recover` is acknowledged), RTO with
//! exponential backoff (RFC 6298, Linux-style `srtt + max(4·rttvar,
//! min_rto)`), and ECN (RFC 3168: ECT(0) data, ECE echoed by the receiver
//! until CWR, one window reduction per round trip). The receiver keeps the
//! out-of-order map, sends SACK blocks, and optionally delays ACKs (every
//! second segment or a timeout). CUBIC leaves slow start early on a rising
//! RTT as Linux's HyStart does (delay detection: the minimum RTT of a
//! round's first eight ACKs above the flow's minimum plus a clamped eighth).
//! Prague is the scalable (L4S) sender of RFC 9331 §4: ECT(1) data, accurate
//! ECN feedback (RFC 9768: the receiver counts CE-marked segments and the
//! ACK carries the count, not a sticky ECE), DCTCP's per-RTT estimate of the
//! marked fraction (RFC 8257: alpha += g·(F − alpha), g = 1/16) and a
//! reduction of cwnd by alpha/2 at most once per round trip on marks; it
//! grows by one segment per RTT and treats loss as Reno does.
//! No handshake: flows start established.
//!
//! Pure: every call takes `now`; the simulator owns timers and packets.

use super::scenario::CcAlgo;
use crate::time::{Instant, NS_PER_SEC};
use std::collections::VecDeque;

/// Scoreboard flags of one outstanding segment.
const SACKED: u8 = 1;
const LOST: u8 = 2;
const RETX: u8 = 4;

/// Duplicate-ACK / SACK threshold (RFC 5681 DupThresh).
const DUP_THRESH: u64 = 3;
/// Upper bound of the retransmission timeout.
const MAX_RTO_NS: u64 = 60 * NS_PER_SEC;
/// Initial RTO before any RTT sample (RFC 6298: 1 s).
const INITIAL_RTO_NS: u64 = NS_PER_SEC;
/// CUBIC constants (RFC 8312).
const CUBIC_C: f64 = 0.4;
const CUBIC_BETA: f64 = 0.7;
/// HyStart (Linux tcp_cubic.c): active from this window, samples per
/// round, and the clamp of the delay threshold.
const HYSTART_LOW_WINDOW: f64 = 16.0;
const HYSTART_MIN_SAMPLES: u32 = 8;
const HYSTART_DELAY_MIN_NS: u64 = 4_000_000;
const HYSTART_DELAY_MAX_NS: u64 = 16_000_000;
/// DCTCP's EWMA gain g = 1/16 (RFC 8257 §3.3; Linux `dctcp_shift_g` = 4).
const PRAGUE_G: f64 = 1.0 / 16.0;

/// Counters of one sender.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct TcpStats {
    /// Segments sent, retransmissions included.
    pub segments_sent: u64,
    /// Segments retransmitted.
    pub retransmits: u64,
    /// Fast recoveries entered (three duplicate ACKs or SACKed data beyond a
    /// hole).
    pub fast_recoveries: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Window reductions in answer to ECN-Echo (Prague: to new CE counts).
    pub ecn_reductions: u64,
    /// Prague: CE-marked segments the receiver reported (AccECN count).
    pub ce_reported: u64,
    /// Slow starts CUBIC's HyStart ended on a rising RTT.
    pub hystart_exits: u64,
}

/// One segment the sender wants on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The segment's number (bytes / MSS from the start of the flow).
    pub seg: u64,
    /// A retransmission.
    pub retransmit: bool,
    /// Congestion Window Reduced: first new segment after an ECE reaction.
    pub cwr: bool,
}

/// The ECN feedback one ACK carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Echo {
    /// Classic ECN (RFC 3168): the ECN-Echo flag.
    Ece(bool),
    /// Accurate ECN (RFC 9768): the receiver's count of CE-marked segments
    /// since the flow began.
    CeCount(u64),
}

impl From<bool> for Echo {
    fn from(ece: bool) -> Echo {
        Echo::Ece(ece)
    }
}

/// Prague's observation window (one round trip) and its alpha estimate
/// (Linux tcp_dctcp.c `dctcp_update_alpha`, in floating point).
#[derive(Clone, Copy, Debug)]
struct Prague {
    /// The estimate of the marked fraction; starts at 1 as
    /// `dctcp_alpha_on_init` does.
    alpha: f64,
    /// The window ends when this segment is acknowledged.
    window_end: u64,
    /// Segments acknowledged and CE counts reported in the window.
    acked: u64,
    marked: u64,
    /// The last CE count the receiver reported.
    ce_seen: u64,
}

impl Default for Prague {
    fn default() -> Self {
        Prague {
            alpha: 1.0,
            window_end: 0,
            acked: 0,
            marked: 0,
            ce_seen: 0,
        }
    }
}

/// HyStart's per-round state.
#[derive(Clone, Copy, Debug)]
struct HyStart {
    /// The round ends when this segment is acknowledged.
    round_end: u64,
    /// Minimum RTT of the current round's first samples.
    curr_rtt: u64,
    samples: u32,
    /// The flow's minimum RTT.
    delay_min: u64,
}

impl Default for HyStart {
    fn default() -> Self {
        HyStart {
            round_end: 0,
            curr_rtt: u64::MAX,
            samples: 0,
            delay_min: u64::MAX,
        }
    }
}

/// CUBIC's per-epoch state.
#[derive(Clone, Copy, Debug, Default)]
struct Cubic {
    w_max: f64,
    w_last_max: f64,
    k: f64,
    origin: f64,
    epoch_start: Option<Instant>,
    /// The TCP-friendly (Reno-equivalent) window estimate.
    w_est: f64,
}

/// The sending side of a bulk flow.
#[derive(Debug)]
pub struct TcpSender {
    cc: CcAlgo,
    /// Total segments to send; `None` for unlimited.
    limit: Option<u64>,
    rwnd_segs: u64,
    snd_una: u64,
    high_tx: u64,
    /// Flags of the segments `snd_una..high_tx`.
    sb: VecDeque<u8>,
    /// First transmission time of the same segments.
    sent_at: VecDeque<Instant>,
    sacked: u64,
    /// Segments marked lost and not yet retransmitted.
    lost: u64,
    /// No lost-and-unsent segment lies below this one.
    retx_cursor: u64,
    cwnd: f64,
    ssthresh: f64,
    dupacks: u64,
    in_recovery: bool,
    /// After an RTO: go back and resend, no fast recovery before `recover`.
    in_loss: bool,
    recover: u64,
    srtt_ns: Option<u64>,
    rttvar_ns: u64,
    min_rto_ns: u64,
    rto_ns: u64,
    backoff: u32,
    rto_at: Option<Instant>,
    rtt_probe: Option<(u64, Instant)>,
    ecn: bool,
    ecn_recover: u64,
    cwr_pending: bool,
    /// The first retransmission of a recovery is owed.
    fast_retransmit: bool,
    cubic: Cubic,
    hystart: HyStart,
    prague: Prague,
    /// The sender's counters.
    pub stats: TcpStats,
}

impl TcpSender {
    /// A sender with congestion control `cc`, `limit` segments to send (None:
    /// unbounded), an initial window of `init_cwnd` segments, the receiver's
    /// window of `rwnd_segs` segments, a minimum RTO of `min_rto_ns` and ECN on
    /// or off (Prague always uses ECN).
    pub fn new(
        cc: CcAlgo,
        limit: Option<u64>,
        init_cwnd: u32,
        rwnd_segs: u64,
        min_rto_ns: u64,
        ecn: bool,
    ) -> Self {
        TcpSender {
            cc,
            limit,
            rwnd_segs: rwnd_segs.max(1),
            snd_una: 0,
            high_tx: 0,
            sb: VecDeque::new(),
            sent_at: VecDeque::new(),
            sacked: 0,
            lost: 0,
            retx_cursor: 0,
            cwnd: init_cwnd.max(1) as f64,
            ssthresh: f64::MAX,
            dupacks: 0,
            in_recovery: false,
            in_loss: false,
            recover: 0,
            srtt_ns: None,
            rttvar_ns: 0,
            min_rto_ns,
            rto_ns: INITIAL_RTO_NS.max(min_rto_ns),
            backoff: 0,
            rto_at: None,
            rtt_probe: None,
            ecn: ecn || cc == CcAlgo::Prague,
            ecn_recover: 0,
            cwr_pending: false,
            fast_retransmit: false,
            cubic: Cubic::default(),
            hystart: HyStart::default(),
            prague: Prague::default(),
            stats: TcpStats::default(),
        }
    }

    /// Congestion window in segments.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }
    /// Slow-start threshold, segments (f64::MAX until the first loss).
    pub fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    /// First unacknowledged segment (= segments delivered in order).
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }
    /// Smoothed RTT (RFC 6298), ns; None before the first sample.
    pub fn srtt_ns(&self) -> Option<u64> {
        self.srtt_ns
    }
    /// When the retransmission timer fires, if armed.
    pub fn rto_at(&self) -> Option<Instant> {
        self.rto_at
    }
    /// Prague's estimate of the marked fraction (1 for other senders).
    pub fn alpha(&self) -> f64 {
        self.prague.alpha
    }
    /// In fast recovery.
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }
    /// All data sent and acknowledged.
    pub fn finished(&self) -> bool {
        self.limit.is_some_and(|l| self.snd_una >= l)
    }

    /// Segments in flight as RFC 6675 `pipe` counts them.
    fn pipe(&self) -> u64 {
        (self.high_tx - self.snd_una) - self.sacked - self.lost
    }

    fn flag(&self, seg: u64) -> u8 {
        self.sb[(seg - self.snd_una) as usize]
    }

    fn arm_rto(&mut self, now: Instant) {
        self.rto_at = Some(now + self.rto_ns);
    }

    /// The next segment to transmit now, if the window allows one. Call
    /// until `None`.
    pub fn next_segment(&mut self, now: Instant) -> Option<Segment> {
        // The fast retransmit itself ignores the window (RFC 6675 step 4.3).
        let forced = std::mem::take(&mut self.fast_retransmit);
        if !forced && self.pipe() as f64 >= self.cwnd.max(1.0).floor() {
            return None;
        }
        if self.lost > 0 {
            let mut seg = self.retx_cursor.max(self.snd_una);
            while seg < self.high_tx {
                let f = self.flag(seg);
                if f & LOST != 0 && f & (RETX | SACKED) == 0 {
                    self.sb[(seg - self.snd_una) as usize] |= RETX;
                    self.lost -= 1;
                    self.retx_cursor = seg + 1;
                    // Karn: no RTT sample across a retransmission.
                    self.rtt_probe = None;
                    self.stats.retransmits += 1;
                    self.stats.segments_sent += 1;
                    if self.rto_at.is_none() {
                        self.arm_rto(now);
                    }
                    return Some(Segment {
                        seg,
                        retransmit: true,
                        cwr: false,
                    });
                }
                seg += 1;
            }
            debug_assert!(false, "lost count without a lost segment");
            self.lost = 0;
        }
        if self.limit.is_some_and(|l| self.high_tx >= l)
            || self.high_tx - self.snd_una >= self.rwnd_segs
        {
            return None;
        }
        let seg = self.high_tx;
        self.high_tx += 1;
        self.sb.push_back(0);
        self.sent_at.push_back(now);
        if self.rtt_probe.is_none() {
            self.rtt_probe = Some((seg, now));
        }
        if self.rto_at.is_none() {
            self.arm_rto(now);
        }
        self.stats.segments_sent += 1;
        let cwr = std::mem::take(&mut self.cwr_pending);
        Some(Segment {
            seg,
            retransmit: false,
            cwr,
        })
    }

    fn rtt_sample(&mut self, rtt: u64) {
        match self.srtt_ns {
            None => {
                self.srtt_ns = Some(rtt);
                self.rttvar_ns = rtt / 2;
            }
            Some(srtt) => {
                let err = srtt.abs_diff(rtt);
                self.rttvar_ns = (3 * self.rttvar_ns + err) / 4;
                self.srtt_ns = Some((7 * srtt + rtt) / 8);
            }
        }
        self.backoff = 0;
        self.rto_ns = self.base_rto();
    }

    fn base_rto(&self) -> u64 {
        match self.srtt_ns {
            Some(srtt) => (srtt + (4 * self.rttvar_ns).max(self.min_rto_ns)).min(MAX_RTO_NS),
            None => INITIAL_RTO_NS.max(self.min_rto_ns),
        }
    }

    /// The congestion reaction (loss or ECE): returns the new ssthresh.
    fn on_congestion(&mut self) -> f64 {
        match self.cc {
            CcAlgo::Reno | CcAlgo::Prague => (self.cwnd / 2.0).max(2.0),
            CcAlgo::Cubic => {
                let c = &mut self.cubic;
                c.epoch_start = None;
                // Fast convergence (RFC 8312 4.6).
                if self.cwnd < c.w_last_max {
                    c.w_last_max = self.cwnd;
                    c.w_max = self.cwnd * (1.0 + CUBIC_BETA) / 2.0;
                } else {
                    c.w_last_max = self.cwnd;
                    c.w_max = self.cwnd;
                }
                (self.cwnd * CUBIC_BETA).max(2.0)
            }
        }
    }

    /// Congestion-avoidance growth for `acked` newly acknowledged segments.
    fn grow(&mut self, acked: u64, now: Instant) {
        let acked_f = acked as f64;
        if self.cwnd < self.ssthresh {
            self.cwnd = (self.cwnd + acked_f).min(self.ssthresh.max(self.cwnd + 1.0));
            return;
        }
        match self.cc {
            CcAlgo::Reno | CcAlgo::Prague => self.cwnd += acked_f / self.cwnd,
            CcAlgo::Cubic => {
                let rtt_s = self.srtt_ns.unwrap_or(INITIAL_RTO_NS) as f64 / 1e9;
                let cwnd = self.cwnd;
                let c = &mut self.cubic;
                let start = *c.epoch_start.get_or_insert_with(|| {
                    if cwnd < c.w_max {
                        c.k = ((c.w_max - cwnd) / CUBIC_C).cbrt();
                        c.origin = c.w_max;
                    } else {
                        c.k = 0.0;
                        c.origin = cwnd;
                    }
                    c.w_est = cwnd;
                    now
                });
                let t = now.saturating_since(start) as f64 / 1e9 + rtt_s;
                let target = c.origin + CUBIC_C * (t - c.k).powi(3);
                // TCP-friendly region (RFC 8312 4.2).
                c.w_est += 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA) * acked_f / cwnd;
                let goal = target.max(c.w_est);
                self.cwnd += if goal > cwnd {
                    (goal - cwnd) / cwnd * acked_f
                } else {
                    0.01 * acked_f / cwnd
                };
            }
        }
        self.cwnd = self.cwnd.min(self.rwnd_segs as f64);
    }

    /// HyStart delay detection (CUBIC in slow start only): ends slow start
    /// when this round's early RTTs exceed the minimum by the threshold.
    fn hystart_update(&mut self, rtt: u64) {
        let h = &mut self.hystart;
        h.delay_min = h.delay_min.min(rtt.max(1));
        if self.cc != CcAlgo::Cubic || self.cwnd >= self.ssthresh {
            return;
        }
        if self.snd_una > h.round_end {
            h.round_end = self.high_tx;
            h.curr_rtt = u64::MAX;
            h.samples = 0;
        }
        if self.cwnd < HYSTART_LOW_WINDOW {
            return;
        }
        if h.samples < HYSTART_MIN_SAMPLES {
            h.curr_rtt = h.curr_rtt.min(rtt);
            h.samples += 1;
            return;
        }
        let thresh = (h.delay_min / 8).clamp(HYSTART_DELAY_MIN_NS, HYSTART_DELAY_MAX_NS);
        if h.curr_rtt > h.delay_min.saturating_add(thresh) {
            self.ssthresh = self.cwnd;
            self.stats.hystart_exits += 1;
        }
    }

    /// Marks as lost every unSACKed segment with at least DupThresh SACKed
    /// segments above it (RFC 6675 IsLost).
    fn mark_losses(&mut self) {
        let mut above = 0u64;
        for i in (0..self.sb.len()).rev() {
            let f = self.sb[i];
            if f & SACKED != 0 {
                above += 1;
            } else if above >= DUP_THRESH && f & LOST == 0 {
                self.sb[i] |= LOST;
                self.lost += 1;
                self.retx_cursor = self.retx_cursor.min(self.snd_una + i as u64);
            }
        }
    }

    /// Prague's accounting of one ACK: the CE count it reports and the
    /// segments it acknowledges; at the end of a round trip the marked
    /// fraction F updates alpha (RFC 8257 §3.3). Returns whether the ACK
    /// reports new marks.
    fn prague_feedback(&mut self, ce_count: u64, acked: u64) -> bool {
        let p = &mut self.prague;
        let new_marks = ce_count.saturating_sub(p.ce_seen);
        p.ce_seen = p.ce_seen.max(ce_count);
        p.marked += new_marks;
        p.acked += acked;
        self.stats.ce_reported += new_marks;
        if self.snd_una > p.window_end {
            if p.acked > 0 {
                let f = (p.marked as f64 / p.acked as f64).min(1.0);
                p.alpha += PRAGUE_G * (f - p.alpha);
            }
            p.acked = 0;
            p.marked = 0;
            p.window_end = self.high_tx;
        }
        new_marks > 0
    }

    /// Processes an ACK: cumulative `ack` (next expected segment), SACK
    /// blocks `[left, right)` in segments, and the ECN feedback (the ECE
    /// flag, or Prague's CE count).
    pub fn on_ack(&mut self, ack: u64, sacks: &[(u64, u64)], echo: impl Into<Echo>, now: Instant) {
        if ack > self.high_tx {
            return;
        }
        let echo = echo.into();
        let mut acked = 0;
        if ack > self.snd_una {
            acked = ack - self.snd_una;
            let mut newest: Option<(u8, Instant)> = None;
            for _ in 0..acked {
                let f = self.sb.pop_front().unwrap_or(0);
                newest = self.sent_at.pop_front().map(|t| (f, t));
                if f & SACKED != 0 {
                    self.sacked -= 1;
                } else if f & LOST != 0 && f & RETX == 0 {
                    self.lost -= 1;
                }
            }
            self.snd_una = ack;
            self.retx_cursor = self.retx_cursor.max(ack);
            // Per-ACK RTT of the newest segment acknowledged, unless it was
            // retransmitted (Karn).
            if let Some((_, sent)) = newest.filter(|(f, _)| f & RETX == 0) {
                self.hystart_update(now.saturating_since(sent));
            }
            if let Some((seg, sent)) = self.rtt_probe {
                if ack > seg {
                    self.rtt_probe = None;
                    self.rtt_sample(now.saturating_since(sent));
                }
            }
            self.dupacks = 0;
            self.rto_ns = self.base_rto();
            self.backoff = 0;
            self.rto_at = None;
            if self.snd_una < self.high_tx {
                self.arm_rto(now);
            }
        }
        let mut newly_sacked = 0;
        for &(l, r) in sacks {
            for seg in l.max(self.snd_una)..r.min(self.high_tx) {
                let i = (seg - self.snd_una) as usize;
                let f = self.sb[i];
                if f & SACKED == 0 {
                    self.sb[i] = f | SACKED;
                    self.sacked += 1;
                    newly_sacked += 1;
                    if f & LOST != 0 && f & RETX == 0 {
                        self.lost -= 1;
                    }
                }
            }
        }
        if acked == 0 && self.snd_una < self.high_tx && (newly_sacked > 0 || sacks.is_empty()) {
            self.dupacks += 1;
        }
        if self.in_loss && self.snd_una >= self.recover {
            self.in_loss = false;
        }
        let mut exited = false;
        if self.in_recovery && self.snd_una >= self.recover {
            self.in_recovery = false;
            self.cwnd = self.ssthresh;
            exited = true;
        }
        let mut entered = false;
        if !self.in_recovery
            && !self.in_loss
            && (self.dupacks >= DUP_THRESH || self.sacked >= DUP_THRESH)
            // RFC 6582: a new recovery only once `recover` is acknowledged.
            && self.snd_una >= self.recover
        {
            self.ssthresh = self.on_congestion();
            self.cwnd = self.ssthresh;
            self.recover = self.high_tx;
            self.ecn_recover = self.high_tx;
            self.in_recovery = true;
            self.stats.fast_recoveries += 1;
            entered = true;
            // Fast retransmit of the first unacknowledged segment.
            if self.flag(self.snd_una) & (LOST | SACKED) == 0 {
                self.sb[0] |= LOST;
                self.lost += 1;
                self.retx_cursor = self.snd_una;
                self.fast_retransmit = true;
            }
        }
        if self.in_recovery && (entered || newly_sacked > 0) {
            self.mark_losses();
        }
        let ece = match echo {
            Echo::Ece(ece) => ece,
            Echo::CeCount(n) if self.cc == CcAlgo::Prague => self.prague_feedback(n, acked),
            Echo::CeCount(_) => false,
        };
        if acked > 0 && !self.in_recovery && !exited {
            if ece && self.ecn {
                // Reduce once per window; never grow on ECE (RFC 3168 6.1.2).
                if self.snd_una > self.ecn_recover {
                    self.ssthresh = if self.cc == CcAlgo::Prague {
                        // DCTCP's reduction (RFC 8257 §3.3, Linux
                        // `dctcp_ssthresh`); AccECN needs no CWR.
                        (self.cwnd * (1.0 - self.prague.alpha / 2.0)).max(2.0)
                    } else {
                        self.cwr_pending = true;
                        self.on_congestion()
                    };
                    self.cwnd = self.ssthresh;
                    self.ecn_recover = self.high_tx;
                    self.stats.ecn_reductions += 1;
                }
            } else {
                self.grow(acked, now);
            }
        }
    }

    /// The retransmission timer fired at `now` (the caller checked that
    /// `rto_at() <= now`). Everything outstanding and not SACKed is lost.
    pub fn on_rto(&mut self, now: Instant) {
        if self.snd_una >= self.high_tx {
            self.rto_at = None;
            return;
        }
        self.stats.timeouts += 1;
        self.ssthresh = self.on_congestion();
        self.cwnd = 1.0;
        self.in_recovery = false;
        self.in_loss = true;
        self.recover = self.high_tx;
        self.ecn_recover = self.high_tx;
        self.dupacks = 0;
        self.lost = 0;
        for f in self.sb.iter_mut() {
            *f &= !RETX;
            if *f & SACKED == 0 {
                *f |= LOST;
                self.lost += 1;
            }
        }
        self.retx_cursor = self.snd_una;
        self.rtt_probe = None;
        self.backoff += 1;
        self.rto_ns = (self.base_rto() << self.backoff.min(16)).min(MAX_RTO_NS);
        self.arm_rto(now);
    }
}

/// What the receiver does after a data segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckNow {
    /// Send an ACK now.
    Now,
    /// An ACK is owed; the delayed-ACK timer runs until this time.
    Delayed(Instant),
}

/// The ACK the receiver sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckInfo {
    /// Cumulative acknowledgement: the next segment expected.
    pub ack: u64,
    /// SACK blocks, [start, end) in segments; the first `nsacks` are valid.
    pub sacks: [(u64, u64); 3],
    /// Valid SACK blocks.
    pub nsacks: u8,
    /// ECN-Echo set.
    pub ece: bool,
    /// An accurate-ECN receiver's count of CE-marked segments.
    pub ce_count: Option<u64>,
}

impl AckInfo {
    /// The ECN feedback for the sender.
    pub fn echo(&self) -> Echo {
        self.ce_count.map_or(Echo::Ece(self.ece), Echo::CeCount)
    }

    /// The AE, CWR and ECE flags as an accurate-ECN receiver sets them: the
    /// ACE field, its CE count plus 5 modulo 8 (RFC 9768 §3.2.2.1, `r.cep`
    /// starts at 5); the classic ECE flag otherwise.
    pub fn flags(&self) -> (bool, bool, bool) {
        match self.ce_count {
            Some(n) => {
                let ace = (n + 5) % 8;
                (ace & 4 != 0, ace & 2 != 0, ace & 1 != 0)
            }
            None => (false, false, self.ece),
        }
    }

    /// The valid SACK blocks.
    pub fn sack_blocks(&self) -> &[(u64, u64)] {
        &self.sacks[..self.nsacks as usize]
    }
}

/// The receiving side of a bulk flow.
#[derive(Debug)]
pub struct TcpReceiver {
    rcv_nxt: u64,
    /// `ooo[i]`: segment `rcv_nxt + 1 + i` has arrived.
    ooo: VecDeque<bool>,
    /// The most recently arrived out-of-order segment (first SACK block).
    last_ooo: u64,
    ece_pending: bool,
    /// Accurate ECN: count CE-marked segments (`Some`) instead of ECE.
    ce_count: Option<u64>,
    /// The last data segment was CE-marked (AccECN's change-triggered ACK).
    last_ce: bool,
    delayed_ack: bool,
    delack_ns: u64,
    unacked: u32,
    delack_at: Option<Instant>,
    /// Data segments received, duplicates included.
    pub segments_received: u64,
}

impl TcpReceiver {
    /// A receiver that acknowledges every other segment within `delack_ns`
    /// (delayed ACKs) or every segment.
    pub fn new(delayed_ack: bool, delack_ns: u64) -> Self {
        TcpReceiver {
            rcv_nxt: 0,
            ooo: VecDeque::new(),
            last_ooo: 0,
            ece_pending: false,
            ce_count: None,
            last_ce: false,
            delayed_ack,
            delack_ns,
            unacked: 0,
            delack_at: None,
            segments_received: 0,
        }
    }

    /// The same receiver with accurate ECN feedback (RFC 9768): its ACKs
    /// carry the count of CE-marked segments.
    pub fn accurate_ecn(mut self) -> Self {
        self.ce_count = Some(0);
        self
    }

    /// Next expected segment (= segments received in order).
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    /// When the delayed-ACK timer fires, if an ACK is owed.
    pub fn delack_at(&self) -> Option<Instant> {
        self.delack_at
    }

    /// A data segment arrived; `ce` if it carries Congestion Experienced,
    /// `cwr` if the sender set CWR.
    pub fn on_data(&mut self, seg: u64, ce: bool, cwr: bool, now: Instant) -> AckNow {
        self.segments_received += 1;
        if cwr {
            self.ece_pending = false;
        }
        if ce {
            self.ece_pending = true;
        }
        let mut immediate = !self.delayed_ack;
        if let Some(n) = &mut self.ce_count {
            // Change-triggered ACK: when CE starts or stops (RFC 9768
            // §3.2.2.5.1).
            *n += u64::from(ce);
            immediate |= ce != self.last_ce;
            self.last_ce = ce;
        } else {
            immediate |= ce;
        }
        if seg == self.rcv_nxt {
            self.rcv_nxt += 1;
            if !self.ooo.is_empty() {
                // ooo[0] now stands for rcv_nxt itself: pull in what was
                // queued above the hole, then drop the entry of the next
                // hole so that ooo[0] is rcv_nxt + 1 again.
                while self.ooo.front() == Some(&true) {
                    self.ooo.pop_front();
                    self.rcv_nxt += 1;
                }
                self.ooo.pop_front();
                self.trim();
                immediate = true;
            }
        } else if seg > self.rcv_nxt {
            let i = (seg - self.rcv_nxt - 1) as usize;
            if self.ooo.len() <= i {
                self.ooo.resize(i + 1, false);
            }
            self.ooo[i] = true;
            self.last_ooo = seg;
            immediate = true;
        } else {
            // Duplicate: ACK at once (RFC 5681 4.2).
            immediate = true;
        }
        self.unacked += 1;
        if immediate || self.unacked >= 2 {
            AckNow::Now
        } else {
            AckNow::Delayed(*self.delack_at.get_or_insert(now + self.delack_ns))
        }
    }

    /// Drops trailing `false` entries (so an empty map means no holes).
    fn trim(&mut self) {
        while self.ooo.back() == Some(&false) {
            self.ooo.pop_back();
        }
    }

    /// Builds the ACK to send now and clears the delayed-ACK state.
    pub fn make_ack(&mut self) -> AckInfo {
        self.unacked = 0;
        self.delack_at = None;
        let mut info = AckInfo {
            ack: self.rcv_nxt,
            sacks: [(0, 0); 3],
            nsacks: 0,
            ece: self.ece_pending && self.ce_count.is_none(),
            ce_count: self.ce_count,
        };
        // Runs of received segments above the hole; the one holding the
        // latest arrival goes first (RFC 2018), then the lowest others.
        let base = self.rcv_nxt + 1;
        let mut first: Option<(u64, u64)> = None;
        let mut others = [(0u64, 0u64); 2];
        let mut n_others = 0;
        let mut i = 0;
        while i < self.ooo.len() {
            if !self.ooo[i] {
                i += 1;
                continue;
            }
            let start = i;
            while i < self.ooo.len() && self.ooo[i] {
                i += 1;
            }
            let block = (base + start as u64, base + i as u64);
            if (block.0..block.1).contains(&self.last_ooo) && first.is_none() {
                first = Some(block);
            } else if n_others < 2 {
                others[n_others] = block;
                n_others += 1;
            }
            if first.is_some() && n_others == 2 {
                break;
            }
        }
        for b in first.into_iter().chain(others[..n_others].iter().copied()) {
            info.sacks[info.nsacks as usize] = b;
            info.nsacks += 1;
        }
        info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    /// An unlimited sender: `init_cwnd` segments, a receive window of 1000,
    /// a 200 ms minimum RTO, no ECN.
    fn bulk(cc: CcAlgo, init_cwnd: u32) -> TcpSender {
        TcpSender::new(cc, None, init_cwnd, 1000, 200_000_000, false)
    }

    fn drain(s: &mut TcpSender, now: Instant) -> Vec<Segment> {
        std::iter::from_fn(|| s.next_segment(now)).collect()
    }

    #[test]
    fn initial_window_and_slow_start() {
        let mut s = bulk(CcAlgo::Reno, 10);
        let segs = drain(&mut s, t(0));
        assert_eq!(segs.len(), 10);
        assert!(segs.iter().all(|x| !x.retransmit));
        s.on_ack(5, &[], false, t(10));
        assert_eq!(s.cwnd(), 15.0);
        assert_eq!(s.srtt_ns(), Some(10_000_000));
        // 5 in flight, window 15: ten more.
        assert_eq!(drain(&mut s, t(10)).len(), 10);
    }

    #[test]
    fn reno_congestion_avoidance_adds_one_per_window() {
        let mut s = bulk(CcAlgo::Reno, 10);
        s.ssthresh = 10.0;
        drain(&mut s, t(0));
        for k in 1..=10 {
            s.on_ack(k, &[], false, t(10));
        }
        assert!((s.cwnd() - 11.0).abs() < 0.05, "{}", s.cwnd());
    }

    #[test]
    fn three_dupacks_fast_retransmit_and_recovery() {
        let mut s = bulk(CcAlgo::Reno, 10);
        drain(&mut s, t(0));
        // Segment 0 lost; 1, 2, 3 arrive and are SACKed.
        s.on_ack(0, &[(1, 2)], false, t(10));
        s.on_ack(0, &[(1, 3)], false, t(10));
        assert!(!s.in_recovery());
        s.on_ack(0, &[(1, 4)], false, t(10));
        assert!(s.in_recovery());
        assert_eq!(s.ssthresh(), 5.0);
        let segs = drain(&mut s, t(10));
        assert_eq!(
            segs[0],
            Segment {
                seg: 0,
                retransmit: true,
                cwr: false
            }
        );
        assert_eq!(s.stats.fast_recoveries, 1);
        // The retransmission fills the hole: everything sent is acked.
        let high = s.high_tx;
        s.on_ack(high, &[], false, t(20));
        assert!(!s.in_recovery());
        assert_eq!(s.cwnd(), 5.0);
    }

    #[test]
    fn sack_recovery_repairs_several_holes_in_one_round() {
        let mut s = bulk(CcAlgo::Reno, 20);
        drain(&mut s, t(0));
        // Segments 2, 5 and 9 are lost; everything else up to 19 arrives.
        let mut recv = TcpReceiver::new(false, 40_000_000);
        for seg in (0..20).filter(|x| ![2, 5, 9].contains(x)) {
            recv.on_data(seg, false, false, t(10));
            let a = recv.make_ack();
            s.on_ack(a.ack, a.sack_blocks(), false, t(10));
        }
        assert!(s.in_recovery());
        let retx: Vec<u64> = drain(&mut s, t(10))
            .iter()
            .filter(|x| x.retransmit)
            .map(|x| x.seg)
            .collect();
        assert_eq!(retx, vec![2, 5, 9], "all holes resent in one round");
        for seg in [2, 5, 9] {
            recv.on_data(seg, false, false, t(20));
            let a = recv.make_ack();
            s.on_ack(a.ack, a.sack_blocks(), false, t(20));
        }
        assert_eq!(recv.rcv_nxt(), 20);
        assert!(s.snd_una() >= 20);
        assert_eq!(s.stats.fast_recoveries, 1);
        assert_eq!(s.stats.timeouts, 0);
        assert_eq!(s.stats.retransmits, 3);
    }

    #[test]
    fn no_second_reduction_before_recover_is_acked() {
        let mut s = bulk(CcAlgo::Reno, 10);
        drain(&mut s, t(0));
        s.on_ack(0, &[(1, 4)], false, t(10));
        let first = s.ssthresh();
        // Partial ACK, then more SACKs above a second hole in the same window.
        s.on_ack(2, &[(3, 8)], false, t(20));
        assert!(s.in_recovery());
        assert_eq!(s.ssthresh(), first);
        assert_eq!(s.stats.fast_recoveries, 1);
    }

    #[test]
    fn acks_beyond_what_was_sent_are_ignored() {
        let mut s = bulk(CcAlgo::Reno, 2);
        drain(&mut s, t(0));
        s.on_ack(50, &[(60, 70)], false, t(1));
        assert_eq!(s.snd_una(), 0);
        // SACK blocks outside the window are clipped.
        s.on_ack(1, &[(0, 1000)], false, t(2));
        assert_eq!(s.snd_una(), 1);
    }

    #[test]
    fn duplicate_acks_without_sack_also_trigger() {
        let mut s = bulk(CcAlgo::Reno, 4);
        drain(&mut s, t(0));
        for _ in 0..3 {
            s.on_ack(0, &[], false, t(5));
        }
        assert!(s.in_recovery());
        assert!(drain(&mut s, t(5))[0].retransmit);
    }

    #[test]
    fn rto_backs_off_and_goes_back() {
        let mut s = bulk(CcAlgo::Cubic, 4);
        drain(&mut s, t(0));
        assert_eq!(s.rto_at(), Some(t(1000)));
        s.on_rto(t(1000));
        assert_eq!(s.cwnd(), 1.0);
        assert_eq!(s.rto_at(), Some(t(3000)));
        let segs = drain(&mut s, t(1000));
        assert_eq!(segs.len(), 1);
        assert_eq!(segs[0].seg, 0);
        assert!(segs[0].retransmit);
        s.on_rto(t(3000));
        assert_eq!(s.rto_at(), Some(t(7000)));
        assert_eq!(s.stats.timeouts, 2);
        // An ACK resets the backoff and slow start resends the rest.
        s.on_ack(1, &[], false, t(3010));
        let segs = drain(&mut s, t(3010));
        assert_eq!(segs.iter().map(|x| x.seg).collect::<Vec<_>>(), vec![1, 2]);
    }

    #[test]
    fn ecn_echo_reduces_once_per_window_and_sets_cwr() {
        let mut s = TcpSender::new(CcAlgo::Reno, None, 10, 1000, 200_000_000, true);
        drain(&mut s, t(0));
        s.on_ack(1, &[], true, t(10));
        assert_eq!(s.cwnd(), 5.0);
        s.on_ack(2, &[], true, t(10));
        assert_eq!(s.cwnd(), 5.0, "second ECE in the same window ignored");
        assert_eq!(s.stats.ecn_reductions, 1);
        // Window: 8 in flight > 5, nothing to send yet.
        assert!(drain(&mut s, t(10)).is_empty());
        for k in 3..=7 {
            s.on_ack(k, &[], false, t(11));
        }
        let segs = drain(&mut s, t(11));
        assert!(segs[0].cwr);
        assert!(!segs[1..].iter().any(|x| x.cwr));
    }

    #[test]
    fn ecn_ignored_when_not_negotiated() {
        let mut s = bulk(CcAlgo::Reno, 10);
        drain(&mut s, t(0));
        s.on_ack(1, &[], true, t(10));
        assert_eq!(s.cwnd(), 11.0);
    }

    #[test]
    fn cubic_reduces_by_beta_and_regrows_to_wmax() {
        let mut s = TcpSender::new(CcAlgo::Cubic, None, 100, 10_000, 200_000_000, false);
        drain(&mut s, t(0));
        s.on_ack(0, &[(1, 4)], false, t(10));
        assert!(s.in_recovery());
        assert!((s.cwnd() - 70.0).abs() < 1e-9);
        let high = s.high_tx;
        let mut now = 10;
        drain(&mut s, t(now));
        s.on_ack(high, &[], false, t(20));
        // Keep the pipe full for 10 s of 20 ms rounds and watch it grow
        // past w_max (100) along the cubic curve.
        let mut una = s.snd_una();
        while now < 10_000 {
            now += 20;
            drain(&mut s, t(now));
            una = s.high_tx.max(una);
            s.on_ack(una, &[], false, t(now));
        }
        assert!(s.cwnd() > 100.0, "{}", s.cwnd());
    }

    #[test]
    fn hystart_ends_cubic_slow_start_when_the_rtt_rises() {
        let run = |cc| {
            let mut s = TcpSender::new(cc, None, 10, 100_000, 200_000_000, false);
            let mut sent: VecDeque<(u64, Instant)> = VecDeque::new();
            // A path with a 10 ms base RTT whose queue adds 1 ms per 10
            // segments in flight beyond 20.
            let mut now = 0u64;
            while s.cwnd() < s.ssthresh() && now < 2_000_000_000 {
                for seg in std::iter::from_fn(|| s.next_segment(Instant::from_nanos(now))) {
                    sent.push_back((seg.seg, Instant::from_nanos(now)));
                }
                let inflight = sent.len() as u64;
                let (seg, at) = sent.pop_front().unwrap();
                let rtt = 10_000_000 + inflight.saturating_sub(20) * 100_000;
                now = now.max(at.nanos() + rtt);
                s.on_ack(seg + 1, &[], false, Instant::from_nanos(now));
            }
            s
        };
        let cubic = run(CcAlgo::Cubic);
        assert_eq!(cubic.stats.hystart_exits, 1);
        assert!(cubic.ssthresh() < 200.0, "left at {}", cubic.ssthresh());
        assert!(cubic.ssthresh() >= HYSTART_LOW_WINDOW);
        let reno = run(CcAlgo::Reno);
        assert_eq!(reno.stats.hystart_exits, 0);
        assert_eq!(reno.ssthresh(), f64::MAX, "Reno stays in slow start");
    }

    /// A Prague sender in congestion avoidance with `cwnd` segments.
    fn prague(cwnd: u32) -> TcpSender {
        let mut s = TcpSender::new(CcAlgo::Prague, None, cwnd, 1000, 200_000_000, false);
        s.ssthresh = cwnd as f64;
        s
    }

    #[test]
    fn prague_alpha_after_a_window_with_3_of_10_marked() {
        let mut s = prague(10);
        assert!(s.ecn, "Prague implies ECN");
        drain(&mut s, t(0));
        // One observation window over segments 0..10; 2, 5 and 7 are CE.
        s.prague.window_end = 9;
        let marked = [2u64, 5, 7];
        for k in 1..=10u64 {
            let ce = marked.iter().filter(|&&m| m < k).count() as u64;
            s.on_ack(k, &[], Echo::CeCount(ce), t(10));
            if k < 10 {
                assert_eq!(s.alpha(), 1.0, "no update inside the window");
            }
        }
        // alpha = (1 - 1/16)·1 + 1/16·3/10
        assert!((s.alpha() - (15.0 / 16.0 + 0.3 / 16.0)).abs() < 1e-12);
        assert_eq!(s.stats.ce_reported, 3);
        // The next window, unmarked, decays it by 15/16.
        drain(&mut s, t(10));
        let high = s.high_tx;
        s.on_ack(high, &[], Echo::CeCount(3), t(20));
        assert!((s.alpha() - (15.0 / 16.0 + 0.3 / 16.0) * 15.0 / 16.0).abs() < 1e-12);
    }

    #[test]
    fn prague_reduces_once_per_round_trip_without_cwr() {
        let mut s = prague(10);
        drain(&mut s, t(0));
        // The first ACK closes the initial window fully marked: alpha stays
        // 1 and cwnd halves.
        s.on_ack(1, &[], Echo::CeCount(1), t(10));
        assert_eq!(s.cwnd(), 5.0);
        s.on_ack(2, &[], Echo::CeCount(2), t(10));
        assert_eq!(s.cwnd(), 5.0, "a second mark in the same RTT is ignored");
        assert_eq!(s.stats.ecn_reductions, 1);
        for k in 3..=10 {
            s.on_ack(k, &[], Echo::CeCount(2), t(11));
        }
        assert!(s.cwnd() > 5.0, "grows on unmarked ACKs: {}", s.cwnd());
        let segs = drain(&mut s, t(11));
        assert!(!segs.iter().any(|x| x.cwr), "accurate ECN sets no CWR");
        // Segment 10 was sent after the reduction: its mark counts.
        s.on_ack(11, &[], Echo::CeCount(3), t(20));
        assert_eq!(s.stats.ecn_reductions, 2);
        // A loss halves the window as Reno does.
        let before = s.cwnd();
        s.on_ack(11, &[(12, 15)], Echo::CeCount(3), t(21));
        assert!(s.in_recovery());
        assert_eq!(s.ssthresh(), (before / 2.0).max(2.0));
    }

    #[test]
    fn prague_cwnd_trajectory_over_four_round_trips() {
        // One cumulative ACK per round trip for everything sent.
        let mut s = prague(20);
        let round = |s: &mut TcpSender, ms: u64, ce: u64| {
            let n = drain(s, t(ms - 10)).len();
            let high = s.high_tx;
            s.on_ack(high, &[], Echo::CeCount(ce), t(ms));
            n
        };
        // 1: 20 unmarked: alpha = 15/16, cwnd = 20 + 20/20.
        assert_eq!(round(&mut s, 10, 0), 20);
        assert_eq!((s.alpha(), s.cwnd()), (0.9375, 21.0));
        // 2: all 21 marked: alpha = 0.9375 + (1 - 0.9375)/16 = 0.94140625,
        // cwnd = 21·(1 - alpha/2) = 11.115234375.
        assert_eq!(round(&mut s, 20, 21), 21);
        assert_eq!((s.alpha(), s.cwnd()), (0.94140625, 11.115234375));
        // 3: 11 sent, unmarked: alpha·15/16 = 0.882568359375,
        // cwnd = 11.115234375 + 11/11.115234375 = 12.104867128...
        assert_eq!(round(&mut s, 30, 21), 11);
        assert_eq!(s.alpha(), 0.882568359375);
        assert!((s.cwnd() - 12.104_867_128_470_392).abs() < 1e-9);
        // 4: 12 sent, 6 marked (F = 1/2): alpha = 0.8585578369140625,
        // cwnd = 12.1048...·(1 - alpha/2) = 6.907897616...
        assert_eq!(round(&mut s, 40, 27), 12);
        assert!((s.alpha() - 0.858_657_836_914_062_5).abs() < 1e-12);
        assert!((s.cwnd() - 6.907_897_616_138_129).abs() < 1e-9);
        assert_eq!(s.stats.ecn_reductions, 2);
    }

    #[test]
    fn accurate_ecn_receiver_counts_marks_and_acks_on_change() {
        let mut r = TcpReceiver::new(true, 40_000_000).accurate_ecn();
        assert_eq!(r.on_data(0, false, false, t(0)), AckNow::Delayed(t(40)));
        // CE starts: an immediate ACK.
        assert_eq!(r.on_data(1, true, false, t(1)), AckNow::Now);
        let a = r.make_ack();
        assert_eq!((a.ce_count, a.ece), (Some(1), false));
        assert_eq!(a.echo(), Echo::CeCount(1));
        // ACE = (1 + 5) mod 8 = 0b110: AE and CWR set, ECE clear.
        assert_eq!(a.flags(), (true, true, false));
        // CE continues: delayed ACK as usual; CE stops: immediate.
        assert_eq!(r.on_data(2, true, false, t(2)), AckNow::Delayed(t(42)));
        assert_eq!(r.on_data(3, false, false, t(3)), AckNow::Now);
        assert_eq!(r.make_ack().echo(), Echo::CeCount(2));
        // CWR does not clear anything.
        r.on_data(4, false, true, t(4));
        assert_eq!(r.make_ack().ce_count, Some(2));
        // A classic receiver's flags are the ECE flag alone.
        let mut c = TcpReceiver::new(false, 40_000_000);
        c.on_data(0, true, false, t(0));
        assert_eq!(c.make_ack().flags(), (false, false, true));
    }

    #[test]
    fn limited_transfer_finishes() {
        let mut s = TcpSender::new(CcAlgo::Reno, Some(3), 10, 1000, 200_000_000, false);
        assert_eq!(drain(&mut s, t(0)).len(), 3);
        assert!(!s.finished());
        s.on_ack(3, &[], false, t(1));
        assert!(s.finished());
        assert_eq!(s.rto_at(), None);
    }

    #[test]
    fn rwnd_caps_the_flight() {
        let mut s = TcpSender::new(CcAlgo::Reno, None, 50, 8, 200_000_000, false);
        assert_eq!(drain(&mut s, t(0)).len(), 8);
    }

    #[test]
    fn receiver_sacks_holes_and_fills_them() {
        let mut r = TcpReceiver::new(false, 40_000_000);
        assert_eq!(r.on_data(0, false, false, t(0)), AckNow::Now);
        assert_eq!(r.make_ack().ack, 1);
        r.on_data(2, false, false, t(1));
        r.on_data(3, false, false, t(1));
        r.on_data(6, false, false, t(1));
        let a = r.make_ack();
        assert_eq!(a.ack, 1);
        assert_eq!(a.sack_blocks(), &[(6, 7), (2, 4)]);
        r.on_data(1, false, false, t(2));
        let a = r.make_ack();
        assert_eq!(a.ack, 4);
        assert_eq!(a.sack_blocks(), &[(6, 7)]);
        r.on_data(4, false, false, t(2));
        r.on_data(5, false, false, t(2));
        let a = r.make_ack();
        assert_eq!((a.ack, a.nsacks), (7, 0));
        // A duplicate is acknowledged at once.
        assert_eq!(r.on_data(3, false, false, t(3)), AckNow::Now);
    }

    #[test]
    fn delayed_ack_every_second_segment_or_timeout() {
        let mut r = TcpReceiver::new(true, 40_000_000);
        assert_eq!(r.on_data(0, false, false, t(0)), AckNow::Delayed(t(40)));
        assert_eq!(r.on_data(1, false, false, t(1)), AckNow::Now);
        r.make_ack();
        assert_eq!(r.delack_at(), None);
        assert_eq!(r.on_data(2, false, false, t(5)), AckNow::Delayed(t(45)));
        // CE forces an immediate ACK with ECE until CWR arrives.
        assert_eq!(r.on_data(3, true, false, t(6)), AckNow::Now);
        assert!(r.make_ack().ece);
        r.on_data(4, false, false, t(7));
        assert!(r.make_ack().ece);
        r.on_data(5, false, true, t(8));
        assert!(!r.make_ack().ece);
    }
}
