//! Seed experiment 6, simulator half: mq with N TX queues, each with
//! fq_codel (configs/sim/seed6-mq-fq-codel.toml: the link of
//! configs/mq-fq-codel.toml, 4 queues at 1 Gbit/s, 10 ms base RTT, 8 CUBIC
//! flows and a ping). Deterministic, always runs: the flows spread over the
//! queues by flow hash (several queues carry traffic, none carries nearly
//! all of it); mq's counters are the sum of its children's and its class
//! `1:i` reports child i; ping under load stays near idle, at least as well
//! as behind a single fq_codel, while the same mq with its default
//! pfifo_fast children is bloated. The live half, through the daemon, is
//! tests/root/seed_mq_fq_codel.rs.

use bloatbox::sim::{self, Scenario, SimReport};

use crate::common::seed::{check_mq, manifest};

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
