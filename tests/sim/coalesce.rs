//! RX interrupt coalescing in the simulator, set by the configuration's
//! ethtool lines, against the rule of each mode: N-1's 15 frames 12 µs
//! apart with `rx-usecs 50 rx-frames 0` leave in interrupts 60 µs apart
//! in EQE mode (the timer counts from the first frame held), and all at
//! once 50 µs after the last frame in CQE mode (`cqe-mode-rx on`: the
//! timer restarts at every completion, mlx5's
//! `MLX5_CQ_PERIOD_MODE_START_FROM_CQE`). With `adaptive-rx on` the
//! fixed values wait unused and net_dim's default profile (8 µs, 256
//! frames: `NET_DIM_RX_EQE_PROFILES[1]`) holds each frame 8 µs.

use super::traced;
use bloatbox::sim::Scenario;

/// The delivery times (µs after the first frame was sent) of the 15
/// frames, with `modes` after the coalescing values of the ethtool line.
fn deliveries(modes: &str) -> Vec<u64> {
    let sc = Scenario::from_toml(&format!(
        "seed = 1\nduration = \"10ms\"\n\
         [link]\nrate = \"unlimited\"\ndelay = \"0\"\n\
         ethtool = [\"ethtool -C left rx-usecs 50 rx-frames 0 {modes}\"]\n\
         [[packet]]\ntime = \"1ms\"\nsize = 100\ncount = 15\ninterval = \"12us\"\n"
    ))
    .unwrap();
    traced(&sc)
        .1
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["ev"] == "deliver")
        .map(|v| (v["t"].as_u64().unwrap() - 1_000_000) / 1000)
        .collect()
}

#[test]
fn eqe_fires_from_the_first_frame_cqe_after_the_last() {
    assert_eq!(
        deliveries("cqe-mode-rx off"),
        [[50; 5], [110; 5], [170; 5]].concat()
    );
    assert_eq!(deliveries("cqe-mode-rx on"), vec![168 + 50; 15]);
}

#[test]
fn adaptive_starts_on_net_dim_s_default_profile() {
    let each_8us_later: Vec<u64> = (0..15).map(|i| i * 12 + 8).collect();
    assert_eq!(deliveries("adaptive-rx on"), each_8us_later);
}
