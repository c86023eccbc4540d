//! HTB's options as netlink carries them (include/uapi/linux/pkt_sched.h):
//! the qdisc's `struct tc_htb_glob` in `TCA_HTB_INIT` with
//! `TCA_HTB_DIRECT_QLEN`, and a class's `struct tc_htb_opt` in
//! `TCA_HTB_PARMS` with its two `struct tc_ratespec` widened by
//! `TCA_HTB_RATE64`/`TCA_HTB_CEIL64`. Requests carry what tc computed
//! client-side (buffers in psched ticks); dumps carry what
//! `htb_dump`/`htb_dump_class` fill in.

use crate::qdisc::options::RateSpec;
use serde::{Deserialize, Serialize};

/// `HTB_VER` of net/sched/sch_htb.c: 3.17, major in the high 16 bits.
pub const HTB_VER: u32 = 0x0003_0011;

/// `struct tc_htb_glob` and `TCA_HTB_DIRECT_QLEN`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HtbGlob {
    /// A request's `3` (`HTB_VER >> 16`, what tc sends); a dump's `HTB_VER`.
    pub version: u32,
    /// `r2q`: a leaf's default quantum is its rate divided by this (0 is
    /// taken as 1).
    pub rate2quantum: u32,
    /// `default`: the minor of the class unclassified frames go to (0: the
    /// direct queue).
    pub defcls: u32,
    /// Unused by the kernel (tc sends 0, the kernel dumps 0).
    pub debug: u32,
    /// Dumped: frames the direct queue has taken (the kernel's `__u32`;
    /// kept at 64 bits here). Ignored in a request.
    pub direct_pkts: u64,
    /// `TCA_HTB_DIRECT_QLEN` (absent: the device's txqueuelen).
    pub direct_qlen: Option<u32>,
}

impl Default for HtbGlob {
    /// What `tc qdisc add ... htb` sends without options
    /// (`htb_parse_opt`: version 3, r2q 10, default 0).
    fn default() -> Self {
        HtbGlob {
            version: HTB_VER >> 16,
            rate2quantum: 10,
            defcls: 0,
            debug: 0,
            direct_pkts: 0,
            direct_qlen: None,
        }
    }
}

/// `struct tc_htb_opt` (with `TCA_HTB_RATE64`/`TCA_HTB_CEIL64` folded into
/// the rate specs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HtbClassOptions {
    /// The guaranteed rate (`rate`).
    pub rate: RateSpec,
    /// The rate the class may borrow up to (`ceil`).
    pub ceil: RateSpec,
    /// The `rate` bucket's depth in psched ticks (tc computes it from
    /// `burst`).
    pub buffer: u32,
    /// The `ceil` bucket's depth in psched ticks (from `cburst`).
    pub cbuffer: u32,
    /// DRR quantum in bytes (0 in a request: rate / r2q).
    pub quantum: u32,
    /// Dumped: the class's level (0 for leaves). Ignored in a request.
    pub level: u32,
    /// Priority 0..7 (higher values are clamped to 7).
    pub prio: u32,
}
