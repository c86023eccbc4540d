//! Root-only live test of the link shape from the configuration: `netem`
//! on one direction of a running `bloatbox up` loses and jitters frames
//! as configured, and the seeds of both directions show in the stats.
//!
//! Skipped, with the reason printed, where not root or where `ip` or
//! `ping` is missing. Names (namespaces, TAPs, addresses, socket) are
//! unique to the process; every exit path stops the daemon and removes
//! what it created (`bloatbox down`, then `ip netns del` as a last resort).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_bloatbox");

fn skip_reason() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("needs root (creates network namespaces and TAPs)".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing".into());
    }
    for tool in ["ip", "ping"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return Some(format!("`{tool}` is not installed"));
        }
    }
    None
}

/// A running `bloatbox up` on names unique to this process and `tag`.
struct Daemon {
    child: Option<Child>,
    namespaces: [String; 2],
    right_v4: String,
    config: PathBuf,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Daemon {
    /// Starts the daemon with `link` as the body of `[link]` (plus any
    /// direction tables after it); returns once its stats answer.
    fn start(tag: u32, link: &str) -> Daemon {
        let pid = std::process::id();
        let octet = 100 + (pid * 11 + tag) % 150;
        let namespaces = [format!("bbn-{pid}-{tag}-l"), format!("bbn-{pid}-{tag}-r")];
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("bloatbox.toml");
        let text = format!(
            "[left]\nnamespace = \"{}\"\ntap = \"bn{}t{tag}l\"\nipv4 = \"10.81.{octet}.1/24\"\nipv6 = \"fd00:81:{octet}::1/64\"\n\n\
             [right]\nnamespace = \"{}\"\ntap = \"bn{}t{tag}r\"\nipv4 = \"10.81.{octet}.2/24\"\nipv6 = \"fd00:81:{octet}::2/64\"\n\n\
             [daemon]\ncontrol_socket = \"{}\"\n\n[link]\n{link}\n",
            namespaces[0],
            pid % 100_000,
            namespaces[1],
            pid % 100_000,
            dir.path().join("control.sock").display()
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
            namespaces,
            right_v4: format!("10.81.{octet}.2"),
            config,
            log,
            _dir: dir,
        };
        let t0 = Instant::now();
        while !d.cli(&["stats", "--json"]).status.success() {
            if let Some(status) = d.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!("daemon exited early ({status}): {}", d.log_text());
            }
            assert!(
                t0.elapsed() < Duration::from_secs(15),
                "daemon not ready after 15 s: {}",
                d.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        d
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn cli(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .arg("-c")
            .arg(&self.config)
            .output()
            .unwrap()
    }

    /// `ping -c COUNT -i 0.01` from the left namespace to the right.
    fn ping(&self, count: u32) -> Output {
        Command::new(BIN)
            .args(["exec", "left", "-c"])
            .arg(&self.config)
            .args(["--", "ping", "-n", "-q", "-c"])
            .arg(count.to_string())
            .args(["-i", "0.01", "-W", "1"])
            .arg(&self.right_v4)
            .output()
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
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let t0 = Instant::now();
            while child.try_wait().ok().flatten().is_none() {
                if t0.elapsed() > Duration::from_secs(5) {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let left = |ns: &String| Path::new("/run/netns").join(ns).exists();
        if self.namespaces.iter().any(left) {
            let _ = self.cli(&["down"]);
        }
        for ns in self.namespaces.iter().filter(|ns| left(ns)) {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
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
    let mdev = text
        .lines()
        .find(|l| l.starts_with("rtt") || l.starts_with("round-trip"))
        .and_then(|l| l.split('=').nth(1))
        .and_then(|v| v.trim().split('/').nth(3))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    (number("packets"), number("received"), mdev)
}

fn path_stats(stats: &serde_json::Value, i: usize) -> &serde_json::Value {
    &stats["bridge"]["paths"][i]
}

#[test]
fn live_netem_loss_and_jitter_from_the_config() {
    if let Some(reason) = skip_reason() {
        eprintln!("SKIPPED: {reason}");
        return;
    }

    // 20% loss on left→right only; echo replies come back untouched.
    let d = Daemon::start(
        1,
        "rate = \"100mbit\"\ndelay = \"1ms\"\nseed = 1234\n\n[link.left_to_right]\nnetem = \"loss 20%\"\n",
    );
    let (sent, received, _) = ping_summary(&d.ping(200));
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
        2,
        "rate = \"100mbit\"\ndelay = \"1ms\"\n\n[link.left_to_right]\nnetem = \"delay 10ms 5ms\"\n",
    );
    let (sent, received, mdev) = ping_summary(&d.ping(200));
    eprintln!("netem delay 10ms 5ms: sent {sent}, received {received}, mdev {mdev} ms");
    assert_eq!(received, sent, "no loss configured");
    assert!(mdev > 1.0, "RTT mdev {mdev} ms");
}
