//! The options of a qdisc or a class as the kernel receives them in
//! `TCA_OPTIONS` and dumps them back (include/uapi/linux/pkt_sched.h): one
//! variant per kind, each holding that kind's own struct (defined in the
//! kind's module, as `tc_tbf_qopt` or the fq_codel attributes). The tc front
//! end (`crate::tc::opts`) parses command words into them and prints them;
//! the configuration builds them directly; a qdisc's constructor and its
//! `change` take them, and its `dump` hands them back with every field the
//! kernel dumps filled in. A field the netlink message may leave out is an
//! `Option` (absent: keep the current value, or the kernel's default).

use super::fifo::FifoOptions;
use super::mq::MqOptions;
use super::pfifo_fast::PfifoFastOptions;
use super::tbf::TbfOptions;
use serde::{Deserialize, Serialize};

/// A qdisc's `TCA_OPTIONS`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum QdiscOptions {
    /// No options (a kind without any, or a request that gives none).
    #[default]
    None,
    /// Not yet typed: the tc words after the kind.
    Words(Vec<String>),
    /// pfifo, bfifo, pfifo_head_drop: `tc_fifo_qopt`.
    Fifo(FifoOptions),
    /// pfifo_fast (dumps only): `tc_prio_qopt`.
    PfifoFast(PfifoFastOptions),
    /// tbf: `tc_tbf_qopt` and the TCA_TBF_* attributes.
    Tbf(TbfOptions),
    /// mq: the TX queue count (a bloatbox extension).
    Mq(MqOptions),
}

/// A class's `TCA_OPTIONS` (`tc class add ... <kind> OPTIONS`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum ClassOptions {
    /// No options (pseudo-classes, mq's and TBF's classes).
    #[default]
    None,
    /// Not yet typed: the tc words after the kind.
    Words(Vec<String>),
}

fn words(w: &[String]) -> Vec<&str> {
    w.iter().map(String::as_str).collect()
}

impl QdiscOptions {
    /// The words of an untyped request (none for typed options).
    pub fn words(&self) -> Vec<&str> {
        match self {
            QdiscOptions::Words(w) => words(w),
            _ => Vec::new(),
        }
    }
}

impl ClassOptions {
    /// The words of an untyped request (none for typed options).
    pub fn words(&self) -> Vec<&str> {
        match self {
            ClassOptions::Words(w) => words(w),
            _ => Vec::new(),
        }
    }
}
