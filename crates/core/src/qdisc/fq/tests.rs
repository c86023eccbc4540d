//! fq's unit tests at explicit times, each against a timeline worked out
//! by hand from net/sched/sch_fq.c: the defaults, the fast path's eight
//! frames, flow_limit, the DRR of initial_quantum and quantum, maxrate's
//! pacing (with its drift correction and the low-rate rule), ce_threshold,
//! the bands' weights, garbage collection after 3 s, and fq_change's
//! refusals.

use super::*;
use crate::packet::ecn::{ECN_CE, ECN_ECT0};
use crate::qdisc::jiffies::JIFFY_NS;
use crate::qdisc::testutil::{ect_pkt, flow_pkt};
use crate::time::NS_PER_MS;

fn fq(o: FqOptions) -> Result<Fq, Refusal> {
    Fq::build(QdiscCtx::default(), &QdiscOptions::Fq(Box::new(o)))
}

/// Options that keep frames off the fast path (a maxrate) without pacing.
fn no_fastpath() -> FqOptions {
    FqOptions {
        maxrate: Some(125_000),
        pacing: Some(0),
        ..FqOptions::default()
    }
}

fn x(q: &Fq) -> FqXstats {
    q.xstats(Instant::ZERO)
}

fn at(ns: u64) -> Instant {
    Instant::from_nanos(ns)
}

/// A frame of flow `flow` with `skb->priority` `prio`.
fn prio_pkt(id: u64, len: u32, flow: u16, prio: u32) -> Packet {
    let mut p = flow_pkt(id, len, flow);
    p.meta.priority = prio;
    p
}

/// The flows of the frames `q` sends at `now` until it has none.
fn drain_at(q: &mut Fq, now: Instant, drops: &mut Drops) -> Vec<u16> {
    std::iter::from_fn(|| q.dequeue(now, drops))
        .map(|p| p.meta.flow.src_port - 10_000)
        .collect()
}

#[test]
fn defaults_dump_as_fq_init_sets_them() {
    let q = fq(FqOptions::default()).unwrap();
    assert_eq!(
        q.options(),
        FqOptions {
            limit: Some(10_000),
            flow_limit: Some(100),
            quantum: Some(3028),
            initial_quantum: Some(15_140),
            pacing: Some(1),
            defrate: None,
            maxrate: Some(u32::MAX),
            buckets_log: Some(10),
            refill_delay: Some(40_000),
            orphan_mask: Some(1023),
            low_rate_threshold: Some(68_750),
            ce_threshold: Some(u32::MAX),
            timer_slack: Some(10_000),
            horizon: Some(10_000_000),
            horizon_drop: Some(1),
            priomap: Some(PfifoFastOptions {
                bands: 3,
                priomap: [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1],
            }),
            weights: Some([589_824, 196_608, 65_536]),
            offload_horizon: Some(0),
        }
    );
    // No throttled flow: ~0ULL + timer_slack - now, as an __s64.
    assert_eq!(x(&q).time_next_delayed_flow, 9_999);
    assert_eq!(q.xstats(at(20_000)).time_next_delayed_flow, -10_001);
}

#[test]
fn eight_frames_take_the_fast_path_then_flows_do() {
    let mut q = fq(FqOptions::default()).unwrap();
    let mut d = Drops::new();
    for i in 0..10 {
        assert_eq!(
            q.enqueue(flow_pkt(i, 1000, 1), at(0), &mut d),
            Verdict::Queued
        );
    }
    let s = x(&q);
    assert_eq!((s.fastpath_packets, s.flows, s.inactive_flows), (8, 1, 0));
    assert_eq!(s.band_pkt_count, [0, 2, 0]);
    let ids: Vec<u64> = std::iter::from_fn(|| q.dequeue(at(0), &mut d))
        .map(|p| p.meta.id)
        .collect();
    assert_eq!(ids, (0..10).collect::<Vec<_>>());
    // A maxrate closes the fast path.
    let mut q = fq(no_fastpath()).unwrap();
    q.enqueue(flow_pkt(0, 1000, 1), at(0), &mut d);
    assert_eq!(x(&q).fastpath_packets, 0);
}

#[test]
fn flow_limit_drops_past_the_fast_path() {
    let mut q = fq(FqOptions {
        flow_limit: Some(3),
        ..FqOptions::default()
    })
    .unwrap();
    let mut d = Drops::new();
    let verdicts: Vec<Verdict> = (0..20)
        .map(|i| q.enqueue(flow_pkt(i, 1000, 1), at(0), &mut d))
        .collect();
    // 8 on the fast path, 3 in the flow, the other 9 dropped.
    assert!(verdicts[..11].iter().all(|v| *v == Verdict::Queued));
    assert!(verdicts[11..].iter().all(|v| *v == Verdict::Dropped));
    assert_eq!(x(&q).flows_plimit, 9);
    assert_eq!((q.qlen(), q.counters().drops), (11, 9));
    // A second flow still gets its three.
    for i in 20..25 {
        q.enqueue(flow_pkt(i, 1000, 2), at(0), &mut d);
    }
    assert_eq!((q.qlen(), x(&q).flows_plimit), (14, 11));
}

#[test]
fn band_limit_drops_per_band() {
    let mut q = fq(FqOptions {
        limit: Some(2),
        ..no_fastpath()
    })
    .unwrap();
    let mut d = Drops::new();
    for i in 0..3 {
        q.enqueue(prio_pkt(i, 100, i as u16, 0), at(0), &mut d);
        q.enqueue(prio_pkt(10 + i, 100, 10 + i as u16, 6), at(0), &mut d);
    }
    let s = x(&q);
    assert_eq!(s.band_drops, [1, 1, 0]);
    assert_eq!(s.band_pkt_count, [2, 2, 0]);
}

/// fq_enqueue drops with the kernel's reasons (Linux 6.14+, kept in
/// 6.18): `FQ_BAND_LIMIT` when the frame's band holds `limit` frames,
/// checked first, and `FQ_FLOW_LIMIT` when its flow holds `flow_limit`.
#[test]
fn drops_carry_fq_enqueues_reasons() {
    let mut q = fq(FqOptions {
        limit: Some(3),
        flow_limit: Some(2),
        ..no_fastpath()
    })
    .unwrap();
    let mut d = Drops::new();
    // Band 1 (priority 0): flow 1 takes 2, its third is over flow_limit;
    // flow 2 takes the band's third slot, its second is over limit.
    for (id, flow) in [(0, 1), (1, 1), (2, 1), (3, 2), (4, 2)] {
        q.enqueue(prio_pkt(id, 100, flow, 0), at(0), &mut d);
    }
    let why: Vec<(u64, DropReason)> = d.since(0).iter().map(|(p, r)| (p.meta.id, *r)).collect();
    assert_eq!(
        why,
        [(2, DropReason::FqFlowLimit), (4, DropReason::FqBandLimit)]
    );
    assert_eq!((x(&q).flows_plimit, x(&q).band_drops), (1, [0, 1, 0]));
    assert_eq!(DropReason::FqBandLimit.name(), "fq_band_limit");
    assert_eq!(DropReason::FqFlowLimit.name(), "fq_flow_limit");
}

#[test]
fn initial_quantum_then_quantum_in_round_robin() {
    let mut q = fq(FqOptions {
        quantum: Some(1000),
        initial_quantum: Some(2000),
        ..no_fastpath()
    })
    .unwrap();
    let mut d = Drops::new();
    for i in 0..6 {
        q.enqueue(flow_pkt(i, 600, 1), at(0), &mut d);
    }
    for i in 0..6 {
        q.enqueue(flow_pkt(10 + i, 600, 2), at(0), &mut d);
    }
    // 2000 bytes of credit: four frames each (1400, 800, 200, -400);
    // then 1000 a round: 600 → 0 serves one frame, the next round
    // (credit 1000) one more of 600, leaving 400 for nothing.
    assert_eq!(
        drain_at(&mut q, at(0), &mut d),
        [1, 1, 1, 1, 2, 2, 2, 2, 1, 2, 1, 2]
    );
    let s = x(&q);
    assert_eq!((s.flows, s.inactive_flows), (2, 2));
}

#[test]
fn quantum_is_clamped_and_initial_quantum_limited() {
    let mut q = fq(FqOptions {
        quantum: Some(10),
        ..FqOptions::default()
    })
    .unwrap();
    assert_eq!(q.options().quantum, Some(256));
    let mut d = Drops::new();
    let big = FqOptions {
        quantum: Some(1 << 21),
        ..FqOptions::default()
    };
    q.change(&QdiscOptions::Fq(Box::new(big)), at(0), &mut d)
        .unwrap();
    assert_eq!(q.options().quantum, Some(1 << 20));
    let e = fq(FqOptions {
        initial_quantum: Some((1 << 20) + 1),
        ..FqOptions::default()
    })
    .err()
    .unwrap();
    assert_eq!(e.errno, Errno::EINVAL);
}

/// Dequeues until `n` frames went out, sleeping to each `next_wakeup`;
/// the departure times, ns.
fn departures(q: &mut Fq, n: usize, mut now: u64, d: &mut Drops) -> Vec<u64> {
    let mut out = Vec::new();
    while out.len() < n {
        match q.dequeue(at(now), d) {
            Some(_) => out.push(now),
            None => now = q.next_wakeup(at(now)).unwrap().nanos(),
        }
    }
    out
}

#[test]
fn maxrate_paces_each_flow_a_quantum_at_a_time() {
    // 5 Mbit/s: 625000 B/s. Frames of 1514 bytes; credit 15140 first.
    let mut q = fq(FqOptions {
        maxrate: Some(625_000),
        ..FqOptions::default()
    })
    .unwrap();
    let mut d = Drops::new();
    for i in 0..20 {
        q.enqueue(flow_pkt(i, 1514, 1), at(0), &mut d);
    }
    // Ten frames spend the initial credit; the tenth (credit 0) sets
    // the next time to max(1514, quantum 3028) / rate = 4844800 ns. Then
    // a quantum (two frames) every 4.8448 ms, the second setting the next.
    let step = 3028 * NS_PER_SEC / 625_000;
    assert_eq!(step, 4_844_800);
    let mut want = vec![0; 10];
    for k in 1..=5 {
        want.extend([k * step, k * step]);
    }
    assert_eq!(departures(&mut q, 20, 0, &mut d), want);
    let s = q.xstats(at(5 * step));
    assert_eq!(
        (s.throttled, s.throttled_flows, s.unthrottle_latency_ns),
        (5, 0, 0)
    );
    assert_eq!(q.counters().packets, 20);
}

#[test]
fn a_late_dequeue_shortens_the_next_gap_by_the_drift() {
    let mut q = fq(FqOptions {
        maxrate: Some(625_000),
        ..FqOptions::default()
    })
    .unwrap();
    let mut d = Drops::new();
    for i in 0..14 {
        q.enqueue(flow_pkt(i, 1514, 1), at(0), &mut d);
    }
    assert_eq!(drain_at(&mut q, at(0), &mut d).len(), 10);
    assert_eq!(q.next_wakeup(at(0)), Some(at(4_844_800)));
    // 155200 ns late: the gap loses min(len / 2, drift).
    assert_eq!(drain_at(&mut q, at(5_000_000), &mut d).len(), 2);
    assert_eq!(
        q.next_wakeup(at(5_000_000)),
        Some(at(5_000_000 + 4_844_800 - 155_200))
    );
    // The unthrottle latency's EWMA: 155200 / 8.
    assert_eq!(q.xstats(at(5_000_000)).unthrottle_latency_ns, 19_400);
}

#[test]
fn below_low_rate_threshold_every_frame_is_paced() {
    // 400 kbit/s = 50000 B/s, at most low_rate_threshold (550 kbit):
    // credit zeroed, each frame paced by its own length.
    let mut q = fq(FqOptions {
        maxrate: Some(50_000),
        ..FqOptions::default()
    })
    .unwrap();
    let mut d = Drops::new();
    for i in 0..4 {
        q.enqueue(flow_pkt(i, 1514, 1), at(0), &mut d);
    }
    let gap = 1514 * NS_PER_SEC / 50_000;
    assert_eq!(departures(&mut q, 4, 0, &mut d), [0, gap, 2 * gap, 3 * gap]);
}

#[test]
fn nopacing_ignores_maxrate() {
    let mut q = fq(FqOptions {
        maxrate: Some(50_000),
        pacing: Some(0),
        ..FqOptions::default()
    })
    .unwrap();
    let mut d = Drops::new();
    for i in 0..30 {
        q.enqueue(flow_pkt(i, 1514, 1), at(0), &mut d);
    }
    assert_eq!(drain_at(&mut q, at(0), &mut d).len(), 30);
    assert_eq!(x(&q).throttled, 0);
}

#[test]
fn ce_threshold_marks_frames_that_waited_longer() {
    let mut q = fq(FqOptions {
        ce_threshold: Some(1000),
        ..no_fastpath()
    })
    .unwrap();
    let mut d = Drops::new();
    for i in 0..3 {
        let mut p = ect_pkt(i, 1000, ECN_ECT0);
        p.meta.hash = 7;
        q.enqueue(p, at(0), &mut d);
    }
    let mut p = flow_pkt(3, 1000, 0);
    p.meta.hash = 7;
    q.enqueue(p, at(0), &mut d);
    // Exactly 1 ms of sojourn is not past the threshold.
    let first = q.dequeue(at(NS_PER_MS), &mut d).unwrap();
    assert_eq!(first.meta.ecn(), ECN_ECT0);
    let second = q.dequeue(at(NS_PER_MS + 1), &mut d).unwrap();
    assert_eq!(second.meta.ecn(), ECN_CE);
    q.dequeue(at(NS_PER_MS + 1), &mut d).unwrap();
    // Not ECN-capable: left as it is, but counted as the kernel counts it.
    let last = q.dequeue(at(NS_PER_MS + 1), &mut d).unwrap();
    assert!(!last.meta.ce_marked);
    assert_eq!(x(&q).ce_mark, 3);
}

#[test]
fn bands_share_by_their_weights() {
    // Weights 3:2:1 of 64 KiB with 1024-byte frames: 192, 128 and 64
    // frames a turn, each band's credit ending at exactly 0.
    let mut q = fq(FqOptions {
        weights: Some([3 << 16, 2 << 16, 1 << 16]),
        initial_quantum: Some(0),
        quantum: Some(1 << 20),
        flow_limit: Some(1000),
        ..no_fastpath()
    })
    .unwrap();
    let mut d = Drops::new();
    // Priority 6 → band 0, 0 → band 1, 2 → band 2 (the default priomap).
    for (flow, prio) in [(1u16, 6u32), (2, 0), (3, 2)] {
        for i in 0..1000 {
            q.enqueue(prio_pkt(i, 1024, flow, prio), at(0), &mut d);
        }
    }
    let sent: Vec<u16> = (0..768)
        .map(|_| q.dequeue(at(0), &mut d).unwrap().meta.flow.src_port - 10_000)
        .collect();
    let turn: Vec<u16> = [(1u16, 192), (2, 128), (3, 64)]
        .iter()
        .flat_map(|&(f, n)| std::iter::repeat_n(f, n))
        .collect();
    assert_eq!(sent[..384], turn[..]);
    assert_eq!(sent[384..], turn[..]);
}

#[test]
fn detached_flows_are_collected_after_three_seconds() {
    let mut q = fq(FqOptions {
        buckets_log: Some(1),
        initial_quantum: Some(100),
        ..no_fastpath()
    })
    .unwrap();
    let mut d = Drops::new();
    let tree = |h: u32| hash_ptr((u64::from(h & 1023) << 1) | 1, 1);
    let (a, c) = (5u32, (6..).find(|h| tree(*h) != tree(5)).unwrap());
    let b = (6..).find(|h| tree(*h) == tree(a)).unwrap();
    let hashed = |id, h| {
        let mut p = flow_pkt(id, 100, h as u16);
        p.meta.hash = h;
        p
    };
    // A sends its frame and stays first on the new list; then, out of
    // credit, goes to the old list, where C, out of credit too, finds it
    // empty behind it: A is detached at jiffy 0 (age 1).
    let detach_a = |q: &mut Fq, d: &mut Drops| {
        q.enqueue(hashed(0, a), at(0), d);
        q.enqueue(hashed(1, c), at(0), d);
        q.enqueue(hashed(2, c), at(0), d);
        assert_eq!(drain_at(q, at(0), d).len(), 3);
    };
    detach_a(&mut q, &mut d);
    let s = x(&q);
    assert_eq!((s.flows, s.inactive_flows, s.gc_flows), (2, 2, 0));
    // Jiffy 751 is not after age + 750; jiffy 752 is.
    q.enqueue(hashed(3, b), at(751 * JIFFY_NS), &mut d);
    assert_eq!((x(&q).flows, x(&q).gc_flows), (3, 0));
    q.reset(&mut d);
    detach_a(&mut q, &mut d);
    q.enqueue(hashed(3, b), at(752 * JIFFY_NS), &mut d);
    let s = x(&q);
    assert_eq!((s.flows, s.inactive_flows, s.gc_flows), (2, 1, 1));
}

#[test]
fn a_flow_back_after_refill_delay_gets_a_quantum() {
    let mut q = fq(FqOptions {
        quantum: Some(1000),
        initial_quantum: Some(300),
        ..no_fastpath()
    })
    .unwrap();
    let mut d = Drops::new();
    q.enqueue(flow_pkt(0, 600, 1), at(0), &mut d);
    drain_at(&mut q, at(0), &mut d);
    // Credit 300 - 600 = -300, detached at jiffy 0 (age 1); back at
    // jiffy 12 (after 1 + 10): max((u32)-300, 1000) keeps -300.
    q.enqueue(flow_pkt(1, 600, 1), at(12 * JIFFY_NS), &mut d);
    assert_eq!(q.dump(at(0)).flows[0].deficit, -300);
}

#[test]
fn fq_change_refuses_as_the_kernel_does() {
    let e = fq(FqOptions {
        buckets_log: Some(0),
        ..FqOptions::default()
    })
    .err()
    .unwrap();
    assert_eq!((e.errno, e.message), (Errno::EINVAL, None));
    let e = fq(FqOptions {
        buckets_log: Some(19),
        ..FqOptions::default()
    })
    .err()
    .unwrap();
    assert_eq!(e.errno, Errno::EINVAL);
    let e = fq(FqOptions {
        weights: Some([20_000, 16_383, 30_000]),
        ..FqOptions::default()
    })
    .err()
    .unwrap();
    assert_eq!(
        e.message.as_deref(),
        Some("sch_fq: Weight 16383 less that minimum allowed 16384")
    );
    let mut map = PfifoFastOptions {
        bands: 4,
        priomap: [0; 16],
    };
    let e = fq(FqOptions {
        priomap: Some(map),
        ..FqOptions::default()
    })
    .err()
    .unwrap();
    assert_eq!(
        e.message.as_deref(),
        Some("sch_fq: FQ only supports 3 bands")
    );
    map.bands = 3;
    map.priomap[5] = 3;
    let e = fq(FqOptions {
        priomap: Some(map),
        ..FqOptions::default()
    })
    .err()
    .unwrap();
    assert_eq!(
        e.message.as_deref(),
        Some("sch_fq: FQ priomap field 5 maps to a too high band 3")
    );
    let e = fq(FqOptions {
        offload_horizon: Some(1),
        ..FqOptions::default()
    })
    .err()
    .unwrap();
    assert_eq!(
        e.message.as_deref(),
        Some("sch_fq: invalid offload_horizon")
    );
    let e = fq(FqOptions {
        pacing: Some(2),
        ..FqOptions::default()
    })
    .err()
    .unwrap();
    assert_eq!(e.errno, Errno::EINVAL);
    // A change with a bad buckets still sets the limit, as fq_change does.
    let mut q = fq(FqOptions::default()).unwrap();
    let bad = FqOptions {
        limit: Some(77),
        buckets_log: Some(0),
        ..FqOptions::default()
    };
    let mut d = Drops::new();
    assert!(q
        .change(&QdiscOptions::Fq(Box::new(bad)), at(0), &mut d)
        .is_err());
    assert_eq!(q.options().limit, Some(77));
    assert!(q.change(&QdiscOptions::None, at(0), &mut d).is_err());
}
