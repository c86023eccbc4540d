//! The comparison table of a test run, in the style of the netdev bufferbloat
//! threads: ping's rtt min/avg/max/mdev, p50/p99 of ping and UDP_RR, UDP_RR
//! transactions per second, TCP goodput per direction, and the daemon's
//! drops (in the link + refused by the receiving TAP) and ECN marks per
//! direction (`>` = left→right, `<` = right→left); then the datapath
//! thread's wake-ups and CPU time per frame over the whole run.

use std::fmt::Write;

use super::Report;

/// Renders the table (one row per configuration) and a line on how it was
/// measured.
pub fn render(report: &Report) -> String {
    let o = &report.options;
    let mut out = String::new();
    let _ =
        writeln!(
        out,
        "{} TCP flow(s) {} ({}), {:.0} s per config, first {:.0} s excluded; ping {}; UDP_RR {}",
        o.flows,
        if o.bidirectional { "each way" } else { "left->right" },
        o.cc.name(),
        o.duration.as_secs_f64(),
        o.warmup.as_secs_f64(),
        o.ping_interval
            .map_or("off".into(), |i| format!("every {} ms", i.as_millis())),
        if o.udp_rr { "on" } else { "off" },
    );
    let _ = writeln!(
        out,
        "{:<22} {:<10} | {:>30} | {:>7} {:>7} | {:>15} {:>8} | {:>7} {:>7} | {:>19} | {:>9} | {:>9} {:>9}",
        "config",
        "qdisc",
        "ping rtt min/avg/max/mdev ms",
        "p50",
        "p99",
        "udp_rr p50/p99",
        "trans/s",
        "up",
        "down",
        "drops >/<",
        "marks >/<",
        "wakeups",
        "cpu",
    );
    let _ = writeln!(
        out,
        "{:<22} {:<10} | {:>30} | {:>7} {:>7} | {:>15} {:>8} | {:>7} {:>7} | {:>19} | {:>9} | {:>9} {:>9}",
        "",
        "",
        "",
        "ms",
        "ms",
        "ms",
        "",
        "Mbit/s",
        "Mbit/s",
        "link+tap",
        "",
        "/frame",
        "us/frame",
    );
    for r in &report.results {
        let s = &r.summary;
        let (rtt, p50, p99) = match &s.ping {
            Some(p) if p.latency.samples > 0 => {
                let l = &p.latency;
                (
                    format!(
                        "{:.2}/{:.2}/{:.2}/{:.2}",
                        l.min_ms, l.avg_ms, l.max_ms, l.mdev_ms
                    ),
                    format!("{:.2}", l.p50_ms),
                    format!("{:.2}", l.p99_ms),
                )
            }
            _ => ("-".into(), "-".into(), "-".into()),
        };
        let (rr, tps) = match &s.udp_rr {
            Some(u) if u.latency.samples > 0 => (
                format!("{:.2}/{:.2}", u.latency.p50_ms, u.latency.p99_ms),
                format!("{:.0}", u.transactions_per_s),
            ),
            _ => ("-".into(), "-".into()),
        };
        let [l2r, r2l] = &r.paths;
        let _ = writeln!(
            out,
            "{:<22} {:<10} | {:>30} | {:>7} {:>7} | {:>15} {:>8} | {:>7.1} {:>7.1} | {:>19} | {:>9} | {:>9.3} {:>9.2}",
            r.name,
            l2r.qdisc,
            rtt,
            p50,
            p99,
            rr,
            tps,
            s.up_mbit,
            s.down_mbit,
            format!("{}+{}/{}+{}", l2r.drops, l2r.tap_drops, r2l.drops, r2l.tap_drops),
            format!("{}/{}", l2r.marks, r2l.marks),
            r.datapath.wakeups_per_frame(),
            r.datapath.cpu_ns_per_frame() / 1e3,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{ConfigResult, DatapathTotals, PathTotals, TestOptions};

    fn result(name: &str, datapath: DatapathTotals) -> ConfigResult {
        ConfigResult {
            name: name.into(),
            summary: Default::default(),
            paths: [PathTotals::default(), PathTotals::default()],
            datapath,
            final_qdiscs: Default::default(),
            raw: Default::default(),
        }
    }

    #[test]
    fn datapath_columns_are_per_frame_and_survive_zero_frames() {
        let report = Report {
            options: TestOptions {
                ping_interval: None,
                ..TestOptions::default()
            },
            results: vec![
                result(
                    "busy",
                    DatapathTotals {
                        frames: 1000,
                        wakeups: 250,
                        cpu_ns: 30_000_000,
                    },
                ),
                result("idle", DatapathTotals::default()),
            ],
        };
        let text = render(&report);
        assert!(text.lines().next().unwrap().contains("ping off"), "{text}");
        let row = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("no {name} row in\n{text}"))
                .to_string()
        };
        // 250 wake-ups and 30 ms of CPU over 1000 frames.
        assert!(row("busy").ends_with("|     0.250     30.00"), "{text}");
        assert!(row("idle").ends_with("|     0.000      0.00"), "{text}");
    }
}
