//! The live terminal UI of both directions of the link (ratatui + crossterm):
//! link figures, the qdisc tree with live counters, a per-flow table, time
//! series and an event log, plus keys that change the link and switch the
//! root qdisc between presets.
//!
//! Split into a pure core and a thin driver, like the rest of the crate:
//! - `state`: `App`, everything the screen shows, fed with `on_snapshot` and
//!   `on_key` (which returns the `Action` to send to the daemon);
//! - `render` and `widgets`: `draw(frame, &app)`, reading only `App`;
//! - `run`: the terminal driver (raw mode, alternate screen, restore on exit
//!   and on panic) and `run_with_backend`, the same loop over any ratatui
//!   backend and a scripted event source for tests;
//! - `fixtures`: realistic snapshots made by driving the real core, for
//!   tests and screenshots for the documents.
//!
//! - `remote`: `RemoteControl`, the `Control` over the control socket;
//! - `lesson` and `lesson_screen`: the lesson of `demo --tui` and
//!   `test --tui` (its state, fed by `experiment::lesson`, and its screen):
//!   the phases with their captions, the probes' measured round trips
//!   beside the link's queue delays, the comparison table so far.
//!
//! The daemon is reached through `Control`: `RemoteControl` implements it
//! over the socket, `bloatbox up` over the datapath's command queue, tests
//! use a fake.

pub mod fixtures;
pub mod lesson;
pub mod lesson_screen;
pub mod probe_panel;
pub mod probes;
pub mod remote;
pub mod render;
pub mod run;
pub mod state;
pub mod widgets;

pub use fixtures::FixtureError;
pub use remote::RemoteControl;
pub use render::{draw, text_capture};
pub use run::{run, run_with_backend, EventSource};
pub use state::App;

/// The TUI edits the link one `set` field at a time.
pub use crate::control::field::LinkField;

use crate::bridge::BridgeSnapshot;
use crate::control::field::FieldError;
use crate::control::{DaemonRefusal, DecodeError};
use crate::datapath::{DatapathError, EditError, LiveSnapshot, TcFailure};
use crate::dir::Dir;
use crate::load::feed::Probe;
use crate::load::stats::Sample;
use crate::packet::Drops;
use crate::qdisc::kinds;
use crate::qdisc::tree::{DevSpec, QdiscTree};
use crate::tc::syntax::{self, Example};
use crate::tc::TcCommand;
use crate::time::{Instant, NS_PER_US};
use std::fmt;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

/// What the TUI receives from the daemon at each refresh: the bridge and
/// the datapath's own health.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Snapshot {
    /// The daemon's snapshot of both directions.
    pub bridge: BridgeSnapshot,
    /// The datapath's timer wake-up lateness, p50, p99 and p99.9, µs.
    pub lateness_us: [u64; 3],
    /// Datapath wake-ups since start.
    pub wakeups: u64,
    /// When the daemon took the snapshot (CLOCK_MONOTONIC).
    pub taken_at: Instant,
}

impl Snapshot {
    /// The TUI's part of a datapath snapshot.
    pub fn of(live: &LiveSnapshot) -> Snapshot {
        let us = |ns: u64| ns / NS_PER_US;
        Snapshot {
            bridge: live.bridge.clone(),
            lateness_us: [
                us(live.lateness.p50_ns),
                us(live.lateness.p99_ns),
                us(live.lateness.p999_ns),
            ],
            wakeups: live.wakeups.total,
            taken_at: live.at,
        }
    }
}

/// A root qdisc the TUI can switch a direction to: a kind of the table
/// `crate::qdisc::kinds::BUILTIN` whose syntax has a menu example
/// (`Syntax::example`), in the table's order.
#[derive(Clone, Copy)]
pub struct Preset {
    name: &'static str,
    example: Example,
    /// Its example is refused on a single-queue device (multiq's
    /// EOPNOTSUPP): offered only where the device has more TX queues.
    multi_queue: bool,
}

static MENU: LazyLock<Vec<Preset>> = LazyLock::new(|| {
    kinds::BUILTIN
        .iter()
        .filter_map(|entry| {
            let example = syntax::syntax(entry.name)?.example?;
            Some(Preset {
                name: entry.name,
                example,
                multi_queue: !takes_on_one_queue(example),
            })
        })
        .collect()
});

/// Whether a single-queue device takes the lines of `example` (on a link
/// of 10mbit), as tc would on that device.
fn takes_on_one_queue(example: Example) -> bool {
    let dir = Dir::LeftToRight;
    let Ok(mut tree) = QdiscTree::new(DevSpec::new(dir, kinds::BUILTIN)) else {
        return false;
    };
    example(dir, 1_250_000).iter().all(|line| {
        TcCommand::parse(line).is_ok_and(|cmd| {
            crate::tc::run(&mut tree, &cmd, Instant::ZERO, &mut Drops::new()).is_ok()
        })
    })
}

/// The keys that pick a menu entry, in the menu's order: the digits, then
/// the letters the menu does not use otherwise (j and k move, m and q
/// close it).
pub const MENU_KEYS: &str = "123456789abcdefghilnoprstuvwxyz";

impl Preset {
    /// The menu, in the order of the kind table.
    pub fn all() -> &'static [Preset] {
        &MENU
    }

    /// The menu of a device with `tx_queues` TX queues: every entry whose
    /// lines that device takes.
    pub fn menu(tx_queues: u16) -> Vec<Preset> {
        MENU.iter()
            .copied()
            .filter(|p| tx_queues > 1 || !p.multi_queue)
            .collect()
    }

    /// The key that picks the menu's entry `index` (`MENU_KEYS`).
    pub fn key(index: usize) -> Option<char> {
        MENU_KEYS.chars().nth(index)
    }

    /// The menu entry key `c` picks (`MENU_KEYS`).
    pub fn index_of_key(c: char) -> Option<usize> {
        MENU_KEYS.chars().position(|k| k == c)
    }

    /// The menu entry of kind `name`.
    pub fn named(name: &str) -> Option<Preset> {
        Preset::all().iter().copied().find(|p| p.name == name)
    }

    /// The kind.
    pub fn name(self) -> &'static str {
        self.name
    }

    /// The tc command lines that install this preset as the root qdisc of
    /// `dir` (device `left` is the left→right egress). HTB and TBF shape to
    /// `rate_bytes_ps` (the link rate; 1gbit when the link is unlimited).
    pub fn tc_lines(self, dir: Dir, rate_bytes_ps: u64) -> Vec<String> {
        (self.example)(dir, rate_bytes_ps)
    }
}

impl PartialEq for Preset {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl fmt::Debug for Preset {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "Preset({})", self.name)
    }
}

/// What a key asks the daemon to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Change one link setting of one direction (value in core units, see
    /// `LinkField`).
    SetLink {
        /// The direction.
        dir: Dir,
        /// The setting.
        field: LinkField,
        /// The new value, in core units (bytes/s, ns, descriptors...).
        value: u64,
    },
    /// tc command lines, one per line, applied in order.
    Tc(String),
    /// Start (true) or stop (false) the latency probes across the link
    /// (`load::on_demand`; `bloatbox up` only).
    Probes(bool),
    /// Leave the TUI: in `bloatbox top` the daemon keeps running; in
    /// `bloatbox up` the link is stopped (see `Control::quit_stops_link`).
    Quit,
}

impl Action {
    /// The direction the action changes: a link setting's, or the device a
    /// tc line names (`dev left` is left→right).
    pub fn dir(&self) -> Option<Dir> {
        match self {
            Action::SetLink { dir, .. } => Some(*dir),
            Action::Tc(lines) => {
                let dev = lines.split_whitespace().skip_while(|w| *w != "dev").nth(1);
                match dev {
                    Some("left") => Some(Dir::LeftToRight),
                    Some("right") => Some(Dir::RightToLeft),
                    _ => None,
                }
            }
            Action::Probes(_) | Action::Quit => None,
        }
    }

    /// One line for the event log.
    pub fn describe(&self) -> String {
        match self {
            Action::SetLink { field, value, .. } => {
                format!("set {} {}", field.name(), field.show(*value))
            }
            Action::Tc(lines) => lines.lines().collect::<Vec<_>>().join("; "),
            Action::Probes(true) => "probes on: ping and UDP_RR from left to right".into(),
            Action::Probes(false) => "probes off".into(),
            Action::Quit => "quit".into(),
        }
    }
}

/// Why an action was not carried out, as the event log shows it.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The daemon refused the request over the control socket, in its
    /// words.
    #[error(transparent)]
    Refused(#[from] DaemonRefusal),
    /// The control socket could not be reached, even after reconnecting.
    #[error("control socket: {0:#}")]
    Socket(anyhow::Error),
    /// A reply that is not of the type the request's answer has.
    #[error(transparent)]
    Reply(#[from] DecodeError),
    /// Probes asked of `bloatbox top`.
    #[error(
        "the probes run inside the daemon's own TUI (`bloatbox up --tui`), not in `bloatbox top`"
    )]
    ProbesElsewhere,
    /// No probes in this daemon, and why (told each time they are asked
    /// for).
    #[error("no probes: {0:#}")]
    NoProbes(Arc<anyhow::Error>),
    /// The probes did not start.
    #[error("{0:#}")]
    Probes(anyhow::Error),
    /// The datapath did not take the command.
    #[error(transparent)]
    Datapath(#[from] DatapathError),
    /// The datapath did not answer in time.
    #[error("the datapath did not answer within {} s", .0.as_secs())]
    NoAnswer(Duration),
    /// A link edit the datapath refused.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// A tc line that failed.
    #[error(transparent)]
    Tc(#[from] TcFailure),
    /// A link field's value refused.
    #[error(transparent)]
    Field(#[from] FieldError),
    /// What the fixtures' simulated daemon does not do.
    #[error(transparent)]
    Fixture(#[from] FixtureError),
}

/// The daemon as the TUI sees it.
pub trait Control {
    /// Applies an action; `Ok` carries the daemon's reply text, `Err` why
    /// it was not carried out (shown in the event log).
    fn send(&mut self, action: &Action) -> Result<String, ControlError>;
    /// The newest snapshot, or `None` when there is nothing new.
    fn snapshot(&mut self) -> Option<Snapshot>;
    /// The probes' samples since the last call (times in seconds of
    /// CLOCK_MONOTONIC, the snapshots' clock) and how many were dropped
    /// unread; none where no probes run.
    fn probe_samples(&mut self) -> (Vec<(Probe, Sample)>, u64) {
        (Vec::new(), 0)
    }
    /// Whether the last attempt to reach the daemon succeeded (a remote
    /// daemon may exit, and another take its socket).
    fn connected(&self) -> bool {
        true
    }
    /// Whether quitting the TUI stops the link (`bloatbox up`, where the
    /// TUI runs inside the daemon): then `q` asks first.
    fn quit_stops_link(&self) -> bool {
        false
    }
}

/// `L→R` / `R→L`.
pub fn dir_label(dir: Dir) -> &'static str {
    match dir {
        Dir::LeftToRight => "L→R",
        Dir::RightToLeft => "R→L",
    }
}
