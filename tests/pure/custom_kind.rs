//! A qdisc kind from outside the crates, added as the recipe of
//! docs/architecture.md says: its discipline with options and xstats of its
//! own (as netlink attributes, `Attrs`), one entry in a table of kinds, and
//! its tc syntax registered by name. The kind is a pass-through FIFO (every
//! frame queued up to its `limit`, sent in arrival order) that counts the
//! longest queue it held (`maxqlen`). It is driven through the tc front end
//! (built with options, shown with its options and xstats in text and JSON,
//! changed, replaced with frames in flight, refused with bad options or on a
//! device whose table lacks it), the configuration (as a string and as a
//! structured table read by the keys its syntax declares), the TUI (its
//! xstats in the qdisc tree) and the simulator, which checks a scenario's
//! tc lines against the same table and builds its trees from it.

use std::collections::VecDeque;
use std::sync::Once;

use bloatbox::config::Config;
use bloatbox::dir::Dir;
use bloatbox::packet::{DropReason, Drops, Packet, PacketMeta};
use bloatbox::qdisc::dump::Xstats;
use bloatbox::qdisc::kinds::{KindEntry, BUILTIN};
use bloatbox::qdisc::tree::{DevSpec, QdiscTree};
use bloatbox::qdisc::{
    AttrValue, Attrs, Errno, Qdisc, QdiscCtx, QdiscDump, QdiscOptions, QdiscStats, Refusal, Verdict,
};
use bloatbox::sim::scenario::Scenario;
use bloatbox::tc::keys::{Key, KeyTable, Value};
use bloatbox::tc::syntax::{
    register, samples, Bench, JsonObj, Printed, Sample, Syntax, XstatsPrinter,
};
use bloatbox::tc::{build_tree, build_tree_of, run, TcCommand, TcError};
use bloatbox::time::Instant;

/// The pass-through's option attribute: its limit, packets
/// (`TCA_PASSTHROUGH_LIMIT`, as a kernel kind numbers its own).
const LIMIT: u16 = 1;
/// Its xstats attribute: the longest queue it held, packets.
const MAXQLEN: u16 = 1;
/// Its limit when none is given.
const DEFAULT_LIMIT: u32 = 1000;

/// Holds every frame until it is dequeued, in order, up to `limit`.
struct Passthrough {
    ctx: QdiscCtx,
    limit: u32,
    maxqlen: u32,
    queue: VecDeque<Packet>,
    backlog: u64,
    stats: QdiscStats,
}

impl Passthrough {
    /// Its constructor from its options, as the table's `build` calls it.
    fn build(ctx: QdiscCtx, options: &QdiscOptions) -> Result<Passthrough, Refusal> {
        let mut q = Passthrough {
            ctx,
            limit: DEFAULT_LIMIT,
            maxqlen: 0,
            queue: VecDeque::new(),
            backlog: 0,
            stats: QdiscStats::default(),
        };
        q.change(options, Instant::ZERO, &mut Drops::new())?;
        Ok(q)
    }
}

impl Qdisc for Passthrough {
    fn kind(&self) -> &'static str {
        "passthrough"
    }
    fn enqueue(&mut self, pkt: Packet, _: Instant, drops: &mut Drops) -> Verdict {
        if self.queue.len() as u32 >= self.limit {
            return self.stats.reject(pkt, DropReason::QueueFull, drops);
        }
        self.backlog += u64::from(pkt.len);
        self.queue.push_back(pkt);
        self.maxqlen = self.maxqlen.max(self.queue.len() as u32);
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
    fn change(&mut self, options: &QdiscOptions, _: Instant, _: &mut Drops) -> Result<(), Refusal> {
        match options {
            QdiscOptions::None => Ok(()),
            QdiscOptions::Other(attrs) => {
                if let Some(limit) = attrs.unsigned(LIMIT) {
                    self.limit = u32::try_from(limit)
                        .ok()
                        .filter(|l| *l > 0)
                        .ok_or_else(|| Refusal::new(Errno::EINVAL, "Invalid limit."))?;
                }
                Ok(())
            }
            _ => Err(Refusal::new(Errno::EINVAL, "Invalid argument")),
        }
    }
    fn dump(&self, _: Instant) -> QdiscDump {
        QdiscDump {
            kind: self.kind().into(),
            handle: self.ctx.handle,
            parent: self.ctx.parent,
            stats: self.stats(),
            options: QdiscOptions::Other(Attrs(vec![(LIMIT, AttrValue::U32(self.limit))])),
            xstats: Some(Xstats::Other(Attrs(vec![(
                MAXQLEN,
                AttrValue::U32(self.maxqlen),
            )]))),
            ..QdiscDump::default()
        }
    }
    fn drain_all(&mut self) -> Vec<Packet> {
        self.backlog = 0;
        self.queue.drain(..).collect()
    }
}

/// The pass-through's tc syntax: `[ limit PACKETS ]`, printed back as
/// `limit N`; its xstats as ` maxqlen N`.
static SYNTAX: Syntax = Syntax {
    kind: "passthrough",
    qdisc: |words| {
        let mut attrs = Attrs::default();
        while let Some(word) = words.next() {
            match word {
                "limit" => {
                    let v = words
                        .next()
                        .and_then(|v| v.parse::<u32>().ok())
                        .ok_or_else(|| TcError::new("Illegal \"limit\"").exit(TcError::PARSE))?;
                    attrs.put(LIMIT, AttrValue::U32(v));
                }
                _ => {
                    return Err(TcError::new(format!(
                        "What is \"{word}\"? passthrough takes [ limit PACKETS ]"
                    ))
                    .exit(TcError::PARSE))
                }
            }
        }
        Ok(QdiscOptions::Other(attrs))
    },
    class: None,
    print: |o| {
        let QdiscOptions::Other(attrs) = o else {
            return None;
        };
        let limit = attrs.unsigned(LIMIT)?;
        let mut json = JsonObj::new();
        json.insert("limit", limit.into());
        Some(Printed::same(format!("limit {limit}"), json))
    },
    print_class: |_| None,
    trailing_space: true,
    xstats: Some(&XSTATS),
    example: None,
    table: Some(&KeyTable::qdisc(&[Key::opt("limit", Value::Count)])),
    benches: &[Bench::new(
        "passthrough",
        &["tc qdisc add dev D root passthrough limit 100000"],
    )],
    samples: &[Sample::new(
        "passthrough limit 8",
        &["tc qdisc add dev D root passthrough limit 8"],
    )],
};

/// The pass-through's xstats printer.
static XSTATS: XstatsPrinter = XstatsPrinter {
    text: |out, x| {
        let Xstats::Other(attrs) = x else { return None };
        out.push_str(&format!("  maxqlen {}\n", attrs.unsigned(MAXQLEN)?));
        Some(())
    },
    json: |x| {
        let Xstats::Other(attrs) = x else { return None };
        let mut json = JsonObj::new();
        json.insert("maxqlen", attrs.unsigned(MAXQLEN)?.into());
        Some(json)
    },
};

/// The built-in kinds and the pass-through, registered once: the one
/// entry this test adds (the configuration builds its devices from the
/// registered table).
fn kinds() -> &'static [KindEntry] {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        register(
            KindEntry {
                name: "passthrough",
                default_leaf: true,
                configurable: true,
                shapes: false,
                class_stats: true,
                build: |ctx, _, options| Ok(Box::new(Passthrough::build(ctx, options)?)),
            },
            &SYNTAX,
        )
    });
    bloatbox::tc::syntax::kinds()
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
        "qdisc passthrough 1: root refcnt 2 limit 1000 \n Sent 100 bytes 1 pkt (dropped 0, \
         overlimits 0 requeues 0) \n backlog 410b 4p requeues 0\n  maxqlen 5\n"
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
    let err = err.unwrap_err();
    assert!(
        err.0
            .contains("What is \"x\"? passthrough takes [ limit PACKETS ]"),
        "its own parser, registered by name, reads the words: {err}"
    );
    assert_eq!(err.code(), TcError::PARSE);
}

#[test]
fn its_options_and_xstats_go_through_tc() {
    let mut drops = Drops::new();
    let mut tree = build_tree(
        dev(kinds()),
        &["tc qdisc add dev left root handle 1: passthrough limit 3"],
    )
    .unwrap();
    // The limit reached the constructor: the fourth frame is dropped.
    let verdicts: Vec<Verdict> = (0..4)
        .map(|id| tree.enqueue(frame(id, 100), Instant::ZERO, &mut drops))
        .collect();
    assert_eq!(
        verdicts,
        [
            Verdict::Queued,
            Verdict::Queued,
            Verdict::Queued,
            Verdict::Dropped
        ]
    );
    assert_eq!(drops.len(), 1);
    assert_eq!(
        tc(&mut tree, "tc -s qdisc show dev left", &mut drops)
            .unwrap()
            .unwrap(),
        "qdisc passthrough 1: root refcnt 2 limit 3 \n Sent 0 bytes 0 pkt (dropped 1, \
         overlimits 0 requeues 0) \n backlog 300b 3p requeues 0\n  maxqlen 3\n"
    );
    let json: serde_json::Value = serde_json::from_str(
        &tc(&mut tree, "tc -s -j qdisc show dev left", &mut drops)
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(json[0]["kind"], "passthrough");
    assert_eq!(json[0]["options"]["limit"], 3);
    assert_eq!(json[0]["maxqlen"], 3);
    // A change reaches the running qdisc; a bad value is refused by its
    // own parser with tc's exit code, and one its `change` refuses leaves
    // it as it was.
    tc(
        &mut tree,
        "tc qdisc change dev left root passthrough limit 10",
        &mut drops,
    )
    .unwrap();
    assert!(matches!(
        &tree.dump(Instant::ZERO).options,
        QdiscOptions::Other(a) if a.unsigned(LIMIT) == Some(10)
    ));
    let err = tc(
        &mut tree,
        "tc qdisc change dev left root passthrough limit x",
        &mut drops,
    )
    .unwrap_err();
    assert_eq!(
        (err.0.as_str(), err.code()),
        ("Illegal \"limit\"", TcError::PARSE)
    );
    let err = tc(
        &mut tree,
        "tc qdisc change dev left root passthrough limit 0",
        &mut drops,
    )
    .unwrap_err();
    assert_eq!(err.0, "Error: Invalid limit.");
    assert!(matches!(
        &tree.dump(Instant::ZERO).options,
        QdiscOptions::Other(a) if a.unsigned(LIMIT) == Some(10)
    ));
}

#[test]
fn the_tui_shows_its_options_and_xstats() {
    use bloatbox::tui::fixtures::{link_params, Scenario as TuiScenario};
    let tree = |dir| {
        build_tree(
            DevSpec::new(dir, kinds()),
            &[&format!(
                "tc qdisc add dev {} root handle 1: passthrough limit 64",
                dir.dev()
            )],
        )
        .unwrap()
    };
    let mut sc = TuiScenario::new(
        Box::new(tree(Dir::LeftToRight)),
        Box::new(tree(Dir::RightToLeft)),
        link_params(),
    );
    sc.add_standard_loads();
    let mut app = bloatbox::tui::App::new();
    for snap in sc.snapshots(20, 1_000_000) {
        app.on_snapshot(snap);
    }
    let root = &app.view().tree[0];
    assert_eq!(root.kind, "passthrough");
    assert_eq!(root.options, "limit 64");
    let maxqlen: u32 = root
        .xstats
        .iter()
        .find_map(|l| l.strip_prefix("maxqlen "))
        .unwrap_or_else(|| panic!("no maxqlen line in {:?}", root.xstats))
        .parse()
        .unwrap();
    assert!(
        (1..=64).contains(&maxqlen),
        "a loaded link queues, within the limit: {maxqlen}"
    );
}

#[test]
fn its_sample_is_among_the_table_samples_and_builds() {
    let all = samples(kinds());
    let (kind, sample) = all.last().unwrap();
    assert_eq!(*kind, "passthrough");
    let tree = build_tree(dev(kinds()), &sample.lines_for(Dir::LeftToRight)).unwrap();
    assert!(matches!(
        &tree.dump(Instant::ZERO).options,
        QdiscOptions::Other(a) if a.unsigned(LIMIT) == Some(8)
    ));
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
    let err = build_tree(dev(kinds()), &["tc qdisc add dev left root cbq"])
        .err()
        .unwrap();
    assert!(
        err.0.contains(
            ", red, choke, pie, fq_pie, fq, plug, skbprio, hhf, sfb, dualpi2, netem, cake, passthrough)"
        ),
        "{err}"
    );
}

const SCENARIO: &str = r#"
seed = 3
duration = "1s"

[link]
rate = "10mbit"
delay = "1ms"

[link.left_to_right]
tc = ["tc qdisc add dev left root handle 1: passthrough limit 100"]

[[udp]]
name = "cbr"
rate = "2mbit"
size = 1000
"#;

#[test]
fn the_simulator_checks_and_builds_it_from_the_same_table() {
    // Without the table, tc finds no parser for the kind's options.
    let err = Scenario::from_toml(SCENARIO).err().unwrap().to_string();
    assert!(
        err.contains("Unknown qdisc \"passthrough\", hence option \"limit\" is unparsable"),
        "{err}"
    );
    let bare = SCENARIO.replace(" limit 100", "");
    let err = Scenario::from_toml(&bare).err().unwrap().to_string();
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
        l2r.tc
            .starts_with("qdisc passthrough 1: root refcnt 2 limit 100 \n"),
        "{}",
        l2r.tc
    );
    assert!(l2r.tc.contains("\n  maxqlen "), "{}", l2r.tc);
    assert_eq!(report.directions[1].qdisc.kind, "pfifo_fast");
}

#[test]
fn the_configuration_takes_it_as_a_string_and_as_a_table() {
    kinds();
    for text in [
        "[link]\nqdisc = \"passthrough limit 7\"\n",
        "[link]\nqdisc = { kind = \"passthrough\", limit = 7 }\n",
        "[link.qdisc]\nkind = \"passthrough\"\nlimit = 7\n",
    ] {
        let config =
            Config::from_str(text, "custom.toml").unwrap_or_else(|e| panic!("{text}: {e}"));
        config.validate().unwrap_or_else(|e| panic!("{text}: {e}"));
        for dir in Dir::ALL {
            let dev = dir.dev();
            assert_eq!(
                config.tc_lines(dir),
                vec![format!("tc qdisc add dev {dev} root passthrough limit 7")],
                "{text}"
            );
            // The device the configuration describes builds it.
            let tree = build_tree_of(config.dev_spec(dir), &config.tc_steps(dir)).unwrap();
            let root = tree.dump(Instant::ZERO);
            assert_eq!(root.kind, "passthrough");
            let QdiscOptions::Other(attrs) = &root.options else {
                panic!("{:?}", root.options)
            };
            assert_eq!(attrs.unsigned(LIMIT), Some(7));
        }
    }
    let err = |text: &str| {
        Config::from_str(text, "custom.toml")
            .unwrap_err()
            .to_string()
    };
    let e = err("[link]\nqdisc = { kind = \"passthrough\", limt = 7 }\n");
    assert!(
        e.starts_with("custom.toml:2:")
            && e.contains("link.qdisc.limt: unknown field `limt`, expected `limit`"),
        "{e}"
    );
    let e = err("[link]\nqdisc = { kind = \"passthrough\", limit = \"seven\" }\n");
    assert!(
        e.contains("invalid type: string \"seven\", expected u32"),
        "{e}"
    );
    // Its own parser reads the string form's words.
    let e = err("[link]\nqdisc = \"passthrough limit lots\"\n");
    assert!(
        e.contains("tc rejects \"passthrough limit lots\": Illegal \"limit\""),
        "{e}"
    );
    // The unknown-kind message lists it among the kinds the file may name.
    let e = err("[link]\nqdisc = \"passthru\"\n");
    assert!(e.contains(", passthrough;"), "{e}");
}
