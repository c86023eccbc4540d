//! The TUI's panels as ratatui widgets, each rendering plain data from
//! `state` into a buffer area (and clipping to it): the link figures, the
//! qdisc tree, the per-flow table (a window of rows plus an aggregate row
//! for the rest, so 10,000 flows cost one screen), the time series and the
//! event log. Also the number formats they share.

use super::dir_label;
use super::state::{Event, EventKind, FlowRow, Sample, SortKey, TinSummary, TreeNode};
use crate::dir::Dir;
use crate::link::PathSnapshot;
use crate::qdisc::drr_ahead::AHEAD_TURNS;
use crate::qdisc::dump::FlowSummary;
use crate::time::{Instant, NS_PER_SEC};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Sparkline, Widget};
use std::collections::VecDeque;

/// `value` scaled by 1000 or 1024 steps with one decimal under 100:
/// `1.2M`, `512`, `34k`.
fn scaled(value: u64, step: f64, units: &[&str]) -> String {
    let mut v = value as f64;
    let mut i = 0;
    while v >= step && i + 1 < units.len() {
        v /= step;
        i += 1;
    }
    if i == 0 {
        format!("{value}{}", units[0])
    } else if v < 100.0 {
        format!("{v:.1}{}", units[i])
    } else {
        format!("{v:.0}{}", units[i])
    }
}

/// Bytes: `1514B`, `18.2KB`, `3.4MB` (powers of 1024).
pub fn fmt_bytes(b: u64) -> String {
    scaled(b, 1024.0, &["B", "KB", "MB", "GB", "TB"])
}

/// Bits per second: `96bit`, `9.9Mbit` (powers of 1000, like tc).
pub fn fmt_bits(bps: u64) -> String {
    scaled(bps, 1000.0, &["bit", "Kbit", "Mbit", "Gbit", "Tbit"])
}

/// Counts: `950`, `12.3k`, `4.1M`.
pub fn fmt_count(n: u64) -> String {
    scaled(n, 1000.0, &["", "k", "M", "G", "T"])
}

/// Microseconds: `850us`, `12.3ms`, `1.50s`.
pub fn fmt_us(us: u64) -> String {
    if us < 1000 {
        format!("{us}us")
    } else if us < 100_000 {
        format!("{:.1}ms", us as f64 / 1e3)
    } else if us < 1_000_000 {
        format!("{}ms", us / 1000)
    } else {
        format!("{:.2}s", us as f64 / 1e6)
    }
}

/// Seconds with milliseconds: `12.345s`.
pub fn fmt_at(ns: u64) -> String {
    format!("{}.{:03}s", ns / NS_PER_SEC, ns % NS_PER_SEC / 1_000_000)
}

/// `text` cut or padded to exactly `w` columns (cut text ends in `…`).
pub fn fit(text: &str, w: usize) -> String {
    let n = text.chars().count();
    if n <= w {
        format!("{text:<w$}")
    } else if w == 0 {
        String::new()
    } else {
        let mut s: String = text.chars().take(w - 1).collect();
        s.push('…');
        s
    }
}

/// `text` right-aligned in `w` columns (cut if longer).
fn rfit(text: &str, w: usize) -> String {
    if text.chars().count() > w {
        fit(text, w)
    } else {
        format!("{text:>w$}")
    }
}

const LABEL: Style = Style::new().fg(Color::DarkGray);
const VALUE: Style = Style::new().add_modifier(Modifier::BOLD);

fn kv<'a>(spans: &mut Vec<Span<'a>>, key: &'a str, value: String) {
    spans.push(Span::styled(key, LABEL));
    spans.push(Span::styled(value, VALUE));
    spans.push(Span::raw("  "));
}

/// The link of one direction: rates, delay, ring and BQL, coalescing, the
/// datapath's lateness, conservation counters and drops by reason.
pub struct LinkPanel<'a> {
    /// The direction's path.
    pub path: &'a PathSnapshot,
    /// Delivered bits/s over the recent window.
    pub achieved_bps: u64,
    /// The datapath's wake-up lateness p50, p99 and p99.9, µs.
    pub lateness_us: [u64; 3],
    /// The datapath's wake-ups so far (`epoll_wait` returns with events).
    pub wakeups: u64,
}

impl Widget for LinkPanel<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let p = self.path;
        let params = &p.params;
        let mut l1 = Vec::new();
        // First, so that a narrow terminal does not clip it away.
        if let Some(wait) = p.stall_ns() {
            kv(
                &mut l1,
                "STALLED ",
                format!("wire frame leaves in {}", fmt_us(wait / 1000)),
            );
        }
        let rate_bps = params.rate_bytes_ps * 8;
        kv(
            &mut l1,
            "rate ",
            if rate_bps == 0 {
                "unlimited".into()
            } else {
                fmt_bits(rate_bps)
            },
        );
        let util = (self.achieved_bps.saturating_mul(100))
            .checked_div(rate_bps)
            .map_or(String::new(), |pct| format!(" ({pct}%)"));
        kv(
            &mut l1,
            "achieved ",
            format!("{}{util}", fmt_bits(self.achieved_bps)),
        );
        kv(
            &mut l1,
            "delay ",
            fmt_us(params.delay_ns / crate::time::NS_PER_US),
        );
        kv(&mut l1, "mtu ", params.mtu.to_string());
        kv(&mut l1, "ovh ", format!("{}B", params.overhead));

        let mut l2 = Vec::new();
        kv(
            &mut l2,
            "ring ",
            format!(
                "{}/{} {}",
                p.ring_used,
                p.ring_size,
                fmt_bytes(p.ring_bytes)
            ),
        );
        match (p.bql_limit, p.bql_inflight) {
            (Some(limit), Some(inflight)) => kv(
                &mut l2,
                "BQL ",
                format!(
                    "limit {} inflight {}",
                    fmt_bytes(limit as u64),
                    fmt_bytes(inflight as u64)
                ),
            ),
            _ => kv(&mut l2, "BQL ", "off".into()),
        }
        kv(&mut l2, "requeues ", p.requeues.to_string());
        kv(
            &mut l2,
            "wire/prop/rx ",
            format!("{}/{}/{}", p.on_wire, p.in_flight, p.rx_held),
        );

        let mut l3 = Vec::new();
        // Under adaptive moderation net_dim's current profile, marked.
        let side = |(usecs, frames): (u32, u32), adaptive: bool| {
            let dim = if adaptive { " dim" } else { "" };
            format!("{usecs}us/{frames}f{dim}")
        };
        kv(
            &mut l3,
            "coal ",
            format!(
                "tx {} rx {}",
                side(p.moderation[0], params.tx_adaptive),
                side(p.moderation[1], params.rx_adaptive)
            ),
        );
        let [p50, p99, p999] = self.lateness_us;
        kv(
            &mut l3,
            "late ",
            format!(
                "p50 {} p99 {} p999 {}",
                fmt_us(p50),
                fmt_us(p99),
                fmt_us(p999)
            ),
        );
        kv(&mut l3, "wakeups ", fmt_count(self.wakeups));

        let c = &p.counters;
        let mut l4 = Vec::new();
        kv(
            &mut l4,
            "in ",
            format!("{}p {}", fmt_count(c.frames_in), fmt_bytes(c.bytes_in)),
        );
        kv(
            &mut l4,
            "out ",
            format!("{}p {}", fmt_count(c.frames_out), fmt_bytes(c.bytes_out)),
        );
        kv(&mut l4, "held ", p.held.to_string());
        l4.push(Span::styled("drops ", LABEL));
        if p.drops_by_reason.is_empty() {
            l4.push(Span::styled("0", VALUE));
        }
        for (i, (reason, n)) in p.drops_by_reason.iter().enumerate() {
            if i > 0 {
                l4.push(Span::raw(", "));
            }
            l4.push(Span::styled(
                format!("{reason} {}", fmt_count(*n)),
                Style::new().fg(Color::Red),
            ));
        }
        let lines: Vec<Line> = [l1, l2, l3, l4].into_iter().map(Line::from).collect();
        Paragraph::new(lines).render(area, buf);
    }
}

/// The qdisc tree as tc describes it: per node a header line (kind, id,
/// parent, options), a counters line and the xstats lines. Scrolls to keep
/// the selected node visible; highlights it when `selected` is set.
pub struct TreePanel<'a> {
    /// The nodes, flattened in display order.
    pub nodes: &'a [TreeNode],
    /// The highlighted node, if the tree has the focus.
    pub selected: Option<usize>,
}

impl TreePanel<'_> {
    fn node_lines(n: &TreeNode, highlight: bool) -> Vec<Line<'static>> {
        let indent = "  ".repeat(n.depth);
        let what = if n.is_class { "class" } else { "qdisc" };
        let head_style = if highlight {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new().fg(Color::Cyan)
        };
        let mut lines = vec![Line::from(vec![
            Span::raw(indent.clone()),
            Span::styled(
                format!("{what} {} {} {}", n.kind, n.id, n.parent),
                head_style.add_modifier(Modifier::BOLD),
            ),
            Span::styled(format!(" {}", n.options), head_style),
        ])];
        let s = &n.stats;
        let mut counters = vec![
            Span::raw(format!("{indent}  ")),
            Span::raw(format!(
                "Sent {} {}p ",
                fmt_bytes(s.bytes),
                fmt_count(s.packets)
            )),
            Span::styled(
                format!("drop {}", fmt_count(s.drops)),
                if s.drops > 0 {
                    Style::new().fg(Color::Red)
                } else {
                    Style::new()
                },
            ),
            Span::raw(format!(
                " over {} req {} ",
                fmt_count(s.overlimits),
                fmt_count(s.requeues)
            )),
            Span::styled(
                format!("backlog {} {}p", fmt_bytes(s.backlog), s.qlen),
                Style::new().fg(Color::Yellow),
            ),
        ];
        if let Some(r) = s.rate_est {
            // The rate estimator's reading (`est INTERVAL TIME_CONSTANT`).
            counters.push(Span::styled(
                format!(
                    " rate {} {}pps",
                    fmt_bits(r.bps.saturating_mul(8)),
                    fmt_count(r.pps)
                ),
                Style::new().fg(Color::Green),
            ));
        }
        lines.push(Line::from(counters));
        for x in &n.xstats {
            lines.push(Line::styled(format!("{indent}  {x}"), LABEL));
        }
        lines
    }
}

impl Widget for TreePanel<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let mut lines = Vec::new();
        let mut sel_span = (0, 0);
        for (i, n) in self.nodes.iter().enumerate() {
            let highlight = self.selected == Some(i);
            let nl = TreePanel::node_lines(n, highlight);
            if highlight {
                sel_span = (lines.len(), nl.len());
            }
            lines.extend(nl);
        }
        let h = area.height as usize;
        let (start, len) = sel_span;
        let offset = (start + len).saturating_sub(h).min(start);
        let visible: Vec<Line> = lines.into_iter().skip(offset).take(h).collect();
        Paragraph::new(visible).render(area, buf);
    }
}

/// Column widths of the flow table; the flow column takes what is left.
struct Columns {
    flow: usize,
    queue: usize,
    deficit: bool,
    share: bool,
}

/// Cells of a flow table row: flow, queue, backlog, pkts, share, sojourn,
/// deficit, codel, drops, ecn, throughput.
const CELLS: usize = 11;
/// The deficit column's index (shown on wide screens only).
const DEFICIT: usize = 6;
/// The share column's index (shown from 100 columns on).
const SHARE: usize = 4;

impl Columns {
    /// Fixed columns: queue 12, backlog 7, pkts 5, share 5, sojourn 7,
    /// codel 8, drops 6, ecn 5, throughput 8 (+ deficit 7 on wide
    /// screens), one space each.
    /// Under 100 columns the queue column is 8 wide and share is left out.
    fn for_width(w: usize) -> Columns {
        let (deficit, share) = (w >= 120, w >= 100);
        let queue = if share { 12 } else { 8 };
        let fixed = queue
            + 7
            + 5
            + 7
            + 8
            + 6
            + 5
            + 8
            + 9
            + if share { 6 } else { 0 }
            + if deficit { 8 } else { 0 };
        Columns {
            flow: w.saturating_sub(fixed).max(10),
            queue,
            deficit,
            share,
        }
    }

    /// The cells of one row, padded to their columns and separated by a
    /// space (`CELLS` values, deficit and share included). A row without a
    /// queue (the aggregate row) gives the queue's room to its label.
    fn cells(&self, cells: [&str; CELLS]) -> Vec<String> {
        let widths = [self.flow, self.queue, 7, 5, 5, 7, 7, 8, 6, 5, 8];
        let wide_label = cells[1].is_empty();
        let mut out = Vec::with_capacity(CELLS);
        for (i, (text, w)) in cells.iter().zip(widths).enumerate() {
            if (i == DEFICIT && !self.deficit) || (i == SHARE && !self.share) {
                continue;
            }
            let cell = match i {
                0 if wide_label => fit(text, w + 1 + self.queue),
                1 if wide_label => String::new(),
                0 => fit(text, w),
                1 => format!(" {}", fit(text, w)),
                _ => format!(" {}", rfit(text, w)),
            };
            out.push(cell);
        }
        out
    }

    fn line(&self, cells: [&str; CELLS]) -> String {
        self.cells(cells).concat()
    }
}

/// A share per mille as a percentage: `42%`, `7.5%`.
fn fmt_share(permille: u32) -> String {
    if permille >= 100 {
        format!("{}%", permille / 10)
    } else {
        format!("{}.{}%", permille / 10, permille % 10)
    }
}

/// The per-flow table: a header, a window of rows around the selection
/// (the top rows by the sort key when the selection is at the top), one
/// aggregate row for every other flow (rows off the window and the flows
/// the daemon's bounded snapshot did not list), and a detail line for the
/// selected flow: what stands before its newest frame and how long that
/// takes (the head of line), its queue state (CoDel's count, ldelay and
/// drop_next for an fq_codel queue), its frames in the link's queues and
/// the whole flow; the head of line gets a line of its own when the area
/// has one to spare. Work is bounded by the window, plus one pass summing
/// the rest.
pub struct FlowTable<'a> {
    /// The rows, sorted.
    pub rows: &'a [FlowRow],
    /// Flows the snapshot did not list, and their share of the throughput.
    pub unlisted: FlowSummary,
    /// The unlisted flows' share of the delivered rate, bits/s.
    pub unlisted_tput_bps: u64,
    /// The selected row.
    pub selected: usize,
    /// Highlight the selected row (the table has the focus).
    pub focused: bool,
    /// The sort key, named in the header.
    pub sort: SortKey,
    /// Largest first.
    pub sort_desc: bool,
    /// The selected flow's queue xstats (`App::flow_xstats`), shown in the
    /// detail line instead of its deficit and CoDel count.
    pub selected_xstats: Option<String>,
    /// The tins of the CAKE qdiscs (`DirState::tins`): one line under the
    /// header per CAKE qdisc, each tin's backlog, delays, drops and marks.
    pub tins: &'a [TinSummary],
}

/// A CAKE qdisc's tin line: `cake 1: Bulk 0B av 1.2ms pk 3.0ms sp 0us
/// 0 drops 0 marks │ Best Effort ...` (tc's `av_delay`, `pk_delay`,
/// `sp_delay`, `drops`, `marks` of each tin).
fn tin_line(tins: &[TinSummary]) -> String {
    let Some(first) = tins.first() else {
        return String::new();
    };
    let cells: Vec<String> = tins
        .iter()
        .map(|t| {
            let x = &t.stats;
            format!(
                "{} {} av {} pk {} sp {} {} drops {} marks",
                t.name,
                fmt_bytes(x.backlog_bytes.into()),
                fmt_us(x.avg_delay_us.into()),
                fmt_us(x.peak_delay_us.into()),
                fmt_us(x.base_delay_us.into()),
                fmt_count(x.dropped_packets.into()),
                fmt_count(x.ecn_marked_packets.into()),
            )
        })
        .collect();
    format!(
        "cake {} {}",
        super::state::handle_id(first.qdisc, false),
        cells.join(" │ ")
    )
}

impl FlowTable<'_> {
    /// Rows shown in an area of `height` lines: the header, the aggregate
    /// row and the detail line take three.
    pub fn window(height: u16, rows: usize, selected: usize) -> std::ops::Range<usize> {
        let cap = (height as usize).saturating_sub(3);
        if cap == 0 {
            return 0..0;
        }
        let start = (selected + 1).saturating_sub(cap).min(rows);
        start..(start + cap).min(rows)
    }
}

impl Widget for FlowTable<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let cols = Columns::for_width(area.width as usize);
        let sorted_cell = match self.sort {
            SortKey::Flow => 0,
            SortKey::Backlog => 2,
            SortKey::Packets => 3,
            SortKey::Sojourn => 5,
            SortKey::Drops => 8,
            SortKey::Marks => 9,
            SortKey::Throughput => 10,
        };
        let names = [
            "flow", "queue", "backlog", "pkts", "share", "sojourn", "deficit", "codel", "drops",
            "ecn", "tput",
        ];
        let head = Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED);
        let mut cells = cols.cells(names);
        // Without the deficit column, cells after it move one to the left.
        // Cells after a left-out column move one to the left.
        let sorted = sorted_cell
            - usize::from(!cols.deficit && sorted_cell > DEFICIT)
            - usize::from(!cols.share && sorted_cell > SHARE);
        let header: Vec<Span> = cells
            .drain(..)
            .enumerate()
            .map(|(i, c)| {
                if i == sorted {
                    Span::styled(c, head.fg(Color::Yellow))
                } else {
                    Span::styled(c, head)
                }
            })
            .collect();
        let mut lines = vec![Line::from(header)];
        for tins in self.tins.chunk_by(|a, b| a.qdisc == b.qdisc) {
            lines.push(Line::styled(tin_line(tins), LABEL));
        }
        let tin_lines = lines.len() as u16 - 1;
        if self.rows.is_empty() && self.unlisted.flows == 0 {
            lines.push(Line::styled(
                "no flows: nothing queued in the qdisc, the TX ring or on the wire",
                LABEL,
            ));
            Paragraph::new(lines).render(area, buf);
            return;
        }
        let win = FlowTable::window(
            area.height.saturating_sub(tin_lines),
            self.rows.len(),
            self.selected,
        );
        for (i, r) in self.rows[win.clone()].iter().enumerate() {
            let label = r
                .flow
                .as_ref()
                .map_or_else(|| format!("bucket {}", r.bucket), super::state::flow_label);
            let codel = if r.dropping {
                format!("drop {}", r.codel_count)
            } else if r.codel_count > 0 {
                r.codel_count.to_string()
            } else {
                "-".into()
            };
            let deficit = if r.queue.is_none() {
                r.deficit.to_string()
            } else {
                "-".into()
            };
            let queue = if r.queue_label.chars().count() > cols.queue {
                &r.queue_short
            } else {
                &r.queue_label
            };
            let text = cols.line([
                &label,
                queue,
                &fmt_bytes(r.backlog),
                &r.qlen.to_string(),
                &fmt_share(r.share_permille),
                &fmt_us(r.sojourn_ns / 1000),
                &deficit,
                &codel,
                &fmt_count(r.drops),
                &fmt_count(r.ecn_marks),
                &fmt_bits(r.throughput_bps),
            ]);
            let mut style = if r.gone_since.is_some() {
                Style::new().fg(Color::DarkGray).add_modifier(Modifier::DIM)
            } else if r.dropping {
                Style::new().fg(Color::Red)
            } else {
                Style::new()
            };
            if self.focused && win.start + i == self.selected {
                style = style.add_modifier(Modifier::REVERSED);
            }
            lines.push(Line::styled(text, style));
        }
        let off_window = self.rows.len() - win.len();
        let others = off_window as u64 + self.unlisted.flows;
        if others > 0 {
            let mut rest = self.unlisted;
            let mut tput = self.unlisted_tput_bps;
            for r in self.rows[..win.start].iter().chain(&self.rows[win.end..]) {
                rest.backlog += r.backlog;
                rest.qlen += r.qlen as u64;
                rest.max_head_sojourn_ns = rest.max_head_sojourn_ns.max(r.sojourn_ns);
                rest.drops += r.drops;
                rest.ecn_marks += r.ecn_marks;
                tput += r.throughput_bps;
            }
            let text = cols.line([
                &format!("+ {} other flows", fmt_count(others)),
                "",
                &fmt_bytes(rest.backlog),
                &fmt_count(rest.qlen),
                "",
                &format!("≤{}", fmt_us(rest.max_head_sojourn_ns / 1000)),
                "",
                "",
                &fmt_count(rest.drops),
                &fmt_count(rest.ecn_marks),
                &fmt_bits(tput),
            ]);
            lines.push(Line::styled(text, LABEL.add_modifier(Modifier::ITALIC)));
        }
        if let Some(r) = self.rows.get(self.selected) {
            let label = r
                .flow
                .as_ref()
                .map_or_else(|| "unknown flow".into(), super::state::flow_label);
            let state = match r.queue {
                Some(_) => format!("{}p in {}", r.qlen, r.queue_label),
                None => {
                    let xstats = self.selected_xstats.clone().unwrap_or_else(|| {
                        format!(
                            "deficit {} codel count {}{}",
                            r.deficit,
                            r.codel_count,
                            if r.dropping { " dropping" } else { "" }
                        )
                    });
                    match &r.cake {
                        Some(c) => format!(
                            "{xstats}  {}  {}",
                            r.queue_short,
                            super::state::cake_detail(c, r.flow.as_ref())
                        ),
                        None => format!("{xstats}  {}", r.queue_label),
                    }
                }
            };
            let drops: String = r
                .traffic
                .iter()
                .flat_map(|t| &t.drops)
                .map(|(reason, n)| format!(" {} {n}", reason.name()))
                .collect();
            let link: String = [
                ("ring", r.ring),
                ("wire", r.wire),
                ("requeued", r.requeued),
                ("rx held", r.rx_held),
            ]
            .iter()
            .filter(|(name, n)| *n > 0 || matches!(*name, "ring" | "wire"))
            .map(|(name, n)| format!("{name} {n}p"))
            .collect::<Vec<_>>()
            .join(" ");
            let number = format!(
                "#{} of {}{}:",
                self.selected + 1,
                self.rows.len(),
                if self.unlisted.flows > 0 {
                    " listed"
                } else {
                    ""
                },
            );
            let rest = format!(
                "{state}  {link}{}{drops}  {label}",
                if drops.is_empty() { "" } else { "  dropped" },
            );
            // The head of line first; on a line of its own when the area
            // has a line to spare.
            let head = head_of_line(r);
            let spare = (area.height as usize).saturating_sub(lines.len()) >= 2;
            match head {
                Some(h) if spare => {
                    lines.push(Line::styled(format!("{number} {rest}"), LABEL));
                    lines.push(Line::styled(format!("  head of line: {h}"), LABEL));
                }
                Some(h) => lines.push(Line::styled(format!("{number} {h} | {rest}"), LABEL)),
                None => lines.push(Line::styled(format!("{number} {rest}"), LABEL)),
            }
        }
        Paragraph::new(lines).render(area, buf);
    }
}

/// What stands before the row's newest frame and how long that takes at
/// the direction's rate: `new flow: served next, after 1p 1.5KB ≈1.2ms`
/// (a flow queue on fq_codel's new list with no other queue before it),
/// `newest after 27p 40KB ≈32.0ms (own 26p, 3 queues, 2 rounds)` (a flow
/// queue), `newest behind 623p 913KB ≈730ms (A 200p, B 113p)` (a queue
/// served in order), `newest after over 4096p 6.2MB, over 4.9ms (the
/// replay stops at 4096 turns)` (a flow queue too far back for the replay,
/// `qdisc::drr_ahead::AHEAD_TURNS`). None where nothing is worked out (the
/// wire, RX held).
fn head_of_line(r: &FlowRow) -> Option<String> {
    let a = r.ahead.as_ref()?;
    let delay = fmt_us(r.ahead_delay_ns / 1000);
    let size = format!("{}p {}", a.packets, fmt_bytes(a.bytes));
    if a.at_least {
        return Some(format!(
            "newest after over {size}, over {delay} (the replay stops at {AHEAD_TURNS} turns)"
        ));
    }
    Some(match a.drr {
        Some(t) if t.new_flow && t.queues == 0 => {
            format!("new flow: served next, after {size} ≈{delay}")
        }
        Some(t) => format!(
            "newest after {size} ≈{delay} (own {}p, {} queue{}, {} round{}{})",
            a.own_packets,
            t.queues,
            if t.queues == 1 { "" } else { "s" },
            t.rounds,
            if t.rounds == 1 { "" } else { "s" },
            if t.new_flow { ", new flow" } else { "" },
        ),
        None => {
            let who: Vec<String> = a
                .flows
                .iter()
                .map(|f| format!("{} {}p", f.flow, f.packets))
                .collect();
            let who = if who.is_empty() {
                String::new()
            } else {
                format!(" ({})", who.join(", "))
            };
            format!("newest behind {size} ≈{delay}{who}")
        }
    })
}

/// One labelled sparkline per series: latency, queue length, throughput of
/// both directions, drops and marks of the selected direction.
pub struct Charts<'a> {
    /// The selected direction (its drops and marks are charted).
    pub dir: Dir,
    /// Both directions' time series, by `Dir::index()`.
    pub history: [&'a VecDeque<Sample>; 2],
    /// Latency comes from flow sojourn times (else a backlog estimate).
    pub latency_from_flows: bool,
    /// Each direction's line rate, bits/s (0: unlimited): the top of its
    /// rate chart, so 2 Mbit/s on a 100 Mbit/s link reads as 2 % of it.
    pub line_bps: [u64; 2],
}

impl Widget for Charts<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        const LABEL_W: u16 = 24;
        let own = self.history[self.dir.index()];
        let other = self.dir.reverse();
        // Label, value, colour, direction, fixed top of the scale (`None`:
        // the largest value shown).
        type Series<'s> = (
            String,
            Box<dyn Fn(&Sample) -> u64 + 's>,
            Color,
            Dir,
            Option<u64>,
        );
        let line = |d: Dir| Some(self.line_bps[d.index()]).filter(|b| *b > 0);
        let latest = |d: Dir| self.history[d.index()].back().copied().unwrap_or_default();
        let peak = |f: &dyn Fn(&Sample) -> u64| own.iter().map(f).max().unwrap_or(0);
        let cur = latest(self.dir);
        let lat_name = if self.latency_from_flows {
            "sojourn"
        } else {
            "q-delay≈"
        };
        let series: Vec<Series> = vec![
            (
                format!(
                    "{lat_name} {} ^{}",
                    fmt_us(cur.latency_us),
                    fmt_us(peak(&|s| s.latency_us))
                ),
                Box::new(|s: &Sample| s.latency_us),
                Color::Yellow,
                self.dir,
                None,
            ),
            (
                format!("queue {}p ^{}p", cur.qlen, peak(&|s| s.qlen)),
                Box::new(|s: &Sample| s.qlen),
                Color::Magenta,
                self.dir,
                None,
            ),
            (
                format!("{} {}", dir_label(self.dir), fmt_bits(cur.throughput_bps)),
                Box::new(|s: &Sample| s.throughput_bps),
                Color::Green,
                self.dir,
                line(self.dir),
            ),
            (
                format!(
                    "{} {}",
                    dir_label(other),
                    fmt_bits(latest(other).throughput_bps)
                ),
                Box::new(|s: &Sample| s.throughput_bps),
                Color::Blue,
                other,
                line(other),
            ),
            (
                format!("drops {} marks {}", cur.drops, cur.marks),
                Box::new(|s: &Sample| s.drops + s.marks),
                Color::Red,
                self.dir,
                None,
            ),
        ];
        let n = series.len() as u16;
        let rows = Layout::vertical(vec![Constraint::Ratio(1, n as u32); n as usize]).split(area);
        for ((label, value, color, dir, top), row) in series.into_iter().zip(rows.iter()) {
            if row.height == 0 {
                continue;
            }
            let [l, r] =
                Layout::horizontal([Constraint::Length(LABEL_W), Constraint::Min(1)]).areas(*row);
            Paragraph::new(Line::styled(fit(&label, LABEL_W as usize - 1), LABEL)).render(l, buf);
            let hist = self.history[dir.index()];
            let w = r.width as usize;
            let data: Vec<u64> = hist
                .iter()
                .skip(hist.len().saturating_sub(w))
                .map(&value)
                .collect();
            let mut spark = Sparkline::default()
                .data(&data)
                .style(Style::new().fg(color));
            if let Some(top) = top {
                spark = spark.max(top);
            }
            spark.render(r, buf);
        }
    }
}

/// The newest events that fit, oldest first.
pub struct EventLog<'a> {
    /// The event log, newest last.
    pub events: &'a VecDeque<Event>,
    /// When the link came up: each event's time is counted from it, as the
    /// header's `t` is.
    pub since: Instant,
}

impl Widget for EventLog<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let h = area.height as usize;
        let lines: Vec<Line> = self
            .events
            .iter()
            .skip(self.events.len().saturating_sub(h))
            .map(|e| {
                let color = match e.kind {
                    EventKind::Config => Color::Cyan,
                    EventKind::Codel => Color::Yellow,
                    EventKind::Overflow => Color::Red,
                    EventKind::Command => Color::Green,
                    EventKind::Error => Color::LightRed,
                };
                Line::from(vec![
                    Span::styled(
                        format!("{:>10} ", fmt_at(e.at.saturating_since(self.since))),
                        LABEL,
                    ),
                    Span::styled(format!("{} ", e.dir.map_or("   ", dir_label)), LABEL),
                    Span::styled(e.text.clone(), Style::new().fg(color)),
                ])
            })
            .collect();
        Paragraph::new(lines).render(area, buf);
    }
}
