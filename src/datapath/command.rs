//! Requests to the running datapath (`Command`) and the bounded queue they
//! travel in: a `Commander` queues without blocking and rings an eventfd
//! the thread's epoll watches; the thread drains the queue at the top of a
//! loop iteration.

use std::io;
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::Arc;

use nix::sys::eventfd::EventFd;

use crate::dir::Dir;
use crate::link::LinkParams;

use super::error::DatapathError;

/// Depth of the command queue.
pub(super) const COMMAND_QUEUE: usize = 16;

/// Requests to the running datapath, applied at the top of a loop
/// iteration at the current time.
#[derive(Debug)]
pub enum Command {
    /// Publish a final snapshot and return.
    Shutdown,
    /// Change the link parameters of one direction (rate, delay, ring, BQL,
    /// coalescing...): `change` edits the parameters the path runs with
    /// now, on the datapath thread, so no caller works from a stale copy;
    /// frames in flight keep their schedule where the link allows it (see
    /// `Path::set_params`). The reply is the parameters now in force.
    SetLink {
        dir: Dir,
        change: LinkChange,
        reply: SyncSender<LinkParams>,
    },
    /// `set` arguments (`left.rate=10mbit`, ethtool lines, shape keys
    /// such as `left.loss=1%`; see `control::set`), parsed, applied to the
    /// current parameters and shapes of both directions, all or nothing;
    /// the reply is the effective configuration or the error naming the
    /// argument.
    EditLink {
        plan: crate::control::set::SetPlan,
        reply: SyncSender<Result<crate::control::set::Effective, String>>,
    },
    /// One tc command line (`tc qdisc|class|filter ... dev left|right ...`)
    /// for the qdisc tree of the direction its device names; the reply is
    /// its output (`show`) or its error.
    Tc {
        line: String,
        reply: SyncSender<Result<String, String>>,
    },
}

/// An edit of one direction's link parameters, run by the datapath.
pub struct LinkChange(pub Box<dyn FnOnce(&mut LinkParams) + Send>);

impl std::fmt::Debug for LinkChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkChange(..)")
    }
}

/// A cloneable way to queue commands for the datapath (for threads other
/// than the one holding the `Datapath`, e.g. the TUI).
#[derive(Clone)]
pub struct Commander {
    pub(super) commands: SyncSender<Command>,
    pub(super) wake: Arc<EventFd>,
}

impl Commander {
    /// Queues a command without blocking.
    pub fn send(&self, cmd: Command) -> Result<(), DatapathError> {
        match self.commands.try_send(cmd) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(DatapathError::QueueFull),
            Err(TrySendError::Disconnected(_)) => return Err(DatapathError::Stopped),
        }
        self.wake.write(1).map_err(io::Error::from)?;
        Ok(())
    }
}
