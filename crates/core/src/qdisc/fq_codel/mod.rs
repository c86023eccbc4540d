//! fq_codel (Linux net/sched/sch_fq_codel.c; RFC 8290): frames are hashed into
//! `flows` buckets, each a FIFO with its own CoDel state; buckets are served by
//! deficit round robin from two lists, new flows before old ones (sparse-flow
//! priority for one quantum). Overflow (packet `limit` or `memory_limit`) drops
//! up to `drop_batch` frames from the head of the fattest flow. ECN-capable
//! frames are CE-marked instead of dropped when `ecn` is on (the default).
//!
//! Memory accounting uses a model of the kernel's `skb->truesize` for a
//! frame the TAP driver received (see `truesize`).

mod xstats;
pub use xstats::{FqCodelClassXstats, FqCodelXstats};

use super::codel::algorithm::{
    codel_to_us, us_to_codel, CodelParams, CodelQueue, CodelStats, CodelVars,
    CODEL_DISABLED_THRESHOLD,
};
use super::dump::{list_flows, ClassDump, FlowDump, FlowListing, QueueOccupancy, Xstats};
use super::flow_queues::{self, drr_flow, ListTag};
use super::park::{drop_all_held, ParkOnPeek};
use super::QdiscOptions;
use super::{Errno, FilterHost, Handle, Qdisc, QdiscCtx, QdiscDump, QdiscStats, Refusal, Verdict};
use crate::packet::filter::FilterChain;
use crate::packet::{truesize, DropReason, Drops, FlowKey, Packet};
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

drr_flow!(Flow);

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
    /// Frames of this qdisc's TX queue in the device's requeue slot and
    /// their bytes, which its limit counts (`Qdisc::set_requeued`).
    requeued: (u32, u64),
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
            requeued: (0, 0),
            stats: QdiscStats::default(),
        }
    }

    /// An fq_codel qdisc with `options` (`QdiscOptions::None`: the
    /// defaults).
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        match options {
            QdiscOptions::None => Ok(FqCodel::new(ctx)),
            QdiscOptions::FqCodel(o) => FqCodel::with_options(ctx, o),
            _ => Err(super::options::foreign("fq_codel")),
        }
    }

    /// An fq_codel qdisc with the defaults changed by `o` (`fq_codel_init`).
    pub fn with_options(ctx: QdiscCtx, o: &FqCodelOptions) -> Result<Self, Refusal> {
        let mut q = FqCodel::new(ctx);
        if let Some(flows) = o.flows {
            if flows > MAX_FLOWS {
                return Err(Refusal::bare(Errno::EINVAL)
                    .beside(format!("flows {flows}: allowed 1..{MAX_FLOWS}")));
            }
            q.flows = (0..flows).map(|_| Flow::new()).collect();
            q.backlogs = vec![0; flows as usize];
            q.info = (0..flows).map(|_| FlowInfo::default()).collect();
        }
        q.apply(o)?;
        Ok(q)
    }

    /// Validates then applies `o` (nothing changes on error).
    fn apply(&mut self, o: &FqCodelOptions) -> Result<(), Refusal> {
        if let Some(qu) = o.quantum {
            if qu > QUANTUM_MAX {
                return Err(Refusal::new(Errno::EINVAL, "Invalid quantum.")
                    .beside(format!("quantum {qu}: allowed up to {QUANTUM_MAX} bytes")));
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

    /// The bucket of a frame (`fq_codel_classify`,
    /// `flow_queues::classify`). `None`: filters are attached and none
    /// placed it.
    pub fn classify(&self, pkt: &mut Packet) -> Option<usize> {
        flow_queues::classify(
            self.handle,
            &self.filters,
            pkt,
            self.flows_cnt(),
            self.hash_key,
        )
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
        let (backlogs, info, stats) = (&mut self.backlogs, &mut self.info, &mut self.stats);
        let (qlen, backlog, memory_usage) =
            (&mut self.qlen, &mut self.backlog, &mut self.memory_usage);
        let (params, cstats) = (&self.params, &mut self.cstats);
        flow_queues::dequeue(
            &mut self.flows,
            &mut self.new_flows,
            &mut self.old_flows,
            |_| self.quantum,
            |idx, flow| {
                let drops_before = cstats.drop_count;
                let marks_before = cstats.ecn_mark + cstats.ce_mark;
                let mut fq = FlowQueue {
                    queue: &mut flow.queue,
                    flow_backlog: &mut backlogs[idx],
                    qlen: &mut *qlen,
                    backlog: &mut *backlog,
                    memory_usage: &mut *memory_usage,
                };
                let pkt = flow.cvars.dequeue(&mut fq, params, cstats, now, drops);
                let dropped = cstats.drop_count - drops_before;
                let marked = cstats.ecn_mark + cstats.ce_mark - marks_before;
                let info = &mut info[idx];
                info.drops += dropped;
                info.ecn_marks += marked;
                stats.drops += dropped;
                let p = pkt?;
                info.sent_bytes += p.len as u64;
                Some(p)
            },
        )
    }

    fn total_qlen(&self) -> u32 {
        self.qlen + self.parked.is_some() as u32
    }

    /// The `sch->q.qlen` the enqueue's limit check reads: the requeued
    /// frames of the device's slot in (net/sched/sch_generic.c
    /// `dev_requeue_skb`).
    fn qlen_at_enqueue(&self) -> u32 {
        self.total_qlen().saturating_add(self.requeued.0)
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
            cake: None,
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

    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, Refusal> {
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
        if flow_queues::activate(flow, idx, self.quantum, &mut self.new_flows) {
            self.new_flow_count += 1;
        }
        self.memory_usage += truesize(len) as u64;
        self.qlen += 1;
        let memory_limited = self.memory_usage > self.memory_limit as u64;
        if self.qlen_at_enqueue() <= self.limit && !memory_limited {
            return Verdict::Queued;
        }
        let (fattest, own_lost) = self.drop_fattest(idx, memory_limited, drops);
        match (fattest == idx, own_lost) {
            (true, true) => Verdict::Dropped,
            (true, false) => Verdict::Congested,
            _ => Verdict::Queued,
        }
    }

    fn set_requeued(&mut self, frames: u32, bytes: u64) {
        self.requeued = (frames, bytes);
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
    ) -> Result<(), Refusal> {
        let o = match options {
            QdiscOptions::None => &FqCodelOptions::default(),
            QdiscOptions::FqCodel(o) => o,
            _ => return Err(super::options::foreign("fq_codel")),
        };
        if let Some(f) = o.flows {
            return Err(Refusal::bare(Errno::EINVAL).beside(format!(
                "flows {f}: the number of flows can only be set when the qdisc is created; \
                 delete and re-add it"
            )));
        }
        self.apply(o)?;
        self.drop_while(now, drops, |q| {
            q.total_qlen() > q.limit || q.memory_usage > q.memory_limit as u64
        });
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
        let active = flow_queues::active(self.flows.len(), &self.new_flows, &self.old_flows)
            .map(|i| self.flow_dump(i, now));
        let (mut flows, classes, other_flows) =
            list_flows(listing, active, |b| self.class_dump(b as usize, now));
        flow_queues::fill_ahead(
            &mut flows,
            &self.flows,
            (&self.new_flows, &self.old_flows),
            self.quantum,
            self.parked.as_ref(),
        );
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
        let out = flow_queues::drain_all(
            &mut self.parked,
            &mut self.flows,
            &mut self.new_flows,
            &mut self.old_flows,
        );
        self.backlogs.fill(0);
        self.qlen = 0;
        self.backlog = 0;
        self.memory_usage = 0;
        out
    }
}

#[cfg(test)]
mod tests;
