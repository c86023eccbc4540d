//! choke's extended statistics as the kernel dumps them
//! (include/uapi/linux/pkt_sched.h `struct tc_choke_xstats`, filled by
//! net/sched/sch_choke.c `choke_dump_stats` from its `q->stats`).

use serde::{Deserialize, Serialize};

/// `struct tc_choke_xstats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChokeXstats {
    /// Early drops: `prob_drop + forced_drop` (in the band, chosen by the
    /// random test, or above max).
    pub early: u32,
    /// Drops at the packet limit: `pdrop`.
    pub pdrop: u32,
    /// Drops by other means: Linux 6.18's choke keeps no such counter
    /// (its `drop` operation went in 4.8), so 0.
    pub other: u32,
    /// ECN marks instead of early drops: `prob_mark + forced_mark`.
    pub marked: u32,
    /// Arrivals whose randomly drawn queued frame was of the same flow
    /// (`matched`; each such event drops both frames).
    pub matched: u32,
}
