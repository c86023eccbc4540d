//! Root-only end-to-end tests of `bloatbox up --wire`: the shape
//! containerlab (or Mininet) leaves, made with `ip` commands: namespaces
//! h1 and h2 each with an `eth1` whose veth peer (`hs1`, `hs2`) sits in a
//! third namespace (the "host") without addresses; bloatbox wires `hs1` to
//! `hs2`, and ping and iperf3 between h1 and h2 show its delay, rate and
//! qdisc. Then the bad inputs, each refused with the interface named, and
//! an interface deleted under the running wire.
//!
//! Every namespace name holds the test's own prefix; `Lab`'s Drop kills
//! the processes it started and deletes its namespaces on every exit path,
//! a panic included. Each check also verifies that the wired interfaces
//! are left as found (promiscuity count back to 0, qdisc untouched).

use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::common;
use crate::turn;
use common::{expect_ping_rtt, text, wait_timeout, wait_until, PingRtt};

/// One containerlab-shaped topology of the test's own names.
struct Lab {
    prefix: String,
    children: Vec<Child>,
}

impl Lab {
    /// h1 (10.98.0.1/24 on eth1) ⟷ hs1 | hub | hs2 ⟷ h2 (10.98.0.2/24).
    fn build() -> Lab {
        static N: AtomicU32 = AtomicU32::new(0);
        let prefix = format!(
            "bbw{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let lab = Lab {
            prefix,
            children: Vec::new(),
        };
        let (h1, h2, hub) = (lab.ns("h1"), lab.ns("h2"), lab.ns("hub"));
        for ns in [&h1, &h2, &hub] {
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        for (host, hs, addr) in [(&h1, "hs1", "10.98.0.1/24"), (&h2, "hs2", "10.98.0.2/24")] {
            ip(&[
                "link", "add", "eth1", "netns", host, "type", "veth", "peer", "name", hs, "netns",
                &hub,
            ]);
            ip(&["-n", host, "addr", "add", addr, "dev", "eth1"]);
            ip(&["-n", host, "link", "set", "eth1", "up"]);
            ip(&["-n", &hub, "link", "set", hs, "up"]);
        }
        lab
    }

    fn ns(&self, which: &str) -> String {
        format!("{}{which}", self.prefix)
    }

    /// `HUB:IF`, an end of the wire.
    fn end(&self, ifname: &str) -> String {
        format!("{}:{ifname}", self.ns("hub"))
    }

    fn socket(&self) -> String {
        format!("/run/bloatbox/{}.sock", self.prefix)
    }

    /// `bloatbox up --headless --wire LEFT RIGHT ARGS...`, its output
    /// captured.
    fn up(&self, left: &str, right: &str, args: &[&str]) -> Command {
        let mut cmd = common::bloatbox();
        cmd.args(["up", "--headless", "--wire", left, right])
            .args(["--set", &format!("daemon.control_socket={}", self.socket())])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Starts the wire hs1 ⟷ hs2 and waits until its control socket
    /// answers; the returned index is its place in `children`.
    fn start(&mut self, args: &[&str]) -> usize {
        let child = self
            .up(&self.end("hs1"), &self.end("hs2"), args)
            .spawn()
            .expect("starting bloatbox up --wire");
        self.children.push(child);
        let socket = self.socket();
        let ready = wait_until(Duration::from_secs(10), || {
            common::run_bin(&["stats", "--socket", &socket])
                .status
                .success()
        });
        assert!(ready, "the wire did not answer on {socket}");
        self.children.len() - 1
    }

    /// `ip netns exec NS ARGS...`.
    fn exec(&self, which: &str, args: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.ns(which)])
            .args(args)
            .output()
            .expect("ip netns exec")
    }

    /// The promiscuity count of a hub interface (`ip -d link`).
    fn promiscuity(&self, ifname: &str) -> u64 {
        let out = Command::new("ip")
            .args([
                "-n",
                &self.ns("hub"),
                "-d",
                "-j",
                "link",
                "show",
                "dev",
                ifname,
            ])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v[0]["promiscuity"].as_u64().expect("promiscuity")
    }

    /// The hub interface's qdisc line (`tc qdisc show dev IF`).
    fn qdisc(&self, ifname: &str) -> String {
        let out = Command::new("tc")
            .args(["-n", &self.ns("hub"), "qdisc", "show", "dev", ifname])
            .output()
            .unwrap();
        text(&out)
    }

    /// Sends SIGTERM to child `i` and waits (bounded) for its exit.
    fn stop(&mut self, i: usize) -> (std::process::ExitStatus, String) {
        let child = &mut self.children[i];
        common::signal(child, nix::sys::signal::Signal::SIGTERM);
        let status = wait_timeout(child, Duration::from_secs(10)).expect("the wire did not stop");
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        (status, err)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for which in ["h1", "h2", "hub"] {
            let ns = self.ns(which);
            bloatbox::netns::kill_netns_processes(&ns);
            let _ = Command::new("ip").args(["netns", "del", &ns]).status();
        }
    }
}

/// `ip ARGS...`, which must succeed.
fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        text(&out)
    );
}

#[test]
#[ignore = "needs root"]
fn a_wire_between_existing_veths_carries_its_delay_rate_and_qdisc() {
    let _turn = turn();
    require!("ping", "iperf3", "tc");
    let mut lab = Lab::build();
    assert!(lab.qdisc("hs1").contains("noqueue"), "{}", lab.qdisc("hs1"));
    let i = lab.start(&[
        "--set",
        "link.rate=10mbit",
        "--set",
        "link.delay=20ms",
        "--set",
        "link.qdisc=fq_codel",
    ]);
    assert_eq!(
        lab.promiscuity("hs1"),
        1,
        "the socket holds promiscuous mode"
    );
    let shown = common::run_bin(&["tc", "--socket", &lab.socket(), "qdisc", "show"]);
    assert!(text(&shown).contains("fq_codel"), "{}", text(&shown));

    // Idle RTT: 20 ms each way, and little more (the wire adds no queue;
    // the average allows for wake-ups late on a loaded machine, load 14
    // on 2 cores gave 52 ms).
    let ping = lab.exec("h1", &["ping", "-c", "10", "-i", "0.2", "10.98.0.2"]);
    assert!(ping.status.success(), "{}", text(&ping));
    let PingRtt { min, avg, .. } = expect_ping_rtt(&text(&ping));
    assert!((40.0..45.0).contains(&min), "min RTT {min} ms");
    assert!(avg < 60.0, "avg RTT {avg} ms");

    // Goodput of one TCP flow: the 10 Mbit/s link rate.
    let mut server = Command::new("ip")
        .args([
            "netns",
            "exec",
            &lab.ns("h2"),
            "iperf3",
            "-s",
            "-1",
            "-p",
            "5301",
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let h2 = lab.ns("h2");
    assert!(wait_until(
        Duration::from_secs(5),
        || common::tcp_listening(&h2, 5301)
    ));
    let client = lab.exec(
        "h1",
        &["iperf3", "-c", "10.98.0.2", "-p", "5301", "-t", "4", "-J"],
    );
    let _ = server.wait();
    assert!(client.status.success(), "{}", text(&client));
    let report: serde_json::Value = serde_json::from_slice(&client.stdout).unwrap();
    let bps = report["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap();
    assert!(
        (8.5e6..10.2e6).contains(&bps),
        "goodput {:.2} Mbit/s on a 10 Mbit/s wire",
        bps / 1e6
    );

    let (status, err) = lab.stop(i);
    assert!(status.success(), "{err}");
    assert!(err.contains("left as found"), "{err}");
    assert_eq!(lab.promiscuity("hs1"), 0, "promiscuous mode restored");
    assert_eq!(lab.promiscuity("hs2"), 0, "promiscuous mode restored");
    assert!(lab.qdisc("hs1").contains("noqueue"), "{}", lab.qdisc("hs1"));
    assert!(!std::path::Path::new(&lab.socket()).exists());
}

#[test]
#[ignore = "needs root"]
fn bad_wire_ends_are_refused_naming_the_interface() {
    let _turn = turn();
    require!("tc");
    let mut lab = Lab::build();
    let hub = lab.ns("hub");
    // A third and fourth interface in the hub: a spare veth pair.
    ip(&[
        "-n", &hub, "link", "add", "x1", "type", "veth", "peer", "name", "x2",
    ]);
    ip(&["-n", &hub, "link", "set", "x1", "up"]);
    let refused = |left: &str, right: &str, want: &str| {
        let out = lab.up(left, right, &[]).output().unwrap();
        let err = text(&out);
        assert!(!out.status.success(), "{left} {right} accepted: {err}");
        assert!(err.contains(want), "{left} {right}: {err}");
    };
    let (hs1, hs2) = (lab.end("hs1"), lab.end("hs2"));
    refused(&lab.end("nope"), &hs2, "interface \"nope\" in namespace");
    refused(
        "bbw-no-such-ns:eth1",
        &hs2,
        "\"bbw-no-such-ns\" does not exist",
    );
    refused(&hs1, &hs1, "is both LEFT and RIGHT");
    refused(&hs1, &lab.end("x2"), "interface \"x2\" in namespace");
    refused(&hs1, &lab.end("x2"), "is down");
    refused(&lab.end("lo"), &hs2, "loopback");
    ip(&["-n", &hub, "addr", "add", "10.97.0.1/24", "dev", "x1"]);
    refused(&hs1, &lab.end("x1"), "has addresses (10.97.0.1/24)");
    ip(&["-n", &hub, "addr", "flush", "dev", "x1"]);
    ip(&["-n", &hub, "link", "add", "br0", "type", "bridge"]);
    ip(&["-n", &hub, "link", "set", "x1", "master", "br0"]);
    refused(&hs1, &lab.end("x1"), "enslaved to \"br0\"");
    ip(&["-n", &hub, "link", "set", "x1", "nomaster"]);
    ip(&["-n", &hub, "link", "set", "x1", "mtu", "9000"]);
    refused(&hs1, &lab.end("x1"), "--set tap.mtu=9000");
    ip(&["-n", &hub, "link", "set", "x1", "mtu", "1500"]);

    // hs1 wired by a running bloatbox: a second one may not take it.
    let i = lab.start(&[]);
    let pid = lab.children[i].id();
    let out = common::bloatbox()
        .args(["up", "--headless", "--wire", &lab.end("x1"), &hs1])
        .args([
            "--set",
            "daemon.control_socket=/run/bloatbox/bbw-second.sock",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = text(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "interface \"hs1\" in namespace \"{hub}\" is already wired by another bloatbox (pid {pid})"
        )),
        "{err}"
    );
    assert_eq!(lab.promiscuity("x1"), 0, "the refused run left x1 as found");
    assert_eq!(lab.promiscuity("hs1"), 1, "the first wire still holds hs1");
    let (status, err) = lab.stop(i);
    assert!(status.success(), "{err}");
    assert_eq!(lab.promiscuity("hs1"), 0);
}

#[test]
#[ignore = "needs root"]
fn an_interface_deleted_under_the_wire_ends_the_run_with_an_error() {
    let _turn = turn();
    require!();
    let mut lab = Lab::build();
    let i = lab.start(&[]);
    // A container stopped: its veth goes, and the host side with it.
    ip(&["-n", &lab.ns("h1"), "link", "del", "eth1"]);
    let child = &mut lab.children[i];
    let status = wait_timeout(child, Duration::from_secs(10)).expect("the wire kept running");
    let mut err = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "that port is interface \"hs1\" in namespace \"{}\"",
            lab.ns("hub")
        )),
        "{err}"
    );
    assert_eq!(lab.promiscuity("hs2"), 0, "the other end left as found");
    assert!(!std::path::Path::new(&lab.socket()).exists());
}

#[test]
#[ignore = "needs root"]
fn run_wire_runs_a_command_across_existing_interfaces_and_passes_its_code() {
    let _turn = turn();
    require!("ping");
    let lab = Lab::build();
    let (hs1, hs2) = (lab.end("hs1"), lab.end("hs2"));
    let h1 = lab.ns("h1");
    let run = |cmd: &[&str]| {
        common::bloatbox()
            .args(["run", "--wire", &hs1, &hs2, "--set", "link.delay=20ms"])
            .args(["--set", &format!("daemon.control_socket={}", lab.socket())])
            .arg("--")
            .args(cmd)
            .output()
            .unwrap()
    };
    let ping = run(&[
        "ip",
        "netns",
        "exec",
        &h1,
        "ping",
        "-c",
        "3",
        "-i",
        "0.2",
        "10.98.0.2",
    ]);
    assert!(ping.status.success(), "{}", text(&ping));
    let min = expect_ping_rtt(&text(&ping)).min;
    assert!(min >= 40.0, "min RTT {min} ms through a 20 ms wire");
    let failing = run(&["sh", "-c", "exit 3"]);
    assert_eq!(failing.status.code(), Some(3), "{}", text(&failing));
    assert_eq!(lab.promiscuity("hs1"), 0);
    assert!(!std::path::Path::new(&lab.socket()).exists());
}

/// `(tx_packets, rx_packets)` of interface `ifname` in namespace `ns`.
fn link_packets(ns: &str, ifname: &str) -> (u64, u64) {
    let out = Command::new("ip")
        .args(["-n", ns, "-s", "-j", "link", "show", "dev", ifname])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = |p: &str| {
        v[0].pointer(p)
            .and_then(|x| x.as_u64())
            .unwrap_or_else(|| panic!("no {p} in {v}"))
    };
    (n("/stats64/tx/packets"), n("/stats64/rx/packets"))
}

#[test]
#[ignore = "needs root"]
fn twenty_four_thousand_small_frames_cross_the_batched_wire_each_one_accounted() {
    let _turn = turn();
    require!("ping");
    let mut lab = Lab::build();
    // No IPv6: no neighbour discovery of the hosts' or hub's own among
    // the frames counted.
    for which in ["h1", "h2", "hub"] {
        let off = lab.exec(
            which,
            &["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
        );
        assert!(off.status.success(), "{}", text(&off));
    }
    let i = lab.start(&["--set", "link.rate=unlimited", "--set", "link.delay=0ms"]);
    let warm = lab.exec("h1", &["ping", "-c", "1", "-W", "2", "10.98.0.2"]);
    assert!(warm.status.success(), "{}", text(&warm));
    // The stats are a snapshot published every 100 ms: read them once the
    // link is quiet.
    std::thread::sleep(Duration::from_millis(300));
    let (h1, h2) = (lab.ns("h1"), lab.ns("h2"));
    let stats = || {
        let out = common::run_bin(&["stats", "--socket", &lab.socket(), "--json"]);
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("stats --json")
    };
    let port = |s: &serde_json::Value, side: &str, f: &str| {
        s[side][f]
            .as_u64()
            .unwrap_or_else(|| panic!("no {side}.{f} in {s}"))
    };
    let (s0, a0, b0) = (
        stats(),
        link_packets(&h1, "eth1"),
        link_packets(&h2, "eth1"),
    );
    // 12 000 echo requests of 60-byte frames, up to 64 in flight (bursts
    // for the receive ring and the send batches), and as many replies:
    // 24 000 small frames through the wire, each one answered.
    let ping = lab.exec(
        "h1",
        &[
            "ping",
            "-q",
            "-f",
            "-l",
            "64",
            "-s",
            "16",
            "-c",
            "12000",
            "-w",
            "60",
            "10.98.0.2",
        ],
    );
    // "N packets transmitted, M received". With a deadline (-w) ping
    // sends until -c replies have come and exits then, so up to the
    // preload's 64 requests (or their replies) may still be in flight
    // at its exit: those are not lost, and the port and interface
    // counters below, read once they have landed, must count every one.
    let out = text(&ping);
    let counts: Vec<u64> = out
        .lines()
        .find(|l| l.contains("packets transmitted"))
        .unwrap_or_else(|| panic!("no ping summary: {out}"))
        .split(',')
        .take(2)
        .filter_map(|f| f.split_whitespace().next()?.parse().ok())
        .collect();
    assert!(
        counts.len() == 2 && counts[1] >= 12_000 && counts[0].saturating_sub(counts[1]) <= 64,
        "{out}"
    );
    // Let anything still in flight land before the counters are read.
    std::thread::sleep(Duration::from_millis(500));
    let (s1, a1, b1) = (
        stats(),
        link_packets(&h1, "eth1"),
        link_packets(&h2, "eth1"),
    );
    let (sent_l, got_l) = (a1.0 - a0.0, b1.1 - b0.1);
    let (sent_r, got_r) = (b1.0 - b0.0, a1.1 - a0.1);
    assert!(sent_l >= 12_000 && sent_r >= 12_000, "{sent_l} {sent_r}");
    // Every frame h1 sent was read from hs1 and written to hs2, and the
    // reverse; h2 and h1 received just those.
    let delta = |side: &str, f: &str| port(&s1, side, f) - port(&s0, side, f);
    assert_eq!(delta("left_port", "rx_frames"), sent_l, "read from hs1");
    assert_eq!(delta("right_port", "tx_frames"), sent_l, "written to hs2");
    assert_eq!(delta("right_port", "rx_frames"), sent_r, "read from hs2");
    assert_eq!(delta("left_port", "tx_frames"), sent_r, "written to hs1");
    assert_eq!(got_l, sent_l, "every frame h1 sent reached h2");
    assert_eq!(got_r, sent_r, "every frame h2 sent reached h1");
    for side in ["left_port", "right_port"] {
        for f in ["rx_ring_drops", "rx_errors", "tx_errors", "tx_full_drops"] {
            assert_eq!(port(&s1, side, f), 0, "{side}.{f}: {s1}");
        }
    }
    let (status, err) = lab.stop(i);
    assert!(status.success(), "{err}");
    assert_eq!(lab.promiscuity("hs1"), 0);
}

/// `tap.wire_ring` (true by default) maps each end's receive ring; false
/// opens plain sockets, one frame per system call: the daemon's memory
/// maps hold the two rings (`socket:[INODE]` mappings) or none, and a ping
/// crosses either way.
#[test]
#[ignore = "needs root"]
fn tap_wire_ring_maps_the_receive_rings_or_opens_plain_sockets() {
    let _turn = turn();
    require!("ping");
    for (args, rings) in [(&[][..], 2), (&["--set", "tap.wire_ring=false"][..], 0)] {
        let mut lab = Lab::build();
        let i = lab.start(args);
        let pid = lab.children[i].id();
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).expect("the daemon's maps");
        let mapped = maps.lines().filter(|l| l.contains("socket:[")).count();
        assert_eq!(mapped, rings, "{args:?}: {maps}");
        let ping = lab.exec(
            "h1",
            &["ping", "-c", "3", "-i", "0.2", "-W", "2", "10.98.0.2"],
        );
        assert!(ping.status.success(), "{args:?}: {}", text(&ping));
        let (status, err) = lab.stop(i);
        assert!(status.success(), "{err}");
    }
}
