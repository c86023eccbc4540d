//! skbprio (Linux net/sched/sch_skbprio.c): 64 FIFOs, one per
//! `skb->priority` (0..63, higher values above 63 count as 63), the
//! highest non-empty one always served first. Under `limit` packets an
//! arrival is queued; at the limit it is dropped if its priority is at
//! most the lowest queued one, else queued and the newest frame of the
//! lowest priority dropped in its place (NET_XMIT_CN). Each priority is a
//! class `X:1`..`X:64` with queue counters only (`skbprio_dump_class_stats`:
//! its backlog, drops and overlimits; its qlen stays 0, as the kernel never
//! counts it). Default limit 64.

use super::dump::{ClassDump, QueueId, QueueOccupancy};
use super::park::ParkOnPeek;
use super::{tc_h_major, tc_h_make, Handle, Qdisc, QdiscCtx, QdiscDump, QdiscOptions};
use super::{QdiscStats, Refusal, Verdict};
use crate::packet::{DropReason, Drops, Packet};
use crate::time::Instant;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `SKBPRIO_MAX_PRIORITY`.
pub const SKBPRIO_MAX_PRIORITY: usize = 64;
/// `skbprio_init`'s limit, packets.
pub const DEFAULT_LIMIT: u32 = 64;

/// `struct tc_skbprio_qopt`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkbprioOptions {
    /// Packets.
    pub limit: u32,
}

/// The `skbprio` qdisc (`struct skbprio_sched_data`).
pub struct Skbprio {
    handle: Handle,
    parent: Handle,
    limit: u32,
    queues: Vec<VecDeque<Packet>>,
    /// Per priority: backlog, drops and overlimits (`qstats[]`).
    qstats: Vec<QdiscStats>,
    highest_prio: usize,
    lowest_prio: usize,
    qlen: u32,
    backlog: u64,
    /// A frame dequeued by `peek` (qdisc_peek_dequeued), still counted.
    parked: Option<Packet>,
    stats: QdiscStats,
}

impl Skbprio {
    /// `skbprio_init` with `options` (`QdiscOptions::None`: limit 64).
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        let limit = match options {
            QdiscOptions::None => DEFAULT_LIMIT,
            QdiscOptions::Skbprio(o) => o.limit,
            _ => return Err(super::options::foreign("skbprio")),
        };
        Ok(Skbprio {
            handle: ctx.handle,
            parent: ctx.parent,
            limit,
            queues: (0..SKBPRIO_MAX_PRIORITY).map(|_| VecDeque::new()).collect(),
            qstats: vec![QdiscStats::default(); SKBPRIO_MAX_PRIORITY],
            highest_prio: 0,
            lowest_prio: SKBPRIO_MAX_PRIORITY - 1,
            qlen: 0,
            backlog: 0,
            parked: None,
            stats: QdiscStats::default(),
        })
    }

    /// `calc_new_high_prio`.
    fn new_high(&self) -> usize {
        (self.lowest_prio..self.highest_prio)
            .rev()
            .find(|&p| !self.queues[p].is_empty())
            .unwrap_or(0)
    }

    /// `calc_new_low_prio`.
    fn new_low(&self) -> usize {
        (self.lowest_prio + 1..=self.highest_prio)
            .find(|&p| !self.queues[p].is_empty())
            .unwrap_or(SKBPRIO_MAX_PRIORITY - 1)
    }

    fn push(&mut self, prio: usize, pkt: Packet) {
        self.backlog += u64::from(pkt.len);
        self.qstats[prio].backlog += u64::from(pkt.len);
        self.queues[prio].push_back(pkt);
    }
}

impl ParkOnPeek for Skbprio {
    fn parked_slot(&mut self) -> &mut Option<Packet> {
        &mut self.parked
    }
    fn sent_stats(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }
    /// `skbprio_dequeue` without Sent counting.
    fn dequeue_next(&mut self, _now: Instant, _drops: &mut Drops) -> Option<Packet> {
        let hp = self.highest_prio;
        let p = self.queues[hp].pop_front()?;
        self.qlen -= 1;
        self.backlog -= u64::from(p.len);
        self.qstats[hp].backlog -= u64::from(p.len);
        if self.queues[hp].is_empty() {
            if self.lowest_prio == self.highest_prio {
                self.highest_prio = 0;
                self.lowest_prio = SKBPRIO_MAX_PRIORITY - 1;
            } else {
                self.highest_prio = self.new_high();
            }
        }
        Some(p)
    }
}

impl Qdisc for Skbprio {
    fn kind(&self) -> &'static str {
        "skbprio"
    }

    /// `skbprio_enqueue`.
    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        let prio = (pkt.meta.priority as usize).min(SKBPRIO_MAX_PRIORITY - 1);
        pkt.meta.enqueue_time = now;
        if self.qlen() < self.limit {
            self.push(prio, pkt);
            self.highest_prio = self.highest_prio.max(prio);
            self.lowest_prio = self.lowest_prio.min(prio);
            self.qlen += 1;
            return Verdict::Queued;
        }
        let lp = self.lowest_prio;
        if prio <= lp {
            self.qstats[prio].drops += 1;
            self.qstats[prio].overlimits += 1;
            return self.stats.reject(pkt, DropReason::QueueFull, drops);
        }
        self.push(prio, pkt);
        if let Some(victim) = self.queues[lp].pop_back() {
            self.backlog -= u64::from(victim.len);
            self.qstats[lp].backlog -= u64::from(victim.len);
            self.qstats[lp].drops += 1;
            self.qstats[lp].overlimits += 1;
            self.stats.count_drop(victim, DropReason::QueueFull, drops);
        }
        if self.queues[lp].is_empty() {
            if self.lowest_prio == self.highest_prio {
                self.lowest_prio = prio;
                self.highest_prio = prio;
            } else {
                self.lowest_prio = self.new_low();
            }
        }
        self.highest_prio = self.highest_prio.max(prio);
        Verdict::Congested
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.dequeue_parked_first(now, drops)
    }

    /// `qdisc_peek_dequeued`: the frame is taken out and parked.
    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        self.peek_parking(now, drops)
    }

    fn qlen(&self) -> u32 {
        self.qlen + u32::from(self.parked.is_some())
    }

    fn backlog(&self) -> u64 {
        self.backlog + self.parked.as_ref().map_or(0, |p| u64::from(p.len))
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    /// `skbprio_reset`: the queues purged, the per-priority counters zeroed.
    fn reset(&mut self, drops: &mut Drops) {
        for p in self.drain_all() {
            drops.push(p, DropReason::QdiscReset);
        }
        self.qstats.fill(QdiscStats::default());
    }

    /// `skbprio_change`: the limit (no frame dropped when it is lowered).
    fn change(
        &mut self,
        options: &QdiscOptions,
        _now: Instant,
        _drops: &mut Drops,
    ) -> Result<(), Refusal> {
        match options {
            QdiscOptions::Skbprio(o) => self.limit = o.limit,
            // No TCA_OPTIONS: qdisc_change does not call it.
            QdiscOptions::None => {}
            _ => return Err(super::options::foreign("skbprio")),
        }
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        let classes = self
            .qstats
            .iter()
            .enumerate()
            .map(|(i, q)| ClassDump {
                kind: "skbprio".into(),
                classid: tc_h_make(tc_h_major(self.handle), i as u16 + 1),
                parent: self.handle,
                leaf: None,
                options: Default::default(),
                stats: None,
                queue: *q,
                xstats: None,
            })
            .collect();
        let mut occupancy = QueueOccupancy::parked(self.parked.as_ref(), now);
        let bands = (0..SKBPRIO_MAX_PRIORITY)
            .rev()
            .filter(|&p| !self.queues[p].is_empty())
            .map(|p| QueueOccupancy::of_qdisc(QueueId::Band(p as u8), self.queues[p].iter(), now));
        occupancy.extend(bands);
        QdiscDump {
            kind: "skbprio".into(),
            handle: self.handle,
            parent: self.parent,
            options: QdiscOptions::Skbprio(SkbprioOptions { limit: self.limit }),
            stats: self.stats(),
            xstats: None,
            classes,
            children: Vec::new(),
            flows: Vec::new(),
            other_flows: Default::default(),
            occupancy,
        }
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        let mut out: Vec<Packet> = self.parked.take().into_iter().collect();
        for p in (0..SKBPRIO_MAX_PRIORITY).rev() {
            out.extend(self.queues[p].drain(..));
            self.qstats[p].backlog = 0;
        }
        self.highest_prio = 0;
        self.lowest_prio = SKBPRIO_MAX_PRIORITY - 1;
        self.qlen = 0;
        self.backlog = 0;
        out
    }
}

#[cfg(test)]
mod tests;
