//! When a datapath thread publishes its snapshot, as a pure schedule. A
//! snapshot is due every `publish_interval_ns` (`daemon.snapshot_hz`), but
//! making one is not free: it walks the qdisc's queues for the per-flow
//! occupancy and copies the lateness histograms. On a 2-vCPU VM at 12
//! Mbit/s with a full pfifo_fast queue that took about 250 µs at the median
//! and up to 0.7 ms when first timed, and 98–111 µs on average since the
//! histograms went to two digits and the walk to one hash lookup per frame
//! and pass (docs/timing.md); the demo's 100 Mbit/s links with TCP flows
//! took 150–190 µs. Made at a fixed time, it
//! held up every frame due meanwhile, and at 12 Mbit/s (a frame a
//! millisecond) that set both lateness p99s. So a snapshot is made only where
//! it fits: when the thread is awake anyway for a frame's deadline and the
//! next frame's deadline is further away than the last snapshot took, or
//! when no frame is due before the snapshot's own time (an idle link), and
//! in any case once it is a whole interval overdue, so that `stats`, the
//! TUI and the metrics never fall more than two intervals behind. The
//! driver reports what a snapshot cost (`published`); the schedule reads
//! no clock.

use crate::time::Instant;

/// The snapshot schedule of one datapath thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct PublishSchedule {
    /// The nominal time between snapshots, ns.
    interval_ns: u64,
    /// When the next snapshot is due.
    next: Instant,
    /// What a snapshot is expected to cost, ns: the last one's time, or
    /// seven eighths of the expectation before it if that was more (a
    /// decaying maximum, so that one cheap snapshot does not let the next
    /// dear one run into a frame).
    cost_ns: u64,
    /// The snapshot due now has waited for a frame.
    waiting: bool,
    /// Snapshots published, the time they took in all (ns) and the
    /// longest (ns), and how many of them waited for a frame.
    pub(super) published: u64,
    pub(super) total_ns: u64,
    pub(super) longest_ns: u64,
    pub(super) deferred: u64,
}

impl PublishSchedule {
    /// A schedule with a snapshot due at once.
    pub(super) fn new(interval_ns: u64) -> PublishSchedule {
        PublishSchedule {
            interval_ns,
            next: Instant::ZERO,
            cost_ns: 0,
            waiting: false,
            published: 0,
            total_ns: 0,
            longest_ns: 0,
            deferred: 0,
        }
    }

    /// Whether to publish at `now`, when the lane's next frame deadline
    /// (a delivery or a paced release) is `frame`: a snapshot is due and
    /// either fits before that frame or is a whole interval overdue. A due
    /// snapshot that does not fit is counted once as deferred.
    pub(super) fn due(&mut self, now: Instant, frame: Option<Instant>) -> bool {
        if now < self.next {
            return false;
        }
        let overdue = now >= self.next + self.interval_ns;
        if !overdue && frame.is_some_and(|f| f < now + self.cost_ns) {
            self.deferred += u64::from(!self.waiting);
            self.waiting = true;
            return false;
        }
        true
    }

    /// When the next snapshot is due.
    pub(super) fn next_due(&self) -> Instant {
        self.next
    }

    /// A snapshot was published at `at` and took `cost_ns`: the next is
    /// due an interval later.
    pub(super) fn published(&mut self, at: Instant, cost_ns: u64) {
        self.next = at + self.interval_ns;
        self.waiting = false;
        self.cost_ns = cost_ns.max(self.cost_ns - self.cost_ns / 8);
        self.published += 1;
        self.total_ns += cost_ns;
        self.longest_ns = self.longest_ns.max(cost_ns);
    }

    /// When the loop is to be awake for the next snapshot, the lane's
    /// next frame deadline being `frame`: at the first frame deadline
    /// from the snapshot's due time on (the thread wakes for that frame
    /// anyway, and `due` then publishes after it if the frame after it
    /// leaves room), but no later than a whole interval past it; with no
    /// frame pending, at the due time itself.
    pub(super) fn wake_at(&self, frame: Option<Instant>) -> Instant {
        match frame {
            Some(f) => f.clamp(self.next, self.next + self.interval_ns),
            None => self.next,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn at(us: u64) -> Instant {
        Instant::from_micros(us)
    }

    /// A schedule of 50 ms whose first snapshot was published at 0 and
    /// took `cost_us`.
    fn after_first(cost_us: u64) -> PublishSchedule {
        let mut s = PublishSchedule::new(50_000_000);
        assert!(s.due(at(0), None));
        s.published(at(0), cost_us * 1_000);
        s
    }

    #[test]
    fn the_first_snapshot_is_due_at_once_and_the_next_an_interval_later() {
        let mut s = after_first(200);
        assert_eq!(s.published, 1);
        assert!(!s.due(at(49_999), None));
        assert_eq!(s.next_due(), at(50_000));
        assert!(s.due(at(50_000), None));
        assert_eq!(s.wake_at(None), at(50_000));
        assert_eq!(s.deferred, 0);
    }

    #[test]
    fn a_due_snapshot_waits_for_a_frame_it_would_hold_up() {
        let mut s = after_first(200);
        // A frame 150 µs away: a 200 µs snapshot would make it late.
        assert!(!s.due(at(50_000), Some(at(50_150))));
        assert_eq!(s.deferred, 1);
        // The loop wakes for that frame, not before.
        assert_eq!(s.wake_at(Some(at(50_150))), at(50_150));
        // After it, the next frame is 1 ms away: room for the snapshot.
        assert!(s.due(at(50_160), Some(at(51_150))));
        // Exactly the cost away fits.
        assert!(s.due(at(50_160), Some(at(50_360))));
        assert!(!s.due(at(50_160), Some(at(50_359))));
        assert_eq!(s.deferred, 1, "one snapshot waited, however often asked");
        s.published(at(50_160), 200_000);
        assert!(!s.due(at(100_160), Some(at(100_200))));
        assert_eq!(s.deferred, 2);
    }

    #[test]
    fn a_frame_due_before_the_snapshot_is_served_first() {
        let s = after_first(200);
        // A frame before the due time: the snapshot's own time stands
        // (the plan takes the earlier frame deadline anyway).
        assert_eq!(s.wake_at(Some(at(10_000))), at(50_000));
        // A frame after it: the snapshot waits for that frame's wake-up.
        assert_eq!(s.wake_at(Some(at(50_700))), at(50_700));
        // But not beyond a whole interval past its due time.
        assert_eq!(s.wake_at(Some(at(5_000_000))), at(100_000));
    }

    #[test]
    fn a_snapshot_a_whole_interval_overdue_is_published_whatever_is_due() {
        let mut s = after_first(200);
        // Frames 10 µs apart leave no room for 200 µs.
        assert!(!s.due(at(99_990), Some(at(100_000))));
        assert!(s.due(at(100_000), Some(at(100_010))));
        assert!(s.due(at(100_000), Some(at(100_000))));
    }

    #[test]
    fn the_expected_cost_is_a_decaying_maximum() {
        let mut s = after_first(800);
        // A cheap snapshot: the expectation falls by an eighth, not to it.
        assert!(s.due(at(50_000), None));
        s.published(at(50_000), 100_000);
        assert!(!s.due(at(100_000), Some(at(100_699))));
        assert!(s.due(at(100_000), Some(at(100_700))));
        s.published(at(100_000), 900_000);
        assert!(!s.due(at(150_000), Some(at(150_899))));
        assert_eq!(
            (s.published, s.total_ns, s.longest_ns),
            (3, 1_800_000, 900_000)
        );
    }
}
