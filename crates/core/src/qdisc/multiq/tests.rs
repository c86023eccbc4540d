//! Unit tests of the `multiq` qdisc at explicit times, with expected
//! values derived by hand from net/sched/sch_multiq.c `multiq_classify`,
//! `multiq_dequeue` and `multiq_peek`.

use super::*;
use crate::packet::filter::{Filter, FilterKind, FilterProtocol};
use crate::qdisc::tc_h_make;
use crate::qdisc::testutil::pkt;

const H: Handle = 0x0001_0000;
const T: Instant = Instant::ZERO;

fn multiq(queues: u16) -> Multiq {
    let ctx = QdiscCtx {
        handle: H,
        ..QdiscCtx::default()
    };
    Multiq::build(ctx, queues, &QdiscOptions::Multiq(MultiqOptions::default())).unwrap()
}

/// A frame mapped to TX queue mapping `queue`.
fn on_queue(id: u64, queue: u16) -> Packet {
    let mut p = pkt(id, 100);
    p.meta.queue_mapping = queue;
    p
}

fn band_lens(q: &Multiq) -> Vec<u32> {
    q.bands.queues.iter().map(|c| c.qlen()).collect()
}

#[test]
fn bands_are_served_round_robin_from_the_band_after_curband() {
    // 4 queues; band 0 holds a0 a1 a2, band 1 b0, band 3 d0 d1.
    // curband starts at 0, so the first turn is band 1: b0; then band 2
    // (empty) is passed for band 3: d0; band 0: a0; bands 1, 2 empty, 3:
    // d1; 0: a1; then 1, 2, 3 empty and 0: a2.
    let mut q = multiq(4);
    let mut d = Drops::new();
    for (id, queue) in [(10, 0), (11, 0), (12, 0), (20, 1), (40, 3), (41, 3)] {
        assert_eq!(q.enqueue(on_queue(id, queue), T, &mut d), Verdict::Queued);
    }
    assert_eq!(band_lens(&q), vec![3, 1, 0, 2]);
    assert_eq!(q.qlen(), 6);
    // multiq_peek walks the same way without moving curband.
    assert_eq!(q.peek(T, &mut d).unwrap().meta.id, 20);
    assert_eq!(q.peek(T, &mut d).unwrap().meta.id, 20);
    let order: Vec<u64> = std::iter::from_fn(|| q.dequeue(T, &mut d))
        .map(|p| p.meta.id)
        .collect();
    assert_eq!(order, vec![20, 40, 10, 41, 11, 12]);
    assert_eq!(q.counters().packets, 6);
    assert!(q.dequeue(T, &mut d).is_none());
}

#[test]
fn the_band_is_the_tx_queue_and_filters_only_edit() {
    // The device picks queue mapping % 4; a filter's class id is not read,
    // its skbedit priority is applied.
    let mut q = multiq(4);
    q.add_filter(Filter {
        skbedit_priority: Some(7),
        ..Filter::new(
            FilterProtocol::All,
            FilterKind::Matchall,
            vec![],
            tc_h_make(1, 3),
        )
    })
    .unwrap();
    let mut d = Drops::new();
    q.enqueue(on_queue(1, 5), T, &mut d);
    q.enqueue(on_queue(2, 2), T, &mut d);
    assert_eq!(band_lens(&q), vec![0, 1, 1, 0]);
    assert_eq!(q.dequeue(T, &mut d).unwrap().meta.priority, 7);
}

#[test]
fn a_single_queue_device_is_refused_and_classes_are_fixed() {
    let e = Multiq::build(QdiscCtx::default(), 1, &QdiscOptions::None)
        .err()
        .unwrap();
    assert_eq!(e.errno, Errno::EOPNOTSUPP);
    let mut q = multiq(2);
    let dump = q.dump(T);
    assert_eq!(
        dump.options,
        QdiscOptions::Multiq(MultiqOptions {
            bands: 2,
            max_bands: 2
        })
    );
    let ids: Vec<Handle> = dump.classes.iter().map(|c| c.classid).collect();
    assert_eq!(ids, vec![tc_h_make(1, 1), tc_h_make(1, 2)]);
    let none = ClassOptions::default();
    let e = q.add_class(tc_h_make(1, 2), H, &none).err().unwrap();
    assert_eq!(e.errno, Errno::EEXIST);
    let e = q.add_class(tc_h_make(1, 3), H, &none).err().unwrap();
    assert_eq!(e.errno, Errno::EOPNOTSUPP);
    // multiq_reset: curband back to 0, so band 1 is served first again.
    let mut d = Drops::new();
    q.enqueue(on_queue(1, 0), T, &mut d);
    q.dequeue(T, &mut d);
    q.enqueue(on_queue(2, 0), T, &mut d);
    q.enqueue(on_queue(3, 1), T, &mut d);
    q.reset(&mut d);
    assert_eq!(q.qlen(), 0);
    q.enqueue(on_queue(4, 0), T, &mut d);
    q.enqueue(on_queue(5, 1), T, &mut d);
    assert_eq!(q.dequeue(T, &mut d).unwrap().meta.id, 5);
}
