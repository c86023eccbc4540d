//! RED through the real path with TCP: with `ecn` it marks ECN-capable
//! frames where it would drop them, with `harddrop` it drops them above
//! `max` all the same, and without `ecn` every decision is a drop
//! (net/sched/sch_red.c `red_enqueue`).

use super::load;
use bloatbox::sim::{self, Scenario};

/// RED's xstats from the direction's `tc -s` text: marked, early, pdrop.
fn xstats(tc: &str) -> (u64, u64, u64) {
    let line = tc
        .lines()
        .find(|l| l.trim_start().starts_with("marked "))
        .unwrap_or_else(|| panic!("no RED xstats in {tc}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    let n = |i: usize| w[i].parse::<u64>().unwrap();
    (n(1), n(3), n(5))
}

/// The scenario with the RED line's flags replaced by `flags`.
fn with_flags(flags: &str) -> Scenario {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/red_ecn.toml");
    let text = std::fs::read_to_string(path).unwrap();
    Scenario::from_toml(&text.replace(
        "bandwidth 20mbit ecn\"",
        &format!("bandwidth 20mbit {flags}\""),
    ))
    .unwrap()
}

#[test]
fn red_marks_with_ecn_drops_with_harddrop_and_without_ecn() {
    let ecn = sim::run(&load("red_ecn.toml")).unwrap();
    let l2r = &ecn.directions[0];
    println!("{}\n{}", ecn.table(), l2r.tc);
    let (marked, early, pdrop) = xstats(&l2r.tc);
    assert!(marked > 50, "marks {marked}");
    // Marked frames reach the receiver (but those queued at the end).
    assert!(
        l2r.ce_marks <= marked && marked - l2r.ce_marks < 20,
        "{} of {marked} marks delivered",
        l2r.ce_marks
    );
    // Only frames that are not ECN-capable (SYNs, retransmissions) can be
    // dropped early with ecn on.
    let red_drops = l2r.drops.get("red_early").copied().unwrap_or(0)
        + l2r.drops.get("red_forced").copied().unwrap_or(0);
    assert_eq!(red_drops, early);
    assert!(early * 10 < marked, "{early} early drops vs {marked} marks");
    assert_eq!(pdrop, 0, "the 150000-byte limit is never reached");
    assert!(l2r.utilisation > 0.85, "{}", l2r.utilisation);

    // Without ecn: the same decisions are drops.
    let plain = sim::run(&with_flags("")).unwrap();
    let l2r = &plain.directions[0];
    let (marked, early, _) = xstats(&l2r.tc);
    assert_eq!((marked, l2r.ce_marks), (0, 0));
    assert!(early > 50, "early drops {early}");
    assert_eq!(
        l2r.drops.get("red_early").copied().unwrap_or(0)
            + l2r.drops.get("red_forced").copied().unwrap_or(0),
        early
    );

    // harddrop: above max even ECN-capable frames are dropped (forced), in
    // the band they are still marked.
    let hard = sim::run(&with_flags("ecn harddrop")).unwrap();
    let l2r = &hard.directions[0];
    println!("{}", l2r.tc);
    let (marked, early, _) = xstats(&l2r.tc);
    assert!(marked > 0, "in-band marks {marked}");
    let forced = l2r.drops.get("red_forced").copied().unwrap_or(0);
    assert!(forced > 0, "no forced drop above max: {}", l2r.tc);
    assert!(early >= forced);
    assert_eq!(
        sim::run(&load("red_ecn.toml")).unwrap().trace_hash,
        ecn.trace_hash
    );
}
