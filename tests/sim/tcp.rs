//! TCP through the real path: finite transfers complete with every byte
//! acknowledged, over IPv4 and IPv6, in both directions.

use super::load;
use bloatbox::sim;

#[test]
fn finite_transfers_complete_in_both_directions() {
    let r = sim::run(&load("tcp_transfers.toml")).unwrap();
    println!("{}", r.table());
    let v4 = r.flow("v4").unwrap();
    let v6 = r.flow("v6").unwrap();
    let back = r.flow("back").unwrap();
    assert_eq!(v4.tcp.unwrap().acked_bytes, 1 << 20);
    assert_eq!(v6.tcp.unwrap().acked_bytes, 2_000_000);
    // Delayed ACKs: about one ACK per two segments.
    let segs = v4.forward.delivered_pkts;
    assert!(
        v4.reverse.sent_pkts * 10 < segs * 7,
        "{} acks for {segs} segments",
        v4.reverse.sent_pkts
    );
    // Without delayed ACKs: one ACK per segment.
    assert_eq!(v6.reverse.sent_pkts, v6.forward.delivered_pkts);
    assert_eq!(back.dir, "right_to_left");
    assert!(back.goodput_bps.unwrap() > 30e6, "{:?}", back.goodput_bps);
    // A transfer of 1 MiB at 50 Mbit/s with 40 ms RTT takes well under 1 s
    // after slow start; the flow's last delivery says when it ended.
    let done = v4.forward.last_delivery.unwrap().nanos();
    assert!(done < 1_500_000_000, "v4 finished at {done} ns");
    assert_eq!(r.directions[0].ce_marks, 0);
}

#[test]
fn ecn_capable_flows_get_marks_instead_of_drops() {
    let r = sim::run(&load("ecn_fq_codel.toml")).unwrap();
    println!("{}", r.table());
    let l2r = &r.directions[0];
    assert!(l2r.ce_marks > 100, "marks {}", l2r.ce_marks);
    let codel_drops = l2r.drops.get("codel").copied().unwrap_or(0);
    assert!(
        codel_drops * 10 < l2r.ce_marks,
        "{codel_drops} drops vs {} marks",
        l2r.ce_marks
    );
    for f in r.flows.iter().filter(|f| f.kind == "tcp") {
        let tcp = f.tcp.unwrap();
        assert!(tcp.stats.ecn_reductions > 0, "{}: {:?}", f.name, tcp.stats);
        assert!(f.forward.ce_marks > 0, "{}", f.name);
    }
    assert!(l2r.utilisation > 0.9, "{}", l2r.utilisation);
    let ping = r.flow("ping").unwrap().rtt.unwrap();
    assert!(ping.p50 < 12_000_000, "ping p50 {} ns", ping.p50);
    // The same flows without ECN are dropped instead.
    let mut plain = load("ecn_fq_codel.toml");
    for t in &mut plain.tcp {
        t.get_mut().ecn = false;
    }
    let p = sim::run(&plain).unwrap();
    assert_eq!(p.directions[0].ce_marks, 0);
    assert!(p.directions[0].drops.get("codel").copied().unwrap_or(0) > 100);
}

#[test]
fn htb_shaper_with_fq_codel_leaf_sets_rate_and_keeps_latency() {
    let r = sim::run(&load("htb_shaper.toml")).unwrap();
    println!("{}\n{}", r.table(), r.directions[0].tc);
    let goodput: f64 = r.flows.iter().filter_map(|f| f.goodput_bps).sum();
    // 20 Mbit/s of frames, about 19 Mbit/s of TCP payload.
    assert!((17e6..20e6).contains(&goodput), "goodput {goodput}");
    let ping = r.flow("ping").unwrap().rtt.unwrap();
    assert!(ping.p50 < 16_000_000, "ping p50 {} ns", ping.p50);
    let tc = &r.directions[0].tc;
    assert!(tc.contains("qdisc htb 1: root"), "{tc}");
    assert!(tc.contains("qdisc fq_codel 10: parent 1:10"), "{tc}");
    assert!(tc.contains("class htb 1:10 root leaf 10:"), "{tc}");
}

#[test]
fn tcp_survives_netem_loss_corruption_and_duplication() {
    let sc = load("netem_lossy.toml");
    let r = sim::run(&sc).unwrap();
    println!("{}", r.table());
    let l2r = &r.directions[0];
    let transfer = r.flow("transfer").unwrap();
    assert_eq!(transfer.tcp.unwrap().acked_bytes, 5 << 20);
    assert!(transfer.tcp.unwrap().stats.retransmits > 0);
    // About 1% of the frames are lost on the wire, 0.5% corrupted.
    let lost = l2r.drops.get("wire_loss").copied().unwrap_or(0) as f64;
    let rate = lost / l2r.frames_in as f64;
    assert!((0.006..0.014).contains(&rate), "wire loss {rate}");
    let corrupt = l2r.corrupt_discarded as f64 / l2r.frames_in as f64;
    assert!((0.002..0.008).contains(&corrupt), "corrupt {corrupt}");
    // Duplicates arrive after the original and match nothing.
    assert!(r.unmatched_frames > 0);
    // Jittered ACK path: one-way delay spreads around 15 ms.
    let owd = r.directions[1].owd.unwrap();
    assert!(owd.min >= 14_000_000 && owd.max <= 16_100_000, "{owd:?}");
    assert_eq!(sim::run(&sc).unwrap().trace_hash, r.trace_hash);
}
