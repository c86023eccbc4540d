//! Validation after parsing: value ranges, names, addresses, coalescing
//! legality, the shape of tc and ethtool lines and their directions, and
//! conflicts between the two qdisc forms. Each error names the field path,
//! the value, the allowed range and a fix; the loader adds line and column.

use super::error::{toml_text, ConfigError};
use super::qdisc::{literal_direction, QdiscError};
use super::{Config, Endpoint, LinkSettings, TcCheck};
use crate::dir::Dir;
use crate::link::MAX_DELAY_NS;
use crate::tc::Step;
use crate::units::print_rate;
use std::ops::RangeInclusive;

/// Coalescing limits shared with the ethtool parser.
pub const MAX_USECS: u32 = 1_000_000;
/// Most frames per coalesced interrupt (`rx-frames`, `tx-frames`).
pub const MAX_FRAMES: u32 = 65_535;
/// TX ring depths allowed, descriptors (ethtool -G `tx`).
pub const TX_RING: RangeInclusive<u32> = 1..=4096;
/// Fastest link rate allowed, bytes/s (100 Gbit/s).
pub const MAX_RATE_BYTES_PS: u64 = 100_000_000_000 / 8;
const MTU: RangeInclusive<u32> = 68..=9000;
const TXQUEUELEN: RangeInclusive<u32> = 1..=100_000;
const TX_QUEUES: RangeInclusive<u32> = 1..=crate::qdisc::mq::MAX_QUEUES as u32;
const OVERHEAD: RangeInclusive<u32> = 0..=256;
const SNAPSHOT_HZ: RangeInclusive<u32> = 1..=1000;
const SNAPSHOT_FLOWS: RangeInclusive<u32> = 0..=65_536;
const SPIN_US: RangeInclusive<u32> = 0..=10_000;
const TIMER_SLACK_US: RangeInclusive<u32> = 0..=10_000;
const SPIN_BUDGET_PCT: RangeInclusive<u32> = 0..=100;
const BUSY_POLL_US: RangeInclusive<u32> = 0..=1_000_000;
const PM_QOS_US: RangeInclusive<u32> = 0..=1_000_000;
/// The longest per-frame post cost, ns (1 ms: a driver slower than that
/// is a stall, not a cost).
pub const MAX_POST_NS: u32 = 1_000_000;
const POOL_SIZE: RangeInclusive<u32> = 64..=1_048_576;
/// Linux IFNAMSIZ − 1.
const MAX_IFNAME: usize = 15;
const MAX_NETNS_NAME: usize = 64;
/// `sun_path` minus the terminating NUL.
const MAX_SOCKET_PATH: usize = 107;

/// Interrupt coalescing the NIC could not live with, in the names of the
/// caller (ethtool's `rx-usecs` or the configuration's keys).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CoalescingError {
    /// Both values 0: the NIC would never interrupt.
    #[error("{usecs_name} and {frames_name} are both 0: the NIC would never interrupt; expected {frames_name} >= 1 or {usecs_name} >= 1; fix: set {frames_name} 1 (no coalescing) or {usecs_name} to a wait in µs")]
    BothZero {
        /// The name of the wait in µs.
        usecs_name: String,
        /// The name of the frame count.
        frames_name: String,
    },
    /// More than one frame and no wait: fewer frames pending never fire.
    #[error("{frames_name} = {frames} with {usecs_name} = 0: with fewer than {frames} frames pending the interrupt would never fire (a lone ping, or BQL starting from a limit of 0, would stall for good); expected {usecs_name} >= 1 when {frames_name} > 1; fix: set {usecs_name} to the longest wait in µs, e.g. {usecs_name} 50")]
    NoWait {
        /// The name of the wait in µs.
        usecs_name: String,
        /// The name of the frame count.
        frames_name: String,
        /// The frame count given.
        frames: u32,
    },
}

/// Both coalescing values 0 would never interrupt.
pub fn check_coalescing(
    usecs_name: &str,
    frames_name: &str,
    usecs: u32,
    frames: u32,
) -> Result<(), CoalescingError> {
    let (usecs_name, frames_name) = (usecs_name.to_string(), frames_name.to_string());
    if usecs == 0 && frames == 0 {
        Err(CoalescingError::BothZero {
            usecs_name,
            frames_name,
        })
    } else if usecs == 0 && frames > 1 {
        Err(CoalescingError::NoWait {
            usecs_name,
            frames_name,
            frames,
        })
    } else {
        Ok(())
    }
}

/// `check_coalescing` of both pairs of `p`, in ethtool's names.
pub fn check_link_coalescing(p: &crate::link::LinkParams) -> Result<(), CoalescingError> {
    check_coalescing("rx-usecs", "rx-frames", p.rx_usecs, p.rx_frames)?;
    check_coalescing("tx-usecs", "tx-frames", p.tx_usecs, p.tx_frames)
}

pub(super) fn validate(config: &Config, tc_check: Option<TcCheck>) -> Result<(), ConfigError> {
    endpoints(config)?;
    in_range("tap.mtu", config.tap.mtu, MTU, "bytes")?;
    in_range(
        "tap.txqueuelen",
        config.tap.txqueuelen,
        TXQUEUELEN,
        "packets",
    )?;
    gso_min_rate(config)?;
    for (key, on, what) in [
        (
            "tap.gro",
            config.tap.gro,
            "GRO at the receiving TAP writes TCP super-frames",
        ),
        (
            "tap.forward_gro",
            config.tap.forward_gro,
            "forward_gro lets the TAPs' TCP super-frames reach shaping qdiscs",
        ),
    ] {
        if on && !config.tap.offload {
            let name = key.trim_start_matches("tap.");
            return Err(ConfigError::field(
                key,
                Some("true".into()),
                format!("{what}, which needs the TAPs opened with offload, and tap.offload is false; fix: set offload = true, or remove {name}"),
            ));
        }
    }
    link_table("link", &config.link)?;
    let devs = config.dev_specs();
    for dir in Dir::ALL {
        if let Some(table) = config.link.direction(dir) {
            let prefix = format!("link.{}", dir.name());
            if table.left_to_right.is_some() || table.right_to_left.is_some() {
                return Err(ConfigError::field(
                    prefix,
                    None,
                    "direction tables do not nest; fix: put left_to_right and right_to_left directly under [link]",
                ));
            }
            link_table(&prefix, table)?;
            lines_name_direction(&prefix, table, dir)?;
        }
        coalescing(config, dir)?;
        stop_threshold(config, dir)?;
        config.try_link_shape(dir)?;
        qdisc_forms(config, dir)?;
        let steps = config.try_tc_steps(dir)?;
        if let Some(check) = tc_check {
            let run: Vec<Step> = steps.iter().map(|s| s.value.clone()).collect();
            check(devs[dir.index()].clone(), &run).map_err(|(i, e)| {
                match i.and_then(|i| steps.get(i)) {
                    Some(step) => ConfigError::field(
                        step.path.clone(),
                        Some(toml_text(step.value.line())),
                        format!("tc rejects \"{}\": {e}", step.value.line()),
                    ),
                    // The device itself (no line applied yet).
                    None => ConfigError::field(format!("link.{}", dir.name()), None, e),
                }
            })?;
        }
    }
    unused_shared_qdisc(config)?;
    daemon(config)?;
    lesson_caption(config.lesson.caption.as_deref())
}

/// The longest `lesson.caption`, in characters: two lines of an 80-column
/// screen, where the lesson shows it.
pub const MAX_CAPTION_CHARS: usize = 160;

/// `lesson.caption`: one line of printable text, 1..=`MAX_CAPTION_CHARS`
/// characters.
fn lesson_caption(caption: Option<&str>) -> Result<(), ConfigError> {
    let Some(text) = caption else { return Ok(()) };
    let chars = text.chars().count();
    let problem = if text.trim().is_empty() {
        Some("is empty".to_string())
    } else if let Some(c) = text.chars().find(|c| c.is_control()) {
        Some(format!("holds the control character {c:?}"))
    } else if chars > MAX_CAPTION_CHARS {
        Some(format!("is {chars} characters long"))
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(ConfigError::field(
            "lesson.caption",
            // Escaped on one line (TOML would print a multi-line string).
            Some(format!("{text:?}")),
            format!(
                "the caption {problem}; expected one line of 1 to {MAX_CAPTION_CHARS} printable \
                 characters (the lesson shows it above the phase); fix: shorten it to one \
                 sentence, or remove the key to show the configuration's name"
            ),
        )),
    }
}

/// `tap.gso_min_rate`: a rate above 0 and at most the highest link rate.
fn gso_min_rate(config: &Config) -> Result<(), ConfigError> {
    let rate = &config.tap.gso_min_rate;
    if (1..=MAX_RATE_BYTES_PS).contains(&rate.value()) {
        return Ok(());
    }
    Err(ConfigError::field(
        "tap.gso_min_rate",
        Some(toml_text(rate.text())),
        "expected a rate above 0 and at most 100gbit (links this fast pass GSO super-frames whole); fix: write gso_min_rate = \"1gbit\" (\"100gbit\" lets only unlimited links pass them whole)",
    ))
}

fn in_range(
    path: &str,
    value: u32,
    range: RangeInclusive<u32>,
    unit: &str,
) -> Result<(), ConfigError> {
    if range.contains(&value) {
        return Ok(());
    }
    let key = path.rsplit('.').next().unwrap_or(path);
    let nearest = value.clamp(*range.start(), *range.end());
    Err(ConfigError::field(
        path,
        Some(value.to_string()),
        format!(
            "out of range; expected {}..={} {unit}; fix: write {key} = {nearest}",
            range.start(),
            range.end()
        ),
    ))
}

fn endpoints(config: &Config) -> Result<(), ConfigError> {
    for (side, ep) in [("left", &config.left), ("right", &config.right)] {
        name(
            &format!("{side}.namespace"),
            &ep.namespace,
            MAX_NETNS_NAME,
            "bb-left",
        )?;
        name(&format!("{side}.tap"), &ep.tap, MAX_IFNAME, "bbl0")?;
        family(&format!("{side}.ipv4"), ep, false)?;
        family(&format!("{side}.ipv6"), ep, true)?;
    }
    let (l, r) = (&config.left, &config.right);
    if l.namespace == r.namespace {
        return Err(ConfigError::field(
            "right.namespace",
            Some(toml_text(r.namespace.as_str())),
            "both sides use the same namespace; expected two different names; fix: write e.g. namespace = \"bb-right\"",
        ));
    }
    if l.tap == r.tap {
        return Err(ConfigError::field(
            "right.tap",
            Some(toml_text(r.tap.as_str())),
            "both sides use the same TAP name; expected two different names; fix: write e.g. tap = \"bbr0\"",
        ));
    }
    for (key, la, ra) in [("ipv4", l.ipv4, r.ipv4), ("ipv6", l.ipv6, r.ipv6)] {
        if la.prefix != ra.prefix || la.network() != ra.network() {
            return Err(ConfigError::field(
                format!("right.{key}"),
                Some(toml_text(ra.to_string())),
                format!("not in the same subnet as left.{key} = \"{la}\"; expected both sides in one subnet with the same prefix length; fix: use addresses such as \"10.77.0.1/24\" and \"10.77.0.2/24\""),
            ));
        }
        if la.addr == ra.addr {
            return Err(ConfigError::field(
                format!("right.{key}"),
                Some(toml_text(ra.to_string())),
                format!("the same address as left.{key}; expected two different hosts; fix: change the host part"),
            ));
        }
    }
    Ok(())
}

/// Interface and namespace names: 1..=max of letters, digits, `-`, `_`, `.`.
fn name(path: &str, value: &str, max: usize, example: &str) -> Result<(), ConfigError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let problem = if value.is_empty() {
        Some("empty name".to_string())
    } else if value.len() > max {
        Some(format!("name too long ({} characters)", value.len()))
    } else if !value.chars().all(allowed) || value == "." || value == ".." {
        Some("invalid characters".to_string())
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(p) => {
            let key = path.rsplit('.').next().unwrap_or(path);
            Err(ConfigError::field(
                path,
                Some(toml_text(value)),
                format!("{p}; expected 1..={max} characters of letters, digits, '-', '_' or '.'; fix: write e.g. {key} = \"{example}\""),
            ))
        }
    }
}

fn family(path: &str, ep: &Endpoint, v6: bool) -> Result<(), ConfigError> {
    let a = if v6 { ep.ipv6 } else { ep.ipv4 };
    let (want, example) = if v6 {
        ("IPv6", "fd00:77::1/64")
    } else {
        ("IPv4", "10.77.0.1/24")
    };
    let wrong_family = a.addr.is_ipv6() != v6;
    let unusable = a.addr.is_unspecified() || a.addr.is_loopback() || a.addr.is_multicast();
    let host_bits_edge = match a.addr {
        std::net::IpAddr::V4(v4) if a.prefix <= 30 => {
            let host_mask = u32::MAX >> a.prefix;
            let host = u32::from(v4) & host_mask;
            host == 0 || host == host_mask
        }
        _ => false,
    };
    let problem = if wrong_family {
        format!("not an {want} address")
    } else if unusable {
        "unspecified, loopback or multicast address".to_string()
    } else if host_bits_edge {
        "the network or broadcast address of its subnet".to_string()
    } else {
        return Ok(());
    };
    Err(ConfigError::field(
        path,
        Some(toml_text(a.to_string())),
        format!("{problem}; expected a unicast {want} host address with prefix; fix: write e.g. \"{example}\""),
    ))
}

/// Ranges of the values one link table sets.
fn link_table(prefix: &str, t: &LinkSettings) -> Result<(), ConfigError> {
    let p = |key: &str| format!("{prefix}.{key}");
    if let Some(rate) = &t.rate {
        if rate.value() > MAX_RATE_BYTES_PS {
            return Err(ConfigError::field(
                p("rate"),
                Some(toml_text(rate.text())),
                format!(
                    "rate {} is above the maximum; expected at most 100gbit (or \"unlimited\"); fix: write rate = \"100gbit\"",
                    print_rate(rate.value())
                ),
            ));
        }
    }
    if let Some(delay) = &t.delay {
        if delay.value() > MAX_DELAY_NS {
            return Err(ConfigError::field(
                p("delay"),
                Some(toml_text(delay.text())),
                "delay too long; expected at most 60s; fix: write delay = \"60s\" or less",
            ));
        }
    }
    let checks: [(&str, Option<u32>, RangeInclusive<u32>, &str); 10] = [
        ("overhead", t.overhead, OVERHEAD, "bytes"),
        ("tx_ring", t.tx_ring, TX_RING, "descriptors"),
        (
            "tx_stop_threshold",
            t.tx_stop_threshold,
            0..=*TX_RING.end(),
            "descriptors",
        ),
        ("tx_post_ns", t.tx_post_ns, 0..=MAX_POST_NS, "ns"),
        ("tx_usecs", t.tx_usecs, 0..=MAX_USECS, "µs"),
        ("rx_usecs", t.rx_usecs, 0..=MAX_USECS, "µs"),
        ("tx_frames", t.tx_frames, 0..=MAX_FRAMES, "frames"),
        ("rx_frames", t.rx_frames, 0..=MAX_FRAMES, "frames"),
        ("txqueuelen", t.txqueuelen, TXQUEUELEN, "packets"),
        ("tx_queues", t.tx_queues, TX_QUEUES, "queues"),
    ];
    for (key, value, range, unit) in checks {
        if let Some(v) = value {
            in_range(&p(key), v, range, unit)?;
        }
    }
    if let Some(q) = &t.qdisc {
        q.check().map_err(|QdiscError { field, message: m }| {
            let path = if field.is_empty() {
                p("qdisc")
            } else {
                format!("{prefix}.qdisc.{field}")
            };
            ConfigError::field(path, None, m)
        })?;
    }
    for (i, line) in t.tc.iter().enumerate() {
        literal_direction(line).map_err(|m| {
            ConfigError::field(
                format!("{prefix}.tc[{i}]"),
                Some(toml_text(line.as_str())),
                m.to_string(),
            )
        })?;
    }
    Ok(())
}

/// tc and ethtool lines inside a direction table must name its device.
fn lines_name_direction(prefix: &str, t: &LinkSettings, dir: Dir) -> Result<(), ConfigError> {
    let tc = t.tc.iter().map(|l| ("tc", l, literal_direction(l).ok()));
    let eth = t.ethtool.iter().map(|l| {
        (
            "ethtool",
            l,
            super::parse_ethtool(l).ok().map(|c| c.direction),
        )
    });
    let mut index = std::collections::HashMap::new();
    for (list, line, named) in tc.chain(eth) {
        let i = index.entry(list).or_insert(0usize);
        if let Some(named) = named {
            if named != dir {
                return Err(ConfigError::field(
                    format!("{prefix}.{list}[{i}]"),
                    Some(toml_text(line.as_str())),
                    format!(
                        "names dev {} but sits in the {} table; expected dev {}; fix: write dev {} or move the line to [link]",
                        named.dev(),
                        dir.arrow(),
                        dir.dev(),
                        dir.dev()
                    ),
                ));
            }
        }
        *i += 1;
    }
    Ok(())
}

/// The resolved coalescing pairs of `dir` must be able to interrupt.
fn coalescing(config: &Config, dir: Dir) -> Result<(), ConfigError> {
    for side in ["rx", "tx"] {
        let usecs_key = format!("{side}_usecs");
        let frames_key = format!("{side}_frames");
        let usecs = config.pick(dir, &usecs_key, |l| {
            if side == "rx" {
                &l.rx_usecs
            } else {
                &l.tx_usecs
            }
        });
        let frames = config.pick(dir, &frames_key, |l| {
            if side == "rx" {
                &l.rx_frames
            } else {
                &l.tx_frames
            }
        });
        if let (Some(u), Some(f)) = (usecs, frames) {
            check_coalescing(&usecs_key, &frames_key, u.value, f.value).map_err(|m| {
                ConfigError::field(
                    f.path,
                    Some(f.value.to_string()),
                    format!("for {} (with {} = {}): {m}", dir.arrow(), u.path, u.value),
                )
            })?;
        }
    }
    Ok(())
}

/// `tx_stop_threshold` of `dir` fits its ring (after ethtool lines): a
/// queue that stops with more descriptors free than the ring has would
/// never run.
fn stop_threshold(config: &Config, dir: Dir) -> Result<(), ConfigError> {
    let p = config.try_link_params(dir)?;
    if p.tx_stop_threshold <= p.tx_ring {
        return Ok(());
    }
    let at = config.pick(dir, "tx_stop_threshold", |l| &l.tx_stop_threshold);
    let path = at.map_or_else(|| "link.tx_stop_threshold".to_string(), |s| s.path);
    Err(ConfigError::field(
        path,
        Some(p.tx_stop_threshold.to_string()),
        format!(
            "for {}: the TX queue would stop with {} descriptors free but the ring has {}; expected at most tx_ring ({}); fix: write tx_stop_threshold = {} or less (19 is virtio_net's 2 + MAX_SKB_FRAGS), or a larger tx_ring",
            dir.arrow(),
            p.tx_stop_threshold,
            p.tx_ring,
            p.tx_ring,
            p.tx_ring
        ),
    ))
}

/// A direction's own `qdisc` and literal tc lines for it exclude each other.
fn qdisc_forms(config: &Config, dir: Dir) -> Result<(), ConfigError> {
    let own_qdisc = config
        .link
        .direction(dir)
        .is_some_and(|t| t.qdisc.is_some());
    if let (true, Some(line)) = (own_qdisc, config.literal_tc_lines(dir).first()) {
        return Err(ConfigError::field(
            format!("link.{}.qdisc", dir.name()),
            None,
            format!(
                "{} has both a qdisc and tc lines ({}); expected one form; fix: remove the qdisc or the tc lines for dev {}",
                dir.arrow(),
                line.path,
                dir.dev()
            ),
        ));
    }
    Ok(())
}

/// A shared qdisc that tc lines override in both directions would be ignored.
fn unused_shared_qdisc(config: &Config) -> Result<(), ConfigError> {
    let covered = Dir::ALL
        .iter()
        .all(|&d| !config.literal_tc_lines(d).is_empty());
    if config.link.qdisc.is_some() && covered {
        return Err(ConfigError::field(
            "link.qdisc",
            None,
            "unused: tc lines configure both directions; expected either qdisc or tc lines; fix: remove qdisc",
        ));
    }
    Ok(())
}

fn daemon(config: &Config) -> Result<(), ConfigError> {
    let d = &config.daemon;
    in_range("daemon.snapshot_hz", d.snapshot_hz, SNAPSHOT_HZ, "Hz")?;
    in_range(
        "daemon.snapshot_flows",
        d.snapshot_flows,
        SNAPSHOT_FLOWS,
        "flows",
    )?;
    in_range("daemon.spin_us", d.spin_us, SPIN_US, "µs")?;
    in_range(
        "daemon.spin_budget_pct",
        d.spin_budget_pct,
        SPIN_BUDGET_PCT,
        "%",
    )?;
    in_range(
        "daemon.timer_slack_us",
        d.timer_slack_us,
        TIMER_SLACK_US,
        "µs",
    )?;
    if d.spin_us > 0 && d.timer_slack_us > 0 {
        return Err(ConfigError::field(
            "daemon.timer_slack_us",
            Some(d.timer_slack_us.to_string()),
            format!(
                "cannot be set with daemon.spin_us = {}: spin_us wakes up early to meet each \
                 deadline on time, timer_slack_us late to serve several at once; fix: set one \
                 of them to 0",
                d.spin_us
            ),
        ));
    }
    in_range("daemon.busy_poll_us", d.busy_poll_us, BUSY_POLL_US, "µs")?;
    if let Some(us) = d.pm_qos_us {
        in_range("daemon.pm_qos_us", us, PM_QOS_US, "µs")?;
    }
    in_range("daemon.pool_size", d.pool_size, POOL_SIZE, "frames")?;
    cpus(&d.cpus, allowed_cpus().as_deref())?;
    if let Some(path) = &d.control_socket {
        if !path.starts_with('/') || path.len() > MAX_SOCKET_PATH || path.ends_with('/') {
            return Err(ConfigError::field(
                "daemon.control_socket",
                Some(toml_text(path.as_str())),
                format!("expected an absolute file path of at most {MAX_SOCKET_PATH} bytes; fix: write e.g. control_socket = \"/run/bloatbox/bb-left.sock\" or remove the key"),
            ));
        }
    }
    Ok(())
}

/// The CPUs this process may run on (its affinity, as the kernel lists it
/// in /proc/self/status `Cpus_allowed_list`: `0-3,6`), or None if that
/// cannot be read.
pub fn allowed_cpus() -> Option<Vec<u32>> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    cpu_list(list.trim())
}

/// A kernel CPU list (`0-3,6`, as `bitmap_parselist` reads it).
fn cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.split(',') {
        match part.split_once('-') {
            Some((lo, hi)) => cpus.extend(lo.parse::<u32>().ok()?..=hi.parse::<u32>().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

/// `daemon.cpus`: one CPU (both threads) or two (left→right, right→left),
/// each one this process may run on (`allowed`, when known).
fn cpus(cpus: &[u32], allowed: Option<&[u32]>) -> Result<(), ConfigError> {
    let shown = || Some(format!("{cpus:?}"));
    let list = |cpus: &[u32]| {
        cpus.iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if cpus.len() > 2 {
        return Err(ConfigError::field(
            "daemon.cpus",
            shown(),
            "expected one CPU for both datapath threads or two (left→right, right→left); \
             fix: write e.g. cpus = [0, 1]",
        ));
    }
    let Some(allowed) = allowed else {
        return Ok(());
    };
    if let Some(cpu) = cpus.iter().find(|c| !allowed.contains(c)) {
        return Err(ConfigError::field(
            "daemon.cpus",
            shown(),
            format!(
                "CPU {cpu} is not one this process may run on (allowed: {}); fix: name \
                 allowed CPUs, or remove the key to let the scheduler place the threads",
                list(allowed)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_read_as_the_kernel_writes_them() {
        assert_eq!(cpu_list("0-3,6"), Some(vec![0, 1, 2, 3, 6]));
        assert_eq!(cpu_list("1"), Some(vec![1]));
        assert_eq!(cpu_list("x"), None);
    }

    #[test]
    fn datapath_cpus_are_one_or_two_allowed_cpus() {
        let allowed: &[u32] = &[0, 1];
        assert!(cpus(&[], Some(allowed)).is_ok());
        assert!(cpus(&[1], Some(allowed)).is_ok());
        assert!(cpus(&[0, 1], Some(allowed)).is_ok());
        assert!(cpus(&[7], None).is_ok(), "unknown: checked when pinned");
        let e = cpus(&[0, 5], Some(allowed)).unwrap_err().to_string();
        assert!(e.contains("daemon.cpus") && e.contains("[0, 5]"), "{e}");
        assert!(e.contains("CPU 5") && e.contains("allowed: 0, 1"), "{e}");
        let e = cpus(&[0, 1, 0], Some(allowed)).unwrap_err().to_string();
        assert!(
            e.contains("one CPU for both datapath threads or two"),
            "{e}"
        );
    }

    #[test]
    fn ranges_suggest_the_nearest_allowed_value() {
        let e = in_range("link.tx_ring", 5000, TX_RING, "descriptors").unwrap_err();
        assert_eq!(
            e.message,
            "out of range; expected 1..=4096 descriptors; fix: write tx_ring = 4096"
        );
        assert!(in_range("link.tx_ring", 0, TX_RING, "descriptors")
            .unwrap_err()
            .message
            .ends_with("tx_ring = 1"));
        assert!(in_range("x", 4096, TX_RING, "").is_ok());
    }

    #[test]
    fn names_are_checked() {
        assert!(name("left.tap", "bbl0", MAX_IFNAME, "bbl0").is_ok());
        assert!(name("left.tap", "a-very-long-tap-name", MAX_IFNAME, "bbl0")
            .unwrap_err()
            .message
            .starts_with("name too long (20 characters)"));
        assert!(name("left.tap", "", MAX_IFNAME, "bbl0").is_err());
        assert!(name("left.tap", "a/b", MAX_IFNAME, "bbl0").is_err());
        assert!(name("left.tap", "..", MAX_IFNAME, "bbl0").is_err());
        assert!(name("left.tap", "tap 0", MAX_IFNAME, "bbl0").is_err());
    }

    #[test]
    fn coalescing_rule() {
        assert!(check_coalescing("rx-usecs", "rx-frames", 0, 0).is_err());
        assert!(check_coalescing("rx-usecs", "rx-frames", 0, 1).is_ok());
        assert!(check_coalescing("rx-usecs", "rx-frames", 20, 0).is_ok());
        assert!(check_coalescing("rx-usecs", "rx-frames", 50, 32).is_ok());
        let stall = check_coalescing("tx-usecs", "tx-frames", 0, 8).unwrap_err();
        assert_eq!(
            stall,
            CoalescingError::NoWait {
                usecs_name: "tx-usecs".into(),
                frames_name: "tx-frames".into(),
                frames: 8
            }
        );
        let stall = stall.to_string();
        assert!(stall.contains("tx-frames = 8 with tx-usecs = 0"), "{stall}");
        assert!(stall.contains("fix: set tx-usecs"), "{stall}");
    }

    #[test]
    fn gro_needs_offload() {
        let e = Config::from_str("[tap]\noffload = false\ngro = true\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tap.gro") && e.contains("fix: set offload = true"),
            "{e}"
        );
        let c = Config::from_str("[tap]\ngro = true\n", "t.toml").unwrap();
        assert!(c.tap.gro && c.tap.offload);
        assert!(!Config::default().tap.gro);
        let e = Config::from_str("[tap]\noffload = false\nforward_gro = true\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tap.forward_gro") && e.contains("or remove forward_gro"),
            "{e}"
        );
        let c = Config::from_str("[tap]\nforward_gro = true\n", "t.toml").unwrap();
        assert!(c.tap.forward_gro && !Config::default().tap.forward_gro);
    }

    #[test]
    fn a_pm_qos_request_is_optional_and_in_range() {
        assert_eq!(Config::default().daemon.pm_qos_us, None);
        let c = Config::from_str("[daemon]\npm_qos_us = 0\n", "t.toml").unwrap();
        assert_eq!(c.daemon.pm_qos_us, Some(0));
        let e = Config::from_str("[daemon]\npm_qos_us = 2000000\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("daemon.pm_qos_us") && e.contains("fix: write pm_qos_us = 1000000"),
            "{e}"
        );
    }

    #[test]
    fn timer_slack_is_in_range_and_not_with_spinning() {
        let c = Config::from_str("[daemon]\ntimer_slack_us = 20\n", "t.toml").unwrap();
        assert_eq!((c.daemon.timer_slack_us, c.daemon.spin_us), (20, 0));
        assert_eq!(Config::default().daemon.timer_slack_us, 0);
        let e = Config::from_str("[daemon]\ntimer_slack_us = 20000\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.toml:2"), "{e}");
        assert!(
            e.contains("daemon.timer_slack_us") && e.contains("fix: write timer_slack_us = 10000"),
            "{e}"
        );
        let e = Config::from_str("[daemon]\nspin_us = 50\ntimer_slack_us = 20\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("daemon.timer_slack_us")
                && e.contains("spin_us = 50")
                && e.contains("fix: set one of them to 0"),
            "{e}"
        );
    }

    #[test]
    fn gso_min_rate_is_a_positive_rate_with_its_location() {
        let text = "[tap]\noffload = true\ngso_min_rate = \"0\"\n";
        let e = Config::from_str(text, "t.toml").unwrap_err().to_string();
        assert!(e.contains("t.toml:3"), "{e}");
        assert!(e.contains("tap.gso_min_rate"), "{e}");
        assert!(e.contains("fix: write gso_min_rate = \"1gbit\""), "{e}");
        let e = Config::from_str("[tap]\ngso_min_rate = \"200gbit\"\n", "t.toml").unwrap_err();
        assert!(e.to_string().contains("at most 100gbit"), "{e}");
        let c = Config::from_str(
            "[tap]\noffload = false\ngso_min_rate = \"10gbit\"\n",
            "t.toml",
        )
        .unwrap();
        assert!(!c.tap.offload);
        assert_eq!(c.tap.gso_min_rate.value(), 10_000_000_000 / 8);
        assert!(Config::default().tap.offload);
        assert_eq!(
            Config::default().tap.gso_min_rate.value(),
            crate::link::offload::GsoPolicy::default().whole_min_rate_bytes_ps
        );
    }
}
