//! ethtool-style link settings: `ethtool -C left rx-usecs 20 rx-frames 0`
//! (coalescing), `ethtool -G left tx 512` (TX ring) and `ethtool -K left tso
//! off` (offloads: recorded, informational, since frames are handled one by
//! one) parsed into the emulated device's `LinkParams`. `left` is the
//! left→right egress device, `right` its mirror. Used by the configuration
//! and, at run time, by the daemon.

use super::error::ConfigError;
use super::validate::{check_link_coalescing, MAX_FRAMES, MAX_USECS, TX_RING};
use crate::dir::Dir;
use crate::link::LinkParams;

/// One parsed ethtool line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EthtoolCommand {
    /// The direction whose egress device the line names.
    pub direction: Dir,
    pub setting: EthtoolSetting,
}

/// What an ethtool line changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EthtoolSetting {
    /// `-C`: the values given, others unchanged.
    Coalesce {
        rx_usecs: Option<u32>,
        rx_frames: Option<u32>,
        tx_usecs: Option<u32>,
        tx_frames: Option<u32>,
    },
    /// `-G tx N`.
    Ring { tx: u32 },
    /// `-K feature on|off ...`, in order.
    Offload(Vec<(String, bool)>),
}

const USAGE: &str = "fix: write e.g. \"ethtool -C left rx-usecs 20 rx-frames 0\", \"ethtool -G left tx 512\" or \"ethtool -K left tso off\"";
const COALESCE_KEYS: &str =
    "rx-usecs, rx-frames, tx-usecs, tx-frames, adaptive-rx off, adaptive-tx off";

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
    let parse: SettingParser = match option {
        "-C" | "--coalesce" => parse_coalesce,
        "-G" | "--set-ring" => parse_ring,
        "-K" | "--features" | "--offload" => parse_offload,
        other => {
            return Err(err(format!(
                "option \"{other}\" is not supported; expected -C (coalescing), -G (ring) or -K (offloads); {USAGE}"
            )))
        }
    };
    let dev = words.get(2).copied().unwrap_or("");
    let direction = Dir::from_dev(dev).ok_or_else(|| {
        err(format!(
            "device \"{dev}\" is unknown; expected left (left→right egress) or right (right→left egress); {USAGE}"
        ))
    })?;
    let setting = parse(&key_values(&words[3.min(words.len())..])?)?;
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
            } => {
                next.rx_usecs = rx_usecs.unwrap_or(next.rx_usecs);
                next.rx_frames = rx_frames.unwrap_or(next.rx_frames);
                next.tx_usecs = tx_usecs.unwrap_or(next.tx_usecs);
                next.tx_frames = tx_frames.unwrap_or(next.tx_frames);
                check_link_coalescing(&next).map_err(err)?;
            }
            EthtoolSetting::Ring { tx } => next.tx_ring = *tx,
            EthtoolSetting::Offload(_) => {}
        }
        *params = next;
        Ok(())
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
    for &(key, value) in pairs {
        match key {
            "rx-usecs" => rx_usecs = Some(number(key, value, MAX_USECS, "µs")?),
            "tx-usecs" => tx_usecs = Some(number(key, value, MAX_USECS, "µs")?),
            "rx-frames" => rx_frames = Some(number(key, value, MAX_FRAMES, "frames")?),
            "tx-frames" => tx_frames = Some(number(key, value, MAX_FRAMES, "frames")?),
            "adaptive-rx" | "adaptive-tx" => match value {
                "off" => {}
                "on" => {
                    return Err(err(format!(
                        "{key} on: adaptive coalescing is not emulated; expected {key} off; fix: set fixed rx-usecs/rx-frames values"
                    )))
                }
                _ => return Err(err(format!("{key} \"{value}\": expected on or off; fix: write {key} off"))),
            },
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
    })
}

fn parse_ring(pairs: &[(&str, &str)]) -> Result<EthtoolSetting, ConfigError> {
    let mut tx = None;
    for &(key, value) in pairs {
        match key {
            "tx" => match value.parse::<u32>() {
                Ok(v) if TX_RING.contains(&v) => tx = Some(v),
                _ => {
                    return Err(err(format!(
                        "tx \"{value}\": expected a ring size {}..={} descriptors; fix: write e.g. tx 256",
                        TX_RING.start(),
                        TX_RING.end()
                    )))
                }
            },
            _ => {
                return Err(err(format!(
                    "ring \"{key}\" is not emulated; expected tx (the TX ring); fix: write e.g. \"ethtool -G left tx 512\""
                )))
            }
        }
    }
    tx.map(|tx| EthtoolSetting::Ring { tx })
        .ok_or_else(|| err(format!("nothing to set; {USAGE}")))
}

/// The names `ethtool -K` takes: its own short names and their long forms
/// (ethtool's `off_flag_def`), then the kernel's feature strings
/// (`netdev_features_strings`, as `ethtool -k` lists them).
const OFFLOAD_FEATURES: &[&str] = &[
    "rx",
    "rx-checksumming",
    "tx",
    "tx-checksumming",
    "sg",
    "scatter-gather",
    "tso",
    "tcp-segmentation-offload",
    "ufo",
    "udp-fragmentation-offload",
    "gso",
    "generic-segmentation-offload",
    "gro",
    "generic-receive-offload",
    "lro",
    "large-receive-offload",
    "rxvlan",
    "rx-vlan-offload",
    "txvlan",
    "tx-vlan-offload",
    "ntuple",
    "ntuple-filters",
    "rxhash",
    "receive-hashing",
    "tx-scatter-gather",
    "tx-checksum-ipv4",
    "tx-checksum-ip-generic",
    "tx-checksum-ipv6",
    "highdma",
    "tx-scatter-gather-fraglist",
    "tx-vlan-hw-insert",
    "rx-vlan-hw-parse",
    "rx-vlan-filter",
    "tx-vlan-stag-hw-insert",
    "rx-vlan-stag-hw-parse",
    "rx-vlan-stag-filter",
    "vlan-challenged",
    "tx-generic-segmentation",
    "netns-local",
    "rx-gro",
    "rx-gro-hw",
    "rx-lro",
    "tx-tcp-segmentation",
    "tx-gso-robust",
    "tx-tcp-ecn-segmentation",
    "tx-tcp-mangleid-segmentation",
    "tx-tcp6-segmentation",
    "tx-fcoe-segmentation",
    "tx-gre-segmentation",
    "tx-gre-csum-segmentation",
    "tx-ipxip4-segmentation",
    "tx-ipxip6-segmentation",
    "tx-udp_tnl-segmentation",
    "tx-udp_tnl-csum-segmentation",
    "tx-gso-partial",
    "tx-tunnel-remcsum-segmentation",
    "tx-sctp-segmentation",
    "tx-esp-segmentation",
    "tx-udp-segmentation",
    "tx-gso-list",
    "tx-checksum-fcoe-crc",
    "tx-checksum-sctp",
    "fcoe-mtu",
    "rx-ntuple-filter",
    "rx-hashing",
    "rx-checksum",
    "tx-nocache-copy",
    "loopback",
    "rx-fcs",
    "rx-all",
    "l2-fwd-offload",
    "hw-tc-offload",
    "esp-hw-offload",
    "esp-tx-csum-hw-offload",
    "rx-udp_tunnel-port-offload",
    "tls-hw-record",
    "tls-hw-tx-offload",
    "tls-hw-rx-offload",
    "rx-gro-list",
    "macsec-hw-offload",
    "rx-udp-gro-forwarding",
    "hsr-tag-ins-offload",
    "hsr-tag-rm-offload",
    "hsr-fwd-offload",
    "hsr-dup-offload",
];

fn parse_offload(pairs: &[(&str, &str)]) -> Result<EthtoolSetting, ConfigError> {
    pairs
        .iter()
        .map(|&(feature, value)| {
            if !OFFLOAD_FEATURES.contains(&feature) {
                return Err(err(format!(
                    "feature \"{feature}\" is not one ethtool knows; expected rx, tx, sg, tso, ufo, gso, gro, lro, rxvlan, txvlan, ntuple, rxhash or a kernel feature name as `ethtool -k` lists it (such as tx-tcp-segmentation); {USAGE}"
                )));
            }
            match value {
                "on" => Ok((feature.to_string(), true)),
                "off" => Ok((feature.to_string(), false)),
                _ => Err(err(format!(
                    "{feature} \"{value}\": expected on or off; fix: write e.g. {feature} off"
                ))),
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map(EthtoolSetting::Offload)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(line: &str) -> String {
        let mut p = LinkParams::default();
        apply_ethtool(line, &mut p).unwrap_err().to_string()
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
        assert_eq!(
            cmd.setting,
            EthtoolSetting::Offload(vec![
                ("tso".into(), false),
                ("gso".into(), false),
                ("gro".into(), true)
            ])
        );
        let before = p;
        cmd.apply(&mut p).unwrap();
        assert_eq!(p, before);
    }

    #[test]
    fn errors_name_token_and_allowed_values() {
        assert!(msg("ethtool -C left rx-usecs abc")
            .contains("rx-usecs \"abc\": expected an integer 0..=1000000"));
        assert!(msg("ethtool -C left rx-usecs 2000000").contains("0..=1000000"));
        assert!(msg("ethtool -C left rx-frames 70000").contains("0..=65535"));
        assert!(msg("ethtool -C left rx-usecs-irq 5")
            .contains("\"rx-usecs-irq\" is not supported; expected rx-usecs"));
        assert!(msg("ethtool -C left adaptive-rx on").contains("not emulated"));
        assert!(msg("ethtool -C left adaptive-tx maybe").contains("expected on or off"));
        assert!(msg("ethtool -C left rx-usecs").contains("\"rx-usecs\" needs a value"));
        assert!(msg("ethtool -C left").contains("nothing to set"));
        assert!(msg("ethtool -G left tx 0").contains("1..=4096"));
        assert!(msg("ethtool -G left tx 5000").contains("1..=4096"));
        assert!(msg("ethtool -G left rx 512").contains("ring \"rx\" is not emulated"));
        assert!(msg("ethtool -K left tso maybe").contains("tso \"maybe\": expected on or off"));
        assert!(msg("ethtool -K left t/so off").contains("\"t/so\" is not one ethtool knows"));
        assert!(msg("ethtool -K left tos off").contains("\"tos\" is not one ethtool knows"));
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
