//! bloatbox inside test suites: a `Link` guard that brings an emulated link
//! up between two fresh network namespaces, runs closures and commands on
//! either side, changes the link mid-test and reads its counters, and tears
//! everything down when dropped (also while unwinding from a panic); plus
//! `bloatbox run` (in `run`), the one-line form for any language's tests.
//!
//! Every link gets names of its own (`bb<pid base 36>-<n>` plus `l`/`r` for
//! the namespaces and TAPs, a control socket under `/run/bloatbox/`), so
//! links in parallel tests and parallel processes never collide. While up,
//! a named link is recorded under `/run/bloatbox/runs/` (in `runs`), so that
//! `bloatbox down --runs` can clean up after a SIGKILLed owner.
//!
//! `LinkBuilder::rootless` puts the link in anonymous namespaces instead
//! (`crate::rootless`): no root needed once the process is uid 0 of a user
//! namespace (`bloatbox run --rootless` enters one; a test binary can run
//! under `unshare -Ur`). `command`, `run_in` and teardown then use the
//! namespace descriptors; the namespace names are labels only.
//!
//! `LinkBuilder::wire` joins two existing interfaces instead
//! (`crate::wire`, `bloatbox run --wire`): no namespace is made, so
//! `command` and `run_in` run in the caller's own namespace (reach the
//! wired hosts with `ip netns exec`), the run is not recorded and teardown
//! kills no process.
//!
//! ```no_run
//! use bloatbox::harness::{Link, Side};
//! use bloatbox::dir::Dir;
//!
//! // Needs root (namespaces and TAPs). 20 ms each way, 10 Mbit/s.
//! let link = Link::builder()
//!     .set("link.delay=20ms")
//!     .set("link.rate=10mbit")
//!     .up()?;
//! let peer = link.endpoint(Side::Right).ipv4.addr;
//! let server = link.run_in(Side::Right, || std::net::TcpListener::bind("0.0.0.0:7000"))??;
//! let client = std::thread::spawn({
//!     let link_ns = link.endpoint(Side::Left).namespace.clone();
//!     move || bloatbox::harness::in_netns(&link_ns, move || {
//!         std::net::TcpStream::connect((peer, 7000)).map(|_| ())
//!     })
//! });
//! let (_conn, _) = server.accept()?;
//! client.join().unwrap()??;
//! link.set_link(Dir::LeftToRight, |p| p.rate_bytes_ps = 125_000)?; // 1 Mbit/s
//! let status = link.command(Side::Left, "ping").args(["-c", "1", &peer.to_string()]).status()?;
//! assert!(status.success());
//! let stats = link.fresh_stats()?;
//! println!("{} frames left→right", stats.bridge.path(Dir::LeftToRight).counters.frames_out);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod run;
pub mod runs;

use std::fs::File;
use std::io;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::clock::MonotonicClock;
use crate::config::{Config, ConfigError, Endpoint};
use crate::datapath::{Command as DpCommand, DatapathError, LiveSnapshot};
use crate::dir::Dir;
use crate::link::LinkParams;
use crate::live::LiveLink;
pub use crate::netns::Side;
use crate::process;
pub use crate::rootless::Backend;
use crate::time::Clock;
use runs::RunRecord;

/// Where `ip netns add` mounts named namespaces.
const NETNS_DIR: &str = "/run/netns";
/// Longest base name: the TAP names add one letter, and Linux allows 15.
pub const MAX_NAME: usize = 14;
/// How long `fresh_stats` waits for the datapath's next snapshot.
const FRESH_STATS_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a killed process group gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// Why a harness link could not come up or answer.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The configuration is invalid (the message names the key).
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(
        "link name {0:?}: use 1..={MAX_NAME} characters from a-z, A-Z, 0-9, '_' and '-' (the TAPs are NAME + 'l'/'r', at most 15 characters)"
    )]
    /// Counts per decade (row 0: under 10 µs, row 1: 10..100 µs, ... row 7:
    /// 10..100 s) and leading digit (column).
    BadName(String),
    /// Namespaces, TAPs or the datapath could not be set up.
    #[error("bringing the link up: {0:#}")]
    Up(anyhow::Error),
    /// A thread could not enter one of the link's namespaces.
    #[error("entering network namespace {ns:?}: {source}")]
    Namespace {
        /// The namespace's name.
        ns: String,
        /// The `setns` error.
        #[source]
        source: io::Error,
    },
    /// The datapath refused a command or stopped.
    #[error(transparent)]
    Datapath(#[from] DatapathError),
    /// The datapath published no snapshot within the time given.
    #[error("no snapshot from the datapath within {0:?}")]
    NoSnapshot(Duration),
    /// The datapath did not answer a link change within the time given.
    #[error("the datapath did not answer a link change within {0:?}")]
    NoAnswer(Duration),
}

static NEXT_LINK: AtomicU32 = AtomicU32::new(0);

/// Base 36, lower case.
fn base36(mut n: u64) -> String {
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(digits[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// A name no other link of this machine uses right now: `bb`, this
/// process's id and a per-process counter, both in base 36 (at most 12
/// characters).
pub fn unique_name() -> String {
    let n = NEXT_LINK.fetch_add(1, Ordering::Relaxed);
    format!(
        "bb{}-{}",
        base36(u64::from(std::process::id())),
        base36(u64::from(n))
    )
}

/// Checks a link base name (see `HarnessError::BadName`).
pub fn check_name(name: &str) -> Result<(), HarnessError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(HarnessError::BadName(name.to_string()))
    }
}

/// Gives `cfg` the names of link `name`: namespaces and TAPs `NAMEl` and
/// `NAMEr`, control socket `/run/bloatbox/NAME.sock`. Addresses stay (each
/// link has namespaces of its own, so they never clash).
pub fn apply_name(cfg: &mut Config, name: &str) -> Result<(), HarnessError> {
    check_name(name)?;
    cfg.left.namespace = format!("{name}l");
    cfg.left.tap = format!("{name}l");
    cfg.right.namespace = format!("{name}r");
    cfg.right.tap = format!("{name}r");
    cfg.daemon.control_socket = Some(format!("/run/bloatbox/{name}.sock"));
    Ok(())
}

/// Builds a `Link`: the embedded default configuration (or one given), a
/// unique name (or one given), then `--set`-style overrides in order.
#[derive(Clone, Debug)]
pub struct LinkBuilder {
    config: Config,
    name: Option<String>,
    sets: Vec<String>,
    realtime: Option<u8>,
    capture: Option<crate::capture::CaptureSpec>,
    rootless: Option<Backend>,
    wire: Option<crate::wire::Wire>,
}

impl Default for LinkBuilder {
    fn default() -> Self {
        LinkBuilder {
            config: Config::embedded_default(),
            name: None,
            sets: Vec::new(),
            realtime: None,
            capture: None,
            rootless: None,
            wire: None,
        }
    }
}

impl LinkBuilder {
    /// Start from this configuration (its namespace, TAP and control socket
    /// names are replaced by the link's own; `set` can still override them).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Use this base name instead of a generated one (see `apply_name`).
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }

    /// A `KEY=VALUE` override, as `bloatbox --set` takes it
    /// (`link.rate=10mbit`, `left.delay=20ms`, `link.qdisc=fq_codel`...).
    /// Errors show at `up`.
    pub fn set(mut self, assignment: &str) -> Self {
        self.sets.push(assignment.to_string());
        self
    }

    /// Run the datapath thread under SCHED_FIFO at this priority (1..=99),
    /// as `bloatbox up --realtime`: keeps pacing exact on a busy machine.
    pub fn realtime(mut self, priority: u8) -> Self {
        self.realtime = Some(priority);
        self
    }

    /// Capture the link into pcapng files (`crate::capture`); they are
    /// complete once the link is shut down or dropped.
    pub fn capture(mut self, spec: crate::capture::CaptureSpec) -> Self {
        self.capture = Some(spec);
        self
    }

    /// Bring the link up in anonymous namespaces with ports of `backend`
    /// (see `crate::rootless`); the control socket goes under
    /// `rootless::control_socket_dir()`. The process must already be able to
    /// create network namespaces (root, or uid 0 of a user namespace).
    pub fn rootless(mut self, backend: Backend) -> Self {
        self.rootless = Some(backend);
        self
    }

    /// Join these two existing interfaces instead of making namespaces
    /// and TAPs (see `crate::wire`, and the module doc for where commands
    /// run then).
    pub fn wire(mut self, wire: crate::wire::Wire) -> Self {
        self.wire = Some(wire);
        self
    }

    /// The configuration the link would run with.
    pub fn resolve(&self) -> Result<(Config, String), HarnessError> {
        let name = self.name.clone().unwrap_or_else(unique_name);
        let mut cfg = self.config.clone();
        apply_name(&mut cfg, &name)?;
        if self.rootless.is_some() {
            let socket = crate::rootless::control_socket_dir().join(format!("{name}.sock"));
            cfg.daemon.control_socket = Some(socket.display().to_string());
        }
        for s in &self.sets {
            cfg.apply_override(s)?;
        }
        Ok((cfg, name))
    }

    /// Creates the namespaces and TAPs and starts the datapath (needs root,
    /// or CAP_NET_ADMIN and CAP_SYS_ADMIN).
    ///
    /// With a generated name, leftovers under that name are removed first:
    /// the name holds this process's id, so they can only come from a dead
    /// process whose id was reused (e.g. a SIGKILLed run in a container).
    pub fn up(self) -> Result<Link, HarnessError> {
        let (cfg, name) = self.resolve()?;
        if self.rootless.is_some() {
            // The default place, in a shared /tmp perhaps: made private.
            let dir = crate::rootless::control_socket_dir();
            if cfg.control_socket().parent() == Some(dir.as_path()) {
                crate::rootless::prepare_private_dir(&dir)
                    .map_err(|e| HarnessError::Up(e.into()))?;
            }
        } else if self.name.is_none() && self.wire.is_none() {
            for what in RunRecord::of(&name, &cfg).remove_leftovers() {
                tracing::warn!("removed {what}, left by a dead process");
            }
        }
        Link::start(
            cfg,
            name,
            self.realtime,
            self.capture.as_ref(),
            self.rootless,
            self.wire.as_ref(),
        )
    }
}

/// A running emulated link between two network namespaces. Dropping it
/// kills every process still inside either namespace, stops the control
/// socket and the datapath and removes the namespaces and TAPs.
///
/// While a named (not rootless) link is up, `/run/bloatbox/runs/NAME.json`
/// records it (see `runs`), so that `bloatbox down --runs` can clean up
/// after a SIGKILLed owner.
pub struct Link {
    live: Option<LiveLink>,
    /// The run record, removed once the link is down.
    record: Option<PathBuf>,
    config: Config,
    name: String,
}

impl Link {
    /// A builder of a link with the default configuration.
    pub fn builder() -> LinkBuilder {
        LinkBuilder::default()
    }

    fn start(
        config: Config,
        name: String,
        realtime: Option<u8>,
        capture: Option<&crate::capture::CaptureSpec>,
        rootless: Option<Backend>,
        wire: Option<&crate::wire::Wire>,
    ) -> Result<Link, HarnessError> {
        // Recorded before anything exists, so that no kill leaves
        // unrecorded namespaces. Rootless namespaces are anonymous: they go
        // with their last process, nothing to record.
        let record = if rootless.is_none() && wire.is_none() {
            match RunRecord::of(&name, &config).write() {
                Ok(path) => Some(path),
                Err(e) => {
                    tracing::warn!(name = %name, "cannot record the run in {}: {e}", runs::RUNS_DIR);
                    None
                }
            }
        } else {
            None
        };
        let live =
            crate::live::start_link(&config, realtime, capture, rootless, wire).map_err(|e| {
                remove_record(record.as_deref());
                HarnessError::Up(e)
            })?;
        tracing::info!(name = %name, "link up");
        Ok(Link {
            live: Some(live),
            record,
            config,
            name,
        })
    }

    fn live(&self) -> &LiveLink {
        // Only `shutdown` takes it, and that consumes the Link.
        self.live
            .as_ref()
            .expect("the link is up while the Link exists")
    }

    /// The base name of this link.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The configuration the link runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The namespaces of a rootless link (`None` for named ones).
    pub fn rootless(&self) -> Option<&crate::rootless::Namespaces> {
        self.live().namespaces.rootless()
    }

    /// The link joins two existing interfaces (`LinkBuilder::wire`).
    pub fn is_wire(&self) -> bool {
        matches!(
            self.live().namespaces,
            crate::live::LinkNamespaces::Wire { .. }
        )
    }

    /// One side's namespace, TAP and addresses.
    pub fn endpoint(&self, side: Side) -> &Endpoint {
        match side {
            Side::Left => &self.config.left,
            Side::Right => &self.config.right,
        }
    }

    /// The daemon's control socket (`bloatbox stats` protocol).
    pub fn control_socket(&self) -> &Path {
        &self.live().control_socket
    }

    /// The environment a command on `side` gets: `BLOATBOX_SIDE`,
    /// `BLOATBOX_NETNS`, `BLOATBOX_DEV`, `BLOATBOX_SELF_V4`/`_V6`,
    /// `BLOATBOX_PEER_V4`/`_V6` (addresses without prefix) and
    /// `BLOATBOX_CONTROL` (the control socket).
    pub fn env(&self, side: Side) -> Vec<(String, String)> {
        let (me, peer) = match side {
            Side::Left => (&self.config.left, &self.config.right),
            Side::Right => (&self.config.right, &self.config.left),
        };
        let side_name = match side {
            Side::Left => "left",
            Side::Right => "right",
        };
        [
            ("BLOATBOX_SIDE", side_name.to_string()),
            ("BLOATBOX_NETNS", me.namespace.clone()),
            ("BLOATBOX_DEV", me.tap.clone()),
            ("BLOATBOX_SELF_V4", me.ipv4.addr.to_string()),
            ("BLOATBOX_SELF_V6", me.ipv6.addr.to_string()),
            ("BLOATBOX_PEER_V4", peer.ipv4.addr.to_string()),
            ("BLOATBOX_PEER_V6", peer.ipv6.addr.to_string()),
            (
                "BLOATBOX_CONTROL",
                self.control_socket().display().to_string(),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// Runs `f` on a new thread that has entered `side`'s namespace and
    /// returns its result; sockets it creates live in that namespace (and
    /// stay there when handed back). A panic in `f` is resumed here.
    pub fn run_in<T, F>(&self, side: Side, f: F) -> Result<T, HarnessError>
    where
        T: Send,
        F: FnOnce() -> T + Send,
    {
        if self.is_wire() {
            return Ok(f());
        }
        match self.rootless() {
            Some(r) => r
                .side(side)
                .enter(f)
                .map_err(|source| HarnessError::Namespace {
                    ns: self.endpoint(side).namespace.clone(),
                    source,
                }),
            None => in_netns(&self.endpoint(side).namespace, f),
        }
    }

    /// `program` to be run inside `side`'s namespace with the side's
    /// environment (`env`) and SIGINT/SIGTERM/SIGHUP unblocked; add
    /// arguments and spawn it like any `Command`. The child enters the
    /// namespace (setns) before exec, so once `spawn` returns it is inside
    /// and is killed when the link goes down. Unlike `ip netns exec`, /sys
    /// is not remounted and /etc/netns is not applied.
    pub fn command(&self, side: Side, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let ns = &self.endpoint(side).namespace;
        let mut cmd = Command::new(program);
        cmd.envs(self.env(side));
        if self.is_wire() {
            return cmd;
        }
        let netns = match self.rootless() {
            Some(r) => r.side(side).fd().try_clone().map(File::from),
            None => File::open(Path::new(NETNS_DIR).join(ns)),
        };
        match netns {
            Ok(file) => process::in_netns(&mut cmd, file),
            Err(e) => {
                tracing::warn!(netns = %ns, "opening the namespace: {e}");
                process::fail_at_exec(&mut cmd, process::errno_of(&e));
            }
        }
        cmd
    }

    /// `sh -c SCRIPT` inside `side`'s namespace (see `command`).
    pub fn shell(&self, side: Side, script: &str) -> Command {
        let mut cmd = self.command(side, "sh");
        cmd.args(["-c", script]);
        cmd
    }

    /// A TCP (or UDP) socket bound to `port` exists in `side`'s namespace:
    /// a TCP socket in LISTEN state, or any UDP socket.
    pub fn is_listening(&self, side: Side, port: u16, proto: Proto) -> Result<bool, HarnessError> {
        self.run_in(side, move || port_is_bound_here(port, proto))?
            .map_err(|source| HarnessError::Namespace {
                ns: self.endpoint(side).namespace.clone(),
                source,
            })
    }

    /// Frames the host on `side` sent into its TAP that the kernel dropped
    /// before the datapath read them (see `netns::tap_tx_dropped`); `None`
    /// if the kernel cannot tell.
    pub fn tap_tx_dropped(&self, side: Side) -> Option<u64> {
        let e = self.endpoint(side);
        crate::netns::tap_tx_dropped(&e.namespace, &e.tap)
    }

    /// The parameters one direction runs with: those of the first snapshot
    /// taken after this call, so that a change made by any means (`set_link`,
    /// the control socket, the TUI) is seen.
    pub fn params(&self, dir: Dir) -> Result<LinkParams, HarnessError> {
        Ok(self.fresh_stats()?.bridge.path(dir).params)
    }

    /// Changes one direction of the running link: `change` edits the
    /// parameters the datapath runs with at that moment, on its own thread
    /// (so a change made meanwhile through the control socket is not
    /// overwritten), and takes effect there at once. Returns the new
    /// parameters.
    pub fn set_link(
        &self,
        dir: Dir,
        change: impl FnOnce(&mut LinkParams) + Send + 'static,
    ) -> Result<LinkParams, HarnessError> {
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        self.live().datapath.command(DpCommand::SetLink {
            dir,
            change: crate::datapath::LinkChange(Box::new(change)),
            reply,
        })?;
        answer
            .recv_timeout(FRESH_STATS_TIMEOUT)
            .map_err(|e| match e {
                std::sync::mpsc::RecvTimeoutError::Timeout => {
                    HarnessError::NoAnswer(FRESH_STATS_TIMEOUT)
                }
                std::sync::mpsc::RecvTimeoutError::Disconnected => DatapathError::Stopped.into(),
            })
    }

    /// `set_link` for both directions.
    pub fn set_both(
        &self,
        change: impl Fn(&mut LinkParams) + Clone + Send + 'static,
    ) -> Result<(), HarnessError> {
        for dir in Dir::ALL {
            self.set_link(dir, change.clone())?;
        }
        Ok(())
    }

    /// The latest published snapshot, if any (it may be one publish period
    /// old: see `fresh_stats`).
    pub fn stats(&self) -> Option<Arc<LiveSnapshot>> {
        self.live().datapath.snapshots().latest()
    }

    /// The first snapshot taken after this call (waits at most 3 s): its
    /// counters include everything that happened before the call.
    pub fn fresh_stats(&self) -> Result<Arc<LiveSnapshot>, HarnessError> {
        let since = MonotonicClock.now();
        let reader = self.live().datapath.snapshots();
        let deadline = std::time::Instant::now() + FRESH_STATS_TIMEOUT;
        loop {
            if let Some(s) = reader.latest().filter(|s| s.at > since) {
                return Ok(s);
            }
            if self.live().datapath.is_finished() {
                return Err(DatapathError::Stopped.into());
            }
            if std::time::Instant::now() >= deadline {
                return Err(HarnessError::NoSnapshot(FRESH_STATS_TIMEOUT));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Takes the link down now and returns the datapath's final snapshot.
    pub fn shutdown(mut self) -> Result<LiveSnapshot, HarnessError> {
        self.kill_namespace_processes();
        let live = self.live.take().expect("the link is up until shutdown");
        let last = live.stop();
        remove_record(self.record.take().as_deref());
        Ok(last?)
    }

    /// SIGKILLs every process inside either namespace and waits (bounded)
    /// until they are gone.
    fn kill_namespace_processes(&self) {
        if self.is_wire() {
            return;
        }
        for side in [Side::Left, Side::Right] {
            match self.rootless() {
                Some(r) => {
                    let ns = r.side(side);
                    crate::netns::kill_until_gone(&format!("net:[{}]", ns.inode()), || ns.pids());
                }
                None => {
                    crate::netns::kill_netns_processes(&self.endpoint(side).namespace);
                }
            }
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if self.live.is_some() {
            // Needs the link (a rootless one's namespace descriptors).
            self.kill_namespace_processes();
        }
        // Control socket, datapath, capture, namespaces; then the record.
        drop(self.live.take());
        remove_record(self.record.take().as_deref());
    }
}

/// Removes a run record (the link it names is down).
fn remove_record(path: Option<&Path>) {
    if let Some(p) = path {
        if let Err(e) = std::fs::remove_file(p) {
            tracing::warn!("removing the run record {}: {e}", p.display());
        }
    }
}

/// Transport of a port to wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    /// A TCP port (listening).
    Tcp,
    /// A UDP port (bound).
    Udp,
}

/// Runs `f` on a new thread inside the named namespace (`/run/netns/NS`)
/// and returns its result. A panic in `f` is resumed in the caller.
pub fn in_netns<T, F>(ns: &str, f: F) -> Result<T, HarnessError>
where
    T: Send,
    F: FnOnce() -> T + Send,
{
    crate::netns::in_netns(ns, f).map_err(|source| HarnessError::Namespace {
        ns: ns.to_string(),
        source,
    })
}

/// Reads this thread's socket tables (`/proc/thread-self/net/...`).
fn port_is_bound_here(port: u16, proto: Proto) -> io::Result<bool> {
    let tables: &[&str] = match proto {
        Proto::Tcp => &["tcp", "tcp6"],
        Proto::Udp => &["udp", "udp6"],
    };
    for t in tables {
        let path = PathBuf::from("/proc/thread-self/net").join(t);
        match std::fs::read_to_string(&path) {
            Ok(text) if table_has_port(&text, port, proto) => return Ok(true),
            Ok(_) => {}
            // No IPv6 in this kernel: no tcp6/udp6 table.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}

/// TCP state LISTEN in /proc/net/tcp.
const TCP_LISTEN: u8 = 0x0A;

/// A `/proc/net/{tcp,udp}[6]` table lists a socket on local `port`: in
/// LISTEN state for TCP, in any state for UDP.
pub fn table_has_port(table: &str, port: u16, proto: Proto) -> bool {
    table.lines().skip(1).any(|line| {
        let mut fields = line.split_whitespace();
        let (Some(_sl), Some(local), Some(_remote), Some(state)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return false;
        };
        let local_port = local
            .rsplit_once(':')
            .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
        let state = u8::from_str_radix(state, 16).ok();
        local_port == Some(port) && (proto == Proto::Udp || state == Some(TCP_LISTEN))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_can_be_shared_between_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<Link>();
    }

    #[test]
    fn generated_names_are_unique_valid_and_fit_a_tap() {
        let a = unique_name();
        let b = unique_name();
        assert_ne!(a, b);
        for n in [&a, &b] {
            check_name(n).unwrap();
            assert!(n.len() < 15, "{n}");
        }
        assert_eq!(base36(0), "0");
        assert_eq!(base36(36 * 36 - 1), "zz");
        assert_eq!(base36(4_194_304), "2hwcg");
    }

    #[test]
    fn bad_names_are_refused_with_the_rule() {
        for bad in ["", "a/b", "fifteen-chars-x", "sp ace"] {
            let e = check_name(bad).unwrap_err().to_string();
            assert!(e.contains("at most 15"), "{e}");
        }
    }

    #[test]
    fn names_then_overrides_shape_the_config() {
        let (cfg, name) = Link::builder()
            .name("bbtest")
            .set("link.delay=20ms")
            .set("right.namespace=custom")
            .resolve()
            .unwrap();
        assert_eq!(name, "bbtest");
        assert_eq!(
            (cfg.left.namespace.as_str(), cfg.left.tap.as_str()),
            ("bbtestl", "bbtestl")
        );
        assert_eq!(cfg.right.tap, "bbtestr");
        assert_eq!(cfg.right.namespace, "custom", "an explicit --set wins");
        assert_eq!(
            cfg.control_socket(),
            PathBuf::from("/run/bloatbox/bbtest.sock")
        );
        assert_eq!(cfg.link_params(Dir::LeftToRight).delay_ns, 20_000_000);
        let e = Link::builder().set("link.nope=1").resolve().unwrap_err();
        assert!(e.to_string().contains("unknown key"), "{e}");
    }

    #[test]
    fn socket_tables_are_read_by_port_state_and_protocol() {
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue\n\
                   0: 00000000:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000\n\
                   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000\n";
        assert!(table_has_port(tcp, 5201, Proto::Tcp));
        assert!(
            !table_has_port(tcp, 8080, Proto::Tcp),
            "established, not listening"
        );
        assert!(
            table_has_port(tcp, 8080, Proto::Udp),
            "any state counts for UDP"
        );
        let tcp6 = "  sl  local_address remote_address st\n\
                    0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A\n";
        assert!(table_has_port(tcp6, 8080, Proto::Tcp));
        assert!(!table_has_port("header only\n", 1, Proto::Tcp));
        assert!(!table_has_port(
            "h\n garbage\n0: x:zz y 0A\n",
            1,
            Proto::Tcp
        ));
    }
}
