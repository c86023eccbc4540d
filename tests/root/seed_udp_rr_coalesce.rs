//! Seed experiment 5 (root only): UDP_RR on a 1 Gbit/s link without delay,
//! RX coalescing on (rx-usecs 50, rx-frames 32) vs off (rx-frames 1). With
//! one transaction in flight the frame-count trigger never fires, so each
//! receive waits 50 µs and the transaction rate falls. Two alternating
//! 1.8 s runs per setting.
//!
//! What is asserted is exact: the link's own transit time (ingress to
//! delivery, in the emulated link's time, which no scheduling noise
//! reaches) of the median frame in each direction is the 50 µs wait plus
//! at most 2 µs of serialization and ring with coalescing on, and under
//! 2 µs with it off. The transaction rate and its latency are wall-clock
//! timing, so they are printed, not asserted (timing claims are
//! benchmarks: docs/benchmarking.md, seed 5).

use crate::common;
use crate::turn;

use std::time::Duration;

use bloatbox::experiment::{run_one, ConfigResult, TestOptions};

use common::seed::candidate;

#[test]
#[ignore = "needs root"]
fn with_coalescing_on_each_frame_waits_50_us_at_the_receiver() {
    common::require_root();
    let _turn = turn();
    let opts = TestOptions {
        flows: 0,
        duration: Duration::from_millis(1800),
        warmup: Duration::from_millis(300),
        ping_interval: None,
        udp_rr: true,
        realtime: Some(50),
        ..TestOptions::default()
    };
    // Alternating short runs, so that a burst of load from other processes
    // on this machine does not fall on one setting only.
    let (on_cfg, off_cfg) = (
        candidate("udp-rr-coalesce-on"),
        candidate("udp-rr-coalesce-off"),
    );
    let mut on = Vec::new();
    let mut off = Vec::new();
    for round in 0..2 {
        on.push(run_one(&on_cfg, 500 + 2 * round, &opts, &mut |_, _| true).unwrap());
        off.push(run_one(&off_cfg, 501 + 2 * round, &opts, &mut |_, _| true).unwrap());
    }
    let rr = |r: &ConfigResult| r.summary.udp_rr.clone().expect("udp_rr ran");
    let tps = |rs: &[ConfigResult]| rs.iter().map(|r| rr(r).transactions_per_s).sum::<f64>() / 2.0;
    let p50 =
        |rs: &[ConfigResult]| rs.iter().map(|r| rr(r).latency.p50_ms * 1e3).sum::<f64>() / 2.0;
    let lost = |rs: &[ConfigResult]| rs.iter().map(|r| rr(r).lost).sum::<u64>();
    eprintln!(
        "UDP_RR (mean of 2 alternating runs; timing, not asserted): coalescing on {:.0} trans/s (p50 {:.1} us, {} lost), \
         off {:.0} trans/s (p50 {:.1} us, {} lost)",
        tps(&on),
        p50(&on),
        lost(&on),
        tps(&off),
        p50(&off),
        lost(&off)
    );
    // The exact part: each run's median transit per direction.
    const WAIT_US: f64 = 50.0;
    const SLACK_US: f64 = 2.0;
    let windows = [
        ("on", &on, WAIT_US, WAIT_US + SLACK_US),
        ("off", &off, 0.0, SLACK_US),
    ];
    for (setting, runs, lo, hi) in windows {
        for r in runs.iter() {
            for (d, p) in r.paths.iter().enumerate() {
                let p50_us = p.transit.p50_ns as f64 / 1e3;
                eprintln!(
                    "coalescing {setting}, direction {d}: {} frames, transit p50 {p50_us:.2} us",
                    p.frames
                );
                assert!(
                    p.frames >= 100,
                    "coalescing {setting}, direction {d}: only {} frames",
                    p.frames
                );
                assert!(
                    (lo..hi).contains(&p50_us),
                    "coalescing {setting}, direction {d}: transit p50 {p50_us:.2} us, \
                     want [{lo}, {hi}) us"
                );
            }
        }
    }
}
