//! Unit tests of the `qfq` qdisc at explicit times, with expected values
//! derived from the kernel functions each test cites.

use super::*;
use crate::qdisc::testutil::{flow_pkt, pkt};
use crate::qdisc::{tc_h_major, tc_h_make};

const H: Handle = 0x0001_0000;

fn ctx() -> QdiscCtx {
    QdiscCtx {
        handle: H,
        ..QdiscCtx::default()
    }
}

fn cid(minor: u16) -> Handle {
    tc_h_make(1, minor)
}

/// A frame steered to class 1:`minor` by skb->priority.
fn to_class(id: u64, len: u32, minor: u16) -> Packet {
    let mut p = flow_pkt(id, len, minor);
    p.meta.priority = cid(minor);
    p
}

/// A class's attributes (`None`: left out).
fn copts(weight: Option<u32>, lmax: Option<u32>) -> ClassOptions {
    ClassOptions::Qfq(QfqClassOptions { weight, lmax })
}

/// Weight `w`, lmax left out.
fn w(weight: u32) -> ClassOptions {
    copts(Some(weight), None)
}

/// Both attributes left out.
fn dflt() -> ClassOptions {
    copts(None, None)
}

fn qfq_with(classes: &[(u16, ClassOptions)]) -> Qfq {
    let mut q = Qfq::build(ctx(), &QdiscOptions::None).unwrap();
    for (minor, options) in classes {
        q.add_class(cid(*minor), H, options).unwrap();
    }
    q
}

/// Keeps every class backlogged with frames of `len_of(class, n)` and
/// returns the bytes each class sent in `rounds` dequeues.
fn run_backlogged(
    q: &mut Qfq,
    minors: &[u16],
    rounds: usize,
    mut len_of: impl FnMut(u16, u64) -> u32,
) -> Vec<u64> {
    let mut d = Drops::new();
    let t = Instant::ZERO;
    let mut id = 0;
    for &m in minors {
        for _ in 0..20 {
            id += 1;
            q.enqueue(to_class(id, len_of(m, id), m), t, &mut d);
        }
    }
    let mut bytes = vec![0u64; minors.len()];
    for _ in 0..rounds {
        let p = q.dequeue(t, &mut d).expect("backlogged");
        let k = minors
            .iter()
            .position(|&m| cid(m) == p.meta.priority)
            .unwrap();
        bytes[k] += p.len as u64;
        id += 1;
        q.enqueue(to_class(id, len_of(minors[k], id), minors[k]), t, &mut d);
    }
    assert!(d.is_empty());
    bytes
}

fn assert_shares(bytes: &[u64], weights: &[u64], tolerance: f64) {
    let total: u64 = bytes.iter().sum();
    let wsum: u64 = weights.iter().sum();
    for (b, w) in bytes.iter().zip(weights) {
        let share = *b as f64 / total as f64;
        let ideal = *w as f64 / wsum as f64;
        assert!(
            (share / ideal - 1.0).abs() < tolerance,
            "share {share:.4} vs ideal {ideal:.4} (bytes {bytes:?})"
        );
    }
}

#[test]
fn weights_1_2_4_share_throughput() {
    let mut q = qfq_with(&[(1, w(1)), (2, w(2)), (3, w(4))]);
    let bytes = run_backlogged(&mut q, &[1, 2, 3], 70_000, |_, _| 1000);
    assert_shares(&bytes, &[1, 2, 4], 0.02);
}

#[test]
fn two_hundred_classes_with_mixed_weights_share_by_weight() {
    let minors: Vec<u16> = (1..=200).collect();
    let weights: Vec<u64> = minors.iter().map(|&m| 1 + (m as u64 * 7) % 8).collect();
    let spec: Vec<(u16, ClassOptions)> = minors
        .iter()
        .zip(&weights)
        .map(|(&m, &weight)| (m, w(weight as u32)))
        .collect();
    let mut q = qfq_with(&spec);
    // Sizes differ per class and per frame, so the eligible order keeps
    // changing.
    let bytes = run_backlogged(&mut q, &minors, 400_000, |m, n| {
        200 + ((m as u64 * 131 + n * 17) % 1300) as u32
    });
    assert_shares(&bytes, &weights, 0.03);
}

#[test]
fn mixed_sizes_share_bytes_not_packets() {
    // Class 1 sends 1514 B frames, class 2 random 64..1514 B: equal
    // weights give equal bytes.
    let mut rng = 0x1234_5678u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut q = qfq_with(&[(1, dflt()), (2, dflt())]);
    let bytes = run_backlogged(&mut q, &[1, 2], 50_000, |m, _| {
        if m == 1 {
            1514
        } else {
            64 + (next() % 1451) as u32
        }
    });
    assert_shares(&bytes, &[1, 1], 0.02);
    // And 1:3 with both classes of mixed sizes.
    let mut q = qfq_with(&[(1, w(1)), (2, w(3))]);
    let bytes = run_backlogged(&mut q, &[1, 2], 60_000, |_, _| 64 + (next() % 1451) as u32);
    assert_shares(&bytes, &[1, 3], 0.02);
}

#[test]
fn service_lag_is_bounded_by_a_few_lmax() {
    let mut q = qfq_with(&[(1, w(1)), (2, w(2)), (3, w(4))]);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    let minors = [1u16, 2, 3];
    let weights = [1.0, 2.0, 4.0];
    let mut id = 0;
    for &m in &minors {
        for _ in 0..10 {
            id += 1;
            q.enqueue(to_class(id, 1514, m), t, &mut d);
        }
    }
    let mut sent = [0f64; 3];
    let mut total = 0f64;
    let mut worst = 0f64;
    for _ in 0..10_000 {
        let p = q.dequeue(t, &mut d).unwrap();
        let k = minors
            .iter()
            .position(|&m| cid(m) == p.meta.priority)
            .unwrap();
        sent[k] += p.len as f64;
        total += p.len as f64;
        for k in 0..3 {
            let lag = (total * weights[k] / 7.0 - sent[k]).abs();
            worst = worst.max(lag);
        }
        id += 1;
        q.enqueue(to_class(id, 1514, minors[k]), t, &mut d);
    }
    assert!(worst <= 2.0 * 1514.0, "worst lag {worst} bytes");
}

#[test]
fn idle_time_is_not_credited() {
    let mut q = qfq_with(&[(1, dflt()), (2, dflt())]);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    // Class 1 alone for a long while.
    for id in 0..1000 {
        q.enqueue(to_class(id, 1000, 1), t, &mut d);
        assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, id);
    }
    // Both backlogged: class 2 gets its share, not a catch-up burst.
    for id in 0..100 {
        q.enqueue(to_class(10_000 + id, 1000, 1), t, &mut d);
        q.enqueue(to_class(20_000 + id, 1000, 2), t, &mut d);
    }
    let first: Vec<u64> = (0..20)
        .map(|_| q.dequeue(t, &mut d).unwrap().meta.id)
        .collect();
    let from_2 = first.iter().filter(|&&id| id >= 20_000).count();
    assert!(
        (9..=11).contains(&from_2),
        "class 2 sent {from_2} of 20: {first:?}"
    );
}

#[test]
fn longer_frame_raises_lmax_and_giant_is_dropped() {
    let mut q = qfq_with(&[(1, copts(None, Some(512)))]);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    assert_eq!(q.enqueue(to_class(1, 3000, 1), t, &mut d), Verdict::Queued);
    assert_eq!(q.dump(t).classes[0].options, copts(Some(1), Some(3000)));
    assert_eq!(
        q.enqueue(to_class(2, 70_000, 1), t, &mut d),
        Verdict::Dropped
    );
    assert_eq!(d.since(0)[0].1, DropReason::Oversize);
    assert_eq!(q.stats().drops, 1);
    assert_eq!(q.dequeue(t, &mut d).unwrap().len, 3000);
}

#[test]
fn unclassified_frames_are_dropped() {
    let mut q = qfq_with(&[(1, dflt())]);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    // priority 0 and no filter.
    assert_eq!(q.enqueue(pkt(1, 100), t, &mut d), Verdict::Dropped);
    // priority naming a missing class of this qdisc.
    assert_eq!(q.enqueue(to_class(2, 100, 9), t, &mut d), Verdict::Dropped);
    // priority of another qdisc's class.
    let mut p = pkt(3, 100);
    p.meta.priority = tc_h_make(2, 1);
    assert_eq!(q.enqueue(p, t, &mut d), Verdict::Dropped);
    assert!(d
        .since(0)
        .iter()
        .all(|(_, r)| *r == DropReason::Unclassified));
    let s = q.stats();
    assert_eq!((s.drops, s.qlen), (3, 0));
    assert!(q.dequeue(t, &mut d).is_none());
}

#[test]
fn filters_classify_and_skbedit_sets_priority() {
    let mut q = qfq_with(&[(1, dflt()), (2, dflt())]);
    use crate::packet::filter::{Family, Field, Filter, FilterKind, FilterProtocol, Match};
    // parent 1: protocol all prio 1 u32 match ip dport 5001 0xffff flowid 1:2
    let dport = Match::new(Family::V4, Field::Dport, 5001, 0xffff);
    q.add_filter(Filter {
        parent: Some(H),
        prio: 1,
        ..Filter::new(FilterProtocol::All, FilterKind::U32, vec![dport], cid(2))
    })
    .unwrap();
    // parent 1: protocol all prio 2 matchall flowid 1:1 action skbedit priority 5
    q.add_filter(Filter {
        parent: Some(H),
        prio: 2,
        skbedit_priority: Some(5),
        ..Filter::new(
            FilterProtocol::All,
            FilterKind::Matchall,
            Vec::new(),
            cid(1),
        )
    })
    .unwrap();
    let mut d = Drops::new();
    let t = Instant::ZERO;
    let mut ip = pkt(1, 100);
    ip.meta.l3 = crate::packet::L3::Ipv4 { offset: 14 };
    q.enqueue(ip, t, &mut d);
    q.enqueue(pkt(2, 100), t, &mut d); // non-IP: matchall
    assert!(d.is_empty());
    let dump = q.dump(t);
    assert_eq!(dump.classes[0].stats.unwrap().qlen, 1);
    assert_eq!(dump.classes[1].stats.unwrap().qlen, 1);
    let mut out: Vec<Packet> = (0..2).map(|_| q.dequeue(t, &mut d).unwrap()).collect();
    out.sort_by_key(|p| p.meta.id);
    assert_eq!(out[0].meta.priority, 0);
    assert_eq!(out[1].meta.priority, 5, "skbedit");
    // skb->priority selects before the filters do.
    q.enqueue(to_class(3, 100, 2), t, &mut d);
    assert_eq!(q.dump(t).classes[1].stats.unwrap().qlen, 1);
    // A class filters point to cannot be deleted until they go.
    let e = q.delete_class(cid(2), &mut d).unwrap_err();
    assert!(e.says("QFQ class in use"), "{e:?}");
    assert_eq!(q.filters.filters().len(), 2);
    assert_eq!(q.chain_mut(None).unwrap().delete(Some(1)), 1);
    q.delete_class(cid(2), &mut d).unwrap();
    assert!(q
        .filters
        .filters()
        .iter()
        .any(|f| f.kind == FilterKind::Matchall));
    assert_eq!(q.chain_mut(Some(H)).unwrap().delete(None), 1);
    let e = q.chain_mut(Some(cid(1))).unwrap_err();
    assert!(
        e.errno == Errno::EINVAL && e.message.is_none() && e.says("parent 1:"),
        "{e:?}"
    );
}

#[test]
fn child_drops_count_in_the_qdisc() {
    let mut q = Qfq::new(QdiscCtx {
        txqueuelen: 2,
        ..ctx()
    });
    q.add_class(cid(1), H, &dflt()).unwrap();
    let mut d = Drops::new();
    let t = Instant::ZERO;
    for id in 0..5 {
        q.enqueue(to_class(id, 100, 1), t, &mut d);
    }
    assert_eq!(d.len(), 3);
    let s = q.stats();
    assert_eq!((s.drops, s.qlen, s.backlog), (3, 2, 200));
    let c = q.dump(t).classes[0].stats.unwrap();
    assert_eq!((c.drops, c.qlen, c.backlog), (3, 2, 200));
}

#[test]
fn delete_class_drops_its_frames_and_frees_weight() {
    let mut q = qfq_with(&[(1, w(1024)), (2, w(1024))]);
    for m in 3..=64 {
        q.add_class(cid(m), H, &w(1024)).unwrap();
    }
    assert!(q
        .add_class(cid(65), H, &w(1))
        .unwrap_err()
        .says("total weight"));
    let mut d = Drops::new();
    let t = Instant::ZERO;
    for id in 0..4 {
        q.enqueue(to_class(id, 100, 1), t, &mut d);
        q.enqueue(to_class(10 + id, 100, 2), t, &mut d);
    }
    // Put class 1 or 2 in service, then delete both in turn.
    let first = q.dequeue(t, &mut d).unwrap();
    q.delete_class(first.meta.priority, &mut d).unwrap();
    assert_eq!(d.len(), 3);
    assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::QdiscReset));
    assert_eq!(q.stats().drops, 3);
    assert_eq!(q.qlen(), 4);
    for _ in 0..4 {
        let p = q.dequeue(t, &mut d).unwrap();
        assert_ne!(p.meta.priority, first.meta.priority);
    }
    assert!(q.dequeue(t, &mut d).is_none());
    q.add_class(cid(65), H, &w(1024)).unwrap();
    assert!(q.delete_class(cid(99), &mut d).is_err());
    // Frames for the deleted class are now unclassified.
    assert_eq!(
        q.enqueue(
            to_class(50, 100, tc_h_minor(first.meta.priority)),
            t,
            &mut d
        ),
        Verdict::Dropped
    );
}

#[test]
fn delete_before_the_class_in_service_keeps_scheduling() {
    let mut q = qfq_with(&[(1, dflt()), (2, dflt()), (3, dflt())]);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    for id in 0..3 {
        q.enqueue(to_class(id, 600, 3), t, &mut d);
    }
    q.enqueue(to_class(9, 600, 1), t, &mut d);
    // Class 1 or 3 is in service; delete class 2 (an index shift).
    q.dequeue(t, &mut d).unwrap();
    q.delete_class(cid(2), &mut d).unwrap();
    let mut left = 0;
    while q.dequeue(t, &mut d).is_some() {
        left += 1;
    }
    assert_eq!(left, 3);
    assert_eq!(q.qlen(), 0);
}

#[test]
fn graft_replaces_the_child() {
    let mut q = qfq_with(&[(1, dflt()), (2, dflt())]);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    for id in 0..3 {
        q.enqueue(to_class(id, 100, 1), t, &mut d);
    }
    let new_ctx = q.child_ctx(tc_h_make(0x10, 0), cid(1));
    let new = Fifo::with_limit(FifoKind::Pfifo, new_ctx, 1);
    let old = q.graft(cid(1), Box::new(new)).unwrap().unwrap();
    assert_eq!(old.qlen(), 3, "old child keeps its frames for the caller");
    assert_eq!(q.qlen(), 0);
    assert!(q.dequeue(t, &mut d).is_none());
    q.enqueue(to_class(5, 100, 1), t, &mut d);
    assert_eq!(q.enqueue(to_class(6, 100, 1), t, &mut d), Verdict::Dropped);
    assert_eq!(q.stats().drops, 1);
    let dump = q.dump(t);
    assert_eq!(dump.classes[0].leaf, Some(tc_h_make(0x10, 0)));
    assert_eq!(dump.classes[1].leaf, None);
    assert_eq!(
        dump.children[0].options,
        crate::qdisc::QdiscOptions::Fifo(crate::qdisc::fifo::FifoOptions { limit: 1 })
    );
    assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, 5);
    assert!(q
        .graft(cid(7), Box::new(Fifo::new(FifoKind::Pfifo, new_ctx)))
        .is_err());
    // Grafting a non-empty child activates the class.
    let mut full = Fifo::new(FifoKind::Pfifo, new_ctx);
    full.enqueue(to_class(7, 100, 2), t, &mut d);
    q.graft(cid(2), Box::new(full)).unwrap();
    assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, 7);
    assert!(q.child_mut(cid(2)).is_some());
    assert_eq!(q.children_mut().len(), 2);
}

#[test]
fn dump_prints_like_tc() {
    let mut q = qfq_with(&[(1, dflt()), (0x20, copts(Some(10), Some(2000)))]);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    q.enqueue(to_class(1, 500, 0x20), t, &mut d);
    q.enqueue(to_class(2, 700, 0x20), t, &mut d);
    q.dequeue(t, &mut d).unwrap();
    let dump = q.dump(t);
    assert_eq!(
        (dump.kind.as_str(), dump.handle, dump.parent),
        ("qfq", H, TC_H_ROOT)
    );
    assert_eq!(dump.options, QdiscOptions::None);
    let c = &dump.classes[1];
    assert_eq!(
        (c.kind.as_str(), c.classid, c.parent, c.leaf),
        ("qfq", cid(0x20), TC_H_ROOT, None)
    );
    assert_eq!(c.options, copts(Some(10), Some(2000)));
    let s = c.stats.unwrap();
    // The class counts at enqueue, the qdisc at dequeue.
    assert_eq!((s.bytes, s.packets, s.qlen, s.backlog), (1200, 2, 1, 700));
    assert_eq!(dump.classes[0].options, copts(Some(1), Some(1514)));
    assert_eq!(dump.children.len(), 2);
    assert_eq!(dump.children[1].kind, "pfifo");
    assert_eq!(
        (dump.children[1].handle, dump.children[1].parent),
        (0, cid(0x20))
    );
    assert_eq!(
        dump.children[1].options,
        crate::qdisc::QdiscOptions::Fifo(crate::qdisc::fifo::FifoOptions { limit: 1000 })
    );
    assert_eq!(
        (dump.stats.bytes, dump.stats.packets, dump.stats.backlog),
        (500, 1, 700)
    );
}

#[test]
fn class_options_are_validated() {
    let mut q = qfq_with(&[]);
    // (The words tc refuses before sending: crate::tc::opts::qfq.)
    let bad = [
        (cid(1), H, w(0), "invalid weight 0"),
        (cid(1), H, w(1025), "1..1024"),
        (cid(1), H, copts(None, Some(511)), "512..65536"),
        (cid(1), H, copts(None, Some(65537)), "65537"),
        (tc_h_make(2, 1), H, dflt(), "2:1"),
        (cid(0), H, dflt(), "1:0"),
        (cid(1), cid(5), dflt(), "flat"),
    ];
    for (classid, parent, options, needle) in bad {
        let e = q.add_class(classid, parent, &options).unwrap_err();
        assert!(e.says(needle), "{options:?}: {e:?}");
    }
    assert!(q.classes.is_empty());
    let mut tiny = Qfq::new(QdiscCtx {
        psched_mtu: 300,
        ..ctx()
    });
    let e = tiny.add_class(cid(1), H, &dflt()).unwrap_err();
    assert!(e.says("MTU size out of bounds"), "{e:?}");
    tiny.add_class(cid(1), H, &copts(None, Some(512))).unwrap();
    q.add_class(cid(1), TC_H_ROOT, &copts(Some(1024), Some(65536)))
        .unwrap();
    assert!(q
        .add_class(cid(1), H, &dflt())
        .unwrap_err()
        .says("already exists"));
    // No ClassOptions at all: the defaults.
    q.add_class(cid(2), H, &ClassOptions::None).unwrap();
    assert_eq!(tc_h_major(q.classes[0].classid), 1);
}

#[test]
fn change_class_reweights_at_runtime() {
    let mut q = qfq_with(&[(1, w(1)), (2, w(1))]);
    let bytes = run_backlogged(&mut q, &[1, 2], 10_000, |_, _| 1000);
    assert_shares(&bytes, &[1, 1], 0.02);
    q.change_class(cid(2), &w(3)).unwrap();
    let bytes = run_backlogged(&mut q, &[1, 2], 40_000, |_, _| 1000);
    assert_shares(&bytes, &[1, 3], 0.02);
    // Omitted options go back to the defaults, as in the kernel.
    q.change_class(cid(2), &copts(None, Some(4000))).unwrap();
    assert_eq!(
        q.dump(Instant::ZERO).classes[1].options,
        copts(Some(1), Some(4000))
    );
    assert!(q.change_class(cid(9), &dflt()).is_err());
    assert!(q.change_class(cid(1), &w(2000)).is_err());
    // Lowering maxpkt below queued frames does not stall them.
    q.change_class(cid(1), &copts(None, Some(512))).unwrap();
    q.change_class(cid(2), &copts(None, Some(512))).unwrap();
    let mut d = Drops::new();
    let mut n = 0;
    while q.dequeue(Instant::ZERO, &mut d).is_some() {
        n += 1;
    }
    assert_eq!(n, 80);
}

#[test]
fn peek_shows_what_dequeue_returns() {
    let mut q = qfq_with(&[(1, w(1)), (2, w(3))]);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    for id in 0..30 {
        q.enqueue(
            to_class(id, 300 + (id as u32 % 7) * 100, 1 + (id % 2) as u16),
            t,
            &mut d,
        );
    }
    while let Some(id) = q.peek(t, &mut d).map(|p| p.meta.id) {
        assert_eq!(q.peek(t, &mut d).unwrap().meta.id, id);
        assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, id);
    }
    assert_eq!(q.qlen(), 0);
}

#[test]
fn reset_and_drain_all_empty_every_class() {
    let mut q = qfq_with(&[(1, dflt()), (2, dflt())]);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    for id in 0..6 {
        q.enqueue(to_class(id, 100, 1 + (id % 2) as u16), t, &mut d);
    }
    q.dequeue(t, &mut d).unwrap();
    let drained = q.drain_all();
    assert_eq!(drained.len(), 5);
    assert_eq!((q.qlen(), q.backlog()), (0, 0));
    assert!(q.dequeue(t, &mut d).is_none());
    for id in 10..14 {
        q.enqueue(to_class(id, 100, 1), t, &mut d);
    }
    q.reset(&mut d);
    assert_eq!(d.len(), 4);
    assert_eq!(q.qlen(), 0);
    // Counters survive a reset.
    assert_eq!(q.stats().packets, 1);
    q.enqueue(to_class(20, 100, 2), t, &mut d);
    assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, 20);
}

#[test]
fn fifo_order_within_a_class() {
    let mut q = qfq_with(&[(1, dflt()), (2, w(7))]);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    for id in 0..200 {
        q.enqueue(
            to_class(id, 64 + (id as u32 * 37) % 1400, 1 + (id % 2) as u16),
            t,
            &mut d,
        );
    }
    let mut last = [None::<u64>; 2];
    while let Some(p) = q.dequeue(t, &mut d) {
        let k = (p.meta.id % 2) as usize;
        assert!(last[k].is_none_or(|l| l < p.meta.id));
        last[k] = Some(p.meta.id);
    }
}

proptest::proptest! {
    #[test]
    fn random_operations_conserve_frames(
        ops in proptest::collection::vec((0u8..8, 0u16..6, 60u32..3000), 1..300)
    ) {
        let mut q = Qfq::new(QdiscCtx { txqueuelen: 5, ..ctx() });
        let mut d = Drops::new();
        let t = Instant::ZERO;
        let (mut offered, mut sent) = (0u64, 0u64);
        for (id, (op, minor, len)) in ops.into_iter().enumerate() {
            match op {
                0..=3 => {
                    offered += 1;
                    q.enqueue(to_class(id as u64, len, minor), t, &mut d);
                }
                4 | 5 => sent += q.dequeue(t, &mut d).is_some() as u64,
                6 => {
                    let _ = q.add_class(cid(minor), H, &w(len % 1024 + 1));
                }
                _ => {
                    let _ = q.delete_class(cid(minor), &mut d);
                }
            }
            let held = q.qlen() as u64;
            proptest::prop_assert_eq!(offered, sent + d.len() as u64 + held);
            proptest::prop_assert_eq!(q.stats().drops, d.len() as u64);
            proptest::prop_assert_eq!(q.stats().packets, sent);
            let backlog: u64 = q.classes.iter().map(|c| c.child.backlog()).sum();
            proptest::prop_assert_eq!(q.backlog(), backlog);
        }
        while q.dequeue(t, &mut d).is_some() {
            sent += 1;
        }
        proptest::prop_assert_eq!(offered, sent + d.len() as u64);
    }
}
