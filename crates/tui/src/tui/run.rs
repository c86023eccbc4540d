//! The TUI's driver: one loop that takes the newest snapshot from the
//! daemon, redraws, waits up to one frame for a key, and sends the action
//! the key produced. `run` owns the real terminal; `run_with_backend` is
//! the same loop over any ratatui backend and any `EventSource`, so a test
//! drives it with scripted keys and snapshots and no sleeps.
//!
//! Logs: while the TUI owns the terminal nothing else may write to it. The
//! caller must send tracing to a file (or nowhere) before calling `run`;
//! `run` installs no subscriber and writes nothing but the screen.

use super::render::draw;
use super::state::App;
use super::{Action, Control};
use crossterm::event::Event;
use ratatui::backend::Backend;
use ratatui::Terminal;
use std::io;
use std::time::Duration;

/// Where input events come from.
pub trait EventSource {
    /// Waits up to `timeout` for an event; `Ok(None)` when none came.
    fn next(&mut self, timeout: Duration) -> io::Result<Option<Event>>;
}

/// The terminal's own events (crossterm).
pub struct TerminalEvents;

impl EventSource for TerminalEvents {
    fn next(&mut self, timeout: Duration) -> io::Result<Option<Event>> {
        if crossterm::event::poll(timeout)? {
            crossterm::event::read().map(Some)
        } else {
            Ok(None)
        }
    }
}

/// Restores the terminal when dropped: on return, on error and while
/// unwinding.
pub struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// Runs the TUI on the process's terminal until `q`, redrawing `hz` times
/// a second (1..=60). Enters raw mode and the alternate screen; restores
/// both on exit, on error and on panic (ratatui's panic hook restores
/// before the panic message is printed). Tracing must go to a file.
pub fn run(control: &mut dyn Control, hz: u32) -> anyhow::Result<()> {
    let mut terminal = ratatui::try_init()
        .map_err(|e| anyhow::anyhow!("cannot take over the terminal for the TUI: {e}"))?;
    let _restore = Restore;
    let mut app = App::new();
    run_with_backend(&mut terminal, &mut app, control, &mut TerminalEvents, hz)
}

/// The loop of `run` over any backend and event source. Returns after the
/// `Quit` action was sent to `control`, or on a terminal or event error.
pub fn run_with_backend<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    control: &mut dyn Control,
    events: &mut dyn EventSource,
    hz: u32,
) -> anyhow::Result<()>
where
    B::Error: Send + Sync + 'static,
{
    let frame = Duration::from_secs(1) / hz.clamp(1, 60);
    app.quit_stops_link = control.quit_stops_link();
    loop {
        if let Some(s) = control.snapshot() {
            app.on_snapshot(s);
        }
        let (samples, missed) = control.probe_samples();
        app.on_probe_samples(samples, missed);
        app.on_connection(control.connected());
        terminal.draw(|f| draw(f, app))?;
        // Resizes and other events only need the redraw above.
        let Some(Event::Key(key)) = events.next(frame)? else {
            continue;
        };
        let Some(action) = app.on_key(key) else {
            continue;
        };
        let reply = control.send(&action);
        if action == Action::Quit {
            return Ok(());
        }
        app.on_reply(&action, reply);
    }
}
