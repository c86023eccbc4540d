//! hhf's unit tests: timelines computed by hand from net/sched/sch_hhf.c
//! (the filter's positions, admission at `admit_bytes`, the arrays' reset
//! and the table's eviction on jiffy boundaries at HZ 250, the table's
//! limit, the weighted round robin's order, the drop at the limit) and the
//! refusals of `hhf_change`.

use super::*;
use crate::qdisc::testutil::flow_pkt;

/// An hhf with `o` (the context's defaults: psched_mtu 1514, seed 0).
fn hhf(o: HhfOptions) -> Hhf {
    Hhf::build(QdiscCtx::default(), &QdiscOptions::Hhf(o)).unwrap()
}

/// Flows `a` and `b` share no position of the filter and no chain of the
/// table under `q`'s key (so each one's counters are its own).
fn apart(q: &Hhf, a: u16, b: u16) -> bool {
    let (ha, hb) = (q.hash(&flow_pkt(0, 1, a)), q.hash(&flow_pkt(0, 1, b)));
    let (pa, pb) = (filter_positions(ha), filter_positions(hb));
    pa.iter().zip(pb).all(|(x, y)| *x != y)
}

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

/// The ids of what `q` hands out until it is empty.
fn order(q: &mut Hhf, now: Instant) -> Vec<u64> {
    let mut d = Drops::new();
    std::iter::from_fn(|| q.dequeue(now, &mut d))
        .map(|p| p.meta.id)
        .collect()
}

#[test]
fn the_filter_splits_the_hash_into_three_chunks_and_their_xor() {
    // 0x12345678: 0x278, 0x115, 0x123, and 0x278 ^ 0x115 ^ 0x123 ^ 0 (the
    // two top bits).
    assert_eq!(filter_positions(0x1234_5678), [0x278, 0x115, 0x123, 0x24e]);
    // The top two bits enter the fourth position only.
    assert_eq!(filter_positions(0xC000_0000), [0, 0, 0, 3]);
}

#[test]
fn a_flow_is_admitted_when_all_four_counters_would_pass_admit_bytes() {
    let mut q = hhf(HhfOptions::default());
    let mut d = Drops::new();
    // 1000-byte frames at t = 0: the counters hold 1000 × k after k frames;
    // frame 132 would make 132000 > 131072 (131000 is not).
    for id in 1..=131 {
        q.enqueue(flow_pkt(id, 1000, 7), ms(0), &mut d);
    }
    assert_eq!(
        (q.bucket_len(BUCKET_NON_HH), q.bucket_len(BUCKET_HH)),
        (131, 0)
    );
    assert_eq!(q.xstats().hh_tot_count, 0);
    q.enqueue(flow_pkt(132, 1000, 7), ms(0), &mut d);
    q.enqueue(flow_pkt(133, 1000, 7), ms(0), &mut d);
    assert_eq!(
        (q.bucket_len(BUCKET_NON_HH), q.bucket_len(BUCKET_HH)),
        (131, 2)
    );
    let x = q.xstats();
    assert_eq!((x.hh_tot_count, x.hh_cur_count, x.hh_overlimit), (1, 1, 0));
    assert!(d.is_empty());
}

#[test]
fn the_arrays_reset_after_reset_timeout_in_jiffies() {
    // 40 ms is 10 jiffies of 4 ms: the arrays are reset by the first frame
    // at jiffy 11 (44 ms), not at jiffy 10 (40..44 ms).
    for (second_ms, heavy) in [(43, 1), (44, 0)] {
        let mut q = hhf(HhfOptions::default());
        let mut d = Drops::new();
        for id in 0..100 {
            q.enqueue(flow_pkt(id, 1000, 3), ms(0), &mut d);
        }
        // 100000 + 32 × 1000 > 131072: the 32nd frame is admitted unless
        // the counters started over.
        for id in 100..140 {
            q.enqueue(flow_pkt(id, 1000, 3), ms(second_ms), &mut d);
        }
        assert_eq!(q.xstats().hh_tot_count, heavy, "at {second_ms} ms");
        assert_eq!(
            q.bucket_len(BUCKET_HH),
            9 * heavy as usize,
            "at {second_ms} ms"
        );
    }
}

#[test]
fn an_idle_heavy_hitter_is_evicted_after_evict_timeout_but_its_entry_kept() {
    let o = HhfOptions {
        admit_bytes: Some(1500),
        ..HhfOptions::default()
    };
    let mut q = hhf(o);
    let mut d = Drops::new();
    // Frames of 1000: the second (2000 > 1500) is admitted at jiffy 0.
    q.enqueue(flow_pkt(0, 1000, 5), ms(0), &mut d);
    q.enqueue(flow_pkt(1, 1000, 5), ms(0), &mut d);
    assert_eq!(q.bucket_len(BUCKET_HH), 1);
    // evict_timeout 1 s = 250 jiffies: at jiffy 250 (1000..1004 ms) it is
    // still heavy, and the hit moves its timestamp to 250.
    q.enqueue(flow_pkt(2, 1000, 5), ms(1003), &mut d);
    assert_eq!(q.bucket_len(BUCKET_HH), 2);
    // At jiffy 500 (2000 ms) 250 + 250 is not before 500: heavy.
    q.enqueue(flow_pkt(3, 1000, 5), ms(2000), &mut d);
    assert_eq!(q.bucket_len(BUCKET_HH), 3);
    // At jiffy 751 (3004 ms) the entry has expired: the flow is not found
    // (the chain's last entry stays, counted), the filter starts it over.
    q.enqueue(flow_pkt(4, 1000, 5), ms(3004), &mut d);
    assert_eq!(
        (q.bucket_len(BUCKET_NON_HH), q.bucket_len(BUCKET_HH)),
        (2, 3)
    );
    assert_eq!(q.xstats().hh_cur_count, 1);
    // Heavy again: the expired entry is reused, none is added.
    q.enqueue(flow_pkt(5, 1000, 5), ms(3004), &mut d);
    assert_eq!(q.bucket_len(BUCKET_HH), 4);
    let x = q.xstats();
    assert_eq!((x.hh_tot_count, x.hh_cur_count), (2, 1));
}

#[test]
fn hh_limit_caps_the_table_and_counts_the_heavy_hitters_turned_away() {
    let o = HhfOptions {
        admit_bytes: Some(1500),
        hh_limit: Some(1),
        ..HhfOptions::default()
    };
    let mut q = hhf(o);
    assert!(apart(&q, 1, 2));
    let mut d = Drops::new();
    for id in 0..3 {
        q.enqueue(flow_pkt(id, 1000, 1), ms(0), &mut d);
        q.enqueue(flow_pkt(10 + id, 1000, 2), ms(0), &mut d);
    }
    // Flow 1 takes the one entry at its second frame; flow 2 passes the
    // threshold at its second and third and finds the table full: its
    // counters are then raised as a non-heavy flow's.
    let x = q.xstats();
    assert_eq!((x.hh_tot_count, x.hh_cur_count, x.hh_overlimit), (1, 1, 2));
    assert_eq!(
        (q.bucket_len(BUCKET_NON_HH), q.bucket_len(BUCKET_HH)),
        (4, 2)
    );
}

#[test]
fn the_buckets_are_served_by_weighted_deficit_round_robin() {
    // quantum 1000, weight 2: the non-heavy bucket is credited 2000 at a
    // time, the heavy one 1000.
    let o = HhfOptions {
        quantum: Some(1000),
        admit_bytes: Some(2500),
        ..HhfOptions::default()
    };
    let mut q = hhf(o);
    assert!(apart(&q, 1, 2));
    let mut d = Drops::new();
    // Flow 1: frames 1 and 2 non-heavy (1000, 2000), 3..10 heavy (3000 >
    // 2500). Flow 2: frames 21 and 22 non-heavy.
    for id in 1..=10 {
        q.enqueue(flow_pkt(id, 1000, 1), ms(0), &mut d);
    }
    for id in 21..=22 {
        q.enqueue(flow_pkt(id, 1000, 2), ms(0), &mut d);
    }
    assert_eq!(
        (q.bucket_len(BUCKET_NON_HH), q.bucket_len(BUCKET_HH)),
        (4, 8)
    );
    // new: [non-HH 2000], old: [HH 1000]. non-HH sends 1, 2 and goes to
    // old with 2000; HH sends 3 and goes behind; non-HH sends 21, 22; HH
    // sends 4; non-HH is empty and leaves; HH sends the rest.
    assert_eq!(
        order(&mut q, ms(0)),
        [1, 2, 3, 21, 22, 4, 5, 6, 7, 8, 9, 10]
    );
}

#[test]
fn a_non_heavy_arrival_is_served_before_a_backlogged_heavy_hitter() {
    let o = HhfOptions {
        quantum: Some(1000),
        admit_bytes: Some(1),
        ..HhfOptions::default()
    };
    let mut q = hhf(o);
    let mut d = Drops::new();
    // admit_bytes 1: every flow is heavy at its first frame ...
    for id in 0..5 {
        q.enqueue(flow_pkt(id, 1000, 1), ms(0), &mut d);
    }
    assert_eq!(q.bucket_len(BUCKET_HH), 5);
    assert_eq!(q.dequeue(ms(0), &mut d).unwrap().meta.id, 0);
    // ... but a frame of 1 byte is not (1 is not above 1): it goes to
    // new_buckets and ahead of the heavy hitter's remaining frames.
    q.enqueue(flow_pkt(99, 1, 2), ms(0), &mut d);
    assert_eq!(order(&mut q, ms(0)), [99, 1, 2, 3, 4]);
}

#[test]
fn over_the_limit_the_heavy_hitters_head_is_dropped() {
    let o = HhfOptions {
        limit: Some(4),
        admit_bytes: Some(2500),
        ..HhfOptions::default()
    };
    let mut q = hhf(o);
    assert!(apart(&q, 1, 2));
    let mut d = Drops::new();
    // Flow 1: 1, 2 non-heavy, 3, 4 heavy: full.
    for id in 1..=4 {
        assert_eq!(
            q.enqueue(flow_pkt(id, 1000, 1), ms(0), &mut d),
            Verdict::Queued
        );
    }
    // A non-heavy arrival: the heavy bucket's head (3) goes, the arrival
    // stays: NET_XMIT_SUCCESS.
    assert_eq!(
        q.enqueue(flow_pkt(21, 100, 2), ms(0), &mut d),
        Verdict::Queued
    );
    // Heavy ones: the heavy head (4, then 5) goes: NET_XMIT_CN.
    assert_eq!(
        q.enqueue(flow_pkt(5, 1000, 1), ms(0), &mut d),
        Verdict::Congested
    );
    assert_eq!(
        q.enqueue(flow_pkt(6, 1000, 1), ms(0), &mut d),
        Verdict::Congested
    );
    let dropped: Vec<(u64, DropReason)> = d.drain().map(|(p, r)| (p.meta.id, r)).collect();
    assert_eq!(
        dropped,
        [
            (3, DropReason::HhfDrop),
            (4, DropReason::HhfDrop),
            (5, DropReason::HhfDrop)
        ]
    );
    let dump = q.dump(ms(0));
    assert_eq!(
        (dump.stats.drops, dump.stats.qlen, dump.stats.backlog),
        (3, 4, 3100)
    );
    let Some(Xstats::Hhf(x)) = dump.xstats else {
        panic!("{:?}", dump.xstats)
    };
    assert_eq!(x.drop_overlimit, 3);
    assert_eq!(order(&mut q, ms(0)), [1, 2, 21, 6]);
    // Full of non-heavy frames, a heavy arrival is the heavy bucket's only
    // frame: it is the one dropped.
    for id in 22..=25 {
        assert_eq!(
            q.enqueue(flow_pkt(id, 100, 2), ms(0), &mut d),
            Verdict::Queued
        );
    }
    assert_eq!(
        q.enqueue(flow_pkt(7, 1000, 1), ms(0), &mut d),
        Verdict::Dropped
    );
    // With the heavy bucket empty, the non-heavy head goes.
    assert_eq!(
        q.enqueue(flow_pkt(26, 100, 2), ms(0), &mut d),
        Verdict::Congested
    );
    let dropped: Vec<u64> = d.drain().map(|(p, _)| p.meta.id).collect();
    assert_eq!(dropped, [7, 22]);
    assert_eq!(order(&mut q, ms(0)), [23, 24, 25, 26]);
    assert_eq!(q.xstats().drop_overlimit, 5);
}

#[test]
fn change_checks_before_it_applies_and_trims_a_lowered_limit() {
    let mut q = hhf(HhfOptions::default());
    let mut d = Drops::new();
    let e = q
        .change(
            &QdiscOptions::Hhf(HhfOptions {
                hh_limit: Some(2049),
                limit: Some(5),
                ..HhfOptions::default()
            }),
            ms(0),
            &mut d,
        )
        .unwrap_err();
    assert_eq!(
        (e.errno, e.message.as_deref()),
        (Errno::ERANGE, Some("integer out of range."))
    );
    for (quantum, weight) in [
        (Some(0), None),
        (Some(1 << 30), None),
        (None, Some(0)),
        (Some(1 << 20), Some(2048)),
    ] {
        let o = HhfOptions {
            quantum,
            non_hh_weight: weight,
            limit: Some(5),
            ..HhfOptions::default()
        };
        let e = q.change(&QdiscOptions::Hhf(o), ms(0), &mut d).unwrap_err();
        assert_eq!(
            (e.errno, e.message),
            (Errno::EINVAL, None),
            "{quantum:?} {weight:?}"
        );
    }
    // Nothing changed: the defaults are dumped (40 ms and 1 s back in µs).
    assert_eq!(
        q.options(),
        HhfOptions {
            limit: Some(1000),
            quantum: Some(1514),
            hh_limit: Some(2048),
            reset_timeout: Some(40_000),
            admit_bytes: Some(131_072),
            evict_timeout: Some(1_000_000),
            non_hh_weight: Some(2),
        }
    );
    // 2^30 × 1 is INT_MAX or less; times are kept in jiffies of 4 ms.
    let o = HhfOptions {
        quantum: Some(1 << 30),
        non_hh_weight: Some(1),
        reset_timeout: Some(30_000),
        evict_timeout: Some(1),
        ..HhfOptions::default()
    };
    q.change(&QdiscOptions::Hhf(o), ms(0), &mut d).unwrap();
    let shown = q.options();
    assert_eq!(
        (shown.reset_timeout, shown.evict_timeout),
        (Some(32_000), Some(4_000))
    );
    // A lowered limit drops through the dequeue, in its order.
    for id in 0..6 {
        q.enqueue(flow_pkt(id, 100, 1), ms(0), &mut d);
    }
    let o = HhfOptions {
        limit: Some(2),
        ..HhfOptions::default()
    };
    q.change(&QdiscOptions::Hhf(o), ms(0), &mut d).unwrap();
    let dropped: Vec<(u64, DropReason)> = d.drain().map(|(p, r)| (p.meta.id, r)).collect();
    assert_eq!(dropped.len(), 4);
    assert!(dropped.iter().all(|&(_, r)| r == DropReason::QdiscReset));
    assert_eq!(order(&mut q, ms(0)), [4, 5]);
}

#[test]
fn a_device_mtu_too_large_for_the_weight_falls_back_to_256() {
    let ctx = QdiscCtx {
        psched_mtu: 1 << 30,
        ..QdiscCtx::default()
    };
    let q = Hhf::build(ctx, &QdiscOptions::None).unwrap();
    assert_eq!(q.options().quantum, Some(256));
}

#[test]
fn reset_empties_the_table_and_the_buckets() {
    let o = HhfOptions {
        admit_bytes: Some(1),
        ..HhfOptions::default()
    };
    let mut q = hhf(o);
    let mut d = Drops::new();
    for id in 0..3 {
        q.enqueue(flow_pkt(id, 1000, 1), ms(0), &mut d);
    }
    q.peek(ms(0), &mut d);
    q.reset(&mut d);
    assert_eq!((q.qlen(), q.backlog(), d.len()), (0, 0, 3));
    let x = q.xstats();
    assert_eq!((x.hh_tot_count, x.hh_cur_count), (1, 0));
    assert!(q.dequeue(ms(0), &mut d).is_none());
}
