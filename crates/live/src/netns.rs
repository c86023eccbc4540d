//! Network namespaces and the TAPs inside them: set-up, cleanup and `exec`.
//!
//! `Topology::up` creates one namespace per side, creates each TAP in the root
//! namespace (so this process keeps its file descriptor), moves it into its
//! namespace, and configures it there: MTU, txqueuelen and MAC (at creation),
//! IPv4 and IPv6 addresses (`nodad`, so IPv6 works at once), `lo` and the TAP
//! up. Set-up uses plain `ip` commands; nothing here runs per packet.
//!
//! Everything created is recorded in a `LinkGuard` that removes it on drop,
//! which also runs while unwinding from a panic. Signals are handled without
//! running cleanup in a signal handler: the daemon blocks SIGINT, SIGTERM and
//! SIGHUP and reads them from a signalfd (`TerminationSignals`), then drops the guard
//! from ordinary code. A run killed with SIGKILL leaves its namespaces behind
//! (its TAPs die with their descriptors): `detect_leftovers` finds them and
//! `down` removes them.
//!
//! `Topology::attach` is the other way in: it opens persistent TAPs that
//! already sit in existing namespaces (netns/up.sh makes them), entering each
//! namespace to do so, and leaves everything in place on exit.

use std::net::IpAddr;
use std::path::Path as FsPath;
use std::process::Command;
use std::time::Duration;

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::unistd::Pid;

use crate::port::{TapPort, TapSpec};

/// Capability bits (linux/capability.h) needed for set-up.
const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;

/// Where `ip netns add` mounts named namespaces.
const NETNS_RUN_DIR: &str = "/run/netns";
/// How long `kill_until_gone` keeps killing before it gives up and warns.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// Why a namespace or TAP operation failed; each message says how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// Not root and without CAP_NET_ADMIN and CAP_SYS_ADMIN; the failing step.
    #[error("bloatbox up needs root or CAP_NET_ADMIN and CAP_SYS_ADMIN: {0} (run it with sudo)")]
    NotPrivileged(String),
    #[error(
        "these already exist: {}; if a killed run left them, remove them with `bloatbox down` \
         (same -c FILE); if you made them with netns/up.sh, start with `bloatbox up --attach`",
        .0.join(", ")
    )]
    /// Namespaces or devices of the configuration exist already (a killed
    /// run's, or another link's).
    Leftovers(Vec<String>),
    /// An `ip` command failed, with its stderr.
    #[error("`{cmd}` failed: {stderr}")]
    Command {
        /// The command line.
        cmd: String,
        /// What it printed on standard error.
        stderr: String,
    },
    /// A system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The system call's error.
        #[source]
        source: std::io::Error,
    },
    /// `exec` into a namespace that does not exist (no link is up).
    #[error("network namespace {0:?} does not exist: start the link first with `bloatbox up`")]
    NoSuchNamespace(String),
    /// `up --wire`: an interface that cannot be wired, named, and why
    /// (`crate::wire`).
    #[error("--wire: {0}")]
    Wire(String),
    /// `up --attach`: the prepared namespaces or TAPs are not there.
    #[error("--attach: {0}")]
    NotPrepared(String),
    /// `exec` of a command that is not on the PATH (exit status 127).
    #[error("{0}: command not found")]
    CommandNotFound(String),
    /// The rootless link (namespaces of a user namespace, for an unprivileged
    /// user) could not be set up; the step and its error.
    #[error("rootless link: {0}")]
    Rootless(String),
}

/// One side of the link: a namespace holding one TAP and its addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SideSpec {
    /// The name of the network namespace (`ip netns` name).
    pub netns: String,
    /// The TAP device created in it.
    pub tap: TapSpec,
    /// Addresses with prefix length, IPv4 and IPv6.
    pub addrs: Vec<(IpAddr, u8)>,
}

/// One end of the link: the namespace `exec` runs in, a harness command's
/// side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
// A doc comment on a variant would become clap's help for that value and
// change `--help`; the names say it (the namespace of that side).
#[allow(missing_docs)]
pub enum Side {
    Left,
    Right,
}

/// Both sides of the link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// The left namespace and its TAP.
    pub left: SideSpec,
    /// The right namespace and its TAP.
    pub right: SideSpec,
}

/// Removes, on drop, every namespace it recorded (the TAPs inside go with
/// them; a TAP still in the root namespace goes when its port is dropped).
/// A rootless link has no guard: its anonymous namespaces
/// (`crate::rootless::Namespaces`) go when they are dropped.
#[derive(Debug, Default)]
pub struct LinkGuard {
    namespaces: Vec<String>,
}

impl LinkGuard {
    fn record_namespace(&mut self, name: &str) {
        self.namespaces.push(name.to_string());
    }
}

impl Drop for LinkGuard {
    fn drop(&mut self) {
        for ns in self.namespaces.drain(..).rev() {
            if !netns_exists(&ns) {
                tracing::info!(netns = %ns, "network namespace already removed");
                continue;
            }
            kill_netns_processes(&ns);
            match ip(&["netns", "del", &ns]) {
                Ok(()) => tracing::info!(netns = %ns, "removed network namespace"),
                Err(e) => tracing::warn!(netns = %ns, "cleanup: {e}"),
            }
        }
    }
}

/// Processes inside namespace `ns` (`ip netns pids`), without this one.
fn netns_pids(ns: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    Command::new("ip")
        .args(["netns", "pids", ns])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .filter(|&p| p != me)
                .collect()
        })
        .unwrap_or_default()
}

/// SIGKILLs every process in namespace `ns` until none is left (bounded).
/// Deleting a namespace's name does not end what runs inside: an `iperf3`
/// started with `bloatbox exec` would live on, unreachable, in a namespace
/// without a name.
pub fn kill_netns_processes(ns: &str) {
    kill_until_gone(ns, || netns_pids(ns));
}

/// SIGKILLs the processes `pids` lists (those inside namespace `ns`) until
/// it lists none, for at most `KILL_WAIT`.
pub fn kill_until_gone(ns: &str, pids: impl Fn() -> Vec<i32>) {
    let deadline = std::time::Instant::now() + KILL_WAIT;
    loop {
        let pids = pids();
        if pids.is_empty() {
            return;
        }
        if std::time::Instant::now() >= deadline {
            tracing::warn!(netns = ns, ?pids, "processes survive SIGKILL");
            return;
        }
        for pid in pids {
            tracing::info!(netns = ns, pid, "killing a process left in the namespace");
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Checks for the capabilities set-up needs, with a message saying which is
/// missing.
pub fn require_privileges() -> Result<(), NetnsError> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| NetnsError::Io {
        what: "reading /proc/self/status".into(),
        source: e,
    })?;
    let cap_eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    let missing: Vec<&str> = [
        (CAP_NET_ADMIN, "CAP_NET_ADMIN"),
        (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"),
    ]
    .iter()
    .filter(|(bit, _)| cap_eff & (1u64 << bit) == 0)
    .map(|(_, name)| *name)
    .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(NetnsError::NotPrivileged(format!(
            "this process (uid {}) lacks {}",
            nix::unistd::geteuid(),
            missing.join(" and ")
        )))
    }
}

/// Runs `ip ARGS...`, turning a failure into an error that quotes the command
/// and what `ip` printed.
fn ip(args: &[&str]) -> Result<(), NetnsError> {
    run_ip(Command::new("ip"), args)
}

/// Runs `cmd` (an `ip` command, perhaps set to enter a namespace first)
/// with ARGS, as `ip` does.
pub(crate) fn run_ip(mut cmd: Command, args: &[&str]) -> Result<(), NetnsError> {
    let text = format!("ip {}", args.join(" "));
    let out = cmd.args(args).output().map_err(|e| NetnsError::Io {
        what: format!("running `{text}` (is iproute2 installed?)"),
        source: e,
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(NetnsError::Command {
            cmd: text,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// A named network namespace of that name exists (in /run/netns).
pub fn netns_exists(name: &str) -> bool {
    FsPath::new(NETNS_RUN_DIR).join(name).exists()
}

/// Frames the host in namespace `ns` sent into its TAP `tap` that the
/// kernel dropped before the datapath read them: the TAP's own ring (its TX
/// dropped counter) plus the root qdisc on the TAP. These never reach the
/// daemon, so only the kernel can count them. `None` if `ip` or `tc` cannot
/// tell (namespace gone, tool missing).
pub fn tap_tx_dropped(ns: &str, tap: &str) -> Option<u64> {
    let json = |program: &str, args: &[&str]| -> Option<serde_json::Value> {
        let out = Command::new(program).args(args).output().ok()?;
        if !out.status.success() {
            return None;
        }
        serde_json::from_slice(&out.stdout).ok()
    };
    let link = json("ip", &["-n", ns, "-s", "-j", "link", "show", "dev", tap])?;
    let ring = link
        .get(0)?
        .get("stats64")?
        .get("tx")?
        .get("dropped")?
        .as_u64()?;
    let qdiscs = json("tc", &["-n", ns, "-s", "-j", "qdisc", "show", "dev", tap])?;
    let qdisc: u64 = qdiscs
        .as_array()?
        .iter()
        .filter(|q| q.get("root").and_then(|r| r.as_bool()) == Some(true))
        .filter_map(|q| q.get("drops").and_then(|d| d.as_u64()))
        .sum();
    Some(ring + qdisc)
}

/// An interface of that name exists in this process's namespace.
fn root_link_exists(name: &str) -> bool {
    FsPath::new("/sys/class/net").join(name).exists()
}

impl Topology {
    fn sides(&self) -> [&SideSpec; 2] {
        [&self.left, &self.right]
    }

    /// Creates both namespaces and TAPs. Returns the guard that removes them
    /// and the (left, right) TAP ports. On error everything created so far is
    /// removed before returning.
    pub fn up(&self) -> Result<(LinkGuard, TapPort, TapPort), NetnsError> {
        require_privileges()?;
        let leftovers = detect_leftovers(self);
        if !leftovers.is_empty() {
            return Err(NetnsError::Leftovers(leftovers));
        }
        let mut guard = LinkGuard::default();
        let left = set_up_side(&self.left, &mut guard)?;
        let right = set_up_side(&self.right, &mut guard)?;
        Ok((guard, left, right))
    }

    /// Attaches to namespaces and persistent TAPs made beforehand (e.g. by
    /// netns/up.sh) instead of creating them. Each TAP is opened from inside
    /// its namespace, since TUNSETIFF finds a device by name in the caller's
    /// namespace; its MTU must be the configured one. The returned guard
    /// records nothing: what this process did not create stays on exit.
    pub fn attach(&self) -> Result<(LinkGuard, TapPort, TapPort), NetnsError> {
        require_privileges()?;
        let left = attach_side(&self.left)?;
        let right = attach_side(&self.right)?;
        Ok((LinkGuard::default(), left, right))
    }
}

/// How to fix a missing namespace or TAP in attach mode.
const PREPARE: &str =
    "create the namespaces and TAPs first with netns/up.sh (same names), or start without --attach";

fn attach_side(side: &SideSpec) -> Result<TapPort, NetnsError> {
    let (ns, dev) = (side.netns.as_str(), side.tap.name.as_str());
    if !netns_exists(ns) {
        return Err(NetnsError::NotPrepared(format!(
            "network namespace {ns:?} does not exist; {PREPARE}"
        )));
    }
    let io_err = |what: String, source: std::io::Error| NetnsError::Io { what, source };
    let (port, mtu) = in_netns(ns, || TapPort::attach(dev))
        .map_err(|e| io_err(format!("entering network namespace {ns:?}"), e))?
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                NetnsError::NotPrepared(format!(
                    "no interface {dev:?} in namespace {ns:?}; {PREPARE}"
                ))
            } else {
                io_err(format!("in namespace {ns:?}"), e)
            }
        })?;
    if mtu != side.tap.mtu {
        return Err(NetnsError::NotPrepared(format!(
            "TAP {dev:?} in {ns:?} has MTU {mtu}, the configuration says tap.mtu = {}; \
             set tap.mtu = {mtu} or recreate the TAP",
            side.tap.mtu
        )));
    }
    tracing::info!(netns = ns, tap = dev, "attached to an existing TAP");
    Ok(port)
}

/// Runs `f` on a new thread that has entered the named namespace
/// (`/run/netns/NS`) and returns its result; descriptors it opens (sockets,
/// TAPs) stay bound to that namespace. A panic in `f` is resumed here.
pub fn in_netns<T, F>(ns: &str, f: F) -> std::io::Result<T>
where
    T: Send,
    F: FnOnce() -> T + Send,
{
    let file = std::fs::File::open(FsPath::new(NETNS_RUN_DIR).join(ns))?;
    std::thread::scope(|s| {
        let handle = s.spawn(move || {
            nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET)?;
            Ok(f())
        });
        match handle.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

fn set_up_side(side: &SideSpec, guard: &mut LinkGuard) -> Result<TapPort, NetnsError> {
    let ns = side.netns.as_str();
    let dev = side.tap.name.as_str();
    ip(&["netns", "add", ns])?;
    guard.record_namespace(ns);
    let port = TapPort::create(&side.tap).map_err(|e| NetnsError::Io {
        what: format!("creating TAP {dev:?}"),
        source: e,
    })?;
    ip(&["link", "set", dev, "netns", ns])?;
    ip(&["-n", ns, "link", "set", "lo", "up"])?;
    for (addr, prefix) in &side.addrs {
        let cidr = format!("{addr}/{prefix}");
        match addr {
            IpAddr::V4(_) => ip(&["-n", ns, "addr", "add", &cidr, "dev", dev])?,
            IpAddr::V6(_) => ip(&["-n", ns, "addr", "add", &cidr, "dev", dev, "nodad"])?,
        }
    }
    ip(&["-n", ns, "link", "set", dev, "up"])?;
    tracing::info!(netns = ns, tap = dev, "namespace ready");
    Ok(port)
}

/// Namespaces and root-namespace TAPs of this topology that already exist.
pub fn detect_leftovers(topo: &Topology) -> Vec<String> {
    let mut found = Vec::new();
    for side in topo.sides() {
        if netns_exists(&side.netns) {
            found.push(format!("network namespace {:?}", side.netns));
        }
        if root_link_exists(&side.tap.name) {
            found.push(format!("interface {:?}", side.tap.name));
        }
    }
    found
}

/// Removes what a killed run left: the namespaces (with their TAPs and the
/// processes still running inside) and TAPs still in the root namespace.
/// Returns what was removed.
pub fn down(topo: &Topology) -> Result<Vec<String>, NetnsError> {
    let mut removed = Vec::new();
    for side in topo.sides() {
        if netns_exists(&side.netns) {
            kill_netns_processes(&side.netns);
            ip(&["netns", "del", &side.netns])?;
            removed.push(format!("network namespace {:?}", side.netns));
        }
        if root_link_exists(&side.tap.name) {
            ip(&["link", "del", &side.tap.name])?;
            removed.push(format!("interface {:?}", side.tap.name));
        }
    }
    Ok(removed)
}

/// Becomes `ip netns exec NS CMD...` (the process image is replaced, as
/// `ip netns exec` itself does), so that a signal for this process reaches
/// the command and nothing is left running when it is killed. Returns only
/// on failure.
pub fn exec_in(ns: &str, cmd: &[String]) -> Result<std::convert::Infallible, NetnsError> {
    if cmd.is_empty() {
        return Err(NetnsError::Command {
            cmd: format!("ip netns exec {ns}"),
            stderr: "no command given: use `bloatbox exec left -- COMMAND [ARGS...]`".into(),
        });
    }
    if !netns_exists(ns) {
        return Err(NetnsError::NoSuchNamespace(ns.to_string()));
    }
    if !command_found(&cmd[0]) {
        return Err(NetnsError::CommandNotFound(cmd[0].clone()));
    }
    use std::os::unix::process::CommandExt;
    let e = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(cmd)
        .exec();
    Err(NetnsError::Io {
        what: format!("running `ip netns exec {ns} {}`", cmd.join(" ")),
        source: e,
    })
}

/// Whether `name` is an executable file as `execvp` would find it (a path
/// if it has a `/`, else along `PATH`): `ip netns exec` sees the same files
/// (it remounts only /sys, and binds /etc/netns/NS files over /etc).
fn command_found(name: &str) -> bool {
    let executable =
        |p: &FsPath| p.is_file() && nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).is_ok();
    if name.contains('/') {
        return executable(FsPath::new(name));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| executable(&dir.join(name))))
}

/// SIGINT, SIGTERM and SIGHUP, blocked for the whole process and readable from a
/// signalfd, so that cleanup runs in ordinary code rather than in a handler.
/// Create it before spawning threads: they inherit the blocked mask.
pub struct TerminationSignals {
    fd: SignalFd,
}

impl TerminationSignals {
    /// Blocks SIGINT and SIGTERM in this thread (and the threads it spawns
    /// later) and opens a signalfd that reads them.
    pub fn block() -> Result<TerminationSignals, NetnsError> {
        let mut mask = SigSet::empty();
        mask.add(Signal::SIGINT);
        mask.add(Signal::SIGTERM);
        mask.add(Signal::SIGHUP);
        let io_err = |what: &str, e: nix::Error| NetnsError::Io {
            what: what.to_string(),
            source: e.into(),
        };
        mask.thread_block()
            .map_err(|e| io_err("blocking SIGINT/SIGTERM/SIGHUP", e))?;
        let fd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
            .map_err(|e| io_err("creating a signalfd", e))?;
        Ok(TerminationSignals { fd })
    }

    /// A signal number's name for the log (`SIGHUP`), or the number.
    pub fn name(sig: i32) -> String {
        Signal::try_from(sig).map_or_else(|_| sig.to_string(), |s| s.as_str().to_string())
    }

    /// Waits up to `timeout_ms` for one of them; returns the signal
    /// number if one arrived.
    pub fn wait(&mut self, timeout_ms: u16) -> Option<i32> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        use std::os::fd::AsFd;
        let mut fds = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(timeout_ms)) {
            Ok(n) if n > 0 => self
                .fd
                .read_signal()
                .ok()
                .flatten()
                .map(|info| info.ssi_signo as i32),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(tag: &str) -> Topology {
        let side = |s: &str| SideSpec {
            netns: format!("bbu-{tag}-{s}"),
            tap: TapSpec {
                name: format!("bbu{tag}{s}"),
                mtu: 1500,
                mac: [2, 0, 0, 0, 0, 1],
                txqueuelen: 10,
                offload: false,
            },
            addrs: vec![],
        };
        Topology {
            left: side("l"),
            right: side("r"),
        }
    }

    #[test]
    fn nothing_is_a_leftover_for_fresh_names() {
        let t = topo(&std::process::id().to_string());
        assert!(detect_leftovers(&t).is_empty());
        assert_eq!(down(&t).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn exec_in_missing_namespace_says_so() {
        let err = exec_in("bbu-no-such-ns", &["true".into()]).unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
        let err = exec_in("bbu-no-such-ns", &[]).unwrap_err();
        assert!(err.to_string().contains("no command given"), "{err}");
    }

    #[test]
    fn failed_ip_command_quotes_command_and_stderr() {
        let err = ip(&["link", "show", "dev", "bbu-no-such-dev"]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("ip link show dev bbu-no-such-dev"), "{msg}");
    }

    #[test]
    #[ignore = "needs root"]
    fn attach_without_prepared_namespaces_says_how_to_make_them() {
        assert!(
            require_privileges().is_ok(),
            "needs root or CAP_NET_ADMIN+CAP_SYS_ADMIN"
        );
        let t = topo(&format!("{}a", std::process::id() % 100_000));
        let err = t.attach().expect_err("nothing to attach to").to_string();
        assert!(err.contains(&t.left.netns), "{err}");
        assert!(err.contains("netns/up.sh"), "{err}");
        assert!(detect_leftovers(&t).is_empty(), "attach creates nothing");
    }

    #[test]
    #[ignore = "needs root"]
    fn up_creates_everything_and_the_guard_removes_it() {
        assert!(
            require_privileges().is_ok(),
            "needs root or CAP_NET_ADMIN+CAP_SYS_ADMIN"
        );
        let mut t = topo(&format!("{}g", std::process::id() % 100_000));
        t.left.addrs = vec![("10.201.0.1".parse().unwrap(), 24)];
        t.right.addrs = vec![("fd00:201::2".parse().unwrap(), 64)];
        let (guard, l, r) = t.up().unwrap();
        assert_eq!(detect_leftovers(&t).len(), 2, "namespaces exist while up");
        assert!(matches!(t.up(), Err(NetnsError::Leftovers(_))));
        let out = Command::new("ip")
            .args(["-n", &t.left.netns, "addr", "show", "dev", &t.left.tap.name])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("10.201.0.1/24"), "{text}");
        assert!(text.contains("02:00:00:00:00:01"), "{text}");
        drop((l, r));
        drop(guard);
        assert!(detect_leftovers(&t).is_empty());
    }
}
