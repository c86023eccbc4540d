//! SFB's tc syntax against iproute2 v6.18.0 tc/q_sfb.c: tc's defaults
//! and its derivation of `max` and `target`, `get_prob`'s rounding, its
//! refusals, the man page's lines, and `tc [-s] [-j] qdisc|class show`
//! as `sfb_print_opt` and `sfb_print_xstats` print them.

use super::super::run_on_left as run;
use super::*;
use crate::qdisc::kinds::BUILTIN;
use crate::tc::syntax::parse_qdisc;

fn parsed(words: &str) -> Result<SfbOptions, String> {
    let words: Vec<&str> = words.split_whitespace().collect();
    match parse_qdisc(BUILTIN, "sfb", &words).map_err(|e| e.0)? {
        QdiscOptions::Sfb(o) => Ok(o),
        other => panic!("sfb parsed {other:?}"),
    }
}

fn show(lines: &[&str]) -> String {
    run(lines).unwrap().unwrap()
}

/// No words: tc's defaults (increment (65535 + 1000) / 2000 = 33,
/// decrement (65535 + 10000) / 20000 = 3), max 25 and target
/// (25 × 4 + 3) / 5 = 20, limit 0 (the kernel's tx_queue_len).
#[test]
fn tcs_defaults_and_derived_max_and_target() {
    let d = parsed("").unwrap();
    assert_eq!(
        d,
        SfbOptions {
            rehash_interval: 600_000,
            warmup_time: 60_000,
            max: 25,
            bin_size: 20,
            increment: 33,
            decrement: 3,
            limit: 0,
            penalty_rate: 10,
            penalty_burst: 20,
        }
    );
    // target 8: max (8 × 5 + 1) / 4 = 10; max 10: target (40 + 3) / 5 = 8.
    assert_eq!(parsed("target 8").map(|o| (o.max, o.bin_size)), Ok((10, 8)));
    assert_eq!(parsed("max 10").map(|o| (o.max, o.bin_size)), Ok((10, 8)));
    assert_eq!(
        parsed("max 7 target 30").map(|o| (o.max, o.bin_size)),
        Ok((7, 30))
    );
    // get_u32 base 0: hex and octal.
    assert_eq!(
        parsed("limit 0x10 penalty_burst 010").map(|o| (o.limit, o.penalty_burst)),
        Ok((16, 8))
    );
    assert_eq!(
        parsed("rehash 1000 db 0").map(|o| (o.rehash_interval, o.warmup_time)),
        Ok((1000, 0))
    );
    // get_prob: d × 65535 + 0.5 truncated; 0.5 is 32768, 1 is 65535, and
    // what follows the number is not read.
    assert_eq!(parsed("increment 0.5").map(|o| o.increment), Ok(32768));
    assert_eq!(
        parsed("increment 1 decrement 0").map(|o| (o.increment, o.decrement)),
        Ok((65535, 0))
    );
    assert_eq!(parsed("decrement 0.001x").map(|o| o.decrement), Ok(66));
}

#[test]
fn tcs_refusals() {
    for key in [
        "rehash",
        "db",
        "limit",
        "max",
        "target",
        "penalty_rate",
        "penalty_burst",
    ] {
        for bad in ["x", "-1", "4294967296", "1.5"] {
            assert_eq!(
                parsed(&format!("{key} {bad}")),
                Err(format!("Illegal \"{key}\""))
            );
        }
    }
    for key in ["increment", "decrement"] {
        for bad in ["x", "-0.1", "1.01", ""] {
            if bad.is_empty() {
                continue;
            }
            assert_eq!(
                parsed(&format!("{key} {bad}")),
                Err(format!("Illegal \"{key}\""))
            );
        }
    }
    assert_eq!(parsed("help"), Err(format!("What is \"help\"?\n{USAGE}")));
    assert_eq!(
        parsed("perturb 10"),
        Err(format!("What is \"perturb\"?\n{USAGE}"))
    );
    assert!(parsed("limit").unwrap_err().contains("limit"));
}

/// `tc qdisc show` of tc's defaults (limit 0 dumped as the device's
/// tx_queue_len 1000), `-s` with the xstats' two lines, `-j`; no class.
#[test]
fn show_prints_as_iproute2() {
    assert_eq!(
        show(&[
            "tc qdisc add dev left root handle 1: sfb",
            "tc qdisc show dev left"
        ]),
        "qdisc sfb 1: root refcnt 2 rehash 600s db 60s limit 1000p max 25p target 20p \
         increment 0.000503548 decrement 4.57771e-05 penalty_rate 10pps penalty_burst 20p \n"
    );
    let s = show(&[
        "tc qdisc add dev left root handle 1: sfb limit 50 rehash 1001 db 0",
        "tc -s qdisc show dev left",
    ]);
    assert!(
        s.starts_with("qdisc sfb 1: root refcnt 2 rehash 1s db 0us limit 50p max 25p target 20p "),
        "{s}"
    );
    assert!(
        s.ends_with(
            "  earlydrop 0 penaltydrop 0 bucketdrop 0 queuedrop 0 childdrop 0 marked 0\n  maxqlen 0 maxprob 0 avgprob 0\n"
        ),
        "{s}"
    );
    let j = show(&[
        "tc qdisc add dev left root sfb increment 0.5",
        "tc -s -j qdisc show dev left",
    ]);
    for want in [
        "\"rehash\":600000000",
        "\"db\":60000000",
        "\"limit\":1000",
        "\"target\":20",
        "\"increment\":0.500008",
        // %g's 4.57771e-05, as serde_json writes that number.
        "\"decrement\":0.0000457771",
        "\"penalty_rate\":10",
        "\"earlydrop\":0",
        "\"avgprob\":0",
    ] {
        assert!(j.contains(want), "{want} in {j}");
    }
    assert_eq!(
        show(&[
            "tc qdisc add dev left root handle 1: sfb",
            "tc class show dev left"
        ]),
        ""
    );
}

/// The xstats printer with counters: probabilities over 65535 as `%lg`.
#[test]
fn xstats_lines() {
    let x = Xstats::Sfb(SfbXstats {
        earlydrop: 1,
        penaltydrop: 2,
        bucketdrop: 3,
        queuedrop: 4,
        childdrop: 5,
        marked: 6,
        maxqlen: 7,
        maxprob: 32768,
        avgprob: 500,
    });
    let mut out = String::new();
    (XSTATS.text)(&mut out, &x).unwrap();
    assert_eq!(
        out,
        "  earlydrop 1 penaltydrop 2 bucketdrop 3 queuedrop 4 childdrop 5 marked 6\n  maxqlen 7 maxprob 0.500008 avgprob 0.00762951\n"
    );
    let j = (XSTATS.json)(&x).unwrap();
    assert_eq!(j["maxprob"], json!(0.500008));
    assert_eq!(j["avgprob"], json!(0.00762951));
    assert_eq!(j["maxqlen"], json!(7));
}

/// tc-sfb(8)'s lines (the qdisc with the defaults, a flow filter hashing
/// destinations only), the samples, and a change.
#[test]
fn man_page_lines_and_samples_run() {
    show(&[
        "tc qdisc add dev left handle 1: root sfb",
        "tc filter add dev left parent 1: handle 1 flow hash keys dst perturb 600",
        "tc filter show dev left",
    ]);
    let s = show(&[
        "tc qdisc add dev left root handle 1: sfb",
        "tc qdisc change dev left root handle 1: sfb max 40 penalty_rate 0",
        "tc qdisc show dev left",
    ]);
    assert!(s.contains(" max 40p target 32p "), "{s}");
    assert!(s.contains(" penalty_rate 0pps "), "{s}");
    for s in SYNTAX.samples {
        let lines: Vec<String> = s.lines.iter().map(|l| l.replace(" D ", " left ")).collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let r = run(&lines);
        assert!(r.is_ok(), "{}: {r:?}", s.name);
    }
    let grafted = show(&[
        "tc qdisc add dev left root handle 1: sfb",
        "tc qdisc add dev left parent 1:1 handle 10: pfifo limit 5",
        "tc qdisc show dev left",
    ]);
    assert!(
        grafted.contains("qdisc pfifo 10: parent 1:1 limit 5p"),
        "{grafted}"
    );
}
