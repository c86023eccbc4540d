//! `bloatbox up` and `bloatbox down`: bringing the link of a configuration
//! up for as long as the daemon runs (signals, the optional TUI, metrics,
//! capture), and removing what a killed run left behind.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::local::LocalControl;
use crate::control::request_stats;
use crate::control_server::ControlServer;
use crate::datapath::Datapath;
use crate::dir::Dir;
use crate::live::{attach_capture, build_bridge, load, setup, LinkNamespaces};
use crate::load::on_demand::{OnDemand, ProbeSockets, ProbeTargets};
use crate::netns::{self, TerminationSignals, Topology};
use crate::port::FramePort;
use crate::privilege;
use crate::wire::Wire;

/// How often `up` checks on the datapath thread while waiting for a signal.
const WATCH_INTERVAL_MS: u16 = 200;

/// Checks that set-up can run and, without root (file capabilities), hands
/// the capabilities to the `ip` commands it runs (see `privilege`). Only
/// `up` and `down` do the latter: the harness runs the user's commands,
/// which must not inherit them.
fn prepare_privileges() -> anyhow::Result<()> {
    netns::require_privileges()?;
    let missing = privilege::pass_to_children(&privilege::CHILDREN)?;
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|c| c.to_string()).collect();
        tracing::warn!(
            "without root and without {}, `ip netns add`/`del` can only work if /run/netns \
             is writable by this user (see docs/privileges.md, \"Running without full root\")",
            names.join(", ")
        );
    }
    Ok(())
}

/// Why the link must stop on its own: a namespace of the topology (or of
/// the wire) that was deleted under the daemon.
fn vanished_namespace(topo: &Topology, wire: Option<&Wire>) -> Option<String> {
    if let Some(wire) = wire {
        return wire.vanished();
    }
    [&topo.left, &topo.right]
        .into_iter()
        .find(|side| !netns::netns_exists(&side.netns))
        .map(|side| {
            format!(
                "network namespace {:?} was deleted under the daemon",
                side.netns
            )
        })
}

/// The datapath's error, with the TAP and namespace (or the wired
/// interface) behind a failed port.
fn explain_datapath_error(
    e: crate::datapath::DatapathError,
    topo: &Topology,
    wire: Option<&Wire>,
) -> anyhow::Error {
    match &e {
        crate::datapath::DatapathError::PortFailed { port, .. } if wire.is_some() => {
            let end = wire.map(|w| w.end(port));
            anyhow::anyhow!(
                "{e}; that port is {} (deleted or set down?)",
                end.map(|e| e.to_string()).unwrap_or_default()
            )
        }
        crate::datapath::DatapathError::PortFailed { port, .. } => {
            let side = if *port == "left" {
                &topo.left
            } else {
                &topo.right
            };
            anyhow::anyhow!(
                "{e}; that port is TAP {:?} in network namespace {:?}",
                side.tap.name,
                side.netns
            )
        }
        _ => e.into(),
    }
}

/// The TUI's latency probes from the left namespace to the right one's
/// IPv4 address, their sockets opened now; or why there are none (shown
/// when the probes key is pressed).
fn open_probes(
    cfg: &crate::config::Config,
    topo: &Topology,
    wire: Option<&Wire>,
) -> anyhow::Result<OnDemand> {
    if wire.is_some() {
        anyhow::bail!(
            "the probes run between bloatbox's own namespaces, which a wire has not: \
             ping between the wired hosts instead"
        );
    }
    let right_ip = match cfg.right.ipv4.addr {
        std::net::IpAddr::V4(a) => a,
        std::net::IpAddr::V6(a) => anyhow::bail!("the right side's address {a} is not IPv4"),
    };
    let targets = ProbeTargets {
        left_ns: topo.left.netns.clone(),
        right_ns: topo.right.netns.clone(),
        right_ip,
    };
    ProbeSockets::open(&targets)
        .map(OnDemand::new)
        .inspect_err(|e| {
            tracing::warn!("the TUI's probes are not available: {e:#}");
        })
}

/// How `bloatbox up` runs once the link is up.
#[derive(Clone, Debug, Default)]
pub struct UpOptions {
    /// `--set KEY=VALUE` overrides, applied in order after loading.
    pub overrides: Vec<String>,
    /// SCHED_FIFO priority of the datapath thread.
    pub realtime: Option<u8>,
    /// Show the TUI on this terminal (the daemon stops when it quits).
    pub tui: bool,
    /// pcapng files to capture into (`crate::capture`).
    pub capture: Option<crate::capture::CaptureSpec>,
    /// Serve `GET /metrics` here (`crate::metrics::MetricsServer`), and
    /// whether a non-loopback address is allowed.
    pub metrics_listen: Option<(std::net::SocketAddr, bool)>,
    /// Rewrite this file with the metrics every period.
    pub metrics_file: Option<(PathBuf, std::time::Duration)>,
    /// Attach to namespaces and persistent TAPs made beforehand (netns/up.sh)
    /// instead of creating them; they are left in place on exit.
    pub attach: bool,
    /// Join these two existing interfaces instead (`crate::wire`): no
    /// namespace or TAP is made.
    pub wire: Option<Wire>,
}

/// `bloatbox up`: runs until SIGINT/SIGTERM/SIGHUP, until the TUI quits or
/// until the datapath stops, then removes everything it created (also on
/// error and on panic, through the guards' Drop).
pub fn up(config: Option<&Path>, opts: &UpOptions) -> anyhow::Result<()> {
    let mut cfg = load(config)?;
    for assignment in &opts.overrides {
        cfg.apply_override(assignment)?;
    }
    let mut setup = setup(&cfg)?;
    setup.datapath.realtime_priority = opts.realtime;
    prepare_privileges()?;
    if let Some((addr, remote)) = opts.metrics_listen {
        // Refused before anything is set up, not after.
        crate::metrics::check_listen_addr(addr, remote)?;
    }
    refuse_if_running(
        &setup.control_socket,
        "stop it first (Ctrl-C where it runs, or kill it), or start a second link \
         with -c FILE naming other namespaces, TAPs and control socket",
    )?;
    let mut bridge = build_bridge(&cfg)?;
    // Before any thread exists, so that all inherit the blocked mask.
    let mut signals = TerminationSignals::block()?;
    let capture = attach_capture(&mut bridge, opts.capture.as_ref())?;
    let wire = opts.wire.as_ref();
    let (guard, left, right): (LinkNamespaces, Box<dyn FramePort>, Box<dyn FramePort>) = match wire
    {
        Some(w) => {
            let (guard, left, right) = w.open(cfg.tap.mtu, cfg.tap.wire_ring)?;
            (
                LinkNamespaces::Wire { _guard: guard },
                Box::new(left),
                Box::new(right),
            )
        }
        None => {
            let (guard, left, right) = if opts.attach {
                setup.topology.attach()?
            } else {
                setup.topology.up()?
            };
            (
                LinkNamespaces::Named { _guard: guard },
                Box::new(left),
                Box::new(right),
            )
        }
    };
    // The TUI's probes: their sockets are opened now, while this thread
    // may still join the namespaces and open a raw socket.
    let probes = opts.tui.then(|| open_probes(&cfg, &setup.topology, wire));
    // The TAPs are open: the socket is created with the user's own rights.
    privilege::lower_children_only()?;
    let datapath = Datapath::spawn(bridge, left, right, setup.datapath)?;
    let control = ControlServer::start(
        &setup.control_socket,
        datapath.snapshots(),
        Some(datapath.commander()),
    )?;
    // The datapath and control threads dropped theirs; this thread only
    // has the tear-down left to do.
    privilege::keep_only(&privilege::TEARDOWN)?;
    let metrics_server = match opts.metrics_listen {
        Some((addr, remote)) => {
            let server = crate::metrics::MetricsServer::start(addr, remote, datapath.snapshots())?;
            tracing::info!("metrics at http://{}/metrics", server.local_addr());
            Some(server)
        }
        None => None,
    };
    let metrics_file = match &opts.metrics_file {
        Some((path, period)) => Some(crate::metrics::MetricsFile::start(
            path,
            *period,
            datapath.snapshots(),
        )?),
        None => None,
    };
    match wire {
        Some(w) => tracing::info!(
            left = %w.left,
            right = %w.right,
            control = %setup.control_socket.display(),
            "wire up; stop with Ctrl-C"
        ),
        None => tracing::info!(
            left = %setup.topology.left.netns,
            right = %setup.topology.right.netns,
            control = %setup.control_socket.display(),
            "link up; stop with Ctrl-C (try `bloatbox exec left -- ping ...`)"
        ),
    }
    let tui = if let Some(probes) = probes {
        let mut local = LocalControl::new(&datapath, probes);
        let hz = cfg.daemon.snapshot_hz;
        Some(
            std::thread::Builder::new()
                .name("bloatbox-tui".into())
                .spawn(move || {
                    privilege::drop_all()?;
                    crate::tui::run(&mut local, hz)
                })?,
        )
    } else {
        None
    };
    let stopped_by = loop {
        if let Some(sig) = signals.wait(WATCH_INTERVAL_MS) {
            break format!("signal {}", TerminationSignals::name(sig));
        }
        if datapath.is_finished() {
            break "the datapath thread stopping".to_string();
        }
        if let Some(why) = vanished_namespace(&setup.topology, wire) {
            tracing::error!("{why}");
            break why;
        }
        if tui.as_ref().is_some_and(|t| t.is_finished()) {
            break "the TUI quitting".to_string();
        }
    };
    // A TUI that failed (its terminal hung up, a write failed) ends the
    // run like a signal, with an error exit once everything is removed.
    let mut tui_failed = None;
    if let Some(t) = tui {
        if t.is_finished() {
            match t.join() {
                Ok(Err(e)) => {
                    tracing::error!("TUI: {e:#}");
                    tui_failed = Some(e.context("the TUI ended"));
                }
                Err(_) => {
                    tracing::error!("the TUI thread panicked");
                    tui_failed = Some(anyhow::anyhow!("the TUI thread panicked"));
                }
                Ok(Ok(())) => {}
            }
        } else {
            // Stopped by a signal while the TUI owns the terminal: give the
            // terminal back (without printing: it may be gone); the TUI
            // thread ends with the process.
            let _ = ratatui::try_restore();
        }
    }
    tracing::info!("shutting down after {stopped_by}");
    drop(control);
    drop(metrics_server);
    let last = datapath.shutdown();
    // After the datapath: the last snapshot, and every captured frame.
    drop(metrics_file);
    if let Some(c) = capture {
        for (dir, n) in Dir::ALL.into_iter().zip(c.finish()) {
            tracing::info!(
                "capture of {} written: {} records, {} lost with the writer behind, {} lost to write errors",
                dir.arrow(),
                n.captured,
                n.dropped,
                n.write_errors
            );
        }
    }
    let vanished = vanished_namespace(&setup.topology, wire);
    drop(guard);
    let last = match (last, vanished) {
        (Ok(last), None) => last,
        (Ok(_), Some(why)) => anyhow::bail!("{why}; everything else was removed"),
        (Err(e), None) => return Err(explain_datapath_error(e, &setup.topology, wire)),
        (Err(e), Some(why)) => {
            return Err(explain_datapath_error(e, &setup.topology, wire).context(why))
        }
    };
    tracing::info!(
        wakeups = last.wakeups.total,
        lateness_p99_ns = last.lateness.p99_ns,
        "link down, {}",
        if wire.is_some() {
            "the wired interfaces left as found"
        } else if opts.attach {
            "namespaces and TAPs left in place (attached)"
        } else {
            "everything removed"
        }
    );
    match tui_failed {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `bloatbox down`: removes what a killed run left behind: the link of the
/// configuration, or with `runs` the links of every `bloatbox run` (and
/// `harness::Link`) whose owner process is dead.
pub fn down(config: Option<&Path>, runs: bool) -> anyhow::Result<()> {
    if runs {
        return down_runs();
    }
    let cfg = load(config)?;
    let setup = setup(&cfg)?;
    refuse_if_running(
        &setup.control_socket,
        "`down` only removes what a killed run left; stop the daemon (Ctrl-C where it \
         runs, or kill it) and it removes everything itself",
    )?;
    prepare_privileges()?;
    let removed = netns::down(&setup.topology)?;
    if removed.is_empty() {
        crate::outln!("nothing to remove")?;
    }
    for r in removed {
        crate::outln!("removed {r}")?;
    }
    if setup.control_socket.exists() && request_stats(&setup.control_socket).is_err() {
        std::fs::remove_file(&setup.control_socket)?;
        crate::outln!(
            "removed stale control socket {}",
            setup.control_socket.display()
        )?;
    }
    Ok(())
}

/// Fails with `fix` if a daemon answers on `socket`: `up` would collide
/// with the link it runs and `down` would delete it from under it.
fn refuse_if_running(socket: &Path, fix: &str) -> anyhow::Result<()> {
    if socket.exists() && request_stats(socket).is_ok() {
        anyhow::bail!(
            "a bloatbox daemon is running this link (it answers on {}); {fix}",
            socket.display()
        );
    }
    Ok(())
}

/// `bloatbox down --runs`.
fn down_runs() -> anyhow::Result<()> {
    use crate::harness::runs::{remove_dead, RunCleanup, RUNS_DIR};
    prepare_privileges()?;
    let done = remove_dead().with_context(|| format!("reading {RUNS_DIR}"))?;
    if done.is_empty() {
        crate::outln!("no runs recorded in {RUNS_DIR}")?;
    }
    for d in done {
        match d {
            RunCleanup::Removed { name, pid, removed } => {
                crate::outln!("run {name} (pid {pid}, dead):")?;
                if removed.is_empty() {
                    crate::outln!("  nothing left")?;
                }
                for r in removed {
                    crate::outln!("  removed {r}")?;
                }
            }
            RunCleanup::Alive { name, pid } => {
                crate::outln!("run {name} (pid {pid}) is running: left alone")?
            }
            RunCleanup::Unreadable { path, error } => {
                crate::outln!("removed unreadable record {}: {error}", path.display())?
            }
        }
    }
    Ok(())
}
