//! `tc -s -d [-j] qdisc|class show` as iproute2 prints it, against
//! hand-built dumps of every built-in kind: heads, refcnt, option
//! printers, xstats, the order of a tree's qdiscs and classes, JSON.
use super::*;
use crate::qdisc::dump::Xstats;
use crate::qdisc::fq_codel::{FqCodelClassXstats, FqCodelXstats};
use crate::qdisc::htb::HtbXstats;
use crate::qdisc::tc_h_make;

fn cmd(line: &str) -> TcCommand {
    TcCommand::parse(line).unwrap()
}

/// The options tc's parser makes of `words` for `kind`.
fn opts(kind: &str, words: &str) -> crate::qdisc::QdiscOptions {
    let words: Vec<&str> = words.split_whitespace().collect();
    syntax::parse_qdisc(crate::qdisc::kinds::BUILTIN, kind, &words).unwrap()
}

/// A qdisc `kind` at `handle` under `parent` with the options tc makes
/// of `options` and with `children`.
fn qdisc(
    kind: &str,
    handle: Handle,
    parent: Handle,
    options: &str,
    children: Vec<QdiscDump>,
) -> QdiscDump {
    QdiscDump {
        kind: kind.into(),
        handle,
        parent,
        options: opts(kind, options),
        children,
        ..QdiscDump::default()
    }
}

fn one<'a>(root: &'a QdiscDump) -> [DevDump<'a>; 1] {
    [DevDump {
        dev: Dir::LeftToRight,
        root,
        tx_queues: 1,
    }]
}

fn fq_codel_like() -> QdiscDump {
    fq_codel_with(
        "limit 10240 flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb ecn \
         drop_batch 64",
    )
}

/// A root fq_codel 8001: with the options tc makes of `words`.
fn fq_codel_with(words: &str) -> QdiscDump {
    QdiscDump {
        kind: "fq_codel".into(),
        handle: tc_h_make(0x8001, 0),
        parent: TC_H_ROOT,
        options: opts("fq_codel", words),
        xstats: Some(Xstats::FqCodel(FqCodelXstats::default())),
        ..QdiscDump::default()
    }
}

#[test]
fn vector_f1_layout() {
    let d = fq_codel_like();
    let out = render(&cmd("tc -s qdisc show dev left"), &one(&d)).unwrap();
    assert_eq!(
        out,
        "qdisc fq_codel 8001: root refcnt 2 limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64 \n\
         \x20Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n\
         \x20backlog 0b 0p requeues 0\n\
         \x20\x20maxpacket 0 drop_overlimit 0 new_flow_count 0 ecn_mark 0\n\
         \x20\x20new_flows_len 0 old_flows_len 0\n"
    );
    // without -s only the head line
    let out = render(&cmd("tc qdisc show dev left"), &one(&d)).unwrap();
    assert_eq!(out.lines().count(), 1);
}

#[test]
fn dev_is_named_when_not_filtering() {
    let d = fq_codel_like();
    let out = render(&cmd("tc qdisc show"), &one(&d)).unwrap();
    assert!(out.starts_with("qdisc fq_codel 8001: dev left root refcnt 2 limit"));
    let out = render(&cmd("tc qdisc show dev right"), &one(&d)).unwrap();
    assert_eq!(out, "");
}

#[test]
fn fifo_and_htb_have_no_trailing_space_and_children_no_refcnt() {
    let child = qdisc(
        "pfifo",
        tc_h_make(0x10, 0),
        tc_h_make(1, 0x10),
        "limit 1000",
        Vec::new(),
    );
    let root = qdisc(
        "htb",
        tc_h_make(1, 0),
        TC_H_ROOT,
        "r2q 10 default 20 direct_qlen 1000",
        vec![child],
    );
    let out = render(&cmd("tc qdisc show dev left"), &one(&root)).unwrap();
    assert_eq!(
        out,
        "qdisc htb 1: root refcnt 2 r2q 10 default 0x20 direct_packets_stat 0 direct_qlen 1000\n\
         qdisc pfifo 10: parent 1:10 limit 1000p\n"
    );
}

#[test]
fn default_children_are_invisible_except_under_mq() {
    let leaf = qdisc("bfifo", 0, tc_h_make(0x8001, 1), "limit 16490", Vec::new());
    let root = qdisc(
        "tbf",
        tc_h_make(0x8001, 0),
        TC_H_ROOT,
        "rate 1mbit burst 10kb latency 50ms",
        vec![leaf],
    );
    assert_eq!(
        render(&cmd("tc qdisc show dev left"), &one(&root)).unwrap(),
        "qdisc tbf 8001: root refcnt 2 rate 1Mbit burst 10Kb lat 50ms \n"
    );
    let all = render(&cmd("tc qdisc show dev left invisible"), &one(&root)).unwrap();
    assert!(all.ends_with("qdisc bfifo 0: parent 8001:1 limit 16490b\n"));
}

#[test]
fn class_lines() {
    let class = ClassDump {
        kind: "htb".into(),
        classid: tc_h_make(1, 0x10),
        parent: tc_h_make(1, 1),
        leaf: Some(tc_h_make(0x10, 0)),
        options: syntax::parse_class(
            crate::qdisc::kinds::BUILTIN,
            "htb",
            &[
                "prio", "0", "rate", "30mbit", "ceil", "100mbit", "burst", "1600", "cburst", "1600",
            ],
        )
        .unwrap(),
        stats: Some(QdiscStats {
            bytes: 123,
            packets: 2,
            ..QdiscStats::default()
        }),
        xstats: Some(Xstats::HtbClass(HtbXstats {
            lends: 2,
            tokens: 6667,
            ctokens: 2000,
            ..HtbXstats::default()
        })),
        ..ClassDump::default()
    };
    let htb_blank = render(
        &cmd("tc -s class show dev left"),
        &one(&QdiscDump {
            classes: vec![class.clone()],
            ..QdiscDump::default()
        }),
    )
    .unwrap();
    assert!(htb_blank.ends_with(" tokens: 6667 ctokens: 2000\n\n"));
    let pseudo = ClassDump {
        kind: "fq_codel".into(),
        classid: tc_h_make(0x8001, 0x3b1),
        parent: tc_h_make(0x8001, 0),
        stats: None,
        queue: QdiscStats {
            backlog: 1514,
            qlen: 1,
            ..QdiscStats::default()
        },
        xstats: Some(Xstats::FqCodelClass(FqCodelClassXstats {
            deficit: 1342,
            ldelay_us: 2,
            ..FqCodelClassXstats::default()
        })),
        ..ClassDump::default()
    };
    let root = QdiscDump {
        kind: "htb".into(),
        handle: tc_h_make(1, 0),
        parent: TC_H_ROOT,
        classes: vec![class, pseudo],
        ..QdiscDump::default()
    };
    let out = render(&cmd("tc -s class show dev left"), &one(&root)).unwrap();
    assert_eq!(
        out,
        "class htb 1:10 parent 1:1 leaf 10: prio 0 rate 30Mbit ceil 100Mbit burst 1593b cburst 1600b \n\
         \x20Sent 123 bytes 2 pkt (dropped 0, overlimits 0 requeues 0) \n\
         \x20backlog 0b 0p requeues 0\n\
         \x20lended: 2 borrowed: 0 giants: 0\n\
         \x20tokens: 6667 ctokens: 2000\n\
         \n\
         class fq_codel 8001:3b1 parent 8001: \n\
         \x20(dropped 0, overlimits 0 requeues 0) \n\
         \x20backlog 1514b 1p requeues 0\n\
         \x20\x20deficit 1342 count 0 lastcount 0 ldelay 2us\n"
    );
    let only = render(&cmd("tc class show dev left classid 1:10"), &one(&root)).unwrap();
    assert_eq!(only.lines().count(), 1);
}

/// The keys in the order iproute2 prints them (tc/q_fq_codel.c
/// `fq_codel_print_opt`, `fq_codel_print_xstats`), not sorted.
#[test]
fn json_keys_and_order() {
    let d = fq_codel_with("limit 10240 flows 1024");
    let out = render(&cmd("tc -s -j qdisc show dev left"), &one(&d)).unwrap();
    assert_eq!(
        out,
        "[{\"kind\":\"fq_codel\",\"handle\":\"8001:\",\"root\":true,\"refcnt\":2,\
         \"options\":{\"limit\":10240,\"flows\":1024},\"bytes\":0,\"packets\":0,\"drops\":0,\
         \"overlimits\":0,\"requeues\":0,\"backlog\":0,\"qlen\":0,\"maxpacket\":0,\
         \"drop_overlimit\":0,\"new_flow_count\":0,\"ecn_mark\":0,\"new_flows_len\":0,\"old_flows_len\":0}]\n"
    );
    let v: serde_json::Value =
        serde_json::from_str(&render(&cmd("tc -j -p qdisc show"), &one(&d)).unwrap()).unwrap();
    assert_eq!(v[0]["dev"], "left");
    assert!(v[0].get("bytes").is_none());
}

#[test]
fn hash_order_puts_mq_children_newest_first() {
    let kids: Vec<QdiscDump> = (1..=4)
        .map(|i| qdisc("pfifo_fast", 0, i, "", Vec::new()))
        .collect();
    let root = qdisc("mq", 0, TC_H_ROOT, "", kids);
    let parents: Vec<Handle> = dump_order(&root, false).iter().map(|q| q.parent).collect();
    assert_eq!(parents, vec![TC_H_ROOT, 4, 3, 2, 1]);
    assert_eq!(hash_bucket(tc_h_make(0x10, 0)), 6);
}

#[test]
fn handles_print_like_iproute2() {
    assert_eq!(tc_handle(TC_H_ROOT), "root");
    assert_eq!(tc_handle(0), "none");
    assert_eq!(tc_handle(3), ":3");
    assert_eq!(tc_handle(tc_h_make(0x8001, 0)), "8001:");
    assert_eq!(tc_handle(tc_h_make(1, 0x10)), "1:10");
}
