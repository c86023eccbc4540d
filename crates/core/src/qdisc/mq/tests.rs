//! Unit tests of the `mq` qdisc at explicit times, with expected values
//! derived from the kernel functions each test cites.

use super::*;
use crate::qdisc::fifo::{Fifo, FifoKind};
use crate::qdisc::pfifo_fast::PfifoFast;
use crate::qdisc::testutil::flow_pkt;

fn root_ctx() -> QdiscCtx {
    QdiscCtx {
        handle: 0,
        ..QdiscCtx::default()
    }
}

fn mq(n: u16) -> Mq {
    Mq::new(root_ctx(), n, &mut |c| Box::new(PfifoFast::new(c))).unwrap()
}

fn on_queue(id: u64, len: u32, q: u16) -> Packet {
    let mut p = flow_pkt(id, len, q);
    p.meta.queue_mapping = q;
    p
}

#[test]
fn children_get_parent_colon_n() {
    let m = mq(4);
    let d = m.dump(Instant::ZERO);
    let parents: Vec<Handle> = d.children.iter().map(|c| c.parent).collect();
    assert_eq!(parents, vec![1, 2, 3, 4]);
    assert!(d
        .children
        .iter()
        .all(|c| c.handle == 0 && c.kind == "pfifo_fast"));
    let classes: Vec<Handle> = d.classes.iter().map(|c| c.classid).collect();
    assert_eq!(classes, vec![1, 2, 3, 4]);
    assert!(d.classes.iter().all(|c| c.parent == TC_H_ROOT));
}

#[test]
fn queue_selection_by_queue_mapping_modulo_n() {
    let mut m = mq(4);
    let mut d = Drops::new();
    for (id, qm) in [(1, 0u16), (2, 5), (3, 7), (4, 6)] {
        m.enqueue(on_queue(id, 100, qm), Instant::ZERO, &mut d);
    }
    let lens: Vec<u32> = m.queues.iter().map(|q| q.qlen()).collect();
    assert_eq!(lens, vec![1, 1, 1, 1]);
    let mut p = on_queue(5, 100, 9);
    p.meta.queue_mapping = 9;
    m.enqueue(p, Instant::ZERO, &mut d);
    assert_eq!(m.queues[1].qlen(), 2);
}

#[test]
fn dequeue_round_robins_over_queues() {
    let mut m = mq(3);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    // queue 0: ids 1,2,3; queue 2: ids 10,11
    for id in 1..=3 {
        m.enqueue(on_queue(id, 100, 0), t, &mut d);
    }
    for id in 10..=11 {
        m.enqueue(on_queue(id, 100, 2), t, &mut d);
    }
    assert_eq!(m.peek(t, &mut d).unwrap().meta.id, 1);
    let order: Vec<u64> = std::iter::from_fn(|| m.dequeue(t, &mut d))
        .map(|p| p.meta.id)
        .collect();
    assert_eq!(order, vec![1, 10, 2, 11, 3]);
    assert_eq!(m.qlen(), 0);
}

#[test]
fn vector_m1_aggregated_stats() {
    let mut m = mq(4);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    // children send 1000/2000/3000/4000 bytes
    for q in 0..4u16 {
        for k in 0..=q as u64 {
            m.enqueue(on_queue(q as u64 * 10 + k, 1000, q), t, &mut d);
        }
    }
    while m.dequeue(t, &mut d).is_some() {}
    let s = m.stats();
    assert_eq!((s.bytes, s.packets), (10_000, 10));
    let dump = m.dump(t);
    assert_eq!(dump.stats.bytes, 10_000);
    let per: Vec<u64> = dump.children.iter().map(|c| c.stats.bytes).collect();
    assert_eq!(per, vec![1000, 2000, 3000, 4000]);
    let class_bytes: Vec<u64> = dump
        .classes
        .iter()
        .map(|c| c.stats.unwrap().bytes)
        .collect();
    assert_eq!(class_bytes, per);
}

#[test]
fn flows_on_different_queues_are_isolated() {
    // A queue full of one flow does not block another queue.
    let mut m = Mq::new(root_ctx(), 2, &mut |c| {
        Box::new(Fifo::with_limit(FifoKind::Pfifo, c, 2))
    })
    .unwrap();
    let mut d = Drops::new();
    let t = Instant::ZERO;
    for id in 0..5 {
        m.enqueue(on_queue(id, 100, 0), t, &mut d);
    }
    assert_eq!(d.len(), 3);
    assert_eq!(m.enqueue(on_queue(9, 100, 1), t, &mut d), Verdict::Queued);
    assert_eq!(m.stats().drops, 3);
    assert_eq!(m.dump(t).children[1].stats.drops, 0);
}

#[test]
fn graft_replaces_one_queue() {
    let mut m = mq(4);
    let c = m.child_ctx(tc_h_make(0x8001, 0), 3);
    let old = m
        .graft(3, Box::new(Fifo::new(FifoKind::Pfifo, c)))
        .unwrap()
        .unwrap();
    assert_eq!(old.kind(), "pfifo_fast");
    let d = m.dump(Instant::ZERO);
    assert_eq!(d.children[2].kind, "pfifo");
    assert_eq!(d.classes[2].leaf, Some(tc_h_make(0x8001, 0)));
    assert!(m.graft(5, Box::new(PfifoFast::new(c))).is_err());
    assert!(m.graft(0, Box::new(PfifoFast::new(c))).is_err());
    assert!(m.child_mut(4).is_some());
    assert!(m.child_mut(5).is_none());
    assert_ne!(m.child_ctx(0, 1).seed, m.child_ctx(0, 2).seed);
}

#[test]
fn rejects_single_queue_and_non_root() {
    let mut f = |c| -> Box<dyn Qdisc> { Box::new(PfifoFast::new(c)) };
    assert!(Mq::new(root_ctx(), 1, &mut f)
        .err()
        .unwrap()
        .says("multi-queue"));
    let child = QdiscCtx {
        parent: tc_h_make(1, 1),
        ..root_ctx()
    };
    assert!(Mq::new(child, 4, &mut f).err().unwrap().says("root"));
    let queues = |n| QdiscOptions::Mq(MqOptions { queues: n });
    assert_eq!(
        Mq::build(root_ctx(), 1, &queues(8), &mut f)
            .unwrap()
            .queue_count(),
        8
    );
    assert!(Mq::build(root_ctx(), 4, &queues(1), &mut f).is_err());
    let fifo = QdiscOptions::Fifo(crate::qdisc::fifo::FifoOptions { limit: 1 });
    assert!(Mq::build(root_ctx(), 4, &fifo, &mut f).is_err());
    // Past the emulated device's limit (each child is a whole qdisc).
    assert!(Mq::build(root_ctx(), 1, &queues(4096), &mut f).is_err());
    assert!(Mq::build(root_ctx(), 1, &queues(1), &mut f).is_err());
    // A multi-queue device keeps its own count.
    let e = Mq::build(root_ctx(), 4, &queues(8), &mut f).err().unwrap();
    assert!(
        e.says("has 4 TX queues") && e.says("tx_queues = 8"),
        "{e:?}"
    );
    assert_eq!(
        Mq::build(root_ctx(), 4, &queues(4), &mut f)
            .unwrap()
            .queue_count(),
        4
    );
    assert_eq!(
        Mq::build(root_ctx(), 4, &QdiscOptions::None, &mut f)
            .unwrap()
            .queue_count(),
        4
    );
    assert!(mq(2).add_class(1, TC_H_ROOT, &ClassOptions::None).is_err());
}

#[test]
fn drain_all_interleaves_and_empties() {
    let mut m = mq(2);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    for id in 1..=3 {
        m.enqueue(on_queue(id, 100, 0), t, &mut d);
    }
    m.enqueue(on_queue(10, 100, 1), t, &mut d);
    let ids: Vec<u64> = m.drain_all().iter().map(|p| p.meta.id).collect();
    assert_eq!(ids, vec![1, 10, 2, 3]);
    assert_eq!(m.qlen(), 0);
}
