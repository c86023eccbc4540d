//! HTB's unit tests: the core driven with typed options (the tc syntax's
//! tests are in `crate::tc::opts::htb`): guaranteed rates, borrowing up to
//! ceil, prio and quantum, default class and direct queue, depth, class
//! changes and deletion, grafts, filters, and invariants under random
//! operations and extreme configurations.

use super::*;
use crate::packet::filter::{Family, Field, Filter, FilterKind, FilterProtocol, Match};
use crate::qdisc::dump::Xstats;
use crate::qdisc::fifo::{Fifo, FifoKind};
use crate::qdisc::htb::HtbXstats;
use crate::qdisc::options::RateSpec;
use crate::qdisc::testutil::{drain_codel_child, pkt};
use crate::qdisc::{tc_h_make, ClassDump, ClassOptions, Handle};
use crate::units::{tc_calc_xmittime, LinkLayer};
use rand::{Rng, SeedableRng};
use std::collections::HashMap;

const SEC: u64 = NS_PER_SEC;
/// 1 Gbit/s link: ns to serialise `len` bytes.
fn gig(len: u32) -> u64 {
    len as u64 * 8
}

fn cid(s: &str) -> Handle {
    let (maj, min) = s.split_once(':').unwrap();
    let maj = u16::from_str_radix(maj, 16).unwrap();
    let min = if min.is_empty() {
        0
    } else {
        u16::from_str_radix(min, 16).unwrap()
    };
    tc_h_make(maj, min)
}

fn ctx() -> QdiscCtx {
    QdiscCtx {
        handle: cid("1:"),
        ..QdiscCtx::default()
    }
}

/// Bytes per second of 1 Mbit/s and 1 kbit/s.
const MBIT: u64 = 125_000;
const KBIT: u64 = 125;

fn htb(options: HtbGlob) -> Htb {
    Htb::build(ctx(), &QdiscOptions::Htb(options)).unwrap()
}

/// `tc qdisc add ... htb default MINOR`.
fn default(minor: u32) -> HtbGlob {
    HtbGlob {
        defcls: minor,
        ..HtbGlob::default()
    }
}

/// `len` bytes at `rate` in psched ticks, as tc sizes a bucket.
fn bucket(rate: u64, len: u64) -> u32 {
    u32::try_from(tc_calc_xmittime(rate, len)).unwrap_or(u32::MAX)
}

/// A class of `rate` up to `ceil` (bytes/s) as tc sends `rate R ceil C`:
/// burst and cburst are tc's default, rate / HZ + mtu, 1600 B below
/// 8 Gbit/s.
fn rate_ceil(rate: u64, ceil: u64) -> HtbClassOptions {
    let spec = |rate| RateSpec {
        rate,
        ..RateSpec::default()
    };
    HtbClassOptions {
        rate: spec(rate),
        ceil: spec(ceil),
        buffer: bucket(rate, 1600),
        cbuffer: bucket(ceil, 1600),
        ..HtbClassOptions::default()
    }
}

/// `rate R`: the ceil is the rate.
fn rated(rate: u64) -> HtbClassOptions {
    rate_ceil(rate, rate)
}

fn try_add(q: &mut Htb, classid: &str, parent: &str, o: HtbClassOptions) -> Result<(), Refusal> {
    q.add_class(cid(classid), cid(parent), &ClassOptions::Htb(o))
}

fn add(q: &mut Htb, classid: &str, parent: &str, o: HtbClassOptions) {
    try_add(q, classid, parent, o).unwrap()
}

fn add_err(q: &mut Htb, classid: &str, parent: &str, o: HtbClassOptions) -> Refusal {
    try_add(q, classid, parent, o).unwrap_err()
}

/// The options a class dumps.
fn opts(c: &ClassDump) -> &HtbClassOptions {
    match &c.options {
        ClassOptions::Htb(o) => o,
        other => panic!("{other:?}"),
    }
}

/// The options the qdisc dumps.
fn glob(d: &QdiscDump) -> &HtbGlob {
    match &d.options {
        QdiscOptions::Htb(o) => o,
        other => panic!("{other:?}"),
    }
}

/// A frame steered to `classid` through skb->priority.
fn to(classid: Handle, id: u64, len: u32) -> Packet {
    let mut p = pkt(id, len);
    p.meta.priority = classid;
    p
}

fn class<'a>(d: &'a QdiscDump, classid: &str) -> &'a ClassDump {
    d.classes
        .iter()
        .find(|c| c.classid == cid(classid))
        .unwrap()
}

fn hx(c: &ClassDump) -> HtbXstats {
    match &c.xstats {
        Some(Xstats::HtbClass(x)) => *x,
        other => panic!("{other:?}"),
    }
}

/// The common setup of these tests: root 1:1 100mbit, leaves 1:10 and
/// 1:20 with the given options.
fn common(a: HtbClassOptions, b: HtbClassOptions) -> Htb {
    let mut q = htb(default(0x20));
    add(&mut q, "1:1", "1:", rate_ceil(100 * MBIT, 100 * MBIT));
    add(&mut q, "1:10", "1:1", a);
    add(&mut q, "1:20", "1:1", b);
    q
}

/// Result of driving the qdisc as a link would.
struct Run {
    bytes: HashMap<Handle, u64>,
    end: Instant,
    /// (time, classid, len) of each departure.
    log: Vec<(u64, Handle, u32)>,
}

/// Keeps `backlogged` classes topped up with `len`-byte frames and
/// dequeues like a link of 1 Gbit/s: right after a frame finished, or at
/// `next_wakeup` when the qdisc held everything back.
fn run(q: &mut Htb, from: Instant, dur: u64, backlogged: &[Handle], len: u32) -> Run {
    let mut d = Drops::new();
    let mut t = from;
    let until = from + dur;
    let mut r = Run {
        bytes: HashMap::new(),
        end: t,
        log: Vec::new(),
    };
    let mut id = 0;
    let mut idle_polls = 0u64;
    for &c in backlogged {
        for _ in 0..8 {
            q.enqueue(to(c, id, len), t, &mut d);
            id += 1;
        }
    }
    while t < until {
        match q.dequeue(t, &mut d) {
            Some(p) => {
                // Keep the class backlogged: a new frame replaces it.
                let c = p.meta.priority;
                q.enqueue(to(c, id, len), t, &mut d);
                id += 1;
                *r.bytes.entry(c).or_default() += p.len as u64;
                r.log.push((t.nanos(), c, p.len));
                t += gig(p.len);
            }
            None => {
                let w = q.next_wakeup(t).expect("backlogged qdisc has a wakeup");
                assert!(w > t, "wakeup {w:?} not after a failed poll at {t:?}");
                idle_polls += 1;
                t = w;
            }
        }
    }
    assert!(d.is_empty());
    assert!(
        idle_polls <= r.log.len() as u64 * 4 + 10,
        "{idle_polls} idle polls"
    );
    r.end = t;
    r
}

fn mbit(bytes: u64, ns: u64) -> f64 {
    bytes as f64 * 8.0 / ns as f64 * 1000.0
}

/// The rates (Mbit/s) of leaves 1:10 and 1:20 of `common(a, b)`, both
/// kept backlogged with 1514-byte frames for one second.
fn both_backlogged_rates(a: HtbClassOptions, b: HtbClassOptions) -> (f64, f64) {
    let mut q = common(a, b);
    let (ca, cb) = (cid("1:10"), cid("1:20"));
    let r = run(&mut q, Instant::ZERO, SEC, &[ca, cb], 1514);
    let ns = r.end.nanos();
    (mbit(r.bytes[&ca], ns), mbit(r.bytes[&cb], ns))
}

#[test]
fn vector_h3_guaranteed_rates_30_70() {
    let mut q = common(
        rate_ceil(30 * MBIT, 100 * MBIT),
        rate_ceil(70 * MBIT, 100 * MBIT),
    );
    let (a, b) = (cid("1:10"), cid("1:20"));
    let r = run(&mut q, Instant::ZERO, SEC, &[a, b], 1514);
    let ns = r.end.nanos();
    let ra = mbit(r.bytes[&a], ns);
    let rb = mbit(r.bytes[&b], ns);
    assert!((ra - 30.0).abs() < 0.3, "A {ra} Mbit/s");
    assert!((rb - 70.0).abs() < 0.7, "B {rb} Mbit/s");
    let d = q.dump(r.end);
    let (ca, root) = (class(&d, "1:10"), class(&d, "1:1"));
    let (xa, xroot) = (hx(ca), hx(root));
    let lended = xa.lends as i64;
    eprintln!(
        "H-3: A {ra:.3} Mbit/s, B {rb:.3} Mbit/s, A lended {lended} borrowed {}, root lended {}",
        xa.borrows, xroot.lends
    );
    assert!((lended - 2477).abs() < 30, "A lended {lended}");
    assert!(xa.borrows * 100 <= xa.lends, "A borrowed {}", xa.borrows);
    assert!(xroot.lends * 100 <= xa.lends);
    // Inner class counts what its descendants sent.
    let sent = r.bytes[&a] + r.bytes[&b];
    assert_eq!(root.stats.unwrap().bytes, sent);
    assert_eq!(d.stats.bytes, sent);
}

#[test]
fn vector_h4_borrowing_up_to_ceil() {
    let mut q = common(
        rate_ceil(30 * MBIT, 100 * MBIT),
        rate_ceil(70 * MBIT, 100 * MBIT),
    );
    let b = cid("1:20");
    let r = run(&mut q, Instant::ZERO, SEC, &[b], 1514);
    let rb = mbit(r.bytes[&b], r.end.nanos());
    assert!((rb - 100.0).abs() < 1.0, "B {rb} Mbit/s");
    let d = q.dump(r.end);
    let (cb, root) = (class(&d, "1:20"), class(&d, "1:1"));
    let (lended, borrowed) = (hx(cb).lends, hx(cb).borrows);
    let share = lended as f64 / (lended + borrowed) as f64;
    eprintln!("H-4: B {rb:.3} Mbit/s, lended {lended} borrowed {borrowed} ({share:.4})");
    assert!((share - 0.70).abs() < 0.02, "lended share {share}");
    assert_eq!(hx(root).lends, borrowed);
    assert_eq!(hx(root).borrows, 0);
}

#[test]
fn excess_goes_strictly_to_lower_prio_value() {
    let (ra, rb) = both_backlogged_rates(
        HtbClassOptions {
            prio: 1,
            ..rate_ceil(10 * MBIT, 100 * MBIT)
        },
        HtbClassOptions {
            prio: 0,
            ..rate_ceil(10 * MBIT, 100 * MBIT)
        },
    );
    eprintln!("prio: prio-1 class {ra:.3} Mbit/s, prio-0 class {rb:.3} Mbit/s");
    assert!((ra - 10.0).abs() < 0.3, "prio 1 gets only its rate: {ra}");
    assert!((rb - 90.0).abs() < 1.0, "prio 0 takes all excess: {rb}");
}

#[test]
fn excess_split_by_quantum_not_rate() {
    // Equal rates, quanta 3:1 → the 80 Mbit/s excess splits 60/20.
    let (ra, rb) = both_backlogged_rates(
        HtbClassOptions {
            quantum: 4542,
            ..rate_ceil(10 * MBIT, 100 * MBIT)
        },
        HtbClassOptions {
            quantum: 1514,
            ..rate_ceil(10 * MBIT, 100 * MBIT)
        },
    );
    eprintln!("quantum 3:1: A {ra:.3} Mbit/s, B {rb:.3} Mbit/s");
    assert!((ra - 70.0).abs() < 1.5, "A {ra}");
    assert!((rb - 30.0).abs() < 1.5, "B {rb}");
}

#[test]
fn ceil_is_never_exceeded() {
    let mut q = common(
        rate_ceil(5 * MBIT, 20 * MBIT),
        rate_ceil(5 * MBIT, 50 * MBIT),
    );
    let (a, b) = (cid("1:10"), cid("1:20"));
    let r = run(&mut q, Instant::ZERO, SEC / 2, &[a, b], 1514);
    for (c, ceil_bps) in [(a, 2_500_000u64), (b, 6_250_000)] {
        let sends: Vec<(u64, u32)> = r
            .log
            .iter()
            .filter(|e| e.1 == c)
            .map(|e| (e.0, e.2))
            .collect();
        for i in 0..sends.len() {
            let mut bytes = 0u64;
            for j in i..sends.len().min(i + 300) {
                bytes += sends[j].1 as u64;
                let window = sends[j].0 - sends[i].0;
                // cburst (1600 B) plus the one-packet overdraft.
                assert!(
                    bytes <= ceil_bps * window / SEC + 1600 + 1514,
                    "class {c:x}"
                );
            }
        }
        let rate = mbit(sends.iter().map(|s| s.1 as u64).sum(), r.end.nanos());
        assert!(rate <= ceil_bps as f64 * 8e-6 + 0.1, "{rate}");
    }
}

#[test]
fn borrowing_chains_through_three_levels() {
    let mut q = htb(HtbGlob::default());
    add(&mut q, "1:1", "1:", rated(100 * MBIT));
    add(&mut q, "1:2", "1:1", rate_ceil(10 * MBIT, 100 * MBIT));
    add(&mut q, "1:20", "1:2", rate_ceil(MBIT, 100 * MBIT));
    let leaf = cid("1:20");
    let r = run(&mut q, Instant::ZERO, SEC, &[leaf], 1514);
    let rate = mbit(r.bytes[&leaf], r.end.nanos());
    assert!((rate - 100.0).abs() < 1.0, "{rate}");
    let d = q.dump(r.end);
    eprintln!("chain: leaf {rate:.3} Mbit/s");
    let (l, mid, root) = (class(&d, "1:20"), class(&d, "1:2"), class(&d, "1:1"));
    let total = r.log.len() as u64;
    let (l, mid, root) = (hx(l), hx(mid), hx(root));
    // ~1% at the leaf's rate, ~9% from 1:2, ~90% from the root.
    assert!((l.lends as f64 / total as f64 - 0.01).abs() < 0.005);
    assert!((mid.lends as f64 / total as f64 - 0.09).abs() < 0.01);
    assert!((root.lends as f64 / total as f64 - 0.90).abs() < 0.01);
    assert_eq!(l.borrows, mid.lends + root.lends);
    assert_eq!(mid.borrows, root.lends);
    assert_eq!(l.lends + l.borrows, total);
}

#[test]
fn default_class_and_direct_queue() {
    // No default: unshaped direct queue, served first.
    let mut q = htb(HtbGlob::default());
    add(&mut q, "1:1", "1:", rated(MBIT));
    let mut d = Drops::new();
    for id in 0..5 {
        q.enqueue(pkt(id, 1514), Instant::ZERO, &mut d);
    }
    q.enqueue(to(cid("1:1"), 99, 1514), Instant::ZERO, &mut d);
    let order: Vec<u64> = (0..6)
        .filter_map(|_| q.dequeue(Instant::ZERO, &mut d))
        .map(|p| p.meta.id)
        .collect();
    assert_eq!(order, vec![0, 1, 2, 3, 4, 99]);
    assert_eq!(q.direct_packets(), 5);
    assert_eq!(glob(&q.dump(Instant::ZERO)).direct_pkts, 5);
    // priority == handle selects direct even with a default.
    let mut q = htb(default(1));
    add(&mut q, "1:1", "1:", rated(MBIT));
    let mut direct = pkt(7, 100);
    direct.meta.priority = cid("1:");
    q.enqueue(direct, Instant::ZERO, &mut d);
    for id in 0..4 {
        q.enqueue(pkt(id, 1514), Instant::ZERO, &mut d);
    }
    assert_eq!(q.direct_packets(), 1);
    let got: Vec<u64> = (0..5)
        .filter_map(|_| q.dequeue(Instant::ZERO, &mut d))
        .map(|p| p.meta.id)
        .collect();
    assert_eq!(
        got,
        vec![7, 0, 1],
        "direct first, then the 1mbit burst of two"
    );
    // Default pointing at an inner class falls back to direct.
    let mut q = htb(default(1));
    add(&mut q, "1:1", "1:", rated(MBIT));
    add(&mut q, "1:10", "1:1", rated(MBIT));
    q.enqueue(pkt(1, 100), Instant::ZERO, &mut d);
    assert_eq!(q.direct_packets(), 1);
    // Direct queue limit.
    let mut q = htb(HtbGlob {
        direct_qlen: Some(2),
        ..HtbGlob::default()
    });
    for id in 0..3 {
        q.enqueue(pkt(id, 100), Instant::ZERO, &mut d);
    }
    assert_eq!(d.len(), 1);
    assert_eq!(d.since(0)[0].1, DropReason::QueueFull);
    assert_eq!(q.stats().drops, 1);
}

#[test]
fn depth_limit_is_eight_levels() {
    let mut q = htb(HtbGlob::default());
    add(&mut q, "1:1", "1:", rated(10 * MBIT));
    for i in 2..=8 {
        add(
            &mut q,
            &format!("1:{i}"),
            &format!("1:{}", i - 1),
            rate_ceil(MBIT, 10 * MBIT),
        );
    }
    let d = q.dump(Instant::ZERO);
    assert_eq!(opts(class(&d, "1:1")).level, 7);
    assert_eq!(opts(class(&d, "1:7")).level, 1);
    assert_eq!(opts(class(&d, "1:8")).level, 0);
    let e = add_err(&mut q, "1:9", "1:8", rated(MBIT));
    assert!(e.says("tree is too deep"), "{e:?}");
    // Sending through all eight levels works.
    let r = run(&mut q, Instant::ZERO, SEC / 10, &[cid("1:8")], 1514);
    let rate = mbit(r.bytes[&cid("1:8")], r.end.nanos());
    assert!((rate - 10.0).abs() < 0.3, "{rate}");
}

#[test]
fn class_change_at_runtime() {
    let mut q = htb(default(0x10));
    add(&mut q, "1:10", "1:", rated(10 * MBIT));
    let c = cid("1:10");
    let r = run(&mut q, Instant::ZERO, SEC / 2, &[c], 1514);
    assert!((mbit(r.bytes[&c], r.end.nanos()) - 10.0).abs() < 0.3);
    q.change_class(c, &ClassOptions::Htb(rated(20 * MBIT)))
        .unwrap();
    assert_eq!(q.take_warnings().len(), 1, "quantum 250000 clamped");
    let start = r.end;
    let r = run(&mut q, start, SEC / 2, &[c], 1514);
    let rate = mbit(r.bytes[&c], r.end.nanos() - start.nanos());
    assert!((rate - 20.0).abs() < 0.5, "{rate}");
    assert_eq!(opts(&q.dump(r.end).classes[0]).rate.rate, 20 * MBIT);
    let e = q
        .change_class(cid("1:77"), &ClassOptions::Htb(rated(MBIT)))
        .unwrap_err();
    assert!(e.errno == Errno::ENOENT && e.message.is_none(), "{e:?}");
    // The kernel's EINVAL for a zero rate (words that do not parse are
    // refused by tc before: crate::tc::opts::htb's tests).
    assert!(q.change_class(c, &ClassOptions::Htb(rated(0))).is_err());
    assert!(q.change_class(c, &ClassOptions::None).is_err());
    assert_eq!(opts(&q.dump(r.end).classes[0]).rate.rate, 20 * MBIT);
}

#[test]
fn delete_class_purges_and_restores_leaf() {
    let mut q = htb(HtbGlob::default());
    add(&mut q, "1:1", "1:", rated(MBIT));
    add(&mut q, "1:10", "1:1", rated(MBIT));
    let mut d = Drops::new();
    for id in 0..4 {
        q.enqueue(to(cid("1:10"), id, 1000), Instant::ZERO, &mut d);
    }
    assert!(q
        .delete_class(cid("1:1"), &mut d)
        .unwrap_err()
        .says("HTB class in use"));
    q.dequeue(Instant::ZERO, &mut d).unwrap();
    assert_eq!(q.qlen(), 3);
    q.delete_class(cid("1:10"), &mut d).unwrap();
    assert_eq!(d.len(), 3);
    assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::QdiscReset));
    assert_eq!((q.qlen(), q.backlog(), q.stats().drops), (0, 0, 3));
    assert_eq!(q.next_wakeup(Instant::ZERO), None);
    // 1:1 is a leaf again, with a fresh bucket and queue.
    let dump = q.dump(Instant::ZERO);
    assert_eq!(dump.classes.len(), 1);
    assert_eq!(
        (opts(&dump.classes[0]).level, opts(&dump.classes[0]).prio),
        (0, 0)
    );
    let x = hx(&dump.classes[0]);
    assert_eq!((x.tokens, x.ctokens), (200000, 200000));
    q.enqueue(to(cid("1:1"), 9, 1000), Instant::ZERO, &mut d);
    assert_eq!(q.dequeue(Instant::ZERO, &mut d).unwrap().meta.id, 9);
    assert!(q.delete_class(cid("1:10"), &mut d).is_err());
}

#[test]
fn adding_a_child_to_a_leaf_purges_its_queue() {
    let mut q = htb(HtbGlob::default());
    add(&mut q, "1:1", "1:", rated(MBIT));
    let mut d = Drops::new();
    for id in 0..3 {
        q.enqueue(to(cid("1:1"), id, 1000), Instant::ZERO, &mut d);
    }
    add(&mut q, "1:10", "1:1", rated(MBIT));
    assert_eq!((q.qlen(), q.stats().drops), (0, 3));
    // The purged frames reach the next drop sink.
    assert_eq!(q.dequeue(Instant::ZERO, &mut d).map(|p| p.meta.id), None);
    assert_eq!(d.len(), 3);
    // Frames for the now-inner class go to the default (direct here).
    q.enqueue(to(cid("1:1"), 5, 1000), Instant::ZERO, &mut d);
    assert_eq!(q.direct_packets(), 1);
}

#[test]
fn two_frame_burst_after_idle_with_default_burst() {
    let mut q = htb(default(1));
    add(&mut q, "1:1", "1:", rated(MBIT));
    let mut d = Drops::new();
    let t0 = Instant::from_millis(500);
    for id in 0..4 {
        q.enqueue(pkt(id, 1514), t0, &mut d);
    }
    let mut out = Vec::new();
    let mut t = t0;
    while out.len() < 4 {
        match q.dequeue(t, &mut d) {
            Some(_) => out.push(t.nanos() - t0.nanos()),
            None => t = q.next_wakeup(t).unwrap(),
        }
    }
    // 1600 B of tokens: the first frame leaves 86 B, the second is an
    // overdraft; then each frame waits for 1514 B of tokens.
    assert_eq!(out, vec![0, 0, 11_424_000, 11_424_000 + 12_112_000]);
    let d = q.dump(t);
    assert_eq!(d.stats.overlimits, 3);
    assert_eq!(d.classes[0].stats.unwrap().overlimits, 3);
}

#[test]
fn graft_replaces_leaf_qdisc_and_keeps_counts() {
    let mut q = htb(default(0x10));
    add(&mut q, "1:10", "1:", rated(100 * MBIT));
    let mut d = Drops::new();
    for id in 0..3 {
        q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d);
    }
    let ctx = q.child_ctx(cid("10:"), cid("1:10"));
    let new = Box::new(Fifo::with_limit(FifoKind::Bfifo, ctx, 100_000));
    let mut old = q.graft(cid("1:10"), new).unwrap().unwrap();
    assert_eq!(old.qlen(), 3);
    assert_eq!(q.qlen(), 0);
    // The caller moves the frames on.
    for p in old.drain_all() {
        q.enqueue(p, Instant::ZERO, &mut d);
    }
    assert_eq!(q.qlen(), 3);
    let dump = q.dump(Instant::ZERO);
    assert_eq!(dump.classes[0].leaf, Some(cid("10:")));
    assert_eq!(dump.children.len(), 1);
    assert_eq!(dump.children[0].kind, "bfifo");
    assert_eq!(q.dequeue(Instant::ZERO, &mut d).unwrap().meta.id, 0);
    // Changing a child directly through child_mut is noticed.
    let child = q.child_mut(cid("1:10")).unwrap();
    child
        .change(
            &crate::qdisc::QdiscOptions::Fifo(crate::qdisc::fifo::FifoOptions { limit: 0 }),
            Instant::ZERO,
            &mut d,
        )
        .unwrap();
    assert_eq!(q.qlen(), 0);
    assert_eq!(q.dequeue(Instant::ZERO, &mut d).map(|p| p.meta.id), None);
    assert_eq!(q.next_wakeup(Instant::ZERO), None);
    add(&mut q, "1:1", "1:", rated(MBIT));
    add(&mut q, "1:2", "1:1", rated(MBIT));
    let fifo = Box::new(Fifo::new(FifoKind::Pfifo, ctx));
    assert!(q.graft(cid("1:1"), fifo).err().unwrap().says("inner class"));
}

#[test]
fn shaping_child_under_a_leaf_sets_the_wakeup() {
    let mut q = htb(default(0x10));
    add(&mut q, "1:10", "1:", rated(100 * MBIT));
    let ctx = q.child_ctx(cid("10:"), cid("1:10"));
    let tbf = crate::qdisc::tbf::Tbf::build(
        ctx,
        &crate::qdisc::QdiscOptions::Tbf(crate::qdisc::tbf::TbfOptions {
            rate: RateSpec::new(125_000),
            limit: 100_000,
            burst: Some(1514),
            ..Default::default()
        }),
    );
    q.graft(cid("1:10"), Box::new(tbf.unwrap())).unwrap();
    let mut d = Drops::new();
    for id in 0..3 {
        q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d);
    }
    assert!(q.dequeue(Instant::ZERO, &mut d).is_some());
    assert!(q.dequeue(Instant::ZERO, &mut d).is_none());
    // TBF releases the next 1000 B frame after 486 B of tokens: 3.888 ms.
    assert_eq!(
        q.next_wakeup(Instant::ZERO),
        Some(Instant::from_nanos(3_888_000))
    );
    assert!(q.dequeue(Instant::from_nanos(3_888_000), &mut d).is_some());
}

#[test]
fn peek_parks_and_reset_drops_everything() {
    let mut q = htb(default(0x10));
    add(&mut q, "1:10", "1:", rated(MBIT));
    let mut d = Drops::new();
    for id in 0..3 {
        q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d);
    }
    q.enqueue(to(cid("1:"), 9, 100), Instant::ZERO, &mut d);
    assert_eq!(q.peek(Instant::ZERO, &mut d).unwrap().meta.id, 9);
    assert_eq!(q.qlen(), 4);
    assert_eq!(q.stats().packets, 0);
    assert_eq!(q.dequeue(Instant::ZERO, &mut d).unwrap().meta.id, 9);
    assert_eq!(q.stats().packets, 1);
    let mut r = Drops::new();
    q.reset(&mut r);
    assert_eq!((r.len(), q.qlen(), q.backlog()), (3, 0, 0));
    assert!(q.dequeue(Instant::ZERO, &mut d).is_none());
}

/// Random traffic, class edits and polling: next_wakeup is never in
/// the past, qlen/backlog match the frames, conservation holds.
#[test]
fn random_operations_keep_invariants() {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(42);
    let mut q = htb(HtbGlob {
        direct_qlen: Some(20),
        ..default(0x11)
    });
    add(&mut q, "1:1", "1:", rate_ceil(20 * MBIT, 40 * MBIT));
    add(&mut q, "1:2", "1:1", rate_ceil(5 * MBIT, 40 * MBIT));
    add(
        &mut q,
        "1:10",
        "1:2",
        HtbClassOptions {
            prio: 1,
            ..rate_ceil(MBIT, 10 * MBIT)
        },
    );
    add(&mut q, "1:11", "1:2", rate_ceil(2 * MBIT, 30 * MBIT));
    add(
        &mut q,
        "1:12",
        "1:1",
        HtbClassOptions {
            prio: 2,
            ..rate_ceil(3 * MBIT, 3 * MBIT)
        },
    );
    add(&mut q, "1:30", "1:", rate_ceil(MBIT, 2 * MBIT));
    let targets = [
        cid("1:10"),
        cid("1:11"),
        cid("1:12"),
        cid("1:30"),
        cid("1:"),
        0,
        cid("1:2"),
    ];
    let mut d = Drops::new();
    let mut t = Instant::ZERO;
    let (mut offered, mut sent) = (0u64, 0u64);
    for step in 0..20_000u64 {
        match rng.gen_range(0..10) {
            0..=4 => {
                let c = targets[rng.gen_range(0..targets.len())];
                q.enqueue(to(c, step, rng.gen_range(64..1515)), t, &mut d);
                offered += 1;
            }
            5..=7 => {
                if q.dequeue(t, &mut d).is_some() {
                    sent += 1;
                }
            }
            8 => {
                if let Some(w) = q.next_wakeup(t) {
                    assert!(w >= t);
                    assert!(w <= t + 5 * SEC);
                    t = w;
                }
            }
            _ => {
                t += rng.gen_range(0..2_000_000);
                if step % 997 == 0 {
                    let r = rng.gen_range(1..30) * MBIT;
                    q.change_class(cid("1:11"), &ClassOptions::Htb(rate_ceil(r, 40 * MBIT)))
                        .unwrap();
                }
            }
        }
        assert_eq!(
            offered,
            sent + d.len() as u64 + q.qlen() as u64,
            "step {step}"
        );
    }
    let held = q.drain_all();
    assert_eq!(held.len() as u64, offered - sent - d.len() as u64);
    assert_eq!(q.backlog(), 0);
}

/// `tc filter add ... parent PARENT protocol ip prio PRIO u32 match ip
/// dport DPORT 0xffff flowid FLOWID`.
fn dport_filter(parent: &str, prio: u16, dport: u16, flowid: &str) -> Filter {
    let dport = Match::new(Family::V4, Field::Dport, u128::from(dport), 0xffff);
    Filter {
        parent: Some(cid(parent)),
        prio,
        ..Filter::new(
            FilterProtocol::Ip,
            FilterKind::U32,
            vec![dport],
            cid(flowid),
        )
    }
}

/// `tc filter add ... parent PARENT protocol all prio 1 matchall flowid
/// FLOWID`.
fn matchall(parent: &str, flowid: &str) -> Filter {
    Filter {
        parent: Some(cid(parent)),
        prio: 1,
        ..Filter::new(
            FilterProtocol::All,
            FilterKind::Matchall,
            Vec::new(),
            cid(flowid),
        )
    }
}

fn ip_pkt(id: u64, dport: u16) -> Packet {
    let mut p = pkt(id, 100);
    p.meta.l3 = crate::packet::L3::Ipv4 { offset: 14 };
    p.meta.flow.dst_port = dport;
    p
}

/// Enqueues one frame and reports where it went.
fn landed(q: &mut Htb, p: Packet) -> Option<Handle> {
    let mut d = Drops::new();
    let direct = q.direct_packets();
    q.enqueue(p, Instant::ZERO, &mut d);
    if q.direct_packets() > direct {
        return None;
    }
    let dump = q.dump(Instant::ZERO);
    let c = dump
        .classes
        .iter()
        .find(|c| c.stats.unwrap().qlen > 0)
        .unwrap();
    let id = c.classid;
    q.reset(&mut d);
    Some(id)
}

#[test]
fn filters_steer_to_leaves_through_inner_classes() {
    let mut q = htb(default(0x30));
    add(&mut q, "1:1", "1:", rated(10 * MBIT));
    add(&mut q, "1:10", "1:1", rated(MBIT));
    add(&mut q, "1:20", "1:1", rated(MBIT));
    add(&mut q, "1:30", "1:", rated(MBIT));
    q.add_filter(dport_filter("1:", 1, 5001, "1:10")).unwrap();
    q.add_filter(dport_filter("1:", 2, 22, "1:")).unwrap();
    q.add_filter(dport_filter("1:", 3, 80, "1:1")).unwrap();
    q.add_filter(Filter {
        skbedit_priority: Some(7),
        ..dport_filter("1:", 4, 443, "1:20")
    })
    .unwrap();
    q.add_filter(matchall("1:1", "1:20")).unwrap();
    assert_eq!(landed(&mut q, ip_pkt(1, 5001)), Some(cid("1:10")));
    assert_eq!(
        landed(&mut q, ip_pkt(2, 22)),
        None,
        "flowid 1: is the direct queue"
    );
    assert_eq!(
        landed(&mut q, ip_pkt(3, 80)),
        Some(cid("1:20")),
        "inner class filters"
    );
    assert_eq!(landed(&mut q, ip_pkt(4, 9)), Some(cid("1:30")), "default");
    // skb->priority naming an inner class starts at its filters.
    let mut p = ip_pkt(5, 9);
    p.meta.priority = cid("1:1");
    assert_eq!(landed(&mut q, p), Some(cid("1:20")));
    // skbedit rewrites skb->priority.
    let mut d = Drops::new();
    q.enqueue(ip_pkt(6, 443), Instant::ZERO, &mut d);
    assert_eq!(q.dequeue(Instant::ZERO, &mut d).unwrap().meta.priority, 7);
    let e = q.add_filter(matchall("1:99", "1:20"));
    assert!(e.unwrap_err().says("does not exist"));
}

#[test]
fn aqm_child_drops_count_in_htb() {
    let mut q = htb(default(0x10));
    add(&mut q, "1:10", "1:", rated(MBIT));
    let ctx = q.child_ctx(cid("10:"), cid("1:10"));
    let codel = crate::qdisc::codel::CodelQdisc::new(ctx);
    q.graft(cid("1:10"), Box::new(codel)).unwrap();
    let t = drain_codel_child(&mut q, 150);
    assert_eq!(
        q.dump(t).classes[0].stats.unwrap().drops,
        0,
        "class drops are enqueue drops"
    );
}

#[test]
fn extreme_configs_do_not_overflow() {
    let mut q = htb(HtbGlob {
        rate2quantum: u32::MAX,
        ..default(1)
    });
    let atm_8bit = RateSpec {
        rate: 1,
        overhead: u16::MAX,
        mpu: u16::MAX,
        linklayer: LinkLayer::Atm,
    };
    add(
        &mut q,
        "1:1",
        "1:",
        // rate 8bit burst 4294967295 cburst 4294967295 overhead 65535
        // mpu 65535 linklayer atm
        HtbClassOptions {
            rate: atm_8bit,
            ceil: atm_8bit,
            buffer: bucket(1, u64::from(u32::MAX)),
            cbuffer: bucket(1, u64::from(u32::MAX)),
            ..HtbClassOptions::default()
        },
    );
    // rate 100tbit quantum 4294967295: tc's default burst is rate / HZ +
    // mtu, 12500 + 1600 B.
    let tbit100 = 12_500_000_000_000;
    add(
        &mut q,
        "1:2",
        "1:",
        HtbClassOptions {
            quantum: u32::MAX,
            buffer: bucket(tbit100, 14_100),
            cbuffer: bucket(tbit100, 14_100),
            ..rated(tbit100)
        },
    );
    let mut d = Drops::new();
    for id in 0..3 {
        q.enqueue(pkt(id, 1514), Instant::ZERO, &mut d);
        q.enqueue(to(cid("1:2"), id, 1514), Instant::ZERO, &mut d);
    }
    for t in [0, 1, 1 << 40, 1 << 62] {
        let t = Instant::from_nanos(t);
        while q.dequeue(t, &mut d).is_some() {}
        let w = q.next_wakeup(t);
        assert!(w.is_none_or(|w| w >= t && w <= t + 5 * SEC));
    }
    let _ = q.dump(Instant::ZERO);
}

/// Leaves under two inner classes borrow from the root through two
/// levels of feeds: DRR over the nested feed pointers gives each leaf
/// the same share of the excess.
#[test]
fn nested_feeds_share_excess_evenly() {
    let mut q = htb(HtbGlob::default());
    add(&mut q, "1:1", "1:", rated(100 * MBIT));
    add(&mut q, "1:a", "1:1", rate_ceil(10 * MBIT, 100 * MBIT));
    add(&mut q, "1:b", "1:1", rate_ceil(10 * MBIT, 100 * MBIT));
    let leaves = ["1:a1", "1:a2", "1:b1", "1:b2"];
    for l in leaves {
        add(
            &mut q,
            l,
            &l[..3],
            HtbClassOptions {
                quantum: 1514,
                ..rate_ceil(MBIT, 100 * MBIT)
            },
        );
    }
    let ids: Vec<Handle> = leaves.iter().map(|l| cid(l)).collect();
    let r = run(&mut q, Instant::ZERO, SEC, &ids, 1514);
    let rates: Vec<f64> = ids
        .iter()
        .map(|c| mbit(r.bytes[c], r.end.nanos()))
        .collect();
    eprintln!("nested feeds: {rates:?}");
    for rate in &rates {
        assert!((rate - 25.0).abs() < 0.5, "{rates:?}");
    }
    let d = q.dump(r.end);
    let (a, root) = (class(&d, "1:a"), class(&d, "1:1"));
    assert!(hx(a).lends > 0 && hx(root).lends > hx(a).lends);
}

#[test]
fn thousand_classes_share_fairly() {
    let mut q = htb(HtbGlob::default());
    add(&mut q, "1:1", "1:", rated(1000 * MBIT));
    let mut leaves = Vec::new();
    for i in 0..1000u16 {
        let id = format!("1:{:x}", 0x100 + i);
        add(
            &mut q,
            &id,
            "1:1",
            HtbClassOptions {
                quantum: 1514,
                ..rate_ceil(100 * KBIT, 1000 * MBIT)
            },
        );
        leaves.push(cid(&id));
    }
    let r = run(&mut q, Instant::ZERO, SEC / 10, &leaves, 1514);
    let counts: Vec<u64> = leaves
        .iter()
        .map(|c| r.bytes.get(c).copied().unwrap_or(0) / 1514)
        .collect();
    let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
    assert!(max - min <= 2, "DRR spread {min}..{max}");
    let total = mbit(r.bytes.values().sum(), r.end.nanos());
    assert!(total > 950.0, "{total}");
}
