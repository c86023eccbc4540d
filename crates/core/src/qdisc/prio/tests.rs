//! Unit tests of the `prio` qdisc at explicit times, with expected values
//! derived from the net/sched/sch_prio.c functions each test cites.

use super::*;
use crate::packet::filter::{Family, Field, Filter, FilterKind, FilterProtocol, Match};
use crate::packet::L3;
use crate::qdisc::fifo::{Fifo, FifoKind};
use crate::qdisc::tc_h_make;
use crate::qdisc::testutil::{pkt, tos_pkt};

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

fn opts(bands: u32, priomap: [u8; 16]) -> QdiscOptions {
    QdiscOptions::Prio(PrioOptions { bands, priomap })
}

fn prio(bands: u32, priomap: [u8; 16]) -> Prio {
    Prio::build(ctx(), &opts(bands, priomap)).unwrap()
}

/// A frame with `skb->priority` `priority`.
fn with_priority(id: u64, priority: u32) -> Packet {
    let mut p = pkt(id, 100);
    p.meta.priority = priority;
    p
}

/// Frames held per band.
fn band_lens(q: &Prio) -> Vec<u32> {
    q.bands.queues.iter().map(|c| c.qlen()).collect()
}

#[test]
fn band_zero_starves_band_two_while_it_has_frames() {
    // prio_dequeue: the lowest band that has a frame, every time.
    let mut q = Prio::build(ctx(), &QdiscOptions::None).unwrap();
    let mut d = Drops::new();
    // TC_PRIO_INTERACTIVE (6) maps to band 0, TC_PRIO_BULK (2) to band 2.
    for i in 0..50 {
        q.enqueue(with_priority(1000 + i, 2), T, &mut d);
    }
    let mut next = 0;
    // Under load: two band-0 frames arrive for each one sent; band 2 waits.
    for _ in 0..100 {
        for _ in 0..2 {
            q.enqueue(with_priority(next, 6), T, &mut d);
            next += 1;
        }
        let p = q.dequeue(T, &mut d).unwrap();
        assert!(p.meta.id < 1000, "band 2's frame {} went first", p.meta.id);
    }
    assert_eq!(band_lens(&q), vec![100, 0, 50]);
    // Band 0 drains in order, then band 2 in order.
    let order: Vec<u64> = std::iter::from_fn(|| q.dequeue(T, &mut d))
        .map(|p| p.meta.id)
        .collect();
    let expected: Vec<u64> = (100..200).chain(1000..1050).collect();
    assert_eq!(order, expected);
    assert!(d.is_empty());
    assert_eq!(q.stats().packets, 250);
}

#[test]
fn priomap_classifies_by_tos() {
    // The default priomap, as pfifo_fast's (rt_tos2priority, then
    // prio2band[priority & TC_PRIO_MAX]).
    let mut q = Prio::build(ctx(), &QdiscOptions::None).unwrap();
    let mut d = Drops::new();
    for (id, (tos, band)) in [(0x10u8, 0usize), (0x00, 1), (0x08, 2), (0x18, 1)]
        .into_iter()
        .enumerate()
    {
        let before = band_lens(&q);
        q.enqueue(tos_pkt(id as u64, 100, tos), T, &mut d);
        let after = band_lens(&q);
        assert_eq!(after[band], before[band] + 1, "tos {tos:#04x}");
    }
    // A priomap of its own on 4 bands: priority p to band p % 4.
    let map: [u8; 16] = std::array::from_fn(|p| (p % 4) as u8);
    let mut q = prio(4, map);
    for priority in 0..16u32 {
        q.enqueue(with_priority(priority as u64, priority), T, &mut d);
    }
    assert_eq!(band_lens(&q), vec![4, 4, 4, 4]);
    // TOS 0x10 (minimize delay) is priority 6: band 2 here.
    q.enqueue(tos_pkt(99, 100, 0x10), T, &mut d);
    assert_eq!(band_lens(&q), vec![4, 4, 5, 4]);
}

#[test]
fn priority_naming_the_qdisc_picks_the_band() {
    let map = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];
    let mut q = prio(3, map);
    let mut d = Drops::new();
    q.enqueue(with_priority(1, cid(3)), T, &mut d);
    assert_eq!(band_lens(&q), vec![0, 0, 1]);
    // A minor beyond the bands (and minor 0): prio2band[0], band 1.
    q.enqueue(with_priority(2, cid(9)), T, &mut d);
    q.enqueue(with_priority(3, cid(0)), T, &mut d);
    assert_eq!(band_lens(&q), vec![0, 2, 1]);
    // Another qdisc's major, no filters: the priority counts as 0.
    q.enqueue(with_priority(4, tc_h_make(5, 6)), T, &mut d);
    assert_eq!(band_lens(&q), vec![0, 3, 1]);
}

#[test]
fn filters_steer_to_bands() {
    let mut q = Prio::build(ctx(), &QdiscOptions::None).unwrap();
    // prio 1 u32 match ip dport 5001 0xffff flowid 1:3
    let dport = Match::new(Family::V4, Field::Dport, 5001, 0xffff);
    q.add_filter(Filter {
        parent: Some(H),
        prio: 1,
        ..Filter::new(FilterProtocol::All, FilterKind::U32, vec![dport], cid(3))
    })
    .unwrap();
    // prio 2 protocol ip matchall flowid 1:7 (no such band)
    q.add_filter(Filter {
        parent: Some(H),
        prio: 2,
        ..Filter::new(FilterProtocol::Ip, FilterKind::Matchall, vec![], cid(7))
    })
    .unwrap();
    let mut d = Drops::new();
    let ip = |id, dport| {
        let mut p = tos_pkt(id, 100, 0x10);
        p.meta.l3 = L3::Ipv4 { offset: 14 };
        p.meta.flow.dst_port = dport;
        p
    };
    q.enqueue(ip(1, 5001), T, &mut d);
    assert_eq!(band_lens(&q), vec![0, 0, 1], "u32 sends dport 5001 to 1:3");
    q.enqueue(ip(2, 80), T, &mut d);
    // flowid 1:7 is beyond 3 bands: prio2band[0] is band 1.
    assert_eq!(band_lens(&q), vec![0, 1, 1]);
    // Not IP, no filter matches: the priomap (TOS 0x10, band 0).
    q.enqueue(tos_pkt(3, 100, 0x10), T, &mut d);
    assert_eq!(band_lens(&q), vec![1, 1, 1]);
    // A filter on a class is refused: only the qdisc has a block.
    assert!(q
        .add_filter(Filter {
            parent: Some(cid(1)),
            ..Filter::new(FilterProtocol::All, FilterKind::Matchall, vec![], cid(1))
        })
        .is_err());
}

#[test]
fn skbedit_priority_does_not_move_the_band() {
    // The filter's result decides; skbedit's new priority only rides along.
    let mut q = Prio::build(ctx(), &QdiscOptions::None).unwrap();
    q.add_filter(Filter {
        skbedit_priority: Some(cid(3)),
        ..Filter::new(FilterProtocol::All, FilterKind::Matchall, vec![], cid(1))
    })
    .unwrap();
    let mut d = Drops::new();
    q.enqueue(pkt(1, 100), T, &mut d);
    assert_eq!(band_lens(&q), vec![1, 0, 0]);
    assert_eq!(q.dequeue(T, &mut d).unwrap().meta.priority, cid(3));
}

#[test]
fn refusals_name_the_value_and_leave_the_qdisc_alone() {
    let map = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];
    for bands in [0, 1, 17] {
        let e = Prio::build(ctx(), &opts(bands, [0; 16])).err().unwrap();
        assert_eq!(e.errno, Errno::EINVAL);
        assert!(e.says(&format!("bands {bands}: allowed 2..16")), "{e}");
    }
    // 2 bands with the default priomap: entry 1 is band 2.
    let e = Prio::build(ctx(), &opts(2, map)).err().unwrap();
    assert_eq!(e.errno, Errno::EINVAL);
    assert!(e.says("priomap entry 1 is band 2"), "{e}");
    let mut q = prio(3, map);
    let mut d = Drops::new();
    q.enqueue(with_priority(1, cid(3)), T, &mut d);
    assert!(q.change(&opts(2, map), T, &mut d).is_err());
    assert_eq!(
        q.options(),
        PrioOptions {
            bands: 3,
            priomap: map
        }
    );
    assert_eq!(band_lens(&q), vec![0, 0, 1]);
    assert!(Prio::build(ctx(), &QdiscOptions::Fifo(Default::default())).is_err());
}

#[test]
fn change_drops_the_bands_given_up_and_adds_default_ones() {
    let mut q = Prio::build(ctx(), &QdiscOptions::None).unwrap();
    let mut d = Drops::new();
    let child = Fifo::new(FifoKind::Pfifo, q.child_ctx(tc_h_make(10, 0), cid(1)));
    q.graft(cid(1), Box::new(child)).unwrap();
    for (id, minor) in [(1, 1), (2, 2), (3, 3), (4, 3)] {
        q.enqueue(with_priority(id, cid(minor)), T, &mut d);
    }
    // prio_tune to 2 bands: band 2's two frames are flushed and counted.
    q.change(&opts(2, [0; 16]), T, &mut d).unwrap();
    assert_eq!(band_lens(&q), vec![1, 1]);
    assert_eq!(d.len(), 2);
    assert_eq!(q.stats().drops, 2);
    // Back to 4: bands 2 and 3 get fresh default pfifos; band 0 keeps 10:.
    q.change(&opts(4, [3; 16]), T, &mut d).unwrap();
    let dump = q.dump(T);
    let handles: Vec<Handle> = dump.children.iter().map(|c| c.handle).collect();
    assert_eq!(handles, vec![tc_h_make(10, 0), 0, 0, 0]);
    assert_eq!(dump.children[3].kind, "pfifo");
    q.enqueue(with_priority(5, 0), T, &mut d);
    assert_eq!(band_lens(&q), vec![1, 1, 0, 1]);
}

#[test]
fn classes_are_the_bands() {
    let mut q = Prio::build(ctx(), &QdiscOptions::None).unwrap();
    let mut d = Drops::new();
    q.enqueue(with_priority(1, cid(2)), T, &mut d);
    q.enqueue(with_priority(2, cid(2)), T, &mut d);
    q.dequeue(T, &mut d).unwrap();
    let dump = q.dump(T);
    let ids: Vec<Handle> = dump.classes.iter().map(|c| c.classid).collect();
    assert_eq!(ids, vec![cid(1), cid(2), cid(3)]);
    let c = &dump.classes[1];
    // prio_dump_class: parent the qdisc, no leaf for a default child;
    // prio_dump_class_stats: the child's counters.
    assert_eq!((c.parent, c.leaf), (H, None));
    let s = c.stats.unwrap();
    assert_eq!((s.packets, s.bytes, s.qlen, s.backlog), (1, 100, 1, 100));
    assert_eq!(dump.classes[0].stats.unwrap().packets, 0);
    // No class add, change or delete: prio's class ops have none.
    let e = q.add_class(cid(2), H, &ClassOptions::None).unwrap_err();
    assert_eq!(e.errno, Errno::EEXIST);
    let e = q.add_class(cid(4), H, &ClassOptions::None).unwrap_err();
    assert_eq!(e.errno, Errno::EOPNOTSUPP);
    assert!(e.says("bands N"), "{e}");
    assert_eq!(
        q.change_class(cid(1), &ClassOptions::None)
            .unwrap_err()
            .errno,
        Errno::EOPNOTSUPP
    );
    assert_eq!(
        q.delete_class(cid(1), &mut d).unwrap_err().errno,
        Errno::EOPNOTSUPP
    );
    // Grafting needs a band: 1:0 and 1:4 are none.
    for minor in [0, 4] {
        let child = Box::new(Fifo::new(FifoKind::Pfifo, q.child_ctx(0, cid(minor))));
        let e = q.graft(cid(minor), child).err().unwrap();
        assert_eq!(e.errno, Errno::ENOENT);
        assert!(e.says("classes 1:1..1:3"), "{e}");
    }
    // A graft hands back the old child with its frame.
    let child = Box::new(Fifo::new(FifoKind::Bfifo, q.child_ctx(0x20000, cid(2))));
    let old = q.graft(cid(2), child).unwrap().unwrap();
    assert_eq!(old.qlen(), 1);
    assert_eq!(q.dump(T).classes[1].leaf, Some(0x20000));
}
