use super::*;

const SEC: u64 = 1_000_000_000;

fn at(ns: u64) -> Instant {
    Instant::from_nanos(ns)
}

/// `est 1sec 4sec`: tc's `tc_setup_estimator` gives interval 0, ewma_log 2.
const ONE_FOUR: EstimatorSpec = EstimatorSpec {
    interval: 0,
    ewma_log: 2,
};

#[test]
fn a_steady_megabit_climbs_as_est_timer_computes_it() {
    // 125000 B/s and 100 pps, sampled each second with weight 1/4:
    // avbps (x256) = 8e6, 14e6, 18.5e6, ... toward 32e6.
    let mut e = RateEstimator::new(ONE_FOUR, 0, 0, Instant::ZERO, None);
    assert_eq!(e.next(), at(SEC));
    let mut seen = Vec::new();
    for s in 1..=3u64 {
        e.run_until(at(s * SEC), s * 125_000, s * 100);
        seen.push(e.read());
    }
    assert_eq!(
        seen,
        vec![
            RateEst {
                bps: 31_250,
                pps: 25
            },
            RateEst {
                bps: 54_687,
                pps: 43
            },
            RateEst {
                bps: 72_265,
                pps: 57
            },
        ]
    );
    for s in 4..=40u64 {
        e.run_until(at(s * SEC), s * 125_000, s * 100);
    }
    let r = e.read();
    assert!((124_000..=125_000).contains(&r.bps), "{r:?}");
    assert!((98..=100).contains(&r.pps), "{r:?}");
}

#[test]
fn nothing_moves_before_the_first_interval_ends() {
    let mut e = RateEstimator::new(ONE_FOUR, 5_000, 5, at(SEC / 2), None);
    e.run_until(at(SEC + SEC / 2 - 1), 900_000, 900);
    assert_eq!(e.read(), RateEst::default());
    e.run_until(at(SEC + SEC / 2), 900_000, 900);
    assert_ne!(e.read(), RateEst::default());
}

#[test]
fn missed_intervals_run_one_by_one_the_first_with_the_bytes() {
    // A late caller catches up as the timer would have run: the bytes
    // counted by the first missed interval's end go to it, the others see
    // nothing.
    let mut late = RateEstimator::new(ONE_FOUR, 0, 0, Instant::ZERO, None);
    late.run_until(at(5 * SEC), 125_000, 100);
    let mut timer = RateEstimator::new(ONE_FOUR, 0, 0, Instant::ZERO, None);
    timer.run_until(at(SEC), 125_000, 100);
    for s in 2..=5u64 {
        timer.run_until(at(s * SEC), 125_000, 100);
    }
    assert_eq!(late, timer);
    assert_eq!(late.next(), at(6 * SEC));
    // 8e6, then x3/4 four times: 2_531_250 / 256.
    assert_eq!(late.read().bps, 9_887);
}

#[test]
fn a_dump_reads_the_decayed_estimate_without_running_it() {
    let mut e = RateEstimator::new(ONE_FOUR, 0, 0, Instant::ZERO, None);
    e.run_until(at(SEC), 125_000, 100);
    let before = e;
    let later = e.read_at(at(3 * SEC), 125_000, 100);
    assert_eq!(e, before);
    assert!(later.bps < e.read().bps, "{later:?} vs {:?}", e.read());
    e.run_until(at(3 * SEC), 125_000, 100);
    assert_eq!(later, e.read());
}

#[test]
fn a_long_idle_gap_settles_at_zero_and_keeps_the_schedule() {
    let mut e = RateEstimator::new(ONE_FOUR, 0, 0, Instant::ZERO, None);
    e.run_until(at(SEC), 125_000_000, 100_000);
    e.run_until(at(100_000 * SEC + SEC / 3), 125_000_000, 100_000);
    assert_eq!(e.read(), RateEst::default());
    assert_eq!(e.next(), at(100_001 * SEC));
}

#[test]
fn a_replacement_keeps_the_averages_and_restarts_its_interval() {
    let mut e = RateEstimator::new(ONE_FOUR, 0, 0, Instant::ZERO, None);
    e.run_until(at(SEC), 125_000, 100);
    let spec = EstimatorSpec {
        interval: -2,
        ewma_log: 3,
    };
    let n = RateEstimator::new(spec, 125_000, 100, at(SEC + 1), Some(&e));
    assert_eq!(n.read(), e.read());
    assert_eq!(n.next(), at(SEC + 1 + SEC / 4));
}

#[test]
fn the_kernel_refuses_intervals_and_weights_out_of_range() {
    for (interval, ewma_log) in [(-3, 2), (4, 2), (0, 0), (0, 31)] {
        let spec = EstimatorSpec { interval, ewma_log };
        let e = spec.check().expect_err("out of range");
        assert_eq!(e.errno, Errno::EINVAL, "{spec:?}");
    }
    for (interval, ewma_log) in [(-2, 1), (3, 30), (0, 2)] {
        EstimatorSpec { interval, ewma_log }.check().unwrap();
    }
}
