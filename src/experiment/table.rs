//! The comparison table of a test run, in the style of the netdev bufferbloat
//! threads: ping's rtt min/avg/max/mdev, p50/p99 of ping and UDP_RR, UDP_RR
//! transactions per second, TCP goodput per direction and Jain's fairness
//! index of the flows of each direction, and the daemon's
//! drops (in the link + refused by the receiving TAP) and ECN marks per
//! direction (`>` = left→right, `<` = right→left); then the datapath
//! thread's wake-ups and CPU time per frame over the whole run. By default
//! only the columns that fit a 100-column terminal (ping's avg, p50, p99,
//! UDP_RR's p99, goodput, drops); `--wide` prints them all. comfy-table
//! lays the table out: it sizes each column to its widest cell and, in the
//! default layout, wraps cells so that no line passes 100 columns. With
//! the L4S probes (`--l4s`) the classic probes' columns are the C latency
//! and two more give the L latency: the ECT(1) ping's and UDP_RR's p99,
//! in every layout but the compact one; with the scalable UDP sender
//! (`--scalable-udp`) a column gives its goodput and the CE marks it got.

use std::fmt::Write;

use comfy_table::{CellAlignment, ColumnConstraint, ContentArrangement, Table};

use super::Report;

/// The width the default layout fits.
pub const NARROW_WIDTH: u16 = 100;

/// Which layouts show a column.
#[derive(Clone, Copy, PartialEq)]
enum Shown {
    Always,
    Narrow,
    Wide,
    /// Every layout but the compact one, when the L4S probes ran.
    L4s,
    /// Every layout but the compact one, when the scalable sender ran.
    Scalable,
}

/// One column: its two header lines, alignment, the layouts that show it,
/// and the group it belongs to (groups are set apart by wider gaps).
struct Col {
    head: &'static str,
    unit: &'static str,
    left: bool,
    shown: Shown,
    group: u8,
}

const fn col(head: &'static str, unit: &'static str, shown: Shown, group: u8) -> Col {
    Col {
        head,
        unit,
        left: false,
        shown,
        group,
    }
}

use Shown::{Always, L4s, Narrow, Scalable, Wide};

/// Every column, in order; `cells` makes a row's cells in the same order.
const COLS: [Col; 20] = [
    Col {
        left: true,
        ..col("config", "", Always, 0)
    },
    Col {
        left: true,
        ..col("qdisc", "", Always, 0)
    },
    col("ping rtt min/avg/max/mdev", "ms", Wide, 1),
    col("ping", "avg ms", Narrow, 2),
    col("p50", "ms", Always, 2),
    col("p99", "ms", Always, 2),
    col("L ping", "p99 ms", L4s, 2),
    col("udp_rr p50/p99", "ms", Wide, 3),
    col("udp_rr", "p99 ms", Narrow, 3),
    col("trans/s", "", Wide, 3),
    col("L udp_rr", "p99 ms", L4s, 3),
    col("up", "Mbit/s", Always, 4),
    col("down", "Mbit/s", Always, 4),
    col("L4S udp", "Mbit/s:CE", Scalable, 4),
    col("fair >/<", "jain", Wide, 4),
    col("drops >/<", "link+tap", Wide, 5),
    col("drops >/<", "link+tap", Narrow, 5),
    col("marks >/<", "", Wide, 6),
    col("wakeups", "/frame", Wide, 7),
    col("cpu", "us/frame", Wide, 7),
];

/// Spaces between two columns of a group, and between groups.
const GAP: u16 = 1;
const GROUP_GAP: u16 = 3;

/// The cells of one configuration's row, one per column of `COLS`.
fn cells(r: &super::ConfigResult) -> [String; 20] {
    let s = &r.summary;
    let ping = s.ping.as_ref().filter(|p| p.latency.samples > 0);
    let ms = |v: f64| format!("{v:.2}");
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let rr = s.udp_rr.as_ref().filter(|u| u.latency.samples > 0);
    let ping_l = s.ping_l4s.as_ref().filter(|p| p.latency.samples > 0);
    let rr_l = s.udp_rr_l4s.as_ref().filter(|u| u.latency.samples > 0);
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
        or_dash(ping_l.map(|p| ms(p.latency.p99_ms))),
        or_dash(rr.map(|u| format!("{:.2}/{:.2}", u.latency.p50_ms, u.latency.p99_ms))),
        or_dash(rr.map(|u| ms(u.latency.p99_ms))),
        or_dash(rr.map(|u| format!("{:.0}", u.transactions_per_s))),
        or_dash(rr_l.map(|u| ms(u.latency.p99_ms))),
        format!("{:.1}", s.up_mbit),
        format!("{:.1}", s.down_mbit),
        or_dash(
            s.scalable
                .as_ref()
                .map(|u| format!("{:.1}:{}", u.mbit, u.ce_marks)),
        ),
        {
            let jain = |j: Option<f64>| j.map_or("-".into(), |j| format!("{j:.2}"));
            format!("{}/{}", jain(s.up_fairness()), jain(s.down_fairness()))
        },
        drops.clone(),
        drops,
        format!("{}/{}", l2r.marks, r2l.marks),
        format!("{:.3}", r.datapath.wakeups_per_frame()),
        format!("{:.2}", r.datapath.cpu_ns_per_frame() / 1e3),
    ]
}

/// Renders the table (one row per configuration) and a line on how it was
/// measured: the columns that fit 100 columns, or with `wide` all of them
/// (ping's min/max/mdev, UDP_RR's p50 and rate, the flows' fairness,
/// marks, the datapath's wake-ups and CPU per frame).
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
    if o.l4s {
        let _ = writeln!(
            out,
            "L4S probes (ECT(1)) beside the classic ones: L columns are theirs, the others classic (C)"
        );
    }
    for line in layout(report, wide, false, NARROW_WIDTH).lines() {
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// The table alone (its header lines and the rows) for a screen of
/// `width` columns: what the lesson screen shows of the phases so far. The
/// default layout from 100 columns up; narrower, only the columns every
/// layout has (ping's p50 and p99, goodput), wrapped to fit.
pub fn lines_at(report: &Report, width: u16) -> Vec<String> {
    let compact = width < NARROW_WIDTH;
    layout(report, false, compact, width)
        .lines()
        .map(|l| l.trim_end().to_string())
        .collect()
}

/// The laid-out table: every column with `wide`, else the default ones
/// (with `compact` only those every layout has) wrapped to fit `width`.
fn layout(report: &Report, wide: bool, compact: bool, width: u16) -> Table {
    let mut table = Table::new();
    table.load_style(comfy_table::presets::NOTHING);
    table.set_header(COLS.map(|c| format!("{}\n{}", c.head, c.unit)));
    for r in &report.results {
        table.add_row(cells(r));
    }
    if wide {
        table.set_content_arrangement(ContentArrangement::Disabled);
    } else {
        table
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(width);
    }
    let shown = |c: &Col| match c.shown {
        Always => true,
        Narrow => !wide && !compact,
        Wide => wide,
        L4s => report.options.l4s && !compact,
        Scalable => report.options.scalable && !compact,
    };
    let visible: Vec<&Col> = COLS.iter().filter(|c| shown(c)).collect();
    for (column, c) in table.column_iter_mut().zip(&COLS) {
        if !shown(c) {
            column.set_constraint(ColumnConstraint::Hidden);
            continue;
        }
        let next = visible.iter().skip_while(|v| !std::ptr::eq(**v, c)).nth(1);
        let gap = match next {
            None => 0,
            Some(n) if n.group == c.group => GAP,
            Some(_) => GROUP_GAP,
        };
        column.set_padding((0, gap));
        column.set_cell_alignment(if c.left {
            CellAlignment::Left
        } else {
            CellAlignment::Right
        });
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{ConfigResult, DatapathTotals, PathTotals, TestOptions};

    fn result(name: &str, datapath: DatapathTotals) -> ConfigResult {
        ConfigResult {
            name: name.into(),
            config: Default::default(),
            config_file: None,
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
            started: std::time::SystemTime::UNIX_EPOCH,
            kernel_release: String::new(),
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
        // (the marks, the gap between groups, then the two cells).
        assert!(row("busy").ends_with("0/0     0.250    30.00"), "{text}");
        assert!(row("idle").ends_with("0/0     0.000     0.00"), "{text}");
    }

    #[test]
    fn the_wide_table_has_jains_index_per_direction() {
        let mut r = result("hog", Default::default());
        r.summary.up_flows_mbit = vec![90.0, 0.0, 0.0];
        r.summary.down_flows_mbit = vec![30.0, 30.0, 30.0];
        let report = Report {
            options: TestOptions::default(),
            results: vec![r, result("no-flows", Default::default())],
            started: std::time::SystemTime::UNIX_EPOCH,
            kernel_release: String::new(),
        };
        let wide = render(&report, true);
        assert!(wide.contains("fair >/<"), "{wide}");
        assert!(wide.contains(" 0.33/1.00 "), "{wide}");
        assert!(wide.contains(" -/- "), "{wide}");
        assert!(!render(&report, false).contains("fair"));
    }

    #[test]
    fn a_long_name_wraps_to_fit_100_columns_and_no_number_is_cut() {
        let mut r = result(
            "a-configuration-with-a-very-long-file-name",
            Default::default(),
        );
        r.paths[0].drops = 123_456_789;
        r.paths[1].tap_drops = 987_654;
        r.summary.up_mbit = 95.61;
        let report = Report {
            options: TestOptions::default(),
            results: vec![r],
            started: std::time::SystemTime::UNIX_EPOCH,
            kernel_release: String::new(),
        };
        let narrow = render(&report, false);
        assert!(narrow.lines().all(|l| l.chars().count() <= 100), "{narrow}");
        assert!(narrow.contains("123456789+0/0+987654"), "{narrow}");
        assert!(narrow.contains(" 95.6 "), "{narrow}");
        // The name is wrapped, not cut: its pieces put together give it back.
        let name: String = narrow
            .lines()
            .skip(3)
            .map(|l| l.split_whitespace().next().unwrap_or(""))
            .collect();
        assert!(
            name.starts_with("a-configuration-with-a-very-long-file-name"),
            "{narrow}"
        );
    }
}
