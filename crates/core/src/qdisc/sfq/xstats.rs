//! SFQ's extended statistics of a flow queue as the kernel dumps them
//! (include/uapi/linux/pkt_sched.h `struct tc_sfq_xstats`).

use serde::{Deserialize, Serialize};

/// `struct tc_sfq_xstats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SfqXstats {
    /// The slot's remaining allotment, bytes.
    pub allot: i32,
}
