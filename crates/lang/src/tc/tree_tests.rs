//! The tree's kernel rules (`tc_modify_qdisc`, `tc_get_qdisc`,
//! `tc_ctl_tclass` in net/sched/sch_api.c) exercised through tc command
//! lines: handles, exclusivity, replacement, deletion, mq children, and
//! random sessions that must never panic and must fail atomically.
use super::run as tc_run;
use crate::dir::Dir;
use crate::packet::Drops;
use crate::qdisc::testutil::{flow_pkt, pkt};
use crate::qdisc::tree::{DevSpec, QdiscTree};
use crate::qdisc::{tc_h_make, Qdisc, Verdict, TC_H_ROOT};
use crate::tc::show::qdisc_options;
use crate::tc::TcError;
use crate::tc::{build_tree, TcCommand};
use crate::time::Instant;

const T: Instant = Instant::ZERO;

fn tree() -> QdiscTree {
    QdiscTree::new(DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN)).unwrap()
}

fn mq_tree(n: u16) -> QdiscTree {
    QdiscTree::new(DevSpec {
        tx_queues: n,
        ..DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN)
    })
    .unwrap()
}

fn run(t: &mut QdiscTree, line: &str) -> Result<Option<String>, TcError> {
    let cmd = TcCommand::parse(line)?;
    tc_run(t, &cmd, T, &mut Drops::new())
}

fn ok(t: &mut QdiscTree, line: &str) {
    if let Err(e) = run(t, line) {
        panic!("{line}: {e}");
    }
}

fn fail(t: &mut QdiscTree, line: &str) -> String {
    let before = t.dump(T);
    let e = run(t, line).expect_err(line).0;
    let after = t.dump(T);
    // Atomicity: a failed command leaves the tree as it was.
    assert_eq!(
        format!("{before:?}"),
        format!("{after:?}"),
        "{line} changed the tree"
    );
    e
}

fn show(t: &mut QdiscTree, line: &str) -> String {
    run(t, line).unwrap().unwrap()
}

#[test]
fn default_root_is_pfifo_fast_handle_0() {
    let t = tree();
    let d = t.dump(T);
    assert_eq!(
        (d.kind.as_str(), d.handle, d.parent),
        ("pfifo_fast", 0, TC_H_ROOT)
    );
    let m = mq_tree(4).dump(T);
    assert_eq!(m.kind, "mq");
    assert_eq!(m.children.len(), 4);
    assert!(QdiscTree::new(DevSpec {
        default_qdisc: "htb".into(),
        ..DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN)
    })
    .is_err());
}

#[test]
fn build_applies_lines_in_order() {
    let dev = DevSpec {
        tx_queues: 2,
        ..DevSpec::new(Dir::RightToLeft, crate::qdisc::kinds::BUILTIN)
    };
    let t = build_tree(
        dev.clone(),
        &[
            "tc qdisc add dev right root handle 1: mq",
            "tc qdisc add dev right parent 1:1 fq_codel",
            "tc qdisc add dev right parent 1:2 fq_codel",
        ],
    )
    .unwrap();
    let d = t.dump(T);
    assert_eq!(d.handle, tc_h_make(1, 0));
    assert!(d.children.iter().all(|c| c.kind == "fq_codel"));
    let e = build_tree(dev, &["tc qdisc add dev right parent 1:1 pfifo"])
        .err()
        .unwrap();
    assert!(
        e.0.starts_with("tc qdisc add dev right parent 1:1 pfifo\nError: Failed"),
        "{e}"
    );
    // A device refused before any line: its own error, with or
    // without lines.
    let bad = DevSpec {
        tx_queues: 0,
        ..DevSpec::new(Dir::RightToLeft, crate::qdisc::kinds::BUILTIN)
    };
    for lines in [&[][..], &["tc qdisc add dev right root pfifo"][..]] {
        let e = build_tree(bad.clone(), lines).err().unwrap();
        assert!(e.0.contains("tx_queues 0"), "{e}");
    }
}

#[test]
fn auto_handles_count_up_from_8001() {
    let mut t = tree();
    ok(&mut t, "tc qdisc add dev left root pfifo");
    assert_eq!(t.dump(T).handle, tc_h_make(0x8001, 0));
    ok(&mut t, "tc qdisc del dev left root");
    assert_eq!(t.dump(T).handle, 0);
    ok(&mut t, "tc qdisc add dev left root pfifo");
    assert_eq!(t.dump(T).handle, tc_h_make(0x8002, 0));
    // replace with another kind allocates the next one
    ok(&mut t, "tc qdisc replace dev left root bfifo");
    assert_eq!(t.dump(T).handle, tc_h_make(0x8003, 0));
}

/// `qdisc_create` takes the automatic handle before the kind's `init`
/// runs, so a qdisc `init` refuses (mq on a single-queue device:
/// `mq_init`'s EOPNOTSUPP) has used one up, as the kernel's counter is
/// static; a command refused before that (an unknown kind) has not.
#[test]
fn a_qdisc_refused_by_its_init_uses_up_an_automatic_handle() {
    let mut t = tree();
    assert!(fail(&mut t, "tc qdisc add dev left root mq").contains("Operation not supported"));
    assert!(fail(&mut t, "tc qdisc add dev left root bogus").contains("unknown"));
    ok(&mut t, "tc qdisc add dev left root pfifo");
    assert_eq!(t.dump(T).handle, tc_h_make(0x8002, 0));
}

/// The kernel's counter is one for the machine: the two devices of a link
/// take turns from it, each skipping only the handles it uses itself.
#[test]
fn the_devices_of_a_link_share_the_automatic_handle_counter() {
    let left = DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN);
    let right = DevSpec {
        autohandles: left.autohandles.clone(),
        ..DevSpec::new(Dir::RightToLeft, crate::qdisc::kinds::BUILTIN)
    };
    let (mut l, mut r) = (
        QdiscTree::new(left).unwrap(),
        QdiscTree::new(right).unwrap(),
    );
    ok(&mut l, "tc qdisc add dev left root pfifo");
    ok(&mut r, "tc qdisc add dev right root pfifo");
    assert_eq!(l.dump(T).handle, tc_h_make(0x8001, 0));
    assert_eq!(r.dump(T).handle, tc_h_make(0x8002, 0));
    // 8003: is taken on the right only: the left may have it.
    ok(&mut r, "tc qdisc replace dev right root handle 8003: bfifo");
    ok(&mut l, "tc qdisc replace dev left root bfifo");
    assert_eq!(l.dump(T).handle, tc_h_make(0x8003, 0));
    // The right skips its own 8003:... which the counter has passed anyway.
    ok(&mut r, "tc qdisc replace dev right root pfifo");
    assert_eq!(r.dump(T).handle, tc_h_make(0x8004, 0));
    // A separate DevSpec::new has a counter of its own.
    let mut other = tree();
    ok(&mut other, "tc qdisc add dev left root pfifo");
    assert_eq!(other.dump(T).handle, tc_h_make(0x8001, 0));
}

#[test]
fn add_on_existing_root_is_exclusive() {
    let mut t = tree();
    ok(&mut t, "tc qdisc add dev left root handle 1: pfifo");
    assert_eq!(
        fail(&mut t, "tc qdisc add dev left root pfifo limit 5"),
        "Error: Exclusivity flag on, cannot modify."
    );
    assert_eq!(
        fail(&mut t, "tc qdisc add dev left root handle 1: pfifo"),
        "Error: Exclusivity flag on, cannot modify."
    );
    assert_eq!(
        fail(&mut t, "tc qdisc add dev left root handle 2: pfifo"),
        "Error: NLM_F_REPLACE needed to override."
    );
}

#[test]
fn change_and_replace_same_kind_changes_in_place() {
    let mut t = tree();
    ok(
        &mut t,
        "tc qdisc add dev left root handle 1: pfifo limit 10",
    );
    ok(&mut t, "tc qdisc change dev left root pfifo limit 20");
    assert_eq!(qdisc_options(&t.dump(T)).plain, "limit 20p");
    ok(&mut t, "tc qdisc replace dev left root pfifo limit 30");
    let d = t.dump(T);
    assert_eq!(
        (d.handle, qdisc_options(&d).plain.as_str()),
        (tc_h_make(1, 0), "limit 30p")
    );
    ok(&mut t, "tc qdisc change dev left handle 1: pfifo limit 40");
    assert_eq!(qdisc_options(&t.dump(T)).plain, "limit 40p");
    // Another kind through its handle is refused; through its place it
    // is grafted instead (tc_modify_qdisc: `req_change`, Linux 6.x).
    assert!(
        fail(&mut t, "tc qdisc change dev left handle 1: bfifo limit 5")
            .starts_with("Error: Invalid qdisc name: must match existing qdisc.")
    );
    // Replace naming the handle in place changes it too: the hint says so
    // rather than suggesting the replace that was used.
    let e = fail(
        &mut t,
        "tc qdisc replace dev left root handle 1: bfifo limit 5",
    );
    assert!(
        e.starts_with("Error: Invalid qdisc name: must match existing qdisc.")
            && e.contains("a request naming handle 1: changes it, even replace")
            && !e.contains("use replace"),
        "{e}"
    );
    ok(&mut t, "tc qdisc replace dev left root bfifo limit 5");
    assert_eq!(t.dump(T).kind, "bfifo");
    assert!(fail(&mut t, "tc qdisc change dev left root pfifo limit x").contains("limit"));
    assert!(fail(&mut t, "tc qdisc change dev left handle 7: pfifo")
        .starts_with("Error: Specified qdisc not found."));
}

/// What Linux 6.18 did here (iproute2 6.1, a veth): a request naming
/// another kind without a handle grafts it in place of the qdisc there,
/// for add, replace and a bare change; the same kind without a handle is a
/// change, which add refuses.
#[test]
fn another_kind_without_a_handle_takes_the_place_of_the_qdisc_there() {
    let mut t = tree();
    ok(
        &mut t,
        "tc qdisc add dev left root handle 1: tbf rate 10mbit burst 10kb latency 50ms",
    );
    ok(&mut t, "tc qdisc add dev left root pfifo");
    assert_eq!(
        show(&mut t, "tc qdisc show dev left"),
        "qdisc pfifo 8001: root refcnt 2 limit 1000p\n"
    );
    assert_eq!(
        fail(&mut t, "tc qdisc add dev left root pfifo limit 5"),
        "Error: Exclusivity flag on, cannot modify."
    );
    ok(
        &mut t,
        "tc qdisc add dev left root tbf rate 10mbit burst 10kb latency 50ms",
    );
    assert!(show(&mut t, "tc qdisc show dev left").starts_with("qdisc tbf 8002: root"));
    ok(&mut t, "tc qdisc change dev left root pfifo");
    assert!(show(&mut t, "tc qdisc show dev left").starts_with("qdisc pfifo 8003: root"));
    // Under a class too.
    ok(
        &mut t,
        "tc qdisc replace dev left root handle 1: tbf rate 10mbit burst 10kb latency 50ms",
    );
    ok(&mut t, "tc qdisc add dev left parent 1:1 pfifo");
    ok(&mut t, "tc qdisc add dev left parent 1:1 bfifo");
    assert!(show(&mut t, "tc qdisc show dev left")
        .contains("qdisc bfifo 8005: parent 1:1 limit 1514000b"));
    // TBF's one class answers to any minor (tbf_find).
    ok(
        &mut t,
        "tc qdisc replace dev left root handle 1: tbf rate 10mbit burst 10kb latency 50ms",
    );
    ok(
        &mut t,
        "tc qdisc replace dev left parent 1:5 handle 5: pfifo",
    );
    assert_eq!(
        show(&mut t, "tc qdisc show dev left"),
        "qdisc tbf 1: root refcnt 2 rate 10Mbit burst 10Kb lat 50ms \nqdisc pfifo 5: parent 1:5 limit 1000p\n"
    );
    assert_eq!(
        show(&mut t, "tc class show dev left"),
        "class tbf 1:1 parent 1: leaf 5: \n"
    );
    assert_eq!(
        fail(&mut t, "tc qdisc add dev left parent 1:7 handle 6: pfifo"),
        "Error: NLM_F_REPLACE needed to override."
    );
    // With a handle the old rules hold.
    assert_eq!(
        fail(&mut t, "tc qdisc add dev left root handle 1: pfifo"),
        "Error: Exclusivity flag on, cannot modify."
    );
    assert_eq!(
        fail(&mut t, "tc qdisc add dev left root handle 5: pfifo"),
        "Error: NLM_F_REPLACE needed to override."
    ); // A change without options changes nothing, even for a kind that has
       // no change operation (iproute2 sends no TCA_OPTIONS for pfifo_fast).
    ok(
        &mut t,
        "tc qdisc replace dev left root handle 7: pfifo_fast",
    );
    ok(&mut t, "tc qdisc change dev left root handle 7: pfifo_fast");
    assert!(show(&mut t, "tc qdisc show dev left").starts_with("qdisc pfifo_fast 7: root"));
}

/// Linux 6.18 (iproute2 6.1) printed these class lines after the same
/// commands: a class whose parent does not exist becomes a root class, and
/// class X:0 exists.
#[test]
fn htb_takes_a_missing_parent_as_the_root_and_a_zero_minor() {
    let mut t = tree();
    ok(&mut t, "tc qdisc replace dev left root handle 2: htb");
    let said = run(
        &mut t,
        "tc class add dev left parent 2:9 classid 2:10 htb rate 1mbit",
    )
    .unwrap();
    assert_eq!(
        said.as_deref(),
        Some("Warning: sch_htb: parent class 2:9 does not exist: class 2:10 is a root class (as the kernel makes it)\n")
    );
    assert_eq!(
        show(&mut t, "tc class show dev left"),
        "class htb 2:10 root prio 0 rate 1Mbit ceil 1Mbit burst 1600b cburst 1600b \n"
    );
    ok(
        &mut t,
        "tc class add dev left parent 2: classid 2:0 htb rate 1mbit",
    );
    assert_eq!(
        show(&mut t, "tc class show dev left"),
        "class htb 2: root prio 0 rate 1Mbit ceil 1Mbit burst 1600b cburst 1600b \n\
         class htb 2:10 root prio 0 rate 1Mbit ceil 1Mbit burst 1600b cburst 1600b \n"
    );
    assert!(fail(
        &mut t,
        "tc class add dev left parent 2: classid 3:1 htb rate 1mbit"
    )
    .contains("Invalid argument"));
}

#[test]
fn change_on_default_root_needs_create() {
    let mut t = tree();
    assert_eq!(
        fail(&mut t, "tc qdisc change dev left root pfifo limit 5"),
        "Error: Qdisc not found. To create specify NLM_F_CREATE flag."
    );
    assert!(
        fail(&mut t, "tc qdisc link dev left root pfifo").starts_with("Error: Qdisc not found.")
    );
}

#[test]
fn unknown_kinds_and_bad_options_leave_tree_untouched() {
    let mut t = tree();
    assert!(fail(&mut t, "tc qdisc add dev left root bogus")
        .starts_with("Error: Specified qdisc kind is unknown."));
    assert!(fail(&mut t, "tc qdisc add dev left root pfifo limit many").contains("many"));
    // the failed adds did not use up automatic handles
    ok(&mut t, "tc qdisc add dev left root pfifo");
    assert_eq!(t.dump(T).handle, tc_h_make(0x8001, 0));
}

/// The hints print a qdisc's handle as `tc qdisc show` does: the default
/// root's handle 0 is `0:`, never the class id form `none`.
#[test]
fn hints_print_qdisc_handles_as_tc() {
    let mut t = tree();
    assert_eq!(
        fail(&mut t, "tc qdisc del dev left root handle 1:"),
        "Error: Invalid handle.\n(the qdisc there is pfifo_fast 0:, not 1:)"
    );
    assert_eq!(
        fail(&mut t, "tc qdisc del dev left root pfifo"),
        "Error: Invalid qdisc name: must match existing qdisc.\n(0: is a pfifo_fast)"
    );
}

#[test]
fn delete_rules() {
    let mut t = tree();
    assert_eq!(
        fail(&mut t, "tc qdisc del dev left root"),
        "Error: Cannot delete qdisc with handle of zero."
    );
    ok(&mut t, "tc qdisc add dev left root handle 1: pfifo");
    assert!(
        fail(&mut t, "tc qdisc del dev left root handle 2:").starts_with("Error: Invalid handle.")
    );
    assert!(fail(&mut t, "tc qdisc del dev left root bfifo")
        .starts_with("Error: Invalid qdisc name: must match existing qdisc."));
    assert!(fail(&mut t, "tc qdisc del dev left handle 1:")
        .starts_with("Error: Classid cannot be zero."));
    ok(&mut t, "tc qdisc del dev left root handle 1: pfifo");
    assert_eq!(t.dump(T).kind, "pfifo_fast");
}

#[test]
fn replacing_the_root_moves_frames_and_counts_refusals() {
    let mut t = tree();
    let mut d = Drops::new();
    for id in 0..5 {
        t.enqueue(pkt(id, 100), T, &mut d);
    }
    let cmd = TcCommand::parse("tc qdisc replace dev left root pfifo limit 3").unwrap();
    tc_run(&mut t, &cmd, T, &mut d).unwrap();
    assert_eq!(t.qlen(), 3);
    assert_eq!(d.len(), 2);
    assert_eq!(t.stats().drops, 2);
    let ids: Vec<u64> = std::iter::from_fn(|| t.dequeue(T, &mut d))
        .map(|p| p.meta.id)
        .collect();
    assert_eq!(ids, vec![0, 1, 2]);
    // and del root moves them back into the default
    t.enqueue(pkt(7, 100), T, &mut d);
    let cmd = TcCommand::parse("tc qdisc del dev left root").unwrap();
    tc_run(&mut t, &cmd, T, &mut d).unwrap();
    assert_eq!((t.kind(), t.qlen()), ("pfifo_fast", 1));
}

#[test]
fn mq_children_are_replaced_by_parent() {
    let mut t = mq_tree(4);
    ok(&mut t, "tc qdisc add dev left parent :3 pfifo limit 7");
    let d = t.dump(T);
    assert_eq!(d.children[2].kind, "pfifo");
    assert_eq!(d.children[2].handle, tc_h_make(0x8001, 0));
    assert_eq!(d.children[2].parent, 3);
    assert!(fail(&mut t, "tc qdisc add dev left parent :9 pfifo")
        .starts_with("Error: Specified class not found."));
    assert!(fail(&mut t, "tc qdisc add dev left parent 5:1 pfifo")
        .starts_with("Error: Failed to find specified qdisc."));
    // change it through its handle and through its parent
    ok(
        &mut t,
        "tc qdisc change dev left handle 8001: pfifo limit 8",
    );
    ok(&mut t, "tc qdisc change dev left parent :3 pfifo limit 9");
    assert_eq!(qdisc_options(&t.dump(T).children[2]).plain, "limit 9p");
    // delete it: the queue is left with the noop qdisc (`dev_graft_qdisc`
    // grafts `noop_qdisc`; the kernel shows no leaf for class :3 then)
    ok(&mut t, "tc qdisc del dev left parent :3");
    let d = t.dump(T);
    assert_eq!(
        (d.children[2].kind.as_str(), d.children[2].handle),
        ("noop", 0)
    );
    assert_eq!(
        fail(&mut t, "tc qdisc del dev left parent :3"),
        "Error: Cannot delete qdisc with handle of zero."
    );
}

#[test]
fn mq_on_a_single_queue_device_is_refused_unless_queues_given() {
    let mut t = tree();
    let e = fail(&mut t, "tc qdisc add dev left root handle 1: mq");
    assert!(e.contains("Operation not supported"), "{e}");
    assert!(e.contains("`bloatbox set left.tx_queues=4`"), "{e}");
    ok(&mut t, "tc qdisc add dev left root handle 1: mq queues 2");
    ok(&mut t, "tc qdisc add dev left parent 1:2 bfifo");
    let d = t.dump(T);
    assert_eq!(d.children[1].parent, tc_h_make(1, 2));
    assert_eq!(d.children[1].kind, "bfifo");
    assert!(fail(&mut t, "tc qdisc add dev left parent 8001:1 mq queues 2").contains("classful"));
}

/// What the kernel printed here (Linux 6.18, iproute2 6.1, a veth with four
/// TX queues) after the same commands.
#[test]
fn a_deleted_tbf_or_mq_child_leaves_the_noop_qdisc_which_drops_everything() {
    let mut t = tree();
    ok(
        &mut t,
        "tc qdisc add dev left root handle 1: tbf rate 10mbit burst 10kb latency 50ms",
    );
    ok(
        &mut t,
        "tc qdisc add dev left parent 1:1 handle 10: pfifo limit 100",
    );
    assert_eq!(
        show(&mut t, "tc class show dev left"),
        "class tbf 1:1 parent 1: leaf 10: \n"
    );
    ok(&mut t, "tc qdisc del dev left parent 1:1");
    assert_eq!(
        show(&mut t, "tc class show dev left"),
        "class tbf 1:1 parent 1: \n"
    );
    let mut drops = Drops::new();
    for i in 0..3 {
        assert_eq!(t.enqueue(pkt(i, 98), T, &mut drops), Verdict::Dropped);
    }
    assert_eq!(drops.len(), 3);
    assert_eq!(
        show(&mut t, "tc -s qdisc show dev left"),
        "qdisc tbf 1: root refcnt 2 rate 10Mbit burst 10Kb lat 50ms \n \
         Sent 0 bytes 0 pkt (dropped 3, overlimits 0 requeues 0) \n \
         backlog 0b 0p requeues 0\n"
    );
    // A qdisc added under the class takes the noop's place.
    ok(&mut t, "tc qdisc add dev left parent 1:1 handle 11: bfifo");
    assert_eq!(t.enqueue(pkt(9, 98), T, &mut drops), Verdict::Queued);

    let mut m = mq_tree(4);
    ok(&mut m, "tc qdisc replace dev left root handle 2: mq");
    for q in 1..=4 {
        ok(
            &mut m,
            &format!("tc qdisc add dev left parent 2:{q} handle 2{q}: pfifo"),
        );
    }
    ok(&mut m, "tc qdisc del dev left parent 2:1");
    let classes = show(&mut m, "tc class show dev left");
    assert!(
        classes.starts_with("class mq 2:1 root \nclass mq 2:2 root leaf 22: \n"),
        "{classes}"
    );
    let qdiscs = show(&mut m, "tc qdisc show dev left");
    assert!(
        !qdiscs.contains("parent 2:1") && !qdiscs.contains("noop"),
        "{qdiscs}"
    );
    assert_eq!(qdiscs.matches("qdisc pfifo 2").count(), 3, "{qdiscs}");
    // HTB's leaf gets a default pfifo instead, hidden, and forwards.
    let mut h = tree();
    ok(
        &mut h,
        "tc qdisc add dev left root handle 3: htb default 10",
    );
    ok(
        &mut h,
        "tc class add dev left parent 3: classid 3:10 htb rate 10mbit",
    );
    ok(&mut h, "tc qdisc add dev left parent 3:10 handle 30: pfifo");
    ok(&mut h, "tc qdisc del dev left parent 3:10");
    assert!(!show(&mut h, "tc qdisc show dev left").contains("parent 3:10"));
    assert_eq!(h.enqueue(pkt(1, 98), T, &mut drops), Verdict::Queued);
}

#[test]
fn the_queue_count_changes_at_run_time_and_rebuilds_only_a_default_root() {
    let mut t = tree();
    let mut drops = Drops::new();
    for i in 0..5 {
        assert_eq!(
            t.enqueue(flow_pkt(i, 100, i as u16), T, &mut drops),
            Verdict::Queued
        );
    }
    // The default pfifo_fast becomes the default for 4 queues: mq, with the
    // backlog moved into it.
    t.change_tx_queues(4, T, &mut drops).unwrap();
    let d = t.dump(T);
    assert_eq!((d.kind.as_str(), d.handle, d.classes.len()), ("mq", 0, 4));
    assert_eq!(d.stats.qlen, 5);
    assert_eq!(t.dev().tx_queues, 4);
    // Now mq works without "queues"; an explicit mq of 4 refuses another
    // count, and nothing changes then.
    ok(&mut t, "tc qdisc replace dev left root handle 1: mq");
    ok(&mut t, "tc qdisc replace dev left parent 1:2 fq_codel");
    let before = format!("{:?}", t.dump(T));
    let e = TcError::from(t.change_tx_queues(2, T, &mut drops).unwrap_err()).0;
    assert!(e.contains("replace it first"), "{e}");
    assert_eq!(format!("{:?}", t.dump(T)), before);
    assert_eq!(t.dev().tx_queues, 4);
    assert!(t.change_tx_queues(0, T, &mut drops).is_err());
    assert!(t.change_tx_queues(65, T, &mut drops).is_err());
    // Any other root stays as it is.
    ok(&mut t, "tc qdisc replace dev left root handle 2: fq_codel");
    t.change_tx_queues(1, T, &mut drops).unwrap();
    assert_eq!(t.dump(T).kind, "fq_codel");
    assert_eq!(t.dev().tx_queues, 1);
    let mut count = 0;
    while t.dequeue(T, &mut drops).is_some() {
        count += 1;
    }
    assert_eq!(count, 5, "no frame lost in the moves");
}

#[test]
fn classless_parent_and_class_commands_on_classless() {
    let mut t = tree();
    ok(&mut t, "tc qdisc add dev left root handle 1: pfifo");
    assert!(fail(&mut t, "tc qdisc add dev left parent 1:1 pfifo")
        .starts_with("Error: Parent qdisc is not classful."));
    assert!(fail(
        &mut t,
        "tc class add dev left parent 1: classid 1:1 htb rate 1mbit"
    )
    .starts_with("RTNETLINK answers: Invalid argument"));
    assert!(fail(&mut t, "tc class del dev left classid 2:1")
        .starts_with("RTNETLINK answers: No such file or directory"));
}

#[test]
fn mq_classes_cannot_be_added_or_deleted() {
    let mut t = tree();
    ok(&mut t, "tc qdisc add dev left root handle 1: mq queues 2");
    assert!(fail(&mut t, "tc class del dev left classid 1:1").contains("Operation not supported"));
    assert!(fail(&mut t, "tc class del dev left classid 1:5")
        .starts_with("RTNETLINK answers: No such file or directory"));
}

#[test]
fn commands_for_the_other_device_are_refused() {
    let mut t = tree();
    assert!(fail(&mut t, "tc qdisc add dev right root pfifo").contains("dev right"));
}

#[test]
fn datapath_goes_through_the_root() {
    let mut t = mq_tree(2);
    let mut d = Drops::new();
    let mut p = flow_pkt(1, 100, 1);
    p.meta.queue_mapping = 1;
    assert_eq!(t.enqueue(p, T, &mut d), Verdict::Queued);
    assert_eq!((t.qlen(), t.backlog()), (1, 100));
    assert_eq!(t.peek(T, &mut d).unwrap().meta.id, 1);
    assert_eq!(t.dequeue(T, &mut d).unwrap().meta.id, 1);
    assert_eq!(t.stats().packets, 1);
}

#[test]
fn show_through_apply() {
    let mut t = tree();
    assert_eq!(
        show(&mut t, "tc qdisc show dev left"),
        "qdisc pfifo_fast 0: root refcnt 2 bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1\n"
    );
}

/// Random tc command sequences: nothing panics, a failed command leaves
/// the tree and the drop sink untouched, and the counters stay coherent.
mod props {
    use super::*;
    use crate::qdisc::testutil::flow_pkt;
    use proptest::prelude::*;

    const WORDS: &[&str] = &[
        "qdisc",
        "class",
        "filter",
        "add",
        "change",
        "replace",
        "link",
        "del",
        "show",
        "dev",
        "left",
        "right",
        "root",
        "parent",
        "handle",
        "classid",
        "1:",
        "1:1",
        "1:2",
        ":1",
        ":3",
        "8001:",
        "2:",
        "none",
        "pfifo",
        "bfifo",
        "pfifo_fast",
        "pfifo_head_drop",
        "mq",
        "qfq",
        "limit",
        "5",
        "0",
        "10kb",
        "queues",
        "2",
        "4",
        "weight",
        "10",
        "maxpkt",
        "2000",
        "protocol",
        "all",
        "matchall",
        "flowid",
        "prio",
        "-s",
        "-j",
        "invisible",
        "bogus",
    ];

    fn pick(words: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
        proptest::sample::select(words)
    }

    /// Word soup after a command head.
    fn soup() -> impl Strategy<Value = String> {
        let head = pick(&[
            "tc qdisc add dev left",
            "tc qdisc replace dev left",
            "tc qdisc change dev left",
            "tc qdisc del dev left",
            "tc class add dev left",
            "tc class change dev left",
            "tc class del dev left",
            "tc filter add dev left",
            "tc -s qdisc show dev left",
            "tc class show dev left",
        ]);
        (head, proptest::collection::vec(pick(WORDS), 0..8))
            .prop_map(|(h, ws)| format!("{h} {}", ws.join(" ")))
    }

    /// Commands shaped like real ones, so that most of them apply.
    fn shaped() -> impl Strategy<Value = String> {
        let qdisc = (
            pick(&["add", "replace", "change", "del", "link"]),
            pick(&[
                "root",
                "parent 1:1",
                "parent 1:2",
                "parent :1",
                "parent 8001:1",
                "",
            ]),
            pick(&["", "", "handle 1:", "handle 2:", "handle 10:"]),
            pick(&[
                "pfifo limit 3",
                "bfifo limit 2kb",
                "pfifo_fast",
                "sfq",
                "fq_codel limit 4",
                "codel limit 5",
                "tbf rate 1mbit burst 2kb limit 4kb",
                "htb default 1",
                "qfq",
                "mq queues 2",
                "",
            ]),
        )
            .prop_map(|(v, loc, h, k)| format!("tc qdisc {v} dev left {loc} {h} {k}"));
        let class = (
            pick(&["add", "replace", "change", "del"]),
            pick(&["parent 1:", "parent 1:1", "", "root"]),
            pick(&["classid 1:1", "classid 1:2", "classid 2:1", ""]),
            pick(&[
                "htb rate 1mbit",
                "htb rate 5mbit ceil 10mbit prio 2",
                "qfq weight 3",
                "",
            ]),
        )
            .prop_map(|(v, p, c, k)| format!("tc class {v} dev left {p} {c} {k}"));
        let filter = (
            pick(&["add", "del"]),
            pick(&["1:", "1:1", "2:"]),
            pick(&["1:1", "1:2"]),
        )
            .prop_map(|(v, p, f)| {
                format!("tc filter {v} dev left parent {p} protocol all prio 1 matchall flowid {f}")
            });
        prop_oneof![3 => qdisc, 3 => class, 1 => filter, 1 => soup()]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn random_sessions_never_panic_and_fail_atomically(
            cmds in proptest::collection::vec(shaped(), 1..25),
            queues in 1u16..4,
        ) {
            let mut t = QdiscTree::new(DevSpec { tx_queues: queues, ..DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN) }).unwrap();
            let mut drops = Drops::new();
            let now = Instant::ZERO;
            for (i, line) in cmds.iter().enumerate() {
                let mut p = flow_pkt(i as u64, 100 + i as u32, (i % 3) as u16);
                p.meta.queue_mapping = i as u16;
                p.meta.priority = 0x0001_0001;
                t.enqueue(p, now, &mut drops);
                let Ok(cmd) = TcCommand::parse(line.trim()) else { continue };
                let before = format!("{:?}", t.dump(now));
                let dropped = drops.len();
                if tc_run(&mut t, &cmd, now, &mut drops).is_err() {
                    prop_assert_eq!(&before, &format!("{:?}", t.dump(now)), "{}", line);
                    prop_assert_eq!(dropped, drops.len());
                }
                let s = t.stats();
                prop_assert_eq!((s.qlen, s.backlog), (t.qlen(), t.backlog()));
            }
            // Conservation: every frame offered is held, sent or dropped.
            let offered = cmds.len() as u64;
            let (mut sent, mut now) = (0u64, now);
            for _ in 0..10_000 {
                if t.dequeue(now, &mut drops).is_some() {
                    sent += 1;
                    continue;
                }
                // Shapers (tbf, htb) release later.
                match t.next_wakeup(now) {
                    Some(w) if t.qlen() > 0 => {
                        prop_assert!(w >= now, "next_wakeup in the past");
                        now = w.max(now + 1);
                    }
                    _ => break,
                }
            }
            prop_assert_eq!(t.qlen(), 0);
            prop_assert_eq!(sent + drops.len() as u64, offered);
        }
    }
}

/// netem's one class (sch_netem.c `netem_class_ops`): none listed until a
/// child is added under `1:1` (`netem_dump_class` answers ENOENT without
/// one), then `class netem 1:1 parent 1: leaf 10:` as iproute2's
/// `print_class` prints a class without options; `tc class add|del`
/// refused (no `change`/`delete`); deleting the child leaves netem
/// without one, sending from its tfifo again (`netem_graft` stores NULL),
/// and `replace` swaps the child.
#[test]
fn netem_takes_a_child_under_its_one_class() {
    let mut t = tree();
    ok(
        &mut t,
        "tc qdisc add dev left root handle 1: netem delay 100ms",
    );
    assert_eq!(show(&mut t, "tc class show dev left"), "");
    ok(
        &mut t,
        "tc qdisc add dev left parent 1:1 handle 10: tbf rate 1mbit burst 32kbit latency 400ms",
    );
    let seed = "seed 12749439763240105985";
    assert_eq!(
        show(&mut t, "tc qdisc show dev left"),
        format!(
            "qdisc netem 1: root refcnt 2 limit 1000 delay 100ms {seed}\n\
             qdisc tbf 10: parent 1:1 rate 1Mbit burst 4Kb lat 400ms \n"
        )
    );
    // TBF's own class, holding its invisible default bfifo, is listed too.
    assert_eq!(
        show(&mut t, "tc class show dev left"),
        "class netem 1:1 parent 1: leaf 10: \nclass tbf 10:1 parent 10: \n"
    );
    // No `dump_stats` in netem's class ops: an empty stats nest.
    assert_eq!(
        show(&mut t, "tc -s -d class show dev left"),
        "class netem 1:1 parent 1: leaf 10: \n\nclass tbf 10:1 parent 10: \n\n"
    );
    let j = show(&mut t, "tc -j qdisc show dev left");
    assert!(
        j.contains(r#"{"kind":"tbf","handle":"10:","parent":"1:1","#),
        "{j}"
    );
    // iproute2 refuses first: q_netem.c has no `parse_copt`.
    let e = fail(&mut t, "tc class add dev left parent 1: classid 1:2 netem");
    assert!(e.contains("Qdisc \"netem\" is classless."), "{e}");
    ok(
        &mut t,
        "tc qdisc replace dev left parent 1:1 handle 20: pfifo limit 5",
    );
    let netem = format!("qdisc netem 1: root refcnt 2 limit 1000 delay 100ms {seed}\n");
    assert_eq!(
        show(&mut t, "tc qdisc show dev left"),
        format!("{netem}qdisc pfifo 20: parent 1:1 limit 5p\n")
    );
    ok(&mut t, "tc qdisc del dev left parent 1:1");
    assert_eq!(show(&mut t, "tc class show dev left"), "");
    assert_eq!(show(&mut t, "tc qdisc show dev left"), netem);
    // `tc_get_qdisc`: `netem_leaf` gives NULL.
    let e = fail(&mut t, "tc qdisc del dev left parent 1:1");
    assert!(
        e.contains("Cannot find qdisc with specified handle."),
        "{e}"
    );
    // Any minor of 1: is the one class (`netem_find`).
    ok(
        &mut t,
        "tc qdisc add dev left parent 1:7 handle 30: bfifo limit 3000",
    );
    assert_eq!(
        show(&mut t, "tc class show dev left"),
        "class netem 1:1 parent 1: leaf 30: \n"
    );
    let mut drops = Drops::new();
    assert_eq!(t.enqueue(pkt(0, 100), T, &mut drops), Verdict::Queued);
    assert_eq!((t.qlen(), t.backlog()), (1, 100));
}
