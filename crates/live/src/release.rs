//! Release pacing: how the live datapath writes frames that fell due while
//! it was late.
//!
//! The link model gives every frame a logical delivery time, and a frame is
//! never written before it. When the datapath thread reaches a deadline
//! late (a timer that fired late, the thread preempted, a write that paid
//! for the receiver's wake-up), every frame that fell due meanwhile is
//! overdue at once. Written back to back they would reach the receiver far
//! faster than the line rate (five 1514-byte frames in 3 µs is 20 Gbit/s
//! on a 1.2 Gbit/s link), which no wire does and which packet-pair and
//! delivery-rate estimators (BBR's among them) read as bandwidth. So an
//! overdue frame keeps at least `CATCH_UP` (3/4) of its logical gap to the
//! frame before it in the same direction, counted from that frame's
//! write: the receiver never sees more than 4/3 of the link's rate, and
//! lateness is made up at a third of it. Frames the link delivers together
//! (an RX coalescing batch: logical gap 0) still leave together.
//!
//! Pacing needs waits shorter than a timer wake-up can keep (a 1514-byte
//! frame lasts 10 µs at 1.2 Gbit/s; a timer wake-up on a virtual machine is
//! 15–40 µs late), so it waits only as long as the datapath spins
//! (`max_wait_ns`, its `spin_us`; 0 turns pacing off) and writes a frame
//! that would have to wait longer at once. A frame more than `GIVE_UP_NS`
//! late is written at once too: that is a stall, not jitter, and smoothing
//! it would hold every frame behind it for longer than the stall. The
//! pacer is pure: it takes the times it is given.

use crate::time::{Instant, NS_PER_MS};

/// The least fraction of its logical gap an overdue frame keeps, as a ratio.
pub const CATCH_UP: (u64, u64) = (3, 4);
/// Beyond this lateness a frame is written at once.
pub const GIVE_UP_NS: u64 = NS_PER_MS;

/// The pacer of one direction (each direction's datapath thread owns
/// its own): the last frame written, as (logical delivery, write) times.
#[derive(Debug)]
pub struct ReleasePacer {
    last: Option<(Instant, Instant)>,
    /// The longest wait the pacer imposes; zero turns pacing off.
    max_wait_ns: u64,
}

impl ReleasePacer {
    /// A pacer that never makes a frame wait longer than `max_wait_ns`.
    pub fn new(max_wait_ns: u64) -> Self {
        ReleasePacer {
            last: None,
            max_wait_ns,
        }
    }

    /// When the frame the link delivered at `delivered` may be written,
    /// it being `now`: never before `delivered`, and `delivered`
    /// itself whenever pacing does not apply.
    pub fn earliest(&self, delivered: Instant, now: Instant) -> Instant {
        let Some((prev_delivered, prev_written)) = self.last else {
            return delivered;
        };
        if now.saturating_since(delivered) > GIVE_UP_NS {
            return delivered;
        }
        let gap = delivered.saturating_since(prev_delivered);
        let at = delivered.max(prev_written + gap * CATCH_UP.0 / CATCH_UP.1);
        if at.saturating_since(now) > self.max_wait_ns {
            return delivered;
        }
        at
    }

    /// Changes the longest wait (the datapath's spin margin of the moment;
    /// zero turns pacing off).
    pub fn set_max_wait(&mut self, max_wait_ns: u64) {
        self.max_wait_ns = max_wait_ns;
    }

    /// Records that the frame delivered at `delivered` was written at
    /// `now`.
    pub fn written(&mut self, delivered: Instant, now: Instant) {
        self.last = Some((delivered, now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_US;

    fn us(n: u64) -> Instant {
        Instant::from_micros(n)
    }

    /// Writes every frame of `delivered` (logical times, µs) as early as the
    /// pacer allows, the datapath first reaching them at `woke` (µs), and
    /// returns the write times in µs.
    fn release(pacer: &mut ReleasePacer, delivered: &[u64], woke: u64) -> Vec<u64> {
        let mut now = us(woke);
        delivered
            .iter()
            .map(|&d| {
                now = now.max(pacer.earliest(us(d), now));
                pacer.written(us(d), now);
                now.nanos() / NS_PER_US
            })
            .collect()
    }

    #[test]
    fn frames_on_time_leave_at_their_delivery_times() {
        let mut p = ReleasePacer::new(50 * NS_PER_US);
        let mut writes = Vec::new();
        for d in [0, 10, 20, 30] {
            writes.extend(release(&mut p, &[d], d));
        }
        assert_eq!(writes, [0, 10, 20, 30]);
    }

    #[test]
    fn overdue_frames_keep_three_quarters_of_their_gaps_until_caught_up() {
        // Frames every 10 µs; the datapath reaches the second 40 µs late.
        let mut p = ReleasePacer::new(50 * NS_PER_US);
        assert_eq!(release(&mut p, &[0], 0), [0]);
        let delivered = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
        let writes = release(&mut p, &delivered, 50);
        // 7.5 µs apart (7 on the µs grid of the test) while late, then on time.
        assert_eq!(writes, [50, 57, 65, 72, 80, 87, 95, 102, 110, 117]);
        let gaps: Vec<u64> = writes.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|&g| g >= 7), "{gaps:?}");
        // Lateness shrinks by 2.5 µs per frame: 40, 37, 35, ...
        let late: Vec<u64> = writes.iter().zip(delivered).map(|(w, d)| w - d).collect();
        assert!(late.windows(2).all(|w| w[1] <= w[0]), "{late:?}");
        // Caught up: the next frame leaves at its own time.
        assert_eq!(release(&mut p, &[200], 200), [200]);
    }

    #[test]
    fn a_coalesced_batch_leaves_together() {
        let mut p = ReleasePacer::new(50 * NS_PER_US);
        assert_eq!(release(&mut p, &[0], 5), [5]);
        assert_eq!(release(&mut p, &[100, 100, 100], 130), [130, 130, 130]);
    }

    #[test]
    fn the_directions_are_paced_apart() {
        // Each direction's thread has a pacer of its own.
        let (mut l2r, r2l) = (
            ReleasePacer::new(50 * NS_PER_US),
            ReleasePacer::new(50 * NS_PER_US),
        );
        l2r.written(us(0), us(30));
        assert_eq!(r2l.earliest(us(10), us(30)), us(10));
        assert_eq!(l2r.earliest(us(10), us(30)), us(37) + 500);
    }

    #[test]
    fn pacing_is_off_without_a_spin_margin_and_beyond_it() {
        let mut off = ReleasePacer::new(0);
        assert_eq!(release(&mut off, &[0], 0), [0]);
        assert_eq!(release(&mut off, &[10, 20, 30], 50), [50, 50, 50]);
        // Keeping 150 of a 200 µs gap would mean waiting 140 µs, more than
        // the 50 µs spin: the frame goes at once rather than after a timer
        // wake-up.
        let mut p = ReleasePacer::new(50 * NS_PER_US);
        assert_eq!(release(&mut p, &[0], 400), [400]);
        assert_eq!(release(&mut p, &[200], 410), [410]);
    }

    proptest::proptest! {
        /// Over any schedule of deliveries (gaps 0–300 µs) and of how late
        /// the loop reaches each (0–2 ms): no frame leaves before its
        /// delivery; no frame waits longer than the margin; pacing never
        /// makes a frame later than the loop itself
        /// was for it or for the frame before; and two frames end up closer
        /// than 3/4 of their logical gap only where the pacer had to let go
        /// (more than `GIVE_UP_NS` late, or a wait beyond its margin).
        #[test]
        fn pacing_keeps_its_promises(
            steps in proptest::collection::vec((0u64..300_000, 0u64..2_000_000), 1..200),
            max_wait_us in 0u64..200,
        ) {
            let max_wait = max_wait_us * NS_PER_US;
            let mut p = ReleasePacer::new(max_wait);
            let (mut delivered, mut loop_at) = (Instant::ZERO, Instant::ZERO);
            let mut prev: Option<(Instant, Instant)> = None;
            for (gap, late) in steps {
                delivered += gap;
                // The loop reaches frames in order, never earlier than before.
                loop_at = loop_at.max(delivered + late);
                let at = p.earliest(delivered, loop_at);
                let written = loop_at.max(at);
                proptest::prop_assert!(written >= delivered);
                proptest::prop_assert!(written.saturating_since(loop_at) <= max_wait);
                let own = loop_at.saturating_since(delivered);
                let lateness = written.saturating_since(delivered);
                if let Some((pd, pw)) = prev {
                    let prev_lateness = pw.saturating_since(pd);
                    proptest::prop_assert!(lateness <= own.max(prev_lateness),
                        "lateness {lateness} > own {own} and previous {prev_lateness}");
                    let kept = gap * CATCH_UP.0 / CATCH_UP.1;
                    if written.saturating_since(pw) < kept {
                        let wait = (pw + kept).saturating_since(loop_at);
                        proptest::prop_assert!(own > GIVE_UP_NS || wait > max_wait,
                            "gap {} < {kept} with own lateness {own} and wait {wait}",
                            written.saturating_since(pw));
                    }
                }
                p.written(delivered, written);
                prev = Some((delivered, written));
            }
        }
    }

    #[test]
    fn a_stall_longer_than_the_give_up_bound_is_not_smoothed() {
        let mut p = ReleasePacer::new(50 * NS_PER_US);
        assert_eq!(release(&mut p, &[0], 0), [0]);
        // The thread stalled 2 ms: frames more than 1 ms late go at once,
        // the rest are paced again.
        let delivered: Vec<u64> = (1..=200).map(|i| i * 10).collect();
        let writes = release(&mut p, &delivered, 2000);
        assert!(writes[..99].iter().all(|&w| w == 2000), "{writes:?}");
        // The 100th frame, delivered at 1000 µs and so exactly 1 ms late,
        // is the first paced.
        assert_eq!(writes[99], 2007, "{writes:?}");
    }
}
