//! Time for the pure core: `Instant` is a monotonic nanosecond count that the
//! core receives as an argument and never reads itself. `Clock` is how a driver
//! produces it: `crate::clock::MonotonicClock` (CLOCK_MONOTONIC, outside the
//! core) for the live datapath, `SimClock` for the discrete-event simulator.

use std::cell::Cell;
use std::fmt;
use std::ops::{Add, AddAssign};

/// Nanoseconds per microsecond, millisecond and second.
pub const NS_PER_US: u64 = 1_000;
/// Nanoseconds per millisecond.
pub const NS_PER_MS: u64 = 1_000_000;
/// Nanoseconds per second.
pub const NS_PER_SEC: u64 = 1_000_000_000;

/// A point in time, in nanoseconds since an arbitrary epoch (CLOCK_MONOTONIC in
/// the live datapath, 0 at the start of a simulation). Durations are plain
/// `u64` nanoseconds.
#[derive(
    Copy, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct Instant(u64);

impl Instant {
    /// The epoch: 0 ns.
    pub const ZERO: Instant = Instant(0);
    /// The latest representable instant (about 584 years after the epoch):
    /// "never" for deadlines.
    pub const MAX: Instant = Instant(u64::MAX);

    /// The instant `ns` nanoseconds after the epoch.
    pub const fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }
    /// The instant `us` microseconds after the epoch.
    pub const fn from_micros(us: u64) -> Self {
        Instant(us * NS_PER_US)
    }
    /// The instant `ms` milliseconds after the epoch.
    pub const fn from_millis(ms: u64) -> Self {
        Instant(ms * NS_PER_MS)
    }
    /// Nanoseconds since the epoch.
    pub const fn nanos(self) -> u64 {
        self.0
    }
    /// Nanoseconds from `earlier` to `self`, 0 if `earlier` is later.
    pub const fn saturating_since(self, earlier: Instant) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
    /// Signed nanoseconds from `other` to `self`.
    pub const fn signed_since(self, other: Instant) -> i64 {
        self.0.wrapping_sub(other.0) as i64
    }
    /// The instant `ns` nanoseconds earlier, clamped at the epoch.
    pub const fn saturating_sub(self, ns: u64) -> Instant {
        Instant(self.0.saturating_sub(ns))
    }
}

impl Add<u64> for Instant {
    type Output = Instant;
    fn add(self, ns: u64) -> Instant {
        Instant(self.0.saturating_add(ns))
    }
}

impl AddAssign<u64> for Instant {
    fn add_assign(&mut self, ns: u64) {
        self.0 = self.0.saturating_add(ns);
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}s", self.0 / NS_PER_SEC, self.0 % NS_PER_SEC)
    }
}

/// The earlier of two optional deadlines.
pub fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Where drivers get `now` from.
pub trait Clock {
    /// The current time, never earlier than the previous call's.
    fn now(&self) -> Instant;
}

/// A simulated clock that only moves when the simulator advances it.
#[derive(Debug, Default)]
pub struct SimClock {
    now: Cell<Instant>,
}

impl SimClock {
    /// A clock that reads `start` until it is advanced.
    pub fn new(start: Instant) -> Self {
        SimClock {
            now: Cell::new(start),
        }
    }
    /// Moves the clock forward; never backwards.
    pub fn advance_to(&self, t: Instant) {
        if t > self.now.get() {
            self.now.set(t);
        }
    }
}

impl Clock for SimClock {
    fn now(&self) -> Instant {
        self.now.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_and_orders() {
        let a = Instant::from_micros(5);
        assert_eq!((a + 1_000).nanos(), 6_000);
        assert_eq!(Instant::ZERO.saturating_since(a), 0);
        assert_eq!(a.signed_since(Instant::from_micros(6)), -1_000);
        assert_eq!(Instant::MAX + 5, Instant::MAX);
        assert_eq!(earliest(Some(a), None), Some(a));
        assert_eq!(earliest(Some(a), Some(Instant::ZERO)), Some(Instant::ZERO));
    }

    #[test]
    fn sim_clock_never_goes_back() {
        let c = SimClock::new(Instant::from_millis(1));
        c.advance_to(Instant::from_millis(3));
        c.advance_to(Instant::from_millis(2));
        assert_eq!(c.now(), Instant::from_millis(3));
    }
}
