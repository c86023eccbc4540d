//! Root-only live test of the link shape from the configuration: `netem`
//! on one direction of a running `bloatbox up` loses and jitters frames
//! as configured, and the seeds of both directions show in the stats.
//!
//! Root only (`#[ignore = "needs root"]`: a plain `cargo test` reports them
//! as ignored; run without root they fail). Skipped, with the reason
//! printed, where `ip` or `ping` is missing. Names (namespaces, TAPs,
//! addresses, socket) are unique to the test (`common::Daemon`); every exit
//! path stops the daemon and removes what it created (`bloatbox down`, then
//! `ip netns del` as a last resort).

use std::process::Output;

use crate::common;
use crate::turn;
use common::{Daemon, Side};

/// `ping -c COUNT -i 0.01` from the left namespace to the right.
fn ping(d: &Daemon, count: u32) -> Output {
    let count = count.to_string();
    let dst = d.names.v4[1].clone();
    d.exec(
        Side::Left,
        &[
            "ping", "-n", "-q", "-c", &count, "-i", "0.01", "-W", "1", &dst,
        ],
    )
}

/// `ping -q` summary: (transmitted, received, mdev in ms), from
/// `N packets transmitted, M received, ...` and
/// `rtt min/avg/max/mdev = a/b/c/d ms[, pipe N]`.
fn ping_summary(out: &Output) -> (u32, u32, f64) {
    let text = String::from_utf8_lossy(&out.stdout);
    let counts = text
        .lines()
        .find(|l| l.contains("packets transmitted"))
        .unwrap_or_else(|| panic!("no ping summary in {text}"));
    let number = |word: &str| -> u32 {
        let words: Vec<&str> = counts.split_whitespace().collect();
        let at = words.iter().position(|w| w.starts_with(word)).unwrap();
        words[at - 1].parse().unwrap()
    };
    let mdev = common::ping_rtt(&text).map_or(0.0, |r| r.mdev);
    (number("packets"), number("received"), mdev)
}

fn path_stats(stats: &serde_json::Value, i: usize) -> &serde_json::Value {
    &stats["bridge"]["paths"][i]
}

#[test]
#[ignore = "needs root"]
fn live_netem_loss_and_jitter_from_the_config() {
    require!("ping");
    let _turn = turn();

    // 20% loss on left→right only; echo replies come back untouched.
    let d = Daemon::start(
        "rate = \"100mbit\"\ndelay = \"1ms\"\nseed = 1234\n\n[link.left_to_right]\nnetem = \"loss 20%\"\n",
    );
    let (sent, received, _) = ping_summary(&ping(&d, 200));
    let lost = 100.0 * f64::from(sent - received) / f64::from(sent);
    eprintln!("netem loss 20%: sent {sent}, received {received}, lost {lost:.1}%");
    assert_eq!(sent, 200);
    assert!((10.0..=30.0).contains(&lost), "lost {lost:.1}%");
    let stats = d.stats();
    let (l2r, r2l) = (path_stats(&stats, 0), path_stats(&stats, 1));
    assert_eq!(l2r["seed"].as_u64(), Some(1234), "{l2r}");
    assert_eq!(r2l["seed"].as_u64(), Some(1235), "{r2l}");
    let wire_loss = l2r["drops_by_reason"]["wire_loss"].as_u64().unwrap_or(0);
    assert!(wire_loss >= u64::from(sent - received) / 2, "{l2r}");
    assert_eq!(r2l["drops_by_reason"]["wire_loss"].as_u64().unwrap_or(0), 0);
    drop(d);

    // Jitter without reordering: 10 ms ± 5 ms (uniform) on left→right.
    let d = Daemon::start(
        "rate = \"100mbit\"\ndelay = \"1ms\"\n\n[link.left_to_right]\nnetem = \"delay 10ms 5ms\"\n",
    );
    let (sent, received, mdev) = ping_summary(&ping(&d, 200));
    eprintln!("netem delay 10ms 5ms: sent {sent}, received {received}, mdev {mdev} ms");
    assert_eq!(received, sent, "no loss configured");
    assert!(mdev > 1.0, "RTT mdev {mdev} ms");
}
