//! The tc command front end: what a user types after `tc` (with or without the
//! leading `tc`, global flags `-s -d -j -p`) becomes a `TcCommand`
//! (`command`); `talk` turns it into the typed request a device receives
//! (the kind's own parser, found in the device's table of kinds `kinds`,
//! reads the words after the kind, over the one tokenizer `tokens`) and
//! sends that to the device (`device::Device`: a tree at hand, `run`, or a
//! direction of the running datapath), whose tree carries it out with the
//! kernel's rules (`crate::qdisc::tree::QdiscTree::apply`); a show asks the
//! device for its tree's dump or a qdisc's filters and prints them here:
//! `show` prints `tc [-s] [-d] [-j] qdisc|class show` exactly as iproute2
//! does, and `filter` parses `tc filter` commands and prints `tc filter
//! show`. The link's own option languages live here too: `netem`
//! (tc-netem(8) words into the link's typed impairments, and back) and
//! `framing` (stab-style words and presets into the link's typed framing).
//!
//! The emulated link has two devices: `left` is the egress of the left→right
//! direction, `right` its mirror. Errors read like tc's and name the bad token.

pub mod command;
pub mod device;
pub mod error;
pub mod estimator;
pub mod filter;
pub mod framing;
pub mod hint;
pub mod keys;
pub mod netem;
pub mod opts;
pub mod show;
pub mod syntax;
pub mod tokens;
pub mod xstats;

pub use crate::qdisc::kinds::new_qdisc;
pub use command::{parse_dev, Flags, Object, TcCommand, Verb};
pub use error::TcError;

use crate::packet::Drops;
use crate::qdisc::kinds::KindEntry;
use crate::qdisc::request::{Options, Request};
use crate::qdisc::tree::{DevSpec, QdiscTree};
use crate::qdisc::QdiscDump;
use crate::refusal::Refusal;
use crate::time::Instant;
use device::{Answer, At, Device};

/// The request `cmd` sends to a device whose kinds are `kinds`: the words
/// after the kind parsed by that kind's own parser (as iproute2 parses
/// them before anything reaches the kernel). A kind the table lacks is
/// tc's "Unknown qdisc" when options follow it; without options the
/// request goes on and the tree answers as the kernel does.
pub fn request(kinds: &[KindEntry], cmd: &TcCommand) -> Result<Request, TcError> {
    request_noting(kinds, cmd).map(|(request, _)| request)
}

/// `request`, with the lines tc's parser printed on standard error as it
/// accepted the words (RED's "set bandwidth to 10Mbit"), in order.
fn request_noting(kinds: &[KindEntry], cmd: &TcCommand) -> Result<(Request, Vec<String>), TcError> {
    let words = cmd.arg_strs();
    let mut notices = Vec::new();
    let options = match (cmd.object, cmd.kind.as_deref()) {
        (Object::Filter, _) => match cmd.verb {
            Verb::Add | Verb::Replace => {
                Options::Filter(filter::parse(&words).map_err(syntax::parser_exit)?)
            }
            Verb::Delete => {
                Options::FilterPrio(filter::parse_prio(&words).map_err(syntax::parser_exit)?)
            }
            // Nothing to send: the tree refuses change and link, show
            // lists the filters.
            _ => Options::None,
        },
        (_, None) => Options::None,
        (Object::Qdisc, Some(kind)) => {
            let (options, said) = syntax::parse_qdisc_noting(kinds, kind, &words)?;
            notices = said;
            Options::Qdisc(options)
        }
        (Object::Class, Some(kind)) => Options::Class(syntax::parse_class(kinds, kind, &words)?),
    };
    let request = Request {
        object: cmd.object,
        verb: cmd.verb,
        dev: cmd.dev,
        parent: cmd.parent,
        handle: cmd.handle,
        kind: cmd.kind.clone(),
        options,
        rate: cmd.est,
    };
    Ok((request, notices))
}

/// Carries out one tc command on `tree` at `now` and returns what tc would
/// print: `qdisc|class show` is printed here from the tree's dump, `filter
/// show` from the filters the tree lists, every other command is the
/// tree's (`QdiscTree::apply`: warnings, or nothing). Frames the command
/// frees go to `drops`.
pub fn run(
    tree: &mut QdiscTree,
    cmd: &TcCommand,
    now: Instant,
    drops: &mut Drops,
) -> Result<Option<String>, TcError> {
    let Ok(said) = talk(&mut At { tree, now, drops }, cmd);
    said
}

/// `run` on any device (`device`): the command is read and its answer
/// printed here, the device gets typed requests and answers typed values.
/// `Err` when the device could not be reached, with its own error.
pub fn talk<D: Device>(
    dev: &mut D,
    cmd: &TcCommand,
) -> Result<Result<Option<String>, TcError>, D::Unreached> {
    let spec = dev.spec()?;
    match exchange(dev, &spec, cmd) {
        Ok(said) => Ok(Ok(said)),
        Err(Failed::Tc(e)) => Ok(Err(worded(&spec, cmd, e))),
        Err(Failed::Unreached(u)) => Err(u),
    }
}

/// `tc qdisc|class show` naming no device, over `devs` in order, each
/// listed with `dev X`: what tc prints, or why a device could not be
/// reached.
pub fn show_devices<D: Device>(
    devs: &mut [D],
    cmd: &TcCommand,
) -> Result<Result<String, TcError>, D::Unreached> {
    let mut dumps = Vec::new();
    for dev in devs {
        let spec = dev.spec()?;
        match dev.dump(cmd.dev)? {
            Ok(root) => dumps.push((spec, root)),
            Err(e) => return Ok(Err(e.into())),
        }
    }
    Ok(print_dumps(cmd, &dumps))
}

/// Why a command got no answer: tc's error (the front end's or the
/// tree's), or a device that was not reached.
enum Failed<U> {
    Tc(TcError),
    Unreached(U),
}

impl<U> From<Refusal> for Failed<U> {
    fn from(e: Refusal) -> Self {
        Failed::Tc(TcError::from(e))
    }
}

impl<U> From<TcError> for Failed<U> {
    fn from(e: TcError) -> Self {
        Failed::Tc(e)
    }
}

/// The value a device answered, or its error as a `Failed`.
fn reached<T, U>(answer: Answer<T, U>) -> Result<T, Failed<U>> {
    answer.map_err(Failed::Unreached)?.map_err(Failed::from)
}

/// tc's error for `cmd` on the device `spec` as tc words it: after the
/// kernel's refusal of a filter change (`talking_to_the_kernel`), with
/// bloatbox's hint for a kind the device lacks or mq or multiq on a single
/// queue.
fn worded(spec: &DevSpec, cmd: &TcCommand, e: TcError) -> TcError {
    let e = talking_to_the_kernel(cmd, e);
    let known = |k: &str| crate::qdisc::kinds::lookup(spec.kinds, k).is_some();
    let kind = cmd.kind.as_deref();
    let hint = match kind {
        Some("mq" | "multiq") if spec.tx_queues == 1 => Some(hint::single_queue(spec.dev)),
        _ => kind
            .filter(|k| !known(k))
            .and_then(hint::missing_kind)
            .map(str::to_string),
    };
    match hint {
        Some(h) => TcError::new(format!("{}\n{h}", e.0.trim_end())),
        None => e,
    }
}

/// iproute2 6.1's tc_filter.c `tc_filter_modify` adds "We have an error
/// talking to the kernel" after the kernel's refusal of a filter change;
/// bloatbox's hints, if any, follow it.
fn talking_to_the_kernel(cmd: &TcCommand, e: TcError) -> TcError {
    if cmd.object != Object::Filter || cmd.verb == Verb::Show || e.code() != TcError::KERNEL {
        return e;
    }
    let (kernel, hints) = e.0.split_once('\n').unwrap_or((&e.0, ""));
    let mut text = format!("{kernel}\nWe have an error talking to the kernel");
    if !hints.trim().is_empty() {
        text.push('\n');
        text.push_str(hints);
    }
    TcError::new(text)
}

/// One command on the device `spec` describes: a change is sent as the
/// typed request its words make, a show asks for the tree's dump (or a
/// qdisc's filters) and prints it.
fn exchange<D: Device>(
    dev: &mut D,
    spec: &DevSpec,
    cmd: &TcCommand,
) -> Result<Option<String>, Failed<D::Unreached>> {
    if cmd.verb != Verb::Show {
        let (request, notices) = request_noting(spec.kinds, cmd)?;
        // tc printed its notices while it parsed, before the kernel
        // answered: they come first, on success and on a refusal alike.
        let noted: String = notices.iter().map(|n| format!("{n}\n")).collect();
        let said = match reached(dev.apply(request)) {
            Ok(said) => said,
            Err(Failed::Tc(e)) if !noted.is_empty() => {
                return Err(Failed::Tc(TcError(format!("{noted}{}", e.0), e.1)))
            }
            Err(e) => return Err(e),
        };
        // The kind with its words: a word's meaning can depend on the kind
        // (sfb's `target` counts frames).
        let words: Vec<&str> = cmd
            .kind
            .as_deref()
            .into_iter()
            .chain(cmd.args.iter().map(String::as_str))
            .collect();
        let hints = with_hints(&words, said).unwrap_or_default();
        let text = noted + &hints;
        return Ok((!text.is_empty()).then_some(text));
    }
    if cmd.object == Object::Filter {
        let listing = reached(dev.filters(request(spec.kinds, cmd)?))?;
        // tc/tc_filter.c print_filter: "parent" unless the show named it.
        let show_parent = cmd.parent != Some(listing.qdisc);
        if cmd.flags.json {
            let objs = filter::print_json(listing.qdisc, &listing.filters, show_parent);
            return Ok(Some(format!(
                "{}\n",
                show::to_json(&objs, cmd.flags.pretty)
            )));
        }
        return Ok(Some(filter::print(
            listing.qdisc,
            &listing.filters,
            show_parent,
        )));
    }
    let root = reached(dev.dump(cmd.dev))?;
    Ok(Some(print_dumps(cmd, &[(spec.clone(), root)])?))
}

/// `tc qdisc|class show` printed from the devices' dumps.
fn print_dumps(cmd: &TcCommand, dumps: &[(DevSpec, QdiscDump)]) -> Result<String, TcError> {
    let devs: Vec<show::DevDump> = dumps
        .iter()
        .map(|(spec, root)| show::DevDump {
            dev: spec.dev,
            root,
            tx_queues: spec.tx_queues,
        })
        .collect();
    show::render(cmd, &devs)
}

/// What tc prints after a change: a warning for each likely typo in
/// `words` (see `hint`), then the kernel's extack `warnings`, each as
/// iproute2's `nl_dump_ext_ack` prints one.
fn with_hints(words: &[&str], warnings: Vec<String>) -> Option<String> {
    let text: String = hint::words(words)
        .into_iter()
        .chain(warnings)
        .map(|w| format!("Warning: {w}\n"))
        .collect();
    (!text.is_empty()).then_some(text)
}

/// One step that builds a device's qdisc tree: a tc line as written (the
/// front end parses it), or a request already typed (the configuration's
/// structured form builds these) with the tc line that says the same, for
/// reports and errors.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// A tc line as written, parsed when the step runs.
    Line(String),
    /// A typed request and the tc line that says the same.
    Request {
        /// The request, built from the configuration's structured form.
        request: Request,
        /// The equivalent tc line, for reports and errors.
        line: String,
    },
}

impl Step {
    /// The tc line the step is, or says.
    pub fn line(&self) -> &str {
        match self {
            Step::Line(line) | Step::Request { line, .. } => line,
        }
    }
}

/// A device built by tc lines, run in order at time zero. The error names
/// the failing line.
pub fn build_tree<S: AsRef<str>>(dev: DevSpec, lines: &[S]) -> Result<QdiscTree, TcError> {
    build_tree_of(dev, &lines_as_steps(lines))
}

/// A device built by `steps` (e.g. `Config::tc_steps`), run in order at
/// time zero. The error names the failing step's line.
pub fn build_tree_of(dev: DevSpec, steps: &[Step]) -> Result<QdiscTree, TcError> {
    build_tree_reporting(dev, steps, &mut |_, _| {}).map_err(|(i, e)| match i {
        Some(i) => TcError::new(format!("{}\n{e}", steps[i].line())),
        None => e,
    })
}

fn lines_as_steps<S: AsRef<str>>(lines: &[S]) -> Vec<Step> {
    lines
        .iter()
        .map(|l| Step::Line(l.as_ref().to_string()))
        .collect()
}

/// `build_tree_of`, handing each warning tc would print (a TBF burst below
/// the MTU, an HTB quantum out of range) to `warn` with its line; the error
/// is the failing step's index (none when the device itself is refused)
/// and tc's message.
pub fn build_tree_reporting(
    dev: DevSpec,
    steps: &[Step],
    warn: &mut dyn FnMut(&str, &str),
) -> Result<QdiscTree, (Option<usize>, TcError)> {
    let mut tree = QdiscTree::new(dev).map_err(|e| (None, e.into()))?;
    let mut drops = Drops::new();
    for (i, step) in steps.iter().enumerate() {
        let said = match step {
            Step::Line(line) => TcCommand::parse(line)
                .and_then(|cmd| run(&mut tree, &cmd, Instant::ZERO, &mut drops)),
            Step::Request { request, line } => tree
                .apply(request, Instant::ZERO, &mut drops)
                .map(|said| with_hints(&line.split_whitespace().collect::<Vec<_>>(), said))
                .map_err(TcError::from),
        }
        .map_err(|e| (Some(i), e))?;
        if let Some(warning) = said {
            warn(step.line(), warning.trim_end());
        }
    }
    Ok(tree)
}

/// Checks one direction's steps as they will run (the config's `TcCheck`):
/// applied in order to a fresh tree of device `dev`, each must parse and
/// succeed given the steps before it (options, parents, classes, handles).
/// The error is the failing step's index (none: the device) and tc's
/// message; the warnings tc would print are logged.
pub fn check_steps(dev: DevSpec, steps: &[Step]) -> Result<(), (Option<usize>, String)> {
    build_tree_reporting(dev, steps, &mut |line, warning| {
        tracing::warn!("{line}: {warning}")
    })
    .map(drop)
    .map_err(|(i, e)| (i, e.0))
}

/// What `bloatbox tc` prints for one command and the exit code it gives,
/// as tc would.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Printed {
    /// Standard output: what a show lists.
    pub stdout: String,
    /// Standard error: the error, or the warnings of a command that
    /// succeeded.
    pub stderr: String,
    /// The exit code: 0, or tc's for the error (`exit_code`).
    pub code: u8,
}

/// Exit code of `bloatbox tc` when the daemon refuses a command (the
/// kernel's refusal in tc, `TcError::KERNEL`).
pub const FAILED: u8 = TcError::KERNEL;

/// The exit code tc gives when `line` fails: that of its own parsing where
/// it refuses the line (done here as tc does it, before it talks to the
/// kernel, against the built-in kinds: 1 or 255, see `TcError`), else
/// the kernel's refusal, 2.
pub fn exit_code(line: &str) -> u8 {
    match TcCommand::parse(line) {
        Err(e) => e.code(),
        Ok(cmd) => match request(crate::qdisc::kinds::BUILTIN, &cmd) {
            Err(e) => e.code(),
            Ok(_) => TcError::KERNEL,
        },
    }
}

impl Printed {
    /// What is printed for the command `line` whose answer is `result`
    /// (tc's output, or its error, from the daemon). A show's output is
    /// its listing; what a change answers are warnings, which tc prints
    /// on stderr (the kernel's extack warnings, iproute2's
    /// lib/libnetlink.c `nl_dump_ext_ack`), as bloatbox's hints are. An
    /// error, printed as it reads (`Display`), exits with `exit_code(line)`.
    pub fn of<E: std::fmt::Display>(line: &str, show: bool, result: Result<String, E>) -> Printed {
        match result {
            Ok(stdout) if show => Printed {
                stdout,
                ..Printed::default()
            },
            Ok(stderr) => Printed {
                stderr,
                ..Printed::default()
            },
            Err(e) => Printed {
                stderr: format!("{}\n", e.to_string().trim_end()),
                code: exit_code(line),
                ..Printed::default()
            },
        }
    }
}

#[cfg(test)]
mod battery_tests;
#[cfg(test)]
mod estimator_tests;
#[cfg(test)]
mod session_tests;
#[cfg(test)]
mod tree_tests;

#[cfg(test)]
mod tests {
    use super::{check_steps, lines_as_steps};
    use crate::dir::Dir;
    use crate::qdisc::tree::DevSpec;

    fn check(lines: &[&str]) -> Result<(), (Option<usize>, String)> {
        check_steps(
            DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN),
            &lines_as_steps(lines),
        )
    }

    #[test]
    fn check_steps_judges_each_line_given_those_before_it() {
        assert!(check(&["tc qdisc add dev left root fq_codel limit 100"]).is_ok());
        assert!(check(&[
            "tc qdisc add dev left root handle 1: qfq",
            "tc class add dev left parent 1: classid 1:1 qfq weight 3",
        ])
        .is_ok());
        let (i, e) = check(&["tc qdisc add dev left root fq_codel limit lots"]).unwrap_err();
        assert!(i == Some(0) && e.contains("lots"), "{e}");
        // A class under a qdisc that the lines never made: line 1 fails.
        let (i, e) = check(&[
            "tc qdisc add dev left root handle 1: htb",
            "tc class add dev left parent 2: classid 2:1 htb rate 1mbit",
        ])
        .unwrap_err();
        assert_eq!(i, Some(1), "{e}");
        // mq needs the device's TX queues, which this one does not have.
        assert!(check(&["tc qdisc add dev left root handle 1: mq"]).is_err());
        let (i, e) = check(&["tc qdisc add dev eth0 root pfifo"]).unwrap_err();
        assert!(i == Some(0) && e.contains("eth0"), "{e}");
        assert!(check(&["tc qdisc add dev left root cbq"])
            .unwrap_err()
            .1
            .contains("unknown"));
    }

    /// A likely typo is taken as tc takes it, and said.
    #[test]
    fn typos_are_applied_as_tc_reads_them_with_a_warning() {
        use super::{run, TcCommand};
        use crate::packet::Drops;
        use crate::qdisc::tree::QdiscTree;
        use crate::time::Instant;
        let mut tree =
            QdiscTree::new(DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN)).unwrap();
        let cmd = TcCommand::parse("tc qdisc add dev left root tbf rate 100 burst 10kb latency 50")
            .unwrap();
        let said = run(&mut tree, &cmd, Instant::ZERO, &mut Drops::new())
            .unwrap()
            .unwrap();
        let lines: Vec<&str> = said.lines().collect();
        assert!(
            lines[0].starts_with("Warning: rate \"100\" is 96bit"),
            "{said}"
        );
        assert!(
            lines[1].starts_with("Warning: time \"50\" has no unit"),
            "{said}"
        );
        let show = TcCommand::parse("tc qdisc show dev left").unwrap();
        let text = run(&mut tree, &show, Instant::ZERO, &mut Drops::new())
            .unwrap()
            .unwrap();
        assert!(text.contains("rate 96bit"), "{text}");
        let fine = TcCommand::parse("tc qdisc replace dev left root fq_codel target 5ms").unwrap();
        assert_eq!(
            run(&mut tree, &fine, Instant::ZERO, &mut Drops::new()),
            Ok(None)
        );
        // sfb's `target` is a frame count (iproute2 tc/q_sfb.c reads it
        // with get_u32 into `bin_size`): no time warning for it, while
        // codel's bare target still gets one.
        let sfb =
            TcCommand::parse("tc qdisc replace dev left root sfb limit 50 target 10").unwrap();
        assert_eq!(
            run(&mut tree, &sfb, Instant::ZERO, &mut Drops::new()),
            Ok(None)
        );
        let codel = TcCommand::parse("tc qdisc replace dev left root codel target 10").unwrap();
        let said = run(&mut tree, &codel, Instant::ZERO, &mut Drops::new())
            .unwrap()
            .unwrap();
        assert!(
            said.starts_with("Warning: time \"10\" has no unit"),
            "{said}"
        );
    }

    /// A device that cannot be reached says why in its own words: tc
    /// hands that back as it is, not as tc's error with hints.
    #[test]
    fn a_device_that_is_not_reached_is_not_worded_as_tc() {
        use super::device::{Answer, Device};
        use super::{talk, TcCommand};
        use crate::qdisc::request::Request;
        use crate::qdisc::tree::FilterListing;
        use crate::qdisc::QdiscDump;
        /// Knows its device, answers nothing else.
        struct Gone(DevSpec);
        impl Device for Gone {
            type Unreached = &'static str;
            fn spec(&mut self) -> Result<DevSpec, &'static str> {
                Ok(self.0.clone())
            }
            fn apply(&mut self, _: Request) -> Answer<Vec<String>, &'static str> {
                Err("gone")
            }
            fn dump(&mut self, _: Option<Dir>) -> Answer<QdiscDump, &'static str> {
                Err("gone")
            }
            fn filters(&mut self, _: Request) -> Answer<FilterListing, &'static str> {
                Err("gone")
            }
        }
        let mut dev = Gone(DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN));
        for line in [
            "tc qdisc add dev left root mq",
            "tc qdisc show dev left",
            "tc filter show dev left",
        ] {
            let cmd = TcCommand::parse(line).unwrap();
            assert_eq!(talk(&mut dev, &cmd), Err("gone"), "{line}");
        }
        // tc's own refusal needs no device answer, and is worded as tc's.
        let cmd = TcCommand::parse("tc qdisc add dev left root cbq limit 3").unwrap();
        let e = talk(&mut dev, &cmd).unwrap().unwrap_err();
        assert!(e.0.contains("bloatbox has no cbq"), "{}", e.0);
    }

    /// A kernel kind bloatbox lacks gets tc's error and where bloatbox has
    /// the same thing.
    #[test]
    fn kernel_kinds_bloatbox_lacks_say_what_to_use() {
        use super::{run, TcCommand};
        use crate::packet::Drops;
        use crate::qdisc::tree::QdiscTree;
        use crate::time::Instant;
        let mut tree =
            QdiscTree::new(DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN)).unwrap();
        let mut err = |line: &str| {
            let cmd = TcCommand::parse(line).unwrap();
            run(&mut tree, &cmd, Instant::ZERO, &mut Drops::new())
                .unwrap_err()
                .0
        };
        let e = err("tc qdisc add dev left root cbq");
        // iproute2 sends cbq without options; the kernel (bloatbox) lacks it.
        assert!(
            e.starts_with("Error: Specified qdisc kind is unknown.\n"),
            "{e}"
        );
        assert!(e.contains("bloatbox has no cbq"), "{e}");
        let e = err("tc qdisc add dev left root cbs");
        assert!(
            e.starts_with("Error: Specified qdisc kind is unknown."),
            "{e}"
        );
        assert!(e.contains("fq_codel"), "{e}");
        // A kind no kernel has gets tc's error and the list only.
        let e = err("tc qdisc add dev left root bogus");
        assert_eq!(e.lines().count(), 2, "{e}");
        assert!(
            e.lines().nth(1).unwrap().contains("bloatbox qdiscs:"),
            "{e}"
        );
    }
}
