//! Each kind's tc syntax, one module per kind as iproute2 has one
//! `tc/q_<kind>.c` per kind: the parser of the words after the kind (into
//! the kind's typed options, `crate::qdisc::QdiscOptions` and
//! `ClassOptions`), with iproute2's messages for words it does not take,
//! and the printer of the options a dump hands back, as `tc [-d] [-j]`
//! prints them. `crate::qdisc::kinds::BUILTIN` ties each to its kind.

pub mod cake;
pub mod choke;
pub mod codel;
pub mod drr;
pub mod dualpi2;
pub mod ets;
pub mod fifo;
pub mod fq;
pub mod fq_codel;
pub mod fq_pie;
pub mod hfsc;
pub mod hhf;
pub mod htb;
pub mod mq;
pub mod multiq;
pub mod netem;
pub mod pfifo_fast;
pub mod pie;
pub mod plug;
pub mod prio;
pub mod qfq;
pub mod red;
pub mod sfb;
pub mod sfq;
pub mod skbprio;
pub mod tbf;

use super::syntax::Syntax;

/// The kinds' tests' tc session: a fresh single-queue left device after
/// `lines`; the output (or error) of the last.
#[cfg(test)]
fn run_on_left(lines: &[&str]) -> Result<Option<String>, super::TcError> {
    use crate::packet::Drops;
    use crate::qdisc::kinds::BUILTIN;
    use crate::qdisc::tree::{DevSpec, QdiscTree};
    let mut tree = QdiscTree::new(DevSpec::new(crate::dir::Dir::LeftToRight, BUILTIN)).unwrap();
    let mut out = Ok(None);
    for line in lines {
        let cmd = super::TcCommand::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        out = super::run(
            &mut tree,
            &cmd,
            crate::time::Instant::ZERO,
            &mut Drops::new(),
        );
    }
    out
}

/// The syntax of every built-in kind, each found by its kind's name
/// (`crate::tc::syntax::syntax`).
pub static BUILTIN: &[&Syntax] = &[
    &pfifo_fast::SYNTAX,
    &fifo::PFIFO,
    &fifo::BFIFO,
    &fifo::PFIFO_HEAD_DROP,
    &sfq::SYNTAX,
    &codel::SYNTAX,
    &fq_codel::SYNTAX,
    &tbf::SYNTAX,
    &htb::SYNTAX,
    &mq::SYNTAX,
    &multiq::SYNTAX,
    &qfq::SYNTAX,
    &prio::SYNTAX,
    &hfsc::SYNTAX,
    &drr::SYNTAX,
    &ets::SYNTAX,
    &red::SYNTAX,
    &choke::SYNTAX,
    &pie::SYNTAX,
    &fq_pie::SYNTAX,
    &fq::SYNTAX,
    &plug::SYNTAX,
    &skbprio::SYNTAX,
    &sfb::SYNTAX,
    &hhf::SYNTAX,
    &dualpi2::SYNTAX,
    &netem::SYNTAX,
    &cake::SYNTAX,
];
