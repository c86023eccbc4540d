//! The datapath threads' tuning (`DatapathConfig`) and the buffer sizes it
//! is derived from: what `app` builds from the configuration file and the
//! driver reads once at start.

use crate::link::offload::GsoPolicy;
use crate::time::NS_PER_MS;

pub use crate::packet::pool::{FRAME_OVERHEAD, GSO_FRAME_BUF};

/// Default of `DatapathConfig::snapshot_flows`.
pub const DEFAULT_SNAPSHOT_FLOWS: usize = 64;

/// Tuning of the datapath threads (each direction's thread has the same,
/// but for the CPU it is pinned to).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DatapathConfig {
    /// Spin (instead of sleeping) for this long before each deadline; 0 =
    /// a learned margin within `spin_budget_pct`.
    pub spin_us: u32,
    /// Without `spin_us` and `timer_slack_us`: the most of a core (%) the
    /// learned spin margin may use (`wait::AdaptiveSpin`); 0 = never spin.
    /// 0 here; the daemon's default (`daemon.spin_budget_pct`) is 15.
    pub spin_budget_pct: u8,
    /// Let the timer fire up to this long after a deadline, so that one
    /// wake-up serves every deadline within it; 0 = on time. Not with
    /// `spin_us` (the configuration refuses both).
    pub timer_slack_us: u32,
    /// Poll the ports without sleeping for this long after the last frame
    /// read or written; 0 = never.
    pub busy_poll_us: u32,
    /// Hold a PM QoS CPU latency request of this many µs while the
    /// threads run (`realtime::hold_pm_qos`); None = no request.
    pub pm_qos_us: Option<u32>,
    /// Most frames read from the port per loop iteration (NAPI's budget).
    pub batch: usize,
    /// How often a snapshot is published, ns.
    pub publish_interval_ns: u64,
    /// Flow queues listed per flow-queueing qdisc in a published snapshot:
    /// the ones with the most backlog; the others are summed up
    /// (`QdiscDump::other_flows`). Bounds the cost of a snapshot.
    pub snapshot_flows: usize,
    /// Size of each frame buffer: the MTU plus `FRAME_OVERHEAD`.
    pub frame_buf: usize,
    /// Most frame buffers in existence per direction (each thread's
    /// pool's hard cap).
    pub pool_buffers: usize,
    /// Run the threads under SCHED_FIFO at this priority (1..=99); None
    /// keeps the normal scheduler. On a busy machine this is what keeps wake-ups
    /// on time (see docs/timing.md).
    pub realtime_priority: Option<u8>,
    /// Which directions pass GSO super-frames whole (offload ports only).
    pub gso: GsoPolicy,
    /// Most `GSO_FRAME_BUF` buffers in existence per direction (whole
    /// super-frames in the link, plus the read buffer); when they run out
    /// super-frames are segmented instead.
    pub gso_buffers: usize,
    /// Merge what is written to an offload port in one pass into TCP
    /// super-frames where the kernel's GRO would (`packet::gro`).
    pub gro: bool,
    /// The CPU each direction's thread is pinned to, by `Dir::index()`;
    /// None lets the scheduler choose.
    pub cpus: [Option<usize>; 2],
}

impl Default for DatapathConfig {
    fn default() -> Self {
        DatapathConfig {
            spin_us: 0,
            spin_budget_pct: 0,
            timer_slack_us: 0,
            busy_poll_us: 0,
            pm_qos_us: None,
            batch: 64,
            publish_interval_ns: 100 * NS_PER_MS,
            snapshot_flows: DEFAULT_SNAPSHOT_FLOWS,
            frame_buf: 1500 + FRAME_OVERHEAD,
            pool_buffers: 65_536,
            realtime_priority: None,
            gso: GsoPolicy::default(),
            gso_buffers: 1024,
            gro: false,
            cpus: [None; 2],
        }
    }
}
