//! The live clock: CLOCK_MONOTONIC, the clock the datapath's timerfd
//! deadlines are expressed in, read as the core's `Instant`. The core never
//! reads a clock (`crate::time` holds the trait and the simulator's clock);
//! the live driver, the harness and the capture read this one.

use crate::time::{Clock, Instant, NS_PER_SEC};

/// CLOCK_MONOTONIC.
#[derive(Clone, Copy, Debug, Default)]
pub struct MonotonicClock;

impl Clock for MonotonicClock {
    fn now(&self) -> Instant {
        let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
            .expect("CLOCK_MONOTONIC is always available on Linux");
        Instant::from_nanos(ts.tv_sec() as u64 * NS_PER_SEC + ts.tv_nsec() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clock_moves_forward() {
        let c = MonotonicClock;
        let a = c.now();
        let b = c.now();
        assert!(b >= a);
    }
}
