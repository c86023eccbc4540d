//! Real header bytes for simulated frames: Ethernet II + IPv4/IPv6 + TCP/UDP,
//! written with etherparse into recycled buffers, so the classifier, the flow
//! hash and ECN marking see what they would see on a TAP. A frame carries only
//! its headers (plus a 4-byte UDP payload); `Packet.len` is the full size.
//!
//! Every frame carries the simulator's `Tag` (the slot of its side-table
//! entry and a serial that tells a reused slot apart): in the TCP timestamp
//! option (TSval, TSecr), or in the first eight bytes of the UDP payload.
//! `read_tag` and `read_ecn` find them again after the frame crossed the
//! link; `digest` fingerprints the bytes (ECN bits and the IPv4 checksum
//! left out, since marking changes them) so that a frame corrupted on the
//! wire can be recognised and discarded like a receiver would.

use etherparse::{
    EtherType, Ethernet2Header, IpNumber, Ipv4Dscp, Ipv4Ecn, Ipv4Header, Ipv6FlowLabel, Ipv6Header,
    TcpHeader, TcpOptionElement, UdpHeader,
};
use std::net::{IpAddr, SocketAddr};

/// Ethernet header length.
pub const ETH_LEN: usize = 14;
/// TCP header with the NOP NOP TS option every simulated segment carries.
pub const TCP_HDR_LEN: usize = 32;
/// UDP header plus the 8-byte tag.
pub const UDP_HDR_LEN: usize = 16;

/// The simulator's identification of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tag {
    /// Side-table slot.
    pub slot: u32,
    /// Serial of the frame that holds the slot.
    pub serial: u32,
}

/// MAC address of the host on the left (the right one ends in 2).
const MAC_LEFT: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const MAC_RIGHT: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

/// The transport protocol of a simulated frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    /// TCP: a bulk flow's data or ACKs.
    Tcp,
    /// UDP: constant-rate, on/off or Poisson sources and probes.
    Udp,
}

/// Addresses of one direction of a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoints {
    /// Source address and port.
    pub src: SocketAddr,
    /// Destination address and port.
    pub dst: SocketAddr,
    /// True when `src` is the left host (sets the MAC addresses).
    pub from_left: bool,
}

impl Endpoints {
    /// Copy `copy` of a traffic entry with `count` flows: with a `src`
    /// written, its source port is the written one plus `copy`, so that
    /// each copy is a flow of its own (without one, each copy already has
    /// a port of its own).
    pub fn copy(mut self, copy: u32, src_written: bool) -> Endpoints {
        if src_written {
            self.src.set_port(self.src.port().wrapping_add(copy as u16));
        }
        self
    }

    /// The same flow seen from the other end.
    pub fn reversed(&self) -> Endpoints {
        Endpoints {
            src: self.dst,
            dst: self.src,
            from_left: !self.from_left,
        }
    }

    /// Length of the IP header for this address family.
    pub fn ip_len(&self) -> usize {
        match self.src {
            SocketAddr::V4(_) => Ipv4Header::MIN_LEN,
            SocketAddr::V6(_) => Ipv6Header::LEN,
        }
    }

    /// The smallest frame this flow can send with `proto`.
    pub fn min_frame(&self, proto: Proto) -> usize {
        ETH_LEN
            + self.ip_len()
            + match proto {
                Proto::Tcp => TCP_HDR_LEN,
                Proto::Udp => UDP_HDR_LEN,
            }
    }
}

/// The transport header fields of one frame.
#[derive(Clone, Copy, Debug)]
pub enum L4 {
    /// A TCP segment's header fields.
    Tcp {
        /// Sequence number, bytes (the initial one plus the segment number
        /// times the MSS, modulo 2^32).
        seq: u32,
        /// Acknowledgement number, if the ACK flag is set.
        ack: Option<u32>,
        /// AE flag (the old NS bit; accurate ECN's top ACE bit).
        ae: bool,
        /// ECN-Echo flag.
        ece: bool,
        /// Congestion Window Reduced flag.
        cwr: bool,
        /// Up to three SACK blocks (left, right) in sequence space.
        sack: [Option<(u32, u32)>; 3],
    },
    /// UDP: no fields beyond the ports.
    Udp,
}

/// Writes the headers of a frame of accounted length `frame_len` into `buf`
/// (cleared first). `dsfield` is the whole TOS / traffic-class byte.
/// `frame_len` must be at least `ep.min_frame(..)` plus any SACK option;
/// shorter values are raised to that minimum and the used length returned.
pub fn write_frame(
    buf: &mut Vec<u8>,
    ep: &Endpoints,
    dsfield: u8,
    frame_len: usize,
    tag: Tag,
    l4: &L4,
) -> usize {
    buf.clear();
    let (smac, dmac) = if ep.from_left {
        (MAC_LEFT, MAC_RIGHT)
    } else {
        (MAC_RIGHT, MAC_LEFT)
    };
    let ether_type = match ep.src {
        SocketAddr::V4(_) => EtherType::IPV4,
        SocketAddr::V6(_) => EtherType::IPV6,
    };
    let tcp = match *l4 {
        L4::Tcp {
            seq,
            ack,
            ae,
            ece,
            cwr,
            sack,
        } => {
            let mut h = TcpHeader::new(ep.src.port(), ep.dst.port(), seq, 0xFFFF);
            h.ack = ack.is_some();
            h.acknowledgment_number = ack.unwrap_or(0);
            h.ns = ae;
            h.ece = ece;
            h.cwr = cwr;
            let ts = TcpOptionElement::Timestamp(tag.slot, tag.serial);
            let opts = match sack {
                [Some(first), rest @ ..] => h.set_options(&[
                    TcpOptionElement::Noop,
                    TcpOptionElement::Noop,
                    ts,
                    TcpOptionElement::Noop,
                    TcpOptionElement::Noop,
                    TcpOptionElement::SelectiveAcknowledgement(first, [rest[0], rest[1], None]),
                ]),
                _ => h.set_options(&[TcpOptionElement::Noop, TcpOptionElement::Noop, ts]),
            };
            debug_assert!(opts.is_ok(), "at most 3 SACK blocks fit with TS");
            Some(h)
        }
        L4::Udp => None,
    };
    let l4_len = tcp.as_ref().map_or(UDP_HDR_LEN, |h| h.header_len());
    let frame_len = frame_len.max(ETH_LEN + ep.ip_len() + l4_len).min(65_535);
    let ip_payload = frame_len - ETH_LEN - ep.ip_len();
    let proto = if tcp.is_some() {
        IpNumber::TCP
    } else {
        IpNumber::UDP
    };
    // Writing into a Vec<u8> cannot fail.
    let _ = Ethernet2Header {
        source: smac,
        destination: dmac,
        ether_type,
    }
    .write(buf);
    match (ep.src, ep.dst) {
        (SocketAddr::V4(s), SocketAddr::V4(d)) => {
            let mut ip = Ipv4Header {
                dscp: Ipv4Dscp::try_new(dsfield >> 2).unwrap_or_default(),
                ecn: Ipv4Ecn::try_new(dsfield & 3).unwrap_or_default(),
                total_len: (Ipv4Header::MIN_LEN + ip_payload) as u16,
                identification: tag.serial as u16,
                dont_fragment: true,
                time_to_live: 64,
                protocol: proto,
                source: s.ip().octets(),
                destination: d.ip().octets(),
                ..Ipv4Header::default()
            };
            ip.header_checksum = ip.calc_header_checksum();
            let _ = ip.write(buf);
        }
        (s, d) => {
            let ip = Ipv6Header {
                traffic_class: dsfield,
                flow_label: Ipv6FlowLabel::ZERO,
                payload_length: ip_payload as u16,
                next_header: proto,
                hop_limit: 64,
                source: v6_octets(s.ip()),
                destination: v6_octets(d.ip()),
            };
            let _ = ip.write(buf);
        }
    }
    match tcp {
        Some(h) => {
            let _ = h.write(buf);
        }
        None => {
            let _ = UdpHeader {
                source_port: ep.src.port(),
                destination_port: ep.dst.port(),
                length: ip_payload as u16,
                checksum: 0,
            }
            .write(buf);
            buf.extend_from_slice(&tag.slot.to_be_bytes());
            buf.extend_from_slice(&tag.serial.to_be_bytes());
        }
    }
    frame_len
}

fn v6_octets(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V6(a) => a.octets(),
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
    }
}

/// Offset of the L4 header and the IP protocol of a frame written by
/// `write_frame`.
fn l4_of(data: &[u8]) -> Option<(usize, u8)> {
    match data.get(12..14)? {
        [0x08, 0x00] => Some((ETH_LEN + Ipv4Header::MIN_LEN, *data.get(23)?)),
        [0x86, 0xdd] => Some((ETH_LEN + Ipv6Header::LEN, *data.get(20)?)),
        _ => None,
    }
}

/// The simulator's tag of a frame written by `write_frame`.
pub fn read_tag(data: &[u8]) -> Option<Tag> {
    let (l4, proto) = l4_of(data)?;
    let at = match proto {
        // NOP NOP kind len, then TSval and TSecr.
        6 => l4 + 24,
        17 => l4 + 8,
        _ => return None,
    };
    let word = |i: usize| Some(u32::from_be_bytes(data.get(i..i + 4)?.try_into().ok()?));
    Some(Tag {
        slot: word(at)?,
        serial: word(at + 4)?,
    })
}

/// A fingerprint of a frame's bytes that ECN marking does not change (the
/// ECN bits and the IPv4 header checksum are left out).
pub fn digest(data: &[u8]) -> u64 {
    let v4 = data.get(12..14) == Some(&[0x08, 0x00]);
    // Masks per 8-byte little-endian word: byte 15 holds the ECN bits (the
    // low two of the IPv4 TOS, bits 4-5 of the IPv6 header's second
    // byte), bytes 24-25 the IPv4 header checksum.
    let (ecn_mask, csum_mask) = if v4 {
        (!(0x03u64 << 56), !0xFFFFu64)
    } else {
        (!(0x30u64 << 56), !0u64)
    };
    let mut words = data.chunks_exact(8);
    let mut h = 0u64;
    for (k, chunk) in words.by_ref().enumerate() {
        let mut w = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        match k {
            1 => w &= ecn_mask,
            3 => w &= csum_mask,
            _ => {}
        }
        h = super::trace::fx(h, w);
    }
    for &b in words.remainder() {
        h = super::trace::fx(h, b as u64);
    }
    super::trace::fx(h, data.len() as u64)
}

/// The ECN field (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE) of a frame.
pub fn read_ecn(data: &[u8]) -> Option<u8> {
    match data.get(12..14)? {
        [0x08, 0x00] => Some(data.get(15)? & 3),
        [0x86, 0xdd] => Some((data.get(15)? >> 4) & 3),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};

    fn ep(src: &str, dst: &str) -> Endpoints {
        Endpoints {
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            from_left: true,
        }
    }

    #[test]
    fn tcp_v4_frame_parses_back() {
        let mut buf = Vec::new();
        let e = ep("10.0.0.1:10000", "10.0.0.2:5201");
        let l4 = L4::Tcp {
            seq: 1000,
            ack: Some(77),
            ae: false,
            ece: true,
            cwr: false,
            sack: [Some((5, 10)), Some((20, 30)), None],
        };
        let tag = Tag {
            slot: 0xDEAD_BEEF,
            serial: 9,
        };
        let len = write_frame(&mut buf, &e, 0x02, 1514, tag, &l4);
        assert_eq!(len, 1514);
        assert_eq!(read_tag(&buf), Some(tag));
        assert_eq!(read_ecn(&buf), Some(2));
        let s = SlicedPacket::from_ethernet(&buf).unwrap_err();
        // Only headers are present: the IP total length says 1500.
        let _ = s;
        let (ip, _) = Ipv4Header::from_slice(&buf[ETH_LEN..]).unwrap();
        assert_eq!(ip.total_len, 1500);
        assert_eq!(ip.header_checksum, ip.calc_header_checksum());
        let (tcp, _) = TcpHeader::from_slice(&buf[34..]).unwrap();
        assert!(tcp.ece && tcp.ack && !tcp.cwr);
        assert_eq!(tcp.acknowledgment_number, 77);
        assert_eq!(buf.len(), 14 + 20 + tcp.header_len());
    }

    #[test]
    fn udp_v6_frame_parses_back() {
        let mut buf = Vec::new();
        let e = ep("[fd00::1]:7000", "[fd00::2]:7");
        let tag = Tag {
            slot: 42,
            serial: 7,
        };
        let len = write_frame(&mut buf, &e, 0xB8 | 1, 200, tag, &L4::Udp);
        assert_eq!(len, 200);
        assert_eq!(read_tag(&buf), Some(tag));
        assert_eq!(read_ecn(&buf), Some(1));
        let (ip, rest) = Ipv6Header::from_slice(&buf[ETH_LEN..]).unwrap();
        assert_eq!(ip.payload_length, 200 - 54);
        assert_eq!(ip.traffic_class, 0xB9);
        let (udp, _) = UdpHeader::from_slice(rest).unwrap();
        assert_eq!(udp.destination_port, 7);
    }

    #[test]
    fn short_frames_grow_to_headers() {
        let mut buf = Vec::new();
        let e = ep("10.0.0.1:1", "10.0.0.2:2");
        let tag = Tag { slot: 1, serial: 1 };
        assert_eq!(write_frame(&mut buf, &e, 0, 10, tag, &L4::Udp), 50);
        assert_eq!(e.min_frame(Proto::Udp), 50);
        assert_eq!(e.min_frame(Proto::Tcp), 66);
        let full = {
            let mut b = buf.clone();
            b.resize(50, 0);
            b
        };
        let s = SlicedPacket::from_ethernet(&full).unwrap();
        assert!(matches!(s.net, Some(NetSlice::Ipv4(_))));
        assert!(matches!(s.transport, Some(TransportSlice::Udp(_))));
    }

    #[test]
    fn digest_ignores_ecn_marking_but_not_corruption() {
        for (src, dst) in [("10.0.0.1:1", "10.0.0.2:2"), ("[fd00::1]:1", "[fd00::2]:2")] {
            let mut buf = Vec::new();
            let tag = Tag { slot: 3, serial: 4 };
            write_frame(&mut buf, &ep(src, dst), 0x02, 1000, tag, &L4::Udp);
            let d = digest(&buf);
            let mut marked =
                crate::packet::Packet::from_frame(buf.clone(), crate::time::Instant::ZERO);
            assert!(crate::packet::ecn::mark_ce(&mut marked));
            assert_eq!(read_ecn(&marked.data), Some(3));
            assert_eq!(digest(&marked.data), d, "{src}");
            let mut flipped = buf.clone();
            flipped[30] ^= 0x10;
            assert_ne!(digest(&flipped), d, "{src}");
        }
    }

    #[test]
    fn unmatched_frames_have_no_tag() {
        assert_eq!(read_tag(&[]), None);
        assert_eq!(read_tag(&[0u8; 60]), None);
        assert_eq!(read_ecn(&[0u8; 13]), None);
    }
}
