//! GSO super-frames through the link (`[[packet]] segments`): a TAP with
//! offload hands over TCP super-frames, and the lane passes them whole or
//! segments them as the live driver does. A whole one is one packet in a
//! qdisc's queue and as many packets as it has segments in its Sent
//! counters (`bstats_update`, include/net/sch_generic.h); `tap.forward_gro`
//! lets HTB and TBF see them whole, as a forwarding router with GRO does,
//! TBF segmenting one its bucket cannot pass (`tbf_segment`,
//! net/sched/sch_tbf.c). Counters and times worked out by hand.

use super::{load, traced};
use bloatbox::qdisc::QdiscStats;
use bloatbox::sim::{Scenario, SimReport};

/// A scenario file with `from` replaced by `to` (which must occur).
fn variant(name: &str, from: &str, to: &str) -> Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(name);
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{name} has no {from:?}");
    Scenario::from_toml(&text.replacen(from, to, 1)).unwrap_or_else(|e| panic!("{e}"))
}

/// Left-to-right root qdisc counters at snapshot `k` (None: the end):
/// (bytes sent, packets sent, drops, backlog bytes, qlen).
fn root(r: &SimReport, k: Option<usize>) -> (u64, u64, u64, u64, u32) {
    let q = match k {
        Some(k) => &r.snapshots[k].directions[0].qdisc,
        None => &r.directions[0].qdisc,
    };
    let s: &QdiscStats = &q.stats;
    (s.bytes, s.packets, s.drops, s.backlog, s.qlen)
}

/// Times (ns) of the left-to-right trace lines of kind `ev`.
fn times(text: &str, ev: &str) -> Vec<u64> {
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["dir"] == "left_to_right" && v["ev"] == ev)
        .map(|v| v["t"].as_u64().unwrap())
        .collect()
}

/// Flow `i`'s (sent, delivered, dropped) packets.
fn flow(r: &SimReport, i: usize) -> (u64, u64, u64) {
    let c = &r.flows[i].forward;
    (c.sent_pkts, c.delivered_pkts, c.dropped_pkts)
}

/// tests/scenarios/forward_gro.toml: eight super-frames of 10 × 1514
/// bytes (15,140 on the wire) at 1 ms into HTB 100 Mbit/s, bucket 16,000
/// bytes (1.28 ms of tokens), over a pfifo of 4.
///
/// With forward_gro each is one skb: the first leaves HTB (tokens 1280 -
/// 1211.2 = 68.8 µs, still ≥ 0 so the class can send), so does the
/// second (tokens -1142.4 µs: the class stops, `htb_class_mode`); four
/// queue in the pfifo (backlog 60,560 b 4p) and two are dropped. Sent
/// counts segments: 2 × 10 = 20 pkt, 30,280 bytes. On the 1 Gbit/s line
/// a super-frame takes 121.12 µs: departures at 1.12112 and 1.24224 ms.
/// The class can send again when its tokens reach 0, at 1 ms + 1142.4
/// µs, then every 1211.2 µs: dequeues at 2.1424, 3.3536, 4.5648 and
/// 5.7760 ms. By 20 ms six have left: 60 pkt, 90,840 bytes; the flow
/// counts 80 segments sent, 60 delivered, 20 dropped.
///
/// Without forward_gro HTB sees the 80 segments: eleven leave at 1 ms
/// (ten take 15,140 bytes of the 16,000, the eleventh still finds
/// tokens ≥ 0), four queue (6,056 b), 65 are dropped: the difference a
/// forwarding router's GRO makes to a packet-limited leaf.
#[test]
fn forward_gro_queues_super_frames_whole_in_htb() {
    let (r, text) = traced(&load("forward_gro.toml"));
    assert_eq!(root(&r, Some(0)), (30_280, 20, 2, 60_560, 4));
    assert_eq!(root(&r, None), (90_840, 60, 2, 0, 0));
    let class = &r.directions[0].qdisc.classes[0];
    let cs = class.stats.as_ref().unwrap();
    assert_eq!((cs.bytes, cs.packets, cs.drops), (90_840, 60, 2));
    assert_eq!(flow(&r, 0), (80, 60, 20));
    assert_eq!(r.directions[0].frames_in, 8);
    assert_eq!(r.directions[0].frames_out, 6);
    let departs = times(&text, "depart");
    assert_eq!(departs[..2], [1_121_120, 1_242_240]);
    let dequeues = times(&text, "dequeue");
    assert_eq!(
        dequeues,
        [1_000_000, 1_000_000, 2_142_400, 3_353_600, 4_564_800, 5_776_000]
    );

    let (r, _) = traced(&variant(
        "forward_gro.toml",
        "forward_gro = true",
        "forward_gro = false",
    ));
    assert_eq!(root(&r, Some(0)), (16_654, 11, 65, 6_056, 4));
    assert_eq!(flow(&r, 0), (80, 15, 65));
    assert_eq!(r.directions[0].frames_in, 80);
}

/// tests/scenarios/tbf_segment.toml: TBF 100 Mbit/s with a 30,000-byte
/// bucket. At 1 ms three super-frames of 15,140 bytes: they fit the
/// bucket, so they go in whole; the first leaves (tokens 30,000 → 14,860
/// bytes), the other two wait as two packets (backlog 30,280 b 2p), Sent
/// 15,140 bytes 10 pkt. At 10 ms (the bucket full again) one of 45,420
/// bytes, larger than the bucket: segmented first, its 30 segments
/// enter; 19 leave at once (19 × 1514 = 28,766 ≤ 30,000 < 20 × 1514),
/// eleven wait (16,654 b 11p). Sent by then: 45,420 + 28,766 = 74,186
/// bytes, 30 + 19 = 49 pkt; at the end 90,840 bytes, 60 pkt.
///
/// Without forward_gro TBF sees segments only: 30 arrive at 1 ms and 19
/// leave at once, as for the large one.
#[test]
fn tbf_takes_what_its_bucket_passes_whole_and_segments_the_rest() {
    let (r, _) = traced(&load("tbf_segment.toml"));
    assert_eq!(root(&r, Some(0)), (15_140, 10, 0, 30_280, 2));
    assert_eq!(root(&r, Some(1)), (74_186, 49, 0, 16_654, 11));
    assert_eq!(root(&r, None), (90_840, 60, 0, 0, 0));
    // Three whole, thirty segments.
    assert_eq!(r.directions[0].frames_in, 33);
    assert_eq!((flow(&r, 0), flow(&r, 1)), ((30, 30, 0), (30, 30, 0)));

    let (r, _) = traced(&variant(
        "tbf_segment.toml",
        "forward_gro = true",
        "forward_gro = false",
    ));
    assert_eq!(root(&r, Some(0)), (28_766, 19, 0, 16_654, 11));
    assert_eq!(r.directions[0].frames_in, 60);
}

/// Without a shaper, on a link at or above `gso_min_rate`, the device
/// behaves like a NIC with TSO: pfifo_fast takes each super-frame whole,
/// and its Sent counts the segments (two of 44 × 1514 = 66,616 bytes:
/// 133,232 bytes, 88 pkt); the line at 10 Gbit/s takes 53,292.8 ns for
/// one, back to back from 1 ms, so they leave 53,292 and 106,585 ns
/// after 1 ms (whole ns, the fraction carried, `link::serializer`).
/// Below `gso_min_rate` the same frames arrive as 88 segments.
#[test]
fn a_tso_device_counts_a_whole_super_frame_as_its_segments() {
    let tso = |rate: &str| {
        Scenario::from_toml(&format!(
            "seed = 1\nduration = \"20ms\"\n[link]\nrate = \"{rate}\"\ndelay = \"0\"\n\
             [[packet]]\nproto = \"tcp\"\ntime = \"1ms\"\nsize = 1514\nsegments = 44\ncount = 2\n"
        ))
        .unwrap()
    };
    let (r, text) = traced(&tso("10gbit"));
    assert_eq!(root(&r, None), (133_232, 88, 0, 0, 0));
    assert_eq!(r.directions[0].frames_out, 2);
    assert_eq!(times(&text, "depart"), [1_053_292, 1_106_585]);
    assert_eq!(flow(&r, 0), (88, 88, 0));
    let (r, _) = traced(&tso("100mbit"));
    assert_eq!(root(&r, None), (133_232, 88, 0, 0, 0));
    assert_eq!(r.directions[0].frames_out, 88);
    assert_eq!(flow(&r, 0), (88, 88, 0));
}

/// Segments of a super-frame are checked by the receiver as any TCP
/// segment (IPv4 header and TCP checksums): with every frame corrupted on
/// the wire (netem `corrupt 100%`, never the Ethernet header) all 30 are
/// discarded, none delivered; without corruption all 30 arrive intact.
#[test]
fn corrupted_segments_of_a_super_frame_are_discarded() {
    let sc = |netem: &str| {
        Scenario::from_toml(&format!(
            "seed = 3\nduration = \"5ms\"\n[link]\nrate = \"1gbit\"\ndelay = \"0\"\n\
             [netem]\nleft_to_right = \"{netem}\"\n\
             [[packet]]\nproto = \"tcp\"\ntime = \"1ms\"\nsize = 1514\nsegments = 30\n"
        ))
        .unwrap()
    };
    let (r, _) = traced(&sc("corrupt 100%"));
    assert_eq!(r.directions[0].corrupt_discarded, 30);
    assert_eq!(r.flows[0].forward.discarded_pkts, 30);
    assert_eq!(flow(&r, 0), (30, 0, 0));
    let (r, _) = traced(&sc("delay 1ms"));
    assert_eq!(r.directions[0].corrupt_discarded, 0);
    assert_eq!(r.flows[0].forward.discarded_pkts, 0);
    assert_eq!(flow(&r, 0), (30, 30, 0));
}

/// `segments` is checked with the scenario: TCP only, offload on, at
/// most 65,535 bytes of IP, segments with a payload; each error names the
/// field and says what is allowed.
#[test]
fn bad_segments_are_refused_with_the_field() {
    let err = |packet: &str, tap: &str| {
        Scenario::from_toml(&format!(
            "seed = 1\nduration = \"5ms\"\n{tap}\n[[packet]]\ntime = \"1ms\"\n{packet}\n"
        ))
        .err()
        .unwrap_or_else(|| panic!("{packet} {tap} accepted"))
        .to_string()
    };
    let e = err("size = 1514\nsegments = 4", "");
    assert!(
        e.contains("packet[0].segments") && e.contains("proto = \"tcp\""),
        "{e}"
    );
    let e = err(
        "proto = \"tcp\"\nsize = 1514\nsegments = 4",
        "[tap]\noffload = false",
    );
    assert!(
        e.contains("packet[0].segments") && e.contains("tap.offload"),
        "{e}"
    );
    let e = err("proto = \"tcp\"\nsize = 1514\nsegments = 46", "");
    assert!(e.contains("at most 45 segments"), "{e}");
    let e = err("proto = \"tcp\"\nsize = 66\nsegments = 2", "");
    assert!(e.contains("no payload"), "{e}");
    let e = err("proto = \"tcp\"\nsize = 1514\nsegments = 0", "");
    assert!(
        e.contains("packet[0].segments") && e.contains("allowed 1"),
        "{e}"
    );
    // 45 segments of 1448 bytes: 65,226 bytes of IP, accepted.
    Scenario::from_toml(
        "seed = 1\nduration = \"5ms\"\n[[packet]]\ntime = \"1ms\"\nproto = \"tcp\"\nsize = 1514\nsegments = 45\n",
    )
    .unwrap();
}
