//! DualPI2's extended statistics as the kernel dumps them
//! (include/uapi/linux/pkt_sched.h `struct tc_dualpi2_xstats`, filled by
//! net/sched/sch_dualpi2.c `dualpi2_dump_stats`).

use serde::{Deserialize, Serialize};

/// `struct tc_dualpi2_xstats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dualpi2Xstats {
    /// The base PI probability, a fraction of `u32::MAX` (`pi2_prob`).
    pub prob: u32,
    /// The C-queue's head sojourn time, µs.
    pub delay_c: u32,
    /// The L-queue's head sojourn time, µs.
    pub delay_l: u32,
    /// Frames enqueued in the C-queue.
    pub packets_in_c: u32,
    /// Frames enqueued in the L-queue.
    pub packets_in_l: u32,
    /// Most frames held at an enqueue.
    pub maxq: u32,
    /// Frames CE-marked (by the PI probability and by the step).
    pub ecn_mark: u32,
    /// Frames CE-marked by the L-queue's step threshold.
    pub step_marks: u32,
    /// The WRR credit: positive, the C-queue is served next.
    pub credit: i32,
    /// Bytes of `truesize` charged for the frames held.
    pub memory_used: u32,
    /// The most `memory_used` has been.
    pub max_memory_used: u32,
    /// The memory limit of both queues, bytes.
    pub memory_limit: u32,
}
