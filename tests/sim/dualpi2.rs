//! DualPI2 through the real path with CUBIC (tests/scenarios/
//! dualpi2_cubic.toml): the simulator's CUBIC is classic traffic, so it
//! shares the C-queue with a ping, and the PI2 controller
//! (net/sched/sch_dualpi2.c `calculate_probability`) holds that queue's
//! delay near its 15 ms target by dropping with p'^2, where a pfifo of
//! the same limit lets it grow to hundreds of ms. Prints the figures.

use super::load;
use bloatbox::sim::{self, Scenario, SimReport};

/// The ping's RTT p50 and p99 in ms.
fn rtt_ms(r: &SimReport) -> (f64, f64) {
    let p = r.flow("ping").and_then(|f| f.rtt).expect("ping replies");
    let ms = |ns: u64| ns as f64 / 1e6;
    (ms(p.p50), ms(p.p99))
}

#[test]
fn dualpi2_holds_the_c_queue_delay_near_its_target_under_cubic() {
    let sc = load("dualpi2_cubic.toml");
    let mut idle = sc.clone();
    idle.tcp.clear();
    let base = rtt_ms(&sim::run(&idle).unwrap()).0;
    let r = sim::run(&sc).unwrap();
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/dualpi2_cubic.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let fifo =
        Scenario::from_toml(&text.replace("root dualpi2\"", "root pfifo limit 10000\"")).unwrap();
    let fifo = sim::run(&fifo).unwrap();
    let (p50, p99) = rtt_ms(&r);
    let l2r = &r.directions[0];
    println!("{}", l2r.tc);
    println!(
        "base RTT {base:.2} ms; dualpi2: ping p50 {p50:.2} p99 {p99:.2} ms (C-queue delay p50 \
         {:.2} ms), utilisation {:.1}%, drops {:?}; pfifo limit 10000: ping p50 {:.2} ms",
        p50 - base,
        l2r.utilisation * 100.0,
        l2r.drops,
        rtt_ms(&fifo).0
    );
    let delay = p50 - base;
    assert!(
        (7.0..=25.0).contains(&delay),
        "DualPI2's median C-queue delay {delay:.2} ms"
    );
    assert!(rtt_ms(&fifo).0 - base > 5.0 * delay);
    // Classic drops by the coupled probability, at dequeue; no overflow.
    let congested = l2r.drops.get("dualpi2_congested").copied().unwrap_or(0);
    assert!(congested > 20, "drops {:?}", l2r.drops);
    assert_eq!(l2r.drops.get("dualpi2_overlimit"), None);
    assert!(l2r.utilisation > 0.85, "{}", l2r.utilisation);
    // The xstats: every frame went to the C-queue, none was marked.
    assert!(l2r.tc.contains("\npkts_in_c "), "{}", l2r.tc);
    assert!(l2r.tc.contains(" pkts_in_l 0 "), "{}", l2r.tc);
    assert!(l2r.tc.contains("\necn_mark 0 step_mark 0\n"), "{}", l2r.tc);
}
