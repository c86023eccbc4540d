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

/// A scenario whose left→right tree is built by `tc`, with a UDP load of
/// 1000-byte datagrams at `rate` for 5 s and a ping every 100 ms.
fn udp_through(tc: &[&str], rate: &str) -> Scenario {
    let lines: Vec<String> = tc.iter().map(|l| format!("  \"{l}\",")).collect();
    Scenario::from_toml(&format!(
        "seed = 7\nduration = \"5s\"\n\n[link]\nrate = \"1000mbit\"\ndelay = \"0ms\"\n\n\
         [link.left_to_right]\ntc = [\n{}\n]\n\n\
         [[udp]]\nname = \"load\"\nrate = \"{rate}\"\nsize = 1000\n\n\
         [[ping]]\nname = \"ping\"\ninterval = \"100ms\"\n",
        lines.join("\n")
    ))
    .unwrap()
}

/// The classic recipe (tc-netem(8), "rate control"): netem's delay at the
/// root, TBF under its class 1:1. A 20 Mbit/s load leaves at TBF's
/// 10 Mbit/s, and the ping's RTT is the 100 ms of delay plus TBF's queue
/// (at most its 400 ms of latency).
#[test]
fn netem_with_a_tbf_child_shapes_to_the_tbf_rate_after_the_delay() {
    let sc = udp_through(
        &[
            "tc qdisc add dev left root handle 1: netem delay 100ms",
            "tc qdisc add dev left parent 1:1 handle 10: tbf rate 10mbit burst 32kbit latency 400ms",
        ],
        "20mbit",
    );
    let r = sim::run(&sc).unwrap();
    let (min, p50, max) = rtt_ms(&r);
    let mbit = r.flow("load").map_or(0.0, |f| f.throughput_bps / 1e6);
    let l2r = &r.directions[0];
    println!("load {mbit:.3} Mbit/s; ping min {min:.1} p50 {p50:.1} max {max:.1} ms");
    println!("{}", l2r.tc);
    assert!((9.0..10.3).contains(&mbit), "{mbit:.3} Mbit/s");
    assert!(min >= 99.9 && max < 520.0, "RTT {min:.1}..{max:.1} ms");
    // TBF's queue overflows: its drops count in netem's too.
    let netem = &l2r.qdisc;
    let tbf = &netem.children[0];
    assert_eq!(tbf.kind, "tbf");
    assert!(tbf.stats.drops > 0);
    assert!(netem.stats.drops >= tbf.stats.drops);
}

/// `duplicate 100%` on a netem leaf of HTB: each copy goes back to the
/// root (`rootq->enqueue`), so HTB and netem each send every frame twice,
/// and the path counts one duplicate per copy.
#[test]
fn duplicate_under_htb_sends_each_copy_through_the_root_once() {
    let sc = udp_through(
        &[
            "tc qdisc add dev left root handle 1: htb default 1",
            "tc class add dev left parent 1: classid 1:1 htb rate 100mbit",
            "tc qdisc add dev left parent 1:1 handle 10: netem duplicate 100% limit 10000",
        ],
        "1mbit",
    );
    let r = sim::run(&sc).unwrap();
    let l2r = &r.directions[0];
    println!("{}", l2r.tc);
    let htb = &l2r.qdisc;
    let netem = &htb.children[0];
    assert_eq!(netem.kind, "netem");
    assert!(l2r.frames_in > 600, "{}", l2r.frames_in);
    assert_eq!(l2r.drops.values().sum::<u64>(), 0, "{:?}", l2r.drops);
    assert_eq!(2 * l2r.frames_in, l2r.frames_out + l2r.held);
    assert_eq!(htb.stats.packets, netem.stats.packets);
    assert!(htb.stats.packets >= l2r.frames_out);
}
