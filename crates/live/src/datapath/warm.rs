//! Warming the per-frame code after a wake-up (issue 47). The functions
//! an idle frame runs through, in the core (the lane's ingress and poll,
//! the path's stepping, serializer, delay line, classification, the frame
//! pools) and here (the driver's loop, read, poll and write passes, the
//! ports' reads and writes, the stage observer), are placed in one linker
//! section, `bloatbox_hot`: each says `#[cfg_attr(target_os = "linux",
//! allow(unsafe_code), link_section = "bloatbox_hot")]`. A datapath thread
//! that waited a millisecond or more (`slept_long`) asks the CPU to fetch
//! the whole section (`code`, about 50 KB in the daemon) before it reads
//! the frame. The fetches are prefetch instructions into the second-level
//! cache, which serves an instruction fetch that misses (the first-level
//! data cache, whose lines they would evict, never runs code); they do
//! not wait, so the lines and their pages' TLB entries arrive while the
//! read system call runs, instead of one miss at a time as the frame's
//! code first meets them, spread over some 20 pages. What it saves is in
//! docs/timing.md ("Warming the code after a wake-up"). The linker defines
//! `__start_bloatbox_hot` and `__stop_bloatbox_hot` around the section (GNU
//! ld, gold, lld and mold do for a section named as a C identifier);
//! `code` itself lives in it, so an object that refers to the two symbols
//! also brings a section for them to bound. Elsewhere than Linux on
//! x86-64, `code` does nothing.

use crate::time::{Instant, NS_PER_MS};

/// A wait at least this long may have left the code cold: a ping every
/// 10 ms found it cold, every 4 ms warm (docs/timing.md, "Idle RTT traced,
/// wake-up by wake-up"). Shorter waits, as in a flow, skip the fetch.
pub(crate) const COLD_AFTER_NS: u64 = NS_PER_MS;

/// Whether a wait from `before` to `after` was long enough to fetch the
/// code again (`COLD_AFTER_NS`).
pub(crate) fn slept_long(before: Instant, after: Instant) -> bool {
    after.saturating_since(before) >= COLD_AFTER_NS
}

/// Asks the CPU to bring the per-frame code into its caches (public for
/// `examples/cold_frame.rs`, which measures what it saves).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[allow(unsafe_code)]
#[link_section = "bloatbox_hot"]
pub fn code() {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
    let (start, end) = section();
    for line in (start..end).step_by(64) {
        // SAFETY: a prefetch is a hint: it neither faults nor changes
        // memory, whatever the address; these are lines of our own code.
        unsafe { _mm_prefetch::<_MM_HINT_T1>(line as *const i8) };
    }
}

/// Elsewhere: nothing to do.
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
pub fn code() {}

/// The addresses where the per-frame code starts and ends.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn section() -> (usize, usize) {
    extern "C" {
        static __start_bloatbox_hot: u8;
        static __stop_bloatbox_hot: u8;
    }
    (
        std::ptr::addr_of!(__start_bloatbox_hot) as usize,
        std::ptr::addr_of!(__stop_bloatbox_hot) as usize,
    )
}

#[cfg(all(test, target_os = "linux", target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// The per-frame functions are in the section `code` fetches: a
    /// lost attribute (or a linker that ignored it) would leave them out.
    #[test]
    fn only_a_wait_of_a_millisecond_or_more_fetches_the_code() {
        let t = Instant::from_millis(5);
        assert!(!slept_long(t, t + (NS_PER_MS - 1)));
        assert!(slept_long(t, t + NS_PER_MS));
        assert!(
            !slept_long(t + NS_PER_MS, t),
            "a clock going back is no sleep"
        );
    }

    #[test]
    fn the_per_frame_functions_are_in_the_section() {
        let (start, end) = section();
        assert!(end > start, "empty section {start:#x}..{end:#x}");
        let inside = |f: usize| (start..end).contains(&f);
        let poll = bloatbox_core::bridge::Lane::poll as *const () as usize;
        let code_fn = code as *const () as usize;
        assert!(
            inside(poll),
            "Lane::poll at {poll:#x} outside {start:#x}..{end:#x}"
        );
        assert!(inside(code_fn), "warm::code at {code_fn:#x} outside");
        let new = bloatbox_core::bridge::Lane::new as *const () as usize;
        assert!(!inside(new), "Lane::new, made once, is in the section");
        code();
    }
}
