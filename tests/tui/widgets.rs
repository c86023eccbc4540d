//! The TUI's widgets rendered alone into a ratatui `Buffer`: number
//! formats, the link panel, the flow table's window and aggregate row,
//! the tree's scrolling, charts and the event log, at normal and
//! degenerate sizes.

use bloatbox::dir::Dir;
use bloatbox::packet::FlowKey;
use bloatbox::qdisc::dump::FlowSummary;
use bloatbox::qdisc::QdiscStats;
use bloatbox::time::{Instant, NS_PER_MS};
use bloatbox::tui::fixtures::Scenario;
use bloatbox::tui::state::{Event, EventKind, FlowRow, Sample, SortKey, TreeNode};
use bloatbox::tui::widgets::{
    fit, fmt_at, fmt_bits, fmt_bytes, fmt_count, fmt_us, Charts, EventLog, FlowTable, LinkPanel,
    TreePanel,
};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;
use std::collections::VecDeque;

fn render(w: impl Widget, width: u16, height: u16) -> Vec<String> {
    let mut buf = Buffer::empty(Rect::new(0, 0, width, height));
    w.render(buf.area, &mut buf);
    (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect()
}

#[test]
fn number_formats() {
    assert_eq!(fmt_bytes(0), "0B");
    assert_eq!(fmt_bytes(1023), "1023B");
    assert_eq!(fmt_bytes(1024), "1.0KB");
    assert_eq!(fmt_bytes(1536 * 1024), "1.5MB");
    assert_eq!(fmt_bytes(200 * 1024), "200KB");
    assert_eq!(fmt_bits(96), "96bit");
    assert_eq!(fmt_bits(10_000_000), "10.0Mbit");
    assert_eq!(fmt_bits(999_999), "1000Kbit");
    assert_eq!(fmt_count(950), "950");
    assert_eq!(fmt_count(12_345), "12.3k");
    assert!(fmt_count(u64::MAX).ends_with('T'));
    assert!(fmt_bytes(u64::MAX).ends_with("TB"));
    assert_eq!(fmt_us(850), "850us");
    assert_eq!(fmt_us(12_345), "12.3ms");
    assert_eq!(fmt_us(250_000), "250ms");
    assert_eq!(fmt_us(1_500_000), "1.50s");
    assert_eq!(fmt_at(12_345_678_901), "12.345s");
    assert_eq!(fit("abc", 5), "abc  ");
    assert_eq!(fit("abcdef", 4), "abc…");
    assert_eq!(fit("abc", 0), "");
    assert_eq!(fit("→→→", 2), "→…");
}

#[test]
fn link_panel_shows_ring_bql_coalescing_lateness_and_drops() {
    let mut s = Scenario::pfifo_fast_under_load();
    let snap = s.snapshots(5, 100 * NS_PER_MS).pop().unwrap();
    let path = snap.bridge.path(Dir::LeftToRight);
    let lines = render(
        LinkPanel {
            path,
            achieved_bps: 5_000_000,
            lateness_us: [14, 92, 1350],
            wakeups: 12_345,
        },
        100,
        4,
    );
    assert!(
        lines[0].starts_with("rate 10.0Mbit  achieved 5.0Mbit (50%)  delay 10.0ms"),
        "{lines:?}"
    );
    assert!(
        lines[1].contains(&format!("ring {}/256", path.ring_used)),
        "{lines:?}"
    );
    assert!(lines[1].contains("BQL limit"), "{lines:?}");
    assert!(lines[2].contains("tx 0us/1f rx 0us/1f"), "{lines:?}");
    assert!(
        lines[2].contains("p50 14us p99 92us p999 1.4ms"),
        "{lines:?}"
    );
    assert!(lines[2].contains("wakeups 12.3k"), "{lines:?}");
    assert!(lines[3].contains("drops 0"), "{lines:?}");

    // BQL off, unlimited rate, drops by reason.
    let mut p = path.clone();
    p.bql_limit = None;
    p.bql_inflight = None;
    p.params.rate_bytes_ps = 0;
    p.drops_by_reason.insert("queue_full", 1500);
    p.drops_by_reason.insert("codel", 3);
    // The panel of `path` at 120 columns with nothing achieved or late.
    let quiet = |path: &_| {
        render(
            LinkPanel {
                path,
                achieved_bps: 1,
                lateness_us: [0; 3],
                wakeups: 0,
            },
            120,
            4,
        )
    };
    let lines = quiet(&p);
    assert!(
        lines[0].starts_with("rate unlimited  achieved 1bit  delay"),
        "{lines:?}"
    );
    assert!(lines[1].contains("BQL off"), "{lines:?}");
    assert!(
        lines[3].ends_with("drops codel 3, queue_full 1.5k"),
        "{lines:?}"
    );
    // Adaptive RX: net_dim's current profile, not the ethtool value.
    let mut dim = path.clone();
    dim.params.rx_adaptive = true;
    dim.params.rx_usecs = 50;
    dim.moderation[1] = (8, 256);
    let lines = quiet(&dim);
    assert!(lines[2].contains("tx 0us/1f rx 8us/256f dim"), "{lines:?}");
    // A stalled wire (a rate typo) leads the first line, even at 80 columns.
    let mut stalled = path.clone();
    stalled.params.rate_bytes_ps = 12;
    stalled.wire_departs = Some(stalled.at + 126 * bloatbox::time::NS_PER_SEC);
    let lines = render(
        LinkPanel {
            path: &stalled,
            achieved_bps: 0,
            lateness_us: [0; 3],
            wakeups: 0,
        },
        80,
        4,
    );
    assert!(
        lines[0].starts_with("STALLED wire frame leaves in 126.00s  rate 96bit"),
        "{lines:?}"
    );
    let lines = render(
        LinkPanel {
            path,
            achieved_bps: 0,
            lateness_us: [0; 3],
            wakeups: 0,
        },
        80,
        4,
    );
    assert!(!lines[0].contains("STALLED"), "{lines:?}");
    // Clipped, never panicking, in tiny areas.
    for (w, h) in [(1, 1), (10, 2), (0, 0)] {
        render(
            LinkPanel {
                path: &p,
                achieved_bps: 0,
                lateness_us: [0; 3],
                wakeups: 0,
            },
            w,
            h,
        );
    }
}

fn row(i: u32, backlog: u64) -> FlowRow {
    let mut src = [0u8; 16];
    src[10] = 0xff;
    src[11] = 0xff;
    src[12..].copy_from_slice(&[10, 0, (i >> 8) as u8, i as u8]);
    let mut dst = src;
    dst[15] = 254;
    FlowRow {
        qdisc: 0x8001_0000,
        queue: None,
        bucket: i,
        queue_label: format!("8001:{:x}", i + 1),
        queue_short: format!("8001:{:x}", i + 1),
        hash: i,
        share_permille: 0,
        ring: 0,
        wire: 0,
        requeued: 0,
        rx_held: 0,
        traffic: None,
        ahead: None,
        ahead_delay_ns: 0,
        gone_since: None,
        cake: None,
        flow: Some(FlowKey {
            src,
            dst,
            src_port: 1000 + i as u16,
            dst_port: 80,
            proto: 17,
        }),
        backlog,
        qlen: (backlog / 100) as u32,
        sojourn_ns: backlog * 1000,
        deficit: 1514,
        codel_count: i % 3,
        dropping: i.is_multiple_of(7),
        drops: 1,
        ecn_marks: 2,
        throughput_bps: 1000,
    }
}

#[test]
fn flow_window_follows_the_selection() {
    assert_eq!(FlowTable::window(10, 100, 0), 0..7);
    assert_eq!(FlowTable::window(10, 100, 6), 0..7);
    assert_eq!(FlowTable::window(10, 100, 7), 1..8);
    assert_eq!(FlowTable::window(10, 100, 99), 93..100);
    assert_eq!(FlowTable::window(10, 3, 0), 0..3);
    assert_eq!(FlowTable::window(2, 100, 50), 0..0, "no room for rows");
    assert_eq!(FlowTable::window(10, 0, 0), 0..0);
}

#[test]
fn ten_thousand_rows_render_a_window_and_one_exact_aggregate_row() {
    let rows: Vec<FlowRow> = (0..10_000).map(|i| row(i, 10_000 - i as u64)).collect();
    for (sel, w, h) in [(0usize, 80u16, 10u16), (5000, 160, 20), (9999, 100, 6)] {
        let lines = render(
            FlowTable {
                rows: &rows,
                unlisted: FlowSummary::default(),
                unlisted_tput_bps: 0,
                selected: sel,
                focused: true,
                sort: SortKey::Backlog,
                sort_desc: true,
                selected_xstats: None,
                tins: &[],
            },
            w,
            h,
        );
        let win = FlowTable::window(h, rows.len(), sel);
        assert!(win.contains(&sel));
        let shown: Vec<&String> = lines.iter().filter(|l| l.starts_with("10.0.")).collect();
        assert_eq!(shown.len(), win.len(), "{lines:#?}");
        let agg = lines
            .iter()
            .find(|l| l.starts_with("+ "))
            .expect("aggregate row");
        let others: Vec<&FlowRow> = rows[..win.start].iter().chain(&rows[win.end..]).collect();
        assert!(agg.starts_with(&format!("+ {} other flows", fmt_count(others.len() as u64))));
        let backlog: u64 = others.iter().map(|r| r.backlog).sum();
        assert!(
            agg.contains(&fmt_bytes(backlog)),
            "{agg} / {}",
            fmt_bytes(backlog)
        );
        assert!(agg.contains(&fmt_bits(others.len() as u64 * 1000)), "{agg}");
        let detail = lines.last().unwrap();
        assert!(
            detail.starts_with(&format!("#{} of 10000:", sel + 1)),
            "{detail}"
        );
        assert!(lines.iter().all(|l| l.chars().count() <= w as usize));
    }
}

#[test]
fn flows_left_out_of_the_snapshot_join_the_aggregate_row() {
    // Listed rows with sojourns of 1-2 ms, the unlisted ones up to 40 ms.
    let rows: Vec<FlowRow> = (0..64).map(|i| row(i, 2_000 - i as u64)).collect();
    let unlisted = FlowSummary {
        flows: 9_936,
        backlog: 5_000_000,
        qlen: 9_936,
        max_head_sojourn_ns: 40_000_000,
        drops: 12,
        ecn_marks: 3,
        sent_bytes: 0,
    };
    let lines = render(
        FlowTable {
            rows: &rows,
            unlisted,
            unlisted_tput_bps: 2_000_000,
            selected: 0,
            focused: true,
            sort: SortKey::Backlog,
            sort_desc: true,
            selected_xstats: None,
            tins: &[],
        },
        80,
        10,
    );
    let win = FlowTable::window(10, rows.len(), 0);
    let off: Vec<&FlowRow> = rows[win.end..].iter().collect();
    let agg = lines
        .iter()
        .find(|l| l.starts_with("+ "))
        .expect("aggregate row");
    let others = off.len() as u64 + unlisted.flows;
    assert!(
        agg.starts_with(&format!("+ {} other flows", fmt_count(others))),
        "{agg}"
    );
    let backlog = unlisted.backlog + off.iter().map(|r| r.backlog).sum::<u64>();
    assert!(agg.contains(&fmt_bytes(backlog)), "{agg}");
    assert!(agg.contains("≤40.0ms"), "{agg}");
    let tput = 2_000_000 + off.len() as u64 * 1000;
    assert!(agg.contains(&fmt_bits(tput)), "{agg}");
    let detail = lines.last().unwrap();
    assert!(detail.starts_with("#1 of 64 listed:"), "{detail}");
    // Only unlisted flows: no "no flow queues" hint, just the aggregate.
    let only = render(
        FlowTable {
            rows: &[],
            unlisted,
            unlisted_tput_bps: 0,
            selected: 0,
            focused: true,
            sort: SortKey::Backlog,
            sort_desc: true,
            selected_xstats: None,
            tins: &[],
        },
        80,
        6,
    );
    assert!(only[1].starts_with("+ 9.9k other flows"), "{only:#?}");
}

#[test]
fn flow_rows_show_codel_state_and_adapt_columns_to_width() {
    let rows = vec![row(7, 3000), row(1, 1500), row(3, 100)];
    let table = |w| {
        render(
            FlowTable {
                rows: &rows,
                unlisted: FlowSummary::default(),
                unlisted_tput_bps: 0,
                selected: 0,
                focused: false,
                sort: SortKey::Sojourn,
                sort_desc: false,
                selected_xstats: Some("allot 1514".into()),
                tins: &[],
            },
            w,
            8,
        )
    };
    let narrow = table(80);
    assert!(narrow[0].starts_with("flow"));
    assert!(
        !narrow[0].contains("deficit"),
        "no deficit column under 110 columns"
    );
    assert!(
        narrow[1].contains("drop 1"),
        "row 7 is dropping: {}",
        narrow[1]
    );
    assert!(
        narrow[2].contains(" 1 "),
        "count 1, not dropping: {}",
        narrow[2]
    );
    assert!(narrow[3].contains(" - "), "count 0: {}", narrow[3]);
    let wide = table(140);
    assert!(wide[0].contains("deficit"));
    assert!(
        wide[1].contains("10.0.0.7:1007→10.0.0.254:80 udp"),
        "{}",
        wide[1]
    );
    assert!(
        !wide.iter().any(|l| l.starts_with("+ ")),
        "no aggregate when all fit"
    );
    // Empty and degenerate.
    let empty = render(
        FlowTable {
            rows: &[],
            unlisted: FlowSummary::default(),
            unlisted_tput_bps: 0,
            selected: 0,
            focused: true,
            sort: SortKey::Flow,
            sort_desc: true,
            selected_xstats: None,
            tins: &[],
        },
        80,
        4,
    );
    assert!(empty[1].starts_with("no flows"));
    for (w, h) in [(1, 1), (5, 3), (80, 1), (0, 0)] {
        render(
            FlowTable {
                rows: &rows,
                unlisted: FlowSummary::default(),
                unlisted_tput_bps: 0,
                selected: 2,
                focused: true,
                sort: SortKey::Flow,
                sort_desc: true,
                selected_xstats: None,
                tins: &[],
            },
            w,
            h,
        );
    }
}

fn node(i: usize) -> TreeNode {
    TreeNode {
        depth: i % 3,
        is_class: i % 2 == 1,
        kind: "htb".into(),
        id: format!("1:{i:x}"),
        parent: "parent 1:".into(),
        options: format!("rate {i}Mbit ceil {i}Mbit"),
        stats: QdiscStats {
            bytes: 1_000_000,
            packets: 1000,
            drops: i as u64,
            backlog: 3028,
            qlen: 2,
            ..QdiscStats::default()
        },
        xstats: vec![
            format!("lended: {i} borrowed: 0 giants: 0"),
            "tokens: 1 ctokens: 2".into(),
        ],
    }
}

#[test]
fn tree_scrolls_to_the_selected_node() {
    let nodes: Vec<TreeNode> = (0..20).map(node).collect();
    // The tree in 80×8 with `selected` selected.
    let view = |selected| {
        render(
            TreePanel {
                nodes: &nodes,
                selected,
            },
            80,
            8,
        )
    };
    let lines = view(None);
    assert!(
        lines[0].starts_with("qdisc htb 1:0 parent 1: rate 0Mbit"),
        "{lines:?}"
    );
    assert_eq!(
        lines[1],
        "  Sent 977KB 1.0kp drop 0 over 0 req 0 backlog 3.0KB 2p"
    );
    assert_eq!(lines[2], "  lended: 0 borrowed: 0 giants: 0");
    // The last node (4 lines each) is selected: its lines end the view.
    let lines = view(Some(19));
    // (node 19 is at depth 1: two spaces of indent)
    assert!(
        lines[4].starts_with("  class htb 1:13 parent 1:"),
        "{lines:?}"
    );
    assert_eq!(lines[7], "    tokens: 1 ctokens: 2");
    // A selection already in view does not scroll.
    let lines = view(Some(1));
    assert!(lines[0].starts_with("qdisc htb 1:0"), "{lines:?}");
    render(
        TreePanel {
            nodes: &nodes,
            selected: Some(5),
        },
        3,
        1,
    );
}

#[test]
fn a_node_with_a_rate_estimator_shows_its_rate_on_the_counters_line() {
    let mut with = node(1);
    with.stats.rate_est = Some(bloatbox::qdisc::estimator::RateEst {
        bps: 1_240_000,
        pps: 830,
    });
    let nodes = [with, node(2)];
    let lines = render(
        TreePanel {
            nodes: &nodes,
            selected: None,
        },
        100,
        8,
    );
    assert_eq!(
        lines[1],
        "    Sent 977KB 1.0kp drop 1 over 0 req 0 backlog 3.0KB 2p rate 9.9Mbit 830pps"
    );
    // Without one, nothing is added.
    assert_eq!(
        lines[5],
        "      Sent 977KB 1.0kp drop 2 over 0 req 0 backlog 3.0KB 2p"
    );
}

#[test]
fn charts_label_the_latest_values_and_draw_the_history() {
    let mut h0 = VecDeque::new();
    for i in 0..50u64 {
        h0.push_back(Sample {
            at: Instant::from_millis(i * 100),
            latency_us: i * 1000,
            qlen: i,
            throughput_bps: 10_000_000,
            drops: i % 2,
            marks: 1,
        });
    }
    let h1 = VecDeque::new();
    // The charts of `dir` in `w`×`h`.
    let charts = |dir, latency_from_flows, w, h| {
        render(
            Charts {
                dir,
                history: [&h0, &h1],
                latency_from_flows,
                line_bps: [0, 0],
            },
            w,
            h,
        )
    };
    let lines = charts(Dir::LeftToRight, true, 60, 5);
    assert!(lines[0].starts_with("sojourn 49.0ms ^49.0ms"), "{lines:?}");
    assert!(
        lines[0].ends_with('█'),
        "the newest sample is the highest: {lines:?}"
    );
    assert!(lines[1].starts_with("queue 49p ^49p"));
    assert!(lines[2].starts_with("L→R 10.0Mbit"));
    assert_eq!(lines[3], "R→L 0bit", "no samples: no bars");
    assert!(lines[4].starts_with("drops 1 marks 1"));
    let lines = charts(Dir::RightToLeft, false, 60, 5);
    assert!(lines[0].starts_with("q-delay≈ 0us ^0us"), "{lines:?}");
    assert!(lines[3].starts_with("L→R 10.0Mbit"));
    for (w, h) in [(1, 1), (30, 2), (0, 0)] {
        charts(Dir::LeftToRight, true, w, h);
    }
}

#[test]
fn event_log_shows_the_newest_that_fit_timed_from_the_links_start() {
    let events: VecDeque<Event> = (0..10u64)
        .map(|i| Event {
            at: Instant::from_millis(i * 1500),
            dir: i.is_multiple_of(2).then_some(Dir::RightToLeft),
            kind: EventKind::Config,
            text: format!("event {i}"),
        })
        .collect();
    // Times count from the link's start, as the header's `t` does.
    let since = Instant::from_millis(1000);
    let lines = render(
        EventLog {
            events: &events,
            since,
        },
        60,
        3,
    );
    assert_eq!(
        lines,
        vec![
            "    9.500s     event 7",
            "   11.000s R→L event 8",
            "   12.500s     event 9"
        ]
    );
}

/// Each rate chart is scaled to its direction's line rate: 2 Mbit/s on a
/// 100 Mbit/s link draws low bars, 100 Mbit/s full ones, where a chart
/// scaled to itself would draw both full.
#[test]
fn rate_charts_are_scaled_to_the_line_rate() {
    let history = |bps: u64| -> VecDeque<Sample> {
        (0..40u64)
            .map(|i| Sample {
                at: Instant::from_millis(i * 100),
                throughput_bps: bps,
                ..Sample::default()
            })
            .collect()
    };
    let (slow, full) = (history(2_000_000), history(100_000_000));
    let bars = |h: &VecDeque<Sample>, line_bps: u64| -> String {
        let lines = render(
            Charts {
                dir: Dir::LeftToRight,
                history: [h, h],
                latency_from_flows: true,
                line_bps: [line_bps, line_bps],
            },
            64,
            5,
        );
        lines[2].chars().skip(24).collect()
    };
    let full_bar = "█".repeat(40);
    assert!(bars(&full, 100_000_000).contains(&full_bar));
    let low = bars(&slow, 100_000_000);
    assert!(!low.contains('█'), "2% of the line rate: {low:?}");
    // Unlimited link (0): scaled to the largest value shown, as before.
    assert!(bars(&slow, 0).contains(&full_bar));
}
