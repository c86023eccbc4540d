//! CAKE through the real path with TCP (net/sched/sch_cake.c): host
//! isolation shares the link between hosts before flows, diffserv4 keeps
//! an EF probe's latency while CS1 bulk fills the link, and the ACK filter
//! thins the ACKs of downloads on an asymmetric link. Each test prints the
//! figures it measured.

use super::load;
use bloatbox::sim::{self, Scenario, SimReport};

/// The scenario `name` with `from` replaced by `to` in its text.
fn variant(name: &str, from: &str, to: &str) -> Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(name);
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{from} not in {name}");
    Scenario::from_toml(&text.replace(from, to)).unwrap()
}

/// Goodput (bit/s) summed over the flows named `name` or `name.N`.
fn goodput(r: &SimReport, name: &str) -> f64 {
    r.flows
        .iter()
        .filter(|f| f.name == name || f.name.starts_with(&format!("{name}.")))
        .filter_map(|f| f.goodput_bps)
        .sum()
}

#[test]
fn triple_isolate_shares_between_hosts_and_flows_between_flows() {
    let hosts = sim::run(&load("cake_hosts.toml")).unwrap();
    println!("{}\n{}", hosts.table(), hosts.directions[0].tc);
    let (a, b) = (goodput(&hosts, "a"), goodput(&hosts, "b"));
    println!("triple-isolate: host a {a:.0} bit/s, host b (8 flows) {b:.0} bit/s");
    let share = a / (a + b);
    assert!((0.45..=0.55).contains(&share), "host a's share {share:.3}");
    assert!(a + b > 16e6, "the link is used: {:.0}", a + b);

    let flows = sim::run(&variant("cake_hosts.toml", "triple-isolate", "flows")).unwrap();
    let (a, b) = (goodput(&flows, "a"), goodput(&flows, "b"));
    println!(
        "flows: host a {a:.0} bit/s, host b (8 flows) {b:.0} bit/s, ratio {:.2}",
        b / a
    );
    let ratio = b / a;
    assert!(
        (7.2..=8.8).contains(&ratio),
        "b:a {ratio:.2}, not 8:1 within 10 %"
    );
}

#[test]
fn diffserv4_keeps_the_ef_probe_fast_under_cs1_bulk() {
    let r = sim::run(&load("cake_diffserv.toml")).unwrap();
    let l2r = &r.directions[0];
    println!("{}\n{}", r.table(), l2r.tc);
    let ef = r.flows.iter().find(|f| f.name == "ef").unwrap();
    let rtt = ef.rtt.as_ref().expect("the probe got replies");
    println!(
        "EF probe RTT: min {} p99 {} max {} ns over {} replies",
        rtt.min, rtt.p99, rtt.max, rtt.count
    );
    // Base RTT 20 ms plus serialisation; the probe may wait behind one
    // bulk frame at 19 Mbit/s (0.64 ms), never behind the bulk queue.
    assert!(rtt.count > 100, "{} replies", rtt.count);
    assert!(rtt.max < 23_000_000, "EF max RTT {} ns", rtt.max);
    // The bulk fills the link, and its queue is CAKE's Bulk tin.
    assert!(l2r.utilisation > 0.85, "{}", l2r.utilisation);
    let tins = match &l2r.qdisc.xstats {
        Some(bloatbox::qdisc::Xstats::Cake(x)) => x.tins.clone(),
        other => panic!("no cake xstats: {other:?}"),
    };
    // diffserv4 dumps Bulk, Best Effort, Video, Voice.
    assert!(
        tins[0].sent_packets > 10_000,
        "bulk {}",
        tins[0].sent_packets
    );
    assert!(
        tins[3].sent_packets as u64 >= rtt.count,
        "voice {}",
        tins[3].sent_packets
    );
    assert!(tins[0].peak_delay_us > 5 * tins[3].peak_delay_us.max(1));
}

#[test]
fn ack_filter_on_an_asymmetric_link() {
    let with = sim::run(&load("cake_ack_filter.toml")).unwrap();
    let without = sim::run(&variant(
        "cake_ack_filter.toml",
        "besteffort ack-filter\"",
        "besteffort no-ack-filter\"",
    ))
    .unwrap();
    let r2l = &with.directions[1];
    println!("{}\n{}", with.table(), r2l.tc);
    let ack_drops = r2l.drops.get("cake_ack_filter").copied().unwrap_or(0);
    let (g_with, g_without) = (goodput(&with, "down"), goodput(&without, "down"));
    println!(
        "download goodput: {g_with:.0} bit/s with ack-filter ({ack_drops} ACKs filtered), \
         {g_without:.0} bit/s without"
    );
    // At 1 Mbit/s the ACKs of 18 Mbit/s of data about fill the way back;
    // the filter finds a redundant ACK only where one flow has three
    // queued (or, aggressive, two in a row).
    assert!(ack_drops > 100, "{ack_drops} ACKs filtered");
    assert_eq!(without.directions[1].drops.get("cake_ack_filter"), None);
    assert!(g_with > g_without, "{g_with:.0} vs {g_without:.0}");
    let aggressive = sim::run(&variant(
        "cake_ack_filter.toml",
        "besteffort ack-filter\"",
        "besteffort ack-filter-aggressive\"",
    ))
    .unwrap();
    let agg_drops = aggressive.directions[1]
        .drops
        .get("cake_ack_filter")
        .copied()
        .unwrap_or(0);
    let g_agg = goodput(&aggressive, "down");
    println!("ack-filter-aggressive: {g_agg:.0} bit/s ({agg_drops} ACKs filtered)");
    assert!(agg_drops > ack_drops, "{agg_drops} vs {ack_drops}");
}
