//! Adaptive interrupt moderation as the kernel's net_dim does it
//! (`ethtool -C DEV adaptive-rx on`; lib/dim/net_dim.c, lib/dim/dim.c):
//! five moderation profiles (`usecs`, `frames`) per direction and CQ
//! period mode, and a tuner that looks at the traffic of every 64
//! interrupts (`DIM_NEVENTS`): bytes, packets and interrupts per
//! millisecond. It steps one profile at a time in one direction while the
//! bytes (then packets) per millisecond get significantly better (more
//! than 10 %, `IS_SIGNIFICANT_DIFF`), turns when they do not, parks on the
//! best profile it found (`dim_on_top`) or at an edge, and parks "tired"
//! after ten steps without settling. A parked tuner leaves on the next
//! significant change. The driver applies a new profile from a work item
//! (`DIM_APPLY_NEW_PROFILE`) that then starts a new measurement; here it
//! applies at once and the next interrupt starts the measurement, as if the
//! work ran before it. `Dim::interrupt` is O(1) with no allocation.

use crate::time::Instant;

/// One moderation profile: the timer and the frame count of the coalescer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moderation {
    /// `usecs`: the coalescing timer, µs.
    pub usecs: u32,
    /// `frames`: the frame count that fires at once.
    pub frames: u32,
}

const fn m(usecs: u32, frames: u32) -> Moderation {
    Moderation { usecs, frames }
}

/// net_dim's RX profiles: EQE mode (`NET_DIM_RX_EQE_PROFILES`), CQE mode
/// (`NET_DIM_RX_CQE_PROFILES`).
const RX: [[Moderation; PROFILES]; 2] = [
    [m(1, 256), m(8, 256), m(64, 256), m(128, 256), m(256, 256)],
    [m(2, 256), m(8, 128), m(16, 64), m(32, 64), m(64, 64)],
];
/// net_dim's TX profiles (`NET_DIM_TX_EQE_PROFILES`,
/// `NET_DIM_TX_CQE_PROFILES`).
const TX: [[Moderation; PROFILES]; 2] = [
    [m(1, 128), m(8, 128), m(32, 128), m(64, 128), m(128, 128)],
    [m(5, 128), m(8, 64), m(16, 32), m(32, 32), m(64, 32)],
];
/// `NET_DIM_PARAMS_NUM_PROFILES`.
const PROFILES: usize = 5;
/// The profile a driver starts with (`NET_DIM_DEF_PROFILE_EQE`/`_CQE`).
const DEFAULT_PROFILE: usize = 1;
/// Interrupts per measurement (`DIM_NEVENTS`).
const NEVENTS: u64 = 64;

/// `enum dim_tune_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tune {
    ParkingOnTop,
    ParkingTired,
    GoingRight,
    GoingLeft,
}

/// `struct dim_stats`: rates per millisecond of one measurement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Stats {
    /// Packets per ms.
    ppms: u64,
    /// Bytes per ms.
    bpms: u64,
    /// Interrupts per ms.
    epms: u64,
}

/// `struct dim_sample`: the counters at one interrupt.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    at: Instant,
    events: u64,
    packets: u64,
    bytes: u64,
}

/// `DIM_STATS_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Better,
    Same,
    Worse,
}

/// `IS_SIGNIFICANT_DIFF(val, ref)`: more than 10 % apart (`ref` non-zero).
fn significant(val: u64, reference: u64) -> bool {
    reference != 0 && 100 * val.abs_diff(reference) / reference > 10
}

/// `net_dim_stats_compare`: bytes, then packets per ms decide (more is
/// better), then interrupts per ms (fewer is better).
fn compare(curr: &Stats, prev: &Stats) -> Verdict {
    let better = |b: bool| if b { Verdict::Better } else { Verdict::Worse };
    if prev.bpms == 0 {
        return if curr.bpms > 0 {
            Verdict::Better
        } else {
            Verdict::Same
        };
    }
    if significant(curr.bpms, prev.bpms) {
        return better(curr.bpms > prev.bpms);
    }
    if prev.ppms == 0 {
        return if curr.ppms > 0 {
            Verdict::Better
        } else {
            Verdict::Same
        };
    }
    if significant(curr.ppms, prev.ppms) {
        return better(curr.ppms > prev.ppms);
    }
    if prev.epms == 0 {
        return Verdict::Same;
    }
    if significant(curr.epms, prev.epms) {
        return better(curr.epms < prev.epms);
    }
    Verdict::Same
}

/// Which coalescer a tuner moderates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DimSide {
    /// RX interrupts (`adaptive-rx`).
    Rx,
    /// TX completions (`adaptive-tx`).
    Tx,
}

/// One coalescer's net_dim tuner.
#[derive(Clone, Debug)]
pub struct Dim {
    profiles: &'static [Moderation; PROFILES],
    profile: usize,
    tune: Tune,
    steps_left: u32,
    steps_right: u32,
    tired: u32,
    prev: Stats,
    /// The measurement's first sample; `None` until the next interrupt
    /// starts one (`DIM_START_MEASURE`).
    start: Option<Sample>,
    /// The counters so far (`event_ctr`, packets, bytes).
    now: Sample,
}

impl Dim {
    /// A tuner as a driver sets one up (zeroed: profile 0, parked on top),
    /// for `side` in CQE (`cqe`) or EQE mode.
    pub fn new(side: DimSide, cqe: bool) -> Dim {
        let table = match side {
            DimSide::Rx => &RX,
            DimSide::Tx => &TX,
        };
        Dim {
            profiles: &table[usize::from(cqe)],
            profile: 0,
            tune: Tune::ParkingOnTop,
            steps_left: 0,
            steps_right: 0,
            tired: 0,
            prev: Stats::default(),
            start: None,
            now: Sample::default(),
        }
    }

    /// The moderation a driver applies when adaptive moderation is turned
    /// on (`net_dim_get_def_rx_moderation`: profile 1 of the mode).
    pub fn initial(&self) -> Moderation {
        self.profiles[DEFAULT_PROFILE]
    }

    /// The index of the tuner's current profile, 0..=4.
    pub fn profile(&self) -> usize {
        self.profile
    }

    /// An interrupt at `at` that handled `packets` frames of `bytes`
    /// (`net_dim` called from the NAPI poll with the updated counters).
    /// Returns the moderation to apply when the profile changed.
    pub fn interrupt(&mut self, at: Instant, packets: u64, bytes: u64) -> Option<Moderation> {
        self.now.at = at;
        self.now.events += 1;
        self.now.packets += packets;
        self.now.bytes += bytes;
        let Some(start) = self.start else {
            self.start = Some(self.now);
            return None;
        };
        if self.now.events - start.events < NEVENTS {
            return None;
        }
        let stats = stats(&start, &self.now);
        if self.decide(stats) {
            self.start = None;
            return Some(self.profiles[self.profile]);
        }
        self.start = Some(self.now);
        None
    }

    /// `net_dim_decision`; true when the profile changed.
    fn decide(&mut self, curr: Stats) -> bool {
        let (prev_tune, prev_profile) = (self.tune, self.profile);
        match self.tune {
            Tune::ParkingOnTop => {
                if compare(&curr, &self.prev) != Verdict::Same {
                    self.exit_parking();
                }
            }
            Tune::ParkingTired => {
                self.tired -= 1;
                if self.tired == 0 {
                    self.exit_parking();
                }
            }
            Tune::GoingRight | Tune::GoingLeft => {
                if compare(&curr, &self.prev) != Verdict::Better {
                    self.turn();
                }
                if self.on_top() {
                    self.park_on_top();
                } else {
                    match self.step() {
                        Step::Stepped => {}
                        Step::OnEdge => self.park_on_top(),
                        Step::TooTired => self.park_tired(),
                    }
                }
            }
        }
        if prev_tune != Tune::ParkingOnTop || self.tune != Tune::ParkingOnTop {
            self.prev = curr;
        }
        self.profile != prev_profile
    }

    /// `net_dim_step`.
    fn step(&mut self) -> Step {
        if self.tired == 2 * PROFILES as u32 {
            return Step::TooTired;
        }
        match self.tune {
            Tune::ParkingOnTop | Tune::ParkingTired => {}
            Tune::GoingRight => {
                if self.profile == PROFILES - 1 {
                    return Step::OnEdge;
                }
                self.profile += 1;
                self.steps_right += 1;
            }
            Tune::GoingLeft => {
                if self.profile == 0 {
                    return Step::OnEdge;
                }
                self.profile -= 1;
                self.steps_left += 1;
            }
        }
        self.tired += 1;
        Step::Stepped
    }

    /// `net_dim_exit_parking`.
    fn exit_parking(&mut self) {
        self.tune = if self.profile > 0 {
            Tune::GoingLeft
        } else {
            Tune::GoingRight
        };
        self.step();
    }

    /// `dim_on_top`: the last step went past the best profile and back.
    fn on_top(&self) -> bool {
        match self.tune {
            Tune::ParkingOnTop | Tune::ParkingTired => true,
            Tune::GoingRight => self.steps_left > 1 && self.steps_right == 1,
            Tune::GoingLeft => self.steps_right > 1 && self.steps_left == 1,
        }
    }

    /// `dim_turn`.
    fn turn(&mut self) {
        match self.tune {
            Tune::ParkingOnTop | Tune::ParkingTired => {}
            Tune::GoingRight => {
                self.tune = Tune::GoingLeft;
                self.steps_left = 0;
            }
            Tune::GoingLeft => {
                self.tune = Tune::GoingRight;
                self.steps_right = 0;
            }
        }
    }

    /// `dim_park_on_top`.
    fn park_on_top(&mut self) {
        self.steps_right = 0;
        self.steps_left = 0;
        self.tired = 0;
        self.tune = Tune::ParkingOnTop;
    }

    /// `dim_park_tired`.
    fn park_tired(&mut self) {
        self.steps_right = 0;
        self.steps_left = 0;
        self.tune = Tune::ParkingTired;
    }
}

/// `DIM_STEPPED`, `DIM_TOO_TIRED`, `DIM_ON_EDGE`.
enum Step {
    Stepped,
    TooTired,
    OnEdge,
}

/// `dim_calc_stats`: rates per ms, rounded up; interrupts counted as
/// `DIM_NEVENTS` whatever the window held. The kernel leaves the stats
/// unset for a window of 0 µs; here such a window counts as 1 µs.
fn stats(start: &Sample, end: &Sample) -> Stats {
    let us = (end.at.saturating_since(start.at) / 1000).max(1);
    let per_ms = |n: u64| (n * 1000).div_ceil(us);
    Stats {
        ppms: per_ms(end.packets - start.packets),
        bpms: per_ms(end.bytes - start.bytes),
        epms: per_ms(NEVENTS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs 64-interrupt windows of 1 ms each; `bytes(profile)` is what one
    /// interrupt of the window moves under the current profile. Returns the
    /// profile index after each window.
    fn windows(dim: &mut Dim, n: usize, bytes: impl Fn(usize) -> u64) -> Vec<usize> {
        let mut t = dim.now.at.max(Instant::from_millis(1));
        let mut out = Vec::new();
        if dim.start.is_none() {
            // The interrupt that starts the first measurement.
            t += 1_000_000 / NEVENTS;
            dim.interrupt(t, 1, 100);
        }
        for _ in 0..n {
            for _ in 0..NEVENTS {
                t += 1_000_000 / NEVENTS;
                dim.interrupt(t, 1, bytes(dim.profile()));
            }
            // A change restarts the measurement at the next interrupt.
            if dim.start.is_none() {
                t += 1_000_000 / NEVENTS;
                dim.interrupt(t, 1, bytes(dim.profile()));
            }
            out.push(dim.profile());
        }
        out
    }

    /// Traffic that gets more than 10 % better with every profile to the
    /// right: the tuner steps right each window to the last profile and
    /// parks there (on the edge).
    #[test]
    fn better_and_better_goes_right_and_parks_at_the_edge() {
        let mut d = Dim::new(DimSide::Rx, false);
        let got = windows(&mut d, 7, |p| 1000 * (1 + p as u64));
        assert_eq!(got, vec![1, 2, 3, 4, 4, 4, 4]);
        assert_eq!(d.tune, Tune::ParkingOnTop);
        assert_eq!(d.profiles[d.profile()], m(256, 256));
    }

    /// Traffic best at profile 2 (twice the bytes of its neighbours): the
    /// tuner goes right to 3, finds it worse and turns, steps back left to
    /// 2, finds it better than 3, and is on top (`dim_on_top`: one step
    /// left after more than one right): parked at 2. A significant change
    /// of the traffic moves it again.
    #[test]
    fn a_peak_is_found_and_left_when_the_traffic_changes() {
        let mut d = Dim::new(DimSide::Rx, false);
        let peak = |p: usize| [1000u64, 2000, 4000, 2000, 1000][p];
        let got = windows(&mut d, 8, peak);
        assert_eq!(got, vec![1, 2, 3, 2, 2, 2, 2, 2]);
        assert_eq!(d.tune, Tune::ParkingOnTop);
        // The traffic halves whatever the profile: worse, so the tuner
        // leaves the parking to the left (it is not on profile 0).
        let after = windows(&mut d, 1, |p| peak(p) / 2);
        assert_eq!(after, vec![1]);
        assert_eq!(d.tune, Tune::GoingLeft);
        assert_eq!(d.prev.bpms, 64 * 2000, "the halved window, measured");
    }

    /// Traffic the profile does not change: the tuner wanders one step
    /// each window until tired (ten steps), parks, and leaves the parking
    /// after as many windows.
    #[test]
    fn flat_traffic_makes_it_tired() {
        let mut d = Dim::new(DimSide::Tx, true);
        let got = windows(&mut d, 12, |_| 1000);
        assert!(got.iter().all(|&p| p <= 2), "{got:?}");
        assert_eq!(d.tune, Tune::ParkingTired);
        assert_eq!(d.initial(), m(8, 64));
    }

    #[test]
    fn stats_compare_like_the_kernel() {
        let s = |bpms, ppms, epms| Stats { ppms, bpms, epms };
        assert_eq!(compare(&s(5, 0, 0), &s(0, 0, 0)), Verdict::Better);
        assert_eq!(compare(&s(0, 0, 0), &s(0, 0, 0)), Verdict::Same);
        assert_eq!(compare(&s(111, 1, 1), &s(100, 1, 1)), Verdict::Better);
        assert_eq!(compare(&s(110, 1, 1), &s(100, 1, 1)), Verdict::Same);
        assert_eq!(compare(&s(89, 1, 1), &s(100, 1, 1)), Verdict::Worse);
        // Bytes the same: packets decide, then interrupts (fewer better).
        assert_eq!(compare(&s(100, 50, 9), &s(100, 40, 9)), Verdict::Better);
        assert_eq!(compare(&s(100, 40, 8), &s(100, 40, 10)), Verdict::Better);
        assert_eq!(compare(&s(100, 40, 12), &s(100, 40, 10)), Verdict::Worse);
    }
}
