//! PIE's extended statistics as the kernel dumps them
//! (include/uapi/linux/pkt_sched.h `struct tc_pie_xstats`, filled by
//! net/sched/sch_pie.c `pie_dump_stats`).

use serde::{Deserialize, Serialize};

/// `struct tc_pie_xstats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PieXstats {
    /// The drop probability as a fraction of 2^64 (`vars.prob << 8`).
    pub prob: u64,
    /// The current queue delay, µs.
    pub delay: u32,
    /// The average drain rate, bytes/s (with the rate estimator only).
    pub avg_dq_rate: u32,
    /// Whether `avg_dq_rate` is valid (`dq_rate_estimating`).
    pub dq_rate_estimating: bool,
    /// Frames enqueued.
    pub packets_in: u32,
    /// Frames dropped (early drops and overlimit).
    pub dropped: u32,
    /// Frames dropped at the packet limit.
    pub overlimit: u32,
    /// Most frames queued at an enqueue.
    pub maxq: u32,
    /// Frames CE-marked instead of dropped.
    pub ecn_mark: u32,
}
