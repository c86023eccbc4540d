//! hhf, the heavy-hitter filter (Linux 6.18 net/sched/sch_hhf.c): every
//! arrival is classified as a heavy hitter or not, and the two buckets are
//! served by weighted deficit round robin, the non-heavy one with
//! `non_hh_weight` quanta (default 2) to the heavy one's 1, and first, as a
//! new bucket (`hhf_enqueue`, `hhf_dequeue`). A flow already in the
//! heavy-hitter table (1024 chains, at most `hh_limit` entries, each idle
//! entry evicted after `evict_timeout`) is heavy; otherwise the frame goes
//! through the multistage filter, 4 arrays of 1024 byte counters indexed by
//! three 10-bit chunks of the keyed flow hash and their XOR, each counter
//! valid until the arrays are reset every `reset_timeout`: a flow whose 4
//! counters would all exceed `admit_bytes` is admitted to the table
//! (shielding: its bytes no longer count), otherwise the counters are raised
//! conservatively (`hhf_classify`). Over `limit` frames the head of the
//! heavy-hitter bucket (of the other when it is empty) is dropped
//! (`hhf_drop`). Time is the kernel's jiffies at HZ 250, as everywhere in
//! bloatbox (`qdisc::jiffies::HZ`): the default `reset_timeout` is
//! `HZ / 25` = 10 jiffies (40 ms), `evict_timeout` `HZ` (1 s), and the µs
//! tc sends are rounded up to jiffies of 4 ms (`usecs_to_jiffies`).

use super::dump::{QueueId, QueueOccupancy};
use super::flow_queues::{self, drr_flow, ListTag};
use super::jiffies::{jiffies, jiffies_to_usecs, usecs_to_jiffies, HZ};
use super::park::{drop_all_held, ParkOnPeek};
use super::{keyed_flow_hash, Errno, Handle, Qdisc, QdiscCtx, QdiscDump, QdiscOptions};
use super::{QdiscStats, Refusal, Verdict, Xstats};
use crate::packet::{DropReason, Drops, Packet};
use crate::time::Instant;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

#[cfg(test)]
mod tests;

/// `HH_FLOWS_CNT`: chains of the heavy-hitter table.
pub const HH_FLOWS_CNT: usize = 1024;
/// `HHF_ARRAYS_CNT`: arrays of the multistage filter.
pub const HHF_ARRAYS_CNT: usize = 4;
/// `HHF_ARRAYS_LEN`: counters per array.
pub const HHF_ARRAYS_LEN: usize = 1024;
/// `HHF_BIT_MASK_LEN`.
const HHF_BIT_MASK_LEN: u32 = 10;
/// `HHF_BIT_MASK`.
const HHF_BIT_MASK: u32 = 0x3FF;
/// `WDRR_BUCKET_FOR_HH`.
pub const BUCKET_HH: usize = 0;
/// `WDRR_BUCKET_FOR_NON_HH`.
pub const BUCKET_NON_HH: usize = 1;
/// `hhf_init`'s limit, frames.
pub const DEFAULT_LIMIT: u32 = 1000;
/// `hhf_init`'s `hhf_admit_bytes` (128 KB).
pub const DEFAULT_ADMIT_BYTES: u32 = 131_072;
/// `hhf_init`'s `hhf_non_hh_weight`.
pub const DEFAULT_NON_HH_WEIGHT: u32 = 2;
/// `hhf_init`'s `hhf_reset_timeout`, jiffies (`HZ / 25`: 40 ms).
pub const DEFAULT_RESET_TIMEOUT: u32 = (HZ / 25) as u32;
/// `hhf_init`'s `hhf_evict_timeout`, jiffies (`HZ`: 1 s).
pub const DEFAULT_EVICT_TIMEOUT: u32 = HZ as u32;
/// The most heavy hitters the table may hold (`hhf_init`'s default, and
/// the netlink policy's maximum of TCA_HHF_HH_FLOWS_LIMIT).
pub const HH_FLOWS_LIMIT_MAX: u32 = 2 * HH_FLOWS_CNT as u32;
/// `hhf_init`'s quantum when the device's MTU gives none that fits.
const FALLBACK_QUANTUM: u32 = 256;
/// The end of a chain in the table.
const NIL: u32 = u32::MAX;

/// The TCA_HHF_* attributes (tc sends those given, non-zero; the dump has
/// all). Times in µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HhfOptions {
    /// TCA_HHF_BACKLOG_LIMIT, frames.
    pub limit: Option<u32>,
    /// TCA_HHF_QUANTUM, bytes.
    pub quantum: Option<u32>,
    /// TCA_HHF_HH_FLOWS_LIMIT: heavy hitters the table may hold.
    pub hh_limit: Option<u32>,
    /// TCA_HHF_RESET_TIMEOUT, µs.
    pub reset_timeout: Option<u32>,
    /// TCA_HHF_ADMIT_BYTES.
    pub admit_bytes: Option<u32>,
    /// TCA_HHF_EVICT_TIMEOUT, µs.
    pub evict_timeout: Option<u32>,
    /// TCA_HHF_NON_HH_WEIGHT.
    pub non_hh_weight: Option<u32>,
}

/// `struct tc_hhf_xstats` (`hhf_dump_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HhfXstats {
    /// Arrivals over the limit (`drop_overlimit`).
    pub drop_overlimit: u32,
    /// Heavy hitters not admitted: the table held `hh_limit`
    /// (`hh_flows_overlimit`).
    pub hh_overlimit: u32,
    /// Heavy hitters admitted so far (`hh_flows_total_cnt`).
    pub hh_tot_count: u32,
    /// Entries in the table now (`hh_flows_current_cnt`).
    pub hh_cur_count: u32,
}

/// `hhf_time_before(a, b)`.
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `struct hh_flow_state`, in the table's slab.
#[derive(Clone, Copy, Debug)]
struct HhFlow {
    hash_id: u32,
    hit_timestamp: u32,
    /// The next entry of its chain (`NIL`: the last).
    next: u32,
}

/// Table T (`hh_flows`): 1024 chains of heavy-hitter entries, in a slab
/// sized for the most entries the policy allows, so that admitting a heavy
/// hitter allocates nothing (the kernel's `kzalloc` of one entry).
struct HhTable {
    heads: Vec<u32>,
    slab: Vec<HhFlow>,
    free: Vec<u32>,
    /// `hh_flows_current_cnt`.
    current: u32,
}

impl HhTable {
    fn new() -> Self {
        HhTable {
            heads: vec![NIL; HH_FLOWS_CNT],
            slab: Vec::with_capacity(HH_FLOWS_LIMIT_MAX as usize),
            free: Vec::with_capacity(HH_FLOWS_LIMIT_MAX as usize),
            current: 0,
        }
    }

    /// `seek_list`: the entry of `hash` in chain `pos`, expired entries
    /// freed on the way (all but a chain's last, kept for reuse).
    fn seek(&mut self, hash: u32, pos: usize, now: u32, evict: u32) -> Option<u32> {
        let (mut prev, mut cur) = (NIL, self.heads[pos]);
        while cur != NIL {
            let f = self.slab[cur as usize];
            if before(f.hit_timestamp.wrapping_add(evict), now) {
                if f.next == NIL {
                    return None;
                }
                if prev == NIL {
                    self.heads[pos] = f.next;
                } else {
                    self.slab[prev as usize].next = f.next;
                }
                self.free.push(cur);
                self.current -= 1;
            } else if f.hash_id == hash {
                return Some(cur);
            } else {
                prev = cur;
            }
            cur = f.next;
        }
        None
    }

    /// `alloc_new_hh`: an expired entry of chain `pos`, else a new one at
    /// its tail while fewer than `limit` are held (`None`, counted in
    /// `overlimit`, otherwise).
    fn alloc(
        &mut self,
        pos: usize,
        now: u32,
        evict: u32,
        limit: u32,
        overlimit: &mut u32,
    ) -> Option<u32> {
        let mut cur = self.heads[pos];
        let mut last = NIL;
        while cur != NIL {
            let f = self.slab[cur as usize];
            if before(f.hit_timestamp.wrapping_add(evict), now) {
                return Some(cur);
            }
            last = cur;
            cur = f.next;
        }
        if self.current >= limit {
            *overlimit = overlimit.wrapping_add(1);
            return None;
        }
        let entry = HhFlow {
            hash_id: 0,
            hit_timestamp: 0,
            next: NIL,
        };
        let idx = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = entry;
                i
            }
            None => {
                self.slab.push(entry);
                self.slab.len() as u32 - 1
            }
        };
        if last == NIL {
            self.heads[pos] = idx;
        } else {
            self.slab[last as usize].next = idx;
        }
        self.current += 1;
        Some(idx)
    }

    /// `hhf_reset_classifier`'s half: every entry freed.
    fn clear(&mut self) {
        self.heads.fill(NIL);
        self.slab.clear();
        self.free.clear();
        self.current = 0;
    }
}

/// Filter F: the counter arrays and their valid bits (`hhf_arrays`,
/// `hhf_valid_bits`).
struct Filter {
    counters: Vec<[u32; HHF_ARRAYS_LEN]>,
    valid: [[u64; HHF_ARRAYS_LEN / 64]; HHF_ARRAYS_CNT],
}

impl Filter {
    fn new() -> Self {
        Filter {
            counters: vec![[0; HHF_ARRAYS_LEN]; HHF_ARRAYS_CNT],
            valid: [[0; HHF_ARRAYS_LEN / 64]; HHF_ARRAYS_CNT],
        }
    }

    /// The counter of array `i` at `pos`, zeroed first if not valid since
    /// the last reset.
    fn counter(&mut self, i: usize, pos: usize) -> u32 {
        let (word, bit) = (pos / 64, 1u64 << (pos % 64));
        if self.valid[i][word] & bit == 0 {
            self.counters[i][pos] = 0;
            self.valid[i][word] |= bit;
        }
        self.counters[i][pos]
    }
}

/// The four positions of `hash` in the arrays: three 10-bit chunks and the
/// XOR of them with the remaining bits (`hhf_classify`).
pub fn filter_positions(hash: u32) -> [usize; HHF_ARRAYS_CNT] {
    let mut pos = [0; HHF_ARRAYS_CNT];
    let (mut rest, mut xorsum) = (hash, 0);
    for p in pos.iter_mut().take(HHF_ARRAYS_CNT - 1) {
        let chunk = rest & HHF_BIT_MASK;
        *p = chunk as usize;
        xorsum ^= chunk;
        rest >>= HHF_BIT_MASK_LEN;
    }
    pos[HHF_ARRAYS_CNT - 1] = (xorsum ^ rest) as usize;
    pos
}

/// A WDRR bucket (`struct wdrr_bucket`).
struct Bucket {
    queue: VecDeque<Packet>,
    deficit: i32,
    list: ListTag,
}
drr_flow!(Bucket);

impl Bucket {
    fn new() -> Self {
        Bucket {
            queue: VecDeque::new(),
            deficit: 0,
            list: ListTag::None,
        }
    }
}

/// The `hhf` qdisc (`struct hhf_sched_data`).
pub struct Hhf {
    handle: Handle,
    parent: Handle,
    limit: u32,
    quantum: u32,
    hash_key: u32,
    hh_flows_limit: u32,
    /// Jiffies.
    reset_timeout: u32,
    admit_bytes: u32,
    /// Jiffies.
    evict_timeout: u32,
    non_hh_weight: u32,
    table: HhTable,
    filter: Filter,
    /// `hhf_arrays_reset_timestamp`, jiffies.
    arrays_reset_timestamp: u32,
    /// The jiffies of the last call with a clock (`reset` has none).
    last_jiffies: u32,
    buckets: [Bucket; 2],
    new_buckets: VecDeque<u32>,
    old_buckets: VecDeque<u32>,
    drop_overlimit: u32,
    hh_flows_overlimit: u32,
    hh_flows_total_cnt: u32,
    /// Frames in the buckets (the parked one not included).
    qlen: u32,
    /// Bytes in the buckets (the parked one not included).
    backlog: u64,
    /// A frame dequeued by `peek` (qdisc_peek_dequeued), still counted.
    parked: Option<Packet>,
    /// Frames of this qdisc's TX queue in the device's requeue slot and
    /// their bytes, which its limit counts (`Qdisc::set_requeued`).
    requeued: (u32, u64),
    stats: QdiscStats,
}

/// `jiffies` as `hhf_time_stamp` returns it (a u32).
fn stamp(now: Instant) -> u32 {
    jiffies(now) as u32
}

impl Hhf {
    /// `hhf_init` with `options` (`QdiscOptions::None`: the defaults). The
    /// perturbation key comes from the context's seed; the arrays' reset
    /// timestamp starts at jiffy 0 (a qdisc is built without the clock).
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Self, Refusal> {
        let seed = ctx.seed ^ 0x6868_665f_7065_7274; // "hhf_pert"
        let mut quantum = ctx.psched_mtu;
        if quantum as i32 <= 0
            || u64::from(quantum) * u64::from(DEFAULT_NON_HH_WEIGHT) > i32::MAX as u64
        {
            quantum = FALLBACK_QUANTUM;
        }
        let mut q = Hhf {
            handle: ctx.handle,
            parent: ctx.parent,
            limit: DEFAULT_LIMIT,
            quantum,
            hash_key: (seed ^ (seed >> 32)) as u32,
            hh_flows_limit: HH_FLOWS_LIMIT_MAX,
            reset_timeout: DEFAULT_RESET_TIMEOUT,
            admit_bytes: DEFAULT_ADMIT_BYTES,
            evict_timeout: DEFAULT_EVICT_TIMEOUT,
            non_hh_weight: DEFAULT_NON_HH_WEIGHT,
            table: HhTable::new(),
            filter: Filter::new(),
            arrays_reset_timestamp: 0,
            last_jiffies: 0,
            buckets: [Bucket::new(), Bucket::new()],
            new_buckets: VecDeque::with_capacity(2),
            old_buckets: VecDeque::with_capacity(2),
            drop_overlimit: 0,
            hh_flows_overlimit: 0,
            hh_flows_total_cnt: 0,
            qlen: 0,
            backlog: 0,
            parked: None,
            requeued: (0, 0),
            stats: QdiscStats::default(),
        };
        match options {
            QdiscOptions::None => {}
            QdiscOptions::Hhf(o) => q.apply(o)?,
            _ => return Err(super::options::foreign("hhf")),
        }
        Ok(q)
    }

    /// `hhf_change`'s checks, then its settings (nothing changes on error):
    /// the policy's `hh_limit` at most 2048 (ERANGE), quantum × weight in
    /// 1..=INT_MAX (EINVAL, no message).
    fn apply(&mut self, o: &HhfOptions) -> Result<(), Refusal> {
        if let Some(v) = o.hh_limit.filter(|&v| v > HH_FLOWS_LIMIT_MAX) {
            return Err(Refusal::new(Errno::ERANGE, "integer out of range.")
                .beside(format!("hh_limit {v}: allowed up to {HH_FLOWS_LIMIT_MAX}")));
        }
        let quantum = o.quantum.unwrap_or(self.quantum);
        let weight = o.non_hh_weight.unwrap_or(self.non_hh_weight);
        let non_hh_quantum = u64::from(quantum) * u64::from(weight);
        if non_hh_quantum == 0 || non_hh_quantum > i32::MAX as u64 {
            return Err(Refusal::bare(Errno::EINVAL).beside(format!(
                "quantum {quantum} × non_hh_weight {weight} = {non_hh_quantum}: allowed 1..=2147483647"
            )));
        }
        if let Some(v) = o.limit {
            self.limit = v;
        }
        self.quantum = quantum;
        self.non_hh_weight = weight;
        if let Some(v) = o.hh_limit {
            self.hh_flows_limit = v;
        }
        if let Some(us) = o.reset_timeout {
            self.reset_timeout = usecs_to_jiffies(us);
        }
        if let Some(v) = o.admit_bytes {
            self.admit_bytes = v;
        }
        if let Some(us) = o.evict_timeout {
            self.evict_timeout = usecs_to_jiffies(us);
        }
        Ok(())
    }

    /// The options as `hhf_dump` sends them (times back in µs).
    pub fn options(&self) -> HhfOptions {
        HhfOptions {
            limit: Some(self.limit),
            quantum: Some(self.quantum),
            hh_limit: Some(self.hh_flows_limit),
            reset_timeout: Some(jiffies_to_usecs(self.reset_timeout)),
            admit_bytes: Some(self.admit_bytes),
            evict_timeout: Some(jiffies_to_usecs(self.evict_timeout)),
            non_hh_weight: Some(self.non_hh_weight),
        }
    }

    /// `hhf_dump_stats`.
    pub fn xstats(&self) -> HhfXstats {
        HhfXstats {
            drop_overlimit: self.drop_overlimit,
            hh_overlimit: self.hh_flows_overlimit,
            hh_tot_count: self.hh_flows_total_cnt,
            hh_cur_count: self.table.current,
        }
    }

    /// The keyed flow hash of a frame (`skb_get_hash_perturb` with the
    /// instance's perturbation).
    pub fn hash(&self, pkt: &Packet) -> u32 {
        keyed_flow_hash(pkt.meta.hash, self.hash_key)
    }

    /// The frames queued in bucket `idx` (`BUCKET_HH`, `BUCKET_NON_HH`).
    pub fn bucket_len(&self, idx: usize) -> usize {
        self.buckets[idx].queue.len()
    }

    /// `hhf_classify` at jiffy `now`: the bucket of a frame of `len`
    /// bytes and keyed hash `hash`.
    fn classify(&mut self, hash: u32, len: u32, now: u32) -> usize {
        if before(
            self.arrays_reset_timestamp.wrapping_add(self.reset_timeout),
            now,
        ) {
            self.filter.valid = Default::default();
            self.arrays_reset_timestamp = now;
        }
        let flow_pos = (hash & HHF_BIT_MASK) as usize;
        let evict = self.evict_timeout;
        if let Some(f) = self.table.seek(hash, flow_pos, now, evict) {
            self.table.slab[f as usize].hit_timestamp = now;
            return BUCKET_HH;
        }
        let pos = filter_positions(hash);
        let mut min = u32::MAX;
        for (i, &p) in pos.iter().enumerate() {
            min = min.min(self.filter.counter(i, p).wrapping_add(len));
        }
        if min > self.admit_bytes {
            let limit = self.hh_flows_limit;
            let overlimit = &mut self.hh_flows_overlimit;
            let Some(f) = self.table.alloc(flow_pos, now, evict, limit, overlimit) else {
                return BUCKET_NON_HH;
            };
            let f = &mut self.table.slab[f as usize];
            f.hash_id = hash;
            f.hit_timestamp = now;
            self.hh_flows_total_cnt = self.hh_flows_total_cnt.wrapping_add(1);
            // Shielding: the counters are left as they are.
            return BUCKET_HH;
        }
        for (i, &p) in pos.iter().enumerate() {
            let c = &mut self.filter.counters[i][p];
            *c = (*c).max(min);
        }
        BUCKET_NON_HH
    }

    /// `hhf_drop`: the head of the heavy-hitter bucket, else of the other;
    /// returns the bucket tried.
    fn drop_head(&mut self, drops: &mut Drops) -> usize {
        let idx = if self.buckets[BUCKET_HH].queue.is_empty() {
            BUCKET_NON_HH
        } else {
            BUCKET_HH
        };
        if let Some(p) = self.buckets[idx].queue.pop_front() {
            self.qlen -= 1;
            self.backlog -= u64::from(p.len);
            self.stats.count_drop(p, DropReason::HhfDrop, drops);
        }
        idx
    }

    fn total_qlen(&self) -> u32 {
        self.qlen + u32::from(self.parked.is_some())
    }

    /// The `sch->q.qlen` the limit checks read: the parked and the
    /// requeued frames in.
    fn qlen_at_enqueue(&self) -> u32 {
        self.total_qlen().saturating_add(self.requeued.0)
    }
}

impl ParkOnPeek for Hhf {
    fn parked_slot(&mut self) -> &mut Option<Packet> {
        &mut self.parked
    }
    fn sent_stats(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }
    /// `hhf_dequeue` without Sent counting.
    fn dequeue_next(&mut self, now: Instant, _drops: &mut Drops) -> Option<Packet> {
        self.last_jiffies = stamp(now);
        let (quantum, weight) = (self.quantum, self.non_hh_weight);
        let (qlen, backlog) = (&mut self.qlen, &mut self.backlog);
        flow_queues::dequeue(
            &mut self.buckets,
            &mut self.new_buckets,
            &mut self.old_buckets,
            |idx| {
                if idx == BUCKET_HH {
                    quantum
                } else {
                    weight * quantum
                }
            },
            |_, b| {
                let p = b.queue.pop_front()?;
                *qlen -= 1;
                *backlog -= u64::from(p.len);
                Some(p)
            },
        )
    }
}

impl Qdisc for Hhf {
    fn kind(&self) -> &'static str {
        "hhf"
    }

    /// `hhf_enqueue`.
    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        let j = stamp(now);
        self.last_jiffies = j;
        pkt.meta.enqueue_time = now;
        let len = pkt.len;
        let idx = self.classify(self.hash(&pkt), len, j);
        let weight = if idx == BUCKET_HH {
            1
        } else {
            self.non_hh_weight
        };
        let quantum = self.quantum;
        let bucket = &mut self.buckets[idx];
        bucket.queue.push_back(pkt);
        self.backlog += u64::from(len);
        if bucket.list == ListTag::None {
            // Heavy hitters always join old_buckets; a non-heavy burst
            // is served first, as a new flow of fq_codel.
            if idx == BUCKET_HH {
                bucket.list = ListTag::Old;
                self.old_buckets.push_back(idx as u32);
            } else {
                bucket.list = ListTag::New;
                self.new_buckets.push_back(idx as u32);
            }
            bucket.deficit = (weight * quantum) as i32;
        }
        self.qlen += 1;
        if self.qlen_at_enqueue() <= self.limit {
            return Verdict::Queued;
        }
        self.drop_overlimit = self.drop_overlimit.wrapping_add(1);
        let held = self.buckets[idx].queue.len();
        if self.drop_head(drops) != idx {
            return Verdict::Queued;
        }
        // NET_XMIT_CN; the arriving frame itself went when it was alone.
        if held == 1 {
            Verdict::Dropped
        } else {
            Verdict::Congested
        }
    }

    fn set_requeued(&mut self, frames: u32, bytes: u64) {
        self.requeued = (frames, bytes);
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.dequeue_parked_first(now, drops)
    }

    /// `qdisc_peek_dequeued`: the frame is taken out and parked.
    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        self.peek_parking(now, drops)
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

    /// `hhf_reset`: the frames dropped, then `hhf_reset_classifier` (the
    /// table emptied, the arrays invalid, their reset timestamp the last
    /// jiffy seen: a reset has no clock here).
    fn reset(&mut self, drops: &mut Drops) {
        drop_all_held(self, drops);
        self.table.clear();
        self.filter.valid = Default::default();
        self.arrays_reset_timestamp = self.last_jiffies;
    }

    /// `hhf_change`: the settings, then frames over a lowered limit taken
    /// through the dequeue and dropped.
    fn change(
        &mut self,
        options: &QdiscOptions,
        now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        match options {
            QdiscOptions::Hhf(o) => self.apply(o)?,
            // No TCA_OPTIONS: qdisc_change does not call it.
            QdiscOptions::None => return Ok(()),
            _ => return Err(super::options::foreign("hhf")),
        }
        self.drop_while(now, drops, |q| q.qlen_at_enqueue() > q.limit);
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        let mut occupancy = QueueOccupancy::parked(self.parked.as_ref(), now);
        occupancy.extend(
            [BUCKET_NON_HH, BUCKET_HH]
                .into_iter()
                .filter(|&i| !self.buckets[i].queue.is_empty())
                .map(|i| {
                    QueueOccupancy::of_qdisc(
                        QueueId::Band(i as u8),
                        self.buckets[i].queue.iter(),
                        now,
                    )
                }),
        );
        QdiscDump {
            kind: "hhf".into(),
            handle: self.handle,
            parent: self.parent,
            options: QdiscOptions::Hhf(self.options()),
            stats: self.stats(),
            xstats: Some(Xstats::Hhf(self.xstats())),
            classes: Vec::new(),
            children: Vec::new(),
            flows: Vec::new(),
            other_flows: Default::default(),
            occupancy,
        }
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        let out = flow_queues::drain_all(
            &mut self.parked,
            &mut self.buckets,
            &mut self.new_buckets,
            &mut self.old_buckets,
        );
        self.qlen = 0;
        self.backlog = 0;
        out
    }
}
