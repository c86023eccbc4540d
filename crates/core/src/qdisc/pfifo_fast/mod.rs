//! pfifo_fast, the default root qdisc of a single-queue device (Linux
//! net/sched/sch_generic.c `pfifo_fast_enqueue`, `prio2band`): three
//! strict-priority bands chosen by `skb->priority` through a fixed priomap,
//! each band a FIFO of `txqueuelen` packets (per band, as since Linux 4.16).
//! Band 0 is served first; band 2 can starve. It takes no options and
//! dumps its bands and priomap as `struct tc_prio_qopt`.

use super::dump::{QueueId, QueueOccupancy};
use super::options::foreign as foreign_options;
use super::park::drop_all_held;
use super::{Handle, Qdisc, QdiscCtx, QdiscDump, QdiscOptions, QdiscStats, Refusal, Verdict};
use crate::packet::{DropReason, Drops, Packet};
use crate::time::Instant;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The fixed priomap: band for `priority & 15`.
pub const PRIOMAP: [u8; 16] = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];
const BANDS: usize = 3;

/// `struct tc_prio_qopt` as `pfifo_fast_dump` fills it (sch_generic.c):
/// the number of bands and the priomap. pfifo_fast takes no options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PfifoFastOptions {
    /// Number of bands: always 3 (`PFIFO_FAST_BANDS`).
    pub bands: u32,
    /// Band for each `skb->priority & 15`: always `PRIOMAP` (`prio2band`).
    pub priomap: [u8; 16],
}

/// The `pfifo_fast` qdisc (net/sched/sch_generic.c): three strict-priority
/// bands of `txqueuelen` packets each, chosen through `PRIOMAP`.
pub struct PfifoFast {
    handle: Handle,
    parent: Handle,
    band_limit: usize,
    bands: [VecDeque<Packet>; BANDS],
    backlog: u64,
    stats: QdiscStats,
}

impl PfifoFast {
    /// A pfifo_fast whose bands each hold up to the device's `txqueuelen`
    /// packets.
    pub fn new(ctx: QdiscCtx) -> Self {
        PfifoFast {
            handle: ctx.handle,
            parent: ctx.parent,
            band_limit: ctx.txqueuelen as usize,
            bands: Default::default(),
            backlog: 0,
            stats: QdiscStats::default(),
        }
    }

    /// `pfifo_fast_init`: pfifo_fast takes no options.
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        match options {
            QdiscOptions::None => Ok(PfifoFast::new(ctx)),
            _ => Err(foreign_options("pfifo_fast")),
        }
    }

    /// The band a frame with this `skb->priority` goes to.
    pub fn band_of(priority: u32) -> usize {
        PRIOMAP[(priority & 15) as usize] as usize
    }

    /// Frames held per band, for the TUI.
    pub fn band_lens(&self) -> [usize; BANDS] {
        [
            self.bands[0].len(),
            self.bands[1].len(),
            self.bands[2].len(),
        ]
    }
}

impl Qdisc for PfifoFast {
    fn kind(&self) -> &'static str {
        "pfifo_fast"
    }

    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        let band = PfifoFast::band_of(pkt.meta.priority);
        if self.bands[band].len() >= self.band_limit {
            return self.stats.reject(pkt, DropReason::QueueFull, drops);
        }
        pkt.meta.enqueue_time = now;
        self.backlog += pkt.len as u64;
        self.bands[band].push_back(pkt);
        Verdict::Queued
    }

    fn dequeue(&mut self, _now: Instant, _drops: &mut Drops) -> Option<Packet> {
        let p = self.bands.iter_mut().find_map(|b| b.pop_front())?;
        self.backlog -= p.len as u64;
        self.stats.count_sent(&p);
        Some(p)
    }

    fn peek(&mut self, _now: Instant, _drops: &mut Drops) -> Option<&Packet> {
        self.bands.iter().find_map(|b| b.front())
    }

    fn qlen(&self) -> u32 {
        self.bands.iter().map(|b| b.len() as u32).sum()
    }

    fn backlog(&self) -> u64 {
        self.backlog
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    fn can_bypass(&self) -> bool {
        true
    }

    fn count_bypass(&mut self, pkt: &Packet) {
        self.stats.count_sent(pkt);
    }

    fn reset(&mut self, drops: &mut Drops) {
        drop_all_held(self, drops);
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        QdiscDump {
            kind: "pfifo_fast".into(),
            handle: self.handle,
            parent: self.parent,
            options: QdiscOptions::PfifoFast(PfifoFastOptions {
                bands: BANDS as u32,
                priomap: PRIOMAP,
            }),
            stats: self.stats(),
            occupancy: self
                .bands
                .iter()
                .enumerate()
                .map(|(b, q)| {
                    // A band is served only once the bands before it are
                    // empty: their frames stand ahead of all of its own.
                    let before = self.bands[..b].iter().flatten();
                    QueueOccupancy::of_qdisc_behind(QueueId::Band(b as u8), q.iter(), before, now)
                })
                .collect(),
            ..QdiscDump::default()
        }
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        self.backlog = 0;
        self.bands.iter_mut().flat_map(|b| b.drain(..)).collect()
    }
}

#[cfg(test)]
mod tests;
