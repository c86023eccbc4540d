//! The kernel's jiffy clock as the qdiscs that keep times in jiffies see
//! it (pie and fq_pie's `tupdate`, fq's flow ages and `refill_delay`,
//! sfb's rehash and warm-up, hhf's timeouts): `HZ` and the conversions of
//! include/linux/jiffies.h (`usecs_to_jiffies`, `msecs_to_jiffies`,
//! `jiffies_to_usecs`, `jiffies_to_msecs`, `time_after`), read off the
//! emulation's clock so that every kind ticks alike.

use crate::time::{Instant, NS_PER_SEC, NS_PER_US};

/// The kernel's `HZ` this emulation assumes (CONFIG_HZ=250, the default of
/// Debian's and older Ubuntu's kernels, and what tc-pie(8)'s examples show:
/// `tupdate 30ms` dumped as 32ms): times kept in jiffies are of 4 ms.
pub const HZ: u64 = 250;
/// µs per jiffy.
const US_PER_JIFFY: u64 = NS_PER_SEC / HZ / NS_PER_US;
/// ms per jiffy.
const MS_PER_JIFFY: u64 = 1000 / HZ;
/// A jiffy, ns.
pub const JIFFY_NS: u64 = NS_PER_SEC / HZ;

/// `jiffies` at `now`: the clock's jiffies since its start.
pub fn jiffies(now: Instant) -> u64 {
    now.nanos() / JIFFY_NS
}

/// `time_after(a, b)`: jiffy `a` is after `b`.
pub fn time_after(a: u64, b: u64) -> bool {
    (b.wrapping_sub(a) as i64) < 0
}

/// `usecs_to_jiffies` (rounded up to the jiffy).
pub fn usecs_to_jiffies(us: u32) -> u32 {
    u64::from(us).div_ceil(US_PER_JIFFY) as u32
}

/// `jiffies_to_usecs` (an `unsigned int`: wraps above 2^32 - 1 µs).
pub fn jiffies_to_usecs(j: u32) -> u32 {
    j.wrapping_mul(US_PER_JIFFY as u32)
}

/// `msecs_to_jiffies` (rounded up to the jiffy).
pub fn msecs_to_jiffies(ms: u32) -> u64 {
    u64::from(ms).div_ceil(MS_PER_JIFFY)
}

/// `jiffies_to_msecs` (an `unsigned int`: wraps).
pub fn jiffies_to_msecs(j: u64) -> u32 {
    j.wrapping_mul(MS_PER_JIFFY) as u32
}
