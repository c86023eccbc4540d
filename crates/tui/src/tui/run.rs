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
use bloatbox_live::process::TerminalWatch;
use crossterm::event::Event;
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::{DefaultTerminal, Terminal};
use std::io;
use std::time::Duration;

/// Where input events come from.
pub trait EventSource {
    /// Waits up to `timeout` for an event; `Ok(None)` when none came.
    fn next(&mut self, timeout: Duration) -> io::Result<Option<Event>>;
}

/// The terminal's own events (crossterm), and its hang-up as an error.
///
/// crossterm's reader loops for ever, inside `poll`, on a terminal that hung
/// up (its read returns EOF or EIO every time: a closed tmux pane or SSH
/// session whose SIGHUP did not reach this process, e.g. under `setsid` or
/// `nohup`), burning a core and never returning to notice a signal. So
/// the terminal is watched (`process::TerminalWatch`: poll(2) on the
/// descriptor crossterm reads), and crossterm is
/// asked only for input that is there: a hang-up or error ends the TUI with
/// an error, as a failed write does, and its caller tears down.
#[derive(Default)]
pub struct TerminalEvents {
    tty: TerminalWatch,
}

impl TerminalEvents {
    /// Watches the terminal crossterm reads.
    pub fn new() -> TerminalEvents {
        TerminalEvents::default()
    }
}

impl EventSource for TerminalEvents {
    fn next(&mut self, timeout: Duration) -> io::Result<Option<Event>> {
        // A hang-up first, then what crossterm already holds (a resize, a
        // key parsed with an earlier one), then the terminal's input.
        self.tty.wait(Duration::ZERO)?;
        if !crossterm::event::poll(Duration::ZERO)? && !self.tty.wait(timeout)? {
            return Ok(None);
        }
        if crossterm::event::poll(Duration::ZERO)? {
            crossterm::event::read().map(Some)
        } else {
            Ok(None)
        }
    }
}

/// The process's terminal, taken over for a TUI (raw mode, the alternate
/// screen) and given back when dropped: on return, on error and while
/// unwinding, and by the panic hook before the panic message.
///
/// Nothing here prints to a terminal that is gone: ratatui's own
/// `restore`, its panic hook and its terminal's drop `eprintln!` when the
/// terminal fails, which panics on a hung-up terminal (EIO), and a panic in
/// the panic hook aborts the process before any guard removes the link.
pub struct TakenTerminal {
    terminal: Option<DefaultTerminal>,
}

impl TakenTerminal {
    /// Enters raw mode and the alternate screen (ratatui's `try_init`
    /// without its panic hook), with a panic hook that gives the terminal
    /// back without printing.
    pub fn take() -> io::Result<TakenTerminal> {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = ratatui::try_restore();
            hook(info);
        }));
        crossterm::terminal::enable_raw_mode()?;
        // From here, dropping it gives the terminal back (on an error too).
        let mut taken = TakenTerminal { terminal: None };
        crossterm::execute!(io::stdout(), crossterm::terminal::EnterAlternateScreen)?;
        taken.terminal = Some(Terminal::new(CrosstermBackend::new(io::stdout()))?);
        Ok(taken)
    }

    /// The terminal to draw on.
    pub fn terminal(&mut self) -> &mut DefaultTerminal {
        self.terminal.as_mut().expect("taken until dropped")
    }
}

impl Drop for TakenTerminal {
    fn drop(&mut self) {
        if let Some(mut terminal) = self.terminal.take() {
            let shown = terminal.show_cursor().is_ok();
            let _ = ratatui::try_restore();
            if !shown {
                // The terminal is gone: its drop would print that it could
                // not show the cursor (and panic doing so).
                std::mem::forget(terminal);
            }
        } else {
            let _ = ratatui::try_restore();
        }
    }
}

/// Runs the TUI on the process's terminal until `q`, redrawing `hz` times
/// a second (1..=60). Enters raw mode and the alternate screen; restores
/// both on exit, on error and on panic (`TakenTerminal`). A terminal that
/// hangs up ends it with an error (`TerminalEvents`). Tracing must go to a
/// file.
pub fn run(control: &mut dyn Control, hz: u32) -> anyhow::Result<()> {
    let mut taken = TakenTerminal::take()
        .map_err(|e| anyhow::anyhow!("cannot take over the terminal for the TUI: {e}"))?;
    let mut app = App::new();
    run_with_backend(
        taken.terminal(),
        &mut app,
        control,
        &mut TerminalEvents::new(),
        hz,
    )
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
