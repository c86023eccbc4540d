//! The lesson's pure state: `demo --tui` and `test --tui` run their phases
//! (one configuration each, under the RRUL-like load) on one screen, and
//! `Lesson` holds what that screen shows: which phase runs and its
//! caption, the round trips the ICMP and UDP_RR probes measure (with their
//! percentiles, computed by `load::stats::LatencyStats` as the comparison
//! table computes them), the queue delay each direction of the link
//! computes (the `App` of the live TUI, fed the same snapshots), and the
//! comparison table so far, rendered by the driver. Keys pause the lesson,
//! go to the next phase, repeat one, or quit. Nothing here reads a clock or
//! the terminal: `experiment::lesson` drives it, tests feed it recorded
//! snapshots and samples.

pub use super::probes::QueuePoint;
use super::probes::{link_rtt_ms, ProbeView};
use super::state::App;
use super::Snapshot;
use crate::load::feed::Probe;
use crate::load::stats::Sample;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// One phase: the configuration's name and the line that narrates it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    /// The configuration's name (its file stem), as the table names it.
    pub name: String,
    /// The one line shown while the phase runs (`[lesson] caption`).
    pub caption: String,
}

/// Where the current phase is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The link is being brought up.
    Starting,
    /// The load runs.
    Running,
    /// The phase is over and the lesson waits (paused) before the next.
    Held,
    /// Every phase is over.
    Over,
}

/// What a key asks the lesson's driver to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LessonAction {
    /// End this phase now (keeping what it measured past the warm-up) and
    /// go on to the next.
    Next,
    /// Run this phase again from the start (or, once it is over, the
    /// phase that just ended), replacing its row.
    Repeat,
    /// Stop, and print the table of the phases so far.
    Quit,
}

/// Everything the lesson screen shows.
#[derive(Clone, Debug)]
pub struct Lesson {
    /// The phases in the order they run.
    pub phases: Vec<Phase>,
    /// Index into `phases`.
    pub current: usize,
    /// Where the current phase is.
    pub stage: Stage,
    /// Each phase's length and the warm-up left out of its numbers, s.
    pub duration_s: f64,
    /// The warm-up at the start of each phase that its numbers leave out, s.
    pub warmup_s: f64,
    /// Seconds since this phase's load started.
    pub t: f64,
    /// The live TUI's state, fed the same snapshots: the link's figures
    /// and each direction's queue delay.
    pub app: App,
    /// This phase's probe samples, their round-trip and one-way
    /// percentiles (over the measured part once the warm-up is over, over
    /// everything so far before) and the link's queue delay, on the
    /// phase's time axis.
    pub probes: ProbeView,
    /// The comparison table so far (header and rows), as the driver
    /// rendered it for the screen's width.
    pub table: Vec<String>,
    /// Frozen: updates are kept aside, and the lesson holds after this
    /// phase.
    pub paused: bool,
    /// Updates taken while paused, applied on resume.
    held_samples: Vec<(Probe, Sample)>,
    held_snapshot: Option<(f64, Snapshot)>,
    /// A line for the footer (a phase skipped, cut short...).
    pub status: Option<String>,
}

impl Lesson {
    /// A lesson of `phases`, each `duration_s` long with `warmup_s` of
    /// warm-up, about to start its first phase.
    pub fn new(phases: Vec<Phase>, duration_s: f64, warmup_s: f64) -> Lesson {
        Lesson {
            phases,
            current: 0,
            stage: Stage::Starting,
            duration_s,
            warmup_s,
            t: 0.0,
            app: App::new(),
            probes: ProbeView::default(),
            table: Vec::new(),
            paused: false,
            held_samples: Vec::new(),
            held_snapshot: None,
            status: None,
        }
    }

    /// The current phase.
    pub fn phase(&self) -> Option<&Phase> {
        self.phases.get(self.current)
    }

    /// Starts phase `index` afresh (its link is coming up), unpaused: a
    /// phase run again or the next one is shown live.
    pub fn start_phase(&mut self, index: usize) {
        self.current = index.min(self.phases.len().saturating_sub(1));
        self.stage = Stage::Starting;
        self.paused = false;
        self.t = 0.0;
        self.app = App::new();
        self.probes = ProbeView {
            missed: self.probes.missed,
            ..ProbeView::default()
        };
        self.held_samples.clear();
        self.held_snapshot = None;
    }

    /// A progress tick of the running phase: `t` seconds into the load,
    /// the link's newest snapshot (if new) and the probe samples taken
    /// since the last tick. While paused they are kept aside.
    pub fn on_tick(&mut self, t: f64, snapshot: Option<Snapshot>, samples: Vec<(Probe, Sample)>) {
        if self.stage == Stage::Starting {
            self.stage = Stage::Running;
        }
        if self.paused {
            self.held_samples.extend(samples);
            if let Some(s) = snapshot {
                self.held_snapshot = Some((t, s));
            }
            return;
        }
        self.t = t;
        if let Some(s) = snapshot {
            self.on_snapshot(t, s);
        }
        self.on_samples(samples);
    }

    fn on_snapshot(&mut self, t: f64, snapshot: Snapshot) {
        self.app.on_snapshot(snapshot);
        self.probes.queue.push(QueuePoint::of(t, &self.app));
    }

    fn on_samples(&mut self, samples: Vec<(Probe, Sample)>) {
        let from = if self.measured() { self.warmup_s } else { 0.0 };
        self.probes.add_samples(samples, from);
    }

    /// Whether the percentiles cover the measured part (the warm-up is
    /// over) rather than everything so far.
    pub fn measured(&self) -> bool {
        self.t >= self.warmup_s
    }

    /// The feed dropped `n` samples.
    pub fn on_missed(&mut self, n: u64) {
        self.probes.missed += n;
    }

    /// This phase's load is over. Returns whether the lesson holds here
    /// (paused) before the next phase.
    pub fn end_phase(&mut self) -> bool {
        let last = self.current + 1 >= self.phases.len();
        self.stage = match (last, self.paused) {
            (true, _) => Stage::Over,
            (false, true) => Stage::Held,
            (false, false) => Stage::Running,
        };
        self.stage == Stage::Held
    }

    /// Handles a key; returns what the driver must do, if anything.
    pub fn on_key(&mut self, key: KeyEvent) -> Option<LessonAction> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Some(LessonAction::Quit);
        }
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => Some(LessonAction::Quit),
            KeyCode::Char('n') => Some(LessonAction::Next),
            KeyCode::Char('r') => Some(LessonAction::Repeat),
            KeyCode::Char('p') | KeyCode::Char(' ') => {
                self.toggle_pause();
                None
            }
            _ => None,
        }
    }

    fn toggle_pause(&mut self) {
        self.paused = !self.paused;
        if self.paused {
            return;
        }
        if let Some((t, s)) = self.held_snapshot.take() {
            self.t = self.t.max(t);
            self.on_snapshot(t, s);
        }
        let samples = std::mem::take(&mut self.held_samples);
        self.on_samples(samples);
    }

    /// The RTT the link's own figures predict for a packet that waits
    /// behind each direction's queue: both propagation delays plus both
    /// queue delays, ms (`None` before the first snapshot).
    pub fn link_rtt_ms(&self, q: &QueuePoint) -> Option<f64> {
        link_rtt_ms(self.app.latest.as_ref(), q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::stats::LatencyStats;

    fn key(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
    }

    fn lesson() -> Lesson {
        let phase = |n: &str| Phase {
            name: n.into(),
            caption: format!("{n} caption"),
        };
        Lesson::new(vec![phase("a"), phase("b")], 10.0, 2.0)
    }

    fn ping(t: f64, ms: f64) -> (Probe, Sample) {
        (Probe::Ping, Sample::rtt(t, ms * 1e3))
    }

    #[test]
    fn keys_map_to_actions_and_pause_toggles() {
        let mut l = lesson();
        assert_eq!(l.on_key(key('n')), Some(LessonAction::Next));
        assert_eq!(l.on_key(key('r')), Some(LessonAction::Repeat));
        assert_eq!(l.on_key(key('q')), Some(LessonAction::Quit));
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(l.on_key(ctrl_c), Some(LessonAction::Quit));
        assert_eq!(l.on_key(key('p')), None);
        assert!(l.paused);
        assert_eq!(l.on_key(key(' ')), None);
        assert!(!l.paused);
        assert_eq!(l.on_key(key('x')), None);
    }

    #[test]
    fn percentiles_cover_everything_in_the_warm_up_then_only_the_measured_part() {
        let mut l = lesson();
        l.start_phase(0);
        l.on_tick(1.0, None, vec![ping(0.5, 100.0), ping(0.9, 100.0)]);
        assert_eq!(l.stage, Stage::Running);
        assert!(!l.measured());
        assert_eq!(l.probes.stats[0].samples, 2);
        l.on_tick(3.0, None, vec![ping(2.5, 10.0), ping(2.9, 10.0)]);
        assert!(l.measured());
        // As the table computes them: samples from the warm-up on.
        assert_eq!(
            l.probes.stats[0],
            LatencyStats::of(&l.probes.samples[0], 2.0)
        );
        assert_eq!(l.probes.stats[0].samples, 2);
        assert!((l.probes.stats[0].p50_ms - 10.0).abs() < 0.01);
        assert_eq!(l.probes.stats[1].samples, 0, "no UDP_RR sample yet");
    }

    #[test]
    fn a_paused_lesson_keeps_updates_aside_and_holds_after_the_phase() {
        let mut l = lesson();
        l.start_phase(0);
        l.on_tick(1.0, None, vec![ping(0.5, 20.0)]);
        l.on_key(key('p'));
        l.on_tick(4.0, None, vec![ping(3.5, 30.0)]);
        assert_eq!(l.probes.samples[0].len(), 1, "frozen while paused");
        assert_eq!(l.t, 1.0);
        assert!(l.end_phase(), "holds before the next phase");
        assert_eq!(l.stage, Stage::Held);
        l.on_key(key('p'));
        assert_eq!(l.probes.samples[0].len(), 2, "applied on resume");
        // The last phase ends the lesson, paused or not.
        l.start_phase(1);
        assert!(!l.end_phase());
        assert_eq!(l.stage, Stage::Over);
        // A new phase starts clean, and live.
        l.on_key(key('p'));
        l.start_phase(1);
        assert!(l.probes.samples[0].is_empty() && l.probes.queue.is_empty());
        assert!(!l.paused);
        assert_eq!(l.stage, Stage::Starting);
    }
}
