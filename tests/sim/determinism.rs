//! Same seed, same trace; another seed, another trace (where randomness is
//! used); the written trace is the hashed one; and every frame is accounted
//! for (sent = delivered + dropped + still in the path).

use super::{load, traced};
use bloatbox::sim::{self, Scenario};

fn with_seed(name: &str, seed: u64) -> Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(name);
    let text = std::fs::read_to_string(path).unwrap();
    let text = text
        .lines()
        .map(|l| {
            if l.starts_with("seed =") {
                format!("seed = {seed}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    Scenario::from_toml(&text).unwrap()
}

#[test]
fn same_seed_same_trace_other_seed_other_trace() {
    let a = sim::run(&load("mixed_sources.toml")).unwrap();
    let b = sim::run(&load("mixed_sources.toml")).unwrap();
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(a.trace_events, b.trace_events);
    assert!(a.trace_events > 10_000, "{}", a.trace_events);
    let c = sim::run(&with_seed("mixed_sources.toml", 6)).unwrap();
    assert_ne!(a.trace_hash, c.trace_hash);
    println!("{}", a.table());
}

#[test]
fn without_randomness_the_seed_only_changes_hashing() {
    // The Reno scenario draws nothing random except the ISN and the qdisc
    // perturbation, neither of which changes timing: same event count.
    let a = sim::run(&with_seed("reno_10mbit.toml", 1)).unwrap();
    let b = sim::run(&with_seed("reno_10mbit.toml", 2)).unwrap();
    assert_eq!(a.trace_events, b.trace_events);
    assert_eq!(a.trace_hash, b.trace_hash);
}

#[test]
fn written_trace_matches_the_hashed_run() {
    check_trace("mixed_sources.toml", &["EQTD", "EX"]);
    check_trace("ecn_fq_codel.toml", &["EQTD", "EMQTD"]);
}

/// Runs `name` with a written trace; checks it against the hashed run, its
/// time order, each packet's life, that every life in `expect` occurs, the
/// enqueue verdicts against the lives, and the driver's interrupt lines
/// against the frames they handled.
fn check_trace(name: &str, expect: &[&str]) {
    let sc = load(name);
    let (r, text) = traced(&sc);
    assert_eq!(r.trace_hash, sim::run(&sc).unwrap().trace_hash);
    let mut last_t = 0;
    let mut kinds = std::collections::BTreeMap::<String, u64>::new();
    // Per packet: the events in order.
    let mut life = std::collections::HashMap::<u64, String>::new();
    let mut lines = 0u64;
    let mut dropped_at_enqueue = Vec::new();
    let (mut rx_frames, mut tx_frames) = (0u64, 0u64);
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let t = v["t"].as_u64().unwrap();
        assert!(t >= last_t, "trace goes back in time at {line}");
        last_t = t;
        lines += 1;
        let ev = v["ev"].as_str().unwrap();
        *kinds.entry(ev.to_string()).or_default() += 1;
        if ev == "tx_completion" || ev == "rx_interrupt" {
            let frames = v["frames"].as_u64().unwrap();
            assert!(frames >= 1, "{line}");
            if ev == "rx_interrupt" {
                rx_frames += frames;
                continue;
            }
            tx_frames += frames;
            assert!(v["bytes"].as_u64().unwrap() >= 46 * frames, "{line}");
            // BQL is on: its limit, and what it still counts in the ring.
            assert!(v["bql_limit"].as_u64().unwrap() > 0, "{line}");
            assert!(v["bql_inflight"].is_u64(), "{line}");
            continue;
        }
        assert!(v["size"].as_u64().unwrap() >= 46);
        if ev == "enqueue" {
            let verdict = v["verdict"].as_str().unwrap();
            assert!(["success", "drop", "cn"].contains(&verdict), "{line}");
            if verdict == "drop" {
                dropped_at_enqueue.push(v["pkt"].as_u64().unwrap());
            }
        }
        if v["ev"] == "drop" {
            assert!(v["reason"].is_string(), "{line}");
        }
        life.entry(v["pkt"].as_u64().unwrap())
            .or_default()
            .push(match ev {
                "enqueue" => 'E',
                "dequeue" => 'Q',
                "ecn_mark" => 'M',
                "depart" => 'T',
                "deliver" => 'D',
                "drop" => 'X',
                other => panic!("unknown event {other}"),
            });
    }
    // enqueue, then (an ECN mark as it leaves the qdisc and) the dequeue,
    // the departure from the NIC and the delivery; or a drop in the qdisc.
    for (pkt, seen) in &life {
        let ok = matches!(
            seen.as_str(),
            "E" | "EQ" | "EQT" | "EQTD" | "EMQ" | "EMQT" | "EMQTD" | "EX"
        );
        assert!(ok, "packet {pkt}: {seen}");
    }
    // A frame the qdisc refused at enqueue is dropped there.
    for pkt in &dropped_at_enqueue {
        assert_eq!(life[pkt], "EX", "packet {pkt}");
    }
    // Every delivery came with one RX interrupt; every completion reaped a
    // frame that had left the NIC.
    assert_eq!(rx_frames, kinds["deliver"]);
    assert!(tx_frames <= kinds["depart"] && tx_frames > 0);
    for e in expect {
        assert!(life.values().any(|s| s == e), "{name}: no packet lived {e}");
    }
    assert_eq!(lines, r.trace_events);
    assert!(kinds["enqueue"] >= kinds["dequeue"]);
    assert!(kinds["dequeue"] >= kinds["deliver"]);
}

#[test]
fn every_frame_is_accounted_for() {
    let r = sim::run(&load("mixed_sources.toml")).unwrap();
    assert_eq!(r.unmatched_frames, 0);
    for d in 0..2 {
        let dir = &r.directions[d];
        assert_eq!(dir.unexplained_drops, 0);
        let (mut sent, mut delivered, mut dropped) = (0, 0, 0);
        for f in &r.flows {
            let fwd = (f.dir == dir.name) as usize;
            // forward counters travel on the flow's own direction.
            let c = if fwd == 1 { &f.forward } else { &f.reverse };
            sent += c.sent_pkts;
            delivered += c.delivered_pkts;
            dropped += c.dropped_pkts;
        }
        let path_drops: u64 = dir.drops.values().sum();
        assert_eq!(sent, dir.frames_in, "{}", dir.name);
        assert_eq!(delivered, dir.frames_out, "{}", dir.name);
        assert_eq!(dropped, path_drops, "{}", dir.name);
        assert_eq!(sent, delivered + dropped + dir.held, "{}", dir.name);
    }
    let ef = r.flow("ef").unwrap();
    assert_eq!(ef.forward.sent_pkts, 10);
    let rping = r.flow("rping").unwrap();
    assert_eq!(rping.dir, "right_to_left");
    assert!(rping.rtt.unwrap().count >= 140);
    let onoff = r.flow("onoff").unwrap();
    // 2 Mbit/s while on, 40 % duty cycle, 3 s: 2e6*0.4*3/8/1000 = 300 frames.
    assert!(
        (280..=320).contains(&onoff.forward.sent_pkts),
        "{}",
        onoff.forward.sent_pkts
    );
    let cubic = r.flow("cubic").unwrap();
    println!("{:?}", cubic.tcp);
    assert!(cubic.forward.sent_pkts > 50);
    assert!(
        cubic.reverse.sent_pkts < cubic.forward.delivered_pkts * 3 / 4,
        "delayed ACKs"
    );
}
