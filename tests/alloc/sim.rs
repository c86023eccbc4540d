//! No allocation per packet after warm-up: a run three times as long
//! allocates (nearly) nothing more. Counted with a wrapping global
//! allocator; this test binary holds only this test, so nothing else
//! allocates concurrently.

use bloatbox::sim::{self, Scenario};

mod counter;
use counter::allocations;

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
    let before = allocations();
    let r = sim::run(&sc).unwrap();
    let allocs = allocations() - before;
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
