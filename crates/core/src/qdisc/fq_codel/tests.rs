//! Unit tests of the `fq_codel` qdisc at explicit times, with expected values
//! derived from the kernel functions each test cites.

use super::*;
use crate::packet::L3;
use crate::qdisc::tc_h_make;
use crate::qdisc::testutil::flow_pkt;
use crate::time::NS_PER_MS;
use crate::units::sprint_time;

fn ctx() -> QdiscCtx {
    QdiscCtx::default()
}

/// A frame steered into `bucket` by `skb->priority = 8001:(bucket+1)`.
fn bpkt(id: u64, len: u32, bucket: u16) -> Packet {
    let mut p = flow_pkt(id, len, bucket);
    p.meta.priority = tc_h_make(0x8001, bucket + 1);
    p
}

/// The same with an IPv4 header carrying ECN bits `ecn`.
fn ect_bpkt(id: u64, len: u32, bucket: u16, ecn: u8) -> Packet {
    let mut p = bpkt(id, len, bucket);
    let mut data = vec![0u8; 34];
    data[14] = 0x45;
    data[15] = ecn;
    p.data = data;
    p.meta.l3 = L3::Ipv4 { offset: 14 };
    p.meta.dsfield = ecn;
    p
}

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

/// The qdisc's xstats in a dump at `now`.
fn qd_xstats(q: &FqCodel, now: Instant) -> FqCodelXstats {
    match q.dump(now).xstats {
        Some(Xstats::FqCodel(x)) => x,
        other => panic!("{other:?}"),
    }
}

/// `(new_flows_len, old_flows_len)` in a dump at `now`.
fn lists_len(q: &FqCodel, now: Instant) -> (u32, u32) {
    let x = qd_xstats(q, now);
    (x.new_flows_len, x.old_flows_len)
}

fn ids(q: &mut FqCodel, n: usize, now: Instant, d: &mut Drops) -> Vec<u64> {
    (0..n)
        .filter_map(|_| q.dequeue(now, d))
        .map(|p| p.meta.id)
        .collect()
}

/// The options `o` on top of the defaults.
fn fq(o: FqCodelOptions) -> FqCodel {
    FqCodel::with_options(ctx(), &o).unwrap()
}

/// No options given.
fn none() -> FqCodelOptions {
    FqCodelOptions::default()
}

#[test]
fn f1_default_dump() {
    let q = FqCodel::build(ctx(), &QdiscOptions::None).unwrap();
    let d = q.dump(Instant::ZERO);
    assert_eq!(
        d.options,
        QdiscOptions::FqCodel(FqCodelOptions {
            target: Some(4999),
            limit: Some(10240),
            interval: Some(99999),
            ecn: Some(true),
            flows: Some(1024),
            quantum: Some(1514),
            ce_threshold: None,
            drop_batch_size: Some(64),
            memory_limit: Some(33554432),
            ce_threshold_selector: None,
            ce_threshold_mask: None,
        })
    );
    assert_eq!(d.xstats, Some(Xstats::FqCodel(FqCodelXstats::default())));
    assert!(d.classes.is_empty());
    assert!(q.can_bypass());
}

#[test]
fn options_apply_and_validate() {
    let q = fq(FqCodelOptions {
        limit: Some(100),
        flows: Some(16),
        quantum: Some(300),
        target: Some(2000),
        interval: Some(20_000),
        ecn: Some(false),
        ce_threshold: Some(4000),
        ce_threshold_selector: Some(1),
        ce_threshold_mask: Some(3),
        memory_limit: Some(1 << 20),
        drop_batch_size: None,
    });
    assert_eq!(
        q.options(),
        FqCodelOptions {
            limit: Some(100),
            flows: Some(16),
            quantum: Some(300),
            target: Some(1999),
            interval: Some(19999),
            ecn: Some(false),
            ce_threshold: Some(3999),
            ce_threshold_selector: Some(1),
            ce_threshold_mask: Some(3),
            memory_limit: Some(1 << 20),
            drop_batch_size: Some(64),
        }
    );
    // quantum below 256 is raised; memory_limit capped at 2^31.
    let q = fq(FqCodelOptions {
        quantum: Some(100),
        memory_limit: Some(u32::MAX),
        ..none()
    });
    assert_eq!(q.quantum, 256);
    assert_eq!(q.memory_limit, 1 << 31);
    // drop_batch 0 is raised to 1 (`fq_codel_change`: max(1U, ..)).
    let q = fq(FqCodelOptions {
        drop_batch_size: Some(0),
        ..none()
    });
    assert_eq!(q.drop_batch, 1);
    let e = FqCodel::with_options(
        ctx(),
        &FqCodelOptions {
            quantum: Some(2_000_000),
            ..none()
        },
    )
    .err()
    .unwrap();
    assert_eq!(e.message.as_deref(), Some("Invalid quantum."), "{e:?}");
    let e = FqCodel::with_options(
        ctx(),
        &FqCodelOptions {
            flows: Some(70000),
            ..none()
        },
    )
    .err()
    .unwrap();
    assert!(e.says("flows 70000"), "{e:?}");
    let e = FqCodel::build(ctx(), &QdiscOptions::Sfq(Default::default()))
        .err()
        .unwrap();
    assert!(e.says("fq_codel"), "{e:?}");
}

#[test]
fn f3_drr_order() {
    let mut q = FqCodel::new(ctx());
    let mut d = Drops::new();
    for i in 0..10 {
        q.enqueue(bpkt(100 + i, 1500, 0), ms(0), &mut d);
    }
    for i in 0..10 {
        q.enqueue(bpkt(200 + i, 100, 1), ms(0), &mut d);
    }
    let order: String = ids(&mut q, 20, ms(0), &mut d)
        .iter()
        .map(|id| if *id < 200 { 'A' } else { 'B' })
        .collect();
    assert_eq!(order, "AABBBBBBBBBBAAAAAAAA");
    assert!(d.is_empty());
    assert_eq!(q.stats().packets, 20);
}

#[test]
fn byte_fairness_between_big_and_small_packets() {
    let mut q = FqCodel::new(ctx());
    let mut d = Drops::new();
    let (mut a_bytes, mut b_bytes) = (0u64, 0u64);
    let mut id = 0;
    for _ in 0..20_000 {
        while q.flows[0].queue.len() < 5 {
            q.enqueue(bpkt(id, 1500, 0), ms(0), &mut d);
            id += 1;
        }
        while q.flows[1].queue.len() < 5 {
            q.enqueue(bpkt(id, 100, 1), ms(0), &mut d);
            id += 1;
        }
        let p = q.dequeue(ms(0), &mut d).unwrap();
        if p.len == 1500 {
            a_bytes += 1500;
        } else {
            b_bytes += 100;
        }
    }
    let share = a_bytes as f64 / (a_bytes + b_bytes) as f64;
    assert!((share - 0.5).abs() < 0.01, "share {share}");
}

#[test]
fn sparse_flow_is_served_next() {
    let mut q = FqCodel::new(ctx());
    let mut d = Drops::new();
    for i in 0..20 {
        q.enqueue(bpkt(i, 1500, 0), ms(0), &mut d);
        q.enqueue(bpkt(100 + i, 1500, 1), ms(0), &mut d);
    }
    ids(&mut q, 6, ms(0), &mut d);
    assert_eq!(lists_len(&q, ms(0)), (0, 2));
    q.enqueue(bpkt(999, 84, 7), ms(0), &mut d);
    assert_eq!(q.dequeue(ms(0), &mut d).unwrap().meta.id, 999);
}

#[test]
fn new_flow_priority_lasts_one_quantum() {
    let mut q = FqCodel::new(ctx());
    let mut d = Drops::new();
    for i in 0..10 {
        q.enqueue(bpkt(i, 1500, 0), ms(0), &mut d);
    }
    ids(&mut q, 3, ms(0), &mut d); // A is now on the old list.
    for i in 0..5 {
        q.enqueue(bpkt(100 + i, 1000, 3), ms(0), &mut d);
    }
    // C: 1514 → 514 → -486: one quantum spent, it moves to the old
    // list (+1514) and from then on takes DRR turns with A.
    assert_eq!(ids(&mut q, 2, ms(0), &mut d), vec![100, 101]);
    assert_eq!(lists_len(&q, ms(0)), (1, 1));
    assert_eq!(ids(&mut q, 1, ms(0), &mut d), vec![102]);
    assert_eq!(lists_len(&q, ms(0)), (0, 2));
    assert_eq!(ids(&mut q, 3, ms(0), &mut d), vec![103, 3, 104]);
}

#[test]
fn emptied_new_flow_parks_in_old_list() {
    let mut q = FqCodel::new(ctx());
    let mut d = Drops::new();
    for i in 0..30 {
        q.enqueue(bpkt(i, 100, 0), ms(0), &mut d);
    }
    // 16 frames use A's first quantum; the 17th rotates A to the old list
    // with a fresh quantum (1428 → 1328 left).
    ids(&mut q, 17, ms(0), &mut d);
    q.enqueue(bpkt(500, 100, 5), ms(0), &mut d);
    assert_eq!(q.new_flow_count, 2);
    assert_eq!(q.dequeue(ms(0), &mut d).unwrap().meta.id, 500);
    // Next dequeue finds C empty at the head of new_flows: parked at the
    // tail of old_flows, not removed; A (positive deficit) sends.
    assert_eq!(q.dequeue(ms(0), &mut d).unwrap().meta.id, 17);
    assert_eq!(lists_len(&q, ms(0)), (0, 2));
    assert_eq!(q.dump(ms(0)).classes.len(), 2);
    // A packet for C now gets no new-flow priority and no new_flow_count.
    q.enqueue(bpkt(501, 100, 5), ms(0), &mut d);
    assert_eq!(q.new_flow_count, 2);
    assert_eq!(q.dequeue(ms(0), &mut d).unwrap().meta.id, 18);
}

#[test]
fn overflow_drops_from_fattest_flow_head() {
    let mut q = fq(FqCodelOptions {
        limit: Some(10),
        ..none()
    });
    let mut d = Drops::new();
    for i in 0..8 {
        assert_eq!(q.enqueue(bpkt(i, 1000, 0), ms(0), &mut d), Verdict::Queued);
    }
    q.enqueue(bpkt(100, 1000, 1), ms(0), &mut d);
    q.enqueue(bpkt(101, 1000, 1), ms(0), &mut d);
    // 11th frame: A holds 8000 B, threshold 4000 → 4 head drops.
    assert_eq!(
        q.enqueue(bpkt(102, 1000, 1), ms(0), &mut d),
        Verdict::Queued
    );
    let dropped: Vec<u64> = d.since(0).iter().map(|(p, _)| p.meta.id).collect();
    assert_eq!(dropped, vec![0, 1, 2, 3]);
    assert!(d
        .since(0)
        .iter()
        .all(|(_, r)| *r == DropReason::FqCodelOverlimit));
    assert_eq!(q.flows[0].cvars.count, 4);
    assert_eq!(q.qlen(), 7);
    assert_eq!(q.backlog(), 7000);
    assert_eq!(q.stats().drops, 4);
    assert_eq!(qd_xstats(&q, ms(0)).drop_overlimit, 4);
    // Arriving into the fattest flow: NET_XMIT_CN.
    for i in 0..3 {
        q.enqueue(bpkt(10 + i, 1000, 0), ms(0), &mut d);
    }
    assert_eq!(
        q.enqueue(bpkt(20, 1000, 0), ms(0), &mut d),
        Verdict::Congested
    );
    assert_eq!(q.qlen(), 7);
    assert_eq!(q.flows[0].queue.back().unwrap().meta.id, 20);
}

#[test]
fn drop_batch_caps_overflow_drops() {
    let mut q = fq(FqCodelOptions {
        limit: Some(20),
        drop_batch_size: Some(2),
        ..none()
    });
    let mut d = Drops::new();
    for i in 0..21 {
        q.enqueue(bpkt(i, 100, 0), ms(0), &mut d);
    }
    assert_eq!(d.len(), 2);
    assert_eq!(q.qlen(), 19);
}

#[test]
fn limit_zero_drops_everything_and_disables_bypass() {
    let mut q = FqCodel::new(ctx());
    q.limit = 0;
    assert!(!q.can_bypass());
    let mut d = Drops::new();
    assert_eq!(q.enqueue(bpkt(1, 100, 0), ms(0), &mut d), Verdict::Dropped);
    assert_eq!(q.qlen(), 0);
    assert_eq!(q.memory_usage(), 0);
    assert_eq!(d.len(), 1);
}

#[test]
fn memory_limit_drops() {
    assert_eq!(truesize(1514), 2304);
    assert_eq!(truesize(64), 768);
    let mut q = fq(FqCodelOptions {
        memory_limit: Some(10000),
        ..none()
    });
    let mut d = Drops::new();
    for i in 0..4 {
        q.enqueue(bpkt(i, 1514, 0), ms(0), &mut d);
    }
    assert!(d.is_empty());
    q.enqueue(bpkt(4, 1514, 1), ms(0), &mut d);
    assert_eq!(d.len(), 2, "half of flow 0's 6056 B = 2 frames");
    assert!(d
        .since(0)
        .iter()
        .all(|(_, r)| *r == DropReason::FqCodelMemory));
    let x = qd_xstats(&q, ms(0));
    assert_eq!(
        (x.ecn_mark, x.ce_mark, x.memory_usage, x.drop_overmemory),
        (0, 0, 6912, 2),
        "{x:?}"
    );
    assert_eq!(x.drop_overlimit, 2);
}

/// A standing queue of `n` frames with 10 ms sojourn in bucket 0,
/// dequeued every ms for `dur` ms.
fn standing(q: &mut FqCodel, ecn: u8, dur: u64, d: &mut Drops) -> u64 {
    let mut id = 0;
    let mut delivered = 0;
    for t in 20..20 + dur {
        while q.flows[0].queue.len() < 4 {
            let enq = Instant::from_nanos(t * NS_PER_MS - 10 * NS_PER_MS);
            q.enqueue(ect_bpkt(id, 1514, 0, ecn), enq, d);
            id += 1;
        }
        // Re-stamp so every head has exactly 10 ms sojourn.
        for p in q.flows[0].queue.iter_mut() {
            p.meta.enqueue_time = Instant::from_nanos(t * NS_PER_MS - 10 * NS_PER_MS);
        }
        if q.dequeue(ms(t), d).is_some() {
            delivered += 1;
        }
    }
    delivered
}

#[test]
fn ecn_marks_instead_of_drops() {
    let mut q = FqCodel::new(ctx());
    let mut d = Drops::new();
    standing(&mut q, 2, 500, &mut d);
    assert!(d.is_empty());
    assert!(q.cstats.ecn_mark >= 8);
    assert_eq!(qd_xstats(&q, ms(520)).ecn_mark, q.cstats.ecn_mark);
    assert_eq!(q.info[0].ecn_marks, q.cstats.ecn_mark);

    // Not-ECT frames are dropped.
    let mut q = FqCodel::new(ctx());
    let mut d = Drops::new();
    standing(&mut q, 0, 500, &mut d);
    assert!(d.len() >= 8);
    assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::Codel));
    assert_eq!(q.stats().drops as usize, d.len());
    assert_eq!(q.cstats.ecn_mark, 0);

    // noecn: ECT frames are dropped too.
    let mut q = fq(FqCodelOptions {
        ecn: Some(false),
        ..none()
    });
    let mut d = Drops::new();
    standing(&mut q, 2, 500, &mut d);
    assert!(d.len() >= 8);
}

/// CoDel's "backlog ≤ one MTU: never drop" test uses the qdisc-wide
/// backlog in fq_codel (net/sched/sch_fq_codel.c `fq_codel_dequeue` passes
/// `sch->qstats.backlog` to include/net/codel_impl.h `codel_dequeue`, whose
/// `codel_should_drop` tests it): flow A only ever holds one old frame; it
/// is dropped only when other flows make the qdisc-wide backlog exceed one
/// MTU.
fn lone_old_frame_drops(with_bulk: bool) -> (u64, u64) {
    let mut q = fq(FqCodelOptions {
        ecn: Some(false),
        ..none()
    });
    let mut d = Drops::new();
    let mut id = 0;
    for t in 30..600u64 {
        let now = ms(t);
        if q.flows[0].queue.is_empty() {
            q.enqueue(bpkt(id, 1514, 0), ms(t - 20), &mut d);
            id += 1;
        }
        if with_bulk {
            while q.flows[1].queue.len() < 4 {
                q.enqueue(bpkt(id, 1514, 1), now, &mut d);
                id += 1;
            }
            for p in q.flows[1].queue.iter_mut() {
                p.meta.enqueue_time = now;
            }
        }
        q.dequeue(now, &mut d);
    }
    (q.info[0].drops, q.info[1].drops)
}

#[test]
fn codel_mtu_test_uses_qdisc_backlog() {
    assert_eq!(lone_old_frame_drops(false), (0, 0));
    let (a, b) = lone_old_frame_drops(true);
    assert!(a > 0, "flow A dropped {a}");
    assert_eq!(b, 0);
}

#[test]
fn f6_class_dump_while_dropping() {
    let mut q = FqCodel::new(ctx());
    let mut d = Drops::new();
    // A constant 10 ms sojourn with a dequeue every 1 ms (as in
    // codel::tests::c3_drop_times), steered into bucket 0x3b0.
    let mut id = 0;
    for t in 20..400u64 {
        while q.flows[0x3b0].queue.len() < 4 {
            let enq = Instant::from_nanos(t * NS_PER_MS - 10 * NS_PER_MS);
            q.enqueue(bpkt(id, 1514, 0x3b0), enq, &mut d);
            id += 1;
        }
        for p in q.flows[0x3b0].queue.iter_mut() {
            p.meta.enqueue_time = Instant::from_nanos(t * NS_PER_MS - 10 * NS_PER_MS);
        }
        q.dequeue(ms(t), &mut d);
    }
    let dump = q.dump(ms(400));
    assert_eq!(dump.classes.len(), 1);
    let c = &dump.classes[0];
    assert_eq!(c.classid, 0x8001_03b1);
    assert_eq!(c.parent, 0x8001_0000);
    assert!(c.stats.is_none());
    assert_eq!((c.queue.qlen, c.queue.backlog), (3, 3 * 1514));
    // Drops at 121, 221, 271, 328, 377 ms (the c3_drop_times schedule
    // shifted by 20 ms): count 5.
    assert_eq!(d.len(), 5);
    let Some(Xstats::FqCodelClass(x)) = c.xstats else {
        panic!("{:?}", c.xstats)
    };
    assert!(
        (x.count, x.lastcount, x.dropping) == (5, 1, true) && sprint_time(x.ldelay_us) == "10ms",
        "{x:?}"
    );
    assert_eq!(dump.flows.len(), 1);
    assert_eq!(dump.flows[0].bucket, 0x3b0);
    assert!(dump.flows[0].codel_dropping);
    assert_eq!(dump.flows[0].drops, 5);
}

#[test]
fn peek_parks_frame_and_counts_it() {
    let mut q = FqCodel::new(ctx());
    let mut d = Drops::new();
    q.enqueue(bpkt(1, 500, 0), ms(0), &mut d);
    q.enqueue(bpkt(2, 500, 1), ms(0), &mut d);
    assert_eq!(q.peek(ms(0), &mut d).unwrap().meta.id, 1);
    assert_eq!(q.peek(ms(0), &mut d).unwrap().meta.id, 1);
    assert_eq!((q.qlen(), q.backlog()), (2, 1000));
    assert_eq!(q.stats().packets, 0);
    assert_eq!(q.dequeue(ms(0), &mut d).unwrap().meta.id, 1);
    assert_eq!(q.stats().packets, 1);
    assert_eq!(q.dequeue(ms(0), &mut d).unwrap().meta.id, 2);
    assert!(q.dequeue(ms(0), &mut d).is_none());
}

#[test]
fn classify_by_priority_and_hash() {
    let q = FqCodel::new(ctx());
    assert_eq!(q.classify(&mut bpkt(1, 100, 5)), Some(5));
    // Out-of-range minor or a foreign major falls back to the hash.
    let mut p = flow_pkt(1, 100, 3);
    p.meta.priority = tc_h_make(0x8001, 2000);
    assert!(q.classify(&mut p).unwrap() < 1024);
    p.meta.priority = tc_h_make(0x1, 1);
    let h = q.classify(&mut p);
    p.meta.priority = 0;
    assert_eq!(q.classify(&mut p), h);
    // Many flows spread over many buckets.
    let buckets: std::collections::HashSet<usize> = (0..200)
        .map(|f| q.classify(&mut flow_pkt(0, 100, f)).unwrap())
        .collect();
    assert!(buckets.len() > 150);
    // A handle-0 instance treats priority 1..flows as a bucket.
    let q0 = FqCodel::new(QdiscCtx { handle: 0, ..ctx() });
    let mut p = flow_pkt(1, 100, 3);
    p.meta.priority = 6;
    assert_eq!(q0.classify(&mut p), Some(5));
}

#[test]
fn change_at_runtime() {
    let mut q = FqCodel::new(ctx());
    let mut d = Drops::new();
    for i in 0..10 {
        q.enqueue(bpkt(i, 1000, 0), ms(0), &mut d);
        q.enqueue(bpkt(100 + i, 1000, 1), ms(0), &mut d);
    }
    let e = q
        .change(
            &QdiscOptions::FqCodel(FqCodelOptions {
                flows: Some(2048),
                ..none()
            }),
            ms(0),
            &mut d,
        )
        .err()
        .unwrap();
    assert!(e.says("only be set when the qdisc is created"));
    let e = q
        .change(
            &QdiscOptions::FqCodel(FqCodelOptions {
                limit: Some(5),
                quantum: Some(9999999),
                ..none()
            }),
            ms(0),
            &mut d,
        )
        .err()
        .unwrap();
    assert!(e.says("Invalid quantum"));
    assert_eq!(q.limit, 10240, "a failed change leaves the qdisc untouched");
    // Lower the limit: drops in dequeue order (DRR: A A B B ...).
    q.change(
        &QdiscOptions::FqCodel(FqCodelOptions {
            limit: Some(16),
            quantum: Some(2000),
            ..none()
        }),
        ms(0),
        &mut d,
    )
    .unwrap();
    assert_eq!(q.qlen(), 16);
    let dropped: Vec<u64> = d.since(0).iter().map(|(p, _)| p.meta.id).collect();
    assert_eq!(dropped, vec![0, 1, 100, 101]);
    assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::QdiscReset));
    assert_eq!(q.stats().drops, 4);
    let o = q.options();
    assert_eq!(
        (o.limit, o.flows, o.quantum),
        (Some(16), Some(1024), Some(2000))
    );
    // Lower memory_limit.
    q.change(
        &QdiscOptions::FqCodel(FqCodelOptions {
            memory_limit: Some(20000),
            ..none()
        }),
        ms(0),
        &mut d,
    )
    .unwrap();
    assert!(q.memory_usage() <= 20000);
    assert_eq!(q.qlen() as u64 * truesize(1000) as u64, q.memory_usage());
    // Target/interval/ecn switch without disturbing the queue.
    let before = q.qlen();
    q.change(
        &QdiscOptions::FqCodel(FqCodelOptions {
            target: Some(1000),
            ecn: Some(false),
            ..none()
        }),
        ms(0),
        &mut d,
    )
    .unwrap();
    assert_eq!(q.qlen(), before);
    assert_eq!(q.options().ecn, Some(false));
}

#[test]
fn reset_and_drain() {
    let mut q = FqCodel::new(ctx());
    let mut d = Drops::new();
    for i in 0..6 {
        q.enqueue(bpkt(i, 100, (i % 3) as u16), ms(0), &mut d);
    }
    q.peek(ms(0), &mut d);
    let drained = q.drain_all();
    assert_eq!(drained.len(), 6);
    assert_eq!(drained[0].meta.id, 0);
    assert_eq!((q.qlen(), q.backlog(), q.memory_usage()), (0, 0, 0));
    assert!(q.dump(ms(0)).classes.is_empty());
    for i in 0..4 {
        q.enqueue(bpkt(i, 100, 0), ms(0), &mut d);
    }
    q.reset(&mut d);
    assert_eq!(d.len(), 4);
    assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::QdiscReset));
    assert_eq!(q.qlen(), 0);
    // Usable again afterwards.
    q.enqueue(bpkt(9, 100, 0), ms(0), &mut d);
    assert_eq!(q.dequeue(ms(0), &mut d).unwrap().meta.id, 9);
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Enq { bucket: u16, len: u32, ecn: u8 },
        Deq,
        Peek,
        Wait(u64),
        Change(u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u16..6, 60u32..1515, 0u8..4).prop_map(|(bucket, len, ecn)| Op::Enq { bucket, len, ecn }),
            3 => Just(Op::Deq),
            1 => Just(Op::Peek),
            2 => (0u64..30).prop_map(Op::Wait),
            1 => (0u32..40).prop_map(Op::Change),
        ]
    }

    proptest! {
        #[test]
        fn frames_are_conserved_and_counters_agree(ops in proptest::collection::vec(op(), 1..400)) {
            let mut q = fq(FqCodelOptions {
                limit: Some(30),
                memory_limit: Some(40000),
                drop_batch_size: Some(3),
                ..none()
            });
            let mut d = Drops::new();
            let mut now = 0u64;
            let (mut enq, mut sent) = (0u64, 0u64);
            for (i, o) in ops.into_iter().enumerate() {
                let t = Instant::from_millis(now);
                match o {
                    Op::Enq { bucket, len, ecn } => {
                        enq += 1;
                        q.enqueue(ect_bpkt(i as u64, len, bucket, ecn), t, &mut d);
                    }
                    Op::Deq => sent += q.dequeue(t, &mut d).is_some() as u64,
                    Op::Peek => { q.peek(t, &mut d); }
                    Op::Wait(ms) => now += ms,
                    Op::Change(limit) => {
                        let o = FqCodelOptions { limit: Some(limit), ..none() };
                        q.change(&QdiscOptions::FqCodel(o), t, &mut d).unwrap();
                    }
                }
                let held: u32 = q.flows.iter().map(|f| f.queue.len() as u32).sum();
                let bytes: u64 = q.backlogs.iter().sum();
                let true_bytes: u64 = q.flows.iter().flat_map(|f| f.queue.iter()).map(|p| p.len as u64).sum();
                prop_assert_eq!(held, q.qlen);
                prop_assert_eq!(bytes, q.backlog);
                prop_assert_eq!(true_bytes, q.backlog);
                let mem: u64 = q.flows.iter().flat_map(|f| f.queue.iter()).map(|p| truesize(p.len) as u64).sum();
                prop_assert_eq!(mem, q.memory_usage);
                prop_assert_eq!(enq, sent + d.len() as u64 + q.qlen() as u64);
                prop_assert_eq!(q.stats().drops, d.len() as u64);
                prop_assert!(q.qlen() <= q.limit.max(1));
                let listed = q.new_flows.len() + q.old_flows.len();
                prop_assert_eq!(listed, q.flows.iter().filter(|f| f.list != ListTag::None).count());
                prop_assert!(q.flows.iter().all(|f| f.queue.is_empty() || f.list != ListTag::None));
            }
        }
    }
}
