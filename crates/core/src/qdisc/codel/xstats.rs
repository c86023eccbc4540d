//! codel's extended statistics as the kernel dumps them (include/uapi/linux/pkt_sched.h
//! `struct tc_codel_xstats`).

use serde::{Deserialize, Serialize};

/// `struct tc_codel_xstats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodelXstats {
    /// Largest frame seen so far, bytes.
    pub maxpacket: u32,
    /// CoDel's `count` (`tc_codel_xstats.count`): drops since the dropping
    /// state began.
    pub count: u32,
    /// CoDel's `lastcount` (`tc_codel_xstats.lastcount`).
    pub lastcount: u32,
    /// In-queue delay of the last dequeued frame, µs.
    pub ldelay_us: u64,
    /// Time to the next drop, µs (negative: overdue).
    pub drop_next_us: i64,
    /// Frames dropped because the qdisc was over its limit.
    pub drop_overlimit: u64,
    /// Frames CE-marked by CoDel instead of dropped.
    pub ecn_mark: u64,
    /// Whether CoDel is in the dropping state (`tc_codel_xstats.dropping`).
    pub dropping: bool,
    /// Frames CE-marked over `ce_threshold`.
    pub ce_mark: u64,
}
