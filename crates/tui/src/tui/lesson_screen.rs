//! The lesson's screen: `draw_lesson(frame, &Lesson)` lays out, for any
//! terminal from 80×24 up, the phase and its time, the caption, the round
//! trips the probes measure as a live chart beside their percentiles and
//! each direction's queue delay and one-way delays (`probe_panel`, which
//! the live TUI shows too), then the comparison table so far and the keys.
//! Bold rather than white or yellow text, so that the screen reads on a
//! white background as well as a dark one.

use super::lesson::{Lesson, Stage};
use super::probe_panel::{draw_probe_panel, rule, Panel, TimeAxis, BOLD, HINT};
use super::render::too_small;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

/// Lines `text` takes wrapped at word boundaries to `width` columns (a
/// word longer than a line takes as many as it needs).
pub(super) fn wrapped_lines(text: &str, width: u16) -> u16 {
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
    let x_max = lesson.duration_s.max(1.0);
    let panel = Panel {
        view: &lesson.probes,
        app: &lesson.app,
        axis: TimeAxis {
            bounds: [0.0, x_max],
            labels: [
                "0 s".to_string(),
                format!("{} s", (x_max / 2.0 * 10.0).round() / 10.0),
                format!("{x_max:.0} s"),
            ],
        },
        title: if lesson.measured() {
            " measured (after warm-up) ".into()
        } else {
            " measured (so far) ".into()
        },
    };
    draw_probe_panel(frame, &panel, middle);
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
