//! The qdisc of one direction in its written forms and what they build:
//! the structured form (`qdisc = "fq_codel"`, `qdisc = "tbf rate 1560mbit
//! burst 20280b latency 5ms"`, or a table with `kind` and typed parameters,
//! including a classful kind's tree) becomes typed tc requests here
//! (`QdiscSpec::steps`). A table is read by the keys its kind's syntax
//! declares (`crate::tc::keys`, `Syntax::table`): their values are typed
//! when the file is read, so a bad one is reported at its place, and become
//! the tc words the kind's own parser reads, as the words of the string
//! form do; each request carries the tc line that says the same, for the
//! report and for errors, and errors name the field inside the qdisc. The
//! literal form (`tc = [...]`) is checked for its shape (`tc
//! qdisc|class|filter ... dev left|right ...`) and routed to its direction
//! by the device it names; the tc front end parses it when the tree is
//! built (see `Config::validate_with`).

use super::values::{Size, TcRate, TcTime};
use crate::dir::Dir;
use crate::handle::{tc_h_make, tc_h_minor, Handle, TC_H_ROOT};
use crate::qdisc::estimator::EstimatorSpec;
use crate::qdisc::kinds::KindEntry;
use crate::qdisc::request::{Object, Options, Request, Verb};
use crate::qdisc::QdiscOptions;
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::tokens::Tokens;
use crate::tc::Step;
use crate::tc::{estimator, syntax};
use serde::de::{self, Deserialize, DeserializeOwned, Deserializer, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use std::fmt;

/// The kind `qdisc = "..."` names: a configurable entry of the table of
/// kinds (mq is chosen with `tx_queues`).
fn configurable(kind: &str) -> Option<&'static KindEntry> {
    syntax::lookup(kind).filter(|k| k.configurable)
}

/// The configurable kinds that have a structured table, with its keys, in
/// the table's order.
fn table_kinds() -> impl Iterator<Item = (&'static str, &'static KeyTable)> {
    syntax::kinds()
        .iter()
        .filter(|k| k.configurable)
        .filter_map(|k| Some((k.name, syntax::syntax(k.name)?.table?)))
}

/// What is wrong with a qdisc as written: the field inside it
/// (`class[1].parent`; empty for the qdisc itself) and the problem, with
/// what is allowed and the fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct QdiscError {
    /// The field inside the qdisc, empty for the qdisc itself.
    pub field: String,
    /// The problem, what is allowed and the fix.
    pub message: String,
}

impl QdiscError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> QdiscError {
        QdiscError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// The qdisc of a direction as written in the configuration.
#[derive(Clone, Debug, PartialEq)]
pub enum QdiscSpec {
    /// `"fq_codel"` or `"fq_codel limit 1024 ecn"`: a kind and tc arguments.
    Line(String),
    /// `{ kind = "fq_codel", limit = 1024, ecn = true }` or an HTB tree.
    Table(QdiscTable),
}

/// The structured qdisc form: a kind and the values of its keys (times and
/// rates in tc units; a bare time is µs as in tc, so write units), and for
/// a classful kind its classes under the root `1:`.
#[derive(Clone, Debug, PartialEq)]
pub struct QdiscTable {
    kind: &'static str,
    keys: &'static KeyTable,
    values: Vec<Set>,
    classes: Vec<ClassTable>,
    /// `est = "1sec 4sec"`: a rate estimator, tc's `est INTERVAL
    /// TIME_CONSTANT` before the kind.
    est: Option<String>,
}

/// One class under the root `1:` (`[[link.qdisc.class]]`).
#[derive(Clone, Debug, PartialEq)]
pub struct ClassTable {
    /// `1:10` (minor in hex, as tc).
    classid: String,
    /// `1:` (the root, default) or an earlier class such as `1:1`.
    parent: Option<String>,
    /// The values of the kind's class keys.
    values: Vec<Set>,
    /// Leaf qdisc (classless), e.g. `"sfq perturb 10"`.
    qdisc: Option<QdiscSpec>,
    /// The class's rate estimator, as the qdisc's.
    est: Option<String>,
}

/// A key set in a table, with its value as read.
#[derive(Clone, Debug, PartialEq)]
struct Set {
    key: &'static Key,
    value: Written,
}

/// A value as read from the file, typed by its key.
#[derive(Clone, Debug, PartialEq)]
enum Written {
    Count(u32),
    Decimal(f64),
    Size(Size),
    Rate(TcRate),
    Time(TcTime),
    Flag(bool),
    Text(String),
}

/// Handle of the root qdisc the structured form creates for a classful
/// kind and for mq.
const ROOT_HANDLE: &str = "1:";
const ROOT: Handle = tc_h_make(1, 0);

/// The keys a class table takes besides its kind's.
const CLASSID: &str = "classid";
const PARENT: &str = "parent";
const LEAF: &str = "qdisc";
/// The key of a rate estimator, on a qdisc table and a class table alike.
const EST: &str = "est";

impl QdiscSpec {
    /// The default qdisc of a single-queue device.
    pub fn pfifo_fast() -> Self {
        QdiscSpec::Line("pfifo_fast".into())
    }

    /// The tc kind.
    pub fn kind(&self) -> &str {
        match self {
            QdiscSpec::Line(l) => l.split_whitespace().next().unwrap_or(""),
            QdiscSpec::Table(t) => t.kind,
        }
    }

    /// Classful with class options (HTB, QFQ): such a kind cannot sit
    /// under mq or be an HTB leaf in this form.
    fn is_classful(&self) -> bool {
        configurable(self.kind()).is_some_and(syntax::has_class_options)
    }

    /// Checks the parts tc will not: known kind, values in the range tc
    /// reads them into, class ids and parents, classless leaves. The error
    /// names the field inside the qdisc (`class[1].parent`, empty for the
    /// qdisc itself) and the message.
    pub fn check(&self) -> Result<(), QdiscError> {
        match self {
            QdiscSpec::Line(line) => check_kind(line.split_whitespace().next().unwrap_or(""))
                .map_err(|m| QdiscError::new("", m)),
            QdiscSpec::Table(t) => {
                check_values(&t.values)?;
                let mut seen: Vec<&str> = Vec::new();
                for (i, class) in t.classes.iter().enumerate() {
                    class.check(&seen).map_err(in_class(i))?;
                    seen.push(&class.classid);
                }
                Ok(())
            }
        }
    }

    /// The steps that build this qdisc as the root of `dir`'s device
    /// (under an mq root with one copy per TX queue when `tx_queues > 1`):
    /// typed requests, each with the tc line that says the same. The error
    /// names the field inside the qdisc (empty for the qdisc itself).
    pub fn steps(&self, dir: Dir, tx_queues: u32) -> Result<Vec<Step>, QdiscError> {
        let dev = dir.dev();
        let args = self.args();
        if tx_queues > 1 && self.is_classful() {
            return Err(QdiscError::new("", format!(
                "a {} tree cannot be repeated under mq (tx_queues = {tx_queues}); fix: use tx_queues = 1 or write tc lines",
                self.kind()
            )));
        }
        let options = self.options()?;
        let (rate, est) = self.estimator()?;
        if tx_queues > 1 {
            // mq without options: what `tc qdisc add ... mq` sends.
            let mut steps = vec![qdisc_step(
                dir,
                TC_H_ROOT,
                Some(ROOT),
                "mq",
                QdiscOptions::None,
                None,
                format!("tc qdisc add dev {dev} root handle {ROOT_HANDLE} mq"),
            )];
            for queue in 1..=tx_queues {
                steps.push(qdisc_step(
                    dir,
                    tc_h_make(1, queue as u16),
                    None,
                    self.kind(),
                    options.clone(),
                    rate,
                    format!("tc qdisc add dev {dev} parent {ROOT_HANDLE}{queue:x} {est}{args}"),
                ));
            }
            return Ok(steps);
        }
        // A classful kind's table builds its tree under the root `1:`.
        let table = match self {
            QdiscSpec::Table(t) if t.keys.class.is_some() => t,
            _ => {
                return Ok(vec![qdisc_step(
                    dir,
                    TC_H_ROOT,
                    None,
                    self.kind(),
                    options,
                    rate,
                    format!("tc qdisc add dev {dev} root {est}{args}"),
                )])
            }
        };
        let mut steps = vec![qdisc_step(
            dir,
            TC_H_ROOT,
            Some(ROOT),
            table.kind,
            options,
            rate,
            format!("tc qdisc add dev {dev} root handle {ROOT_HANDLE} {est}{args}"),
        )];
        let mut leaves = Vec::new();
        for (i, class) in table.classes.iter().enumerate() {
            let at = in_class(i);
            let classid =
                class_handle(&class.classid).map_err(|m| at(QdiscError::new(CLASSID, m)))?;
            let parent_text = class.parent.as_deref().unwrap_or(ROOT_HANDLE);
            let parent = class_handle(parent_text).map_err(|m| at(QdiscError::new(PARENT, m)))?;
            check_values(&class.values).map_err(&at)?;
            let (rate, est) = estimator(class.est.as_deref()).map_err(&at)?;
            let words = words(&class.values);
            let class_args = words.join(" ");
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            let options =
                syntax::parse_class(syntax::kinds(), table.kind, &words).map_err(|e| {
                    at(QdiscError::new(
                        "",
                        format!("tc rejects \"{} {class_args}\": {e}", table.kind),
                    ))
                })?;
            steps.push(Step::Request {
                request: Request {
                    object: Object::Class,
                    verb: Verb::Add,
                    dev: Some(dir),
                    parent: Some(parent),
                    handle: Some(classid),
                    kind: Some(table.kind.into()),
                    options: Options::Class(options),
                    rate,
                },
                line: format!(
                    "tc class add dev {dev} parent {parent_text} classid {} {est}{} {class_args}",
                    class.classid, table.kind,
                ),
            });
            if let Some(leaf) = &class.qdisc {
                let in_leaf = |e: QdiscError| at(QdiscError::new(LEAF, e.message));
                let options = leaf.options().map_err(in_leaf)?;
                let (rate, est) = leaf.estimator().map_err(in_leaf)?;
                leaves.push(qdisc_step(
                    dir,
                    classid,
                    None,
                    leaf.kind(),
                    options,
                    rate,
                    format!(
                        "tc qdisc add dev {dev} parent {} {est}{}",
                        class.classid,
                        leaf.args()
                    ),
                ));
            }
        }
        steps.extend(leaves);
        Ok(steps)
    }

    /// The options tc would send for this qdisc: the words of the written
    /// form, or those a table's values make, read by the kind's own parser.
    /// The error names the field.
    fn options(&self) -> Result<QdiscOptions, QdiscError> {
        if let QdiscSpec::Table(t) = self {
            check_values(&t.values)?;
        }
        let words = self.words();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let (kind, options) = words.split_first().unwrap_or((&"", &[]));
        syntax::parse_qdisc(syntax::kinds(), kind, options)
            .map_err(|e| QdiscError::new("", format!("tc rejects \"{}\": {e}", self.args())))
    }

    /// The estimator a table asks for, and its tc words (`est 1sec 4sec `,
    /// empty without).
    fn estimator(&self) -> Result<(Option<EstimatorSpec>, String), QdiscError> {
        match self {
            QdiscSpec::Table(t) => estimator(t.est.as_deref()),
            QdiscSpec::Line(_) => Ok((None, String::new())),
        }
    }

    /// `kind arg arg ...` as tc takes it after `root`/`parent X`.
    fn args(&self) -> String {
        self.words().join(" ")
    }

    /// The kind and its tc words: those written, or those of the values a
    /// table sets.
    fn words(&self) -> Vec<String> {
        match self {
            QdiscSpec::Line(line) => line.split_whitespace().map(str::to_string).collect(),
            QdiscSpec::Table(t) => {
                let mut w = vec![t.kind.to_string()];
                w.extend(words(&t.values));
                w
            }
        }
    }
}

impl ClassTable {
    fn check(&self, earlier: &[&str]) -> Result<(), QdiscError> {
        if tc_h_minor(class_handle(&self.classid).map_err(at(CLASSID))?) == 0 {
            return Err(at(CLASSID)(format!(
                "classid \"{}\": minor 0 is the qdisc itself; fix: use 1:1 .. 1:ffff",
                self.classid
            )));
        }
        if earlier.contains(&self.classid.as_str()) {
            return Err(at(CLASSID)(format!(
                "classid \"{}\" is defined twice; fix: give each class its own id",
                self.classid
            )));
        }
        if let Some(parent) = &self.parent {
            let is_root = parent == ROOT_HANDLE || parent == "1:0";
            if !is_root && !earlier.contains(&parent.as_str()) {
                return Err(at(PARENT)(format!(
                    "parent \"{parent}\" is neither the root 1: nor a class defined above; fix: define the parent class first"
                )));
            }
        }
        check_values(&self.values)?;
        if let Some(leaf) = &self.qdisc {
            if leaf.is_classful() {
                return Err(at(LEAF)(format!(
                    "leaf qdisc \"{}\" is classful; fix: use a classless leaf (sfq, fq_codel, pfifo...) or write tc lines",
                    leaf.kind()
                )));
            }
            leaf.check().map_err(|e| QdiscError::new(LEAF, e.message))?;
        }
        Ok(())
    }
}

/// The estimator `est = "INTERVAL TIME_CONSTANT"` asks for, read as tc
/// reads `est` (tc/tc_estimator.c `parse_estimator`), and the words it
/// puts before the kind (`est 1sec 4sec `); the error names the key.
fn estimator(est: Option<&str>) -> Result<(Option<EstimatorSpec>, String), QdiscError> {
    let Some(text) = est else {
        return Ok((None, String::new()));
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut tokens = Tokens::new(&words);
    let mut spec = None;
    estimator::parse(&mut tokens, &mut spec)
        .map_err(|e| QdiscError::new(EST, format!("tc rejects \"{EST} {text}\": {e}")))?;
    if let Some(extra) = tokens.next() {
        return Err(QdiscError::new(EST, format!(
            "\"{extra}\" follows the interval and the time constant; fix: write {EST} = \"1sec 4sec\""
        )));
    }
    Ok((spec, format!("{EST} {} ", words.join(" "))))
}

/// Puts a field of class `i` under `class[i]` (the class itself when the
/// field is empty).
fn in_class(i: usize) -> impl Fn(QdiscError) -> QdiscError {
    move |e| {
        let field = if e.field.is_empty() {
            format!("class[{i}]")
        } else {
            format!("class[{i}].{}", e.field)
        };
        QdiscError { field, ..e }
    }
}

/// Checks what tc's parser would take differently from the file: a
/// number beyond what tc reads it into, a class minor that is not one.
fn check_values(values: &[Set]) -> Result<(), QdiscError> {
    for set in values {
        let name = set.key.name;
        match (set.key.value, &set.value) {
            (Value::Bounded { max, unit, example }, Written::Count(n)) if u64::from(*n) > max => {
                return Err(at(name)(format!(
                    "{n} is out of range; expected 0..={max} {unit}; fix: write {name} = {example}"
                )));
            }
            (Value::Size32 { .. }, Written::Size(s)) if u32::try_from(s.value()).is_err() => {
                return Err(at(name)(format!(
                    "\"{s}\" is out of range; expected at most {} bytes; fix: write e.g. {name} = 1514",
                    u32::MAX
                )));
            }
            (Value::Minor, Written::Text(t)) => {
                parse_minor(t).map_err(at(name))?;
            }
            (Value::Word { words }, Written::Text(t)) if !words.contains(&t.as_str()) => {
                return Err(at(name)(format!(
                    "\"{t}\" is not one of {}; fix: write {name} = \"{}\"",
                    words.join(", "),
                    words.first().copied().unwrap_or_default()
                )));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The tc words of the values set, in their keys' order.
fn words(values: &[Set]) -> Vec<String> {
    let mut w = Vec::new();
    for set in values {
        let name = set.key.name.to_string();
        match (set.key.value, &set.value) {
            (Value::Flag { on, off }, Written::Flag(b)) => {
                if let Some(word) = if *b { Some(on) } else { off } {
                    w.push(word.to_string());
                }
            }
            (Value::Size32 { plain: true }, Written::Size(s)) => {
                w.extend([name, s.value().to_string()]);
            }
            (Value::Words, Written::Text(t)) => {
                w.push(name);
                w.extend(t.split_whitespace().map(str::to_string));
            }
            (Value::Word { .. }, value) => w.push(value.to_string()),
            (_, value) => w.extend([name, value.to_string()]),
        }
    }
    w
}

impl fmt::Display for Written {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Written::Count(n) => write!(f, "{n}"),
            Written::Decimal(x) => write!(f, "{x}"),
            Written::Size(s) => write!(f, "{s}"),
            Written::Rate(r) => write!(f, "{r}"),
            Written::Time(t) => write!(f, "{t}"),
            Written::Flag(b) => write!(f, "{b}"),
            Written::Text(t) => f.write_str(t),
        }
    }
}

/// A class id or parent under the root `1:` (`1:` itself is the root
/// qdisc), as a handle.
fn class_handle(id: &str) -> Result<Handle, String> {
    let rest = id.strip_prefix(ROOT_HANDLE).ok_or_else(|| {
        format!("class id \"{id}\" is not under the root {ROOT_HANDLE}; fix: write 1:MINOR such as 1:10")
    })?;
    let minor = if rest.is_empty() {
        0
    } else {
        parse_minor(rest)?
    };
    Ok(tc_h_make(1, minor as u16))
}

/// A `tc qdisc add` step under `parent`.
fn qdisc_step(
    dir: Dir,
    parent: Handle,
    handle: Option<Handle>,
    kind: &str,
    options: QdiscOptions,
    rate: Option<EstimatorSpec>,
    line: String,
) -> Step {
    Step::Request {
        request: Request {
            object: Object::Qdisc,
            verb: Verb::Add,
            dev: Some(dir),
            parent: Some(parent),
            handle,
            kind: Some(kind.to_string()),
            options: Options::Qdisc(options),
            rate,
        },
        line,
    }
}

fn check_kind(kind: &str) -> Result<(), String> {
    if configurable(kind).is_some() {
        Ok(())
    } else if kind == "mq" {
        Err(
            "mq is chosen with tx_queues; fix: set tx_queues = 4 and qdisc = the per-queue child"
                .into(),
        )
    } else {
        let hint = crate::tc::hint::missing_kind(kind)
            .map(|h| format!(" ({h})"))
            .unwrap_or_default();
        Err(format!(
            "unknown qdisc kind \"{kind}\"{hint}; expected one of {}; fix: write e.g. qdisc = \"fq_codel\"",
            syntax::names(syntax::kinds(), |k| k.configurable)
        ))
    }
}

/// Attaches the field name to a check message.
fn at(field: &'static str) -> impl Fn(String) -> QdiscError {
    move |m| QdiscError::new(field, m)
}

/// A tc minor number: hexadecimal, 0..=ffff.
fn parse_minor(text: &str) -> Result<u32, String> {
    match u32::from_str_radix(text, 16) {
        Ok(v) if v <= 0xffff => Ok(v),
        _ => Err(format!(
            "\"{text}\" is not a class minor number; expected hexadecimal 0..ffff as in tc; fix: write e.g. \"10\" for 1:10"
        )),
    }
}

/// The entries of a TOML table in the order written.
type Entries = Vec<(String, toml::Value)>;

impl QdiscTable {
    /// Reads a table by its kind's keys. The messages are serde's for the
    /// same mistakes (unknown or missing field, unknown kind, wrong type),
    /// so a table reads as a derived struct would.
    fn read(entries: Entries) -> Result<QdiscTable, String> {
        let (mut kind, mut est) = (None, None);
        let mut rest = Vec::new();
        for (key, value) in entries {
            match key.as_str() {
                "kind" => kind = Some(value),
                EST => est = Some(typed(value)?),
                _ => rest.push((key, value)),
            }
        }
        let kind: String = typed(kind.ok_or_else(|| missing("kind"))?)?;
        let Some((kind, keys)) = table_kinds().find(|(name, _)| *name == kind) else {
            let names: Vec<&str> = table_kinds().map(|(name, _)| name).collect();
            return Err(format!(
                "unknown variant `{kind}`, expected {}",
                one_of(&names)
            ));
        };
        let mut names: Vec<&str> = keys.qdisc.iter().map(|k| k.name).collect();
        names.push(EST);
        let mut classes = Vec::new();
        let mut others = Vec::new();
        if let Some(class_keys) = keys.class {
            names.push("class");
            for (key, value) in rest {
                if key == "class" {
                    let tables: Vec<toml::Table> = typed(value)?;
                    classes = tables
                        .into_iter()
                        .map(|t| ClassTable::read(t.into_iter().collect(), class_keys))
                        .collect::<Result<_, _>>()?;
                } else {
                    others.push((key, value));
                }
            }
        } else {
            others = rest;
        }
        Ok(QdiscTable {
            kind,
            keys,
            values: read_values(others, keys.qdisc, &names)?,
            classes,
            est,
        })
    }
}

impl ClassTable {
    /// Reads a class table: its id, parent and leaf, and its kind's class
    /// keys.
    fn read(entries: Entries, keys: &'static [Key]) -> Result<ClassTable, String> {
        let mut names = vec![CLASSID, PARENT];
        names.extend(keys.iter().map(|k| k.name));
        names.extend([LEAF, EST]);
        let (mut classid, mut parent, mut qdisc, mut est) = (None, None, None, None);
        let mut others = Vec::new();
        for (key, value) in entries {
            match key.as_str() {
                CLASSID => classid = Some(typed(value)?),
                PARENT => parent = Some(typed(value)?),
                LEAF => qdisc = Some(typed(value)?),
                EST => est = Some(typed(value)?),
                _ => others.push((key, value)),
            }
        }
        let values = read_values(others, keys, &names)?;
        Ok(ClassTable {
            classid: classid.ok_or_else(|| missing(CLASSID))?,
            parent,
            values,
            qdisc,
            est,
        })
    }
}

/// The values of `keys` among `entries`, in the keys' order; `names` are
/// all the keys the table takes, for the message about one it does not.
fn read_values(entries: Entries, keys: &'static [Key], names: &[&str]) -> Result<Vec<Set>, String> {
    let mut values = Vec::new();
    for (name, value) in entries {
        let key = keys
            .iter()
            .find(|k| k.name == name)
            .ok_or_else(|| unknown_field(&name, names))?;
        if key.value == Value::Minor && value.is_integer() {
            // tc reads `default 10` as the hexadecimal minor 0x10: a TOML
            // integer would say another number.
            return Err(format!(
                "`{name}` = {value}: a class minor is a string, hexadecimal as tc reads it; \
                 fix: write {name} = \"{value}\" for class 1:{value}"
            ));
        }
        // serde's "invalid type: ..., expected u32" does not say which
        // key; the values' own messages quote what was written.
        let value = written(key, value).map_err(|e| {
            if e.starts_with("invalid type") {
                format!("`{name}`: {e}")
            } else {
                e
            }
        })?;
        values.push(Set { key, value });
    }
    if let Some(key) = keys
        .iter()
        .find(|k| k.required && !values.iter().any(|s| s.key.name == k.name))
    {
        return Err(missing(key.name));
    }
    values.sort_by_key(|s| keys.iter().position(|k| k.name == s.key.name));
    Ok(values)
}

/// A TOML value typed by its key.
fn written(key: &Key, value: toml::Value) -> Result<Written, String> {
    Ok(match key.value {
        Value::Count | Value::Bounded { .. } => Written::Count(typed(value)?),
        Value::Decimal => Written::Decimal(typed(value)?),
        Value::Size | Value::Size32 { .. } => Written::Size(typed(value)?),
        Value::Rate => Written::Rate(typed(value)?),
        Value::Time => Written::Time(typed(value)?),
        Value::Flag { .. } => Written::Flag(typed(value)?),
        Value::Minor | Value::Words | Value::Word { .. } => Written::Text(typed(value)?),
    })
}

/// A TOML value as `T`, or serde's message about it.
fn typed<T: DeserializeOwned>(value: toml::Value) -> Result<T, String> {
    T::deserialize(value).map_err(|e| e.message().to_string())
}

/// serde's message for a missing field.
fn missing(field: &str) -> String {
    format!("missing field `{field}`")
}

/// serde's message for a field the table does not take.
fn unknown_field(field: &str, names: &[&str]) -> String {
    if names.is_empty() {
        format!("unknown field `{field}`, there are no fields")
    } else {
        format!("unknown field `{field}`, expected {}", one_of(names))
    }
}

/// The names a message offers, as serde lists them.
fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.as_slice() {
        [one] => one.clone(),
        [a, b] => format!("{a} or {b}"),
        _ => format!("one of {}", quoted.join(", ")),
    }
}

/// What is wrong with the shape of a literal tc line (`tc = [...]`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LiteralLineError {
    /// The line does not start with `tc`.
    #[error("a tc line starts with \"tc\"; {LITERAL_EXAMPLE}")]
    NotTc,
    /// The first word after the options is not qdisc, class or filter.
    #[error("\"{0}\" is not a tc object; expected qdisc, class or filter; {LITERAL_EXAMPLE}")]
    NotAnObject(String),
    /// The device is neither left nor right.
    #[error("device \"{0}\" is unknown; expected dev left (left→right egress) or dev right (right→left egress); {LITERAL_EXAMPLE}")]
    UnknownDevice(String),
    /// The line names no device.
    #[error("the line names no device; expected dev left or dev right; {LITERAL_EXAMPLE}")]
    NoDevice,
    /// The line names more than one device.
    #[error("the line names {0} devices; expected exactly one dev; {LITERAL_EXAMPLE}")]
    Devices(usize),
}

/// The fix every shape error of a literal line suggests.
const LITERAL_EXAMPLE: &str = "fix: write e.g. \"tc qdisc add dev left root fq_codel\"";

/// Checks the shape of a literal tc line and returns the direction its
/// device selects (`dev left` = left→right egress).
pub fn literal_direction(line: &str) -> Result<Dir, LiteralLineError> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.first() != Some(&"tc") {
        return Err(LiteralLineError::NotTc);
    }
    // Options (-s, -d, -j...) may come first; objects may be abbreviated
    // ("tc q a", "tc cl add"), as iproute2 reads them.
    let object = words[1..].iter().find(|w| !w.starts_with('-'));
    match object {
        Some(o)
            if ["qdisc", "class", "filter"]
                .iter()
                .any(|full| full.starts_with(o)) => {}
        other => {
            return Err(LiteralLineError::NotAnObject(
                other.unwrap_or(&"").to_string(),
            ))
        }
    }
    let devs: Vec<&str> = words
        .windows(2)
        .filter(|w| w[0] == "dev")
        .map(|w| w[1])
        .collect();
    match devs.as_slice() {
        [dev] => Dir::from_dev(dev).ok_or_else(|| LiteralLineError::UnknownDevice(dev.to_string())),
        [] => Err(LiteralLineError::NoDevice),
        _ => Err(LiteralLineError::Devices(devs.len())),
    }
}

impl Serialize for QdiscSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            QdiscSpec::Line(l) => s.serialize_str(l),
            QdiscSpec::Table(t) => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("kind", t.kind)?;
                if let Some(est) = &t.est {
                    m.serialize_entry(EST, est)?;
                }
                serialize_values(&mut m, &t.values)?;
                if !t.classes.is_empty() {
                    m.serialize_entry("class", &t.classes)?;
                }
                m.end()
            }
        }
    }
}

impl Serialize for ClassTable {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry(CLASSID, &self.classid)?;
        if let Some(parent) = &self.parent {
            m.serialize_entry(PARENT, parent)?;
        }
        serialize_values(&mut m, &self.values)?;
        if let Some(qdisc) = &self.qdisc {
            m.serialize_entry(LEAF, qdisc)?;
        }
        if let Some(est) = &self.est {
            m.serialize_entry(EST, est)?;
        }
        m.end()
    }
}

/// The values set, as they were written.
fn serialize_values<M: SerializeMap>(m: &mut M, values: &[Set]) -> Result<(), M::Error> {
    for set in values {
        match &set.value {
            Written::Count(n) => m.serialize_entry(set.key.name, n)?,
            Written::Decimal(x) => m.serialize_entry(set.key.name, x)?,
            Written::Flag(b) => m.serialize_entry(set.key.name, b)?,
            other => m.serialize_entry(set.key.name, &other.to_string())?,
        }
    }
    Ok(())
}

impl<'de> Deserialize<'de> for QdiscSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = QdiscSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a qdisc kind with optional tc arguments (\"fq_codel\") or a table with `kind`",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<QdiscSpec, E> {
                let spec = QdiscSpec::Line(v.trim().to_string());
                check_kind(spec.kind()).map_err(E::custom)?;
                Ok(spec)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<QdiscSpec, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, toml::Value>()? {
                    entries.push(entry);
                }
                QdiscTable::read(entries)
                    .map(QdiscSpec::Table)
                    .map_err(de::Error::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tc lines the steps of `s` say, as the report prints them.
    fn lines(s: &QdiscSpec, dir: Dir, tx_queues: u32) -> Result<Vec<String>, String> {
        s.steps(dir, tx_queues)
            .map(|steps| steps.iter().map(|s| s.line().to_string()).collect())
            .map_err(|e| e.message)
    }

    impl QdiscSpec {
        fn table(&self) -> Option<&QdiscTable> {
            match self {
                QdiscSpec::Table(t) => Some(t),
                QdiscSpec::Line(_) => None,
            }
        }
    }

    /// An error's field and message, to compare as a pair.
    fn pair(e: QdiscError) -> (String, String) {
        (e.field, e.message)
    }

    fn spec(toml_text: &str) -> Result<QdiscSpec, String> {
        #[derive(serde::Deserialize)]
        struct W {
            qdisc: QdiscSpec,
        }
        toml::from_str::<W>(toml_text)
            .map(|w| w.qdisc)
            .map_err(|e| e.message().to_string())
    }

    #[test]
    fn string_form_is_kind_and_args() {
        let s = spec("qdisc = \"tbf rate 1560mbit  burst 20280b latency 5ms\"").unwrap();
        assert_eq!(
            lines(&s, Dir::LeftToRight, 1).unwrap(),
            vec!["tc qdisc add dev left root tbf rate 1560mbit burst 20280b latency 5ms"]
        );
        assert!(spec("qdisc = \"fq_kodel\"")
            .unwrap_err()
            .contains("unknown qdisc kind \"fq_kodel\""));
        assert!(spec("qdisc = \"mq\"").unwrap_err().contains("tx_queues"));
        let e = spec("qdisc = \"cbq\"").unwrap_err();
        assert!(
            e.contains("unknown qdisc kind \"cbq\" (bloatbox has no cbq"),
            "{e}"
        );
    }

    #[test]
    fn table_form_converts_to_tc_arguments() {
        let s =
            spec("qdisc = { kind = \"fq_codel\", limit = 1024, target = \"5ms\", ecn = false }")
                .unwrap();
        assert_eq!(
            lines(&s, Dir::RightToLeft, 1).unwrap(),
            vec!["tc qdisc add dev right root fq_codel limit 1024 target 5ms noecn"]
        );
        let e = spec("qdisc = { kind = \"fq_codel\", limt = 1 }").unwrap_err();
        assert!(e.contains("unknown field `limt`"), "{e}");
        let e = spec("qdisc = { kind = \"fq_codel\", target = \"5 parsecs\" }").unwrap_err();
        assert!(e.contains("invalid time"), "{e}");
        let e = spec("qdisc = { kind = \"tbf\", rate = \"1mbit\" }").unwrap_err();
        assert!(e.contains("missing field `burst`"), "{e}");
    }

    #[test]
    fn pie_and_fq_pie_tables_are_the_lines_they_print() {
        let s = spec("qdisc = { kind = \"pie\", limit = 100, target = \"20ms\", tupdate = \"30ms\", alpha = 4, beta = 8, ecn = true, bytemode = false, dq_rate_estimator = false }").unwrap();
        assert_eq!(
            lines(&s, Dir::LeftToRight, 1).unwrap(),
            vec!["tc qdisc add dev left root pie limit 100 target 20ms tupdate 30ms alpha 4 beta 8 ecn nobytemode no_dq_rate_estimator"]
        );
        let s = spec("qdisc = { kind = \"fq_pie\", flows = 64, quantum = \"3kb\", ecn_prob = 25 }")
            .unwrap();
        assert_eq!(
            lines(&s, Dir::RightToLeft, 1).unwrap(),
            vec!["tc qdisc add dev right root fq_pie flows 64 quantum 3kb ecn_prob 25"]
        );
        let (_, m) = pair(
            spec("qdisc = { kind = \"pie\", alpha = 33 }")
                .unwrap()
                .steps(Dir::LeftToRight, 1)
                .unwrap_err(),
        );
        assert!(
            m.starts_with("tc rejects \"pie alpha 33\": Illegal \"alpha\""),
            "{m}"
        );
        let e = spec("qdisc = { kind = \"fq_pie\", drop_batch = 3 }").unwrap_err();
        assert!(e.contains("unknown field `drop_batch`"), "{e}");
    }

    #[test]
    fn a_cake_table_is_the_cake_line_it_prints() {
        let s = spec("qdisc = { kind = \"cake\", bandwidth = \"20mbit\", rtt = \"50ms\", flowmode = \"triple-isolate\", diffserv = \"diffserv4\", nat = false, ack_filter = \"ack-filter\", framing = \"pppoe-ptm\", mpu = 64, memlimit = \"8mb\" }").unwrap();
        assert_eq!(
            lines(&s, Dir::LeftToRight, 1).unwrap(),
            vec!["tc qdisc add dev left root cake bandwidth 20mbit rtt 50ms diffserv4 triple-isolate nonat ack-filter memlimit 8mb pppoe-ptm mpu 64"]
        );
        let (field, m) = pair(
            spec("qdisc = { kind = \"cake\", diffserv = \"diffserv5\" }")
                .unwrap()
                .steps(Dir::LeftToRight, 1)
                .unwrap_err(),
        );
        assert_eq!(field, "diffserv");
        assert!(
            m.starts_with("\"diffserv5\" is not one of besteffort, diffserv3"),
            "{m}"
        );
        let (field, _) = pair(
            spec("qdisc = { kind = \"cake\", overhead = 300 }")
                .unwrap()
                .steps(Dir::LeftToRight, 1)
                .unwrap_err(),
        );
        assert_eq!(field, "overhead");
    }

    #[test]
    fn an_hhf_table_is_the_hhf_line_it_prints() {
        let s = spec("qdisc = { kind = \"hhf\", limit = 500, quantum = \"3kb\", hh_limit = 64, reset_timeout = \"20ms\", admit_bytes = 20000, evict_timeout = \"500ms\", non_hh_weight = 4 }").unwrap();
        assert_eq!(
            lines(&s, Dir::LeftToRight, 1).unwrap(),
            vec!["tc qdisc add dev left root hhf limit 500 quantum 3072 hh_limit 64 reset_timeout 20ms admit_bytes 20000 evict_timeout 500ms non_hh_weight 4"]
        );
        let s = spec("qdisc = \"hhf admit_bytes 65536\"").unwrap();
        assert_eq!(
            lines(&s, Dir::RightToLeft, 1).unwrap(),
            vec!["tc qdisc add dev right root hhf admit_bytes 65536"]
        );
        let e = spec("qdisc = { kind = \"hhf\", reset_timeout = 3 }").unwrap_err();
        assert!(e.contains("a bare number has no unit"), "{e}");
    }

    #[test]
    fn a_red_table_is_the_red_line_it_prints() {
        let s = spec("qdisc = { kind = \"red\", limit = \"400000\", min = \"30000\", max = \"90000\", avpkt = 1000, burst = 55, probability = 0.02, bandwidth = \"10mbit\", ecn = true, adaptive = true }").unwrap();
        assert_eq!(
            lines(&s, Dir::LeftToRight, 1).unwrap(),
            vec!["tc qdisc add dev left root red limit 400000 min 30000 max 90000 avpkt 1000 burst 55 probability 0.02 bandwidth 10mbit ecn adaptive"]
        );
        let e = spec("qdisc = { kind = \"red\", limit = \"400000\" }").unwrap_err();
        assert!(e.contains("missing field `avpkt`"), "{e}");
        let e = spec("qdisc = { kind = \"red\", limit = 1, avpkt = 1, probability = \"high\" }")
            .unwrap_err();
        assert!(
            e.contains("invalid type: string \"high\", expected f64"),
            "{e}"
        );
        let (field, m) = pair(
            spec("qdisc = { kind = \"red\", limit = \"400000\", min = \"90000\", max = \"30000\", avpkt = 1000 }")
                .unwrap()
                .steps(Dir::LeftToRight, 1)
                .unwrap_err(),
        );
        assert_eq!(field, "");
        assert!(
            m.starts_with("tc rejects \"red limit 400000 min 90000 max 30000 avpkt 1000\": "),
            "{m}"
        );
    }

    #[test]
    fn a_choke_table_is_the_choke_line_it_prints() {
        let s = spec("qdisc = { kind = \"choke\", limit = 1000, bandwidth = \"10mbit\", min = 100, max = 300, burst = 150, avpkt = \"1500b\", probability = 0.05, ecn = true }").unwrap();
        assert_eq!(
            lines(&s, Dir::LeftToRight, 1).unwrap(),
            vec!["tc qdisc add dev left root choke limit 1000 bandwidth 10mbit min 100 max 300 burst 150 avpkt 1500b probability 0.05 ecn"]
        );
        let e = spec("qdisc = { kind = \"choke\", limit = 100 }").unwrap_err();
        assert!(e.contains("missing field `bandwidth`"), "{e}");
        let (field, m) = pair(
            spec("qdisc = { kind = \"choke\", limit = 100, bandwidth = \"1mbit\", max = 200 }")
                .unwrap()
                .steps(Dir::LeftToRight, 1)
                .unwrap_err(),
        );
        assert_eq!(field, "");
        assert!(m.contains("\"max\" is larger than \"limit\""), "{m}");
        // The string form is the tc line.
        let s = spec("qdisc = \"choke limit 100 bandwidth 1mbit\"").unwrap();
        assert_eq!(
            lines(&s, Dir::RightToLeft, 1).unwrap(),
            vec!["tc qdisc add dev right root choke limit 100 bandwidth 1mbit"]
        );
    }

    #[test]
    fn mq_repeats_classless_child_per_queue() {
        let s = spec("qdisc = \"fq_codel\"").unwrap();
        let lines = lines(&s, Dir::LeftToRight, 12).unwrap();
        assert_eq!(lines[0], "tc qdisc add dev left root handle 1: mq");
        assert_eq!(lines[1], "tc qdisc add dev left parent 1:1 fq_codel");
        assert_eq!(lines[10], "tc qdisc add dev left parent 1:a fq_codel");
        assert_eq!(lines.len(), 13);
        let htb = spec("qdisc = \"htb default 10\"").unwrap();
        assert!(super::tests::lines(&htb, Dir::LeftToRight, 2)
            .unwrap_err()
            .contains("cannot be repeated under mq"));
    }

    #[test]
    fn htb_tree_becomes_root_classes_and_leaves() {
        let text = r#"
[qdisc]
kind = "htb"
default = "10"
[[qdisc.class]]
classid = "1:1"
rate = "100mbit"
[[qdisc.class]]
classid = "1:10"
parent = "1:1"
rate = "60mbit"
ceil = "100mbit"
qdisc = { kind = "sfq", perturb = 10 }
"#;
        let s = spec(text).unwrap();
        s.check().unwrap();
        assert_eq!(
            lines(&s, Dir::LeftToRight, 1).unwrap(),
            vec![
                "tc qdisc add dev left root handle 1: htb default 10",
                "tc class add dev left parent 1: classid 1:1 htb rate 100mbit",
                "tc class add dev left parent 1:1 classid 1:10 htb rate 60mbit ceil 100mbit",
                "tc qdisc add dev left parent 1:10 sfq perturb 10",
            ]
        );
    }

    #[test]
    fn htb_tree_checks_ids_parents_and_leaves() {
        let bad_parent = spec("qdisc = { kind = \"htb\", class = [{ classid = \"1:10\", parent = \"1:1\", rate = \"1mbit\" }] }").unwrap();
        let (field, message) = pair(bad_parent.check().unwrap_err());
        assert_eq!(field, "class[0].parent");
        assert!(message.starts_with("parent \"1:1\" is neither"));
        let err = |text: &str| pair(spec(text).unwrap().check().unwrap_err());
        let bad_id =
            err("qdisc = { kind = \"htb\", class = [{ classid = \"2:10\", rate = \"1mbit\" }] }");
        assert_eq!(bad_id.0, "class[0].classid");
        assert!(bad_id.1.contains("not under the root"));
        let bad_minor =
            err("qdisc = { kind = \"htb\", class = [{ classid = \"1:xyz\", rate = \"1mbit\" }] }");
        assert!(bad_minor.1.contains("hexadecimal"));
        let zero =
            err("qdisc = { kind = \"htb\", class = [{ classid = \"1:0\", rate = \"1mbit\" }] }");
        assert!(zero.1.contains("minor 0 is the qdisc itself"));
        let twice = err("qdisc = { kind = \"htb\", class = [{ classid = \"1:1\", rate = \"1mbit\" }, { classid = \"1:1\", rate = \"1mbit\" }] }");
        assert_eq!(
            twice,
            (
                "class[1].classid".to_string(),
                "classid \"1:1\" is defined twice; fix: give each class its own id".to_string()
            )
        );
        let classful_leaf = err("qdisc = { kind = \"htb\", class = [{ classid = \"1:1\", rate = \"1mbit\", qdisc = \"qfq\" }] }");
        assert_eq!(classful_leaf.0, "class[0].qdisc");
        assert!(classful_leaf.1.contains("classful"));
        let bad_default = err("qdisc = { kind = \"htb\", default = \"zz\" }");
        assert_eq!(bad_default.0, "default");
        // An integer is refused naming the key and saying how tc reads it.
        let e = spec("qdisc = { kind = \"htb\", default = 10 }").unwrap_err();
        assert!(
            e.contains("`default` = 10") && e.contains("default = \"10\" for class 1:10"),
            "{e}"
        );
        let e = spec("qdisc = { kind = \"fq_codel\", limit = \"many\" }").unwrap_err();
        assert!(e.starts_with("`limit`: invalid type"), "{e}");
    }

    #[test]
    fn literal_lines_route_by_device() {
        assert_eq!(
            literal_direction("tc qdisc add dev left root fq_codel"),
            Ok(Dir::LeftToRight)
        );
        assert_eq!(
            literal_direction("tc class add dev right parent 1: classid 1:1 htb rate 1mbit"),
            Ok(Dir::RightToLeft)
        );
        assert!(literal_direction("qdisc add dev left root fq_codel")
            .unwrap_err()
            .to_string()
            .contains("starts with \"tc\""));
        // Abbreviated objects and leading options, as iproute2 takes them.
        assert_eq!(
            literal_direction("tc q a dev left root fq_codel"),
            Ok(Dir::LeftToRight)
        );
        assert_eq!(
            literal_direction("tc -s cl add dev right parent 1: classid 1:1 htb rate 1mbit"),
            Ok(Dir::RightToLeft)
        );
        assert!(literal_direction("tc -s")
            .unwrap_err()
            .to_string()
            .contains("not a tc object"));
        assert!(literal_direction("tc qdisk add dev left root fq_codel")
            .unwrap_err()
            .to_string()
            .contains("not a tc object"));
        assert!(literal_direction("tc qdisc add root fq_codel")
            .unwrap_err()
            .to_string()
            .contains("names no device"));
        assert!(literal_direction("tc qdisc add dev eth0 root fq_codel")
            .unwrap_err()
            .to_string()
            .contains("\"eth0\" is unknown"));
        assert!(literal_direction("tc qdisc add dev left dev right root")
            .unwrap_err()
            .to_string()
            .contains("2 devices"));
        assert!(literal_direction("").is_err());
    }

    #[test]
    fn serialization_round_trips() {
        let s = spec("qdisc = { kind = \"fq_codel\", limit = 5, ecn = true }").unwrap();
        #[derive(serde::Serialize)]
        struct W<'a> {
            qdisc: &'a QdiscSpec,
        }
        let text = toml::to_string(&W { qdisc: &s }).unwrap();
        assert_eq!(spec(&text).unwrap(), s);
        let line = QdiscSpec::pfifo_fast();
        assert_eq!(
            spec(&toml::to_string(&W { qdisc: &line }).unwrap()).unwrap(),
            line
        );
    }

    /// What tc sends for `line` (the front end's parse of the tc text).
    fn tc_request(line: &str) -> Result<Request, crate::tc::TcError> {
        let cmd = crate::tc::TcCommand::parse(line)?;
        crate::tc::request(syntax::kinds(), &cmd)
    }

    /// Every typed step is the request tc makes of the line it says.
    fn assert_steps_are_their_lines(steps: &[Step]) {
        for step in steps {
            let Step::Request { request, line } = step else {
                panic!("the structured form made a bare line: {step:?}");
            };
            assert_eq!(tc_request(line).as_ref(), Ok(request), "{line}");
        }
    }

    #[test]
    fn typed_steps_are_the_requests_of_their_lines() {
        let specs = [
            "qdisc = \"pfifo_fast\"",
            "qdisc = { kind = \"pfifo_fast\" }",
            "qdisc = { kind = \"pfifo\", limit = 50 }",
            "qdisc = { kind = \"pfifo\" }",
            "qdisc = { kind = \"bfifo\", limit = \"64kb\" }",
            "qdisc = { kind = \"pfifo_head_drop\", limit = 3 }",
            "qdisc = { kind = \"tbf\", rate = \"1560mbit\", burst = \"20280b\", latency = \"5ms\" }",
            "qdisc = { kind = \"tbf\", rate = \"10mbit\", burst = 3000, limit = \"30kb\", peakrate = \"20mbit\", mtu = 1514 }",
            "qdisc = { kind = \"sfq\", limit = 127, perturb = 10, quantum = \"1514b\", divisor = 1024, flows = 64, depth = 20, headdrop = true }",
            "qdisc = { kind = \"sfq\", headdrop = false }",
            "qdisc = { kind = \"codel\", limit = 1000, target = \"5ms\", interval = \"100ms\", ecn = true, ce_threshold = \"1ms\" }",
            "qdisc = { kind = \"codel\", limit = 0, target = \"0\", ce_threshold = \"0\" }",
            "qdisc = { kind = \"fq_codel\", limit = 10240, flows = 1024, quantum = 1514, target = \"5ms\", interval = \"100ms\", ecn = false, ce_threshold = \"2ms\", memory_limit = \"32mb\", drop_batch = 64 }",
            "qdisc = { kind = \"fq_codel\", quantum = \"1.5kb\", memory_limit = \"8gb\" }",
            "qdisc = \"fq_codel limit 1024 ecn\"",
            "qdisc = \"tbf rate 1mbit burst 10kb/8 lat 50ms mpu 64 linklayer atm\"",
            "qdisc = { kind = \"htb\", default = \"20\", r2q = 5, direct_qlen = 100 }",
            "qdisc = { kind = \"red\", limit = \"400000\", min = \"30000\", max = \"90000\", avpkt = 1000, burst = 55, probability = 0.02, bandwidth = \"10mbit\", ecn = true, adaptive = true }",
            "qdisc = { kind = \"red\", limit = \"60kb\", avpkt = \"1kb\", ecn = true, harddrop = true, nodrop = false }",
            "qdisc = { kind = \"pie\", limit = 100, target = \"20ms\", tupdate = \"30ms\", alpha = 4, beta = 8, ecn = true, bytemode = false, dq_rate_estimator = true }",
            "qdisc = { kind = \"fq_pie\", limit = 1000, flows = 64, quantum = \"3kb\", memory_limit = \"1mb\", ecn_prob = 25, ecn = false, dq_rate_estimator = false }",
            "qdisc = { kind = \"cake\", bandwidth = \"10mbit\", diffserv = \"besteffort\", flowmode = \"dual-srchost\", wash = true, split_gso = false, atm = \"atm\", overhead = 44, ingress = true, autorate_ingress = true }",
            r#"[qdisc]
kind = "htb"
default = "10"
[[qdisc.class]]
classid = "1:1"
rate = "100mbit"
burst = "15k"
cburst = 3000
[[qdisc.class]]
classid = "1:10"
parent = "1:1"
rate = "60mbit"
ceil = "100mbit"
prio = 1
quantum = 3000
qdisc = { kind = "sfq", perturb = 10 }
[[qdisc.class]]
classid = "1:20"
parent = "1:1"
rate = "40mbit"
qdisc = "fq_codel ecn"
"#,
            "qdisc = { kind = \"prio\", bands = 5, priomap = \"4 3 2 1 0 0 1 2 3 4 4 3 2 1 0 0\" }",
            "qdisc = { kind = \"prio\", bands = 2, priomap = \"1 1 0\", multiqueue = true }",
            "qdisc = { kind = \"prio\", est = \"1sec 4sec\" }",
            "qdisc = { kind = \"ets\", bands = 4, strict = 1, quanta = \"3000 1500\", priomap = \"0 1 2 3\" }",
            "qdisc = { kind = \"ets\", quanta = \"1000 2000 4000\" }",
            "qdisc = { kind = \"ets\", strict = 3 }",
            "qdisc = { kind = \"fq\", limit = 40, flow_limit = 8, maxrate = \"5mbit\", defrate = \"1mbit\", bands = 3, priomap = \"2 2 1 1 0 0 0 0 1 1 1 1 1 1 1 1\", weights = \"30000 20000 16384\", horizon = \"1s\", offload_horizon = \"10ms\", horizon_drop = false }",
            "qdisc = { kind = \"skbprio\", limit = 20, est = \"250ms 1sec\" }",
            "qdisc = { kind = \"choke\", limit = 300, bandwidth = \"10mbit\", min = 20, max = 60, est = \"1sec 4sec\" }",
            "qdisc = { kind = \"sfb\", rehash = 10000, db = 2000, limit = 200, max = 30, target = 10, increment = 0.01, decrement = 0.001, penalty_rate = 50, penalty_burst = 10, est = \"1sec 4sec\" }",
            "qdisc = \"sfb limit 100 penalty_rate 20\"",
            "qdisc = { kind = \"fq_codel\", est = \"1sec 4sec\" }",
            r#"[qdisc]
kind = "drr"
est = "1sec 4sec"
[[qdisc.class]]
classid = "1:1"
quantum = "600"
est = "1sec 8sec"
[[qdisc.class]]
classid = "1:2"
qdisc = { kind = "bfifo", limit = 6000, est = "2sec 8sec" }
"#,
            r#"[qdisc]
kind = "hfsc"
default = "20"
[[qdisc.class]]
classid = "1:1"
ls = "m2 8mbit"
ul = "m2 8mbit"
[[qdisc.class]]
classid = "1:10"
parent = "1:1"
rt = "umax 1500b dmax 5ms rate 1mbit"
ls = "m2 2mbit"
est = "1sec 4sec"
[[qdisc.class]]
classid = "1:20"
parent = "1:1"
sc = "m1 0 d 10ms m2 6mbit"
qdisc = "pfifo limit 20"
"#,
        ];
        for text in specs {
            let s = spec(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            for dir in Dir::ALL {
                for tx_queues in [1, 3] {
                    if tx_queues > 1 && s.is_classful() {
                        continue;
                    }
                    let steps = s
                        .steps(dir, tx_queues)
                        .unwrap_or_else(|e| panic!("{text}: {e:?}"));
                    assert_steps_are_their_lines(&steps);
                }
            }
        }
    }

    #[test]
    fn an_sfb_table_is_the_line_tc_sfb_8_writes() {
        let s = spec(
            "qdisc = { kind = \"sfb\", target = 10, limit = 200, increment = 0.01, db = 2000 }",
        )
        .unwrap();
        assert_eq!(
            lines(&s, Dir::LeftToRight, 1).unwrap(),
            vec!["tc qdisc add dev left root sfb db 2000 limit 200 target 10 increment 0.01"]
        );
        let s = spec("qdisc = \"sfb limit 100 penalty_rate 20\"").unwrap();
        assert_eq!(
            lines(&s, Dir::RightToLeft, 1).unwrap(),
            vec!["tc qdisc add dev right root sfb limit 100 penalty_rate 20"]
        );
    }

    #[test]
    fn prio_ets_fq_drr_and_hfsc_tables_are_the_lines_they_print() {
        let s = spec("qdisc = { kind = \"prio\", bands = 4, priomap = \"3 2 1 0\" }").unwrap();
        assert_eq!(
            lines(&s, Dir::LeftToRight, 1).unwrap(),
            vec!["tc qdisc add dev left root prio bands 4 priomap 3 2 1 0"]
        );
        let s = spec(
            "qdisc = { kind = \"ets\", priomap = \"0 1\", quanta = \"3000 1500\", strict = 1 }",
        )
        .unwrap();
        assert_eq!(
            lines(&s, Dir::RightToLeft, 1).unwrap(),
            vec!["tc qdisc add dev right root ets strict 1 quanta 3000 1500 priomap 0 1"]
        );
        let s = spec("qdisc = { kind = \"fq\", priomap = \"1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1\", bands = 3, offload_horizon = \"1ms\" }").unwrap();
        assert_eq!(
            lines(&s, Dir::LeftToRight, 1).unwrap(),
            vec!["tc qdisc add dev left root fq bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1 offload_horizon 1ms"]
        );
        let s = spec("qdisc = { kind = \"drr\", class = [{ classid = \"1:1\", quantum = \"1.5kb\", qdisc = \"fq_codel\" }, { classid = \"1:2\" }] }").unwrap();
        s.check().unwrap();
        assert_eq!(
            lines(&s, Dir::LeftToRight, 1).unwrap(),
            vec![
                "tc qdisc add dev left root handle 1: drr",
                "tc class add dev left parent 1: classid 1:1 drr quantum 1.5kb",
                "tc class add dev left parent 1: classid 1:2 drr ",
                "tc qdisc add dev left parent 1:1 fq_codel",
            ]
        );
        let s = spec("qdisc = { kind = \"hfsc\", default = \"a\", class = [{ classid = \"1:a\", ul = \"m2 2mbit\", sc = \"rate 1mbit\" }] }").unwrap();
        assert_eq!(
            lines(&s, Dir::LeftToRight, 1).unwrap(),
            vec![
                "tc qdisc add dev left root handle 1: hfsc default a",
                "tc class add dev left parent 1: classid 1:a hfsc sc rate 1mbit ul m2 2mbit",
            ]
        );
        let err = |text: &str| pair(spec(text).unwrap().steps(Dir::LeftToRight, 1).unwrap_err());
        let (field, m) =
            err("qdisc = { kind = \"hfsc\", class = [{ classid = \"1:1\", rt = \"m2\" }] }");
        assert_eq!(field, "class[0]");
        assert!(m.starts_with("tc rejects \"hfsc rt m2\": "), "{m}");
        let (_, m) = err("qdisc = { kind = \"ets\", bands = 2, strict = 3 }");
        assert!(
            m.starts_with("tc rejects \"ets bands 2 strict 3\": "),
            "{m}"
        );
        let e = spec("qdisc = { kind = \"drr\", quantum = 1514 }").unwrap_err();
        assert!(
            e.contains("unknown field `quantum`, expected one of `est`, `class`")
                || e.contains("unknown field `quantum`, expected `est` or `class`"),
            "{e}"
        );
        let e =
            spec("qdisc = { kind = \"hfsc\", class = [{ classid = \"1:1\", m2 = \"1mbit\" }] }")
                .unwrap_err();
        assert!(e.contains("unknown field `m2`, expected one of `classid`, `parent`, `rt`, `ls`, `sc`, `ul`, `qdisc`, `est`"), "{e}");
    }

    #[test]
    fn est_is_tcs_estimator_on_qdiscs_classes_and_leaves() {
        let text = r#"
[qdisc]
kind = "htb"
est = "1sec 4sec"
[[qdisc.class]]
classid = "1:10"
rate = "10mbit"
est = "250ms 2sec"
qdisc = { kind = "sfq", est = "2sec 8sec" }
"#;
        let s = spec(text).unwrap();
        let steps = s.steps(Dir::LeftToRight, 1).unwrap();
        let got: Vec<(&str, Option<EstimatorSpec>)> = steps
            .iter()
            .map(|step| match step {
                Step::Request { request, line } => (line.as_str(), request.rate),
                _ => unreachable!(),
            })
            .collect();
        // tc_setup_estimator: 1sec is 250ms << 2 (interval 0), and 4sec is
        // 1sec / -ln(1 - 2^-e) <= 4sec up to e = 2; 250ms (interval -2)
        // over 2sec gives e = 3; 2sec (interval 1) over 8sec gives e = 2.
        let est = |interval, ewma_log| Some(EstimatorSpec { interval, ewma_log });
        assert_eq!(
            got,
            vec![
                (
                    "tc qdisc add dev left root handle 1: est 1sec 4sec htb",
                    est(0, 2)
                ),
                (
                    "tc class add dev left parent 1: classid 1:10 est 250ms 2sec htb rate 10mbit",
                    est(-2, 3)
                ),
                (
                    "tc qdisc add dev left parent 1:10 est 2sec 8sec sfq",
                    est(1, 2)
                ),
            ]
        );
        assert_steps_are_their_lines(&steps);
        let s = spec("qdisc = { kind = \"fq_codel\", est = \"1sec 4sec\" }").unwrap();
        let lines = lines(&s, Dir::RightToLeft, 2).unwrap();
        assert_eq!(lines[0], "tc qdisc add dev right root handle 1: mq");
        assert_eq!(
            lines[2],
            "tc qdisc add dev right parent 1:2 est 1sec 4sec fq_codel"
        );
        let err = |text: &str| pair(spec(text).unwrap().steps(Dir::LeftToRight, 1).unwrap_err());
        let (field, m) = err("qdisc = { kind = \"pfifo\", est = \"9sec 60sec\" }");
        assert_eq!(field, "est");
        assert!(
            m.starts_with(
                "tc rejects \"est 9sec 60sec\": Error: estimator parameters are out of range."
            ),
            "{m}"
        );
        let (field, _) =
            err("qdisc = { kind = \"drr\", class = [{ classid = \"1:1\", est = \"1sec\" }] }");
        assert_eq!(field, "class[0].est");
        let (field, m) = err("qdisc = { kind = \"pfifo\", est = \"1sec 4sec 8sec\" }");
        assert_eq!(field, "est");
        assert!(m.starts_with("\"8sec\" follows"), "{m}");
        let e = spec("qdisc = { kind = \"pfifo\", est = 1 }").unwrap_err();
        assert!(
            e.contains("invalid type: integer `1`, expected a string"),
            "{e}"
        );
    }

    #[test]
    fn steps_refuse_what_tc_refuses_and_name_the_field() {
        let err = |text: &str| pair(spec(text).unwrap().steps(Dir::LeftToRight, 1).unwrap_err());
        let (field, m) = err("qdisc = { kind = \"tbf\", rate = \"1mbit\", burst = \"10kb\" }");
        assert_eq!(field, "");
        assert!(
            m.starts_with(
                "tc rejects \"tbf rate 1mbit burst 10kb\": tbf: either \"limit\" or \"latency\""
            ),
            "{m}"
        );
        let (_, m) = err("qdisc = { kind = \"tbf\", rate = \"1mbit\", burst = \"10kb\", limit = 3000, latency = \"5ms\" }");
        assert!(
            m.contains("specifying both \"latency\" and \"limit\" is not allowed"),
            "{m}"
        );
        let (_, m) = err("qdisc = { kind = \"sfq\", limit = 1 }");
        assert!(m.contains("Illegal \"limit\", must be > 1 (got 1)"), "{m}");
        let (field, m) = err("qdisc = { kind = \"sfq\", perturb = 3000000000 }");
        assert_eq!(field, "perturb");
        assert!(m.contains("out of range"), "{m}");
        let (field, _) = err("qdisc = { kind = \"fq_codel\", quantum = \"5gb\" }");
        assert_eq!(field, "quantum");
        let (_, m) = err("qdisc = \"fq_codel limit lots\"");
        assert!(m.starts_with("tc rejects \"fq_codel limit lots\": "), "{m}");
        let (field, m) = err("qdisc = { kind = \"htb\", class = [{ classid = \"1:1\", rate = \"1mbit\", qdisc = \"sfq limit 1\" }] }");
        assert_eq!(field, "class[0].qdisc");
        assert!(m.contains("must be > 1"), "{m}");
    }

    proptest::proptest! {
        /// Tables with random values: when the typed conversion succeeds,
        /// each step is the request of the line it says; when it fails, tc
        /// refuses that line too.
        #[test]
        fn typed_conversion_agrees_with_tc(
            kind in 0..10usize,
            a in proptest::option::of(proptest::sample::select(vec![0u64, 1, 2, 3, 100, 1514, 65535, 65536, 4294967295])),
            b in proptest::option::of(proptest::sample::select(vec![0u64, 1, 2, 1500, 1_000_000, 4294967295])),
            t in proptest::option::of(proptest::sample::select(vec!["0", "1", "500us", "5ms", "1s", "4294s"])),
            r in proptest::sample::select(vec!["8bit", "1kbit", "10mbit", "1560mbit", "100gbit"]),
            flag in proptest::option::of(proptest::bool::ANY),
            list in proptest::option::of(proptest::sample::select(vec!["", "0", "1 2", "3 2 1 0", "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 0", "2 2 1 1 0 0 0 0 1 1 1 1 1 1 1 1", "1500 0", "x"])),
            curve in proptest::option::of(proptest::sample::select(vec!["m2 10mbit", "m1 0 d 10ms m2 1mbit", "umax 1500b dmax 5ms rate 1mbit", "rate 1mbit", "m2", "d 1ms", "m2 0"])),
            est in proptest::option::of(proptest::sample::select(vec!["1sec 4sec", "250ms 1sec", "8sec 16sec", "9sec 9sec", "1sec 1sec", "1sec", "4sec 2000sec"])),
        ) {
            let opt = |k: &str, v: Option<String>| v.map(|v| format!(", {k} = {v}")).unwrap_or_default();
            let a_ = a.map(|v| v.to_string());
            let b_ = b.map(|v| v.to_string());
            let t_ = t.map(|v| format!("\"{v}\""));
            let f_ = flag.map(|v| v.to_string());
            let l_ = list.map(|v| format!("\"{v}\""));
            let c_ = curve.map(|v| format!("\"{v}\""));
            let e_ = est.map(|v| format!("\"{v}\""));
            let text = match kind {
                0 => format!("qdisc = {{ kind = \"fq_codel\"{}{}{}{}{} }}", opt("limit", a_.clone()), opt("quantum", b_.clone()), opt("target", t_.clone()), opt("ecn", f_), opt("memory_limit", b_)),
                1 => format!("qdisc = {{ kind = \"codel\"{}{}{}{} }}", opt("limit", a_), opt("interval", t_.clone()), opt("ce_threshold", t_), opt("ecn", f_)),
                2 => format!("qdisc = {{ kind = \"sfq\"{}{}{}{}{} }}", opt("limit", a_.clone()), opt("quantum", b_.clone()), opt("perturb", b_), opt("depth", a_), opt("headdrop", f_)),
                3 => format!("qdisc = {{ kind = \"tbf\", rate = \"{r}\", burst = {}{}{}{} }}", b.unwrap_or(0), opt("limit", a_), opt("latency", t_), opt("mtu", f_.map(|_| "1514".into()))),
                4 => format!("qdisc = {{ kind = \"htb\", class = [{{ classid = \"1:1\", rate = \"{r}\"{}{}{} }}] }}", opt("burst", b_), opt("quantum", a_.clone()), opt("prio", a_)),
                5 => format!("qdisc = {{ kind = \"prio\"{}{}{}{} }}", opt("bands", a_), opt("priomap", l_), opt("multiqueue", f_), opt("est", e_)),
                6 => format!("qdisc = {{ kind = \"ets\"{}{}{}{}{} }}", opt("bands", a_), opt("strict", b_), opt("quanta", l_.clone()), opt("priomap", l_), opt("est", e_)),
                7 => format!("qdisc = {{ kind = \"fq\"{}{}{}{}{} }}", opt("bands", a_), opt("priomap", l_), opt("defrate", f_.map(|_| format!("\"{r}\""))), opt("offload_horizon", t_), opt("est", e_)),
                8 => format!("qdisc = {{ kind = \"drr\", class = [{{ classid = \"1:1\"{}{} }}] }}", opt("quantum", b_), opt("est", e_)),
                _ => format!("qdisc = {{ kind = \"hfsc\"{}, class = [{{ classid = \"1:1\"{}{}{} }}] }}", opt("est", e_.clone()), opt("rt", c_.clone()), opt(if flag == Some(true) { "sc" } else { "ls" }, c_), opt("est", e_)),
            };
            // u32 fields the TOML refuses out of range, as serde does.
            let Ok(s) = spec(&text) else { return Ok(()); };
            match s.steps(Dir::LeftToRight, 1) {
                Ok(steps) => assert_steps_are_their_lines(&steps),
                Err(e) => {
                    let mut lines = vec![];
                    let est = |e: &Option<String>| e.as_ref().map(|e| format!("est {e} ")).unwrap_or_default();
                    let t = s.table().expect("a table");
                    if let Some(class) = t.classes.first() {
                        lines.push(format!("tc qdisc add dev left root handle 1: {}{}", est(&t.est), s.args()));
                        lines.push(format!("tc class add dev left parent 1: classid 1:1 {}{} {}", est(&class.est), t.kind, words(&class.values).join(" ")));
                    } else {
                        lines.push(format!("tc qdisc add dev left root {}{}", est(&t.est), s.args()));
                    }
                    let refused = lines.iter().any(|l| tc_request(l).is_err());
                    proptest::prop_assert!(refused, "{text}: typed refused ({e:?}) what tc takes: {lines:?}");
                }
            }
        }
    }

    #[test]
    fn literal_tc_lines_carry_estimators() {
        let text = "[link]\nrate = \"100mbit\"\ntc = [\n\
                    \"tc qdisc add dev left root handle 1: est 1sec 4sec htb default 10\",\n\
                    \"tc class add dev left parent 1: classid 1:10 est 1sec 4sec htb rate 10mbit\",\n\
                    ]\n";
        let config = super::super::Config::from_str(text, "est.toml").unwrap();
        let dev = crate::qdisc::tree::DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN);
        let mut t = crate::tc::build_tree_of(dev, &config.tc_steps(Dir::LeftToRight)).unwrap();
        let cmd = crate::tc::TcCommand::parse("tc -s class show dev left").unwrap();
        let shown = crate::tc::run(
            &mut t,
            &cmd,
            crate::time::Instant::ZERO,
            &mut crate::packet::Drops::new(),
        )
        .unwrap()
        .unwrap_or_default();
        assert!(shown.contains("\n rate 0bit 0pps backlog"), "{shown}");
        let d = crate::qdisc::Qdisc::dump(&t, crate::time::Instant::ZERO);
        assert!(d.stats.rate_est.is_some(), "{d:?}");
    }
}
