//! Bulk TCP flows like netperf TCP_STREAM: a sender writes as fast as it can
//! until the run stops, a receiver counts the bytes it reads. The
//! congestion control is pinned per socket (TCP_CONGESTION), because this
//! machine's default (bbr) paces itself and hides the queue. Besides the
//! bytes read (in order, when the reader gets to them), `Bulk::arrived`
//! asks the receiving sockets' TCP how much data reached it in any order
//! (`TCP_INFO`): after a loss the bytes behind the hole become readable
//! all at once when the retransmission fills it, so bytes read per 100 ms
//! can reach twice the line rate while arrivals cannot. The bytes read are
//! counted per flow (`Bulk::read_per_flow`), so that a flow a qdisc starves
//! shows, and Jain's fairness index can be taken over them.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;
use nix::sys::socket::{
    self, bind, setsockopt, sockopt, AddressFamily, Backlog, SockFlag, SockType, SockaddrStorage,
};
use nix::sys::time::TimeVal;

use super::{join, spawn_in, Run, POLL_INTERVAL};

/// Size of one write or read.
const CHUNK: usize = 64 * 1024;

/// How long a flow may take to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Flows that connect at the same time (each wave waits for the last).
const CONNECT_WAVE: usize = 16;

/// Congestion controls the generator offers: loss-based ones that fill
/// queues, as the netdev experiments used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
// A doc comment on a variant would become clap's help for that value and
// change `--help`; the names are the kernel's (`TCP_CONGESTION`).
#[allow(missing_docs)]
pub enum CongestionControl {
    Cubic,
    Reno,
}

impl CongestionControl {
    /// The algorithm's name, as `TCP_CONGESTION` takes it.
    pub fn name(self) -> &'static str {
        match self {
            CongestionControl::Cubic => "cubic",
            CongestionControl::Reno => "reno",
        }
    }
}

/// `n` bulk flows from namespace `src_ns` to `dst` (an address in
/// `dst_ns`), counting the bytes each flow's receiver reads.
#[derive(Clone, Debug)]
pub struct BulkSpec {
    /// The namespace the flows are sent from.
    pub src_ns: String,
    /// The namespace of the receiver.
    pub dst_ns: String,
    /// The receiver's address and port.
    pub dst: SocketAddr,
    /// Number of flows.
    pub flows: usize,
    /// Flow i binds source port `first_src_port + i`.
    pub first_src_port: u16,
    /// The congestion control of every flow.
    pub cc: CongestionControl,
}

/// The receiving ends of a direction's flows, as accepted (each a second
/// handle on the socket its reader thread reads).
type Receivers = Arc<Mutex<Vec<TcpStream>>>;

/// Running flows of one direction.
pub struct Bulk {
    threads: Vec<JoinHandle<anyhow::Result<u64>>>,
    /// Bytes read so far by each flow's receiver, by flow (flow i sends
    /// from source port `first_src_port + i`).
    read: Counters,
    receivers: Receivers,
}

/// One byte counter per flow, shared by the receivers and the sampler.
type Counters = Arc<[AtomicU64]>;

/// The counters' sum.
fn total(read: &Counters) -> u64 {
    read.iter().map(|b| b.load(Ordering::Relaxed)).sum()
}

impl Bulk {
    /// Listens and connects all flows (`CONNECT_WAVE` at once, each on its
    /// own thread); returns once every connection is established. The flows start
    /// sending at the run's gate (`Run::go`).
    pub fn start(spec: &BulkSpec, run: &Run) -> anyhow::Result<Bulk> {
        let read: Counters = (0..spec.flows).map(|_| AtomicU64::new(0)).collect();
        let receivers = Receivers::default();
        let mut threads = Vec::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let dst = spec.dst;
        let (flows, first_src_port) = (spec.flows, spec.first_src_port);
        {
            let (run, read, receivers) = (run.clone(), read.clone(), receivers.clone());
            threads.push(spawn_in(&spec.dst_ns, "tcp-listen", move || {
                let listener =
                    listen(dst, flows).with_context(|| format!("listening on TCP {dst}"))?;
                let _ = tx.send(());
                accept_all(listener, first_src_port, &run, &read, &receivers)
            })?);
        }
        rx.recv_timeout(Duration::from_secs(5))
            .map_err(|_| anyhow::anyhow!("the TCP listener on {dst} did not start"))?;
        let (connected, outcomes) = std::sync::mpsc::channel();
        // A wave of handshakes at a time: a thousand SYNs at once would
        // overflow the TAP's small queue and wait for their retries.
        for wave in (0..flows).step_by(CONNECT_WAVE) {
            let wave = wave..(wave + CONNECT_WAVE).min(flows);
            for i in wave.clone() {
                let (run, cc, connected) = (run.clone(), spec.cc, connected.clone());
                let src_port = u16::try_from(i)
                    .ok()
                    .and_then(|i| spec.first_src_port.checked_add(i))
                    .with_context(|| {
                        format!("flow {i}: no source port above {}", spec.first_src_port)
                    })?;
                threads.push(spawn_in(&spec.src_ns, "tcp-send", move || {
                    let stream = connect(src_port, dst, cc);
                    let _ =
                        connected.send(stream.as_ref().map(|_| ()).map_err(|e| format!("{e:#}")));
                    let stream = stream?;
                    if !run.wait_go() {
                        return Ok(0);
                    }
                    send(stream, &run)
                })?);
            }
            for _ in wave {
                outcomes
                    .recv_timeout(CONNECT_TIMEOUT + Duration::from_secs(5))
                    .map_err(|_| anyhow::anyhow!("a flow to {dst} did not connect"))?
                    .map_err(|e| anyhow::anyhow!("a flow to {dst}: {e}"))?;
            }
        }
        Ok(Bulk {
            threads,
            read,
            receivers,
        })
    }

    /// Bytes read by the receivers so far, all flows together.
    /// Bytes read so far by each flow's receiver, flow 0 first.
    pub fn read_per_flow(&self) -> Vec<u64> {
        self.read
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect()
    }

    /// Bytes of data that reached the receiving sockets' TCP so far, in
    /// order or not, all flows together (see `arrived`).
    pub fn arrived(&self) -> anyhow::Result<u64> {
        let receivers = self.receivers.lock().unwrap_or_else(|e| e.into_inner());
        receivers.iter().map(arrived).sum()
    }

    /// Waits for every thread after the run was stopped; returns the bytes
    /// received.
    pub fn finish(self) -> anyhow::Result<u64> {
        let mut first_err = None;
        for t in self.threads {
            if let Err(e) = join(t) {
                first_err.get_or_insert(e);
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(total(&self.read)),
        }
    }
}

/// A connection to `dst` from source port `src_port`.
fn connect(src_port: u16, dst: SocketAddr, cc: CongestionControl) -> anyhow::Result<TcpStream> {
    let s = bound_connect(src_port, dst)
        .with_context(|| format!("connecting to {dst} from port {src_port}"))?;
    setsockopt(&s, sockopt::TcpCongestion, &cc.name().into()).with_context(|| {
        format!(
            "setting TCP_CONGESTION {} (see /proc/sys/net/ipv4/tcp_available_congestion_control)",
            cc.name()
        )
    })?;
    s.set_write_timeout(Some(POLL_INTERVAL))?;
    Ok(s)
}

/// A TCP socket of `addr`'s family with SO_REUSEADDR.
fn tcp_socket(addr: SocketAddr) -> anyhow::Result<OwnedFd> {
    let family = match addr {
        SocketAddr::V4(_) => AddressFamily::Inet,
        SocketAddr::V6(_) => AddressFamily::Inet6,
    };
    let fd = socket::socket(family, SockType::Stream, SockFlag::SOCK_CLOEXEC, None)?;
    setsockopt(&fd, sockopt::ReuseAddr, &true)?;
    Ok(fd)
}

/// A listener whose accept queue holds all `flows` handshakes at once
/// (`TcpListener::bind`'s 128 drops the SYNs beyond it, and their retries
/// come a second or more later).
fn listen(addr: SocketAddr, flows: usize) -> anyhow::Result<TcpListener> {
    let fd = tcp_socket(addr)?;
    bind(fd.as_raw_fd(), &SockaddrStorage::from(addr))?;
    let backlog = i32::try_from(flows.max(128)).unwrap_or(i32::MAX);
    socket::listen(&fd, Backlog::new(backlog).unwrap_or(Backlog::MAXCONN))?;
    Ok(TcpListener::from(fd))
}

/// `connect(2)` from a chosen local port, within `CONNECT_TIMEOUT` (Linux
/// applies SO_SNDTIMEO to a blocking connect, then fails with EINPROGRESS).
fn bound_connect(src_port: u16, dst: SocketAddr) -> anyhow::Result<TcpStream> {
    let fd = tcp_socket(dst)?;
    setsockopt(
        &fd,
        sockopt::SendTimeout,
        &TimeVal::new(CONNECT_TIMEOUT.as_secs() as _, 0),
    )?;
    let mut local = dst;
    local.set_ip(match dst {
        SocketAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
    });
    local.set_port(src_port);
    bind(fd.as_raw_fd(), &SockaddrStorage::from(local)).context("binding the source port")?;
    match socket::connect(fd.as_raw_fd(), &SockaddrStorage::from(dst)) {
        Ok(()) => Ok(TcpStream::from(fd)),
        Err(nix::errno::Errno::EINPROGRESS) => anyhow::bail!(
            "no answer to the handshake within {} s",
            CONNECT_TIMEOUT.as_secs()
        ),
        Err(e) => Err(e.into()),
    }
}

/// Writes until the run stops; returns the bytes written.
fn send(mut s: TcpStream, run: &Run) -> anyhow::Result<u64> {
    let buf = vec![0x5au8; CHUNK];
    let mut sent = 0u64;
    while !run.stopped() {
        match s.write(&buf) {
            Ok(n) => sent += n as u64,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            // The receiver went away: the run is over for this flow.
            Err(_) if run.stopped() => break,
            Err(e) => return Err(e).context("TCP send"),
        }
    }
    let _ = s.shutdown(Shutdown::Both);
    Ok(sent)
}

/// Bytes of data that reached `s`'s TCP, from its `TCP_INFO`
/// (include/uapi/linux/tcp.h): the data segments received
/// (`tcpi_data_segs_in`, counted on arrival by `tcp_segs_in()` in
/// include/net/tcp.h, in order or not, retransmissions included) times the
/// receive MSS, or the bytes received in order (`tcpi_bytes_received`,
/// RFC 4898's tcpEStatsAppHCThruOctetsReceived, advanced by
/// `tcp_rcv_nxt_update()` in net/ipv4/tcp_input.c) where those are more:
/// a GSO super-frame from a TAP counts as one segment, since
/// `virtio_net_hdr_to_skb()` (include/linux/virtio_net.h) leaves its
/// `gso_segs` at 0.
#[allow(unsafe_code)]
fn arrived(s: &TcpStream) -> anyhow::Result<u64> {
    let mut info = std::mem::MaybeUninit::<libc::tcp_info>::zeroed();
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `info` is a writable tcp_info of `len` bytes; the kernel
    // writes at most `len` bytes and says how many in `len`.
    let rc = unsafe {
        libc::getsockopt(
            s.as_fd().as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("getsockopt TCP_INFO");
    }
    anyhow::ensure!(
        len as usize >= std::mem::offset_of!(libc::tcp_info, tcpi_data_segs_out),
        "TCP_INFO of {len} bytes has no tcpi_data_segs_in (Linux 4.6 added it)"
    );
    // SAFETY: zeroed and then filled in by the kernel: every field is an
    // integer, valid for any bytes.
    let info = unsafe { info.assume_init() };
    let segments = u64::from(info.tcpi_data_segs_in) * u64::from(info.tcpi_rcv_mss);
    Ok(segments.max(info.tcpi_bytes_received))
}

/// Accepts a connection per counter of `read` and starts one counting
/// thread per connection (a second handle on each goes into `receivers`);
/// the flow from source port `first_src_port + i` counts into `read[i]`.
/// Returns when all of them end.
fn accept_all(
    listener: TcpListener,
    first_src_port: u16,
    run: &Run,
    read: &Counters,
    receivers: &Receivers,
) -> anyhow::Result<u64> {
    listener.set_nonblocking(true)?;
    let mut readers = Vec::new();
    while readers.len() < read.len() && !run.stopped() {
        match listener.accept() {
            Ok((s, peer)) => {
                let flow = usize::from(peer.port().wrapping_sub(first_src_port));
                anyhow::ensure!(
                    flow < read.len(),
                    "a TCP connection from {peer}: not one of the {} flows from port {first_src_port} up",
                    read.len()
                );
                receivers
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(s.try_clone().context("a second handle on a TCP flow")?);
                s.set_nonblocking(false)?;
                s.set_read_timeout(Some(POLL_INTERVAL))?;
                let (run, read) = (run.clone(), read.clone());
                readers.push(
                    std::thread::Builder::new()
                        .name("tcp-recv".into())
                        .spawn(move || receive(s, &run, &read[flow]))?,
                );
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(POLL_INTERVAL / 20),
            Err(e) => return Err(e).context("accepting a TCP flow"),
        }
    }
    let mut total = 0;
    for r in readers {
        total += r
            .join()
            .map_err(|_| anyhow::anyhow!("a TCP receiver panicked"))??;
    }
    Ok(total)
}

fn receive(mut s: TcpStream, run: &Run, bytes: &AtomicU64) -> anyhow::Result<u64> {
    let mut buf = vec![0u8; CHUNK];
    let mut got = 0u64;
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got += n as u64;
                bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if run.stopped() {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) if run.stopped() => break,
            Err(e) => return Err(e).context("TCP receive"),
        }
    }
    Ok(got)
}
