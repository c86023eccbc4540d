//! `check_report`: the effective configuration per direction in plain text,
//! for `bloatbox check FILE`: endpoints, resolved link parameters (after
//! overrides and ethtool lines), the worst-case queueing delay the TX ring
//! adds without BQL, the link shape (netem with its seed, trace or
//! schedule, framing), offloads and the tc lines that build each qdisc.

use super::shape::ScheduleKind;
use super::Config;
use crate::dir::Dir;
use crate::link::{Framing, Schedule};
use crate::tc::netem::format_netem;
use crate::units::{print_rate, sprint_time, LinkLayer};
use std::fmt::Write;

/// Ethernet header bytes on top of the MTU.
const ETH_HEADER: u64 = 14;

/// A human-readable summary of the effective configuration.
pub fn check_report(config: &Config) -> String {
    let mut out = String::new();
    for (side, ep) in [("left", &config.left), ("right", &config.right)] {
        let _ = writeln!(
            out,
            "{side:<5}  namespace {}  tap {}  {}  {}",
            ep.namespace, ep.tap, ep.ipv4, ep.ipv6
        );
    }
    let offload = if config.tap.offload {
        format!(
            "offload on (TSO super-frames pass whole at >= {} {}){}",
            config.tap.gso_min_rate,
            if config.tap.forward_gro {
                "through HTB and TBF too, as a router with GRO"
            } else {
                "unshaped"
            },
            if config.tap.gro {
                ", GRO on the receiving TAPs"
            } else {
                ""
            }
        )
    } else {
        "offload off".to_string()
    };
    let _ = writeln!(
        out,
        "taps   mtu {}  txqueuelen {}  {offload}",
        config.tap.mtu, config.tap.txqueuelen
    );
    for dir in Dir::ALL {
        direction(&mut out, config, dir);
    }
    let d = &config.daemon;
    let _ = writeln!(
        out,
        "daemon control socket {}  snapshots {} Hz  spin {}  timer slack {}  busy poll {}{}  pool {} frames{}",
        config.control_socket().display(),
        d.snapshot_hz,
        // The learned spin (DaemonSettings::spin_budget_pct) applies only
        // without a fixed spin and without slack.
        match (d.spin_us, d.timer_slack_us, d.spin_budget_pct) {
            (0, 0, pct) if pct > 0 => {
                format!("learned within {pct}% of a core (late releases paced)")
            }
            (0, _, _) => off_or_us(0),
            (us, _, _) => format!("{} (late releases paced)", off_or_us(us)),
        },
        off_or_us(d.timer_slack_us),
        off_or_us(d.busy_poll_us),
        d.pm_qos_us
            .map_or_else(String::new, |us| format!("  PM QoS {us}us")),
        d.pool_size,
        match d.cpus[..] {
            [] => String::new(),
            [both] => format!("  threads on CPU {both}"),
            [l2r, r2l, ..] => format!("  threads on CPUs {l2r} (left→right), {r2l} (right→left)"),
        },
    );
    out
}

/// A µs setting where 0 means off.
fn off_or_us(us: u32) -> String {
    if us == 0 {
        "off".to_string()
    } else {
        format!("{us}us")
    }
}

fn direction(out: &mut String, config: &Config, dir: Dir) {
    let p = config.link_params(dir);
    let on = |b: bool| if b { "on" } else { "off" };
    let tx_queues = config
        .pick(dir, "tx_queues", |l| &l.tx_queues)
        .map_or(1, |s| s.value);
    let _ = writeln!(out, "{} (dev {}):", dir.arrow(), dir.dev());
    let _ = writeln!(
        out,
        "  rate {}  overhead {} B  delay {}",
        if p.rate_bytes_ps == 0 {
            "unlimited".to_string()
        } else {
            print_rate(p.rate_bytes_ps)
        },
        p.overhead,
        format_ns(p.delay_ns)
    );
    let _ = writeln!(
        out,
        "  tx ring {}  bql {}  bulk dequeue {}  txqueuelen {}  tx queues {}",
        p.tx_ring,
        on(p.bql),
        on(p.bulk_dequeue),
        p.txqueuelen,
        tx_queues
    );
    let _ = writeln!(
        out,
        "  coalescing rx-usecs {} rx-frames {}  tx-usecs {} tx-frames {}{}",
        p.rx_usecs,
        p.rx_frames,
        p.tx_usecs,
        p.tx_frames,
        super::ethtool::show::coalesce_mode_words(&p)
    );
    if p.rate_bytes_ps > 0 {
        let frame = p.mtu as u64 + ETH_HEADER + p.overhead as u64;
        let ring_ns =
            (p.tx_ring as u128 * frame as u128 * 1_000_000_000 / p.rate_bytes_ps as u128) as u64;
        let _ = writeln!(
            out,
            "  full ring of {}-byte frames drains in {}{}",
            frame,
            format_ns(ring_ns),
            if p.bql {
                " (BQL keeps it far shorter)"
            } else {
                " (no BQL: this is queueing below the qdisc)"
            }
        );
    }
    shape(out, config, dir);
    if p.features != Default::default() {
        let _ = writeln!(
            out,
            "  features {}{}",
            p.features,
            if p.features.passes_super_frames() {
                ""
            } else {
                " (TSO and GSO off: the qdisc sees per-MTU segments)"
            }
        );
    }
    for line in config.tc_lines(dir) {
        let _ = writeln!(out, "  {line}");
    }
}

/// Impairments with their seed, the trace or schedule, and the framing.
fn shape(out: &mut String, config: &Config, dir: Dir) {
    let shape = config.link_shape(dir);
    let imp = &shape.impairments;
    if imp.is_none() {
        let _ = writeln!(out, "  netem none  seed {}", imp.seed);
    } else {
        let _ = writeln!(out, "  netem {}", format_netem(imp));
    }
    if let (Ok(Some((kind, file))), Some(schedule)) = (config.schedule_source(dir), &shape.schedule)
    {
        let what = match schedule {
            Schedule::Trace { opportunities_ms } => format!(
                "{} delivery opportunities, repeating every {}ms",
                opportunities_ms.len(),
                opportunities_ms.last().copied().unwrap_or(0)
            ),
            Schedule::Steps { steps, repeat_ns } => format!(
                "{} steps{}",
                steps.len(),
                repeat_ns.map_or(String::new(), |r| format!(
                    ", repeating every {}",
                    format_ns(r)
                ))
            ),
        };
        let key = match kind {
            ScheduleKind::Trace => "trace",
            ScheduleKind::Schedule => "schedule",
        };
        let _ = writeln!(out, "  {key} {} ({what}; replaces the rate)", file.value);
    }
    let f = shape.framing;
    if f != Framing::default() {
        let _ = writeln!(
            out,
            "  framing overhead {} mpu {} linklayer {}",
            f.overhead,
            f.mpu,
            match f.linklayer {
                LinkLayer::Ethernet => "ethernet",
                LinkLayer::Atm => "atm",
            }
        );
    }
}

/// ns as tc prints times, with `ns` below a microsecond.
fn format_ns(ns: u64) -> String {
    if ns == 0 {
        "0".into()
    } else if ns < 1000 || !ns.is_multiple_of(1000) && ns < 10_000 {
        format!("{ns}ns")
    } else {
        sprint_time(ns / 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tap_line_says_whether_offload_is_on() {
        let mut c = Config::default();
        assert!(check_report(&c).contains(
            "txqueuelen 128  offload on (TSO super-frames pass whole at >= 1gbit unshaped)"
        ));
        c.tap.offload = false;
        assert!(check_report(&c).contains("txqueuelen 128  offload off\n"));
    }

    #[test]
    fn the_daemon_line_says_when_late_releases_are_paced_and_the_timer_slack() {
        let mut c = Config::default();
        c.daemon.spin_budget_pct = 0;
        assert!(check_report(&c).contains("  spin off  timer slack off  busy poll off  "));
        c.daemon.spin_us = 50;
        assert!(check_report(&c)
            .contains("  spin 50us (late releases paced)  timer slack off  busy poll off  "));
        c.daemon.spin_us = 0;
        c.daemon.timer_slack_us = 20;
        assert!(check_report(&c).contains("  spin off  timer slack 20us  busy poll off  "));
    }

    #[test]
    fn the_daemon_line_names_the_learned_spin_only_when_it_applies() {
        let mut c = Config::default();
        let learned =
            "  spin learned within 15% of a core (late releases paced)  timer slack off  busy poll off  ";
        assert!(check_report(&c).contains(learned));
        c.daemon.spin_budget_pct = 0;
        assert!(!check_report(&c).contains("learned"));
        c.daemon.spin_budget_pct = 15;
        c.daemon.spin_us = 50;
        assert!(!check_report(&c).contains("learned"));
        c.daemon.spin_us = 0;
        c.daemon.timer_slack_us = 20;
        assert!(!check_report(&c).contains("learned"));
    }

    #[test]
    fn the_daemon_line_names_a_pm_qos_request_only_when_one_is_held() {
        let mut c = Config::default();
        assert!(!check_report(&c).contains("PM QoS"));
        c.daemon.pm_qos_us = Some(0);
        assert!(check_report(&c).contains("  busy poll off  PM QoS 0us  pool 65536 frames"));
    }

    #[test]
    fn times_print_like_tc() {
        assert_eq!(format_ns(0), "0");
        assert_eq!(format_ns(250), "250ns");
        assert_eq!(format_ns(1500), "1500ns");
        assert_eq!(format_ns(5_000_000), "5ms");
        assert_eq!(format_ns(31_129_600), "31.1ms");
    }
}
