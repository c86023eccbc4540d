//! `set` arguments: `left.rate=10mbit`, `right.delay=20ms`, `left.bql=off`,
//! `left.tx_ring=64`, `right.rx-usecs=20`... (device `left` is the
//! left→right direction), or whole `ethtool -C|-G left|right ...` lines.
//! Applied to a copy of both directions' parameters: all or nothing.
//!
//! The link shape keys of the configuration work too (`SetPlan`):
//! `left.netem="delay 10ms 2ms loss 1%"` (all impairments at once),
//! `left.trace=FILE`, `left.schedule=FILE` (empty: none), `left.framing=pppoe`,
//! `left.seed=7`, and single impairments merged into the running ones:
//! `left.jitter=2ms`, `left.distribution=normal`, `left.loss=1%` (or
//! `gemodel ...`, `state ...`, `none`), `left.duplicate=0.5%`,
//! `left.corrupt=0.1%`, `left.reorder="25% gap 5"` (or `none`). Values are
//! parsed where the request arrives (`parse_set`), and the plan is applied
//! to copies of what both directions run with (`SetPlan::outcome`), so each
//! direction's datapath thread only swaps its part in. The daemon opens no file a
//! request names: the client reads trace and schedule files and sends their
//! contents as `left.trace_text=...` / `left.schedule_text=...`
//! (`inline_files`).

use super::field::{set_arg, FieldError, LinkField};
use crate::config::ethtool::show::{self, EthtoolReply};
use crate::config::{CoalescingError, ConfigError};
use crate::dir::Dir;
use crate::link::impair::Loss;
use crate::link::{Framing, Impairments, LinkParams, LinkShape, Schedule, ShapeError};
use crate::tc::framing::parse_framing;
use crate::tc::netem::{format_netem, parse_netem, NetemError};
use std::path::PathBuf;

const USAGE: &str =
    "expected DEV.FIELD=VALUE with DEV left or right and FIELD one of rate, delay, \
tx_ring, bql, tx_usecs, tx_frames, rx_usecs, rx_frames, tx_queues, tx_stop_threshold, tx_post_ns \
(e.g. left.rate=10mbit), \
or a shape key: netem, trace, schedule, framing, seed, jitter, distribution, loss, duplicate, \
corrupt, reorder (e.g. left.loss=1%); or an ethtool -C/-G/-K/-L line or -k/-c/-g/-l query";

/// Why `set` arguments were refused; each names the argument at fault (a
/// file's contents by their key and size).
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    /// No arguments.
    #[error("nothing to set: {USAGE}")]
    Nothing,
    /// An argument that is not `DEV.FIELD=VALUE`.
    #[error("\"{0}\": {USAGE}")]
    Malformed(String),
    /// A device other than left or right.
    #[error("\"{arg}\": device \"{dev}\" is unknown; {USAGE}")]
    UnknownDevice {
        /// The argument.
        arg: String,
        /// The device it names.
        dev: String,
    },
    /// A field `set` does not have.
    #[error("\"{arg}\": field \"{name}\" is unknown; {USAGE}")]
    UnknownField {
        /// The argument.
        arg: String,
        /// The field it names.
        name: String,
    },
    /// A link field's value refused.
    #[error("\"{arg}\": {error}")]
    Field {
        /// The argument (for a typed edit, the one that says the same).
        arg: String,
        /// Why.
        error: FieldError,
    },
    /// A shape key's value refused.
    #[error("\"{arg}\": {error}")]
    Shape {
        /// The argument as shown (a file's contents by key and size).
        arg: String,
        /// Why.
        error: ShapeEditError,
    },
    /// An ethtool line refused.
    #[error(transparent)]
    Ethtool(#[from] ConfigError),
    /// A direction's coalescing, after every argument, would not interrupt.
    #[error("dev {}: {error}", dir.dev())]
    Coalescing {
        /// The direction.
        dir: Dir,
        /// Why.
        error: CoalescingError,
    },
    /// A direction's stop threshold, after every argument, above its ring.
    #[error("dev {}: tx_stop_threshold {threshold} is above tx_ring ({ring}): the queue would stop with more descriptors free than the ring has; set tx_stop_threshold to {ring} or less (19 is virtio_net's 2 + MAX_SKB_FRAGS), or a larger tx_ring", dir.dev())]
    StopAboveRing {
        /// The direction.
        dir: Dir,
        /// Its `tx_stop_threshold`.
        threshold: u32,
        /// Its `tx_ring`.
        ring: u32,
    },
    /// A trace or schedule file the client cannot read.
    #[error("\"{arg}\": cannot read the {name} file {}: {error}", path.display())]
    ReadFile {
        /// The argument.
        arg: String,
        /// `trace` or `schedule`.
        name: String,
        /// The file, relative to the client's directory.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A trace or schedule file that does not parse.
    #[error("\"{arg}\": in {}: {error}", path.display())]
    File {
        /// The argument.
        arg: String,
        /// The file.
        path: PathBuf,
        /// Why.
        error: ShapeError,
    },
}

/// Why a shape key's value was refused (`SetError::Shape` names the
/// argument).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeEditError {
    /// Netem options (all of them, or a single impairment) refused.
    #[error(transparent)]
    Netem(#[from] NetemError),
    /// A schedule, trace or framing refused, or a merged shape invalid.
    #[error(transparent)]
    Shape(#[from] ShapeError),
    /// A file named in a request (the client sends its contents).
    #[error(
        "the daemon opens no file a request names: `bloatbox set` reads the {0} file and sends its contents as {0}_text"
    )]
    FileNamed(String),
    /// A seed that is not an unsigned 64-bit integer.
    #[error("seed \"{0}\": expected an integer 0..=18446744073709551615")]
    Seed(String),
    /// A key that is no shape key.
    #[error("field \"{0}\" is unknown; {USAGE}")]
    UnknownKey(String),
}

/// The shape keys, as `set` takes them.
const SHAPE_KEYS: [&str; 13] = [
    "netem",
    "trace",
    "schedule",
    "trace_text",
    "schedule_text",
    "framing",
    "seed",
    "jitter",
    "distribution",
    "loss",
    "duplicate",
    "corrupt",
    "reorder",
];

/// One change to a direction's `LinkShape`, parsed.
#[derive(Clone, Debug, PartialEq)]
enum ShapeEdit {
    /// All impairments (the seed is kept).
    Netem(Impairments),
    Jitter {
        ns: u64,
        correlation: f64,
    },
    Distribution(crate::link::impair::Distribution),
    Loss(Loss),
    Duplicate(f64, f64),
    Corrupt(f64, f64),
    Reorder(Option<crate::link::impair::Reorder>),
    Schedule(Option<Schedule>),
    Framing(Framing),
    Seed(u64),
}

impl ShapeEdit {
    /// Parses `value` for shape key `key`.
    fn parse(key: &str, value: &str) -> Result<ShapeEdit, ShapeEditError> {
        let tokens: Vec<&str> = value.split_whitespace().collect();
        let none = tokens.is_empty() || tokens == ["none"];
        // A single netem option, through the netem parser.
        let netem = |prefix: &[&str]| {
            let all: Vec<&str> = prefix
                .iter()
                .copied()
                .chain(tokens.iter().copied())
                .collect();
            parse_netem(&all)
        };
        Ok(match key {
            "netem" if none => ShapeEdit::Netem(Impairments::default()),
            "netem" => ShapeEdit::Netem(parse_netem(&tokens)?),
            "jitter" if none => ShapeEdit::Jitter {
                ns: 0,
                correlation: 0.0,
            },
            "jitter" => {
                let imp = netem(&["delay", "0"])?;
                ShapeEdit::Jitter {
                    ns: imp.jitter_ns,
                    correlation: imp.jitter_correlation,
                }
            }
            "distribution" => {
                ShapeEdit::Distribution(netem(&["delay", "0", "1", "distribution"])?.distribution)
            }
            "loss" if none => ShapeEdit::Loss(Loss::None),
            "loss" => ShapeEdit::Loss(netem(&["loss"])?.loss),
            "duplicate" if none => ShapeEdit::Duplicate(0.0, 0.0),
            "duplicate" => {
                let imp = netem(&["duplicate"])?;
                ShapeEdit::Duplicate(imp.duplicate, imp.duplicate_correlation)
            }
            "corrupt" if none => ShapeEdit::Corrupt(0.0, 0.0),
            "corrupt" => {
                let imp = netem(&["corrupt"])?;
                ShapeEdit::Corrupt(imp.corrupt, imp.corrupt_correlation)
            }
            "reorder" if none => ShapeEdit::Reorder(None),
            // A placeholder delay: reordering is checked against the
            // merged shape's delay when applied.
            "reorder" => ShapeEdit::Reorder(netem(&["delay", "1", "reorder"])?.reorder),
            "trace" | "schedule" if value.trim().is_empty() => ShapeEdit::Schedule(None),
            "trace" | "schedule" => return Err(ShapeEditError::FileNamed(key.to_string())),
            "trace_text" => ShapeEdit::Schedule(Some(Schedule::parse_mahimahi(value)?)),
            "schedule_text" => ShapeEdit::Schedule(Some(Schedule::parse_native(value)?)),
            "framing" if none => ShapeEdit::Framing(Framing::default()),
            "framing" => ShapeEdit::Framing(parse_framing(&tokens)?),
            "seed" => ShapeEdit::Seed(
                value
                    .trim()
                    .parse()
                    .map_err(|_| ShapeEditError::Seed(value.to_string()))?,
            ),
            _ => return Err(ShapeEditError::UnknownKey(key.to_string())),
        })
    }

    fn apply(&self, shape: &mut LinkShape) {
        let imp = &mut shape.impairments;
        match self.clone() {
            ShapeEdit::Netem(new) => {
                *imp = Impairments {
                    seed: imp.seed,
                    ..new
                }
            }
            ShapeEdit::Jitter { ns, correlation } => {
                (imp.jitter_ns, imp.jitter_correlation) = (ns, correlation)
            }
            ShapeEdit::Distribution(d) => imp.distribution = d,
            ShapeEdit::Loss(l) => imp.loss = l,
            ShapeEdit::Duplicate(p, c) => (imp.duplicate, imp.duplicate_correlation) = (p, c),
            ShapeEdit::Corrupt(p, c) => (imp.corrupt, imp.corrupt_correlation) = (p, c),
            ShapeEdit::Reorder(r) => imp.reorder = r,
            ShapeEdit::Schedule(s) => shape.schedule = s,
            ShapeEdit::Framing(f) => shape.framing = f,
            ShapeEdit::Seed(seed) => imp.seed = seed,
        }
    }
}

/// `set` arguments, parsed: link edits (applied as `apply_set` applies
/// arguments) and shape edits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SetPlan {
    link: Vec<LinkEdit>,
    shape: Vec<(String, Dir, ShapeEdit)>,
}

/// One change to the link parameters in a `SetPlan`.
#[derive(Clone, Debug, PartialEq)]
enum LinkEdit {
    /// A link argument as written (`DEV.FIELD=VALUE`, or an ethtool line),
    /// read when the plan is applied.
    Arg(String),
    /// A field of a direction set to a value in core units (the TUI's
    /// edits, typed from the start).
    Field {
        dir: Dir,
        field: LinkField,
        value: u64,
    },
}

/// What a direction's shape is after a `set`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ShapeReport {
    /// Whether any impairment is set.
    pub impaired: bool,
    /// The impairments as netem options (with the seed).
    pub netem: String,
    /// "none", or the schedule's kind and length.
    pub schedule: String,
    /// The link-layer framing (overhead, mpu, linklayer) in force.
    pub framing: Framing,
}

impl ShapeReport {
    /// The report of `shape`.
    pub fn of(shape: &LinkShape) -> ShapeReport {
        ShapeReport {
            impaired: !shape.impairments.is_none(),
            netem: format_netem(&shape.impairments),
            schedule: match &shape.schedule {
                None => "none".into(),
                Some(Schedule::Steps { steps, repeat_ns }) => format!(
                    "{} steps{}",
                    steps.len(),
                    repeat_ns.map_or(String::new(), |r| format!(
                        ", repeating every {}",
                        crate::units::sprint_time(r / 1000)
                    ))
                ),
                Some(Schedule::Trace { opportunities_ms }) => {
                    format!("mahimahi trace, {} opportunities", opportunities_ms.len())
                }
            },
            framing: shape.framing,
        }
    }
}

/// The effective configuration of both directions after a `set`, and what
/// its ethtool lines answer.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Effective {
    /// Left→right parameters in force.
    pub left: LinkParams,
    /// Right→left parameters in force.
    pub right: LinkParams,
    /// The impairments, schedule and framing of each direction.
    pub shape: ShapeReports,
    /// One reply per ethtool line, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ethtool: Vec<EthtoolReply>,
}

impl Effective {
    /// Each direction's link in a few lines: rate, delay, ring, BQL,
    /// coalescing, and what is set beyond the defaults (features, netem,
    /// a schedule, framing).
    pub fn text(&self) -> String {
        use crate::units::{print_rate, sprint_time};
        let mut out = String::new();
        let on = |b: bool| if b { "on" } else { "off" };
        for (dir, p, shape) in [
            (Dir::LeftToRight, &self.left, &self.shape.left),
            (Dir::RightToLeft, &self.right, &self.shape.right),
        ] {
            let rate = match p.rate_bytes_ps {
                0 => "unlimited".to_string(),
                r => print_rate(r),
            };
            let queues = match p.tx_queues {
                1 => String::new(),
                n => format!(" tx-queues {n}"),
            };
            out += &format!(
                "dev {} ({}): rate {rate} delay {} ring {} bql {}{queues} coalescing rx-usecs {} rx-frames {} tx-usecs {} tx-frames {}{}\n",
                dir.dev(),
                dir.arrow(),
                sprint_time(p.delay_ns / 1000),
                p.tx_ring,
                on(p.bql),
                p.rx_usecs,
                p.rx_frames,
                p.tx_usecs,
                p.tx_frames,
                crate::config::ethtool::show::coalesce_mode_words(p),
            );
            if p.tx_stop_threshold != 0 || p.tx_post_ns != 0 {
                out += &format!(
                    "  driver tx-stop-threshold {} tx-post {}\n",
                    p.tx_stop_threshold,
                    crate::units::sprint_time64(p.tx_post_ns.try_into().unwrap_or(i64::MAX))
                );
            }
            if p.features != Default::default() {
                out += &format!("  features {}\n", p.features);
            }
            if shape.impaired {
                out += &format!("  netem {}\n", shape.netem);
            }
            if shape.schedule != "none" {
                out += &format!("  schedule {}\n", shape.schedule);
            }
            if shape.framing != Framing::default() {
                let f = shape.framing;
                let linklayer = match f.linklayer {
                    crate::units::LinkLayer::Ethernet => "ethernet",
                    crate::units::LinkLayer::Atm => "atm",
                };
                out += &format!(
                    "  framing overhead {} mpu {} linklayer {linklayer}\n",
                    f.overhead, f.mpu
                );
            }
        }
        out
    }
}

/// Both directions' shape reports.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ShapeReports {
    /// Left→right.
    pub left: ShapeReport,
    /// Right→left.
    pub right: ShapeReport,
}

/// Parses `set` arguments; link fields are checked when applied. The error
/// names the argument (a file's contents by their key and size).
pub fn parse_set(args: &[String]) -> Result<SetPlan, SetError> {
    if args.is_empty() {
        return Err(SetError::Nothing);
    }
    let mut plan = SetPlan::default();
    for arg in args {
        let shape_key = arg
            .split_once('=')
            .and_then(|(key, value)| Some((key.split_once('.')?, value)))
            .filter(|((_, name), _)| SHAPE_KEYS.contains(name));
        match shape_key {
            Some(((dev, name), value)) => {
                let dir = Dir::from_dev(dev).ok_or_else(|| unknown_device(arg, dev))?;
                let shown = if name.ends_with("_text") {
                    format!("{dev}.{name}=({} bytes)", value.len())
                } else {
                    arg.clone()
                };
                let edit = ShapeEdit::parse(name, value)
                    .map_err(|error| SetError::Shape { arg: shown, error })?;
                plan.shape.push((arg.clone(), dir, edit));
            }
            None => plan.link.push(LinkEdit::Arg(arg.clone())),
        }
    }
    Ok(plan)
}

/// Command-line words as `set` arguments: an unquoted `ethtool ...` line
/// arrives as separate words, so each `ethtool` takes the words after it up
/// to the next `KEY=VALUE` (ethtool's own words have no `=`) or `ethtool`.
pub fn group_ethtool_words(words: &[String]) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    let mut in_ethtool = false;
    for w in words {
        if w == "ethtool" {
            args.push(w.clone());
            in_ethtool = true;
        } else if in_ethtool && !w.contains('=') {
            if let Some(line) = args.last_mut() {
                line.push(' ');
                line.push_str(w);
            }
        } else {
            in_ethtool = false;
            args.push(w.clone());
        }
    }
    args
}

/// The client's side of `trace`/`schedule` arguments: reads each file
/// (relative to `cwd`, the client's working directory), checks that it
/// parses, and replaces the argument with `DEV.trace_text=CONTENTS` (or
/// `schedule_text`), so that the daemon never opens a path a request names.
/// An empty value (clear the schedule) passes as it is.
pub fn inline_files(args: &[String], cwd: &std::path::Path) -> Result<Vec<String>, SetError> {
    args.iter()
        .map(|arg| {
            let Some((key, value)) = arg.split_once('=') else {
                return Ok(arg.clone());
            };
            let Some((dev, name @ ("trace" | "schedule"))) = key.split_once('.') else {
                return Ok(arg.clone());
            };
            if value.trim().is_empty() {
                return Ok(arg.clone());
            }
            let path = cwd.join(value.trim());
            let text = match crate::config::read_input_file(&path) {
                Ok(text) => text,
                Err(error) => {
                    return Err(SetError::ReadFile {
                        arg: arg.clone(),
                        name: name.to_string(),
                        path,
                        error,
                    })
                }
            };
            let parsed = if name == "trace" {
                Schedule::parse_mahimahi(&text)
            } else {
                Schedule::parse_native(&text)
            };
            if let Err(error) = parsed {
                return Err(SetError::File {
                    arg: arg.clone(),
                    path,
                    error,
                });
            }
            Ok(format!("{dev}.{name}_text={text}"))
        })
        .collect()
}

impl SetPlan {
    /// The plan that sets `field` of direction `dir` to `value` (core
    /// units, as `LinkField::parse` gives them), as the TUI edits a field:
    /// checked and applied as the `set` argument `set_arg` writes for it
    /// would be, with no text to read.
    pub fn field(dir: Dir, field: LinkField, value: u64) -> SetPlan {
        SetPlan {
            link: vec![LinkEdit::Field { dir, field, value }],
            shape: Vec::new(),
        }
    }

    /// Applies the plan to copies of both directions' parameters and
    /// shapes, then validates the shapes; on error nothing changes and the
    /// message names the argument. Returns the replies of its ethtool lines.
    pub fn apply(
        &self,
        params: &mut [LinkParams; 2],
        shapes: &mut [LinkShape; 2],
    ) -> Result<Vec<EthtoolReply>, SetError> {
        let mut next = *params;
        let mut replies = Vec::new();
        if !self.link.is_empty() {
            replies = apply_link(&self.link, &mut next)?;
        }
        let mut next_shapes = shapes.clone();
        for (arg, dir, edit) in &self.shape {
            let shape = &mut next_shapes[dir.index()];
            edit.apply(shape);
            shape.validate().map_err(|e| SetError::Shape {
                arg: arg.clone(),
                error: e.into(),
            })?;
        }
        *params = next;
        *shapes = next_shapes;
        Ok(replies)
    }

    /// What the plan makes of a link running with `params` and `shapes`
    /// (by `Dir::index()`), all or nothing: each direction's part (only what
    /// changes) and the effective configuration.
    pub fn outcome(
        &self,
        params: [LinkParams; 2],
        shapes: [LinkShape; 2],
    ) -> Result<Outcome, SetError> {
        let (mut next, mut next_shapes) = (params, shapes.clone());
        let ethtool = self.apply(&mut next, &mut next_shapes)?;
        let changes = Dir::ALL.map(|d| {
            let i = d.index();
            Change {
                params: (next[i] != params[i]).then_some(next[i]),
                shape: (next_shapes[i] != shapes[i]).then(|| next_shapes[i].clone()),
            }
        });
        Ok(Outcome {
            changes,
            effective: Effective {
                left: next[0],
                right: next[1],
                shape: ShapeReports {
                    left: ShapeReport::of(&next_shapes[0]),
                    right: ShapeReport::of(&next_shapes[1]),
                },
                ethtool,
            },
        })
    }
}

/// What a `set` changes in one direction (validated): `None` leaves it be.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Change {
    /// The new parameters of the direction, if the `set` changes any.
    pub params: Option<LinkParams>,
    /// The new shape of the direction, if the `set` changes any.
    pub shape: Option<LinkShape>,
}

/// A `set` plan's outcome (`SetPlan::outcome`).
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// By `Dir::index()`.
    pub changes: [Change; 2],
    /// The effective configuration after the `set`, as its reply shows it.
    pub effective: Effective,
}

/// A warning for each link field in `args` whose value is probably a typo
/// (`LinkField::hint`), naming the argument; the value is still applied
/// as tc reads it.
pub fn warnings(args: &[String]) -> Vec<String> {
    args.iter()
        .filter_map(|arg| {
            let (key, value) = arg.split_once('=')?;
            let field = field_of(key.split_once('.')?.1)?;
            Some(format!("\"{arg}\": {}", field.hint(value)?))
        })
        .collect()
}

/// The error of `arg`, whose device `dev` is neither left nor right.
fn unknown_device(arg: &str, dev: &str) -> SetError {
    SetError::UnknownDevice {
        arg: arg.to_string(),
        dev: dev.to_string(),
    }
}

fn field_of(name: &str) -> Option<LinkField> {
    let name = name.replace('_', "-");
    let name = if name == "tx-ring" { "ring" } else { &name };
    LinkField::ALL.into_iter().find(|f| f.name() == name)
}

/// Applies every argument to `params` (indexed by `Dir::index`); on error
/// `params` is unchanged and the message names the argument. Returns what
/// each ethtool line answers, in order.
pub fn apply_set(
    args: &[String],
    params: &mut [LinkParams; 2],
) -> Result<Vec<EthtoolReply>, SetError> {
    let edits: Vec<LinkEdit> = args.iter().cloned().map(LinkEdit::Arg).collect();
    apply_link(&edits, params)
}

/// `apply_set` of a plan's link edits: an argument is read here, a typed
/// field is named in an error by the argument that says the same
/// (`set_arg`).
fn apply_link(
    edits: &[LinkEdit],
    params: &mut [LinkParams; 2],
) -> Result<Vec<EthtoolReply>, SetError> {
    if edits.is_empty() {
        return Err(SetError::Nothing);
    }
    let mut next = *params;
    let mut replies = Vec::new();
    for edit in edits {
        let (dir, field, v, arg) = match edit {
            LinkEdit::Field { dir, field, value } => {
                (*dir, *field, *value, set_arg(*dir, *field, *value))
            }
            LinkEdit::Arg(arg) if arg.trim_start().starts_with("ethtool") => {
                let cmd = crate::config::parse_ethtool(arg)?;
                let device = &mut next[cmd.direction.index()];
                let before = *device;
                cmd.apply(device)?;
                replies.push(show::reply(&cmd, &before, device));
                continue;
            }
            LinkEdit::Arg(arg) => {
                let malformed = || SetError::Malformed(arg.clone());
                let (key, value) = arg.split_once('=').ok_or_else(malformed)?;
                let (dev, name) = key.split_once('.').ok_or_else(malformed)?;
                let dir = Dir::from_dev(dev).ok_or_else(|| unknown_device(arg, dev))?;
                let field = field_of(name).ok_or_else(|| SetError::UnknownField {
                    arg: arg.clone(),
                    name: name.to_string(),
                })?;
                let v = field.parse(value).map_err(|error| SetError::Field {
                    arg: arg.clone(),
                    error,
                })?;
                (dir, field, v, arg.clone())
            }
        };
        field
            .apply(&mut next[dir.index()], v)
            .map_err(|error| SetError::Field { arg, error })?;
    }
    for (dir, p) in Dir::ALL.into_iter().zip(&next) {
        crate::config::check_link_coalescing(p)
            .map_err(|error| SetError::Coalescing { dir, error })?;
        if p.tx_stop_threshold > p.tx_ring {
            return Err(SetError::StopAboveRing {
                dir,
                threshold: p.tx_stop_threshold,
                ring: p.tx_ring,
            });
        }
    }
    *params = next;
    Ok(replies)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sets_fields_and_ethtool_lines_per_direction() {
        let mut p = [LinkParams::default(); 2];
        apply_set(
            &args(&[
                "left.rate=10mbit",
                "right.delay=20ms",
                "left.tx_ring=64",
                "right.bql=off",
                "ethtool -C left rx-usecs 20",
                "ethtool -G right tx 32",
            ]),
            &mut p,
        )
        .unwrap();
        assert_eq!(p[0].rate_bytes_ps, 1_250_000);
        assert_eq!(p[1].delay_ns, 20_000_000);
        assert_eq!(p[0].tx_ring, 64);
        assert!(!p[1].bql);
        assert_eq!(p[0].rx_usecs, 20);
        assert_eq!(p[1].tx_ring, 32);
        assert_eq!(p[1].rate_bytes_ps, LinkParams::default().rate_bytes_ps);
    }

    #[test]
    fn the_driver_s_stop_threshold_and_post_cost_are_set_live_within_the_ring() {
        let mut p = [LinkParams::default(); 2];
        apply_set(
            &args(&["left.tx_stop_threshold=19", "right.tx-post-ns=2000"]),
            &mut p,
        )
        .unwrap();
        assert_eq!((p[0].tx_stop_threshold, p[1].tx_post_ns), (19, 2_000));
        // The threshold must fit the ring, whichever of the two is set first.
        for order in [
            ["left.tx_ring=10", "left.tx_stop_threshold=19"],
            ["left.tx_stop_threshold=19", "left.tx_ring=10"],
        ] {
            let mut q = p;
            let e = apply_set(&args(&order), &mut q).unwrap_err().to_string();
            assert!(
                e.contains("dev left") && e.contains("tx_stop_threshold 19 is above tx_ring (10)"),
                "{e}"
            );
            assert_eq!(q, p, "a refused set changes nothing");
        }
        let e = apply_set(&args(&["left.tx_post_ns=1000001"]), &mut p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("tx-post-ns") && e.contains("1000000"), "{e}");
    }

    #[test]
    fn the_effective_link_reads_as_text_with_what_differs_from_the_defaults() {
        let plan = parse_set(&args(&[
            "left.rate=10mbit",
            "right.delay=20ms",
            "left.loss=1%",
            "left.tx_stop_threshold=19",
            "left.tx_post_ns=2000",
            "ethtool -K right tso off gso off",
            "ethtool -k right",
        ]))
        .unwrap();
        let out = plan
            .outcome([LinkParams::default(); 2], Default::default())
            .unwrap();
        let e = out.effective;
        assert_eq!(e.ethtool.len(), 2);
        assert_eq!(
            e.ethtool[0],
            EthtoolReply::default(),
            "tso gso off: as asked"
        );
        assert!(e.ethtool[1]
            .stdout
            .contains("tcp-segmentation-offload: off\n"));
        let text = e.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "dev left (left→right): rate 10Mbit delay 0us ring 256 bql on coalescing rx-usecs 0 rx-frames 1 tx-usecs 0 tx-frames 1",
                "  driver tx-stop-threshold 19 tx-post 2us",
                "  netem loss 1% seed 0",
                "dev right (right→left): rate 100Mbit delay 20ms ring 256 bql on coalescing rx-usecs 0 rx-frames 1 tx-usecs 0 tx-frames 1",
                "  features tx-generic-segmentation off tx-tcp-segmentation off tx-tcp-ecn-segmentation off tx-tcp6-segmentation off",
            ],
            "{text}"
        );
    }

    #[test]
    fn a_repeating_schedule_reads_in_time_units() {
        let shape = LinkShape {
            schedule: Some(Schedule::Steps {
                steps: Vec::new(),
                repeat_ns: Some(6_000_000_000),
            }),
            ..Default::default()
        };
        assert_eq!(
            ShapeReport::of(&shape).schedule,
            "0 steps, repeating every 6s"
        );
    }

    #[test]
    fn unquoted_ethtool_words_become_one_argument() {
        let words = args(&[
            "left.rate=20mbit",
            "ethtool",
            "-C",
            "left",
            "rx-usecs",
            "0",
            "right.delay=5ms",
            "ethtool",
            "-G",
            "right",
            "tx",
            "64",
        ]);
        assert_eq!(
            group_ethtool_words(&words),
            args(&[
                "left.rate=20mbit",
                "ethtool -C left rx-usecs 0",
                "right.delay=5ms",
                "ethtool -G right tx 64",
            ])
        );
        // Quoted lines pass as they are.
        let quoted = args(&["ethtool -C left rx-usecs 0", "left.bql=off"]);
        assert_eq!(group_ethtool_words(&quoted), quoted);
        let mut p = [LinkParams::default(); 2];
        apply_set(&group_ethtool_words(&words), &mut p).unwrap();
        assert_eq!((p[0].rate_bytes_ps, p[1].tx_ring), (2_500_000, 64));
    }

    #[test]
    fn likely_typos_are_warned_about_and_applied() {
        let a = args(&[
            "left.rate=100",
            "right.delay=20",
            "left.rate=100mbit",
            "left.ring=64",
        ]);
        let w = warnings(&a);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].starts_with("\"left.rate=100\": rate \"100\" is 96bit"),
            "{}",
            w[0]
        );
        assert!(
            w[1].starts_with("\"right.delay=20\": time \"20\" has no unit"),
            "{}",
            w[1]
        );
        let mut p = [LinkParams::default(); 2];
        apply_set(&a[..2], &mut p).unwrap();
        assert_eq!(p[0].rate_bytes_ps, 12);
        assert_eq!(p[1].delay_ns, 20_000);
    }

    #[test]
    fn errors_name_the_argument_and_change_nothing() {
        let mut p = [LinkParams::default(); 2];
        for bad in [
            "left.rate",
            "middle.rate=1mbit",
            "left.colour=red",
            "left.rate=fast",
            "ethtool -C middle rx-usecs 1",
            // The configuration file's limits hold here too.
            "left.delay=4294s",
            "left.rate=200gbit",
            "left.tx_ring=0",
            "left.rx_usecs=2000000",
            // Coalescing that would never interrupt.
            "left.rx_frames=0",
        ] {
            let e = apply_set(&args(&["right.delay=5ms", bad]), &mut p)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("expected") || e.contains("unknown"),
                "{bad}: {e}"
            );
            assert_eq!(p, [LinkParams::default(); 2], "{bad}");
        }
        assert!(apply_set(&[], &mut p).is_err());
    }

    fn shapes() -> [LinkShape; 2] {
        [LinkShape::default(), LinkShape::default()]
    }

    #[test]
    fn shape_keys_merge_into_the_running_shape() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.trace");
        std::fs::write(&trace, "1\n2\n").unwrap();
        let (mut p, mut s) = ([LinkParams::default(); 2], shapes());
        s[0].impairments.seed = 9;
        let sent = inline_files(
            &args(&[&format!("right.trace={}", trace.display())]),
            dir.path(),
        )
        .unwrap();
        let plan = parse_set(&args(&[
            "left.netem=delay 5ms loss 2%",
            "left.jitter=1ms",
            "left.distribution=normal",
            "left.duplicate=0.5%",
            "right.netem=delay 5ms",
            "right.loss=gemodel 1% 10%",
            "right.reorder=25% gap 3",
            "right.corrupt=0.1%",
            &sent[0],
            "right.framing=pppoe",
            "right.seed=42",
            "left.rate=10mbit",
        ]))
        .unwrap();
        plan.apply(&mut p, &mut s).unwrap();
        let l = &s[0].impairments;
        assert_eq!(l.seed, 9, "netem keeps the running seed");
        assert_eq!((l.delay_ns, l.jitter_ns), (5_000_000, 1_000_000));
        assert_eq!(l.distribution, crate::link::impair::Distribution::Normal);
        assert_eq!(
            l.loss,
            Loss::Random {
                percent: 2.0,
                correlation: 0.0
            }
        );
        assert_eq!(l.duplicate, 0.5);
        assert_eq!(p[0].rate_bytes_ps, 1_250_000);
        let r = &s[1].impairments;
        assert!(matches!(r.loss, Loss::GilbertElliott { p, r, .. } if p == 1.0 && r == 10.0));
        assert_eq!(r.reorder.as_ref().map(|r| r.gap), Some(3));
        assert_eq!(r.corrupt, 0.1);
        assert_eq!(r.seed, 42);
        assert!(
            matches!(&s[1].schedule, Some(Schedule::Trace { opportunities_ms }) if opportunities_ms.len() == 2)
        );
        assert_eq!(s[1].framing.overhead, 8);
        let report = ShapeReport::of(&s[1]);
        assert!(report.netem.contains("seed 42"), "{report:?}");
        assert!(report.schedule.contains("2 opportunities"), "{report:?}");
        // Clearing.
        let plan = parse_set(&args(&[
            "right.trace=",
            "right.loss=none",
            "right.reorder=none",
        ]))
        .unwrap();
        plan.apply(&mut p, &mut s).unwrap();
        assert_eq!(s[1].schedule, None);
        assert_eq!(s[1].impairments.loss, Loss::None);
        assert_eq!(s[1].impairments.reorder, None);
    }

    #[test]
    fn bad_shape_values_change_nothing_and_name_the_argument() {
        let (mut p, mut s) = ([LinkParams::default(); 2], shapes());
        for bad in [
            "left.loss=lots",
            "left.jitter=soon",
            "left.distribution=weird",
            "left.seed=-1",
            "left.framing=ethernet-ish",
            "left.trace=/no/such/trace",
            "left.trace_text=12\nsoon\n",
            "left.netem=limit 100",
            "middle.loss=1%",
        ] {
            let e = parse_set(&args(&["right.delay=5ms", bad]))
                .unwrap_err()
                .to_string();
            let named = bad.split_once("_text=").map_or(bad, |(key, _)| key);
            assert!(e.contains(named), "{bad}: {e}");
        }
        // Parsed fine, refused when applied: a bad link field anywhere
        // leaves the shapes untouched too.
        let plan = parse_set(&args(&["left.loss=5%", "left.rate=fast"])).unwrap();
        assert!(plan.apply(&mut p, &mut s).is_err());
        assert_eq!((p, s.clone()), ([LinkParams::default(); 2], shapes()));
        assert!(parse_set(&[]).is_err());
        // Reordering needs a delay to jump over: checked on the merged shape.
        let e = parse_set(&args(&["left.reorder=25%"]))
            .unwrap()
            .apply(&mut p, &mut s)
            .unwrap_err()
            .to_string();
        assert!(e.contains("left.reorder=25%") && e.contains("delay"), "{e}");
        assert_eq!(s, shapes());
    }

    #[test]
    fn the_client_sends_file_contents_and_the_daemon_opens_no_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.trace"), "1\n2\n").unwrap();
        std::fs::write(dir.path().join("bad.trace"), "1\nsoon\n").unwrap();
        let out = inline_files(
            &args(&["left.trace=t.trace", "left.trace=", "left.rate=1mbit"]),
            dir.path(),
        )
        .unwrap();
        assert_eq!(
            out,
            args(&["left.trace_text=1\n2\n", "left.trace=", "left.rate=1mbit"])
        );
        let e = inline_files(&args(&["left.trace=bad.trace"]), dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("left.trace=bad.trace") && e.contains("bad.trace:"),
            "{e}"
        );
        let e = inline_files(&args(&["right.schedule=none.sched"]), dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot read the schedule file"), "{e}");
        // A path reaching the daemon is refused, whether or not it exists.
        let path = dir.path().join("t.trace").display().to_string();
        let e = parse_set(&args(&[&format!("left.trace={path}")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("opens no file"), "{e}");
    }

    #[test]
    fn the_outcome_changes_only_what_the_plan_names_all_or_nothing() {
        let params = [LinkParams::default(); 2];
        let shapes = [LinkShape::default(), LinkShape::default()];
        let out = parse_set(&args(&["left.loss=1%", "right.rate=1mbit"]))
            .unwrap()
            .outcome(params, shapes.clone())
            .unwrap();
        let eff = &out.effective;
        assert!(eff.shape.left.netem.contains("loss 1%"), "{eff:?}");
        assert_eq!(eff.right.rate_bytes_ps, 125_000);
        let [left, right] = &out.changes;
        assert_eq!(left.params, None, "left's parameters are unchanged");
        assert_eq!(
            left.shape.as_ref().map(|s| s.impairments.loss.clone()),
            Some(Loss::Random {
                percent: 1.0,
                correlation: 0.0
            })
        );
        assert_eq!(right.params.map(|p| p.rate_bytes_ps), Some(125_000));
        assert_eq!(right.shape, None, "right's shape is unchanged");
        let e = parse_set(&args(&["left.loss=2%", "left.tx_ring=none"]))
            .unwrap()
            .outcome(params, shapes.clone())
            .unwrap_err()
            .to_string();
        assert!(e.contains("tx_ring"), "{e}");
        let same = parse_set(&args(&["left.rate=100mbit"]))
            .unwrap()
            .outcome(params, shapes)
            .unwrap();
        assert_eq!(
            same.changes,
            [Change::default(), Change::default()],
            "a value equal to the running one changes nothing"
        );
    }

    /// The TUI's typed field edit has the outcome of the `set` argument
    /// that says the same, refusals and their messages included.
    #[test]
    fn a_typed_field_edit_is_the_set_argument_that_says_the_same() {
        let params = [LinkParams::default(); 2];
        let shapes = [LinkShape::default(), LinkShape::default()];
        for (dir, field, value) in [
            (Dir::LeftToRight, LinkField::Rate, 1_250_000),
            (Dir::RightToLeft, LinkField::Delay, 20_000_123),
            (Dir::LeftToRight, LinkField::Bql, 0),
            (Dir::RightToLeft, LinkField::TxQueues, 4),
            (Dir::LeftToRight, LinkField::TxStopThreshold, 19),
            // Refused: a stop threshold above the ring.
            (Dir::RightToLeft, LinkField::TxStopThreshold, 4_000),
        ] {
            let typed = SetPlan::field(dir, field, value)
                .outcome(params, shapes.clone())
                .map_err(|e| e.to_string());
            let written = parse_set(&[set_arg(dir, field, value)])
                .unwrap()
                .outcome(params, shapes.clone())
                .map_err(|e| e.to_string());
            assert_eq!(typed, written, "{field:?} {value}");
        }
        let e = SetPlan::field(Dir::RightToLeft, LinkField::TxStopThreshold, 4_000)
            .outcome(params, shapes)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("dev right: tx_stop_threshold 4000"), "{e}");
    }
}
