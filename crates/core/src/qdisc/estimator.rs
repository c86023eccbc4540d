//! Rate estimators, as net/core/gen_estimator.c keeps them for a qdisc
//! (`qdisc_create`/`qdisc_change` in net/sched/sch_api.c, `TCA_RATE`) or a
//! class (`htb_change_class`, `qfq_change_class`): every `250 ms <<
//! intvl_log` the estimator reads the byte and packet counters it watches
//! and folds the rate over that interval into an EWMA of weight
//! `2^-ewma_log` (`est_timer`), kept in fixed point scaled by 2^8 and read
//! back as bytes/s and packets/s (`gen_estimator_read`), which the dump
//! carries as `TCA_STATS_RATE_EST` and `tc -s` prints as `rate ...bit
//! ...pps`. The kernel runs a timer per estimator; here the device's tree
//! holds its estimators (`Estimators`) and runs every interval whose end the
//! link clock has passed when a frame next goes through the tree (virtual
//! time in the simulator, the monotonic clock live), one interval at a time
//! as the timer would have run them, the first with everything counted
//! since the last and the others with nothing. A dump reads the estimates
//! as they stand at its own time without touching them, so an idle link's
//! rates decay in `tc -s` as the kernel's do.

use super::{Errno, Handle, Refusal};
use crate::time::Instant;

/// `struct tc_estimator` (`TCA_RATE`): what tc's `estimator INTERVAL
/// TIME_CONSTANT` sends (iproute2 tc/tc_estimator.c `tc_setup_estimator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EstimatorSpec {
    /// The sampling interval, `250 ms << (interval + 2)`: -2 (250 ms) to 3
    /// (8 s).
    pub interval: i8,
    /// The EWMA's weight is `2^-ewma_log`: 1 to 30.
    pub ewma_log: u8,
}

impl EstimatorSpec {
    /// `gen_new_estimator`'s checks: EINVAL, with no extack of its own (the
    /// caller adds its own message, if any).
    pub fn check(&self) -> Result<(), Refusal> {
        if !(-2..=3).contains(&self.interval) {
            return Err(Refusal::bare(Errno::EINVAL).below(format!(
                "estimator interval index {} (250ms << (index + 2)) is outside -2..3 \
                 (250ms to 8s)",
                self.interval
            )));
        }
        if self.ewma_log == 0 || self.ewma_log >= 31 {
            return Err(Refusal::bare(Errno::EINVAL).below(format!(
                "estimator ewma_log {} is outside 1..30",
                self.ewma_log
            )));
        }
        Ok(())
    }

    /// The sampling period, ns: `(HZ/4) << intvl_log` jiffies.
    fn period_ns(&self) -> u64 {
        250_000_000 << self.intvl_log()
    }

    fn intvl_log(&self) -> u8 {
        // `check` keeps interval within -2..3.
        (self.interval.clamp(-2, 3) + 2) as u8
    }
}

/// An estimate as the kernel dumps it (`struct gnet_stats_rate_est64`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RateEst {
    /// Bytes per second.
    pub bps: u64,
    /// Packets per second.
    pub pps: u64,
}

/// One estimator (`struct net_rate_estimator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateEstimator {
    spec: EstimatorSpec,
    last_bytes: u64,
    last_packets: u64,
    /// Bytes/s scaled by 2^8.
    avbps: u64,
    /// Packets/s scaled by 2^8.
    avpps: u64,
    /// When the next interval ends (`next_jiffies`).
    next: Instant,
}

/// Intervals run at most in one catch-up with the estimate still moving;
/// an idle gap longer than this (about 4.5 hours at 250 ms) jumps the
/// rest, as an estimate that decays by `2^-ewma_log` an interval is then
/// within a rounding step of where the timer would have left it.
const MAX_CATCH_UP: u64 = 1 << 16;

impl RateEstimator {
    /// `gen_new_estimator` at `now` on counters standing at `bytes` and
    /// `packets`; a replaced estimator (`old`) hands over its averages.
    pub fn new(
        spec: EstimatorSpec,
        bytes: u64,
        packets: u64,
        now: Instant,
        old: Option<&RateEstimator>,
    ) -> RateEstimator {
        RateEstimator {
            spec,
            last_bytes: bytes,
            last_packets: packets,
            avbps: old.map_or(0, |o| o.avbps),
            avpps: old.map_or(0, |o| o.avpps),
            next: Instant::from_nanos(now.nanos().saturating_add(spec.period_ns())),
        }
    }

    /// The end of the current interval.
    pub fn next(&self) -> Instant {
        self.next
    }

    /// Runs every interval that ended by `now` (`est_timer`), the counters
    /// standing at `bytes` and `packets`.
    pub fn run_until(&mut self, now: Instant, bytes: u64, packets: u64) {
        let period = self.spec.period_ns();
        let mut ran = 0;
        while self.next <= now {
            if ran == MAX_CATCH_UP || (ran > 0 && self.settled()) {
                // Nothing more would change: jump to the interval after now.
                let behind = now.saturating_since(self.next) / period + 1;
                self.next = Instant::from_nanos(
                    self.next
                        .nanos()
                        .saturating_add(behind.saturating_mul(period)),
                );
                break;
            }
            self.sample(bytes, packets);
            self.next = Instant::from_nanos(self.next.nanos().saturating_add(period));
            ran += 1;
        }
    }

    /// With the counters still, a sample leaves the averages as they are.
    fn settled(&self) -> bool {
        let e = self.spec.ewma_log;
        self.avbps >> e == 0 && self.avpps >> e == 0
    }

    /// One `est_timer` run.
    fn sample(&mut self, bytes: u64, packets: u64) {
        let (e, shift) = (self.spec.ewma_log, 10 - self.spec.intvl_log());
        let brate = (bytes.wrapping_sub(self.last_bytes) << shift) >> e;
        let prate = (packets.wrapping_sub(self.last_packets) << shift) >> e;
        self.avbps = self.avbps.wrapping_add(brate.wrapping_sub(self.avbps >> e));
        self.avpps = self.avpps.wrapping_add(prate.wrapping_sub(self.avpps >> e));
        self.last_bytes = bytes;
        self.last_packets = packets;
    }

    /// The estimate as it stands (`gen_estimator_read`).
    pub fn read(&self) -> RateEst {
        RateEst {
            bps: self.avbps >> 8,
            pps: self.avpps >> 8,
        }
    }

    /// The estimate a dump at `now` reads, the counters standing at `bytes`
    /// and `packets`: the intervals that ended by then run on a copy.
    pub fn read_at(&self, now: Instant, bytes: u64, packets: u64) -> RateEst {
        let mut at = *self;
        at.run_until(now, bytes, packets);
        at.read()
    }
}

/// What an estimator watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A qdisc's counters (`sch->bstats`), by its handle.
    Qdisc(Handle),
    /// A class's counters (`cl->bstats`): the qdisc's handle and the class id.
    Class(Handle, Handle),
}

/// One estimator of a tree and the way to its counters.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    pub(super) target: Target,
    /// The class ids from the root to the qdisc (`Target::Qdisc`) or to
    /// the qdisc that holds the class (`Target::Class`).
    pub(super) path: Vec<Handle>,
    pub(super) est: RateEstimator,
}

/// The estimators of one device's tree, and when the first of them next
/// samples: the only thing the packet path looks at.
#[derive(Clone, Debug, Default)]
pub struct Estimators {
    pub(super) entries: Vec<Entry>,
    next: Option<Instant>,
}

impl Estimators {
    /// Whether an interval has ended by `now` (one comparison; `false`
    /// without estimators).
    #[inline]
    pub fn due(&self, now: Instant) -> bool {
        self.next.is_some_and(|n| n <= now)
    }

    /// The estimator of `target`, if any.
    pub fn get(&self, target: Target) -> Option<&RateEstimator> {
        self.entries
            .iter()
            .find(|e| e.target == target)
            .map(|e| &e.est)
    }

    /// Installs `est` for `target` reached by `path` (replacing the one it had).
    pub(super) fn set(&mut self, target: Target, path: Vec<Handle>, est: RateEstimator) {
        self.entries.retain(|e| e.target != target);
        self.entries.push(Entry { target, path, est });
        self.reschedule();
    }

    /// Keeps the entries `keep` says still exist (with their path brought
    /// up to date), drops the others (`gen_kill_estimator` when a qdisc or
    /// class goes).
    pub(super) fn retain(&mut self, mut keep: impl FnMut(Target) -> Option<Vec<Handle>>) {
        self.entries.retain_mut(|e| match keep(e.target) {
            Some(path) => {
                e.path = path;
                true
            }
            None => false,
        });
        self.reschedule();
    }

    /// Recomputes when the first estimator next samples.
    pub(super) fn reschedule(&mut self) {
        self.next = self.entries.iter().map(|e| e.est.next()).min();
    }
}

#[cfg(test)]
#[path = "estimator_tests.rs"]
mod tests;
