//! multiq (Linux net/sched/sch_multiq.c, as of Linux 6.18): a classful
//! qdisc of one band per TX queue of a multi-queue device
//! (`real_num_tx_queues` bands; `max_bands` is `num_tx_queues`, the same
//! here), classes `X:1..X:bands`, each holding a child qdisc (a default
//! pfifo, `qdisc_create_dflt`, until `tc qdisc add parent X:N` replaces
//! it). `multiq_classify` runs the qdisc's filters for their actions only
//! (the skbedit priority; their class ids are not read) and puts the frame
//! in the band of its TX queue (`skb_get_queue_mapping`: bloatbox's queue
//! mapping taken modulo the queue count, as the device picks the queue).
//! `multiq_dequeue` serves the bands round robin, one frame a turn,
//! starting after the band served last. The kernel skips the band of a
//! stopped TX queue; a non-mq root runs as one queue in bloatbox, so no
//! band is ever stopped and none is skipped. On a single-queue device the
//! kernel refuses multiq (EOPNOTSUPP).

use super::bands::Bands;
use super::{
    ClassOptions, Classful, Errno, FilterHost, FlowListing, Handle, Qdisc, QdiscCtx, QdiscDump,
    QdiscOptions, QdiscStats, Refusal, Verdict,
};
use crate::packet::filter::FilterChain;
use crate::packet::{Drops, Packet};
use crate::time::Instant;
use serde::{Deserialize, Serialize};

/// `struct tc_multiq_qopt`: what `multiq_dump` fills (tc sends it zeroed;
/// `multiq_tune` reads neither field).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MultiqOptions {
    /// Bands: the device's real TX queue count.
    pub bands: u16,
    /// `num_tx_queues`.
    pub max_bands: u16,
}

/// The multiq qdisc (`struct multiq_sched_data`).
pub struct Multiq {
    ctx: QdiscCtx,
    /// One child per band (`q->queues[0..bands]`).
    bands: Bands,
    /// The band served last (`q->curband`).
    curband: usize,
    filters: FilterChain,
    stats: QdiscStats,
}

impl Multiq {
    /// `multiq_init` and `multiq_tune` on a device of `tx_queues` queues:
    /// EOPNOTSUPP unless `netif_is_multiqueue`, else one band per queue
    /// with a default pfifo. `QdiscOptions::None` stands for tc's zeroed
    /// struct (the configuration's defaults).
    pub fn build(ctx: QdiscCtx, tx_queues: u16, options: &QdiscOptions) -> Result<Self, Refusal> {
        match options {
            QdiscOptions::None | QdiscOptions::Multiq(_) => {}
            _ => return Err(super::options::foreign("multiq")),
        }
        if tx_queues <= 1 {
            return Err(Refusal::bare(Errno::EOPNOTSUPP).below(
                "multiq needs a multi-queue device (netif_is_multiqueue): give the link \
                 tx_queues 2 or more",
            ));
        }
        let mut bands = Bands::new("multiq", "one per TX queue", usize::from(tx_queues));
        for _ in 0..tx_queues {
            bands.push_default(&ctx);
        }
        Ok(Multiq {
            ctx,
            bands,
            curband: 0,
            filters: FilterChain::new(),
            stats: QdiscStats::default(),
        })
    }

    /// `multiq_classify`: the filters run for their skbedit action; the
    /// band is the frame's TX queue.
    fn classify(&self, pkt: &mut Packet) -> usize {
        if let Some((_, Some(p))) = self.filters.classify(&pkt.meta) {
            pkt.meta.priority = p;
        }
        // The device's pick, as link::serializer's queue_index (bands >= 2).
        usize::from(pkt.meta.queue_mapping) % self.bands.queues.len()
    }

    /// The band after `band`, round robin (`curband++`, wrapping).
    fn next_band(&self, band: usize) -> usize {
        if band + 1 >= self.bands.queues.len() {
            0
        } else {
            band + 1
        }
    }
}

impl Qdisc for Multiq {
    fn kind(&self) -> &'static str {
        "multiq"
    }

    /// `multiq_enqueue`.
    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        let band = self.classify(&mut pkt);
        self.bands
            .on_child(band, &mut self.stats, drops, |child, drops| {
                child.enqueue(pkt, now, drops)
            })
    }

    /// `multiq_dequeue`: from the band after `curband` on, the first band
    /// whose child releases a frame; `curband` stays on it.
    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        for _ in 0..self.bands.queues.len() {
            self.curband = self.next_band(self.curband);
            let band = self.curband;
            if let Some(pkt) = self
                .bands
                .on_child(band, &mut self.stats, drops, |child, drops| {
                    child.dequeue(now, drops)
                })
            {
                self.stats.count_sent(&pkt);
                return Some(pkt);
            }
        }
        None
    }

    /// `multiq_peek`: the same walk without moving `curband`.
    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        let mut band = self.curband;
        let mut found = None;
        for _ in 0..self.bands.queues.len() {
            band = self.next_band(band);
            if self
                .bands
                .on_child(band, &mut self.stats, drops, |child, drops| {
                    child.peek(now, drops).is_some()
                })
            {
                found = Some(band);
                break;
            }
        }
        self.bands.queues[found?].peek(now, drops)
    }

    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        self.bands.next_wakeup(now)
    }

    fn qlen(&self) -> u32 {
        self.bands.qlen()
    }

    fn backlog(&self) -> u64 {
        self.bands.backlog()
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    /// `multiq_reset`: every band's child reset, `curband` back to 0.
    fn reset(&mut self, drops: &mut Drops) {
        self.bands.reset(drops);
        self.curband = 0;
    }

    /// `multiq_tune` on a change: the bands stay the device's queue count,
    /// so nothing changes.
    fn change(
        &mut self,
        options: &QdiscOptions,
        _now: Instant,
        _drops: &mut Drops,
    ) -> Result<(), Refusal> {
        match options {
            QdiscOptions::None | QdiscOptions::Multiq(_) => Ok(()),
            _ => Err(super::options::foreign("multiq")),
        }
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    /// `multiq_dump`, and per band `multiq_dump_class` (leaf: the child's
    /// handle) with `multiq_dump_class_stats` (the child's counters).
    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let (classes, children) = self.bands.dump(self.ctx.handle, now, listing);
        let bands = self.bands.queues.len() as u16;
        QdiscDump {
            kind: "multiq".into(),
            handle: self.ctx.handle,
            parent: self.ctx.parent,
            options: QdiscOptions::Multiq(MultiqOptions {
                bands,
                max_bands: bands,
            }),
            stats: self.stats(),
            classes,
            children,
            ..QdiscDump::default()
        }
    }

    fn as_classful(&mut self) -> Option<&mut dyn Classful> {
        Some(self)
    }

    fn as_filter_host(&mut self) -> Option<&mut dyn FilterHost> {
        Some(self)
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        self.bands.drain_all()
    }
}

impl FilterHost for Multiq {
    fn filter_qdisc(&self) -> Handle {
        self.ctx.handle
    }

    /// `multiq_tcf_block`: only the qdisc's own block.
    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, Refusal> {
        super::own_chain(&mut self.filters, "multiq", parent)
    }
}

/// How multiq's bands are set, in the refusal of a class add, change or
/// delete (its class ops have neither `change` nor `delete`).
const HOW: &str = "one per TX queue";

impl Classful for Multiq {
    fn add_class(&mut self, classid: Handle, _: Handle, _: &ClassOptions) -> Result<(), Refusal> {
        Err(self.bands.add_class(self.ctx.handle, classid, HOW))
    }

    fn change_class(&mut self, _: Handle, _: &ClassOptions) -> Result<(), Refusal> {
        Err(self.bands.fixed(self.ctx.handle, HOW))
    }

    fn delete_class(&mut self, _: Handle, _: &mut Drops) -> Result<(), Refusal> {
        Err(self.bands.fixed(self.ctx.handle, HOW))
    }

    /// `multiq_graft`: the band's child is replaced; the old one is
    /// returned with what it holds.
    fn graft(
        &mut self,
        classid: Handle,
        child: Box<dyn Qdisc>,
    ) -> Result<Option<Box<dyn Qdisc>>, Refusal> {
        self.bands.graft(self.ctx.handle, classid, child)
    }

    fn child_mut(&mut self, classid: Handle) -> Option<&mut Box<dyn Qdisc>> {
        self.bands.child_mut(self.ctx.handle, classid)
    }

    fn children_mut(&mut self) -> Vec<&mut Box<dyn Qdisc>> {
        self.bands.queues.iter_mut().collect()
    }

    fn child_ctx(&self, handle: Handle, parent: Handle) -> QdiscCtx {
        self.ctx.child(handle, parent)
    }
}

#[cfg(test)]
mod tests;
