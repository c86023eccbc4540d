//! Root-only faults of the machine under the live daemon, with UDP load
//! left→right at half the link rate (iperf3):
//! - the daemon stopped (SIGSTOP) for 5 s, then continued;
//! - the datapath threads starved for 10 s by a SCHED_FIFO CPU hog on
//!   their CPU (the daemon pinned with `daemon.cpus`).
//!
//! Both check that every frame is accounted for at every boundary once
//! the load ends: each TAP's kernel counters against the daemon's (what the
//! namespace sent = read by the daemon + dropped in the TAP's ring; what
//! the daemon delivered = received by the other namespace + counted port
//! drops), conservation in the daemon, and the frames lost in the TAP's
//! ring (`tx_dropped`, the only place a stopped or starved reader loses
//! frames) counted. After a SIGSTOP the link paces its backlog out at no
//! more than 4/3 of the line rate (measured on the daemon's own clock);
//! under the hog the wake-up lateness is reported, and the link recovers
//! when the hog ends.
//!
//! Root only (`#[ignore = "needs root"]`); skipped, with the reason printed,
//! without `ip`, `iperf3`, `chrt`, `taskset` or `timeout`. Tests run one at
//! a time. Every exit path continues a stopped daemon, kills the hog (a
//! process group, also bounded by `timeout -s KILL`), stops the daemon and
//! removes its namespaces.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;

use crate::common;
use crate::serial;
use common::{text, wait_for, wait_until, Daemon, Names, Side};

/// The link: 20 Mbit/s, 5 ms, pfifo_fast (its 1000 frames hold a 5 s
/// backlog of the ring's size, so the daemon itself drops nothing).
const LINK: &str = "rate = \"20mbit\"\ndelay = \"5ms\"\nqdisc = \"pfifo_fast\"";
const RATE_BPS: f64 = 20e6;

/// UDP load: 10 Mbit/s of 1200-byte datagrams.
const LOAD: &str = "10M";

/// `[daemon]` lines: snapshots every 10 ms (finer pacing samples), and
/// `extra`.
fn start(extra: &str) -> Daemon {
    let daemon = format!("snapshot_hz = 100\n{extra}");
    let mut d = Daemon::configure(Names::unique(), &daemon, LINK);
    d.spawn(None, &[]);
    d.wait_ready();
    d
}

/// Starts an iperf3 server on the right and a UDP client on the left
/// sending for `secs`; returns the client, once frames flow.
fn udp_load(d: &mut Daemon, secs: u32) -> Child {
    let server = d.names.v4[1].clone();
    d.start_iperf3_server();
    let t = secs.to_string();
    let client = d.spawn_in(
        Side::Left,
        &[
            "iperf3", "-c", &server, "-u", "-b", LOAD, "-l", "1200", "-t", &t, "-J",
        ],
    );
    let flowing = wait_until(Duration::from_secs(10), || {
        u(&d.stats(), "/bridge/paths/0/counters/frames_in") > 1000
    });
    assert!(flowing, "no load through the link: {}", d.log_text());
    client
}

fn u(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} missing in {v}"))
}

/// A TAP's kernel counters (`ip -s -j link`), from its namespace's side:
/// tx = sent by the namespace towards the daemon, rx = written by it.
#[derive(Debug, Clone, Copy)]
struct TapCounters {
    tx_packets: u64,
    tx_dropped: u64,
    rx_packets: u64,
    rx_dropped: u64,
}

fn tap_counters(ns: &str, tap: &str) -> TapCounters {
    let out = Command::new("ip")
        .args(["-n", ns, "-s", "-j", "link", "show", "dev", tap])
        .output()
        .unwrap();
    assert!(out.status.success(), "ip -s link: {}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &v[0]["stats64"];
    TapCounters {
        tx_packets: u(s, "/tx/packets"),
        tx_dropped: u(s, "/tx/dropped"),
        rx_packets: u(s, "/rx/packets"),
        rx_dropped: u(s, "/rx/dropped"),
    }
}

/// The daemon's frames, one direction: conserved, and matching the TAP
/// counters on both sides: what the source namespace sent into its TAP
/// that the ring kept was read by the daemon, and what the daemon
/// delivered reached the other namespace or is counted as a port drop.
fn accounted(stats: &Value, dir: usize, from: &TapCounters, to: &TapCounters) -> bool {
    let p = format!("/bridge/paths/{dir}");
    let c = |f: &str| u(stats, &format!("{p}/counters/{f}"));
    let drops = daemon_drops(stats, dir);
    let port = if dir == 0 { "right_port" } else { "left_port" };
    let port_drops =
        u(stats, &format!("/{port}/tx_full_drops")) + u(stats, &format!("/{port}/tx_errors"));
    let held = u(stats, &format!("{p}/held"));
    held == 0
        && c("frames_in") + c("duplicated") == c("frames_out") + drops
        && from.tx_packets == c("frames_in")
        && c("frames_out") == to.rx_packets + to.rx_dropped + port_drops
}

/// The frames the daemon dropped in direction `dir`, all reasons.
/// The UDP datagrams the kernel of namespace `ns` dropped for a full socket
/// receive buffer (`RcvbufErrors` of `/proc/net/snmp`'s `Udp:` lines).
fn udp_rcvbuf_errors(ns: &str) -> u64 {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "cat", "/proc/net/snmp"])
        .output()
        .unwrap();
    let snmp = String::from_utf8_lossy(&out.stdout);
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let (Some(names), Some(values)) = (udp.next(), udp.next()) else {
        panic!("no Udp: lines in /proc/net/snmp of {ns}: {snmp}")
    };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == "RcvbufErrors")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or_else(|| panic!("no RcvbufErrors in {names}"))
}

fn daemon_drops(stats: &Value, dir: usize) -> u64 {
    let drops = &stats["bridge"]["paths"][dir]["counters"]["drops"];
    drops
        .as_array()
        .unwrap_or_else(|| panic!("no drops in {stats}"))
        .iter()
        .map(|d| d.as_u64().unwrap())
        .sum()
}

/// Waits for the link to settle after the load, then checks every frame's
/// fate in both directions; returns the final stats and left TAP counters.
fn assert_every_frame_accounted(d: &Daemon) -> (Value, TapCounters) {
    let taps = || [0, 1].map(|i| tap_counters(&d.names.ns[i], &d.names.tap[i]));
    let settled = wait_for(Duration::from_secs(10), || {
        // Stats first: the TAPs' counters read after it can only be ahead.
        let stats = d.stats();
        let [l, r] = taps();
        (accounted(&stats, 0, &l, &r) && accounted(&stats, 1, &r, &l)).then_some((stats, l))
    });
    settled.unwrap_or_else(|| {
        let [l, r] = taps();
        panic!(
            "frames unaccounted for: left TAP {l:?}, right TAP {r:?}, stats {}",
            d.stats()
        )
    })
}

/// The UDP datagrams the client sent and the server received (iperf3's
/// JSON report).
fn udp_report(client: Child) -> (u64, u64) {
    let out = client.wait_with_output().unwrap();
    assert!(out.status.success(), "iperf3: {}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sum = &report["end"]["sum"];
    let sent = u(sum, "/packets");
    (sent, sent - u(sum, "/lost_packets"))
}

/// Continues a stopped process on drop.
struct Stopped(Pid);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = kill(self.0, Signal::SIGCONT);
    }
}

/// (time of the left→right path's snapshot ns, its bytes out).
fn out_sample(d: &Daemon) -> (u64, u64) {
    let s = d.stats();
    (
        u(&s, "/bridge/paths/0/at"),
        u(&s, "/bridge/paths/0/counters/bytes_out"),
    )
}

/// The highest rate, bits/s, over windows of at least `window` between
/// samples (on the daemon's clock).
fn max_rate(samples: &[(u64, u64)], window: Duration) -> (f64, usize) {
    let w = window.as_nanos() as u64;
    let mut max = 0f64;
    let mut windows = 0;
    for (i, &(t0, b0)) in samples.iter().enumerate() {
        if let Some(&(t1, b1)) = samples[i..].iter().find(|(t, _)| *t >= t0 + w) {
            max = max.max((b1 - b0) as f64 * 8e9 / (t1 - t0) as f64);
            windows += 1;
        }
    }
    (max, windows)
}

#[test]
#[ignore = "needs root"]
fn a_daemon_stopped_for_5_s_under_load_loses_only_what_the_taps_count_and_paces_its_backlog() {
    require!("iperf3");
    let _serial = serial();
    let mut d = start("");
    let client = udp_load(&mut d, 14);
    let before = tap_counters(&d.names.ns[0], &d.names.tap[0]);
    let pid = Pid::from_raw(d.pid());
    let stopped = Stopped(pid);
    kill(pid, Signal::SIGSTOP).unwrap();
    // The fault itself: 5 s stopped, the load still arriving.
    std::thread::sleep(Duration::from_secs(5));
    let during = tap_counters(&d.names.ns[0], &d.names.tap[0]);
    drop(stopped);
    // The ring's backlog and the load, paced: samples of the daemon's
    // own clock and bytes out over 3 s.
    let t0 = Instant::now();
    let mut samples = Vec::new();
    while t0.elapsed() < Duration::from_secs(3) {
        samples.push(out_sample(&d));
    }
    let (sent, received) = udp_report(client);
    let (stats, left) = assert_every_frame_accounted(&d);

    let ring_drops = left.tx_dropped - before.tx_dropped;
    let (peak, windows) = max_rate(&samples, Duration::from_millis(250));
    eprintln!(
        "UDP sent {sent}, received {received}, lost {}; left TAP ring drops during the stop \
         {} (total {ring_drops}); daemon drops {}; wake-up lateness max {} ms; peak rate \
         after the stop {:.2} Mbit/s over {windows} windows of 250 ms ({:.2} of the line rate)",
        sent - received,
        during.tx_dropped - before.tx_dropped,
        stats["bridge"]["paths"][0]["drops_by_reason"],
        u(&stats, "/lateness/max_ns") / 1_000_000,
        peak / 1e6,
        peak / RATE_BPS
    );
    assert!(
        during.tx_dropped > before.tx_dropped,
        "the stopped daemon's TAP ring lost nothing: was the load flowing?"
    );
    // Every datagram lost is a counted drop (the ring's or the daemon's);
    // the counted ones beyond it are other frames (ARP, ND) of the stop.
    assert!(sent - received <= ring_drops + daemon_drops(&stats, 0));
    assert!(windows >= 5, "only {windows} pacing windows: {samples:?}");
    assert!(
        peak <= RATE_BPS * 4.0 / 3.0,
        "burst after the stop: {:.2} Mbit/s on a 20 Mbit/s link: {samples:?}",
        peak / 1e6
    );
}

/// A SCHED_FIFO busy loop on CPU `cpu` for at most `secs` (`timeout -s
/// KILL`, in its own process group, killed whole on drop).
struct Hog(Child);

impl Hog {
    fn start(cpu: usize, secs: u32) -> Hog {
        let child = Command::new("timeout")
            .args(["-s", "KILL", &secs.to_string()])
            .args(["chrt", "-f", "50", "taskset", "-c", &cpu.to_string()])
            .args(["sh", "-c", "while :; do :; done"])
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        Hog(child)
    }

    /// Waits for the bound to end it.
    fn wait(mut self) {
        let _ = self.0.wait();
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(-(self.0.id() as i32)), Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

#[test]
#[ignore = "needs root"]
fn a_datapath_starved_by_a_fifo_hog_reports_lateness_loses_nothing_silently_and_recovers() {
    require!("iperf3", "chrt", "taskset", "timeout");
    let _serial = serial();
    let cpu = 1;
    let mut d = start(&format!("cpus = [{cpu}]"));
    let client = udp_load(&mut d, 18);
    let lateness_before = u(&d.stats(), "/lateness/max_ns");
    let dropped_before = tap_counters(&d.names.ns[0], &d.names.tap[0]).tx_dropped;
    // The fault itself: 10 s of a higher-priority busy loop on the
    // datapath's CPU (the kernel's RT throttling leaves it about 5 %).
    Hog::start(cpu, 10).wait();
    let ended = Instant::now();
    // Recovered: within 5 s of the hog's end, a second in which frames
    // flow and the ring loses none.
    let ring = || tap_counters(&d.names.ns[0], &d.names.tap[0]).tx_dropped;
    let frames_out = || u(&d.stats(), "/bridge/paths/0/counters/frames_out");
    let recovered = wait_for(Duration::from_secs(5), || {
        let (dropped, out) = (ring(), frames_out());
        std::thread::sleep(Duration::from_secs(1));
        (ring() == dropped && frames_out() > out).then(|| ended.elapsed())
    });
    let (sent, received) = udp_report(client);
    let (stats, left) = assert_every_frame_accounted(&d);
    let lateness = u(&stats, "/lateness/max_ns");
    let ring_drops = left.tx_dropped - dropped_before;
    let rcvbuf = udp_rcvbuf_errors(&d.names.ns[1]);
    eprintln!(
        "UDP sent {sent}, received {received}, lost {}; left TAP ring drops {ring_drops}; \
         receiver's UDP receive-buffer drops {rcvbuf}; wake-up lateness max {} ms before the \
         hog, {} ms after; recovered {recovered:?} after the hog",
        sent - received,
        lateness_before / 1_000_000,
        lateness / 1_000_000,
    );
    assert!(
        lateness >= 100_000_000 && lateness > lateness_before,
        "the starvation is not in the reported lateness: {lateness} ns"
    );
    assert!(
        ring_drops > 0,
        "the starved datapath's TAP ring lost nothing"
    );
    // Every datagram lost is counted: by the sending TAP's ring, by the
    // daemon, or by the receiving host's kernel when the backlog released
    // after the hog overran the receiver's socket buffer (the receiver
    // shares the other CPU with the sender).
    assert!(sent - received <= ring_drops + daemon_drops(&stats, 0) + rcvbuf);
    assert!(
        recovered.is_some(),
        "the link did not recover within 5 s of the hog's end"
    );
}
