//! The datapath's wait decision, as a pure function: given the time, what
//! the iteration left pending (a read batch cut short, the bridge's and the
//! release pacer's next deadline, the next snapshot) and the `spin_us` /
//! `busy_poll_us` / `timer_slack_us` settings, `WaitPolicy::plan` says how
//! the loop waits for the next event: not at all, by busy polling, by
//! spinning to a deadline without the timer, or by sleeping in
//! `epoll_wait` on the timerfd, armed at the deadline (`spin_us` earlier,
//! or up to `timer_slack_us` later, so that one wake-up serves every
//! deadline within the slack, as `qdisc_watchdog_schedule_range_ns` in
//! net/sched/sch_api.c does for sch_fq's `timer_slack`). It reads no clock
//! and makes no system call; the driver carries the plan out.

use crate::time::{earliest, Instant, NS_PER_US};

/// How the loop may wait, from `DatapathConfig::spin_us`,
/// `DatapathConfig::busy_poll_us` and `DatapathConfig::timer_slack_us`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct WaitPolicy {
    /// Spun (instead of slept) before each deadline, ns; 0 = never.
    spin_ns: u64,
    /// How late the timer may fire after a deadline, ns; 0 = on time.
    slack_ns: u64,
    /// How long after the last frame the loop polls instead of sleeping,
    /// ns; 0 = never.
    busy_poll_ns: u64,
}

/// What an iteration leaves for the next one to wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Pending {
    /// A port may still hold frames (a read batch stopped early).
    pub backlog: bool,
    /// The bridge's next deadline (`Bridge::poll_at`).
    pub bridge: Option<Instant>,
    /// When the first frame held by the release pacer may be written.
    pub release: Option<Instant>,
    /// When the next snapshot is published.
    pub publish: Instant,
    /// When a frame was last read or written.
    pub last_frame: Instant,
}

/// How the loop waits before its next iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WaitPlan {
    /// A port may hold frames, or the deadline is due: look for I/O
    /// without blocking.
    Look,
    /// Busy polling (a frame was read or written less than `busy_poll_us`
    /// ago): look for I/O without blocking, the deadline included (its
    /// lateness is recorded by the iteration that finds it passed).
    Poll { deadline: Instant },
    /// The deadline is within the spin margin: spin to it without the
    /// timer (re-arming a timerfd costs a VM exit on a virtual machine),
    /// then look for I/O without blocking.
    Spin { deadline: Instant },
    /// Arm the timer for the deadline (it fires `WaitPolicy::wake_at` it)
    /// and block until it fires or I/O arrives.
    Sleep { deadline: Instant },
}

impl WaitPolicy {
    pub(super) fn new(spin_us: u32, busy_poll_us: u32, timer_slack_us: u32) -> WaitPolicy {
        WaitPolicy {
            spin_ns: u64::from(spin_us) * NS_PER_US,
            slack_ns: u64::from(timer_slack_us) * NS_PER_US,
            busy_poll_ns: u64::from(busy_poll_us) * NS_PER_US,
        }
    }

    /// When the timer for `deadline` fires: the spin margin before it, or
    /// the slack after it.
    pub(super) fn wake_at(&self, deadline: Instant) -> Instant {
        deadline.saturating_sub(self.spin_ns) + self.slack_ns
    }

    /// Whether a timer armed for `armed` serves `deadline` as well: it is
    /// the same, or (with slack) it fires within `deadline`'s slack, not
    /// before `deadline`. Re-arming then would cost a `timerfd_settime` for
    /// nothing (`qdisc_watchdog_schedule_range_ns` leaves a watchdog alone
    /// for the same reason when it is already due within the new expiry's
    /// slack).
    pub(super) fn serves(&self, armed: Instant, deadline: Instant) -> bool {
        armed <= deadline && deadline.saturating_sub(self.slack_ns) <= armed
    }

    /// How to wait at `now` for what `p` leaves pending. The deadline is
    /// the earliest of the bridge's, the pacer's and the next snapshot's
    /// (so there always is one).
    pub(super) fn plan(&self, now: Instant, p: &Pending) -> WaitPlan {
        let deadline = earliest(p.bridge, p.release).map_or(p.publish, |d| d.min(p.publish));
        let polling = self.busy_poll_ns > 0 && now < p.last_frame + self.busy_poll_ns;
        if p.backlog || deadline <= now {
            WaitPlan::Look
        } else if polling {
            WaitPlan::Poll { deadline }
        } else if self.wake_at(deadline) <= now {
            WaitPlan::Spin { deadline }
        } else {
            WaitPlan::Sleep { deadline }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn at(us: u64) -> Instant {
        Instant::from_micros(us)
    }

    /// Idle since t=0, the next snapshot at t=100 ms, nothing else pending.
    const IDLE: Pending = Pending {
        backlog: false,
        bridge: None,
        release: None,
        publish: at(100_000),
        last_frame: at(0),
    };

    fn plan(spin_us: u32, busy_poll_us: u32, now: Instant, p: Pending) -> WaitPlan {
        WaitPolicy::new(spin_us, busy_poll_us, 0).plan(now, &p)
    }

    #[test]
    fn the_deadline_is_the_earliest_pending_one() {
        let now = at(1_000);
        let sleep = |us| WaitPlan::Sleep { deadline: at(us) };
        // No link deadline: the next snapshot is waited for.
        assert_eq!(plan(0, 0, now, IDLE), sleep(100_000));
        let bridge = Pending {
            bridge: Some(at(5_000)),
            ..IDLE
        };
        assert_eq!(plan(0, 0, now, bridge), sleep(5_000));
        let release = Pending {
            release: Some(at(4_000)),
            ..bridge
        };
        assert_eq!(plan(0, 0, now, release), sleep(4_000));
        let only_release = Pending {
            release: Some(at(3_000)),
            ..IDLE
        };
        assert_eq!(plan(0, 0, now, only_release), sleep(3_000));
        // A link deadline after the next snapshot: the snapshot comes first.
        let late = Pending {
            bridge: Some(at(200_000)),
            release: Some(at(300_000)),
            ..IDLE
        };
        assert_eq!(plan(0, 0, now, late), sleep(100_000));
    }

    #[test]
    fn a_backlog_or_a_due_deadline_is_looked_at_without_waiting() {
        let now = at(1_000);
        let backlog = Pending {
            backlog: true,
            bridge: Some(at(5_000)),
            ..IDLE
        };
        // A backlog wins over every other branch, polling and spinning too.
        for (spin, poll) in [(0, 0), (10_000, 0), (0, 10_000), (10_000, 10_000)] {
            assert_eq!(plan(spin, poll, now, backlog), WaitPlan::Look);
        }
        for due in [at(0), at(999), now] {
            let p = Pending {
                bridge: Some(due),
                last_frame: now,
                ..IDLE
            };
            assert_eq!(plan(50, 100, now, p), WaitPlan::Look, "{due:?}");
            let p = Pending {
                release: Some(due),
                ..IDLE
            };
            assert_eq!(plan(0, 0, now, p), WaitPlan::Look, "{due:?}");
        }
        // The snapshot falling due counts as well.
        assert_eq!(plan(0, 0, at(100_000), IDLE), WaitPlan::Look);
        // One nanosecond ahead is not due.
        let ahead = Pending {
            bridge: Some(now + 1),
            ..IDLE
        };
        assert_eq!(
            plan(0, 0, now, ahead),
            WaitPlan::Sleep { deadline: now + 1 }
        );
    }

    #[test]
    fn busy_polling_lasts_its_window_after_the_last_frame() {
        let p = Pending {
            bridge: Some(at(50_000)),
            last_frame: at(1_000),
            ..IDLE
        };
        let poll = WaitPlan::Poll {
            deadline: at(50_000),
        };
        let sleep = WaitPlan::Sleep {
            deadline: at(50_000),
        };
        // Open from the last frame to one nanosecond before its end.
        assert_eq!(plan(0, 100, at(1_000), p), poll);
        assert_eq!(plan(0, 100, at(1_100).saturating_sub(1), p), poll);
        // Expired exactly at its end.
        assert_eq!(plan(0, 100, at(1_100), p), sleep);
        assert_eq!(plan(0, 100, at(2_000), p), sleep);
        // Off: never polls.
        assert_eq!(plan(0, 0, at(1_000), p), sleep);
        // Polling wins over spinning to a deadline within the margin ...
        assert_eq!(plan(60_000, 100, at(1_000), p), poll);
        // ... and once the window expired, the deadline is spun to.
        assert_eq!(
            plan(60_000, 100, at(1_100), p),
            WaitPlan::Spin {
                deadline: at(50_000)
            }
        );
    }

    #[test]
    fn a_deadline_within_the_spin_margin_is_spun_to() {
        let p = Pending {
            bridge: Some(at(1_050)),
            ..IDLE
        };
        let spin = WaitPlan::Spin {
            deadline: at(1_050),
        };
        let sleep = WaitPlan::Sleep {
            deadline: at(1_050),
        };
        // Exactly the margin away: spun.
        assert_eq!(plan(50, 0, at(1_000), p), spin);
        // Closer: spun.
        assert_eq!(plan(50, 0, at(1_049), p), spin);
        // One nanosecond beyond the margin: slept (the timer fires 50 µs early).
        assert_eq!(plan(50, 0, at(1_000).saturating_sub(1), p), sleep);
        // No margin: always slept.
        assert_eq!(plan(0, 0, at(1_049), p), sleep);
        // A margin longer than the time since the epoch: spun.
        assert_eq!(plan(5_000, 0, at(0), p), spin);
    }

    #[test]
    fn the_timer_fires_the_spin_margin_early() {
        let w = WaitPolicy::new(50, 0, 0);
        assert_eq!(w.wake_at(at(1_050)), at(1_000));
        assert_eq!(w.wake_at(at(10)), Instant::ZERO, "saturates at zero");
        assert_eq!(WaitPolicy::new(0, 100, 0).wake_at(at(7)), at(7));
        // The largest settings do not overflow.
        let max = WaitPolicy::new(u32::MAX, u32::MAX, 0);
        assert_eq!(max.wake_at(at(1)), Instant::ZERO);
        let p = Pending {
            last_frame: Instant::from_nanos(u64::MAX),
            ..IDLE
        };
        assert_eq!(
            max.plan(at(1), &p),
            WaitPlan::Poll {
                deadline: at(100_000)
            }
        );
    }

    #[test]
    fn with_slack_the_timer_fires_late_and_one_arming_serves_the_slack() {
        let w = WaitPolicy::new(0, 0, 20);
        assert_eq!(w.wake_at(at(1_000)), at(1_020));
        // A deadline ahead is slept to, never spun to: the wake-up comes
        // after it.
        let p = Pending {
            bridge: Some(at(1_000)),
            ..IDLE
        };
        assert_eq!(
            w.plan(at(999), &p),
            WaitPlan::Sleep {
                deadline: at(1_000)
            }
        );
        // Armed for 1000 µs (firing at 1020): serves a deadline from 1000
        // to 1020, not one before 1000 (it would fire late by more than
        // the slack) nor one after 1020 (it would fire before it).
        assert!(w.serves(at(1_000), at(1_000)));
        assert!(w.serves(at(1_000), at(1_013)));
        assert!(w.serves(at(1_000), at(1_020)));
        assert!(!w.serves(at(1_000), at(1_021)));
        assert!(!w.serves(at(1_000), at(999)));
        // Without slack only the same deadline is served.
        let exact = WaitPolicy::new(0, 0, 0);
        assert!(exact.serves(at(1_000), at(1_000)));
        assert!(!exact.serves(at(1_000), at(1_001)));
        assert!(!exact.serves(at(1_001), at(1_000)));
        // The largest slack does not overflow.
        let max = WaitPolicy::new(0, 0, u32::MAX);
        assert!(max.serves(at(0), at(5)));
        assert_eq!(max.wake_at(at(1)), at(1) + u64::from(u32::MAX) * NS_PER_US);
    }
}
