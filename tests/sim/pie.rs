//! PIE and FQ-PIE through the real path with CUBIC: PIE holds the queue
//! delay near its 15 ms target where a pfifo of the same limit lets it grow
//! to hundreds of ms (net/sched/sch_pie.c); FQ-PIE keeps a sparse ping near
//! the idle RTT while eight bulk flows fill the link
//! (net/sched/sch_fq_pie.c); with ECN, PIE marks once its probability has
//! settled under 10 %. Prints the figures.

use super::load;
use bloatbox::sim::{self, Scenario, SimReport};

/// The ping's RTT p50, p90 and p99 in ms.
fn rtt_ms(r: &SimReport) -> (f64, f64, f64) {
    let p = r.flow("ping").and_then(|f| f.rtt).expect("ping replies");
    let ms = |ns: u64| ns as f64 / 1e6;
    (ms(p.p50), ms(p.p90), ms(p.p99))
}

/// `scenario` without its bulk flows: the idle RTT.
fn idle(scenario: &Scenario) -> Scenario {
    let mut s = scenario.clone();
    s.tcp.clear();
    s
}

/// `pie_cubic.toml` with the qdisc line replaced by `tc`.
fn with_qdisc(tc: &str) -> Scenario {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/pie_cubic.toml");
    let text = std::fs::read_to_string(path).unwrap();
    Scenario::from_toml(&text.replace("root pie\"", &format!("root {tc}\""))).unwrap()
}

#[test]
fn pie_holds_the_queue_delay_near_its_target_under_cubic() {
    let sc = load("pie_cubic.toml");
    let base = rtt_ms(&sim::run(&idle(&sc)).unwrap()).0;
    let pie = sim::run(&sc).unwrap();
    let fifo = sim::run(&with_qdisc("pfifo limit 1000")).unwrap();
    let (p50, p90, p99) = rtt_ms(&pie);
    let (f50, _, _) = rtt_ms(&fifo);
    let l2r = &pie.directions[0];
    println!("{}", l2r.tc);
    println!(
        "base RTT {base:.2} ms; pie: ping p50 {p50:.2} p90 {p90:.2} p99 {p99:.2} ms \
         (queue delay p50 {:.2} ms), utilisation {:.1}%, drops {:?}; \
         pfifo limit 1000: ping p50 {f50:.2} ms (queue delay {:.2} ms), utilisation {:.1}%",
        p50 - base,
        l2r.utilisation * 100.0,
        l2r.drops,
        f50 - base,
        fifo.directions[0].utilisation * 100.0
    );
    // The median queue delay after warm-up in a band around the 15 ms
    // target, and a tenth or less of the fifo's.
    let delay = p50 - base;
    assert!(
        (5.0..=30.0).contains(&delay),
        "PIE's median queue delay {delay:.2} ms"
    );
    assert!(
        (f50 - base) > 10.0 * delay,
        "pfifo's {:.2} ms against PIE's {delay:.2} ms",
        f50 - base
    );
    // PIE decides by early drops, and the link stays busy.
    let early = l2r.drops.get("pie_early").copied().unwrap_or(0);
    assert!(early > 20, "early drops {early}");
    assert_eq!(
        l2r.drops.get("pie_overlimit"),
        None,
        "the limit is never reached"
    );
    assert!(l2r.utilisation > 0.85, "{}", l2r.utilisation);
    // The xstats count the same drops.
    let x = l2r
        .tc
        .lines()
        .find(|l| l.trim_start().starts_with("pkts_in "))
        .unwrap();
    assert!(x.contains(&format!(" dropped {early} ")), "{x}");
}

#[test]
fn fq_pie_keeps_a_sparse_ping_near_the_idle_rtt() {
    let sc = load("fq_pie_sparse.toml");
    let base = rtt_ms(&sim::run(&idle(&sc)).unwrap()).0;
    let r = sim::run(&sc).unwrap();
    let (p50, p90, p99) = rtt_ms(&r);
    let l2r = &r.directions[0];
    println!("{}", l2r.tc);
    println!(
        "base RTT {base:.2} ms; fq_pie: ping p50 {p50:.2} p90 {p90:.2} p99 {p99:.2} ms, \
         utilisation {:.1}%, drops {:?}",
        l2r.utilisation * 100.0,
        l2r.drops
    );
    assert!(
        p50 - base < 2.0,
        "ping p50 {p50:.2} ms over a base of {base:.2}"
    );
    assert!(
        p99 - base < 10.0,
        "ping p99 {p99:.2} ms over a base of {base:.2}"
    );
    assert!(l2r.utilisation > 0.9, "{}", l2r.utilisation);
    let early = l2r.drops.get("pie_early").copied().unwrap_or(0);
    assert!(early > 20, "early drops {early}");
    assert_eq!(sim::run(&sc).unwrap().trace_hash, r.trace_hash);
}

/// PIE's counters `dropped` and `ecn_mark` from a `tc -s` text.
fn drops_and_marks(tc: &str) -> (u64, u64) {
    let line = tc
        .lines()
        .find(|l| l.trim_start().starts_with("pkts_in "))
        .unwrap_or_else(|| panic!("no PIE xstats in {tc}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    let n = |name: &str| -> u64 {
        let i = w.iter().position(|x| *x == name).unwrap();
        w[i + 1].parse().unwrap()
    };
    (n("dropped"), n("ecn_mark"))
}

/// With `ecn` and ECN-capable flows, PIE marks instead of dropping while
/// its probability is at most 10 %. The start overshoots (no update before
/// the timer's first run at 500 ms, and marks do not shorten the queue):
/// the probability passes 10 % and ECN-capable frames are dropped until it
/// decays; once settled (the last 5 s) the decisions are marks.
#[test]
fn pie_marks_ecn_capable_flows_while_the_probability_is_low() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/pie_cubic.toml");
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("root pie\"", "root pie ecn\"")
        .replace("count = 4\n", "count = 4\necn = true\n");
    let text = format!("{text}\n[[snapshot]]\nat = \"15s\"\n");
    let r = sim::run(&Scenario::from_toml(&text).unwrap()).unwrap();
    let l2r = &r.directions[0];
    let (p50, _, _) = rtt_ms(&r);
    let (d15, m15) = drops_and_marks(&r.snapshots[0].directions[0].tc);
    let (dropped, marks) = drops_and_marks(&l2r.tc);
    println!(
        "{}\nat 15 s: dropped {d15} marked {m15}; at 20 s: dropped {dropped} marked {marks}; \
         CE delivered {}; ping p50 {p50:.2} ms",
        l2r.tc, l2r.ce_marks
    );
    let (d, m) = (dropped - d15, marks - m15);
    assert!(m > 30, "marks in the last 5 s: {m}");
    assert!(d * 5 < m, "{d} drops against {m} marks in the last 5 s");
    // Every mark counted reaches the receiver but those still queued.
    assert!(
        l2r.ce_marks <= marks && marks - l2r.ce_marks < 20,
        "{} of {marks} marks delivered",
        l2r.ce_marks
    );
    assert_eq!(l2r.drops.get("pie_early").copied().unwrap_or(0), dropped);
}
