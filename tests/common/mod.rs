//! Helpers shared by the integration tests (`#[path = "../common/mod.rs"]
//! mod common;` in each tier's binary): the binary under test (`bloatbox`,
//! `run_bin`), the root check of the root-only tests, which are marked
//! `#[ignore = "needs root"]` and fail loudly when run without root or
//! without a tool they need, saying what to install (`require_root`,
//! `missing`, `require!`), bounded waits for a
//! condition instead of fixed sleeps (`wait_until`, `wait_for`,
//! `tcp_listening`), `Daemon`, a `bloatbox up` on names and addresses
//! unique to one test that cleans up on every exit path (the commands it
//! started killed, SIGTERM, then SIGKILL, `bloatbox down`, `ip netns del`
//! and `ip link del` as a last resort), and the seed experiments' helpers
//! (`seed`).
//!
//! Each test binary uses a part of this module.
#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

pub mod seed;
pub mod tmux;

pub const BIN: &str = env!("CARGO_BIN_EXE_bloatbox");

/// The binary under test, ready for arguments.
pub fn bloatbox() -> Command {
    Command::new(BIN)
}

/// `bloatbox ARGS...`, its output captured.
pub fn run_bin(args: &[&str]) -> Output {
    bloatbox()
        .args(args)
        .output()
        .expect("running the bloatbox binary")
}

/// What a root-only test says when run without root.
pub const NEEDS_ROOT: &str = "needs root: run as root (`cargo test -- --include-ignored`); \
     as a user, plain `cargo test` leaves this test out as ignored";

/// Panics unless root. Root-only tests are `#[ignore = "needs root"]`, so
/// a plain `cargo test` reports them as ignored; run anyway (with
/// `--include-ignored`) without root, they fail instead of passing
/// untested.
pub fn require_root() {
    assert!(nix::unistd::geteuid().is_root(), "{NEEDS_ROOT}");
}

/// Whether `tool` is on the PATH.
pub fn tool_exists(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The Debian/Ubuntu package that puts `tool` on the PATH (what `.ci/run`
/// installs).
pub fn package_of(tool: &str) -> &str {
    match tool {
        "ip" => "iproute2",
        "ping" => "iputils-ping",
        "setcap" => "libcap2-bin",
        "setpriv" | "unshare" | "chrt" | "taskset" | "setsid" | "mount" => "util-linux",
        "sleep" | "timeout" | "mknod" => "coreutils",
        other => other,
    }
}

/// Why this machine cannot run a root test needing `tools` (a missing
/// tool, no /dev/net/tun), with what to install, if it cannot. Panics
/// unless root: see `require_root`.
pub fn missing(tools: &[&str]) -> Option<String> {
    require_root();
    if !Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing: load the tun module (modprobe tun)".into());
    }
    tools.iter().find(|tool| !tool_exists(tool)).map(|tool| {
        format!(
            "`{tool}` is not installed: apt-get install {} (.ci/run installs it)",
            package_of(tool)
        )
    })
}

/// Fails unless root, and fails saying what to install unless `ip` plus
/// the given tools are there: no test passes without checking anything.
#[macro_export]
macro_rules! require {
    ($($tool:expr),*) => {
        if let Some(reason) = common::missing(&["ip" $(, $tool)*]) {
            panic!("this test cannot run here: {reason}");
        }
    };
}

/// Polls `cond` (every 5 ms) until it holds or `limit` has passed; whether
/// it held. The assertion that follows says what was expected.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    wait_for(limit, || cond().then_some(())).is_some()
}

/// Polls `f` (every 5 ms) until it returns a value or `limit` has passed.
pub fn wait_for<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if t0.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether a TCP socket listens on `port` in network namespace `ns` (as
/// /proc/net/tcp and tcp6 list it there), e.g. an iperf3 server that is
/// ready for its client.
pub fn tcp_listening(ns: &str, port: u16) -> bool {
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            ns,
            "cat",
            "/proc/net/tcp",
            "/proc/net/tcp6",
        ])
        .output();
    let Ok(out) = out else { return false };
    let local = format!(":{port:04X}");
    String::from_utf8_lossy(&out.stdout).lines().any(|line| {
        let mut fields = line.split_whitespace().skip(1);
        let addr = fields.next().unwrap_or("");
        let state = fields.nth(1).unwrap_or("");
        addr.ends_with(&local) && state == "0A"
    })
}

#[derive(Clone, Copy)]
pub enum Side {
    Left,
    Right,
}

impl Side {
    pub fn arg(self) -> &'static str {
        match self {
            Side::Left => "left",
            Side::Right => "right",
        }
    }
}

/// Names and addresses of one link, left then right.
#[derive(Clone, Debug)]
pub struct Names {
    pub ns: [String; 2],
    pub tap: [String; 2],
    pub v4: [String; 2],
    pub v6: [String; 2],
}

static NEXT: AtomicU32 = AtomicU32::new(1);

impl Names {
    /// Names no other test of any process uses (pid and a counter).
    pub fn unique() -> Names {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let octet = 100 + (pid * 7 + n) % 150;
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

    /// What netns/up.sh makes with `BB_NAME=name` (and `bloatbox run
    /// --name name`): namespaces and TAPs NAMEl / NAMEr, the default
    /// config's addresses.
    pub fn of_run(name: &str) -> Names {
        let lr = |s: &str| [format!("{s}l"), format!("{s}r")];
        Names {
            ns: lr(name),
            tap: lr(name),
            v4: ["10.77.0.1".into(), "10.77.0.2".into()],
            v6: ["fd00:77::1".into(), "fd00:77::2".into()],
        }
    }

    /// What of these names exists: namespaces, TAPs in the root namespace.
    pub fn leftovers(&self) -> Vec<String> {
        let ns = self
            .ns
            .iter()
            .filter(|ns| Path::new("/run/netns").join(ns).exists());
        let taps = self
            .tap
            .iter()
            .filter(|tap| Path::new("/sys/class/net").join(tap).exists());
        ns.chain(taps).cloned().collect()
    }
}

/// A `bloatbox up` with its configuration in a tempdir, and the commands
/// started in its namespaces with `start_in`. On drop: those commands are
/// killed, the daemon gets SIGTERM (SIGKILL after 5 s), then `bloatbox
/// down`, `ip netns del` and `ip link del` remove whatever of its names is
/// left.
pub struct Daemon {
    child: Option<Child>,
    background: Vec<Child>,
    pub names: Names,
    pub config: PathBuf,
    /// The control socket, in a directory of its own (`run/`), which a
    /// test may hand to another user.
    pub socket: PathBuf,
    pub log: PathBuf,
    /// The binary run for `up` and the CLI: the test build unless a test
    /// sets another (a copy with file capabilities).
    pub bin: PathBuf,
    pub dir: tempfile::TempDir,
}

impl Daemon {
    /// Starts `bloatbox up` on unique names with `link` as the body of
    /// `[link]` (direction tables may follow); returns once its stats
    /// answer.
    pub fn start(link: &str) -> Daemon {
        Daemon::start_with(Names::unique(), link, &[])
    }

    /// `bloatbox up ARGS...` on `names`.
    pub fn start_with(names: Names, link: &str, args: &[&str]) -> Daemon {
        let mut d = Daemon::configure(names, "", link);
        d.spawn(None, args);
        d.wait_ready();
        d
    }

    /// Writes the configuration of `names`, with `daemon` as more lines of
    /// `[daemon]` and `link` as the body of `[link]` (direction tables may
    /// follow), without starting anything.
    pub fn configure(names: Names, daemon: &str, link: &str) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("bloatbox.toml");
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        let socket = run.join("control.sock");
        let side = |i: usize| {
            format!(
                "namespace = \"{}\"\ntap = \"{}\"\nipv4 = \"{}/24\"\nipv6 = \"{}/64\"\n",
                names.ns[i], names.tap[i], names.v4[i], names.v6[i]
            )
        };
        let text = format!(
            "[left]\n{}\n[right]\n{}\n[daemon]\ncontrol_socket = \"{}\"\n{daemon}\n\n[link]\n{link}\n",
            side(0),
            side(1),
            socket.display()
        );
        std::fs::write(&config, text).unwrap();
        Daemon {
            child: None,
            background: Vec::new(),
            names,
            config,
            socket,
            log: dir.path().join("daemon.log"),
            bin: BIN.into(),
            dir,
        }
    }

    /// Starts `bloatbox up -c CONFIG ARGS...`, as `user` (uid and gid) if
    /// given, headless (no terminal on stdin or stdout), its stderr in the
    /// log.
    pub fn spawn(&mut self, user: Option<u32>, args: &[&str]) {
        let mut cmd = Command::new(&self.bin);
        cmd.args(["up", "-c"])
            .arg(&self.config)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&self.log).unwrap());
        if let Some(uid) = user {
            cmd.uid(uid).gid(uid);
        }
        self.child = Some(cmd.spawn().unwrap());
    }

    /// Returns once the daemon's stats answer; panics if it exits first or
    /// is not ready within 15 s.
    pub fn wait_ready(&mut self) {
        let t0 = Instant::now();
        while !self.cli(&["stats", "--json"]).status.success() {
            if let Some(status) = self.child.as_mut().expect("started").try_wait().unwrap() {
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

    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("running").id() as i32
    }

    /// Whether the daemon started and has not exited.
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().unwrap().is_none())
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `bloatbox SUBCOMMAND -c CONFIG ARGS...` (`args[0]` is the
    /// subcommand).
    pub fn cli(&self, args: &[&str]) -> Output {
        self.cli_as(None, args)
    }

    /// `bloatbox SUBCOMMAND -c CONFIG ARGS...`, as `user` if given.
    pub fn cli_as(&self, user: Option<u32>, args: &[&str]) -> Output {
        let mut cmd = Command::new(&self.bin);
        cmd.arg(args[0])
            .arg("-c")
            .arg(&self.config)
            .args(&args[1..]);
        if let Some(uid) = user {
            cmd.uid(uid).gid(uid);
        }
        cmd.output().unwrap()
    }

    fn exec_command(&self, side: Side, cmd: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        c.args(["exec", side.arg(), "-c"])
            .arg(&self.config)
            .arg("--")
            .args(cmd);
        c
    }

    /// `bloatbox exec SIDE -c CONFIG -- CMD...`.
    pub fn exec(&self, side: Side, cmd: &[&str]) -> Output {
        self.exec_command(side, cmd).output().unwrap()
    }

    /// `cmd` in the namespace of `side`, its output piped to the caller.
    pub fn spawn_in(&self, side: Side, cmd: &[&str]) -> Child {
        self.exec_command(side, cmd)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Starts a one-shot iperf3 server on the right side's address and
    /// waits (at most 10 s) until it listens on port 5201.
    pub fn start_iperf3_server(&mut self) {
        let server = self.names.v4[1].clone();
        self.start_in(Side::Right, &["iperf3", "-s", "-1", "-B", &server]);
        assert!(
            wait_until(Duration::from_secs(10), || tcp_listening(
                &self.names.ns[1],
                5201
            )),
            "the iperf3 server never listened"
        );
    }

    /// Starts `cmd` in the namespace of `side` without stdio; it is killed
    /// on drop, before the daemon stops.
    pub fn start_in(&mut self, side: Side, cmd: &[&str]) {
        let child = self
            .exec_command(side, cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.background.push(child);
    }

    pub fn stats(&self) -> serde_json::Value {
        let out = self.cli(&["stats", "--json"]);
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Waits (at most `limit`) for the daemon to exit; its status and how
    /// long that took. Kills it and panics with its log if it still runs
    /// then.
    pub fn wait_exit(&mut self, limit: Duration) -> (ExitStatus, Duration) {
        let mut child = self.child.take().expect("running");
        let t0 = Instant::now();
        match wait_timeout(&mut child, limit) {
            Some(status) => (status, t0.elapsed()),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the daemon still ran after {limit:?}: {}", self.log_text())
            }
        }
    }

    /// SIGTERM and wait (at most `limit`) for the exit.
    pub fn stop_within(&mut self, limit: Duration) -> ExitStatus {
        signal(self.child.as_ref().expect("running"), Signal::SIGTERM);
        self.wait_exit(limit).0
    }

    /// SIGTERM and wait (at most 10 s) for a normal exit.
    pub fn stop(&mut self) -> ExitStatus {
        self.stop_within(Duration::from_secs(10))
    }

    pub fn kill9(&mut self) {
        let mut child = self.child.take().expect("running");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// What of this daemon's names still exists.
    pub fn leftovers(&self) -> Vec<String> {
        self.names.leftovers()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        for child in &mut self.background {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(mut child) = self.child.take() {
            signal(&child, Signal::SIGTERM);
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
        for tap in &self.names.tap {
            if Path::new("/sys/class/net").join(tap).exists() {
                let _ = Command::new("ip").args(["link", "del", tap]).status();
            }
        }
    }
}

pub fn signal(child: &Child, sig: Signal) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig);
}

pub fn wait_timeout(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Runs a netns/ script (`args[0]`: up.sh, down.sh, exec.sh) with
/// `BB_NAME=name`.
pub fn netns_script(name: &str, args: &[&str]) -> Output {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("netns");
    Command::new(dir.join(args[0]))
        .args(&args[1..])
        .env("BB_NAME", name)
        .output()
        .unwrap()
}

/// The round-trip times of ping's summary line
/// `rtt min/avg/max/mdev = a/b/c/d ms[, pipe N]` (iputils), in ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PingRtt {
    pub min: f64,
    pub avg: f64,
    pub max: f64,
    pub mdev: f64,
}

/// The RTT summary of ping's output `out`, if it has one (a ping that
/// received nothing prints none).
pub fn ping_rtt(out: &str) -> Option<PingRtt> {
    let line = out.lines().find(|l| l.contains("min/avg/max"))?;
    let mut values = line.split('=').nth(1)?.trim().split('/');
    let mut next = || -> Option<f64> { values.next()?.split_whitespace().next()?.parse().ok() };
    Some(PingRtt {
        min: next()?,
        avg: next()?,
        max: next()?,
        mdev: next()?,
    })
}

/// `ping_rtt` of a ping that must have printed its summary.
pub fn expect_ping_rtt(out: &str) -> PingRtt {
    ping_rtt(out).unwrap_or_else(|| panic!("no ping RTT summary in {out}"))
}

/// A command's stdout and stderr, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `ProptestConfig` with `cases` whose failures persist in the one place
/// for the package's regression seeds, `proptest-regressions/` at the
/// root, under the test's source path (`source` is the caller's
/// `file!()`, e.g. `proptest-regressions/tests/pure/config.txt`).
pub fn proptest_config(cases: u32, source: &str) -> proptest::test_runner::Config {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("proptest-regressions")
        .join(source)
        .with_extension("txt");
    // `Direct` wants a `&'static str`: one small path per proptest block.
    let path: &'static str = Box::leak(path.to_string_lossy().into_owned().into_boxed_str());
    proptest::test_runner::Config {
        cases,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(path),
        )),
        ..proptest::test_runner::Config::default()
    }
}
