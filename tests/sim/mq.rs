//! Per-queue rings and BQL under mq (include/linux/netdevice.h: each
//! `netdev_queue` has its own ring and `dql`; net/sched/sch_mq.c attaches
//! one child per queue, and net/sched/sch_generic.c `dequeue_skb` stops a
//! child only when its own queue is stopped): scenarios with two flows on
//! two TX queues, times and counters worked out by hand.

use super::{l2r_events, load, traced};

/// `(flow, µs after 1 ms)` of every left-to-right `ev` line of a trace.
fn times(text: &str, ev: &str) -> Vec<(u64, u64)> {
    l2r_events(text, &[ev])
        .into_iter()
        .map(|(v, us)| (v["flow"].as_u64().unwrap(), us))
        .collect()
}

/// tests/scenarios/mq_two_queues.toml: ten frames of "bulk" (flow 0, TX
/// queue 0) then three of "small" (flow 1, TX queue 1) at 1 ms; rings of
/// 2, BQL off, 1000 B at 10 Mbit/s = 800 µs, completions reaped at each
/// departure (tx-usecs 0, tx-frames 1), no delay, each frame delivered
/// as it arrives (rx-frames 1).
///
/// At 1 ms: bulk 0 and 1 fill ring 0, which stops queue 0's child with
/// eight frames in it; small 0 and 1 go to ring 1 all the same, small 2
/// waits in its child. The wire serves the rings round robin: bulk 0
/// leaves at 800 µs, its completion frees a slot of ring 0 (bulk 2
/// posted), then small 0 (1600), bulk 1 (2400), small 1 (3200; small 2
/// posted at 1600 when small 0's slot freed), bulk 2 (4000), small 2
/// (4800), then bulk 3..9 every 800 µs to 10400. With one ring shared by
/// both queues (before per-queue rings) small 0 left third, at 2400.
#[test]
fn a_stopped_queue_does_not_stop_the_other() {
    let sc = load("mq_two_queues.toml");
    let (r, text) = traced(&sc);
    // The flows are on two queues: every frame of bulk went through class
    // :1, every frame of small through :2.
    let q = &r.directions[0].qdisc;
    assert_eq!(q.kind, "mq");
    let sent: Vec<u64> = q.children.iter().map(|c| c.stats.packets).collect();
    assert_eq!(sent, vec![10, 3]);
    let deliver = times(&text, "deliver");
    let mut want = vec![
        (0, 800),
        (1, 1600),
        (0, 2400),
        (1, 3200),
        (0, 4000),
        (1, 4800),
    ];
    want.extend((3..10).map(|k| (0, 800 * (k + 4))));
    assert_eq!(deliver, want);
    // At 1 ms, after every arrival: two frames on each ring (each
    // queue's child counted them Sent), eight and one left in the
    // children.
    let s = &r.snapshots[0].directions[0];
    let rings: Vec<(u32, u32)> = s
        .tx_queues
        .iter()
        .map(|q| (q.ring_used, q.ring_size))
        .collect();
    assert_eq!(rings, vec![(2, 2), (2, 2)]);
    let kids: Vec<(u64, u32)> = s
        .qdisc
        .children
        .iter()
        .map(|c| (c.stats.packets, c.stats.qlen))
        .collect();
    assert_eq!(kids, vec![(2, 8), (2, 1)]);
    assert_eq!(s.bql_limit_bytes, None);
    assert_eq!(r.directions[0].frames_out, 13);
    // The report lists each queue's ring at the end, all reaped.
    let end: Vec<u32> = r.directions[0]
        .tx_queues
        .iter()
        .map(|q| q.ring_used)
        .collect();
    assert_eq!(end, vec![0, 0]);
}

/// The same burst with BQL on (limits from 0, as `dql_init` leaves
/// them): each queue has its own DQL, so each posts one frame and stops
/// (`dql_queued` puts it over its limit of 0), and each TX completion
/// reaches only its own queue's DQL (`netdev_tx_completed_queue(txq)`).
/// The trace's completions name their queue; after bulk 0 (800 µs)
/// queue 0 starved (lib/dynamic_queue_limits.c `dql_completed`: over
/// the limit and empty) and its limit is 1000, queue 1's still 0 with
/// small 0's 1000 bytes in flight.
#[test]
fn each_queue_has_its_own_dql() {
    let mut sc = load("mq_two_queues.toml");
    sc.link.bql = Some(true);
    let (r, text) = traced(&sc);
    let completions: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["dir"] == "left_to_right" && v["ev"] == "tx_completion")
        .collect();
    let first = &completions[0];
    assert_eq!(first["t"], 1_800_000);
    assert_eq!(first["queue"], 0);
    assert_eq!(
        (first["bql_limit"].as_u64(), first["bql_inflight"].as_u64()),
        (Some(1000), Some(0))
    );
    let s = &r.snapshots[0].directions[0];
    let dql: Vec<(Option<u32>, Option<u32>)> = s
        .tx_queues
        .iter()
        .map(|q| (q.bql_limit, q.bql_inflight))
        .collect();
    assert_eq!(dql, vec![(Some(0), Some(1000)), (Some(0), Some(1000))]);
    assert_eq!(
        (s.bql_limit_bytes, s.bql_inflight_bytes),
        (Some(0), Some(2000))
    );
    // Every completion names its queue; small's frames complete on 1.
    assert!(completions
        .iter()
        .all(|c| c["queue"] == 0 || c["queue"] == 1));
    let on_1 = completions.iter().filter(|c| c["queue"] == 1).count();
    assert_eq!(on_1, 3);
    assert_eq!(r.directions[0].frames_out, 13);
}
