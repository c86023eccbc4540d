//! The single-queue `codel` qdisc (Linux net/sched/sch_codel.c): one FIFO
//! managed by the CoDel core, tail drop of the arriving frame at `limit`
//! packets. Defaults: limit 1000p, target 5ms, interval 100ms, noecn.

use super::codel::{
    codel_to_us, us_to_codel, CodelParams, CodelQueue, CodelStats, CodelVars,
    CODEL_DISABLED_THRESHOLD,
};
use super::dump::{CodelXstats, QueueId, QueueOccupancy, Xstats};
use super::park::{drop_all_held, ParkOnPeek};
use super::QdiscOptions;
use super::{Handle, Qdisc, QdiscCtx, QdiscDump, QdiscStats, TcError, Verdict};
use crate::packet::{DropReason, Drops, Packet};
use crate::time::Instant;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `DEFAULT_CODEL_LIMIT`.
pub const DEFAULT_LIMIT: u32 = 1000;

/// The `TCA_CODEL_*` attributes (include/uapi/linux/pkt_sched.h), times in
/// µs as netlink carries them (net/sched/sch_codel.c `codel_change` turns
/// them into CoDel units, `codel_dump` back with `codel_time_to_us`). An
/// absent attribute keeps the current value; `codel_dump` sends all but
/// `ce_threshold` while that is off.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodelOptions {
    /// `TCA_CODEL_TARGET`, µs.
    pub target: Option<u32>,
    /// `TCA_CODEL_LIMIT`, packets.
    pub limit: Option<u32>,
    /// `TCA_CODEL_INTERVAL`, µs.
    pub interval: Option<u32>,
    /// `TCA_CODEL_ECN`.
    pub ecn: Option<bool>,
    /// `TCA_CODEL_CE_THRESHOLD`, µs.
    pub ce_threshold: Option<u32>,
}

/// The FIFO plus the backlog CoDel reads.
struct Fifo {
    queue: VecDeque<Packet>,
    backlog: u64,
}

impl CodelQueue for Fifo {
    fn pop_head(&mut self) -> Option<Packet> {
        let p = self.queue.pop_front()?;
        self.backlog -= p.len as u64;
        Some(p)
    }
    fn backlog(&self) -> u64 {
        self.backlog
    }
}

/// The `codel` qdisc (net/sched/sch_codel.c): one FIFO whose head is subject to
/// CoDel's control law at dequeue, with a packet limit at enqueue.
pub struct CodelQdisc {
    handle: Handle,
    parent: Handle,
    limit: u32,
    params: CodelParams,
    vars: CodelVars,
    cstats: CodelStats,
    drop_overlimit: u64,
    fifo: Fifo,
    /// A frame dequeued by `peek` (qdisc_peek_dequeued), still counted.
    parked: Option<Packet>,
    stats: QdiscStats,
}

impl CodelQdisc {
    /// A codel qdisc with the kernel's defaults (`codel_init`: limit 1000
    /// packets, target 5 ms, interval 100 ms, ECN off).
    pub fn new(ctx: QdiscCtx) -> Self {
        CodelQdisc {
            handle: ctx.handle,
            parent: ctx.parent,
            limit: DEFAULT_LIMIT,
            params: CodelParams::new(ctx.psched_mtu, false),
            vars: CodelVars::default(),
            cstats: CodelStats::default(),
            drop_overlimit: 0,
            fifo: Fifo {
                queue: VecDeque::new(),
                backlog: 0,
            },
            parked: None,
            stats: QdiscStats::default(),
        }
    }

    /// A codel qdisc with `options` (`QdiscOptions::None`: the defaults).
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, TcError> {
        match options {
            QdiscOptions::None => Ok(CodelQdisc::new(ctx)),
            QdiscOptions::Codel(o) => Ok(CodelQdisc::with_options(ctx, o)),
            _ => Err(super::options::foreign("codel")),
        }
    }

    /// A codel qdisc with the defaults changed by `o` (`codel_init`).
    pub fn with_options(ctx: QdiscCtx, o: &CodelOptions) -> Self {
        let mut q = CodelQdisc::new(ctx);
        q.apply(o);
        q
    }

    fn apply(&mut self, o: &CodelOptions) {
        if let Some(v) = o.limit {
            self.limit = v;
        }
        if let Some(v) = o.target {
            self.params.target = us_to_codel(v.into());
        }
        if let Some(v) = o.interval {
            self.params.interval = us_to_codel(v.into());
        }
        if let Some(v) = o.ecn {
            self.params.ecn = v;
        }
        if let Some(v) = o.ce_threshold {
            self.params.ce_threshold = us_to_codel(v.into());
        }
    }

    /// The options as `codel_dump` sends them.
    pub fn options(&self) -> CodelOptions {
        let p = &self.params;
        CodelOptions {
            target: Some(codel_to_us(p.target) as u32),
            limit: Some(self.limit),
            interval: Some(codel_to_us(p.interval) as u32),
            ecn: Some(p.ecn),
            ce_threshold: (p.ce_threshold != CODEL_DISABLED_THRESHOLD)
                .then(|| codel_to_us(p.ce_threshold) as u32),
        }
    }

    /// CoDel state, for the TUI.
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }

    fn run_codel(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        let before = self.cstats.drop_count;
        let p = self
            .vars
            .dequeue(&mut self.fifo, &self.params, &mut self.cstats, now, drops);
        self.stats.drops += self.cstats.drop_count - before;
        p
    }
}

impl ParkOnPeek for CodelQdisc {
    fn parked_slot(&mut self) -> &mut Option<Packet> {
        &mut self.parked
    }
    fn sent_stats(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }
    fn dequeue_next(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.run_codel(now, drops)
    }
}

impl Qdisc for CodelQdisc {
    fn kind(&self) -> &'static str {
        "codel"
    }

    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        if self.qlen() < self.limit {
            pkt.meta.enqueue_time = now;
            self.fifo.backlog += pkt.len as u64;
            self.fifo.queue.push_back(pkt);
            return Verdict::Queued;
        }
        self.drop_overlimit += 1;
        self.stats.reject(pkt, DropReason::QueueFull, drops)
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.dequeue_parked_first(now, drops)
    }

    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        self.peek_parking(now, drops)
    }

    fn qlen(&self) -> u32 {
        (self.fifo.queue.len() + self.parked.is_some() as usize) as u32
    }

    fn backlog(&self) -> u64 {
        self.fifo.backlog + self.parked.as_ref().map_or(0, |p| p.len as u64)
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    fn can_bypass(&self) -> bool {
        self.limit >= 1
    }

    fn count_bypass(&mut self, pkt: &Packet) {
        self.stats.count_sent(pkt);
    }

    fn reset(&mut self, drops: &mut Drops) {
        drop_all_held(self, drops);
        self.vars = CodelVars::default();
    }

    fn change(
        &mut self,
        options: &QdiscOptions,
        _now: Instant,
        drops: &mut Drops,
    ) -> Result<(), TcError> {
        match options {
            QdiscOptions::None => {}
            QdiscOptions::Codel(o) => self.apply(o),
            _ => return Err(super::options::foreign("codel")),
        }
        // sch_codel trims from the head, bypassing CoDel.
        while self.qlen() > self.limit {
            let Some(p) = self.parked.take().or_else(|| self.fifo.pop_head()) else {
                break;
            };
            self.stats.count_drop(p, DropReason::QdiscReset, drops);
        }
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        let v = &self.vars;
        let xstats = CodelXstats {
            maxpacket: self.cstats.maxpacket,
            count: v.count,
            lastcount: v.lastcount,
            ldelay_us: codel_to_us(v.ldelay),
            drop_next_us: v.drop_next_us(now),
            drop_overlimit: self.drop_overlimit,
            ecn_mark: self.cstats.ecn_mark,
            dropping: v.dropping,
            ce_mark: self.cstats.ce_mark,
        };

        QdiscDump {
            kind: "codel".into(),
            handle: self.handle,
            parent: self.parent,
            options: QdiscOptions::Codel(self.options()),
            stats: self.stats(),
            xstats: Some(Xstats::Codel(xstats)),
            occupancy: vec![QueueOccupancy::of_qdisc(
                QueueId::Fifo,
                self.parked.iter().chain(&self.fifo.queue),
                now,
            )],
            ..QdiscDump::default()
        }
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        let mut out: Vec<Packet> = self.parked.take().into_iter().collect();
        out.extend(self.fifo.queue.drain(..));
        self.fifo.backlog = 0;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::pkt;
    use crate::time::NS_PER_MS;
    use crate::units::{sprint_time, sprint_time_signed};

    fn ms(t: u64) -> Instant {
        Instant::from_millis(t)
    }

    /// Options giving only `limit`.
    fn limit(n: u32) -> CodelOptions {
        CodelOptions {
            limit: Some(n),
            ..CodelOptions::default()
        }
    }

    /// The xstats in a dump at `now`.
    fn xstats(q: &CodelQdisc, now: Instant) -> CodelXstats {
        match q.dump(now).xstats {
            Some(Xstats::Codel(x)) => x,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn defaults_dump() {
        let q = CodelQdisc::build(QdiscCtx::default(), &QdiscOptions::None).unwrap();
        let d = q.dump(Instant::ZERO);
        // 5 ms and 100 ms in CoDel units, dumped by `codel_time_to_us`.
        assert_eq!(
            d.options,
            QdiscOptions::Codel(CodelOptions {
                target: Some(4999),
                limit: Some(1000),
                interval: Some(99999),
                ecn: Some(false),
                ce_threshold: None,
            })
        );
        assert_eq!(d.xstats, Some(Xstats::Codel(CodelXstats::default())));
        assert!(q.can_bypass());
    }

    #[test]
    fn options_apply_in_codel_units() {
        let q = CodelQdisc::with_options(
            QdiscCtx::default(),
            &CodelOptions {
                limit: Some(50),
                target: Some(2000),
                interval: Some(30_000),
                ecn: Some(true),
                ce_threshold: Some(1000),
            },
        );
        assert_eq!(
            q.options(),
            // 1000 µs → 976 units → dumped 999 µs, as the kernel does.
            CodelOptions {
                limit: Some(50),
                target: Some(1999),
                interval: Some(29999),
                ecn: Some(true),
                ce_threshold: Some(999),
            }
        );
        // 5 µs: (5 × 1000) >> 10 = 4 units, dumped as 4 µs.
        let q = CodelQdisc::with_options(
            QdiscCtx::default(),
            &CodelOptions {
                target: Some(5),
                ..CodelOptions::default()
            },
        );
        assert_eq!(q.params.target, 4);
        assert_eq!(q.options().target, Some(4));
        let e = CodelQdisc::build(QdiscCtx::default(), &QdiscOptions::Sfq(Default::default()))
            .err()
            .unwrap();
        assert!(e.0.contains("codel"), "{e}");
    }

    #[test]
    fn tail_drop_at_limit() {
        let mut q = CodelQdisc::with_options(QdiscCtx::default(), &limit(3));
        let mut d = Drops::new();
        for i in 0..5 {
            q.enqueue(pkt(i, 100), ms(0), &mut d);
        }
        assert_eq!(q.qlen(), 3);
        assert_eq!(d.len(), 2);
        assert_eq!(d.since(0)[0].0.meta.id, 3);
        assert_eq!(d.since(0)[0].1, DropReason::QueueFull);
        assert_eq!(xstats(&q, ms(0)).drop_overlimit, 2);
        assert_eq!(q.stats().drops, 2);
    }

    #[test]
    fn standing_queue_gets_dropped_and_counted() {
        // 1514 B frames arrive every 1 ms, leave every 1.2 ms: a growing
        // standing queue; CoDel must drop, and counters must add up.
        let mut q = CodelQdisc::new(QdiscCtx::default());
        let mut d = Drops::new();
        let mut sent = 0u64;
        let mut id = 0;
        let mut next_tx = 0u64;
        for us in 0..2_000_000u64 {
            if us % 1000 == 0 {
                q.enqueue(pkt(id, 1514), Instant::from_micros(us), &mut d);
                id += 1;
            }
            if us >= next_tx && us % 1200 == 0 {
                if q.dequeue(Instant::from_micros(us), &mut d).is_some() {
                    sent += 1;
                }
                next_tx = us + 1200;
            }
        }
        let s = q.stats();
        assert!(s.drops > 0);
        assert_eq!(s.drops as usize, d.len());
        assert_eq!(sent + s.drops + s.qlen as u64, id);
        assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::Codel));
        let x = xstats(&q, Instant::from_micros(2_000_000));
        assert_eq!(x.maxpacket, 1514);
    }

    #[test]
    fn peek_parks_and_dequeue_returns_it() {
        let mut q = CodelQdisc::new(QdiscCtx::default());
        let mut d = Drops::new();
        q.enqueue(pkt(1, 100), ms(0), &mut d);
        q.enqueue(pkt(2, 100), ms(0), &mut d);
        assert_eq!(q.peek(ms(1), &mut d).unwrap().meta.id, 1);
        assert_eq!(q.qlen(), 2);
        assert_eq!(q.backlog(), 200);
        assert_eq!(q.stats().packets, 0);
        assert_eq!(q.dequeue(ms(1), &mut d).unwrap().meta.id, 1);
        assert_eq!(q.stats().packets, 1);
        assert_eq!(q.drain_all().len(), 1);
    }

    #[test]
    fn change_lowers_limit_and_switches_ecn() {
        let mut q = CodelQdisc::new(QdiscCtx::default());
        let mut d = Drops::new();
        for i in 0..10 {
            q.enqueue(pkt(i, 100), ms(0), &mut d);
        }
        let o = CodelOptions {
            ecn: Some(true),
            ..limit(4)
        };
        q.change(&QdiscOptions::Codel(o), ms(0), &mut d).unwrap();
        assert_eq!(q.qlen(), 4);
        assert_eq!(d.len(), 6);
        assert_eq!(d.since(0)[0].0.meta.id, 0, "trimmed from the head");
        assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::QdiscReset));
        assert_eq!(q.options().ecn, Some(true));
        assert!(q
            .change(&QdiscOptions::Sfq(Default::default()), ms(0), &mut d)
            .is_err());
        assert_eq!(q.limit, 4);
        q.reset(&mut d);
        assert_eq!(q.qlen(), 0);
        assert_eq!(d.len(), 10);
    }

    #[test]
    fn dropping_state_in_xstats() {
        let mut q = CodelQdisc::new(QdiscCtx::default());
        let mut d = Drops::new();
        // Standing 10 ms queue, dequeues every ms.
        let mut id = 0;
        for t in 20..200u64 {
            while q.qlen() < 10 {
                q.enqueue(
                    pkt(id, 1514),
                    Instant::from_nanos(t * NS_PER_MS - 10 * NS_PER_MS),
                    &mut d,
                );
                id += 1;
            }
            q.dequeue(ms(t), &mut d);
        }
        let x = xstats(&q, ms(200));
        // Each frame waits 10 ms before arriving plus ~9 dequeue slots;
        // first drop at 121 ms, next due 99.998 ms later.
        assert_eq!(
            (
                x.count,
                x.lastcount,
                sprint_time(x.ldelay_us),
                x.dropping,
                sprint_time_signed(x.drop_next_us)
            ),
            (1, 1, "19ms".to_string(), true, "21ms".to_string())
        );
    }
}
