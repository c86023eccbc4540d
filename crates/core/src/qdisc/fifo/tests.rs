//! Unit tests of the `fifo` qdisc at explicit times, with expected values
//! derived from the kernel functions each test cites.

use super::*;
use crate::qdisc::testutil::pkt;

fn ctx() -> QdiscCtx {
    QdiscCtx::default()
}

#[test]
fn pfifo_tail_drops_at_limit() {
    let mut q = Fifo::with_limit(FifoKind::Pfifo, ctx(), 2);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    assert_eq!(q.enqueue(pkt(1, 100), t, &mut d), Verdict::Queued);
    assert_eq!(q.enqueue(pkt(2, 100), t, &mut d), Verdict::Queued);
    assert_eq!(q.enqueue(pkt(3, 100), t, &mut d), Verdict::Dropped);
    assert_eq!(d.since(0)[0].0.meta.id, 3);
    assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, 1);
    let s = q.stats();
    assert_eq!(
        (s.packets, s.bytes, s.drops, s.qlen, s.backlog),
        (1, 100, 1, 1, 100)
    );
}

#[test]
fn bfifo_counts_bytes() {
    let mut q = Fifo::with_limit(FifoKind::Bfifo, ctx(), 250);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    assert_eq!(q.enqueue(pkt(1, 100), t, &mut d), Verdict::Queued);
    assert_eq!(q.enqueue(pkt(2, 150), t, &mut d), Verdict::Queued);
    assert_eq!(q.enqueue(pkt(3, 1), t, &mut d), Verdict::Dropped);
    assert_eq!(q.backlog(), 250);
}

#[test]
fn head_drop_keeps_newest() {
    let mut q = Fifo::with_limit(FifoKind::PfifoHeadDrop, ctx(), 2);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    for id in 1..=3 {
        q.enqueue(pkt(id, 100), t, &mut d);
    }
    assert_eq!(d.since(0)[0].0.meta.id, 1);
    assert_eq!(d.since(0)[0].1, DropReason::HeadDrop);
    assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, 2);
    assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, 3);
}

#[test]
fn defaults_and_options() {
    let typed = |q: &Fifo| q.dump(Instant::ZERO).options;
    let q = Fifo::build(FifoKind::Pfifo, ctx(), &QdiscOptions::None).unwrap();
    assert_eq!(typed(&q), QdiscOptions::Fifo(FifoOptions { limit: 1000 }));
    let b = Fifo::new(FifoKind::Bfifo, ctx());
    assert_eq!(
        typed(&b),
        QdiscOptions::Fifo(FifoOptions { limit: 1_514_000 })
    );
    let b = Fifo::build(
        FifoKind::Bfifo,
        ctx(),
        &QdiscOptions::Fifo(FifoOptions { limit: 10_240 }),
    )
    .unwrap();
    assert_eq!(typed(&b), QdiscOptions::Fifo(FifoOptions { limit: 10_240 }));
    let e = Fifo::build(
        FifoKind::Pfifo,
        ctx(),
        &QdiscOptions::Mq(crate::qdisc::mq::MqOptions { queues: 2 }),
    );
    assert!(e.err().unwrap().says("pfifo"));
}

#[test]
fn change_lowers_limit_and_drops() {
    let mut q = Fifo::with_limit(FifoKind::Pfifo, ctx(), 10);
    let mut d = Drops::new();
    for id in 0..5 {
        q.enqueue(pkt(id, 100), Instant::ZERO, &mut d);
    }
    q.change(
        &QdiscOptions::Fifo(FifoOptions { limit: 2 }),
        Instant::ZERO,
        &mut d,
    )
    .unwrap();
    q.change(&QdiscOptions::None, Instant::ZERO, &mut d)
        .unwrap();
    assert_eq!(q.qlen(), 2);
    assert_eq!(d.len(), 3);
    assert_eq!(q.stats().drops, 3);
}
