//! Traffic generators and latency probes for latency-under-load tests, all
//! in-process (no netperf, flent or ping needed): bulk TCP flows like netperf
//! TCP_STREAM (`tcp`), a UDP request/response probe like netperf UDP_RR with
//! its decade histogram (`udp_rr`), an ICMP echo probe like ping (`icmp`),
//! and the RRUL-like test that runs them together (`rrul`).
//!
//! Running inside a namespace: every generator runs on its own thread that
//! first joins the namespace with `setns(2)` on `/run/netns/NAME`
//! (`spawn_in`). `setns` of a network namespace only moves the calling
//! thread, so one process drives both sides of the link and the datapath in
//! between, and results come back as plain Rust values through the thread's
//! join handle. Sockets are created after the `setns`, so they belong to
//! that namespace.

pub mod icmp;
pub mod rrul;
pub mod stats;
pub mod tcp;
pub mod udp_rr;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::sched::CloneFlags;

/// Where `ip netns add` mounts named namespaces.
const NETNS_DIR: &str = "/run/netns";

/// How often blocked generator threads wake up to look at the stop flag.
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Runs `f` on a new thread inside network namespace `ns`.
pub fn spawn_in<T, F>(ns: &str, name: &str, f: F) -> anyhow::Result<JoinHandle<anyhow::Result<T>>>
where
    T: Send + 'static,
    F: FnOnce() -> anyhow::Result<T> + Send + 'static,
{
    let path = std::path::Path::new(NETNS_DIR).join(ns);
    let file = std::fs::File::open(&path).with_context(|| {
        format!(
            "opening network namespace {} (is the link up?)",
            path.display()
        )
    })?;
    let ns = ns.to_string();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            nix::sched::setns(&file, CloneFlags::CLONE_NEWNET)
                .with_context(|| format!("setns into network namespace {ns}"))?;
            drop(file);
            f()
        })
        .context("spawning a load thread")
}

/// Joins a generator thread, turning a panic into an error.
pub fn join<T>(h: JoinHandle<anyhow::Result<T>>) -> anyhow::Result<T> {
    h.join()
        .map_err(|_| anyhow::anyhow!("a load thread panicked"))?
}

/// The shared clock and stop flag of one test: every sample is timestamped
/// in seconds since `start`.
#[derive(Clone, Debug)]
pub struct Run {
    pub start: Instant,
    stop: Arc<AtomicBool>,
}

impl Run {
    pub fn new() -> Run {
        Run {
            start: Instant::now(),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Seconds since the start.
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

impl Default for Run {
    fn default() -> Run {
        Run::new()
    }
}

/// Sets a sysctl of the calling thread's network namespace (a path under
/// /proc/sys/net resolves to the namespace of the thread that opens it).
pub fn set_net_sysctl(key: &str, value: &str) -> anyhow::Result<()> {
    let path = format!("/proc/sys/net/{}", key.replace('.', "/"));
    std::fs::write(&path, value).with_context(|| format!("writing {value} to {path}"))
}
