//! pfifo, bfifo and pfifo_head_drop (Linux net/sched/sch_fifo.c
//! `pfifo_enqueue`, `bfifo_enqueue`, `pfifo_tail_enqueue`): single FIFOs with a
//! packet or byte limit. pfifo/bfifo tail-drop the arriving frame;
//! pfifo_head_drop drops the oldest frame and keeps the new one. They are also
//! the default children HTB, QFQ (pfifo) and TBF (bfifo) create
//! (`fifo_create_dflt`).

use super::QdiscOptions;
use super::{Handle, Qdisc, QdiscCtx, QdiscDump, QdiscStats, TcError, Verdict};
use crate::packet::{DropReason, Drops, Packet};
use crate::time::Instant;
use crate::units::{parse_size, sprint_size};
use serde_json::json;
use std::collections::VecDeque;

/// Which of the three FIFOs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FifoKind {
    Pfifo,
    Bfifo,
    PfifoHeadDrop,
}

impl FifoKind {
    fn name(self) -> &'static str {
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

    pub fn with_limit(kind: FifoKind, ctx: QdiscCtx, limit: u64) -> Self {
        Fifo {
            kind,
            handle: ctx.handle,
            parent: ctx.parent,
            limit,
            queue: VecDeque::new(),
            backlog: 0,
            stats: QdiscStats::default(),
        }
    }

    /// `tc qdisc add ... pfifo|bfifo|pfifo_head_drop [limit N]`.
    pub fn from_args(kind: FifoKind, ctx: QdiscCtx, args: &[&str]) -> Result<Self, TcError> {
        let limit = parse_limit(kind, args)?;
        let mut f = Fifo::new(kind, ctx);
        if let Some(l) = limit {
            f.limit = l;
        }
        Ok(f)
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    fn is_full_for(&self, len: u32) -> bool {
        if self.kind.counts_bytes() {
            self.backlog + len as u64 > self.limit
        } else {
            self.queue.len() as u64 >= self.limit
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

fn parse_limit(kind: FifoKind, args: &[&str]) -> Result<Option<u64>, TcError> {
    let mut limit = None;
    let mut it = args.iter();
    while let Some(tok) = it.next() {
        match *tok {
            "limit" => {
                let v = it
                    .next()
                    .ok_or_else(|| TcError::new("Error: argument \"limit\" is required"))?;
                let parsed = if kind.counts_bytes() {
                    parse_size(v).ok()
                } else {
                    v.parse::<u64>().ok()
                };
                limit = Some(parsed.ok_or_else(|| {
                    TcError::new(format!(
                        "Error: argument \"{v}\" is wrong: \"limit\" is invalid"
                    ))
                })?);
            }
            other => {
                return Err(TcError::new(format!(
                    "What is \"{other}\"?\nUsage: ... [p|b]fifo [ limit NUMBER ]"
                )))
            }
        }
    }
    Ok(limit)
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

    fn dequeue(&mut self, _now: Instant, _drops: &mut Drops) -> Option<Packet> {
        let p = self.pop()?;
        self.stats.count_sent(p.len);
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

    fn count_bypass(&mut self, len: u32) {
        self.stats.count_sent(len);
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
    ) -> Result<(), TcError> {
        let args = &options.words()[..];
        if let Some(l) = parse_limit(self.kind, args)? {
            self.limit = l;
            self.trim_to_limit(drops);
        }
        Ok(())
    }

    fn dump(&self, _now: Instant) -> QdiscDump {
        let limit = if self.kind.counts_bytes() {
            format!("limit {}", sprint_size(self.limit))
        } else {
            format!("limit {}p", self.limit)
        };
        let mut options_json = serde_json::Map::new();
        options_json.insert("limit".into(), json!(self.limit));
        QdiscDump {
            kind: self.kind.name().into(),
            handle: self.handle,
            parent: self.parent,
            options: limit.clone(),
            options_detail: limit,
            options_json,
            stats: self.stats(),
            ..QdiscDump::default()
        }
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        self.backlog = 0;
        self.queue.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::pkt;

    fn ctx() -> QdiscCtx {
        QdiscCtx::default()
    }

    #[test]
    fn pfifo_tail_drops_at_limit() {
        let mut q = Fifo::with_limit(FifoKind::Pfifo, ctx(), 2);
        let mut d = Drops::new();
        let t = Instant::ZERO;
        assert_eq!(q.enqueue(pkt(1, 100), t, &mut d), Verdict::Queued);
        assert_eq!(q.enqueue(pkt(2, 100), t, &mut d), Verdict::Queued);
        assert_eq!(q.enqueue(pkt(3, 100), t, &mut d), Verdict::Dropped);
        assert_eq!(d.since(0)[0].0.meta.id, 3);
        assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, 1);
        let s = q.stats();
        assert_eq!(
            (s.packets, s.bytes, s.drops, s.qlen, s.backlog),
            (1, 100, 1, 1, 100)
        );
    }

    #[test]
    fn bfifo_counts_bytes() {
        let mut q = Fifo::with_limit(FifoKind::Bfifo, ctx(), 250);
        let mut d = Drops::new();
        let t = Instant::ZERO;
        assert_eq!(q.enqueue(pkt(1, 100), t, &mut d), Verdict::Queued);
        assert_eq!(q.enqueue(pkt(2, 150), t, &mut d), Verdict::Queued);
        assert_eq!(q.enqueue(pkt(3, 1), t, &mut d), Verdict::Dropped);
        assert_eq!(q.backlog(), 250);
    }

    #[test]
    fn head_drop_keeps_newest() {
        let mut q = Fifo::with_limit(FifoKind::PfifoHeadDrop, ctx(), 2);
        let mut d = Drops::new();
        let t = Instant::ZERO;
        for id in 1..=3 {
            q.enqueue(pkt(id, 100), t, &mut d);
        }
        assert_eq!(d.since(0)[0].0.meta.id, 1);
        assert_eq!(d.since(0)[0].1, DropReason::HeadDrop);
        assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, 2);
        assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, 3);
    }

    #[test]
    fn defaults_and_printing() {
        let q = Fifo::new(FifoKind::Pfifo, ctx());
        assert_eq!(q.dump(Instant::ZERO).options, "limit 1000p");
        let b = Fifo::from_args(FifoKind::Bfifo, ctx(), &["limit", "10kb"]).unwrap();
        assert_eq!(b.dump(Instant::ZERO).options, "limit 10Kb");
        assert!(Fifo::from_args(FifoKind::Pfifo, ctx(), &["limit", "x"]).is_err());
        assert!(Fifo::from_args(FifoKind::Pfifo, ctx(), &["bogus"]).is_err());
    }

    #[test]
    fn change_lowers_limit_and_drops() {
        let mut q = Fifo::with_limit(FifoKind::Pfifo, ctx(), 10);
        let mut d = Drops::new();
        for id in 0..5 {
            q.enqueue(pkt(id, 100), Instant::ZERO, &mut d);
        }
        q.change(
            &crate::qdisc::testutil::qwords(&["limit", "2"]),
            Instant::ZERO,
            &mut d,
        )
        .unwrap();
        assert_eq!(q.qlen(), 2);
        assert_eq!(d.len(), 3);
        assert_eq!(q.stats().drops, 3);
    }
}
