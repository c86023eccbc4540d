//! A qdisc kind from outside the crate, added by one entry in a table of
//! kinds: a pass-through FIFO (every frame queued, none dropped, sent in
//! arrival order). It is driven through the tc front end (built, shown,
//! replaced with frames in flight, refused with options or on a device whose
//! table lacks it) and through the simulator, which checks a scenario's tc
//! lines against the same table and builds its trees from it.

use std::collections::VecDeque;
use std::sync::OnceLock;

use bloatbox::dir::Dir;
use bloatbox::packet::{DropReason, Drops, Packet, PacketMeta};
use bloatbox::qdisc::tree::{DevSpec, QdiscTree};
use bloatbox::qdisc::{Qdisc, QdiscCtx, QdiscDump, QdiscOptions, QdiscStats, TcError, Verdict};
use bloatbox::sim::scenario::Scenario;
use bloatbox::tc::kinds::{KindEntry, Syntax, BUILTIN};
use bloatbox::tc::{build_tree, run, TcCommand};
use bloatbox::time::Instant;

/// Holds every frame until it is dequeued, in order.
struct Passthrough {
    ctx: QdiscCtx,
    queue: VecDeque<Packet>,
    backlog: u64,
    stats: QdiscStats,
}

impl Qdisc for Passthrough {
    fn kind(&self) -> &'static str {
        "passthrough"
    }
    fn enqueue(&mut self, pkt: Packet, _: Instant, _: &mut Drops) -> Verdict {
        self.backlog += u64::from(pkt.len);
        self.queue.push_back(pkt);
        Verdict::Queued
    }
    fn dequeue(&mut self, _: Instant, _: &mut Drops) -> Option<Packet> {
        let pkt = self.queue.pop_front()?;
        self.backlog -= u64::from(pkt.len);
        self.stats.count_sent(&pkt);
        Some(pkt)
    }
    fn peek(&mut self, _: Instant, _: &mut Drops) -> Option<&Packet> {
        self.queue.front()
    }
    fn qlen(&self) -> u32 {
        self.queue.len() as u32
    }
    fn backlog(&self) -> u64 {
        self.backlog
    }
    fn counters(&self) -> QdiscStats {
        self.stats
    }
    fn reset(&mut self, drops: &mut Drops) {
        for pkt in self.drain_all() {
            drops.push(pkt, DropReason::QdiscReset);
        }
    }
    fn dump(&self, _: Instant) -> QdiscDump {
        QdiscDump {
            kind: self.kind().into(),
            handle: self.ctx.handle,
            parent: self.ctx.parent,
            stats: self.stats(),
            ..QdiscDump::default()
        }
    }
    fn drain_all(&mut self) -> Vec<Packet> {
        self.backlog = 0;
        self.queue.drain(..).collect()
    }
}

/// The pass-through's tc syntax: it takes no options.
static SYNTAX: Syntax = Syntax {
    qdisc: |words| match words.next() {
        Some(word) => Err(TcError::new(format!(
            "What is \"{word}\"? passthrough takes no options"
        ))),
        None => Ok(QdiscOptions::None),
    },
    class: None,
    print: |_| None,
    print_class: |_| None,
    example: None,
};

/// The built-in kinds and the pass-through: the one entry this test adds.
fn kinds() -> &'static [KindEntry] {
    static KINDS: OnceLock<Vec<KindEntry>> = OnceLock::new();
    KINDS.get_or_init(|| {
        let mut kinds = BUILTIN.to_vec();
        kinds.push(KindEntry {
            name: "passthrough",
            default_leaf: true,
            configurable: false,
            shapes: false,
            build: |ctx, _, _| {
                Ok(Box::new(Passthrough {
                    ctx,
                    queue: VecDeque::new(),
                    backlog: 0,
                    stats: QdiscStats::default(),
                }))
            },
            syntax: &SYNTAX,
        });
        kinds
    })
}

fn dev(kinds: &'static [KindEntry]) -> DevSpec {
    DevSpec::new(Dir::LeftToRight, kinds)
}

fn tc(tree: &mut QdiscTree, line: &str, drops: &mut Drops) -> Result<Option<String>, TcError> {
    run(tree, &TcCommand::parse(line)?, Instant::ZERO, drops)
}

fn frame(id: u64, len: u32) -> Packet {
    Packet {
        data: Vec::new(),
        len,
        meta: PacketMeta {
            id,
            ..PacketMeta::default()
        },
    }
}

#[test]
fn an_extra_kind_is_built_shown_and_replaced_through_tc() {
    let mut drops = Drops::new();
    let mut tree = build_tree(
        dev(kinds()),
        &["tc qdisc add dev left root handle 1: passthrough"],
    )
    .unwrap();
    assert_eq!(tree.dump(Instant::ZERO).kind, "passthrough");
    for id in 0..5 {
        assert_eq!(
            tree.enqueue(frame(id, 100 + id as u32), Instant::ZERO, &mut drops),
            Verdict::Queued
        );
    }
    let first = tree.dequeue(Instant::ZERO, &mut drops).unwrap();
    assert_eq!(first.meta.id, 0);
    assert_eq!(
        tc(&mut tree, "tc -s qdisc show dev left", &mut drops)
            .unwrap()
            .unwrap(),
        "qdisc passthrough 1: root refcnt 2 \n Sent 100 bytes 1 pkt (dropped 0, overlimits 0 \
         requeues 0) \n backlog 410b 4p requeues 0\n"
    );
    // Replaced by pfifo, and back: the frames in flight move along, in order.
    tc(
        &mut tree,
        "tc qdisc replace dev left root handle 2: pfifo",
        &mut drops,
    )
    .unwrap();
    assert_eq!(tree.dump(Instant::ZERO).kind, "pfifo");
    tc(
        &mut tree,
        "tc qdisc replace dev left root handle 3: passthrough",
        &mut drops,
    )
    .unwrap();
    let ids: Vec<u64> = std::iter::from_fn(|| tree.dequeue(Instant::ZERO, &mut drops))
        .map(|p| p.meta.id)
        .collect();
    assert_eq!(ids, vec![1, 2, 3, 4]);
    assert!(drops.is_empty());
    // A change without options changes nothing and succeeds, as the
    // kernel's qdisc_change does without TCA_OPTIONS; its own option check
    // refuses what it cannot take, and the tree is untouched after it.
    let before = format!("{:?}", tree.dump(Instant::ZERO));
    tc(
        &mut tree,
        "tc qdisc change dev left root passthrough",
        &mut drops,
    )
    .unwrap();
    assert_eq!(format!("{:?}", tree.dump(Instant::ZERO)), before);
    let err =
        build_tree(dev(kinds()), &["tc qdisc add dev left root passthrough"]).and_then(|mut t| {
            tc(
                &mut t,
                "tc qdisc replace dev left root passthrough x",
                &mut Drops::new(),
            )
        });
    let err = err.unwrap_err().0;
    assert!(
        err.contains("What is \"x\"? passthrough takes no options"),
        "its own parser, from the device's table, reads the words: {err}"
    );
}

#[test]
fn a_device_built_from_the_builtin_table_refuses_it() {
    let err = build_tree(dev(BUILTIN), &["tc qdisc add dev left root passthrough"])
        .err()
        .unwrap();
    assert!(
        err.0.contains("Error: Specified qdisc kind is unknown."),
        "{err}"
    );
    assert!(!err.0.contains("passthrough,"), "{err}");
    // The extra table lists it among the kinds it knows.
    let err = build_tree(dev(kinds()), &["tc qdisc add dev left root cake"])
        .err()
        .unwrap();
    assert!(err.0.contains(", qfq, passthrough)"), "{err}");
}

const SCENARIO: &str = r#"
seed = 3
duration = "1s"

[link]
rate = "10mbit"
delay = "1ms"

[link.left_to_right]
tc = ["tc qdisc add dev left root handle 1: passthrough"]

[[udp]]
name = "cbr"
rate = "2mbit"
size = 1000
"#;

#[test]
fn the_simulator_checks_and_builds_it_from_the_same_table() {
    let err = Scenario::from_toml(SCENARIO).err().unwrap().to_string();
    assert!(err.contains("Specified qdisc kind is unknown"), "{err}");
    let sc = Scenario::from_toml_with_kinds(SCENARIO, kinds()).unwrap();
    let report = bloatbox::sim::run(&sc).unwrap();
    let l2r = &report.directions[0];
    assert_eq!(l2r.qdisc.kind, "passthrough");
    assert!(l2r.frames_in > 200, "{} frames in", l2r.frames_in);
    assert_eq!(l2r.frames_out + l2r.held, l2r.frames_in);
    assert_eq!(l2r.qdisc.stats.drops, 0);
    // Every frame that came in went through it: sent on, or still queued.
    assert_eq!(
        l2r.qdisc.stats.packets + u64::from(l2r.qdisc.stats.qlen),
        l2r.frames_in
    );
    assert!(
        l2r.tc.starts_with("qdisc passthrough 1: root refcnt 2 \n"),
        "{}",
        l2r.tc
    );
    assert_eq!(report.directions[1].qdisc.kind, "pfifo_fast");
}
