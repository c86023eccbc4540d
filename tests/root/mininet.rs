//! Root-only end-to-end test of examples/mininet/bloatbox_link.py in a
//! real Mininet (Debian's `mininet` package): examples/mininet/two_hosts.py,
//! run with the interpreter Mininet is installed for and this test's own
//! binary, builds h1 ⟷ h2 with one `BloatboxLink` (10 Mbit/s, 20 ms each
//! way, fq_codel; no switch, no controller, so no Open vSwitch) and
//! reports ping, iperf3 and `bloatbox tc -s qdisc show` as JSON. The test
//! fails unless the RTT and the goodput are the emulated link's, the qdisc
//! shows through the control socket, and stopping the network left nothing
//! behind: no process of the run, no namespace, socket or log of its
//! links, no interface of its hosts in this namespace. A second test runs
//! the script's `--cli` in tmux: a Ctrl-C interrupts `h1 ping h2`, not
//! bloatbox (the link still carries the next ping at its delay).
//!
//! The link's names hold the script's pid (`bbm<PID>_<N>`); `Script`'s
//! Drop ends a script still running (SIGINT, so that Mininet stops the
//! network, then SIGKILL), `Pane`'s kills the CLI's, and both remove what
//! is left of that pid's links on every exit path, a panic included.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::Value;

use crate::common;
use crate::serial;
use common::wait_timeout;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/mininet");

/// The Python interpreter Mininet is installed for: the one the first line
/// of `mn` names (Debian's is /usr/bin/python3, which need not be the
/// `python3` on the PATH). Fails naming the package without Mininet.
fn mininet_python() -> String {
    let found = Command::new("sh")
        .args(["-c", "command -v mn"])
        .output()
        .expect("sh");
    let mn = String::from_utf8_lossy(&found.stdout).trim().to_string();
    assert!(
        found.status.success() && !mn.is_empty(),
        "this test cannot run here: Mininet is not installed: apt-get install mininet \
         (.ci/run installs it)"
    );
    let script = std::fs::read_to_string(&mn).unwrap_or_else(|e| panic!("{mn}: {e}"));
    let words: Vec<&str> = script
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("#!"))
        .unwrap_or_else(|| panic!("{mn} does not start with #!"))
        .split_whitespace()
        .collect();
    match words.as_slice() {
        [env, python, ..] if env.ends_with("/env") => python.to_string(),
        [python, ..] => python.to_string(),
        [] => panic!("{mn}: an empty #! line"),
    }
}

/// The pids of `pid`'s descendants (by /proc/PID/stat's parent field).
fn descendants(pid: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // "PID (COMM) STATE PPID ...": COMM may hold spaces, not ')'.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        if let Some(parent) = after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            parents.push((child, parent));
        }
    }
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

/// Whether `pid` is a live process (a zombie is not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let (_, rest) = stat.rsplit_once(')')?;
            rest.split_whitespace().next().map(|state| state != "Z")
        })
        .unwrap_or(false)
}

/// The processes whose command line names one of `prefix`'s links (their
/// bloatbox), with those lines.
fn wired(prefix: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let line = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let line = String::from_utf8_lossy(&line).replace('\0', " ");
        if line.contains(prefix) && alive(pid) {
            found.push((pid, line));
        }
    }
    found
}

/// What is left of the links named `prefix…` (`bbm<PID>_`): their
/// processes, namespaces, sockets and logs.
fn leftovers(prefix: &str) -> Vec<String> {
    let mut left: Vec<String> = wired(prefix)
        .into_iter()
        .map(|(pid, line)| format!("process {pid}: {line}"))
        .collect();
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    for name in String::from_utf8_lossy(&list.stdout).split_whitespace() {
        if name.starts_with(prefix) {
            left.push(format!("namespace {name}"));
        }
    }
    for dir in ["/run/bloatbox".into(), std::env::temp_dir()] {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.file_name().to_string_lossy().starts_with(prefix) {
                left.push(format!("file {}", entry.path().display()));
            }
        }
    }
    left
}

/// two_hosts.py running, its output read by threads (no pipe fills up).
struct Script {
    child: Child,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
}

impl Script {
    fn start(args: &[&str]) -> Script {
        let mut child = Command::new(mininet_python())
            .arg("two_hosts.py")
            .args(args)
            .current_dir(DIR)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting examples/mininet/two_hosts.py");
        let reader = |mut pipe: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = pipe.read_to_string(&mut text);
                text
            })
        };
        let stdout = reader(Box::new(child.stdout.take().unwrap()));
        let stderr = reader(Box::new(child.stderr.take().unwrap()));
        Script {
            child,
            stdout: Some(stdout),
            stderr: Some(stderr),
        }
    }

    /// The names of this run's links start so.
    fn prefix(&self) -> String {
        format!("bbm{}_", self.child.id())
    }

    /// Waits up to `limit`: whether it exited 0, and its stdout and stderr.
    fn finish(&mut self, limit: Duration) -> (bool, String, String) {
        let status = wait_timeout(&mut self.child, limit);
        if status.is_none() {
            self.end();
        }
        let out = self.stdout.take().map(|t| t.join().unwrap_or_default());
        let err = self.stderr.take().map(|t| t.join().unwrap_or_default());
        let (out, err) = (out.unwrap_or_default(), err.unwrap_or_default());
        assert!(
            status.is_some(),
            "two_hosts.py did not end within {limit:?}:\n{out}\n{err}"
        );
        (status.is_some_and(|s| s.success()), out, err)
    }

    /// Ends a script still running: SIGINT (Mininet stops the network in
    /// `finally`), SIGKILL after 10 s, then its descendants.
    fn end(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        let descendants = descendants(self.child.id());
        common::signal(&self.child, Signal::SIGINT);
        if wait_timeout(&mut self.child, Duration::from_secs(10)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        for pid in descendants {
            kill(pid);
        }
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        self.end();
        clear(&self.prefix());
    }
}

/// Kills what still runs of the links named `prefix…` and removes their
/// namespaces, sockets and logs.
fn clear(prefix: &str) {
    for (pid, _) in wired(prefix) {
        kill(pid);
    }
    for left in leftovers(prefix) {
        if let Some(name) = left.strip_prefix("namespace ") {
            let _ = Command::new("ip").args(["netns", "del", name]).status();
        } else if let Some(path) = left.strip_prefix("file ") {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn kill(pid: u32) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), Signal::SIGKILL);
}

#[test]
#[ignore = "needs root"]
fn a_bloatbox_link_in_a_real_mininet_carries_its_delay_rate_and_qdisc_and_leaves_nothing() {
    let _serial = serial();
    require!("ping", "iperf3");
    let python = mininet_python();
    let mut script = Script::start(&[
        "--bloatbox",
        common::BIN,
        "--rate",
        "10mbit",
        "--delay",
        "20ms",
        "--qdisc",
        "fq_codel",
        "--seconds",
        "4",
        "--json",
    ]);
    let prefix = script.prefix();
    let (ok, out, err) = script.finish(Duration::from_secs(60));
    assert!(ok, "{python} two_hosts.py failed:\n{out}\n{err}");
    let found: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let netns = found["netns"].as_str().unwrap();
    assert!(netns.starts_with(&prefix), "{netns} is not of {prefix}");

    // 20 ms each way: the ping's minimum is the 40 ms RTT and little more
    // (the first echo also waits for ARP across the link, hence the avg's
    // room); without the link's delay it would be well under 1 ms.
    let ping = found["ping"].as_str().unwrap();
    let common::PingRtt { min, avg, .. } = common::expect_ping_rtt(ping);
    assert!((40.0..45.0).contains(&min), "min RTT {min} ms\n{ping}");
    assert!(avg < 60.0, "avg RTT {avg} ms\n{ping}");

    // One TCP flow's goodput: the 10 Mbit/s rate, less headers.
    let bps = found["iperf3"]["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap_or_else(|| panic!("no iperf3 result: {}", found["iperf3"]));
    assert!(
        (8.5e6..10.2e6).contains(&bps),
        "goodput {:.2} Mbit/s on a 10 Mbit/s link",
        bps / 1e6
    );

    // The qdisc through the control socket, with the flow's packets.
    let tc = found["tc"].as_str().unwrap();
    assert!(
        tc.starts_with("qdisc fq_codel 8001: dev left root")
            && tc.contains("qdisc fq_codel 8002: dev right root"),
        "{tc}"
    );
    let sent: u64 = tc
        .split_whitespace()
        .skip_while(|w| *w != "Sent")
        .nth(1)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no Sent line: {tc}"));
    assert!(sent > 4_000_000, "{sent} bytes left→right\n{tc}");

    // net.stop() left nothing: the hosts' shells and bloatbox ended, the
    // link's namespace, socket and log removed, no host interface here.
    let pids: Vec<u32> = found["pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap() as u32)
        .collect();
    assert_eq!(pids.len(), 3, "{}", found["pids"]);
    let gone = common::wait_until(Duration::from_secs(5), || !pids.iter().any(|p| alive(*p)));
    assert!(gone, "processes of the run still there: {pids:?}");
    assert_eq!(leftovers(&prefix), Vec::<String>::new());
    let socket = found["socket"].as_str().unwrap();
    let log = found["log"].as_str().unwrap();
    for path in [socket, log] {
        assert!(!std::path::Path::new(path).exists(), "{path} is left");
    }
    let links = Command::new("ip").args(["-o", "link"]).output().unwrap();
    let links = String::from_utf8_lossy(&links.stdout);
    for name in ["h1-eth0", "h2-eth0"] {
        assert!(
            !links.contains(&format!(": {name}:")) && !links.contains(&format!(": {name}@")),
            "{name} is left in the root namespace:\n{links}"
        );
    }
}

/// The Mininet of a tmux pane (two_hosts.py --cli, the pane's process):
/// on drop it kills that script and its descendants (the hosts' shells,
/// bloatbox) and clears its links, before the tmux server goes.
struct Pane {
    python: u32,
}

impl Drop for Pane {
    fn drop(&mut self) {
        let descendants = descendants(self.python);
        kill(self.python);
        for pid in descendants {
            kill(pid);
        }
        clear(&format!("bbm{}_", self.python));
    }
}

/// The text after the last `marker` on the screen, to the end of its word.
fn word_after<'a>(screen: &'a str, marker: &str) -> Option<&'a str> {
    let at = screen.rfind(marker)? + marker.len();
    screen[at..].split_whitespace().next()
}

#[test]
#[ignore = "needs root"]
fn a_ctrl_c_at_mininets_cli_interrupts_the_command_not_the_link() {
    let _serial = serial();
    require!("ping", "tmux");
    let python = mininet_python();
    let dir = tempfile::tempdir().unwrap();
    let command = format!(
        "cd {DIR} && PYTHONDONTWRITEBYTECODE=1 exec {python} two_hosts.py --bloatbox {} --cli",
        common::BIN
    );
    let tmux = common::tmux::Tmux::start(dir.path(), 160, 40, &command);
    let pid = tmux.run(&["display-message", "-p", "-t", "tui", "#{pane_pid}"]);
    let pane = Pane {
        python: String::from_utf8_lossy(&pid.stdout).trim().parse().unwrap(),
    };
    let screen = tmux.wait_for(Duration::from_secs(20), |s| s.contains("mininet>"));
    let socket = word_after(&screen, "bloatbox tc --socket ")
        .unwrap_or_else(|| panic!("no socket shown:\n{screen}"))
        .to_string();
    assert!(socket.contains(&format!("bbm{}_", pane.python)), "{socket}");

    // `h1 ping h2` until Ctrl-C: the ping ends with its summary...
    tmux.run(&["send-keys", "-t", "tui", "h1 ping 10.0.0.2", "Enter"]);
    let screen = tmux.wait_for(Duration::from_secs(10), |s| s.contains("icmp_seq=3"));
    assert!(screen.contains("icmp_seq=3"), "{screen}");
    tmux.run(&["send-keys", "-t", "tui", "C-c"]);
    let screen = tmux.wait_for(Duration::from_secs(10), |s| {
        s.contains("packet loss") && s.trim_end().ends_with("mininet>")
    });
    assert!(screen.contains("packet loss"), "{screen}");

    // ...and the link is still there: bloatbox answers, the hosts reach
    // each other at the link's delay.
    let stats = common::run_bin(&["stats", "--socket", &socket]);
    assert!(stats.status.success(), "{}", common::text(&stats));
    tmux.run(&[
        "send-keys",
        "-t",
        "tui",
        "h1 ping -c 2 -W 2 10.0.0.2",
        "Enter",
    ]);
    let screen = tmux.wait_for(Duration::from_secs(10), |s| {
        s.contains("2 packets transmitted") && s.trim_end().ends_with("mininet>")
    });
    assert!(
        screen.contains("2 packets transmitted, 2 received"),
        "{screen}"
    );
    let min: f64 = word_after(&screen, "rtt min/avg/max/mdev = ")
        .and_then(|w| w.split('/').next())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no RTT:\n{screen}"));
    assert!((40.0..45.0).contains(&min), "min RTT {min} ms\n{screen}");

    tmux.run(&["send-keys", "-t", "tui", "exit", "Enter"]);
    let _ = tmux.wait_for(Duration::from_secs(20), |s| s.contains("*** Done"));
    let prefix = format!("bbm{}_", pane.python);
    let gone = common::wait_until(Duration::from_secs(10), || leftovers(&prefix).is_empty());
    assert!(gone, "left: {:?}", leftovers(&prefix));
}
