//! Random scenarios: parsing never panics, and every run that starts ends
//! with every frame accounted for (sent = delivered + dropped + held, per
//! direction, against the path's own counters), deterministically.

use bloatbox::sim::{self, Scenario};
use proptest::prelude::*;

proptest! {
    #![proptest_config(crate::common::proptest_config(256, file!()))]

    #[test]
    fn parsing_arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = Scenario::from_toml(&text);
    }

    #[test]
    fn parsing_mutated_scenarios_never_panics(
        key in prop::sample::select(vec!["rate", "delay", "size", "count", "interval", "mss", "bytes", "tos", "tc", "cc", "on"]),
        value in prop::sample::select(vec!["0", "-1", "\"\"", "\"0s\"", "\"1e99mbit\"", "4294967295", "18446744073709551615", "[]", "true", "\"x\""]),
    ) {
        let text = format!(
            "seed = 1\nduration = \"100ms\"\n[link]\n{key} = {value}\n[[tcp]]\n{key} = {value}\n[[udp]]\nrate = \"1mbit\"\n{key} = {value}\n[[ping]]\n{key} = {value}\n"
        );
        let _ = Scenario::from_toml(&text);
    }
}

fn scenario(
    qdisc: &str,
    rate_mbit: u32,
    delay_us: u32,
    tcp: u32,
    udp_kbit: u32,
    ecn: bool,
    bql: bool,
) -> String {
    format!(
        r#"
seed = 3
duration = "300ms"
[link]
rate = "{rate_mbit}mbit"
delay = "{delay_us}us"
bql = {bql}
tx_ring = 64
[link.left_to_right]
tc = ["tc qdisc add dev left root {qdisc}"]
[link.right_to_left]
rate = "{rate_mbit}mbit"
tc = ["tc qdisc add dev right root pfifo limit 20"]
[[tcp]]
count = {tcp}
ecn = {ecn}
[[udp]]
rate = "{udp_kbit}kbit"
size = 300
poisson = true
direction = "right_to_left"
[[ping]]
interval = "7ms"
"#
    )
}

proptest! {
    #![proptest_config(crate::common::proptest_config(64, file!()))]

    #[test]
    fn random_runs_conserve_frames(
        qdisc in prop::sample::select(vec![
            "pfifo_fast", "pfifo limit 30", "bfifo limit 20kb", "pfifo_head_drop limit 10",
            "fq_codel", "fq_codel limit 50 target 1ms interval 10ms", "sfq", "sfq limit 20 perturb 1",
            "codel target 2ms", "tbf rate 5mbit burst 10kb latency 20ms",
        ]),
        rate_mbit in 1u32..200,
        delay_us in 0u32..20_000,
        tcp in 0u32..6,
        udp_kbit in 1u32..20_000,
        ecn: bool,
        bql: bool,
    ) {
        let text = scenario(qdisc, rate_mbit, delay_us, tcp, udp_kbit, ecn, bql);
        let sc = Scenario::from_toml(&text).unwrap();
        let r = sim::run(&sc).unwrap();
        prop_assert_eq!(r.unmatched_frames, 0);
        for dir in &r.directions {
            prop_assert_eq!(dir.unexplained_drops, 0);
            let (mut sent, mut delivered, mut dropped) = (0, 0, 0);
            for f in &r.flows {
                let c = if f.dir == dir.name { &f.forward } else { &f.reverse };
                sent += c.sent_pkts;
                delivered += c.delivered_pkts;
                dropped += c.dropped_pkts;
            }
            prop_assert_eq!(sent, dir.frames_in);
            prop_assert_eq!(delivered, dir.frames_out);
            prop_assert_eq!(dropped, dir.drops.values().sum::<u64>());
            prop_assert_eq!(sent, delivered + dropped + dir.held);
        }
        prop_assert_eq!(sim::run(&sc).unwrap().trace_hash, r.trace_hash);
    }
}
