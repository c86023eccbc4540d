//! plug, skbprio and multiq through the real path: plug held and released
//! by `[[tc]]` lines at set instants (net/sched/sch_plug.c
//! `plug_change`), skbprio's strict priorities and drops of the lowest
//! (net/sched/sch_skbprio.c `skbprio_enqueue`), multiq's bands served
//! round robin (net/sched/sch_multiq.c `multiq_dequeue`). Times and
//! counters worked out by hand.

use super::{l2r_events, load, traced};
use bloatbox::qdisc::QdiscDump;
use bloatbox::sim::{self, Scenario};

/// `(flow, µs after 1 ms)` of every left-to-right delivery of a trace.
fn deliveries(text: &str) -> Vec<(u64, u64)> {
    l2r_events(text, &["deliver"])
        .into_iter()
        .map(|(v, us)| (v["flow"].as_u64().unwrap(), us))
        .collect()
}

/// tests/scenarios/plug_release.toml: 1000-byte frames take 800 µs at
/// 10 Mbit/s, no delay. The plug holds "first" (flow 0, 5 frames at 1 ms)
/// and, after `block` at 10 ms closed first's epoch, "second" (flow 1, 3
/// at 11 ms): at 15 ms all 8 are queued, none sent. `release` at 20 ms
/// lets out the closed epoch only (`pkts_to_release` 5): first's frames
/// arrive at 20.8, 21.6, 22.4, 23.2 and 24.0 ms, then the plug closes
/// again with second's 3 inside. `release_indefinite` at 30 ms: 30.8,
/// 31.6, 32.4 ms. "third" (flow 2) at 40 ms passes at once: 40.8, 41.6.
#[test]
fn plug_holds_until_the_release_and_releases_one_epoch() {
    let (r, text) = traced(&load("plug_release.toml"));
    println!("{}", r.table());
    let at = |ms: u64| ms * 1000 - 1000;
    let mut want: Vec<(u64, u64)> = (0..5).map(|k| (0, at(20) + 800 * (k + 1))).collect();
    want.extend((0..3).map(|k| (1, at(30) + 800 * (k + 1))));
    want.extend((0..2).map(|k| (2, at(40) + 800 * (k + 1))));
    assert_eq!(deliveries(&text), want);
    let held = &r.snapshots[0].directions[0].qdisc;
    assert_eq!(
        (held.stats.packets, held.stats.qlen, held.stats.backlog),
        (0, 8, 8000)
    );
    let q = &r.directions[0].qdisc;
    assert_eq!(
        (q.kind.as_str(), q.stats.packets, q.stats.drops),
        ("plug", 10, 0)
    );
}

/// A `[[tc]]` line is checked when the scenario is read: it must parse,
/// name a device and fall within the run; one the kernel refuses stops
/// the run with tc's message.
#[test]
fn tc_lines_at_instants_are_checked() {
    let base = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/plug_release.toml"),
    )
    .unwrap();
    let with = |extra: &str| Scenario::from_toml(&format!("{base}\n[[tc]]\n{extra}\n"));
    let e = with("at = \"60ms\"\nline = \"tc qdisc change dev left root plug block\"")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tc[3].at: 60ms is after the end of the run (50ms)"),
        "{e}"
    );
    let e = with("at = \"1ms\"\nline = \"tc qdisc show\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("tc[3].line: names no device"), "{e}");
    let e = with("at = \"1ms\"\nline = \"tc qdisc frobnicate dev left\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("tc[3].line: "), "{e}");
    let sc = with("at = \"5ms\"\nline = \"tc qdisc add dev left root plug\"").unwrap();
    let e = sim::run(&sc).unwrap_err().to_string();
    assert!(e.contains("tc[3] at 5ms: "), "{e}");
    assert!(e.contains("Exclusivity flag on, cannot modify."), "{e}");
}

/// Frames each band (class) of `q` sent, and their queues.
fn bands(q: &QdiscDump) -> Vec<(u64, u32)> {
    q.classes
        .iter()
        .map(|c| {
            let s = c.stats.unwrap();
            (s.packets, s.qlen)
        })
        .collect()
}

/// tests/scenarios/multiq_bands.toml: "bulk" (flow 0) is on TX queue 0,
/// band 1:1; "small" (flow 1) on TX queue 1, band 1:2. Bulk 0 reaches an
/// empty qdisc and goes to the ring at once (`multiq_dequeue` from
/// `curband` 0: band 1:2 empty, then 1:1); the rest of the instant's
/// frames queue before the ring is refilled from the band after 1:1:
/// small 0 takes the ring's second slot. At 1 ms each band has sent one,
/// 9 and 2 wait. Then one frame a turn, alternating: bulk 1, small 1,
/// bulk 2, small 2, and bulk's 3..9 alone, each 800 µs after the one
/// before. The bands' counters end at 10 and 3.
#[test]
fn multiq_serves_its_bands_round_robin() {
    let (r, text) = traced(&load("multiq_bands.toml"));
    println!("{}\n{}", r.table(), r.directions[0].tc);
    let order = [0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0];
    let want: Vec<(u64, u64)> = order
        .iter()
        .enumerate()
        .map(|(k, f)| (*f, 800 * (k as u64 + 1)))
        .collect();
    assert_eq!(deliveries(&text), want);
    let at1 = &r.snapshots[0].directions[0];
    assert_eq!(bands(&at1.qdisc), [(1, 9), (1, 2)]);
    assert!(
        at1.tc.contains("qdisc multiq 1: root refcnt 3 bands 2/2"),
        "{}",
        at1.tc
    );
    let end = &r.directions[0];
    assert_eq!(bands(&end.qdisc), [(10, 0), (3, 0)]);
    assert!(
        end.tc
            .contains("class multiq 1:2 parent 1: \n Sent 3000 bytes 3 pkt"),
        "{}",
        end.tc
    );
}

/// tests/scenarios/skbprio_ef.toml: 2 s of a 12 Mbit/s flood at
/// priority 0 (3001 frames of 1000 bytes) into 10 Mbit/s keep skbprio's
/// 20 frames full. The EF ping (priority 4) is dequeued before any of
/// them: its requests wait only for what is already in the ring and on
/// the wire, never for the queue, and none is dropped; the priority-0
/// ping waits behind the flood's 20 frames (16 ms at 800 µs each). Every
/// drop is the flood's: the link carries 2.5 MB in 2 s, the flood's 2439
/// frames and the pings' 300 of 200 bytes, so of its 3001 frames 541 are
/// dropped and the rest are queued at the end.
#[test]
fn skbprio_serves_ef_first_and_drops_the_lowest() {
    let r = sim::run(&load("skbprio_ef.toml")).unwrap();
    println!("{}", r.table());
    let flow = |n: &str| r.flow(n).unwrap();
    let (flood, ef, be) = (flow("flood"), flow("ef"), flow("be"));
    let q = &r.directions[0].qdisc;
    assert_eq!(q.kind, "skbprio");
    assert_eq!(flood.forward.dropped_pkts, q.stats.drops);
    assert_eq!(q.stats.drops, 541);
    assert_eq!(ef.forward.dropped_pkts, 0);
    assert!(
        ef.forward.delivered_pkts >= 150,
        "{}",
        ef.forward.delivered_pkts
    );
    assert_eq!(flood.forward.sent_pkts, 3001);
    assert_eq!(flood.forward.delivered_pkts, 2439);
    // EF: 1 ms of propagation, its own 160 µs, and at most the frames in
    // the ring ahead of it; never the 16 ms of the queue.
    let ms = |ns: f64| ns / 1e6;
    let ef_mean = ms(ef.owd_mean_ns.unwrap());
    let ef_max = ms(ef.owd_max_ns as f64);
    assert!(ef_max < 4.0, "EF max {ef_max} ms");
    let be_mean = ms(be.owd_mean_ns.unwrap());
    assert!((17.0..19.5).contains(&be_mean), "BE mean {be_mean} ms");
    assert!(be_mean - ef_mean > 14.0, "{be_mean} vs {ef_mean}");
}
