//! choke's unit tests: hand-computed timelines with Wlog 0 (the average is
//! then the queue length an arrival finds, so every decision is known),
//! the flow match dropping both frames, the thresholds' `<=`/`>` (not
//! RED's `<`/`>=`), ECN marks and harddrop, the ring's holes, the change
//! of the ring's size, the refusals, the draw's `get_random_u32_below`.

use super::*;
use crate::qdisc::testutil::{ect_pkt, flow_pkt};

const T: Instant = Instant::ZERO;

fn opts(limit: u32, min: u32, max: u32, flags: u32) -> ChokeOptions {
    ChokeOptions {
        limit,
        qth_min: min,
        qth_max: max,
        wlog: 0,
        plog: 0,
        scell_log: 0,
        flags: flags as u8,
        stab: Some(vec![0; RED_STAB_SIZE]),
        // max_P = 1/2: with Wlog 0 the band's test is deterministic
        // enough not to matter in these timelines (see each).
        max_p: Some(1 << 31),
    }
}

fn choke(o: ChokeOptions) -> Choke {
    Choke::build(QdiscCtx::default(), &QdiscOptions::Choke(o)).unwrap()
}

fn ids(q: &mut Choke) -> Vec<u64> {
    let mut d = Drops::new();
    std::iter::from_fn(|| q.dequeue(T, &mut d))
        .map(|p| p.meta.id)
        .collect()
}

#[test]
fn the_ring_is_the_smallest_power_of_two_above_the_limit() {
    assert_eq!(
        [0, 1, 2, 3, 4, 1000, 1023, 1024].map(ring_mask),
        [0, 1, 3, 3, 7, 1023, 1023, 2047]
    );
    let q = choke(opts(1000, 100, 300, 0));
    assert_eq!(q.tab.len(), 1024);
}

/// Limit 16, min 1, max 2, Wlog 0, distinct flows (no draw can match):
/// f0 finds qavg 0 and f1 qavg 1 (≤ min: queued, no draw); f2 finds 2
/// (> min; = max, so in the band, where RED's `>=` would force: qcount
/// -1 → 0, a qR drawn, queued); f3 finds 3 > max: forced drop.
#[test]
fn above_max_forces_and_max_itself_is_in_the_band() {
    let mut q = choke(opts(16, 1, 2, 0));
    let mut d = Drops::new();
    for id in 0..3 {
        assert_eq!(
            q.enqueue(flow_pkt(id, 100, id as u16), T, &mut d),
            Verdict::Queued
        );
    }
    assert_eq!(q.vars().qcount, 0);
    assert_eq!(q.enqueue(flow_pkt(3, 100, 3), T, &mut d), Verdict::Dropped);
    assert_eq!(d.since(0)[0].1, DropReason::RedForced);
    assert_eq!(q.vars().qcount, -1);
    let dump = q.dump(T);
    assert_eq!((dump.stats.drops, dump.stats.overlimits), (1, 1));
    assert_eq!(
        dump.xstats,
        Some(Xstats::Choke(ChokeXstats {
            early: 1,
            ..ChokeXstats::default()
        }))
    );
    assert_eq!(ids(&mut q), [0, 1, 2]);
}

/// One flow: the third arrival finds qavg 2 > min 1; whichever queued
/// frame the draw takes is of its flow, so it and the arrival go
/// (`matched` 1, two drops, no overlimit), and the queue is one frame.
#[test]
fn a_match_drops_the_arrival_and_the_drawn_frame() {
    let mut q = choke(opts(16, 1, 8, 0));
    let mut d = Drops::new();
    q.enqueue(flow_pkt(0, 100, 7), T, &mut d);
    q.enqueue(flow_pkt(1, 100, 7), T, &mut d);
    assert_eq!(q.enqueue(flow_pkt(2, 100, 7), T, &mut d), Verdict::Dropped);
    let dropped: Vec<(u64, DropReason)> = d.drain().map(|(p, r)| (p.meta.id, r)).collect();
    assert_eq!(dropped.len(), 2);
    assert!(dropped.iter().all(|(_, r)| *r == DropReason::ChokeMatched));
    assert_eq!(dropped[1].0, 2, "the victim first, then the arrival");
    let s = q.dump(T);
    assert_eq!((s.stats.drops, s.stats.overlimits, s.stats.qlen), (2, 0, 1));
    assert_eq!((s.stats.backlog, q.qlen), (100, 1));
    let Some(Xstats::Choke(x)) = s.xstats else {
        panic!("no xstats")
    };
    assert_eq!((x.matched, x.early), (1, 0));
}

/// The draw is `get_random_u32_below(choke_len)` from the qdisc's seeded
/// source: replaying that source says which frame each arrival drew.
/// Flows A and B alternate with min 0 (every arrival after the first
/// draws); each match removes the drawn A and the arriving A.
#[test]
fn the_drawn_frame_is_the_replayed_draws() {
    let ctx = QdiscCtx {
        seed: 42,
        ..QdiscCtx::default()
    };
    let mut o = opts(64, 0, 60, 0);
    o.max_p = None;
    o.plog = 31;
    let mut q = Choke::build(ctx, &QdiscOptions::Choke(o)).unwrap();
    let mut replay = SmallRng::seed_from_u64(42 ^ SEED_SALT);
    // The model: the ring as slots (Some(id, flow)) from head to tail.
    let mut ring: Vec<Option<(u64, u16)>> = Vec::new();
    let mut d = Drops::new();
    for id in 0..40u64 {
        let flow = (id % 2) as u16;
        let qlen = ring.iter().flatten().count();
        let mut matched = false;
        if qlen > 0 {
            let mut pick = None;
            for _ in 0..3 {
                let i = random_below(&mut replay, ring.len() as u32) as usize;
                if ring[i].is_some() {
                    pick = Some(i);
                    break;
                }
            }
            let i = pick.unwrap_or(0);
            if ring[i].is_some_and(|(_, f)| f == flow) {
                matched = true;
                ring[i] = None;
                // choke_zap_head_holes.
                while ring.first() == Some(&None) {
                    ring.remove(0);
                }
            } else {
                // In the band (qavg ≤ 60): the first arrival there (qcount
                // -1 → 0) draws qR; with Plog 31 qR is a whole u32, which
                // excess × qcount (at most 60 × 40) never reaches, so no
                // later arrival marks or draws.
                if q.vars().qcount == -1 {
                    replay.gen::<u32>();
                }
            }
        }
        if !matched {
            ring.push(Some((id, flow)));
        }
        let v = q.enqueue(flow_pkt(id, 100, flow), T, &mut d);
        assert_eq!(v == Verdict::Dropped, matched, "arrival {id}");
    }
    let want: Vec<u64> = ring.iter().flatten().map(|(id, _)| *id).collect();
    let Some(Xstats::Choke(x)) = q.dump(T).xstats else {
        panic!("no xstats")
    };
    assert!(x.matched > 3, "{x:?}");
    assert_eq!(ids(&mut q), want);
}

#[test]
fn ecn_marks_above_max_unless_harddrop() {
    for (flags, verdict, marked, early) in [
        (TC_RED_ECN, Verdict::Queued, 1, 0),
        (TC_RED_ECN | TC_RED_HARDDROP, Verdict::Dropped, 0, 1),
        (0, Verdict::Dropped, 0, 1),
    ] {
        let mut q = choke(opts(16, 1, 2, flags));
        let mut d = Drops::new();
        for id in 0..3 {
            q.enqueue(flow_pkt(id, 100, id as u16), T, &mut d);
        }
        let mut p = ect_pkt(3, 100, 2);
        p.meta.flow.src_port = 999;
        assert_eq!(q.enqueue(p, T, &mut d), verdict, "flags {flags}");
        let Some(Xstats::Choke(x)) = q.dump(T).xstats else {
            panic!("no xstats")
        };
        assert_eq!((x.marked, x.early), (marked, early), "flags {flags}");
        assert_eq!(q.stats.overlimits, 1);
    }
    // A Not-ECT frame is dropped even with ecn.
    let mut q = choke(opts(16, 1, 2, TC_RED_ECN));
    let mut d = Drops::new();
    for id in 0..3 {
        q.enqueue(flow_pkt(id, 100, id as u16), T, &mut d);
    }
    assert_eq!(q.enqueue(ect_pkt(3, 100, 0), T, &mut d), Verdict::Dropped);
}

/// At `limit` frames (with the average at or below min) the arrival is
/// dropped and counted `pdrop`.
#[test]
fn the_limit_drops_the_arrival() {
    let mut q = choke(opts(3, 5, 8, 0));
    let mut d = Drops::new();
    for id in 0..3 {
        assert_eq!(q.enqueue(flow_pkt(id, 100, 0), T, &mut d), Verdict::Queued);
    }
    assert_eq!(q.enqueue(flow_pkt(3, 100, 0), T, &mut d), Verdict::Dropped);
    assert_eq!(d.since(0)[0].1, DropReason::QueueFull);
    let Some(Xstats::Choke(x)) = q.dump(T).xstats else {
        panic!("no xstats")
    };
    assert_eq!(x.pdrop, 1);
}

/// A drop in the middle leaves a hole the head skips; a drop at the head
/// moves the head past every hole behind it.
#[test]
fn holes_are_skipped_by_the_head() {
    let mut q = choke(opts(8, 7, 8, 0));
    let mut d = Drops::new();
    for id in 0..5 {
        q.enqueue(flow_pkt(id, 100, 0), T, &mut d);
    }
    q.drop_by_idx(1, &mut d);
    q.drop_by_idx(2, &mut d);
    assert_eq!((q.head, q.tail, q.len(), q.qlen), (0, 5, 5, 3));
    q.drop_by_idx(0, &mut d);
    assert_eq!((q.head, q.len(), q.qlen, q.backlog), (3, 2, 2, 200));
    assert_eq!(q.stats.drops, 3);
    assert_eq!(ids(&mut q), [3, 4]);
    // A hole at the tail's end stays (the kernel's tail never points at
    // a frame) and the head reaches the tail through it.
    for id in 5..8 {
        q.enqueue(flow_pkt(id, 100, 0), T, &mut d);
    }
    q.drop_by_idx(q.tail - 1, &mut d);
    assert_eq!(ids(&mut q), [5, 6]);
    assert_eq!(q.head, q.tail);
}

/// Limit 3 makes a ring of 4 slots: three frames and a hole in between
/// leave one free slot, which the kernel would fill, making the tail meet
/// the head (an "empty" ring holding three frames). The holes are closed
/// first instead, the order kept.
#[test]
fn a_ring_full_of_holes_is_compacted_not_wrapped() {
    let mut q = choke(opts(3, 7, 8, 0));
    let mut d = Drops::new();
    for id in 0..3 {
        q.enqueue(flow_pkt(id, 100, 0), T, &mut d);
    }
    q.drop_by_idx(1, &mut d);
    assert_eq!(q.enqueue(flow_pkt(3, 100, 0), T, &mut d), Verdict::Queued);
    assert_eq!((q.head, q.tail, q.qlen), (0, 3, 3));
    assert_eq!(ids(&mut q), [0, 2, 3]);
}

/// A new limit with another ring size moves the frames to the new ring's
/// front and drops those beyond its `mask` slots (not its limit); the
/// same ring size keeps the ring as it is.
#[test]
fn a_change_of_ring_moves_and_drops_beyond_the_mask() {
    let mut q = choke(opts(8, 7, 8, 0));
    let mut d = Drops::new();
    for id in 0..8 {
        q.enqueue(flow_pkt(id, 100, 0), T, &mut d);
    }
    q.drop_by_idx(2, &mut d);
    let before = d.len();
    q.change(&QdiscOptions::Choke(opts(2, 1, 2, 0)), T, &mut d)
        .unwrap();
    // Mask 3: three frames stay (0, 1, 3), four go.
    assert_eq!(d.len() - before, 4);
    assert!(d
        .since(before)
        .iter()
        .all(|(_, r)| *r == DropReason::QdiscReset));
    assert_eq!((q.qlen, q.backlog, q.tab.len()), (3, 300, 4));
    assert_eq!((q.vars().qavg, q.vars().qcount), (0, -1));
    // Three frames over a limit of 2: the average, 3, is above max and
    // the arrival, of another flow, is forced out.
    assert_eq!(q.enqueue(flow_pkt(9, 100, 9), T, &mut d), Verdict::Dropped);
    assert_eq!(ids(&mut q), [0, 1, 3]);
    let o = q.dump(T).options;
    assert_eq!(
        o,
        QdiscOptions::Choke(ChokeOptions {
            stab: None,
            ..opts(2, 1, 2, 0)
        })
    );
}

/// The average counts packets: Wlog 1 halves the distance each arrival,
/// qavg' = qavg + qlen - qavg / 2 in units of 2^-1 packet.
#[test]
fn the_average_counts_packets() {
    let mut o = opts(100, 50, 90, 0);
    o.wlog = 1;
    let mut q = choke(o);
    let mut d = Drops::new();
    let mut want = 0u64;
    for id in 0..6u64 {
        q.enqueue(flow_pkt(id, 1500, 0), T, &mut d);
        want = want + id - want / 2;
        assert_eq!(q.vars().qavg, want, "arrival {id}");
    }
    // 0, 1, 1+2-0=3, 3+3-1=5, 5+4-2=7, 7+5-3=9.
    assert_eq!(want, 9);
}

/// An empty dequeue starts an idle period; the next arrival decays the
/// average by the idle table and ends the period.
#[test]
fn an_idle_period_decays_the_average() {
    let mut o = opts(100, 50, 90, 0);
    o.wlog = 1;
    o.scell_log = 10;
    let mut stab = vec![0u8; RED_STAB_SIZE];
    stab[1] = 3;
    o.stab = Some(stab);
    let mut q = choke(o);
    let mut d = Drops::new();
    for id in 0..6 {
        q.enqueue(flow_pkt(id, 100, 0), T, &mut d);
    }
    assert_eq!(q.vars().qavg, 9);
    for _ in 0..6 {
        assert!(q.dequeue(T, &mut d).is_some());
    }
    assert!(!q.vars().is_idling());
    assert!(q.dequeue(T, &mut d).is_none());
    assert!(q.vars().is_idling());
    // 1500 µs idle: cell 1, shift 3: 9 >> 3 = 1.
    q.enqueue(flow_pkt(9, 100, 0), T + 1_500_000, &mut d);
    assert_eq!(q.vars().qavg, 1);
    assert!(!q.vars().is_idling());
}

#[test]
fn refusals() {
    let build = |o: &QdiscOptions| Choke::build(QdiscCtx::default(), o).err().unwrap();
    assert_eq!(build(&QdiscOptions::None).errno, Errno::EINVAL);
    let mut o = opts(10, 1, 2, 0);
    o.stab = None;
    assert_eq!(build(&QdiscOptions::Choke(o)).errno, Errno::EINVAL);
    let e = build(&QdiscOptions::Choke(opts(10, 3, 2, 0)));
    assert!(e.says("red_check_params"), "{e}");
    let e = build(&QdiscOptions::Choke(opts(CHOKE_MAX_QUEUE + 1, 1, 2, 0)));
    assert!(e.says("CHOKE_MAX_QUEUE"), "{e}");
    assert!(Choke::build(
        QdiscCtx::default(),
        &QdiscOptions::Choke(opts(CHOKE_MAX_QUEUE, 1, 2, 0))
    )
    .is_ok());
    // A refused change leaves choke as it was.
    let mut q = choke(opts(10, 1, 2, 0));
    let mut d = Drops::new();
    let e = q.change(&QdiscOptions::Choke(opts(10, 5, 2, 0)), T, &mut d);
    assert!(e.is_err());
    assert_eq!(
        q.dump(T).options,
        QdiscOptions::Choke(ChokeOptions {
            stab: None,
            ..opts(10, 1, 2, 0)
        })
    );
    // No TCA_OPTIONS: nothing to change.
    assert!(q.change(&QdiscOptions::None, T, &mut d).is_ok());
}

#[test]
fn reset_drops_and_counts_every_frame() {
    let mut q = choke(opts(10, 7, 8, 0));
    let mut d = Drops::new();
    for id in 0..4 {
        q.enqueue(flow_pkt(id, 100, 0), T, &mut d);
    }
    q.reset(&mut d);
    assert_eq!(d.len(), 4);
    assert_eq!((q.qlen(), q.backlog(), q.stats.drops), (0, 0, 4));
    assert_eq!((q.vars().qavg, q.vars().qcount), (0, -1));
}

/// IPv6 frames match on their source's first 8 bytes, ports and
/// protocol (the kernel's `v4addrs` read out of the address union);
/// IPv4 on both whole addresses; frames of different protocols never.
#[test]
fn flows_compare_as_the_kernels_digest() {
    let v6 = |src_last: u8, dst_last: u8| {
        let mut p = flow_pkt(0, 100, 0);
        p.meta.l3 = L3::Ipv6 { offset: 14 };
        p.meta.flow.src = [
            0x20, 1, 0xd, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, src_last,
        ];
        p.meta.flow.dst[15] = dst_last;
        p
    };
    assert!(same_flow(&v6(1, 2), &v6(9, 9)));
    let mut other_prefix = v6(1, 2);
    other_prefix.meta.flow.src[7] = 2;
    assert!(!same_flow(&v6(1, 2), &other_prefix));
    let v4 = |dst_last: u8| {
        let mut p = flow_pkt(0, 100, 0);
        p.meta.l3 = L3::Ipv4 { offset: 14 };
        p.meta.flow.dst[15] = dst_last;
        p
    };
    assert!(same_flow(&v4(2), &v4(2)));
    assert!(!same_flow(&v4(2), &v4(3)));
    assert!(!same_flow(&v4(2), &v6(1, 2)));
}

/// `get_random_u32_below` of a power of two is the draw's top bits (the
/// rejection bound 2^32 mod 2^k is 0); of 1 always 0.
#[test]
fn the_draw_is_lemires() {
    let mut a = SmallRng::seed_from_u64(7);
    let mut b = SmallRng::seed_from_u64(7);
    for _ in 0..100 {
        assert_eq!(random_below(&mut a, 8), b.gen::<u32>() >> 29);
        assert_eq!(random_below(&mut a, 1), 0);
        b.gen::<u32>();
        assert!(random_below(&mut a, 1000) < 1000);
        b.gen::<u32>();
    }
}

/// In the band RED's test decides, with qR and the draw from the same
/// seeded source: replayed here arrival by arrival (every flow distinct,
/// so no draw matches; Wlog 0, so qavg is the queue length found), each
/// verdict and counter is the model's. min 1, max 40, max_P = 1: qR =
/// draw / (2^32 / 39), and an arrival is marked (ecn, ECT(0)) when
/// (qavg - 1) × qcount ≥ qR.
#[test]
fn the_band_marks_as_reds_test_with_the_replayed_draws() {
    let ctx = QdiscCtx {
        seed: 5,
        ..QdiscCtx::default()
    };
    let mut o = opts(64, 1, 40, TC_RED_ECN);
    o.max_p = Some(u32::MAX);
    let mut q = Choke::build(ctx, &QdiscOptions::Choke(o)).unwrap();
    let mut replay = SmallRng::seed_from_u64(5 ^ SEED_SALT);
    let delta = u32::MAX / 39;
    let (mut qcount, mut qr, mut qlen, mut marks) = (-1i64, 0u32, 0u32, 0u32);
    let mut d = Drops::new();
    for id in 0..40u64 {
        let mut p = ect_pkt(id, 100, 2);
        p.meta.flow.src_port = id as u16;
        let qavg = u64::from(qlen);
        let mut marked = false;
        if qavg <= 1 {
            qcount = -1;
        } else {
            random_below(&mut replay, qlen);
            qcount += 1;
            if qcount != 0 {
                if (qavg - 1) * qcount as u64 >= u64::from(qr) {
                    qcount = 0;
                    qr = replay.gen::<u32>() / delta;
                    marked = true;
                }
            } else {
                qr = replay.gen::<u32>() / delta;
            }
        }
        assert_eq!(q.enqueue(p, T, &mut d), Verdict::Queued, "arrival {id}");
        qlen += 1;
        marks += u32::from(marked);
        let Some(Xstats::Choke(x)) = q.dump(T).xstats else {
            panic!("no xstats")
        };
        assert_eq!(
            (x.marked, x.early, x.matched),
            (marks, 0, 0),
            "arrival {id}"
        );
        assert_eq!(i64::from(q.vars().qcount), qcount, "arrival {id}");
    }
    assert!(marks > 3, "{marks}");
    assert_eq!(q.stats.overlimits, u64::from(marks));
}
