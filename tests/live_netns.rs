//! Root-only end-to-end tests of the live daemon: the `bloatbox` binary is
//! started with a per-test configuration (unique namespace, TAP and address
//! names) and traffic runs between the two namespaces it creates.
//!
//! Skipped, with the reason printed, where not root or where `ip`, `ping` or
//! `iperf3` is missing. Tests run one at a time (a shared lock) so that a
//! bulk transfer never disturbs an RTT measurement. Every exit path removes
//! what a test created: the daemon is stopped (SIGTERM, then SIGKILL and
//! `bloatbox down`) and the namespaces are deleted as a last resort.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_bloatbox");

/// Tests in this file run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());
static NEXT: AtomicU32 = AtomicU32::new(1);

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Why this machine cannot run the tests, if it cannot.
fn skip_reason(tools: &[&str]) -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("needs root (creates network namespaces and TAPs)".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing".into());
    }
    for tool in tools {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !found {
            return Some(format!("`{tool}` is not installed"));
        }
    }
    None
}

macro_rules! require {
    ($($tool:expr),*) => {
        if let Some(reason) = skip_reason(&[$($tool),*]) {
            eprintln!("SKIPPED: {reason}");
            return;
        }
    };
}

#[derive(Clone, Copy)]
enum Side {
    Left,
    Right,
}

impl Side {
    fn arg(self) -> &'static str {
        match self {
            Side::Left => "left",
            Side::Right => "right",
        }
    }
}

/// Names and addresses unique to one test.
struct Names {
    ns: [String; 2],
    tap: [String; 2],
    v4: [String; 2],
    v6: [String; 2],
}

impl Names {
    fn new() -> Names {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let octet = 100 + (pid as u32 * 7 + n) % 150;
        Names {
            ns: [format!("bbt-{pid}-{n}-l"), format!("bbt-{pid}-{n}-r")],
            tap: [
                format!("bt{}n{n}l", pid % 100_000),
                format!("bt{}n{n}r", pid % 100_000),
            ],
            v4: [format!("10.79.{octet}.1"), format!("10.79.{octet}.2")],
            v6: [format!("fd00:79:{octet}::1"), format!("fd00:79:{octet}::2")],
        }
    }
}

/// A running `bloatbox up` with its configuration in a tempdir.
struct Daemon {
    child: Option<Child>,
    names: Names,
    config: PathBuf,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Daemon {
    /// Writes the configuration (`link` is the body of its `[link]` table)
    /// and starts the daemon; returns once its stats answer.
    fn start(link: &str) -> Daemon {
        let names = Names::new();
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("bloatbox.toml");
        let socket = dir.path().join("control.sock");
        let text = format!(
            "[left]\nnamespace = \"{}\"\ntap = \"{}\"\nipv4 = \"{}/24\"\nipv6 = \"{}/64\"\n\n\
             [right]\nnamespace = \"{}\"\ntap = \"{}\"\nipv4 = \"{}/24\"\nipv6 = \"{}/64\"\n\n\
             [link]\n{link}\n\n[daemon]\ncontrol_socket = \"{}\"\n",
            names.ns[0],
            names.tap[0],
            names.v4[0],
            names.v6[0],
            names.ns[1],
            names.tap[1],
            names.v4[1],
            names.v6[1],
            socket.display()
        );
        std::fs::write(&config, text).unwrap();
        let log = dir.path().join("daemon.log");
        let child = Command::new(BIN)
            .args(["up", "-c"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut d = Daemon {
            child: Some(child),
            names,
            config,
            log,
            _dir: dir,
        };
        d.wait_ready();
        d
    }

    fn wait_ready(&mut self) {
        let t0 = Instant::now();
        loop {
            if self.cli(&["stats", "--json"]).status.success() {
                return;
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("daemon exited early ({status}): {}", self.log_text());
            }
            assert!(
                t0.elapsed() < Duration::from_secs(15),
                "daemon not ready after 15 s: {}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `bloatbox ARGS... -c CONFIG`.
    fn cli(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .arg("-c")
            .arg(&self.config)
            .output()
            .unwrap()
    }

    /// `bloatbox exec SIDE -c CONFIG -- CMD...`.
    fn exec(&self, side: Side, cmd: &[&str]) -> Output {
        Command::new(BIN)
            .args(["exec", side.arg(), "-c"])
            .arg(&self.config)
            .arg("--")
            .args(cmd)
            .output()
            .unwrap()
    }

    fn spawn_in(&self, side: Side, cmd: &[&str]) -> Child {
        Command::new(BIN)
            .args(["exec", side.arg(), "-c"])
            .arg(&self.config)
            .arg("--")
            .args(cmd)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn stats(&self) -> serde_json::Value {
        let out = self.cli(&["stats", "--json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// SIGTERM and wait (at most 10 s) for a normal exit.
    fn stop(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        signal(&child, nix::sys::signal::Signal::SIGTERM);
        wait_timeout(&mut child, Duration::from_secs(10)).unwrap_or_else(|| {
            let _ = child.kill();
            panic!("daemon ignored SIGTERM for 10 s: {}", self.log_text())
        })
    }

    fn kill9(&mut self) {
        let mut child = self.child.take().expect("running");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// What of this test's names still exists.
    fn leftovers(&self) -> Vec<String> {
        let mut found = Vec::new();
        for ns in &self.names.ns {
            if Path::new("/run/netns").join(ns).exists() {
                found.push(ns.clone());
            }
        }
        for tap in &self.names.tap {
            if Path::new("/sys/class/net").join(tap).exists() {
                found.push(tap.clone());
            }
        }
        found
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(&child, nix::sys::signal::Signal::SIGTERM);
            if wait_timeout(&mut child, Duration::from_secs(5)).is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        if !self.leftovers().is_empty() {
            let _ = self.cli(&["down"]);
        }
        for ns in &self.names.ns {
            if Path::new("/run/netns").join(ns).exists() {
                let _ = Command::new("ip").args(["netns", "del", ns]).status();
            }
        }
    }
}

fn signal(child: &Child, sig: nix::sys::signal::Signal) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig);
}

fn wait_timeout(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The RTTs (ms) ping printed.
fn ping_rtts(out: &Output) -> Vec<f64> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split("time=").nth(1))
        .filter_map(|t| t.split_whitespace().next()?.parse().ok())
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn assert_conserved(stats: &serde_json::Value) {
    for p in stats["bridge"]["paths"].as_array().unwrap() {
        let c = &p["counters"];
        let drops: u64 = c["drops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .sum();
        assert_eq!(
            c["frames_in"].as_u64().unwrap(),
            c["frames_out"].as_u64().unwrap() + drops + p["held"].as_u64().unwrap(),
            "conservation: {c}"
        );
    }
}

#[test]
fn live_ping_works_both_ways_ipv4_and_ipv6() {
    require!("ip", "ping");
    let _serial = serial();
    let mut d = Daemon::start("rate = \"100mbit\"\ndelay = \"1ms\"");
    let n = &d.names;
    for (side, dst) in [
        (Side::Left, n.v4[1].clone()),
        (Side::Left, n.v6[1].clone()),
        (Side::Right, n.v4[0].clone()),
        (Side::Right, n.v6[0].clone()),
    ] {
        let out = d.exec(side, &["ping", "-c", "3", "-i", "0.2", "-W", "2", &dst]);
        assert!(
            out.status.success(),
            "ping {dst} from {}: {}",
            side.arg(),
            text(&out)
        );
        assert_eq!(ping_rtts(&out).len(), 3, "{}", text(&out));
    }
    // exec passes the exit code through.
    let out = d.exec(Side::Left, &["sh", "-c", "exit 7"]);
    assert_eq!(out.status.code(), Some(7));
    let stats = d.stats();
    assert_conserved(&stats);
    let human = d.cli(&["stats"]);
    assert!(text(&human).contains("conservation"), "{}", text(&human));
    assert!(d.stop().success(), "{}", d.log_text());
    assert_eq!(d.leftovers(), Vec::<String>::new());
}

#[test]
fn live_bulk_tcp_fills_a_20mbit_link() {
    require!("ip", "iperf3");
    let _serial = serial();
    let d = Daemon::start("rate = \"20mbit\"\ndelay = \"5ms\"");
    let server_addr = d.names.v4[1].clone();
    let mut server = d.spawn_in(Side::Right, &["iperf3", "-s", "-1", "-B", &server_addr]);
    std::thread::sleep(Duration::from_millis(500));
    let out = d.exec(
        Side::Left,
        &[
            "iperf3",
            "-c",
            &server_addr,
            "-t",
            "8",
            "-O",
            "2",
            "-C",
            "cubic",
            "-J",
        ],
    );
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "iperf3: {}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let goodput = report["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap();
    // TCP payload per full frame: MSS 1448 (with timestamps) in 1514 bytes.
    let l2_rate = goodput * 1514.0 / 1448.0;
    let fraction = l2_rate / 20e6;
    eprintln!(
        "goodput {:.2} Mbit/s, frames on the link {:.2} Mbit/s = {:.3} of 20 Mbit/s",
        goodput / 1e6,
        l2_rate / 1e6,
        fraction
    );
    assert!(
        (0.95..=1.01).contains(&fraction),
        "link utilisation {fraction:.3} is outside 0.95..1.0"
    );
    assert_conserved(&d.stats());
}

#[test]
fn live_idle_rtt_is_twice_the_delay_plus_serialization() {
    require!("ip", "ping");
    let _serial = serial();
    // fq_codel from the config: the qdisc tree is built from tc lines.
    let d = Daemon::start("rate = \"100mbit\"\ndelay = \"10ms\"\nqdisc = \"fq_codel\"");
    let kind = &d.stats()["bridge"]["paths"][0]["qdisc"]["kind"];
    assert_eq!(kind, "fq_codel");
    let dst = d.names.v4[1].clone();
    // Resolve the neighbour first so that no ARP exchange is measured.
    d.exec(Side::Left, &["ping", "-c", "1", "-W", "2", &dst]);
    let out = d.exec(Side::Left, &["ping", "-c", "20", "-i", "0.05", &dst]);
    assert!(out.status.success(), "{}", text(&out));
    let rtts = ping_rtts(&out);
    assert_eq!(rtts.len(), 20, "{}", text(&out));
    // 98-byte frames (84-byte IPv4 echo) at 100 Mbit/s, once each way.
    let serialization_ms = 2.0 * 98.0 * 8.0 / 100e6 * 1e3;
    let ideal = 20.0 + serialization_ms;
    let med = median(rtts.clone());
    eprintln!(
        "idle RTT median {med:.3} ms (ideal {ideal:.3} ms), min {:.3} max {:.3}",
        rtts.iter().cloned().fold(f64::MAX, f64::min),
        rtts.iter().cloned().fold(0.0, f64::max)
    );
    assert!(
        med >= ideal - 0.05,
        "RTT {med} ms below the physics ({ideal} ms)"
    );
    assert!(
        med <= ideal + 1.0,
        "RTT {med} ms more than 1 ms above {ideal} ms"
    );
}

#[test]
fn live_nothing_is_left_after_exit_or_after_sigkill_and_down() {
    require!("ip");
    let _serial = serial();
    // Normal exit.
    let mut d = Daemon::start("rate = \"100mbit\"");
    assert_eq!(d.leftovers().len(), 2, "both namespaces exist while up");
    assert!(d.stop().success(), "{}", d.log_text());
    assert_eq!(d.leftovers(), Vec::<String>::new());

    // SIGKILL: the namespaces stay, `up` refuses, `down` removes them.
    let mut d = Daemon::start("rate = \"100mbit\"");
    d.kill9();
    assert_eq!(d.leftovers().len(), 2, "namespaces outlive a SIGKILL");
    let again = d.cli(&["up"]);
    assert!(!again.status.success());
    assert!(text(&again).contains("bloatbox down"), "{}", text(&again));
    let down = d.cli(&["down"]);
    assert!(down.status.success(), "{}", text(&down));
    assert!(text(&down).contains("removed"), "{}", text(&down));
    assert_eq!(d.leftovers(), Vec::<String>::new());
    let down = d.cli(&["down"]);
    assert!(text(&down).contains("nothing to remove"), "{}", text(&down));
}
