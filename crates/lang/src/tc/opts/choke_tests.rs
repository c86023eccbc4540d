//! choke's tc syntax against iproute2: the values tc/q_choke.c and
//! tc/tc_red.c compute (worked out by hand below from their formulas),
//! its defaults and refusals, the kernel's refusals through tc, and `tc
//! [-s] [-d] [-j] qdisc show` byte for byte as tc/q_choke.c and
//! tc/tc_qdisc.c print them.

use super::*;
use crate::packet::Drops;
use crate::qdisc::kinds::BUILTIN;
use crate::qdisc::tree::{DevSpec, QdiscTree};
use crate::tc::syntax::parse_qdisc;
use crate::tc::TcCommand;
use crate::time::Instant;

/// The options tc sends for `args`, with the notices it prints.
fn parsed(args: &str) -> Result<ChokeOptions, TcError> {
    let words: Vec<&str> = args.split_whitespace().collect();
    match parse_qdisc(BUILTIN, "choke", &words)? {
        QdiscOptions::Choke(o) => Ok(o),
        other => panic!("choke parsed {other:?}"),
    }
}

fn err(args: &str) -> String {
    parsed(args).err().unwrap().0
}

/// A fresh left device after `lines`; the output of the last line (or
/// its error).
fn run(lines: &[&str]) -> Result<Option<String>, TcError> {
    let mut tree = QdiscTree::new(DevSpec::new(Dir::LeftToRight, BUILTIN)).unwrap();
    let mut out = Ok(None);
    for line in lines {
        let cmd = TcCommand::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        out = crate::tc::run(&mut tree, &cmd, Instant::ZERO, &mut Drops::new());
    }
    out
}

fn shown(lines: &[&str]) -> String {
    run(lines).unwrap().unwrap()
}

/// `limit 1000 bandwidth 10mbit`, by hand: max = 1000 / 4 = 250, min =
/// 250 / 3 = 83, burst = (166 + 250) / 3 = 138. Wlog: a = 138 + 1 -
/// 83000 / 1000 = 56; (1 - (1 - 2^-w)^138) 2^w is 31.6 for w = 5 and
/// 56.7 for w = 6: Wlog 6. Plog: 0.02 / (250000 - 83000) × 2^i first
/// exceeds 1 at i = 23 (2^22 gives 0.502). Scell_log: 1000 B at 10 Mbit/s
/// is 800 µs = 12500 ticks; lW = -ln(63/64) / 12500 = 1.25984e-6; 31 /
/// lW = 24.6e6, below 512 × 2^16 and not 512 × 2^15: 16. max_P = 0.02 ×
/// 2^32 = 85899345.92 → 85899345.
#[test]
fn the_defaults_compute_as_tc_does() {
    let o = parsed("limit 1000 bandwidth 10mbit").unwrap();
    assert_eq!(
        (o.limit, o.qth_min, o.qth_max, o.wlog, o.plog, o.scell_log),
        (1000, 83, 250, 6, 23, 16)
    );
    assert_eq!((o.flags, o.max_p), (0, Some(85_899_345)));
    let stab = o.stab.unwrap();
    assert_eq!((stab.len(), stab[0], stab[255]), (256, 0, 31));
    // Stab[i] = i × 65536 × lW = 0.082565 i: 0 up to 12, 1 from 13.
    assert_eq!((stab[12], stab[13], stab[100]), (0, 1, 8));
    let o = parsed("limit 50 min 5 max 15 avpkt 1500 burst 8 probability 0.1 bandwidth 5mbit ecn")
        .unwrap();
    assert_eq!((o.qth_min, o.qth_max, o.flags), (5, 15, TC_RED_ECN as u8));
    assert_eq!(o.max_p, Some(429_496_729));
}

#[test]
fn tcs_refusals() {
    assert_eq!(
        err("limit 100"),
        "Required parameter (bandwidth, limit) is missing\n(e.g. choke limit 1000 bandwidth \
         10mbit; limit is given)"
    );
    assert!(
        err("bandwidth 1mbit").starts_with("Required parameter (bandwidth, limit) is missing\n")
    );
    assert_eq!(
        err("limit 100 max 101 bandwidth 1mbit"),
        "\"max\" is larger than \"limit\""
    );
    assert_eq!(
        err("limit 100 min 20 max 20 bandwidth 1mbit"),
        "\"min\" is not smaller than \"max\""
    );
    // min given, max from the limit: 25 / 3 is not needed, 30 ≥ 25.
    assert_eq!(
        err("limit 100 min 30 bandwidth 1mbit"),
        "\"min\" is not smaller than \"max\""
    );
    assert!(err("limit x bandwidth 1mbit").starts_with("Illegal \"limit\"\n"));
    assert!(err("limit 1k bandwidth 1mbit").starts_with("Illegal \"limit\"\n"));
    assert!(err("limit 10 bandwidth fast").starts_with("Illegal \"bandwidth\"\n"));
    assert!(err("limit 10 bandwidth 10%").starts_with("Illegal \"bandwidth\"\n"));
    assert!(err("limit 10 avpkt big bandwidth 1mbit").starts_with("Illegal \"avpkt\"\n"));
    assert!(err("limit 10 probability p bandwidth 1mbit").starts_with("Illegal \"probability\"\n"));
    assert_eq!(
        err("limit 10 harddrop"),
        format!("What is \"harddrop\"?\n{USAGE}")
    );
    assert_eq!(err("help"), USAGE);
    assert!(err("limit").starts_with("Command line is not complete."));
    // A burst below what min takes: tc_red_eval_ewma's line, then choke's.
    assert_eq!(
        err("limit 100 min 20 max 25 burst 5 bandwidth 1mbit"),
        "tc_red_eval_ewma() burst 5 is too small ? Try burst 21\nCHOKE: failed to calculate \
         EWMA constant."
    );
}

/// A burst that takes a Wlog of 10 or more is sent, with tc's warning on
/// standard error.
#[test]
fn a_large_burst_is_warned_of() {
    let mut t = Tokens::new(&[
        "limit",
        "100000",
        "min",
        "20",
        "burst",
        "5000",
        "bandwidth",
        "1gbit",
    ]);
    let o = (SYNTAX.qdisc)(&mut t).unwrap();
    let QdiscOptions::Choke(o) = o else {
        panic!("{o:?}")
    };
    assert!(o.wlog >= 10, "{}", o.wlog);
    assert_eq!(
        t.into_notices(),
        ["CHOKE: WARNING. Burst 5000 seems to be too large."]
    );
}

/// The kernel's refusals through tc: `red_check_params` (a bare EINVAL)
/// and CHOKE_MAX_QUEUE.
#[test]
fn the_kernels_refusals() {
    let e = run(&["tc qdisc add dev left root choke limit 131072 bandwidth 10mbit"]).unwrap_err();
    // tc's warning (Wlog 13 for the default burst of 18204) first.
    assert_eq!(
        e.0,
        "CHOKE: WARNING. Burst 18204 seems to be too large.\nRTNETLINK answers: Invalid \
         argument\n(choke's limit 131072 is above CHOKE_MAX_QUEUE (131071 packets))"
    );
    assert!(run(&["tc qdisc add dev left root choke limit 131071 bandwidth 10mbit"]).is_ok());
    // max × 2^Wlog beyond 31 bits: max 131071 (17 bits), and a burst of
    // 20000 over min 2 giving Wlog 28 (probability 1 keeps Plog below 32).
    let e = run(&[
        "tc qdisc add dev left root choke limit 131071 min 2 max 131071 burst 20000 \
                   probability 1 bandwidth 10gbit",
    ])
    .unwrap_err();
    assert!(e.0.contains("red_check_params"), "{e}");
}

#[test]
fn show_prints_as_iproute2() {
    let add = "tc qdisc add dev left root choke limit 1000 bandwidth 10mbit ecn";
    assert_eq!(
        shown(&[add, "tc qdisc show dev left"]),
        "qdisc choke 8001: root refcnt 2 limit 1000p min 83p max 250p ecn \n"
    );
    assert_eq!(
        shown(&[add, "tc -d qdisc show dev left"]),
        "qdisc choke 8001: root refcnt 2 limit 1000p min 83p max 250p ecn ewma 6 probability \
         0.02 Scell_log 16\n"
    );
    assert_eq!(
        shown(&[add, "tc -s qdisc show dev left"]),
        "qdisc choke 8001: root refcnt 2 limit 1000p min 83p max 250p ecn \n Sent 0 bytes 0 \
         pkt (dropped 0, overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\n  marked 0 \
         early 0 pdrop 0 other 0 matched 0\n"
    );
    let j = shown(&[add, "tc -s -d -j qdisc show dev left"]);
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    let q = &v[0];
    assert_eq!(q["kind"], "choke");
    assert_eq!(
        q["options"],
        json!({"limit": 1000, "min": 83, "max": 250, "ecn": true, "harddrop": false,
               "adaptive": false, "nodrop": false, "ewma": 6, "probability": 0.02,
               "Scell_log": 16})
    );
    for (k, n) in [
        ("marked", 0),
        ("early", 0),
        ("pdrop", 0),
        ("other", 0),
        ("matched", 0),
    ] {
        assert_eq!(q[k], n, "{k}: {j}");
    }
    // A change keeps the ring or makes a new one, and shows what it set.
    assert_eq!(
        shown(&[
            add,
            "tc qdisc change dev left root choke limit 200 min 10 max 40 bandwidth 10mbit",
            "tc qdisc show dev left"
        ]),
        "qdisc choke 8001: root refcnt 2 limit 200p min 10p max 40p \n"
    );
    // No classes.
    assert_eq!(shown(&[add, "tc class show dev left"]), "");
}

/// tc-choke(8)'s synopsis, with values, and the samples and benches, as
/// the kernel takes them.
#[test]
fn typical_lines_are_accepted() {
    for line in [
        "tc qdisc add dev left root choke limit 1000 min 100 max 300 avpkt 1000 burst 150 ecn bandwidth 100mbit probability 0.05",
        "tc qdisc add dev left root handle 1: choke limit 1000 bandwidth 10mbit",
        "tc qdisc add dev left root choke limit 4000 bandwidth 1gbit min 500 max 1500 ecn",
        "tc qdisc add dev left root choke limit 100 bandwidth 512kbit avpkt 1500 probability 1",
    ] {
        assert!(run(&[line]).is_ok(), "{line}: {:?}", run(&[line]));
    }
    let lines = SYNTAX
        .samples
        .iter()
        .flat_map(|s| s.lines)
        .chain(SYNTAX.benches.iter().flat_map(|b| b.lines));
    for s in lines {
        let line = s.replace(" D ", " left ");
        assert!(run(&[&line]).is_ok(), "{line}");
    }
    for rate in [0, 125_000, 1_250_000, 12_500_000, 1_250_000_000] {
        for line in example(Dir::LeftToRight, rate) {
            assert!(run(&[&line]).is_ok(), "{line}");
        }
    }
}
