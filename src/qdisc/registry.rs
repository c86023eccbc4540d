//! Kind → constructor: every discipline compiled into bloatbox, built from the
//! tc tokens after its kind. A kind missing here gives tc's "Unknown qdisc"
//! (or, without options, the kernel's "Specified qdisc kind is unknown").

use super::codel_qdisc::CodelQdisc;
use super::fifo::{Fifo, FifoKind};
use super::fq_codel::FqCodel;
use super::htb::Htb;
use super::mq::Mq;
use super::pfifo_fast::PfifoFast;
use super::qfq::Qfq;
use super::sfq::Sfq;
use super::tbf::Tbf;
use super::tree::DevSpec;
use super::{Qdisc, QdiscCtx, TcError};

/// The kinds `new_qdisc` knows, in the order error messages list them.
pub const KINDS: &[&str] = &[
    "pfifo_fast",
    "pfifo",
    "bfifo",
    "pfifo_head_drop",
    "sfq",
    "codel",
    "fq_codel",
    "tbf",
    "htb",
    "mq",
    "qfq",
];

/// Classless kinds a device may use as its default qdisc
/// (`net.core.default_qdisc`) and as the per-queue children of mq.
pub const DEFAULT_QDISC_KINDS: &[&str] = &[
    "pfifo_fast",
    "pfifo",
    "bfifo",
    "pfifo_head_drop",
    "sfq",
    "codel",
    "fq_codel",
];

pub fn is_known(kind: &str) -> bool {
    KINDS.contains(&kind)
}

/// Kinds whose classes take options (`tc class add ... <kind> OPTIONS`);
/// iproute2 calls every other kind "classless" there.
pub fn has_class_options(kind: &str) -> bool {
    matches!(kind, "htb" | "qfq")
}

/// The error tc (with options) or the kernel (without) gives for a kind
/// that is not compiled in.
pub fn unknown_kind(kind: &str, args: &[&str]) -> TcError {
    let known = KINDS.join(", ");
    match args.first() {
        Some(first) => TcError::new(format!(
            "Unknown qdisc \"{kind}\", hence option \"{first}\" is unparsable\n(bloatbox qdiscs: {known})"
        )),
        None => TcError::new(format!(
            "Error: Specified qdisc kind is unknown.\n(\"{kind}\"; bloatbox qdiscs: {known})"
        )),
    }
}

/// Builds a `kind` qdisc from its tc options on device `dev`.
pub fn new_qdisc(
    kind: &str,
    ctx: QdiscCtx,
    dev: &DevSpec,
    args: &[&str],
) -> Result<Box<dyn Qdisc>, TcError> {
    let q: Box<dyn Qdisc> = match kind {
        "pfifo_fast" => Box::new(PfifoFast::from_args(ctx, args)?),
        "pfifo" => Box::new(Fifo::from_args(FifoKind::Pfifo, ctx, args)?),
        "bfifo" => Box::new(Fifo::from_args(FifoKind::Bfifo, ctx, args)?),
        "pfifo_head_drop" => Box::new(Fifo::from_args(FifoKind::PfifoHeadDrop, ctx, args)?),
        "mq" => Box::new(Mq::from_args(ctx, dev.tx_queues, args, &mut |c| {
            default_leaf(c, dev)
        })?),
        "sfq" => Box::new(Sfq::from_args(ctx, args)?),
        "codel" => Box::new(CodelQdisc::from_args(ctx, args)?),
        "fq_codel" => Box::new(FqCodel::from_args(ctx, args)?),
        "tbf" => Box::new(Tbf::from_args(ctx, args)?),
        "htb" => Box::new(Htb::from_args(ctx, args)?),
        "qfq" => Box::new(Qfq::from_args(ctx, args)?),
        _ => return Err(unknown_kind(kind, args)),
    };
    Ok(q)
}

/// The device's default qdisc (`net.core.default_qdisc`) with `ctx`, as the
/// kernel attaches it to a single-queue device and to each queue under mq.
/// `DevSpec::default_qdisc` is validated against `DEFAULT_QDISC_KINDS`;
/// should it still fail, pfifo_fast (the kernel's own default) is used.
pub fn default_leaf(ctx: QdiscCtx, dev: &DevSpec) -> Box<dyn Qdisc> {
    new_qdisc(&dev.default_qdisc, ctx, dev, &[]).unwrap_or_else(|_| Box::new(PfifoFast::new(ctx)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dir::Dir;

    #[test]
    fn builds_every_kind_with_defaults() {
        let dev = DevSpec {
            tx_queues: 4,
            ..DevSpec::new(Dir::LeftToRight)
        };
        for kind in KINDS {
            // tbf has mandatory options
            let args: &[&str] = match *kind {
                "tbf" => &["rate", "1mbit", "burst", "10kb", "latency", "50ms"],
                _ => &[],
            };
            let q = new_qdisc(kind, QdiscCtx::default(), &dev, args).unwrap();
            assert_eq!(q.kind(), *kind);
        }
    }

    #[test]
    fn unknown_kinds_error_like_tc() {
        let dev = DevSpec::new(Dir::LeftToRight);
        let e = new_qdisc("cake", QdiscCtx::default(), &dev, &["bandwidth", "1mbit"])
            .err()
            .unwrap();
        assert!(e
            .0
            .starts_with("Unknown qdisc \"cake\", hence option \"bandwidth\" is unparsable"));
        let e = new_qdisc("cake", QdiscCtx::default(), &dev, &[])
            .err()
            .unwrap();
        assert!(e.0.starts_with("Error: Specified qdisc kind is unknown."));
    }

    #[test]
    fn options_reach_the_constructor() {
        let dev = DevSpec::new(Dir::LeftToRight);
        let q = new_qdisc("bfifo", QdiscCtx::default(), &dev, &["limit", "10kb"]).unwrap();
        assert_eq!(q.dump(crate::time::Instant::ZERO).options, "limit 10Kb");
        assert!(new_qdisc("pfifo", QdiscCtx::default(), &dev, &["limit", "x"]).is_err());
    }
}
