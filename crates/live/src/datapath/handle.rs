//! The handle to the running datapath (`Datapath`): splits the bridge into
//! its two lanes and each port into a read half and a write half, spawns
//! one thread per direction (each reads the port its frames come from and
//! writes the other), hands out the snapshot reader and commanders, and on
//! shutdown (or drop) stops both threads and returns their final
//! snapshots merged. A stepped datapath (`Datapath::stepped`, for the
//! control fuzz target) has no threads: each direction is stepped on the
//! thread that queues a request for it.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::bridge::Bridge;
use crate::dir::Dir;
use crate::port::{FramePort, PortHalves};

use super::command::{Commander, SharedStepper, Stepper};
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
    /// A stepped datapath's directions, by `Dir::index()` (no threads);
    /// empty once stopped.
    stepped: Vec<Arc<Mutex<Driver>>>,
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
        let (mut datapath, drivers) = Datapath::build(bridge, left, right, cfg)?;
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

    /// The same datapath without threads, for the control fuzz target and
    /// tests of the request handler: a direction is stepped on the thread
    /// that queues a request for it (the request carried out, the lane
    /// advanced to now, its snapshot published) before `Commander::send`
    /// returns, so a request costs no thread wake-up and every reader sees
    /// its effect at once. Frames move only when a request is queued.
    pub fn stepped(
        bridge: Bridge,
        left: Box<dyn FramePort>,
        right: Box<dyn FramePort>,
        cfg: DatapathConfig,
    ) -> Result<Datapath, DatapathError> {
        let (mut datapath, drivers) = Datapath::build(bridge, left, right, cfg)?;
        datapath.stepped = drivers
            .into_iter()
            .map(|d| Arc::new(Mutex::new(d)))
            .collect();
        let shared = |i: usize| -> SharedStepper { datapath.stepped[i].clone() };
        datapath.commander.step_with([shared(0), shared(1)]);
        // Both directions publish a first snapshot.
        for driver in &datapath.stepped {
            lock(driver).step();
        }
        Ok(datapath)
    }

    /// The handle (no thread started) and each direction's driver, by
    /// `Dir::index()`.
    fn build(
        bridge: Bridge,
        left: Box<dyn FramePort>,
        right: Box<dyn FramePort>,
        cfg: DatapathConfig,
    ) -> Result<(Datapath, Vec<Driver>), DatapathError> {
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
        let datapath = Datapath {
            commander,
            threads: Vec::with_capacity(2),
            stepped: Vec::new(),
            snapshots,
        };
        Ok((datapath, drivers))
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
        self.stepped.is_empty() && self.threads.iter().all(|t| t.is_finished())
    }

    /// Stops both threads and returns their final snapshots merged, or the
    /// first direction's error.
    pub fn shutdown(mut self) -> Result<LiveSnapshot, DatapathError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<LiveSnapshot, DatapathError> {
        if !self.stepped.is_empty() {
            let ends: Vec<_> = self.stepped.drain(..).map(|d| lock(&d).end()).collect();
            return Ok(LiveSnapshot::merge([&ends[0], &ends[1]]));
        }
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

/// The driver of a stepped direction (a panic while stepping leaves its
/// state as it was, which the next step carries on from).
fn lock(driver: &Mutex<Driver>) -> MutexGuard<'_, Driver> {
    driver.lock().unwrap_or_else(|p| p.into_inner())
}

impl Drop for Datapath {
    fn drop(&mut self) {
        if !self.threads.is_empty() || !self.stepped.is_empty() {
            if let Err(e) = self.stop() {
                tracing::warn!("datapath shutdown: {e}");
            }
        }
    }
}
