//! PIE's tc syntax against iproute2: tc-pie(8)'s lines accepted and shown
//! as tc/q_pie.c prints what net/sched/sch_pie.c dumps (the times as the
//! kernel converts them: tupdate in jiffies of HZ 250), tc's refusals, and
//! `tc [-s] [-d] [-j] qdisc show` byte for byte.

use super::*;
use crate::dir::Dir;
use crate::qdisc::kinds::BUILTIN;
use crate::tc::syntax::parse_qdisc;

fn parsed(args: &str) -> Result<PieOptions, TcError> {
    let words: Vec<&str> = args.split_whitespace().collect();
    match parse_qdisc(BUILTIN, "pie", &words)? {
        QdiscOptions::Pie(o) => Ok(o),
        other => panic!("pie parsed {other:?}"),
    }
}

fn err(args: &str) -> String {
    parsed(args).err().unwrap().0
}

/// A fresh left device after `lines`; the output of the last line.
fn shown(lines: &[&str]) -> String {
    super::super::run_on_left(lines).unwrap().unwrap()
}

#[test]
fn the_man_pages_lines_show_as_tc_prints_them() {
    // tc-pie(8)'s examples; tupdate 15 ms is 4 jiffies (16 ms), 30 ms is
    // 8 (32 ms), as the man page shows.
    for (args, options) in [
        ("", "limit 1000p target 15ms tupdate 16ms alpha 2 beta 20 "),
        (
            "dq_rate_estimator",
            "limit 1000p target 15ms tupdate 16ms alpha 2 beta 20 dq_rate_estimator ",
        ),
        (
            "limit 100 target 20ms tupdate 30ms ecn",
            "limit 100p target 20ms tupdate 32ms alpha 2 beta 20 ecn ",
        ),
        (
            "limit 100 target 50ms tupdate 30ms bytemode",
            "limit 100p target 50ms tupdate 32ms alpha 2 beta 20 bytemode ",
        ),
    ] {
        let add = format!("tc qdisc add dev left root pie {args}");
        assert_eq!(
            shown(&[&add, "tc qdisc show dev left"]),
            format!("qdisc pie 8001: root refcnt 2 {options}\n")
        );
    }
}

#[test]
fn stats_detail_and_json_print_as_iproute2() {
    let add = "tc qdisc add dev left root pie limit 100 alpha 4 beta 8 ecn";
    assert_eq!(
        shown(&[add, "tc -s -d qdisc show dev left"]),
        "qdisc pie 8001: root refcnt 2 limit 100p target 15ms tupdate 16ms alpha 4 beta 8 ecn \n \
         Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n \
         backlog 0b 0p requeues 0\n  \
         prob 0 delay 0us\n  \
         pkts_in 0 overlimit 0 dropped 0 maxq 0 ecn_mark 0\n"
    );
    assert_eq!(
        shown(&[add, "tc -j qdisc show dev left"]),
        "[{\"kind\":\"pie\",\"handle\":\"8001:\",\"root\":true,\"refcnt\":2,\"options\":{\"limit\":100,\
         \"target\":15000,\"tupdate\":16000,\"alpha\":4,\"beta\":8,\"ecn\":true}}]\n"
    );
    let j = shown(&[add, "tc -s -j qdisc show dev left"]);
    assert!(
        j.ends_with(
            "\"backlog\":0,\"qlen\":0,\"prob\":0,\"delay\":0,\"pkts_in\":0,\"overlimit\":0,\"dropped\":0,\"maxq\":0,\"ecn_mark\":0}]\n"
        ),
        "{j}"
    );
    let d = shown(&[
        "tc qdisc add dev left root pie dq_rate_estimator",
        "tc -s qdisc show dev left",
    ]);
    assert!(d.contains("  prob 0 delay 0us avg_dq_rate 0\n"), "{d}");
}

#[test]
fn xstats_print_the_probability_as_a_fraction_of_u64_max() {
    let s = PieXstats {
        // A probability of 0.6161% (tc-pie(8)'s first example).
        prob: (0.006161 * u64::MAX as f64) as u64,
        delay: 15_666,
        packets_in: 20_811,
        dropped: 80,
        maxq: 50,
        ..PieXstats::default()
    };
    let mut out = String::new();
    pie_text(&mut out, &s);
    let j = (XSTATS.json)(&Xstats::Pie(s)).unwrap();
    assert_eq!(j["prob"], json!(0.006161));
    assert_eq!(
        out,
        "  prob 0.006161 delay 15.7ms\n  pkts_in 20811 overlimit 0 dropped 80 maxq 50 ecn_mark 0\n"
    );
    let s = PieXstats {
        prob: 1 << 40,
        dq_rate_estimating: true,
        avg_dq_rate: 12_145_996,
        ..s
    };
    let mut out = String::new();
    pie_text(&mut out, &s);
    // 2^40 / (2^64 - 1) = 5.96046e-08.
    assert!(
        out.starts_with("  prob 5.96046e-08 delay 15.7ms avg_dq_rate 12145996\n"),
        "{out}"
    );
    let j = (XSTATS.json)(&Xstats::Pie(s)).unwrap();
    assert_eq!(j["avg_dq_rate"], json!(12_145_996));
    assert_eq!(j["prob"], json!(5.96046e-8));
    assert_eq!(j["delay"], json!(15_666));
}

#[test]
fn words_parse_into_the_attributes_tc_sends() {
    assert_eq!(
        parsed("limit 10 target 5ms tupdate 10ms alpha 1 beta 32 noecn nobytemode no_dq_rate_estimator")
            .unwrap(),
        PieOptions {
            limit: Some(10),
            target: Some(5000),
            tupdate: Some(10_000),
            alpha: Some(1),
            beta: Some(32),
            ecn: Some(false),
            bytemode: Some(false),
            dq_rate_estimator: Some(false),
        }
    );
    // Zeros are not sent; a bare time is µs.
    assert_eq!(
        parsed("limit 0 alpha 0 beta 0 target 0 tupdate 0").unwrap(),
        PieOptions::default()
    );
    assert_eq!(parsed("target 5").unwrap().target, Some(5));
    assert_eq!(parsed("limit 0x10").unwrap().limit, Some(16));
}

#[test]
fn refusals_read_as_tc_prints_them() {
    assert!(err("alpha 33").starts_with("Illegal \"alpha\""));
    assert!(err("beta 100").starts_with("Illegal \"beta\""));
    assert!(err("alpha -1").starts_with("Illegal \"alpha\""));
    assert!(err("limit many").starts_with("Illegal \"limit\""));
    assert!(err("target 5parsecs").starts_with("Illegal \"target\""));
    assert!(err("tupdate x").starts_with("Illegal \"tupdate\""));
    assert!(err("alpha").contains("\"alpha\" is required"));
    assert_eq!(
        err("flows 5"),
        format!("What is \"flows\"?\n{USAGE}"),
        "fq_pie's words are not pie's"
    );
    assert_eq!(err("help"), USAGE);
}

#[test]
fn the_menu_line_and_samples_parse() {
    let line = &(SYNTAX.example.unwrap())(Dir::LeftToRight, 0)[0];
    assert_eq!(line, "tc qdisc replace dev left root pie");
    assert!(!shown(&[line, "tc qdisc show dev left"]).is_empty());
    let lines = SYNTAX.samples.iter().flat_map(|s| s.lines);
    for l in lines.chain(SYNTAX.benches.iter().flat_map(|b| b.lines)) {
        let l = l.replace(" D ", " left ");
        assert!(!shown(&[&l, "tc qdisc show dev left"]).is_empty(), "{l}");
    }
}
