//! Unit tests of the `codel` qdisc at explicit times, with expected values
//! derived from the kernel functions each test cites.

use super::*;
use crate::qdisc::testutil::pkt;
use crate::time::NS_PER_MS;
use crate::units::{sprint_time, sprint_time_signed};

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

/// Options giving only `limit`.
fn limit(n: u32) -> CodelOptions {
    CodelOptions {
        limit: Some(n),
        ..CodelOptions::default()
    }
}

/// The xstats in a dump at `now`.
fn xstats(q: &CodelQdisc, now: Instant) -> CodelXstats {
    match q.dump(now).xstats {
        Some(Xstats::Codel(x)) => x,
        other => panic!("{other:?}"),
    }
}

#[test]
fn defaults_dump() {
    let q = CodelQdisc::build(QdiscCtx::default(), &QdiscOptions::None).unwrap();
    let d = q.dump(Instant::ZERO);
    // 5 ms and 100 ms in CoDel units, dumped by `codel_time_to_us`.
    assert_eq!(
        d.options,
        QdiscOptions::Codel(CodelOptions {
            target: Some(4999),
            limit: Some(1000),
            interval: Some(99999),
            ecn: Some(false),
            ce_threshold: None,
        })
    );
    assert_eq!(d.xstats, Some(Xstats::Codel(CodelXstats::default())));
    assert!(q.can_bypass());
}

#[test]
fn options_apply_in_codel_units() {
    let q = CodelQdisc::with_options(
        QdiscCtx::default(),
        &CodelOptions {
            limit: Some(50),
            target: Some(2000),
            interval: Some(30_000),
            ecn: Some(true),
            ce_threshold: Some(1000),
        },
    );
    assert_eq!(
        q.options(),
        // 1000 µs → 976 units → dumped 999 µs, as the kernel does.
        CodelOptions {
            limit: Some(50),
            target: Some(1999),
            interval: Some(29999),
            ecn: Some(true),
            ce_threshold: Some(999),
        }
    );
    // 5 µs: (5 × 1000) >> 10 = 4 units, dumped as 4 µs.
    let q = CodelQdisc::with_options(
        QdiscCtx::default(),
        &CodelOptions {
            target: Some(5),
            ..CodelOptions::default()
        },
    );
    assert_eq!(q.params.target, 4);
    assert_eq!(q.options().target, Some(4));
    let e = CodelQdisc::build(QdiscCtx::default(), &QdiscOptions::Sfq(Default::default()))
        .err()
        .unwrap();
    assert!(e.says("codel"), "{e:?}");
}

#[test]
fn tail_drop_at_limit() {
    let mut q = CodelQdisc::with_options(QdiscCtx::default(), &limit(3));
    let mut d = Drops::new();
    for i in 0..5 {
        q.enqueue(pkt(i, 100), ms(0), &mut d);
    }
    assert_eq!(q.qlen(), 3);
    assert_eq!(d.len(), 2);
    assert_eq!(d.since(0)[0].0.meta.id, 3);
    assert_eq!(d.since(0)[0].1, DropReason::QueueFull);
    assert_eq!(xstats(&q, ms(0)).drop_overlimit, 2);
    assert_eq!(q.stats().drops, 2);
}

#[test]
fn standing_queue_gets_dropped_and_counted() {
    // 1514 B frames arrive every 1 ms, leave every 1.2 ms: a growing
    // standing queue; CoDel must drop, and counters must add up.
    let mut q = CodelQdisc::new(QdiscCtx::default());
    let mut d = Drops::new();
    let mut sent = 0u64;
    let mut id = 0;
    let mut next_tx = 0u64;
    for us in 0..2_000_000u64 {
        if us % 1000 == 0 {
            q.enqueue(pkt(id, 1514), Instant::from_micros(us), &mut d);
            id += 1;
        }
        if us >= next_tx && us % 1200 == 0 {
            if q.dequeue(Instant::from_micros(us), &mut d).is_some() {
                sent += 1;
            }
            next_tx = us + 1200;
        }
    }
    let s = q.stats();
    assert!(s.drops > 0);
    assert_eq!(s.drops as usize, d.len());
    assert_eq!(sent + s.drops + s.qlen as u64, id);
    assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::Codel));
    let x = xstats(&q, Instant::from_micros(2_000_000));
    assert_eq!(x.maxpacket, 1514);
}

#[test]
fn peek_parks_and_dequeue_returns_it() {
    let mut q = CodelQdisc::new(QdiscCtx::default());
    let mut d = Drops::new();
    q.enqueue(pkt(1, 100), ms(0), &mut d);
    q.enqueue(pkt(2, 100), ms(0), &mut d);
    assert_eq!(q.peek(ms(1), &mut d).unwrap().meta.id, 1);
    assert_eq!(q.qlen(), 2);
    assert_eq!(q.backlog(), 200);
    assert_eq!(q.stats().packets, 0);
    assert_eq!(q.dequeue(ms(1), &mut d).unwrap().meta.id, 1);
    assert_eq!(q.stats().packets, 1);
    assert_eq!(q.drain_all().len(), 1);
}

#[test]
fn change_lowers_limit_and_switches_ecn() {
    let mut q = CodelQdisc::new(QdiscCtx::default());
    let mut d = Drops::new();
    for i in 0..10 {
        q.enqueue(pkt(i, 100), ms(0), &mut d);
    }
    let o = CodelOptions {
        ecn: Some(true),
        ..limit(4)
    };
    q.change(&QdiscOptions::Codel(o), ms(0), &mut d).unwrap();
    assert_eq!(q.qlen(), 4);
    assert_eq!(d.len(), 6);
    assert_eq!(d.since(0)[0].0.meta.id, 0, "trimmed from the head");
    assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::QdiscReset));
    assert_eq!(q.options().ecn, Some(true));
    assert!(q
        .change(&QdiscOptions::Sfq(Default::default()), ms(0), &mut d)
        .is_err());
    assert_eq!(q.limit, 4);
    q.reset(&mut d);
    assert_eq!(q.qlen(), 0);
    assert_eq!(d.len(), 10);
}

#[test]
fn dropping_state_in_xstats() {
    let mut q = CodelQdisc::new(QdiscCtx::default());
    let mut d = Drops::new();
    // Standing 10 ms queue, dequeues every ms.
    let mut id = 0;
    for t in 20..200u64 {
        while q.qlen() < 10 {
            q.enqueue(
                pkt(id, 1514),
                Instant::from_nanos(t * NS_PER_MS - 10 * NS_PER_MS),
                &mut d,
            );
            id += 1;
        }
        q.dequeue(ms(t), &mut d);
    }
    let x = xstats(&q, ms(200));
    // Each frame waits 10 ms before arriving plus ~9 dequeue slots;
    // first drop at 121 ms, next due 99.998 ms later.
    assert_eq!(
        (
            x.count,
            x.lastcount,
            sprint_time(x.ldelay_us),
            x.dropping,
            sprint_time_signed(x.drop_next_us)
        ),
        (1, 1, "19ms".to_string(), true, "21ms".to_string())
    );
}
