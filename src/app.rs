//! The subcommands behind `bloatbox`'s command line: `up` (set up the
//! namespaces and TAPs, run the datapath and the control socket until
//! SIGINT/SIGTERM, then remove everything), `down`, `exec`, `check` and
//! `stats`. `main.rs` only parses arguments and calls these.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::bridge::Bridge;
use crate::config::{Config, Direction, Endpoint};
use crate::control::{request_stats, ControlServer};
use crate::datapath::{Datapath, DatapathConfig, FRAME_OVERHEAD};
use crate::link::Path as LinkPath;
use crate::netns::{self, SideSpec, TerminationSignals, Topology};
use crate::port::TapSpec;
use crate::qdisc::pfifo_fast::PfifoFast;
use crate::qdisc::QdiscCtx;
use crate::time::NS_PER_SEC;

/// Which namespace `exec` runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Side {
    Left,
    Right,
}

/// How often `up` checks on the datapath thread while waiting for a signal.
const WATCH_INTERVAL_MS: u16 = 200;

/// The configuration file, or the embedded default without one.
fn load(path: Option<&Path>) -> anyhow::Result<Config> {
    match path {
        Some(p) => Config::load(p).map_err(|e| anyhow::anyhow!("{e}")),
        None => Ok(Config::embedded_default()),
    }
}

/// What the live link is made of, derived from the configuration.
struct Setup {
    topology: Topology,
    control_socket: PathBuf,
    datapath: DatapathConfig,
}

/// Locally administered MACs of the two TAPs (02:62:62 = "bb").
const MAC_LEFT: [u8; 6] = [0x02, 0x62, 0x62, 0x00, 0x00, 0x01];
const MAC_RIGHT: [u8; 6] = [0x02, 0x62, 0x62, 0x00, 0x00, 0x02];

fn setup(cfg: &Config) -> anyhow::Result<Setup> {
    let mtu = u16::try_from(cfg.tap.mtu)
        .with_context(|| format!("tap.mtu = {} does not fit a TAP (68..=9000)", cfg.tap.mtu))?;
    let side = |e: &Endpoint, mac: [u8; 6]| SideSpec {
        netns: e.namespace.clone(),
        tap: TapSpec {
            name: e.tap.clone(),
            mtu,
            mac,
            txqueuelen: cfg.tap.txqueuelen,
        },
        addrs: vec![(e.ipv4.addr, e.ipv4.prefix), (e.ipv6.addr, e.ipv6.prefix)],
    };
    Ok(Setup {
        topology: Topology {
            left: side(&cfg.left, MAC_LEFT),
            right: side(&cfg.right, MAC_RIGHT),
        },
        control_socket: cfg.control_socket(),
        datapath: DatapathConfig {
            spin_us: cfg.daemon.spin_us,
            publish_interval_ns: NS_PER_SEC / u64::from(cfg.daemon.snapshot_hz.max(1)),
            frame_buf: cfg.tap.mtu as usize + FRAME_OVERHEAD,
            pool_buffers: cfg.daemon.pool_size as usize,
            ..DatapathConfig::default()
        },
    })
}

/// The two paths of the link, per the configuration. The qdisc of each
/// direction is pfifo_fast with the device's txqueuelen until the tc tree
/// builder lands.
fn build_bridge(cfg: &Config) -> Bridge {
    let path = |dir: Direction| {
        let params = cfg.link_params(dir);
        let ctx = QdiscCtx {
            txqueuelen: params.txqueuelen,
            psched_mtu: params.mtu + 14,
            ..QdiscCtx::default()
        };
        LinkPath::new(params, Box::new(PfifoFast::new(ctx)))
    };
    Bridge::new(path(Direction::LeftToRight), path(Direction::RightToLeft))
}

/// `bloatbox up`: runs until SIGINT/SIGTERM/SIGHUP or until the datapath stops,
/// then removes everything it created (also on error and on panic, through
/// the guards' Drop).
pub fn up(config: Option<&Path>, realtime: Option<u8>) -> anyhow::Result<()> {
    let cfg = load(config)?;
    let mut setup = setup(&cfg)?;
    setup.datapath.realtime_priority = realtime;
    netns::require_privileges()?;
    let bridge = build_bridge(&cfg);
    // Before any thread exists, so that all inherit the blocked mask.
    let mut signals = TerminationSignals::block()?;
    let (guard, left, right) = setup.topology.up()?;
    let datapath = Datapath::spawn(bridge, Box::new(left), Box::new(right), setup.datapath)?;
    let control = ControlServer::start(&setup.control_socket, datapath.snapshots())?;
    tracing::info!(
        left = %setup.topology.left.netns,
        right = %setup.topology.right.netns,
        control = %setup.control_socket.display(),
        "link up; stop with Ctrl-C (try `bloatbox exec left -- ping ...`)"
    );
    let stopped_by = loop {
        if let Some(sig) = signals.wait(WATCH_INTERVAL_MS) {
            break format!("signal {sig}");
        }
        if datapath.is_finished() {
            break "the datapath thread stopping".to_string();
        }
    };
    tracing::info!("shutting down after {stopped_by}");
    drop(control);
    let last = datapath.shutdown();
    drop(guard);
    let last = last?;
    tracing::info!(
        wakeups = last.wakeups.total,
        lateness_p99_ns = last.lateness.p99_ns,
        "link down, everything removed"
    );
    Ok(())
}

/// `bloatbox down`: removes what a killed run left behind.
pub fn down(config: Option<&Path>) -> anyhow::Result<()> {
    let cfg = load(config)?;
    let setup = setup(&cfg)?;
    netns::require_privileges()?;
    let removed = netns::down(&setup.topology)?;
    if removed.is_empty() {
        println!("nothing to remove");
    }
    for r in removed {
        println!("removed {r}");
    }
    if setup.control_socket.exists() && request_stats(&setup.control_socket).is_err() {
        std::fs::remove_file(&setup.control_socket)?;
        println!(
            "removed stale control socket {}",
            setup.control_socket.display()
        );
    }
    Ok(())
}

/// `bloatbox exec left|right -- CMD...`: the command's exit code, or 128 +
/// the signal that ended it.
pub fn exec(side: Side, config: Option<&Path>, cmd: &[String]) -> anyhow::Result<u8> {
    use std::os::unix::process::ExitStatusExt;
    let cfg = load(config)?;
    let setup = setup(&cfg)?;
    let ns = match side {
        Side::Left => &setup.topology.left.netns,
        Side::Right => &setup.topology.right.netns,
    };
    let status = netns::exec_in(ns, cmd)?;
    Ok(match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(sig)) => 128u8.wrapping_add(sig as u8),
        (None, None) => 1,
    })
}

/// `bloatbox check FILE`.
pub fn check(file: &Path) -> anyhow::Result<()> {
    let cfg = Config::load(file).map_err(|e| anyhow::anyhow!("{e}"))?;
    print!("{}", crate::config::check_report(&cfg));
    Ok(())
}

/// `bloatbox stats`.
pub fn stats(config: Option<&Path>, json: bool) -> anyhow::Result<()> {
    let cfg = load(config)?;
    let setup = setup(&cfg)?;
    let snap = request_stats(&setup.control_socket)?;
    if json {
        println!("{snap}");
    } else {
        print!("{}", render_stats(&snap));
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
    for (name, p) in ["left -> right", "right -> left"].iter().zip(&paths) {
        let c = &p["counters"];
        let (fin, fout, held) = (num(c, "frames_in"), num(c, "frames_out"), num(p, "held"));
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
        let ok = fin == fout + drops + held;
        let _ = writeln!(
            out,
            "  conservation: in {fin} = out {fout} + dropped {drops} + held {held}: {}",
            if ok { "ok" } else { "VIOLATED" }
        );
    }
    let l = &snap["lateness"];
    let w = &snap["wakeups"];
    let _ = writeln!(
        out,
        "datapath\n  wake-up lateness p50 {:.1} us  p99 {:.1} us  p99.9 {:.1} us  max {:.1} us ({} samples)",
        num(l, "p50_ns") as f64 / 1e3,
        num(l, "p99_ns") as f64 / 1e3,
        num(l, "p999_ns") as f64 / 1e3,
        num(l, "max_ns") as f64 / 1e3,
        num(l, "samples")
    );
    let _ = writeln!(
        out,
        "  wake-ups {} (timer {}, I/O {})",
        num(w, "total"),
        num(w, "timer"),
        num(w, "io")
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
    out
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
                  "ring_used": 1, "ring_size": 256, "ring_bytes": 100,
                  "bql_limit": 3028, "bql_inflight": 100 },
                { "counters": { "frames_in": 5, "frames_out": 3, "drops": [0] },
                  "held": 1, "drops_by_reason": {}, "bql_limit": null }
            ]},
            "lateness": { "p50_ns": 4000, "p99_ns": 12000, "p999_ns": 30000, "max_ns": 90000, "samples": 9 },
            "wakeups": { "total": 20, "timer": 9, "io": 11 },
            "left_port": { "rx_frames": 10 }, "right_port": {}
        });
        let text = render_stats(&snap);
        assert!(
            text.contains("frames in 10  out 7  held 2  dropped 1"),
            "{text}"
        );
        assert!(text.contains("drops by reason: queue_full 1"), "{text}");
        assert!(text.contains("BQL limit 3028 B"), "{text}");
        assert!(
            text.contains("in 10 = out 7 + dropped 1 + held 2: ok"),
            "{text}"
        );
        assert!(text.contains("BQL off"), "{text}");
        assert!(text.contains("held 1: VIOLATED"), "{text}");
        assert!(text.contains("p99 12.0 us"), "{text}");
    }

    #[test]
    fn setup_maps_the_default_config() {
        let s = setup(&Config::embedded_default()).unwrap();
        assert_ne!(s.topology.left.netns, s.topology.right.netns);
        assert_eq!(s.topology.left.addrs.len(), 2);
        assert!(s.datapath.publish_interval_ns > 0);
    }
}
