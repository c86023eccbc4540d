//! The live TUI's probes key (`t`): the state it changes, a scripted
//! session through `run_with_backend` over `SimControl` (whose probes are
//! modelled from the real core's queues: a frame that waits behind each
//! direction's qdisc backlog), and the screen with the probes' panel at
//! 80×24 and 160×48 compared with committed insta snapshots. No sleeps.

use bloatbox::dir::Dir;
use bloatbox::load::feed::Probe;
use bloatbox::load::stats::Sample;
use bloatbox::time::NS_PER_MS;
use bloatbox::tui::fixtures::{Scenario, SimControl};
use bloatbox::tui::render::HELP;
use bloatbox::tui::state::{Mode, PROBE_CHART_S, PROBE_STATS_S};
use bloatbox::tui::{
    run_with_backend, text_capture, Action, App, Control, ControlError, EventSource,
};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::Duration;

const STEP: u64 = 100 * NS_PER_MS;

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

fn rr(t: f64, there_ms: f64, back_ms: f64) -> (Probe, Sample) {
    (
        Probe::UdpRr,
        Sample {
            t,
            rtt_us: (there_ms + back_ms) * 1e3,
            one_way_us: Some([there_ms * 1e3, back_ms * 1e3]),
        },
    )
}

#[test]
fn t_asks_to_start_the_probes_and_their_view_exists_once_the_daemon_agrees() {
    let mut app = App::new();
    assert_eq!(app.on_key(key('t')), Some(Action::Probes(true)));
    assert!(app.probes.is_none(), "not on before the daemon says so");
    // Refused (bloatbox top, or no probes): stays off, the error shown.
    app.on_reply(
        &Action::Probes(true),
        Err(ControlError::NoProbes(Arc::new(anyhow::anyhow!(
            "not IPv4"
        )))),
    );
    assert!(app.probes.is_none());
    assert_eq!(app.status.as_deref(), Some("error: no probes: not IPv4"));
    app.on_reply(&Action::Probes(true), Ok(String::new()));
    assert!(app.probes.is_some());
    let logged = &app.events.back().unwrap().text;
    assert!(logged.starts_with("probes on"), "{logged}");
    assert_eq!(app.on_key(key('t')), Some(Action::Probes(false)));

    // Percentiles over the newest PROBE_STATS_S, the chart over
    // PROBE_CHART_S: an old slow transaction leaves the percentiles first,
    // then the chart.
    let t0 = 1000.0;
    app.on_probe_samples(vec![rr(t0, 500.0, 500.0)], 0);
    let fast: Vec<_> = (1..=20)
        .map(|i| rr(t0 + PROBE_STATS_S + i as f64 * 0.1, 4.0, 6.0))
        .collect();
    app.on_probe_samples(fast, 3);
    let v = app.probes.as_ref().unwrap();
    assert_eq!(v.stats[Probe::UdpRr as usize].samples, 20);
    assert!((v.one_way[Dir::LeftToRight.index()].p99_ms - 4.0).abs() < 0.01);
    assert!((v.one_way[Dir::RightToLeft.index()].p50_ms - 6.0).abs() < 0.01);
    assert_eq!(v.samples[Probe::UdpRr as usize].len(), 21, "still charted");
    assert_eq!(v.missed, 3);
    app.on_probe_samples(vec![rr(t0 + PROBE_CHART_S + 1.0, 4.0, 6.0)], 0);
    let v = app.probes.as_ref().unwrap();
    assert_eq!(
        v.samples[Probe::UdpRr as usize].len(),
        21,
        "the oldest left the chart"
    );
    assert!(v.samples[Probe::UdpRr as usize][0].t > t0);

    // Frozen with the display.
    app.on_key(key('p'));
    app.on_probe_samples(vec![rr(t0 + 70.0, 1.0, 1.0)], 0);
    assert_eq!(app.probes.as_ref().unwrap().samples[1].len(), 21);
    app.on_key(key('p'));

    app.on_reply(&Action::Probes(false), Ok(String::new()));
    assert!(app.probes.is_none());
    assert_eq!(app.on_key(key('t')), Some(Action::Probes(true)));
    // Samples that arrive while they are off are not kept.
    app.on_probe_samples(vec![rr(t0, 1.0, 1.0)], 0);
    assert!(app.probes.is_none());
    assert!(HELP
        .iter()
        .any(|(k, what)| *k == "t" && what.contains("probes")));
}

/// Replays keys; a `None` is a frame without one.
struct Script(VecDeque<Option<Event>>);

impl Script {
    fn idle(mut self, frames: usize) -> Script {
        self.0.extend(std::iter::repeat_n(None, frames));
        self
    }
    fn key(mut self, c: char) -> Script {
        self.0.push_back(Some(Event::Key(key(c))));
        self
    }
}

impl EventSource for Script {
    fn next(&mut self, _: Duration) -> io::Result<Option<Event>> {
        self.0
            .pop_front()
            .ok_or_else(|| io::Error::other("the script ran out"))
    }
}

/// A session of pfifo_fast under load: the probes started with `t` after
/// 2 s; then 4 s of them; then quit (`q`, `y`).
fn probing_session(w: u16, h: u16) -> (App, SimControl, Terminal<TestBackend>) {
    let mut control = SimControl::new(Scenario::pfifo_fast_under_load(), STEP);
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    let mut app = App::new();
    let mut script = Script(VecDeque::new())
        .idle(20)
        .key('t')
        .idle(40)
        .key('q')
        .key('y');
    // Like `up`: q asks first.
    struct Up<'a>(&'a mut SimControl);
    impl Control for Up<'_> {
        fn send(&mut self, a: &Action) -> Result<String, ControlError> {
            self.0.send(a)
        }
        fn snapshot(&mut self) -> Option<bloatbox::tui::Snapshot> {
            self.0.snapshot()
        }
        fn probe_samples(&mut self) -> (Vec<(Probe, Sample)>, u64) {
            self.0.probe_samples()
        }
        fn quit_stops_link(&self) -> bool {
            true
        }
    }
    run_with_backend(
        &mut terminal,
        &mut app,
        &mut Up(&mut control),
        &mut script,
        10,
    )
    .unwrap();
    (app, control, terminal)
}

#[test]
fn a_session_with_the_probes_on_shows_their_panel_beside_the_queue_delay() {
    let (app, control, _) = probing_session(80, 24);
    assert_eq!(control.sent.first(), Some(&Action::Probes(true)));
    assert!(control.probes);
    let v = app.probes.as_ref().expect("the probes are on");
    // A ping at each snapshot after `t` (one a frame: the 40 idle ones, q
    // and y), UDP_RR every 20 ms; all kept in the chart, and the
    // percentiles over the last 10 s take them all.
    assert_eq!(v.samples[Probe::Ping as usize].len(), 42);
    let rr = &v.stats[Probe::UdpRr as usize];
    assert_eq!(rr.samples as usize, v.samples[Probe::UdpRr as usize].len());
    // Behind the FIFO the upload's one-way delay is its propagation delay
    // plus its queue; the queue delay the link computes for it is of the
    // same order (the model waits behind the qdisc's backlog, the link's
    // figure counts the ring too).
    let snap = app.latest.as_ref().unwrap();
    let prop_ms = |d: Dir| snap.bridge.path(d).params.delay_ns as f64 / 1e6;
    let q = v.queue.last().unwrap();
    let up = &v.one_way[Dir::LeftToRight.index()];
    assert!(up.p50_ms > prop_ms(Dir::LeftToRight) + 1.0, "{up:?}");
    assert!(q.delay_ms[0] > 1.0, "{q:?}");
    let back = &v.one_way[Dir::RightToLeft.index()];
    assert!(back.p99_ms < prop_ms(Dir::RightToLeft) + 1.0, "{back:?}");
    // The queue points are on the samples' clock (the snapshots' time).
    let newest = v.newest().unwrap();
    assert!((newest - snap.taken_at.nanos() as f64 / 1e9).abs() < 0.2);

    for (w, h) in [(80, 24), (160, 48)] {
        let (app, _, _) = probing_session(w, h);
        let text = text_capture(&app, w, h);
        assert_eq!(text.lines().count(), h as usize);
        assert!(text.lines().all(|l| l.chars().count() <= w as usize));
        assert!(text.contains("probes L→R, last 10 s"), "{text}");
        assert!(text.contains("udp_rr now"), "{text}");
        assert!(text.contains("L→R queue delay"), "{text}");
        assert!(text.contains("1-way p50/95/99"), "{text}");
        let logged = app.events.iter().any(|e| e.text.starts_with("probes on"));
        assert!(logged, "the event log says so");
        insta::assert_snapshot!(format!("probes_pfifo_fast_{w}x{h}"), text);
    }
}

#[test]
fn the_help_overlay_lists_the_probes_key() {
    let mut app = App::new();
    app.mode = Mode::Help;
    let text = text_capture(&app, 80, 24);
    assert!(text.contains("start / stop the latency probes"), "{text}");
}
