//! netem, the network emulator qdisc (Linux net/sched/sch_netem.c): each
//! arriving frame may be duplicated, lost (random with correlation, the
//! 4-state chain or Gilbert–Elliott; with `ecn` an ECN-capable frame is
//! marked CE instead), corrupted (one random bit flipped), refused at
//! `limit`, then either sent at once at the head of the queue (`reorder`,
//! after `gap - 1` delayed frames) or given a time to send: now plus a
//! delay drawn around `latency` with `jitter` (uniform, or from a
//! distribution table, with correlation), plus, with a `rate`, the frame's
//! serialization time after the last frame queued (`packet_time_ns`). The
//! frames wait in the time-ordered queue (`tfifo`: a linear list appended
//! while times grow, a tree ordered by time otherwise) until their time
//! has come and, with `slot`, until a slot opens with packets and bytes
//! left in its budget; dequeue releases only those and asks to be woken at
//! the head's time (`next_wakeup`, the kernel's qdisc watchdog). The
//! random draws come from the kernel's seeded generator (`model::Prandom`,
//! `seed`), so a given seed gives the kernel's sequence of decisions. Its
//! options are `struct tc_netem_qopt` with the TCA_NETEM_* attributes
//! (`NetemOptions`); it dumps no xstats.
//!
//! netem has one class, `X:1` (`netem_class_ops`): without a child the
//! frames leave from the tfifo; with one (`tc qdisc add ... parent X:1`,
//! e.g. TBF, the classic netem + TBF recipe) `netem_dequeue` moves every
//! frame whose time has come into the child and sends what the child
//! releases. netem's qlen, backlog and limit count the child's frames, and
//! what the child drops counts in netem's drops too. Deleting the child
//! leaves netem without one, as `netem_graft` stores NULL; the class is
//! dumped only while it holds a child (`netem_dump_class`).
//!
//! `duplicate` follows Linux 6.18.y with upstream commit 9552b11e3eda
//! (May 2026, the copy's `skb->tc_depth` raised): the copy, marked so that no
//! netem duplicates it again (`skb->tc_depth`, here `meta.duplicate`), is
//! enqueued at the root of the netem's TX queue (`rootq->enqueue`). A
//! netem at the root enqueues it into itself at once, as the kernel does;
//! a netem below a parent cannot reach the root from inside the tree, so
//! it hands the copy to `Drops::push_copy` and the path enqueues it at the
//! root when the call returns (after the original, where the kernel's
//! copy goes first: the two swap their draws, and a copy that would take
//! netem's last place is dropped at the limit instead of the original).

pub mod model;

use super::one_class;
use super::options::foreign as foreign_options;
use super::park::{drop_all_held, ParkOnPeek};
use super::{
    ClassOptions, Classful, Errno, FlowListing, Handle, Qdisc, QdiscCtx, QdiscDump, QdiscOptions,
    QdiscStats, Refusal, Verdict, TC_H_ROOT,
};
use crate::packet::ecn::mark_ce;
use crate::packet::{DropReason, Drops, Packet};
use crate::time::{Instant, NS_PER_SEC};
use model::{Correlated, FourStateChain, GilbertElliottChain, LossTest, Prandom, DIST_MAX};
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// `struct tc_netem_corr`: the correlations of delay, loss and duplication
/// (u32, 100% = 2^32 - 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetemCorr {
    /// `delay_corr`.
    pub delay: u32,
    /// `loss_corr`.
    pub loss: u32,
    /// `dup_corr`.
    pub dup: u32,
}

/// `struct tc_netem_reorder` and `struct tc_netem_corrupt`: a probability
/// and its correlation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetemProb {
    /// `probability`.
    pub probability: u32,
    /// `correlation`.
    pub correlation: u32,
}

/// `struct tc_netem_rate` with TCA_NETEM_RATE64 folded in (`rate` in
/// bytes/s, 64 bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetemRate {
    /// Bytes per second (0: no rate).
    pub rate: u64,
    /// Bytes added to each frame's length.
    pub packet_overhead: i32,
    /// Cell size in bytes (0: no cells).
    pub cell_size: u32,
    /// Bytes added to each cell.
    pub cell_overhead: i32,
}

/// `struct tc_netem_slot`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetemSlot {
    /// `min_delay`, ns.
    pub min_delay: i64,
    /// `max_delay`, ns.
    pub max_delay: i64,
    /// `max_packets` (0: no limit).
    pub max_packets: i32,
    /// `max_bytes` (0: no limit).
    pub max_bytes: i32,
    /// `dist_delay`, ns (with a slot distribution table).
    pub dist_delay: i64,
    /// `dist_jitter`, ns (with a slot distribution table).
    pub dist_jitter: i64,
}

/// TCA_NETEM_LOSS's nested model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NetemLossModel {
    /// NETEM_LOSS_GI, `struct tc_netem_gimodel`.
    FourState {
        /// `p13`.
        p13: u32,
        /// `p31`.
        p31: u32,
        /// `p32`.
        p32: u32,
        /// `p14`.
        p14: u32,
        /// `p23`.
        p23: u32,
    },
    /// NETEM_LOSS_GE, `struct tc_netem_gemodel` (`h` as the kernel takes
    /// it: tc sends 100% - `1-h`).
    GilbertElliott {
        /// `p`.
        p: u32,
        /// `r`.
        r: u32,
        /// `h`.
        h: u32,
        /// `k1` (tc's `1-k`).
        k1: u32,
    },
}

/// netem's `TCA_OPTIONS`: `struct tc_netem_qopt` (limit, loss, gap,
/// duplicate; the old tick latency and jitter are not kept: tc sends them
/// as 0 and the 64-bit ones as attributes, so an absent attribute means 0)
/// and the TCA_NETEM_* attributes, each `None` when absent. As in
/// `netem_change`, a `change` keeps the corruption, rate, ECN, slot,
/// tables and generator it does not carry.
/// The dump fills every attribute the kernel's `netem_dump` puts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetemOptions {
    /// Frames held at most.
    pub limit: u32,
    /// Random loss probability (u32 scale).
    pub loss: u32,
    /// Reorder gap.
    pub gap: u32,
    /// Duplication probability.
    pub duplicate: u32,
    /// TCA_NETEM_LATENCY64, ns.
    pub latency: Option<i64>,
    /// TCA_NETEM_JITTER64, ns.
    pub jitter: Option<i64>,
    /// TCA_NETEM_CORR.
    pub corr: Option<NetemCorr>,
    /// TCA_NETEM_REORDER.
    pub reorder: Option<NetemProb>,
    /// TCA_NETEM_CORRUPT.
    pub corrupt: Option<NetemProb>,
    /// TCA_NETEM_RATE (and RATE64).
    pub rate: Option<NetemRate>,
    /// TCA_NETEM_ECN.
    pub ecn: Option<u32>,
    /// TCA_NETEM_LOSS.
    pub loss_model: Option<NetemLossModel>,
    /// TCA_NETEM_SLOT.
    pub slot: Option<NetemSlot>,
    /// TCA_NETEM_PRNG_SEED.
    pub seed: Option<u64>,
    /// TCA_NETEM_DELAY_DIST (requests only).
    pub delay_dist: Option<Vec<i16>>,
    /// TCA_NETEM_SLOT_DIST (requests only).
    pub slot_dist: Option<Vec<i16>>,
}

/// A frame with its `time_to_send` (`netem_skb_cb`).
type Held = (u64, Packet);

/// The netem qdisc.
pub struct Netem {
    ctx: QdiscCtx,
    limit: u32,
    latency: i64,
    jitter: i64,
    loss: u32,
    ecn: u32,
    gap: u32,
    counter: u32,
    duplicate: u32,
    reorder: u32,
    corrupt: u32,
    rate: NetemRate,
    corr: NetemCorr,
    reorder_corr: u32,
    corrupt_corr: u32,
    delay_cor: Correlated,
    loss_cor: Correlated,
    dup_cor: Correlated,
    reorder_cor: Correlated,
    corrupt_cor: Correlated,
    seed: u64,
    prng: Prandom,
    /// The kernel's `get_random_u32` (crandom's first `last`, the bit to
    /// corrupt, the slot delays), seeded from the ctx.
    rng: SmallRng,
    delay_dist: Option<Vec<i16>>,
    slot_dist: Option<Vec<i16>>,
    /// `q->loss_model`: `None` is random loss (`loss`, `loss_cor`).
    loss_model: Option<NetemLossModel>,
    /// The chain state of `loss_model` (`q->clg.state`).
    clg_state: u8,
    slot_config: NetemSlot,
    slot_next: u64,
    packets_left: i32,
    bytes_left: i32,
    /// `sch->q`: reordered frames, sent first.
    head: VecDeque<Held>,
    /// The tfifo's linear part (`t_head`..`t_tail`).
    linear: VecDeque<Held>,
    /// The tfifo's tree (`t_root`), by time then arrival (equal times go
    /// right, after those there).
    tree: BTreeMap<(u64, u64), Packet>,
    tree_seq: u64,
    /// Bytes in `head`, `linear` and `tree`.
    backlog: u64,
    /// The frame `peek` dequeued (`qdisc_peek_dequeued`).
    parked: Option<Packet>,
    /// Frames of this qdisc's TX queue in the device's requeue slot and
    /// their bytes, which its limit counts (`Qdisc::set_requeued`).
    requeued: (u32, u64),
    /// Copies made by `duplicate` at the root (`Qdisc::copies`).
    copies: u64,
    /// The child of class `X:1` (`q->qdisc`), fed by the tfifo.
    child: Option<Box<dyn Qdisc>>,
    stats: QdiscStats,
}

/// `validate_time`'s refusal.
fn negative(name: &str) -> Refusal {
    Refusal::new(Errno::EINVAL, format!("negative {name}"))
}

/// `netem_change`'s checks before anything is changed, in the kernel's
/// order (`get_dist_table`, `validate_slot`, `validate_time`).
fn validate(o: &NetemOptions) -> Result<(), Refusal> {
    for table in [&o.delay_dist, &o.slot_dist].into_iter().flatten() {
        if table.is_empty() || table.len() > DIST_MAX {
            return Err(Refusal::bare(Errno::EINVAL).below(format!(
                "a distribution table of {} values (1..={DIST_MAX})",
                table.len()
            )));
        }
    }
    if let Some(c) = &o.slot {
        if c.min_delay < 0 || c.max_delay < 0 {
            return Err(Refusal::new(Errno::EINVAL, "negative slot delay"));
        }
        if c.min_delay > c.max_delay {
            return Err(Refusal::new(
                Errno::EINVAL,
                "slot min delay greater than max delay",
            ));
        }
        if c.dist_delay < 0 || c.dist_jitter < 0 {
            return Err(Refusal::new(Errno::EINVAL, "negative dist delay"));
        }
        if c.max_packets < 0 || c.max_bytes < 0 {
            return Err(Refusal::new(Errno::EINVAL, "negative slot limit"));
        }
    }
    if o.latency.is_some_and(|v| v < 0) {
        return Err(negative("latency"));
    }
    if o.jitter.is_some_and(|v| v < 0) {
        return Err(negative("jitter"));
    }
    Ok(())
}

/// `tabledist`: a value around `mu` spread by `sigma` (uniform without a
/// table, else from the table, 8192 = one sigma), in the kernel's integer
/// arithmetic.
fn tabledist(
    mu: i64,
    sigma: i32,
    cor: Option<&mut Correlated>,
    prng: &mut Prandom,
    dist: Option<&[i16]>,
) -> i64 {
    if sigma == 0 {
        return mu;
    }
    let rnd = match cor {
        Some(c) => c.next(|| prng.next_u32()) as u32,
        None => prng.next_u32(),
    };
    let sigma64 = i64::from(sigma);
    let Some(table) = dist.filter(|t| !t.is_empty()) else {
        // ((rnd % (2 * (u32)sigma)) + mu) - sigma
        let span = 2u32.wrapping_mul(sigma as u32);
        let r = if span == 0 { rnd } else { rnd % span };
        return i64::from(r).wrapping_add(mu).wrapping_sub(sigma64);
    };
    let t = i64::from(table[rnd as usize % table.len()]);
    let scale = model::DIST_SCALE;
    let mut x = (sigma64 % scale) * t;
    if x >= 0 {
        x += scale / 2;
    } else {
        x -= scale / 2;
    }
    (x / scale)
        .wrapping_add((sigma64 / scale) * t)
        .wrapping_add(mu)
}

impl Netem {
    /// `netem_init`: options are required (no options: EINVAL); the
    /// generator is seeded from the ctx unless a `seed` is given.
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        let o = match options {
            QdiscOptions::Netem(o) => o,
            QdiscOptions::None => {
                return Err(
                    Refusal::bare(Errno::EINVAL).below("netem needs options (at least its limit)")
                )
            }
            _ => return Err(foreign_options("netem")),
        };
        validate(o)?;
        let seed = ctx.seed ^ 0x6e65_7465_6d00; // "netem"
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut q = Netem {
            ctx,
            limit: 0,
            latency: 0,
            jitter: 0,
            loss: 0,
            ecn: 0,
            gap: 0,
            counter: 0,
            duplicate: 0,
            reorder: 0,
            corrupt: 0,
            rate: NetemRate::default(),
            corr: NetemCorr::default(),
            reorder_corr: 0,
            corrupt_corr: 0,
            delay_cor: Correlated::default(),
            loss_cor: Correlated::default(),
            dup_cor: Correlated::default(),
            reorder_cor: Correlated::default(),
            corrupt_cor: Correlated::default(),
            seed: rng.gen(),
            prng: Prandom::seeded(0),
            rng,
            delay_dist: None,
            slot_dist: None,
            loss_model: None,
            clg_state: 1,
            slot_config: NetemSlot::default(),
            slot_next: 0,
            packets_left: 0,
            bytes_left: 0,
            head: VecDeque::new(),
            linear: VecDeque::new(),
            tree: BTreeMap::new(),
            tree_seq: 0,
            backlog: 0,
            parked: None,
            requeued: (0, 0),
            copies: 0,
            child: None,
            stats: QdiscStats::default(),
        };
        q.prng = Prandom::seeded(q.seed);
        q.install(o, Instant::ZERO);
        Ok(q)
    }

    /// `netem_change` after its checks.
    fn install(&mut self, o: &NetemOptions, now: Instant) {
        self.loss_model = o.loss_model;
        if o.loss_model.is_some() {
            self.clg_state = 1;
        }
        if let Some(d) = &o.delay_dist {
            self.delay_dist = Some(d.clone());
        }
        if let Some(d) = &o.slot_dist {
            self.slot_dist = Some(d.clone());
        }
        self.limit = o.limit;
        self.gap = o.gap;
        self.counter = 0;
        self.loss = o.loss;
        self.duplicate = o.duplicate;
        if self.gap != 0 {
            self.reorder = u32::MAX;
        }
        let rng = &mut self.rng;
        if let Some(c) = o.corr {
            self.corr = c;
            self.delay_cor = Correlated::kernel(c.delay, rng.next_u32());
            self.loss_cor = Correlated::kernel(c.loss, rng.next_u32());
            self.dup_cor = Correlated::kernel(c.dup, rng.next_u32());
        }
        if let Some(r) = o.reorder {
            self.reorder = r.probability;
            self.reorder_corr = r.correlation;
            self.reorder_cor = Correlated::kernel(r.correlation, rng.next_u32());
        }
        if let Some(r) = o.corrupt {
            self.corrupt = r.probability;
            self.corrupt_corr = r.correlation;
            self.corrupt_cor = Correlated::kernel(r.correlation, rng.next_u32());
        }
        if let Some(r) = o.rate {
            self.rate = r;
        }
        // `q->latency = PSCHED_TICKS2NS(qopt->latency)`, then the 64-bit
        // attribute if present: tc leaves the old tick fields 0, so a
        // change without `delay` sets no delay.
        self.latency = o.latency.unwrap_or(0);
        self.jitter = o.jitter.unwrap_or(0);
        if let Some(e) = o.ecn {
            self.ecn = e;
        }
        if let Some(s) = o.slot {
            self.get_slot(s, now);
        }
        self.jitter = self.jitter.unsigned_abs().min(i32::MAX as u64) as i64;
        if let Some(seed) = o.seed {
            self.seed = seed;
            self.prng = Prandom::seeded(seed);
        }
    }

    /// `get_slot`.
    fn get_slot(&mut self, c: NetemSlot, now: Instant) {
        let mut c = c;
        if c.max_packets == 0 {
            c.max_packets = i32::MAX;
        }
        if c.max_bytes == 0 {
            c.max_bytes = i32::MAX;
        }
        c.dist_jitter = c.dist_jitter.unsigned_abs().min(i32::MAX as u64) as i64;
        self.slot_config = c;
        self.packets_left = c.max_packets;
        self.bytes_left = c.max_bytes;
        // The kernel's clock is never 0 there; 0 means "no slot".
        self.slot_next = if c.min_delay | c.max_delay | c.dist_jitter != 0 {
            now.nanos().max(1)
        } else {
            0
        };
    }

    /// `get_slot_next`: the next slot opens after a delay uniform in
    /// [min, max) (or drawn from the slot table), with a full budget.
    fn get_slot_next(&mut self, now: u64) {
        let c = self.slot_config;
        let next_delay = match &self.slot_dist {
            None => {
                let span = c.max_delay.wrapping_sub(c.min_delay) as u64;
                let r = u64::from(self.rng.next_u32());
                c.min_delay
                    .wrapping_add(((u128::from(span) * u128::from(r)) >> 32) as i64)
            }
            Some(t) => tabledist(
                c.dist_delay,
                c.dist_jitter as i32,
                None,
                &mut self.prng,
                Some(t),
            ),
        };
        self.slot_next = now.wrapping_add(next_delay as u64);
        self.packets_left = c.max_packets;
        self.bytes_left = c.max_bytes;
    }

    /// `packet_time_ns`: the time `len` bytes take at the rate, with the
    /// packet overhead and the cells.
    fn packet_time_ns(&self, len: u64) -> u64 {
        let r = &self.rate;
        let mut len = len.wrapping_add(r.packet_overhead as i64 as u64);
        if r.cell_size != 0 {
            let cell = u64::from(r.cell_size);
            // reciprocal_divide on 32 bits, then one more for a remainder.
            let mut cells = (len as u32 as u64) / cell;
            if len > cells * cell {
                cells += 1;
            }
            len = cells.wrapping_mul(cell.wrapping_add(r.cell_overhead as i64 as u64));
        }
        if r.rate == 0 {
            return 0;
        }
        ((u128::from(len) * u128::from(NS_PER_SEC)) / u128::from(r.rate)) as u64
    }

    /// `loss_event`.
    fn loss_event(&mut self) -> bool {
        let prng = &mut self.prng;
        match self.loss_model {
            None => {
                self.loss != 0
                    && self
                        .loss_cor
                        .happens(u64::from(self.loss) + 1, || prng.next_u32())
            }
            Some(NetemLossModel::FourState {
                p13,
                p31,
                p32,
                p14,
                p23,
            }) => FourStateChain {
                p14: u64::from(p14),
                p13_p14: u64::from(p13.wrapping_add(p14)),
                p23: u64::from(p23),
                p32: u64::from(p32),
                p31_p32: u64::from(p31.wrapping_add(p32)),
            }
            .step(&mut self.clg_state, prng.next_u32()),
            Some(NetemLossModel::GilbertElliott { p, r, h, k1 }) => GilbertElliottChain {
                p: u64::from(p),
                r: u64::from(r),
                good_loss: LossTest::Below(u64::from(k1)),
                bad_loss: LossTest::Above(h),
            }
            .step(&mut self.clg_state, || prng.next_u32()),
        }
    }

    /// Frames held: the reordered ones and the tfifo.
    fn held(&self) -> usize {
        self.head.len() + self.linear.len() + self.tree.len()
    }

    /// A frame taken out of `head` or the tfifo: its bytes leave
    /// `backlog` (into the child, or out).
    fn leaves(&mut self, pkt: Packet) -> Packet {
        self.backlog = self.backlog.saturating_sub(u64::from(pkt.len));
        pkt
    }

    /// `tfifo_enqueue`: appended to the linear list when not earlier than
    /// its tail, else into the tree.
    fn tfifo_enqueue(&mut self, time: u64, pkt: Packet) {
        if self.linear.back().is_none_or(|(t, _)| time >= *t) {
            self.linear.push_back((time, pkt));
        } else {
            self.tree.insert((time, self.tree_seq), pkt);
            self.tree_seq += 1;
        }
    }

    /// `netem_peek`'s time: the earlier of the tree's first and the linear
    /// head (the linear head on a tie).
    fn tfifo_head_time(&self) -> Option<u64> {
        let tree = self.tree.keys().next().map(|k| k.0);
        let lin = self.linear.front().map(|h| h.0);
        match (tree, lin) {
            (Some(t1), Some(t2)) => Some(if t1 < t2 { t1 } else { t2 }),
            (a, b) => a.or(b),
        }
    }

    /// `netem_erase_head`: takes the frame `netem_peek` names.
    fn tfifo_take_head(&mut self) -> Option<Packet> {
        let tree = self.tree.keys().next().map(|k| k.0);
        let lin = self.linear.front().map(|h| h.0);
        match (tree, lin) {
            (Some(t1), Some(t2)) if t1 < t2 => self.tree.pop_first().map(|(_, p)| p),
            (Some(_), None) => self.tree.pop_first().map(|(_, p)| p),
            _ => self.linear.pop_front().map(|(_, p)| p),
        }
    }

    /// The latest `time_to_send` held (`sch->q.tail`, the tree's last, the
    /// linear tail): the rate's reference.
    fn last_time_to_send(&self) -> Option<u64> {
        [
            self.head.back().map(|h| h.0),
            self.tree.keys().next_back().map(|k| k.0),
            self.linear.back().map(|h| h.0),
        ]
        .into_iter()
        .flatten()
        .max()
    }

    /// Flips one random bit of the frame's bytes (`skb->data[...] ^= 1 <<
    /// ...`); nothing for a frame without bytes.
    fn corrupt_frame(&mut self, pkt: &mut Packet) {
        let n = pkt.data.len();
        if n == 0 {
            return;
        }
        let byte = self.rng.gen_range(0..n);
        let bit = self.rng.gen_range(0..8u32);
        pkt.data[byte] ^= 1 << bit;
    }

    /// `netem_enqueue`: a copy (`meta.duplicate`, the kernel's
    /// `tc_depth`) is not duplicated again, and draws nothing for it.
    fn enqueue_one(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        let mut count = 1;
        if self.duplicate != 0 && !pkt.meta.duplicate {
            let prng = &mut self.prng;
            if self
                .dup_cor
                .happens(u64::from(self.duplicate) + 1, || prng.next_u32())
            {
                count += 1;
            }
        }
        if self.loss_event() {
            if self.ecn != 0 && mark_ce(&mut pkt) {
                // The kernel counts the mark as a drop.
                self.stats.drops += 1;
            } else {
                count -= 1;
            }
        }
        if count == 0 {
            return self.stats.reject(pkt, DropReason::NetemLoss, drops);
        }
        // The clone is taken before the corruption (`skb_clone`, then
        // `skb_unshare` of the original only).
        let at_root = self.ctx.parent == TC_H_ROOT;
        let copy = (count > 1).then(|| {
            let mut meta = pkt.meta;
            meta.duplicate = true;
            Packet {
                data: pkt.data.clone(),
                len: pkt.len,
                meta,
            }
        });
        self.copies += u64::from(copy.is_some() && at_root);
        if self.corrupt != 0 {
            let prng = &mut self.prng;
            if self
                .corrupt_cor
                .happens(u64::from(self.corrupt) + 1, || prng.next_u32())
            {
                self.corrupt_frame(&mut pkt);
            }
        }
        // `sch->q.qlen`: the child's frames count, a parked frame, and a
        // requeued one. The kernel frees the clone unseen
        // (`__qdisc_drop`); a root's copy was counted as made, so it is
        // dropped where the path sees it.
        if self.qlen().saturating_add(self.requeued.0) >= self.limit {
            if let Some(c) = copy.filter(|_| at_root) {
                drops.push(c, DropReason::NetemLimit);
            }
            return self.stats.reject(pkt, DropReason::NetemLimit, drops);
        }
        if let Some(c) = copy {
            if at_root {
                self.enqueue_one(c, now, drops);
            } else {
                drops.push_copy(c);
            }
        }
        self.backlog += u64::from(pkt.len);
        let reorder_now = self.gap != 0 && self.counter >= self.gap - 1 && {
            let prng = &mut self.prng;
            u64::from(self.reorder) >= self.reorder_cor.next(|| prng.next_u32())
        };
        if reorder_now {
            self.counter = 0;
            self.head.push_front((now.nanos(), pkt));
            self.stats.requeues += 1;
            return Verdict::Queued;
        }
        let mut delay = tabledist(
            self.latency,
            self.jitter as i32,
            Some(&mut self.delay_cor),
            &mut self.prng,
            self.delay_dist.as_deref(),
        );
        let mut t0 = now.nanos();
        if self.rate.rate != 0 {
            if let Some(last) = self.last_time_to_send() {
                delay = delay.wrapping_sub(last.wrapping_sub(t0) as i64).max(0);
                t0 = last;
            }
            delay = delay.wrapping_add(self.packet_time_ns(u64::from(pkt.len)) as i64);
        }
        self.counter = self.counter.wrapping_add(1);
        self.tfifo_enqueue(t0.wrapping_add(delay as u64), pkt);
        Verdict::Queued
    }

    /// The options as `netem_dump` puts them.
    fn dumped_options(&self) -> NetemOptions {
        let slot = &self.slot_config;
        let dump_slot = (slot.min_delay | slot.max_delay | slot.dist_jitter) != 0;
        NetemOptions {
            limit: self.limit,
            loss: self.loss,
            gap: self.gap,
            duplicate: self.duplicate,
            latency: Some(self.latency),
            jitter: Some(self.jitter),
            corr: Some(self.corr),
            reorder: Some(NetemProb {
                probability: self.reorder,
                correlation: self.reorder_corr,
            }),
            corrupt: Some(NetemProb {
                probability: self.corrupt,
                correlation: self.corrupt_corr,
            }),
            rate: Some(self.rate),
            ecn: (self.ecn != 0).then_some(self.ecn),
            loss_model: self.loss_model,
            slot: dump_slot.then_some(NetemSlot {
                max_packets: if slot.max_packets == i32::MAX {
                    0
                } else {
                    slot.max_packets
                },
                max_bytes: if slot.max_bytes == i32::MAX {
                    0
                } else {
                    slot.max_bytes
                },
                ..*slot
            }),
            seed: Some(self.seed),
            delay_dist: None,
            slot_dist: None,
        }
    }
}

impl ParkOnPeek for Netem {
    fn parked_slot(&mut self) -> &mut Option<Packet> {
        &mut self.parked
    }

    fn sent_stats(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }

    /// `netem_dequeue` without the Sent count: a reordered frame first;
    /// else the tfifo's head once its time has come and the slot is open
    /// (a slot opened before the head's time is drawn again from now).
    /// With a child, each such frame goes into the child (what the child
    /// drops counts in netem's drops) and the loop starts again; once no
    /// frame is due, the child's next frame is sent.
    fn dequeue_next(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        loop {
            if let Some((_, p)) = self.head.pop_front() {
                return Some(self.leaves(p));
            }
            let Some(time_to_send) = self.tfifo_head_time() else {
                break;
            };
            let t = now.nanos();
            if self.slot_next != 0 && self.slot_next < time_to_send {
                self.get_slot_next(t);
            }
            if time_to_send > t || self.slot_next > t {
                break;
            }
            let p = self.tfifo_take_head()?;
            if self.slot_next != 0 {
                self.packets_left = self.packets_left.wrapping_sub(1);
                self.bytes_left = self.bytes_left.wrapping_sub(p.len as i32);
                if self.packets_left <= 0 || self.bytes_left <= 0 {
                    self.get_slot_next(t);
                }
            }
            let p = self.leaves(p);
            let Some(child) = self.child.as_mut() else {
                return Some(p);
            };
            let before = drops.len();
            child.enqueue(p, now, drops);
            self.stats.drops += (drops.len() - before) as u64;
        }
        let child = self.child.as_mut()?;
        let before = drops.len();
        let p = child.dequeue(now, drops);
        self.stats.drops += (drops.len() - before) as u64;
        p
    }
}

impl Qdisc for Netem {
    fn kind(&self) -> &'static str {
        "netem"
    }

    fn enqueue(&mut self, pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        self.enqueue_one(pkt, now, drops)
    }

    fn set_requeued(&mut self, frames: u32, bytes: u64) {
        self.requeued = (frames, bytes);
    }

    fn copies(&self) -> u64 {
        self.copies
    }

    /// `netem_dequeue` (`ParkOnPeek`: a frame `peek` took first).
    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.dequeue_parked_first(now, drops)
    }

    /// `qdisc_peek_dequeued`: runs the dequeue (slot budgets included) and
    /// parks the frame until `dequeue`.
    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        self.peek_parking(now, drops)
    }

    /// The watchdog: the head's `time_to_send` or the slot's opening,
    /// whichever is later; now when a reordered or parked frame waits;
    /// the child's own wake-up (TBF's watchdog) when it holds frames, if
    /// earlier (now for a child that is not throttled).
    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        if !self.head.is_empty() || self.parked.is_some() {
            return Some(now);
        }
        let tfifo = self
            .tfifo_head_time()
            .map(|t| Instant::from_nanos(t.max(self.slot_next)));
        let child = self
            .child
            .as_ref()
            .filter(|c| c.qlen() > 0)
            .map(|c| c.next_wakeup(now).unwrap_or(now));
        let t = match (tfifo, child) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        Some(t.max(now))
    }

    fn qlen(&self) -> u32 {
        let child = self.child.as_ref().map_or(0, |c| c.qlen());
        (self.held() + usize::from(self.parked.is_some())) as u32 + child
    }

    fn backlog(&self) -> u64 {
        let child = self.child.as_ref().map_or(0, |c| c.backlog());
        self.backlog + self.parked.as_ref().map_or(0, |p| u64::from(p.len)) + child
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    /// `netem_reset`.
    fn reset(&mut self, drops: &mut Drops) {
        drop_all_held(self, drops);
    }

    /// `netem_change`: the checks first; a refused change leaves netem as
    /// it was. Held frames keep their times.
    fn change(
        &mut self,
        options: &QdiscOptions,
        now: Instant,
        _drops: &mut Drops,
    ) -> Result<(), Refusal> {
        let QdiscOptions::Netem(o) = options else {
            return Err(foreign_options("netem"));
        };
        validate(o)?;
        self.install(o, now);
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    /// With a child, its class `X:1` (`netem_dump_class`) and the child.
    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let mut d = QdiscDump {
            kind: "netem".into(),
            handle: self.ctx.handle,
            parent: self.ctx.parent,
            options: QdiscOptions::Netem(Box::new(self.dumped_options())),
            stats: self.stats(),
            ..QdiscDump::default()
        };
        if let Some(child) = &self.child {
            let child = child.dump_listing(now, listing);
            let (class, children) =
                one_class::dump("netem", self.ctx.handle, child, &mut d.occupancy);
            d.classes = vec![class];
            d.children = children;
        }
        d
    }

    fn as_classful(&mut self) -> Option<&mut dyn Classful> {
        Some(self)
    }

    /// The parked frame, the reordered ones, the child's, then the tfifo.
    fn drain_all(&mut self) -> Vec<Packet> {
        let mut out: Vec<Packet> = self.parked.take().into_iter().collect();
        out.extend(self.head.drain(..).map(|(_, p)| p));
        if let Some(c) = &mut self.child {
            out.extend(c.drain_all());
        }
        while let Some(p) = self.tfifo_take_head() {
            out.push(p);
        }
        self.backlog = 0;
        out
    }
}

/// netem's one class `X:1` (`netem_class_ops`), through `one_class`'s
/// find, graft check, refusals and dump, with the child optional: none
/// until a qdisc is grafted, none again once it is deleted (`netem_graft`
/// stores NULL), while `netem_find` answers 1 for any id.
impl Classful for Netem {
    fn add_class(&mut self, _: Handle, _: Handle, _: &ClassOptions) -> Result<(), Refusal> {
        Err(one_class::refuse("netem"))
    }

    fn change_class(&mut self, _: Handle, _: &ClassOptions) -> Result<(), Refusal> {
        Err(one_class::refuse("netem"))
    }

    fn delete_class(&mut self, _: Handle, _: &mut Drops) -> Result<(), Refusal> {
        Err(one_class::refuse("netem"))
    }

    fn graft(
        &mut self,
        classid: Handle,
        child: Box<dyn Qdisc>,
    ) -> Result<Option<Box<dyn Qdisc>>, Refusal> {
        one_class::check_graft("netem", self.ctx.handle, classid)?;
        Ok(self.child.replace(child))
    }

    fn ungraft(&mut self, classid: Handle) -> Result<Option<Box<dyn Qdisc>>, Refusal> {
        one_class::check_graft("netem", self.ctx.handle, classid)?;
        Ok(self.child.take())
    }

    fn child_mut(&mut self, _: Handle) -> Option<&mut Box<dyn Qdisc>> {
        self.child.as_mut()
    }

    fn children_mut(&mut self) -> Vec<&mut Box<dyn Qdisc>> {
        self.child.iter_mut().collect()
    }

    fn child_ctx(&self, handle: Handle, parent: Handle) -> QdiscCtx {
        self.ctx.child(handle, parent)
    }

    fn find_class(&self, classid: Handle) -> Handle {
        one_class::find(self.ctx.handle, classid)
    }

    fn undumped_class(&self, classid: Handle) -> bool {
        self.child.is_none() && classid == one_class::classid(self.ctx.handle)
    }
}

#[cfg(test)]
mod tests;
