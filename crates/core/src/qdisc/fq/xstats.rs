//! fq's extended statistics as the kernel dumps them
//! (include/uapi/linux/pkt_sched.h `struct tc_fq_qd_stats`, filled by
//! net/sched/sch_fq.c `fq_dump_stats`).

use serde::{Deserialize, Serialize};

/// `struct tc_fq_qd_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FqXstats {
    /// Detached flows freed by the garbage collection (`stat_gc_flows`).
    pub gc_flows: u64,
    /// Obsolete: always 0.
    pub highprio_packets: u64,
    /// Obsolete: always 0.
    pub tcp_retrans: u64,
    /// Times a flow was throttled by pacing (`stat_throttled`).
    pub throttled: u64,
    /// Frames dropped at a flow's `flow_limit` (`stat_flows_plimit`).
    pub flows_plimit: u64,
    /// Frames whose pacing delay was clamped to one second.
    pub pkts_too_long: u64,
    /// Flow allocations that failed (never, here).
    pub allocation_errors: u64,
    /// `time_next_delayed_flow + timer_slack - now`, ns (an `__s64`: with
    /// no throttled flow it is `~0ULL + timer_slack - now` wrapped).
    pub time_next_delayed_flow: i64,
    /// Flows in the table.
    pub flows: u32,
    /// Of them, flows with no frame queued.
    pub inactive_flows: u32,
    /// Of them, flows waiting for their pacing time.
    pub throttled_flows: u32,
    /// EWMA (1/8) of how late throttled flows were released, ns.
    pub unthrottle_latency_ns: u32,
    /// Frames CE-marked at `ce_threshold` (counted even where the frame
    /// is not ECN-capable and stays unmarked, as the kernel counts them).
    pub ce_mark: u64,
    /// Frames dropped beyond the horizon.
    pub horizon_drops: u64,
    /// Frames whose time was capped to the horizon.
    pub horizon_caps: u64,
    /// Frames sent through the internal fast-path queue.
    pub fastpath_packets: u64,
    /// Frames dropped at a band's `limit`, per band.
    pub band_drops: [u64; 3],
    /// Frames queued in each band now.
    pub band_pkt_count: [u32; 3],
}
