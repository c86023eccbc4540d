//! Transit time through one direction of the emulated link: from a frame's
//! ingress (`PacketMeta::arrival`) to its delivery to the receiving side,
//! i.e. qdisc queueing + ring + serialization + propagation delay + RX
//! coalescing. `Path` records every delivered frame at its logical delivery
//! time, so no clock is read; the HDR histogram is allocated once (bounded
//! range, 3 significant digits) and recording never allocates.
//!
//! `TransitSummary` is what snapshots and reports carry: count, min, mean,
//! the usual percentiles and max, plus log2 buckets from 1 µs.

use hdrhistogram::Histogram;

use crate::time::{NS_PER_SEC, NS_PER_US};

/// Longest transit time told apart, ns; longer ones count as this.
pub const TRANSIT_MAX_NS: u64 = 100 * NS_PER_SEC;
/// Significant digits of the histogram (0.1 % relative error).
const SIGNIFICANT_DIGITS: u8 = 3;
/// Upper bound of the first bucket of `TransitSummary::buckets`; each next
/// one doubles it.
pub const FIRST_BUCKET_NS: u64 = NS_PER_US;

/// One histogram bucket: frames whose transit time was above the previous
/// bucket's `upper_ns` and at most this one (hdrhistogram's precision).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TransitBucket {
    pub upper_ns: u64,
    pub count: u64,
}

/// Transit times of the frames delivered so far, in ns (all zero before
/// the first one).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TransitSummary {
    /// Frames recorded: equals `PathCounters::frames_out`.
    pub count: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    /// Log2 buckets from `FIRST_BUCKET_NS` up to the maximum; empty ones
    /// are left out.
    pub buckets: Vec<TransitBucket>,
}

/// The recorder a `Path` owns.
#[derive(Debug)]
pub struct Transit {
    hist: Histogram<u64>,
}

impl Default for Transit {
    fn default() -> Self {
        Transit::new()
    }
}

impl Transit {
    pub fn new() -> Transit {
        Transit {
            hist: Histogram::new_with_bounds(1, TRANSIT_MAX_NS, SIGNIFICANT_DIGITS)
                .expect("constant bounds are valid"),
        }
    }

    /// One delivered frame that spent `ns` in the link.
    pub fn record(&mut self, ns: u64) {
        // Beyond the range it counts as the longest; never fails.
        self.hist.saturating_record(ns);
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    pub fn summary(&self) -> TransitSummary {
        let h = &self.hist;
        if h.is_empty() {
            return TransitSummary::default();
        }
        let buckets = h
            .iter_log(FIRST_BUCKET_NS, 2.0)
            .filter(|v| v.count_since_last_iteration() > 0)
            .map(|v| TransitBucket {
                upper_ns: v.value_iterated_to(),
                count: v.count_since_last_iteration(),
            })
            .collect();
        TransitSummary {
            count: h.len(),
            min_ns: h.min(),
            mean_ns: h.mean(),
            p50_ns: h.value_at_quantile(0.5),
            p90_ns: h.value_at_quantile(0.9),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
            buckets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;

    #[test]
    fn an_empty_recorder_sums_up_to_zeros() {
        let s = Transit::new().summary();
        assert_eq!(s, TransitSummary::default());
        assert!(s.buckets.is_empty());
    }

    #[test]
    fn percentiles_and_buckets_follow_the_samples() {
        let mut t = Transit::new();
        // 90 frames at 1 ms, 9 at 10 ms, one at 100 ms.
        for _ in 0..90 {
            t.record(NS_PER_MS);
        }
        for _ in 0..9 {
            t.record(10 * NS_PER_MS);
        }
        t.record(100 * NS_PER_MS);
        let s = t.summary();
        assert_eq!(s.count, 100);
        let close = |got: u64, want: u64| got.abs_diff(want) <= want / 1000 + 1;
        assert!(close(s.min_ns, NS_PER_MS), "{s:?}");
        assert!(close(s.p50_ns, NS_PER_MS), "{s:?}");
        assert!(close(s.p90_ns, NS_PER_MS), "{s:?}");
        assert!(close(s.p99_ns, 10 * NS_PER_MS), "{s:?}");
        assert!(close(s.p999_ns, 100 * NS_PER_MS), "{s:?}");
        assert!(close(s.max_ns, 100 * NS_PER_MS), "{s:?}");
        assert_eq!(s.buckets.iter().map(|b| b.count).sum::<u64>(), 100);
        assert_eq!(s.buckets.len(), 3, "{:?}", s.buckets);
        assert!(s.buckets.windows(2).all(|w| w[0].upper_ns < w[1].upper_ns));
        // 1 ms falls in (512 us, 1024 us].
        assert!(close(s.buckets[0].upper_ns, 1024 * NS_PER_US), "{s:?}");
        assert_eq!(s.buckets[0].count, 90);
    }

    #[test]
    fn out_of_range_values_saturate_instead_of_failing() {
        let mut t = Transit::new();
        t.record(0);
        t.record(u64::MAX);
        let s = t.summary();
        assert_eq!(s.count, 2);
        assert!(s.max_ns >= TRANSIT_MAX_NS - TRANSIT_MAX_NS / 1000, "{s:?}");
    }
}
