//! prio's tc syntax (iproute2 tc/q_prio.c): `bands NUMBER` and `priomap
//! P1 P2 ...` (up to 16 bands, each at most `bands` as tc checks it; the
//! kernel's `prio_tune` then refuses a band that is not below `bands`),
//! `multiqueue` (sent as `TCA_PRIO_MQ`, which the kernel's `prio_tune`
//! never reads), into the `tc_prio_qopt` that starts as 3 bands and
//! pfifo_fast's priomap. The printer is pfifo_fast's (`prio_print_opt`);
//! the classes, one per band, take no options.

use super::pfifo_fast::print_prio_qopt;
use crate::qdisc::prio::{DEFAULT_OPTIONS, TC_PRIO_MAX};
use crate::qdisc::QdiscOptions;
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::{replace_root, Bench, Printed, Sample, Syntax};
use crate::tc::tokens::{incomplete, Tokens};
use crate::tc::TcError;

/// prio's entry in `crate::qdisc::kinds::BUILTIN`.
pub static SYNTAX: Syntax = Syntax {
    kind: "prio",
    qdisc: parse,
    class: None,
    print,
    print_class: |_| None,
    example: Some(|dir, _| vec![format!("{} handle 1: prio", replace_root(dir))]),
    table: Some(&TABLE),
    trailing_space: false,
    xstats: None,
    benches: &[Bench::new(
        "prio",
        &[
            "tc qdisc add dev D root handle 1: prio",
            "tc qdisc add dev D parent 1:1 pfifo limit 100000",
            "tc qdisc add dev D parent 1:2 pfifo limit 100000",
            "tc qdisc add dev D parent 1:3 pfifo limit 100000",
            "tc filter add dev D parent 1: protocol all prio 1 u32 match ip protocol 6 0xff flowid 1:3",
        ],
    )],
    samples: &[
        Sample::new(
            "prio",
            &[
                "tc qdisc add dev D root handle 1: prio",
                "tc qdisc add dev D parent 1:1 pfifo limit 5",
                "tc qdisc add dev D parent 1:2 handle 20: fq_codel limit 20",
                "tc qdisc add dev D parent 1:3 bfifo limit 6000",
                "tc filter add dev D parent 1: protocol all prio 1 u32 match ip protocol 17 0xff flowid 1:1",
            ],
        ),
        Sample::new(
            "prio_bands",
            &[
                "tc qdisc add dev D root handle 1: prio bands 5 priomap 4 3 2 1 0 0 1 2 3 4 4 3 2 1 0 0",
                "tc qdisc add dev D parent 1:1 pfifo limit 4",
                "tc qdisc add dev D parent 1:5 pfifo limit 4",
            ],
        ),
    ],
};

/// The keys of a `prio` table in the configuration (tc-prio(8)): the words
/// `prio_parse_opt` reads, `priomap` as its list of bands.
static TABLE: KeyTable = KeyTable::qdisc(&[
    Key::opt("bands", Value::Count),
    Key::opt("priomap", Value::Words),
    Key::opt(
        "multiqueue",
        Value::Flag {
            on: "multiqueue",
            off: None,
        },
    ),
]);

const USAGE: &str = "Usage: ... prio bands NUMBER priomap P1 P2...[multiqueue]";

/// `prio_parse_opt`.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    let mut o = DEFAULT_OPTIONS;
    let mut priomap_mode = false;
    let mut idx = 0usize;
    while let Some(word) = t.next() {
        match word {
            "bands" => {
                // tc prints its usage for bands after a priomap, and goes on.
                if priomap_mode {
                    t.notice(USAGE);
                }
                let v = t.value(|| incomplete("bands"))?;
                // get_integer: a C int, in decimal.
                let bands = v.parse::<i32>().map_err(|_| {
                    TcError::new(format!(
                        "Illegal \"bands\"\n(\"{v}\" is not a whole number; prio takes 2..16)"
                    ))
                })?;
                o.bands = bands as u32;
            }
            "priomap" if priomap_mode => {
                return Err(TcError::new("Error: duplicate priomap"));
            }
            "priomap" => priomap_mode = true,
            "multiqueue" => {}
            "help" => return Err(TcError::new(USAGE)),
            _ if !priomap_mode => {
                return Err(TcError::new(format!("What is \"{word}\"?\n{USAGE}")));
            }
            _ => {
                let band = word.parse::<u32>().map_err(|_| {
                    TcError::new(format!(
                        "Illegal \"priomap\" element\n(\"{word}\" is not a band number)"
                    ))
                })?;
                if band > o.bands {
                    return Err(TcError::new(format!(
                        "\"priomap\" element is out of bands\n(band {band} with bands {})",
                        o.bands as i32
                    )));
                }
                if idx > TC_PRIO_MAX as usize {
                    return Err(TcError::new(format!(
                        "\"priomap\" index > TC_PRIO_MAX={TC_PRIO_MAX}\n(the priomap has 16 \
                         entries, one per priority 0..15; \"{word}\" is the 17th)"
                    )));
                }
                // tc_prio_qopt's priomap is of bytes.
                o.priomap[idx] = band as u8;
                idx += 1;
            }
        }
    }
    Ok(QdiscOptions::Prio(o))
}

fn print(o: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::Prio(o) = o else {
        return None;
    };
    Some(print_prio_qopt(o))
}

#[cfg(test)]
mod tests {
    use super::super::run_on_left;
    use crate::qdisc::kinds::BUILTIN;
    use crate::qdisc::prio::PrioOptions;
    use crate::qdisc::QdiscOptions;
    use crate::tc::syntax::parse_qdisc;

    fn parsed(words: &str) -> Result<QdiscOptions, String> {
        let words: Vec<&str> = words.split_whitespace().collect();
        parse_qdisc(BUILTIN, "prio", &words).map_err(|e| e.0)
    }

    fn prio(bands: u32, priomap: [u8; 16]) -> QdiscOptions {
        QdiscOptions::Prio(PrioOptions { bands, priomap })
    }

    const DEFAULT_MAP: [u8; 16] = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];

    #[test]
    fn words_become_tc_prio_qopt() {
        assert_eq!(parsed(""), Ok(prio(3, DEFAULT_MAP)));
        // Entries not given keep the initial priomap's.
        assert_eq!(
            parsed("bands 5 priomap 4 3 2 1"),
            Ok(prio(5, [4, 3, 2, 1, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]))
        );
        let all = "priomap 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1";
        let map: [u8; 16] = std::array::from_fn(|i| (i % 2) as u8);
        assert_eq!(parsed(&format!("bands 2 {all}")), Ok(prio(2, map)));
        // multiqueue: an attribute prio_tune does not read.
        assert_eq!(parsed("multiqueue bands 4"), Ok(prio(4, DEFAULT_MAP)));
        // tc checks `band > bands`: a band equal to bands is the kernel's
        // to refuse.
        assert_eq!(
            parsed("bands 2 priomap 2"),
            Ok(prio(2, [2, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]))
        );
    }

    #[test]
    fn bad_words_get_tcs_messages() {
        for (words, expected) in [
            (
                "bands x",
                "Illegal \"bands\"\n(\"x\" is not a whole number; prio takes 2..16)",
            ),
            (
                "limit 5",
                "What is \"limit\"?\nUsage: ... prio bands NUMBER priomap P1 P2...[multiqueue]",
            ),
            (
                "priomap 0 x",
                "Illegal \"priomap\" element\n(\"x\" is not a band number)",
            ),
            (
                "priomap 4",
                "\"priomap\" element is out of bands\n(band 4 with bands 3)",
            ),
            ("priomap 1 priomap", "Error: duplicate priomap"),
            (
                "help",
                "Usage: ... prio bands NUMBER priomap P1 P2...[multiqueue]",
            ),
        ] {
            assert_eq!(parsed(words).unwrap_err(), expected, "{words}");
        }
        let seventeen = format!("priomap{}", " 1".repeat(17));
        assert!(parsed(&seventeen)
            .unwrap_err()
            .starts_with("\"priomap\" index > TC_PRIO_MAX=15\n"));
        assert!(parsed("bands")
            .unwrap_err()
            .starts_with("Command line is not complete"));
    }

    #[test]
    fn kernel_refusals_name_the_value() {
        for (line, says) in [
            ("bands 17", "prio: bands 17: allowed 2..16 (TCQ_PRIO_BANDS)"),
            ("bands 1", "prio: bands 1: allowed 2..16"),
            ("bands -1", "prio: bands -1: allowed 2..16"),
            (
                "bands 2",
                "prio: priomap entry 1 is band 2: with bands 2 each entry must be 0..1",
            ),
            ("bands 3 priomap 3", "prio: priomap entry 0 is band 3"),
        ] {
            let e = run_on_left(&[&format!("tc qdisc add dev left root handle 1: prio {line}")])
                .unwrap_err();
            assert!(
                e.0.starts_with("RTNETLINK answers: Invalid argument"),
                "{line}: {}",
                e.0
            );
            assert!(e.0.contains(says), "{line}: {}", e.0);
        }
    }

    #[test]
    fn show_prints_like_tc() {
        let add = "tc qdisc add dev left root handle 1: prio";
        let out = run_on_left(&[add, "tc qdisc show dev left"])
            .unwrap()
            .unwrap();
        assert_eq!(
            out,
            "qdisc prio 1: root refcnt 2 bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1\n"
        );
        let out = run_on_left(&[
            "tc qdisc add dev left root handle 1: prio bands 4 priomap 3 3 2 2 1 1 0 0",
            "tc qdisc add dev left parent 1:2 handle 20: pfifo limit 10",
            "tc qdisc show dev left",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            out,
            "qdisc prio 1: root refcnt 2 bands 4 priomap 3 3 2 2 1 1 0 0 1 1 1 1 1 1 1 1\n\
             qdisc pfifo 20: parent 1:2 limit 10p\n"
        );
        let json = run_on_left(&[add, "tc -j qdisc show dev left"])
            .unwrap()
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v[0]["kind"], "prio");
        assert_eq!(
            v[0]["options"],
            serde_json::json!({"bands": 3, "priomap": DEFAULT_MAP, "multiqueue": false})
        );
        let detail = run_on_left(&[add, "tc -d qdisc show dev left"])
            .unwrap()
            .unwrap();
        assert!(
            detail.ends_with("bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1\n"),
            "{detail}"
        );
    }

    #[test]
    fn classes_show_one_per_band() {
        let out = run_on_left(&[
            "tc qdisc add dev left root handle 1: prio",
            "tc qdisc add dev left parent 1:3 handle 30: pfifo",
            "tc class show dev left",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            out,
            "class prio 1:1 parent 1: \nclass prio 1:2 parent 1: \nclass prio 1:3 parent 1: leaf 30: \n"
        );
        // prio's class ops have no change: tc class add of a new band fails.
        let e = run_on_left(&[
            "tc qdisc add dev left root handle 1: prio",
            "tc class add dev left parent 1: classid 1:4",
        ])
        .unwrap_err();
        assert!(
            e.0.starts_with("RTNETLINK answers: Operation not supported"),
            "{}",
            e.0
        );
        // Options after the kind: q_prio.c has no class parser.
        let e = run_on_left(&[
            "tc qdisc add dev left root handle 1: prio",
            "tc class change dev left parent 1: classid 1:1 prio bands 2",
        ])
        .unwrap_err();
        assert!(
            e.0.starts_with("Error: Qdisc \"prio\" is classless."),
            "{}",
            e.0
        );
    }

    #[test]
    fn change_keeps_kept_bands_and_delete_restores_a_pfifo() {
        let out = run_on_left(&[
            "tc qdisc add dev left root handle 1: prio bands 4 priomap 0",
            "tc qdisc add dev left parent 1:1 handle 10: pfifo limit 9",
            "tc qdisc add dev left parent 1:4 handle 40: pfifo limit 9",
            "tc qdisc change dev left root handle 1: prio bands 2 priomap 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1",
            "tc qdisc show dev left",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            out,
            "qdisc prio 1: root refcnt 2 bands 2 priomap 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1\n\
             qdisc pfifo 10: parent 1:1 limit 9p\n"
        );
        let out = run_on_left(&[
            "tc qdisc add dev left root handle 1: prio",
            "tc qdisc add dev left parent 1:1 handle 10: pfifo limit 9",
            "tc qdisc del dev left parent 1:1 handle 10:",
            "tc class show dev left",
        ])
        .unwrap()
        .unwrap();
        assert!(out.starts_with("class prio 1:1 parent 1: \n"), "{out}");
    }
}
