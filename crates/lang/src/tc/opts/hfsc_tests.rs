//! HFSC's tc syntax against iproute2's tc/q_hfsc.c: the words of both
//! curve forms and what they send (the umax/dmax/rate conversion worked
//! out by hand), tc's messages, tc-hfsc(7)'s example lines, and `tc [-s]
//! [-d] qdisc|class show` as `hfsc_print_opt`, `hfsc_print_class_opt` and
//! `hfsc_print_xstats` print them.

use super::super::run_on_left;
use super::*;
use crate::qdisc::kinds::BUILTIN;
use crate::tc::syntax::parse_class as parse_class_words;

fn class(words: &str) -> Result<HfscClassOptions, String> {
    let words: Vec<&str> = words.split_whitespace().collect();
    match parse_class_words(BUILTIN, "hfsc", &words) {
        Ok(ClassOptions::Hfsc(o)) => Ok(o),
        Ok(other) => panic!("{other:?}"),
        Err(e) => Err(e.0),
    }
}

fn sc(m1: u32, d: u32, m2: u32) -> Option<ServiceCurve> {
    Some(ServiceCurve { m1, d, m2 })
}

fn shown(lines: &[&str]) -> String {
    run_on_left(lines).unwrap().unwrap()
}

#[test]
fn curve_words_become_service_curves() {
    let o = class("sc m1 2mbit d 10ms m2 1mbit").unwrap();
    assert_eq!(
        (o.rsc, o.fsc, o.usc),
        (
            sc(250_000, 10_000, 125_000),
            sc(250_000, 10_000, 125_000),
            None
        )
    );
    let o = class("rt m2 1mbit ls m2 3mbit ul m2 4mbit").unwrap();
    assert_eq!(
        (o.rsc, o.fsc, o.usc),
        (sc(0, 0, 125_000), sc(0, 0, 375_000), sc(0, 0, 500_000))
    );
    // d alone, and abbreviations as matches() takes them.
    let o = class("l d 5ms m2 1kbit").unwrap();
    assert_eq!(o.fsc, sc(0, 5_000, 125));
    // umax 1500b dmax 30ms rate 100kbit: 1500e6 / 30000 = 50000 bytes/s
    // above the rate (12500): concave, m1 50000 d 30ms m2 12500.
    let o = class("rt umax 1500b dmax 30ms rate 100kbit").unwrap();
    assert_eq!(o.rsc, sc(50_000, 30_000, 12_500));
    // umax 100b dmax 50ms rate 1mbit: 2000 bytes/s is below the rate:
    // convex, d = 50000 - 100e6 / 125000 = 50000 - 800 µs.
    let o = class("rt umax 100b dmax 50ms rate 1mbit").unwrap();
    assert_eq!(o.rsc, sc(0, 49_200, 125_000));
    // rate alone: a line.
    assert_eq!(class("ls rate 2mbit").unwrap().fsc, sc(0, 0, 250_000));
}

#[test]
fn class_words_are_refused_with_tcs_messages() {
    let cases = [
        ("", "HFSC: no parameters given\nUsage: ... hfsc [ [ rt SC ]"),
        (
            "ul m2 1mbit",
            "HFSC: Upper-limit Service Curve without Link-Share Service Curve\n",
        ),
        (
            "rt m1 0 d 1ms m2 0",
            "HFSC: Service Curve has two zero slopes\nHFSC: Illegal \"rt\"",
        ),
        (
            "rt m1 x d 1ms m2 1mbit",
            "HFSC: Illegal \"m1\"\nHFSC: Illegal \"rt\"",
        ),
        ("ls m2 1mbot", "HFSC: Illegal \"m2\"\nHFSC: Illegal \"ls\""),
        (
            "sc umax 1500 rate 1mbit",
            "HFSC: umax given but dmax is zero.\nHFSC: Illegal \"sc\"",
        ),
        ("sc d 10ms foo", "HFSC: Illegal \"sc\""),
        ("sc d 10ms", "Command line is not complete."),
        ("rate 1mbit", "HFSC: What is \"rate\" ?\nUsage: ... hfsc"),
        ("rt", "Command line is not complete."),
        ("rt m2", "Command line is not complete."),
        ("rt m1 1mbit", "Command line is not complete."),
        ("ls m2 40gbit", "HFSC: Illegal \"m2\""),
    ];
    for (words, needle) in cases {
        let e = class(words).unwrap_err();
        assert!(e.starts_with(needle), "{words}: {e}");
    }
}

#[test]
fn qdisc_words() {
    let q = |w: &str| {
        let words: Vec<&str> = w.split_whitespace().collect();
        crate::tc::syntax::parse_qdisc(BUILTIN, "hfsc", &words).map_err(|e| e.0)
    };
    let d = |defcls| Ok(QdiscOptions::Hfsc(HfscOptions { defcls }));
    assert_eq!(q(""), d(0));
    assert_eq!(q("default 10"), d(0x10));
    assert_eq!(q("def 0x8002"), d(0x8002));
    assert!(q("default 10 default 11")
        .unwrap_err()
        .starts_with("HFSC: Double \"default\""));
    assert!(q("default 1ffff")
        .unwrap_err()
        .starts_with("HFSC: Illegal \"default\""));
    assert!(q("limit 5")
        .unwrap_err()
        .starts_with("HFSC: What is \"limit\" ?\nUsage: ... hfsc [ default CLASSID ]"));
}

#[test]
fn man_page_examples_are_accepted() {
    // tc-hfsc(7)'s lines, on bloatbox's device.
    for lines in [
        &[
            "tc qdisc add dev left root handle 1:0 hfsc default 1",
            "tc class add dev left parent 1:0 classid 1:1 hfsc rt m2 10Mbit",
        ][..],
        &[
            "tc qdisc add dev left parent root handle 1:0 hfsc default 1",
            "tc class add dev left parent 1:0 classid 1:1 hfsc rt m2 300mbit",
        ],
        &[
            "tc qdisc add dev left root handle 1:0 hfsc default 0x8002",
            "tc class add dev left parent 1:0 classid 1:999 hfsc rt m2 50Mbit",
            "tc class add dev left parent 1:0 classid 1:1 hfsc ls m2 2Mbit ul m2 2Mbit",
        ],
    ] {
        run_on_left(lines).unwrap_or_else(|e| panic!("{lines:?}: {e}"));
    }
}

#[test]
fn show_prints_like_tc() {
    let setup = [
        "tc qdisc add dev left root handle 1: hfsc default 20",
        "tc class add dev left parent 1: classid 1:1 hfsc ls m2 4mbit ul m2 4mbit",
        "tc class add dev left parent 1:1 classid 1:10 hfsc sc m1 2mbit d 10ms m2 1mbit",
        "tc class add dev left parent 1:1 classid 1:20 hfsc rt m2 1mbit ls m2 3mbit",
    ];
    let mut lines = setup.to_vec();
    lines.push("tc qdisc show dev left");
    assert_eq!(shown(&lines), "qdisc hfsc 1: root refcnt 2 default 20 \n");
    lines.pop();
    lines.push("tc -s -d class show dev left");
    let out = shown(&lines);
    assert!(
        out.contains(
            "class hfsc 1:10 parent 1:1 sc m1 2Mbit d 10ms m2 1Mbit \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\n period 0 level 0 \n"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "class hfsc 1:20 parent 1:1 rt m1 0bit d 0us m2 1Mbit ls m1 0bit d 0us m2 3Mbit \n"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "class hfsc 1:1 parent 1: ls m1 0bit d 0us m2 4Mbit ul m1 0bit d 0us m2 4Mbit \n"
        ),
        "{out}"
    );
    assert!(out.contains("class hfsc 1: root \n"), "{out}");
    assert!(out.contains(" period 0 level 2 \n"), "{out}");
    // -j: tc's fprintf output is not JSON; bloatbox's objects stay empty.
    lines.pop();
    lines.push("tc -j class show dev left");
    let out = shown(&lines);
    assert!(
        out.contains("\"class\":\"hfsc\",\"handle\":\"1:10\",\"parent\":\"1:1\",\"options\":{}"),
        "{out}"
    );
}

#[test]
fn rt_parent_warning_and_class_refusals_through_tc() {
    let out = run_on_left(&[
        "tc qdisc add dev left root handle 1: hfsc",
        "tc class add dev left parent 1: classid 1:1 hfsc rt m2 1mbit",
        "tc class add dev left parent 1:1 classid 1:10 hfsc ls m2 1mbit",
    ]);
    let warn = format!("{out:?}");
    assert!(
        warn.contains("Forced curve change on parent 'rt' to 'sc'"),
        "{warn}"
    );
    let e = run_on_left(&[
        "tc qdisc add dev left root handle 1: hfsc",
        "tc class add dev left parent 1: classid 1:1 hfsc ls m2 1mbit",
        "tc class add dev left parent 1: classid 1:2 hfsc ls m2 1mbit",
        "tc class add dev left parent 1:1 classid 1:10 hfsc ls m2 1mbit",
        "tc class del dev left classid 1:1",
    ])
    .unwrap_err();
    assert!(e.0.starts_with("Error: HFSC class in use"), "{}", e.0);
}
