//! Unit tests of HFSC: the curve arithmetic against values worked out by
//! hand from net/sched/sch_hfsc.c's integer formulas, and the scheduler
//! on a simulated link (a frame takes len × 8 / rate to send; the link
//! asks again when it is free, or when the qdisc's watchdog says), with
//! figures derived from the curves: a concave rt curve's burst, link-share
//! ratios, the upper limit, the real-time guarantee beside a greedy class,
//! the default class, and `hfsc_change_class`'s and `hfsc_delete_class`'s
//! refusals.

use super::curve::*;
use super::*;
use crate::packet::filter::{Filter, FilterKind, FilterProtocol};
use crate::qdisc::testutil::pkt;
use crate::time::NS_PER_MS;

const H: Handle = 0x0001_0000;

fn cid(minor: u16) -> Handle {
    tc_h_make(1, minor)
}

fn hfsc(defcls: u16) -> Hfsc {
    Hfsc::new(
        QdiscCtx {
            handle: H,
            ..QdiscCtx::default()
        },
        HfscOptions { defcls },
    )
}

/// A linear curve of `bits` bit/s.
fn lin(bits: u64) -> ServiceCurve {
    ServiceCurve {
        m1: 0,
        d: 0,
        m2: (bits / 8) as u32,
    }
}

fn curves(
    rsc: Option<ServiceCurve>,
    fsc: Option<ServiceCurve>,
    usc: Option<ServiceCurve>,
) -> ClassOptions {
    ClassOptions::Hfsc(HfscClassOptions { rsc, fsc, usc })
}

fn ms(n: u64) -> Instant {
    Instant::from_nanos(n * NS_PER_MS)
}

/// A frame of `len` bytes for class `minor` (by `skb->priority`).
fn to(minor: u16, id: u64, len: u32) -> Packet {
    let mut p = pkt(id, len);
    p.meta.priority = cid(minor);
    p
}

/// Runs a link of `rate` bytes/s under `q` until `until`, with `arrivals`
/// enqueued at their times; the frames sent, each with its start time.
fn run_link(
    q: &mut Hfsc,
    rate: u64,
    until: Instant,
    mut arrivals: Vec<(Instant, Packet)>,
) -> Vec<(Instant, Packet)> {
    arrivals.sort_by_key(|a| a.0);
    let mut arrivals = arrivals.into_iter().peekable();
    let mut d = Drops::new();
    let mut sent = Vec::new();
    let (mut t, mut free) = (Instant::ZERO, Instant::ZERO);
    loop {
        while arrivals.peek().is_some_and(|a| a.0 <= t) {
            let (at, p) = arrivals.next().unwrap();
            q.enqueue(p, at, &mut d);
        }
        if t >= until {
            break;
        }
        if t >= free {
            if let Some(p) = q.dequeue(t, &mut d) {
                free = Instant::from_nanos(t.nanos() + p.len as u64 * 1_000_000_000 / rate);
                sent.push((t, p));
                continue;
            }
        }
        let mut next = until;
        if free > t {
            next = next.min(free);
        } else if let Some(w) = q.next_wakeup(t) {
            next = next.min(w);
        }
        if let Some(a) = arrivals.peek() {
            next = next.min(a.0);
        }
        t = next.max(Instant::from_nanos(t.nanos() + 1));
    }
    sent
}

/// Frames of class `minor` among `sent` that started in `[from, to)`.
fn count(sent: &[(Instant, Packet)], minor: u16, from: Instant, to: Instant) -> usize {
    sent.iter()
        .filter(|(t, p)| p.meta.priority == cid(minor) && *t >= from && *t < to)
        .count()
}

/// `n` frames of `len` bytes for class `minor`, all at time 0.
fn backlog(minor: u16, n: u64, len: u32) -> Vec<(Instant, Packet)> {
    (0..n)
        .map(|i| (Instant::ZERO, to(minor, minor as u64 * 100_000 + i, len)))
        .collect()
}

#[test]
fn conversions_round_as_the_kernel() {
    // 1mbit = 125000 bytes/s; a tick is 1.024 µs, 976562 ticks a second.
    assert_eq!(PSCHED_TICKS_PER_SEC, 976_562);
    // m2sm: ceil(125000 << 20 / 976562) = ceil(134217.83).
    assert_eq!(m2sm(125_000), 134_218);
    // m2ism: ceil(976562 << 18 / 125000) = ceil(2047998.9).
    assert_eq!(m2ism(125_000), 2_047_999);
    assert_eq!(m2ism(0), HT_INFINITY);
    // d2dx: ceil(10000 µs × 976562 / 1e6) = ceil(9765.62).
    assert_eq!(d2dx(10_000), 9_766);
    // Back: sm2m(134218) = 134218 × 976562 >> 20 = 125000.0.., dx2d(9766)
    // = 9766e6 / 976562 = 10000.3...
    assert_eq!(sm2m(134_218), 125_000);
    assert_eq!(dx2d(9_766), 10_000);
    // 3 bytes/s: m2sm = ceil(3145728 / 976562) = 4, and back 4 × 976562
    // >> 20 = 3.72: 3.
    assert_eq!(m2sm(3), 4);
    assert_eq!(
        ServiceCurve { m1: 3, d: 1, m2: 3 }.dumped(),
        ServiceCurve { m1: 3, d: 1, m2: 3 }
    );
}

#[test]
fn seg_and_rtsc_arithmetic() {
    // 10 ms (9766 ticks) at 1mbit: 9766 × 134218 >> 20 = 1250.04: 1250.
    assert_eq!(seg_x2y(9_766, 134_218), 1_250);
    // 1000 bytes at 1mbit: 1000 × 2047999 >> 18 = 7812.49: 7812 ticks.
    assert_eq!(seg_y2x(1_000, 2_047_999), 7_812);
    assert_eq!(seg_y2x(0, HT_INFINITY), 0);
    assert_eq!(seg_y2x(1, HT_INFINITY), HT_INFINITY);
    // m1 8mbit for 10 ms then m2 1mbit, anchored at (1000, 0).
    let isc = InternalSc::new(&ServiceCurve {
        m1: 1_000_000,
        d: 10_000,
        m2: 125_000,
    });
    assert_eq!(isc.dx, 9_766);
    // m2sm(1e6) = ceil(1048576e6 / 976562) = ceil(1073742.2); dy = 9766 ×
    // 1073743 >> 20 = 10000.4: 10000.
    assert_eq!(m2sm(1_000_000), 1_073_743);
    assert_eq!(isc.dy, 10_000);
    let rt = RuntimeSc::new(&isc, 1_000, 0);
    assert_eq!(rt.x2y(1_000), 0);
    assert_eq!(rt.x2y(1_000 + 9_766), 10_000);
    // 8 ms more at 1mbit: 7812 ticks → 7812 × 134218 >> 20 = 999.9: 999.
    assert_eq!(rt.x2y(1_000 + 9_766 + 7_812), 10_999);
    // y2x: 10000 bytes end the first segment (dy == y), 11000 are 1000
    // bytes into the second: 7812 ticks after it.
    assert_eq!(rt.y2x(5_000), 1_000 + seg_y2x(5_000, m2ism(1_000_000)));
    assert_eq!(rt.y2x(11_000), 1_000 + 9_766 + 7_812);
    assert_eq!(rt.y2x(0), 1_000);
}

#[test]
fn rtsc_min_cuts_a_concave_curve_where_they_cross() {
    let isc = InternalSc::new(&ServiceCurve {
        m1: 1_000_000,
        d: 10_000,
        m2: 125_000,
    });
    // The curve started at (0, 0); at x = 20000 ticks it is at
    // 10000 + seg_x2y(10234, 134218) = 10000 + 1309.9 = 11309 bytes.
    let mut rt = RuntimeSc::new(&isc, 0, 0);
    assert_eq!(rt.x2y(20_000), 11_309);
    // A fresh curve from (20000, 11000) lies below at x (11000 < 11309)
    // but above after its own dx: they cross. dx = (11309 - 11000) << 20
    // / (1073743 - 134218) = 324009984 / 939525 = 344.9: 344 ticks;
    // dy = 344 × 1073743 >> 20 = 352.3: 352.
    rt.min_with(&isc, 20_000, 11_000);
    assert_eq!((rt.x, rt.y, rt.sc.dx, rt.sc.dy), (20_000, 11_000, 344, 352));
    // Below everywhere: the runtime curve stays.
    let before = rt;
    rt.min_with(&isc, 20_000, 20_000);
    assert_eq!(rt, before);
    // Above everywhere (a restart far below): replaced whole.
    rt.min_with(&isc, 100_000, 0);
    assert_eq!(
        (rt.x, rt.y, rt.sc.dx, rt.sc.dy),
        (100_000, 0, 9_766, 10_000)
    );
    // A convex curve restarts at (x, y) unless the current one is below.
    let convex = InternalSc::new(&lin(1_000_000));
    let mut c = RuntimeSc::new(&convex, 0, 0);
    c.min_with(&convex, 10_000, 0);
    assert_eq!((c.x, c.y), (10_000, 0));
    c.min_with(&convex, 20_000, 1_000_000);
    assert_eq!((c.x, c.y), (10_000, 0));
}

#[test]
fn concave_rt_curve_gives_its_burst_first() {
    // A: rt m1 8mbit d 10ms m2 1mbit (real-time only); B: ls 9mbit,
    // greedy. Link 10mbit: a 1000-byte frame takes 0.8 ms. A's k-th frame
    // is eligible when its curve reaches k × 1000 bytes: k ms in the first
    // 10 ms (8mbit), then every 8 ms (1mbit); the link serves it at the
    // next free slot, B filling the rest.
    let mut q = hfsc(0);
    let burst = ServiceCurve {
        m1: 1_000_000,
        d: 10_000,
        m2: 125_000,
    };
    q.add_class(cid(1), H, &curves(Some(burst), None, None))
        .unwrap();
    q.add_class(cid(2), H, &curves(None, Some(lin(9_000_000)), None))
        .unwrap();
    let mut arrivals = backlog(1, 100, 1000);
    arrivals.extend(backlog(2, 1000, 1000));
    let sent = run_link(&mut q, 1_250_000, ms(90), arrivals);
    assert_eq!(count(&sent, 1, ms(0), ms(10)), 10, "the 8mbit burst");
    assert_eq!(count(&sent, 1, ms(10), ms(90)), 10, "then 1mbit");
    // Everything else went to B.
    assert_eq!(count(&sent, 2, ms(0), ms(90)), sent.len() - 20);
    let x = match q.dump(ms(90)).classes.iter().find(|c| c.classid == cid(1)) {
        Some(ClassDump {
            xstats: Some(super::super::Xstats::HfscClass(x)),
            ..
        }) => *x,
        other => panic!("{other:?}"),
    };
    // All of A's service was real-time; it has no ls curve, no period.
    assert_eq!(
        (x.work, x.rtwork, x.period, x.level),
        (20_000, 20_000, 0, 0)
    );
}

#[test]
fn link_share_splits_an_upper_limited_parent_three_to_one() {
    // 1:1 ls 4mbit ul 4mbit; 1:10 ls 3mbit, 1:20 ls 1mbit, both greedy on
    // a 100mbit link: the parent is held to 4mbit (500000 bytes/s) and
    // its children share it 3:1 by virtual time.
    let mut q = hfsc(0);
    q.add_class(
        cid(1),
        H,
        &curves(None, Some(lin(4_000_000)), Some(lin(4_000_000))),
    )
    .unwrap();
    q.add_class(cid(0x10), cid(1), &curves(None, Some(lin(3_000_000)), None))
        .unwrap();
    q.add_class(cid(0x20), cid(1), &curves(None, Some(lin(1_000_000)), None))
        .unwrap();
    let mut arrivals = backlog(0x10, 900, 1000);
    arrivals.extend(backlog(0x20, 900, 1000));
    let sent = run_link(&mut q, 12_500_000, ms(1000), arrivals);
    let (a, b) = (
        count(&sent, 0x10, ms(0), ms(1000)),
        count(&sent, 0x20, ms(0), ms(1000)),
    );
    // 500000 bytes in a second: 500 frames, one more for the frame that
    // fits at t = 0 (myf is where the curve reaches the bytes sent).
    assert!((500..=501).contains(&(a + b)), "{a} + {b}");
    assert!((a as i64 - 3 * b as i64).abs() <= 3, "{a}:{b}");
    // The overlimits count the dequeues the upper limit turned away.
    assert!(q.stats().overlimits > 0);
    // The parent's xstats: its work is its children's.
    let d = q.dump(ms(1000));
    let parent = d.classes.iter().find(|c| c.classid == cid(1)).unwrap();
    let Some(super::super::Xstats::HfscClass(x)) = parent.xstats else {
        panic!()
    };
    assert_eq!((x.work, x.level, x.period), (((a + b) * 1000) as u64, 1, 1));
}

#[test]
fn upper_limit_caps_a_lone_class() {
    // ls 10mbit ul 2mbit on a 100mbit link: 250000 bytes/s, i.e. one
    // 1000-byte frame every 4 ms (3906.25 ticks).
    let mut q = hfsc(0);
    q.add_class(
        cid(1),
        H,
        &curves(None, Some(lin(10_000_000)), Some(lin(2_000_000))),
    )
    .unwrap();
    let sent = run_link(&mut q, 12_500_000, ms(1000), backlog(1, 400, 1000));
    assert!((250..=251).contains(&sent.len()), "{}", sent.len());
    // Consecutive frames are 4 ms apart (to the tick).
    let gap = sent[11].0.nanos() - sent[10].0.nanos();
    assert!((3_999_000..=4_001_000).contains(&gap), "{gap}");
    // The watchdog wakes the link where the next frame fits.
    let mut q2 = hfsc(0);
    q2.add_class(
        cid(1),
        H,
        &curves(None, Some(lin(10_000_000)), Some(lin(2_000_000))),
    )
    .unwrap();
    let mut d = Drops::new();
    q2.enqueue(to(1, 1, 1000), Instant::ZERO, &mut d);
    q2.enqueue(to(1, 2, 1000), Instant::ZERO, &mut d);
    assert!(q2.dequeue(Instant::ZERO, &mut d).is_some());
    assert!(q2.dequeue(Instant::ZERO, &mut d).is_none());
    // myf = 1000 bytes at 250000 B/s: seg_y2x(1000, m2ism(250000)) ticks.
    let ticks = seg_y2x(1000, m2ism(250_000));
    assert_eq!(ticks, 3_906);
    assert_eq!(
        q2.next_wakeup(Instant::ZERO),
        Some(Instant::from_nanos(ticks << 10))
    );
    assert_eq!(q2.stats().overlimits, 1);
}

#[test]
fn real_time_class_keeps_its_delay_beside_a_greedy_one() {
    // VoIP: 200-byte frames every 20 ms in a class with rt umax 200b
    // dmax 5ms rate 80kbit (m1 = 200 × 1e6 / 5000 = 40000 B/s, d 5 ms,
    // m2 10000 B/s); bulk: ls 10mbit with 1500-byte frames, greedy on a
    // 10mbit link. Each VoIP frame's deadline is 5 ms after it arrives;
    // it waits at most for the bulk frame on the wire (1.2 ms).
    let mut q = hfsc(0);
    let voip = ServiceCurve {
        m1: 40_000,
        d: 5_000,
        m2: 10_000,
    };
    q.add_class(cid(1), H, &curves(Some(voip), None, None))
        .unwrap();
    q.add_class(cid(2), H, &curves(None, Some(lin(10_000_000)), None))
        .unwrap();
    let mut arrivals = backlog(2, 1000, 1500);
    for k in 0..50u64 {
        arrivals.push((ms(20 * k + 3), to(1, k, 200)));
    }
    let sent = run_link(&mut q, 1_250_000, ms(1000), arrivals);
    let delays: Vec<u64> = sent
        .iter()
        .filter(|(_, p)| p.meta.priority == cid(1))
        .map(|(t, p)| t.nanos() - ms(20 * p.meta.id + 3).nanos())
        .collect();
    assert_eq!(delays.len(), 50);
    let worst = delays.iter().max().unwrap();
    assert!(*worst <= 1_200_000, "worst VoIP wait {worst} ns");
}

#[test]
fn default_class_takes_the_unclassified() {
    let mut q = hfsc(0x20);
    q.add_class(cid(0x10), H, &curves(None, Some(lin(1_000_000)), None))
        .unwrap();
    let mut d = Drops::new();
    // No default class yet: dropped, counted.
    assert_eq!(
        q.enqueue(pkt(1, 100), Instant::ZERO, &mut d),
        Verdict::Dropped
    );
    assert_eq!(q.stats().drops, 1);
    q.add_class(cid(0x20), H, &curves(None, Some(lin(1_000_000)), None))
        .unwrap();
    assert_eq!(
        q.enqueue(pkt(2, 100), Instant::ZERO, &mut d),
        Verdict::Queued
    );
    // skb->priority naming a leaf wins.
    assert_eq!(
        q.enqueue(to(0x10, 3, 100), Instant::ZERO, &mut d),
        Verdict::Queued
    );
    let leaf_q = |q: &Hfsc, m| q.cl(q.find(cid(m)).unwrap()).qdisc.qlen();
    assert_eq!((leaf_q(&q, 0x10), leaf_q(&q, 0x20)), (1, 1));
    // `tc qdisc change ... hfsc default 10`.
    q.change(
        &QdiscOptions::Hfsc(HfscOptions { defcls: 0x10 }),
        Instant::ZERO,
        &mut d,
    )
    .unwrap();
    q.enqueue(pkt(4, 100), Instant::ZERO, &mut d);
    assert_eq!(leaf_q(&q, 0x10), 2);
    // A root filter to inner class 1:1 goes on with 1:1's own filters,
    // which send it down to 1:30.
    q.add_class(cid(1), H, &curves(None, Some(lin(1_000_000)), None))
        .unwrap();
    q.add_class(cid(0x30), cid(1), &curves(None, Some(lin(1_000_000)), None))
        .unwrap();
    q.add_filter(matchall(H, cid(1))).unwrap();
    q.add_filter(matchall(cid(1), cid(0x30))).unwrap();
    q.enqueue(pkt(5, 100), Instant::ZERO, &mut d);
    assert_eq!(leaf_q(&q, 0x30), 1);
    // A filter pointing up or sideways (1:1's chain to 1:1) ends the walk:
    // the default class.
    let mut q2 = hfsc(0x20);
    q2.add_class(cid(1), H, &curves(None, Some(lin(1_000_000)), None))
        .unwrap();
    q2.add_class(cid(0x20), cid(1), &curves(None, Some(lin(1_000_000)), None))
        .unwrap();
    q2.add_filter(matchall(H, cid(1))).unwrap();
    q2.add_filter(matchall(cid(1), cid(1))).unwrap();
    q2.enqueue(pkt(6, 100), Instant::ZERO, &mut d);
    assert_eq!(leaf_q(&q2, 0x20), 1);
}

/// `tc filter add ... parent P matchall flowid F`.
fn matchall(parent: Handle, flowid: Handle) -> Filter {
    Filter {
        parent: Some(parent),
        prio: 1,
        ..Filter::new(FilterProtocol::All, FilterKind::Matchall, vec![], flowid)
    }
}

#[test]
fn class_refusals_are_the_kernels() {
    let mut q = hfsc(0);
    let ls = curves(None, Some(lin(1_000_000)), None);
    let errno = |r: Result<(), Refusal>| r.unwrap_err().errno;
    assert_eq!(errno(q.add_class(cid(1), TC_H_ROOT, &ls)), Errno::EEXIST);
    assert_eq!(errno(q.add_class(cid(1), cid(9), &ls)), Errno::ENOENT);
    assert_eq!(errno(q.add_class(tc_h_make(2, 1), H, &ls)), Errno::EINVAL);
    assert_eq!(errno(q.add_class(H, H, &ls)), Errno::EEXIST);
    // Only an upper limit, or curves with two zero slopes: no rt nor ls.
    let ul_only = curves(None, None, Some(lin(1_000_000)));
    assert_eq!(errno(q.add_class(cid(1), H, &ul_only)), Errno::EINVAL);
    let zero = curves(Some(ServiceCurve::default()), None, None);
    assert_eq!(errno(q.add_class(cid(1), H, &zero)), Errno::EINVAL);
    assert_eq!(
        errno(q.add_class(cid(1), H, &ClassOptions::None)),
        Errno::EINVAL
    );
    // An rt-only parent is upgraded with a warning.
    let rt = curves(Some(lin(2_000_000)), None, None);
    q.add_class(cid(1), H, &rt).unwrap();
    assert!(q.take_warnings().is_empty());
    q.add_class(cid(0x10), cid(1), &ls).unwrap();
    assert_eq!(
        q.take_warnings(),
        vec!["Forced curve change on parent 'rt' to 'sc'".to_string()]
    );
    let parent = q.cl(q.find(cid(1)).unwrap()).options();
    assert_eq!(parent.fsc, parent.rsc);
    assert_eq!(errno(q.add_class(cid(0x10), cid(1), &ls)), Errno::EEXIST);
    // Deleting an inner class, the root, or a class a filter points to.
    let mut d = Drops::new();
    let busy = q.delete_class(cid(1), &mut d).unwrap_err();
    assert_eq!(
        (busy.errno, busy.to_string().contains("HFSC class in use")),
        (Errno::EBUSY, true)
    );
    assert_eq!(q.delete_class(H, &mut d).unwrap_err().errno, Errno::EBUSY);
    q.add_filter(matchall(H, cid(0x10))).unwrap();
    assert_eq!(
        q.delete_class(cid(0x10), &mut d).unwrap_err().errno,
        Errno::EBUSY
    );
    // Grafting onto an inner class.
    let fifo = Box::new(Fifo::new(FifoKind::Bfifo, q.child_ctx(0x20_0000, cid(1))));
    assert_eq!(
        q.graft(cid(1), fifo).err().map(|e| e.errno),
        Some(Errno::EINVAL)
    );
    // Unknown classes.
    assert_eq!(
        q.change_class(cid(7), &ls).unwrap_err().errno,
        Errno::ENOENT
    );
}

#[test]
fn a_new_child_purges_its_parents_queue_and_delete_restores_the_leaf() {
    let mut q = hfsc(0);
    q.add_class(cid(1), H, &curves(None, Some(lin(1_000_000)), None))
        .unwrap();
    let mut d = Drops::new();
    for i in 0..3 {
        q.enqueue(to(1, i, 100), Instant::ZERO, &mut d);
    }
    assert_eq!(q.qlen(), 3);
    q.add_class(cid(2), cid(1), &curves(None, Some(lin(1_000_000)), None))
        .unwrap();
    q.flush_freed(&mut d);
    assert_eq!((q.qlen(), d.len(), q.stats().drops), (0, 3, 3));
    // 1:1 is inner now: a frame for it goes to the default (none): dropped.
    assert_eq!(
        q.enqueue(to(1, 9, 100), Instant::ZERO, &mut d),
        Verdict::Dropped
    );
    q.enqueue(to(2, 10, 100), Instant::ZERO, &mut d);
    q.delete_class(cid(2), &mut d).unwrap();
    assert_eq!(q.qlen(), 0);
    assert_eq!(q.cl(q.find(cid(1)).unwrap()).level, 0);
    // The leaf again, scheduled as before.
    q.enqueue(to(1, 11, 100), Instant::ZERO, &mut d);
    assert_eq!(
        q.dequeue(Instant::ZERO, &mut d).map(|p| p.meta.id),
        Some(11)
    );
}

#[test]
fn change_class_reschedules_a_backlogged_class() {
    // A class with ls 1mbit ul 1mbit, backlogged and waiting on its upper
    // limit, is given ul 100mbit: it fits at once.
    let mut q = hfsc(0);
    q.add_class(
        cid(1),
        H,
        &curves(None, Some(lin(1_000_000)), Some(lin(1_000_000))),
    )
    .unwrap();
    let mut d = Drops::new();
    for i in 0..3 {
        q.enqueue(to(1, i, 1000), Instant::ZERO, &mut d);
    }
    assert!(q.dequeue(Instant::ZERO, &mut d).is_some());
    assert!(q.dequeue(ms(1), &mut d).is_none());
    q.change_class(cid(1), &curves(None, None, Some(lin(100_000_000))))
        .unwrap();
    // The ulimit curve restarts at the present (1 ms) from the bytes sent
    // (hfsc_change_usc), and update_vf reads myf off it: the class fits
    // now; the frame after waits for the new curve to pass 1000 more
    // bytes, 80 µs (78 ticks) on.
    assert!(q.dequeue(ms(1), &mut d).is_some());
    assert!(q.dequeue(ms(1), &mut d).is_none());
    let t = Instant::from_nanos(ms(1).nanos() + 80_000);
    assert!(q.dequeue(t, &mut d).is_some());
    // A curve given with two zero slopes is none: nothing changes.
    q.change_class(cid(1), &curves(Some(ServiceCurve::default()), None, None))
        .unwrap();
    assert!(q.cl(q.find(cid(1)).unwrap()).rsc.is_none());
}

#[test]
fn reset_and_drain_forget_the_schedule() {
    let mut q = hfsc(1);
    q.add_class(
        cid(1),
        H,
        &curves(Some(lin(1_000_000)), Some(lin(1_000_000)), None),
    )
    .unwrap();
    let mut d = Drops::new();
    for i in 0..4 {
        q.enqueue(pkt(i, 500), Instant::ZERO, &mut d);
    }
    assert!(q.peek(Instant::ZERO, &mut d).is_some());
    assert_eq!(q.qlen(), 4);
    assert_eq!(q.drain_all().len(), 4);
    assert!(q.eligible.is_empty() && q.cl(0).vt_tree.is_empty());
    q.enqueue(pkt(9, 500), Instant::ZERO, &mut d);
    q.reset(&mut d);
    assert_eq!((q.qlen(), q.backlog()), (0, 0));
    let c = q.cl(q.find(cid(1)).unwrap());
    assert_eq!((c.total, c.cumul, c.vtperiod, c.in_el), (0, 0, 0, false));
    // And it schedules again from scratch.
    q.enqueue(pkt(10, 500), Instant::ZERO, &mut d);
    assert_eq!(
        q.dequeue(Instant::ZERO, &mut d).map(|p| p.meta.id),
        Some(10)
    );
}

#[test]
fn a_curve_ending_in_a_zero_slope_does_not_panic() {
    // m2 0: the inverse slope is HT_INFINITY, and the kernel's sums of
    // times wrap past it; the burst of m1 is all the class gets by
    // real time.
    let mut q = hfsc(0);
    let sc = ServiceCurve {
        m1: 125_000,
        d: 10_000,
        m2: 0,
    };
    q.add_class(cid(1), H, &curves(Some(sc), Some(sc), Some(sc)))
        .unwrap();
    q.add_class(cid(2), H, &curves(Some(sc), Some(sc), None))
        .unwrap();
    let mut arrivals = backlog(1, 50, 500);
    arrivals.extend(backlog(2, 50, 500));
    arrivals.push((ms(50), to(1, 999, 500)));
    let sent = run_link(&mut q, 1_250_000, ms(100), arrivals);
    // 10 ms at 1mbit is 1250 bytes: the first two 500-byte frames of
    // each class fit the real-time curve by their deadlines.
    assert!(count(&sent, 1, ms(0), ms(100)) >= 2);
    assert!(count(&sent, 2, ms(0), ms(100)) >= 2);
}
