//! One HTB class (sch_htb.c's `struct htb_class`): its place in the tree,
//! its two token buckets (`rate` and `ceil`, in nanoseconds of
//! transmission time, `htb_accnt_tokens`/`htb_accnt_ctokens`), the mode
//! their signs give (`htb_class_mode`), its leaf qdisc or its feeds, and
//! its counters; `apply` takes new options as `htb_change_class` does.

use super::active::ActiveSet;
use super::options::HtbClassOptions;
use super::{MAXDEPTH, MBUFFER, NUMPRIO};
use crate::packet::filter::FilterChain;
use crate::qdisc::options::RateSpec;
use crate::qdisc::tbf::ns_to_ticks;
use crate::qdisc::Qdisc;
use crate::units::PschedRate;

/// A class mode (`enum htb_cmode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    CantSend,
    MayBorrow,
    CanSend,
}

/// One HTB class.
pub(super) struct Class {
    pub(super) classid: u32,
    pub(super) parent: Option<usize>,
    pub(super) children: u32,
    pub(super) level: usize,
    pub(super) prio: usize,
    pub(super) quantum: i64,
    pub(super) rate: PschedRate,
    pub(super) ceil: PschedRate,
    pub(super) buffer: i64,
    pub(super) cbuffer: i64,
    pub(super) tokens: i64,
    pub(super) ctokens: i64,
    pub(super) t_c: i64,
    pub(super) mode: Mode,
    /// Bit p set: the class is active at prio p (in a row or a feed).
    pub(super) prio_activity: u8,
    /// Its entry in the event queue of its level, when not CAN_SEND.
    pub(super) pq: Option<(i64, u64)>,
    /// The leaf qdisc (leaves only).
    pub(super) leaf: Option<Box<dyn Qdisc>>,
    /// DRR deficit per level (leaves only).
    pub(super) deficit: [i64; MAXDEPTH],
    /// Feeds of borrowing descendants per prio (inner classes only).
    pub(super) feeds: [ActiveSet; NUMPRIO],
    /// Filters attached to the class (`tc filter add ... parent <class>`),
    /// consulted when classification reaches it as an inner class.
    pub(super) filters: FilterChain,
    /// The leaf returned nothing while holding frames (a shaping child):
    /// its `next_wakeup` joins ours.
    pub(super) non_work_conserving: bool,
    pub(super) bytes: u64,
    pub(super) packets: u64,
    pub(super) drops: u64,
    pub(super) overlimits: u64,
    pub(super) lends: u64,
    pub(super) borrows: u64,
}

impl Class {
    /// `htb_class_mode` without hysteresis: only the signs matter.
    #[inline]
    pub(super) fn class_mode(&self, diff: &mut i64) -> Mode {
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

    #[inline]
    pub(super) fn accnt_tokens(&mut self, len: u64, diff: i64) {
        let toks = (diff + self.tokens).min(self.buffer) - self.rate.l2t_ns(len) as i64;
        self.tokens = if toks <= -MBUFFER { 1 - MBUFFER } else { toks };
    }

    #[inline]
    pub(super) fn accnt_ctokens(&mut self, len: u64, diff: i64) {
        let toks = (diff + self.ctokens).min(self.cbuffer) - self.ceil.l2t_ns(len) as i64;
        self.ctokens = if toks <= -MBUFFER { 1 - MBUFFER } else { toks };
    }

    /// A new leaf with full buckets holding `leaf`, at `t_c`; `apply`
    /// then sets its rates from the options.
    pub(super) fn new(
        classid: u32,
        parent: Option<usize>,
        leaf: Box<dyn Qdisc>,
        t_c: i64,
    ) -> Class {
        Class {
            classid,
            parent,
            children: 0,
            level: 0,
            prio: 0,
            quantum: 0,
            rate: PschedRate::new(0),
            ceil: PschedRate::new(0),
            buffer: 0,
            cbuffer: 0,
            tokens: 0,
            ctokens: 0,
            t_c,
            mode: Mode::CanSend,
            prio_activity: 0,
            pq: None,
            leaf: Some(leaf),
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
        }
    }

    /// Rates, buffers, quantum and prio from (new) options, as
    /// `htb_change_class` sets them. Returns the quantum warning.
    pub(super) fn apply(&mut self, opts: &HtbClassOptions, r2q: u32) -> Option<String> {
        let mut warning = None;
        self.rate = opts.rate.psched();
        self.ceil = opts.ceil.psched();
        if self.level == 0 {
            let mut quantum = (opts.rate.rate / r2q as u64).min(i32::MAX as u64) as i64;
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
        self.buffer = (u64::from(opts.buffer) << 6) as i64;
        self.cbuffer = (u64::from(opts.cbuffer) << 6) as i64;
        warning
    }

    /// `htb_dump_class`'s `tc_htb_opt`: the rate specs, the buckets'
    /// depths in psched ticks, and the quantum, prio and level in effect.
    pub(super) fn dumped_options(&self) -> HtbClassOptions {
        let ticks = |ns: i64| u32::try_from(ns_to_ticks(ns).max(0)).unwrap_or(u32::MAX);
        HtbClassOptions {
            rate: RateSpec::of(&self.rate),
            ceil: RateSpec::of(&self.ceil),
            buffer: ticks(self.buffer),
            cbuffer: ticks(self.cbuffer),
            quantum: u32::try_from(self.quantum).unwrap_or(u32::MAX),
            level: self.level as u32,
            prio: self.prio as u32,
        }
    }
}
