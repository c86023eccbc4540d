//! A bounded soak in the simulator: 60 s of simulated time with saturating
//! TCP both ways plus a UDP flood well above the line rate, through
//! fq_codel one way and an HTB shaper (fq_codel and sfq leaves) the other.
//! Each direction must conserve frames to the frame, no drop may go
//! unexplained, and the core's live heap must not grow with run length:
//! the peak of a 60 s run stays within a small margin of a 20 s run's
//! (measured with a counting global allocator; this test binary holds only
//! this test, so nothing else allocates concurrently).

use bloatbox::sim::{self, Scenario};

mod counter;

fn scenario(duration: &str) -> Scenario {
    Scenario::from_toml(&format!(
        r#"
seed = 3
duration = "{duration}"
[link]
rate = "20mbit"
delay = "10ms"
[link.left_to_right]
tc = ["tc qdisc add dev left root fq_codel limit 2000 memory_limit 4mb ecn"]
[link.right_to_left]
tc = [
  "tc qdisc add dev right root handle 1: htb default 20",
  "tc class add dev right parent 1: classid 1:1 htb rate 15mbit",
  "tc class add dev right parent 1:1 classid 1:10 htb rate 5mbit ceil 15mbit prio 1",
  "tc class add dev right parent 1:1 classid 1:20 htb rate 10mbit ceil 15mbit",
  "tc qdisc add dev right parent 1:10 fq_codel",
  "tc qdisc add dev right parent 1:20 sfq limit 200",
  "tc filter add dev right parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff flowid 1:10",
]
[[tcp]]
count = 3
ecn = true
[[tcp]]
direction = "right_to_left"
count = 3
[[udp]]
rate = "30mbit"
size = 1400
[[udp]]
direction = "right_to_left"
count = 8
rate = "2mbit"
size = 200
poisson = true
"#
    ))
    .unwrap()
}

/// Runs `duration`; returns the heap growth peak above the starting point
/// and the frames handed to both paths.
fn soak(duration: &str) -> (i64, u64) {
    let sc = scenario(duration);
    let (r, peak) = counter::peak_growth(|| sim::run(&sc).unwrap());
    let mut frames = 0;
    for d in &r.directions {
        let drops: u64 = d.drops.values().sum();
        assert_eq!(
            d.frames_in,
            d.frames_out + drops + d.held,
            "{duration} {}: frames_in = frames_out + drops + held ({:?})",
            d.name,
            d.drops
        );
        assert_eq!(d.unexplained_drops, 0, "{}", d.name);
        assert!(drops > 0, "{} was saturated", d.name);
        assert!(d.utilisation > 0.5, "{}: {}", d.name, d.utilisation);
        frames += d.frames_in;
        println!(
            "{duration} {}: in {} out {} drops {:?} held {} utilisation {:.2}",
            d.name, d.frames_in, d.frames_out, d.drops, d.held, d.utilisation
        );
    }
    (peak, frames)
}

#[test]
fn sixty_simulated_seconds_conserve_frames_and_memory_stays_flat() {
    let (peak_short, frames_short) = soak("20s");
    let (peak_long, frames_long) = soak("60s");
    println!(
        "heap peak: 20 s ({frames_short} frames) {peak_short} B; 60 s ({frames_long} frames) {peak_long} B"
    );
    assert!(frames_long > 2 * frames_short);
    // Three times the frames may not need more than 25% more memory
    // (+64 KiB for the report's own bookkeeping).
    assert!(
        peak_long <= peak_short + peak_short / 4 + 65_536,
        "heap grows with run length: {peak_short} B -> {peak_long} B"
    );
}
