//! Traffic generators and latency probes for latency-under-load tests, all
//! in-process (no netperf, flent or ping needed): bulk TCP flows like netperf
//! TCP_STREAM (`tcp`), a UDP request/response probe like netperf UDP_RR with
//! its decade histogram (`udp_rr`), an ICMP echo probe like ping (`icmp`),
//! and the RRUL-like test that runs them together (`rrul`); the probes can
//! also hand each sample over as it is taken (`feed`), for a live view, and
//! run on demand against a link that is up (`on_demand`, the live TUI's
//! probes key).
//!
//! Running inside a namespace: every generator runs on its own thread that
//! first joins the namespace with `setns(2)` on `/run/netns/NAME`
//! (`spawn_in`). `setns` of a network namespace only moves the calling
//! thread, so one process drives both sides of the link and the datapath in
//! between, and results come back as plain Rust values through the thread's
//! join handle. Sockets are created after the `setns`, so they belong to
//! that namespace.

pub mod feed;
pub mod icmp;
pub mod on_demand;
pub mod rrul;
pub mod stats;
pub mod tcp;
pub mod udp_rr;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
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

/// The shared clock, start gate and stop flag of one test. Generators set
/// up first (connect their flows, bind their sockets), then wait at the gate
/// (`wait_go`); `go` opens it and starts the clock, so that every part's
/// load begins at once and no set-up time is counted. Every sample is
/// timestamped in seconds since `go`. With a `feed`, the probes also push
/// each sample there as they take it.
#[derive(Clone, Debug, Default)]
pub struct Run {
    start: Arc<OnceLock<Instant>>,
    gate: Arc<(Mutex<()>, Condvar)>,
    stop: Arc<AtomicBool>,
    feed: Option<feed::ProbeFeed>,
    /// The probes only feed their samples, keeping no record (a session
    /// of unbounded length).
    feed_only: bool,
}

impl Run {
    /// A run whose gate is closed: nothing starts before `go`.
    pub fn new() -> Run {
        Run::default()
    }

    /// A run whose probes also push their samples into `feed`.
    pub fn with_feed(feed: Option<feed::ProbeFeed>) -> Run {
        Run {
            feed,
            ..Run::default()
        }
    }

    /// A run whose probes push their samples into `feed` only, without
    /// keeping a record of them (what they return holds none).
    pub fn feed_only(feed: feed::ProbeFeed) -> Run {
        Run {
            feed: Some(feed),
            feed_only: true,
            ..Run::default()
        }
    }

    /// Whether the probes keep a record of their samples (every run but a
    /// `feed_only` one).
    pub fn keeps_record(&self) -> bool {
        !self.feed_only
    }

    /// Hands a probe's sample to the feed, if the run has one.
    pub fn feed(&self, probe: feed::Probe, sample: stats::Sample) {
        if let Some(f) = &self.feed {
            f.push(probe, sample);
        }
    }

    /// Opens the gate: the load starts now.
    pub fn go(&self) {
        let _ = self.start.set(Instant::now());
        self.wake_waiters();
    }

    /// Blocks until `go` (true) or `stop` (false).
    pub fn wait_go(&self) -> bool {
        let (lock, cv) = &*self.gate;
        let mut guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if self.stopped() {
                return false;
            }
            if self.start.get().is_some() {
                return true;
            }
            guard = cv
                .wait_timeout(guard, POLL_INTERVAL)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Seconds since `go` (0 before it).
    pub fn elapsed(&self) -> f64 {
        self.start.get().map_or(0.0, |s| s.elapsed().as_secs_f64())
    }

    /// Ends the run: every generator stops and waiters return.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.wake_waiters();
    }

    /// Whether `stop` was called.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn wake_waiters(&self) {
        let (lock, cv) = &*self.gate;
        let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        cv.notify_all();
    }
}

/// Sets a sysctl of the calling thread's network namespace (a path under
/// /proc/sys/net resolves to the namespace of the thread that opens it).
pub fn set_net_sysctl(key: &str, value: &str) -> anyhow::Result<()> {
    let path = format!("/proc/sys/net/{}", key.replace('.', "/"));
    std::fs::write(&path, value).with_context(|| format!("writing {value} to {path}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_starts_at_the_gate_and_waiters_go_together() {
        let created = Instant::now();
        let run = Run::new();
        assert_eq!(run.elapsed(), 0.0, "no time passes before go");
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let run = run.clone();
                std::thread::spawn(move || {
                    let went = run.wait_go();
                    (went, created.elapsed().as_secs_f64() - run.elapsed())
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(run.elapsed(), 0.0, "set-up time is not counted");
        run.go();
        for w in waiters {
            // The waiter's clock reads the time since go, not since the
            // run was created: the 50 ms of set-up are not in it.
            let (went, setup) = w.join().unwrap();
            assert!(went);
            assert!(setup >= 0.05, "the clock counted {setup} s of set-up");
        }
    }

    #[test]
    fn stop_releases_the_waiters_without_a_start() {
        let run = Run::new();
        let waiter = {
            let run = run.clone();
            std::thread::spawn(move || run.wait_go())
        };
        run.stop();
        assert!(!waiter.join().unwrap());
        assert_eq!(run.elapsed(), 0.0);
    }
}
