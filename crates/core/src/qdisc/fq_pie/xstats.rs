//! FQ-PIE's extended statistics as the kernel dumps them
//! (include/uapi/linux/pkt_sched.h `struct tc_fq_pie_xstats`, filled by
//! net/sched/sch_fq_pie.c `fq_pie_dump_stats`).

use serde::{Deserialize, Serialize};

/// `struct tc_fq_pie_xstats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FqPieXstats {
    /// Frames enqueued.
    pub packets_in: u32,
    /// Frames dropped at the packet limit.
    pub overlimit: u32,
    /// Frames that arrived over the memory limit (counted, not dropped).
    pub overmemory: u32,
    /// Frames dropped (early drops and overlimit).
    pub dropped: u32,
    /// Frames CE-marked instead of dropped.
    pub ecn_mark: u32,
    /// Flows that became active (put on new_flows).
    pub new_flow_count: u32,
    /// Flows on new_flows now.
    pub new_flows_len: u32,
    /// Flows on old_flows now.
    pub old_flows_len: u32,
    /// Memory charged for queued frames (`skb->truesize`), bytes.
    pub memory_usage: u32,
}
