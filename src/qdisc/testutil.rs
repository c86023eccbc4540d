//! Helpers for qdisc unit tests: synthetic frames with a chosen id, length,
//! flow and DS field.

use crate::packet::{FlowKey, Packet, PacketMeta, L3};

/// A frame of accounted length `len` with sequence number `id`, in flow 0.
pub fn pkt(id: u64, len: u32) -> Packet {
    flow_pkt(id, len, 0)
}

/// A frame in flow `flow` (distinct flows get distinct 5-tuples and hashes).
pub fn flow_pkt(id: u64, len: u32, flow: u16) -> Packet {
    let mut key = FlowKey {
        proto: 17,
        src_port: 10_000 + flow,
        dst_port: 5001,
        ..FlowKey::default()
    };
    key.src[15] = 1;
    key.dst[15] = 2;
    Packet {
        data: Vec::new(),
        len,
        meta: PacketMeta {
            id,
            l3: L3::Other,
            flow: key,
            hash: (flow as u32).wrapping_mul(0x9E37_79B9) ^ 0x5bd1_e995,
            ..PacketMeta::default()
        },
    }
}

/// A frame with a DS field (TOS byte) and the priority IPv4 forwarding
/// derives from it.
pub fn tos_pkt(id: u64, len: u32, tos: u8) -> Packet {
    let mut p = pkt(id, len);
    p.meta.dsfield = tos;
    p.meta.priority = crate::packet::classify::rt_tos2priority(tos);
    p
}
