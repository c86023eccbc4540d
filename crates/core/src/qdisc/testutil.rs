//! Helpers for qdisc unit tests: synthetic frames with a chosen id, length,
//! flow and DS field, and a run of a shaper over an AQM child.

use crate::packet::{DropReason, Drops, FlowKey, Packet, PacketMeta, L3};
use crate::qdisc::Qdisc;
use crate::time::Instant;

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

/// Offers `n` 1514-byte frames at time 0 to `q`, a shaper whose child is
/// codel, and dequeues at each `next_wakeup` until it has none, checking
/// at every step that each frame was sent, dropped or is still held. Then
/// checks that CoDel dropped, that the shaper counted those drops, and that
/// it is empty. Returns the time of the last wakeup.
pub fn drain_codel_child(q: &mut dyn Qdisc, n: u64) -> Instant {
    let mut d = Drops::new();
    for id in 0..n {
        q.enqueue(pkt(id, 1514), Instant::ZERO, &mut d);
    }
    let mut t = Instant::ZERO;
    let mut sent = 0;
    while let Some(w) = q.next_wakeup(t) {
        assert!(w >= t);
        t = w;
        while q.dequeue(t, &mut d).is_some() {
            sent += 1;
        }
        assert_eq!(n, sent + d.len() as u64 + q.qlen() as u64);
    }
    assert!(!d.is_empty(), "CoDel dropped standing-queue frames");
    assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::Codel));
    assert_eq!(q.stats().drops, d.len() as u64);
    assert_eq!((q.qlen(), q.backlog()), (0, 0));
    t
}

/// A frame of `len` bytes carrying a minimal IPv4 header (after a 14-byte
/// Ethernet header) with ECN bits `ecn` (0 Not-ECT, 1 ECT(1), 2 ECT(0),
/// 3 CE), which `packet::ecn::mark_ce` can mark.
pub fn ect_pkt(id: u64, len: u32, ecn: u8) -> Packet {
    let mut p = pkt(id, len);
    let mut data = vec![0u8; 14 + 20];
    data[14] = 0x45;
    data[15] = ecn;
    p.data = data;
    p.meta.l3 = L3::Ipv4 { offset: 14 };
    p.meta.dsfield = ecn;
    p
}
