//! The handle to the running datapath thread (`Datapath`): spawns the
//! driver on its own thread, hands out the snapshot reader and commanders,
//! and on shutdown (or drop) stops the thread and returns its final
//! snapshot.

use std::io;
use std::sync::mpsc::sync_channel;
use std::sync::Arc;
use std::thread::JoinHandle;

use nix::sys::eventfd::{EfdFlags, EventFd};

use crate::bridge::Bridge;
use crate::port::FramePort;

use super::command::{Command, Commander, COMMAND_QUEUE};
use super::config::DatapathConfig;
use super::driver::Driver;
use super::error::DatapathError;
use super::mailbox::SnapshotReader;
use super::snapshot::LiveSnapshot;

/// Handle to the running datapath thread. Dropping it shuts the thread down.
pub struct Datapath {
    commander: Commander,
    thread: Option<JoinHandle<Result<LiveSnapshot, DatapathError>>>,
    snapshots: SnapshotReader,
}

impl Datapath {
    /// Starts the thread. `left` and `right` are the ports on either side of
    /// the bridge.
    pub fn spawn(
        bridge: Bridge,
        left: Box<dyn FramePort>,
        right: Box<dyn FramePort>,
        cfg: DatapathConfig,
    ) -> Result<Datapath, DatapathError> {
        let (tx, rx) = sync_channel(COMMAND_QUEUE);
        let wake = Arc::new(
            EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)
                .map_err(io::Error::from)?,
        );
        let snapshots = SnapshotReader::default();
        let mut driver = Driver::new(
            bridge,
            [left, right],
            cfg,
            rx,
            wake.clone(),
            snapshots.clone(),
        )?;
        let thread = std::thread::Builder::new()
            .name("bloatbox-datapath".into())
            .spawn(move || driver.run())?;
        Ok(Datapath {
            commander: Commander { commands: tx, wake },
            thread: Some(thread),
            snapshots,
        })
    }

    pub fn snapshots(&self) -> SnapshotReader {
        self.snapshots.clone()
    }

    /// Queues a command without blocking.
    pub fn command(&self, cmd: Command) -> Result<(), DatapathError> {
        self.commander.send(cmd)
    }

    pub fn commander(&self) -> Commander {
        self.commander.clone()
    }

    /// The thread has returned (after a shutdown, an error or a panic).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Stops the thread and returns its final snapshot.
    pub fn shutdown(mut self) -> Result<LiveSnapshot, DatapathError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<LiveSnapshot, DatapathError> {
        let thread = self.thread.take().ok_or(DatapathError::Stopped)?;
        // Blocks only while the queue is full (the thread drains it at least
        // once per publish period). If the thread already stopped, the queue
        // is gone and joining returns its result.
        if self.commander.commands.send(Command::Shutdown).is_ok() {
            let _ = self.commander.wake.write(1);
        }
        match thread.join() {
            Ok(result) => result,
            Err(panic) => Err(DatapathError::Panicked(
                panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown payload".into()),
            )),
        }
    }
}

impl Drop for Datapath {
    fn drop(&mut self) {
        if self.thread.is_some() {
            if let Err(e) = self.stop() {
                tracing::warn!("datapath shutdown: {e}");
            }
        }
    }
}
