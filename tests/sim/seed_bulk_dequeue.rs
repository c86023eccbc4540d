//! Seed experiment 3, pure-core half: qdisc bulk dequeue on versus off
//! (configs/bulk-dequeue-on.toml and -off.toml, identical but for
//! `bulk_dequeue`).
//!
//! What bulk dequeue saves in the kernel is per-batch work: one
//! `qdisc_restart` (root lock round trip) and one TX doorbell per batch of
//! up to `dql_avail` bytes instead of per packet. The emulated link counts
//! those batches (`PathCounters::xmit_batches`). The frames and their
//! timing are the same either way, so throughput must not change.
//!
//! Always runs, at explicit times: the same overload (1.5 × line rate of
//! 1514-byte frames for 200 ms) through each config's left→right path;
//! same frames out, same drops, far fewer doorbells per frame with bulk
//! dequeue; the driver wake-ups (distinct `poll_at` instants) are printed,
//! and they are the same: the emulator hands a batch to the NIC at one
//! instant whether it was formed in bulk or packet by packet. The live
//! half, through the daemon, is tests/root/seed_bulk_dequeue.rs.

use bloatbox::config::Config;
use bloatbox::dir::Dir;
use bloatbox::link::path::Path as LinkPath;
use bloatbox::packet::{Packet, PacketMeta};
use bloatbox::time::{Instant, NS_PER_MS, NS_PER_SEC};

use crate::common::seed::candidate;

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
        params.dev_spec(Dir::LeftToRight, bloatbox::qdisc::kinds::BUILTIN),
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
