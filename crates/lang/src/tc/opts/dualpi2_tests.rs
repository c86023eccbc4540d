//! DualPI2's tc syntax against iproute2 v6.18: tc-dualpi2(8)'s EXAMPLES
//! accepted and shown as tc/q_dualpi2.c prints what
//! net/sched/sch_dualpi2.c dumps, the words parsed into the attributes
//! tc sends (the max_rtt auto-config worked out by hand), tc's and the
//! kernel's refusals, and `tc [-s] [-j] qdisc show` byte for byte.

use super::*;
use crate::qdisc::kinds::BUILTIN;
use crate::tc::syntax::parse_qdisc;

fn parsed(args: &str) -> Result<Dualpi2Options, TcError> {
    let words: Vec<&str> = args.split_whitespace().collect();
    match parse_qdisc(BUILTIN, "dualpi2", &words)? {
        QdiscOptions::Dualpi2(o) => Ok(o),
        other => panic!("dualpi2 parsed {other:?}"),
    }
}

fn err(args: &str) -> String {
    parsed(args).err().unwrap().0
}

/// A fresh left device after `lines`; the output of the last line.
fn shown(lines: &[&str]) -> String {
    super::super::run_on_left(lines).unwrap().unwrap()
}

/// The refusal of the last of `lines`.
fn refused(lines: &[&str]) -> String {
    super::super::run_on_left(lines).unwrap_err().0
}

const DEFAULTS: &str = "limit 10000p memlimit 30280000B target 15ms tupdate 16ms alpha 0.156250 beta 3.195312 step_thresh 1ms min_qlen_step 0p coupling_factor 2 drop_on_overload drop_dequeue classic_protection 10%";

#[test]
fn the_man_pages_examples_show_as_tc_prints_them() {
    // tc-dualpi2(8) EXAMPLES: the defaults, and any_ect for DCTCP.
    for (args, ecn) in [("", "l4s_ect"), ("any_ect", "any_ect")] {
        let add = format!("tc qdisc add dev left root dualpi2 {args}");
        assert_eq!(
            shown(&[&add, "tc qdisc show dev left"]),
            format!("qdisc dualpi2 8001: root refcnt 2 {DEFAULTS} {ecn} split_gso \n")
        );
    }
}

#[test]
fn stats_and_json_print_as_iproute2() {
    let add = "tc qdisc add dev left root dualpi2";
    assert_eq!(
        shown(&[add, "tc -s -d qdisc show dev left"]),
        format!(
            "qdisc dualpi2 8001: root refcnt 2 {DEFAULTS} l4s_ect split_gso \n \
             Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n \
             backlog 0b 0p requeues 0\n\
             prob 0.000000 delay_c 0us delay_l 0us\n\
             pkts_in_c 0 pkts_in_l 0 maxq 0\n\
             ecn_mark 0 step_mark 0\n\
             credit -121120 (L-queue)\n\
             memory_used 0 (max 0) of memory limit 30280000\n\n"
        )
    );
    assert_eq!(
        shown(&[add, "tc -j qdisc show dev left"]),
        "[{\"kind\":\"dualpi2\",\"handle\":\"8001:\",\"root\":true,\"refcnt\":2,\"options\":{\
         \"limit\":10000,\"memory-limit\":30280000,\"target\":15000,\"tupdate\":16000,\
         \"alpha\":0.15625,\"beta\":3.19531,\"step-thresh-us\":1000,\"min-qlen-step\":0,\
         \"coupling\":2,\"drop-overload\":\"drop\",\"drop-early\":\"drop-dequeue\",\
         \"c-protection\":10,\"ecn-mask\":\"l4s-ect\",\"split-gso\":null}}]\n"
    );
    let j = shown(&[add, "tc -s -j qdisc show dev left"]);
    assert!(
        j.ends_with(
            "\"backlog\":0,\"qlen\":0,\"prob\":0,\"delay-c\":0,\"delay-l\":0,\"pkts-in-c\":0,\
             \"pkts-in-l\":0,\"maxq\":0,\"ecn-mark\":0,\"step-mark\":0,\"credit\":-121120,\
             \"memory-used\":0,\"max-memory-used\":0,\"memory-limit\":30280000}]\n"
        ),
        "{j}"
    );
}

#[test]
fn options_print_in_packets_overflow_enqueue_and_no_split() {
    let add = "tc qdisc add dev left root dualpi2 limit 100 memlimit 200000 step_thresh 5p \
               min_qlen_step 2 coupling_factor 4 overflow drop_enqueue classic_protection 25% \
               alpha 0.5 beta 10 no_split_gso";
    assert_eq!(
        shown(&[add, "tc qdisc show dev left"]),
        "qdisc dualpi2 8001: root refcnt 2 limit 100p memlimit 200000B target 15ms tupdate 16ms \
         alpha 0.496094 beta 9.996094 step_thresh 5p min_qlen_step 2p coupling_factor 4 overflow \
         drop_enqueue classic_protection 25% l4s_ect no_split_gso \n"
    );
    let j = shown(&[add, "tc -j qdisc show dev left"]);
    assert!(j.contains("\"step-thresh-pkts\":5,"), "{j}");
    assert!(j.contains("\"drop-overload\":\"overflow\",\"drop-early\":\"drop-enqueue\""));
    assert!(!j.contains("split-gso"), "{j}");
}

#[test]
fn xstats_print_probability_delays_and_credit() {
    let s = Dualpi2Xstats {
        prob: u32::MAX / 4,
        delay_c: 15_321,
        delay_l: 874,
        packets_in_c: 10,
        packets_in_l: 20,
        maxq: 7,
        ecn_mark: 5,
        step_marks: 3,
        credit: 14_880,
        memory_used: 2304,
        max_memory_used: 4608,
        memory_limit: 30_280_000,
    };
    let mut out = String::new();
    dualpi2_text(&mut out, &s);
    assert_eq!(
        out,
        "prob 0.250000 delay_c 15321us delay_l 874us\npkts_in_c 10 pkts_in_l 20 maxq 7\n\
         ecn_mark 5 step_mark 3\ncredit 14880 (C-queue)\n\
         memory_used 2304 (max 4608) of memory limit 30280000\n\n"
    );
    let j = (XSTATS.json)(&Xstats::Dualpi2(s)).unwrap();
    assert_eq!(j.get("prob"), Some(&json!(0.25)));
    assert_eq!(j.get("credit"), Some(&json!(14_880)));
}

#[test]
fn words_parse_into_the_attributes_tc_sends() {
    assert_eq!(
        parsed("limit 10 memlimit 5000 target 5ms tupdate 10ms alpha 1 beta 2.5 coupling_factor 0x3 l4s_ect step_thresh 2ms min_qlen_step 0 drop_on_overload drop_dequeue split_gso classic_protection 0").unwrap(),
        Dualpi2Options {
            limit: Some(10),
            memory_limit: Some(5000),
            target: Some(5000),
            tupdate: Some(10_000),
            alpha: Some(256),
            beta: Some(640),
            step_thresh: Some(StepThresh::Micros(2000)),
            min_qlen_step: Some(0),
            coupling: Some(3),
            drop_overload: Some(true),
            drop_early: Some(false),
            c_protection: Some(0),
            ecn_mask: Some(ECN_MASK_L4S_ECT),
            split_gso: Some(true),
        }
    );
    // Zeros of limit, target and the step are not sent; a bare step is
    // a time in µs; packets take any of the five suffixes.
    assert_eq!(
        parsed("limit 0 target 0 step_thresh 0").unwrap(),
        Dualpi2Options::default()
    );
    assert_eq!(
        parsed("step_thresh 7").unwrap().step_thresh,
        Some(StepThresh::Micros(7))
    );
    for w in ["3p", "3pkt", "3pkts", "3packet", "3packets"] {
        assert_eq!(
            parsed(&format!("step_thresh {w}")).unwrap().step_thresh,
            Some(StepThresh::Packets(3))
        );
    }
}

#[test]
fn max_rtt_derives_target_tupdate_alpha_and_beta() {
    // max_rtt 100ms: typical 100000 / 6 = 16666 µs; tupdate min(16666,
    // 33333.3) = 16666; alpha = 16666 / 1e5 / 1e5 × 1e6 × 0.1f
    // = 0.16666000248...; × 256 = 42.66 → 42; beta = 0.3f / 1e5 × 1e6
    // = 3.0000001192...; × 256 = 768.00003 → 768.
    let o = parsed("max_rtt 100ms").unwrap();
    assert_eq!(
        (o.target, o.tupdate, o.alpha, o.beta),
        (Some(16_666), Some(16_666), Some(42), Some(768))
    );
    // typical_rtt alone: max = 6 × typical; 20ms and 120ms: tupdate
    // min(20000, 40000) = 20000; alpha = 0.02/0.0144 × 0.1f = 0.13888…
    // × 256 = 35.55 → 35; beta = 0.3f / 0.12 = 2.5 × 256 = 640.000… → 640.
    let o = parsed("typical_rtt 20ms").unwrap();
    assert_eq!(
        (o.target, o.tupdate, o.alpha, o.beta),
        (Some(20_000), Some(20_000), Some(35), Some(640))
    );
    // The two given, and alpha ignored.
    let o = parsed("alpha 5 max_rtt 30ms typical_rtt 15ms").unwrap();
    // tupdate min(15000, 10000) = 10000; alpha = 0.01 / 0.0009 × 0.1f
    // = 1.1111 → 284.44 → 284; beta = 10.0000004 → 2560.0001 → 2560.
    assert_eq!(
        (o.target, o.tupdate, o.alpha, o.beta),
        (Some(15_000), Some(10_000), Some(284), Some(2560))
    );
    assert_eq!(
        err("max_rtt 10ms typical_rtt 20ms"),
        "typical_rtt must be <= max_rtt!"
    );
    assert_eq!(
        err("max_rtt 5000s"),
        "Illegal \"max_rtt\" (\"5000s\": expected a time like 15ms or 100us)"
    );
    // 1000 s: tupdate 166666666 µs, alpha = 1.67e-5 and beta = 3e-4,
    // below 1/256.
    assert_eq!(
        err("max_rtt 1000s"),
        "Large max_rtt=1e+03s rounds down alpha=0.000017 and/or beta=0.000300!"
    );
    // 1 µs: tupdate 1 µs, beta 300000 Hz is fine.
    assert_eq!(
        parsed("max_rtt 1us").unwrap().beta,
        Some((f64::from(0.3f32) * 1e6 * 256.0) as u32)
    );
}

#[test]
fn tcs_own_refusals() {
    let usage = USAGE;
    assert_eq!(err("help"), usage);
    assert_eq!(err("ecn"), format!("What is \"ecn\"?\n{usage}"));
    assert!(err("limit").starts_with("Command line is not complete."));
    assert_eq!(
        err("limit -1"),
        "Illegal \"limit\" (\"-1\": expected an unsigned 32-bit decimal number)"
    );
    assert_eq!(
        err("coupling_factor 256"),
        "Illegal \"coupling_factor\" (\"256\": expected a number in 0..=255)"
    );
    assert_eq!(
        err("classic_protection 101"),
        "Illegal \"classic_protection\" (\"101\": expected a percentage in 0..=100)"
    );
    assert!(err("alpha 16777216").starts_with("Illegal \"alpha\""));
    assert!(err("beta -1").starts_with("Illegal \"beta\""));
    assert!(err("step_thresh 5x").starts_with("Illegal \"step_thresh\""));
    assert!(err("target 1z").starts_with("Illegal \"target\""));
}

#[test]
fn the_kernels_refusals() {
    let add = "tc qdisc add dev left root dualpi2";
    for bad in ["beta 8388608", "coupling_factor 0", "alpha 8388608"] {
        let e = refused(&[&format!("{add} {bad}")]);
        assert!(e.starts_with("Error: integer out of range."), "{bad}: {e}");
    }
    // alpha 0.001 is warned of and sent as 0, which the policy refuses.
    assert_eq!(
        refused(&[&format!("{add} alpha 0.001")]),
        "Warning: \"alpha\" is too small and will be rounded to zero.\n\
         Error: integer out of range. (alpha 0: allowed 1..=2147483647 (in 1/256 Hz))"
    );
    // A change with no attribute at all.
    assert_eq!(
        refused(&[add, "tc qdisc change dev left root dualpi2"]),
        "Error: sch_dualpi2: Dualpi2 options are required."
    );
    // A change keeps what it does not name.
    let out = shown(&[
        add,
        "tc qdisc change dev left root dualpi2 limit 50",
        "tc qdisc show dev left",
    ]);
    assert!(
        out.contains("limit 50p memlimit 151400B target 15ms"),
        "{out}"
    );
}
