//! Unit tests of the `drr` qdisc at explicit times, with expected values
//! worked out by hand from net/sched/sch_drr.c's functions each test cites.

use super::*;
use crate::packet::filter::{Family, Field, Filter, FilterKind, FilterProtocol, Match};
use crate::packet::L3;
use crate::qdisc::testutil::{flow_pkt, pkt};
use crate::qdisc::{tc_h_make, Xstats};

const H: Handle = 0x0001_0000;
const T: Instant = Instant::ZERO;

fn ctx() -> QdiscCtx {
    QdiscCtx {
        handle: H,
        ..QdiscCtx::default()
    }
}

fn cid(minor: u16) -> Handle {
    tc_h_make(1, minor)
}

/// `drr quantum N` (`None`: the attribute left out).
fn quantum(q: Option<u32>) -> ClassOptions {
    ClassOptions::Drr(DrrClassOptions { quantum: q })
}

/// A DRR with classes 1:minor of the quanta given.
fn drr_with(classes: &[(u16, u32)]) -> Drr {
    let mut q = Drr::build(ctx(), &QdiscOptions::None).unwrap();
    for &(minor, qu) in classes {
        q.add_class(cid(minor), H, &quantum(Some(qu))).unwrap();
    }
    q
}

/// A frame steered to class 1:`minor` by skb->priority.
fn to_class(id: u64, len: u32, minor: u16) -> Packet {
    let mut p = flow_pkt(id, len, minor);
    p.meta.priority = cid(minor);
    p
}

/// The class dump of 1:`minor`.
fn class(q: &Drr, minor: u16) -> ClassDump {
    q.dump(T)
        .classes
        .into_iter()
        .find(|c| c.classid == cid(minor))
        .unwrap()
}

fn deficit(q: &Drr, minor: u16) -> u32 {
    match class(q, minor).xstats {
        Some(Xstats::DrrClass(x)) => x.deficit,
        other => panic!("{other:?}"),
    }
}

#[test]
fn rounds_follow_the_deficits_frame_by_frame() {
    // Quanta 1000, 1500, 600; the classes join the active list in the
    // order of their first frames (drr_enqueue: list_add_tail, deficit =
    // quantum). drr_dequeue, by hand:
    //  1:1 A1 600 <= 1000 -> A1 (d1 400)
    //  1:1 A2 600 > 400 -> d1 1400, tail; 1:2 B1 1000 <= 1500 -> B1 (d2 500)
    //  1:2 B2 > 500 -> d2 2000, tail; 1:3 C1 700 > 600 -> d3 1200, tail;
    //      1:1 A2 -> A2 (d1 800)
    //  1:1 A3 600 <= 800 -> A3 (d1 200), 1:1 empty: off the list
    //  1:2 B2 1000 <= 2000 -> B2 (d2 1000), off the list
    //  1:3 C1 700 <= 1200 -> C1 (d3 500); C2 300 <= 500 -> C2 (d3 200)
    let mut q = drr_with(&[(1, 1000), (2, 1500), (3, 600)]);
    let mut d = Drops::new();
    for (id, len, minor) in [
        (1, 600, 1),
        (2, 600, 1),
        (3, 600, 1),
        (11, 1000, 2),
        (12, 1000, 2),
        (21, 700, 3),
        (22, 300, 3),
    ] {
        assert_eq!(
            q.enqueue(to_class(id, len, minor), T, &mut d),
            Verdict::Queued
        );
    }
    let mut order = Vec::new();
    let mut deficits = Vec::new();
    while let Some(p) = q.dequeue(T, &mut d) {
        order.push(p.meta.id);
        deficits.push((deficit(&q, 1), deficit(&q, 2), deficit(&q, 3)));
    }
    assert_eq!(order, [1, 11, 2, 3, 12, 21, 22]);
    // tc_drr_stats: the deficit, 0 once the class holds nothing.
    assert_eq!(
        deficits,
        [
            (400, 1500, 600),
            (1400, 500, 600),
            (800, 2000, 1200),
            (0, 2000, 1200),
            (0, 0, 1200),
            (0, 0, 500),
            (0, 0, 0),
        ]
    );
    assert!(d.is_empty());
    let c = class(&q, 1).stats.unwrap();
    assert_eq!((c.bytes, c.packets, c.qlen), (1800, 3, 0));
    assert_eq!(q.stats().bytes, 4800);
}

#[test]
fn a_class_that_empties_rejoins_at_the_tail_with_a_fresh_quantum() {
    let mut q = drr_with(&[(1, 1000), (2, 1000)]);
    let mut d = Drops::new();
    q.enqueue(to_class(1, 400, 1), T, &mut d);
    q.enqueue(to_class(11, 400, 2), T, &mut d);
    q.enqueue(to_class(12, 400, 2), T, &mut d);
    assert_eq!(q.dequeue(T, &mut d).unwrap().meta.id, 1);
    // 1:1 left the list with deficit 600; it comes back behind 1:2 with
    // its quantum again.
    q.enqueue(to_class(2, 1000, 1), T, &mut d);
    assert_eq!(deficit(&q, 1), 1000);
    let order: Vec<u64> = std::iter::from_fn(|| q.dequeue(T, &mut d))
        .map(|p| p.meta.id)
        .collect();
    assert_eq!(order, [11, 12, 2]);
}

#[test]
fn backlogged_quanta_1_2_4_share_in_that_ratio() {
    // Quanta of one, two and four 1514-byte frames: each round sends
    // exactly 1, 2 and 4 frames, so 700 dequeues are 100 rounds.
    let mut q = drr_with(&[(1, 1514), (2, 3028), (3, 6056)]);
    let mut d = Drops::new();
    let mut id = 0;
    for _ in 0..400 {
        for minor in 1..=3 {
            q.enqueue(to_class(id, 1514, minor), T, &mut d);
            id += 1;
        }
    }
    let mut sent = [0u64; 3];
    for _ in 0..700 {
        let p = q.dequeue(T, &mut d).unwrap();
        sent[(p.meta.priority & 0xffff) as usize - 1] += 1;
    }
    assert_eq!(sent, [100, 200, 400]);
}

#[test]
fn default_quantum_is_psched_mtu_and_change_keeps_what_is_left_out() {
    let mut q = Drr::build(ctx(), &QdiscOptions::None).unwrap();
    q.add_class(cid(1), H, &quantum(None)).unwrap();
    assert_eq!(class(&q, 1).options, quantum(Some(1514)));
    q.change_class(cid(1), &quantum(Some(3000))).unwrap();
    assert_eq!(class(&q, 1).options, quantum(Some(3000)));
    q.change_class(cid(1), &quantum(None)).unwrap();
    assert_eq!(class(&q, 1).options, quantum(Some(3000)));
    let dump = q.dump(T);
    assert_eq!(dump.options, QdiscOptions::None);
    let c = &dump.classes[0];
    assert_eq!(
        (c.parent, c.leaf, c.kind.as_str()),
        (TC_H_ROOT, None, "drr")
    );
}

#[test]
fn class_requests_are_refused_as_the_kernel_does() {
    let mut q = drr_with(&[(1, 1000)]);
    let e = q.add_class(cid(2), H, &ClassOptions::None).unwrap_err();
    assert_eq!(e.errno, Errno::EINVAL);
    assert!(
        e.says("DRR options are required for this operation"),
        "{e:?}"
    );
    let e = q.add_class(cid(2), H, &quantum(Some(0))).unwrap_err();
    assert!(e.says("Specified DRR quantum cannot be zero"), "{e:?}");
    let e = q.change_class(cid(1), &quantum(Some(0))).unwrap_err();
    assert!(e.says("Specified DRR quantum cannot be zero"), "{e:?}");
    assert_eq!(class(&q, 1).options, quantum(Some(1000)));
    assert!(Drr::build(
        ctx(),
        &QdiscOptions::Prio(crate::qdisc::prio::DEFAULT_OPTIONS)
    )
    .is_err());
    // drr_tcf_block: filters attach to the qdisc only.
    let e = q.chain_mut(Some(cid(1))).unwrap_err();
    assert!(e.says("DRR classid must be zero"), "{e:?}");
    assert_eq!(q.dump(T).classes.len(), 1);
}

#[test]
fn frames_without_a_class_are_dropped_and_counted() {
    let mut q = drr_with(&[(1, 1000)]);
    let mut d = Drops::new();
    // priority 0, no filter.
    assert_eq!(q.enqueue(pkt(1, 100), T, &mut d), Verdict::Dropped);
    // priority naming a class this DRR lacks.
    assert_eq!(q.enqueue(to_class(2, 100, 9), T, &mut d), Verdict::Dropped);
    assert!(d
        .since(0)
        .iter()
        .all(|(_, r)| *r == DropReason::Unclassified));
    let s = q.stats();
    assert_eq!((s.drops, s.qlen), (2, 0));
    assert!(q.dequeue(T, &mut d).is_none());
}

#[test]
fn filters_steer_and_a_targeted_class_cannot_be_deleted() {
    let mut q = drr_with(&[(1, 1000), (2, 1000)]);
    // parent 1: protocol all prio 1 u32 match ip dport 5001 0xffff flowid 1:2
    let dport = Match::new(Family::V4, Field::Dport, 5001, 0xffff);
    q.add_filter(Filter {
        parent: Some(H),
        prio: 1,
        ..Filter::new(FilterProtocol::All, FilterKind::U32, vec![dport], cid(2))
    })
    .unwrap();
    let mut d = Drops::new();
    let ip = |id, dport| {
        let mut p = pkt(id, 100);
        p.meta.l3 = L3::Ipv4 { offset: 14 };
        p.meta.flow.dst_port = dport;
        p
    };
    assert_eq!(q.enqueue(ip(1, 5001), T, &mut d), Verdict::Queued);
    // No filter matches dport 80: no class.
    assert_eq!(q.enqueue(ip(2, 80), T, &mut d), Verdict::Dropped);
    assert_eq!(class(&q, 2).stats.unwrap().qlen, 1);
    let e = q.delete_class(cid(2), &mut d).unwrap_err();
    assert_eq!(e.errno, Errno::EBUSY);
    assert!(e.says("DRR class is in use"), "{e:?}");
    assert_eq!(q.chain_mut(None).unwrap().delete(Some(1)), 1);
    // drr_delete_class: the class's frames are purged, as drops.
    q.delete_class(cid(2), &mut d).unwrap();
    assert_eq!(q.stats().drops, 2);
    assert_eq!(q.qlen(), 0);
    assert!(q.dequeue(T, &mut d).is_none());
    assert_eq!(q.dump(T).classes.len(), 1);
}

#[test]
fn child_drops_count_in_the_qdisc_and_the_class() {
    let mut q = Drr::build(
        QdiscCtx {
            txqueuelen: 2,
            ..ctx()
        },
        &QdiscOptions::None,
    )
    .unwrap();
    q.add_class(cid(1), H, &quantum(None)).unwrap();
    let mut d = Drops::new();
    for id in 0..5 {
        q.enqueue(to_class(id, 100, 1), T, &mut d);
    }
    assert_eq!(d.len(), 3);
    let s = q.stats();
    assert_eq!((s.drops, s.qlen, s.backlog), (3, 2, 200));
    let c = class(&q, 1).stats.unwrap();
    assert_eq!((c.drops, c.qlen, c.backlog, c.bytes), (3, 2, 200, 0));
}

#[test]
fn peek_parks_the_frame_dequeue_returns() {
    let mut q = drr_with(&[(1, 1000), (2, 1000)]);
    let mut d = Drops::new();
    q.enqueue(to_class(1, 600, 1), T, &mut d);
    q.enqueue(to_class(2, 600, 2), T, &mut d);
    assert_eq!(q.peek(T, &mut d).unwrap().meta.id, 1);
    assert_eq!((q.qlen(), q.backlog()), (2, 1200));
    assert_eq!(q.dump(T).occupancy.len(), 1, "the parked frame");
    assert_eq!(q.dequeue(T, &mut d).unwrap().meta.id, 1);
    assert_eq!(q.dequeue(T, &mut d).unwrap().meta.id, 2);
    assert_eq!(q.stats().packets, 2);
}

#[test]
fn graft_and_reset_take_classes_off_the_list() {
    let mut q = drr_with(&[(1, 1000), (2, 1000)]);
    let mut d = Drops::new();
    q.enqueue(to_class(1, 100, 1), T, &mut d);
    q.enqueue(to_class(2, 100, 2), T, &mut d);
    let fresh = Fifo::new(FifoKind::Bfifo, q.child_ctx(tc_h_make(10, 0), cid(1)));
    let old = q.graft(cid(1), Box::new(fresh)).unwrap().unwrap();
    assert_eq!(old.qlen(), 1);
    assert_eq!(class(&q, 1).leaf, Some(tc_h_make(10, 0)));
    assert_eq!(q.dequeue(T, &mut d).unwrap().meta.id, 2);
    assert!(q.dequeue(T, &mut d).is_none());
    q.enqueue(to_class(3, 100, 1), T, &mut d);
    q.enqueue(to_class(4, 100, 2), T, &mut d);
    q.peek(T, &mut d);
    q.reset(&mut d);
    assert_eq!((q.qlen(), d.len()), (0, 2));
    assert!(q.dequeue(T, &mut d).is_none());
    q.enqueue(to_class(5, 100, 2), T, &mut d);
    assert_eq!(q.drain_all().len(), 1);
    assert!(q.dequeue(T, &mut d).is_none());
}

#[test]
fn classes_are_listed_in_the_class_hash_order() {
    // drr_walk goes bucket by bucket (qdisc_class_hash), as HTB's walk.
    let q = drr_with(&[(1, 1000), (0x10, 1000), (0x20, 1000)]);
    let listed: Vec<Handle> = q.dump(T).classes.iter().map(|c| c.classid).collect();
    assert_eq!(listed, [cid(0x10), cid(1), cid(0x20)]);
}
