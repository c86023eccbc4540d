//! Transit time through one direction of the emulated link: from a frame's
//! ingress (`PacketMeta::arrival`) to its delivery to the receiving side,
//! i.e. qdisc queueing + ring + serialization + propagation delay + RX
//! coalescing. `Path` records every delivered frame at its logical delivery
//! time, so no clock is read; the HDR histogram is allocated once (bounded
//! range, about 30 KiB, with a table of counts as large: `Tally`) and
//! recording never allocates.
//!
//! Two significant digits (values within 1 %): a summary then walks a few
//! thousand counters instead of tens of thousands, which matters because the
//! live datapath builds snapshots on its own thread (three digits made each
//! summary about ten times slower).
//!
//! `TransitSummary` is what snapshots and reports carry: count, min, mean,
//! the usual percentiles and max, plus log2 buckets from 1 µs.
//!
//! `Tally` is how every per-frame histogram records: a counter increment
//! in the histogram's own layout, added to the histogram when it is read,
//! and the exact extremes beside it, which the histogram would round to
//! its buckets' bounds (a quantile is its bucket's highest value, so it is
//! capped at the exact maximum).

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

/// An HDR histogram from 1 to `high` whose recording is a counter
/// increment: values are counted in a table of the histogram's own layout
/// (the same index for every value, from `sigfig` as
/// `Histogram::new_with_bounds` works it out) and added to the histogram, one `saturating_record_n`
/// per index in use, when it is read. Every value goes to the histogram
/// index it would have gone to, out-of-range ones clamped as
/// `saturating_record` clamps them, so the counts and the total are those
/// of recording each value, and so is everything the histogram tells
/// (its min, max, mean and quantiles are those of its buckets); only the
/// exact extremes it keeps inside are those of the bucket, and the exact
/// ones are kept here (`min`, `max`). A `saturating_record` is some 60
/// instructions, most of them range checks and the tracking of those
/// extremes; this is about 15.
#[derive(Clone, Debug)]
pub struct Tally {
    hist: Histogram<u64>,
    layout: Layout,
    /// Values counted per histogram index, not yet added to `hist`.
    counts: Box<[u64]>,
    /// Values in `counts`.
    pending: u64,
    /// The lowest and highest index counted since the last addition.
    span: (usize, usize),
    /// The index `hist`'s highest trackable value falls in.
    top: usize,
    /// The smallest and largest value recorded, exactly and unclamped
    /// (`u64::MAX` and 0 before the first).
    extremes: (u64, u64),
}

/// Where a histogram whose lowest discernible value is 1 counts a value:
/// its sub-bucket half-count magnitude, leading-zero base and sub-bucket
/// mask, as `Histogram::new_with_bounds` works them out. (With a coarser
/// unit, index 0 would hold zero, which the histogram's extremes ignore,
/// with small values, which they do not.)
#[derive(Clone, Copy, Debug)]
struct Layout {
    half: u32,
    base: u32,
    mask: u64,
}

impl Layout {
    /// The layout for `sigfig` significant digits: values up to
    /// 2 * 10^sigfig have unit resolution, in sub-buckets of the next power
    /// of two.
    fn of(sigfig: u8) -> Layout {
        let largest = 2 * 10u64.pow(u32::from(sigfig));
        let magnitude = 64 - (largest - 1).leading_zeros();
        Layout {
            half: magnitude - 1,
            base: 64 - magnitude,
            mask: (1u64 << magnitude) - 1,
        }
    }

    /// The index of `value` (`Histogram::index_for`), possibly past the
    /// last one.
    #[inline]
    fn index(self, value: u64) -> usize {
        let bucket = self.base - (value | self.mask).leading_zeros();
        let sub = (value >> bucket) as usize;
        ((bucket as usize + 1) << self.half) + sub - (1 << self.half)
    }

    /// The lowest value of index `i` (`Histogram::value_for`).
    fn value_of(self, i: usize) -> u64 {
        let half = 1usize << self.half;
        let (bucket, sub) = match (i >> self.half).checked_sub(1) {
            Some(b) if b > 0 => (b as u32, (i & (half - 1)) + half),
            _ => (0, i),
        };
        (sub as u64) << bucket
    }

    /// Adds the values counted in `counts[span]` to `hist`.
    fn add(self, counts: &[u64], span: (usize, usize), hist: &mut Histogram<u64>) {
        let Some(counted) = counts.get(span.0..=span.1) else {
            return;
        };
        for (i, &c) in counted.iter().enumerate() {
            if c > 0 {
                hist.saturating_record_n(self.value_of(span.0 + i), c);
            }
        }
    }
}

impl Tally {
    /// An empty histogram from 1 to `high` with `sigfig` significant
    /// digits (`Histogram::new_with_bounds`).
    pub fn new(high: u64, sigfig: u8) -> Result<Tally, hdrhistogram::CreationError> {
        let hist = Histogram::new_with_bounds(1, high, sigfig)?;
        let layout = Layout::of(sigfig);
        let counts = vec![0; hist.distinct_values()].into_boxed_slice();
        Ok(Tally {
            top: layout
                .index(hist.high())
                .min(counts.len().saturating_sub(1)),
            hist,
            layout,
            counts,
            pending: 0,
            span: (usize::MAX, 0),
            extremes: (u64::MAX, 0),
        })
    }

    /// Records `value` once (clamped to the histogram's range as
    /// `saturating_record` does; the extremes take it as it is).
    #[inline]
    pub fn record(&mut self, value: u64) {
        self.extremes = (self.extremes.0.min(value), self.extremes.1.max(value));
        let mut i = self.layout.index(value);
        if i >= self.counts.len() {
            i = self.top;
        }
        if let Some(c) = self.counts.get_mut(i) {
            *c = c.saturating_add(1);
            self.pending += 1;
            self.span = (self.span.0.min(i), self.span.1.max(i));
        }
    }

    /// Everything recorded so far.
    pub fn hist(&mut self) -> &Histogram<u64> {
        if self.pending > 0 {
            self.layout.add(&self.counts, self.span, &mut self.hist);
            if let Some(added) = self.counts.get_mut(self.span.0..=self.span.1) {
                added.fill(0);
            }
            self.pending = 0;
            self.span = (usize::MAX, 0);
        }
        &self.hist
    }

    /// Everything recorded so far, without adding what was counted to the
    /// histogram itself: a copy with it when there is some.
    pub fn view(&self) -> Cow<'_, Histogram<u64>> {
        if self.pending == 0 {
            return Cow::Borrowed(&self.hist);
        }
        let mut h = self.hist.clone();
        self.layout.add(&self.counts, self.span, &mut h);
        Cow::Owned(h)
    }

    /// The smallest value recorded, exactly (0 before the first).
    pub fn min(&self) -> u64 {
        if self.is_empty() {
            0
        } else {
            self.extremes.0
        }
    }

    /// The largest value recorded, exactly (0 before the first). No
    /// quantile the histogram reads lies above it but for its bucket's
    /// rounding, so quantiles are capped at it.
    pub fn max(&self) -> u64 {
        self.extremes.1
    }

    /// Values recorded so far.
    pub fn len(&self) -> u64 {
        self.hist.len() + self.pending
    }

    /// Nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The recorder a `Path` owns.
#[derive(Debug)]
pub struct Transit {
    /// The histogram, with the exact extremes.
    hist: Tally,
    /// The exact sum (the histogram's mean could fall below the minimum).
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
            hist: Tally::new(TRANSIT_MAX_NS, SIGNIFICANT_DIGITS)
                .expect("constant bounds are valid"),
            sum_ns: 0,
        }
    }

    /// One delivered frame that spent `ns` in the link.
    pub fn record(&mut self, ns: u64) {
        // Beyond the range it counts as the longest; never fails.
        self.hist.record(ns);
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
        let at = |q: f64| h.value_at_quantile(q).min(self.hist.max());
        TransitSummary {
            count: h.len(),
            min_ns: self.hist.min(),
            mean_ns: self.sum_ns as f64 / h.len() as f64,
            p50_ns: at(0.5),
            p90_ns: at(0.9),
            p99_ns: at(0.99),
            p999_ns: at(0.999),
            max_ns: self.hist.max(),
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
        /// Counting apart changes nothing: after any sequence of values (in
        /// range, zero, past the highest trackable, runs of one value),
        /// read at any points, in any layout in use (transit's, the stage
        /// breakdown's and the lateness histograms', three digits, one digit),
        /// the histogram equals one that recorded each value, and so does
        /// everything it tells; the extremes are exact.
        #[test]
        fn a_tally_equals_recording_each_value(
            bounds in proptest::prop_oneof![
                proptest::strategy::Just((TRANSIT_MAX_NS, 2u8)),
                proptest::strategy::Just((10 * NS_PER_SEC, 2)),
                proptest::strategy::Just((10 * NS_PER_SEC, 3)),
                proptest::strategy::Just((1 << 20, 1)),
            ],
            values in proptest::collection::vec(
                (
                    proptest::prop_oneof![0u64..4, 0u64..5000, 0u64..u64::MAX, 0u64..(1 << 40)],
                    1usize..4,
                    0u8..4,
                ),
                0..80,
            ),
        ) {
            let mut each = Histogram::<u64>::new_with_bounds(1, bounds.0, bounds.1).unwrap();
            let mut tally = Tally::new(bounds.0, bounds.1).unwrap();
            let same = |a: &Histogram<u64>, b: &Histogram<u64>| {
                let told = |h: &Histogram<u64>| {
                    (
                        h.len(),
                        h.min(),
                        h.max(),
                        h.mean().to_bits(),
                        h.stdev().to_bits(),
                        h.value_at_quantile(0.5),
                        h.value_at_quantile(0.999),
                    )
                };
                a == b && told(a) == told(b)
            };
            let mut extremes = (u64::MAX, 0);
            for (v, n, read) in values {
                for _ in 0..n {
                    each.saturating_record(v);
                    tally.record(v);
                }
                extremes = (extremes.0.min(v), extremes.1.max(v));
                proptest::prop_assert_eq!((tally.min(), tally.max()), extremes);
                proptest::prop_assert_eq!(tally.len(), each.len());
                match read {
                    0 => proptest::prop_assert!(same(&tally.view(), &each)),
                    1 => proptest::prop_assert!(same(tally.hist(), &each)),
                    _ => {}
                }
            }
            proptest::prop_assert!(same(&tally.view(), &each));
            proptest::prop_assert!(same(tally.hist(), &each));
            proptest::prop_assert!(same(&tally.view(), &each));
        }
    }
}
