//! Seed experiment 2 (root only): RX interrupt coalescing by time. With
//! rx-usecs 20 every lone frame waits 20 µs at the receiving NIC, with
//! rx-usecs 1 it waits 1 µs, so an idle request/response round trip (two
//! receives) is about 2 × 19 µs longer. Idle link, UDP_RR and ping, two
//! alternating 1.8 s runs per setting, with the configs' 5 ms delay set to 0 so that UDP_RR completes
//! thousands of transactions and its median is precise; the assertion is on
//! the difference of medians within one run.

use std::path::Path;
use std::time::Duration;

use bloatbox::config::Config;
use bloatbox::experiment::{run_one, skip_reason, Candidate, TestOptions};

#[test]
fn idle_rtt_rises_by_about_the_coalescing_delay_per_receive() {
    if let Some(why) = skip_reason() {
        eprintln!("{why}");
        return;
    }
    let cfg = |name: &str| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("configs/{name}.toml"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("delay = \"5ms\""),
            "{name}: the delay line moved"
        );
        let text = text.replace("delay = \"5ms\"", "delay = \"0\"");
        Candidate {
            name: name.into(),
            config: Config::from_str(&text, name).unwrap(),
        }
    };
    let opts = TestOptions {
        flows: 0,
        duration: Duration::from_millis(1800),
        warmup: Duration::from_millis(300),
        ping_interval: Some(Duration::from_millis(20)),
        udp_rr: true,
        realtime: Some(50),
        ..TestOptions::default()
    };
    // Alternating runs, so that load from other processes on this machine
    // does not fall on one setting only.
    let (c20, c1) = (cfg("rx-usecs-20"), cfg("rx-usecs-1"));
    let mut r20s = Vec::new();
    let mut r1s = Vec::new();
    for round in 0..2 {
        r20s.push(run_one(&c20, 200 + 2 * round, &opts, &mut |_| true).unwrap());
        r1s.push(run_one(&c1, 201 + 2 * round, &opts, &mut |_| true).unwrap());
    }
    let mean = |rs: &[bloatbox::experiment::ConfigResult],
                f: &dyn Fn(&bloatbox::experiment::ConfigResult) -> f64| {
        rs.iter().map(f).sum::<f64>() / rs.len() as f64
    };
    let rr = |r: &bloatbox::experiment::ConfigResult| {
        r.summary
            .udp_rr
            .as_ref()
            .expect("udp_rr ran")
            .latency
            .p50_ms
            * 1e3
    };
    let ping = |r: &bloatbox::experiment::ConfigResult| {
        r.summary.ping.as_ref().expect("ping ran").latency.p50_ms * 1e3
    };
    let (rr20, rr1) = (mean(&r20s, &rr), mean(&r1s, &rr));
    let (ping20, ping1) = (mean(&r20s, &ping), mean(&r1s, &ping));
    let per_receive = (rr20 - rr1) / 2.0;
    eprintln!(
        "UDP_RR p50: rx-usecs 20 {:.1} us, rx-usecs 1 {:.1} us -> {per_receive:.1} us per receive \
         (expected 19); ping p50 {:.1} vs {:.1} us",
        rr20, rr1, ping20, ping1
    );
    assert!(
        (7.0..=60.0).contains(&per_receive),
        "{per_receive:.1} us per receive, expected about 19"
    );
}
