//! SFB's unit tests at explicit times, against timelines computed by hand
//! from sch_sfb.c: BLUE's increments and decrements of a flow's eight
//! bins, the mark rate at a fixed probability, the early drops above one
//! half, the bucket and queue limits, the penalty box's tokens (and the
//! refill its drops keep postponing), the double buffering window and the
//! swap, the bins of the set a frame was counted in after a swap, the
//! defaults, the dump, xstats, change, reset and graft.

use super::*;
use crate::packet::ecn::ECN_CE;
use crate::qdisc::testutil::{ect_pkt, flow_pkt, pkt};

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

/// Options with no rehash, the penalty box off (it drops every
/// inelastic frame) unless set, and the given BLUE parameters.
fn opts(max: u32, bin_size: u32, increment: u32, decrement: u32) -> SfbOptions {
    SfbOptions {
        rehash_interval: 0,
        warmup_time: 0,
        max,
        bin_size,
        increment,
        decrement,
        limit: 1000,
        penalty_rate: 0,
        penalty_burst: 0,
    }
}

fn sfb(o: SfbOptions) -> Sfb {
    Sfb::build(QdiscCtx::default(), &QdiscOptions::Sfb(o)).unwrap()
}

/// An ECN-capable frame of flow `flow` (marked CE rather than dropped).
fn ect(id: u64, flow: u16) -> Packet {
    let mut p = ect_pkt(id, 1000, 2);
    p.meta.flow = flow_pkt(id, 1000, flow).meta.flow;
    p
}

/// The eight bins of `pkt`'s flow in set `slot`, by the hash it gets now.
fn flow_bins(q: &Sfb, pkt: &Packet, slot: usize) -> Vec<Bucket> {
    let h = q.flow_hash(pkt, slot);
    levels(h).map(|(i, n)| q.bins[slot].bins[i][n]).collect()
}

fn all(b: &[Bucket], qlen: u16, p_mark: u16) -> bool {
    b.iter().all(|b| *b == Bucket { qlen, p_mark })
}

/// One flow, no dequeue: arrival k finds its bins at k frames, and from
/// k = bin_size 2 on each arrival adds `increment` 1000. After 10
/// arrivals (all ECN-capable, so all queued) the bins hold 10 frames at
/// 8000; xstats: maxqlen 10, maxprob 8000, avgprob 8 × 8000 / 128 = 500.
/// Dequeuing all takes the bins back to 0 frames; the next arrival finds
/// them empty and takes `decrement` 500 off: 7500.
#[test]
fn blue_raises_a_busy_flows_bins_and_lowers_idle_ones() {
    let mut q = sfb(opts(100, 2, 1000, 500));
    let mut d = Drops::new();
    for id in 0..10 {
        assert_eq!(q.enqueue(ect(id, 1), ms(0), &mut d), Verdict::Queued);
    }
    assert!(all(&flow_bins(&q, &ect(0, 1), 0), 10, 8000));
    let x = q.xstats();
    assert_eq!((x.maxqlen, x.maxprob, x.avgprob), (10, 8000, 500));
    assert_eq!(x.earlydrop, 0);
    assert!(x.marked > 0 && x.marked < 10, "{x:?}");
    assert!(flow_bins(&q, &ect(0, 2), 0)
        .iter()
        .any(|b| *b == Bucket::default()));
    for _ in 0..10 {
        assert!(q.dequeue(ms(1), &mut d).is_some());
    }
    assert!(all(&flow_bins(&q, &ect(0, 1), 0), 0, 8000));
    q.enqueue(ect(10, 1), ms(2), &mut d);
    assert!(all(&flow_bins(&q, &ect(0, 1), 0), 1, 7500));
    // The inactive set saw nothing (no double buffering).
    assert!(q.bins[1]
        .bins
        .iter()
        .flatten()
        .all(|b| *b == Bucket::default()));
}

/// p_mark held at 32000 (decrement 0, the queue empty at each arrival):
/// a frame is marked when the 16-bit draw is below it, 32000/65536 of
/// the time: 976.6 of 2000 (σ 22).
#[test]
fn frames_are_marked_at_the_bins_smallest_probability() {
    let mut q = sfb(opts(100, 1, 32000, 0));
    let mut d = Drops::new();
    q.enqueue(ect(0, 1), ms(0), &mut d);
    q.enqueue(ect(1, 1), ms(0), &mut d);
    while q.dequeue(ms(0), &mut d).is_some() {}
    let before = q.xstats().marked;
    let mut ce = 0;
    for id in 2..2002 {
        q.enqueue(ect(id, 1), ms(1), &mut d);
        let p = q.dequeue(ms(1), &mut d).unwrap();
        ce += u32::from(p.meta.dsfield & 3 == ECN_CE);
    }
    let x = q.xstats();
    assert_eq!(x.marked - before, ce);
    assert!((910..1045).contains(&ce), "{ce}");
    assert_eq!((x.earlydrop, x.maxprob), (0, 32000));
    assert!(d.is_empty());
}

/// Above one half, a draw below 2 (p_min - 1/2) drops even an
/// ECN-capable frame: at p_min 65534 that is every draw below 65534, all
/// but 2 in 65536. A frame that cannot be marked is dropped at any
/// p_min its draw falls under.
#[test]
fn above_one_half_frames_are_dropped_not_marked() {
    let mut q = sfb(opts(100, 1, 65534, 0));
    let mut d = Drops::new();
    q.enqueue(ect(0, 1), ms(0), &mut d);
    q.enqueue(ect(1, 1), ms(0), &mut d);
    while q.dequeue(ms(0), &mut d).is_some() {}
    let base = q.xstats();
    for id in 2..22 {
        assert_eq!(q.enqueue(ect(id, 1), ms(1), &mut d), Verdict::Dropped);
    }
    let x = q.xstats();
    assert_eq!((x.earlydrop - base.earlydrop, x.marked), (20, base.marked));
    assert!(d
        .since(0)
        .iter()
        .all(|(_, r)| *r == DropReason::SfbCongested));
    // Early drops are no overlimits.
    assert_eq!(q.stats().overlimits, 0);
    assert_eq!(q.stats().drops, 20 + u64::from(base.earlydrop));

    // Not-ECT at 32000: dropped when the draw is below it, else queued.
    let mut q = sfb(opts(100, 1, 32000, 0));
    let mut d = Drops::new();
    q.enqueue(pkt(0, 1000), ms(0), &mut d);
    q.enqueue(pkt(1, 1000), ms(0), &mut d);
    while q.dequeue(ms(0), &mut d).is_some() {}
    let base = q.xstats().earlydrop;
    d.drain().for_each(drop);
    for id in 2..2002 {
        q.enqueue(pkt(id, 1000), ms(1), &mut d);
        q.dequeue(ms(1), &mut d);
    }
    let dropped = q.xstats().earlydrop - base;
    assert_eq!(dropped as usize, d.len());
    assert!((910..1045).contains(&dropped), "{dropped}");
    assert_eq!(q.xstats().marked, 0);
}

/// max 3: the fourth frame of a flow finds every bin at 3 and is a
/// bucketdrop (an overlimit); after one dequeue it fits again. Another
/// flow (its bins mostly elsewhere) is not held back. limit 5: the sixth
/// frame in the qdisc is a queuedrop.
#[test]
fn bucket_and_queue_limits() {
    let mut o = opts(3, 100, 0, 0);
    o.limit = 5;
    let mut q = sfb(o);
    let mut d = Drops::new();
    for id in 0..3 {
        assert_eq!(q.enqueue(ect(id, 1), ms(0), &mut d), Verdict::Queued);
    }
    assert_eq!(q.enqueue(ect(3, 1), ms(0), &mut d), Verdict::Dropped);
    assert_eq!(q.xstats().bucketdrop, 1);
    assert_eq!(q.stats().overlimits, 1);
    q.dequeue(ms(1), &mut d).unwrap();
    assert_eq!(q.enqueue(ect(4, 1), ms(1), &mut d), Verdict::Queued);
    assert_eq!(q.enqueue(ect(5, 2), ms(1), &mut d), Verdict::Queued);
    assert_eq!(q.enqueue(ect(6, 2), ms(1), &mut d), Verdict::Queued);
    assert_eq!(q.qlen(), 5);
    assert_eq!(q.enqueue(ect(7, 3), ms(1), &mut d), Verdict::Dropped);
    let x = q.xstats();
    assert_eq!((x.queuedrop, x.bucketdrop), (1, 1));
    assert_eq!(q.stats().overlimits, 2);
    assert!(d
        .since(0)
        .iter()
        .all(|(_, r)| *r == DropReason::SfbOverlimit));
}

/// increment 65535 and bin_size 1: a flow's second frame finds its bins
/// at 1 frame and takes them to SFB_MAX_PROB: inelastic. penalty_rate 10,
/// burst 3: the box starts full (3 tokens) and passes frames 2 to 4 at
/// t = 0; the fifth finds it empty, and `age` 0 gives no token: dropped,
/// and the refill clock restarts. At 52 ms (jiffy 13) age 13 gives
/// 13 × 10 / 250 = 0 tokens: dropped, clock restarted; at 100 ms (jiffy
/// 25) age 12: still 0, dropped (each drop postpones the refill); at
/// 200 ms (jiffy 50) age 25 gives one token: passed.
#[test]
fn the_penalty_box_passes_its_rate_and_drops_the_rest() {
    let mut o = opts(1000, 1, SFB_MAX_PROB, 0);
    o.penalty_rate = 10;
    o.penalty_burst = 3;
    let mut q = sfb(o);
    let mut d = Drops::new();
    let verdicts: Vec<Verdict> = (0..5)
        .map(|id| q.enqueue(pkt(id, 100), ms(0), &mut d))
        .collect();
    assert_eq!(verdicts[..4], [Verdict::Queued; 4]);
    assert_eq!(verdicts[4], Verdict::Dropped);
    assert!(all(&flow_bins(&q, &pkt(0, 100), 0), 4, SFB_MAX_PROB as u16));
    assert_eq!(q.enqueue(pkt(5, 100), ms(52), &mut d), Verdict::Dropped);
    assert_eq!(q.enqueue(pkt(6, 100), ms(100), &mut d), Verdict::Dropped);
    assert_eq!(q.enqueue(pkt(7, 100), ms(200), &mut d), Verdict::Queued);
    assert_eq!(q.enqueue(pkt(8, 100), ms(200), &mut d), Verdict::Dropped);
    let x = q.xstats();
    assert_eq!((x.penaltydrop, x.earlydrop, x.marked), (4, 0, 0));
    assert_eq!(q.stats().overlimits, 4);
    assert!(d
        .since(0)
        .iter()
        .all(|(_, r)| *r == DropReason::SfbOverlimit));
    // A 2-second pause refills the whole burst, no more.
    for id in 9..12 {
        assert_eq!(q.enqueue(pkt(id, 100), ms(2200), &mut d), Verdict::Queued);
    }
    assert_eq!(q.enqueue(pkt(12, 100), ms(2200), &mut d), Verdict::Dropped);
    // Rate or burst 0: the box passes nothing.
    let mut q = sfb(opts(1000, 1, SFB_MAX_PROB, 0));
    q.enqueue(pkt(0, 100), ms(0), &mut d);
    assert_eq!(q.enqueue(pkt(1, 100), ms(0), &mut d), Verdict::Dropped);
    assert_eq!(q.xstats().penaltydrop, 1);
}

/// rehash 1000 ms (250 jiffies), db 400 ms (100): double buffering
/// starts at the first arrival after jiffy 150 (604 ms, not 600), the
/// swap at the first after jiffy 250 (1004 ms): set 1 active, the old
/// set re-keyed, the next warm-up after jiffy 251 + 150 = 401.
#[test]
fn double_buffering_window_and_swap() {
    let mut o = opts(1000, 100, 0, 0);
    o.rehash_interval = 1000;
    o.warmup_time = 400;
    let mut q = sfb(o);
    let mut d = Drops::new();
    let mut at = |q: &mut Sfb, t: u64| {
        q.enqueue(ect(t, 1), ms(t), &mut d);
        q.dequeue(ms(t), &mut d);
        (q.slot, q.double_buffering)
    };
    assert_eq!(at(&mut q, 600), (0, false));
    assert_eq!(at(&mut q, 604), (0, true));
    let key0 = q.bins[0].perturbation;
    let key1 = q.bins[1].perturbation;
    assert_eq!(at(&mut q, 1000), (0, true));
    assert_eq!(at(&mut q, 1004), (1, false));
    assert_ne!(q.bins[0].perturbation, key0);
    assert_eq!(q.bins[1].perturbation, key1);
    assert_eq!(at(&mut q, 1604), (1, false));
    assert_eq!(at(&mut q, 1608), (1, true));
    assert_eq!(at(&mut q, 2012), (0, false));
}

/// During the warm-up an inelastic flow is hashed into both sets and
/// counted in both; an elastic one only in the active set. After the swap
/// (set 0 re-keyed) the frames still leave the bins they were counted in.
#[test]
fn the_warm_up_learns_inelastic_flows_and_dequeues_undo_the_right_bins() {
    let mut o = opts(1000, 1, SFB_MAX_PROB, 0);
    o.rehash_interval = 1000;
    o.warmup_time = 400;
    o.penalty_rate = 1000;
    o.penalty_burst = 1000;
    let mut q = sfb(o);
    let mut d = Drops::new();
    // Inelastic flow 1 in the window: frame 0 (bins at 0, p 0) only in
    // set 0; frames 1 and 2 (bins full, p max) in both.
    for id in 0..3 {
        assert_eq!(q.enqueue(ect(id, 1), ms(700), &mut d), Verdict::Queued);
    }
    assert!(q.double_buffering);
    assert!(all(&flow_bins(&q, &ect(0, 1), 0), 3, SFB_MAX_PROB as u16));
    // Set 1 saw two arrivals: the first found its bins empty (p stays 0),
    // the second found them at 1 frame (p max).
    assert!(all(&flow_bins(&q, &ect(0, 1), 1), 2, SFB_MAX_PROB as u16));
    // An elastic flow (its bins' p 0 in set 0) is counted in set 0 only.
    let total = |q: &Sfb, slot: usize| -> u32 {
        q.bins[slot]
            .bins
            .iter()
            .flatten()
            .map(|b| u32::from(b.qlen))
            .sum()
    };
    let (before0, before1) = (total(&q, 0), total(&q, 1));
    assert_eq!(q.enqueue(ect(3, 2), ms(700), &mut d), Verdict::Queued);
    assert_eq!((total(&q, 0), total(&q, 1)), (before0 + 8, before1));
    // The swap at 1004 ms re-keys set 0; dequeues still empty both sets.
    q.enqueue(ect(4, 3), ms(1004), &mut d);
    assert_eq!(q.slot, 1);
    while q.dequeue(ms(1005), &mut d).is_some() {}
    assert!(q
        .bins
        .iter()
        .flat_map(|s| s.bins.iter().flatten())
        .all(|b| b.qlen == 0));
    assert!(q.cbs.is_empty());
}

/// No options: the kernel's `sfb_default_ops` (increment 66, decrement
/// 11, limit the device's tx_queue_len 1000), dumped in ms (600000 and
/// 60000 go through 150000 and 15000 jiffies and back). A change installs
/// a fresh pfifo (the old frames dropped as a reset), zeroes the bins and
/// refills the penalty box; reset zeroes the bins.
#[test]
fn defaults_dump_change_and_reset() {
    let mut q = Sfb::build(QdiscCtx::default(), &QdiscOptions::None).unwrap();
    let QdiscOptions::Sfb(o) = q.dump(ms(0)).options else {
        panic!()
    };
    assert_eq!(
        o,
        SfbOptions {
            limit: 1000,
            ..SfbOptions::default()
        }
    );
    assert_eq!((o.increment, o.decrement), (66, 11));
    let mut d = Drops::new();
    for id in 0..4 {
        q.enqueue(ect(id, 1), ms(1), &mut d);
    }
    assert_eq!(q.xstats().maxqlen, 4);
    let mut o2 = opts(10, 5, 100, 10);
    o2.rehash_interval = 1001;
    o2.limit = 0;
    q.change(&QdiscOptions::Sfb(o2), ms(2), &mut d).unwrap();
    assert_eq!(d.len(), 4);
    assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::QdiscReset));
    assert_eq!((q.qlen(), q.xstats().maxqlen), (0, 0));
    let QdiscOptions::Sfb(o3) = q.dump(ms(2)).options else {
        panic!()
    };
    // 1001 ms is 251 jiffies, dumped as 1004 ms; limit 0 is tx_queue_len.
    assert_eq!((o3.rehash_interval, o3.limit, o3.max), (1004, 1000, 10));
    q.enqueue(ect(9, 1), ms(3), &mut d);
    q.reset(&mut d);
    assert_eq!((q.qlen(), q.xstats().maxqlen), (0, 0));
    assert!(q.cbs.is_empty());
    assert!(matches!(q.dump(ms(3)).xstats, Some(Xstats::Sfb(_))));
    assert!(q.dump(ms(3)).classes.is_empty());
}

/// A grafted child takes the frames; the old one's frames leave without
/// their bins being decremented (as `qdisc_replace` leaves them).
#[test]
fn graft_keeps_the_bins_as_the_kernel_does() {
    let mut q = sfb(opts(100, 100, 0, 0));
    let mut d = Drops::new();
    for id in 0..3 {
        q.enqueue(ect(id, 1), ms(0), &mut d);
    }
    let ctx = q.ctx.child(0x10_0000, one_class::classid(q.ctx.handle));
    let old = q
        .graft(
            one_class::classid(q.ctx.handle),
            Box::new(Fifo::with_limit(FifoKind::Pfifo, ctx, 2)),
        )
        .unwrap()
        .unwrap();
    assert_eq!(old.qlen(), 3);
    assert!(q.cbs.is_empty());
    assert!(all(&flow_bins(&q, &ect(0, 1), 0), 3, 0));
    // The new pfifo holds 2: the third frame is a child drop.
    for id in 3..5 {
        assert_eq!(q.enqueue(ect(id, 1), ms(1), &mut d), Verdict::Queued);
    }
    assert_eq!(q.enqueue(ect(5, 1), ms(1), &mut d), Verdict::Dropped);
    assert_eq!(q.xstats().childdrop, 1);
    assert_eq!(q.stats().drops, 1);
    assert_eq!(q.dump(ms(1)).children.len(), 1);
}
