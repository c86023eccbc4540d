//! The `codel` qdisc's tc syntax (iproute2 tc/q_codel.c): `codel_parse_opt`
//! reads `limit`, `target`, `interval`, `ce_threshold` and `[no]ecn` into
//! the `TCA_CODEL_*` attributes (`crate::qdisc::codel::CodelOptions`),
//! `codel_print_opt` prints what `codel_dump` sends back. Also the value
//! readers the CoDel-family and SFQ parsers share (iproute2's
//! `get_unsigned`, `get_time` and the missing-argument message).

use crate::qdisc::codel::CodelOptions;
use crate::qdisc::codel::CodelXstats;
use crate::qdisc::dump::Xstats;
use crate::qdisc::QdiscOptions;
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::{replace_root, Bench, Printed, Sample, Syntax};
use crate::tc::syntax::{JsonObj, XstatsPrinter};
use crate::tc::tokens::{c_number, Tokens};
use crate::tc::TcError;
use crate::units::sprint_time_signed;
use crate::units::{parse_time, sprint_time};
use serde_json::json;
use std::fmt::Write;

const USAGE: &str = "Usage: ... codel [ limit PACKETS ] [ target TIME ]\n\t\t [ interval TIME ] [ ecn | noecn ]\n\t\t [ ce_threshold TIME ]";

/// tc's message when an option's value is missing.
pub fn missing(name: &str) -> TcError {
    TcError::new(format!(
        "Error: argument \"{name}\" is required (give it a value, e.g. \"{name} N\")"
    ))
}

/// The value after keyword `name`, or tc's message when there is none.
pub fn value<'a>(name: &str, t: &mut Tokens<'a>) -> Result<&'a str, TcError> {
    t.value(|| missing(name))
}

/// The unsigned number after keyword `name` (`get_unsigned`: decimal, 0x
/// hex or 0 octal).
pub fn unsigned(name: &str, t: &mut Tokens) -> Result<u32, TcError> {
    let v = value(name, t)?;
    let parsed = c_number(v).and_then(|n| u32::try_from(n).ok());
    parsed.ok_or_else(|| {
        TcError::new(format!(
            "Illegal \"{name}\" (\"{v}\": expected an unsigned 32-bit number)"
        ))
    })
}

/// The time after keyword `name` in µs (`get_time`: a bare number is µs;
/// `parse_time` refuses more than 2^32 - 1 µs).
pub fn time(name: &str, t: &mut Tokens) -> Result<u32, TcError> {
    let v = value(name, t)?;
    parse_time(v)
        .map(|us| u32::try_from(us).unwrap_or(u32::MAX))
        .map_err(|e| TcError::new(format!("Illegal \"{name}\" ({e})")))
}

/// tc sends none of these attributes when the value given is zero.
pub(super) fn nonzero(v: u32) -> Option<u32> {
    Some(v).filter(|v| *v != 0)
}

/// A CoDel time attribute as tc prints it (`sprint_time` of the µs the
/// kernel dumps).
pub fn print_time(us: u32) -> String {
    sprint_time(us.into())
}

/// `codel_parse_opt`.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    let mut o = CodelOptions::default();
    while let Some(word) = t.next() {
        match word {
            "limit" => o.limit = Some(unsigned("limit", t)?),
            "target" => o.target = Some(time("target", t)?),
            "interval" => o.interval = Some(time("interval", t)?),
            "ce_threshold" => o.ce_threshold = Some(time("ce_threshold", t)?),
            "ecn" => o.ecn = Some(true),
            "noecn" => o.ecn = Some(false),
            other => return Err(TcError::new(format!("What is \"{other}\"?\n{USAGE}"))),
        }
    }
    Ok(options(o))
}

/// What `codel_parse_opt` sends for the values given (the words', or the
/// configuration's structured form's): no limit, target or interval
/// attribute for a zero.
pub fn options(o: CodelOptions) -> QdiscOptions {
    QdiscOptions::Codel(CodelOptions {
        limit: o.limit.and_then(nonzero),
        target: o.target.and_then(nonzero),
        interval: o.interval.and_then(nonzero),
        ..o
    })
}

/// `codel_print_opt`: the same text with and without `-d`.
fn print(options: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::Codel(o) = options else {
        return None;
    };
    let mut text = String::new();
    let mut json = crate::tc::syntax::JsonObj::new();
    if let Some(limit) = o.limit {
        text.push_str(&format!("limit {limit}p"));
        json.insert("limit", json!(limit));
    }
    if let Some(target) = o.target {
        text.push_str(&format!(" target {}", print_time(target)));
        json.insert("target", json!(target));
    }
    if let Some(ce) = o.ce_threshold {
        text.push_str(&format!(" ce_threshold {}", print_time(ce)));
        json.insert("ce_threshold", json!(ce));
    }
    if let Some(interval) = o.interval {
        text.push_str(&format!(" interval {}", print_time(interval)));
        json.insert("interval", json!(interval));
    }
    if o.ecn == Some(true) {
        text.push_str(" ecn");
        json.insert("ecn", json!(true));
    }
    Some(Printed::same(text, json))
}

/// codel's tc syntax (its classes take no options).
pub static SYNTAX: Syntax = Syntax {
    kind: "codel",
    qdisc: parse,
    class: None,
    print,
    print_class: |_| None,
    example: Some(|dir, _| vec![format!("{} codel", replace_root(dir))]),
    table: Some(&TABLE),
    trailing_space: true,
    xstats: Some(&XSTATS),
    benches: &[Bench::new(
        "codel",
        &["tc qdisc add dev D root codel limit 100000"],
    )],
    samples: &[
        Sample::new(
            "codel",
            &["tc qdisc add dev D root codel limit 20 target 1ms interval 5ms"],
        ),
        Sample::new("codel ecn", &["tc qdisc add dev D root codel limit 50 ecn"]),
    ],
};

/// The keys of a `codel` table in the configuration.
static TABLE: KeyTable = KeyTable::qdisc(&[
    Key::opt("limit", Value::Count),
    Key::opt("target", Value::Time),
    Key::opt("interval", Value::Time),
    Key::opt(
        "ecn",
        Value::Flag {
            on: "ecn",
            off: Some("noecn"),
        },
    ),
    Key::opt("ce_threshold", Value::Time),
]);

/// `codel_print_xstats`: `tc_codel_xstats`.
static XSTATS: XstatsPrinter = XstatsPrinter {
    text: |out, x| match x {
        Xstats::Codel(s) => {
            codel_text(out, s);
            Some(())
        }
        _ => None,
    },
    json: |x| {
        let Xstats::Codel(s) = x else { return None };
        let mut xj = JsonObj::new();
        xj.insert("count", json!(s.count));
        xj.insert("lastcount", json!(s.lastcount));
        xj.insert("ldelay", json!(s.ldelay_us));
        if s.dropping {
            xj.insert("dropping", json!(true));
        }
        xj.insert("drop_next", json!(s.drop_next_us));
        xj.insert("maxpacket", json!(s.maxpacket));
        xj.insert("ecn_mark", json!(s.ecn_mark));
        xj.insert("drop_overlimit", json!(s.drop_overlimit));
        if s.ce_mark != 0 {
            xj.insert("ce_mark", json!(s.ce_mark));
        }
        Some(xj)
    },
};

fn codel_text(out: &mut String, s: &CodelXstats) {
    let _ = write!(
        out,
        "  count {} lastcount {} ldelay {}",
        s.count,
        s.lastcount,
        sprint_time(s.ldelay_us)
    );
    if s.dropping {
        out.push_str(" dropping");
    }
    let _ = write!(
        out,
        " drop_next {}\n  maxpacket {} ecn_mark {} drop_overlimit {}",
        sprint_time_signed(s.drop_next_us),
        s.maxpacket,
        s.ecn_mark,
        s.drop_overlimit
    );
    if s.ce_mark != 0 {
        let _ = write!(out, " ce_mark {}", s.ce_mark);
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::codel::algorithm::us_to_codel;
    use crate::qdisc::codel::CodelQdisc;
    use crate::qdisc::kinds::BUILTIN;
    use crate::qdisc::{Qdisc, QdiscCtx};
    use crate::tc::syntax::parse_qdisc;
    use crate::time::Instant;

    fn options(words: &[&str]) -> Result<QdiscOptions, TcError> {
        parse_qdisc(BUILTIN, "codel", words)
    }

    /// A codel qdisc from the words after the kind, as tc builds one.
    fn codel(words: &[&str]) -> Result<CodelQdisc, TcError> {
        Ok(CodelQdisc::build(QdiscCtx::default(), &options(words)?)?)
    }

    /// What `tc qdisc show` prints after the head.
    fn shown(q: &CodelQdisc) -> Printed {
        crate::tc::show::qdisc_options(&q.dump(Instant::ZERO))
    }

    #[test]
    fn defaults_print() {
        let q = codel(&[]).unwrap();
        let p = shown(&q);
        assert_eq!(p.plain, "limit 1000p target 5ms interval 100ms");
        assert_eq!(p.detail, p.plain);
        assert_eq!(
            p.json.to_value(),
            json!({"limit": 1000, "target": 4999, "interval": 99999})
        );
    }

    #[test]
    fn options_parse_and_print() {
        let q = codel(&[
            "limit",
            "50",
            "target",
            "2ms",
            "interval",
            "30ms",
            "ecn",
            "ce_threshold",
            "1ms",
        ])
        .unwrap();
        assert_eq!(
            shown(&q).plain,
            // 1000 µs → 976 units → dumped 999 µs, as the kernel does.
            "limit 50p target 2ms ce_threshold 999us interval 30ms ecn"
        );
        assert_eq!(shown(&q).json["ce_threshold"], json!(999));
        assert_eq!(shown(&q).json["ecn"], json!(true));
        // A bare time is µs (tc/tc_util.c `get_time`).
        let o = options(&["target", "5"]).unwrap();
        let QdiscOptions::Codel(CodelOptions { target, .. }) = o else {
            panic!("{o:?}")
        };
        assert_eq!(us_to_codel(target.unwrap().into()), 4);
        let q = codel(&["target", "5"]).unwrap();
        assert!(shown(&q).plain.contains("target 4us"));
        let e = codel(&["target", "5 parsecs"]).err().unwrap();
        assert!(e.0.starts_with("Illegal \"target\""), "{e}");
        let e = codel(&["bogus"]).err().unwrap();
        assert!(e.0.starts_with("What is \"bogus\"?"));
        assert!(codel(&["limit"]).is_err());
        assert!(codel(&["limit", "-1"]).is_err());
        assert!(options(&["limit", "x"]).is_err());
    }

    /// CoDel times in tc's units (moved from `units`' time tests, which
    /// cover the plain tc times around it).
    #[test]
    fn a_bare_codel_time_is_us_and_prints_as_the_kernel_dumps_it() {
        // A bare time is µs (tc/tc_util.c `get_time`): `target 5` is 5 µs,
        // which the kernel keeps as (5 × 1000) >> 10 = 4 CoDel units
        // (net/sched/sch_fq_codel.c `fq_codel_change`, CODEL_SHIFT in
        // include/net/codel.h) and dumps as 4 × 1024 / 1000 = 4 µs
        // (include/net/codel.h `codel_time_to_us`, from `fq_codel_dump`), so
        // tc prints `target 4us`, not the `5us` one would expect.
        let words = ["5"];
        let target = time("target", &mut Tokens::new(&words)).unwrap();
        assert_eq!(us_to_codel(target.into()), 4);
        let dumped = crate::qdisc::codel::algorithm::codel_to_us(us_to_codel(target.into())) as u32;
        assert_eq!(print_time(dumped), "4us");
        let words = ["5ms"];
        let target = time("target", &mut Tokens::new(&words)).unwrap();
        let dumped = crate::qdisc::codel::algorithm::codel_to_us(us_to_codel(target.into())) as u32;
        assert_eq!(print_time(dumped), "5ms");
    }
}
