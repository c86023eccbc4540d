//! The data behind `tc -s -d qdisc show` and `tc -s -d class show`: a plain,
//! thread-safe snapshot of a qdisc tree. Each discipline hands back its
//! options as the kernel dumps them (`QdiscOptions`, `ClassOptions`, the
//! kernel's `TCA_OPTIONS`) and its extended statistics as typed values
//! (`Xstats`, the kernel's `TCA_STATS_APP` structs); the tc front end prints
//! both (`crate::tc::show` lays the lines out, each kind's printer in
//! `crate::tc::opts` writes its options, `crate::tc::xstats` the xstats). The TUI and the control socket read
//! these snapshots and never the live qdiscs.
//!
//! Live snapshots are bounded (`FlowListing::Top`): a flow-queueing
//! discipline lists its N flows with the most backlog and folds the others
//! into one `FlowSummary`, picked in one pass with a heap of N entries
//! (`top_flows`): publishing costs one pass over the active flows plus N
//! rows, instead of a row, a pseudo-class and its text for every flow.
//!
//! Every queue also says which flows fill it (`QueueOccupancy`), flow-aware
//! or not: a FIFO, each pfifo_fast band, HTB's direct queue, a parked frame,
//! and (in `crate::link::path`) the TX ring and the delay line. The kernel
//! keeps no per-flow state there; the occupancy is worked out when the dump
//! is taken by walking the queued frames (`occupancy`), each of which
//! carries the flow key and hash the classifier gave it at admission, so
//! the packet path pays nothing for it and the walk is bounded by the
//! queue's limit. A row also carries what the path's flow meter counted for
//! that flow (`FlowTraffic`: drops and marks by reason, the rate over the
//! last second), filled in by the path after the qdisc's dump.

pub use super::options::Xstats;
use super::{ClassOptions, Handle, QdiscOptions, QdiscStats};
use crate::packet::{DropReason, FlowKey, Packet};
use crate::time::Instant;
use foldhash::HashMap;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap};

/// How many flows a `QueueOccupancy` lists by name; the rest are summed up
/// in its `others`.
pub const OCCUPANCY_FLOWS: usize = 16;

/// How many flow queues a dump lists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlowListing {
    /// Every flow and its pseudo-class (what `tc class show` prints).
    #[default]
    All,
    /// The N flows with the most backlog (and their pseudo-classes), the
    /// rest summed up in `QdiscDump::other_flows` (live snapshots).
    Top(usize),
}

/// One qdisc, its classes and its child qdiscs.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct QdiscDump {
    /// The qdisc's kind as tc prints it (`TCA_KIND`: `fq_codel`, `htb`, ...).
    pub kind: String,
    /// The qdisc's handle (`tcm_handle`; `major:0`).
    pub handle: Handle,
    /// The handle of its parent: `TC_H_ROOT` or a class id (`tcm_parent`).
    pub parent: Handle,
    /// The options as the kernel dumps them in `TCA_OPTIONS` (the tc front
    /// end's `crate::tc::show` prints them with the kind's printer).
    #[serde(default)]
    pub options: QdiscOptions,
    /// The generic counters (`TCA_STATS2`: `gnet_stats_basic` and
    /// `gnet_stats_queue`).
    pub stats: QdiscStats,
    /// The discipline's extended statistics (`None`: the kind has none).
    pub xstats: Option<Xstats>,
    /// Its classes, in the order `tc class show` lists them.
    pub classes: Vec<ClassDump>,
    /// The qdiscs attached below its classes, in class order.
    pub children: Vec<QdiscDump>,
    /// Per-flow rows for the TUI (flow-queueing disciplines only): every
    /// active flow in bucket order, or under `FlowListing::Top` the
    /// largest backlogs first.
    pub flows: Vec<FlowDump>,
    /// The active flows a `FlowListing::Top` dump left out of `flows` (and
    /// out of `classes`), summed up.
    #[serde(default)]
    pub other_flows: FlowSummary,
    /// The flows in the qdisc's own queues (not its children's, and not
    /// the flow queues of a flow-queueing discipline, which `flows` lists):
    /// one entry per queue, empty for a qdisc that holds no frames itself.
    #[serde(default)]
    pub occupancy: Vec<QueueOccupancy>,
}

impl QdiscDump {
    /// ECN marks counted by this qdisc and every qdisc below it (the
    /// `ecn_mark` of fq_codel's, codel's, PIE's, FQ-PIE's and DualPI2's xstats, fq's `ce_mark`, RED's, choke's and SFB's `marked`).
    pub fn tree_ecn_marks(&self) -> u64 {
        let own = match self.xstats {
            Some(Xstats::FqCodel(x)) => x.ecn_mark,
            Some(Xstats::Codel(x)) => x.ecn_mark,
            Some(Xstats::Red(x)) => u64::from(x.marked),
            Some(Xstats::Choke(x)) => u64::from(x.marked),
            Some(Xstats::Sfb(x)) => u64::from(x.marked),
            Some(Xstats::Pie(x)) => u64::from(x.ecn_mark),
            Some(Xstats::FqPie(x)) => u64::from(x.ecn_mark),
            Some(Xstats::Fq(x)) => x.ce_mark,
            Some(Xstats::Dualpi2(x)) => u64::from(x.ecn_mark),
            Some(Xstats::Cake(ref x)) => {
                x.tins.iter().map(|t| u64::from(t.ecn_marked_packets)).sum()
            }
            _ => 0,
        };
        own + self
            .children
            .iter()
            .map(QdiscDump::tree_ecn_marks)
            .sum::<u64>()
    }
}

/// One class (HTB/QFQ/TBF/mq classes, SFQ/fq_codel per-flow pseudo-classes).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ClassDump {
    /// The class's qdisc kind as tc prints it (`htb`, `qfq`, ...).
    pub kind: String,
    /// The class id (`tcm_handle`; `major:minor`).
    pub classid: Handle,
    /// The parent: the qdisc's handle or another class's id (`tcm_parent`).
    pub parent: Handle,
    /// `leaf H:` is printed when the attached qdisc has a non-zero handle.
    pub leaf: Option<Handle>,
    /// The class's options as the kernel dumps them.
    #[serde(default)]
    pub options: ClassOptions,
    /// `None` for pseudo-classes that report no byte counters (their block
    /// starts with ` (dropped 0, overlimits 0 requeues 0) `).
    pub stats: Option<QdiscStats>,
    /// Queue stats for pseudo-classes (backlog/qlen/drops of the flow).
    pub queue: QdiscStats,
    /// The class's extended statistics (`None`: the kind has none).
    pub xstats: Option<Xstats>,
}

/// A flow queue as the TUI shows it.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct FlowDump {
    /// The hash bucket (fq_codel) or slot (SFQ) of the flow; for CAKE
    /// its class minor less one (`tin * 1024 + queue`, `cake_walk`).
    pub bucket: u32,
    /// The 5-tuple of a frame of the flow: the last one queued (fq_codel) or
    /// the head one (SFQ); None when none tells it.
    pub flow: Option<crate::packet::FlowKey>,
    /// Bytes queued in the flow.
    pub backlog: u64,
    /// Frames queued in the flow.
    pub qlen: u32,
    /// Sojourn time of the head frame, ns.
    pub head_sojourn_ns: u64,
    /// DRR deficit or SFQ allot.
    pub deficit: i64,
    /// CoDel's (CAKE: COBALT's) `count` of the flow (0 for SFQ).
    pub codel_count: u32,
    /// Whether the flow's CoDel (CAKE: COBALT) is dropping (false for SFQ).
    pub codel_dropping: bool,
    /// Frames dropped from the flow.
    pub drops: u64,
    /// Frames of the flow CE-marked instead of dropped.
    pub ecn_marks: u64,
    /// Bytes dequeued from the flow.
    pub sent_bytes: u64,
    /// The flow hash of the queue's head frame (`PacketMeta::hash`), or of
    /// `flow` when the queue is empty: what `traffic` is looked up by.
    #[serde(default)]
    pub hash: u32,
    /// What the path's flow meter counted for this flow (filled in by the
    /// path; `None` with the meter off or when the flow is not tracked).
    #[serde(default)]
    pub traffic: Option<FlowTraffic>,
    /// What the discipline serves before the queue's newest frame, from
    /// its queued frames and DRR state at the dump (`qdisc::drr_ahead`);
    /// `None` for an empty queue.
    #[serde(default)]
    pub ahead: Option<Ahead>,
    /// A CAKE flow queue's tin, hosts and BLUE state (`None`, and left
    /// out of the JSON, for the other kinds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cake: Option<super::cake::CakeFlowInfo>,
}

/// Which of a qdisc's own queues (or of the link's stages) an occupancy
/// describes.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum QueueId {
    /// The qdisc's one queue (pfifo, bfifo, pfifo_head_drop, codel).
    #[default]
    Fifo,
    /// A band of pfifo_fast (0 is served first).
    Band(u8),
    /// HTB's direct queue (unclassified frames, sent unshaped).
    Direct,
    /// The frame a peek took out of a child and holds until it may leave
    /// (TBF, HTB: the kernel's `qdisc_peek_dequeued` `gso_skb`).
    Parked,
    /// The default FIFO of a class (HTB's pfifo, TBF's bfifo: handle 0,
    /// which `tc qdisc show` does not list), lifted into its parent's dump.
    Leaf(Handle),
    /// The driver's TX ring: frames posted to the NIC, the one being
    /// serialized included.
    Ring,
    /// The delay line: frames in propagation ("on the wire").
    Wire,
    /// The driver's requeue slot: frames it refused (`NETDEV_TX_BUSY`),
    /// sent again before anything of the qdisc.
    Requeued,
    /// Frames arrived at the far end, held by RX interrupt coalescing until
    /// they are delivered.
    RxHeld,
}

impl QueueId {
    /// `band 1`, `ring`, `wire`, ... (the TUI's queue column).
    pub fn label(self) -> String {
        match self {
            QueueId::Fifo => "fifo".into(),
            QueueId::Band(b) => format!("band {b}"),
            QueueId::Direct => "direct".into(),
            QueueId::Parked => "parked".into(),
            QueueId::Leaf(classid) => format!("leaf {:x}:{:x}", classid >> 16, classid & 0xFFFF),
            QueueId::Ring => "ring".into(),
            QueueId::Wire => "wire".into(),
            QueueId::Requeued => "requeued".into(),
            QueueId::RxHeld => "rx held".into(),
        }
    }
}

/// One flow's frames in one queue at the instant of the dump.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FlowOccupancy {
    /// The flow's 5-tuple (`PacketMeta::flow`).
    pub flow: FlowKey,
    /// The classifier's unkeyed flow hash (`PacketMeta::hash`).
    pub hash: u32,
    /// The flow's frames in this queue.
    pub packets: u32,
    /// Their bytes (`qdisc_pkt_len`).
    pub bytes: u64,
    /// This flow's share of the queue's bytes, per mille.
    pub share_permille: u32,
    /// How long the flow's oldest frame in this queue has waited there, ns.
    pub oldest_sojourn_ns: u64,
    /// What stands ahead of the flow's newest frame in this queue.
    #[serde(default)]
    pub ahead: Ahead,
    /// What the path's flow meter counted for this flow (filled in by the
    /// path).
    #[serde(default)]
    pub traffic: Option<FlowTraffic>,
}

/// The frames served before a flow's newest frame: in a queue served in
/// order, the frames ahead of it (and, in pfifo_fast, every frame of the
/// bands served first); in a flow queue, what the discipline's deficit
/// round robin sends before it (`drr`). How many, their bytes, the flow's
/// own older frames among them, and the `AHEAD_FLOWS` flows (for flow
/// queues: queues) with the most bytes among them (the flow itself
/// included, if its older frames are there).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ahead {
    /// Frames ahead of the flow's newest frame.
    pub packets: u32,
    /// Their bytes.
    pub bytes: u64,
    /// The flows with the most bytes among them, most first.
    pub flows: Vec<AheadFlow>,
    /// Of those frames, the flow's own (older frames of the same flow, or
    /// of the same flow queue).
    #[serde(default)]
    pub own_packets: u32,
    /// Their bytes.
    #[serde(default)]
    pub own_bytes: u64,
    /// For a flow queue, how the scheduler reaches the newest frame.
    #[serde(default)]
    pub drr: Option<DrrTurn>,
    /// The figures are a lower bound: working out a flow queue's turn
    /// stopped after `qdisc::drr_ahead::AHEAD_TURNS` turns of the
    /// scheduler, before this frame's (what was sent by then is ahead of
    /// it, and more). `drr` is then `None` for a queue the run did not
    /// reach.
    #[serde(default)]
    pub at_least: bool,
}

/// How a DRR scheduler (fq_codel, SFQ) reaches a flow queue's newest
/// frame, as `qdisc::drr_ahead` works it out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DrrTurn {
    /// The queue is on fq_codel's new-flows list: it is served before
    /// every queue on the old list, for one quantum.
    pub new_flow: bool,
    /// Other flow queues that send at least one frame before it.
    pub queues: u32,
    /// Rounds the queue waits for: how often it uses up its deficit and
    /// goes to the back of the round (getting a fresh quantum) before its
    /// newest frame leaves. 0: within the credit it has now.
    pub rounds: u32,
    /// The quantum each queue gets per round, bytes.
    pub quantum: u32,
}

/// One flow's frames ahead of another's newest frame.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AheadFlow {
    /// The flow's 5-tuple.
    pub flow: FlowKey,
    /// Its unkeyed flow hash.
    pub hash: u32,
    /// Its frames ahead.
    pub packets: u32,
    /// Their bytes.
    pub bytes: u64,
}

/// How many flows an `Ahead` names.
pub const AHEAD_FLOWS: usize = 3;

/// The flows a `QueueOccupancy` does not list, summed up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OccupancyOthers {
    /// How many flows.
    pub flows: u32,
    /// Their frames in the queue.
    pub packets: u32,
    /// Their bytes.
    pub bytes: u64,
    /// The longest wait among their frames, ns.
    pub oldest_sojourn_ns: u64,
}

/// A queue's frames by flow: the `OCCUPANCY_FLOWS` flows with the most
/// bytes (most first; equal bytes: lower hash first) and the others summed.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueueOccupancy {
    /// Which queue of the qdisc (or of the path).
    pub queue: QueueId,
    /// Every frame of the queue (listed or not).
    pub packets: u32,
    /// Their bytes.
    pub bytes: u64,
    /// The listed flows, most bytes first.
    pub flows: Vec<FlowOccupancy>,
    /// The flows not listed, summed up.
    pub others: OccupancyOthers,
}

impl QueueOccupancy {
    /// The frames of `queued` in the order they are served, each with the
    /// instant it entered this queue, grouped by flow hash (the first frame
    /// seen names the flow), with what stands ahead of each listed flow's
    /// newest frame. Two passes: O(frames) time and O(distinct flows)
    /// memory, plus O(distinct flows) per listed flow for its `ahead`; at
    /// dump time only.
    pub fn of<'a>(
        queue: QueueId,
        queued: impl Iterator<Item = (&'a Packet, Instant)> + Clone,
        now: Instant,
    ) -> QueueOccupancy {
        QueueOccupancy::of_behind(queue, queued, std::iter::empty(), now)
    }

    /// `of` for a queue served only after the frames of `before` (in
    /// pfifo_fast, the bands of higher priority): they count in every
    /// flow's `ahead`, not in the queue.
    pub fn of_behind<'a>(
        queue: QueueId,
        queued: impl Iterator<Item = (&'a Packet, Instant)> + Clone,
        before: impl Iterator<Item = &'a Packet>,
        now: Instant,
    ) -> QueueOccupancy {
        // Each flow's row and the position of its newest frame. The keys
        // are flow hashes already: foldhash, not SipHash, for one lookup
        // per frame on a busy thread.
        let mut by_hash: HashMap<u32, (FlowOccupancy, usize)> = HashMap::default();
        let (mut packets, mut bytes) = (0u32, 0u64);
        for (i, (p, since)) in queued.clone().enumerate() {
            packets += 1;
            bytes += u64::from(p.len);
            let (e, newest) = by_hash.entry(p.meta.hash).or_insert_with(|| {
                let row = FlowOccupancy {
                    flow: p.meta.flow,
                    hash: p.meta.hash,
                    ..FlowOccupancy::default()
                };
                (row, i)
            });
            *newest = i;
            e.packets += 1;
            e.bytes += u64::from(p.len);
            e.oldest_sojourn_ns = e.oldest_sojourn_ns.max(now.saturating_since(since));
        }
        let mut flows: Vec<(FlowOccupancy, usize)> = by_hash.into_values().collect();
        flows.sort_unstable_by_key(|(f, _)| (Reverse(f.bytes), f.hash));
        let mut others = OccupancyOthers::default();
        for (f, _) in flows.iter().skip(OCCUPANCY_FLOWS) {
            others.flows += 1;
            others.packets += f.packets;
            others.bytes += f.bytes;
            others.oldest_sojourn_ns = others.oldest_sojourn_ns.max(f.oldest_sojourn_ns);
        }
        flows.truncate(OCCUPANCY_FLOWS);
        // The listed flows' newest frames by position in the queue, as the
        // second pass meets them (each flow's is a different frame).
        let mut listed_at: Vec<(usize, usize)> = flows
            .iter()
            .enumerate()
            .map(|(row, (_, newest))| (*newest, row))
            .collect();
        listed_at.sort_unstable();
        let mut flows: Vec<FlowOccupancy> = flows.into_iter().map(|(f, _)| f).collect();
        for f in &mut flows {
            f.share_permille = permille(f.bytes, bytes);
        }
        let mut cum: HashMap<u32, AheadFlow> = HashMap::default();
        let mut ahead = (0u32, 0u64);
        fn count(cum: &mut HashMap<u32, AheadFlow>, ahead: &mut (u32, u64), p: &Packet) {
            let a = cum.entry(p.meta.hash).or_insert_with(|| AheadFlow {
                flow: p.meta.flow,
                hash: p.meta.hash,
                ..AheadFlow::default()
            });
            a.packets += 1;
            a.bytes += u64::from(p.len);
            ahead.0 += 1;
            ahead.1 += u64::from(p.len);
        }
        if !listed_at.is_empty() {
            for p in before {
                count(&mut cum, &mut ahead, p);
            }
        }
        let mut next = listed_at.iter().peekable();
        for (i, (p, _)) in queued.enumerate() {
            let Some(&&(at, row)) = next.peek() else {
                break;
            };
            if at == i {
                next.next();
                let mut by_bytes: Vec<&AheadFlow> = cum.values().collect();
                by_bytes.sort_unstable_by_key(|a| (Reverse(a.bytes), a.hash));
                let own = cum.get(&p.meta.hash);
                flows[row].ahead = Ahead {
                    packets: ahead.0,
                    bytes: ahead.1,
                    flows: by_bytes.into_iter().take(AHEAD_FLOWS).cloned().collect(),
                    own_packets: own.map_or(0, |a| a.packets),
                    own_bytes: own.map_or(0, |a| a.bytes),
                    drr: None,
                    at_least: false,
                };
            }
            count(&mut cum, &mut ahead, p);
        }
        QueueOccupancy {
            queue,
            packets,
            bytes,
            flows,
            others,
        }
    }

    /// The frames of a qdisc queue, each waiting since it was enqueued
    /// (`PacketMeta::enqueue_time`).
    pub fn of_qdisc<'a>(
        queue: QueueId,
        queued: impl Iterator<Item = &'a Packet> + Clone,
        now: Instant,
    ) -> QueueOccupancy {
        QueueOccupancy::of(queue, queued.map(|p| (p, p.meta.enqueue_time)), now)
    }

    /// The frame a peek parked (`QueueId::Parked`), if one is: empty or
    /// one queue, for a dump's `occupancy`.
    pub fn parked(parked: Option<&Packet>, now: Instant) -> Vec<QueueOccupancy> {
        parked
            .map(|p| QueueOccupancy::of_qdisc(QueueId::Parked, std::iter::once(p), now))
            .into_iter()
            .collect()
    }

    /// `of_qdisc` for a queue served after the frames of `before`.
    pub fn of_qdisc_behind<'a>(
        queue: QueueId,
        queued: impl Iterator<Item = &'a Packet> + Clone,
        before: impl Iterator<Item = &'a Packet>,
        now: Instant,
    ) -> QueueOccupancy {
        let queued = queued.map(|p| (p, p.meta.enqueue_time));
        QueueOccupancy::of_behind(queue, queued, before, now)
    }
}

/// The occupancy of `child`, a class's default FIFO that the parent's dump
/// leaves out (handle 0), retagged as the class's leaf queue.
pub fn lift_hidden_child(child: QdiscDump, classid: Handle) -> Vec<QueueOccupancy> {
    child
        .occupancy
        .into_iter()
        .filter(|o| o.packets > 0)
        .map(|o| QueueOccupancy {
            queue: QueueId::Leaf(classid),
            ..o
        })
        .collect()
}

/// The flow hash a flow queue's row is known by: its head frame's
/// (`PacketMeta::hash`), else the classifier's unkeyed hash of the flow it
/// last held (`packet::classify::flow_hash(key, 0)`), else 0.
pub fn flow_queue_hash(head: Option<&Packet>, last: Option<FlowKey>) -> u32 {
    match (head, last) {
        (Some(p), _) => p.meta.hash,
        (None, Some(k)) => crate::packet::classify::flow_hash(&k, 0),
        (None, None) => 0,
    }
}

/// `part` of `whole`, per mille (0 for an empty whole).
pub fn permille(part: u64, whole: u64) -> u32 {
    if whole == 0 {
        0
    } else {
        (u128::from(part) * 1000 / u128::from(whole)) as u32
    }
}

/// What a path's flow meter counted for one flow since it was first seen
/// (or, for the meter's `others` entry, for every flow it does not track).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FlowTraffic {
    /// The flow's 5-tuple (all zero for the `others` entry).
    pub flow: FlowKey,
    /// Its unkeyed flow hash, the meter's key.
    pub hash: u32,
    /// Frames delivered to the far end.
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Delivered bits/s over the last second.
    pub rate_bps: u64,
    /// Frames delivered CE-marked by an AQM of the path.
    pub ecn_marks: u64,
    /// Frames the path dropped, by reason (non-zero only).
    pub drops: BTreeMap<DropReason, u64>,
}

impl FlowTraffic {
    /// Drops whatever the reason.
    pub fn total_drops(&self) -> u64 {
        self.drops.values().sum()
    }
}

/// Flow queues summed up: the rows a bounded dump does not list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FlowSummary {
    /// How many flow queues.
    pub flows: u64,
    /// Bytes queued in them.
    pub backlog: u64,
    /// Frames queued in them.
    pub qlen: u64,
    /// The largest head-of-queue sojourn among them, ns.
    pub max_head_sojourn_ns: u64,
    /// Frames dropped from them.
    pub drops: u64,
    /// Frames of theirs CE-marked instead of dropped.
    pub ecn_marks: u64,
    /// Bytes dequeued from them.
    pub sent_bytes: u64,
}

impl FlowSummary {
    /// Counts `f` in the summary (its largest sojourn kept as the maximum).
    pub fn add(&mut self, f: &FlowDump) {
        self.merge(&FlowSummary {
            flows: 1,
            backlog: f.backlog,
            qlen: u64::from(f.qlen),
            max_head_sojourn_ns: f.head_sojourn_ns,
            drops: f.drops,
            ecn_marks: f.ecn_marks,
            sent_bytes: f.sent_bytes,
        });
    }

    /// Both summed up together.
    pub fn merge(&mut self, o: &FlowSummary) {
        self.flows += o.flows;
        self.backlog += o.backlog;
        self.qlen += o.qlen;
        self.max_head_sojourn_ns = self.max_head_sojourn_ns.max(o.max_head_sojourn_ns);
        self.drops += o.drops;
        self.ecn_marks += o.ecn_marks;
        self.sent_bytes += o.sent_bytes;
    }
}

/// A flow ordered by backlog; on equal backlog the lower bucket ranks
/// higher, so the selection is deterministic.
struct ByBacklog(FlowDump);

impl ByBacklog {
    fn key(&self) -> (u64, Reverse<u32>) {
        (self.0.backlog, Reverse(self.0.bucket))
    }
}

impl PartialEq for ByBacklog {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for ByBacklog {}
impl PartialOrd for ByBacklog {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for ByBacklog {
    fn cmp(&self, o: &Self) -> Ordering {
        self.key().cmp(&o.key())
    }
}

/// The `n` flows of `flows` with the most backlog, largest first (equal
/// backlogs: lower bucket first), and the others summed up. One pass with
/// a min-heap of at most `n` entries: O(flows · log n) time, O(n) memory.
pub fn top_flows(flows: impl Iterator<Item = FlowDump>, n: usize) -> (Vec<FlowDump>, FlowSummary) {
    let mut heap: BinaryHeap<Reverse<ByBacklog>> = BinaryHeap::with_capacity(n.min(4096));
    let mut rest = FlowSummary::default();
    for f in flows {
        if heap.len() < n {
            heap.push(Reverse(ByBacklog(f)));
            continue;
        }
        let candidate = ByBacklog(f);
        match heap.peek_mut() {
            Some(mut smallest) if candidate > smallest.0 => {
                let out = std::mem::replace(&mut smallest.0, candidate);
                rest.add(&out.0);
            }
            _ => rest.add(&candidate.0),
        }
    }
    // Ascending order of `Reverse` is descending backlog.
    let top = heap.into_sorted_vec().into_iter().map(|r| r.0 .0).collect();
    (top, rest)
}

/// A flow-queueing discipline's `flows`, `classes` and `other_flows` under
/// `listing`: `flows` yields every active flow (in any order; `All` lists
/// them by bucket), and `class_of` the pseudo-class of one listed bucket.
pub fn list_flows(
    listing: FlowListing,
    flows: impl Iterator<Item = FlowDump>,
    class_of: impl Fn(u32) -> ClassDump,
) -> (Vec<FlowDump>, Vec<ClassDump>, FlowSummary) {
    let (listed, rest) = match listing {
        FlowListing::All => {
            let mut all: Vec<FlowDump> = flows.collect();
            all.sort_unstable_by_key(|f| f.bucket);
            (all, FlowSummary::default())
        }
        FlowListing::Top(n) => top_flows(flows, n),
    };
    let mut classes: Vec<ClassDump> = listed.iter().map(|f| class_of(f.bucket)).collect();
    // tc lists classes by class id whatever order the flows come in.
    classes.sort_unstable_by_key(|c| c.classid);
    (listed, classes, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(bucket: u32, backlog: u64) -> FlowDump {
        FlowDump {
            bucket,
            backlog,
            qlen: (backlog / 100) as u32,
            head_sojourn_ns: backlog * 10,
            drops: 1,
            ..FlowDump::default()
        }
    }

    #[test]
    fn top_flows_keeps_the_largest_backlogs_and_sums_the_rest() {
        // Backlogs in a scrambled order, with ties.
        let backlogs = [300u64, 100, 900, 0, 500, 900, 200, 700, 100, 0];
        let flows = || backlogs.iter().enumerate().map(|(i, b)| flow(i as u32, *b));
        let (top, rest) = top_flows(flows(), 4);
        let got: Vec<(u32, u64)> = top.iter().map(|f| (f.bucket, f.backlog)).collect();
        assert_eq!(got, vec![(2, 900), (5, 900), (7, 700), (4, 500)]);
        assert_eq!(rest.flows, 6);
        assert_eq!(rest.backlog, 300 + 100 + 200 + 100);
        assert_eq!(rest.qlen, 3 + 1 + 2 + 1);
        assert_eq!(rest.max_head_sojourn_ns, 3000);
        assert_eq!(rest.drops, 6);
        // Nothing is lost or counted twice.
        let mut all = rest;
        top.iter().for_each(|f| all.add(f));
        let mut expect = FlowSummary::default();
        flows().for_each(|f| expect.add(&f));
        assert_eq!(all, expect);
    }

    #[test]
    fn top_flows_with_fewer_flows_than_the_bound_lists_all() {
        let (top, rest) = top_flows((0..3).map(|i| flow(i, 10 * u64::from(i))), 64);
        assert_eq!(top.len(), 3);
        assert_eq!(top[0].bucket, 2);
        assert_eq!(rest, FlowSummary::default());
        let (none, rest) = top_flows((0..3).map(|i| flow(i, 1)), 0);
        assert!(none.is_empty());
        assert_eq!(rest.flows, 3);
    }

    #[test]
    fn occupancy_groups_a_fifo_by_flow_with_what_stands_ahead() {
        use crate::qdisc::testutil::flow_pkt;
        // Served in this order: bulk A, A, B, the ping P, then A, B.
        let order = [
            (1, 1000),
            (1, 1000),
            (2, 1500),
            (9, 100),
            (1, 1000),
            (2, 1500),
        ];
        let queue: Vec<Packet> = order
            .iter()
            .enumerate()
            .map(|(i, &(flow, len))| {
                let mut p = flow_pkt(i as u64, len, flow);
                p.meta.enqueue_time = Instant::from_millis(10 * i as u64);
                p
            })
            .collect();
        let now = Instant::from_millis(100);
        let o = QueueOccupancy::of_qdisc(QueueId::Fifo, queue.iter(), now);
        assert_eq!((o.packets, o.bytes), (6, 6100));
        let got: Vec<(u16, u32, u64, u32)> = o
            .flows
            .iter()
            .map(|f| {
                (
                    f.flow.src_port - 10_000,
                    f.packets,
                    f.bytes,
                    f.share_permille,
                )
            })
            .collect();
        // A and B tie on bytes: the lower hash (B's) first.
        assert_eq!(
            got,
            vec![(2, 2, 3000, 491), (1, 3, 3000, 491), (9, 1, 100, 16)]
        );
        let by_port = |port: u16| o.flows.iter().find(|f| f.flow.src_port == port).unwrap();
        // A's oldest frame entered at 0 ms; the ping's at 30 ms.
        assert_eq!(by_port(10_001).oldest_sojourn_ns, 100 * 1_000_000);
        let ping = by_port(10_009);
        assert_eq!(ping.oldest_sojourn_ns, 70 * 1_000_000);
        assert_eq!((ping.ahead.packets, ping.ahead.bytes), (3, 3500));
        let ahead: Vec<(u16, u32)> = ping
            .ahead
            .flows
            .iter()
            .map(|a| (a.flow.src_port - 10_000, a.packets))
            .collect();
        assert_eq!(ahead, vec![(1, 2), (2, 1)]);
        // B's newest frame is last: everything else is ahead of it.
        assert_eq!(by_port(10_002).ahead.packets, 5);
        assert_eq!(o.others, OccupancyOthers::default());
    }

    #[test]
    fn occupancy_lists_the_largest_flows_and_sums_the_others() {
        use crate::qdisc::testutil::flow_pkt;
        let n = OCCUPANCY_FLOWS as u16 + 5;
        let queue: Vec<Packet> = (0..n)
            .flat_map(|f| (0..=f).map(move |i| flow_pkt(u64::from(i), 100, f)))
            .collect();
        let o = QueueOccupancy::of_qdisc(QueueId::Band(1), queue.iter(), Instant::ZERO);
        assert_eq!(o.flows.len(), OCCUPANCY_FLOWS);
        assert_eq!(o.flows[0].packets, u32::from(n));
        assert_eq!(o.others.flows, 5);
        assert_eq!(o.others.packets, 1 + 2 + 3 + 4 + 5);
        let listed: u32 = o.flows.iter().map(|f| f.packets).sum();
        assert_eq!(listed + o.others.packets, o.packets);
    }

    proptest::proptest! {
        /// The walk against a frame-by-frame recount of what it reports:
        /// random queues of up to 40 flows (so that some are summed as
        /// others) behind random frames of higher bands.
        #[test]
        fn occupancy_matches_a_recount(
            frames in proptest::collection::vec((0u16..40, 60u32..1600, 0u64..5_000), 0..300),
            before in proptest::collection::vec((0u16..40, 60u32..1600), 0..20),
        ) {
            use crate::qdisc::testutil::flow_pkt;
            let queue: Vec<Packet> = frames
                .iter()
                .enumerate()
                .map(|(i, &(f, len, t))| {
                    let mut p = flow_pkt(i as u64, len, f);
                    p.meta.enqueue_time = Instant::from_micros(t);
                    p
                })
                .collect();
            let higher: Vec<Packet> = before
                .iter()
                .enumerate()
                .map(|(i, &(f, len))| flow_pkt(1_000 + i as u64, len, f))
                .collect();
            let now = Instant::from_millis(5);
            let o = QueueOccupancy::of_qdisc_behind(QueueId::Band(2), queue.iter(), higher.iter(), now);
            let total: u64 = queue.iter().map(|p| u64::from(p.len)).sum();
            proptest::prop_assert_eq!((o.packets, o.bytes), (queue.len() as u32, total));
            // Per flow: (bytes, hash, packets, oldest sojourn), most bytes first.
            let of_hash = |h: u32| queue.iter().filter(move |p| p.meta.hash == h);
            let mut hashes: Vec<u32> = queue.iter().map(|p| p.meta.hash).collect();
            hashes.sort_unstable();
            hashes.dedup();
            let mut rows: Vec<(u64, u32, u32, u64)> = hashes
                .iter()
                .map(|&h| {
                    let bytes = of_hash(h).map(|p| u64::from(p.len)).sum();
                    let oldest = of_hash(h).map(|p| now.saturating_since(p.meta.enqueue_time)).max();
                    (bytes, h, of_hash(h).count() as u32, oldest.unwrap_or(0))
                })
                .collect();
            rows.sort_unstable_by_key(|r| (Reverse(r.0), r.1));
            let listed = rows.len().min(OCCUPANCY_FLOWS);
            proptest::prop_assert_eq!(o.flows.len(), listed);
            for (f, &(bytes, hash, packets, oldest)) in o.flows.iter().zip(&rows) {
                proptest::prop_assert_eq!((f.hash, f.packets, f.bytes), (hash, packets, bytes));
                proptest::prop_assert_eq!(f.oldest_sojourn_ns, oldest);
                proptest::prop_assert_eq!(f.share_permille, permille(bytes, total));
                // Ahead of its newest frame: every higher band's frame and
                // every frame before it in this queue.
                let newest = queue.iter().rposition(|p| p.meta.hash == hash).unwrap();
                let ahead: Vec<&Packet> = higher.iter().chain(&queue[..newest]).collect();
                let sum = |h: Option<u32>| {
                    let mine = ahead.iter().filter(|p| h.is_none_or(|h| p.meta.hash == h));
                    (mine.clone().count() as u32, mine.map(|p| u64::from(p.len)).sum::<u64>())
                };
                proptest::prop_assert_eq!((f.ahead.packets, f.ahead.bytes), sum(None));
                proptest::prop_assert_eq!((f.ahead.own_packets, f.ahead.own_bytes), sum(Some(hash)));
                let mut by: Vec<(u64, u32, u32)> = ahead
                    .iter()
                    .map(|p| p.meta.hash)
                    .collect::<std::collections::BTreeSet<u32>>()
                    .into_iter()
                    .map(|h| {
                        let (n, b) = sum(Some(h));
                        (b, h, n)
                    })
                    .collect();
                by.sort_unstable_by_key(|r| (Reverse(r.0), r.1));
                let got: Vec<(u64, u32, u32)> =
                    f.ahead.flows.iter().map(|a| (a.bytes, a.hash, a.packets)).collect();
                proptest::prop_assert_eq!(got, by.into_iter().take(AHEAD_FLOWS).collect::<Vec<_>>());
            }
            let rest = &rows[listed..];
            let others = OccupancyOthers {
                flows: rest.len() as u32,
                packets: rest.iter().map(|r| r.2).sum(),
                bytes: rest.iter().map(|r| r.0).sum(),
                oldest_sojourn_ns: rest.iter().map(|r| r.3).max().unwrap_or(0),
            };
            proptest::prop_assert_eq!(o.others, others);
        }
    }

    #[test]
    fn list_flows_orders_classes_by_id_and_all_lists_every_flow() {
        let class_of = |b: u32| ClassDump {
            classid: 0x8001_0000 | (b + 1),
            ..ClassDump::default()
        };
        let flows = || (0..10).rev().map(|i| flow(i, u64::from(i % 4) * 100));
        let (listed, classes, rest) = list_flows(FlowListing::Top(3), flows(), class_of);
        assert_eq!(listed.len(), 3);
        assert!(classes.windows(2).all(|w| w[0].classid < w[1].classid));
        assert_eq!(rest.flows, 7);
        let (listed, classes, rest) = list_flows(FlowListing::All, flows(), class_of);
        assert_eq!(listed.len(), 10);
        assert_eq!(classes.len(), 10);
        assert_eq!(listed[3].bucket, 3, "bucket order");
        assert_eq!(rest, FlowSummary::default());
    }
}
