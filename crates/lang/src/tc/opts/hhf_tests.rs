//! hhf's tc syntax against iproute2 v6.18.0 tc/q_hhf.c: the words and
//! what tc sends for them, its messages, the kernel's refusals, and `tc
//! [-s] [-d] [-j] qdisc show` as `hhf_print_opt`, `hhf_print_xstats` and
//! tc/tc_qdisc.c print them.

use super::super::run_on_left as run;
use super::*;
use crate::qdisc::kinds::BUILTIN;
use crate::tc::syntax::parse_qdisc;

fn parsed(words: &str) -> Result<QdiscOptions, String> {
    let words: Vec<&str> = words.split_whitespace().collect();
    parse_qdisc(BUILTIN, "hhf", &words).map_err(|e| e.0)
}

fn shown(lines: &[&str]) -> String {
    run(lines).unwrap().unwrap()
}

fn refused(line: &str) -> String {
    run(&[line]).unwrap_err().0
}

#[test]
fn the_words_are_read_as_tc_reads_them() {
    assert_eq!(parsed(""), Ok(QdiscOptions::Hhf(HhfOptions::default())));
    // get_unsigned takes 0x and 0 prefixes; get_time a bare number as µs.
    assert_eq!(
        parsed(
            "limit 0x100 quantum 3000 hh_limit 010 reset_timeout 20ms admit_bytes 20000 \
             evict_timeout 500000 non_hh_weight 4"
        ),
        Ok(QdiscOptions::Hhf(HhfOptions {
            limit: Some(256),
            quantum: Some(3000),
            hh_limit: Some(8),
            reset_timeout: Some(20_000),
            admit_bytes: Some(20_000),
            evict_timeout: Some(500_000),
            non_hh_weight: Some(4),
        }))
    );
    // A zero is not sent: the kernel keeps its value.
    assert_eq!(
        parsed("quantum 0 non_hh_weight 0 limit 5"),
        Ok(QdiscOptions::Hhf(HhfOptions {
            limit: Some(5),
            ..HhfOptions::default()
        }))
    );
    assert!(parsed("limit 1k")
        .unwrap_err()
        .starts_with("Illegal \"limit\""));
    assert!(parsed("admit_bytes 128kb")
        .unwrap_err()
        .starts_with("Illegal \"admit_bytes\""));
    assert!(parsed("reset_timeout soon")
        .unwrap_err()
        .starts_with("Illegal \"reset_timeout\""));
    assert_eq!(
        parsed("flows 3").unwrap_err(),
        format!("What is \"flows\"?\n{USAGE}")
    );
    assert_eq!(parsed("help").unwrap_err(), USAGE);
    assert!(parsed("limit")
        .unwrap_err()
        .contains("\"limit\" is required"));
}

#[test]
fn the_kernel_refuses_as_hhf_change() {
    // The policy's NLA_POLICY_MAX(NLA_U32, 2048).
    assert!(refused("tc qdisc add dev left root hhf hh_limit 2049")
        .starts_with("Error: integer out of range."),);
    assert!(run(&["tc qdisc add dev left root hhf hh_limit 2048"]).is_ok());
    // quantum × non_hh_weight above INT_MAX: EINVAL without a message.
    for line in [
        "tc qdisc add dev left root hhf quantum 1073741824",
        "tc qdisc add dev left root hhf quantum 1000000 non_hh_weight 3000",
    ] {
        assert!(
            refused(line).starts_with("RTNETLINK answers: Invalid argument"),
            "{line}"
        );
    }
    // And a change refused leaves the qdisc as it was.
    let out = run(&[
        "tc qdisc add dev left root hhf limit 10",
        "tc qdisc change dev left root hhf limit 20 non_hh_weight 2000000",
    ]);
    assert!(out.is_err());
}

#[test]
fn show_prints_as_iproute2() {
    // Defaults on a 1500-byte MTU: quantum psched_mtu 1514, reset_timeout
    // HZ/25 and evict_timeout HZ dumped back in µs.
    assert_eq!(
        shown(&["tc qdisc add dev left root hhf", "tc qdisc show dev left"]),
        "qdisc hhf 8001: root refcnt 2 limit 1000p quantum 1514b hh_limit 2048 \
         reset_timeout 40ms admit_bytes 128Kb evict_timeout 1s non_hh_weight 2 \n"
    );
    // 30 ms is 7.5 jiffies of 4 ms: 8, dumped as 32 ms; 1 µs is one jiffy.
    let add = "tc qdisc add dev left root hhf limit 500 quantum 3000 hh_limit 64 \
               reset_timeout 30ms admit_bytes 20000 evict_timeout 1 non_hh_weight 4";
    assert_eq!(
        shown(&[add, "tc -s -d qdisc show dev left"]),
        "qdisc hhf 8001: root refcnt 2 limit 500p quantum 3000b hh_limit 64 \
         reset_timeout 32ms admit_bytes 20000b evict_timeout 4ms non_hh_weight 4 \n \
         Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n \
         backlog 0b 0p requeues 0\n  \
         drop_overlimit 0 hh_overlimit 0 tot_hh 0 cur_hh 0\n"
    );
    assert_eq!(
        shown(&[add, "tc -j qdisc show dev left"]),
        "[{\"kind\":\"hhf\",\"handle\":\"8001:\",\"root\":true,\"refcnt\":2,\"options\":{\
         \"limit\":500,\"quantum\":3000,\"hh_limit\":64,\"reset_timeout\":32000,\
         \"admit_bytes\":20000,\"evict_timeout\":4000,\"non_hh_weight\":4}}]\n"
    );
    let j = shown(&[add, "tc -s -j qdisc show dev left"]);
    assert!(
        j.ends_with(
            "\"backlog\":0,\"qlen\":0,\"drop_overlimit\":0,\"hh_overlimit\":0,\"tot_hh\":0,\"cur_hh\":0}]\n"
        ),
        "{j}"
    );
    // A change without words sends an empty nest: nothing changes.
    assert_eq!(
        shown(&[
            add,
            "tc qdisc change dev left root hhf",
            "tc qdisc show dev left"
        ]),
        shown(&[add, "tc qdisc show dev left"])
    );
}

#[test]
fn xstats_print_as_hhf_print_xstats() {
    let x = Xstats::Hhf(HhfXstats {
        drop_overlimit: 7,
        hh_overlimit: 1,
        hh_tot_count: 3,
        hh_cur_count: 2,
    });
    let mut out = String::new();
    crate::tc::xstats::write_text(&mut out, "hhf", &x);
    assert_eq!(out, "  drop_overlimit 7 hh_overlimit 1 tot_hh 3 cur_hh 2\n");
    let j = crate::tc::xstats::json("hhf", &x);
    assert_eq!(j["tot_hh"], json!(3));
    assert_eq!(j["cur_hh"], json!(2));
}

#[test]
fn samples_benches_and_the_menu_example_run() {
    let samples = SYNTAX.samples.iter().flat_map(|s| s.lines);
    for s in samples.chain(SYNTAX.benches.iter().flat_map(|b| b.lines)) {
        assert!(run(&[&s.replace(" D ", " left ")]).is_ok(), "{s}");
    }
    // 10 Mbit/s: a heavy hitter sends above 2.5 Mbit/s, 12500 bytes in
    // 40 ms; unlimited: 1gbit, 1.25 MB.
    assert_eq!(
        example(Dir::LeftToRight, 1_250_000),
        ["tc qdisc replace dev left root hhf admit_bytes 12500"]
    );
    assert_eq!(
        example(Dir::LeftToRight, 0),
        ["tc qdisc replace dev left root hhf admit_bytes 1250000"]
    );
    for line in example(Dir::LeftToRight, 1_250_000) {
        assert!(run(&[&line]).is_ok(), "{line}");
    }
}
