//! The driver's command handling: draining the command queue at the top of
//! an iteration and applying each command (link parameters, `set` plans,
//! tc lines) at the current time, then deciding again whether GSO
//! super-frames pass whole.

use std::sync::mpsc::TryRecvError;

use crate::dir::Dir;
use crate::tc::{Object, TcCommand, Verb};
use crate::time::{Clock, Instant};

use super::super::command::Command;
use super::Driver;

impl Driver {
    /// Applies every queued command; true if the thread must stop.
    pub(super) fn drain_commands(&mut self) -> bool {
        loop {
            match self.commands.try_recv() {
                Ok(Command::Shutdown) => return true,
                Ok(Command::SetLink { dir, change, reply }) => {
                    let now = self.clock.now();
                    let mut params = *self.bridge.path(dir).params();
                    (change.0)(&mut params);
                    self.bridge.path_mut(dir).set_params(params, now);
                    self.refresh_gso();
                    let _ = reply.try_send(params);
                }
                Ok(Command::EditLink { plan, reply }) => {
                    let now = self.clock.now();
                    let _ = reply.try_send(plan.apply_to(&mut self.bridge, now));
                    self.refresh_gso();
                }
                Ok(Command::Tc { line, reply }) => {
                    let now = self.clock.now();
                    // The asker may have given up waiting: nothing to do then.
                    let _ = reply.try_send(self.apply_tc(&line, now));
                    self.refresh_gso();
                }
                Err(TryRecvError::Empty) => return false,
                // The handle is gone: nobody can stop us later, so stop now.
                Err(TryRecvError::Disconnected) => return true,
            }
        }
    }

    /// Runs one tc line on the tree of the direction it names; `tc qdisc
    /// show` without a device lists both, each line naming its device.
    fn apply_tc(&mut self, line: &str, now: Instant) -> Result<String, String> {
        let cmd = TcCommand::parse(line).map_err(|e| e.0)?;
        let Some(dir) = cmd.dev else {
            if cmd.verb == Verb::Show && cmd.object == Object::Qdisc {
                return self.show_both(&cmd, now);
            }
            return Err(format!("{line:?}: name a device: dev left or dev right"));
        };
        self.bridge
            .path_mut(dir)
            .edit_qdisc(now, |qdisc, t, drops| match qdisc.as_tree() {
                Some(tree) => crate::tc::run(tree, &cmd, t, drops)
                    .map(Option::unwrap_or_default)
                    .map_err(|e| e.0),
                None => Err("this direction's qdisc was not built as a tc tree".to_string()),
            })
    }

    /// A `show` over both devices.
    fn show_both(&mut self, cmd: &TcCommand, now: Instant) -> Result<String, String> {
        let mut dumps = Vec::new();
        for dir in Dir::ALL {
            let dump = self.bridge.path_mut(dir).edit_qdisc(now, |qdisc, t, _| {
                qdisc
                    .as_tree()
                    .map(|tree| (crate::qdisc::Qdisc::dump(tree, t), tree.dev().tx_queues))
            });
            dumps.push((
                dir,
                dump.ok_or("this direction's qdisc was not built as a tc tree")?,
            ));
        }
        let devs: Vec<_> = dumps
            .iter()
            .map(|(dir, (root, tx_queues))| crate::tc::show::DevDump {
                dev: *dir,
                root,
                tx_queues: *tx_queues,
            })
            .collect();
        crate::tc::show::render(cmd, &devs).map_err(|e| e.0)
    }
}
