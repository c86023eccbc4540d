//! Corner cases run to completion with sensible numbers: unlimited rate,
//! zero delay, flows starting after the end, tiny windows and transfers, an
//! overloaded byte FIFO, and a scenario without traffic; TCP over a link
//! that takes no time at all ends with an error instead of spinning.

use super::load;
use bloatbox::sim::{self, Scenario};

#[test]
fn corner_cases_complete() {
    let sc = load("edge_cases.toml");
    let silent = sc.silent_sources();
    assert_eq!(silent.len(), 1, "{silent:?}");
    assert!(
        silent[0].contains("tcp[0] sends nothing: start 2s"),
        "{silent:?}"
    );
    let r = sim::run(&sc).unwrap();
    println!("{}", r.table());
    let late = r.flow("late").unwrap();
    assert_eq!(late.forward.sent_pkts, 0);
    let tiny = r.flow("tiny").unwrap();
    assert_eq!(tiny.forward.sent_pkts, 1);
    assert_eq!(tiny.tcp.unwrap().acked_bytes, 1);
    // 4 segments in flight at most; the ACKs share a 1 Mbit/s path with a
    // 5 Mbit/s flood, so some are lost, but the flow moves.
    let rwnd = r.flow("rwnd").unwrap();
    assert!(rwnd.tcp.unwrap().acked_bytes > 4000, "{:?}", rwnd.tcp);
    let r2l = &r.directions[1];
    assert!(r2l.drops["queue_full"] > 100, "{:?}", r2l.drops);
    assert!(
        r2l.utilisation > 0.95 && r2l.utilisation < 1.01,
        "{}",
        r2l.utilisation
    );
    assert_eq!(r2l.qdisc.kind, "bfifo");
}

#[test]
fn no_traffic_no_events() {
    let sc = Scenario::from_toml("seed = 1\nduration = \"10s\"\n").unwrap();
    let r = sim::run(&sc).unwrap();
    assert_eq!(r.trace_events, 0);
    assert!(r.flows.is_empty());
    assert_eq!(r.directions[0].qdisc.kind, "pfifo_fast");
    assert!(r.table().contains("left_to_right: pfifo_fast"));
}

/// TCP over a link that takes no time (no rate limit, no delay) would send,
/// be acked and send again forever without the clock moving: the run ends
/// with an error that says so instead of spinning.
#[test]
fn tcp_over_a_link_that_takes_no_time_is_reported_not_spun() {
    let sc = Scenario::from_toml(
        "seed = 1\nduration = \"1ms\"\n[link]\nrate = \"unlimited\"\ndelay = \"0\"\n[[tcp]]\ncount = 1\n",
    )
    .unwrap();
    let e = sim::run(&sc).unwrap_err().to_string();
    assert!(
        e.contains("stalled at 0 ns") && e.contains("give the link a rate or a delay"),
        "{e}"
    );
}
