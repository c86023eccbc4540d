//! A small-packet generator for `scripts/bench-live.sh`: it sends the same
//! prebuilt UDP packet (a 64-byte payload by default, as `iperf3 -u -l 64`
//! sends) to one destination as fast as it can for a fixed time, `--batch`
//! packets per `sendmmsg(2)`, and prints what it sent and what that cost it
//! in CPU. It neither paces nor timestamps nor receives, so what reaches the
//! far end is bound by the path, not by the sender: the receiving end is
//! counted by the benchmark at the receiving interface (`rx_packets`) and
//! its IP stack (`IpInReceives`), which no socket reader has to keep up with.
//!
//! ```text
//! cargo build --release --example pps_blast
//! sudo ip netns exec NS target/release/examples/pps_blast --dst 10.84.0.2 --secs 5
//! sudo ip netns exec NS target/release/examples/pps_blast --dst 10.84.0.2 --secs 5 \
//!     --mode packet --dev eth1 --dst-mac 02:00:00:00:00:02
//! ```
//!
//! Two ways to send, to see which costs the sender less per packet:
//! `--mode udp` (the default) writes the payload to a connected UDP socket,
//! through the IP stack's output path (net/ipv4/udp.c `udp_sendmsg`);
//! `--mode packet` writes the whole prebuilt Ethernet frame (IPv4 header
//! checksum computed once, UDP checksum 0, "no checksum" in RFC 768) to an
//! `AF_PACKET` socket with `PACKET_QDISC_BYPASS`, which hands each frame to
//! the device's `ndo_start_xmit` directly (net/packet/af_packet.c
//! `packet_snd` and `packet_direct_xmit`): no routing, no neighbour lookup,
//! no qdisc. The source address is the one the kernel's routing picks for
//! `--dst`; the destination MAC is `--dst-mac` (the receiving interface's).
//! `--sink` runs the receiving end: it binds a UDP socket to `--dst` and
//! `--port` (9, discard), prints `ready`, holds it for `--secs` without
//! reading, and exits. The receiving stack then drops each packet at the
//! full socket (net/ipv4/udp.c `__udp_enqueue_schedule_skb`, counted as
//! `UdpRcvbufErrors`) instead of answering it with an ICMP port
//! unreachable: with no socket, `__icmp_send` looks up a route for every
//! reply before its rate limit refuses to send it (net/ipv4/icmp.c), a
//! cost of the benchmark's receiver, not of the path, that a wire's or a
//! TAP's writer pays in its own system calls (the receiving veth's or
//! TAP's softirq runs there).
//!
//! It prints one JSON line: `{"mode", "sent", "secs", "kpps", "cpu_ns",
//! "errors"}`, `sent` counting the packets `sendmmsg` accepted, `cpu_ns`
//! the process's user and system CPU per packet sent, and `errors` the
//! calls that failed with `ENOBUFS` or `EAGAIN` (the device's queue full).

use std::ffi::CString;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};
use etherparse::PacketBuilder;

/// How the packets are handed to the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// A connected UDP socket: the IP stack's output path.
    Udp,
    /// An `AF_PACKET` socket with `PACKET_QDISC_BYPASS`: whole frames
    /// straight to the device.
    Packet,
}

/// Send one small UDP packet over and over, batched, for a fixed time.
#[derive(Parser, Debug)]
#[command(about)]
struct Args {
    /// Destination IPv4 address.
    #[arg(long)]
    dst: Ipv4Addr,
    /// Destination UDP port.
    #[arg(long, default_value_t = 9)]
    port: u16,
    /// UDP payload bytes.
    #[arg(long, default_value_t = 64)]
    payload: usize,
    /// How long to send, seconds.
    #[arg(long, default_value_t = 5.0)]
    secs: f64,
    /// Packets per `sendmmsg`.
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// The socket the packets go through.
    #[arg(long, value_enum, default_value_t = Mode::Udp)]
    mode: Mode,
    /// `--mode packet`: the sending interface.
    #[arg(long)]
    dev: Option<String>,
    /// `--mode packet`: the destination MAC address (aa:bb:cc:dd:ee:ff).
    #[arg(long)]
    dst_mac: Option<String>,
    /// Be the receiving end instead: bind `--dst`:`--port`, print `ready`,
    /// hold the socket unread for `--secs`.
    #[arg(long)]
    sink: bool,
}

/// `PACKET_QDISC_BYPASS` (linux/if_packet.h).
const PACKET_QDISC_BYPASS: libc::c_int = 20;

/// Parses `aa:bb:cc:dd:ee:ff`.
fn parse_mac(s: &str) -> anyhow::Result<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = s.trim().split(':');
    for b in &mut mac {
        let p = parts
            .next()
            .with_context(|| format!("MAC {s:?}: too short"))?;
        *b = u8::from_str_radix(p, 16).with_context(|| format!("MAC {s:?}: {p:?}"))?;
    }
    if parts.next().is_some() {
        bail!("MAC {s:?}: too long");
    }
    Ok(mac)
}

/// An Ethernet frame carrying one IPv4 UDP packet of `payload` zero bytes
/// from `src` to `dst` (built by etherparse), its UDP checksum 0: "no
/// checksum" in RFC 768, which the receiving stack then does not verify.
fn frame(
    (src_mac, dst_mac): ([u8; 6], [u8; 6]),
    src: SocketAddr,
    dst: Ipv4Addr,
    port: u16,
    payload: usize,
) -> anyhow::Result<Vec<u8>> {
    let SocketAddr::V4(src) = src else {
        bail!("the route to {dst} has an IPv6 source")
    };
    let builder = PacketBuilder::ethernet2(src_mac, dst_mac)
        .ipv4(src.ip().octets(), dst.octets(), 64)
        .udp(src.port(), port);
    let mut f = Vec::with_capacity(builder.size(payload));
    builder
        .write(&mut f, &vec![0; payload])
        .context("payload too large")?;
    // The UDP checksum: after the Ethernet (14) and IPv4 (20) headers and
    // the UDP header's ports and length (6).
    f[40..42].fill(0);
    Ok(f)
}

/// An `AF_PACKET` raw socket bound to `dev` with `PACKET_QDISC_BYPASS`.
/// Protocol 0: it sends only, no receive hook is registered.
#[allow(unsafe_code)]
fn packet_socket(dev: &str) -> anyhow::Result<OwnedFd> {
    let name = CString::new(dev)?;
    // SAFETY: `name` is a valid NUL-terminated string.
    let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if ifindex == 0 {
        return Err(io::Error::last_os_error()).with_context(|| format!("interface {dev:?}"));
    }
    // SAFETY: a plain socket(2) call; the result is checked below.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error()).context("socket(AF_PACKET)");
    }
    // SAFETY: `fd` is a fresh descriptor this function owns from here.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let one: libc::c_int = 1;
    // SAFETY: `one` is a live c_int and its size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            PACKET_QDISC_BYPASS,
            std::ptr::addr_of!(one).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error()).context("PACKET_QDISC_BYPASS");
    }
    // SAFETY: sockaddr_ll is plain data; all zeroes is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as libc::sa_family_t;
    sll.sll_ifindex = ifindex as libc::c_int;
    // SAFETY: `sll` is a live sockaddr_ll and its size is passed.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            std::ptr::addr_of!(sll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error()).with_context(|| format!("bind to {dev:?}"));
    }
    Ok(fd)
}

/// The MAC address of `dev` (from sysfs).
fn dev_mac(dev: &str) -> anyhow::Result<[u8; 6]> {
    let path = format!("/sys/class/net/{dev}/address");
    parse_mac(&std::fs::read_to_string(&path).with_context(|| path.clone())?)
}

/// The process's user and system CPU so far.
#[allow(unsafe_code)]
fn cpu_time() -> Duration {
    // SAFETY: rusage is plain data; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a live rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.unsigned_abs())
            + Duration::from_micros(t.tv_usec.unsigned_abs())
    };
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// What a run sent.
struct Sent {
    packets: u64,
    errors: u64,
}

/// Sends `buf` on the connected (or bound) socket `fd`, `batch` copies per
/// `sendmmsg`, until `until`.
#[allow(unsafe_code)]
fn blast(fd: RawFd, buf: &[u8], batch: usize, until: Instant) -> io::Result<Sent> {
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr().cast_mut().cast(),
        iov_len: buf.len(),
    };
    let mut msgs: Vec<libc::mmsghdr> = (0..batch)
        .map(|_| {
            // SAFETY: mmsghdr is plain data; all zeroes is a valid value.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = &mut iov;
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect();
    let vlen =
        libc::c_uint::try_from(batch).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut sent = Sent {
        packets: 0,
        errors: 0,
    };
    while Instant::now() < until {
        // SAFETY: `msgs` holds `batch` headers, each pointing to `iov`,
        // which points to `buf`; all outlive the call, which only reads them.
        let n = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), vlen, 0) };
        if n >= 0 {
            sent.packets += n.unsigned_abs() as u64;
            continue;
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => {}
            Some(libc::ENOBUFS | libc::EAGAIN) => sent.errors += 1,
            _ => return Err(e),
        }
    }
    Ok(sent)
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.batch == 0 || args.batch > 1024 {
        bail!("--batch must be 1..=1024 (UIO_MAXIOV)");
    }
    if !(args.secs > 0.0 && args.secs.is_finite()) {
        bail!("--secs must be positive");
    }
    if args.sink {
        let _socket = UdpSocket::bind((args.dst, args.port))
            .with_context(|| format!("binding {}:{}", args.dst, args.port))?;
        println!("ready");
        std::thread::sleep(Duration::from_secs_f64(args.secs));
        return Ok(());
    }
    let udp = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).context("binding a UDP socket")?;
    udp.connect((args.dst, args.port))
        .with_context(|| format!("no route to {}", args.dst))?;
    // A blocked send wakes up in time to see the deadline.
    udp.set_write_timeout(Some(Duration::from_millis(100)))?;
    let (fd, buf, _packet): (RawFd, Vec<u8>, Option<OwnedFd>) = match args.mode {
        Mode::Udp => (udp.as_raw_fd(), vec![0; args.payload], None),
        Mode::Packet => {
            let (Some(dev), Some(dst_mac)) = (&args.dev, &args.dst_mac) else {
                bail!("--mode packet needs --dev and --dst-mac")
            };
            let f = frame(
                (dev_mac(dev)?, parse_mac(dst_mac)?),
                udp.local_addr()?,
                args.dst,
                args.port,
                args.payload,
            )?;
            let s = packet_socket(dev)?;
            (s.as_raw_fd(), f, Some(s))
        }
    };
    let cpu0 = cpu_time();
    let start = Instant::now();
    let sent = blast(
        fd,
        &buf,
        args.batch,
        start + Duration::from_secs_f64(args.secs),
    )
    .context("sendmmsg")?;
    let secs = start.elapsed().as_secs_f64();
    let cpu = (cpu_time() - cpu0).as_nanos() as f64;
    println!(
        "{{\"mode\": \"{:?}\", \"sent\": {}, \"secs\": {secs:.3}, \"kpps\": {:.1}, \"cpu_ns\": {:.0}, \"errors\": {}}}",
        args.mode,
        sent.packets,
        sent.packets as f64 / secs / 1e3,
        cpu / sent.packets.max(1) as f64,
        sent.errors
    );
    Ok(())
}
