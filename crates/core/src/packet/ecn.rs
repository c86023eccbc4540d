//! ECN Congestion Experienced marking, the kernel's `INET_ECN_set_ce`: sets
//! the two ECN bits of an ECN-capable IPv4 or IPv6 packet to CE in place
//! (IPv4 header checksum fixed incrementally, RFC 1624) and keeps
//! `meta.dsfield` in step. CoDel, fq_codel, the `codel` qdisc, RED and PIE mark with it
//! instead of dropping.

use super::{Packet, L3};

/// The ECN codepoints of the DS field's two low bits.
pub const ECN_NOT_ECT: u8 = 0;
/// ECN Capable Transport (1), RFC 3168's ECT(1) (L4S in RFC 9331).
pub const ECN_ECT1: u8 = 1;
/// ECN Capable Transport (0), RFC 3168's ECT(0).
pub const ECN_ECT0: u8 = 2;
/// Congestion Experienced, RFC 3168.
pub const ECN_CE: u8 = 3;
const ECN_MASK: u8 = 3;

/// Marks `pkt` Congestion Experienced. Returns true if the packet is an
/// IPv4/IPv6 packet that now carries CE (ECT(0)/ECT(1) are rewritten, CE is
/// left as is); false for Not-ECT, non-IP or truncated/garbled frames, which
/// are never modified.
pub fn mark_ce(pkt: &mut Packet) -> bool {
    let marked = match pkt.meta.l3 {
        L3::Ipv4 { offset } => mark_ipv4(&mut pkt.data, offset as usize),
        L3::Ipv6 { offset } => mark_ipv6(&mut pkt.data, offset as usize),
        L3::Other => None,
    };
    match marked {
        Some(dsfield) => {
            pkt.meta.dsfield = dsfield;
            pkt.meta.ce_marked = true;
            true
        }
        None => false,
    }
}

/// IPv4: TOS byte at offset 1, header checksum at offsets 10..12. Returns the
/// new TOS byte, or None if the packet is not ECN-capable or not IPv4.
fn mark_ipv4(data: &mut [u8], off: usize) -> Option<u8> {
    let hdr = data.get_mut(off..off.checked_add(20)?)?;
    if hdr[0] >> 4 != 4 || hdr[0] & 0x0F < 5 {
        return None;
    }
    let tos = hdr[1];
    match tos & ECN_MASK {
        ECN_NOT_ECT => None,
        ECN_CE => Some(tos),
        _ => {
            let new_tos = tos | ECN_CE;
            set_ipv4_tos(hdr, new_tos);
            Some(new_tos)
        }
    }
}

/// Clears the DSCP of an IPv4 or IPv6 packet, keeping its ECN bits (the
/// kernel's `ipv4_change_dsfield(iph, INET_ECN_MASK, 0)` and
/// `ipv6_change_dsfield`, as CAKE's `wash` does), the IPv4 header checksum
/// fixed incrementally; `meta.dsfield` follows. Non-IP or truncated frames
/// are left alone.
pub fn wash_dscp(pkt: &mut Packet) {
    let data = &mut pkt.data;
    let washed = match pkt.meta.l3 {
        L3::Ipv4 { offset } => {
            let off = usize::from(offset);
            let hdr = data.get_mut(off..off + 20).filter(|h| h[0] >> 4 == 4);
            hdr.map(|hdr| {
                let tos = hdr[1] & ECN_MASK;
                set_ipv4_tos(hdr, tos);
                tos
            })
        }
        L3::Ipv6 { offset } => {
            let off = usize::from(offset);
            let hdr = data.get_mut(off..off + 40).filter(|h| h[0] >> 4 == 6);
            hdr.map(|hdr| {
                let tclass = ipv6_tclass(hdr) & ECN_MASK;
                set_ipv6_tclass(hdr, tclass);
                tclass
            })
        }
        L3::Other => None,
    };
    if let Some(ds) = washed {
        pkt.meta.dsfield = ds;
    }
}

/// Writes `tos` into the IPv4 header `hdr`, its checksum fixed
/// incrementally (the kernel's `ipv4_change_dsfield`).
fn set_ipv4_tos(hdr: &mut [u8], tos: u8) {
    let old_word = u16::from_be_bytes([hdr[0], hdr[1]]);
    let new_word = u16::from_be_bytes([hdr[0], tos]);
    let check = u16::from_be_bytes([hdr[10], hdr[11]]);
    hdr[1] = tos;
    hdr[10..12].copy_from_slice(&checksum_update(check, old_word, new_word).to_be_bytes());
}

/// The traffic class of the IPv6 header `hdr`: version(4) | traffic
/// class(8) | flow label(20), the class straddling the first two bytes.
fn ipv6_tclass(hdr: &[u8]) -> u8 {
    (hdr[0] << 4) | (hdr[1] >> 4)
}

/// Writes `tclass` into the IPv6 header `hdr` (`ipv6_change_dsfield`).
fn set_ipv6_tclass(hdr: &mut [u8], tclass: u8) {
    hdr[0] = (hdr[0] & 0xF0) | (tclass >> 4);
    hdr[1] = (hdr[1] & 0x0F) | (tclass << 4);
}

/// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') in one's complement arithmetic.
fn checksum_update(check: u16, old: u16, new: u16) -> u16 {
    let mut sum = (!check) as u32 + (!old) as u32 + new as u32;
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// IPv6: version(4) | traffic class(8) | flow label(20); the traffic class
/// straddles the first two bytes. Returns the new traffic class.
fn mark_ipv6(data: &mut [u8], off: usize) -> Option<u8> {
    let hdr = data.get_mut(off..off.checked_add(40)?)?;
    if hdr[0] >> 4 != 6 {
        return None;
    }
    let tclass = ipv6_tclass(hdr);
    match tclass & ECN_MASK {
        ECN_NOT_ECT => None,
        ECN_CE => Some(tclass),
        _ => {
            let new_tc = tclass | ECN_CE;
            set_ipv6_tclass(hdr, new_tc);
            Some(new_tc)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketMeta;
    use etherparse::{Ipv4Header, Ipv6Header, PacketBuilder};

    const ETH: usize = 14;

    fn v4_frame(tos: u8) -> Packet {
        let builder = PacketBuilder::ethernet2([1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(1234, 5678);
        let payload = [0xAB; 32];
        let mut data = Vec::with_capacity(builder.size(payload.len()));
        builder.write(&mut data, &payload).unwrap();
        // Set the TOS byte and recompute the checksum from scratch.
        data[ETH + 1] = tos;
        let (mut h, _) = Ipv4Header::from_slice(&data[ETH..]).unwrap();
        h.header_checksum = h.calc_header_checksum();
        data[ETH + 10..ETH + 12].copy_from_slice(&h.header_checksum.to_be_bytes());
        packet(data, L3::Ipv4 { offset: ETH as u16 }, tos)
    }

    /// A packet of `data` whose metadata knows only the L3 header and its
    /// TOS / traffic-class byte.
    fn packet(data: Vec<u8>, l3: L3, dsfield: u8) -> Packet {
        Packet {
            len: data.len() as u32,
            data,
            meta: PacketMeta {
                l3,
                dsfield,
                ..PacketMeta::default()
            },
        }
    }

    fn v6_frame(tclass: u8, flow_label: u32) -> Packet {
        let builder = PacketBuilder::ethernet2([1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1])
            .ipv6([1; 16], [2; 16], 64)
            .udp(1234, 5678);
        let mut data = Vec::new();
        builder.write(&mut data, &[1, 2, 3]).unwrap();
        data[ETH] = 0x60 | (tclass >> 4);
        data[ETH + 1] = (tclass << 4) | ((flow_label >> 16) as u8 & 0x0F);
        data[ETH + 2] = (flow_label >> 8) as u8;
        data[ETH + 3] = flow_label as u8;
        packet(data, L3::Ipv6 { offset: ETH as u16 }, tclass)
    }

    fn stored_v4_checksum(p: &Packet) -> u16 {
        u16::from_be_bytes([p.data[ETH + 10], p.data[ETH + 11]])
    }

    #[test]
    fn ipv4_ect_becomes_ce_and_checksum_matches_full_recompute() {
        for tos in [0x01u8, 0x02, 0xB9, 0xBA, 0x11, 0xFE, 0xFD] {
            let mut p = v4_frame(tos);
            assert!(mark_ce(&mut p), "tos {tos:#x}");
            assert_eq!(p.data[ETH + 1], tos | 3);
            assert_eq!(p.meta.dsfield, tos | 3);
            let (h, _) = Ipv4Header::from_slice(&p.data[ETH..]).unwrap();
            assert_eq!(
                stored_v4_checksum(&p),
                h.calc_header_checksum(),
                "tos {tos:#x}"
            );
        }
    }

    #[test]
    fn ipv4_incremental_checksum_agrees_over_the_checksum_space() {
        // Vary the identification field so the stored checksum sweeps the
        // whole 16-bit space, including the one's complement wrap cases.
        for id in (0u32..=0xFFFF).step_by(31) {
            for tos in [0x01u8, 0x02] {
                let mut p = v4_frame(tos);
                p.data[ETH + 4..ETH + 6].copy_from_slice(&(id as u16).to_be_bytes());
                let (h, _) = Ipv4Header::from_slice(&p.data[ETH..]).unwrap();
                let c = h.calc_header_checksum();
                p.data[ETH + 10..ETH + 12].copy_from_slice(&c.to_be_bytes());
                assert!(mark_ce(&mut p));
                let (h, _) = Ipv4Header::from_slice(&p.data[ETH..]).unwrap();
                assert_eq!(stored_v4_checksum(&p), h.calc_header_checksum(), "id {id}");
            }
        }
    }

    #[test]
    fn ipv4_not_ect_and_ce_untouched() {
        let mut p = v4_frame(0x10);
        let before = p.data.clone();
        assert!(!mark_ce(&mut p));
        assert_eq!(p.data, before);
        assert_eq!(p.meta.dsfield, 0x10);

        let mut p = v4_frame(0x03);
        let before = p.data.clone();
        assert!(mark_ce(&mut p));
        assert_eq!(p.data, before);
    }

    #[test]
    fn ipv6_traffic_class_rewritten_across_nibbles() {
        // tclass 0xB9 (EF + ECT(1)), flow label with all bits set nearby.
        let mut p = v6_frame(0xB9, 0xF_FFFF);
        assert!(mark_ce(&mut p));
        let (h, _) = Ipv6Header::from_slice(&p.data[ETH..]).unwrap();
        assert_eq!(h.traffic_class, 0xBB);
        assert_eq!(u32::from(h.flow_label), 0xF_FFFF);
        assert_eq!(p.data[ETH] >> 4, 6);
        assert_eq!(p.meta.dsfield, 0xBB);

        let mut p = v6_frame(0x02, 0x12345);
        assert!(mark_ce(&mut p));
        let (h, _) = Ipv6Header::from_slice(&p.data[ETH..]).unwrap();
        assert_eq!(h.traffic_class, 0x03);
        assert_eq!(u32::from(h.flow_label), 0x12345);

        let mut p = v6_frame(0xB8, 7);
        assert!(!mark_ce(&mut p));
        assert_eq!(p.meta.dsfield, 0xB8);
    }

    #[test]
    fn wash_clears_the_dscp_keeps_ecn_and_fixes_the_checksum() {
        for tos in [0x00u8, 0x01, 0x02, 0x03, 0xB8, 0xB9, 0xBA, 0xFF] {
            let mut p = v4_frame(tos);
            let expect = v4_frame(tos & 3);
            wash_dscp(&mut p);
            assert_eq!(p.data, expect.data, "tos {tos:#x}");
            assert_eq!(p.meta.dsfield, tos & 3);
        }
        for tclass in [0x00u8, 0x01, 0xB9, 0xFE, 0xFF] {
            let mut p = v6_frame(tclass, 0xABCDE);
            wash_dscp(&mut p);
            assert_eq!(
                p.data,
                v6_frame(tclass & 3, 0xABCDE).data,
                "tclass {tclass:#x}"
            );
            assert_eq!(p.meta.dsfield, tclass & 3);
        }
        // Truncated and non-IP frames are left alone.
        let mut p = v4_frame(0xB8);
        p.data.truncate(ETH + 10);
        let before = p.data.clone();
        wash_dscp(&mut p);
        assert_eq!((p.data, p.meta.dsfield), (before, 0xB8));
    }

    #[test]
    fn garbage_and_short_frames_never_panic() {
        let mut p = v4_frame(0x02);
        p.data.truncate(ETH + 10);
        assert!(!mark_ce(&mut p));
        let mut p = v4_frame(0x02);
        p.meta.l3 = L3::Ipv4 { offset: u16::MAX };
        assert!(!mark_ce(&mut p));
        let mut p = v4_frame(0x02);
        p.data[ETH] = 0x65; // wrong version
        assert!(!mark_ce(&mut p));
        let mut p = v6_frame(0x02, 0);
        p.data.truncate(ETH + 39);
        assert!(!mark_ce(&mut p));
        let mut p = v6_frame(0x02, 0);
        p.meta.l3 = L3::Other;
        assert!(!mark_ce(&mut p));
        let mut p = Packet {
            data: vec![],
            len: 0,
            meta: PacketMeta {
                l3: L3::Ipv6 { offset: 14 },
                ..PacketMeta::default()
            },
        };
        assert!(!mark_ce(&mut p));
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_garbage(data in proptest::collection::vec(proptest::num::u8::ANY, 0..80), off in 0u16..100, v6 in proptest::bool::ANY) {
            let mut p = Packet {
                len: data.len() as u32,
                data,
                meta: PacketMeta {
                    l3: if v6 { L3::Ipv6 { offset: off } } else { L3::Ipv4 { offset: off } },
                    ..PacketMeta::default()
                },
            };
            let before = p.data.clone();
            if !mark_ce(&mut p) {
                proptest::prop_assert_eq!(p.data, before);
            } else {
                proptest::prop_assert_eq!(p.meta.dsfield & 3, 3);
            }
        }
    }
}
