//! A UDP request/response probe like netperf UDP_RR: one transaction in
//! flight, the client sends a request, the server echoes it, the client
//! times the round trip in µs and sends the next at once. A request without
//! a response within the timeout counts as lost and the next one goes out
//! (netperf would stop the test; under load losing one is normal).
//!
//! Like irtt, each transaction also carries time stamps that give the
//! one-way delay of each direction: the client stamps the request's send
//! time, the server (the reflector) its receive time and the response's
//! send time, the client the response's receive time. Both ends read the
//! same CLOCK_MONOTONIC (the namespaces share the machine's clock; they are
//! threads of one process), so the differences are exact one-way delays,
//! not estimates: no clock offset to correct. The stamps are taken in user
//! space just after `recv` returns and just before `send`, so each one-way
//! delay includes a socket wake-up, as the round trip does.

use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;

use super::feed::Probe;
use super::stats::{DecadeHistogram, LatencyStats, Sample};
use super::{join, spawn_in, Run, POLL_INTERVAL};
use crate::clock::MonotonicClock;
use crate::time::Clock;

/// Bytes of a request and of a response: the sequence number and the
/// three stamps (`Stamps`), each a big-endian u64. The request carries the
/// same 32 bytes (the server's stamps zero), so both directions' frames are
/// the same size.
const MSG: usize = 32;

/// A transaction's four time stamps, ns of CLOCK_MONOTONIC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamps {
    /// The client sent the request.
    pub client_tx: u64,
    /// The server received it.
    pub server_rx: u64,
    /// The server sent the response.
    pub server_tx: u64,
    /// The client received the response.
    pub client_rx: u64,
}

impl Stamps {
    /// The request's one-way delay and the response's, µs; `None` when the
    /// stamps are out of order (a response not from this protocol).
    pub fn one_way_us(&self) -> Option<[f64; 2]> {
        let ordered = self.client_tx <= self.server_rx
            && self.server_rx <= self.server_tx
            && self.server_tx <= self.client_rx;
        ordered.then(|| {
            [
                (self.server_rx - self.client_tx) as f64 / 1e3,
                (self.client_rx - self.server_tx) as f64 / 1e3,
            ]
        })
    }

    /// The round trip the client timed, µs (the server's time included).
    pub fn rtt_us(&self) -> f64 {
        self.client_rx.saturating_sub(self.client_tx) as f64 / 1e3
    }
}

/// CLOCK_MONOTONIC now, ns: the clock both ends stamp with.
fn now_ns() -> u64 {
    MonotonicClock.now().nanos()
}

/// A request: sequence number `seq`, sent at `client_tx`.
fn request(seq: u64, client_tx: u64) -> [u8; MSG] {
    let mut m = [0u8; MSG];
    m[..8].copy_from_slice(&seq.to_be_bytes());
    m[8..16].copy_from_slice(&client_tx.to_be_bytes());
    m
}

/// The server's part: a received request of `MSG` bytes gets its receive
/// and send stamps; anything else is echoed as it came.
fn reflect(msg: &mut [u8], server_rx: u64, server_tx: u64) {
    if msg.len() == MSG {
        msg[16..24].copy_from_slice(&server_rx.to_be_bytes());
        msg[24..32].copy_from_slice(&server_tx.to_be_bytes());
    }
}

/// The stamps of a response to request `seq` received at `client_rx`, or
/// `None` when it answers another request (or is no response).
fn parse_response(msg: &[u8], seq: u64, client_rx: u64) -> Option<Stamps> {
    if msg.len() != MSG || msg[..8] != seq.to_be_bytes() {
        return None;
    }
    let word = |i: usize| u64::from_be_bytes(msg[i..i + 8].try_into().unwrap_or_default());
    Some(Stamps {
        client_tx: word(8),
        server_rx: word(16),
        server_tx: word(24),
        client_rx,
    })
}

/// How long the client waits for a response before counting it lost.
const RESPONSE_TIMEOUT: Duration = Duration::from_millis(500);

/// A UDP request/response probe (netperf's UDP_RR): one request in flight at a
/// time, a server in `server_ns` echoing it.
#[derive(Clone, Debug)]
pub struct UdpRrSpec {
    /// The namespace the client runs in.
    pub client_ns: String,
    /// The namespace the server runs in.
    pub server_ns: String,
    /// The server's address (in `server_ns`).
    pub server: SocketAddr,
    /// The TOS byte of requests and responses (`ECT_1` for an L4S probe;
    /// 0 classic).
    pub tos: u8,
    /// The probe whose samples these are in the live feed; `None`: not fed.
    pub feed_as: Option<Probe>,
}

/// What the client measured: every transaction's time.
#[derive(Clone, Debug, Default)]
pub struct UdpRrRaw {
    /// Every completed transaction: its start time and its round-trip time.
    pub samples: Vec<Sample>,
    /// Requests whose responses did not arrive in time, with their send time.
    pub lost: Vec<f64>,
}

/// The summary netperf prints, over the measured part of the run.
#[derive(Clone, Debug, Default)]
pub struct UdpRrResult {
    /// Completed transactions per second.
    pub transactions_per_s: f64,
    /// Round-trip time summary of the completed transactions.
    pub latency: LatencyStats,
    /// netperf's decade histogram of the round-trip times.
    pub histogram: DecadeHistogram,
    /// Requests whose responses did not arrive within 500 ms.
    pub lost: u64,
}

impl UdpRrRaw {
    /// Summary of the samples taken from `from` to `to` seconds.
    pub fn summary(&self, from: f64, to: f64) -> UdpRrResult {
        let span = (to - from).max(1e-9);
        let done = self.samples.iter().filter(|s| s.t >= from).count();
        UdpRrResult {
            transactions_per_s: done as f64 / span,
            latency: LatencyStats::of(&self.samples, from),
            histogram: DecadeHistogram::of(&self.samples, from),
            lost: self.lost.iter().filter(|&&t| t >= from).count() as u64,
        }
    }
}

/// The running server and client threads.
pub struct UdpRr {
    server: JoinHandle<anyhow::Result<()>>,
    client: JoinHandle<anyhow::Result<UdpRrRaw>>,
}

impl UdpRr {
    /// Starts the server and the client threads; they wait for `run`'s gate.
    pub fn start(spec: &UdpRrSpec, run: &Run) -> anyhow::Result<UdpRr> {
        let (addr, tos, feed_as) = (spec.server, spec.tos, spec.feed_as);
        let marked = move |sock: UdpSocket| -> anyhow::Result<UdpSocket> {
            if tos != 0 {
                super::set_tos(&sock, addr.is_ipv6(), tos)?;
            }
            Ok(sock)
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let server = {
            let run = run.clone();
            spawn_in(&spec.server_ns, "udp-rr-server", move || {
                let sock = marked(server_socket(addr)?)?;
                let _ = tx.send(());
                serve(&sock, &run)
            })?
        };
        rx.recv_timeout(Duration::from_secs(5))
            .map_err(|_| anyhow::anyhow!("the UDP_RR server on {addr} did not start"))?;
        let client = {
            let run = run.clone();
            spawn_in(&spec.client_ns, "udp-rr-client", move || {
                let sock = marked(client_socket(addr)?)?;
                if !run.wait_go() {
                    return Ok(UdpRrRaw::default());
                }
                transact(&sock, &run, None, feed_as)
            })?
        };
        Ok(UdpRr { server, client })
    }

    /// Waits for both threads after the run was stopped.
    pub fn finish(self) -> anyhow::Result<UdpRrRaw> {
        let raw = join(self.client);
        let served = join(self.server);
        let raw = raw?;
        served?;
        Ok(raw)
    }
}

/// The server's socket, bound to `addr` (in the calling thread's
/// namespace; port 0 picks a free one), with the poll interval as its
/// receive timeout.
pub fn server_socket(addr: SocketAddr) -> anyhow::Result<UdpSocket> {
    let sock = UdpSocket::bind(addr).with_context(|| format!("binding UDP {addr}"))?;
    sock.set_read_timeout(Some(POLL_INTERVAL))?;
    Ok(sock)
}

/// The client's socket (in the calling thread's namespace), connected to
/// the server at `server`, with the response timeout as its receive
/// timeout.
pub fn client_socket(server: SocketAddr) -> anyhow::Result<UdpSocket> {
    let sock = connected_socket(server)?;
    sock.set_read_timeout(Some(RESPONSE_TIMEOUT))?;
    Ok(sock)
}

/// A UDP socket (in the calling thread's namespace) bound to a free port
/// of `server`'s family and connected to `server`.
pub fn connected_socket(server: SocketAddr) -> anyhow::Result<UdpSocket> {
    let bind: SocketAddr = match server {
        SocketAddr::V4(_) => "0.0.0.0:0".parse()?,
        SocketAddr::V6(_) => "[::]:0".parse()?,
    };
    let sock = UdpSocket::bind(bind)?;
    sock.connect(server)
        .with_context(|| format!("connecting UDP to {server}"))?;
    Ok(sock)
}

/// The server's loop until `run` stops: every request goes back with its
/// receive and send stamps.
pub fn serve(sock: &UdpSocket, run: &Run) -> anyhow::Result<()> {
    let mut buf = [0u8; 2048];
    while !run.stopped() {
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => {
                let server_rx = now_ns();
                reflect(&mut buf[..n], server_rx, now_ns());
                // A full socket buffer on the way back only loses this one.
                let _ = sock.send_to(&buf[..n], from);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e).context("UDP_RR server receive"),
        }
    }
    Ok(())
}

/// Counts a request sent at `t` as lost (unless the run is feed-only).
fn lost(raw: &mut UdpRrRaw, run: &Run, t: f64) {
    if run.keeps_record() {
        raw.lost.push(t);
    }
}

/// The client's loop until `run` stops: one transaction at a time, each
/// recorded (unless the run is feed-only) and fed with its round trip and
/// one-way delays as `feed_as`. Back to back as netperf's UDP_RR (`pace`
/// `None`), or one transaction every `pace` at most.
pub fn transact(
    sock: &UdpSocket,
    run: &Run,
    pace: Option<Duration>,
    feed_as: Option<Probe>,
) -> anyhow::Result<UdpRrRaw> {
    let mut raw = UdpRrRaw::default();
    let mut buf = [0u8; 64];
    let mut seq = 0u64;
    let pace = pace.map_or(0.0, |p| p.as_secs_f64());
    let mut next = 0.0;
    while !run.stopped() {
        let wait = next - run.elapsed();
        if wait > 0.0 {
            std::thread::sleep(Duration::from_secs_f64(
                wait.min(POLL_INTERVAL.as_secs_f64()),
            ));
            continue;
        }
        seq += 1;
        let t = run.elapsed();
        next = t + pace;
        match sock.send(&request(seq, now_ns())) {
            Ok(_) => {}
            // ENOBUFS and the like under load: count as lost, go on.
            Err(_) => {
                lost(&mut raw, run, t);
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
        }
        loop {
            match sock.recv(&mut buf) {
                Ok(n) => {
                    let Some(stamps) = parse_response(&buf[..n], seq, now_ns()) else {
                        // A late response to an earlier request.
                        continue;
                    };
                    let sample = Sample {
                        t,
                        rtt_us: stamps.rtt_us(),
                        one_way_us: stamps.one_way_us(),
                    };
                    if run.keeps_record() {
                        raw.samples.push(sample);
                    }
                    if let Some(probe) = feed_as {
                        run.feed(probe, sample);
                    }
                    break;
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    lost(&mut raw, run, t);
                    break;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // ECONNREFUSED while the server starts or stops.
                Err(_) => {
                    lost(&mut raw, run, t);
                    break;
                }
            }
        }
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_way_delays_come_from_the_four_stamps() {
        // Sent at 1 ms, 3 ms on the way there, 0.5 ms at the server, 7 ms
        // on the way back.
        let s = Stamps {
            client_tx: 1_000_000,
            server_rx: 4_000_000,
            server_tx: 4_500_000,
            client_rx: 11_500_000,
        };
        assert_eq!(s.one_way_us(), Some([3000.0, 7000.0]));
        assert_eq!(s.rtt_us(), 10_500.0);
        // Out of order: not stamps of this protocol.
        let back = Stamps {
            server_tx: 3_000_000,
            ..s
        };
        assert_eq!(back.one_way_us(), None);
        let early = Stamps {
            server_rx: 500_000,
            ..s
        };
        assert_eq!(early.one_way_us(), None);
        let late = Stamps {
            client_rx: 4_000_000,
            ..s
        };
        assert_eq!(late.one_way_us(), None);
        assert_eq!(late.rtt_us(), 3000.0);
    }

    #[test]
    fn a_request_reflected_by_the_server_parses_back_with_its_stamps() {
        let mut m = request(42, 1_000);
        assert_eq!(m.len(), MSG);
        reflect(&mut m, 1_700, 1_900);
        let got = parse_response(&m, 42, 2_500).unwrap();
        assert_eq!(
            got,
            Stamps {
                client_tx: 1_000,
                server_rx: 1_700,
                server_tx: 1_900,
                client_rx: 2_500,
            }
        );
        assert_eq!(got.one_way_us(), Some([0.7, 0.6]));
        // Another request's response, a short one, an empty one.
        assert_eq!(parse_response(&m, 41, 2_500), None);
        assert_eq!(parse_response(&m[..8], 42, 2_500), None);
        assert_eq!(parse_response(&[], 42, 2_500), None);
        // The server echoes what it does not know as it came.
        let mut short = [7u8; 8];
        reflect(&mut short, 1, 2);
        assert_eq!(short, [7u8; 8]);
    }

    #[test]
    fn a_real_exchange_over_loopback_gives_one_way_delays_within_the_rtt() {
        // Server and client in this namespace, on loopback: no root needed.
        let server = server_socket("127.0.0.1:0".parse().unwrap()).unwrap();
        let client = client_socket(server.local_addr().unwrap()).unwrap();
        let feed = super::super::feed::ProbeFeed::new();
        let run = Run::with_feed(Some(feed.clone()));
        run.go();
        let threads = [run.clone(), run.clone()];
        let [a, b] = threads;
        let serving = std::thread::spawn(move || serve(&server, &a));
        let client = std::thread::spawn(move || transact(&client, &b, None, Some(Probe::UdpRr)));
        // Wait (bounded) for a few transactions to complete.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut fed = Vec::new();
        while fed.len() < 20 && std::time::Instant::now() < deadline {
            fed.extend(feed.drain().0);
            std::thread::yield_now();
        }
        run.stop();
        let raw = client.join().unwrap().unwrap();
        serving.join().unwrap().unwrap();
        assert!(fed.len() >= 20, "only {} transactions in 10 s", fed.len());
        assert!(raw.samples.len() >= fed.len());
        for s in &raw.samples {
            let [there, back] = s.one_way_us.expect("every response carries stamps");
            assert!(there >= 0.0 && back >= 0.0, "{s:?}");
            assert!(there + back <= s.rtt_us, "{s:?}");
        }
    }
}
