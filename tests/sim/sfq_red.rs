//! SFQ's per-flow RED through the real path with TCP: with `ecn` the
//! ECN-capable flows are marked CE where RED decides (net/sched/sch_sfq.c
//! `sfq_enqueue`'s RED block), and without it the same decisions are drops
//! counted as `sfq_red_prob` / `sfq_red_forced`.

use bloatbox::sim::{self, Scenario};

/// Four ECN-capable CUBIC flows through sfq with per-flow RED at 20 Mbit/s,
/// RED's words ending in `flags`.
fn scenario(flags: &str) -> Scenario {
    Scenario::from_toml(&format!(
        r#"
seed = 5
duration = "4s"

[link]
rate = "20mbit"
delay = "10ms"

[link.left_to_right]
tc = ["tc qdisc add dev left root sfq redflowlimit 60000 min 6000 max 18000 avpkt 1500 probability 0.1 {flags}"]

[[tcp]]
name = "ecn"
cc = "cubic"
count = 4
ecn = true
start_jitter = "50ms"
"#
    ))
    .unwrap()
}

/// The six `tc_sfqred_stats` counters from the direction's `tc -s` text:
/// prob_mark, prob_mark_head, prob_drop, forced_mark, forced_mark_head,
/// forced_drop.
fn red_stats(tc: &str) -> [u64; 6] {
    let mut out = [0; 6];
    let mut n = 0;
    for line in tc.lines().filter(|l| {
        let l = l.trim_start();
        l.starts_with("prob_mark ") || l.starts_with("forced_mark ")
    }) {
        let w: Vec<&str> = line.split_whitespace().collect();
        for i in 0..3 {
            out[n] = w[2 * i + 1].parse().unwrap();
            n += 1;
        }
    }
    assert_eq!(n, 6, "no sfq RED counters in {tc}");
    out
}

#[test]
fn sfq_red_marks_ecn_flows_and_drops_without_ecn() {
    let ecn = sim::run(&scenario("ecn")).unwrap();
    let l2r = &ecn.directions[0];
    println!("{}\n{}", ecn.table(), l2r.tc);
    let [prob_mark, _, prob_drop, forced_mark, _, forced_drop] = red_stats(&l2r.tc);
    let marks = prob_mark + forced_mark;
    assert!(marks > 20, "marks {marks}");
    assert!(
        l2r.ce_marks > 0 && l2r.ce_marks <= marks,
        "{}",
        l2r.ce_marks
    );
    // Only frames that are not ECN-capable (SYNs, retransmissions) can be
    // dropped by RED with ecn on.
    let red_drops = l2r.drops.get("sfq_red_prob").copied().unwrap_or(0)
        + l2r.drops.get("sfq_red_forced").copied().unwrap_or(0);
    assert_eq!(red_drops, prob_drop + forced_drop);
    assert!(red_drops * 10 < marks, "{red_drops} drops vs {marks} marks");
    assert!(l2r.utilisation > 0.8, "{}", l2r.utilisation);

    let plain = sim::run(&scenario("")).unwrap();
    let l2r = &plain.directions[0];
    println!("{}", l2r.tc);
    let [prob_mark, _, prob_drop, forced_mark, _, forced_drop] = red_stats(&l2r.tc);
    assert_eq!((prob_mark, forced_mark, l2r.ce_marks), (0, 0, 0));
    assert!(prob_drop + forced_drop > 20, "{}", l2r.tc);
    assert_eq!(
        l2r.drops.get("sfq_red_prob").copied().unwrap_or(0),
        prob_drop
    );
    assert_eq!(
        l2r.drops.get("sfq_red_forced").copied().unwrap_or(0),
        forced_drop
    );
}
