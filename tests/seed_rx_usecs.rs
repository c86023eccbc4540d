//! Seed experiment 2 (root only): RX interrupt coalescing by time. With
//! rx-usecs 20 every lone frame waits 20 µs at the receiving NIC, with
//! rx-usecs 1 it waits 1 µs, so an idle request/response round trip (two
//! receives) is about 2 × 19 µs longer.
//!
//! Idle link without propagation delay, UDP_RR only (thousands of
//! transactions per run). Noise on a shared machine only ever adds time to a
//! transaction (a late wake-up, a preempted probe thread), so the estimator
//! is a low quantile (p10) of each run's transaction times, where the
//! coalescing delay is still present but most scheduling noise is not.
//! Five rounds, each an rx-usecs 20 run next to an rx-usecs 1 run (their
//! order alternating); the per-receive difference of each round is
//! computed within the round, and the assertion is on the median of the
//! five rounds, so two disturbed rounds cannot decide the outcome.

use std::time::Duration;

use bloatbox::config::Direction;
use bloatbox::experiment::{run_one, skip_reason, ConfigResult, TestOptions};

mod seed;
use seed::candidate;

/// The `q` quantile (0..=1) of the UDP_RR transaction times after the
/// warm-up, µs.
fn rr_quantile_us(r: &ConfigResult, warmup: f64, q: f64) -> f64 {
    let mut v: Vec<f64> = r
        .raw
        .udp_rr
        .as_ref()
        .expect("udp_rr ran")
        .samples
        .iter()
        .filter(|s| s.t >= warmup)
        .map(|s| s.rtt_us)
        .collect();
    assert!(v.len() > 200, "{}: only {} transactions", r.name, v.len());
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn idle_rtt_rises_by_about_the_coalescing_delay_per_receive() {
    if let Some(why) = skip_reason() {
        eprintln!("{why}");
        return;
    }
    let cfg = |name: &str| {
        let c = candidate(name);
        let delay = c.config.link_params(Direction::LeftToRight).delay_ns;
        assert_eq!(delay, 0, "{name}: the configs have no propagation delay");
        c
    };
    let opts = TestOptions {
        flows: 0,
        duration: Duration::from_millis(1200),
        warmup: Duration::from_millis(300),
        ping_interval: None,
        udp_rr: true,
        realtime: Some(50),
        ..TestOptions::default()
    };
    let warmup = opts.warmup.as_secs_f64();
    let (c20, c1) = (cfg("rx-usecs-20"), cfg("rx-usecs-1"));
    let mut per_receive = Vec::new();
    eprintln!("round  rx-usecs 20 p10/p50 us  rx-usecs 1 p10/p50 us  per receive (p10) us");
    for round in 0..5 {
        let tag = 200 + 2 * round;
        let (r20, r1) = if round % 2 == 0 {
            let a = run_one(&c20, tag, &opts, &mut |_| true).unwrap();
            (a, run_one(&c1, tag + 1, &opts, &mut |_| true).unwrap())
        } else {
            let b = run_one(&c1, tag + 1, &opts, &mut |_| true).unwrap();
            (run_one(&c20, tag, &opts, &mut |_| true).unwrap(), b)
        };
        let q = |r: &ConfigResult, q: f64| rr_quantile_us(r, warmup, q);
        let d = (q(&r20, 0.1) - q(&r1, 0.1)) / 2.0;
        eprintln!(
            "{round:>5}  {:>10.1}/{:<10.1}  {:>9.1}/{:<10.1}  {d:>20.1}",
            q(&r20, 0.1),
            q(&r20, 0.5),
            q(&r1, 0.1),
            q(&r1, 0.5)
        );
        per_receive.push(d);
    }
    let m = median(per_receive.clone());
    eprintln!("median per receive {m:.1} us (expected 19)");
    assert!(
        (12.0..=30.0).contains(&m),
        "{m:.1} us per receive (rounds {per_receive:.1?}), expected about 19"
    );
}
