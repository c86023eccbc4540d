//! The reliability set-ups: every root qdisc kind as the tc lines that build
//! it (plus fq_codel followed by netem impairments), each on a 10 Mbit/s,
//! 2 ms link so that queues build up, as a ready `Bridge`. Shared by the
//! reliability tests (`tests/reliability/frames.rs`) and the `bridge` fuzz
//! target, so both exercise the same trees.

use crate::bridge::Bridge;
use crate::dir::Dir;
use crate::link::{LinkParams, Path};
use crate::qdisc::tree::DevSpec;
use crate::tc::netem::parse_netem;
use crate::time::Instant;

/// One root qdisc set-up: its name, its tc lines (` D ` stands for the
/// device) and the TX queue count the device needs.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// The set-up's name, for messages.
    pub name: &'static str,
    /// The tc lines that build the tree; ` D ` stands for the device.
    pub lines: &'static [&'static str],
    /// TX queues the device needs (more than 1 for mq).
    pub tx_queues: u16,
}

impl Setup {
    /// Whether the set-up adds netem impairments (which duplicate frames).
    pub fn impaired(&self) -> bool {
        self.name.ends_with("+netem")
    }
}

const fn setup(name: &'static str, lines: &'static [&'static str], tx_queues: u16) -> Setup {
    Setup {
        name,
        lines,
        tx_queues,
    }
}

/// Every root qdisc kind.
pub const SETUPS: &[Setup] = &[
    setup("pfifo_fast", &[], 1),
    setup(
        "fq_codel ecn",
        &["tc qdisc add dev D root fq_codel ecn limit 64"],
        1,
    ),
    setup("sfq", &["tc qdisc add dev D root sfq limit 32"], 1),
    setup("codel", &["tc qdisc add dev D root codel limit 50 ecn"], 1),
    setup(
        "tbf",
        &["tc qdisc add dev D root tbf rate 5mbit burst 3kb limit 20kb"],
        1,
    ),
    setup(
        "htb+sfq",
        &[
            "tc qdisc add dev D root handle 1: htb default 20",
            "tc class add dev D parent 1: classid 1:1 htb rate 8mbit",
            "tc class add dev D parent 1:1 classid 1:10 htb rate 2mbit ceil 8mbit prio 1",
            "tc class add dev D parent 1:1 classid 1:20 htb rate 1mbit ceil 4mbit",
            "tc qdisc add dev D parent 1:10 sfq limit 20",
            "tc qdisc add dev D parent 1:20 pfifo limit 20",
            "tc filter add dev D parent 1: protocol all prio 1 u32 match ip dport 5001 0xffff flowid 1:10",
        ],
        1,
    ),
    setup(
        "qfq+matchall",
        &[
            "tc qdisc add dev D root handle 1: qfq",
            "tc class add dev D parent 1: classid 1:1 qfq weight 10",
            "tc class add dev D parent 1: classid 1:2 qfq weight 1",
            "tc filter add dev D parent 1: protocol all prio 1 u32 match ip protocol 17 0xff flowid 1:2",
            "tc filter add dev D parent 1: protocol all prio 2 matchall flowid 1:1",
        ],
        1,
    ),
    setup("fq_codel+netem", &["tc qdisc add dev D root fq_codel ecn"], 1),
    setup(
        "mq+fq_codel",
        &[
            "tc qdisc add dev D root handle 1: mq",
            "tc qdisc add dev D parent 1:1 fq_codel limit 30 ecn",
            "tc qdisc add dev D parent 1:2 fq_codel limit 30 memory_limit 64kb",
        ],
        2,
    ),
];

/// Impairments of the `+netem` set-up: every effect that adds, removes,
/// reorders or alters frames after the qdisc.
pub const NETEM: &[&str] = &[
    "delay",
    "1ms",
    "1ms",
    "loss",
    "5%",
    "duplicate",
    "10%",
    "corrupt",
    "5%",
    "reorder",
    "20%",
];

/// The link of the set-ups: 10 Mbit/s (queues build up), 2 ms.
pub fn params() -> LinkParams {
    LinkParams {
        rate_bytes_ps: 1_250_000,
        delay_ns: 2_000_000,
        ..LinkParams::default()
    }
}

/// One direction of `setup`.
pub fn path(dev: Dir, setup: &Setup) -> Path {
    let params = params();
    let spec = DevSpec {
        tx_queues: setup.tx_queues,
        seed: 7,
        ..params.dev_spec(dev, crate::tc::kinds::BUILTIN)
    };
    let lines: Vec<String> = setup
        .lines
        .iter()
        .map(|l| l.replace(" D ", &format!(" {} ", dev.dev())))
        .collect();
    let tree = crate::tc::build_tree(spec, &lines)
        .unwrap_or_else(|e| panic!("set-up {}: {e}", setup.name));
    Path::new(params, tree)
}

/// Both directions of `setup`, with its impairments.
pub fn bridge(setup: &Setup) -> Bridge {
    let mut b = Bridge::new(path(Dir::LeftToRight, setup), path(Dir::RightToLeft, setup));
    if setup.impaired() {
        let imp = parse_netem(NETEM).expect("valid netem options");
        for dir in Dir::ALL {
            b.path_mut(dir)
                .set_impairments(imp.clone(), Instant::ZERO)
                .expect("valid impairments");
        }
    }
    b
}

/// One frame offered to a set-up: its sending side, its bytes, and the
/// time since the previous frame.
#[derive(Clone, Debug)]
pub struct Offer {
    /// The side that sends the frame.
    pub dir: Dir,
    /// The frame's bytes, from the Ethernet header on.
    pub data: Vec<u8>,
    /// Time since the previous frame, ns.
    pub gap_ns: u64,
}

/// Frames counted by a run, by `Dir::index`, to check against the counters.
#[derive(Default)]
struct Tally {
    offered: [u64; 2],
    delivered: [u64; 2],
    freed: u64,
}

fn drain(b: &mut Bridge, now: Instant, t: &mut Tally) {
    let (mut out, mut freed) = (Vec::new(), Vec::new());
    b.poll(now, &mut out, &mut freed);
    for (dir, _p) in out.drain(..) {
        t.delivered[dir.index()] += 1;
    }
    t.freed += freed.len() as u64;
}

/// Offers `frames` to a fresh bridge of `setup` at their times (polling
/// whatever fell due first), checks conservation in both directions after
/// every step, polls to completion and checks that every frame offered was
/// delivered or returned as a freed buffer counted under a drop reason,
/// and that only an impaired set-up duplicates. Panics naming the set-up
/// and the step on a violation; returns (delivered, dropped).
pub fn run(setup: &Setup, frames: &[Offer]) -> (u64, u64) {
    let mut b = bridge(setup);
    let mut t = Tally::default();
    let mut now = Instant::ZERO;
    let check = |b: &Bridge, step: &dyn std::fmt::Display| {
        if let Err(e) = b.check_conservation() {
            panic!("{} after {step}: {e}", setup.name);
        }
    };
    for (i, offer) in frames.iter().enumerate() {
        now += offer.gap_ns;
        if let Some(due) = b.poll_at() {
            if due <= now {
                drain(&mut b, due, &mut t);
                check(&b, &format_args!("a poll before frame {i}"));
            }
        }
        t.offered[offer.dir.index()] += 1;
        b.ingress(offer.dir, offer.data.clone(), now);
        check(&b, &format_args!("frame {i} ({} bytes)", offer.data.len()));
    }
    let mut polls = 0;
    while let Some(due) = b.poll_at() {
        now = due.max(now);
        drain(&mut b, now, &mut t);
        polls += 1;
        assert!(polls < 1_000_000, "{}: poll never finishes", setup.name);
    }
    check(&b, &"completion");
    let (mut drops, mut dups) = (0, 0);
    for dir in Dir::ALL {
        let p = b.path(dir);
        let c = p.counters();
        assert_eq!(p.held(), 0, "{}: frames left inside", setup.name);
        assert_eq!(c.frames_in, t.offered[dir.index()], "{}", setup.name);
        assert_eq!(c.frames_out, t.delivered[dir.index()], "{}", setup.name);
        drops += c.total_drops();
        dups += c.duplicated;
    }
    assert!(
        dups == 0 || setup.impaired(),
        "{}: duplicates without netem",
        setup.name
    );
    assert_eq!(
        drops, t.freed,
        "{}: every drop returns its buffer",
        setup.name
    );
    (t.delivered.iter().sum(), drops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::Qdisc;

    #[test]
    fn every_setup_builds_with_its_root_kind() {
        for s in SETUPS {
            let b = bridge(s);
            let root = b.path(Dir::LeftToRight).qdisc().kind();
            let first = s.name.split(['+', ' ']).next().unwrap();
            assert_eq!(root, first, "{}", s.name);
        }
    }
}
