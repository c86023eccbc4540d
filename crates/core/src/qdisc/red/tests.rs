//! RED's unit tests at explicit times: the fixed-point EWMA against an f64
//! model, the idle decay (Stab and its linear part), the random test with
//! a fixed draw, ECN against harddrop and nodrop, the child's limit,
//! adaptive RED's max_P, the kernel's refusals, the child's graft and the
//! change that replaces it.

use super::algorithm::*;
use super::*;
use crate::packet::ecn::ECN_CE;
use crate::qdisc::fifo::FifoOptions;
use crate::qdisc::testutil::{ect_pkt, pkt};

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

fn us(t: u64) -> Instant {
    Instant::from_micros(t)
}

/// Options as tc sends them (flags in TCA_RED_FLAGS), an all-zero Stab
/// (every idle period is decayed linearly), max_P from Plog.
fn opts(limit: u32, min: u32, max: u32, wlog: u8, flags: u32) -> RedOptions {
    RedOptions {
        limit,
        qth_min: min,
        qth_max: max,
        wlog,
        plog: 20,
        scell_log: 10,
        flags: 0,
        stab: Some(vec![0; RED_STAB_SIZE]),
        max_p: None,
        flags_attr: Some(Bitfield32 {
            value: flags,
            selector: TC_RED_SUPPORTED_FLAGS,
        }),
    }
}

fn red(o: RedOptions) -> Red {
    Red::build(QdiscCtx::default(), &QdiscOptions::Red(o)).unwrap()
}

fn err(o: RedOptions) -> Refusal {
    Red::build(QdiscCtx::default(), &QdiscOptions::Red(o))
        .err()
        .unwrap()
}

fn xstats(q: &Red, now: Instant) -> RedXstats {
    match q.dump(now).xstats {
        Some(Xstats::Red(x)) => x,
        other => panic!("{other:?}"),
    }
}

fn dumped(q: &Red, now: Instant) -> RedOptions {
    match q.dump(now).options {
        QdiscOptions::Red(o) => o,
        other => panic!("{other:?}"),
    }
}

/// With max_P = 1 (Q0.32) the divisor is 1 and qR a whole random u32:
/// no frame in the band is ever marked, so only `max` decides.
fn never_in_band(mut o: RedOptions) -> RedOptions {
    o.max_p = Some(1);
    o
}

/// qavg after each of 300 arrivals (some dequeues between them, so the
/// backlog rises and falls) against qavg = (1 - W) qavg + W backlog in
/// f64: the kernel's `qavg + backlog - (qavg >> Wlog)` floors once a
/// packet, an error of less than 1 (scaled) that the filter forgets at
/// rate 1 - W, so the two stay within 2^Wlog scaled units: one byte.
#[test]
fn qavg_tracks_an_f64_ewma_within_the_fixed_point_error() {
    for wlog in [1u8, 3, 5, 9] {
        let mut q = red(opts(10_000_000, 1_000_000, 2_000_000, wlog, 0));
        let mut d = Drops::new();
        let w = 1.0 / f64::from(1u32 << wlog);
        let mut model = 0.0f64;
        for i in 0..300u64 {
            let t = us(i * 10);
            let backlog = q.backlog() as f64;
            // The first arrival ends the idle period begun at creation:
            // qavg (0) decayed, not updated.
            if i > 0 {
                model = model * (1.0 - w) + backlog * w;
            }
            q.enqueue(pkt(i, 700 + (i as u32 * 37) % 800), t, &mut d);
            let qavg = q.vars().qavg as f64 / f64::from(1u32 << wlog);
            assert!(
                (qavg - model).abs() < 1.0,
                "wlog {wlog} packet {i}: kernel {qavg} model {model}"
            );
            if i % 3 == 0 {
                q.dequeue(t, &mut d);
            }
        }
        assert!(d.is_empty());
        assert!(model > 1000.0, "the average rose: {model}");
    }
}

/// `red_calc_qavg_from_idle_time` by hand: Scell_log 10 (cells of
/// 1024 µs), Stab[i] = i / 2. Within the first cell the shift is 0 and
/// the decay linear, qavg × (1 - t / 1024), but never below qavg / 2;
/// later cells shift; beyond Scell_max (255 << 10 µs) the last cell
/// applies.
#[test]
fn idle_decay_follows_the_table_and_its_linear_start() {
    let mut stab = [0u8; RED_STAB_SIZE];
    for (i, s) in stab.iter_mut().enumerate() {
        *s = (i / 2) as u8;
    }
    let p = RedParms::new(1000, 3000, 4, 20, 10, &stab, 0);
    assert_eq!(p.scell_max, 255 << 10);
    let v = RedVars {
        qavg: 1 << 20,
        idle_since: Some(ms(1)),
        ..RedVars::default()
    };
    let at = |idle_us: u64| v.qavg_from_idle_time(&p, ms(1) + idle_us * 1000);
    // 256 µs: (2^20 × 256) >> 10 = 2^18 off.
    assert_eq!(at(256), (1 << 20) - (1 << 18));
    // 600 µs: 2^20 × 600 >> 10 = 614400 ≥ 2^19: half.
    assert_eq!(at(600), 1 << 19);
    // A partial µs is cut (ktime_us_delta): 256.999 µs is 256 µs.
    assert_eq!(
        v.qavg_from_idle_time(&p, ms(1) + 256_999),
        (1 << 20) - (1 << 18)
    );
    // Cell 4 (4096..5119 µs): Stab[4] = 2.
    assert_eq!(at(4096), 1 << 18);
    assert_eq!(at(5119), 1 << 18);
    // Cell 2 has Stab 1.
    assert_eq!(at(2048), 1 << 19);
    // Beyond the table: cell 255, Stab 127 & 63 would be too much; the
    // kernel's table never holds more than 31 (red_check_params), here
    // 127 is masked only to keep the shift defined.
    let mut small = stab;
    small[255] = 31;
    let p = RedParms::new(1000, 3000, 4, 20, 10, &small, 0);
    assert_eq!(v.qavg_from_idle_time(&p, ms(10_000)), (1 << 20) >> 31);

    // Through the qdisc: the queue empties at 10 ms (the dequeue that
    // finds nothing begins the idle period); the next arrival, 256 µs
    // later, sees qavg decayed and not fed its (zero) backlog.
    let mut o = opts(1_000_000, 100_000, 300_000, 2, 0);
    o.stab = Some(stab.iter().map(|s| *s.min(&31)).collect());
    let mut q = red(o);
    let mut d = Drops::new();
    for i in 0..20 {
        q.enqueue(pkt(i, 1000), ms(i), &mut d);
    }
    for _ in 0..20 {
        q.dequeue(ms(10), &mut d).unwrap();
        assert!(!q.vars().is_idling());
    }
    assert!(q.dequeue(ms(10), &mut d).is_none());
    assert_eq!(q.vars().idle_since, Some(ms(10)));
    let before = q.vars().qavg;
    q.enqueue(pkt(99, 1000), ms(10) + 256_000, &mut d);
    assert_eq!(q.vars().qavg, before - ((before * 256) >> 10));
    assert!(!q.vars().is_idling());
}

/// `red_action` with a fixed draw. Wlog 0 (qavg in bytes), the band
/// 1000..3000, max_P one half: the divisor is 2^31 / 2000 = 1073741, so a
/// draw of 600 × 1073741 gives qR = 600. At qavg 1300 (excess 300): the
/// first frame in the band draws qR and passes; then frame k marks when
/// 300 × qcount ≥ 600, so every second frame after a mark is marked.
#[test]
fn the_random_test_marks_as_the_fixed_point_formula_says() {
    let p = RedParms::new(1000, 3000, 0, 0, 10, &[0; RED_STAB_SIZE], 1 << 31);
    assert_eq!(p.max_p_delta, 1_073_741);
    assert_eq!(p.random(600 * 1_073_741), 600);
    let mut v = RedVars::default();
    let draws = std::cell::Cell::new(0);
    let mut draw = || {
        draws.set(draws.get() + 1);
        600 * 1_073_741
    };
    let seq: Vec<RedAction> = (0..7).map(|_| v.action(&p, 1300, &mut draw)).collect();
    use RedAction::*;
    assert_eq!(
        seq,
        [DontMark, DontMark, ProbMark, DontMark, ProbMark, DontMark, ProbMark]
    );
    assert_eq!(draws.get(), 4, "one draw entering the band, one per mark");
    // Below the band: no mark, qcount back to -1; at max: hard mark.
    assert_eq!(v.action(&p, 999, &mut draw), DontMark);
    assert_eq!(v.qcount, -1);
    assert_eq!(v.action(&p, 3000, &mut draw), HardMark);
    assert_eq!(v.action(&p, 2999, &mut draw), DontMark, "first in band");
    // The f64 reading of the test: max_P (avg - min) / (max - min) ≥
    // rnd / qcount with rnd = qR / (span / max_P): 0.5 × 300 / 2000 ×
    // qcount ≥ 600 / 4000 holds from qcount 2 on, as above.
    let f64_marks = |qcount: f64, qr: f64| 0.5 * 300.0 / 2000.0 >= qr / 4000.0 / qcount;
    assert!(!f64_marks(1.0, 600.0) && f64_marks(2.0, 600.0));
}

/// `red_check_params` and `red_set_parms` by hand.
#[test]
fn parameters_are_checked_and_derived_as_the_kernel_does() {
    let stab = [0u8; RED_STAB_SIZE];
    assert!(red_check_params(30_000, 90_000, 5, 15, &stab));
    // fls(90000) = 17: Wlog 15 fits (32 > 17 + 14), not 15 + 17 = 32.
    assert!(red_check_params(30_000, 90_000, 14, 15, &stab));
    assert!(!red_check_params(30_000, 90_000, 15, 15, &stab));
    assert!(!red_check_params(90_000, 30_000, 5, 15, &stab), "min > max");
    assert!(red_check_params(5, 5, 5, 15, &stab), "min = max");
    assert!(!red_check_params(1, 2, 5, 32, &stab), "Scell_log 32");
    let mut bad = stab;
    bad[7] = 32;
    assert!(!red_check_params(1, 2, 5, 3, &bad));
    // Plog 22 over a span of 60000: max_P = (2^32 - 1) >> 22 × 60000.
    let p = RedParms::new(30_000, 90_000, 5, 22, 15, &stab, 0);
    assert_eq!(p.max_p, 1023 * 60_000);
    assert_eq!(p.max_p_delta, 1023);
    assert_eq!((p.qth_min, p.qth_max), (30_000 << 5, 90_000 << 5));
    assert_eq!((p.target_min, p.target_max), (54_000, 66_000));
    // tc's max_P for 0.02: 85899345 / 60000 = 1431.
    let p = RedParms::new(30_000, 90_000, 5, 22, 15, &stab, 85_899_345);
    assert_eq!(p.max_p_delta, 1431);
    // min = max: a span of 1.
    let p = RedParms::new(5, 5, 1, 3, 1, &stab, 0);
    assert_eq!((p.qth_delta, p.max_p), (1, u32::MAX >> 3));
}

/// Above max every frame is marked or dropped: without ECN dropped
/// (`red_forced`), with ECN ECT frames marked CE and Not-ECT frames
/// dropped, with harddrop dropped all the same, with nodrop Not-ECT frames
/// queued. Wlog 0 makes qavg the child's backlog: 1000-byte frames at one
/// instant reach max (4000) at the fifth.
#[test]
fn ecn_harddrop_and_nodrop_decide_above_max() {
    let run = |flags: u32, ecn: u8| {
        let mut q = red(never_in_band(opts(100_000, 2000, 4000, 0, flags)));
        let mut d = Drops::new();
        for i in 0..10 {
            q.enqueue(ect_pkt(i, 1000, ecn), ms(1), &mut d);
        }
        (q, d)
    };
    // No ECN: frames 5..10 dropped, forced.
    let (q, d) = run(0, 2);
    assert_eq!((q.qlen(), d.len()), (4, 6));
    assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::RedForced));
    assert_eq!(
        xstats(&q, ms(1)),
        RedXstats {
            early: 6,
            ..RedXstats::default()
        }
    );
    let s = q.stats();
    assert_eq!((s.drops, s.overlimits), (6, 6));
    // ECN, ECT(0): marked CE and queued.
    let (mut q, d) = run(TC_RED_ECN, 2);
    assert_eq!((q.qlen(), d.len()), (10, 0));
    assert_eq!(xstats(&q, ms(1)).marked, 6);
    assert_eq!(q.stats().overlimits, 6);
    let mut dd = Drops::new();
    let marks: Vec<bool> = (0..10)
        .map(|_| {
            let p = q.dequeue(ms(2), &mut dd).unwrap();
            p.meta.ce_marked && p.data[15] & 3 == ECN_CE
        })
        .collect();
    assert_eq!(
        marks,
        [false, false, false, false, true, true, true, true, true, true]
    );
    // ECN, Not-ECT: dropped.
    let (q, d) = run(TC_RED_ECN, 0);
    assert_eq!((q.qlen(), d.len()), (4, 6));
    assert_eq!(xstats(&q, ms(1)).early, 6);
    // ECN + harddrop: even ECT dropped above max.
    let (q, d) = run(TC_RED_ECN | TC_RED_HARDDROP, 2);
    assert_eq!((q.qlen(), d.len(), xstats(&q, ms(1)).marked), (4, 6, 0));
    // ECN + nodrop: Not-ECT queued, nothing counted; ECT still marked.
    let (q, d) = run(TC_RED_ECN | TC_RED_NODROP, 0);
    assert_eq!((q.qlen(), d.len()), (10, 0));
    assert_eq!(xstats(&q, ms(1)), RedXstats::default());
    assert_eq!(q.stats().overlimits, 6);
    let (q, _) = run(TC_RED_ECN | TC_RED_NODROP, 1);
    assert_eq!(xstats(&q, ms(1)).marked, 6);
}

/// In the band, with the seeded random source: the early drops (or
/// marks) of a standing queue come at the rate the formula gives. Band
/// 10000..20000 bytes, max_P 0.1, a standing average of 15000 (Wlog 0):
/// qR is uniform in 0..span / max_P = 100000 and a frame is marked once
/// 5000 × qcount ≥ qR, so the gap between marks is uniform in 1..20
/// frames (Floyd's uniform spacing of p_b = 0.05): 10.5 frames on
/// average, a rate of 1 / 10.5 = 0.095.
#[test]
fn early_drops_in_the_band_come_at_the_formulas_rate() {
    for (flags, ecn) in [(0, 2), (TC_RED_ECN, 2)] {
        let mut o = opts(1_000_000, 10_000, 20_000, 0, flags);
        o.max_p = Some((0.1 * 4_294_967_296.0) as u32);
        let mut q = red(o);
        let mut d = Drops::new();
        let mut t = 0;
        for i in 0..15 {
            q.enqueue(ect_pkt(i, 1000, ecn), us(t), &mut d);
        }
        // Hold 15 frames: one out for each one kept.
        let n = 20_000;
        for i in 0..n {
            t += 10;
            q.enqueue(ect_pkt(100 + i, 1000, ecn), us(t), &mut d);
            if q.qlen() > 15 {
                q.dequeue(us(t), &mut d);
            }
        }
        let x = xstats(&q, us(t));
        let rate = f64::from(x.early + x.marked) / n as f64;
        assert!((0.085..0.105).contains(&rate), "flags {flags}: rate {rate}");
        if flags & TC_RED_ECN != 0 {
            assert_eq!((x.early, d.len()), (0, 0), "ECT frames are marked");
        } else {
            assert_eq!(x.marked, 0);
            assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::RedEarly));
        }
    }
}

/// The default child is a bfifo of `limit` bytes: what it refuses counts
/// as `pdrop` (and in RED's drops), dropped `queue_full`.
#[test]
fn the_child_bfifo_holds_limit_bytes() {
    let mut q = red(opts(3500, 100_000, 200_000, 1, 0));
    let mut d = Drops::new();
    let verdicts: Vec<Verdict> = (0..5)
        .map(|i| q.enqueue(pkt(i, 1000), ms(1), &mut d))
        .collect();
    assert_eq!(&verdicts[3..], [Verdict::Dropped, Verdict::Dropped]);
    assert_eq!((q.qlen(), q.backlog()), (3, 3000));
    assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::QueueFull));
    assert_eq!(xstats(&q, ms(1)).pdrop, 2);
    assert_eq!(q.stats().drops, 2);
    let dump = q.dump(ms(1));
    assert!(dump.children.is_empty(), "the default bfifo is invisible");
    assert_eq!(dump.classes[0].classid, 0x8001_0001);
    assert_eq!(dump.classes[0].leaf, None);
    assert_eq!(dump.occupancy[0].packets, 3);
}

/// Adaptive RED (armed from `tc_red_qopt.flags`, as iproute2 before 5.7
/// sent it): every 500 ms, with the average above min + 0.6 × span, max_P
/// grows by min(1 %, max_P / 4); below min + 0.4 × span it shrinks to
/// max_P / 10 × 9. With the flag in TCA_RED_FLAGS (today's tc) the kernel
/// arms no timer: `adaptive` is shown but max_P stays.
#[test]
fn adaptive_red_moves_max_p_every_500_ms() {
    let mut o = never_in_band(opts(1_000_000, 10_000, 20_000, 0, 0));
    o.flags_attr = None;
    o.flags = TC_RED_ADAPTATIVE as u8;
    o.max_p = Some(85_899_345); // 0.02
    let mut q = red(o.clone());
    let mut d = Drops::new();
    // A standing 19000 bytes: above target_max = 10000 + 3 × 2000.
    for i in 0..19 {
        q.enqueue(pkt(i, 1000), ms(1), &mut d);
    }
    let mut model = 85_899_345u32;
    for tick in 1..=4u64 {
        // Just before the tick nothing moved; at it max_P grew.
        q.enqueue(pkt(100 + tick, 1000), ms(500 * tick - 1), &mut d);
        q.dequeue(ms(500 * tick - 1), &mut d);
        assert_eq!(q.parms().max_p, model, "before tick {tick}");
        q.dequeue(ms(500 * tick), &mut d);
        q.enqueue(pkt(200 + tick, 1000), ms(500 * tick), &mut d);
        model += (42_949_673u32).min(model / 4);
        assert_eq!(q.parms().max_p, model, "tick {tick}");
    }
    assert_eq!(
        q.parms().max_p_delta,
        (model + 5000) / 10_000,
        "rounded to nearest after a tick"
    );
    // The dump runs the timer up to its time: 10 more ticks.
    let shown = dumped(&q, ms(7000)).max_p.unwrap();
    let mut m = model;
    for _ in 0..10 {
        if m <= MAX_P_MAX {
            m += MAX_P_MIN.min(m / 4);
        }
    }
    assert_eq!(shown, m);
    assert_eq!(q.parms().max_p, model, "a dump changes nothing");
    // Emptied, the average decays (Stab all 0: halved at once) and stays
    // below target_min: max_P shrinks by 9/10 per tick, down to 1 %.
    while q.dequeue(ms(2001), &mut d).is_some() {}
    q.dequeue(ms(2001), &mut d);
    let later = dumped(&q, ms(600_000)).max_p.unwrap();
    assert!((MAX_P_MIN / 10 * 9..MAX_P_MIN).contains(&later), "{later}");

    // Today's tc: the flag in TCA_RED_FLAGS, no timer.
    let mut o2 = never_in_band(opts(1_000_000, 10_000, 20_000, 0, TC_RED_ADAPTATIVE));
    o2.max_p = Some(85_899_345);
    let mut q = red(o2);
    for i in 0..19 {
        q.enqueue(pkt(i, 1000), ms(1), &mut d);
    }
    assert_eq!(dumped(&q, ms(10_000)).max_p, Some(85_899_345));
    assert_eq!(
        dumped(&q, ms(1)).flags_attr.unwrap().value,
        TC_RED_ADAPTATIVE
    );
}

/// The kernel's refusals, in its order; a refused change leaves RED as
/// it was.
#[test]
fn refusals_are_the_kernels() {
    let bare = Refusal::bare(Errno::EINVAL);
    let r = Red::build(QdiscCtx::default(), &QdiscOptions::None)
        .err()
        .unwrap();
    assert_eq!((r.errno, r.message), (Errno::EINVAL, None));
    let r = err(opts(1000, 9000, 3000, 5, 0));
    assert_eq!((r.errno, &r.message), (bare.errno, &bare.message));
    assert!(format!("{:?}", r.hint).contains("min 9000 max 3000"));
    assert!(err(opts(1000, 1 << 20, 1 << 21, 10, 0)).message.is_none());
    let mut o = opts(1000, 1, 2, 1, 0);
    o.stab = None;
    assert_eq!(err(o).message, None);
    let mut o = opts(1000, 1, 2, 1, 0);
    o.stab.as_mut().unwrap()[3] = 40;
    assert_eq!(err(o).message, None);
    let r = err(opts(1000, 1, 2, 1, TC_RED_NODROP));
    assert_eq!(
        r.message.as_deref(),
        Some("sch_red: nodrop mode is only meaningful with ECN.")
    );
    let mut o = opts(1000, 1, 2, 1, TC_RED_ECN);
    o.flags = TC_RED_ECN as u8;
    assert_eq!(
        err(o).message.as_deref(),
        Some(
            "sch_red: flags should be passed either through qopt, or through a dedicated \
             attribute."
        )
    );
    for bf in [
        Bitfield32 {
            value: 16,
            selector: 31,
        },
        Bitfield32 {
            value: 1,
            selector: 2,
        },
    ] {
        let mut o = opts(1000, 1, 2, 1, 0);
        o.flags_attr = Some(bf);
        assert_eq!(
            err(o).message.as_deref(),
            Some("Attribute failed policy validation.")
        );
    }
    // A change that fails leaves the qdisc as it was.
    let mut q = red(opts(5000, 1000, 3000, 2, TC_RED_ECN));
    let mut d = Drops::new();
    q.enqueue(pkt(1, 1000), ms(1), &mut d);
    let before = dumped(&q, ms(1));
    let bad = QdiscOptions::Red(opts(5000, 1000, 3000, 2, TC_RED_NODROP & !TC_RED_ECN));
    let mut o = opts(5000, 1000, 3000, 2, TC_RED_NODROP);
    o.flags_attr = Some(Bitfield32 {
        value: TC_RED_NODROP,
        selector: TC_RED_NODROP | TC_RED_ECN,
    });
    assert!(q.change(&QdiscOptions::Red(o), ms(2), &mut d).is_err());
    assert!(q.change(&bad, ms(2), &mut d).is_err());
    assert_eq!(dumped(&q, ms(2)), before);
    assert_eq!(q.qlen(), 1);
    // Selecting only nodrop keeps ecn from before (flags merged).
    let mut o = opts(0, 1000, 3000, 2, 0);
    o.flags_attr = Some(Bitfield32 {
        value: TC_RED_NODROP,
        selector: TC_RED_NODROP,
    });
    q.change(&QdiscOptions::Red(o), ms(3), &mut d).unwrap();
    assert_eq!(
        dumped(&q, ms(3)).flags_attr.unwrap().value,
        TC_RED_ECN | TC_RED_NODROP
    );
    assert_eq!(q.qlen(), 1, "limit 0 keeps the child and its frames");
}

/// A change with a limit puts a fresh bfifo in place and drops what the
/// old child held (`qdisc_tree_flush_backlog`), counted in RED's drops;
/// the variables restart and, the child empty, an idle period begins.
#[test]
fn change_replaces_the_child_and_restarts_the_average() {
    let mut q = red(opts(50_000, 10_000, 30_000, 2, 0));
    let mut d = Drops::new();
    for i in 0..8 {
        q.enqueue(pkt(i, 1000), ms(1), &mut d);
    }
    assert!(q.vars().qavg > 0);
    q.change(
        &QdiscOptions::Red(opts(2000, 10_000, 30_000, 2, 0)),
        ms(5),
        &mut d,
    )
    .unwrap();
    assert_eq!((q.qlen(), d.len(), q.stats().drops), (0, 8, 8));
    assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::QdiscReset));
    assert_eq!((q.vars().qavg, q.vars().qcount), (0, -1));
    assert_eq!(q.vars().idle_since, Some(ms(5)));
    assert_eq!(dumped(&q, ms(5)).limit, 2000);
    q.enqueue(pkt(20, 1500), ms(6), &mut d);
    assert_eq!(
        q.enqueue(pkt(21, 1500), ms(6), &mut d),
        Verdict::Dropped,
        "the new bfifo holds 2000 bytes"
    );
    // reset: the child emptied, no idle period, qavg 0.
    q.reset(&mut d);
    assert_eq!(
        (q.qlen(), q.vars().is_idling(), q.vars().qavg),
        (0, false, 0)
    );
}

/// The one class: any minor is `:1`, classes cannot be added, a grafted
/// qdisc replaces the bfifo (and shows as the class's leaf), a deleted
/// one leaves the noop qdisc, whose drops RED counts as `pdrop`.
#[test]
fn one_class_holds_a_grafted_child() {
    let mut q = red(opts(50_000, 10_000, 30_000, 2, 0));
    let c = q.as_classful().unwrap();
    assert_eq!(c.find_class(0x8001_0007), 0x8001_0001);
    assert_eq!(
        c.add_class(0x8001_0002, 0x8001_0000, &crate::qdisc::ClassOptions::None)
            .unwrap_err()
            .errno,
        Errno::EOPNOTSUPP
    );
    assert!(c
        .graft(
            0x0002_0001,
            Box::new(Fifo::new(FifoKind::Pfifo, QdiscCtx::default()))
        )
        .is_err());
    let ctx = c.child_ctx(0x0010_0000, 0x8001_0001);
    let pfifo = Fifo::build(
        FifoKind::Pfifo,
        ctx,
        &QdiscOptions::Fifo(FifoOptions { limit: 2 }),
    )
    .unwrap();
    let old = c.graft(0x8001_0001, Box::new(pfifo)).unwrap().unwrap();
    assert_eq!(old.kind(), "bfifo");
    let mut d = Drops::new();
    for i in 0..3 {
        q.enqueue(pkt(i, 1000), ms(1), &mut d);
    }
    assert_eq!((q.qlen(), xstats(&q, ms(1)).pdrop), (2, 1));
    let dump = q.dump(ms(1));
    assert_eq!(dump.classes[0].leaf, Some(0x0010_0000));
    assert_eq!(dump.children[0].kind, "pfifo");
    let noop = q.as_classful().unwrap().after_delete(0x8001_0001);
    q.as_classful().unwrap().graft(0x8001_0001, noop).unwrap();
    assert_eq!(q.enqueue(pkt(9, 100), ms(2), &mut d), Verdict::Dropped);
    assert_eq!(d.since(d.len() - 1)[0].1, DropReason::NoQdisc);
    assert_eq!(xstats(&q, ms(2)).pdrop, 2);
}

/// No panic at the edges the kernel accepts: Wlog 31 with a zero min,
/// Scell_log 31, every shift 31, max_P at both ends, instants far apart.
#[test]
fn extreme_parameters_do_not_panic() {
    for (min, max, wlog, scell_log, shift, max_p) in [
        (0u32, 0u32, 31u8, 31u8, 31u8, Some(u32::MAX)),
        (0, 1, 30, 0, 0, Some(1)),
        (1, (1 << 31) - 1, 0, 31, 31, None),
        (0, 0, 0, 0, 1, Some(0)),
    ] {
        let mut o = opts(u32::MAX, min, max, wlog, TC_RED_ECN | TC_RED_NODROP);
        o.scell_log = scell_log;
        o.plog = 255;
        o.max_p = max_p;
        o.flags_attr = None;
        o.flags = (TC_RED_ECN | TC_RED_ADAPTATIVE) as u8;
        o.stab = Some(vec![shift; RED_STAB_SIZE]);
        let mut q = red(o);
        let mut d = Drops::new();
        for (i, t) in [0, 1, 1 << 40, u64::MAX / 2, u64::MAX]
            .into_iter()
            .enumerate()
        {
            let t = Instant::from_nanos(t);
            q.enqueue(ect_pkt(i as u64, u32::MAX, 2), t, &mut d);
            q.enqueue(pkt(i as u64, 1), t, &mut d);
            q.dequeue(t, &mut d);
            q.dequeue(t, &mut d);
            let _ = q.dump(t);
        }
    }
}
