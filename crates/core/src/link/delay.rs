//! The propagation delay line: every frame leaves `delay_ns` (plus the
//! extra latency the impairments drew for it) after it left the
//! serializer. A link does not reorder, so after a delay decrease or with
//! jitter a frame never overtakes the one in front of it, unless
//! reordering is allowed: then frames leave in order of their exit times
//! (ties in order of entry).

use crate::packet::Packet;
use crate::time::Instant;
use std::collections::VecDeque;

/// The propagation delay stage: frames in flight, each with the time its last
/// bit reaches the other end.
#[derive(Debug)]
pub struct DelayLine {
    delay_ns: u64,
    reorder: bool,
    /// Sorted by exit time; each with the time it entered.
    in_flight: VecDeque<(Packet, Instant, Instant)>,
}

impl DelayLine {
    /// A delay line of `delay_ns` nanoseconds that keeps frames in order.
    pub fn new(delay_ns: u64) -> DelayLine {
        DelayLine {
            delay_ns,
            reorder: false,
            in_flight: VecDeque::new(),
        }
    }

    /// The delay a frame entering now gets (before impairments).
    pub fn delay_ns(&self) -> u64 {
        self.delay_ns
    }

    /// Applies to frames entering from now on.
    pub fn set_delay(&mut self, delay_ns: u64) {
        self.delay_ns = delay_ns;
    }

    /// Lets frames entering from now on overtake those in front.
    pub fn set_reorder(&mut self, reorder: bool) {
        self.reorder = reorder;
    }

    /// Frames in flight.
    pub fn len(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether no frame is in flight.
    pub fn is_empty(&self) -> bool {
        self.in_flight.is_empty()
    }

    /// A frame left the serializer at `departed`; `extra_ns` is added to
    /// the delay.
    pub fn push(&mut self, pkt: Packet, departed: Instant, extra_ns: u64) {
        let exit = departed + self.delay_ns + extra_ns;
        if self.reorder {
            let at = self.in_flight.partition_point(|(_, t, _)| *t <= exit);
            self.in_flight.insert(at, (pkt, exit, departed));
        } else {
            let last = self.in_flight.back().map_or(exit, |(_, t, _)| *t);
            self.in_flight.push_back((pkt, exit.max(last), departed));
        }
    }

    /// When the front frame reaches the far end.
    pub fn next_event(&self) -> Option<Instant> {
        self.in_flight.front().map(|(_, t, _)| *t)
    }

    /// The frames in propagation, each with the instant it entered.
    pub fn queued(&self) -> impl Iterator<Item = (&Packet, Instant)> + Clone {
        self.in_flight.iter().map(|(p, _, entered)| (p, *entered))
    }

    /// The front frame if it arrived by `now`, with its arrival time.
    pub fn pop(&mut self, now: Instant) -> Option<(Packet, Instant)> {
        if self.next_event()? > now {
            return None;
        }
        self.in_flight.pop_front().map(|(p, exit, _)| (p, exit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::pkt;

    #[test]
    fn frames_exit_after_the_delay_in_order() {
        let mut d = DelayLine::new(10_000);
        d.push(pkt(1, 100), Instant::from_nanos(5), 0);
        d.push(pkt(2, 100), Instant::from_nanos(7), 0);
        assert_eq!(d.next_event(), Some(Instant::from_nanos(10_005)));
        assert!(d.pop(Instant::from_nanos(10_004)).is_none());
        let (p, t) = d.pop(Instant::from_nanos(20_000)).unwrap();
        assert_eq!((p.meta.id, t.nanos()), (1, 10_005));
        let (p, t) = d.pop(Instant::from_nanos(20_000)).unwrap();
        assert_eq!((p.meta.id, t.nanos()), (2, 10_007));
        assert!(d.is_empty());
    }

    #[test]
    fn delay_decrease_never_reorders() {
        let mut d = DelayLine::new(10_000);
        d.push(pkt(1, 100), Instant::ZERO, 0);
        d.set_delay(1_000);
        d.push(pkt(2, 100), Instant::from_nanos(100), 0);
        d.push(pkt(3, 100), Instant::from_nanos(20_000), 0);
        let exits: Vec<u64> = std::iter::from_fn(|| d.pop(Instant::MAX))
            .map(|(_, t)| t.nanos())
            .collect();
        assert_eq!(exits, vec![10_000, 10_000, 21_000]);
    }

    #[test]
    fn zero_delay_passes_through() {
        let mut d = DelayLine::new(0);
        d.push(pkt(1, 1), Instant::from_micros(1), 0);
        assert_eq!(
            d.pop(Instant::from_micros(1)).unwrap().1,
            Instant::from_micros(1)
        );
    }

    #[test]
    fn extra_latency_holds_back_followers_unless_reordering() {
        let exits = |reorder: bool| {
            let mut d = DelayLine::new(1_000);
            d.set_reorder(reorder);
            d.push(pkt(1, 1), Instant::ZERO, 5_000);
            d.push(pkt(2, 1), Instant::from_nanos(10), 0);
            d.push(pkt(3, 1), Instant::from_nanos(20), 4_980);
            d.push(pkt(4, 1), Instant::from_nanos(30), 0);
            std::iter::from_fn(|| d.pop(Instant::MAX))
                .map(|(p, t)| (p.meta.id, t.nanos()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            exits(false),
            vec![(1, 6_000), (2, 6_000), (3, 6_000), (4, 6_000)]
        );
        // Sorted by exit time; 1 and 3 tie at 6000 ns and keep their order.
        assert_eq!(
            exits(true),
            vec![(2, 1_010), (4, 1_030), (1, 6_000), (3, 6_000)]
        );
    }
}
