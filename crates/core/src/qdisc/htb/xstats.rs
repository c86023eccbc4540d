//! HTB's extended statistics of a class as the kernel dumps them
//! (include/uapi/linux/pkt_sched.h `struct tc_htb_xstats`).

use serde::{Deserialize, Serialize};

/// `struct tc_htb_xstats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HtbXstats {
    /// `lends` (tc prints `lended:`).
    pub lends: u64,
    /// `borrows` (tc prints `borrowed:`).
    pub borrows: u64,
    /// Always 0: unused since the kernel's "Make HTB scheduler work with
    /// TSO" change, kept because tc prints it.
    pub giants: u32,
    /// Tokens of the rate bucket, psched ticks (negative: over rate).
    pub tokens: i32,
    /// Tokens of the ceil bucket, psched ticks (negative: over ceil).
    pub ctokens: i32,
}
