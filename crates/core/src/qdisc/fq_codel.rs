//! fq_codel (Linux net/sched/sch_fq_codel.c; RFC 8290): frames are hashed into
//! `flows` buckets, each a FIFO with its own CoDel state; buckets are served by
//! deficit round robin from two lists, new flows before old ones (sparse-flow
//! priority for one quantum). Overflow (packet `limit` or `memory_limit`) drops
//! up to `drop_batch` frames from the head of the fattest flow. ECN-capable
//! frames are CE-marked instead of dropped when `ecn` is on (the default).
//!
//! Memory accounting uses a model of the kernel's `skb->truesize` for a
//! frame the TAP driver received (see `truesize`).

use super::codel::{
    codel_to_us, us_to_codel, CodelParams, CodelQueue, CodelStats, CodelVars,
    CODEL_DISABLED_THRESHOLD,
};
use super::drr_ahead::{drr_ahead, DrrQueue};
use super::dump::{
    list_flows, ClassDump, FlowDump, FlowListing, FqCodelClassXstats, FqCodelXstats,
    QueueOccupancy, Xstats,
};
use super::keyed_flow_hash;
use super::park::{drop_all_held, ParkOnPeek};
use super::QdiscOptions;
use super::{FilterHost, Handle, Qdisc, QdiscCtx, QdiscDump, QdiscStats, TcError, Verdict};
use crate::packet::filter::FilterChain;
use crate::packet::{DropReason, Drops, FlowKey, Packet};
use crate::time::Instant;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Default `limit`, packets (`fq_codel_init`, net/sched/sch_fq_codel.c: 10 *
/// 1024).
pub const DEFAULT_LIMIT: u32 = 10240;
/// Default number of flow buckets (`flows`).
pub const DEFAULT_FLOWS: u32 = 1024;
/// Most flow buckets `fq_codel_change` accepts.
pub const MAX_FLOWS: u32 = 65536;
/// Default `memory_limit`, bytes (32 MB).
pub const DEFAULT_MEMORY_LIMIT: u32 = 32 << 20;
/// Default `drop_batch`: packets dropped at most from the fattest flow per
/// overflow.
pub const DEFAULT_DROP_BATCH: u32 = 64;
/// `FQ_CODEL_QUANTUM_MAX`.
pub const QUANTUM_MAX: u32 = 1 << 20;
const QUANTUM_MIN: u32 = 256;

/// The kernel's `skb->truesize` for a frame of `len` bytes as the TAP driver
/// allocates it: the data buffer holds NET_SKB_PAD (64) headroom plus the
/// frame, cache-line aligned, plus `struct skb_shared_info` (320 B); it comes
/// from the next kmalloc size class; add the aligned `struct sk_buff` (256 B).
/// 1514 B → 2304, 64 B → 768. GRO/TSO aggregates are not modelled.
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

/// Which list a flow is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ListTag {
    None,
    New,
    Old,
}

/// One bucket's scheduling state (`struct fq_codel_flow`): what every
/// enqueue and dequeue of the bucket reads and writes, in one cache line
/// (with thousands of flows the table does not stay in L1, and a bucket
/// spread over three lines cost a miss per line). The byte backlog is in
/// `FqCodel::backlogs` and the counters in `FlowInfo`, as the kernel keeps
/// `backlogs[]` apart.
#[repr(align(64))]
struct Flow {
    queue: VecDeque<Packet>,
    cvars: CodelVars,
    deficit: i32,
    list: ListTag,
}

const _: () = assert!(std::mem::size_of::<Flow>() == 64);

impl Flow {
    fn new() -> Self {
        Flow {
            queue: VecDeque::new(),
            cvars: CodelVars::default(),
            deficit: 0,
            list: ListTag::None,
        }
    }
}

/// A bucket's counters and last 5-tuple, for `tc -s` class lines and the
/// TUI's flow table (one cache line).
#[derive(Default)]
#[repr(align(64))]
struct FlowInfo {
    /// The 5-tuple of the last frame queued here.
    key: Option<FlowKey>,
    drops: u64,
    ecn_marks: u64,
    sent_bytes: u64,
}

/// A flow's queue as CoDel sees it: pops update the flow's and the qdisc's
/// backlog and memory; `backlog()` is the qdisc-wide backlog.
struct FlowQueue<'a> {
    queue: &'a mut VecDeque<Packet>,
    flow_backlog: &'a mut u64,
    qlen: &'a mut u32,
    backlog: &'a mut u64,
    memory_usage: &'a mut u64,
}

impl CodelQueue for FlowQueue<'_> {
    fn pop_head(&mut self) -> Option<Packet> {
        let p = self.queue.pop_front()?;
        *self.flow_backlog -= p.len as u64;
        *self.qlen -= 1;
        *self.backlog -= p.len as u64;
        *self.memory_usage -= truesize(p.len) as u64;
        Some(p)
    }
    fn backlog(&self) -> u64 {
        *self.backlog
    }
}

/// The `TCA_FQ_CODEL_*` attributes (include/uapi/linux/pkt_sched.h), times
/// in µs as netlink carries them (net/sched/sch_fq_codel.c
/// `fq_codel_change` turns them into CoDel units, `fq_codel_dump` back with
/// `codel_time_to_us`). An absent attribute keeps the current value;
/// `fq_codel_dump` sends all but `ce_threshold` (while off) and the
/// selector and mask (while the mask is 0).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FqCodelOptions {
    /// `TCA_FQ_CODEL_TARGET`, µs.
    pub target: Option<u32>,
    /// `TCA_FQ_CODEL_LIMIT`, packets.
    pub limit: Option<u32>,
    /// `TCA_FQ_CODEL_INTERVAL`, µs.
    pub interval: Option<u32>,
    /// `TCA_FQ_CODEL_ECN`.
    pub ecn: Option<bool>,
    /// `TCA_FQ_CODEL_FLOWS` (at creation only).
    pub flows: Option<u32>,
    /// `TCA_FQ_CODEL_QUANTUM`, bytes.
    pub quantum: Option<u32>,
    /// `TCA_FQ_CODEL_CE_THRESHOLD`, µs.
    pub ce_threshold: Option<u32>,
    /// `TCA_FQ_CODEL_DROP_BATCH_SIZE`.
    pub drop_batch_size: Option<u32>,
    /// `TCA_FQ_CODEL_MEMORY_LIMIT`, bytes.
    pub memory_limit: Option<u32>,
    /// `TCA_FQ_CODEL_CE_THRESHOLD_SELECTOR`.
    pub ce_threshold_selector: Option<u8>,
    /// `TCA_FQ_CODEL_CE_THRESHOLD_MASK`.
    pub ce_threshold_mask: Option<u8>,
}

/// The `fq_codel` qdisc (net/sched/sch_fq_codel.c): flows hashed into buckets,
/// served by deficit round robin with new flows first, each with its own CoDel
/// state; overflow drops from the fattest flow.
pub struct FqCodel {
    handle: Handle,
    parent: Handle,
    limit: u32,
    quantum: u32,
    memory_limit: u32,
    drop_batch: u32,
    params: CodelParams,
    cstats: CodelStats,
    hash_key: u32,
    /// `tc filter`s that pick the bucket (`flow_bucket`).
    filters: FilterChain,
    flows: Vec<Flow>,
    /// Bytes queued per bucket (the kernel's `backlogs[]`).
    backlogs: Vec<u64>,
    info: Vec<FlowInfo>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    /// Frames in the flows (the parked one not included).
    qlen: u32,
    /// Bytes in the flows (the parked one not included).
    backlog: u64,
    memory_usage: u64,
    drop_overlimit: u64,
    drop_overmemory: u64,
    new_flow_count: u64,
    /// A frame dequeued by `peek` (qdisc_peek_dequeued), still counted.
    parked: Option<Packet>,
    stats: QdiscStats,
}

impl FqCodel {
    /// An fq_codel with the kernel's defaults (`fq_codel_init`) and a hash key
    /// drawn from the context's seed.
    pub fn new(ctx: QdiscCtx) -> Self {
        let seed = ctx.seed ^ 0x6671_5f63_6f64_656c; // "fq_codel"
        FqCodel {
            handle: ctx.handle,
            parent: ctx.parent,
            limit: DEFAULT_LIMIT,
            quantum: ctx.psched_mtu.max(QUANTUM_MIN),
            memory_limit: DEFAULT_MEMORY_LIMIT,
            drop_batch: DEFAULT_DROP_BATCH,
            params: CodelParams::new(ctx.psched_mtu, true),
            cstats: CodelStats::default(),
            hash_key: (seed ^ (seed >> 32)) as u32,
            filters: FilterChain::new(),
            flows: (0..DEFAULT_FLOWS).map(|_| Flow::new()).collect(),
            backlogs: vec![0; DEFAULT_FLOWS as usize],
            info: (0..DEFAULT_FLOWS).map(|_| FlowInfo::default()).collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            qlen: 0,
            backlog: 0,
            memory_usage: 0,
            drop_overlimit: 0,
            drop_overmemory: 0,
            new_flow_count: 0,
            parked: None,
            stats: QdiscStats::default(),
        }
    }

    /// An fq_codel qdisc with `options` (`QdiscOptions::None`: the
    /// defaults).
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, TcError> {
        match options {
            QdiscOptions::None => Ok(FqCodel::new(ctx)),
            QdiscOptions::FqCodel(o) => FqCodel::with_options(ctx, o),
            _ => Err(super::options::foreign("fq_codel")),
        }
    }

    /// An fq_codel qdisc with the defaults changed by `o` (`fq_codel_init`).
    pub fn with_options(ctx: QdiscCtx, o: &FqCodelOptions) -> Result<Self, TcError> {
        let mut q = FqCodel::new(ctx);
        if let Some(flows) = o.flows {
            if flows > MAX_FLOWS {
                return Err(TcError::new(format!(
                    "RTNETLINK answers: Invalid argument (flows {flows}: allowed 1..{MAX_FLOWS})"
                )));
            }
            q.flows = (0..flows).map(|_| Flow::new()).collect();
            q.backlogs = vec![0; flows as usize];
            q.info = (0..flows).map(|_| FlowInfo::default()).collect();
        }
        q.apply(o)?;
        Ok(q)
    }

    /// Validates then applies `o` (nothing changes on error).
    fn apply(&mut self, o: &FqCodelOptions) -> Result<(), TcError> {
        if let Some(qu) = o.quantum {
            if qu > QUANTUM_MAX {
                return Err(TcError::new(format!(
                    "Error: Invalid quantum. (quantum {qu}: allowed up to {QUANTUM_MAX} bytes)"
                )));
            }
        }
        if let Some(v) = o.limit {
            self.limit = v;
        }
        if let Some(v) = o.quantum {
            self.quantum = v.max(QUANTUM_MIN);
        }
        if let Some(v) = o.target {
            self.params.target = us_to_codel(v.into());
        }
        if let Some(v) = o.interval {
            self.params.interval = us_to_codel(v.into());
        }
        if let Some(v) = o.ecn {
            self.params.ecn = v;
        }
        if let Some(v) = o.ce_threshold {
            self.params.ce_threshold = us_to_codel(v.into());
        }
        if let Some(v) = o.ce_threshold_selector {
            self.params.ce_threshold_selector = v;
        }
        if let Some(v) = o.ce_threshold_mask {
            self.params.ce_threshold_mask = v;
        }
        if let Some(v) = o.memory_limit {
            self.memory_limit = v.min(1 << 31);
        }
        if let Some(v) = o.drop_batch_size {
            self.drop_batch = v.max(1);
        }
        Ok(())
    }

    /// The options as `fq_codel_dump` sends them.
    pub fn options(&self) -> FqCodelOptions {
        let p = &self.params;
        let selected = p.ce_threshold_mask != 0;
        FqCodelOptions {
            target: Some(codel_to_us(p.target) as u32),
            limit: Some(self.limit),
            interval: Some(codel_to_us(p.interval) as u32),
            ecn: Some(p.ecn),
            flows: Some(self.flows_cnt()),
            quantum: Some(self.quantum),
            ce_threshold: (p.ce_threshold != CODEL_DISABLED_THRESHOLD)
                .then(|| codel_to_us(p.ce_threshold) as u32),
            drop_batch_size: Some(self.drop_batch),
            memory_limit: Some(self.memory_limit),
            ce_threshold_selector: selected.then_some(p.ce_threshold_selector),
            ce_threshold_mask: selected.then_some(p.ce_threshold_mask),
        }
    }

    /// The number of buckets.
    pub fn flows_cnt(&self) -> u32 {
        self.flows.len() as u32
    }

    /// Memory charged for queued frames (truesize model), bytes.
    pub fn memory_usage(&self) -> u64 {
        self.memory_usage
    }

    /// The bucket of a frame (`fq_codel_classify`, `super::flow_bucket`):
    /// without priority or filters steering it, the top bits of the keyed
    /// flow hash. `None`: filters are attached and none placed it.
    pub fn classify(&self, pkt: &mut Packet) -> Option<usize> {
        let flows = self.flows_cnt();
        super::flow_bucket(self.handle, &self.filters, pkt, flows, |pkt| {
            let hash = keyed_flow_hash(pkt.meta.hash, self.hash_key);
            ((hash as u64 * flows as u64) >> 32) as usize
        })
    }

    /// `fq_codel_drop`: drops from the head of the fattest flow up to
    /// `drop_batch` frames or half its bytes. Returns the bucket and whether
    /// `arriving` (a bucket) lost its newest frame (the one just queued).
    fn drop_fattest(
        &mut self,
        arriving: usize,
        memory_limited: bool,
        drops: &mut Drops,
    ) -> (usize, bool) {
        let mut idx = arriving;
        let mut max = 0;
        for (i, &b) in self.backlogs.iter().enumerate() {
            if b > max {
                max = b;
                idx = i;
            }
        }
        let reason = if memory_limited {
            DropReason::FqCodelMemory
        } else {
            DropReason::FqCodelOverlimit
        };
        let threshold = max >> 1;
        let flow = &mut self.flows[idx];
        let held = flow.queue.len();
        let mut len = 0u64;
        let mut n = 0u32;
        while let Some(p) = flow.queue.pop_front() {
            len += p.len as u64;
            self.memory_usage -= truesize(p.len) as u64;
            n += 1;
            drops.push(p, reason);
            if n >= self.drop_batch || len >= threshold {
                break;
            }
        }
        flow.cvars.count = flow.cvars.count.wrapping_add(n);
        self.backlogs[idx] -= len;
        self.info[idx].drops += n as u64;
        self.backlog -= len;
        self.qlen -= n;
        self.stats.drops += n as u64;
        self.drop_overlimit += n as u64;
        if memory_limited {
            self.drop_overmemory += n as u64;
        }
        (idx, n as usize == held && held > 0)
    }

    /// The DRR + CoDel dequeue (`fq_codel_dequeue`) without Sent counting.
    fn dequeue_inner(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        loop {
            let (idx, from_new) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (i as usize, true),
                (None, Some(&i)) => (i as usize, false),
                (None, None) => return None,
            };
            let flow = &mut self.flows[idx];
            if flow.deficit <= 0 {
                flow.deficit += self.quantum as i32;
                self.pop_list_head(from_new);
                self.flows[idx].list = ListTag::Old;
                self.old_flows.push_back(idx as u32);
                continue;
            }
            let drops_before = self.cstats.drop_count;
            let marks_before = self.cstats.ecn_mark + self.cstats.ce_mark;
            let mut fq = FlowQueue {
                queue: &mut flow.queue,
                flow_backlog: &mut self.backlogs[idx],
                qlen: &mut self.qlen,
                backlog: &mut self.backlog,
                memory_usage: &mut self.memory_usage,
            };
            let pkt = flow
                .cvars
                .dequeue(&mut fq, &self.params, &mut self.cstats, now, drops);
            let dropped = self.cstats.drop_count - drops_before;
            let marked = self.cstats.ecn_mark + self.cstats.ce_mark - marks_before;
            let info = &mut self.info[idx];
            info.drops += dropped;
            info.ecn_marks += marked;
            self.stats.drops += dropped;
            match pkt {
                Some(p) => {
                    flow.deficit = flow
                        .deficit
                        .saturating_sub(p.len.min(i32::MAX as u32) as i32);
                    info.sent_bytes += p.len as u64;
                    return Some(p);
                }
                None => {
                    self.pop_list_head(from_new);
                    if from_new && !self.old_flows.is_empty() {
                        self.flows[idx].list = ListTag::Old;
                        self.old_flows.push_back(idx as u32);
                    } else {
                        self.flows[idx].list = ListTag::None;
                    }
                }
            }
        }
    }

    fn pop_list_head(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }

    fn total_qlen(&self) -> u32 {
        self.qlen + self.parked.is_some() as u32
    }

    /// The queues of `list` (new_flows or old_flows) as `drr_ahead` runs
    /// them.
    fn drr_queues<'a>(&'a self, list: &'a VecDeque<u32>) -> impl Iterator<Item = DrrQueue<'a>> {
        list.iter()
            .filter_map(|&i| Some((i, self.flows.get(i as usize)?)))
            .map(|(i, f)| DrrQueue {
                id: i,
                deficit: i64::from(f.deficit),
                frames: &f.queue,
            })
    }

    fn class_dump(&self, idx: usize, now: Instant) -> ClassDump {
        let flow = &self.flows[idx];
        let v = &flow.cvars;
        // fq_codel_dump_class_stats: drop_next only while dropping.
        let xstats = FqCodelClassXstats {
            deficit: flow.deficit,
            ldelay_us: codel_to_us(v.ldelay),
            count: v.count,
            lastcount: v.lastcount,
            dropping: v.dropping,
            drop_next_us: if v.dropping { v.drop_next_us(now) } else { 0 },
        };
        ClassDump {
            kind: "fq_codel".into(),
            classid: self.handle | (idx as u32 + 1),
            parent: self.handle,
            leaf: None,
            stats: None,
            queue: QdiscStats {
                backlog: self.backlogs[idx],
                qlen: flow.queue.len() as u32,
                ..QdiscStats::default()
            },
            xstats: Some(Xstats::FqCodelClass(xstats)),
            ..ClassDump::default()
        }
    }

    fn flow_dump(&self, idx: usize, now: Instant) -> FlowDump {
        let (flow, info) = (&self.flows[idx], &self.info[idx]);
        FlowDump {
            bucket: idx as u32,
            flow: info.key,
            backlog: self.backlogs[idx],
            qlen: flow.queue.len() as u32,
            head_sojourn_ns: flow
                .queue
                .front()
                .map_or(0, |p| now.saturating_since(p.meta.enqueue_time)),
            deficit: flow.deficit as i64,
            codel_count: flow.cvars.count,
            codel_dropping: flow.cvars.dropping,
            drops: info.drops,
            ecn_marks: info.ecn_marks,
            sent_bytes: info.sent_bytes,
            hash: super::dump::flow_queue_hash(flow.queue.front(), info.key),
            traffic: None,
            ahead: None,
        }
    }
}

impl ParkOnPeek for FqCodel {
    fn parked_slot(&mut self) -> &mut Option<Packet> {
        &mut self.parked
    }
    fn sent_stats(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }
    fn dequeue_next(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.dequeue_inner(now, drops)
    }
}

impl FilterHost for FqCodel {
    fn filter_qdisc(&self) -> Handle {
        self.handle
    }

    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, TcError> {
        super::own_chain(&mut self.filters, "fq_codel", parent)
    }
}

impl Qdisc for FqCodel {
    fn kind(&self) -> &'static str {
        "fq_codel"
    }

    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        let Some(idx) = self.classify(&mut pkt) else {
            return self.stats.reject(pkt, DropReason::Unclassified, drops);
        };
        pkt.meta.enqueue_time = now;
        let len = pkt.len;
        self.info[idx].key = Some(pkt.meta.flow);
        self.backlogs[idx] += len as u64;
        let flow = &mut self.flows[idx];
        flow.queue.push_back(pkt);
        self.backlog += len as u64;
        if flow.list == ListTag::None {
            flow.list = ListTag::New;
            flow.deficit = self.quantum as i32;
            self.new_flows.push_back(idx as u32);
            self.new_flow_count += 1;
        }
        self.memory_usage += truesize(len) as u64;
        self.qlen += 1;
        let memory_limited = self.memory_usage > self.memory_limit as u64;
        if self.total_qlen() <= self.limit && !memory_limited {
            return Verdict::Queued;
        }
        let (fattest, own_lost) = self.drop_fattest(idx, memory_limited, drops);
        match (fattest == idx, own_lost) {
            (true, true) => Verdict::Dropped,
            (true, false) => Verdict::Congested,
            _ => Verdict::Queued,
        }
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.dequeue_parked_first(now, drops)
    }

    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        self.peek_parking(now, drops)
    }

    fn qlen(&self) -> u32 {
        self.total_qlen()
    }

    fn backlog(&self) -> u64 {
        self.backlog + self.parked.as_ref().map_or(0, |p| p.len as u64)
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    fn can_bypass(&self) -> bool {
        self.limit >= 1
    }

    fn count_bypass(&mut self, pkt: &Packet) {
        self.stats.count_sent(pkt);
    }

    fn reset(&mut self, drops: &mut Drops) {
        drop_all_held(self, drops);
        for f in &mut self.flows {
            f.cvars = CodelVars::default();
            f.deficit = 0;
        }
    }

    fn change(
        &mut self,
        options: &QdiscOptions,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<(), TcError> {
        let o = match options {
            QdiscOptions::None => &FqCodelOptions::default(),
            QdiscOptions::FqCodel(o) => o,
            _ => return Err(super::options::foreign("fq_codel")),
        };
        if let Some(f) = o.flows {
            return Err(TcError::new(format!(
                "RTNETLINK answers: Invalid argument (flows {f}: the number of flows can only be set when the qdisc is created; delete and re-add it)"
            )));
        }
        self.apply(o)?;
        while self.total_qlen() > self.limit || self.memory_usage > self.memory_limit as u64 {
            let p = match self.parked.take() {
                Some(p) => p,
                None => match self.dequeue_inner(now, drops) {
                    Some(p) => p,
                    None => break,
                },
            };
            self.stats.count_drop(p, DropReason::QdiscReset, drops);
        }
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let xstats = FqCodelXstats {
            maxpacket: self.cstats.maxpacket,
            drop_overlimit: self.drop_overlimit,
            ecn_mark: self.cstats.ecn_mark,
            new_flow_count: self.new_flow_count,
            new_flows_len: self.new_flows.len() as u32,
            old_flows_len: self.old_flows.len() as u32,
            ce_mark: self.cstats.ce_mark,
            memory_usage: self.memory_usage,
            drop_overmemory: self.drop_overmemory,
        };
        // The listed flows are exactly those on new_flows and old_flows:
        // walking the lists costs the active flows, not all the buckets.
        let active = self
            .new_flows
            .iter()
            .chain(&self.old_flows)
            .map(|&i| i as usize)
            .filter(|&i| i < self.flows.len())
            .map(|i| self.flow_dump(i, now));
        let (mut flows, classes, other_flows) =
            list_flows(listing, active, |b| self.class_dump(b as usize, now));
        let mut listed: Vec<u32> = flows.iter().map(|f| f.bucket).collect();
        listed.sort_unstable();
        let mut ahead = drr_ahead(
            self.quantum,
            self.parked.as_ref(),
            self.drr_queues(&self.new_flows),
            self.drr_queues(&self.old_flows),
            &listed,
        );
        for f in &mut flows {
            f.ahead = ahead.take(f.bucket, f.qlen);
        }
        QdiscDump {
            kind: "fq_codel".into(),
            handle: self.handle,
            parent: self.parent,
            options: QdiscOptions::FqCodel(self.options()),
            stats: self.stats(),
            xstats: Some(Xstats::FqCodel(xstats)),
            classes,
            children: Vec::new(),
            flows,
            other_flows,
            occupancy: QueueOccupancy::parked(self.parked.as_ref(), now),
        }
    }

    fn as_filter_host(&mut self) -> Option<&mut dyn FilterHost> {
        Some(self)
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        let mut out: Vec<Packet> = self.parked.take().into_iter().collect();
        let order: Vec<u32> = self
            .new_flows
            .drain(..)
            .chain(self.old_flows.drain(..))
            .collect();
        for idx in order {
            let f = &mut self.flows[idx as usize];
            out.extend(f.queue.drain(..));
            f.list = ListTag::None;
        }
        // Frames can only sit in listed flows, but be thorough.
        for f in &mut self.flows {
            out.extend(f.queue.drain(..));
        }
        self.backlogs.fill(0);
        self.qlen = 0;
        self.backlog = 0;
        self.memory_usage = 0;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::L3;
    use crate::qdisc::tc_h_make;
    use crate::qdisc::testutil::flow_pkt;
    use crate::time::NS_PER_MS;
    use crate::units::sprint_time;

    fn ctx() -> QdiscCtx {
        QdiscCtx::default()
    }

    /// A frame steered into `bucket` by `skb->priority = 8001:(bucket+1)`.
    fn bpkt(id: u64, len: u32, bucket: u16) -> Packet {
        let mut p = flow_pkt(id, len, bucket);
        p.meta.priority = tc_h_make(0x8001, bucket + 1);
        p
    }

    /// The same with an IPv4 header carrying ECN bits `ecn`.
    fn ect_bpkt(id: u64, len: u32, bucket: u16, ecn: u8) -> Packet {
        let mut p = bpkt(id, len, bucket);
        let mut data = vec![0u8; 34];
        data[14] = 0x45;
        data[15] = ecn;
        p.data = data;
        p.meta.l3 = L3::Ipv4 { offset: 14 };
        p.meta.dsfield = ecn;
        p
    }

    fn ms(t: u64) -> Instant {
        Instant::from_millis(t)
    }

    /// The qdisc's xstats in a dump at `now`.
    fn qd_xstats(q: &FqCodel, now: Instant) -> FqCodelXstats {
        match q.dump(now).xstats {
            Some(Xstats::FqCodel(x)) => x,
            other => panic!("{other:?}"),
        }
    }

    /// `(new_flows_len, old_flows_len)` in a dump at `now`.
    fn lists_len(q: &FqCodel, now: Instant) -> (u32, u32) {
        let x = qd_xstats(q, now);
        (x.new_flows_len, x.old_flows_len)
    }

    fn ids(q: &mut FqCodel, n: usize, now: Instant, d: &mut Drops) -> Vec<u64> {
        (0..n)
            .filter_map(|_| q.dequeue(now, d))
            .map(|p| p.meta.id)
            .collect()
    }

    /// The options `o` on top of the defaults.
    fn fq(o: FqCodelOptions) -> FqCodel {
        FqCodel::with_options(ctx(), &o).unwrap()
    }

    /// No options given.
    fn none() -> FqCodelOptions {
        FqCodelOptions::default()
    }

    #[test]
    fn f1_default_dump() {
        let q = FqCodel::build(ctx(), &QdiscOptions::None).unwrap();
        let d = q.dump(Instant::ZERO);
        assert_eq!(
            d.options,
            QdiscOptions::FqCodel(FqCodelOptions {
                target: Some(4999),
                limit: Some(10240),
                interval: Some(99999),
                ecn: Some(true),
                flows: Some(1024),
                quantum: Some(1514),
                ce_threshold: None,
                drop_batch_size: Some(64),
                memory_limit: Some(33554432),
                ce_threshold_selector: None,
                ce_threshold_mask: None,
            })
        );
        assert_eq!(d.xstats, Some(Xstats::FqCodel(FqCodelXstats::default())));
        assert!(d.classes.is_empty());
        assert!(q.can_bypass());
    }

    #[test]
    fn options_apply_and_validate() {
        let q = fq(FqCodelOptions {
            limit: Some(100),
            flows: Some(16),
            quantum: Some(300),
            target: Some(2000),
            interval: Some(20_000),
            ecn: Some(false),
            ce_threshold: Some(4000),
            ce_threshold_selector: Some(1),
            ce_threshold_mask: Some(3),
            memory_limit: Some(1 << 20),
            drop_batch_size: None,
        });
        assert_eq!(
            q.options(),
            FqCodelOptions {
                limit: Some(100),
                flows: Some(16),
                quantum: Some(300),
                target: Some(1999),
                interval: Some(19999),
                ecn: Some(false),
                ce_threshold: Some(3999),
                ce_threshold_selector: Some(1),
                ce_threshold_mask: Some(3),
                memory_limit: Some(1 << 20),
                drop_batch_size: Some(64),
            }
        );
        // quantum below 256 is raised; memory_limit capped at 2^31.
        let q = fq(FqCodelOptions {
            quantum: Some(100),
            memory_limit: Some(u32::MAX),
            ..none()
        });
        assert_eq!(q.quantum, 256);
        assert_eq!(q.memory_limit, 1 << 31);
        // drop_batch 0 is raised to 1 (`fq_codel_change`: max(1U, ..)).
        let q = fq(FqCodelOptions {
            drop_batch_size: Some(0),
            ..none()
        });
        assert_eq!(q.drop_batch, 1);
        let e = FqCodel::with_options(
            ctx(),
            &FqCodelOptions {
                quantum: Some(2_000_000),
                ..none()
            },
        )
        .err()
        .unwrap();
        assert!(e.0.starts_with("Error: Invalid quantum."), "{e}");
        let e = FqCodel::with_options(
            ctx(),
            &FqCodelOptions {
                flows: Some(70000),
                ..none()
            },
        )
        .err()
        .unwrap();
        assert!(e.0.contains("flows 70000"), "{e}");
        let e = FqCodel::build(ctx(), &QdiscOptions::Sfq(Default::default()))
            .err()
            .unwrap();
        assert!(e.0.contains("fq_codel"), "{e}");
    }

    #[test]
    fn f3_drr_order() {
        let mut q = FqCodel::new(ctx());
        let mut d = Drops::new();
        for i in 0..10 {
            q.enqueue(bpkt(100 + i, 1500, 0), ms(0), &mut d);
        }
        for i in 0..10 {
            q.enqueue(bpkt(200 + i, 100, 1), ms(0), &mut d);
        }
        let order: String = ids(&mut q, 20, ms(0), &mut d)
            .iter()
            .map(|id| if *id < 200 { 'A' } else { 'B' })
            .collect();
        assert_eq!(order, "AABBBBBBBBBBAAAAAAAA");
        assert!(d.is_empty());
        assert_eq!(q.stats().packets, 20);
    }

    #[test]
    fn byte_fairness_between_big_and_small_packets() {
        let mut q = FqCodel::new(ctx());
        let mut d = Drops::new();
        let (mut a_bytes, mut b_bytes) = (0u64, 0u64);
        let mut id = 0;
        for _ in 0..20_000 {
            while q.flows[0].queue.len() < 5 {
                q.enqueue(bpkt(id, 1500, 0), ms(0), &mut d);
                id += 1;
            }
            while q.flows[1].queue.len() < 5 {
                q.enqueue(bpkt(id, 100, 1), ms(0), &mut d);
                id += 1;
            }
            let p = q.dequeue(ms(0), &mut d).unwrap();
            if p.len == 1500 {
                a_bytes += 1500;
            } else {
                b_bytes += 100;
            }
        }
        let share = a_bytes as f64 / (a_bytes + b_bytes) as f64;
        assert!((share - 0.5).abs() < 0.01, "share {share}");
    }

    #[test]
    fn sparse_flow_is_served_next() {
        let mut q = FqCodel::new(ctx());
        let mut d = Drops::new();
        for i in 0..20 {
            q.enqueue(bpkt(i, 1500, 0), ms(0), &mut d);
            q.enqueue(bpkt(100 + i, 1500, 1), ms(0), &mut d);
        }
        ids(&mut q, 6, ms(0), &mut d);
        assert_eq!(lists_len(&q, ms(0)), (0, 2));
        q.enqueue(bpkt(999, 84, 7), ms(0), &mut d);
        assert_eq!(q.dequeue(ms(0), &mut d).unwrap().meta.id, 999);
    }

    #[test]
    fn new_flow_priority_lasts_one_quantum() {
        let mut q = FqCodel::new(ctx());
        let mut d = Drops::new();
        for i in 0..10 {
            q.enqueue(bpkt(i, 1500, 0), ms(0), &mut d);
        }
        ids(&mut q, 3, ms(0), &mut d); // A is now on the old list.
        for i in 0..5 {
            q.enqueue(bpkt(100 + i, 1000, 3), ms(0), &mut d);
        }
        // C: 1514 → 514 → -486: one quantum spent, it moves to the old
        // list (+1514) and from then on takes DRR turns with A.
        assert_eq!(ids(&mut q, 2, ms(0), &mut d), vec![100, 101]);
        assert_eq!(lists_len(&q, ms(0)), (1, 1));
        assert_eq!(ids(&mut q, 1, ms(0), &mut d), vec![102]);
        assert_eq!(lists_len(&q, ms(0)), (0, 2));
        assert_eq!(ids(&mut q, 3, ms(0), &mut d), vec![103, 3, 104]);
    }

    #[test]
    fn emptied_new_flow_parks_in_old_list() {
        let mut q = FqCodel::new(ctx());
        let mut d = Drops::new();
        for i in 0..30 {
            q.enqueue(bpkt(i, 100, 0), ms(0), &mut d);
        }
        // 16 frames use A's first quantum; the 17th rotates A to the old list
        // with a fresh quantum (1428 → 1328 left).
        ids(&mut q, 17, ms(0), &mut d);
        q.enqueue(bpkt(500, 100, 5), ms(0), &mut d);
        assert_eq!(q.new_flow_count, 2);
        assert_eq!(q.dequeue(ms(0), &mut d).unwrap().meta.id, 500);
        // Next dequeue finds C empty at the head of new_flows: parked at the
        // tail of old_flows, not removed; A (positive deficit) sends.
        assert_eq!(q.dequeue(ms(0), &mut d).unwrap().meta.id, 17);
        assert_eq!(lists_len(&q, ms(0)), (0, 2));
        assert_eq!(q.dump(ms(0)).classes.len(), 2);
        // A packet for C now gets no new-flow priority and no new_flow_count.
        q.enqueue(bpkt(501, 100, 5), ms(0), &mut d);
        assert_eq!(q.new_flow_count, 2);
        assert_eq!(q.dequeue(ms(0), &mut d).unwrap().meta.id, 18);
    }

    #[test]
    fn overflow_drops_from_fattest_flow_head() {
        let mut q = fq(FqCodelOptions {
            limit: Some(10),
            ..none()
        });
        let mut d = Drops::new();
        for i in 0..8 {
            assert_eq!(q.enqueue(bpkt(i, 1000, 0), ms(0), &mut d), Verdict::Queued);
        }
        q.enqueue(bpkt(100, 1000, 1), ms(0), &mut d);
        q.enqueue(bpkt(101, 1000, 1), ms(0), &mut d);
        // 11th frame: A holds 8000 B, threshold 4000 → 4 head drops.
        assert_eq!(
            q.enqueue(bpkt(102, 1000, 1), ms(0), &mut d),
            Verdict::Queued
        );
        let dropped: Vec<u64> = d.since(0).iter().map(|(p, _)| p.meta.id).collect();
        assert_eq!(dropped, vec![0, 1, 2, 3]);
        assert!(d
            .since(0)
            .iter()
            .all(|(_, r)| *r == DropReason::FqCodelOverlimit));
        assert_eq!(q.flows[0].cvars.count, 4);
        assert_eq!(q.qlen(), 7);
        assert_eq!(q.backlog(), 7000);
        assert_eq!(q.stats().drops, 4);
        assert_eq!(qd_xstats(&q, ms(0)).drop_overlimit, 4);
        // Arriving into the fattest flow: NET_XMIT_CN.
        for i in 0..3 {
            q.enqueue(bpkt(10 + i, 1000, 0), ms(0), &mut d);
        }
        assert_eq!(
            q.enqueue(bpkt(20, 1000, 0), ms(0), &mut d),
            Verdict::Congested
        );
        assert_eq!(q.qlen(), 7);
        assert_eq!(q.flows[0].queue.back().unwrap().meta.id, 20);
    }

    #[test]
    fn drop_batch_caps_overflow_drops() {
        let mut q = fq(FqCodelOptions {
            limit: Some(20),
            drop_batch_size: Some(2),
            ..none()
        });
        let mut d = Drops::new();
        for i in 0..21 {
            q.enqueue(bpkt(i, 100, 0), ms(0), &mut d);
        }
        assert_eq!(d.len(), 2);
        assert_eq!(q.qlen(), 19);
    }

    #[test]
    fn limit_zero_drops_everything_and_disables_bypass() {
        let mut q = FqCodel::new(ctx());
        q.limit = 0;
        assert!(!q.can_bypass());
        let mut d = Drops::new();
        assert_eq!(q.enqueue(bpkt(1, 100, 0), ms(0), &mut d), Verdict::Dropped);
        assert_eq!(q.qlen(), 0);
        assert_eq!(q.memory_usage(), 0);
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn memory_limit_drops() {
        assert_eq!(truesize(1514), 2304);
        assert_eq!(truesize(64), 768);
        let mut q = fq(FqCodelOptions {
            memory_limit: Some(10000),
            ..none()
        });
        let mut d = Drops::new();
        for i in 0..4 {
            q.enqueue(bpkt(i, 1514, 0), ms(0), &mut d);
        }
        assert!(d.is_empty());
        q.enqueue(bpkt(4, 1514, 1), ms(0), &mut d);
        assert_eq!(d.len(), 2, "half of flow 0's 6056 B = 2 frames");
        assert!(d
            .since(0)
            .iter()
            .all(|(_, r)| *r == DropReason::FqCodelMemory));
        let x = qd_xstats(&q, ms(0));
        assert_eq!(
            (x.ecn_mark, x.ce_mark, x.memory_usage, x.drop_overmemory),
            (0, 0, 6912, 2),
            "{x:?}"
        );
        assert_eq!(x.drop_overlimit, 2);
    }

    /// A standing queue of `n` frames with 10 ms sojourn in bucket 0,
    /// dequeued every ms for `dur` ms.
    fn standing(q: &mut FqCodel, ecn: u8, dur: u64, d: &mut Drops) -> u64 {
        let mut id = 0;
        let mut delivered = 0;
        for t in 20..20 + dur {
            while q.flows[0].queue.len() < 4 {
                let enq = Instant::from_nanos(t * NS_PER_MS - 10 * NS_PER_MS);
                q.enqueue(ect_bpkt(id, 1514, 0, ecn), enq, d);
                id += 1;
            }
            // Re-stamp so every head has exactly 10 ms sojourn.
            for p in q.flows[0].queue.iter_mut() {
                p.meta.enqueue_time = Instant::from_nanos(t * NS_PER_MS - 10 * NS_PER_MS);
            }
            if q.dequeue(ms(t), d).is_some() {
                delivered += 1;
            }
        }
        delivered
    }

    #[test]
    fn ecn_marks_instead_of_drops() {
        let mut q = FqCodel::new(ctx());
        let mut d = Drops::new();
        standing(&mut q, 2, 500, &mut d);
        assert!(d.is_empty());
        assert!(q.cstats.ecn_mark >= 8);
        assert_eq!(qd_xstats(&q, ms(520)).ecn_mark, q.cstats.ecn_mark);
        assert_eq!(q.info[0].ecn_marks, q.cstats.ecn_mark);

        // Not-ECT frames are dropped.
        let mut q = FqCodel::new(ctx());
        let mut d = Drops::new();
        standing(&mut q, 0, 500, &mut d);
        assert!(d.len() >= 8);
        assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::Codel));
        assert_eq!(q.stats().drops as usize, d.len());
        assert_eq!(q.cstats.ecn_mark, 0);

        // noecn: ECT frames are dropped too.
        let mut q = fq(FqCodelOptions {
            ecn: Some(false),
            ..none()
        });
        let mut d = Drops::new();
        standing(&mut q, 2, 500, &mut d);
        assert!(d.len() >= 8);
    }

    /// CoDel's "backlog ≤ one MTU: never drop" test uses the qdisc-wide
    /// backlog in fq_codel (net/sched/sch_fq_codel.c `fq_codel_dequeue` passes
    /// `sch->qstats.backlog` to include/net/codel_impl.h `codel_dequeue`, whose
    /// `codel_should_drop` tests it): flow A only ever holds one old frame; it
    /// is dropped only when other flows make the qdisc-wide backlog exceed one
    /// MTU.
    fn lone_old_frame_drops(with_bulk: bool) -> (u64, u64) {
        let mut q = fq(FqCodelOptions {
            ecn: Some(false),
            ..none()
        });
        let mut d = Drops::new();
        let mut id = 0;
        for t in 30..600u64 {
            let now = ms(t);
            if q.flows[0].queue.is_empty() {
                q.enqueue(bpkt(id, 1514, 0), ms(t - 20), &mut d);
                id += 1;
            }
            if with_bulk {
                while q.flows[1].queue.len() < 4 {
                    q.enqueue(bpkt(id, 1514, 1), now, &mut d);
                    id += 1;
                }
                for p in q.flows[1].queue.iter_mut() {
                    p.meta.enqueue_time = now;
                }
            }
            q.dequeue(now, &mut d);
        }
        (q.info[0].drops, q.info[1].drops)
    }

    #[test]
    fn codel_mtu_test_uses_qdisc_backlog() {
        assert_eq!(lone_old_frame_drops(false), (0, 0));
        let (a, b) = lone_old_frame_drops(true);
        assert!(a > 0, "flow A dropped {a}");
        assert_eq!(b, 0);
    }

    #[test]
    fn f6_class_dump_while_dropping() {
        let mut q = FqCodel::new(ctx());
        let mut d = Drops::new();
        // A constant 10 ms sojourn with a dequeue every 1 ms (as in
        // codel::tests::c3_drop_times), steered into bucket 0x3b0.
        let mut id = 0;
        for t in 20..400u64 {
            while q.flows[0x3b0].queue.len() < 4 {
                let enq = Instant::from_nanos(t * NS_PER_MS - 10 * NS_PER_MS);
                q.enqueue(bpkt(id, 1514, 0x3b0), enq, &mut d);
                id += 1;
            }
            for p in q.flows[0x3b0].queue.iter_mut() {
                p.meta.enqueue_time = Instant::from_nanos(t * NS_PER_MS - 10 * NS_PER_MS);
            }
            q.dequeue(ms(t), &mut d);
        }
        let dump = q.dump(ms(400));
        assert_eq!(dump.classes.len(), 1);
        let c = &dump.classes[0];
        assert_eq!(c.classid, 0x8001_03b1);
        assert_eq!(c.parent, 0x8001_0000);
        assert!(c.stats.is_none());
        assert_eq!((c.queue.qlen, c.queue.backlog), (3, 3 * 1514));
        // Drops at 121, 221, 271, 328, 377 ms (the c3_drop_times schedule
        // shifted by 20 ms): count 5.
        assert_eq!(d.len(), 5);
        let Some(Xstats::FqCodelClass(x)) = c.xstats else {
            panic!("{:?}", c.xstats)
        };
        assert!(
            (x.count, x.lastcount, x.dropping) == (5, 1, true)
                && sprint_time(x.ldelay_us) == "10ms",
            "{x:?}"
        );
        assert_eq!(dump.flows.len(), 1);
        assert_eq!(dump.flows[0].bucket, 0x3b0);
        assert!(dump.flows[0].codel_dropping);
        assert_eq!(dump.flows[0].drops, 5);
    }

    #[test]
    fn peek_parks_frame_and_counts_it() {
        let mut q = FqCodel::new(ctx());
        let mut d = Drops::new();
        q.enqueue(bpkt(1, 500, 0), ms(0), &mut d);
        q.enqueue(bpkt(2, 500, 1), ms(0), &mut d);
        assert_eq!(q.peek(ms(0), &mut d).unwrap().meta.id, 1);
        assert_eq!(q.peek(ms(0), &mut d).unwrap().meta.id, 1);
        assert_eq!((q.qlen(), q.backlog()), (2, 1000));
        assert_eq!(q.stats().packets, 0);
        assert_eq!(q.dequeue(ms(0), &mut d).unwrap().meta.id, 1);
        assert_eq!(q.stats().packets, 1);
        assert_eq!(q.dequeue(ms(0), &mut d).unwrap().meta.id, 2);
        assert!(q.dequeue(ms(0), &mut d).is_none());
    }

    #[test]
    fn classify_by_priority_and_hash() {
        let q = FqCodel::new(ctx());
        assert_eq!(q.classify(&mut bpkt(1, 100, 5)), Some(5));
        // Out-of-range minor or a foreign major falls back to the hash.
        let mut p = flow_pkt(1, 100, 3);
        p.meta.priority = tc_h_make(0x8001, 2000);
        assert!(q.classify(&mut p).unwrap() < 1024);
        p.meta.priority = tc_h_make(0x1, 1);
        let h = q.classify(&mut p);
        p.meta.priority = 0;
        assert_eq!(q.classify(&mut p), h);
        // Many flows spread over many buckets.
        let buckets: std::collections::HashSet<usize> = (0..200)
            .map(|f| q.classify(&mut flow_pkt(0, 100, f)).unwrap())
            .collect();
        assert!(buckets.len() > 150);
        // A handle-0 instance treats priority 1..flows as a bucket.
        let q0 = FqCodel::new(QdiscCtx { handle: 0, ..ctx() });
        let mut p = flow_pkt(1, 100, 3);
        p.meta.priority = 6;
        assert_eq!(q0.classify(&mut p), Some(5));
    }

    #[test]
    fn change_at_runtime() {
        let mut q = FqCodel::new(ctx());
        let mut d = Drops::new();
        for i in 0..10 {
            q.enqueue(bpkt(i, 1000, 0), ms(0), &mut d);
            q.enqueue(bpkt(100 + i, 1000, 1), ms(0), &mut d);
        }
        let e = q
            .change(
                &QdiscOptions::FqCodel(FqCodelOptions {
                    flows: Some(2048),
                    ..none()
                }),
                ms(0),
                &mut d,
            )
            .err()
            .unwrap();
        assert!(e.0.contains("only be set when the qdisc is created"));
        let e = q
            .change(
                &QdiscOptions::FqCodel(FqCodelOptions {
                    limit: Some(5),
                    quantum: Some(9999999),
                    ..none()
                }),
                ms(0),
                &mut d,
            )
            .err()
            .unwrap();
        assert!(e.0.contains("Invalid quantum"));
        assert_eq!(q.limit, 10240, "a failed change leaves the qdisc untouched");
        // Lower the limit: drops in dequeue order (DRR: A A B B ...).
        q.change(
            &QdiscOptions::FqCodel(FqCodelOptions {
                limit: Some(16),
                quantum: Some(2000),
                ..none()
            }),
            ms(0),
            &mut d,
        )
        .unwrap();
        assert_eq!(q.qlen(), 16);
        let dropped: Vec<u64> = d.since(0).iter().map(|(p, _)| p.meta.id).collect();
        assert_eq!(dropped, vec![0, 1, 100, 101]);
        assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::QdiscReset));
        assert_eq!(q.stats().drops, 4);
        let o = q.options();
        assert_eq!(
            (o.limit, o.flows, o.quantum),
            (Some(16), Some(1024), Some(2000))
        );
        // Lower memory_limit.
        q.change(
            &QdiscOptions::FqCodel(FqCodelOptions {
                memory_limit: Some(20000),
                ..none()
            }),
            ms(0),
            &mut d,
        )
        .unwrap();
        assert!(q.memory_usage() <= 20000);
        assert_eq!(q.qlen() as u64 * truesize(1000) as u64, q.memory_usage());
        // Target/interval/ecn switch without disturbing the queue.
        let before = q.qlen();
        q.change(
            &QdiscOptions::FqCodel(FqCodelOptions {
                target: Some(1000),
                ecn: Some(false),
                ..none()
            }),
            ms(0),
            &mut d,
        )
        .unwrap();
        assert_eq!(q.qlen(), before);
        assert_eq!(q.options().ecn, Some(false));
    }

    #[test]
    fn reset_and_drain() {
        let mut q = FqCodel::new(ctx());
        let mut d = Drops::new();
        for i in 0..6 {
            q.enqueue(bpkt(i, 100, (i % 3) as u16), ms(0), &mut d);
        }
        q.peek(ms(0), &mut d);
        let drained = q.drain_all();
        assert_eq!(drained.len(), 6);
        assert_eq!(drained[0].meta.id, 0);
        assert_eq!((q.qlen(), q.backlog(), q.memory_usage()), (0, 0, 0));
        assert!(q.dump(ms(0)).classes.is_empty());
        for i in 0..4 {
            q.enqueue(bpkt(i, 100, 0), ms(0), &mut d);
        }
        q.reset(&mut d);
        assert_eq!(d.len(), 4);
        assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::QdiscReset));
        assert_eq!(q.qlen(), 0);
        // Usable again afterwards.
        q.enqueue(bpkt(9, 100, 0), ms(0), &mut d);
        assert_eq!(q.dequeue(ms(0), &mut d).unwrap().meta.id, 9);
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        #[derive(Clone, Debug)]
        enum Op {
            Enq { bucket: u16, len: u32, ecn: u8 },
            Deq,
            Peek,
            Wait(u64),
            Change(u32),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                4 => (0u16..6, 60u32..1515, 0u8..4).prop_map(|(bucket, len, ecn)| Op::Enq { bucket, len, ecn }),
                3 => Just(Op::Deq),
                1 => Just(Op::Peek),
                2 => (0u64..30).prop_map(Op::Wait),
                1 => (0u32..40).prop_map(Op::Change),
            ]
        }

        proptest! {
            #[test]
            fn frames_are_conserved_and_counters_agree(ops in proptest::collection::vec(op(), 1..400)) {
                let mut q = fq(FqCodelOptions {
                    limit: Some(30),
                    memory_limit: Some(40000),
                    drop_batch_size: Some(3),
                    ..none()
                });
                let mut d = Drops::new();
                let mut now = 0u64;
                let (mut enq, mut sent) = (0u64, 0u64);
                for (i, o) in ops.into_iter().enumerate() {
                    let t = Instant::from_millis(now);
                    match o {
                        Op::Enq { bucket, len, ecn } => {
                            enq += 1;
                            q.enqueue(ect_bpkt(i as u64, len, bucket, ecn), t, &mut d);
                        }
                        Op::Deq => sent += q.dequeue(t, &mut d).is_some() as u64,
                        Op::Peek => { q.peek(t, &mut d); }
                        Op::Wait(ms) => now += ms,
                        Op::Change(limit) => {
                            let o = FqCodelOptions { limit: Some(limit), ..none() };
                            q.change(&QdiscOptions::FqCodel(o), t, &mut d).unwrap();
                        }
                    }
                    let held: u32 = q.flows.iter().map(|f| f.queue.len() as u32).sum();
                    let bytes: u64 = q.backlogs.iter().sum();
                    let true_bytes: u64 = q.flows.iter().flat_map(|f| f.queue.iter()).map(|p| p.len as u64).sum();
                    prop_assert_eq!(held, q.qlen);
                    prop_assert_eq!(bytes, q.backlog);
                    prop_assert_eq!(true_bytes, q.backlog);
                    let mem: u64 = q.flows.iter().flat_map(|f| f.queue.iter()).map(|p| truesize(p.len) as u64).sum();
                    prop_assert_eq!(mem, q.memory_usage);
                    prop_assert_eq!(enq, sent + d.len() as u64 + q.qlen() as u64);
                    prop_assert_eq!(q.stats().drops, d.len() as u64);
                    prop_assert!(q.qlen() <= q.limit.max(1));
                    let listed = q.new_flows.len() + q.old_flows.len();
                    prop_assert_eq!(listed, q.flows.iter().filter(|f| f.list != ListTag::None).count());
                    prop_assert!(q.flows.iter().all(|f| f.queue.is_empty() || f.list != ListTag::None));
                }
            }
        }
    }
}
