//! Traffic generators and latency probes for latency-under-load tests, all
//! in-process (no netperf, flent or ping needed): bulk TCP flows like netperf
//! TCP_STREAM (`tcp`), a UDP request/response probe like netperf UDP_RR with
//! its decade histogram (`udp_rr`), an ICMP echo probe like ping (`icmp`),
//! and the RRUL-like test that runs them together (`rrul`); the probes can
//! also hand each sample over as it is taken (`feed`), for a live view, and
//! run on demand against a link that is up (`on_demand`, the live TUI's
//! probes key), and a scalable (L4S) UDP sender that reacts to CE marks
//! as Prague does (`scalable`). Each probe can mark its packets ECT(1), the L4S identifier
//! of RFC 9331 (`set_tos`), to run beside a classic one.
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
pub mod scalable;
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

/// The ECN field's ECT(1) codepoint, the L4S identifier (RFC 9331 §4.1),
/// as the TOS / traffic-class byte of an L4S probe.
pub const ECT_1: u8 = 0b01;

/// Sets the TOS byte (IP_TOS) of what IPv4 socket `fd` sends, or the
/// traffic class (IPV6_TCLASS) of an IPv6 one, ECN bits included: Linux
/// keeps the ECN bits given on datagram and raw sockets (ip_sockglue.c
/// `do_ip_setsockopt`, IP_TOS: only stream sockets keep their own).
pub fn set_tos(fd: &impl std::os::fd::AsFd, v6: bool, tos: u8) -> anyhow::Result<()> {
    use nix::sys::socket::{setsockopt, sockopt};
    let tos = i32::from(tos);
    let set = if v6 {
        setsockopt(fd, sockopt::Ipv6TClass, &tos)
    } else {
        setsockopt(fd, sockopt::IpTos, &tos)
    };
    set.map_err(|e| anyhow::anyhow!("setting the TOS byte {tos:#04x}: {e}"))
}

/// Asks the kernel to hand over the TOS byte (IPv4: IP_RECVTOS) or the
/// traffic class (IPv6: IPV6_RECVTCLASS) of each datagram `sock` receives,
/// for `recv_tos`.
pub fn enable_recv_tos(sock: &std::net::UdpSocket, v6: bool) -> anyhow::Result<()> {
    let (level, name) = if v6 {
        (libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS)
    } else {
        (libc::IPPROTO_IP, libc::IP_RECVTOS)
    };
    let on: libc::c_int = 1;
    crate::port::set_sockopt(sock, level, name, &on)
        .map_err(|e| anyhow::anyhow!("asking for the received TOS byte: {e}"))
}

/// Receives one datagram into `buf`: its length and, when `enable_recv_tos`
/// was set, its TOS / traffic-class byte (ECN bits included) from the
/// IP_TOS or IPV6_TCLASS control message (ip_sockglue.c `ip_cmsg_recv_tos`).
#[allow(unsafe_code)]
pub fn recv_tos(
    sock: &std::net::UdpSocket,
    buf: &mut [u8],
) -> std::io::Result<(usize, Option<u8>)> {
    use std::os::fd::AsRawFd;
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // Room for one control message of an int, 8-byte aligned.
    let mut control = [0u64; 8];
    // SAFETY: an all-zero msghdr is valid (null pointers, zero lengths).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: msg points at `iov` (over `buf`) and `control`, both alive
    // and writable for the call's duration, with their true lengths.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut tos = None;
    // SAFETY: msg is the header recvmsg filled; CMSG_FIRSTHDR/NXTHDR stay
    // within msg_controllen and return null past the last message.
    let mut c = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    while !c.is_null() {
        // SAFETY: c is a control message header inside `control`.
        let (level, kind) = unsafe { ((*c).cmsg_level, (*c).cmsg_type) };
        // SAFETY: CMSG_DATA of a message the kernel wrote: IP_TOS carries
        // one byte, IPV6_TCLASS an int (read unaligned).
        let data = unsafe { libc::CMSG_DATA(c) };
        if level == libc::IPPROTO_IP && kind == libc::IP_TOS {
            // SAFETY: see above.
            tos = Some(unsafe { *data });
        } else if level == libc::IPPROTO_IPV6 && kind == libc::IPV6_TCLASS {
            // SAFETY: see above.
            tos = Some(unsafe { data.cast::<i32>().read_unaligned() } as u8);
        }
        // SAFETY: as CMSG_FIRSTHDR.
        c = unsafe { libc::CMSG_NXTHDR(&msg, c) };
    }
    Ok((n as usize, tos))
}

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
    fn an_ect1_socket_sends_ect1_and_the_receiver_reads_it() {
        // On loopback, in whatever namespace the test runs.
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_recv_tos(&rx, false).unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 16];
        for tos in [0u8, ECT_1, 0x28 | ECT_1] {
            set_tos(&tx, false, tos).unwrap();
            tx.send(b"probe").unwrap();
            assert_eq!(recv_tos(&rx, &mut buf).unwrap(), (5, Some(tos)));
        }
        // Without IP_RECVTOS no byte comes with it.
        let plain = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        plain
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        tx.send_to(b"x", plain.local_addr().unwrap()).unwrap();
        assert_eq!(recv_tos(&plain, &mut buf).unwrap(), (1, None));
    }

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
