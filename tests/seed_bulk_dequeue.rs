//! Seed experiment 3: qdisc bulk dequeue on versus off
//! (configs/bulk-dequeue-on.toml and -off.toml, identical but for
//! `bulk_dequeue`).
//!
//! What bulk dequeue saves in the kernel is per-batch work: one
//! `qdisc_restart` (root lock round trip) and one TX doorbell per batch of
//! up to `dql_avail` bytes instead of per packet. The emulated link counts
//! those batches (`PathCounters::xmit_batches`). The frames and their
//! timing are the same either way, so throughput must not change.
//!
//! Two tests:
//! - pure core, always runs: the same overload (1.5 × line rate of
//!   1514-byte frames for 200 ms) through each config's left→right path;
//!   same frames out, same drops, far fewer doorbells per frame with bulk
//!   dequeue; the driver wake-ups (distinct `poll_at` instants) are
//!   printed, and they are the same: the emulator hands a batch to the NIC
//!   at one instant whether it was formed in bulk or packet by packet.
//! - live, root only: 4 CUBIC flows through each config (alternating, two
//!   runs each); throughput within a ratio, doorbells per frame lower with
//!   bulk dequeue. The datapath thread's wake-ups and CPU time per frame
//!   are printed for docs/benchmarking.md, not asserted: they are timing, and the
//!   daemon's TAP I/O per frame is the same in both modes.

mod common;

use std::time::Duration;

use bloatbox::config::Config;
use bloatbox::dir::Dir;
use bloatbox::experiment::{run_one, ConfigResult, TestOptions};
use bloatbox::link::path::Path as LinkPath;
use bloatbox::packet::{Packet, PacketMeta};
use bloatbox::time::{Instant, NS_PER_MS, NS_PER_SEC};

mod seed;
use seed::candidate;

/// A synthetic frame of accounted length `len` (one flow: pfifo_fast does
/// not look further).
fn pkt(id: u64, len: u32) -> Packet {
    Packet {
        data: Vec::new(),
        len,
        meta: PacketMeta {
            id,
            ..PacketMeta::default()
        },
    }
}

/// What the pure-core run of one config gave.
#[derive(Debug)]
struct CoreRun {
    frames_in: u64,
    frames_out: u64,
    drops: u64,
    doorbells: u64,
    /// Distinct instants the path asked to be polled at.
    wakeups: u64,
    last_out: Instant,
}

/// Offers 1514-byte frames at 1.5 × the line rate for 200 ms to the
/// left→right path of `cfg`, then drains it, polling at every `poll_at`.
fn overload(cfg: &Config) -> CoreRun {
    let params = cfg.link_params(Dir::LeftToRight);
    let tree = bloatbox::tc::build_tree(
        params.dev_spec(Dir::LeftToRight, bloatbox::tc::kinds::BUILTIN),
        &cfg.tc_lines(Dir::LeftToRight),
    )
    .unwrap();
    let mut path = LinkPath::new(params, tree);
    let len = 1514u32;
    let gap = len as u64 * NS_PER_SEC * 2 / (3 * params.rate_bytes_ps);
    let end = Instant::from_millis(200);
    let (mut out, mut freed) = (Vec::new(), Vec::new());
    let mut run = CoreRun {
        frames_in: 0,
        frames_out: 0,
        drops: 0,
        doorbells: 0,
        wakeups: 0,
        last_out: Instant::ZERO,
    };
    let mut next_arrival = Instant::ZERO;
    loop {
        let arrival = (next_arrival < end).then_some(next_arrival);
        let Some(t) = bloatbox::time::earliest(arrival, path.poll_at()) else {
            break;
        };
        if arrival == Some(t) {
            path.ingress(pkt(run.frames_in, len), t);
            run.frames_in += 1;
            next_arrival = t + gap;
        }
        if path.poll_at().is_some_and(|p| p <= t) {
            run.wakeups += 1;
            path.poll(t, &mut out, &mut freed);
            if !out.is_empty() {
                run.last_out = t;
            }
            out.clear();
            freed.clear();
        }
    }
    let c = path.counters();
    run.frames_out = c.frames_out;
    run.drops = c.total_drops();
    run.doorbells = c.xmit_batches;
    assert_eq!(path.held(), 0, "drained");
    assert_eq!(c.frames_in, run.frames_out + run.drops, "conservation");
    run
}

#[test]
fn bulk_dequeue_moves_the_same_frames_in_fewer_doorbells() {
    let on = overload(&candidate("bulk-dequeue-on").config);
    let off = overload(&candidate("bulk-dequeue-off").config);
    let per = |r: &CoreRun, n: u64| n as f64 / r.frames_out.max(1) as f64;
    println!(
        "pure core, 200 ms of 1.5x overload at 200 Mbit/s:\n\
         bulk   frames in/out   drops  doorbells/frame  wake-ups/frame  last frame out\n\
         on     {:>6}/{:<6}  {:>6}  {:>15.3}  {:>14.3}  {:>8.3} ms\n\
         off    {:>6}/{:<6}  {:>6}  {:>15.3}  {:>14.3}  {:>8.3} ms",
        on.frames_in,
        on.frames_out,
        on.drops,
        per(&on, on.doorbells),
        per(&on, on.wakeups),
        on.last_out.nanos() as f64 / NS_PER_MS as f64,
        off.frames_in,
        off.frames_out,
        off.drops,
        per(&off, off.doorbells),
        per(&off, off.wakeups),
        off.last_out.nanos() as f64 / NS_PER_MS as f64,
    );
    assert_eq!(on.frames_in, off.frames_in);
    assert!(on.drops > 0, "the overload must build a standing queue");
    // Same work done: the same frames delivered (to within one ring's worth
    // of BQL overshoot), finishing at the same time to within a few frames.
    let diff = on.frames_out.abs_diff(off.frames_out);
    assert!(
        diff <= 16,
        "frames out {} vs {}",
        on.frames_out,
        off.frames_out
    );
    let frame_time = 1514 * NS_PER_SEC / (200_000_000 / 8);
    assert!(
        on.last_out.nanos().abs_diff(off.last_out.nanos()) <= 16 * frame_time,
        "{:?} vs {:?}",
        on.last_out,
        off.last_out
    );
    // Without bulk dequeue every frame is its own batch.
    assert_eq!(off.doorbells, off.frames_out);
    assert!(
        per(&on, on.doorbells) < 0.5 * per(&off, off.doorbells),
        "bulk dequeue: {} doorbells for {} frames, without: {} for {}",
        on.doorbells,
        on.frames_out,
        off.doorbells,
        off.frames_out
    );
}

#[test]
#[ignore = "needs root"]
fn live_bulk_dequeue_keeps_throughput_with_fewer_doorbells() {
    common::require_root();
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
