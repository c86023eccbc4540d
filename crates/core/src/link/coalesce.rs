//! NIC interrupt coalescing (`ethtool -C`; the contract of
//! include/uapi/linux/ethtool.h `struct ethtool_coalesce` and
//! Documentation/networking/ethtool-netlink.rst `COALESCE_SET`): one
//! `Coalescer` holds completed items (sent frames for TX, received frames for
//! RX) and releases them as a batch when `usecs` have passed since the first
//! held item or when `max_frames` are held, whichever comes first. The timer
//! starts at the first item after the previous interrupt (EQE mode).
//! `usecs 0, max_frames 1` means one interrupt per item; both 0 (never
//! interrupt, illegal in ethtool) is treated as one interrupt per item.

use crate::time::{Instant, NS_PER_US};
use std::collections::VecDeque;

/// Holds items until the coalescing condition fires.
#[derive(Clone, Debug)]
pub struct Coalescer<T> {
    usecs: u32,
    max_frames: u32,
    /// The held items, each with the instant it completed.
    held: VecDeque<(T, Instant)>,
    /// When the first held item arrived.
    first: Option<Instant>,
    /// When the latest item arrived.
    last: Instant,
}

impl<T> Coalescer<T> {
    /// A coalescer that fires `usecs` microseconds after the first held item or
    /// at `max_frames` held items, whichever comes first (ethtool -C
    /// `rx-usecs`/`rx-frames` or `tx-usecs`/`tx-frames`).
    pub fn new(usecs: u32, max_frames: u32) -> Coalescer<T> {
        Coalescer {
            usecs,
            max_frames,
            held: VecDeque::new(),
            first: None,
            last: Instant::ZERO,
        }
    }

    /// Changes the settings; held items stay and the new rule applies from
    /// the first held item's time.
    pub fn set(&mut self, usecs: u32, max_frames: u32) {
        self.usecs = usecs;
        self.max_frames = max_frames;
    }

    /// Items held, waiting for the interrupt.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// The held items, oldest first, each with the instant it completed.
    pub fn queued(&self) -> impl Iterator<Item = (&T, Instant)> + Clone {
        self.held.iter().map(|(item, at)| (item, *at))
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// An item completes at `now`.
    pub fn push(&mut self, item: T, now: Instant) {
        if self.held.is_empty() {
            self.first = Some(now);
        }
        self.last = now;
        self.held.push_back((item, now));
    }

    fn frames_reached(&self) -> bool {
        let max = if self.usecs == 0 && self.max_frames == 0 {
            1
        } else {
            self.max_frames
        };
        max > 0 && self.held.len() >= max as usize
    }

    /// When the interrupt fires: now if `max_frames` are held, else `usecs`
    /// after the first held item; `None` when nothing is held.
    pub fn next_event(&self) -> Option<Instant> {
        let first = self.first.filter(|_| !self.held.is_empty())?;
        if self.frames_reached() {
            // Fired by the frame that reached max_frames: the latest one.
            return Some(self.last);
        }
        (self.usecs > 0).then(|| first + self.usecs as u64 * NS_PER_US)
    }

    /// If the interrupt has fired by `now`, hands the whole batch to `sink`
    /// and returns the time it fired.
    pub fn fire(&mut self, now: Instant, mut sink: impl FnMut(T)) -> Option<Instant> {
        let at = self.next_event().filter(|t| *t <= now)?;
        for (item, _) in self.held.drain(..) {
            sink(item);
        }
        self.first = None;
        Some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds frames at `arrivals` (µs) and fires at every event, in time
    /// order as a driver would; returns (frame arrival, delivery) pairs.
    fn run(usecs: u32, max_frames: u32, arrivals: &[u64]) -> Vec<(u64, u64)> {
        let mut c = Coalescer::new(usecs, max_frames);
        let mut out = Vec::new();
        let mut i = 0;
        loop {
            let next_arrival = arrivals.get(i).map(|us| Instant::from_micros(*us));
            let event = c.next_event();
            match (next_arrival, event) {
                (Some(a), Some(e)) if e < a => {
                    c.fire(e, |x: u64| out.push((x, e.nanos() / 1000)));
                }
                (Some(a), _) => {
                    c.push(a.nanos() / 1000, a);
                    i += 1;
                    // A frame that completes the batch fires at its arrival.
                    c.fire(a, |x: u64| out.push((x, a.nanos() / 1000)));
                }
                (None, Some(e)) => {
                    c.fire(e, |x: u64| out.push((x, e.nanos() / 1000)));
                }
                (None, None) => break,
            }
        }
        out
    }

    #[test]
    fn n1_rx_usecs_50_frames_0() {
        let arrivals: Vec<u64> = (0..20).map(|i| i * 12).collect();
        let out = run(50, 0, &arrivals);
        assert_eq!(out.len(), 20);
        // IRQs at 50, 110, 170, 230 µs, 5 frames each.
        for (k, irq) in [50, 110, 170, 230].iter().enumerate() {
            let batch = &out[k * 5..k * 5 + 5];
            assert!(batch.iter().all(|(_, d)| d == irq), "{batch:?}");
            let lat: Vec<u64> = batch.iter().map(|(a, d)| d - a).collect();
            assert_eq!(lat, vec![50, 38, 26, 14, 2]);
        }
        let mean: f64 = out.iter().map(|(a, d)| (d - a) as f64).sum::<f64>() / 20.0;
        assert_eq!(mean, 26.0);
    }

    #[test]
    fn n3_lone_packet() {
        assert_eq!(run(50, 32, &[1000]), vec![(1000, 1050)]);
        assert_eq!(run(0, 1, &[1000]), vec![(1000, 1000)]);
        assert_eq!(run(50, 1, &[1000]), vec![(1000, 1000)]);
    }

    #[test]
    fn max_frames_fires_before_the_timer() {
        // rx-usecs 50 rx-frames 3, frames every 12 µs: batches of 3 at the
        // third frame's arrival.
        let arrivals: Vec<u64> = (0..6).map(|i| i * 12).collect();
        let out = run(50, 3, &arrivals);
        let deliveries: Vec<u64> = out.iter().map(|(_, d)| *d).collect();
        assert_eq!(deliveries, vec![24, 24, 24, 60, 60, 60]);
    }

    #[test]
    fn frames_only_waits_for_the_count() {
        let mut c = Coalescer::new(0, 4);
        for t in 0..3 {
            c.push(t, Instant::from_micros(t));
        }
        assert_eq!(c.next_event(), None, "no timer: waits for the 4th frame");
        c.push(3, Instant::from_micros(100));
        assert_eq!(c.next_event(), Some(Instant::from_micros(100)));
        let mut got = Vec::new();
        assert!(c.fire(Instant::from_micros(100), |x| got.push(x)).is_some());
        assert_eq!(got, vec![0, 1, 2, 3]);
        assert!(c.is_empty() && c.next_event().is_none());
    }

    #[test]
    fn both_zero_means_per_frame() {
        let mut c = Coalescer::new(0, 0);
        c.push(1u8, Instant::from_micros(7));
        assert_eq!(c.next_event(), Some(Instant::from_micros(7)));
    }

    #[test]
    fn fire_before_the_deadline_does_nothing() {
        let mut c = Coalescer::new(50, 0);
        c.push(1u8, Instant::from_micros(10));
        assert_eq!(c.fire(Instant::from_micros(59), |_| panic!()), None);
        assert_eq!(c.len(), 1);
        assert_eq!(
            c.fire(Instant::from_micros(500), |_| {}),
            Some(Instant::from_micros(60)),
            "a late poll reports the logical firing time"
        );
    }

    #[test]
    fn settings_change_applies_to_held_items() {
        let mut c = Coalescer::new(1000, 0);
        c.push(1u8, Instant::from_micros(10));
        c.set(20, 0);
        assert_eq!(c.next_event(), Some(Instant::from_micros(30)));
        c.set(1000, 1);
        assert_eq!(c.next_event(), Some(Instant::from_micros(10)));
    }
}
