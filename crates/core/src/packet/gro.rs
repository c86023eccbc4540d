//! Receive offload at the receiving TAP: consecutive TCP segments of one
//! flow that the link releases together are merged into one GSO
//! super-frame, as the receiving host's NIC does with GRO on (frames taken
//! in one NAPI poll are merged before the stack sees them). The receiving
//! kernel then runs its IP and TCP receive path once per super-frame
//! instead of once per segment, and acknowledges it as it would a GRO
//! packet.
//!
//! The rules are the kernel's: `inet_gro_receive` and `ipv6_gro_receive`
//! (net/ipv4/af_inet.c, net/ipv6/ip6_offload.c) merge only IP headers
//! without options or extension headers, not fragmented, with equal
//! addresses, TOS/traffic class (ECN bits included), TTL/hop limit and DF,
//! and an IPv4 ID one above the previous segment's; `tcp_gro_receive`
//! (net/ipv4/tcp_offload.c) equal ports, acknowledgment number and TCP
//! options, no CWR in a later segment, no flag besides FIN/PSH/CWR that
//! differs, a sequence number that continues the merge, and a payload no
//! larger than the first segment's (the `gso_size`); a shorter segment or
//! one with PSH, FIN, URG, RST or SYN ends the merge (a first segment with
//! one of those, or without payload, is never merged); and
//! `tcp4_gro_receive` checks the TCP checksum first (a corrupted segment is
//! left for the stack to drop). `tcp_gro_complete` and `tcp4_gro_complete`
//! leave the result with a partial checksum (the pseudo-header sum over the
//! whole length), `gso_size` the first segment's payload, and the ECN GSO
//! flag when the first segment carries CWR. Departures: segments with a
//! fixed IPv4 ID (which the kernel merges as `SKB_GSO_TCP_FIXEDID`, a type
//! a TAP's `virtio_net_hdr` cannot carry) are not merged, a merge stops at
//! 65,535 bytes of IP length (`GRO_LEGACY_MAX_SIZE`), and only consecutive
//! frames merge: a frame of another flow ends the merge, where the kernel
//! keeps up to `MAX_GRO_SKBS` (8) flows open per poll, so frames are never
//! reordered between flows.
//!
//! `packet::gso::Segmenter` is the inverse: segmenting a merge gives back
//! the segments it was made of.

use etherparse::checksum::Sum16BitWords;

use super::gso::{
    network_header, offload_header, set_ip_length, tcp_pseudo_header, Ip, VnetHdr, ETH_P_IPV4,
    ETH_P_IPV6, IPPROTO_TCP, IPV6_HLEN, TCP_CWR, TCP_FIN, TCP_PSH,
};

const TCP_URG: u8 = 0x20;
const TCP_RST: u8 = 0x04;
const TCP_SYN: u8 = 0x02;
/// Flags that end a merge once a segment carrying them joins it, and keep a
/// first segment from starting one (`tcp_gro_receive`'s final check).
const TCP_FINAL: u8 = TCP_URG | TCP_PSH | TCP_RST | TCP_SYN | TCP_FIN;
/// The largest IP length a merge reaches (`GRO_LEGACY_MAX_SIZE` - 1).
const MAX_IP_LEN: usize = 65_535;

/// A TCP segment's layout, as GRO sees it.
#[derive(Clone, Copy, Debug)]
struct Segment {
    ip: Ip,
    l3: usize,
    l4: usize,
    /// End of the TCP header.
    payload_at: usize,
    /// End of the IP packet (Ethernet padding excluded).
    end: usize,
    seq: u32,
    flags: u8,
}

impl Segment {
    /// The layout of a frame GRO may merge: IPv4 without options or IPv6
    /// without extension headers, carrying TCP, not a fragment, with valid
    /// IPv4 header and TCP checksums; None for anything else.
    fn parse(frame: &[u8]) -> Option<Segment> {
        let (l3, ethertype) = network_header(frame).ok()?;
        let (ip, l4, end) = match ethertype {
            ETH_P_IPV4 => {
                let h = frame.get(l3..l3 + 20)?;
                let total = u16::from_be_bytes([h[2], h[3]]) as usize;
                // Version 4, no options, TCP, no MF and no offset.
                if h[0] != 0x45
                    || h[9] != IPPROTO_TCP
                    || u16::from_be_bytes([h[6], h[7]]) & 0x3FFF != 0
                    || total < 20
                    || l3 + total > frame.len()
                    || Sum16BitWords::new().add_slice(h).ones_complement() != 0
                {
                    return None;
                }
                (Ip::V4, l3 + 20, l3 + total)
            }
            ETH_P_IPV6 => {
                let h = frame.get(l3..l3 + IPV6_HLEN)?;
                let plen = u16::from_be_bytes([h[4], h[5]]) as usize;
                if h[0] >> 4 != 6 || h[6] != IPPROTO_TCP || l3 + IPV6_HLEN + plen > frame.len() {
                    return None;
                }
                (Ip::V6, l3 + IPV6_HLEN, l3 + IPV6_HLEN + plen)
            }
            _ => return None,
        };
        let th = frame.get(l4..l4 + 20)?;
        let payload_at = l4 + (th[12] >> 4) as usize * 4;
        if payload_at < l4 + 20 || payload_at > end {
            return None;
        }
        let seg = Segment {
            ip,
            l3,
            l4,
            payload_at,
            end,
            seq: u32::from_be_bytes([th[4], th[5], th[6], th[7]]),
            flags: th[13],
        };
        (seg.pseudo_header(frame, end - l4)
            .add_slice(&frame[l4..end])
            .ones_complement()
            == 0)
            .then_some(seg)
    }

    /// The TCP pseudo-header's sum for `tcp_len` bytes of TCP.
    fn pseudo_header(&self, frame: &[u8], tcp_len: usize) -> Sum16BitWords {
        tcp_pseudo_header(frame, self.ip, self.l3, tcp_len)
    }

    fn payload_len(&self) -> usize {
        self.end - self.payload_at
    }
}

/// Whether `frame` is a TCP segment a receiver would take: IPv4 without
/// options or IPv6 without extension headers, carrying TCP, not a
/// fragment, with valid IPv4 header and TCP checksums (what GRO checks
/// before merging, as the receiving stack would).
pub fn is_intact_tcp_segment(frame: &[u8]) -> bool {
    Segment::parse(frame).is_some()
}

/// The merge in progress: its layout (that of its first segment, whose
/// headers it keeps) and what the next segment must continue.
#[derive(Clone, Copy, Debug)]
struct Open {
    head: Segment,
    /// Payload bytes per segment: the first segment's (`gso_size`).
    mss: usize,
    next_seq: u32,
    /// The IPv4 ID the next segment must carry.
    next_id: u16,
    segments: u32,
    /// A segment ended the merge (shorter than `mss`, or a final flag).
    closed: bool,
}

/// Merges runs of consecutive TCP segments into GSO super-frames (see the
/// module doc). One merge at a time: `start` with a segment, `push` the ones
/// that follow while it takes them, then `finish`.
#[derive(Debug, Default)]
pub struct Gro {
    out: Vec<u8>,
    open: Option<Open>,
}

impl Gro {
    /// A merger with no merge open.
    pub fn new() -> Gro {
        Gro::default()
    }

    /// Starts a merge with `frame` (any open merge is dropped); false, with
    /// nothing open, when the frame cannot head one: not TCP over IPv4
    /// without options or IPv6 without extension headers, a fragment, a bad
    /// checksum, no payload, or a final flag (PSH, FIN, URG, RST, SYN).
    pub fn start(&mut self, frame: &[u8]) -> bool {
        self.open = None;
        let Some(head) = Segment::parse(frame) else {
            return false;
        };
        let mss = head.payload_len();
        if mss == 0 || head.flags & TCP_FINAL != 0 {
            return false;
        }
        self.out.clear();
        self.out.extend_from_slice(&frame[..head.end]);
        let l3 = head.l3;
        self.open = Some(Open {
            head,
            mss,
            next_seq: head.seq.wrapping_add(mss as u32),
            next_id: u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]).wrapping_add(1),
            segments: 1,
            closed: false,
        });
        true
    }

    /// Appends `frame` to the open merge if it continues it as the kernel's
    /// GRO allows (module doc); false leaves the merge as it was.
    pub fn push(&mut self, frame: &[u8]) -> bool {
        let Some(open) = self.open.as_mut() else {
            return false;
        };
        if open.closed {
            return false;
        }
        let Some(seg) = Segment::parse(frame) else {
            return false;
        };
        let head = open.head;
        let (l3, l4) = (head.l3, head.l4);
        let out = &self.out;
        let len = seg.payload_len();
        let same_layout = seg.ip == head.ip
            && seg.l3 == l3
            && seg.payload_at == head.payload_at
            && frame[..l3] == out[..l3];
        if !same_layout || len == 0 || len > open.mss || seg.seq != open.next_seq {
            return false;
        }
        let same_ip = match head.ip {
            // TOS, DF, TTL, protocol and addresses; the ID continues.
            Ip::V4 => {
                frame[l3 + 1] == out[l3 + 1]
                    && frame[l3 + 6] & 0x40 == out[l3 + 6] & 0x40
                    && frame[l3 + 8] == out[l3 + 8]
                    && frame[l3 + 12..l3 + 20] == out[l3 + 12..l3 + 20]
                    && u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]) == open.next_id
            }
            // Version, traffic class, flow label, hop limit and addresses.
            Ip::V6 => {
                frame[l3..l3 + 4] == out[l3..l3 + 4]
                    && frame[l3 + 7..l3 + 40] == out[l3 + 7..l3 + 40]
            }
        };
        let flags = seg.flags;
        let same_tcp = frame[l4..l4 + 4] == out[l4..l4 + 4]
            && frame[l4 + 8..l4 + 12] == out[l4 + 8..l4 + 12]
            && frame[l4 + 20..head.payload_at] == out[l4 + 20..head.payload_at]
            && flags & TCP_CWR == 0
            && (flags ^ out[l4 + 13]) & !(TCP_CWR | TCP_FIN | TCP_PSH) == 0;
        if !same_ip || !same_tcp || out.len() - l3 + len > MAX_IP_LEN {
            return false;
        }
        self.out.extend_from_slice(&frame[seg.payload_at..seg.end]);
        self.out[l4 + 13] |= flags & (TCP_FIN | TCP_PSH);
        open.next_seq = open.next_seq.wrapping_add(len as u32);
        open.next_id = open.next_id.wrapping_add(1);
        open.segments += 1;
        open.closed = len < open.mss || flags & TCP_FINAL != 0;
        true
    }

    /// Segments in the open merge (0 when none is open).
    pub fn segments(&self) -> u32 {
        self.open.map_or(0, |o| o.segments)
    }

    /// Ends the open merge: the super-frame, with its IP length (and IPv4
    /// header checksum) for the whole payload and the pseudo-header sum in
    /// its TCP checksum, and the offload header it is written with. None
    /// when no merge is open.
    pub fn finish(&mut self) -> Option<(&[u8], VnetHdr)> {
        let open = self.open.take()?;
        let head = open.head;
        let (l3, l4) = (head.l3, head.l4);
        let out = &mut self.out;
        set_ip_length(out, head.ip, l3, l4);
        let hdr = offload_header(out, head.ip, l3, l4, head.payload_at, open.mss as u16);
        Some((&self.out[..], hdr))
    }
}

#[cfg(test)]
mod tests {
    use super::super::gso::tests::{payload, segments_of, tcp_frame};
    use super::super::gso::GSO_ECN;
    use super::*;
    use proptest::prelude::*;

    /// Recomputes a plain IPv4 or IPv6 TCP frame's checksums after a test
    /// changed it.
    fn fix_checksums(f: &mut [u8]) {
        let (l3, ty) = network_header(f).unwrap();
        let v4 = ty == ETH_P_IPV4;
        let l4 = l3
            + if v4 {
                (f[l3] & 0x0F) as usize * 4
            } else {
                IPV6_HLEN
            };
        if v4 {
            f[l3 + 10..l3 + 12].fill(0);
            let c = Sum16BitWords::new().add_slice(&f[l3..l4]).ones_complement();
            f[l3 + 10..l3 + 12].copy_from_slice(&c.to_ne_bytes());
        }
        f[l4 + 16..l4 + 18].fill(0);
        let seg = Segment {
            ip: if v4 { Ip::V4 } else { Ip::V6 },
            l3,
            l4,
            payload_at: 0,
            end: f.len(),
            seq: 0,
            flags: 0,
        };
        let c = seg
            .pseudo_header(f, f.len() - l4)
            .add_slice(&f[l4..])
            .ones_complement();
        f[l4 + 16..l4 + 18].copy_from_slice(&c.to_ne_bytes());
    }

    /// Three consecutive full segments of one IPv4 flow and a shorter
    /// fourth (1000 + 1000 + 1000 + 500 bytes of payload).
    fn flow4() -> Vec<Vec<u8>> {
        let (f, h) = tcp_frame(false, &payload(3500), 0, 1000, false);
        segments_of(&f, &h)
    }

    fn merged(frames: &[Vec<u8>]) -> (Gro, u32) {
        let mut gro = Gro::new();
        assert!(gro.start(&frames[0]));
        let taken = 1 + frames[1..].iter().take_while(|f| gro.push(f)).count();
        (gro, taken as u32)
    }

    proptest! {
        /// Merging the segments TSO made of a super-frame gives the
        /// super-frame back byte for byte (lengths, IPv4 ID and header
        /// checksum, flags, the partial checksum) with its offload header,
        /// and segmenting the merge gives the segments back.
        #[test]
        fn merging_a_super_frames_segments_gives_it_back(
            v6 in any::<bool>(),
            vlan in any::<bool>(),
            len in 1usize..20_000,
            gso_size in 200u16..1500,
            flag_bits in 0u8..8,
        ) {
            let flags = [TCP_PSH, TCP_FIN, TCP_CWR]
                .iter()
                .enumerate()
                .filter(|(i, _)| flag_bits & (1 << i) != 0)
                .fold(0, |a, (_, f)| a | f);
            let (frame, hdr) = tcp_frame(v6, &payload(len), flags, gso_size, vlan);
            let segs = segments_of(&frame, &hdr);
            let mut gro = Gro::new();
            if segs.len() == 1 && flags & (TCP_PSH | TCP_FIN) != 0 {
                // A lone segment with a final flag heads no merge.
                prop_assert!(!gro.start(&segs[0]));
                return Ok(());
            }
            prop_assert!(gro.start(&segs[0]));
            for s in &segs[1..] {
                prop_assert!(gro.push(s));
            }
            prop_assert_eq!(gro.segments() as usize, segs.len());
            let (out, out_hdr) = gro.finish().unwrap();
            prop_assert_eq!(out, &frame[..]);
            let mss = (len.min(gso_size as usize)) as u16;
            prop_assert_eq!(out_hdr.gso_size, mss);
            prop_assert_eq!(out_hdr.gso_type & !GSO_ECN, hdr.gso_type);
            prop_assert_eq!(out_hdr.gso_type & GSO_ECN != 0, flags & TCP_CWR != 0);
            prop_assert_eq!((out_hdr.csum_start, out_hdr.csum_offset), (hdr.csum_start, 16));
            prop_assert!(out_hdr.needs_csum());
            prop_assert_eq!(segments_of(out, &out_hdr), segs);
            prop_assert!(gro.finish().is_none());
        }
    }

    #[test]
    fn a_shorter_segment_joins_and_ends_the_merge() {
        let segs = flow4();
        assert_eq!(segs.len(), 4);
        let (mut gro, taken) = merged(&segs);
        assert_eq!(taken, 4);
        // Nothing continues a closed merge, not even the next in sequence.
        let mut next = segs[3].clone();
        let (l3, _) = network_header(&next).unwrap();
        let seq = u32::from_be_bytes(next[l3 + 24..l3 + 28].try_into().unwrap());
        next[l3 + 24..l3 + 28].copy_from_slice(&(seq + 500).to_be_bytes());
        next[l3 + 5] += 1;
        fix_checksums(&mut next);
        assert!(!gro.push(&next));
        assert_eq!(gro.segments(), 4);
    }

    #[test]
    fn psh_or_fin_joins_and_ends_the_merge_but_never_heads_one() {
        for flag in [TCP_PSH, TCP_FIN] {
            let mut segs = flow4();
            let l4 = 14 + 20;
            segs[1][l4 + 13] |= flag;
            fix_checksums(&mut segs[1]);
            let (mut gro, taken) = merged(&segs);
            assert_eq!(taken, 2, "flag {flag:#x}");
            let (out, _) = gro.finish().unwrap();
            assert_eq!(out[l4 + 13] & flag, flag, "the merge carries it");
            assert!(!Gro::new().start(&segs[1]), "flag {flag:#x} heads nothing");
        }
    }

    #[test]
    fn frames_gro_leaves_alone_head_no_merge() {
        let segs = flow4();
        let mut gro = Gro::new();
        // A pure ACK (no payload).
        let (ack, _) = tcp_frame(false, &[], 0, 1000, false);
        let mut ack = ack;
        fix_checksums(&mut ack);
        assert!(!gro.start(&ack));
        for (what, change) in [
            ("SYN", (34 + 13, TCP_SYN)),
            ("RST", (34 + 13, TCP_RST)),
            ("URG", (34 + 13, TCP_URG)),
            ("UDP", (14 + 9, 17 ^ IPPROTO_TCP)),
            ("MF", (14 + 6, 0x20)),
        ] {
            let mut f = segs[0].clone();
            f[change.0] ^= change.1;
            fix_checksums(&mut f);
            assert!(!gro.start(&f), "{what}");
        }
        let mut bad = segs[0].clone();
        bad[60] ^= 1;
        assert!(!gro.start(&bad), "a bad TCP checksum");
        let mut bad = segs[0].clone();
        bad[14 + 8] ^= 1;
        assert!(!gro.start(&bad), "a bad IPv4 header checksum");
        assert!(!gro.start(&segs[0][..40]), "truncated");
        assert_eq!(gro.segments(), 0);
        assert!(gro.start(&segs[0]));
    }

    /// Each change to the second segment that the kernel's GRO flushes on
    /// keeps it out of the merge.
    #[test]
    fn a_segment_that_does_not_continue_the_merge_stays_out() {
        let segs = flow4();
        const L3: usize = 14;
        const L4: usize = 34;
        /// A change to a frame, and what it is.
        type Change = (&'static str, fn(&mut Vec<u8>));
        let changes: [Change; 14] = [
            ("another MAC", |f| f[0] ^= 1),
            ("another port", |f| f[L4 + 3] ^= 1),
            ("another source address", |f| f[L3 + 15] ^= 1),
            ("another ack", |f| f[L4 + 11] ^= 1),
            ("a sequence gap", |f| f[L4 + 7] ^= 1),
            ("CWR", |f| f[L4 + 13] |= TCP_CWR),
            ("SYN", |f| f[L4 + 13] |= TCP_SYN),
            ("RST", |f| f[L4 + 13] |= TCP_RST),
            ("ECE", |f| f[L4 + 13] |= 0x40),
            ("a CE mark", |f| f[L3 + 1] |= 3),
            ("another TTL", |f| f[L3 + 8] -= 1),
            ("DF cleared", |f| f[L3 + 6] &= !0x40),
            ("a fixed IP ID", |f| f[L3 + 5] -= 1),
            ("more payload than the first", |f| f.push(0)),
        ];
        for (what, change) in changes {
            let mut f = segs[1].clone();
            change(&mut f);
            if what == "more payload than the first" {
                let total = u16::from_be_bytes([f[L3 + 2], f[L3 + 3]]) + 1;
                f[L3 + 2..L3 + 4].copy_from_slice(&total.to_be_bytes());
            }
            fix_checksums(&mut f);
            let mut gro = Gro::new();
            assert!(gro.start(&segs[0]));
            assert!(!gro.push(&f), "{what}");
            assert_eq!(gro.segments(), 1, "{what}");
            assert!(gro.push(&segs[1]), "{what}: the merge is unchanged");
        }
        let mut bad = segs[1].clone();
        bad[70] ^= 1;
        let mut gro = Gro::new();
        assert!(gro.start(&segs[0]));
        assert!(!gro.push(&bad), "a corrupted segment is left to the stack");
    }

    #[test]
    fn a_merge_stops_at_65535_bytes_of_ip() {
        // 50 segments of 1448 bytes, built one after another.
        let (first, hdr) = tcp_frame(false, &payload(1448), 0, 1448, false);
        let first = segments_of(&first, &hdr).remove(0);
        let mut segs = vec![first];
        for _ in 1..50 {
            let mut f = segs.last().unwrap().clone();
            let seq = u32::from_be_bytes(f[38..42].try_into().unwrap()).wrapping_add(1448);
            f[38..42].copy_from_slice(&seq.to_be_bytes());
            let id = u16::from_be_bytes([f[18], f[19]]) + 1;
            f[18..20].copy_from_slice(&id.to_be_bytes());
            fix_checksums(&mut f);
            segs.push(f);
        }
        let (mut gro, taken) = merged(&segs);
        // 20 + 20 + 45 × 1448 = 65,200; one more would be 66,648.
        assert_eq!(taken, 45);
        let (out, hdr) = gro.finish().unwrap();
        assert_eq!(out.len(), 14 + 65_200);
        assert_eq!(segments_of(out, &hdr), segs[..45]);
    }

    #[test]
    fn ipv6_merges_compare_the_flow_label_and_hop_limit() {
        let (f, h) = tcp_frame(true, &payload(3000), 0, 1000, false);
        let segs = segments_of(&f, &h);
        let l3 = 14;
        for (what, at) in [("flow label", l3 + 3), ("hop limit", l3 + 7)] {
            let mut s = segs[1].clone();
            s[at] ^= 1;
            fix_checksums(&mut s);
            let mut gro = Gro::new();
            assert!(gro.start(&segs[0]));
            assert!(!gro.push(&s), "{what}");
        }
        let (gro, taken) = merged(&segs);
        assert_eq!((taken, gro.segments()), (3, 3));
    }
}
