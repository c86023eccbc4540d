//! The subcommands behind `bloatbox`'s command line: `up` (set up the
//! namespaces and TAPs, run the datapath, the control socket and optionally
//! the TUI until a signal or the TUI quits, then remove everything), `down`,
//! `exec`, `check` and `stats`. `main.rs` only parses arguments and calls
//! these. `LiveLink` is a running link without signals or TUI (control
//! socket, datapath thread, namespaces), shared by `bloatbox test` and
//! `crate::harness`.

pub mod daemon;

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::control::request_stats;
use crate::control_server::ControlServer;
use crate::datapath::{Command, Commander, Datapath, SnapshotReader};
use crate::dir::Dir;
pub use crate::live::LiveLink;
use crate::live::{attach_capture, build_bridge, load, setup};
pub use crate::netns::Side;
use crate::netns::{self, SideSpec, TerminationSignals, Topology};
use crate::privilege;
use crate::time::{Instant, NS_PER_US};
use crate::tui::Action;

/// `print!` for a subcommand's output: a reader that went away (`bloatbox
/// stats | head`) quietly ends the output, as in other Unix tools, instead
/// of panicking; any other write error is returned.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::app::write_stdout(format_args!($($arg)*)) };
}

/// `println!` counterpart of `out!`.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => { $crate::app::write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

/// What `out!` and `outln!` call.
pub fn write_stdout(args: std::fmt::Arguments) -> std::io::Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_fmt(args) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// How often `up` checks on the datapath thread while waiting for a signal.
const WATCH_INTERVAL_MS: u16 = 200;

/// How long the TUI waits for the datapath to apply a tc line.
const TC_REPLY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

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
             is writable by this user (see README, \"Running without full root\")",
            names.join(", ")
        );
    }
    Ok(())
}

/// Why the link must stop on its own: a namespace of the topology that
/// was deleted under the daemon.
fn vanished_namespace(topo: &Topology) -> Option<String> {
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

/// The datapath's error, with the TAP and namespace behind a failed port.
fn explain_datapath_error(e: crate::datapath::DatapathError, topo: &Topology) -> anyhow::Error {
    match &e {
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

/// How `bloatbox up` runs once the link is up.
#[derive(Clone, Debug, Default)]
pub struct UpOptions {
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
}

/// `bloatbox up`: runs until SIGINT/SIGTERM/SIGHUP, until the TUI quits or
/// until the datapath stops, then removes everything it created (also on
/// error and on panic, through the guards' Drop).
pub fn up(config: Option<&Path>, opts: &UpOptions) -> anyhow::Result<()> {
    let cfg = load(config)?;
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
    let (guard, left, right) = if opts.attach {
        setup.topology.attach()?
    } else {
        setup.topology.up()?
    };
    // The TAPs are open: the socket is created with the user's own rights.
    privilege::lower_children_only()?;
    let datapath = Datapath::spawn(bridge, Box::new(left), Box::new(right), setup.datapath)?;
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
    tracing::info!(
        left = %setup.topology.left.netns,
        right = %setup.topology.right.netns,
        control = %setup.control_socket.display(),
        "link up; stop with Ctrl-C (try `bloatbox exec left -- ping ...`)"
    );
    let tui = if opts.tui {
        let mut local = LocalControl::new(&datapath);
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
            break format!("signal {sig}");
        }
        if datapath.is_finished() {
            break "the datapath thread stopping".to_string();
        }
        if let Some(why) = vanished_namespace(&setup.topology) {
            tracing::error!("{why}");
            break why;
        }
        if tui.as_ref().is_some_and(|t| t.is_finished()) {
            break "the TUI quitting".to_string();
        }
    };
    if let Some(t) = tui {
        if t.is_finished() {
            match t.join() {
                Ok(Err(e)) => tracing::error!("TUI: {e:#}"),
                Err(_) => tracing::error!("the TUI thread panicked"),
                Ok(Ok(())) => {}
            }
        } else {
            // Stopped by a signal while the TUI owns the terminal: give the
            // terminal back; the TUI thread ends with the process.
            ratatui::restore();
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
    let vanished = vanished_namespace(&setup.topology);
    drop(guard);
    let last = match (last, vanished) {
        (Ok(last), None) => last,
        (Ok(_), Some(why)) => anyhow::bail!("{why}; everything else was removed"),
        (Err(e), None) => return Err(explain_datapath_error(e, &setup.topology)),
        (Err(e), Some(why)) => return Err(explain_datapath_error(e, &setup.topology).context(why)),
    };
    tracing::info!(
        wakeups = last.wakeups.total,
        lateness_p99_ns = last.lateness.p99_ns,
        "link down, {}",
        if opts.attach {
            "namespaces and TAPs left in place (attached)"
        } else {
            "everything removed"
        }
    );
    Ok(())
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

/// `bloatbox exec left|right -- CMD...`: the command's exit code, or 128 +
/// the signal that ended it, or 127 if there is no such command (as a
/// shell says).
pub fn exec(side: Side, config: Option<&Path>, cmd: &[String]) -> anyhow::Result<u8> {
    let cfg = load(config)?;
    let setup = setup(&cfg)?;
    let ns = match side {
        Side::Left => &setup.topology.left.netns,
        Side::Right => &setup.topology.right.netns,
    };
    match netns::exec_in(ns, cmd) {
        Err(e @ netns::NetnsError::CommandNotFound(_)) => {
            eprintln!("bloatbox exec: {e}");
            Ok(127)
        }
        Err(e) => Err(e.into()),
        Ok(never) => match never {},
    }
}

/// `bloatbox check FILE`: the configuration loads, every tc line passes the
/// tc front end and both qdisc trees build.
pub fn check(file: &Path) -> anyhow::Result<()> {
    let cfg = load(Some(file))?;
    // Lines that pass one by one can still fail together (parents, classes).
    build_bridge(&cfg)?;
    crate::out!("{}", crate::config::check_report(&cfg))?;
    Ok(())
}

/// `bloatbox stats`.
pub fn stats(config: Option<&Path>, json: bool) -> anyhow::Result<()> {
    let cfg = load(config)?;
    let setup = setup(&cfg)?;
    let mut snap = request_stats(&setup.control_socket)?;
    // Frames the TAPs' own queues dropped before the datapath read them are
    // invisible to the daemon; the kernel counts them.
    let side_drops = |s: &SideSpec| crate::netns::tap_tx_dropped(&s.netns, &s.tap.name);
    snap["tap_tx_dropped"] = serde_json::json!({
        "left": side_drops(&setup.topology.left),
        "right": side_drops(&setup.topology.right),
    });
    if json {
        crate::outln!("{snap}")?;
    } else {
        crate::out!("{}", render_stats(&snap))?;
    }
    Ok(())
}

/// The stats snapshot as text: one block per direction, then the datapath's
/// own figures. Works on the JSON form, which is what the socket carries.
fn render_stats(snap: &serde_json::Value) -> String {
    use std::fmt::Write;
    let num = |v: &serde_json::Value, key: &str| v.get(key).and_then(|x| x.as_u64()).unwrap_or(0);
    let mut out = String::new();
    let paths = snap["bridge"]["paths"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (i, (name, p)) in ["left -> right", "right -> left"]
        .iter()
        .zip(&paths)
        .enumerate()
    {
        let c = &p["counters"];
        let (fin, fout, held) = (num(c, "frames_in"), num(c, "frames_out"), num(p, "held"));
        // netem duplication adds frames to the path.
        let dup = num(c, "duplicated");
        let drops: u64 = c["drops"]
            .as_array()
            .map(|a| a.iter().filter_map(|x| x.as_u64()).sum())
            .unwrap_or(0);
        let _ = writeln!(out, "{name}");
        let _ = writeln!(
            out,
            "  frames in {fin}  out {fout}  held {held}  dropped {drops}  (bytes in {}  out {})",
            num(c, "bytes_in"),
            num(c, "bytes_out")
        );
        let by_reason = p["drops_by_reason"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k} {}", v.as_u64().unwrap_or(0)))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  drops by reason: {}",
            if by_reason.is_empty() {
                "none"
            } else {
                &by_reason
            }
        );
        if p["seed"].is_u64() {
            let _ = writeln!(
                out,
                "  impairments seed {}  duplicated {dup}  corrupted {}",
                num(p, "seed"),
                num(c, "corrupted")
            );
        }
        let bql = match p["bql_limit"].as_u64() {
            Some(limit) => format!("limit {limit} B, in flight {} B", num(p, "bql_inflight")),
            None => "off".to_string(),
        };
        let _ = writeln!(
            out,
            "  ring {}/{} descriptors ({} B)  BQL {bql}",
            num(p, "ring_used"),
            num(p, "ring_size"),
            num(p, "ring_bytes")
        );
        let cap = &snap["bridge"]["capture"][i];
        if cap.is_object() {
            let _ = writeln!(
                out,
                "  capture: {} records written, {} dropped (writer behind), {} write errors",
                num(cap, "captured"),
                num(cap, "dropped"),
                num(cap, "write_errors")
            );
        }
        let t = &p["transit"];
        if num(t, "count") > 0 {
            let ms = |key: &str| num(t, key) as f64 / 1e6;
            let _ = writeln!(
                out,
                "  transit (in to out) min {:.3} ms  p50 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3} ms",
                ms("min_ns"),
                ms("p50_ns"),
                ms("p99_ns"),
                ms("p999_ns"),
                ms("max_ns")
            );
        }
        let ok = fin + dup == fout + drops + held;
        let dup_term = if dup > 0 {
            format!(" + duplicated {dup}")
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  conservation: in {fin}{dup_term} = out {fout} + dropped {drops} + held {held}: {}",
            if ok { "ok" } else { "VIOLATED" }
        );
    }
    let w = &snap["wakeups"];
    let _ = writeln!(out, "datapath");
    for (key, what, unit) in [
        ("lateness", "wake-up lateness", "samples"),
        ("release_lateness", "frames written late by", "frames"),
    ] {
        let l = &snap[key];
        let _ = writeln!(
            out,
            "  {what} p50 {:.1} us  p99 {:.1} us  p99.9 {:.1} us  max {:.1} us ({} {unit})",
            num(l, "p50_ns") as f64 / 1e3,
            num(l, "p99_ns") as f64 / 1e3,
            num(l, "p999_ns") as f64 / 1e3,
            num(l, "max_ns") as f64 / 1e3,
            num(l, "samples")
        );
    }
    let _ = writeln!(
        out,
        "  wake-ups {} (timer {}, I/O {}), deadlines spun to without the timer {}, busy polls {}",
        num(w, "total"),
        num(w, "timer"),
        num(w, "io"),
        num(w, "spun"),
        num(w, "polls")
    );
    let _ = writeln!(
        out,
        "  frame buffers in use {}, requests refused at the cap {}",
        num(&snap["pool"], "in_use"),
        num(&snap["pool"], "refused")
    );
    for (name, key) in [("left", "left_port"), ("right", "right_port")] {
        let pc = &snap[key];
        let _ = writeln!(
            out,
            "  {name} port: rx {} tx {} frames, full-device drops {}, errors rx {} tx {}",
            num(pc, "rx_frames"),
            num(pc, "tx_frames"),
            num(pc, "tx_full_drops"),
            num(pc, "rx_errors"),
            num(pc, "tx_errors")
        );
    }
    if let Some(t) = snap.get("tap_tx_dropped") {
        let show = |v: &serde_json::Value| v.as_u64().map_or("?".to_string(), |n| n.to_string());
        let _ = writeln!(
            out,
            "  dropped by the TAPs' own queues before the datapath read them: left {}, right {}",
            show(&t["left"]),
            show(&t["right"])
        );
    }
    out
}

/// The TUI's view of the daemon it runs in: snapshots straight from the
/// datapath's slot, link changes through its command queue as field edits
/// (`Command::EditLink`, like `bloatbox set` over the control socket), so
/// a change from the TUI and one from `bloatbox set` at the same moment
/// each change only their own field.
struct LocalControl {
    commander: Commander,
    snapshots: SnapshotReader,
    /// Time of the last snapshot handed to the TUI.
    last: Option<Instant>,
}

impl LocalControl {
    fn new(datapath: &Datapath) -> LocalControl {
        LocalControl {
            commander: datapath.commander(),
            snapshots: datapath.snapshots(),
            last: None,
        }
    }

    /// Sends `cmd` (built around a reply channel) and waits for the reply.
    fn ask<T>(
        &self,
        cmd: impl FnOnce(std::sync::mpsc::SyncSender<Result<T, String>>) -> Command,
    ) -> Result<T, String> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.commander.send(cmd(tx)).map_err(|e| e.to_string())?;
        rx.recv_timeout(TC_REPLY_TIMEOUT)
            .map_err(|_| "the datapath did not answer within 2 s".to_string())?
    }
}

impl crate::tui::Control for LocalControl {
    fn send(&mut self, action: &Action) -> Result<String, String> {
        match action {
            Action::Quit => Ok(String::new()),
            Action::SetLink { dir, field, value } => {
                let args = vec![crate::control::field::set_arg(*dir, *field, *value)];
                // Parsed here, not on the datapath, as the control socket does.
                let plan = crate::control::set::parse_set(&args)?;
                self.ask(|reply| Command::EditLink { plan, reply })?;
                Ok(format!("{} {}", field.name(), field.show(*value)))
            }
            Action::Tc(lines) => {
                let mut replies = Vec::new();
                for line in lines.lines().filter(|l| !l.trim().is_empty()) {
                    let line = line.to_string();
                    replies.push(self.ask(|reply| Command::Tc { line, reply })?);
                }
                Ok(replies.concat())
            }
        }
    }

    fn snapshot(&mut self) -> Option<crate::tui::Snapshot> {
        let s = self.snapshots.latest()?;
        if self.last == Some(s.at) {
            return None;
        }
        self.last = Some(s.at);
        let us = |ns: u64| ns / NS_PER_US;
        Some(crate::tui::Snapshot {
            bridge: s.bridge.clone(),
            lateness_us: [
                us(s.lateness.p50_ns),
                us(s.lateness.p99_ns),
                us(s.lateness.p999_ns),
            ],
            wakeups: s.wakeups.total,
            taken_at: s.at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_text_shows_counters_and_flags_a_conservation_violation() {
        let snap = serde_json::json!({
            "bridge": { "paths": [
                { "counters": { "frames_in": 10, "frames_out": 7, "drops": [1, 0, 0],
                                "bytes_in": 1000, "bytes_out": 700 },
                  "held": 2, "drops_by_reason": { "queue_full": 1 },
                  "transit": { "count": 7, "min_ns": 5012000, "p50_ns": 5100000,
                               "p99_ns": 9000000, "p999_ns": 9000000, "max_ns": 9000000 },
                  "ring_used": 1, "ring_size": 256, "ring_bytes": 100,
                  "bql_limit": 3028, "bql_inflight": 100 },
                { "counters": { "frames_in": 5, "frames_out": 3, "drops": [0] },
                  "held": 1, "drops_by_reason": {}, "bql_limit": null }
            ]},
            "lateness": { "p50_ns": 4000, "p99_ns": 12000, "p999_ns": 30000, "max_ns": 90000, "samples": 9 },
            "wakeups": { "total": 20, "timer": 9, "io": 11 },
            "left_port": { "rx_frames": 10 }, "right_port": {},
            "tap_tx_dropped": { "left": 3, "right": null }
        });
        let text = render_stats(&snap);
        assert!(
            text.contains("frames in 10  out 7  held 2  dropped 1"),
            "{text}"
        );
        assert!(text.contains("drops by reason: queue_full 1"), "{text}");
        assert!(text.contains("BQL limit 3028 B"), "{text}");
        assert!(
            text.contains("transit (in to out) min 5.012 ms  p50 5.100  p99 9.000"),
            "{text}"
        );
        assert_eq!(text.matches("transit").count(), 1, "none without frames");
        assert!(
            text.contains("in 10 = out 7 + dropped 1 + held 2: ok"),
            "{text}"
        );
        assert!(text.contains("BQL off"), "{text}");
        assert!(text.contains("held 1: VIOLATED"), "{text}");
        // netem duplication: the duplicates count on the left of the identity.
        let mut dup = snap.clone();
        dup["bridge"]["paths"][1] = serde_json::json!({
            "counters": { "frames_in": 5, "frames_out": 6, "drops": [1],
                          "duplicated": 2, "corrupted": 1 },
            "held": 0, "seed": 42, "drops_by_reason": {}, "bql_limit": null
        });
        let text = render_stats(&dup);
        assert!(
            text.contains("in 5 + duplicated 2 = out 6 + dropped 1 + held 0: ok"),
            "{text}"
        );
        assert!(
            text.contains("impairments seed 42  duplicated 2  corrupted 1"),
            "{text}"
        );
        assert!(text.contains("p99 12.0 us"), "{text}");
        assert!(text.contains("read them: left 3, right ?"), "{text}");
    }

    #[test]
    fn stats_text_shows_capture_counters_only_while_capturing() {
        let mut snap = serde_json::json!({
            "bridge": { "paths": [ { "counters": {} }, { "counters": {} } ] }
        });
        assert!(!render_stats(&snap).contains("capture"));
        snap["bridge"]["capture"] = serde_json::json!([
            { "captured": 40, "dropped": 2, "write_errors": 0 },
            { "captured": 7, "dropped": 0, "write_errors": 1 }
        ]);
        let text = render_stats(&snap);
        assert!(
            text.contains("capture: 40 records written, 2 dropped (writer behind), 0 write errors"),
            "{text}"
        );
        assert!(
            text.contains("capture: 7 records written, 0 dropped"),
            "{text}"
        );
    }
}
