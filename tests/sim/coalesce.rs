//! RX interrupt coalescing in the simulator, set by the configuration's
//! ethtool lines, against the rule of each mode: N-1's 15 frames 12 µs
//! apart with `rx-usecs 50 rx-frames 0` leave in interrupts 60 µs apart
//! in EQE mode (the timer counts from the first frame held), and all at
//! once 50 µs after the last frame in CQE mode (`cqe-mode-rx on`: the
//! timer restarts at every completion, mlx5's
//! `MLX5_CQ_PERIOD_MODE_START_FROM_CQE`).

use super::traced;
use bloatbox::sim::Scenario;

/// The delivery times (µs after the first frame was sent) of the 15
/// frames, with CQE mode on or off.
fn deliveries(cqe: bool) -> Vec<u64> {
    let mode = if cqe { "on" } else { "off" };
    let sc = Scenario::from_toml(&format!(
        "seed = 1\nduration = \"10ms\"\n\
         [link]\nrate = \"unlimited\"\ndelay = \"0\"\n\
         ethtool = [\"ethtool -C left rx-usecs 50 rx-frames 0 cqe-mode-rx {mode}\"]\n\
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
    assert_eq!(deliveries(false), [[50; 5], [110; 5], [170; 5]].concat());
    assert_eq!(deliveries(true), vec![168 + 50; 15]);
}
