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
//! any, completed); a super-frame either passes whole (`offload::GsoPolicy`,
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
//!
//! Submodules: `config` (the tuning), `command` (the command queue),
//! `error`, `snapshot` (what is published), `mailbox` (the one-slot
//! snapshot reader), `handle` (the `Datapath` handle that spawns and stops
//! the thread), `realtime` (the thread's scheduling), `wait` (the pure
//! decision of how the loop waits) and `driver` (the thread's state and
//! loop).

mod command;
mod config;
mod driver;
mod error;
mod handle;
mod mailbox;
mod realtime;
mod snapshot;
mod wait;

pub use command::{Command, Commander, LinkChange};
pub use config::{DatapathConfig, DEFAULT_SNAPSHOT_FLOWS, FRAME_OVERHEAD, GSO_FRAME_BUF};
pub use error::{DatapathError, PORT_NAMES};
pub use handle::Datapath;
pub use mailbox::SnapshotReader;
pub use snapshot::{LatenessSummary, LiveSnapshot, PoolCounters, Wakeups};
