//! PIE's unit tests at explicit times, with values worked out by hand from
//! net/sched/sch_pie.c's formulas: the gains' auto-tuning by probability
//! range, the probability after an update (integral and proportional
//! terms, the 2% cap, the 250 ms boost, the decay at zero delay), the burst
//! allowance spent by dequeues, the de-randomized early drop and bytemode,
//! the drain-rate estimate, the ECN threshold, the limit, the timer's
//! schedule and the dumped options.

use super::algorithm::*;
use super::*;
use crate::packet::ecn::{ECN_CE, ECN_ECT0};
use crate::qdisc::testutil::{ect_pkt, pkt};
use crate::time::NS_PER_MS;

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

fn pie(o: PieOptions) -> Pie {
    Pie::build(QdiscCtx::default(), &QdiscOptions::Pie(o)).unwrap()
}

fn xstats(q: &Pie, now: Instant) -> PieXstats {
    match q.dump(now).xstats {
        Some(Xstats::Pie(x)) => x,
        other => panic!("{other:?}"),
    }
}

/// One tick of tc's default target: 15 ms = 15 000 000 ns >> 6.
const TARGET: u64 = 234_375;
/// MAX_PROB / PSCHED_TICKS_PER_SEC = (2^56 - 1) / 15 625 000.
const UNIT: u64 = 4_611_686_018;

#[test]
fn gains_are_scaled_down_by_probability_range() {
    let p = PieParams::default();
    // alpha 2, beta 20 in 1/16: (2 × UNIT) >> 4, (20 × UNIT) >> 4.
    let (a, b) = ((2 * UNIT) >> 4, (20 * UNIT) >> 4);
    assert_eq!((a, b), (576_460_752, 5_764_607_522));
    // 10% and above: as given.
    assert_eq!(scaled_gains(&p, MAX_PROB / 10), (a, b));
    assert_eq!(scaled_gains(&p, MAX_PROB), (a, b));
    // 1% to 10%: halved.
    assert_eq!(scaled_gains(&p, MAX_PROB / 20), (a >> 1, b >> 1));
    // 0.1% to 1%: halved, then quartered once.
    assert_eq!(scaled_gains(&p, MAX_PROB / 200), (a >> 3, b >> 3));
    // 0.01% to 0.1%: twice.
    assert_eq!(scaled_gains(&p, MAX_PROB / 2000), (a >> 5, b >> 5));
    // Below 0.0001%, the loop stops at power 10^7: five quarterings.
    assert_eq!(scaled_gains(&p, 0), (a >> 11, b >> 11));
    assert_eq!(scaled_gains(&p, 0), (281_474, 2_814_749));
}

#[test]
fn first_update_from_zero_adds_both_terms_with_the_smallest_gains() {
    let p = PieParams::default();
    let mut v = PieVars {
        qdelay: 2 * TARGET, // 30 ms
        ..PieVars::default()
    };
    calculate_probability(&p, &mut v, 30_000);
    // alpha (30 - 15 ms) + beta (30 - 0 ms), in ticks, gains at prob 0.
    let expect = 281_474 * TARGET + 2_814_749 * 2 * TARGET;
    assert_eq!(v.prob, expect);
    assert_eq!(v.prob, 1_385_384_062_500);
    assert_eq!(
        (v.qdelay, v.qdelay_old, v.backlog_old),
        (2 * TARGET, 2 * TARGET, 30_000)
    );
    // A second update at the same delay: only the integral term, with
    // the gains for a probability of 0.0019%: below MAX_PROB / 10^4
    // (7.2e12), not below MAX_PROB / 10^5 (7.2e11): three quarterings.
    let (a, _) = scaled_gains(&p, v.prob);
    assert_eq!(a, (2 * UNIT) >> 4 >> 1 >> 6);
    assert_eq!(a, 4_503_599);
    calculate_probability(&p, &mut v, 30_000);
    assert_eq!(v.prob, expect + a * TARGET);
}

#[test]
fn steps_above_ten_percent_are_capped_at_two_percent_and_delays_over_250ms_add_two() {
    let p = PieParams::default();
    let mut v = PieVars {
        prob: MAX_PROB / 5,
        qdelay: ns_to_ticks(100 * NS_PER_MS),
        ..PieVars::default()
    };
    calculate_probability(&p, &mut v, 100_000);
    assert_eq!(v.prob, MAX_PROB / 5 + (MAX_PROB / 100) * 2);
    let mut v = PieVars {
        prob: MAX_PROB / 5,
        qdelay: ns_to_ticks(300 * NS_PER_MS),
        qdelay_old: ns_to_ticks(300 * NS_PER_MS),
        ..PieVars::default()
    };
    calculate_probability(&p, &mut v, 100_000);
    assert_eq!(
        v.prob,
        MAX_PROB / 5 + (MAX_PROB / 100) * 2 + MAX_PROB / 50,
        "capped integral step plus the 250 ms boost"
    );
    // Near the top the sum wraps: the kernel pins it at MAX_PROB.
    let mut v = PieVars {
        prob: u64::MAX - 10,
        qdelay: ns_to_ticks(300 * NS_PER_MS),
        qdelay_old: ns_to_ticks(300 * NS_PER_MS),
        ..PieVars::default()
    };
    calculate_probability(&p, &mut v, 100_000);
    assert_eq!(v.prob, MAX_PROB);
}

#[test]
fn zero_delay_twice_decays_the_probability_to_63_64ths() {
    let p = PieParams::default();
    let start = MAX_PROB / 2;
    let mut v = PieVars {
        prob: start,
        burst_time: 0,
        ..PieVars::default()
    };
    calculate_probability(&p, &mut v, 0);
    // delta = alpha × (0 - target) with the full gains, then × 63/64.
    let after_delta = start - 576_460_752 * TARGET;
    assert_eq!(v.prob, after_delta - after_delta / 64);
    // Not restarted (the probability is not 0): the allowance stays spent.
    assert_eq!(v.burst_time, 0);
    // A small queue whose delay reads 0 does not decay.
    let mut w = PieVars {
        prob: start,
        ..PieVars::default()
    };
    calculate_probability(&p, &mut w, 100);
    assert_eq!(w.prob, after_delta);
}

#[test]
fn low_delay_with_zero_probability_restarts_the_burst_allowance() {
    let p = PieParams::default();
    let mut v = PieVars {
        burst_time: 0,
        dq_tstamp: 5,
        ..PieVars::default()
    };
    calculate_probability(&p, &mut v, 0);
    assert_eq!(v.prob, 0);
    assert_eq!(v.burst_time, ns_to_ticks(150 * NS_PER_MS));
    assert_eq!(v.dq_tstamp, DTIME_INVALID);
}

#[test]
fn the_burst_allowance_is_spent_by_the_time_between_dequeues() {
    let mut q = pie(PieOptions::default());
    let mut d = Drops::new();
    for id in 0..200 {
        assert_eq!(q.enqueue(pkt(id, 1000), ms(0), &mut d), Verdict::Queued);
    }
    // The first dequeue only stamps; each later one 1 ms apart spends
    // 15 625 ticks of the 2 343 750 (150 ms).
    for t in 1..=150 {
        q.dequeue(ms(t), &mut d).unwrap();
    }
    assert_eq!(q.vars.burst_time, 2_343_750 - 149 * 15_625);
    assert_eq!(q.vars.burst_time, 15_625);
    q.dequeue(ms(151), &mut d).unwrap();
    assert_eq!(q.vars.burst_time, 0);
    q.dequeue(ms(152), &mut d).unwrap();
    assert_eq!(q.vars.burst_time, 0);
    // The delay is the last frame's sojourn: 152 ms.
    assert_eq!(q.vars.qdelay, ns_to_ticks(152 * NS_PER_MS));
}

#[test]
fn early_drop_accumulates_probability_before_asking_chance() {
    let p = PieParams::default();
    let mut v = PieVars {
        prob: MAX_PROB / 2,
        burst_time: 0,
        qdelay: TARGET,
        ..PieVars::default()
    };
    let never = || -> u64 { panic!("no draw below 85%") };
    // 50%: below 85% accumulated, no drop, no draw.
    assert!(!drop_early(&p, &mut v, 10_000, 1000, 1514, never));
    assert_eq!(v.accu_prob, MAX_PROB / 2);
    // 100%: the draw decides; a draw of 0 drops and clears the sum.
    assert!(drop_early(&p, &mut v, 10_000, 1000, 1514, || 0));
    assert_eq!(v.accu_prob, 0);
    // A draw of all ones keeps it.
    v.accu_prob = MAX_PROB / 2;
    assert!(!drop_early(&p, &mut v, 10_000, 1000, 1514, || u64::MAX));
    assert_eq!(v.accu_prob, 2 * (MAX_PROB / 2));
    // 8.5 and more: dropped without a draw.
    v.accu_prob = (MAX_PROB / 2) * 16;
    assert!(drop_early(&p, &mut v, 10_000, 1000, 1514, never));
    // Fewer than two MTUs queued, or burst allowance left, or low delay
    // and probability: never.
    assert!(!drop_early(&p, &mut v, 3027, 1000, 1514, never));
    v.burst_time = 1;
    assert!(!drop_early(&p, &mut v, 10_000, 1000, 1514, never));
    let mut low = PieVars {
        prob: MAX_PROB / 5 - 1,
        burst_time: 0,
        qdelay: TARGET / 2 - 1,
        ..PieVars::default()
    };
    assert!(!drop_early(&p, &mut low, 10_000, 1000, 1514, never));
}

#[test]
fn bytemode_scales_the_probability_by_the_frame_size() {
    let p = PieParams {
        bytemode: true,
        ..PieParams::default()
    };
    let mut v = PieVars {
        prob: MAX_PROB / 2,
        burst_time: 0,
        qdelay: TARGET,
        ..PieVars::default()
    };
    assert!(!drop_early(&p, &mut v, 10_000, 757, 1514, || 0));
    assert_eq!(v.accu_prob, 757 * ((MAX_PROB / 2) / 1514));
    // Above the MTU the probability is the frame's whole.
    v.accu_prob = 0;
    assert!(!drop_early(&p, &mut v, 10_000, 9000, 1514, || 0));
    assert_eq!(v.accu_prob, MAX_PROB / 2);
}

#[test]
fn the_drain_rate_is_measured_over_16k_and_dumped_in_bytes_per_second() {
    let mut q = pie(PieOptions {
        dq_rate_estimator: Some(true),
        ..PieOptions::default()
    });
    let mut d = Drops::new();
    for id in 0..40 {
        q.enqueue(pkt(id, 1000), ms(0), &mut d);
    }
    // At 1 ms 39 000 bytes are left: the cycle starts (stamp 1 ms, 1000
    // counted); the 17th dequeue (17 ms) reaches 17 000 bytes in 16 ms:
    // (17 000 << 8) / 250 000 ticks = 17.
    for t in 1..=16 {
        q.dequeue(ms(t), &mut d).unwrap();
        assert_eq!(q.vars.avg_dq_rate, 0);
    }
    q.dequeue(ms(17), &mut d).unwrap();
    assert_eq!(q.vars.avg_dq_rate, 17);
    assert_eq!(q.vars.dq_count, 0, "23 000 bytes left: a new cycle");
    // 17 × 15 625 000 >> 8 bytes/s.
    let x = xstats(&q, ms(17));
    assert!(x.dq_rate_estimating);
    assert_eq!(x.avg_dq_rate, 1_037_597);
    // The burst allowance was spent by the cycle's 16 ms only.
    assert_eq!(q.vars.burst_time, 2_343_750 - 16 * 15_625);
    // A second cycle of 17 000 bytes in 17 ms: 17 000 << 8 / 265 625 = 16,
    // averaged in by 1/8: (17 - 2) + 2 = 17.
    for t in 18..=34 {
        q.dequeue(ms(t), &mut d).unwrap();
    }
    assert_eq!(q.vars.avg_dq_rate, (17 - (17 >> 3)) + (16 >> 3));
}

#[test]
fn ecn_marks_up_to_ten_percent_and_drops_above() {
    let mut q = pie(PieOptions {
        ecn: Some(true),
        ..PieOptions::default()
    });
    let mut d = Drops::new();
    for id in 0..4 {
        q.enqueue(ect_pkt(id, 1000, ECN_ECT0), ms(0), &mut d);
    }
    q.vars.burst_time = 0;
    q.vars.qdelay = TARGET;
    q.vars.prob = MAX_PROB / 10;
    q.vars.accu_prob = (MAX_PROB / 2) * 17;
    assert_eq!(
        q.enqueue(ect_pkt(10, 1000, ECN_ECT0), ms(1), &mut d),
        Verdict::Queued
    );
    assert_eq!(q.pstats.ecn_mark, 1);
    assert_eq!(q.queue.back().unwrap().meta.dsfield & 3, ECN_CE);
    // Above 10%: dropped though ECN-capable, reason pie_early.
    q.vars.prob = MAX_PROB / 10 + 1;
    q.vars.accu_prob = (MAX_PROB / 2) * 17;
    assert_eq!(
        q.enqueue(ect_pkt(11, 1000, ECN_ECT0), ms(1), &mut d),
        Verdict::Dropped
    );
    assert_eq!(d.since(0).last().unwrap().1, DropReason::PieEarly);
    assert_eq!(q.vars.accu_prob, 0);
    // Not ECN-capable: dropped at 10% too.
    q.vars.prob = MAX_PROB / 10;
    q.vars.accu_prob = (MAX_PROB / 2) * 17;
    assert_eq!(q.enqueue(pkt(12, 1000), ms(1), &mut d), Verdict::Dropped);
    let x = xstats(&q, ms(1));
    assert_eq!((x.ecn_mark, x.dropped, x.packets_in), (1, 2, 5));
    assert_eq!(q.stats().drops, 2);
}

#[test]
fn the_limit_drops_arrivals_and_a_lowered_limit_drops_from_the_head() {
    let mut q = pie(PieOptions {
        limit: Some(3),
        ..PieOptions::default()
    });
    let mut d = Drops::new();
    for id in 0..5 {
        q.enqueue(pkt(id, 100), ms(0), &mut d);
    }
    assert_eq!(q.qlen(), 3);
    let x = xstats(&q, ms(0));
    assert_eq!((x.overlimit, x.dropped, x.maxq, x.packets_in), (2, 2, 2, 3));
    assert!(d
        .since(0)
        .iter()
        .all(|(_, r)| *r == DropReason::PieOverlimit));
    let change = QdiscOptions::Pie(PieOptions {
        limit: Some(1),
        ..PieOptions::default()
    });
    q.change(&change, ms(1), &mut d).unwrap();
    assert_eq!(q.qlen(), 1);
    assert_eq!(q.dequeue(ms(2), &mut d).unwrap().meta.id, 2);
}

#[test]
fn the_timer_runs_at_half_a_second_then_every_tupdate() {
    let mut q = pie(PieOptions::default());
    let mut d = Drops::new();
    for id in 0..100 {
        q.enqueue(pkt(id, 1000), ms(0), &mut d);
    }
    q.dequeue(ms(40), &mut d).unwrap();
    let (v0, params) = (q.vars, q.params);
    assert_eq!(v0.qdelay, ns_to_ticks(40 * NS_PER_MS));
    let prob_after = |runs: usize| {
        let mut v = v0;
        for _ in 0..runs {
            calculate_probability(&params, &mut v, 99_000);
        }
        v.prob << 8
    };
    assert_eq!(xstats(&q, ms(499)).prob, 0);
    assert_eq!(xstats(&q, ms(500)).prob, prob_after(1));
    // tupdate 15 ms is 4 jiffies of 4 ms (HZ 250): every 16 ms.
    assert_eq!(xstats(&q, ms(515)).prob, prob_after(1));
    assert_eq!(xstats(&q, ms(516)).prob, prob_after(2));
    // Runs at 500, 516, ..., 996 ms: 32.
    assert_eq!(xstats(&q, ms(1000)).prob, prob_after(32));
    assert!(prob_after(2) > prob_after(1));
    // A tupdate of 20 ms (20 jiffies) spaces the later runs.
    let o = QdiscOptions::Pie(PieOptions {
        tupdate: Some(20_000),
        ..PieOptions::default()
    });
    q.change(&o, ms(100), &mut d).unwrap();
    assert_eq!(xstats(&q, ms(519)).prob, prob_after(1));
    assert_eq!(xstats(&q, ms(520)).prob, prob_after(2));
    assert_eq!(xstats(&q, ms(539)).prob, prob_after(2));
    assert_eq!(xstats(&q, ms(540)).prob, prob_after(3));
}

#[test]
fn an_idle_qdisc_settles_and_the_catch_up_skips_the_idle_runs() {
    let mut q = pie(PieOptions::default());
    let mut d = Drops::new();
    q.vars.prob = MAX_PROB / 3;
    // A day idle: the probability decays to 0 and the variables settle;
    // the catch-up stops running once a run changes nothing.
    let day = Instant::from_millis(86_400_000);
    q.enqueue(pkt(0, 100), day, &mut d);
    assert_eq!(q.vars.prob, 0);
    assert_eq!(q.vars.burst_time, ns_to_ticks(150 * NS_PER_MS));
    // The phase is kept: 500 ms + k × 16 ms.
    let next = q.timer.next.unwrap();
    assert_eq!((next.nanos() - 500 * NS_PER_MS) % (16 * NS_PER_MS), 0);
    assert!(next > day && next <= day + 16 * NS_PER_MS);
}

#[test]
fn options_dump_as_the_kernel_converts_them() {
    let q = pie(PieOptions::default());
    assert_eq!(
        q.dump(ms(0)).options,
        QdiscOptions::Pie(PieOptions {
            target: Some(15_000),
            limit: Some(1000),
            tupdate: Some(16_000),
            alpha: Some(2),
            beta: Some(20),
            ecn: Some(false),
            bytemode: Some(false),
            dq_rate_estimator: Some(false),
        })
    );
    // 5 µs is 78 ticks, dumped as 4992 ns = 4 µs; a tupdate of 1 µs is a
    // jiffy, dumped as 4000 µs; 15 ms is 4 jiffies, dumped as 16 ms.
    let q = pie(PieOptions {
        target: Some(5),
        tupdate: Some(1),
        ..PieOptions::default()
    });
    let QdiscOptions::Pie(o) = q.dump(ms(0)).options else {
        panic!()
    };
    assert_eq!((o.target, o.tupdate), (Some(4), Some(4000)));
    assert_eq!(us_to_ticks(5), 78);
    assert_eq!(jiffies_to_usecs(usecs_to_jiffies(u32::MAX)), 704);
}
