//! Frame ports: where the live datapath reads frames from and writes them to.
//!
//! `FramePort` is a non-blocking, one-frame-per-call interface. `TapPort` is a
//! Linux TAP device (L2, `IFF_NO_PI`, created with tun-rs); `PacketPort` is an
//! `AF_PACKET` socket bound to one interface (the hub end of a veth pair, for
//! rootless links where /dev/net/tun is closed to the user); `SocketPairPort`
//! is one end of a `SOCK_SEQPACKET` Unix socketpair, which keeps frame
//! boundaries and lets the real datapath thread run in tests without root.
//!
//! A full device or socket (`EAGAIN`/`ENOBUFS` on send) never blocks the
//! datapath: the frame is counted in `PortCounters::tx_full_drops` and dropped.

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};

use nix::errno::Errno;
use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};

/// Per-port I/O counters, exported in the live snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PortCounters {
    pub rx_frames: u64,
    pub rx_bytes: u64,
    pub tx_frames: u64,
    pub tx_bytes: u64,
    /// Frames dropped because the device or socket was full (EAGAIN/ENOBUFS).
    pub tx_full_drops: u64,
    /// Other read errors (the frame, if any, is lost).
    pub rx_errors: u64,
    /// Other write errors (the frame is lost).
    pub tx_errors: u64,
}

/// A non-blocking source and sink of whole Ethernet frames.
pub trait FramePort: Send {
    /// Reads one frame into `buf`. `Ok(None)` when nothing is waiting.
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>>;
    /// Writes one frame. A full device or socket is not an error: the frame is
    /// dropped and counted in `tx_full_drops`.
    fn send(&mut self, frame: &[u8]) -> io::Result<()>;
    /// The descriptor to wait on for readability.
    fn raw_fd(&self) -> RawFd;
    fn counters(&self) -> PortCounters;
}

/// The counting and error mapping shared by every port kind; the kinds only
/// differ in how the descriptor is made.
#[derive(Debug)]
struct FdPort {
    fd: OwnedFd,
    counters: PortCounters,
}

impl FdPort {
    fn new(fd: OwnedFd) -> FdPort {
        FdPort {
            fd,
            counters: PortCounters::default(),
        }
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match nix::unistd::read(self.fd.as_raw_fd(), buf) {
            Ok(n) => {
                self.counters.rx_frames += 1;
                self.counters.rx_bytes += n as u64;
                Ok(Some(n))
            }
            Err(Errno::EAGAIN) | Err(Errno::EINTR) => Ok(None),
            Err(e) => {
                self.counters.rx_errors += 1;
                Err(e.into())
            }
        }
    }

    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        match nix::unistd::write(self.fd.as_fd(), frame) {
            Ok(_) => {
                self.counters.tx_frames += 1;
                self.counters.tx_bytes += frame.len() as u64;
                Ok(())
            }
            Err(Errno::EAGAIN) | Err(Errno::ENOBUFS) | Err(Errno::EINTR) => {
                self.counters.tx_full_drops += 1;
                Ok(())
            }
            Err(e) => {
                self.counters.tx_errors += 1;
                Err(e.into())
            }
        }
    }
}

/// What a TAP device is created with (in the current network namespace).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapSpec {
    pub name: String,
    pub mtu: u16,
    pub mac: [u8; 6],
    pub txqueuelen: u32,
}

/// A Linux TAP device in L2 mode without packet information, non-blocking.
/// The device exists as long as this port (its file descriptor) lives.
#[derive(Debug)]
pub struct TapPort {
    name: String,
    inner: FdPort,
}

impl TapPort {
    /// Creates the TAP in the current namespace with its MTU, MAC and
    /// txqueuelen set; it is left down (moving it to another namespace downs
    /// it anyway).
    pub fn create(spec: &TapSpec) -> io::Result<TapPort> {
        Self::build(spec, true)
    }

    /// As `create`, but leaves txqueuelen at the kernel's default: inside a
    /// user namespace the ioctl that sets it (SIOCSIFTXQLEN) is refused, so
    /// set it by netlink instead (`ip link set DEV txqueuelen N`).
    pub fn create_in_user_namespace(spec: &TapSpec) -> io::Result<TapPort> {
        Self::build(spec, false)
    }

    fn build(spec: &TapSpec, set_txqueuelen: bool) -> io::Result<TapPort> {
        let mut builder = tun_rs::DeviceBuilder::new()
            .name(spec.name.clone())
            .layer(tun_rs::Layer::L2)
            .packet_information(false)
            .mtu(spec.mtu)
            .mac_addr(spec.mac)
            .enable(false);
        if set_txqueuelen {
            builder = builder.tx_queue_len(spec.txqueuelen);
        }
        let dev = builder.build_sync().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("creating TAP device {:?}: {e}", spec.name),
            )
        })?;
        // SAFETY: `into_raw_fd` hands over the open TAP descriptor and gives
        // up ownership, so this OwnedFd is its only owner.
        let fd = unsafe { OwnedFd::from_raw_fd(dev.into_raw_fd()) };
        nix::fcntl::fcntl(
            fd.as_raw_fd(),
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        )?;
        Ok(TapPort {
            name: spec.name.clone(),
            inner: FdPort::new(fd),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl FramePort for TapPort {
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        self.inner.recv(buf)
    }
    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        self.inner.send(frame)
    }
    fn raw_fd(&self) -> RawFd {
        self.inner.fd.as_raw_fd()
    }
    fn counters(&self) -> PortCounters {
        self.inner.counters
    }
}

/// `PACKET_IGNORE_OUTGOING` (linux/if_packet.h, Linux 4.20+): the socket
/// does not see frames the interface sends.
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// A raw `AF_PACKET` socket bound to one interface of the calling thread's
/// network namespace, non-blocking: each read is one whole Ethernet frame
/// the interface received, each write one frame it sends. Frames the
/// interface sends are not read back (`PACKET_IGNORE_OUTGOING`).
#[derive(Debug)]
pub struct PacketPort {
    inner: FdPort,
}

impl PacketPort {
    /// Binds to interface `ifname` (which must exist in this thread's
    /// network namespace; needs CAP_NET_RAW in the user namespace owning it).
    pub fn bind(ifname: &str) -> io::Result<PacketPort> {
        let ifindex = nix::net::if_::if_nametoindex(ifname).map_err(|e| {
            io::Error::new(
                io::Error::from(e).kind(),
                format!("interface {ifname:?} for a packet socket: {e}"),
            )
        })?;
        // Protocol 0 at creation: nothing is queued until the bind below
        // selects both the protocol (all) and the interface.
        // SAFETY: plain syscall; the result is checked before use.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("creating a packet socket for {ifname:?} (needs CAP_NET_RAW): {e}"),
            ));
        }
        // SAFETY: `raw` is a fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let one: libc::c_int = 1;
        // SAFETY: `one` outlives the call and its size is passed.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                PACKET_IGNORE_OUTGOING,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: all-zero is a valid sockaddr_ll.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        addr.sll_ifindex = ifindex as i32;
        // SAFETY: `addr` is a sockaddr_ll and its size is passed.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("binding a packet socket to {ifname:?}: {e}"),
            ));
        }
        Ok(PacketPort {
            inner: FdPort::new(fd),
        })
    }
}

impl FramePort for PacketPort {
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        self.inner.recv(buf)
    }
    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        self.inner.send(frame)
    }
    fn raw_fd(&self) -> RawFd {
        self.inner.fd.as_raw_fd()
    }
    fn counters(&self) -> PortCounters {
        self.inner.counters
    }
}

/// One end of a non-blocking `SOCK_SEQPACKET` Unix socketpair: each send is
/// one frame, each recv returns one frame.
#[derive(Debug)]
pub struct SocketPairPort {
    inner: FdPort,
}

impl SocketPairPort {
    /// Both ends of a fresh socketpair.
    pub fn pair() -> io::Result<(SocketPairPort, SocketPairPort)> {
        let (a, b) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        )?;
        Ok((
            SocketPairPort {
                inner: FdPort::new(a),
            },
            SocketPairPort {
                inner: FdPort::new(b),
            },
        ))
    }
}

impl FramePort for SocketPairPort {
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        self.inner.recv(buf)
    }
    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        self.inner.send(frame)
    }
    fn raw_fd(&self) -> RawFd {
        self.inner.fd.as_raw_fd()
    }
    fn counters(&self) -> PortCounters {
        self.inner.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socketpair_keeps_frame_boundaries_and_counts() {
        let (mut a, mut b) = SocketPairPort::pair().unwrap();
        let mut buf = [0u8; 2048];
        assert_eq!(b.recv(&mut buf).unwrap(), None, "nothing sent yet");
        a.send(&[1u8; 60]).unwrap();
        a.send(&[2u8; 1514]).unwrap();
        assert_eq!(b.recv(&mut buf).unwrap(), Some(60));
        assert_eq!(buf[0], 1);
        assert_eq!(b.recv(&mut buf).unwrap(), Some(1514));
        assert_eq!(buf[1513], 2);
        assert_eq!(b.recv(&mut buf).unwrap(), None);
        assert_eq!(a.counters().tx_frames, 2);
        assert_eq!(a.counters().tx_bytes, 1574);
        assert_eq!(b.counters().rx_frames, 2);
    }

    #[test]
    fn full_socket_drops_and_counts_instead_of_blocking() {
        let (mut a, _b) = SocketPairPort::pair().unwrap();
        let frame = [0u8; 1514];
        for _ in 0..100_000 {
            a.send(&frame).unwrap();
            if a.counters().tx_full_drops > 0 {
                break;
            }
        }
        let c = a.counters();
        assert!(c.tx_full_drops > 0, "send buffer never filled: {c:?}");
        assert_eq!(c.tx_errors, 0);
    }

    #[test]
    fn closed_peer_is_an_error_not_a_panic() {
        let (mut a, b) = SocketPairPort::pair().unwrap();
        drop(b);
        assert!(a.send(&[0u8; 60]).is_err());
        assert_eq!(a.counters().tx_errors, 1);
    }
}
