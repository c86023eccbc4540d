//! One tc command line → `TcCommand`, following iproute2's argument loops
//! (`tc.c`, `tc_qdisc.c`, `tc_class.c`, `tc_filter.c`): the object, verb and
//! global flags may be abbreviated where tc uses `matches()`, handles and
//! class ids are hexadecimal (`get_qdisc_handle`, `get_tc_classid`), the first
//! word that is not a keyword is the kind and everything after it belongs to
//! the kind's own parser. Errors read like tc's and name the bad token.

use super::tokens::{incomplete, Tokens};
use super::TcError;
use crate::dir::Dir;
use crate::handle::{Handle, TC_H_ROOT};
use crate::qdisc::estimator::EstimatorSpec;
pub use crate::qdisc::request::{Object, Verb};

/// Global flags before the object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// `-s`: counters and xstats.
    pub stats: bool,
    /// `-d`: detailed options.
    pub details: bool,
    /// `-j`: JSON.
    pub json: bool,
    /// `-p`: pretty JSON.
    pub pretty: bool,
}

/// A parsed tc command line: the request's frame (object, verb, device,
/// parent, handle, kind) and the words after the kind, which the kind's own
/// parser turns into typed options when the command runs on a device
/// (`crate::tc::run`), against that device's table of kinds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcCommand {
    /// The global flags before the object (`-s`, `-d`, `-j`, `-p`).
    pub flags: Flags,
    /// `qdisc`, `class` or `filter`.
    pub object: Object,
    /// `add`, `change`, `replace`, `link`, `del` or `show`.
    pub verb: Verb,
    /// `dev left|right`; `None` only for `show` (then every device is listed).
    pub dev: Option<Dir>,
    /// `root` (`TC_H_ROOT`) or `parent M:m`.
    pub parent: Option<Handle>,
    /// qdisc `handle M:`, class `classid M:m` (also the `handle`/`classid`
    /// filters of `show`).
    pub handle: Option<Handle>,
    /// The qdisc kind (qdisc and class commands).
    pub kind: Option<String>,
    /// qdisc/class: the words after the kind. filter: every word but
    /// `dev X`.
    pub args: Vec<String>,
    /// `tc qdisc show invisible`: also list default child qdiscs.
    pub invisible: bool,
    /// `estimator INTERVAL TIME_CONSTANT` before the kind (qdisc and class
    /// add/change/replace): the `TCA_RATE` tc sends.
    pub est: Option<EstimatorSpec>,
}

impl TcCommand {
    /// The option words as `&str`s, as the parsers take them.
    pub fn arg_strs(&self) -> Vec<&str> {
        self.args.iter().map(String::as_str).collect()
    }
}

/// `dev NAME`: `left` (egress of left→right) or `right` (its mirror);
/// anything else is tc's "Cannot find device".
pub fn parse_dev(name: &str) -> Result<Dir, TcError> {
    Dir::from_dev(name).ok_or_else(|| {
        TcError::new(format!(
            "Cannot find device \"{name}\"\n(bloatbox has two devices: \"left\" = egress of \
             the left→right direction, \"right\" = egress of right→left)"
        ))
        .exit(TcError::PARSE)
    })
}

/// iproute2's `matches(prefix, word)`: a non-empty prefix of `word`.
fn matches(prefix: &str, word: &str) -> bool {
    !prefix.is_empty() && word.starts_with(prefix)
}

pub(crate) fn duparg(key: &str, arg: &str) -> TcError {
    TcError::new(format!(
        "Error: duplicate \"{key}\": \"{arg}\" is the second value."
    ))
    .exit(TcError::ARGS)
}

fn invarg(msg: &str, arg: &str) -> TcError {
    TcError::new(format!("Error: argument \"{arg}\" is wrong: {msg}")).exit(TcError::ARGS)
}

fn unsupported(what: &str, why: &str) -> TcError {
    TcError::new(format!(
        "Error: \"{what}\" is not supported by bloatbox: {why}"
    ))
}

/// `strtoul(s, &end, 16)` without sign or blanks: the value (saturated) and
/// the unparsed rest, or `None` when no digit was read.
fn strtoul_hex(s: &str) -> Option<(u64, &str)> {
    let body = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .filter(|b| b.starts_with(|c: char| c.is_ascii_hexdigit()))
        .unwrap_or(s);
    let digits = body.len()
        - body
            .trim_start_matches(|c: char| c.is_ascii_hexdigit())
            .len();
    if digits == 0 {
        return None;
    }
    let value = body[..digits].chars().fold(0u64, |acc, c| {
        acc.saturating_mul(16)
            .saturating_add(c.to_digit(16).unwrap_or(0) as u64)
    });
    Some((value, &body[digits..]))
}

/// iproute2 `get_qdisc_handle`: `M`, `M:` (hex) or `none`; `None` if invalid.
pub fn get_qdisc_handle(s: &str) -> Option<Handle> {
    if s == "none" {
        return Some(0);
    }
    let (major, rest) = strtoul_hex(s)?;
    if major >= 1 << 16 || !(rest.is_empty() || rest.starts_with(':')) {
        return None;
    }
    Some((major as u32) << 16)
}

/// iproute2 `get_tc_classid`: `root`, `none`, `M:m`, `M:`, `:m` (hex), or a
/// bare hex number taken as the whole 32-bit id; `None` if invalid.
pub fn get_tc_classid(s: &str) -> Option<Handle> {
    match s {
        "root" => return Some(TC_H_ROOT),
        "none" => return Some(0),
        _ => {}
    }
    let (major, rest) = match strtoul_hex(s) {
        Some(v) => v,
        None if s.starts_with(':') => (0, s),
        None => return None,
    };
    if let Some(minor_str) = rest.strip_prefix(':') {
        if major >= 1 << 16 {
            return None;
        }
        let minor = match strtoul_hex(minor_str) {
            None if minor_str.is_empty() => 0,
            Some((m, "")) if m < 1 << 16 => m,
            _ => return None,
        };
        Some(((major as u32) << 16) | minor as u32)
    } else if rest.is_empty() {
        u32::try_from(major).ok()
    } else {
        None
    }
}

/// What the argument loops collect.
#[derive(Default)]
struct Parsed {
    dev: Option<Dir>,
    parent: Option<Handle>,
    handle: Option<Handle>,
    kind: Option<String>,
    args: Vec<String>,
    invisible: bool,
    est: Option<EstimatorSpec>,
}

impl Parsed {
    fn set_dev(&mut self, v: &str) -> Result<(), TcError> {
        if self.dev.is_some() {
            return Err(duparg("dev", v));
        }
        self.dev = Some(parse_dev(v)?);
        Ok(())
    }
    fn set_root(&mut self) -> Result<(), TcError> {
        if self.parent.is_some() {
            return Err(TcError::new("Error: \"root\" is duplicate parent ID").exit(TcError::ARGS));
        }
        self.parent = Some(TC_H_ROOT);
        Ok(())
    }
    fn set_parent(&mut self, v: &str) -> Result<(), TcError> {
        if self.parent.is_some() {
            return Err(duparg("parent", v));
        }
        self.parent = Some(get_tc_classid(v).ok_or_else(|| invarg("invalid parent ID", v))?);
        Ok(())
    }
    /// Sets the object's own id from `key`'s value `v` (a qdisc's `handle`
    /// or a class's `classid`, read by `get`) once; `invalid` is iproute2's
    /// message for a value that does not parse.
    fn set_handle(
        &mut self,
        key: &str,
        v: &str,
        get: fn(&str) -> Option<Handle>,
        invalid: &str,
    ) -> Result<(), TcError> {
        if self.handle.is_some() {
            return Err(duparg(key, v));
        }
        self.handle = Some(get(v).ok_or_else(|| invarg(invalid, v))?);
        Ok(())
    }
}

impl TcCommand {
    /// Parses one command line (whitespace-separated tokens).
    pub fn parse(line: &str) -> Result<TcCommand, TcError> {
        let toks: Vec<&str> = line.split_whitespace().collect();
        TcCommand::from_tokens(&toks)
    }

    /// Parses tokens, with or without the leading `tc`.
    pub fn from_tokens(toks: &[&str]) -> Result<TcCommand, TcError> {
        let toks = match toks.first() {
            Some(&"tc") => &toks[1..],
            _ => toks,
        };
        let mut t = Tokens::new(toks);
        let flags = parse_flags(&mut t)?;
        let object = parse_object(t.next())?;
        let verb = match t.next() {
            None => Verb::Show,
            Some(v) => parse_verb(v, object)?,
        };
        let p = match (object, verb) {
            (Object::Qdisc, Verb::Show) => parse_qdisc_show(&mut t)?,
            (Object::Class, Verb::Show) => parse_class_show(&mut t)?,
            (Object::Filter, Verb::Show) => parse_filter(&mut t, true)?,
            (Object::Qdisc, _) => parse_qdisc_modify(&mut t)?,
            (Object::Class, _) => parse_class_modify(&mut t)?,
            (Object::Filter, _) => parse_filter(&mut t, false)?,
        };
        if verb != Verb::Show && p.dev.is_none() {
            // tc sends it with no device; the kernel answers ENODEV.
            return Err(TcError::new(format!(
                "RTNETLINK answers: No such device\n(\"dev\" is required: tc {} {} dev left|right ...)",
                object_name(object),
                verb_name(verb)
            )));
        }
        Ok(TcCommand {
            flags,
            object,
            verb,
            dev: p.dev,
            parent: p.parent,
            handle: p.handle,
            kind: p.kind,
            args: p.args,
            invisible: p.invisible,
            est: p.est,
        })
    }
}

fn object_name(o: Object) -> &'static str {
    match o {
        Object::Qdisc => "qdisc",
        Object::Class => "class",
        Object::Filter => "filter",
    }
}

fn verb_name(v: Verb) -> &'static str {
    match v {
        Verb::Add => "add",
        Verb::Change => "change",
        Verb::Replace => "replace",
        Verb::Link => "link",
        Verb::Delete => "del",
        Verb::Show => "show",
    }
}

fn parse_flags(t: &mut Tokens<'_>) -> Result<Flags, TcError> {
    let mut flags = Flags::default();
    while let Some(tok) = t.peek() {
        if !tok.starts_with('-') {
            break;
        }
        t.next();
        let opt = tok
            .strip_prefix('-')
            .filter(|o| o.starts_with('-'))
            .unwrap_or(tok);
        if matches(opt, "-stats") || matches(opt, "-statistics") {
            flags.stats = true;
        } else if matches(opt, "-details") {
            flags.details = true;
        } else if matches(opt, "-pretty") {
            flags.pretty = true;
        } else if matches(opt, "-json") {
            flags.json = true;
        } else {
            return Err(TcError::new(format!(
                "Option \"{tok}\" is unknown, try \"tc -help\".\n(bloatbox supports -s, -d, -j, -p)"
            ))
            .exit(TcError::ARGS));
        }
    }
    Ok(flags)
}

fn parse_object(tok: Option<&str>) -> Result<Object, TcError> {
    let Some(tok) = tok else {
        return Err(TcError::new(
            "Usage: tc [ -s ] [ -d ] [ -j [ -p ] ] { qdisc | class | filter } { add | change | \
             replace | del | show } dev { left | right } ...",
        ));
    };
    if matches(tok, "qdisc") {
        Ok(Object::Qdisc)
    } else if matches(tok, "class") {
        Ok(Object::Class)
    } else if matches(tok, "filter") {
        Ok(Object::Filter)
    } else if ["chain", "actions", "monitor", "exec"]
        .iter()
        .any(|o| matches(tok, o))
    {
        Err(unsupported(
            tok,
            "only qdisc, class and filter objects exist",
        ))
    } else {
        Err(TcError::new(format!(
            "Object \"{tok}\" is unknown, try \"tc help\".\n(bloatbox objects: qdisc, class, filter)"
        ))
        .exit(TcError::ARGS))
    }
}

fn parse_verb(tok: &str, object: Object) -> Result<Verb, TcError> {
    let verb = if matches(tok, "add") {
        Verb::Add
    } else if matches(tok, "change") {
        Verb::Change
    } else if matches(tok, "replace") {
        Verb::Replace
    } else if object == Object::Qdisc && matches(tok, "link") {
        Verb::Link
    } else if matches(tok, "delete") {
        Verb::Delete
    } else if matches(tok, "show") || matches(tok, "list") || matches(tok, "lst") {
        Verb::Show
    } else {
        return Err(TcError::new(format!(
            "Command \"{tok}\" is unknown, try \"tc {} help\".\n(verbs: add, change, replace, \
             {}del, show)",
            object_name(object),
            if object == Object::Qdisc {
                "link, "
            } else {
                ""
            }
        ))
        .exit(TcError::ARGS));
    };
    Ok(verb)
}

/// Words tc treats as keywords of its own that bloatbox does not emulate.
fn reject_unsupported_keyword(tok: &str) -> Result<(), TcError> {
    if tok == "ingress" || tok == "clsact" {
        return Err(unsupported(
            tok,
            "bloatbox emulates egress qdiscs only (use root or parent M:m)",
        ));
    }
    if matches(tok, "stab") {
        return Err(unsupported(
            tok,
            "size tables are not emulated; use the link's overhead setting instead",
        ));
    }
    if matches(tok, "ingress_block") || matches(tok, "egress_block") {
        return Err(unsupported(tok, "shared filter blocks are not emulated"));
    }
    if matches(tok, "help") {
        return Err(TcError::new(
            "Usage: tc qdisc [ add | del | replace | change | link | show ] dev { left | right }\n       \
             [ handle QHANDLE ] [ root | parent CLASSID ] [ QDISC_KIND [ OPTIONS ] ]",
        ));
    }
    Ok(())
}

/// `tc_qdisc_modify`'s loop.
fn parse_qdisc_modify(t: &mut Tokens<'_>) -> Result<Parsed, TcError> {
    let mut p = Parsed::default();
    while let Some(tok) = t.next() {
        match tok {
            "dev" => p.set_dev(t.value(|| incomplete("dev"))?)?,
            "handle" => p.set_handle(
                "handle",
                t.value(|| incomplete("handle"))?,
                get_qdisc_handle,
                "invalid qdisc ID",
            )?,
            "root" => p.set_root()?,
            "parent" => p.set_parent(t.value(|| incomplete("parent"))?)?,
            _ if matches(tok, "estimator") => super::estimator::parse(t, &mut p.est)?,
            _ => {
                reject_unsupported_keyword(tok)?;
                p.kind = Some(tok.to_string());
                p.args = t.rest().iter().map(|w| w.to_string()).collect();
            }
        }
    }
    Ok(p)
}

/// `tc_class_modify`'s loop.
fn parse_class_modify(t: &mut Tokens<'_>) -> Result<Parsed, TcError> {
    let mut p = Parsed::default();
    while let Some(tok) = t.next() {
        match tok {
            "dev" => p.set_dev(t.value(|| incomplete("dev"))?)?,
            "classid" => p.set_handle(
                "classid",
                t.value(|| incomplete("classid"))?,
                get_tc_classid,
                "invalid class ID",
            )?,
            "handle" => return Err(TcError::new("Error: try \"classid\" instead of \"handle\"")),
            "root" => p.set_root()?,
            "parent" => p.set_parent(t.value(|| incomplete("parent"))?)?,
            _ if matches(tok, "estimator") => super::estimator::parse(t, &mut p.est)?,
            _ => {
                reject_unsupported_keyword(tok)?;
                p.kind = Some(tok.to_string());
                p.args = t.rest().iter().map(|w| w.to_string()).collect();
            }
        }
    }
    Ok(p)
}

/// `tc_qdisc_list`'s loop.
fn parse_qdisc_show(t: &mut Tokens<'_>) -> Result<Parsed, TcError> {
    let mut p = Parsed::default();
    while let Some(tok) = t.next() {
        match tok {
            "dev" => p.set_dev(t.value(|| incomplete("dev"))?)?,
            "root" => p.set_root()?,
            "parent" => p.set_parent(t.value(|| incomplete("parent"))?)?,
            "handle" => {
                let v = t.value(|| incomplete("handle"))?;
                p.handle = Some(get_qdisc_handle(v).ok_or_else(|| invarg("invalid handle ID", v))?);
            }
            "invisible" => p.invisible = true,
            "ingress" | "clsact" => reject_unsupported_keyword(tok)?,
            _ if matches(tok, "help") => reject_unsupported_keyword(tok)?,
            _ => {
                return Err(TcError::new(format!(
                    "What is \"{tok}\"? Try \"tc qdisc help\".\n(show takes dev, root, parent, \
                     handle, invisible)"
                )))
            }
        }
    }
    Ok(p)
}

/// `tc_class_list`'s loop.
fn parse_class_show(t: &mut Tokens<'_>) -> Result<Parsed, TcError> {
    let mut p = Parsed::default();
    while let Some(tok) = t.next() {
        match tok {
            "dev" => p.set_dev(t.value(|| incomplete("dev"))?)?,
            "classid" => {
                let v = t.value(|| incomplete("classid"))?;
                p.handle = Some(get_tc_classid(v).ok_or_else(|| invarg("invalid class ID", v))?);
            }
            "root" => p.set_root()?,
            "parent" => p.set_parent(t.value(|| incomplete("parent"))?)?,
            _ => {
                return Err(TcError::new(format!(
                    "What is \"{tok}\"? Try \"tc class help\".\n(show takes dev, root, parent, classid)"
                )))
            }
        }
    }
    Ok(p)
}

/// `tc filter ...`: pulls out `dev` and the parent, keeps every other token
/// for `crate::tc::filter::parse`.
fn parse_filter(t: &mut Tokens<'_>, show: bool) -> Result<Parsed, TcError> {
    let mut p = Parsed::default();
    let mut in_options = false;
    while let Some(tok) = t.next() {
        if in_options {
            p.args.push(tok.to_string());
            continue;
        }
        match tok {
            "dev" => {
                p.set_dev(t.value(|| incomplete("dev"))?)?;
                continue;
            }
            "root" => p.set_root()?,
            "parent" => {
                let v = t.value(|| incomplete("parent"))?;
                p.set_parent(v)?;
                p.args.push(tok.to_string());
                p.args.push(v.to_string());
                continue;
            }
            "handle" | "pref" | "priority" | "prio" | "protocol" | "chain" | "block" => {
                let v = t.value(|| incomplete(tok))?;
                p.args.push(tok.to_string());
                p.args.push(v.to_string());
                continue;
            }
            "ingress" | "egress" => reject_unsupported_keyword("ingress")?,
            _ if show => {
                return Err(TcError::new(format!(
                    "What is \"{tok}\"? Try \"tc filter help\"."
                )))
            }
            _ => {
                reject_unsupported_keyword(tok)?;
                p.kind = Some(tok.to_string());
                in_options = true;
            }
        }
        p.args.push(tok.to_string());
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::tc_h_make;

    fn parse(s: &str) -> TcCommand {
        TcCommand::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }
    fn err(s: &str) -> String {
        TcCommand::parse(s).expect_err(s).0
    }
    /// What tc answers for line `s` once the kind's parser has read its
    /// words (`crate::tc::request` against the built-in kinds).
    fn request_err(s: &str) -> String {
        crate::tc::request(crate::qdisc::kinds::BUILTIN, &parse(s))
            .expect_err(s)
            .0
    }

    #[test]
    fn qdisc_add_with_handle_and_options() {
        let c = parse("tc qdisc add dev left root handle 1: bfifo limit 10k");
        assert_eq!(c.object, Object::Qdisc);
        assert_eq!(c.verb, Verb::Add);
        assert_eq!(c.dev, Some(Dir::LeftToRight));
        assert_eq!(c.parent, Some(TC_H_ROOT));
        assert_eq!(c.handle, Some(tc_h_make(1, 0)));
        assert_eq!(c.kind.as_deref(), Some("bfifo"));
        assert_eq!(c.arg_strs(), vec!["limit", "10k"]);
    }

    #[test]
    fn leading_tc_is_optional_and_flags_parse() {
        let c = parse("-s -d -j -p qdisc show dev right");
        assert_eq!(
            c.flags,
            Flags {
                stats: true,
                details: true,
                json: true,
                pretty: true
            }
        );
        assert_eq!(c.verb, Verb::Show);
        assert_eq!(c.dev, Some(Dir::RightToLeft));
        let c = parse("tc --stats qdisc");
        assert!(c.flags.stats);
        assert_eq!(c.dev, None);
        assert!(err("tc -x qdisc show").starts_with("Option \"-x\" is unknown"));
    }

    #[test]
    fn abbreviations_like_iproute2() {
        let c = parse("tc q a dev left root pfifo");
        assert_eq!((c.object, c.verb), (Object::Qdisc, Verb::Add));
        assert_eq!(parse("tc qd del dev left root").verb, Verb::Delete);
        assert_eq!(parse("tc class ls dev left").verb, Verb::Show);
        assert_eq!(parse("tc qdisc r dev left root pfifo").verb, Verb::Replace);
        assert_eq!(parse("tc qdisc link dev left root pfifo").verb, Verb::Link);
        assert_eq!(parse("tc f show dev left").object, Object::Filter);
    }

    #[test]
    fn handles_are_hex() {
        assert_eq!(get_qdisc_handle("10:"), Some(0x0010_0000));
        assert_eq!(get_qdisc_handle("ffff"), Some(0xffff_0000));
        assert_eq!(get_qdisc_handle("none"), Some(0));
        assert_eq!(get_qdisc_handle("10000:"), None);
        assert_eq!(get_qdisc_handle("foo"), None);
        assert_eq!(get_qdisc_handle("1x"), None);
        assert_eq!(get_tc_classid("1:10"), Some(0x0001_0010));
        assert_eq!(get_tc_classid("1:"), Some(0x0001_0000));
        assert_eq!(get_tc_classid(":3"), Some(3));
        assert_eq!(get_tc_classid("root"), Some(TC_H_ROOT));
        assert_eq!(get_tc_classid("0x10"), Some(0x10));
        assert_eq!(get_tc_classid("1:10000"), None);
        assert_eq!(get_tc_classid("1:z"), None);
        assert_eq!(get_tc_classid("g"), None);
    }

    #[test]
    fn errors_name_the_token() {
        assert_eq!(
            err("tc qdisc add dev left root handle foo pfifo"),
            "Error: argument \"foo\" is wrong: invalid qdisc ID"
        );
        assert_eq!(
            err("tc qdisc add dev left parent 1:zz pfifo"),
            "Error: argument \"1:zz\" is wrong: invalid parent ID"
        );
        assert!(request_err("tc qdisc add dev left root bogus x")
            .starts_with("Unknown qdisc \"bogus\", hence option \"x\" is unparsable"));
        assert!(err("tc qdisc add dev eth0 root pfifo").starts_with("Cannot find device \"eth0\""));
        assert!(err("tc qdisc add dev eth0 root pfifo").contains("left"));
        assert_eq!(
            err("tc qdisc add dev left dev right root pfifo"),
            "Error: duplicate \"dev\": \"right\" is the second value."
        );
        assert_eq!(
            err("tc qdisc add dev left root root pfifo"),
            "Error: \"root\" is duplicate parent ID"
        );
        assert!(
            err("tc qdisc add dev left root handle").starts_with("Command line is not complete")
        );
        assert!(err("tc qdisc frob dev left").starts_with("Command \"frob\" is unknown"));
        assert!(err("tc foo").starts_with("Object \"foo\" is unknown"));
        assert!(err("tc qdisc add root pfifo").contains("\"dev\" is required"));
        assert_eq!(
            parse("tc qdisc add dev left root estimator 1sec 8sec pfifo").est,
            Some(EstimatorSpec {
                interval: 0,
                ewma_log: 3
            })
        );
        assert!(err("tc qdisc add dev left root est 1sec 1sec pfifo")
            .starts_with("Error: estimator parameters are out of range."));
        assert!(err("tc qdisc add dev left ingress").contains("egress qdiscs only"));
        assert!(err("tc chain show").contains("not supported"));
    }

    #[test]
    fn unknown_kind_without_options_is_left_to_the_tree() {
        let c = parse("tc qdisc add dev left root bogus");
        assert_eq!(c.kind.as_deref(), Some("bogus"));
    }

    #[test]
    fn class_commands() {
        let c = parse("tc class add dev left parent 1:1 classid 1:10 htb rate 30mbit ceil 100mbit");
        assert_eq!(c.object, Object::Class);
        assert_eq!(c.parent, Some(0x0001_0001));
        assert_eq!(c.handle, Some(0x0001_0010));
        assert_eq!(c.arg_strs(), vec!["rate", "30mbit", "ceil", "100mbit"]);
        assert_eq!(
            err("tc class add dev left parent 1: handle 1:10 htb"),
            "Error: try \"classid\" instead of \"handle\""
        );
        assert!(
            request_err("tc class add dev left parent 1: classid 1:1 sfq")
                .starts_with("Error: Qdisc \"sfq\" is classless.")
        );
        assert_eq!(
            err("tc class add dev left parent 1: classid x htb"),
            "Error: argument \"x\" is wrong: invalid class ID"
        );
        let c = parse("tc class del dev left classid 1:10");
        assert_eq!(
            (c.verb, c.handle, c.kind),
            (Verb::Delete, Some(0x0001_0010), None)
        );
    }

    #[test]
    fn show_filters() {
        let c = parse("tc qdisc show dev left invisible");
        assert!(c.invisible);
        let c = parse("tc -s class show dev left classid 1:10");
        assert_eq!(c.handle, Some(0x0001_0010));
        assert!(err("tc qdisc show dev left foo").starts_with("What is \"foo\"?"));
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_lines_never_panic(line in "\\PC{0,80}") {
            let _ = TcCommand::parse(&line);
        }

        #[test]
        fn arbitrary_handles_never_panic(s in "[0-9a-fA-Fx:+ -]{0,12}") {
            let _ = (get_qdisc_handle(&s), get_tc_classid(&s));
        }
    }

    #[test]
    fn filter_keeps_tokens_for_the_filter_parser() {
        let c = parse(
            "tc filter add dev left parent 1: protocol ip prio 1 u32 match ip dport 22 0xffff flowid 1:10",
        );
        assert_eq!(c.object, Object::Filter);
        assert_eq!(c.dev, Some(Dir::LeftToRight));
        assert_eq!(c.parent, Some(0x0001_0000));
        assert_eq!(c.kind.as_deref(), Some("u32"));
        assert_eq!(
            c.arg_strs(),
            vec![
                "parent", "1:", "protocol", "ip", "prio", "1", "u32", "match", "ip", "dport", "22",
                "0xffff", "flowid", "1:10"
            ]
        );
    }
}
