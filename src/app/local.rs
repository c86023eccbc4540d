//! The TUI's `Control` inside `bloatbox up`: the daemon reached directly,
//! through the datapath's snapshot slot and its `Commander`, without the
//! control socket: a field edit goes as a typed `set` plan, a tc line as
//! the line, which the commander reads and prints on this thread.

use crate::control::set::SetPlan;
use crate::datapath::{Command, Commander, Datapath, SnapshotReader};
use crate::load::feed::Probe;
use crate::load::on_demand::OnDemand;
use crate::load::stats::Sample;
use crate::time::Instant;
use crate::tui::{Action, ControlError};
use std::sync::Arc;

/// How long the TUI waits for the datapath to apply a tc line.
const TC_REPLY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The TUI's view of the daemon it runs in: snapshots straight from the
/// datapath's slot, link changes through its command queue as typed field
/// edits (`Command::EditLink` with `SetPlan::field`, the plan `bloatbox
/// set` makes over the control socket), so a change from the TUI and one
/// from `bloatbox set` at the same moment each change only their own field.
pub(super) struct LocalControl {
    commander: Commander,
    snapshots: SnapshotReader,
    /// Time of the last snapshot handed to the TUI.
    last: Option<Instant>,
    /// The latency probes across the link (`t`), or why there are none.
    probes: Result<OnDemand, Arc<anyhow::Error>>,
}

impl LocalControl {
    /// The TUI's control of `datapath`, with `probes` (their sockets
    /// opened while the daemon still held its privileges) or why there
    /// are none.
    pub(super) fn new(
        datapath: &Datapath,
        probes: Result<OnDemand, anyhow::Error>,
    ) -> LocalControl {
        LocalControl {
            commander: datapath.commander(),
            snapshots: datapath.snapshots(),
            last: None,
            probes: probes.map_err(Arc::new),
        }
    }

    /// Sends `cmd` (built around a reply channel) and waits for the reply.
    fn ask<T, E>(
        &self,
        cmd: impl FnOnce(std::sync::mpsc::SyncSender<Result<T, E>>) -> Command,
    ) -> Result<T, ControlError>
    where
        ControlError: From<E>,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.commander.send(cmd(tx))?;
        Ok(rx
            .recv_timeout(TC_REPLY_TIMEOUT)
            .map_err(|_| ControlError::NoAnswer(TC_REPLY_TIMEOUT))??)
    }
}

impl crate::tui::Control for LocalControl {
    fn send(&mut self, action: &Action) -> Result<String, ControlError> {
        match action {
            Action::Quit => Ok(String::new()),
            Action::Probes(on) => {
                let probes = match &mut self.probes {
                    Ok(probes) => probes,
                    Err(why) => return Err(ControlError::NoProbes(why.clone())),
                };
                if *on {
                    probes.start().map_err(ControlError::Probes)?;
                    return Ok(String::new());
                }
                // Stopped either way: a probe's own failure is only told.
                Ok(match probes.stop() {
                    Ok(()) => String::new(),
                    Err(e) => format!("a probe had failed: {e:#}"),
                })
            }
            Action::SetLink { dir, field, value } => {
                // Typed from the start: the field edit `set` makes of the
                // argument that says the same.
                let plan = SetPlan::field(*dir, *field, *value);
                self.ask(|reply| Command::EditLink { plan, reply })?;
                Ok(format!("{} {}", field.name(), field.show(*value)))
            }
            Action::Tc(lines) => {
                let mut replies = Vec::new();
                for line in lines.lines().filter(|l| !l.trim().is_empty()) {
                    let line = line.to_string();
                    replies.push(self.ask(|reply| Command::Tc { line, reply })?);
                }
                Ok(replies.concat())
            }
        }
    }

    fn snapshot(&mut self) -> Option<crate::tui::Snapshot> {
        let s = self.snapshots.latest()?;
        if self.last == Some(s.at) {
            return None;
        }
        self.last = Some(s.at);
        Some(crate::tui::Snapshot::of(&s))
    }

    fn probe_samples(&mut self) -> (Vec<(Probe, Sample)>, u64) {
        match &self.probes {
            Ok(p) if p.running() => p.drain(),
            _ => (Vec::new(), 0),
        }
    }

    fn quit_stops_link(&self) -> bool {
        true
    }
}
