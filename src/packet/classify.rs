//! Frame classifier (placeholder until the packet work lands).
use super::PacketMeta;

pub fn classify(_data: &[u8]) -> PacketMeta {
    PacketMeta::default()
}

/// A tc filter (placeholder).
#[derive(Clone, Debug)]
pub struct Filter;

/// `TC_PRIO_*` values (include/uapi/linux/pkt_sched.h).
pub const TC_PRIO_BESTEFFORT: u32 = 0;
pub const TC_PRIO_BULK: u32 = 2;
pub const TC_PRIO_INTERACTIVE_BULK: u32 = 4;
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
