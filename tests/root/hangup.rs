//! A terminal that goes away under bloatbox, as a killed tmux session or a
//! dropped SSH connection takes it: each command ends the way SIGTERM ends
//! it, within a few seconds, with nothing left behind (namespaces, TAPs,
//! control socket, the processes started in the namespaces) and an exit
//! code and a log line that say why. Two ways to lose it: with the
//! terminal's SIGHUP (the command runs in the pane's session, as typed in a
//! shell), and without (`setsid`, as under nohup or a service manager that
//! kept the descriptors), where only the terminal itself says it hung up
//! (`tui::run::TerminalEvents`); a run with a terminal UI must notice that
//! rather than spin. Root only; every exit path kills the tmux server and
//! removes what is left (the guards' Drop).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common;
use crate::serial;

use common::tmux::Tmux;
use common::{text, wait_until, Daemon, Names, BIN};

/// How long a command may take to tear down after its terminal went away.
const TEARDOWN: Duration = Duration::from_secs(10);

/// `command` under `sh`, with its exit code written to `rc` when it ends,
/// in a session of its own (`setsid`: the terminal's hang-up sends it no
/// SIGHUP) or in the pane's session.
fn shell(command: &str, rc: &Path, own_session: bool) -> String {
    let inner = format!("{command}; echo $? > {}", rc.display());
    if own_session {
        format!("setsid -w sh -c '{inner}'")
    } else {
        format!("sh -c '{inner}'")
    }
}

/// The exit code written to `rc`, waiting for it (bounded).
fn exit_code(rc: &Path) -> i32 {
    assert!(
        wait_until(TEARDOWN, || std::fs::read_to_string(rc)
            .is_ok_and(|s| s.ends_with('\n'))),
        "no exit code in {}",
        rc.display()
    );
    std::fs::read_to_string(rc).unwrap().trim().parse().unwrap()
}

/// Whether a process whose command line contains `pattern` runs.
fn running(pattern: &str) -> bool {
    Command::new("pgrep")
        .args(["-f", pattern])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `bloatbox up` on a terminal (its TUI open) with an iperf3 daemon in the
/// right namespace: the tmux server is killed, and everything goes.
fn up_loses_its_terminal(own_session: bool) {
    let d = Daemon::configure(Names::unique(), "", "rate = \"20mbit\"");
    let rc = d.dir.path().join("rc");
    // In a session of its own the terminal is not its controlling one, so
    // `up` would run headless, as a daemon: --tui asks for the TUI.
    let tui = if own_session { " --tui" } else { "" };
    let command = shell(
        &format!(
            "{BIN} up -c {} --log {}{tui}",
            d.config.display(),
            d.log.display()
        ),
        &rc,
        own_session,
    );
    let tmux = Tmux::start(d.dir.path(), 100, 30, &command);
    assert!(
        wait_until(Duration::from_secs(15), || d
            .cli(&["stats", "--json"])
            .status
            .success()),
        "the daemon never answered: {}",
        d.log_text()
    );
    let server = d.names.v4[1].clone();
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &d.names.ns[1],
            "iperf3",
            "-s",
            "-D",
            "-B",
            &server,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "iperf3 -s -D: {}", text(&out));
    let iperf3 = format!("iperf3 -s -D -B {server}");
    assert!(running(&iperf3));
    tmux.kill();
    let gone = wait_until(TEARDOWN, || {
        d.names.leftovers().is_empty() && !d.socket.exists() && !running(&iperf3)
    });
    assert!(
        gone,
        "left behind: {:?}, socket {}, iperf3 {}: {}",
        d.names.leftovers(),
        d.socket.exists(),
        running(&iperf3),
        d.log_text()
    );
    let log = d.log_text();
    if own_session {
        // No SIGHUP: the TUI saw its terminal hang up, and says so.
        assert_ne!(exit_code(&rc), 0, "{log}");
        assert!(log.contains("the terminal hung up"), "{log}");
    } else {
        assert!(log.contains("shutting down after signal SIGHUP"), "{log}");
    }
}

#[test]
#[ignore = "needs root"]
fn up_whose_tmux_session_is_killed_removes_everything() {
    require!("tmux", "iperf3", "setsid", "pgrep");
    let _serial = serial();
    up_loses_its_terminal(false);
}

#[test]
#[ignore = "needs root"]
fn up_whose_terminal_hangs_up_without_sighup_removes_everything() {
    require!("tmux", "iperf3", "setsid", "pgrep");
    let _serial = serial();
    up_loses_its_terminal(true);
}

/// `bloatbox demo --tui` (the lesson), its output to a file, its terminal
/// gone without a SIGHUP: it ends with an error exit and removes its
/// namespaces, where it used to spin on a core and ignore SIGTERM.
#[test]
#[ignore = "needs root"]
fn the_lesson_whose_terminal_hangs_up_ends_and_removes_its_link() {
    require!("tmux", "setsid");
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let rc = dir.path().join("rc");
    let out = dir.path().join("out");
    let log = dir.path().join("lesson.log");
    let before = netns_names();
    let command = shell(
        &format!(
            "{BIN} demo --tui --flows 1 --duration 20s --warmup 1s --log {} > {} 2>&1",
            log.display(),
            out.display()
        ),
        &rc,
        true,
    );
    let tmux = Tmux::start(dir.path(), 100, 30, &command);
    let ours = new_link(&before, "the lesson");
    tmux.kill();
    let code = exit_code(&rc);
    let output = std::fs::read_to_string(&out).unwrap_or_default();
    assert_ne!(code, 0, "{output}");
    assert!(output.contains("the terminal hung up"), "{output}");
    assert!(
        wait_until(TEARDOWN, || netns_names().iter().all(|n| !ours.contains(n))),
        "left behind: {ours:?}"
    );
}

/// The two namespaces of the link `what` brings up (the named ones that
/// were not there `before`), waiting for them (bounded).
fn new_link(before: &[String], what: &str) -> Vec<String> {
    let mut ours = Vec::new();
    assert!(
        wait_until(Duration::from_secs(20), || {
            ours = netns_names()
                .into_iter()
                .filter(|n| !before.contains(n))
                .collect();
            ours.len() == 2
        }),
        "{what} never brought its link up: {ours:?}"
    );
    ours
}

/// The named network namespaces (`ip netns`).
fn netns_names() -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// `bloatbox test` and `bloatbox run` in a tmux pane that is killed: the
/// terminal's SIGHUP ends each the way SIGTERM does, its namespaces gone
/// and the process with them.
#[test]
#[ignore = "needs root"]
fn test_and_run_whose_tmux_session_is_killed_remove_their_links() {
    require!("tmux", "pgrep");
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let name = bloatbox::harness::unique_name();
    for (what, command) in [
        (
            "test",
            format!(
                "{BIN} test --flows 1 --duration 30s --warmup 1s --json {}",
                json.display()
            ),
        ),
        ("run", format!("{BIN} run --name {name} -- sleep 60")),
    ] {
        let before = netns_names();
        let rc = dir.path().join(format!("rc-{what}"));
        let tmux = Tmux::start(dir.path(), 100, 30, &shell(&command, &rc, false));
        let ours = new_link(&before, what);
        tmux.kill();
        let unique = if what == "test" {
            json.display().to_string()
        } else {
            format!("--name {name}")
        };
        assert!(
            wait_until(TEARDOWN, || netns_names().iter().all(|n| !ours.contains(n))
                && !running(&unique)),
            "{what} left behind: {ours:?} (still running: {})",
            running(&unique)
        );
    }
}

/// `bloatbox top` whose terminal goes away (with its SIGHUP, and without
/// one under `setsid`) just exits: the daemon it watched keeps running and
/// answering.
#[test]
#[ignore = "needs root"]
fn top_whose_terminal_goes_away_exits_and_leaves_its_daemon() {
    require!("tmux", "setsid", "pgrep");
    let _serial = serial();
    let mut d = Daemon::start("rate = \"20mbit\"");
    for own_session in [false, true] {
        let rc = d.dir.path().join(format!("rc-top-{own_session}"));
        let top_log = d.dir.path().join(format!("top-{own_session}.log"));
        let command = shell(
            &format!(
                "{BIN} top -c {} --log {}",
                d.config.display(),
                top_log.display()
            ),
            &rc,
            own_session,
        );
        let tmux = Tmux::start(d.dir.path(), 120, 40, &command);
        let pattern = top_log.display().to_string();
        assert!(
            wait_until(Duration::from_secs(10), || running(&pattern)),
            "top never started"
        );
        tmux.kill();
        assert!(
            wait_until(TEARDOWN, || !running(&pattern)),
            "top (own session: {own_session}) still runs after its terminal went away"
        );
        assert!(
            d.cli(&["stats", "--json"]).status.success(),
            "the daemon stopped with top: {}",
            d.log_text()
        );
        assert_eq!(d.names.leftovers().len(), 2, "the daemon's namespaces stay");
    }
    d.stop();
}
