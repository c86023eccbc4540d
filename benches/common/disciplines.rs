//! The qdisc trees the per-packet benchmark (`benches/qdisc.rs`) and the
//! allocation test (`tests/alloc/qdisc.rs`) both drive: every kind's
//! benchmark trees (`Syntax::benches`, in the table of kinds' order), built
//! from the tc lines a user would type, with limits large enough that a
//! standing queue of one frame per flow (10,000 flows) is never
//! tail-dropped, and the frames those runs offer.
use bloatbox::dir::Dir;

use bloatbox::packet::{classify::flow_hash, FlowKey, Packet, PacketMeta};
use bloatbox::qdisc::kinds::BUILTIN;
use bloatbox::qdisc::tree::{DevSpec, QdiscTree};
use bloatbox::tc::syntax::{syntax, Bench};

/// Flow counts every discipline is measured at.
pub const FLOW_COUNTS: [u32; 3] = [1, 100, 10_000];

/// Classes of a tree whose bench repeats a class line (`Bench::classes`).
const CLASSES: u32 = 1000;

/// How a frame finds its class.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Steer {
    /// Classless, or everything goes to the default class.
    None,
    /// `skb->priority` = `1:(flow % 1000 + 1)`, one of the tree's classes.
    Classid,
    /// `queue_mapping` = flow % TX queues (the TX queue a flow hashes to).
    TxQueue,
}

/// One tree: a name, the device below it and the tc lines that build it.
pub struct Discipline {
    pub name: &'static str,
    pub steer: Steer,
    pub tx_queues: u16,
    pub lines: Vec<String>,
}

impl Discipline {
    /// The tree of `bench`, with its frames steered to its repeated
    /// classes or its TX queues.
    fn of(bench: &Bench) -> Discipline {
        let steer = if bench.classes.is_some() {
            Steer::Classid
        } else if bench.tx_queues > 1 {
            Steer::TxQueue
        } else {
            Steer::None
        };
        Discipline {
            name: bench.name,
            steer,
            tx_queues: bench.tx_queues,
            lines: bench.lines_for(Dir::LeftToRight, CLASSES),
        }
    }

    /// The tree on a device with txqueuelen 100,000 (the default limit of
    /// pfifo_fast bands and of HTB/QFQ leaf pfifos).
    pub fn build(&self) -> QdiscTree {
        let dev = DevSpec {
            txqueuelen: 100_000,
            tx_queues: self.tx_queues,
            ..DevSpec::new(Dir::LeftToRight, bloatbox::qdisc::kinds::BUILTIN)
        };
        bloatbox::tc::build_tree(dev, &self.lines).unwrap_or_else(|e| panic!("{}: {e}", self.name))
    }

    /// `n` 1514-byte frames of `flows` TCP flows in turn, starting at id
    /// `first`.
    pub fn frames(&self, flows: u32, first: u64, n: u64) -> Vec<Packet> {
        (first..first + n)
            .map(|i| {
                let f = (i % flows as u64) as u32;
                let mut key = FlowKey {
                    proto: 6,
                    src_port: (f & 0xffff) as u16,
                    dst_port: (f >> 16) as u16 + 80,
                    ..FlowKey::default()
                };
                key.src[15] = 1;
                key.dst[15] = 2;
                let (priority, queue_mapping) = match self.steer {
                    Steer::None => (0, 0),
                    Steer::Classid => (0x0001_0000 | (f % CLASSES + 1), 0),
                    Steer::TxQueue => (0, (f % u32::from(self.tx_queues)) as u16),
                };
                Packet {
                    data: Vec::new(),
                    len: 1514,
                    meta: PacketMeta {
                        id: i,
                        priority,
                        queue_mapping,
                        flow: key,
                        hash: flow_hash(&key, 0),
                        ..PacketMeta::default()
                    },
                }
            })
            .collect()
    }
}

/// Every benchmark tree of every built-in kind, in the table's order; a
/// kind without a syntax or without a tree is a mistake of its syntax.
pub fn all() -> Vec<Discipline> {
    BUILTIN
        .iter()
        .flat_map(|kind| {
            let benches = syntax(kind.name).map_or(&[][..], |s| s.benches);
            assert!(
                !benches.is_empty(),
                "kind {} has no benchmark tree",
                kind.name
            );
            benches.iter().map(Discipline::of)
        })
        .collect()
}
