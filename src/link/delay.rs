//! The propagation delay line: every frame leaves `delay_ns` after it left
//! the serializer. A link does not reorder, so after a delay decrease a
//! frame never overtakes the one in front of it.

use crate::packet::Packet;
use crate::time::Instant;
use std::collections::VecDeque;

#[derive(Debug)]
pub struct DelayLine {
    delay_ns: u64,
    in_flight: VecDeque<(Packet, Instant)>,
}

impl DelayLine {
    pub fn new(delay_ns: u64) -> DelayLine {
        DelayLine {
            delay_ns,
            in_flight: VecDeque::new(),
        }
    }

    /// Applies to frames entering from now on.
    pub fn set_delay(&mut self, delay_ns: u64) {
        self.delay_ns = delay_ns;
    }

    pub fn len(&self) -> usize {
        self.in_flight.len()
    }

    pub fn is_empty(&self) -> bool {
        self.in_flight.is_empty()
    }

    /// A frame left the serializer at `departed`.
    pub fn push(&mut self, pkt: Packet, departed: Instant) {
        let mut exit = departed + self.delay_ns;
        if let Some((_, last)) = self.in_flight.back() {
            exit = exit.max(*last);
        }
        self.in_flight.push_back((pkt, exit));
    }

    /// When the front frame reaches the far end.
    pub fn next_event(&self) -> Option<Instant> {
        self.in_flight.front().map(|(_, t)| *t)
    }

    /// The front frame if it arrived by `now`, with its arrival time.
    pub fn pop(&mut self, now: Instant) -> Option<(Packet, Instant)> {
        if self.next_event()? > now {
            return None;
        }
        self.in_flight.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::pkt;

    #[test]
    fn frames_exit_after_the_delay_in_order() {
        let mut d = DelayLine::new(10_000);
        d.push(pkt(1, 100), Instant::from_nanos(5));
        d.push(pkt(2, 100), Instant::from_nanos(7));
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
        d.push(pkt(1, 100), Instant::ZERO);
        d.set_delay(1_000);
        d.push(pkt(2, 100), Instant::from_nanos(100));
        d.push(pkt(3, 100), Instant::from_nanos(20_000));
        let exits: Vec<u64> = std::iter::from_fn(|| d.pop(Instant::MAX))
            .map(|(_, t)| t.nanos())
            .collect();
        assert_eq!(exits, vec![10_000, 10_000, 21_000]);
    }

    #[test]
    fn zero_delay_passes_through() {
        let mut d = DelayLine::new(0);
        d.push(pkt(1, 1), Instant::from_micros(1));
        assert_eq!(
            d.pop(Instant::from_micros(1)).unwrap().1,
            Instant::from_micros(1)
        );
    }
}
