//! An ICMP echo probe like ping: one echo request every `interval`, replies
//! matched by identifier and timed from the send time carried in the
//! payload, summarised as min/avg/max/mdev. It uses a raw ICMP socket (we
//! are root; in a fresh namespace `net.ipv4.ping_group_range` forbids the
//! unprivileged datagram kind), so it computes the checksum itself and skips
//! the IP header of what it receives.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, OwnedFd};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;
use nix::sys::socket::{
    recv, sendto, setsockopt, socket, sockopt, AddressFamily, MsgFlags, SockFlag, SockProtocol,
    SockType, SockaddrIn,
};
use nix::sys::time::TimeVal;

use super::feed::Probe;
use super::stats::{LatencyStats, Sample};
use super::{spawn_in, Run};

const ECHO_REQUEST: u8 = 8;
const ECHO_REPLY: u8 = 0;
/// ICMP header (8) + payload (56), as ping sends by default.
const PACKET: usize = 64;

/// An ICMP echo probe: like `ping -i INTERVAL DST` from a namespace.
#[derive(Clone, Debug)]
pub struct PingSpec {
    /// The namespace to ping from.
    pub ns: String,
    /// The address pinged.
    pub dst: Ipv4Addr,
    /// Time between requests.
    pub interval: Duration,
    /// The TOS byte of the requests (`ECT_1` for an L4S probe; 0 classic).
    pub tos: u8,
    /// The probe whose samples these are in the live feed; `None`: not fed.
    pub feed_as: Option<Probe>,
}

/// What the probe recorded.
#[derive(Clone, Debug, Default)]
pub struct PingRaw {
    /// Every answered request: its send time and round-trip time.
    pub samples: Vec<Sample>,
    /// Send times (s) of every request.
    pub sent: Vec<f64>,
}

/// ping's summary line over the measured part of the run.
#[derive(Clone, Debug, Default)]
pub struct PingResult {
    /// Requests sent.
    pub transmitted: u64,
    /// Replies received.
    pub received: u64,
    /// Round-trip time summary of the replies.
    pub latency: LatencyStats,
}

impl PingRaw {
    /// Summary of requests sent from `from` seconds on.
    pub fn summary(&self, from: f64) -> PingResult {
        let latency = LatencyStats::of(&self.samples, from);
        PingResult {
            transmitted: self.sent.iter().filter(|&&t| t >= from).count() as u64,
            received: latency.samples,
            latency,
        }
    }
}

/// The Internet checksum (RFC 1071).
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An echo request carrying `sent_ns` (ns since the run started).
fn echo_request(id: u16, seq: u16, sent_ns: u64) -> [u8; PACKET] {
    let mut p = [0u8; PACKET];
    p[0] = ECHO_REQUEST;
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[6..8].copy_from_slice(&seq.to_be_bytes());
    p[8..16].copy_from_slice(&sent_ns.to_be_bytes());
    for (i, b) in p[16..].iter_mut().enumerate() {
        *b = i as u8;
    }
    let c = checksum(&p);
    p[2..4].copy_from_slice(&c.to_be_bytes());
    p
}

/// The send time carried by an echo reply to `id`, from a received IPv4
/// datagram (header included, as raw sockets deliver it).
fn parse_reply(datagram: &[u8], id: u16) -> Option<u64> {
    let ihl = usize::from(*datagram.first()? & 0x0f) * 4;
    let icmp = datagram.get(ihl..)?;
    if icmp.len() < 16 || icmp[0] != ECHO_REPLY || icmp[4..6] != id.to_be_bytes() {
        return None;
    }
    Some(u64::from_be_bytes(icmp[8..16].try_into().ok()?))
}

/// A running ICMP probe (a thread in the source namespace, on a raw socket).
pub struct Ping {
    thread: JoinHandle<anyhow::Result<PingRaw>>,
}

impl Ping {
    /// Opens a raw ICMP socket in `spec.ns` (needs CAP_NET_RAW) and pings with
    /// echo id `id` once `run` opens its gate.
    pub fn start(spec: &PingSpec, run: &Run, id: u16) -> anyhow::Result<Ping> {
        let (spec2, run) = (spec.clone(), run.clone());
        let thread = spawn_in(&spec.ns, "ping", move || {
            let fd = raw_socket()?;
            if spec2.tos != 0 {
                super::set_tos(&fd, false, spec2.tos)?;
            }
            if !run.wait_go() {
                return Ok(PingRaw::default());
            }
            ping(&fd, spec2.dst, spec2.interval, &run, id, spec2.feed_as)
        })?;
        Ok(Ping { thread })
    }

    /// Waits for the probe's thread (after `run` stopped) and returns what it
    /// recorded.
    pub fn finish(self) -> anyhow::Result<PingRaw> {
        super::join(self.thread)
    }
}

/// A raw ICMP socket in the calling thread's namespace (needs
/// CAP_NET_RAW); it stays in that namespace whichever thread uses it.
pub fn raw_socket() -> anyhow::Result<OwnedFd> {
    socket(
        AddressFamily::Inet,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::Icmp,
    )
    .context("opening a raw ICMP socket (needs CAP_NET_RAW)")
}

/// Throws away what waits in the raw socket `fd` (replies and requests
/// seen while nobody was pinging).
pub fn discard_pending(fd: &OwnedFd) {
    let mut buf = [0u8; 1500];
    while recv(fd.as_raw_fd(), &mut buf, MsgFlags::MSG_DONTWAIT).is_ok() {}
}

/// The probe's loop on the raw socket `fd` until `run` stops: an echo
/// request to `dst` every `interval` with identifier `id`, each reply
/// recorded (unless the run is feed-only) and fed as `feed_as`.
pub fn ping(
    fd: &OwnedFd,
    dst: Ipv4Addr,
    interval: Duration,
    run: &Run,
    id: u16,
    feed_as: Option<Probe>,
) -> anyhow::Result<PingRaw> {
    let dst = SockaddrIn::from(SocketAddrV4::new(dst, 0));
    let mut raw = PingRaw::default();
    let mut buf = [0u8; 1500];
    let interval = interval.as_secs_f64();
    let mut seq: u16 = 0;
    let mut next_send = run.elapsed();
    while !run.stopped() {
        let now = run.elapsed();
        if now >= next_send {
            let pkt = echo_request(id, seq, (now * 1e9) as u64);
            seq = seq.wrapping_add(1);
            // A failed send (ENOBUFS under load) is a lost request.
            let _ = sendto(fd.as_raw_fd(), &pkt, &dst, MsgFlags::empty());
            if run.keeps_record() {
                raw.sent.push(now);
            }
            next_send += interval;
            if next_send < now {
                next_send = now + interval;
            }
        }
        let wait = (next_send - run.elapsed()).clamp(1e-4, 0.1);
        setsockopt(
            fd,
            sockopt::ReceiveTimeout,
            &TimeVal::new(0, (wait * 1e6) as i64),
        )?;
        if let Ok(n) = recv(fd.as_raw_fd(), &mut buf, MsgFlags::empty()) {
            let arrived = run.elapsed();
            if let Some(sent_ns) = parse_reply(&buf[..n], id) {
                let sent = sent_ns as f64 / 1e9;
                let sample = Sample::rtt(sent, (arrived - sent) * 1e6);
                if run.keeps_record() {
                    raw.samples.push(sample);
                }
                if let Some(probe) = feed_as {
                    run.feed(probe, sample);
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
    fn echo_request_checksums_to_zero_and_a_reply_parses_back() {
        let p = echo_request(0x1234, 7, 987_654_321);
        assert_eq!(checksum(&p), 0);
        // The reply as a raw socket delivers it: a 20-byte IPv4 header first.
        let mut d = vec![0x45u8];
        d.extend_from_slice(&[0; 19]);
        let mut reply = p;
        reply[0] = ECHO_REPLY;
        d.extend_from_slice(&reply);
        assert_eq!(parse_reply(&d, 0x1234), Some(987_654_321));
        assert_eq!(parse_reply(&d, 0x1235), None);
        assert_eq!(parse_reply(&d[..30], 0x1234), None);
        assert_eq!(parse_reply(&[], 0x1234), None);
        // An echo request seen by the raw socket is not a reply.
        d[20] = ECHO_REQUEST;
        assert_eq!(parse_reply(&d, 0x1234), None);
    }

    #[test]
    fn checksum_of_odd_length_pads_with_zero() {
        assert_eq!(checksum(&[0xff]), !0xff00);
        assert_eq!(checksum(&[]), 0xffff);
    }
}
