//! TBF, the Token Bucket Filter (Linux net/sched/sch_tbf.c): a classful
//! shaper with one class `:1` whose child (by default a bfifo of `limit`
//! bytes) holds the frames. Two buckets in nanoseconds of transmission
//! time: `tokens` (depth `buffer` = l2t(rate, burst)) and, with a peakrate,
//! `ptokens` (depth l2t(peakrate, mtu)). The head frame leaves only when
//! both buckets cover its whole cost; otherwise the watchdog is armed for
//! the deficit. Its options are `struct tc_tbf_qopt` with the
//! TCA_TBF_RATE64/PRATE64/BURST/PBURST attributes (`TbfOptions`).

use super::dump::{lift_hidden_child, QueueOccupancy};
use super::fifo::{Fifo, FifoKind, FifoOptions};
use super::options::foreign as foreign_options;
use super::options::RateSpec;
use super::park::ParkOnPeek;
use super::ClassOptions;
use super::QdiscOptions;
use super::{
    tc_h_major, tc_h_minor, ClassDump, Classful, FlowListing, Handle, Qdisc, QdiscCtx, QdiscDump,
    QdiscStats, TcError, Verdict,
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
    fn new(opts: &TbfOptions, psched_mtu: u32) -> Result<(TbfParams, Option<String>), TcError> {
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
                    return Err(TcError::new(format!(
                        "RTNETLINK answers: Invalid argument\n(sch_tbf: peakrate {} is lower than or equals to rate {}: peakrate must be above rate)",
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
            return Err(TcError::new(
                "Error: tbf: burst (or mtu with a peakrate) must be at least 1 byte.",
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
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, TcError> {
        let opts = match options {
            QdiscOptions::Tbf(o) => o,
            QdiscOptions::None => {
                return Err(TcError::new(
                    "Error: tbf needs options (rate, burst and limit).",
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
    ) -> Result<(), TcError> {
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
        let child_handle = child.handle;
        let classid = self.ctx.handle | 1;
        let mut occupancy = QueueOccupancy::parked(self.parked.as_ref(), now);
        let class = ClassDump {
            kind: "tbf".into(),
            classid,
            parent: self.ctx.handle,
            leaf: (child_handle != 0).then_some(child_handle),
            stats: Some(QdiscStats::default()),
            ..ClassDump::default()
        };
        QdiscDump {
            kind: "tbf".into(),
            handle: self.ctx.handle,
            parent: self.ctx.parent,
            options: QdiscOptions::Tbf(self.dumped_options()),
            stats: self.stats(),
            classes: vec![class],
            // The default bfifo (handle 0) is invisible in `tc qdisc show`;
            // its frames are listed as the class's leaf queue.
            children: if child.handle != 0 {
                vec![child]
            } else {
                occupancy.extend(lift_hidden_child(child, classid));
                Vec::new()
            },
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

/// tbf_class_ops has no change or delete: tc_ctl_tclass answers
/// EOPNOTSUPP.
const TBF_ONE_CLASS: &str =
    "RTNETLINK answers: Operation not supported\n(tbf has a single fixed class :1; attach a qdisc to it with `tc qdisc add ... parent <tbf handle>:1 ...`)";

impl Classful for Tbf {
    fn add_class(
        &mut self,
        _classid: Handle,
        _parent: Handle,
        _options: &ClassOptions,
    ) -> Result<(), TcError> {
        Err(TcError::new(TBF_ONE_CLASS))
    }

    fn change_class(&mut self, _classid: Handle, _options: &ClassOptions) -> Result<(), TcError> {
        Err(TcError::new(TBF_ONE_CLASS))
    }

    fn delete_class(&mut self, _classid: Handle, _drops: &mut Drops) -> Result<(), TcError> {
        Err(TcError::new(TBF_ONE_CLASS))
    }

    /// Like the kernel's `tbf_find`, any minor selects the one class. The
    /// replaced child is returned with its frames; the caller moves them on
    /// (`drain_all`) or drops them.
    fn graft(
        &mut self,
        classid: Handle,
        child: Box<dyn Qdisc>,
    ) -> Result<Option<Box<dyn Qdisc>>, TcError> {
        if tc_h_major(classid) != tc_h_major(self.ctx.handle) {
            let major = tc_h_major(self.ctx.handle);
            return Err(TcError::new(format!(
                "Error: class {:x}:{:x} is not a class of tbf {major:x}: (use parent {major:x}:1).",
                tc_h_major(classid),
                tc_h_minor(classid),
            )));
        }
        self.throttled_until = None;
        Ok(Some(std::mem::replace(&mut self.child, child)))
    }

    fn child_mut(&mut self, _classid: Handle) -> Option<&mut Box<dyn Qdisc>> {
        Some(&mut self.child)
    }

    fn children_mut(&mut self) -> Vec<&mut Box<dyn Qdisc>> {
        vec![&mut self.child]
    }

    fn child_ctx(&self, handle: Handle, parent: Handle) -> QdiscCtx {
        self.ctx.child(handle, parent)
    }

    /// `tbf_find` answers 1 for any class id: `parent 1:5` is the one
    /// class 1:1 (the child keeps the parent id it was added with).
    fn find_class(&self, classid: Handle) -> Handle {
        let major = tc_h_major(self.ctx.handle);
        if tc_h_major(classid) == major {
            crate::handle::tc_h_make(major, 1)
        } else {
            classid
        }
    }

    /// `tbf_graft` puts the noop qdisc where a deleted child was: TBF then
    /// drops every frame (counted in its own drops) until a qdisc is added.
    fn after_delete(&self, _classid: Handle) -> Box<dyn Qdisc> {
        let class = crate::handle::tc_h_make(tc_h_major(self.ctx.handle), 1);
        Box::new(crate::qdisc::noop::Noop::new(class))
    }

    /// The kernel's "burst is lower than device mtu" log lines.
    fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::{drain_codel_child, pkt};
    use rand::{Rng, SeedableRng};

    const MS: u64 = 1_000_000;

    const MBIT: u64 = 125_000;

    /// The options tc sends for `rate RATE burst BURST limit LIMIT`
    /// (bytes/s, bytes).
    fn opts(rate: u64, burst: u32, limit: u32) -> TbfOptions {
        TbfOptions {
            rate: RateSpec::new(rate),
            limit,
            burst: Some(burst),
            ..TbfOptions::default()
        }
    }

    /// `o` with `peakrate PEAKRATE mtu MTU`.
    fn peaked(o: TbfOptions, peakrate: u64, mtu: u32) -> TbfOptions {
        TbfOptions {
            peakrate: Some(RateSpec {
                rate: peakrate,
                ..o.rate
            }),
            pburst: Some(mtu),
            ..o
        }
    }

    fn build(o: TbfOptions) -> Result<Tbf, TcError> {
        Tbf::build(QdiscCtx::default(), &QdiscOptions::Tbf(o))
    }

    fn tbf(o: TbfOptions) -> Tbf {
        build(o).unwrap()
    }

    fn dumped(q: &Tbf, now: Instant) -> TbfOptions {
        match q.dump(now).options {
            QdiscOptions::Tbf(o) => o,
            other => panic!("tbf dumped {other:?}"),
        }
    }

    /// Drives dequeue like an infinitely fast link: dequeue whenever
    /// possible, otherwise sleep until `next_wakeup`. Returns departure
    /// times and lengths.
    fn drain(q: &mut dyn Qdisc, t: Instant) -> Vec<(Instant, u32)> {
        drain_into(q, t, &mut Drops::new())
    }

    /// `drain`, with the drops going to `d`; panics if the queue never
    /// empties.
    fn drain_into(q: &mut dyn Qdisc, mut t: Instant, d: &mut Drops) -> Vec<(Instant, u32)> {
        let mut out = Vec::new();
        for _ in 0..100_000 {
            if let Some(p) = q.dequeue(t, d) {
                out.push((t, p.len));
                continue;
            }
            match q.next_wakeup(t) {
                Some(w) => {
                    assert!(w >= t, "wakeup {w:?} before now {t:?}");
                    assert!(w > t || q.qlen() == 0, "wakeup at now without progress");
                    t = w;
                }
                None => return out,
            }
        }
        panic!("still {} frames queued after 100,000 steps", q.qlen());
    }

    #[test]
    fn vector_t1_derived_values() {
        // tc's `rate 1mbit burst 10kb latency 50ms` (the limit is tc's).
        let q = tbf(opts(MBIT, 10240, 16490));
        assert_eq!(q.p.buffer, 81_920_000);
        assert_eq!(q.max_size(), 10240);
        assert_eq!(q.p.limit, 16490);
        let d = q.dump(Instant::ZERO);
        assert_eq!(d.kind, "tbf");
        let o = dumped(&q, Instant::ZERO);
        assert_eq!(
            (o.rate, o.limit, o.buffer),
            (RateSpec::new(MBIT), 16490, 1_280_000)
        );
        assert_eq!(
            (o.peakrate, o.mtu, o.burst, o.pburst),
            (None, 0, None, None)
        );
        // The default child is an invisible bfifo holding the limit.
        assert!(d.children.is_empty());
        assert_eq!(
            q.child.dump(Instant::ZERO).options,
            QdiscOptions::Fifo(FifoOptions { limit: 16490 })
        );
        assert_eq!(q.child.kind(), "bfifo");
        assert_eq!(d.classes.len(), 1);
        assert_eq!(d.classes[0].classid, 0x8001_0001);
        assert_eq!(d.classes[0].parent, 0x8001_0000);
        assert_eq!(d.classes[0].leaf, None);
        assert!(q.warnings().is_empty());
    }

    /// Without TCA_TBF_BURST the kernel sizes the bucket from its ticks
    /// (`psched_ns_t2l`).
    #[test]
    fn bucket_from_ticks_without_burst_attribute() {
        let o = TbfOptions {
            burst: None,
            buffer: 1_280_000,
            ..opts(MBIT, 0, 16490)
        };
        let q = tbf(o);
        assert_eq!((q.p.buffer, q.max_size()), (81_920_000, 10240));
        let o = TbfOptions {
            pburst: None,
            mtu: 23_437, // 1.5 ms at 8 Mbit/s: 1499 B
            ..peaked(opts(MBIT, 10240, 16490), 8 * MBIT, 0)
        };
        let q = tbf(o);
        assert_eq!((q.p.mtu, q.max_size()), (1_499_968, 1499));
        let atm = RateSpec {
            linklayer: LinkLayer::Atm,
            overhead: 10,
            ..RateSpec::new(MBIT)
        };
        // 10240 B of time = 193 cells of 53 B: 9264 B of payload, less 10.
        assert_eq!(ns_t2l(&atm.psched(), 81_920_000), 9254);
        assert!(build(TbfOptions {
            burst: None,
            ..opts(MBIT, 0, 1)
        })
        .is_err());
    }

    #[test]
    fn vector_t2_departure_times_of_a_backlog() {
        let mut q = tbf(opts(MBIT, 10240, 200_000));
        let mut d = Drops::new();
        for id in 1..=100 {
            assert_eq!(
                q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d),
                Verdict::Queued
            );
        }
        let out = drain(&mut q, Instant::ZERO);
        assert_eq!(out.len(), 100);
        for (i, (t, _)) in out.iter().enumerate() {
            let n = i as i64 + 1;
            let expect = ((1000 * n - 10240) * 8000).max(0) as u64;
            assert_eq!(t.nanos(), expect, "packet {n}");
        }
        assert_eq!(out[10].0.nanos(), 6_080_000);
        assert_eq!(out[11].0.nanos(), 14_080_000);
        assert_eq!(out[99].0.nanos(), 718_080_000);
        let s = q.stats();
        assert_eq!(
            (s.bytes, s.packets, s.qlen, s.backlog),
            (100_000, 100, 0, 0)
        );
        assert!(s.overlimits >= 90, "overlimits {}", s.overlimits);
        assert_eq!(q.next_wakeup(out[99].0), None);
    }

    #[test]
    fn vector_t5_burst_below_mtu_drops_full_frames() {
        let mut q = tbf(opts(MBIT, 1000, 10_000));
        assert_eq!(q.max_size(), 1000);
        assert_eq!(
            q.warnings()[0],
            "sch_tbf: burst 1000 is lower than device mtu (1514) ! Larger frames will be dropped."
        );
        let mut d = Drops::new();
        let t = Instant::ZERO;
        for id in 0..3 {
            assert_eq!(q.enqueue(pkt(id, 1514), t, &mut d), Verdict::Dropped);
        }
        assert_eq!(q.enqueue(pkt(9, 1000), t, &mut d), Verdict::Queued);
        assert!(d
            .since(0)
            .iter()
            .all(|(_, r)| *r == DropReason::TbfOversize));
        assert_eq!(q.stats().drops, 3);
        assert_eq!(q.dequeue(t, &mut d).unwrap().meta.id, 9);
        assert_eq!(q.stats().packets, 1);
    }

    #[test]
    fn peak_bucket_bounds_the_frame_size() {
        // tc's `rate 1mbit burst 10kb latency 50ms peakrate 2mbit mtu 1514`.
        let q = tbf(peaked(opts(MBIT, 10240, 14014), 2 * MBIT, 1514));
        assert_eq!(q.p.limit, 14014);
        assert_eq!(q.max_size(), 1514);
        let o = dumped(&q, Instant::ZERO);
        assert_eq!(o.peakrate, Some(RateSpec::new(2 * MBIT)));
        assert_eq!(o.mtu, q.p.mtu as u64 >> 6);
        assert!(build(peaked(opts(MBIT, 10240, 1000), MBIT, 1514))
            .err()
            .unwrap()
            .0
            .contains("peakrate 1Mbit is lower than or equals to rate 1Mbit"));
    }

    #[test]
    fn peakrate_spaces_the_burst() {
        let mut q = tbf(peaked(opts(MBIT, 10240, 100_000), 2 * MBIT, 1000));
        let mut d = Drops::new();
        for id in 0..30 {
            q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d);
        }
        let out = drain(&mut q, Instant::ZERO);
        assert_eq!(out.len(), 30);
        for (i, (t, _)) in out.iter().enumerate() {
            let n = i as u64 + 1;
            let peak = (n - 1) * 4 * MS;
            let rate = (8000 * (1000 * n)).saturating_sub(81_920_000);
            assert_eq!(t.nanos(), peak.max(rate), "packet {n}");
        }
    }

    #[test]
    fn change_resets_tokens_and_applies_limit() {
        let mut q = tbf(opts(MBIT, 10240, 100_000));
        let mut d = Drops::new();
        for id in 0..20 {
            q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d);
        }
        while q.dequeue(Instant::ZERO, &mut d).is_some() {}
        assert_eq!(q.qlen(), 10);
        assert!(q.tokens_ns() < 8_000_000);
        // A new config with a full new bucket and a lower limit.
        let t = Instant::from_nanos(MS);
        q.change(&QdiscOptions::Tbf(opts(2 * MBIT, 4000, 5000)), t, &mut d)
            .unwrap();
        assert_eq!(q.tokens_ns(), 16_000_000);
        assert_eq!(q.qlen(), 5, "bfifo trimmed to 5000 bytes");
        assert_eq!(d.len(), 5);
        assert_eq!(q.stats().drops, 5);
        let out = drain(&mut q, t);
        assert_eq!(out.len(), 5);
        // 4 frames from the 4000 B bucket at once, the 5th after 1000 B at 2 Mbit.
        assert!(out[..4].iter().all(|(x, _)| *x == t));
        assert_eq!(out[4].0, t + 4 * MS);
        // `rate 2Mbit burst 4000b`, as tc prints the dump.
        let rate_and_burst = |q: &Tbf| {
            let o = dumped(q, t);
            (
                o.rate.rate,
                crate::units::tc_calc_xmitsize(o.rate.rate, o.buffer),
            )
        };
        assert_eq!(rate_and_burst(&q), (2 * MBIT, 4000));
        // Invalid changes leave everything as they were.
        assert!(q.change(&QdiscOptions::None, t, &mut d).is_err());
        let lower_peak = peaked(opts(2 * MBIT, 4000, 5000), MBIT, 1514);
        assert!(q.change(&QdiscOptions::Tbf(lower_peak), t, &mut d).is_err());
        assert_eq!(rate_and_burst(&q), (2 * MBIT, 4000));
    }

    /// A change that shrinks the burst below frames already queued (found
    /// by the tc fuzz target: `rate 11 b 150` then `rate 11 b 10`): the
    /// kernel would keep them, and every frame behind them, forever;
    /// bloatbox drops each as it reaches the head, with its reason, and the
    /// frames that fit the new bucket go on.
    #[test]
    fn frames_larger_than_a_shrunk_bucket_are_dropped_at_the_head() {
        let mut q = tbf(opts(MBIT, 3000, 100_000));
        let mut d = Drops::new();
        for (id, len) in [(0, 1500), (1, 400), (2, 1500), (3, 1500), (4, 300)] {
            assert_eq!(
                q.enqueue(pkt(id, len), Instant::ZERO, &mut d),
                Verdict::Queued
            );
        }
        let t = Instant::from_nanos(MS);
        q.change(&QdiscOptions::Tbf(opts(MBIT, 1000, 100_000)), t, &mut d)
            .unwrap();
        assert_eq!(q.max_size(), 1000);
        assert!(d.is_empty(), "the change itself drops nothing");
        let out = drain_into(&mut q, t, &mut d);
        let lens: Vec<u32> = out.iter().map(|(_, l)| *l).collect();
        assert_eq!(lens, vec![400, 300]);
        let dropped: Vec<(u64, DropReason)> =
            d.since(0).iter().map(|(p, r)| (p.meta.id, *r)).collect();
        assert_eq!(
            dropped,
            vec![
                (0, DropReason::TbfOversize),
                (2, DropReason::TbfOversize),
                (3, DropReason::TbfOversize)
            ]
        );
        assert_eq!((q.stats().drops, q.qlen(), q.next_wakeup(t)), (3, 0, None));
        // Shaped as before for what fits: 400 B at once, 300 B too (the
        // new bucket holds 1000 B).
        assert!(out.iter().all(|(x, _)| *x == t));
    }

    /// The peak bucket too: `mtu` shrunk below a queued frame.
    #[test]
    fn frames_larger_than_a_shrunk_peak_bucket_are_dropped_at_the_head() {
        let mut q = tbf(peaked(opts(MBIT, 3000, 100_000), 2 * MBIT, 2000));
        let mut d = Drops::new();
        for (id, len) in [(0, 1500), (1, 400)] {
            assert_eq!(
                q.enqueue(pkt(id, len), Instant::ZERO, &mut d),
                Verdict::Queued
            );
        }
        let t = Instant::from_nanos(MS);
        let smaller = peaked(opts(MBIT, 3000, 100_000), 2 * MBIT, 1000);
        q.change(&QdiscOptions::Tbf(smaller), t, &mut d).unwrap();
        let out = drain_into(&mut q, t, &mut d);
        assert_eq!(out.iter().map(|(_, l)| *l).collect::<Vec<_>>(), vec![400]);
        assert_eq!(d.len(), 1);
        assert_eq!(
            d.since(0).first().map(|(p, r)| (p.meta.id, *r)),
            Some((0, DropReason::TbfOversize))
        );
    }

    #[test]
    fn child_replaced_keeps_shaping_and_limit_no_longer_applies() {
        let mut q = tbf(opts(MBIT, 2000, 3000));
        let ctx = q.child_ctx(0x0010_0000, 0x8001_0001);
        let new = Box::new(Fifo::with_limit(FifoKind::Pfifo, ctx, 100));
        let old = q.graft(0x8001_0001, new).unwrap().unwrap();
        assert_eq!(old.kind(), "bfifo");
        let mut d = Drops::new();
        for id in 0..10 {
            assert_eq!(
                q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d),
                Verdict::Queued
            );
        }
        assert_eq!(q.qlen(), 10);
        let dump = q.dump(Instant::ZERO);
        assert_eq!(dump.classes[0].leaf, Some(0x0010_0000));
        assert_eq!(dump.children.len(), 1);
        assert_eq!(
            dump.children[0].options,
            QdiscOptions::Fifo(FifoOptions { limit: 100 })
        );
        let out = drain(&mut q, Instant::ZERO);
        assert_eq!(out.len(), 10);
        assert_eq!(out[2].0.nanos(), 8_000_000);
        assert!(q
            .graft(0x0042_0001, Box::new(Fifo::new(FifoKind::Pfifo, ctx)))
            .is_err());
        assert!(q
            .add_class(0x8001_0002, 0x8001_0000, &ClassOptions::None)
            .is_err());
    }

    #[test]
    fn peek_parks_the_frame_and_counts_it_once() {
        let mut q = tbf(opts(MBIT, 1500, 10_000));
        let mut d = Drops::new();
        q.enqueue(pkt(1, 1000), Instant::ZERO, &mut d);
        q.enqueue(pkt(2, 1000), Instant::ZERO, &mut d);
        assert_eq!(q.peek(Instant::ZERO, &mut d).unwrap().meta.id, 1);
        assert_eq!(q.qlen(), 2);
        assert_eq!(q.stats().packets, 0);
        assert_eq!(q.dequeue(Instant::ZERO, &mut d).unwrap().meta.id, 1);
        assert!(q.peek(Instant::ZERO, &mut d).is_none());
        assert_eq!(q.stats().overlimits, 1);
        assert_eq!(
            q.next_wakeup(Instant::ZERO),
            Some(Instant::from_nanos(4 * MS))
        );
        assert_eq!(q.stats().packets, 1);
        let mut r = Drops::new();
        q.reset(&mut r);
        assert_eq!((q.qlen(), r.len()), (0, 1));
    }

    #[test]
    fn atm_linklayer_charges_whole_cells() {
        // 100 B = 3 cells = 159 B on the wire; burst 1000 B = 21 cells = 1113 B.
        let mut q = tbf(TbfOptions {
            rate: RateSpec {
                linklayer: LinkLayer::Atm,
                ..RateSpec::new(MBIT)
            },
            ..opts(MBIT, 1000, 10_000)
        });
        assert_eq!(q.p.buffer, 1113 * 8000);
        let mut d = Drops::new();
        for id in 0..9 {
            q.enqueue(pkt(id, 100), Instant::ZERO, &mut d);
        }
        let out = drain(&mut q, Instant::ZERO);
        let times: Vec<u64> = out.iter().map(|(t, _)| t.nanos()).collect();
        assert_eq!(times, vec![0, 0, 0, 0, 0, 0, 0, 1_272_000, 2_544_000]);
    }

    #[test]
    fn aqm_child_drops_at_peek_count_in_tbf() {
        let mut q = tbf(opts(MBIT, 3000, 100_000));
        let ctx = q.child_ctx(0x0010_0000, 0x8001_0001);
        let codel = crate::qdisc::codel_qdisc::CodelQdisc::new(ctx);
        q.graft(0x8001_0001, Box::new(codel)).unwrap();
        drain_codel_child(&mut q, 60);
    }

    /// Random arrivals: next_wakeup never in the past, conservation holds,
    /// and in every window the bytes sent are at most rate×window + burst.
    #[test]
    fn random_load_respects_rate_and_burst() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for peak in [false, true] {
            let o = opts(MBIT, 5000, 20_000);
            let mut q = tbf(if peak { peaked(o, 4 * MBIT, 1600) } else { o });
            let mut d = Drops::new();
            let mut t = Instant::ZERO;
            let mut sent: Vec<(u64, u64)> = Vec::new();
            let mut offered = 0u64;
            for id in 0..3000u64 {
                t += rng.gen_range(0..4 * MS);
                let len = rng.gen_range(60..1600);
                q.enqueue(pkt(id, len), t, &mut d);
                offered += 1;
                // The link polls at wakeups up to the next arrival.
                loop {
                    if let Some(p) = q.dequeue(t, &mut d) {
                        sent.push((t.nanos(), p.len as u64));
                        continue;
                    }
                    match q.next_wakeup(t) {
                        Some(w) if w < t + 2 * MS => {
                            assert!(w >= t);
                            t = w;
                        }
                        Some(w) => {
                            assert!(w >= t);
                            break;
                        }
                        None => break,
                    }
                }
            }
            assert_eq!(
                offered,
                sent.len() as u64 + d.len() as u64 + q.qlen() as u64
            );
            for i in 0..sent.len() {
                let mut bytes = 0;
                for j in i..sent.len().min(i + 200) {
                    bytes += sent[j].1;
                    let window = sent[j].0 - sent[i].0;
                    assert!(
                        bytes <= 125_000 * window / 1_000_000_000 + 5000,
                        "rate exceeded: {bytes} B in {window} ns"
                    );
                    if peak {
                        assert!(bytes <= 500_000 * window / 1_000_000_000 + 1600);
                    }
                }
            }
        }
    }
}
