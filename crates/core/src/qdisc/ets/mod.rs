//! ETS, Enhanced Transmission Selection (Linux net/sched/sch_ets.c, IEEE
//! 802.1Qaz): PRIO and DRR in one classful qdisc of 1..=16 bands, classes
//! `X:1..X:bands`, each holding a child qdisc (a default pfifo until `tc
//! qdisc add parent X:N` replaces it). The first `strict` bands are served
//! in strict priority, band 0 first, while any holds a frame; the others
//! share what is left by deficit round robin on their quanta
//! (`super::rounds`, the loop DRR has). `ets_classify` is prio's
//! (`super::priomap`); the priomap defaults to the last band for every
//! priority, and a bandwidth-sharing band given no quantum gets the
//! device's psched_mtu. Bands are set by the qdisc's options only
//! (`ets_qdisc_change`, with its extack messages); a class takes `tc class
//! change ... ets quantum N` for a bandwidth-sharing band. Peeking parks
//! the next frame (`qdisc_peek_dequeued`). Follows Linux v6.18.

use super::dump::QueueOccupancy;
use super::fifo::{Fifo, FifoKind};
use super::park::ParkOnPeek;
use super::priomap::{self, TC_PRIO_MAX};
use super::rounds::{Member, RoundClass, Rounds};
use super::{
    tc_h_major, tc_h_make, ClassDump, ClassOptions, Classful, Errno, FilterHost, FlowListing,
    Handle, Qdisc, QdiscCtx, QdiscDump, QdiscOptions, QdiscStats, Refusal, Verdict, TC_H_ROOT,
};
use crate::packet::filter::FilterChain;
use crate::packet::{DropReason, Drops, Packet};
use crate::time::{earliest, Instant};

/// `TCQ_ETS_MAX_BANDS`: the most bands.
pub const TCQ_ETS_MAX_BANDS: u8 = 16;

/// ETS's `TCA_OPTIONS`, as tc/q_ets.c sends them and `ets_qdisc_dump`
/// fills them.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EtsOptions {
    /// `TCA_ETS_NBANDS` (`None`: left out, which the kernel refuses).
    pub bands: Option<u8>,
    /// `TCA_ETS_NSTRICT` (`None`: left out, 0; a dump leaves out 0).
    pub strict: Option<u8>,
    /// `TCA_ETS_QUANTA`: the quanta of the bands after the strict ones, in
    /// order (empty: the nest left out).
    pub quanta: Vec<u32>,
    /// `TCA_ETS_PRIOMAP`: the bands of priorities 0, 1, ... (empty: left
    /// out; a dump has all 16).
    pub priomap: Vec<u8>,
}

/// An ETS class's `TCA_OPTIONS` (`TCA_ETS_QUANTA_BAND`, tc's `quantum`):
/// `None` is the attribute left out (a change that changes nothing; a
/// strict band's dump).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EtsClassOptions {
    /// The band's quantum, bytes.
    pub quantum: Option<u32>,
}

/// One band (`struct ets_class`).
struct Band {
    child: Box<dyn Qdisc>,
    /// 0 for a strict band.
    quantum: u32,
    deficit: u32,
}

impl RoundClass for Band {
    fn member(&mut self) -> Member<'_> {
        Member {
            child: self.child.as_mut(),
            quantum: self.quantum,
            deficit: &mut self.deficit,
        }
    }
}

/// The ETS qdisc.
pub struct Ets {
    ctx: QdiscCtx,
    /// `q->classes[0..nbands]`.
    bands: Vec<Band>,
    nstrict: usize,
    priomap: [u8; 16],
    /// The bandwidth-sharing bands that hold frames, by index.
    rounds: Rounds<usize>,
    filters: FilterChain,
    /// The frame `peek` took out (`qdisc_peek_dequeued`).
    parked: Option<Packet>,
    stats: QdiscStats,
}

/// An `ets_qdisc_change` refusal: `NL_SET_ERR_MSG_MOD`'s module prefix.
/// (Each message here ends with the period tc adds to an extack message
/// that lacks one, lib/libnetlink.c `print_ext_ack_msg`.)
fn refuse(msg: &str) -> Refusal {
    Refusal::new(Errno::EINVAL, format!("sch_ets: {msg}"))
}

/// "ETS quantum cannot be zero." (`ets_quantum_parse`).
fn check_quantum(q: u32) -> Result<u32, Refusal> {
    if q == 0 {
        return Err(Refusal::new(Errno::EINVAL, "ETS quantum cannot be zero."));
    }
    Ok(q)
}

/// What `ets_qdisc_change` checks and works out before it commits: the
/// bands, strict bands, priomap and every band's quantum (0 for a strict
/// one).
struct Plan {
    nbands: usize,
    nstrict: usize,
    priomap: [u8; 16],
    quanta: [u32; TCQ_ETS_MAX_BANDS as usize],
}

/// `ets_qdisc_change`'s checks, in its order, with `psched_mtu` the quantum
/// of a bandwidth-sharing band given none.
fn plan(o: &EtsOptions, psched_mtu: u32) -> Result<Plan, Refusal> {
    let nbands = o
        .bands
        .ok_or_else(|| refuse("Number of bands is a required argument."))?;
    if !(1..=TCQ_ETS_MAX_BANDS).contains(&nbands) {
        return Err(refuse("Invalid number of bands."));
    }
    let mut priomap = [nbands - 1; 16];
    let nstrict = o.strict.unwrap_or(0);
    if nstrict > nbands {
        return Err(refuse("Invalid number of strict bands."));
    }
    for (prio, &band) in o.priomap.iter().enumerate() {
        if prio > TC_PRIO_MAX as usize {
            return Err(refuse("Too many priorities in ETS priomap."));
        }
        if band >= nbands {
            return Err(refuse("Invalid band number in ETS priomap."));
        }
        priomap[prio] = band;
    }
    let (nbands, nstrict) = (nbands as usize, nstrict as usize);
    let mut quanta = [0; TCQ_ETS_MAX_BANDS as usize];
    for (i, &q) in o.quanta.iter().enumerate() {
        let band = nstrict + i;
        if band >= nbands {
            return Err(refuse("ETS quanta has more values than bands."));
        }
        quanta[band] = check_quantum(q)?;
    }
    for q in &mut quanta[nstrict..nbands] {
        if *q == 0 {
            *q = psched_mtu;
        }
    }
    Ok(Plan {
        nbands,
        nstrict,
        priomap,
        quanta,
    })
}

impl Ets {
    /// `ets_qdisc_init`: options are required (a bare EINVAL without
    /// them), then `ets_qdisc_change`.
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        let o = match options {
            QdiscOptions::Ets(o) => o,
            QdiscOptions::None => {
                return Err(Refusal::bare(Errno::EINVAL)
                    .below("ets needs options: bands, strict or quanta"))
            }
            _ => return Err(super::options::foreign("ets")),
        };
        let plan = plan(o, ctx.psched_mtu)?;
        let mut q = Ets {
            ctx,
            bands: Vec::with_capacity(TCQ_ETS_MAX_BANDS as usize),
            nstrict: 0,
            priomap: [0; 16],
            rounds: Rounds::new(),
            filters: FilterChain::new(),
            parked: None,
            stats: QdiscStats::default(),
        };
        q.commit(&plan, &mut Drops::new());
        Ok(q)
    }

    /// The class id of band `band`: `X:band+1`.
    fn classid(&self, band: usize) -> Handle {
        tc_h_make(tc_h_major(self.ctx.handle), band as u16 + 1)
    }

    /// `ets_class_find`: the band of class `classid` (its minor,
    /// 1..=bands; the major is not read).
    fn band_of(&self, classid: Handle) -> Option<usize> {
        let minor = super::tc_h_minor(classid) as usize;
        (1..=self.bands.len()).contains(&minor).then(|| minor - 1)
    }

    /// `ets_qdisc_change`'s commit: bands given up have their frames
    /// purged (counted as this qdisc's drops) and their child destroyed;
    /// bands that stop being strict and hold frames join the active list
    /// with their new quantum; bands that become strict leave it; new
    /// bands get a default pfifo.
    fn commit(&mut self, p: &Plan, drops: &mut Drops) {
        let (old_bands, old_strict) = (self.bands.len(), self.nstrict);
        while self.bands.len() > p.nbands {
            let band = self.bands.len() - 1;
            self.rounds.leave(band);
            self.on_child(band, drops, |child, drops| child.reset(drops));
            self.bands.pop();
        }
        for (i, b) in self.bands.iter_mut().enumerate() {
            b.quantum = p.quanta[i];
        }
        for i in p.nstrict..old_strict.min(p.nbands) {
            if self.bands[i].child.qlen() > 0 {
                self.rounds.join(i, self.bands[i].member());
            }
        }
        for i in old_strict..p.nstrict.min(old_bands) {
            self.rounds.leave(i);
        }
        self.nstrict = p.nstrict;
        self.priomap = p.priomap;
        for i in old_bands..p.nbands {
            let child = Fifo::new(FifoKind::Pfifo, self.ctx.child(0, self.classid(i)));
            self.bands.push(Band {
                child: Box::new(child),
                quantum: p.quanta[i],
                deficit: 0,
            });
        }
    }

    /// Runs `f` on band `band`'s child, counting the frames it frees as
    /// this qdisc's drops (the kernel's `qdisc_tree_reduce_backlog`).
    fn on_child<T>(
        &mut self,
        band: usize,
        drops: &mut Drops,
        f: impl FnOnce(&mut dyn Qdisc, &mut Drops) -> T,
    ) -> T {
        let before = drops.len();
        let out = f(self.bands[band].child.as_mut(), drops);
        self.stats.drops += (drops.len() - before) as u64;
        out
    }

    /// Puts bandwidth-sharing band `band` on the active list if its child
    /// holds frames and it is not there, or takes it off if its child is
    /// empty; a strict band is never on it.
    fn sync_active(&mut self, band: usize) {
        if band < self.nstrict {
            return;
        }
        self.rounds.sync(band, self.bands[band].member());
    }

    /// The options as `ets_qdisc_dump` fills them.
    fn options(&self) -> EtsOptions {
        EtsOptions {
            bands: Some(self.bands.len() as u8),
            strict: (self.nstrict > 0).then_some(self.nstrict as u8),
            quanta: self.bands[self.nstrict..]
                .iter()
                .map(|b| b.quantum)
                .collect(),
            priomap: self.priomap.to_vec(),
        }
    }
}

impl ParkOnPeek for Ets {
    fn parked_slot(&mut self) -> &mut Option<Packet> {
        &mut self.parked
    }

    fn sent_stats(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }

    /// `ets_qdisc_dequeue`: the first strict band, lowest first, that
    /// releases a frame; else the round robin of the others.
    fn dequeue_next(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        for band in 0..self.nstrict {
            if let Some(p) = self.on_child(band, drops, |child, drops| child.dequeue(now, drops)) {
                return Some(p);
            }
        }
        let before = drops.len();
        let next = self.rounds.dequeue(
            &mut self.bands,
            |bands, band| (band < bands.len()).then_some(band),
            now,
            drops,
        );
        self.stats.drops += (drops.len() - before) as u64;
        next.map(|(_, p)| p)
    }
}

impl Qdisc for Ets {
    fn kind(&self) -> &'static str {
        "ets"
    }

    /// `ets_qdisc_enqueue`. As in DRR, a bandwidth-sharing band joins the
    /// active list whenever its child holds frames after the enqueue (the
    /// kernel skips that on a child's NET_XMIT_CN).
    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        let band = priomap::band(
            self.ctx.handle,
            &self.priomap,
            self.bands.len(),
            &self.filters,
            &mut pkt,
        );
        let verdict = self.on_child(band, drops, |child, drops| child.enqueue(pkt, now, drops));
        self.sync_active(band);
        verdict
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.dequeue_parked_first(now, drops)
    }

    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        self.peek_parking(now, drops)
    }

    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        if self.parked.is_some() {
            return None;
        }
        self.bands
            .iter()
            .filter(|b| b.child.qlen() > 0)
            .fold(None, |acc, b| earliest(acc, b.child.next_wakeup(now)))
    }

    fn qlen(&self) -> u32 {
        self.parked.is_some() as u32 + self.bands.iter().map(|b| b.child.qlen()).sum::<u32>()
    }

    fn backlog(&self) -> u64 {
        self.parked.as_ref().map_or(0, |p| p.len as u64)
            + self.bands.iter().map(|b| b.child.backlog()).sum::<u64>()
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    /// `ets_qdisc_reset`: every band off the active list, every child
    /// reset; the parked frame is dropped too.
    fn reset(&mut self, drops: &mut Drops) {
        if let Some(p) = self.parked.take() {
            drops.push(p, DropReason::QdiscReset);
        }
        for b in &mut self.bands {
            b.child.reset(drops);
        }
        self.rounds.clear();
    }

    /// `ets_qdisc_change`; a request without options changes nothing
    /// (`qdisc_change` calls the kind's `change` only with `TCA_OPTIONS`).
    /// A refused one changes nothing.
    fn change(
        &mut self,
        options: &QdiscOptions,
        _now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        let o = match options {
            QdiscOptions::Ets(o) => o,
            QdiscOptions::None => return Ok(()),
            _ => return Err(super::options::foreign("ets")),
        };
        let plan = plan(o, self.ctx.psched_mtu)?;
        self.commit(&plan, drops);
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    /// `ets_qdisc_dump`, and per band `ets_class_dump` (parent: root;
    /// a quantum for a bandwidth-sharing band) with `ets_class_dump_stats`
    /// (the child's counters).
    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let children: Vec<QdiscDump> = self
            .bands
            .iter()
            .map(|b| b.child.dump_listing(now, listing))
            .collect();
        let classes = children
            .iter()
            .enumerate()
            .map(|(band, child)| ClassDump {
                kind: "ets".into(),
                classid: self.classid(band),
                parent: TC_H_ROOT,
                leaf: (child.handle != 0).then_some(child.handle),
                options: ClassOptions::Ets(EtsClassOptions {
                    quantum: (band >= self.nstrict).then_some(self.bands[band].quantum),
                }),
                stats: Some(child.stats),
                ..ClassDump::default()
            })
            .collect();
        QdiscDump {
            kind: "ets".into(),
            handle: self.ctx.handle,
            parent: self.ctx.parent,
            options: QdiscOptions::Ets(self.options()),
            stats: self.stats(),
            classes,
            children,
            occupancy: QueueOccupancy::parked(self.parked.as_ref(), now),
            ..QdiscDump::default()
        }
    }

    fn as_classful(&mut self) -> Option<&mut dyn Classful> {
        Some(self)
    }

    fn as_filter_host(&mut self) -> Option<&mut dyn FilterHost> {
        Some(self)
    }

    /// The parked frame, the strict bands in order, the active bands in
    /// list order, then any other band's frames.
    fn drain_all(&mut self) -> Vec<Packet> {
        let mut frames: Vec<Packet> = self.parked.take().into_iter().collect();
        let order: Vec<usize> = (0..self.nstrict).chain(self.rounds.iter()).collect();
        for band in order {
            frames.extend(self.bands[band].child.drain_all());
        }
        for b in &mut self.bands {
            frames.extend(b.child.drain_all());
        }
        self.rounds.clear();
        frames
    }
}

impl FilterHost for Ets {
    fn filter_qdisc(&self) -> Handle {
        self.ctx.handle
    }

    /// `ets_qdisc_tcf_block`: only the qdisc's own block ("ETS classid
    /// must be zero").
    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, Refusal> {
        match parent {
            Some(p) if p != TC_H_ROOT && super::tc_h_minor(p) != 0 => {
                Err(Refusal::new(Errno::EINVAL, "ETS classid must be zero."))
            }
            _ => Ok(&mut self.filters),
        }
    }
}

impl Classful for Ets {
    /// `ets_class_change` with no class: "Fine-grained class addition and
    /// removal is not supported".
    fn add_class(&mut self, _: Handle, _: Handle, _: &ClassOptions) -> Result<(), Refusal> {
        Err(Refusal::new(
            Errno::EOPNOTSUPP,
            "Fine-grained class addition and removal is not supported.",
        ))
    }

    /// `ets_class_change`: a bandwidth-sharing band's quantum; a request
    /// without `quantum` changes nothing.
    fn change_class(&mut self, classid: Handle, options: &ClassOptions) -> Result<(), Refusal> {
        let band = self.band_of(classid).ok_or_else(|| {
            Refusal::new(
                Errno::EOPNOTSUPP,
                "Fine-grained class addition and removal is not supported.",
            )
        })?;
        let o = match options {
            ClassOptions::Ets(o) => *o,
            ClassOptions::None => {
                return Err(Refusal::new(
                    Errno::EINVAL,
                    "ETS options are required for this operation.",
                ))
            }
            _ => return Err(super::options::foreign("ets")),
        };
        let Some(q) = o.quantum else {
            return Ok(());
        };
        if band < self.nstrict {
            return Err(Refusal::new(
                Errno::EINVAL,
                "Strict bands do not have a configurable quantum.",
            ));
        }
        self.bands[band].quantum = check_quantum(q)?;
        Ok(())
    }

    /// ETS's class ops have no `delete`: `tclass_del_notify` answers a
    /// bare EOPNOTSUPP.
    fn delete_class(&mut self, _: Handle, _: &mut Drops) -> Result<(), Refusal> {
        let major = tc_h_major(self.ctx.handle);
        Err(Refusal::bare(Errno::EOPNOTSUPP).below(format!(
            "ets's classes are its bands {major:x}:1..{major:x}:N, set by `tc qdisc change ... \
             handle {major:x}: ets bands N`"
        )))
    }

    /// `ets_class_graft`: the band's child is replaced; the old one is
    /// returned with what it holds, for the caller to drain or reset.
    fn graft(
        &mut self,
        classid: Handle,
        child: Box<dyn Qdisc>,
    ) -> Result<Option<Box<dyn Qdisc>>, Refusal> {
        let band = self.band_of(classid).ok_or_else(|| {
            Refusal::bare(Errno::ENOENT).below(format!(
                "class {:x}:{:x} is not a band of this ets",
                tc_h_major(classid),
                super::tc_h_minor(classid)
            ))
        })?;
        let old = std::mem::replace(&mut self.bands[band].child, child);
        self.sync_active(band);
        Ok(Some(old))
    }

    fn child_mut(&mut self, classid: Handle) -> Option<&mut Box<dyn Qdisc>> {
        let band = self.band_of(classid)?;
        Some(&mut self.bands[band].child)
    }

    fn children_mut(&mut self) -> Vec<&mut Box<dyn Qdisc>> {
        self.bands.iter_mut().map(|b| &mut b.child).collect()
    }

    fn child_ctx(&self, handle: Handle, parent: Handle) -> QdiscCtx {
        self.ctx.child(handle, parent)
    }
}

#[cfg(test)]
mod tests;
