//! `bloatbox exec`: a command run inside one side's network namespace, its
//! exit code passed through.

use std::path::Path;

use crate::live::{load, setup};
use crate::netns::{self, Side};

/// `bloatbox exec left|right -- CMD...`: the command's exit code, or 128 +
/// the signal that ended it, or 127 if there is no such command (as a
/// shell says). The configuration is `config`, else `$BLOATBOX_CONFIG`,
/// as for `tc`, `set` and `stats`.
pub fn exec(side: Side, config: Option<&Path>, cmd: &[String]) -> anyhow::Result<u8> {
    let cfg = load(super::target::config_or_env(config).as_deref())?;
    let setup = setup(&cfg)?;
    let ns = match side {
        Side::Left => &setup.topology.left.netns,
        Side::Right => &setup.topology.right.netns,
    };
    match netns::exec_in(ns, cmd) {
        Err(e @ netns::NetnsError::CommandNotFound(_)) => {
            crate::errln!("bloatbox exec: {e}");
            Ok(127)
        }
        Err(e) => Err(e.into()),
        Ok(never) => match never {},
    }
}
