//! The `fq_codel` qdisc's tc syntax (iproute2 tc/q_fq_codel.c):
//! `fq_codel_parse_opt` reads the words after the kind into the
//! `TCA_FQ_CODEL_*` attributes (`crate::qdisc::fq_codel::FqCodelOptions`),
//! sending none of those given as zero but `ce_threshold`;
//! `fq_codel_print_opt` prints what `fq_codel_dump` sends back.

use super::codel::{nonzero, print_time, time, unsigned, value};
use crate::qdisc::dump::Xstats;
use crate::qdisc::fq_codel::FqCodelOptions;
use crate::qdisc::fq_codel::{FqCodelClassXstats, FqCodelXstats};
use crate::qdisc::QdiscOptions;
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::{c_hex, replace_root, Bench, Printed, Sample, Syntax};
use crate::tc::syntax::{JsonObj, XstatsPrinter};
use crate::tc::tokens::{c_number, Tokens};
use crate::tc::TcError;
use crate::units::{parse_size, sprint_size};
use crate::units::{sprint_time, sprint_time_signed};
use serde_json::json;
use std::fmt::Write;

const USAGE: &str = "Usage: ... fq_codel [ limit PACKETS ] [ flows NUMBER ]\n\t\t\t[ memory_limit BYTES ]\n\t\t\t[ target TIME ] [ interval TIME ]\n\t\t\t[ quantum BYTES ] [ [no]ecn ]\n\t\t\t[ ce_threshold TIME ]\n\t\t\t[ ce_threshold_selector VALUE/MASK ]\n\t\t\t[ drop_batch SIZE ]";

/// An 8-bit number (`get_u8(.., 0)`: decimal, 0x hex or 0 octal).
fn parse_u8(s: &str) -> Option<u8> {
    c_number(s).and_then(|n| u8::try_from(n).ok())
}

/// `fq_codel_parse_opt`.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    let mut o = FqCodelOptions::default();
    while let Some(word) = t.next() {
        match word {
            "limit" => o.limit = Some(unsigned("limit", t)?),
            "flows" => o.flows = Some(unsigned("flows", t)?),
            "quantum" => o.quantum = Some(unsigned("quantum", t)?),
            "drop_batch" => o.drop_batch_size = Some(unsigned("drop_batch", t)?),
            "target" => o.target = Some(time("target", t)?),
            "interval" => o.interval = Some(time("interval", t)?),
            "ce_threshold" => o.ce_threshold = Some(time("ce_threshold", t)?),
            "ce_threshold_selector" => {
                let v = value("ce_threshold_selector", t)?;
                let (selector, mask) = v
                    .split_once('/')
                    .and_then(|(val, mask)| Some((parse_u8(val)?, parse_u8(mask)?)))
                    .ok_or_else(|| {
                        TcError::new(format!(
                            "Illegal \"ce_threshold_selector\" (\"{v}\": expected VALUE/MASK, two 8-bit numbers such as 0x01/0x03)"
                        ))
                    })?;
                o.ce_threshold_selector = Some(selector);
                o.ce_threshold_mask = Some(mask);
            }
            "memory_limit" => {
                let v = value("memory_limit", t)?;
                let bytes = parse_size(v)
                    .map_err(|e| TcError::new(format!("Illegal \"memory_limit\" ({e})")))?;
                o.memory_limit = Some(memory_limit(bytes));
            }
            "ecn" => o.ecn = Some(true),
            "noecn" => o.ecn = Some(false),
            other => return Err(TcError::new(format!("What is \"{other}\"?\n{USAGE}"))),
        }
    }
    Ok(options(o))
}

/// `memory_limit` as `get_size` fills its unsigned int (saturating).
pub fn memory_limit(bytes: u64) -> u32 {
    u32::try_from(bytes).unwrap_or(u32::MAX)
}

/// What `fq_codel_parse_opt` sends for the values given (the words', or
/// the configuration's structured form's): none of them for a zero but
/// `ce_threshold` and the selector.
pub fn options(o: FqCodelOptions) -> QdiscOptions {
    QdiscOptions::FqCodel(FqCodelOptions {
        limit: o.limit.and_then(nonzero),
        flows: o.flows.and_then(nonzero),
        quantum: o.quantum.and_then(nonzero),
        drop_batch_size: o.drop_batch_size.and_then(nonzero),
        target: o.target.and_then(nonzero),
        interval: o.interval.and_then(nonzero),
        memory_limit: o.memory_limit.and_then(nonzero),
        ..o
    })
}

/// `fq_codel_print_opt`: the same text with and without `-d`.
fn print(options: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::FqCodel(o) = options else {
        return None;
    };
    let mut text = Vec::new();
    let mut json = crate::tc::syntax::JsonObj::new();
    if let Some(limit) = o.limit {
        text.push(format!("limit {limit}p"));
        json.insert("limit", json!(limit));
    }
    if let Some(flows) = o.flows {
        text.push(format!("flows {flows}"));
        json.insert("flows", json!(flows));
    }
    if let Some(quantum) = o.quantum {
        text.push(format!("quantum {quantum}"));
        json.insert("quantum", json!(quantum));
    }
    if let Some(target) = o.target {
        text.push(format!("target {}", print_time(target)));
        json.insert("target", json!(target));
    }
    if let Some(ce) = o.ce_threshold {
        text.push(format!("ce_threshold {}", print_time(ce)));
        json.insert("ce_threshold", json!(ce));
    }
    if let (Some(selector), Some(mask)) = (o.ce_threshold_selector, o.ce_threshold_mask) {
        if mask != 0 {
            text.push(format!(
                "ce_threshold_selector {}/{}",
                c_hex(u32::from(selector)),
                c_hex(u32::from(mask))
            ));
            json.insert("ce_threshold_selector", json!(selector));
            json.insert("ce_threshold_mask", json!(mask));
        }
    }
    if let Some(interval) = o.interval {
        text.push(format!("interval {}", print_time(interval)));
        json.insert("interval", json!(interval));
    }
    if let Some(memory_limit) = o.memory_limit {
        text.push(format!("memory_limit {}", sprint_size(memory_limit.into())));
        json.insert("memory_limit", json!(memory_limit));
    }
    if o.ecn == Some(true) {
        text.push("ecn".into());
        json.insert("ecn", json!(true));
    }
    if let Some(drop_batch) = o.drop_batch_size {
        text.push(format!("drop_batch {drop_batch}"));
        json.insert("drop_batch", json!(drop_batch));
    }
    let text = text.join(" ");
    Some(Printed::same(text, json))
}

/// fq_codel's tc syntax (its flow pseudo-classes take no options).
pub static SYNTAX: Syntax = Syntax {
    kind: "fq_codel",
    qdisc: parse,
    class: None,
    print,
    print_class: |_| None,
    example: Some(|dir, _| vec![format!("{} fq_codel", replace_root(dir))]),
    table: Some(&TABLE),
    trailing_space: true,
    xstats: Some(&XSTATS),
    benches: &[Bench::new("fq_codel", &["tc qdisc add dev D root fq_codel"])],
    samples: &[
        Sample::new(
            "fq_codel",
            &["tc qdisc add dev D root fq_codel limit 24 flows 16 target 1ms interval 5ms drop_batch 4"],
        ),
        Sample::new(
            "fq_codel_memory",
            &["tc qdisc add dev D root fq_codel memory_limit 20000 noecn"],
        ),
        Sample::new(
            "fq_codel ecn",
            &["tc qdisc add dev D root fq_codel ecn limit 64"],
        ),
    ],
};

/// The keys of an `fq_codel` table in the configuration.
static TABLE: KeyTable = KeyTable::qdisc(&[
    Key::opt("limit", Value::Count),
    Key::opt("flows", Value::Count),
    // fq_codel reads a plain number (`get_unsigned`), not a size.
    Key::opt("quantum", Value::Size32 { plain: true }),
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
    Key::opt("memory_limit", Value::Size),
    Key::opt("drop_batch", Value::Count),
]);

/// `fq_codel_print_xstats`: the qdisc's `tc_fq_codel_qd_stats` and a
/// flow queue's `tc_fq_codel_cl_stats`.
static XSTATS: XstatsPrinter = XstatsPrinter {
    text: |out, x| {
        match x {
            Xstats::FqCodel(s) => fq_codel_text(out, s),
            Xstats::FqCodelClass(s) => fq_codel_class_text(out, s),
            _ => return None,
        }
        Some(())
    },
    json: |x| {
        let mut xj = JsonObj::new();
        match x {
            Xstats::FqCodel(s) => {
                xj.insert("maxpacket", json!(s.maxpacket));
                xj.insert("drop_overlimit", json!(s.drop_overlimit));
                xj.insert("new_flow_count", json!(s.new_flow_count));
                xj.insert("ecn_mark", json!(s.ecn_mark));
                for (name, v) in fq_codel_optional(s) {
                    if v != 0 {
                        xj.insert(name, json!(v));
                    }
                }
                xj.insert("new_flows_len", json!(s.new_flows_len));
                xj.insert("old_flows_len", json!(s.old_flows_len));
            }
            Xstats::FqCodelClass(s) => {
                xj.insert("deficit", json!(s.deficit));
                xj.insert("count", json!(s.count));
                xj.insert("lastcount", json!(s.lastcount));
                xj.insert("ldelay", json!(s.ldelay_us));
                if s.dropping {
                    xj.insert("dropping", json!(true));
                    xj.insert("drop_next", json!(s.drop_next_us));
                }
            }
            _ => return None,
        }
        Some(xj)
    },
};

/// The counters `fq_codel_print_xstats` prints only when non-zero, by the
/// names it prints them under.
fn fq_codel_optional(s: &FqCodelXstats) -> [(&'static str, u64); 3] {
    [
        ("ce_mark", s.ce_mark),
        ("memory_used", s.memory_usage),
        ("drop_overmemory", s.drop_overmemory),
    ]
}

fn fq_codel_text(out: &mut String, s: &FqCodelXstats) {
    let _ = write!(
        out,
        "  maxpacket {} drop_overlimit {} new_flow_count {} ecn_mark {}",
        s.maxpacket, s.drop_overlimit, s.new_flow_count, s.ecn_mark
    );
    for (name, v) in fq_codel_optional(s) {
        if v != 0 {
            let _ = write!(out, " {name} {v}");
        }
    }
    let _ = writeln!(
        out,
        "\n  new_flows_len {} old_flows_len {}",
        s.new_flows_len, s.old_flows_len
    );
}

fn fq_codel_class_text(out: &mut String, s: &FqCodelClassXstats) {
    let _ = write!(
        out,
        "  deficit {} count {} lastcount {} ldelay {}",
        s.deficit,
        s.count,
        s.lastcount,
        sprint_time(s.ldelay_us)
    );
    if s.dropping {
        let _ = write!(
            out,
            " dropping drop_next {}",
            sprint_time_signed(s.drop_next_us)
        );
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::fq_codel::FqCodel;
    use crate::qdisc::kinds::BUILTIN;
    use crate::qdisc::{Qdisc, QdiscCtx};
    use crate::tc::syntax::parse_qdisc;
    use crate::time::Instant;

    /// An fq_codel qdisc from the words after the kind, as tc builds one.
    fn fq_codel(words: &[&str]) -> Result<FqCodel, TcError> {
        let options = parse_qdisc(BUILTIN, "fq_codel", words)?;
        Ok(FqCodel::build(QdiscCtx::default(), &options)?)
    }

    /// What `tc qdisc show` prints after the head.
    fn shown(q: &FqCodel) -> Printed {
        crate::tc::show::qdisc_options(&q.dump(Instant::ZERO))
    }

    #[test]
    fn f1_default_printout() {
        let q = fq_codel(&[]).unwrap();
        let p = shown(&q);
        assert_eq!(
            p.plain,
            "limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64"
        );
        assert_eq!(p.detail, p.plain);
        assert_eq!(p.json["memory_limit"], json!(33554432));
        assert_eq!(
            p.json.to_value(),
            json!({"limit": 10240, "flows": 1024, "quantum": 1514, "target": 4999,
                   "interval": 99999, "memory_limit": 33554432, "ecn": true,
                   "drop_batch": 64})
        );
    }

    #[test]
    fn options_parse_print_and_validate() {
        let q = fq_codel(&[
            "limit",
            "100",
            "flows",
            "16",
            "quantum",
            "300",
            "target",
            "2ms",
            "interval",
            "20ms",
            "noecn",
            "ce_threshold",
            "4ms",
            "ce_threshold_selector",
            "0x1/0x3",
            "memory_limit",
            "1mb",
            "drop_batch",
            "0",
        ])
        .unwrap();
        assert_eq!(
            shown(&q).plain,
            "limit 100p flows 16 quantum 300 target 2ms ce_threshold 4ms ce_threshold_selector 0x1/0x3 interval 20ms memory_limit 1Mb drop_batch 64"
        );
        let json = shown(&q).json;
        assert_eq!(
            (&json["ce_threshold_selector"], &json["ce_threshold_mask"]),
            (&json!(1), &json!(3))
        );
        assert!(json.get("ecn").is_none());
        // quantum below 256 is raised; memory_limit capped at 2^31.
        let q = fq_codel(&["quantum", "100", "memory_limit", "4gb"]).unwrap();
        assert!(shown(&q).plain.contains(" quantum 256 "));
        assert!(shown(&q).plain.contains(" memory_limit 2Gb "));
        let e = fq_codel(&["quantum", "2000000"]).err().unwrap();
        assert!(e.0.starts_with("Error: Invalid quantum."), "{e}");
        let e = fq_codel(&["flows", "70000"]).err().unwrap();
        assert!(e.0.contains("flows 70000"), "{e}");
        let e = fq_codel(&["limit", "many"]).err().unwrap();
        assert!(e.0.starts_with("Illegal \"limit\""), "{e}");
        let e = fq_codel(&["ce_threshold_selector", "1"]).err().unwrap();
        assert!(e.0.contains("VALUE/MASK"), "{e}");
        let e = fq_codel(&["perturb", "10"]).err().unwrap();
        assert!(e.0.starts_with("What is \"perturb\"?"), "{e}");
        assert!(fq_codel(&["target"]).is_err());
    }

    #[test]
    fn zero_values_are_not_sent() {
        let o = parse_qdisc(BUILTIN, "fq_codel", &["limit", "0", "ce_threshold", "0"]).unwrap();
        assert_eq!(
            o,
            QdiscOptions::FqCodel(FqCodelOptions {
                ce_threshold: Some(0),
                ..FqCodelOptions::default()
            })
        );
    }
}
