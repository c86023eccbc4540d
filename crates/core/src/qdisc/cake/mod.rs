//! CAKE, Common Applications Kept Enhanced (Linux net/sched/sch_cake.c):
//! a deficit-mode shaper (`time_next_packet` advanced by each frame's
//! overhead-compensated length, `cake_calc_overhead`, with a failsafe at
//! 1.5 times the rate), up to eight priority tins chosen by DSCP (each with
//! a rate threshold above which it drops to its bandwidth share), and in
//! each tin 1024 flow queues reached by an 8-way set-associative hash with
//! host isolation (the host-deficit quantum division of triple-isolate and
//! the dual modes), sparse/bulk/decaying rotations, and COBALT (`cobalt`)
//! on every queue. Overflow of the memory limit drops from the head of the
//! fattest queue over all tins (the kernel's max-heap, `cake_drop`); the ACK
//! filter (`ack`) thins pure ACKs at enqueue.
//!
//! `tc filter`s attached to the qdisc override the hashes as
//! `cake_classify` does: the class id's minor picks the flow queue, its
//! major the host, and an skbedit priority of `handle:n` the n-th tin. A
//! dump lists every flow on a rotation as a class (`cake_walk`) and as a
//! flow row with its tin and hosts (`CakeFlowInfo`), for the TUI.
//!
//! Frames in a bridge carry no conntrack entry and no firewall mark, so
//! `nat` and `fwmark` are accepted and dumped but change no hash or tin.
//! The random draws of BLUE and of the deficit dithering come from a
//! generator seeded by the instance's context.

mod ack;
pub mod cobalt;
mod xstats;
pub use xstats::{CakeClassXstats, CakeFlowInfo, CakeFlowSet, CakeTinXstats, CakeXstats};

use self::cobalt::{CobaltParams, CobaltVars, REC_INV_SQRT_CACHE};
use super::dump::{flow_queue_hash, list_flows, ClassDump, FlowDump, FlowListing};
use super::dump::{QueueOccupancy, Xstats};
use super::keyed_flow_hash;
use super::park::{drop_all_held, ParkOnPeek};
use super::{own_chain, QdiscOptions};
use super::{tc_h_major, tc_h_minor, FilterHost, Handle, Qdisc, QdiscCtx, QdiscDump};
use super::{QdiscStats, Refusal, Verdict};
use crate::packet::classify::flow_hash;
use crate::packet::filter::FilterChain;
use crate::packet::gso::Segmenter;
use crate::packet::truesize;
use crate::packet::{ecn, DropReason, Drops, FlowKey, Packet, L3};
use crate::time::{Instant, NS_PER_SEC};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `CAKE_QUEUES`: flow queues per tin.
pub const CAKE_QUEUES: usize = 1024;
/// `CAKE_SET_WAYS`: the associativity of the flow and host hashes.
pub const CAKE_SET_WAYS: usize = 8;
/// `CAKE_MAX_TINS`.
pub const CAKE_MAX_TINS: usize = 8;
/// `CAKE_FLOW_MASK`: the flow-mode bits `TCA_CAKE_FLOW_MODE` sets.
pub const FLOW_MASK: u8 = 63;
/// `CAKE_FLOW_NAT_FLAG`.
pub const FLOW_NAT_FLAG: u8 = 64;

/// `CAKE_FLOW_*` (include/uapi/linux/pkt_sched.h): the isolation modes.
pub mod flow_mode {
    /// `CAKE_FLOW_NONE`: flowblind.
    pub const NONE: u8 = 0;
    /// `CAKE_FLOW_SRC_IP`: srchost.
    pub const SRC_IP: u8 = 1;
    /// `CAKE_FLOW_DST_IP`: dsthost.
    pub const DST_IP: u8 = 2;
    /// `CAKE_FLOW_HOSTS`: hosts.
    pub const HOSTS: u8 = 3;
    /// `CAKE_FLOW_FLOWS`: flows.
    pub const FLOWS: u8 = 4;
    /// `CAKE_FLOW_DUAL_SRC`: dual-srchost.
    pub const DUAL_SRC: u8 = 5;
    /// `CAKE_FLOW_DUAL_DST`: dual-dsthost.
    pub const DUAL_DST: u8 = 6;
    /// `CAKE_FLOW_TRIPLE`: triple-isolate.
    pub const TRIPLE: u8 = 7;
}

/// `CAKE_DIFFSERV_*`.
pub mod diffserv {
    /// `CAKE_DIFFSERV_DIFFSERV3`.
    pub const DIFFSERV3: u32 = 0;
    /// `CAKE_DIFFSERV_DIFFSERV4`.
    pub const DIFFSERV4: u32 = 1;
    /// `CAKE_DIFFSERV_DIFFSERV8`.
    pub const DIFFSERV8: u32 = 2;
    /// `CAKE_DIFFSERV_BESTEFFORT`.
    pub const BESTEFFORT: u32 = 3;
    /// `CAKE_DIFFSERV_PRECEDENCE`.
    pub const PRECEDENCE: u32 = 4;
}

/// `CAKE_ACK_*`.
pub mod ack_mode {
    /// `CAKE_ACK_NONE`.
    pub const NONE: u32 = 0;
    /// `CAKE_ACK_FILTER`.
    pub const FILTER: u32 = 1;
    /// `CAKE_ACK_AGGRESSIVE`.
    pub const AGGRESSIVE: u32 = 2;
}

/// `CAKE_ATM_*`.
pub mod atm_mode {
    /// `CAKE_ATM_NONE`.
    pub const NONE: u32 = 0;
    /// `CAKE_ATM_ATM`: 48-byte cells of 53.
    pub const ATM: u32 = 1;
    /// `CAKE_ATM_PTM`: 64b/65b.
    pub const PTM: u32 = 2;
}

const FLAG_OVERHEAD: u16 = 1 << 0;
const FLAG_AUTORATE_INGRESS: u16 = 1 << 1;
const FLAG_INGRESS: u16 = 1 << 2;
const FLAG_WASH: u16 = 1 << 3;
const FLAG_SPLIT_GSO: u16 = 1 << 4;

/// The `TCA_CAKE_*` attributes, as tc sends them and `cake_dump` sends
/// them back (every one but `raw`, which it sends only while no overhead
/// is set). Absent: keep the current value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CakeOptions {
    /// `TCA_CAKE_BASE_RATE64`, bytes/s (0: unlimited).
    pub base_rate: Option<u64>,
    /// `TCA_CAKE_DIFFSERV_MODE` (`diffserv::*`).
    pub diffserv_mode: Option<u32>,
    /// `TCA_CAKE_ATM` (`atm_mode::*`).
    pub atm: Option<u32>,
    /// `TCA_CAKE_FLOW_MODE` (`flow_mode::*`).
    pub flow_mode: Option<u32>,
    /// `TCA_CAKE_OVERHEAD`, bytes (may be negative).
    pub overhead: Option<i32>,
    /// `TCA_CAKE_RTT`, µs.
    pub rtt: Option<u32>,
    /// `TCA_CAKE_TARGET`, µs.
    pub target: Option<u32>,
    /// `TCA_CAKE_AUTORATE`.
    pub autorate: Option<u32>,
    /// `TCA_CAKE_MEMORY`, bytes (0: from the rate).
    pub memory: Option<u32>,
    /// `TCA_CAKE_NAT`.
    pub nat: Option<u32>,
    /// `TCA_CAKE_RAW` (its presence is what counts).
    pub raw: Option<u32>,
    /// `TCA_CAKE_WASH`.
    pub wash: Option<u32>,
    /// `TCA_CAKE_MPU`, bytes.
    pub mpu: Option<u32>,
    /// `TCA_CAKE_INGRESS`.
    pub ingress: Option<u32>,
    /// `TCA_CAKE_ACK_FILTER` (`ack_mode::*`).
    pub ack_filter: Option<u32>,
    /// `TCA_CAKE_SPLIT_GSO`.
    pub split_gso: Option<u32>,
    /// `TCA_CAKE_FWMARK`: the mask.
    pub fwmark: Option<u32>,
}

/// `precedence[]`: the tin of each DSCP (the top three bits).
const PRECEDENCE: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        t[i] = (i >> 3) as u8;
        i += 1;
    }
    t
};

/// `diffserv8[]`.
const DIFFSERV8: [u8; 64] = [
    2, 0, 1, 2, 4, 2, 2, 2, 1, 2, 1, 2, 1, 2, 1, 2, 5, 2, 4, 2, 4, 2, 4, 2, 3, 2, 3, 2, 3, 2, 3, 2,
    6, 2, 3, 2, 3, 2, 3, 2, 6, 2, 2, 2, 6, 2, 6, 2, 7, 2, 2, 2, 2, 2, 2, 2, 7, 2, 2, 2, 2, 2, 2, 2,
];

/// `diffserv4[]`.
const DIFFSERV4: [u8; 64] = [
    0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0,
    3, 0, 2, 0, 2, 0, 2, 0, 3, 0, 0, 0, 3, 0, 3, 0, 3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,
];

/// `diffserv3[]`.
const DIFFSERV3: [u8; 64] = [
    0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
];

/// `besteffort[]`.
const BESTEFFORT: [u8; 64] = [0; 64];

/// `normal_order[]`: tins dumped in their own order.
const NORMAL_ORDER: [u8; 8] = [0, 1, 2, 3, 4, 5, 6, 7];
/// `bulk_order[]`: diffserv3/4 dump the bulk tin (1) first.
const BULK_ORDER: [u8; 8] = [1, 0, 2, 3, 4, 5, 6, 7];

/// A flow's place in its tin's rotations (`CAKE_SET_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum FlowSet {
    #[default]
    None,
    Sparse,
    /// Counted as sparse, rotating with the bulk flows.
    SparseWait,
    Bulk,
    Decaying,
}

/// Which of its tin's lists a flow is on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum List {
    #[default]
    None,
    New,
    Old,
    Decaying,
}

impl List {
    /// The list's place in `Tin::chains`.
    fn index(self) -> Option<usize> {
        match self {
            List::None => None,
            List::New => Some(0),
            List::Old => Some(1),
            List::Decaying => Some(2),
        }
    }
}

/// The end of a flow chain (`Chain`, `Flow::prev`/`next`).
const NIL: u16 = u16::MAX;

/// One of a tin's flow lists (`struct list_head`): its first and last
/// flow, linked through the flows' `prev` and `next`, so that a flow
/// leaves the middle of a list in constant time as with `list_del`.
#[derive(Clone, Copy)]
struct Chain {
    head: u16,
    tail: u16,
}

impl Chain {
    const EMPTY: Chain = Chain {
        head: NIL,
        tail: NIL,
    };

    fn front(&self) -> Option<usize> {
        (self.head != NIL).then_some(usize::from(self.head))
    }
}

/// `struct cake_flow`.
#[derive(Default)]
struct Flow {
    queue: VecDeque<Packet>,
    /// Each queued frame's overhead-compensated length, beside `queue`
    /// (the kernel's `cobalt_skb_cb.adjusted_len`).
    adjusted: VecDeque<u32>,
    deficit: i32,
    dropped: u32,
    /// Frames sent CE-marked, and bytes sent (bloatbox's, for the flow
    /// table: the kernel counts marks per tin only).
    marks: u32,
    sent_bytes: u64,
    cvars: CobaltVars,
    srchost: u16,
    dsthost: u16,
    set: FlowSet,
    list: List,
    /// The flows before and after this one on `list` (`NIL`: none).
    prev: u16,
    next: u16,
}

/// `struct cake_host`.
#[derive(Clone, Copy, Default)]
struct Host {
    srchost_tag: u32,
    dsthost_tag: u32,
    srchost_bulk_flow_count: u16,
    dsthost_bulk_flow_count: u16,
}

/// `struct cake_tin_data`.
struct Tin {
    flows: Vec<Flow>,
    backlogs: Vec<u32>,
    tags: Vec<u32>,
    overflow_idx: Vec<u16>,
    hosts: Vec<Host>,
    flow_quantum: u16,
    cparams: CobaltParams,
    drop_overlimit: u32,
    bulk_flow_count: u16,
    sparse_flow_count: u16,
    decaying_flow_count: u16,
    unresponsive_flow_count: u16,
    max_skblen: u32,
    /// new_flows, old_flows and decaying_flows, by `List::index`.
    chains: [Chain; 3],
    time_next_packet: i64,
    tin_rate_ns: u64,
    tin_rate_bps: u64,
    tin_rate_shft: u16,
    tin_quantum: u16,
    tin_deficit: i32,
    tin_backlog: u32,
    tin_dropped: u32,
    tin_ecn_mark: u32,
    packets: u32,
    bytes: u64,
    ack_drops: u32,
    avge_delay: u64,
    peak_delay: u64,
    base_delay: u64,
    way_directs: u32,
    way_hits: u32,
    way_misses: u32,
    way_collisions: u32,
}

impl Tin {
    fn new() -> Tin {
        Tin {
            flows: (0..CAKE_QUEUES).map(|_| Flow::default()).collect(),
            backlogs: vec![0; CAKE_QUEUES],
            tags: vec![0; CAKE_QUEUES],
            overflow_idx: vec![0; CAKE_QUEUES],
            hosts: vec![Host::default(); CAKE_QUEUES],
            flow_quantum: 0,
            cparams: CobaltParams::default(),
            drop_overlimit: 0,
            bulk_flow_count: 0,
            sparse_flow_count: 0,
            decaying_flow_count: 0,
            unresponsive_flow_count: 0,
            max_skblen: 0,
            chains: [Chain::EMPTY; 3],
            time_next_packet: 0,
            tin_rate_ns: 0,
            tin_rate_bps: 0,
            tin_rate_shft: 0,
            tin_quantum: 0,
            tin_deficit: 0,
            tin_backlog: 0,
            tin_dropped: 0,
            tin_ecn_mark: 0,
            packets: 0,
            bytes: 0,
            ack_drops: 0,
            avge_delay: 0,
            peak_delay: 0,
            base_delay: 0,
            way_directs: 0,
            way_hits: 0,
            way_misses: 0,
            way_collisions: 0,
        }
    }

    /// Sparse plus bulk flows: whether the tin has anything to send.
    fn active(&self) -> bool {
        u32::from(self.sparse_flow_count) + u32::from(self.bulk_flow_count) != 0
    }

    /// A flow of hosts `s` and `d` turns bulk (`up`) or stops being bulk:
    /// the tin's count, and each host's in the dual modes `dual` (src, dst)
    /// (net/sched/sch_cake.c `cake_inc_srchost_bulk_flow_count`,
    /// `cake_dec_srchost_bulk_flow_count` and the dsthost pair).
    fn count_bulk(&mut self, s: usize, d: usize, dual: (bool, bool), up: bool) {
        let step = |n: &mut u16| {
            *n = if up {
                n.wrapping_add(1)
            } else {
                n.wrapping_sub(1)
            }
        };
        step(&mut self.bulk_flow_count);
        if dual.0 {
            step(&mut self.hosts[s].srchost_bulk_flow_count);
        }
        if dual.1 {
            step(&mut self.hosts[d].dsthost_bulk_flow_count);
        }
    }

    /// The bulk load of hosts `s` and `d` in the dual modes `dual` (src,
    /// dst), at least 1: what divides a flow's quantum
    /// (`cake_get_flow_quantum`).
    fn host_load(&self, s: usize, d: usize, dual: (bool, bool)) -> u16 {
        let mut host_load = 1u16;
        if dual.0 {
            host_load = host_load.max(self.hosts[s].srchost_bulk_flow_count);
        }
        if dual.1 {
            host_load = host_load.max(self.hosts[d].dsthost_bulk_flow_count);
        }
        host_load
    }

    /// The first flow of list `l`.
    fn front(&self, l: List) -> Option<usize> {
        l.index().and_then(|i| self.chains[i].front())
    }

    /// `list_move_tail` (`to` = `List::None`: `list_del_init`), in
    /// constant time.
    fn move_flow(&mut self, idx: usize, to: List) {
        let (prev, next) = (self.flows[idx].prev, self.flows[idx].next);
        if let Some(c) = self.flows[idx].list.index() {
            match prev {
                NIL => self.chains[c].head = next,
                p => self.flows[usize::from(p)].next = next,
            }
            match next {
                NIL => self.chains[c].tail = prev,
                n => self.flows[usize::from(n)].prev = prev,
            }
        }
        let (mut prev, next) = (NIL, NIL);
        if let Some(c) = to.index() {
            prev = self.chains[c].tail;
            match prev {
                NIL => self.chains[c].head = idx as u16,
                p => self.flows[usize::from(p)].next = idx as u16,
            }
            self.chains[c].tail = idx as u16;
        }
        let flow = &mut self.flows[idx];
        (flow.prev, flow.next, flow.list) = (prev, next, to);
    }

    /// `cake_set_rate`: the tin's rate in ns per byte (<< `tin_rate_shft`),
    /// its flow quantum, and COBALT's parameters from it.
    fn set_rate(&mut self, rate: u64, mtu: u32, target_ns: u64, rtt_est_ns: u64) {
        const MIN_RATE: u64 = 64;
        let mut rate_shft: u16 = 0;
        let mut rate_ns: u64 = 0;
        self.flow_quantum = 1514;
        if rate != 0 {
            self.flow_quantum = (rate >> 12).clamp(300, 1514) as u16;
            rate_shft = 34;
            rate_ns = (NS_PER_SEC << rate_shft) / rate.max(MIN_RATE);
            while rate_ns >> 34 != 0 {
                rate_ns >>= 1;
                rate_shft -= 1;
            }
        }
        self.tin_rate_bps = rate;
        self.tin_rate_ns = rate_ns;
        self.tin_rate_shft = rate_shft;
        let byte_target_ns = (u64::from(mtu).wrapping_mul(rate_ns)) >> rate_shft;
        let target = (byte_target_ns.wrapping_mul(3) / 2).max(target_ns);
        self.cparams = CobaltParams {
            target,
            interval: (rtt_est_ns.wrapping_add(target).wrapping_sub(target_ns))
                .max(target.wrapping_mul(2)),
            mtu_time: byte_target_ns,
            p_inc: 1 << 24,
            p_dec: 1 << 20,
        };
    }
}

/// `cake_ewma` (in the kernel's wrapping u64).
fn ewma(avg: u64, sample: u64, shift: u32) -> u64 {
    (avg - (avg >> shift)).wrapping_add(sample >> shift)
}

/// The `cake` qdisc (net/sched/sch_cake.c).
pub struct Cake {
    handle: Handle,
    parent: Handle,
    psched_mtu: u32,
    /// `sch->limit`: 10240 packets, a bound on the memory limit only.
    limit: u32,
    tins: Vec<Tin>,
    /// `overflow_heap`: (tin, flow) pairs, a max-heap by backlog while
    /// `overflow_timeout` runs.
    overflow_heap: Vec<(u8, u16)>,
    overflow_timeout: u16,
    tin_cnt: u16,
    tin_mode: u8,
    flow_mode: u8,
    ack_filter: u8,
    atm_mode: u8,
    fwmark_mask: u32,
    rate_shft: u16,
    time_next_packet: i64,
    failsafe_next_packet: i64,
    rate_ns: u64,
    rate_bps: u64,
    rate_flags: u16,
    rate_overhead: i16,
    rate_mpu: u16,
    /// The rtt, µs.
    interval: u64,
    /// The target, µs.
    target: u64,
    buffer_used: u32,
    buffer_max_used: u32,
    buffer_limit: u32,
    buffer_config_limit: u32,
    cur_tin: u16,
    tin_index: &'static [u8; 64],
    tin_order: &'static [u8; 8],
    last_packet_time: i64,
    avg_window_begin: i64,
    avg_packet_interval: u64,
    avg_window_bytes: u64,
    avg_peak_bandwidth: u64,
    avg_netoff: u32,
    max_netlen: u16,
    max_adjlen: u16,
    min_netlen: u16,
    min_adjlen: u16,
    /// Frames queued (`sch->q.qlen`, the parked one not included).
    qlen: u32,
    /// Bytes queued (`sch->qstats.backlog`, the parked one not included).
    backlog: u64,
    hash_key: u32,
    rng: SmallRng,
    inv_sqrt: [u32; REC_INV_SQRT_CACHE],
    /// `quantum_div[]`: 65535 / n, ~0 at 0.
    quantum_div: Vec<u16>,
    parked: Option<Packet>,
    stats: QdiscStats,
    /// `tc filter`s that override the flow and host hashes (`classify`).
    filters: FilterChain,
}

impl Cake {
    /// A cake with the kernel's defaults (`cake_init`): unlimited,
    /// diffserv3, triple-isolate, rtt 100 ms, target 5 ms, split-gso.
    pub fn new(ctx: QdiscCtx) -> Cake {
        let seed = ctx.seed ^ 0x6361_6b65; // "cake"
        let mut q = Cake {
            handle: ctx.handle,
            parent: ctx.parent,
            psched_mtu: ctx.psched_mtu,
            limit: 10240,
            tins: (0..CAKE_MAX_TINS).map(|_| Tin::new()).collect(),
            overflow_heap: vec![(0, 0); CAKE_QUEUES * CAKE_MAX_TINS],
            overflow_timeout: 0,
            tin_cnt: 0,
            tin_mode: diffserv::DIFFSERV3 as u8,
            flow_mode: flow_mode::TRIPLE,
            ack_filter: 0,
            atm_mode: 0,
            fwmark_mask: 0,
            rate_shft: 0,
            time_next_packet: 0,
            failsafe_next_packet: 0,
            rate_ns: 0,
            rate_bps: 0,
            rate_flags: FLAG_SPLIT_GSO,
            rate_overhead: 0,
            rate_mpu: 0,
            interval: 100_000,
            target: 5_000,
            buffer_used: 0,
            buffer_max_used: 0,
            buffer_limit: 0,
            buffer_config_limit: 0,
            cur_tin: 0,
            tin_index: &DIFFSERV3,
            tin_order: &BULK_ORDER,
            last_packet_time: 0,
            avg_window_begin: 0,
            avg_packet_interval: 0,
            avg_window_bytes: 0,
            avg_peak_bandwidth: 0,
            avg_netoff: 0,
            max_netlen: 0,
            max_adjlen: 0,
            min_netlen: u16::MAX,
            min_adjlen: u16::MAX,
            qlen: 0,
            backlog: 0,
            hash_key: (seed ^ (seed >> 32)) as u32,
            rng: SmallRng::seed_from_u64(seed),
            inv_sqrt: cobalt::inv_sqrt_cache(),
            quantum_div: (0..=CAKE_QUEUES as u32)
                .map(|i| 65535u32.checked_div(i).map_or(u16::MAX, |q| q as u16))
                .collect(),
            parked: None,
            stats: QdiscStats::default(),
            filters: FilterChain::new(),
        };
        for (i, tin) in q.tins.iter_mut().enumerate() {
            for j in 0..CAKE_QUEUES {
                let k = j * CAKE_MAX_TINS + i;
                q.overflow_heap[k] = (i as u8, j as u16);
                tin.overflow_idx[j] = k as u16;
            }
        }
        q.reconfigure(&mut Drops::new());
        q.avg_peak_bandwidth = q.rate_bps;
        q
    }

    /// A cake qdisc with `options` (`QdiscOptions::None`: the defaults).
    pub fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Cake, Refusal> {
        let mut q = Cake::new(ctx);
        match options {
            QdiscOptions::None => {}
            QdiscOptions::Cake(o) => {
                // cake_init: cake_change before the tins exist, then
                // cake_reconfigure once they do.
                q.apply(o);
                q.reconfigure(&mut Drops::new());
                q.avg_peak_bandwidth = q.rate_bps;
                q.min_netlen = u16::MAX;
                q.min_adjlen = u16::MAX;
            }
            _ => return Err(super::options::foreign("cake")),
        }
        Ok(q)
    }

    fn set_flag(&mut self, flag: u16, on: Option<u32>) {
        match on {
            Some(0) => self.rate_flags &= !flag,
            Some(_) => self.rate_flags |= flag,
            None => {}
        }
    }

    /// `cake_change` without the final `cake_reconfigure`: each attribute
    /// in the kernel's order, truncated to the width the kernel keeps it
    /// in. Without conntrack in a bridge, `nat` is kept but rewrites no key.
    fn apply(&mut self, o: &CakeOptions) {
        if let Some(nat) = o.nat {
            self.flow_mode &= !FLOW_NAT_FLAG;
            if nat != 0 {
                self.flow_mode |= FLOW_NAT_FLAG;
            }
        }
        if let Some(v) = o.base_rate {
            self.rate_bps = v;
        }
        if let Some(v) = o.diffserv_mode {
            self.tin_mode = v as u8;
        }
        self.set_flag(FLAG_WASH, o.wash);
        if let Some(v) = o.flow_mode {
            self.flow_mode = (self.flow_mode & FLOW_NAT_FLAG) | (v as u8 & FLOW_MASK);
        }
        if let Some(v) = o.atm {
            self.atm_mode = v as u8;
        }
        if let Some(v) = o.overhead {
            self.rate_overhead = v as i16;
            self.rate_flags |= FLAG_OVERHEAD;
            self.reset_lengths();
        }
        if o.raw.is_some() {
            self.rate_flags &= !FLAG_OVERHEAD;
            self.reset_lengths();
        }
        if let Some(v) = o.mpu {
            self.rate_mpu = v as u16;
        }
        if let Some(v) = o.rtt {
            self.interval = u64::from(v.max(1));
        }
        if let Some(v) = o.target {
            self.target = u64::from(v.max(1));
        }
        self.set_flag(FLAG_AUTORATE_INGRESS, o.autorate);
        self.set_flag(FLAG_INGRESS, o.ingress);
        if let Some(v) = o.ack_filter {
            self.ack_filter = v as u8;
        }
        if let Some(v) = o.memory {
            self.buffer_config_limit = v;
        }
        self.set_flag(FLAG_SPLIT_GSO, o.split_gso);
        if let Some(v) = o.fwmark {
            self.fwmark_mask = v;
        }
    }

    fn reset_lengths(&mut self) {
        self.max_netlen = 0;
        self.max_adjlen = 0;
        self.min_netlen = u16::MAX;
        self.min_adjlen = u16::MAX;
    }

    /// `cake_config_*` and `cake_reconfigure`: the tins' rates, quanta and
    /// COBALT parameters, the global rate and the memory limit; frames in
    /// tins no longer used are dropped (`cake_clear_tin`).
    fn reconfigure(&mut self, drops: &mut Drops) {
        let mtu = self.psched_mtu;
        let (target_ns, rtt_ns) = (
            self.target.saturating_mul(1000),
            self.interval.saturating_mul(1000),
        );
        let rate = self.rate_bps;
        match u32::from(self.tin_mode) {
            diffserv::BESTEFFORT => {
                self.tin_cnt = 1;
                self.tin_index = &BESTEFFORT;
                self.tin_order = &NORMAL_ORDER;
                self.tins[0].set_rate(rate, mtu, target_ns, rtt_ns);
                self.tins[0].tin_quantum = 65535;
            }
            m @ (diffserv::PRECEDENCE | diffserv::DIFFSERV8) => {
                self.tin_cnt = 8;
                self.tin_index = if m == diffserv::PRECEDENCE {
                    &PRECEDENCE
                } else {
                    &DIFFSERV8
                };
                self.tin_order = &NORMAL_ORDER;
                let (mut rate, mut quantum) = (rate, 256u32);
                for tin in &mut self.tins {
                    tin.set_rate(rate, mtu, target_ns, rtt_ns);
                    tin.tin_quantum = (quantum as u16).max(1);
                    rate = rate.wrapping_mul(7) >> 3;
                    quantum = (quantum * 7) >> 3;
                }
            }
            diffserv::DIFFSERV4 => {
                self.tin_cnt = 4;
                self.tin_index = &DIFFSERV4;
                self.tin_order = &BULK_ORDER;
                for (i, shift) in [0u32, 4, 1, 2].into_iter().enumerate() {
                    self.tins[i].set_rate(rate >> shift, mtu, target_ns, rtt_ns);
                    self.tins[i].tin_quantum = 1024 >> shift;
                }
            }
            _ => {
                self.tin_cnt = 3;
                self.tin_index = &DIFFSERV3;
                self.tin_order = &BULK_ORDER;
                for (i, shift) in [0u32, 4, 2].into_iter().enumerate() {
                    self.tins[i].set_rate(rate >> shift, mtu, target_ns, rtt_ns);
                    self.tins[i].tin_quantum = 1024 >> shift;
                }
            }
        }
        for c in usize::from(self.tin_cnt)..CAKE_MAX_TINS {
            self.clear_tin(c, drops);
            self.tins[c].cparams.mtu_time = self.tins[0].cparams.mtu_time;
        }
        self.rate_ns = self.tins[0].tin_rate_ns;
        self.rate_shft = self.tins[0].tin_rate_shft;
        self.buffer_limit = if self.buffer_config_limit != 0 {
            self.buffer_config_limit
        } else if self.rate_bps != 0 {
            let t = self.rate_bps.wrapping_mul(self.interval) / (1_000_000 / 4);
            (t as u32).max(4 << 20)
        } else {
            u32::MAX
        };
        self.buffer_limit = self.buffer_limit.min(
            self.limit
                .wrapping_mul(self.psched_mtu)
                .max(self.buffer_config_limit),
        );
    }

    /// `cake_clear_tin`: drops every frame of tin `tin` (reason
    /// `QdiscReset`; the kernel counts none of them as drops).
    fn clear_tin(&mut self, tin: usize, drops: &mut Drops) {
        self.cur_tin = tin as u16;
        for flow in 0..CAKE_QUEUES {
            while let Some((p, _)) = self.dequeue_one(tin, flow) {
                drops.push(p, DropReason::QdiscReset);
            }
        }
    }

    /// `cake_dequeue_one`: the head frame of a flow and its adjusted
    /// length, taken out of every count.
    fn dequeue_one(&mut self, tin: usize, flow: usize) -> Option<(Packet, u32)> {
        let b = &mut self.tins[tin];
        let p = b.flows[flow].queue.pop_front()?;
        let adjusted = b.flows[flow].adjusted.pop_front().unwrap_or(p.len);
        b.backlogs[flow] = b.backlogs[flow].wrapping_sub(p.len);
        b.tin_backlog = b.tin_backlog.wrapping_sub(p.len);
        self.backlog = self.backlog.saturating_sub(u64::from(p.len));
        self.buffer_used = self.buffer_used.wrapping_sub(truesize(p.len));
        self.qlen = self.qlen.saturating_sub(1);
        if self.overflow_timeout != 0 {
            let at = self.tins[tin].overflow_idx[flow];
            self.heapify(at);
        }
        Some((p, adjusted))
    }

    fn dual_src(&self) -> bool {
        self.flow_mode & flow_mode::DUAL_SRC == flow_mode::DUAL_SRC
    }

    fn dual_dst(&self) -> bool {
        self.flow_mode & flow_mode::DUAL_DST == flow_mode::DUAL_DST
    }

    /// `cake_calc_overhead`: the length the shaper charges for `len`
    /// bytes at network offset `off`, with the length statistics.
    fn calc_overhead(&mut self, len: u32, off: u32) -> u32 {
        let mut len = len;
        if self.rate_flags & FLAG_OVERHEAD != 0 {
            len = len.wrapping_sub(off);
        }
        if u32::from(self.max_netlen) < len {
            self.max_netlen = len as u16;
        }
        if u32::from(self.min_netlen) > len {
            self.min_netlen = len as u16;
        }
        len = len.wrapping_add(self.rate_overhead as i32 as u32);
        if len < u32::from(self.rate_mpu) {
            len = u32::from(self.rate_mpu);
        }
        match u32::from(self.atm_mode) {
            atm_mode::ATM => len = (len.wrapping_add(47) / 48).wrapping_mul(53),
            atm_mode::PTM => len = len.wrapping_add(len.wrapping_add(63) / 64),
            _ => {}
        }
        if u32::from(self.max_adjlen) < len {
            self.max_adjlen = len as u16;
        }
        if u32::from(self.min_adjlen) > len {
            self.min_adjlen = len as u16;
        }
        len
    }

    /// `cake_overhead`: a GSO super-frame is charged segment by segment.
    fn overhead(&mut self, pkt: &Packet) -> u32 {
        let off = match pkt.meta.l3 {
            L3::Ipv4 { offset } | L3::Ipv6 { offset } => u32::from(offset),
            L3::Other => 14,
        };
        self.avg_netoff = ewma(u64::from(self.avg_netoff), u64::from(off) << 16, 8) as u32;
        let hdr = &pkt.meta.offload;
        if !hdr.is_gso() || hdr.gso_size == 0 {
            return self.calc_overhead(pkt.len, off);
        }
        let Ok(seg) = Segmenter::new(&pkt.data, hdr) else {
            return self.calc_overhead(pkt.len, off);
        };
        let segs = seg.segments().max(1);
        let gso_size = u32::from(hdr.gso_size);
        let len = gso_size + seg.header_len() as u32;
        let last_len = pkt.len.wrapping_sub(gso_size.wrapping_mul(segs - 1));
        let full = self.calc_overhead(len, off);
        full.wrapping_mul(segs - 1)
            .wrapping_add(self.calc_overhead(last_len, off))
    }

    /// `cake_handle_diffserv`: the DSCP (ARP as CS7), washing it when
    /// asked.
    fn handle_diffserv(pkt: &mut Packet, wash: bool) -> u8 {
        match pkt.meta.l3 {
            L3::Ipv4 { .. } | L3::Ipv6 { .. } => {
                let dscp = pkt.meta.dsfield >> 2;
                if wash && dscp != 0 {
                    ecn::wash_dscp(pkt);
                }
                dscp
            }
            L3::Other => {
                let ethertype = |at: usize| pkt.data.get(at..at + 2).map(|b| [b[0], b[1]]);
                let mut proto = ethertype(12);
                if proto == Some([0x81, 0x00]) {
                    proto = ethertype(16);
                }
                if proto == Some([0x08, 0x06]) {
                    0x38
                } else {
                    0
                }
            }
        }
    }

    /// `cake_select_tin`. Frames here carry no firewall mark, so the
    /// `fwmark` branch never picks.
    fn select_tin(&self, pkt: &mut Packet) -> usize {
        let wash = self.rate_flags & FLAG_WASH != 0;
        let washed = wash.then(|| Cake::handle_diffserv(pkt, true));
        let prio = pkt.meta.priority;
        let minor = u32::from(tc_h_minor(prio));
        if u32::from(self.tin_mode) == diffserv::BESTEFFORT {
            0
        } else if tc_h_major(prio) == tc_h_major(self.handle)
            && minor > 0
            && minor <= u32::from(self.tin_cnt)
        {
            usize::from(self.tin_order[minor as usize - 1])
        } else {
            let dscp = washed.unwrap_or_else(|| Cake::handle_diffserv(pkt, false));
            let tin = usize::from(self.tin_index[usize::from(dscp & 63)]);
            if tin >= usize::from(self.tin_cnt) {
                0
            } else {
                tin
            }
        }
    }

    /// `cake_classify`: the tin and flow queue of `pkt`. With filters
    /// attached, the first match's class id overrides the flow hash with
    /// its minor when that is at most `CAKE_QUEUES`, and both host hashes
    /// with its major when that is at most `CAKE_QUEUES` (whatever the
    /// qdisc's own handle: `1:5` is host 1, flow 5); a larger minor or
    /// major overrides nothing and the hash decides, as for a frame no
    /// filter matches. An skbedit priority is set before the tin is chosen
    /// (`cake_select_tin` reads `skb->priority`). The kernel refuses a
    /// frame here only for a shot or stolen verdict (`TC_ACT_SHOT`,
    /// `TC_ACT_STOLEN`), which bloatbox's filters do not give: every frame
    /// is placed.
    fn classify(&mut self, pkt: &mut Packet) -> (usize, usize) {
        let (mut flow, mut host) = (0u16, 0u16);
        if let Some((classid, prio)) = self.filters.classify(&pkt.meta) {
            if let Some(p) = prio {
                pkt.meta.priority = p;
            }
            if usize::from(tc_h_minor(classid)) <= CAKE_QUEUES {
                flow = tc_h_minor(classid);
            }
            if usize::from(tc_h_major(classid)) <= CAKE_QUEUES {
                host = tc_h_major(classid);
            }
        }
        let t = self.select_tin(pkt);
        (t, self.hash(t, pkt, flow, host))
    }

    /// `cake_hash`: the flow queue of `pkt` in tin `t`, by the 8-way
    /// set-associative lookup, allocating host slots for the dual and
    /// triple modes. A non-zero `flow_override` (a filter's minor) stands
    /// for the flow hash and a non-zero `host_override` (its major) for
    /// both host hashes, each less one.
    fn hash(&mut self, t: usize, pkt: &Packet, flow_override: u16, host_override: u16) -> usize {
        let mode = self.flow_mode;
        if mode & FLOW_MASK == flow_mode::NONE {
            return 0;
        }
        let hash_flows = flow_override == 0 && mode & flow_mode::FLOWS != 0;
        let hash_hosts = host_override == 0 && mode & flow_mode::HOSTS != 0;
        let (mut flow_hash_v, mut srchost_hash, mut dsthost_hash) = (0u32, 0u32, 0u32);
        if hash_flows || hash_hosts {
            if hash_hosts && pkt.meta.l3 != L3::Other {
                let key = u64::from(self.hash_key);
                let f = &pkt.meta.flow;
                dsthost_hash = flow_hash(
                    &FlowKey {
                        dst: f.dst,
                        ..FlowKey::default()
                    },
                    key,
                );
                srchost_hash = flow_hash(
                    &FlowKey {
                        src: f.src,
                        ..FlowKey::default()
                    },
                    key,
                );
            }
            if hash_flows {
                flow_hash_v = keyed_flow_hash(pkt.meta.hash, self.hash_key);
            }
        }
        if flow_override != 0 {
            flow_hash_v = u32::from(flow_override) - 1;
        }
        if host_override != 0 {
            srchost_hash = u32::from(host_override) - 1;
            dsthost_hash = srchost_hash;
        }
        if mode & flow_mode::FLOWS == 0 {
            if mode & flow_mode::SRC_IP != 0 {
                flow_hash_v ^= srchost_hash;
            }
            if mode & flow_mode::DST_IP != 0 {
                flow_hash_v ^= dsthost_hash;
            }
        }
        let (dsrc, ddst) = (self.dual_src(), self.dual_dst());
        let q = &mut self.tins[t];
        let mut reduced = flow_hash_v as usize % CAKE_QUEUES;
        if q.tags[reduced] == flow_hash_v && q.flows[reduced].set != FlowSet::None {
            q.way_directs = q.way_directs.wrapping_add(1);
            return reduced;
        }
        let inner = reduced % CAKE_SET_WAYS;
        let outer = reduced - inner;
        let (mut allocate_src, mut allocate_dst) = (false, false);
        let mut k = inner;
        let mut found = false;
        for i in 0..CAKE_SET_WAYS {
            if q.tags[outer + k] == flow_hash_v {
                if i != 0 {
                    q.way_hits = q.way_hits.wrapping_add(1);
                }
                if q.flows[outer + k].set == FlowSet::None {
                    allocate_src = dsrc;
                    allocate_dst = ddst;
                }
                found = true;
                break;
            }
            k = (k + 1) % CAKE_SET_WAYS;
        }
        if !found {
            for _ in 0..CAKE_SET_WAYS {
                if q.flows[outer + k].set == FlowSet::None {
                    q.way_misses = q.way_misses.wrapping_add(1);
                    found = true;
                    break;
                }
                k = (k + 1) % CAKE_SET_WAYS;
            }
            if !found {
                q.way_collisions = q.way_collisions.wrapping_add(1);
                if q.flows[outer + k].set == FlowSet::Bulk {
                    let (s, d) = (
                        usize::from(q.flows[reduced].srchost),
                        usize::from(q.flows[reduced].dsthost),
                    );
                    q.hosts[s].srchost_bulk_flow_count =
                        q.hosts[s].srchost_bulk_flow_count.wrapping_sub(1);
                    q.hosts[d].dsthost_bulk_flow_count =
                        q.hosts[d].dsthost_bulk_flow_count.wrapping_sub(1);
                }
            }
            allocate_src = dsrc;
            allocate_dst = ddst;
        }
        reduced = outer + k;
        q.tags[reduced] = flow_hash_v;
        let bulk = q.flows[reduced].set == FlowSet::Bulk;
        if allocate_src {
            let at = host_slot(
                &mut q.hosts,
                srchost_hash,
                |h| &mut h.srchost_tag,
                |h| h.srchost_bulk_flow_count,
            );
            if bulk {
                q.hosts[at].srchost_bulk_flow_count =
                    q.hosts[at].srchost_bulk_flow_count.wrapping_add(1);
            }
            q.flows[reduced].srchost = at as u16;
        }
        if allocate_dst {
            let at = host_slot(
                &mut q.hosts,
                dsthost_hash,
                |h| &mut h.dsthost_tag,
                |h| h.dsthost_bulk_flow_count,
            );
            if bulk {
                q.hosts[at].dsthost_bulk_flow_count =
                    q.hosts[at].dsthost_bulk_flow_count.wrapping_add(1);
            }
            q.flows[reduced].dsthost = at as u16;
        }
        reduced
    }

    /// `cake_advance_shaper`: charges a frame's adjusted length to its tin
    /// and to the global shaper (the failsafe only for frames sent).
    fn advance_shaper(&mut self, t: usize, len: u32, now: i64, drop: bool) {
        if self.rate_ns == 0 {
            return;
        }
        let b = &mut self.tins[t];
        let tin_dur = (u64::from(len).wrapping_mul(b.tin_rate_ns) >> b.tin_rate_shft) as i64;
        let global_dur = (u64::from(len).wrapping_mul(self.rate_ns) >> self.rate_shft) as i64;
        let failsafe_dur = global_dur + (global_dur >> 1);
        if b.time_next_packet < now {
            b.time_next_packet = b.time_next_packet.wrapping_add(tin_dur);
        } else if b.time_next_packet < now.wrapping_add(tin_dur) {
            b.time_next_packet = now.wrapping_add(tin_dur);
        }
        self.time_next_packet = self.time_next_packet.wrapping_add(global_dur);
        if !drop {
            self.failsafe_next_packet = self.failsafe_next_packet.wrapping_add(failsafe_dur);
        }
    }

    fn heap_backlog(&self, i: usize) -> u32 {
        let (t, b) = self.overflow_heap[i];
        self.tins[usize::from(t)].backlogs[usize::from(b)]
    }

    fn heap_swap(&mut self, i: usize, j: usize) {
        self.overflow_heap.swap(i, j);
        let (ti, bi) = self.overflow_heap[i];
        let (tj, bj) = self.overflow_heap[j];
        self.tins[usize::from(ti)].overflow_idx[usize::from(bi)] = i as u16;
        self.tins[usize::from(tj)].overflow_idx[usize::from(bj)] = j as u16;
    }

    /// `cake_heapify`, as the kernel writes it: the value sifted down is
    /// compared as the larger child's after each swap.
    fn heapify(&mut self, i: u16) {
        let a = CAKE_QUEUES * CAKE_MAX_TINS;
        let mut i = usize::from(i);
        let mut mb = self.heap_backlog(i);
        let mut m = i;
        while m < a {
            let l = m + m + 1;
            let r = l + 1;
            if l < a {
                let lb = self.heap_backlog(l);
                if lb > mb {
                    m = l;
                    mb = lb;
                }
            }
            if r < a {
                let rb = self.heap_backlog(r);
                if rb > mb {
                    m = r;
                    mb = rb;
                }
            }
            if m != i {
                self.heap_swap(i, m);
                i = m;
            } else {
                break;
            }
        }
    }

    /// `cake_heapify_up`.
    fn heapify_up(&mut self, i: u16) {
        let mut i = usize::from(i);
        while i > 0 && i < CAKE_QUEUES * CAKE_MAX_TINS {
            let p = (i - 1) >> 1;
            if self.heap_backlog(i) > self.heap_backlog(p) {
                self.heap_swap(i, p);
                i = p;
            } else {
                break;
            }
        }
    }

    /// `cake_drop`: drops the head of the fattest flow over all tins.
    /// Returns its (tin, flow).
    fn drop_fattest(&mut self, now: i64, drops: &mut Drops) -> (usize, usize) {
        if self.overflow_timeout == 0 {
            for i in (0..=(CAKE_MAX_TINS * CAKE_QUEUES / 2) as u16).rev() {
                self.heapify(i);
            }
        }
        self.overflow_timeout = 65535;
        let (t, idx) = self.overflow_heap[0];
        let (t, idx) = (usize::from(t), usize::from(idx));
        let b = &mut self.tins[t];
        let Some(p) = b.flows[idx].queue.pop_front() else {
            self.overflow_timeout = 0;
            return (t, idx);
        };
        let flow = &mut b.flows[idx];
        let adjusted = flow.adjusted.pop_front().unwrap_or(p.len);
        if flow.cvars.queue_full(&b.cparams, now) {
            b.unresponsive_flow_count = b.unresponsive_flow_count.wrapping_add(1);
        }
        flow.dropped = flow.dropped.wrapping_add(1);
        b.backlogs[idx] = b.backlogs[idx].wrapping_sub(p.len);
        b.tin_backlog = b.tin_backlog.wrapping_sub(p.len);
        b.tin_dropped = b.tin_dropped.wrapping_add(1);
        self.buffer_used = self.buffer_used.wrapping_sub(truesize(p.len));
        self.backlog = self.backlog.saturating_sub(u64::from(p.len));
        self.stats.drops += 1;
        if self.rate_flags & FLAG_INGRESS != 0 {
            self.advance_shaper(t, adjusted, now, true);
        }
        drops.push(p, DropReason::CakeOverlimit);
        self.qlen = self.qlen.saturating_sub(1);
        self.heapify(0);
        (t, idx)
    }
}

/// The host slot of `hash` in the 8-way set of `hosts`: the way whose tag
/// is `hash`, else the first with no bulk flows (tagged with `hash`), else
/// the set's first way, retagged.
fn host_slot(
    hosts: &mut [Host],
    hash: u32,
    tag: impl Fn(&mut Host) -> &mut u32,
    bulk: impl Fn(&Host) -> u16,
) -> usize {
    let idx = hash as usize % CAKE_QUEUES;
    let inner = idx % CAKE_SET_WAYS;
    let outer = idx - inner;
    let mut k = inner;
    for _ in 0..CAKE_SET_WAYS {
        if *tag(&mut hosts[outer + k]) == hash {
            return outer + k;
        }
        k = (k + 1) % CAKE_SET_WAYS;
    }
    for _ in 0..CAKE_SET_WAYS {
        if bulk(&hosts[outer + k]) == 0 {
            break;
        }
        k = (k + 1) % CAKE_SET_WAYS;
    }
    *tag(&mut hosts[outer + k]) = hash;
    outer + k
}

impl Cake {
    /// `cake_enqueue` without the classifier's refusals (a bridge's
    /// frames always hash).
    fn enqueue_inner(&mut self, mut pkt: Packet, at: Instant, drops: &mut Drops) -> Verdict {
        let now = at.nanos() as i64;
        let (t, idx) = self.classify(&mut pkt);
        let mut len = pkt.len;
        {
            let b = &mut self.tins[t];
            if b.tin_backlog == 0 {
                if b.time_next_packet < now {
                    b.time_next_packet = now;
                }
                if self.qlen == 0 && self.parked.is_none() {
                    if self.time_next_packet < now {
                        self.failsafe_next_packet = now;
                        self.time_next_packet = now;
                    } else if self.time_next_packet > now && self.failsafe_next_packet > now {
                        self.stats.overlimits += 1;
                    }
                }
            }
            if len > b.max_skblen {
                b.max_skblen = len;
            }
        }
        pkt.meta.enqueue_time = at;
        let adjusted = self.overhead(&pkt);
        let truesize_new = truesize(pkt.len);
        let flow = &mut self.tins[t].flows[idx];
        flow.queue.push_back(pkt);
        flow.adjusted.push_back(adjusted);
        let acked = if self.ack_filter != 0 {
            let aggressive = u32::from(self.ack_filter) == ack_mode::AGGRESSIVE;
            ack::filter(&flow.queue, aggressive).and_then(|i| {
                let adj = flow.adjusted.remove(i).unwrap_or(0);
                flow.queue.remove(i).map(|p| (p, adj))
            })
        } else {
            None
        };
        if let Some((ack, ack_adjusted)) = acked {
            let b = &mut self.tins[t];
            b.ack_drops = b.ack_drops.wrapping_add(1);
            b.bytes = b.bytes.wrapping_add(u64::from(ack.len));
            self.stats.drops += 1;
            len = len.wrapping_sub(ack.len);
            self.buffer_used = self
                .buffer_used
                .wrapping_add(truesize_new)
                .wrapping_sub(truesize(ack.len));
            if self.rate_flags & FLAG_INGRESS != 0 {
                self.advance_shaper(t, ack_adjusted, now, true);
            }
            drops.push(ack, DropReason::CakeAckFilter);
        } else {
            self.qlen += 1;
            self.buffer_used = self.buffer_used.wrapping_add(truesize_new);
        }
        let b = &mut self.tins[t];
        b.packets = b.packets.wrapping_add(1);
        b.bytes = b.bytes.wrapping_add(len as i32 as i64 as u64);
        b.backlogs[idx] = b.backlogs[idx].wrapping_add(len);
        b.tin_backlog = b.tin_backlog.wrapping_add(len);
        // `len` is an int in the kernel: an ACK filtered out may leave it
        // negative, and the sums take it sign-extended.
        let delta = len as i32 as i64 as u64;
        self.backlog = self.backlog.wrapping_add(delta);
        self.avg_window_bytes = self.avg_window_bytes.wrapping_add(delta);
        if self.overflow_timeout != 0 {
            let at = self.tins[t].overflow_idx[idx];
            self.heapify_up(at);
        }
        if self.rate_flags & FLAG_AUTORATE_INGRESS != 0 {
            self.estimate_capacity(now);
        } else {
            self.avg_window_bytes = 0;
            self.last_packet_time = now;
        }
        self.join_rotation(t, idx);
        if self.buffer_used > self.buffer_max_used {
            self.buffer_max_used = self.buffer_used;
        }
        let mut own_lost = false;
        if self.buffer_used > self.buffer_limit {
            let mut dropped = 0u32;
            while self.buffer_used > self.buffer_limit && self.qlen > 0 {
                dropped += 1;
                let hit = self.drop_fattest(now, drops);
                own_lost |= hit == (t, idx) && self.tins[t].flows[idx].queue.is_empty();
            }
            let b = &mut self.tins[t];
            b.drop_overlimit = b.drop_overlimit.wrapping_add(dropped);
        }
        if own_lost {
            Verdict::Dropped
        } else {
            Verdict::Queued
        }
    }

    /// The flowchain step of `cake_enqueue`: an idle or decaying flow
    /// joins the new (sparse) flows with a deficit of its host share of
    /// the quantum; a sparse-waiting one becomes bulk.
    fn join_rotation(&mut self, t: usize, idx: usize) {
        let dual = (self.dual_src(), self.dual_dst());
        let b = &mut self.tins[t];
        let set = b.flows[idx].set;
        let (s, d) = (
            usize::from(b.flows[idx].srchost),
            usize::from(b.flows[idx].dsthost),
        );
        match set {
            FlowSet::None | FlowSet::Decaying => {
                if set == FlowSet::Decaying {
                    b.decaying_flow_count = b.decaying_flow_count.wrapping_sub(1);
                }
                b.move_flow(idx, List::New);
                b.flows[idx].set = FlowSet::Sparse;
                b.sparse_flow_count = b.sparse_flow_count.wrapping_add(1);
                let host_load = b.host_load(s, d, dual);
                let div = self.quantum_div[usize::from(host_load).min(CAKE_QUEUES)];
                b.flows[idx].deficit = ((u32::from(b.flow_quantum) * u32::from(div)) >> 16) as i32;
            }
            FlowSet::SparseWait => {
                b.flows[idx].set = FlowSet::Bulk;
                b.sparse_flow_count = b.sparse_flow_count.wrapping_sub(1);
                b.count_bulk(s, d, dual, true);
            }
            FlowSet::Sparse | FlowSet::Bulk => {}
        }
    }

    /// The ingress capacity estimate of `cake_enqueue` (`autorate-ingress`):
    /// packet gaps averaged, bytes per window at each gap longer than the
    /// average, the peak tracked, and the rate set to 15/16 of it.
    fn estimate_capacity(&mut self, now: i64) {
        let packet_interval = (now.wrapping_sub(self.last_packet_time) as u64).min(NS_PER_SEC);
        let shift = if packet_interval > self.avg_packet_interval {
            2
        } else {
            8
        };
        self.avg_packet_interval = ewma(self.avg_packet_interval, packet_interval, shift);
        self.last_packet_time = now;
        if packet_interval > self.avg_packet_interval {
            let window = now.wrapping_sub(self.avg_window_begin) as u64;
            let b = self
                .avg_window_bytes
                .wrapping_mul(NS_PER_SEC)
                .checked_div(window)
                .unwrap_or(0);
            let shift = if b > self.avg_peak_bandwidth { 2 } else { 8 };
            self.avg_peak_bandwidth = ewma(self.avg_peak_bandwidth, b, shift);
            self.avg_window_bytes = 0;
            self.avg_window_begin = now;
            // The kernel never advances last_reconfig_time: every update
            // after the first 250 ms reconfigures.
            if now > 250_000_000 {
                self.rate_bps = self.avg_peak_bandwidth.wrapping_mul(15) >> 4;
                self.reconfigure(&mut Drops::new());
            }
        }
    }

    /// Whether the global shaper holds frames back at `now`.
    fn throttled(&self, now: i64) -> bool {
        self.time_next_packet > now && self.failsafe_next_packet > now
    }

    /// `cake_dequeue` without the Sent count.
    fn dequeue_inner(&mut self, at: Instant, drops: &mut Drops) -> Option<Packet> {
        let now = at.nanos() as i64;
        let mut first_flow = true;
        'begin: loop {
            if self.qlen == 0 {
                return None;
            }
            if self.throttled(now) {
                self.stats.overlimits += 1;
                return None;
            }
            let t = if self.rate_ns == 0 {
                self.pick_tin_unlimited()?
            } else {
                self.pick_tin_shaped(now)?
            };
            'retry: loop {
                let b = &mut self.tins[t];
                let first = if first_flow {
                    b.front(List::Decaying)
                } else {
                    None
                };
                let Some(idx) = first
                    .or_else(|| b.front(List::New))
                    .or_else(|| b.front(List::Old))
                    .or_else(|| b.front(List::Decaying))
                else {
                    continue 'begin;
                };
                first_flow = false;
                if b.flows[idx].deficit <= 0 {
                    self.refill(t, idx);
                    continue 'retry;
                }
                loop {
                    let Some((mut skb, adjusted)) = self.dequeue_one(t, idx) else {
                        self.retire(t, idx, now);
                        continue 'begin;
                    };
                    let ingress = self.rate_flags & FLAG_INGRESS != 0;
                    let b = &mut self.tins[t];
                    let bulk = if ingress {
                        u32::from(b.bulk_flow_count)
                    } else {
                        0
                    };
                    let sojourn = at.saturating_since(skb.meta.enqueue_time);
                    let rng = &mut self.rng;
                    let flow = &mut b.flows[idx];
                    let verdict = flow.cvars.should_drop(
                        &b.cparams,
                        now,
                        sojourn,
                        bulk,
                        &self.inv_sqrt,
                        || ecn::mark_ce(&mut skb),
                        || rng.gen::<u32>(),
                    );
                    if !verdict || flow.queue.is_empty() {
                        return Some(self.deliver(t, idx, skb, adjusted, now));
                    }
                    if ingress {
                        self.advance_shaper(t, adjusted, now, true);
                        let b = &mut self.tins[t];
                        b.flows[idx].deficit = b.flows[idx].deficit.wrapping_sub(adjusted as i32);
                        b.tin_deficit = b.tin_deficit.wrapping_sub(adjusted as i32);
                    }
                    let b = &mut self.tins[t];
                    b.flows[idx].dropped = b.flows[idx].dropped.wrapping_add(1);
                    b.tin_dropped = b.tin_dropped.wrapping_add(1);
                    self.stats.drops += 1;
                    drops.push(skb, DropReason::Cobalt);
                    if ingress {
                        continue 'retry;
                    }
                }
            }
        }
    }

    /// The unlimited mode's choice of tin: DRR over the tins by their
    /// quanta. None: every tin found empty twice round.
    fn pick_tin_unlimited(&mut self) -> Option<usize> {
        let (mut wrapped, mut empty) = (false, true);
        let mut b = usize::from(self.cur_tin);
        loop {
            let tin = self.tins.get_mut(b)?;
            if tin.tin_deficit >= 0 && tin.active() {
                return Some(b);
            }
            if tin.tin_deficit <= 0 {
                tin.tin_deficit = tin.tin_deficit.wrapping_add(i32::from(tin.tin_quantum));
            }
            if tin.active() {
                empty = false;
            }
            self.cur_tin += 1;
            b += 1;
            if self.cur_tin >= self.tin_cnt {
                self.cur_tin = 0;
                b = 0;
                if wrapped {
                    if empty {
                        return None;
                    }
                } else {
                    wrapped = true;
                }
            }
        }
    }

    /// The shaped mode's choice: the highest-priority tin whose schedule
    /// is due, else the one due soonest.
    fn pick_tin_shaped(&mut self, now: i64) -> Option<usize> {
        let mut best_time = i64::MAX;
        let mut best_tin = 0;
        for (tin, b) in self.tins.iter().enumerate().take(usize::from(self.tin_cnt)) {
            if b.active() {
                let time_to_pkt = b.time_next_packet.wrapping_sub(now);
                if time_to_pkt <= 0 || time_to_pkt <= best_time {
                    best_time = time_to_pkt;
                    best_tin = tin;
                }
            }
        }
        self.cur_tin = best_tin as u16;
        self.tins[best_tin].active().then_some(best_tin)
    }

    /// A flow out of deficit (DRR++): a sparse flow with frames becomes
    /// bulk (or sparse-waiting if empty), the deficit grows by the host
    /// share of the quantum, dithered, and the flow goes to the back of
    /// the old flows.
    fn refill(&mut self, t: usize, idx: usize) {
        let dual = (self.dual_src(), self.dual_dst());
        let dither = self.rng.gen::<u32>() >> 16;
        let b = &mut self.tins[t];
        let (s, d) = (
            usize::from(b.flows[idx].srchost),
            usize::from(b.flows[idx].dsthost),
        );
        if b.flows[idx].set == FlowSet::Sparse {
            if !b.flows[idx].queue.is_empty() {
                b.sparse_flow_count = b.sparse_flow_count.wrapping_sub(1);
                b.count_bulk(s, d, dual, true);
                b.flows[idx].set = FlowSet::Bulk;
            } else {
                b.flows[idx].set = FlowSet::SparseWait;
            }
        }
        let host_load = b.host_load(s, d, dual);
        let div = self.quantum_div[usize::from(host_load).min(CAKE_QUEUES)];
        let add = (u32::from(b.flow_quantum) * u32::from(div)).wrapping_add(dither) >> 16;
        b.flows[idx].deficit = b.flows[idx].deficit.wrapping_add(add as i32);
        b.move_flow(idx, List::Old);
    }

    /// A flow found empty: COBALT told the queue is empty; the flow waits
    /// on the decaying list while its state has not decayed to rest, else
    /// leaves the rotations.
    fn retire(&mut self, t: usize, idx: usize, now: i64) {
        let dual = (self.dual_src(), self.dual_dst());
        let b = &mut self.tins[t];
        let (s, d) = (
            usize::from(b.flows[idx].srchost),
            usize::from(b.flows[idx].dsthost),
        );
        let flow = &mut b.flows[idx];
        if flow.cvars.queue_empty(&b.cparams, now, &self.inv_sqrt) {
            b.unresponsive_flow_count = b.unresponsive_flow_count.wrapping_sub(1);
        }
        let cv = &b.flows[idx].cvars;
        let set = b.flows[idx].set;
        let leave_bulk = |b: &mut Tin| b.count_bulk(s, d, dual, false);
        if cv.p_drop != 0 || cv.count != 0 || now < cv.drop_next {
            b.move_flow(idx, List::Decaying);
            match set {
                FlowSet::Bulk => {
                    leave_bulk(b);
                    b.decaying_flow_count = b.decaying_flow_count.wrapping_add(1);
                }
                FlowSet::Sparse | FlowSet::SparseWait => {
                    b.sparse_flow_count = b.sparse_flow_count.wrapping_sub(1);
                    b.decaying_flow_count = b.decaying_flow_count.wrapping_add(1);
                }
                _ => {}
            }
            b.flows[idx].set = FlowSet::Decaying;
        } else {
            b.move_flow(idx, List::None);
            match set {
                FlowSet::Sparse | FlowSet::SparseWait => {
                    b.sparse_flow_count = b.sparse_flow_count.wrapping_sub(1)
                }
                FlowSet::Bulk => leave_bulk(b),
                _ => b.decaying_flow_count = b.decaying_flow_count.wrapping_sub(1),
            }
            b.flows[idx].set = FlowSet::None;
        }
    }

    /// The end of `cake_dequeue` for a frame sent: its mark counted, the
    /// tin's delay averages, the shaper and the deficits charged.
    fn deliver(&mut self, t: usize, idx: usize, skb: Packet, adjusted: u32, now: i64) -> Packet {
        let b = &mut self.tins[t];
        let flow = &mut b.flows[idx];
        let marked = u32::from(flow.cvars.ecn_marked);
        flow.marks = flow.marks.wrapping_add(marked);
        flow.sent_bytes = flow.sent_bytes.wrapping_add(u64::from(skb.len));
        b.tin_ecn_mark = b.tin_ecn_mark.wrapping_add(marked);
        let delay = (now as u64).saturating_sub(skb.meta.enqueue_time.nanos());
        b.avge_delay = ewma(b.avge_delay, delay, 8);
        b.peak_delay = ewma(
            b.peak_delay,
            delay,
            if delay > b.peak_delay { 2 } else { 8 },
        );
        b.base_delay = ewma(
            b.base_delay,
            delay,
            if delay < b.base_delay { 2 } else { 8 },
        );
        self.advance_shaper(t, adjusted, now, false);
        let b = &mut self.tins[t];
        b.flows[idx].deficit = b.flows[idx].deficit.wrapping_sub(adjusted as i32);
        b.tin_deficit = b.tin_deficit.wrapping_sub(adjusted as i32);
        self.overflow_timeout = self.overflow_timeout.saturating_sub(1);
        skb
    }

    /// The options as `cake_dump` sends them.
    pub fn options(&self) -> CakeOptions {
        let flag = |f: u16| Some(u32::from(self.rate_flags & f != 0));
        CakeOptions {
            base_rate: Some(self.rate_bps),
            flow_mode: Some(u32::from(self.flow_mode & FLOW_MASK)),
            rtt: Some(self.interval as u32),
            target: Some(self.target as u32),
            memory: Some(self.buffer_config_limit),
            autorate: flag(FLAG_AUTORATE_INGRESS),
            ingress: flag(FLAG_INGRESS),
            ack_filter: Some(u32::from(self.ack_filter)),
            nat: Some(u32::from(self.flow_mode & FLOW_NAT_FLAG != 0)),
            diffserv_mode: Some(u32::from(self.tin_mode)),
            wash: flag(FLAG_WASH),
            overhead: Some(i32::from(self.rate_overhead)),
            raw: (self.rate_flags & FLAG_OVERHEAD == 0).then_some(0),
            atm: Some(u32::from(self.atm_mode)),
            mpu: Some(u32::from(self.rate_mpu)),
            split_gso: flag(FLAG_SPLIT_GSO),
            fwmark: Some(self.fwmark_mask),
        }
    }

    /// `cake_dump_stats`.
    pub fn xstats(&self) -> CakeXstats {
        let us = |ns: u64| (ns / 1000) as u32;
        let tins = self.tin_order[..usize::from(self.tin_cnt)]
            .iter()
            .map(|&i| {
                let b = &self.tins[usize::from(i)];
                CakeTinXstats {
                    threshold_rate: b.tin_rate_bps,
                    sent_bytes: b.bytes,
                    backlog_bytes: b.tin_backlog,
                    target_us: us(b.cparams.target),
                    interval_us: us(b.cparams.interval),
                    sent_packets: b.packets,
                    dropped_packets: b.tin_dropped,
                    ecn_marked_packets: b.tin_ecn_mark,
                    acks_dropped_packets: b.ack_drops,
                    peak_delay_us: us(b.peak_delay),
                    avg_delay_us: us(b.avge_delay),
                    base_delay_us: us(b.base_delay),
                    way_indirect_hits: b.way_hits,
                    way_misses: b.way_misses,
                    way_collisions: b.way_collisions,
                    sparse_flows: u32::from(b.sparse_flow_count) + u32::from(b.decaying_flow_count),
                    bulk_flows: u32::from(b.bulk_flow_count),
                    unresponsive_flows: u32::from(b.unresponsive_flow_count),
                    max_skblen: b.max_skblen,
                    flow_quantum: u32::from(b.flow_quantum),
                }
            })
            .collect();
        CakeXstats {
            capacity_estimate: self.avg_peak_bandwidth,
            memory_limit: self.buffer_limit,
            memory_used: self.buffer_max_used,
            avg_netoff: (self.avg_netoff.wrapping_add(0x8000)) >> 16,
            min_netlen: u32::from(self.min_netlen),
            max_netlen: u32::from(self.max_netlen),
            min_adjlen: u32::from(self.min_adjlen),
            max_adjlen: u32::from(self.max_adjlen),
            tins,
        }
    }

    /// The flows of tin `t` on a rotation (`cake_walk` lists them), by
    /// walking its three lists: the active flows, not the 1024 queues.
    fn listed(&self, t: usize) -> impl Iterator<Item = usize> + '_ {
        let b = &self.tins[t];
        b.chains.iter().flat_map(move |c| {
            std::iter::successors(c.front(), move |&i| {
                let next = b.flows[i].next;
                (next != NIL).then_some(usize::from(next))
            })
        })
    }

    /// Where the class minor less one, `bucket` (`i * 1024 + j`, tin `i`
    /// in `tin_order`), points: the tin and the queue.
    fn tin_queue(&self, bucket: u32) -> (usize, usize) {
        let (i, j) = (bucket as usize / CAKE_QUEUES, bucket as usize % CAKE_QUEUES);
        (usize::from(self.tin_order[i]), j)
    }

    /// `cake_dump_class_stats` of the flow at `bucket`: class
    /// `bucket + 1` with its queue, drops and COBALT state (no byte
    /// counters).
    fn class_dump(&self, bucket: u32, now: Instant) -> ClassDump {
        let now_ns = now.nanos() as i64;
        let us = |ns: i64| (ns / 1000) as i32;
        let (t, j) = self.tin_queue(bucket);
        let b = &self.tins[t];
        let flow = &b.flows[j];
        let cv = &flow.cvars;
        ClassDump {
            kind: "cake".into(),
            classid: self.handle | (bucket + 1),
            parent: self.handle,
            queue: QdiscStats {
                qlen: flow.queue.len() as u32,
                backlog: u64::from(b.backlogs[j]),
                drops: u64::from(flow.dropped),
                ..QdiscStats::default()
            },
            xstats: Some(Xstats::CakeClass(CakeClassXstats {
                deficit: flow.deficit,
                dropping: cv.dropping,
                count: cv.count,
                p_drop: cv.p_drop,
                blue_timer_us: (cv.p_drop != 0).then(|| us(now_ns.wrapping_sub(cv.blue_timer))),
                drop_next_us: cv.dropping.then(|| us(now_ns.wrapping_sub(cv.drop_next))),
            })),
            ..ClassDump::default()
        }
    }

    /// The flow row of queue `j` of the tin at place `i` of `tin_order`.
    fn flow_dump(&self, i: usize, j: usize, now: Instant) -> FlowDump {
        let bucket = (i * CAKE_QUEUES + j) as u32;
        let (t, _) = self.tin_queue(bucket);
        let b = &self.tins[t];
        let flow = &b.flows[j];
        let head = flow.queue.front();
        FlowDump {
            bucket,
            flow: head.map(|p| p.meta.flow),
            backlog: u64::from(b.backlogs[j]),
            qlen: flow.queue.len() as u32,
            head_sojourn_ns: head.map_or(0, |p| now.saturating_since(p.meta.enqueue_time)),
            deficit: i64::from(flow.deficit),
            codel_count: flow.cvars.count,
            codel_dropping: flow.cvars.dropping,
            drops: u64::from(flow.dropped),
            ecn_marks: u64::from(flow.marks),
            sent_bytes: flow.sent_bytes,
            hash: flow_queue_hash(head, None),
            cake: Some(CakeFlowInfo {
                tin: i as u8,
                tins: self.tin_cnt as u8,
                flow_mode: self.flow_mode & FLOW_MASK,
                srchost: flow.srchost,
                dsthost: flow.dsthost,
                set: match flow.set {
                    FlowSet::Bulk => CakeFlowSet::Bulk,
                    FlowSet::Decaying => CakeFlowSet::Decaying,
                    _ => CakeFlowSet::Sparse,
                },
                p_drop: flow.cvars.p_drop,
            }),
            ..FlowDump::default()
        }
    }

    fn total_qlen(&self) -> u32 {
        self.qlen + u32::from(self.parked.is_some())
    }
}

impl ParkOnPeek for Cake {
    fn parked_slot(&mut self) -> &mut Option<Packet> {
        &mut self.parked
    }
    fn sent_stats(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }
    fn dequeue_next(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.dequeue_inner(now, drops)
    }
}

impl FilterHost for Cake {
    fn filter_qdisc(&self) -> Handle {
        self.handle
    }

    /// Only the qdisc's own block: `cake_tcf_block` has none for a class.
    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, Refusal> {
        own_chain(&mut self.filters, "cake", parent)
    }
}

impl Qdisc for Cake {
    fn kind(&self) -> &'static str {
        "cake"
    }

    fn enqueue(&mut self, pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        self.enqueue_inner(pkt, now, drops)
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
        if self.qlen == 0 {
            return None;
        }
        let t = now.nanos() as i64;
        if self.throttled(t) {
            let next = self.time_next_packet.min(self.failsafe_next_packet);
            Some(Instant::from_nanos(next.max(0) as u64).max(now))
        } else {
            Some(now)
        }
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

    fn reset(&mut self, drops: &mut Drops) {
        drop_all_held(self, drops);
    }

    fn change(
        &mut self,
        options: &QdiscOptions,
        _now: Instant,
        drops: &mut Drops,
    ) -> Result<(), Refusal> {
        match options {
            QdiscOptions::None => {}
            QdiscOptions::Cake(o) => self.apply(o),
            _ => return Err(super::options::foreign("cake")),
        }
        self.reconfigure(drops);
        Ok(())
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    /// The flows on a rotation, tin by tin in `tin_order`, as classes
    /// (`cake_walk`) and flow rows. Their `ahead` stays `None`: CAKE's
    /// tins and sparse/bulk rotations are not the round robin
    /// `drr_ahead` replays.
    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let order = &self.tin_order[..usize::from(self.tin_cnt)];
        let active = order.iter().enumerate().flat_map(|(i, &t)| {
            self.listed(usize::from(t))
                .map(move |j| self.flow_dump(i, j, now))
        });
        let (flows, classes, other_flows) =
            list_flows(listing, active, |bucket| self.class_dump(bucket, now));
        QdiscDump {
            kind: "cake".into(),
            handle: self.handle,
            parent: self.parent,
            options: QdiscOptions::Cake(self.options()),
            stats: self.stats(),
            xstats: Some(Xstats::Cake(self.xstats())),
            classes,
            children: Vec::new(),
            flows,
            other_flows,
            occupancy: QueueOccupancy::parked(self.parked.as_ref(), now),
        }
    }

    fn as_filter_host(&mut self) -> Option<&mut dyn FilterHost> {
        Some(self)
    }

    /// Every held frame, tin by tin and flow by flow (`cake_reset`'s
    /// order); the flows keep their rotation state, as `cake_clear_tin`
    /// leaves it.
    fn drain_all(&mut self) -> Vec<Packet> {
        let mut out: Vec<Packet> = self.parked.take().into_iter().collect();
        for tin in 0..CAKE_MAX_TINS {
            for flow in 0..CAKE_QUEUES {
                while let Some((p, _)) = self.dequeue_one(tin, flow) {
                    out.push(p);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
