//! Rate estimators through tc: `est INTERVAL TIME_CONSTANT` on qdiscs and
//! classes, the kernel's answers (sch_api.c `qdisc_create`,
//! `qdisc_change`, `htb_change_class`), and the `rate ...bit ...pps` the
//! estimates print in `tc -s` and `-j` (tc_util.c `print_tcstats2_attr`),
//! on a tree driven with frames at known times.
use crate::dir::Dir;

use crate::packet::Drops;
use crate::qdisc::testutil::flow_pkt;
use crate::qdisc::tree::{DevSpec, QdiscTree};
use crate::qdisc::Qdisc;
use crate::tc::{TcCommand, TcError};
use crate::time::{Instant, NS_PER_MS};

fn tree(tx_queues: u16) -> QdiscTree {
    QdiscTree::new(DevSpec {
        tx_queues,
        ..DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN)
    })
    .unwrap()
}

/// Runs `line` at `now`: the output, or the error.
fn tc(t: &mut QdiscTree, now: Instant, line: &str) -> Result<String, TcError> {
    let cmd = TcCommand::parse(line)?;
    super::run(t, &cmd, now, &mut Drops::new()).map(Option::unwrap_or_default)
}

fn ok(t: &mut QdiscTree, now: Instant, line: &str) -> String {
    tc(t, now, line).unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// Sends `pps` frames of `len` bytes a second through the tree for
/// `secs` seconds from `from` (each dequeued as it arrives); the time
/// after the last.
fn traffic(t: &mut QdiscTree, from: Instant, secs: u64, pps: u64, len: u32) -> Instant {
    let mut drops = Drops::new();
    let gap = 1_000_000_000 / pps;
    let mut now = from;
    for i in 0..secs * pps {
        now = Instant::from_nanos(from.nanos() + i * gap);
        t.enqueue(flow_pkt(i, len, 1), now, &mut drops);
        while t.dequeue(now, &mut drops).is_some() {}
    }
    Instant::from_nanos(now.nanos() + gap)
}

const LARTC: &str = "tc qdisc add dev left root handle 1: est 1sec 4sec htb default 10
tc class add dev left parent 1: classid 1:1 est 1sec 4sec htb rate 100mbit
tc class add dev left parent 1:1 classid 1:10 estimator 1sec 4sec htb rate 100mbit";

fn lartc() -> QdiscTree {
    let mut t = tree(1);
    for line in LARTC.lines() {
        ok(&mut t, Instant::ZERO, line);
    }
    t
}

#[test]
fn every_estimator_prints_zero_before_traffic() {
    let mut t = lartc();
    let shown = ok(&mut t, Instant::ZERO, "tc -s class show dev left");
    assert_eq!(
        shown
            .matches(" rate 0bit 0pps backlog 0b 0p requeues 0\n")
            .count(),
        2,
        "{shown}"
    );
    let shown = ok(&mut t, Instant::ZERO, "tc -s qdisc show dev left");
    assert!(
        shown.starts_with(
            "qdisc htb 1: root refcnt 2 r2q 10 default 0x10 direct_packets_stat 0 direct_qlen 1000\n \
             Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n \
             rate 0bit 0pps backlog 0b 0p requeues 0\n"
        ),
        "{shown}"
    );
    // Without -s nothing of it shows; a qdisc without one has no rate.
    assert!(!ok(&mut t, Instant::ZERO, "tc class show dev left").contains("pps"));
    let mut plain = tree(1);
    let shown = ok(&mut plain, Instant::ZERO, "tc -s qdisc show dev left");
    assert!(!shown.contains("pps backlog"), "{shown}");
}

#[test]
fn a_steady_flow_reads_as_the_kernel_computes_it() {
    // 1000 frames of 1250 B a second: 1.25 MB/s, 10 Mbit/s. With est
    // 1sec 4sec (interval 0, ewma_log 2) the kernel's fixed point after
    // whole seconds k = 1, 2, 3 holds 1 - (3/4)^k of it: 312500,
    // 546875, 722656 B/s; 250, 437, 578 pps.
    let mut t = lartc();
    let now = traffic(&mut t, Instant::ZERO, 3, 1000, 1250);
    // The last interval ends at 3 s, when the dump runs it.
    let shown = ok(&mut t, now, "tc -s class show dev left classid 1:10");
    assert!(
        shown.contains("\n rate 5781Kbit 578pps backlog 0b 0p requeues 0\n"),
        "{shown}"
    );
    let json = ok(&mut t, now, "tc -s -j class show dev left classid 1:10");
    assert!(
        json.contains("\"requeues\":0,\"rate\":722656,\"pps\":578,\"backlog\":0"),
        "{json}"
    );
    // After 20 s at the same rate it reads 10 Mbit/s.
    let now = traffic(&mut t, now, 20, 1000, 1250);
    // 23 samples of the fixed point (about 1250000 x (1 - (3/4)^23)).
    let json = ok(&mut t, now, "tc -s -j qdisc show dev left");
    assert!(json.contains("\"rate\":1248327,\"pps\":998,"), "{json}");
    let shown = ok(&mut t, now, "tc -s qdisc show dev left");
    assert!(
        shown.contains("\n rate 9986Kbit 998pps backlog 0b 0p requeues 0\n"),
        "{shown}"
    );
}

#[test]
fn an_idle_link_decays_in_the_dump_as_the_timer_would_run() {
    let mut t = lartc();
    let now = traffic(&mut t, Instant::ZERO, 3, 1000, 1250);
    // Two idle seconds later, without a frame: 722656 x 3/4 x 3/4.
    let later = Instant::from_nanos(now.nanos() + 2000 * NS_PER_MS);
    let json = ok(&mut t, later, "tc -s -j class show dev left classid 1:10");
    assert!(json.contains("\"rate\":406494,"), "{json}");
    // Reading changed nothing: the same dump again, and the estimate at
    // the earlier time is still there.
    assert_eq!(
        ok(&mut t, later, "tc -s -j class show dev left classid 1:10"),
        json
    );
    let earlier = ok(&mut t, now, "tc -s -j class show dev left classid 1:10");
    assert!(earlier.contains("\"rate\":722656,"), "{earlier}");
}

#[test]
fn change_replaces_the_estimator_and_keeps_its_average() {
    let mut t = lartc();
    let now = traffic(&mut t, Instant::ZERO, 3, 1000, 1250);
    // A class change with a new estimator: same reading (722656 B/s),
    // sampled from now on every 250 ms.
    ok(
        &mut t,
        now,
        "tc class change dev left parent 1:1 classid 1:10 est 250ms 1sec htb rate 100mbit",
    );
    let json = ok(&mut t, now, "tc -s -j class show dev left classid 1:10");
    assert!(json.contains("\"rate\":722656,"), "{json}");
    // 250 ms idle: one sample of interval -2, ewma_log 2: x 3/4.
    let later = Instant::from_nanos(now.nanos() + 250 * NS_PER_MS);
    let json = ok(&mut t, later, "tc -s -j class show dev left classid 1:10");
    assert!(json.contains("\"rate\":541992,"), "{json}");
    // A change without est keeps the estimator; a qdisc change adds one.
    ok(
        &mut t,
        now,
        "tc class change dev left parent 1:1 classid 1:10 htb rate 50mbit",
    );
    let shown = ok(&mut t, now, "tc -s class show dev left classid 1:10");
    assert!(shown.contains("pps backlog"), "{shown}");
}

#[test]
fn deleting_a_qdisc_or_class_deletes_its_estimator() {
    let mut t = lartc();
    ok(
        &mut t,
        Instant::ZERO,
        "tc qdisc add dev left parent 1:10 handle 10: est 1sec 4sec sfq",
    );
    ok(
        &mut t,
        Instant::ZERO,
        "tc qdisc del dev left parent 1:10 handle 10:",
    );
    ok(
        &mut t,
        Instant::ZERO,
        "tc qdisc add dev left parent 1:10 handle 10: sfq",
    );
    let shown = ok(
        &mut t,
        Instant::ZERO,
        "tc -s qdisc show dev left parent 1:10",
    );
    assert!(!shown.contains("pps backlog"), "{shown}");
    ok(
        &mut t,
        Instant::ZERO,
        "tc qdisc del dev left parent 1:10 handle 10:",
    );
    ok(&mut t, Instant::ZERO, "tc class del dev left classid 1:10");
    ok(
        &mut t,
        Instant::ZERO,
        "tc class add dev left parent 1:1 classid 1:10 htb rate 1mbit",
    );
    let shown = ok(
        &mut t,
        Instant::ZERO,
        "tc -s class show dev left classid 1:10",
    );
    assert!(!shown.contains("pps backlog"), "{shown}");
    // The root replaced by another: its estimator goes with it.
    ok(
        &mut t,
        Instant::ZERO,
        "tc qdisc replace dev left root handle 2: fq_codel",
    );
    let shown = ok(&mut t, Instant::ZERO, "tc -s qdisc show dev left");
    assert!(!shown.contains("pps backlog"), "{shown}");
    // Frames after all that: nothing runs that is gone.
    traffic(&mut t, Instant::ZERO, 2, 100, 1000);
}

#[test]
fn the_kernel_refuses_an_estimator_on_a_multi_queue_root() {
    let mut t = tree(4);
    let e = tc(
        &mut t,
        Instant::ZERO,
        "tc qdisc add dev left root handle 1: est 1sec 4sec mq",
    )
    .unwrap_err();
    assert!(
        e.0.starts_with("Error: Cannot attach rate estimator to a multi-queue root qdisc."),
        "{}",
        e.0
    );
    assert_eq!(e.code(), TcError::KERNEL);
    // Nothing changed: the default mq is still there, and its children
    // take estimators.
    ok(
        &mut t,
        Instant::ZERO,
        "tc qdisc add dev left root handle 1: mq",
    );
    ok(
        &mut t,
        Instant::ZERO,
        "tc qdisc add dev left parent 1:1 handle 11: est 1sec 4sec fq_codel",
    );
    let shown = ok(&mut t, Instant::ZERO, "tc -s qdisc show dev left");
    assert_eq!(shown.matches(" rate 0bit 0pps").count(), 1, "{shown}");
    // qdisc_change ignores it on the mq root.
    ok(
        &mut t,
        Instant::ZERO,
        "tc qdisc change dev left root handle 1: est 1sec 4sec mq",
    );
    let shown = ok(&mut t, Instant::ZERO, "tc -s qdisc show dev left");
    assert_eq!(shown.matches(" rate 0bit 0pps").count(), 1, "{shown}");
}

#[test]
fn tc_refuses_what_tc_setup_estimator_cannot_encode() {
    let mut t = tree(1);
    for (line, says) in [
        (
            "tc qdisc add dev left root est 16sec 64sec pfifo",
            "Error: estimator parameters are out of range.",
        ),
        (
            "tc class add dev left parent 1: classid 1:1 est 1sec 1sec htb rate 1mbit",
            "Error: estimator parameters are out of range.",
        ),
        (
            "tc qdisc add dev left root est soon 4sec pfifo",
            "Error: argument \"invalid estimator interval\" is wrong: estimator",
        ),
        (
            "tc qdisc add dev left root est 1sec 4sec est 1sec 4sec pfifo",
            "Error: duplicate \"estimator\": \"1sec\" is the second value.",
        ),
    ] {
        let e = tc(&mut t, Instant::ZERO, line).unwrap_err();
        assert!(e.0.starts_with(says), "{line}: {}", e.0);
        assert_eq!(e.code(), TcError::ARGS, "{line}");
    }
}

#[test]
fn a_kind_that_ignores_tca_rate_on_classes_takes_the_line() {
    // TBF's one class has no change_class of its own in the kernel (tc
    // refuses before any estimator); QFQ's classes take one.
    let mut t = tree(1);
    ok(
        &mut t,
        Instant::ZERO,
        "tc qdisc add dev left root handle 1: qfq",
    );
    ok(
        &mut t,
        Instant::ZERO,
        "tc class add dev left parent 1: classid 1:1 est 1sec 4sec qfq weight 10",
    );
    let shown = ok(&mut t, Instant::ZERO, "tc -s class show dev left");
    assert!(shown.contains(" rate 0bit 0pps backlog"), "{shown}");
}
