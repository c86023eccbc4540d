//! One property-test harness over every queueing discipline: random
//! enqueue / advance / dequeue sequences, checking after every step that
//! frames are conserved (offered = sent + dropped + held), that qlen and
//! backlog agree with the frames actually held, that frames of one flow leave
//! in the order they arrived, that `next_wakeup` is never in the past, and,
//! for shapers, that the bytes sent in any window never exceed
//! rate × window + burst (+ one frame of HTB overdraft).

use bloatbox::packet::{Drops, FlowKey, Packet, PacketMeta};
use bloatbox::qdisc::htb::Htb;
use bloatbox::qdisc::{Qdisc, QdiscCtx, QdiscOptions, TcError};
use bloatbox::time::Instant;
use proptest::prelude::*;
use std::collections::HashMap;

/// A discipline under test: how to build it, and its shaping bound if any
/// (rate in bytes/s, burst in bytes).
struct Subject {
    name: &'static str,
    build: fn() -> Box<dyn Qdisc>,
    shaping: Option<(u64, u64)>,
}

fn ctx() -> QdiscCtx {
    QdiscCtx {
        txqueuelen: 50,
        ..QdiscCtx::default()
    }
}

fn subjects() -> Vec<Subject> {
    use bloatbox::qdisc::codel_qdisc::CodelQdisc;
    use bloatbox::qdisc::fifo::{Fifo, FifoKind};
    use bloatbox::qdisc::fq_codel::FqCodel;
    use bloatbox::qdisc::pfifo_fast::PfifoFast;
    use bloatbox::qdisc::sfq::Sfq;
    use bloatbox::qdisc::tbf::Tbf;
    vec![
        Subject {
            name: "pfifo",
            build: || Box::new(Fifo::new(FifoKind::Pfifo, ctx())),
            shaping: None,
        },
        Subject {
            name: "bfifo",
            build: || Box::new(Fifo::with_limit(FifoKind::Bfifo, ctx(), 20_000)),
            shaping: None,
        },
        Subject {
            name: "pfifo_head_drop",
            build: || Box::new(Fifo::with_limit(FifoKind::PfifoHeadDrop, ctx(), 8)),
            shaping: None,
        },
        Subject {
            name: "pfifo_fast",
            build: || Box::new(PfifoFast::new(ctx())),
            shaping: None,
        },
        Subject {
            name: "codel",
            build: || {
                Box::new(parsed(
                    CodelQdisc::build,
                    "codel",
                    "limit 20 target 1ms interval 5ms",
                ))
            },
            shaping: None,
        },
        Subject {
            name: "fq_codel",
            build: || {
                Box::new(parsed(
                    FqCodel::build,
                    "fq_codel",
                    "limit 24 flows 16 target 1ms interval 5ms drop_batch 4",
                ))
            },
            shaping: None,
        },
        Subject {
            name: "fq_codel_memory",
            build: || {
                Box::new(parsed(
                    FqCodel::build,
                    "fq_codel",
                    "memory_limit 20000 noecn",
                ))
            },
            shaping: None,
        },
        Subject {
            name: "tbf",
            build: || {
                Box::new(parsed(
                    Tbf::build,
                    "tbf",
                    "rate 8mbit burst 3000 limit 30000",
                ))
            },
            shaping: Some((1_000_000, 3000)),
        },
        Subject {
            name: "tbf_peakrate",
            build: || {
                Box::new(parsed(
                    Tbf::build,
                    "tbf",
                    "rate 4mbit burst 6000 latency 20ms peakrate 16mbit mtu 1600",
                ))
            },
            shaping: Some((500_000, 6000)),
        },
        Subject {
            name: "htb",
            build: htb_tree,
            shaping: Some((1_000_000, 3200)),
        },
        Subject {
            name: "sfq",
            build: || {
                Box::new(parsed(
                    Sfq::build,
                    "sfq",
                    "limit 20 depth 6 flows 8 divisor 16",
                ))
            },
            shaping: None,
        },
        Subject {
            name: "sfq_headdrop",
            build: || {
                Box::new(parsed(
                    Sfq::build,
                    "sfq",
                    "limit 10 depth 3 headdrop perturb 1",
                ))
            },
            shaping: None,
        },
        Subject {
            name: "qfq",
            build: qfq,
            shaping: None,
        },
    ]
}

/// QFQ with two classes; a matchall filter steers every frame to 1:1,
/// whose maxpkt 512 the frames keep raising.
fn qfq() -> Box<dyn Qdisc> {
    use bloatbox::qdisc::qfq::Qfq;
    let ctx = QdiscCtx {
        handle: 0x1_0000,
        ..ctx()
    };
    let mut q = Qfq::build(ctx, &bloatbox::qdisc::QdiscOptions::None).expect("qfq");
    let classes = q.as_classful().expect("classful");
    classes
        .add_class(
            0x1_0001,
            0x1_0000,
            &class_options("qfq", "weight 2 maxpkt 512"),
        )
        .expect("class 1:1");
    classes
        .add_class(0x1_0002, 0x1_0000, &class_options("qfq", ""))
        .expect("class 1:2");
    let filter = bloatbox::tc::filter::parse(&[
        "parent", "1:", "protocol", "all", "matchall", "flowid", "1:1",
    ]);
    q.as_filter_host()
        .expect("qfq takes filters")
        .add_filter(filter.expect("filter"))
        .expect("add filter");
    Box::new(q)
}

/// The class options `args` give a `kind` class, as tc parses them.
fn class_options(kind: &str, args: &str) -> bloatbox::qdisc::ClassOptions {
    let words: Vec<&str> = args.split_whitespace().collect();
    bloatbox::tc::kinds::parse_class(bloatbox::tc::kinds::BUILTIN, kind, &words)
        .expect("valid class options")
}

/// Builds a `kind` qdisc from the options tc's parser makes of `args`, as
/// `tc qdisc add ... KIND ARGS`.
fn parsed<Q>(
    build: fn(QdiscCtx, &QdiscOptions) -> Result<Q, TcError>,
    kind: &str,
    args: &str,
) -> Q {
    let words: Vec<&str> = args.split_whitespace().collect();
    let options = bloatbox::tc::kinds::parse_qdisc(bloatbox::tc::kinds::BUILTIN, kind, &words)
        .expect("valid tc options");
    build(ctx(), &options).expect("valid options")
}

/// HTB with an 8 Mbit/s root class and two leaves (the default one may
/// borrow up to the root's ceil).
fn htb_tree() -> Box<dyn Qdisc> {
    let mut q = parsed(Htb::build, "htb", "default 20");
    let classful = q.as_classful().expect("htb is classful");
    let root = 0x8001_0001;
    for (classid, parent, args) in [
        (root, 0x8001_0000, "rate 8mbit"),
        (0x8001_0010, root, "rate 2mbit ceil 8mbit"),
        (0x8001_0020, root, "rate 6mbit ceil 8mbit"),
    ] {
        classful
            .add_class(classid, parent, &class_options("htb", args))
            .expect("valid class");
    }
    Box::new(q)
}

#[derive(Clone, Debug)]
enum Op {
    Enqueue { flow: u8, len: u16 },
    Advance { us: u32 },
    Dequeue,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..12, 60u16..1515).prop_map(|(flow, len)| Op::Enqueue { flow, len }),
        2 => (0u32..3000).prop_map(|us| Op::Advance { us }),
        4 => Just(Op::Dequeue),
    ]
}

/// A frame of `flow`. Each flow has one fixed TOS (flows differ), so
/// priority qdiscs may reorder across flows but never within one.
fn frame(id: u64, flow: u8, len: u16) -> Packet {
    let tos = [0u8, 0x10, 0x08, 0x02][flow as usize % 4];
    let mut key = FlowKey {
        proto: 17,
        src_port: 4000 + flow as u16,
        dst_port: 9,
        ..FlowKey::default()
    };
    key.src[15] = 1;
    key.dst[15] = 2;
    Packet {
        data: Vec::new(),
        len: len as u32,
        meta: PacketMeta {
            id,
            flow: key,
            hash: (flow as u32 + 1).wrapping_mul(0x9E37_79B1),
            dsfield: tos,
            priority: bloatbox::packet::classify::rt_tos2priority(tos),
            ..PacketMeta::default()
        },
    }
}

/// Runs one sequence against one discipline, checking every invariant after
/// every step.
fn check(subject: &Subject, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut q = (subject.build)();
    let mut drops = Drops::new();
    let mut now = Instant::from_millis(1);
    let mut held: HashMap<u64, (u8, u32)> = HashMap::new();
    let mut offered = 0u64;
    let mut sent = 0u64;
    let mut dropped = 0u64;
    let mut last_id_of_flow: HashMap<u8, u64> = HashMap::new();
    let mut sends: Vec<(Instant, u32)> = Vec::new();
    let name = subject.name;

    for (id, op) in ops.iter().enumerate() {
        let id = id as u64;
        match *op {
            Op::Enqueue { flow, len } => {
                offered += 1;
                held.insert(id, (flow, len as u32));
                q.enqueue(frame(id, flow, len), now, &mut drops);
            }
            Op::Advance { us } => now += us as u64 * 1000,
            Op::Dequeue => {
                if let Some(p) = q.dequeue(now, &mut drops) {
                    sent += 1;
                    let (flow, len) = held
                        .remove(&p.meta.id)
                        .ok_or_else(|| TestCaseError::fail(format!("{name}: unknown frame")))?;
                    prop_assert_eq!(len, p.len, "{}: length changed", name);
                    if let Some(prev) = last_id_of_flow.insert(flow, p.meta.id) {
                        prop_assert!(prev < p.meta.id, "{}: flow {} reordered", name, flow);
                    }
                    sends.push((now, p.len));
                }
            }
        }
        for (p, _) in drops.drain() {
            dropped += 1;
            prop_assert!(held.remove(&p.meta.id).is_some(), "{}: dropped twice", name);
        }
        let backlog: u64 = held.values().map(|(_, l)| *l as u64).sum();
        prop_assert_eq!(
            offered,
            sent + dropped + q.qlen() as u64,
            "{}: conservation",
            name
        );
        prop_assert_eq!(q.qlen() as usize, held.len(), "{}: qlen", name);
        prop_assert_eq!(q.backlog(), backlog, "{}: backlog", name);
        let st = q.stats();
        prop_assert_eq!(
            (st.qlen, st.backlog),
            (q.qlen(), backlog),
            "{}: stats",
            name
        );
        prop_assert_eq!(st.packets, sent, "{}: Sent packets", name);
        if let Some(w) = q.next_wakeup(now) {
            prop_assert!(w >= now, "{}: next_wakeup in the past", name);
        }
    }
    if let Some((rate, burst)) = subject.shaping {
        for i in 0..sends.len() {
            let mut bytes = 0u64;
            for &(t, len) in &sends[i..] {
                bytes += len as u64;
                let window_ns = t.saturating_since(sends[i].0);
                let allowed = rate as u128 * window_ns as u128 / 1_000_000_000 + burst as u128;
                prop_assert!(
                    bytes as u128 <= allowed + 2 * 1514,
                    "{}: {} bytes in {} ns exceeds rate × window + burst",
                    name,
                    bytes,
                    window_ns
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(crate::common::proptest_config(96, file!()))]

    #[test]
    fn every_discipline_keeps_its_invariants(ops in proptest::collection::vec(op(), 1..400)) {
        for s in subjects() {
            check(&s, &ops)?;
        }
    }
}
