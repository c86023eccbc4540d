//! prio (Linux net/sched/sch_prio.c): a classful strict-priority scheduler
//! of 2..=16 bands, classes `X:1..X:bands`, each holding a child qdisc (a
//! default pfifo, `qdisc_create_dflt`, until `tc qdisc add parent X:N`
//! replaces it). `prio_classify` picks the band as `super::priomap` says
//! (priority X:N, filters, else the priomap), as ETS's does.
//! `prio_dequeue` serves the lowest band holding a frame, so band 0
//! starves the others while it has frames. The options are
//! `struct tc_prio_qopt`, pfifo_fast's (`PfifoFastOptions`), whose fixed
//! priomap is this qdisc's default; iproute2's `multiqueue` adds a
//! `TCA_PRIO_MQ` attribute `prio_tune` never reads, so it changes nothing.

use super::bands::Bands;
use super::pfifo_fast::{PfifoFastOptions, PRIOMAP};
use super::priomap;
use super::{
    tc_h_major, ClassOptions, Classful, Errno, FilterHost, FlowListing, Handle, Qdisc, QdiscCtx,
    QdiscDump, QdiscOptions, QdiscStats, Refusal, Verdict,
};
use crate::packet::filter::FilterChain;
use crate::packet::{Drops, Packet};
use crate::time::Instant;

/// `TCQ_PRIO_BANDS`: the most bands.
pub const TCQ_PRIO_BANDS: u32 = 16;
/// `TCQ_MIN_PRIO_BANDS`: the fewest bands.
pub const TCQ_MIN_PRIO_BANDS: u32 = 2;
pub use super::priomap::TC_PRIO_MAX;

/// prio's `TCA_OPTIONS`: `struct tc_prio_qopt`, the same struct
/// pfifo_fast dumps.
pub type PrioOptions = PfifoFastOptions;

/// What tc sends for `prio` without words (tc/q_prio.c's initial
/// `tc_prio_qopt`): 3 bands, pfifo_fast's priomap.
pub const DEFAULT_OPTIONS: PrioOptions = PfifoFastOptions {
    bands: 3,
    priomap: PRIOMAP,
};

/// The prio qdisc.
pub struct Prio {
    ctx: QdiscCtx,
    priomap: [u8; 16],
    /// One child per band (`q->queues[0..bands]`).
    bands: Bands,
    filters: FilterChain,
    stats: QdiscStats,
}

/// `prio_tune`'s checks: bands in 2..=16, every priomap entry a band.
/// The kernel refuses with a bare EINVAL; the note says what was wrong.
fn check(o: &PrioOptions) -> Result<(), Refusal> {
    if !(TCQ_MIN_PRIO_BANDS..=TCQ_PRIO_BANDS).contains(&o.bands) {
        return Err(Refusal::bare(Errno::EINVAL).below(format!(
            "prio: bands {}: allowed {TCQ_MIN_PRIO_BANDS}..{TCQ_PRIO_BANDS} (TCQ_PRIO_BANDS)",
            o.bands as i32
        )));
    }
    if let Some((i, b)) = o
        .priomap
        .iter()
        .enumerate()
        .find(|(_, &b)| u32::from(b) >= o.bands)
    {
        return Err(Refusal::bare(Errno::EINVAL).below(format!(
            "prio: priomap entry {i} is band {b}: with bands {} each entry must be 0..{}",
            o.bands,
            o.bands - 1
        )));
    }
    Ok(())
}

impl Prio {
    /// `prio_init`: checks the options and gives each band a default
    /// pfifo. `QdiscOptions::None` is what tc sends for a bare `prio`.
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        let o = match options {
            QdiscOptions::None => DEFAULT_OPTIONS,
            QdiscOptions::Prio(o) => *o,
            _ => return Err(super::options::foreign("prio")),
        };
        check(&o)?;
        let mut q = Prio {
            ctx,
            priomap: o.priomap,
            bands: Bands::new("prio", "one per band", TCQ_PRIO_BANDS as usize),
            filters: FilterChain::new(),
            stats: QdiscStats::default(),
        };
        q.set_bands(o.bands as usize, &mut Drops::new());
        Ok(q)
    }

    /// `prio_tune`'s bands: a band given up has its frames dropped
    /// (`qdisc_tree_flush_backlog`, counted as this qdisc's drops) and its
    /// child destroyed; a new band gets a default pfifo; the others keep
    /// theirs.
    fn set_bands(&mut self, bands: usize, drops: &mut Drops) {
        while self.bands.queues.len() > bands {
            if let Some(mut child) = self.bands.queues.pop() {
                let before = drops.len();
                child.reset(drops);
                self.stats.drops += (drops.len() - before) as u64;
            }
        }
        while self.bands.queues.len() < bands {
            self.bands.push_default(&self.ctx);
        }
    }

    /// `prio_classify` (`super::priomap`): the band a frame goes to (its
    /// skbedit action, when a filter with one matches, applied).
    fn classify(&self, pkt: &mut Packet) -> usize {
        priomap::band(
            self.ctx.handle,
            &self.priomap,
            self.bands.queues.len(),
            &self.filters,
            pkt,
        )
    }

    /// The options as `prio_dump` fills them.
    fn options(&self) -> PrioOptions {
        PfifoFastOptions {
            bands: self.bands.queues.len() as u32,
            priomap: self.priomap,
        }
    }
}

impl Qdisc for Prio {
    fn kind(&self) -> &'static str {
        "prio"
    }

    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        let band = self.classify(&mut pkt);
        self.bands
            .on_child(band, &mut self.stats, drops, |child, drops| {
                child.enqueue(pkt, now, drops)
            })
    }

    /// `prio_dequeue`: the first band, lowest first, that releases a frame.
    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        for band in 0..self.bands.queues.len() {
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

    /// `prio_peek`: the head of the first band that shows one.
    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        let band = (0..self.bands.queues.len()).find(|&band| {
            self.bands
                .on_child(band, &mut self.stats, drops, |child, drops| {
                    child.peek(now, drops).is_some()
                })
        })?;
        self.bands.queues[band].peek(now, drops)
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

    /// `prio_reset`: resets every band's child.
    fn reset(&mut self, drops: &mut Drops) {
        self.bands.reset(drops);
    }

    /// `prio_tune` on a change: the whole `tc_prio_qopt` is replaced (tc
    /// always sends all of it); a refused one changes nothing.
    fn change(
        &mut self,
        options: &QdiscOptions,
        _now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        let o = match options {
            QdiscOptions::None => DEFAULT_OPTIONS,
            QdiscOptions::Prio(o) => *o,
            _ => return Err(super::options::foreign("prio")),
        };
        check(&o)?;
        self.priomap = o.priomap;
        self.set_bands(o.bands as usize, drops);
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    /// `prio_dump`, and per band `prio_dump_class` (parent: the qdisc;
    /// leaf: the child's handle, none for a default child) with
    /// `prio_dump_class_stats` (the child's counters).
    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let (classes, children) = self.bands.dump(self.ctx.handle, now, listing);
        QdiscDump {
            kind: "prio".into(),
            handle: self.ctx.handle,
            parent: self.ctx.parent,
            options: QdiscOptions::Prio(self.options()),
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

impl FilterHost for Prio {
    fn filter_qdisc(&self) -> Handle {
        self.ctx.handle
    }

    /// `prio_tcf_block`: only the qdisc's own block.
    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, Refusal> {
        super::own_chain(&mut self.filters, "prio", parent)
    }
}

impl Prio {
    /// prio's class ops have no `change` or `delete`: `tc_ctl_tclass`
    /// answers EOPNOTSUPP (EEXIST for an add of a band that exists).
    fn how(&self) -> String {
        format!(
            "set by `tc qdisc change ... handle {:x}: prio bands N`",
            tc_h_major(self.ctx.handle)
        )
    }
}

impl Classful for Prio {
    fn add_class(&mut self, classid: Handle, _: Handle, _: &ClassOptions) -> Result<(), Refusal> {
        Err(self.bands.add_class(self.ctx.handle, classid, &self.how()))
    }

    fn change_class(&mut self, _: Handle, _: &ClassOptions) -> Result<(), Refusal> {
        Err(self.bands.fixed(self.ctx.handle, &self.how()))
    }

    fn delete_class(&mut self, _: Handle, _: &mut Drops) -> Result<(), Refusal> {
        Err(self.bands.fixed(self.ctx.handle, &self.how()))
    }

    /// `prio_graft`: the band's child is replaced; the old one is returned
    /// with what it holds, for the caller to drain or reset.
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
