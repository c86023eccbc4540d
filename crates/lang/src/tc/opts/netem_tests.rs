//! netem's tc syntax against iproute2's tc/q_netem.c: man-page lines and
//! the values tc sends for them (percentages as `rint(p × (2^32 - 1))`,
//! worked out by hand below), its defaults, its refusals, the `.dist`
//! reader, and `tc [-d] [-j] qdisc show` byte for byte as
//! `netem_print_opt` prints the kernel's dump.

use super::*;
use crate::qdisc::kinds::BUILTIN;
use crate::tc::syntax::parse_qdisc;

fn parsed(args: &str) -> Result<NetemOptions, TcError> {
    let words: Vec<&str> = args.split_whitespace().collect();
    match parse_qdisc(BUILTIN, "netem", &words)? {
        QdiscOptions::Netem(o) => Ok(*o),
        other => panic!("netem parsed {other:?}"),
    }
}

fn err(args: &str) -> String {
    parsed(args).err().unwrap().to_string()
}

fn shown(lines: &[&str]) -> String {
    super::super::run_on_left(lines).unwrap().unwrap()
}

/// 25%: rint(0.25 × 4294967295) = rint(1073741823.75) = 1073741824;
/// 0.1%: rint(4294967.295) = 4294967; 0.3%: rint(12884901.885) = 12884902.
#[test]
fn man_page_lines_send_what_tc_sends() {
    let o = parsed("delay 100ms").unwrap();
    assert_eq!(
        (o.limit, o.latency, o.jitter),
        (1000, Some(100_000_000), None)
    );
    assert_eq!((o.corr, o.seed, o.loss), (None, None, 0));
    let o = parsed("delay 100ms 10ms 25%").unwrap();
    assert_eq!(o.jitter, Some(10_000_000));
    assert_eq!(o.corr.map(|c| c.delay), Some(1_073_741_824));
    let o = parsed("loss 0.1%").unwrap();
    assert_eq!(o.loss, 4_294_967);
    let o = parsed("loss 0.3% 25%").unwrap();
    assert_eq!(
        (o.loss, o.corr.map(|c| c.loss)),
        (12_884_902, Some(1_073_741_824))
    );
    let o = parsed("duplicate 1%").unwrap();
    assert_eq!(o.duplicate, 42_949_673);
    // The duplication's correlation goes only with another correlation.
    assert_eq!(parsed("duplicate 1% 50%").unwrap().corr, None);
    let o = parsed("delay 10ms reorder 25% 50%").unwrap();
    assert_eq!(
        o.reorder,
        Some(NetemProb {
            probability: 1_073_741_824,
            correlation: 2_147_483_648
        })
    );
    assert_eq!(o.gap, 1, "reorder without gap sends gap 1");
    let o = parsed("rate 5kbit 20 100 5").unwrap();
    assert_eq!(
        o.rate,
        Some(NetemRate {
            rate: 625,
            packet_overhead: 20,
            cell_size: 100,
            cell_overhead: 5
        })
    );
    assert_eq!(
        parsed("rate 1mbit -4")
            .unwrap()
            .rate
            .unwrap()
            .packet_overhead,
        -4
    );
    let o = parsed("delay 100ms 20ms distribution normal").unwrap();
    assert!(o.delay_dist.is_some_and(|t| !t.is_empty()));
    let o = parsed("corrupt 0.1% seed 42 ecn loss 1%").unwrap();
    assert_eq!(o.corrupt.map(|c| c.probability), Some(4_294_967));
    assert_eq!((o.seed, o.ecn), (Some(42), Some(1)));
    // A bare time is nanoseconds (get_time64); a limit is a size.
    assert_eq!(parsed("delay 100").unwrap().latency, Some(100));
    assert_eq!(parsed("limit 1k").unwrap().limit, 1024);
    assert_eq!(parsed("lat 1s").unwrap().latency, Some(1_000_000_000));
}

#[test]
fn loss_models_and_their_defaults() {
    // gemodel 1%: r = 99%, h = 0 (1-h 100%), 1-k 0.
    assert_eq!(
        parsed("loss gemodel 1%").unwrap().loss_model,
        Some(NetemLossModel::GilbertElliott {
            p: 42_949_673,
            r: set_percent(0.99),
            h: 0,
            k1: 0
        })
    );
    // 1-h 70%: rint(3006477106.5) = 3006477106 (ties to even), h = 2^32 -
    // 1 - that = 1288490189.
    assert_eq!(
        parsed("loss gemodel 1% 10% 70% 0.1%").unwrap().loss_model,
        Some(NetemLossModel::GilbertElliott {
            p: 42_949_673,
            r: 429_496_730,
            h: 1_288_490_189,
            k1: 4_294_967
        })
    );
    // state 4%: p31 = 96%, p32 = 0, p23 = 100%, p14 = 0.
    assert_eq!(
        parsed("drop state 4%").unwrap().loss_model,
        Some(NetemLossModel::FourState {
            p13: set_percent(0.04),
            p31: set_percent(0.96),
            p32: 0,
            p23: u32::MAX,
            p14: 0
        })
    );
    assert_eq!(parsed("loss random 3").unwrap().loss, set_percent(0.03));
}

#[test]
fn slot_forms() {
    let o = parsed("slot 1ms 2ms packets 4 bytes 64kb").unwrap();
    assert_eq!(
        o.slot,
        Some(NetemSlot {
            min_delay: 1_000_000,
            max_delay: 2_000_000,
            max_packets: 4,
            max_bytes: 65_536,
            ..NetemSlot::default()
        })
    );
    assert_eq!(
        parsed("slot 3ms").unwrap().slot.map(|s| s.max_delay),
        Some(3_000_000)
    );
    let o = parsed("slot distribution pareto 10ms 2ms packets 8").unwrap();
    let s = o.slot.unwrap();
    assert_eq!(
        (s.dist_delay, s.dist_jitter, s.max_packets),
        (10_000_000, 2_000_000, 8)
    );
    assert!(o.slot_dist.is_some());
}

#[test]
fn refusals_are_tcs() {
    assert_eq!(
        err("gap 5 delay 10ms"),
        format!("gap specified without reorder probability\n{USAGE}")
    );
    assert!(
        err("reorder 10%").starts_with("reordering not possible without specifying some delay\n")
    );
    assert!(err("ecn").starts_with("ecn requested without loss model\n"));
    assert!(err("distribution normal")
        .starts_with("distribution specified but no latency and jitter values\n"));
    assert!(err("delay 1ms distribution normal").starts_with("distribution specified"));
    assert!(err("loss 1% loss 2%").starts_with("Illegal \"duplicate loss argument\n\""));
    assert_eq!(err("loss foo"), "Unknown loss parameter: foo");
    assert_eq!(err("slot foo"), "Unknown slot parameter: foo");
    assert_eq!(
        err("slot distribution normal 10ms 0"),
        "Non-positive jitter"
    );
    assert!(err("slot 2ms 1ms").starts_with("Illegal \"slot max_delay\""));
    assert!(err("jitter 5ms").starts_with("What is \"jitter\"?\nUsage: ... netem"));
    assert!(err("loss 101%").starts_with("Illegal \"loss percent\""));
    assert!(err("loss 5x").starts_with("Illegal \"loss percent\""));
    assert!(err("delay 10furlongs").starts_with("Illegal \"latency\""));
    assert!(err("delay -1ms").starts_with("Illegal \"latency\""));
    assert!(err("delay").starts_with("Command line is not complete"));
    assert!(err("rate 10%").starts_with("Illegal \"rate\""));
    assert!(err("seed -1").starts_with("Illegal \"seed\""));
    assert!(err("slot 1ms packets x").starts_with("Illegal \"slot packets\""));
    assert_eq!(
        err("delay 1ms 1ms distribution weibull"),
        "No distribution data for weibull (/usr/lib/tc//weibull.dist: No such file or directory)"
    );
    assert!(err("help").starts_with("Usage: ... netem [ limit PACKETS ]"));
}

/// `get_distribution`: `#` lines and empty lines skipped, numbers read
/// with `strtol(.., 0)` until one does not read.
#[test]
fn dist_files_read_as_tc_reads_them() {
    let t = model::read_dist_file("# netem\n1 2 3\n-4 0x10\n\n010 x 7\n 5\n").unwrap();
    assert_eq!(t, [1, 2, 3, -4, 16, 8, 5]);
    assert_eq!(model::read_dist_file("70000\n").unwrap(), [70000i64 as i16]);
    let big = "1 ".repeat(model::DIST_MAX + 1);
    assert_eq!(model::read_dist_file(&big), Err(model::DistError::TooMuch));
}

#[test]
fn show_prints_as_netem_print_opt() {
    let add = "tc qdisc add dev left root netem delay 100ms 10ms 25% loss 0.3% 25% seed 5";
    assert_eq!(
        shown(&[add, "tc qdisc show dev left"]),
        "qdisc netem 8001: root refcnt 2 limit 1000 delay 100ms  10ms 25% loss 0.3% 25% seed 5\n"
    );
    assert_eq!(
        shown(&[add, "tc -d qdisc show dev left"]),
        "qdisc netem 8001: root refcnt 2 limit 1000 delay 100ms  10ms 25% loss 0.3% 25% seed 5\n"
    );
    assert_eq!(
        shown(&[add, "tc -j qdisc show dev left"]),
        "[{\"kind\":\"netem\",\"handle\":\"8001:\",\"root\":true,\"refcnt\":2,\"options\":{\"limit\":1000,\
         \"delay\":{\"delay\":0.1,\"jitter\":0.01,\"correlation\":0.25},\
         \"loss-random\":{\"loss\":0.003,\"correlation\":0.25},\"seed\":5,\"ecn\":false,\"gap\":0}}]\n"
    );
    assert_eq!(
        shown(&[
            "tc qdisc add dev left root netem loss gemodel 1% 10% 70% 0.1% duplicate 2% corrupt 0.5% 5% seed 1",
            "tc qdisc show dev left",
        ]),
        "qdisc netem 8001: root refcnt 2 limit 1000 loss gemodel p 1% r 10% 1-h 70% 1-k 0.1% \
         duplicate 2% corrupt 0.5% 5% seed 1\n"
    );
    assert_eq!(
        shown(&[
            "tc qdisc add dev left root netem limit 50 loss state 1% 30% 20% 5% 0.5% ecn seed 2",
            "tc qdisc show dev left",
        ]),
        "qdisc netem 8001: root refcnt 2 limit 50 loss state p13 1% p31 30% p32 20% p23 5% p14 0.5% \
         seed 2 ecn \n"
    );
    assert_eq!(
        shown(&[
            "tc qdisc add dev left root netem delay 10ms reorder 25% 50% rate 5kbit 20 100 5 slot 1ms 2ms packets 4 bytes 64kb seed 3",
            "tc qdisc show dev left",
        ]),
        "qdisc netem 8001: root refcnt 2 limit 1000 delay 10ms reorder 25% 50% rate 5Kbit \
         packetoverhead 20 cellsize 100 celloverhead 5 slot 1ms 2ms packets 4 bytes 65536 seed 3 gap 1\n"
    );
    let j = shown(&[
        "tc qdisc add dev left root netem delay 10ms reorder 25% rate 5kbit slot 1ms 2ms seed 3",
        "tc -j qdisc show dev left",
    ]);
    assert!(
        j.ends_with(
            "\"options\":{\"limit\":1000,\"delay\":{\"delay\":0.01,\"jitter\":0,\"correlation\":0},\
             \"reorder\":{\"reorder\":0.25,\"correlation\":0},\
             \"rate\":{\"rate\":625,\"packetoverhead\":0,\"cellsize\":0,\"celloverhead\":0},\
             \"slot\":{\"min-delay\":0.001,\"max-delay\":0.002,\"packets\":0,\"bytes\":0},\
             \"seed\":3,\"ecn\":false,\"gap\":1}}]\n"
        ),
        "{j}"
    );
    // Under an HTB class, as Mininet's TCLink builds it.
    let tree = shown(&[
        "tc qdisc add dev left root handle 5:0 htb default 1",
        "tc class add dev left parent 5:0 classid 5:1 htb rate 1.5mbit burst 15k",
        "tc qdisc add dev left parent 5:1 handle 10: netem delay 10ms limit 100",
        "tc qdisc show dev left",
    ]);
    assert!(
        tree.contains("qdisc netem 10: parent 5:1 limit 100 delay 10ms seed "),
        "{tree}"
    );
}

#[test]
fn change_keeps_what_is_not_sent_and_refuses_as_the_kernel() {
    let out = shown(&[
        "tc qdisc add dev left root netem delay 10ms seed 4",
        "tc qdisc change dev left root netem limit 20 loss 1%",
        "tc qdisc show dev left",
    ]);
    // No TCA_NETEM_LATENCY64 in the change: the kernel takes the old
    // tick field, which tc sends as 0, so the delay is gone; the seed (no
    // TCA_NETEM_PRNG_SEED) and a corruption (no TCA_NETEM_CORRUPT) stay.
    assert_eq!(
        out,
        "qdisc netem 8001: root refcnt 2 limit 20 loss 1% seed 4\n"
    );
    let out = shown(&[
        "tc qdisc add dev left root netem delay 10ms corrupt 1% seed 4",
        "tc qdisc change dev left root netem delay 5ms",
        "tc qdisc show dev left",
    ]);
    assert_eq!(
        out,
        "qdisc netem 8001: root refcnt 2 limit 1000 delay 5ms corrupt 1% seed 4\n"
    );
}
