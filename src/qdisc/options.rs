//! The options of a qdisc or a class as the kernel receives them in
//! `TCA_OPTIONS` and dumps them back (include/uapi/linux/pkt_sched.h): one
//! variant per kind, each holding that kind's own struct (defined in the
//! kind's module, as `tc_tbf_qopt` or the fq_codel attributes). The tc front
//! end (`crate::tc::opts`) parses command words into them and prints them;
//! the configuration builds them directly; a qdisc's constructor and its
//! `change` take them, and its `dump` hands them back with every field the
//! kernel dumps filled in. A field the netlink message may leave out is an
//! `Option` (absent: keep the current value, or the kernel's default).

use super::htb::{HtbClassOptions, HtbGlob};
use super::codel_qdisc::CodelOptions;
use super::fq_codel::FqCodelOptions;
use super::sfq::SfqOptions;
use super::TcError;
use serde::{Deserialize, Serialize};

/// A qdisc's `TCA_OPTIONS`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum QdiscOptions {
    /// No options (a kind without any, or a request that gives none).
    #[default]
    None,
    /// HTB's `tc_htb_glob` and `TCA_HTB_DIRECT_QLEN`.
    Htb(HtbGlob),
    /// Not yet typed: the tc words after the kind.
    Words(Vec<String>),
    /// The `TCA_FQ_CODEL_*` attributes.
    FqCodel(FqCodelOptions),
    /// The `TCA_CODEL_*` attributes.
    Codel(CodelOptions),
    /// `struct tc_sfq_qopt_v1`.
    Sfq(SfqOptions),
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

    /// The kernel's answer when a `kind` qdisc is handed options of another
    /// kind (a netlink message with another kind's `TCA_OPTIONS` cannot
    /// happen; a typed request built by hand can).
    pub fn foreign(&self, kind: &str) -> TcError {
        TcError::new(format!(
            "Error: Invalid argument (options of another kind for a {kind} qdisc)"
        ))
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
