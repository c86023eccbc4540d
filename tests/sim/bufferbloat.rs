//! The point of the tool, at 100 Mbit/s with eight CUBIC bulk flows and a
//! sparse ping (10 ms base RTT, 20 s): behind pfifo_fast (txqueuelen 1000)
//! the ping waits for the whole queue (~120 ms); behind fq_codel and SFQ it
//! stays near the base RTT; and fq_codel above a deep TX ring without BQL
//! is bloated again. Prints a small table.

use super::load;
use bloatbox::sim::{self, SimReport};

/// Ping RTT p50 (ms) of the loaded run and of the same scenario without
/// the bulk flows.
struct Row {
    qdisc: String,
    base_ms: f64,
    p50_ms: f64,
    p99_ms: f64,
    util: f64,
    drops: u64,
    marks: u64,
}

fn measure(name: &str) -> (Row, SimReport) {
    let sc = load(name);
    let mut idle = sc.clone();
    idle.tcp.clear();
    let base = sim::run(&idle).unwrap();
    let r = sim::run(&sc).unwrap();
    let rtt = |rep: &SimReport| rep.flow("ping").and_then(|f| f.rtt).expect("ping replies");
    let row = Row {
        qdisc: r.directions[0].qdisc.kind.clone(),
        base_ms: rtt(&base).p50 as f64 / 1e6,
        p50_ms: rtt(&r).p50 as f64 / 1e6,
        p99_ms: rtt(&r).p99 as f64 / 1e6,
        util: r.directions[0].utilisation,
        drops: r.directions[0].drops.values().sum(),
        marks: r.directions[0].ce_marks,
    };
    (row, r)
}

fn print(rows: &[Row]) {
    println!(
        "{:<12} {:>9} {:>9} {:>9} {:>11} {:>7} {:>7} {:>6}",
        "qdisc", "base ms", "p50 ms", "p99 ms", "inflation", "util", "drops", "marks"
    );
    for r in rows {
        println!(
            "{:<12} {:>9.2} {:>9.2} {:>9.2} {:>9.2}ms {:>6.1}% {:>7} {:>6}",
            r.qdisc,
            r.base_ms,
            r.p50_ms,
            r.p99_ms,
            r.p50_ms - r.base_ms,
            r.util * 100.0,
            r.drops,
            r.marks
        );
    }
}

#[test]
fn pfifo_fast_inflates_ping_by_the_queue_drain_time() {
    let (row, r) = measure("bloat_pfifo_fast.toml");
    println!("{}", r.table());
    print(std::slice::from_ref(&row));
    // 1000 frames of 1514 B at 100 Mbit/s drain in 121 ms.
    assert!(
        row.p50_ms - row.base_ms > 60.0,
        "inflation {:.2} ms",
        row.p50_ms - row.base_ms
    );
    assert!(
        (9.9..11.0).contains(&row.base_ms),
        "base {:.2} ms",
        row.base_ms
    );
    assert!(row.util > 0.95, "utilisation {:.3}", row.util);
    // The queue is on the way there, not on the way back.
    let [there, back] = r.flow("ping").unwrap().ping_owd.unwrap();
    assert!(there.unwrap().p50 > 60_000_000, "{there:?}");
    assert!(back.unwrap().p99 < 5_500_000, "{back:?}");
}

#[test]
fn fq_codel_and_sfq_keep_ping_near_base_rtt_but_not_above_a_deep_ring() {
    let mut rows = Vec::new();
    for name in [
        "bloat_pfifo_fast.toml",
        "bloat_fq_codel.toml",
        "bloat_sfq.toml",
        "bloat_ring_nobql.toml",
    ] {
        let (mut row, r) = measure(name);
        println!("{}", r.table());
        if name == "bloat_ring_nobql.toml" {
            row.qdisc += "+ring";
        }
        rows.push(row);
    }
    print(&rows);
    for row in &rows[1..3] {
        let inflation = row.p50_ms - row.base_ms;
        assert!(
            inflation < 10.0,
            "{}: inflation {inflation:.2} ms",
            row.qdisc
        );
        assert!(
            row.util > 0.90,
            "{}: utilisation {:.3}",
            row.qdisc,
            row.util
        );
    }
    // A deep ring without BQL moves the queue below fq_codel.
    let ring = &rows[3];
    let inflation = ring.p50_ms - ring.base_ms;
    assert!(
        inflation > 60.0,
        "fq_codel above a deep ring: {inflation:.2} ms"
    );
}
