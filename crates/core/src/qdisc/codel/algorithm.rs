//! The CoDel core shared by fq_codel and the `codel` qdisc (Linux
//! include/net/codel.h and include/net/codel_impl.h; RFC 8289), in the kernel's
//! fixed point: CoDel time is `ns >> 10` in a u32 compared with signed
//! wrap-around differences, `rec_inv_sqrt` is a Q0.16 1/sqrt(count) refined by
//! one Newton step per count increment, and the control law adds
//! `interval * rec_inv_sqrt`. `CodelVars::dequeue` is the kernel's
//! `codel_dequeue` state machine over a queue the caller provides
//! (`CodelQueue`); it drops into `Drops` (reason `Codel`) or ECN-marks.

use crate::packet::{ecn, DropReason, Drops, Packet};
use crate::time::Instant;

/// A time in CoDel units (1024 ns), wrapping.
pub type CodelTime = u32;

/// `CODEL_SHIFT`: CoDel units are ns >> 10.
pub const CODEL_SHIFT: u32 = 10;
/// `CODEL_DISABLED_THRESHOLD`: ce_threshold off.
pub const CODEL_DISABLED_THRESHOLD: CodelTime = i32::MAX as u32;
/// Q0.16 ~1.0, the reset value of `rec_inv_sqrt`.
pub const REC_INV_SQRT_ONE: u16 = 0xFFFF;

/// `codel_get_time()` for a given instant.
pub fn codel_time(now: Instant) -> CodelTime {
    (now.nanos() >> CODEL_SHIFT) as u32
}

/// tc µs → CoDel units (`us * NSEC_PER_USEC >> CODEL_SHIFT`, truncating).
pub fn us_to_codel(us: u64) -> CodelTime {
    ((us * 1000) >> CODEL_SHIFT) as u32
}

/// CoDel units → µs as the kernel dumps them (`codel_time_to_us`).
pub fn codel_to_us(t: CodelTime) -> u64 {
    (t as u64 * 1024) / 1000
}

/// `codel_time_after(a, b)`: (s32)(a - b) > 0.
pub fn after(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// `codel_time_after_eq(a, b)`.
pub fn after_eq(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

/// `codel_time_before(a, b)`.
pub fn before(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// One Newton iteration of y ← y·(3 − count·y²)/2 on the Q0.16 reciprocal
/// square root, exactly as `codel_Newton_step` (64-bit wrapping arithmetic).
pub fn newton_step(count: u32, rec_inv_sqrt: u16) -> u16 {
    let invsqrt = (rec_inv_sqrt as u64) << 16;
    let invsqrt2 = (invsqrt * invsqrt) >> 32;
    let mut val = (3u64 << 32).wrapping_sub((count as u64).wrapping_mul(invsqrt2));
    val >>= 2;
    val = val.wrapping_mul(invsqrt) >> (32 - 2 + 1);
    (val >> 16) as u16
}

/// `codel_control_law`: t + interval / sqrt(count), via `reciprocal_scale`.
pub fn control_law(t: CodelTime, interval: CodelTime, rec_inv_sqrt: u16) -> CodelTime {
    let step = ((interval as u64 * ((rec_inv_sqrt as u64) << 16)) >> 32) as u32;
    t.wrapping_add(step)
}

/// CoDel parameters (`struct codel_params`), times in CoDel units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodelParams {
    /// Acceptable standing queue delay (`codel_params.target`), CoDel units (ns
    /// >> 10); default 5 ms.
    pub target: CodelTime,
    /// Width of the window in which the delay must stay above target before
    /// CoDel drops (`codel_params.interval`), CoDel units; default 100 ms.
    pub interval: CodelTime,
    /// Minimum remaining backlog (bytes) for a drop: psched_mtu.
    pub mtu: u32,
    /// Mark ECT packets with CE instead of dropping them (`codel_params.ecn`).
    pub ecn: bool,
    /// Sojourn above which ECT packets are CE-marked regardless of state.
    pub ce_threshold: CodelTime,
    /// `ce_threshold_selector`: apply ce_threshold only when
    /// `dsfield & mask == value` (mask 0 = all packets).
    pub ce_threshold_selector: u8,
    /// The mask of `ce_threshold_selector` (`TCA_FQ_CODEL_CE_THRESHOLD_MASK`).
    pub ce_threshold_mask: u8,
}

impl CodelParams {
    /// Defaults: target 5 ms, interval 100 ms, no ce_threshold.
    pub fn new(mtu: u32, ecn: bool) -> Self {
        CodelParams {
            target: us_to_codel(5_000),
            interval: us_to_codel(100_000),
            mtu,
            ecn,
            ce_threshold: CODEL_DISABLED_THRESHOLD,
            ce_threshold_selector: 0,
            ce_threshold_mask: 0,
        }
    }
}

/// Per-queue CoDel state (`struct codel_vars`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodelVars {
    /// Packets dropped (or marked) since the current dropping state began
    /// (`codel_vars.count`, include/net/codel.h).
    pub count: u32,
    /// `count` when the previous dropping state ended, to resume near it
    /// (`codel_vars.lastcount`).
    pub lastcount: u32,
    /// In the dropping state (`codel_vars.dropping`).
    pub dropping: bool,
    /// 1/sqrt(count) in Q0.16 fixed point (`codel_vars.rec_inv_sqrt`), updated
    /// by Newton steps (`codel_Newton_step`).
    pub rec_inv_sqrt: u16,
    /// When the sojourn time will have been above target for a whole interval,
    /// CoDel units; 0 while below target (`codel_vars.first_above_time`).
    pub first_above_time: CodelTime,
    /// When the next drop is due in the dropping state, CoDel units
    /// (`codel_vars.drop_next`).
    pub drop_next: CodelTime,
    /// Sojourn of the last packet examined.
    pub ldelay: CodelTime,
}

/// Qdisc-wide CoDel counters (`struct codel_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodelStats {
    /// Largest packet seen at dequeue.
    pub maxpacket: u32,
    /// Packets dropped by the control law (cumulative).
    pub drop_count: u64,
    /// Bytes of the packets the control law dropped (`codel_stats.drop_len`).
    pub drop_len: u64,
    /// Packets CE-marked instead of dropped (`codel_stats.ecn_mark`).
    pub ecn_mark: u64,
    /// Packets CE-marked because their sojourn exceeded `ce_threshold`
    /// (`codel_stats.ce_mark`).
    pub ce_mark: u64,
}

/// The queue CoDel dequeues from.
pub trait CodelQueue {
    /// Removes the head frame and updates the backlog `backlog` reports.
    fn pop_head(&mut self) -> Option<Packet>;
    /// The backlog (bytes) the "more than one MTU left" test reads, after
    /// the pop: the whole qdisc's backlog in fq_codel.
    fn backlog(&self) -> u64;
}

impl CodelVars {
    /// `codel_should_drop` on a packet just removed from the head.
    fn should_drop<Q: CodelQueue>(
        &mut self,
        pkt: Option<&Packet>,
        q: &Q,
        params: &CodelParams,
        stats: &mut CodelStats,
        now: CodelTime,
    ) -> bool {
        let Some(pkt) = pkt else {
            self.first_above_time = 0;
            return false;
        };
        self.ldelay = now.wrapping_sub(codel_time(pkt.meta.enqueue_time));
        stats.maxpacket = stats.maxpacket.max(pkt.len);
        if before(self.ldelay, params.target) || q.backlog() <= params.mtu as u64 {
            self.first_above_time = 0;
            return false;
        }
        if self.first_above_time == 0 {
            self.first_above_time = now.wrapping_add(params.interval);
            false
        } else {
            after(now, self.first_above_time)
        }
    }

    /// The kernel's `codel_dequeue`: pops from `q`, drops (into `drops`,
    /// reason `Codel`, counted in `stats.drop_count`) or ECN-marks per the
    /// control law, and returns the packet to send, if any.
    #[inline]
    pub fn dequeue<Q: CodelQueue>(
        &mut self,
        q: &mut Q,
        params: &CodelParams,
        stats: &mut CodelStats,
        now: Instant,
        drops: &mut Drops,
    ) -> Option<Packet> {
        let Some(first) = q.pop_head() else {
            self.dropping = false;
            return None;
        };
        let now = codel_time(now);
        let mut pkt = Some(first);
        let drop = self.should_drop(pkt.as_ref(), q, params, stats, now);
        if self.dropping {
            if !drop {
                self.dropping = false;
            } else if after_eq(now, self.drop_next) {
                while self.dropping && after_eq(now, self.drop_next) {
                    self.count = self.count.wrapping_add(1);
                    self.rec_inv_sqrt = newton_step(self.count, self.rec_inv_sqrt);
                    let Some(mut p) = pkt.take() else { break };
                    if params.ecn && ecn::mark_ce(&mut p) {
                        stats.ecn_mark += 1;
                        self.drop_next =
                            control_law(self.drop_next, params.interval, self.rec_inv_sqrt);
                        pkt = Some(p);
                        break;
                    }
                    Self::drop_packet(p, stats, drops);
                    pkt = q.pop_head();
                    if !self.should_drop(pkt.as_ref(), q, params, stats, now) {
                        self.dropping = false;
                    } else {
                        self.drop_next =
                            control_law(self.drop_next, params.interval, self.rec_inv_sqrt);
                    }
                }
            }
        } else if drop {
            let mut p = pkt.take().expect("drop implies a packet");
            if params.ecn && ecn::mark_ce(&mut p) {
                stats.ecn_mark += 1;
                pkt = Some(p);
            } else {
                Self::drop_packet(p, stats, drops);
                pkt = q.pop_head();
                self.should_drop(pkt.as_ref(), q, params, stats, now);
            }
            self.dropping = true;
            let delta = self.count.wrapping_sub(self.lastcount);
            if delta > 1
                && before(
                    now.wrapping_sub(self.drop_next),
                    params.interval.wrapping_mul(16),
                )
            {
                self.count = delta;
                self.rec_inv_sqrt = newton_step(self.count, self.rec_inv_sqrt);
            } else {
                self.count = 1;
                self.rec_inv_sqrt = REC_INV_SQRT_ONE;
            }
            self.lastcount = self.count;
            self.drop_next = control_law(now, params.interval, self.rec_inv_sqrt);
        }
        if let Some(p) = pkt.as_mut() {
            if after(self.ldelay, params.ce_threshold)
                && p.meta.dsfield & params.ce_threshold_mask == params.ce_threshold_selector
                && ecn::mark_ce(p)
            {
                stats.ce_mark += 1;
            }
        }
        pkt
    }

    fn drop_packet(p: Packet, stats: &mut CodelStats, drops: &mut Drops) {
        stats.drop_count += 1;
        stats.drop_len += p.len as u64;
        drops.push(p, DropReason::Codel);
    }

    /// `drop_next` relative to `now` in µs, as the dumps print it (0 when not
    /// dropping).
    pub fn drop_next_us(&self, now: Instant) -> i64 {
        if !self.dropping {
            return 0;
        }
        let delta = self.drop_next.wrapping_sub(codel_time(now)) as i32;
        if delta >= 0 {
            codel_to_us(delta as u32) as i64
        } else {
            -(codel_to_us(delta.unsigned_abs()) as i64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::pkt;
    use crate::time::NS_PER_MS;
    use crate::units::sprint_time;
    use std::collections::VecDeque;

    /// A FIFO whose backlog is its own byte count plus `extra` (other flows).
    struct TestQueue {
        q: VecDeque<Packet>,
        backlog: u64,
        extra: u64,
    }

    impl TestQueue {
        fn new() -> Self {
            TestQueue {
                q: VecDeque::new(),
                backlog: 0,
                extra: 0,
            }
        }
        fn push(&mut self, mut p: Packet, enq: Instant) {
            p.meta.enqueue_time = enq;
            self.backlog += p.len as u64;
            self.q.push_back(p);
        }
    }

    impl CodelQueue for TestQueue {
        fn pop_head(&mut self) -> Option<Packet> {
            let p = self.q.pop_front()?;
            self.backlog -= p.len as u64;
            Some(p)
        }
        fn backlog(&self) -> u64 {
            self.backlog + self.extra
        }
    }

    /// A base that is a whole number of CoDel-time wraps (2^32 units of
    /// 1024 ns), so codel_time(ms(t)) == codel_time of t ms from 0.
    const BASE: u64 = 1 << 42;

    fn ms(t: u64) -> Instant {
        Instant::from_nanos(BASE + t * NS_PER_MS)
    }

    fn ago(now: Instant, d_ms: u64) -> Instant {
        Instant::from_nanos(now.nanos() - d_ms * NS_PER_MS)
    }

    #[test]
    fn c1_constants() {
        assert_eq!(us_to_codel(5_000), 4882);
        assert_eq!(us_to_codel(100_000), 97656);
        assert_eq!(codel_to_us(4882), 4999);
        assert_eq!(codel_to_us(97656), 99999);
        assert_eq!(sprint_time(codel_to_us(4882)), "5ms");
        assert_eq!(sprint_time(codel_to_us(97656)), "100ms");
        assert_eq!(control_law(0, 97656, REC_INV_SQRT_ONE), 97654);
        assert_eq!(control_law(u32::MAX, 97656, REC_INV_SQRT_ONE), 97653);
    }

    #[test]
    fn c2_newton_sequence() {
        let expected: [(u32, u16, f64); 11] = [
            (1, 0xffff, 99.998),
            (2, 0x8001, 50.001),
            (3, 0x9000, 56.249),
            (4, 0x7ce0, 48.778),
            (5, 0x7107, 44.151),
            (6, 0x6771, 40.406),
            (7, 0x600c, 37.517),
            (8, 0x59fd, 35.151),
            (10, 0x50a7, 31.504),
            (16, 0x3fe8, 24.963),
            (20, 0x3930, 22.339),
        ];
        let mut y = REC_INV_SQRT_ONE;
        let mut seen = std::collections::HashMap::new();
        seen.insert(1u32, y);
        for count in 2..=20 {
            y = newton_step(count, y);
            seen.insert(count, y);
        }
        for (count, rec, gap_ms) in expected {
            assert_eq!(seen[&count], rec, "count {count}");
            let gap_units = control_law(0, 97656, rec);
            let gap = gap_units as f64 * 1024.0 / 1e6;
            assert!(
                (gap - gap_ms).abs() < 0.0015,
                "count {count}: {gap} vs {gap_ms}"
            );
        }
    }

    #[test]
    fn signed_wrap_compares() {
        assert!(after(5, u32::MAX - 5));
        assert!(before(u32::MAX - 5, 5));
        assert!(after_eq(7, 7));
        assert!(!after(7, 7));
    }

    /// Constant 10 ms sojourn, a dequeue every 1 ms from t = 0: the drop
    /// times follow from include/net/codel_impl.h `codel_dequeue` (first drop
    /// strictly after one interval above target) and `codel_control_law`
    /// with the one-step `codel_Newton_step` 1/sqrt(count).
    #[test]
    fn c3_drop_times() {
        let params = CodelParams::new(1514, false);
        let mut v = CodelVars::default();
        let mut st = CodelStats::default();
        let mut q = TestQueue::new();
        let mut drops = Drops::new();
        let mut drop_times = Vec::new();
        let mut next_id = 0;
        for t in 0..=800u64 {
            let now = ms(t);
            // Keep the queue such that every packet popped at `now` has a
            // sojourn of exactly 10 ms: refill with packets enqueued at now-10.
            q.q.clear();
            q.backlog = 0;
            for _ in 0..4 {
                q.push(pkt(next_id, 1514), ago(now, 10));
                next_id += 1;
            }
            let before_len = drops.len();
            let out = v.dequeue(&mut q, &params, &mut st, now, &mut drops);
            assert!(out.is_some());
            for _ in before_len..drops.len() {
                drop_times.push(t);
            }
        }
        let expected = [
            101, 201, 251, 308, 357, 401, 441, 479, 514, 547, 578, 608, 637, 665, 692, 717, 742,
            767, 790,
        ];
        assert_eq!(drop_times, expected);
        assert_eq!(st.drop_count, 19);
        assert!(drops.since(0).iter().all(|(_, r)| *r == DropReason::Codel));
        assert_eq!(v.count, 19);
        assert!(v.dropping);
    }

    fn run_single(sojourn_ns: u64, behind: u32, until_ms: u64) -> CodelStats {
        let params = CodelParams::new(1514, false);
        let mut v = CodelVars::default();
        let mut st = CodelStats::default();
        let mut q = TestQueue::new();
        let mut drops = Drops::new();
        for t in 0..until_ms {
            let now = ms(t);
            q.q.clear();
            q.backlog = 0;
            for i in 0..=behind {
                q.push(
                    pkt(i as u64, 1514),
                    Instant::from_nanos(now.nanos() - sojourn_ns),
                );
            }
            v.dequeue(&mut q, &params, &mut st, now, &mut drops);
        }
        st
    }

    #[test]
    fn c6_target_boundary() {
        // 4882 units exactly = target: counts as above.
        assert!(run_single(4882 * 1024, 4, 300).drop_count > 0);
        // One unit less: never drops.
        assert_eq!(run_single(4881 * 1024, 4, 300).drop_count, 0);
    }

    #[test]
    fn c6_mtu_boundary() {
        // One 1514 B packet behind the head: remaining backlog 1514 <= mtu.
        assert_eq!(run_single(50 * NS_PER_MS, 1, 500).drop_count, 0);
        // Two behind: 3028 > 1514, normal rules.
        assert!(run_single(50 * NS_PER_MS, 2, 500).drop_count > 0);
    }

    #[test]
    fn c6_qdisc_wide_backlog_counts() {
        // A queue with a single old packet drops when "other flows" hold
        // more than one MTU.
        let params = CodelParams::new(1514, false);
        let mut v = CodelVars::default();
        let mut st = CodelStats::default();
        let mut q = TestQueue::new();
        q.extra = 3000;
        let mut drops = Drops::new();
        for t in 0..300u64 {
            let now = ms(t);
            q.push(pkt(t, 1514), ago(ms(t), 20));
            v.dequeue(&mut q, &params, &mut st, now, &mut drops);
        }
        assert!(st.drop_count > 0);
    }

    #[test]
    fn reentry_resumes_count() {
        let params = CodelParams::new(1514, false);
        let mut v = CodelVars::default();
        let mut st = CodelStats::default();
        let mut q = TestQueue::new();
        let mut drops = Drops::new();
        let mut run = |v: &mut CodelVars, from: u64, to: u64, sojourn: u64, st: &mut CodelStats| {
            for t in from..to {
                let now = ms(t);
                q.q.clear();
                q.backlog = 0;
                for i in 0..4 {
                    q.push(pkt(i, 1514), ago(ms(t), sojourn));
                }
                v.dequeue(&mut q, &params, st, now, &mut drops);
            }
        };
        // Episode 1: up to count 8 (drop at 514 ms is the 9th; stop before).
        run(&mut v, 0, 500, 10, &mut st);
        assert_eq!(v.count, 8);
        assert_eq!(v.lastcount, 1);
        // Sojourn drops below target: leave dropping, count kept.
        run(&mut v, 500, 510, 1, &mut st);
        assert!(!v.dropping);
        assert_eq!(v.count, 8);
        // Back above target soon: after one interval above, re-enter with
        // count = 8 - 1 = 7 and one Newton step from the old rec_inv_sqrt.
        run(&mut v, 510, 650, 10, &mut st);
        assert!(v.dropping);
        assert_eq!(v.lastcount, 7);
        assert!(v.count >= 7);
        assert_ne!(v.rec_inv_sqrt, REC_INV_SQRT_ONE);

        // A long pause (> 16 intervals) resets to count 1.
        let mut v2 = v;
        run(&mut v2, 650, 660, 1, &mut st);
        assert!(!v2.dropping);
        run(&mut v2, 3000, 3150, 10, &mut st);
        assert!(v2.dropping);
        assert_eq!(v2.lastcount, 1);
    }

    #[test]
    fn reentry_exact_first_step() {
        // Check re-entry arithmetic in isolation.
        let params = CodelParams::new(1514, false);
        let mut v = CodelVars {
            count: 9,
            lastcount: 2,
            dropping: false,
            rec_inv_sqrt: 0x59fd,
            first_above_time: codel_time(ms(100)),
            drop_next: codel_time(ms(90)),
            ldelay: 0,
        };
        let mut st = CodelStats::default();
        let mut q = TestQueue::new();
        for i in 0..4 {
            q.push(pkt(i, 1514), ms(150));
        }
        let mut drops = Drops::new();
        v.dequeue(&mut q, &params, &mut st, ms(200), &mut drops);
        assert!(v.dropping);
        assert_eq!(v.count, 7);
        assert_eq!(v.lastcount, 7);
        assert_eq!(v.rec_inv_sqrt, newton_step(7, 0x59fd));
        assert_eq!(
            v.drop_next,
            control_law(codel_time(ms(200)), params.interval, v.rec_inv_sqrt)
        );
        assert_eq!(drops.len(), 1);
    }

    fn ect_pkt(id: u64, ecn_bits: u8) -> Packet {
        // A minimal IPv4 header after a 14-byte Ethernet header.
        let mut data = vec![0u8; 14 + 20];
        data[14] = 0x45;
        data[15] = ecn_bits;
        let mut p = pkt(id, 1514);
        p.data = data;
        p.meta.l3 = crate::packet::L3::Ipv4 { offset: 14 };
        p.meta.dsfield = ecn_bits;
        p
    }

    #[test]
    fn ecn_marks_instead_of_dropping_one_per_dequeue() {
        let params = CodelParams::new(1514, true);
        let mut v = CodelVars::default();
        let mut st = CodelStats::default();
        let mut q = TestQueue::new();
        let mut drops = Drops::new();
        let mut marked = 0;
        for t in 0..800u64 {
            q.q.clear();
            q.backlog = 0;
            for i in 0..4 {
                q.push(ect_pkt(i, 2), ago(ms(t), 10));
            }
            let out = v
                .dequeue(&mut q, &params, &mut st, ms(t), &mut drops)
                .unwrap();
            if out.meta.ecn() == 3 {
                marked += 1;
                // Marking delivers the head packet itself.
                assert_eq!(out.meta.id, 0);
            }
        }
        assert_eq!(drops.len(), 0);
        assert_eq!(st.ecn_mark, 19);
        assert_eq!(marked, 19);
        assert_eq!(v.count, 19);
    }

    #[test]
    fn ecn_catch_up_marks_only_once() {
        // Far past drop_next: the kernel marks one packet and advances
        // drop_next by one control-law step only.
        let params = CodelParams::new(1514, true);
        let mut v = CodelVars {
            count: 1,
            lastcount: 1,
            dropping: true,
            rec_inv_sqrt: REC_INV_SQRT_ONE,
            first_above_time: codel_time(ms(1)),
            drop_next: codel_time(ms(10)),
            ldelay: 0,
        };
        let mut st = CodelStats::default();
        let mut q = TestQueue::new();
        for i in 0..5 {
            q.push(ect_pkt(i, 1), ms(100));
        }
        let mut drops = Drops::new();
        let out = v
            .dequeue(&mut q, &params, &mut st, ms(500), &mut drops)
            .unwrap();
        assert_eq!(out.meta.ecn(), 3);
        assert_eq!(st.ecn_mark, 1);
        assert_eq!(v.count, 2);
        assert_eq!(q.q.len(), 4);
        // Not-ECT: the same catch-up drops in a loop.
        let mut v2 = CodelVars {
            drop_next: codel_time(ms(10)),
            ..v
        };
        let mut q2 = TestQueue::new();
        for i in 0..6 {
            q2.push(pkt(i, 1514), ms(100));
        }
        let p2 = CodelParams::new(1514, false);
        v2.dequeue(&mut q2, &p2, &mut st, ms(500), &mut drops);
        assert!(drops.len() > 1);
    }

    #[test]
    fn ce_threshold_marks_ect_above_threshold() {
        let mut params = CodelParams::new(1514, true);
        params.ce_threshold = us_to_codel(1_000);
        let mut v = CodelVars::default();
        let mut st = CodelStats::default();
        let mut q = TestQueue::new();
        let mut drops = Drops::new();
        q.push(ect_pkt(1, 2), ms(0));
        q.push(ect_pkt(2, 2), ms(9));
        q.push(pkt(3, 100), ms(0));
        let a = v
            .dequeue(&mut q, &params, &mut st, ms(2), &mut drops)
            .unwrap();
        assert_eq!(a.meta.ecn(), 3);
        let b = v
            .dequeue(&mut q, &params, &mut st, ms(9), &mut drops)
            .unwrap();
        assert_eq!(b.meta.ecn(), 2, "sojourn 0 < threshold");
        let c = v
            .dequeue(&mut q, &params, &mut st, ms(9), &mut drops)
            .unwrap();
        assert_eq!(c.meta.id, 3, "Not-ECT cannot be marked");
        assert_eq!(st.ce_mark, 1);
        // Selector: only packets whose dsfield & mask == value.
        params.ce_threshold_selector = 0x01;
        params.ce_threshold_mask = 0x03;
        q.push(ect_pkt(4, 2), ms(0));
        q.push(ect_pkt(5, 1), ms(0));
        let d = v
            .dequeue(&mut q, &params, &mut st, ms(3), &mut drops)
            .unwrap();
        assert_eq!(d.meta.ecn(), 2);
        let e = v
            .dequeue(&mut q, &params, &mut st, ms(3), &mut drops)
            .unwrap();
        assert_eq!(e.meta.ecn(), 3);
    }

    #[test]
    fn empty_queue_leaves_dropping() {
        let params = CodelParams::new(1514, false);
        let mut v = CodelVars {
            dropping: true,
            ..CodelVars::default()
        };
        let mut q = TestQueue::new();
        let mut st = CodelStats::default();
        assert!(v
            .dequeue(&mut q, &params, &mut st, ms(1), &mut Drops::new())
            .is_none());
        assert!(!v.dropping);
    }

    #[test]
    fn time_wraps_without_panic() {
        // CoDel time wraps every ~73 minutes; around the wrap the schedule
        // still works.
        let params = CodelParams::new(1514, false);
        let wrap_ns = (1u64 << 42) - 50 * NS_PER_MS;
        let mut v = CodelVars::default();
        let mut st = CodelStats::default();
        let mut q = TestQueue::new();
        let mut drops = Drops::new();
        for t in 0..300u64 {
            let now = Instant::from_nanos(wrap_ns + t * NS_PER_MS);
            q.q.clear();
            q.backlog = 0;
            for i in 0..4 {
                q.push(
                    pkt(i, 1514),
                    Instant::from_nanos(now.nanos() - 10 * NS_PER_MS),
                );
            }
            v.dequeue(&mut q, &params, &mut st, now, &mut drops);
        }
        assert_eq!(st.drop_count, 3, "drops at +101, +201, +251 ms");
    }
}
