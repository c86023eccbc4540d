//! HFSC through the real path (tests/scenarios/hfsc_voip.toml): the upper
//! limit of class 1:1 holds four CUBIC flows to 20 Mbit/s of a 100 Mbit/s
//! link, their queue builds in 1:20's pfifo, and the VoIP flow in 1:10,
//! with a real-time curve of 200 bytes within 5 ms, keeps its one-way delay
//! near the link's 5 ms (net/sched/sch_hfsc.c: `hfsc_dequeue` serves an
//! eligible real-time class before link-sharing).

use super::load;
use bloatbox::sim;

#[test]
fn voip_keeps_low_delay_beside_bulk_tcp_under_an_upper_limit() {
    let r = sim::run(&load("hfsc_voip.toml")).unwrap();
    let l2r = &r.directions[0];
    println!("{}\n{}", r.table(), l2r.tc);
    let goodput: f64 = r.flows.iter().filter_map(|f| f.goodput_bps).sum();
    // 20 Mbit/s of frames for TCP and VoIP together; about 19 of payload.
    assert!((17e6..20e6).contains(&goodput), "goodput {goodput}");
    let voip = r.flow("voip").unwrap();
    let bulk_owd = r.flow("bulk.0").unwrap().owd_mean_ns.unwrap();
    let voip_owd = voip.owd_mean_ns.unwrap();
    // The bulk class's pfifo holds up to 300 frames: tens of ms at 20 Mbit/s.
    assert!(bulk_owd > 30e6, "bulk owd {bulk_owd}");
    // VoIP: the 5 ms wire delay, its own 200 bytes and at most a bulk
    // frame ahead on the wire and the 5 ms of its deadline.
    assert!(voip_owd < 6e6, "voip owd mean {voip_owd}");
    assert!(
        voip.owd_max_ns < 11_000_000,
        "voip owd max {}",
        voip.owd_max_ns
    );
    assert_eq!(voip.forward.dropped_pkts, 0);
    let tc = &l2r.tc;
    assert!(
        tc.contains("qdisc hfsc 1: root refcnt 2 default 20 "),
        "{tc}"
    );
    assert!(
        tc.contains(
            "class hfsc 1:10 parent 1:1 rt m1 320Kbit d 5ms m2 100Kbit ls m1 0bit d 0us m2 1Mbit "
        ),
        "{tc}"
    );
    assert!(
        tc.contains("class hfsc 1:20 parent 1:1 leaf 20: ls m1 0bit d 0us m2 19Mbit "),
        "{tc}"
    );
    // Most of VoIP's bytes went by the real-time criterion.
    let line = tc
        .lines()
        .skip_while(|l| !l.starts_with("class hfsc 1:10 "))
        .find(|l| l.starts_with(" period "))
        .unwrap();
    let w: Vec<&str> = line.split_whitespace().collect();
    let at = |k: &str| {
        w.iter()
            .position(|x| *x == k)
            .map(|i| w[i + 1].parse::<u64>().unwrap())
    };
    let (work, rtwork) = (at("work").unwrap(), at("rtwork").unwrap());
    assert!(rtwork * 10 >= work * 9, "{line}");
}
