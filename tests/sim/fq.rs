//! fq through the real path (net/sched/sch_fq.c): `maxrate 5mbit` paces
//! each of four CUBIC flows to 5 Mbit/s of frames on a 100 Mbit/s link
//! (forwarded frames have no socket, so maxrate is the only pacing rate),
//! throttling each flow in turn and waking at the earliest flow's time;
//! a sparse ping keeps its idle RTT. Prints the figures.

use super::load;
use bloatbox::sim;

#[test]
fn fq_maxrate_paces_each_flow_to_five_mbit() {
    let sc = load("fq_maxrate.toml");
    let r = sim::run(&sc).unwrap();
    let l2r = &r.directions[0];
    println!("{}\n{}", r.table(), l2r.tc);
    let bulk: Vec<f64> = r
        .flows
        .iter()
        .filter(|f| f.name.starts_with("bulk"))
        .map(|f| f.throughput_bps)
        .collect();
    assert_eq!(bulk.len(), 4, "{bulk:?}");
    // Frames at most 5 Mbit/s per flow (and near it after slow start).
    for t in &bulk {
        assert!(
            (3.5e6..=5.05e6).contains(t),
            "a flow's throughput {t}: {bulk:?}"
        );
    }
    let total: f64 = bulk.iter().sum();
    assert!(total < 20.2e6, "{total}");
    assert!(l2r.utilisation < 0.25, "{}", l2r.utilisation);
    // Pacing throttles flows; the qdisc holds no standing queue of the
    // link's size, so the ping stays near the base RTT.
    let x = l2r
        .tc
        .lines()
        .find(|l| l.trim_start().starts_with("gc "))
        .unwrap();
    let throttled: u64 = x
        .split_whitespace()
        .skip_while(|w| *w != "throttled")
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(throttled > 1000, "{x}");
    let ping = r.flow("ping").unwrap().rtt.unwrap();
    assert!(ping.p50 < 12_000_000, "ping p50 {} ns", ping.p50);
    assert_eq!(sim::run(&sc).unwrap().trace_hash, r.trace_hash);
}
