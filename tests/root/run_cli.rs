//! Root-only end-to-end tests of `bloatbox run`: parallel runs, exit codes,
//! teardown after a failing command and after SIGINT, readiness by port and
//! by command, and the JSON report.
//!
//! Root only (`#[ignore = "needs root"]`: a plain `cargo test` reports them
//! as ignored; run without root they fail). Skipped, with the reason
//! printed, where a tool is missing. Each run gets a unique `--name`; every
//! test is bounded (a run that overstays is SIGKILLed and its namespaces
//! removed) and checks that no namespace, TAP or process of its run is left.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use bloatbox::harness::unique_name;

use crate::common;
use crate::turn;
use common::{run_bin, text};

/// Longest a single `bloatbox run` may take in these tests.
const RUN_LIMIT: Duration = Duration::from_secs(30);

/// One `bloatbox run` under a unique name; cleans up after itself even if
/// the test fails.
struct Run {
    name: String,
    child: Option<Child>,
}

impl Run {
    fn start(args: &[&str]) -> Run {
        Run::start_to(args, Stdio::piped(), Stdio::piped())
    }

    /// `start` with stdout and stderr sent elsewhere (e.g. files, for more
    /// output than a pipe holds unread).
    fn start_to(args: &[&str], stdout: Stdio, stderr: Stdio) -> Run {
        let name = unique_name();
        let child = common::bloatbox()
            .arg("run")
            .args(["--name", &name])
            .args(args)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .expect("starting bloatbox run");
        Run {
            name,
            child: Some(child),
        }
    }

    /// Waits (bounded) for the run to end.
    fn finish(mut self) -> (Output, String) {
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + RUN_LIMIT;
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("bloatbox run {} took longer than {RUN_LIMIT:?}", self.name);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        (out, self.name.clone())
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    /// Waits (bounded) for the process to end and reaps it; the names are
    /// still cleaned up on drop.
    fn reap(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + RUN_LIMIT;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "{} never ended", self.name);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for side in ["l", "r"] {
            let ns = format!("{}{side}", self.name);
            if Path::new("/run/netns").join(&ns).exists() {
                // A SIGKILLed run leaves its commands: kill them too.
                if let Ok(out) = Command::new("ip").args(["netns", "pids", &ns]).output() {
                    for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                        let _ = Command::new("kill").args(["-KILL", pid]).status();
                    }
                }
                let _ = Command::new("ip").args(["netns", "del", &ns]).status();
            }
        }
    }
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// `sleep` processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.starts_with("sleep ") && cmdline.contains(marker) {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

/// No `sleep` of these markers runs.
fn assert_no_processes(markers: &[&str]) {
    for m in markers {
        assert!(processes_with(m).is_empty(), "{:?}", processes_with(m));
    }
}

/// Nothing of run `name` is left: namespaces, TAPs, control socket, run
/// record.
fn assert_gone(name: &str) {
    for side in ["l", "r"] {
        let dev = format!("{name}{side}");
        assert!(
            !Path::new("/run/netns").join(&dev).exists(),
            "namespace {dev} left"
        );
        assert!(
            !Path::new("/sys/class/net").join(&dev).exists(),
            "TAP {dev} left in the root namespace"
        );
    }
    let sock = format!("/run/bloatbox/{name}.sock");
    assert!(!Path::new(&sock).exists(), "{sock} left");
    let record = format!("/run/bloatbox/runs/{name}.json");
    assert!(!Path::new(&record).exists(), "{record} left");
}

/// A `sleep` length no other test uses, to find its processes by.
fn marker_seconds() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}.{}{}", 900 + n, std::process::id(), n)
}

#[test]
#[ignore = "needs root"]
fn two_runs_in_parallel_each_ping_their_own_peer() {
    require!("ping");
    let _turn = turn();
    let ping = "ping -c 3 -i 0.2 -W 2 $BLOATBOX_PEER_V4";
    let a = Run::start(&[
        "--realtime",
        "10",
        "--set",
        "link.delay=10ms",
        "--",
        "sh",
        "-c",
        ping,
    ]);
    let b = Run::start(&["--set", "link.delay=40ms", "--", "sh", "-c", ping]);
    let (oa, na) = a.finish();
    let (ob, nb) = b.finish();
    assert_ne!(na, nb);
    assert_eq!(code(&oa), 0, "{}", text(&oa));
    assert_eq!(code(&ob), 0, "{}", text(&ob));
    // Each run pinged through its own link: the RTT is at least twice its
    // own one-way delay.
    let (ra, rb) = (
        common::expect_ping_rtt(&String::from_utf8_lossy(&oa.stdout)).min,
        common::expect_ping_rtt(&String::from_utf8_lossy(&ob.stdout)).min,
    );
    assert!((20.0..80.0).contains(&ra), "10 ms link: RTT {ra} ms");
    assert!(rb >= 80.0, "40 ms link: RTT {rb} ms");
    assert_gone(&na);
    assert_gone(&nb);
}

#[test]
#[ignore = "needs root"]
fn the_left_commands_exit_code_is_passed_through() {
    require!();
    let _turn = turn();
    let (out, name) = Run::start(&["--", "sh", "-c", "exit 7"]).finish();
    assert_eq!(code(&out), 7, "{}", text(&out));
    assert_gone(&name);
    let (out, name) = Run::start(&["--left", "kill -TERM $$"]).finish();
    assert_eq!(code(&out), 128 + 15, "killed by SIGTERM: {}", text(&out));
    assert_gone(&name);
    let (out, _) = Run::start(&["--set", "link.rate=fast", "--", "true"]).finish();
    assert_eq!(code(&out), 125, "a bad --set: {}", text(&out));
    assert!(text(&out).contains("link.rate"), "{}", text(&out));
    // A left command that does not exist, or cannot be executed: as a
    // shell (and `bloatbox exec`) says, and the link is gone all the same.
    let (out, name) = Run::start(&["--", "/nonexistent/command"]).finish();
    assert_eq!(code(&out), 127, "{}", text(&out));
    assert!(
        text(&out).contains("/nonexistent/command"),
        "{}",
        text(&out)
    );
    assert_gone(&name);
    let (out, name) = Run::start(&["--", "/etc"]).finish();
    assert_eq!(code(&out), 126, "a directory: {}", text(&out));
    assert_gone(&name);
}

#[test]
#[ignore = "needs root"]
fn a_failing_command_leaves_nothing_behind() {
    require!();
    let _turn = turn();
    let right = marker_seconds();
    let report = tempfile::NamedTempFile::new().unwrap();
    let (out, name) = Run::start(&[
        "--right",
        &format!("sleep {right}"),
        "--left",
        "sleep 0.2; exit 3",
        "--report",
        report.path().to_str().unwrap(),
    ])
    .finish();
    assert_eq!(code(&out), 3, "{}", text(&out));
    assert_gone(&name);
    assert!(
        processes_with(&right).is_empty(),
        "{:?}",
        processes_with(&right)
    );
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report.path()).unwrap()).unwrap();
    assert_eq!(r["exit_code"], 3);
    assert_eq!(r["left"]["exit_code"], 3);
    assert_eq!(
        r["right"]["killed_by_bloatbox"], false,
        "it ended on SIGTERM"
    );
    assert_eq!(r["right"]["signal"], 15, "{r}");
    assert_eq!(
        r["right"]["stopped_by_bloatbox"], true,
        "the teardown's SIGTERM ended it: {r}"
    );
    assert_eq!(
        r["left"]["stopped_by_bloatbox"], false,
        "it exited by itself: {r}"
    );
}

#[test]
#[ignore = "needs root"]
fn sigint_and_sigterm_tear_everything_down() {
    require!();
    let _turn = turn();
    use nix::sys::signal::Signal;
    for sig in [Signal::SIGINT, Signal::SIGTERM] {
        let (right, left) = (marker_seconds(), marker_seconds());
        let run = Run::start(&[
            "--right",
            &format!("sleep {right} & sleep {right}"),
            "--",
            "sleep",
            &left,
        ]);
        // Both sides are up: the left sleep and the right shell's two.
        let deadline = Instant::now() + Duration::from_secs(10);
        while processes_with(&left).is_empty() || processes_with(&right).len() < 2 {
            assert!(Instant::now() < deadline, "the commands never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(run.pid()), sig).unwrap();
        let started = Instant::now();
        let (out, name) = run.finish();
        assert_eq!(code(&out), 128 + sig as i32, "{sig}: {}", text(&out));
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "teardown took {:?}",
            started.elapsed()
        );
        assert_gone(&name);
        assert_no_processes(&[&right, &left]);
    }
}

#[test]
#[ignore = "needs root"]
fn wait_port_waits_for_the_server_and_the_report_has_the_link() {
    require!("iperf3");
    let _turn = turn();
    let report = tempfile::NamedTempFile::new().unwrap();
    // The server starts listening only after 0.7 s: a client started at once
    // would be refused.
    let (out, name) = Run::start(&[
        "--set",
        "link.rate=20mbit",
        "--right",
        "sleep 0.7; exec iperf3 -s -p 5201 -1",
        "--wait-port",
        "5201",
        "--timeout",
        "10s",
        "--report",
        report.path().to_str().unwrap(),
        "--",
        "sh",
        "-c",
        // The server (-1) ends by itself after the test, but may still be
        // finishing when the client is done; on a loaded machine the run's
        // teardown could kill it first. The left side gives it half a
        // second.
        "iperf3 -c $BLOATBOX_PEER_V4 -p 5201 -t 1 && sleep 0.5",
    ])
    .finish();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_gone(&name);
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report.path()).unwrap()).unwrap();
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    let right_started = f(&r["right"]["started_s"]);
    let left_started = f(&r["left"]["started_s"]);
    assert!(
        left_started >= right_started + 0.7,
        "left started {left_started} s, right {right_started} s: {r}"
    );
    assert!(f(&r["ready_after_s"]) <= left_started, "{r}");
    assert!(
        r["right"]["exit_code"].is_number(),
        "iperf3 -s -1 ends by itself after one test: {r}"
    );
    assert!(f(&r["left"]["duration_s"]) >= 1.0, "{r}");
    let l2r = &r["link"]["snapshot"]["bridge"]["paths"][0];
    assert!(
        l2r["counters"]["frames_out"].as_u64().unwrap() > 500,
        "a 1 s bulk transfer: {l2r}"
    );
    assert_eq!(
        l2r["params"]["rate_bytes_ps"], 2_500_000,
        "--set link.rate=20mbit"
    );
    assert!(l2r["drops_by_reason"].is_object());
    assert!(l2r["ring_size"].as_u64().unwrap() > 0);
    assert!(l2r.get("bql_limit").is_some());
    let lat = &r["link"]["latency"];
    assert!(
        lat["wakeup_lateness_ns"]["samples"].as_u64().unwrap() > 0,
        "{lat}"
    );
    assert!(
        lat["qdisc_sojourn_at_end"]["left_to_right"].is_object(),
        "{lat}"
    );
    // Every delivered frame is in its direction's transit histogram, none
    // faster than the 5 ms of propagation delay of the default config.
    for (i, dir) in ["left_to_right", "right_to_left"].iter().enumerate() {
        let t = &lat["transit_ns"][dir];
        let path = &r["link"]["snapshot"]["bridge"]["paths"][i];
        assert_eq!(t["count"], path["counters"]["frames_out"], "{t}");
        assert_eq!(path["transit"], *t);
        let min = t["min_ns"].as_u64().unwrap();
        assert!((5_000_000..6_000_000).contains(&min), "{t}");
        assert!(t["p50_ns"].as_u64() <= t["p99_ns"].as_u64(), "{t}");
        assert!(t["p999_ns"].as_u64() <= t["max_ns"].as_u64(), "{t}");
        let in_buckets: u64 = t["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["count"].as_u64().unwrap())
            .sum();
        assert_eq!(Some(in_buckets), t["count"].as_u64(), "{t}");
    }
}

/// The right command's output reaches stdout and stderr line by line, each
/// line led by `[right] ` (a last line without a newline too), even far
/// more of it than a pipe holds before the left side starts; the left
/// command's output is left as it is.
#[test]
#[ignore = "needs root"]
fn the_right_sides_lines_are_prefixed_and_the_left_sides_are_not() {
    require!();
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (dir.path().join("out"), dir.path().join("err"));
    let ready = dir.path().join("ready");
    let marker = marker_seconds();
    let right = format!(
        "seq 100000; echo r-err >&2; printf r-part; printf r-err-part >&2; touch {}; exec sleep {marker}",
        ready.display()
    );
    let wait = format!("test -e {}", ready.display());
    let (out, name) = Run::start_to(
        &[
            "--right",
            &right,
            "--wait-cmd",
            &wait,
            "--timeout",
            "20s",
            "--left",
            "echo l-out; echo l-err >&2",
        ],
        std::fs::File::create(&out_path).unwrap().into(),
        std::fs::File::create(&err_path).unwrap().into(),
    )
    .finish();
    let stdout = std::fs::read_to_string(&out_path).unwrap();
    let stderr = std::fs::read_to_string(&err_path).unwrap();
    assert_eq!(code(&out), 0, "{stderr}");
    assert_gone(&name);
    assert_no_processes(&[&marker]);
    let lines: Vec<&str> = stdout.lines().collect();
    let expected: Vec<String> = (1..=100_000)
        .map(|i| format!("[right] {i}"))
        .chain(["[right] r-part".to_string()])
        .collect();
    let right: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("[right] "))
        .collect();
    let first_difference = right.iter().zip(&expected).position(|(a, b)| a != b);
    assert!(
        right.len() == expected.len() && first_difference.is_none(),
        "{} prefixed lines, {} expected, first difference at {first_difference:?}; stdout begins {:?}",
        right.len(),
        expected.len(),
        &stdout[..stdout.len().min(200)]
    );
    let left: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.starts_with("[right] "))
        .collect();
    assert_eq!(left, ["l-out"]);
    let err: Vec<&str> = stderr.lines().collect();
    for line in ["[right] r-err", "[right] r-err-part", "l-err"] {
        assert!(err.contains(&line), "{line:?} not in stderr: {stderr}");
    }
    assert!(
        !err.iter()
            .any(|l| l.starts_with("r-") || l.contains("[right] l-")),
        "{stderr}"
    );
}

/// A run whose right side never gets ready: exit 124 within 10 s, saying
/// `why`, nothing left.
fn assert_not_ready(args: &[&str], why: &str) {
    let started = Instant::now();
    let (out, name) = Run::start(args).finish();
    assert_eq!(code(&out), 124, "{}", text(&out));
    assert!(text(&out).contains(why), "{}", text(&out));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_gone(&name);
}

#[test]
#[ignore = "needs root"]
fn readiness_times_out_with_124_and_a_dead_server_is_noticed() {
    require!();
    let _turn = turn();
    let right = marker_seconds();
    let sleep_right = format!("sleep {right}");
    let args = [
        "--right",
        &sleep_right,
        "--wait-port",
        "9/udp",
        "--timeout",
        "1s",
        "--",
        "true",
    ];
    assert_not_ready(&args, "nothing listens on 9/udp");
    assert_no_processes(&[&right]);
    let args = ["--right", "exit 4", "--wait-port", "80", "--", "true"];
    assert_not_ready(&args, "exited (code 4)");
    // A readiness command that hangs is bounded by --timeout and killed.
    let probe = marker_seconds();
    let sleep_probe = format!("sleep {probe}");
    let args = ["--wait-cmd", &sleep_probe, "--timeout", "1s", "--", "true"];
    assert_not_ready(&args, "--wait-cmd command never succeeded");
    assert_no_processes(&[&probe]);
}

#[test]
#[ignore = "needs root"]
fn wait_cmd_retries_through_the_link_until_it_succeeds() {
    require!("python3");
    let _turn = turn();
    // The right side serves HTTP after 0.5 s; the readiness command fetches
    // through the link from the left namespace.
    let fetch = "python3 -c \"import urllib.request,os; urllib.request.urlopen('http://'+os.environ['BLOATBOX_PEER_V4']+':8000/', timeout=1)\"";
    let (out, name) = Run::start(&[
        "--right",
        "sleep 0.5; exec python3 -m http.server 8000 --bind 0.0.0.0",
        "--wait-cmd",
        fetch,
        "--timeout",
        "15s",
        "--left",
        fetch,
    ])
    .finish();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_gone(&name);
}

/// Runs a netns/ script with `BB_NAME`; returns (exit code, stdout+stderr).
fn script(name: &str, args: &[&str]) -> (i32, String) {
    let out = common::netns_script(name, args);
    (code(&out), text(&out))
}

#[test]
#[ignore = "needs root"]
fn netns_scripts_are_idempotent_and_exec_reaches_a_running_link() {
    require!("ping");
    let _turn = turn();
    let name = unique_name();
    // Whatever happens, the names are removed at the end.
    let _cleanup = Run {
        name: name.clone(),
        child: None,
    };
    for _ in 0..2 {
        let (rc, out) = script(&name, &["up.sh"]);
        assert_eq!(rc, 0, "{out}");
    }
    let (rc, out) = script(
        &name,
        &[
            "exec.sh",
            "right",
            "echo $BLOATBOX_SIDE $BLOATBOX_PEER_V4 $BLOATBOX_DEV",
        ],
    );
    assert_eq!(rc, 0, "{out}");
    assert!(out.contains(&format!("right 10.77.0.1 {name}r")), "{out}");
    let (rc, out) = script(&name, &["exec.sh", "left", "sh", "-c", "exit 6"]);
    assert_eq!(rc, 6, "exit code passed through: {out}");
    for _ in 0..2 {
        let (rc, out) = script(&name, &["down.sh"]);
        assert_eq!(rc, 0, "{out}");
    }
    assert_gone(&name);
    let (rc, out) = script(&name, &["exec.sh", "left", "true"]);
    assert_eq!(rc, 1, "{out}");
    assert!(out.contains("does not exist"), "{out}");

    // exec.sh reaches the namespaces of a `bloatbox run` link by its name.
    let left = marker_seconds();
    let run_name = unique_name();
    let run = Run {
        name: run_name.clone(),
        child: Some(
            common::bloatbox()
                .args(["run", "--name", &run_name, "--", "sleep", &left])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        ),
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while processes_with(&left).is_empty() {
        assert!(Instant::now() < deadline, "the run never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (rc, out) = script(
        &run_name,
        &["exec.sh", "left", "ping -c 1 -W 2 $BLOATBOX_PEER_V4"],
    );
    assert_eq!(rc, 0, "{out}");
    // down.sh, as `bloatbox down`, leaves a live run's link alone.
    let (rc, out) = script(&run_name, &["down.sh"]);
    assert_eq!(rc, 1, "{out}");
    assert!(
        out.contains("a bloatbox daemon is running this link"),
        "{out}"
    );
    assert!(Path::new("/run/netns")
        .join(format!("{run_name}l"))
        .exists());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(run.pid()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let (out, _) = run.finish();
    assert_eq!(code(&out), 143);
    assert_gone(&run_name);
}

#[test]
#[ignore = "needs root"]
fn down_runs_cleans_up_after_a_sigkilled_run() {
    require!();
    let _turn = turn();
    let (right, left) = (marker_seconds(), marker_seconds());
    let mut run = Run::start(&["--right", &format!("sleep {right}"), "--", "sleep", &left]);
    let record = Path::new("/run/bloatbox/runs").join(format!("{}.json", run.name));
    let deadline = Instant::now() + Duration::from_secs(10);
    while processes_with(&left).is_empty() || processes_with(&right).is_empty() {
        assert!(Instant::now() < deadline, "the commands never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    assert_eq!(r["pid"], run.pid(), "{r}");
    assert_eq!(r["namespaces"][0], format!("{}l", run.name), "{r}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(run.pid()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let name = run.name.clone();
    assert_eq!(run.reap().code(), None, "SIGKILLed");
    assert!(Path::new("/run/netns").join(format!("{name}l")).exists());
    assert!(record.exists(), "a SIGKILLed run keeps its record");
    assert!(!processes_with(&right).is_empty(), "its commands live on");

    let down = run_bin(&["down", "--runs"]);
    assert!(down.status.success(), "{}", text(&down));
    let said = String::from_utf8_lossy(&down.stdout);
    assert!(said.contains(&format!("run {name} (pid")), "{said}");
    assert!(
        said.contains(&format!("removed network namespace \"{name}l\"")),
        "{said}"
    );
    assert_gone(&name);
    assert!(!record.exists());
    assert_no_processes(&[&right, &left]);
    let again = run_bin(&["down", "--runs"]);
    assert!(again.status.success(), "{}", text(&again));
    assert!(!String::from_utf8_lossy(&again.stdout).contains(&name));
}

#[test]
#[ignore = "needs root"]
fn both_sides_reach_their_peer_over_ipv4_and_ipv6_from_the_environment() {
    require!("ping");
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let ok = dir.path().join("right-ok");
    // The right side pings the left one, then says so; the left command
    // starts once it has (--wait-cmd), and pings back.
    let right = format!(
        "test \"$BLOATBOX_SIDE\" = right \
         && ping -c 1 -W 2 $BLOATBOX_PEER_V4 \
         && ping -6 -c 1 -W 2 $BLOATBOX_PEER_V6 \
         && touch {}; sleep 30",
        ok.display()
    );
    let (out, name) = Run::start(&[
        "--right",
        &right,
        "--wait-cmd",
        &format!("test -e {}", ok.display()),
        "--timeout",
        "10s",
        "--",
        "sh",
        "-c",
        "test \"$BLOATBOX_PEER_V6\" = fd00:77::2 \
         && ping -c 1 -W 2 $BLOATBOX_PEER_V4 \
         && ping -6 -c 1 -W 2 $BLOATBOX_PEER_V6",
    ])
    .finish();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_gone(&name);
}

/// A TAP MTU below IPv6's least (1280) runs IPv4 only, with a warning
/// naming the field, rather than failing to add the IPv6 address.
#[test]
#[ignore = "needs root"]
fn a_small_mtu_runs_ipv4_only_with_a_warning() {
    require!("ping");
    let _turn = turn();
    let (out, name) = Run::start(&[
        "--set",
        "tap.mtu=576",
        "--left",
        "ping -c 2 -i 0.2 -W 2 -s 540 -M do $BLOATBOX_PEER_V4 && ! ip -6 addr show dev $BLOATBOX_DEV | grep -q fd00",
    ])
    .finish();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        text(&out).contains("tap.mtu") && text(&out).contains("1280"),
        "the warning: {}",
        text(&out)
    );
    assert_gone(&name);
}

/// A warning about the process as a whole (busy polling keeps the
/// datapath off SCHED_FIFO) is said once, not once per direction's
/// thread, and the run goes on at normal priority.
#[test]
#[ignore = "needs root"]
fn a_process_wide_realtime_warning_is_said_once() {
    let _turn = turn();
    let run = Run::start(&[
        "--realtime",
        "10",
        "--set",
        "daemon.busy_poll_us=20",
        "--",
        "true",
    ]);
    let (out, name) = run.finish();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said = stderr
        .matches("the datapath stays at normal priority, not SCHED_FIFO 10")
        .count();
    assert_eq!(said, 1, "{}", text(&out));
    assert_gone(&name);
}
