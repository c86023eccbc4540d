//! What ethtool prints for the emulated device, in ethtool 6.1's own text
//! (its netlink code: `netlink/features.c`, `netlink/coalesce.c`,
//! `netlink/rings.c`): `-k` lists the features, `-K` reports "Actual
//! changes" when the device did not do exactly what was asked (and fails
//! when it changed nothing), `-c` the coalescing and `-g` the rings; `-C`
//! and `-G` print nothing. A parameter the emulated device does not have
//! reads `n/a`, as ethtool prints an attribute the kernel did not send.

use std::fmt::Write;

use super::{EthtoolCommand, EthtoolSetting, Query};
use crate::link::features::{is_fixed, FeatureSet, Features, Group, FEATURES};
use crate::link::LinkParams;

/// What one ethtool line answers: its standard output, and the error ethtool
/// prints on standard error (exiting 1) when a `-K` changed nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EthtoolReply {
    /// What ethtool prints on standard output.
    pub stdout: String,
    /// What ethtool prints on standard error when it exits 1 (a `-K` that
    /// changed nothing); None on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The reply to `cmd` on device `dev`, whose parameters were `before` and
/// are now `after`.
pub fn reply(cmd: &EthtoolCommand, before: &LinkParams, after: &LinkParams) -> EthtoolReply {
    let dev = cmd.direction.dev();
    let stdout = match &cmd.setting {
        EthtoolSetting::Show(Query::Features) => features(dev, &after.features),
        EthtoolSetting::Show(Query::Coalesce) => coalesce(dev, after),
        EthtoolSetting::Show(Query::Ring) => ring(dev, after),
        EthtoolSetting::Show(Query::Channels) => channels(dev, after),
        EthtoolSetting::Features(request) => {
            return changes(&before.features, &after.features, request)
        }
        EthtoolSetting::Coalesce { .. }
        | EthtoolSetting::Ring { .. }
        | EthtoolSetting::Channels { .. } => String::new(),
    };
    EthtoolReply {
        stdout,
        error: None,
    }
}

fn on(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// One feature's line of `-k`: its state and why it differs from the
/// request (ethtool's `dump_feature`).
fn feature_line(
    out: &mut String,
    prefix: &str,
    name: &str,
    f: &Features,
    active: FeatureSet,
    i: usize,
) {
    let state = active.contains(i);
    let note = if is_fixed(i) {
        " [fixed]".to_string()
    } else if f.requested(i) != state {
        format!(" [requested {}]", on(f.requested(i)))
    } else {
        String::new()
    };
    let _ = writeln!(out, "{prefix}{name}: {}{note}", on(state));
}

/// `ethtool -k DEV`: the groups in ethtool's order (a group of one feature
/// under the group's long name, a larger one as a heading with its
/// features indented, on when any is), then the other features.
pub fn features(dev: &str, f: &Features) -> String {
    let active = f.active();
    let mut out = format!("Features for {dev}:\n");
    for group in Group::ALL {
        let members: Vec<usize> = group.members().collect();
        if let [only] = members[..] {
            feature_line(&mut out, "", group.long_name(), f, active, only);
            continue;
        }
        let any = members.iter().any(|&i| active.contains(i));
        let _ = writeln!(out, "{}: {}", group.long_name(), on(any));
        for i in members {
            feature_line(&mut out, "\t", FEATURES[i].name, f, active, i);
        }
    }
    for (i, def) in FEATURES.iter().enumerate() {
        if def.group.is_none() {
            feature_line(&mut out, "", def.name, f, active, i);
        }
    }
    out
}

/// `ethtool -K`'s report: nothing when the request was met and nothing
/// else changed; else "Actual changes:" with every feature that changed
/// or did not reach its requested state, in the kernel's bit order. When
/// nothing changed at all, ethtool also fails with "Could not change any
/// device features".
pub fn changes(before: &Features, after: &Features, request: &[(usize, bool)]) -> EthtoolReply {
    let (old, new) = (before.active(), after.active());
    // The last word for a feature wins, as in the request ethtool sends.
    let asked = |i: usize| request.iter().rev().find(|(j, _)| *j == i).map(|&(_, v)| v);
    let missed = |i: usize| asked(i).is_some_and(|v| v != new.contains(i));
    let changed = |i: usize| old.contains(i) != new.contains(i);
    let all = 0..FEATURES.len();
    let surprise = all
        .clone()
        .any(|i| missed(i) || (changed(i) && asked(i).is_none()));
    if !surprise {
        return EthtoolReply::default();
    }
    let mut stdout = "Actual changes:\n".to_string();
    for i in all.clone().filter(|&i| missed(i) || changed(i)) {
        let note = match asked(i) {
            Some(v) if missed(i) => format!(" [requested {}]", on(v)),
            Some(_) => String::new(),
            None => " [not requested]".to_string(),
        };
        let _ = writeln!(
            stdout,
            "{}: {}{note}",
            FEATURES[i].name,
            on(new.contains(i))
        );
    }
    let error =
        (!all.into_iter().any(changed)).then(|| "Could not change any device features".to_string());
    EthtoolReply { stdout, error }
}

/// `ethtool -c DEV`: adaptive coalescing, the four parameters the
/// emulated NIC has (the fixed values; net_dim's current profile is not
/// among them, as with mlx5) and its CQE modes (`netlink/coalesce.c` prints
/// `Adaptive RX: on  TX: off`, `CQE mode RX: on  TX: off`); the rest
/// `n/a`.
pub fn coalesce(dev: &str, p: &LinkParams) -> String {
    let na = |names: &[&str]| -> String { names.iter().map(|n| format!("{n}: n/a\n")).collect() };
    format!(
        "Coalesce parameters for {dev}:\n\
         Adaptive RX: {}  TX: {}\n\
         {}\n\
         rx-usecs: {}\n\
         rx-frames: {}\n\
         {}\n\
         tx-usecs: {}\n\
         tx-frames: {}\n\
         {}\n\
         {}\n\
         {}\n\
         CQE mode RX: {}  TX: {}\n\n",
        on(p.rx_adaptive),
        on(p.tx_adaptive),
        na(&[
            "stats-block-usecs",
            "sample-interval",
            "pkt-rate-low",
            "pkt-rate-high"
        ]),
        p.rx_usecs,
        p.rx_frames,
        na(&["rx-usecs-irq", "rx-frames-irq"]),
        p.tx_usecs,
        p.tx_frames,
        na(&["tx-usecs-irq", "tx-frames-irq"]),
        na(&[
            "rx-usecs-low",
            "rx-frame-low",
            "tx-usecs-low",
            "tx-frame-low"
        ]),
        na(&[
            "rx-usecs-high",
            "rx-frame-high",
            "tx-usecs-high",
            "tx-frame-high"
        ]),
        on(p.rx_cqe),
        on(p.tx_cqe),
    )
}

/// The CQE and adaptive modes that are on, as `-C` words after the
/// coalescing values (` cqe-mode-rx on adaptive-rx on`), for the one-line
/// summaries of a link (`set`, the configuration report); empty when all
/// are off (the default).
pub fn coalesce_mode_words(p: &LinkParams) -> String {
    [
        ("cqe-mode-rx", p.rx_cqe),
        ("cqe-mode-tx", p.tx_cqe),
        ("adaptive-rx", p.rx_adaptive),
        ("adaptive-tx", p.tx_adaptive),
    ]
    .iter()
    .filter(|(_, on)| *on)
    .map(|(key, _)| format!(" {key} on"))
    .collect()
}

/// `ethtool -l DEV`: the TX queues (`netlink/channels.c`).
pub fn channels(dev: &str, p: &LinkParams) -> String {
    format!(
        "Channel parameters for {dev}:\n\
         Pre-set maximums:\n\
         RX:\t\tn/a\n\
         TX:\t\t{}\n\
         Other:\t\tn/a\n\
         Combined:\tn/a\n\
         Current hardware settings:\n\
         RX:\t\tn/a\n\
         TX:\t\t{}\n\
         Other:\t\tn/a\n\
         Combined:\tn/a\n",
        crate::qdisc::mq::MAX_QUEUES,
        p.tx_queues
    )
}

/// `ethtool -g DEV`: the TX ring (the emulated NIC has no RX ring).
pub fn ring(dev: &str, p: &LinkParams) -> String {
    format!(
        "Ring parameters for {dev}:\n\
         Pre-set maximums:\n\
         RX:\t\tn/a\n\
         RX Mini:\tn/a\n\
         RX Jumbo:\tn/a\n\
         TX:\t\t{}\n\
         Current hardware settings:\n\
         RX:\t\tn/a\n\
         RX Mini:\tn/a\n\
         RX Jumbo:\tn/a\n\
         TX:\t\t{}\n\
         RX Buf Len:\tn/a\n\
         CQE Size:\tn/a\n\
         TX Push:\toff\n\
         TCP data split:\tn/a\n",
        super::TX_RING.end(),
        p.tx_ring
    )
}

#[cfg(test)]
mod tests {
    //! The expected texts in `testdata/` are what ethtool 6.1 printed on
    //! Linux 6.18 for a TAP named `left` opened as bloatbox opens its TAPs
    //! (`IFF_VNET_HDR`, `TUNSETOFFLOAD` with checksum, TSO4, TSO6 and
    //! TSO-ECN): `-k` at first, the replies to a sequence of `-K` lines,
    //! and `-k` after them.

    use super::*;
    use crate::config::{apply_ethtool, parse_ethtool};

    #[test]
    fn dash_k_prints_what_ethtool_prints_for_the_tap() {
        assert_eq!(
            features("left", &Features::default()),
            include_str!("testdata/k-default.txt")
        );
    }

    /// Replays `testdata/K-sequence.txt` (`$ ethtool -K left ...`, its
    /// standard output, `! ` its standard error, `? ` its exit code).
    #[test]
    fn dash_big_k_reports_actual_changes_as_ethtool_does() {
        let script = include_str!("testdata/K-sequence.txt");
        let mut params = LinkParams::default();
        let mut replayed = 0;
        for step in script.split("$ ").filter(|s| !s.is_empty()) {
            let (line, rest) = step.split_once('\n').unwrap();
            let mut want = EthtoolReply::default();
            let mut code = 0;
            for l in rest.lines() {
                if let Some(e) = l.strip_prefix("! ") {
                    want.error = Some(e.to_string());
                } else if let Some(c) = l.strip_prefix("? ") {
                    code = c.parse().unwrap();
                } else {
                    want.stdout.push_str(l);
                    want.stdout.push('\n');
                }
            }
            let cmd = parse_ethtool(line).unwrap();
            let before = params;
            cmd.apply(&mut params).unwrap();
            let got = reply(&cmd, &before, &params);
            assert_eq!(got, want, "{line}");
            assert_eq!(i32::from(got.error.is_some()), code, "{line}");
            replayed += 1;
        }
        assert_eq!(replayed, 12);
        assert_eq!(
            features("left", &params.features),
            include_str!("testdata/k-after-sequence.txt")
        );
        // Not the default: the texts do differ.
        assert_ne!(
            include_str!("testdata/k-after-sequence.txt"),
            include_str!("testdata/k-default.txt")
        );
    }

    #[test]
    fn queries_print_the_device_s_coalescing_and_ring() {
        let mut p = LinkParams::default();
        let c = reply(&parse_ethtool("ethtool -c left").unwrap(), &p, &p).stdout;
        assert!(c.ends_with("\nCQE mode RX: off  TX: off\n\n"), "{c}");
        for line in [
            "ethtool -C left rx-usecs 20 rx-frames 0 cqe-mode-rx on",
            "ethtool -G left tx 512",
        ] {
            let cmd = parse_ethtool(line).unwrap();
            let before = p;
            cmd.apply(&mut p).unwrap();
            assert_eq!(reply(&cmd, &before, &p), EthtoolReply::default(), "{line}");
        }
        let c = reply(&parse_ethtool("ethtool -c left").unwrap(), &p, &p).stdout;
        assert!(c.starts_with("Coalesce parameters for left:\nAdaptive RX: off  TX: off\n"));
        let mut adaptive = p;
        apply_ethtool("ethtool -C left adaptive-tx on", &mut adaptive).unwrap();
        let a = reply(
            &parse_ethtool("ethtool -c left").unwrap(),
            &adaptive,
            &adaptive,
        )
        .stdout;
        assert!(a.starts_with("Coalesce parameters for left:\nAdaptive RX: off  TX: on\n"));
        assert!(
            c.contains("\n\nrx-usecs: 20\nrx-frames: 0\nrx-usecs-irq: n/a\n"),
            "{c}"
        );
        assert!(c.contains("\n\ntx-usecs: 0\ntx-frames: 1\n"), "{c}");
        assert!(c.ends_with("\nCQE mode RX: on  TX: off\n\n"), "{c}");
        assert_eq!(c.lines().count(), 29);
        let g = reply(&parse_ethtool("ethtool -g right").unwrap(), &p, &p).stdout;
        assert!(g.starts_with("Ring parameters for right:\nPre-set maximums:\nRX:\t\tn/a\n"));
        assert!(
            g.contains("TX:\t\t4096\nCurrent hardware settings:\n"),
            "{g}"
        );
        assert!(g.contains("Current hardware settings:\nRX:\t\tn/a\nRX Mini:\tn/a\nRX Jumbo:\tn/a\nTX:\t\t512\n"), "{g}");
        let cmd = parse_ethtool("ethtool -L left tx 4").unwrap();
        let before = p;
        cmd.apply(&mut p).unwrap();
        assert_eq!((before.tx_queues, p.tx_queues), (1, 4));
        let l = reply(&parse_ethtool("ethtool -l left").unwrap(), &p, &p).stdout;
        assert_eq!(
            l,
            "Channel parameters for left:\nPre-set maximums:\nRX:\t\tn/a\nTX:\t\t64\n\
             Other:\t\tn/a\nCombined:\tn/a\nCurrent hardware settings:\nRX:\t\tn/a\n\
             TX:\t\t4\nOther:\t\tn/a\nCombined:\tn/a\n"
        );
    }
}
