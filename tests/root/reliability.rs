//! Root-only reliability and security tests of the live daemon (the
//! `bloatbox` binary with a per-test configuration: unique namespace, TAP
//! and socket names):
//! - capabilities per thread after set-up (/proc/PID/task/TID/status) while
//!   frames still cross;
//! - a TAP deleted, a namespace deleted (also one a process still holds),
//!   a TAP set down, under the running daemon;
//! - another user against the control socket: refused by the file mode,
//!   and, with the mode opened up, by the SO_PEERCRED check;
//! - a copy of the binary with file capabilities (`setcap`) run as user
//!   nobody: `up`, traffic, `down` after SIGKILL.
//!
//! Root only (`#[ignore = "needs root"]`: a plain `cargo test` reports them
//! as ignored; run without root they fail). Skipped, with the reason
//! printed, without /dev/net/tun, `ip`, `ping` or `setcap`. Tests run one at
//! a time; every exit path stops the daemon and removes what the test
//! created.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use crate::common;
use crate::serial;
use common::{text, wait_until, Daemon, Names, BIN};

/// The unprivileged user the tests act as.
const NOBODY: u32 = 65534;

/// How long the daemon may take to notice a fault and exit.
const EXIT_LIMIT: Duration = Duration::from_secs(5);

/// Capability bits (linux/capability.h).
const CAP_DAC_OVERRIDE: u64 = 1 << 1;
const CAP_NET_ADMIN: u64 = 1 << 12;
const CAP_KILL: u64 = 1 << 5;
const CAP_SYS_ADMIN: u64 = 1 << 21;
const CAP_SYS_PTRACE: u64 = 1 << 19;
/// `privilege::TEARDOWN`: `ip netns del`, and ending the processes still
/// in the namespaces before it.
const TEARDOWN_MASK: u64 =
    CAP_DAC_OVERRIDE | CAP_NET_ADMIN | CAP_SYS_ADMIN | CAP_SYS_PTRACE | CAP_KILL;

/// How a daemon is started.
struct Launch {
    /// The binary (a setcap'd copy, or the test build).
    bin: PathBuf,
    /// Run as this uid/gid instead of root.
    user: Option<u32>,
}

impl Launch {
    fn root() -> Launch {
        Launch {
            bin: BIN.into(),
            user: None,
        }
    }
}

/// Starts the daemon (`prepare`); returns once its stats answer.
fn start(launch: Launch) -> Daemon {
    let mut d = prepare(launch.bin);
    d.spawn(launch.user, &[]);
    d.wait_ready();
    d
}

/// A daemon's configuration on unique names, running `bin`, that user
/// nobody can read, in a tempdir nobody can enter, with a socket
/// directory that belongs to nobody (so that a daemon run as nobody can
/// create its socket there).
fn prepare(bin: PathBuf) -> Daemon {
    let mut d = Daemon::configure(Names::unique(), "", "rate = \"100mbit\"\ndelay = \"1ms\"");
    std::fs::set_permissions(d.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&d.config, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = d.socket.parent().unwrap();
    std::os::unix::fs::chown(run, Some(NOBODY), Some(NOBODY)).unwrap();
    d.bin = bin;
    d
}

/// What of this test's names still exists, its control socket included.
fn leftovers(d: &Daemon) -> Vec<String> {
    let mut found = d.leftovers();
    if d.socket.exists() {
        found.push(d.socket.display().to_string());
    }
    found
}

/// Two pings from side `from` (0 left, 1 right) to the other side.
fn ping(d: &Daemon, from: usize) -> Output {
    Command::new("ip")
        .args(["netns", "exec", &d.names.ns[from], "ping", "-c", "2"])
        .args(["-i", "0.2", "-W", "2", &d.names.v4[1 - from]])
        .output()
        .unwrap()
}

/// The effective capabilities and no_new_privs of each of the daemon's
/// threads, by thread name.
fn thread_caps(d: &Daemon) -> Vec<(String, u64, u64, bool)> {
    let mut out = Vec::new();
    let task = format!("/proc/{}/task", d.pid());
    for entry in std::fs::read_dir(&task).unwrap() {
        let status =
            std::fs::read_to_string(entry.unwrap().path().join("status")).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        let hex = |name: &str| u64::from_str_radix(&field(name), 16).unwrap_or(u64::MAX);
        out.push((
            field("Name:"),
            hex("CapEff:"),
            hex("CapBnd:"),
            field("NoNewPrivs:") == "1",
        ));
    }
    out
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(out.status.success(), "ip {args:?}: {}", text(&out));
}

/// Checks the per-thread capabilities of a running daemon: datapath and
/// control threads none (and no_new_privs), the main thread at most
/// `TEARDOWN_MASK`, also in its bounding set when it started as root.
fn assert_threads_dropped(d: &Daemon, as_root: bool) {
    let threads = thread_caps(d);
    let names: Vec<&str> = threads.iter().map(|t| t.0.as_str()).collect();
    assert!(names.contains(&"bloatbox-datapa"), "{names:?}");
    assert!(names.contains(&"bloatbox-contro"), "{names:?}");
    for (name, eff, bnd, nnp) in &threads {
        if name.starts_with("bloatbox-") {
            assert_eq!(*eff, 0, "{name}: CapEff {eff:#x}");
            assert!(nnp, "{name}: no_new_privs not set");
            if as_root {
                assert_eq!(*bnd, 0, "{name}: CapBnd {bnd:#x}");
            }
        } else {
            assert_eq!(
                eff & !TEARDOWN_MASK,
                0,
                "main thread {name}: CapEff {eff:#x}"
            );
            assert_eq!(
                eff & (CAP_NET_ADMIN | CAP_SYS_ADMIN),
                CAP_NET_ADMIN | CAP_SYS_ADMIN
            );
            if as_root {
                assert_eq!(bnd & !TEARDOWN_MASK, 0, "main thread: CapBnd {bnd:#x}");
            }
        }
        eprintln!("thread {name}: CapEff {eff:#x} CapBnd {bnd:#x} NoNewPrivs {nnp}");
    }
}

#[test]
#[ignore = "needs root"]
fn threads_drop_their_capabilities_after_set_up_and_frames_still_cross() {
    require!("ip", "ping");
    let _serial = serial();
    let mut d = start(Launch::root());
    // A client connection held open: its thread exists while we look.
    let mut client = bloatbox::control::Client::connect(&d.socket).unwrap();
    client.call_ok(&bloatbox::control::Request::Stats).unwrap();
    let clients = thread_caps(&d)
        .iter()
        .filter(|t| t.0 == "bloatbox-contro")
        .count();
    assert!(clients >= 2, "accept thread and a client thread: {clients}");
    assert_threads_dropped(&d, true);
    for from in [0, 1] {
        let out = ping(&d, from);
        assert!(out.status.success(), "{}", text(&out));
    }
    drop(client);
    assert!(d.stop_within(EXIT_LIMIT).success(), "{}", d.log_text());
    assert_eq!(leftovers(&d), Vec::<String>::new(), "{}", d.log_text());
}

/// Runs `fault` on a running daemon and checks that it exits on its own,
/// non-zero, with an error line containing every one of `expect` and none
/// of `reject`, and leaves nothing behind.
fn assert_fault_ends_the_daemon(
    what: &str,
    fault: impl FnOnce(&Daemon),
    expect: &[&str],
    reject: &[&str],
) {
    let mut d = start(Launch::root());
    fault(&d);
    let (status, took) = d.wait_exit(EXIT_LIMIT);
    let log = d.log_text();
    eprintln!("{what}: exit {status} after {took:?}");
    assert!(!status.success(), "{what}: exit {status}: {log}");
    let error = log
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("{what}: no error line: {log}"));
    for e in expect {
        assert!(error.contains(e), "{what}: {e:?} not in {error:?}");
    }
    for r in reject {
        assert!(!error.contains(r), "{what}: {r:?} in {error:?}");
    }
    assert!(!log.contains("WARN"), "{what}: a warning at exit: {log}");
    assert!(!log.contains("panicked"), "{log}");
    assert_eq!(leftovers(&d), Vec::<String>::new(), "{what}: {log}");
    let down = d.cli(&["down"]);
    assert!(text(&down).contains("nothing to remove"), "{}", text(&down));
}

#[test]
#[ignore = "needs root"]
fn a_tap_deleted_under_the_daemon_ends_it_with_a_clear_error_and_nothing_left() {
    require!("ip");
    let _serial = serial();
    for (side, port) in ["left", "right"].into_iter().enumerate() {
        assert_fault_ends_the_daemon(
            &format!("TAP of the {port} side deleted"),
            |d| ip(&["-n", &d.names.ns[side], "link", "del", &d.names.tap[side]]),
            &[
                &format!("the {port} port failed"),
                "device is gone",
                "TAP \"bt",
            ],
            &["was deleted under the daemon"],
        );
    }
}

#[test]
#[ignore = "needs root"]
fn a_namespace_deleted_under_the_daemon_ends_it_with_a_clear_error_and_nothing_left() {
    require!("ip");
    let _serial = serial();
    assert_fault_ends_the_daemon(
        "right namespace deleted",
        |d| ip(&["netns", "del", &d.names.ns[1]]),
        &["the right port failed", "device is gone", "-r\""],
        &[],
    );
}

#[test]
#[ignore = "needs root"]
fn a_namespace_deleted_while_a_process_holds_it_still_ends_the_daemon() {
    require!("ip", "sleep");
    let _serial = serial();
    let mut holder: Option<Child> = None;
    let holder_ref = &mut holder;
    assert_fault_ends_the_daemon(
        "left namespace deleted while a process runs in it",
        |d| {
            *holder_ref = Some(
                Command::new("ip")
                    .args(["netns", "exec", &d.names.ns[0], "sleep", "30"])
                    .spawn()
                    .unwrap(),
            );
            // The sleep runs in the namespace before the name goes.
            let inside = wait_until(Duration::from_secs(10), || {
                let pids = Command::new("ip")
                    .args(["netns", "pids", &d.names.ns[0]])
                    .output()
                    .unwrap();
                !String::from_utf8_lossy(&pids.stdout).trim().is_empty()
            });
            assert!(inside, "the holder never entered the namespace");
            ip(&["netns", "del", &d.names.ns[0]]);
        },
        &["network namespace", "-l\" was deleted under the daemon"],
        // The process keeps the namespace, and with it the TAP, alive: the
        // daemon notices the name gone, not a failing port.
        &["port failed"],
    );
    if let Some(mut h) = holder {
        let _ = h.kill();
        let _ = h.wait();
    }
}

#[test]
#[ignore = "needs root"]
fn a_tap_set_down_loses_frames_counted_and_the_daemon_carries_on() {
    require!("ip", "ping");
    let _serial = serial();
    let mut d = start(Launch::root());
    assert!(ping(&d, 0).status.success());
    ip(&["-n", &d.names.ns[1], "link", "set", &d.names.tap[1], "down"]);
    assert!(
        !ping(&d, 0).status.success(),
        "ping through a TAP that is down"
    );
    let stats: serde_json::Value =
        serde_json::from_slice(&d.cli(&["stats", "--json"]).stdout).unwrap();
    let tx_errors = stats["right_port"]["tx_errors"].as_u64().unwrap();
    assert!(tx_errors >= 1, "{}", stats["right_port"]);
    ip(&["-n", &d.names.ns[1], "link", "set", &d.names.tap[1], "up"]);
    // IPv4 neighbours may need a moment after the link comes back.
    let t0 = Instant::now();
    while !ping(&d, 0).status.success() {
        assert!(t0.elapsed() < Duration::from_secs(10), "{}", d.log_text());
    }
    assert!(d.stop_within(EXIT_LIMIT).success(), "{}", d.log_text());
    assert_eq!(leftovers(&d), Vec::<String>::new());
}

#[test]
#[ignore = "needs root"]
fn another_user_is_refused_by_the_socket_mode_and_by_peer_credentials() {
    require!("ip");
    let _serial = serial();
    let mut d = start(Launch::root());
    let meta = std::fs::metadata(&d.socket).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.uid(), 0, "owned by the daemon's user (root)");
    let before = d.cli(&["tc", "qdisc", "show", "dev", "left"]);
    assert!(before.status.success(), "{}", text(&before));

    // The file mode keeps nobody out.
    let out = d.cli_as(Some(NOBODY), &["stats"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("ermission denied"), "{}", text(&out));

    // With the mode opened up by mistake, SO_PEERCRED still refuses, for
    // reads and changes alike.
    std::fs::set_permissions(&d.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    for args in [
        &["stats"][..],
        &["tc", "qdisc", "replace", "dev", "left", "root", "pfifo"],
        &["set", "left.rate=1mbit"],
    ] {
        let out = d.cli_as(Some(NOBODY), args);
        assert!(!out.status.success(), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains("only the daemon's user or root may use this socket"),
            "{args:?}: {}",
            text(&out)
        );
    }
    // The daemon still runs, serves its owner, and nothing changed.
    assert!(d.running());
    let after = d.cli(&["tc", "qdisc", "show", "dev", "left"]);
    assert_eq!(text(&after), text(&before));
    assert!(d.cli(&["stats"]).status.success());
    assert!(d.stop_within(EXIT_LIMIT).success(), "{}", d.log_text());
    assert_eq!(leftovers(&d), Vec::<String>::new());
}

/// A copy of the test binary in `dir` with `caps` as file capabilities.
fn setcap_copy(dir: &Path, caps: &str) -> PathBuf {
    let bin = dir.join("bloatbox");
    std::fs::copy(BIN, &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new("setcap")
        .arg(format!("{caps}+ep"))
        .arg(&bin)
        .output()
        .unwrap();
    assert!(out.status.success(), "setcap: {}", text(&out));
    bin
}

#[test]
#[ignore = "needs root"]
fn a_setcap_binary_runs_up_and_down_as_nobody() {
    require!("ip", "ping", "setcap");
    let _serial = serial();
    let bins = tempfile::tempdir().unwrap();
    std::fs::set_permissions(bins.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = setcap_copy(bins.path(), "cap_net_admin,cap_sys_admin,cap_dac_override");

    // up, traffic, per-thread capabilities, SIGTERM: nothing left.
    let mut d = start(Launch {
        bin: bin.clone(),
        user: Some(NOBODY),
    });
    let status = std::fs::read_to_string(format!("/proc/{}/status", d.pid())).unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("Uid:") && l.contains("65534")),
        "{status}"
    );
    assert_eq!(std::fs::metadata(&d.socket).unwrap().uid(), NOBODY);
    assert_threads_dropped(&d, false);
    for from in [0, 1] {
        let out = ping(&d, from);
        assert!(out.status.success(), "{}", text(&out));
    }
    // Its own user is served.
    let out = d.cli_as(Some(NOBODY), &["stats"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(d.stop_within(EXIT_LIMIT).success(), "{}", d.log_text());
    assert_eq!(leftovers(&d), Vec::<String>::new(), "{}", d.log_text());

    // SIGKILL, then `down` as nobody removes what was left.
    d.spawn(Some(NOBODY), &[]);
    d.wait_ready();
    d.kill9();
    assert_eq!(
        leftovers(&d).len(),
        3,
        "namespaces and socket outlive SIGKILL"
    );
    let down = d.cli_as(Some(NOBODY), &["down"]);
    assert!(down.status.success(), "{}", text(&down));
    assert_eq!(leftovers(&d), Vec::<String>::new(), "{}", text(&down));
}

#[test]
#[ignore = "needs root"]
fn a_setcap_binary_without_dac_override_fails_clearly_and_leaves_nothing() {
    require!("ip", "setcap");
    let _serial = serial();
    let bins = tempfile::tempdir().unwrap();
    std::fs::set_permissions(bins.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = setcap_copy(bins.path(), "cap_net_admin,cap_sys_admin");
    let mut d = prepare(bin);
    d.spawn(Some(NOBODY), &[]);
    let (status, _) = d.wait_exit(EXIT_LIMIT);
    let log = d.log_text();
    assert!(!status.success(), "{log}");
    assert!(log.contains("CAP_DAC_OVERRIDE"), "{log}");
    assert!(log.contains("/run/netns"), "{log}");
    assert_eq!(leftovers(&d), Vec::<String>::new(), "{log}");
}
