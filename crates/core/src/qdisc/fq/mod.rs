//! fq, the Fair Queue packet scheduler (Linux 6.18 net/sched/sch_fq.c) as
//! it behaves on a forwarding device. Forwarded frames carry no socket and
//! no departure time (`ip_forward` clears `skb->tstamp`), so `fq_classify`
//! makes every flow of `skb_get_hash(skb) & orphan_mask` (here the
//! frame's flow hash, `PacketMeta::hash`), there is no per-socket pacing
//! (`sk_pacing_rate`, SO_MAX_PACING_RATE) and the horizon never applies: a
//! frame's time to send is its arrival. What remains: three bands picked
//! by `priomap` from `skb->priority`, served by their `weights` in bytes;
//! in each band flows on a new and an old list served by deficit round
//! robin (`quantum`, `initial_quantum` for a new flow, refilled after
//! `refill_delay` idle); `limit` frames per band, `flow_limit` per flow;
//! `maxrate` paces each flow (`fq_dequeue`'s `time_next_packet`, the flow
//! throttled until then and the watchdog armed at the earliest); CE marks
//! past `ce_threshold` of sojourn; the fast path (an internal FIFO taking
//! frames while no flow is eligible, without maxrate); flows detached when
//! idle and garbage-collected 3 s later (`fq_gc`, on the lookup's path).
//! Flows live in `1 << buckets_log` trees keyed by `hash_ptr`; a tree here
//! is a sorted vector searched by bisection, whose path stands for the
//! red-black tree's. Defaults: limit 10000, flow_limit 100, quantum 2 MTU,
//! initial_quantum 10 MTU, refill_delay 40 ms, orphan_mask 1023, buckets
//! 1024, low_rate_threshold 550 kbit, timer_slack 10 µs, horizon 10 s with
//! horizon_drop, weights 589824 196608 65536.

mod xstats;
pub use xstats::FqXstats;

use super::dump::{list_flows, ClassDump, FlowDump, FlowListing, QueueId, QueueOccupancy, Xstats};
use super::jiffies::{jiffies, jiffies_to_usecs, time_after, usecs_to_jiffies, HZ};
use super::park::{drop_all_held, ParkOnPeek};
use super::pfifo_fast::{PfifoFastOptions, PRIOMAP};
use super::{Errno, Handle, Qdisc, QdiscCtx, QdiscDump, QdiscOptions, QdiscStats};
use super::{Refusal, Verdict};
use crate::packet::ecn::mark_ce;
use crate::packet::{DropReason, Drops, FlowKey, Packet};
use crate::time::{Instant, NS_PER_SEC, NS_PER_US};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// `FQ_BANDS`.
pub const FQ_BANDS: usize = 3;
/// `FQ_MIN_WEIGHT`: the least weight of a band.
pub const FQ_MIN_WEIGHT: i32 = 16384;
/// `fq_init`'s band weights (`band_flows[i].quantum`).
pub const DEFAULT_WEIGHTS: [i32; FQ_BANDS] = [9 << 16, 3 << 16, 1 << 16];
/// Default `limit` (per band), packets.
pub const DEFAULT_LIMIT: u32 = 10000;
/// Default `flow_limit`, packets.
pub const DEFAULT_FLOW_LIMIT: u32 = 100;
/// Default `buckets` log (1024 trees).
pub const DEFAULT_BUCKETS_LOG: u32 = 10;
/// The largest `buckets` log `fq_change` takes (`ilog2(256*1024)`).
pub const MAX_BUCKETS_LOG: u32 = 18;
/// Default `orphan_mask`.
pub const DEFAULT_ORPHAN_MASK: u32 = 1024 - 1;
/// Default `low_rate_threshold`, bytes/s (550 kbit).
pub const DEFAULT_LOW_RATE_THRESHOLD: u32 = 550_000 / 8;
/// Default `timer_slack`, ns.
pub const DEFAULT_TIMER_SLACK: u32 = 10_000;
/// Default `horizon`, µs (10 s).
pub const DEFAULT_HORIZON_US: u32 = 10_000_000;
/// Default `refill_delay`, µs (`msecs_to_jiffies(40)`).
pub const DEFAULT_REFILL_DELAY_US: u32 = 40_000;
/// `TCA_FQ_INITIAL_QUANTUM`'s netlink range (`iq_range`): at most 2^20.
pub const MAX_INITIAL_QUANTUM: u32 = 1 << 20;
/// `maxrate` when unlimited (`~0U` on the wire, `~0UL` in the kernel).
pub const UNLIMITED: u32 = u32::MAX;
/// Detached flows one lookup frees at most (`FQ_GC_MAX`).
const FQ_GC_MAX: usize = 8;
/// Jiffies a detached flow waits before it may be freed (`FQ_GC_AGE`).
const FQ_GC_AGE: u64 = 3 * HZ;
/// `GOLDEN_RATIO_64` of include/linux/hash.h.
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;

/// The `TCA_FQ_*` attributes. An absent one keeps the current value;
/// `fq_dump` sends all but `defrate`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FqOptions {
    /// `TCA_FQ_PLIMIT`: frames per band.
    pub limit: Option<u32>,
    /// `TCA_FQ_FLOW_PLIMIT`: frames per flow.
    pub flow_limit: Option<u32>,
    /// `TCA_FQ_QUANTUM`, bytes (clamped to 256..=2^20).
    pub quantum: Option<u32>,
    /// `TCA_FQ_INITIAL_QUANTUM`, bytes (at most 2^20).
    pub initial_quantum: Option<u32>,
    /// `TCA_FQ_RATE_ENABLE`: `pacing` (1) or `nopacing` (0); above 1 is
    /// refused.
    pub pacing: Option<u32>,
    /// `TCA_FQ_FLOW_DEFAULT_RATE`: read and ignored (the kernel warns).
    pub defrate: Option<u32>,
    /// `TCA_FQ_FLOW_MAX_RATE`, bytes/s (`UNLIMITED`: none).
    pub maxrate: Option<u32>,
    /// `TCA_FQ_BUCKETS_LOG` (1..=18).
    pub buckets_log: Option<u32>,
    /// `TCA_FQ_FLOW_REFILL_DELAY`, µs (kept in jiffies).
    pub refill_delay: Option<u32>,
    /// `TCA_FQ_ORPHAN_MASK`.
    pub orphan_mask: Option<u32>,
    /// `TCA_FQ_LOW_RATE_THRESHOLD`, bytes/s.
    pub low_rate_threshold: Option<u32>,
    /// `TCA_FQ_CE_THRESHOLD`, µs (`u32::MAX`: none).
    pub ce_threshold: Option<u32>,
    /// `TCA_FQ_TIMER_SLACK`, ns.
    pub timer_slack: Option<u32>,
    /// `TCA_FQ_HORIZON`, µs.
    pub horizon: Option<u32>,
    /// `TCA_FQ_HORIZON_DROP`: drop (1) or cap (0) beyond the horizon.
    pub horizon_drop: Option<u8>,
    /// `TCA_FQ_PRIOMAP`: a `tc_prio_qopt` of 3 bands.
    pub priomap: Option<PfifoFastOptions>,
    /// `TCA_FQ_WEIGHTS`: each band's weight, bytes.
    pub weights: Option<[i32; FQ_BANDS]>,
    /// `TCA_FQ_OFFLOAD_HORIZON`, µs: at most the device's
    /// `max_pacing_offload_horizon`, which is 0 for a TAP device.
    pub offload_horizon: Option<u32>,
}

/// Where a flow is: on none of its band's lists (`fq_flow_is_detached`,
/// since `age` in jiffies, low bit set), on one, or throttled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Detached { age: u64 },
    Listed,
    Throttled,
}

/// `struct fq_flow`, with the counters the TUI's flow table shows.
struct Flow {
    /// The flow's key, `(hash << 1) | 1` as the kernel fakes a socket.
    sk: u64,
    /// Frames with the band they were queued in (`fq_skb_cb(skb)->band`).
    queue: VecDeque<(u8, Packet)>,
    credit: i32,
    band: u8,
    place: Place,
    /// ns; 0: never paced.
    time_next_packet: u64,
    backlog: u64,
    key: Option<FlowKey>,
    drops: u64,
    ecn_marks: u64,
    sent_bytes: u64,
}

/// `struct fq_perband_flows`: indices into `Fq::flows`.
#[derive(Default)]
struct Band {
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    credit: i32,
    quantum: i32,
}

/// Which list of a band `fq_pband_head_select` picked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum List {
    New,
    Old,
}

/// The `fq` qdisc.
pub struct Fq {
    handle: Handle,
    parent: Handle,
    limit: u32,
    flow_plimit: u32,
    quantum: u32,
    initial_quantum: u32,
    /// Jiffies.
    flow_refill_delay: u32,
    /// Bytes/s; `u64::MAX`: unlimited.
    flow_max_rate: u64,
    low_rate_threshold: u32,
    /// ns.
    ce_threshold: u64,
    /// ns.
    horizon: u64,
    horizon_drop: u8,
    orphan_mask: u32,
    rate_enable: u32,
    timer_slack: u32,
    prio2band: [u8; 16],
    trees_log: u32,
    /// `fq_root`: per tree the flows' indices, sorted by `sk`.
    trees: Vec<Vec<u32>>,
    /// Every flow's storage; freed slots are in `free`.
    flows: Vec<Flow>,
    free: Vec<u32>,
    band_nr: usize,
    bands: [Band; FQ_BANDS],
    /// `q->internal`: the fast-path FIFO.
    internal: VecDeque<Packet>,
    /// `q->delayed`: throttled flows by `time_next_packet`, then by when
    /// they were throttled (the tree's `>=` puts equals to the right).
    delayed: BinaryHeap<Reverse<(u64, u64, u32)>>,
    delayed_seq: u64,
    time_next_delayed_flow: u64,
    unthrottle_latency_ns: u64,
    band_pkt_count: [u32; FQ_BANDS],
    flow_count: u32,
    inactive_flows: u32,
    throttled_flows: u32,
    x: FqXstats,
    /// Frames in the flows and the internal queue (the parked one not
    /// included), and their bytes.
    qlen: u32,
    backlog: u64,
    parked: Option<Packet>,
    stats: QdiscStats,
}

/// `hash_ptr(sk, bits)` on a 64-bit kernel (`hash_64`).
fn hash_ptr(sk: u64, bits: u32) -> usize {
    (sk.wrapping_mul(GOLDEN_RATIO_64) >> (64 - bits)) as usize
}

impl Fq {
    /// `fq_init` with `options` (`QdiscOptions::None`: the defaults).
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        let o = match options {
            QdiscOptions::None => &FqOptions::default(),
            QdiscOptions::Fq(o) => o,
            _ => return Err(super::options::foreign("fq")),
        };
        let mtu = ctx.psched_mtu.clamp(1, 1 << 20);
        let mut q = Fq {
            handle: ctx.handle,
            parent: ctx.parent,
            limit: DEFAULT_LIMIT,
            flow_plimit: DEFAULT_FLOW_LIMIT,
            quantum: (2 * mtu).clamp(256, 1 << 20),
            initial_quantum: (10 * mtu).min(1 << 20),
            flow_refill_delay: usecs_to_jiffies(DEFAULT_REFILL_DELAY_US),
            flow_max_rate: u64::MAX,
            low_rate_threshold: DEFAULT_LOW_RATE_THRESHOLD,
            ce_threshold: NS_PER_US * u64::from(u32::MAX),
            horizon: NS_PER_US * u64::from(DEFAULT_HORIZON_US),
            horizon_drop: 1,
            orphan_mask: DEFAULT_ORPHAN_MASK,
            rate_enable: 1,
            timer_slack: DEFAULT_TIMER_SLACK,
            prio2band: PRIOMAP,
            trees_log: DEFAULT_BUCKETS_LOG,
            trees: Vec::new(),
            flows: Vec::new(),
            free: Vec::new(),
            band_nr: 0,
            bands: Default::default(),
            internal: VecDeque::new(),
            delayed: BinaryHeap::new(),
            delayed_seq: 0,
            time_next_delayed_flow: u64::MAX,
            unthrottle_latency_ns: 0,
            band_pkt_count: [0; FQ_BANDS],
            flow_count: 0,
            inactive_flows: 0,
            throttled_flows: 0,
            x: FqXstats::default(),
            qlen: 0,
            backlog: 0,
            parked: None,
            stats: QdiscStats::default(),
        };
        for (b, w) in q.bands.iter_mut().zip(DEFAULT_WEIGHTS) {
            b.quantum = w;
        }
        q.configure(o, Instant::ZERO)?;
        Ok(q)
    }

    /// `fq_change`'s checks and assignments, in its order. As in the
    /// kernel, a bad `buckets` or `pacing` still lets the attributes after
    /// it be applied (only priomap, weights and the resize are skipped),
    /// and the error is returned at the end; an `initial_quantum` above
    /// 2^20 fails the netlink policy before anything is applied.
    fn configure(&mut self, o: &FqOptions, now: Instant) -> Result<(), Refusal> {
        if o.initial_quantum.is_some_and(|v| v > MAX_INITIAL_QUANTUM) {
            // nla_parse_nested_deprecated is called without extack.
            return Err(Refusal::bare(Errno::EINVAL).beside(format!(
                "initial_quantum above {MAX_INITIAL_QUANTUM} (the attribute's netlink range)"
            )));
        }
        let mut err: Option<Refusal> = None;
        let mut fq_log = self.trees_log;
        if let Some(v) = o.buckets_log {
            if (1..=MAX_BUCKETS_LOG).contains(&v) {
                fq_log = v;
            } else {
                err = Some(
                    Refusal::bare(Errno::EINVAL)
                        .beside(format!("buckets 2^{v}: fq takes 2^1..2^18 trees")),
                );
            }
        }
        if let Some(v) = o.limit {
            self.limit = v;
        }
        if let Some(v) = o.flow_limit {
            self.flow_plimit = v;
        }
        if let Some(v) = o.quantum {
            self.quantum = v.clamp(256, 1 << 20);
        }
        if let Some(v) = o.initial_quantum {
            self.initial_quantum = v;
        }
        if let Some(v) = o.maxrate {
            self.flow_max_rate = if v == UNLIMITED {
                u64::MAX
            } else {
                u64::from(v)
            };
        }
        if let Some(v) = o.low_rate_threshold {
            self.low_rate_threshold = v;
        }
        if let Some(v) = o.pacing {
            if v <= 1 {
                self.rate_enable = v;
            } else {
                err = Some(Refusal::bare(Errno::EINVAL).beside(format!("pacing {v}: 0 or 1")));
            }
        }
        if let Some(v) = o.refill_delay {
            self.flow_refill_delay = usecs_to_jiffies(v);
        }
        if err.is_none() {
            if let Some(map) = &o.priomap {
                err = load_priomap(map).map(|p| self.prio2band = p).err();
            }
        }
        if err.is_none() {
            if let Some(w) = &o.weights {
                match w.iter().find(|w| **w < FQ_MIN_WEIGHT) {
                    Some(low) => {
                        err = Some(Refusal::new(
                            Errno::EINVAL,
                            format!(
                                "sch_fq: Weight {low} less that minimum allowed {FQ_MIN_WEIGHT}"
                            ),
                        ))
                    }
                    None => {
                        for (b, w) in self.bands.iter_mut().zip(w) {
                            b.quantum = *w;
                        }
                    }
                }
            }
        }
        if let Some(v) = o.orphan_mask {
            self.orphan_mask = v;
        }
        if let Some(v) = o.ce_threshold {
            self.ce_threshold = NS_PER_US * u64::from(v);
        }
        if let Some(v) = o.timer_slack {
            self.timer_slack = v;
        }
        if let Some(v) = o.horizon {
            self.horizon = NS_PER_US * u64::from(v);
        }
        if let Some(v) = o.horizon_drop {
            self.horizon_drop = v;
        }
        if o.offload_horizon.is_some_and(|v| v > 0) {
            // dev->max_pacing_offload_horizon is 0 for a TAP device.
            err = Some(Refusal::new(
                Errno::EINVAL,
                "sch_fq: invalid offload_horizon",
            ));
        }
        if err.is_none() {
            self.resize(fq_log, now);
        }
        err.map_or(Ok(()), Err)
    }

    /// `fq_resize`: `1 << log` trees, the flows rehashed into them and the
    /// garbage-collectable ones freed (`fq_rehash`).
    fn resize(&mut self, log: u32, now: Instant) {
        if !self.trees.is_empty() && log == self.trees_log {
            return;
        }
        let mut trees: Vec<Vec<u32>> = vec![Vec::new(); 1 << log];
        let j = jiffies(now);
        let mut freed = 0;
        for idx in self.trees.drain(..).flatten() {
            if self.flows[idx as usize].gc_candidate(j) {
                self.free.push(idx);
                freed += 1;
                continue;
            }
            let sk = self.flows[idx as usize].sk;
            let tree = &mut trees[hash_ptr(sk, log)];
            let at = tree.partition_point(|i| self.flows[*i as usize].sk < sk);
            tree.insert(at, idx);
        }
        self.trees = trees;
        self.trees_log = log;
        self.flow_count -= freed;
        self.inactive_flows -= freed;
        self.x.gc_flows += u64::from(freed);
    }

    /// The options as `fq_dump` sends them.
    pub fn options(&self) -> FqOptions {
        let mut priomap = [0u8; 16];
        priomap.copy_from_slice(&self.prio2band);
        FqOptions {
            limit: Some(self.limit),
            flow_limit: Some(self.flow_plimit),
            quantum: Some(self.quantum),
            initial_quantum: Some(self.initial_quantum),
            pacing: Some(self.rate_enable),
            defrate: None,
            maxrate: Some(self.flow_max_rate.min(u64::from(UNLIMITED)) as u32),
            buckets_log: Some(self.trees_log),
            refill_delay: Some(jiffies_to_usecs(self.flow_refill_delay)),
            orphan_mask: Some(self.orphan_mask),
            low_rate_threshold: Some(self.low_rate_threshold),
            ce_threshold: Some((self.ce_threshold / NS_PER_US) as u32),
            timer_slack: Some(self.timer_slack),
            horizon: Some((self.horizon / NS_PER_US) as u32),
            horizon_drop: Some(self.horizon_drop),
            priomap: Some(PfifoFastOptions {
                bands: FQ_BANDS as u32,
                priomap,
            }),
            weights: Some(std::array::from_fn(|i| self.bands[i].quantum)),
            offload_horizon: Some(0),
        }
    }

    /// The xstats as `fq_dump_stats` fills them at `now`.
    pub fn xstats(&self, now: Instant) -> FqXstats {
        FqXstats {
            time_next_delayed_flow: self
                .time_next_delayed_flow
                .wrapping_add(u64::from(self.timer_slack))
                .wrapping_sub(now.nanos()) as i64,
            flows: self.flow_count,
            inactive_flows: self.inactive_flows,
            throttled_flows: self.throttled_flows,
            unthrottle_latency_ns: self.unthrottle_latency_ns.min(u64::from(u32::MAX)) as u32,
            band_pkt_count: self.band_pkt_count,
            ..self.x
        }
    }

    /// When the watchdog fires (`qdisc_watchdog_schedule_range_ns` at
    /// `time_next_delayed_flow`, its soft expiry: the slack after it is
    /// the timer's to use, and an emulator need not).
    fn watchdog(&self) -> Option<u64> {
        (self.qlen > 0 && self.time_next_delayed_flow != u64::MAX)
            .then_some(self.time_next_delayed_flow)
    }

    /// A flow slot for key `sk` (`kmem_cache_zalloc`, reusing a freed one).
    fn alloc_flow(&mut self, sk: u64, j: u64) -> u32 {
        let fresh = Flow {
            sk,
            queue: VecDeque::new(),
            credit: self.initial_quantum as i32,
            band: 0,
            place: Place::Detached { age: j | 1 },
            time_next_packet: 0,
            backlog: 0,
            key: None,
            drops: 0,
            ecn_marks: 0,
            sent_bytes: 0,
        };
        match self.free.pop() {
            Some(idx) => {
                let f = &mut self.flows[idx as usize];
                let queue = std::mem::take(&mut f.queue);
                *f = Flow { queue, ..fresh };
                idx
            }
            None => {
                self.flows.push(fresh);
                (self.flows.len() - 1) as u32
            }
        }
    }

    /// `fq_classify` past its fast path, with `fq_gc`: the flow of key
    /// `sk` in its tree, created if missing. The lookup bisects the
    /// sorted tree; detached flows idle for 3 s met on that path (at most
    /// 8, stopping at the flow looked for) are freed first.
    fn lookup(&mut self, sk: u64, now: Instant) -> u32 {
        let j = jiffies(now);
        let t = hash_ptr(sk, self.trees_log);
        let mut tofree = [0usize; FQ_GC_MAX];
        let mut fcnt = 0;
        let (mut lo, mut hi) = (0, self.trees[t].len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            let f = &self.flows[self.trees[t][mid] as usize];
            if f.sk == sk {
                break;
            }
            if f.gc_candidate(j) {
                tofree[fcnt] = mid;
                fcnt += 1;
                if fcnt == FQ_GC_MAX {
                    break;
                }
            }
            if f.sk < sk {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if fcnt > 0 {
            let positions = &mut tofree[..fcnt];
            positions.sort_unstable_by(|a, b| b.cmp(a));
            for &pos in positions.iter() {
                let idx = self.trees[t].remove(pos);
                self.free.push(idx);
            }
            self.flow_count -= fcnt as u32;
            self.inactive_flows -= fcnt as u32;
            self.x.gc_flows += fcnt as u64;
        }
        let tree = &self.trees[t];
        let at = tree.partition_point(|i| self.flows[*i as usize].sk < sk);
        if let Some(&idx) = tree.get(at) {
            if self.flows[idx as usize].sk == sk {
                return idx;
            }
        }
        let idx = self.alloc_flow(sk, j);
        self.trees[t].insert(at, idx);
        self.flow_count += 1;
        self.inactive_flows += 1;
        idx
    }

    /// `fq_fastpath_check` for a frame without socket or timestamp.
    fn fastpath(&self, now: Instant) -> bool {
        if self.total_qlen() != 0
            && (self.flow_count != self.inactive_flows + self.throttled_flows
                || self.internal.len() >= 8
                || self.time_next_delayed_flow <= now.nanos())
        {
            return false;
        }
        self.flow_max_rate == u64::MAX
    }

    /// `fq_flow_add_tail`: onto the list of the flow's band.
    fn add_tail(&mut self, idx: u32, list: List) {
        let f = &mut self.flows[idx as usize];
        f.place = Place::Listed;
        let b = &mut self.bands[f.band as usize];
        match list {
            List::New => b.new_flows.push_back(idx),
            List::Old => b.old_flows.push_back(idx),
        }
    }

    /// `fq_flow_set_throttled`.
    fn set_throttled(&mut self, idx: u32) {
        let f = &mut self.flows[idx as usize];
        f.place = Place::Throttled;
        let t = f.time_next_packet;
        self.delayed.push(Reverse((t, self.delayed_seq, idx)));
        self.delayed_seq += 1;
        self.throttled_flows += 1;
        self.x.throttled += 1;
        self.time_next_delayed_flow = self.time_next_delayed_flow.min(t);
    }

    /// `fq_check_throttled`: the flows whose time has come back on their
    /// band's old list, and the unthrottle latency's EWMA.
    fn check_throttled(&mut self, now: u64) {
        if self.time_next_delayed_flow > now {
            return;
        }
        let sample = now.wrapping_sub(self.time_next_delayed_flow) as i64;
        if sample > 0 {
            self.unthrottle_latency_ns -= self.unthrottle_latency_ns >> 3;
            self.unthrottle_latency_ns += (sample as u64) >> 3;
        }
        self.time_next_delayed_flow = u64::MAX;
        while let Some(&Reverse((t, _, idx))) = self.delayed.peek() {
            if t > now {
                self.time_next_delayed_flow = t;
                break;
            }
            self.delayed.pop();
            self.throttled_flows -= 1;
            self.add_tail(idx, List::Old);
        }
    }

    /// `fq_pband_head_select` of the band being served.
    fn head_select(&self) -> Option<List> {
        let b = &self.bands[self.band_nr];
        if b.credit <= 0 {
            None
        } else if !b.new_flows.is_empty() {
            Some(List::New)
        } else if !b.old_flows.is_empty() {
            Some(List::Old)
        } else {
            None
        }
    }

    fn pop_head(&mut self, list: List) -> Option<u32> {
        let b = &mut self.bands[self.band_nr];
        match list {
            List::New => b.new_flows.pop_front(),
            List::Old => b.old_flows.pop_front(),
        }
    }

    fn total_qlen(&self) -> u32 {
        self.qlen + u32::from(self.parked.is_some())
    }

    /// `fq_dequeue` without Sent counting.
    fn dequeue_inner(&mut self, now: Instant) -> Option<Packet> {
        if self.qlen == 0 {
            return None;
        }
        if let Some(p) = self.internal.pop_front() {
            self.qlen -= 1;
            self.backlog -= u64::from(p.len);
            return Some(p);
        }
        let now_ns = now.nanos();
        self.check_throttled(now_ns);
        let mut retry = 0;
        let (idx, pkt) = loop {
            let Some(list) = self.head_select() else {
                let mut found = false;
                while {
                    retry += 1;
                    retry <= FQ_BANDS
                } {
                    self.band_nr = (self.band_nr + 1) % FQ_BANDS;
                    let b = &mut self.bands[self.band_nr];
                    b.credit = b.credit.saturating_add(b.quantum).min(b.quantum);
                    if b.credit > 0 {
                        found = true;
                        break;
                    }
                    retry = 0;
                }
                if !found {
                    return None;
                }
                continue;
            };
            let b = &self.bands[self.band_nr];
            let idx = match list {
                List::New => b.new_flows[0],
                List::Old => b.old_flows[0],
            };
            retry = 0;
            let f = &mut self.flows[idx as usize];
            if f.credit <= 0 {
                f.credit = f.credit.wrapping_add(self.quantum as i32);
                self.pop_head(list);
                self.add_tail(idx, List::Old);
                continue;
            }
            let Some((_, head)) = f.queue.front() else {
                self.pop_head(list);
                if list == List::New {
                    self.add_tail(idx, List::Old);
                } else {
                    self.flows[idx as usize].place = Place::Detached {
                        age: jiffies(now) | 1,
                    };
                }
                continue;
            };
            let time_next_packet = head.meta.enqueue_time.nanos().max(f.time_next_packet);
            if now_ns < time_next_packet {
                f.time_next_packet = time_next_packet;
                self.pop_head(list);
                self.set_throttled(idx);
                continue;
            }
            let Some((band, mut p)) = f.queue.pop_front() else {
                continue;
            };
            self.qlen -= 1;
            self.backlog -= u64::from(p.len);
            f.backlog -= u64::from(p.len);
            f.sent_bytes += u64::from(p.len);
            if (now_ns
                .wrapping_sub(time_next_packet)
                .wrapping_sub(self.ce_threshold) as i64)
                > 0
            {
                // INET_ECN_set_ce, counted whether or not it could mark.
                mark_ce(&mut p);
                f.ecn_marks += 1;
                self.x.ce_mark += 1;
            }
            if f.queue.is_empty() {
                self.inactive_flows += 1;
            }
            self.band_pkt_count[band as usize] -= 1;
            break (idx, p);
        };
        let mut plen = pkt.len;
        let f = &mut self.flows[idx as usize];
        f.credit = f.credit.wrapping_sub(plen as i32);
        let b = &mut self.bands[self.band_nr];
        b.credit = b.credit.wrapping_sub(plen as i32);
        if self.rate_enable == 0 {
            return Some(pkt);
        }
        // No skb->tstamp, no skb->sk: the rate is maxrate's alone.
        let rate = self.flow_max_rate;
        if rate <= u64::from(self.low_rate_threshold) {
            f.credit = 0;
        } else {
            plen = plen.max(self.quantum);
            if f.credit > 0 {
                return Some(pkt);
            }
        }
        if rate != u64::MAX {
            let bytes_ns = u64::from(plen) * NS_PER_SEC;
            // A rate of 0 leaves the length undivided (clamped below).
            let mut len = bytes_ns.checked_div(rate).unwrap_or(bytes_ns);
            if len > NS_PER_SEC {
                len = NS_PER_SEC;
                self.x.pkts_too_long += 1;
            }
            if f.time_next_packet != 0 {
                let drift = now_ns.wrapping_sub(f.time_next_packet) as i64;
                if drift > 0 {
                    len -= (len / 2).min(drift as u64);
                }
            }
            f.time_next_packet = now_ns + len;
        }
        Some(pkt)
    }

    fn flow_dump(f: &Flow, now: Instant) -> FlowDump {
        let head = f.queue.front().map(|(_, p)| p);
        FlowDump {
            bucket: (f.sk >> 1) as u32,
            flow: f.key,
            backlog: f.backlog,
            qlen: f.queue.len() as u32,
            head_sojourn_ns: head.map_or(0, |p| now.saturating_since(p.meta.enqueue_time)),
            deficit: i64::from(f.credit),
            drops: f.drops,
            ecn_marks: f.ecn_marks,
            sent_bytes: f.sent_bytes,
            hash: super::dump::flow_queue_hash(head, f.key),
            ..FlowDump::default()
        }
    }
}

impl Flow {
    /// `fq_gc_candidate`: detached for more than `FQ_GC_AGE`.
    fn gc_candidate(&self, j: u64) -> bool {
        matches!(self.place, Place::Detached { age } if time_after(j, age + FQ_GC_AGE))
    }
}

/// `fq_load_priomap`: a map of 3 bands, each entry below 3.
fn load_priomap(map: &PfifoFastOptions) -> Result<[u8; 16], Refusal> {
    if map.bands != FQ_BANDS as u32 {
        return Err(Refusal::new(
            Errno::EINVAL,
            "sch_fq: FQ only supports 3 bands",
        ));
    }
    if let Some((i, b)) = map
        .priomap
        .iter()
        .enumerate()
        .find(|(_, b)| usize::from(**b) >= FQ_BANDS)
    {
        return Err(Refusal::new(
            Errno::EINVAL,
            format!("sch_fq: FQ priomap field {i} maps to a too high band {b}"),
        ));
    }
    Ok(map.priomap)
}

impl ParkOnPeek for Fq {
    fn parked_slot(&mut self) -> &mut Option<Packet> {
        &mut self.parked
    }
    fn sent_stats(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }
    fn dequeue_next(&mut self, now: Instant, _drops: &mut Drops) -> Option<Packet> {
        self.dequeue_inner(now)
    }
}

impl Qdisc for Fq {
    fn kind(&self) -> &'static str {
        "fq"
    }

    /// `fq_enqueue` of a frame without socket or timestamp.
    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        let band = self.prio2band[(pkt.meta.priority & 15) as usize];
        if self.band_pkt_count[band as usize] >= self.limit {
            self.x.band_drops[band as usize] += 1;
            return self.stats.reject(pkt, DropReason::FqBandLimit, drops);
        }
        // No tstamp: time_to_send is now, within any horizon.
        pkt.meta.enqueue_time = now;
        let sk = (u64::from(pkt.meta.hash & self.orphan_mask) << 1) | 1;
        if self.fastpath(now) {
            self.x.fastpath_packets += 1;
            self.qlen += 1;
            self.backlog += u64::from(pkt.len);
            self.internal.push_back(pkt);
            return Verdict::Queued;
        }
        let idx = self.lookup(sk, now);
        let f = &mut self.flows[idx as usize];
        if f.queue.len() >= self.flow_plimit as usize {
            self.x.flows_plimit += 1;
            f.drops += 1;
            return self.stats.reject(pkt, DropReason::FqFlowLimit, drops);
        }
        if let Place::Detached { age } = f.place {
            // Onto the new list of the band the flow had (0 for a flow
            // just made), before its band is updated below.
            if time_after(jiffies(now), age + u64::from(self.flow_refill_delay)) {
                f.credit = (f.credit as u32).max(self.quantum) as i32;
            }
            self.add_tail(idx, List::New);
        }
        let f = &mut self.flows[idx as usize];
        f.band = band;
        self.band_pkt_count[band as usize] += 1;
        if f.queue.is_empty() {
            self.inactive_flows -= 1;
        }
        f.key = Some(pkt.meta.flow);
        f.backlog += u64::from(pkt.len);
        self.qlen += 1;
        self.backlog += u64::from(pkt.len);
        f.queue.push_back((band, pkt));
        Verdict::Queued
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
        self.watchdog()
            .map(|t| Instant::from_nanos(t.max(now.nanos())))
    }

    fn qlen(&self) -> u32 {
        self.total_qlen()
    }

    fn backlog(&self) -> u64 {
        self.backlog + self.parked.as_ref().map_or(0, |p| u64::from(p.len))
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    /// `fq_reset`: every frame dropped, every flow freed, the lists and
    /// band counts emptied (band credits, the band served and the time of
    /// the next delayed flow stay).
    fn reset(&mut self, drops: &mut Drops) {
        drop_all_held(self, drops);
        for tree in &mut self.trees {
            for idx in tree.drain(..) {
                self.free.push(idx);
            }
        }
        self.flow_count = 0;
        self.inactive_flows = 0;
    }

    /// `fq_change`, then frames dequeued (through `fq_dequeue`) and
    /// dropped while over a lowered limit.
    fn change(
        &mut self,
        options: &QdiscOptions,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        let o = match options {
            QdiscOptions::None => return Err(Refusal::bare(Errno::EINVAL)),
            QdiscOptions::Fq(o) => o,
            _ => return Err(super::options::foreign("fq")),
        };
        let result = self.configure(o, now);
        self.drop_while(now, drops, |q| q.total_qlen() > q.limit);
        result
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let active = self
            .trees
            .iter()
            .flatten()
            .map(|&i| &self.flows[i as usize])
            .filter(|f| !f.queue.is_empty())
            .map(|f| Fq::flow_dump(f, now));
        // fq has no classes (no `Qdisc_class_ops`).
        let (flows, _, other_flows) = list_flows(listing, active, |_| ClassDump::default());
        let mut occupancy = QueueOccupancy::parked(self.parked.as_ref(), now);
        if !self.internal.is_empty() {
            occupancy.push(QueueOccupancy::of_qdisc(
                QueueId::Fifo,
                self.internal.iter(),
                now,
            ));
        }
        QdiscDump {
            kind: "fq".into(),
            handle: self.handle,
            parent: self.parent,
            options: QdiscOptions::Fq(Box::new(self.options())),
            stats: self.stats(),
            xstats: Some(Xstats::Fq(self.xstats(now))),
            classes: Vec::new(),
            children: Vec::new(),
            flows,
            other_flows,
            occupancy,
        }
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        let mut out: Vec<Packet> = self.parked.take().into_iter().collect();
        out.extend(self.internal.drain(..));
        for f in &mut self.flows {
            out.extend(f.queue.drain(..).map(|(_, p)| p));
            f.backlog = 0;
            f.place = Place::Detached { age: 1 };
        }
        for b in &mut self.bands {
            b.new_flows.clear();
            b.old_flows.clear();
        }
        self.delayed.clear();
        self.throttled_flows = 0;
        self.band_pkt_count = [0; FQ_BANDS];
        self.inactive_flows = self.flow_count;
        self.qlen = 0;
        self.backlog = 0;
        out
    }
}

#[cfg(test)]
mod tests;
