//! Seed experiment 5 (root only): UDP_RR on a 1 Gbit/s link without delay,
//! RX coalescing on (rx-usecs 50, rx-frames 32) vs off (rx-frames 1). With
//! one transaction in flight the frame-count trigger never fires, so each
//! receive waits 50 µs and the transaction rate falls. 3 s per config; the
//! assertion is a ratio within one run.

use std::path::Path;
use std::time::Duration;

use bloatbox::experiment::{run_one, skip_reason, Candidate, ConfigResult, TestOptions};

#[test]
fn udp_rr_transaction_rate_is_higher_with_coalescing_off() {
    if let Some(why) = skip_reason() {
        eprintln!("{why}");
        return;
    }
    let cfg = |name: &str| {
        Candidate::from_file(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("configs/{name}.toml")),
        )
        .unwrap()
    };
    let opts = TestOptions {
        flows: 0,
        duration: Duration::from_secs(3),
        warmup: Duration::from_millis(500),
        ping_interval: None,
        udp_rr: true,
        realtime: Some(50),
        ..TestOptions::default()
    };
    let on = run_one(&cfg("udp-rr-coalesce-on"), 500, &opts, &mut |_| true).unwrap();
    let off = run_one(&cfg("udp-rr-coalesce-off"), 501, &opts, &mut |_| true).unwrap();
    let tps = |r: &ConfigResult| {
        r.summary
            .udp_rr
            .as_ref()
            .expect("udp_rr ran")
            .transactions_per_s
    };
    let p50 = |r: &ConfigResult| r.summary.udp_rr.as_ref().unwrap().latency.p50_ms * 1e3;
    eprintln!(
        "UDP_RR: coalescing on {:.0} trans/s (p50 {:.1} us), off {:.0} trans/s (p50 {:.1} us)",
        tps(&on),
        p50(&on),
        tps(&off),
        p50(&off)
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
