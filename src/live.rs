//! The live link: a configuration brought up as namespaces with their TAPs,
//! the datapath thread running both paths between them and the control
//! socket. `setup` and `build_bridge` turn a `Config` into what the link is
//! made of; `LiveLink` is a running link without signals or TUI, shared by
//! `bloatbox up` (which adds signals, the TUI and metrics around the same
//! pieces; with `--wire` the two ports are existing interfaces instead), `bloatbox test` (`crate::experiment`) and `crate::harness`.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::bridge::Bridge;
use crate::config::{Config, Endpoint};
use crate::control_server::ControlServer;
use crate::datapath::{Datapath, DatapathConfig, FRAME_OVERHEAD};
use crate::dir::Dir;
use crate::link::Path as LinkPath;
use crate::netns::{self, SideSpec, Topology};
use crate::port::{FramePort, TapSpec};
use crate::time::NS_PER_SEC;
use crate::wire::Wire;

/// The configuration file, or the embedded default without one.
pub(crate) fn load(path: Option<&Path>) -> anyhow::Result<Config> {
    match path {
        Some(p) => {
            Config::load_with(p, Some(&crate::tc::check_steps)).map_err(|e| anyhow::anyhow!("{e}"))
        }
        None => Ok(Config::embedded_default()),
    }
}

/// What the live link is made of, derived from the configuration.
pub(crate) struct Setup {
    pub(crate) topology: Topology,
    pub(crate) control_socket: PathBuf,
    pub(crate) datapath: DatapathConfig,
}

/// Locally administered MACs of the two TAPs (02:62:62 = "bb").
const MAC_LEFT: [u8; 6] = [0x02, 0x62, 0x62, 0x00, 0x00, 0x01];
const MAC_RIGHT: [u8; 6] = [0x02, 0x62, 0x62, 0x00, 0x00, 0x02];

pub(crate) fn setup(cfg: &Config) -> anyhow::Result<Setup> {
    let mtu = u16::try_from(cfg.tap.mtu)
        .with_context(|| format!("tap.mtu = {} does not fit a TAP (68..=9000)", cfg.tap.mtu))?;
    let side = |e: &Endpoint, mac: [u8; 6]| SideSpec {
        netns: e.namespace.clone(),
        tap: TapSpec {
            name: e.tap.clone(),
            mtu,
            mac,
            txqueuelen: cfg.tap.txqueuelen,
            offload: cfg.tap.offload,
        },
        addrs: std::iter::once((e.ipv4.addr, e.ipv4.prefix))
            .chain(cfg.ipv6_on_taps().then_some((e.ipv6.addr, e.ipv6.prefix)))
            .collect(),
    };
    Ok(Setup {
        topology: Topology {
            left: side(&cfg.left, MAC_LEFT),
            right: side(&cfg.right, MAC_RIGHT),
        },
        control_socket: cfg.control_socket(),
        datapath: DatapathConfig {
            spin_us: cfg.daemon.spin_us,
            // Validated to at most 100.
            spin_budget_pct: u8::try_from(cfg.daemon.spin_budget_pct).unwrap_or(100),
            timer_slack_us: cfg.daemon.timer_slack_us,
            busy_poll_us: cfg.daemon.busy_poll_us,
            pm_qos_us: cfg.daemon.pm_qos_us,
            publish_interval_ns: NS_PER_SEC / u64::from(cfg.daemon.snapshot_hz.max(1)),
            snapshot_flows: cfg.daemon.snapshot_flows as usize,
            frame_buf: cfg.tap.mtu as usize + FRAME_OVERHEAD,
            pool_buffers: cfg.daemon.pool_size as usize,
            gso: cfg.tap.gso_policy().unwrap_or_default(),
            gro: cfg.tap.offload && cfg.tap.gro,
            // One CPU pins both threads; two, one each.
            cpus: match cfg.daemon.cpus[..] {
                [] => [None; 2],
                [both] => [Some(both as usize); 2],
                [l2r, r2l, ..] => [Some(l2r as usize), Some(r2l as usize)],
            },
            ..DatapathConfig::default()
        },
    })
}

/// The two paths of the link, per the configuration: each direction's
/// qdisc tree is built by its tc steps on a device with that direction's
/// txqueuelen, MTU and TX queues; its shape (netem, trace/schedule,
/// framing, seed) is installed now, so a schedule starts with the link.
pub(crate) fn build_bridge(cfg: &Config) -> anyhow::Result<Bridge> {
    let devs = cfg.dev_specs();
    let path = |dir: Dir| -> anyhow::Result<LinkPath> {
        let params = cfg.link_params(dir);
        let dev = devs[dir.index()].clone();
        let tree = crate::tc::build_tree_of(dev, &cfg.tc_steps(dir))
            .map_err(|e| anyhow::anyhow!("building the qdisc of {}: {e}", dir.arrow()))?;
        let mut link = LinkPath::new(params, tree);
        let now = crate::time::Clock::now(&crate::clock::MonotonicClock);
        link.set_shape(cfg.link_shape(dir), now)
            .map_err(|e| anyhow::anyhow!("the link shape of {}: {e}", dir.arrow()))?;
        Ok(link)
    };
    Ok(Bridge::new(
        path(Dir::LeftToRight)?,
        path(Dir::RightToLeft)?,
    ))
}

/// Starts the capture of `spec` and installs its tap in `bridge`.
pub(crate) fn attach_capture(
    bridge: &mut Bridge,
    spec: Option<&crate::capture::CaptureSpec>,
) -> anyhow::Result<Option<crate::capture::CaptureWriter>> {
    let Some(spec) = spec else { return Ok(None) };
    let (tap, writer) = crate::capture::start(spec, None)?;
    bridge.set_capture(tap);
    Ok(Some(writer))
}

/// The link of `cfg`, up and running: the control socket, the datapath
/// thread and the namespaces with their TAPs. Dropping it tears everything
/// down in that order (the fields drop in declaration order); `stop` does
/// the same and returns the final snapshot. Used by `bloatbox test` and by
/// `crate::harness`, which runs links for `bloatbox run` and test suites.
pub struct LiveLink {
    pub(crate) control: ControlServer,
    pub(crate) datapath: Datapath,
    /// Finishes the capture files once the datapath has stopped.
    pub(crate) capture: Option<crate::capture::CaptureWriter>,
    pub(crate) namespaces: LinkNamespaces,
    pub(crate) control_socket: PathBuf,
}

impl LiveLink {
    /// Brings the link of `cfg` up as `up` does, without signals, TUI or
    /// capture; `realtime` as `up --realtime`.
    pub fn start(cfg: &Config, realtime: Option<u8>) -> anyhow::Result<LiveLink> {
        start_link(cfg, realtime, None, None, None)
    }

    /// Where the link's control socket listens (`crate::control::Client`).
    pub fn control_socket(&self) -> &Path {
        &self.control_socket
    }

    /// The datapath's latest published snapshot.
    pub fn snapshot(&self) -> Option<std::sync::Arc<crate::datapath::LiveSnapshot>> {
        self.datapath.snapshots().latest()
    }

    /// Stops the control socket and the datapath (returning its final
    /// snapshot), finishes the capture and removes the namespaces.
    pub fn stop(self) -> Result<crate::datapath::LiveSnapshot, crate::datapath::DatapathError> {
        drop(self.control);
        let last = self.datapath.shutdown();
        drop(self.capture);
        drop(self.namespaces);
        last
    }
}

/// Brings the link of `cfg` up as `up` does, without signals or the TUI;
/// `realtime` and `capture` as in `crate::app::UpOptions`; with `rootless`, in anonymous
/// namespaces (`crate::rootless::up`); with `wire`, between those two
/// existing interfaces (`crate::wire`), creating no namespace.
pub(crate) fn start_link(
    cfg: &Config,
    realtime: Option<u8>,
    capture: Option<&crate::capture::CaptureSpec>,
    rootless: Option<crate::rootless::Backend>,
    wire: Option<&Wire>,
) -> anyhow::Result<LiveLink> {
    let mut setup = setup(cfg)?;
    setup.datapath.realtime_priority = realtime;
    let mut bridge = build_bridge(cfg)?;
    let capture = attach_capture(&mut bridge, capture)?;
    let (namespaces, left, right): (LinkNamespaces, Box<dyn FramePort>, Box<dyn FramePort>) =
        match (wire, rootless) {
            (Some(wire), _) => {
                let (guard, left, right) = wire.open(cfg.tap.mtu, cfg.tap.wire_ring)?;
                (
                    LinkNamespaces::Wire { _guard: guard },
                    Box::new(left),
                    Box::new(right),
                )
            }
            (None, Some(backend)) => {
                let (ns, left, right) = crate::rootless::up(&setup.topology, backend)?;
                (LinkNamespaces::Rootless(ns), left, right)
            }
            (None, None) => {
                netns::require_privileges()?;
                let (guard, left, right) = setup.topology.up()?;
                (
                    LinkNamespaces::Named { _guard: guard },
                    Box::new(left),
                    Box::new(right),
                )
            }
        };
    let datapath = Datapath::spawn(bridge, left, right, setup.datapath)?;
    let control = ControlServer::start(
        &setup.control_socket,
        datapath.snapshots(),
        Some(datapath.commander()),
    )?;
    Ok(LiveLink {
        control,
        datapath,
        capture,
        namespaces,
        control_socket: setup.control_socket,
    })
}

/// The namespaces of a live link and what removes them: named ones by their
/// guard (`ip netns del`), a rootless link's anonymous ones by being dropped;
/// a wire's, which bloatbox did not make, stay.
#[derive(Debug)]
pub(crate) enum LinkNamespaces {
    Named {
        /// Held for its `Drop`, which deletes the namespaces.
        _guard: netns::LinkGuard,
    },
    Rootless(crate::rootless::Namespaces),
    /// A wire creates no namespace: it holds its ends' locks.
    Wire {
        /// Held for its locks.
        _guard: crate::wire::WireGuard,
    },
}

impl LinkNamespaces {
    /// A rootless link's namespaces (`None` for named ones).
    pub(crate) fn rootless(&self) -> Option<&crate::rootless::Namespaces> {
        match self {
            LinkNamespaces::Named { .. } | LinkNamespaces::Wire { .. } => None,
            LinkNamespaces::Rootless(ns) => Some(ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_config_builds_both_qdisc_trees() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/configs");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let cfg = load(Some(&path)).unwrap();
                build_bridge(&cfg).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
                seen += 1;
            }
        }
        assert!(seen > 0, "no configs in {dir}");
    }

    #[test]
    fn a_tc_tree_that_cannot_be_built_is_an_error_naming_the_line() {
        let cfg = Config::from_str(
            "[link]\ntc = [\"tc qdisc add dev left parent 1:1 handle 10: pfifo\"]\n",
            "test",
        )
        .unwrap();
        let err = format!("{:#}", build_bridge(&cfg).err().expect("no parent 1:"));
        assert!(err.contains("parent 1:1"), "{err}");
    }

    /// The configuration's check and the live build number automatic
    /// handles from one counter for both devices (the right's tree refers
    /// to 8002:, which it gets after the left's 8001:).
    #[test]
    fn both_devices_take_automatic_handles_from_one_counter() {
        let text = "[link.left_to_right]\ntc = [\"tc qdisc add dev left root tbf rate 10mbit burst 5k latency 10ms\"]\n\
                    [link.right_to_left]\ntc = [\"tc qdisc add dev right root tbf rate 10mbit burst 5k latency 10ms\", \
                    \"tc qdisc add dev right parent 8002:1 pfifo limit 7\"]\n";
        let cfg = Config::from_str_with(text, "test", Some(&crate::tc::check_steps))
            .unwrap_or_else(|e| panic!("{e}"));
        let bridge = build_bridge(&cfg).unwrap();
        let root =
            |d: Dir| crate::qdisc::Qdisc::dump(bridge.path(d).qdisc(), crate::time::Instant::ZERO);
        assert_eq!(root(Dir::LeftToRight).handle, 0x8001_0000);
        let r = root(Dir::RightToLeft);
        assert_eq!(r.handle, 0x8002_0000);
        assert_eq!(
            (r.children[0].kind.as_str(), r.children[0].parent),
            ("pfifo", 0x8002_0001)
        );
    }

    #[test]
    fn setup_maps_the_default_config() {
        let s = setup(&Config::embedded_default()).unwrap();
        assert_ne!(s.topology.left.netns, s.topology.right.netns);
        assert_eq!(s.topology.left.addrs.len(), 2);
        assert!(s.datapath.publish_interval_ns > 0);
    }
}
