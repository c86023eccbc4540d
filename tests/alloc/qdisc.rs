//! No allocation per packet after warm-up, for every discipline at 1, 100 and
//! 10,000 flows: the trees and traffic of the per-packet benchmark
//! (`benches/common/disciplines.rs`), counted by a global allocator that
//! counts per thread (so the test harness's other threads do not disturb the
//! count). After a warm-up of `WARM_UP` enqueue+dequeue steps, the next
//! `MEASURED` steps must not allocate at all.

#[path = "../../benches/common/disciplines.rs"]
mod disciplines;

use bloatbox::packet::Drops;
use bloatbox::qdisc::Qdisc;
use bloatbox::time::Instant;

mod counter;
use counter::thread_allocations;

const WARM_UP: u64 = 40_000;
const MEASURED: u64 = 40_000;
/// Steps between two drains of the drop sink (as the datapath drains it).
const DRAIN_EVERY: u64 = 256;

/// Allocations made by `MEASURED` enqueue+dequeue steps of `flows` flows
/// through `q` (reset first; time goes on from `now`) after a standing queue
/// and `WARM_UP` steps.
fn steady_state_allocations(
    q: &mut dyn Qdisc,
    d: &disciplines::Discipline,
    flows: u32,
    now: &mut Instant,
) -> u64 {
    let mut drops = Drops::new();
    q.reset(&mut drops);
    let standing = (flows as u64).max(64);
    for p in d.frames(flows, 0, standing) {
        q.enqueue(p, *now, &mut drops);
    }
    let mut step = |q: &mut dyn Qdisc, frames: Vec<bloatbox::packet::Packet>| {
        for (i, p) in (1..).zip(frames) {
            *now += 121_120;
            q.enqueue(p, *now, &mut drops);
            drop(q.dequeue(*now, &mut drops));
            if i % DRAIN_EVERY == 0 {
                drops.drain().for_each(drop);
            }
        }
        drops.drain().for_each(drop);
    };
    step(q, d.frames(flows, standing, WARM_UP));
    let frames = d.frames(flows, standing + WARM_UP, MEASURED);
    let before = thread_allocations();
    step(q, frames);
    thread_allocations() - before
}

/// Every discipline allocates less than once per 100 packets in steady
/// state (in practice not at all, except SFQ with 10,000 flows in 65,536
/// buckets, whose colliding slots keep deepening for a long time: each
/// slot's queue grows by doubling up to `depth` 127, so the total is bounded
/// by slots × 7 and falls to zero eventually).
#[test]
fn no_discipline_allocates_per_packet_after_warm_up() {
    let mut failures = Vec::new();
    for d in disciplines::all() {
        let mut q = d.build();
        let mut now = Instant::from_millis(1);
        for flows in disciplines::FLOW_COUNTS {
            let n = steady_state_allocations(&mut q, &d, flows, &mut now);
            println!(
                "{:<18} {flows:>6} flows: {n} allocations in {MEASURED} packets",
                d.name
            );
            if n * 100 >= MEASURED {
                failures.push(format!("{} at {flows} flows: {n}", d.name));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "allocations after warm-up: {failures:?}"
    );
}

/// Rate estimators on the root and on classes add no allocation: the tree
/// runs them (every 250 ms of the frames' clock, some 19 times in the
/// measured steps) with what it holds.
#[test]
fn rate_estimators_allocate_nothing_per_packet() {
    let est = "est 250ms 1sec";
    let d = disciplines::Discipline {
        name: "htb+est",
        steer: disciplines::Steer::None,
        tx_queues: 1,
        lines: vec![
            format!("tc qdisc add dev left root handle 1: {est} htb default 10"),
            format!("tc class add dev left parent 1: classid 1:1 {est} htb rate 10gbit"),
            format!("tc class add dev left parent 1:1 classid 1:10 {est} htb rate 10gbit"),
            format!("tc qdisc add dev left parent 1:10 handle 10: {est} fq_codel"),
        ],
    };
    let mut q = d.build();
    let mut now = Instant::from_millis(1);
    let n = steady_state_allocations(&mut q, &d, 100, &mut now);
    assert_eq!(n, 0, "allocations in {MEASURED} packets");
    let shown = q.dump(now);
    assert!(
        shown.stats.rate_est.is_some_and(|r| r.pps > 0),
        "{:?}",
        shown.stats
    );
}

/// SFQ's per-flow RED (averages, decisions, CE marks of the head with
/// headdrop, early and forced drops) adds no allocation per packet.
#[test]
fn sfq_red_allocates_nothing_per_packet() {
    let d = disciplines::Discipline {
        name: "sfq+red",
        steer: disciplines::Steer::None,
        tx_queues: 1,
        lines: vec![
            "tc qdisc add dev left root sfq limit 3000 flows 512 divisor 16384 \
                     redflowlimit 100000 min 8000 max 60000 probability 0.20 ecn headdrop"
                .to_string(),
        ],
    };
    let mut q = d.build();
    let mut now = Instant::from_millis(1);
    for flows in [1, 100] {
        let n = steady_state_allocations(&mut q, &d, flows, &mut now);
        assert_eq!(n, 0, "{flows} flows: allocations in {MEASURED} packets");
    }
    let shown = q.dump(now);
    assert!(
        shown.stats.overlimits > 0,
        "RED never decided: {:?}",
        shown.stats
    );
}

/// The counter works: a test that can fail.
#[test]
fn the_counting_allocator_sees_allocations() {
    let before = thread_allocations();
    let v: Vec<u64> = std::hint::black_box(Vec::with_capacity(10));
    assert_eq!(thread_allocations() - before, 1);
    drop(v);
}
