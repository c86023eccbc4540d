//! The TUI tier, one binary: the terminal UI without a terminal. An `App`
//! is fed snapshots of the real core (`tui::fixtures`, no daemon, no
//! sleeps) and its keys, state, widgets and whole screens are checked,
//! the screens through ratatui's TestBackend against the committed insta
//! snapshots in `tests/tui/snapshots/` (named `tui__MODULE__NAME.snap`).
//! Needs neither root nor a terminal; runs anywhere in seconds.

#[path = "../common/mod.rs"]
mod common;

mod flows;
mod head_of_line;
mod keys;
mod lesson;
mod menu;
mod probes;
mod screens;
mod session;
mod state;
mod widgets;
