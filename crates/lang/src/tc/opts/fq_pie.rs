//! The `fq_pie` qdisc's tc syntax (iproute2 tc/q_fq_pie.c):
//! `fq_pie_parse_opt` reads PIE's words (`super::pie::parse_shared`) and
//! `flows`, `quantum` and `memory_limit` (sizes), `ecn_prob` (a percentage
//! below 100) into the `TCA_FQ_PIE_*` attributes
//! (`crate::qdisc::fq_pie::FqPieOptions`), sending no number given as zero;
//! `fq_pie_print_opt` prints what `fq_pie_dump` sends back and
//! `fq_pie_print_xstats` its `tc_fq_pie_xstats`.

use super::codel::{nonzero, unsigned, value};
use super::fq_codel::memory_limit;
use super::pie::{parse_shared, print_flags, print_gains, unknown, Out};
use super::pie::{KEY_ALPHA, KEY_BETA, KEY_BYTEMODE, KEY_DQ_RATE_ESTIMATOR, KEY_ECN};
use super::pie::{KEY_LIMIT, KEY_TARGET, KEY_TUPDATE};
use crate::qdisc::dump::Xstats;
use crate::qdisc::fq_pie::{FqPieOptions, FqPieXstats};
use crate::qdisc::QdiscOptions;
use crate::tc::keys::{Key, KeyTable, Value};
use crate::tc::syntax::{replace_root, Bench, JsonObj, Printed, Sample, Syntax, XstatsPrinter};
use crate::tc::tokens::Tokens;
use crate::tc::TcError;
use crate::units::{parse_size, sprint_size};
use serde_json::json;
use std::fmt::Write;

/// q_fq_pie.c `explain`.
const USAGE: &str = "Usage: ... fq_pie [ limit PACKETS ] [ flows NUMBER ]\n                  [ target TIME ] [ tupdate TIME ]\n                  [ alpha NUMBER ] [ beta NUMBER ]\n                  [ quantum BYTES ] [ memory_limit BYTES ]\n                  [ ecn_prob PERCENTAGE ] [ [no]ecn ]\n                  [ [no]bytemode ] [ [no_]dq_rate_estimator ]";

/// A size after keyword `name` (`get_size`).
fn size(name: &str, t: &mut Tokens) -> Result<u32, TcError> {
    let v = value(name, t)?;
    let bytes = parse_size(v).map_err(|e| TcError::new(format!("Illegal \"{name}\" ({e})")))?;
    Ok(memory_limit(bytes))
}

/// `fq_pie_parse_opt`.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    let mut o = FqPieOptions::default();
    while let Some(word) = t.next() {
        if parse_shared(word, t, &mut o.pie)? {
            continue;
        }
        match word {
            "flows" => o.flows = Some(unsigned("flows", t)?),
            "quantum" => o.quantum = Some(size("quantum", t)?),
            "memory_limit" => o.memory_limit = Some(size("memory_limit", t)?),
            "ecn_prob" => {
                let v = unsigned("ecn_prob", t)?;
                if v >= 100 {
                    return Err(TcError::new(format!(
                        "Illegal \"ecn_prob\" (\"{v}\": expected a percentage below 100)"
                    )));
                }
                o.ecn_prob = Some(v);
            }
            other => return Err(unknown(other, USAGE)),
        }
    }
    Ok(QdiscOptions::FqPie(options(o)))
}

/// What `fq_pie_parse_opt` sends for the values given (the words', or the
/// configuration's structured form's): no number given as zero.
pub fn options(o: FqPieOptions) -> FqPieOptions {
    FqPieOptions {
        pie: super::pie::options(o.pie),
        flows: o.flows.and_then(nonzero),
        quantum: o.quantum.and_then(nonzero),
        memory_limit: o.memory_limit.and_then(nonzero),
        ecn_prob: o.ecn_prob.and_then(nonzero),
    }
}

/// `fq_pie_print_opt`.
fn print(options: &QdiscOptions) -> Option<Printed> {
    let QdiscOptions::FqPie(o) = options else {
        return None;
    };
    let mut out = Out::new();
    if let Some(v) = o.pie.limit {
        out.uint("limit", format!("limit {v}p"), v);
    }
    if let Some(v) = o.flows {
        out.uint("flows", format!("flows {v}"), v);
    }
    print_gains(&o.pie, &mut out);
    if let Some(v) = o.quantum {
        out.uint("quantum", format!("quantum {}", sprint_size(v.into())), v);
    }
    if let Some(v) = o.memory_limit {
        let text = format!("memory_limit {}", sprint_size(v.into()));
        out.uint("memory_limit", text, v);
    }
    if let Some(v) = o.ecn_prob {
        out.uint("ecn_prob", format!("ecn_prob {v}"), v);
    }
    print_flags(&o.pie, &mut out);
    Some(out.printed())
}

/// FQ-PIE's tc syntax (it has no classes).
pub static SYNTAX: Syntax = Syntax {
    kind: "fq_pie",
    qdisc: parse,
    class: None,
    print,
    print_class: |_| None,
    example: Some(|dir, _| vec![format!("{} fq_pie", replace_root(dir))]),
    table: Some(&TABLE),
    trailing_space: true,
    xstats: Some(&XSTATS),
    benches: &[Bench::new("fq_pie", &["tc qdisc add dev D root fq_pie"])],
    samples: &[
        Sample::new(
            "fq_pie",
            &["tc qdisc add dev D root fq_pie limit 24 flows 16 target 1ms tupdate 2ms"],
        ),
        Sample::new(
            "fq_pie ecn dq_rate_estimator",
            &["tc qdisc add dev D root fq_pie limit 64 flows 8 quantum 300 memory_limit 20000 ecn ecn_prob 50 bytemode dq_rate_estimator"],
        ),
    ],
};

/// The keys of an `fq_pie` table in the configuration (tc-fq_pie(8)).
static TABLE: KeyTable = KeyTable::qdisc(&[
    KEY_LIMIT,
    Key::opt("flows", Value::Count),
    KEY_TARGET,
    KEY_TUPDATE,
    KEY_ALPHA,
    KEY_BETA,
    Key::opt("quantum", Value::Size),
    Key::opt("memory_limit", Value::Size),
    Key::opt("ecn_prob", Value::Count),
    KEY_ECN,
    KEY_BYTEMODE,
    KEY_DQ_RATE_ESTIMATOR,
]);

/// `fq_pie_print_xstats`: `tc_fq_pie_xstats`.
static XSTATS: XstatsPrinter = XstatsPrinter {
    text: |out, x| match x {
        Xstats::FqPie(s) => {
            fq_pie_text(out, s);
            Some(())
        }
        _ => None,
    },
    json: |x| {
        let Xstats::FqPie(s) = x else { return None };
        let mut xj = JsonObj::new();
        for (name, v) in fields(s) {
            xj.insert(name, json!(v));
        }
        Some(xj)
    },
};

/// The counters in the order and under the names tc prints them.
fn fields(s: &FqPieXstats) -> [(&'static str, u32); 9] {
    [
        ("pkts_in", s.packets_in),
        ("overlimit", s.overlimit),
        ("overmemory", s.overmemory),
        ("dropped", s.dropped),
        ("ecn_mark", s.ecn_mark),
        ("new_flow_count", s.new_flow_count),
        ("new_flows_len", s.new_flows_len),
        ("old_flows_len", s.old_flows_len),
        ("memory_used", s.memory_usage),
    ]
}

fn fq_pie_text(out: &mut String, s: &FqPieXstats) {
    let f = fields(s);
    for (i, (name, v)) in f.iter().enumerate() {
        let sep = match i {
            0 => "  ",
            5 => "\n  ",
            _ => " ",
        };
        let _ = write!(out, "{sep}{name} {v}");
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dir::Dir;
    use crate::qdisc::kinds::BUILTIN;
    use crate::tc::syntax::parse_qdisc;

    fn parsed(args: &str) -> Result<FqPieOptions, TcError> {
        let words: Vec<&str> = args.split_whitespace().collect();
        match parse_qdisc(BUILTIN, "fq_pie", &words)? {
            QdiscOptions::FqPie(o) => Ok(o),
            other => panic!("fq_pie parsed {other:?}"),
        }
    }

    fn err(args: &str) -> String {
        parsed(args).err().unwrap().0
    }

    use super::super::run_on_left as run;

    fn shown(lines: &[&str]) -> String {
        run(lines).unwrap().unwrap()
    }

    #[test]
    fn the_man_pages_lines_show_as_tc_prints_them() {
        // tc-fq_pie(8)'s examples (tupdate 15 ms is 4 jiffies of HZ 250).
        let defaults = "limit 10240p flows 1024 target 15ms tupdate 16ms alpha 2 beta 20 quantum 1514b memory_limit 32Mb ecn_prob 10";
        assert_eq!(
            shown(&[
                "tc qdisc add dev left root fq_pie",
                "tc -s qdisc show dev left"
            ]),
            format!(
                "qdisc fq_pie 8001: root refcnt 2 {defaults} \n \
                 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n \
                 backlog 0b 0p requeues 0\n  \
                 pkts_in 0 overlimit 0 overmemory 0 dropped 0 ecn_mark 0\n  \
                 new_flow_count 0 new_flows_len 0 old_flows_len 0 memory_used 0\n"
            )
        );
        assert_eq!(
            shown(&[
                "tc qdisc add dev left root fq_pie dq_rate_estimator",
                "tc qdisc show dev left"
            ]),
            format!("qdisc fq_pie 8001: root refcnt 2 {defaults} dq_rate_estimator \n")
        );
    }

    #[test]
    fn options_parse_and_print_with_json() {
        let add = "tc qdisc add dev left root fq_pie limit 100 flows 16 target 5ms tupdate 8ms alpha 4 beta 10 quantum 3000 memory_limit 1mb ecn_prob 25 ecn bytemode";
        assert_eq!(
            shown(&[add, "tc -d qdisc show dev left"]),
            "qdisc fq_pie 8001: root refcnt 2 limit 100p flows 16 target 5ms tupdate 8ms alpha 4 beta 10 quantum 3000b memory_limit 1Mb ecn_prob 25 ecn bytemode \n"
        );
        assert_eq!(
            shown(&[add, "tc -j qdisc show dev left"]),
            "[{\"kind\":\"fq_pie\",\"handle\":\"8001:\",\"root\":true,\"refcnt\":2,\"options\":{\"limit\":100,\
             \"flows\":16,\"target\":5000,\"tupdate\":8000,\"alpha\":4,\"beta\":10,\"quantum\":3000,\
             \"memory_limit\":1048576,\"ecn_prob\":25,\"ecn\":true,\"bytemode\":true}}]\n"
        );
        let j = shown(&[add, "tc -s -j qdisc show dev left"]);
        assert!(
            j.ends_with(
                "\"pkts_in\":0,\"overlimit\":0,\"overmemory\":0,\"dropped\":0,\"ecn_mark\":0,\
                 \"new_flow_count\":0,\"new_flows_len\":0,\"old_flows_len\":0,\"memory_used\":0}]\n"
            ),
            "{j}"
        );
        // Zeros are not sent.
        assert_eq!(
            parsed("flows 0 quantum 0 memory_limit 0 ecn_prob 0 limit 0").unwrap(),
            FqPieOptions::default()
        );
    }

    #[test]
    fn refusals_read_as_tc_and_the_kernel_print_them() {
        assert!(err("ecn_prob 100").starts_with("Illegal \"ecn_prob\""));
        assert_eq!(parsed("ecn_prob 99").unwrap().ecn_prob, Some(99));
        assert!(err("alpha 33").starts_with("Illegal \"alpha\""));
        assert!(err("quantum lots").starts_with("Illegal \"quantum\""));
        assert!(err("flows x").starts_with("Illegal \"flows\""));
        assert!(err("drop_batch 3").starts_with("What is \"drop_batch\"?\n"));
        assert_eq!(err("help"), USAGE);
        let e = run(&["tc qdisc add dev left root fq_pie flows 65537"]).unwrap_err();
        assert_eq!(
            e.0,
            "Error: sch_fq_pie: Number of flows must range in [1..65536]."
        );
        let e = run(&["tc qdisc add dev left root fq_pie quantum 2mb"]).unwrap_err();
        assert!(e.0.starts_with("Error: integer out of range."), "{e}");
        let e = run(&[
            "tc qdisc add dev left root fq_pie",
            "tc qdisc change dev left root fq_pie flows 16",
        ])
        .unwrap_err();
        assert_eq!(e.0, "Error: sch_fq_pie: Number of flows cannot be changed.");
    }

    #[test]
    fn the_menu_line_samples_and_benches_build() {
        let line = &(SYNTAX.example.unwrap())(Dir::LeftToRight, 0)[0];
        assert_eq!(line, "tc qdisc replace dev left root fq_pie");
        let lines = SYNTAX.samples.iter().flat_map(|s| s.lines);
        for l in lines.chain(SYNTAX.benches.iter().flat_map(|b| b.lines)) {
            let l = l.replace(" D ", " left ");
            assert!(run(&[&l]).is_ok(), "{l}");
        }
        let x = FqPieXstats {
            packets_in: 105_311,
            dropped: 24,
            new_flow_count: 7332,
            old_flows_len: 4,
            memory_usage: 108_800,
            ..FqPieXstats::default()
        };
        let mut out = String::new();
        fq_pie_text(&mut out, &x);
        assert_eq!(
            out,
            "  pkts_in 105311 overlimit 0 overmemory 0 dropped 24 ecn_mark 0\n  new_flow_count 7332 new_flows_len 0 old_flows_len 4 memory_used 108800\n"
        );
    }
}
