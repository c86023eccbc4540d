//! SFB through the real path (tests/scenarios/sfb_flood.toml): an
//! unresponsive 100 Mbit/s UDP flood beside four ECN-capable CUBIC flows
//! on a 20 Mbit/s link. SFB (net/sched/sch_sfb.c `sfb_enqueue`) holds the
//! flood to about a fair fifth of the link by early drops and the penalty
//! box, while the TCP flows are marked and keep the rest; a pfifo of the
//! same limit gives the flood the link.

use super::load;
use bloatbox::qdisc::{QdiscDump, Xstats};
use bloatbox::sim::{self, Scenario, SimReport};

/// SFB's xstats in the direction's dump.
fn xstats(q: &QdiscDump) -> bloatbox::qdisc::sfb::SfbXstats {
    match q.xstats {
        Some(Xstats::Sfb(x)) => x,
        ref other => panic!("no sfb xstats: {other:?}"),
    }
}

/// The TCP flows' total goodput and the flood's throughput, Mbit/s.
fn shares(r: &SimReport) -> (f64, f64) {
    let tcp: f64 = (0..4)
        .map(|i| r.flow(&format!("ecn.{i}")).unwrap().goodput_bps.unwrap())
        .sum();
    (tcp / 1e6, r.flow("flood").unwrap().throughput_bps / 1e6)
}

/// Figures at seed 42: the TCP flows' goodput 15.3 Mbit/s, the flood's
/// throughput 4.6 Mbit/s over its 7 s (its fair fifth is 4); some 81000
/// early drops, 400 penalty drops and 2000 bucket drops (the TCP flows'
/// slow start past `max` 25 frames in their bins, and the flood's), 129
/// marks, no drop of the child; one-way delay p50 23 ms (the bins' 20
/// frames of target). Through the pfifo the flood takes 19 Mbit/s.
#[test]
fn sfb_holds_a_flood_to_a_fair_share_and_marks_the_tcp_flows() {
    let r = sim::run(&load("sfb_flood.toml")).unwrap();
    let d = &r.directions[0];
    println!("{}\n{}", r.table(), d.tc);
    let x = xstats(&d.qdisc);
    let (tcp, flood) = shares(&r);
    assert!(tcp > 12.0, "TCP {tcp} Mbit/s");
    assert!(flood < 6.0, "flood {flood} Mbit/s");
    assert!(d.utilisation > 0.95, "{}", d.utilisation);
    // Every SFB drop has its reason: earlydrop as congested, the limits
    // and the penalty box as overlimit; the child never drops.
    let reason = |n: &str| d.drops.get(n).copied().unwrap_or(0);
    assert_eq!(reason("sfb_congested"), u64::from(x.earlydrop));
    assert_eq!(
        reason("sfb_overlimit"),
        u64::from(x.penaltydrop + x.bucketdrop + x.queuedrop)
    );
    assert_eq!(d.qdisc.stats.overlimits, reason("sfb_overlimit"));
    assert_eq!((x.childdrop, x.queuedrop), (0, 0));
    assert!(x.earlydrop > 50_000, "{x:?}");
    assert!(
        x.penaltydrop > 0,
        "the flood reached the penalty box: {x:?}"
    );
    // The flood's drops are nearly all of them; the TCP flows are marked.
    let flood = r.flow("flood").unwrap();
    let tcp_drops: u64 = (0..4)
        .map(|i| r.flow(&format!("ecn.{i}")).unwrap().forward.dropped_pkts)
        .sum();
    assert!(flood.forward.dropped_pkts > 50 * tcp_drops, "{tcp_drops}");
    assert!(x.marked > 50, "{x:?}");
    assert!(d.ce_marks <= u64::from(x.marked) && d.ce_marks + 10 > u64::from(x.marked));
    let p50 = d.owd.as_ref().unwrap().p50;
    assert!(p50 < 40_000_000, "owd p50 {p50}");
    assert!(d.tc.contains("  earlydrop "), "{}", d.tc);
    assert_eq!(
        sim::run(&load("sfb_flood.toml")).unwrap().trace_hash,
        r.trace_hash
    );

    // The same load through a pfifo of 200 frames: the flood takes the
    // link, the TCP flows starve behind its standing queue.
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/sfb_flood.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let fifo =
        Scenario::from_toml(&text.replace("handle 1: sfb limit 200", "pfifo limit 200")).unwrap();
    let r = sim::run(&fifo).unwrap();
    println!("{}", r.table());
    let (tcp, flood) = shares(&r);
    assert!(flood > 15.0 && tcp < 5.0, "pfifo: TCP {tcp}, flood {flood}");
}
