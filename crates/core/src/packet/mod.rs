//! Frames as the core sees them: the bytes, the length every qdisc accounts
//! (`qdisc_pkt_len`, the L2 frame without FCS), and the metadata the classifier
//! extracts once at ingress. Also the drop vocabulary: every frame the core
//! frees goes to a `Drops` sink with a `DropReason`, so that nothing is lost
//! silently.
//!
//! Submodules: `classify` (parse Ethernet/VLAN/IP/L4 once, flow key and hash),
//! `ecn` (CE marking with checksum fix), `filter` (tc u32/matchall filters
//! steering frames to classes), `pool` (the bounded buffer pool), `gso`
//! (TAP offload headers, TCP segmentation of GSO super-frames), `gro` (the
//! receiving side's merge of TCP segments into super-frames).

pub mod classify;
pub mod ecn;
pub mod filter;
pub mod gro;
pub mod gso;
pub mod pool;

use crate::time::Instant;
use std::collections::VecDeque;

/// Mixes a frame's unkeyed flow hash (`meta.hash`) with a per-instance key
/// (murmur3's finaliser): the keyed flow hash SFQ (perturbation) and
/// fq_codel (per-boot seed) bucket by, until the classifier offers one.
#[inline]
pub fn keyed_flow_hash(hash: u32, key: u32) -> u32 {
    let mut h = hash ^ key;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// The network-layer protocol of a frame, with the offset of its header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub enum L3 {
    /// Not IP (ARP, LLDP, ...), or IP too short to parse.
    #[default]
    Other,
    /// IPv4.
    Ipv4 {
        /// Offset of the IPv4 header from the start of the frame, bytes (past
        /// the VLAN tags).
        offset: u16,
    },
    /// IPv6.
    Ipv6 {
        /// Offset of the IPv6 header from the start of the frame, bytes (past
        /// the VLAN tags).
        offset: u16,
    },
}

/// The 5-tuple a flow is identified by. IPv4 addresses are stored as
/// IPv4-mapped IPv6 addresses so that one key type serves both families.
/// Non-IP frames have an all-zero key (one flow, like the kernel's hash 0).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct FlowKey {
    /// Source address (IPv4-mapped for IPv4; zero for non-IP frames).
    pub src: [u8; 16],
    /// Destination address (IPv4-mapped for IPv4; zero for non-IP frames).
    pub dst: [u8; 16],
    /// TCP/UDP/SCTP source port; 0 for other protocols.
    pub src_port: u16,
    /// TCP/UDP/SCTP destination port; 0 for other protocols.
    pub dst_port: u16,
    /// IP protocol number (IPv6: the final next header), e.g. 6 TCP, 17 UDP.
    pub proto: u8,
}

/// `10.0.0.1:5201→10.0.0.2:40000 tcp`; IPv4-mapped addresses print as
/// IPv4, flows without ports as `10.0.0.1→10.0.0.2 icmp`, non-IP flows
/// (the all-zero key) as `non-IP`.
/// An address of a `FlowKey` as its label prints it: dotted IPv4 for an
/// IPv4-mapped address, else `[v6]`.
pub fn addr_text(a: &[u8; 16]) -> String {
    let v6 = std::net::Ipv6Addr::from(*a);
    match v6.to_ipv4_mapped() {
        Some(v4) => v4.to_string(),
        None => format!("[{v6}]"),
    }
}

impl std::fmt::Display for FlowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if *self == FlowKey::default() {
            return f.write_str("non-IP");
        }
        let addr = addr_text;
        let proto = match self.proto {
            6 => "tcp".to_string(),
            17 => "udp".to_string(),
            1 | 58 => "icmp".to_string(),
            p => format!("proto {p}"),
        };
        let (src, dst) = (addr(&self.src), addr(&self.dst));
        if self.src_port == 0 && self.dst_port == 0 {
            write!(f, "{src}→{dst} {proto}")
        } else {
            write!(f, "{src}:{}→{dst}:{} {proto}", self.src_port, self.dst_port)
        }
    }
}

/// What the classifier learnt about a frame, plus the timestamps the core adds.
#[derive(Clone, Copy, Debug, Default)]
pub struct PacketMeta {
    /// Sequence number given at ingress, per direction (traces, order checks).
    pub id: u64,
    /// When the frame entered the emulated link.
    pub arrival: Instant,
    /// While the frame waits in a qdisc, when it was last enqueued there
    /// (CoDel's timestamp); once the link has delivered it, when (see
    /// `delivered`). The two stages never overlap, and one slot for both,
    /// as the kernel's layers take turns with `skb->cb`, keeps a `Packet`
    /// within the 128 bytes a move copies inline (`packet_fits_a_move`).
    pub enqueue_time: Instant,
    /// The network layer and the offset of its header.
    pub l3: L3,
    /// The 5-tuple the frame belongs to.
    pub flow: FlowKey,
    /// Unkeyed flow hash of `flow`; qdiscs mix in their own perturbation.
    pub hash: u32,
    /// The DS field (TOS / traffic class byte), ECN bits included.
    pub dsfield: u8,
    /// `skb->priority`: for IPv4 `rt_tos2priority(tos)`, else 0; filters and
    /// skbedit may overwrite it.
    pub priority: u32,
    /// TX queue for mq (chosen by flow hash at ingress).
    pub queue_mapping: u16,
    /// The offload header the frame is written with: all zero for a plain
    /// frame; a GSO super-frame that passes the link whole keeps the one it
    /// was read with (see `gso`).
    pub offload: gso::VnetHdr,
    /// Segments of a GSO super-frame passing whole
    /// (`skb_shinfo(skb)->gso_segs`); 0 for a plain frame.
    pub gso_segs: u32,
    /// Why the core freed the frame (set when a path counts the drop; read
    /// by the capture).
    pub dropped: Option<DropReason>,
    /// An AQM of the path marked the frame CE (`ecn::mark_ce` returned
    /// true): the path's flow meter counts it as a mark when delivered.
    pub ce_marked: bool,
    /// The frame is a copy netem's `duplicate` made (the kernel's
    /// `skb->tc_depth` raised on the copy, net/sched/sch_netem.c
    /// `netem_enqueue`): no netem duplicates it again.
    pub duplicate: bool,
}

impl PacketMeta {
    /// The two ECN bits of the DS field (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE).
    pub fn ecn(&self) -> u8 {
        self.dsfield & 0x3
    }

    /// When the link handed the frame to the receiving side (logical
    /// time), on a frame it delivered: the live datapath measures its
    /// writes against it.
    pub fn delivered(&self) -> Instant {
        self.enqueue_time
    }

    /// Records the delivery time; the frame has left every qdisc.
    pub fn set_delivered(&mut self, at: Instant) {
        self.enqueue_time = at;
    }
}

/// A frame in the core. `data` holds the bytes from the Ethernet header on;
/// `len` is what every counter and rate computation uses. In the live path
/// `len == data.len()`; the simulator may carry only the headers in `data`
/// and a larger `len`.
#[derive(Debug)]
pub struct Packet {
    /// The frame's bytes from the Ethernet header on (no FCS).
    pub data: Vec<u8>,
    /// The length every counter and rate computation uses, bytes
    /// (`qdisc_pkt_len`).
    pub len: u32,
    /// What the classifier learnt and the times the core records.
    pub meta: PacketMeta,
}

impl Packet {
    /// How many packets the frame counts as in the qdiscs' Sent counters:
    /// a super-frame its segments, any other frame 1 (`bstats_update` in
    /// include/net/sch_generic.h).
    pub fn segs(&self) -> u32 {
        self.meta.gso_segs.max(1)
    }

    /// A frame whose accounted length is its byte length.
    pub fn from_frame(data: Vec<u8>, arrival: Instant) -> Packet {
        let mut meta = classify::classify(&data);
        meta.arrival = arrival;
        meta.enqueue_time = arrival;
        Packet {
            len: data.len() as u32,
            data,
            meta,
        }
    }
}

/// The kernel's `skb->truesize` for a frame of `len` bytes as the TAP driver
/// allocates it: the data buffer holds NET_SKB_PAD (64) headroom plus the
/// frame, cache-line aligned, plus `struct skb_shared_info` (320 B); it comes
/// from the next kmalloc size class; add the aligned `struct sk_buff` (256 B).
/// 1514 B → 2304, 64 B → 768. GRO/TSO aggregates are not modelled. The memory
/// fq_codel, fq_pie and CAKE charge a frame against their memory limits.
pub fn truesize(len: u32) -> u32 {
    const NET_SKB_PAD: u32 = 64;
    const SHINFO: u32 = 320;
    const SKB_HEAD: u32 = 256;
    let data = (len.saturating_add(NET_SKB_PAD))
        .div_ceil(64)
        .saturating_mul(64)
        + SHINFO;
    let slab = match data {
        0..=32 => 32,
        33..=64 => 64,
        65..=96 => 96,
        97..=128 => 128,
        129..=192 => 192,
        _ => data.checked_next_power_of_two().unwrap_or(u32::MAX),
    };
    slab.saturating_add(SKB_HEAD)
}

/// Why the core freed a frame. Every variant is a counter in the stats.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// Tail drop of the arriving frame: a FIFO, a band, a flow slot or a
    /// direct queue was at its limit.
    QueueFull,
    /// pfifo_head_drop / SFQ headdrop: the oldest frame made room.
    HeadDrop,
    /// CoDel's control law dropped the frame at dequeue.
    Codel,
    /// fq_codel's overflow drop from the head of the fattest flow (limit).
    FqCodelOverlimit,
    /// fq_codel's overflow drop from the fattest flow (memory_limit).
    FqCodelMemory,
    /// SFQ dropped from the longest slot, or found no free slot.
    SfqOverflow,
    /// TBF: the frame is larger than the bucket (max_size).
    TbfOversize,
    /// RED's (or choke's) early drop: the average backlog in the band and
    /// the random test chose the frame (`prob_drop`), and it could not be
    /// marked.
    RedEarly,
    /// RED's (or choke's) forced drop: the average backlog at or above
    /// `max` (choke: above), and the frame could not be marked (or
    /// `harddrop`).
    RedForced,
    /// SFQ's per-flow RED early drop (`prob_drop` in net/sched/sch_sfq.c
    /// `sfq_enqueue`): the slot's average in the band, the random test
    /// chose, and no frame could be marked.
    SfqRedProb,
    /// SFQ's per-flow RED forced drop (`forced_drop`): the slot's average
    /// at or above `max`, and no frame could be marked (or `harddrop`).
    SfqRedForced,
    /// PIE's (or FQ-PIE's) early drop (`pie_drop_early`): the drop
    /// probability chose the arriving frame, and it could not be marked.
    PieEarly,
    /// PIE's (or FQ-PIE's) packet limit: the arriving frame was dropped.
    PieOverlimit,
    /// QFQ/filters: no class matched and there is no default; or SFQ or
    /// fq_codel filters placed the frame in no flow bucket.
    Unclassified,
    /// CAKE's overflow drop from the head of the fattest flow (its
    /// memory limit; `cake_drop`).
    CakeOverlimit,
    /// COBALT (CAKE's AQM) dropped the frame at dequeue: CoDel's schedule
    /// and the frame not ECN-capable, or BLUE's random test.
    Cobalt,
    /// CAKE's ACK filter took out a pure ACK a newer one made redundant.
    CakeAckFilter,
    /// The qdisc was reset, deleted or its limit lowered.
    QdiscReset,
    /// The packet pool is at its hard cap.
    PoolExhausted,
    /// Frame shorter than an Ethernet header.
    Runt,
    /// Frame longer than the link's MTU allows.
    Oversize,
    /// Lost on the wire by the link's impairment model (random, Gilbert–
    /// Elliott or 4-state loss).
    WireLoss,
    /// A frame read with a malformed offload header or GSO super-frame
    /// (see `gso::OffloadError`).
    BadOffload,
    /// Reached a class whose qdisc was deleted: the noop qdisc the kernel
    /// leaves there drops everything (`qdisc::noop`).
    NoQdisc,
    /// netem's loss model chose the frame (`loss`, `loss state`, `loss
    /// gemodel`), and it could not be marked instead (`ecn`).
    NetemLoss,
    /// netem held `limit` frames already.
    NetemLimit,
    /// DualPI2's `limit` or memory limit: the arriving frame was dropped
    /// (the kernel's `QDISC_DROP_OVERLIMIT`).
    Dualpi2Overlimit,
    /// DualPI2's PI2 probability chose a frame it could not mark (Not-ECT,
    /// or any frame on overload), at enqueue or dequeue
    /// (`QDISC_DROP_CONGESTED`).
    Dualpi2Congested,
    /// DualPI2's step threshold on a Not-ECT frame of the L-queue
    /// (`QDISC_DROP_L4S_STEP_NON_ECN`).
    Dualpi2StepDrop,
    /// fq's band held `limit` frames already (net/sched/sch_fq.c
    /// `fq_enqueue`: `SKB_DROP_REASON_FQ_BAND_LIMIT`, counted in
    /// `bandN_drops`).
    FqBandLimit,
    /// fq's flow held `flow_limit` frames already (`fq_enqueue`:
    /// `SKB_DROP_REASON_FQ_FLOW_LIMIT`, counted in `flows_plimit`).
    FqFlowLimit,
    /// choke's flow match (`matched` in net/sched/sch_choke.c
    /// `choke_enqueue`): the arriving frame and the queued one drawn at
    /// random were of one flow, and both were dropped.
    ChokeMatched,
    /// SFB's `limit`, a flow whose every bin holds `max` frames, or the
    /// penalty box's rate (sch_sfb.c `sfb_enqueue`: queuedrop, bucketdrop,
    /// penaltydrop; the kernel's `QDISC_DROP_OVERLIMIT`).
    SfbOverlimit,
    /// SFB's random test dropped the frame (above one half, or it could
    /// not be marked: earlydrop; `QDISC_DROP_CONGESTED`).
    SfbCongested,
    /// hhf's limit: the head of the heavy-hitter bucket (of the other
    /// bucket when it is empty) dropped to make room (`hhf_drop`,
    /// `qdisc_drop`: the kernel's `SKB_DROP_REASON_QDISC_DROP`).
    HhfDrop,
}

impl DropReason {
    /// Every reason, in the order of the stats' counters (`index()`).
    pub const ALL: [DropReason; 35] = [
        DropReason::QueueFull,
        DropReason::HeadDrop,
        DropReason::Codel,
        DropReason::FqCodelOverlimit,
        DropReason::FqCodelMemory,
        DropReason::SfqOverflow,
        DropReason::TbfOversize,
        DropReason::RedEarly,
        DropReason::RedForced,
        DropReason::SfqRedProb,
        DropReason::SfqRedForced,
        DropReason::PieEarly,
        DropReason::PieOverlimit,
        DropReason::Unclassified,
        DropReason::CakeOverlimit,
        DropReason::Cobalt,
        DropReason::CakeAckFilter,
        DropReason::QdiscReset,
        DropReason::PoolExhausted,
        DropReason::Runt,
        DropReason::Oversize,
        DropReason::WireLoss,
        DropReason::BadOffload,
        DropReason::NoQdisc,
        DropReason::NetemLoss,
        DropReason::NetemLimit,
        DropReason::Dualpi2Overlimit,
        DropReason::Dualpi2Congested,
        DropReason::Dualpi2StepDrop,
        DropReason::FqBandLimit,
        DropReason::FqFlowLimit,
        DropReason::ChokeMatched,
        DropReason::SfbOverlimit,
        DropReason::SfbCongested,
        DropReason::HhfDrop,
    ];

    /// Position of the reason in `ALL` (its counter's index).
    pub fn index(self) -> usize {
        DropReason::ALL
            .iter()
            .position(|r| *r == self)
            .expect("ALL lists every reason")
    }

    /// The reason's name in the stats, the metrics and the capture
    /// (`queue_full`, `codel`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue_full",
            DropReason::HeadDrop => "head_drop",
            DropReason::Codel => "codel",
            DropReason::FqCodelOverlimit => "fq_codel_overlimit",
            DropReason::FqCodelMemory => "fq_codel_memory",
            DropReason::SfqOverflow => "sfq_overflow",
            DropReason::TbfOversize => "tbf_oversize",
            DropReason::RedEarly => "red_early",
            DropReason::RedForced => "red_forced",
            DropReason::SfqRedProb => "sfq_red_prob",
            DropReason::SfqRedForced => "sfq_red_forced",
            DropReason::PieEarly => "pie_early",
            DropReason::PieOverlimit => "pie_overlimit",
            DropReason::Unclassified => "unclassified",
            DropReason::CakeOverlimit => "cake_overlimit",
            DropReason::Cobalt => "cobalt",
            DropReason::CakeAckFilter => "cake_ack_filter",
            DropReason::QdiscReset => "qdisc_reset",
            DropReason::PoolExhausted => "pool_exhausted",
            DropReason::Runt => "runt",
            DropReason::Oversize => "oversize",
            DropReason::WireLoss => "wire_loss",
            DropReason::BadOffload => "bad_offload",
            DropReason::NoQdisc => "noop",
            DropReason::NetemLoss => "netem_loss",
            DropReason::NetemLimit => "netem_limit",
            DropReason::Dualpi2Overlimit => "dualpi2_overlimit",
            DropReason::Dualpi2Congested => "dualpi2_congested",
            DropReason::Dualpi2StepDrop => "dualpi2_step_drop",
            DropReason::FqBandLimit => "fq_band_limit",
            DropReason::FqFlowLimit => "fq_flow_limit",
            DropReason::ChokeMatched => "choke_matched",
            DropReason::SfbOverlimit => "sfb_overlimit",
            DropReason::SfbCongested => "sfb_congested",
            DropReason::HhfDrop => "hhf_drop",
        }
    }
}

/// The kernel's `to_free` list: qdiscs push what they drop, the owner of the
/// path drains it, counts each frame by reason and recycles its buffer.
/// Classful qdiscs learn what a child dropped from the growth of `len()`
/// across the call (drops in a child count in every ancestor).
///
/// It also carries the copies a netem below the root made (`duplicate`):
/// the kernel enqueues such a copy at the root of the netem's TX queue
/// (`rootq->enqueue` in `netem_enqueue`), which a qdisc inside the tree
/// cannot reach, so it leaves the copy here (`push_copy`) and the owner of
/// the tree enqueues it at the root once the call returns (`take_copy`).
#[derive(Debug, Default)]
pub struct Drops {
    list: Vec<(Packet, DropReason)>,
    copies: VecDeque<Packet>,
}

impl Drops {
    /// An empty list with room for 256 drops and 8 copies.
    pub fn new() -> Self {
        Drops {
            list: Vec::with_capacity(256),
            copies: VecDeque::with_capacity(8),
        }
    }
    /// Leaves a copy made below the root, for the root (oldest first).
    pub fn push_copy(&mut self, pkt: Packet) {
        self.copies.push_back(pkt);
    }
    /// Whether a copy is waiting to be enqueued at the root.
    pub fn has_copies(&self) -> bool {
        !self.copies.is_empty()
    }
    /// The oldest copy waiting to be enqueued at the root.
    pub fn take_copy(&mut self) -> Option<Packet> {
        self.copies.pop_front()
    }
    /// Records that `pkt` was dropped for `reason`.
    pub fn push(&mut self, pkt: Packet, reason: DropReason) {
        self.list.push((pkt, reason));
    }
    /// Drops recorded and not yet drained.
    pub fn len(&self) -> usize {
        self.list.len()
    }
    /// Whether no drop is waiting to be drained.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    /// Total accounted bytes of the entries from index `from` on.
    pub fn bytes_since(&self, from: usize) -> u64 {
        self.list[from..].iter().map(|(p, _)| p.len as u64).sum()
    }
    /// The entries from index `from` on.
    pub fn since(&self, from: usize) -> &[(Packet, DropReason)] {
        &self.list[from..]
    }
    /// Takes every recorded drop out, oldest first, for the owner to count and
    /// recycle.
    pub fn drain(&mut self) -> std::vec::Drain<'_, (Packet, DropReason)> {
        self.list.drain(..)
    }
}

/// A counter per drop reason, indexed by `DropReason::index()` (an array
/// longer than 32, for which the standard library and serde give neither
/// `Default` nor serialization: written here as a plain sequence, as an
/// array would be).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DropCounts(pub [u64; DropReason::ALL.len()]);

impl Default for DropCounts {
    fn default() -> Self {
        DropCounts([0; DropReason::ALL.len()])
    }
}

impl std::ops::Deref for DropCounts {
    type Target = [u64; DropReason::ALL.len()];
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for DropCounts {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl IntoIterator for DropCounts {
    type Item = u64;
    type IntoIter = std::array::IntoIter<u64, { DropReason::ALL.len() }>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a DropCounts {
    type Item = &'a u64;
    type IntoIter = std::slice::Iter<'a, u64>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl serde::Serialize for DropCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}

impl<'de> serde::Deserialize<'de> for DropCounts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Vec::<u64>::deserialize(d)?;
        let n = v.len();
        v.try_into()
            .map(DropCounts)
            .map_err(|_| serde::de::Error::invalid_length(n, &"one counter per drop reason"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Packet` moves into and out of every queue: at 128 bytes or less
    /// the compiler copies it inline rather than calling `memcpy` (136
    /// bytes cost the fifos about 29 instructions a frame under callgrind).
    #[test]
    fn packet_fits_a_move() {
        assert!(
            std::mem::size_of::<Packet>() <= 128,
            "Packet is {} bytes",
            std::mem::size_of::<Packet>()
        );
    }
}
