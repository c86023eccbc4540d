//! The netem qdisc in the tree Mininet's TCLink builds (mininet/link.py
//! `TCIntf.bwCmds`, `delayCmds`): Stanford CS244's bufferbloat experiment,
//! an HTB class at 1.5 Mbit/s with a netem leaf carrying the delay and the
//! queue (`limit`), 20 ms of minimum RTT, one Reno flow and a ping. The
//! worst ping RTT is the full queue's drain time on top of the 20 ms:
//! 100 frames of 1514 B at 1.5 Mbit/s are 807 ms (~827 ms in all), 20
//! frames 161 ms (~181 ms). Prints the figures.

use super::load;
use bloatbox::sim::{self, Scenario, SimReport};

/// The scenario with netem's `limit` on the bottleneck set to `limit`.
fn with_limit(limit: u32) -> Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios/cs244_bufferbloat.toml");
    let text = std::fs::read_to_string(path).unwrap();
    Scenario::from_toml(&text.replace(
        "netem delay 10ms limit 100\"",
        &format!("netem delay 10ms limit {limit}\""),
    ))
    .unwrap()
}

/// Ping RTT (min, p50, max) in ms.
fn rtt_ms(r: &SimReport) -> (f64, f64, f64) {
    let p = r.flow("ping").and_then(|f| f.rtt).expect("ping replies");
    let ms = |ns: u64| ns as f64 / 1e6;
    (ms(p.min), ms(p.p50), ms(p.max))
}

/// 1514-byte frames at 1.5 Mbit/s: the drain time of `frames`, ms.
fn drain_ms(frames: u32) -> f64 {
    f64::from(frames) * 1514.0 * 8.0 / 1.5e6 * 1e3
}

#[test]
fn cs244_worst_rtt_is_the_netem_queue_drain_time() {
    println!(
        "{:>6} {:>9} {:>9} {:>9} {:>11} {:>12} {:>8}",
        "limit", "min ms", "p50 ms", "max ms", "expect ms", "netem_limit", "Mbit/s"
    );
    for (limit, lo, hi) in [(100, 760.0, 880.0), (20, 150.0, 215.0)] {
        let sc = with_limit(limit);
        let r = sim::run(&sc).unwrap();
        let (min, p50, max) = rtt_ms(&r);
        let l2r = &r.directions[0];
        let dropped = l2r.drops.get("netem_limit").copied().unwrap_or(0);
        let mbit = r.flow("iperf").map_or(0.0, |f| f.throughput_bps / 1e6);
        println!(
            "{limit:>6} {min:>9.1} {p50:>9.1} {max:>9.1} {:>11.1} {dropped:>12} {mbit:>8.3}",
            drain_ms(limit) + 20.0
        );
        println!("{}", l2r.tc);
        // Never below the two netem delays (the RTT histogram's buckets
        // are within 0.1 %); with 20 frames Reno never lets it empty.
        assert!(min > 19.9, "limit {limit}: min RTT {min:.1} ms");
        // The worst: the full queue ahead of the ping.
        assert!(
            (lo..hi).contains(&max),
            "limit {limit}: max RTT {max:.1} ms, expected {lo}..{hi}"
        );
        // The queue is netem's: its limit drops, nothing else does.
        assert!(dropped > 0, "limit {limit}: no netem_limit drop");
        assert_eq!(l2r.drops.values().sum::<u64>(), dropped, "{:?}", l2r.drops);
        // Reno keeps the 1.5 Mbit/s class busy.
        assert!(mbit > 1.2, "limit {limit}: {mbit:.3} Mbit/s");
    }
}

#[test]
fn cs244_idle_ping_sees_the_minimum_rtt() {
    let mut idle = load("cs244_bufferbloat.toml");
    idle.tcp.clear();
    let r = sim::run(&idle).unwrap();
    let (min, p50, max) = rtt_ms(&r);
    println!("idle ping: min {min:.2} p50 {p50:.2} max {max:.2} ms");
    // 10 ms each way; HTB's tokens (burst 15k) send the 98-byte frame at
    // the line rate, not in 0.52 ms at 1.5 Mbit/s.
    assert!((19.9..20.6).contains(&min) && max < 20.6, "{min} {max}");
}
