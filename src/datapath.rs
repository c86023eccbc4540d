//! The live driver: one plain thread that owns the `Bridge` and both ports.
//!
//! It sleeps in `epoll_wait` over the two port descriptors, an absolute
//! CLOCK_MONOTONIC timerfd armed at the bridge's next deadline
//! (`Bridge::poll_at`), and an eventfd that signals the bounded command queue.
//! Timer slack is set to 1 ns; optionally the last `spin_us` before a deadline
//! are spun instead of slept: the timer is armed `spin_us` early, and a
//! deadline already that close is spun to without arming it at all
//! (`timerfd_settime` costs a VM exit on a virtual machine, about a fifth of
//! the thread's time at 1.2 Gbit/s). With `busy_poll_us` the loop does not
//! sleep at all for that long after the last frame read or written (and
//! then never runs under SCHED_FIFO, which would starve the core's other
//! processes). Each deadline reached by the timer, by spinning or while
//! polling records its lateness (time reached minus deadline) in an HDR
//! histogram; each frame written records its release lateness (write time
//! minus the link's logical delivery time) in another.
//!
//! One loop iteration: drain commands, read up to `batch` frames from each
//! readable port into buffers of the bounded `PacketPool` (when it is
//! exhausted the frame is read into a scratch buffer and counted as a
//! `PoolExhausted` drop), hand each to the bridge stamped with the
//! `MonotonicClock` time it was read (a batch stops early once the bridge
//! has a departure due, so reading never delays a write), poll the bridge,
//! write what it releases to the opposite port (a frame that travels
//! `Dir::LeftToRight` is written to the right port; with `spin_us`,
//! frames that fell due while the loop was late are spaced out by the
//! `release::ReleasePacer`, and the first one held sets a deadline), return
//! every sent or dropped buffer to the pool, then re-arm the timer.
//!
//! Ports with offload (`FramePort::offload`, TAPs with `IFF_VNET_HDR`) are
//! read into one 64 KB buffer, since a read may return a GSO super-frame.
//! A plain frame is copied into a pool buffer (its partial checksum, if
//! any, completed); a super-frame either passes whole (`gso::GsoPolicy`,
//! decided per direction at start and after every command; the read buffer
//! itself goes to the bridge and a fresh one from the bounded pool of 64 KB
//! buffers takes its place) or is segmented into pool buffers. A frame
//! released by the bridge is written with its offload header, so a whole
//! super-frame reaches the receiving TAP in one `writev`. Malformed offload
//! frames are `BadOffload` drops; conservation units are in `gso`.
//!
//! The thread drops every capability as it starts (`privilege::drop_all`,
//! after switching to SCHED_FIFO if asked): the ports are open descriptors.
//! A port that fails (a read error, a write error saying its device is gone
//! such as `EBADFD` from a deleted TAP, or a hang-up) ends the thread with
//! `DatapathError::PortFailed` naming the port; a write refused by a device
//! that is merely down (`EIO`) only loses that frame, counted by the port.
//!
//! Readers never share a lock with the hot path: at a fixed period the thread
//! builds a bounded `LiveSnapshot` (each flow-queueing qdisc lists its
//! `snapshot_flows` flows with the most backlog and sums up the rest, so the
//! cost does not depend on how many flows there are) and offers it to a one-slot `SnapshotReader` with
//! `try_lock`. If a reader happens to hold the slot (only for as long as it
//! takes to clone an `Arc`), this period's snapshot is skipped rather than
//! waited for. Any number of readers (control socket, TUI) can share the slot.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex, TryLockError};
use std::thread::JoinHandle;

use hdrhistogram::Histogram;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

use crate::bridge::{Bridge, BridgeSnapshot};
use crate::dir::Dir;
use crate::link::LinkParams;
use crate::packet::gso::{self, GsoPolicy, Segmenter, VnetHdr};
use crate::packet::pool::PacketPool;
use crate::packet::DropReason;
use crate::port::{FramePort, PortCounters};
use crate::privilege::PrivilegeError;
use crate::qdisc::FlowListing;
use crate::release::ReleasePacer;
use crate::tc::{Object, TcCommand, Verb};
use crate::time::{Clock, Instant, MonotonicClock, NS_PER_MS, NS_PER_SEC, NS_PER_US};

/// epoll tokens.
const TOKEN_LEFT: u64 = 0;
const TOKEN_RIGHT: u64 = 1;
const TOKEN_TIMER: u64 = 2;
const TOKEN_COMMAND: u64 = 3;

/// Ethernet header plus two VLAN tags: the most a frame exceeds the MTU by.
pub const FRAME_OVERHEAD: usize = 14 + 8;

/// Scratch space to read (and drop) a frame when the pool is exhausted.
const DISCARD_BUF: usize = 65_536;

/// Size of the buffers offload ports are read into: the largest GSO
/// super-frame a TAP hands over (64 KB, `gso_max_size`) and some slack, so
/// that a read filling the buffer is known to be cut short.
pub const GSO_FRAME_BUF: usize = 65_536 + 64;

/// Default of `DatapathConfig::snapshot_flows`.
pub const DEFAULT_SNAPSHOT_FLOWS: usize = 64;

/// Depth of the command queue.
const COMMAND_QUEUE: usize = 16;

/// Tuning of the datapath thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DatapathConfig {
    /// Spin (instead of sleeping) for this long before each deadline; 0 = never.
    pub spin_us: u32,
    /// Poll the ports without sleeping for this long after the last frame
    /// read or written; 0 = never.
    pub busy_poll_us: u32,
    /// Most frames read from one port per loop iteration.
    pub batch: usize,
    /// How often a snapshot is published, ns.
    pub publish_interval_ns: u64,
    /// Flow queues listed per flow-queueing qdisc in a published snapshot:
    /// the ones with the most backlog; the others are summed up
    /// (`QdiscDump::other_flows`). Bounds the cost of a snapshot.
    pub snapshot_flows: usize,
    /// Size of each frame buffer: the MTU plus `FRAME_OVERHEAD`.
    pub frame_buf: usize,
    /// Most frame buffers in existence (the pool's hard cap).
    pub pool_buffers: usize,
    /// Run the thread under SCHED_FIFO at this priority (1..=99); None keeps
    /// the normal scheduler. On a busy machine this is what keeps wake-ups
    /// on time (see BENCHMARKS.md).
    pub realtime_priority: Option<u8>,
    /// Which directions pass GSO super-frames whole (offload ports only).
    pub gso: GsoPolicy,
    /// Most `GSO_FRAME_BUF` buffers in existence (whole super-frames in the
    /// link, plus the read buffer); when they run out super-frames are
    /// segmented instead.
    pub gso_buffers: usize,
}

impl Default for DatapathConfig {
    fn default() -> Self {
        DatapathConfig {
            spin_us: 0,
            busy_poll_us: 0,
            batch: 64,
            publish_interval_ns: 100 * NS_PER_MS,
            snapshot_flows: DEFAULT_SNAPSHOT_FLOWS,
            frame_buf: 1500 + FRAME_OVERHEAD,
            pool_buffers: 65_536,
            realtime_priority: None,
            gso: GsoPolicy::default(),
            gso_buffers: 1024,
        }
    }
}

/// Requests to the running datapath, applied at the top of a loop
/// iteration at the current time.
#[derive(Debug)]
pub enum Command {
    /// Publish a final snapshot and return.
    Shutdown,
    /// Replace the link parameters of one direction (rate, delay, ring, BQL,
    /// coalescing...); frames in flight keep their schedule where the link
    /// allows it (see `Path::set_params`).
    SetLink { dir: Dir, params: LinkParams },
    /// `set` arguments (`left.rate=10mbit`, ethtool lines, shape keys
    /// such as `left.loss=1%`; see `control::set`), parsed, applied to the
    /// current parameters and shapes of both directions, all or nothing;
    /// the reply is the effective configuration or the error naming the
    /// argument.
    EditLink {
        plan: crate::control::set::SetPlan,
        reply: SyncSender<Result<crate::control::set::Effective, String>>,
    },
    /// One tc command line (`tc qdisc|class|filter ... dev left|right ...`)
    /// for the qdisc tree of the direction its device names; the reply is
    /// its output (`show`) or its error.
    Tc {
        line: String,
        reply: SyncSender<Result<String, String>>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum DatapathError {
    #[error("the datapath command queue is full ({COMMAND_QUEUE} pending): retry")]
    QueueFull,
    #[error("the datapath thread has stopped")]
    Stopped,
    #[error("datapath thread panicked: {0}")]
    Panicked(String),
    #[error("datapath I/O: {0}")]
    Io(#[from] io::Error),
    /// A port stopped working; the datapath cannot go on without it.
    #[error("the {port} port failed while {op}: {source}{}", port_failure_hint(.source))]
    PortFailed {
        /// `left` or `right`.
        port: &'static str,
        /// What the datapath was doing: reading, writing, waiting.
        op: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("the datapath thread could not drop its capabilities: {0}")]
    Privilege(#[from] PrivilegeError),
}

/// Port names by index, as in the configuration.
pub const PORT_NAMES: [&str; 2] = ["left", "right"];

/// A write error that means the port's device or peer is gone for good
/// (rather than down for a while, or refusing one frame).
fn port_gone(e: &io::Error) -> bool {
    use nix::errno::Errno;
    e.raw_os_error().is_some_and(|n| {
        [
            Errno::EBADFD,
            Errno::ENODEV,
            Errno::ENXIO,
            Errno::EPIPE,
            Errno::ECONNRESET,
            Errno::ENOTCONN,
        ]
        .contains(&Errno::from_raw(n))
    })
}

/// What a port error most likely means, for the message.
fn port_failure_hint(e: &io::Error) -> &'static str {
    use nix::errno::Errno;
    match e.raw_os_error().map(Errno::from_raw) {
        Some(Errno::EBADFD) | Some(Errno::ENODEV) | Some(Errno::ENXIO) => {
            " (its device is gone: the TAP was deleted, or its network namespace removed)"
        }
        Some(Errno::EPIPE) | Some(Errno::ECONNRESET) | Some(Errno::ENOTCONN) => {
            " (the other end closed it)"
        }
        _ if e.kind() == io::ErrorKind::BrokenPipe => " (the other end closed it)",
        _ => "",
    }
}

/// A lateness histogram summed up, ns: wake-up lateness (time woken by
/// the timer minus the deadline) or release lateness (time a frame was
/// written minus the time the link delivered it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LatenessSummary {
    pub samples: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl LatenessSummary {
    fn of(h: &Histogram<u64>) -> LatenessSummary {
        LatenessSummary {
            samples: h.len(),
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }
}

/// A lateness histogram: 1 ns to 10 s, three significant digits.
fn lateness_histogram(what: &str) -> io::Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, 10 * NS_PER_SEC, 3)
        .map_err(|e| io::Error::other(format!("{what} histogram: {e}")))
}

/// How often the thread woke, and why, and the CPU time it used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Wakeups {
    pub total: u64,
    /// Woken by the deadline timer.
    pub timer: u64,
    /// Woken by a readable port.
    pub io: u64,
    /// Deadlines closer than `spin_us` when the loop went idle, met by
    /// spinning without the timer (their lateness is recorded too).
    pub spun: u64,
    /// Loop iterations that polled instead of sleeping (`busy_poll_us`).
    pub polls: u64,
    /// CPU time the datapath thread has used so far
    /// (CLOCK_THREAD_CPUTIME_ID, read by the thread itself at the
    /// snapshot), ns; 0 if the clock cannot be read.
    pub cpu_ns: u64,
}

/// The frame buffer pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PoolCounters {
    pub in_use: u64,
    /// Buffer requests refused at the cap (the frames lost to it are the
    /// `pool_exhausted` drops of each direction).
    pub refused: u64,
}

/// What the datapath publishes for readers.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LiveSnapshot {
    /// CLOCK_MONOTONIC time of the snapshot, ns.
    pub at: Instant,
    pub bridge: BridgeSnapshot,
    pub lateness: LatenessSummary,
    /// How late frames were written: the write's time minus the logical
    /// time the link delivered the frame (`PacketMeta::delivered`). This
    /// is the emulation's own timing error as the receiving side sees it.
    pub release_lateness: LatenessSummary,
    pub wakeups: Wakeups,
    /// Port I/O counters (reads, writes, full-device drops, errors).
    pub left_port: PortCounters,
    pub right_port: PortCounters,
    pub pool: PoolCounters,
}

/// The one-slot mailbox snapshots are published into.
#[derive(Clone, Debug, Default)]
pub struct SnapshotReader {
    slot: Arc<Mutex<Option<Arc<LiveSnapshot>>>>,
}

impl SnapshotReader {
    /// The most recent snapshot, if one was published yet.
    pub fn latest(&self) -> Option<Arc<LiveSnapshot>> {
        match self.slot.lock() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Offers a snapshot without ever waiting: skipped if a reader holds the
    /// slot right now.
    pub(crate) fn offer(&self, snap: LiveSnapshot) {
        match self.slot.try_lock() {
            Ok(mut g) => *g = Some(Arc::new(snap)),
            Err(TryLockError::Poisoned(p)) => *p.into_inner() = Some(Arc::new(snap)),
            Err(TryLockError::WouldBlock) => {}
        }
    }
}

/// A cloneable way to queue commands for the datapath (for threads other
/// than the one holding the `Datapath`, e.g. the TUI).
#[derive(Clone)]
pub struct Commander {
    commands: SyncSender<Command>,
    wake: Arc<EventFd>,
}

impl Commander {
    /// Queues a command without blocking.
    pub fn send(&self, cmd: Command) -> Result<(), DatapathError> {
        match self.commands.try_send(cmd) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(DatapathError::QueueFull),
            Err(TrySendError::Disconnected(_)) => return Err(DatapathError::Stopped),
        }
        self.wake.write(1).map_err(io::Error::from)?;
        Ok(())
    }
}

/// Handle to the running datapath thread. Dropping it shuts the thread down.
pub struct Datapath {
    commander: Commander,
    thread: Option<JoinHandle<Result<LiveSnapshot, DatapathError>>>,
    snapshots: SnapshotReader,
}

impl Datapath {
    /// Starts the thread. `left` and `right` are the ports on either side of
    /// the bridge.
    pub fn spawn(
        bridge: Bridge,
        left: Box<dyn FramePort>,
        right: Box<dyn FramePort>,
        cfg: DatapathConfig,
    ) -> Result<Datapath, DatapathError> {
        let (tx, rx) = sync_channel(COMMAND_QUEUE);
        let wake = Arc::new(
            EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)
                .map_err(io::Error::from)?,
        );
        let snapshots = SnapshotReader::default();
        let mut driver = Driver::new(
            bridge,
            [left, right],
            cfg,
            rx,
            wake.clone(),
            snapshots.clone(),
        )?;
        let thread = std::thread::Builder::new()
            .name("bloatbox-datapath".into())
            .spawn(move || driver.run())?;
        Ok(Datapath {
            commander: Commander { commands: tx, wake },
            thread: Some(thread),
            snapshots,
        })
    }

    pub fn snapshots(&self) -> SnapshotReader {
        self.snapshots.clone()
    }

    /// Queues a command without blocking.
    pub fn command(&self, cmd: Command) -> Result<(), DatapathError> {
        self.commander.send(cmd)
    }

    pub fn commander(&self) -> Commander {
        self.commander.clone()
    }

    /// The thread has returned (after a shutdown, an error or a panic).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Stops the thread and returns its final snapshot.
    pub fn shutdown(mut self) -> Result<LiveSnapshot, DatapathError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<LiveSnapshot, DatapathError> {
        let thread = self.thread.take().ok_or(DatapathError::Stopped)?;
        // Blocks only while the queue is full (the thread drains it at least
        // once per publish period). If the thread already stopped, the queue
        // is gone and joining returns its result.
        if self.commander.commands.send(Command::Shutdown).is_ok() {
            let _ = self.commander.wake.write(1);
        }
        match thread.join() {
            Ok(result) => result,
            Err(panic) => Err(DatapathError::Panicked(
                panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown payload".into()),
            )),
        }
    }
}

impl Drop for Datapath {
    fn drop(&mut self) {
        if self.thread.is_some() {
            if let Err(e) = self.stop() {
                tracing::warn!("datapath shutdown: {e}");
            }
        }
    }
}

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
struct Driver {
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
    fn new(
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
                && self
                    .cfg
                    .gso
                    .passes_whole(path.params(), path.shape(), &path.qdisc().dump(now));
        }
    }

    fn run(&mut self) -> Result<LiveSnapshot, DatapathError> {
        if let Err(e) = nix::sys::prctl::set_timerslack(1) {
            tracing::warn!("could not set timer slack to 1 ns: {e}");
        }
        match (self.cfg.realtime_priority, self.cfg.busy_poll_us) {
            (Some(prio), 0) => match set_fifo_priority(prio) {
                Ok(()) => {
                    if let Some(warning) = rt_throttle_warning(self.cfg.spin_us, rt_budget_us()) {
                        tracing::warn!("{warning}");
                    }
                }
                Err(e) => {
                    tracing::warn!("could not switch the datapath to SCHED_FIFO {prio}: {e}")
                }
            },
            (Some(prio), us) => tracing::warn!(
                "the datapath stays at normal priority, not SCHED_FIFO {prio}: with \
                 daemon.busy_poll_us = {us} it polls without sleeping, and under SCHED_FIFO no \
                 ordinary process (the traffic's own included) would run on its core for {us} µs \
                 after each frame"
            ),
            (None, _) => {}
        }
        // Everything that needed a privilege is done (the ports are open).
        crate::privilege::drop_all()?;
        let mut events = [EpollEvent::empty(); 8];
        // Ports to read this iteration: readable per epoll, or left with
        // frames when the batch limit was hit.
        let mut readable = [true, true];
        loop {
            if let Some(deadline) = self.polled {
                let now = self.clock.now();
                if now >= deadline {
                    self.polled = None;
                    self.reached(deadline, now);
                }
            }
            let mut backlog = false;
            for (i, flag) in readable.iter_mut().enumerate() {
                if *flag && self.failure.is_none() {
                    *flag = self.read_port(i);
                    backlog |= *flag;
                }
            }
            let now = self.clock.now();
            self.bridge.poll(now, &mut self.out, &mut self.freed);
            self.write_out(true);
            if now >= self.next_publish {
                self.publish(now);
                self.next_publish = now + self.cfg.publish_interval_ns;
            }
            let deadline = crate::time::earliest(self.bridge.poll_at(), self.release_at)
                .map_or(self.next_publish, |d| d.min(self.next_publish));
            let spin_from = deadline.saturating_sub(self.cfg.spin_us as u64 * NS_PER_US);
            let polling = self.cfg.busy_poll_us > 0
                && now < self.last_frame + self.cfg.busy_poll_us as u64 * NS_PER_US;
            let timeout = if backlog || deadline <= now {
                EpollTimeout::ZERO
            } else if polling {
                // Busy polling: look again at once, the deadline included.
                self.wakeups.polls += 1;
                self.polled = Some(deadline);
                EpollTimeout::ZERO
            } else if spin_from <= now {
                // Closer than the spin margin: spin to it without the timer
                // (re-arming a timerfd costs a VM exit on a virtual machine),
                // then look for I/O without blocking.
                self.wakeups.spun += 1;
                self.spin_until(deadline);
                EpollTimeout::ZERO
            } else {
                self.arm(deadline)?;
                EpollTimeout::NONE
            };
            let n = match self.epoll.wait(&mut events, timeout) {
                Ok(n) => n,
                Err(nix::errno::Errno::EINTR) => 0,
                Err(e) => return Err(io::Error::from(e).into()),
            };
            if n > 0 {
                self.wakeups.total += 1;
            }
            for ev in &events[..n] {
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
            if self.failure.is_some() {
                // Frames still held are written, or counted as lost by the
                // port that failed.
                self.write_out(false);
                self.publish(self.clock.now());
                return Err(self.failure.take().expect("checked above"));
            }
            if self.drain_commands() {
                // Frames the pacer still holds are written now, not lost.
                self.write_out(false);
                let now = self.clock.now();
                let snap = self.snapshot(now);
                self.snapshots.offer(snap.clone());
                return Ok(snap);
            }
        }
    }

    /// Reads up to `batch` frames from port `i` into the bridge, each
    /// stamped with the time it was read. Returns true if it stopped with
    /// frames possibly still waiting: at the batch limit, or early because
    /// the bridge has a departure due (see `read_time`).
    fn read_port(&mut self, i: usize) -> bool {
        if self.ports[i].offload() {
            return self.read_offload_port(i);
        }
        for k in 0..self.cfg.batch {
            let Some(now) = self.read_time(k) else {
                return true;
            };
            let Some(mut buf) = self.pool.get() else {
                match self.ports[i].recv(&mut self.discard) {
                    Ok(Some(n)) => {
                        self.last_frame = now;
                        let frame = &self.discard[..n.min(self.discard.len())];
                        self.bridge
                            .reject(dir_from(i), frame, DropReason::PoolExhausted, now);
                        continue;
                    }
                    Ok(None) => return false,
                    Err(e) => {
                        self.fail(i, "reading frames", e);
                        return false;
                    }
                }
            };
            match self.ports[i].recv(&mut buf) {
                Ok(Some(n)) => {
                    self.last_frame = now;
                    buf.truncate(n);
                    self.bridge.ingress(dir_from(i), buf, now);
                }
                Ok(None) => {
                    self.pool.put(buf);
                    return false;
                }
                Err(e) => {
                    self.pool.put(buf);
                    self.fail(i, "reading frames", e);
                    return false;
                }
            }
        }
        true
    }

    /// `read_port` for a port with offload headers.
    fn read_offload_port(&mut self, i: usize) -> bool {
        let dir = dir_from(i);
        for k in 0..self.cfg.batch {
            let Some(now) = self.read_time(k) else {
                return true;
            };
            match self.ports[i].recv_offload(&mut self.rx_gso) {
                Ok(Some((n, hdr))) => {
                    self.last_frame = now;
                    self.ingress_offloaded(dir, n, hdr, now);
                }
                Ok(None) => return false,
                // A read shorter than its header: that frame is lost.
                Err(e) if e.kind() == io::ErrorKind::InvalidData => self
                    .bridge
                    .path_mut(dir)
                    .count_rejected(0, DropReason::BadOffload),
                Err(e) => {
                    self.fail(i, "reading frames", e);
                    return false;
                }
            }
        }
        true
    }

    /// The arrival time for the `k`-th frame of a read batch, or `None` if
    /// the bridge (or the release pacer) has something due by now: reading
    /// then stops so that the departure is written on time rather than
    /// after the rest of the batch (which, at 1.2 Gbit/s, would send frames
    /// out back to back). The first frame of a batch is always read, so a
    /// deadline that stays due cannot starve the ports.
    fn read_time(&self, k: usize) -> Option<Instant> {
        let now = self.clock.now();
        match crate::time::earliest(self.bridge.poll_at(), self.release_at) {
            Some(due) if k > 0 && due <= now => None,
            _ => Some(now),
        }
    }

    /// Hands the `n`-byte frame in `rx_gso` to the bridge: copied if plain,
    /// whole or segmented if a super-frame.
    fn ingress_offloaded(&mut self, dir: Dir, n: usize, hdr: VnetHdr, now: Instant) {
        let len = u32::try_from(n).unwrap_or(u32::MAX);
        let reject = |bridge: &mut Bridge, len: u32, reason| {
            bridge.path_mut(dir).count_rejected(len, reason)
        };
        if n >= self.rx_gso.len() {
            // Filled the buffer: cut short, so its headers cannot be trusted.
            return reject(&mut self.bridge, len, DropReason::BadOffload);
        }
        if !hdr.is_gso() {
            if n > self.pool.buf_size() {
                return reject(&mut self.bridge, len, DropReason::Oversize);
            }
            let Some(mut buf) = self.pool.get() else {
                return reject(&mut self.bridge, len, DropReason::PoolExhausted);
            };
            buf.clear();
            buf.extend_from_slice(&self.rx_gso[..n]);
            if gso::complete_checksum(&mut buf, &hdr).is_err() {
                self.pool.put(buf);
                return reject(&mut self.bridge, len, DropReason::BadOffload);
            }
            return self.bridge.ingress(dir, buf, now);
        }
        let mut seg = match Segmenter::new(&self.rx_gso[..n], &hdr) {
            Ok(seg) => seg,
            Err(_) => return reject(&mut self.bridge, len, DropReason::BadOffload),
        };
        if self.pass_whole[dir.index()] {
            let (wire, seg_len) = (seg.wire_len(), seg.max_segment_len());
            if let Some(fresh) = self.gso_pool.get() {
                let mut frame = std::mem::replace(&mut self.rx_gso, fresh);
                frame.truncate(n);
                let wire = u32::try_from(wire).unwrap_or(u32::MAX);
                return self
                    .bridge
                    .ingress_whole(dir, frame, hdr, wire, seg_len, now);
            }
            // No 64 KB buffer left: segment instead.
        }
        // Segments larger than a pool buffer could never pass the MTU.
        let too_big = seg.max_segment_len() > self.pool.buf_size();
        loop {
            let buf = if too_big { None } else { self.pool.get() };
            match buf {
                Some(mut buf) => {
                    if !seg.next_into(&mut buf) {
                        self.pool.put(buf);
                        return;
                    }
                    self.bridge.ingress(dir, buf, now);
                }
                None => {
                    let Some(seg_len) = seg.skip() else { return };
                    let reason = if too_big {
                        DropReason::Oversize
                    } else {
                        DropReason::PoolExhausted
                    };
                    reject(&mut self.bridge, seg_len as u32, reason);
                }
            }
        }
    }

    /// Returns a buffer to the pool it came from (by its size).
    fn recycle(pool: &mut PacketPool, gso_pool: &mut PacketPool, buf: Vec<u8>) {
        if buf.capacity() >= gso_pool.buf_size() {
            gso_pool.put(buf);
        } else {
            pool.put(buf);
        }
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

    /// Writes what the bridge released, each frame to the port opposite its
    /// direction in the order the link delivered it, and returns every
    /// buffer to the pool. With `pace`, an overdue frame waits as long as
    /// the `ReleasePacer` says (held with the rest of its direction;
    /// `release_at` says until when); without, everything held is written
    /// now. A write error is counted by the port and loses that frame; one
    /// saying the port is gone ends the loop (the frames after it are still
    /// written: to the other port, or counted as errors by the gone one).
    fn write_out(&mut self, pace: bool) {
        for (dir, pkt) in self.out.drain(..) {
            self.held[dir.index()].push_back(pkt);
        }
        let mut gone = None;
        self.release_at = None;
        for dir in Dir::ALL {
            let held = &mut self.held[dir.index()];
            while let Some(delivered) = held.front().map(|p| p.meta.delivered) {
                let now = self.clock.now();
                if pace {
                    let at = self.pacer.earliest(dir, delivered, now);
                    if at > now {
                        self.release_at = crate::time::earliest(self.release_at, Some(at));
                        break;
                    }
                }
                let Some(pkt) = held.pop_front() else { break };
                self.last_frame = now;
                self.pacer.written(dir, delivered, now);
                self.release_lateness
                    .saturating_record(now.saturating_since(delivered).max(1));
                let to = port_towards(dir);
                if let Err(e) = self.ports[to].send_offload(&pkt.data, &pkt.meta.offload) {
                    if port_gone(&e) && gone.is_none() {
                        gone = Some((to, e));
                    }
                }
                Self::recycle(&mut self.pool, &mut self.gso_pool, pkt.data);
            }
        }
        if let Some((to, e)) = gone {
            self.fail(to, "writing frames", e);
        }
        for buf in self.freed.drain(..) {
            Self::recycle(&mut self.pool, &mut self.gso_pool, buf);
        }
    }

    /// Arms the timer for `deadline` (minus the spin margin) unless it
    /// already is.
    fn arm(&mut self, deadline: Instant) -> io::Result<()> {
        if self.armed == Some(deadline) {
            return Ok(());
        }
        let wake_at = deadline.saturating_sub(self.cfg.spin_us as u64 * NS_PER_US);
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

    /// Applies every queued command; true if the thread must stop.
    fn drain_commands(&mut self) -> bool {
        loop {
            match self.commands.try_recv() {
                Ok(Command::Shutdown) => return true,
                Ok(Command::SetLink { dir, params }) => {
                    let now = self.clock.now();
                    self.bridge.path_mut(dir).set_params(params, now);
                    self.refresh_gso();
                }
                Ok(Command::EditLink { plan, reply }) => {
                    let now = self.clock.now();
                    let _ = reply.try_send(plan.apply_to(&mut self.bridge, now));
                    self.refresh_gso();
                }
                Ok(Command::Tc { line, reply }) => {
                    let now = self.clock.now();
                    // The asker may have given up waiting: nothing to do then.
                    let _ = reply.try_send(self.apply_tc(&line, now));
                    self.refresh_gso();
                }
                Err(TryRecvError::Empty) => return false,
                // The handle is gone: nobody can stop us later, so stop now.
                Err(TryRecvError::Disconnected) => return true,
            }
        }
    }

    /// Runs one tc line on the tree of the direction it names; `tc qdisc
    /// show` without a device lists both, each line naming its device.
    fn apply_tc(&mut self, line: &str, now: Instant) -> Result<String, String> {
        let cmd = TcCommand::parse(line).map_err(|e| e.0)?;
        let Some(dir) = cmd.dev else {
            if cmd.verb == Verb::Show && cmd.object == Object::Qdisc {
                return self.show_both(&cmd, now);
            }
            return Err(format!("{line:?}: name a device: dev left or dev right"));
        };
        self.bridge
            .path_mut(dir)
            .edit_qdisc(now, |qdisc, t, drops| match qdisc.as_tree() {
                Some(tree) => tree
                    .apply(&cmd, t, drops)
                    .map(Option::unwrap_or_default)
                    .map_err(|e| e.0),
                None => Err("this direction's qdisc was not built as a tc tree".to_string()),
            })
    }

    /// A `show` over both devices.
    fn show_both(&mut self, cmd: &TcCommand, now: Instant) -> Result<String, String> {
        let mut dumps = Vec::new();
        for dir in Dir::ALL {
            let dump = self.bridge.path_mut(dir).edit_qdisc(now, |qdisc, t, _| {
                qdisc
                    .as_tree()
                    .map(|tree| (crate::qdisc::Qdisc::dump(tree, t), tree.dev().tx_queues))
            });
            dumps.push((
                dir,
                dump.ok_or("this direction's qdisc was not built as a tc tree")?,
            ));
        }
        let devs: Vec<_> = dumps
            .iter()
            .map(|(dir, (root, tx_queues))| crate::tc::show::DevDump {
                dev: *dir,
                root,
                tx_queues: *tx_queues,
            })
            .collect();
        crate::tc::show::render(cmd, &devs).map_err(|e| e.0)
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

/// CPU time of the calling thread, ns (0 if the clock cannot be read).
fn thread_cpu_ns() -> u64 {
    use nix::time::{clock_gettime, ClockId};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).map_or(0, |t| {
        (t.tv_sec() as u64).saturating_mul(NS_PER_SEC) + t.tv_nsec() as u64
    })
}

/// The kernel's real-time budget, `(sched_rt_runtime_us,
/// sched_rt_period_us)`, or None if it cannot be read.
fn rt_budget_us() -> Option<(i64, i64)> {
    let read = |name: &str| -> Option<i64> {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some((read("sched_rt_runtime_us")?, read("sched_rt_period_us")?))
}

/// What to tell a user whose datapath spins (`spin_us`) under SCHED_FIFO
/// while the kernel limits real-time threads to `runtime` µs of every
/// `period` (`budget_us`): wherever departures are closer than the spin
/// margin the thread never sleeps, and the kernel then stops it for the
/// rest of each period (50 ms a second by default). None if it does not
/// spin, or the budget is unlimited (-1) or unknown.
fn rt_throttle_warning(spin_us: u32, budget_us: Option<(i64, i64)>) -> Option<String> {
    let (runtime, period) = budget_us?;
    if spin_us == 0 || runtime < 0 || runtime >= period {
        return None;
    }
    Some(format!(
        "the datapath spins (daemon.spin_us = {spin_us}) under SCHED_FIFO, and the kernel lets \
         real-time threads run only {runtime} µs of every {period} µs \
         (kernel.sched_rt_runtime_us): where departures are closer than {spin_us} µs the thread \
         never sleeps and will be stopped for {} ms every {} ms. On a machine dedicated to \
         bloatbox, `sysctl kernel.sched_rt_runtime_us=-1` lifts the limit (bloatbox does not \
         change it)",
        (period - runtime) / 1000,
        period / 1000
    ))
}

/// Puts the calling thread under SCHED_FIFO at `prio`.
fn set_fifo_priority(prio: u8) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: i32::from(prio),
    };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
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
    fn only_errors_saying_the_port_is_gone_end_the_loop_on_write() {
        use nix::errno::Errno;
        let err = |e: Errno| io::Error::from_raw_os_error(e as i32);
        for gone in [
            Errno::EBADFD,
            Errno::ENODEV,
            Errno::EPIPE,
            Errno::ECONNRESET,
        ] {
            assert!(port_gone(&err(gone)), "{gone}");
        }
        // A TAP that is down refuses writes with EIO; a bad frame, EINVAL.
        for transient in [Errno::EIO, Errno::EINVAL, Errno::EMSGSIZE] {
            assert!(!port_gone(&err(transient)), "{transient}");
        }
        let failed = DatapathError::PortFailed {
            port: "right",
            op: "reading frames",
            source: err(Errno::EBADFD),
        };
        let msg = failed.to_string();
        assert!(
            msg.starts_with("the right port failed while reading frames"),
            "{msg}"
        );
        assert!(msg.contains("the TAP was deleted"), "{msg}");
        let closed = DatapathError::PortFailed {
            port: "left",
            op: "waiting for frames",
            source: io::ErrorKind::BrokenPipe.into(),
        };
        assert!(closed.to_string().contains("the other end closed it"));
    }

    #[test]
    fn a_spinning_realtime_datapath_is_warned_of_the_kernels_throttling() {
        let default_budget = Some((950_000, 1_000_000));
        let w = rt_throttle_warning(50, default_budget).expect("a warning");
        assert!(w.contains("daemon.spin_us = 50"), "{w}");
        assert!(w.contains("stopped for 50 ms every 1000 ms"), "{w}");
        assert!(w.contains("sysctl kernel.sched_rt_runtime_us=-1"), "{w}");
        // Not spinning, no limit, a limit as long as the period, unknown.
        assert_eq!(rt_throttle_warning(0, default_budget), None);
        assert_eq!(rt_throttle_warning(50, Some((-1, 1_000_000))), None);
        assert_eq!(rt_throttle_warning(50, Some((1_000_000, 1_000_000))), None);
        assert_eq!(rt_throttle_warning(50, None), None);
    }

    #[test]
    fn directions_map_to_the_opposite_port() {
        assert_eq!(port_towards(dir_from(0)), 1);
        assert_eq!(port_towards(dir_from(1)), 0);
    }

    fn idle_bridge() -> Bridge {
        use crate::link::{LinkParams, Path};
        use crate::qdisc::{pfifo_fast::PfifoFast, QdiscCtx};
        let path = || {
            Path::new(
                LinkParams::default(),
                Box::new(PfifoFast::new(QdiscCtx::default())),
            )
        };
        Bridge::new(path(), path())
    }

    #[test]
    fn snapshot_slot_skips_instead_of_waiting() {
        let reader = SnapshotReader::default();
        assert!(reader.latest().is_none());
        let held = reader.slot.lock().unwrap();
        // With the slot held, offering must return at once (and skip).
        let snap = LiveSnapshot {
            at: Instant::from_millis(1),
            bridge: idle_bridge().snapshot(Instant::from_millis(1)),
            lateness: LatenessSummary::default(),
            release_lateness: LatenessSummary::default(),
            wakeups: Wakeups::default(),
            left_port: PortCounters::default(),
            right_port: PortCounters::default(),
            pool: PoolCounters::default(),
        };
        reader.offer(snap.clone());
        drop(held);
        assert!(reader.latest().is_none());
        reader.offer(snap);
        assert_eq!(reader.latest().unwrap().at, Instant::from_millis(1));
    }
}
