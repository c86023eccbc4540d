//! Frame ports: where the live datapath reads frames from and writes them to.
//!
//! `FramePort` is a non-blocking, one-frame-per-call interface. `TapPort` is a
//! Linux TAP device (L2, `IFF_NO_PI`, created with tun-rs, or an existing
//! persistent TAP attached to); `PacketPort` is an
//! `AF_PACKET` socket bound to one interface (the hub end of a veth pair, for
//! rootless links where /dev/net/tun is closed to the user, and each end of
//! a wire, `crate::wire`, promiscuous, past the qdisc and with offload
//! headers, `PacketOptions`); `SocketPairPort`
//! is one end of a `SOCK_SEQPACKET` Unix socketpair, which keeps frame
//! boundaries and lets the real datapath thread run in tests without root.
//!
//! A port opened with offload carries a `virtio_net_hdr` (`gso::VnetHdr`)
//! before every frame: a TAP then has `IFF_VNET_HDR` and the TCP offloads
//! (`TUNSETOFFLOAD`: checksum, TSO4, TSO6, TSO with ECN), so the kernel hands
//! over GSO super-frames of up to 64 KB and accepts them back; such frames
//! are read with `recv_offload` and written with `send_offload` (one
//! `readv`/`writev` each). `recv`/`send` on such a port strip or add an
//! all-zero header. The datapath reads with `recv_vec`, into the spare
//! room of a pool buffer, which is never zeroed first.
//!
//! A `PacketPort` opened with `PacketOptions::ring_mtu` (the wire's ends)
//! is batched (`ring`): it reads from a `TPACKET_V2` ring mapped into the
//! process, with no system call per frame, and its write half holds frames
//! until `FramePort::flush` sends them with one `sendmmsg`.
//!
//! A full device or socket (`EAGAIN`/`ENOBUFS` on send) never blocks the
//! datapath: the frame is counted in `PortCounters::tx_full_drops` and dropped.

mod ring;

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};

use std::io::IoSlice;

use nix::errno::Errno;
use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};

use crate::packet::gso::{VnetHdr, VNET_HDR_LEN};

pub use ring::is_truncated;

/// The TAP offloads bloatbox handles: checksum, TCP segmentation for IPv4
/// and IPv6, and TSO of ECN flows (`gso` segments all of them). UDP
/// segmentation (USO) is left off: the kernel segments UDP_SEGMENT sends
/// itself.
const TAP_OFFLOADS: libc::c_uint =
    libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6 | libc::TUN_F_TSO_ECN;

// TUNSETOFFLOAD takes the flags by value, TUNSETVNETHDRSZ a pointer to an int.
nix::ioctl_write_int!(
    /// `TUNSETOFFLOAD` (include/uapi/linux/if_tun.h): which offloads the
    /// reader of the TAP handles.
    tun_set_offload,
    b'T',
    208
);
nix::ioctl_write_ptr!(
    /// `TUNSETVNETHDRSZ`: the size of the virtio-net header before each
    /// frame.
    tun_set_vnet_hdr_sz,
    b'T',
    216,
    libc::c_int
);

/// Per-port I/O counters, exported in the live snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PortCounters {
    /// Frames read from the port.
    pub rx_frames: u64,
    /// Bytes read from the port.
    pub rx_bytes: u64,
    /// Frames written to the port.
    pub tx_frames: u64,
    /// Bytes written to the port.
    pub tx_bytes: u64,
    /// Frames dropped because the device or socket was full (EAGAIN/ENOBUFS).
    pub tx_full_drops: u64,
    /// Other read errors (the frame, if any, is lost).
    pub rx_errors: u64,
    /// Other write errors (the frame is lost).
    pub tx_errors: u64,
    /// Frames the kernel dropped because a packet socket's receive ring
    /// was full (`PACKET_STATISTICS`' `tp_drops`; the wire's ends).
    #[serde(default)]
    pub rx_ring_drops: u64,
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
    /// The port's I/O counters so far.
    fn counters(&self) -> PortCounters;
    /// Frames carry an offload header (see the module doc).
    fn offload(&self) -> bool {
        false
    }
    /// Reads one frame into `buf` with its offload header (all zero on a
    /// port without offload). A frame longer than `buf` is cut short.
    fn recv_offload(&mut self, buf: &mut [u8]) -> io::Result<Option<(usize, VnetHdr)>> {
        Ok(self.recv(buf)?.map(|n| (n, VnetHdr::default())))
    }
    /// Reads one frame with its offload header into `buf`, replacing what it
    /// held: at most `limit` bytes (a longer frame is cut short), into the
    /// buffer's spare capacity, which is not zeroed first, so a short frame
    /// touches only the lines it fills. Returns the frame's length, which
    /// is `buf`'s; `Ok(None)` (and `buf` empty) when nothing is waiting.
    /// Ports that copy frames out of a slice go through `recv_offload`.
    fn recv_vec(
        &mut self,
        buf: &mut Vec<u8>,
        limit: usize,
    ) -> io::Result<Option<(usize, VnetHdr)>> {
        buf.clear();
        buf.resize(limit, 0);
        let read = self.recv_offload(buf);
        buf.truncate(match read {
            Ok(Some((n, _))) => n,
            _ => 0,
        });
        read
    }
    /// Writes one frame with its offload header (a port without offload
    /// writes the bare frame; only plain frames are sent to such a port).
    fn send_offload(&mut self, frame: &[u8], _hdr: &VnetHdr) -> io::Result<()> {
        self.send(frame)
    }
    /// Sends the frames a batching port holds (`send` and `send_offload`
    /// may hold them until this is called); a port that writes each frame
    /// at once has nothing to do. An error is the first write error of the
    /// frames sent, every one of which was tried.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Splits the port into a half to read from and a half to write to,
    /// each with a descriptor of its own (the same open device or socket,
    /// `dup`ed), so that two threads can each own one half: the one that
    /// reads frames from this port and the one that writes frames to it.
    /// Each half counts what it does (the read half `rx_*`, the write half
    /// `tx_*`); the port's counters are their `PortCounters::merge`.
    fn split(self: Box<Self>) -> io::Result<PortHalves>;
}

/// A port split for two threads (`FramePort::split`).
pub struct PortHalves {
    /// Where frames are read from (and the descriptor to wait on).
    pub rx: Box<dyn FramePort>,
    /// Where frames are written to.
    pub tx: Box<dyn FramePort>,
}

impl PortCounters {
    /// The counters of a port whose halves counted `self` and `other`.
    pub fn merge(&self, other: &PortCounters) -> PortCounters {
        PortCounters {
            rx_frames: self.rx_frames + other.rx_frames,
            rx_bytes: self.rx_bytes + other.rx_bytes,
            tx_frames: self.tx_frames + other.tx_frames,
            tx_bytes: self.tx_bytes + other.tx_bytes,
            tx_full_drops: self.tx_full_drops + other.tx_full_drops,
            rx_errors: self.rx_errors + other.rx_errors,
            tx_errors: self.tx_errors + other.tx_errors,
            rx_ring_drops: self.rx_ring_drops + other.rx_ring_drops,
        }
    }
}

/// A port kind that is an `FdPort` made its own way (TAP, packet socket,
/// socketpair): its `FramePort` is the `FdPort`'s.
trait OnFd {
    fn fd_port(&self) -> &FdPort;
    fn fd_port_mut(&mut self) -> &mut FdPort;
}

impl<T: OnFd + Send + 'static> FramePort for T {
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        self.fd_port_mut().recv(buf)
    }
    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        self.fd_port_mut().send(frame)
    }
    fn raw_fd(&self) -> RawFd {
        self.fd_port().fd.as_raw_fd()
    }
    fn counters(&self) -> PortCounters {
        self.fd_port().counters
    }
    fn offload(&self) -> bool {
        self.fd_port().vnet
    }
    fn recv_offload(&mut self, buf: &mut [u8]) -> io::Result<Option<(usize, VnetHdr)>> {
        self.fd_port_mut().recv_offload(buf)
    }
    fn recv_vec(
        &mut self,
        buf: &mut Vec<u8>,
        limit: usize,
    ) -> io::Result<Option<(usize, VnetHdr)>> {
        self.fd_port_mut().recv_vec(buf, limit)
    }
    fn send_offload(&mut self, frame: &[u8], hdr: &VnetHdr) -> io::Result<()> {
        self.fd_port_mut().send_offload(frame, hdr)
    }
    fn split(self: Box<Self>) -> io::Result<PortHalves> {
        let tx = self.fd_port().try_clone()?;
        Ok(PortHalves {
            rx: self,
            tx: Box::new(tx),
        })
    }
}

impl OnFd for FdPort {
    fn fd_port(&self) -> &FdPort {
        self
    }
    fn fd_port_mut(&mut self) -> &mut FdPort {
        self
    }
}

/// The counting and error mapping shared by every port kind; the kinds only
/// differ in how the descriptor is made.
#[derive(Debug)]
struct FdPort {
    fd: OwnedFd,
    counters: PortCounters,
    /// Every frame is preceded by a `VnetHdr`.
    vnet: bool,
}

impl FdPort {
    fn new(fd: OwnedFd, vnet: bool) -> FdPort {
        FdPort {
            fd,
            counters: PortCounters::default(),
            vnet,
        }
    }

    /// The same device or socket on a descriptor of its own, counting
    /// from zero.
    fn try_clone(&self) -> io::Result<FdPort> {
        Ok(FdPort::new(self.fd.try_clone()?, self.vnet))
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        Ok(self.recv_offload(buf)?.map(|(n, _)| n))
    }

    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        self.send_offload(frame, &VnetHdr::default())
    }

    /// One `read` (or `readv` of header and frame). A read shorter than the
    /// header is an error (`InvalidData`), counted in `rx_errors`; with
    /// offload, end-of-file (a hung-up socket) reads as nothing waiting.
    #[allow(unsafe_code)]
    fn recv_offload(&mut self, buf: &mut [u8]) -> io::Result<Option<(usize, VnetHdr)>> {
        // SAFETY: `buf` is `buf.len()` writable bytes.
        unsafe { self.read_into(buf.as_mut_ptr(), buf.len()) }
    }

    /// `recv_offload` into the spare capacity of `buf` (`FramePort::recv_vec`).
    #[allow(unsafe_code)]
    fn recv_vec(
        &mut self,
        buf: &mut Vec<u8>,
        limit: usize,
    ) -> io::Result<Option<(usize, VnetHdr)>> {
        buf.clear();
        buf.reserve(limit);
        // SAFETY: `reserve` left room for `limit` bytes from the start.
        let read = unsafe { self.read_into(buf.as_mut_ptr(), limit) };
        if let Ok(Some((n, _))) = read {
            // SAFETY: the kernel wrote the `n` (at most `limit`) bytes.
            unsafe { buf.set_len(n) };
        }
        read
    }

    /// The read of `recv_offload` into the `len` bytes at `at`, which need
    /// not be initialised.
    ///
    /// # Safety
    /// `at` must be valid for writes of `len` bytes.
    #[allow(unsafe_code)]
    unsafe fn read_into(
        &mut self,
        at: *mut u8,
        len: usize,
    ) -> io::Result<Option<(usize, VnetHdr)>> {
        let mut hdr = [0u8; VNET_HDR_LEN];
        let fd = self.fd.as_raw_fd();
        let (rc, header) = if self.vnet {
            let iov = [
                libc::iovec {
                    iov_base: hdr.as_mut_ptr().cast(),
                    iov_len: VNET_HDR_LEN,
                },
                libc::iovec {
                    iov_base: at.cast(),
                    iov_len: len,
                },
            ];
            // SAFETY: the iovecs point at `hdr` and at the caller's `len` bytes.
            (unsafe { libc::readv(fd, iov.as_ptr(), 2) }, VNET_HDR_LEN)
        } else {
            // A plain `read`: a frame by frame port's reads cost no iovec.
            // SAFETY: `at` is valid for writes of `len` bytes.
            (unsafe { libc::read(fd, at.cast(), len) }, 0)
        };
        let read = match rc {
            0 if self.vnet => return Ok(None),
            rc if rc >= 0 => Ok((rc as usize).checked_sub(header)),
            _ => Err(Errno::last()),
        };
        match read {
            Ok(Some(n)) => {
                self.counters.rx_frames += 1;
                self.counters.rx_bytes += n as u64;
                Ok(Some((n, VnetHdr::from_bytes(&hdr))))
            }
            Ok(None) => {
                self.counters.rx_errors += 1;
                Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "read shorter than the offload header",
                ))
            }
            Err(Errno::EAGAIN) | Err(Errno::EINTR) => Ok(None),
            Err(e) => {
                self.counters.rx_errors += 1;
                Err(e.into())
            }
        }
    }

    /// One `write` (or `writev` of header and frame).
    fn send_offload(&mut self, frame: &[u8], hdr: &VnetHdr) -> io::Result<()> {
        let written = if self.vnet {
            let hdr = hdr.to_bytes();
            nix::sys::uio::writev(self.fd.as_fd(), &[IoSlice::new(&hdr), IoSlice::new(frame)])
        } else {
            nix::unistd::write(self.fd.as_fd(), frame)
        };
        match written {
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
    /// The interface name (at most 15 bytes, `IFNAMSIZ` - 1).
    pub name: String,
    /// The MTU, bytes (without the Ethernet header).
    pub mtu: u16,
    /// The MAC address.
    pub mac: [u8; 6],
    /// The kernel queue in front of the TAP's reader, frames (`ip link set ...
    /// txqueuelen`).
    pub txqueuelen: u32,
    /// Open with `IFF_VNET_HDR` and the TCP offloads (GSO super-frames).
    pub offload: bool,
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
    /// txqueuelen set, and with offload if the spec asks; it is left down
    /// (moving it to another namespace downs it anyway).
    pub fn create(spec: &TapSpec) -> io::Result<TapPort> {
        let mut ports = Self::build(spec, true, 1)?;
        Ok(ports.remove(0))
    }

    /// As `create`, with `queues` queues: with more than one the TAP is
    /// made with `IFF_MULTI_QUEUE` and opened once per queue, a port each
    /// (the kernel spreads the frames it sends over the queues by flow);
    /// the device lives as long as any of them.
    pub fn create_queues(spec: &TapSpec, queues: usize) -> io::Result<Vec<TapPort>> {
        Self::build(spec, true, queues)
    }

    /// As `create`, but leaves txqueuelen at the kernel's default: inside a
    /// user namespace the ioctl that sets it (SIOCSIFTXQLEN) is refused, so
    /// set it by netlink instead (`ip link set DEV txqueuelen N`).
    pub fn create_in_user_namespace(spec: &TapSpec) -> io::Result<TapPort> {
        let mut ports = Self::build(spec, false, 1)?;
        Ok(ports.remove(0))
    }

    fn build(spec: &TapSpec, set_txqueuelen: bool, queues: usize) -> io::Result<Vec<TapPort>> {
        let named = |what: &str, e: io::Error| {
            io::Error::new(e.kind(), format!("{what} TAP device {:?}: {e}", spec.name))
        };
        let mut builder = tun_rs::DeviceBuilder::new()
            .name(spec.name.clone())
            .layer(tun_rs::Layer::L2)
            .packet_information(false)
            .mtu(spec.mtu)
            .mac_addr(spec.mac)
            .offload(spec.offload)
            .multi_queue(queues > 1)
            .enable(false);
        if set_txqueuelen {
            builder = builder.tx_queue_len(spec.txqueuelen);
        }
        let first = builder.build_sync().map_err(|e| named("creating", e))?;
        let mut devices = Vec::with_capacity(queues.max(1));
        for _ in 1..queues {
            devices.push(
                first
                    .try_clone()
                    .map_err(|e| named("opening a queue of", e))?,
            );
        }
        devices.insert(0, first);
        devices
            .into_iter()
            .map(|dev| TapPort::from_device(&spec.name, dev, spec.offload))
            .collect()
    }

    /// Attaches to the existing persistent TAP `name` of the calling
    /// thread's network namespace (made with `ip tuntap add mode tap`),
    /// changing nothing of its set-up (MTU, MAC, addresses, up or down).
    /// Returns the port (without offload) and the device's MTU. The device
    /// outlives the port.
    ///
    /// Fails with `NotFound` if no interface of that name exists here
    /// (TUNSETIFF would create a new TAP); fails as well if it is not a
    /// TAP or another process has it open.
    pub fn attach(name: &str) -> io::Result<(TapPort, u16)> {
        if nix::net::if_::if_nametoindex(name).is_err() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no interface {name:?} in this network namespace"),
            ));
        }
        let context =
            |e: io::Error| io::Error::new(e.kind(), format!("attaching to TAP {name:?}: {e}"));
        let dev = tun_rs::DeviceBuilder::new()
            .name(name.to_string())
            .layer(tun_rs::Layer::L2)
            .packet_information(false)
            .inherit_enable_state()
            .build_sync()
            .map_err(context)?;
        let mtu = dev.mtu().map_err(context)?;
        Ok((TapPort::from_device(name, dev, false)?, mtu))
    }

    /// Takes over the open TAP descriptor of `dev`, non-blocking; with
    /// `offload` (the device was opened with `IFF_VNET_HDR`) pins the header
    /// size and the offload mask.
    #[allow(unsafe_code)]
    fn from_device(name: &str, dev: tun_rs::SyncDevice, offload: bool) -> io::Result<TapPort> {
        let named = |what: &str, e: io::Error| {
            io::Error::new(e.kind(), format!("{what} TAP device {name:?}: {e}"))
        };
        // SAFETY: `into_raw_fd` hands over the open TAP descriptor and gives
        // up ownership, so this OwnedFd is its only owner.
        let fd = unsafe { OwnedFd::from_raw_fd(dev.into_raw_fd()) };
        nix::fcntl::fcntl(
            fd.as_raw_fd(),
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        )?;
        if offload {
            // tun-rs set IFF_VNET_HDR and its own offload mask (with USO when
            // the kernel has it); pin the header size and the exact mask.
            let hdr_len = VNET_HDR_LEN as libc::c_int;
            // SAFETY: `fd` is an open TAP descriptor; the arguments are the
            // int (pointer) and flag word these ioctls take.
            unsafe {
                tun_set_vnet_hdr_sz(fd.as_raw_fd(), &hdr_len)
                    .map_err(|e| named("TUNSETVNETHDRSZ on", e.into()))?;
                tun_set_offload(fd.as_raw_fd(), TAP_OFFLOADS as _)
                    .map_err(|e| named("TUNSETOFFLOAD on", e.into()))?;
            }
        }
        Ok(TapPort {
            name: name.to_string(),
            inner: FdPort::new(fd, offload),
        })
    }

    /// The TAP's interface name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl OnFd for TapPort {
    fn fd_port(&self) -> &FdPort {
        &self.inner
    }
    fn fd_port_mut(&mut self) -> &mut FdPort {
        &mut self.inner
    }
}

/// `PACKET_IGNORE_OUTGOING` (linux/if_packet.h, Linux 4.20+): the socket
/// does not see frames the interface sends.
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
/// `PACKET_VNET_HDR` (linux/if_packet.h): a `virtio_net_hdr` before every
/// frame read and written (af_packet.c, `packet_rcv_vnet`/`packet_snd_vnet_parse`).
const PACKET_VNET_HDR: libc::c_int = 15;
/// `PACKET_QDISC_BYPASS` (Linux 3.14+): frames written go to the driver
/// directly (`packet_direct_xmit`), past the interface's qdisc.
const PACKET_QDISC_BYPASS: libc::c_int = 20;
/// `PACKET_ADD_MEMBERSHIP` and its `PACKET_MR_PROMISC` type: promiscuous
/// mode held by the socket; the kernel drops it when the socket closes
/// (af_packet.c, `packet_flush_mclist`).
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_MR_PROMISC: libc::c_ushort = 1;
/// `SO_RCVBUFFORCE`/`SO_SNDBUFFORCE` (asm-generic/socket.h): buffer sizes
/// past `net.core.rmem_max`/`wmem_max`, for CAP_NET_ADMIN.
const SO_SNDBUFFORCE: libc::c_int = 32;
const SO_RCVBUFFORCE: libc::c_int = 33;

/// `struct packet_mreq` (linux/if_packet.h).
#[repr(C)]
struct PacketMreq {
    mr_ifindex: libc::c_int,
    mr_type: libc::c_ushort,
    mr_alen: libc::c_ushort,
    mr_address: [libc::c_uchar; 8],
}

/// How a `PacketPort` is opened beyond the plain socket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketOptions {
    /// Hold the interface in promiscuous mode while the socket is open
    /// (`PACKET_MR_PROMISC` membership: restored by the kernel on close).
    pub promisc: bool,
    /// Read and write frames with a `virtio_net_hdr` (`PACKET_VNET_HDR`):
    /// GSO super-frames and partial checksums pass with their header.
    pub vnet: bool,
    /// Send past the interface's qdisc (`PACKET_QDISC_BYPASS`).
    pub qdisc_bypass: bool,
    /// Socket receive and send buffers, bytes (`SO_RCVBUFFORCE`,
    /// `SO_SNDBUFFORCE`); 0 keeps the kernel's default.
    pub buffer_bytes: u32,
    /// Batched, for frames of up to this MTU: read through a receive ring
    /// and, once split, written in batches (`ring`).
    pub ring_mtu: Option<u32>,
}

/// Sets an integer (or any plain struct) socket option.
#[allow(unsafe_code)]
pub(crate) fn set_sockopt<T>(
    fd: &impl AsFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: `value` outlives the call and its size is passed.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_fd().as_raw_fd(),
            level,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A raw `AF_PACKET` socket bound to one interface of the calling thread's
/// network namespace, non-blocking: each read is one whole Ethernet frame
/// the interface received, each write one frame it sends. Frames the
/// interface sends are not read back (`PACKET_IGNORE_OUTGOING`). With
/// `PacketOptions::ring_mtu` it reads from a receive ring and its write half
/// sends in batches (`ring`).
#[derive(Debug)]
pub struct PacketPort {
    inner: FdPort,
    ring: Option<ring::RxRing>,
}

impl PacketPort {
    /// Binds to interface `ifname` (which must exist in this thread's
    /// network namespace; needs CAP_NET_RAW in the user namespace owning it).
    pub fn bind(ifname: &str) -> io::Result<PacketPort> {
        Self::bind_with(ifname, PacketOptions::default())
    }

    /// As `bind`, with `opts` (the wire's ports: promiscuous, offload
    /// headers, past the qdisc).
    #[allow(unsafe_code)]
    pub fn bind_with(ifname: &str, opts: PacketOptions) -> io::Result<PacketPort> {
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
        let named = |what: &str, e: io::Error| {
            io::Error::new(
                e.kind(),
                format!("{what} on the packet socket of {ifname:?}: {e}"),
            )
        };
        let one: libc::c_int = 1;
        set_sockopt(&fd, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, &one)
            .map_err(|e| named("PACKET_IGNORE_OUTGOING", e))?;
        if opts.vnet {
            set_sockopt(&fd, libc::SOL_PACKET, PACKET_VNET_HDR, &one)
                .map_err(|e| named("PACKET_VNET_HDR", e))?;
        }
        if opts.qdisc_bypass {
            set_sockopt(&fd, libc::SOL_PACKET, PACKET_QDISC_BYPASS, &one)
                .map_err(|e| named("PACKET_QDISC_BYPASS", e))?;
        }
        if opts.buffer_bytes > 0 {
            let bytes = opts.buffer_bytes as libc::c_int;
            set_sockopt(&fd, libc::SOL_SOCKET, SO_RCVBUFFORCE, &bytes)
                .map_err(|e| named("SO_RCVBUFFORCE", e))?;
            set_sockopt(&fd, libc::SOL_SOCKET, SO_SNDBUFFORCE, &bytes)
                .map_err(|e| named("SO_SNDBUFFORCE", e))?;
        }
        // After PACKET_VNET_HDR (refused once a ring exists) and before the
        // bind, so that no frame is queued outside the ring.
        let ring = opts
            .ring_mtu
            .map(|mtu| ring::RxRing::attach(&fd, ring::Layout::for_mtu(mtu)))
            .transpose()
            .map_err(|e| named("the receive ring", e))?;
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
        if opts.promisc {
            let mreq = PacketMreq {
                mr_ifindex: ifindex as libc::c_int,
                mr_type: PACKET_MR_PROMISC,
                mr_alen: 0,
                mr_address: [0; 8],
            };
            set_sockopt(&fd, libc::SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq)
                .map_err(|e| named("PACKET_MR_PROMISC", e))?;
        }
        Ok(PacketPort {
            inner: FdPort::new(fd, opts.vnet),
            ring,
        })
    }
}

impl FramePort for PacketPort {
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        Ok(self.recv_offload(buf)?.map(|(n, _)| n))
    }
    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        self.inner.send(frame)
    }
    fn raw_fd(&self) -> RawFd {
        self.inner.fd.as_raw_fd()
    }
    /// With a ring, also the frames the kernel dropped because it was full
    /// so far (read, and reset, from the socket).
    fn counters(&self) -> PortCounters {
        PortCounters {
            rx_ring_drops: self
                .ring
                .as_ref()
                .map_or(0, |r| r.kernel_drops(&self.inner.fd)),
            ..self.inner.counters
        }
    }
    fn offload(&self) -> bool {
        self.inner.vnet
    }
    fn recv_offload(&mut self, buf: &mut [u8]) -> io::Result<Option<(usize, VnetHdr)>> {
        match &mut self.ring {
            Some(r) => ring::recv(r, &mut self.inner, buf),
            None => self.inner.recv_offload(buf),
        }
    }
    fn recv_vec(
        &mut self,
        buf: &mut Vec<u8>,
        limit: usize,
    ) -> io::Result<Option<(usize, VnetHdr)>> {
        match &mut self.ring {
            Some(r) => ring::recv_vec(r, &mut self.inner, buf, limit),
            None => self.inner.recv_vec(buf, limit),
        }
    }
    fn send_offload(&mut self, frame: &[u8], hdr: &VnetHdr) -> io::Result<()> {
        self.inner.send_offload(frame, hdr)
    }
    /// The write half of a port with a ring sends in batches, in slots of
    /// the ring's size.
    fn split(self: Box<Self>) -> io::Result<PortHalves> {
        let clone = self.inner.try_clone()?;
        let tx: Box<dyn FramePort> = match &self.ring {
            Some(r) => Box::new(ring::BatchSender::new(clone, r.frame_size())),
            None => Box::new(clone),
        };
        Ok(PortHalves { rx: self, tx })
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
        Self::pair_with(false)
    }

    /// Both ends of a fresh socketpair whose messages carry an offload
    /// header before the frame, as a TAP with offload does.
    pub fn pair_offload() -> io::Result<(SocketPairPort, SocketPairPort)> {
        Self::pair_with(true)
    }

    fn pair_with(vnet: bool) -> io::Result<(SocketPairPort, SocketPairPort)> {
        let (a, b) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        )?;
        Ok((
            SocketPairPort {
                inner: FdPort::new(a, vnet),
            },
            SocketPairPort {
                inner: FdPort::new(b, vnet),
            },
        ))
    }
}

impl OnFd for SocketPairPort {
    fn fd_port(&self) -> &FdPort {
        &self.inner
    }
    fn fd_port_mut(&mut self) -> &mut FdPort {
        &mut self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header of a TSO'd IPv4 TCP super-frame (MSS 1448).
    pub(super) fn tso_header() -> VnetHdr {
        VnetHdr {
            flags: crate::packet::gso::F_NEEDS_CSUM,
            gso_type: crate::packet::gso::GSO_TCPV4,
            hdr_len: 66,
            gso_size: 1448,
            csum_start: 34,
            csum_offset: 16,
        }
    }

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
    fn offload_ports_carry_the_header_with_each_frame() {
        let (mut a, mut b) = SocketPairPort::pair_offload().unwrap();
        assert!(a.offload() && b.offload());
        let hdr = tso_header();
        let big = vec![7u8; 60_000];
        a.send_offload(&big, &hdr).unwrap();
        a.send(&[1u8; 60]).unwrap();
        let mut buf = vec![0u8; 65_600];
        assert_eq!(b.recv_offload(&mut buf).unwrap(), Some((60_000, hdr)));
        assert_eq!(buf[59_999], 7);
        assert_eq!(
            b.recv_offload(&mut buf).unwrap(),
            Some((60, VnetHdr::default())),
            "plain send writes an all-zero header"
        );
        assert_eq!(b.counters().rx_bytes, 60_060, "frame bytes, not headers");
        // A plain port reports plain headers.
        let (mut c, mut d) = SocketPairPort::pair().unwrap();
        assert!(!c.offload());
        c.send_offload(&[3u8; 80], &hdr).unwrap();
        assert_eq!(
            d.recv_offload(&mut buf).unwrap(),
            Some((80, VnetHdr::default()))
        );
    }

    #[test]
    fn recv_vec_reads_into_spare_capacity_up_to_its_limit() {
        for (vnet, (mut a, mut b)) in [
            (false, SocketPairPort::pair().unwrap()),
            (true, SocketPairPort::pair_offload().unwrap()),
        ] {
            let hdr = if vnet {
                VnetHdr {
                    flags: crate::packet::gso::F_NEEDS_CSUM,
                    csum_start: 34,
                    csum_offset: 16,
                    ..VnetHdr::default()
                }
            } else {
                VnetHdr::default()
            };
            // A buffer that held a longer frame, and one with no room yet.
            let mut buf = vec![9u8; 1514];
            let mut fresh = Vec::new();
            assert_eq!(b.recv_vec(&mut buf, 1536).unwrap(), None);
            assert!(buf.is_empty(), "nothing waiting leaves it empty");
            a.send_offload(&[1u8; 60], &hdr).unwrap();
            a.send_offload(&[2u8; 1514], &hdr).unwrap();
            a.send_offload(&[3u8; 1600], &hdr).unwrap();
            assert_eq!(b.recv_vec(&mut buf, 1536).unwrap(), Some((60, hdr)));
            assert_eq!(buf, [1u8; 60], "vnet {vnet}: the frame, not the old bytes");
            assert_eq!(b.recv_vec(&mut fresh, 1536).unwrap(), Some((1514, hdr)));
            assert_eq!(fresh, [2u8; 1514]);
            // Longer than the limit: cut short there, as a slice read is.
            assert_eq!(b.recv_vec(&mut buf, 1536).unwrap(), Some((1536, hdr)));
            assert_eq!(buf, [3u8; 1536]);
            assert_eq!(b.recv_vec(&mut buf, 1536).unwrap(), None);
            assert!(buf.is_empty());
            assert_eq!(b.counters().rx_frames, 3);
        }
        // A read shorter than the offload header is the same error.
        let (a, mut b) = SocketPairPort::pair_offload().unwrap();
        nix::unistd::write(a.inner.fd.as_fd(), &[0u8; 4]).unwrap();
        let mut buf = Vec::new();
        let err = b.recv_vec(&mut buf, 64).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(buf.is_empty());
    }

    #[test]
    fn a_read_shorter_than_the_offload_header_is_an_error() {
        let (a, mut b) = SocketPairPort::pair_offload().unwrap();
        nix::unistd::write(a.inner.fd.as_fd(), &[0u8; 4]).unwrap();
        let mut buf = [0u8; 64];
        let err = b.recv_offload(&mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert_eq!(b.counters().rx_errors, 1);
    }

    #[test]
    fn split_halves_share_the_socket_and_count_their_own_side() {
        let (a, mut b) = SocketPairPort::pair_offload().unwrap();
        let PortHalves { mut rx, mut tx } = (Box::new(a) as Box<dyn FramePort>).split().unwrap();
        assert!(rx.offload() && tx.offload());
        assert_ne!(rx.raw_fd(), tx.raw_fd(), "each half has its own descriptor");
        tx.send(&[5u8; 100]).unwrap();
        b.send(&[6u8; 70]).unwrap();
        let mut buf = [0u8; 256];
        assert_eq!(b.recv(&mut buf).unwrap(), Some(100), "sent by the tx half");
        assert_eq!(rx.recv(&mut buf).unwrap(), Some(70), "read by the rx half");
        assert_eq!(buf[0], 6);
        let (r, t) = (rx.counters(), tx.counters());
        assert_eq!(
            (r.rx_frames, r.tx_frames, t.rx_frames, t.tx_frames),
            (1, 0, 0, 1)
        );
        let port = r.merge(&t);
        assert_eq!((port.rx_bytes, port.tx_bytes), (70, 100));
        // Dropping one half leaves the other working.
        drop(rx);
        tx.send(&[7u8; 60]).unwrap();
        assert_eq!(b.recv(&mut buf).unwrap(), Some(60));
    }

    #[test]
    fn closed_peer_is_an_error_not_a_panic() {
        let (mut a, b) = SocketPairPort::pair().unwrap();
        drop(b);
        assert!(a.send(&[0u8; 60]).is_err());
        assert_eq!(a.counters().tx_errors, 1);
    }
}
