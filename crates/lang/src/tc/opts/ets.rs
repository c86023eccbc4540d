//! ETS's tc syntax (iproute2 tc/q_ets.c): `bands N`, `strict N`, `quanta
//! Q1 Q2 ...` and `priomap P1 P2 ...` (`ets_parse_opt`: each word once, a
//! list running until the next keyword; `bands` defaults to strict plus
//! the quanta given; tc's own checks and messages, then the kernel's
//! `ets_qdisc_change` checks its own), and a class's `quantum Q`
//! (`ets_parse_copt`). `ets_print_opt` prints `bands`, `strict` when
//! dumped, the `quanta` and the `priomap` lists; `ets_print_copt` a
//! bandwidth-sharing band's `quantum`.

use crate::qdisc::ets::{EtsClassOptions, EtsOptions, TCQ_ETS_MAX_BANDS};
use crate::qdisc::prio::TC_PRIO_MAX;
use crate::qdisc::{ClassOptions, QdiscOptions};
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::{replace_root, Bench, JsonObj, Printed, Sample, Syntax};
use crate::tc::tokens::{incomplete, Tokens};
use crate::tc::TcError;
use serde_json::json;

/// ETS's entry in `crate::qdisc::kinds::BUILTIN`.
pub static SYNTAX: Syntax = Syntax {
    kind: "ets",
    qdisc: parse,
    class: Some(parse_class),
    print,
    print_class,
    example: Some(|dir, _| {
        // Band 0 strict, bands 1 and 2 sharing 2:1, by pfifo_fast's
        // priomap (band 0 for interactive traffic, 2 for bulk).
        vec![format!(
            "{} handle 1: ets bands 3 strict 1 quanta 3000 1500 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1",
            replace_root(dir)
        )]
    }),
    table: Some(&TABLE),
    trailing_space: true,
    xstats: None,
    benches: &[Bench::new(
        "ets",
        &[
            "tc qdisc add dev D root handle 1: ets bands 3 strict 1 quanta 3000 1514 priomap 1 2",
            "tc qdisc add dev D parent 1:1 pfifo limit 100000",
            "tc qdisc add dev D parent 1:2 pfifo limit 100000",
            "tc qdisc add dev D parent 1:3 pfifo limit 100000",
            "tc filter add dev D parent 1: protocol all prio 1 u32 match ip protocol 6 0xff flowid 1:3",
        ],
    )],
    samples: &[
        Sample::new(
            "ets",
            &[
                "tc qdisc add dev D root handle 1: ets bands 4 strict 1 quanta 3000 1500 priomap 0 1 2 3",
                "tc qdisc add dev D parent 1:1 pfifo limit 5",
                "tc qdisc add dev D parent 1:3 handle 30: fq_codel limit 20",
                "tc filter add dev D parent 1: protocol all prio 1 u32 match ip protocol 17 0xff flowid 1:2",
            ],
        ),
        Sample::new(
            "ets_quanta",
            &[
                "tc qdisc add dev D root handle 1: ets quanta 1000 2000 4000",
                "tc qdisc add dev D parent 1:1 pfifo limit 4",
                "tc qdisc add dev D parent 1:3 bfifo limit 6000",
            ],
        ),
    ],
};

/// The keys of an `ets` table in the configuration (tc-ets(8)): the words
/// `ets_parse_opt` reads, `quanta` and `priomap` as their lists. A band's
/// `quantum` is a `tc class change` of a class the qdisc made, which the
/// table's classes (`tc class add`) cannot say: quanta set them.
static TABLE: KeyTable = KeyTable::qdisc(&[
    Key::opt("bands", Value::Count),
    Key::opt("strict", Value::Count),
    Key::opt("quanta", Value::Words),
    Key::opt("priomap", Value::Words),
]);

const USAGE: &str =
    "Usage: ... ets [bands NUMBER] [strict NUMBER] [quanta Q1 Q2...] [priomap P1 P2...]";
const CLASS_USAGE: &str = "Usage: ... ets [quantum Q1]";

/// `get_unsigned(.., 10)`: a whole decimal word that fits 32 bits.
fn unsigned(word: &str) -> Option<u32> {
    word.parse::<u32>().ok()
}

/// `parse_quantum`: a whole number above 0.
fn quantum(word: &str) -> Result<u32, TcError> {
    match unsigned(word) {
        None => Err(TcError::new(format!(
            "Illegal \"quanta\" element\n(\"{word}\" is not a whole number of bytes)"
        ))),
        Some(0) => Err(TcError::new("\"quanta\" must be > 0")),
        Some(q) => Ok(q),
    }
}

/// `parse_nbands`: a count of bands, at most 16.
fn nbands(word: &str, what: &str) -> Result<u8, TcError> {
    let n = unsigned(word).ok_or_else(|| {
        TcError::new(format!(
            "Illegal \"{what}\"\n(\"{word}\" is not a whole number)"
        ))
    })?;
    if n > u32::from(TCQ_ETS_MAX_BANDS) {
        return Err(TcError::new(format!(
            "The number of \"{what}\" must be <= {TCQ_ETS_MAX_BANDS}"
        )));
    }
    Ok(n as u8)
}

/// Which list the words after `quanta` or `priomap` go to.
#[derive(PartialEq)]
enum Mode {
    Keyword,
    Quanta,
    Priomap,
}

/// `ets_parse_opt`.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    let (mut bands, mut strict) = (0u8, 0u8);
    let mut quanta: Vec<u32> = Vec::new();
    let mut priomap: Vec<u8> = Vec::new();
    let mut mode = Mode::Keyword;
    let duplicate = |what: &str| TcError::new(format!("Duplicate \"{what}\""));
    while let Some(word) = t.next() {
        match word {
            "bands" | "strict" => {
                let slot = if word == "bands" {
                    &mut bands
                } else {
                    &mut strict
                };
                if *slot != 0 {
                    return Err(duplicate(word));
                }
                let v = t.value(|| incomplete(word))?;
                *slot = nbands(v, word)?;
                mode = Mode::Keyword;
            }
            "quanta" if !quanta.is_empty() => return Err(duplicate(word)),
            "priomap" if !priomap.is_empty() => return Err(duplicate(word)),
            "quanta" | "priomap" => {
                let v = t.value(|| incomplete(word))?;
                mode = if word == "quanta" {
                    Mode::Quanta
                } else {
                    Mode::Priomap
                };
                push(&mode, v, &mut quanta, &mut priomap)?;
            }
            "help" => return Err(TcError::new(USAGE)),
            _ if mode != Mode::Keyword => push(&mode, word, &mut quanta, &mut priomap)?,
            _ => return Err(TcError::new(format!("What is \"{word}\"?\n{USAGE}"))),
        }
    }
    if bands == 0 {
        // C's `nbands = nquanta + nstrict` into a __u8.
        bands = (quanta.len() + usize::from(strict)) as u8;
    }
    if bands == 0 {
        return Err(TcError::new(format!(
            "One of \"bands\", \"quanta\" or \"strict\" needs to be specified\n{USAGE}"
        )));
    }
    if usize::from(strict) + quanta.len() > usize::from(bands) {
        return Err(TcError::new(format!(
            "Not enough total bands to cover all the strict bands and quanta\n{USAGE}"
        )));
    }
    if priomap.iter().any(|&b| b >= bands) {
        return Err(TcError::new("\"priomap\" element is out of bounds"));
    }
    Ok(QdiscOptions::Ets(EtsOptions {
        bands: Some(bands),
        strict: (strict > 0).then_some(strict),
        quanta,
        priomap,
    }))
}

/// One element of the list `mode` names (`parse_quantum:`,
/// `parse_priomap:`).
fn push(
    mode: &Mode,
    word: &str,
    quanta: &mut Vec<u32>,
    priomap: &mut Vec<u8>,
) -> Result<(), TcError> {
    if *mode == Mode::Quanta {
        quanta.push(quantum(word)?);
        return Ok(());
    }
    let band = unsigned(word).ok_or_else(|| {
        TcError::new(format!(
            "Illegal \"priomap\" element\n(\"{word}\" is not a band number)"
        ))
    })?;
    if priomap.len() > TC_PRIO_MAX as usize {
        return Err(TcError::new(format!(
            "\"priomap\" index cannot be higher than {TC_PRIO_MAX}"
        )));
    }
    // tc keeps the priomap in bytes.
    priomap.push(band as u8);
    Ok(())
}

/// `ets_parse_copt`: `quantum Q`, once.
fn parse_class(t: &mut Tokens) -> Result<ClassOptions, TcError> {
    let mut o = EtsClassOptions::default();
    while let Some(word) = t.next() {
        match word {
            "quantum" if o.quantum.is_some() => return Err(TcError::new("Duplicate \"quantum\"")),
            "quantum" => o.quantum = Some(quantum(t.value(|| incomplete(word))?)?),
            "help" => return Err(TcError::new(CLASS_USAGE)),
            other => return Err(TcError::new(format!("What is \"{other}\"?\n{CLASS_USAGE}"))),
        }
    }
    Ok(ClassOptions::Ets(o))
}

/// `ets_print_opt`.
fn print(o: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::Ets(o) = o else {
        return None;
    };
    let list = |v: &[String]| v.iter().map(|x| format!(" {x}")).collect::<String>();
    let mut text = String::new();
    let mut json = JsonObj::new();
    if let Some(b) = o.bands {
        text.push_str(&format!("bands {b}"));
        json.insert("bands", json!(b));
    }
    if let Some(s) = o.strict {
        text.push_str(&format!(" strict {s}"));
        json.insert("strict", json!(s));
    }
    if !o.quanta.is_empty() {
        let q: Vec<String> = o.quanta.iter().map(u32::to_string).collect();
        text.push_str(&format!(" quanta{}", list(&q)));
        json.insert("quanta", json!(o.quanta));
    }
    let p: Vec<String> = o.priomap.iter().map(u8::to_string).collect();
    text.push_str(&format!(" priomap{}", list(&p)));
    json.insert("priomap", json!(o.priomap));
    Some(Printed::same(text, json))
}

/// `ets_print_copt`: a bandwidth-sharing band's `quantum`.
fn print_class(o: &ClassOptions) -> Option<Printed> {
    let ClassOptions::Ets(o) = o else {
        return None;
    };
    let mut json = JsonObj::new();
    let text = match o.quantum {
        Some(q) => {
            json.insert("quantum", json!(q));
            format!("quantum {q}")
        }
        None => String::new(),
    };
    Some(Printed::same(text, json))
}

#[cfg(test)]
mod tests {
    use super::super::run_on_left;
    use super::*;
    use crate::qdisc::kinds::BUILTIN;
    use crate::tc::syntax::parse_qdisc;

    fn parsed(words: &str) -> Result<QdiscOptions, String> {
        let words: Vec<&str> = words.split_whitespace().collect();
        parse_qdisc(BUILTIN, "ets", &words).map_err(|e| e.0)
    }

    fn ets(bands: u8, strict: Option<u8>, quanta: &[u32], priomap: &[u8]) -> QdiscOptions {
        QdiscOptions::Ets(EtsOptions {
            bands: Some(bands),
            strict,
            quanta: quanta.to_vec(),
            priomap: priomap.to_vec(),
        })
    }

    #[test]
    fn words_become_attributes() {
        assert_eq!(parsed("bands 3"), Ok(ets(3, None, &[], &[])));
        // bands: strict plus the quanta given.
        assert_eq!(
            parsed("strict 2 quanta 100 200"),
            Ok(ets(4, Some(2), &[100, 200], &[]))
        );
        assert_eq!(
            parsed("quanta 100 200 bands 5 priomap 4 3 strict 1"),
            Ok(ets(5, Some(1), &[100, 200], &[4, 3]))
        );
        // tc keeps priomap entries in bytes: 257 is band 1.
        assert_eq!(parsed("bands 2 priomap 257"), Ok(ets(2, None, &[], &[1])));
        // strict 0 is no strict attribute.
        assert_eq!(parsed("bands 2 strict 0"), Ok(ets(2, None, &[], &[])));
    }

    #[test]
    fn bad_words_get_tcs_messages() {
        let usage = USAGE;
        for (words, expected) in [
            ("bands 2 bands 3", "Duplicate \"bands\"".to_string()),
            ("strict 1 strict 1", "Duplicate \"strict\"".into()),
            ("quanta 1 quanta 2", "Duplicate \"quanta\"".into()),
            (
                "bands 2 priomap 1 priomap 1",
                "Duplicate \"priomap\"".into(),
            ),
            ("bands 17", "The number of \"bands\" must be <= 16".into()),
            ("strict 20", "The number of \"strict\" must be <= 16".into()),
            ("quanta 100 0", "\"quanta\" must be > 0".into()),
            (
                "bands 2 priomap 2",
                "\"priomap\" element is out of bounds".into(),
            ),
            (
                "",
                format!(
                    "One of \"bands\", \"quanta\" or \"strict\" needs to be specified\n{usage}"
                ),
            ),
            (
                "bands 2 strict 1 quanta 1 2",
                format!("Not enough total bands to cover all the strict bands and quanta\n{usage}"),
            ),
            ("limit 5", format!("What is \"limit\"?\n{usage}")),
            ("help", usage.into()),
        ] {
            assert_eq!(parsed(words).unwrap_err(), expected, "{words}");
        }
        let seventeen = format!("bands 2 priomap{}", " 1".repeat(17));
        assert_eq!(
            parsed(&seventeen).unwrap_err(),
            "\"priomap\" index cannot be higher than 15"
        );
        assert!(parsed("bands x")
            .unwrap_err()
            .starts_with("Illegal \"bands\"\n"));
        assert!(parsed("quanta x")
            .unwrap_err()
            .starts_with("Illegal \"quanta\" element\n"));
        assert!(parsed("bands 2 priomap x")
            .unwrap_err()
            .starts_with("Illegal \"priomap\" element\n"));
        assert!(parsed("quanta")
            .unwrap_err()
            .starts_with("Command line is not complete"));
    }

    /// tc-ets(8)'s EXAMPLE & USAGE lines print what the man page shows.
    #[test]
    fn man_page_examples_show_as_printed_there() {
        for (add, shown) in [
            (
                "tc qdisc add dev left root handle 1: ets bands 8 priomap 7 6 5 4 3 2 1 0",
                "qdisc ets 1: root refcnt 2 bands 8 quanta 1514 1514 1514 1514 1514 1514 1514 1514 priomap 7 6 5 4 3 2 1 0 7 7 7 7 7 7 7 7 \n",
            ),
            (
                "tc qdisc add dev left root handle 1: ets strict 8 priomap 7 6 5 4 3 2 1 0",
                "qdisc ets 1: root refcnt 2 bands 8 strict 8 priomap 7 6 5 4 3 2 1 0 7 7 7 7 7 7 7 7 \n",
            ),
            (
                "tc qdisc add dev left root handle 1: ets strict 3 quanta 3500 3000 2500 priomap 0 1 1 1 2 3 4 5",
                "qdisc ets 1: root refcnt 2 bands 6 strict 3 quanta 3500 3000 2500 priomap 0 1 1 1 2 3 4 5 5 5 5 5 5 5 5 5 \n",
            ),
            (
                "tc qdisc add dev left root handle 1: ets bands 8 strict 3 priomap 3 4 0 1 2 5 6 7",
                "qdisc ets 1: root refcnt 2 bands 8 strict 3 quanta 1514 1514 1514 1514 1514 priomap 3 4 0 1 2 5 6 7 7 7 7 7 7 7 7 7 \n",
            ),
        ] {
            let out = run_on_left(&[add, "tc qdisc show dev left"]).unwrap().unwrap();
            assert_eq!(out, shown, "{add}");
        }
        let out = run_on_left(&[
            "tc qdisc add dev left root handle 1: ets bands 8 priomap 7 6 5 4 3 2 1 0",
            "tc class change dev left classid 1:1 ets quantum 2650",
            "tc qdisc show dev left",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            out,
            "qdisc ets 1: root refcnt 2 bands 8 quanta 2650 1514 1514 1514 1514 1514 1514 1514 priomap 7 6 5 4 3 2 1 0 7 7 7 7 7 7 7 7 \n"
        );
    }

    #[test]
    fn classes_and_json_print_as_tc_does() {
        let setup = "tc qdisc add dev left root handle 1: ets strict 1 quanta 3000";
        let out = run_on_left(&[setup, "tc class show dev left"])
            .unwrap()
            .unwrap();
        assert_eq!(
            out,
            "class ets 1:1 root \nclass ets 1:2 root quantum 3000 \n"
        );
        let out = run_on_left(&[setup, "tc -j qdisc show dev left"])
            .unwrap()
            .unwrap();
        assert!(
            out.contains(r#""options":{"bands":2,"strict":1,"quanta":[3000],"priomap":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}"#),
            "{out}"
        );
        let out = run_on_left(&[setup, "tc -s class show dev left"])
            .unwrap()
            .unwrap();
        assert!(
            out.starts_with("class ets 1:1 root \n Sent 0 bytes 0 pkt"),
            "{out}"
        );
        for (line, expected) in [
            (
                "tc class change dev left classid 1:1 ets quantum 10",
                "Error: Strict bands do not have a configurable quantum.",
            ),
            (
                "tc class add dev left parent 1: classid 1:5 ets quantum 10",
                "Error: Fine-grained class addition and removal is not supported.",
            ),
            (
                "tc qdisc change dev left root handle 1: ets bands 2 strict 1 quanta 10 20",
                "Not enough total bands to cover all the strict bands and quanta",
            ),
        ] {
            let e = run_on_left(&[setup, line]).unwrap_err().0;
            assert!(e.starts_with(expected), "{line}: {e}");
        }
    }

    /// `tc -d -j qdisc show` and `tc -s class show` of an ETS: the options
    /// object of `ets_print_opt`, and each band's child's counters, no
    /// xstats.
    #[test]
    fn details_and_stats_print_as_tc_does() {
        let setup = "tc qdisc add dev left root handle 1: ets quanta 1000 2000";
        let out = run_on_left(&[setup, "tc -d -j qdisc show dev left"])
            .unwrap()
            .unwrap();
        assert!(
            out.contains(r#""kind":"ets","handle":"1:","root":true,"refcnt":2,"options":{"bands":2,"quanta":[1000,2000],"priomap":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}"#),
            "{out}"
        );
        let out = run_on_left(&[setup, "tc -s class show dev left"])
            .unwrap()
            .unwrap();
        assert_eq!(
            out,
            "class ets 1:1 root quantum 1000 \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\nclass ets 1:2 root quantum 2000 \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\n"
        );
    }
}
