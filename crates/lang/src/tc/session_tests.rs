//! tc text sessions: command sequences as they appear on netdev threads and
//! mailing lists, applied to a device's tree, then `tc show` compared to the
//! text iproute2 prints (tc/tc_qdisc.c `print_qdisc`, tc/tc_class.c
//! `print_class`, tc/tc_util.c `print_tcstats_attr`; the mq sums of
//! net/sched/sch_mq.c `mq_dump`).
use crate::dir::Dir;

use crate::packet::Drops;
use crate::qdisc::testutil::flow_pkt;
use crate::qdisc::tree::{DevSpec, QdiscTree};
use crate::qdisc::Qdisc;
use crate::tc::TcCommand;
use crate::tc::TcError;
use crate::time::Instant;

const T: Instant = Instant::ZERO;
/// The options `tc qdisc show` prints for a default pfifo_fast.
const PFIFO_FAST: &str = "bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1";
/// The options `tc qdisc show` prints for a default fq_codel.
const FQ_CODEL: &str = "limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms \
                        memory_limit 32Mb ecn drop_batch 64 ";

/// Runs each line; returns the output of the last one.
fn session(tree: &mut QdiscTree, lines: &str, drops: &mut Drops) -> String {
    let mut out = String::new();
    for line in lines.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let cmd = TcCommand::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        out = super::run(tree, &cmd, T, drops)
            .unwrap_or_else(|e| panic!("{line}: {e}"))
            .unwrap_or_default();
    }
    out
}

/// Applies one line and returns what the tree answers (output or error).
fn apply(t: &mut QdiscTree, line: &str) -> Result<Option<String>, TcError> {
    let cmd = TcCommand::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
    super::run(t, &cmd, T, &mut Drops::new())
}

/// A single-queue left tap after the session `lines`: the tree, the drops
/// so far and the output of the last line.
fn left_session(lines: &str) -> (QdiscTree, Drops, String) {
    let (mut t, mut d) = (left(1), Drops::new());
    let out = session(&mut t, lines, &mut d);
    (t, d, out)
}

fn left(tx_queues: u16) -> QdiscTree {
    QdiscTree::new(DevSpec {
        tx_queues,
        ..DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN)
    })
    .unwrap()
}

/// Sessions on a fresh single-queue tap and the whole text iproute2 prints
/// for their last line.
#[test]
fn printouts_like_iproute2() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "a fresh tap shows pfifo_fast",
            "tc -s qdisc show dev left",
            "qdisc pfifo_fast 0: root refcnt 2 bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1\n\
             \x20Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n\
             \x20backlog 0b 0p requeues 0\n",
        ),
        (
            "json",
            "tc qdisc add dev left root handle 1: pfifo limit 10
             tc -s -j qdisc show dev left",
            "[{\"kind\":\"pfifo\",\"handle\":\"1:\",\"root\":true,\"refcnt\":2,\"options\":{\"limit\":10},\
             \"bytes\":0,\"packets\":0,\"drops\":0,\"overlimits\":0,\"requeues\":0,\"backlog\":0,\"qlen\":0}]\n",
        ),
        (
            "F-1 fq_codel defaults",
            "tc qdisc add dev left root fq_codel
             tc -s qdisc show dev left",
            "qdisc fq_codel 8001: root refcnt 2 limit 10240p flows 1024 quantum 1514 target 5ms \
             interval 100ms memory_limit 32Mb ecn drop_batch 64 \n \
             Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n \
             backlog 0b 0p requeues 0\n  \
             maxpacket 0 drop_overlimit 0 new_flow_count 0 ecn_mark 0\n  \
             new_flows_len 0 old_flows_len 0\n",
        ),
        (
            "S-6 sfq",
            "tc qdisc add dev left root sfq
             tc qdisc show dev left",
            "qdisc sfq 8001: root refcnt 2 limit 127p quantum 1514b depth 127 divisor 1024 \n",
        ),
        (
            "T-1 tbf",
            "tc qdisc add dev left root tbf rate 1mbit burst 10kb latency 50ms
             tc qdisc show dev left",
            "qdisc tbf 8001: root refcnt 2 rate 1Mbit burst 10Kb lat 50ms \n",
        ),
        (
            "T-1 tbf, details",
            "tc qdisc add dev left root tbf rate 1mbit burst 10kb latency 50ms
             tc -d qdisc show dev left",
            "qdisc tbf 8001: root refcnt 2 rate 1Mbit burst 10Kb/1 mpu 0b lat 50ms linklayer ethernet \n",
        ),
        (
            "htb's default leaves are invisible",
            "tc qdisc add dev left root handle 1: htb
             tc class add dev left parent 1: classid 1:10 htb rate 1mbit
             tc qdisc show dev left",
            "qdisc htb 1: root refcnt 2 r2q 10 default 0 direct_packets_stat 0 direct_qlen 1000\n",
        ),
    ];
    for (what, lines, printed) in cases {
        let (_, _, out) = left_session(lines);
        assert_eq!(out, *printed, "{what}");
    }
}

#[test]
fn vector_m1_mq_sums_children_and_lists_them_newest_first() {
    let mut t = left(4);
    let mut d = Drops::new();
    for q in 0..4u16 {
        for k in 0..=q as u64 {
            let mut p = flow_pkt(q as u64 * 10 + k, 1000, q);
            p.meta.queue_mapping = q;
            t.enqueue(p, T, &mut d);
        }
    }
    while t.dequeue(T, &mut d).is_some() {}
    let out = session(&mut t, "tc -s qdisc show dev left", &mut d);
    let child = |n: u32, bytes: u32| {
        format!(
            "qdisc pfifo_fast 0: parent :{n} {PFIFO_FAST}\n Sent {bytes} bytes {} pkt (dropped 0, \
             overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\n",
            bytes / 1000
        )
    };
    let expected = format!(
        "qdisc mq 0: root \n Sent 10000 bytes 10 pkt (dropped 0, overlimits 0 requeues 0) \n \
         backlog 0b 0p requeues 0\n{}{}{}{}",
        child(4, 4000),
        child(3, 3000),
        child(2, 2000),
        child(1, 1000)
    );
    assert_eq!(out, expected);
    let classes = session(&mut t, "tc class show dev left", &mut d);
    assert_eq!(
        classes,
        "class mq :1 root \nclass mq :2 root \nclass mq :3 root \nclass mq :4 root \n"
    );
}

#[test]
fn mq_child_replaced_from_a_thread() {
    // "tc qdisc add dev eth0 parent :3 pfifo" style on the default mq.
    let mut t = left(4);
    let out = session(
        &mut t,
        "tc qdisc add dev left parent :3 handle 30: pfifo limit 100
         tc qdisc show dev left",
        &mut Drops::new(),
    );
    // The handle-0 defaults share hash bucket 0 (newest first); 30: sits in
    // a later bucket, so it is listed after them.
    assert_eq!(
        out,
        format!(
            "qdisc mq 0: root \n\
             qdisc pfifo_fast 0: parent :4 {PFIFO_FAST}\n\
             qdisc pfifo_fast 0: parent :2 {PFIFO_FAST}\n\
             qdisc pfifo_fast 0: parent :1 {PFIFO_FAST}\n\
             qdisc pfifo 30: parent :3 limit 100p\n"
        )
    );
    let classes = session(
        &mut t,
        "tc class show dev left classid :3",
        &mut Drops::new(),
    );
    assert_eq!(classes, "class mq :3 root leaf 30: \n");
}

#[test]
fn qfq_session_with_filter_and_leaf() {
    let (mut t, mut d, out) = left_session(
        "tc qdisc add dev left root handle 1: qfq
         tc class add dev left parent 1: classid 1:1 qfq weight 10
         tc class add dev left parent 1: classid 1:2 qfq weight 20 maxpkt 2000
         tc qdisc add dev left parent 1:2 handle 20: pfifo limit 50
         tc filter add dev left parent 1: protocol all prio 1 matchall flowid 1:2
         tc qdisc show dev left",
    );
    assert_eq!(
        out,
        "qdisc qfq 1: root refcnt 2 \nqdisc pfifo 20: parent 1:2 limit 50p\n"
    );
    for id in 0..3 {
        t.enqueue(flow_pkt(id, 500, 0), T, &mut d);
    }
    assert!(t.dequeue(T, &mut d).is_some());
    // (the kernel's QFQ counts class bytes at enqueue)
    let classes = session(&mut t, "tc -s class show dev left", &mut d);
    assert_eq!(
        classes,
        "class qfq 1:1 root weight 10 maxpkt 1514 \n \
         Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n \
         backlog 0b 0p requeues 0\n\
         class qfq 1:2 root leaf 20: weight 20 maxpkt 2000 \n \
         Sent 1500 bytes 3 pkt (dropped 0, overlimits 0 requeues 0) \n \
         backlog 1000b 2p requeues 0\n"
    );
    // change a class, delete a class, then the root
    session(
        &mut t,
        "tc class change dev left classid 1:1 qfq weight 5
         tc class del dev left classid 1:1",
        &mut d,
    );
    let out = session(&mut t, "tc class show dev left", &mut d);
    assert_eq!(out, "class qfq 1:2 root leaf 20: weight 20 maxpkt 2000 \n");
    session(&mut t, "tc qdisc del dev left root", &mut d);
    // the two held frames moved into the default pfifo_fast
    assert_eq!((t.kind(), t.qlen()), ("pfifo_fast", 2));
}

#[test]
fn class_errors_like_the_kernel() {
    let (mut t, mut d, _) = left_session(
        "tc qdisc add dev left root handle 1: qfq
         tc class add dev left parent 1: classid 1:1 qfq",
    );
    let refused = [
        (
            "tc class add dev left parent 1: classid 1:1 qfq weight 2",
            "RTNETLINK answers: File exists",
        ),
        (
            "tc class change dev left classid 1:7 qfq weight 2",
            "RTNETLINK answers: No such file or directory",
        ),
        (
            "tc class add dev left parent 2: classid 1:3 qfq",
            "RTNETLINK answers: Invalid argument",
        ),
        (
            "tc filter add dev left parent 1:9 protocol all matchall flowid 1:1",
            "Error: Specified class doesn't exist.",
        ),
        (
            "tc filter add dev left parent 7: protocol all matchall flowid 1:1",
            "Error: Parent Qdisc doesn't exists.",
        ),
    ];
    for (line, starts) in refused {
        let e = apply(&mut t, line).unwrap_err();
        assert!(e.0.starts_with(starts), "{line}: {e}");
    }
    // replace creates, then changes
    apply(&mut t, "tc class replace dev left classid 1:3 qfq weight 3").unwrap();
    apply(&mut t, "tc class replace dev left classid 1:3 qfq weight 4").unwrap();
    let out = session(&mut t, "tc class show dev left classid 1:3", &mut d);
    assert_eq!(out, "class qfq 1:3 root weight 4 maxpkt 1514 \n");
    let e = apply(&mut t, "tc filter del dev left parent 1: prio 1").unwrap_err();
    assert!(e.0.contains("not found"), "{e}");
}

#[test]
fn vector_s6_sfq_replace_is_refused() {
    // SFQ has no `change` (net/sched/sch_sfq.c `sfq_qdisc_ops`: `.change =
    // NULL`, so net/sched/sch_api.c `qdisc_change` returns EINVAL): same-kind
    // replace is refused.
    let (mut t, _, _) = left_session("tc qdisc add dev left root sfq");
    assert!(apply(&mut t, "tc qdisc replace dev left root sfq perturb 10").is_err());
    let out = session(
        &mut t,
        "tc qdisc del dev left root
         tc qdisc add dev left root sfq perturb 10
         tc -d qdisc show dev left",
        &mut Drops::new(),
    );
    assert_eq!(
        out,
        "qdisc sfq 8002: root refcnt 2 limit 127p quantum 1514b depth 127 flows 128 divisor 1024 \
         perturb 10sec \n"
    );
}

#[test]
fn vector_m1_with_fq_codel_as_default_qdisc() {
    let mut t = QdiscTree::new(DevSpec {
        tx_queues: 2,
        default_qdisc: "fq_codel".into(),
        ..DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN)
    })
    .unwrap();
    let out = session(&mut t, "tc qdisc show dev left", &mut Drops::new());
    assert_eq!(
        out,
        format!(
            "qdisc mq 0: root \nqdisc fq_codel 0: parent :2 {FQ_CODEL}\nqdisc fq_codel 0: parent :1 {FQ_CODEL}\n"
        )
    );
}

#[test]
fn fq_codel_change_and_codel_leaf_under_qfq() {
    let (mut t, mut d, out) = left_session(
        "tc qdisc add dev left root fq_codel
         tc qdisc change dev left root fq_codel limit 100 target 10ms
         tc qdisc show dev left",
    );
    assert!(
        out.starts_with("qdisc fq_codel 8001: root refcnt 2 limit 100p"),
        "{out}"
    );
    assert!(out.contains("target 10ms"), "{out}");
    let out = session(
        &mut t,
        "tc qdisc replace dev left root handle 1: qfq
         tc class add dev left parent 1: classid 1:1 qfq
         tc qdisc add dev left parent 1:1 codel
         tc qdisc show dev left",
        &mut d,
    );
    assert!(
        out.starts_with("qdisc qfq 1: root refcnt 2 \nqdisc codel 8002: parent 1:1 limit"),
        "{out}"
    );
}

#[test]
fn grafting_under_a_class_keeps_the_frames() {
    let (mut t, mut d, _) = left_session(
        "tc qdisc add dev left root handle 1: qfq
         tc class add dev left parent 1: classid 1:1 qfq
         tc filter add dev left parent 1: protocol all matchall flowid 1:1",
    );
    for id in 0..4 {
        t.enqueue(flow_pkt(id, 300, 0), T, &mut d);
    }
    // a smaller leaf takes over: 2 frames fit, 2 are dropped
    session(
        &mut t,
        "tc qdisc add dev left parent 1:1 handle 10: pfifo limit 2",
        &mut d,
    );
    assert_eq!((t.qlen(), d.len()), (2, 2));
    // deleting it puts the default pfifo back, frames included
    session(&mut t, "tc qdisc del dev left parent 1:1", &mut d);
    assert_eq!(t.qlen(), 2);
    let ids: Vec<u64> = std::iter::from_fn(|| t.dequeue(T, &mut d))
        .map(|p| p.meta.id)
        .collect();
    assert_eq!(ids, vec![0, 1]);
}

#[test]
fn show_selectors() {
    let (mut t, _, _) = left_session(
        "tc qdisc add dev left root handle 1: qfq
         tc class add dev left parent 1: classid 1:1 qfq
         tc class add dev left parent 1: classid 1:2 qfq
         tc qdisc add dev left parent 1:2 handle 20: fq_codel",
    );
    let only = |t: &mut QdiscTree, l: &str| session(t, l, &mut Drops::new());
    assert_eq!(
        only(&mut t, "tc qdisc show dev left root"),
        "qdisc qfq 1: root refcnt 2 \n"
    );
    assert!(only(&mut t, "tc qdisc show dev left handle 20:")
        .starts_with("qdisc fq_codel 20: parent 1:2 limit"));
    assert!(only(&mut t, "tc qdisc show dev left parent 1:2").starts_with("qdisc fq_codel 20:"));
    assert_eq!(only(&mut t, "tc qdisc show dev left handle 30:"), "");
    // invisible lists the default pfifo of 1:1 too
    let all = only(&mut t, "tc qdisc show dev left invisible");
    assert!(
        all.contains("qdisc pfifo 0: parent 1:1 limit 1000p\n"),
        "{all}"
    );
    let classes = only(&mut t, "tc class show dev left parent 1:");
    assert_eq!(classes.lines().count(), 2);
    assert_eq!(only(&mut t, "tc class show dev left parent 20:"), "");
    // the whole device listing names it
    assert!(only(&mut t, "tc qdisc").starts_with("qdisc qfq 1: dev left root refcnt 2 \n"));
}

#[test]
fn vector_f6_fq_codel_flow_classes() {
    let (mut t, mut d, _) = left_session("tc qdisc add dev left root fq_codel");
    t.enqueue(flow_pkt(1, 1514, 7), T, &mut d);
    let out = session(&mut t, "tc -s class show dev left", &mut d);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(lines[0].starts_with("class fq_codel 8001:"), "{out}");
    assert!(lines[0].ends_with(" parent 8001: "), "{out}");
    assert_eq!(lines[1], " (dropped 0, overlimits 0 requeues 0) ");
    assert_eq!(lines[2], " backlog 1514b 1p requeues 0");
    assert!(lines[3].starts_with("  deficit "), "{out}");
}

#[test]
fn vector_t1_tbf_child_and_class() {
    // its default bfifo child is not listed
    let (mut t, _, out) = left_session(
        "tc qdisc add dev left root tbf rate 1mbit burst 10kb latency 50ms
         tc qdisc show dev left",
    );
    assert_eq!(out.lines().count(), 1);
    let out = session(&mut t, "tc class show dev left", &mut Drops::new());
    assert_eq!(out, "class tbf 8001:1 parent 8001: \n");
}

#[test]
fn htb_session_from_a_netdev_thread() {
    let (mut t, mut d, out) = left_session(
        "tc qdisc add dev left root handle 1: htb default 10
         tc class add dev left parent 1: classid 1:1 htb rate 100mbit ceil 100mbit
         tc class add dev left parent 1:1 classid 1:10 htb rate 30mbit ceil 100mbit
         tc class add dev left parent 1:1 classid 1:20 htb rate 70mbit ceil 100mbit prio 1
         tc qdisc add dev left parent 1:10 handle 10: sfq perturb 10
         tc qdisc add dev left parent 1:20 handle 20: fq_codel
         tc qdisc show dev left",
    );
    assert_eq!(
        out,
        format!(
            "qdisc htb 1: root refcnt 2 r2q 10 default 0x10 direct_packets_stat 0 direct_qlen 1000\n\
             qdisc sfq 10: parent 1:10 limit 127p quantum 1514b depth 127 divisor 1024 perturb 10sec \n\
             qdisc fq_codel 20: parent 1:20 {FQ_CODEL}\n"
        )
    );
    let classes = session(&mut t, "tc class show dev left", &mut d);
    for line in [
        "class htb 1:1 root rate 100Mbit ceil 100Mbit burst 1600b cburst 1600b \n",
        "class htb 1:10 parent 1:1 leaf 10: prio 0 rate 30Mbit ceil 100Mbit burst 1593b cburst 1600b \n",
        "class htb 1:20 parent 1:1 leaf 20: prio 1 rate 70Mbit ceil 100Mbit burst 1583b cburst 1600b \n",
    ] {
        assert!(classes.contains(line), "{classes}");
    }
    // Idle class stats: tokens/ctokens are the full buffers in psched ticks
    // (net/sched/sch_htb.c `htb_dump_class_stats`), with the empty line
    // iproute2 leaves after HTB xstats (tc/q_htb.c `htb_print_xstats`)
    let stats = session(&mut t, "tc -s class show dev left classid 1:10", &mut d);
    assert_eq!(
        stats,
        "class htb 1:10 parent 1:1 leaf 10: prio 0 rate 30Mbit ceil 100Mbit burst 1593b cburst 1600b \n \
         Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n \
         backlog 0b 0p requeues 0\n \
         lended: 0 borrowed: 0 giants: 0\n \
         tokens: 6656 ctokens: 2000\n\n"
    );
    // traffic goes to the default class and its sfq
    for id in 0..5 {
        t.enqueue(flow_pkt(id, 1000, id as u16), T, &mut d);
    }
    assert_eq!(t.qlen(), 5);
    let out = session(&mut t, "tc -s qdisc show dev left handle 10:", &mut d);
    assert!(out.contains(" backlog 5000b 5p requeues 0\n"), "{out}");
}

#[test]
fn htb_quantum_warning_is_returned() {
    let (mut t, mut d, _) = left_session("tc qdisc add dev left root handle 1: htb");
    let cmd =
        TcCommand::parse("tc class add dev left parent 1: classid 1:10 htb rate 30mbit").unwrap();
    let out = super::run(&mut t, &cmd, T, &mut d).unwrap();
    assert_eq!(
        out.as_deref(),
        Some("Warning: sch_htb: quantum of class 10010 is big. Consider r2q change.\n")
    );
    // once only
    let cmd =
        TcCommand::parse("tc class change dev left classid 1:10 htb rate 30mbit quantum 1514")
            .unwrap();
    assert_eq!(super::run(&mut t, &cmd, T, &mut d).unwrap(), None);
}

#[test]
fn filters_add_show_delete() {
    let (mut t, mut d, _) = left_session(
        "tc qdisc add dev left root handle 1: qfq
         tc class add dev left parent 1: classid 1:10 qfq
         tc class add dev left parent 1: classid 1:20 qfq
         tc filter add dev left parent 1: protocol all prio 1 matchall flowid 1:10",
    );
    let shown = session(&mut t, "tc filter show dev left", &mut d);
    assert!(
        shown.starts_with("filter parent 1: protocol all pref 1 matchall chain 0 \n"),
        "{shown}"
    );
    t.enqueue(flow_pkt(1, 500, 0), T, &mut d);
    let s10 = session(&mut t, "tc -s class show dev left classid 1:10", &mut d);
    assert!(s10.contains(" backlog 500b 1p"), "{s10}");
    assert!(apply(&mut t, "tc filter del dev left parent 1: prio 2")
        .unwrap_err()
        .0
        .contains("not found"));
    apply(&mut t, "tc filter del dev left parent 1: prio 1").unwrap();
    assert_eq!(session(&mut t, "tc filter show dev left", &mut d), "");
    assert!(apply(&mut t, "tc filter show")
        .unwrap_err()
        .0
        .contains("dev"));
}

#[test]
fn htb_filter_steers_through_the_tree() {
    let (mut t, mut d, _) = left_session(
        "tc qdisc add dev left root handle 1: htb default 10
         tc class add dev left parent 1: classid 1:10 htb rate 10mbit quantum 1514
         tc class add dev left parent 1: classid 1:20 htb rate 10mbit quantum 1514
         tc filter add dev left parent 1: protocol all prio 1 matchall flowid 1:20",
    );
    t.enqueue(flow_pkt(1, 700, 0), T, &mut d);
    let s = session(&mut t, "tc -s class show dev left classid 1:20", &mut d);
    assert!(s.contains(" backlog 700b 1p requeues 0\n"), "{s}");
    // Shown and deleted like any qdisc's; then the default class takes it.
    let shown = session(&mut t, "tc filter show dev left parent 1:", &mut d);
    assert!(shown.contains("matchall"), "{shown}");
    session(&mut t, "tc filter del dev left parent 1: prio 1", &mut d);
    assert_eq!(session(&mut t, "tc filter show dev left", &mut d), "");
    t.enqueue(flow_pkt(2, 300, 0), T, &mut d);
    let s = session(&mut t, "tc -s class show dev left classid 1:10", &mut d);
    assert!(s.contains(" backlog 300b 1p requeues 0\n"), "{s}");
}

/// SFQ and fq_codel take filters on the qdisc itself (`sfq_tcf_block`,
/// `fq_codel_tcf_block`): the class a filter returns names the bucket, and a
/// frame no filter places, or placed out of range, is dropped.
#[test]
fn sfq_and_fq_codel_filters_pick_the_bucket() {
    use crate::packet::DropReason;
    for kind in ["fq_codel", "sfq"] {
        let (mut t, mut d, _) = left_session(&format!(
            "tc qdisc add dev left root handle 1: {kind}
             tc filter add dev left parent 1: protocol all prio 1 matchall flowid 1:3"
        ));
        for f in 0..5 {
            t.enqueue(flow_pkt(f, 500, f as u16), T, &mut d);
        }
        let s = session(&mut t, "tc -s class show dev left", &mut d);
        assert!(s.contains(&format!("class {kind} 1:3 ")), "{kind}: {s}");
        assert!(
            s.contains("backlog 2500b 5p"),
            "{kind}: all five flows in 1:3: {s}"
        );
        let shown = session(&mut t, "tc filter show dev left", &mut d);
        assert!(
            shown.starts_with("filter parent 1: protocol all pref 1 matchall chain 0 \n"),
            "{kind}: {shown}"
        );
        let e = apply(
            &mut t,
            "tc filter add dev left parent 1:3 protocol all prio 2 matchall flowid 1:3",
        )
        .unwrap_err()
        .0;
        assert!(e.contains("Invalid argument"), "{kind}: {e}");
        // A class has no filter block: nothing to show, as the kernel's dump.
        assert_eq!(
            session(&mut t, "tc filter show dev left parent 1:3", &mut d),
            "",
            "{kind}"
        );
        // No filter matches (an IPv4 port match; these frames are not
        // IPv4), then one that names a bucket out of range: both dropped.
        session(
            &mut t,
            "tc filter del dev left parent 1: prio 1
             tc filter add dev left parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:3
             tc filter add dev left parent 1: protocol all prio 2 matchall flowid 1:fffe",
            &mut d,
        );
        let before = d.len();
        t.enqueue(flow_pkt(10, 500, 1), T, &mut d);
        assert_eq!(d.since(before).len(), 1, "{kind}");
        assert_eq!(d.since(before)[0].1, DropReason::Unclassified, "{kind}");
        // Without filters the hash places frames again.
        session(&mut t, "tc filter del dev left parent 1:", &mut d);
        let before = d.len();
        t.enqueue(flow_pkt(11, 500, 1), T, &mut d);
        assert_eq!(d.len(), before, "{kind}");
        assert_eq!(session(&mut t, "tc filter show dev left", &mut d), "");
    }
}

/// CAKE takes filters on the qdisc itself (`cake_tcf_block`,
/// `cake_classify`): the class id's minor names the flow queue, so one
/// filter pins every flow into one queue. Unlike SFQ and fq_codel, a
/// frame no filter matches, or whose minor is past 1024, is not dropped:
/// the hash places it. An skbedit priority `1:n` picks the n-th tin tc
/// prints (`cake_select_tin`).
#[test]
fn cake_filters_pick_the_flow_queue_and_the_tin() {
    let (mut t, mut d, _) = left_session(
        "tc qdisc add dev left root handle 1: cake besteffort flows
         tc filter add dev left parent 1: protocol all prio 1 matchall flowid 1:3",
    );
    for f in 0..5 {
        t.enqueue(flow_pkt(f, 500, f as u16), T, &mut d);
    }
    let s = session(&mut t, "tc -s class show dev left", &mut d);
    assert!(s.starts_with("class cake 1:3 parent 1: \n"), "{s}");
    assert_eq!(s.matches("class cake").count(), 1, "{s}");
    assert!(s.contains("backlog 2500b 5p"), "all five flows in 1:3: {s}");
    let shown = session(&mut t, "tc filter show dev left", &mut d);
    assert!(
        shown.starts_with("filter parent 1: protocol all pref 1 matchall chain 0 \n"),
        "{shown}"
    );
    let e = apply(
        &mut t,
        "tc filter add dev left parent 1:3 protocol all prio 2 matchall flowid 1:3",
    )
    .unwrap_err()
    .0;
    assert!(e.contains("Invalid argument"), "{e}");
    // No filter matches, then one naming a queue past 1024: both hashed,
    // each flow into a queue of its own, nothing dropped.
    let (mut t, mut d, _) = left_session(
        "tc qdisc add dev left root handle 1: cake besteffort flows
         tc filter add dev left parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:3
         tc filter add dev left parent 1: protocol all prio 2 matchall flowid 1:fffe",
    );
    for f in 0..3 {
        t.enqueue(flow_pkt(f, 500, f as u16), T, &mut d);
    }
    assert!(d.is_empty());
    let s = session(&mut t, "tc -s class show dev left", &mut d);
    assert_eq!(s.matches("class cake").count(), 3, "{s}");
    assert_eq!(s.matches("backlog 500b 1p").count(), 3, "{s}");
    // diffserv4 prints Bulk, Best Effort, Video, Voice: priority 1:4 is
    // Voice, the fourth tin, whose classes are 1:c01 and up.
    let (mut t, mut d, _) = left_session(
        "tc qdisc add dev left root handle 1: cake diffserv4
         tc filter add dev left parent 1: protocol all prio 1 matchall action skbedit priority 1:4",
    );
    t.enqueue(flow_pkt(1, 500, 1), T, &mut d);
    let s = session(&mut t, "tc -s class show dev left", &mut d);
    assert!(s.starts_with("class cake 1:c"), "{s}");
    let q = session(&mut t, "tc -s qdisc show dev left", &mut d);
    let backlog = q.lines().find(|l| l.starts_with("  backlog ")).unwrap();
    assert_eq!(
        backlog.split_whitespace().collect::<Vec<_>>(),
        ["backlog", "0b", "0b", "0b", "500b"],
        "{q}"
    );
}

/// Per-host fairness, the classic use of the `flow` classifier on SFQ and
/// fq_codel: buckets by destination address, not by flow.
#[test]
fn flow_filter_hash_keys_dst_makes_one_bucket_per_host() {
    use crate::packet::L3;
    let to_host = |id: u64, flow: u16, host: u8| {
        let mut p = flow_pkt(id, 1000, flow);
        p.meta.l3 = L3::Ipv4 { offset: 14 };
        p.meta.flow.dst[12..].copy_from_slice(&[10, 0, 0, host]);
        p
    };
    for kind in ["sfq", "fq_codel"] {
        let (mut t, mut d, _) = left_session(&format!(
            "tc qdisc add dev left root handle 1: {kind}
             tc filter add dev left parent 1: handle 1 protocol all flow hash keys dst divisor 1024"
        ));
        // Three flows to host 2, one to host 3.
        for (id, (flow, host)) in [(1, 2), (2, 2), (3, 2), (4, 3)].into_iter().enumerate() {
            t.enqueue(to_host(id as u64, flow, host), T, &mut d);
        }
        let s = session(&mut t, "tc -s class show dev left", &mut d);
        let backlogs: Vec<&str> = s
            .lines()
            .filter(|l| l.trim_start().starts_with("backlog ") && !l.contains(" 0b "))
            .collect();
        assert_eq!(backlogs.len(), 2, "{kind}: one bucket per host: {s}");
        assert!(s.contains("backlog 3000b 3p"), "{kind}: {s}");
        assert!(s.contains("backlog 1000b 1p"), "{kind}: {s}");
        let shown = session(&mut t, "tc filter show dev left", &mut d);
        assert!(
            shown.ends_with("flow chain 0 handle 0x1 hash keys dst divisor 1024 baseclass 1:1 \n"),
            "{kind}: {shown}"
        );
    }
}

/// tc unit parsing and printing end to end: typed on a tc line, printed back
/// by show (lib/utils.c `get_rate64`, `get_size`; tc/tc_util.c `get_time`;
/// lib/json_print.c `print_color_rate`, `sprint_size`; tc/tc_util.c
/// `sprint_time`).
#[test]
fn vectors_u_through_the_front_end() {
    let cases: &[(&str, &str)] = &[
        (
            "tbf rate 1mbit burst 10kb latency 50ms",
            "rate 1Mbit burst 10Kb",
        ), // 1mbit = 125000 B/s; 10kb = 10240 B
        (
            "tbf rate 100kbps burst 10k latency 50ms",
            "rate 800Kbit burst 10Kb",
        ), // suffixes match case-insensitively: kbps = kilobytes/s; 10k = 10 KiB
        (
            "tbf rate 1.5mbit burst 10KB latency 50ms",
            "rate 1500Kbit burst 10Kb",
        ), // 1500000 bit/s: 1500 is no multiple of 1000, so Kbit; 10KB = 10 KiB
        (
            "tbf rate 100 burst 10kb limit 20kb",
            "rate 96bit burst 10Kb",
        ), // bare rate = bit/s: 100 / 8 truncated = 12 B/s = 96 bit/s
        // Bare time = µs: 5 µs, not 5 ms; the kernel keeps 5000 ns >> 10 = 4
        // codel units (net/sched/sch_fq_codel.c `fq_codel_change`) and dumps
        // 4 × 1024 ns = 4 µs (include/net/codel.h `codel_time_to_us`).
        ("fq_codel target 5", "target 4us"),
        (
            "fq_codel target 5ms interval 100ms",
            "target 5ms interval 100ms",
        ), // 4882 and 97656 codel units dump as 4999 and 99999 µs
        ("fq_codel memory_limit 32Mb", "memory_limit 32Mb"), // 33554432 B
        ("bfifo limit 1536", "limit 1536b"),                 // not 1.5Kb
        ("htb default 20", "default 0x20"),                  // a hex minor
    ];
    for (qdisc, printed) in cases {
        let (_, _, out) = left_session(&format!(
            "tc qdisc add dev left root {qdisc}\ntc qdisc show dev left"
        ));
        assert!(out.contains(printed), "{qdisc}: {out}");
    }
}

#[test]
fn htb_class_json() {
    let (mut t, mut d, _) = left_session(
        "tc qdisc add dev left root handle 1: htb
         tc class add dev left parent 1: classid 1:10 htb rate 1mbit",
    );
    let json = session(&mut t, "tc -j class show dev left", &mut d);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v[0]["class"], "htb");
    assert_eq!(v[0]["handle"], "1:10");
    assert_eq!(v[0]["root"], true);
    assert!(v[0]["options"].is_object());
}

#[test]
fn tbf_with_fq_codel_child_recipe() {
    let (mut t, mut d, out) = left_session(
        "tc qdisc add dev left root handle 1: tbf rate 10mbit burst 10kb latency 50ms
         tc qdisc add dev left parent 1:1 fq_codel
         tc qdisc show dev left",
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(
        lines[0],
        "qdisc tbf 1: root refcnt 2 rate 10Mbit burst 10Kb lat 50ms "
    );
    assert!(
        lines[1].starts_with("qdisc fq_codel 8001: parent 1:1 limit 10240p"),
        "{out}"
    );
    for id in 0..20 {
        t.enqueue(flow_pkt(id, 1000, (id % 4) as u16), T, &mut d);
    }
    // the bucket (10 KiB) lets 10 frames go at once; the rest wait in fq_codel
    let sent = std::iter::from_fn(|| t.dequeue(T, &mut d)).count();
    assert_eq!(sent, 10);
    let out = session(&mut t, "tc -s qdisc show dev left handle 8001:", &mut d);
    assert!(out.contains(" backlog 10000b 10p requeues 0\n"), "{out}");
    let root = session(&mut t, "tc -s qdisc show dev left root", &mut d);
    assert!(root.contains(" Sent 10000 bytes 10 pkt"), "{root}");
}

/// Two SFQ leaves under one HTB perturb their hashes each its own way, as
/// two kernel instances draw their own keys (`sfq_init`): the same flows
/// land in other buckets of each. (Before every classful qdisc derived its
/// children's ctx through `QdiscCtx::child`, HTB handed both the same seed.)
#[test]
fn sfq_leaves_under_one_htb_hash_differently() {
    let (mut t, mut d, _) = left_session(
        "qdisc add dev left root handle 1: htb default 10
         class add dev left parent 1: classid 1:10 htb rate 10mbit
         class add dev left parent 1: classid 1:20 htb rate 10mbit
         qdisc add dev left parent 1:10 handle 10: sfq
         qdisc add dev left parent 1:20 handle 20: sfq",
    );
    for class in [0x0001_0010u32, 0x0001_0020] {
        for flow in 0..16u16 {
            let mut p = flow_pkt(u64::from(flow), 100, flow);
            p.meta.priority = class;
            t.enqueue(p, T, &mut d);
        }
    }
    assert!(d.is_empty());
    let dump = t.dump(T);
    let buckets = |handle: u32| -> Vec<(u16, u32)> {
        let leaf = dump.children.iter().find(|c| c.handle == handle).unwrap();
        let mut v: Vec<(u16, u32)> = leaf
            .flows
            .iter()
            .map(|f| (f.flow.unwrap().src_port, f.bucket))
            .collect();
        v.sort_unstable();
        v
    };
    let (a, b) = (buckets(0x0010_0000), buckets(0x0020_0000));
    assert_eq!(a.len(), 16);
    assert_eq!(b.len(), 16);
    let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
    assert!(same < 4, "{same} of 16 flows share a bucket: {a:?} {b:?}");
}

#[test]
fn policy_sees_htb_and_tbf_in_built_trees() {
    let mut policy = crate::link::offload::GsoPolicy {
        whole_min_rate_bytes_ps: 125_000_000,
        forward_gro: false,
    };
    let params = crate::link::LinkParams {
        rate_bytes_ps: 125_000_000,
        ..crate::link::LinkParams::default()
    };
    let up_to = |policy: &crate::link::offload::GsoPolicy, lines: &[&str]| {
        let tree = crate::tc::build_tree(
            params.dev_spec(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN),
            lines,
        )
        .unwrap();
        policy.whole_up_to(
            &params,
            &crate::link::LinkShape::default(),
            &tree.dump(T),
            crate::qdisc::kinds::BUILTIN,
        )
    };
    let whole = |lines: &[&str]| up_to(&policy, lines).is_some();
    // configs/htb-sfq-100mbit.toml: 100 Mbit/s HTB on a 1 Gbit/s link.
    assert!(!whole(&[
        "tc qdisc add dev left root handle 1: htb default 10",
        "tc class add dev left parent 1: classid 1:10 htb rate 100mbit ceil 100mbit",
        "tc qdisc add dev left parent 1:10 handle 10: sfq perturb 10",
    ]));
    assert!(!whole(&[
        "tc qdisc add dev left root tbf rate 20mbit burst 20kb latency 20ms"
    ]));
    assert!(whole(&["tc qdisc add dev left root fq_codel"]));
    assert!(whole(&[]), "the default pfifo_fast");
    // A forwarding router with GRO: HTB sees super-frames whole, TBF those
    // its 20 KB bucket holds (20kb = 20480 bytes).
    policy.forward_gro = true;
    assert_eq!(
        up_to(
            &policy,
            &[
                "tc qdisc add dev left root handle 1: htb default 10",
                "tc class add dev left parent 1: classid 1:10 htb rate 100mbit ceil 100mbit",
                "tc qdisc add dev left parent 1:10 handle 10: sfq perturb 10",
            ]
        ),
        Some(u64::MAX)
    );
    assert_eq!(
        up_to(
            &policy,
            &["tc qdisc add dev left root tbf rate 20mbit burst 20kb latency 20ms"]
        ),
        Some(20_480)
    );
    assert_eq!(
        up_to(&policy, &[
            "tc qdisc add dev left root handle 1: htb default 10",
            "tc class add dev left parent 1: classid 1:10 htb rate 100mbit",
            "tc qdisc add dev left parent 1:10 tbf rate 20mbit burst 9000 peakrate 30mbit mtu 3000 latency 20ms"
        ]),
        // tc turns `mtu 3000` into ticks of the peak rate, and the kernel's
        // psched_ns_t2l of those ticks gives one byte less.
        Some(2999),
        "the peak bucket bounds it"
    );
}

/// `tc -s qdisc show` through a path, as the datapath runs it.
fn show_through(p: &mut crate::link::Path, t: Instant) -> String {
    let cmd = TcCommand::parse("tc -s qdisc show dev left").unwrap();
    p.edit_qdisc(t, |tree, t, d| super::run(tree, &cmd, t, d))
        .unwrap()
        .unwrap_or_default()
}

/// The requeue slot (net/sched/sch_generic.c `dev_requeue_skb`): a frame
/// that finds the qdisc empty bypasses it (`__dev_xmit_skb`, counted Sent)
/// while the driver's queue is stopped, so `sch_direct_xmit` parks it on
/// the root: it shows in the root's backlog and qlen and in `requeues`,
/// and leaves first when the ring frees a slot.
#[test]
fn a_frame_bypassing_into_a_stopped_queue_is_requeued_on_the_root() {
    use crate::link::{LinkParams, Path};
    let params = LinkParams {
        rate_bytes_ps: 1_000_000, // 1000 B = 1 ms
        tx_ring: 1,
        bql: false,
        ..LinkParams::default()
    };
    let mut p = Path::new(params, left(1));
    for id in 0..3 {
        p.ingress(flow_pkt(id, 1000, 0), T);
    }
    let text = |sent: u32, backlog: u32| {
        format!(
            "qdisc pfifo_fast 0: root refcnt 2 {PFIFO_FAST}\n Sent {} bytes {sent} pkt \
             (dropped 0, overlimits 0 requeues 1) \n backlog {}b {backlog}p requeues 1\n",
            sent * 1000,
            backlog * 1000
        )
    };
    // Frame 0 on the ring, frame 1 in the slot, frame 2 in band 1.
    assert_eq!(show_through(&mut p, T), text(2, 2));
    // Frame 0 leaves at 1 ms: the slot's frame goes to the ring.
    let ms = Instant::from_millis;
    assert_eq!(show_through(&mut p, ms(1)), text(2, 1));
    assert_eq!(show_through(&mut p, ms(2)), text(3, 0));
}

/// Under mq the slot is the TX queue's own qdisc (`txq->qdisc`), and mq
/// adds its children up (net/sched/sch_mq.c `mq_dump`): a bulk batch that
/// overruns its queue's ring parks each refused frame on that queue's
/// child. Each queue has its own ring and DQL (`netdev_queue.dql`).
#[test]
fn requeued_frames_count_on_their_queues_child_under_mq() {
    use crate::link::{LinkParams, Path};
    let params = LinkParams {
        rate_bytes_ps: 125_000_000,
        tx_ring: 4,
        bulk_dequeue: true,
        tx_queues: 2,
        ..LinkParams::default()
    };
    let mut p = Path::new(params, left(2));
    assert!(p.set_bql_bounds(10_000, 10_000));
    for id in 0..20u64 {
        let q = (id % 2) as u16;
        let mut f = flow_pkt(id, 1514, q);
        f.meta.queue_mapping = q;
        p.ingress(f, T);
    }
    // Frames 0 (queue 0) and 1 (queue 1) each stop their own queue (BQL
    // limit 0). At frame 0's completion queue 0's limit is 10000: its
    // child hands out 2, 4, ..., 14 (try_bulk_dequeue_skb: 10000 - 1514
    // bytes of budget), ring 0 takes four and 10, 12, 14 are requeued on
    // queue 0's child. Queue 1 waits for frame 1, now on the wire.
    let t1 = p.poll_at().unwrap();
    let (mut out, mut freed) = (Vec::new(), Vec::new());
    p.poll(t1, &mut out, &mut freed);
    let s = p.snapshot(t1);
    assert_eq!((s.ring_used, s.requeued, s.requeues), (5, 3, 3));
    let used: Vec<u32> = s.tx_queues.iter().map(|q| q.ring_used).collect();
    assert_eq!(used, vec![4, 1]);
    let stats = |d: &crate::qdisc::QdiscDump| (d.stats.qlen, d.stats.backlog, d.stats.requeues);
    assert_eq!(stats(&s.qdisc), (14, 14 * 1514, 3));
    assert_eq!(stats(&s.qdisc.children[0]), (5, 5 * 1514, 3));
    assert_eq!(stats(&s.qdisc.children[1]), (9, 9 * 1514, 0));
    assert_eq!(s.qdisc.classes[0].stats.unwrap().requeues, 3);
    assert_eq!(s.qdisc.classes[1].stats.unwrap().requeues, 0);
    let text = show_through(&mut p, t1);
    assert!(
        text.starts_with(&format!(
            "qdisc mq 0: root \n Sent 13626 bytes 9 pkt (dropped 0, overlimits 0 requeues 3) \n \
             backlog {}b 14p requeues 3\n",
            14 * 1514
        )),
        "{text}"
    );
}
