//! The options of a qdisc or a class as the kernel receives them in
//! `TCA_OPTIONS` and dumps them back (include/uapi/linux/pkt_sched.h): one
//! variant per kind, each holding that kind's own struct (defined in the
//! kind's module, as `tc_tbf_qopt` or the fq_codel attributes). The tc front
//! end (`crate::tc::opts`) parses command words into them and prints them;
//! the configuration builds them directly; a qdisc's constructor and its
//! `change` take them, and its `dump` hands them back with every field the
//! kernel dumps filled in. A field the netlink message may leave out is an
//! `Option` (absent: keep the current value, or the kernel's default).
//! Beside them, the extended statistics a kind dumps (`Xstats`, the
//! kernel's `TCA_STATS_APP` structs, each defined in its kind's folder),
//! and what a kind from outside the built-in table carries in place of
//! both (`Attrs`).

use super::cake::{CakeClassXstats, CakeOptions, CakeXstats};
use super::codel::{CodelOptions, CodelXstats};
use super::dualpi2::{Dualpi2Options, Dualpi2Xstats};
use super::fifo::FifoOptions;
use super::fq::{FqOptions, FqXstats};
use super::fq_codel::{FqCodelClassXstats, FqCodelOptions, FqCodelXstats};
use super::fq_pie::{FqPieOptions, FqPieXstats};
use super::htb::{HtbClassOptions, HtbGlob, HtbXstats};
use super::mq::MqOptions;
use super::netem::NetemOptions;
use super::pfifo_fast::PfifoFastOptions;
use super::pie::{PieOptions, PieXstats};
use super::red::{RedOptions, RedXstats};
use super::sfq::{SfqOptions, SfqXstats};
use super::tbf::TbfOptions;
use super::{Errno, Refusal};
use crate::units::{LinkLayer, PschedRate};
use serde::{Deserialize, Serialize};

/// A qdisc's `TCA_OPTIONS`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum QdiscOptions {
    /// No options (a kind without any, or a request that gives none).
    #[default]
    None,
    /// HTB's `tc_htb_glob` and `TCA_HTB_DIRECT_QLEN`.
    Htb(HtbGlob),
    /// pfifo, bfifo, pfifo_head_drop: `tc_fifo_qopt`.
    Fifo(FifoOptions),
    /// pfifo_fast (dumps only): `tc_prio_qopt`.
    PfifoFast(PfifoFastOptions),
    /// prio: `tc_prio_qopt`.
    Prio(super::prio::PrioOptions),
    /// hfsc: `tc_hfsc_qopt`.
    Hfsc(super::hfsc::HfscOptions),
    /// The `TCA_ETS_*` attributes.
    Ets(super::ets::EtsOptions),
    /// tbf: `tc_tbf_qopt` and the TCA_TBF_* attributes.
    Tbf(TbfOptions),
    /// mq: the TX queue count (a bloatbox extension).
    Mq(MqOptions),
    /// The `TCA_FQ_CODEL_*` attributes.
    FqCodel(FqCodelOptions),
    /// The `TCA_CODEL_*` attributes.
    Codel(CodelOptions),
    /// `struct tc_sfq_qopt_v1`.
    Sfq(SfqOptions),
    /// red: `tc_red_qopt` and the TCA_RED_* attributes.
    Red(RedOptions),
    /// choke: `struct tc_red_qopt` with TCA_CHOKE_STAB and TCA_CHOKE_MAX_P.
    Choke(super::choke::ChokeOptions),
    /// The `TCA_PIE_*` attributes.
    Pie(PieOptions),
    /// The `TCA_FQ_PIE_*` attributes.
    FqPie(FqPieOptions),
    /// The `TCA_FQ_*` attributes (boxed: the second largest).
    Fq(Box<FqOptions>),
    /// plug: `struct tc_plug_qopt` (sent, never dumped).
    Plug(super::plug::PlugOptions),
    /// sfb: `struct tc_sfb_qopt` in `TCA_SFB_PARMS`.
    Sfb(super::sfb::SfbOptions),
    /// skbprio: `struct tc_skbprio_qopt`.
    Skbprio(super::skbprio::SkbprioOptions),
    /// hhf: the TCA_HHF_* attributes.
    Hhf(super::hhf::HhfOptions),
    /// The `TCA_DUALPI2_*` attributes.
    Dualpi2(Dualpi2Options),
    /// multiq: `struct tc_multiq_qopt`.
    Multiq(super::multiq::MultiqOptions),
    /// netem: `tc_netem_qopt` and the TCA_NETEM_* attributes (boxed: the
    /// largest of the options by far).
    Netem(Box<NetemOptions>),
    /// The `TCA_CAKE_*` attributes.
    Cake(CakeOptions),
    /// The options of a kind outside the built-in table, as netlink
    /// carries them.
    Other(Attrs),
}

/// A class's `TCA_OPTIONS` (`tc class add ... <kind> OPTIONS`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum ClassOptions {
    /// No options (pseudo-classes, mq's and TBF's classes).
    #[default]
    None,
    /// An HTB class's `tc_htb_opt` (with its 64-bit rates).
    Htb(HtbClassOptions),
    /// A QFQ class's weight and lmax.
    Qfq(super::qfq::QfqClassOptions),
    /// An HFSC class's service curves.
    Hfsc(super::hfsc::HfscClassOptions),
    /// A DRR class's quantum (`TCA_DRR_QUANTUM`).
    Drr(super::drr::DrrClassOptions),
    /// An ETS band's quantum (`TCA_ETS_QUANTA_BAND`).
    Ets(super::ets::EtsClassOptions),
    /// The class options of a kind outside the built-in table.
    Other(Attrs),
}

/// The options or extended statistics of a kind outside the built-in
/// table, as netlink carries any kind's: attributes, each a type the kind
/// numbers (as the kernel's `TCA_<KIND>_*`) with its value, in the order
/// they were put. Such a kind converts its own typed struct to and from
/// them in its constructor, its `dump` and its tc syntax; the built-in
/// kinds have variants of their own.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attrs(pub Vec<(u16, AttrValue)>);

/// One attribute's value (`NLA_U32`, `NLA_U64`, `NLA_S64`, `NLA_FLAG`,
/// `NLA_STRING`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AttrValue {
    /// An unsigned 32-bit value.
    U32(u32),
    /// An unsigned 64-bit value.
    U64(u64),
    /// A signed 64-bit value.
    S64(i64),
    /// A flag: present or not.
    Flag(bool),
    /// A string.
    Str(String),
}

impl Attrs {
    /// The value of attribute `ty`, if present.
    pub fn get(&self, ty: u16) -> Option<&AttrValue> {
        self.0.iter().find(|(t, _)| *t == ty).map(|(_, v)| v)
    }

    /// Attribute `ty` as an unsigned number (of any width), if present and
    /// a number.
    pub fn unsigned(&self, ty: u16) -> Option<u64> {
        match self.get(ty)? {
            AttrValue::U32(v) => Some(u64::from(*v)),
            AttrValue::U64(v) => Some(*v),
            _ => None,
        }
    }

    /// Puts attribute `ty` last, or replaces its value where it is.
    pub fn put(&mut self, ty: u16, value: AttrValue) {
        match self.0.iter_mut().find(|(t, _)| *t == ty) {
            Some((_, v)) => *v = value,
            None => self.0.push((ty, value)),
        }
    }
}

/// Extended statistics as the kernel hands them to tc in `TCA_STATS_APP`
/// (include/uapi/linux/pkt_sched.h): one variant per struct, qdisc-level or
/// class-level as the kernel dumps them (`Qdisc_ops::dump_stats`,
/// `Qdisc_class_ops::dump_stats`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Xstats {
    /// `struct tc_fq_codel_xstats` of type `TCA_FQ_CODEL_XSTATS_QDISC`
    /// (net/sched/sch_fq_codel.c `fq_codel_dump_stats`).
    FqCodel(FqCodelXstats),
    /// `struct tc_fq_codel_xstats` of type `TCA_FQ_CODEL_XSTATS_CLASS`, a
    /// flow queue's (`fq_codel_dump_class_stats`).
    FqCodelClass(FqCodelClassXstats),
    /// `struct tc_codel_xstats` (net/sched/sch_codel.c `codel_dump_stats`).
    Codel(CodelXstats),
    /// `struct tc_sfq_xstats`, a flow queue's (net/sched/sch_sfq.c
    /// `sfq_dump_class_stats`).
    SfqClass(SfqXstats),
    /// `struct tc_htb_xstats`, a class's (net/sched/sch_htb.c
    /// `htb_dump_class_stats`).
    HtbClass(HtbXstats),
    /// `struct tc_hfsc_stats`, a class's (net/sched/sch_hfsc.c
    /// `hfsc_dump_class_stats`).
    HfscClass(super::hfsc::HfscXstats),
    /// `struct tc_drr_stats`, a class's (net/sched/sch_drr.c
    /// `drr_dump_class_stats`).
    DrrClass(super::drr::DrrXstats),
    /// `struct tc_red_xstats` (net/sched/sch_red.c `red_dump_stats`).
    Red(RedXstats),
    /// `struct tc_choke_xstats` (net/sched/sch_choke.c `choke_dump_stats`).
    Choke(super::choke::ChokeXstats),
    /// `struct tc_sfb_xstats` (net/sched/sch_sfb.c `sfb_dump_stats`).
    Sfb(super::sfb::SfbXstats),
    /// `struct tc_pie_xstats` (net/sched/sch_pie.c `pie_dump_stats`).
    Pie(PieXstats),
    /// `struct tc_fq_pie_xstats` (net/sched/sch_fq_pie.c
    /// `fq_pie_dump_stats`).
    FqPie(FqPieXstats),
    /// `struct tc_fq_qd_stats` (net/sched/sch_fq.c `fq_dump_stats`).
    Fq(FqXstats),
    /// `struct tc_dualpi2_xstats` (net/sched/sch_dualpi2.c
    /// `dualpi2_dump_stats`).
    Dualpi2(Dualpi2Xstats),
    /// `struct tc_hhf_xstats` (net/sched/sch_hhf.c `hhf_dump_stats`).
    Hhf(super::hhf::HhfXstats),
    /// CAKE's `TCA_CAKE_STATS_*` with its tins (net/sched/sch_cake.c
    /// `cake_dump_stats`).
    Cake(CakeXstats),
    /// A CAKE flow's (`cake_dump_class_stats`).
    CakeClass(CakeClassXstats),
    /// The xstats of a kind outside the built-in table (its qdisc's or a
    /// class's), as attributes of its own numbering.
    Other(Attrs),
}

/// `struct tc_ratespec` as the kernel uses it (include/uapi/linux/
/// pkt_sched.h; TBF's rate and peakrate, HTB's rate and ceil), with the 64-bit rate of TCA_*_RATE64 folded into `rate`
/// (bytes/s). The kernel ignores the legacy rate table and dumps
/// `cell_log` 0 (`psched_ratecfg_getrate`), so no cell is kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateSpec {
    /// Bytes per second.
    pub rate: u64,
    /// Bytes added to every packet's length before the rate conversion
    /// (`tc_ratespec.overhead`; tc's `overhead`).
    pub overhead: u16,
    /// Minimum accounted packet length, bytes (`tc_ratespec.mpu`; tc's `mpu`).
    pub mpu: u16,
    /// The link layer (`tc_ratespec.linklayer`; tc's `linklayer ethernet|atm`).
    pub linklayer: LinkLayer,
}

impl RateSpec {
    /// A rate of `rate` bytes/s without framing.
    pub fn new(rate: u64) -> Self {
        RateSpec {
            rate,
            ..RateSpec::default()
        }
    }

    /// `psched_ratecfg_precompute`.
    pub fn psched(&self) -> PschedRate {
        PschedRate::new(self.rate).with_framing(
            self.overhead as i32,
            self.mpu as u32,
            self.linklayer,
        )
    }

    /// `psched_ratecfg_getrate`: the spec a precomputed rate was made from,
    /// as the kernel dumps it (`psched` and `of` round-trip).
    pub fn of(rate: &PschedRate) -> Self {
        RateSpec {
            rate: rate.rate_bytes_ps,
            overhead: rate.overhead as u16,
            mpu: rate.mpu as u16,
            linklayer: rate.linklayer,
        }
    }
}

/// The kernel's answer when a `kind` qdisc is handed options of another
/// kind, EINVAL (a netlink message with another kind's `TCA_OPTIONS`
/// cannot happen, nor can a request tc's front end builds; a typed request
/// built by hand can).
pub fn foreign(kind: &str) -> Refusal {
    Refusal::bare(Errno::EINVAL).beside(format!("options of another kind for a {kind} qdisc"))
}
