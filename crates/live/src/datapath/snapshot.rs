//! What the datapath publishes for readers: each direction's thread its
//! `LaneSnapshot`, which readers merge into one `LiveSnapshot` of the
//! link; and the summaries they are made of: lateness histograms reduced
//! to percentiles, wake-up counts, the buffer pools' counters, and the
//! threads' CPU time.

use std::io;
use std::sync::Arc;

use hdrhistogram::Histogram;

use crate::bridge::{BridgeSnapshot, CaptureCounters};
use crate::link::path::PathSnapshot;
use crate::link::transit::Tally;
use crate::port::PortCounters;
use crate::time::{Instant, NS_PER_SEC};

use super::stages::StageBreakdown;

/// A lateness histogram summed up, ns: wake-up lateness (time woken by
/// the timer minus the deadline) or release lateness (time a frame was
/// written minus the time the link delivered it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LatenessSummary {
    /// Values in the histogram.
    pub samples: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p999_ns: u64,
    /// Largest value, ns.
    pub max_ns: u64,
}

impl LatenessSummary {
    pub(super) fn of(h: &Histogram<u64>) -> LatenessSummary {
        if h.is_empty() {
            // What the quantiles of no samples are (0), without walking
            // every bucket of the histogram to find that out.
            return LatenessSummary::default();
        }
        LatenessSummary::walked(h)
    }

    /// `tally`'s, its quantiles and maximum capped at its exact maximum:
    /// a histogram reads a value as its bucket's highest, which can lie
    /// beyond the largest value recorded (a constant 5 ms as 5 013 503 ns
    /// at two significant digits).
    pub(crate) fn of_tally(tally: &mut Tally) -> LatenessSummary {
        let max = tally.max();
        LatenessSummary::of(tally.hist()).capped(max)
    }

    /// Its quantiles capped at `max`, the exact largest value, which
    /// becomes its maximum (nothing changes without samples).
    fn capped(self, max: u64) -> LatenessSummary {
        if self.samples == 0 {
            return self;
        }
        LatenessSummary {
            p50_ns: self.p50_ns.min(max),
            p99_ns: self.p99_ns.min(max),
            p999_ns: self.p999_ns.min(max),
            max_ns: max,
            ..self
        }
    }

    /// The quantiles read off the histogram, one walk of its buckets each.
    fn walked(h: &Histogram<u64>) -> LatenessSummary {
        LatenessSummary {
            samples: h.len(),
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }
}

/// The longest lateness told apart, ns, and the significant digits.
const LATENESS_BOUNDS: (u64, u8) = (10 * NS_PER_SEC, 2);

/// A lateness histogram: 1 ns to 10 s, two significant digits (as the
/// transit times and the stage breakdown: 29 kB, where three digits took
/// 205 kB, copied and walked at every snapshot).
pub(crate) fn lateness_histogram(what: &str) -> io::Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, LATENESS_BOUNDS.0, LATENESS_BOUNDS.1)
        .map_err(|e| io::Error::other(format!("{what} histogram: {e}")))
}

/// A lateness histogram as a snapshot shares it, with the exact largest
/// value recorded, which the histogram reads as the highest of its bucket.
#[derive(Clone, Debug)]
pub struct SharedLateness {
    /// Every value recorded.
    pub hist: Histogram<u64>,
    /// The largest of them, exactly (0 if none).
    pub max_ns: u64,
}

impl SharedLateness {
    /// The histogram summed up, its quantiles capped at the exact maximum.
    pub fn summary(&self) -> LatenessSummary {
        LatenessSummary::of(&self.hist).capped(self.max_ns)
    }
}

/// A lateness histogram a thread records into (a counter increment,
/// `Tally`), and the copy its snapshots share: copied again only when
/// something was recorded since the last copy (a stepped datapath
/// publishes after every step).
pub(crate) struct RecordedLateness {
    /// Recorded into as a counter increment (`Tally`).
    live: Tally,
    shared: Arc<SharedLateness>,
    /// `shared` summed up.
    summary: LatenessSummary,
    recorded: bool,
}

impl RecordedLateness {
    /// An empty `lateness_histogram`.
    pub(crate) fn new(what: &str) -> io::Result<RecordedLateness> {
        let live = Tally::new(LATENESS_BOUNDS.0, LATENESS_BOUNDS.1)
            .map_err(|e| io::Error::other(format!("{what} histogram: {e}")))?;
        Ok(RecordedLateness {
            shared: Arc::new(SharedLateness {
                hist: lateness_histogram(what)?,
                max_ns: 0,
            }),
            live,
            summary: LatenessSummary::default(),
            recorded: false,
        })
    }

    /// Records `ns` (clamped to the histogram's 1 ns–10 s).
    pub(crate) fn record(&mut self, ns: u64) {
        self.live.record(ns.max(1));
        self.recorded = true;
    }

    /// Everything recorded so far, for a snapshot.
    pub(crate) fn share(&mut self) -> Arc<SharedLateness> {
        if std::mem::take(&mut self.recorded) {
            self.shared = Arc::new(SharedLateness {
                hist: self.live.hist().clone(),
                max_ns: self.live.max(),
            });
            self.summary = self.shared.summary();
        }
        self.shared.clone()
    }

    /// What the last `share` shared, summed up.
    pub(crate) fn summary(&self) -> LatenessSummary {
        self.summary
    }
}

/// How often the threads woke, and why, and the CPU time they used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Wakeups {
    /// Returns of `epoll_wait` with at least one event, whatever the event.
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
    /// CPU time the datapath threads have used so far, both directions'
    /// summed (CLOCK_THREAD_CPUTIME_ID, read by each thread itself at its
    /// snapshot), ns; 0 if the clock cannot be read.
    pub cpu_ns: u64,
}

/// The frame buffer pools (one per direction, summed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PoolCounters {
    /// Buffers handed out and not returned (frames inside the link or being
    /// read).
    pub in_use: u64,
    /// Buffer requests refused at the cap (the frames lost to it are the
    /// `pool_exhausted` drops of each direction).
    pub refused: u64,
}

/// What GRO at the receiving TAPs merged (`tap.gro`; both directions
/// summed): the super-frames written, and the TCP segments in them. The
/// ports count each super-frame as one frame written, so the frames the
/// links delivered are the ports' writes plus `segments - super_frames`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GroCounters {
    /// Super-frames written, each of two or more segments.
    pub super_frames: u64,
    /// The segments merged into them.
    pub segments: u64,
}

/// What the datapath publishes for readers.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LiveSnapshot {
    /// CLOCK_MONOTONIC time of the snapshot, ns.
    pub at: Instant,
    /// Both directions' paths, and the capture counters while a capture runs.
    pub bridge: BridgeSnapshot,
    /// Wake-up lateness of the datapath threads: the time the deadline timer
    /// woke a thread minus the deadline.
    pub lateness: LatenessSummary,
    /// How late frames were written: the write's time minus the logical
    /// time the link delivered the frame (`PacketMeta::delivered`). This
    /// is the emulation's own timing error as the receiving side sees it.
    pub release_lateness: LatenessSummary,
    /// How often the threads woke, why, and their CPU time.
    pub wakeups: Wakeups,
    /// Port I/O counters (reads, writes, full-device drops, errors).
    pub left_port: PortCounters,
    /// Port I/O counters of the right TAP (reads, writes, full-device drops,
    /// errors).
    pub right_port: PortCounters,
    /// The buffer pools, both directions summed.
    pub pool: PoolCounters,
    /// GRO at the receiving TAPs, both directions summed.
    #[serde(default)]
    pub gro: GroCounters,
    /// Where each direction's frames spend their time, stage by stage, by
    /// `Dir::index()` (left→right first).
    #[serde(default)]
    pub stages: [StageBreakdown; 2],
}

/// CPU time of the calling thread, ns (0 if the clock cannot be read).
pub(super) fn thread_cpu_ns() -> u64 {
    use nix::time::{clock_gettime, ClockId};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).map_or(0, |t| {
        (t.tv_sec() as u64).saturating_mul(NS_PER_SEC) + t.tv_nsec() as u64
    })
}

/// What one direction's thread publishes: its path, its tap, its own
/// timing and wake-ups, its halves of the two ports (it reads the port its
/// frames come from and writes the other), and its buffer pool. Readers
/// merge the two directions' into a `LiveSnapshot` (`LiveSnapshot::merge`).
#[derive(Clone, Debug)]
pub struct LaneSnapshot {
    /// CLOCK_MONOTONIC time of the snapshot, ns.
    pub at: Instant,
    /// The direction's path.
    pub path: PathSnapshot,
    /// Its capture counters while a capture runs.
    pub capture: Option<CaptureCounters>,
    /// The whole histograms, so that the merge is exact (shared with the
    /// thread until it records again: `RecordedLateness`).
    pub lateness: Arc<SharedLateness>,
    /// Release lateness (write time minus the link's delivery time), the whole
    /// histogram.
    pub release_lateness: Arc<SharedLateness>,
    /// The thread's wake-ups and CPU time.
    pub wakeups: Wakeups,
    /// The read half of the port the direction's frames come from.
    pub rx_port: PortCounters,
    /// The write half of the port they go to.
    pub tx_port: PortCounters,
    /// The direction's buffer pool.
    pub pool: PoolCounters,
    /// What GRO merged before writing (the direction's receiving TAP).
    pub gro: GroCounters,
    /// Where the direction's frames spend their time, stage by stage.
    pub stages: StageBreakdown,
}

impl LiveSnapshot {
    /// Both directions' snapshots as one, by `Dir::index()`: taken at the
    /// older of the two times (so every counter includes what happened
    /// before `at`), counters and CPU time summed, lateness percentiles of
    /// the merged histograms.
    pub fn merge(lanes: [&LaneSnapshot; 2]) -> LiveSnapshot {
        let [l2r, r2l] = lanes;
        let at = l2r.at.min(r2l.at);
        let merged = |h: fn(&LaneSnapshot) -> &SharedLateness| {
            let (a, b) = (h(l2r), h(r2l));
            // An idle direction adds nothing: no copy of the other.
            if b.hist.is_empty() {
                return a.summary();
            }
            if a.hist.is_empty() {
                return b.summary();
            }
            let mut sum = Histogram::clone(&a.hist);
            // Same bounds on both sides, so adding cannot fail.
            let _ = sum.add(&b.hist);
            LatenessSummary::of(&sum).capped(a.max_ns.max(b.max_ns))
        };
        let (a, b) = (&l2r.wakeups, &r2l.wakeups);
        LiveSnapshot {
            at,
            bridge: BridgeSnapshot {
                at,
                paths: [l2r.path.clone(), r2l.path.clone()],
                capture: (l2r.capture.is_some() || r2l.capture.is_some()).then(|| {
                    [
                        l2r.capture.unwrap_or_default(),
                        r2l.capture.unwrap_or_default(),
                    ]
                }),
            },
            lateness: merged(|l| &l.lateness),
            release_lateness: merged(|l| &l.release_lateness),
            wakeups: Wakeups {
                total: a.total + b.total,
                timer: a.timer + b.timer,
                io: a.io + b.io,
                spun: a.spun + b.spun,
                polls: a.polls + b.polls,
                cpu_ns: a.cpu_ns + b.cpu_ns,
            },
            // Left frames are read by left→right and written by right→left.
            left_port: l2r.rx_port.merge(&r2l.tx_port),
            right_port: r2l.rx_port.merge(&l2r.tx_port),
            pool: PoolCounters {
                in_use: l2r.pool.in_use + r2l.pool.in_use,
                refused: l2r.pool.refused + r2l.pool.refused,
            },
            gro: GroCounters {
                super_frames: l2r.gro.super_frames + r2l.gro.super_frames,
                segments: l2r.gro.segments + r2l.gro.segments,
            },
            stages: [l2r.stages, r2l.stages],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_lateness_is_copied_only_after_new_records_and_never_changes() {
        let mut l = RecordedLateness::new("test").unwrap();
        let first = l.share();
        assert!(first.hist.is_empty());
        assert_eq!(first.max_ns, 0);
        assert!(Arc::ptr_eq(&first, &l.share()), "nothing recorded: no copy");
        l.record(0);
        l.record(2_000);
        let second = l.share();
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(first.hist.is_empty(), "a published copy never changes");
        assert_eq!((second.hist.len(), second.hist.min()), (2, 1));
        assert!(second.hist.equivalent(second.hist.max(), 2_000));
        assert_eq!(second.max_ns, 2_000, "the exact maximum");
        l.record(20_000_000_000);
        assert_eq!(second.hist.len(), 2);
        assert_eq!(second.max_ns, 2_000);
        let third = l.share();
        assert_eq!(third.hist.len(), 3);
        assert!(
            third.hist.equivalent(third.hist.max(), third.hist.high()),
            "clamped to 10 s"
        );
        assert_eq!(third.max_ns, 20_000_000_000, "the maximum is not clamped");
        assert!(Arc::ptr_eq(&third, &l.share()));
    }

    /// The summary follows what was shared (the stage breakdown's `late`):
    /// one release 6.1 µs late reads as such.
    #[test]
    fn the_summary_is_of_the_last_share() {
        let mut l = RecordedLateness::new("test").unwrap();
        l.record(6_100);
        assert_eq!(l.summary().samples, 0, "not shared yet");
        l.share();
        let late = l.summary();
        assert_eq!(late.samples, 1);
        assert_eq!(
            (late.p50_ns, late.p99_ns, late.max_ns),
            (6_100, 6_100, 6_100)
        );
    }

    #[test]
    fn an_empty_or_idle_side_summarises_as_the_full_walk_does() {
        let empty = lateness_histogram("test").unwrap();
        assert_eq!(LatenessSummary::of(&empty), LatenessSummary::walked(&empty));
        let mut busy = lateness_histogram("test").unwrap();
        for v in [1, 900, 25_000, 25_001, 3_000_000, 9_999_999_999] {
            busy.record(v).unwrap();
        }
        assert_eq!(LatenessSummary::of(&busy), LatenessSummary::walked(&busy));
        assert_ne!(LatenessSummary::of(&busy), LatenessSummary::default());
        let mut sum = busy.clone();
        sum.add(&busy).unwrap();
        let fifo = crate::qdisc::fifo::Fifo::new(
            crate::qdisc::fifo::FifoKind::Pfifo,
            crate::qdisc::QdiscCtx::default(),
        );
        let dev = crate::qdisc::tree::DevSpec::new(
            crate::dir::Dir::LeftToRight,
            crate::qdisc::kinds::BUILTIN,
        );
        let tree = crate::qdisc::tree::QdiscTree::with_root(dev, Box::new(fifo));
        let path = crate::link::Path::new(Default::default(), tree);
        let lane = |h: &Histogram<u64>| LaneSnapshot {
            at: Instant::ZERO,
            path: path.snapshot(Instant::ZERO),
            capture: None,
            lateness: Arc::new(SharedLateness {
                hist: h.clone(),
                max_ns: h.max(),
            }),
            release_lateness: Arc::new(SharedLateness {
                hist: empty.clone(),
                max_ns: 0,
            }),
            wakeups: Wakeups::default(),
            rx_port: PortCounters::default(),
            tx_port: PortCounters::default(),
            pool: PoolCounters::default(),
            gro: GroCounters::default(),
            stages: StageBreakdown::default(),
        };
        for (a, b, want) in [
            (&busy, &empty, LatenessSummary::walked(&busy)),
            (&empty, &busy, LatenessSummary::walked(&busy)),
            (&busy, &busy, LatenessSummary::walked(&sum)),
            (&empty, &empty, LatenessSummary::walked(&empty)),
        ] {
            let m = LiveSnapshot::merge([&lane(a), &lane(b)]);
            assert_eq!(m.lateness, want);
        }
    }
}
