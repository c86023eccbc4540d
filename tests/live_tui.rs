//! Root-only end-to-end check of the terminal UI: a live daemon (unique
//! namespace, TAP and address names) forwards four iperf3 TCP flows through
//! fq_codel while `bloatbox top` runs inside a detached tmux session of
//! 120×40 on a private tmux server. The pane is captured twice and must
//! show the flows and counters that move between the captures; `q` must
//! then end the TUI (the session closes with it).
//!
//! Skipped, with the reason printed, without root, /dev/net/tun, `ip`,
//! `iperf3` or `tmux`. Every exit path, panics included, kills the tmux
//! server, the traffic and the daemon and removes the namespaces (guards'
//! Drop).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_bloatbox");

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Kills `child` and reaps it, ignoring a child that already ended.
fn end(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// A running `bloatbox up` (headless) with its configuration in a tempdir,
/// and the processes started in its namespaces.
struct Daemon {
    child: Option<Child>,
    ns: [String; 2],
    v4_right: String,
    config: PathBuf,
    log: PathBuf,
    traffic: Vec<Child>,
    dir: tempfile::TempDir,
}

impl Daemon {
    /// Writes a config with names unique to this process and `tag` (one
    /// letter per test), without starting anything.
    fn configure(tag: char, link: &str) -> Daemon {
        let pid = std::process::id();
        let octet = 100 + pid % 150;
        let ns = [format!("bbtui{tag}-{pid}-l"), format!("bbtui{tag}-{pid}-r")];
        let tap = [
            format!("bu{tag}{}l", pid % 100_000),
            format!("bu{tag}{}r", pid % 100_000),
        ];
        let v4 = [format!("10.78.{octet}.1"), format!("10.78.{octet}.2")];
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("bloatbox.toml");
        let text = format!(
            "[left]\nnamespace = \"{}\"\ntap = \"{}\"\nipv4 = \"{}/24\"\nipv6 = \"fd00:78:{octet}::1/64\"\n\n\
             [right]\nnamespace = \"{}\"\ntap = \"{}\"\nipv4 = \"{}/24\"\nipv6 = \"fd00:78:{octet}::2/64\"\n\n\
             [link]\n{link}\n\n[daemon]\ncontrol_socket = \"{}\"\nsnapshot_hz = 10\n",
            ns[0],
            tap[0],
            v4[0],
            ns[1],
            tap[1],
            v4[1],
            dir.path().join("control.sock").display()
        );
        std::fs::write(&config, text).unwrap();
        Daemon {
            child: None,
            ns,
            v4_right: v4[1].clone(),
            log: dir.path().join("daemon.log"),
            config,
            traffic: Vec::new(),
            dir,
        }
    }

    /// A headless daemon (no terminal: stdin and stdout are not one),
    /// ready when this returns.
    fn start(tag: char, link: &str) -> Daemon {
        let mut d = Daemon::configure(tag, link);
        let child = Command::new(BIN)
            .args(["up", "-c"])
            .arg(&d.config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&d.log).unwrap())
            .spawn()
            .unwrap();
        d.child = Some(child);
        let t0 = Instant::now();
        while !d.cli(&["stats", "--json"]).status.success() {
            if let Some(status) = d.child.as_mut().unwrap().try_wait().unwrap() {
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

    /// Starts `cmd` in the namespace of `side`; it is killed on drop.
    fn spawn_in(&mut self, side: &str, cmd: &[&str]) {
        let child = Command::new(BIN)
            .args(["exec", side, "-c"])
            .arg(&self.config)
            .arg("--")
            .args(cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.traffic.push(child);
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.traffic.iter_mut().for_each(end);
        if let Some(mut child) = self.child.take() {
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let t0 = Instant::now();
            while matches!(child.try_wait(), Ok(None)) && t0.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(50));
            }
            end(&mut child);
        }
        for ns in &self.ns {
            if Path::new("/run/netns").join(ns).exists() {
                let _ = self.cli(&["down"]);
                let _ = Command::new("ip").args(["netns", "del", ns]).status();
            }
        }
    }
}

/// A detached tmux session on a private server (`tmux -L NAME`, its own
/// config), so the test never touches anyone's tmux; the server is killed
/// on drop. Panes stay after their command ends (`remain-on-exit`), so
/// what the command left on the screen can still be captured.
struct Tmux {
    server: String,
    conf: PathBuf,
}

impl Tmux {
    fn start(dir: &Path, width: u16, height: u16, command: &str) -> Tmux {
        let conf = dir.join("tmux.conf");
        std::fs::write(&conf, "set -g remain-on-exit on\nset -g status off\n").unwrap();
        let t = Tmux {
            server: format!(
                "bbtui-{}-{}",
                std::process::id(),
                dir.file_name().unwrap().to_string_lossy()
            ),
            conf,
        };
        let out = t.run(&[
            "new-session",
            "-d",
            "-s",
            "tui",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            command,
        ]);
        assert!(out.status.success(), "tmux new-session: {}", text(&out));
        t
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.server, "-f"])
            .arg(&self.conf)
            .args(args)
            .env_remove("TMUX")
            .output()
            .unwrap()
    }

    fn capture(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", "tui"]);
        assert!(out.status.success(), "tmux capture-pane: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Whether the command in the pane has ended.
    fn dead(&self) -> bool {
        let out = self.run(&["display-message", "-p", "-t", "tui", "#{pane_dead}"]);
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }

    /// Captures until `ok` holds (at most `limit`), returning the last one.
    fn wait_for(&self, limit: Duration, ok: impl Fn(&str) -> bool) -> String {
        let t0 = Instant::now();
        loop {
            let pane = self.capture();
            if ok(&pane) || t0.elapsed() > limit {
                return pane;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// The tree panel's `Sent` line of the root qdisc.
fn sent_line(pane: &str) -> Option<String> {
    pane.lines()
        .find(|l| l.trim_start().starts_with("Sent "))
        .map(|l| l.split('│').next().unwrap_or(l).trim().to_string())
}

/// TCP rows of the flow table (`ADDR:PORT→ADDR:PORT tcp ...`): the lines
/// between the table's title and the event log's, without the detail line.
fn tcp_rows(pane: &str) -> Vec<String> {
    pane.lines()
        .skip_while(|l| !l.starts_with(" flows L→R ("))
        .take_while(|l| !l.starts_with(" events ("))
        .filter(|l| l.contains('→') && l.contains(" tcp") && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

#[test]
fn live_top_in_tmux_shows_flows_and_counters_that_move() {
    if let Some(reason) = common::skip_reason(&["ip", "iperf3", "tmux"]) {
        eprintln!("SKIPPED: {reason}");
        return;
    }
    let mut d = Daemon::start(
        't',
        "rate = \"20mbit\"\ndelay = \"10ms\"\nqdisc = \"fq_codel\"",
    );
    let server = d.v4_right.clone();
    d.spawn_in("right", &["iperf3", "-s", "-1", "-B", &server]);
    std::thread::sleep(Duration::from_millis(500));
    d.spawn_in(
        "left",
        &[
            "iperf3", "-c", &server, "-t", "30", "-P", "4", "-C", "cubic",
        ],
    );
    let tui_log = d.dir.path().join("top.log");
    let command = format!(
        "{BIN} top -c {} --log {}",
        d.config.display(),
        tui_log.display()
    );
    let tmux = Tmux::start(d.dir.path(), 120, 40, &command);
    let first = tmux.wait_for(Duration::from_secs(20), |p| {
        tcp_rows(p).len() >= 2 && sent_line(p).is_some()
    });
    let diagnostics = |pane: &str| {
        format!(
            "pane:\n{pane}\ndaemon log:\n{}\ntop log:\n{}",
            d.log_text(),
            std::fs::read_to_string(&tui_log).unwrap_or_default()
        )
    };
    assert!(first.contains("root fq_codel"), "{}", diagnostics(&first));
    assert!(
        first.contains("qdisc fq_codel 8001: root"),
        "{}",
        diagnostics(&first)
    );
    assert!(tcp_rows(&first).len() >= 2, "{}", diagnostics(&first));
    let sent1 = sent_line(&first).unwrap();

    std::thread::sleep(Duration::from_millis(1500));
    let second = tmux.capture();
    let sent2 = sent_line(&second).unwrap_or_else(|| panic!("{}", diagnostics(&second)));
    assert_ne!(sent1, sent2, "the Sent counter did not move");
    assert!(tcp_rows(&second).len() >= 2, "{}", diagnostics(&second));
    assert!(
        first.lines().next() != second.lines().next(),
        "the header's time did not move:\n{first}\n{second}"
    );
    eprintln!("first capture:\n{first}\nsecond capture:\n{second}");

    // `q` quits the TUI and gives the terminal back: the alternate screen
    // is left, so the pane no longer shows the TUI.
    let out = tmux.run(&["send-keys", "-t", "tui", "q"]);
    assert!(out.status.success(), "tmux send-keys: {}", text(&out));
    let t0 = Instant::now();
    while !tmux.dead() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(tmux.dead(), "the TUI did not quit on q");
    let after = tmux.capture();
    assert!(
        !after.contains("qdisc fq_codel 8001: root") && tcp_rows(&after).is_empty(),
        "the screen was not restored:\n{after}"
    );
    // The daemon keeps running after the TUI leaves.
    assert!(d.cli(&["stats", "--json"]).status.success());
}

#[test]
fn live_up_on_a_terminal_opens_the_tui_and_q_removes_the_link() {
    if let Some(reason) = common::skip_reason(&["ip", "iperf3", "tmux"]) {
        eprintln!("SKIPPED: {reason}");
        return;
    }
    let d = Daemon::configure(
        'u',
        "rate = \"20mbit\"\ndelay = \"5ms\"\nqdisc = \"fq_codel\"",
    );
    // No --tui: the pane is a terminal in the foreground, so `up` opens it.
    let command = format!(
        "{BIN} up -c {} --log {}",
        d.config.display(),
        d.log.display()
    );
    let tmux = Tmux::start(d.dir.path(), 100, 30, &command);
    let pane = tmux.wait_for(Duration::from_secs(20), |p| {
        p.contains("qdisc fq_codel 8001: root")
    });
    assert!(
        pane.contains("qdisc fq_codel 8001: root"),
        "no TUI on the terminal:\n{pane}\ndaemon log:\n{}",
        d.log_text()
    );
    // The link is up behind it.
    assert!(d.cli(&["stats", "--json"]).status.success());
    let out = tmux.run(&["send-keys", "-t", "tui", "q"]);
    assert!(out.status.success(), "tmux send-keys: {}", text(&out));
    let t0 = Instant::now();
    while !tmux.dead() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(tmux.dead(), "up did not stop when its TUI quit");
    // Quitting the TUI stopped the daemon, which removed its namespaces.
    for ns in &d.ns {
        assert!(
            !Path::new("/run/netns").join(ns).exists(),
            "{ns} left behind; daemon log:\n{}",
            d.log_text()
        );
    }
}
