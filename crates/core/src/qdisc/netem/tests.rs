//! netem's unit tests at explicit times: the tfifo's order (linear list,
//! tree, ties), the rate's reference time, slot budgets, reorder and gap,
//! duplication, corruption, the loss models' sequences with a fixed seed,
//! ECN marking instead of loss, the limit, and the kernel's refusals.

use super::model::{Correlated, Prandom};
use super::*;
use crate::qdisc::testutil::{ect_pkt, pkt};
use crate::qdisc::{tc_h_make, Qdisc};
use crate::time::NS_PER_MS;

const MS: u64 = NS_PER_MS;
/// tc's 100% (`set_percent(1.0)`).
const ALL: u32 = u32::MAX;

fn opts(limit: u32, latency_ms: i64) -> NetemOptions {
    NetemOptions {
        limit,
        latency: Some(latency_ms * MS as i64),
        seed: Some(1),
        ..NetemOptions::default()
    }
}

fn netem(o: NetemOptions) -> Netem {
    Netem::build(QdiscCtx::default(), &QdiscOptions::Netem(Box::new(o))).unwrap()
}

/// A netem with `o` holding frames `0..n` of 100 bytes that came at `t`,
/// and the drops of those enqueues.
fn holding(o: NetemOptions, n: u64, t: Instant) -> (Netem, Drops) {
    let mut q = netem(o);
    let mut d = Drops::new();
    for id in 0..n {
        q.enqueue(pkt(id, 100), t, &mut d);
    }
    (q, d)
}

/// A probability of 100% without correlation.
const ALWAYS: NetemProb = NetemProb {
    probability: ALL,
    correlation: 0,
};

/// Options with `limit`, no delay and a slot of `delay_ms` (`min_delay` =
/// `max_delay`) with the budgets of `slot`.
fn slotted(limit: u32, delay_ms: u64, slot: NetemSlot) -> NetemOptions {
    let mut o = opts(limit, 0);
    o.slot = Some(NetemSlot {
        min_delay: (delay_ms * MS) as i64,
        max_delay: (delay_ms * MS) as i64,
        ..slot
    });
    o
}

fn at(ms: u64) -> Instant {
    Instant::from_nanos(ms * MS)
}

/// Dequeues everything due at `t`: the frames' ids.
fn due(q: &mut Netem, t: Instant) -> Vec<u64> {
    let mut d = Drops::new();
    std::iter::from_fn(|| q.dequeue(t, &mut d).map(|p| p.meta.id)).collect()
}

#[test]
fn prandom_is_the_kernels_tausworthe() {
    // prandom_seed_state + prandom_u32_state, worked out from lib/random32.c.
    let mut r = Prandom::seeded(0);
    let v: Vec<u32> = (0..4).map(|_| r.next_u32()).collect();
    assert_eq!(v, [0x0018_0820, 0x0004_19c8, 0x4220_0624, 0x0082_8214]);
    let mut r = Prandom::seeded(42);
    let v: Vec<u32> = (0..4).map(|_| r.next_u32()).collect();
    assert_eq!(v, [0xb5fe_b103, 0x2f5d_53d0, 0x2b0a_8459, 0x1d26_b77a]);
}

#[test]
fn correlation_of_100_percent_repeats_the_last_value() {
    // rho = 2^32 - 1: weight 2^32, the fresh value weighs nothing.
    let mut c = Correlated::kernel(ALL, 1234);
    assert_eq!(c.next(|| 99), 1234);
    assert_eq!(c.next(|| 7), 1234);
    // rho = 0: the fresh value.
    let mut c = Correlated::kernel(0, 1234);
    assert_eq!(c.next(|| 99), 99);
    // rho = 2^31 - 1 (weight 2^31): the mean of the two.
    let mut c = Correlated::kernel(0x7fff_ffff, 1000);
    assert_eq!(c.next(|| 3000), 2000);
}

#[test]
fn delay_releases_at_time_to_send_and_wakes_then() {
    let mut q = netem(opts(1000, 10));
    let mut d = Drops::new();
    q.enqueue(pkt(0, 100), at(0), &mut d);
    q.enqueue(pkt(1, 100), at(3), &mut d);
    assert_eq!(q.qlen(), 2);
    assert_eq!(q.backlog(), 200);
    assert_eq!(q.next_wakeup(at(0)), Some(at(10)));
    assert!(due(&mut q, Instant::from_nanos(10 * MS - 1)).is_empty());
    assert_eq!(due(&mut q, at(10)), [0]);
    assert_eq!(q.next_wakeup(at(10)), Some(at(13)));
    assert_eq!(due(&mut q, at(13)), [1]);
    assert_eq!(q.next_wakeup(at(13)), None);
    assert_eq!((q.qlen(), q.backlog(), q.stats().packets), (0, 0, 2));
}

/// Times that grow go to the linear list; an earlier one to the tree; a
/// tie between the tree's first and the linear head goes to the linear
/// head (`netem_peek`: the tree only when strictly earlier); equal times
/// in the tree keep their arrival order.
#[test]
fn tfifo_orders_by_time_linear_head_first_on_a_tie() {
    let mut q = netem(opts(1000, 10));
    let mut d = Drops::new();
    let mut send = |q: &mut Netem, id: u64, latency_ms: i64| {
        let mut o = opts(1000, latency_ms);
        o.seed = None;
        q.change(&QdiscOptions::Netem(Box::new(o)), at(0), &mut d)
            .unwrap();
        q.enqueue(pkt(id, 100), at(0), &mut d);
    };
    send(&mut q, 0, 10); // linear [10]
    send(&mut q, 1, 20); // linear [10, 20]
    send(&mut q, 2, 10); // tree {10}
    send(&mut q, 3, 5); // tree {5, 10}
    send(&mut q, 4, 5); // tree {5, 5, 10}
    assert_eq!((q.linear.len(), q.tree.len()), (2, 3));
    assert_eq!(q.next_wakeup(at(0)), Some(at(5)));
    assert_eq!(due(&mut q, at(5)), [3, 4]);
    assert_eq!(due(&mut q, at(10)), [0, 2]);
    assert_eq!(due(&mut q, at(20)), [1]);
}

/// With a uniform jitter the frames leave in the order of their times,
/// each not before its time.
#[test]
fn jitter_reorders_by_time_to_send() {
    let mut o = opts(1000, 20);
    o.jitter = Some(15 * MS as i64);
    o.seed = Some(5);
    let (mut q, _) = holding(o, 200, at(0));
    assert!(!q.tree.is_empty(), "jitter sends some frames to the tree");
    let mut out = Vec::new();
    let mut t = at(0);
    while let Some(w) = q.next_wakeup(t) {
        t = w;
        let head = q.tfifo_head_time().unwrap();
        assert_eq!(head, t.nanos().max(head));
        out.extend(due(&mut q, t).into_iter().map(|id| (t, id)));
    }
    assert_eq!(out.len(), 200);
    assert!(out.windows(2).all(|w| w[0].0 <= w[1].0));
    assert!(out.iter().all(|(t, _)| *t >= at(5) && *t < at(35)));
    let ids: Vec<u64> = out.iter().map(|x| x.1).collect();
    assert_ne!(ids, (0..200).collect::<Vec<_>>(), "jitter reorders");
}

/// `packet_time_ns` after the last frame's time: 1000 B at 1 MB/s is 1 ms.
#[test]
fn rate_takes_the_last_frame_as_reference() {
    let mut o = opts(1000, 10);
    o.rate = Some(NetemRate {
        rate: 1_000_000,
        ..NetemRate::default()
    });
    let mut q = netem(o);
    let mut d = Drops::new();
    for id in 0..3 {
        q.enqueue(pkt(id, 1000), at(0), &mut d);
    }
    // 10 + 1; then delay 10 - (11 - 0) < 0 → 0 after 11, + 1; + 1.
    assert_eq!(due(&mut q, at(11)), [0]);
    assert_eq!(due(&mut q, at(12)), [1]);
    // At 5 ms: the last is at 13, the delay 10 - 8 = 2 after it, + 1.
    q.enqueue(pkt(3, 1000), at(5), &mut d);
    assert_eq!(due(&mut q, at(13)), [2]);
    assert!(due(&mut q, Instant::from_nanos(16 * MS - 1)).is_empty());
    assert_eq!(due(&mut q, at(16)), [3]);
}

#[test]
fn rate_with_packet_overhead_and_cells() {
    let mut o = opts(1000, 0);
    o.rate = Some(NetemRate {
        rate: 1000,
        packet_overhead: 14,
        cell_size: 48,
        cell_overhead: 5,
    });
    let q = netem(o);
    // 100 + 14 = 114 bytes: 2 cells of 48 and a remainder, 3 × 53 = 159
    // bytes at 1000 B/s.
    assert_eq!(q.packet_time_ns(100), 159 * MS);
    // A negative overhead shortens: 100 - 4 = 96 = 2 cells exactly.
    let mut o = opts(1000, 0);
    o.rate = Some(NetemRate {
        rate: 1000,
        packet_overhead: -4,
        cell_size: 48,
        cell_overhead: 0,
    });
    assert_eq!(netem(o).packet_time_ns(100), 96 * MS);
}

/// `slot 10ms 10ms packets 2`: the slot opened when netem was made (time
/// 0) is behind the first frame's time, so the first dequeue draws the
/// next slot from then (`get_slot_next` when `slot_next < time_to_send`);
/// each slot sends two frames and the next opens 10 ms later.
#[test]
fn slot_budget_of_packets() {
    let slot = NetemSlot {
        max_packets: 2,
        ..NetemSlot::default()
    };
    let (mut q, mut d) = holding(slotted(1000, 10, slot), 5, at(1));
    assert!(due(&mut q, at(1)).is_empty());
    assert_eq!(q.next_wakeup(at(1)), Some(at(11)));
    assert!(due(&mut q, at(5)).is_empty());
    assert_eq!(due(&mut q, at(11)), [0, 1]);
    assert_eq!(q.next_wakeup(at(11)), Some(at(21)));
    assert_eq!(due(&mut q, at(21)), [2, 3]);
    assert_eq!(due(&mut q, at(31)), [4]);
    // An idle netem's slot moves on when the next frame comes later.
    q.enqueue(pkt(5, 100), at(100), &mut d);
    assert_eq!(due(&mut q, at(100)), Vec::<u64>::new());
    assert_eq!(due(&mut q, at(110)), [5]);
}

/// `slot ... bytes 250`: 100-byte frames, the third takes the budget to
/// -50, which closes the slot.
#[test]
fn slot_budget_of_bytes() {
    let slot = NetemSlot {
        max_bytes: 250,
        ..NetemSlot::default()
    };
    let (mut q, _) = holding(slotted(1000, 4, slot), 5, at(1));
    assert!(due(&mut q, at(1)).is_empty());
    assert_eq!(due(&mut q, at(5)), [0, 1, 2]);
    assert_eq!(due(&mut q, at(9)), [3, 4]);
}

/// `reorder 100% gap 3`: every third frame goes to the head at once (the
/// later reordered one first, `__qdisc_enqueue_head`), counted as a
/// requeue; the others wait the delay.
#[test]
fn reorder_with_gap_sends_every_third_frame_at_once() {
    let mut o = opts(1000, 10);
    o.gap = 3;
    o.reorder = Some(ALWAYS);
    let (mut q, _) = holding(o, 7, at(0));
    assert_eq!(q.stats().requeues, 2);
    assert_eq!(due(&mut q, at(0)), [5, 2]);
    assert_eq!(due(&mut q, at(10)), [0, 1, 3, 4, 6]);
    // reorder 0% with a gap: never.
    let mut o = opts(1000, 10);
    o.gap = 1;
    o.reorder = Some(NetemProb::default());
    let (mut q, _) = holding(o, 5, at(0));
    assert!(due(&mut q, at(0)).is_empty());
}

#[test]
fn duplicate_at_the_root_enqueues_a_copy_first() {
    let mut o = opts(5, 10);
    o.duplicate = ALL;
    let mut q = netem(o);
    let mut d = Drops::new();
    q.enqueue(pkt(0, 100), at(0), &mut d);
    q.enqueue(pkt(1, 100), at(0), &mut d);
    assert_eq!((q.qlen(), q.backlog()), (4, 400));
    // The third finds 4 < 5: its copy takes the fifth place, then the
    // original goes in too (the kernel checks the limit once).
    q.enqueue(pkt(2, 100), at(0), &mut d);
    assert_eq!(q.qlen(), 6);
    // Full: the frame and its copy are dropped, one drop counted.
    assert_eq!(q.enqueue(pkt(3, 100), at(0), &mut d), Verdict::Dropped);
    assert_eq!(d.len(), 2);
    assert_eq!(q.stats().drops, 1);
    assert_eq!(due(&mut q, at(10)), [0, 0, 1, 1, 2, 2]);
    // Under a parent the copy is left for the root of the tree.
    let ctx = QdiscCtx {
        parent: tc_h_make(1, 1),
        ..QdiscCtx::default()
    };
    let mut o = opts(5, 10);
    o.duplicate = ALL;
    let mut q = Netem::build(ctx, &QdiscOptions::Netem(Box::new(o))).unwrap();
    q.enqueue(pkt(0, 100), at(0), &mut d);
    assert_eq!(q.qlen(), 1);
    let copy = d.take_copy().expect("a copy for the root");
    assert!(copy.meta.duplicate && copy.meta.id == 0);
    assert!(d.take_copy().is_none());
    // Offered back (the root's classification leads it here), the copy is
    // queued and not duplicated again (`tc_depth`).
    q.enqueue(copy, at(0), &mut d);
    assert_eq!(q.qlen(), 2);
    assert!(d.take_copy().is_none());
    assert_eq!(q.copies(), 0);
}

/// A netem with handle 1: at the root holding `child` (built by `make`
/// with the ctx netem gives class 1:1) as qdisc 10:.
fn with_child(o: NetemOptions, make: impl FnOnce(QdiscCtx) -> Box<dyn Qdisc>) -> Netem {
    let ctx = QdiscCtx {
        handle: tc_h_make(1, 0),
        ..QdiscCtx::default()
    };
    let mut q = Netem::build(ctx, &QdiscOptions::Netem(Box::new(o))).unwrap();
    let child = make(q.child_ctx(tc_h_make(0x10, 0), tc_h_make(1, 1)));
    assert!(q.graft(tc_h_make(1, 1), child).unwrap().is_none());
    q
}

/// Every departure from `t` on, following the wake-ups: (ms, id).
fn departures(q: &mut Netem, mut t: Instant, d: &mut Drops) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    while let Some(w) = q.next_wakeup(t) {
        t = w;
        while let Some(p) = q.dequeue(t, d) {
            out.push((t.nanos() / MS, p.meta.id));
        }
        assert!(out.len() < 1000, "no progress at {t:?}");
    }
    out
}

/// The classic recipe, `netem delay 100ms` with `tbf rate 1mbit burst
/// 32kbit` under 1:1: all ten 1000-byte frames are due at 100 ms and move
/// into TBF (`netem_dequeue`'s `q->qdisc` path); TBF's full bucket (4000
/// bytes, 32 ms) sends four at once, then one per 8 ms (1000 bytes at
/// 125000 bytes/s), netem waking at TBF's watchdog.
#[test]
fn tbf_child_shapes_after_the_delay() {
    use crate::qdisc::options::RateSpec;
    use crate::qdisc::tbf::{Tbf, TbfOptions};
    let tbf = TbfOptions {
        rate: RateSpec::new(125_000),
        burst: Some(4000),
        limit: 1_000_000,
        ..TbfOptions::default()
    };
    let mut q = with_child(opts(1000, 100), |c| {
        Box::new(Tbf::build(c, &QdiscOptions::Tbf(tbf)).unwrap())
    });
    let mut d = Drops::new();
    for id in 0..10 {
        q.enqueue(pkt(id, 1000), at(0), &mut d);
    }
    assert_eq!(q.next_wakeup(at(0)), Some(at(100)));
    let first: Vec<u64> = due(&mut q, at(100));
    assert_eq!(first, [0, 1, 2, 3]);
    // The other six wait in TBF and still count in netem.
    assert_eq!((q.qlen(), q.backlog()), (6, 6000));
    assert_eq!(q.next_wakeup(at(100)), Some(at(108)));
    let rest = departures(&mut q, at(100), &mut d);
    assert_eq!(
        rest,
        [(108, 4), (116, 5), (124, 6), (132, 7), (140, 8), (148, 9)]
    );
    assert_eq!((q.qlen(), q.backlog(), q.stats().packets), (0, 0, 10));
    assert!(d.is_empty());
}

/// A child that refuses frames: `pfifo limit 2` under `netem delay 10ms`.
/// At 10 ms the five due frames go into the pfifo, which takes two and
/// drops three; each drop counts in netem too (`net_xmit_drop_count`).
#[test]
fn child_drops_count_in_netem() {
    use crate::qdisc::fifo::{Fifo, FifoKind};
    let mut q = with_child(opts(1000, 10), |c| {
        Box::new(Fifo::with_limit(FifoKind::Pfifo, c, 2))
    });
    let mut d = Drops::new();
    for id in 0..5 {
        q.enqueue(pkt(id, 100), at(0), &mut d);
    }
    assert_eq!(q.qlen(), 5);
    assert_eq!(due(&mut q, at(10)), [0, 1]);
    let s = q.stats();
    assert_eq!((s.drops, s.packets, s.qlen, s.backlog), (3, 2, 0, 0));
    let child = q.dump(at(10)).children.remove(0);
    assert_eq!(child.stats.drops, 3);
}

/// netem's limit counts the frames its child holds (`sch->q.qlen`): with
/// `limit 3` and a slow TBF child, three frames moved into TBF still fill
/// netem.
#[test]
fn limit_counts_the_childs_frames() {
    use crate::qdisc::options::RateSpec;
    use crate::qdisc::tbf::{Tbf, TbfOptions};
    let tbf = TbfOptions {
        rate: RateSpec::new(1000),
        burst: Some(1000),
        limit: 100_000,
        ..TbfOptions::default()
    };
    let mut q = with_child(opts(3, 1), |c| {
        Box::new(Tbf::build(c, &QdiscOptions::Tbf(tbf)).unwrap())
    });
    let mut d = Drops::new();
    for id in 0..3 {
        q.enqueue(pkt(id, 1000), at(0), &mut d);
    }
    assert_eq!(due(&mut q, at(1)), [0]);
    assert_eq!(q.qlen(), 2);
    assert_eq!(q.enqueue(pkt(3, 1000), at(1), &mut d), Verdict::Queued);
    assert_eq!(q.enqueue(pkt(4, 1000), at(1), &mut d), Verdict::Dropped);
    assert_eq!(q.stats().drops, 1);
}

/// The one class: listed only with a child (`netem_dump_class`), found
/// for any minor (`netem_find`); a deleted child leaves netem sending from
/// its tfifo again (`netem_graft` stores NULL); a new one replaces the
/// old, which is returned with its frames.
#[test]
fn class_graft_delete_and_replace() {
    use crate::qdisc::fifo::{Fifo, FifoKind};
    let mut q = with_child(opts(1000, 10), |c| Box::new(Fifo::new(FifoKind::Pfifo, c)));
    let class = tc_h_make(1, 1);
    assert_eq!(q.find_class(tc_h_make(1, 7)), class);
    let d = q.dump(at(0));
    assert_eq!(d.classes.len(), 1);
    assert_eq!(d.classes[0].leaf, Some(tc_h_make(0x10, 0)));
    assert_eq!(d.children[0].kind, "pfifo");
    assert!(!q.undumped_class(class));
    let mut drops = Drops::new();
    q.enqueue(pkt(0, 100), at(0), &mut drops);
    assert_eq!(due(&mut q, at(9)), Vec::<u64>::new());
    // Moved into the child at 10 ms, then a new child replaces it.
    q.enqueue(pkt(1, 100), at(5), &mut drops);
    let bfifo = Fifo::new(FifoKind::Bfifo, q.child_ctx(tc_h_make(0x20, 0), class));
    let old = q.graft(class, Box::new(bfifo)).unwrap().unwrap();
    assert_eq!(old.kind(), "pfifo");
    assert_eq!(q.dump(at(5)).children[0].kind, "bfifo");
    let old = q.ungraft(class).unwrap().unwrap();
    assert_eq!(old.kind(), "bfifo");
    let d = q.dump(at(5));
    assert!(d.classes.is_empty() && d.children.is_empty());
    assert!(q.undumped_class(class));
    assert_eq!(due(&mut q, at(15)), [0, 1]);
    assert!(q
        .add_class(class, tc_h_make(1, 0), &ClassOptions::None)
        .is_err());
    assert!(q.delete_class(class, &mut drops).is_err());
}

#[test]
fn corrupt_flips_one_bit() {
    let mut o = opts(1000, 0);
    o.corrupt = Some(ALWAYS);
    let mut q = netem(o);
    let mut d = Drops::new();
    let original: Vec<u8> = (0..64u8).collect();
    for id in 0..50 {
        let mut p = pkt(id, 64);
        p.data = original.clone();
        q.enqueue(p, at(0), &mut d);
        let p = q.dequeue(at(0), &mut d).unwrap();
        let bits: u32 = p
            .data
            .iter()
            .zip(&original)
            .map(|(a, b)| (a ^ b).count_ones())
            .sum();
        assert_eq!(bits, 1);
    }
    // No bytes: nothing to flip, the frame goes on.
    q.enqueue(pkt(99, 64), at(0), &mut d);
    assert_eq!(due(&mut q, at(0)), [99]);
}

/// `loss 50% seed 7`: lost where the kernel's generator seeded with 7
/// draws at most 2^31 (`q->loss >= get_crandom()`), worked out from
/// lib/random32.c (true = lost).
#[test]
fn random_loss_sequence_with_a_seed() {
    let lost = [
        true, true, true, true, true, false, false, true, true, false, false, true,
    ];
    let mut o = opts(1000, 0);
    o.loss = 0x8000_0000;
    o.seed = Some(7);
    let mut q = netem(o);
    let mut d = Drops::new();
    let fates: Vec<bool> = (0..12)
        .map(|id| q.enqueue(pkt(id, 100), at(0), &mut d) == Verdict::Dropped)
        .collect();
    assert_eq!(fates, lost);
    assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::NetemLoss));
    assert_eq!(q.stats().drops, 8);
}

/// `loss state 0% 0% 0% 0% 100%`: 1 → 4 (lost) → 1 (kept, a draw spent)
/// → 4 ...; with p13 = 100%, 1 → 3 and 3 stays: all lost.
#[test]
fn four_state_sequences() {
    let run = |m: NetemLossModel| {
        let mut o = opts(1000, 0);
        o.loss_model = Some(m);
        let mut q = netem(o);
        let mut d = Drops::new();
        (0..6)
            .map(|id| q.enqueue(pkt(id, 100), at(0), &mut d) == Verdict::Dropped)
            .collect::<Vec<_>>()
    };
    let isolated = NetemLossModel::FourState {
        p13: 0,
        p31: 0,
        p32: 0,
        p14: ALL,
        p23: 0,
    };
    assert_eq!(run(isolated), [true, false, true, false, true, false]);
    let burst = NetemLossModel::FourState {
        p13: ALL,
        p31: 0,
        p32: 0,
        p14: 0,
        p23: 0,
    };
    assert_eq!(run(burst), [true; 6]);
}

/// Gilbert–Elliott: `p 100%`, `r 0%`: the first frame is judged in the
/// good state (1-k = 0: kept), then the chain is bad for good; with `1-h`
/// 100% (h = 0, lost when the draw is above 0) every later frame is lost.
#[test]
fn gilbert_elliott_sequence() {
    let mut o = opts(1000, 0);
    o.loss_model = Some(NetemLossModel::GilbertElliott {
        p: ALL,
        r: 0,
        h: 0,
        k1: 0,
    });
    let mut q = netem(o);
    let mut d = Drops::new();
    let fates: Vec<bool> = (0..5)
        .map(|id| q.enqueue(pkt(id, 100), at(0), &mut d) == Verdict::Dropped)
        .collect();
    assert_eq!(fates, [false, true, true, true, true]);
}

/// With `ecn` a lost ECN-capable frame is marked CE and queued (the
/// kernel still counts a drop); a Not-ECT one is dropped.
#[test]
fn ecn_marks_instead_of_losing() {
    let mut o = opts(1000, 0);
    o.loss = ALL;
    o.ecn = Some(1);
    let mut q = netem(o);
    let mut d = Drops::new();
    assert_eq!(
        q.enqueue(ect_pkt(0, 100, 2), at(0), &mut d),
        Verdict::Queued
    );
    assert_eq!(
        q.enqueue(ect_pkt(1, 100, 0), at(0), &mut d),
        Verdict::Dropped
    );
    assert_eq!(q.stats().drops, 2);
    assert_eq!(d.len(), 1);
    let p = q.dequeue(at(0), &mut d).unwrap();
    assert_eq!(p.meta.dsfield & 3, 3, "CE");
}

#[test]
fn limit_drops_the_arriving_frame() {
    let mut q = netem(opts(3, 10));
    let mut d = Drops::new();
    for id in 0..3 {
        assert_eq!(q.enqueue(pkt(id, 100), at(0), &mut d), Verdict::Queued);
    }
    assert_eq!(q.enqueue(pkt(3, 100), at(0), &mut d), Verdict::Dropped);
    assert_eq!(
        d.since(0).iter().next().map(|(_, r)| *r),
        Some(DropReason::NetemLimit)
    );
    assert_eq!((q.qlen(), q.stats().drops), (3, 1));
    // limit 0 holds nothing.
    let mut q = netem(opts(0, 10));
    assert_eq!(q.enqueue(pkt(0, 100), at(0), &mut d), Verdict::Dropped);
}

#[test]
fn refusals_are_the_kernels() {
    let refuse = |o: NetemOptions| {
        Netem::build(QdiscCtx::default(), &QdiscOptions::Netem(Box::new(o)))
            .err()
            .unwrap()
            .to_string()
    };
    let mut o = opts(10, 0);
    o.latency = Some(-1);
    assert!(refuse(o).contains("negative latency"));
    let mut o = opts(10, 0);
    o.jitter = Some(-1);
    assert!(refuse(o).contains("negative jitter"));
    let slot = |s: NetemSlot| NetemOptions {
        slot: Some(s),
        ..opts(10, 0)
    };
    assert!(refuse(slot(NetemSlot {
        min_delay: -1,
        ..NetemSlot::default()
    }))
    .contains("negative slot delay"));
    assert!(refuse(slot(NetemSlot {
        min_delay: 2,
        max_delay: 1,
        ..NetemSlot::default()
    }))
    .contains("slot min delay greater than max delay"));
    assert!(refuse(slot(NetemSlot {
        dist_jitter: -1,
        ..NetemSlot::default()
    }))
    .contains("negative dist delay"));
    assert!(refuse(slot(NetemSlot {
        max_bytes: -1,
        ..NetemSlot::default()
    }))
    .contains("negative slot limit"));
    let mut o = opts(10, 0);
    o.delay_dist = Some(Vec::new());
    assert!(!refuse(o).is_empty());
    assert!(Netem::build(QdiscCtx::default(), &QdiscOptions::None).is_err());
}

/// The dump: every attribute `netem_dump` puts, the slot's "no limit"
/// back as 0, the seed in force.
#[test]
fn dump_fills_the_attributes() {
    let mut o = opts(77, 10);
    o.jitter = Some(-3 * MS as i64 / -1);
    o.slot = Some(NetemSlot {
        min_delay: 1,
        max_delay: 2,
        ..NetemSlot::default()
    });
    o.seed = Some(9);
    let q = netem(o);
    let QdiscOptions::Netem(d) = q.dump(at(0)).options else {
        panic!()
    };
    assert_eq!(d.limit, 77);
    assert_eq!(d.latency, Some(10 * MS as i64));
    assert_eq!(d.jitter, Some(3 * MS as i64));
    assert_eq!(d.seed, Some(9));
    assert_eq!(d.slot.map(|s| (s.max_packets, s.max_bytes)), Some((0, 0)));
    assert_eq!(d.reorder, Some(NetemProb::default()));
    assert_eq!(d.ecn, None);
}

#[test]
fn reset_drops_everything_held() {
    let mut q = netem(opts(10, 10));
    let mut d = Drops::new();
    for id in 0..3 {
        q.enqueue(pkt(id, 100), at(0), &mut d);
    }
    q.reset(&mut d);
    assert_eq!((q.qlen(), q.backlog(), d.len()), (0, 0, 3));
    assert_eq!(q.next_wakeup(at(0)), None);
}

/// `peek` runs the dequeue and parks the frame (`qdisc_peek_dequeued`):
/// what it shows is what `dequeue` gives, the slot drawn once, and the
/// parked frame still counts (in qlen, backlog and the limit).
#[test]
fn peek_parks_what_dequeue_gives() {
    let slot = NetemSlot {
        max_packets: 1,
        ..NetemSlot::default()
    };
    let (mut q, mut d) = holding(slotted(2, 10, slot), 2, at(1));
    // The stale slot is drawn again from 1 ms: nothing before 11 ms.
    assert!(q.peek(at(1), &mut d).is_none());
    assert_eq!(q.next_wakeup(at(1)), Some(at(11)));
    assert_eq!(q.peek(at(11), &mut d).map(|p| p.meta.id), Some(0));
    assert_eq!((q.qlen(), q.backlog()), (2, 200));
    assert_eq!(q.enqueue(pkt(2, 100), at(11), &mut d), Verdict::Dropped);
    assert_eq!(q.dequeue(at(11), &mut d).map(|p| p.meta.id), Some(0));
    // The slot's one packet is spent: the next opens at 21 ms.
    assert!(q.peek(at(11), &mut d).is_none());
    assert_eq!(due(&mut q, at(21)), [1]);
    assert_eq!(q.stats().packets, 2);
}
