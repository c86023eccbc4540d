//! A scripted TUI session through `run_with_backend`: a TestBackend, a
//! scripted event source and a `SimControl` over the real core, no sleeps.
//! pfifo_fast under load, then the fq_codel preset is picked with keys,
//! the `Action` reaches the control, and later snapshots show fq_codel.

use bloatbox::dir::Dir;
use bloatbox::time::NS_PER_MS;
use bloatbox::tui::fixtures::{Scenario, SimControl};
use bloatbox::tui::state::EventKind;
use bloatbox::tui::{run_with_backend, Action, App, EventSource, LinkField};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::collections::VecDeque;
use std::io;
use std::time::Duration;

/// Replays events; a `None` is a poll that timed out (one more frame).
struct Script(VecDeque<Option<Event>>);

impl Script {
    fn new() -> Script {
        Script(VecDeque::new())
    }
    fn idle(mut self, frames: usize) -> Script {
        self.0.extend(std::iter::repeat_n(None, frames));
        self
    }
    fn key(mut self, code: KeyCode) -> Script {
        self.0
            .push_back(Some(Event::Key(KeyEvent::new(code, KeyModifiers::NONE))));
        self
    }
    fn text(mut self, s: &str) -> Script {
        for c in s.chars() {
            self = self.key(KeyCode::Char(c));
        }
        self
    }
    fn event(mut self, e: Event) -> Script {
        self.0.push_back(Some(e));
        self
    }
}

impl EventSource for Script {
    fn next(&mut self, timeout: Duration) -> io::Result<Option<Event>> {
        assert_eq!(timeout, Duration::from_millis(100), "one frame at 10 Hz");
        self.0
            .pop_front()
            .ok_or_else(|| io::Error::other("the script ran out before q"))
    }
}

fn screen(terminal: &Terminal<TestBackend>) -> String {
    let buf = terminal.backend().buffer();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn pfifo_fast_to_fq_codel_through_the_preset_menu() {
    let mut control = SimControl::new(Scenario::pfifo_fast_under_load(), 100 * NS_PER_MS);
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let mut app = App::new();
    // 2 s of pfifo_fast, open the menu, pick 4 (fq_codel), 2 s more, set
    // the rate, toggle BQL, look at the help, resize, then quit.
    let mut script = Script::new()
        .idle(20)
        .key(KeyCode::Char('m'))
        .key(KeyCode::Char('4'))
        .idle(20)
        .key(KeyCode::Char('r'))
        .text("5mbit")
        .key(KeyCode::Enter)
        .key(KeyCode::Char('b'))
        .key(KeyCode::Char('?'))
        .key(KeyCode::Esc)
        .event(Event::Resize(100, 30))
        .idle(5)
        .key(KeyCode::Char('q'));

    run_with_backend(&mut terminal, &mut app, &mut control, &mut script, 10).unwrap();
    assert!(script.0.is_empty(), "the whole script ran");

    assert_eq!(
        control.sent,
        vec![
            Action::Tc("tc qdisc replace dev left root fq_codel".into()),
            Action::SetLink {
                dir: Dir::LeftToRight,
                field: LinkField::Rate,
                value: 625_000
            },
            Action::SetLink {
                dir: Dir::LeftToRight,
                field: LinkField::Bql,
                value: 0
            },
            Action::Quit,
        ]
    );
    let snap = app.latest.as_ref().unwrap();
    let l2r = snap.bridge.path(Dir::LeftToRight);
    assert_eq!(l2r.qdisc.kind, "fq_codel");
    assert_eq!(snap.bridge.path(Dir::RightToLeft).qdisc.kind, "pfifo_fast");
    assert_eq!(l2r.params.rate_bytes_ps, 625_000);
    assert!(!l2r.params.bql);
    assert!(!app.dirs[0].flows.is_empty(), "fq_codel reports its flows");

    assert!(
        app.events
            .iter()
            .filter(|e| e.kind == EventKind::Command)
            .all(|e| e.dir == Some(Dir::LeftToRight)),
        "{:?}",
        app.events
    );
    let texts = |kind| -> Vec<String> {
        app.events
            .iter()
            .filter(|e| e.kind == kind)
            .map(|e| e.text.clone())
            .collect()
    };
    assert_eq!(
        texts(EventKind::Command),
        vec![
            "tc qdisc replace dev left root fq_codel",
            "set rate 5Mbit",
            "set bql off"
        ]
    );
    let config = texts(EventKind::Config);
    assert!(
        config.iter().any(|t| t.starts_with("qdisc now fq_codel")),
        "{config:?}"
    );
    assert!(
        config.contains(&"rate 10Mbit → 5Mbit".to_string()),
        "{config:?}"
    );
    assert!(config.contains(&"bql on → off".to_string()), "{config:?}");

    // The pfifo_fast phase filled a standing queue; its latency samples
    // are in the history before the switch.
    let lat: Vec<u64> = app.dirs[0].history.iter().map(|s| s.latency_us).collect();
    assert!(lat.iter().take(19).any(|l| *l > 200_000), "{lat:?}");

    // The last frame drawn shows fq_codel, its flows, and the help closed.
    let text = screen(&terminal);
    assert!(text.contains("root fq_codel"), "{text}");
    assert!(text.contains("10.77.0.1:"), "{text}");
    assert!(!text.contains(" keys "), "{text}");
}

#[test]
fn refused_actions_are_logged_and_the_session_goes_on() {
    let mut control = SimControl::new(Scenario::pfifo_fast_under_load(), 100 * NS_PER_MS);
    let mut terminal = Terminal::new(TestBackend::new(160, 48)).unwrap();
    let mut app = App::new();
    // tbf is refused by the fixture (it builds pfifo_fast, fq_codel and sfq
    // by hand, not through tc).
    let mut script = Script::new()
        .idle(3)
        .key(KeyCode::Char('m'))
        .key(KeyCode::Char('5'))
        .idle(2)
        .key(KeyCode::Char('q'));
    run_with_backend(&mut terminal, &mut app, &mut control, &mut script, 10).unwrap();
    let err = app
        .events
        .iter()
        .find(|e| e.kind == EventKind::Error)
        .unwrap();
    assert!(
        err.text.contains("tbf: not available in the fixture"),
        "{}",
        err.text
    );
    assert!(screen(&terminal).contains("error: tbf: not available"));
    assert_eq!(
        app.latest.unwrap().bridge.path(Dir::LeftToRight).qdisc.kind,
        "pfifo_fast"
    );
}

#[test]
fn an_event_source_error_ends_the_loop_with_it() {
    let mut control = SimControl::new(Scenario::pfifo_fast_under_load(), 100 * NS_PER_MS);
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let mut app = App::new();
    let mut script = Script::new().idle(2);
    let err = run_with_backend(&mut terminal, &mut app, &mut control, &mut script, 10).unwrap_err();
    assert!(err.to_string().contains("script ran out"), "{err}");
    assert!(control.sent.is_empty());
}
