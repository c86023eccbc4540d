//! Seed experiment 3, live half (root only): qdisc bulk dequeue on versus
//! off (configs/bulk-dequeue-on.toml and -off.toml, identical but for
//! `bulk_dequeue`), 4 CUBIC flows through each config (alternating, two
//! runs each); throughput within a ratio, doorbells per frame lower with
//! bulk dequeue. The datapath thread's wake-ups and CPU time per frame are
//! printed for docs/benchmarking.md, not asserted: they are timing, and the
//! daemon's TAP I/O per frame is the same in both modes. Why bulk dequeue
//! saves doorbells, and the same overload at explicit times, are the
//! pure-core half: tests/sim/seed_bulk_dequeue.rs.

use crate::common;
use crate::turn;

use std::time::Duration;

use bloatbox::experiment::{run_one, ConfigResult, TestOptions};

use common::seed::candidate;

#[test]
#[ignore = "needs root"]
fn live_bulk_dequeue_keeps_throughput_with_fewer_doorbells() {
    common::require_root();
    let _turn = turn();
    let opts = TestOptions {
        flows: 4,
        bidirectional: false,
        duration: Duration::from_secs(5),
        warmup: Duration::from_secs(1),
        ping_interval: Some(Duration::from_millis(100)),
        udp_rr: false,
        realtime: Some(50),
        ..TestOptions::default()
    };
    let (on_cfg, off_cfg) = (candidate("bulk-dequeue-on"), candidate("bulk-dequeue-off"));
    let mut on = Vec::new();
    let mut off = Vec::new();
    // Alternating runs, so that load from other processes on this machine
    // does not fall on one setting only.
    for round in 0..2 {
        on.push(run_one(&on_cfg, 300 + 2 * round, &opts, &mut |_, _| true).unwrap());
        off.push(run_one(&off_cfg, 301 + 2 * round, &opts, &mut |_, _| true).unwrap());
    }
    let sum = |rs: &[ConfigResult], f: &dyn Fn(&ConfigResult) -> f64| rs.iter().map(f).sum::<f64>();
    let mbit = |rs: &[ConfigResult]| sum(rs, &|r| r.summary.up_mbit) / rs.len() as f64;
    let doorbells = |rs: &[ConfigResult]| {
        sum(rs, &|r| r.paths[0].xmit_batches as f64) / sum(rs, &|r| r.paths[0].frames as f64)
    };
    let wakeups = |rs: &[ConfigResult]| {
        sum(rs, &|r| r.datapath.wakeups as f64) / sum(rs, &|r| r.datapath.frames as f64)
    };
    let cpu_us = |rs: &[ConfigResult]| {
        sum(rs, &|r| r.datapath.cpu_ns as f64) / sum(rs, &|r| r.datapath.frames as f64) / 1e3
    };
    eprintln!("live, 4 cubic flows left->right, 2 alternating 5 s runs per config:");
    eprintln!("bulk  goodput Mbit/s  doorbells/frame  datapath wake-ups/frame  cpu us/frame");
    for (name, rs) in [("on", &on), ("off", &off)] {
        eprintln!(
            "{name:<5} {:>14.1}  {:>15.3}  {:>23.3}  {:>12.2}",
            mbit(rs),
            doorbells(rs),
            wakeups(rs),
            cpu_us(rs)
        );
    }
    for r in on.iter().chain(&off) {
        assert!(
            r.datapath.cpu_ns > 0,
            "{}: no datapath CPU time read",
            r.name
        );
        assert!(
            r.summary.up_mbit > 40.0,
            "{}: the link was not loaded ({:.1} Mbit/s)",
            r.name,
            r.summary.up_mbit
        );
    }
    let ratio = mbit(&on) / mbit(&off);
    assert!(
        (0.6..1.67).contains(&ratio),
        "throughput on/off {:.1}/{:.1} Mbit/s",
        mbit(&on),
        mbit(&off)
    );
    assert!(doorbells(&off) > 0.95, "off: {:.3}", doorbells(&off));
    assert!(
        doorbells(&on) < 0.8 * doorbells(&off),
        "doorbells per frame: on {:.3}, off {:.3}",
        doorbells(&on),
        doorbells(&off)
    );
}
