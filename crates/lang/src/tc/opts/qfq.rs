//! QFQ's tc syntax (iproute2 tc/q_qfq.c): the qdisc takes no options
//! (`qfq_parse_opt` refuses any word); a class takes `weight NUMBER` and
//! `maxpkt BYTES` (`qfq_parse_class_opt`, into `TCA_QFQ_WEIGHT` and
//! `TCA_QFQ_LMAX`; their ranges are the kernel's, checked in
//! `crate::qdisc::qfq`), and `qfq_print_opt` prints them back.

use crate::qdisc::qfq::QfqClassOptions;
use crate::qdisc::{ClassOptions, QdiscOptions};
use crate::tc::syntax::{Bench, Printed, Sample, Syntax};
use crate::tc::tokens::Tokens;
use crate::tc::TcError;
use serde_json::json;

/// QFQ's entry in `crate::qdisc::kinds::BUILTIN`.
pub static SYNTAX: Syntax = Syntax {
    kind: "qfq",
    qdisc: parse_qdisc,
    class: Some(parse_class),
    print,
    print_class,
    example: None,
    table: None,
    trailing_space: true,
    xstats: None,
    benches: &[Bench::new(
        "qfq_1000_classes",
        &["tc qdisc add dev D root handle 1: qfq"],
    )
    .with_classes("tc class add dev D parent 1: classid 1:MINOR qfq weight 10 maxpkt 1514")],
    samples: &[
        Sample::new(
            "qfq",
            &[
                "tc qdisc add dev D root handle 1: qfq",
                "tc class add dev D parent 1: classid 1:1 qfq weight 2 maxpkt 512",
                "tc class add dev D parent 1: classid 1:2 qfq",
                "tc filter add dev D parent 1: protocol all matchall flowid 1:1",
            ],
        ),
        Sample::new(
            "qfq+matchall",
            &[
                "tc qdisc add dev D root handle 1: qfq",
                "tc class add dev D parent 1: classid 1:1 qfq weight 10",
                "tc class add dev D parent 1: classid 1:2 qfq weight 1",
                "tc filter add dev D parent 1: protocol all prio 1 u32 match ip protocol 17 0xff flowid 1:2",
                "tc filter add dev D parent 1: protocol all prio 2 matchall flowid 1:1",
            ],
        ),
    ],
};

const CLASS_USAGE: &str = "Usage: ... qfq weight NUMBER maxpkt BYTES";

/// `qfq_parse_opt`: no word is an option of QFQ's qdisc.
fn parse_qdisc(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    match t.next() {
        Some(word) => Err(TcError::new(format!("What is \"{word}\"?\nUsage: ... qfq"))),
        None => Ok(QdiscOptions::None),
    }
}

/// `qfq_parse_class_opt`: `weight NUMBER`, `maxpkt BYTES` (unsigned 32-bit
/// numbers; a word left out is an attribute not sent).
fn parse_class(t: &mut Tokens) -> Result<ClassOptions, TcError> {
    let mut o = QfqClassOptions::default();
    while let Some(word) = t.next() {
        let slot = match word {
            "weight" => &mut o.weight,
            "maxpkt" => &mut o.lmax,
            other => return Err(TcError::new(format!("What is \"{other}\"?\n{CLASS_USAGE}"))),
        };
        let v = t.value(|| {
            TcError::new(format!(
                "Error: argument \"{word}\" is required\n{CLASS_USAGE}"
            ))
        })?;
        let n = v.parse::<u32>().map_err(|_| {
            TcError::new(format!(
                "Illegal \"{word}\": \"{v}\" is not a number\n{CLASS_USAGE}"
            ))
        })?;
        *slot = Some(n);
    }
    Ok(ClassOptions::Qfq(o))
}

/// The qdisc prints no options.
fn print(o: &QdiscOptions) -> Option<Printed> {
    matches!(o, QdiscOptions::None).then(Printed::default)
}

/// `qfq_print_opt` for a class: `weight W maxpkt L`, each attribute the
/// dump carries.
fn print_class(o: &ClassOptions) -> Option<Printed> {
    let ClassOptions::Qfq(o) = o else {
        return None;
    };
    let mut words = Vec::new();
    let mut map = crate::tc::syntax::JsonObj::new();
    for (name, value) in [("weight", o.weight), ("maxpkt", o.lmax)] {
        if let Some(v) = value {
            words.push(format!("{name} {v}"));
            map.insert(name, json!(v));
        }
    }
    Some(Printed::same(words.join(" "), map))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::kinds::BUILTIN;
    use crate::qdisc::qfq::Qfq;
    use crate::qdisc::{tc_h_make, Classful, Qdisc, QdiscCtx, TC_H_ROOT};
    use crate::tc::show::{class_options, qdisc_options};
    use crate::tc::syntax::{parse_class, parse_qdisc};
    use crate::time::Instant;

    const H: u32 = 0x0001_0000;

    fn class(words: &str) -> Result<ClassOptions, TcError> {
        let words: Vec<&str> = words.split_whitespace().collect();
        parse_class(BUILTIN, "qfq", &words)
    }

    fn copts(weight: Option<u32>, lmax: Option<u32>) -> ClassOptions {
        ClassOptions::Qfq(QfqClassOptions { weight, lmax })
    }

    #[test]
    fn class_words_become_attributes() {
        assert_eq!(class("").unwrap(), copts(None, None));
        assert_eq!(class("weight 3").unwrap(), copts(Some(3), None));
        assert_eq!(
            class("maxpkt 2000 weight 10").unwrap(),
            copts(Some(10), Some(2000))
        );
        // The ranges are the kernel's: tc sends what it reads.
        assert_eq!(class("weight 0").unwrap(), copts(Some(0), None));
    }

    #[test]
    fn class_options_are_validated() {
        for (args, needle) in [
            ("weight x", "Illegal \"weight\""),
            ("weight", "\"weight\" is required"),
            ("quantum 5", "What is \"quantum\""),
        ] {
            let e = class(args).unwrap_err().0;
            assert!(e.contains(needle), "{args}: {e}");
        }
        let err = parse_qdisc(BUILTIN, "qfq", &["limit", "5"]).err().unwrap();
        assert!(err.0.contains("limit"));
        assert_eq!(
            parse_qdisc(BUILTIN, "qfq", &[]).unwrap(),
            QdiscOptions::None
        );
    }

    #[test]
    fn dump_prints_like_tc() {
        let cid = |minor| tc_h_make(1, minor);
        let mut q = Qfq::build(
            QdiscCtx {
                handle: H,
                ..QdiscCtx::default()
            },
            &QdiscOptions::None,
        )
        .unwrap();
        q.add_class(cid(1), H, &class("").unwrap()).unwrap();
        q.add_class(cid(0x20), H, &class("weight 10 maxpkt 2000").unwrap())
            .unwrap();
        let dump = q.dump(Instant::ZERO);
        assert_eq!((dump.kind.as_str(), dump.parent), ("qfq", TC_H_ROOT));
        assert_eq!(qdisc_options(&dump).plain, "");
        let c = class_options(&dump.classes[1]);
        assert_eq!(c.plain, "weight 10 maxpkt 2000");
        assert_eq!(c.detail, "weight 10 maxpkt 2000");
        assert_eq!(c.json["weight"], 10);
        assert_eq!(c.json["maxpkt"], 2000);
        assert_eq!(
            class_options(&dump.classes[0]).plain,
            "weight 1 maxpkt 1514"
        );
    }
}
