//! The probes on demand, against a link that is already up: the live TUI
//! of `bloatbox up` starts and stops them with a key, so that a teacher
//! changing the link by hand sees the latency a ping and a UDP_RR
//! transaction get beside the queue delay the link computes.
//!
//! The sockets are opened once, in the namespaces, while the daemon still
//! holds its privileges (`ProbeSockets::open`: joining a namespace needs
//! CAP_SYS_ADMIN, a raw ICMP socket CAP_NET_RAW); a socket stays in the
//! namespace it was made in whichever thread uses it, so the probe threads
//! that `OnDemand::start` spawns later need no capability at all (the TUI's
//! thread has dropped them). Each start runs the ICMP probe (every 100 ms)
//! and the UDP_RR probe (paced to one transaction every 10 ms, a session
//! may last hours) from the left namespace to the right one, feed-only:
//! samples go to the feed, stamped in seconds of CLOCK_MONOTONIC (the clock
//! the link's snapshots carry) and no record is kept; `stop` joins the
//! threads and takes the sockets back for the next start.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::OwnedFd;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;

use super::feed::{Probe, ProbeFeed};
use super::stats::Sample;
use super::{icmp, join, spawn_in, udp_rr, Run};
use crate::clock::MonotonicClock;
use crate::time::Clock;

/// Time between echo requests.
pub const PING_INTERVAL: Duration = Duration::from_millis(100);
/// Shortest time between two UDP_RR transactions.
pub const UDP_RR_PACE: Duration = Duration::from_millis(10);

/// Where the probes run: from the left namespace to the right one.
#[derive(Clone, Debug)]
pub struct ProbeTargets {
    /// The namespace the probes send from.
    pub left_ns: String,
    /// The namespace of the UDP_RR server and of the address pinged.
    pub right_ns: String,
    /// The right side's IPv4 address.
    pub right_ip: Ipv4Addr,
}

/// The probes' sockets, opened in their namespaces.
#[derive(Debug)]
pub struct ProbeSockets {
    ping: OwnedFd,
    client: UdpSocket,
    server: UdpSocket,
    dst: Ipv4Addr,
}

impl ProbeSockets {
    /// Opens the UDP_RR server's socket in the right namespace (on a free
    /// port), and the client's and a raw ICMP socket in the left one. Needs
    /// the privileges to join both namespaces and to open a raw socket.
    pub fn open(t: &ProbeTargets) -> anyhow::Result<ProbeSockets> {
        let ip = t.right_ip;
        let server = join(spawn_in(&t.right_ns, "probe-open", move || {
            udp_rr::server_socket(SocketAddr::from((ip, 0)))
        })?)?;
        let addr = server.local_addr()?;
        let (ping, client) = join(spawn_in(&t.left_ns, "probe-open", move || {
            Ok((icmp::raw_socket()?, udp_rr::client_socket(addr)?))
        })?)?;
        Ok(ProbeSockets {
            ping,
            client,
            server,
            dst: ip,
        })
    }
}

/// The probes' threads while they run.
struct Running {
    run: Run,
    ping: ProbeThread<OwnedFd>,
    client: ProbeThread<UdpSocket>,
    server: ProbeThread<UdpSocket>,
}

/// A probe's thread: how it ended, and its socket back.
type ProbeThread<T> = JoinHandle<(anyhow::Result<()>, T)>;

/// The probes' three threads (ping, UDP_RR client, UDP_RR server).
fn spawn_probes(
    sockets: ProbeSockets,
    run: &Run,
    id: u16,
) -> std::io::Result<(
    ProbeThread<OwnedFd>,
    ProbeThread<UdpSocket>,
    ProbeThread<UdpSocket>,
)> {
    let spawn = |name: &str| std::thread::Builder::new().name(name.into());
    let ProbeSockets {
        ping,
        client,
        server,
        dst,
    } = sockets;
    let r = run.clone();
    let server =
        spawn("probe-udp-rr-server").spawn(move || (udp_rr::serve(&server, &r), server))?;
    let r = run.clone();
    let client = spawn("probe-udp-rr").spawn(move || {
        let res = udp_rr::transact(&client, &r, Some(UDP_RR_PACE), Some(Probe::UdpRr)).map(|_| ());
        (res, client)
    })?;
    let r = run.clone();
    let ping = spawn("probe-ping").spawn(move || {
        let res = icmp::ping(&ping, dst, PING_INTERVAL, &r, id, Some(Probe::Ping)).map(|_| ());
        (res, ping)
    })?;
    Ok((ping, client, server))
}

/// The probes, started and stopped on demand.
pub struct OnDemand {
    /// The sockets while the probes are stopped.
    idle: Option<ProbeSockets>,
    running: Option<Running>,
    /// The destination pinged (kept while the sockets are lent out).
    dst: Ipv4Addr,
    feed: ProbeFeed,
    /// The last session's start on CLOCK_MONOTONIC, s: the samples' times
    /// are offset by it.
    origin_s: f64,
    /// Sessions started so far: the echo identifier of each differs, so a
    /// late reply to an earlier session is not taken for one of this.
    sessions: u16,
}

impl std::fmt::Debug for OnDemand {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.debug_struct("OnDemand")
            .field("running", &self.running.is_some())
            .field("dst", &self.dst)
            .field("sessions", &self.sessions)
            .finish()
    }
}

impl OnDemand {
    /// Probes over `sockets`, stopped.
    pub fn new(sockets: ProbeSockets) -> OnDemand {
        OnDemand {
            dst: sockets.dst,
            idle: Some(sockets),
            running: None,
            feed: ProbeFeed::new(),
            origin_s: 0.0,
            sessions: 0,
        }
    }

    /// Whether the probes run.
    pub fn running(&self) -> bool {
        self.running.is_some()
    }

    /// Starts both probes (nothing when they run already).
    pub fn start(&mut self) -> anyhow::Result<()> {
        if self.running.is_some() {
            return Ok(());
        }
        let sockets = self
            .idle
            .take()
            .context("the probes' sockets were lost when they last stopped")?;
        icmp::discard_pending(&sockets.ping);
        let _ = self.feed.drain();
        self.sessions = self.sessions.wrapping_add(1);
        let id = (std::process::id() as u16).rotate_left(4) ^ self.sessions;
        let run = Run::feed_only(self.feed.clone());
        let threads = spawn_probes(sockets, &run, id);
        if threads.is_err() {
            // Those already spawned end with the run.
            run.stop();
        }
        let (ping, client, server) = threads?;
        self.origin_s = MonotonicClock.now().nanos() as f64 / 1e9;
        run.go();
        self.running = Some(Running {
            run,
            ping,
            client,
            server,
        });
        Ok(())
    }

    /// Stops both probes, waits for their threads and keeps the sockets for
    /// the next start (nothing when they are stopped).
    pub fn stop(&mut self) -> anyhow::Result<()> {
        let Some(r) = self.running.take() else {
            return Ok(());
        };
        r.run.stop();
        let lost = || anyhow::anyhow!("a probe thread panicked");
        let (ping_res, ping) = r.ping.join().map_err(|_| lost())?;
        let (client_res, client) = r.client.join().map_err(|_| lost())?;
        let (server_res, server) = r.server.join().map_err(|_| lost())?;
        self.idle = Some(ProbeSockets {
            ping,
            client,
            server,
            dst: self.dst,
        });
        ping_res?;
        client_res?;
        server_res
    }

    /// The samples taken since the last call, their times in seconds of
    /// CLOCK_MONOTONIC, and how many the feed had to drop.
    pub fn drain(&self) -> (Vec<(Probe, Sample)>, u64) {
        let (mut samples, missed) = self.feed.drain();
        for (_, s) in &mut samples {
            s.t += self.origin_s;
        }
        (samples, missed)
    }
}

impl Drop for OnDemand {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_start_feed_stop_and_start_again_over_the_same_sockets() {
        // Both ends in this namespace, on loopback: needs CAP_NET_RAW only.
        let Ok(ping) = icmp::raw_socket() else {
            bloatbox_lang::errln!("skipped: no CAP_NET_RAW for a raw ICMP socket");
            return;
        };
        let ip = Ipv4Addr::LOCALHOST;
        let server = udp_rr::server_socket(SocketAddr::from((ip, 0))).unwrap();
        let client = udp_rr::client_socket(server.local_addr().unwrap()).unwrap();
        let mut probes = OnDemand::new(ProbeSockets {
            ping,
            client,
            server,
            dst: ip,
        });
        // The classic pair is what on-demand probes feed (the L4S twins
        // come only from `test --l4s`).
        let fed = [Probe::Ping, Probe::UdpRr];
        for session in 0..2 {
            let before = MonotonicClock.now().nanos() as f64 / 1e9;
            probes.start().unwrap();
            assert!(probes.running());
            let mut got = Vec::new();
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while !(fed.iter().all(|p| got.iter().any(|(q, _)| q == p)))
                && std::time::Instant::now() < deadline
            {
                got.extend(probes.drain().0);
                std::thread::sleep(Duration::from_millis(5));
            }
            probes.stop().unwrap();
            assert!(!probes.running());
            let after = MonotonicClock.now().nanos() as f64 / 1e9;
            for p in fed {
                assert!(
                    got.iter().any(|(q, _)| *q == p),
                    "session {session}: no {p:?}"
                );
            }
            for (p, s) in &got {
                // Stamped on CLOCK_MONOTONIC, within the session.
                assert!(s.t >= before - 1e-3 && s.t <= after, "{p:?} {s:?}");
                assert_eq!(s.one_way_us.is_some(), *p == Probe::UdpRr, "{p:?} {s:?}");
            }
            // Paced: at most one transaction per 10 ms.
            let rr = got.iter().filter(|(p, _)| *p == Probe::UdpRr).count();
            assert!(
                rr as f64 <= (after - before) / 0.01 + 1.0,
                "{rr} transactions"
            );
        }
        probes.stop().unwrap();
    }
}
