//! The comparison table of a test run, in the style of the netdev bufferbloat
//! threads: ping's rtt min/avg/max/mdev, p50/p99 of ping and UDP_RR, UDP_RR
//! transactions per second, TCP goodput per direction, and the daemon's
//! drops (in the link + refused by the receiving TAP) and ECN marks per
//! direction (`>` = left→right, `<` = right→left); then the datapath
//! thread's wake-ups and CPU time per frame over the whole run. By default
//! only the columns that fit a 100-column terminal (ping's avg, p50, p99,
//! UDP_RR's p99, goodput, drops); `--wide` prints them all.

use std::fmt::Write;

use super::Report;

/// Which layouts show a column.
#[derive(Clone, Copy, PartialEq)]
enum Shown {
    Always,
    Narrow,
    Wide,
}

/// One column: its two header lines, width, alignment, the layouts that
/// show it, and the group it belongs to (groups are separated by `|`).
struct Col {
    head: &'static str,
    unit: &'static str,
    width: usize,
    left: bool,
    shown: Shown,
    group: u8,
}

const fn col(head: &'static str, unit: &'static str, width: usize, shown: Shown, group: u8) -> Col {
    Col {
        head,
        unit,
        width,
        left: false,
        shown,
        group,
    }
}

use Shown::{Always, Narrow, Wide};

/// Every column, in order; `cells` makes a row's cells in the same order.
const COLS: [Col; 16] = [
    Col {
        left: true,
        ..col("config", "", 20, Always, 0)
    },
    Col {
        left: true,
        ..col("qdisc", "", 10, Always, 0)
    },
    col("ping rtt min/avg/max/mdev ms", "", 30, Wide, 1),
    col("ping", "avg ms", 7, Narrow, 2),
    col("p50", "ms", 7, Always, 2),
    col("p99", "ms", 7, Always, 2),
    col("udp_rr p50/p99", "ms", 15, Wide, 3),
    col("udp_rr", "p99 ms", 8, Narrow, 3),
    col("trans/s", "", 8, Wide, 3),
    col("up", "Mbit/s", 6, Always, 4),
    col("down", "Mbit/s", 6, Always, 4),
    col("drops >/<", "link+tap", 19, Wide, 5),
    col("drops >/<", "link+tap", 13, Narrow, 5),
    col("marks >/<", "", 9, Wide, 6),
    col("wakeups", "/frame", 9, Wide, 7),
    col("cpu", "us/frame", 9, Wide, 7),
];

/// The cells of one configuration's row, one per column of `COLS`.
fn cells(r: &super::ConfigResult) -> [String; 16] {
    let s = &r.summary;
    let ping = s.ping.as_ref().filter(|p| p.latency.samples > 0);
    let ms = |v: f64| format!("{v:.2}");
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let rr = s.udp_rr.as_ref().filter(|u| u.latency.samples > 0);
    let [l2r, r2l] = &r.paths;
    let drops = format!(
        "{}+{}/{}+{}",
        l2r.drops, l2r.tap_drops, r2l.drops, r2l.tap_drops
    );
    [
        r.name.clone(),
        l2r.qdisc.clone(),
        or_dash(ping.map(|p| {
            let l = &p.latency;
            format!(
                "{:.2}/{:.2}/{:.2}/{:.2}",
                l.min_ms, l.avg_ms, l.max_ms, l.mdev_ms
            )
        })),
        or_dash(ping.map(|p| ms(p.latency.avg_ms))),
        or_dash(ping.map(|p| ms(p.latency.p50_ms))),
        or_dash(ping.map(|p| ms(p.latency.p99_ms))),
        or_dash(rr.map(|u| format!("{:.2}/{:.2}", u.latency.p50_ms, u.latency.p99_ms))),
        or_dash(rr.map(|u| ms(u.latency.p99_ms))),
        or_dash(rr.map(|u| format!("{:.0}", u.transactions_per_s))),
        format!("{:.1}", s.up_mbit),
        format!("{:.1}", s.down_mbit),
        drops.clone(),
        drops,
        format!("{}/{}", l2r.marks, r2l.marks),
        format!("{:.3}", r.datapath.wakeups_per_frame()),
        format!("{:.2}", r.datapath.cpu_ns_per_frame() / 1e3),
    ]
}

/// One line of the columns `wide` shows, groups separated by ` | `.
fn line(wide: bool, text: &[String]) -> String {
    let mut out = String::new();
    let mut group = None;
    for (c, t) in COLS.iter().zip(text) {
        let shown = match c.shown {
            Always => true,
            Narrow => !wide,
            Wide => wide,
        };
        if !shown {
            continue;
        }
        match group {
            Some(g) if g != c.group => out.push_str(" | "),
            Some(_) => out.push(' '),
            None => {}
        }
        group = Some(c.group);
        let w = c.width;
        if c.left {
            let _ = write!(out, "{t:<w$}");
        } else {
            let _ = write!(out, "{t:>w$}");
        }
    }
    out.trim_end().to_string()
}

/// Renders the table (one row per configuration) and a line on how it was
/// measured: the columns that fit 100 columns, or with `wide` all of them
/// (ping's min/max/mdev, UDP_RR's p50 and rate, marks, the datapath's
/// wake-ups and CPU per frame).
pub fn render(report: &Report, wide: bool) -> String {
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
    let heads = COLS.map(|c| c.head.to_string());
    let units = COLS.map(|c| c.unit.to_string());
    let _ = writeln!(out, "{}", line(wide, &heads));
    let _ = writeln!(out, "{}", line(wide, &units));
    for r in &report.results {
        let _ = writeln!(out, "{}", line(wide, &cells(r)));
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
        let text = render(&report, true);
        assert!(text.lines().next().unwrap().contains("ping off"), "{text}");
        let row = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("no {name} row in\n{text}"))
                .to_string()
        };
        // The default layout fits 100 columns, and keeps the rows' names.
        let narrow = render(&report, false);
        assert!(narrow.lines().all(|l| l.chars().count() <= 100), "{narrow}");
        assert!(narrow.lines().any(|l| l.starts_with("busy")), "{narrow}");
        assert!(!narrow.contains("us/frame") && text.contains("us/frame"));
        // 250 wake-ups and 30 ms of CPU over 1000 frames.
        assert!(row("busy").ends_with("|     0.250     30.00"), "{text}");
        assert!(row("idle").ends_with("|     0.000      0.00"), "{text}");
    }
}
