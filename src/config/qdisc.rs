//! The qdisc of one direction in its two written forms and their common
//! result, a list of tc command lines: the structured form (`qdisc =
//! "fq_codel"`, `qdisc = "tbf rate 1560mbit burst 20280b latency 5ms"`, or a
//! table with `kind` and typed parameters, including an HTB tree) is converted
//! into tc lines here; the literal form (`tc = [...]`) is checked for its
//! shape (`tc qdisc|class|filter ... dev left|right ...`) and routed to its
//! direction by the device it names. Deeper tc checks belong to the tc front
//! end (see `Config::validate_tc_with`).

use super::values::{Size, TcRate, TcTime};
use crate::dir::Dir;
use crate::tc::kinds::{self, KindEntry};
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde::{Serialize, Serializer};
use std::fmt;

/// The kind `qdisc = "..."` names: a configurable entry of the kind table
/// (mq is chosen with `tx_queues`).
fn configurable(kind: &str) -> Option<&'static KindEntry> {
    kinds::lookup(kind).filter(|k| k.configurable)
}

/// The qdisc of a direction as written in the configuration.
#[derive(Clone, Debug, PartialEq)]
pub enum QdiscSpec {
    /// `"fq_codel"` or `"fq_codel limit 1024 ecn"`: a kind and tc arguments.
    Line(String),
    /// `{ kind = "fq_codel", limit = 1024, ecn = true }` or an HTB tree.
    Table(QdiscTable),
}

/// The structured qdisc form. Times and rates use tc units; a bare time is
/// µs as in tc, so write units.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    deny_unknown_fields,
    expecting = "a qdisc table with a kind"
)]
pub enum QdiscTable {
    PfifoFast,
    Pfifo {
        limit: Option<u32>,
    },
    Bfifo {
        limit: Option<Size>,
    },
    PfifoHeadDrop {
        limit: Option<u32>,
    },
    Tbf {
        rate: TcRate,
        burst: Size,
        latency: Option<TcTime>,
        limit: Option<Size>,
        peakrate: Option<TcRate>,
        mtu: Option<Size>,
    },
    Sfq {
        limit: Option<u32>,
        perturb: Option<u32>,
        quantum: Option<Size>,
        divisor: Option<u32>,
        flows: Option<u32>,
        depth: Option<u32>,
        headdrop: Option<bool>,
    },
    Codel {
        limit: Option<u32>,
        target: Option<TcTime>,
        interval: Option<TcTime>,
        ecn: Option<bool>,
        ce_threshold: Option<TcTime>,
    },
    FqCodel {
        limit: Option<u32>,
        flows: Option<u32>,
        quantum: Option<Size>,
        target: Option<TcTime>,
        interval: Option<TcTime>,
        ecn: Option<bool>,
        ce_threshold: Option<TcTime>,
        memory_limit: Option<Size>,
        drop_batch: Option<u32>,
    },
    Htb {
        /// Minor id (hex, as tc) of the class unclassified traffic goes to.
        default: Option<String>,
        r2q: Option<u32>,
        direct_qlen: Option<u32>,
        #[serde(default, rename = "class")]
        classes: Vec<HtbClass>,
    },
}

/// One HTB class under the root `1:` (`[[link.qdisc.class]]`).
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an HTB class table (classid, rate, ...)"
)]
pub struct HtbClass {
    /// `1:10` (minor in hex, as tc).
    pub classid: String,
    /// `1:` (the root, default) or an earlier class such as `1:1`.
    pub parent: Option<String>,
    pub rate: TcRate,
    pub ceil: Option<TcRate>,
    pub burst: Option<Size>,
    pub cburst: Option<Size>,
    pub prio: Option<u32>,
    pub quantum: Option<u32>,
    /// Leaf qdisc (classless), e.g. `"sfq perturb 10"`.
    pub qdisc: Option<QdiscSpec>,
}

/// Handle of the root qdisc the structured form creates for HTB and mq.
const ROOT_HANDLE: &str = "1:";

impl QdiscSpec {
    /// The default qdisc of a single-queue device.
    pub fn pfifo_fast() -> Self {
        QdiscSpec::Line("pfifo_fast".into())
    }

    /// The tc kind.
    pub fn kind(&self) -> &str {
        match self {
            QdiscSpec::Line(l) => l.split_whitespace().next().unwrap_or(""),
            QdiscSpec::Table(t) => t.kind(),
        }
    }

    /// Classful with class options (HTB, QFQ): such a kind cannot sit
    /// under mq or be an HTB leaf in this form.
    fn is_classful(&self) -> bool {
        configurable(self.kind()).is_some_and(kinds::has_class_options)
    }

    /// Checks the parts tc will not: known kind, HTB class ids and parents,
    /// classless leaves. The error names the field inside the qdisc
    /// (`class[1].parent`, empty for the qdisc itself) and the message.
    pub fn check(&self) -> Result<(), (String, String)> {
        match self {
            QdiscSpec::Line(line) => check_kind(line.split_whitespace().next().unwrap_or(""))
                .map_err(|m| (String::new(), m)),
            QdiscSpec::Table(QdiscTable::Htb {
                default, classes, ..
            }) => {
                if let Some(d) = default {
                    parse_minor(d).map_err(|m| ("default".to_string(), m))?;
                }
                let mut seen: Vec<&str> = Vec::new();
                for (i, class) in classes.iter().enumerate() {
                    class
                        .check(&seen)
                        .map_err(|(field, m)| (format!("class[{i}].{field}"), m))?;
                    seen.push(&class.classid);
                }
                Ok(())
            }
            QdiscSpec::Table(_) => Ok(()),
        }
    }

    /// tc lines that build this qdisc as the root of `dev`, under an mq root
    /// with one copy per TX queue when `tx_queues > 1`.
    pub fn tc_lines(&self, dev: &str, tx_queues: u32) -> Result<Vec<String>, String> {
        if tx_queues > 1 {
            if self.is_classful() {
                return Err(format!(
                    "a {} tree cannot be repeated under mq (tx_queues = {tx_queues}); fix: use tx_queues = 1 or write tc lines",
                    self.kind()
                ));
            }
            let mut lines = vec![format!(
                "tc qdisc add dev {dev} root handle {ROOT_HANDLE} mq"
            )];
            for queue in 1..=tx_queues {
                lines.push(format!(
                    "tc qdisc add dev {dev} parent {ROOT_HANDLE}{queue:x} {}",
                    self.args()
                ));
            }
            return Ok(lines);
        }
        let mut lines = Vec::new();
        match self {
            QdiscSpec::Table(QdiscTable::Htb { classes, .. }) => {
                lines.push(format!(
                    "tc qdisc add dev {dev} root handle {ROOT_HANDLE} {}",
                    self.args()
                ));
                for class in classes {
                    lines.push(format!(
                        "tc class add dev {dev} parent {} classid {} htb {}",
                        class.parent.as_deref().unwrap_or(ROOT_HANDLE),
                        class.classid,
                        class.args()
                    ));
                }
                for class in classes {
                    if let Some(leaf) = &class.qdisc {
                        lines.push(format!(
                            "tc qdisc add dev {dev} parent {} {}",
                            class.classid,
                            leaf.args()
                        ));
                    }
                }
            }
            _ => lines.push(format!("tc qdisc add dev {dev} root {}", self.args())),
        }
        Ok(lines)
    }

    /// `kind arg arg ...` as tc takes it after `root`/`parent X`.
    fn args(&self) -> String {
        match self {
            QdiscSpec::Line(line) => line.split_whitespace().collect::<Vec<_>>().join(" "),
            QdiscSpec::Table(t) => {
                let mut words = vec![t.kind().to_string()];
                t.push_args(&mut words);
                words.join(" ")
            }
        }
    }
}

impl QdiscTable {
    fn kind(&self) -> &'static str {
        match self {
            QdiscTable::PfifoFast => "pfifo_fast",
            QdiscTable::Pfifo { .. } => "pfifo",
            QdiscTable::Bfifo { .. } => "bfifo",
            QdiscTable::PfifoHeadDrop { .. } => "pfifo_head_drop",
            QdiscTable::Tbf { .. } => "tbf",
            QdiscTable::Sfq { .. } => "sfq",
            QdiscTable::Codel { .. } => "codel",
            QdiscTable::FqCodel { .. } => "fq_codel",
            QdiscTable::Htb { .. } => "htb",
        }
    }

    /// Appends the tc arguments of the parameters that are set.
    fn push_args(&self, w: &mut Vec<String>) {
        match self {
            QdiscTable::PfifoFast => {}
            QdiscTable::Pfifo { limit } | QdiscTable::PfifoHeadDrop { limit } => {
                opt(w, "limit", limit)
            }
            QdiscTable::Bfifo { limit } => opt(w, "limit", limit),
            QdiscTable::Tbf {
                rate,
                burst,
                latency,
                limit,
                peakrate,
                mtu,
            } => {
                opt(w, "rate", &Some(rate));
                opt(w, "burst", &Some(burst));
                opt(w, "latency", latency);
                opt(w, "limit", limit);
                opt(w, "peakrate", peakrate);
                opt(w, "mtu", mtu);
            }
            QdiscTable::Sfq {
                limit,
                perturb,
                quantum,
                divisor,
                flows,
                depth,
                headdrop,
            } => {
                opt(w, "limit", limit);
                opt(w, "perturb", perturb);
                opt(w, "quantum", quantum);
                opt(w, "divisor", divisor);
                opt(w, "flows", flows);
                opt(w, "depth", depth);
                if *headdrop == Some(true) {
                    w.push("headdrop".into());
                }
            }
            QdiscTable::Codel {
                limit,
                target,
                interval,
                ecn,
                ce_threshold,
            } => {
                opt(w, "limit", limit);
                opt(w, "target", target);
                opt(w, "interval", interval);
                ecn_flag(w, ecn);
                opt(w, "ce_threshold", ce_threshold);
            }
            QdiscTable::FqCodel {
                limit,
                flows,
                quantum,
                target,
                interval,
                ecn,
                ce_threshold,
                memory_limit,
                drop_batch,
            } => {
                opt(w, "limit", limit);
                opt(w, "flows", flows);
                opt(w, "quantum", quantum);
                opt(w, "target", target);
                opt(w, "interval", interval);
                ecn_flag(w, ecn);
                opt(w, "ce_threshold", ce_threshold);
                opt(w, "memory_limit", memory_limit);
                opt(w, "drop_batch", drop_batch);
            }
            QdiscTable::Htb {
                default,
                r2q,
                direct_qlen,
                ..
            } => {
                opt(w, "default", default);
                opt(w, "r2q", r2q);
                opt(w, "direct_qlen", direct_qlen);
            }
        }
    }
}

impl HtbClass {
    fn check(&self, earlier: &[&str]) -> Result<(), (String, String)> {
        let minor = |id: &str| -> Result<u32, String> {
            let rest = id.strip_prefix(ROOT_HANDLE).ok_or_else(|| {
                format!("class id \"{id}\" is not under the root {ROOT_HANDLE}; fix: write 1:MINOR such as 1:10")
            })?;
            parse_minor(rest)
        };
        if minor(&self.classid).map_err(at("classid"))? == 0 {
            return Err(at("classid")(format!(
                "classid \"{}\": minor 0 is the qdisc itself; fix: use 1:1 .. 1:ffff",
                self.classid
            )));
        }
        if earlier.contains(&self.classid.as_str()) {
            return Err(at("classid")(format!(
                "classid \"{}\" is defined twice; fix: give each class its own id",
                self.classid
            )));
        }
        if let Some(parent) = &self.parent {
            let is_root = parent == ROOT_HANDLE || parent == "1:0";
            if !is_root && !earlier.contains(&parent.as_str()) {
                return Err(at("parent")(format!(
                    "parent \"{parent}\" is neither the root 1: nor a class defined above; fix: define the parent class first"
                )));
            }
        }
        if let Some(leaf) = &self.qdisc {
            if leaf.is_classful() {
                return Err(at("qdisc")(format!(
                    "leaf qdisc \"{}\" is classful; fix: use a classless leaf (sfq, fq_codel, pfifo...) or write tc lines",
                    leaf.kind()
                )));
            }
            leaf.check().map_err(|(_, m)| ("qdisc".to_string(), m))?;
        }
        Ok(())
    }

    fn args(&self) -> String {
        let mut w = vec!["rate".to_string(), self.rate.to_string()];
        opt(&mut w, "ceil", &self.ceil);
        opt(&mut w, "burst", &self.burst);
        opt(&mut w, "cburst", &self.cburst);
        opt(&mut w, "prio", &self.prio);
        opt(&mut w, "quantum", &self.quantum);
        w.join(" ")
    }
}

fn opt<T: fmt::Display>(w: &mut Vec<String>, key: &str, value: &Option<T>) {
    if let Some(v) = value {
        w.push(key.to_string());
        w.push(v.to_string());
    }
}

fn ecn_flag(w: &mut Vec<String>, ecn: &Option<bool>) {
    match ecn {
        Some(true) => w.push("ecn".into()),
        Some(false) => w.push("noecn".into()),
        None => {}
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
        Err(format!(
            "unknown qdisc kind \"{kind}\"; expected one of {}; fix: write e.g. qdisc = \"fq_codel\"",
            kinds::names(kinds::BUILTIN, |k| k.configurable)
        ))
    }
}

/// Attaches the field name to a check message.
fn at(field: &'static str) -> impl Fn(String) -> (String, String) {
    move |m| (field.to_string(), m)
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

/// Checks the shape of a literal tc line and returns the direction its
/// device selects (`dev left` = left→right egress).
pub fn literal_direction(line: &str) -> Result<Dir, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let example = "fix: write e.g. \"tc qdisc add dev left root fq_codel\"";
    if words.first() != Some(&"tc") {
        return Err(format!("a tc line starts with \"tc\"; {example}"));
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
            return Err(format!(
                "\"{}\" is not a tc object; expected qdisc, class or filter; {example}",
                other.unwrap_or(&"")
            ))
        }
    }
    let devs: Vec<&str> = words
        .windows(2)
        .filter(|w| w[0] == "dev")
        .map(|w| w[1])
        .collect();
    match devs.as_slice() {
        [dev] => Dir::from_dev(dev).ok_or_else(|| {
            format!("device \"{dev}\" is unknown; expected dev left (left→right egress) or dev right (right→left egress); {example}")
        }),
        [] => Err(format!(
            "the line names no device; expected dev left or dev right; {example}"
        )),
        _ => Err(format!("the line names {} devices; expected exactly one dev; {example}", devs.len())),
    }
}

impl Serialize for QdiscSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            QdiscSpec::Line(l) => s.serialize_str(l),
            QdiscSpec::Table(t) => t.serialize(s),
        }
    }
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
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<QdiscSpec, A::Error> {
                QdiscTable::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(QdiscSpec::Table)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            s.tc_lines("left", 1).unwrap(),
            vec!["tc qdisc add dev left root tbf rate 1560mbit burst 20280b latency 5ms"]
        );
        assert!(spec("qdisc = \"fq_kodel\"")
            .unwrap_err()
            .contains("unknown qdisc kind \"fq_kodel\""));
        assert!(spec("qdisc = \"mq\"").unwrap_err().contains("tx_queues"));
    }

    #[test]
    fn table_form_converts_to_tc_arguments() {
        let s =
            spec("qdisc = { kind = \"fq_codel\", limit = 1024, target = \"5ms\", ecn = false }")
                .unwrap();
        assert_eq!(
            s.tc_lines("right", 1).unwrap(),
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
    fn mq_repeats_classless_child_per_queue() {
        let s = spec("qdisc = \"fq_codel\"").unwrap();
        let lines = s.tc_lines("left", 12).unwrap();
        assert_eq!(lines[0], "tc qdisc add dev left root handle 1: mq");
        assert_eq!(lines[1], "tc qdisc add dev left parent 1:1 fq_codel");
        assert_eq!(lines[10], "tc qdisc add dev left parent 1:a fq_codel");
        assert_eq!(lines.len(), 13);
        let htb = spec("qdisc = \"htb default 10\"").unwrap();
        assert!(htb
            .tc_lines("left", 2)
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
            s.tc_lines("left", 1).unwrap(),
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
        let (field, message) = bad_parent.check().unwrap_err();
        assert_eq!(field, "class[0].parent");
        assert!(message.starts_with("parent \"1:1\" is neither"));
        let err = |text: &str| spec(text).unwrap().check().unwrap_err();
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
            .contains("not a tc object"));
        assert!(literal_direction("tc qdisk add dev left root fq_codel")
            .unwrap_err()
            .contains("not a tc object"));
        assert!(literal_direction("tc qdisc add root fq_codel")
            .unwrap_err()
            .contains("names no device"));
        assert!(literal_direction("tc qdisc add dev eth0 root fq_codel")
            .unwrap_err()
            .contains("\"eth0\" is unknown"));
        assert!(literal_direction("tc qdisc add dev left dev right root")
            .unwrap_err()
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
}
