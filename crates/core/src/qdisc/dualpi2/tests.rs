//! DualPI2's unit tests at explicit times, with values worked out by hand
//! from net/sched/sch_dualpi2.c's integer arithmetic: the scaled gains,
//! the probability after timer runs at a held and a growing delay, the
//! coupling of the two queues' probabilities, the step threshold in time
//! and packets, the WRR credit's shares, the classification, overload,
//! the limits and every refused parameter.

use super::*;
use crate::packet::ecn::{ECN_CE, ECN_ECT0, ECN_ECT1};
use crate::qdisc::tc_h_make;
use crate::qdisc::testutil::{ect_pkt, pkt};

const H: Handle = 0x0001_0000;

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

fn ctx() -> QdiscCtx {
    QdiscCtx {
        handle: H,
        ..QdiscCtx::default()
    }
}

fn q(o: Dualpi2Options) -> Dualpi2 {
    Dualpi2::build(ctx(), &QdiscOptions::Dualpi2(o)).unwrap()
}

fn xstats(q: &Dualpi2, now: Instant) -> Dualpi2Xstats {
    match q.dump(now).xstats {
        Some(Xstats::Dualpi2(x)) => x,
        other => panic!("{other:?}"),
    }
}

fn refusal(o: Dualpi2Options) -> Refusal {
    Dualpi2::build(ctx(), &QdiscOptions::Dualpi2(o))
        .err()
        .expect("refused")
}

#[test]
fn default_gains_scale_and_dump_as_the_kernel_rounds_them() {
    // 41 × (2^32 - 1) >> 2 = 44 023 414 773 → / 1e9 = 44;
    // 819 × (2^32 - 1) >> 2 = 879 394 553 651 → 879.
    let p = Params::defaults(1514);
    assert_eq!((p.alpha, p.beta), (44, 879));
    // Back: 44e9 << 2 / (2^32 - 1) = 40.98 → 40; 879e9 << 2 → 818.
    let o = p.options();
    assert_eq!((o.alpha, o.beta), (Some(40), Some(818)));
    // 10000 packets × 2 × 1514.
    assert_eq!(p.memory_limit, 30_280_000);
    // 1514 × (10 - 90).
    assert_eq!(p.c_protection_init, -121_120);
    assert_eq!(o.step_thresh, Some(StepThresh::Micros(1000)));
    assert_eq!((o.target, o.tupdate), (Some(15_000), Some(16_000)));
}

#[test]
fn probability_after_runs_at_a_held_delay() {
    let p = Params::defaults(1514);
    let mut pi2 = Pi2::default();
    // First run at 25 ms: (25e6 - 15e6) × 44 + (25e6 - 0) × 879
    // = 440 000 000 + 21 975 000 000 = 22 415 000 000; >> 6 = 350 234 375.
    let d = 25 * NS_PER_MS;
    assert_eq!(calculate_probability(&p, &mut pi2, d, 0), 350_234_375);
    pi2.prob = 350_234_375;
    // Each further run: 440 000 000 >> 6 = 6 875 000.
    for _ in 1..10 {
        pi2.prob = calculate_probability(&p, &mut pi2, 0, d);
    }
    assert_eq!(pi2.prob, 350_234_375 + 9 * 6_875_000);
    assert_eq!(pi2.last_qdelay, d);
    // At zero delay: (0 - 15e6) × 44 + (0 - 25e6) × 879 = -22 635 000 000;
    // its magnitude >> 6 = 353 671 875 off.
    let before = pi2.prob;
    assert_eq!(
        calculate_probability(&p, &mut pi2, 0, 0),
        before - 353_671_875
    );
    // Below zero it clamps at 0; above MAX_PROB at MAX_PROB.
    let mut low = Pi2 {
        prob: 10,
        last_qdelay: 0,
    };
    assert_eq!(calculate_probability(&p, &mut low, 0, 0), 0);
    let mut high = Pi2 {
        prob: MAX_PROB - 10,
        last_qdelay: 0,
    };
    assert_eq!(calculate_probability(&p, &mut high, d, 0), MAX_PROB);
}

#[test]
fn overflow_mode_caps_the_probability_at_one_over_k() {
    let mut p = Params::defaults(1514);
    p.drop_overload = false;
    let mut pi2 = Pi2 {
        prob: MAX_PROB - 10,
        last_qdelay: 0,
    };
    // MAX_PROB / 2 = 2 147 483 647.
    assert_eq!(
        calculate_probability(&p, &mut pi2, 25 * NS_PER_MS, 0),
        2_147_483_647
    );
}

#[test]
fn the_timer_runs_every_tupdate_on_the_head_delay() {
    let mut q = q(Dualpi2Options::default());
    let mut d = Drops::new();
    q.enqueue(ect_pkt(1, 1000, ECN_ECT0), Instant::ZERO, &mut d);
    // Run 1 at 16 ms, the head 16 ms old: (1e6 × 44 + 16e6 × 879) >> 6 =
    // 14 108 000 000 >> 6 = 220 437 500.
    assert_eq!(xstats(&q, ms(16)).prob, 220_437_500);
    assert_eq!(xstats(&q, ms(31)).prob, 220_437_500);
    // Run 2 at 32 ms: (17e6 × 44 + 16e6 × 879) >> 6 = 14 812 000 000 >> 6
    // = 231 437 500 more.
    let x = xstats(&q, ms(32));
    assert_eq!(x.prob, 451_875_000);
    assert_eq!((x.delay_c, x.delay_l), (32_000, 0));
    // The dump ran the timer on a copy; a touch runs it for real.
    assert_eq!(q.pi2().prob, 0);
    q.enqueue(ect_pkt(2, 1000, ECN_ECT1), ms(40), &mut d);
    assert_eq!(q.pi2().prob, 451_875_000);
    assert_eq!(xstats(&q, ms(41)).delay_l, 1000);
    // Emptied, the probability decays at each run and then rests at 0.
    while q.dequeue(ms(47), &mut d).is_some() {}
    assert_eq!(xstats(&q, ms(10_000)).prob, 0);
    assert_eq!(xstats(&q, ms(10_000)).delay_c, 0);
}

/// Sends `n` frames of ECN `ecn` through `q` with the base probability
/// held at `prob`, each dequeue at a backlog of four 1500-byte frames (the
/// first frame out is over two MTUs of backlog; were it dropped, the next
/// is not); the frames marked, dropped.
fn marks_at(q: &mut Dualpi2, prob: u32, ecn: u8, n: u32) -> (u32, u32) {
    let mut d = Drops::new();
    let (mut marked, mut id) = (0, 0);
    for _ in 0..n {
        while q.qlen() < 4 {
            q.enqueue(ect_pkt(id, 1500, ecn), Instant::ZERO, &mut d);
            id += 1;
        }
        q.pi2.prob = prob;
        if let Some(p) = q.dequeue(Instant::ZERO, &mut d) {
            if p.meta.ecn() == ECN_CE && ecn != ECN_CE {
                marked += 1;
            }
        }
    }
    (marked, d.len() as u32)
}

#[test]
fn coupling_classic_is_the_square_of_l4s_over_k() {
    // p' = 0.1: p_L = k p' = 0.2, p_C = p'^2 = 0.01 (each roll passes
    // with (p' + 1) / 2^32).
    let prob = MAX_PROB / 10;
    let n = 100_000;
    let mut l = q(Dualpi2Options::default());
    let (l_marks, l_drops) = marks_at(&mut l, prob, ECN_ECT1, n);
    let mut c = q(Dualpi2Options::default());
    let (c_marks, c_drops) = marks_at(&mut c, prob, ECN_ECT0, n);
    assert_eq!((l_drops, c_drops), (0, 0));
    let p_l = f64::from(l_marks) / f64::from(n);
    let p_c = f64::from(c_marks) / f64::from(n);
    assert!((p_l - 0.2).abs() < 0.005, "p_L {p_l}");
    assert!((p_c - 0.01).abs() < 0.001, "p_C {p_c}");
    assert!(((p_l / 2.0).powi(2) - p_c).abs() < 0.001);
    // Not-ECT C frames are dropped at p_C instead.
    let mut c = q(Dualpi2Options::default());
    let (m, drops) = marks_at(&mut c, prob, ECN_NOT_ECT, n);
    assert_eq!(m, 0);
    assert!((f64::from(drops) / f64::from(n) - 0.01).abs() < 0.001);
    let x = xstats(&l, Instant::ZERO);
    assert_eq!(x.ecn_mark, l_marks);
    assert_eq!(x.step_marks, 0);
}

#[test]
fn overload_drops_l4s_at_p_c_or_marks_them_all() {
    // k p' > 1: overload. drop_on_overload drops them at p'^2 (here 1).
    let mut drop = q(Dualpi2Options::default());
    let (m, drops) = marks_at(&mut drop, MAX_PROB, ECN_ECT1, 100);
    assert_eq!((m, drops), (0, 100));
    assert_eq!(
        drop.stats().drops,
        100,
        "dropped at dequeue, counted by the qdisc"
    );
    // overflow: every one marked, none dropped.
    let mut over = q(Dualpi2Options {
        drop_overload: Some(false),
        ..Dualpi2Options::default()
    });
    let (m, drops) = marks_at(&mut over, MAX_PROB / 2 + 1, ECN_ECT1, 100);
    assert_eq!((m, drops), (100, 0));
}

#[test]
fn drop_enqueue_decides_at_the_arrival() {
    let mut q = q(Dualpi2Options {
        drop_early: Some(true),
        ..Dualpi2Options::default()
    });
    let mut d = Drops::new();
    for i in 0..3 {
        q.enqueue(ect_pkt(i, 1500, ECN_NOT_ECT), Instant::ZERO, &mut d);
    }
    q.pi2.prob = MAX_PROB;
    let v = q.enqueue(ect_pkt(9, 1500, ECN_NOT_ECT), Instant::ZERO, &mut d);
    assert_eq!(v, Verdict::Dropped);
    assert_eq!(d.since(0)[0].1, DropReason::Dualpi2Congested);
    assert_eq!(q.qlen(), 3);
}

#[test]
fn step_marks_above_the_threshold_in_time() {
    let mut q = q(Dualpi2Options::default());
    let mut d = Drops::new();
    // Small frames: no PI marking below two MTUs of backlog.
    q.enqueue(ect_pkt(1, 100, ECN_ECT1), Instant::ZERO, &mut d);
    q.enqueue(ect_pkt(2, 100, ECN_ECT1), Instant::ZERO, &mut d);
    q.enqueue(ect_pkt(3, 100, ECN_NOT_ECT), Instant::ZERO, &mut d);
    // 1 ms exactly is not above 1 ms.
    let at = Instant::from_nanos(NS_PER_MS);
    assert_eq!(q.dequeue(at, &mut d).unwrap().meta.ecn(), ECN_ECT1);
    let after = Instant::from_nanos(NS_PER_MS + 1);
    assert_eq!(q.dequeue(after, &mut d).unwrap().meta.ecn(), ECN_CE);
    // Not-ECT is in the C-queue (classic), not subject to the step.
    assert_eq!(q.dequeue(after, &mut d).unwrap().meta.id, 3);
    let x = xstats(&q, after);
    assert_eq!((x.ecn_mark, x.step_marks), (1, 1));
}

#[test]
fn step_in_packets_counts_the_l_queue_behind() {
    let mut q = q(Dualpi2Options {
        step_thresh: Some(StepThresh::Packets(2)),
        ..Dualpi2Options::default()
    });
    let mut d = Drops::new();
    for i in 0..5 {
        q.enqueue(ect_pkt(i, 100, ECN_ECT1), Instant::ZERO, &mut d);
    }
    // After each dequeue 4, 3, 2, 1, 0 are left: above 2 the first two.
    let ecn: Vec<u8> = (0..5)
        .map(|_| q.dequeue(Instant::ZERO, &mut d).unwrap().meta.ecn())
        .collect();
    assert_eq!(ecn, [ECN_CE, ECN_CE, ECN_ECT1, ECN_ECT1, ECN_ECT1]);
    assert_eq!(xstats(&q, Instant::ZERO).step_marks, 2);
}

#[test]
fn min_qlen_step_spares_frames_arriving_at_a_short_queue() {
    let mut q = q(Dualpi2Options {
        min_qlen_step: Some(2),
        ..Dualpi2Options::default()
    });
    let mut d = Drops::new();
    for i in 0..3 {
        q.enqueue(ect_pkt(i, 100, ECN_ECT1), Instant::ZERO, &mut d);
    }
    // Only the third found 2 frames queued.
    let late = ms(5);
    let ecn: Vec<u8> = (0..3)
        .map(|_| q.dequeue(late, &mut d).unwrap().meta.ecn())
        .collect();
    assert_eq!(ecn, [ECN_ECT1, ECN_ECT1, ECN_CE]);
}

#[test]
fn a_non_ect_l4s_frame_over_the_step_is_dropped() {
    let mut q = q(Dualpi2Options::default());
    let mut d = Drops::new();
    let mut p = pkt(1, 100);
    p.meta.priority = H | 1;
    q.enqueue(p, Instant::ZERO, &mut d);
    assert!(q.dequeue(ms(2), &mut d).is_none());
    assert_eq!(d.since(0)[0].1, DropReason::Dualpi2StepDrop);
    // Class 2 (LLLL) is never dropped by the AQM.
    let mut p = pkt(2, 100);
    p.meta.priority = H | 2;
    q.enqueue(p, ms(2), &mut d);
    assert_eq!(q.dequeue(ms(10), &mut d).unwrap().meta.id, 2);
}

#[test]
fn wrr_credit_gives_the_c_queue_its_share_under_load() {
    let mut q = q(Dualpi2Options::default());
    let mut d = Drops::new();
    for i in 0..100 {
        q.enqueue(ect_pkt(i, 1500, ECN_ECT0), Instant::ZERO, &mut d);
        q.enqueue(ect_pkt(1000 + i, 1500, ECN_ECT1), Instant::ZERO, &mut d);
    }
    // From -121 120: nine L frames (+10 × 1500 each) reach 13 880, one C
    // frame (-90 × 1500) brings it back to -121 120.
    let order: String = (0..20)
        .map(|_| {
            let p = q.dequeue(Instant::ZERO, &mut d).unwrap();
            if p.meta.id >= 1000 {
                'L'
            } else {
                'C'
            }
        })
        .collect();
    assert_eq!(order, "LLLLLLLLLCLLLLLLLLLC");
    assert_eq!(xstats(&q, Instant::ZERO).credit, -121_120);
    // 70% for the C-queue: from 1514 × 40 = 60 560, C first.
    q.change(
        &QdiscOptions::Dualpi2(Dualpi2Options {
            c_protection: Some(70),
            ..Dualpi2Options::default()
        }),
        Instant::ZERO,
        &mut d,
    )
    .unwrap();
    assert_eq!(xstats(&q, Instant::ZERO).credit, 60_560);
    let c = (0..100)
        .filter(|_| q.dequeue(Instant::ZERO, &mut d).unwrap().meta.id < 1000)
        .count();
    assert!((69..=71).contains(&c), "{c} of 100");
}

#[test]
fn classification_by_ecn_priority_and_mask() {
    let mut q = q(Dualpi2Options::default());
    let mut d = Drops::new();
    for (id, ecn) in [(0, ECN_NOT_ECT), (1, ECN_ECT1), (2, ECN_ECT0), (3, ECN_CE)] {
        q.enqueue(ect_pkt(id, 100, ecn), Instant::ZERO, &mut d);
    }
    let ids = |v: &VecDeque<(Packet, Cb)>| v.iter().map(|(p, _)| p.meta.id).collect::<Vec<_>>();
    assert_eq!(ids(&q.c_queue), [0, 2]);
    assert_eq!(ids(&q.l_queue), [1, 3]);
    let x = xstats(&q, Instant::ZERO);
    assert_eq!((x.packets_in_c, x.packets_in_l, x.maxq), (2, 2, 3));
    // any_ect: ECT(0) too.
    let mut any = super::tests::q(Dualpi2Options {
        ecn_mask: Some(ECN_MASK_ANY_ECT),
        ..Dualpi2Options::default()
    });
    any.enqueue(ect_pkt(5, 100, ECN_ECT0), Instant::ZERO, &mut d);
    assert_eq!(ids(&any.l_queue), [5]);
    // A non-IP frame has no ECN field: the C-queue, unless its priority
    // is this qdisc's 1 or 2; another qdisc's major or a minor of 3 is not.
    for (id, prio) in [(6, H | 1), (7, H | 2), (8, H | 3), (9, 0x0002_0001)] {
        let mut p = pkt(id, 100);
        p.meta.priority = prio;
        any.enqueue(p, Instant::ZERO, &mut d);
    }
    assert_eq!(ids(&any.l_queue), [5, 6, 7]);
    assert_eq!(ids(&any.c_queue), [8, 9]);
}

#[test]
fn limit_and_memlimit_drop_the_arrival() {
    let mut q = q(Dualpi2Options {
        limit: Some(3),
        ..Dualpi2Options::default()
    });
    // limit 3 → memory limit 3 × 2 × 1514.
    assert_eq!(q.params().memory_limit, 9084);
    let mut d = Drops::new();
    for i in 0..4 {
        q.enqueue(ect_pkt(i, 100, ECN_ECT1), Instant::ZERO, &mut d);
    }
    assert_eq!(q.qlen(), 3);
    assert_eq!(d.since(0)[0].1, DropReason::Dualpi2Overlimit);
    assert_eq!((q.stats().drops, q.stats().overlimits), (1, 1));
    // truesize(1500) = 2304: a memlimit of 4608 holds two.
    let mut m = super::tests::q(Dualpi2Options {
        memory_limit: Some(4608),
        ..Dualpi2Options::default()
    });
    for i in 0..3 {
        m.enqueue(ect_pkt(i, 1500, ECN_ECT0), Instant::ZERO, &mut d);
    }
    assert_eq!(m.qlen(), 2);
    let x = xstats(&m, Instant::ZERO);
    assert_eq!(
        (x.memory_used, x.max_memory_used, x.memory_limit),
        (4608, 4608, 4608)
    );
    m.dequeue(Instant::ZERO, &mut d);
    assert_eq!(xstats(&m, Instant::ZERO).memory_used, 2304);
}

#[test]
fn change_lowering_the_limit_drops_the_c_queue_first() {
    let mut q = q(Dualpi2Options::default());
    let mut d = Drops::new();
    for i in 0..3 {
        q.enqueue(ect_pkt(i, 100, ECN_ECT0), Instant::ZERO, &mut d);
        q.enqueue(ect_pkt(10 + i, 100, ECN_ECT1), Instant::ZERO, &mut d);
    }
    q.change(
        &QdiscOptions::Dualpi2(Dualpi2Options {
            limit: Some(2),
            ..Dualpi2Options::default()
        }),
        Instant::ZERO,
        &mut d,
    )
    .unwrap();
    let dropped: Vec<u64> = d.since(0).iter().map(|(p, _)| p.meta.id).collect();
    assert_eq!(dropped, [0, 1, 2, 10]);
    assert_eq!(q.qlen(), 2);
}

#[test]
fn every_refused_parameter() {
    let cases = [
        Dualpi2Options {
            limit: Some(0),
            ..Default::default()
        },
        Dualpi2Options {
            memory_limit: Some(0),
            ..Default::default()
        },
        Dualpi2Options {
            tupdate: Some(0),
            ..Default::default()
        },
        Dualpi2Options {
            alpha: Some(0),
            ..Default::default()
        },
        Dualpi2Options {
            beta: Some(ALPHA_BETA_MAX + 1),
            ..Default::default()
        },
        Dualpi2Options {
            coupling: Some(0),
            ..Default::default()
        },
        Dualpi2Options {
            c_protection: Some(101),
            ..Default::default()
        },
        Dualpi2Options {
            ecn_mask: Some(0),
            ..Default::default()
        },
        Dualpi2Options {
            ecn_mask: Some(4),
            ..Default::default()
        },
    ];
    for o in cases {
        let r = refusal(o.clone());
        assert_eq!(r.errno, Errno::ERANGE, "{o:?}");
        assert_eq!(r.message.as_deref(), Some("integer out of range."));
    }
    // The limits: the largest alpha, beta and classic_protection pass.
    assert!(Dualpi2::build(
        ctx(),
        &QdiscOptions::Dualpi2(Dualpi2Options {
            alpha: Some(ALPHA_BETA_MAX),
            beta: Some(1),
            c_protection: Some(100),
            ecn_mask: Some(ECN_MASK_ANY_ECT),
            ..Default::default()
        })
    )
    .is_ok());
    // A change without attributes.
    let mut q = q(Dualpi2Options::default());
    let r = q
        .change(
            &QdiscOptions::Dualpi2(Dualpi2Options::default()),
            Instant::ZERO,
            &mut Drops::new(),
        )
        .unwrap_err();
    assert_eq!(r.errno, Errno::EINVAL);
    assert_eq!(
        r.message.as_deref(),
        Some("sch_dualpi2: Dualpi2 options are required.")
    );
    // A refused change changes nothing.
    let before = *q.params();
    let bad = Dualpi2Options {
        limit: Some(5),
        coupling: Some(0),
        ..Default::default()
    };
    assert!(q
        .change(
            &QdiscOptions::Dualpi2(bad),
            Instant::ZERO,
            &mut Drops::new()
        )
        .is_err());
    assert_eq!(*q.params(), before);
}

#[test]
fn reset_clears_queues_probability_and_counters() {
    let mut q = q(Dualpi2Options::default());
    let mut d = Drops::new();
    q.enqueue(ect_pkt(1, 1000, ECN_ECT0), Instant::ZERO, &mut d);
    q.enqueue(ect_pkt(2, 1000, ECN_ECT1), ms(20), &mut d);
    assert!(q.pi2().prob > 0);
    q.reset(&mut d);
    assert_eq!(d.len(), 2);
    let x = xstats(&q, ms(20));
    assert_eq!(
        (
            x.prob,
            x.packets_in_c,
            x.packets_in_l,
            x.delay_c,
            x.memory_used
        ),
        (0, 0, 0, 0, 0)
    );
    assert_eq!(x.credit, -121_120);
}

#[test]
fn filters_pick_the_class_after_ecn_and_priority() {
    use crate::packet::filter::{Family, Field, Filter, FilterKind, FilterProtocol, Match};
    let mut q = q(Dualpi2Options::default());
    // u32 match ip dport 5001 flowid 1:2 (LLLL), then matchall flowid 1:7
    // (beyond 2: the C-queue).
    let dport = Match::new(Family::V4, Field::Dport, 5001, 0xffff);
    q.add_filter(Filter {
        parent: Some(H),
        prio: 1,
        ..Filter::new(
            FilterProtocol::All,
            FilterKind::U32,
            vec![dport],
            tc_h_make(1, 2),
        )
    })
    .unwrap();
    q.add_filter(Filter {
        parent: Some(H),
        prio: 2,
        ..Filter::new(
            FilterProtocol::All,
            FilterKind::Matchall,
            vec![],
            tc_h_make(1, 7),
        )
    })
    .unwrap();
    let mut d = Drops::new();
    let ip = |id, dport, ecn| {
        let mut p = ect_pkt(id, 100, ecn);
        p.meta.flow.dst_port = dport;
        p
    };
    q.enqueue(ip(1, 5001, ECN_NOT_ECT), Instant::ZERO, &mut d);
    q.enqueue(ip(2, 80, ECN_NOT_ECT), Instant::ZERO, &mut d);
    // ECT(1) is L4S before any filter is asked.
    q.enqueue(ip(3, 80, ECN_ECT1), Instant::ZERO, &mut d);
    let classes: Vec<(u64, Class)> = q
        .l_queue
        .iter()
        .chain(&q.c_queue)
        .map(|(p, cb)| (p.meta.id, cb.class))
        .collect();
    assert_eq!(
        classes,
        [(1, Class::Llll), (3, Class::L4s), (2, Class::Classic)]
    );
    // Only the qdisc has a block (`dualpi2_tcf_block`).
    assert!(q
        .add_filter(Filter {
            parent: Some(tc_h_make(1, 1)),
            ..Filter::new(FilterProtocol::All, FilterKind::Matchall, vec![], H)
        })
        .is_err());
}
