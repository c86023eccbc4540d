//! A UDP request/response probe like netperf UDP_RR: one transaction in
//! flight, the client sends a request, the server echoes it, the client
//! times the round trip in µs and sends the next at once. A request without
//! a response within the timeout counts as lost and the next one goes out
//! (netperf would stop the test; under load losing one is normal).

use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::feed::Probe;
use super::stats::{DecadeHistogram, LatencyStats, Sample};
use super::{join, spawn_in, Run, POLL_INTERVAL};

/// Bytes of a request and of a response: a sequence number.
const MSG: usize = 8;

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
        let addr = spec.server;
        let (tx, rx) = std::sync::mpsc::channel();
        let server = {
            let run = run.clone();
            spawn_in(&spec.server_ns, "udp-rr-server", move || {
                let sock = UdpSocket::bind(addr).with_context(|| format!("binding UDP {addr}"))?;
                sock.set_read_timeout(Some(POLL_INTERVAL))?;
                let _ = tx.send(());
                serve(&sock, &run)
            })?
        };
        rx.recv_timeout(Duration::from_secs(5))
            .map_err(|_| anyhow::anyhow!("the UDP_RR server on {addr} did not start"))?;
        let client = {
            let run = run.clone();
            spawn_in(&spec.client_ns, "udp-rr-client", move || {
                let bind: SocketAddr = match addr {
                    SocketAddr::V4(_) => "0.0.0.0:0".parse()?,
                    SocketAddr::V6(_) => "[::]:0".parse()?,
                };
                let sock = UdpSocket::bind(bind)?;
                sock.connect(addr)
                    .with_context(|| format!("connecting UDP to {addr}"))?;
                sock.set_read_timeout(Some(RESPONSE_TIMEOUT))?;
                if !run.wait_go() {
                    return Ok(UdpRrRaw::default());
                }
                transact(&sock, &run)
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

fn serve(sock: &UdpSocket, run: &Run) -> anyhow::Result<()> {
    let mut buf = [0u8; 2048];
    while !run.stopped() {
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => {
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

fn transact(sock: &UdpSocket, run: &Run) -> anyhow::Result<UdpRrRaw> {
    let mut raw = UdpRrRaw::default();
    let mut buf = [0u8; 64];
    let mut seq = 0u64;
    while !run.stopped() {
        seq += 1;
        let sent_at = Instant::now();
        let t = run.elapsed();
        match sock.send(&seq.to_be_bytes()) {
            Ok(_) => {}
            // ENOBUFS and the like under load: count as lost, go on.
            Err(_) => {
                raw.lost.push(t);
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
        }
        loop {
            match sock.recv(&mut buf) {
                Ok(n) if n == MSG && buf[..MSG] == seq.to_be_bytes() => {
                    let sample = Sample {
                        t,
                        rtt_us: sent_at.elapsed().as_nanos() as f64 / 1e3,
                    };
                    raw.samples.push(sample);
                    run.feed(Probe::UdpRr, sample);
                    break;
                }
                // A late response to an earlier request.
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    raw.lost.push(t);
                    break;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // ECONNREFUSED while the server starts or stops.
                Err(_) => {
                    raw.lost.push(t);
                    break;
                }
            }
        }
    }
    Ok(raw)
}
