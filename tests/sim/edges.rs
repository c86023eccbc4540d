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

/// `count > 1` with `interval = "0"`: the packets arrive at one instant,
/// back to back (the first finds the qdisc empty and bypasses it, the
/// others queue), and leave one serialization time apart: 1000 bytes at
/// 10 Mbit/s is 800 µs.
#[test]
fn simultaneous_packets_arrive_at_one_instant() {
    let sc = Scenario::from_toml(
        "seed = 1\nduration = \"100ms\"\n[link]\nrate = \"10mbit\"\ndelay = \"0\"\n\
         [[packet]]\ntime = \"1ms\"\nsize = 1000\ncount = 5\ninterval = \"0\"\n",
    )
    .unwrap();
    let (r, text) = super::traced(&sc);
    let events: Vec<(String, u64)> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["dir"] == "left_to_right")
        .map(|v| {
            (
                v["ev"].as_str().unwrap().to_string(),
                v["t"].as_u64().unwrap(),
            )
        })
        .collect();
    let at = |kind: &str| -> Vec<u64> {
        events
            .iter()
            .filter(|(k, _)| k == kind)
            .map(|(_, t)| (t - 1_000_000) / 1000)
            .collect()
    };
    assert_eq!(at("enqueue"), vec![0; 5]);
    assert_eq!(at("deliver"), vec![800, 1600, 2400, 3200, 4000]);
    assert_eq!(r.directions[0].frames_out, 5);
}

/// `[[snapshot]]`: statistics at chosen instants, after everything at
/// that instant. 20 frames of 1000 bytes at 1 ms into a 1-slot ring
/// without BQL and a pfifo of 10 at 10 Mbit/s: the first bypasses into
/// the ring, the second bypasses into the stopped queue (the requeue
/// slot), which takes one of the pfifo's ten places (`dev_requeue_skb`
/// counts it in the qdisc's qlen), so nine queue and nine are dropped. At
/// 5 ms five have left (800 µs each, the fifth at 5 ms exactly) and the
/// ring took the sixth.
#[test]
fn snapshots_show_the_qdisc_at_their_instants() {
    let sc = Scenario::from_toml(
        "seed = 1\nduration = \"100ms\"\n\
         [link]\nrate = \"10mbit\"\ndelay = \"0\"\ntx_ring = 1\nbql = false\n\
         tc = [\"tc qdisc add dev left root pfifo limit 10\"]\n\
         [link.right_to_left]\nbql = true\n\
         [[packet]]\ntime = \"1ms\"\nsize = 1000\ncount = 20\ninterval = \"0\"\n\
         [[snapshot]]\nat = \"5ms\"\n[[snapshot]]\nat = \"1ms\"\n[[snapshot]]\nat = \"100ms\"\n",
    )
    .unwrap();
    let r = sim::run(&sc).unwrap();
    let at: Vec<u64> = r.snapshots.iter().map(|s| s.at_ns / 1_000_000).collect();
    assert_eq!(at, vec![1, 5, 100], "in time order");
    let counts = |i: usize| {
        let s = &r.snapshots[i].directions[0].qdisc.stats;
        (s.packets, s.drops, s.requeues, s.qlen, s.backlog)
    };
    assert_eq!(counts(0), (2, 9, 1, 10, 10_000));
    assert_eq!(counts(1), (6, 9, 1, 5, 5_000));
    assert_eq!(counts(2), (11, 9, 1, 0, 0));
    let text = r.snapshots[0].tc_text();
    assert!(
        text.contains("# left_to_right (left) at 1ms\nqdisc pfifo 8001: root"),
        "{text}"
    );
    assert!(
        text.contains(" Sent 2000 bytes 2 pkt (dropped 9, overlimits 0 requeues 1)"),
        "{text}"
    );
    assert!(text.contains(" backlog 10000b 10p requeues 1"), "{text}");
    // The last one is the end of the run: the report's own dump.
    assert_eq!(r.snapshots[2].directions[0].tc, r.directions[0].tc);
    // BQL is off on the left device; the right one has it, idle:
    // nothing in flight.
    assert_eq!(r.snapshots[0].directions[0].bql_limit_bytes, None);
    assert_eq!(r.directions[0].bql_limit_bytes, None);
    assert_eq!(r.directions[1].bql_inflight_bytes, Some(0));
    assert!(r.snapshots[1].directions[1].bql_limit_bytes.is_some());
    // A snapshot after the end is refused at its line.
    let e = Scenario::from_toml("seed = 1\nduration = \"1s\"\n\n[[snapshot]]\nat = \"2s\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 4") && e.contains("snapshot[0].at"), "{e}");
}

/// tests/scenarios/noop_child.toml: a TBF whose child was deleted holds
/// the noop qdisc, which drops every packet (as on Linux 6.18: three
/// pings, `dropped 3`, 100 % loss); nothing leaves and each drop has its
/// reason. Without the delete the same three packets cross.
#[test]
fn a_deleted_tbf_child_drops_every_packet() {
    let r = sim::run(&load("noop_child.toml")).unwrap();
    let s = &r.directions[0].qdisc.stats;
    assert_eq!((s.packets, s.drops, s.qlen), (0, 3, 0));
    assert_eq!(r.directions[0].drops.get("noop"), Some(&3));
    assert_eq!(r.directions[0].frames_out, 0);
    let c = &r.flows[0].forward;
    assert_eq!((c.sent_pkts, c.delivered_pkts, c.dropped_pkts), (3, 0, 3));
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/noop_child.toml"),
    )
    .unwrap();
    let line = "  \"tc qdisc del dev left parent 1:1 handle 10:\",\n";
    assert!(text.contains(line));
    let r = sim::run(&Scenario::from_toml(&text.replace(line, "")).unwrap()).unwrap();
    assert_eq!(r.directions[0].qdisc.stats.packets, 3);
    assert_eq!(r.flows[0].forward.delivered_pkts, 3);
}
