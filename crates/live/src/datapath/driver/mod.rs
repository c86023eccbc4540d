//! The driver: the state one direction's datapath thread owns (its `Lane`
//! of the bridge, the read half of the port its frames come from and the
//! write half of the port they go to, its buffer pools, its epoll set with
//! its timerfd and command eventfd) and its loop. One iteration reads a
//! batch from the port (writing what falls due as it goes), polls the lane,
//! writes what it released, publishes a snapshot when one is due, waits as
//! `WaitPolicy::plan` says, handles what epoll reported, and ends the loop
//! on a port failure, a shutdown, or the other direction's end. Reading
//! (`rx`), writing (`tx`) and commands (`commands`) are in submodules.

mod commands;
mod rx;
mod tx;

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::eventfd::EventFd;
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

use crate::bridge::Lane;
use crate::clock::MonotonicClock;
use crate::dir::Dir;
use crate::packet::gro::Gro;
use crate::packet::pool::{Buffers, PacketPool};
use crate::packet::Packet;
use crate::port::FramePort;
use crate::qdisc::FlowListing;
use crate::release::ReleasePacer;
use crate::time::{earliest, Clock, Instant, NS_PER_SEC, NS_PER_US};

use super::command::Inbox;
use super::config::{DatapathConfig, GSO_FRAME_BUF};
use super::error::{DatapathError, PORT_NAMES};
use super::mailbox::SnapshotReader;
use super::publish::PublishSchedule;
use super::realtime;
use super::snapshot::{
    thread_cpu_ns, GroCounters, LaneSnapshot, PoolCounters, RecordedLateness, Wakeups,
};
use super::stages::{StageBreakdown, StageObserver, Wall, WallStages};
use super::wait::{Pending, WaitPlan, WaitPolicy};

/// epoll tokens.
const TOKEN_PORT: u64 = 0;
const TOKEN_TIMER: u64 = 1;
const TOKEN_COMMAND: u64 = 2;

/// Scratch space to read (and drop) a frame when the pool is exhausted.
const DISCARD_BUF: usize = 65_536;

/// How the two directions' threads end together: the first to end (a
/// shutdown, a port failure) raises the flag and rings the other's
/// doorbell, so the link never runs on one direction.
pub(super) struct Ending {
    pub(super) ended: Arc<AtomicBool>,
    /// The other direction's command doorbell.
    pub(super) peer: Arc<EventFd>,
}

/// The ports a direction's thread uses: it reads the one its frames come
/// from and writes the other.
pub(super) struct LanePorts {
    pub(super) rx: Box<dyn FramePort>,
    pub(super) tx: Box<dyn FramePort>,
    /// Both ports carry offload headers (super-frames may pass whole).
    pub(super) offload: bool,
}

/// The state one direction's datapath thread owns.
pub(super) struct Driver {
    dir: Dir,
    lane: Lane,
    ports: LanePorts,
    /// The first port failure; it ends the loop.
    failure: Option<DatapathError>,
    cfg: DatapathConfig,
    inbox: Inbox,
    ending: Ending,
    snapshots: SnapshotReader,
    epoll: Epoll,
    timer: TimerFd,
    /// How the loop waits between iterations (`spin_us`, `busy_poll_us`,
    /// `timer_slack_us`).
    wait: WaitPolicy,
    /// The PM QoS request the thread holds while it runs
    /// (`daemon.pm_qos_us`; dropped as the loop ends).
    pm_qos: Option<std::fs::File>,
    /// Sleeps planned, and those of them before which the budget cut the
    /// learned margin short (for the thread's closing log line).
    sleeps: (u64, u64),
    /// The deadline the timer is armed for, and when it fires (the spin
    /// margin before it, or the slack after it).
    armed: Option<(Instant, Instant)>,
    /// The deadline the last busy-poll iteration was waiting for: its
    /// lateness is recorded when an iteration finds it passed.
    polled: Option<Instant>,
    /// When a frame was last read or written (busy polling lasts
    /// `busy_poll_us` from then).
    last_frame: Instant,
    clock: MonotonicClock,
    lateness: RecordedLateness,
    release_lateness: RecordedLateness,
    /// The wall-clock stages of each frame (`stages`); the emulated ones
    /// are timed by the `StageObserver` on the lane's path.
    stages: WallStages,
    wakeups: Wakeups,
    publishing: PublishSchedule,
    /// Frame buffers, and `GSO_FRAME_BUF`-byte ones for whole
    /// super-frames.
    bufs: Buffers,
    /// Where an offload port is read into (from `bufs.super_frames`; empty
    /// without offload).
    rx_gso: Vec<u8>,
    /// Where a frame is read to be dropped when the pool is exhausted.
    discard: Vec<u8>,
    /// What the lane's last poll delivered, and freed.
    out: Vec<Packet>,
    freed: Vec<Packet>,
    /// Frames the link delivered and not yet written (they stay past one
    /// `write_out` only while the pacer spaces out overdue frames).
    held: VecDeque<Packet>,
    pacer: ReleasePacer,
    /// When the first held frame may be written.
    release_at: Option<Instant>,
    /// Merge plain TCP segments written in one pass (`DatapathConfig::gro`,
    /// an offload port written to).
    gro_on: bool,
    gro: Gro,
    gro_counts: GroCounters,
}

impl Driver {
    pub(super) fn new(
        dir: Dir,
        lane: Lane,
        ports: LanePorts,
        cfg: DatapathConfig,
        inbox: Inbox,
        ending: Ending,
        snapshots: SnapshotReader,
    ) -> io::Result<Driver> {
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        epoll.add(
            borrow(ports.rx.raw_fd()),
            EpollEvent::new(EpollFlags::EPOLLIN, TOKEN_PORT),
        )?;
        epoll.add(&timer, EpollEvent::new(EpollFlags::EPOLLIN, TOKEN_TIMER))?;
        epoll.add(
            inbox.wake.as_fd(),
            EpollEvent::new(EpollFlags::EPOLLIN, TOKEN_COMMAND),
        )?;
        let mut bufs = Buffers {
            frames: PacketPool::new(cfg.frame_buf, cfg.pool_buffers),
            super_frames: PacketPool::new(GSO_FRAME_BUF, cfg.gso_buffers.max(1)),
        };
        let rx_gso = if ports.rx.offload() {
            bufs.super_frames.get().unwrap_or_default()
        } else {
            Vec::new()
        };
        let mut driver = Driver {
            dir,
            lane,
            ports,
            failure: None,
            cfg,
            inbox,
            ending,
            snapshots,
            epoll,
            timer,
            wait: WaitPolicy::new(
                cfg.spin_us,
                cfg.spin_budget_pct,
                cfg.busy_poll_us,
                cfg.timer_slack_us,
            ),
            pm_qos: None,
            sleeps: (0, 0),
            armed: None,
            polled: None,
            last_frame: Instant::ZERO,
            clock: MonotonicClock,
            lateness: RecordedLateness::new("wake-up lateness")?,
            release_lateness: RecordedLateness::new("release lateness")?,
            stages: WallStages::new()?,
            wakeups: Wakeups::default(),
            publishing: PublishSchedule::new(cfg.publish_interval_ns),
            bufs,
            rx_gso,
            discard: vec![0; DISCARD_BUF],
            out: Vec::with_capacity(256),
            freed: Vec::with_capacity(256),
            held: VecDeque::with_capacity(256),
            pacer: ReleasePacer::new(cfg.spin_us as u64 * NS_PER_US),
            release_at: None,
            gro_on: false,
            gro: Gro::new(),
            gro_counts: GroCounters::default(),
        };
        driver.gro_on = driver.cfg.gro && driver.ports.tx.offload();
        driver.lane.set_observer(Box::new(StageObserver::new()?));
        driver.refresh_gso();
        driver.set_pacing(driver.clock.now());
        Ok(driver)
    }

    /// The port frames of this direction are read from.
    fn rx_port(&self) -> usize {
        self.dir.index()
    }

    /// The port they are written to: the other one.
    fn tx_port(&self) -> usize {
        self.dir.reverse().index()
    }

    /// Decides which super-frames pass whole: both ports must carry
    /// offload headers and the policy must allow it for the direction's
    /// link, shape and qdisc tree.
    fn refresh_gso(&mut self) {
        let policy = self.ports.offload.then_some(&self.cfg.gso);
        self.lane.set_gso(policy, self.clock.now());
    }

    /// The thread's body: sets up its scheduling, drops every capability,
    /// then iterates until a shutdown or the other direction's end (the
    /// final snapshot) or a port failure.
    pub(super) fn run(&mut self) -> Result<LaneSnapshot, DatapathError> {
        let result = self.run_loop();
        // The PM QoS request ends with the loop (closing its descriptor).
        drop(self.pm_qos.take());
        if let Some(l) = self.wait.learned() {
            tracing::info!(
                "{} wait policy: learned margin {} µs; timer lateness p50 {} µs, p99 {} µs \
                 ({} samples); the budget cut the margin short before {} of {} sleeps",
                self.dir.arrow(),
                l.margin_ns / NS_PER_US,
                l.p50_ns / NS_PER_US,
                l.p99_ns / NS_PER_US,
                l.samples,
                self.sleeps.1,
                self.sleeps.0
            );
        }
        let p = &self.publishing;
        tracing::info!(
            "{} snapshots: {} published, {} µs each on average, at most {} µs; \
             {} of them waited for a frame they would have held up",
            self.dir.arrow(),
            p.published,
            p.total_ns / p.published.max(1) / NS_PER_US,
            p.longest_ns / NS_PER_US,
            p.deferred
        );
        // Whatever ended this direction ends the other.
        self.ending.ended.store(true, Ordering::Release);
        let _ = self.ending.peer.write(1);
        result
    }

    fn run_loop(&mut self) -> Result<LaneSnapshot, DatapathError> {
        self.pm_qos = realtime::set_up(&self.cfg, self.dir);
        // Everything that needed a privilege is done (the ports are open).
        crate::privilege::drop_all()?;
        let mut events = [EpollEvent::empty(); 4];
        // The port is read this iteration: readable per epoll, or left
        // with frames when the batch limit was hit.
        let mut readable = true;
        loop {
            if readable && self.failure.is_none() {
                readable = self.read_port();
            }
            let now = self.clock.now();
            let released = self.poll_lane(now);
            self.set_pacing(now);
            self.write_out(true, released);
            self.publish_if_due(now);
            let plan = self.wait.plan(now, &self.pending(readable));
            if matches!(plan, WaitPlan::Sleep { .. }) {
                self.sleeps.0 += 1;
                self.sleeps.1 += u64::from(self.wait.budget_short(now));
            }
            let timeout = self.begin_wait(plan)?;
            let n = self.wait_events(&mut events, timeout)?;
            if n == 0 && matches!(plan, WaitPlan::Poll { .. }) {
                // Nothing yet: let whatever else wants this core run (the
                // traffic's own processes, the other direction's thread)
                // before polling again.
                std::thread::yield_now();
            }
            readable |= self.dispatch(&events[..n]);
            // Before `finish` applies commands that may change the lane.
            self.reach_polled_deadline();
            if let Some(end) = self.finish() {
                return end;
            }
        }
    }

    /// Lets the release pacer wait as long as the loop would spin at `now`,
    /// if the direction's line spaces frames out at all. The pacer follows
    /// a NIC serializing at line rate (`crate::release`); an unlimited line
    /// without a schedule serializes nothing, so frames it delivered while
    /// the loop was late leave as they are due, as netem's `tfifo` and a
    /// veth hand them on. Their logical gaps are then only the arrival
    /// times this thread stamped, spaced by its own reads and writes:
    /// pacing them made each write wait for the cost of the read before it.
    fn set_pacing(&mut self, now: Instant) {
        let wait = if self.lane.path().serializes() {
            self.wait.pace_wait(now)
        } else {
            0
        };
        self.pacer.set_max_wait(wait);
    }

    /// Advances the lane to `now`: what it delivers joins `out`, the
    /// buffers it freed go back to their pools. Returns the latest clock
    /// reading: the one that ended the release stage when frames were
    /// released, else `now`.
    fn poll_lane(&mut self, now: Instant) -> Instant {
        let before = self.out.len();
        self.lane.poll(now, &mut self.out, &mut self.freed);
        let mut latest = now;
        if self.out.len() > before {
            latest = self.clock.now();
            self.stages.span(Wall::Release, now, latest);
        }
        for pkt in self.freed.drain(..) {
            self.bufs.put(pkt.data);
        }
        latest
    }

    /// Records the lateness of the deadline the last busy-poll iteration
    /// waited for, once it has passed.
    fn reach_polled_deadline(&mut self) {
        if let Some(deadline) = self.polled {
            let now = self.clock.now();
            if now >= deadline {
                self.polled = None;
                self.reached(deadline, now);
            }
        }
    }

    /// Publishes a snapshot if one is due and fits before the next frame
    /// deadline (`PublishSchedule::due`), timing it for the next. The
    /// iteration's time (`now`) tells whether one is due; only then is
    /// the clock read again, for the room left after the writes.
    fn publish_if_due(&mut self, now: Instant) {
        if now < self.publishing.next_due() {
            return;
        }
        let now = self.clock.now();
        if self.publishing.due(now, self.next_frame()) {
            self.publish(now);
            let cost = self.clock.now().saturating_since(now);
            self.publishing.published(now, cost);
        }
    }

    /// The lane's next frame deadline: its next delivery or the pacer's
    /// next release.
    fn next_frame(&self) -> Option<Instant> {
        earliest(self.lane.deliver_at(), self.release_at)
    }

    /// What this iteration leaves for the next one to wait for.
    fn pending(&self, backlog: bool) -> Pending {
        // Events inside the link that deliver nothing (an idle frame's
        // departure) are run by the poll at the delivery.
        let bridge = self.lane.deliver_at();
        Pending {
            backlog,
            bridge,
            release: self.release_at,
            publish: self.publishing.wake_at(earliest(bridge, self.release_at)),
            last_frame: self.last_frame,
        }
    }

    /// Carries out `plan` up to the epoll call (counting a poll or a spin,
    /// spinning, or arming the timer) and returns how long epoll may block.
    fn begin_wait(&mut self, plan: WaitPlan) -> io::Result<EpollTimeout> {
        Ok(match plan {
            WaitPlan::Look => EpollTimeout::ZERO,
            WaitPlan::Poll { deadline } => {
                self.wakeups.polls += 1;
                self.polled = Some(deadline);
                EpollTimeout::ZERO
            }
            WaitPlan::Spin { deadline } => {
                self.wakeups.spun += 1;
                self.spin_until(deadline);
                EpollTimeout::ZERO
            }
            WaitPlan::Sleep { deadline, wake } => {
                self.arm(deadline, wake)?;
                EpollTimeout::NONE
            }
        })
    }

    /// Waits in epoll at most `timeout`; returns how many events it filled
    /// in (none if a signal interrupted the wait).
    fn wait_events(
        &self,
        events: &mut [EpollEvent],
        timeout: EpollTimeout,
    ) -> Result<usize, DatapathError> {
        match self.epoll.wait(events, timeout) {
            Ok(n) => Ok(n),
            Err(nix::errno::Errno::EINTR) => Ok(0),
            Err(e) => Err(io::Error::from(e).into()),
        }
    }

    /// Handles what epoll reported: a readable port is to be read (a
    /// hung-up one fails), the timer finishes its wake-up, the command
    /// doorbell is cleared (the queue is drained in `finish`). True if the
    /// port is readable.
    fn dispatch(&mut self, events: &[EpollEvent]) -> bool {
        if !events.is_empty() {
            self.wakeups.total += 1;
        }
        let mut readable = false;
        for ev in events {
            match ev.data() {
                TOKEN_PORT => {
                    readable = true;
                    self.wakeups.io += 1;
                    // A hung-up socket reads as end-of-file forever. (A
                    // deleted TAP signals EPOLLERR, and its read fails.)
                    if ev.events().contains(EpollFlags::EPOLLHUP) {
                        let port = self.rx_port();
                        self.fail(port, "waiting for frames", io::ErrorKind::BrokenPipe.into());
                    }
                }
                TOKEN_TIMER => self.on_timer(),
                TOKEN_COMMAND => {
                    // The counter only wakes us; the queue holds the commands.
                    let _ = self.inbox.wake.read();
                }
                _ => {}
            }
        }
        readable
    }

    /// Ends the loop if it must, with what `run` returns: the first port
    /// failure, or (after applying the queued commands, a shutdown among
    /// them, or when the other direction has ended) the final snapshot.
    fn finish(&mut self) -> Option<Result<LaneSnapshot, DatapathError>> {
        if self.failure.is_some() {
            // Frames still held are written, or counted as lost by the
            // port that failed.
            self.write_out(false, self.clock.now());
            self.publish(self.clock.now());
            return self.failure.take().map(Err);
        }
        if self.drain_commands() || self.ending.ended.load(Ordering::Acquire) {
            // Frames the pacer still holds are written now, not lost.
            return Some(Ok(self.end()));
        }
        None
    }

    /// Records the first failure of port `i`: the loop ends at the end of
    /// this iteration with it (its counters keep the error).
    fn fail(&mut self, i: usize, op: &'static str, source: io::Error) {
        if self.failure.is_none() {
            tracing::error!(port = PORT_NAMES[i], "{op}: {source}");
            self.failure = Some(DatapathError::PortFailed {
                port: PORT_NAMES[i],
                op,
                source,
            });
        }
    }

    /// Arms the timer to fire at `wake_at` for `deadline` (minus the spin
    /// margin, or plus the slack) unless the timer already armed serves it
    /// (`WaitPolicy::serves`).
    fn arm(&mut self, deadline: Instant, wake_at: Instant) -> io::Result<()> {
        if self
            .armed
            .is_some_and(|armed| self.wait.serves(armed, deadline, wake_at))
        {
            return Ok(());
        }
        let ts = TimeSpec::new(
            (wake_at.nanos() / NS_PER_SEC) as i64,
            (wake_at.nanos() % NS_PER_SEC) as i64,
        );
        self.timer.set(
            Expiration::OneShot(ts),
            TimerSetTimeFlags::TFD_TIMER_ABSTIME,
        )?;
        self.armed = Some((deadline, wake_at));
        Ok(())
    }

    /// The timer fired: tell the wait policy how late, finish with a spin
    /// if it fired a margin early, then record how late we are.
    fn on_timer(&mut self) {
        // Non-blocking read of the expiry count; EAGAIN only if a re-arm raced.
        let _ = self.timer.wait();
        self.wakeups.timer += 1;
        if let Some((deadline, wake)) = self.armed.take() {
            self.wait.timer_fired(wake, self.clock.now());
            self.spin_until(deadline);
        }
    }

    /// Spins until `deadline` (if it is still ahead), then records how late
    /// the loop reached it; the wait policy is told how long it spun.
    fn spin_until(&mut self, deadline: Instant) {
        let start = self.clock.now();
        let mut now = start;
        while now < deadline {
            std::hint::spin_loop();
            now = self.clock.now();
        }
        if now > start {
            self.wait.spun(start, now);
        }
        self.reached(deadline, now);
    }

    /// Records how late the loop reached `deadline` (at `now`), if it was
    /// a frame's (a delivery or a paced release), not a wake-up for a
    /// snapshot alone, before which nothing is spun. Nothing has changed
    /// the lane or the pacer since the wait for `deadline` was planned, so
    /// their next deadline is still the one planned for.
    fn reached(&mut self, deadline: Instant, now: Instant) {
        if self.next_frame() == Some(deadline) {
            self.lateness.record(now.saturating_since(deadline));
        }
    }

    fn snapshot(&mut self, now: Instant) -> LaneSnapshot {
        let release_lateness = self.release_lateness.share();
        LaneSnapshot {
            at: now,
            path: self
                .lane
                .path()
                .snapshot_listing(now, FlowListing::Top(self.cfg.snapshot_flows)),
            capture: self.lane.tap_counters(),
            lateness: self.lateness.share(),
            release_lateness,
            wakeups: Wakeups {
                cpu_ns: thread_cpu_ns(),
                ..self.wakeups
            },
            rx_port: self.ports.rx.counters(),
            tx_port: self.ports.tx.counters(),
            pool: PoolCounters {
                in_use: self.bufs.in_use() as u64,
                refused: self.bufs.exhausted(),
            },
            gro: self.gro_counts,
            stages: StageBreakdown::of(
                &mut self.stages,
                self.release_lateness.summary(),
                self.lane.path_mut().observer_mut::<StageObserver>(),
            ),
        }
    }

    fn publish(&mut self, now: Instant) {
        let snap = self.snapshot(now);
        self.snapshots.offer(self.dir, snap);
    }

    /// The direction's end (a thread's or a stepped one's): what the pacer
    /// holds is written, and the final snapshot published and returned.
    pub(super) fn end(&mut self) -> LaneSnapshot {
        self.write_out(false, self.clock.now());
        let snap = self.snapshot(self.clock.now());
        self.snapshots.offer(self.dir, snap.clone());
        snap
    }
}

/// Borrows a port's descriptor for epoll registration.
#[allow(unsafe_code)]
fn borrow(fd: RawFd) -> BorrowedFd<'static> {
    // SAFETY: the descriptor belongs to a port the Driver owns for its whole
    // life, and it is only used for epoll_ctl while the Driver exists.
    unsafe { BorrowedFd::borrow_raw(fd) }
}
