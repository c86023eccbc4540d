//! What users read, pinned by insta snapshots (tests/pure/snapshots/, reviewed
//! by eye when they change): `tc qdisc show`, `tc -s qdisc show`, `tc
//! class show` and `tc -s -d class show` for a battery of trees built from
//! tc lines (with a few frames queued so that the statistics say
//! something), the `--help` of the binary and of every subcommand its help
//! lists, and what `bloatbox check` prints for every invalid configuration
//! fixture (tests/fixtures/config/ and tests/fixtures/shape/). No root.

use std::path::Path;

use bloatbox::dir::Dir;
use bloatbox::packet::Drops;
use bloatbox::qdisc::testutil::flow_pkt;
use bloatbox::qdisc::tree::{DevSpec, QdiscTree};
use bloatbox::qdisc::Qdisc;
use bloatbox::tc::TcCommand;
use bloatbox::time::Instant;

use crate::common::{self, bloatbox};

/// Trees as people build them on netdev threads, by name: the tc lines,
/// run in order on a fresh single-queue left device (`tx_queues` for mq).
const TREES: &[(&str, u16, &[&str])] = &[
    ("default_pfifo_fast", 1, &[]),
    (
        "fq_codel",
        1,
        &["tc qdisc replace dev left root fq_codel limit 1000 target 5ms interval 100ms ecn"],
    ),
    ("pfifo", 1, &["tc qdisc replace dev left root pfifo limit 50"]),
    (
        "sfq",
        1,
        &["tc qdisc replace dev left root sfq perturb 10 quantum 1514"],
    ),
    (
        "tbf",
        1,
        &["tc qdisc replace dev left root tbf rate 20mbit burst 32kb latency 50ms"],
    ),
    (
        "tbf_fq_codel",
        1,
        &[
            "tc qdisc replace dev left root handle 1: tbf rate 20mbit burst 32kb latency 50ms",
            "tc qdisc add dev left parent 1:1 handle 10: fq_codel",
        ],
    ),
    (
        "htb_sfq",
        1,
        &[
            "tc qdisc replace dev left root handle 1: htb default 10",
            "tc class add dev left parent 1: classid 1:1 htb rate 100mbit",
            "tc class add dev left parent 1:1 classid 1:10 htb rate 60mbit ceil 100mbit",
            "tc class add dev left parent 1:1 classid 1:20 htb rate 40mbit ceil 100mbit prio 1",
            "tc qdisc add dev left parent 1:10 handle 10: sfq perturb 10",
            "tc qdisc add dev left parent 1:20 handle 20: fq_codel",
        ],
    ),
    (
        "qfq",
        1,
        &[
            "tc qdisc replace dev left root handle 1: qfq",
            "tc class add dev left parent 1: classid 1:1 qfq weight 10",
            "tc class add dev left parent 1: classid 1:2 qfq weight 30 maxpkt 1514",
            "tc filter add dev left parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:1",
        ],
    ),
    (
        "mq_fq_codel",
        4,
        &[
            "tc qdisc replace dev left root handle 1: mq",
            "tc qdisc replace dev left parent 1:1 handle 11: fq_codel",
            "tc qdisc replace dev left parent 1:2 handle 12: fq_codel",
            "tc qdisc replace dev left parent 1:3 handle 13: fq_codel",
            "tc qdisc replace dev left parent 1:4 handle 14: fq_codel",
        ],
    ),
];

/// The shows each tree is pinned by.
const SHOWS: &[&str] = &[
    "tc qdisc show dev left",
    "tc -s qdisc show dev left",
    "tc class show dev left",
    "tc -s -d class show dev left",
];

fn tc(tree: &mut QdiscTree, line: &str, drops: &mut Drops) -> String {
    let cmd = TcCommand::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
    bloatbox::tc::run(tree, &cmd, Instant::ZERO, drops)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .unwrap_or_default()
}

#[test]
fn tc_shows_of_a_battery_of_trees() {
    for (name, tx_queues, lines) in TREES {
        let mut tree = QdiscTree::new(DevSpec {
            tx_queues: *tx_queues,
            ..DevSpec::new(Dir::LeftToRight, bloatbox::qdisc::kinds::BUILTIN)
        })
        .unwrap();
        let mut drops = Drops::new();
        let mut text = String::new();
        for line in *lines {
            let said = tc(&mut tree, line, &mut drops);
            text.push_str(&format!("$ {line}\n{said}"));
        }
        // Twelve frames of three flows in, five out: counters and backlog.
        for id in 0..12 {
            tree.enqueue(
                flow_pkt(id, 1000, (id % 3) as u16),
                Instant::ZERO,
                &mut drops,
            );
        }
        for _ in 0..5 {
            tree.dequeue(Instant::ZERO, &mut drops);
        }
        for line in SHOWS {
            let said = tc(&mut tree, line, &mut drops);
            text.push_str(&format!("$ {line}\n{said}"));
        }
        insta::assert_snapshot!(format!("tc_{name}"), text);
    }
}

/// The subcommands a `--help` text lists under `Commands:`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

fn help_of(path: &[String]) -> String {
    let out = bloatbox().args(path).arg("--help").output().unwrap();
    assert!(
        out.status.success(),
        "{path:?} --help: {}",
        common::text(&out)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn help_of_every_subcommand() {
    let top = help_of(&[]);
    let mut pending: Vec<Vec<String>> = subcommands(&top).into_iter().map(|c| vec![c]).collect();
    assert!(pending.len() >= 10, "subcommands of\n{top}");
    insta::assert_snapshot!("help", top);
    while let Some(path) = pending.pop() {
        let help = help_of(&path);
        for sub in subcommands(&help) {
            pending.push([path.clone(), vec![sub]].concat());
        }
        insta::assert_snapshot!(format!("help_{}", path.join("_")), help);
    }
}

/// `bloatbox check FILE` (run from the package root, so that the path it
/// names is the same everywhere): exit code and stderr.
fn check(file: &Path) -> String {
    let out = bloatbox()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("check")
        .arg(file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", common::text(&out));
    assert!(out.stdout.is_empty(), "{}", common::text(&out));
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn check_messages_of_every_invalid_fixture() {
    for dir in ["tests/fixtures/config", "tests/fixtures/shape"] {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .map(|p| Path::new(dir).join(p.file_name().unwrap()))
            .collect();
        files.sort();
        assert!(files.len() >= 10, "fixtures in {dir}");
        for file in files {
            let kind = dir.rsplit('/').next().unwrap();
            let stem = file.file_stem().unwrap().to_string_lossy();
            insta::assert_snapshot!(format!("check_{kind}_{stem}"), check(&file));
        }
    }
}
