//! The `multiq` qdisc's tc syntax (iproute2 v6.18.0 tc/q_multiq.c):
//! `multiq_parse_opt` takes no words (any is "What is ...?") and always
//! sends a zeroed `tc_multiq_qopt`; `multiq_print_opt` prints
//! `bands N/MAX`. iproute2 prints that with a bare `fprintf`, so its `-j`
//! output has the text inside the `options` object (not valid JSON);
//! bloatbox writes the two numbers as `bands` and `max_bands` there. Its
//! classes (one per TX queue) take no options and print none.

use crate::qdisc::multiq::MultiqOptions;
use crate::qdisc::QdiscOptions;
use crate::tc::syntax::{replace_root, Bench, JsonObj, Printed, Sample, Syntax};
use crate::tc::tokens::Tokens;
use crate::tc::TcError;
use serde_json::json;

/// q_multiq.c `explain`.
const USAGE: &str = "Usage: ... multiq [help]";

/// `multiq_parse_opt`.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    match t.next() {
        None => Ok(QdiscOptions::Multiq(MultiqOptions::default())),
        Some("help") => Err(TcError::new(USAGE)),
        Some(word) => Err(TcError::new(format!("What is \"{word}\"?\n{USAGE}"))),
    }
}

/// `multiq_print_opt`.
fn print(options: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::Multiq(o) = options else {
        return None;
    };
    let mut json = JsonObj::new();
    json.insert("bands", json!(o.bands));
    json.insert("max_bands", json!(o.max_bands));
    Some(Printed::same(
        format!("bands {}/{}", o.bands, o.max_bands),
        json,
    ))
}

/// multiq's tc syntax; its menu entry (one band per TX queue, each with
/// its default pfifo) is refused on a single-queue device, so the TUI
/// offers it only on a multi-queue one.
pub static SYNTAX: Syntax = Syntax {
    kind: "multiq",
    qdisc: parse,
    class: None,
    print,
    print_class: |_| None,
    example: Some(|dir, _| vec![format!("{} handle 1: multiq", replace_root(dir))]),
    table: None,
    trailing_space: true,
    xstats: None,
    benches: &[Bench {
        tx_queues: 4,
        ..Bench::new("multiq_4", &["tc qdisc add dev D root handle 1: multiq"])
    }],
    samples: &[Sample {
        tx_queues: 2,
        ..Sample::new(
            "multiq+fq_codel",
            &[
                "tc qdisc add dev D root handle 1: multiq",
                "tc qdisc add dev D parent 1:2 fq_codel limit 30 ecn",
            ],
        )
    }],
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Drops;
    use crate::qdisc::kinds::BUILTIN;
    use crate::qdisc::tree::{DevSpec, QdiscTree};
    use crate::tc::syntax::parse_qdisc;

    fn parsed(words: &str) -> Result<QdiscOptions, String> {
        let words: Vec<&str> = words.split_whitespace().collect();
        parse_qdisc(BUILTIN, "multiq", &words).map_err(|e| e.0)
    }

    /// Runs `lines` on dev left with `queues` TX queues; the last's answer.
    fn run(queues: u16, lines: &[&str]) -> Result<Option<String>, TcError> {
        let spec = DevSpec {
            tx_queues: queues,
            ..DevSpec::new(crate::dir::Dir::LeftToRight, BUILTIN)
        };
        let mut tree = QdiscTree::new(spec).unwrap();
        let mut out = Ok(None);
        for line in lines {
            let cmd = crate::tc::TcCommand::parse(line).unwrap();
            out = crate::tc::run(
                &mut tree,
                &cmd,
                crate::time::Instant::ZERO,
                &mut Drops::new(),
            );
        }
        out
    }

    #[test]
    fn words_print_and_refusals_are_tcs() {
        assert_eq!(
            parsed(""),
            Ok(QdiscOptions::Multiq(MultiqOptions::default()))
        );
        assert_eq!(
            parsed("bands 4").unwrap_err(),
            format!("What is \"bands\"?\n{USAGE}")
        );
        assert_eq!(parsed("help").unwrap_err(), USAGE);
        let show = |lines: &[&str]| run(4, lines).unwrap().unwrap();
        let add = "tc qdisc add dev left root handle 1: multiq";
        assert_eq!(
            show(&[add, "tc qdisc show dev left"]),
            // The default pfifos are hidden (qdisc_hash_add(child, true)).
            "qdisc multiq 1: root refcnt 5 bands 4/4 \n"
        );
        let j = show(&[add, "tc -j qdisc show dev left"]);
        assert!(
            j.contains("\"options\":{\"bands\":4,\"max_bands\":4}"),
            "{j}"
        );
        let classes = show(&[
            add,
            "tc qdisc add dev left parent 1:3 handle 30: sfq",
            "tc class show dev left",
        ]);
        assert_eq!(
            classes,
            "class multiq 1:1 parent 1: \n\
             class multiq 1:2 parent 1: \n\
             class multiq 1:3 parent 1: leaf 30: \n\
             class multiq 1:4 parent 1: \n"
        );
        // multiq_dump_class_stats: each band's child's counters.
        let stats = show(&[add, "tc -s class show dev left classid 1:2"]);
        assert_eq!(
            stats,
            "class multiq 1:2 parent 1: \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\n"
        );
        // multiq_tune on a change reads nothing: the bands stay.
        let changed = show(&[
            add,
            "tc qdisc change dev left root multiq",
            "tc -d qdisc show dev left",
        ]);
        assert_eq!(changed, "qdisc multiq 1: root refcnt 5 bands 4/4 \n");
        let e = run(1, &[add]).unwrap_err().0;
        assert!(e.contains("Operation not supported"), "{e}");
        assert!(e.contains("`bloatbox set left.tx_queues=4`"), "{e}");
        for s in SYNTAX.samples {
            let lines: Vec<String> = s.lines.iter().map(|l| l.replace(" D ", " left ")).collect();
            let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
            assert!(run(s.tx_queues, &lines).is_ok(), "{}", s.name);
        }
    }
}
