//! RED's extended statistics as the kernel dumps them
//! (include/uapi/linux/pkt_sched.h `struct tc_red_xstats`, filled by
//! net/sched/sch_red.c `red_dump_stats` from its `struct red_stats`).

use serde::{Deserialize, Serialize};

/// `struct tc_red_xstats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedXstats {
    /// Early drops: `prob_drop + forced_drop` (in the band, chosen by the
    /// random test, or at or above max).
    pub early: u32,
    /// Drops of the child qdisc (its limit): `pdrop`.
    pub pdrop: u32,
    /// Drops by other means (`other`; no path of today's kernel counts
    /// one).
    pub other: u32,
    /// ECN marks instead of early drops: `prob_mark + forced_mark`.
    pub marked: u32,
}
