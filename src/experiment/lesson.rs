//! The lesson's driver (`demo --tui`, `test --tui`): runs the same phases
//! under the same load as `run_all`, one configuration each through
//! `run_one_steered`, while the terminal shows `tui::lesson`: about ten
//! times a second (at each of the load's progress reports) it hands the
//! lesson the link's newest snapshot and the probes' new samples, reads the
//! keys and redraws. When a phase ends its result joins the report and its
//! row the table on screen; the keys pause the lesson, end a phase early
//! (its row keeps what it measured past the warm-up, named as cut short),
//! repeat one, or quit. The report it returns holds the phases that ended,
//! so that the caller prints the same table and writes the same JSON and
//! plots as `demo` does; a phase that fails ends the lesson, and the
//! outcome names it beside the phases that ended before it.

use std::time::{Duration, SystemTime};

use ratatui::backend::Backend;
use ratatui::Terminal;

use super::{
    run_one_steered, table, Candidate, ConfigResult, Outcome, PhaseFailure, Report, TestOptions,
};
use crate::dir::Dir;
use crate::load::feed::ProbeFeed;
use crate::load::rrul::Steer;
use crate::qdisc::Qdisc;
use crate::time::Instant;
use crate::tui::lesson::{Lesson, LessonAction, Phase, Stage};
use crate::tui::lesson_screen::draw_lesson;
use crate::tui::run::{EventSource, TakenTerminal, TerminalEvents};
use crate::tui::Snapshot;
use crate::units::{print_rate, sprint_time};
use crossterm::event::Event;

/// How long the lesson waits for a key between redraws while it holds
/// (paused between phases, or over).
const HOLD_FRAME: Duration = Duration::from_millis(100);

/// The caption of `cand`'s phase: its `[lesson] caption`, or what it runs
/// (the left→right root qdisc, rate and delay).
pub fn caption(cand: &Candidate) -> String {
    if let Some(c) = &cand.config.lesson.caption {
        return c.clone();
    }
    let dir = Dir::LeftToRight;
    let kind = crate::tc::build_tree(cand.config.dev_spec(dir), &cand.config.tc_lines(dir))
        .map_or_else(|_| "its qdisc".to_string(), |t| t.dump(Instant::ZERO).kind);
    let p = cand.config.link_params(dir);
    format!(
        "{}: {kind} on a {} link, {} each way: watch the ping against the link's queue delay",
        cand.name,
        print_rate(p.rate_bytes_ps),
        sprint_time(p.delay_ns / 1000)
    )
}

/// Runs one phase: brings the candidate up (as the `usize`-th link of the
/// process), runs the load with the probes pushing into the feed, calls
/// the progress with the seconds since the load started and the link's
/// newest snapshot, and returns the phase's result. `live_phase` is the
/// real one; tests pass their own.
pub type PhaseRunner<'a> = dyn FnMut(
        &Candidate,
        usize,
        &TestOptions,
        ProbeFeed,
        &mut dyn FnMut(f64, Option<Snapshot>) -> Steer,
    ) -> anyhow::Result<ConfigResult>
    + 'a;

/// The phase on a live link: `run_one_steered`, its snapshots taken from
/// the link's datapath.
pub fn live_phase(
    cand: &Candidate,
    tag: usize,
    opts: &TestOptions,
    feed: ProbeFeed,
    progress: &mut dyn FnMut(f64, Option<Snapshot>) -> Steer,
) -> anyhow::Result<ConfigResult> {
    run_one_steered(cand, tag, opts, Some(feed), &mut |t, link| {
        progress(t, link.snapshot().map(|s| Snapshot::of(&s)))
    })
}

/// Runs the lesson on the process's terminal (raw mode and the alternate
/// screen, restored on every exit) and returns the report of the phases
/// that ended, and the phase that failed if one did. SIGINT, SIGTERM and
/// SIGHUP stop it like `q`.
pub fn run(cands: &[Candidate], opts: &TestOptions) -> anyhow::Result<Outcome> {
    // Before any thread exists, so that all inherit the blocked mask.
    let mut signals = crate::netns::TerminationSignals::block()?;
    let started = SystemTime::now();
    let kernel_release = super::kernel_release()?;
    let mut taken = TakenTerminal::take()
        .map_err(|e| anyhow::anyhow!("cannot take over the terminal for the lesson: {e}"))?;
    let mut stop = || signals.wait(0).is_some();
    let (results, failure) = run_with_backend(
        taken.terminal(),
        cands,
        opts,
        &mut TerminalEvents::new(),
        &mut stop,
        &mut live_phase,
    )?;
    Ok(Outcome {
        report: Report {
            options: opts.clone(),
            results,
            started,
            kernel_release,
        },
        failure,
    })
}

/// What the lesson does after a phase's run.
enum After {
    Advance,
    Again,
    Quit,
}

/// The lesson over any backend, event source and phase runner; `stop`
/// says when a signal asks to quit. Returns the results of the phases that
/// ended, in phase order, and the phase that failed (which ended the
/// lesson), if one did.
pub fn run_with_backend<B: Backend>(
    terminal: &mut Terminal<B>,
    cands: &[Candidate],
    opts: &TestOptions,
    events: &mut dyn EventSource,
    stop: &mut dyn FnMut() -> bool,
    run_phase: &mut PhaseRunner,
) -> anyhow::Result<(Vec<ConfigResult>, Option<PhaseFailure>)>
where
    B::Error: Send + Sync + 'static,
{
    let phases = cands
        .iter()
        .map(|c| Phase {
            name: c.name.clone(),
            caption: caption(c),
        })
        .collect();
    let warmup = opts.warmup.as_secs_f64();
    let mut lesson = Lesson::new(phases, opts.duration.as_secs_f64(), warmup);
    let mut screen = Screen::new(cands.len());
    let mut index = 0;
    let mut tag = 0;
    while index < cands.len() {
        lesson.start_phase(index);
        screen.draw(terminal, &mut lesson, opts)?;
        let feed = ProbeFeed::new();
        let mut wanted = None;
        let mut draw_error = None;
        let result = run_phase(
            &cands[index],
            tag,
            opts,
            feed.clone(),
            &mut |t, snapshot| {
                if stop() {
                    wanted = Some(LessonAction::Quit);
                }
                let (samples, missed) = feed.drain();
                lesson.on_missed(missed);
                lesson.on_tick(t, snapshot.filter(|s| screen.is_new(s)), samples);
                while wanted.is_none() {
                    match events.next(Duration::ZERO) {
                        Ok(Some(Event::Key(key))) => wanted = lesson.on_key(key),
                        Ok(Some(_)) => {}
                        Ok(None) => break,
                        Err(e) => {
                            draw_error = Some(anyhow::Error::from(e));
                            wanted = Some(LessonAction::Quit);
                        }
                    }
                }
                if let Err(e) = screen.draw(terminal, &mut lesson, opts) {
                    draw_error = Some(e);
                    wanted = Some(LessonAction::Quit);
                }
                match wanted {
                    None => Steer::Continue,
                    // Past the warm-up a phase cut short still has numbers.
                    Some(LessonAction::Next) if t >= warmup => Steer::EndNow,
                    Some(_) => Steer::Abort,
                }
            },
        );
        tag += 1;
        if let Some(e) = draw_error {
            return Err(e);
        }
        let after = match (result, wanted) {
            (Ok(r), None) => {
                screen.set_row(index, r);
                lesson.status = None;
                After::Advance
            }
            (Ok(mut r), Some(LessonAction::Next)) => {
                lesson.status = Some(format!(
                    "{} cut short at {:.1} s: its row covers {:.1} s after the warm-up",
                    r.name, lesson.t, r.summary.measured_s
                ));
                r.name = format!("{} (cut)", r.name);
                screen.set_row(index, r);
                After::Advance
            }
            (Err(_), Some(LessonAction::Next)) => {
                lesson.status = Some(format!(
                    "{} skipped in its warm-up: no row",
                    cands[index].name
                ));
                After::Advance
            }
            (_, Some(LessonAction::Repeat)) => After::Again,
            (_, Some(LessonAction::Quit)) => After::Quit,
            (Err(error), None) => {
                let failure = PhaseFailure {
                    phase: cands[index].name.clone(),
                    index,
                    of: cands.len(),
                    error,
                };
                return Ok((screen.into_results(), Some(failure)));
            }
        };
        match after {
            After::Quit => break,
            After::Again => continue,
            After::Advance => {}
        }
        if lesson.end_phase() || lesson.stage == Stage::Over {
            match hold(terminal, &mut lesson, &mut screen, opts, events, stop)? {
                LessonAction::Quit => break,
                LessonAction::Repeat => continue,
                LessonAction::Next => {}
            }
        }
        index += 1;
    }
    Ok((screen.into_results(), None))
}

/// Waits between phases (paused) or at the end: `p` or `n` goes on, `r`
/// repeats the phase that ended, `q` quits.
fn hold<B: Backend>(
    terminal: &mut Terminal<B>,
    lesson: &mut Lesson,
    screen: &mut Screen,
    opts: &TestOptions,
    events: &mut dyn EventSource,
    stop: &mut dyn FnMut() -> bool,
) -> anyhow::Result<LessonAction>
where
    B::Error: Send + Sync + 'static,
{
    loop {
        screen.draw(terminal, lesson, opts)?;
        if stop() {
            return Ok(LessonAction::Quit);
        }
        let Some(Event::Key(key)) = events.next(HOLD_FRAME)? else {
            continue;
        };
        match lesson.on_key(key) {
            Some(LessonAction::Next) if lesson.stage == Stage::Held => {
                lesson.paused = false;
                return Ok(LessonAction::Next);
            }
            Some(LessonAction::Next) => {}
            Some(a) => return Ok(a),
            None if lesson.stage == Stage::Held && !lesson.paused => return Ok(LessonAction::Next),
            None => {}
        }
    }
}

/// The phases' results and what the screen last showed: the table's
/// width and version, and the newest snapshot's time (a snapshot is taken
/// in only once).
struct Screen {
    rows: Vec<Option<ConfigResult>>,
    /// Bumped at each change of `rows`.
    version: u64,
    table_for: Option<(u16, u64)>,
    last_snapshot: Option<Instant>,
}

impl Screen {
    fn new(phases: usize) -> Screen {
        Screen {
            rows: vec![None; phases],
            version: 0,
            table_for: None,
            last_snapshot: None,
        }
    }

    /// The phases' results, in phase order.
    fn into_results(self) -> Vec<ConfigResult> {
        self.rows.into_iter().flatten().collect()
    }

    fn set_row(&mut self, index: usize, r: ConfigResult) {
        self.rows[index] = Some(r);
        self.version += 1;
    }

    fn is_new(&mut self, s: &Snapshot) -> bool {
        let new = self.last_snapshot != Some(s.taken_at);
        self.last_snapshot = Some(s.taken_at);
        new
    }

    /// Redraws, re-rendering the table when a row came or the width
    /// changed.
    fn draw<B: Backend>(
        &mut self,
        terminal: &mut Terminal<B>,
        lesson: &mut Lesson,
        opts: &TestOptions,
    ) -> anyhow::Result<()>
    where
        B::Error: Send + Sync + 'static,
    {
        let width = terminal.size()?.width;
        if self.table_for != Some((width, self.version)) {
            self.table_for = Some((width, self.version));
            let done: Vec<ConfigResult> = self.rows.iter().flatten().cloned().collect();
            lesson.table = if done.is_empty() {
                Vec::new()
            } else {
                table::lines_at(
                    &Report {
                        options: opts.clone(),
                        results: done,
                        started: SystemTime::UNIX_EPOCH,
                        kernel_release: String::new(),
                    },
                    width,
                )
            };
        }
        terminal.draw(|f| draw_lesson(f, lesson))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::testdata;
    use crate::load::feed::Probe;
    use crate::load::stats::Sample;
    use ratatui::backend::TestBackend;
    use std::io;

    /// No key is ever pressed.
    struct NoKeys;

    impl EventSource for NoKeys {
        fn next(&mut self, _: Duration) -> io::Result<Option<Event>> {
            Ok(None)
        }
    }

    #[test]
    fn a_phase_that_fails_ends_the_lesson_keeping_the_rows_before_it() {
        let cands = Candidate::demo().unwrap();
        let opts = TestOptions {
            duration: Duration::from_secs(3),
            warmup: Duration::from_secs(1),
            ..TestOptions::default()
        };
        let done = testdata::report().results.remove(0);
        let mut ran = Vec::new();
        // Phase 1 runs to its end (its progress ticks and a probe sample
        // on the way); phase 2 fails to start its load; phase 3 must not
        // run.
        let mut runner = |cand: &Candidate,
                          _tag: usize,
                          _opts: &TestOptions,
                          feed: ProbeFeed,
                          progress: &mut dyn FnMut(f64, Option<Snapshot>) -> Steer|
         -> anyhow::Result<ConfigResult> {
            ran.push(cand.name.clone());
            if ran.len() == 2 {
                anyhow::bail!(
                    "testing {}: binding UDP 10.0.0.2:5203: address in use",
                    cand.name
                );
            }
            for t in [0.5, 1.5, 3.0] {
                feed.push(Probe::Ping, Sample::rtt(t - 0.1, 12_000.0));
                assert_eq!(progress(t, None), Steer::Continue);
            }
            Ok(ConfigResult {
                name: cand.name.clone(),
                ..done.clone()
            })
        };
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        let (results, failure) = run_with_backend(
            &mut terminal,
            &cands,
            &opts,
            &mut NoKeys,
            &mut || false,
            &mut runner,
        )
        .unwrap();
        assert_eq!(ran, [cands[0].name.clone(), cands[1].name.clone()]);
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].name, cands[0].name);
        let failure = failure.expect("the second phase failed");
        assert_eq!((failure.index, failure.of), (1, 3));
        assert_eq!(failure.phase, cands[1].name);
        let text = format!("{:#}", failure.into_error());
        assert!(
            text.starts_with(&format!("phase 2/3 ({}) failed", cands[1].name)),
            "{text}"
        );
        assert!(text.ends_with("address in use"), "{text}");
    }
}
