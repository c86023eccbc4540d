//! End-to-end tests of `bloatbox run --rootless` as an unprivileged user:
//! ping across the emulated link (RTT at least twice the one-way delay), TCP
//! across the veth backend (checksums complete), the TAP backend where
//! /dev/net/tun is open to the user, the error where it is not, exit codes
//! passed through, and nothing left behind (no /run/netns name, no process
//! in the link's namespaces) after a normal end and after SIGKILL.
//!
//! The tests run as root and drop to uid/gid 65534 (`setpriv`), which is
//! how they exercise the unprivileged path: they are `#[ignore = "needs
//! root"]` and fail when run without root, and as root they fail, saying
//! why, where a tool is missing or where this machine gives the user no
//! user namespace. The TAP tests do not depend on how this machine set
//! /dev/net/tun: each mounts a node of the same device with the mode it
//! needs over it in a private mount namespace.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use bloatbox::harness::unique_name;

use crate::common;
use crate::turn;
use common::{text, BIN};

/// Longest a single run may take in these tests.
const RUN_LIMIT: Duration = Duration::from_secs(30);
/// The unprivileged user the runs use.
const NOBODY: &str = "65534";

/// `setpriv` to uid/gid 65534 with no supplementary groups.
fn as_nobody() -> Command {
    let mut cmd = Command::new("setpriv");
    cmd.args([
        &format!("--reuid={NOBODY}"),
        &format!("--regid={NOBODY}"),
        "--clear-groups",
    ]);
    cmd
}

/// uid 65534 in a private mount namespace where /dev/net/tun is a node of
/// the same device with `mode` (0o666: open to everyone, as on most
/// distributions; 0o600: closed), bind-mounted over it for this command
/// only; `dir` (see `shared_dir`) holds the node.
fn as_nobody_with_tun(dir: &Path, mode: u32) -> Command {
    static NODES: AtomicU32 = AtomicU32::new(0);
    let node = dir.join(format!("tun{}", NODES.fetch_add(1, Ordering::Relaxed)));
    let script = format!(
        "mknod {node} c 10 200 && chmod {mode:o} {node} && mount --bind {node} /dev/net/tun && exec \"$@\"",
        node = node.display()
    );
    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "sh", "-c", &script, "sh", "setpriv"])
        .arg(format!("--reuid={NOBODY}"))
        .arg(format!("--regid={NOBODY}"))
        .arg("--clear-groups");
    cmd
}

/// Why this machine cannot run these tests (a missing tool and what to
/// install, no user namespace for uid 65534), if it cannot; panics unless
/// root (to drop to an unprivileged uid with setpriv).
fn missing(tools: &[&str]) -> Option<String> {
    if let Some(reason) = common::missing(&["setpriv", "unshare", "ip", "mknod", "mount"]) {
        return Some(reason);
    }
    if let Some(reason) = common::missing(tools) {
        return Some(reason);
    }
    let userns = as_nobody()
        .args(["unshare", "-Ur", "true"])
        .stderr(Stdio::piped())
        .output();
    match userns {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "this machine gives uid {NOBODY} no user namespace ({}): allow unprivileged \
             user namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu \
             kernel.apparmor_restrict_unprivileged_userns=0)",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(format!("running setpriv: {e}")),
    }
}

/// Fails unless root, and fails saying why where a tool or the user
/// namespace is missing: no test passes without checking anything.
macro_rules! require_rootless {
    ($($tool:expr),*) => {
        if let Some(reason) = missing(&[$($tool),*]) {
            panic!("this test cannot run here: {reason}");
        }
    };
}

/// A directory the unprivileged runs can write to.
fn shared_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// Waits (bounded) for a child and collects its output.
fn finish(mut child: Child) -> Output {
    let deadline = Instant::now() + RUN_LIMIT;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("the run took longer than {RUN_LIMIT:?}: {}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// `bloatbox run --name NAME ARGS...` as uid 65534.
fn run_as_nobody(name: &str, args: &[&str]) -> Output {
    run_as(as_nobody(), name, args)
}

/// `bloatbox run --name NAME ARGS...` under `nobody` (`as_nobody` or
/// `as_nobody_with_tun`).
fn run_as(mut nobody: Command, name: &str, args: &[&str]) -> Output {
    let child = nobody
        .arg(BIN)
        .args(["run", "--name", name])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting bloatbox run");
    finish(child)
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// Processes whose network namespace is `ns` (`net:[INODE]`).
fn processes_in(ns: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| std::fs::read_link(e.path().join("ns/net")).is_ok_and(|l| l.as_os_str() == ns))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// No name of link `name` exists in /run/netns or among the interfaces
/// of this (the root) namespace.
fn assert_nothing_named(name: &str) {
    for side in ["l", "r"] {
        let n = format!("{name}{side}");
        assert!(!Path::new("/run/netns").join(&n).exists(), "/run/netns/{n}");
        assert!(
            !Path::new("/sys/class/net").join(&n).exists(),
            "interface {n}"
        );
    }
}

/// A ping across a link of 20 ms each way, as uid 65534 with `backend`.
fn ping_across(backend: &str) -> Output {
    ping_across_as(as_nobody(), backend)
}

/// `ping_across` under `nobody` (`as_nobody` or `as_nobody_with_tun`).
fn ping_across_as(nobody: Command, backend: &str) -> Output {
    let name = unique_name();
    let out = run_as(
        nobody,
        &name,
        &[
            &format!("--rootless={backend}"),
            "--set",
            "link.delay=20ms",
            "--left",
            "ping -c 3 -i 0.2 -W 2 $BLOATBOX_PEER_V4 && ping -6 -c 2 -i 0.2 -W 2 $BLOATBOX_PEER_V6",
        ],
    );
    assert_nothing_named(&name);
    out
}

fn assert_delayed_pings(out: &Output) {
    assert_eq!(code(out), 0, "{}", text(out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let min = common::ping_rtt(&stdout)
        .map(|r| r.min)
        .unwrap_or_else(|| panic!("no RTT line: {}", text(out)));
    assert!(
        min >= 40.0,
        "RTT {min} ms under twice the 20 ms delay: {stdout}"
    );
}

#[test]
#[ignore = "needs root"]
fn rootless_veth_ping_crosses_the_delayed_link() {
    require_rootless!("ping");
    let _turn = turn();
    assert_delayed_pings(&ping_across("veth"));
}

/// The TAP backend where /dev/net/tun is open to everyone (mode 0666, as
/// on most distributions): a private mount namespace bind-mounts a 0666
/// node of the same device over /dev/net/tun for this run only.
#[test]
#[ignore = "needs root"]
fn rootless_tap_ping_crosses_the_delayed_link_where_tun_is_open() {
    require_rootless!("ping");
    let _turn = turn();
    let dir = shared_dir();
    let name = unique_name();
    let out = run_as(
        as_nobody_with_tun(dir.path(), 0o666),
        &name,
        &[
            "--rootless=tap",
            "--set",
            "link.delay=20ms",
            "--left",
            "ip -d link show $BLOATBOX_DEV && ping -c 3 -i 0.2 -W 2 $BLOATBOX_PEER_V4",
        ],
    );
    assert_delayed_pings(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(" tun "), "a TAP, not a veth: {stdout}");
    assert!(
        stdout.contains(&format!(
            "qlen {}",
            bloatbox::config::Config::default().tap.txqueuelen
        )),
        "the configured txqueuelen: {stdout}"
    );
    assert_nothing_named(&name);
}

#[test]
#[ignore = "needs root"]
fn rootless_tap_where_tun_is_closed_says_what_to_do() {
    require_rootless!("ping");
    let _turn = turn();
    let dir = shared_dir();
    let closed = || as_nobody_with_tun(dir.path(), 0o600);
    let out = run_as(
        closed(),
        &unique_name(),
        &["--rootless=tap", "--left", "true"],
    );
    assert_eq!(code(&out), 125, "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("/dev/net/tun") && stderr.contains("--rootless=veth"),
        "{stderr}"
    );
    // auto falls back to veth on the same machine.
    assert_delayed_pings(&ping_across_as(closed(), "auto"));
}

#[test]
#[ignore = "needs root"]
fn rootless_run_passes_exit_codes_through() {
    require_rootless!();
    let _turn = turn();
    let out = run_as_nobody(&unique_name(), &["--rootless", "--left", "exit 7"]);
    assert_eq!(code(&out), 7, "{}", text(&out));
    let out = run_as_nobody(
        &unique_name(),
        &["--rootless", "--", "sh", "-c", "kill -TERM $$"],
    );
    assert_eq!(code(&out), 128 + 15, "{}", text(&out));
    let out = run_as_nobody(&unique_name(), &["--rootless", "--", "true"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
}

/// TCP needs complete checksums: the veth ends must not leave them to an
/// offload that never happens across the AF_PACKET sockets.
#[test]
#[ignore = "needs root"]
fn rootless_veth_carries_tcp_both_ways() {
    require_rootless!("iperf3");
    let _turn = turn();
    let out = run_as_nobody(
        &unique_name(),
        &[
            "--rootless=veth",
            "--set",
            "link.rate=20mbit",
            "--right",
            "iperf3 -s -1",
            "--wait-port",
            "5201",
            "--timeout",
            "10s",
            "--left",
            "iperf3 -c $BLOATBOX_PEER_V4 -n 2M -R && echo REVERSE-DONE",
        ],
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("REVERSE-DONE"),
        "{}",
        text(&out)
    );
    let out = run_as_nobody(
        &unique_name(),
        &[
            "--rootless=veth",
            "--right",
            "iperf3 -s -1",
            "--wait-port",
            "5201",
            "--left",
            "iperf3 -c $BLOATBOX_PEER_V4 -n 2M",
        ],
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
}

/// Polls (bounded) until `ns` holds no process.
fn wait_until_empty(ns: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_in(ns);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_ns_file(path: &PathBuf, child: &mut Child) -> String {
    let deadline = Instant::now() + RUN_LIMIT;
    loop {
        if let Ok(s) = std::fs::read_to_string(path) {
            if s.ends_with('\n') {
                return s.trim().to_string();
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended ({status}) before its command started");
        }
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[ignore = "needs root"]
fn rootless_link_disappears_with_the_run_even_after_sigkill() {
    require_rootless!("setsid");
    let _turn = turn();
    let dir = shared_dir();
    // A normal end: a process that left the command's group is killed too.
    let ns_file = dir.path().join("ns-normal");
    let out = run_as_nobody(
        &unique_name(),
        &[
            "--rootless",
            "--left",
            &format!(
                "readlink /proc/self/ns/net > {}; setsid sleep 300 & exit 3",
                ns_file.display()
            ),
        ],
    );
    assert_eq!(code(&out), 3, "{}", text(&out));
    let ns = std::fs::read_to_string(&ns_file)
        .unwrap()
        .trim()
        .to_string();
    assert!(ns.starts_with("net:["), "{ns}");
    assert_eq!(wait_until_empty(&ns), Vec::<String>::new(), "left in {ns}");

    // SIGKILL: the command dies with the run (parent-death signal).
    let name = unique_name();
    let ns_file = dir.path().join("ns-killed");
    let mut child = as_nobody()
        .arg(BIN)
        .args(["run", "--name", &name, "--rootless"])
        // A SIGKILLed run cannot remove its socket: keep it in `dir`.
        .arg(format!(
            "--set=daemon.control_socket={}",
            dir.path().join("k.sock").display()
        ))
        .arg("--left")
        .arg(format!(
            "readlink /proc/self/ns/net > {}.tmp && mv {0}.tmp {0}; exec sleep 300",
            ns_file.display()
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ns = read_ns_file(&ns_file, &mut child);
    assert!(!processes_in(&ns).is_empty(), "the command runs in {ns}");
    assert_nothing_named(&name);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(wait_until_empty(&ns), Vec::<String>::new(), "left in {ns}");
}

#[test]
fn ping_summary_parses() {
    let out = "3 packets transmitted\nrtt min/avg/max/mdev = 40.506/59.164/92.210/23.431 ms\n";
    assert_eq!(
        common::ping_rtt(out),
        Some(common::PingRtt {
            min: 40.506,
            avg: 59.164,
            max: 92.210,
            mdev: 23.431
        })
    );
    assert_eq!(common::ping_rtt("no summary"), None);
}

/// The Rust guard in rootless mode, in this process (root, or uid 0 of a
/// user namespace): no names, commands and closures in the link's
/// namespaces, teardown by descriptor.
#[test]
#[ignore = "needs root"]
fn rootless_link_guard_runs_commands_and_closures_in_its_namespaces() {
    use bloatbox::harness::{Backend, Link, Proto, Side};
    // Root, or uid 0 of a user namespace (this binary run under `unshare -Ur`).
    assert!(
        bloatbox::netns::require_privileges().is_ok(),
        "needs CAP_SYS_ADMIN and CAP_NET_ADMIN: run as root or under `unshare -Ur`"
    );
    if let Some(reason) = common::missing(&["ping"]) {
        panic!("this test cannot run here: {reason}");
    }
    let _turn = turn();
    let link = Link::builder()
        .set("link.delay=5ms")
        .rootless(Backend::Veth)
        .up()
        .unwrap();
    let namespaces = link.rootless().expect("a rootless link");
    assert_eq!(namespaces.backend(), Backend::Veth);
    assert_nothing_named(link.name());
    let peer = link.endpoint(Side::Right).ipv4.addr.to_string();
    let out = link
        .command(Side::Left, "ping")
        .args(["-c", "2", "-i", "0.2", "-W", "2", &peer])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let min = common::expect_ping_rtt(&String::from_utf8_lossy(&out.stdout)).min;
    assert!(min >= 10.0, "RTT {min} ms under twice the 5 ms delay");
    let listener = link
        .run_in(Side::Right, || std::net::TcpListener::bind("0.0.0.0:7001"))
        .unwrap()
        .unwrap();
    assert!(link.is_listening(Side::Right, 7001, Proto::Tcp).unwrap());
    assert!(!link.is_listening(Side::Left, 7001, Proto::Tcp).unwrap());
    let right_ns = format!("net:[{}]", namespaces.side(Side::Right).inode());
    let mut sleeper = link
        .command(Side::Right, "sleep")
        .arg("300")
        .spawn()
        .unwrap();
    assert_eq!(processes_in(&right_ns), vec![sleeper.id().to_string()]);
    drop(listener);
    let stats = link.shutdown().unwrap();
    assert!(
        stats
            .bridge
            .path(bloatbox::dir::Dir::LeftToRight)
            .counters
            .frames_out
            >= 2
    );
    assert!(!sleeper.wait().unwrap().success(), "killed at shutdown");
    assert_eq!(wait_until_empty(&right_ns), Vec::<String>::new());
}

/// Frames out of the left→right path in `bloatbox stats --json` output.
fn left_to_right_frames(out: &Output) -> u64 {
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| v["bridge"]["paths"][0]["counters"]["frames_out"].as_u64())
        .unwrap_or(0)
}

/// The control socket of a rootless run answers `bloatbox stats` and
/// `bloatbox tc` run by the same user from outside its user namespace.
#[test]
#[ignore = "needs root"]
fn rootless_control_socket_answers_from_outside_the_user_namespace() {
    require_rootless!();
    let _turn = turn();
    let dir = shared_dir();
    let socket = dir.path().join("c.sock");
    let config = dir.path().join("c.toml");
    let done = dir.path().join("done");
    std::fs::write(
        &config,
        format!("[daemon]\ncontrol_socket = \"{}\"\n", socket.display()),
    )
    .unwrap();
    let mut run = as_nobody()
        .arg(BIN)
        .args(["run", "--name", &unique_name(), "--rootless"])
        .arg(format!("--set=daemon.control_socket={}", socket.display()))
        .arg("--left")
        .arg(format!(
            "ping -c 2 -i 0.2 -q $BLOATBOX_PEER_V4 >/dev/null; \
             while [ ! -e {} ]; do sleep 0.05; done",
            done.display()
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let client = |sub: &str, args: &[&str]| {
        as_nobody()
            .args([BIN, sub, "-c"])
            .arg(&config)
            .args(args)
            .output()
            .unwrap()
    };
    let deadline = Instant::now() + RUN_LIMIT;
    let stats = loop {
        let out = client("stats", &["--json"]);
        let ok = out.status.success() && left_to_right_frames(&out) >= 2;
        if ok || Instant::now() > deadline || run.try_wait().unwrap().is_some() {
            break out;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let tc = client("tc", &["qdisc", "show", "dev", "left"]);
    std::fs::write(&done, "").unwrap();
    let status = run.wait().unwrap();
    assert!(status.success(), "the run: {status}");
    assert!(stats.status.success(), "{}", text(&stats));
    assert!(
        left_to_right_frames(&stats) >= 2,
        "two pings went left to right: {}",
        text(&stats)
    );
    assert!(tc.status.success(), "{}", text(&tc));
    assert!(
        String::from_utf8_lossy(&tc.stdout).contains("qdisc "),
        "{}",
        text(&tc)
    );
}
