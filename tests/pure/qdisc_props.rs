//! One property-test harness over every queueing discipline: random
//! enqueue / advance / dequeue sequences, checking after every step that
//! frames are conserved (offered = sent + dropped + held), that qlen and
//! backlog agree with the frames actually held, that frames of one flow leave
//! in the order they arrived, that `next_wakeup` is never in the past, and,
//! for shapers, that the bytes sent in any window never exceed
//! rate × window + burst (+ one frame of HTB overdraft).

use bloatbox::dir::Dir;
use bloatbox::packet::{Drops, FlowKey, Packet, PacketMeta};
use bloatbox::qdisc::kinds::BUILTIN;
use bloatbox::qdisc::tree::{DevSpec, QdiscTree};
use bloatbox::qdisc::Qdisc;
use bloatbox::tc::syntax::{samples, Sample};
use bloatbox::time::Instant;
use proptest::prelude::*;
use std::collections::HashMap;

/// Every sample tree of every kind of the table (`Syntax::samples`): no
/// kind is listed here.
fn subjects() -> Vec<(&'static str, Sample)> {
    let all = samples(BUILTIN);
    for kind in BUILTIN {
        assert!(
            all.iter().any(|(k, _)| *k == kind.name),
            "{}: no sample tree in its syntax",
            kind.name
        );
    }
    all
}

/// `sample`'s tree, as tc builds it, on a device with txqueuelen 50.
fn build(sample: &Sample) -> QdiscTree {
    let dev = DevSpec {
        txqueuelen: 50,
        tx_queues: sample.tx_queues,
        ..DevSpec::new(Dir::LeftToRight, BUILTIN)
    };
    bloatbox::tc::build_tree(dev, &sample.lines_for(Dir::LeftToRight))
        .unwrap_or_else(|e| panic!("{}: {e}", sample.name))
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
fn check(subject: &Sample, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut q = build(subject);
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
        for (_, s) in subjects() {
            check(&s, &ops)?;
        }
    }
}
