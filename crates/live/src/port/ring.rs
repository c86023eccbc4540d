//! The batched packet socket (`PacketOptions::batched`, the wire's ends): a
//! `TPACKET_V2` receive ring mapped into the process, read without a system
//! call per frame, and a sender that hands the kernel up to `BATCH` frames
//! per `sendmmsg`.
//!
//! Receiving follows net/packet/af_packet.c `tpacket_rcv` (Linux 6.x) and
//! Documentation/networking/packet_mmap.rst. The ring is `frames` slots of
//! `frame_size` bytes; each slot starts with a `struct tpacket2_hdr` whose
//! `tp_status` is the handshake: the kernel fills a slot it owns
//! (`TP_STATUS_KERNEL`), copies the frame to `tp_mac` (with the
//! `virtio_net_hdr` of `PACKET_VNET_HDR` in the 10 bytes before it), sets
//! `tp_len`, `tp_snaplen` and the rest, then publishes the slot with
//! `TP_STATUS_USER` after a write barrier (`smp_wmb`, `__packet_set_status`)
//! and wakes the socket's readers (`sk_data_ready`) for that one frame. The
//! reader loads the status with acquire ordering, takes the frame, and gives
//! the slot back by storing `TP_STATUS_KERNEL` with release ordering. Slots
//! are taken in order, so one index (`head`) follows the kernel's. A frame
//! longer than its slot (a GSO super-frame: slots are sized for the MTU) is
//! cut to the slot, and with `PACKET_COPY_THRESH` set the kernel also queues
//! the whole frame on the socket (`TP_STATUS_COPY`), where it is read with
//! one `readv` in its turn; when the socket's receive buffer is full it does
//! not, and the slot holds a truncated frame (`tp_snaplen < tp_len`), which
//! the datapath counts as an `oversize` drop (`TRUNCATED`).
//!
//! Why `TPACKET_V2` and not `TPACKET_V3`: V3 packs frames into blocks and
//! hands over a whole block at once, waking the reader only when a block is
//! full or its retire timer (`tp_retire_blk_tov`, whole milliseconds)
//! fires; an idle ping would wait that long. Reading a block the kernel is
//! still filling is not a handshake the kernel offers: `prb_fill_curr_block`
//! counts a frame in the block before `skb_copy_bits` copies it, the
//! per-frame `tp_status` of V3 is written without a barrier and is not
//! cleared when a block is reused. V2's per-frame status and wake-up keep
//! the idle RTT of one syscall-free read; its cost is slots of fixed size.
//!
//! Sending copies each frame (with its offload header) into a slot of an
//! arena and `flush` passes the batch to `sendmmsg`; the kernel's
//! `packet_snd` runs for each message as it does for a `writev`
//! (`PACKET_QDISC_BYPASS` included). A `PACKET_TX_RING` was not used: its
//! frames reach the device as zero-copy fragments of the ring's pages, and
//! a veth copies them again (`skb_orphan_frags` in `__dev_forward_skb2`).
//! A frame larger than a slot (a super-frame) is sent on its own after the
//! batch before it, keeping the order.

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use nix::errno::Errno;

use super::{set_sockopt, FdPort, FramePort, PortCounters, PortHalves};
use crate::packet::gso::{VnetHdr, VNET_HDR_LEN};

/// `PACKET_VERSION`'s `TPACKET_V2` (linux/if_packet.h `enum tpacket_versions`).
const TPACKET_V2: libc::c_int = 1;
/// `PACKET_RX_RING`, `PACKET_STATISTICS`, `PACKET_COPY_THRESH` and
/// `PACKET_VERSION` (linux/if_packet.h).
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_COPY_THRESH: libc::c_int = 7;
const PACKET_VERSION: libc::c_int = 10;

/// `tp_status` values (linux/if_packet.h).
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_COPY: u32 = 1 << 1;

/// `TPACKET_ALIGNMENT`.
const TPACKET_ALIGNMENT: usize = 16;
/// `sizeof(struct tpacket2_hdr)`: tp_status, tp_len, tp_snaplen (u32),
/// tp_mac, tp_net (u16), tp_sec, tp_nsec (u32), tp_vlan_tci, tp_vlan_tpid
/// (u16), tp_padding[4].
const TPACKET2_HDR_SIZE: usize = 32;
/// Offsets of the fields read, in `struct tpacket2_hdr`.
const TP_LEN: usize = 4;
const TP_SNAPLEN: usize = 8;
const TP_MAC: usize = 12;
/// `TPACKET2_HDRLEN`: the aligned header and a `struct sockaddr_ll`.
const TPACKET2_HDRLEN: usize = align(TPACKET2_HDR_SIZE) + 20;
/// Room past the MTU for the Ethernet header and one VLAN tag.
const LINK_HEADERS: usize = 14 + 4;

/// Bytes of receive ring per socket (its slot count follows from the slot
/// size): 4096 slots of 2 KB at MTU 1500, more than the TAP's txqueuelen.
const RING_BYTES: usize = 8 << 20;
/// At least this many slots, whatever the MTU.
const MIN_FRAMES: usize = 256;
/// Bytes of each block the kernel allocates the ring in.
const BLOCK_BYTES: usize = 128 << 10;
/// Frames a sender holds before it must flush.
pub(super) const BATCH: usize = 64;

const fn align(n: usize) -> usize {
    (n + TPACKET_ALIGNMENT - 1) & !(TPACKET_ALIGNMENT - 1)
}

/// The ring's geometry (`struct tpacket_req`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    /// Bytes per slot (a power of two).
    pub frame_size: usize,
    /// Slots.
    pub frames: usize,
    /// Bytes per block (a multiple of the page size and of `frame_size`).
    pub block_size: usize,
}

impl Layout {
    /// Slots that hold a frame of `mtu` bytes past its link headers with
    /// the headers `tpacket_rcv` puts before it: `netoff =
    /// TPACKET_ALIGN(tp_hdrlen + max(maclen, 16)) + vnet_hdr_sz`, the frame
    /// starting at `netoff - maclen`.
    pub fn for_mtu(mtu: u32) -> Layout {
        let netoff = align(TPACKET2_HDRLEN + 16) + VNET_HDR_LEN;
        let frame_size = (netoff + mtu as usize + LINK_HEADERS)
            .next_power_of_two()
            .max(TPACKET_ALIGNMENT);
        let page = page_size();
        let block_size = frame_size.max(BLOCK_BYTES).max(page);
        let per_block = block_size / frame_size;
        let blocks = (RING_BYTES / block_size).max(MIN_FRAMES.div_ceil(per_block));
        Layout {
            frame_size,
            frames: blocks * per_block,
            block_size,
        }
    }

    fn blocks(&self) -> usize {
        self.frames / (self.block_size / self.frame_size)
    }

    /// Bytes of the whole mapping.
    fn map_len(&self) -> usize {
        self.blocks() * self.block_size
    }

    /// Where slot `i` starts in the mapping (slots do not straddle blocks).
    fn offset(&self, i: usize) -> usize {
        let per_block = self.block_size / self.frame_size;
        (i / per_block) * self.block_size + (i % per_block) * self.frame_size
    }
}

#[allow(unsafe_code)]
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).unwrap_or(4096).max(4096)
}

/// What a slot the kernel handed over holds (`parse`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Slot {
    /// A whole frame of `len` bytes at `mac` within the slot (with an
    /// offload header in the `VNET_HDR_LEN` bytes before it, if the socket
    /// has `PACKET_VNET_HDR`).
    Frame { mac: usize, len: usize },
    /// Longer than the slot: the whole frame is queued on the socket
    /// (`TP_STATUS_COPY`).
    Copied,
    /// Cut short with no copy queued (`tp_snaplen < tp_len`), or a header
    /// that does not fit its slot: the frame is lost.
    Truncated { len: usize },
}

/// Reads slot `slot` (its bytes, `frame_size` of them) whose status is
/// `status` (`TP_STATUS_USER` set), per `tpacket_rcv`'s layout; `vnet`: an
/// offload header precedes the frame. Never panics, whatever the bytes.
pub(super) fn parse(slot: &[u8], status: u32, vnet: bool) -> Slot {
    let u32_at = |at: usize| {
        slot.get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_ne_bytes) as usize
    };
    let u16_at = |at: usize| {
        slot.get(at..at + 2)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u16::from_ne_bytes) as usize
    };
    let (len, snap, mac) = (u32_at(TP_LEN), u32_at(TP_SNAPLEN), u16_at(TP_MAC));
    if status & TP_STATUS_COPY != 0 {
        return Slot::Copied;
    }
    let header = if vnet { VNET_HDR_LEN } else { 0 };
    let fits = mac >= TPACKET2_HDR_SIZE + header && mac.saturating_add(snap) <= slot.len();
    if snap < len || !fits {
        return Slot::Truncated { len };
    }
    Slot::Frame { mac, len }
}

/// The error a read of a truncated frame returns (`is_truncated`).
#[derive(Debug)]
struct Truncated;

impl std::fmt::Display for Truncated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("frame longer than its receive ring slot, and no copy queued")
    }
}

impl std::error::Error for Truncated {}

/// A read failed on a frame the ring cut short (counted in `rx_errors`;
/// the datapath drops it as `oversize`).
pub fn is_truncated(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Truncated>())
}

/// The mapped ring and the slot to read next.
pub(super) struct RxRing {
    base: NonNull<u8>,
    layout: Layout,
    head: usize,
    /// The kernel's drops read so far (`kernel_drops`).
    drops: Cell<u64>,
    /// The memory is an `mmap` of the socket's ring, unmapped on drop
    /// (false: memory a test owns).
    mapped: bool,
}

// SAFETY: the ring's memory belongs to this value alone in the process (no
// other reference to it is handed out past a call), so it may move to the
// datapath thread.
#[allow(unsafe_code)]
unsafe impl Send for RxRing {}

impl std::fmt::Debug for RxRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RxRing")
            .field("layout", &self.layout)
            .field("head", &self.head)
            .finish()
    }
}

impl RxRing {
    /// Sets up the socket `fd` (not yet bound) for a receive ring of
    /// `layout` and maps it: `PACKET_VERSION` V2, `PACKET_COPY_THRESH` (whole
    /// copies of frames longer than a slot), `PACKET_RX_RING`. Must follow
    /// `PACKET_VNET_HDR` (the kernel refuses it once a ring exists).
    #[allow(unsafe_code)]
    pub(super) fn attach(fd: &OwnedFd, layout: Layout) -> io::Result<RxRing> {
        let named = |what: &str, e: io::Error| io::Error::new(e.kind(), format!("{what}: {e}"));
        set_sockopt(fd, libc::SOL_PACKET, PACKET_VERSION, &TPACKET_V2)
            .map_err(|e| named("PACKET_VERSION", e))?;
        let one: libc::c_int = 1;
        set_sockopt(fd, libc::SOL_PACKET, PACKET_COPY_THRESH, &one)
            .map_err(|e| named("PACKET_COPY_THRESH", e))?;
        let to_u32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let req: [libc::c_uint; 4] = [
            to_u32(layout.block_size),
            to_u32(layout.blocks()),
            to_u32(layout.frame_size),
            to_u32(layout.frames),
        ];
        set_sockopt(fd, libc::SOL_PACKET, PACKET_RX_RING, &req)
            .map_err(|e| named("PACKET_RX_RING", e))?;
        let len = layout.map_len();
        // SAFETY: a fresh shared mapping of the socket's ring, of the size
        // the kernel made it (blocks × block size); checked before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(named(
                "mapping the receive ring",
                io::Error::last_os_error(),
            ));
        }
        let base = NonNull::new(ptr.cast())
            .ok_or_else(|| io::Error::other("mmap of the receive ring gave null"))?;
        Ok(RxRing {
            base,
            layout,
            head: 0,
            drops: Cell::new(0),
            mapped: true,
        })
    }

    /// The frames the kernel dropped so far because the ring was full:
    /// `PACKET_STATISTICS` on `fd` (the ring's socket) gives `struct
    /// tpacket_stats` and resets it (`packet_getsockopt`), so the sum is
    /// kept here.
    #[allow(unsafe_code)]
    pub(super) fn kernel_drops(&self, fd: &OwnedFd) -> u64 {
        let mut stats = [0u32; 2];
        let mut len = std::mem::size_of_val(&stats) as libc::socklen_t;
        // SAFETY: `stats` is a `struct tpacket_stats` (tp_packets, tp_drops)
        // and `len` says its size; the kernel writes at most that.
        let rc = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                PACKET_STATISTICS,
                stats.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if rc == 0 {
            self.drops.set(self.drops.get() + u64::from(stats[1]));
        }
        self.drops.get()
    }

    /// The status word of slot `i`.
    #[allow(unsafe_code)]
    fn status(&self, i: usize) -> &AtomicU32 {
        // SAFETY: slot `i` (< frames) lies within the mapping, starts on a
        // 16-byte boundary of a page-aligned mapping (so the u32 is
        // aligned), and the kernel writes this word only atomically
        // (WRITE_ONCE) or while it owns the slot; the reference lives no
        // longer than `self`.
        unsafe { AtomicU32::from_ptr(self.base.as_ptr().add(self.layout.offset(i)).cast()) }
    }

    /// The bytes of slot `i`, which the reader owns (its status says
    /// `TP_STATUS_USER`, read with acquire ordering).
    #[allow(unsafe_code)]
    fn slot(&self, i: usize) -> &[u8] {
        // SAFETY: the slot lies within the mapping; the kernel does not
        // write a slot the reader owns, and the reader gives it back
        // (`release`, `&mut self`) only after this borrow ends.
        unsafe {
            std::slice::from_raw_parts(
                self.base.as_ptr().add(self.layout.offset(i)),
                self.layout.frame_size,
            )
        }
    }

    /// Bytes per slot: a frame of the MTU with its headers fits.
    pub(super) fn frame_size(&self) -> usize {
        self.layout.frame_size
    }

    /// The next slot, if the kernel has handed it over: its bytes and
    /// status.
    pub(super) fn peek(&self) -> Option<(&[u8], u32)> {
        let status = self.status(self.head).load(Ordering::Acquire);
        (status & TP_STATUS_USER != 0).then(|| (self.slot(self.head), status))
    }

    /// Gives the slot `peek` returned back to the kernel and moves on.
    pub(super) fn release(&mut self) {
        self.status(self.head)
            .store(TP_STATUS_KERNEL, Ordering::Release);
        self.head = (self.head + 1) % self.layout.frames;
    }
}

impl Drop for RxRing {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        if self.mapped {
            // SAFETY: the mapping made in `attach`, of this length; no
            // borrow of it outlives `self`.
            unsafe {
                libc::munmap(self.base.as_ptr().cast(), self.layout.map_len());
            }
        }
    }
}

/// Reads the next frame from `ring` into `buf` (cut short if `buf` is),
/// with its offload header; a copied frame is read from the socket
/// (`port`), which counts it. `Ok(None)` if the kernel has handed nothing
/// over.
pub(super) fn recv(
    ring: &mut RxRing,
    port: &mut FdPort,
    buf: &mut [u8],
) -> io::Result<Option<(usize, VnetHdr)>> {
    take(ring, port, Dest::Slice(buf))
}

/// `recv` into `buf`'s spare capacity, at most `limit` bytes
/// (`FramePort::recv_vec`).
pub(super) fn recv_vec(
    ring: &mut RxRing,
    port: &mut FdPort,
    buf: &mut Vec<u8>,
    limit: usize,
) -> io::Result<Option<(usize, VnetHdr)>> {
    buf.clear();
    take(ring, port, Dest::Vec(buf, limit))
}

/// Where `take` puts a frame.
enum Dest<'a> {
    Slice(&'a mut [u8]),
    /// A buffer (empty) and the most it takes.
    Vec(&'a mut Vec<u8>, usize),
}

impl Dest<'_> {
    /// Copies `frame` in, cut short to the room there is; the bytes copied.
    fn copy(self, frame: &[u8]) -> usize {
        match self {
            Dest::Slice(buf) => {
                let n = frame.len().min(buf.len());
                buf[..n].copy_from_slice(&frame[..n]);
                n
            }
            Dest::Vec(buf, limit) => {
                buf.extend_from_slice(&frame[..frame.len().min(limit)]);
                buf.len()
            }
        }
    }

    /// Reads the next frame from the socket instead.
    fn read(self, port: &mut FdPort) -> io::Result<Option<(usize, VnetHdr)>> {
        match self {
            Dest::Slice(buf) => port.recv_offload(buf),
            Dest::Vec(buf, limit) => port.recv_vec(buf, limit),
        }
    }
}

/// The next frame of `ring` (or of the socket, for a copied one), put
/// `into` a buffer.
fn take(
    ring: &mut RxRing,
    port: &mut FdPort,
    into: Dest<'_>,
) -> io::Result<Option<(usize, VnetHdr)>> {
    let Some((slot, status)) = ring.peek() else {
        return Ok(None);
    };
    match parse(slot, status, port.vnet) {
        Slot::Frame { mac, len } => {
            let n = into.copy(&slot[mac..mac + len]);
            let hdr = if port.vnet {
                slot.get(mac - VNET_HDR_LEN..mac)
                    .and_then(|b| b.try_into().ok())
                    .map(VnetHdr::from_bytes)
                    .unwrap_or_default()
            } else {
                VnetHdr::default()
            };
            ring.release();
            port.counters.rx_frames += 1;
            port.counters.rx_bytes += len as u64;
            Ok(Some((n, hdr)))
        }
        Slot::Copied => {
            ring.release();
            into.read(port)
        }
        Slot::Truncated { .. } => {
            ring.release();
            port.counters.rx_errors += 1;
            Err(io::Error::new(io::ErrorKind::InvalidData, Truncated))
        }
    }
}

/// The write half of a batched packet socket: frames are copied into an
/// arena of `BATCH` slots and sent with one `sendmmsg` per `flush` (or when
/// the arena is full).
#[derive(Debug)]
pub(super) struct BatchSender {
    port: FdPort,
    /// `BATCH` slots of `slot` bytes: the offload header (with
    /// `PACKET_VNET_HDR`) and the frame.
    arena: Vec<u8>,
    slot: usize,
    /// Bytes written in each slot held.
    lens: [usize; BATCH],
    held: usize,
}

impl BatchSender {
    /// A sender on `port` whose batched frames (with their header) fit
    /// `slot` bytes; longer ones are sent alone.
    pub(super) fn new(port: FdPort, slot: usize) -> BatchSender {
        BatchSender {
            port,
            arena: vec![0; slot * BATCH],
            slot,
            lens: [0; BATCH],
            held: 0,
        }
    }

    fn header_len(&self) -> usize {
        if self.port.vnet {
            VNET_HDR_LEN
        } else {
            0
        }
    }

    /// Sends the frames held, in order: one `sendmmsg` for the lot, and
    /// one more past each frame the kernel refused. A full socket or device
    /// drops that frame (`tx_full_drops`); any other error is counted in
    /// `tx_errors` and the first is returned once every frame was tried.
    #[allow(unsafe_code)]
    fn send_held(&mut self) -> io::Result<()> {
        let held = std::mem::take(&mut self.held);
        if held == 0 {
            return Ok(());
        }
        let base = self.arena.as_mut_ptr();
        let mut iov = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; BATCH];
        for (i, v) in iov.iter_mut().enumerate().take(held) {
            // SAFETY: slot `i` < BATCH lies within the arena.
            v.iov_base = unsafe { base.add(i * self.slot) }.cast();
            v.iov_len = self.lens[i];
        }
        // SAFETY: all-zero is a valid mmsghdr (no address, no control).
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for (m, v) in msgs.iter_mut().zip(iov.iter_mut()).take(held) {
            m.msg_hdr.msg_iov = v;
            m.msg_hdr.msg_iovlen = 1;
        }
        let header = self.header_len() as u64;
        let mut first_error = None;
        let mut at = 0;
        while at < held {
            // SAFETY: `msgs[at..held]` are initialised and point at iovecs
            // and arena bytes that outlive the call.
            let sent = unsafe {
                libc::sendmmsg(
                    self.port.fd.as_raw_fd(),
                    msgs.as_mut_ptr().add(at),
                    (held - at) as libc::c_uint,
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
            if sent > 0 {
                let sent = sent as usize;
                for len in &self.lens[at..at + sent] {
                    self.port.counters.tx_frames += 1;
                    self.port.counters.tx_bytes += *len as u64 - header;
                }
                at += sent;
                continue;
            }
            match Errno::last() {
                Errno::EAGAIN | Errno::ENOBUFS | Errno::EINTR => {
                    self.port.counters.tx_full_drops += 1
                }
                e => {
                    self.port.counters.tx_errors += 1;
                    first_error.get_or_insert(e);
                }
            }
            at += 1;
        }
        first_error.map_or(Ok(()), |e| Err(e.into()))
    }
}

impl FramePort for BatchSender {
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        self.port.recv(buf)
    }
    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        self.send_offload(frame, &VnetHdr::default())
    }
    fn raw_fd(&self) -> std::os::fd::RawFd {
        self.port.fd.as_raw_fd()
    }
    fn counters(&self) -> PortCounters {
        self.port.counters
    }
    fn offload(&self) -> bool {
        self.port.vnet
    }
    fn recv_offload(&mut self, buf: &mut [u8]) -> io::Result<Option<(usize, VnetHdr)>> {
        self.port.recv_offload(buf)
    }
    /// Holds the frame for the next `flush`; one too long for a slot goes
    /// out at once, after the frames held.
    fn send_offload(&mut self, frame: &[u8], hdr: &VnetHdr) -> io::Result<()> {
        let header = self.header_len();
        if header + frame.len() > self.slot {
            let held = self.send_held();
            let sent = self.port.send_offload(frame, hdr);
            return held.and(sent);
        }
        let held = if self.held == BATCH {
            self.send_held()
        } else {
            Ok(())
        };
        let at = self.held * self.slot;
        if header > 0 {
            self.arena[at..at + header].copy_from_slice(&hdr.to_bytes());
        }
        self.arena[at + header..at + header + frame.len()].copy_from_slice(frame);
        self.lens[self.held] = header + frame.len();
        self.held += 1;
        held
    }
    fn flush(&mut self) -> io::Result<()> {
        self.send_held()
    }
    fn split(mut self: Box<Self>) -> io::Result<PortHalves> {
        self.send_held()?;
        let rx = self.port.try_clone()?;
        Ok(PortHalves {
            rx: Box::new(rx),
            tx: self,
        })
    }
}

impl Drop for BatchSender {
    fn drop(&mut self) {
        // Best effort: frames held when the datapath ends still go out.
        let _ = self.send_held();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring in memory laid out as the kernel lays out a `TPACKET_V2`
    /// ring, written as `tpacket_rcv` writes it.
    struct FakeRing {
        mem: Vec<u64>,
        layout: Layout,
    }

    impl FakeRing {
        fn new(frame_size: usize, frames: usize, block_size: usize) -> FakeRing {
            let layout = Layout {
                frame_size,
                frames,
                block_size,
            };
            FakeRing {
                mem: vec![0; layout.map_len() / 8],
                layout,
            }
        }

        fn ring(&mut self) -> RxRing {
            RxRing {
                base: NonNull::new(self.mem.as_mut_ptr().cast()).unwrap(),
                layout: self.layout,
                head: 0,
                drops: Cell::new(0),
                mapped: false,
            }
        }

        #[allow(unsafe_code)]
        fn bytes(&mut self) -> &mut [u8] {
            let len = self.mem.len() * 8;
            // SAFETY: the Vec's own memory, viewed as bytes.
            unsafe { std::slice::from_raw_parts_mut(self.mem.as_mut_ptr().cast(), len) }
        }

        /// Fills slot `i` as `tpacket_rcv` does: the frame (cut to `snap`
        /// bytes) at `macoff`, the offload header before it, then the
        /// header fields and the status.
        fn fill(&mut self, i: usize, frame: &[u8], snap: usize, hdr: &VnetHdr, status: u32) {
            let netoff = align(TPACKET2_HDRLEN + 16) + VNET_HDR_LEN;
            let mac = netoff - 14;
            let at = self.layout.offset(i);
            let slot = &mut self.bytes()[at..];
            slot[mac..mac + snap].copy_from_slice(&frame[..snap]);
            slot[mac - VNET_HDR_LEN..mac].copy_from_slice(&hdr.to_bytes());
            slot[TP_LEN..TP_LEN + 4].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
            slot[TP_SNAPLEN..TP_SNAPLEN + 4].copy_from_slice(&(snap as u32).to_ne_bytes());
            slot[TP_MAC..TP_MAC + 2].copy_from_slice(&(mac as u16).to_ne_bytes());
            slot[14..16].copy_from_slice(&(netoff as u16).to_ne_bytes());
            slot[0..4].copy_from_slice(&(TP_STATUS_USER | status).to_ne_bytes());
        }

        fn status(&mut self, i: usize) -> u32 {
            let at = self.layout.offset(i);
            u32::from_ne_bytes(self.bytes()[at..at + 4].try_into().unwrap())
        }
    }

    fn frame(len: usize, fill: u8) -> Vec<u8> {
        let mut f = vec![fill; len];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f
    }

    /// A socketpair end standing in for the packet socket (copied frames
    /// are read from it).
    fn socket(vnet: bool) -> (FdPort, FdPort) {
        let (a, b) = if vnet {
            super::super::SocketPairPort::pair_offload().unwrap()
        } else {
            super::super::SocketPairPort::pair().unwrap()
        };
        (a.inner, b.inner)
    }

    #[test]
    fn the_layout_fits_a_full_frame_with_its_headers_and_whole_slots_per_block() {
        let l = Layout::for_mtu(1500);
        assert_eq!(l.frame_size, 2048, "90 bytes of headers + 1518 of frame");
        assert_eq!(l.block_size, 128 << 10);
        assert_eq!(l.frames, 4096);
        assert_eq!(l.map_len(), 8 << 20);
        let jumbo = Layout::for_mtu(9000);
        assert_eq!(jumbo.frame_size, 16384);
        assert_eq!(jumbo.frames, 512);
        let huge = Layout::for_mtu(65_000);
        assert_eq!(huge.frame_size, 64 << 10);
        assert_eq!(huge.frames, MIN_FRAMES, "at least MIN_FRAMES slots");
        assert_eq!(huge.offset(3), (128 << 10) + (64 << 10), "two a block");
        // A block of several slots: slot 64 starts the second block.
        let small = Layout {
            frame_size: 2048,
            frames: 128,
            block_size: 128 << 10,
        };
        assert_eq!(small.offset(64), 128 << 10);
    }

    #[test]
    fn an_empty_ring_gives_nothing_and_frames_come_in_order_with_their_headers() {
        let mut fake = FakeRing::new(2048, 4, 4096);
        let mut ring = fake.ring();
        let (mut port, _peer) = socket(true);
        let mut buf = [0u8; 2048];
        assert_eq!(
            recv(&mut ring, &mut port, &mut buf).unwrap(),
            None,
            "no packets"
        );
        let hdr = VnetHdr {
            flags: crate::packet::gso::F_NEEDS_CSUM,
            csum_start: 34,
            csum_offset: 6,
            ..VnetHdr::default()
        };
        fake.fill(0, &frame(60, 1), 60, &hdr, 0);
        fake.fill(1, &frame(1514, 2), 1514, &VnetHdr::default(), 0);
        assert_eq!(
            recv(&mut ring, &mut port, &mut buf).unwrap(),
            Some((60, hdr))
        );
        assert_eq!(buf[..60], frame(60, 1)[..]);
        assert_eq!(fake.status(0), TP_STATUS_KERNEL, "slot given back");
        assert_eq!(
            recv(&mut ring, &mut port, &mut buf).unwrap(),
            Some((1514, VnetHdr::default()))
        );
        assert_eq!(buf[1513], 2);
        assert_eq!(recv(&mut ring, &mut port, &mut buf).unwrap(), None);
        let c = port.counters;
        assert_eq!((c.rx_frames, c.rx_bytes, c.rx_errors), (2, 1574, 0));
    }

    #[test]
    fn the_ring_wraps_and_a_slot_the_kernel_still_owns_stops_the_read() {
        let mut fake = FakeRing::new(2048, 4, 4096);
        let mut ring = fake.ring();
        let (mut port, _peer) = socket(true);
        let mut buf = [0u8; 2048];
        for round in 0..3u8 {
            for i in 0..4 {
                fake.fill(
                    i,
                    &frame(64, round * 4 + i as u8),
                    64,
                    &VnetHdr::default(),
                    0,
                );
            }
            for i in 0..4u8 {
                assert_eq!(
                    recv(&mut ring, &mut port, &mut buf).unwrap(),
                    Some((64, VnetHdr::default()))
                );
                assert_eq!(buf[20], round * 4 + i);
            }
            assert_eq!(recv(&mut ring, &mut port, &mut buf).unwrap(), None);
        }
        // Slot 1 filled, slot 0 (the head) not: nothing is read past the
        // head.
        fake.fill(1, &frame(64, 9), 64, &VnetHdr::default(), 0);
        assert_eq!(recv(&mut ring, &mut port, &mut buf).unwrap(), None);
        assert_eq!(port.counters.rx_frames, 12);
    }

    #[test]
    fn a_truncated_frame_is_an_error_counted_once_and_the_next_one_reads() {
        let mut fake = FakeRing::new(2048, 4, 4096);
        let mut ring = fake.ring();
        let (mut port, _peer) = socket(true);
        let mut buf = [0u8; 2048];
        let big = frame(1514, 3);
        fake.fill(0, &big, 1000, &VnetHdr::default(), 0);
        fake.fill(1, &frame(60, 4), 60, &VnetHdr::default(), 0);
        let err = recv(&mut ring, &mut port, &mut buf).unwrap_err();
        assert!(is_truncated(&err), "{err}");
        assert!(!is_truncated(&io::Error::other("other")));
        assert_eq!(fake.status(0), TP_STATUS_KERNEL, "the slot is given back");
        assert_eq!(recv(&mut ring, &mut port, &mut buf).unwrap().unwrap().0, 60);
        let c = port.counters;
        assert_eq!((c.rx_frames, c.rx_errors), (1, 1));
    }

    /// A 30,000-byte TSO super-frame too long for slot `i` of a
    /// 2048-byte-slot ring: the kernel cuts the slot's copy to the slot
    /// (`TP_STATUS_COPY`) and queues the whole frame on the socket
    /// (`peer`'s other end). Returns the frame and its header.
    fn copied_super_frame(fake: &mut FakeRing, i: usize, peer: &mut FdPort) -> (Vec<u8>, VnetHdr) {
        let gso = super::super::tests::tso_header();
        let super_frame = frame(30_000, 5);
        let room = 2048 - (align(TPACKET2_HDRLEN + 16) + VNET_HDR_LEN - 14);
        fake.fill(i, &super_frame, room, &gso, TP_STATUS_COPY);
        peer.send_offload(&super_frame, &gso).unwrap();
        (super_frame, gso)
    }

    #[test]
    fn a_copied_frame_is_read_whole_from_the_socket_in_its_turn() {
        let mut fake = FakeRing::new(2048, 4, 4096);
        let mut ring = fake.ring();
        let (mut port, mut peer) = socket(true);
        let (super_frame, gso) = copied_super_frame(&mut fake, 0, &mut peer);
        fake.fill(1, &frame(60, 6), 60, &VnetHdr::default(), 0);
        let mut buf = vec![0u8; 65_536];
        assert_eq!(
            recv(&mut ring, &mut port, &mut buf).unwrap(),
            Some((30_000, gso))
        );
        assert_eq!(buf[..30_000], super_frame[..]);
        assert_eq!(recv(&mut ring, &mut port, &mut buf).unwrap().unwrap().0, 60);
        assert_eq!(port.counters.rx_frames, 2);
    }

    #[test]
    fn recv_vec_takes_slot_and_copied_frames_up_to_its_limit() {
        let mut fake = FakeRing::new(2048, 4, 4096);
        let mut ring = fake.ring();
        let (mut port, mut peer) = socket(true);
        fake.fill(0, &frame(1514, 1), 1514, &VnetHdr::default(), 0);
        let (super_frame, gso) = copied_super_frame(&mut fake, 1, &mut peer);
        fake.fill(2, &frame(60, 6), 60, &VnetHdr::default(), 0);
        // A buffer holding an older, longer frame.
        let mut buf = vec![9u8; 40_000];
        assert_eq!(
            recv_vec(&mut ring, &mut port, &mut buf, 1000).unwrap(),
            Some((1000, VnetHdr::default())),
            "cut short at the limit"
        );
        assert_eq!(buf[..], frame(1514, 1)[..1000]);
        assert_eq!(
            recv_vec(&mut ring, &mut port, &mut buf, 65_536).unwrap(),
            Some((30_000, gso)),
            "read whole from the socket"
        );
        assert_eq!(buf, super_frame);
        assert_eq!(
            recv_vec(&mut ring, &mut port, &mut buf, 65_536).unwrap(),
            Some((60, VnetHdr::default()))
        );
        assert_eq!(buf, frame(60, 6));
        assert_eq!(
            recv_vec(&mut ring, &mut port, &mut buf, 65_536).unwrap(),
            None
        );
        assert!(buf.is_empty());
        assert_eq!(port.counters.rx_frames, 3);
    }

    #[test]
    fn headers_that_do_not_fit_their_slot_never_panic() {
        let slot = |len: u32, snap: u32, mac: u16| {
            let mut s = vec![0u8; 256];
            s[TP_LEN..TP_LEN + 4].copy_from_slice(&len.to_ne_bytes());
            s[TP_SNAPLEN..TP_SNAPLEN + 4].copy_from_slice(&snap.to_ne_bytes());
            s[TP_MAC..TP_MAC + 2].copy_from_slice(&mac.to_ne_bytes());
            s
        };
        assert_eq!(
            parse(&slot(100, 100, 76), TP_STATUS_USER, true),
            Slot::Frame { mac: 76, len: 100 }
        );
        for (len, snap, mac, vnet) in [
            (100, 100, 200, true), // past the slot
            (100, 100, u16::MAX, true),
            (u32::MAX, u32::MAX, 76, true),
            (100, 100, 36, true),  // the offload header over tpacket2_hdr
            (100, 100, 20, false), // the frame over tpacket2_hdr
            (100, 99, 76, false),  // truncated
        ] {
            assert!(
                matches!(
                    parse(&slot(len, snap, mac), TP_STATUS_USER, vnet),
                    Slot::Truncated { .. }
                ),
                "{len} {snap} {mac}"
            );
        }
        assert_eq!(
            parse(&[0u8; 3], TP_STATUS_USER, false),
            Slot::Truncated { len: 0 }
        );
    }

    #[test]
    fn a_batch_goes_out_in_order_on_flush_and_a_long_frame_after_it() {
        let (tx, mut rx) = socket(true);
        let mut sender = BatchSender::new(tx, 2048);
        let mut buf = vec![0u8; 65_536];
        for i in 0..(BATCH + 3) {
            sender
                .send_offload(&frame(60 + i, i as u8), &VnetHdr::default())
                .unwrap();
        }
        // The arena filled once: BATCH frames are out, 3 held.
        assert_eq!(sender.counters().tx_frames, BATCH as u64);
        let gso = VnetHdr {
            gso_type: crate::packet::gso::GSO_TCPV4,
            gso_size: 1448,
            ..VnetHdr::default()
        };
        sender.send_offload(&frame(5000, 0xee), &gso).unwrap();
        sender.send(&frame(61, 0xdd)).unwrap();
        sender.flush().unwrap();
        for i in 0..(BATCH + 3) {
            let (n, _) = rx.recv_offload(&mut buf).unwrap().unwrap();
            assert_eq!((n, buf[20]), (60 + i, i as u8));
        }
        assert_eq!(rx.recv_offload(&mut buf).unwrap(), Some((5000, gso)));
        assert_eq!(rx.recv_offload(&mut buf).unwrap().unwrap().0, 61);
        assert_eq!(rx.recv_offload(&mut buf).unwrap(), None);
        let c = sender.counters();
        assert_eq!(c.tx_frames, BATCH as u64 + 5);
        assert_eq!(c.tx_full_drops, 0);
    }

    #[test]
    fn a_full_socket_drops_the_frames_it_refuses_and_counts_them() {
        let (tx, _rx) = socket(false);
        let mut sender = BatchSender::new(tx, 2048);
        for _ in 0..20_000 {
            sender.send(&[0u8; 1514]).unwrap();
        }
        sender.flush().unwrap();
        let c = sender.counters();
        assert!(c.tx_full_drops > 0, "{c:?}");
        assert_eq!(c.tx_frames + c.tx_full_drops, 20_000);
        assert_eq!(c.tx_errors, 0);
    }

    #[test]
    fn a_gone_peer_is_an_error_after_every_frame_was_tried() {
        let (tx, rx) = socket(false);
        drop(rx);
        let mut sender = BatchSender::new(tx, 2048);
        sender.send(&[0u8; 60]).unwrap();
        sender.send(&[0u8; 60]).unwrap();
        assert!(sender.flush().is_err());
        assert_eq!(sender.counters().tx_errors, 2);
        assert!(sender.flush().is_ok(), "nothing held");
    }
}
