//! The snapshot the metrics tests render, serve and write: a small bridge
//! with drops, a delivered frame and hand-set lateness, wake-up, port and
//! pool counters; and the same bridge published into a snapshot reader as
//! the two datapath threads publish it.

use crate::bridge::Bridge;
use std::sync::Arc;

use crate::datapath::{
    LaneSnapshot, LatenessSummary, LiveSnapshot, PoolCounters, RecordedLateness, SnapshotReader,
    Wakeups,
};
use crate::dir::Dir;
use crate::link::{LinkParams, Path as LinkPath};
use crate::port::PortCounters;
use crate::qdisc::fifo::{Fifo, FifoKind};
use crate::qdisc::tree::{DevSpec, QdiscTree};
use crate::qdisc::QdiscCtx;
use crate::time::Instant;

/// A bridge whose left→right pfifo (limit 2) took a burst of 5 frames,
/// polled until the first of them is delivered, and that moment.
fn bridge() -> (Bridge, Instant) {
    let path = |dir| {
        let fifo = Fifo::with_limit(FifoKind::Pfifo, QdiscCtx::default(), 2);
        let dev = DevSpec::new(dir, crate::qdisc::kinds::BUILTIN);
        LinkPath::new(
            LinkParams {
                tx_ring: 1,
                bql: false,
                ..LinkParams::default()
            },
            QdiscTree::with_root(dev, Box::new(fifo)),
        )
    };
    let mut b = Bridge::new(path(Dir::LeftToRight), path(Dir::RightToLeft));
    for _ in 0..5 {
        let mut f = vec![0u8; 1000];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        b.ingress(Dir::LeftToRight, f, Instant::ZERO);
    }
    let (mut out, mut freed) = (Vec::new(), Vec::new());
    b.poll(Instant::ZERO, &mut out, &mut freed);
    // Deliver one frame, so that the transit histogram has a sample.
    let now = b.poll_at().expect("frames are in flight");
    b.poll(now, &mut out, &mut freed);
    (b, now)
}

/// The bridge's snapshot with hand-set datapath figures.
pub(super) fn snapshot() -> LiveSnapshot {
    let (b, now) = bridge();
    LiveSnapshot {
        at: now,
        bridge: b.snapshot(now),
        lateness: LatenessSummary {
            samples: 3,
            p50_ns: 1_000,
            p99_ns: 2_000,
            p999_ns: 3_000,
            max_ns: 4_000,
        },
        release_lateness: LatenessSummary {
            samples: 5,
            p50_ns: 6_000,
            p99_ns: 7_000,
            p999_ns: 8_000,
            max_ns: 9_000,
        },
        wakeups: Wakeups {
            total: 7,
            timer: 3,
            io: 4,
            spun: 2,
            polls: 1,
            cpu_ns: 5_000_000,
        },
        left_port: PortCounters {
            rx_frames: 5,
            ..PortCounters::default()
        },
        right_port: PortCounters::default(),
        pool: PoolCounters {
            in_use: 2,
            refused: 1,
        },
        gro: Default::default(),
        stages: Default::default(),
    }
}

/// The bridge's directions published into `reader` as each direction's
/// thread publishes them (a few lateness samples, port counters); returns
/// what the reader then gives.
pub(super) fn publish(reader: &SnapshotReader) -> Arc<LiveSnapshot> {
    let (b, now) = bridge();
    for dir in Dir::ALL {
        let mut recorded = RecordedLateness::new("fixture").expect("valid bounds");
        for ns in [1_000, 2_000, 4_000] {
            recorded.record(ns);
        }
        let lateness = recorded.share();
        reader.offer(
            dir,
            LaneSnapshot {
                at: now,
                path: b.lane(dir).path().snapshot(now),
                capture: None,
                release_lateness: lateness.clone(),
                lateness,
                wakeups: Wakeups {
                    total: 7,
                    cpu_ns: 5_000_000,
                    ..Wakeups::default()
                },
                rx_port: PortCounters {
                    rx_frames: 5,
                    ..PortCounters::default()
                },
                tx_port: PortCounters::default(),
                pool: PoolCounters::default(),
                gro: Default::default(),
                stages: Default::default(),
            },
        );
    }
    reader.latest().expect("both directions published")
}
