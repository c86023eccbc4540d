//! Offloads between the TAPs and the core: the `virtio_net_hdr` a TAP opened
//! with `IFF_VNET_HDR` puts before every frame, TCP segmentation of the GSO
//! super-frames the sending kernel hands over (TSO for IPv4 and IPv6), the
//! completion of a partial checksum (`VIRTIO_NET_HDR_F_NEEDS_CSUM`).
//!
//! Segmentation follows the kernel's `tcp_gso_segment`/`inet_gso_segment`:
//! each segment carries the headers of the super-frame and at most
//! `gso_size` bytes of payload; IPv4 gets its total length, an ID
//! incremented per segment and a fresh header checksum; IPv6 its payload
//! length; TCP its sequence number advanced by the payload before it, CWR
//! only in the first segment, FIN and PSH only in the last, and a complete
//! checksum (pseudo-header included), so segments leave with no offload
//! flag. A malformed header or super-frame (unknown GSO type, `gso_size` 0,
//! checksum offsets outside the frame, truncated headers, IP fragments) is an
//! `OffloadError`, which the datapath counts as a `DropReason::BadOffload`
//! drop; nothing here panics or allocates beyond the output buffer. Whether
//! a direction lets super-frames through whole is the link's decision
//! (`link::offload::GsoPolicy`).
//!
//! Units, for conservation (`frames in + duplicated = out + drops + held`
//! per direction): a super-frame that is segmented counts as its segments;
//! one that passes whole counts as one frame whose length is what its
//! segments would occupy (`wire_len`: the frame plus the headers repeated
//! in every further segment, like the kernel's `qdisc_pkt_len_init`); a
//! malformed one counts as one frame of the bytes read, dropped.

use etherparse::checksum::Sum16BitWords;

/// Size of `struct virtio_net_hdr` (no `num_buffers`), the TAP default.
pub const VNET_HDR_LEN: usize = 10;

/// `VIRTIO_NET_HDR_F_*` flags.
pub const F_NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_F_DATA_VALID`: the checksum was already checked (receive
/// side).
pub const F_DATA_VALID: u8 = 2;

/// `VIRTIO_NET_HDR_GSO_*` types.
pub const GSO_NONE: u8 = 0;
/// `VIRTIO_NET_HDR_GSO_TCPV4`: an IPv4 TCP super-frame (TSO4).
pub const GSO_TCPV4: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_TCPV6`: an IPv6 TCP super-frame (TSO6).
pub const GSO_TCPV6: u8 = 4;
/// Set with a TCP type when the sender uses ECN (`SKB_GSO_TCP_ECN`).
pub const GSO_ECN: u8 = 0x80;

pub(super) const ETH_P_IPV4: u16 = 0x0800;
pub(super) const ETH_P_IPV6: u16 = 0x86DD;
const ETH_P_8021Q: u16 = 0x8100;
const ETH_P_8021AD: u16 = 0x88A8;
pub(super) const IPPROTO_TCP: u8 = 6;
pub(super) const IPV6_HLEN: usize = 40;
/// IPv6 extension headers that may precede TCP (hop-by-hop, routing,
/// destination options); a fragment header is refused.
const IPV6_EXT: [u8; 3] = [0, 43, 60];
const IPV6_FRAGMENT: u8 = 44;
pub(super) const TCP_CWR: u8 = 0x80;
pub(super) const TCP_PSH: u8 = 0x08;
pub(super) const TCP_FIN: u8 = 0x01;
/// Offset of the checksum in a TCP and a UDP header (`csum_offset`).
pub(super) const TCP_CSUM_OFFSET: usize = 16;
const UDP_CSUM_OFFSET: usize = 6;

/// The header before each frame on an `IFF_VNET_HDR` TAP (little endian,
/// as a TAP on a little-endian host or with `TUNSETVNETLE` uses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    /// `VIRTIO_NET_HDR_F_*` bits (include/uapi/linux/virtio_net.h `struct
    /// virtio_net_hdr` `flags`).
    pub flags: u8,
    /// `VIRTIO_NET_HDR_GSO_*` type, possibly with `GSO_ECN` (`virtio_net_hdr`
    /// `gso_type`).
    pub gso_type: u8,
    /// Length of the headers (a hint from the kernel; not trusted here).
    pub hdr_len: u16,
    /// Payload bytes per segment.
    pub gso_size: u16,
    /// With `F_NEEDS_CSUM`: where the checksummed part starts, and where in
    /// it the checksum goes.
    pub csum_start: u16,
    /// Offset of the checksum field from `csum_start`, bytes (16 for TCP, 6 for
    /// UDP).
    pub csum_offset: u16,
}

impl VnetHdr {
    /// Reads the 10 header bytes (little endian).
    pub fn from_bytes(b: &[u8; VNET_HDR_LEN]) -> VnetHdr {
        let le = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: le(2),
            gso_size: le(4),
            csum_start: le(6),
            csum_offset: le(8),
        }
    }

    /// The 10 header bytes (little endian), as written before a frame.
    pub fn to_bytes(&self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0u8; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
        b
    }

    /// A GSO super-frame (any type but `GSO_NONE`).
    pub fn is_gso(&self) -> bool {
        self.gso_type & !GSO_ECN != GSO_NONE
    }

    /// Whether the sender left the L4 checksum to be completed
    /// (`VIRTIO_NET_HDR_F_NEEDS_CSUM`).
    pub fn needs_csum(&self) -> bool {
        self.flags & F_NEEDS_CSUM != 0
    }
}

/// Why an offloaded frame cannot be handled (counted as `BadOffload`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OffloadError {
    /// A GSO type other than TCPv4 or TCPv6 (UDP fragmentation offload, UDP L4
    /// segmentation...), with the type.
    #[error("GSO type {0:#x} is not TCPv4 or TCPv6")]
    UnsupportedGsoType(u8),
    /// A super-frame whose `gso_size` is 0 (no segment size).
    #[error("gso_size is 0")]
    ZeroGsoSize,
    /// The frame ends before its Ethernet, IP or TCP header does.
    #[error("the frame is too short for its headers")]
    Truncated,
    /// `GSO_TCPV4` on an IPv6 frame, `GSO_TCPV6` on IPv4, or either on a frame
    /// that is not TCP.
    #[error("the GSO type does not match the frame's network protocol")]
    ProtocolMismatch,
    /// The super-frame is an IP fragment (IPv4 MF/offset, or an IPv6 fragment
    /// header).
    #[error("IP fragments cannot be segmented")]
    Fragment,
    /// A super-frame with headers but no TCP payload.
    #[error("the super-frame carries no payload")]
    NoPayload,
    /// The checksum's position lies beyond the end of the frame.
    #[error("csum_start {start} + csum_offset {offset} lies outside the {len}-byte frame")]
    ChecksumOutOfRange {
        /// `csum_start` of the header.
        start: u16,
        /// `csum_offset` of the header.
        offset: u16,
        /// The frame's length, bytes.
        len: usize,
    },
}

/// The network layer of a super-frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ip {
    V4,
    V6,
}

/// Offset of the network header after the Ethernet header and up to two
/// VLAN tags, and its ethertype.
pub(super) fn network_header(frame: &[u8]) -> Result<(usize, u16), OffloadError> {
    let mut off = 12;
    for _ in 0..3 {
        let t = frame.get(off..off + 2).ok_or(OffloadError::Truncated)?;
        let ty = u16::from_be_bytes([t[0], t[1]]);
        if ty != ETH_P_8021Q && ty != ETH_P_8021AD {
            return Ok((off + 2, ty));
        }
        off += 4;
    }
    Err(OffloadError::Truncated)
}

/// Offset of the TCP header behind the IPv6 header at `l3` (extension
/// headers skipped).
fn ipv6_transport(frame: &[u8], l3: usize) -> Result<usize, OffloadError> {
    let mut next = frame[l3 + 6];
    let mut off = l3 + IPV6_HLEN;
    // Bounded: each extension header is at least 8 bytes.
    for _ in 0..8 {
        if next == IPPROTO_TCP {
            return Ok(off);
        }
        if next == IPV6_FRAGMENT {
            return Err(OffloadError::Fragment);
        }
        if !IPV6_EXT.contains(&next) {
            return Err(OffloadError::ProtocolMismatch);
        }
        let h = frame.get(off..off + 2).ok_or(OffloadError::Truncated)?;
        next = h[0];
        off += (h[1] as usize + 1) * 8;
    }
    Err(OffloadError::ProtocolMismatch)
}

/// Checks the checksum offsets of a `F_NEEDS_CSUM` header against a frame
/// of `len` bytes.
fn check_csum_range(hdr: &VnetHdr, len: usize) -> Result<(), OffloadError> {
    let (start, offset) = (hdr.csum_start as usize, hdr.csum_offset as usize);
    if start + offset + 2 > len {
        return Err(OffloadError::ChecksumOutOfRange {
            start: hdr.csum_start,
            offset: hdr.csum_offset,
            len,
        });
    }
    Ok(())
}

/// Completes the partial checksum of a non-GSO `F_NEEDS_CSUM` frame the
/// way a NIC does: the ones' complement sum from `csum_start` to the end
/// (the checksum field holds the pseudo-header sum) is stored at
/// `csum_start + csum_offset`. A UDP checksum (offset 6) of 0 is sent as
/// 0xFFFF. A frame without the flag is left alone.
pub fn complete_checksum(frame: &mut [u8], hdr: &VnetHdr) -> Result<(), OffloadError> {
    if !hdr.needs_csum() {
        return Ok(());
    }
    check_csum_range(hdr, frame.len())?;
    let start = hdr.csum_start as usize;
    let at = start + hdr.csum_offset as usize;
    let sum = Sum16BitWords::new().add_slice(&frame[start..]);
    let csum = if hdr.csum_offset as usize == UDP_CSUM_OFFSET {
        sum.to_ones_complement_with_no_zero()
    } else {
        sum.ones_complement()
    };
    frame[at..at + 2].copy_from_slice(&csum.to_ne_bytes());
    Ok(())
}

/// Makes the IP header at `l3` (TCP at `l4`) of `frame` say the frame's
/// length: IPv4's total length and a fresh header checksum, IPv6's payload
/// length.
pub(super) fn set_ip_length(frame: &mut [u8], ip: Ip, l3: usize, l4: usize) {
    match ip {
        Ip::V4 => {
            let total = (frame.len() - l3) as u16;
            frame[l3 + 2..l3 + 4].copy_from_slice(&total.to_be_bytes());
            frame[l3 + 10..l3 + 12].fill(0);
            let csum = Sum16BitWords::new()
                .add_slice(&frame[l3..l4])
                .ones_complement();
            frame[l3 + 10..l3 + 12].copy_from_slice(&csum.to_ne_bytes());
        }
        Ip::V6 => {
            let plen = (frame.len() - l3 - IPV6_HLEN) as u16;
            frame[l3 + 4..l3 + 6].copy_from_slice(&plen.to_be_bytes());
        }
    }
}

/// The sum of the TCP pseudo-header (RFC 793, RFC 8200 section 8.1) for
/// `tcp_len` bytes of TCP behind the IP header at `l3` of `frame`.
pub(super) fn tcp_pseudo_header(frame: &[u8], ip: Ip, l3: usize, tcp_len: usize) -> Sum16BitWords {
    match ip {
        Ip::V4 => Sum16BitWords::new()
            .add_slice(&frame[l3 + 12..l3 + 20])
            .add_2bytes([0, IPPROTO_TCP])
            .add_2bytes((tcp_len as u16).to_be_bytes()),
        Ip::V6 => Sum16BitWords::new()
            .add_slice(&frame[l3 + 8..l3 + 40])
            .add_4bytes((tcp_len as u32).to_be_bytes())
            .add_4bytes([0, 0, 0, IPPROTO_TCP]),
    }
}

/// Makes `frame` (one TCP packet whose IP header counts all its bytes) a
/// super-frame as a sending kernel hands one to a TSO device
/// (`virtio_net_hdr_from_skb`, include/linux/virtio_net.h): the TCP
/// checksum field gets the pseudo-header's sum (CHECKSUM_PARTIAL), and the
/// header returned says where to finish the checksum and to cut
/// `gso_size`-byte segments.
pub fn make_super_frame(frame: &mut [u8], gso_size: u16) -> Result<VnetHdr, OffloadError> {
    let (_, ethertype) = network_header(frame)?;
    let gso_type = if ethertype == ETH_P_IPV6 {
        GSO_TCPV6
    } else {
        GSO_TCPV4
    };
    let probe = VnetHdr {
        gso_type,
        gso_size,
        ..VnetHdr::default()
    };
    let seg = Segmenter::new(frame, &probe)?;
    let (ip, l3, l4, payload_at) = (seg.ip, seg.l3, seg.l4, seg.payload_at);
    Ok(offload_header(frame, ip, l3, l4, payload_at, gso_size))
}

/// Stores the pseudo-header sum in the TCP checksum field of the
/// super-frame `frame` (IP at `l3`, TCP at `l4`, payload from
/// `payload_at`) and returns its offload header: TCPv4 or TCPv6, with
/// `GSO_ECN` when CWR is set (`tcp_gso_segment` clears it after the first
/// segment), the checksum to finish from `l4`.
pub(super) fn offload_header(
    frame: &mut [u8],
    ip: Ip,
    l3: usize,
    l4: usize,
    payload_at: usize,
    gso_size: u16,
) -> VnetHdr {
    let pseudo = !tcp_pseudo_header(frame, ip, l3, frame.len() - l4).ones_complement();
    let at = l4 + TCP_CSUM_OFFSET;
    frame[at..at + 2].copy_from_slice(&pseudo.to_ne_bytes());
    let ty = match ip {
        Ip::V4 => GSO_TCPV4,
        Ip::V6 => GSO_TCPV6,
    };
    let ecn = if frame[l4 + 13] & TCP_CWR != 0 {
        GSO_ECN
    } else {
        0
    };
    VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: ty | ecn,
        hdr_len: payload_at as u16,
        gso_size,
        csum_start: l4 as u16,
        csum_offset: TCP_CSUM_OFFSET as u16,
    }
}

/// A validated TCP super-frame, cut into segments one at a time.
#[derive(Debug)]
pub struct Segmenter<'a> {
    frame: &'a [u8],
    ip: Ip,
    l3: usize,
    l4: usize,
    /// End of the TCP header: the length of the headers every segment carries.
    payload_at: usize,
    gso_size: usize,
    segments: u32,
    next: u32,
}

impl<'a> Segmenter<'a> {
    /// Checks a super-frame against its header.
    pub fn new(frame: &'a [u8], hdr: &VnetHdr) -> Result<Segmenter<'a>, OffloadError> {
        let ip = match hdr.gso_type & !GSO_ECN {
            GSO_TCPV4 => Ip::V4,
            GSO_TCPV6 => Ip::V6,
            other => return Err(OffloadError::UnsupportedGsoType(other)),
        };
        if hdr.gso_size == 0 {
            return Err(OffloadError::ZeroGsoSize);
        }
        if hdr.needs_csum() {
            check_csum_range(hdr, frame.len())?;
        }
        let (l3, ethertype) = network_header(frame)?;
        let l4 = match (ip, ethertype) {
            (Ip::V4, ETH_P_IPV4) => {
                let h = frame.get(l3..l3 + 20).ok_or(OffloadError::Truncated)?;
                let ihl = (h[0] & 0x0F) as usize * 4;
                if h[0] >> 4 != 4 || ihl < 20 {
                    return Err(OffloadError::ProtocolMismatch);
                }
                if h[9] != IPPROTO_TCP {
                    return Err(OffloadError::ProtocolMismatch);
                }
                // MF set or a fragment offset.
                if u16::from_be_bytes([h[6], h[7]]) & 0x3FFF != 0 {
                    return Err(OffloadError::Fragment);
                }
                l3 + ihl
            }
            (Ip::V6, ETH_P_IPV6) => {
                let h = frame
                    .get(l3..l3 + IPV6_HLEN)
                    .ok_or(OffloadError::Truncated)?;
                if h[0] >> 4 != 6 {
                    return Err(OffloadError::ProtocolMismatch);
                }
                ipv6_transport(frame, l3)?
            }
            _ => return Err(OffloadError::ProtocolMismatch),
        };
        let doff_byte = *frame.get(l4 + 12).ok_or(OffloadError::Truncated)?;
        let doff = (doff_byte >> 4) as usize * 4;
        if doff < 20 {
            return Err(OffloadError::Truncated);
        }
        let payload_at = l4 + doff;
        if payload_at > frame.len() {
            return Err(OffloadError::Truncated);
        }
        let payload = frame.len() - payload_at;
        if payload == 0 {
            return Err(OffloadError::NoPayload);
        }
        let gso_size = hdr.gso_size as usize;
        Ok(Segmenter {
            frame,
            ip,
            l3,
            l4,
            payload_at,
            gso_size,
            segments: payload.div_ceil(gso_size) as u32,
            next: 0,
        })
    }

    /// How many segments the super-frame makes.
    pub fn segments(&self) -> u32 {
        self.segments
    }

    /// Bytes of headers (Ethernet to the end of TCP) in every segment.
    pub fn header_len(&self) -> usize {
        self.payload_at
    }

    /// Length of the first (largest) segment.
    pub fn max_segment_len(&self) -> usize {
        self.payload_at + self.gso_size.min(self.frame.len() - self.payload_at)
    }

    /// What the segments add up to on the wire: the frame plus the headers
    /// of every segment after the first (the kernel's `qdisc_pkt_len`).
    pub fn wire_len(&self) -> u64 {
        self.frame.len() as u64 + (self.segments as u64 - 1) * self.payload_at as u64
    }

    /// Passes over the next segment without writing it; its length, or None
    /// when all were handed out.
    pub fn skip(&mut self) -> Option<usize> {
        if self.next >= self.segments {
            return None;
        }
        let from = self.payload_at + self.next as usize * self.gso_size;
        self.next += 1;
        Some(self.payload_at + (self.frame.len() - from).min(self.gso_size))
    }

    /// Writes the next segment into `out` (cleared first); false when all
    /// were written.
    pub fn next_into(&mut self, out: &mut Vec<u8>) -> bool {
        if self.next >= self.segments {
            return false;
        }
        let k = self.next as usize;
        let last = self.next + 1 == self.segments;
        self.next += 1;
        let from = self.payload_at + k * self.gso_size;
        let to = (from + self.gso_size).min(self.frame.len());
        out.clear();
        out.extend_from_slice(&self.frame[..self.payload_at]);
        out.extend_from_slice(&self.frame[from..to]);
        let (l3, l4) = (self.l3, self.l4);
        if self.ip == Ip::V4 {
            let id = u16::from_be_bytes([out[l3 + 4], out[l3 + 5]]).wrapping_add(k as u16);
            out[l3 + 4..l3 + 6].copy_from_slice(&id.to_be_bytes());
        }
        set_ip_length(out, self.ip, l3, l4);
        let seq = u32::from_be_bytes([out[l4 + 4], out[l4 + 5], out[l4 + 6], out[l4 + 7]])
            .wrapping_add((k * self.gso_size) as u32);
        out[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
        if k > 0 {
            out[l4 + 13] &= !TCP_CWR;
        }
        if !last {
            out[l4 + 13] &= !(TCP_FIN | TCP_PSH);
        }
        let at = l4 + TCP_CSUM_OFFSET;
        out[at..at + 2].fill(0);
        let pseudo = tcp_pseudo_header(out, self.ip, l3, out.len() - l4);
        let csum = pseudo.add_slice(&out[l4..]).ones_complement();
        out[at..at + 2].copy_from_slice(&csum.to_ne_bytes());
        true
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use etherparse::{PacketBuilder, SlicedPacket, TransportSlice};
    use proptest::prelude::*;

    const SRC4: [u8; 4] = [10, 0, 0, 1];
    const DST4: [u8; 4] = [10, 0, 0, 2];

    /// A TCP super-frame as the kernel hands it over: IPv4 total length of
    /// the whole frame, a partial checksum (the pseudo-header sum) and the
    /// matching vnet header.
    pub(in crate::packet) fn tcp_frame(
        v6: bool,
        payload: &[u8],
        flags: u8,
        gso_size: u16,
        vlan: bool,
    ) -> (Vec<u8>, VnetHdr) {
        let eth = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        let mut data = Vec::new();
        let seq = 0xFFFF_F000; // wraps during segmentation
        macro_rules! finish {
            ($ip:expr) => {{
                let mut tcp = $ip.tcp(40000, 5201, seq, 512).ack(77);
                if flags & TCP_PSH != 0 {
                    tcp = tcp.psh();
                }
                if flags & TCP_FIN != 0 {
                    tcp = tcp.fin();
                }
                if flags & TCP_CWR != 0 {
                    tcp = tcp.cwr();
                }
                tcp.write(&mut data, payload).unwrap();
            }};
        }
        match (v6, vlan) {
            (false, false) => finish!(eth.ipv4(SRC4, DST4, 64)),
            (true, false) => finish!(eth.ipv6([1; 16], [2; 16], 64)),
            (false, true) => finish!(eth.single_vlan(7.try_into().unwrap()).ipv4(SRC4, DST4, 64)),
            (true, true) => finish!(eth
                .single_vlan(7.try_into().unwrap())
                .ipv6([1; 16], [2; 16], 64)),
        }
        let l3 = if vlan { 18 } else { 14 };
        let l4 = l3 + if v6 { 40 } else { 20 };
        // Replace the full checksum with the partial one a sender leaves.
        let tcp_len = (data.len() - l4) as u32;
        let pseudo = if v6 {
            Sum16BitWords::new()
                .add_slice(&data[l3 + 8..l3 + 40])
                .add_4bytes(tcp_len.to_be_bytes())
                .add_4bytes([0, 0, 0, 6])
        } else {
            Sum16BitWords::new()
                .add_slice(&data[l3 + 12..l3 + 20])
                .add_2bytes([0, 6])
                .add_2bytes((tcp_len as u16).to_be_bytes())
        };
        let partial = !pseudo.ones_complement();
        data[l4 + 16..l4 + 18].copy_from_slice(&partial.to_ne_bytes());
        let hdr = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: if v6 { GSO_TCPV6 } else { GSO_TCPV4 },
            hdr_len: (l4 + 32) as u16,
            gso_size,
            csum_start: l4 as u16,
            csum_offset: 16,
        };
        (data, hdr)
    }

    /// Every segment, checked by etherparse: (IP id or 0, seq, flags byte,
    /// payload), with both checksums verified.
    fn segment_all(frame: &[u8], hdr: &VnetHdr) -> Vec<(u16, u32, u8, Vec<u8>, usize)> {
        let mut s = Segmenter::new(frame, hdr).unwrap();
        let mut out = Vec::new();
        let mut got = Vec::new();
        while s.next_into(&mut out) {
            let p = SlicedPacket::from_ethernet(&out).expect("segment parses");
            let Some(TransportSlice::Tcp(tcp)) = &p.transport else {
                panic!("no TCP")
            };
            let id = match &p.net {
                Some(etherparse::NetSlice::Ipv4(v4)) => {
                    let h = v4.header().to_header();
                    assert_eq!(h.header_checksum, h.calc_header_checksum(), "IPv4 checksum");
                    assert_eq!(
                        h.total_len as usize,
                        v4.header().slice().len() + tcp.slice().len()
                    );
                    assert_eq!(
                        tcp.checksum(),
                        tcp.calc_checksum_ipv4(v4.header().source(), v4.header().destination())
                            .unwrap()
                    );
                    h.identification
                }
                Some(etherparse::NetSlice::Ipv6(v6)) => {
                    assert_eq!(
                        tcp.checksum(),
                        tcp.calc_checksum_ipv6(v6.header().source(), v6.header().destination())
                            .unwrap()
                    );
                    assert_eq!(v6.header().payload_length() as usize, tcp.slice().len());
                    0
                }
                _ => panic!("no IP"),
            };
            got.push((
                id,
                tcp.sequence_number(),
                out[out.len() - tcp.slice().len() + 13],
                tcp.payload().to_vec(),
                out.len(),
            ));
        }
        assert_eq!(got.len() as u32, s.segments());
        got
    }

    pub(in crate::packet) fn payload(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    /// The segments the kernel's TSO would make of a super-frame.
    pub(in crate::packet) fn segments_of(frame: &[u8], hdr: &VnetHdr) -> Vec<Vec<u8>> {
        let mut seg = Segmenter::new(frame, hdr).unwrap();
        let mut out = Vec::new();
        let mut buf = Vec::new();
        while seg.next_into(&mut buf) {
            out.push(buf.clone());
        }
        out
    }

    #[test]
    fn make_super_frame_writes_what_a_sender_hands_over() {
        for (v6, vlan, flags) in [
            (false, false, 0),
            (true, false, TCP_PSH),
            (false, true, TCP_CWR),
            (true, true, TCP_CWR | TCP_FIN),
        ] {
            let (sent, hdr) = tcp_frame(v6, &payload(5000), flags, 1448, vlan);
            let mut made = sent.clone();
            let l4 = hdr.csum_start as usize;
            // Whatever the checksum field held before.
            made[l4 + 16..l4 + 18].copy_from_slice(&[0xAB, 0xCD]);
            let got = make_super_frame(&mut made, 1448).unwrap();
            assert_eq!(made, sent, "v6 {v6} vlan {vlan}: the partial checksum");
            let ecn = if flags & TCP_CWR != 0 { GSO_ECN } else { 0 };
            assert_eq!(got.gso_type, hdr.gso_type | ecn);
            assert_eq!(
                (got.flags, got.gso_size, got.csum_start, got.csum_offset),
                (hdr.flags, hdr.gso_size, hdr.csum_start, hdr.csum_offset)
            );
            assert_eq!(got.hdr_len as usize, l4 + 20, "headers up to the payload");
            let segs = segments_of(&made, &got);
            assert_eq!(segs.len(), 4);
            assert_eq!(segs, segments_of(&sent, &hdr));
        }
        let (mut udp, _) = tcp_frame(false, &payload(100), 0, 50, false);
        udp[14 + 9] = 17;
        assert_eq!(
            make_super_frame(&mut udp, 50),
            Err(OffloadError::ProtocolMismatch)
        );
        let (mut empty, _) = tcp_frame(false, &[], 0, 50, false);
        assert_eq!(
            make_super_frame(&mut empty, 50),
            Err(OffloadError::NoPayload)
        );
    }

    #[test]
    fn vnet_header_round_trips_little_endian() {
        let h = VnetHdr {
            flags: 1,
            gso_type: GSO_TCPV6 | GSO_ECN,
            hdr_len: 0x0102,
            gso_size: 1448,
            csum_start: 54,
            csum_offset: 16,
        };
        let b = h.to_bytes();
        assert_eq!(&b[4..6], &1448u16.to_le_bytes());
        assert_eq!(VnetHdr::from_bytes(&b), h);
        assert!(h.is_gso() && h.needs_csum());
        assert!(!VnetHdr {
            gso_type: GSO_ECN,
            ..h
        }
        .is_gso());
    }

    #[test]
    fn tcpv4_super_frame_splits_like_the_kernel() {
        let data = payload(4000);
        let (frame, hdr) = tcp_frame(false, &data, TCP_PSH | TCP_FIN | TCP_CWR, 1448, false);
        let mut s = Segmenter::new(&frame, &hdr).unwrap();
        assert_eq!((s.segments(), s.header_len()), (3, 54));
        let skipped: Vec<usize> = std::iter::from_fn(|| s.skip()).collect();
        assert_eq!(skipped, vec![1502, 1502, 54 + 4000 - 2 * 1448]);
        let s = Segmenter::new(&frame, &hdr).unwrap();
        assert_eq!(s.wire_len(), frame.len() as u64 + 2 * 54);
        assert_eq!(s.max_segment_len(), 1502);
        let segs = segment_all(&frame, &hdr);
        let base_id = segs[0].0;
        for (k, (id, seq, flags, _, len)) in segs.iter().enumerate() {
            assert_eq!(*id, base_id.wrapping_add(k as u16));
            assert_eq!(*seq, 0xFFFF_F000u32.wrapping_add(k as u32 * 1448));
            assert_eq!(flags & TCP_CWR != 0, k == 0, "CWR only first");
            assert_eq!(
                flags & (TCP_FIN | TCP_PSH) != 0,
                k == 2,
                "FIN/PSH only last"
            );
            assert!(flags & 0x10 != 0, "ACK everywhere");
            assert!(*len <= 1514);
        }
        assert_eq!(segs[2].3.len(), 4000 - 2 * 1448);
        let joined: Vec<u8> = segs.iter().flat_map(|s| s.3.clone()).collect();
        assert_eq!(joined, data);
    }

    #[test]
    fn tcpv6_with_vlan_and_ecn_flag_splits() {
        let data = payload(3000);
        let (frame, mut hdr) = tcp_frame(true, &data, TCP_PSH, 1000, true);
        hdr.gso_type |= GSO_ECN;
        let segs = segment_all(&frame, &hdr);
        assert_eq!(segs.len(), 3);
        assert!(segs.iter().all(|s| s.4 == 18 + 40 + 20 + 1000));
        assert_eq!(segs[2].2 & TCP_PSH, TCP_PSH);
        assert_eq!(segs[0].2 & TCP_PSH, 0);
    }

    #[test]
    fn ipv6_extension_headers_are_skipped_and_fragments_refused() {
        let (frame, hdr) = tcp_frame(true, &payload(100), 0, 60, false);
        // Insert an 8-byte destination-options header before TCP.
        let mut f = frame[..54].to_vec();
        f.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]);
        f.extend_from_slice(&frame[54..]);
        f[14 + 6] = 60;
        let plen = (f.len() - 54) as u16;
        f[18..20].copy_from_slice(&plen.to_be_bytes());
        let h = VnetHdr {
            csum_start: 62,
            ..hdr
        };
        let s = Segmenter::new(&f, &h).unwrap();
        assert_eq!((s.header_len(), s.segments()), (62 + 20, 2));
        f[14 + 6] = IPV6_FRAGMENT;
        assert_eq!(Segmenter::new(&f, &h).unwrap_err(), OffloadError::Fragment);
    }

    #[test]
    fn malformed_super_frames_are_errors_not_panics() {
        let (frame, hdr) = tcp_frame(false, &payload(3000), 0, 1448, false);
        let err = |f: &[u8], h: VnetHdr| Segmenter::new(f, &h).unwrap_err();
        assert_eq!(
            err(&frame, VnetHdr { gso_size: 0, ..hdr }),
            OffloadError::ZeroGsoSize
        );
        assert_eq!(
            err(&frame, VnetHdr { gso_type: 3, ..hdr }),
            OffloadError::UnsupportedGsoType(3)
        );
        assert_eq!(
            err(
                &frame,
                VnetHdr {
                    gso_type: GSO_TCPV6,
                    ..hdr
                }
            ),
            OffloadError::ProtocolMismatch
        );
        assert!(matches!(
            err(
                &frame,
                VnetHdr {
                    csum_start: 60000,
                    ..hdr
                }
            ),
            OffloadError::ChecksumOutOfRange { start: 60000, .. }
        ));
        assert_eq!(err(&frame[..54], hdr), OffloadError::NoPayload);
        for cut in 0..54 {
            assert!(
                Segmenter::new(&frame[..cut], &VnetHdr { flags: 0, ..hdr }).is_err(),
                "cut at {cut}"
            );
        }
        let mut frag = frame.clone();
        frag[14 + 6] = 0x20; // MF
        assert_eq!(err(&frag, hdr), OffloadError::Fragment);
        let mut udp = frame.clone();
        udp[14 + 9] = 17;
        assert_eq!(err(&udp, hdr), OffloadError::ProtocolMismatch);
        let mut bad_doff = frame;
        bad_doff[34 + 12] = 0x40; // 16-byte TCP header
        assert_eq!(err(&bad_doff, hdr), OffloadError::Truncated);
        let no_csum = VnetHdr { flags: 0, ..hdr };
        assert_eq!(
            err(&[0x81, 0x00].repeat(15), no_csum),
            OffloadError::Truncated
        );
    }

    #[test]
    fn partial_checksums_are_completed_for_tcp_and_udp() {
        let (mut frame, hdr) = tcp_frame(false, &payload(777), 0, 0, false);
        let hdr = VnetHdr {
            gso_type: GSO_NONE,
            gso_size: 0,
            ..hdr
        };
        complete_checksum(&mut frame, &hdr).unwrap();
        let p = SlicedPacket::from_ethernet(&frame).unwrap();
        let (Some(etherparse::NetSlice::Ipv4(v4)), Some(TransportSlice::Tcp(tcp))) =
            (&p.net, &p.transport)
        else {
            panic!()
        };
        assert_eq!(
            tcp.checksum(),
            tcp.calc_checksum_ipv4(v4.header().source(), v4.header().destination())
                .unwrap()
        );

        // UDP over IPv6 with a partial checksum.
        let mut udp = Vec::new();
        PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv6([1; 16], [2; 16], 64)
            .udp(1, 2)
            .write(&mut udp, &payload(33))
            .unwrap();
        let good = udp.clone();
        let len = (udp.len() - 54) as u32;
        let pseudo = Sum16BitWords::new()
            .add_slice(&udp[22..54])
            .add_4bytes(len.to_be_bytes())
            .add_4bytes([0, 0, 0, 17]);
        udp[60..62].copy_from_slice(&(!pseudo.ones_complement()).to_ne_bytes());
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            csum_start: 54,
            csum_offset: 6,
            ..VnetHdr::default()
        };
        complete_checksum(&mut udp, &h).unwrap();
        assert_eq!(udp, good);
        // Out of range: refused, frame untouched.
        let h = VnetHdr {
            csum_start: 90,
            ..h
        };
        assert!(complete_checksum(&mut udp, &h).is_err());
        assert_eq!(udp, good);
        // No flag: nothing to do.
        assert_eq!(complete_checksum(&mut udp, &VnetHdr::default()), Ok(()));
    }

    proptest! {
        #[test]
        fn segments_reassemble_and_verify(
            v6 in any::<bool>(),
            vlan in any::<bool>(),
            len in 1usize..20_000,
            gso_size in 1u16..=1460,
            flags in prop::sample::select(vec![0u8, TCP_PSH, TCP_FIN | TCP_PSH, TCP_CWR, TCP_CWR | TCP_PSH | TCP_FIN]),
        ) {
            let data = payload(len);
            let (frame, hdr) = tcp_frame(v6, &data, flags, gso_size, vlan);
            let segs = segment_all(&frame, &hdr);
            prop_assert_eq!(segs.len(), len.div_ceil(gso_size as usize));
            let header = if vlan { 18 } else { 14 } + if v6 { 40 } else { 20 } + 20;
            let mut joined = Vec::new();
            let mut wire = 0u64;
            for (k, s) in segs.iter().enumerate() {
                prop_assert!(s.4 <= header + gso_size as usize, "segment within MTU");
                prop_assert_eq!(s.1, 0xFFFF_F000u32.wrapping_add((k * gso_size as usize) as u32));
                prop_assert_eq!(s.2 & TCP_CWR != 0, k == 0 && flags & TCP_CWR != 0);
                let last = k + 1 == segs.len();
                prop_assert_eq!(s.2 & (TCP_FIN | TCP_PSH), if last { flags & (TCP_FIN | TCP_PSH) } else { 0 });
                joined.extend_from_slice(&s.3);
                wire += s.4 as u64;
            }
            prop_assert_eq!(joined, data);
            prop_assert_eq!(wire, Segmenter::new(&frame, &hdr).unwrap().wire_len());
        }

        #[test]
        fn arbitrary_bytes_and_headers_never_panic(
            frame in prop::collection::vec(any::<u8>(), 0..200),
            raw in any::<[u8; VNET_HDR_LEN]>(),
        ) {
            let hdr = VnetHdr::from_bytes(&raw);
            if let Ok(mut s) = Segmenter::new(&frame, &hdr) {
                let mut out = Vec::new();
                let mut n = 0;
                while s.next_into(&mut out) { n += 1; }
                prop_assert_eq!(n, s.segments());
            }
            let mut f = frame.clone();
            let _ = complete_checksum(&mut f, &hdr);
        }
    }
}
