//! The live driver: one plain thread per direction of the link. The
//! left→right thread owns that direction's `Lane` of the bridge (qdisc
//! tree, TX ring with BQL, serializer, delay line, RX coalescing), reads
//! the left port and writes the right one; the right→left thread the
//! reverse. The two share nothing mutable: each port is split into a read
//! half and a write half on `dup`ed descriptors (`FramePort::split`), each
//! thread has its own buffer pools, timerfd, epoll set, wake-up policy,
//! lateness histograms and release pacer. Commands reach the direction they
//! name as typed requests (a tc line is read and its answer printed on the
//! caller's thread, by the `Commander`); readers merge the two directions'
//! snapshots.
//!
//! Each thread sleeps in `epoll_wait` over its read port, an absolute
//! CLOCK_MONOTONIC timerfd armed at its lane's next deadline (the
//! earliest time it can hand out a frame, `Lane::deliver_at`: events
//! inside the link that deliver nothing, such as an idle frame's
//! departure, are run by that poll), and an eventfd that signals its
//! bounded command queue. Timer slack is set to 1 ns, and the last stretch before a
//! frame's deadline is spun instead of slept: by default as long as the
//! timer has been firing late (its p99, learned, capped), while a budget of
//! `spin_budget_pct` of a core lasts (`wait::AdaptiveSpin`); with `spin_us`
//! that long before every deadline. The timer is armed that much early, and
//! a deadline already that close is spun to without arming it at all
//! (`timerfd_settime` costs a VM exit on a virtual machine). With
//! `timer_slack_us` the timer is armed that much late instead, and not
//! re-armed for a deadline it already serves, so one wake-up meets every
//! deadline within the slack (fewer wake-ups and timer arms at high
//! shaping rates, at the cost of the departures' spacing). With
//! `busy_poll_us` the loop does not sleep at all for that long after the
//! last frame read or written (and then never runs under SCHED_FIFO, which
//! would starve the core's other processes). `daemon.cpus` pins each
//! thread to a CPU. Each deadline reached by the timer, by spinning or
//! while polling records its lateness (time reached minus deadline) in an
//! HDR histogram; each frame written records its release lateness (write
//! time minus the link's logical delivery time) in another.
//!
//! One loop iteration: drain commands, read up to `batch` frames (NAPI's
//! budget, 64) from the port into buffers of the bounded `PacketPool`
//! (when it is exhausted the frame is read into a scratch buffer and
//! counted as a `PoolExhausted` drop), each handed to the lane stamped with
//! the `MonotonicClock` time it was read; whenever the lane has a departure
//! due, what it releases is written before the next read, so a batch never
//! delays a departure by more than one read and an unshaped link costs one
//! read and one write per frame, no epoll call. Then poll the lane, write
//! what it releases to the other port (frames that fell due while the loop
//! was late are spaced out by the `release::ReleasePacer` within the spin
//! margin of the moment,
//! and the first one held sets a deadline), return every sent or dropped
//! buffer to the pool, and re-arm the timer.
//!
//! Ports with offload (`FramePort::offload`, TAPs with `IFF_VNET_HDR`) are
//! read into one 64 KB buffer, since a read may return a GSO super-frame.
//! A plain frame is copied into a pool buffer (its partial checksum, if
//! any, completed); a super-frame either passes whole (`offload::GsoPolicy`,
//! decided at start and after every command; the read buffer itself goes
//! to the lane and a fresh one from the bounded pool of 64 KB buffers takes
//! its place) or is segmented into pool buffers. A frame released by the
//! lane is written with its offload header, so a whole super-frame reaches
//! the receiving TAP in one `writev`. Malformed offload frames are
//! `BadOffload` drops; conservation units are in `gso`.
//!
//! Each thread drops every capability as it starts (`privilege::drop_all`,
//! after switching to SCHED_FIFO if asked): the ports are open descriptors.
//! A port that fails (a read error, a write error saying its device is gone
//! such as `EBADFD` from a deleted TAP, or a hang-up) ends its thread with
//! `DatapathError::PortFailed` naming the port, and the other thread ends
//! with it; a write refused by a device that is merely down (`EIO`) only
//! loses that frame, counted by the port.
//!
//! Readers never share a lock with a hot path: at a fixed period each
//! thread builds a bounded `LaneSnapshot` (each flow-queueing qdisc lists
//! its `snapshot_flows` flows with the most backlog and sums up the rest,
//! so the cost does not depend on how many flows there are) and offers it
//! to its slot of the `SnapshotReader` with `try_lock`. If a reader
//! happens to hold the slot (only for as long as it takes to clone an
//! `Arc`), this period's snapshot is skipped rather than waited for. Any
//! number of readers (control socket, TUI) share the slots and the merged
//! `LiveSnapshot`.
//!
//! Submodules: `config` (the tuning), `command` (the command queues and
//! their routing), `error`, `snapshot` (what is published, and the merge),
//! `mailbox` (the snapshot slots), `handle` (the `Datapath` handle that
//! spawns and stops the threads), `realtime` (a thread's scheduling),
//! `wait` (the pure decision of how the loop waits), `stages` (where a
//! frame's time goes, stage by stage) and `driver` (a thread's state and
//! loop).

mod command;
mod config;
mod driver;
mod error;
mod handle;
mod mailbox;
mod publish;
mod realtime;
mod snapshot;
mod stages;
mod wait;

pub use command::{Command, Commander, EditError, LinkChange, Refused, TcFailure, Unreached};
pub use config::{DatapathConfig, DEFAULT_SNAPSHOT_FLOWS, FRAME_OVERHEAD, GSO_FRAME_BUF};
pub use error::{DatapathError, PORT_NAMES};
pub use handle::Datapath;
pub use mailbox::SnapshotReader;
#[cfg(test)]
pub(crate) use snapshot::RecordedLateness;
pub use snapshot::{
    GroCounters, LaneSnapshot, LatenessSummary, LiveSnapshot, PoolCounters, SharedLateness, Wakeups,
};
pub use stages::StageBreakdown;
