//! DRR and ETS through the real path with UDP load: DRR classes of quanta
//! 1:2:4 share a bottleneck in that ratio (net/sched/sch_drr.c
//! `drr_dequeue`), and ETS's strict band starves its bandwidth-sharing
//! bands while it has frames (net/sched/sch_ets.c `ets_qdisc_dequeue`).

use super::load;
use bloatbox::qdisc::QdiscDump;
use bloatbox::sim;

/// Frames each class of `q` sent, in class order.
fn sent(q: &QdiscDump) -> Vec<u64> {
    q.classes.iter().map(|c| c.stats.unwrap().packets).collect()
}

/// tests/scenarios/drr_shares.toml: 1000-byte frames, quanta 1000, 2000
/// and 4000, every class backlogged (each offers 8 of the link's 10
/// Mbit/s): every round sends 1, 2 and 4 frames, so over the run the
/// classes' counts stay within a round of 1:2:4.
#[test]
fn drr_quanta_1_2_4_share_the_link_1_2_4() {
    let r = sim::run(&load("drr_shares.toml")).unwrap();
    let d = &r.directions[0];
    println!("{}\n{}", r.table(), d.tc);
    let q = &d.qdisc;
    assert_eq!(q.kind, "drr");
    let s = sent(q);
    // 3 s at 10 Mbit/s is some 3700 frames of 1000 bytes (and overhead).
    let total: u64 = s.iter().sum();
    assert!(total > 3000, "{s:?}");
    let round = total / 7;
    for (i, w) in [1u64, 2, 4].into_iter().enumerate() {
        let want = round * w;
        assert!(s[i].abs_diff(want) <= 4 + w, "class {}: {s:?}", i + 1);
    }
    assert!(d.utilisation > 0.95, "{}", d.utilisation);
    assert!(d.tc.contains(" deficit "), "{}", d.tc);
}

/// tests/scenarios/ets_strict.toml: bands 1 and 2 share 1:2 until the
/// strict flow starts at 2 s; from then on they send nothing (but a frame
/// that was on its way), while band 0 takes the whole link.
#[test]
fn ets_strict_band_starves_the_sharing_bands() {
    let r = sim::run(&load("ets_strict.toml")).unwrap();
    let d = &r.directions[0];
    println!("{}\n{}", r.table(), d.tc);
    let at2 = sent(&r.snapshots[0].directions[0].qdisc);
    let end = sent(&d.qdisc);
    assert_eq!(at2[0], 0, "{at2:?}");
    // Before 2 s: 1:2, within the first rounds' start-up (the queues
    // fill from empty; 836 and 1667 frames at seed 4).
    assert!(at2[2].abs_diff(2 * at2[1]) <= 8, "{at2:?}");
    assert!(at2[1] > 500, "{at2:?}");
    // After: the sharing bands are starved.
    assert!(end[1] - at2[1] <= 2, "{at2:?} -> {end:?}");
    assert!(end[2] - at2[2] <= 2, "{at2:?} -> {end:?}");
    assert!(end[0] > 2000, "{end:?}");
}
