//! The frame classifier: parses a frame once at ingress (Ethernet II, one or
//! two 802.1Q/802.1ad VLAN tags, IPv4 or IPv6 with its extension-header chain,
//! the L4 ports) with etherparse's slicers, laxly at the IP layer (its
//! `LaxSlicedPacket` walk, stopping before the transport header, whose
//! first four bytes are all it needs), and fills `PacketMeta`: the
//! network layer and its offset, the 5-tuple flow key (IPv4 as IPv4-mapped
//! IPv6), the DS field, `skb->priority` as IPv4 forwarding sets it
//! (`rt_tos2priority`), and an unkeyed flow hash. Also `flow_hash`, the keyed
//! hash qdiscs use with their perturbation.
//!
//! Nothing here panics or allocates: a frame that cannot be parsed (runt,
//! truncated or malformed IP header) simply yields less metadata (`L3::Other`,
//! or IP without ports).

use super::{FlowKey, PacketMeta, L3};
use etherparse::{
    ether_type, ip_number, EtherType, Ethernet2Slice, IpNumber, LaxIpSlice, SingleVlanSlice,
};

/// `TC_PRIO_*` values (include/uapi/linux/pkt_sched.h).
pub const TC_PRIO_BESTEFFORT: u32 = 0;
/// `TC_PRIO_BULK`: band 2 of pfifo_fast's priomap.
pub const TC_PRIO_BULK: u32 = 2;
/// `TC_PRIO_INTERACTIVE_BULK`: band 1 of pfifo_fast's priomap, with best
/// effort.
pub const TC_PRIO_INTERACTIVE_BULK: u32 = 4;
/// `TC_PRIO_INTERACTIVE`: band 0 of pfifo_fast's priomap.
pub const TC_PRIO_INTERACTIVE: u32 = 6;

/// The kernel's `ip_tos2prio` table, indexed by `(tos & 0x1E) >> 1`.
const IP_TOS2PRIO: [u32; 16] = [
    TC_PRIO_BESTEFFORT,
    TC_PRIO_BESTEFFORT,
    TC_PRIO_BESTEFFORT,
    TC_PRIO_BESTEFFORT,
    TC_PRIO_BULK,
    TC_PRIO_BULK,
    TC_PRIO_BULK,
    TC_PRIO_BULK,
    TC_PRIO_INTERACTIVE,
    TC_PRIO_INTERACTIVE,
    TC_PRIO_INTERACTIVE,
    TC_PRIO_INTERACTIVE,
    TC_PRIO_INTERACTIVE_BULK,
    TC_PRIO_INTERACTIVE_BULK,
    TC_PRIO_INTERACTIVE_BULK,
    TC_PRIO_INTERACTIVE_BULK,
];

/// `rt_tos2priority`: skb->priority of a forwarded IPv4 packet.
pub fn rt_tos2priority(tos: u8) -> u32 {
    IP_TOS2PRIO[((tos & 0x1E) >> 1) as usize]
}

/// L4 protocols whose first four bytes are the source and destination ports
/// (what the kernel's flow dissector reads for them).
const PORT_PROTOCOLS: [IpNumber; 5] = [
    ip_number::TCP,
    ip_number::UDP,
    ip_number::UDP_LITE,
    ip_number::SCTP,
    ip_number::DCCP,
];

/// Parses `data` (from the Ethernet header on) into the metadata the core
/// needs. The TX queue mapping is derived from the flow hash (its top 16
/// bits; mq takes it modulo its queue count), as `skb_tx_hash` picks a
/// queue before the qdisc. Timestamps and id are left at their defaults.
pub fn classify(data: &[u8]) -> PacketMeta {
    let mut meta = PacketMeta::default();
    if let Some((ether_type, payload)) = ether_payload(data) {
        if let Ok((ip, _)) = LaxIpSlice::from_slice(payload) {
            // etherparse picks the IP version from the header's version
            // nibble; like the kernel, trust the ethertype and ignore a
            // mismatch.
            match (&ip, ether_type) {
                (LaxIpSlice::Ipv4(_), ether_type::IPV4)
                | (LaxIpSlice::Ipv6(_), ether_type::IPV6) => fill_from_ip(&mut meta, data, &ip),
                _ => {}
            }
        }
    }
    meta.hash = flow_hash(&meta.flow, 0);
    meta.queue_mapping = (meta.hash >> 16) as u16;
    meta
}

/// The ethertype after the Ethernet header and at most two VLAN tags, with
/// the bytes after it, when that is IPv4 or IPv6 (the layers
/// `LaxSlicedPacket::from_ethernet` walks before the IP layer); None for
/// a runt, a cut-off tag or any other ethertype.
fn ether_payload(data: &[u8]) -> Option<(EtherType, &[u8])> {
    let eth = Ethernet2Slice::from_slice_without_fcs(data).ok()?;
    let (mut ether_type, mut payload) = (eth.ether_type(), eth.payload_slice());
    for _ in 0..2 {
        if !matches!(
            ether_type,
            ether_type::VLAN_TAGGED_FRAME
                | ether_type::PROVIDER_BRIDGING
                | ether_type::VLAN_DOUBLE_TAGGED_FRAME
        ) {
            break;
        }
        let tag = SingleVlanSlice::from_slice(payload).ok()?;
        (ether_type, payload) = (tag.ether_type(), tag.payload_slice());
    }
    matches!(ether_type, ether_type::IPV4 | ether_type::IPV6).then_some((ether_type, payload))
}

/// Fills l3, flow, dsfield and priority from a parsed IP layer. Not
/// inlined: inlined, the compiler kept the addresses as 32 separate bytes
/// and `flow_hash` assembled its words from them one shift at a time
/// (about 90 instructions a frame); filled in memory, each word is one
/// load.
#[inline(never)]
fn fill_from_ip(meta: &mut PacketMeta, frame: &[u8], net: &LaxIpSlice<'_>) {
    let header_start = match net {
        LaxIpSlice::Ipv4(ip) => {
            let h = ip.header();
            meta.flow.src = ipv4_mapped(h.source());
            meta.flow.dst = ipv4_mapped(h.destination());
            meta.dsfield = h.slice()[1];
            meta.priority = rt_tos2priority(meta.dsfield);
            h.slice().as_ptr()
        }
        LaxIpSlice::Ipv6(ip) => {
            let h = ip.header();
            meta.flow.src = h.source();
            meta.flow.dst = h.destination();
            meta.dsfield = h.traffic_class();
            h.slice().as_ptr()
        }
    };
    // The header slice points into `frame`; its distance from the start is
    // the network-header offset (at most a few dozen bytes).
    let offset = (header_start as usize).saturating_sub(frame.as_ptr() as usize);
    let offset = u16::try_from(offset).unwrap_or(u16::MAX);
    meta.l3 = match net {
        LaxIpSlice::Ipv4(_) => L3::Ipv4 { offset },
        LaxIpSlice::Ipv6(_) => L3::Ipv6 { offset },
    };
    let payload = net.payload();
    meta.flow.proto = payload.ip_number.0;
    // Like the kernel's flow dissector (without PARSE_1ST_FRAG), fragments
    // carry no ports, so all fragments of a datagram share one flow.
    if !payload.fragmented && PORT_PROTOCOLS.contains(&payload.ip_number) {
        if let [s0, s1, d0, d1, ..] = *payload.payload {
            meta.flow.src_port = u16::from_be_bytes([s0, s1]);
            meta.flow.dst_port = u16::from_be_bytes([d0, d1]);
        }
    }
}

/// `::ffff:a.b.c.d`.
fn ipv4_mapped(addr: [u8; 4]) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[10] = 0xff;
    out[11] = 0xff;
    out[12..].copy_from_slice(&addr);
    out
}

/// Multiplies as 128 bits and folds the halves (the wyhash/"mum" mixer):
/// every input bit influences every output bit.
#[inline(always)]
fn fold_mul(a: u64, b: u64) -> u64 {
    let r = (a as u128) * (b as u128);
    (r as u64) ^ ((r >> 64) as u64)
}

/// Odd 64-bit constants with well-spread bits (wyhash's primes).
const K0: u64 = 0xa076_1d64_78bd_642f;
const K1: u64 = 0xe703_7ed1_a0b4_28db;
const K2: u64 = 0x8ebc_6af0_9c88_c6e3;
const K3: u64 = 0x5899_65cc_7537_4cc3;
const K4: u64 = 0x1d8e_4e27_c47d_124f;

/// A keyed hash of the 5-tuple with full avalanche in every output bit, so
/// that both the low bits (SFQ's `hash & (divisor-1)`) and the top bits
/// (fq_codel's `reciprocal_scale`) are uniform. `key` is a qdisc's
/// perturbation; a different key gives an independent bucket layout.
#[inline]
pub fn flow_hash(flow: &FlowKey, key: u64) -> u32 {
    // An address as its two little-endian 64-bit halves.
    let words = |b: &[u8; 16]| {
        let w = u128::from_le_bytes(*b);
        (w as u64, (w >> 64) as u64)
    };
    let ports = ((flow.src_port as u64) << 32) | ((flow.dst_port as u64) << 16) | flow.proto as u64;
    let seed = key ^ K0;
    let (src_lo, src_hi) = words(&flow.src);
    let (dst_lo, dst_hi) = words(&flow.dst);
    let a = fold_mul(src_lo ^ K1, src_hi ^ seed);
    let b = fold_mul(dst_lo ^ K2, dst_hi ^ seed);
    let c = fold_mul(ports ^ K3, seed ^ K4);
    let h = fold_mul(a ^ c ^ K1, b ^ K4);
    (h ^ (h >> 32)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{
        IpHeaders, IpNumber, Ipv4Header, Ipv6Extensions, Ipv6FragmentHeader, Ipv6Header,
        Ipv6RawExtHeader, PacketBuilder, VlanId,
    };
    use proptest::prelude::*;

    const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 2];

    /// The frame an etherparse `PacketBuilder` chain writes with `$len`
    /// zero bytes of payload.
    macro_rules! frame {
        ($builder:expr, $len:expr) => {{
            let mut f = Vec::new();
            $builder.write(&mut f, &[0; $len]).unwrap();
            f
        }};
    }

    /// Source port, destination port and protocol of a classified frame.
    fn ports_proto(m: &PacketMeta) -> (u16, u16, u8) {
        (m.flow.src_port, m.flow.dst_port, m.flow.proto)
    }

    /// The IPv6 header of the extension-chain tests: [1; 16] to [2; 16].
    fn ipv6_header() -> Ipv6Header {
        Ipv6Header {
            hop_limit: 64,
            source: [1; 16],
            destination: [2; 16],
            ..Default::default()
        }
    }

    fn mapped(a: [u8; 4]) -> [u8; 16] {
        ipv4_mapped(a)
    }

    fn ipv4_tcp(tos: u8, sport: u16, dport: u16) -> Vec<u8> {
        let mut h = Ipv4Header::new(0, 64, ip_number::TCP, [10, 0, 0, 1], [10, 0, 0, 2]).unwrap();
        h.dscp = etherparse::Ipv4Dscp::try_new(tos >> 2).unwrap();
        h.ecn = etherparse::Ipv4Ecn::try_new(tos & 3).unwrap();
        let b = PacketBuilder::ethernet2(MAC_A, MAC_B)
            .ip(IpHeaders::Ipv4(h, Default::default()))
            .tcp(sport, dport, 1, 65535);
        let mut out = Vec::new();
        b.write(&mut out, &[0u8; 100]).unwrap();
        out
    }

    fn ipv6_udp(tclass: u8) -> Vec<u8> {
        let src = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let dst = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
        let h = Ipv6Header {
            traffic_class: tclass,
            hop_limit: 64,
            source: src,
            destination: dst,
            ..Default::default()
        };
        let b = PacketBuilder::ethernet2(MAC_A, MAC_B)
            .ip(IpHeaders::Ipv6(h, Default::default()))
            .udp(5353, 53);
        let mut out = Vec::new();
        b.write(&mut out, &[1u8; 20]).unwrap();
        out
    }

    #[test]
    fn ipv4_tcp_fields() {
        let f = ipv4_tcp(0x10, 40000, 80);
        let m = classify(&f);
        assert_eq!(m.l3, L3::Ipv4 { offset: 14 });
        assert_eq!(m.flow.src, mapped([10, 0, 0, 1]));
        assert_eq!(m.flow.dst, mapped([10, 0, 0, 2]));
        assert_eq!(ports_proto(&m), (40000, 80, 6));
        assert_eq!(m.dsfield, 0x10);
        assert_eq!(m.priority, TC_PRIO_INTERACTIVE);
        assert_eq!(m.hash, flow_hash(&m.flow, 0));
    }

    #[test]
    fn tx_queue_follows_the_flow_hash() {
        let queues: std::collections::BTreeSet<u16> = (0..16)
            .map(|i| {
                let m = classify(&ipv4_tcp(0, 40000 + i, 80));
                assert_eq!(m.queue_mapping, (m.hash >> 16) as u16);
                m.queue_mapping % 4
            })
            .collect();
        // 16 flows over 4 queues: all in one would mean no spreading.
        assert!(queues.len() >= 3, "{queues:?}");
    }

    #[test]
    fn ipv4_ecn_bits_kept_and_priority_from_tos() {
        for (tos, prio) in [
            (0x00, 0),
            (0x02, 0),
            (0x08, 2),
            (0x10, 6),
            (0x18, 4),
            (0xb8, 4),
        ] {
            let m = classify(&ipv4_tcp(tos, 1, 2));
            assert_eq!(m.dsfield, tos);
            assert_eq!(m.ecn(), tos & 3);
            assert_eq!(m.priority, prio, "tos {tos:#x}");
        }
    }

    #[test]
    fn ipv4_udp_and_icmp() {
        let f = frame!(
            PacketBuilder::ethernet2(MAC_A, MAC_B)
                .ipv4([192, 168, 1, 1], [192, 168, 1, 2], 20)
                .udp(1234, 5678),
            8
        );
        let m = classify(&f);
        assert_eq!(ports_proto(&m), (1234, 5678, 17));

        let f = frame!(
            PacketBuilder::ethernet2(MAC_A, MAC_B)
                .ipv4([192, 168, 1, 1], [192, 168, 1, 2], 20)
                .icmpv4_echo_request(7, 1),
            56
        );
        let m = classify(&f);
        assert_eq!(m.l3, L3::Ipv4 { offset: 14 });
        assert_eq!(ports_proto(&m), (0, 0, 1));
    }

    #[test]
    fn ipv6_udp_fields_and_no_priority() {
        let m = classify(&ipv6_udp(0xb8));
        assert_eq!(m.l3, L3::Ipv6 { offset: 14 });
        assert_eq!(m.flow.src[0..4], [0x20, 1, 0xd, 0xb8]);
        assert_eq!(m.flow.dst[15], 2);
        assert_eq!(ports_proto(&m), (5353, 53, 17));
        assert_eq!(m.dsfield, 0xb8);
        assert_eq!(
            m.priority, 0,
            "IPv6 traffic class is not mapped to priority"
        );
    }

    #[test]
    fn icmpv6_has_no_ports() {
        let f = frame!(
            PacketBuilder::ethernet2(MAC_A, MAC_B)
                .ipv6([1; 16], [2; 16], 64)
                .icmpv6_echo_request(1, 2),
            8
        );
        let m = classify(&f);
        assert_eq!(ports_proto(&m), (0, 0, 58));
    }

    #[test]
    fn ipv6_extension_chain_reaches_ports() {
        let exts = Ipv6Extensions {
            hop_by_hop_options: Some(Ipv6RawExtHeader::new_raw(IpNumber(0), &[0; 6]).unwrap()),
            destination_options: Some(Ipv6RawExtHeader::new_raw(IpNumber(0), &[0; 14]).unwrap()),
            ..Default::default()
        };
        let f = frame!(
            PacketBuilder::ethernet2(MAC_A, MAC_B)
                .ip(IpHeaders::Ipv6(ipv6_header(), exts))
                .tcp(443, 50000, 1, 1000),
            10
        );
        let m = classify(&f);
        assert_eq!(m.l3, L3::Ipv6 { offset: 14 });
        assert_eq!(ports_proto(&m), (443, 50000, 6));
    }

    #[test]
    fn ipv6_fragments_carry_no_ports() {
        let exts = Ipv6Extensions {
            fragment: Some(Ipv6FragmentHeader::new(
                IpNumber(0),
                etherparse::IpFragOffset::ZERO,
                true,
                99,
            )),
            ..Default::default()
        };
        let f = frame!(
            PacketBuilder::ethernet2(MAC_A, MAC_B)
                .ip(IpHeaders::Ipv6(ipv6_header(), exts))
                .udp(1000, 2000),
            10
        );
        let m = classify(&f);
        assert_eq!(m.flow.proto, 17);
        assert_eq!((m.flow.src_port, m.flow.dst_port), (0, 0));
    }

    #[test]
    fn ipv4_fragment_has_no_ports() {
        let mut f = ipv4_tcp(0, 1000, 2000);
        f[14 + 6] = 0x20; // MF
        let m = classify(&f);
        assert_eq!(m.flow.proto, 6);
        assert_eq!((m.flow.src_port, m.flow.dst_port), (0, 0));
    }

    #[test]
    fn vlan_and_qinq() {
        let f = frame!(
            PacketBuilder::ethernet2(MAC_A, MAC_B)
                .single_vlan(VlanId::try_new(100).unwrap())
                .ipv4([10, 1, 0, 1], [10, 1, 0, 2], 64)
                .udp(7, 9),
            4
        );
        let m = classify(&f);
        assert_eq!(m.l3, L3::Ipv4 { offset: 18 });
        assert_eq!((m.flow.src_port, m.flow.dst_port), (7, 9));

        let f = frame!(
            PacketBuilder::ethernet2(MAC_A, MAC_B)
                .double_vlan(VlanId::try_new(10).unwrap(), VlanId::try_new(20).unwrap())
                .ipv6([3; 16], [4; 16], 64)
                .tcp(22, 33, 0, 100),
            4
        );
        let m = classify(&f);
        assert_eq!(m.l3, L3::Ipv6 { offset: 22 });
        assert_eq!(ports_proto(&m), (22, 33, 6));
    }

    #[test]
    fn non_ip_frames_are_other_with_zero_key() {
        // ARP request.
        let mut arp = vec![0xff; 6];
        arp.extend_from_slice(&MAC_A);
        arp.extend_from_slice(&[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
        arp.extend_from_slice(&[0; 32]);
        // LLDP.
        let mut lldp = vec![0x01, 0x80, 0xc2, 0, 0, 0x0e];
        lldp.extend_from_slice(&MAC_A);
        lldp.extend_from_slice(&[0x88, 0xcc, 0x02, 0x07, 0x04]);
        lldp.extend_from_slice(&[0; 40]);
        for f in [arp, lldp] {
            let m = classify(&f);
            assert_eq!(m.l3, L3::Other);
            assert_eq!(m.flow, FlowKey::default());
            assert_eq!((m.dsfield, m.priority), (0, 0));
            assert_eq!(m.hash, flow_hash(&FlowKey::default(), 0));
        }
    }

    #[test]
    fn runts_and_empty() {
        for n in 0..14 {
            assert_eq!(classify(&ipv4_tcp(0, 1, 2)[..n]).l3, L3::Other);
        }
    }

    #[test]
    fn truncated_headers() {
        let f = ipv4_tcp(0x10, 1000, 2000);
        // IPv4 header cut: not IP.
        assert_eq!(classify(&f[..14 + 19]).l3, L3::Other);
        // Full IPv4 header, no L4: IP without ports.
        let m = classify(&f[..14 + 20]);
        assert_eq!(m.l3, L3::Ipv4 { offset: 14 });
        assert_eq!((m.flow.proto, m.flow.src_port), (6, 0));
        assert_eq!(m.dsfield, 0x10);
        // Ports present, rest of TCP cut: ports still read.
        let m = classify(&f[..14 + 24]);
        assert_eq!((m.flow.src_port, m.flow.dst_port), (1000, 2000));
        // Three bytes of L4 only: no ports.
        assert_eq!(classify(&f[..14 + 23]).flow.src_port, 0);
        // IPv6 header cut.
        let f6 = ipv6_udp(0);
        assert_eq!(classify(&f6[..14 + 39]).l3, L3::Other);
        assert_eq!(classify(&f6[..14 + 40]).l3, L3::Ipv6 { offset: 14 });
    }

    #[test]
    fn bad_ihl_and_version() {
        let mut f = ipv4_tcp(0, 1, 2);
        f[14] = 0x44; // IHL 4 < 5
        assert_eq!(classify(&f).l3, L3::Other);
        f[14] = 0x4f; // IHL 15: 60 bytes of header, options are garbage TCP bytes
        let m = classify(&f);
        assert_eq!(m.l3, L3::Ipv4 { offset: 14 });
        f[14] = 0x65; // version 6 in an IPv4 ethertype
        assert_eq!(classify(&f).l3, L3::Other);
        let mut f6 = ipv6_udp(0);
        f6[14] = 0x45; // version 4 in an IPv6 ethertype
        assert_eq!(classify(&f6).l3, L3::Other);
    }

    #[test]
    fn ethernet_padding_is_not_l4() {
        // A 60-byte minimum frame: total_len bounds the payload.
        let b = PacketBuilder::ethernet2(MAC_A, MAC_B)
            .ipv4([1, 1, 1, 1], [2, 2, 2, 2], 64)
            .udp(1, 2);
        let mut f = Vec::new();
        b.write(&mut f, &[]).unwrap();
        f.resize(60, 0xee);
        let m = classify(&f);
        assert_eq!((m.flow.src_port, m.flow.dst_port), (1, 2));
    }

    /// What `classify` makes of `data` when etherparse's whole-packet lax
    /// slicer (`LaxSlicedPacket`, which also slices the transport header)
    /// walks the layers: the oracle for `classify`'s shorter walk, which
    /// fills the fields from the IP layer it finds the same way.
    fn sliced_by_etherparse(data: &[u8]) -> PacketMeta {
        use etherparse::{LaxNetSlice, LaxSlicedPacket};
        let mut meta = PacketMeta::default();
        if let Ok(sliced) = LaxSlicedPacket::from_ethernet(data) {
            let ether_type = sliced.ether_payload().map(|p| p.ether_type);
            let ip = match (sliced.net, ether_type) {
                (Some(LaxNetSlice::Ipv4(ip)), Some(ether_type::IPV4)) => Some(LaxIpSlice::Ipv4(ip)),
                (Some(LaxNetSlice::Ipv6(ip)), Some(ether_type::IPV6)) => Some(LaxIpSlice::Ipv6(ip)),
                _ => None,
            };
            if let Some(ip) = ip {
                fill_from_ip(&mut meta, data, &ip);
            }
        }
        meta.hash = flow_hash(&meta.flow, 0);
        meta
    }

    /// `classify` and the oracle agree on every field they fill.
    fn agrees_with_etherparse(data: &[u8]) -> Result<(), TestCaseError> {
        let (m, o) = (classify(data), sliced_by_etherparse(data));
        prop_assert_eq!(m.l3, o.l3);
        prop_assert_eq!(m.flow, o.flow);
        prop_assert_eq!(m.dsfield, o.dsfield);
        prop_assert_eq!(m.priority, o.priority);
        prop_assert_eq!(m.hash, o.hash);
        Ok(())
    }

    /// Frames of every shape the classifier walks: IPv4 and IPv6, TCP, UDP
    /// and ICMP, untagged, tagged once and twice, IPv6 extension headers.
    fn shaped_frame(shape: u8) -> Vec<u8> {
        let eth = || PacketBuilder::ethernet2(MAC_A, MAC_B);
        let (v1, v2) = (VlanId::try_new(10).unwrap(), VlanId::try_new(20).unwrap());
        match shape % 6 {
            0 => ipv4_tcp(0x10, 1000, 2000),
            1 => ipv6_udp(0x20),
            2 => frame!(
                eth()
                    .single_vlan(v1)
                    .ipv4([1, 2, 3, 4], [5, 6, 7, 8], 9)
                    .udp(7, 9),
                8
            ),
            3 => frame!(
                eth()
                    .double_vlan(v1, v2)
                    .ipv6([3; 16], [4; 16], 9)
                    .tcp(22, 33, 0, 9),
                8
            ),
            4 => frame!(
                eth()
                    .ipv4([1, 1, 1, 1], [2, 2, 2, 2], 9)
                    .icmpv4_echo_request(1, 2),
                8
            ),
            _ => {
                let mut ip = IpHeaders::Ipv6(
                    ipv6_header(),
                    Ipv6Extensions {
                        hop_by_hop_options: Some(
                            Ipv6RawExtHeader::new_raw(ip_number::UDP, &[0; 6]).unwrap(),
                        ),
                        ..Default::default()
                    },
                );
                ip.set_next_headers(ip_number::UDP);
                frame!(eth().ip(ip).udp(5, 6), 8)
            }
        }
    }

    proptest! {
        #[test]
        fn agrees_with_etherparse_on_random_bytes(
            data in proptest::collection::vec(any::<u8>(), 0..120),
            ether_type in prop_oneof![Just(0x0800u16), Just(0x86dd), Just(0x8100), Just(0x88a8), Just(0x9100), any::<u16>()],
        ) {
            let mut data = data;
            if data.len() >= 14 {
                data[12..14].copy_from_slice(&ether_type.to_be_bytes());
            }
            agrees_with_etherparse(&data)?;
        }

        #[test]
        fn agrees_with_etherparse_on_mutated_frames(
            shape in any::<u8>(),
            edits in proptest::collection::vec((0usize..120, any::<u8>()), 0..4),
            cut in 0usize..140,
        ) {
            let mut f = shaped_frame(shape);
            for (pos, byte) in edits {
                if let Some(b) = f.get_mut(pos) {
                    *b = byte;
                }
            }
            f.truncate(cut);
            agrees_with_etherparse(&f)?;
        }

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let m = classify(&data);
            prop_assert_eq!(m.hash, flow_hash(&m.flow, 0));
        }

        #[test]
        fn mutated_frames_never_panic(pos in 12usize..80, byte in any::<u8>(), cut in 0usize..160) {
            let mut f = ipv4_tcp(0, 1, 2);
            f[pos] = byte;
            f.truncate(cut);
            let _ = classify(&f);
            let mut f = ipv6_udp(0);
            f[pos] = byte;
            let _ = classify(&f);
        }
    }

    fn key_for(i: u32) -> FlowKey {
        let mut k = FlowKey {
            proto: 6,
            src_port: i as u16,
            dst_port: 5001,
            ..FlowKey::default()
        };
        k.src = mapped([10, 0, (i >> 16) as u8, 1]);
        k.dst = mapped([10, 0, 0, 2]);
        k
    }

    /// Pearson's statistic over `buckets` for `n` sequential flows.
    fn chi_square(buckets: usize, bucket_of: impl Fn(u32) -> usize, n: u32) -> f64 {
        let mut counts = vec![0u32; buckets];
        for i in 0..n {
            counts[bucket_of(flow_hash(&key_for(i), 0x1234_5678))] += 1;
        }
        let expected = n as f64 / buckets as f64;
        counts
            .iter()
            .map(|&c| (c as f64 - expected).powi(2) / expected)
            .sum()
    }

    #[test]
    fn hash_spreads_sequential_ports_over_low_and_top_bits() {
        // 1023 degrees of freedom: mean 1023, sd ~45; 1023 + 6 sd is a bound
        // a poor hash (e.g. port-linear) exceeds by orders of magnitude.
        let n = 100_000;
        let low = chi_square(1024, |h| (h & 1023) as usize, n);
        let top = chi_square(1024, |h| ((h as u64 * 1024) >> 32) as usize, n);
        assert!(low < 1300.0, "low bits chi2 {low}");
        assert!(top < 1300.0, "top bits chi2 {top}");
        // Small tables too (SFQ's 128 default divisor, fq_codel with 16 flows).
        let small = chi_square(128, |h| (h & 127) as usize, 20_000);
        assert!(small < 127.0 + 6.0 * 16.0, "128 buckets chi2 {small}");
    }

    #[test]
    fn hash_avalanche() {
        // Flipping any input bit flips about half of the output bits.
        let base = key_for(7);
        let h0 = flow_hash(&base, 99);
        let mut total = 0u32;
        let mut trials = 0u32;
        for byte in 0..16 {
            for bit in 0..8 {
                for addr in 0..2 {
                    let mut k = base;
                    if addr == 0 {
                        k.src[byte] ^= 1 << bit;
                    } else {
                        k.dst[byte] ^= 1 << bit;
                    }
                    let flips = (flow_hash(&k, 99) ^ h0).count_ones();
                    assert!(flips > 4, "bit {byte}.{bit} flips only {flips}");
                    total += flips;
                    trials += 1;
                }
            }
        }
        for bit in 0..16 {
            let mut k = base;
            k.src_port ^= 1 << bit;
            total += (flow_hash(&k, 99) ^ h0).count_ones();
            let mut k = base;
            k.dst_port ^= 1 << bit;
            total += (flow_hash(&k, 99) ^ h0).count_ones();
            trials += 2;
        }
        let mean = total as f64 / trials as f64;
        assert!((14.0..18.0).contains(&mean), "mean flipped bits {mean}");
    }

    #[test]
    fn different_keys_give_different_buckets() {
        let n = 10_000;
        let same = (0..n)
            .filter(|&i| {
                let k = key_for(i);
                flow_hash(&k, 1) & 1023 == flow_hash(&k, 2) & 1023
            })
            .count();
        // Independent layouts collide in ~1/1024 of the flows.
        assert!(same < 40, "{same} of {n} flows kept their bucket");
        let k = key_for(3);
        assert_ne!(flow_hash(&k, 0), flow_hash(&k, 1));
    }

    #[test]
    fn every_field_matters() {
        let k = key_for(1);
        let h = flow_hash(&k, 5);
        let mut v = k;
        v.proto = 17;
        assert_ne!(flow_hash(&v, 5), h);
        let mut v = k;
        std::mem::swap(&mut v.src, &mut v.dst);
        assert_ne!(flow_hash(&v, 5), h);
        let mut v = k;
        std::mem::swap(&mut v.src_port, &mut v.dst_port);
        assert_ne!(flow_hash(&v, 5), h);
    }
}
