//! CAKE's tc syntax against iproute2: tc-cake(8)'s example line and its
//! `tc -s` table (the values worked out by hand from the kernel's
//! `cake_config_diffserv3` and `cake_reconfigure`), the words and their
//! attributes, refusals with q_cake.c's messages, and `tc [-s] [-j]
//! qdisc show` byte for byte as `cake_print_opt` and `cake_print_xstats`
//! print them.

use super::*;
use crate::packet::Drops;
use crate::qdisc::cake::flow_mode;
use crate::qdisc::kinds::BUILTIN;
use crate::qdisc::tree::{DevSpec, QdiscTree};
use crate::tc::syntax::parse_qdisc;
use crate::tc::TcCommand;
use crate::time::Instant;

/// The options tc sends for `args`.
fn parsed(args: &str) -> Result<CakeOptions, TcError> {
    let words: Vec<&str> = args.split_whitespace().collect();
    match parse_qdisc(BUILTIN, "cake", &words)? {
        QdiscOptions::Cake(o) => Ok(o),
        other => panic!("cake parsed {other:?}"),
    }
}

fn err(args: &str) -> String {
    parsed(args).err().unwrap().0
}

/// The output of the last of `lines` on a fresh left device.
fn shown(lines: &[&str]) -> String {
    let mut tree = QdiscTree::new(DevSpec::new(Dir::LeftToRight, BUILTIN)).unwrap();
    let mut out = Ok(None);
    for line in lines {
        let cmd = TcCommand::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        out = crate::tc::run(&mut tree, &cmd, Instant::ZERO, &mut Drops::new());
    }
    out.unwrap().unwrap()
}

#[test]
fn defaults_print_as_iproute2() {
    assert_eq!(
        shown(&["tc qdisc add dev left root cake", "tc qdisc show dev left"]),
        "qdisc cake 8001: root refcnt 2 bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 0 \n"
    );
    assert_eq!(
        shown(&[
            "tc qdisc add dev left root cake",
            "tc -j qdisc show dev left"
        ]),
        "[{\"kind\":\"cake\",\"handle\":\"8001:\",\"root\":true,\"refcnt\":2,\"options\":{\
         \"bandwidth\":\"unlimited\",\"diffserv\":\"diffserv3\",\"flowmode\":\"triple-isolate\",\
         \"nat\":false,\"wash\":false,\"ingress\":false,\"ack-filter\":\"disabled\",\
         \"split_gso\":true,\"rtt\":100000,\"raw\":true,\"overhead\":0,\"fwmark\":\"0\"}}]\n"
    );
}

/// tc-cake(8)'s example, `bandwidth 100Mbit ethernet`: overhead 38 and
/// mpu 84, no ATM. The tins of diffserv3 at 12.5 MB/s: bulk 781250 B/s
/// (6250Kbit, quantum 781250 >> 12 = 190 raised to 300), best effort
/// 100Mbit (quantum 3051 cut to 1514), voice 25Mbit (quantum 762); the
/// memory limit 12.5e6 x 100000 / 250000 = 5000000 bytes (more than
/// 4 MiB, less than 10240 x 1514), printed as bytes.
#[test]
fn the_man_pages_example() {
    let add = "tc qdisc add root dev left cake bandwidth 100Mbit ethernet";
    let o = parsed("bandwidth 100Mbit ethernet").unwrap();
    assert_eq!(
        o,
        CakeOptions {
            base_rate: Some(12_500_000),
            overhead: Some(38),
            mpu: Some(84),
            autorate: Some(0),
            ..CakeOptions::default()
        }
    );
    let s = shown(&[add, "tc -s qdisc show dev left"]);
    let want = concat!(
        "qdisc cake 8001: root refcnt 2 bandwidth 100Mbit diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms noatm overhead 38 mpu 84 \n",
        " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n",
        " backlog 0b 0p requeues 0\n",
        " memory used: 0b of 5000000b\n",
        " capacity estimate: 100Mbit\n",
        " min/max network layer size:        65535 /       0\n",
        " min/max overhead-adjusted size:    65535 /       0\n",
        " average network hdr offset:            0\n\n",
        "                   Bulk  Best Effort        Voice\n",
        "  thresh       6250Kbit      100Mbit       25Mbit\n",
        "  target            5ms          5ms          5ms\n",
        "  interval        100ms        100ms        100ms\n",
        "  pk_delay          0us          0us          0us\n",
        "  av_delay          0us          0us          0us\n",
        "  sp_delay          0us          0us          0us\n",
        "  backlog            0b           0b           0b\n",
        "  pkts                0            0            0\n",
        "  bytes               0            0            0\n",
        "  way_inds            0            0            0\n",
        "  way_miss            0            0            0\n",
        "  way_cols            0            0            0\n",
        "  drops               0            0            0\n",
        "  marks               0            0            0\n",
        "  ack_drop            0            0            0\n",
        "  sp_flows            0            0            0\n",
        "  bk_flows            0            0            0\n",
        "  un_flows            0            0            0\n",
        "  max_len             0            0            0\n",
        "  quantum           300         1514          762\n",
    );
    assert_eq!(s, want);
    let j = shown(&[add, "tc -s -j qdisc show dev left"]);
    assert!(
        j.contains("\"memory_used\":0,\"memory_limit\":5000000,\"capacity_estimate\":12500000,\"min_network_size\":65535"),
        "{j}"
    );
    assert!(
        j.contains("\"tins\":[{\"threshold_rate\":781250,\"sent_bytes\":0,\"backlog_bytes\":0,\"target_us\":5000,\"interval_us\":100000,"),
        "{j}"
    );
    assert!(
        j.contains("\"max_pkt_len\":0,\"flow_quantum\":762}]"),
        "{j}"
    );
}

#[test]
fn words_make_the_attributes() {
    // The framing keywords add up; the last ATM word wins.
    let o = parsed("pppoe-ptm ether-vlan").unwrap();
    assert_eq!((o.overhead, o.atm), (Some(34), Some(atm_mode::PTM)));
    let o = parsed("bridged-llcsnap").unwrap();
    assert_eq!((o.overhead, o.atm), (Some(32), Some(atm_mode::ATM)));
    let o = parsed("conservative").unwrap();
    assert_eq!((o.overhead, o.atm), (Some(48), Some(atm_mode::ATM)));
    let o = parsed("docsis").unwrap();
    assert_eq!(
        (o.overhead, o.mpu, o.atm),
        (Some(18), Some(64), Some(atm_mode::NONE))
    );
    let o = parsed("ethernet raw").unwrap();
    assert_eq!((o.overhead, o.raw, o.mpu), (Some(0), Some(0), Some(84)));
    // rtt sets the target to a twentieth; a preset sets both.
    let o = parsed("rtt 30ms").unwrap();
    assert_eq!((o.rtt, o.target), (Some(30_000), Some(1_500)));
    let o = parsed("rtt 10us").unwrap();
    assert_eq!((o.rtt, o.target), (Some(10), Some(1)));
    let o = parsed("satellite").unwrap();
    assert_eq!((o.rtt, o.target), (Some(1_000_000), Some(50_000)));
    // unlimited sends a zero rate; bandwidth 0 sends none.
    assert_eq!(parsed("unlimited").unwrap().base_rate, Some(0));
    assert_eq!(parsed("bandwidth 0").unwrap().base_rate, None);
    let o = parsed(
        "diffserv hosts nat wash ack-filter ingress memlimit 1mb fwmark 0xff00 no-split-gso",
    )
    .unwrap();
    assert_eq!(o.diffserv_mode, Some(diffserv::DIFFSERV4));
    assert_eq!(o.flow_mode, Some(u32::from(flow_mode::HOSTS)));
    assert_eq!((o.nat, o.wash, o.ingress), (Some(1), Some(1), Some(1)));
    assert_eq!(
        (o.ack_filter, o.memory, o.fwmark),
        (Some(1), Some(1 << 20), Some(0xff00))
    );
    assert_eq!(o.split_gso, Some(0));
}

#[test]
fn refusals_as_q_cake_c() {
    assert_eq!(err("bandwidth fast"), "Illegal \"bandwidth\"");
    assert_eq!(err("rtt soon"), "Illegal \"rtt\"");
    assert_eq!(
        err("overhead 300"),
        "Illegal \"overhead\", valid range is -64 to 256\\n"
    );
    assert_eq!(err("mpu -1"), "Illegal \"mpu\", valid range is 0 to 256\\n");
    assert_eq!(
        err("memlimit lots"),
        "Illegal value for \"memlimit\": \"lots\""
    );
    assert_eq!(err("fwmark x"), "Illegal value for \"fwmark\": \"x\"");
    assert_eq!(
        err("lan metro"),
        "Error: duplicate \"metro\": \"lan\" is the second value."
    );
    assert!(err("turbo").starts_with("What is \"turbo\"?\nUsage: ... cake "));
    assert!(err("bandwidth").starts_with("Command line is not complete."));
}

#[test]
fn modes_print_and_change() {
    let add = "tc qdisc add dev left root cake bandwidth 20mbit diffserv4 dual-srchost nat wash ingress ack-filter-aggressive no-split-gso rtt 50ms pppoe-llcsnap mpu 64 memlimit 32mb fwmark 0xf0 autorate-ingress";
    assert_eq!(
        shown(&[add, "tc qdisc show dev left"]),
        "qdisc cake 8001: root refcnt 2 bandwidth 20Mbit autorate-ingress diffserv4 dual-srchost nat wash ingress ack-filter-aggressive no-split-gso rtt 50ms atm overhead 40 mpu 64 memlimit 32Mb fwmark 0xf0 \n"
    );
    // A change keeps what it does not name.
    let s = shown(&[
        add,
        "tc qdisc change dev left root cake besteffort egress raw",
        "tc qdisc show dev left",
    ]);
    assert_eq!(
        s,
        "qdisc cake 8001: root refcnt 2 bandwidth 20Mbit autorate-ingress besteffort dual-srchost nat wash ack-filter-aggressive no-split-gso rtt 50ms raw overhead 0 mpu 64 memlimit 32Mb fwmark 0xf0 \n"
    );
    // diffserv8 prints eight numbered tins.
    let s = shown(&[
        "tc qdisc add dev left root cake diffserv8",
        "tc -s qdisc show dev left",
    ]);
    assert!(s.contains("\n                  Tin 0        Tin 1        Tin 2        Tin 3        Tin 4        Tin 5        Tin 6        Tin 7\n"), "{s}");
}

/// `tc -s class show` of a cake with two flows queued: each flow on a
/// rotation is a class `tin * 1024 + flow + 1` (the best effort tin is
/// the second dumped under diffserv3) with its queue, drops and COBALT
/// state, no byte counters. A new flow's deficit is 1514 × (65535 / 1)
/// >> 16 = 1513.
#[test]
fn flows_show_as_classes() {
    use crate::qdisc::cake::Cake;
    use crate::qdisc::{Qdisc, QdiscCtx};
    use crate::tc::show::{render, DevDump};
    let options = parse_qdisc(BUILTIN, "cake", &["flows"]).unwrap();
    let mut q = Cake::build(QdiscCtx::default(), &options).unwrap();
    let mut d = Drops::new();
    for (id, port) in [(1u64, 1u16), (2, 1), (3, 2)] {
        let mut p = crate::qdisc::testutil::pkt(id, 1000);
        p.meta.flow.src_port = port;
        p.meta.hash = u32::from(port).wrapping_mul(0x9E37_79B9);
        q.enqueue(p, Instant::ZERO, &mut d);
    }
    let dump = q.dump(Instant::from_millis(1));
    assert_eq!(dump.classes.len(), 2);
    let devs = [DevDump {
        dev: Dir::LeftToRight,
        root: &dump,
        tx_queues: 1,
    }];
    let cmd = TcCommand::parse("tc -s class show dev left").unwrap();
    let text = render(&cmd, &devs).unwrap();
    let flows: Vec<u32> = dump.classes.iter().map(|c| c.classid & 0xFFFF).collect();
    assert!(flows.iter().all(|m| (1025..=2048).contains(m)), "{flows:?}");
    let first = format!("class cake 8001:{:x} parent 8001: \n", flows[0]);
    assert!(text.starts_with(&first), "{text}");
    assert!(
        text.contains(" (dropped 0, overlimits 0 requeues 0) \n backlog 2000b 2p requeues 0\n  deficit 1513 count 0 blue_prob 0\n")
            || text.contains(" (dropped 0, overlimits 0 requeues 0) \n backlog 1000b 1p requeues 0\n  deficit 1513 count 0 blue_prob 0\n"),
        "{text}"
    );
    let j = render(
        &TcCommand::parse("tc -s -j class show dev left").unwrap(),
        &devs,
    )
    .unwrap();
    assert!(
        j.contains("\"deficit\":1513,\"count\":0,\"blue_prob\":0"),
        "{j}"
    );
}
