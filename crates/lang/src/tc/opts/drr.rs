//! DRR's tc syntax (iproute2 tc/q_drr.c): the qdisc takes no options
//! (`drr_parse_opt` refuses any word); a class takes `quantum SIZE`
//! (`drr_parse_class_opt`, `get_size`, into `TCA_DRR_QUANTUM`; 0 is the
//! kernel's to refuse). `drr_print_opt` prints a class's quantum and
//! `drr_print_xstats` its deficit, both as sizes (`print_size`) and both
//! with `PRINT_FP`: text only, nothing under `-j`.

use crate::dir::Dir;
use crate::qdisc::drr::DrrClassOptions;
use crate::qdisc::dump::Xstats;
use crate::qdisc::{ClassOptions, QdiscOptions};
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::{replace_root, Bench, JsonObj, Printed, Sample, Syntax, XstatsPrinter};
use crate::tc::tokens::{incomplete, Tokens};
use crate::tc::TcError;
use crate::units::{parse_size, sprint_size};
use std::fmt::Write;

/// DRR's entry in `crate::qdisc::kinds::BUILTIN`.
pub static SYNTAX: Syntax = Syntax {
    kind: "drr",
    qdisc: parse_qdisc,
    class: Some(parse_class),
    print: |o| matches!(o, QdiscOptions::None).then(Printed::default),
    print_class,
    example: Some(example),
    table: Some(&TABLE),
    trailing_space: true,
    xstats: Some(&XSTATS),
    benches: &[Bench::new(
        "drr_1000_classes",
        &["tc qdisc add dev D root handle 1: drr"],
    )
    .with_classes("tc class add dev D parent 1: classid 1:MINOR drr quantum 1514")],
    samples: &[
        Sample::new(
            "drr",
            &[
                "tc qdisc add dev D root handle 1: drr",
                "tc class add dev D parent 1: classid 1:1 drr quantum 600",
                "tc class add dev D parent 1: classid 1:2 drr",
                "tc qdisc add dev D parent 1:2 pfifo limit 5",
                "tc filter add dev D parent 1: protocol all prio 1 u32 match ip protocol 17 0xff flowid 1:2",
                "tc filter add dev D parent 1: protocol all prio 2 matchall flowid 1:1",
            ],
        ),
        Sample::new(
            "drr+fq_codel",
            &[
                "tc qdisc add dev D root handle 1: drr",
                "tc class add dev D parent 1: classid 1:1 drr quantum 3000",
                "tc class add dev D parent 1: classid 1:2 drr quantum 1000",
                "tc qdisc add dev D parent 1:1 handle 10: fq_codel limit 20",
                "tc filter add dev D parent 1: protocol all prio 1 u32 match ip protocol 6 0xff flowid 1:1",
                "tc filter add dev D parent 1: protocol all prio 2 matchall flowid 1:2",
            ],
        ),
    ],
};

/// The keys of a `drr` table in the configuration: the qdisc has none, a
/// class (`[[link.qdisc.class]]`) its `quantum`.
static TABLE: KeyTable = KeyTable {
    qdisc: &[],
    class: Some(&[Key::opt("quantum", Value::Size)]),
};

/// The qdisc menu's DRR: one class of the default quantum (the device's
/// MTU) and the default pfifo leaf, which a filter gives all traffic (DRR
/// drops what no filter classifies); add classes and filters to share.
fn example(dir: Dir, _rate_bytes_ps: u64) -> Vec<String> {
    let dev = dir.dev();
    vec![
        format!("{} handle 1: drr", replace_root(dir)),
        format!("tc class add dev {dev} parent 1: classid 1:1 drr"),
        format!("tc filter add dev {dev} parent 1: protocol all prio 1 matchall flowid 1:1"),
    ]
}

const USAGE: &str = "Usage: ... drr";
const CLASS_USAGE: &str = "Usage: ... drr quantum SIZE";

/// `drr_parse_opt`: no word is an option of DRR's qdisc.
fn parse_qdisc(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    match t.next() {
        Some("help") => Err(TcError::new(USAGE)),
        Some(word) => Err(TcError::new(format!("What is \"{word}\"?\n{USAGE}"))),
        None => Ok(QdiscOptions::None),
    }
}

/// `drr_parse_class_opt`: `quantum SIZE` (a word left out is an attribute
/// not sent; the options nest is sent even empty).
fn parse_class(t: &mut Tokens) -> Result<ClassOptions, TcError> {
    let mut o = DrrClassOptions::default();
    while let Some(word) = t.next() {
        match word {
            "quantum" => {
                let v = t.value(|| incomplete("quantum"))?;
                let bytes = parse_size(v)
                    .ok()
                    .and_then(|b| u32::try_from(b).ok())
                    .ok_or_else(|| {
                        TcError::new(format!(
                            "Illegal \"quantum\"\n(\"{v}\" is not a size of at most {} bytes)",
                            u32::MAX
                        ))
                    })?;
                o.quantum = Some(bytes);
            }
            "help" => return Err(TcError::new(CLASS_USAGE)),
            other => return Err(TcError::new(format!("What is \"{other}\"?\n{CLASS_USAGE}"))),
        }
    }
    Ok(ClassOptions::Drr(o))
}

/// `drr_print_opt` for a class: `quantum SIZE`, text only.
fn print_class(o: &ClassOptions) -> Option<Printed> {
    let ClassOptions::Drr(o) = o else {
        return None;
    };
    let text = o
        .quantum
        .map(|q| format!("quantum {}", sprint_size(q.into())))
        .unwrap_or_default();
    Some(Printed::same(text, JsonObj::new()))
}

/// `drr_print_xstats`: ` deficit SIZE `, text only.
static XSTATS: XstatsPrinter = XstatsPrinter {
    text: |out, x| match x {
        Xstats::DrrClass(s) => {
            let _ = writeln!(out, " deficit {} ", sprint_size(s.deficit.into()));
            Some(())
        }
        _ => None,
    },
    json: |x| matches!(x, Xstats::DrrClass(_)).then(JsonObj::new),
};

#[cfg(test)]
mod tests {
    use super::super::run_on_left;
    use super::*;
    use crate::qdisc::kinds::BUILTIN;
    use crate::tc::syntax::{parse_class, parse_qdisc};

    fn class(words: &str) -> Result<ClassOptions, String> {
        let words: Vec<&str> = words.split_whitespace().collect();
        parse_class(BUILTIN, "drr", &words).map_err(|e| e.0)
    }

    fn quantum(q: Option<u32>) -> ClassOptions {
        ClassOptions::Drr(DrrClassOptions { quantum: q })
    }

    #[test]
    fn words_become_attributes() {
        assert_eq!(class(""), Ok(quantum(None)));
        assert_eq!(class("quantum 1500"), Ok(quantum(Some(1500))));
        assert_eq!(class("quantum 2kb"), Ok(quantum(Some(2048))));
        // 0 is sent: the kernel refuses it.
        assert_eq!(class("quantum 0"), Ok(quantum(Some(0))));
        assert_eq!(parse_qdisc(BUILTIN, "drr", &[]), Ok(QdiscOptions::None));
    }

    #[test]
    fn bad_words_get_tcs_messages() {
        for (words, expected) in [
            (
                "weight 3",
                "What is \"weight\"?\nUsage: ... drr quantum SIZE",
            ),
            ("help", "Usage: ... drr quantum SIZE"),
        ] {
            assert_eq!(class(words).unwrap_err(), expected, "{words}");
        }
        assert!(class("quantum x")
            .unwrap_err()
            .starts_with("Illegal \"quantum\"\n"));
        assert!(class("quantum 5gb")
            .unwrap_err()
            .starts_with("Illegal \"quantum\"\n"));
        assert!(class("quantum")
            .unwrap_err()
            .starts_with("Command line is not complete"));
        let e = parse_qdisc(BUILTIN, "drr", &["quantum", "5"]).unwrap_err();
        assert_eq!(e.0, "What is \"quantum\"?\nUsage: ... drr");
    }

    /// tc-drr(8)'s EXAMPLE & USAGE lines, and the kernel's refusals through
    /// tc.
    #[test]
    fn man_page_lines_run_and_refusals_read_as_the_kernels() {
        let lines = [
            "tc qdisc add dev left handle 1 root drr",
            "tc class add dev left parent 1: classid 1:1 drr",
            "tc class add dev left parent 1: classid 1:2 drr",
            "tc filter add dev left parent 1: protocol all prio 1 matchall classid 1:1",
        ];
        assert_eq!(run_on_left(&lines).unwrap(), None);
        let mut more = lines.to_vec();
        more.push("tc class show dev left");
        let shown = run_on_left(&more).unwrap().unwrap();
        assert_eq!(
            shown,
            "class drr 1:1 root quantum 1514b \nclass drr 1:2 root quantum 1514b \n"
        );
        for (line, expected) in [
            (
                "tc class add dev left parent 1: classid 1:3 drr quantum 0",
                "Error: Specified DRR quantum cannot be zero.",
            ),
            (
                "tc class del dev left classid 1:1",
                "Error: DRR class is in use.",
            ),
            (
                "tc class add dev left parent 1: classid 1:3",
                "Error: DRR options are required for this operation.",
            ),
        ] {
            let mut l = lines.to_vec();
            l.push(line);
            let e = run_on_left(&l).unwrap_err().0;
            assert!(e.starts_with(expected), "{line}: {e}");
        }
    }

    #[test]
    fn stats_print_the_deficit_as_tc_does() {
        let lines = [
            "tc qdisc add dev left root handle 1: drr",
            "tc class add dev left parent 1: classid 1:1 drr quantum 3000",
            "tc -s class show dev left",
        ];
        let shown = run_on_left(&lines).unwrap().unwrap();
        assert_eq!(
            shown,
            "class drr 1:1 root quantum 3000b \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 \
             requeues 0) \n backlog 0b 0p requeues 0\n deficit 0b \n"
        );
        let mut j = lines.to_vec();
        j[2] = "tc -s -j class show dev left";
        let json = run_on_left(&j).unwrap().unwrap();
        assert!(
            !json.contains("quantum") && !json.contains("deficit"),
            "{json}"
        );
        let mut d = lines.to_vec();
        d[2] = "tc -d qdisc show dev left";
        assert_eq!(
            run_on_left(&d).unwrap().unwrap(),
            "qdisc drr 1: root refcnt 2 \n"
        );
    }

    /// `tc qdisc add parent 1:1` grafts a child (the class shows its
    /// leaf); `tc qdisc del` puts a default pfifo back (no leaf);
    /// `tc class del` of a class no filter points to removes it.
    #[test]
    fn graft_delete_and_class_delete_through_tc() {
        let mut lines = vec![
            "tc qdisc add dev left root handle 1: drr",
            "tc class add dev left parent 1: classid 1:1 drr",
            "tc class add dev left parent 1: classid 1:2 drr quantum 2kb",
            "tc qdisc add dev left parent 1:1 handle 10: sfq",
            "tc class show dev left",
        ];
        assert_eq!(
            run_on_left(&lines).unwrap().unwrap(),
            "class drr 1:1 root leaf 10: quantum 1514b \nclass drr 1:2 root quantum 2Kb \n"
        );
        lines.insert(4, "tc qdisc del dev left parent 1:1 handle 10:");
        lines.insert(5, "tc class del dev left classid 1:2");
        assert_eq!(
            run_on_left(&lines).unwrap().unwrap(),
            "class drr 1:1 root quantum 1514b \n"
        );
    }
}
