//! RED's tc syntax against iproute2: the values tc/tc_red.c computes for
//! man-page lines (worked out by hand below from its formulas), its
//! defaults and refusals, and `tc [-s] [-d] [-j] qdisc|class show` byte
//! for byte as tc/q_red.c and tc/tc_qdisc.c print them.

use super::*;
use crate::packet::Drops;
use crate::qdisc::kinds::BUILTIN;
use crate::qdisc::tree::{DevSpec, QdiscTree};
use crate::qdisc::Qdisc;
use crate::tc::syntax::parse_qdisc;
use crate::tc::TcCommand;
use crate::time::Instant;

/// The options tc sends for `args`.
fn parsed(args: &str) -> Result<RedOptions, TcError> {
    let words: Vec<&str> = args.split_whitespace().collect();
    match parse_qdisc(BUILTIN, "red", &words)? {
        QdiscOptions::Red(o) => Ok(o),
        other => panic!("red parsed {other:?}"),
    }
}

fn err(args: &str) -> TcError {
    parsed(args).err().unwrap()
}

/// A fresh single-queue left device after `lines`; the output of the
/// last line (or its error).
fn session(lines: &[&str]) -> (QdiscTree, Result<Option<String>, TcError>) {
    let mut tree = QdiscTree::new(DevSpec::new(Dir::LeftToRight, BUILTIN)).unwrap();
    let mut out = Ok(None);
    for line in lines {
        let cmd = TcCommand::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        out = crate::tc::run(&mut tree, &cmd, Instant::ZERO, &mut Drops::new());
    }
    (tree, out)
}

fn shown(lines: &[&str]) -> String {
    session(lines).1.unwrap().unwrap()
}

/// tc-red(8)'s example: `limit 400000 min 30000 max 90000 avpkt 1000
/// burst 55 ecn adaptive bandwidth 10Mbit`.
const MAN: &str =
    "limit 400000 min 30000 max 90000 avpkt 1000 burst 55 ecn adaptive bandwidth 10Mbit";

/// The man page's line, by hand. Wlog (`tc_red_eval_ewma`): a = 55 + 1 -
/// 30000/1000 = 26; (1 - (1 - 2^-w)^55) 2^w is 15.54 for w = 4 and
/// 26.42 for w = 5, the first ≥ 26: Wlog 5. Plog (`tc_red_eval_P`):
/// 0.02 / 60000 × 2^i first exceeds 1 at i = 22 (2^21 gives 0.70, 2^22
/// 1.40). Scell_log (`tc_red_eval_idle_damping`): 1000 B at 10 Mbit/s is
/// 800 µs = 12500 ticks; lW = -ln(31/32) / 12500 = 2.5399e-6; 31 / lW =
/// 12.2e6, below 512 × 2^15 and not 512 × 2^14: Scell_log 15; Stab[i] =
/// i × 32768 × lW = 0.083228 i: 0 up to i = 12, 1 from 13, 8 at 100, 21
/// at 254; Stab[255] = 31. max_P = 0.02 × 2^32 = 85899345.92 → 85899345.
#[test]
fn the_man_pages_line_computes_as_tc_does() {
    let o = parsed(MAN).unwrap();
    assert_eq!((o.limit, o.qth_min, o.qth_max), (400_000, 30_000, 90_000));
    assert_eq!((o.wlog, o.plog, o.scell_log), (5, 22, 15));
    assert_eq!(o.max_p, Some(85_899_345));
    assert_eq!(o.flags, 0, "today's tc sends no flags in tc_red_qopt");
    assert_eq!(
        o.flags_attr,
        Some(Bitfield32 {
            value: TC_RED_ECN | TC_RED_ADAPTATIVE,
            selector: 15
        })
    );
    let stab = o.stab.unwrap();
    assert_eq!(stab.len(), 256);
    assert_eq!(
        (stab[0], stab[12], stab[13], stab[24], stab[25]),
        (0, 0, 1, 1, 2)
    );
    assert_eq!((stab[100], stab[254], stab[255]), (8, 21, 31));
    assert!(stab.windows(2).all(|w| w[0] <= w[1]));
}

/// More lines by hand. `limit 1mb min 30kb max 90kb avpkt 1500 burst 30
/// probability 0.1 bandwidth 100mbit`: a = 31 - 30720/1500 = 10.52;
/// (15/16)^30 = 0.1443 gives 13.69 ≥ 10.52 at w = 4, (7/8)^30 gives 7.85
/// at w = 3: Wlog 4. 0.1 / 61440 × 2^20 = 1.71 > 1, × 2^19 = 0.85: Plog
/// 20. 1500 B at 12.5 MB/s = 120 µs = 1875 ticks; lW = -ln(15/16) / 1875
/// = 3.442e-5; 31 / lW = 900627 < 512 × 2^11 (1048576), > 512 × 2^10:
/// Scell_log 11. max_P = 0.1 × 2^32 = 429496729.6 → 429496729.
#[test]
fn other_lines_compute_as_tc_does() {
    let o =
        parsed("limit 1mb min 30kb max 90kb avpkt 1500 burst 30 probability 0.1 bandwidth 100mbit")
            .unwrap();
    assert_eq!((o.qth_min, o.qth_max, o.limit), (30_720, 92_160, 1 << 20));
    assert_eq!((o.wlog, o.plog, o.scell_log), (4, 20, 11));
    assert_eq!(o.max_p, Some(429_496_729));
    // The defaults: max = limit / 4 = 100000, min = max / 3 = 33333,
    // burst = (2 × 33333 + 100000) / 3000 = 55; a = 56 - 33.333 = 22.67:
    // Wlog 5 (26.42); 0.02 / 66667 × 2^22 = 1.26: Plog 22; bandwidth
    // 10Mbit: Scell_log 15 as above.
    let o = parsed("limit 400000 avpkt 1000").unwrap();
    assert_eq!((o.qth_min, o.qth_max), (33_333, 100_000));
    assert_eq!((o.wlog, o.plog, o.scell_log), (5, 22, 15));
    // min alone: max = 3 × min.
    let o = parsed("limit 400000 min 30000 avpkt 1000").unwrap();
    assert_eq!(o.qth_max, 90_000);
    // max alone: min = max / 3.
    let o = parsed("limit 400000 max 90000 avpkt 1000").unwrap();
    assert_eq!(o.qth_min, 30_000);
    // min = max: Plog 0 (tc_red_eval_P's span 0).
    assert_eq!(
        parsed("limit 9000 min 3000 max 3000 avpkt 1000 burst 4")
            .unwrap()
            .plog,
        0
    );
    // A sample's line: a = 5 - 3 = 2 ≤ (1 - (3/4)^4) 4 = 2.73 at w = 2,
    // not 1.875 at w = 1: Wlog 2; 0.2 / 6000 × 2^15 = 1.09: Plog 15;
    // lW = -ln(3/4) / 12500 = 2.3015e-5, 31 / lW = 1.347e6 < 512 × 2^12:
    // Scell_log 12.
    let o =
        parsed("limit 30000 min 3000 max 9000 avpkt 1000 burst 4 probability 0.2 bandwidth 10mbit")
            .unwrap();
    assert_eq!((o.wlog, o.plog, o.scell_log), (2, 15, 12));
    assert_eq!(o.max_p, Some(858_993_459));
}

/// Where C's conversions decide: 1000 B at 10 Gbit/s is 0.8 µs, which
/// `tc_calc_xmittime` cuts to 0 ticks; lW is then infinite, Scell_log 0
/// and every Stab entry the conversion of infinity (x86-64: 0), but the
/// last (31). A probability of 1 is 2^32, whose low 32 bits send max_P 0:
/// the kernel then takes max_P from Plog.
#[test]
fn c_conversions_at_the_edges() {
    let o = parsed("limit 400000 avpkt 1000 bandwidth 10gbit").unwrap();
    assert_eq!(o.scell_log, 0);
    let stab = o.stab.unwrap();
    assert!(stab[..255].iter().all(|s| *s == 0) && stab[255] == 31);
    assert_eq!(
        parsed("limit 400000 avpkt 1000 probability 1")
            .unwrap()
            .max_p,
        Some(0)
    );
    assert_eq!(
        parsed("limit 400000 avpkt 1000 probability 1.5")
            .unwrap()
            .max_p,
        Some(1 << 31)
    );
    // sscanf's %lg reads a prefix.
    assert_eq!(
        parsed("limit 400000 avpkt 1000 probability 0.05xyz")
            .unwrap()
            .max_p,
        Some(214_748_364)
    );
    // ... and hexadecimal floats, as strtod does.
    assert_eq!(scan_double("0x1p-4"), Some(0.0625));
    assert_eq!(scan_double("0x.8"), Some(0.5));
    assert_eq!(scan_double("-0X1.8p1"), Some(-3.0));
    assert_eq!(scan_double("+0xAp-2z"), Some(2.5));
    assert_eq!(scan_double("0x1p"), Some(1.0));
    assert_eq!(scan_double("0x"), Some(0.0));
    assert_eq!(scan_double("0xg"), Some(0.0));
    assert_eq!(
        parsed("limit 400000 avpkt 1000 probability 0x1p-6")
            .unwrap()
            .max_p,
        Some(1 << 26)
    );
    assert_eq!(scan_double(".5"), Some(0.5));
    assert_eq!(scan_double("1e"), Some(1.0));
    assert_eq!(scan_double("2e-1x"), Some(0.2));
    assert_eq!(scan_double("-inf"), Some(f64::NEG_INFINITY));
    assert!(scan_double("nan").unwrap().is_nan());
    assert_eq!(scan_double("e5"), None);
    assert_eq!(scan_double(""), None);
    assert_eq!(c_to_u8(300.7), 44);
    assert_eq!(c_to_u8(f64::INFINITY), 0);
    assert_eq!(c_to_u8(-0.5), 0);
}

/// iproute2's refusals with their exit codes (1: the parser's, 255: the
/// command line's), and the kernel's (2).
#[test]
fn refusals_read_as_tc_prints_them() {
    let e = err("limit 400000");
    assert!(
        e.0.starts_with("RED: Required parameter (limit, avpkt) is missing\n"),
        "{e}"
    );
    assert_eq!(parser_code(&e), TcError::PARSE);
    assert!(err("avpkt 1000").0.starts_with("RED: Required parameter"));
    // min above max: tc_red_eval_P's negative span.
    // tc told the bandwidth it assumed before it failed.
    let e = err("limit 400000 min 90000 max 30000 avpkt 1000 burst 100");
    assert_eq!(
        e.0,
        "RED: set bandwidth to 10Mbit\nRED: failed to calculate probability."
    );
    // A burst below min / avpkt: tc_red_eval_ewma's own line first
    // (after the bandwidth notice, which red_parse_opt prints before).
    let e = err("limit 400000 min 30000 max 90000 avpkt 1000 burst 10");
    assert_eq!(
        e.0,
        "RED: set bandwidth to 10Mbit\ntc_red_eval_ewma() burst 10 is too small ? Try burst 31\n\
         RED: failed to calculate EWMA constant."
    );
    let e = err("limit 400000 avpkt 1000 bogus");
    assert!(
        e.0.starts_with("What is \"bogus\"?\nUsage: ... red\tlimit BYTES"),
        "{e}"
    );
    assert!(err("help").0.starts_with("Usage: ... red"));
    let e = err("limit 400000 avpkt");
    assert!(e.0.starts_with("Command line is not complete"));
    assert_eq!(parser_code(&e), TcError::ARGS);
    for (args, word) in [
        ("limit x avpkt 1000", "limit"),
        ("limit 5gb avpkt 1000", "limit"),
        ("limit 1000 avpkt 1000 burst -1", "burst"),
        ("limit 1000 avpkt 1000 probability x", "probability"),
        ("limit 1000 avpkt 1000 bandwidth 10%", "bandwidth"),
        ("limit 1000 avpkt 1000 bandwidth 40gbit", "bandwidth"),
    ] {
        assert!(
            err(args).0.starts_with(&format!("Illegal \"{word}\"\n")),
            "{args}"
        );
    }
    // qevents: read as iproute2 reads them, then refused.
    let e = err("limit 1000 avpkt 1000 qevent early_drop block 10");
    assert!(
        e.0.starts_with("Error: qevent blocks are not supported by bloatbox"),
        "{e}"
    );
    assert!(err("limit 1000 avpkt 1000 qevent drop block 1")
        .0
        .starts_with("Unknown qevent `drop'"));
    assert_eq!(
        err("limit 1000 avpkt 1000 qevent mark block 0").0,
        "Illegal qevent block index"
    );
    // The kernel's: nodrop without ecn (red_validate_flags), thresholds
    // too large for their Wlog (red_check_params: 300mb has fls 29, and
    // the burst asks for Wlog 17).
    // tc printed the bandwidth it assumed before the kernel answered.
    let (_, out) = session(&["tc qdisc add dev left root red limit 400000 avpkt 1000 nodrop"]);
    let e = out.unwrap_err();
    assert_eq!(
        e.0,
        "RED: set bandwidth to 10Mbit\nError: sch_red: nodrop mode is only meaningful with ECN."
    );
    assert_eq!(e.code(), TcError::KERNEL);
    let line = "limit 1000 min 100mb max 300mb avpkt 1000 burst 200000 probability 0.5";
    assert_eq!(parsed(line).unwrap().wlog, 17);
    let (_, out) = session(&[&format!("tc qdisc add dev left root red {line}")]);
    let e = out.unwrap_err();
    assert!(
        e.0.starts_with(
            "RED: set bandwidth to 10Mbit\nRED: WARNING. Burst 200000 seems to be too large.\n\
             RTNETLINK answers: Invalid argument\n(red_check_params"
        ),
        "{e}"
    );
    // RED's class takes no options and cannot be added.
    let (_, out) = session(&[
        "tc qdisc add dev left root handle 1: red limit 400000 avpkt 1000",
        "tc class add dev left parent 1: classid 1:2 red",
    ]);
    assert!(out.is_err());
}

/// The exit code tc gives for a parser's error.
fn parser_code(e: &TcError) -> u8 {
    crate::tc::syntax::parser_exit(e.clone()).code()
}

/// `tc qdisc show` with and without `-s`, `-d`, `-j`, as q_red.c prints:
/// the sizes (`print_size`), a word per flag set and a space after each,
/// then with `-d` `ewma N probability P Scell_log N` (no space after);
/// `-s` adds `  marked N early N pdrop N other N ` on its own line.
#[test]
fn show_prints_as_iproute2() {
    let add = format!("tc qdisc add dev left root handle 1: red {MAN}");
    assert_eq!(
        shown(&[&add, "tc qdisc show dev left"]),
        "qdisc red 1: root refcnt 2 limit 400000b min 30000b max 90000b ecn adaptive \n"
    );
    assert_eq!(
        shown(&[&add, "tc -s -d qdisc show dev left"]),
        "qdisc red 1: root refcnt 2 limit 400000b min 30000b max 90000b ecn adaptive ewma 5 probability 0.02 Scell_log 15\n \
         Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n \
         backlog 0b 0p requeues 0\n  \
         marked 0 early 0 pdrop 0 other 0 \n"
    );
    assert_eq!(
        shown(&[&add, "tc -j qdisc show dev left"]),
        "[{\"kind\":\"red\",\"handle\":\"1:\",\"root\":true,\"refcnt\":2,\"options\":{\"limit\":400000,\
         \"min\":30000,\"max\":90000,\"ecn\":true,\"harddrop\":false,\"adaptive\":true,\"nodrop\":false}}]\n"
    );
    // -d -j: red_print_opt's show_details fields, the probability as
    // jsonw_float's "%g" writes it.
    assert_eq!(
        shown(&[&add, "tc -d -j qdisc show dev left"]),
        "[{\"kind\":\"red\",\"handle\":\"1:\",\"root\":true,\"refcnt\":2,\"options\":{\"limit\":400000,\
         \"min\":30000,\"max\":90000,\"ecn\":true,\"harddrop\":false,\"adaptive\":true,\"nodrop\":false,\
         \"ewma\":5,\"probability\":0.02,\"Scell_log\":15}}]\n"
    );
    let j = shown(&[&add, "tc -s -j qdisc show dev left"]);
    assert!(
        j.ends_with(
            "\"backlog\":0,\"qlen\":0,\"marked\":0,\"early\":0,\"pdrop\":0,\"other\":0}]\n"
        ),
        "{j}"
    );
    // No flags: the text still ends with a space after max.
    assert_eq!(
        shown(&[
            "tc qdisc add dev left root red limit 30kb min 3kb max 9kb avpkt 1000 harddrop nodrop ecn",
            "tc qdisc show dev left",
        ]),
        "qdisc red 8001: root refcnt 2 limit 30Kb min 3Kb max 9Kb ecn harddrop nodrop \n"
    );
    // Probability 1 sends max_P 0: the kernel takes it from Plog 13 (1 /
    // 6000 × 2^13 = 1.37) and dumps ((2^32 - 1) >> 13) × 6000 =
    // 3145722000, which tc prints as 3145722000 / 2^32 = 0.73242.
    let d = shown(&[
        "tc qdisc add dev left root red limit 30000 min 3000 max 9000 avpkt 1000 burst 4 probability 1",
        "tc -d qdisc show dev left",
    ]);
    assert!(
        d.ends_with("max 9000b ewma 2 probability 0.73242 Scell_log 12\n"),
        "{d}"
    );
    // A dump without max_P (kernels before TCA_RED_MAX_P): Plog.
    let o = RedOptions {
        max_p: None,
        plog: 13,
        ..parsed("limit 30000 min 3000 max 9000 avpkt 1000 burst 4").unwrap()
    };
    assert!(print(&o).detail.ends_with("ewma 2 Plog 13 Scell_log 12"));
    let d = shown(&[
        "tc qdisc add dev left root red limit 30000 min 3000 max 9000 avpkt 1000 burst 4 probability 0.00001",
        "tc -d qdisc show dev left",
    ]);
    // 0.00001 × 2^32 = 42949.67 → 42949; 42949 / 2^32 = 9.99984e-06.
    assert!(d.contains(" probability 9.99984e-06 Scell_log"), "{d}");
}

/// The one class and a child grafted in it, as `tc class show` and `tc
/// qdisc show` list them (the default bfifo is invisible; a grafted
/// qdisc is the class's leaf).
#[test]
fn class_and_child_show_as_iproute2() {
    let add = "tc qdisc add dev left root handle 1: red limit 400000 avpkt 1000 ecn";
    assert_eq!(
        shown(&[add, "tc class show dev left"]),
        "class red 1:1 parent 1: \n"
    );
    assert_eq!(
        shown(&[add, "tc -s class show dev left"]),
        "class red 1:1 parent 1: \n\n"
    );
    let child = "tc qdisc add dev left parent 1:1 handle 10: pfifo limit 5";
    assert_eq!(session(&[add, child]).1, Ok(None));
    assert_eq!(
        shown(&[add, child, "tc qdisc show dev left"]),
        "qdisc red 1: root refcnt 2 limit 400000b min 33333b max 100000b ecn \n\
         qdisc pfifo 10: parent 1:1 limit 5p\n"
    );
    assert_eq!(
        shown(&[add, child, "tc class show dev left"]),
        "class red 1:1 parent 1: leaf 10: \n"
    );
    // A change with the same words puts a new bfifo in the class.
    let (tree, _) = session(&[
        add,
        child,
        "tc qdisc change dev left root handle 1: red limit 20000 avpkt 1000 ecn",
    ]);
    let dump = tree.dump(Instant::ZERO);
    assert!(dump.children.is_empty());
    let QdiscOptions::Red(o) = &dump.options else {
        panic!()
    };
    assert_eq!(o.limit, 20000);
}

/// The menu's line parses, and scales with the link.
#[test]
fn menu_example_parses() {
    for rate in [0, 125_000, 12_500_000, 125_000_000] {
        let line = &example(Dir::LeftToRight, rate)[0];
        let (_, out) = session(&[line]);
        assert!(out.is_ok(), "{line}: {out:?}");
    }
    assert_eq!(
        example(Dir::LeftToRight, 12_500_000),
        ["tc qdisc replace dev left root red limit 1500000 min 62500 max 187500 avpkt 1000 bandwidth 100Mbit ecn"]
    );
}

/// What tc prints on standard error for a line it accepts (q_red.c
/// `red_parse_opt`): the bandwidth it assumed, and the warning for a Wlog
/// of 10 or more; before a refusal, what it printed first.
#[test]
fn notices_print_as_tc_prints_them() {
    let (_, out) = session(&[
        "tc qdisc add dev left root red limit 400000 min 30000 max 90000 avpkt 1000 burst 55",
    ]);
    assert_eq!(
        out.unwrap().as_deref(),
        Some("RED: set bandwidth to 10Mbit\n")
    );
    let (_, out) = session(&[&format!("tc qdisc add dev left root red {MAN}")]);
    assert_eq!(out.unwrap(), None, "bandwidth given, Wlog 5: nothing");
    // burst 200: a = 200 + 1 - 30 = 171 is first reached at Wlog 10
    // (1024 × (1 - (1 - 2^-10)^200) = 181.8; 2^9 gives 165.7).
    let (tree, out) = session(&[
        "tc qdisc add dev left root red limit 400000 min 30000 max 90000 avpkt 1000 burst 200 bandwidth 10mbit",
    ]);
    assert_eq!(
        out.unwrap().as_deref(),
        Some("RED: WARNING. Burst 200 seems to be too large.\n")
    );
    let dump = tree.dump(Instant::ZERO);
    let QdiscOptions::Red(o) = &dump.options else {
        panic!("{dump:?}")
    };
    assert_eq!(o.wlog, 10);
    // burst 1000 (Wlog 15): the warning, then the kernel's refusal
    // (red_check_params: Scell_log 25 leaves the idle table's range).
    let (_, out) = session(&[
        "tc qdisc add dev left root red limit 400000 min 30000 max 90000 avpkt 1000 burst 1000 bandwidth 10mbit",
    ]);
    let e = out.unwrap_err();
    assert!(
        e.0.starts_with(
            "RED: WARNING. Burst 1000 seems to be too large.\nRTNETLINK answers: Invalid argument"
        ),
        "{e}"
    );
    assert_eq!(e.code(), TcError::KERNEL);
    // burst 5: a = 5 + 1 - 30 < 0, no Wlog: the notice, then the refusal.
    let (_, out) = session(&[
        "tc qdisc add dev left root red limit 400000 min 30000 max 90000 avpkt 1000 burst 5",
    ]);
    let e = out.unwrap_err();
    assert_eq!(
        e.0,
        "RED: set bandwidth to 10Mbit\ntc_red_eval_ewma() burst 5 is too small ? Try burst 31\n\
         RED: failed to calculate EWMA constant."
    );
    assert_eq!(e.code(), TcError::PARSE, "{e}");
}
