//! The driver's side of the TX ring: its early queue stop
//! (`tx_stop_threshold`), with stops, requeues and times worked out by
//! hand from the kernel's rules.

use super::{l2r_events, load, traced};

/// `(event, µs after 1 ms)` of the left-to-right lines of a trace whose
/// kind is one of `kinds`.
fn events(text: &str, kinds: &[&str]) -> Vec<(String, u64)> {
    l2r_events(text, kinds)
        .into_iter()
        .map(|(v, us)| (v["ev"].as_str().unwrap().to_string(), us))
        .collect()
}

/// tests/scenarios/early_stop.toml: a ring of 20 that stops below 19
/// free descriptors; five 1000-byte frames at 1 ms; 800 µs each at
/// 10 Mbit/s; completions reaped at each departure.
///
/// Frame 0 finds the pfifo_fast empty and bypasses it (`__dev_xmit_skb`)
/// into the ring: 19 free, the queue runs. Frame 1 bypasses too: 18 free,
/// the driver stops the queue (stop 1). Frame 2 bypasses into the stopped
/// queue and is requeued (`dev_requeue_skb`, requeues 1); frames 3 and 4
/// queue in band 1 behind it. Each completion frees one descriptor (19
/// free: the queue wakes), the qdisc sends one frame (the requeued one
/// first) and the driver stops again: stops 2, 3, 4 at 800, 1600 and
/// 2400 µs; frames 3 and 4 leave the qdisc then. Departures stay one
/// frame time apart (the wire is the bottleneck): 800 .. 4000 µs. With
/// the threshold 0 all five bypass into the ring at 1 ms: no stop, no
/// requeue.
#[test]
fn the_driver_stops_below_its_threshold_and_the_stack_requeues() {
    let sc = load("early_stop.toml");
    let (r, text) = traced(&sc);
    let snap = &r.snapshots[0].directions[0];
    let q = &snap.qdisc.stats;
    assert_eq!((q.packets, q.qlen, q.backlog, q.requeues), (3, 3, 3000, 1));
    let ring: Vec<(u32, u64)> = snap
        .tx_queues
        .iter()
        .map(|q| (q.ring_used, q.stops))
        .collect();
    assert_eq!(ring, vec![(2, 1)]);
    let end = &r.directions[0];
    let ring: Vec<(u32, u64)> = end
        .tx_queues
        .iter()
        .map(|q| (q.ring_used, q.stops))
        .collect();
    assert_eq!(ring, vec![(0, 4)]);
    assert_eq!((end.qdisc.stats.packets, end.qdisc.stats.requeues), (5, 1));
    let got = events(&text, &["dequeue", "deliver"]);
    // The trace shows each bypass as the frame leaving the qdisc: frames
    // 0, 1 and 2 at 1 ms.
    let want: Vec<(String, u64)> = [
        ("dequeue", 0),
        ("dequeue", 0),
        ("dequeue", 0),
        ("deliver", 800),
        ("dequeue", 1600),
        ("deliver", 1600),
        ("dequeue", 2400),
        ("deliver", 2400),
        ("deliver", 3200),
        ("deliver", 4000),
    ]
    .iter()
    .map(|(e, t)| (e.to_string(), *t))
    .collect();
    assert_eq!(got, want);

    // Threshold 0: the queue stops only on a full ring, which five
    // frames do not fill.
    let mut sc = load("early_stop.toml");
    sc.link.tx_stop_threshold = Some(0);
    let (r, _) = traced(&sc);
    let snap = &r.snapshots[0].directions[0];
    assert_eq!(
        (snap.qdisc.stats.packets, snap.qdisc.stats.requeues),
        (5, 0)
    );
    assert_eq!(snap.tx_queues[0].ring_used, 5);
    assert_eq!(r.directions[0].tx_queues[0].stops, 0);
}

/// A threshold above the ring is refused at its line, with the ring it
/// must fit.
#[test]
fn a_threshold_above_the_ring_is_refused_at_its_line() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/early_stop.toml"),
    )
    .unwrap()
    .replace("tx_stop_threshold = 19", "tx_stop_threshold = 21");
    let e = bloatbox::sim::Scenario::from_toml(&text)
        .unwrap_err()
        .to_string();
    assert!(e.contains("link.tx_stop_threshold = 21"), "{e}");
    assert!(e.contains("line 15"), "{e}");
    assert!(e.contains("expected at most tx_ring (20)"), "{e}");
}

/// tests/scenarios/doorbell.toml: 10 µs per posted frame, 8 µs per
/// 1000-byte frame on the wire. Each frame bypasses the empty
/// pfifo_fast as a batch of one; posts to the queue follow each other
/// (`HARD_TX_LOCK`), so the doorbells ring at 10, 20 and 30 µs and the
/// frames leave at 18, 28 and 38 µs (the wire idles between them). With
/// no post cost they leave back to back at 8, 16 and 24 µs.
#[test]
fn the_doorbell_rings_after_each_batch_is_posted() {
    let (_, text) = traced(&load("doorbell.toml"));
    let departs: Vec<u64> = events(&text, &["depart"])
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    assert_eq!(departs, vec![18, 28, 38]);
    let mut sc = load("doorbell.toml");
    sc.link.tx_post_ns = Some(0);
    let (_, text) = traced(&sc);
    let departs: Vec<u64> = events(&text, &["depart"])
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    assert_eq!(departs, vec![8, 16, 24]);
}
