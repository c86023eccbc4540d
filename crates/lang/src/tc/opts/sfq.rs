//! The `sfq` qdisc's tc syntax (iproute2 tc/q_sfq.c): `sfq_parse_opt` reads
//! the words after the kind into `struct tc_sfq_qopt_v1`
//! (`crate::qdisc::sfq::SfqOptions`; bloatbox has no per-flow RED and says
//! so for its words), `sfq_print_opt` prints what `sfq_dump` sends back
//! (`flows` only with `-d`).

use super::codel::{unsigned, value};
use crate::qdisc::dump::Xstats;
use crate::qdisc::sfq::SfqOptions;
use crate::qdisc::QdiscOptions;
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::{replace_root, Bench, Printed, Sample, Syntax};
use crate::tc::syntax::{JsonObj, XstatsPrinter};
use crate::tc::tokens::Tokens;
use crate::tc::TcError;
use crate::units::{parse_size, sprint_size};
use serde_json::json;
use std::fmt::Write;

const USAGE: &str = "Usage: ... sfq [ limit NUMBER ] [ perturb SECS ] [ quantum BYTES ]\n               [ divisor NUMBER ] [ flows NUMBER] [ depth NUMBER ]\n               [ headdrop ]";

/// `sfq_parse_opt`'s check of a limit given (the words', or the
/// configuration's structured form's).
pub fn limit(limit: u32) -> Result<u32, TcError> {
    if limit < 2 {
        return Err(TcError::new(format!(
            "Illegal \"limit\", must be > 1 (got {limit})"
        )));
    }
    Ok(limit)
}

/// `sfq_parse_opt`.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    let mut o = SfqOptions::default();
    while let Some(word) = t.next() {
        match word {
            "limit" => o.limit = limit(unsigned("limit", t)?)?,
            "quantum" => {
                let v = value("quantum", t)?;
                let bytes = parse_size(v)
                    .map_err(|e| TcError::new(format!("Illegal \"quantum\" ({e})")))?;
                // `get_size` fills an unsigned int.
                o.quantum = u32::try_from(bytes).map_err(|_| {
                    TcError::new(format!(
                        "Illegal \"quantum\" (\"{v}\": more than {} bytes)",
                        u32::MAX
                    ))
                })?;
            }
            "perturb" => {
                let v = value("perturb", t)?;
                o.perturb_period = v.parse::<i32>().map_err(|_| {
                    TcError::new(format!(
                        "Illegal \"perturb\" (\"{v}\": expected a whole number of seconds)"
                    ))
                })?;
            }
            "divisor" => o.divisor = unsigned("divisor", t)?,
            "flows" => o.flows = unsigned("flows", t)?,
            "depth" => o.depth = unsigned("depth", t)?,
            "headdrop" => o.headdrop = true,
            "redflowlimit" | "min" | "max" | "burst" | "avpkt" | "probability" | "ecn"
            | "harddrop" => {
                return Err(TcError::new(format!(
                    "\"{word}\": SFQ's per-flow RED is not supported by this emulator (remove the RED options)"
                )))
            }
            other => return Err(TcError::new(format!("What is \"{other}\"?\n{USAGE}"))),
        }
    }
    Ok(QdiscOptions::Sfq(o))
}

/// `sfq_print_opt`.
fn print(options: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::Sfq(o) = options else {
        return None;
    };
    let text = |detail: bool| {
        let mut text = format!(
            "limit {}p quantum {} depth {}",
            o.limit,
            sprint_size(o.quantum.into()),
            o.depth
        );
        if o.headdrop {
            text.push_str(" headdrop");
        }
        if detail {
            text.push_str(&format!(" flows {}", o.flows));
        }
        text.push_str(&format!(" divisor {}", o.divisor));
        if o.perturb_period != 0 {
            text.push_str(&format!(" perturb {}sec", o.perturb_period));
        }
        text
    };
    // The same fields under the same conditions as the text: depth when
    // not 0, headdrop when set, flows with -d only, perturb when not 0.
    let json = |detail: bool| {
        let mut json = crate::tc::syntax::JsonObj::new();
        json.insert("limit", json!(o.limit));
        json.insert("quantum", json!(o.quantum));
        if o.depth != 0 {
            json.insert("depth", json!(o.depth));
        }
        if o.headdrop {
            json.insert("headdrop", json!(true));
        }
        if detail {
            json.insert("flows", json!(o.flows));
        }
        json.insert("divisor", json!(o.divisor));
        if o.perturb_period != 0 {
            json.insert("perturb", json!(o.perturb_period));
        }
        json
    };
    Some(Printed {
        plain: text(false),
        detail: text(true),
        json: json(false),
        detail_json: Some(json(true)),
    })
}

/// sfq's tc syntax (its flow pseudo-classes take no options).
pub static SYNTAX: Syntax = Syntax {
    kind: "sfq",
    qdisc: parse,
    class: None,
    print,
    print_class: |_| None,
    example: Some(|dir, _| vec![format!("{} sfq perturb 10", replace_root(dir))]),
    table: Some(&TABLE),
    trailing_space: true,
    xstats: Some(&XSTATS),
    benches: &[Bench::new(
        "sfq",
        &["tc qdisc add dev D root sfq limit 65535 flows 65535 divisor 65536"],
    )],
    samples: &[
        Sample::new(
            "sfq",
            &["tc qdisc add dev D root sfq limit 20 depth 6 flows 8 divisor 16"],
        ),
        Sample::new(
            "sfq_headdrop",
            &["tc qdisc add dev D root sfq limit 10 depth 3 headdrop perturb 1"],
        ),
        Sample::new("sfq limit 32", &["tc qdisc add dev D root sfq limit 32"]),
    ],
};

/// The keys of an `sfq` table in the configuration.
static TABLE: KeyTable = KeyTable::qdisc(&[
    Key::opt("limit", Value::Count),
    // `perturb_period` is an int in `tc_sfq_qopt`.
    Key::opt(
        "perturb",
        Value::Bounded {
            max: i32::MAX as u64,
            unit: "seconds",
            example: "10",
        },
    ),
    Key::opt("quantum", Value::Size32 { plain: false }),
    Key::opt("divisor", Value::Count),
    Key::opt("flows", Value::Count),
    Key::opt("depth", Value::Count),
    Key::opt(
        "headdrop",
        Value::Flag {
            on: "headdrop",
            off: None,
        },
    ),
]);

/// `sfq_print_xstats`: a flow queue's `tc_sfq_xstats`.
static XSTATS: XstatsPrinter = XstatsPrinter {
    text: |out, x| match x {
        Xstats::SfqClass(s) => {
            let _ = writeln!(out, "  allot {}", s.allot);
            Some(())
        }
        _ => None,
    },
    json: |x| {
        let Xstats::SfqClass(s) = x else { return None };
        let mut xj = JsonObj::new();
        xj.insert("allot", json!(s.allot));
        Some(xj)
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::kinds::BUILTIN;
    use crate::qdisc::sfq::Sfq;
    use crate::qdisc::{Qdisc, QdiscCtx};
    use crate::tc::syntax::parse_qdisc;
    use crate::time::Instant;

    /// An sfq qdisc from the words after the kind, as tc builds one.
    fn sfq(words: &[&str]) -> Result<Sfq, TcError> {
        let options = parse_qdisc(BUILTIN, "sfq", words)?;
        Ok(Sfq::build(QdiscCtx::default(), &options)?)
    }

    /// What `tc qdisc show` prints after the head.
    fn shown(words: &[&str]) -> Printed {
        crate::tc::show::qdisc_options(&sfq(words).unwrap().dump(Instant::ZERO))
    }

    #[test]
    fn s6_printing() {
        let p = shown(&[]);
        assert_eq!(p.plain, "limit 127p quantum 1514b depth 127 divisor 1024");
        assert_eq!(
            p.detail,
            "limit 127p quantum 1514b depth 127 flows 128 divisor 1024"
        );
        // sfq_print_opt: depth when not 0, headdrop when set, flows with
        // -d only, perturb when not 0, in -j as in the text.
        assert_eq!(
            p.json.to_value(),
            json!({"limit": 127, "quantum": 1514, "depth": 127, "divisor": 1024})
        );
        assert_eq!(
            p.clone().json_for(true).to_value(),
            json!({"limit": 127, "quantum": 1514, "depth": 127, "flows": 128, "divisor": 1024})
        );
        assert_eq!(
            shown(&["perturb", "10", "headdrop"]).json.to_value(),
            json!({"limit": 127, "quantum": 1514, "depth": 127, "headdrop": true,
                   "divisor": 1024, "perturb": 10})
        );
        assert_eq!(
            shown(&["perturb", "10"]).plain,
            "limit 127p quantum 1514b depth 127 divisor 1024 perturb 10sec"
        );
        assert_eq!(
            shown(&["headdrop", "quantum", "3000", "depth", "20"]).plain,
            "limit 127p quantum 3000b depth 20 headdrop divisor 1024"
        );
    }

    #[test]
    fn parameter_rules() {
        let e = sfq(&["limit", "1"]).err().unwrap();
        assert!(e.0.starts_with("Illegal \"limit\", must be > 1"), "{e}");
        let e = sfq(&["limit", "5", "depth", "1", "flows", "1"])
            .err()
            .unwrap();
        assert!(e.0.starts_with("Error: sch_sfq: invalid limit."), "{e}");
        let e = sfq(&["divisor", "1000"]).err().unwrap();
        assert!(e.0.contains("divisor 1000"), "{e}");
        assert!(sfq(&["divisor", "131072"]).is_err());
        let e = sfq(&["perturb", "-1"]).err().unwrap();
        assert!(e.0.contains("invalid perturb period"), "{e}");
        assert!(sfq(&["perturb", "ten"]).is_err());
        assert!(sfq(&["quantum", "4gb"]).is_err());
        let e = sfq(&["quantum", "3gb"]).err().unwrap();
        assert!(e.0.starts_with("Error: sch_sfq: invalid quantum."), "{e}");
        let e = sfq(&["redflowlimit", "100000"]).err().unwrap();
        assert!(e.0.contains("not supported"));
        let e = sfq(&["bogus"]).err().unwrap();
        assert!(e.0.starts_with("What is \"bogus\"?"));
    }
}
