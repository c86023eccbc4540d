//! The qdisc trees the per-packet benchmark (`benches/qdisc.rs`) and the
//! allocation test (`tests/alloc/qdisc.rs`) both drive: every discipline,
//! built from the tc lines a user would type, with limits large enough that a
//! standing queue of one frame per flow (10,000 flows) is never tail-dropped,
//! and the frames those runs offer.
use bloatbox::dir::Dir;

use bloatbox::packet::{classify::flow_hash, FlowKey, Packet, PacketMeta};
use bloatbox::qdisc::tree::{DevSpec, QdiscTree};

/// Flow counts every discipline is measured at.
pub const FLOW_COUNTS: [u32; 3] = [1, 100, 10_000];

/// TX queues of the `mq` device.
const MQ_QUEUES: u16 = 4;
/// Classes of the `htb_1000_classes` and `qfq` trees.
const CLASSES: u32 = 1000;

/// How a frame finds its class.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Steer {
    /// Classless, or everything goes to the default class.
    None,
    /// `skb->priority` = `1:(flow % 1000 + 1)`, one of the tree's classes.
    Classid,
    /// `queue_mapping` = flow % 4 (the TX queue a flow hashes to).
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
    fn new(name: &'static str, steer: Steer, lines: &[&str]) -> Discipline {
        Discipline {
            name,
            steer,
            tx_queues: 1,
            lines: lines.iter().map(|l| l.to_string()).collect(),
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
                    Steer::TxQueue => (0, (f % MQ_QUEUES as u32) as u16),
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

/// `N` classes `1:1` .. `1:N` (tc minors are hex) below `parent`.
fn classes(parent: &str, kind_args: &str) -> Vec<String> {
    (1..=CLASSES)
        .map(|minor| {
            format!("tc class add dev left parent {parent} classid 1:{minor:x} {kind_args}")
        })
        .collect()
}

/// Every discipline of issue 3, as tc builds it.
pub fn all() -> Vec<Discipline> {
    let mut htb_1000 = Discipline::new(
        "htb_1000_classes",
        Steer::Classid,
        &[
            "tc qdisc add dev left root handle 1: htb default 1",
            "tc class add dev left parent 1: classid 1:ffff htb rate 10gbit",
        ],
    );
    htb_1000
        .lines
        .extend(classes("1:ffff", "htb rate 10mbit ceil 10gbit"));
    let mut qfq = Discipline::new(
        "qfq_1000_classes",
        Steer::Classid,
        &["tc qdisc add dev left root handle 1: qfq"],
    );
    qfq.lines.extend(classes("1:", "qfq weight 10 maxpkt 1514"));
    let mut mq = Discipline::new(
        "mq_4_fq_codel",
        Steer::TxQueue,
        &["tc qdisc add dev left root handle 1: mq"],
    );
    mq.tx_queues = MQ_QUEUES;
    mq.lines
        .extend((1..=MQ_QUEUES).map(|q| format!("tc qdisc add dev left parent 1:{q:x} fq_codel")));
    vec![
        Discipline::new(
            "pfifo",
            Steer::None,
            &["tc qdisc add dev left root pfifo limit 100000"],
        ),
        Discipline::new(
            "pfifo_fast",
            Steer::None,
            &["tc qdisc add dev left root pfifo_fast"],
        ),
        Discipline::new(
            "bfifo",
            Steer::None,
            &["tc qdisc add dev left root bfifo limit 200mb"],
        ),
        Discipline::new(
            "pfifo_head_drop",
            Steer::None,
            &["tc qdisc add dev left root pfifo_head_drop limit 100000"],
        ),
        Discipline::new(
            "tbf",
            Steer::None,
            &["tc qdisc add dev left root tbf rate 10gbit burst 1mb limit 200mb"],
        ),
        Discipline::new(
            "htb",
            Steer::None,
            &[
                "tc qdisc add dev left root handle 1: htb default 10",
                "tc class add dev left parent 1: classid 1:10 htb rate 10gbit",
            ],
        ),
        htb_1000,
        Discipline::new(
            "sfq",
            Steer::None,
            &["tc qdisc add dev left root sfq limit 65535 flows 65535 divisor 65536"],
        ),
        Discipline::new(
            "codel",
            Steer::None,
            &["tc qdisc add dev left root codel limit 100000"],
        ),
        Discipline::new(
            "fq_codel",
            Steer::None,
            &["tc qdisc add dev left root fq_codel"],
        ),
        qfq,
        mq,
    ]
}
