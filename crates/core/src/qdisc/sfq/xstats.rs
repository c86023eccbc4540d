//! SFQ's statistics as the kernel dumps them (include/uapi/linux/pkt_sched.h):
//! a flow queue's `struct tc_sfq_xstats`, and the per-flow RED counters
//! `struct tc_sfqred_stats` that `sfq_dump` copies into the `stats` field of
//! `tc_sfq_qopt_v1` (so they travel with the options, not the xstats).

use serde::{Deserialize, Serialize};

/// `struct tc_sfq_xstats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SfqXstats {
    /// The slot's remaining allotment, bytes.
    pub allot: i32,
}

/// `struct tc_sfqred_stats`: what net/sched/sch_sfq.c `sfq_enqueue`'s RED
/// block decided, u32 counters as the kernel keeps them (wrapping).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SfqRedStats {
    /// Early drops: in the band, chosen by the random test, not marked.
    pub prob_drop: u32,
    /// Forced drops: at or above max, not marked.
    pub forced_drop: u32,
    /// Early marks of the arriving frame.
    pub prob_mark: u32,
    /// Forced marks of the arriving frame.
    pub forced_mark: u32,
    /// Early marks of the slot's head (with `headdrop`).
    pub prob_mark_head: u32,
    /// Forced marks of the slot's head (with `headdrop`).
    pub forced_mark_head: u32,
}
