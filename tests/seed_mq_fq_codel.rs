//! Seed experiment 6: mq with N TX queues, each with fq_codel
//! (configs/sim/seed6-mq-fq-codel.toml: the link of configs/mq-fq-codel.toml,
//! 4 queues at 1 Gbit/s, 10 ms base RTT, 8 CUBIC flows and a ping).
//!
//! Simulator test (deterministic, always runs): the flows spread over the
//! queues by flow hash (several queues carry traffic, none carries nearly
//! all of it); mq's counters are the sum of its children's and its class
//! `1:i` reports child i; ping under load stays near idle, at least as well
//! as behind a single fq_codel, while the same mq with its default
//! pfifo_fast children is bloated.
//!
//! Live test (root only): the same config at 100 Mbit/s through the daemon
//! with 8 flows; at least two per-queue children of the daemon's final
//! snapshot carry traffic (the flows' source ports are random), their sum
//! is the root's, and ping stays within a few ms of idle.

mod common;

use std::path::Path;
use std::time::Duration;

use bloatbox::experiment::{run_one, Candidate, TestOptions};
use bloatbox::qdisc::{QdiscDump, QdiscStats};
use bloatbox::sim::{self, Scenario, SimReport};

mod seed;
use seed::idle_options;

fn manifest(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The children's counters added up (what mq reports as its own).
fn sum_children(root: &QdiscDump) -> QdiscStats {
    let mut s = QdiscStats::default();
    for c in &root.children {
        s.bytes += c.stats.bytes;
        s.packets += c.stats.packets;
        s.drops += c.stats.drops;
        s.overlimits += c.stats.overlimits;
        s.requeues += c.stats.requeues;
        s.backlog += c.stats.backlog;
        s.qlen += c.stats.qlen;
    }
    s
}

/// Checks the per-queue layout of an mq root of `n` fq_codel children that
/// carried traffic; returns each queue's share of the packets.
fn check_mq(root: &QdiscDump, n: usize) -> Vec<f64> {
    assert_eq!(root.kind, "mq");
    assert_eq!(root.children.len(), n, "one child per TX queue");
    assert!(root.children.iter().all(|c| c.kind == "fq_codel"));
    let sum = sum_children(root);
    let s = &root.stats;
    assert_eq!(
        (s.bytes, s.packets, s.drops, s.backlog, s.qlen),
        (sum.bytes, sum.packets, sum.drops, sum.backlog, sum.qlen),
        "mq's counters are its children's sum"
    );
    // Class 1:i reports child i.
    assert_eq!(root.classes.len(), n);
    for class in &root.classes {
        let leaf = class.leaf.expect("mq classes have a leaf");
        let child = root
            .children
            .iter()
            .find(|c| c.handle == leaf)
            .expect("the leaf is a child");
        let cs = class.stats.as_ref().expect("mq classes have counters");
        assert_eq!(
            (cs.bytes, cs.packets, cs.drops),
            (child.stats.bytes, child.stats.packets, child.stats.drops)
        );
    }
    root.children
        .iter()
        .map(|c| c.stats.packets as f64 / s.packets.max(1) as f64)
        .collect()
}

fn ping_p50_ms(r: &SimReport) -> f64 {
    r.flow("ping")
        .and_then(|f| f.rtt)
        .expect("ping replies")
        .p50 as f64
        / 1e6
}

#[test]
fn mq_spreads_flows_over_per_queue_fq_codels_and_keeps_ping_near_idle() {
    let text = std::fs::read_to_string(manifest("configs/sim/seed6-mq-fq-codel.toml")).unwrap();
    let parse = |t: &str| Scenario::from_toml(t).unwrap_or_else(|e| panic!("{e}"));
    let mq = sim::run(&parse(&text)).unwrap();
    let mut idle_sc = parse(&text);
    idle_sc.tcp.clear();
    let idle = sim::run(&idle_sc).unwrap();
    assert!(text.contains("tx_queues = 4") && text.contains("qdisc = \"fq_codel\""));
    let single = sim::run(&parse(&text.replace("tx_queues = 4", "tx_queues = 1"))).unwrap();
    let mq_pfifo = sim::run(&parse(&text.replace("qdisc = \"fq_codel\"\n", ""))).unwrap();

    let shares = check_mq(&mq.directions[0].qdisc, 4);
    let d = &mq.directions[0];
    assert_eq!(
        d.drops.values().sum::<u64>(),
        d.qdisc.stats.drops,
        "every drop happened in a queue's fq_codel"
    );
    println!(
        "{:<26} {:>9} {:>9} {:>7} {:>7}  per-queue share of packets",
        "scenario", "ping p50", "p99 ms", "util", "drops"
    );
    for (name, r) in [
        ("idle", &idle),
        ("mq, 4 x fq_codel", &mq),
        ("fq_codel, 1 queue", &single),
        ("mq, 4 x pfifo_fast", &mq_pfifo),
    ] {
        let rtt = r.flow("ping").and_then(|f| f.rtt).unwrap();
        let q = &r.directions[0].qdisc;
        let shares: Vec<String> = q
            .children
            .iter()
            .map(|c| {
                format!(
                    "{:.2}",
                    c.stats.packets as f64 / q.stats.packets.max(1) as f64
                )
            })
            .collect();
        println!(
            "{name:<26} {:>9.2} {:>9.2} {:>6.1}% {:>7}  {}",
            rtt.p50 as f64 / 1e6,
            rtt.p99 as f64 / 1e6,
            r.directions[0].utilisation * 100.0,
            r.directions[0].drops.values().sum::<u64>(),
            shares.join(" ")
        );
    }
    // 8 flows and a ping hashed over 4 queues: at least 3 in use, none
    // with nearly everything.
    assert!(
        shares.iter().filter(|s| **s > 0.05).count() >= 3,
        "{shares:?}"
    );
    assert!(shares.iter().all(|s| *s < 0.7), "{shares:?}");
    // The link is full, and ping stays near idle like behind one fq_codel.
    assert!(mq.directions[0].utilisation > 0.9);
    let base = ping_p50_ms(&idle);
    assert!(
        ping_p50_ms(&mq) < base + 1.0,
        "mq: {:.2} ms",
        ping_p50_ms(&mq)
    );
    // At least as good as one fq_codel. (With this scenario's seed the
    // ping happens to share one of the single fq_codel's 1024 buckets with
    // a bulk flow, and waits behind it: new_flow_count 41 instead of ~440;
    // with seeds 5, 7 or 8 it does not and sits at idle + 0.04 ms.)
    assert!(ping_p50_ms(&mq) <= ping_p50_ms(&single) + 0.5);
    // Without fq_codel in the queues, mq alone does not help.
    assert!(
        ping_p50_ms(&mq_pfifo) > base + 10.0,
        "mq pfifo_fast: {:.2} ms",
        ping_p50_ms(&mq_pfifo)
    );
}

#[test]
#[ignore = "needs root"]
fn live_mq_fq_codel_uses_several_queues_and_keeps_ping_near_idle() {
    common::require_root();
    // At 100 Mbit/s: a debug-build datapath does not forward 1 Gbit/s, and
    // the link, not the daemon, must be the bottleneck for a queue to form.
    let text = std::fs::read_to_string(manifest("configs/mq-fq-codel.toml")).unwrap();
    assert!(text.contains("rate = \"1gbit\""), "the rate line moved");
    let cand = Candidate {
        name: "mq-fq-codel@100mbit".into(),
        config: bloatbox::config::Config::from_str(
            &text.replace("rate = \"1gbit\"", "rate = \"100mbit\""),
            "mq-fq-codel.toml",
        )
        .unwrap(),
        file: None,
    };
    let loaded = TestOptions {
        flows: 8,
        bidirectional: false,
        duration: Duration::from_secs(5),
        warmup: Duration::from_secs(1),
        ping_interval: Some(Duration::from_millis(50)),
        udp_rr: false,
        realtime: Some(50),
        ..TestOptions::default()
    };
    let idle_opts = idle_options(&loaded);
    let r = run_one(&cand, 600, &loaded, &mut |_, _| true).unwrap();
    let idle = run_one(&cand, 601, &idle_opts, &mut |_, _| true).unwrap();
    let p50 = |r: &bloatbox::experiment::ConfigResult| {
        r.summary.ping.as_ref().expect("ping ran").latency.p50_ms
    };
    let root = r.final_qdiscs[0].clone();
    let shares = check_mq(&root, 4);
    eprintln!(
        "live mq 4 x fq_codel, 8 cubic flows: {:.1} Mbit/s, ping p50 {:.2} ms (idle {:.2}), \
         per-queue share of packets {shares:.2?}",
        r.summary.up_mbit,
        p50(&r),
        p50(&idle)
    );
    assert!(r.summary.up_mbit > 40.0, "{:.1} Mbit/s", r.summary.up_mbit);
    // Live source ports are random: all 8 flows hash to one queue with
    // probability 4 × 4^-8 (6e-5); to at most two, 2 %. So: at least two.
    assert!(
        shares.iter().filter(|s| **s > 0.05).count() >= 2,
        "{shares:?}"
    );
    assert!(p50(&r) < p50(&idle) + 5.0);
}
