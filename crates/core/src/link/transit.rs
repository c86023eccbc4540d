//! Transit time through one direction of the emulated link: from a frame's
//! ingress (`PacketMeta::arrival`) to its delivery to the receiving side,
//! i.e. qdisc queueing + ring + serialization + propagation delay + RX
//! coalescing. `Path` records every delivered frame at its logical delivery
//! time, so no clock is read; the HDR histogram is allocated once (bounded
//! range, about 30 KiB) and recording never allocates.
//!
//! Two significant digits (values within 1 %): a summary then walks a few
//! thousand counters instead of tens of thousands, which matters because the
//! live datapath builds snapshots on its own thread (three digits made each
//! summary about ten times slower).
//!
//! `TransitSummary` is what snapshots and reports carry: count, min, mean,
//! the usual percentiles and max, plus log2 buckets from 1 µs.
//!
//! `RunHistogram` is how every per-frame histogram records: a repeat of the
//! value recorded last costs one comparison, not a histogram update.

use std::borrow::Cow;

use hdrhistogram::Histogram;

use crate::time::{NS_PER_SEC, NS_PER_US};

/// Longest transit time told apart, ns; longer ones count as this.
pub const TRANSIT_MAX_NS: u64 = 100 * NS_PER_SEC;
/// Significant digits of the histogram (1 % relative error).
const SIGNIFICANT_DIGITS: u8 = 2;
/// Upper bound of the first bucket of `TransitSummary::buckets`; each next
/// one doubles it.
pub const FIRST_BUCKET_NS: u64 = NS_PER_US;

/// One histogram bucket: frames whose transit time was above the previous
/// bucket's `upper_ns` and at most this one (hdrhistogram's precision).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TransitBucket {
    /// The bucket's upper bound, ns (inclusive).
    pub upper_ns: u64,
    /// Frames in the bucket.
    pub count: u64,
}

/// Transit times of the frames delivered so far, in ns (all zero before
/// the first one): min, mean and max exact, percentiles within 1 %.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TransitSummary {
    /// Frames recorded: equals `PathCounters::frames_out`.
    pub count: u64,
    /// Shortest transit time, ns (exact).
    pub min_ns: u64,
    /// Mean transit time, ns (exact).
    pub mean_ns: f64,
    /// Median transit time, ns (within 1 %).
    pub p50_ns: u64,
    /// 90th percentile of the transit time, ns (within 1 %).
    pub p90_ns: u64,
    /// 99th percentile of the transit time, ns (within 1 %).
    pub p99_ns: u64,
    /// 99.9th percentile of the transit time, ns (within 1 %).
    pub p999_ns: u64,
    /// Longest transit time, ns (exact, capped at `TRANSIT_MAX_NS`).
    pub max_ns: u64,
    /// Log2 buckets from `FIRST_BUCKET_NS` up to the maximum; empty ones
    /// are left out.
    pub buckets: Vec<TransitBucket>,
}

/// An HDR histogram that holds back repeats of the value recorded last and
/// adds them with one `saturating_record_n` when another value comes or the
/// histogram is read. Its counts, extremes and total are those of recording
/// each value (`saturating_record` is `saturating_record_n(v, 1)`, and the
/// counters add with saturation either way), for one comparison per repeat:
/// an unshaped link's stages take the same time frame after frame, and a
/// histogram update is some 60 instructions.
#[derive(Clone, Debug)]
pub struct RunHistogram {
    hist: Histogram<u64>,
    /// The value held back and how many times it was recorded (0: none).
    run: (u64, u64),
}

impl RunHistogram {
    /// Records into `hist` (whatever it holds already stays).
    pub fn new(hist: Histogram<u64>) -> RunHistogram {
        RunHistogram { hist, run: (0, 0) }
    }

    /// Records `value` once (clamped to the histogram's range).
    #[inline]
    pub fn record(&mut self, value: u64) {
        if self.run.1 > 0 && self.run.0 == value {
            self.run.1 += 1;
        } else {
            self.flush();
            self.run = (value, 1);
        }
    }

    /// Adds the run held back to the histogram.
    fn flush(&mut self) {
        let (value, n) = std::mem::take(&mut self.run);
        if n > 0 {
            self.hist.saturating_record_n(value, n);
        }
    }

    /// Everything recorded so far.
    pub fn hist(&mut self) -> &Histogram<u64> {
        self.flush();
        &self.hist
    }

    /// Everything recorded so far, without adding the run held back to the
    /// histogram itself: a copy with it when there is one.
    pub fn view(&self) -> Cow<'_, Histogram<u64>> {
        if self.run.1 == 0 {
            return Cow::Borrowed(&self.hist);
        }
        let mut h = self.hist.clone();
        h.saturating_record_n(self.run.0, self.run.1);
        Cow::Owned(h)
    }

    /// Values recorded so far.
    pub fn len(&self) -> u64 {
        self.hist.len() + self.run.1
    }

    /// Nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The recorder a `Path` owns.
#[derive(Debug)]
pub struct Transit {
    hist: RunHistogram,
    /// Exact extremes and sum (the histogram would round them to its 1 %,
    /// and its mean could fall below the minimum).
    min_ns: u64,
    max_ns: u64,
    sum_ns: u128,
}

impl Default for Transit {
    fn default() -> Self {
        Transit::new()
    }
}

impl Transit {
    /// An empty recorder; its histogram is allocated here, once.
    pub fn new() -> Transit {
        Transit {
            hist: RunHistogram::new(
                Histogram::new_with_bounds(1, TRANSIT_MAX_NS, SIGNIFICANT_DIGITS)
                    .expect("constant bounds are valid"),
            ),
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
        }
    }

    /// One delivered frame that spent `ns` in the link.
    pub fn record(&mut self, ns: u64) {
        // Beyond the range it counts as the longest; never fails.
        self.hist.record(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns += ns as u128;
    }

    /// Frames recorded so far.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Count, exact min/mean/max, percentiles and the non-empty log2 buckets of
    /// what was recorded (all zero before the first frame).
    pub fn summary(&self) -> TransitSummary {
        let h = self.hist.view();
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
        // A percentile is the top of its histogram bucket: never above the
        // exact maximum.
        let at = |q: f64| h.value_at_quantile(q).min(self.max_ns);
        TransitSummary {
            count: h.len(),
            min_ns: self.min_ns,
            mean_ns: self.sum_ns as f64 / h.len() as f64,
            p50_ns: at(0.5),
            p90_ns: at(0.9),
            p99_ns: at(0.99),
            p999_ns: at(0.999),
            max_ns: self.max_ns,
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
        let close = |got: u64, want: u64| got.abs_diff(want) <= want / 100 + 1;
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
    fn min_mean_and_max_are_exact_and_bound_the_percentiles() {
        let mut t = Transit::new();
        for ns in [40_000_123, 40_500_000, 41_234_567] {
            t.record(ns);
        }
        let s = t.summary();
        assert_eq!((s.min_ns, s.max_ns), (40_000_123, 41_234_567));
        // The exact mean, not the histogram's (which can fall below the min).
        assert_eq!(
            s.mean_ns,
            (40_000_123 + 40_500_000 + 41_234_567) as f64 / 3.0
        );
        for p in [s.p50_ns, s.p90_ns, s.p99_ns, s.p999_ns] {
            assert!((s.min_ns..=s.max_ns).contains(&p), "{s:?}");
        }
        assert_eq!(s.p999_ns, s.max_ns);
    }

    #[test]
    fn out_of_range_values_saturate_instead_of_failing() {
        let mut t = Transit::new();
        t.record(0);
        t.record(u64::MAX);
        let s = t.summary();
        assert_eq!(s.count, 2);
        assert_eq!((s.min_ns, s.max_ns), (0, u64::MAX), "exact extremes");
        assert!(s.p999_ns >= TRANSIT_MAX_NS - TRANSIT_MAX_NS / 100, "{s:?}");
        assert_eq!(s.buckets.iter().map(|b| b.count).sum::<u64>(), 2);
    }

    proptest::proptest! {
        /// Holding back repeats changes nothing: after any sequence of
        /// values (runs, alternations, out-of-range ones), read at any
        /// points, the histogram equals one that recorded each value.
        #[test]
        fn a_run_histogram_equals_recording_each_value(
            values in proptest::collection::vec(
                (proptest::prop_oneof![0u64..4, 0u64..300, 0u64..u64::MAX], 1usize..6, 0u8..4),
                0..60,
            ),
        ) {
            let empty = Histogram::<u64>::new_with_bounds(1, TRANSIT_MAX_NS, SIGNIFICANT_DIGITS)
                .unwrap();
            let mut each = empty.clone();
            let mut runs = RunHistogram::new(empty);
            let same = |a: &Histogram<u64>, b: &Histogram<u64>| {
                a == b
                    && (a.len(), a.min(), a.max(), a.mean().to_bits())
                        == (b.len(), b.min(), b.max(), b.mean().to_bits())
            };
            for (v, n, read) in values {
                for _ in 0..n {
                    each.saturating_record(v);
                    runs.record(v);
                }
                proptest::prop_assert_eq!(runs.len(), each.len());
                match read {
                    0 => proptest::prop_assert!(same(&runs.view(), &each)),
                    1 => proptest::prop_assert!(same(runs.hist(), &each)),
                    _ => {}
                }
            }
            proptest::prop_assert!(same(&runs.view(), &each));
            proptest::prop_assert!(same(runs.hist(), &each));
            proptest::prop_assert!(same(&runs.view(), &each));
        }
    }
}
