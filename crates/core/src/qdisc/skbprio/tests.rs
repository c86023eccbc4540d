//! skbprio's unit tests: strict order by priority, the drop of the
//! lowest priority's newest frame at the limit, the per-priority counters.

use super::*;
use crate::qdisc::testutil::pkt;

fn prio_pkt(id: u64, prio: u32) -> Packet {
    let mut p = pkt(id, 100);
    p.meta.priority = prio;
    p
}

#[test]
fn the_highest_priority_goes_first_and_the_lowest_makes_room() {
    let o = QdiscOptions::Skbprio(SkbprioOptions { limit: 3 });
    let mut q = Skbprio::build(QdiscCtx::default(), &o).unwrap();
    let mut d = Drops::new();
    let t = Instant::ZERO;
    for (id, prio) in [(0, 1), (1, 5), (2, 1)] {
        assert_eq!(q.enqueue(prio_pkt(id, prio), t, &mut d), Verdict::Queued);
    }
    // Full: priority 1 (the lowest queued) and below are dropped ...
    assert_eq!(q.enqueue(prio_pkt(3, 0), t, &mut d), Verdict::Dropped);
    assert_eq!(q.enqueue(prio_pkt(4, 1), t, &mut d), Verdict::Dropped);
    // ... a higher one takes the place of priority 1's newest frame (2).
    assert_eq!(q.enqueue(prio_pkt(5, 300), t, &mut d), Verdict::Congested);
    let dropped: Vec<u64> = d.drain().map(|(p, _)| p.meta.id).collect();
    assert_eq!(dropped, [3, 4, 2]);
    let order: Vec<u64> = std::iter::from_fn(|| q.dequeue(t, &mut d))
        .map(|p| p.meta.id)
        .collect();
    // 300 counts as 63.
    assert_eq!(order, [5, 1, 0]);
    let dump = q.dump(t);
    assert_eq!(dump.classes.len(), 64);
    let c = |prio: usize| dump.classes[prio].queue;
    assert_eq!((c(0).drops, c(1).drops, c(1).overlimits), (1, 2, 2));
    assert_eq!(dump.classes[63].classid, tc_h_make(0x8001, 64));
    assert_eq!((dump.stats.drops, dump.stats.packets), (3, 3));
    // Empty again: the next frame alone sets both bounds.
    q.enqueue(prio_pkt(6, 2), t, &mut d);
    assert_eq!((q.highest_prio, q.lowest_prio), (2, 2));
}

#[test]
fn the_limit_defaults_to_64_and_changes_without_dropping() {
    let mut q = Skbprio::build(QdiscCtx::default(), &QdiscOptions::None).unwrap();
    let mut d = Drops::new();
    for i in 0..64 {
        q.enqueue(prio_pkt(i, 0), Instant::ZERO, &mut d);
    }
    assert_eq!(
        q.enqueue(prio_pkt(64, 0), Instant::ZERO, &mut d),
        Verdict::Dropped
    );
    let o = QdiscOptions::Skbprio(SkbprioOptions { limit: 10 });
    q.change(&o, Instant::ZERO, &mut d).unwrap();
    assert_eq!(q.qlen(), 64);
}
