//! The probes' measured latency as a screen holds it, shared by the lesson
//! (`tui::lesson`, one phase at a time) and the live TUI of `bloatbox up`
//! (its probes key, `App::probes`): each probe's samples with their
//! round-trip percentiles, the UDP_RR probe's one-way delays per direction
//! with theirs, and the queue delay the link computes for each direction at
//! each snapshot, all on one time axis in seconds. The percentiles are
//! `load::stats::LatencyStats`, as the comparison table computes them, over
//! the samples from a start the owner chooses (after a phase's warm-up, or
//! the last seconds of a live session). Pure: nothing here reads a clock.

use super::state::App;
use super::Snapshot;
use crate::dir::Dir;
use crate::load::feed::Probe;
use crate::load::stats::{LatencyStats, Sample};

/// One point of the link's own figures: a time on the samples' axis, and
/// the queue delay of each direction (left→right, right→left), ms.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueuePoint {
    /// Seconds, on the samples' time axis.
    pub t: f64,
    /// Queue delay left→right and right→left, ms.
    pub delay_ms: [f64; 2],
}

impl QueuePoint {
    /// Each direction's newest queue delay as `app` (fed the snapshot of
    /// time `t`) shows it.
    pub fn of(t: f64, app: &App) -> QueuePoint {
        let delay = |d: Dir| {
            app.dirs[d.index()]
                .history
                .back()
                .map_or(0.0, |s| s.latency_us as f64 / 1e3)
        };
        QueuePoint {
            t,
            delay_ms: [delay(Dir::LeftToRight), delay(Dir::RightToLeft)],
        }
    }
}

/// The RTT the link's own figures predict for a packet that waits behind
/// each direction's queue: both propagation delays (of `snapshot`) plus
/// both queue delays of `q`, ms (`None` without a snapshot).
pub fn link_rtt_ms(snapshot: Option<&Snapshot>, q: &QueuePoint) -> Option<f64> {
    let s = snapshot?;
    let prop: u64 = Dir::ALL
        .iter()
        .map(|d| s.bridge.path(*d).params.delay_ns)
        .sum();
    Some(prop as f64 / 1e6 + q.delay_ms[0] + q.delay_ms[1])
}

/// The probes' samples, their summaries and the link's queue delays.
#[derive(Clone, Debug, Default)]
pub struct ProbeView {
    /// Each probe's samples (`Probe::ALL` order), oldest first.
    pub samples: [Vec<Sample>; Probe::ALL.len()],
    /// Their round trips' summary, from `from` on.
    pub stats: [LatencyStats; Probe::ALL.len()],
    /// The UDP_RR probe's one-way delays' summary per direction
    /// (left→right, right→left), from `from` on.
    pub one_way: [LatencyStats; 2],
    /// The time the summaries start from, s.
    pub from: f64,
    /// The link's queue delay at each snapshot.
    pub queue: Vec<QueuePoint>,
    /// Samples the feed had to drop (nobody drained it in time).
    pub missed: u64,
}

impl ProbeView {
    /// Takes in new samples and, if any came, summarises every sample from
    /// `from` seconds on.
    pub fn add_samples(&mut self, samples: Vec<(Probe, Sample)>, from: f64) {
        if samples.is_empty() {
            return;
        }
        for (probe, s) in samples {
            self.samples[probe as usize].push(s);
        }
        self.summarise(from);
    }

    /// Summarises every sample from `from` seconds on.
    pub fn summarise(&mut self, from: f64) {
        self.from = from;
        for p in Probe::ALL {
            self.stats[p as usize] = LatencyStats::of(&self.samples[p as usize], from);
        }
        let rr = &self.samples[Probe::UdpRr as usize];
        for d in Dir::ALL {
            self.one_way[d.index()] = LatencyStats::one_way(rr, from, d.index());
        }
    }

    /// Forgets the samples and queue points older than `t` seconds (the
    /// summaries keep theirs until the next `summarise`).
    pub fn forget_before(&mut self, t: f64) {
        for s in &mut self.samples {
            let old = s.partition_point(|s| s.t < t);
            s.drain(..old);
        }
        let old = self.queue.partition_point(|q| q.t < t);
        self.queue.drain(..old);
    }

    /// The oldest time of a sample or a queue point.
    pub fn oldest(&self) -> Option<f64> {
        self.samples
            .iter()
            .filter_map(|s| s.first().map(|s| s.t))
            .chain(self.queue.first().map(|q| q.t))
            .reduce(f64::min)
    }

    /// The newest time of a sample or a queue point.
    pub fn newest(&self) -> Option<f64> {
        self.samples
            .iter()
            .filter_map(|s| s.last().map(|s| s.t))
            .chain(self.queue.last().map(|q| q.t))
            .reduce(f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rr(t: f64, there_ms: f64, back_ms: f64) -> (Probe, Sample) {
        (
            Probe::UdpRr,
            Sample {
                t,
                rtt_us: (there_ms + back_ms) * 1e3,
                one_way_us: Some([there_ms * 1e3, back_ms * 1e3]),
            },
        )
    }

    #[test]
    fn one_way_percentiles_per_direction_beside_the_round_trips() {
        let mut v = ProbeView::default();
        // 100 transactions: 2..=101 ms there, always 5 ms back; a ping.
        let mut samples: Vec<_> = (0..100)
            .map(|i| rr(1.0 + i as f64 * 0.01, 2.0 + i as f64, 5.0))
            .collect();
        samples.push((Probe::Ping, Sample::rtt(1.5, 30_000.0)));
        // One from before `from`: left out of every summary.
        samples.insert(0, rr(0.5, 900.0, 900.0));
        v.add_samples(samples, 1.0);
        let there = &v.one_way[Dir::LeftToRight.index()];
        let back = &v.one_way[Dir::RightToLeft.index()];
        assert_eq!((there.samples, back.samples), (100, 100));
        assert!((there.p50_ms - 51.0).abs() < 0.01, "{there:?}");
        assert!((there.p95_ms - 96.0).abs() < 0.01, "{there:?}");
        assert!((there.p99_ms - 100.0).abs() < 0.01, "{there:?}");
        assert!((back.p50_ms - 5.0).abs() < 0.001 && (back.p99_ms - 5.0).abs() < 0.001);
        let rtt = &v.stats[Probe::UdpRr as usize];
        assert!((rtt.p50_ms - 56.0).abs() < 0.01, "{rtt:?}");
        assert_eq!(v.stats[Probe::Ping as usize].samples, 1);
        // The ICMP probe carries no one-way delays: none counted.
        assert_eq!(
            LatencyStats::one_way(&v.samples[Probe::Ping as usize], 0.0, 0).samples,
            0
        );
    }

    #[test]
    fn the_l4s_probes_are_series_of_their_own() {
        let mut v = ProbeView::default();
        let mut samples = vec![(Probe::Ping, Sample::rtt(1.0, 40_000.0))];
        samples.push((Probe::PingL4s, Sample::rtt(1.1, 22_000.0)));
        samples.push((Probe::PingL4s, Sample::rtt(1.2, 24_000.0)));
        v.add_samples(samples, 0.0);
        assert_eq!(v.stats[Probe::Ping as usize].samples, 1);
        let l = &v.stats[Probe::PingL4s as usize];
        assert_eq!(l.samples, 2);
        assert!(l.p99_ms < 25.0, "{l:?}");
        assert_eq!(v.stats[Probe::UdpRrL4s as usize].samples, 0);
        v.forget_before(1.15);
        assert_eq!(v.samples[Probe::PingL4s as usize].len(), 1);
    }

    #[test]
    fn forgetting_keeps_the_newest_and_the_link_predicts_from_its_delays() {
        let mut v = ProbeView::default();
        v.add_samples(vec![rr(1.0, 1.0, 1.0), rr(2.0, 1.0, 1.0)], 0.0);
        v.queue.push(QueuePoint {
            t: 1.5,
            delay_ms: [3.0, 4.0],
        });
        assert_eq!(v.newest(), Some(2.0));
        assert_eq!(v.oldest(), Some(1.0));
        v.forget_before(1.8);
        assert_eq!(v.samples[Probe::UdpRr as usize].len(), 1);
        assert!(v.queue.is_empty());
        assert_eq!(v.newest(), Some(2.0));
        assert_eq!(ProbeView::default().newest(), None);
        assert_eq!(ProbeView::default().oldest(), None);
        let q = QueuePoint {
            t: 0.0,
            delay_ms: [3.0, 4.0],
        };
        assert_eq!(link_rtt_ms(None, &q), None);
    }
}
