//! Unit tests of the `sfq` qdisc at explicit times, with expected values
//! derived from the kernel functions each test cites.

use super::*;
use crate::qdisc::tc_h_make;
use crate::qdisc::testutil::flow_pkt;

fn ctx() -> QdiscCtx {
    QdiscCtx::default()
}

fn sfq(o: SfqOptions) -> Sfq {
    Sfq::with_options(ctx(), &o).unwrap()
}

/// No options given.
fn none() -> SfqOptions {
    SfqOptions::default()
}

/// A frame steered into `bucket` by `skb->priority = 8001:(bucket+1)`.
fn bpkt(id: u64, len: u32, bucket: u16) -> Packet {
    let mut p = flow_pkt(id, len, bucket);
    p.meta.priority = tc_h_make(0x8001, bucket + 1);
    p
}

fn t0() -> Instant {
    Instant::ZERO
}

fn drain_ids(q: &mut Sfq, d: &mut Drops) -> Vec<u64> {
    std::iter::from_fn(|| q.dequeue(t0(), d))
        .map(|p| p.meta.id)
        .collect()
}

#[test]
fn s6_dump() {
    let q = Sfq::build(ctx(), &QdiscOptions::None).unwrap();
    let d = q.dump(t0());
    assert_eq!(
        d.options,
        QdiscOptions::Sfq(SfqOptions {
            quantum: 1514,
            perturb_period: 0,
            limit: 127,
            divisor: 1024,
            flows: 128,
            depth: 127,
            headdrop: false,
            ..SfqOptions::default()
        })
    );
    assert!(d.xstats.is_none());
    let q = sfq(SfqOptions {
        perturb_period: 10,
        ..none()
    });
    assert_eq!(q.options().perturb_period, 10);
    let q = sfq(SfqOptions {
        headdrop: true,
        quantum: 3000,
        depth: 20,
        ..none()
    });
    let o = q.options();
    assert_eq!(
        (o.limit, o.quantum, o.depth, o.headdrop),
        (127, 3000, 20, true)
    );
}

#[test]
fn parameter_rules() {
    // Effective limit = min(limit, depth × flows); flows capped by limit.
    let q = sfq(SfqOptions {
        limit: 1000,
        depth: 10,
        flows: 20,
        ..none()
    });
    assert_eq!((q.limit, q.maxflows), (200, 20));
    let q = sfq(SfqOptions {
        limit: 50,
        ..none()
    });
    assert_eq!((q.limit, q.maxflows), (50, 50));
    // depth clamped to 127; flows capped by divisor.
    let q = sfq(SfqOptions {
        depth: 500,
        divisor: 64,
        flows: 1000,
        ..none()
    });
    assert_eq!((q.maxdepth, q.maxflows, q.divisor), (127, 64, 64));
    let q = sfq(SfqOptions {
        flows: 100000,
        ..none()
    });
    assert_eq!(q.maxflows, MAX_FLOWS);
    let fails = |o: SfqOptions| Sfq::with_options(ctx(), &o).err().unwrap();
    let e = fails(SfqOptions {
        limit: 5,
        depth: 1,
        flows: 1,
        ..none()
    });
    assert_eq!(
        e.message.as_deref(),
        Some("sch_sfq: invalid limit."),
        "{e:?}"
    );
    let e = fails(SfqOptions {
        divisor: 1000,
        ..none()
    });
    assert!(e.says("divisor 1000"), "{e:?}");
    fails(SfqOptions {
        divisor: 131072,
        ..none()
    });
    let e = fails(SfqOptions {
        perturb_period: -1,
        ..none()
    });
    assert!(e.says("invalid perturb period"), "{e:?}");
    let e = fails(SfqOptions {
        quantum: 1 << 31,
        ..none()
    });
    assert_eq!(
        e.message.as_deref(),
        Some("sch_sfq: invalid quantum."),
        "{e:?}"
    );
    let e = Sfq::build(ctx(), &QdiscOptions::Codel(Default::default()))
        .err()
        .unwrap();
    assert!(e.says("sfq"), "{e:?}");
}

#[test]
fn change_is_not_supported() {
    let mut q = sfq(none());
    let e = q
        .change(
            &QdiscOptions::Sfq(SfqOptions {
                limit: 10,
                ..none()
            }),
            t0(),
            &mut Drops::new(),
        )
        .err()
        .unwrap();
    assert_eq!(
        e,
        Refusal::new(
            Errno::EINVAL,
            "Change operation not supported by specified qdisc."
        )
    );
}

#[test]
fn s1_dequeue_order() {
    let mut q = sfq(none());
    let mut d = Drops::new();
    for i in 0..10 {
        q.enqueue(bpkt(100 + i, 1500, 1), t0(), &mut d);
    }
    for i in 0..10 {
        q.enqueue(bpkt(200 + i, 100, 2), t0(), &mut d);
    }
    let order: String = drain_ids(&mut q, &mut d)
        .iter()
        .map(|id| if *id < 200 { 'A' } else { 'B' })
        .collect();
    assert_eq!(order, "AABBBBBBBBBBAAAAAAAA");
    assert_eq!(q.stats().packets, 20);
    assert_eq!(q.qlen(), 0);
    assert!(q.tail.is_none());
    assert_eq!(q.free.len(), 128);
}

#[test]
fn s1_allot_trace() {
    let mut q = sfq(none());
    let mut d = Drops::new();
    for i in 0..10 {
        q.enqueue(bpkt(i, 1500, 1), t0(), &mut d);
    }
    for i in 0..10 {
        q.enqueue(bpkt(100 + i, 100, 2), t0(), &mut d);
    }
    let allot = |q: &Sfq| q.dump(t0()).classes[0].xstats.clone();
    let sx = |allot| Some(Xstats::SfqClass(SfqXstats { allot }));
    assert_eq!(allot(&q), sx(1514));
    q.dequeue(t0(), &mut d);
    assert_eq!(allot(&q), sx(14));
    q.dequeue(t0(), &mut d);
    assert_eq!(allot(&q), sx(-1486));
    q.dequeue(t0(), &mut d); // A rotated (+1514 = 28), B sends.
    assert_eq!(allot(&q), sx(28));
    let c = &q.dump(t0()).classes;
    assert_eq!(c[0].classid, 0x8001_0002);
    assert_eq!(c[1].classid, 0x8001_0003);
    assert_eq!((c[1].queue.qlen, c[1].queue.backlog), (9, 900));
    assert_eq!(c[1].xstats, sx(1414));
}

#[test]
fn s2_byte_fairness_exact_counts() {
    let mut q = sfq(none());
    let mut d = Drops::new();
    let (mut a_bytes, mut b_bytes, mut a_pkts, mut b_pkts) = (0u64, 0u64, 0u64, 0u64);
    let mut id = 0;
    let mut refill = |q: &mut Sfq, d: &mut Drops| {
        for (bucket, len) in [(1u16, 1500u32), (2, 100)] {
            let x = q.ht[bucket as usize];
            let have = if x == EMPTY {
                0
            } else {
                q.slots[x as usize].queue.len()
            };
            for _ in have..4 {
                q.enqueue(bpkt(id, len, bucket), t0(), d);
                id += 1;
            }
        }
    };
    for _ in 0..100_000 {
        refill(&mut q, &mut d);
        let p = q.dequeue(t0(), &mut d).unwrap();
        if p.len == 1500 {
            a_bytes += 1500;
            a_pkts += 1;
        } else {
            b_bytes += 100;
            b_pkts += 1;
        }
    }
    assert!(d.is_empty());
    assert_eq!((a_bytes, b_bytes), (9_376_500, 9_374_900));
    assert_eq!((a_pkts, b_pkts), (6251, 93749));
}

#[test]
fn new_slot_joins_end_of_round() {
    let mut q = sfq(none());
    let mut d = Drops::new();
    for i in 0..3 {
        q.enqueue(bpkt(10 + i, 1500, 1), t0(), &mut d);
        q.enqueue(bpkt(20 + i, 1500, 2), t0(), &mut d);
    }
    assert_eq!(q.dequeue(t0(), &mut d).unwrap().meta.id, 10);
    // C arrives: served after A's and B's current turns.
    q.enqueue(bpkt(30, 100, 3), t0(), &mut d);
    assert_eq!(drain_ids(&mut q, &mut d), vec![11, 20, 21, 30, 12, 22]);
}

#[test]
fn overflow_drops_tail_of_longest_slot() {
    let mut q = sfq(SfqOptions {
        limit: 10,
        ..none()
    });
    let mut d = Drops::new();
    for i in 0..6 {
        q.enqueue(bpkt(i, 100, 1), t0(), &mut d);
    }
    for i in 0..4 {
        q.enqueue(bpkt(10 + i, 100, 2), t0(), &mut d);
    }
    assert_eq!(q.enqueue(bpkt(20, 100, 3), t0(), &mut d), Verdict::Queued);
    assert_eq!(d.since(0)[0].0.meta.id, 5);
    assert_eq!(d.since(0)[0].1, DropReason::SfqOverflow);
    assert_eq!((q.qlen(), q.backlog()), (10, 1000));
    assert_eq!(q.stats().drops, 1);
    // Arriving into the longest slot: the arriving frame is the tail.
    assert_eq!(q.enqueue(bpkt(6, 100, 1), t0(), &mut d), Verdict::Dropped);
    assert_eq!(d.since(1)[0].0.meta.id, 6);
}

#[test]
fn overflow_tie_goes_to_most_recent() {
    let mut q = sfq(SfqOptions {
        limit: 10,
        ..none()
    });
    let mut d = Drops::new();
    for i in 0..5 {
        q.enqueue(bpkt(i, 100, 1), t0(), &mut d);
    }
    for i in 0..5 {
        q.enqueue(bpkt(10 + i, 100, 2), t0(), &mut d);
    }
    // Both hold 5; B reached 5 last.
    q.enqueue(bpkt(20, 100, 3), t0(), &mut d);
    assert_eq!(d.since(0)[0].0.meta.id, 14);
    // Now A 5, B 4, C 1. Bring B back to 5: B is again the latest.
    q.enqueue(bpkt(15, 100, 2), t0(), &mut d);
    assert_eq!(d.since(1)[0].0.meta.id, 15, "arriving frame of B dropped");
    // Dequeue one of A (A 4) then refill A to 5: A is now the latest.
    assert_eq!(q.dequeue(t0(), &mut d).unwrap().meta.id, 0);
    q.enqueue(bpkt(5, 100, 1), t0(), &mut d);
    assert!(d.len() == 2, "9 + 1 = 10 frames, no drop");
    q.enqueue(bpkt(6, 100, 1), t0(), &mut d);
    assert_eq!(d.since(2)[0].0.meta.id, 6);
}

#[test]
fn headdrop_overflow_and_depth() {
    let mut q = sfq(SfqOptions {
        limit: 10,
        headdrop: true,
        ..none()
    });
    let mut d = Drops::new();
    for i in 0..10 {
        q.enqueue(bpkt(i, 100, 1), t0(), &mut d);
    }
    assert_eq!(
        q.enqueue(bpkt(10, 100, 1), t0(), &mut d),
        Verdict::Congested
    );
    assert_eq!(d.since(0)[0].0.meta.id, 0);
    assert_eq!(d.since(0)[0].1, DropReason::SfqOverflow);

    let mut q = sfq(SfqOptions {
        depth: 3,
        headdrop: true,
        ..none()
    });
    let mut d = Drops::new();
    for i in 0..3 {
        q.enqueue(bpkt(i, 100 + i as u32, 1), t0(), &mut d);
    }
    assert_eq!(q.enqueue(bpkt(3, 500, 1), t0(), &mut d), Verdict::Congested);
    assert_eq!(d.since(0)[0].0.meta.id, 0);
    assert_eq!(d.since(0)[0].1, DropReason::HeadDrop);
    assert_eq!((q.qlen(), q.backlog()), (3, 101 + 102 + 500));
    assert_eq!(drain_ids(&mut q, &mut d), vec![1, 2, 3]);

    let mut q = sfq(SfqOptions { depth: 3, ..none() });
    let mut d = Drops::new();
    for i in 0..4 {
        q.enqueue(bpkt(i, 100, 1), t0(), &mut d);
    }
    assert_eq!(d.since(0)[0].0.meta.id, 3);
    assert_eq!(d.since(0)[0].1, DropReason::QueueFull);
    assert_eq!(q.stats().drops, 1);
}

#[test]
fn all_slots_one_packet_drops_next_served_slot() {
    // Default: 128 slots, limit 127.
    let mut q = sfq(none());
    let mut d = Drops::new();
    for b in 0..128u16 {
        q.enqueue(bpkt(b as u64, 100, b), t0(), &mut d);
    }
    assert_eq!(d.len(), 1);
    assert_eq!(d.since(0)[0].0.meta.id, 0, "slot served next");
    assert_eq!(q.qlen(), 127);
    assert_eq!(q.ht[0], EMPTY);
    assert_eq!(q.dequeue(t0(), &mut d).unwrap().meta.id, 1);
    assert_eq!(q.dump(t0()).classes.len(), 126);
}

#[test]
fn no_free_slot_drops_arrival() {
    let mut q = sfq(SfqOptions { flows: 2, ..none() });
    let mut d = Drops::new();
    q.enqueue(bpkt(1, 100, 1), t0(), &mut d);
    q.enqueue(bpkt(2, 100, 2), t0(), &mut d);
    assert_eq!(q.enqueue(bpkt(3, 100, 3), t0(), &mut d), Verdict::Dropped);
    assert_eq!(d.since(0)[0].1, DropReason::SfqOverflow);
    q.dequeue(t0(), &mut d);
    assert_eq!(q.enqueue(bpkt(4, 100, 3), t0(), &mut d), Verdict::Queued);
}

#[test]
fn perturb_rekeys_and_rehashes_keeping_flow_order() {
    let mut q = sfq(SfqOptions {
        perturb_period: 1,
        ..none()
    });
    let mut d = Drops::new();
    let mut id = 0;
    for round in 0..5 {
        for f in 0..20u16 {
            let mut p = flow_pkt(id, 100 + round, f);
            p.meta.id = (f as u64) * 1000 + round as u64;
            q.enqueue(p, Instant::from_millis(100), &mut d);
            id += 1;
        }
    }
    let key0 = q.hash_key;
    let buckets0: Vec<u32> = q.dump(t0()).classes.iter().map(|c| c.classid).collect();
    // Before the period: no change.
    q.dequeue(Instant::from_millis(900), &mut d).unwrap();
    assert_eq!(q.hash_key, key0);
    // After 1 s from the first call: re-keyed and rehashed.
    q.enqueue(
        flow_pkt(999_999, 64, 99),
        Instant::from_millis(1100),
        &mut d,
    );
    assert_ne!(q.hash_key, key0);
    let buckets1: Vec<u32> = q.dump(t0()).classes.iter().map(|c| c.classid).collect();
    assert_ne!(buckets0, buckets1);
    assert!(d.is_empty());
    assert_eq!(q.qlen(), 100);
    let out = drain_ids(&mut q, &mut d);
    assert_eq!(out.len(), 100);
    for f in 0..20u64 {
        let rounds: Vec<u64> = out
            .iter()
            .filter(|id| **id / 1000 == f && **id < 999_999)
            .map(|id| id % 1000)
            .collect();
        let expected: Vec<u64> = if f == 0 {
            (1..5).collect()
        } else {
            (0..5).collect()
        };
        assert_eq!(rounds, expected, "flow {f}");
    }
}

#[test]
fn with_filters_perturb_rekeys_but_leaves_frames_where_filters_put_them() {
    let mut q = sfq(SfqOptions {
        perturb_period: 1,
        ..none()
    });
    // tc filter add ... parent 8001: protocol all matchall flowid 8001:7
    let f = crate::packet::filter::Filter {
        parent: Some(0x8001_0000),
        ..crate::packet::filter::Filter::new(
            crate::packet::filter::FilterProtocol::All,
            crate::packet::filter::FilterKind::Matchall,
            Vec::new(),
            0x8001_0007,
        )
    };
    q.add_filter(f).unwrap();
    let mut d = Drops::new();
    for f in 0..10u16 {
        q.enqueue(
            flow_pkt(f as u64, 100, f),
            Instant::from_millis(100),
            &mut d,
        );
    }
    let key0 = q.hash_key;
    q.enqueue(flow_pkt(10, 100, 10), Instant::from_millis(1200), &mut d);
    assert_ne!(q.hash_key, key0, "re-keyed");
    let classes: Vec<u32> = q.dump(t0()).classes.iter().map(|c| c.classid).collect();
    assert_eq!(
        classes,
        vec![0x8001_0007],
        "all 11 frames still in bucket 7"
    );
    assert!(d.is_empty());
}

#[test]
fn perturb_rehash_drops_beyond_depth() {
    let mut q = sfq(SfqOptions {
        perturb_period: 1,
        depth: 4,
        divisor: 2,
        ..none()
    });
    let key0 = q.hash_key;
    let key1: u32 = q.rng.clone().gen();
    let bucket = |f: u16, key: u32| keyed_flow_hash(flow_pkt(0, 1, f).meta.hash, key) & 1;
    // Two flows apart under the old key that collide under the new one.
    let (f1, f2) = (0..200u16)
        .flat_map(|a| (0..200u16).map(move |b| (a, b)))
        .find(|&(a, b)| bucket(a, key0) != bucket(b, key0) && bucket(a, key1) == bucket(b, key1))
        .expect("some pair collides");
    let mut d = Drops::new();
    for i in 0..3 {
        q.enqueue(flow_pkt(i, 100, f1), t0(), &mut d);
        q.enqueue(flow_pkt(10 + i, 100, f2), t0(), &mut d);
    }
    assert_eq!(q.dump(t0()).classes.len(), 2);
    q.peek(Instant::from_millis(1500), &mut d);
    assert_eq!(q.hash_key, key1);
    assert_eq!(d.len(), 2, "6 frames into one slot of depth 4");
    assert!(d
        .since(0)
        .iter()
        .all(|(_, r)| *r == DropReason::SfqOverflow));
    assert_eq!(q.stats().drops, 0, "rehash frees are not counted (kernel)");
    assert_eq!(q.qlen(), 4);
    assert_eq!(q.dump(t0()).classes.len(), 1);
}

#[test]
fn peek_reset_drain() {
    let mut q = sfq(none());
    let mut d = Drops::new();
    for i in 0..4 {
        q.enqueue(bpkt(i, 100, (i % 2) as u16), t0(), &mut d);
    }
    assert_eq!(q.peek(t0(), &mut d).unwrap().meta.id, 0);
    assert_eq!((q.qlen(), q.backlog()), (4, 400));
    assert_eq!(q.stats().packets, 0);
    assert_eq!(q.dequeue(t0(), &mut d).unwrap().meta.id, 0);
    q.peek(t0(), &mut d);
    let drained: Vec<u64> = q.drain_all().iter().map(|p| p.meta.id).collect();
    assert_eq!(drained.len(), 3);
    assert_eq!((q.qlen(), q.backlog()), (0, 0));
    assert_eq!(q.free.len(), 128);
    for i in 0..4 {
        q.enqueue(bpkt(i, 100, i as u16), t0(), &mut d);
    }
    q.reset(&mut d);
    assert_eq!(d.len(), 4);
    assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::QdiscReset));
    assert!(q.dump(t0()).classes.is_empty());
    assert!(q.can_bypass());
}

#[test]
fn hash_buckets_low_bits() {
    let q = sfq(SfqOptions {
        divisor: 16,
        ..none()
    });
    for f in 0..100 {
        assert!(q.classify(&mut flow_pkt(0, 64, f)).unwrap() < 16);
    }
    let mut p = flow_pkt(0, 64, 1);
    p.meta.priority = tc_h_make(0x8001, 16);
    assert_eq!(q.classify(&mut p), Some(15));
    p.meta.priority = tc_h_make(0x8001, 17);
    assert!(q.classify(&mut p).unwrap() < 16);
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Enq { flow: u16, len: u32 },
        Deq,
        Peek,
        Wait(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            5 => (0u16..12, 60u32..1515).prop_map(|(flow, len)| Op::Enq { flow, len }),
            3 => Just(Op::Deq),
            1 => Just(Op::Peek),
            1 => (0u64..700).prop_map(Op::Wait),
        ]
    }

    fn check(o: SfqOptions, ops: Vec<Op>, perturb: bool) -> Result<(), TestCaseError> {
        let mut q = sfq(o);
        let mut d = Drops::new();
        let mut now = 0u64;
        let (mut enq, mut sent) = (0u64, 0u64);
        let mut last_out: std::collections::HashMap<u16, u64> = Default::default();
        for (i, o) in ops.into_iter().enumerate() {
            let t = Instant::from_millis(now);
            match o {
                Op::Enq { flow, len } => {
                    enq += 1;
                    let mut p = flow_pkt(i as u64, len, flow);
                    p.meta.id = i as u64;
                    q.enqueue(p, t, &mut d);
                }
                Op::Deq => {
                    if let Some(p) = q.dequeue(t, &mut d) {
                        sent += 1;
                        // Per-flow FIFO order holds, perturbation or not.
                        let flow = p.meta.flow.src_port;
                        let prev = last_out.insert(flow, p.meta.id);
                        prop_assert!(prev.is_none_or(|x| x < p.meta.id));
                    }
                }
                Op::Peek => {
                    q.peek(t, &mut d);
                }
                Op::Wait(ms) => now += ms,
            }
            let active: Vec<usize> =
                q.ht.iter()
                    .filter(|x| **x != EMPTY)
                    .map(|x| *x as usize)
                    .collect();
            let held: usize = active.iter().map(|x| q.slots[*x].queue.len()).sum();
            let bytes: u64 = active.iter().map(|x| q.slots[*x].backlog).sum();
            prop_assert_eq!(held as u32, q.qlen);
            prop_assert_eq!(bytes, q.backlog);
            prop_assert!(active.iter().all(|x| !q.slots[*x].queue.is_empty()));
            prop_assert!(active
                .iter()
                .all(|x| q.slots[*x].queue.len() <= q.maxdepth as usize));
            prop_assert_eq!(active.len() + q.free.len(), q.maxflows as usize);
            prop_assert!(q.qlen() <= q.limit);
            prop_assert_eq!(enq, sent + d.len() as u64 + q.qlen() as u64);
            if !perturb {
                prop_assert_eq!(q.stats().drops, d.len() as u64);
            }
            // The round visits exactly the active slots.
            let mut ring = 0;
            if let Some(t) = q.tail {
                let mut x = t;
                loop {
                    ring += 1;
                    x = q.slots[x as usize].next;
                    if x == t || ring > q.maxflows {
                        break;
                    }
                }
            }
            prop_assert_eq!(ring as usize, active.len());
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn invariants_hold(ops in proptest::collection::vec(op(), 1..400)) {
            check(SfqOptions { limit: 20, depth: 6, flows: 5, divisor: 8, ..none() }, ops, false)?;
        }

        #[test]
        fn invariants_hold_with_headdrop(ops in proptest::collection::vec(op(), 1..400)) {
            check(SfqOptions { limit: 20, depth: 6, headdrop: true, divisor: 16, ..none() }, ops, false)?;
        }

        #[test]
        fn invariants_hold_with_perturb(ops in proptest::collection::vec(op(), 1..400)) {
            check(SfqOptions { limit: 20, depth: 6, flows: 5, divisor: 8, perturb_period: 1, ..none() }, ops, true)?;
        }
    }
}

// Per-flow RED (net/sched/sch_sfq.c `sfq_enqueue`'s `if (q->red_parms)`
// block, include/net/red.h).

/// RED options with the thresholds in bytes, Wlog 1 and max_P 1/2^32 (an
/// early decision then needs a draw below excess × qcount, a chance of a
/// few in a million per frame: the seeded draws of these tests make none).
fn red_opts(min: u32, max: u32, flags: u32, headdrop: bool) -> SfqOptions {
    SfqOptions {
        qth_min: min,
        qth_max: max,
        wlog: 1,
        max_p: 1,
        flags,
        headdrop,
        ..none()
    }
}

/// A frame with ECN field `ecn` steered into `bucket`.
fn ecn_bpkt(id: u64, len: u32, bucket: u16, ecn: u8) -> Packet {
    let mut p = crate::qdisc::testutil::ect_pkt(id, len, ecn);
    p.meta.priority = tc_h_make(0x8001, bucket + 1);
    p
}

fn slot_qavg(q: &Sfq, bucket: usize) -> u64 {
    q.slots[q.ht[bucket] as usize].vars.qavg
}

fn red_stats(q: &Sfq) -> SfqRedStats {
    match q.dump(t0()).options {
        QdiscOptions::Sfq(o) => o.red_stats,
        other => panic!("{other:?}"),
    }
}

/// With Wlog 1, qavg ← qavg + backlog - qavg / 2 (red_calc_qavg_no_idle_time
/// on the slot's backlog before the arrival), thresholds scaled by 2: 4000
/// and 12000. 1000-byte frames to one slot: the first takes the slot
/// (red_set_vars, no RED), then qavg = 1000, 2500, 4250 (in the band,
/// qcount 0: no decision), 6125, 8063, 10032, 12016 (at or above max: a
/// forced drop of the arrival, counted as an overlimit), 13008.
#[test]
fn red_average_follows_the_slot_backlog_as_computed_by_hand() {
    let mut q = sfq(red_opts(2000, 6000, 0, false));
    let mut d = Drops::new();
    let mut seen = vec![];
    for id in 0..9 {
        let v = q.enqueue(bpkt(id, 1000, 3), t0(), &mut d);
        seen.push((slot_qavg(&q, 3), v));
    }
    let want_qavg = [0, 1000, 2500, 4250, 6125, 8063, 10032, 12016, 13008];
    assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), want_qavg);
    assert!(seen[..7].iter().all(|s| s.1 == Verdict::Queued), "{seen:?}");
    assert_eq!(seen[7].1, Verdict::Dropped);
    assert_eq!(seen[8].1, Verdict::Dropped);
    let reasons: Vec<_> = d.since(0).iter().map(|(p, r)| (p.meta.id, *r)).collect();
    assert_eq!(
        reasons,
        [(7, DropReason::SfqRedForced), (8, DropReason::SfqRedForced)]
    );
    let st = red_stats(&q);
    assert_eq!((st.forced_drop, st.prob_drop, st.forced_mark), (2, 0, 0));
    assert_eq!(q.counters().overlimits, 2);
    assert_eq!(q.counters().drops, 2);
    assert_eq!(q.qlen(), 7);
}

/// A slot emptied and taken again starts from qavg 0 (`red_set_vars` when
/// `sfq_enqueue` takes a free slot).
#[test]
fn a_new_slot_starts_a_new_average() {
    let mut q = sfq(red_opts(2000, 6000, 0, false));
    let mut d = Drops::new();
    for id in 0..3 {
        q.enqueue(bpkt(id, 1000, 3), t0(), &mut d);
    }
    assert_eq!(slot_qavg(&q, 3), 2500);
    assert_eq!(drain_ids(&mut q, &mut d).len(), 3);
    q.enqueue(bpkt(10, 1000, 3), t0(), &mut d);
    q.enqueue(bpkt(11, 1000, 3), t0(), &mut d);
    assert_eq!(slot_qavg(&q, 3), 1000);
}

/// At or above max with `ecn`: an ECN-capable arrival is marked CE and
/// queued (`forced_mark`), a Not-ECT one dropped (`forced_drop`); with
/// `harddrop` too, ECN-capable arrivals are dropped (`sfq_hard_mark`).
#[test]
fn ecn_marks_above_max_and_harddrop_drops() {
    // Thresholds 4000 / 6000 scaled: the fifth frame sees 6125.
    for (flags, marked) in [(TC_RED_ECN, true), (TC_RED_ECN | TC_RED_HARDDROP, false)] {
        let mut q = sfq(red_opts(2000, 3000, flags, false));
        let mut d = Drops::new();
        for id in 0..4 {
            assert_eq!(
                q.enqueue(ecn_bpkt(id, 1000, 1, 2), t0(), &mut d),
                Verdict::Queued
            );
        }
        let v = q.enqueue(ecn_bpkt(4, 1000, 1, 2), t0(), &mut d);
        let v_not_ect = q.enqueue(ecn_bpkt(5, 1000, 1, 0), t0(), &mut d);
        assert_eq!(v_not_ect, Verdict::Dropped);
        let st = red_stats(&q);
        if marked {
            assert_eq!(v, Verdict::Queued);
            assert_eq!((st.forced_mark, st.forced_drop), (1, 1));
            let out: Vec<_> = std::iter::from_fn(|| q.dequeue(t0(), &mut d)).collect();
            assert_eq!(out.len(), 5);
            assert!(out[4].meta.ce_marked && out[4].meta.ecn() == 3);
            assert!(out[..4].iter().all(|p| !p.meta.ce_marked));
        } else {
            assert_eq!(v, Verdict::Dropped);
            assert_eq!((st.forced_mark, st.forced_drop), (0, 2));
        }
        assert_eq!(q.counters().overlimits, 2);
    }
}

/// With `headdrop` and `ecn`, the slot's head is marked rather than the
/// arrival (`forced_mark_head`; a head already CE counts as marked, as
/// INET_ECN_set_ce answers); a Not-ECT head leaves the mark to the arrival;
/// with nothing markable, the head is dropped and the arrival queued
/// (`congestion_drop` with headdrop, NET_XMIT_CN).
#[test]
fn headdrop_marks_or_drops_the_head() {
    let mut q = sfq(red_opts(2000, 3000, TC_RED_ECN, true));
    let mut d = Drops::new();
    for id in 0..4 {
        q.enqueue(ecn_bpkt(id, 1000, 1, 1), t0(), &mut d);
    }
    assert_eq!(
        q.enqueue(ecn_bpkt(4, 1000, 1, 2), t0(), &mut d),
        Verdict::Queued
    );
    assert_eq!(
        q.enqueue(ecn_bpkt(5, 1000, 1, 2), t0(), &mut d),
        Verdict::Queued
    );
    let st = red_stats(&q);
    assert_eq!(
        (st.forced_mark_head, st.forced_mark, st.forced_drop),
        (2, 0, 0)
    );
    let out: Vec<_> = std::iter::from_fn(|| q.dequeue(t0(), &mut d)).collect();
    let ce: Vec<bool> = out.iter().map(|p| p.meta.ce_marked).collect();
    assert_eq!(ce, [true, false, false, false, false, false]);

    // Not-ECT head: the ECT arrival is marked; Not-ECT both: the head goes.
    let mut q = sfq(red_opts(2000, 3000, TC_RED_ECN, true));
    for id in 0..4 {
        q.enqueue(ecn_bpkt(id, 1000, 1, 0), t0(), &mut d);
    }
    assert_eq!(
        q.enqueue(ecn_bpkt(4, 1000, 1, 2), t0(), &mut d),
        Verdict::Queued
    );
    let before = d.since(0).len();
    assert_eq!(
        q.enqueue(ecn_bpkt(5, 1000, 1, 0), t0(), &mut d),
        Verdict::Congested
    );
    let dropped: Vec<_> = d
        .since(before)
        .iter()
        .map(|(p, r)| (p.meta.id, *r))
        .collect();
    assert_eq!(dropped, [(0, DropReason::SfqRedForced)]);
    let st = red_stats(&q);
    assert_eq!(
        (st.forced_mark_head, st.forced_mark, st.forced_drop),
        (0, 1, 1)
    );
    let ids = drain_ids(&mut q, &mut d);
    assert_eq!(ids, [1, 2, 3, 4, 5]);
}

/// In the band, with ECN-capable traffic and max_P = 1 (100 %), early
/// decisions mark and never drop (`prob_mark`); without ECN they drop
/// (`prob_drop`, `sfq_red_prob`), tail drop without headdrop.
#[test]
fn early_decisions_mark_ecn_flows_and_drop_others() {
    // Thresholds 20000 / 200000 bytes, Wlog 1: a slot of 20 kB to 100 kB
    // keeps the average in the band; each round enqueues two and sends one.
    for ecn in [2u8, 0] {
        let mut q = sfq(SfqOptions {
            max_p: u32::MAX,
            depth: 127,
            ..red_opts(20_000, 200_000, TC_RED_ECN, false)
        });
        let mut d = Drops::new();
        let mut id = 0;
        let mut marked = 0;
        for _ in 0..60 {
            for _ in 0..2 {
                q.enqueue(ecn_bpkt(id, 1500, 2, ecn), t0(), &mut d);
                id += 1;
            }
            if q.qlen() > 60 {
                marked += q
                    .dequeue(t0(), &mut d)
                    .map_or(0, |p| p.meta.ce_marked as u32);
            }
        }
        let st = red_stats(&q);
        assert_eq!(st.forced_drop + st.forced_mark, 0, "{st:?}");
        if ecn == 2 {
            assert!(st.prob_mark > 3, "{st:?}");
            assert_eq!(st.prob_drop, 0);
            let rest: u32 = std::iter::from_fn(|| q.dequeue(t0(), &mut d))
                .map(|p| p.meta.ce_marked as u32)
                .sum();
            assert_eq!(marked + rest, st.prob_mark);
            assert!(d.since(0).is_empty());
        } else {
            assert!(st.prob_drop > 3, "{st:?}");
            assert_eq!(st.prob_mark, 0);
            assert_eq!(d.since(0).len() as u32, st.prob_drop);
            assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::SfqRedProb));
        }
        assert_eq!(
            q.counters().overlimits,
            u64::from(st.prob_drop + st.prob_mark)
        );
    }
}

/// `sfq_dump` sends the thresholds unscaled (`qth_min >> Wlog`), Wlog,
/// Plog, Scell_log, max_P (derived from Plog when 0: `red_set_parms`),
/// the flags and the counters; `limit` (redflowlimit) comes back 0.
#[test]
fn the_dump_carries_red_parameters_and_counters() {
    let q = sfq(SfqOptions {
        red_limit: 100_000,
        qth_min: 8000,
        qth_max: 60_000,
        wlog: 6,
        plog: 18,
        scell_log: 3,
        max_p: 0,
        flags: TC_RED_ECN,
        ..none()
    });
    let QdiscOptions::Sfq(o) = q.dump(t0()).options else {
        panic!()
    };
    // max_P = (~0 >> 18) × 52000.
    let max_p = (u32::MAX >> 18).wrapping_mul(52_000);
    assert_eq!(
        (
            o.red_limit,
            o.qth_min,
            o.qth_max,
            o.wlog,
            o.plog,
            o.scell_log,
            o.max_p,
            o.flags
        ),
        (0, 8000, 60_000, 6, 18, 3, max_p, TC_RED_ECN)
    );
    assert_eq!(o.red_stats, SfqRedStats::default());
    // Without RED the fields stay 0 except the flags, which the kernel
    // keeps as given.
    let QdiscOptions::Sfq(o) = sfq(SfqOptions { flags: 3, ..none() }).dump(t0()).options else {
        panic!()
    };
    assert_eq!(
        (o.qth_min, o.qth_max, o.wlog, o.max_p, o.flags),
        (0, 0, 0, 0, 3)
    );
}

/// `sfq_change`'s `red_check_params` (newer kernels): EINVAL when the
/// scaled thresholds pass 31 bits, max is below min or Scell_log ≥ 32.
#[test]
fn red_parameters_are_checked() {
    let bad = [
        SfqOptions {
            qth_min: 1 << 20,
            qth_max: 1 << 21,
            wlog: 10,
            ..none()
        },
        SfqOptions {
            qth_min: 5000,
            qth_max: 4000,
            wlog: 1,
            ..none()
        },
        SfqOptions {
            qth_min: 1000,
            qth_max: 4000,
            scell_log: 32,
            ..none()
        },
    ];
    for o in bad {
        let e = Sfq::with_options(ctx(), &o).err().unwrap();
        assert_eq!(e.errno, Errno::EINVAL, "{o:?}");
        assert!(e.says("RED min"), "{e:?}");
    }
    // Without RED (qth_min 0) any max passes: max ≥ min holds.
    assert!(Sfq::with_options(
        ctx(),
        &SfqOptions {
            qth_max: 5,
            ..none()
        }
    )
    .is_ok());
}

/// `sfq_rehash` resets each slot's RED state and recomputes the average
/// as it puts the frames back (`red_calc_qavg` on the backlog before each).
#[test]
fn rehash_recomputes_the_averages() {
    let mut q = sfq(SfqOptions {
        perturb_period: 1,
        ..red_opts(2000, 6000, 0, false)
    });
    let mut d = Drops::new();
    for id in 0..5 {
        q.enqueue(flow_pkt(id, 1000, 7), t0(), &mut d);
    }
    let bucket = q.ht.iter().position(|x| *x != EMPTY).unwrap();
    assert_eq!(slot_qavg(&q, bucket), 6125);
    // Past the perturbation: the five frames come back to one slot with
    // qavg over 0, 1000, 2000, 3000, 4000 bytes: 0, 1000, 2500, 4250, 6125.
    q.maybe_perturb(Instant::from_millis(1000), &mut d);
    q.maybe_perturb(Instant::from_millis(2000), &mut d);
    let bucket = q.ht.iter().position(|x| *x != EMPTY).unwrap();
    assert_eq!(slot_qavg(&q, bucket), 6125);
    q.slots[q.ht[bucket] as usize].vars.qavg = 99;
    q.maybe_perturb(Instant::from_millis(3000), &mut d);
    let bucket = q.ht.iter().position(|x| *x != EMPTY).unwrap();
    assert_eq!(slot_qavg(&q, bucket), 6125);
}

/// Without RED the serialized options (summaries, configurations) carry no
/// RED field; with it they do.
#[test]
fn red_fields_serialize_only_when_set() {
    let plain = serde_json::to_value(none()).unwrap();
    assert!(
        plain.get("qth_min").is_none() && plain.get("red_stats").is_none(),
        "{plain}"
    );
    assert!(plain.get("headdrop").is_some());
    let red = serde_json::to_value(red_opts(2000, 6000, TC_RED_ECN, false)).unwrap();
    assert_eq!(red["qth_min"], 2000);
    assert_eq!(red["flags"], TC_RED_ECN);
    let back: SfqOptions = serde_json::from_value(red).unwrap();
    assert_eq!(back, red_opts(2000, 6000, TC_RED_ECN, false));
}
