//! The qdisc of one direction in its written forms and what they build:
//! the structured form (`qdisc = "fq_codel"`, `qdisc = "tbf rate 1560mbit
//! burst 20280b latency 5ms"`, or a table with `kind` and typed parameters,
//! including an HTB tree) becomes typed tc requests here (`QdiscSpec::steps`):
//! a table's values go through the same iproute2 rules as tc's words
//! (`crate::tc::opts`), the words of the string form through the kind's own
//! parser, and each request carries the tc line that says the same, for the
//! report and for errors; errors name the field inside the qdisc. The
//! literal form (`tc = [...]`) is checked for its shape (`tc
//! qdisc|class|filter ... dev left|right ...`) and routed to its direction by
//! the device it names; the tc front end parses it when the tree is built
//! (see `Config::validate_with`).

use super::values::{Size, TcRate, TcTime};
use crate::dir::Dir;
use crate::handle::{tc_h_make, tc_h_minor, Handle, TC_H_ROOT};
use crate::qdisc::codel::CodelOptions;
use crate::qdisc::fq_codel::FqCodelOptions;
use crate::qdisc::htb::HtbGlob;
use crate::qdisc::kinds::{self, KindEntry};
use crate::qdisc::request::{Object, Options, Request, Verb};
use crate::qdisc::sfq::SfqOptions;
use crate::qdisc::{ClassOptions, QdiscOptions};
use crate::tc::opts::htb::{self, HtbClassArgs};
use crate::tc::opts::tbf::{self, TbfArgs};
use crate::tc::opts::{codel, fifo, fq_codel, sfq};
use crate::tc::syntax;
use crate::tc::Step;
use crate::tc::TcError;
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde::{Serialize, Serializer};
use std::fmt;

/// The kind `qdisc = "..."` names: a configurable entry of the kind table
/// (mq is chosen with `tx_queues`).
fn configurable(kind: &str) -> Option<&'static KindEntry> {
    syntax::lookup(kind).filter(|k| k.configurable)
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
    /// `pfifo_fast`: no parameters.
    PfifoFast,
    /// `pfifo`: a packet FIFO.
    Pfifo {
        /// `limit`, packets (default: the device's txqueuelen).
        limit: Option<u32>,
    },
    /// `bfifo`: a byte FIFO.
    Bfifo {
        /// `limit`, bytes (default: txqueuelen × MTU).
        limit: Option<Size>,
    },
    /// `pfifo_head_drop`: a packet FIFO that drops its oldest packet when full.
    PfifoHeadDrop {
        /// `limit`, packets (default: the device's txqueuelen).
        limit: Option<u32>,
    },
    /// `tbf`: a token bucket shaper.
    Tbf {
        /// `rate`: the token rate.
        rate: TcRate,
        /// `burst`: the bucket size.
        burst: Size,
        /// `latency`: the longest a packet may wait (this or `limit`).
        latency: Option<TcTime>,
        /// `limit`: bytes that may queue (this or `latency`).
        limit: Option<Size>,
        /// `peakrate`: the rate of the second, peak bucket (needs `mtu`).
        peakrate: Option<TcRate>,
        /// `mtu`: the peak bucket's size.
        mtu: Option<Size>,
    },
    /// `sfq`: stochastic fairness queueing.
    Sfq {
        /// `limit`, packets (default 127).
        limit: Option<u32>,
        /// `perturb`: seconds between hash perturbations (0: never).
        perturb: Option<u32>,
        /// `quantum`: bytes per round (default: the MTU plus the Ethernet
        /// header).
        quantum: Option<Size>,
        /// `divisor`: hash buckets, a power of two (default 1024).
        divisor: Option<u32>,
        /// `flows`: flow slots (default 128).
        flows: Option<u32>,
        /// `depth`: packets per flow (default 127).
        depth: Option<u32>,
        /// `headdrop`: drop from the head of a full flow, not the arriving
        /// packet.
        headdrop: Option<bool>,
    },
    /// `codel`: one FIFO under CoDel's control law.
    Codel {
        /// `limit`, packets (default 1000).
        limit: Option<u32>,
        /// `target`: the acceptable standing queue delay (default 5ms).
        target: Option<TcTime>,
        /// `interval`: the window the delay must stay above target (default
        /// 100ms).
        interval: Option<TcTime>,
        /// `ecn`: mark ECT packets instead of dropping them (default off).
        ecn: Option<bool>,
        /// `ce_threshold`: mark ECT packets whose sojourn exceeds it.
        ce_threshold: Option<TcTime>,
    },
    /// `fq_codel`: flow queueing with CoDel per flow.
    FqCodel {
        /// `limit`, packets (default 10240).
        limit: Option<u32>,
        /// `flows`: hash buckets (default 1024).
        flows: Option<u32>,
        /// `quantum`: bytes per DRR round (default: the MTU plus the Ethernet
        /// header).
        quantum: Option<Size>,
        /// `target`: the acceptable standing queue delay (default 5ms).
        target: Option<TcTime>,
        /// `interval`: the window the delay must stay above target (default
        /// 100ms).
        interval: Option<TcTime>,
        /// `ecn`: mark ECT packets instead of dropping them (default on).
        ecn: Option<bool>,
        /// `ce_threshold`: mark ECT packets whose sojourn exceeds it.
        ce_threshold: Option<TcTime>,
        /// `memory_limit`: bytes all queued packets may occupy (default 32MB).
        memory_limit: Option<Size>,
        /// `drop_batch`: packets dropped at most per overflow (default 64).
        drop_batch: Option<u32>,
    },
    /// `htb`: hierarchical token bucket, root `1:`, with its classes.
    Htb {
        /// Minor id (hex, as tc) of the class unclassified traffic goes to.
        default: Option<String>,
        /// `r2q`: divisor of a class's rate giving its default quantum (default
        /// 10).
        r2q: Option<u32>,
        /// `direct_qlen`: packets of the direct queue (default: the device's
        /// txqueuelen).
        direct_qlen: Option<u32>,
        /// The classes (`[[link.qdisc.class]]`), parents before children.
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
    /// `rate`: the guaranteed rate.
    pub rate: TcRate,
    /// `ceil`: the most the class may borrow up to (default: `rate`).
    pub ceil: Option<TcRate>,
    /// `burst`: the rate bucket (default from the rate and the MTU).
    pub burst: Option<Size>,
    /// `cburst`: the ceil bucket (default from the ceil and the MTU).
    pub cburst: Option<Size>,
    /// `prio`: the class's priority when borrowing, lower first (default 0).
    pub prio: Option<u32>,
    /// `quantum`: bytes per DRR round (default: rate / r2q).
    pub quantum: Option<u32>,
    /// Leaf qdisc (classless), e.g. `"sfq perturb 10"`.
    pub qdisc: Option<QdiscSpec>,
}

/// Handle of the root qdisc the structured form creates for HTB and mq.
const ROOT_HANDLE: &str = "1:";
const ROOT: Handle = tc_h_make(1, 0);

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
        configurable(self.kind()).is_some_and(syntax::has_class_options)
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

    /// The steps that build this qdisc as the root of `dir`'s device
    /// (under an mq root with one copy per TX queue when `tx_queues > 1`):
    /// typed requests, each with the tc line that says the same. The error
    /// names the field inside the qdisc (empty for the qdisc itself).
    pub fn steps(&self, dir: Dir, tx_queues: u32) -> Result<Vec<Step>, (String, String)> {
        let dev = dir.dev();
        let args = self.args();
        if tx_queues > 1 && self.is_classful() {
            return Err((String::new(), format!(
                "a {} tree cannot be repeated under mq (tx_queues = {tx_queues}); fix: use tx_queues = 1 or write tc lines",
                self.kind()
            )));
        }
        let options = self.options()?;
        if tx_queues > 1 {
            // mq without options: what `tc qdisc add ... mq` sends.
            let mut steps = vec![qdisc_step(
                dir,
                TC_H_ROOT,
                Some(ROOT),
                "mq",
                QdiscOptions::None,
                format!("tc qdisc add dev {dev} root handle {ROOT_HANDLE} mq"),
            )];
            for queue in 1..=tx_queues {
                steps.push(qdisc_step(
                    dir,
                    tc_h_make(1, queue as u16),
                    None,
                    self.kind(),
                    options.clone(),
                    format!("tc qdisc add dev {dev} parent {ROOT_HANDLE}{queue:x} {args}"),
                ));
            }
            return Ok(steps);
        }
        let QdiscSpec::Table(QdiscTable::Htb { classes, .. }) = self else {
            return Ok(vec![qdisc_step(
                dir,
                TC_H_ROOT,
                None,
                self.kind(),
                options,
                format!("tc qdisc add dev {dev} root {args}"),
            )]);
        };
        let mut steps = vec![qdisc_step(
            dir,
            TC_H_ROOT,
            Some(ROOT),
            "htb",
            options,
            format!("tc qdisc add dev {dev} root handle {ROOT_HANDLE} {args}"),
        )];
        let mut leaves = Vec::new();
        for (i, class) in classes.iter().enumerate() {
            let at = |(field, m): (String, String)| (format!("class[{i}].{field}"), m);
            let classid = class_handle(&class.classid).map_err(|m| at(("classid".into(), m)))?;
            let parent_text = class.parent.as_deref().unwrap_or(ROOT_HANDLE);
            let parent = class_handle(parent_text).map_err(|m| at(("parent".into(), m)))?;
            steps.push(Step::Request {
                request: Request {
                    object: Object::Class,
                    verb: Verb::Add,
                    dev: Some(dir),
                    parent: Some(parent),
                    handle: Some(classid),
                    kind: Some("htb".into()),
                    options: Options::Class(class.options().map_err(at)?),
                },
                line: format!(
                    "tc class add dev {dev} parent {parent_text} classid {} htb {}",
                    class.classid,
                    class.args()
                ),
            });
            if let Some(leaf) = &class.qdisc {
                let options = leaf.options().map_err(|(_, m)| at(("qdisc".into(), m)))?;
                leaves.push(qdisc_step(
                    dir,
                    classid,
                    None,
                    leaf.kind(),
                    options,
                    format!(
                        "tc qdisc add dev {dev} parent {} {}",
                        class.classid,
                        leaf.args()
                    ),
                ));
            }
        }
        steps.extend(leaves);
        Ok(steps)
    }

    /// The options tc would send for this qdisc: the written form's words
    /// parsed by the kind's own parser, the table form's values converted
    /// by the same rules (`crate::tc::opts`). The error names the field.
    fn options(&self) -> Result<QdiscOptions, (String, String)> {
        match self {
            QdiscSpec::Line(line) => {
                let mut words = line.split_whitespace();
                let kind = words.next().unwrap_or("");
                let words: Vec<&str> = words.collect();
                syntax::parse_qdisc(kinds::BUILTIN, kind, &words).map_err(|e| {
                    (
                        String::new(),
                        format!("tc rejects \"{}\": {e}", self.args()),
                    )
                })
            }
            QdiscSpec::Table(t) => t.options(),
        }
    }

    /// `kind arg arg ...` as tc takes it after `root`/`parent X`.
    fn args(&self) -> String {
        match self {
            QdiscSpec::Line(line) => line.split_whitespace().collect::<Vec<_>>().join(" "),
            QdiscSpec::Table(t) => t.args(),
        }
    }
}

impl QdiscTable {
    /// The options tc would send for the parameters set.
    fn options(&self) -> Result<QdiscOptions, (String, String)> {
        let tc = |e: TcError| {
            (
                String::new(),
                format!("tc rejects \"{}\": {e}", self.args()),
            )
        };
        Ok(match self {
            // What tc sends without options.
            QdiscTable::PfifoFast => QdiscOptions::None,
            QdiscTable::Pfifo { limit } | QdiscTable::PfifoHeadDrop { limit } => {
                fifo::options(limit.map(u64::from))
            }
            QdiscTable::Bfifo { limit } => fifo::options(limit.as_ref().map(Size::value)),
            QdiscTable::Tbf {
                rate,
                burst,
                latency,
                limit,
                peakrate,
                mtu,
            } => QdiscOptions::Tbf({
                let latency_us = latency.as_ref().map_or(0, TcTime::value);
                // As tc reads `latency T limit L`: a limit after a latency.
                if latency_us != 0 && limit.is_some() {
                    return Err(tc(tbf::limit_or_latency()));
                }
                tbf::options(&TbfArgs {
                    rate: rate.value(),
                    burst: burst.value(),
                    limit: limit.as_ref().map_or(0, Size::value),
                    latency_us,
                    peakrate: peakrate.as_ref().map_or(0, TcRate::value),
                    mtu: mtu.as_ref().map_or(0, Size::value),
                    ..TbfArgs::default()
                })
                .map_err(tc)?
            }),
            QdiscTable::Sfq {
                limit,
                perturb,
                quantum,
                divisor,
                flows,
                depth,
                headdrop,
            } => QdiscOptions::Sfq(SfqOptions {
                limit: limit.map(sfq::limit).transpose().map_err(tc)?.unwrap_or(0),
                perturb_period: match perturb {
                    None => 0,
                    Some(p) => i32::try_from(*p).map_err(|_| {
                        at("perturb")(format!(
                            "{p} is out of range; expected 0..={} seconds; fix: write perturb = 10",
                            i32::MAX
                        ))
                    })?,
                },
                quantum: u32_size("quantum", quantum)?.unwrap_or(0),
                divisor: divisor.unwrap_or(0),
                flows: flows.unwrap_or(0),
                depth: depth.unwrap_or(0),
                headdrop: *headdrop == Some(true),
            }),
            QdiscTable::Codel {
                limit,
                target,
                interval,
                ecn,
                ce_threshold,
            } => codel::options(CodelOptions {
                limit: *limit,
                target: micros(target),
                interval: micros(interval),
                ecn: *ecn,
                ce_threshold: micros(ce_threshold),
            }),
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
            } => fq_codel::options(FqCodelOptions {
                limit: *limit,
                flows: *flows,
                quantum: u32_size("quantum", quantum)?,
                target: micros(target),
                interval: micros(interval),
                ecn: *ecn,
                ce_threshold: micros(ce_threshold),
                memory_limit: memory_limit
                    .as_ref()
                    .map(|m| fq_codel::memory_limit(m.value())),
                drop_batch_size: *drop_batch,
                ..FqCodelOptions::default()
            }),
            QdiscTable::Htb {
                default,
                r2q,
                direct_qlen,
                ..
            } => {
                let mut glob = HtbGlob::default();
                if let Some(d) = default {
                    glob.defcls = parse_minor(d).map_err(at("default"))?;
                }
                if let Some(r2q) = r2q {
                    glob.rate2quantum = *r2q;
                }
                glob.direct_qlen = *direct_qlen;
                QdiscOptions::Htb(glob)
            }
        })
    }

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

    /// `kind arg arg ...`: the kind and the tc arguments of the parameters
    /// that are set.
    fn args(&self) -> String {
        let mut words = vec![self.kind().to_string()];
        self.push_args(&mut words);
        words.join(" ")
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
                // fq_codel reads a plain number (`get_unsigned`), not a size.
                opt(w, "quantum", &quantum.as_ref().map(Size::value));
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
    /// The options `tc class add ... htb` sends for the parameters set.
    fn options(&self) -> Result<ClassOptions, (String, String)> {
        htb::class_options(&HtbClassArgs {
            rate: self.rate.value(),
            ceil: self.ceil.as_ref().map_or(0, TcRate::value),
            buffer: self.burst.as_ref().map_or(0, Size::value),
            cbuffer: self.cburst.as_ref().map_or(0, Size::value),
            prio: self.prio.unwrap_or(0),
            quantum: self.quantum.unwrap_or(0),
            ..HtbClassArgs::default()
        })
        .map_err(|e| {
            (
                "rate".to_string(),
                format!("tc rejects \"htb {}\": {e}", self.args()),
            )
        })
    }

    fn check(&self, earlier: &[&str]) -> Result<(), (String, String)> {
        if tc_h_minor(class_handle(&self.classid).map_err(at("classid"))?) == 0 {
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

/// A TOML time in µs as the tc attribute holds it (`parse_time` already
/// refused more than 2^32 - 1 µs).
fn micros(t: &Option<TcTime>) -> Option<u32> {
    t.as_ref()
        .map(|t| u32::try_from(t.value()).unwrap_or(u32::MAX))
}

/// A size that tc reads into an unsigned int.
fn u32_size(field: &'static str, size: &Option<Size>) -> Result<Option<u32>, (String, String)> {
    size.as_ref()
        .map(|s| {
            u32::try_from(s.value()).map_err(|_| {
                at(field)(format!(
                    "\"{s}\" is out of range; expected at most {} bytes; fix: write e.g. {field} = 1514",
                    u32::MAX
                ))
            })
        })
        .transpose()
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
        },
        line,
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
        let hint = crate::tc::hint::missing_kind(kind)
            .map(|h| format!(" ({h})"))
            .unwrap_or_default();
        Err(format!(
            "unknown qdisc kind \"{kind}\"{hint}; expected one of {}; fix: write e.g. qdisc = \"fq_codel\"",
            syntax::names(kinds::BUILTIN, |k| k.configurable)
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

    /// The tc lines the steps of `s` say, as the report prints them.
    fn lines(s: &QdiscSpec, dir: Dir, tx_queues: u32) -> Result<Vec<String>, String> {
        s.steps(dir, tx_queues)
            .map(|steps| steps.iter().map(|s| s.line().to_string()).collect())
            .map_err(|(_, m)| m)
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
        let e = spec("qdisc = \"netem delay 20ms\"").unwrap_err();
        assert!(
            e.contains("unknown qdisc kind \"netem\" (bloatbox emulates netem"),
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

    /// What tc sends for `line` (the front end's parse of the tc text).
    fn tc_request(line: &str) -> Result<Request, TcError> {
        let cmd = crate::tc::TcCommand::parse(line)?;
        crate::tc::request(kinds::BUILTIN, &cmd)
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
    fn steps_refuse_what_tc_refuses_and_name_the_field() {
        let err = |text: &str| spec(text).unwrap().steps(Dir::LeftToRight, 1).unwrap_err();
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
            kind in 0..5usize,
            a in proptest::option::of(proptest::sample::select(vec![0u64, 1, 2, 3, 100, 1514, 65535, 65536, 4294967295])),
            b in proptest::option::of(proptest::sample::select(vec![0u64, 1, 2, 1500, 1_000_000, 4294967295])),
            t in proptest::option::of(proptest::sample::select(vec!["0", "1", "500us", "5ms", "1s", "4294s"])),
            r in proptest::sample::select(vec!["8bit", "1kbit", "10mbit", "1560mbit", "100gbit"]),
            flag in proptest::option::of(proptest::bool::ANY),
        ) {
            let opt = |k: &str, v: Option<String>| v.map(|v| format!(", {k} = {v}")).unwrap_or_default();
            let a_ = a.map(|v| v.to_string());
            let b_ = b.map(|v| v.to_string());
            let t_ = t.map(|v| format!("\"{v}\""));
            let f_ = flag.map(|v| v.to_string());
            let text = match kind {
                0 => format!("qdisc = {{ kind = \"fq_codel\"{}{}{}{}{} }}", opt("limit", a_.clone()), opt("quantum", b_.clone()), opt("target", t_.clone()), opt("ecn", f_), opt("memory_limit", b_)),
                1 => format!("qdisc = {{ kind = \"codel\"{}{}{}{} }}", opt("limit", a_), opt("interval", t_.clone()), opt("ce_threshold", t_), opt("ecn", f_)),
                2 => format!("qdisc = {{ kind = \"sfq\"{}{}{}{}{} }}", opt("limit", a_.clone()), opt("quantum", b_.clone()), opt("perturb", b_), opt("depth", a_), opt("headdrop", f_)),
                3 => format!("qdisc = {{ kind = \"tbf\", rate = \"{r}\", burst = {}{}{}{} }}", b.unwrap_or(0), opt("limit", a_), opt("latency", t_), opt("mtu", f_.map(|_| "1514".into()))),
                _ => format!("qdisc = {{ kind = \"htb\", class = [{{ classid = \"1:1\", rate = \"{r}\"{}{}{} }}] }}", opt("burst", b_), opt("quantum", a_.clone()), opt("prio", a_)),
            };
            // u32 fields the TOML refuses out of range, as serde does.
            let Ok(s) = spec(&text) else { return Ok(()); };
            match s.steps(Dir::LeftToRight, 1) {
                Ok(steps) => assert_steps_are_their_lines(&steps),
                Err(e) => {
                    let mut lines = vec![];
                    if let QdiscSpec::Table(QdiscTable::Htb { classes, .. }) = &s {
                        lines.push("tc qdisc add dev left root handle 1: htb".to_string());
                        lines.push(format!("tc class add dev left parent 1: classid 1:1 htb {}", classes[0].args()));
                    } else {
                        lines.push(format!("tc qdisc add dev left root {}", s.args()));
                    }
                    let refused = lines.iter().any(|l| tc_request(l).is_err());
                    proptest::prop_assert!(refused, "{text}: typed refused ({e:?}) what tc takes: {lines:?}");
                }
            }
        }
    }
}
