//! HTB, the Hierarchical Token Bucket (Linux net/sched/sch_htb.c, iproute2
//! tc/q_htb.c): a tree of classes, each with a `rate` bucket and a `ceil`
//! bucket in nanoseconds of transmission time. Leaves hold a child qdisc (pfifo
//! by default). A class is CAN_SEND, MAY_BORROW or CANT_SEND by the *sign* of
//! its buckets; active leaves sit in the row of their level (CAN_SEND) or in
//! the feed of the ancestor they borrow from, and dequeue serves levels
//! bottom-up, prios in order, and DRR with per-level deficits inside a (level,
//! prio). Classes that are not CAN_SEND wait in a per-level event queue keyed
//! by the time their mode may change. Unclassified frames go to the unshaped
//! direct queue, which is served first.
//!
//! The kernel's rbtrees keyed by classid become sorted vectors (`ActiveSet`)
//! with the same "current pointer" semantics (a removed pointed-to member
//! advances the row pointer, or leaves a feed pointer to resume at the next
//! classid); the event queues are ordered sets keyed by (time, insertion).

use super::dump::{HtbXstats, Xstats};
use super::fifo::{Fifo, FifoKind};
use super::tbf::ns_to_ticks;
use super::ClassOptions;
use super::{
    tc_h_major, tc_h_make, tc_h_minor, ClassDump, Classful, FilterHost, FlowListing, Handle, Qdisc,
    QdiscCtx, QdiscDump, QdiscStats, TcError, Verdict, TC_H_ROOT,
};
use crate::packet::filter::FilterChain;
use crate::packet::{DropReason, Drops, Packet};
use crate::tc::opts::tbf::{
    linklayer_name, matches, option_value, parse_linklayer, parse_size_and_cell, DUMPED_CELL,
    LINKLAYER_ALLOWED, U16_ALLOWED,
};
use crate::time::{Instant, NS_PER_SEC};
use crate::units::{
    parse_rate, print_rate, sprint_size, tc_calc_xmitsize, tc_calc_xmittime, LinkLayer, PschedRate,
};
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashMap, VecDeque};

/// `TC_HTB_MAXDEPTH`: levels 0 (leaves) to 7 (root classes with children).
const MAXDEPTH: usize = 8;
/// `TC_HTB_NUMPRIO`.
const NUMPRIO: usize = 8;
/// Bound on how far tokens may be in debt or credit (`mbuffer`, 60 s).
const MBUFFER: i64 = 60 * NS_PER_SEC as i64;
/// tc's default `mtu` for burst computation and rate-table cells.
const DEFAULT_MTU: u64 = 1600;
/// `get_hz()` on hrtimer kernels (`/proc/net/psched`).
const TC_HZ: u64 = 1_000_000_000;
/// Version tc prints with `-d` (`ver 3.17`).
const HTB_VER: (u32, u32) = (3, 17);

const HTB_USAGE: &str = "Usage: ... qdisc add ... htb [default N] [r2q N] [direct_qlen P]\n \
    ... class add ... htb rate R1 [burst B1] [mpu B] [overhead O]\n                      \
    [prio P] [quantum Q] [ceil R2] [cburst B2] [mtu MTU]\n                      \
    [linklayer TYPE]";

fn htb_err(msg: String) -> TcError {
    TcError::new(format!("{msg}\n{HTB_USAGE}"))
}

fn illegal(param: &str, value: &str, allowed: &str) -> TcError {
    htb_err(format!(
        "Illegal \"{param}\": \"{value}\" (expected {allowed})"
    ))
}

/// Parses a `get_u32(.., base)` value.
fn parse_u32(s: &str, radix: u32) -> Option<u32> {
    let digits = if radix == 16 {
        s.strip_prefix("0x")
            .or_else(|| s.strip_prefix("0X"))
            .unwrap_or(s)
    } else {
        s
    };
    u32::from_str_radix(digits, radix).ok()
}

fn fmt_classid(h: Handle) -> String {
    format!("{:x}:{:x}", tc_h_major(h), tc_h_minor(h))
}

/// A class mode (`enum htb_cmode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    CantSend,
    MayBorrow,
    CanSend,
}

/// A row or a feed: active classes ordered by classid, with the DRR
/// "current" pointer (by classid) and the classid to resume after when the
/// pointed-to member left a feed.
#[derive(Default, Debug)]
struct ActiveSet {
    members: Vec<(u32, usize)>,
    ptr: Option<u32>,
    last_ptr_id: u32,
}

impl ActiveSet {
    fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
    fn insert(&mut self, classid: u32, slot: usize) {
        if let Err(pos) = self.members.binary_search_by_key(&classid, |m| m.0) {
            self.members.insert(pos, (classid, slot));
        }
    }
    fn remove(&mut self, classid: u32) {
        if let Ok(pos) = self.members.binary_search_by_key(&classid, |m| m.0) {
            self.members.remove(pos);
        }
    }
    fn slot_of(&self, classid: u32) -> Option<usize> {
        let pos = self.members.binary_search_by_key(&classid, |m| m.0).ok()?;
        Some(self.members[pos].1)
    }
    /// The first member with classid >= `id` (`htb_id_find_next_upper`).
    fn next_upper(&self, id: u32) -> Option<u32> {
        let pos = self.members.partition_point(|m| m.0 < id);
        self.members.get(pos).map(|m| m.0)
    }
    /// `rb_next` of the pointer.
    fn advance(&mut self) {
        self.ptr = self
            .ptr
            .and_then(|id| id.checked_add(1))
            .and_then(|id| self.next_upper(id));
    }
    fn clear(&mut self) {
        self.members.clear();
        self.ptr = None;
        self.last_ptr_id = 0;
    }
}

/// Where an `ActiveSet` lives: a row of the qdisc or a feed of an inner class.
#[derive(Clone, Copy, Debug)]
enum SetRef {
    Row(usize, usize),
    Feed(usize, usize),
}

/// The class options as tc sends them.
#[derive(Clone, Debug, PartialEq)]
struct ClassOpts {
    rate: u64,
    ceil: u64,
    buffer_ticks: u64,
    cbuffer_ticks: u64,
    prio: u32,
    quantum: u32,
    mpu: u16,
    overhead: u16,
    linklayer: LinkLayer,
}

impl ClassOpts {
    /// `htb_parse_class_opt` of iproute2, defaults included.
    fn parse(args: &[&str]) -> Result<ClassOpts, TcError> {
        let mut rate = 0u64;
        let mut ceil = 0u64;
        let mut buffer = 0u64;
        let mut cbuffer = 0u64;
        let mut mtu = DEFAULT_MTU;
        let mut mpu = 0u16;
        let mut overhead = 0u16;
        let mut linklayer = LinkLayer::Ethernet;
        let mut prio = 0u32;
        let mut quantum = 0u32;
        let mut it = args.iter();
        while let Some(&tok) = it.next() {
            let mut value = || option_value(&mut it, tok).map_err(htb_err);
            let u16_of =
                |name: &str, v: &str| v.parse::<u16>().map_err(|_| illegal(name, v, U16_ALLOWED));
            let u32_of = |name: &str, v: &str| {
                parse_u32(v, 10).ok_or_else(|| illegal(name, v, "an integer 0..4294967295"))
            };
            let size_cell = |name: &str, v: &str| {
                parse_size_and_cell(v).ok_or_else(|| {
                    illegal(
                        name,
                        v,
                        "a size like 15k, optionally /CELL with CELL a power of two",
                    )
                })
            };
            if matches(tok, "prio") {
                prio = u32_of("prio", value()?)?;
            } else if matches(tok, "mtu") {
                mtu = u32_of("mtu", value()?)? as u64;
            } else if matches(tok, "mpu") {
                mpu = u16_of("mpu", value()?)?;
            } else if matches(tok, "overhead") {
                overhead = u16_of("overhead", value()?)?;
            } else if matches(tok, "linklayer") {
                let v = value()?;
                linklayer =
                    parse_linklayer(v).ok_or_else(|| illegal("linklayer", v, LINKLAYER_ALLOWED))?;
            } else if matches(tok, "quantum") {
                quantum = u32_of("quantum", value()?)?;
            } else if matches(tok, "burst") || tok == "buffer" || tok == "maxburst" {
                buffer = size_cell(tok, value()?)?;
            } else if matches(tok, "cburst") || tok == "cbuffer" || tok == "cmaxburst" {
                cbuffer = size_cell(tok, value()?)?;
            } else if tok == "ceil" {
                let v = value()?;
                if ceil != 0 {
                    return Err(htb_err("Double \"ceil\" spec".into()));
                }
                ceil = parse_rate(v).map_err(|e| illegal("ceil", v, e.allowed))?;
            } else if tok == "rate" {
                let v = value()?;
                if rate != 0 {
                    return Err(htb_err("Double \"rate\" spec".into()));
                }
                rate = parse_rate(v).map_err(|e| illegal("rate", v, e.allowed))?;
            } else {
                return Err(htb_err(format!("What is \"{tok}\"?")));
            }
        }
        if rate == 0 {
            return Err(htb_err(
                "\"rate\" is required (and must be above 0, e.g. rate 10mbit).".into(),
            ));
        }
        if ceil == 0 {
            ceil = rate;
        }
        if buffer == 0 {
            buffer = rate / TC_HZ + mtu;
        }
        if cbuffer == 0 {
            cbuffer = ceil / TC_HZ + mtu;
        }
        let ticks = |r: u64, b: u64| tc_calc_xmittime(r, b).min(u32::MAX as u64);
        Ok(ClassOpts {
            rate,
            ceil,
            buffer_ticks: ticks(rate, buffer),
            cbuffer_ticks: ticks(ceil, cbuffer),
            prio,
            quantum,
            mpu,
            overhead,
            linklayer,
        })
    }

    fn psched(&self, rate: u64) -> PschedRate {
        PschedRate::new(rate).with_framing(self.overhead as i32, self.mpu as u32, self.linklayer)
    }
}

/// One HTB class.
struct Class {
    classid: u32,
    parent: Option<usize>,
    children: u32,
    level: usize,
    prio: usize,
    quantum: i64,
    opts: ClassOpts,
    rate: PschedRate,
    ceil: PschedRate,
    buffer: i64,
    cbuffer: i64,
    tokens: i64,
    ctokens: i64,
    t_c: i64,
    mode: Mode,
    /// Bit p set: the class is active at prio p (in a row or a feed).
    prio_activity: u8,
    /// Its entry in the event queue of its level, when not CAN_SEND.
    pq: Option<(i64, u64)>,
    /// The leaf qdisc (leaves only).
    leaf: Option<Box<dyn Qdisc>>,
    /// DRR deficit per level (leaves only).
    deficit: [i64; MAXDEPTH],
    /// Feeds of borrowing descendants per prio (inner classes only).
    feeds: [ActiveSet; NUMPRIO],
    /// Filters attached to the class (`tc filter add ... parent <class>`),
    /// consulted when classification reaches it as an inner class.
    filters: FilterChain,
    /// The leaf returned nothing while holding frames (a shaping child):
    /// its `next_wakeup` joins ours.
    non_work_conserving: bool,
    bytes: u64,
    packets: u64,
    drops: u64,
    overlimits: u64,
    lends: u64,
    borrows: u64,
}

impl Class {
    /// `htb_class_mode` without hysteresis: only the signs matter.
    fn class_mode(&self, diff: &mut i64) -> Mode {
        let toks = self.ctokens + *diff;
        if toks < 0 {
            *diff = -toks;
            return Mode::CantSend;
        }
        let toks = self.tokens + *diff;
        if toks >= 0 {
            return Mode::CanSend;
        }
        *diff = -toks;
        Mode::MayBorrow
    }

    fn accnt_tokens(&mut self, len: u64, diff: i64) {
        let toks = (diff + self.tokens).min(self.buffer) - self.rate.l2t_ns(len) as i64;
        self.tokens = if toks <= -MBUFFER { 1 - MBUFFER } else { toks };
    }

    fn accnt_ctokens(&mut self, len: u64, diff: i64) {
        let toks = (diff + self.ctokens).min(self.cbuffer) - self.ceil.l2t_ns(len) as i64;
        self.ctokens = if toks <= -MBUFFER { 1 - MBUFFER } else { toks };
    }

    /// Rates, buffers, quantum and prio from (new) options, as
    /// `htb_change_class` sets them. Returns the quantum warning.
    fn apply(&mut self, opts: ClassOpts, r2q: u32) -> Option<String> {
        let mut warning = None;
        self.rate = opts.psched(opts.rate);
        self.ceil = opts.psched(opts.ceil);
        if self.level == 0 {
            let mut quantum = (opts.rate / r2q as u64).min(i32::MAX as u64) as i64;
            let verdict = if quantum < 1000 {
                Some(("small", 1000))
            } else if quantum > 200_000 {
                Some(("big", 200_000))
            } else {
                None
            };
            if let (0, Some((word, clamp))) = (opts.quantum, verdict) {
                quantum = clamp;
                warning = Some(format!(
                    "quantum of class {:X} is {word}. Consider r2q change.",
                    self.classid
                ));
            }
            if opts.quantum != 0 {
                quantum = opts.quantum as i64;
            }
            self.quantum = quantum;
            self.prio = (opts.prio as usize).min(NUMPRIO - 1);
        }
        self.buffer = (opts.buffer_ticks << 6) as i64;
        self.cbuffer = (opts.cbuffer_ticks << 6) as i64;
        self.opts = opts;
        warning
    }

    fn options_text(&self, detail: bool) -> (String, Map<String, Value>) {
        let o = &self.opts;
        let mut s = Vec::new();
        let mut j = Map::new();
        if self.level == 0 {
            s.push(format!("prio {}", self.prio));
            j.insert("prio".into(), json!(self.prio));
            if detail {
                s.push(format!("quantum {}", self.quantum));
                j.insert("quantum".into(), json!(self.quantum));
            }
        }
        s.push(format!("rate {}", print_rate(o.rate)));
        j.insert("rate".into(), json!(o.rate));
        if o.overhead != 0 {
            s.push(format!("overhead {}", o.overhead));
            j.insert("overhead".into(), json!(o.overhead));
        }
        s.push(format!("ceil {}", print_rate(o.ceil)));
        j.insert("ceil".into(), json!(o.ceil));
        if o.linklayer != LinkLayer::Ethernet || detail {
            s.push(format!("linklayer {}", linklayer_name(o.linklayer)));
            j.insert("linklayer".into(), json!(linklayer_name(o.linklayer)));
        }
        let burst = tc_calc_xmitsize(o.rate, ns_to_ticks(self.buffer).max(0) as u64);
        let cburst = tc_calc_xmitsize(o.ceil, ns_to_ticks(self.cbuffer).max(0) as u64);
        j.insert("burst".into(), json!(burst));
        j.insert("cburst".into(), json!(cburst));
        if detail {
            s.push(format!(
                "burst {}/{} mpu {} cburst {}/{} mpu {} level {}",
                sprint_size(burst),
                DUMPED_CELL,
                sprint_size(o.mpu as u64),
                sprint_size(cburst),
                DUMPED_CELL,
                sprint_size(o.mpu as u64),
                self.level
            ));
            j.insert("level".into(), json!(self.level));
        } else {
            s.push(format!(
                "burst {} cburst {}",
                sprint_size(burst),
                sprint_size(cburst)
            ));
        }
        (s.join(" "), j)
    }
}

/// Where `classify` sends a frame.
enum Target {
    Direct,
    Leaf(usize),
}

/// The HTB qdisc.
pub struct Htb {
    ctx: QdiscCtx,
    /// `default`: minor of the class for unclassified frames (0 = direct).
    defcls: u32,
    r2q: u32,
    direct_qlen: u32,
    classes: Vec<Option<Class>>,
    free_slots: Vec<usize>,
    ids: HashMap<u32, usize>,
    /// Filters attached to the qdisc itself.
    filters: FilterChain,
    rows: [[ActiveSet; NUMPRIO]; MAXDEPTH],
    row_mask: [u8; MAXDEPTH],
    wait_pq: [BTreeSet<(i64, u64, usize)>; MAXDEPTH],
    near_ev_cache: [i64; MAXDEPTH],
    pq_seq: u64,
    /// `q->now`: the time of the current dequeue.
    now: i64,
    /// The latest time seen (for class creation, which gets no `now`).
    clock: Instant,
    direct: VecDeque<Packet>,
    direct_pkts: u64,
    /// A frame taken out by `peek`, counted in qlen.
    parked: Option<Packet>,
    qlen: u32,
    backlog: u64,
    stats: QdiscStats,
    /// Slots whose leaf once held frames back (checked by `next_wakeup`).
    non_wc: Vec<usize>,
    /// The last dequeue found nothing sendable; `watchdog` is when to retry.
    stalled: bool,
    watchdog: Instant,
    /// A child qdisc was handed out mutably: recount qlen and activity.
    dirty: bool,
    /// Frames freed by class operations that have no drop sink, handed to
    /// the next `Drops` this qdisc sees.
    purged: Vec<Packet>,
    warnings: Vec<String>,
}

impl Htb {
    /// `tc qdisc add ... htb [default MINOR] [r2q N] [direct_qlen P]`.
    pub fn from_args(ctx: QdiscCtx, args: &[&str]) -> Result<Self, TcError> {
        let mut defcls = 0u32;
        let mut r2q = 10u32;
        let mut direct_qlen = ctx.txqueuelen;
        let mut it = args.iter();
        while let Some(&tok) = it.next() {
            let mut value = || option_value(&mut it, tok).map_err(htb_err);
            if matches(tok, "r2q") {
                let v = value()?;
                r2q = parse_u32(v, 10).ok_or_else(|| illegal("r2q", v, "a positive integer"))?;
            } else if matches(tok, "default") {
                let v = value()?;
                defcls = parse_u32(v, 16)
                    .ok_or_else(|| illegal("default", v, "a hexadecimal class minor like 20"))?;
            } else if matches(tok, "direct_qlen") {
                let v = value()?;
                direct_qlen = parse_u32(v, 10)
                    .ok_or_else(|| illegal("direct_qlen", v, "a number of packets"))?;
            } else if matches(tok, "offload") {
                return Err(TcError::new(
                    "Error: htb offload needs a NIC with hardware QoS; bloatbox shapes in software (drop \"offload\").",
                ));
            } else {
                return Err(htb_err(format!("What is \"{tok}\"?")));
            }
        }
        Ok(Htb {
            ctx,
            defcls,
            r2q: r2q.max(1),
            direct_qlen,
            classes: Vec::new(),
            free_slots: Vec::new(),
            ids: HashMap::new(),
            filters: FilterChain::new(),
            rows: Default::default(),
            row_mask: [0; MAXDEPTH],
            wait_pq: Default::default(),
            near_ev_cache: [0; MAXDEPTH],
            pq_seq: 0,
            now: 0,
            clock: Instant::ZERO,
            direct: VecDeque::new(),
            direct_pkts: 0,
            parked: None,
            qlen: 0,
            backlog: 0,
            stats: QdiscStats::default(),
            stalled: false,
            watchdog: Instant::ZERO,
            dirty: false,
            purged: Vec::new(),
            warnings: Vec::new(),
            non_wc: Vec::new(),
        })
    }

    /// Warnings of class operations so far (e.g. quantum clamping).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Frames the direct queue has taken (`direct_packets_stat`).
    pub fn direct_packets(&self) -> u64 {
        self.direct_pkts
    }

    fn cl(&self, slot: usize) -> &Class {
        self.classes[slot].as_ref().expect("slot of a live class")
    }

    fn cl_mut(&mut self, slot: usize) -> &mut Class {
        self.classes[slot].as_mut().expect("slot of a live class")
    }

    fn find(&self, classid: u32) -> Option<usize> {
        self.ids.get(&classid).copied()
    }

    fn set_mut(&mut self, r: SetRef) -> &mut ActiveSet {
        match r {
            SetRef::Row(level, prio) => &mut self.rows[level][prio],
            SetRef::Feed(slot, prio) => &mut self.cl_mut(slot).feeds[prio],
        }
    }

    // ----- activity: rows, feeds, event queue (5.3, 5.4) -----

    fn add_class_to_row(&mut self, slot: usize, mask: u8) {
        let (level, classid) = (self.cl(slot).level, self.cl(slot).classid);
        self.row_mask[level] |= mask;
        for prio in bits(mask) {
            self.rows[level][prio].insert(classid, slot);
        }
    }

    fn remove_class_from_row(&mut self, slot: usize, mask: u8) {
        let (level, classid) = (self.cl(slot).level, self.cl(slot).classid);
        let mut emptied = 0u8;
        for prio in bits(mask) {
            let row = &mut self.rows[level][prio];
            if row.ptr == Some(classid) {
                row.advance();
            }
            row.remove(classid);
            if row.is_empty() {
                emptied |= 1 << prio;
            }
        }
        self.row_mask[level] &= !emptied;
    }

    /// `htb_activate_prios`: hook the class (and, while borrowing, its
    /// ancestors) into feeds up to the first CAN_SEND class, into its row.
    fn activate_prios(&mut self, slot: usize) {
        let mut cl = slot;
        let mut mask = self.cl(cl).prio_activity;
        while self.cl(cl).mode == Mode::MayBorrow && mask != 0 {
            let Some(p) = self.cl(cl).parent else { break };
            let classid = self.cl(cl).classid;
            for prio in bits(mask) {
                let feed = &mut self.cl_mut(p).feeds[prio];
                if !feed.is_empty() {
                    // The parent is already active at this prio.
                    mask &= !(1 << prio);
                }
                feed.insert(classid, cl);
            }
            self.cl_mut(p).prio_activity |= mask;
            cl = p;
        }
        if self.cl(cl).mode == Mode::CanSend && mask != 0 {
            self.add_class_to_row(cl, mask);
        }
    }

    /// `htb_deactivate_prios`: the inverse of `activate_prios`.
    fn deactivate_prios(&mut self, slot: usize) {
        let mut cl = slot;
        let mut mask = self.cl(cl).prio_activity;
        while self.cl(cl).mode == Mode::MayBorrow && mask != 0 {
            let Some(p) = self.cl(cl).parent else { break };
            let classid = self.cl(cl).classid;
            let m = mask;
            mask = 0;
            for prio in bits(m) {
                let feed = &mut self.cl_mut(p).feeds[prio];
                if feed.ptr == Some(classid) {
                    // Forget the pointer, remember where to resume.
                    feed.last_ptr_id = classid;
                    feed.ptr = None;
                }
                feed.remove(classid);
                if feed.is_empty() {
                    mask |= 1 << prio;
                }
            }
            self.cl_mut(p).prio_activity &= !mask;
            cl = p;
        }
        if self.cl(cl).mode == Mode::CanSend && mask != 0 {
            self.remove_class_from_row(cl, mask);
        }
    }

    /// `htb_activate`: a leaf got frames.
    fn activate(&mut self, slot: usize) {
        if self.cl(slot).prio_activity == 0 {
            let prio = self.cl(slot).prio;
            self.cl_mut(slot).prio_activity = 1 << prio;
            self.activate_prios(slot);
        }
    }

    /// `htb_deactivate` (idempotent): a leaf became empty.
    fn deactivate(&mut self, slot: usize) {
        if self.cl(slot).prio_activity != 0 {
            self.deactivate_prios(slot);
            self.cl_mut(slot).prio_activity = 0;
        }
    }

    fn add_to_wait_tree(&mut self, slot: usize, delay: i64) {
        let mut key = self.now + delay;
        if key == self.now {
            key += 1;
        }
        let level = self.cl(slot).level;
        self.near_ev_cache[level] = self.near_ev_cache[level].min(key);
        self.pq_seq += 1;
        let seq = self.pq_seq;
        self.wait_pq[level].insert((key, seq, slot));
        self.cl_mut(slot).pq = Some((key, seq));
    }

    fn remove_from_wait_tree(&mut self, slot: usize) {
        let level = self.cl(slot).level;
        if let Some((key, seq)) = self.cl_mut(slot).pq.take() {
            self.wait_pq[level].remove(&(key, seq, slot));
        }
    }

    /// `htb_change_class_mode`: recompute the mode, move the class between
    /// rows and feeds, count entries into CANT_SEND.
    fn change_class_mode(&mut self, slot: usize, diff: &mut i64) {
        let new_mode = self.cl(slot).class_mode(diff);
        let cl = self.cl_mut(slot);
        if new_mode == cl.mode {
            return;
        }
        if new_mode == Mode::CantSend {
            cl.overlimits += 1;
            self.stats.overlimits += 1;
        }
        if self.cl(slot).prio_activity != 0 {
            if self.cl(slot).mode != Mode::CantSend {
                self.deactivate_prios(slot);
            }
            self.cl_mut(slot).mode = new_mode;
            if new_mode != Mode::CantSend {
                self.activate_prios(slot);
            }
        } else {
            self.cl_mut(slot).mode = new_mode;
        }
    }

    /// `htb_do_events`: mode changes due at `self.now` on one level.
    /// Returns the time of the next pending event of the level.
    fn do_events(&mut self, level: usize) -> Option<i64> {
        loop {
            let &(key, seq, slot) = self.wait_pq[level].first()?;
            if key > self.now {
                return Some(key);
            }
            self.wait_pq[level].remove(&(key, seq, slot));
            self.cl_mut(slot).pq = None;
            let mut diff = (self.now - self.cl(slot).t_c).min(MBUFFER);
            self.change_class_mode(slot, &mut diff);
            if self.cl(slot).mode != Mode::CanSend {
                self.add_to_wait_tree(slot, diff);
            }
        }
    }

    /// `htb_charge_class`: the leaf and every ancestor pay for `len` bytes
    /// sent at `level`; classes below `level` borrowed.
    fn charge_class(&mut self, slot: usize, level: usize, len: u64) {
        let now = self.now;
        let mut next = Some(slot);
        while let Some(i) = next {
            let cl = self.cl_mut(i);
            let diff = (now - cl.t_c).min(MBUFFER);
            if cl.level >= level {
                if cl.level == level {
                    cl.lends += 1;
                }
                cl.accnt_tokens(len, diff);
            } else {
                cl.borrows += 1;
                cl.tokens += diff;
            }
            cl.accnt_ctokens(len, diff);
            cl.t_c = now;
            if cl.level != 0 {
                cl.bytes += len;
                cl.packets += 1;
            }
            let old_mode = cl.mode;
            let mut diff = 0;
            self.change_class_mode(i, &mut diff);
            if old_mode != self.cl(i).mode {
                if old_mode != Mode::CanSend {
                    self.remove_from_wait_tree(i);
                }
                if self.cl(i).mode != Mode::CanSend {
                    self.add_to_wait_tree(i, diff);
                }
            }
            next = self.cl(i).parent;
        }
    }

    // ----- dequeue (5.5) -----

    /// `htb_lookup_leaf`: descend from the row pointer through feed
    /// pointers to a leaf, rewinding exhausted feeds and advancing the
    /// pointer one level up.
    fn lookup_leaf(&mut self, level: usize, prio: usize) -> Option<usize> {
        let mut stack = [SetRef::Row(level, prio); MAXDEPTH];
        let mut sp = 0usize;
        for _ in 0..65535 {
            let set = self.set_mut(stack[sp]);
            if set.is_empty() {
                return None;
            }
            if set.ptr.is_none() && set.last_ptr_id != 0 {
                set.ptr = set.next_upper(set.last_ptr_id);
            }
            set.last_ptr_id = 0;
            match set.ptr {
                None => {
                    set.ptr = set.members.first().map(|m| m.0);
                    if sp > 0 {
                        sp -= 1;
                        let up = self.set_mut(stack[sp]);
                        up.ptr?;
                        up.advance();
                    }
                }
                Some(classid) => {
                    let slot = set.slot_of(classid)?;
                    if self.cl(slot).level == 0 {
                        return Some(slot);
                    }
                    if sp + 1 >= MAXDEPTH {
                        return None;
                    }
                    sp += 1;
                    stack[sp] = SetRef::Feed(slot, prio);
                }
            }
        }
        None
    }

    /// Advances the DRR pointer that selected `slot` at `level`.
    fn next_in_drr(&mut self, slot: usize, level: usize, prio: usize) {
        let set = match (level, self.cl(slot).parent) {
            (0, _) | (_, None) => SetRef::Row(0, prio),
            (_, Some(p)) => SetRef::Feed(p, prio),
        };
        self.set_mut(set).advance();
    }

    /// Runs `op` on a leaf's qdisc, keeping our qlen/backlog in step with
    /// the child and counting what it dropped. Returns `op`'s result and
    /// the number of frames the child dropped.
    fn leaf_op<R>(
        &mut self,
        slot: usize,
        drops: &mut Drops,
        op: impl FnOnce(&mut dyn Qdisc, &mut Drops) -> R,
    ) -> Option<(R, u64)> {
        let before = drops.len();
        let leaf = self.cl_mut(slot).leaf.as_mut()?;
        let (q0, b0) = (leaf.qlen(), leaf.backlog());
        let r = op(leaf.as_mut(), drops);
        let (q1, b1) = (leaf.qlen(), leaf.backlog());
        self.qlen = (self.qlen + q1).saturating_sub(q0);
        self.backlog = (self.backlog + b1).saturating_sub(b0);
        let dropped = (drops.len() - before) as u64;
        self.stats.drops += dropped;
        Some((r, dropped))
    }

    fn leaf_qlen(&self, slot: usize) -> u32 {
        self.cl(slot).leaf.as_ref().map_or(0, |q| q.qlen())
    }

    /// `htb_dequeue_tree`: DRR among the leaves reachable at (level, prio).
    fn dequeue_tree(
        &mut self,
        prio: usize,
        level: usize,
        now: Instant,
        drops: &mut Drops,
    ) -> Option<Packet> {
        let mut start = self.lookup_leaf(level, prio);
        let mut cur = start;
        let (slot, pkt) = loop {
            let slot = cur?;
            if self.leaf_qlen(slot) > 0 {
                if let Some((Some(pkt), _)) = self.leaf_op(slot, drops, |q, d| q.dequeue(now, d)) {
                    break (slot, pkt);
                }
                if self.leaf_qlen(slot) > 0 {
                    // A shaping child held its frames back: try the next.
                    if !self.cl(slot).non_work_conserving {
                        self.cl_mut(slot).non_work_conserving = true;
                        if !self.non_wc.contains(&slot) {
                            self.non_wc.push(slot);
                        }
                    }
                    self.next_in_drr(slot, level, prio);
                    cur = self.lookup_leaf(level, prio);
                    if cur == start {
                        return None;
                    }
                    continue;
                }
                // Otherwise the child dropped its last frames (AQM at
                // dequeue); like the kernel's qlen_notify, deactivate.
            }
            // An empty leaf (drops inside the child, or a graft): deactivate
            // and skip it.
            self.deactivate(slot);
            if self.row_mask[level] & (1 << prio) == 0 {
                return None;
            }
            let next = self.lookup_leaf(level, prio);
            if cur == start {
                start = next;
            }
            cur = next;
        };
        let len = pkt.len as u64;
        let cl = self.cl_mut(slot);
        cl.bytes += len;
        cl.packets += 1;
        cl.deficit[level] -= len as i64;
        if cl.deficit[level] < 0 {
            cl.deficit[level] += cl.quantum;
            self.next_in_drr(slot, level, prio);
        }
        if self.leaf_qlen(slot) == 0 {
            self.deactivate(slot);
        }
        self.charge_class(slot, level, len);
        Some(pkt)
    }

    fn dequeue_inner(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        if let Some(p) = self.direct.pop_front() {
            self.qlen -= 1;
            self.backlog -= p.len as u64;
            return Some(p);
        }
        if self.qlen == 0 {
            return None;
        }
        self.now = now.nanos() as i64;
        let mut next_event = self.now + 5 * NS_PER_SEC as i64;
        for level in 0..MAXDEPTH {
            let mut event = self.near_ev_cache[level];
            if self.now >= event {
                event = self
                    .do_events(level)
                    .unwrap_or(self.now + NS_PER_SEC as i64);
                self.near_ev_cache[level] = event;
            }
            next_event = next_event.min(event);
            for prio in bits(self.row_mask[level]) {
                if let Some(p) = self.dequeue_tree(prio, level, now, drops) {
                    return Some(p);
                }
            }
        }
        self.stalled = true;
        self.watchdog = Instant::from_nanos(next_event.max(self.now) as u64);
        None
    }

    // ----- enqueue (5.6) -----

    /// `htb_classify`: `skb->priority` naming the qdisc (direct) or a leaf;
    /// else the filters of the qdisc (or of the inner class `priority`
    /// names), following flowids of inner classes into their filters; else
    /// the default class; else the direct queue. A filter's `skbedit
    /// priority` action rewrites `skb->priority`.
    fn classify(&self, pkt: &mut Packet) -> Target {
        let priority = pkt.meta.priority;
        if priority == self.ctx.handle {
            return Target::Direct;
        }
        let mut chain = &self.filters;
        if let Some(slot) = self.find(priority) {
            if self.cl(slot).level == 0 {
                return Target::Leaf(slot);
            }
            chain = &self.cl(slot).filters;
        }
        for _ in 0..MAXDEPTH {
            let Some((flowid, skbedit)) = chain.classify(&pkt.meta) else {
                break;
            };
            if let Some(p) = skbedit {
                pkt.meta.priority = p;
            }
            if flowid == self.ctx.handle {
                return Target::Direct;
            }
            let Some(slot) = self.find(flowid) else {
                break;
            };
            if self.cl(slot).level == 0 {
                return Target::Leaf(slot);
            }
            chain = &self.cl(slot).filters;
        }
        let def = tc_h_make(tc_h_major(self.ctx.handle), self.defcls as u16);
        match self.find(def) {
            Some(slot) if self.cl(slot).level == 0 => Target::Leaf(slot),
            _ => Target::Direct,
        }
    }

    // ----- bookkeeping -----

    /// Hands frames freed by class operations to a drop sink.
    fn flush_purged(&mut self, drops: &mut Drops) {
        for p in self.purged.drain(..) {
            drops.push(p, DropReason::QdiscReset);
        }
    }

    /// Purges a leaf's queue (`qdisc_purge_queue`): frames are dropped.
    fn purge_leaf(&mut self, slot: usize) {
        let Some(leaf) = self.cl_mut(slot).leaf.as_mut() else {
            return;
        };
        let frames = leaf.drain_all();
        for p in &frames {
            self.qlen = self.qlen.saturating_sub(1);
            self.backlog = self.backlog.saturating_sub(p.len as u64);
        }
        self.stats.drops += frames.len() as u64;
        self.purged.extend(frames);
    }

    /// After children were handed out mutably: recount qlen/backlog and put
    /// each leaf's activity in line with its queue.
    fn resync(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        self.stalled = false;
        self.qlen = self.direct.len() as u32 + self.parked.is_some() as u32;
        self.backlog = self.direct.iter().map(|p| p.len as u64).sum::<u64>()
            + self.parked.as_ref().map_or(0, |p| p.len as u64);
        for slot in 0..self.classes.len() {
            let Some(cl) = self.classes[slot].as_ref() else {
                continue;
            };
            let Some(leaf) = cl.leaf.as_ref() else {
                continue;
            };
            let (q, b) = (leaf.qlen(), leaf.backlog());
            self.qlen += q;
            self.backlog += b;
            if q > 0 {
                self.activate(slot);
            } else {
                self.deactivate(slot);
            }
        }
    }

    /// Empties rows, feeds and event queues (`htb_reset` minus the frames).
    fn clear_schedule(&mut self) {
        for cl in self.classes.iter_mut().flatten() {
            for f in cl.feeds.iter_mut() {
                f.clear();
            }
            cl.prio_activity = 0;
            cl.mode = Mode::CanSend;
            cl.pq = None;
        }
        for level in 0..MAXDEPTH {
            for row in self.rows[level].iter_mut() {
                row.clear();
            }
            self.wait_pq[level].clear();
        }
        self.row_mask = [0; MAXDEPTH];
        self.qlen = 0;
        self.backlog = 0;
        self.stalled = false;
        self.dirty = false;
    }

    /// Normalises a class id given with major 0 (`:10`) to ours.
    fn full_id(&self, h: Handle) -> Handle {
        if tc_h_major(h) == 0 {
            tc_h_make(tc_h_major(self.ctx.handle), tc_h_minor(h))
        } else {
            h
        }
    }

    /// One class as `tc -s -d class show` prints it; `leaf` is the handle
    /// of its qdisc when that is visible (non-zero).
    fn class_dump(&self, cl: &Class, leaf: Option<Handle>) -> ClassDump {
        let (options, options_json) = cl.options_text(false);
        let (options_detail, _) = cl.options_text(true);
        let (qlen, backlog) = cl.leaf.as_ref().map_or((0, 0), |q| (q.qlen(), q.backlog()));
        // htb_dump_class_stats: the buckets as `__s32` psched ticks.
        let ticks = |ns| {
            let t = ns_to_ticks(ns).clamp(i64::from(i32::MIN), i64::from(i32::MAX));
            i32::try_from(t).unwrap_or_default()
        };
        let (tokens, ctokens) = (ticks(cl.tokens), ticks(cl.ctokens));
        ClassDump {
            kind: "htb".into(),
            classid: cl.classid,
            parent: cl.parent.map_or(TC_H_ROOT, |p| self.cl(p).classid),
            leaf,
            options,
            options_detail,
            options_json,
            typed: ClassOptions::None,
            stats: Some(QdiscStats {
                bytes: cl.bytes,
                packets: cl.packets,
                drops: cl.drops,
                overlimits: cl.overlimits,
                requeues: 0,
                backlog,
                qlen,
            }),
            queue: QdiscStats::default(),
            xstats: Some(Xstats::HtbClass(HtbXstats {
                lends: cl.lends,
                borrows: cl.borrows,
                giants: 0,
                tokens,
                ctokens,
            })),
        }
    }

    /// `default` as tc prints it (`%#llx`: `0` or `0x20`).
    fn default_text(&self) -> String {
        if self.defcls == 0 {
            "0".to_string()
        } else {
            format!("{:#x}", self.defcls)
        }
    }

    fn options_text(&self, detail: bool) -> String {
        let default = self.default_text();
        let ver = if detail {
            format!(" ver {}.{}", HTB_VER.0, HTB_VER.1)
        } else {
            String::new()
        };
        format!(
            "r2q {} default {} direct_packets_stat {}{} direct_qlen {}",
            self.r2q, default, self.direct_pkts, ver, self.direct_qlen
        )
    }
}

/// The set bits of a prio mask, lowest first.
fn bits(mask: u8) -> impl Iterator<Item = usize> {
    (0..NUMPRIO).filter(move |p| mask & (1 << p) != 0)
}

impl Qdisc for Htb {
    fn kind(&self) -> &'static str {
        "htb"
    }

    fn enqueue(&mut self, mut pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        self.flush_purged(drops);
        self.resync();
        self.clock = self.clock.max(now);
        self.stalled = false;
        match self.classify(&mut pkt) {
            Target::Direct => {
                if (self.direct.len() as u64) < self.direct_qlen as u64 {
                    pkt.meta.enqueue_time = now;
                    self.qlen += 1;
                    self.backlog += pkt.len as u64;
                    self.direct.push_back(pkt);
                    self.direct_pkts += 1;
                    Verdict::Queued
                } else {
                    self.stats.reject(pkt, DropReason::QueueFull, drops)
                }
            }
            Target::Leaf(slot) => {
                if self.cl(slot).leaf.is_none() {
                    return self.stats.reject(pkt, DropReason::Unclassified, drops);
                }
                let (verdict, dropped) = self
                    .leaf_op(slot, drops, |q, d| q.enqueue(pkt, now, d))
                    .unwrap_or((Verdict::Dropped, 0));
                self.cl_mut(slot).drops += dropped;
                if self.leaf_qlen(slot) > 0 {
                    self.activate(slot);
                }
                verdict
            }
        }
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        self.flush_purged(drops);
        self.resync();
        self.clock = self.clock.max(now);
        let pkt = match self.parked.take() {
            Some(p) => {
                self.qlen -= 1;
                self.backlog -= p.len as u64;
                p
            }
            None => self.dequeue_inner(now, drops)?,
        };
        self.stalled = false;
        self.stats.count_sent(pkt.len);
        Some(pkt)
    }

    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        self.flush_purged(drops);
        self.resync();
        self.clock = self.clock.max(now);
        if self.parked.is_none() {
            if let Some(p) = self.dequeue_inner(now, drops) {
                self.qlen += 1;
                self.backlog += p.len as u64;
                self.parked = Some(p);
            }
        }
        self.parked.as_ref()
    }

    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        if self.qlen() == 0 {
            return None;
        }
        if self.dirty || !self.stalled || self.parked.is_some() || !self.direct.is_empty() {
            return Some(now);
        }
        let mut t = self.watchdog;
        for cl in self.non_wc.iter().filter_map(|&s| self.classes[s].as_ref()) {
            if let (true, Some(leaf)) = (cl.non_work_conserving, &cl.leaf) {
                // A leaf that could send now is held back by HTB's own
                // tokens (its class waits for `watchdog`), not by itself:
                // only a later leaf wake-up is one to wait for.
                if let Some(w) = leaf.next_wakeup(now).filter(|w| *w > now) {
                    t = t.min(w);
                }
            }
        }
        Some(t.max(now))
    }

    fn qlen(&self) -> u32 {
        if !self.dirty {
            return self.qlen;
        }
        let leaves: u32 = self
            .classes
            .iter()
            .flatten()
            .filter_map(|c| c.leaf.as_ref())
            .map(|q| q.qlen())
            .sum();
        leaves + self.direct.len() as u32 + self.parked.is_some() as u32
    }

    fn backlog(&self) -> u64 {
        if !self.dirty {
            return self.backlog;
        }
        let leaves: u64 = self
            .classes
            .iter()
            .flatten()
            .filter_map(|c| c.leaf.as_ref())
            .map(|q| q.backlog())
            .sum();
        leaves
            + self.direct.iter().map(|p| p.len as u64).sum::<u64>()
            + self.parked.as_ref().map_or(0, |p| p.len as u64)
    }

    fn counters(&self) -> QdiscStats {
        self.stats
    }

    fn reset(&mut self, drops: &mut Drops) {
        self.flush_purged(drops);
        if let Some(p) = self.parked.take() {
            drops.push(p, DropReason::QdiscReset);
        }
        for p in self.direct.drain(..) {
            drops.push(p, DropReason::QdiscReset);
        }
        for cl in self.classes.iter_mut().flatten() {
            if let Some(leaf) = cl.leaf.as_mut() {
                leaf.reset(drops);
            }
        }
        self.clear_schedule();
    }

    fn dump(&self, now: Instant) -> QdiscDump {
        self.dump_listing(now, FlowListing::All)
    }

    fn dump_listing(&self, now: Instant, listing: FlowListing) -> QdiscDump {
        let mut options_json = Map::new();
        options_json.insert("r2q".into(), json!(self.r2q));
        options_json.insert("default".into(), json!(self.default_text()));
        options_json.insert("direct_packets_stat".into(), json!(self.direct_pkts));
        options_json.insert("direct_qlen".into(), json!(self.direct_qlen));
        let mut order: Vec<&Class> = self.classes.iter().flatten().collect();
        order.sort_by_key(|c| c.classid);
        let mut classes = Vec::with_capacity(order.len());
        let mut children = Vec::new();
        for cl in order {
            // Default pfifo leaves (handle 0) are invisible in `tc qdisc show`.
            let child = cl
                .leaf
                .as_ref()
                .map(|q| q.dump_listing(now, listing))
                .filter(|d| d.handle != 0);
            classes.push(self.class_dump(cl, child.as_ref().map(|d| d.handle)));
            children.extend(child);
        }
        QdiscDump {
            kind: "htb".into(),
            handle: self.ctx.handle,
            parent: self.ctx.parent,
            options: self.options_text(false),
            options_detail: self.options_text(true),
            options_json,
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
        let mut out: Vec<Packet> = self.parked.take().into_iter().collect();
        out.extend(self.direct.drain(..));
        let mut order: Vec<usize> = (0..self.classes.len())
            .filter(|&s| self.classes[s].as_ref().is_some_and(|c| c.leaf.is_some()))
            .collect();
        order.sort_by_key(|&s| self.cl(s).classid);
        for slot in order {
            if let Some(leaf) = self.cl_mut(slot).leaf.as_mut() {
                out.extend(leaf.drain_all());
            }
        }
        self.clear_schedule();
        out
    }
}

impl Classful for Htb {
    fn flush_freed(&mut self, drops: &mut Drops) {
        self.flush_purged(drops);
    }

    fn add_class(
        &mut self,
        classid: Handle,
        parent: Handle,
        options: &ClassOptions,
    ) -> Result<(), TcError> {
        let args = &options.words()[..];
        let classid = self.full_id(classid);
        let major = tc_h_major(self.ctx.handle);
        if tc_h_major(classid) != major || tc_h_minor(classid) == 0 {
            return Err(TcError::new(format!(
                "Error: classid {} does not belong to htb {major:x}: (use classid {major:x}:MINOR with MINOR 1..ffff).",
                fmt_classid(classid)
            )));
        }
        if self.find(classid).is_some() {
            return Err(TcError::new(format!(
                "RTNETLINK answers: File exists (class {} already exists; use `tc class change` to modify it).",
                fmt_classid(classid)
            )));
        }
        let parent_slot = if parent == TC_H_ROOT || tc_h_minor(parent) == 0 {
            if parent != TC_H_ROOT && tc_h_major(parent) != major && tc_h_major(parent) != 0 {
                return Err(TcError::new(format!(
                    "Error: parent {:x}: is not this htb ({major:x}:).",
                    tc_h_major(parent)
                )));
            }
            None
        } else {
            let p = self.full_id(parent);
            Some(self.find(p).ok_or_else(|| {
                TcError::new(format!(
                    "Error: parent class {} does not exist (add it before its children).",
                    fmt_classid(p)
                ))
            })?)
        };
        let opts = ClassOpts::parse(args)?;
        if let Some(gp) = parent_slot.and_then(|p| self.cl(p).parent) {
            if self.cl(gp).level < 2 {
                return Err(TcError::new(
                    "Error: sch_htb: tree is too deep (HTB allows 8 levels: a root class, 6 inner levels and leaves).",
                ));
            }
        }
        self.resync();
        if let Some(p) = parent_slot {
            if self.cl(p).level == 0 {
                // Turn the parent leaf into an inner class.
                self.purge_leaf(p);
                self.deactivate(p);
                if self.cl(p).mode != Mode::CanSend {
                    self.remove_from_wait_tree(p);
                    self.cl_mut(p).mode = Mode::CanSend;
                }
                let level = self.cl(p).parent.map_or(MAXDEPTH, |gp| self.cl(gp).level) - 1;
                let cl = self.cl_mut(p);
                cl.level = level;
                cl.leaf = None;
                cl.non_work_conserving = false;
                for f in cl.feeds.iter_mut() {
                    f.clear();
                }
            }
        }
        let mut cl = Class {
            classid,
            parent: parent_slot,
            children: 0,
            level: 0,
            prio: 0,
            quantum: 0,
            opts: opts.clone(),
            rate: PschedRate::new(opts.rate),
            ceil: PschedRate::new(opts.ceil),
            buffer: 0,
            cbuffer: 0,
            tokens: 0,
            ctokens: 0,
            t_c: self.clock.nanos() as i64,
            mode: Mode::CanSend,
            prio_activity: 0,
            pq: None,
            leaf: Some(Box::new(Fifo::new(
                FifoKind::Pfifo,
                self.ctx.child(0, classid),
            ))),
            deficit: [0; MAXDEPTH],
            feeds: Default::default(),
            filters: FilterChain::new(),
            non_work_conserving: false,
            bytes: 0,
            packets: 0,
            drops: 0,
            overlimits: 0,
            lends: 0,
            borrows: 0,
        };
        self.warnings.extend(cl.apply(opts, self.r2q));
        cl.tokens = cl.buffer;
        cl.ctokens = cl.cbuffer;
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.classes[s] = Some(cl);
                s
            }
            None => {
                self.classes.push(Some(cl));
                self.classes.len() - 1
            }
        };
        self.ids.insert(classid, slot);
        if let Some(p) = parent_slot {
            self.cl_mut(p).children += 1;
        }
        self.stalled = false;
        Ok(())
    }

    fn change_class(&mut self, classid: Handle, options: &ClassOptions) -> Result<(), TcError> {
        let args = &options.words()[..];
        let classid = self.full_id(classid);
        let slot = self.find(classid).ok_or_else(|| {
            TcError::new(format!(
                "RTNETLINK answers: No such file or directory (class {} does not exist; use `tc class add`).",
                fmt_classid(classid)
            ))
        })?;
        let opts = ClassOpts::parse(args)?;
        let r2q = self.r2q;
        let warning = self.cl_mut(slot).apply(opts, r2q);
        self.warnings.extend(warning);
        self.stalled = false;
        Ok(())
    }

    fn delete_class(&mut self, classid: Handle, drops: &mut Drops) -> Result<(), TcError> {
        let classid = self.full_id(classid);
        let slot = self.find(classid).ok_or_else(|| {
            TcError::new(format!(
                "RTNETLINK answers: No such file or directory (class {} does not exist).",
                fmt_classid(classid)
            ))
        })?;
        if self.cl(slot).children > 0 {
            return Err(TcError::new(format!(
                "Error: HTB class in use (class {} has child classes; delete them first).",
                fmt_classid(classid)
            )));
        }
        self.resync();
        let parent = self.cl(slot).parent;
        let last_child =
            self.cl(slot).level == 0 && parent.is_some_and(|p| self.cl(p).children <= 1);
        self.purge_leaf(slot);
        self.flush_purged(drops);
        self.ids.remove(&classid);
        if let Some(p) = parent {
            self.cl_mut(p).children -= 1;
        }
        self.deactivate(slot);
        if self.cl(slot).mode != Mode::CanSend {
            self.remove_from_wait_tree(slot);
        }
        if let (true, Some(p)) = (last_child, parent) {
            // htb_parent_to_leaf: the parent becomes a leaf with a new pfifo.
            if self.cl(p).mode != Mode::CanSend {
                self.remove_from_wait_tree(p);
            }
            let ctx = self.ctx.child(0, self.cl(p).classid);
            let t_c = self.clock.nanos() as i64;
            let cl = self.cl_mut(p);
            cl.level = 0;
            for f in cl.feeds.iter_mut() {
                f.clear();
            }
            cl.leaf = Some(Box::new(Fifo::new(FifoKind::Pfifo, ctx)));
            cl.deficit = [0; MAXDEPTH];
            cl.tokens = cl.buffer;
            cl.ctokens = cl.cbuffer;
            cl.t_c = t_c;
            cl.mode = Mode::CanSend;
        }
        self.classes[slot] = None;
        self.free_slots.push(slot);
        self.stalled = false;
        Ok(())
    }

    /// Replaces a leaf's qdisc. The old one is returned with its frames
    /// (the caller moves them on with `drain_all` or drops them).
    fn graft(
        &mut self,
        classid: Handle,
        child: Box<dyn Qdisc>,
    ) -> Result<Option<Box<dyn Qdisc>>, TcError> {
        let classid = self.full_id(classid);
        let slot = self.find(classid).ok_or_else(|| {
            TcError::new(format!(
                "Error: class {} does not exist (add it with `tc class add` first).",
                fmt_classid(classid)
            ))
        })?;
        if self.cl(slot).level != 0 {
            return Err(TcError::new(format!(
                "Error: class {} is an inner class (it has child classes); qdiscs attach to leaf classes only.",
                fmt_classid(classid)
            )));
        }
        self.dirty = true;
        let cl = self.cl_mut(slot);
        cl.non_work_conserving = false;
        Ok(cl.leaf.replace(child))
    }

    fn child_mut(&mut self, classid: Handle) -> Option<&mut Box<dyn Qdisc>> {
        let slot = self.find(self.full_id(classid))?;
        self.dirty = true;
        self.cl_mut(slot).leaf.as_mut()
    }

    fn children_mut(&mut self) -> Vec<&mut Box<dyn Qdisc>> {
        self.dirty = true;
        self.classes
            .iter_mut()
            .flatten()
            .filter_map(|c| c.leaf.as_mut())
            .collect()
    }

    fn child_ctx(&self, handle: Handle, parent: Handle) -> QdiscCtx {
        self.ctx.child(handle, parent)
    }

    fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

impl FilterHost for Htb {
    fn filter_qdisc(&self) -> Handle {
        self.ctx.handle
    }

    /// The qdisc's chain (`parent 1:` or none) or a class's (`parent 1:1`,
    /// used when classification reaches that inner class).
    fn chain_mut(&mut self, parent: Option<Handle>) -> Result<&mut FilterChain, TcError> {
        let major = tc_h_major(self.ctx.handle);
        match parent {
            None => Ok(&mut self.filters),
            Some(p) if p == TC_H_ROOT || p == self.ctx.handle => Ok(&mut self.filters),
            Some(p) => {
                let p = self.full_id(p);
                if tc_h_major(p) != major {
                    return Err(TcError::new(format!(
                        "Error: filter parent {} is not this htb ({major:x}:).",
                        fmt_classid(p)
                    )));
                }
                let slot = self.find(p).ok_or_else(|| {
                    TcError::new(format!(
                        "Error: filter parent class {} does not exist (add the class first).",
                        fmt_classid(p)
                    ))
                })?;
                Ok(&mut self.cl_mut(slot).filters)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::filter::Filter;
    use crate::qdisc::testutil::{drain_codel_child, pkt};
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;

    const SEC: u64 = NS_PER_SEC;
    /// 1 Gbit/s link: ns to serialise `len` bytes.
    fn gig(len: u32) -> u64 {
        len as u64 * 8
    }

    fn cid(s: &str) -> Handle {
        let (maj, min) = s.split_once(':').unwrap();
        let maj = u16::from_str_radix(maj, 16).unwrap();
        let min = if min.is_empty() {
            0
        } else {
            u16::from_str_radix(min, 16).unwrap()
        };
        tc_h_make(maj, min)
    }

    fn ctx() -> QdiscCtx {
        QdiscCtx {
            handle: cid("1:"),
            ..QdiscCtx::default()
        }
    }

    fn htb(args: &str) -> Htb {
        let args: Vec<&str> = args.split_whitespace().collect();
        Htb::from_args(ctx(), &args).unwrap()
    }

    fn add(q: &mut Htb, classid: &str, parent: &str, args: &str) {
        let args: Vec<&str> = args.split_whitespace().collect();
        q.add_class(
            cid(classid),
            cid(parent),
            &crate::qdisc::testutil::cwords(&args),
        )
        .unwrap();
    }

    fn add_err(q: &mut Htb, classid: &str, parent: &str, args: &str) -> String {
        let args: Vec<&str> = args.split_whitespace().collect();
        q.add_class(
            cid(classid),
            cid(parent),
            &crate::qdisc::testutil::cwords(&args),
        )
        .unwrap_err()
        .0
    }

    /// A frame steered to `classid` through skb->priority.
    fn to(classid: Handle, id: u64, len: u32) -> Packet {
        let mut p = pkt(id, len);
        p.meta.priority = classid;
        p
    }

    fn class<'a>(d: &'a QdiscDump, classid: &str) -> &'a ClassDump {
        d.classes
            .iter()
            .find(|c| c.classid == cid(classid))
            .unwrap()
    }

    fn hx(c: &ClassDump) -> HtbXstats {
        match c.xstats {
            Some(Xstats::HtbClass(x)) => x,
            other => panic!("{other:?}"),
        }
    }

    /// The common setup of these tests: root 1:1 100mbit, leaves 1:10 and
    /// 1:20 with the given options.
    fn common(a: &str, b: &str) -> Htb {
        let mut q = htb("default 20");
        add(&mut q, "1:1", "1:", "rate 100mbit ceil 100mbit");
        add(&mut q, "1:10", "1:1", a);
        add(&mut q, "1:20", "1:1", b);
        q
    }

    /// Result of driving the qdisc as a link would.
    struct Run {
        bytes: HashMap<Handle, u64>,
        end: Instant,
        /// (time, classid, len) of each departure.
        log: Vec<(u64, Handle, u32)>,
    }

    /// Keeps `backlogged` classes topped up with `len`-byte frames and
    /// dequeues like a link of 1 Gbit/s: right after a frame finished, or at
    /// `next_wakeup` when the qdisc held everything back.
    fn run(q: &mut Htb, from: Instant, dur: u64, backlogged: &[Handle], len: u32) -> Run {
        let mut d = Drops::new();
        let mut t = from;
        let until = from + dur;
        let mut r = Run {
            bytes: HashMap::new(),
            end: t,
            log: Vec::new(),
        };
        let mut id = 0;
        let mut idle_polls = 0u64;
        for &c in backlogged {
            for _ in 0..8 {
                q.enqueue(to(c, id, len), t, &mut d);
                id += 1;
            }
        }
        while t < until {
            match q.dequeue(t, &mut d) {
                Some(p) => {
                    // Keep the class backlogged: a new frame replaces it.
                    let c = p.meta.priority;
                    q.enqueue(to(c, id, len), t, &mut d);
                    id += 1;
                    *r.bytes.entry(c).or_default() += p.len as u64;
                    r.log.push((t.nanos(), c, p.len));
                    t += gig(p.len);
                }
                None => {
                    let w = q.next_wakeup(t).expect("backlogged qdisc has a wakeup");
                    assert!(w > t, "wakeup {w:?} not after a failed poll at {t:?}");
                    idle_polls += 1;
                    t = w;
                }
            }
        }
        assert!(d.is_empty());
        assert!(
            idle_polls <= r.log.len() as u64 * 4 + 10,
            "{idle_polls} idle polls"
        );
        r.end = t;
        r
    }

    fn mbit(bytes: u64, ns: u64) -> f64 {
        bytes as f64 * 8.0 / ns as f64 * 1000.0
    }

    /// The rates (Mbit/s) of leaves 1:10 and 1:20 of `common(a, b)`, both
    /// kept backlogged with 1514-byte frames for one second.
    fn both_backlogged_rates(a: &str, b: &str) -> (f64, f64) {
        let mut q = common(a, b);
        let (ca, cb) = (cid("1:10"), cid("1:20"));
        let r = run(&mut q, Instant::ZERO, SEC, &[ca, cb], 1514);
        let ns = r.end.nanos();
        (mbit(r.bytes[&ca], ns), mbit(r.bytes[&cb], ns))
    }

    #[test]
    fn vector_h1_static_values() {
        // 30mbit: 1600 B take 426.67 µs, which tc cuts to 426 µs before
        // converting (6656 ticks, not a rounded-up 6667) and prints back as
        // 425 µs worth of bytes, 1593 B; the kernel on this machine shows
        // exactly that (see units::tc_calc_xmittime).
        let rows = [
            ("1mbit", 200_000, 1600, 12_500, None),
            ("10mbit", 20_000, 1600, 125_000, None),
            ("20mbit", 10_000, 1600, 200_000, Some("big")),
            ("30mbit", 6_656, 1593, 200_000, Some("big")),
            ("100mbit", 2_000, 1600, 200_000, Some("big")),
            ("50kbit", 4_000_000, 1600, 1_000, Some("small")),
        ];
        for (rate, ticks, burst, quantum, warn) in rows {
            let mut q = htb("default 20");
            add(&mut q, "1:1", "1:", "rate 100mbit ceil 100mbit");
            assert_eq!(
                q.take_warnings().len(),
                1,
                "the root class starts as a leaf"
            );
            add(&mut q, "1:10", "1:1", &format!("rate {rate}"));
            let d = q.dump(Instant::ZERO);
            let c = class(&d, "1:10");
            assert_eq!(i64::from(hx(c).tokens), ticks, "{rate}");
            assert_eq!(i64::from(hx(c).ctokens), ticks, "{rate}");
            assert!(
                c.options
                    .contains(&format!("burst {burst}b cburst {burst}b")),
                "{rate}: {}",
                c.options
            );
            assert!(
                c.options_detail
                    .starts_with(&format!("prio 0 quantum {quantum} ")),
                "{rate}: {}",
                c.options_detail
            );
            match warn {
                Some(w) => assert_eq!(
                    q.take_warnings(),
                    vec![format!(
                        "quantum of class 10010 is {w}. Consider r2q change."
                    )]
                ),
                None => assert!(q.take_warnings().is_empty(), "{rate}"),
            }
        }
    }

    #[test]
    fn vector_h1_class_lines_and_qdisc_line() {
        let q = common("rate 30mbit ceil 100mbit", "rate 70mbit ceil 100mbit");
        let d = q.dump(Instant::ZERO);
        assert_eq!(
            d.options,
            "r2q 10 default 0x20 direct_packets_stat 0 direct_qlen 1000"
        );
        assert_eq!(
            d.options_detail,
            "r2q 10 default 0x20 direct_packets_stat 0 ver 3.17 direct_qlen 1000"
        );
        let a = class(&d, "1:10");
        assert_eq!(a.parent, cid("1:1"));
        assert_eq!(a.leaf, None);
        assert_eq!(
            a.options,
            "prio 0 rate 30Mbit ceil 100Mbit burst 1593b cburst 1600b"
        );
        // As `tc -s -d class show` prints it on this machine (kernel 6.18,
        // iproute2 6.1): the cell is `/1` (see tbf::DUMPED_CELL) and the
        // 30 Mbit burst 1593b (see units::tc_calc_xmittime).
        assert_eq!(
            a.options_detail,
            "prio 0 quantum 200000 rate 30Mbit ceil 100Mbit linklayer ethernet burst 1593b/1 mpu 0b cburst 1600b/1 mpu 0b level 0"
        );
        assert_eq!(
            hx(a),
            HtbXstats {
                lends: 0,
                borrows: 0,
                giants: 0,
                tokens: 6656,
                ctokens: 2000
            }
        );
        let root = class(&d, "1:1");
        assert_eq!(root.parent, TC_H_ROOT);
        assert_eq!(
            root.options,
            "rate 100Mbit ceil 100Mbit burst 1600b cburst 1600b"
        );
        assert!(
            root.options_detail.ends_with("level 7"),
            "{}",
            root.options_detail
        );
        assert_eq!(d.classes.len(), 3);
        assert!(d.children.is_empty(), "default pfifo leaves are invisible");
        assert_eq!(
            htb("").dump(Instant::ZERO).options,
            "r2q 10 default 0 direct_packets_stat 0 direct_qlen 1000"
        );
    }

    #[test]
    fn vector_u12_default_is_hex_and_qdisc_args_validate() {
        assert_eq!(htb("default 20").defcls, 0x20);
        assert_eq!(
            htb("def 0x1f r2q 5 direct_qlen 7")
                .dump(Instant::ZERO)
                .options,
            "r2q 5 default 0x1f direct_packets_stat 0 direct_qlen 7"
        );
        let e = Htb::from_args(ctx(), &["default", "zz"]).err().unwrap().0;
        assert!(e.contains("Illegal \"default\": \"zz\""), "{e}");
        let e = Htb::from_args(ctx(), &["bogus"]).err().unwrap().0;
        assert!(e.contains("What is \"bogus\"?"), "{e}");
        assert!(Htb::from_args(ctx(), &["r2q"]).is_err());
        assert!(Htb::from_args(ctx(), &["offload"]).is_err());
        assert_eq!(htb("r2q 0").r2q, 1);
        let mut q = htb("");
        assert!(q
            .change(
                &crate::qdisc::testutil::qwords(&["default", "10"]),
                Instant::ZERO,
                &mut Drops::new()
            )
            .is_err());
    }

    #[test]
    fn class_args_validate() {
        let mut q = htb("");
        assert!(add_err(&mut q, "1:10", "1:", "ceil 1mbit").contains("\"rate\" is required"));
        assert!(add_err(&mut q, "1:10", "1:", "rate 1mbit rate 2mbit").contains("Double \"rate\""));
        assert!(add_err(&mut q, "1:10", "1:", "rate fast").contains("Illegal \"rate\": \"fast\""));
        assert!(add_err(&mut q, "1:10", "1:", "rate 1mbit burst 1k/3").contains("\"burst\""));
        assert!(add_err(&mut q, "1:10", "1:", "rate 1mbit mpu 70000").contains("\"mpu\""));
        assert!(
            add_err(&mut q, "1:10", "1:", "rate 1mbit colour red").contains("What is \"colour\"?")
        );
        assert!(add_err(&mut q, "1:10", "1:", "rate 1mbit prio").contains("\"prio\" needs a value"));
        assert!(add_err(&mut q, "1:10", "1:99", "rate 1mbit")
            .contains("parent class 1:99 does not exist"));
        assert!(add_err(&mut q, "2:10", "1:", "rate 1mbit").contains("does not belong"));
        add(
            &mut q,
            "1:10",
            "1:",
            "rate 1mbit prio 9 quantum 3000 burst 10k cburst 2k ceil 2mbit",
        );
        assert!(add_err(&mut q, "1:10", "1:", "rate 1mbit").contains("File exists"));
        let d = q.dump(Instant::ZERO);
        let c = class(&d, "1:10");
        assert_eq!(
            c.options,
            "prio 7 rate 1Mbit ceil 2Mbit burst 10Kb cburst 2Kb"
        );
        assert!(c.options_detail.starts_with("prio 7 quantum 3000 "));
        assert!(q.take_warnings().is_empty(), "explicit quantum: no warning");
        add(
            &mut q,
            "1:11",
            "1:",
            "rate 1mbit overhead 24 linklayer atm mpu 64",
        );
        let d = q.dump(Instant::ZERO);
        let c = class(&d, "1:11");
        assert!(
            c.options
                .contains("rate 1Mbit overhead 24 ceil 1Mbit linklayer atm"),
            "{}",
            c.options
        );
        assert!(c.options_detail.contains("mpu 64b"), "{}", c.options_detail);
    }

    #[test]
    fn vector_h3_guaranteed_rates_30_70() {
        let mut q = common("rate 30mbit ceil 100mbit", "rate 70mbit ceil 100mbit");
        let (a, b) = (cid("1:10"), cid("1:20"));
        let r = run(&mut q, Instant::ZERO, SEC, &[a, b], 1514);
        let ns = r.end.nanos();
        let ra = mbit(r.bytes[&a], ns);
        let rb = mbit(r.bytes[&b], ns);
        assert!((ra - 30.0).abs() < 0.3, "A {ra} Mbit/s");
        assert!((rb - 70.0).abs() < 0.7, "B {rb} Mbit/s");
        let d = q.dump(r.end);
        let (ca, root) = (class(&d, "1:10"), class(&d, "1:1"));
        let (xa, xroot) = (hx(ca), hx(root));
        let lended = xa.lends as i64;
        eprintln!(
            "H-3: A {ra:.3} Mbit/s, B {rb:.3} Mbit/s, A lended {lended} borrowed {}, root lended {}",
            xa.borrows, xroot.lends
        );
        assert!((lended - 2477).abs() < 30, "A lended {lended}");
        assert!(xa.borrows * 100 <= xa.lends, "A borrowed {}", xa.borrows);
        assert!(xroot.lends * 100 <= xa.lends);
        // Inner class counts what its descendants sent.
        let sent = r.bytes[&a] + r.bytes[&b];
        assert_eq!(root.stats.unwrap().bytes, sent);
        assert_eq!(d.stats.bytes, sent);
    }

    #[test]
    fn vector_h4_borrowing_up_to_ceil() {
        let mut q = common("rate 30mbit ceil 100mbit", "rate 70mbit ceil 100mbit");
        let b = cid("1:20");
        let r = run(&mut q, Instant::ZERO, SEC, &[b], 1514);
        let rb = mbit(r.bytes[&b], r.end.nanos());
        assert!((rb - 100.0).abs() < 1.0, "B {rb} Mbit/s");
        let d = q.dump(r.end);
        let (cb, root) = (class(&d, "1:20"), class(&d, "1:1"));
        let (lended, borrowed) = (hx(cb).lends, hx(cb).borrows);
        let share = lended as f64 / (lended + borrowed) as f64;
        eprintln!("H-4: B {rb:.3} Mbit/s, lended {lended} borrowed {borrowed} ({share:.4})");
        assert!((share - 0.70).abs() < 0.02, "lended share {share}");
        assert_eq!(hx(root).lends, borrowed);
        assert_eq!(hx(root).borrows, 0);
    }

    #[test]
    fn excess_goes_strictly_to_lower_prio_value() {
        let (ra, rb) = both_backlogged_rates(
            "rate 10mbit ceil 100mbit prio 1",
            "rate 10mbit ceil 100mbit prio 0",
        );
        eprintln!("prio: prio-1 class {ra:.3} Mbit/s, prio-0 class {rb:.3} Mbit/s");
        assert!((ra - 10.0).abs() < 0.3, "prio 1 gets only its rate: {ra}");
        assert!((rb - 90.0).abs() < 1.0, "prio 0 takes all excess: {rb}");
    }

    #[test]
    fn excess_split_by_quantum_not_rate() {
        // Equal rates, quanta 3:1 → the 80 Mbit/s excess splits 60/20.
        let (ra, rb) = both_backlogged_rates(
            "rate 10mbit ceil 100mbit quantum 4542",
            "rate 10mbit ceil 100mbit quantum 1514",
        );
        eprintln!("quantum 3:1: A {ra:.3} Mbit/s, B {rb:.3} Mbit/s");
        assert!((ra - 70.0).abs() < 1.5, "A {ra}");
        assert!((rb - 30.0).abs() < 1.5, "B {rb}");
    }

    #[test]
    fn ceil_is_never_exceeded() {
        let mut q = common("rate 5mbit ceil 20mbit", "rate 5mbit ceil 50mbit");
        let (a, b) = (cid("1:10"), cid("1:20"));
        let r = run(&mut q, Instant::ZERO, SEC / 2, &[a, b], 1514);
        for (c, ceil_bps) in [(a, 2_500_000u64), (b, 6_250_000)] {
            let sends: Vec<(u64, u32)> = r
                .log
                .iter()
                .filter(|e| e.1 == c)
                .map(|e| (e.0, e.2))
                .collect();
            for i in 0..sends.len() {
                let mut bytes = 0u64;
                for j in i..sends.len().min(i + 300) {
                    bytes += sends[j].1 as u64;
                    let window = sends[j].0 - sends[i].0;
                    // cburst (1600 B) plus the one-packet overdraft.
                    assert!(
                        bytes <= ceil_bps * window / SEC + 1600 + 1514,
                        "class {c:x}"
                    );
                }
            }
            let rate = mbit(sends.iter().map(|s| s.1 as u64).sum(), r.end.nanos());
            assert!(rate <= ceil_bps as f64 * 8e-6 + 0.1, "{rate}");
        }
    }

    #[test]
    fn borrowing_chains_through_three_levels() {
        let mut q = htb("");
        add(&mut q, "1:1", "1:", "rate 100mbit");
        add(&mut q, "1:2", "1:1", "rate 10mbit ceil 100mbit");
        add(&mut q, "1:20", "1:2", "rate 1mbit ceil 100mbit");
        let leaf = cid("1:20");
        let r = run(&mut q, Instant::ZERO, SEC, &[leaf], 1514);
        let rate = mbit(r.bytes[&leaf], r.end.nanos());
        assert!((rate - 100.0).abs() < 1.0, "{rate}");
        let d = q.dump(r.end);
        eprintln!("chain: leaf {rate:.3} Mbit/s");
        let (l, mid, root) = (class(&d, "1:20"), class(&d, "1:2"), class(&d, "1:1"));
        let total = r.log.len() as u64;
        let (l, mid, root) = (hx(l), hx(mid), hx(root));
        // ~1% at the leaf's rate, ~9% from 1:2, ~90% from the root.
        assert!((l.lends as f64 / total as f64 - 0.01).abs() < 0.005);
        assert!((mid.lends as f64 / total as f64 - 0.09).abs() < 0.01);
        assert!((root.lends as f64 / total as f64 - 0.90).abs() < 0.01);
        assert_eq!(l.borrows, mid.lends + root.lends);
        assert_eq!(mid.borrows, root.lends);
        assert_eq!(l.lends + l.borrows, total);
    }

    #[test]
    fn default_class_and_direct_queue() {
        // No default: unshaped direct queue, served first.
        let mut q = htb("");
        add(&mut q, "1:1", "1:", "rate 1mbit");
        let mut d = Drops::new();
        for id in 0..5 {
            q.enqueue(pkt(id, 1514), Instant::ZERO, &mut d);
        }
        q.enqueue(to(cid("1:1"), 99, 1514), Instant::ZERO, &mut d);
        let order: Vec<u64> = (0..6)
            .filter_map(|_| q.dequeue(Instant::ZERO, &mut d))
            .map(|p| p.meta.id)
            .collect();
        assert_eq!(order, vec![0, 1, 2, 3, 4, 99]);
        assert_eq!(q.direct_packets(), 5);
        assert!(q
            .dump(Instant::ZERO)
            .options
            .contains("direct_packets_stat 5"));
        // priority == handle selects direct even with a default.
        let mut q = htb("default 1");
        add(&mut q, "1:1", "1:", "rate 1mbit");
        let mut direct = pkt(7, 100);
        direct.meta.priority = cid("1:");
        q.enqueue(direct, Instant::ZERO, &mut d);
        for id in 0..4 {
            q.enqueue(pkt(id, 1514), Instant::ZERO, &mut d);
        }
        assert_eq!(q.direct_packets(), 1);
        let got: Vec<u64> = (0..5)
            .filter_map(|_| q.dequeue(Instant::ZERO, &mut d))
            .map(|p| p.meta.id)
            .collect();
        assert_eq!(
            got,
            vec![7, 0, 1],
            "direct first, then the 1mbit burst of two"
        );
        // Default pointing at an inner class falls back to direct.
        let mut q = htb("default 1");
        add(&mut q, "1:1", "1:", "rate 1mbit");
        add(&mut q, "1:10", "1:1", "rate 1mbit");
        q.enqueue(pkt(1, 100), Instant::ZERO, &mut d);
        assert_eq!(q.direct_packets(), 1);
        // Direct queue limit.
        let mut q = htb("direct_qlen 2");
        for id in 0..3 {
            q.enqueue(pkt(id, 100), Instant::ZERO, &mut d);
        }
        assert_eq!(d.len(), 1);
        assert_eq!(d.since(0)[0].1, DropReason::QueueFull);
        assert_eq!(q.stats().drops, 1);
    }

    #[test]
    fn depth_limit_is_eight_levels() {
        let mut q = htb("");
        add(&mut q, "1:1", "1:", "rate 10mbit");
        for i in 2..=8 {
            add(
                &mut q,
                &format!("1:{i}"),
                &format!("1:{}", i - 1),
                "rate 1mbit ceil 10mbit",
            );
        }
        let d = q.dump(Instant::ZERO);
        assert!(class(&d, "1:1").options_detail.ends_with("level 7"));
        assert!(class(&d, "1:7").options_detail.ends_with("level 1"));
        assert!(class(&d, "1:8").options_detail.ends_with("level 0"));
        let e = add_err(&mut q, "1:9", "1:8", "rate 1mbit");
        assert!(e.contains("tree is too deep"), "{e}");
        // Sending through all eight levels works.
        let r = run(&mut q, Instant::ZERO, SEC / 10, &[cid("1:8")], 1514);
        let rate = mbit(r.bytes[&cid("1:8")], r.end.nanos());
        assert!((rate - 10.0).abs() < 0.3, "{rate}");
    }

    #[test]
    fn class_change_at_runtime() {
        let mut q = htb("default 10");
        add(&mut q, "1:10", "1:", "rate 10mbit");
        let c = cid("1:10");
        let r = run(&mut q, Instant::ZERO, SEC / 2, &[c], 1514);
        assert!((mbit(r.bytes[&c], r.end.nanos()) - 10.0).abs() < 0.3);
        q.change_class(c, &crate::qdisc::testutil::cwords(&["rate", "20mbit"]))
            .unwrap();
        assert_eq!(q.take_warnings().len(), 1, "quantum 250000 clamped");
        let start = r.end;
        let r = run(&mut q, start, SEC / 2, &[c], 1514);
        let rate = mbit(r.bytes[&c], r.end.nanos() - start.nanos());
        assert!((rate - 20.0).abs() < 0.5, "{rate}");
        assert!(q.dump(r.end).classes[0].options.contains("rate 20Mbit"));
        assert!(q
            .change_class(
                cid("1:77"),
                &crate::qdisc::testutil::cwords(&["rate", "1mbit"])
            )
            .unwrap_err()
            .0
            .contains("No such"));
        assert!(q
            .change_class(c, &crate::qdisc::testutil::cwords(&["rate", "x"]))
            .is_err());
        assert!(q.dump(r.end).classes[0].options.contains("rate 20Mbit"));
    }

    #[test]
    fn delete_class_purges_and_restores_leaf() {
        let mut q = htb("");
        add(&mut q, "1:1", "1:", "rate 1mbit");
        add(&mut q, "1:10", "1:1", "rate 1mbit");
        let mut d = Drops::new();
        for id in 0..4 {
            q.enqueue(to(cid("1:10"), id, 1000), Instant::ZERO, &mut d);
        }
        assert!(q
            .delete_class(cid("1:1"), &mut d)
            .unwrap_err()
            .0
            .contains("HTB class in use"));
        q.dequeue(Instant::ZERO, &mut d).unwrap();
        assert_eq!(q.qlen(), 3);
        q.delete_class(cid("1:10"), &mut d).unwrap();
        assert_eq!(d.len(), 3);
        assert!(d.since(0).iter().all(|(_, r)| *r == DropReason::QdiscReset));
        assert_eq!((q.qlen(), q.backlog(), q.stats().drops), (0, 0, 3));
        assert_eq!(q.next_wakeup(Instant::ZERO), None);
        // 1:1 is a leaf again, with a fresh bucket and queue.
        let dump = q.dump(Instant::ZERO);
        assert_eq!(dump.classes.len(), 1);
        assert!(dump.classes[0].options.starts_with("prio 0 "));
        let x = hx(&dump.classes[0]);
        assert_eq!((x.tokens, x.ctokens), (200000, 200000));
        q.enqueue(to(cid("1:1"), 9, 1000), Instant::ZERO, &mut d);
        assert_eq!(q.dequeue(Instant::ZERO, &mut d).unwrap().meta.id, 9);
        assert!(q.delete_class(cid("1:10"), &mut d).is_err());
    }

    #[test]
    fn adding_a_child_to_a_leaf_purges_its_queue() {
        let mut q = htb("");
        add(&mut q, "1:1", "1:", "rate 1mbit");
        let mut d = Drops::new();
        for id in 0..3 {
            q.enqueue(to(cid("1:1"), id, 1000), Instant::ZERO, &mut d);
        }
        add(&mut q, "1:10", "1:1", "rate 1mbit");
        assert_eq!((q.qlen(), q.stats().drops), (0, 3));
        // The purged frames reach the next drop sink.
        assert_eq!(q.dequeue(Instant::ZERO, &mut d).map(|p| p.meta.id), None);
        assert_eq!(d.len(), 3);
        // Frames for the now-inner class go to the default (direct here).
        q.enqueue(to(cid("1:1"), 5, 1000), Instant::ZERO, &mut d);
        assert_eq!(q.direct_packets(), 1);
    }

    #[test]
    fn two_frame_burst_after_idle_with_default_burst() {
        let mut q = htb("default 1");
        add(&mut q, "1:1", "1:", "rate 1mbit");
        let mut d = Drops::new();
        let t0 = Instant::from_millis(500);
        for id in 0..4 {
            q.enqueue(pkt(id, 1514), t0, &mut d);
        }
        let mut out = Vec::new();
        let mut t = t0;
        while out.len() < 4 {
            match q.dequeue(t, &mut d) {
                Some(_) => out.push(t.nanos() - t0.nanos()),
                None => t = q.next_wakeup(t).unwrap(),
            }
        }
        // 1600 B of tokens: the first frame leaves 86 B, the second is an
        // overdraft; then each frame waits for 1514 B of tokens.
        assert_eq!(out, vec![0, 0, 11_424_000, 11_424_000 + 12_112_000]);
        let d = q.dump(t);
        assert_eq!(d.stats.overlimits, 3);
        assert_eq!(d.classes[0].stats.unwrap().overlimits, 3);
    }

    #[test]
    fn graft_replaces_leaf_qdisc_and_keeps_counts() {
        let mut q = htb("default 10");
        add(&mut q, "1:10", "1:", "rate 100mbit");
        let mut d = Drops::new();
        for id in 0..3 {
            q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d);
        }
        let ctx = q.child_ctx(cid("10:"), cid("1:10"));
        let new = Box::new(Fifo::with_limit(FifoKind::Bfifo, ctx, 100_000));
        let mut old = q.graft(cid("1:10"), new).unwrap().unwrap();
        assert_eq!(old.qlen(), 3);
        assert_eq!(q.qlen(), 0);
        // The caller moves the frames on.
        for p in old.drain_all() {
            q.enqueue(p, Instant::ZERO, &mut d);
        }
        assert_eq!(q.qlen(), 3);
        let dump = q.dump(Instant::ZERO);
        assert_eq!(dump.classes[0].leaf, Some(cid("10:")));
        assert_eq!(dump.children.len(), 1);
        assert_eq!(dump.children[0].kind, "bfifo");
        assert_eq!(q.dequeue(Instant::ZERO, &mut d).unwrap().meta.id, 0);
        // Changing a child directly through child_mut is noticed.
        let child = q.child_mut(cid("1:10")).unwrap();
        child
            .change(
                &crate::qdisc::QdiscOptions::Fifo(crate::qdisc::fifo::FifoOptions { limit: 0 }),
                Instant::ZERO,
                &mut d,
            )
            .unwrap();
        assert_eq!(q.qlen(), 0);
        assert_eq!(q.dequeue(Instant::ZERO, &mut d).map(|p| p.meta.id), None);
        assert_eq!(q.next_wakeup(Instant::ZERO), None);
        add(&mut q, "1:1", "1:", "rate 1mbit");
        add(&mut q, "1:2", "1:1", "rate 1mbit");
        let fifo = Box::new(Fifo::new(FifoKind::Pfifo, ctx));
        assert!(q
            .graft(cid("1:1"), fifo)
            .err()
            .unwrap()
            .0
            .contains("inner class"));
    }

    #[test]
    fn shaping_child_under_a_leaf_sets_the_wakeup() {
        let mut q = htb("default 10");
        add(&mut q, "1:10", "1:", "rate 100mbit");
        let ctx = q.child_ctx(cid("10:"), cid("1:10"));
        let tbf = crate::qdisc::tbf::Tbf::build(
            ctx,
            &crate::qdisc::QdiscOptions::Tbf(crate::qdisc::tbf::TbfOptions {
                rate: crate::qdisc::tbf::RateSpec::new(125_000),
                limit: 100_000,
                burst: Some(1514),
                ..Default::default()
            }),
        );
        q.graft(cid("1:10"), Box::new(tbf.unwrap())).unwrap();
        let mut d = Drops::new();
        for id in 0..3 {
            q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d);
        }
        assert!(q.dequeue(Instant::ZERO, &mut d).is_some());
        assert!(q.dequeue(Instant::ZERO, &mut d).is_none());
        // TBF releases the next 1000 B frame after 486 B of tokens: 3.888 ms.
        assert_eq!(
            q.next_wakeup(Instant::ZERO),
            Some(Instant::from_nanos(3_888_000))
        );
        assert!(q.dequeue(Instant::from_nanos(3_888_000), &mut d).is_some());
    }

    #[test]
    fn peek_parks_and_reset_drops_everything() {
        let mut q = htb("default 10");
        add(&mut q, "1:10", "1:", "rate 1mbit");
        let mut d = Drops::new();
        for id in 0..3 {
            q.enqueue(pkt(id, 1000), Instant::ZERO, &mut d);
        }
        q.enqueue(to(cid("1:"), 9, 100), Instant::ZERO, &mut d);
        assert_eq!(q.peek(Instant::ZERO, &mut d).unwrap().meta.id, 9);
        assert_eq!(q.qlen(), 4);
        assert_eq!(q.stats().packets, 0);
        assert_eq!(q.dequeue(Instant::ZERO, &mut d).unwrap().meta.id, 9);
        assert_eq!(q.stats().packets, 1);
        let mut r = Drops::new();
        q.reset(&mut r);
        assert_eq!((r.len(), q.qlen(), q.backlog()), (3, 0, 0));
        assert!(q.dequeue(Instant::ZERO, &mut d).is_none());
    }

    /// Random traffic, class edits and polling: next_wakeup is never in
    /// the past, qlen/backlog match the frames, conservation holds.
    #[test]
    fn random_operations_keep_invariants() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(42);
        let mut q = htb("default 11 direct_qlen 20");
        add(&mut q, "1:1", "1:", "rate 20mbit ceil 40mbit");
        add(&mut q, "1:2", "1:1", "rate 5mbit ceil 40mbit");
        add(&mut q, "1:10", "1:2", "rate 1mbit ceil 10mbit prio 1");
        add(&mut q, "1:11", "1:2", "rate 2mbit ceil 30mbit");
        add(&mut q, "1:12", "1:1", "rate 3mbit ceil 3mbit prio 2");
        add(&mut q, "1:30", "1:", "rate 1mbit ceil 2mbit");
        let targets = [
            cid("1:10"),
            cid("1:11"),
            cid("1:12"),
            cid("1:30"),
            cid("1:"),
            0,
            cid("1:2"),
        ];
        let mut d = Drops::new();
        let mut t = Instant::ZERO;
        let (mut offered, mut sent) = (0u64, 0u64);
        for step in 0..20_000u64 {
            match rng.gen_range(0..10) {
                0..=4 => {
                    let c = targets[rng.gen_range(0..targets.len())];
                    q.enqueue(to(c, step, rng.gen_range(64..1515)), t, &mut d);
                    offered += 1;
                }
                5..=7 => {
                    if q.dequeue(t, &mut d).is_some() {
                        sent += 1;
                    }
                }
                8 => {
                    if let Some(w) = q.next_wakeup(t) {
                        assert!(w >= t);
                        assert!(w <= t + 5 * SEC);
                        t = w;
                    }
                }
                _ => {
                    t += rng.gen_range(0..2_000_000);
                    if step % 997 == 0 {
                        let rate = format!("{}mbit", rng.gen_range(1..30));
                        q.change_class(
                            cid("1:11"),
                            &crate::qdisc::testutil::cwords(&["rate", &rate, "ceil", "40mbit"]),
                        )
                        .unwrap();
                    }
                }
            }
            assert_eq!(
                offered,
                sent + d.len() as u64 + q.qlen() as u64,
                "step {step}"
            );
        }
        let held = q.drain_all();
        assert_eq!(held.len() as u64, offered - sent - d.len() as u64);
        assert_eq!(q.backlog(), 0);
    }

    fn filter(line: &str) -> Filter {
        Filter::parse(&line.split_whitespace().collect::<Vec<_>>()).unwrap()
    }

    fn ip_pkt(id: u64, dport: u16) -> Packet {
        let mut p = pkt(id, 100);
        p.meta.l3 = crate::packet::L3::Ipv4 { offset: 14 };
        p.meta.flow.dst_port = dport;
        p
    }

    /// Enqueues one frame and reports where it went.
    fn landed(q: &mut Htb, p: Packet) -> Option<Handle> {
        let mut d = Drops::new();
        let direct = q.direct_packets();
        q.enqueue(p, Instant::ZERO, &mut d);
        if q.direct_packets() > direct {
            return None;
        }
        let dump = q.dump(Instant::ZERO);
        let c = dump
            .classes
            .iter()
            .find(|c| c.stats.unwrap().qlen > 0)
            .unwrap();
        let id = c.classid;
        q.reset(&mut d);
        Some(id)
    }

    #[test]
    fn filters_steer_to_leaves_through_inner_classes() {
        let mut q = htb("default 30");
        add(&mut q, "1:1", "1:", "rate 10mbit");
        add(&mut q, "1:10", "1:1", "rate 1mbit");
        add(&mut q, "1:20", "1:1", "rate 1mbit");
        add(&mut q, "1:30", "1:", "rate 1mbit");
        q.add_filter(filter(
            "parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:10",
        ))
        .unwrap();
        q.add_filter(filter(
            "parent 1: protocol ip prio 2 u32 match ip dport 22 0xffff flowid 1:",
        ))
        .unwrap();
        q.add_filter(filter(
            "parent 1: protocol ip prio 3 u32 match ip dport 80 0xffff flowid 1:1",
        ))
        .unwrap();
        q.add_filter(filter(
            "parent 1: protocol ip prio 4 u32 match ip dport 443 0xffff flowid 1:20 action skbedit priority 7",
        ))
        .unwrap();
        q.add_filter(filter(
            "parent 1:1 protocol all prio 1 matchall flowid 1:20",
        ))
        .unwrap();
        assert_eq!(landed(&mut q, ip_pkt(1, 5001)), Some(cid("1:10")));
        assert_eq!(
            landed(&mut q, ip_pkt(2, 22)),
            None,
            "flowid 1: is the direct queue"
        );
        assert_eq!(
            landed(&mut q, ip_pkt(3, 80)),
            Some(cid("1:20")),
            "inner class filters"
        );
        assert_eq!(landed(&mut q, ip_pkt(4, 9)), Some(cid("1:30")), "default");
        // skb->priority naming an inner class starts at its filters.
        let mut p = ip_pkt(5, 9);
        p.meta.priority = cid("1:1");
        assert_eq!(landed(&mut q, p), Some(cid("1:20")));
        // skbedit rewrites skb->priority.
        let mut d = Drops::new();
        q.enqueue(ip_pkt(6, 443), Instant::ZERO, &mut d);
        assert_eq!(q.dequeue(Instant::ZERO, &mut d).unwrap().meta.priority, 7);
        let e = q.add_filter(filter(
            "parent 1:99 protocol all prio 1 matchall flowid 1:20",
        ));
        assert!(e.unwrap_err().0.contains("does not exist"));
    }

    #[test]
    fn aqm_child_drops_count_in_htb() {
        let mut q = htb("default 10");
        add(&mut q, "1:10", "1:", "rate 1mbit");
        let ctx = q.child_ctx(cid("10:"), cid("1:10"));
        let codel = crate::qdisc::codel_qdisc::CodelQdisc::from_args(ctx, &[]).unwrap();
        q.graft(cid("1:10"), Box::new(codel)).unwrap();
        let t = drain_codel_child(&mut q, 150);
        assert_eq!(
            q.dump(t).classes[0].stats.unwrap().drops,
            0,
            "class drops are enqueue drops"
        );
    }

    #[test]
    fn extreme_configs_do_not_overflow() {
        let mut q = htb("default 1 r2q 4294967295");
        add(
            &mut q,
            "1:1",
            "1:",
            "rate 8bit burst 4294967295 cburst 4294967295 overhead 65535 mpu 65535 linklayer atm",
        );
        add(&mut q, "1:2", "1:", "rate 100tbit quantum 4294967295");
        let mut d = Drops::new();
        for id in 0..3 {
            q.enqueue(pkt(id, 1514), Instant::ZERO, &mut d);
            q.enqueue(to(cid("1:2"), id, 1514), Instant::ZERO, &mut d);
        }
        for t in [0, 1, 1 << 40, 1 << 62] {
            let t = Instant::from_nanos(t);
            while q.dequeue(t, &mut d).is_some() {}
            let w = q.next_wakeup(t);
            assert!(w.is_none_or(|w| w >= t && w <= t + 5 * SEC));
        }
        let _ = q.dump(Instant::ZERO);
    }

    /// Leaves under two inner classes borrow from the root through two
    /// levels of feeds: DRR over the nested feed pointers gives each leaf
    /// the same share of the excess.
    #[test]
    fn nested_feeds_share_excess_evenly() {
        let mut q = htb("");
        add(&mut q, "1:1", "1:", "rate 100mbit");
        add(&mut q, "1:a", "1:1", "rate 10mbit ceil 100mbit");
        add(&mut q, "1:b", "1:1", "rate 10mbit ceil 100mbit");
        let leaves = ["1:a1", "1:a2", "1:b1", "1:b2"];
        for l in leaves {
            add(&mut q, l, &l[..3], "rate 1mbit ceil 100mbit quantum 1514");
        }
        let ids: Vec<Handle> = leaves.iter().map(|l| cid(l)).collect();
        let r = run(&mut q, Instant::ZERO, SEC, &ids, 1514);
        let rates: Vec<f64> = ids
            .iter()
            .map(|c| mbit(r.bytes[c], r.end.nanos()))
            .collect();
        eprintln!("nested feeds: {rates:?}");
        for rate in &rates {
            assert!((rate - 25.0).abs() < 0.5, "{rates:?}");
        }
        let d = q.dump(r.end);
        let (a, root) = (class(&d, "1:a"), class(&d, "1:1"));
        assert!(hx(a).lends > 0 && hx(root).lends > hx(a).lends);
    }

    #[test]
    fn thousand_classes_share_fairly() {
        let mut q = htb("");
        add(&mut q, "1:1", "1:", "rate 1000mbit");
        let mut leaves = Vec::new();
        for i in 0..1000u16 {
            let id = format!("1:{:x}", 0x100 + i);
            add(
                &mut q,
                &id,
                "1:1",
                "rate 100kbit ceil 1000mbit quantum 1514",
            );
            leaves.push(cid(&id));
        }
        let r = run(&mut q, Instant::ZERO, SEC / 10, &leaves, 1514);
        let counts: Vec<u64> = leaves
            .iter()
            .map(|c| r.bytes.get(c).copied().unwrap_or(0) / 1514)
            .collect();
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(max - min <= 2, "DRR spread {min}..{max}");
        let total = mbit(r.bytes.values().sum(), r.end.nanos());
        assert!(total > 950.0, "{total}");
    }
}
