//! NIC interrupt coalescing (`ethtool -C`; the contract of
//! include/uapi/linux/ethtool.h `struct ethtool_coalesce` and
//! Documentation/networking/ethtool-netlink.rst `COALESCE_SET`): one
//! `Coalescer` holds completed items (sent frames for TX, received frames for
//! RX) and releases them as a batch when `usecs` have passed since the first
//! held item or when `max_frames` are held, whichever comes first. The timer
//! starts at the first item after the previous interrupt (EQE mode, the
//! default); in CQE mode (`ethtool -C cqe-mode-rx on`, as mlx5's
//! `MLX5_CQ_PERIOD_MODE_START_FROM_CQE` does it) it restarts at every
//! completion, so while items keep arriving less than `usecs` apart only
//! `max_frames` fires. With adaptive moderation (`adaptive-rx on`) a
//! net_dim tuner (`link::dim`) sets `usecs` and `max_frames` from what each
//! interrupt handled. `usecs 0, max_frames 1` means one interrupt per
//! item; both 0 (never interrupt, illegal in ethtool) is treated as one
//! interrupt per item.

use super::dim::{Dim, DimSide};
use crate::time::{Instant, NS_PER_US};
use std::collections::VecDeque;

/// One coalescer's `ethtool -C` settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoalesceSettings {
    /// `rx-usecs`/`tx-usecs`.
    pub usecs: u32,
    /// `rx-frames`/`tx-frames`.
    pub max_frames: u32,
    /// `cqe-mode-rx`/`cqe-mode-tx`.
    pub cqe: bool,
    /// `adaptive-rx`/`adaptive-tx` on: the side net_dim moderates.
    pub adaptive: Option<DimSide>,
}

/// Holds items until the coalescing condition fires.
#[derive(Clone, Debug)]
pub struct Coalescer<T> {
    usecs: u32,
    max_frames: u32,
    /// CQE mode: the timer counts from the latest item.
    cqe: bool,
    /// The held items, each with the instant it completed.
    held: VecDeque<(T, Instant)>,
    /// When the first held item arrived.
    first: Option<Instant>,
    /// When the latest item arrived.
    last: Instant,
    /// The held items' bytes.
    held_bytes: u64,
    /// Adaptive moderation: the tuner that sets `usecs` and `max_frames`.
    dim: Option<Dim>,
}

impl<T> Coalescer<T> {
    /// A coalescer that fires `usecs` microseconds after the first held item or
    /// at `max_frames` held items, whichever comes first (ethtool -C
    /// `rx-usecs`/`rx-frames` or `tx-usecs`/`tx-frames`); in CQE mode
    /// (`cqe`) `usecs` after the latest held item.
    pub fn new(usecs: u32, max_frames: u32, cqe: bool) -> Coalescer<T> {
        Coalescer {
            usecs,
            max_frames,
            cqe,
            held: VecDeque::new(),
            first: None,
            last: Instant::ZERO,
            held_bytes: 0,
            dim: None,
        }
    }

    /// A coalescer set up as `configure` does.
    pub fn configured(settings: CoalesceSettings) -> Coalescer<T> {
        let mut c = Coalescer::new(settings.usecs, settings.max_frames, settings.cqe);
        c.configure(settings);
        c
    }

    /// Changes the settings; held items stay and the new rule applies from
    /// the first (CQE mode: the latest) held item's time.
    pub fn set(&mut self, usecs: u32, max_frames: u32, cqe: bool) {
        self.usecs = usecs;
        self.max_frames = max_frames;
        self.cqe = cqe;
    }

    /// Applies `ethtool -C` settings: the fixed `usecs` and `max_frames`,
    /// or with `adaptive` (`adaptive-rx on`) the profiles of net_dim for
    /// that side, starting from its default profile when adaptive
    /// moderation is turned on or the CQE mode changes (as a driver sets
    /// its tuner up again); a tuner already running keeps its profile.
    pub fn configure(&mut self, settings: CoalesceSettings) {
        let cqe = settings.cqe;
        let Some(side) = settings.adaptive else {
            self.dim = None;
            self.set(settings.usecs, settings.max_frames, cqe);
            return;
        };
        if self.dim.is_none() || self.cqe != cqe {
            let dim = Dim::new(side, cqe);
            let start = dim.initial();
            self.dim = Some(dim);
            self.set(start.usecs, start.frames, cqe);
        }
    }

    /// The `usecs` and `max_frames` in force (net_dim's current profile
    /// under adaptive moderation).
    pub fn moderation(&self) -> (u32, u32) {
        (self.usecs, self.max_frames)
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

    /// An item of `bytes` completes at `now`.
    pub fn push(&mut self, item: T, bytes: u64, now: Instant) {
        if self.held.is_empty() {
            self.first = Some(now);
        }
        self.last = now;
        self.held_bytes += bytes;
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
    /// after the first held item (CQE mode: the latest); `None` when
    /// nothing is held.
    pub fn next_event(&self) -> Option<Instant> {
        let first = self.first.filter(|_| !self.held.is_empty())?;
        if self.frames_reached() {
            // Fired by the frame that reached max_frames: the latest one.
            return Some(self.last);
        }
        let from = if self.cqe { self.last } else { first };
        (self.usecs > 0).then(|| from + self.usecs as u64 * NS_PER_US)
    }

    /// If the interrupt has fired by `now`, hands the whole batch to `sink`
    /// and returns the time it fired.
    pub fn fire(&mut self, now: Instant, mut sink: impl FnMut(T)) -> Option<Instant> {
        let at = self.next_event().filter(|t| *t <= now)?;
        let frames = self.held.len() as u64;
        // Popped one by one: a `drain(..)` costs some 60 instructions more
        // per batch (its iterator and drop guard) on the per-frame path.
        while let Some((item, _)) = self.held.pop_front() {
            sink(item);
        }
        self.first = None;
        let bytes = std::mem::take(&mut self.held_bytes);
        if let Some(m) = self
            .dim
            .as_mut()
            .and_then(|d| d.interrupt(at, frames, bytes))
        {
            self.usecs = m.usecs;
            self.max_frames = m.frames;
        }
        Some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds frames at `arrivals` (µs) and fires at every event, in time
    /// order as a driver would; returns (frame arrival, delivery) pairs.
    fn run(usecs: u32, max_frames: u32, arrivals: &[u64]) -> Vec<(u64, u64)> {
        run_mode(usecs, max_frames, false, arrivals)
    }

    /// `run` in EQE (`cqe` false) or CQE mode.
    fn run_mode(usecs: u32, max_frames: u32, cqe: bool, arrivals: &[u64]) -> Vec<(u64, u64)> {
        let mut c = Coalescer::new(usecs, max_frames, cqe);
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
                    c.push(a.nanos() / 1000, 100, a);
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
        let mut c = Coalescer::new(0, 4, false);
        for t in 0..3 {
            c.push(t, 100, Instant::from_micros(t));
        }
        assert_eq!(c.next_event(), None, "no timer: waits for the 4th frame");
        c.push(3, 100, Instant::from_micros(100));
        assert_eq!(c.next_event(), Some(Instant::from_micros(100)));
        let mut got = Vec::new();
        assert!(c.fire(Instant::from_micros(100), |x| got.push(x)).is_some());
        assert_eq!(got, vec![0, 1, 2, 3]);
        assert!(c.is_empty() && c.next_event().is_none());
    }

    #[test]
    fn both_zero_means_per_frame() {
        let mut c = Coalescer::new(0, 0, false);
        c.push(1u8, 100, Instant::from_micros(7));
        assert_eq!(c.next_event(), Some(Instant::from_micros(7)));
    }

    #[test]
    fn fire_before_the_deadline_does_nothing() {
        let mut c = Coalescer::new(50, 0, false);
        c.push(1u8, 100, Instant::from_micros(10));
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
        let mut c = Coalescer::new(1000, 0, false);
        c.push(1u8, 100, Instant::from_micros(10));
        c.push(2u8, 100, Instant::from_micros(15));
        c.set(20, 0, false);
        assert_eq!(c.next_event(), Some(Instant::from_micros(30)));
        c.set(20, 0, true);
        assert_eq!(
            c.next_event(),
            Some(Instant::from_micros(35)),
            "CQE: from the latest"
        );
        c.set(1000, 1, false);
        assert_eq!(c.next_event(), Some(Instant::from_micros(15)));
    }

    /// CQE mode, rx-usecs 50, frames every 12 µs: the timer restarts at
    /// every frame, so no interrupt fires until 50 µs after the last one
    /// (EQE mode fires every 60 µs: `n1_rx_usecs_50_frames_0`).
    #[test]
    fn cqe_mode_waits_for_a_quiet_gap() {
        let arrivals: Vec<u64> = (0..20).map(|i| i * 12).collect();
        let out = run_mode(50, 0, true, &arrivals);
        assert_eq!(out.len(), 20);
        assert!(out.iter().all(|(_, d)| *d == 228 + 50), "{out:?}");
        // Gaps longer than the timer: one interrupt per frame, as in EQE.
        let sparse = run_mode(50, 0, true, &[0, 100, 200]);
        assert_eq!(sparse, run_mode(50, 0, false, &[0, 100, 200]));
        assert_eq!(sparse, vec![(0, 50), (100, 150), (200, 250)]);
    }

    /// CQE mode with rx-frames: the frame count still fires at once; the
    /// timer then counts from the latest frame of the next batch.
    #[test]
    fn cqe_mode_fires_at_max_frames() {
        let arrivals: Vec<u64> = (0..10).map(|i| i * 12).collect();
        let out = run_mode(50, 4, true, &arrivals);
        let deliveries: Vec<u64> = out.iter().map(|(_, d)| *d).collect();
        // Batches of 4 at 36 and 84 µs; the last two frames (96, 108)
        // wait 50 µs after 108.
        assert_eq!(deliveries, vec![36, 36, 36, 36, 84, 84, 84, 84, 158, 158]);
    }
}
