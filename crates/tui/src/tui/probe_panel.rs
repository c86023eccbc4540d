//! The measured-latency panel, drawn by the lesson's screen and by the live
//! TUI while its probes run: on the left the probes' round trips as a chart
//! (ping and UDP_RR points, and as a line the RTT the link's own queue
//! delays predict), on the right each probe's newest RTT and percentiles,
//! then each direction's queue delay with the UDP_RR probe's one-way
//! percentiles for that direction under it, and the RTT the link predicts.
//! Colours are the terminal's red, magenta and blue on its default
//! background, so that the panel reads on a white background as well as a
//! dark one. It reads a `ProbeView` and the `App` fed the same snapshots.

use super::dir_label;
use super::probes::{link_rtt_ms, ProbeView, QueuePoint};
use super::state::App;
use super::widgets::fit;
use crate::dir::Dir;
use crate::load::feed::Probe;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph};
use ratatui::Frame;

/// Bold text.
pub const BOLD: Style = Style::new().add_modifier(Modifier::BOLD);
/// Hints and rules.
pub const HINT: Style = Style::new().fg(Color::DarkGray);
/// The colour of each probe (`Probe::ALL` order) and of the link's line.
const PROBE_COLOUR: [Color; Probe::ALL.len()] =
    [Color::Red, Color::Magenta, Color::LightGreen, Color::Cyan];
const LINK_COLOUR: Color = Color::Blue;
/// Points drawn per probe at most (UDP_RR takes about 100 a second).
const MAX_POINTS: usize = 2000;

/// A rule with a title, as the live TUI's panels have.
pub fn rule(title: String) -> Block<'static> {
    Block::new()
        .borders(Borders::TOP)
        .border_style(HINT)
        .title(Span::styled(title, BOLD))
}

/// Milliseconds with two decimals under 10, one under 100, none above.
pub fn ms(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// The chart's time axis: its bounds on the samples' axis (s) and the
/// labels of its start, middle and end.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeAxis {
    /// First and last second shown.
    pub bounds: [f64; 2],
    /// Labels at the start, the middle and the end.
    pub labels: [String; 3],
}

/// What the panel shows beyond the view: the chart's time axis and the
/// figures' title (what the percentiles cover).
#[derive(Clone, Debug)]
pub struct Panel<'a> {
    /// The samples, their summaries and the link's queue delays.
    pub view: &'a ProbeView,
    /// The link's state (its newest snapshot gives the propagation delays).
    pub app: &'a App,
    /// The chart's time axis.
    pub axis: TimeAxis,
    /// The figures' title.
    pub title: String,
}

/// Draws the panel: the chart, and the figures at the right (wider from
/// 140 columns).
pub fn draw_probe_panel(frame: &mut Frame, panel: &Panel, area: Rect) {
    let side_w = if frame.area().width >= 140 { 40 } else { 34 };
    let [chart, side] =
        Layout::horizontal([Constraint::Min(40), Constraint::Length(side_w)]).areas(area);
    draw_chart(frame, panel, chart);
    draw_figures(frame, panel, side);
}

/// The probes' round trips over the axis, and the RTT the link predicts.
fn draw_chart(frame: &mut Frame, panel: &Panel, area: Rect) {
    let view = panel.view;
    let [x_min, x_max] = panel.axis.bounds;
    let points = |p: Probe| -> Vec<(f64, f64)> {
        let s = &view.samples[p as usize];
        let first = s.partition_point(|s| s.t < x_min);
        let s = &s[first..];
        let step = s.len().div_ceil(MAX_POINTS).max(1);
        s.iter()
            .step_by(step)
            .map(|s| (s.t, s.rtt_us / 1e3))
            .collect()
    };
    let probes = Probe::ALL.map(points);
    let snapshot = panel.app.latest.as_ref();
    let link: Vec<(f64, f64)> = view
        .queue
        .iter()
        .filter(|q| q.t >= x_min)
        .filter_map(|q: &QueuePoint| Some((q.t, link_rtt_ms(snapshot, q)?)))
        .collect();
    let top = probes
        .iter()
        .flatten()
        .chain(&link)
        .map(|p| p.1)
        .fold(20.0, f64::max);
    // A round scale: 20, 50, 100, 200, 500 ms...
    let y_max = [1.0, 2.0, 5.0]
        .iter()
        .flat_map(|m| (1..6).map(move |e| m * 10f64.powi(e)))
        .filter(|v| *v >= top)
        .fold(f64::INFINITY, f64::min);
    let mut datasets = vec![Dataset::default()
        .name("link")
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .style(Style::new().fg(LINK_COLOUR))
        .data(&link)];
    for p in Probe::ALL {
        datasets.push(
            Dataset::default()
                .name(p.name())
                .marker(Marker::Braille)
                .graph_type(GraphType::Scatter)
                .style(Style::new().fg(PROBE_COLOUR[p as usize]))
                .data(&probes[p as usize]),
        );
    }
    let chart = Chart::new(datasets)
        .block(rule(" RTT ms: dots measured, line = link ".into()))
        .legend_position(None)
        .x_axis(
            Axis::default()
                .bounds([x_min, x_max.max(x_min + 1.0)])
                .style(HINT)
                .labels(panel.axis.labels.clone()),
        )
        .y_axis(Axis::default().bounds([0.0, y_max]).style(HINT).labels([
            "0".to_string(),
            format!("{:.0}", y_max / 2.0),
            format!("{y_max:.0}"),
        ]));
    frame.render_widget(chart, area);
}

/// Each probe's newest RTT and percentiles, each direction's queue delay
/// with the one-way percentiles, and the RTT the link predicts.
fn draw_figures(frame: &mut Frame, panel: &Panel, area: Rect) {
    let (view, app) = (panel.view, panel.app);
    let w = area.width.saturating_sub(1) as usize;
    let block = rule(panel.title.clone()).borders(Borders::TOP | Borders::LEFT);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let mut lines = Vec::new();
    // The L4S probes only when they run (`--l4s`): they have replied.
    for p in Probe::ALL.into_iter().filter(|p| {
        matches!(p, Probe::Ping | Probe::UdpRr) || !view.samples[*p as usize].is_empty()
    }) {
        let colour = Style::new()
            .fg(PROBE_COLOUR[p as usize])
            .add_modifier(Modifier::BOLD);
        let st = &view.stats[p as usize];
        let now = view.samples[p as usize].last();
        lines.push(Line::from(vec![
            Span::styled(format!("{:<7}", p.name()), colour),
            Span::raw(match now {
                Some(s) => format!("now {} ms  n {}", ms(s.rtt_us / 1e3), st.samples),
                None => "no reply yet".into(),
            }),
        ]));
        if st.samples > 0 {
            lines.push(Line::raw(fit(
                &format!(
                    "  p50 {}  p90 {}  p99 {}",
                    ms(st.p50_ms),
                    ms(st.p90_ms),
                    ms(st.p99_ms)
                ),
                w,
            )));
        } else {
            lines.push(Line::raw(""));
        }
    }
    lines.push(Line::styled(
        fit("link queue / udp_rr one-way:", w),
        Style::new().fg(LINK_COLOUR).add_modifier(Modifier::BOLD),
    ));
    let last = view.queue.last().copied();
    for d in Dir::ALL {
        let what = if app.dirs[d.index()].latency_from_flows {
            "bulk sojourn"
        } else {
            "queue delay"
        };
        let v = last.map_or("-".into(), |q| format!("{} ms", ms(q.delay_ms[d.index()])));
        lines.push(Line::raw(fit(&format!("{} {what} {v}", dir_label(d)), w)));
        let ow = &view.one_way[d.index()];
        let text = if ow.samples > 0 {
            format!(
                "  1-way p50/95/99 {}/{}/{}",
                ms(ow.p50_ms),
                ms(ow.p95_ms),
                ms(ow.p99_ms)
            )
        } else {
            "  1-way -".to_string()
        };
        lines.push(Line::styled(
            fit(&text, w),
            Style::new().fg(PROBE_COLOUR[Probe::UdpRr as usize]),
        ));
    }
    if let Some(rtt) = last.and_then(|q| link_rtt_ms(app.latest.as_ref(), &q)) {
        lines.push(Line::raw(fit(
            &format!("RTT ≈ delays+queues {} ms", ms(rtt)),
            w,
        )));
    }
    if view.missed > 0 {
        lines.push(Line::styled(
            fit(&format!("{} samples missed", view.missed), w),
            HINT,
        ));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}
