//! A counting global allocator for the alloc tier (`mod counter;` in each
//! binary of tests/alloc/; including the module installs it): the system
//! allocator, counting the allocations (alloc and realloc calls) of the
//! process and of each thread, and the live heap bytes with their peak.
//!
//! Each binary uses a part of this module.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

struct Counting;

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations (alloc and realloc calls) of all threads.
static ALLOCS: AtomicU64 = AtomicU64::new(0);
/// Bytes allocated and not yet freed, and their highest value.
static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);

thread_local! {
    /// Allocations (alloc and realloc calls) made by this thread.
    static THREAD_ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn count(grow_by: i64) {
    ALLOCS.fetch_add(1, Ordering::Relaxed);
    // `try_with`: no count while the thread-local is being torn down.
    let _ = THREAD_ALLOCS.try_with(|c| c.set(c.get() + 1));
    let now = LIVE.fetch_add(grow_by, Ordering::Relaxed) + grow_by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every method forwards unchanged to the system allocator.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as i64);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as i64 - layout.size() as i64);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations so far by all threads of the process.
pub fn allocations() -> u64 {
    ALLOCS.load(Ordering::Relaxed)
}

/// Allocations so far by this thread.
pub fn thread_allocations() -> u64 {
    THREAD_ALLOCS.with(|c| c.get())
}

/// Runs `f`; its result, and the highest the live heap rose above where
/// it stood at the start, bytes (all threads).
pub fn peak_growth<T>(f: impl FnOnce() -> T) -> (T, i64) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed) - base)
}
