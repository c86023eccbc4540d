//! Probe samples handed over as they are taken, for a live view: the ICMP
//! and UDP_RR probes push each round trip into a `ProbeFeed` (when their
//! `Run` carries one) as well as into their own raw record, and a reader
//! (the lesson screen) drains what arrived since it last looked. The feed
//! is bounded: samples nobody drains are counted as missed, not kept.

use std::sync::{Arc, Mutex};

use super::stats::Sample;

/// At most this many undrained samples are kept (UDP_RR at 10 ms RTT
/// takes 100 a second, so about ten minutes of them).
pub const FEED_CAPACITY: usize = 65_536;

/// Which probe took a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// The ICMP echo probe (`icmp`).
    Ping,
    /// The UDP request/response probe (`udp_rr`).
    UdpRr,
    /// The ICMP echo probe marked ECT(1), the L4S identifier (`--l4s`).
    PingL4s,
    /// The UDP_RR probe marked ECT(1) (`--l4s`).
    UdpRrL4s,
}

impl Probe {
    /// Every probe, in the order the lesson keeps their samples.
    pub const ALL: [Probe; 4] = [Probe::Ping, Probe::UdpRr, Probe::PingL4s, Probe::UdpRrL4s];

    /// `ping`, `udp_rr` (the names the comparison table uses), and their
    /// L4S twins with the table's `L` before them.
    pub fn name(self) -> &'static str {
        match self {
            Probe::Ping => "ping",
            Probe::UdpRr => "udp_rr",
            Probe::PingL4s => "L ping",
            Probe::UdpRrL4s => "L udp_rr",
        }
    }
}

#[derive(Debug, Default)]
struct Pending {
    samples: Vec<(Probe, Sample)>,
    missed: u64,
}

/// A shared, bounded queue of probe samples (cheap to clone: one `Arc`).
#[derive(Clone, Debug, Default)]
pub struct ProbeFeed(Arc<Mutex<Pending>>);

impl ProbeFeed {
    /// An empty feed.
    pub fn new() -> ProbeFeed {
        ProbeFeed::default()
    }

    /// Adds a sample, or counts it as missed when `FEED_CAPACITY` samples
    /// wait already.
    pub fn push(&self, probe: Probe, sample: Sample) {
        let mut p = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if p.samples.len() < FEED_CAPACITY {
            p.samples.push((probe, sample));
        } else {
            p.missed += 1;
        }
    }

    /// The samples pushed since the last drain, oldest first, and how many
    /// were missed (dropped for want of room) since then.
    pub fn drain(&self) -> (Vec<(Probe, Sample)>, u64) {
        let mut p = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let missed = std::mem::take(&mut p.missed);
        (std::mem::take(&mut p.samples), missed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drain_hands_over_in_order_and_a_full_feed_counts_what_it_misses() {
        let feed = ProbeFeed::new();
        let s = |t: f64| Sample::rtt(t, 1e4);
        feed.push(Probe::Ping, s(0.1));
        feed.clone().push(Probe::UdpRr, s(0.2));
        let (got, missed) = feed.drain();
        assert_eq!(got, vec![(Probe::Ping, s(0.1)), (Probe::UdpRr, s(0.2))]);
        assert_eq!(missed, 0);
        assert_eq!(feed.drain(), (vec![], 0));
        for i in 0..FEED_CAPACITY + 3 {
            feed.push(Probe::Ping, s(i as f64));
        }
        let (got, missed) = feed.drain();
        assert_eq!(got.len(), FEED_CAPACITY);
        assert_eq!(got.last().unwrap().1.t, (FEED_CAPACITY - 1) as f64);
        assert_eq!(missed, 3);
    }
}
