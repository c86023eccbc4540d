//! The driver: the state the datapath thread owns (the `Bridge`, both
//! ports, the buffer pools, the epoll set with its timerfd and command
//! eventfd) and its loop. One iteration reads the readable ports, polls the
//! bridge, writes what it released, publishes a snapshot when one is due,
//! waits as `WaitPolicy::plan` says, handles what epoll reported, and ends
//! the loop on a port failure or a shutdown. Reading (`rx`), writing
//! (`tx`) and commands (`commands`) are in submodules.

mod commands;
mod rx;
mod tx;

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use hdrhistogram::Histogram;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::eventfd::EventFd;
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

use crate::bridge::Bridge;
use crate::clock::MonotonicClock;
use crate::dir::Dir;
use crate::packet::pool::PacketPool;
use crate::port::FramePort;
use crate::qdisc::FlowListing;
use crate::release::ReleasePacer;
use crate::time::{Clock, Instant, NS_PER_SEC, NS_PER_US};

use super::command::Command;
use super::config::{DatapathConfig, GSO_FRAME_BUF};
use super::error::{DatapathError, PORT_NAMES};
use super::mailbox::SnapshotReader;
use super::realtime;
use super::snapshot::{
    lateness_histogram, thread_cpu_ns, LatenessSummary, LiveSnapshot, PoolCounters, Wakeups,
};
use super::wait::{Pending, WaitPlan, WaitPolicy};

/// epoll tokens.
const TOKEN_LEFT: u64 = 0;
const TOKEN_RIGHT: u64 = 1;
const TOKEN_TIMER: u64 = 2;
const TOKEN_COMMAND: u64 = 3;

/// Scratch space to read (and drop) a frame when the pool is exhausted.
const DISCARD_BUF: usize = 65_536;

/// The direction of the frames read from port `port`: ports are indexed
/// like the directions that leave from them (0 left, 1 right).
fn dir_from(port: usize) -> Dir {
    Dir::ALL[port]
}

/// The port a frame travelling `dir` is written to: the other one.
fn port_towards(dir: Dir) -> usize {
    dir.reverse().index()
}

/// The state the datapath thread owns.
pub(super) struct Driver {
    bridge: Bridge,
    ports: [Box<dyn FramePort>; 2],
    /// The first port failure; it ends the loop.
    failure: Option<DatapathError>,
    cfg: DatapathConfig,
    commands: Receiver<Command>,
    wake: Arc<EventFd>,
    snapshots: SnapshotReader,
    epoll: Epoll,
    timer: TimerFd,
    /// How the loop waits between iterations (`spin_us`, `busy_poll_us`).
    wait: WaitPolicy,
    /// The deadline the timer is armed for (the spin margin not subtracted).
    armed: Option<Instant>,
    /// The deadline the last busy-poll iteration was waiting for: its
    /// lateness is recorded when an iteration finds it passed.
    polled: Option<Instant>,
    /// When a frame was last read or written (busy polling lasts
    /// `busy_poll_us` from then).
    last_frame: Instant,
    clock: MonotonicClock,
    lateness: Histogram<u64>,
    release_lateness: Histogram<u64>,
    wakeups: Wakeups,
    next_publish: Instant,
    pool: PacketPool,
    /// Buffers of `GSO_FRAME_BUF` bytes for whole super-frames.
    gso_pool: PacketPool,
    /// Where offload ports are read into (from `gso_pool`; empty if no port
    /// has offload).
    rx_gso: Vec<u8>,
    /// Per direction: super-frames pass whole (else they are segmented).
    pass_whole: [bool; 2],
    /// Where a frame is read to be dropped when the pool is exhausted.
    discard: Vec<u8>,
    out: Vec<(Dir, crate::packet::Packet)>,
    /// Per direction: frames the link delivered and not yet written (they
    /// stay past one `write_out` only while the pacer spaces out overdue
    /// frames).
    held: [VecDeque<crate::packet::Packet>; 2],
    pacer: ReleasePacer,
    /// When the first held frame may be written.
    release_at: Option<Instant>,
    freed: Vec<Vec<u8>>,
}

impl Driver {
    pub(super) fn new(
        bridge: Bridge,
        ports: [Box<dyn FramePort>; 2],
        cfg: DatapathConfig,
        commands: Receiver<Command>,
        wake: Arc<EventFd>,
        snapshots: SnapshotReader,
    ) -> io::Result<Driver> {
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        for (i, port) in ports.iter().enumerate() {
            epoll.add(
                borrow(port.raw_fd()),
                EpollEvent::new(EpollFlags::EPOLLIN, i as u64),
            )?;
        }
        epoll.add(&timer, EpollEvent::new(EpollFlags::EPOLLIN, TOKEN_TIMER))?;
        epoll.add(
            wake.as_fd(),
            EpollEvent::new(EpollFlags::EPOLLIN, TOKEN_COMMAND),
        )?;
        let lateness = lateness_histogram("wake-up lateness")?;
        let release_lateness = lateness_histogram("release lateness")?;
        let mut gso_pool = PacketPool::new(GSO_FRAME_BUF, cfg.gso_buffers.max(1));
        let rx_gso = if ports.iter().any(|p| p.offload()) {
            gso_pool.get().unwrap_or_default()
        } else {
            Vec::new()
        };
        let mut driver = Driver {
            bridge,
            ports,
            failure: None,
            cfg,
            commands,
            wake,
            snapshots,
            epoll,
            timer,
            wait: WaitPolicy::new(cfg.spin_us, cfg.busy_poll_us),
            armed: None,
            polled: None,
            last_frame: Instant::ZERO,
            clock: MonotonicClock,
            lateness,
            release_lateness,
            wakeups: Wakeups::default(),
            next_publish: Instant::ZERO,
            pool: PacketPool::new(cfg.frame_buf, cfg.pool_buffers),
            gso_pool,
            rx_gso,
            pass_whole: [false; 2],
            discard: vec![0; DISCARD_BUF],
            out: Vec::with_capacity(256),
            held: [VecDeque::with_capacity(256), VecDeque::with_capacity(256)],
            pacer: ReleasePacer::new(cfg.spin_us as u64 * NS_PER_US),
            release_at: None,
            freed: Vec::with_capacity(256),
        };
        driver.refresh_gso();
        Ok(driver)
    }

    /// Decides per direction whether super-frames pass whole: both ports
    /// must carry offload headers and the policy must allow it for the
    /// direction's link, shape and qdisc tree.
    fn refresh_gso(&mut self) {
        let offload = self.ports.iter().all(|p| p.offload());
        let now = self.clock.now();
        for dir in Dir::ALL {
            let path = self.bridge.path(dir);
            self.pass_whole[dir.index()] = offload
                && self.cfg.gso.passes_whole(
                    path.params(),
                    path.shape(),
                    &path.qdisc().dump(now),
                    crate::tc::kinds::BUILTIN,
                );
        }
    }

    /// The thread's body: sets up its scheduling, drops every capability,
    /// then iterates until a shutdown (the final snapshot) or a port
    /// failure.
    pub(super) fn run(&mut self) -> Result<LiveSnapshot, DatapathError> {
        realtime::set_up(&self.cfg);
        // Everything that needed a privilege is done (the ports are open).
        crate::privilege::drop_all()?;
        let mut events = [EpollEvent::empty(); 8];
        // Ports to read this iteration: readable per epoll, or left with
        // frames when the batch limit was hit.
        let mut readable = [true, true];
        loop {
            self.reach_polled_deadline();
            let backlog = self.read_ports(&mut readable);
            let now = self.clock.now();
            self.bridge.poll(now, &mut self.out, &mut self.freed);
            self.write_out(true);
            self.publish_if_due(now);
            let plan = self.wait.plan(now, &self.pending(backlog));
            let timeout = self.begin_wait(plan)?;
            let n = self.wait_events(&mut events, timeout)?;
            self.dispatch(&events[..n], &mut readable);
            if let Some(end) = self.finish() {
                return end;
            }
        }
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

    /// Reads each port marked readable (none once a port failed); a port
    /// that stopped with frames possibly left stays marked. True if any did.
    fn read_ports(&mut self, readable: &mut [bool; 2]) -> bool {
        let mut backlog = false;
        for (i, flag) in readable.iter_mut().enumerate() {
            if *flag && self.failure.is_none() {
                *flag = self.read_port(i);
                backlog |= *flag;
            }
        }
        backlog
    }

    /// Publishes a snapshot if the period is over, and starts the next one.
    fn publish_if_due(&mut self, now: Instant) {
        if now >= self.next_publish {
            self.publish(now);
            self.next_publish = now + self.cfg.publish_interval_ns;
        }
    }

    /// What this iteration leaves for the next one to wait for.
    fn pending(&self, backlog: bool) -> Pending {
        Pending {
            backlog,
            bridge: self.bridge.poll_at(),
            release: self.release_at,
            publish: self.next_publish,
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
            WaitPlan::Sleep { deadline } => {
                self.arm(deadline)?;
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

    /// Handles what epoll reported: a readable port is marked for reading
    /// (a hung-up one fails), the timer finishes its wake-up, the command
    /// doorbell is cleared (the queue is drained in `finish`).
    fn dispatch(&mut self, events: &[EpollEvent], readable: &mut [bool; 2]) {
        if !events.is_empty() {
            self.wakeups.total += 1;
        }
        for ev in events {
            match ev.data() {
                TOKEN_LEFT | TOKEN_RIGHT => {
                    let i = ev.data() as usize;
                    readable[i] = true;
                    self.wakeups.io += 1;
                    // A hung-up socket reads as end-of-file forever. (A
                    // deleted TAP signals EPOLLERR, and its read fails.)
                    if ev.events().contains(EpollFlags::EPOLLHUP) {
                        self.fail(i, "waiting for frames", io::ErrorKind::BrokenPipe.into());
                    }
                }
                TOKEN_TIMER => self.on_timer(),
                TOKEN_COMMAND => {
                    // The counter only wakes us; the queue holds the commands.
                    let _ = self.wake.read();
                }
                _ => {}
            }
        }
    }

    /// Ends the loop if it must, with what `run` returns: the first port
    /// failure, or (after applying the queued commands, a shutdown among
    /// them) the final snapshot.
    fn finish(&mut self) -> Option<Result<LiveSnapshot, DatapathError>> {
        if self.failure.is_some() {
            // Frames still held are written, or counted as lost by the
            // port that failed.
            self.write_out(false);
            self.publish(self.clock.now());
            return self.failure.take().map(Err);
        }
        if self.drain_commands() {
            // Frames the pacer still holds are written now, not lost.
            self.write_out(false);
            let now = self.clock.now();
            let snap = self.snapshot(now);
            self.snapshots.offer(snap.clone());
            return Some(Ok(snap));
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

    /// Arms the timer for `deadline` (`WaitPolicy::wake_at`: minus the spin
    /// margin) unless it already is.
    fn arm(&mut self, deadline: Instant) -> io::Result<()> {
        if self.armed == Some(deadline) {
            return Ok(());
        }
        let wake_at = self.wait.wake_at(deadline);
        let ts = TimeSpec::new(
            (wake_at.nanos() / NS_PER_SEC) as i64,
            (wake_at.nanos() % NS_PER_SEC) as i64,
        );
        self.timer.set(
            Expiration::OneShot(ts),
            TimerSetTimeFlags::TFD_TIMER_ABSTIME,
        )?;
        self.armed = Some(deadline);
        Ok(())
    }

    /// The timer fired: finish with a spin if configured, then record how
    /// late we are.
    fn on_timer(&mut self) {
        // Non-blocking read of the expiry count; EAGAIN only if a re-arm raced.
        let _ = self.timer.wait();
        self.wakeups.timer += 1;
        if let Some(deadline) = self.armed.take() {
            self.spin_until(deadline);
        }
    }

    /// Spins until `deadline` (if it is still ahead), then records how late
    /// the loop reached it.
    fn spin_until(&mut self, deadline: Instant) {
        let mut now = self.clock.now();
        while now < deadline {
            std::hint::spin_loop();
            now = self.clock.now();
        }
        self.reached(deadline, now);
    }

    /// Records how late the loop reached `deadline` (at `now`).
    fn reached(&mut self, deadline: Instant, now: Instant) {
        self.lateness
            .saturating_record(now.saturating_since(deadline).max(1));
    }

    fn snapshot(&self, now: Instant) -> LiveSnapshot {
        LiveSnapshot {
            at: now,
            bridge: self
                .bridge
                .snapshot_listing(now, FlowListing::Top(self.cfg.snapshot_flows)),
            lateness: LatenessSummary::of(&self.lateness),
            release_lateness: LatenessSummary::of(&self.release_lateness),
            wakeups: Wakeups {
                cpu_ns: thread_cpu_ns(),
                ..self.wakeups
            },
            left_port: self.ports[0].counters(),
            right_port: self.ports[1].counters(),
            pool: PoolCounters {
                in_use: (self.pool.in_use() + self.gso_pool.in_use()) as u64,
                refused: self.pool.exhausted() + self.gso_pool.exhausted(),
            },
        }
    }

    fn publish(&self, now: Instant) {
        self.snapshots.offer(self.snapshot(now));
    }
}

/// Borrows a port's descriptor for epoll registration.
fn borrow(fd: RawFd) -> BorrowedFd<'static> {
    // SAFETY: the descriptor belongs to a port the Driver owns for its whole
    // life, and it is only used for epoll_ctl while the Driver exists.
    unsafe { BorrowedFd::borrow_raw(fd) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions_map_to_the_opposite_port() {
        assert_eq!(port_towards(dir_from(0)), 1);
        assert_eq!(port_towards(dir_from(1)), 0);
    }
}
