//! What the datapath publishes for readers (`LiveSnapshot`) and the
//! summaries it is made of: lateness histograms reduced to percentiles,
//! wake-up counts, the buffer pool's counters, and the thread's CPU time.

use std::io;

use hdrhistogram::Histogram;

use crate::bridge::BridgeSnapshot;
use crate::port::PortCounters;
use crate::time::{Instant, NS_PER_SEC};

/// A lateness histogram summed up, ns: wake-up lateness (time woken by
/// the timer minus the deadline) or release lateness (time a frame was
/// written minus the time the link delivered it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LatenessSummary {
    pub samples: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl LatenessSummary {
    pub(super) fn of(h: &Histogram<u64>) -> LatenessSummary {
        LatenessSummary {
            samples: h.len(),
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }
}

/// A lateness histogram: 1 ns to 10 s, three significant digits.
pub(super) fn lateness_histogram(what: &str) -> io::Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, 10 * NS_PER_SEC, 3)
        .map_err(|e| io::Error::other(format!("{what} histogram: {e}")))
}

/// How often the thread woke, and why, and the CPU time it used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Wakeups {
    pub total: u64,
    /// Woken by the deadline timer.
    pub timer: u64,
    /// Woken by a readable port.
    pub io: u64,
    /// Deadlines closer than `spin_us` when the loop went idle, met by
    /// spinning without the timer (their lateness is recorded too).
    pub spun: u64,
    /// Loop iterations that polled instead of sleeping (`busy_poll_us`).
    pub polls: u64,
    /// CPU time the datapath thread has used so far
    /// (CLOCK_THREAD_CPUTIME_ID, read by the thread itself at the
    /// snapshot), ns; 0 if the clock cannot be read.
    pub cpu_ns: u64,
}

/// The frame buffer pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PoolCounters {
    pub in_use: u64,
    /// Buffer requests refused at the cap (the frames lost to it are the
    /// `pool_exhausted` drops of each direction).
    pub refused: u64,
}

/// What the datapath publishes for readers.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LiveSnapshot {
    /// CLOCK_MONOTONIC time of the snapshot, ns.
    pub at: Instant,
    pub bridge: BridgeSnapshot,
    pub lateness: LatenessSummary,
    /// How late frames were written: the write's time minus the logical
    /// time the link delivered the frame (`PacketMeta::delivered`). This
    /// is the emulation's own timing error as the receiving side sees it.
    pub release_lateness: LatenessSummary,
    pub wakeups: Wakeups,
    /// Port I/O counters (reads, writes, full-device drops, errors).
    pub left_port: PortCounters,
    pub right_port: PortCounters,
    pub pool: PoolCounters,
}

/// CPU time of the calling thread, ns (0 if the clock cannot be read).
pub(super) fn thread_cpu_ns() -> u64 {
    use nix::time::{clock_gettime, ClockId};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).map_or(0, |t| {
        (t.tv_sec() as u64).saturating_mul(NS_PER_SEC) + t.tv_nsec() as u64
    })
}
