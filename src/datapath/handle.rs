//! The handle to the running datapath (`Datapath`): splits the bridge into
//! its two lanes and each port into a read half and a write half, spawns
//! one thread per direction (each reads the port its frames come from and
//! writes the other), hands out the snapshot reader and commanders, and on
//! shutdown (or drop) stops both threads and returns their final
//! snapshots merged.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::bridge::Bridge;
use crate::dir::Dir;
use crate::port::{FramePort, PortHalves};

use super::command::Commander;
use super::config::DatapathConfig;
use super::driver::{Driver, Ending, LanePorts};
use super::error::DatapathError;
use super::mailbox::SnapshotReader;
use super::snapshot::{LaneSnapshot, LiveSnapshot};

type Thread = JoinHandle<Result<LaneSnapshot, DatapathError>>;

/// Handle to the running datapath threads. Dropping it shuts them down.
pub struct Datapath {
    commander: Commander,
    /// By `Dir::index()`; empty once stopped.
    threads: Vec<Thread>,
    snapshots: SnapshotReader,
}

impl Datapath {
    /// Starts one thread per direction. `left` and `right` are the ports on
    /// either side of the bridge.
    pub fn spawn(
        bridge: Bridge,
        left: Box<dyn FramePort>,
        right: Box<dyn FramePort>,
        cfg: DatapathConfig,
    ) -> Result<Datapath, DatapathError> {
        let offload = left.offload() && right.offload();
        let [left, right] = [left.split()?, right.split()?];
        let (commander, inboxes) = Commander::new()?;
        let snapshots = SnapshotReader::default();
        let ended = Arc::new(AtomicBool::new(false));
        let doorbells = inboxes.each_ref().map(|i| i.wake.clone());
        // Left→right reads the left port and writes the right one.
        let PortHalves {
            rx: left_rx,
            tx: left_tx,
        } = left;
        let PortHalves {
            rx: right_rx,
            tx: right_tx,
        } = right;
        let ports = [
            LanePorts {
                rx: left_rx,
                tx: right_tx,
                offload,
            },
            LanePorts {
                rx: right_rx,
                tx: left_tx,
                offload,
            },
        ];
        let mut drivers = Vec::with_capacity(2);
        for (((dir, lane), ports), inbox) in Dir::ALL
            .into_iter()
            .zip(bridge.into_lanes())
            .zip(ports)
            .zip(inboxes)
        {
            let ending = Ending {
                ended: ended.clone(),
                peer: doorbells[dir.reverse().index()].clone(),
            };
            drivers.push(Driver::new(
                dir,
                lane,
                ports,
                cfg,
                inbox,
                ending,
                snapshots.clone(),
            )?);
        }
        let mut datapath = Datapath {
            commander,
            threads: Vec::with_capacity(2),
            snapshots,
        };
        for (dir, mut driver) in Dir::ALL.into_iter().zip(drivers) {
            // The kernel keeps 15 bytes of it ("bloatbox-datapa"); panics
            // and debuggers show it whole.
            let name = format!("bloatbox-datapath-{}", dir.dev());
            match std::thread::Builder::new()
                .name(name)
                .spawn(move || driver.run())
            {
                Ok(thread) => datapath.threads.push(thread),
                // Dropping `datapath` stops the thread already started.
                Err(e) => return Err(e.into()),
            }
        }
        Ok(datapath)
    }

    /// A reader of the latest snapshots the threads published (cheap to clone,
    /// never blocks the datapath).
    pub fn snapshots(&self) -> SnapshotReader {
        self.snapshots.clone()
    }

    /// Queues a command (see `Commander::send`).
    pub fn command(&self, cmd: super::Command) -> Result<(), DatapathError> {
        self.commander.send(cmd)
    }

    /// A handle that queues commands for the threads (cheap to clone; usable
    /// from any thread).
    pub fn commander(&self) -> Commander {
        self.commander.clone()
    }

    /// Both threads have returned (after a shutdown, an error or a panic:
    /// either direction's end ends the other).
    pub fn is_finished(&self) -> bool {
        self.threads.iter().all(|t| t.is_finished())
    }

    /// Stops both threads and returns their final snapshots merged, or the
    /// first direction's error.
    pub fn shutdown(mut self) -> Result<LiveSnapshot, DatapathError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<LiveSnapshot, DatapathError> {
        // Fails only if both threads already stopped; joining then returns
        // their results.
        let _ = self.commander.shutdown();
        let results: Vec<_> = self.threads.drain(..).map(join).collect();
        match <[_; 2]>::try_from(results) {
            Ok([l2r, r2l]) => Ok(LiveSnapshot::merge([&l2r?, &r2l?])),
            // Stopped before, or only one thread could be started.
            Err(_) => Err(DatapathError::Stopped),
        }
    }
}

/// Waits for a thread and returns what it returned.
fn join(thread: Thread) -> Result<LaneSnapshot, DatapathError> {
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

impl Drop for Datapath {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            if let Err(e) = self.stop() {
                tracing::warn!("datapath shutdown: {e}");
            }
        }
    }
}
