//! Unit tests of the `ets` qdisc at explicit times, with expected values
//! worked out by hand from net/sched/sch_ets.c's functions each test cites.

use super::*;
use crate::qdisc::tc_h_minor;
use crate::qdisc::testutil::{flow_pkt, pkt};

const H: Handle = 0x0001_0000;
const T: Instant = Instant::ZERO;

fn ctx() -> QdiscCtx {
    QdiscCtx {
        handle: H,
        ..QdiscCtx::default()
    }
}

fn cid(minor: u16) -> Handle {
    tc_h_make(1, minor)
}

fn opts(bands: Option<u8>, strict: Option<u8>, quanta: &[u32], priomap: &[u8]) -> EtsOptions {
    EtsOptions {
        bands,
        strict,
        quanta: quanta.to_vec(),
        priomap: priomap.to_vec(),
    }
}

fn ets(o: EtsOptions) -> Result<Ets, Refusal> {
    Ets::build(ctx(), &QdiscOptions::Ets(o))
}

/// A frame steered to band `minor - 1` by skb->priority 1:minor.
fn to_band(id: u64, len: u32, minor: u16) -> Packet {
    let mut p = flow_pkt(id, len, minor);
    p.meta.priority = cid(minor);
    p
}

fn drain(q: &mut Ets) -> Vec<u64> {
    let mut d = Drops::new();
    std::iter::from_fn(|| q.dequeue(T, &mut d))
        .map(|p| p.meta.id)
        .collect()
}

fn band_lens(q: &Ets) -> Vec<u32> {
    q.bands.iter().map(|b| b.child.qlen()).collect()
}

#[test]
fn strict_band_first_then_deficit_round_robin() {
    // strict 1 quanta 1000 2000: band 0 strict, bands 1 and 2 share.
    // Bands 1 and 2 join the active list in that order (first frames).
    // ets_qdisc_dequeue by hand, once the strict band is empty:
    //  b1 B1 1000 <= 1000 -> B1 (0); B2 > 0 -> 1000, tail
    //  b2 C1 <= 2000 -> C1 (1000); C2 -> C2 (0); C3 > 0 -> 2000, tail
    //  b1 B2 -> (0); B3 > 0 -> 1000, tail
    //  b2 C3 (1000), C4 (0), empty: off the list
    //  b1 B3 (0); B4 > 0 -> 1000, tail (alone); B4
    let mut q = ets(opts(Some(3), Some(1), &[1000, 2000], &[])).unwrap();
    let mut d = Drops::new();
    for i in 0..4 {
        q.enqueue(to_band(10 + i, 1000, 2), T, &mut d);
    }
    for i in 0..4 {
        q.enqueue(to_band(20 + i, 1000, 3), T, &mut d);
    }
    q.enqueue(to_band(1, 100, 1), T, &mut d);
    q.enqueue(to_band(2, 100, 1), T, &mut d);
    assert_eq!(band_lens(&q), [2, 4, 4]);
    assert_eq!(drain(&mut q), [1, 2, 10, 20, 21, 11, 22, 23, 12, 13]);
    assert!(d.is_empty());
}

#[test]
fn a_busy_strict_band_starves_the_sharing_bands() {
    let mut q = ets(opts(Some(3), Some(1), &[], &[])).unwrap();
    let mut d = Drops::new();
    for i in 0..20 {
        q.enqueue(to_band(1000 + i, 500, 2 + (i % 2) as u16), T, &mut d);
    }
    // Under load: a strict frame arrives before each dequeue.
    for next in 0..100 {
        q.enqueue(to_band(next, 500, 1), T, &mut d);
        let p = q.dequeue(T, &mut d).unwrap();
        assert!(p.meta.id < 1000, "sharing band's {} went first", p.meta.id);
    }
    assert_eq!(band_lens(&q), [0, 10, 10]);
    // Then the sharing bands alternate (equal quanta of psched_mtu 1514:
    // three 500-byte frames a turn).
    let order = drain(&mut q);
    assert_eq!(
        &order[..6],
        [1000, 1002, 1004, 1001, 1003, 1005],
        "{order:?}"
    );
}

#[test]
fn defaults_priomap_to_the_last_band_and_quanta_to_psched_mtu() {
    let q = ets(opts(Some(4), Some(1), &[3000], &[])).unwrap();
    let o = q.options();
    assert_eq!(o.bands, Some(4));
    assert_eq!(o.strict, Some(1));
    assert_eq!(o.quanta, [3000, 1514, 1514]);
    assert_eq!(o.priomap, [3; 16]);
    let dump = q.dump(T);
    assert_eq!(dump.classes.len(), 4);
    assert_eq!(
        dump.classes[0].options,
        ClassOptions::Ets(EtsClassOptions { quantum: None })
    );
    assert_eq!(
        dump.classes[1].options,
        ClassOptions::Ets(EtsClassOptions {
            quantum: Some(3000)
        })
    );
    assert_eq!(dump.classes[3].parent, TC_H_ROOT);
    // No strict band: the dump leaves out TCA_ETS_NSTRICT.
    let q = ets(opts(Some(2), None, &[], &[1, 0])).unwrap();
    let o = q.options();
    assert_eq!((o.strict, o.priomap[..3].to_vec()), (None, vec![1, 0, 1]));
    // All strict: no quanta.
    let q = ets(opts(Some(8), Some(8), &[], &[])).unwrap();
    assert!(q.options().quanta.is_empty());
}

#[test]
fn classify_is_prios_priority_filters_then_priomap() {
    // bands 3 priomap 2 1 0: priority 1 -> band 1; priority 1:3 -> band 2;
    // priority 1:9 (no band) -> priomap[0] = band 2; a priority with
    // another major counts as 0 -> band 2.
    let mut q = ets(opts(Some(3), None, &[], &[2, 1, 0])).unwrap();
    let mut d = Drops::new();
    let with_priority = |id, prio: u32| {
        let mut p = pkt(id, 100);
        p.meta.priority = prio;
        p
    };
    q.enqueue(with_priority(1, 1), T, &mut d);
    assert_eq!(band_lens(&q), [0, 1, 0]);
    q.enqueue(with_priority(2, cid(3)), T, &mut d);
    q.enqueue(with_priority(3, cid(9)), T, &mut d);
    q.enqueue(with_priority(4, tc_h_make(7, 2)), T, &mut d);
    assert_eq!(band_lens(&q), [0, 1, 3]);
    q.enqueue(with_priority(5, 0x12), T, &mut d);
    // 0x12 & TC_PRIO_MAX = 2: priomap[2] = band 0.
    assert_eq!(band_lens(&q), [1, 1, 3]);
}

#[test]
fn qdisc_options_are_refused_as_ets_qdisc_change_does() {
    for (o, msg) in [
        (
            opts(None, None, &[], &[]),
            "sch_ets: Number of bands is a required argument.",
        ),
        (
            opts(Some(0), None, &[], &[]),
            "sch_ets: Invalid number of bands.",
        ),
        (
            opts(Some(17), None, &[], &[]),
            "sch_ets: Invalid number of bands.",
        ),
        (
            opts(Some(2), Some(3), &[], &[]),
            "sch_ets: Invalid number of strict bands.",
        ),
        (
            opts(Some(2), None, &[], &[0; 17]),
            "sch_ets: Too many priorities in ETS priomap.",
        ),
        (
            opts(Some(2), None, &[], &[0, 2]),
            "sch_ets: Invalid band number in ETS priomap.",
        ),
        (
            opts(Some(2), Some(1), &[10, 10], &[]),
            "sch_ets: ETS quanta has more values than bands.",
        ),
        (
            opts(Some(2), None, &[10, 0], &[]),
            "ETS quantum cannot be zero.",
        ),
    ] {
        let e = ets(o.clone()).err().unwrap();
        assert_eq!(e.errno, Errno::EINVAL, "{o:?}");
        assert_eq!(e.message.as_deref(), Some(msg), "{o:?}");
    }
    let e = Ets::build(ctx(), &QdiscOptions::None).err().unwrap();
    assert_eq!((e.errno, e.message.is_none()), (Errno::EINVAL, true));
    // A refused change leaves the qdisc as it was.
    let mut q = ets(opts(Some(3), None, &[], &[])).unwrap();
    let mut d = Drops::new();
    let bad = QdiscOptions::Ets(opts(Some(2), Some(4), &[], &[]));
    assert!(q.change(&bad, T, &mut d).is_err());
    assert_eq!(q.options().bands, Some(3));
    q.change(&QdiscOptions::None, T, &mut d).unwrap();
    assert_eq!(q.options().bands, Some(3));
}

#[test]
fn change_purges_bands_given_up_and_moves_bands_between_strict_and_shared() {
    let mut q = ets(opts(Some(4), Some(2), &[], &[])).unwrap();
    let mut d = Drops::new();
    for minor in 1..=4u16 {
        q.enqueue(to_band(minor as u64, 100, minor), T, &mut d);
    }
    // bands 3, none strict: band 3 (1:4) is purged as drops; bands 0 and
    // 1 join the active list behind band 2 with their new quanta.
    let o = QdiscOptions::Ets(opts(Some(3), None, &[500, 600, 700], &[]));
    q.change(&o, T, &mut d).unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(q.stats().drops, 1);
    assert_eq!(band_lens(&q), [1, 1, 1]);
    assert_eq!(drain(&mut q), [3, 1, 2]);
    // Back to strict 2: band 2 shares alone; bands 0 and 1 go first.
    for minor in [3u16, 2, 1] {
        q.enqueue(to_band(minor as u64, 100, minor), T, &mut d);
    }
    let o = QdiscOptions::Ets(opts(Some(3), Some(2), &[], &[]));
    q.change(&o, T, &mut d).unwrap();
    assert_eq!(drain(&mut q), [1, 2, 3]);
    // More bands: new ones get a default pfifo.
    let o = QdiscOptions::Ets(opts(Some(5), None, &[], &[]));
    q.change(&o, T, &mut d).unwrap();
    assert_eq!(q.dump(T).classes.len(), 5);
    assert_eq!(q.options().quanta, [1514; 5]);
}

#[test]
fn class_requests_are_refused_as_ets_class_change_does() {
    let mut q = ets(opts(Some(3), Some(1), &[], &[])).unwrap();
    let quantum = |q| ClassOptions::Ets(EtsClassOptions { quantum: q });
    let e = q.add_class(cid(4), H, &quantum(Some(10))).unwrap_err();
    assert_eq!(e.errno, Errno::EOPNOTSUPP);
    assert!(e.says("Fine-grained class addition and removal is not supported."));
    let e = q.change_class(cid(1), &quantum(Some(10))).unwrap_err();
    assert!(
        e.says("Strict bands do not have a configurable quantum."),
        "{e:?}"
    );
    let e = q.change_class(cid(2), &quantum(Some(0))).unwrap_err();
    assert!(e.says("ETS quantum cannot be zero."), "{e:?}");
    let e = q.change_class(cid(2), &ClassOptions::None).unwrap_err();
    assert!(
        e.says("ETS options are required for this operation."),
        "{e:?}"
    );
    // Nothing to configure, on a strict band too.
    q.change_class(cid(1), &quantum(None)).unwrap();
    q.change_class(cid(2), &quantum(Some(2650))).unwrap();
    assert_eq!(q.options().quanta, [2650, 1514]);
    let e = q.delete_class(cid(2), &mut Drops::new()).unwrap_err();
    assert_eq!((e.errno, e.message.is_none()), (Errno::EOPNOTSUPP, true));
    let e = q.chain_mut(Some(cid(1))).unwrap_err();
    assert!(e.says("ETS classid must be zero."), "{e:?}");
    // ets_class_find reads the minor only.
    assert!(q.child_mut(tc_h_make(9, 3)).is_some());
    assert!(q.child_mut(cid(4)).is_none());
    assert_eq!(tc_h_minor(q.classid(2)), 3);
}

#[test]
fn peek_parks_and_class_stats_are_the_childs() {
    let mut q = ets(opts(Some(2), None, &[], &[])).unwrap();
    let mut d = Drops::new();
    q.enqueue(to_band(1, 300, 1), T, &mut d);
    q.enqueue(to_band(2, 400, 2), T, &mut d);
    assert_eq!(q.peek(T, &mut d).unwrap().meta.id, 1);
    assert_eq!((q.qlen(), q.backlog()), (2, 700));
    assert_eq!(q.dequeue(T, &mut d).unwrap().meta.id, 1);
    let dump = q.dump(T);
    let c0 = dump.classes[0].stats.unwrap();
    let c1 = dump.classes[1].stats.unwrap();
    assert_eq!((c0.bytes, c0.packets, c0.qlen), (300, 1, 0));
    assert_eq!((c1.bytes, c1.qlen, c1.backlog), (0, 1, 400));
    q.reset(&mut d);
    assert_eq!((q.qlen(), d.len()), (0, 1));
    assert!(q.dequeue(T, &mut d).is_none());
}
