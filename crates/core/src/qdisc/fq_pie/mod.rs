//! FQ-PIE (Linux net/sched/sch_fq_pie.c): frames hashed into `flows`
//! buckets (`fq_pie_classify`: `skb->priority`, filters, else the flow
//! hash scaled to the bucket count), each a FIFO with its own PIE variables
//! (`super::pie::algorithm`); buckets served by deficit round robin of
//! `quantum` bytes from two lists, new flows before old ones. Every arrival
//! faces its flow's PIE early drop (CE-marked instead while the flow's
//! probability is at most `ecn_prob` percent, with `ecn`), and the qdisc's
//! packet `limit`; over `memory_limit` an arrival is only counted
//! (`overmemory`). The timer updates every flow's probability each
//! `tupdate`, 2048 flows a run. Defaults: limit 10240p, flows 1024, target
//! 15ms, tupdate 15ms, alpha 2, beta 20, quantum = MTU, memory_limit 32Mb,
//! ecn_prob 10, noecn.

mod xstats;
pub use xstats::FqPieXstats;

use super::dump::{list_flows, ClassDump, FlowDump, FlowListing, QueueOccupancy, Xstats};
use super::flow_queues::{self, drr_flow, ListTag};
use super::park::{drop_all_held, ParkOnPeek};
use super::pie::algorithm::{
    calculate_probability, drop_early, process_dequeue, ticks, AdaptTimer, PieParams, PieStats,
    PieVars, MAX_PROB,
};
use super::pie::PieOptions;
use super::{Errno, FilterHost, Handle, Qdisc, QdiscCtx, QdiscDump, QdiscOptions, QdiscStats};
use super::{Refusal, Verdict};
use crate::packet::ecn::mark_ce;
use crate::packet::filter::FilterChain;
use crate::packet::truesize;
use crate::packet::{DropReason, Drops, FlowKey, Packet};
use crate::time::Instant;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Default `limit`, packets (`fq_pie_init`: 10 * 1024).
pub const DEFAULT_LIMIT: u32 = 10 * 1024;
/// Default number of flow buckets.
pub const DEFAULT_FLOWS: u32 = 1024;
/// Most flow buckets `fq_pie_change` accepts.
pub const MAX_FLOWS: u32 = 65536;
/// Default `memory_limit`, bytes (`SZ_32M`).
pub const DEFAULT_MEMORY_LIMIT: u32 = 32 << 20;
/// Default `ecn_prob`, percent.
pub const DEFAULT_ECN_PROB: u32 = 10;
/// `fq_pie_q_range`: the quantum's bounds in the netlink policy.
pub const QUANTUM_RANGE: std::ops::RangeInclusive<u32> = 1..=1 << 20;
/// Flows whose probability one run of the timer updates.
pub const FLOWS_PER_RUN: u32 = 2048;

/// The `TCA_FQ_PIE_*` attributes: PIE's own (`pie`: limit, target,
/// tupdate, alpha, beta, ecn, bytemode, dq_rate_estimator, the same
/// meaning and units) and FQ-PIE's. An absent attribute keeps the current
/// value; `fq_pie_dump` sends all.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FqPieOptions {
    /// The attributes `pie` has too.
    pub pie: PieOptions,
    /// `TCA_FQ_PIE_FLOWS` (at creation only, 1..=65536).
    pub flows: Option<u32>,
    /// `TCA_FQ_PIE_QUANTUM`, bytes (1..=2^20).
    pub quantum: Option<u32>,
    /// `TCA_FQ_PIE_MEMORY_LIMIT`, bytes.
    pub memory_limit: Option<u32>,
    /// `TCA_FQ_PIE_ECN_PROB`, percent.
    pub ecn_prob: Option<u32>,
}

/// `struct fq_pie_flow`, with the counters the TUI's flow table shows.
struct Flow {
    queue: VecDeque<Packet>,
    vars: PieVars,
    deficit: i32,
    /// Bytes queued (`flow->backlog`, a u32).
    backlog: u32,
    list: ListTag,
    /// The 5-tuple of the last frame queued here.
    key: Option<FlowKey>,
    drops: u64,
    ecn_marks: u64,
    sent_bytes: u64,
}

impl Flow {
    fn new() -> Self {
        Flow {
            queue: VecDeque::new(),
            vars: PieVars::default(),
            deficit: 0,
            backlog: 0,
            list: ListTag::None,
            key: None,
            drops: 0,
            ecn_marks: 0,
            sent_bytes: 0,
        }
    }
}

/// The `fq_pie` qdisc.
pub struct FqPie {
    handle: Handle,
    parent: Handle,
    mtu: u32,
    params: PieParams,
    ecn_prob: u32,
    quantum: u32,
    memory_limit: u32,
    hash_key: u32,
    filters: FilterChain,
    flows: Vec<Flow>,
    /// The next flow the timer updates.
    flows_cursor: u32,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    new_flow_count: u32,
    /// `memory_usage` (a u32 in the kernel).
    memory_usage: u32,
    overmemory: u32,
    pstats: PieStats,
    timer: AdaptTimer,
    /// Frames in the flows (the parked one not included).
    qlen: u32,
    /// Bytes in the flows (the parked one not included).
    backlog: u64,
    /// A frame dequeued by `peek` (qdisc_peek_dequeued), still counted.
    parked: Option<Packet>,
    /// Frames of this qdisc's TX queue in the device's requeue slot and
    /// their bytes, which its limit counts (`Qdisc::set_requeued`).
    requeued: (u32, u64),
    stats: QdiscStats,
    rng: SmallRng,
}

drr_flow!(Flow);

impl FqPie {
    /// `fq_pie_init` with `options` (`QdiscOptions::None`: the defaults).
    /// Built without a clock, its timer first runs at 500 ms.
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        let o = match options {
            QdiscOptions::None => &FqPieOptions::default(),
            QdiscOptions::FqPie(o) => o,
            _ => return Err(super::options::foreign("fq_pie")),
        };
        let seed = ctx.seed ^ 0x6671_5f70_6965; // "fq_pie"
        let mut q = FqPie {
            handle: ctx.handle,
            parent: ctx.parent,
            mtu: ctx.psched_mtu,
            params: PieParams {
                limit: DEFAULT_LIMIT,
                ..PieParams::default()
            },
            ecn_prob: DEFAULT_ECN_PROB,
            quantum: ctx.psched_mtu,
            memory_limit: DEFAULT_MEMORY_LIMIT,
            hash_key: (seed ^ (seed >> 32)) as u32,
            filters: FilterChain::new(),
            flows: Vec::new(),
            flows_cursor: 0,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            new_flow_count: 0,
            memory_usage: 0,
            overmemory: 0,
            pstats: PieStats::default(),
            timer: AdaptTimer::armed(Instant::ZERO),
            qlen: 0,
            backlog: 0,
            parked: None,
            requeued: (0, 0),
            stats: QdiscStats::default(),
            rng: SmallRng::seed_from_u64(seed),
        };
        let flows = q.configure(o, DEFAULT_FLOWS)?;
        q.flows = (0..flows).map(|_| Flow::new()).collect();
        Ok(q)
    }

    /// `fq_pie_change`'s checks and assignments; returns the flow count
    /// (`current` unless given at creation). Nothing changes on error.
    fn configure(&mut self, o: &FqPieOptions, current: u32) -> Result<u32, Refusal> {
        if let Some(q) = o.quantum {
            if !QUANTUM_RANGE.contains(&q) {
                return Err(Refusal::new(Errno::EINVAL, "integer out of range.")
                    .beside(format!("quantum {q}: allowed 1..=1048576")));
            }
        }
        let mut flows = current;
        if let Some(f) = o.flows {
            if !self.flows.is_empty() {
                return Err(Refusal::new(
                    Errno::EINVAL,
                    "sch_fq_pie: Number of flows cannot be changed.",
                ));
            }
            if f == 0 || f > MAX_FLOWS {
                return Err(Refusal::new(
                    Errno::EINVAL,
                    "sch_fq_pie: Number of flows must range in [1..65536].",
                ));
            }
            flows = f;
        }
        o.pie.apply_to(&mut self.params);
        if let Some(v) = o.quantum {
            self.quantum = v;
        }
        if let Some(v) = o.memory_limit {
            self.memory_limit = v;
        }
        if let Some(v) = o.ecn_prob {
            self.ecn_prob = v;
        }
        Ok(flows)
    }

    /// The options as `fq_pie_dump` sends them.
    pub fn options(&self) -> FqPieOptions {
        FqPieOptions {
            pie: PieOptions::of(&self.params),
            flows: Some(self.flows_cnt()),
            quantum: Some(self.quantum),
            memory_limit: Some(self.memory_limit),
            ecn_prob: Some(self.ecn_prob),
        }
    }

    /// The number of buckets.
    pub fn flows_cnt(&self) -> u32 {
        self.flows.len() as u32
    }

    /// The bucket of a frame (`fq_pie_classify`, `flow_queues::classify`).
    /// `None`: unclassified.
    pub fn classify(&self, pkt: &mut Packet) -> Option<usize> {
        flow_queues::classify(
            self.handle,
            &self.filters,
            pkt,
            self.flows_cnt(),
            self.hash_key,
        )
    }

    /// One run of `fq_pie_timer` on `flows` from `cursor`: the jiffies to
    /// the next run (0 while flows are left in the round; `jiffies + 0`
    /// expires at the next tick) and whether anything changed. Past 2048
    /// flows a round spans runs, and every run reports a change so that no
    /// run is skipped.
    fn timer_run(params: &PieParams, flows: &mut [Flow], cursor: &mut u32) -> (Option<u32>, bool) {
        let cnt = flows.len() as u32;
        let max = cnt.saturating_sub(*cursor).min(FLOWS_PER_RUN);
        let mut changed = cnt > FLOWS_PER_RUN;
        for f in &mut flows[*cursor as usize..(*cursor + max) as usize] {
            let before = f.vars;
            calculate_probability(params, &mut f.vars, f.backlog);
            changed |= f.vars != before;
        }
        *cursor += max;
        let mut next = 0;
        if *cursor >= cnt {
            *cursor = 0;
            next = params.tupdate;
        }
        ((params.tupdate != 0).then_some(next), changed)
    }

    fn catch_up(&mut self, now: Instant) {
        let (params, flows, cursor) = (&self.params, &mut self.flows, &mut self.flows_cursor);
        self.timer
            .run_until(now, |_| FqPie::timer_run(params, flows, cursor));
    }

    fn total_qlen(&self) -> u32 {
        self.qlen + u32::from(self.parked.is_some())
    }

    /// `fq_pie_qdisc_dequeue` without Sent counting.
    fn dequeue_inner(&mut self, now: Instant) -> Option<Packet> {
        self.catch_up(now);
        let (qlen, backlog, memory_usage) =
            (&mut self.qlen, &mut self.backlog, &mut self.memory_usage);
        let params = &self.params;
        flow_queues::dequeue(
            &mut self.flows,
            &mut self.new_flows,
            &mut self.old_flows,
            |_| self.quantum,
            |_, flow| {
                let p = flow.queue.pop_front()?;
                *qlen -= 1;
                *backlog -= u64::from(p.len);
                flow.backlog = flow.backlog.wrapping_sub(p.len);
                flow.sent_bytes += u64::from(p.len);
                *memory_usage = memory_usage.wrapping_sub(truesize(p.len));
                process_dequeue(
                    params,
                    &mut flow.vars,
                    ticks(now),
                    ticks(p.meta.enqueue_time),
                    p.len,
                    flow.backlog,
                );
                Some(p)
            },
        )
    }

    fn flow_dump(&self, idx: usize, now: Instant) -> FlowDump {
        let flow = &self.flows[idx];
        FlowDump {
            bucket: idx as u32,
            flow: flow.key,
            backlog: u64::from(flow.backlog),
            qlen: flow.queue.len() as u32,
            head_sojourn_ns: flow
                .queue
                .front()
                .map_or(0, |p| now.saturating_since(p.meta.enqueue_time)),
            deficit: i64::from(flow.deficit),
            drops: flow.drops,
            ecn_marks: flow.ecn_marks,
            sent_bytes: flow.sent_bytes,
            hash: super::dump::flow_queue_hash(flow.queue.front(), flow.key),
            ..FlowDump::default()
        }
    }
}

impl ParkOnPeek for FqPie {
    fn parked_slot(&mut self) -> &mut Option<Packet> {
        &mut self.parked
    }
    fn sent_stats(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }
    fn dequeue_next(&mut self, now: Instant, _drops: &mut Drops) -> Option<Packet> {
        self.dequeue_inner(now)
    }
}

impl FilterHost for FqPie {
    fn filter_qdisc(&self) -> Handle {
        self.handle
    }

    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, Refusal> {
        super::own_chain(&mut self.filters, "fq_pie", parent)
    }
}

impl Qdisc for FqPie {
    fn kind(&self) -> &'static str {
        "fq_pie"
    }

    /// `fq_pie_qdisc_enqueue`.
    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        self.catch_up(now);
        let Some(idx) = self.classify(&mut pkt) else {
            return self.stats.reject(pkt, DropReason::Unclassified, drops);
        };
        let size = truesize(pkt.len);
        let memory_limited = self.memory_usage > self.memory_limit.wrapping_add(size);
        let reason = if self.total_qlen().saturating_add(self.requeued.0) >= self.params.limit {
            self.pstats.overlimit = self.pstats.overlimit.wrapping_add(1);
            DropReason::PieOverlimit
        } else {
            if memory_limited {
                self.overmemory = self.overmemory.wrapping_add(1);
            }
            let flow = &mut self.flows[idx];
            let rng = &mut self.rng;
            let early = drop_early(
                &self.params,
                &mut flow.vars,
                flow.backlog,
                pkt.len,
                self.mtu,
                || rng.gen::<u64>(),
            );
            let queue = if !early {
                true
            } else if self.params.ecn
                && flow.vars.prob <= (MAX_PROB / 100).wrapping_mul(u64::from(self.ecn_prob))
                && mark_ce(&mut pkt)
            {
                self.pstats.ecn_mark = self.pstats.ecn_mark.wrapping_add(1);
                flow.ecn_marks += 1;
                true
            } else {
                false
            };
            if queue {
                pkt.meta.enqueue_time = now;
                self.pstats.packets_in = self.pstats.packets_in.wrapping_add(1);
                self.memory_usage = self.memory_usage.wrapping_add(size);
                self.qlen += 1;
                self.backlog += u64::from(pkt.len);
                flow.key = Some(pkt.meta.flow);
                if flow_queues::activate(flow, idx, self.quantum, &mut self.new_flows) {
                    flow.backlog = 0;
                    self.new_flow_count = self.new_flow_count.wrapping_add(1);
                }
                flow.backlog = flow.backlog.wrapping_add(pkt.len);
                flow.queue.push_back(pkt);
                return Verdict::Queued;
            }
            DropReason::PieEarly
        };
        self.pstats.dropped = self.pstats.dropped.wrapping_add(1);
        let flow = &mut self.flows[idx];
        flow.vars.accu_prob = 0;
        flow.drops += 1;
        self.stats.reject(pkt, reason, drops)
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
        self.backlog + self.parked.as_ref().map_or(0, |p| u64::from(p.len))
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    /// `fq_pie_reset`: every flow emptied, off the lists, `pie_vars_init`.
    fn reset(&mut self, drops: &mut Drops) {
        drop_all_held(self, drops);
        for f in &mut self.flows {
            f.vars.init();
        }
    }

    /// `fq_pie_change`: the checks, every attribute as given, then frames
    /// dequeued (through the DRR, as `fq_pie_qdisc_dequeue`) and dropped
    /// while over a lowered limit.
    fn change(
        &mut self,
        options: &QdiscOptions,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        let o = match options {
            QdiscOptions::None => {
                // `if (!opt) return -EINVAL;`
                return Err(Refusal::bare(Errno::EINVAL));
            }
            QdiscOptions::FqPie(o) => o,
            _ => return Err(super::options::foreign("fq_pie")),
        };
        self.catch_up(now);
        self.configure(o, self.flows_cnt())?;
        self.drop_while(now, drops, |q| q.total_qlen() > q.params.limit);
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let xstats = FqPieXstats {
            packets_in: self.pstats.packets_in,
            overlimit: self.pstats.overlimit,
            overmemory: self.overmemory,
            dropped: self.pstats.dropped,
            ecn_mark: self.pstats.ecn_mark,
            new_flow_count: self.new_flow_count,
            new_flows_len: self.new_flows.len() as u32,
            old_flows_len: self.old_flows.len() as u32,
            memory_usage: self.memory_usage,
        };
        let active = flow_queues::active(self.flows.len(), &self.new_flows, &self.old_flows)
            .map(|i| self.flow_dump(i, now));
        // fq_pie has no classes (no `Qdisc_class_ops`).
        let (mut flows, _, other_flows) = list_flows(listing, active, |_| ClassDump::default());
        flow_queues::fill_ahead(
            &mut flows,
            &self.flows,
            (&self.new_flows, &self.old_flows),
            self.quantum,
            self.parked.as_ref(),
        );
        QdiscDump {
            kind: "fq_pie".into(),
            handle: self.handle,
            parent: self.parent,
            options: QdiscOptions::FqPie(self.options()),
            stats: self.stats(),
            xstats: Some(Xstats::FqPie(xstats)),
            classes: Vec::new(),
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
        for f in &mut self.flows {
            f.backlog = 0;
        }
        self.qlen = 0;
        self.backlog = 0;
        self.memory_usage = 0;
        out
    }
}

#[cfg(test)]
mod tests;
