//! The single-queue `codel` qdisc (Linux net/sched/sch_codel.c): one FIFO
//! managed by the CoDel core, tail drop of the arriving frame at `limit`
//! packets. Defaults: limit 1000p, target 5ms, interval 100ms, noecn.

mod xstats;
pub use xstats::CodelXstats;

pub mod algorithm;

use super::dump::{QueueId, QueueOccupancy, Xstats};
use super::park::{drop_all_held, ParkOnPeek};
use super::QdiscOptions;
use super::{Handle, Qdisc, QdiscCtx, QdiscDump, QdiscStats, Refusal, Verdict};
use crate::packet::{DropReason, Drops, Packet};
use crate::time::Instant;
use algorithm::{
    codel_to_us, us_to_codel, CodelParams, CodelQueue, CodelStats, CodelVars,
    CODEL_DISABLED_THRESHOLD,
};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `DEFAULT_CODEL_LIMIT`.
pub const DEFAULT_LIMIT: u32 = 1000;

/// The `TCA_CODEL_*` attributes (include/uapi/linux/pkt_sched.h), times in
/// µs as netlink carries them (net/sched/sch_codel.c `codel_change` turns
/// them into CoDel units, `codel_dump` back with `codel_time_to_us`). An
/// absent attribute keeps the current value; `codel_dump` sends all but
/// `ce_threshold` while that is off.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodelOptions {
    /// `TCA_CODEL_TARGET`, µs.
    pub target: Option<u32>,
    /// `TCA_CODEL_LIMIT`, packets.
    pub limit: Option<u32>,
    /// `TCA_CODEL_INTERVAL`, µs.
    pub interval: Option<u32>,
    /// `TCA_CODEL_ECN`.
    pub ecn: Option<bool>,
    /// `TCA_CODEL_CE_THRESHOLD`, µs.
    pub ce_threshold: Option<u32>,
}

/// The FIFO plus the backlog CoDel reads.
struct Fifo {
    queue: VecDeque<Packet>,
    backlog: u64,
}

impl CodelQueue for Fifo {
    fn pop_head(&mut self) -> Option<Packet> {
        let p = self.queue.pop_front()?;
        self.backlog -= p.len as u64;
        Some(p)
    }
    fn backlog(&self) -> u64 {
        self.backlog
    }
}

/// The `codel` qdisc (net/sched/sch_codel.c): one FIFO whose head is subject to
/// CoDel's control law at dequeue, with a packet limit at enqueue.
pub struct CodelQdisc {
    handle: Handle,
    parent: Handle,
    limit: u32,
    params: CodelParams,
    vars: CodelVars,
    cstats: CodelStats,
    drop_overlimit: u64,
    fifo: Fifo,
    /// A frame dequeued by `peek` (qdisc_peek_dequeued), still counted.
    parked: Option<Packet>,
    /// Frames of this qdisc's TX queue in the device's requeue slot and
    /// their bytes, which its limit counts (`Qdisc::set_requeued`).
    requeued: (u32, u64),
    stats: QdiscStats,
}

impl CodelQdisc {
    /// A codel qdisc with the kernel's defaults (`codel_init`: limit 1000
    /// packets, target 5 ms, interval 100 ms, ECN off).
    pub fn new(ctx: QdiscCtx) -> Self {
        CodelQdisc {
            handle: ctx.handle,
            parent: ctx.parent,
            limit: DEFAULT_LIMIT,
            params: CodelParams::new(ctx.psched_mtu, false),
            vars: CodelVars::default(),
            cstats: CodelStats::default(),
            drop_overlimit: 0,
            fifo: Fifo {
                queue: VecDeque::new(),
                backlog: 0,
            },
            parked: None,
            requeued: (0, 0),
            stats: QdiscStats::default(),
        }
    }

    /// A codel qdisc with `options` (`QdiscOptions::None`: the defaults).
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        match options {
            QdiscOptions::None => Ok(CodelQdisc::new(ctx)),
            QdiscOptions::Codel(o) => Ok(CodelQdisc::with_options(ctx, o)),
            _ => Err(super::options::foreign("codel")),
        }
    }

    /// A codel qdisc with the defaults changed by `o` (`codel_init`).
    pub fn with_options(ctx: QdiscCtx, o: &CodelOptions) -> Self {
        let mut q = CodelQdisc::new(ctx);
        q.apply(o);
        q
    }

    fn apply(&mut self, o: &CodelOptions) {
        if let Some(v) = o.limit {
            self.limit = v;
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
    }

    /// The options as `codel_dump` sends them.
    pub fn options(&self) -> CodelOptions {
        let p = &self.params;
        CodelOptions {
            target: Some(codel_to_us(p.target) as u32),
            limit: Some(self.limit),
            interval: Some(codel_to_us(p.interval) as u32),
            ecn: Some(p.ecn),
            ce_threshold: (p.ce_threshold != CODEL_DISABLED_THRESHOLD)
                .then(|| codel_to_us(p.ce_threshold) as u32),
        }
    }

    /// CoDel state, for the TUI.
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }

    fn run_codel(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        let before = self.cstats.drop_count;
        let p = self
            .vars
            .dequeue(&mut self.fifo, &self.params, &mut self.cstats, now, drops);
        self.stats.drops += self.cstats.drop_count - before;
        p
    }
}

impl ParkOnPeek for CodelQdisc {
    fn parked_slot(&mut self) -> &mut Option<Packet> {
        &mut self.parked
    }
    fn sent_stats(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }
    fn dequeue_next(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.run_codel(now, drops)
    }
}

impl Qdisc for CodelQdisc {
    fn kind(&self) -> &'static str {
        "codel"
    }

    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        // `codel_qdisc_enqueue` reads `qdisc_qlen`, the requeued frames in.
        if self.qlen().saturating_add(self.requeued.0) < self.limit {
            pkt.meta.enqueue_time = now;
            self.fifo.backlog += pkt.len as u64;
            self.fifo.queue.push_back(pkt);
            return Verdict::Queued;
        }
        self.drop_overlimit += 1;
        self.stats.reject(pkt, DropReason::QueueFull, drops)
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
        (self.fifo.queue.len() + self.parked.is_some() as usize) as u32
    }

    fn backlog(&self) -> u64 {
        self.fifo.backlog + self.parked.as_ref().map_or(0, |p| p.len as u64)
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
        self.vars = CodelVars::default();
    }

    fn change(
        &mut self,
        options: &QdiscOptions,
        _now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        match options {
            QdiscOptions::None => {}
            QdiscOptions::Codel(o) => self.apply(o),
            _ => return Err(super::options::foreign("codel")),
        }
        // sch_codel trims from the head, bypassing CoDel.
        while self.qlen() > self.limit {
            let Some(p) = self.parked.take().or_else(|| self.fifo.pop_head()) else {
                break;
            };
            self.stats.count_drop(p, DropReason::QdiscReset, drops);
        }
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        let v = &self.vars;
        let xstats = CodelXstats {
            maxpacket: self.cstats.maxpacket,
            count: v.count,
            lastcount: v.lastcount,
            ldelay_us: codel_to_us(v.ldelay),
            drop_next_us: v.drop_next_us(now),
            drop_overlimit: self.drop_overlimit,
            ecn_mark: self.cstats.ecn_mark,
            dropping: v.dropping,
            ce_mark: self.cstats.ce_mark,
        };

        QdiscDump {
            kind: "codel".into(),
            handle: self.handle,
            parent: self.parent,
            options: QdiscOptions::Codel(self.options()),
            stats: self.stats(),
            xstats: Some(Xstats::Codel(xstats)),
            occupancy: vec![QueueOccupancy::of_qdisc(
                QueueId::Fifo,
                self.parked.iter().chain(&self.fifo.queue),
                now,
            )],
            ..QdiscDump::default()
        }
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        let mut out: Vec<Packet> = self.parked.take().into_iter().collect();
        out.extend(self.fifo.queue.drain(..));
        self.fifo.backlog = 0;
        out
    }
}

#[cfg(test)]
mod tests;
