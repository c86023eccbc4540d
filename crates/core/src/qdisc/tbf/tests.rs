//! Unit tests of the `tbf` qdisc at explicit times, with expected values
//! derived from the kernel functions each test cites.

use super::*;
use crate::qdisc::testutil::{drain_codel_child, pkt};
use rand::{Rng, SeedableRng};

const MS: u64 = 1_000_000;

const MBIT: u64 = 125_000;

/// The options tc sends for `rate RATE burst BURST limit LIMIT`
/// (bytes/s, bytes).
fn opts(rate: u64, burst: u32, limit: u32) -> TbfOptions {
    TbfOptions {
        rate: RateSpec::new(rate),
        limit,
        burst: Some(burst),
        ..TbfOptions::default()
    }
}

/// `o` with `peakrate PEAKRATE mtu MTU`.
fn peaked(o: TbfOptions, peakrate: u64, mtu: u32) -> TbfOptions {
    TbfOptions {
        peakrate: Some(RateSpec {
            rate: peakrate,
            ..o.rate
        }),
        pburst: Some(mtu),
        ..o
    }
}

fn build(o: TbfOptions) -> Result<Tbf, Refusal> {
    Tbf::build(QdiscCtx::default(), &QdiscOptions::Tbf(o))
}

fn tbf(o: TbfOptions) -> Tbf {
    build(o).unwrap()
}

fn dumped(q: &Tbf, now: Instant) -> TbfOptions {
    match q.dump(now).options {
        QdiscOptions::Tbf(o) => o,
        other => panic!("tbf dumped {other:?}"),
    }
}

/// Drives dequeue like an infinitely fast link: dequeue whenever
/// possible, otherwise sleep until `next_wakeup`. Returns departure
/// times and lengths.
fn drain(q: &mut dyn Qdisc, t: Instant) -> Vec<(Instant, u32)> {
    drain_into(q, t, &mut Drops::new())
}

/// `drain`, with the drops going to `d`; panics if the queue never
/// empties.
fn drain_into(q: &mut dyn Qdisc, mut t: Instant, d: &mut Drops) -> Vec<(Instant, u32)> {
    let mut out = Vec::new();
    for _ in 0..100_000 {
        if let Some(p) = q.dequeue(t, d) {
            out.push((t, p.len));
            continue;
        }
        match q.next_wakeup(t) {
            Some(w) => {
                assert!(w >= t, "wakeup {w:?} before now {t:?}");
                assert!(w > t || q.qlen() == 0, "wakeup at now without progress");
                t = w;
            }
            None => return out,
        }
    }
    panic!("still {} frames queued after 100,000 steps", q.qlen());
}

#[test]
fn vector_t1_derived_values() {
    // tc's `rate 1mbit burst 10kb latency 50ms` (the limit is tc's).
    let q = tbf(opts(MBIT, 10240, 16490));
    assert_eq!(q.p.buffer, 81_920_000);
    assert_eq!(q.max_size(), 10240);
    assert_eq!(q.p.limit, 16490);
    let d = q.dump(Instant::ZERO);
    assert_eq!(d.kind, "tbf");
    let o = dumped(&q, Instant::ZERO);
    assert_eq!(
        (o.rate, o.limit, o.buffer),
        (RateSpec::new(MBIT), 16490, 1_280_000)
    );
    assert_eq!(
        (o.peakrate, o.mtu, o.burst, o.pburst),
        (None, 0, None, None)
    );
    // The default child is an invisible bfifo holding the limit.
    assert!(d.children.is_empty());
    assert_eq!(
        q.child.dump(Instant::ZERO).options,
        QdiscOptions::Fifo(FifoOptions { limit: 16490 })
    );
    assert_eq!(q.child.kind(), "bfifo");
    assert_eq!(d.classes.len(), 1);
    assert_eq!(d.classes[0].classid, 0x8001_0001);
    assert_eq!(d.classes[0].parent, 0x8001_0000);
    assert_eq!(d.classes[0].leaf, None);
    assert!(q.warnings().is_empty());
}

/// Without TCA_TBF_BURST the kernel sizes the bucket from its ticks
/// (`psched_ns_t2l`).
#[test]
fn bucket_from_ticks_without_burst_attribute() {
    let o = TbfOptions {
        burst: None,
        buffer: 1_280_000,
        ..opts(MBIT, 0, 16490)
    };
    let q = tbf(o);
    assert_eq!((q.p.buffer, q.max_size()), (81_920_000, 10240));
    let o = TbfOptions {
        pburst: None,
        mtu: 23_437, // 1.5 ms at 8 Mbit/s: 1499 B
        ..peaked(opts(MBIT, 10240, 16490), 8 * MBIT, 0)
    };
    let q = tbf(o);
    assert_eq!((q.p.mtu, q.max_size()), (1_499_968, 1499));
    let atm = RateSpec {
        linklayer: LinkLayer::Atm,
        overhead: 10,
        ..RateSpec::new(MBIT)
    };
    // 10240 B of time = 193 cells of 53 B: 9264 B of payload, less 10.
    assert_eq!(ns_t2l(&atm.psched(), 81_920_000), 9254);
    assert!(build(TbfOptions {
        burst: None,
        ..opts(MBIT, 0, 1)
    })
    .is_err());
}

#[test]
fn vector_t2_departure_times_of_a_backlog() {
    let mut q = tbf(opts(MBIT, 10240, 200_000));
    let mut d = Drops::new();
    for id in 1..=100 {
        assert_eq!(
            q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d),
            Verdict::Queued
        );
    }
    let out = drain(&mut q, Instant::ZERO);
    assert_eq!(out.len(), 100);
    for (i, (t, _)) in out.iter().enumerate() {
        let n = i as i64 + 1;
        let expect = ((1000 * n - 10240) * 8000).max(0) as u64;
        assert_eq!(t.nanos(), expect, "packet {n}");
    }
    assert_eq!(out[10].0.nanos(), 6_080_000);
    assert_eq!(out[11].0.nanos(), 14_080_000);
    assert_eq!(out[99].0.nanos(), 718_080_000);
    let s = q.stats();
    assert_eq!(
        (s.bytes, s.packets, s.qlen, s.backlog),
        (100_000, 100, 0, 0)
    );
    assert!(s.overlimits >= 90, "overlimits {}", s.overlimits);
    assert_eq!(q.next_wakeup(out[99].0), None);
}

#[test]
fn vector_t5_burst_below_mtu_drops_full_frames() {
    let mut q = tbf(opts(MBIT, 1000, 10_000));
    assert_eq!(q.max_size(), 1000);
    assert_eq!(
        q.warnings()[0],
        "sch_tbf: burst 1000 is lower than device mtu (1514) ! Larger frames will be dropped."
    );
    let mut d = Drops::new();
    let t = Instant::ZERO;
    for id in 0..3 {
        assert_eq!(q.enqueue(pkt(id, 1514), t, &mut d), Verdict::Dropped);
    }
    assert_eq!(q.enqueue(pkt(9, 1000), t, &mut d), Verdict::Queued);
    assert!(d
        .since(0)
        .iter()
        .all(|(_, r)| *r == DropReason::TbfOversize));
    assert_eq!(q.stats().drops, 3);
    assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, 9);
    assert_eq!(q.stats().packets, 1);
}

#[test]
fn peak_bucket_bounds_the_frame_size() {
    // tc's `rate 1mbit burst 10kb latency 50ms peakrate 2mbit mtu 1514`.
    let q = tbf(peaked(opts(MBIT, 10240, 14014), 2 * MBIT, 1514));
    assert_eq!(q.p.limit, 14014);
    assert_eq!(q.max_size(), 1514);
    let o = dumped(&q, Instant::ZERO);
    assert_eq!(o.peakrate, Some(RateSpec::new(2 * MBIT)));
    assert_eq!(o.mtu, q.p.mtu as u64 >> 6);
    assert!(build(peaked(opts(MBIT, 10240, 1000), MBIT, 1514))
        .err()
        .unwrap()
        .says("peakrate 1Mbit is lower than or equals to rate 1Mbit"));
}

#[test]
fn peakrate_spaces_the_burst() {
    let mut q = tbf(peaked(opts(MBIT, 10240, 100_000), 2 * MBIT, 1000));
    let mut d = Drops::new();
    for id in 0..30 {
        q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d);
    }
    let out = drain(&mut q, Instant::ZERO);
    assert_eq!(out.len(), 30);
    for (i, (t, _)) in out.iter().enumerate() {
        let n = i as u64 + 1;
        let peak = (n - 1) * 4 * MS;
        let rate = (8000 * (1000 * n)).saturating_sub(81_920_000);
        assert_eq!(t.nanos(), peak.max(rate), "packet {n}");
    }
}

#[test]
fn change_resets_tokens_and_applies_limit() {
    let mut q = tbf(opts(MBIT, 10240, 100_000));
    let mut d = Drops::new();
    for id in 0..20 {
        q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d);
    }
    while q.dequeue(Instant::ZERO, &mut d).is_some() {}
    assert_eq!(q.qlen(), 10);
    assert!(q.tokens_ns() < 8_000_000);
    // A new config with a full new bucket and a lower limit.
    let t = Instant::from_nanos(MS);
    q.change(&QdiscOptions::Tbf(opts(2 * MBIT, 4000, 5000)), t, &mut d)
        .unwrap();
    assert_eq!(q.tokens_ns(), 16_000_000);
    assert_eq!(q.qlen(), 5, "bfifo trimmed to 5000 bytes");
    assert_eq!(d.len(), 5);
    assert_eq!(q.stats().drops, 5);
    let out = drain(&mut q, t);
    assert_eq!(out.len(), 5);
    // 4 frames from the 4000 B bucket at once, the 5th after 1000 B at 2 Mbit.
    assert!(out[..4].iter().all(|(x, _)| *x == t));
    assert_eq!(out[4].0, t + 4 * MS);
    // `rate 2Mbit burst 4000b`, as tc prints the dump.
    let rate_and_burst = |q: &Tbf| {
        let o = dumped(q, t);
        (
            o.rate.rate,
            crate::units::tc_calc_xmitsize(o.rate.rate, o.buffer),
        )
    };
    assert_eq!(rate_and_burst(&q), (2 * MBIT, 4000));
    // Invalid changes leave everything as they were.
    assert!(q.change(&QdiscOptions::None, t, &mut d).is_err());
    let lower_peak = peaked(opts(2 * MBIT, 4000, 5000), MBIT, 1514);
    assert!(q.change(&QdiscOptions::Tbf(lower_peak), t, &mut d).is_err());
    assert_eq!(rate_and_burst(&q), (2 * MBIT, 4000));
}

/// A change that shrinks the burst below frames already queued (found
/// by the tc fuzz target: `rate 11 b 150` then `rate 11 b 10`): the
/// kernel would keep them, and every frame behind them, forever;
/// bloatbox drops each as it reaches the head, with its reason, and the
/// frames that fit the new bucket go on.
#[test]
fn frames_larger_than_a_shrunk_bucket_are_dropped_at_the_head() {
    let mut q = tbf(opts(MBIT, 3000, 100_000));
    let mut d = Drops::new();
    for (id, len) in [(0, 1500), (1, 400), (2, 1500), (3, 1500), (4, 300)] {
        assert_eq!(
            q.enqueue(pkt(id, len), Instant::ZERO, &mut d),
            Verdict::Queued
        );
    }
    let t = Instant::from_nanos(MS);
    q.change(&QdiscOptions::Tbf(opts(MBIT, 1000, 100_000)), t, &mut d)
        .unwrap();
    assert_eq!(q.max_size(), 1000);
    assert!(d.is_empty(), "the change itself drops nothing");
    let out = drain_into(&mut q, t, &mut d);
    let lens: Vec<u32> = out.iter().map(|(_, l)| *l).collect();
    assert_eq!(lens, vec![400, 300]);
    let dropped: Vec<(u64, DropReason)> = d.since(0).iter().map(|(p, r)| (p.meta.id, *r)).collect();
    assert_eq!(
        dropped,
        vec![
            (0, DropReason::TbfOversize),
            (2, DropReason::TbfOversize),
            (3, DropReason::TbfOversize)
        ]
    );
    assert_eq!((q.stats().drops, q.qlen(), q.next_wakeup(t)), (3, 0, None));
    // Shaped as before for what fits: 400 B at once, 300 B too (the
    // new bucket holds 1000 B).
    assert!(out.iter().all(|(x, _)| *x == t));
}

/// The peak bucket too: `mtu` shrunk below a queued frame.
#[test]
fn frames_larger_than_a_shrunk_peak_bucket_are_dropped_at_the_head() {
    let mut q = tbf(peaked(opts(MBIT, 3000, 100_000), 2 * MBIT, 2000));
    let mut d = Drops::new();
    for (id, len) in [(0, 1500), (1, 400)] {
        assert_eq!(
            q.enqueue(pkt(id, len), Instant::ZERO, &mut d),
            Verdict::Queued
        );
    }
    let t = Instant::from_nanos(MS);
    let smaller = peaked(opts(MBIT, 3000, 100_000), 2 * MBIT, 1000);
    q.change(&QdiscOptions::Tbf(smaller), t, &mut d).unwrap();
    let out = drain_into(&mut q, t, &mut d);
    assert_eq!(out.iter().map(|(_, l)| *l).collect::<Vec<_>>(), vec![400]);
    assert_eq!(d.len(), 1);
    assert_eq!(
        d.since(0).first().map(|(p, r)| (p.meta.id, *r)),
        Some((0, DropReason::TbfOversize))
    );
}

#[test]
fn child_replaced_keeps_shaping_and_limit_no_longer_applies() {
    let mut q = tbf(opts(MBIT, 2000, 3000));
    let ctx = q.child_ctx(0x0010_0000, 0x8001_0001);
    let new = Box::new(Fifo::with_limit(FifoKind::Pfifo, ctx, 100));
    let old = q.graft(0x8001_0001, new).unwrap().unwrap();
    assert_eq!(old.kind(), "bfifo");
    let mut d = Drops::new();
    for id in 0..10 {
        assert_eq!(
            q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d),
            Verdict::Queued
        );
    }
    assert_eq!(q.qlen(), 10);
    let dump = q.dump(Instant::ZERO);
    assert_eq!(dump.classes[0].leaf, Some(0x0010_0000));
    assert_eq!(dump.children.len(), 1);
    assert_eq!(
        dump.children[0].options,
        QdiscOptions::Fifo(FifoOptions { limit: 100 })
    );
    let out = drain(&mut q, Instant::ZERO);
    assert_eq!(out.len(), 10);
    assert_eq!(out[2].0.nanos(), 8_000_000);
    assert!(q
        .graft(0x0042_0001, Box::new(Fifo::new(FifoKind::Pfifo, ctx)))
        .is_err());
    assert!(q
        .add_class(0x8001_0002, 0x8001_0000, &crate::qdisc::ClassOptions::None)
        .is_err());
}

#[test]
fn peek_parks_the_frame_and_counts_it_once() {
    let mut q = tbf(opts(MBIT, 1500, 10_000));
    let mut d = Drops::new();
    q.enqueue(pkt(1, 1000), Instant::ZERO, &mut d);
    q.enqueue(pkt(2, 1000), Instant::ZERO, &mut d);
    assert_eq!(q.peek(Instant::ZERO, &mut d).unwrap().meta.id, 1);
    assert_eq!(q.qlen(), 2);
    assert_eq!(q.stats().packets, 0);
    assert_eq!(q.dequeue(Instant::ZERO, &mut d).unwrap().meta.id, 1);
    assert!(q.peek(Instant::ZERO, &mut d).is_none());
    assert_eq!(q.stats().overlimits, 1);
    assert_eq!(
        q.next_wakeup(Instant::ZERO),
        Some(Instant::from_nanos(4 * MS))
    );
    assert_eq!(q.stats().packets, 1);
    let mut r = Drops::new();
    q.reset(&mut r);
    assert_eq!((q.qlen(), r.len()), (0, 1));
}

#[test]
fn atm_linklayer_charges_whole_cells() {
    // 100 B = 3 cells = 159 B on the wire; burst 1000 B = 21 cells = 1113 B.
    let mut q = tbf(TbfOptions {
        rate: RateSpec {
            linklayer: LinkLayer::Atm,
            ..RateSpec::new(MBIT)
        },
        ..opts(MBIT, 1000, 10_000)
    });
    assert_eq!(q.p.buffer, 1113 * 8000);
    let mut d = Drops::new();
    for id in 0..9 {
        q.enqueue(pkt(id, 100), Instant::ZERO, &mut d);
    }
    let out = drain(&mut q, Instant::ZERO);
    let times: Vec<u64> = out.iter().map(|(t, _)| t.nanos()).collect();
    assert_eq!(times, vec![0, 0, 0, 0, 0, 0, 0, 1_272_000, 2_544_000]);
}

#[test]
fn aqm_child_drops_at_peek_count_in_tbf() {
    let mut q = tbf(opts(MBIT, 3000, 100_000));
    let ctx = q.child_ctx(0x0010_0000, 0x8001_0001);
    let codel = crate::qdisc::codel::CodelQdisc::new(ctx);
    q.graft(0x8001_0001, Box::new(codel)).unwrap();
    drain_codel_child(&mut q, 60);
}

/// Random arrivals: next_wakeup never in the past, conservation holds,
/// and in every window the bytes sent are at most rate×window + burst.
#[test]
fn random_load_respects_rate_and_burst() {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    for peak in [false, true] {
        let o = opts(MBIT, 5000, 20_000);
        let mut q = tbf(if peak { peaked(o, 4 * MBIT, 1600) } else { o });
        let mut d = Drops::new();
        let mut t = Instant::ZERO;
        let mut sent: Vec<(u64, u64)> = Vec::new();
        let mut offered = 0u64;
        for id in 0..3000u64 {
            t += rng.gen_range(0..4 * MS);
            let len = rng.gen_range(60..1600);
            q.enqueue(pkt(id, len), t, &mut d);
            offered += 1;
            // The link polls at wakeups up to the next arrival.
            loop {
                if let Some(p) = q.dequeue(t, &mut d) {
                    sent.push((t.nanos(), p.len as u64));
                    continue;
                }
                match q.next_wakeup(t) {
                    Some(w) if w < t + 2 * MS => {
                        assert!(w >= t);
                        t = w;
                    }
                    Some(w) => {
                        assert!(w >= t);
                        break;
                    }
                    None => break,
                }
            }
        }
        assert_eq!(
            offered,
            sent.len() as u64 + d.len() as u64 + q.qlen() as u64
        );
        for i in 0..sent.len() {
            let mut bytes = 0;
            for j in i..sent.len().min(i + 200) {
                bytes += sent[j].1;
                let window = sent[j].0 - sent[i].0;
                assert!(
                    bytes <= 125_000 * window / 1_000_000_000 + 5000,
                    "rate exceeded: {bytes} B in {window} ns"
                );
                if peak {
                    assert!(bytes <= 500_000 * window / 1_000_000_000 + 1600);
                }
            }
        }
    }
}
