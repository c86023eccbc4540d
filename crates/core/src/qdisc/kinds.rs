//! The table of qdisc kinds (`BUILTIN`: one row a kind, as the kernel's
//! list of registered `Qdisc_ops`), what the core knows of a kind
//! (`KindEntry`: its name, what it may be used for, its constructor from
//! typed options), and the lookups a device's tree makes in its table. A
//! kind's tc syntax (its option parsers and printers) is the front end's,
//! registered there by the kind's name. A kind missing from a device's
//! table gives the kernel's "Specified qdisc kind is unknown" (tc's
//! "Unknown qdisc", when options follow it, is the front end's). Every
//! other list of kinds (the configuration's, the TUI's menu, fuzz set-ups,
//! benches, property tests) is derived from a table like this one.

use super::cake::Cake;
use super::choke::Choke;
use super::codel::CodelQdisc;
use super::drr::Drr;
use super::dualpi2::Dualpi2;
use super::ets::Ets;
use super::fifo::{Fifo, FifoKind};
use super::fq::Fq;
use super::fq_codel::FqCodel;
use super::fq_pie::FqPie;
use super::hfsc::Hfsc;
use super::hhf::Hhf;
use super::htb::Htb;
use super::mq::Mq;
use super::multiq::Multiq;
use super::netem::Netem;
use super::pfifo_fast::PfifoFast;
use super::pie::Pie;
use super::plug::Plug;
use super::prio::Prio;
use super::qfq::Qfq;
use super::red::Red;
use super::sfb::Sfb;
use super::sfq::Sfq;
use super::skbprio::Skbprio;
use super::tbf::Tbf;
use super::tree::DevSpec;
use super::{Errno, Qdisc, QdiscCtx, QdiscOptions, Refusal};

/// Builds a qdisc of one kind with `ctx` on device `dev` from its options
/// (`QdiscOptions::None`: the kind's defaults).
pub type Build = fn(QdiscCtx, &DevSpec, &QdiscOptions) -> Result<Box<dyn Qdisc>, Refusal>;

/// One kind of qdisc: what tc, the configuration, the TUI and the link's
/// offload policy need to know of it, and how to build one. Adding a kind
/// is writing its folder and one row in `BUILTIN` (or, for a kind outside
/// the crate, one entry in a table of one's own handed to `DevSpec::kinds`).
#[derive(Clone, Copy)]
pub struct KindEntry {
    /// The tc kind (`TCA_KIND`).
    pub name: &'static str,
    /// Classless: may be the device's default qdisc
    /// (`net.core.default_qdisc`) and mq's per-queue child.
    pub default_leaf: bool,
    /// Written in the configuration's `qdisc = "..."` (mq is chosen there
    /// with `tx_queues`).
    pub configurable: bool,
    /// Shapes to a configured rate: a tree holding one makes the link
    /// segment GSO super-frames (`link::offload`).
    pub shapes: bool,
    /// Its classes have counters of their own: the kind's
    /// `Qdisc_class_ops` has a `dump_stats` (TBF's has none, so
    /// `tc_fill_tclass` sends an empty stats nest for its one class).
    pub class_stats: bool,
    /// Builds a qdisc of this kind from its options (the kind's `init`).
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

/// The entry of `name` in `kinds`.
pub fn lookup<'k>(kinds: &'k [KindEntry], name: &str) -> Option<&'k KindEntry> {
    kinds.iter().find(|k| k.name == name)
}

/// The names of the entries `pick` selects, comma-separated.
pub fn names(kinds: &[KindEntry], pick: impl Fn(&KindEntry) -> bool) -> String {
    let names: Vec<&str> = kinds.iter().filter(|k| pick(k)).map(|k| k.name).collect();
    names.join(", ")
}

/// The kernel's error for a kind that is not in `kinds` (`qdisc_create`:
/// no `Qdisc_ops` of that name).
pub fn unknown_kind(kinds: &[KindEntry], kind: &str) -> Refusal {
    Refusal::new(Errno::ENOENT, "Specified qdisc kind is unknown.").below(format!(
        "\"{kind}\"; bloatbox qdiscs: {}",
        names(kinds, |_| true)
    ))
}

/// Builds a `kind` qdisc of the device's table (`DevSpec::kinds`) from its
/// options on device `dev`.
pub fn new_qdisc(
    kind: &str,
    ctx: QdiscCtx,
    dev: &DevSpec,
    options: &QdiscOptions,
) -> Result<Box<dyn Qdisc>, Refusal> {
    match lookup(dev.kinds, kind) {
        Some(entry) => (entry.build)(ctx, dev, options),
        None => Err(unknown_kind(dev.kinds, kind)),
    }
}

/// The device's default qdisc (`net.core.default_qdisc`) with `ctx`, as the
/// kernel attaches it to a single-queue device and to each queue under mq.
/// `DevSpec::default_qdisc` is validated to be a `default_leaf` kind;
/// should it still fail, pfifo_fast (the kernel's own default) is used.
pub fn default_leaf(ctx: QdiscCtx, dev: &DevSpec) -> Box<dyn Qdisc> {
    new_qdisc(&dev.default_qdisc, ctx, dev, &QdiscOptions::None)
        .unwrap_or_else(|_| Box::new(PfifoFast::new(ctx)))
}

/// A row of `BUILTIN`: a classless kind that may be a default leaf and is
/// configurable, neither shaping nor with classes of its own counters.
const fn kind(name: &'static str, build: Build) -> KindEntry {
    KindEntry {
        name,
        default_leaf: true,
        configurable: true,
        shapes: false,
        class_stats: true,
        build,
    }
}

/// Every kind compiled into bloatbox, in the order error messages list
/// them.
pub static BUILTIN: &[KindEntry] = &[
    kind("pfifo_fast", |c, _, o| {
        Ok(Box::new(PfifoFast::build(c, o)?))
    }),
    kind("pfifo", |c, _, o| {
        Ok(Box::new(Fifo::build(FifoKind::Pfifo, c, o)?))
    }),
    kind("bfifo", |c, _, o| {
        Ok(Box::new(Fifo::build(FifoKind::Bfifo, c, o)?))
    }),
    kind("pfifo_head_drop", |c, _, o| {
        Ok(Box::new(Fifo::build(FifoKind::PfifoHeadDrop, c, o)?))
    }),
    kind("sfq", |c, _, o| Ok(Box::new(Sfq::build(c, o)?))),
    kind("codel", |c, _, o| Ok(Box::new(CodelQdisc::build(c, o)?))),
    kind("fq_codel", |c, _, o| Ok(Box::new(FqCodel::build(c, o)?))),
    KindEntry {
        default_leaf: false,
        shapes: true,
        class_stats: false,
        ..kind("tbf", |c, _, o| Ok(Box::new(Tbf::build(c, o)?)))
    },
    KindEntry {
        default_leaf: false,
        shapes: true,
        ..kind("htb", |c, _, o| Ok(Box::new(Htb::build(c, o)?)))
    },
    KindEntry {
        default_leaf: false,
        configurable: false,
        ..kind("mq", |c, dev, o| {
            Ok(Box::new(Mq::build(c, dev.tx_queues, o, &mut |c| {
                default_leaf(c, dev)
            })?))
        })
    },
    KindEntry {
        default_leaf: false,
        configurable: false,
        ..kind("multiq", |c, dev, o| {
            Ok(Box::new(Multiq::build(c, dev.tx_queues, o)?))
        })
    },
    KindEntry {
        default_leaf: false,
        ..kind("qfq", |c, _, o| Ok(Box::new(Qfq::build(c, o)?)))
    },
    KindEntry {
        default_leaf: false,
        ..kind("prio", |c, _, o| Ok(Box::new(Prio::build(c, o)?)))
    },
    KindEntry {
        default_leaf: false,
        shapes: true,
        ..kind("hfsc", |c, _, o| Ok(Box::new(Hfsc::build(c, o)?)))
    },
    KindEntry {
        default_leaf: false,
        ..kind("drr", |c, _, o| Ok(Box::new(Drr::build(c, o)?)))
    },
    KindEntry {
        default_leaf: false,
        ..kind("ets", |c, _, o| Ok(Box::new(Ets::build(c, o)?)))
    },
    KindEntry {
        default_leaf: false,
        class_stats: false,
        ..kind("red", |c, _, o| Ok(Box::new(Red::build(c, o)?)))
    },
    KindEntry {
        default_leaf: false,
        ..kind("choke", |c, _, o| Ok(Box::new(Choke::build(c, o)?)))
    },
    kind("pie", |c, _, o| Ok(Box::new(Pie::build(c, o)?))),
    kind("fq_pie", |c, _, o| Ok(Box::new(FqPie::build(c, o)?))),
    kind("fq", |c, _, o| Ok(Box::new(Fq::build(c, o)?))),
    KindEntry {
        default_leaf: false,
        ..kind("plug", |c, _, o| Ok(Box::new(Plug::build(c, o)?)))
    },
    kind("skbprio", |c, _, o| Ok(Box::new(Skbprio::build(c, o)?))),
    kind("hhf", |c, _, o| Ok(Box::new(Hhf::build(c, o)?))),
    KindEntry {
        default_leaf: false,
        class_stats: false,
        ..kind("sfb", |c, _, o| Ok(Box::new(Sfb::build(c, o)?)))
    },
    KindEntry {
        class_stats: false,
        ..kind("dualpi2", |c, _, o| Ok(Box::new(Dualpi2::build(c, o)?)))
    },
    KindEntry {
        default_leaf: false,
        class_stats: false,
        ..kind("netem", |c, _, o| Ok(Box::new(Netem::build(c, o)?)))
    },
    KindEntry {
        shapes: true,
        ..kind("cake", |c, _, o| Ok(Box::new(Cake::build(c, o)?)))
    },
];
