//! The tc battery's regression net, without root: every command of
//! `testdata/battery.tc` as `scripts/tc-battery.py --write` ran it on
//! Linux (`testdata/battery-kernel.jsonl`: tc's stdout, stderr and exit
//! code for each command and each show after it), replayed through
//! bloatbox's tc front end on a fresh single-queue TAP per session. What
//! `bloatbox tc` prints (`super::Printed`) must be what tc printed, or its
//! stderr followed by hint lines of bloatbox's own (docs/tc-ethtool.md).
//! The differences not fixed yet are listed, one per line, in
//! `testdata/battery-known.txt`: the test fails on a difference the list
//! lacks and on a listed one that is gone. `BLOATBOX_BATTERY_KNOWN=write`
//! rewrites the list from the run (review its diff).
use super::{run, Printed, TcCommand};
use crate::dir::Dir;
use crate::packet::Drops;
use crate::qdisc::request::Verb;
use crate::qdisc::tree::{DevSpec, QdiscTree};
use crate::time::Instant;

const KERNEL: &str = include_str!("testdata/battery-kernel.jsonl");
const KNOWN: &str = include_str!("testdata/battery-known.txt");

/// What `bloatbox tc LINE` prints on a daemon whose `left` tree is `tree`,
/// as the daemon's path gives it: the line parsed (`Commander::send`),
/// then run on the device it names.
fn bloatbox(tree: &mut QdiscTree, line: &str) -> Printed {
    let result = TcCommand::parse(line)
        .map_err(|e| e.0)
        .and_then(|cmd| match cmd.dev {
            Some(Dir::LeftToRight) => run(tree, &cmd, Instant::ZERO, &mut Drops::new())
                .map(Option::unwrap_or_default)
                .map_err(|e| e.0),
            // The battery runs every command on dev left.
            _ => Err(format!("the battery's test runs on dev left only: {line}")),
        });
    let show = TcCommand::parse(line).is_ok_and(|c| c.verb == Verb::Show);
    Printed::of(line, show, result)
}

/// tc's output, or its stderr (if any) followed by bloatbox's hint lines.
fn agrees(kernel: &Printed, ours: &Printed) -> bool {
    kernel == ours
        || (kernel.stdout == ours.stdout
            && kernel.code == ours.code
            && (kernel.stderr.is_empty() || kernel.stderr.ends_with('\n'))
            && ours.stderr.starts_with(&kernel.stderr))
}

fn field(v: &serde_json::Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_string()
}

#[test]
fn bloatbox_prints_what_the_kernel_battery_printed() {
    let mut lines = KERNEL.lines();
    let meta: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert!(meta["shows"].is_array(), "{meta}");
    let mut tree = None;
    let mut session = String::new();
    let mut index = 0;
    // The last output of each show in the session, for repeats.
    let mut last: Vec<(String, Printed)> = Vec::new();
    let mut differ = Vec::new();
    let mut runs = 0;
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Some(name) = v["session"].as_str() {
            session = name.to_string();
            index = 0;
            last.clear();
            tree = Some(
                QdiscTree::new(DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN))
                    .unwrap(),
            );
            continue;
        }
        let tree = tree.as_mut().expect("a command before the first session");
        let cmd = field(&v, "cmd");
        let kernel = if v["repeat"].as_bool() == Some(true) {
            last.iter()
                .rev()
                .find(|(c, _)| *c == cmd)
                .map(|(_, p)| p.clone())
                .unwrap_or_else(|| panic!("{session} #{index}: a repeat of nothing"))
        } else {
            let p = Printed {
                stdout: field(&v, "stdout"),
                stderr: field(&v, "stderr"),
                code: u8::try_from(v["rc"].as_u64().unwrap()).unwrap(),
            };
            last.push((cmd.clone(), p.clone()));
            p
        };
        let ours = bloatbox(tree, &cmd);
        runs += 1;
        if !agrees(&kernel, &ours) {
            differ.push(format!("{session} #{index}: {cmd}"));
            if std::env::var("BLOATBOX_BATTERY_VERBOSE").is_ok() {
                eprintln!("{session} #{index}: {cmd}\n  kernel   {kernel:?}\n  bloatbox {ours:?}");
            }
        }
        index += 1;
    }
    assert!(runs > 2000, "{runs} lines replayed");
    if std::env::var("BLOATBOX_BATTERY_KNOWN").as_deref() == Ok("write") {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/tc/testdata/battery-known.txt"
        );
        let mut text = String::from(
            "# Battery lines (session #index: command) where bloatbox still prints\n\
             # other than the kernel did; see crates/lang/src/tc/battery_tests.rs.\n",
        );
        text.extend(differ.iter().map(|d| format!("{d}\n")));
        std::fs::write(path, text).unwrap();
        return;
    }
    let known: Vec<&str> = KNOWN
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    let new: Vec<&String> = differ
        .iter()
        .filter(|d| !known.contains(&d.as_str()))
        .collect();
    let gone: Vec<&&str> = known
        .iter()
        .filter(|k| !differ.iter().any(|d| d == **k))
        .collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "{} of {runs} battery lines differ from the kernel's and are not in battery-known.txt \
         (BLOATBOX_BATTERY_VERBOSE=1 prints them):\n{}\n{} listed there now agree (remove them):\n{}",
        new.len(),
        new.iter().take(30).map(|s| s.as_str()).collect::<Vec<_>>().join("\n"),
        gone.len(),
        gone.iter().take(30).map(|s| **s).collect::<Vec<_>>().join("\n"),
    );
}
