//! No allocation per packet after warm-up: a run three times as long
//! allocates (nearly) nothing more. Counted with a wrapping global
//! allocator; this test binary holds only this test, so nothing else
//! allocates concurrently.

use bloatbox::sim::{self, Scenario};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn scenario(duration: &str) -> Scenario {
    Scenario::from_toml(&format!(
        r#"
seed = 1
duration = "{duration}"
[link]
rate = "100mbit"
delay = "5ms"
[link.left_to_right]
tc = ["tc qdisc add dev left root fq_codel"]
[[tcp]]
count = 4
[[udp]]
count = 64
rate = "500kbit"
poisson = true
[[ping]]
interval = "10ms"
"#
    ))
    .unwrap()
}

/// Allocations of one run, and frames it handed to the paths.
fn measure(duration: &str) -> (u64, u64) {
    let sc = scenario(duration);
    let before = ALLOCS.load(Ordering::Relaxed);
    let r = sim::run(&sc).unwrap();
    let allocs = ALLOCS.load(Ordering::Relaxed) - before;
    (allocs, r.directions.iter().map(|d| d.frames_in).sum())
}

#[test]
fn steady_state_does_not_allocate_per_packet() {
    let (a_short, f_short) = measure("2s");
    let (a_long, f_long) = measure("6s");
    let extra_frames = f_long - f_short;
    let extra_allocs = a_long.saturating_sub(a_short);
    println!("{f_short} frames: {a_short} allocations; {f_long} frames: {a_long}");
    assert!(extra_frames > 50_000, "{extra_frames}");
    assert!(
        extra_allocs * 100 < extra_frames,
        "{extra_allocs} allocations for {extra_frames} more frames"
    );
}
