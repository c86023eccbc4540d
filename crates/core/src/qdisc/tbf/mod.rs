//! TBF, the Token Bucket Filter (Linux net/sched/sch_tbf.c): a classful
//! shaper with one class `:1` whose child (by default a bfifo of `limit`
//! bytes) holds the frames. Two buckets in nanoseconds of transmission
//! time: `tokens` (depth `buffer` = l2t(rate, burst)) and, with a peakrate,
//! `ptokens` (depth l2t(peakrate, mtu)). The head frame leaves only when
//! both buckets cover its whole cost; otherwise the watchdog is armed for
//! the deficit. Its options are `struct tc_tbf_qopt` with the
//! TCA_TBF_RATE64/PRATE64/BURST/PBURST attributes (`TbfOptions`).

use super::dump::QueueOccupancy;
use super::fifo::{Fifo, FifoKind, FifoOptions};
use super::one_class::{self, OneClass};
use super::options::foreign as foreign_options;
use super::options::RateSpec;
use super::park::ParkOnPeek;
use super::QdiscOptions;
use super::{
    Classful, Errno, FlowListing, Qdisc, QdiscCtx, QdiscDump, QdiscStats, Refusal, Verdict,
};
use crate::packet::{DropReason, Drops, Packet};
use crate::time::Instant;
use crate::units::{print_rate, LinkLayer, PschedRate};
use serde::{Deserialize, Serialize};

/// TBF's `TCA_OPTIONS` (sch_tbf.c `tbf_change`, `tbf_dump`): `struct
/// tc_tbf_qopt` (rate, peakrate, limit, buffer, mtu) and the attributes
/// iproute2's `tbf_parse_opt` adds: TCA_TBF_BURST and TCA_TBF_PBURST (the
/// bucket sizes in bytes, which the kernel prefers to `buffer`/`mtu`).
/// `tbf_dump` fills the struct and leaves the two attributes out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TbfOptions {
    /// The token rate (`tc_tbf_qopt.rate`).
    pub rate: RateSpec,
    /// None (or a zero rate): no peak bucket.
    pub peakrate: Option<RateSpec>,
    /// The default bfifo child's limit, bytes.
    pub limit: u32,
    /// The rate bucket's depth in psched ticks (64 ns). The kernel's field
    /// is 32 bits; bloatbox keeps the ticks of buckets beyond 4.6 minutes.
    pub buffer: u64,
    /// The peak bucket's depth in psched ticks.
    pub mtu: u64,
    /// TCA_TBF_BURST: the rate bucket in bytes.
    pub burst: Option<u32>,
    /// TCA_TBF_PBURST: the peak bucket in bytes.
    pub pburst: Option<u32>,
}

/// `psched_l2t_ns` as a signed bucket quantity.
fn l2t(rate: &PschedRate, len: u64) -> i64 {
    i64::try_from(rate.l2t_ns(len)).unwrap_or(i64::MAX)
}

/// `psched_ns_t2l` (sch_tbf.c): the bytes `ns` of transmission time at
/// `rate` send, less the overhead, in whole 48-byte payloads on ATM.
fn ns_t2l(rate: &PschedRate, ns: u64) -> u64 {
    let mut len = (ns as u128 * rate.rate_bytes_ps as u128 / 1_000_000_000) as u64;
    if rate.linklayer == LinkLayer::Atm {
        len = len / 53 * 48;
    }
    len.saturating_sub(rate.overhead.max(0) as u64)
}

/// Psched ticks (64 ns) of a nanosecond value, as the kernel dumps them
/// (`PSCHED_NS2TICKS`).
pub(crate) fn ns_to_ticks(ns: i64) -> i64 {
    ns >> 6
}

/// `PSCHED_TICKS2NS`, capped at `~0U` as `tbf_change` caps it.
fn ticks_to_ns(ticks: u64) -> u64 {
    ticks.saturating_mul(64).min(u32::MAX as u64)
}

/// What the kernel derives from the options (`tbf_change`).
#[derive(Clone, Debug)]
struct TbfParams {
    rate: PschedRate,
    peak: Option<PschedRate>,
    /// Bucket depth, ns of transmission time at `rate`.
    buffer: i64,
    /// Peak bucket depth, ns at `peak` (0 without a peakrate).
    mtu: i64,
    /// Largest frame that can ever pass.
    max_size: u64,
    limit: u64,
}

impl TbfOptions {
    /// The largest packet the buckets let through (`max_size` of
    /// `tbf_change`, sch_tbf.c): the rate bucket's bytes, and with a peak
    /// rate at most the peak bucket's. Larger GSO packets are segmented
    /// (`tbf_segment`), larger others dropped.
    pub fn max_size(&self) -> u64 {
        let rate = self.rate.psched();
        let rate_bucket = match self.burst {
            Some(b) => b as u64,
            None => ns_t2l(&rate, ticks_to_ns(self.buffer)).min(u32::MAX as u64),
        };
        match self.peakrate.filter(|p| p.rate != 0) {
            Some(spec) => rate_bucket.min(match self.pburst {
                Some(pburst) => pburst as u64,
                None => ns_t2l(&spec.psched(), ticks_to_ns(self.mtu)),
            }),
            None => rate_bucket,
        }
    }
}

impl TbfParams {
    fn new(opts: &TbfOptions, psched_mtu: u32) -> Result<(TbfParams, Option<String>), Refusal> {
        let mut opts = *opts;
        opts.peakrate = opts.peakrate.filter(|p| p.rate != 0);
        let rate = opts.rate.psched();
        let max_size = opts.max_size();
        let buffer = match opts.burst {
            Some(b) => l2t(&rate, b as u64),
            None => ticks_to_ns(opts.buffer) as i64,
        };
        let (peak, mtu) = match &opts.peakrate {
            Some(spec) => {
                if spec.rate <= opts.rate.rate {
                    // tbf_change: a pr_warn in the kernel log, EINVAL to tc.
                    return Err(Refusal::bare(Errno::EINVAL).below(format!(
                        "sch_tbf: peakrate {} is lower than or equals to rate {}: peakrate must be above rate",
                        print_rate(spec.rate),
                        print_rate(opts.rate.rate)
                    )));
                }
                let peak = spec.psched();
                let mtu = match opts.pburst {
                    Some(pburst) => l2t(&peak, pburst as u64),
                    None => ticks_to_ns(opts.mtu) as i64,
                };
                (Some(peak), mtu)
            }
            None => (None, 0),
        };
        if max_size == 0 {
            return Err(Refusal::new(
                Errno::EINVAL,
                "tbf: burst (or mtu with a peakrate) must be at least 1 byte.",
            ));
        }
        let warning = (max_size < psched_mtu as u64).then(|| {
            format!(
                "sch_tbf: burst {max_size} is lower than device mtu ({psched_mtu}) ! Larger frames will be dropped."
            )
        });
        let limit = opts.limit as u64;
        Ok((
            TbfParams {
                rate,
                peak,
                buffer,
                mtu,
                max_size,
                limit,
            },
            warning,
        ))
    }
}

/// The TBF qdisc.
pub struct Tbf {
    ctx: QdiscCtx,
    p: TbfParams,
    tokens: i64,
    ptokens: i64,
    t_c: Instant,
    child: Box<dyn Qdisc>,
    /// A frame taken out by `peek` (qdisc_peek_dequeued), already charged.
    parked: Option<Packet>,
    /// Watchdog deadline set by the last dequeue that lacked tokens.
    throttled_until: Option<Instant>,
    /// The latest `now` seen, for operations that are not given one.
    last_now: Instant,
    stats: QdiscStats,
    warnings: Vec<String>,
}

impl Tbf {
    /// `tbf_init`: TBF has no defaults (no options: EINVAL).
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        let opts = match options {
            QdiscOptions::Tbf(o) => o,
            QdiscOptions::None => {
                return Err(Refusal::new(
                    Errno::EINVAL,
                    "tbf needs options (rate, burst and limit).",
                ))
            }
            _ => return Err(foreign_options("tbf")),
        };
        let (p, warning) = TbfParams::new(opts, ctx.psched_mtu)?;
        let child_ctx = ctx.child(0, ctx.handle | 1);
        let child = Box::new(Fifo::with_limit(FifoKind::Bfifo, child_ctx, p.limit));
        Ok(Tbf {
            ctx,
            tokens: p.buffer,
            ptokens: p.mtu,
            p,
            t_c: Instant::ZERO,
            child,
            parked: None,
            throttled_until: None,
            last_now: Instant::ZERO,
            stats: QdiscStats::default(),
            warnings: warning.into_iter().collect(),
        })
    }

    /// Kernel log lines tc users would see in dmesg (burst below the MTU).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Largest frame that can pass (`max_size`).
    pub fn max_size(&self) -> u64 {
        self.p.max_size
    }

    /// Tokens of the rate bucket in ns, as last computed.
    pub fn tokens_ns(&self) -> i64 {
        self.tokens
    }

    /// `tbf_dequeue`: release the child's head frame if both buckets cover
    /// it; otherwise arm the watchdog and count an overlimit.
    ///
    /// One departure from the kernel: a head frame that not even full
    /// buckets cover is dropped (`TbfOversize`, as at enqueue) instead of
    /// waiting. Enqueue refuses such frames, so they are only there when a
    /// `change` shrank the burst (or the peak bucket) below frames already
    /// queued; `tbf_dequeue` would then re-arm its watchdog for that frame
    /// forever, and every frame behind it would wait too, until the next
    /// change: a dead link, which bloatbox never leaves.
    fn try_release(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.last_now = self.last_now.max(now);
        // The head frame's cost in each bucket, ns (0 without a peak).
        let (cost, peak_cost) = loop {
            let before = drops.len();
            let len = self.child.peek(now, drops).map(|p| p.len as u64);
            self.count_child_drops(before, drops);
            let len = len?;
            let cost = l2t(&self.p.rate, len);
            let peak_cost = self.p.peak.as_ref().map_or(0, |pk| l2t(pk, len));
            if cost <= self.p.buffer && peak_cost <= self.p.mtu {
                break (cost, peak_cost);
            }
            let before = drops.len();
            let pkt = self.child.dequeue(now, drops);
            self.count_child_drops(before, drops);
            if let Some(pkt) = pkt {
                self.stats.count_drop(pkt, DropReason::TbfOversize, drops);
            }
        };
        let elapsed = now.signed_since(self.t_c).min(self.p.buffer);
        let mut ptoks = 0i64;
        if self.p.peak.is_some() {
            ptoks = elapsed
                .saturating_add(self.ptokens)
                .min(self.p.mtu)
                .saturating_sub(peak_cost);
        }
        let toks = elapsed
            .saturating_add(self.tokens)
            .min(self.p.buffer)
            .saturating_sub(cost);
        if toks >= 0 && ptoks >= 0 {
            let before = drops.len();
            let pkt = self.child.dequeue(now, drops);
            self.count_child_drops(before, drops);
            let pkt = pkt?;
            self.t_c = now;
            self.tokens = toks;
            self.ptokens = ptoks;
            self.throttled_until = None;
            return Some(pkt);
        }
        let wait = (-toks).max(-ptoks) as u64;
        self.throttled_until = Some(now + wait);
        self.stats.overlimits += 1;
        None
    }

    fn count_child_drops(&mut self, before: usize, drops: &Drops) {
        self.stats.drops += (drops.len() - before) as u64;
    }

    /// The options as `tbf_dump` fills them.
    fn dumped_options(&self) -> TbfOptions {
        TbfOptions {
            rate: RateSpec::of(&self.p.rate),
            peakrate: self.p.peak.as_ref().map(RateSpec::of),
            limit: self.p.limit as u32,
            buffer: ns_to_ticks(self.p.buffer).max(0) as u64,
            mtu: ns_to_ticks(self.p.mtu).max(0) as u64,
            burst: None,
            pburst: None,
        }
    }
}

impl ParkOnPeek for Tbf {
    fn parked_slot(&mut self) -> &mut Option<Packet> {
        &mut self.parked
    }
    fn sent_stats(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }
    fn dequeue_next(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.try_release(now, drops)
    }
}

impl Qdisc for Tbf {
    fn kind(&self) -> &'static str {
        "tbf"
    }

    fn enqueue(&mut self, pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        self.last_now = self.last_now.max(now);
        if pkt.len as u64 > self.p.max_size {
            return self.stats.reject(pkt, DropReason::TbfOversize, drops);
        }
        let before = drops.len();
        let verdict = self.child.enqueue(pkt, now, drops);
        self.count_child_drops(before, drops);
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
            return Some(now);
        }
        if self.child.qlen() == 0 {
            return None;
        }
        match self.throttled_until {
            Some(t) => Some(t.max(now)),
            None => Some(self.child.next_wakeup(now).unwrap_or(now).max(now)),
        }
    }

    fn qlen(&self) -> u32 {
        self.child.qlen() + self.parked.is_some() as u32
    }

    fn backlog(&self) -> u64 {
        self.child.backlog() + self.parked.as_ref().map_or(0, |p| p.len as u64)
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    fn reset(&mut self, drops: &mut Drops) {
        if let Some(p) = self.parked.take() {
            drops.push(p, DropReason::QdiscReset);
        }
        self.child.reset(drops);
        self.t_c = self.last_now;
        self.tokens = self.p.buffer;
        self.ptokens = self.p.mtu;
        self.throttled_until = None;
    }

    fn change(
        &mut self,
        options: &QdiscOptions,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        self.last_now = self.last_now.max(now);
        let QdiscOptions::Tbf(opts) = options else {
            return Err(foreign_options("tbf"));
        };
        let (p, warning) = TbfParams::new(opts, self.ctx.psched_mtu)?;
        // fifo_set_limit: only FIFO children learn the new limit.
        if matches!(self.child.kind(), "bfifo" | "pfifo" | "pfifo_head_drop") {
            let before = drops.len();
            self.child.change(
                &QdiscOptions::Fifo(FifoOptions { limit: p.limit }),
                now,
                drops,
            )?;
            self.count_child_drops(before, drops);
        }
        self.p = p;
        self.tokens = self.p.buffer;
        self.ptokens = self.p.mtu;
        self.throttled_until = None;
        self.warnings.extend(warning);
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let child = self.child.dump_listing(now, listing);
        let mut occupancy = QueueOccupancy::parked(self.parked.as_ref(), now);
        let (class, children) = one_class::dump("tbf", self.ctx.handle, child, &mut occupancy);
        QdiscDump {
            kind: "tbf".into(),
            handle: self.ctx.handle,
            parent: self.ctx.parent,
            options: QdiscOptions::Tbf(self.dumped_options()),
            stats: self.stats(),
            classes: vec![class],
            children,
            occupancy,
            ..QdiscDump::default()
        }
    }

    fn as_classful(&mut self) -> Option<&mut dyn Classful> {
        Some(self)
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        let mut out: Vec<Packet> = self.parked.take().into_iter().collect();
        out.extend(self.child.drain_all());
        out
    }
}

impl OneClass for Tbf {
    const KIND: &'static str = "tbf";

    fn ctx(&self) -> &QdiscCtx {
        &self.ctx
    }

    fn child(&mut self) -> &mut Box<dyn Qdisc> {
        &mut self.child
    }

    fn grafted(&mut self) {
        self.throttled_until = None;
    }

    /// The kernel's "burst is lower than device mtu" log lines.
    fn warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

#[cfg(test)]
mod tests;
