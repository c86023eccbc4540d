//! pfifo, bfifo and pfifo_head_drop (Linux net/sched/sch_fifo.c
//! `pfifo_enqueue`, `bfifo_enqueue`, `pfifo_tail_enqueue`): single FIFOs with a
//! packet or byte limit. pfifo/bfifo tail-drop the arriving frame;
//! pfifo_head_drop drops the oldest frame and keeps the new one. They are also
//! the default children HTB, QFQ (pfifo) and TBF (bfifo) create
//! (`fifo_create_dflt`). Their options are `struct tc_fifo_qopt`
//! (`FifoOptions`).

use super::dump::{QueueId, QueueOccupancy};
use super::options::foreign as foreign_options;
use super::QdiscOptions;
use super::{Handle, Qdisc, QdiscCtx, QdiscDump, QdiscStats, Refusal, Verdict};
use crate::packet::{DropReason, Drops, Packet};
use crate::time::Instant;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `struct tc_fifo_qopt` (include/uapi/linux/pkt_sched.h): the limit in
/// packets (pfifo, pfifo_head_drop) or bytes (bfifo). A request without
/// it is `QdiscOptions::None` (the kernel's default limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FifoOptions {
    /// The limit: packets for pfifo and pfifo_head_drop, bytes for bfifo.
    pub limit: u64,
}

/// Which of the three FIFOs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FifoKind {
    /// `pfifo`: a packet limit, tail drop (net/sched/sch_fifo.c
    /// `pfifo_enqueue`).
    Pfifo,
    /// `bfifo`: a byte limit, tail drop (`bfifo_enqueue`).
    Bfifo,
    /// `pfifo_head_drop`: a packet limit; a full queue drops its oldest packet
    /// (`pfifo_tail_enqueue`).
    PfifoHeadDrop,
}

impl FifoKind {
    /// The kind's tc name: `pfifo`, `bfifo` or `pfifo_head_drop`.
    pub fn name(self) -> &'static str {
        match self {
            FifoKind::Pfifo => "pfifo",
            FifoKind::Bfifo => "bfifo",
            FifoKind::PfifoHeadDrop => "pfifo_head_drop",
        }
    }
    fn counts_bytes(self) -> bool {
        self == FifoKind::Bfifo
    }
}

/// A FIFO with a limit in packets (pfifo, pfifo_head_drop) or bytes (bfifo).
pub struct Fifo {
    kind: FifoKind,
    handle: Handle,
    parent: Handle,
    limit: u64,
    queue: VecDeque<Packet>,
    backlog: u64,
    /// Frames of this qdisc's TX queue in the device's requeue slot and
    /// their bytes, which its limit counts (`Qdisc::set_requeued`).
    requeued: (u32, u64),
    stats: QdiscStats,
}

impl Fifo {
    /// A FIFO with the kernel's default limit: txqueuelen packets, or
    /// txqueuelen × psched_mtu bytes for bfifo.
    pub fn new(kind: FifoKind, ctx: QdiscCtx) -> Self {
        let limit = if kind.counts_bytes() {
            ctx.txqueuelen as u64 * ctx.psched_mtu as u64
        } else {
            ctx.txqueuelen as u64
        };
        Fifo::with_limit(kind, ctx, limit)
    }

    /// A FIFO of `kind` with `limit` (packets, or bytes for bfifo).
    pub fn with_limit(kind: FifoKind, ctx: QdiscCtx, limit: u64) -> Self {
        Fifo {
            kind,
            handle: ctx.handle,
            parent: ctx.parent,
            limit,
            queue: VecDeque::new(),
            backlog: 0,
            requeued: (0, 0),
            stats: QdiscStats::default(),
        }
    }

    /// `fifo_init`: a FIFO with the limit `options` give (none: the
    /// default limit).
    pub fn build(kind: FifoKind, ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        match options {
            QdiscOptions::None => Ok(Fifo::new(kind, ctx)),
            QdiscOptions::Fifo(o) => Ok(Fifo::with_limit(kind, ctx, o.limit)),
            _ => Err(foreign_options(kind.name())),
        }
    }

    /// The limit: packets, or bytes for bfifo.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Whether a frame of `len` bytes finds the FIFO full: the kernel's
    /// `sch->qstats.backlog` and `sch->q.qlen` include the requeued frames.
    fn is_full_for(&self, len: u32) -> bool {
        let (frames, bytes) = self.requeued;
        if self.kind.counts_bytes() {
            self.backlog + bytes + len as u64 > self.limit
        } else {
            self.queue.len() as u64 + u64::from(frames) >= self.limit
        }
    }

    fn pop(&mut self) -> Option<Packet> {
        let p = self.queue.pop_front()?;
        self.backlog -= p.len as u64;
        Some(p)
    }

    fn trim_to_limit(&mut self, drops: &mut Drops) {
        while self.over_limit() {
            let Some(p) = self.pop() else { break };
            self.stats.count_drop(p, DropReason::QdiscReset, drops);
        }
    }

    fn over_limit(&self) -> bool {
        if self.kind.counts_bytes() {
            self.backlog > self.limit
        } else {
            self.queue.len() as u64 > self.limit
        }
    }
}

impl Qdisc for Fifo {
    fn kind(&self) -> &'static str {
        self.kind.name()
    }

    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        pkt.meta.enqueue_time = now;
        if !self.is_full_for(pkt.len) {
            self.backlog += pkt.len as u64;
            self.queue.push_back(pkt);
            return Verdict::Queued;
        }
        if self.kind == FifoKind::PfifoHeadDrop && self.limit > 0 {
            if let Some(old) = self.pop() {
                self.stats.count_drop(old, DropReason::HeadDrop, drops);
            }
            self.backlog += pkt.len as u64;
            self.queue.push_back(pkt);
            return Verdict::Congested;
        }
        self.stats.reject(pkt, DropReason::QueueFull, drops)
    }

    fn set_requeued(&mut self, frames: u32, bytes: u64) {
        self.requeued = (frames, bytes);
    }

    fn dequeue(&mut self, _now: Instant, _drops: &mut Drops) -> Option<Packet> {
        let p = self.pop()?;
        self.stats.count_sent(&p);
        Some(p)
    }

    fn peek(&mut self, _now: Instant, _drops: &mut Drops) -> Option<&Packet> {
        self.queue.front()
    }

    fn qlen(&self) -> u32 {
        self.queue.len() as u32
    }

    fn backlog(&self) -> u64 {
        self.backlog
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    fn can_bypass(&self) -> bool {
        if self.kind.counts_bytes() {
            self.limit >= 1514
        } else {
            self.limit >= 1
        }
    }

    fn count_bypass(&mut self, pkt: &Packet) {
        self.stats.count_sent(pkt);
    }

    fn reset(&mut self, drops: &mut Drops) {
        while let Some(p) = self.pop() {
            drops.push(p, DropReason::QdiscReset);
        }
    }

    fn change(
        &mut self,
        options: &QdiscOptions,
        _now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        match options {
            // No options: the limit is kept (the kernel's fifo_init
            // would restore the default; bloatbox has always kept it).
            QdiscOptions::None => Ok(()),
            QdiscOptions::Fifo(o) => {
                self.limit = o.limit;
                self.trim_to_limit(drops);
                Ok(())
            }
            _ => Err(foreign_options(self.kind.name())),
        }
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        QdiscDump {
            kind: self.kind.name().into(),
            handle: self.handle,
            parent: self.parent,
            options: QdiscOptions::Fifo(FifoOptions { limit: self.limit }),
            stats: self.stats(),
            occupancy: vec![QueueOccupancy::of_qdisc(
                QueueId::Fifo,
                self.queue.iter(),
                now,
            )],
            ..QdiscDump::default()
        }
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        self.backlog = 0;
        self.queue.drain(..).collect()
    }
}

#[cfg(test)]
mod tests;
