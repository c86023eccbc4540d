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

use super::fifo::{Fifo, FifoKind};
use super::{
    tc_h_major, tc_h_make, tc_h_minor, ClassDump, ClassOptions, Classful, Errno, FilterHost,
    FlowListing, Handle, Qdisc, QdiscCtx, QdiscDump, QdiscOptions, QdiscStats, Refusal, Verdict,
};
use crate::packet::filter::FilterChain;
use crate::packet::{Drops, Packet};
use crate::time::{earliest, Instant};
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
    /// One child per band, band 0 first (`q->queues[0..bands]`).
    queues: Vec<Box<dyn Qdisc>>,
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
        let queues = (0..tx_queues)
            .map(|i| {
                let classid = tc_h_make(tc_h_major(ctx.handle), i + 1);
                Box::new(Fifo::new(FifoKind::Pfifo, ctx.child(0, classid))) as Box<dyn Qdisc>
            })
            .collect();
        Ok(Multiq {
            ctx,
            queues,
            curband: 0,
            filters: FilterChain::new(),
            stats: QdiscStats::default(),
        })
    }

    /// The class id of band `band`: `X:band+1`.
    fn classid(&self, band: usize) -> Handle {
        tc_h_make(tc_h_major(self.ctx.handle), band as u16 + 1)
    }

    /// `multiq_find`: the band of class `classid` (its minor, 1..=bands).
    fn band(&self, classid: Handle) -> Result<usize, Refusal> {
        let minor = tc_h_minor(classid) as usize;
        if (1..=self.queues.len()).contains(&minor) {
            return Ok(minor - 1);
        }
        Err(Refusal::new(
            Errno::ENOENT,
            format!(
                "class {:x}:{:x} does not exist: this multiq has classes {:x}:1..{:x}:{:x} \
                 (one per TX queue).",
                tc_h_major(classid),
                tc_h_minor(classid),
                tc_h_major(self.ctx.handle),
                tc_h_major(self.ctx.handle),
                self.queues.len()
            ),
        ))
    }

    /// `multiq_classify`: the filters run for their skbedit action; the
    /// band is the frame's TX queue.
    fn classify(&self, pkt: &mut Packet) -> usize {
        if let Some((_, Some(p))) = self.filters.classify(&pkt.meta) {
            pkt.meta.priority = p;
        }
        // The device's pick, as link::serializer's queue_index (bands >= 2).
        usize::from(pkt.meta.queue_mapping) % self.queues.len()
    }

    /// The band after `band`, round robin (`curband++`, wrapping).
    fn next_band(&self, band: usize) -> usize {
        if band + 1 >= self.queues.len() {
            0
        } else {
            band + 1
        }
    }

    /// Runs `f` on band `band`'s child, counting the frames it frees as
    /// this qdisc's drops (`qdisc_tree_reduce_backlog`).
    fn on_child<T>(
        &mut self,
        band: usize,
        drops: &mut Drops,
        f: impl FnOnce(&mut dyn Qdisc, &mut Drops) -> T,
    ) -> T {
        let before = drops.len();
        let out = f(self.queues[band].as_mut(), drops);
        self.stats.drops += (drops.len() - before) as u64;
        out
    }
}

impl Qdisc for Multiq {
    fn kind(&self) -> &'static str {
        "multiq"
    }

    /// `multiq_enqueue`.
    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        let band = self.classify(&mut pkt);
        self.on_child(band, drops, |child, drops| child.enqueue(pkt, now, drops))
    }

    /// `multiq_dequeue`: from the band after `curband` on, the first band
    /// whose child releases a frame; `curband` stays on it.
    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        for _ in 0..self.queues.len() {
            self.curband = self.next_band(self.curband);
            let band = self.curband;
            if let Some(pkt) = self.on_child(band, drops, |child, drops| child.dequeue(now, drops))
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
        for _ in 0..self.queues.len() {
            band = self.next_band(band);
            if self.on_child(band, drops, |child, drops| child.peek(now, drops).is_some()) {
                found = Some(band);
                break;
            }
        }
        self.queues[found?].peek(now, drops)
    }

    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        self.queues
            .iter()
            .filter(|c| c.qlen() > 0)
            .fold(None, |acc, c| earliest(acc, c.next_wakeup(now)))
    }

    fn qlen(&self) -> u32 {
        self.queues.iter().map(|c| c.qlen()).sum()
    }

    fn backlog(&self) -> u64 {
        self.queues.iter().map(|c| c.backlog()).sum()
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    /// `multiq_reset`: every band's child reset, `curband` back to 0.
    fn reset(&mut self, drops: &mut Drops) {
        for c in &mut self.queues {
            c.reset(drops);
        }
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
        let children: Vec<QdiscDump> = self
            .queues
            .iter()
            .map(|c| c.dump_listing(now, listing))
            .collect();
        let classes = children
            .iter()
            .enumerate()
            .map(|(band, child)| ClassDump {
                kind: "multiq".into(),
                classid: self.classid(band),
                parent: self.ctx.handle,
                leaf: (child.handle != 0).then_some(child.handle),
                stats: Some(child.stats),
                ..ClassDump::default()
            })
            .collect();
        let bands = self.queues.len() as u16;
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
        self.queues.iter_mut().flat_map(|c| c.drain_all()).collect()
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

/// multiq's class ops have no `change` or `delete`: `tc_ctl_tclass`
/// answers EOPNOTSUPP.
fn fixed_classes(handle: Handle) -> Refusal {
    let major = tc_h_major(handle);
    Refusal::bare(Errno::EOPNOTSUPP).below(format!(
        "multiq's classes are its bands {major:x}:1..{major:x}:N, one per TX queue; attach a \
         qdisc to one with `tc qdisc add ... parent {major:x}:1 ...`"
    ))
}

impl Classful for Multiq {
    fn add_class(&mut self, classid: Handle, _: Handle, _: &ClassOptions) -> Result<(), Refusal> {
        match self.band(classid) {
            Ok(_) => Err(Refusal::bare(Errno::EEXIST).below(format!(
                "class {:x}:{:x} is a band of this multiq",
                tc_h_major(classid),
                tc_h_minor(classid)
            ))),
            Err(_) => Err(fixed_classes(self.ctx.handle)),
        }
    }

    fn change_class(&mut self, _: Handle, _: &ClassOptions) -> Result<(), Refusal> {
        Err(fixed_classes(self.ctx.handle))
    }

    fn delete_class(&mut self, _: Handle, _: &mut Drops) -> Result<(), Refusal> {
        Err(fixed_classes(self.ctx.handle))
    }

    /// `multiq_graft`: the band's child is replaced; the old one is
    /// returned with what it holds.
    fn graft(
        &mut self,
        classid: Handle,
        child: Box<dyn Qdisc>,
    ) -> Result<Option<Box<dyn Qdisc>>, Refusal> {
        let band = self.band(classid)?;
        Ok(Some(std::mem::replace(&mut self.queues[band], child)))
    }

    fn child_mut(&mut self, classid: Handle) -> Option<&mut Box<dyn Qdisc>> {
        let band = self.band(classid).ok()?;
        Some(&mut self.queues[band])
    }

    fn children_mut(&mut self) -> Vec<&mut Box<dyn Qdisc>> {
        self.queues.iter_mut().collect()
    }

    fn child_ctx(&self, handle: Handle, parent: Handle) -> QdiscCtx {
        self.ctx.child(handle, parent)
    }
}

#[cfg(test)]
mod tests;
