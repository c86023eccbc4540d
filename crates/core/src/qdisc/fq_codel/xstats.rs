//! fq_codel's extended statistics as the kernel dumps them (include/uapi/linux/pkt_sched.h
//! `struct tc_fq_codel_xstats`): the qdisc's and a flow queue's.

use serde::{Deserialize, Serialize};

/// `struct tc_fq_codel_qd_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FqCodelXstats {
    /// Largest frame seen so far, bytes.
    pub maxpacket: u32,
    /// Frames dropped because the qdisc was over its limit.
    pub drop_overlimit: u64,
    /// Frames CE-marked by CoDel instead of dropped.
    pub ecn_mark: u64,
    /// Flows that went onto the new list.
    pub new_flow_count: u64,
    /// Flows on the new list now (`tc_fq_codel_qd_stats.new_flows_len`).
    pub new_flows_len: u32,
    /// Flows on the old list now (`tc_fq_codel_qd_stats.old_flows_len`).
    pub old_flows_len: u32,
    /// Frames CE-marked over `ce_threshold`.
    pub ce_mark: u64,
    /// Memory held by queued frames, bytes.
    pub memory_usage: u64,
    /// Frames dropped because the qdisc was over its `memory_limit`.
    pub drop_overmemory: u64,
}

/// `struct tc_fq_codel_cl_stats` (the flow's backlog and qlen ride in the
/// class's `queue`, as the kernel's `gnet_stats_copy_queue`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FqCodelClassXstats {
    /// The flow's DRR deficit, bytes (`tc_fq_codel_cl_stats.deficit`).
    pub deficit: i32,
    /// In-queue delay of the last dequeued frame, µs.
    pub ldelay_us: u64,
    /// CoDel's `count` of the flow (`tc_fq_codel_cl_stats.count`).
    pub count: u32,
    /// CoDel's `lastcount` of the flow (`tc_fq_codel_cl_stats.lastcount`).
    pub lastcount: u32,
    /// Whether the flow's CoDel is dropping (`tc_fq_codel_cl_stats.dropping`).
    pub dropping: bool,
    /// Time to the next drop, µs (negative: overdue); 0 unless dropping.
    pub drop_next_us: i64,
}
