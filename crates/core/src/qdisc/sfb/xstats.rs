//! SFB's extended statistics as the kernel dumps them
//! (include/uapi/linux/pkt_sched.h `struct tc_sfb_xstats`, filled by
//! net/sched/sch_sfb.c `sfb_dump_stats`: the drop and mark counters, and
//! `sfb_compute_qlen`'s maximum bin length and maximum and mean marking
//! probability over the active set of bins).

use serde::{Deserialize, Serialize};

/// `struct tc_sfb_xstats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SfbXstats {
    /// Dropped by the random test (`p_min` chose the frame, and it was
    /// above one half, or the frame could not be marked).
    pub earlydrop: u32,
    /// Frames of an inelastic flow (every bin at `SFB_MAX_PROB`) beyond
    /// the penalty box's rate.
    pub penaltydrop: u32,
    /// Every bin of the frame's flow held `max` frames or more.
    pub bucketdrop: u32,
    /// The qdisc held `limit` frames.
    pub queuedrop: u32,
    /// The child refused the frame (or dropped another for it).
    pub childdrop: u32,
    /// Marked CE instead of dropped.
    pub marked: u32,
    /// The longest bin of the active set, frames.
    pub maxqlen: u32,
    /// The highest marking probability of a bin, Q0.16.
    pub maxprob: u32,
    /// The mean marking probability of the active set's bins, Q0.16.
    pub avgprob: u32,
}
