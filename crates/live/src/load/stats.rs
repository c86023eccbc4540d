//! Latency summaries of probe samples: ping's min/avg/max/mdev, percentiles
//! from an HDR histogram, and netperf's decade histogram (UNIT_USEC ..
//! TEN_SEC, ten buckets each).

use hdrhistogram::Histogram;

/// One probe sample: seconds since the test started, round-trip time in µs
/// and, from the UDP_RR probe, the one-way delay of each direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Seconds since the load started (`Run::go`).
    pub t: f64,
    /// Round-trip time, µs.
    pub rtt_us: f64,
    /// The request's delay left→right and the response's right→left, µs
    /// (`udp_rr::one_way_us`); `None` for the ICMP probe.
    pub one_way_us: Option<[f64; 2]>,
}

impl Sample {
    /// A sample with a round-trip time only.
    pub const fn rtt(t: f64, rtt_us: f64) -> Sample {
        Sample {
            t,
            rtt_us,
            one_way_us: None,
        }
    }
}

/// A latency summary of samples, in milliseconds as ping prints them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatencyStats {
    /// Number of samples.
    pub samples: u64,
    /// Shortest round-trip time, ms.
    pub min_ms: f64,
    /// Mean round-trip time, ms.
    pub avg_ms: f64,
    /// Longest round-trip time, ms.
    pub max_ms: f64,
    /// ping's mdev: sqrt(mean(rtt²) - mean(rtt)²).
    pub mdev_ms: f64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
}

/// Largest RTT the percentile histogram holds (100 s, in µs); longer ones
/// are clamped.
const HIST_MAX_US: u64 = 100_000_000;

impl LatencyStats {
    /// Summarises the RTTs of `samples` taken at or after `from` seconds.
    pub fn of(samples: &[Sample], from: f64) -> LatencyStats {
        LatencyStats::of_values(samples.iter().filter(|s| s.t >= from).map(|s| s.rtt_us))
    }

    /// Summarises the one-way delays in direction `dir` (0: left→right,
    /// 1: right→left) of the `samples` taken at or after `from` seconds
    /// that carry them.
    pub fn one_way(samples: &[Sample], from: f64, dir: usize) -> LatencyStats {
        LatencyStats::of_values(
            samples
                .iter()
                .filter(|s| s.t >= from)
                .filter_map(|s| s.one_way_us?.get(dir).copied()),
        )
    }

    /// Summarises times in µs (round trips or one-way delays).
    pub fn of_values(values: impl Iterator<Item = f64>) -> LatencyStats {
        let rtts: Vec<f64> = values.collect();
        if rtts.is_empty() {
            return LatencyStats::default();
        }
        let n = rtts.len() as f64;
        let sum: f64 = rtts.iter().sum();
        let sum_sq: f64 = rtts.iter().map(|r| r * r).sum();
        let avg = sum / n;
        let mdev = (sum_sq / n - avg * avg).max(0.0).sqrt();
        let min = rtts.iter().copied().fold(f64::INFINITY, f64::min);
        let max = rtts.iter().copied().fold(0.0, f64::max);
        // 4 significant digits: about 1 µs of resolution at 10 ms, enough to
        // see a 20 µs coalescing delay on a 10 ms path.
        let mut hist =
            Histogram::<u64>::new_with_bounds(1, HIST_MAX_US, 4).expect("valid histogram bounds");
        for r in &rtts {
            hist.saturating_record((r.round() as u64).clamp(1, HIST_MAX_US));
        }
        let pct = |q: f64| hist.value_at_quantile(q) as f64 / 1e3;
        LatencyStats {
            samples: rtts.len() as u64,
            min_ms: min / 1e3,
            avg_ms: avg / 1e3,
            max_ms: max / 1e3,
            mdev_ms: mdev / 1e3,
            p50_ms: pct(0.50),
            p90_ms: pct(0.90),
            p95_ms: pct(0.95),
            p99_ms: pct(0.99),
        }
    }
}

/// Row names of netperf's histogram, one decade each.
pub const DECADES: [&str; 8] = [
    "UNIT_USEC",
    "TEN_USEC",
    "HUNDRED_USEC",
    "UNIT_MSEC",
    "TEN_MSEC",
    "HUNDRED_MSEC",
    "UNIT_SEC",
    "TEN_SEC",
];

/// netperf's histogram of request/response times: for each decade from 1 µs
/// to 10 s, ten buckets (the decade's leading digit), plus the count of
/// times of 100 s or more.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecadeHistogram {
    /// Counts per decade (row 0: under 10 µs, row 1: 10..100 µs, ... row 7:
    /// 10..100 s) and leading digit (column).
    pub rows: [[u64; 10]; 8],
    /// Times of 100 s or more.
    pub over_100s: u64,
}

impl DecadeHistogram {
    /// Counts one time, µs.
    pub fn record(&mut self, rtt_us: u64) {
        let mut unit = 1u64;
        for row in self.rows.iter_mut() {
            if rtt_us < unit * 10 {
                row[(rtt_us / unit) as usize] += 1;
                return;
            }
            unit *= 10;
        }
        self.over_100s += 1;
    }

    /// The histogram of the samples taken from `from` seconds on.
    pub fn of(samples: &[Sample], from: f64) -> DecadeHistogram {
        let mut h = DecadeHistogram::default();
        for s in samples.iter().filter(|s| s.t >= from) {
            h.record(s.rtt_us as u64);
        }
        h
    }

    /// All counted times.
    pub fn total(&self) -> u64 {
        self.rows.iter().flatten().sum::<u64>() + self.over_100s
    }

    /// As netperf prints it (`-v 2`).
    pub fn render(&self) -> String {
        let mut out = String::from("Histogram of request/response times\n");
        for (name, row) in DECADES.iter().zip(&self.rows) {
            out.push_str(&format!("{name:<14}:"));
            for c in row {
                out.push_str(&format!(" {c:5}:"));
            }
            out.pop();
            out.push('\n');
        }
        out.push_str(&format!(">100_SECS: {}\n", self.over_100s));
        out.push_str(&format!("HIST_TOTAL:      {}\n", self.total()));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(rtts: &[f64]) -> Vec<Sample> {
        rtts.iter()
            .enumerate()
            .map(|(i, &r)| Sample::rtt(i as f64, r))
            .collect()
    }

    #[test]
    fn ping_summary_matches_hand_computed_values() {
        let s = LatencyStats::of(&samples(&[1000.0, 2000.0, 3000.0, 6000.0]), 0.0);
        assert_eq!(s.samples, 4);
        assert!((s.min_ms - 1.0).abs() < 1e-9);
        assert!((s.avg_ms - 3.0).abs() < 1e-9);
        assert!((s.max_ms - 6.0).abs() < 1e-9);
        // mean of squares 12.5 ms², mean² 9 ms² -> sqrt(3.5)
        assert!((s.mdev_ms - 3.5f64.sqrt()).abs() < 1e-6, "{}", s.mdev_ms);
        assert!((s.p50_ms - 2.0).abs() < 0.01, "{}", s.p50_ms);
        assert!((s.p99_ms - 6.0).abs() < 0.01, "{}", s.p99_ms);
    }

    #[test]
    fn warm_up_samples_are_left_out_and_empty_is_all_zero() {
        let s = LatencyStats::of(&samples(&[90_000.0, 1000.0, 1000.0]), 1.0);
        assert_eq!(s.samples, 2);
        assert!((s.max_ms - 1.0).abs() < 1e-9);
        assert_eq!(LatencyStats::of(&[], 0.0), LatencyStats::default());
        assert_eq!(LatencyStats::of(&samples(&[5.0]), 10.0).samples, 0);
    }

    #[test]
    fn decade_histogram_buckets_by_leading_digit() {
        let mut h = DecadeHistogram::default();
        for us in [
            0,
            9,
            10,
            99,
            150,
            1_000,
            42_000,
            9_999_999,
            99_999_999,
            100_000_000,
        ] {
            h.record(us);
        }
        assert_eq!(h.rows[0][0], 1);
        assert_eq!(h.rows[0][9], 1);
        assert_eq!(h.rows[1][1], 1);
        assert_eq!(h.rows[1][9], 1);
        assert_eq!(h.rows[2][1], 1);
        assert_eq!(h.rows[3][1], 1);
        assert_eq!(h.rows[4][4], 1);
        assert_eq!(h.rows[6][9], 1);
        assert_eq!(h.rows[7][9], 1);
        assert_eq!(h.over_100s, 1);
        assert_eq!(h.total(), 10);
        let text = h.render();
        assert!(
            text.contains("TEN_MSEC      :     0:     0:     0:     0:     1:"),
            "{text}"
        );
        assert!(text.contains("HIST_TOTAL:      10"), "{text}");
    }
}
