//! The reliability set-ups: every sample tree of every kind of the table
//! (`crate::tc::syntax::Syntax::samples`, built from the tc lines each
//! kind's syntax gives), plus fq_codel followed by netem impairments, each
//! on a 10 Mbit/s, 2 ms link so that queues build up, as a ready `Bridge`.
//! Shared by the reliability tests (`tests/pure/reliability/frames.rs`) and the
//! `bridge` fuzz target, so both exercise the same trees, and a kind added
//! to the table is among them without a line written here.

use crate::bridge::Bridge;
use crate::dir::Dir;
use crate::link::{LinkParams, Path};
use crate::qdisc::kinds::BUILTIN;
use crate::qdisc::tree::DevSpec;
use crate::tc::netem::parse_netem;
use crate::tc::syntax::{samples, Sample};
use crate::time::Instant;
use std::sync::LazyLock;

/// One root qdisc set-up: a kind's sample tree, and whether netem
/// impairments follow the qdisc.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// The root's kind.
    pub kind: &'static str,
    /// The tree: its name and tc lines.
    pub sample: Sample,
    /// Netem impairments (which duplicate frames) act after the qdisc.
    pub impaired: bool,
}

impl Setup {
    /// The set-up's name, for messages (`fq_codel+netem` for the impaired
    /// one).
    pub fn name(&self) -> String {
        if self.impaired {
            format!("{}+netem", self.sample.name)
        } else {
            self.sample.name.to_string()
        }
    }
}

/// Every sample of every built-in kind, then fq_codel with impairments.
static SETUPS: LazyLock<Vec<Setup>> = LazyLock::new(|| {
    let mut all: Vec<Setup> = samples(BUILTIN)
        .into_iter()
        .map(|(kind, sample)| Setup {
            kind,
            sample,
            impaired: false,
        })
        .collect();
    all.push(Setup {
        kind: "fq_codel",
        sample: Sample::new("fq_codel", &["tc qdisc add dev D root fq_codel ecn"]),
        impaired: true,
    });
    all
});

/// Every set-up.
pub fn setups() -> &'static [Setup] {
    &SETUPS
}

/// The set-up named `name` (`Setup::name`).
pub fn named(name: &str) -> Option<&'static Setup> {
    setups().iter().find(|s| s.name() == name)
}

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
        tx_queues: setup.sample.tx_queues,
        seed: 7,
        ..params.dev_spec(dev, BUILTIN)
    };
    let tree = crate::tc::build_tree(spec, &setup.sample.lines_for(dev))
        .unwrap_or_else(|e| panic!("set-up {}: {e}", setup.name()));
    Path::new(params, tree)
}

/// Both directions of `setup`, with its impairments.
pub fn bridge(setup: &Setup) -> Bridge {
    let mut b = Bridge::new(path(Dir::LeftToRight, setup), path(Dir::RightToLeft, setup));
    if setup.impaired {
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
    let name = setup.name();
    let check = |b: &Bridge, step: &dyn std::fmt::Display| {
        if let Err(e) = b.check_conservation() {
            panic!("{name} after {step}: {e}");
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
        assert!(polls < 1_000_000, "{name}: poll never finishes");
    }
    check(&b, &"completion");
    let (mut drops, mut dups) = (0, 0);
    for dir in Dir::ALL {
        let p = b.path(dir);
        let c = p.counters();
        assert_eq!(p.held(), 0, "{name}: frames left inside");
        assert_eq!(c.frames_in, t.offered[dir.index()], "{name}");
        assert_eq!(c.frames_out, t.delivered[dir.index()], "{name}");
        drops += c.total_drops();
        dups += c.duplicated;
    }
    assert!(
        dups == 0 || setup.impaired,
        "{name}: duplicates without netem"
    );
    assert_eq!(drops, t.freed, "{name}: every drop returns its buffer");
    (t.delivered.iter().sum(), drops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::Qdisc;

    #[test]
    fn every_setup_builds_with_its_root_kind() {
        for s in setups() {
            let b = bridge(s);
            let root = b.path(Dir::LeftToRight).qdisc().kind();
            assert_eq!(root, s.kind, "{}", s.name());
        }
    }

    #[test]
    fn every_kind_of_the_table_has_a_setup() {
        for kind in BUILTIN {
            assert!(
                setups().iter().any(|s| s.kind == kind.name),
                "{} has no sample tree in its syntax",
                kind.name
            );
        }
    }
}
