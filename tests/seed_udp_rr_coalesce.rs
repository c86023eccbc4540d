//! Seed experiment 5 (root only): UDP_RR on a 1 Gbit/s link without delay,
//! RX coalescing on (rx-usecs 50, rx-frames 32) vs off (rx-frames 1). With
//! one transaction in flight the frame-count trigger never fires, so each
//! receive waits 50 µs and the transaction rate falls. Two alternating
//! 1.8 s runs per setting; the assertion is a ratio within one test.

mod common;

use std::time::Duration;

use bloatbox::experiment::{run_one, ConfigResult, TestOptions};

mod seed;
use seed::candidate;

#[test]
#[ignore = "needs root"]
fn udp_rr_transaction_rate_is_higher_with_coalescing_off() {
    common::require_root();
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
        "UDP_RR (mean of 2 alternating runs): coalescing on {:.0} trans/s (p50 {:.1} us, {} lost), \
         off {:.0} trans/s (p50 {:.1} us, {} lost)",
        tps(&on),
        p50(&on),
        lost(&on),
        tps(&off),
        p50(&off),
        lost(&off)
    );
    assert!(tps(&on) > 100.0, "the probe barely ran: {:.0}/s", tps(&on));
    assert!(
        tps(&off) > 1.15 * tps(&on),
        "off {:.0}/s is not clearly above on {:.0}/s",
        tps(&off),
        tps(&on)
    );
    // Each transaction with coalescing on waits about 2 × 50 µs longer.
    assert!(p50(&on) - p50(&off) > 50.0);
}
