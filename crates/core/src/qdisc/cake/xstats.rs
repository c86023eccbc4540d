//! CAKE's extended statistics as the kernel dumps them (net/sched/sch_cake.c
//! `cake_dump_stats`, the `TCA_CAKE_STATS_*` and `TCA_CAKE_TIN_STATS_*`
//! attributes of include/uapi/linux/pkt_sched.h), and a flow's as
//! `cake_dump_class_stats` dumps them, and what a flow's row in the TUI's
//! flow table adds (`CakeFlowInfo`).

use serde::{Deserialize, Serialize};

/// The qdisc's `TCA_CAKE_STATS_*`, with its tins in `tin_order`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CakeXstats {
    /// `CAPACITY_ESTIMATE64`: the ingress estimator's peak, bytes/s.
    pub capacity_estimate: u64,
    /// `MEMORY_LIMIT`, bytes.
    pub memory_limit: u32,
    /// `MEMORY_USED`: the most memory ever held (`buffer_max_used`), bytes.
    pub memory_used: u32,
    /// `AVG_NETOFF`: the average network-header offset, rounded.
    pub avg_netoff: u32,
    /// `MIN_NETLEN`.
    pub min_netlen: u32,
    /// `MAX_NETLEN`.
    pub max_netlen: u32,
    /// `MIN_ADJLEN`.
    pub min_adjlen: u32,
    /// `MAX_ADJLEN`.
    pub max_adjlen: u32,
    /// `TIN_STATS`, one per tin in the order the kernel dumps them.
    pub tins: Vec<CakeTinXstats>,
}

/// One tin's `TCA_CAKE_TIN_STATS_*`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CakeTinXstats {
    /// `THRESHOLD_RATE64`, bytes/s.
    pub threshold_rate: u64,
    /// `SENT_BYTES64`.
    pub sent_bytes: u64,
    /// `BACKLOG_BYTES`.
    pub backlog_bytes: u32,
    /// `TARGET_US`.
    pub target_us: u32,
    /// `INTERVAL_US`.
    pub interval_us: u32,
    /// `SENT_PACKETS`.
    pub sent_packets: u32,
    /// `DROPPED_PACKETS`.
    pub dropped_packets: u32,
    /// `ECN_MARKED_PACKETS`.
    pub ecn_marked_packets: u32,
    /// `ACKS_DROPPED_PACKETS`.
    pub acks_dropped_packets: u32,
    /// `PEAK_DELAY_US`.
    pub peak_delay_us: u32,
    /// `AVG_DELAY_US`.
    pub avg_delay_us: u32,
    /// `BASE_DELAY_US`.
    pub base_delay_us: u32,
    /// `WAY_INDIRECT_HITS`.
    pub way_indirect_hits: u32,
    /// `WAY_MISSES`.
    pub way_misses: u32,
    /// `WAY_COLLISIONS`.
    pub way_collisions: u32,
    /// `SPARSE_FLOWS` (sparse and decaying).
    pub sparse_flows: u32,
    /// `BULK_FLOWS`.
    pub bulk_flows: u32,
    /// `UNRESPONSIVE_FLOWS`.
    pub unresponsive_flows: u32,
    /// `MAX_SKBLEN`.
    pub max_skblen: u32,
    /// `FLOW_QUANTUM`.
    pub flow_quantum: u32,
}

/// A flow's `TCA_CAKE_STATS_*` (`cake_dump_class_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CakeClassXstats {
    /// `DEFICIT`.
    pub deficit: i32,
    /// `DROPPING`.
    pub dropping: bool,
    /// `COBALT_COUNT`.
    pub count: u32,
    /// `P_DROP`: BLUE's probability, Q0.32.
    pub p_drop: u32,
    /// `BLUE_TIMER_US`: µs since BLUE last moved, sent while `p_drop` is
    /// not 0.
    pub blue_timer_us: Option<i32>,
    /// `DROP_NEXT_US`: µs since the next drop was due (negative: ahead),
    /// sent while dropping.
    pub drop_next_us: Option<i32>,
}

/// Which of its tin's rotations a CAKE flow is on (`CAKE_SET_*`; a
/// sparse-waiting flow counts as sparse, as `cake_dump_stats` counts it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CakeFlowSet {
    /// `CAKE_SET_SPARSE` or `CAKE_SET_SPARSE_WAIT`.
    #[default]
    Sparse,
    /// `CAKE_SET_BULK`.
    Bulk,
    /// `CAKE_SET_DECAYING`: empty, waiting for COBALT to come to rest.
    Decaying,
}

/// What a CAKE flow queue's row adds to a flow-queue row
/// (`dump::FlowDump::cake`): its tin, its hosts and the rest of its COBALT
/// state. The kernel dumps none of this per flow; it is read from `struct
/// cake_flow` and `struct cake_tin_data` when the dump is taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CakeFlowInfo {
    /// The tin's place in the order tc prints the tins (`tin_order`: the
    /// bulk tin first in diffserv3 and diffserv4); the flow's class id is
    /// `tin * 1024 + queue + 1`.
    pub tin: u8,
    /// How many tins the qdisc runs (`tin_cnt`): what tc names them by.
    pub tins: u8,
    /// The isolation mode (`flow_mode::*`, without the nat flag).
    pub flow_mode: u8,
    /// The flow's source-host slot (`cake_flow.srchost`): kept in the
    /// dual-srchost and triple-isolate modes only, else 0.
    pub srchost: u16,
    /// The flow's destination-host slot (`cake_flow.dsthost`): kept in
    /// the dual-dsthost and triple-isolate modes only, else 0.
    pub dsthost: u16,
    /// The rotation it is on.
    pub set: CakeFlowSet,
    /// BLUE's drop probability (`cobalt_vars.p_drop`), Q0.32.
    pub p_drop: u32,
}
