//! The datapath's wait decision, as a pure state machine: given the time,
//! what the iteration left pending (a read batch cut short, the bridge's
//! and the release pacer's next deadline, the next snapshot) and the
//! `spin_us` / `spin_budget_pct` / `busy_poll_us` / `timer_slack_us`
//! settings, `WaitPolicy::plan` says how the loop waits for the next event:
//! not at all, by busy polling, by spinning to a deadline without the
//! timer, or by sleeping in `epoll_wait` on the timerfd, armed at the
//! deadline (a spin margin earlier, or up to `timer_slack_us` later, so
//! that one wake-up serves every deadline within the slack, as
//! `qdisc_watchdog_schedule_range_ns` in net/sched/sch_api.c does for
//! sch_fq's `timer_slack`). By default (no `spin_us`, no slack) the margin
//! is learned (`AdaptiveSpin`): the p99 of how late the timer has been
//! firing, capped at `MARGIN_CAP_NS`, spent only before a frame's deadline
//! and never beyond a spin budget (`spin_budget_pct` of a core): when what
//! is left of it is less than the margin, the margin is cut to what is
//! left, so that where the budget cannot pay a whole margin per frame each
//! frame gets the same share of it (all or nothing made every few frames
//! leave on time and the rest a timer's lateness late, which widened the
//! spacing at 100 Mbit/s beyond sleeping to every deadline). The
//! driver reports what happened (`timer_fired`, `spun`); the policy reads
//! no clock and makes no system call.

use crate::time::{earliest, Instant, NS_PER_MS, NS_PER_US};

/// Width of a timer-lateness bucket of `AdaptiveSpin`, ns.
pub(super) const BUCKET_NS: u64 = 4 * NS_PER_US;
/// Buckets of timer lateness (the last also holds every later sample).
const BUCKETS: usize = 64;
/// The learned margin never exceeds this: a timer later than that is a
/// preemption, which spinning longer would not have helped.
pub(super) const MARGIN_CAP_NS: u64 = 200 * NS_PER_US;
/// Samples before the learned margin is used (until then: none).
pub(super) const MIN_SAMPLES: u32 = 32;
/// When the samples reach this many, every bucket is halved: the margin
/// follows the last few thousand wake-ups.
pub(super) const WINDOW: u32 = 1024;
/// The budget's depth: at most `pct` % of this much spin time is saved up
/// while no frame is due, ns.
pub(super) const BUDGET_DEPTH_NS: u64 = 10 * NS_PER_MS;

/// How the loop may wait, from `DatapathConfig::spin_us`,
/// `spin_budget_pct`, `busy_poll_us` and `timer_slack_us`, with the
/// adaptive margin's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct WaitPolicy {
    /// Spun (instead of slept) before each deadline, ns; 0 = never, or
    /// learned (`adaptive`).
    spin_ns: u64,
    /// How late the timer may fire after a deadline, ns; 0 = on time.
    slack_ns: u64,
    /// How long after the last frame the loop polls instead of sleeping,
    /// ns; 0 = never.
    busy_poll_ns: u64,
    /// The learned margin and its budget: without `spin_us` and slack,
    /// with a budget.
    adaptive: Option<AdaptiveSpin>,
}

/// The default's spin margin: learned from how late the timer fires
/// (its p99 over the last `WINDOW` or so wake-ups, in `BUCKET_NS` steps,
/// at most `MARGIN_CAP_NS`), and paid for from a budget of `pct` % of the
/// time elapsed (a token bucket at most `BUDGET_DEPTH_NS` deep).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct AdaptiveSpin {
    /// Timer lateness samples (time woken minus time armed for), by bucket.
    hist: [u32; BUCKETS],
    samples: u32,
    /// The margin the samples give.
    margin_ns: u64,
    /// The budget: % of a core.
    pct: u64,
    /// Spin time left at `refilled_at`, ns.
    tokens_ns: u64,
    refilled_at: Instant,
}

/// The learned margin's state (`WaitPolicy::learned`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Learned {
    pub margin_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub samples: u32,
}

/// What an iteration leaves for the next one to wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Pending {
    /// A port may still hold frames (a read batch stopped early).
    pub backlog: bool,
    /// The lane's next delivery (`Lane::deliver_at`): the earliest time
    /// its poll can hand out a frame.
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
    /// Arm the timer to fire at `wake` (the deadline less the margin, or
    /// plus the slack) and block until it fires or I/O arrives; when it
    /// fires, spin the rest of the way to `deadline`.
    Sleep { deadline: Instant, wake: Instant },
}

impl WaitPolicy {
    /// `spin_us` fixes the margin; without it and without slack a
    /// `spin_budget_pct` above 0 learns it (`AdaptiveSpin`).
    pub(super) fn new(
        spin_us: u32,
        spin_budget_pct: u8,
        busy_poll_us: u32,
        timer_slack_us: u32,
    ) -> WaitPolicy {
        let adaptive = (spin_us == 0 && timer_slack_us == 0 && spin_budget_pct > 0)
            .then(|| AdaptiveSpin::new(u64::from(spin_budget_pct.min(100))));
        WaitPolicy {
            spin_ns: u64::from(spin_us) * NS_PER_US,
            slack_ns: u64::from(timer_slack_us) * NS_PER_US,
            busy_poll_ns: u64::from(busy_poll_us) * NS_PER_US,
            adaptive,
        }
    }

    /// The spin margin before a deadline at `now`: `spin_us`, or (learned)
    /// only before a frame's deadline and at most the budget left.
    pub(super) fn margin(&self, now: Instant, frame_due: bool) -> u64 {
        match &self.adaptive {
            Some(a) if frame_due => a.margin_at(now),
            Some(_) => 0,
            None => self.spin_ns,
        }
    }

    /// When the timer for `deadline` fires with `margin`: that much before
    /// it, or the slack after it.
    pub(super) fn wake_at(&self, deadline: Instant, margin: u64) -> Instant {
        deadline.saturating_sub(margin) + self.slack_ns
    }

    /// Whether a timer armed for `armed` (deadline, wake-up) serves
    /// `deadline` waking at `wake` as well: the same, or (with slack) it
    /// fires within `deadline`'s slack, not before `deadline`. Re-arming
    /// then would cost a `timerfd_settime` for nothing
    /// (`qdisc_watchdog_schedule_range_ns` leaves a watchdog alone for the
    /// same reason when it is already due within the new expiry's slack).
    pub(super) fn serves(
        &self,
        armed: (Instant, Instant),
        deadline: Instant,
        wake: Instant,
    ) -> bool {
        let (at, woke) = armed;
        if self.slack_ns == 0 {
            return at == deadline && woke == wake;
        }
        at <= deadline && deadline.saturating_sub(self.slack_ns) <= at
    }

    /// How to wait at `now` for what `p` leaves pending. The deadline is
    /// the earliest of the bridge's, the pacer's and the next snapshot's
    /// (so there always is one); it is a frame's unless it is the
    /// snapshot's alone.
    pub(super) fn plan(&self, now: Instant, p: &Pending) -> WaitPlan {
        let frame = earliest(p.bridge, p.release);
        let deadline = frame.map_or(p.publish, |d| d.min(p.publish));
        let frame_due = frame.is_some_and(|d| d <= p.publish);
        let polling = self.busy_poll_ns > 0 && now < p.last_frame + self.busy_poll_ns;
        if p.backlog || deadline <= now {
            return WaitPlan::Look;
        }
        if polling {
            return WaitPlan::Poll { deadline };
        }
        let wake = self.wake_at(deadline, self.margin(now, frame_due));
        if wake <= now {
            WaitPlan::Spin { deadline }
        } else {
            WaitPlan::Sleep { deadline, wake }
        }
    }

    /// The timer armed to fire at `wake` woke the loop at `now`: a sample
    /// of the timer's lateness for the learned margin.
    pub(super) fn timer_fired(&mut self, wake: Instant, now: Instant) {
        if let Some(a) = &mut self.adaptive {
            a.sample(now.saturating_since(wake));
        }
    }

    /// The loop spun from `from` to `to`: paid from the budget.
    pub(super) fn spun(&mut self, from: Instant, to: Instant) {
        if let Some(a) = &mut self.adaptive {
            a.spend(to, to.saturating_since(from));
        }
    }

    /// Whether the budget left at `now` is short of the learned margin
    /// (the margin is cut to it).
    pub(super) fn budget_short(&self, now: Instant) -> bool {
        self.adaptive
            .as_ref()
            .is_some_and(|a| a.margin_at(now) < a.margin_ns)
    }

    /// The learned state, for the thread's closing log line: the margin
    /// and the timer lateness's p50 and p99 over the current window (upper
    /// bucket edges, ns) and the samples in it; None without learning.
    pub(super) fn learned(&self) -> Option<Learned> {
        self.adaptive.as_ref().map(|a| Learned {
            margin_ns: a.margin_ns,
            p50_ns: a.quantile_ns(500),
            p99_ns: a.quantile_ns(990),
            samples: a.samples,
        })
    }

    /// The longest wait the release pacer may impose at `now`: as long as
    /// the loop would spin before a frame (`release::ReleasePacer`).
    pub(super) fn pace_wait(&self, now: Instant) -> u64 {
        self.margin(now, true)
    }
}

impl AdaptiveSpin {
    fn new(pct: u64) -> AdaptiveSpin {
        AdaptiveSpin {
            hist: [0; BUCKETS],
            samples: 0,
            margin_ns: 0,
            pct,
            tokens_ns: BUDGET_DEPTH_NS * pct / 100,
            refilled_at: Instant::ZERO,
        }
    }

    /// The budget left at `now` (`refilled_at` or later): what was left
    /// plus `pct` % of the time since, at most the bucket's depth.
    fn tokens_at(&self, now: Instant) -> u64 {
        let earned = now
            .saturating_since(self.refilled_at)
            .saturating_mul(self.pct)
            / 100;
        self.tokens_ns
            .saturating_add(earned)
            .min(BUDGET_DEPTH_NS * self.pct / 100)
    }

    /// The learned margin, or the budget left at `now` if that is less.
    /// Where spinning costs more than the budget earns between deadlines,
    /// the budget runs down to what one interval earns, and each deadline
    /// gets that much: the margin the budget can keep up.
    fn margin_at(&self, now: Instant) -> u64 {
        self.margin_ns.min(self.tokens_at(now))
    }

    /// `ns` of spinning, ended at `now`, paid from the budget.
    fn spend(&mut self, now: Instant, ns: u64) {
        if now >= self.refilled_at {
            self.tokens_ns = self.tokens_at(now).saturating_sub(ns);
            self.refilled_at = now;
        } else {
            self.tokens_ns = self.tokens_ns.saturating_sub(ns);
        }
    }

    /// Records how late the timer fired and updates the margin: the upper
    /// edge of the bucket holding the p99, capped.
    fn sample(&mut self, late_ns: u64) {
        let bucket =
            usize::try_from(late_ns / BUCKET_NS).map_or(BUCKETS - 1, |b| b.min(BUCKETS - 1));
        self.hist[bucket] += 1;
        self.samples += 1;
        if self.samples >= WINDOW {
            self.hist.iter_mut().for_each(|n| *n /= 2);
            self.samples = self.hist.iter().sum();
        }
        self.margin_ns = if self.samples < MIN_SAMPLES {
            0
        } else {
            self.quantile_ns(990).min(MARGIN_CAP_NS)
        };
    }

    /// The upper edge of the bucket holding the quantile `permille` ‰ of
    /// the samples, ns.
    fn quantile_ns(&self, permille: u64) -> u64 {
        let need = u64::from(self.samples) * permille;
        let mut seen = 0u64;
        let mut at = BUCKETS - 1;
        for (i, &n) in self.hist.iter().enumerate() {
            seen += u64::from(n) * 1000;
            if seen >= need {
                at = i;
                break;
            }
        }
        (at as u64 + 1) * BUCKET_NS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_SEC;

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
        WaitPolicy::new(spin_us, 0, busy_poll_us, 0).plan(now, &p)
    }

    /// Sleeping to `deadline` with no margin: the timer fires at it.
    const fn sleep_to(deadline: Instant) -> WaitPlan {
        WaitPlan::Sleep {
            deadline,
            wake: deadline,
        }
    }

    #[test]
    fn the_deadline_is_the_earliest_pending_one() {
        let now = at(1_000);
        let sleep = |us| sleep_to(at(us));
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
        assert_eq!(plan(0, 0, now, ahead), sleep_to(now + 1));
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
        let sleep = sleep_to(at(50_000));
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
            wake: at(1_000),
        };
        // Exactly the margin away: spun.
        assert_eq!(plan(50, 0, at(1_000), p), spin);
        // Closer: spun.
        assert_eq!(plan(50, 0, at(1_049), p), spin);
        // One nanosecond beyond the margin: slept (the timer fires 50 µs early).
        assert_eq!(plan(50, 0, at(1_000).saturating_sub(1), p), sleep);
        // No margin: always slept, the timer firing at the deadline.
        assert_eq!(plan(0, 0, at(1_049), p), sleep_to(at(1_050)));
        // A margin longer than the time since the epoch: spun.
        assert_eq!(plan(5_000, 0, at(0), p), spin);
    }

    #[test]
    fn the_timer_fires_the_spin_margin_early() {
        let w = WaitPolicy::new(50, 0, 0, 0);
        let m = w.margin(at(0), true);
        assert_eq!(w.wake_at(at(1_050), m), at(1_000));
        assert_eq!(w.wake_at(at(10), m), Instant::ZERO, "saturates at zero");
        let poll = WaitPolicy::new(0, 0, 100, 0);
        assert_eq!(poll.wake_at(at(7), poll.margin(at(0), true)), at(7));
        // The largest settings do not overflow.
        let max = WaitPolicy::new(u32::MAX, 0, u32::MAX, 0);
        assert_eq!(max.wake_at(at(1), max.margin(at(0), true)), Instant::ZERO);
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
        let w = WaitPolicy::new(0, 0, 0, 20);
        assert_eq!(w.margin(at(0), true), 0);
        assert_eq!(w.wake_at(at(1_000), 0), at(1_020));
        // A deadline ahead is slept to, never spun to: the wake-up comes
        // after it.
        let p = Pending {
            bridge: Some(at(1_000)),
            ..IDLE
        };
        assert_eq!(
            w.plan(at(999), &p),
            WaitPlan::Sleep {
                deadline: at(1_000),
                wake: at(1_020)
            }
        );
        // Armed for 1000 µs (firing at 1020): serves a deadline from 1000
        // to 1020, not one before 1000 (it would fire late by more than
        // the slack) nor one after 1020 (it would fire before it).
        let armed = (at(1_000), at(1_020));
        let serves = |w: &WaitPolicy, d: Instant| w.serves(armed, d, w.wake_at(d, 0));
        assert!(serves(&w, at(1_000)));
        assert!(serves(&w, at(1_013)));
        assert!(serves(&w, at(1_020)));
        assert!(!serves(&w, at(1_021)));
        assert!(!serves(&w, at(999)));
        // Without slack only the same deadline is served.
        let exact = WaitPolicy::new(0, 0, 0, 0);
        let armed = (at(1_000), at(1_000));
        assert!(exact.serves(armed, at(1_000), at(1_000)));
        assert!(!exact.serves(armed, at(1_001), at(1_001)));
        assert!(!exact.serves((at(1_001), at(1_001)), at(1_000), at(1_000)));
        // The largest slack does not overflow.
        let max = WaitPolicy::new(0, 0, 0, u32::MAX);
        assert!(max.serves((at(0), at(0)), at(5), at(5)));
        assert_eq!(
            max.wake_at(at(1), 0),
            at(1) + u64::from(u32::MAX) * NS_PER_US
        );
    }

    /// The default policy: a 10 % budget, the margin learned.
    fn adaptive() -> WaitPolicy {
        WaitPolicy::new(0, 10, 0, 0)
    }

    /// Feeds `n` timer wake-ups `late_us` µs after the time armed for.
    fn feed(w: &mut WaitPolicy, n: u32, late_us: u64) {
        for _ in 0..n {
            w.timer_fired(at(1_000), at(1_000) + late_us * NS_PER_US);
        }
    }

    #[test]
    fn the_margin_is_learned_from_the_timers_p99_and_capped() {
        let mut w = adaptive();
        let now = at(20_000);
        // Too few samples: no margin yet.
        feed(&mut w, MIN_SAMPLES - 1, 30);
        assert_eq!(w.margin(now, true), 0);
        // 30 µs late is bucket [28, 32): the margin is its upper edge.
        feed(&mut w, 1, 30);
        assert_eq!(w.margin(now, true), 32 * NS_PER_US);
        // 99 wake-ups 10 µs late and one 150 µs late: the p99 is 10 µs's
        // bucket [8, 12); two late ones of 100 and the p99 is [148, 152).
        let mut w = adaptive();
        feed(&mut w, 99, 10);
        feed(&mut w, 1, 150);
        assert_eq!(w.margin(now, true), 12 * NS_PER_US);
        feed(&mut w, 1, 150);
        assert_eq!(w.margin(now, true), 152 * NS_PER_US);
        // A timer always 1 ms late: the cap.
        let mut w = adaptive();
        feed(&mut w, 100, 1_000);
        assert_eq!(w.margin(now, true), MARGIN_CAP_NS);
        // A timer that fired early counts as on time.
        let mut w = adaptive();
        for _ in 0..100 {
            w.timer_fired(at(1_000), at(900));
        }
        assert_eq!(w.margin(now, true), BUCKET_NS);
    }

    #[test]
    fn the_margin_follows_the_last_window_of_wake_ups() {
        let mut w = adaptive();
        let now = at(20_000);
        feed(&mut w, WINDOW, 100);
        assert_eq!(w.margin(now, true), 104 * NS_PER_US);
        // The window halves at WINDOW samples: 512 old and 512 new become
        // 256 and 256, and 88 more new leave the old ones 43 %.
        feed(&mut w, 600, 10);
        assert_eq!(w.margin(now, true), 104 * NS_PER_US);
        // Six halvings later the old ones are under 1 %.
        feed(&mut w, 3_000, 10);
        assert_eq!(w.margin(now, true), 12 * NS_PER_US);
    }

    #[test]
    fn the_learned_margin_is_spent_before_frames_only() {
        let mut w = adaptive();
        feed(&mut w, 100, 30);
        let now = at(20_000);
        let frame = Pending {
            bridge: Some(at(20_100)),
            ..IDLE
        };
        assert_eq!(
            w.plan(now, &frame),
            WaitPlan::Sleep {
                deadline: at(20_100),
                wake: at(20_068)
            }
        );
        let paced = Pending {
            release: Some(at(20_100)),
            ..IDLE
        };
        assert_eq!(w.plan(now, &paced), w.plan(now, &frame));
        // Within the margin: spun to.
        assert_eq!(
            w.plan(at(20_070), &frame),
            WaitPlan::Spin {
                deadline: at(20_100)
            }
        );
        // The snapshot's deadline alone, or before the frame's: slept to.
        let idle = Pending {
            publish: at(20_100),
            ..IDLE
        };
        assert_eq!(w.plan(now, &idle), sleep_to(at(20_100)));
        let snapshot_first = Pending {
            bridge: Some(at(20_200)),
            ..idle
        };
        assert_eq!(w.plan(now, &snapshot_first), sleep_to(at(20_100)));
        assert_eq!(w.plan(at(20_090), &snapshot_first), sleep_to(at(20_100)));
        // The pacer may wait as long as the loop would spin.
        assert_eq!(w.pace_wait(now), 32 * NS_PER_US);
    }

    #[test]
    fn a_spent_budget_cuts_the_margin_to_what_is_left() {
        // 10 % of a core: at most 1 ms saved up, refilled at 0.1 ns per ns.
        let mut w = adaptive();
        feed(&mut w, 100, 30);
        let margin = 32 * NS_PER_US;
        let start = at(10_000);
        let mut now = start;
        let frame = |now: Instant| Pending {
            bridge: Some(now + margin),
            ..IDLE
        };
        // Spinning back to back: the first spin leaves 968 µs, each later
        // one 28.8 µs less (32 spent, 3.2 earned); the 34th leaves 17.6 µs,
        // less than a margin.
        let mut spins = 0;
        while w.margin(now, true) == margin {
            assert_eq!(
                w.plan(now, &frame(now)),
                WaitPlan::Spin {
                    deadline: now + margin
                }
            );
            w.spun(now, now + margin);
            now += margin;
            spins += 1;
            assert!(spins < 100, "the budget never ran out");
        }
        assert_eq!(spins, 34);
        // Short: the margin is the 17.6 µs left, the timer armed that much
        // before the deadline, and the pacer waits no longer.
        assert!(w.budget_short(now));
        assert_eq!(w.margin(now, true), 17_600);
        assert_eq!(w.pace_wait(now), 17_600);
        let deadline = now + margin;
        assert_eq!(
            w.plan(now, &frame(now)),
            WaitPlan::Sleep {
                deadline,
                wake: now + 14_400
            }
        );
        // Spinning it all (the timer on time) leaves the 3.2 µs earned
        // meanwhile: frames every 32 µs get 10 % of the gap each.
        w.spun(now + 14_400, deadline);
        assert_eq!(w.margin(deadline, true), 3_200);
        w.spun(deadline + 28_800, deadline + margin);
        assert_eq!(w.margin(deadline + margin, true), 3_200);
        // 28.8 µs more are earned in 288 µs: a whole margin again.
        let refilled = deadline + margin + 288 * NS_PER_US;
        assert_eq!(w.margin(refilled.saturating_sub(1), true), margin - 1);
        assert_eq!(w.margin(refilled, true), margin);
        assert!(!w.budget_short(refilled));
        // Idle for a minute: at most 1 ms saved up. A 968 µs spin (paid
        // at its end, nothing earned while it is timed) leaves 32 µs, one
        // margin; 1 µs more (0.1 earned) leaves 31.1.
        let later = now + 60 * NS_PER_SEC;
        let spun = later + 968 * NS_PER_US;
        w.spun(later, spun);
        assert_eq!(w.margin(spun, true), margin);
        w.spun(spun, spun + NS_PER_US);
        assert_eq!(w.margin(spun + NS_PER_US, true), 31_100);
    }

    #[test]
    fn the_learned_state_and_a_short_budget_are_reported() {
        let mut w = adaptive();
        // 90 wake-ups 10 µs late, 10 wake-ups 150 µs late: p50 in [8, 12),
        // p99 and the margin in [148, 152).
        feed(&mut w, 90, 10);
        feed(&mut w, 10, 150);
        let learned = Learned {
            margin_ns: 152 * NS_PER_US,
            p50_ns: 12 * NS_PER_US,
            p99_ns: 152 * NS_PER_US,
            samples: 100,
        };
        assert_eq!(w.learned(), Some(learned));
        // A full budget (1 ms at 10 %) covers the margin; 152 µs spun
        // six times over leaves 88 µs, less than one: the margin is cut.
        let now = at(20_000);
        assert!(!w.budget_short(now));
        w.spun(now, now + 912 * NS_PER_US);
        assert!(w.budget_short(now + 912 * NS_PER_US));
        assert_eq!(w.margin(now + 912 * NS_PER_US, true), 88 * NS_PER_US);
        // Nothing learned yet: never short. Without learning: no state.
        assert!(!adaptive().budget_short(now));
        assert_eq!(WaitPolicy::new(50, 10, 0, 0).learned(), None);
        assert!(!WaitPolicy::new(50, 10, 0, 0).budget_short(now));
    }

    #[test]
    fn spin_us_or_slack_or_no_budget_turn_the_learning_off() {
        for w in [
            WaitPolicy::new(50, 10, 0, 0),
            WaitPolicy::new(0, 10, 0, 20),
            WaitPolicy::new(0, 0, 0, 0),
        ] {
            let mut w = w;
            let fixed = w.margin(at(0), false);
            feed(&mut w, 100, 30);
            w.spun(at(0), at(1_000_000));
            assert_eq!(w.margin(at(0), true), fixed);
            assert_eq!(w.margin(at(0), false), fixed);
        }
        assert_eq!(
            WaitPolicy::new(50, 10, 0, 0).margin(at(0), false),
            50 * NS_PER_US
        );
    }
}
