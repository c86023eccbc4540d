//! choke through the real path: an unresponsive UDP flood beside four
//! CUBIC flows. CHOKe's flow match (net/sched/sch_choke.c
//! `choke_match_random`) falls mostly on the flood, which holds most of
//! the queue, so the flood keeps far less of the link than under a pfifo
//! of the same limit or under RED with the same band.

use super::load;
use bloatbox::sim::{self, Scenario};

const CHOKE: &str = "choke limit 300 min 20 max 60 bandwidth 10mbit";

/// The scenario with choke's line replaced by `qdisc`.
fn with(qdisc: &str) -> Scenario {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/choke_flood.toml");
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(CHOKE));
    Scenario::from_toml(&text.replace(CHOKE, qdisc)).unwrap()
}

/// The flood's and the TCP flows' throughput, bits/s.
fn shares(r: &sim::SimReport) -> (f64, f64) {
    let flood = r.flow("flood").unwrap().throughput_bps;
    let tcp: f64 = r
        .flows
        .iter()
        .filter(|f| f.kind == "tcp")
        .map(|f| f.throughput_bps)
        .sum();
    (flood, tcp)
}

/// choke's xstats from the direction's `tc -s` text: marked, early,
/// pdrop, matched.
fn xstats(tc: &str) -> (u64, u64, u64, u64) {
    let line = tc
        .lines()
        .find(|l| l.trim_start().starts_with("marked "))
        .unwrap_or_else(|| panic!("no choke xstats in {tc}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    let n = |i: usize| w[i].parse::<u64>().unwrap();
    (n(1), n(3), n(5), n(9))
}

/// At seed 17 the flood keeps 4.70 Mbit/s under choke (4703 of its 8001
/// frames delivered: 3278 dropped, nearly all by matches, 1796 of which
/// drop two frames each), 7.56 under a pfifo of 300 frames (tail drops
/// fall on each flow as it arrives, and only TCP backs off) and 7.28
/// under RED with the same band in bytes (its early drops, too, fall on
/// every flow alike). The TCP flows get 5.31, 2.44 and 2.71 Mbit/s. The
/// average is held near min, so the queue stays short (median one-way
/// delay 30 ms against the pfifo's 266 ms).
#[test]
fn choke_cuts_the_floods_share_far_below_pfifos_and_reds() {
    let choke = sim::run(&load("choke_flood.toml")).unwrap();
    let d = &choke.directions[0];
    println!("{}\n{}", choke.table(), d.tc);
    let pfifo = sim::run(&with("pfifo limit 300")).unwrap();
    println!("{}", pfifo.table());
    let red = sim::run(&with(
        "red limit 300000 min 20000 max 60000 avpkt 1000 bandwidth 10mbit",
    ))
    .unwrap();
    println!("{}", red.table());
    let (c_flood, c_tcp) = shares(&choke);
    let (p_flood, p_tcp) = shares(&pfifo);
    let (r_flood, r_tcp) = shares(&red);
    assert!(c_flood < 5.5e6, "choke leaves the flood {c_flood}");
    assert!(
        p_flood > 7e6 && r_flood > 7e6,
        "pfifo {p_flood}, red {r_flood}"
    );
    assert!(c_flood < 0.7 * p_flood.min(r_flood));
    assert!(
        c_tcp > 2.0 * p_tcp && c_tcp > 1.9 * r_tcp,
        "tcp: choke {c_tcp}, pfifo {p_tcp}, red {r_tcp}"
    );
    assert!(d.utilisation > 0.95, "{}", d.utilisation);

    // The counters agree: each match drops two frames (`choke_matched`),
    // early drops are RED's, the limit is never reached, nothing marked
    // (no flow is ECN-capable).
    let (marked, early, pdrop, matched) = xstats(&d.tc);
    assert!(matched > 1000, "{matched}");
    assert_eq!(d.drops.get("choke_matched").copied(), Some(2 * matched));
    let red_drops = d.drops.get("red_early").copied().unwrap_or(0)
        + d.drops.get("red_forced").copied().unwrap_or(0);
    assert_eq!((red_drops, pdrop, marked), (early, 0, 0));
    // The matches fall on the flood: more than 85 % of the drops are its.
    let flood = choke.flow("flood").unwrap();
    let drops: u64 = d.drops.values().sum();
    let flood_drops = flood.forward.dropped_pkts;
    assert!(flood_drops * 100 > drops * 85, "{flood_drops} of {drops}");
    // The queue stays near min: well under the pfifo's.
    let owd = |r: &sim::SimReport| r.directions[0].owd.as_ref().unwrap().p50;
    assert!(
        owd(&choke) * 4 < owd(&pfifo),
        "{} vs {}",
        owd(&choke),
        owd(&pfifo)
    );
    assert_eq!(
        sim::run(&load("choke_flood.toml")).unwrap().trace_hash,
        choke.trace_hash
    );
}
