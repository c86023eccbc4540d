//! The one table of qdisc kinds (`BUILTIN`): each discipline compiled into
//! bloatbox with what tc, the configuration, the TUI and the link need to
//! know of it (may be a default leaf, configurable, shapes), its
//! constructor from typed options (the core's `KindEntry`), and its tc
//! syntax (`Syntax`: iproute2's `qdisc_util`, the parsers of its qdisc and
//! class options and their printers). Adding a kind is writing its module
//! in `qdisc`, its syntax in `tc::opts`, and one entry here (or, for a kind
//! outside the crate, one entry in a table of one's own handed to
//! `DevSpec::new`).

use super::opts;
use super::tokens::Tokens;
use crate::dir::Dir;
use crate::handle::TcError;
use crate::qdisc::codel_qdisc::CodelQdisc;
use crate::qdisc::fifo::{Fifo, FifoKind};
use crate::qdisc::fq_codel::FqCodel;
use crate::qdisc::htb::Htb;
use crate::qdisc::mq::Mq;
use crate::qdisc::pfifo_fast::PfifoFast;
use crate::qdisc::qfq::Qfq;
use crate::qdisc::registry::{self, default_leaf, Build};
use crate::qdisc::sfq::Sfq;
use crate::qdisc::tbf::Tbf;
use crate::qdisc::{ClassOptions, QdiscOptions};

pub use crate::qdisc::registry::{names, KindEntry};

/// A parser of the words after the kind in `tc class ...`.
pub type ParseClass = fn(&mut Tokens) -> Result<ClassOptions, TcError>;

/// A kind's tc syntax: what iproute2's `q_<kind>.c` does for it.
pub struct Syntax {
    /// `parse_qopt`: the words after the kind in `tc qdisc add|change|...`.
    pub qdisc: fn(&mut Tokens) -> Result<QdiscOptions, TcError>,
    /// `parse_copt`: the words after the kind in `tc class add|change ...`;
    /// `None` for a kind whose classes take no options, which tc calls
    /// classless there (as iproute2 does a `qdisc_util` without one).
    pub class: Option<ParseClass>,
    /// `print_qopt`: a dump's qdisc options as tc prints them (`None`:
    /// nothing after the head).
    pub print: fn(&QdiscOptions) -> Option<Printed>,
    /// `print_copt`: a dump's class options.
    pub print_class: fn(&ClassOptions) -> Option<Printed>,
    /// The TUI's qdisc menu: the tc lines that make this kind the root of
    /// a direction's device on a link of the rate given (bytes/s, 0:
    /// unlimited); `None` keeps the kind off the menu.
    pub example: Option<Example>,
}

/// The tc lines of a kind's menu entry (see `Syntax::example`).
pub type Example = fn(Dir, u64) -> Vec<String>;

/// `tc qdisc replace dev D root`, the head of a menu entry's first line.
pub fn replace_root(dir: Dir) -> String {
    format!("tc qdisc replace dev {} root", dir.dev())
}

/// The rate a shaping menu entry shapes to: the link's, or 1gbit when the
/// link is unlimited.
pub fn example_rate(rate_bytes_ps: u64) -> u64 {
    if rate_bytes_ps == 0 {
        125_000_000
    } else {
        rate_bytes_ps
    }
}

/// Options as tc prints them: after `refcnt N ` without `-d` (no trailing
/// space), with `-d`, and under "options" with `-j`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Printed {
    /// What tc prints without `-d` (after `refcnt N `, no trailing space).
    pub plain: String,
    /// What tc prints with `-d`.
    pub detail: String,
    /// The `options` object of `tc -j`.
    pub json: JsonObj,
}

impl Printed {
    /// Options whose `-d` text is the plain one.
    pub fn same(text: String, json: JsonObj) -> Printed {
        Printed {
            detail: text.clone(),
            plain: text,
            json,
        }
    }
}

/// A JSON object that keeps its keys in the order they were put, as
/// iproute2's JSON writer prints them (`print_uint(PRINT_JSON, ...)` in
/// the order of each kind's `print_opt`); serde_json's `Map` sorts them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JsonObj(Vec<(String, JsonField)>);

/// One value of a `JsonObj`: a JSON value, or an object in order.
#[derive(Clone, Debug, PartialEq)]
pub enum JsonField {
    /// A value (a number, string, array, ...).
    Value(serde_json::Value),
    /// A nested object whose keys keep their order.
    Obj(JsonObj),
}

impl JsonObj {
    /// An empty object.
    pub fn new() -> JsonObj {
        JsonObj::default()
    }

    /// Puts `key` last, or replaces its value where it is.
    pub fn insert(&mut self, key: impl Into<String>, v: serde_json::Value) {
        self.put(key.into(), JsonField::Value(v));
    }

    /// Puts the object `o` under `key`, last or where `key` is.
    pub fn insert_obj(&mut self, key: impl Into<String>, o: JsonObj) {
        self.put(key.into(), JsonField::Obj(o));
    }

    /// Appends `o` under `key` even if the key is there already: iproute2's
    /// JSON writer repeats a key when a printer opens the same object
    /// twice (u32's `match`, once per key).
    pub fn push_obj(&mut self, key: impl Into<String>, o: JsonObj) {
        self.0.push((key.into(), JsonField::Obj(o)));
    }

    fn put(&mut self, key: String, v: JsonField) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some((_, old)) => *old = v,
            None => self.0.push((key, v)),
        }
    }

    /// Every key of `other` put after this object's (or where they are).
    pub fn extend(&mut self, other: JsonObj) {
        for (k, v) in other.0 {
            self.put(k, v);
        }
    }

    /// The value under `key`, if it is a plain value.
    pub fn get(&self, key: &str) -> Option<&serde_json::Value> {
        self.0.iter().find_map(|(k, v)| match v {
            JsonField::Value(v) if k == key => Some(v),
            _ => None,
        })
    }

    /// The keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }

    /// The object as a `serde_json::Value` (whose keys are sorted).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.0
                .iter()
                .map(|(k, v)| {
                    let v = match v {
                        JsonField::Value(v) => v.clone(),
                        JsonField::Obj(o) => o.to_value(),
                    };
                    (k.clone(), v)
                })
                .collect(),
        )
    }
}

impl std::ops::Index<&str> for JsonObj {
    type Output = serde_json::Value;
    /// The value under `key`, or null (as `serde_json::Value` indexes).
    fn index(&self, key: &str) -> &serde_json::Value {
        static NULL: serde_json::Value = serde_json::Value::Null;
        self.get(key).unwrap_or(&NULL)
    }
}

impl serde::Serialize for JsonObj {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            match v {
                JsonField::Value(v) => m.serialize_entry(k, v)?,
                JsonField::Obj(o) => m.serialize_entry(k, o)?,
            }
        }
        m.end()
    }
}

/// The syntax of `entry` (`None` for an entry made outside the front end
/// with something else in its `syntax` slot).
pub fn syntax(entry: &KindEntry) -> Option<&'static Syntax> {
    entry.syntax.downcast_ref::<Syntax>()
}

/// Whether `entry`'s classes take options (`tc class add ... htb rate
/// ...`); tc calls every other kind classless there.
pub fn has_class_options(entry: &KindEntry) -> bool {
    syntax(entry).is_some_and(|s| s.class.is_some())
}

const fn kind(name: &'static str, build: Build, syntax: &'static Syntax) -> KindEntry {
    KindEntry {
        name,
        default_leaf: true,
        configurable: true,
        shapes: false,
        build,
        syntax,
    }
}

/// Every kind compiled into bloatbox, in the order error messages list
/// them.
pub static BUILTIN: &[KindEntry] = &[
    kind(
        "pfifo_fast",
        |c, _, o| Ok(Box::new(PfifoFast::build(c, o)?)),
        &opts::pfifo_fast::SYNTAX,
    ),
    kind(
        "pfifo",
        |c, _, o| Ok(Box::new(Fifo::build(FifoKind::Pfifo, c, o)?)),
        &opts::fifo::PFIFO,
    ),
    kind(
        "bfifo",
        |c, _, o| Ok(Box::new(Fifo::build(FifoKind::Bfifo, c, o)?)),
        &opts::fifo::BFIFO,
    ),
    kind(
        "pfifo_head_drop",
        |c, _, o| Ok(Box::new(Fifo::build(FifoKind::PfifoHeadDrop, c, o)?)),
        &opts::fifo::PFIFO_HEAD_DROP,
    ),
    kind(
        "sfq",
        |c, _, o| Ok(Box::new(Sfq::build(c, o)?)),
        &opts::sfq::SYNTAX,
    ),
    kind(
        "codel",
        |c, _, o| Ok(Box::new(CodelQdisc::build(c, o)?)),
        &opts::codel::SYNTAX,
    ),
    kind(
        "fq_codel",
        |c, _, o| Ok(Box::new(FqCodel::build(c, o)?)),
        &opts::fq_codel::SYNTAX,
    ),
    KindEntry {
        default_leaf: false,
        shapes: true,
        ..kind(
            "tbf",
            |c, _, o| Ok(Box::new(Tbf::build(c, o)?)),
            &opts::tbf::SYNTAX,
        )
    },
    KindEntry {
        default_leaf: false,
        shapes: true,
        ..kind(
            "htb",
            |c, _, o| Ok(Box::new(Htb::build(c, o)?)),
            &opts::htb::SYNTAX,
        )
    },
    KindEntry {
        default_leaf: false,
        configurable: false,
        ..kind(
            "mq",
            |c, dev, o| {
                Ok(Box::new(Mq::build(c, dev.tx_queues, o, &mut |c| {
                    default_leaf(c, dev)
                })?))
            },
            &opts::mq::SYNTAX,
        )
    },
    KindEntry {
        default_leaf: false,
        ..kind(
            "qfq",
            |c, _, o| Ok(Box::new(Qfq::build(c, o)?)),
            &super::opts::qfq::SYNTAX,
        )
    },
];

/// The options `words` (after `kind` in `tc qdisc ...`) give, read by the
/// kind's own parser from the table `kinds`, as iproute2 parses them before
/// anything reaches the kernel. A kind the table lacks has no options
/// (the tree then answers as the kernel does), or, when words follow it,
/// tc's "Unknown qdisc".
pub fn parse_qdisc(
    kinds: &[KindEntry],
    kind: &str,
    words: &[&str],
) -> Result<QdiscOptions, TcError> {
    match (registry::lookup(kinds, kind), words.first()) {
        (Some(entry), _) => {
            let syntax = syntax(entry).ok_or_else(|| {
                TcError::new(format!(
                    "Error: qdisc kind \"{kind}\" has no tc syntax in its table entry"
                ))
            })?;
            (syntax.qdisc)(&mut Tokens::new(words)).map_err(parser_exit)
        }
        (None, None) => Ok(QdiscOptions::None),
        // iproute2 finds no q_<kind> to parse the options with.
        // A kind iproute2 has a q_<kind> for: tc parses its options and
        // the kernel, which lacks the kind here, refuses it.
        (None, Some(_)) if IPROUTE2_KINDS.contains(&kind) => Err(TcError::new(format!(
            "Error: Specified qdisc kind is unknown.\n(\"{kind}\"; bloatbox qdiscs: {})",
            names(kinds, |_| true)
        ))),
        (None, Some(first)) => Err(TcError::new(format!(
            "Unknown qdisc \"{kind}\", hence option \"{first}\" is unparsable\n(bloatbox \
             qdiscs: {})",
            names(kinds, |_| true)
        ))
        .exit(TcError::PARSE)),
    }
}

/// The options `words` (after `kind` in `tc class ...`) give, read by the
/// kind's class parser; a kind without one, or one the table lacks, is
/// classless (iproute2's `tc_class_modify`).
pub fn parse_class(
    kinds: &[KindEntry],
    kind: &str,
    words: &[&str],
) -> Result<ClassOptions, TcError> {
    match registry::lookup(kinds, kind)
        .and_then(syntax)
        .and_then(|s| s.class)
    {
        Some(parse) => parse(&mut Tokens::new(words)).map_err(parser_exit),
        // tc_class_modify prints it and returns 1.
        None => Err(TcError::new(format!(
            "Error: Qdisc \"{kind}\" is classless.\n(classes with options: {})",
            names(kinds, has_class_options)
        ))
        .exit(TcError::PARSE)),
    }
}

/// `e` from a kind's (or a classifier's) option parser with the exit code
/// tc gives: iproute2's `invarg`, `duparg` and `incomplete_command` (its
/// messages "Error: argument ...", "Error: duplicate ..." and "Command line
/// is not complete") `exit(-1)`, 255; its other refusals make
/// `tc_qdisc_modify` (`tc_class_modify`, `tc_filter_modify`) return 1. A
/// message in the kernel's "Error: " form is a refusal bloatbox's parser
/// makes where the kernel would, and keeps the kernel's 2.
pub fn parser_exit(e: TcError) -> TcError {
    let args = [
        "Error: argument \"",
        "Error: duplicate \"",
        "Command line is not complete",
    ];
    if args.iter().any(|a| e.0.starts_with(a)) {
        e.exit(TcError::ARGS)
    } else if e.code() == TcError::KERNEL
        && !e.0.starts_with("Error: ")
        && !e.0.starts_with("RTNETLINK")
    {
        e.exit(TcError::PARSE)
    } else {
        e
    }
}

/// The qdisc kinds iproute2 6.1 has a parser for (tc/q_*.c) that bloatbox
/// does not build.
const IPROUTE2_KINDS: &[&str] = &[
    "cake", "cbs", "choke", "clsact", "drr", "etf", "ets", "fq", "fq_pie", "gred", "hfsc", "hhf",
    "ingress", "mqprio", "multiq", "netem", "pie", "plug", "prio", "red", "sfb", "skbprio",
    "taprio", "cbq",
];

/// The built-in entry of `name`.
pub fn lookup(name: &str) -> Option<&'static KindEntry> {
    crate::qdisc::registry::lookup(BUILTIN, name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dir::Dir;
    use crate::qdisc::registry::new_qdisc;
    use crate::qdisc::tree::DevSpec;
    use crate::qdisc::{Qdisc, QdiscCtx};

    /// A `kind` qdisc from the words after the kind, as tc builds one.
    fn build(kind: &str, dev: &DevSpec, words: &[&str]) -> Result<Box<dyn Qdisc>, TcError> {
        let options = parse_qdisc(dev.kinds, kind, words)?;
        new_qdisc(kind, QdiscCtx::default(), dev, &options)
    }

    #[test]
    fn builds_every_kind_with_defaults() {
        let dev = DevSpec {
            tx_queues: 4,
            ..DevSpec::new(Dir::LeftToRight, BUILTIN)
        };
        for kind in BUILTIN.iter().map(|k| k.name) {
            // tbf has mandatory options
            let args: &[&str] = match kind {
                "tbf" => &["rate", "1mbit", "burst", "10kb", "latency", "50ms"],
                _ => &[],
            };
            let q = build(kind, &dev, args).unwrap();
            assert_eq!(q.kind(), kind);
        }
    }

    #[test]
    fn unknown_kinds_error_like_tc() {
        let dev = DevSpec::new(Dir::LeftToRight, BUILTIN);
        // iproute2 6.1 has q_cake: it parses the options, the kernel
        // refuses the kind; a kind iproute2 lacks cannot be parsed.
        let e = build("cake", &dev, &["bandwidth", "1mbit"]).err().unwrap();
        assert!(e.0.starts_with("Error: Specified qdisc kind is unknown.\n"));
        assert_eq!(e.code(), TcError::KERNEL);
        let e = build("bogus", &dev, &["limit", "1"]).err().unwrap();
        assert!(e
            .0
            .starts_with("Unknown qdisc \"bogus\", hence option \"limit\" is unparsable"));
        assert_eq!(e.code(), TcError::PARSE);
        let e = build("cake", &dev, &[]).err().unwrap();
        assert!(e.0.starts_with("Error: Specified qdisc kind is unknown."));
    }

    #[test]
    fn options_reach_the_constructor() {
        let dev = DevSpec::new(Dir::LeftToRight, BUILTIN);
        let q = build("bfifo", &dev, &["limit", "10kb"]).unwrap();
        let dump = q.dump(crate::time::Instant::ZERO);
        assert_eq!(crate::tc::show::qdisc_options(&dump).plain, "limit 10Kb");
        assert!(build("pfifo", &dev, &["limit", "x"]).is_err());
    }
}
