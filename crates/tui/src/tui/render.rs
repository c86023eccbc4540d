//! The screen: `draw` lays the panels of `widgets` out for the terminal
//! size (80×24 and up), adds the header, the footer (key hints, the set
//! prompt, errors) and the help and preset overlays. It reads `App` only.
//! `text_capture` renders into a test backend and returns the text, for
//! snapshot tests and screenshots for the documents.

use super::lesson_screen::wrapped_lines;
use super::probe_panel::{draw_probe_panel, Panel, TimeAxis};
use super::probes::ProbeView;
use super::state::{App, Focus, Mode, PROBE_CHART_S, PROBE_STATS_S};
use super::widgets::{fmt_at, Charts, EventLog, FlowTable, LinkPanel, TreePanel};
use super::{dir_label, Preset};
use crate::dir::Dir;
use crate::time::Instant;
use ratatui::backend::TestBackend;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::{Frame, Terminal};

/// The smallest screen the layout is made for.
pub const MIN_WIDTH: u16 = 80;
/// The smallest screen height the layout is made for, rows.
pub const MIN_HEIGHT: u16 = 24;

const TITLE: Style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);

/// A panel frame: a top rule carrying the title.
fn panel(title: String, focused: bool) -> Block<'static> {
    let style = if focused {
        TITLE.add_modifier(Modifier::REVERSED)
    } else {
        TITLE
    };
    Block::new()
        .borders(Borders::TOP)
        .border_style(Style::new().fg(Color::DarkGray))
        .title(Span::styled(title, style))
}

/// Heights of the middle (tree and charts), flow and event areas for a
/// screen of `height` lines (header 1, link 5, footer 1), before the flow
/// table gives the event log the lines it does not need.
fn split_heights(height: u16) -> (u16, u16, u16) {
    let events = if height < 30 { 3 } else { height / 6 };
    let rest = height.saturating_sub(1 + 5 + 1 + events);
    let middle = (rest * 2 / 5).max(6).min(rest);
    (middle, rest - middle, events)
}

/// While the probes run: the middle area (the probes' panel) takes 3/5 of
/// `rest` (the lines between the link panels and the event log), at least
/// 11 when that leaves the flow table 3.
fn probe_heights(rest: u16) -> (u16, u16) {
    let middle = (rest * 3 / 5).max(11.min(rest.saturating_sub(3)));
    (middle, rest - middle)
}

/// On a screen smaller than `MIN_WIDTH`×`MIN_HEIGHT`, says so in place of
/// `what` ("the TUI", "the lesson") and returns true.
pub(crate) fn too_small(frame: &mut Frame, what: &str) -> bool {
    let area = frame.area();
    if area.width >= MIN_WIDTH && area.height >= MIN_HEIGHT {
        return false;
    }
    let msg = format!(
        "bloatbox: the terminal is {}×{}; {what} needs at least {MIN_WIDTH}×{MIN_HEIGHT}. Enlarge it, or press q to quit.",
        area.width, area.height
    );
    frame.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), area);
    true
}

/// Draws the whole screen for `app`: header, link panels, charts, tree, flow
/// table, events and footer, with the help overlay or the set prompt over them
/// in those modes.
pub fn draw(frame: &mut Frame, app: &App) {
    let area = frame.area();
    if too_small(frame, "the TUI") {
        return;
    }
    let (mut mid_h, mut flows_h, mut events_h) = split_heights(area.height);
    if app.probes.is_some() {
        (mid_h, flows_h) = probe_heights(mid_h + flows_h);
    }
    // A short flow table leaves its spare lines to the event log: it needs
    // its title, header, rows, aggregate row and detail line.
    let view = app.view();
    let flow_lines = 4 + view.flows.len() + usize::from(view.unlisted.flows > 0);
    let need = u16::try_from(flow_lines.max(5)).unwrap_or(u16::MAX);
    if flows_h > need {
        events_h += flows_h - need;
        flows_h = need;
    }
    let [header, link, middle, flows, events, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(5),
        Constraint::Length(mid_h),
        Constraint::Length(flows_h),
        Constraint::Length(events_h),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(frame, app, header);

    let link_block = panel(format!(" link {} ", dir_label(app.dir)), false);
    let link_inner = link_block.inner(link);
    frame.render_widget(link_block, link);
    match (app.path(), &app.latest) {
        (Some(path), Some(snap)) => frame.render_widget(
            LinkPanel {
                path,
                achieved_bps: view.achieved_bps,
                lateness_us: snap.lateness_us,
                wakeups: snap.wakeups,
            },
            link_inner,
        ),
        _ => frame.render_widget(
            Paragraph::new("waiting for the first snapshot from the daemon…"),
            link_inner,
        ),
    }

    if let Some(view) = &app.probes {
        draw_probes(frame, app, view, middle);
    } else {
        draw_tree_and_charts(frame, app, middle);
    }

    let flows_focus = app.focus == Focus::Flows;
    let count = if view.unlisted.flows > 0 {
        format!(
            "{}, top {} by backlog",
            view.flows.len() as u64 + view.unlisted.flows,
            view.flows.len()
        )
    } else {
        view.flows.len().to_string()
    };
    let flows_block = panel(
        format!(
            " flows {} ({count}), sorted by {} {} ",
            dir_label(app.dir),
            app.sort.name(),
            if app.sort_desc { "↓" } else { "↑" }
        ),
        flows_focus,
    );
    let flows_inner = flows_block.inner(flows);
    frame.render_widget(flows_block, flows);
    frame.render_widget(
        FlowTable {
            rows: &view.flows,
            unlisted: view.unlisted,
            unlisted_tput_bps: view.unlisted_tput_bps,
            selected: app.flow_sel,
            focused: flows_focus,
            sort: app.sort,
            sort_desc: app.sort_desc,
            selected_xstats: view
                .flows
                .get(app.flow_sel)
                .and_then(|r| app.flow_xstats(r)),
            tins: &view.tins,
        },
        flows_inner,
    );

    let events_block = panel(format!(" events ({}) ", app.events.len()), false);
    let events_inner = events_block.inner(events);
    frame.render_widget(events_block, events);
    frame.render_widget(
        EventLog {
            events: &app.events,
            since: app.link_up().unwrap_or(Instant::ZERO),
        },
        events_inner,
    );

    draw_footer(frame, app, footer);
    match &app.mode {
        Mode::Help => draw_help(frame, area),
        Mode::Presets { selected } => draw_presets(frame, app, *selected, area),
        Mode::ConfirmQuit => draw_confirm_quit(frame, area),
        Mode::Normal | Mode::Set { .. } => {}
    }
}

/// The middle area while the probes are off: the qdisc tree and the
/// selected direction's history charts.
fn draw_tree_and_charts(frame: &mut Frame, app: &App, middle: Rect) {
    let view = app.view();
    let tree_pct = if frame.area().width >= 140 { 60 } else { 52 };
    let [tree, charts] = Layout::horizontal([
        Constraint::Percentage(tree_pct),
        Constraint::Percentage(100 - tree_pct),
    ])
    .areas(middle);
    let tree_focus = app.focus == Focus::Tree;
    let tree_block = panel(
        format!(
            " qdisc tree ({} node{}) ",
            view.tree.len(),
            if view.tree.len() == 1 { "" } else { "s" }
        ),
        tree_focus,
    );
    let tree_inner = tree_block.inner(tree);
    frame.render_widget(tree_block, tree);
    frame.render_widget(
        TreePanel {
            nodes: &view.tree,
            selected: tree_focus.then_some(app.tree_sel),
        },
        tree_inner,
    );
    let charts_block = panel(format!(" history ({} samples) ", view.history.len()), false)
        .borders(Borders::TOP | Borders::LEFT);
    let charts_inner = charts_block.inner(charts);
    frame.render_widget(charts_block, charts);
    frame.render_widget(
        Charts {
            dir: app.dir,
            history: [&app.dirs[0].history, &app.dirs[1].history],
            latency_from_flows: view.latency_from_flows,
            line_bps: Dir::ALL.map(|d| {
                app.latest
                    .as_ref()
                    .map_or(0, |s| s.bridge.path(d).params.rate_bytes_ps * 8)
            }),
        },
        charts_inner,
    );
}

/// The middle area while the probes run: their panel, the chart up to the
/// newest sample or snapshot over the time since the probes started (10 s
/// at least, `PROBE_CHART_S` at most).
fn draw_probes(frame: &mut Frame, app: &App, view: &ProbeView, middle: Rect) {
    let now = view
        .newest()
        .or_else(|| app.latest.as_ref().map(|s| s.taken_at.nanos() as f64 / 1e9))
        .unwrap_or(0.0);
    let span = (now - view.oldest().unwrap_or(now))
        .clamp(10.0, PROBE_CHART_S)
        .ceil();
    let panel = Panel {
        view,
        app,
        axis: TimeAxis {
            bounds: [now - span, now],
            labels: [
                format!("-{span:.0} s"),
                format!("-{:.0} s", span / 2.0),
                "now".to_string(),
            ],
        },
        title: format!(" probes L→R, last {PROBE_STATS_S:.0} s "),
    };
    draw_probe_panel(frame, &panel, middle);
}

fn draw_header(frame: &mut Frame, app: &App, area: Rect) {
    let dir_span = |d: Dir| {
        if d == app.dir {
            Span::styled(
                format!("[{}]", dir_label(d)),
                Style::new().fg(Color::Black).bg(Color::Cyan),
            )
        } else {
            Span::raw(format!(" {} ", dir_label(d)))
        }
    };
    let mut spans = vec![
        Span::styled(" bloatbox ", TITLE),
        dir_span(Dir::LeftToRight),
        Span::raw(" "),
        dir_span(Dir::RightToLeft),
    ];
    if let (Some(s), Some(up)) = (&app.latest, app.link_up()) {
        let root = &s.bridge.path(app.dir).qdisc.kind;
        spans.push(Span::raw(format!(
            "  t {}  root {root}",
            fmt_at(s.bridge.at.saturating_since(up))
        )));
    }
    if app.disconnected {
        spans.push(Span::styled(
            "  DISCONNECTED (retrying)",
            Style::new().fg(Color::White).bg(Color::Red),
        ));
    }
    if app.paused {
        spans.push(Span::styled(
            format!("  PAUSED ({} skipped)", app.skipped),
            Style::new().fg(Color::Black).bg(Color::Yellow),
        ));
    }
    spans.push(Span::styled(
        "  ? help  q quit",
        Style::new().fg(Color::DarkGray),
    ));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_footer(frame: &mut Frame, app: &App, area: Rect) {
    let line = match (&app.mode, &app.status) {
        (Mode::Set { input }, _) => Line::from(vec![
            Span::styled(format!("set {}> ", dir_label(app.dir)), TITLE),
            Span::raw(format!("{input}█")),
            Span::styled(
                "  rate|delay|ring|bql|tx-usecs|tx-frames|rx-usecs|rx-frames VALUE, Enter/Esc",
                Style::new().fg(Color::DarkGray),
            ),
        ]),
        (_, Some(status)) => Line::styled(status.clone(), Style::new().fg(Color::LightRed)),
        _ => Line::styled(
            "d dir  tab focus  ↑↓ select  s/S sort  p pause  r rate  l delay  g ring  b bql  c coalesce  e set  m qdisc",
            Style::new().fg(Color::DarkGray),
        ),
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// A box of `w`×`h` centred in `area` (clipped to it).
fn centred(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// The help screen: keys and what they do.
pub const HELP: &[(&str, &str)] = &[
    ("q", "up: stop the link and exit (asks); top: leave"),
    ("Ctrl-C", "the same as q, without asking"),
    ("?, Esc", "open / close this help"),
    ("p, space", "pause / resume the display"),
    ("d, 1, 2", "switch direction, or pick L→R / R→L"),
    ("tab", "focus the flow table or the qdisc tree"),
    ("↑↓ j k", "select a flow or a class"),
    ("PgUp PgDn", "move the selection by 10"),
    ("Home End", "first / last flow or class"),
    ("s, S", "next sort column / reverse the order"),
    ("r l g c", "prompt: rate, delay, ring depth, rx-usecs"),
    ("e, :", "prompt: FIELD VALUE (tx-frames 16) or a tc line"),
    ("b", "toggle BQL"),
    ("m", "switch the root qdisc (the menu of kinds)"),
    ("t", "start / stop the latency probes: ping, UDP_RR"),
];

fn draw_help(frame: &mut Frame, area: Rect) {
    let box_area = centred(area, 64, HELP.len() as u16 + 3);
    let mut lines: Vec<Line> = HELP
        .iter()
        .map(|(k, v)| {
            Line::from(vec![
                Span::styled(format!("{k:>10}  "), TITLE),
                Span::raw(*v),
            ])
        })
        .collect();
    lines.push(Line::styled(
        "changes apply to the selected direction; see the event log",
        Style::new().fg(Color::DarkGray),
    ));
    frame.render_widget(Clear, box_area);
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(Span::styled(" keys ", TITLE))),
        box_area,
    );
}

/// `q` in `bloatbox up`: the link stops with the TUI, so ask.
fn draw_confirm_quit(frame: &mut Frame, area: Rect) {
    let box_area = centred(area, 56, 5);
    let lines = vec![
        Line::raw("Quitting stops the link: the namespaces and TAPs go."),
        Line::from(vec![
            Span::styled("y", TITLE),
            Span::raw(" stop and quit   "),
            Span::styled("any other key", TITLE),
            Span::raw(" keep running"),
        ]),
        Line::styled(
            "(bloatbox top leaves a daemon running)",
            Style::new().fg(Color::DarkGray),
        ),
    ];
    frame.render_widget(Clear, box_area);
    frame.render_widget(
        Paragraph::new(lines)
            .block(Block::bordered().title(Span::styled(" stop the link? ", TITLE))),
        box_area,
    );
}

/// The width of the qdisc menu's box.
const MENU_WIDTH: u16 = 78;

fn draw_presets(frame: &mut Frame, app: &App, selected: usize, area: Rect) {
    let rate = app.path().map_or(0, |p| p.params.rate_bytes_ps);
    let menu = app.menu();
    let names: Vec<&str> = menu.iter().map(|p| p.name()).collect();
    let selected = selected.min(menu.len() - 1);
    let tc = menu[selected].tc_lines(app.dir, rate);
    draw_menu(frame, area, app.dir, &names, selected, tc);
}

/// The columns and rows of a menu of `entries` labels at most `widest`
/// characters wide, above `tc_rows` rows of tc lines, in `area`: as few
/// columns as fit its height (filled top to bottom, so that ↑↓ move down
/// a column), as many as fit the box's width at most.
pub fn menu_grid(entries: usize, widest: usize, tc_rows: u16, area: Rect) -> (usize, usize) {
    let spare = usize::from(area.height.saturating_sub(tc_rows + 5)).max(1);
    let max_cols = (usize::from(MENU_WIDTH - 2) / (widest + 1)).max(1);
    let cols = entries.div_ceil(spare).clamp(1, max_cols);
    (cols, entries.div_ceil(cols))
}

/// The qdisc menu of direction `dir` over `area`: the kinds `names`, each
/// with its key (`Preset::key`), `selected` highlighted, and its tc lines
/// `tc` below.
pub fn draw_menu(
    frame: &mut Frame,
    area: Rect,
    dir: Dir,
    names: &[&str],
    selected: usize,
    tc: Vec<String>,
) {
    let label = |i: usize| format!(" {} {}", Preset::key(i).unwrap_or(' '), names[i]);
    let widest = (0..names.len())
        .map(|i| label(i).chars().count())
        .max()
        .unwrap_or(0);
    // A line longer than the box (ETS's priomap) wraps at its words.
    let tc_rows: u16 = tc.iter().map(|l| wrapped_lines(l, MENU_WIDTH - 2)).sum();
    let (cols, rows) = menu_grid(names.len(), widest, tc_rows, area);
    let cell = usize::from(MENU_WIDTH - 2) / cols;
    let box_area = centred(area, MENU_WIDTH, rows as u16 + tc_rows + 5);
    let mut lines: Vec<Line> = (0..rows)
        .map(|row| {
            let mut spans = Vec::new();
            for (col, i) in (0..cols).map(|c| (c, c * rows + row)) {
                if i >= names.len() {
                    break;
                }
                let text = label(i);
                let pad = if col + 1 < cols {
                    cell.saturating_sub(text.chars().count())
                } else {
                    0
                };
                spans.push(if i == selected {
                    Span::styled(text, Style::new().add_modifier(Modifier::REVERSED))
                } else {
                    Span::raw(text)
                });
                spans.push(Span::raw(" ".repeat(pad)));
            }
            Line::from(spans)
        })
        .collect();
    lines.push(Line::raw(""));
    lines.extend(
        tc.into_iter()
            .map(|l| Line::styled(l, Style::new().fg(Color::DarkGray))),
    );
    // The keys: the digits, then letters past nine entries.
    let keys = match names.len() {
        0..=9 => format!("1-{}", names.len()),
        10 => "1-9 a".to_string(),
        n => format!("1-9 a-{}", Preset::key(n - 1).unwrap_or('z')),
    };
    frame.render_widget(Clear, box_area);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(Block::bordered().title(Span::styled(
                format!(" root qdisc of {} ({keys}, ↑↓ Enter, Esc) ", dir_label(dir)),
                TITLE,
            ))),
        box_area,
    );
}

/// The screen `app` draws at `width`×`height`, as text: one line per row,
/// trailing spaces removed.
pub fn text_capture(app: &App, width: u16, height: u16) -> String {
    capture(width, height, |f| draw(f, app))
}

/// What `draw_screen` draws at `width`×`height`, as text: one line per
/// row, trailing spaces removed.
pub fn capture(width: u16, height: u16, draw_screen: impl FnOnce(&mut Frame)) -> String {
    let mut terminal =
        Terminal::new(TestBackend::new(width, height)).expect("a test backend always opens");
    terminal
        .draw(draw_screen)
        .expect("drawing into a test backend cannot fail");
    let buf = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
