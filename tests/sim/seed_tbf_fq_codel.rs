//! Seed experiment 4, in the deterministic simulator: TBF rate 1560mbit
//! burst 20280b latency 5ms against fq_codel limit 5 flows 5 quantum 1514
//! target 499us interval 5ms, without and with ECN. Four CUBIC flows and a
//! ping every 10 ms over a 10 ms base RTT, 4 s of simulated time
//! (configs/sim/seed4-*.toml). Prints the netdev table (ping rtt
//! min/avg/max/mdev, bandwidth, drops, CE marks).
//!
//! The simulator rather than the live path: the live datapath forwards at
//! most about 1 Gbit/s, so at 1560 Mbit/s it, not the qdisc, would be the
//! bottleneck. In the simulator the rate is exact.
//!
//! What the algorithms imply, and what is asserted:
//! - TBF's queue holds `latency` worth of bytes (5 ms at 1560 Mbit/s plus
//!   the burst): TCP keeps it partly full, so ping waits up to ~5 ms more
//!   than idle, never much more; the link is nearly full.
//! - fq_codel's 5-packet limit is 5 × 1514 B = 39 µs at 1560 Mbit/s: ping
//!   stays within a fraction of a millisecond of idle. That buffer is far
//!   below the bandwidth-delay product (1.95 MB), so the flows lose packets
//!   to the limit and use much less of the link than behind TBF.
//! - No packet can wait 499 µs in 39 µs of queue: CoDel never acts at
//!   this rate, every drop is a limit drop, and ECN changes nothing (no CE
//!   mark). The same qdiscs at 100 Mbit/s (5 packets = 606 µs, above the
//!   target) show the ECN difference: CoDel drops without ECN; with it,
//!   CoDel marks instead, and can drop only Not-ECT frames
//!   (net/sched/sch_fq_codel.c via include/net/codel_impl.h
//!   `codel_dequeue`: `INET_ECN_set_ce` or drop), which a TCP sender's
//!   retransmissions are (net/ipv4/tcp_output.c `tcp_ecn_send` clears ECT
//!   on them).

use std::path::Path;

use bloatbox::sim::{self, Scenario, SimReport};

fn scenario(name: &str) -> (String, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("configs/sim/{name}.toml"));
    (name.to_string(), std::fs::read_to_string(path).unwrap())
}

fn parse(text: &str) -> Scenario {
    Scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}"))
}

/// One row of the netdev table.
struct Row {
    name: String,
    /// Ping RTT, ms.
    min: f64,
    avg: f64,
    max: f64,
    mdev: f64,
    /// Goodput of the TCP flows, Mbit/s.
    mbit: f64,
    codel_drops: u64,
    limit_drops: u64,
    all_drops: u64,
    ce: u64,
    /// TCP retransmissions, which Linux sends Not-ECT.
    retransmits: u64,
}

fn row(name: &str, r: &SimReport) -> Row {
    let rtt = r.flow("ping").and_then(|f| f.rtt).expect("ping replies");
    let ms = |ns: f64| ns / 1e6;
    let d = &r.directions[0];
    let drops = |k: &str| d.drops.get(k).copied().unwrap_or(0);
    Row {
        name: name.into(),
        min: ms(rtt.min as f64),
        avg: ms(rtt.mean),
        max: ms(rtt.max as f64),
        mdev: ms(rtt.stdev),
        mbit: r
            .flows
            .iter()
            .filter_map(|f| f.goodput_bps)
            .fold(0.0, |a, b| a + b)
            / 1e6,
        codel_drops: drops("codel"),
        limit_drops: drops("fq_codel_overlimit") + drops("queue_full"),
        all_drops: d.drops.values().sum(),
        ce: d.ce_marks,
        retransmits: r
            .flows
            .iter()
            .filter_map(|f| f.tcp.as_ref())
            .map(|t| t.stats.retransmits)
            .sum(),
    }
}

fn print(rows: &[Row]) {
    println!(
        "{:<32} {:>32} {:>10} {:>12} {:>7}",
        "scenario", "ping rtt min/avg/max/mdev ms", "Mbit/s", "drops (codel)", "ce"
    );
    for r in rows {
        println!(
            "{:<32} {:>32} {:>10.1} {:>12} {:>7}",
            r.name,
            format!("{:.3}/{:.3}/{:.3}/{:.3}", r.min, r.avg, r.max, r.mdev),
            r.mbit,
            format!("{} ({})", r.all_drops, r.codel_drops),
            r.ce
        );
    }
}

#[test]
fn tbf_queues_up_to_its_latency_fq_codel_5p_stays_at_idle_and_never_needs_codel() {
    let mut rows = Vec::new();
    let (name, text) = scenario("seed4-tbf-1560mbit");
    let mut idle = parse(&text);
    idle.tcp.clear();
    rows.push(row("idle (no flows)", &sim::run(&idle).unwrap()));
    rows.push(row(&name, &sim::run(&parse(&text)).unwrap()));
    for name in ["seed4-fq-codel-5p", "seed4-fq-codel-5p-ecn"] {
        let (name, text) = scenario(name);
        rows.push(row(&name, &sim::run(&parse(&text)).unwrap()));
    }
    // The same fq_codel on a 100 Mbit/s link, where 5 packets exceed the
    // target.
    for name in ["seed4-fq-codel-5p", "seed4-fq-codel-5p-ecn"] {
        let (name, text) = scenario(name);
        assert!(text.contains("rate = \"1560mbit\""), "{name}: rate moved");
        let text = text.replace("rate = \"1560mbit\"", "rate = \"100mbit\"");
        rows.push(row(
            &format!("{name} @100mbit"),
            &sim::run(&parse(&text)).unwrap(),
        ));
    }
    print(&rows);
    let [idle, tbf, fq, fq_ecn, fq100, fq100_ecn] = &rows[..] else {
        unreachable!()
    };
    // TBF: a standing queue of up to its 5 ms latency, a nearly full link.
    assert!(tbf.avg > idle.avg + 1.0, "tbf avg {:.3} ms", tbf.avg);
    assert!(
        tbf.max < idle.max + 5.0 + 1.0,
        "tbf max {:.3} ms, idle {:.3}",
        tbf.max,
        idle.max
    );
    assert!(tbf.mbit > 0.8 * 1560.0, "tbf {:.1} Mbit/s", tbf.mbit);
    assert!(tbf.limit_drops > 0 && tbf.ce == 0);
    for fq in [fq, fq_ecn] {
        // Within half a millisecond of idle, far below TBF.
        assert!(fq.max < idle.max + 0.5, "{}: max {:.3} ms", fq.name, fq.max);
        assert!(fq.avg + 1.0 < tbf.avg);
        // The tiny buffer costs bandwidth.
        assert!(
            fq.mbit < tbf.mbit / 1.5,
            "{}: {:.1} Mbit/s",
            fq.name,
            fq.mbit
        );
        assert!(fq.mbit > 100.0, "{}: {:.1} Mbit/s", fq.name, fq.mbit);
        // 39 µs of queue never reaches a 499 µs target.
        assert_eq!((fq.codel_drops, fq.ce), (0, 0), "{}", fq.name);
        assert!(fq.limit_drops > 0 && fq.limit_drops == fq.all_drops);
    }
    // ECN has nothing to mark at 1560 Mbit/s: the runs are the same.
    assert_eq!((fq.mbit, fq.all_drops), (fq_ecn.mbit, fq_ecn.all_drops));
    // At 100 Mbit/s CoDel acts: drops without ECN, marks with it.
    assert!(fq100.codel_drops > 0 && fq100.ce == 0, "{}", fq100.name);
    assert!(
        fq100_ecn.ce > 0
            && fq100_ecn.codel_drops <= fq100_ecn.retransmits
            && fq100_ecn.codel_drops * 10 < fq100.codel_drops,
        "{}: ce {} codel drops {} (retransmissions {}; without ECN {} codel drops)",
        fq100_ecn.name,
        fq100_ecn.ce,
        fq100_ecn.codel_drops,
        fq100_ecn.retransmits,
        fq100.codel_drops
    );
}
