//! ethtool-style link settings and queries: `ethtool -C left rx-usecs 20
//! rx-frames 0` (coalescing), `ethtool -G left tx 512` (TX ring), `ethtool -K
//! left tso off gso off` (netdev features, `link::features`: with TSO and GSO
//! off the direction's qdisc sees per-MTU segments), and the queries `-k`,
//! `-c` and `-g`, answered in ethtool's own text (`show`). `left` is the
//! left→right egress device, `right` its mirror. Parsed into the emulated
//! device's `LinkParams`; used by the configuration and, at run time, by
//! the daemon.

pub mod show;

use super::error::ConfigError;
use super::validate::{check_link_coalescing, MAX_FRAMES, MAX_USECS, TX_RING};
use crate::dir::Dir;
use crate::link::features::{self, Group};
use crate::link::LinkParams;

/// One parsed ethtool line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EthtoolCommand {
    /// The direction whose egress device the line names.
    pub direction: Dir,
    /// What the line changes or shows.
    pub setting: EthtoolSetting,
}

/// What an ethtool line changes or shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EthtoolSetting {
    /// `-C`: the values given, others unchanged.
    Coalesce {
        /// `rx-usecs`: RX interrupt delay, µs (`struct ethtool_coalesce`
        /// `rx_coalesce_usecs`).
        rx_usecs: Option<u32>,
        /// `rx-frames`: frames per RX interrupt (`rx_max_coalesced_frames`).
        rx_frames: Option<u32>,
        /// `tx-usecs`: TX completion interrupt delay, µs (`tx_coalesce_usecs`).
        tx_usecs: Option<u32>,
        /// `tx-frames`: completions per TX interrupt
        /// (`tx_max_coalesced_frames`).
        tx_frames: Option<u32>,
        /// `cqe-mode-rx on|off`: the RX timer restarts at every completion
        /// (`ETHTOOL_A_COALESCE_USE_CQE_MODE_RX`).
        rx_cqe: Option<bool>,
        /// `cqe-mode-tx on|off`, the same for TX completions.
        tx_cqe: Option<bool>,
        /// `adaptive-rx on|off`: net_dim moderates RX interrupts
        /// (`ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX`).
        rx_adaptive: Option<bool>,
        /// `adaptive-tx on|off`, the same for TX completions.
        tx_adaptive: Option<bool>,
    },
    /// `-G tx N`.
    Ring {
        /// TX ring depth, descriptors.
        tx: u32,
    },
    /// `-L tx N`: the device's TX queues.
    Channels {
        /// TX queues (more than one: an mq root).
        tx: u16,
    },
    /// `-K feature on|off ...`: each named feature (a group name stands for
    /// all its features), by index into `features::FEATURES`, in order.
    Features(Vec<(usize, bool)>),
    /// `-k`, `-c` or `-g`: changes nothing.
    Show(Query),
}

/// What a query line shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    /// `-k`: the features.
    Features,
    /// `-c`: interrupt coalescing.
    Coalesce,
    /// `-g`: the rings.
    Ring,
    /// `-l`: the channels (TX queues).
    Channels,
}

const USAGE: &str = "fix: write e.g. \"ethtool -C left rx-usecs 20 rx-frames 0\", \"ethtool -G left tx 512\", \"ethtool -K left tso off gso off\" or \"ethtool -k left\"";
const COALESCE_KEYS: &str = "rx-usecs, rx-frames, tx-usecs, tx-frames, cqe-mode-rx on|off, cqe-mode-tx on|off, adaptive-rx on|off, adaptive-tx on|off";

/// Parses the key/value pairs of one ethtool option.
type SettingParser = fn(&[(&str, &str)]) -> Result<EthtoolSetting, ConfigError>;

fn err(message: String) -> ConfigError {
    ConfigError::field("", None, message).with_origin("ethtool")
}

/// Parses one ethtool line.
pub fn parse_ethtool(line: &str) -> Result<EthtoolCommand, ConfigError> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.first() != Some(&"ethtool") {
        return Err(err(format!(
            "an ethtool line starts with \"ethtool\"; {USAGE}"
        )));
    }
    let option = words.get(1).copied().unwrap_or("");
    let query = match option {
        "-k" | "--show-features" | "--show-offload" => Some(Query::Features),
        "-c" | "--show-coalesce" => Some(Query::Coalesce),
        "-g" | "--show-ring" => Some(Query::Ring),
        "-l" | "--show-channels" => Some(Query::Channels),
        _ => None,
    };
    let parse: Option<SettingParser> = match option {
        _ if query.is_some() => None,
        "-C" | "--coalesce" => Some(parse_coalesce),
        "-G" | "--set-ring" => Some(parse_ring),
        "-K" | "--features" | "--offload" => Some(parse_features),
        "-L" | "--set-channels" => Some(parse_channels),
        other => {
            return Err(err(format!(
                "option \"{other}\" is not supported; expected -C (coalescing), -G (ring), -K (features), -L (channels) or the queries -k, -c, -g, -l; {USAGE}"
            )))
        }
    };
    let dev = words.get(2).copied().unwrap_or("");
    let direction = Dir::from_dev(dev).ok_or_else(|| {
        err(format!(
            "device \"{dev}\" is unknown; expected left (left→right egress) or right (right→left egress); {USAGE}"
        ))
    })?;
    let rest = &words[3.min(words.len())..];
    let setting = match (parse, query, rest.first()) {
        (Some(parse), _, _) => parse(&key_values(rest)?)?,
        (None, Some(query), None) => EthtoolSetting::Show(query),
        (None, _, extra) => {
            return Err(err(format!(
                "unexpected parameter \"{}\": {option} takes only the device; fix: write \"ethtool {option} {dev}\"",
                extra.copied().unwrap_or_default()
            )))
        }
    };
    Ok(EthtoolCommand { direction, setting })
}

/// Parses `line` and applies it to `params` (the parameters of the device
/// the line names; see `parse_ethtool(line)?.direction`). On error `params`
/// is unchanged.
pub fn apply_ethtool(line: &str, params: &mut LinkParams) -> Result<(), ConfigError> {
    parse_ethtool(line)?.apply(params)
}

impl EthtoolCommand {
    /// Applies the setting; rejects a result with illegal coalescing
    /// (usecs and frames both 0) and leaves `params` unchanged then.
    pub fn apply(&self, params: &mut LinkParams) -> Result<(), ConfigError> {
        let mut next = *params;
        match &self.setting {
            EthtoolSetting::Coalesce {
                rx_usecs,
                rx_frames,
                tx_usecs,
                tx_frames,
                rx_cqe,
                tx_cqe,
                rx_adaptive,
                tx_adaptive,
            } => {
                next.rx_adaptive = rx_adaptive.unwrap_or(next.rx_adaptive);
                next.tx_adaptive = tx_adaptive.unwrap_or(next.tx_adaptive);
                next.rx_cqe = rx_cqe.unwrap_or(next.rx_cqe);
                next.tx_cqe = tx_cqe.unwrap_or(next.tx_cqe);
                next.rx_usecs = rx_usecs.unwrap_or(next.rx_usecs);
                next.rx_frames = rx_frames.unwrap_or(next.rx_frames);
                next.tx_usecs = tx_usecs.unwrap_or(next.tx_usecs);
                next.tx_frames = tx_frames.unwrap_or(next.tx_frames);
                check_link_coalescing(&next).map_err(|e| err(e.to_string()))?;
            }
            EthtoolSetting::Ring { tx } => next.tx_ring = *tx,
            EthtoolSetting::Channels { tx } => next.tx_queues = *tx,
            EthtoolSetting::Features(changes) => next.features = next.features.request(changes),
            EthtoolSetting::Show(_) => {}
        }
        *params = next;
        Ok(())
    }
}

/// The line as written (`ethtool -C left rx-usecs 20`), which
/// `parse_ethtool` reads back equal: each feature of a `-K` line by its
/// kernel name, a `-C` line without values as `adaptive-rx off`.
impl std::fmt::Display for EthtoolCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dev = self.direction.dev();
        match &self.setting {
            EthtoolSetting::Coalesce {
                rx_usecs,
                rx_frames,
                tx_usecs,
                tx_frames,
                rx_cqe,
                tx_cqe,
                rx_adaptive,
                tx_adaptive,
            } => {
                write!(f, "ethtool -C {dev}")?;
                let values = [
                    ("rx-usecs", rx_usecs),
                    ("rx-frames", rx_frames),
                    ("tx-usecs", tx_usecs),
                    ("tx-frames", tx_frames),
                ];
                for (key, value) in values {
                    if let Some(v) = value {
                        write!(f, " {key} {v}")?;
                    }
                }
                let switches = [
                    ("cqe-mode-rx", rx_cqe),
                    ("cqe-mode-tx", tx_cqe),
                    ("adaptive-rx", rx_adaptive),
                    ("adaptive-tx", tx_adaptive),
                ];
                for (key, value) in switches {
                    if let Some(on) = value {
                        write!(f, " {key} {}", if *on { "on" } else { "off" })?;
                    }
                }
                Ok(())
            }
            EthtoolSetting::Ring { tx } => write!(f, "ethtool -G {dev} tx {tx}"),
            EthtoolSetting::Channels { tx } => write!(f, "ethtool -L {dev} tx {tx}"),
            EthtoolSetting::Features(changes) => {
                write!(f, "ethtool -K {dev}")?;
                for &(i, on) in changes {
                    let state = if on { "on" } else { "off" };
                    write!(f, " {} {state}", features::FEATURES[i].name)?;
                }
                Ok(())
            }
            EthtoolSetting::Show(query) => {
                let option = match query {
                    Query::Features => "-k",
                    Query::Coalesce => "-c",
                    Query::Ring => "-g",
                    Query::Channels => "-l",
                };
                write!(f, "ethtool {option} {dev}")
            }
        }
    }
}

fn key_values<'a>(words: &[&'a str]) -> Result<Vec<(&'a str, &'a str)>, ConfigError> {
    if words.is_empty() {
        return Err(err(format!("nothing to set after the device; {USAGE}")));
    }
    words
        .chunks(2)
        .map(|pair| match *pair {
            [key, value] => Ok((key, value)),
            _ => Err(err(format!(
                "\"{}\" needs a value; {USAGE}",
                pair.first().copied().unwrap_or_default()
            ))),
        })
        .collect()
}

fn number(key: &str, value: &str, max: u32, unit: &str) -> Result<u32, ConfigError> {
    match value.parse::<u32>() {
        Ok(v) if v <= max => Ok(v),
        _ => Err(err(format!(
            "{key} \"{value}\": expected an integer 0..={max} ({unit}); fix: write e.g. {key} {}",
            if unit == "µs" { 20 } else { 32 }
        ))),
    }
}

fn parse_coalesce(pairs: &[(&str, &str)]) -> Result<EthtoolSetting, ConfigError> {
    let (mut rx_usecs, mut rx_frames, mut tx_usecs, mut tx_frames) = (None, None, None, None);
    let (mut rx_cqe, mut tx_cqe, mut rx_adaptive, mut tx_adaptive) = (None, None, None, None);
    let on_off = |key: &str, value: &str| match value {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(err(format!(
            "{key} \"{value}\": expected on or off; fix: write {key} on"
        ))),
    };
    for &(key, value) in pairs {
        match key {
            "rx-usecs" => rx_usecs = Some(number(key, value, MAX_USECS, "µs")?),
            "tx-usecs" => tx_usecs = Some(number(key, value, MAX_USECS, "µs")?),
            "rx-frames" => rx_frames = Some(number(key, value, MAX_FRAMES, "frames")?),
            "tx-frames" => tx_frames = Some(number(key, value, MAX_FRAMES, "frames")?),
            "cqe-mode-rx" => rx_cqe = Some(on_off(key, value)?),
            "cqe-mode-tx" => tx_cqe = Some(on_off(key, value)?),
            "adaptive-rx" => rx_adaptive = Some(on_off(key, value)?),
            "adaptive-tx" => tx_adaptive = Some(on_off(key, value)?),
            _ => {
                return Err(err(format!(
                    "coalescing parameter \"{key}\" is not supported; expected {COALESCE_KEYS}; {USAGE}"
                )))
            }
        }
    }
    Ok(EthtoolSetting::Coalesce {
        rx_usecs,
        rx_frames,
        tx_usecs,
        tx_frames,
        rx_cqe,
        tx_cqe,
        rx_adaptive,
        tx_adaptive,
    })
}

/// What `-G` or `-L` says about its one key, `tx N`.
struct TxOnly {
    /// The values allowed.
    range: std::ops::RangeInclusive<u32>,
    /// The allowed range as the error says it ("a ring size 1..=4096
    /// descriptors").
    allowed: String,
    /// A value to suggest ("tx 256").
    value_fix: &'static str,
    /// What another key names ("ring") and what `tx` is ("the TX ring").
    kind: &'static str,
    tx_is: &'static str,
    /// A whole line to suggest.
    line_fix: &'static str,
}

impl TxOnly {
    /// The `tx` value of `pairs`; any other key is a ring or channel the
    /// emulated NIC does not have.
    fn parse(&self, pairs: &[(&str, &str)]) -> Result<u32, ConfigError> {
        let mut tx = None;
        for &(key, value) in pairs {
            if key != "tx" {
                return Err(err(format!(
                    "{} \"{key}\" is not emulated; expected tx ({}); fix: write e.g. \"{}\"",
                    self.kind, self.tx_is, self.line_fix
                )));
            }
            match value.parse::<u32>() {
                Ok(v) if self.range.contains(&v) => tx = Some(v),
                _ => {
                    return Err(err(format!(
                        "tx \"{value}\": expected {}; fix: write e.g. {}",
                        self.allowed, self.value_fix
                    )))
                }
            }
        }
        tx.ok_or_else(|| err(format!("nothing to set; {USAGE}")))
    }
}

/// `-G tx N`: the TX ring (the emulated NIC has no RX ring).
fn parse_ring(pairs: &[(&str, &str)]) -> Result<EthtoolSetting, ConfigError> {
    let tx = TxOnly {
        range: TX_RING,
        allowed: format!(
            "a ring size {}..={} descriptors",
            TX_RING.start(),
            TX_RING.end()
        ),
        value_fix: "tx 256",
        kind: "ring",
        tx_is: "the TX ring",
        line_fix: "ethtool -G left tx 512",
    }
    .parse(pairs)?;
    Ok(EthtoolSetting::Ring { tx })
}

/// `-L tx N`: the TX queues (the emulated NIC has no separate RX, other or
/// combined channels).
fn parse_channels(pairs: &[(&str, &str)]) -> Result<EthtoolSetting, ConfigError> {
    let max = crate::qdisc::mq::MAX_QUEUES;
    let tx = TxOnly {
        range: 1..=u32::from(max),
        allowed: format!("1..={max} TX queues"),
        value_fix: "tx 4",
        kind: "channel",
        tx_is: "TX queues",
        line_fix: "ethtool -L left tx 4",
    }
    .parse(pairs)?;
    // At most mq::MAX_QUEUES, a u16.
    Ok(EthtoolSetting::Channels { tx: tx as u16 })
}

/// `-K` words: `NAME on|off` pairs, where NAME is a group's short or long
/// name (ethtool's `off_flag_def`: every feature of the group) or a
/// feature's kernel name (as `ethtool -k` lists it).
fn parse_features(pairs: &[(&str, &str)]) -> Result<EthtoolSetting, ConfigError> {
    let mut changes = Vec::new();
    for &(name, value) in pairs {
        let on = match value {
            "on" => true,
            "off" => false,
            _ => {
                return Err(err(format!(
                    "{name} \"{value}\": expected on or off; fix: write e.g. {name} off"
                )))
            }
        };
        match (Group::by_name(name), features::index(name)) {
            (Some(group), _) => changes.extend(group.members().map(|i| (i, on))),
            (None, Some(i)) => changes.push((i, on)),
            (None, None) => {
                return Err(err(format!(
                    "feature \"{name}\" is not one ethtool knows on this device; expected rx, tx, sg, tso, gso, gro, lro, rxvlan, txvlan, ntuple, rxhash or a feature name as `ethtool -k left` lists it (such as tx-tcp-segmentation); {USAGE}"
                )))
            }
        }
    }
    Ok(EthtoolSetting::Features(changes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(line: &str) -> String {
        let mut p = LinkParams::default();
        apply_ethtool(line, &mut p).unwrap_err().to_string()
    }

    /// `cqe-mode-rx`/`cqe-mode-tx` set the CQE modes and nothing else.
    #[test]
    fn cqe_modes_apply() {
        let mut p = LinkParams::default();
        apply_ethtool("ethtool -C left cqe-mode-rx on rx-usecs 30", &mut p).unwrap();
        assert!(p.rx_cqe && !p.tx_cqe);
        assert_eq!((p.rx_usecs, p.rx_frames), (30, 1));
        apply_ethtool("ethtool -C left cqe-mode-tx on cqe-mode-rx off", &mut p).unwrap();
        assert!(!p.rx_cqe && p.tx_cqe);
        assert!(!p.rx_adaptive && !p.tx_adaptive);
        apply_ethtool("ethtool -C left adaptive-rx on", &mut p).unwrap();
        assert!(p.rx_adaptive && !p.tx_adaptive && p.tx_cqe);
        let before = p;
        assert!(apply_ethtool("ethtool -C left cqe-mode-tx maybe", &mut p).is_err());
        assert_eq!(p, before, "a refused line changes nothing");
    }

    #[test]
    fn a_parsed_line_prints_as_a_line_that_parses_equal() {
        for (line, printed) in [
            (
                "ethtool --coalesce right tx-frames 16 rx-usecs 20 adaptive-tx off",
                "ethtool -C right rx-usecs 20 tx-frames 16 adaptive-tx off",
            ),
            (
                "ethtool -C left adaptive-rx off",
                "ethtool -C left adaptive-rx off",
            ),
            (
                "ethtool -C left cqe-mode-tx off rx-usecs 8 cqe-mode-rx on",
                "ethtool -C left rx-usecs 8 cqe-mode-rx on cqe-mode-tx off",
            ),
            ("ethtool --set-ring left tx 512", "ethtool -G left tx 512"),
            ("ethtool -L right tx 4", "ethtool -L right tx 4"),
            (
                "ethtool -K left tx-tcp-segmentation off",
                "ethtool -K left tx-tcp-segmentation off",
            ),
            ("ethtool --show-offload right", "ethtool -k right"),
            ("ethtool -c left", "ethtool -c left"),
            ("ethtool -g left", "ethtool -g left"),
            ("ethtool -l left", "ethtool -l left"),
        ] {
            let cmd = parse_ethtool(line).unwrap();
            assert_eq!(cmd.to_string(), printed, "{line}");
            assert_eq!(parse_ethtool(printed).unwrap(), cmd, "{line}");
        }
        // A group prints as its features, which parse to the same changes.
        let cmd = parse_ethtool("ethtool -K left tso off gso on").unwrap();
        assert_eq!(parse_ethtool(&cmd.to_string()).unwrap(), cmd);
    }

    #[test]
    fn coalescing_sets_only_given_fields() {
        let mut p = LinkParams::default();
        apply_ethtool("ethtool -C left rx-usecs 20 rx-frames 0", &mut p).unwrap();
        assert_eq!(
            (p.rx_usecs, p.rx_frames, p.tx_usecs, p.tx_frames),
            (20, 0, 0, 1)
        );
        apply_ethtool(
            "ethtool --coalesce right tx-usecs 64 tx-frames 16 adaptive-rx off",
            &mut p,
        )
        .unwrap();
        assert_eq!((p.tx_usecs, p.tx_frames), (64, 16));
        assert_eq!(
            parse_ethtool("ethtool -C right rx-usecs 1")
                .unwrap()
                .direction,
            Dir::RightToLeft
        );
    }

    #[test]
    fn illegal_coalescing_leaves_params_unchanged() {
        let mut p = LinkParams::default();
        let before = p;
        let e = apply_ethtool("ethtool -C left rx-usecs 0 rx-frames 0", &mut p).unwrap_err();
        assert!(
            e.to_string().contains("rx-usecs and rx-frames are both 0"),
            "{e}"
        );
        assert_eq!(p, before);
        // Both zero after combining with the current value is also caught.
        p.tx_usecs = 0;
        assert!(apply_ethtool("ethtool -C left tx-frames 0", &mut p).is_err());
    }

    #[test]
    fn ring_and_offloads() {
        let mut p = LinkParams::default();
        apply_ethtool("ethtool -G left tx 512", &mut p).unwrap();
        assert_eq!(p.tx_ring, 512);
        let cmd = parse_ethtool("ethtool -K left tso off gso off gro on").unwrap();
        let index = |n| features::index(n).unwrap();
        let tso = [
            "tx-tcp-segmentation",
            "tx-tcp-ecn-segmentation",
            "tx-tcp-mangleid-segmentation",
            "tx-tcp6-segmentation",
            "tx-tcp-accecn-segmentation",
        ];
        let mut want: Vec<(usize, bool)> = tso.iter().map(|n| (index(n), false)).collect();
        want.push((index("tx-generic-segmentation"), false));
        want.push((index("rx-gro"), true));
        assert_eq!(cmd.setting, EthtoolSetting::Features(want));
        // It acts: the sender no longer builds super-packets on this device.
        assert!(p.features.passes_super_frames());
        let before = p;
        cmd.apply(&mut p).unwrap();
        assert_ne!(p, before);
        assert!(!p.features.passes_super_frames());
        assert_eq!((p.tx_ring, p.rx_usecs), (before.tx_ring, before.rx_usecs));
        // Kernel names work too; a query changes nothing.
        apply_ethtool("ethtool -K left tx-generic-segmentation on", &mut p).unwrap();
        assert!(p.features.passes_super_frames());
        let q = p;
        for line in [
            "ethtool -k left",
            "ethtool -c left",
            "ethtool --show-ring left",
        ] {
            apply_ethtool(line, &mut p).unwrap();
            assert_eq!(p, q, "{line}");
        }
    }

    #[test]
    fn errors_name_token_and_allowed_values() {
        assert!(msg("ethtool -C left rx-usecs abc")
            .contains("rx-usecs \"abc\": expected an integer 0..=1000000"));
        assert!(msg("ethtool -C left rx-usecs 2000000").contains("0..=1000000"));
        assert!(msg("ethtool -C left rx-frames 70000").contains("0..=65535"));
        assert!(msg("ethtool -C left rx-usecs-irq 5")
            .contains("\"rx-usecs-irq\" is not supported; expected rx-usecs"));
        assert!(msg("ethtool -C left adaptive-tx maybe").contains("expected on or off"));
        assert!(msg("ethtool -C left cqe-mode-rx 1").contains("expected on or off"));
        assert!(msg("ethtool -C left adaptive-rx 2").contains("expected on or off"));
        assert!(msg("ethtool -C left rx-usecs").contains("\"rx-usecs\" needs a value"));
        assert!(msg("ethtool -C left").contains("nothing to set"));
        assert!(msg("ethtool -G left tx 0").contains("1..=4096"));
        assert!(msg("ethtool -G left tx 5000").contains("1..=4096"));
        assert!(msg("ethtool -G left rx 512").contains("ring \"rx\" is not emulated"));
        assert!(msg("ethtool -K left tso maybe").contains("tso \"maybe\": expected on or off"));
        assert!(msg("ethtool -K left t/so off").contains("\"t/so\" is not one ethtool knows"));
        assert!(msg("ethtool -K left tos off").contains("\"tos\" is not one ethtool knows"));
        assert!(msg("ethtool -k left tso").contains("unexpected parameter \"tso\""));
        assert!(msg("ethtool -g eth0").contains("device \"eth0\" is unknown"));
        let mut p = LinkParams::default();
        for line in [
            "ethtool -K left tso off gso off gro off",
            "ethtool -K left tx-tcp-segmentation off rx-udp-gro-forwarding on",
            "ethtool -K left generic-receive-offload off",
        ] {
            apply_ethtool(line, &mut p).unwrap_or_else(|e| panic!("{line}: {e}"));
        }
        assert!(msg("ethtool -S left").contains("option \"-S\" is not supported"));
        assert!(msg("ethtool -C eth0 rx-usecs 1").contains("device \"eth0\" is unknown"));
        assert!(msg("ethtol -C left rx-usecs 1").contains("starts with \"ethtool\""));
        assert!(msg("").starts_with("ethtool: "));
    }
}
