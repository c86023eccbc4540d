//! The lesson's screen: `draw_lesson(frame, &Lesson)` lays out, for any
//! terminal from 80×24 up, the phase and its time, the caption, the round
//! trips the probes measure as a live chart (ping and UDP_RR points, and
//! the RTT the link's own queue delays predict as a line) beside their
//! percentiles and each direction's queue delay, then the comparison table
//! so far and the keys. Colours are the terminal's red, magenta and blue on
//! its default background, with bold rather than white or yellow text, so
//! that the screen reads on a white background as well as a dark one.

use super::dir_label;
use super::lesson::{Lesson, QueuePoint, Stage};
use super::render::too_small;
use super::widgets::fit;
use crate::dir::Dir;
use crate::load::feed::Probe;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph, Wrap};
use ratatui::Frame;

const BOLD: Style = Style::new().add_modifier(Modifier::BOLD);
const HINT: Style = Style::new().fg(Color::DarkGray);
/// The colour of each probe (`Probe::ALL` order) and of the link's line.
const PROBE_COLOUR: [Color; 2] = [Color::Red, Color::Magenta];
const LINK_COLOUR: Color = Color::Blue;
/// Points drawn per probe at most (UDP_RR takes about 100 a second).
const MAX_POINTS: usize = 2000;

/// A rule with a title, as the live TUI's panels have.
fn rule(title: String) -> Block<'static> {
    Block::new()
        .borders(Borders::TOP)
        .border_style(HINT)
        .title(Span::styled(title, BOLD))
}

/// Milliseconds with two decimals under 10, one under 100, none above.
fn ms(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// Lines `text` takes wrapped at word boundaries to `width` columns (a
/// word longer than a line takes as many as it needs).
fn wrapped_lines(text: &str, width: u16) -> u16 {
    let width = usize::from(width.max(1));
    let (mut lines, mut used) = (1usize, 0usize);
    for word in text.split_whitespace() {
        let n = word.chars().count();
        if used > 0 && used + 1 + n <= width {
            used += 1 + n;
        } else if used == 0 && n <= width {
            used = n;
        } else {
            lines += usize::from(used > 0) + (n.saturating_sub(1)) / width;
            used = (n - 1) % width + 1;
        }
    }
    u16::try_from(lines).unwrap_or(u16::MAX)
}

/// Draws the lesson screen: the phase's caption, the probes' RTT chart and
/// percentiles beside the link's queue delay, the link's figures and the
/// comparison table so far.
pub fn draw_lesson(frame: &mut Frame, lesson: &Lesson) {
    let area = frame.area();
    if too_small(frame, "the lesson") {
        return;
    }
    let caption = lesson.phase().map_or("", |p| p.caption.as_str());
    let caption_h = wrapped_lines(caption, area.width.saturating_sub(2)).clamp(1, 3);
    let table_h = (lesson.table.len() as u16 + 1).clamp(3, area.height / 3);
    let [header, cap, middle, table, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(caption_h),
        Constraint::Min(8),
        Constraint::Length(table_h),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(frame, lesson, header);
    frame.render_widget(
        Paragraph::new(Line::styled(caption, BOLD)).wrap(Wrap { trim: true }),
        cap.inner(ratatui::layout::Margin::new(1, 0)),
    );
    let side_w = if area.width >= 140 { 40 } else { 31 };
    let [chart, side] =
        Layout::horizontal([Constraint::Min(40), Constraint::Length(side_w)]).areas(middle);
    draw_chart(frame, lesson, chart);
    draw_figures(frame, lesson, side);
    let block = rule(" results so far (the table `demo` prints) ".into());
    let inner = block.inner(table);
    frame.render_widget(block, table);
    let lines: Vec<Line> = if lesson.table.is_empty() {
        vec![Line::styled(
            "each phase's row appears here when it ends",
            HINT,
        )]
    } else {
        lesson.table.iter().map(|l| Line::raw(l.as_str())).collect()
    };
    frame.render_widget(Paragraph::new(lines), inner);
    draw_footer(frame, lesson, footer);
}

fn draw_header(frame: &mut Frame, lesson: &Lesson, area: Rect) {
    let n = lesson.phases.len();
    let name = lesson.phase().map_or("", |p| p.name.as_str());
    let mut spans = vec![
        Span::styled(" bloatbox lesson ", BOLD.add_modifier(Modifier::REVERSED)),
        Span::styled(format!(" phase {}/{n} {name}", lesson.current + 1), BOLD),
    ];
    let when = match lesson.stage {
        Stage::Starting => "  bringing the link up…".to_string(),
        Stage::Running if !lesson.measured() => {
            format!("  t {:.1}/{:.0} s warm-up", lesson.t, lesson.duration_s)
        }
        Stage::Running => format!("  t {:.1}/{:.0} s", lesson.t, lesson.duration_s),
        Stage::Held => "  phase over".to_string(),
        Stage::Over => "  lesson over".to_string(),
    };
    spans.push(Span::raw(when));
    if lesson.paused {
        spans.push(Span::styled(
            "  PAUSED",
            BOLD.add_modifier(Modifier::REVERSED),
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_footer(frame: &mut Frame, lesson: &Lesson, area: Rect) {
    let line = match (&lesson.status, lesson.stage) {
        (Some(s), _) => Line::styled(s.clone(), BOLD),
        (None, Stage::Over) => Line::styled(
            "q quit and print the table  r run the last phase again",
            HINT,
        ),
        (None, Stage::Held) => Line::styled(
            "p go on to the next phase  r repeat this phase  n next  q quit (prints the table)",
            HINT,
        ),
        (None, _) => Line::styled(
            "p pause  n next phase  r repeat phase  q quit (prints the table so far)",
            HINT,
        ),
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// The probes' round trips over the phase, and the RTT the link predicts.
fn draw_chart(frame: &mut Frame, lesson: &Lesson, area: Rect) {
    let points = |p: Probe| -> Vec<(f64, f64)> {
        let s = &lesson.samples[p as usize];
        let step = s.len().div_ceil(MAX_POINTS).max(1);
        s.iter()
            .step_by(step)
            .map(|s| (s.t, s.rtt_us / 1e3))
            .collect()
    };
    let probes = Probe::ALL.map(points);
    let link: Vec<(f64, f64)> = lesson
        .queue
        .iter()
        .filter_map(|q: &QueuePoint| Some((q.t, lesson.link_rtt_ms(q)?)))
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
    let x_max = lesson.duration_s.max(1.0);
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
        .x_axis(Axis::default().bounds([0.0, x_max]).style(HINT).labels([
            "0 s".to_string(),
            format!("{} s", (x_max / 2.0 * 10.0).round() / 10.0),
            format!("{x_max:.0} s"),
        ]))
        .y_axis(Axis::default().bounds([0.0, y_max]).style(HINT).labels([
            "0".to_string(),
            format!("{:.0}", y_max / 2.0),
            format!("{y_max:.0}"),
        ]));
    frame.render_widget(chart, area);
}

/// Each probe's newest RTT and percentiles, each direction's queue delay,
/// and the RTT the link predicts from them.
fn draw_figures(frame: &mut Frame, lesson: &Lesson, area: Rect) {
    let w = area.width.saturating_sub(1) as usize;
    let block = rule(if lesson.measured() {
        " measured (after warm-up) ".into()
    } else {
        " measured (so far) ".into()
    })
    .borders(Borders::TOP | Borders::LEFT);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let mut lines = Vec::new();
    for p in Probe::ALL {
        let colour = Style::new()
            .fg(PROBE_COLOUR[p as usize])
            .add_modifier(Modifier::BOLD);
        let st = &lesson.stats[p as usize];
        let now = lesson.samples[p as usize].last();
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
        fit("the link computes:", w),
        Style::new().fg(LINK_COLOUR).add_modifier(Modifier::BOLD),
    ));
    let last = lesson.queue.last().copied();
    for d in Dir::ALL {
        let view = &lesson.app.dirs[d.index()];
        let what = if view.latency_from_flows {
            "bulk sojourn"
        } else {
            "queue delay"
        };
        let v = last.map_or("-".into(), |q| format!("{} ms", ms(q.delay_ms[d.index()])));
        lines.push(Line::raw(fit(&format!("{} {what} {v}", dir_label(d)), w)));
    }
    if let Some(rtt) = last.and_then(|q| lesson.link_rtt_ms(&q)) {
        lines.push(Line::raw(fit(
            &format!("RTT ≈ delays+queues {} ms", ms(rtt)),
            w,
        )));
    }
    if lesson.missed > 0 {
        lines.push(Line::styled(
            fit(&format!("{} samples missed", lesson.missed), w),
            HINT,
        ));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

#[cfg(test)]
mod tests {
    use super::wrapped_lines;

    #[test]
    fn captions_wrap_at_word_boundaries() {
        assert_eq!(wrapped_lines("", 10), 1);
        assert_eq!(wrapped_lines("aaaa bbbb", 9), 1);
        assert_eq!(wrapped_lines("aaaa bbbbb", 9), 2);
        assert_eq!(wrapped_lines("aaaa bbbb cccc", 9), 2);
        // A word longer than the line is broken over as many as it needs.
        assert_eq!(wrapped_lines("a bbbbbbbbbbbbbbbbbbbb", 9), 4);
    }
}
