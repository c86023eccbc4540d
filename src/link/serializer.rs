//! The line-rate serializer: frames posted to the TX ring go onto the wire
//! one at a time at `rate_bytes_ps`, each occupying `len + overhead` bytes
//! (preamble, FCS, inter-frame gap). Times are logical: a frame starts at
//! `max(posted, previous departure)` and departs `(len + overhead) / rate`
//! later, carried as an exact rational (ns plus a remainder), so late polls
//! and non-integer frame times never accumulate drift.

use crate::packet::Packet;
use crate::time::{Instant, NS_PER_SEC};
use std::collections::VecDeque;

#[derive(Debug)]
pub struct Serializer {
    rate_bytes_ps: u64,
    overhead: u32,
    /// Frames posted but not yet on the wire, with the time they were posted.
    waiting: VecDeque<(Packet, Instant)>,
    /// The frame on the wire and when its last bit leaves.
    on_wire: Option<(Packet, Instant)>,
    /// When the wire is free, and the fraction of a ns beyond it, in units
    /// of 1/rate ns (always < rate).
    busy_until: Instant,
    busy_rem: u64,
}

impl Serializer {
    /// A wire of `rate_bytes_ps` (0 = unlimited) and `overhead` bytes/frame.
    pub fn new(rate_bytes_ps: u64, overhead: u32) -> Serializer {
        Serializer {
            rate_bytes_ps,
            overhead,
            waiting: VecDeque::new(),
            on_wire: None,
            busy_until: Instant::ZERO,
            busy_rem: 0,
        }
    }

    /// Changes rate and overhead for frames that have not started yet; the
    /// frame on the wire keeps its departure.
    pub fn set_rate(&mut self, rate_bytes_ps: u64, overhead: u32) {
        if rate_bytes_ps != self.rate_bytes_ps {
            self.busy_rem = 0;
        }
        self.rate_bytes_ps = rate_bytes_ps;
        self.overhead = overhead;
    }

    /// Frames posted and not departed (waiting plus on the wire).
    pub fn len(&self) -> usize {
        self.waiting.len() + self.on_wire.is_some() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.on_wire.is_none()
    }

    /// The driver hands a frame to the NIC at `now`.
    pub fn post(&mut self, pkt: Packet, now: Instant) {
        if self.on_wire.is_none() {
            self.start(pkt, now);
        } else {
            self.waiting.push_back((pkt, now));
        }
    }

    fn start(&mut self, pkt: Packet, posted: Instant) {
        if posted > self.busy_until {
            self.busy_until = posted;
            self.busy_rem = 0;
        }
        if self.rate_bytes_ps > 0 {
            let bytes = pkt.len as u128 + self.overhead as u128;
            let total = self.busy_rem as u128 + bytes * NS_PER_SEC as u128;
            let rate = self.rate_bytes_ps as u128;
            let ns = (total / rate).min(u64::MAX as u128) as u64;
            self.busy_until += ns;
            self.busy_rem = (total % rate) as u64;
        }
        self.on_wire = Some((pkt, self.busy_until));
    }

    /// When the frame on the wire departs.
    pub fn next_event(&self) -> Option<Instant> {
        self.on_wire.as_ref().map(|(_, t)| *t)
    }

    /// The frame whose last bit left by `now`, with its departure time; the
    /// next waiting frame goes onto the wire at that departure.
    pub fn pop(&mut self, now: Instant) -> Option<(Packet, Instant)> {
        if self.next_event()? > now {
            return None;
        }
        let (pkt, departed) = self.on_wire.take()?;
        if let Some((next, posted)) = self.waiting.pop_front() {
            self.start(next, posted);
        }
        Some((pkt, departed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::pkt;

    fn departures(s: &mut Serializer, until: Instant) -> Vec<u64> {
        let mut v = Vec::new();
        while let Some((_, t)) = s.pop(until) {
            v.push(t.nanos());
        }
        v
    }

    #[test]
    fn exact_departures_at_12_mbit_with_overhead() {
        // 12 Mbit/s = 1.5 MB/s; 1538 B on the wire = 1025333.33 ns.
        let mut s = Serializer::new(1_500_000, 24);
        for id in 0..6 {
            s.post(pkt(id, 1514), Instant::ZERO);
        }
        assert_eq!(s.len(), 6);
        let d = departures(&mut s, Instant::MAX);
        assert_eq!(
            d,
            vec![1_025_333, 2_050_666, 3_076_000, 4_101_333, 5_126_666, 6_152_000]
        );
    }

    #[test]
    fn exact_departures_at_1_2_gbit_with_overhead() {
        // 1.2 Gbit/s = 150 MB/s; 1538 B = 10253.33 ns.
        let mut s = Serializer::new(150_000_000, 24);
        for id in 0..300 {
            s.post(pkt(id, 1514), Instant::ZERO);
        }
        let d = departures(&mut s, Instant::MAX);
        assert_eq!(&d[..3], &[10_253, 20_506, 30_760]);
        // 300 frames = 300 * 1538 / 150e6 s = 3.076 ms exactly.
        assert_eq!(d[299], 3_076_000);
    }

    #[test]
    fn late_polls_add_no_drift() {
        let mut a = Serializer::new(1_500_000, 24);
        let mut b = Serializer::new(1_500_000, 24);
        for id in 0..50 {
            a.post(pkt(id, 1514), Instant::ZERO);
            b.post(pkt(id, 1514), Instant::ZERO);
        }
        let exact = departures(&mut a, Instant::MAX);
        // Poll b at irregular, late instants.
        let mut late = Vec::new();
        let mut t = 0;
        while late.len() < 50 {
            t += 3_333_333;
            late.extend(departures(&mut b, Instant::from_nanos(t)));
        }
        assert_eq!(exact, late);
    }

    #[test]
    fn idle_gap_restarts_from_arrival() {
        let mut s = Serializer::new(1_000_000, 0); // 1 B/us
        s.post(pkt(1, 100), Instant::ZERO);
        assert_eq!(s.next_event(), Some(Instant::from_micros(100)));
        assert!(s.pop(Instant::from_micros(99)).is_none());
        assert!(s.pop(Instant::from_micros(100)).is_some());
        s.post(pkt(2, 100), Instant::from_micros(500));
        assert_eq!(s.next_event(), Some(Instant::from_micros(600)));
        // Posted while busy: starts at the previous departure.
        s.post(pkt(3, 50), Instant::from_micros(510));
        assert_eq!(s.pop(Instant::MAX).unwrap().1, Instant::from_micros(600));
        assert_eq!(s.pop(Instant::MAX).unwrap().1, Instant::from_micros(650));
        assert!(s.is_empty());
    }

    #[test]
    fn unlimited_rate_departs_at_post() {
        let mut s = Serializer::new(0, 24);
        s.post(pkt(1, 1514), Instant::from_micros(3));
        s.post(pkt(2, 1514), Instant::from_micros(4));
        assert_eq!(departures(&mut s, Instant::MAX), vec![3_000, 4_000]);
    }

    #[test]
    fn rate_change_applies_to_frames_not_started() {
        let mut s = Serializer::new(1_000_000, 0);
        s.post(pkt(1, 100), Instant::ZERO);
        s.post(pkt(2, 100), Instant::ZERO);
        s.set_rate(2_000_000, 0);
        assert_eq!(departures(&mut s, Instant::MAX), vec![100_000, 150_000]);
    }
}
