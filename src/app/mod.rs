//! The subcommands behind `bloatbox`'s command line, one module per group;
//! `main.rs` only parses arguments and calls these:
//! - `up`: `up` (set up the namespaces and TAPs, run the datapath, the
//!   control socket and optionally the TUI until a signal or the TUI quits,
//!   then remove everything) and `down` (remove what a killed run left);
//! - `local`: the TUI's `Control` inside `up`, over the datapath's queue;
//! - `exec`: `exec`, a command in one side's namespace;
//! - `check`: `check`, a configuration file validated;
//! - `stats`: `stats`, the running daemon's counters;
//! - `daemon`: `tc`, `set`, `metrics` and `top`, over the control socket;
//! - `offline`: `tc -c FILE` answered from the configuration when no
//!   daemon runs.
//!
//! The link they bring up is `crate::live` (`LiveLink`, re-exported here),
//! shared with `bloatbox test` and `crate::harness`.

mod check;
pub mod daemon;
mod exec;
mod local;
mod offline;
mod stats;
pub mod target;
mod up;

pub use check::check;
pub use exec::exec;
pub use stats::stats;
pub use up::{down, up, UpOptions};

pub use crate::live::LiveLink;
pub use crate::netns::Side;
pub use crate::output::write_stdout;
