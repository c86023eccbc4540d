//! The table of qdisc kinds: each discipline compiled into bloatbox with what
//! tc, the configuration and the link need to know of it (classful, may be
//! a default leaf, configurable, shapes) and its constructor from the tc
//! tokens after its kind. A device builds from the table its `DevSpec`
//! names (`BUILTIN` unless a caller hands it one with more kinds). A kind
//! missing there gives tc's "Unknown qdisc" (or, without options, the
//! kernel's "Specified qdisc kind is unknown").

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

/// Builds a qdisc of one kind with `ctx` on device `dev` from the tc tokens
/// after the kind.
pub type Build = fn(QdiscCtx, &DevSpec, &[&str]) -> Result<Box<dyn Qdisc>, TcError>;

/// One kind of qdisc: what tc, the configuration, the TUI and the link's
/// offload policy need to know of it, and how to build one. Adding a kind
/// is writing its module and one entry here (or, for a kind outside the
/// crate, one entry in a table of one's own handed to `DevSpec::kinds`).
#[derive(Clone, Copy)]
pub struct KindEntry {
    /// The tc kind (`TCA_KIND`).
    pub name: &'static str,
    /// Its classes take options (`tc class add ... htb rate ...`); iproute2
    /// calls every other kind classless there.
    pub class_options: bool,
    /// Classless: may be the device's default qdisc
    /// (`net.core.default_qdisc`) and mq's per-queue child.
    pub default_leaf: bool,
    /// Written in the configuration's `qdisc = "..."` (mq is chosen there
    /// with `tx_queues`).
    pub configurable: bool,
    /// Shapes to a configured rate: a tree holding one makes the link
    /// segment GSO super-frames (`link::offload`).
    pub shapes: bool,
    pub build: Build,
}

impl std::fmt::Debug for KindEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Two entries are the same kind when they have the same name (a table
/// holds a name once).
impl PartialEq for KindEntry {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl Eq for KindEntry {}

const fn kind(name: &'static str, build: Build) -> KindEntry {
    KindEntry {
        name,
        class_options: false,
        default_leaf: true,
        configurable: true,
        shapes: false,
        build,
    }
}

/// Every kind compiled into bloatbox, in the order error messages list
/// them.
pub const BUILTIN: &[KindEntry] = &[
    kind("pfifo_fast", |c, _, a| {
        Ok(Box::new(PfifoFast::from_args(c, a)?))
    }),
    kind("pfifo", |c, _, a| {
        Ok(Box::new(Fifo::from_args(FifoKind::Pfifo, c, a)?))
    }),
    kind("bfifo", |c, _, a| {
        Ok(Box::new(Fifo::from_args(FifoKind::Bfifo, c, a)?))
    }),
    kind("pfifo_head_drop", |c, _, a| {
        Ok(Box::new(Fifo::from_args(FifoKind::PfifoHeadDrop, c, a)?))
    }),
    kind("sfq", |c, _, a| Ok(Box::new(Sfq::from_args(c, a)?))),
    kind("codel", |c, _, a| {
        Ok(Box::new(CodelQdisc::from_args(c, a)?))
    }),
    kind("fq_codel", |c, _, a| {
        Ok(Box::new(FqCodel::from_args(c, a)?))
    }),
    KindEntry {
        default_leaf: false,
        shapes: true,
        ..kind("tbf", |c, _, a| Ok(Box::new(Tbf::from_args(c, a)?)))
    },
    KindEntry {
        class_options: true,
        default_leaf: false,
        shapes: true,
        ..kind("htb", |c, _, a| Ok(Box::new(Htb::from_args(c, a)?)))
    },
    KindEntry {
        default_leaf: false,
        configurable: false,
        ..kind("mq", |c, dev, a| {
            Ok(Box::new(Mq::from_args(c, dev.tx_queues, a, &mut |c| {
                default_leaf(c, dev)
            })?))
        })
    },
    KindEntry {
        class_options: true,
        default_leaf: false,
        ..kind("qfq", |c, _, a| Ok(Box::new(Qfq::from_args(c, a)?)))
    },
];

/// The entry of `name` in `kinds`.
pub fn lookup<'k>(kinds: &'k [KindEntry], name: &str) -> Option<&'k KindEntry> {
    kinds.iter().find(|k| k.name == name)
}

/// The names of the entries `pick` selects, comma-separated.
pub fn names(kinds: &[KindEntry], pick: impl Fn(&KindEntry) -> bool) -> String {
    let names: Vec<&str> = kinds.iter().filter(|k| pick(k)).map(|k| k.name).collect();
    names.join(", ")
}

/// A built-in kind (what tc, which knows its own kinds, accepts options
/// for).
pub fn is_known(kind: &str) -> bool {
    lookup(BUILTIN, kind).is_some()
}

/// A built-in kind whose classes take options (`tc class add ... <kind>
/// OPTIONS`); iproute2 calls every other kind "classless" there.
pub fn has_class_options(kind: &str) -> bool {
    lookup(BUILTIN, kind).is_some_and(|k| k.class_options)
}

/// The error tc (with options) or the kernel (without) gives for a kind
/// that is not in `kinds`.
pub fn unknown_kind(kinds: &[KindEntry], kind: &str, args: &[&str]) -> TcError {
    let known = names(kinds, |_| true);
    match args.first() {
        Some(first) => TcError::new(format!(
            "Unknown qdisc \"{kind}\", hence option \"{first}\" is unparsable\n(bloatbox qdiscs: {known})"
        )),
        None => TcError::new(format!(
            "Error: Specified qdisc kind is unknown.\n(\"{kind}\"; bloatbox qdiscs: {known})"
        )),
    }
}

/// Builds a `kind` qdisc of the device's table (`DevSpec::kinds`) from its
/// tc options on device `dev`.
pub fn new_qdisc(
    kind: &str,
    ctx: QdiscCtx,
    dev: &DevSpec,
    args: &[&str],
) -> Result<Box<dyn Qdisc>, TcError> {
    match lookup(dev.kinds, kind) {
        Some(entry) => (entry.build)(ctx, dev, args),
        None => Err(unknown_kind(dev.kinds, kind, args)),
    }
}

/// The device's default qdisc (`net.core.default_qdisc`) with `ctx`, as the
/// kernel attaches it to a single-queue device and to each queue under mq.
/// `DevSpec::default_qdisc` is validated to be a `default_leaf` kind;
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
        for kind in BUILTIN.iter().map(|k| k.name) {
            // tbf has mandatory options
            let args: &[&str] = match kind {
                "tbf" => &["rate", "1mbit", "burst", "10kb", "latency", "50ms"],
                _ => &[],
            };
            let q = new_qdisc(kind, QdiscCtx::default(), &dev, args).unwrap();
            assert_eq!(q.kind(), kind);
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
