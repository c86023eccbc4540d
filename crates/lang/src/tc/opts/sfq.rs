//! The `sfq` qdisc's tc syntax (iproute2 tc/q_sfq.c): `sfq_parse_opt` reads
//! the words after the kind into `struct tc_sfq_qopt_v1`
//! (`crate::qdisc::sfq::SfqOptions`), computing per-flow RED's Wlog, Plog and
//! max_P client-side as tc does (tc/tc_red.c, shared with `super::red`);
//! `sfq_print_opt` prints what `sfq_dump` sends back (`flows` only with
//! `-d`; with RED its `ewma min max probability` and flags, and with `-s`
//! the `tc_sfqred_stats` lines before " Sent").

use super::codel::{unsigned, value};
use super::red::{max_p, print_flags, scan_double, tc_red_eval_ewma, tc_red_eval_p};
use crate::qdisc::dump::Xstats;
use crate::qdisc::red::{TC_RED_ECN, TC_RED_HARDDROP};
use crate::qdisc::sfq::SfqOptions;
use crate::qdisc::QdiscOptions;
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::{replace_root, Bench, Printed, Sample, Syntax};
use crate::tc::syntax::{JsonObj, XstatsPrinter};
use crate::tc::tokens::Tokens;
use crate::tc::TcError;
use crate::units::{parse_size, print_g, sprint_size};
use serde_json::json;
use std::fmt::Write;

const USAGE: &str = "Usage: ... sfq [ limit NUMBER ] [ perturb SECS ] [ quantum BYTES ]\n               [ divisor NUMBER ] [ flows NUMBER] [ depth NUMBER ]\n               [ headdrop ]\n               [ redflowlimit BYTES ] [ min BYTES ] [ max BYTES ]\n               [ avpkt BYTES ] [ burst PACKETS ] [ probability P ]\n               [ ecn ] [ harddrop ]";

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

/// A byte count read with `get_size` into an unsigned int.
fn size32(name: &str, t: &mut Tokens) -> Result<u32, TcError> {
    let v = value(name, t)?;
    let bytes = parse_size(v).map_err(|e| TcError::new(format!("Illegal \"{name}\" ({e})")))?;
    u32::try_from(bytes).map_err(|_| {
        TcError::new(format!(
            "Illegal \"{name}\" (\"{v}\": more than {} bytes)",
            u32::MAX
        ))
    })
}

/// The RED words of `sfq_parse_opt` that are not fields of the options.
struct RedWords {
    /// Whether any RED word was given (tc's `red` count).
    given: bool,
    burst: u32,
    avpkt: u32,
    probability: f64,
}

/// The end of `sfq_parse_opt` when RED words were given: `redflowlimit`
/// required, Floyd's defaults (max = limit / 4, min = max / 3, burst =
/// (2 min + max) / (3 avpkt), in unsigned int arithmetic), tc's refusals,
/// and Wlog, Plog and max_P computed as for `red` (tc/tc_red.c); `notice`
/// gets tc's warning for a Wlog of 10 or more.
fn red_fields(
    o: &mut SfqOptions,
    r: &RedWords,
    notice: &mut dyn FnMut(String),
) -> Result<(), TcError> {
    if o.red_limit == 0 {
        return Err(TcError::new(
            "Required parameter (redflowlimit) is missing\n(e.g. sfq redflowlimit 100000 \
             min 8000 max 60000 probability 0.20 ecn)",
        ));
    }
    if o.qth_max == 0 {
        o.qth_max = o.red_limit / 4;
    }
    if o.qth_min == 0 {
        o.qth_min = o.qth_max / 3;
    }
    let burst = if r.burst != 0 {
        r.burst
    } else {
        // tc divides by 3 × avpkt here (a zero avpkt kills it: SIGFPE).
        o.qth_min
            .wrapping_mul(2)
            .wrapping_add(o.qth_max)
            .checked_div(r.avpkt.wrapping_mul(3))
            .ok_or_else(|| {
                TcError::new(format!(
                    "Illegal \"avpkt\" ({}: the default burst divides by 3 × avpkt; give \
                     avpkt of at least 1 byte or a burst)",
                    r.avpkt
                ))
            })?
    };
    if o.qth_max > o.red_limit {
        return Err(TcError::new(format!(
            "\"max\" is larger than \"limit\" (max {} > redflowlimit {})",
            o.qth_max, o.red_limit
        )));
    }
    if o.qth_min >= o.qth_max {
        return Err(TcError::new(format!(
            "\"min\" is not smaller than \"max\" (min {} >= max {})",
            o.qth_min, o.qth_max
        )));
    }
    let wlog = tc_red_eval_ewma(o.qth_min, burst, r.avpkt)
        .map_err(|e| TcError::new(format!("{e}SFQ: failed to calculate EWMA constant.")))?;
    if wlog >= 10 {
        notice(format!(
            "SFQ: WARNING. Burst {burst} seems to be too large."
        ));
    }
    o.wlog = wlog;
    o.plog = tc_red_eval_p(o.qth_min, o.qth_max, r.probability)
        .ok_or_else(|| TcError::new("SFQ: failed to calculate probability."))?;
    o.max_p = max_p(r.probability);
    Ok(())
}

/// `sfq_parse_opt`.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    let mut o = SfqOptions::default();
    let mut r = RedWords {
        given: false,
        burst: 0,
        avpkt: 1000,
        probability: 0.02,
    };
    while let Some(word) = t.next() {
        r.given |= matches!(
            word,
            "redflowlimit" | "min" | "max" | "burst" | "avpkt" | "probability" | "ecn" | "harddrop"
        );
        match word {
            "limit" => o.limit = limit(unsigned("limit", t)?)?,
            "quantum" => o.quantum = size32("quantum", t)?,
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
            // `get_u32`: plain numbers of bytes, no units.
            "redflowlimit" => o.red_limit = unsigned("redflowlimit", t)?,
            "min" => o.qth_min = unsigned("min", t)?,
            "max" => o.qth_max = unsigned("max", t)?,
            "burst" => r.burst = unsigned("burst", t)?,
            "avpkt" => r.avpkt = size32("avpkt", t)?,
            "probability" => {
                let v = value("probability", t)?;
                r.probability = scan_double(v).ok_or_else(|| {
                    TcError::new(format!(
                        "Illegal \"probability\" (\"{v}\": expected a number like 0.02)"
                    ))
                })?;
            }
            "ecn" => o.flags |= TC_RED_ECN,
            "harddrop" => o.flags |= TC_RED_HARDDROP,
            "help" => return Err(TcError::new(USAGE)),
            other => return Err(TcError::new(format!("What is \"{other}\"?\n{USAGE}"))),
        }
    }
    if r.given {
        red_fields(&mut o, &r, &mut |n| t.notice(n))?;
    }
    Ok(QdiscOptions::Sfq(o))
}

/// `sfq_print_opt`.
fn print(options: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::Sfq(o) = options else {
        return None;
    };
    // The RED part (printed when `qth_min` is set): `ewma min max
    // probability`, then tc_red_print_flags' words.
    let probability = f64::from(o.max_p) / 4_294_967_296.0;
    let mut red_text = format!(
        "ewma {} min {} max {} probability {} ",
        o.wlog,
        sprint_size(o.qth_min.into()),
        sprint_size(o.qth_max.into()),
        print_g(probability)
    );
    let mut red_json = JsonObj::new();
    red_json.insert("ewma", json!(o.wlog));
    red_json.insert("min", json!(o.qth_min));
    red_json.insert("max", json!(o.qth_max));
    // jsonw_float writes "%g": the number that text reads as.
    red_json.insert(
        "probability",
        json!(print_g(probability).parse().unwrap_or(probability)),
    );
    print_flags(o.flags, &mut red_text, &mut red_json);
    let red_text = red_text.trim_end().to_string();
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
        if o.qth_min != 0 {
            text.push(' ');
            text.push_str(&red_text);
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
        if o.qth_min != 0 {
            json.extend(red_json.clone());
        }
        json
    };
    let mut stats = String::new();
    let mut stats_json = JsonObj::new();
    if o.qth_min != 0 {
        let st = &o.red_stats;
        let lines = [
            [
                ("prob_mark", st.prob_mark),
                ("prob_mark_head", st.prob_mark_head),
                ("prob_drop", st.prob_drop),
            ],
            [
                ("forced_mark", st.forced_mark),
                ("forced_mark_head", st.forced_mark_head),
                ("forced_drop", st.forced_drop),
            ],
        ];
        for line in lines {
            // print_nl, then "  first N" and " next N".
            stats.push_str("\n ");
            for (name, n) in line {
                let _ = write!(stats, " {name} {n}");
                stats_json.insert(name, json!(n));
            }
        }
    }
    Some(Printed {
        plain: text(false),
        detail: text(true),
        json: json(false),
        detail_json: Some(json(true)),
        stats,
        stats_json,
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
    // Per-flow RED (tc's `get_u32` for the byte counts).
    Key::opt("redflowlimit", Value::Count),
    Key::opt("min", Value::Count),
    Key::opt("max", Value::Count),
    Key::opt("burst", Value::Count),
    Key::opt("avpkt", Value::Size),
    Key::opt("probability", Value::Decimal),
    Key::opt(
        "ecn",
        Value::Flag {
            on: "ecn",
            off: None,
        },
    ),
    Key::opt(
        "harddrop",
        Value::Flag {
            on: "harddrop",
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
        let e = sfq(&["bogus"]).err().unwrap();
        assert!(e.0.starts_with("What is \"bogus\"?"));
    }

    /// A fresh left device after `lines`; the output of the last line.
    fn session(lines: &[&str]) -> Result<Option<String>, TcError> {
        use crate::qdisc::tree::{DevSpec, QdiscTree};
        let mut tree = QdiscTree::new(DevSpec::new(crate::dir::Dir::LeftToRight, BUILTIN)).unwrap();
        let mut out = Ok(None);
        for line in lines {
            let cmd = crate::tc::TcCommand::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            out = crate::tc::run(
                &mut tree,
                &cmd,
                Instant::ZERO,
                &mut crate::packet::Drops::new(),
            );
        }
        out
    }

    fn red_parsed(words: &str) -> Result<SfqOptions, TcError> {
        let words: Vec<&str> = words.split_whitespace().collect();
        match parse_qdisc(BUILTIN, "sfq", &words)? {
            QdiscOptions::Sfq(o) => Ok(o),
            other => panic!("{other:?}"),
        }
    }

    /// tc-sfq(8)'s RED line after the kind.
    const MAN: &str = "limit 3000 flows 512 divisor 16384 redflowlimit 100000 min 8000 \
                       max 60000 probability 0.20 ecn headdrop";

    /// The man page's line by hand (tc/q_sfq.c, tc/tc_red.c): avpkt 1000,
    /// burst = (2 × 8000 + 60000) / 3000 = 25; Wlog: a = 25 + 1 - 8 = 18,
    /// (1 - (1 - 2^-w)^25) 2^w is 17.5 at w = 5 and 20.8 at w = 6: Wlog 6;
    /// Plog: 0.2 / 52000 × 2^i first exceeds 1 at i = 18 (1.008); max_P =
    /// 0.2 × 2^32 = 858993459.2 → 858993459.
    #[test]
    fn the_man_pages_red_line_computes_as_tc_does() {
        let o = red_parsed(MAN).unwrap();
        assert_eq!(
            (
                o.limit,
                o.flows,
                o.divisor,
                o.red_limit,
                o.qth_min,
                o.qth_max
            ),
            (3000, 512, 16384, 100_000, 8000, 60_000)
        );
        assert_eq!(
            (o.wlog, o.plog, o.scell_log, o.max_p),
            (6, 18, 0, 858_993_459)
        );
        assert_eq!(o.flags, TC_RED_ECN);
        assert!(o.headdrop);
        // Floyd's defaults: max = 100000 / 4, min = max / 3; harddrop.
        let o = red_parsed("redflowlimit 100000 harddrop").unwrap();
        assert_eq!(
            (o.qth_min, o.qth_max, o.flags),
            (8333, 25_000, TC_RED_HARDDROP)
        );
        // min / max are plain numbers (get_u32): no units.
        assert!(red_parsed("redflowlimit 100000 min 8kb").is_err());
    }

    #[test]
    fn red_show_prints_as_iproute2() {
        let lines = [
            "tc qdisc add dev left root handle 1: htb",
            "tc class add dev left parent 1: classid 1:1 htb rate 10mbit",
            &format!("tc qdisc add dev left parent 1:1 handle 10: sfq {MAN}"),
        ];
        let show = |flags: &str| {
            let mut l = lines.to_vec();
            let cmd = format!("tc {flags} qdisc show dev left parent 1:1");
            l.push(&cmd);
            session(&l).unwrap().unwrap()
        };
        assert_eq!(
            show(""),
            "qdisc sfq 10: parent 1:1 limit 3000p quantum 1514b depth 127 headdrop divisor 16384 \
             ewma 6 min 8000b max 60000b probability 0.2 ecn \n"
        );
        assert_eq!(
            show("-s"),
            "qdisc sfq 10: parent 1:1 limit 3000p quantum 1514b depth 127 headdrop divisor 16384 \
             ewma 6 min 8000b max 60000b probability 0.2 ecn \n  \
             prob_mark 0 prob_mark_head 0 prob_drop 0\n  \
             forced_mark 0 forced_mark_head 0 forced_drop 0\n \
             Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n \
             backlog 0b 0p requeues 0\n"
        );
        let p = shown(&MAN.split_whitespace().collect::<Vec<_>>());
        assert_eq!(
            p.detail,
            "limit 3000p quantum 1514b depth 127 headdrop flows 512 divisor 16384 \
             ewma 6 min 8000b max 60000b probability 0.2 ecn"
        );
        assert_eq!(
            p.json.to_value(),
            json!({"limit": 3000, "quantum": 1514, "depth": 127, "headdrop": true,
                   "divisor": 16384, "ewma": 6, "min": 8000, "max": 60000,
                   "probability": 0.2, "ecn": true, "harddrop": false,
                   "adaptive": false, "nodrop": false})
        );
        assert_eq!(
            p.stats_json.to_value(),
            json!({"prob_mark": 0, "prob_mark_head": 0, "prob_drop": 0,
                   "forced_mark": 0, "forced_mark_head": 0, "forced_drop": 0})
        );
        let j = show("-s -j");
        assert!(
            j.contains(
                "\"ecn\":true,\"harddrop\":false,\"adaptive\":false,\"nodrop\":false,\
                        \"prob_mark\":0,\"prob_mark_head\":0,\"prob_drop\":0,\"forced_mark\":0,\
                        \"forced_mark_head\":0,\"forced_drop\":0}"
            ),
            "{j}"
        );
        assert!(!show("-j").contains("prob_mark"));
        // Without RED nothing changes.
        assert!(!shown(&[]).plain.contains("ewma"));
        assert!(shown(&[]).stats.is_empty());
    }

    /// tc's refusals and its warning (tc/q_sfq.c `sfq_parse_opt`).
    #[test]
    fn red_refusals_and_notices_are_tcs() {
        let e = red_parsed("min 8000 max 60000").unwrap_err();
        assert!(
            e.0.starts_with("Required parameter (redflowlimit) is missing"),
            "{e}"
        );
        let e = red_parsed("redflowlimit 50000 max 60000").unwrap_err();
        assert!(e.0.starts_with("\"max\" is larger than \"limit\""), "{e}");
        let e = red_parsed("redflowlimit 100000 min 9000 max 9000").unwrap_err();
        assert!(
            e.0.starts_with("\"min\" is not smaller than \"max\""),
            "{e}"
        );
        // burst 2 with min 8000 / avpkt 1000: a = 2 + 1 - 8 < 1.
        let e = red_parsed("redflowlimit 100000 min 8000 max 60000 burst 2").unwrap_err();
        assert_eq!(
            e.0,
            "tc_red_eval_ewma() burst 2 is too small ? Try burst 9\n\
             SFQ: failed to calculate EWMA constant."
        );
        let e = red_parsed("redflowlimit 100000 avpkt 0").unwrap_err();
        assert!(e.0.starts_with("Illegal \"avpkt\" (0:"), "{e}");
        let e = red_parsed("redflowlimit 100000 probability x").unwrap_err();
        assert!(e.0.contains("\"probability\""), "{e}");
        // The kernel's red_check_params: burst 40100 gives a = 101 and Wlog
        // 7 (128 × (1 - (127/128)^40100) ≈ 128; 2^6 is short); 40000000
        // (26 bits) scaled by 2^7 passes 31 bits.
        let e = session(&[
            "tc qdisc add dev left root sfq redflowlimit 4000000000 min 40000000 max 60000000 burst 40100",
        ])
        .unwrap_err();
        assert!(e.0.contains("RED min 40000000"), "{e}");
        // burst 200: a = 200 + 1 - 8 = 193, beyond 1024 × (1 - (1 -
        // 2^-10)^200) = 181.8: a Wlog above 10, and tc warns from 10.
        let out = session(&[
            "tc qdisc add dev left root sfq redflowlimit 100000 min 8000 max 60000 burst 200",
        ]);
        assert_eq!(
            out.unwrap().as_deref(),
            Some("SFQ: WARNING. Burst 200 seems to be too large.\n")
        );
        assert_eq!(
            session(&[&format!("tc qdisc add dev left root sfq {MAN}")]).unwrap(),
            None
        );
    }
}
