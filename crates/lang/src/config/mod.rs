//! The TOML configuration: the two namespaces with their TAPs and addresses,
//! the emulated link (shared settings plus `left_to_right`/`right_to_left`
//! overrides), the qdisc of each direction (structured or as literal tc
//! lines, both turned into tc command lines), ethtool-style link settings and
//! the daemon settings. Loading validates everything and reports precise
//! errors (file:line:col, field path, value, allowed range, fix).
//!
//! Submodules: `values` (typed leaf values: tc quantities, addresses),
//! `qdisc` (qdisc forms → tc lines), `ethtool` (`ethtool -C/-G/-K` lines →
//! `LinkParams`), `validate` (ranges and cross-field rules), `overrides`
//! (`--set key=value`), `report` (`bloatbox check`), `shape` (netem,
//! trace/schedule, framing and seed → `LinkShape`), `error` and `source`
//! (error type, positions).
//!
//! ```toml
//! [left]                      # namespace bb-left, TAP bbl0, addresses
//! [right]
//! [tap]                       # mtu, the TAPs' own (small) txqueuelen
//! [link]                      # shared by both directions
//! rate = "100mbit"
//! qdisc = "fq_codel"          # or { kind = "fq_codel", ecn = true }
//! tc = ["tc qdisc add dev left root fq_codel"]   # literal form, by device
//! ethtool = ["ethtool -C left rx-usecs 20 rx-frames 0"]
//! netem = "delay 10ms 2ms distribution normal loss 1%"   # tc-netem options
//! trace = "traces/lte.up"     # mahimahi trace, or schedule = "x.sched"
//! framing = "overhead 24 linklayer ethernet"   # or a preset: "pppoe"
//! seed = 7                    # left→right 7, right→left 8
//! [link.left_to_right]        # overrides for the left→right direction
//! [daemon]
//! [lesson]                    # caption = "...": what `demo --tui` shows
//! ```
//!
//! Precedence per direction: a value in `link.left_to_right` (or
//! `right_to_left`) beats `link`, which beats the built-in default; ethtool
//! lines are applied after that, in order. Literal tc lines for a device
//! replace the structured qdisc of that direction.

mod error;
pub mod ethtool;
mod overrides;
pub mod qdisc;
mod report;
pub mod shape;
mod source;
mod validate;
pub mod values;

pub use error::ConfigError;
pub use ethtool::{apply_ethtool, parse_ethtool, EthtoolCommand, EthtoolSetting, Query};
pub use qdisc::{ClassTable, LiteralLineError, QdiscError, QdiscSpec, QdiscTable};
pub use report::check_report;
pub use source::Position;
pub use validate::{
    allowed_cpus, check_link_coalescing, CoalescingError, MAX_FRAMES, MAX_POST_NS,
    MAX_RATE_BYTES_PS, MAX_USECS, TX_RING,
};
pub use values::{Delay, IfAddr, IfAddrError, LinkRate, QuantityError, Size, TcRate, TcTime};

use crate::link::offload::GsoPolicy;
use crate::link::LinkParams;
use crate::qdisc::tree::DevSpec;
use crate::tc::Step;
use serde::{Deserialize, Deserializer, Serialize};
use source::SpanIndex;
use std::path::{Path, PathBuf};

/// The least MTU IPv6 allows on a link (RFC 8200 section 5).
pub const IPV6_MIN_MTU: u32 = 1280;

/// The most a configuration, scenario or trace file may hold.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Reads a text file the user named, refusing one larger than
/// `MAX_INPUT_BYTES` (such as /dev/zero) instead of filling memory.
pub fn read_input_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_INPUT_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_INPUT_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "larger than {} MiB, far more than any configuration, scenario or trace",
                MAX_INPUT_BYTES >> 20
            ),
        ));
    }
    Ok(text)
}

/// The embedded default configuration (configs/default.toml).
pub const DEFAULT_TOML: &str = include_str!("../../../../configs/default.toml");

/// A check of one direction's tc steps by the tc front end, on the device
/// they will build (`Err` = the failing step's index, none for the device
/// itself, and tc's message).
pub type TcCheck<'a> = &'a dyn Fn(DevSpec, &[Step]) -> Result<(), (Option<usize>, String)>;

use crate::dir::Dir;

/// The whole configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(
        default = "Endpoint::default_left",
        deserialize_with = "Endpoint::deserialize_left"
    )]
    /// `[left]`: the left namespace, its TAP and addresses (missing keys take
    /// `Endpoint::default_left`).
    pub left: Endpoint,
    #[serde(
        default = "Endpoint::default_right",
        deserialize_with = "Endpoint::deserialize_right"
    )]
    /// `[right]`: the right namespace, its TAP and addresses (missing keys take
    /// `Endpoint::default_right`).
    pub right: Endpoint,
    /// `[tap]`: how both TAPs are opened (offload, kernel queue).
    #[serde(default)]
    pub tap: TapSettings,
    /// `[link]`: the emulated link, both directions, with per-direction
    /// overrides.
    #[serde(default)]
    pub link: LinkSettings,
    /// `[daemon]`: the daemon's control socket, threads, snapshots, metrics.
    #[serde(default)]
    pub daemon: DaemonSettings,
    /// `[lesson]`: how `demo --tui` and `test --tui` narrate this
    /// configuration's phase (its caption).
    #[serde(default, skip_serializing_if = "LessonSettings::is_empty")]
    pub lesson: LessonSettings,
}

/// What `demo --tui` and `test --tui` show while this configuration runs
/// as a phase of a lesson.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a table with caption")]
pub struct LessonSettings {
    /// One line on what the phase sets up and what to watch; unset: the
    /// lesson names the configuration and its root qdisc.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
}

impl LessonSettings {
    fn is_empty(&self) -> bool {
        self.caption.is_none()
    }
}

/// One side: its network namespace, TAP and addresses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Endpoint {
    /// The network namespace's name (`ip netns` name), created by `up`.
    pub namespace: String,
    /// The TAP device's name in it (at most 15 bytes).
    pub tap: String,
    /// The TAP's IPv4 address with its prefix length (`10.77.0.1/24`).
    pub ipv4: IfAddr,
    /// The TAP's IPv6 address with its prefix length (`fd00:77::1/64`).
    pub ipv6: IfAddr,
}

/// An `[left]`/`[right]` table as written: missing keys take the side's default.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table with namespace, tap, ipv4, ipv6"
)]
struct EndpointPatch {
    namespace: Option<String>,
    tap: Option<String>,
    ipv4: Option<IfAddr>,
    ipv6: Option<IfAddr>,
}

impl Endpoint {
    fn side(namespace: &str, tap: &str, ipv4: &str, ipv6: &str) -> Endpoint {
        let addr = |text: &str| {
            IfAddr::parse(text).unwrap_or(IfAddr {
                addr: std::net::Ipv4Addr::UNSPECIFIED.into(),
                prefix: 0,
            })
        };
        Endpoint {
            namespace: namespace.into(),
            tap: tap.into(),
            ipv4: addr(ipv4),
            ipv6: addr(ipv6),
        }
    }

    /// The left side of the default configuration: namespace `bb-left`, TAP
    /// `bbl0`, 10.77.0.1/24 and fd00:77::1/64.
    pub fn default_left() -> Endpoint {
        Endpoint::side("bb-left", "bbl0", "10.77.0.1/24", "fd00:77::1/64")
    }

    /// The right side of the default configuration: namespace `bb-right`, TAP
    /// `bbr0`, 10.77.0.2/24 and fd00:77::2/64.
    pub fn default_right() -> Endpoint {
        Endpoint::side("bb-right", "bbr0", "10.77.0.2/24", "fd00:77::2/64")
    }

    fn patched(mut self, patch: EndpointPatch) -> Endpoint {
        self.namespace = patch.namespace.unwrap_or(self.namespace);
        self.tap = patch.tap.unwrap_or(self.tap);
        self.ipv4 = patch.ipv4.unwrap_or(self.ipv4);
        self.ipv6 = patch.ipv6.unwrap_or(self.ipv6);
        self
    }

    fn deserialize_left<'de, D: Deserializer<'de>>(d: D) -> Result<Endpoint, D::Error> {
        EndpointPatch::deserialize(d).map(|p| Endpoint::default_left().patched(p))
    }

    fn deserialize_right<'de, D: Deserializer<'de>>(d: D) -> Result<Endpoint, D::Error> {
        EndpointPatch::deserialize(d).map(|p| Endpoint::default_right().patched(p))
    }
}

/// Settings of both TAP interfaces.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    default,
    deny_unknown_fields,
    expecting = "a table with mtu, txqueuelen, offload, gso_min_rate, gro, forward_gro, wire_ring"
)]
pub struct TapSettings {
    /// MTU of the TAPs and of the emulated devices, 68..=9000.
    pub mtu: u32,
    /// The TAPs' own kernel txqueuelen (tun's ring): enough to absorb a
    /// sender's bursts while the datapath wakes up (tun drops, never
    /// waits, when it is full), small enough to hide no buffer while the
    /// datapath keeps up.
    pub txqueuelen: u32,
    /// Open the TAPs with `IFF_VNET_HDR` and TCP offloads: the kernel hands
    /// over GSO super-frames (see `packet::gso`).
    pub offload: bool,
    /// With offload: directions whose link rate is at least this (or
    /// unlimited), with no shaping qdisc, schedule, impairment or framing,
    /// pass super-frames whole; all others see per-MTU segments.
    pub gso_min_rate: LinkRate,
    /// With offload: frames the link releases together are merged into TCP
    /// super-frames before they are written to the receiving TAP, as the
    /// receiving host's NIC does with GRO on (`packet::gro`).
    pub gro: bool,
    /// With offload: HTB and TBF see super-frames whole too, as on a
    /// forwarding Linux router with GRO on its ingress NIC (TBF's bucket
    /// bounds them, `link::offload`).
    pub forward_gro: bool,
    /// With `up --wire`: each end's packet socket reads through a mapped
    /// `TPACKET_V2` receive ring and writes in `sendmmsg` batches; false,
    /// one `readv` and one `writev` per frame.
    pub wire_ring: bool,
}

impl TapSettings {
    /// Which super-frames may pass whole (`link::offload`), per
    /// `gso_min_rate` and `forward_gro`; None without offload, when the
    /// TAPs hand over no super-frames.
    pub fn gso_policy(&self) -> Option<GsoPolicy> {
        self.offload.then(|| GsoPolicy {
            whole_min_rate_bytes_ps: self.gso_min_rate.value(),
            forward_gro: self.forward_gro,
        })
    }
}

impl Default for TapSettings {
    fn default() -> Self {
        TapSettings {
            mtu: 1500,
            txqueuelen: 128,
            offload: true,
            gso_min_rate: LinkRate::parse(DEFAULT_GSO_MIN_RATE).expect("a valid rate"),
            gro: false,
            forward_gro: false,
            wire_ring: true,
        }
    }
}

/// Default of `tap.gso_min_rate`, `GsoPolicy::default()` as written.
const DEFAULT_GSO_MIN_RATE: &str = "1gbit";

/// Link settings. The same table type serves `[link]` (shared) and its
/// direction overrides; unset values fall back to the shared table, then to
/// `LinkSettings::builtin()`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table of link settings (rate, delay, ...)"
)]
pub struct LinkSettings {
    /// Line rate (tc units), "0" or "unlimited" for none; ≤ 100gbit.
    pub rate: Option<LinkRate>,
    /// Extra bytes per frame on the wire (24 = preamble + FCS + IFG).
    pub overhead: Option<u32>,
    /// One-way propagation delay, ≤ 60s.
    pub delay: Option<Delay>,
    /// TX ring descriptors, 1..=4096.
    pub tx_ring: Option<u32>,
    /// The driver's early queue stop: stop the TX queue when fewer than
    /// this many descriptors are free, 0..=`tx_ring` (0: when full).
    pub tx_stop_threshold: Option<u32>,
    /// The driver's cost of posting one frame, ns, 0..=1000000: a batch
    /// reaches the NIC at its doorbell, after its last frame is posted.
    pub tx_post_ns: Option<u32>,
    /// Byte queue limits on the TX queue.
    pub bql: Option<bool>,
    /// TX completion coalescing (ethtool -C tx-usecs / tx-frames).
    pub tx_usecs: Option<u32>,
    /// Completions per TX interrupt (ethtool -C tx-frames), 0..=65535.
    pub tx_frames: Option<u32>,
    /// RX interrupt coalescing (ethtool -C rx-usecs / rx-frames).
    pub rx_usecs: Option<u32>,
    /// Frames per RX interrupt (ethtool -C rx-frames), 0..=65535.
    pub rx_frames: Option<u32>,
    /// Qdisc bulk dequeue.
    pub bulk_dequeue: Option<bool>,
    /// txqueuelen of the emulated device, 1..=100000.
    pub txqueuelen: Option<u32>,
    /// TX queues; more than 1 puts an mq root above one qdisc per queue.
    pub tx_queues: Option<u32>,
    /// The structured qdisc form.
    pub qdisc: Option<QdiscSpec>,
    /// Literal tc lines; `dev left` configures left→right, `dev right` its mirror.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tc: Vec<String>,
    /// ethtool lines, by device like `tc`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ethtool: Vec<String>,
    /// Wire impairments as tc-netem(8) options (`"delay 10ms 2ms loss 1%"`).
    pub netem: Option<String>,
    /// A mahimahi trace file driving the rate (relative to the config file).
    pub trace: Option<String>,
    /// A native-format rate/delay schedule file (relative to the config file).
    pub schedule: Option<String>,
    /// Link-layer framing: stab options (`"overhead 24 linklayer ethernet"`)
    /// or a preset name (`"pppoe"`).
    pub framing: Option<String>,
    /// Seed of the impairments' random generator (see `shape` for the
    /// per-direction rule).
    pub seed: Option<u64>,
    /// Overrides for left→right (only in `[link]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_to_right: Option<Box<LinkSettings>>,
    /// Overrides for right→left (only in `[link]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub right_to_left: Option<Box<LinkSettings>>,
}

impl LinkSettings {
    /// The built-in defaults: every value set, no tc or ethtool lines.
    pub fn builtin() -> LinkSettings {
        let base = LinkParams::default();
        LinkSettings {
            rate: LinkRate::parse("100mbit").ok(),
            overhead: Some(base.overhead),
            delay: Delay::parse("5ms").ok(),
            tx_ring: Some(base.tx_ring),
            tx_stop_threshold: Some(base.tx_stop_threshold),
            tx_post_ns: u32::try_from(base.tx_post_ns).ok(),
            bql: Some(base.bql),
            tx_usecs: Some(base.tx_usecs),
            tx_frames: Some(base.tx_frames),
            rx_usecs: Some(base.rx_usecs),
            rx_frames: Some(base.rx_frames),
            bulk_dequeue: Some(base.bulk_dequeue),
            txqueuelen: Some(base.txqueuelen),
            tx_queues: Some(1),
            qdisc: Some(QdiscSpec::pfifo_fast()),
            ..LinkSettings::default()
        }
    }

    /// The override table of `dir`, if written.
    pub fn direction(&self, dir: Dir) -> Option<&LinkSettings> {
        match dir {
            Dir::LeftToRight => self.left_to_right.as_deref(),
            Dir::RightToLeft => self.right_to_left.as_deref(),
        }
    }
}

/// Settings of the running daemon.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    default,
    deny_unknown_fields,
    expecting = "a table with control_socket, snapshot_hz, snapshot_flows, spin_us, spin_budget_pct, timer_slack_us, busy_poll_us, pm_qos_us, pool_size, cpus"
)]
pub struct DaemonSettings {
    /// Control socket; unset = `/run/bloatbox/<left namespace>.sock`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_socket: Option<String>,
    /// Snapshots published per second, 1..=1000.
    pub snapshot_hz: u32,
    /// Flow queues listed per flow-queueing qdisc in each snapshot (the
    /// ones with the most backlog; the rest are summed up), 0..=65536.
    pub snapshot_flows: u32,
    /// Spin this many µs before a timer deadline (0 = off), ≤ 10000.
    pub spin_us: u32,
    /// Without `spin_us` and `timer_slack_us`: spin before a frame's
    /// deadline for as long as the timer has been late (its p99, learned),
    /// using at most this % of a core (0 = never spin), ≤ 100.
    pub spin_budget_pct: u32,
    /// Let a timer wake-up come up to this many µs after its deadline, so
    /// that one wake-up serves every deadline within it (0 = on time),
    /// ≤ 10000; not with `spin_us`.
    pub timer_slack_us: u32,
    /// Keep polling the ports, without sleeping, for this many µs after
    /// the last frame read or written (0 = off), ≤ 1000000.
    pub busy_poll_us: u32,
    /// While the datapath runs, hold a PM QoS CPU latency request of this
    /// many µs (`/dev/cpu_dma_latency`): idle CPUs stay in idle states
    /// that wake within it (0: they poll instead of halting), ≤ 1000000;
    /// unset (the default) makes no request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pm_qos_us: Option<u32>,
    /// Frame buffers in each direction's pool, 64..=1048576.
    pub pool_size: u32,
    /// CPUs to pin the datapath threads to: `[L2R, R2L]`, or one CPU for
    /// both; empty (the default) lets the scheduler place them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<u32>,
}

impl Default for DaemonSettings {
    fn default() -> Self {
        DaemonSettings {
            control_socket: None,
            snapshot_hz: 20,
            snapshot_flows: 64,
            spin_us: 0,
            spin_budget_pct: 15,
            timer_slack_us: 0,
            busy_poll_us: 0,
            pm_qos_us: None,
            pool_size: 65536,
            cpus: Vec::new(),
        }
    }
}

impl Default for Config {
    /// Identical to configs/default.toml (a test keeps them equal).
    fn default() -> Self {
        Config {
            left: Endpoint::default_left(),
            right: Endpoint::default_right(),
            tap: TapSettings::default(),
            link: LinkSettings::builtin(),
            daemon: DaemonSettings::default(),
            lesson: LessonSettings::default(),
        }
    }
}

/// Where a resolved link value came from: its dotted path.
pub(crate) struct Sourced<T> {
    pub value: T,
    pub path: String,
}

impl Config {
    /// Reads and validates a configuration file.
    pub fn load(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        Config::load_with(path, None)
    }

    /// Like `load`, also checking every tc line with the tc front end.
    pub fn load_with(
        path: impl AsRef<Path>,
        tc_check: Option<TcCheck>,
    ) -> Result<Config, ConfigError> {
        let origin = path.as_ref().display().to_string();
        let text = read_input_file(path.as_ref()).map_err(|e| ConfigError::io(&origin, &e))?;
        let base = path.as_ref().parent().unwrap_or(Path::new(""));
        Config::parse_in(&text, &origin, base, tc_check)
    }

    /// Parses and validates a configuration text; `origin` names it in errors.
    pub fn from_str(text: &str, origin: &str) -> Result<Config, ConfigError> {
        Config::from_str_with(text, origin, None)
    }

    /// Like `from_str`, also checking every tc line with the tc front end.
    pub fn from_str_with(
        text: &str,
        origin: &str,
        tc_check: Option<TcCheck>,
    ) -> Result<Config, ConfigError> {
        Config::parse_in(text, origin, Path::new(""), tc_check)
    }

    /// Parses and validates, with trace and schedule paths relative to `base`.
    fn parse_in(
        text: &str,
        origin: &str,
        base: &Path,
        tc_check: Option<TcCheck>,
    ) -> Result<Config, ConfigError> {
        let index = SpanIndex::build(text);
        let mut config: Config =
            toml::from_str(text).map_err(|e| ConfigError::from_toml(&e, origin, text, &index))?;
        config.resolve_paths(base);
        config
            .validate_with(tc_check)
            .map_err(|e| e.locate(origin, text, &index))?;
        for warning in config.warnings() {
            tracing::warn!("{}", warning.locate(origin, text, &index));
        }
        Ok(config)
    }

    /// Values taken as tc reads them that are probably typos (a bare or
    /// tiny link rate, a rate in bytes, a delay without a unit;
    /// `crate::tc::hint`), each naming its field.
    pub fn warnings(&self) -> Vec<ConfigError> {
        let tables = [("link".to_string(), Some(&self.link))]
            .into_iter()
            .chain(Dir::ALL.map(|d| (format!("link.{}", d.name()), self.link.direction(d))));
        let mut out = Vec::new();
        for (prefix, table) in tables {
            let Some(t) = table else { continue };
            let rate = t
                .rate
                .as_ref()
                .and_then(|r| crate::tc::hint::rate(r.text()));
            let delay = t
                .delay
                .as_ref()
                .and_then(|d| crate::tc::hint::time(d.text()));
            for (field, hint) in [("rate", rate), ("delay", delay)] {
                if let Some(hint) = hint {
                    out.push(ConfigError::field(format!("{prefix}.{field}"), None, hint));
                }
            }
        }
        if !self.ipv6_on_taps() {
            out.push(ConfigError::field(
                "tap.mtu",
                Some(self.tap.mtu.to_string()),
                format!(
                    "is below {IPV6_MIN_MTU}, the least MTU IPv6 allows (RFC 8200): the TAPs get their IPv4 addresses only, not {} and {}; for IPv6, set tap.mtu to {IPV6_MIN_MTU} or more",
                    self.left.ipv6, self.right.ipv6
                ),
            ));
        }
        // A shared qdisc that one side's tc lines override (both sides: an
        // error, see `validate`).
        if self.link.qdisc.is_some() {
            let covered: Vec<(Dir, String)> = Dir::ALL
                .into_iter()
                .filter_map(|d| Some((d, self.literal_tc_lines(d).first()?.path.clone())))
                .collect();
            if let [(dir, line)] = covered.as_slice() {
                out.push(ConfigError::field(
                    "link.qdisc",
                    None,
                    format!(
                        "applies to dev {} only: dev {} is built by its tc lines ({line}); to say so, move the qdisc into [link.{}]",
                        dir.reverse().dev(),
                        dir.dev(),
                        dir.reverse().name()
                    ),
                ));
            }
        }
        out
    }

    /// Whether the TAPs get their IPv6 addresses: IPv6 needs a link MTU of
    /// at least 1280 (RFC 8200 section 5), and the kernel refuses an IPv6
    /// address on a device with less; a smaller `tap.mtu` runs IPv4 only,
    /// with a warning (`warnings`).
    pub fn ipv6_on_taps(&self) -> bool {
        self.tap.mtu >= IPV6_MIN_MTU
    }

    /// The configuration compiled into the binary (configs/default.toml).
    pub fn embedded_default() -> Config {
        Config::from_str(DEFAULT_TOML, "<embedded configs/default.toml>").unwrap_or_default()
    }

    /// Checks ranges and cross-field rules (done by every constructor; call
    /// it again after editing fields by hand).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_with(None)
    }

    /// `validate`, also passing every tc line to `tc_check`.
    pub fn validate_with(&self, tc_check: Option<TcCheck>) -> Result<(), ConfigError> {
        validate::validate(self, tc_check)
    }

    /// The endpoint on the sending side of `dir`.
    pub fn endpoint(&self, dir: Dir) -> &Endpoint {
        match dir {
            Dir::LeftToRight => &self.left,
            Dir::RightToLeft => &self.right,
        }
    }

    /// The control socket path.
    pub fn control_socket(&self) -> PathBuf {
        match &self.daemon.control_socket {
            Some(path) => PathBuf::from(path),
            None => PathBuf::from(format!("/run/bloatbox/{}.sock", self.left.namespace)),
        }
    }

    /// A link value for `dir`: the direction table, else `[link]`, else the
    /// built-in default; with the path it is (or would be) written at.
    pub(crate) fn pick<T: Clone>(
        &self,
        dir: Dir,
        key: &str,
        get: impl Fn(&LinkSettings) -> &Option<T>,
    ) -> Option<Sourced<T>> {
        if let Some(v) = self.link.direction(dir).and_then(|t| get(t).clone()) {
            return Some(Sourced {
                value: v,
                path: format!("link.{}.{key}", dir.name()),
            });
        }
        let value = get(&self.link)
            .clone()
            .or_else(|| get(&LinkSettings::builtin()).clone())?;
        Some(Sourced {
            value,
            path: format!("link.{key}"),
        })
    }

    /// The link parameters of `dir` before ethtool lines.
    fn base_link_params(&self, dir: Dir) -> LinkParams {
        let d = LinkParams::default();
        let num = |key: &str, get: fn(&LinkSettings) -> &Option<u32>, fallback: u32| {
            self.pick(dir, key, get).map_or(fallback, |s| s.value)
        };
        let flag = |key: &str, get: fn(&LinkSettings) -> &Option<bool>, fallback: bool| {
            self.pick(dir, key, get).map_or(fallback, |s| s.value)
        };
        LinkParams {
            rate_bytes_ps: self
                .pick(dir, "rate", |l| &l.rate)
                .map_or(d.rate_bytes_ps, |s| s.value.value()),
            overhead: num("overhead", |l| &l.overhead, d.overhead),
            delay_ns: self
                .pick(dir, "delay", |l| &l.delay)
                .map_or(d.delay_ns, |s| s.value.value()),
            tx_ring: num("tx_ring", |l| &l.tx_ring, d.tx_ring),
            tx_stop_threshold: num(
                "tx_stop_threshold",
                |l| &l.tx_stop_threshold,
                d.tx_stop_threshold,
            ),
            tx_post_ns: self
                .pick(dir, "tx_post_ns", |l| &l.tx_post_ns)
                .map_or(d.tx_post_ns, |s| u64::from(s.value)),
            bql: flag("bql", |l| &l.bql, d.bql),
            tx_usecs: num("tx_usecs", |l| &l.tx_usecs, d.tx_usecs),
            tx_frames: num("tx_frames", |l| &l.tx_frames, d.tx_frames),
            rx_usecs: num("rx_usecs", |l| &l.rx_usecs, d.rx_usecs),
            rx_frames: num("rx_frames", |l| &l.rx_frames, d.rx_frames),
            // Set only by ethtool lines (`cqe-mode-rx on`, `adaptive-rx
            // on`), applied after.
            rx_cqe: d.rx_cqe,
            tx_cqe: d.tx_cqe,
            rx_adaptive: d.rx_adaptive,
            tx_adaptive: d.tx_adaptive,
            bulk_dequeue: flag("bulk_dequeue", |l| &l.bulk_dequeue, d.bulk_dequeue),
            mtu: self.tap.mtu,
            txqueuelen: num("txqueuelen", |l| &l.txqueuelen, d.txqueuelen),
            // Validated to at most mq::MAX_QUEUES.
            tx_queues: u16::try_from(self.tx_queues(dir)).unwrap_or(u16::MAX),
            features: d.features,
        }
    }

    /// Lines of one list (`tc` or `ethtool`) that belong to `dir`, with
    /// their paths, in the order they apply: `[link]` first, then the
    /// direction table. `names` tells which direction a line names; lines it
    /// cannot tell are attributed to every direction so validation reports them.
    fn directed_lines(
        &self,
        dir: Dir,
        list: &str,
        get: fn(&LinkSettings) -> &[String],
        names: fn(&str) -> Option<Dir>,
    ) -> Vec<Sourced<&str>> {
        let tables = [
            ("link".to_string(), Some(&self.link)),
            (format!("link.{}", dir.name()), self.link.direction(dir)),
        ];
        let mut lines = Vec::new();
        for (prefix, table) in tables {
            let Some(table) = table else { continue };
            for (i, line) in get(table).iter().enumerate() {
                if names(line).is_none_or(|d| d == dir) {
                    lines.push(Sourced {
                        value: line.as_str(),
                        path: format!("{prefix}.{list}[{i}]"),
                    });
                }
            }
        }
        lines
    }

    /// The ethtool lines of `dir`'s device.
    pub(crate) fn ethtool_lines(&self, dir: Dir) -> Vec<Sourced<&str>> {
        self.directed_lines(
            dir,
            "ethtool",
            |t| &t.ethtool,
            |l| parse_ethtool(l).ok().map(|c| c.direction),
        )
    }

    /// `base_link_params` with the ethtool lines applied.
    pub(crate) fn try_link_params(&self, dir: Dir) -> Result<LinkParams, ConfigError> {
        let mut params = self.base_link_params(dir);
        for line in self.ethtool_lines(dir) {
            let located = |message: String| {
                ConfigError::field(&line.path, Some(error::toml_text(line.value)), message)
            };
            let cmd = parse_ethtool(line.value).map_err(|e| located(e.message))?;
            if let EthtoolSetting::Show(_) = cmd.setting {
                return Err(located(
                    "a query (-k, -c, -g) changes nothing; expected -C, -G or -K here; fix: run it as `bloatbox ethtool -k left` against the running link".into(),
                ));
            }
            cmd.apply(&mut params).map_err(|e| located(e.message))?;
        }
        Ok(params)
    }

    /// The emulated device of `dir` that its tc lines build on: txqueuelen,
    /// MTU and TX queues.
    pub fn dev_spec(&self, dir: Dir) -> DevSpec {
        self.link_params(dir)
            .dev_spec(dir, crate::tc::syntax::kinds())
    }

    /// Both devices (by `Dir::index()`), sharing one automatic handle
    /// counter as the devices of one machine do (`qdisc::tree::AutoHandles`).
    pub fn dev_specs(&self) -> [DevSpec; 2] {
        let autohandles = crate::qdisc::tree::AutoHandles::default();
        Dir::ALL.map(|dir| DevSpec {
            autohandles: autohandles.clone(),
            ..self.dev_spec(dir)
        })
    }

    /// TX queues of `dir`'s device (more than 1: mq with a qdisc per queue).
    pub fn tx_queues(&self, dir: Dir) -> u32 {
        self.pick(dir, "tx_queues", |l| &l.tx_queues)
            .map_or(1, |s| s.value)
    }

    /// The effective link parameters of `dir` (core units), ethtool lines
    /// applied. On a validated configuration this is exact; a line that
    /// fails is skipped.
    pub fn link_params(&self, dir: Dir) -> LinkParams {
        self.try_link_params(dir)
            .unwrap_or_else(|_| self.base_link_params(dir))
    }

    /// The literal tc lines of `dir`'s device.
    pub(crate) fn literal_tc_lines(&self, dir: Dir) -> Vec<Sourced<&str>> {
        self.directed_lines(dir, "tc", |t| &t.tc, |l| qdisc::literal_direction(l).ok())
    }

    /// The steps that build `dir`'s qdisc, with the path each comes from:
    /// the literal tc lines, or the requests the structured form makes.
    pub(crate) fn try_tc_steps(&self, dir: Dir) -> Result<Vec<Sourced<Step>>, ConfigError> {
        let literal = self.literal_tc_lines(dir);
        if !literal.is_empty() {
            return Ok(literal
                .into_iter()
                .map(|l| Sourced {
                    value: Step::Line(l.value.to_string()),
                    path: l.path,
                })
                .collect());
        }
        let tx_queues = self
            .pick(dir, "tx_queues", |l| &l.tx_queues)
            .map_or(1, |s| s.value);
        let Some(spec) = self.pick(dir, "qdisc", |l| &l.qdisc) else {
            return Ok(Vec::new());
        };
        let steps = spec.value.steps(dir, tx_queues).map_err(
            |QdiscError {
                 field,
                 message: msg,
             }| {
                let path = if field.is_empty() {
                    spec.path.clone()
                } else {
                    format!("{}.{field}", spec.path)
                };
                ConfigError::field(path, None, msg)
            },
        )?;
        Ok(steps
            .into_iter()
            .map(|value| Sourced {
                value,
                path: spec.path.clone(),
            })
            .collect())
    }

    /// The steps that build `dir`'s qdisc (device `left` for left→right,
    /// `right` for right→left), for the tc front end to run; a
    /// configuration that does not validate gets the device default.
    pub fn tc_steps(&self, dir: Dir) -> Vec<Step> {
        match self.try_tc_steps(dir) {
            Ok(steps) => steps.into_iter().map(|s| s.value).collect(),
            Err(_) => QdiscSpec::pfifo_fast().steps(dir, 1).unwrap_or_default(),
        }
    }

    /// The tc lines `tc_steps` run or say (for reports).
    pub fn tc_lines(&self, dir: Dir) -> Vec<String> {
        self.tc_steps(dir)
            .iter()
            .map(|s| s.line().to_string())
            .collect()
    }
}
