//! Each qdisc kind's tc syntax, registered by the kind's name as iproute2
//! finds a `qdisc_util` by name (tc/tc.c `get_qdisc_kind`): the built-in
//! kinds' (`crate::tc::opts::BUILTIN`, one `tc/q_<kind>.c` each) and any
//! a program registers for a kind of its own (`register`, as iproute2
//! loads a `q_<kind>.so`). The kinds themselves, what a device can build,
//! are the core's table (`crate::qdisc::kinds::BUILTIN`); a kind without
//! a syntax here can be built but not parsed or printed by tc. Here too
//! is what reads the words after a kind with the kind's parser, and the
//! ordered JSON object iproute2's printers write.

use super::keys::KeyTable;
use super::tokens::Tokens;
use super::TcError;
use crate::dir::Dir;
use crate::qdisc::kinds::{self, KindEntry};
use crate::qdisc::{ClassOptions, QdiscOptions, Xstats};
use std::sync::RwLock;

pub use crate::qdisc::kinds::names;

/// A parser of the words after the kind in `tc class ...`.
pub type ParseClass = fn(&mut Tokens) -> Result<ClassOptions, TcError>;

/// A kind's tc syntax: what iproute2's `q_<kind>.c` does for it.
pub struct Syntax {
    /// The kind (`TCA_KIND`) this is the syntax of.
    pub kind: &'static str,
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
    /// Whether the options printer leaves a trailing space after the last
    /// word, as most of iproute2's do (not the fifos', HTB's or
    /// pfifo_fast's and prio's, tc/q_prio.c `prio_print_opt`).
    pub trailing_space: bool,
    /// `print_xstats`: the kind's xstats (qdisc or class) as `tc -s`
    /// prints them, and their `-j` object; `None` for a kind without any.
    pub xstats: Option<&'static XstatsPrinter>,
    /// Trees that exercise the kind as a root, at least one: the property
    /// tests, the reliability tests and the fuzz set-ups run every kind's
    /// samples, so a kind in the table is checked without a line written
    /// for it there.
    pub samples: &'static [Sample],
    /// Trees the per-packet benchmark (`benches/qdisc.rs`) and the
    /// allocation test drive, at least one: limits large enough that a
    /// standing queue of one frame per flow (10 000 flows) is never
    /// tail-dropped. Their names are the benchmark's, kept from commit to
    /// commit so that runs compare.
    pub benches: &'static [Bench],
    /// The TUI's qdisc menu: the tc lines that make this kind the root of
    /// a direction's device on a link of the rate given (bytes/s, 0:
    /// unlimited); `None` keeps the kind off the menu.
    pub example: Option<Example>,
    /// The keys of its structured table in the configuration
    /// (`[link.qdisc]` with `kind = "..."`); `None`: the configuration
    /// takes the kind as a string only (`qdisc = "kind options"`).
    pub table: Option<&'static KeyTable>,
}

/// A tree that exercises a kind (`Syntax::samples`): the tc lines that
/// build it, with small limits so that queues fill and drop.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Its name, for messages (`tbf_peakrate`).
    pub name: &'static str,
    /// The tc lines that build it; ` D ` stands for the device.
    pub lines: &'static [&'static str],
    /// TX queues the device needs (more than 1 for mq).
    pub tx_queues: u16,
    /// The shaper's bound, for a tree that shapes: bytes sent in any
    /// window stay within rate (bytes/s) × window + burst (bytes).
    pub shaping: Option<(u64, u64)>,
}

impl Sample {
    /// A sample on a single-queue device that does not shape.
    pub const fn new(name: &'static str, lines: &'static [&'static str]) -> Sample {
        Sample {
            name,
            lines,
            tx_queues: 1,
            shaping: None,
        }
    }

    /// Its lines for device `dev` (` D ` replaced).
    pub fn lines_for(&self, dev: Dir) -> Vec<String> {
        self.lines.iter().map(|l| on_device(l, dev)).collect()
    }
}

/// A tree a kind is benchmarked on (`Syntax::benches`): the tc lines that
/// build it, and for a tree of many classes the line of one class, which
/// the benchmark repeats for each minor and steers each flow to one of.
#[derive(Clone, Copy, Debug)]
pub struct Bench {
    /// Its name in the benchmark's results (`htb_1000_classes`).
    pub name: &'static str,
    /// The tc lines that build it; ` D ` stands for the device.
    pub lines: &'static [&'static str],
    /// A class line repeated after `lines` for each minor of the
    /// benchmark's classes, ` D ` the device and `MINOR` the minor in hex
    /// (`None`: the tree's own classes take every frame).
    pub classes: Option<&'static str>,
    /// TX queues the device needs (more than 1 for mq, whose children the
    /// benchmark steers each flow to one of).
    pub tx_queues: u16,
}

impl Bench {
    /// A tree on a single-queue device, without repeated classes.
    pub const fn new(name: &'static str, lines: &'static [&'static str]) -> Bench {
        Bench {
            name,
            lines,
            classes: None,
            tx_queues: 1,
        }
    }

    /// The same tree with `line` repeated for each class minor.
    pub const fn with_classes(self, line: &'static str) -> Bench {
        Bench {
            classes: Some(line),
            ..self
        }
    }

    /// Its lines for device `dev`, with `classes` classes `1..=classes`.
    pub fn lines_for(&self, dev: Dir, classes: u32) -> Vec<String> {
        let mut lines: Vec<String> = self.lines.iter().map(|l| on_device(l, dev)).collect();
        if let Some(class) = self.classes {
            let class = on_device(class, dev);
            lines.extend((1..=classes).map(|minor| class.replace("MINOR", &format!("{minor:x}"))));
        }
        lines
    }
}

/// A sample's or bench's line for device `dev`: ` D ` replaced.
fn on_device(line: &str, dev: Dir) -> String {
    line.replace(" D ", &format!(" {} ", dev.dev()))
}

/// Every sample of every kind of `table` that has a syntax, in the table's
/// order, with its kind.
pub fn samples(table: &[KindEntry]) -> Vec<(&'static str, Sample)> {
    table
        .iter()
        .filter_map(|k| syntax(k.name))
        .flat_map(|s| s.samples.iter().map(move |sample| (s.kind, *sample)))
        .collect()
}

/// The tc lines of a kind's menu entry (see `Syntax::example`).
pub type Example = fn(Dir, u64) -> Vec<String>;

/// A kind's xstats printer: the text `tc -s` prints for `xstats` (`None`
/// for xstats of another kind), and the `xstats` object of `tc -s -j`.
pub struct XstatsPrinter {
    /// Appends the lines `tc -s` prints after the counters.
    pub text: fn(&mut String, &Xstats) -> Option<()>,
    /// The `xstats` object of `tc -s -j`.
    pub json: fn(&Xstats) -> Option<JsonObj>,
}

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

/// C's `%#x`, as iproute2 prints a mask (`0` rather than `0x0`; its
/// `print_0xhex` writes the same into JSON).
pub fn c_hex(v: u32) -> String {
    if v == 0 {
        "0".into()
    } else {
        format!("{v:#x}")
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
    /// The `options` object of `tc -d -j`, where the printer's
    /// `show_details` fields make it differ from `json` (TBF, HTB, SFQ and
    /// RED print some fields with `PRINT_ANY` under `-d` only).
    pub detail_json: Option<JsonObj>,
    /// What the printer adds with `-s` after the options, before the
    /// " Sent" line (sfq's per-flow RED counters, `sfq_print_opt`'s
    /// `show_stats` block; its keys join `json` under `-s -j`). Empty for
    /// most kinds.
    pub stats: String,
    /// The `-s -j` keys of `stats`, added to the options object.
    pub stats_json: JsonObj,
}

impl Printed {
    /// Options whose `-d` text is the plain one.
    pub fn same(text: String, json: JsonObj) -> Printed {
        Printed {
            detail: text.clone(),
            plain: text,
            json,
            detail_json: None,
            stats: String::new(),
            stats_json: JsonObj::new(),
        }
    }

    /// The `options` object of `tc -j`, with `-d` or without.
    pub fn json_for(self, details: bool) -> JsonObj {
        match self.detail_json {
            Some(j) if details => j,
            _ => self.json,
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
    /// An array of objects, each keeping its keys' order (CAKE's `tins`).
    Objs(Vec<JsonObj>),
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

    /// Puts the array of objects `objs` under `key`, last or where `key` is.
    pub fn insert_objs(&mut self, key: impl Into<String>, objs: Vec<JsonObj>) {
        self.put(key.into(), JsonField::Objs(objs));
    }

    /// Appends the value `v` under `key` even if the key is there already:
    /// iproute2's JSON writer repeats a key a printer prints twice (TBF's
    /// `mpu` under `-d` with a peak rate).
    pub fn push(&mut self, key: impl Into<String>, v: serde_json::Value) {
        self.0.push((key.into(), JsonField::Value(v)));
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
                        JsonField::Objs(v) => v.iter().map(JsonObj::to_value).collect(),
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
                JsonField::Objs(v) => m.serialize_entry(k, v)?,
            }
        }
        m.end()
    }
}

/// The syntaxes registered beyond the built-in ones (`register`).
static REGISTERED: RwLock<Vec<&'static Syntax>> = RwLock::new(Vec::new());

/// The built-in kinds and those registered (`kinds`): a table that only
/// grows, rebuilt (and the old one left behind) by each registration.
static KINDS: RwLock<&'static [KindEntry]> = RwLock::new(kinds::BUILTIN);

/// Registers a kind of one's own, as the kernel loads a `sch_<kind>` module
/// and iproute2 a `q_<kind>.so`: its row joins the table of kinds the
/// configuration builds devices from (`kinds`), and its syntax lets tc
/// parse and print it. A later registration of the same kind replaces the
/// earlier one; a built-in kind cannot be replaced (its registration is
/// ignored).
pub fn register(entry: KindEntry, syntax: &'static Syntax) {
    if kinds::lookup(kinds::BUILTIN, entry.name).is_some() {
        return;
    }
    let mut registered = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
    registered.retain(|s| s.kind != syntax.kind);
    registered.push(syntax);
    let mut table = KINDS.write().unwrap_or_else(|e| e.into_inner());
    let mut rows: Vec<KindEntry> = table
        .iter()
        .filter(|k| k.name != entry.name)
        .copied()
        .collect();
    rows.push(entry);
    *table = Vec::leak(rows);
}

/// The table of kinds: the built-in ones (`crate::qdisc::kinds::BUILTIN`)
/// and those registered, in that order.
pub fn kinds() -> &'static [KindEntry] {
    *KINDS.read().unwrap_or_else(|e| e.into_inner())
}

/// The syntax of kind `kind`: the built-in one, or one registered.
pub fn syntax(kind: &str) -> Option<&'static Syntax> {
    super::opts::BUILTIN
        .iter()
        .copied()
        .find(|s| s.kind == kind)
        .or_else(|| {
            let registered = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
            registered.iter().copied().find(|s| s.kind == kind)
        })
}

/// Whether `entry`'s classes take options (`tc class add ... htb rate
/// ...`); tc calls every other kind classless there.
pub fn has_class_options(entry: &KindEntry) -> bool {
    syntax(entry.name).is_some_and(|s| s.class.is_some())
}

/// The options `words` (after `kind` in `tc qdisc ...`) give, read by the
/// kind's own parser from the table `kinds`, as iproute2 parses them before
/// anything reaches the kernel. A kind the table lacks has no options
/// (the tree then answers as the kernel does), or, when words follow it,
/// tc's "Unknown qdisc".
pub fn parse_qdisc(
    table: &[KindEntry],
    kind: &str,
    words: &[&str],
) -> Result<QdiscOptions, TcError> {
    parse_qdisc_noting(table, kind, words).map(|(options, _)| options)
}

/// `parse_qdisc`, with the notices the kind's parser printed on standard
/// error as it accepted the words (`Tokens::notice`), in order.
pub fn parse_qdisc_noting(
    table: &[KindEntry],
    kind: &str,
    words: &[&str],
) -> Result<(QdiscOptions, Vec<String>), TcError> {
    match (kinds::lookup(table, kind), words.first()) {
        (Some(_), _) => {
            let syntax = syntax(kind).ok_or_else(|| {
                TcError::new(format!(
                    "Error: qdisc kind \"{kind}\" has no tc syntax in its table entry"
                ))
            })?;
            let mut tokens = Tokens::new(words);
            match (syntax.qdisc)(&mut tokens).map_err(parser_exit) {
                Ok(options) => Ok((options, tokens.into_notices())),
                // What tc printed before it gave up comes first.
                Err(TcError(text, code)) => {
                    let noted: String = tokens
                        .into_notices()
                        .into_iter()
                        .map(|n| n + "\n")
                        .collect();
                    Err(TcError(noted + &text, code))
                }
            }
        }
        (None, None) => Ok((QdiscOptions::None, Vec::new())),
        // iproute2 finds no q_<kind> to parse the options with.
        // A kind iproute2 has a q_<kind> for: tc parses its options and
        // the kernel, which lacks the kind here, refuses it.
        (None, Some(_)) if IPROUTE2_KINDS.contains(&kind) => {
            Err(kinds::unknown_kind(table, kind).into())
        }
        (None, Some(first)) => Err(TcError::new(format!(
            "Unknown qdisc \"{kind}\", hence option \"{first}\" is unparsable\n(bloatbox \
             qdiscs: {})",
            names(table, |_| true)
        ))
        .exit(TcError::PARSE)),
    }
}

/// The options `words` (after `kind` in `tc class ...`) give, read by the
/// kind's class parser; a kind without one, or one the table lacks, is
/// classless (iproute2's `tc_class_modify`).
pub fn parse_class(
    table: &[KindEntry],
    kind: &str,
    words: &[&str],
) -> Result<ClassOptions, TcError> {
    match kinds::lookup(table, kind)
        .and_then(|entry| syntax(entry.name))
        .and_then(|s| s.class)
    {
        Some(parse) => parse(&mut Tokens::new(words)).map_err(parser_exit),
        // tc_class_modify prints it and returns 1.
        None => Err(TcError::new(format!(
            "Error: Qdisc \"{kind}\" is classless.\n(classes with options: {})",
            names(table, has_class_options)
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
    "cbs", "clsact", "etf", "gred", "ingress", "mqprio", "taprio", "cbq",
];

/// The entry of `name` in the table of kinds (`kinds`).
pub fn lookup(name: &str) -> Option<&'static KindEntry> {
    kinds::lookup(kinds(), name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dir::Dir;
    use crate::qdisc::kinds::{new_qdisc, BUILTIN};
    use crate::qdisc::tree::DevSpec;
    use crate::qdisc::{Qdisc, QdiscCtx};

    /// A `kind` qdisc from the words after the kind, as tc builds one.
    fn build(kind: &str, dev: &DevSpec, words: &[&str]) -> Result<Box<dyn Qdisc>, TcError> {
        let options = parse_qdisc(dev.kinds, kind, words)?;
        Ok(new_qdisc(kind, QdiscCtx::default(), dev, &options)?)
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
                "red" => &["limit", "30kb", "avpkt", "1000"],
                "choke" => &["limit", "100", "bandwidth", "10mbit"],
                // ets needs bands, strict or quanta (tc/q_ets.c)
                "ets" => &["bands", "3"],
                _ => &[],
            };
            let q = build(kind, &dev, args).unwrap();
            assert_eq!(q.kind(), kind);
        }
    }

    #[test]
    fn unknown_kinds_error_like_tc() {
        let dev = DevSpec::new(Dir::LeftToRight, BUILTIN);
        // iproute2 has q_cbq: it parses the options, the kernel
        // refuses the kind; a kind iproute2 lacks cannot be parsed.
        let e = build("cbq", &dev, &["default", "1"]).err().unwrap();
        assert!(e.0.starts_with("Error: Specified qdisc kind is unknown.\n"));
        assert_eq!(e.code(), TcError::KERNEL);
        let e = build("bogus", &dev, &["limit", "1"]).err().unwrap();
        assert!(e
            .0
            .starts_with("Unknown qdisc \"bogus\", hence option \"limit\" is unparsable"));
        assert_eq!(e.code(), TcError::PARSE);
        let e = build("cbq", &dev, &[]).err().unwrap();
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
