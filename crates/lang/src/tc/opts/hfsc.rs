//! HFSC's tc syntax (iproute2 tc/q_hfsc.c, v6.18.0): the qdisc takes
//! `default CLASSID` (a hexadecimal minor, `hfsc_parse_opt`); a class takes
//! `rt SC`, `ls SC`, `sc SC` (rt and ls alike) and `ul SC`
//! (`hfsc_parse_class_opt`), each curve written `[ [ m1 BPS ] d SEC ] m2
//! BPS` or `[ [ umax BYTE ] dmax SEC ] rate BPS` (`hfsc_get_sc1`,
//! `hfsc_get_sc2`, the latter turned into m1/d/m2 with tc's own arithmetic),
//! with tc's messages. The printers are `hfsc_print_opt` (`default X`),
//! `hfsc_print_class_opt` (`sc`, or `rt` and `ls`, then `ul`, each `m1 R d
//! T m2 R`) and `hfsc_print_xstats` (period, work, rtwork, level). iproute2
//! writes all three with plain `fprintf` (and the rates with `PRINT_FP`),
//! which under `-j` puts bare text into the JSON; bloatbox's `-j` keeps its
//! JSON valid and leaves HFSC's options and xstats objects empty there.

use crate::dir::Dir;
use crate::qdisc::hfsc::curve::ServiceCurve;
use crate::qdisc::hfsc::{HfscClassOptions, HfscOptions};
use crate::qdisc::{ClassOptions, QdiscOptions, Xstats};
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::opts::tbf::matches;
use crate::tc::syntax::{
    example_rate, replace_root, Bench, JsonObj, Printed, Sample, Syntax, XstatsPrinter,
};
use crate::tc::tokens::{incomplete, Tokens};
use crate::tc::TcError;
use crate::units::{parse_rate, parse_size, parse_time, print_rate, sprint_time};
use std::fmt::Write as _;

/// HFSC's entry in `crate::qdisc::kinds::BUILTIN`.
pub static SYNTAX: Syntax = Syntax {
    kind: "hfsc",
    qdisc: parse_qdisc,
    class: Some(parse_class),
    print,
    print_class,
    example: Some(example),
    table: Some(&TABLE),
    trailing_space: true,
    xstats: Some(&XSTATS),
    benches: &[Bench::new(
        "hfsc_1000_classes",
        &[
            "tc qdisc add dev D root handle 1: hfsc",
            "tc class add dev D parent 1: classid 1:ffff hfsc ls m2 10gbit",
        ],
    )
    .with_classes(
        "tc class add dev D parent 1:ffff classid 1:MINOR hfsc ls m2 10mbit",
    )],
    // No shaping bound is claimed: an upper limit's curve runs on while
    // its class stays backlogged, so a dequeuer that stops calling for a
    // while gets the time it missed as a burst (the kernel's own
    // `cl_myfadj` correction is compiled out, `#if 0` in `update_vf`).
    samples: &[
        Sample::new(
            "hfsc",
            &[
                "tc qdisc add dev D root handle 1: hfsc default 20",
                "tc class add dev D parent 1: classid 1:1 hfsc ls m2 8mbit ul m2 8mbit",
                "tc class add dev D parent 1:1 classid 1:10 hfsc ls m2 2mbit",
                "tc class add dev D parent 1:1 classid 1:20 hfsc ls m2 6mbit",
                "tc qdisc add dev D parent 1:20 pfifo limit 20",
            ],
        ),
        Sample::new(
            "hfsc_rt",
            &[
                "tc qdisc add dev D root handle 1: hfsc default 2",
                "tc class add dev D parent 1: classid 1:1 hfsc rt umax 1500b dmax 5ms rate 1mbit ls m2 1mbit",
                "tc class add dev D parent 1: classid 1:2 hfsc sc m1 0 d 10ms m2 4mbit ul m2 8mbit",
                "tc qdisc add dev D parent 1:2 bfifo limit 30000",
                "tc filter add dev D parent 1: protocol all prio 1 u32 match ip protocol 17 0xff flowid 1:1",
            ],
        ),
    ],
};

/// The keys of an `hfsc` table in the configuration: the qdisc's
/// `default` minor, and a class's curves (`[[link.qdisc.class]]`), each
/// the words of its service curve as tc takes them (`ls = "m2 10mbit"`,
/// `rt = "umax 1500b dmax 5ms rate 1mbit"`).
static TABLE: KeyTable = KeyTable {
    qdisc: &[Key::opt("default", Value::Minor)],
    class: Some(&[
        Key::opt("rt", Value::Words),
        Key::opt("ls", Value::Words),
        Key::opt("sc", Value::Words),
        Key::opt("ul", Value::Words),
    ]),
};

/// The qdisc menu's HFSC: one class whose link-share and upper-limit
/// curves are the link rate (1gbit when unlimited), taking all traffic,
/// with an fq_codel leaf. A curve's slope is a u32 of bytes/s
/// (`struct tc_service_curve`), so a faster link is shaped to its most,
/// 34359Mbit.
fn example(dir: Dir, rate_bytes_ps: u64) -> Vec<String> {
    let dev = dir.dev();
    let rate = print_rate(example_rate(rate_bytes_ps).min(u32::MAX.into()));
    vec![
        format!("{} handle 1: hfsc default 10", replace_root(dir)),
        format!("tc class add dev {dev} parent 1: classid 1:10 hfsc ls m2 {rate} ul m2 {rate}"),
        format!("tc qdisc add dev {dev} parent 1:10 handle 10: fq_codel"),
    ]
}

const QDISC_USAGE: &str =
    "Usage: ... hfsc [ default CLASSID ]\n\n default: default class for unclassified packets";

const CLASS_USAGE: &str = "Usage: ... hfsc [ [ rt SC ] [ ls SC ] | [ sc SC ] ] [ ul SC ]

SC := [ [ m1 BPS ] d SEC ] m2 BPS

 m1 : slope of first segment
 d  : x-coordinate of intersection
 m2 : slope of second segment

Alternative format:

SC := [ [ umax BYTE ] dmax SEC ] rate BPS

 umax : maximum unit of work
 dmax : maximum delay
 rate : rate

Remarks:
 - at least one of 'rt', 'ls' or 'sc' must be specified
 - 'ul' can only be specified with 'ls' or 'sc'
";

/// `explain1`.
fn illegal(what: &str) -> String {
    format!("HFSC: Illegal \"{what}\"")
}

/// `hfsc_parse_opt`: `default CLASSID`, read as `get_u16(..., 16)`.
fn parse_qdisc(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    let mut o = HfscOptions::default();
    while let Some(word) = t.next() {
        if matches(word, "default") {
            let v = t.value(|| incomplete("default"))?;
            if o.defcls != 0 {
                return Err(TcError::new("HFSC: Double \"default\""));
            }
            o.defcls = get_u16_hex(v).ok_or_else(|| TcError::new(illegal("default")))?;
        } else if matches(word, "help") {
            return Err(TcError::new(QDISC_USAGE));
        } else {
            return Err(TcError::new(format!(
                "HFSC: What is \"{word}\" ?\n{QDISC_USAGE}"
            )));
        }
    }
    Ok(QdiscOptions::Hfsc(o))
}

/// `get_u16(..., 16)`: `strtoul` in base 16 (an optional `0x`), the whole
/// word, at most 0xffff.
fn get_u16_hex(word: &str) -> Option<u16> {
    let digits = word
        .strip_prefix("0x")
        .or_else(|| word.strip_prefix("0X"))
        .unwrap_or(word);
    if digits.is_empty() {
        return None;
    }
    u16::from_str_radix(digits, 16).ok()
}

/// `hfsc_parse_class_opt`.
fn parse_class(t: &mut Tokens) -> Result<ClassOptions, TcError> {
    let mut o = HfscClassOptions::default();
    while let Some(word) = t.next() {
        let (name, slot) = if matches(word, "rt") {
            ("rt", 0)
        } else if matches(word, "ls") {
            ("ls", 1)
        } else if matches(word, "sc") {
            ("sc", 2)
        } else if matches(word, "ul") {
            ("ul", 3)
        } else if matches(word, "help") {
            return Err(TcError::new(CLASS_USAGE));
        } else {
            return Err(TcError::new(format!(
                "HFSC: What is \"{word}\" ?\n{CLASS_USAGE}"
            )));
        };
        if t.is_empty() {
            return Err(incomplete(name));
        }
        let sc = get_sc(t).map_err(|e| match e {
            ScError::Fatal(e) => e,
            ScError::Said(lines) => TcError::new(format!("{lines}{}", illegal(name))),
        })?;
        match slot {
            0 => o.rsc = Some(sc),
            1 => o.fsc = Some(sc),
            2 => (o.rsc, o.fsc) = (Some(sc), Some(sc)),
            _ => o.usc = Some(sc),
        }
    }
    if o.rsc.is_none() && o.fsc.is_none() && o.usc.is_none() {
        return Err(TcError::new(format!(
            "HFSC: no parameters given\n{CLASS_USAGE}"
        )));
    }
    if o.usc.is_some() && o.fsc.is_none() {
        return Err(TcError::new(format!(
            "HFSC: Upper-limit Service Curve without Link-Share Service Curve\n{CLASS_USAGE}"
        )));
    }
    Ok(ClassOptions::Hfsc(o))
}

/// How reading a curve failed: a `NEXT_ARG` at the end of the line (tc
/// exits there), or the lines tc printed before its caller's `Illegal`.
enum ScError {
    Fatal(TcError),
    Said(String),
}

/// The words of one curve form: a copy of the position, advanced only
/// when the form is read whole (as `hfsc_get_sc1`/`sc2` work on copies of
/// argc/argv).
struct Cursor<'a> {
    words: &'a [&'a str],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn word(&self) -> &'a str {
        self.words.get(self.at).copied().unwrap_or("")
    }
    /// `NEXT_ARG()`.
    fn next_arg(&mut self, key: &str) -> Result<&'a str, ScError> {
        self.at += 1;
        self.words
            .get(self.at)
            .copied()
            .ok_or_else(|| ScError::Fatal(incomplete(key)))
    }
}

/// `get_rate` (lib/utils_math.c) for a 32-bit rate; a `%` rate needs the
/// device's speed, which bloatbox's devices do not report.
fn get_rate32(word: &str) -> Option<u32> {
    if word.contains('%') {
        return None;
    }
    u32::try_from(parse_rate(word).ok()?).ok()
}

/// `hfsc_get_sc`: the m1/d/m2 form, else the umax/dmax/rate form; then
/// two zero slopes are refused.
fn get_sc(t: &mut Tokens) -> Result<ServiceCurve, ScError> {
    let words = t.clone().rest();
    let mut said = String::new();
    let sc = match get_sc1(words, &mut said)? {
        Some(r) => Some(r),
        None => get_sc2(words, &mut said)?,
    };
    let Some((sc, used)) = sc else {
        return Err(ScError::Said(said));
    };
    if sc.is_zero() {
        return Err(ScError::Said(format!(
            "{said}HFSC: Service Curve has two zero slopes\n"
        )));
    }
    // The words after the curve are the class parser's again.
    for _ in 0..used {
        t.next();
    }
    Ok(sc)
}

/// `hfsc_get_sc1`: `[ [ m1 BPS ] d SEC ] m2 BPS`; the words used.
fn get_sc1(words: &[&str], said: &mut String) -> Result<Option<(ServiceCurve, usize)>, ScError> {
    let mut c = Cursor { words, at: 0 };
    let mut sc = ServiceCurve::default();
    if matches(c.word(), "m1") {
        let v = c.next_arg("m1")?;
        let Some(m1) = get_rate32(v) else {
            let _ = writeln!(said, "{}", illegal("m1"));
            return Ok(None);
        };
        sc.m1 = m1;
        c.next_arg("m1")?;
    }
    if matches(c.word(), "d") {
        let v = c.next_arg("d")?;
        let Some(d) = parse_time(v).ok().and_then(|d| u32::try_from(d).ok()) else {
            let _ = writeln!(said, "{}", illegal("d"));
            return Ok(None);
        };
        sc.d = d;
        c.next_arg("d")?;
    }
    if !matches(c.word(), "m2") {
        return Ok(None);
    }
    let v = c.next_arg("m2")?;
    let Some(m2) = get_rate32(v) else {
        let _ = writeln!(said, "{}", illegal("m2"));
        return Ok(None);
    };
    sc.m2 = m2;
    Ok(Some((sc, c.at + 1)))
}

/// `hfsc_get_sc2`: `[ [ umax BYTE ] dmax SEC ] rate BPS`, as m1/d/m2.
fn get_sc2(words: &[&str], said: &mut String) -> Result<Option<(ServiceCurve, usize)>, ScError> {
    let mut c = Cursor { words, at: 0 };
    let (mut umax, mut dmax) = (0u32, 0u32);
    if matches(c.word(), "umax") {
        let v = c.next_arg("umax")?;
        let Some(u) = parse_size(v).ok().and_then(|u| u32::try_from(u).ok()) else {
            let _ = writeln!(said, "{}", illegal("umax"));
            return Ok(None);
        };
        umax = u;
        c.next_arg("umax")?;
    }
    if matches(c.word(), "dmax") {
        let v = c.next_arg("dmax")?;
        let Some(d) = parse_time(v).ok().and_then(|d| u32::try_from(d).ok()) else {
            let _ = writeln!(said, "{}", illegal("dmax"));
            return Ok(None);
        };
        dmax = d;
        c.next_arg("dmax")?;
    }
    if !matches(c.word(), "rate") {
        return Ok(None);
    }
    let v = c.next_arg("rate")?;
    let Some(rate) = get_rate32(v) else {
        let _ = writeln!(said, "{}", illegal("rate"));
        return Ok(None);
    };
    if umax != 0 && dmax == 0 {
        let _ = writeln!(said, "HFSC: umax given but dmax is zero.");
        return Ok(None);
    }
    Ok(Some((umax_dmax_rate(umax, dmax, rate)?, c.at + 1)))
}

/// tc's conversion of `umax dmax rate` (`hfsc_get_sc2`): concave with
/// slope umax/dmax up to dmax where that is above the rate, else convex
/// with a first segment of slope 0 up to `dmax - umax / rate`, computed
/// in C's unsigned int arithmetic (wrapping as tc's does).
fn umax_dmax_rate(umax: u32, dmax: u32, rate: u32) -> Result<ServiceCurve, ScError> {
    const TIME_UNITS_PER_SEC: u32 = 1_000_000;
    let m1 = (umax as f64 * TIME_UNITS_PER_SEC as f64 / dmax as f64).ceil();
    if dmax != 0 && m1 > rate as f64 {
        return Ok(ServiceCurve {
            m1: m1 as u32,
            d: dmax,
            m2: rate,
        });
    }
    if rate == 0 {
        // tc divides by the zero rate here.
        return Err(ScError::Said(
            "HFSC: Service Curve has two zero slopes\n".into(),
        ));
    }
    let d = dmax.wrapping_sub(umax.wrapping_mul(TIME_UNITS_PER_SEC) / rate);
    Ok(ServiceCurve { m1: 0, d, m2: rate })
}

/// `hfsc_print_opt`: `default X` (hexadecimal) when set.
fn print(o: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::Hfsc(o) = o else {
        return None;
    };
    let text = if o.defcls != 0 {
        format!("default {:x}", o.defcls)
    } else {
        String::new()
    };
    Some(Printed::same(text, JsonObj::new()))
}

/// `hfsc_print_sc`: `NAME m1 R d T m2 R`.
fn sc_words(name: &str, sc: &ServiceCurve) -> String {
    format!(
        "{name} m1 {} d {} m2 {}",
        print_rate(sc.m1 as u64),
        sprint_time(sc.d as u64),
        print_rate(sc.m2 as u64)
    )
}

/// `hfsc_print_class_opt`: `sc` when rt and ls are the same curve, else
/// each of them; then `ul`.
fn print_class(o: &ClassOptions) -> Option<Printed> {
    let ClassOptions::Hfsc(o) = o else {
        return None;
    };
    let mut words = Vec::new();
    match (o.rsc, o.fsc) {
        (Some(r), Some(f)) if r == f => words.push(sc_words("sc", &r)),
        (r, f) => {
            words.extend(r.map(|r| sc_words("rt", &r)));
            words.extend(f.map(|f| sc_words("ls", &f)));
        }
    }
    words.extend(o.usc.map(|u| sc_words("ul", &u)));
    Some(Printed::same(words.join(" "), JsonObj::new()))
}

/// `hfsc_print_xstats`: ` period P [work W bytes ][rtwork R bytes ]level
/// L `, a line of its own.
static XSTATS: XstatsPrinter = XstatsPrinter {
    text: |out, x| {
        let Xstats::HfscClass(s) = x else { return None };
        let _ = write!(out, " period {} ", s.period);
        if s.work != 0 {
            let _ = write!(out, "work {} bytes ", s.work);
        }
        if s.rtwork != 0 {
            let _ = write!(out, "rtwork {} bytes ", s.rtwork);
        }
        let _ = writeln!(out, "level {} ", s.level);
        Some(())
    },
    json: |x| matches!(x, Xstats::HfscClass(_)).then(JsonObj::new),
};

#[cfg(test)]
#[path = "hfsc_tests.rs"]
mod tests;
