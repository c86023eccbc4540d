//! Whether a direction lets the GSO super-frames a TAP hands over
//! (`packet::gso`) through whole or segments them first: a link fast enough
//! and free of anything that acts per frame at a finer timescale (a shaping
//! qdisc, a rate schedule, impairments, link-layer framing) behaves like a
//! NIC with TSO, and the qdisc sees one GSO packet per super-frame as the
//! kernel's does on such a device; everywhere else it sees per-MTU segments.

use super::{LinkParams, LinkShape};
use crate::qdisc::registry::{self, KindEntry};
use crate::qdisc::QdiscDump;

/// When super-frames may pass a direction whole: the emulated device then
/// behaves like a NIC with TSO, and the qdisc sees one GSO packet per
/// super-frame (as the kernel's does on such a device). Everywhere else the
/// qdisc sees per-MTU segments ("GSO/TSO off").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GsoPolicy {
    /// Link rates at or above this (bytes/s), and unlimited links, let
    /// super-frames through whole.
    pub whole_min_rate_bytes_ps: u64,
}

impl Default for GsoPolicy {
    /// 1 Gbit/s: a 64 KB super-frame then takes at most 0.5 ms of line time.
    fn default() -> Self {
        GsoPolicy {
            whole_min_rate_bytes_ps: 125_000_000,
        }
    }
}

/// A kind that shapes to a configured rate (the `shapes` of its entry in
/// `kinds`): below one a super-frame would leave as one burst, so a tree
/// holding one segments. A kind outside the table counts as not shaping.
fn shapes(kinds: &[KindEntry], kind: &str) -> bool {
    registry::lookup(kinds, kind).is_some_and(|k| k.shapes)
}

fn has_shaper(kinds: &[KindEntry], d: &QdiscDump) -> bool {
    shapes(kinds, &d.kind)
        || d.classes.iter().any(|c| shapes(kinds, &c.kind))
        || d.children.iter().any(|c| has_shaper(kinds, c))
}

impl GsoPolicy {
    /// True when super-frames pass this direction whole: its link rate is
    /// unlimited or at least `whole_min_rate_bytes_ps`, and nothing acts per
    /// frame at a lower timescale: no shaping qdisc (HTB, TBF) in the tree,
    /// no rate/delay schedule, no impairments, no link-layer framing; and
    /// the device's features let the sender build super-packets (TSO or
    /// GSO on, `Features::passes_super_frames`). `kinds` is the device's table (which kinds shape).
    pub fn passes_whole(
        &self,
        params: &LinkParams,
        shape: &LinkShape,
        qdisc: &QdiscDump,
        kinds: &[KindEntry],
    ) -> bool {
        let fast =
            params.rate_bytes_ps == 0 || params.rate_bytes_ps >= self.whole_min_rate_bytes_ps;
        fast && params.features.passes_super_frames()
            && shape.schedule.is_none()
            && shape.impairments.is_none()
            && shape.framing == Default::default()
            && !has_shaper(kinds, qdisc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::fifo;

    /// A table where only htb shapes.
    static KINDS: &[KindEntry] = &[
        KindEntry {
            name: "htb",
            default_leaf: false,
            configurable: true,
            shapes: true,
            build: |c, _, _| Ok(Box::new(fifo::Fifo::new(fifo::FifoKind::Pfifo, c))),
            syntax: &(),
        },
        KindEntry {
            name: "pfifo_fast",
            default_leaf: true,
            configurable: true,
            shapes: false,
            build: |c, _, _| Ok(Box::new(fifo::Fifo::new(fifo::FifoKind::Pfifo, c))),
            syntax: &(),
        },
    ];

    #[test]
    fn policy_segments_slow_shaped_or_impaired_directions() {
        let policy = GsoPolicy {
            whole_min_rate_bytes_ps: 125_000_000,
        };
        let fifo = QdiscDump {
            kind: "pfifo_fast".into(),
            ..QdiscDump::default()
        };
        let shape = LinkShape::default();
        let at = |rate| LinkParams {
            rate_bytes_ps: rate,
            ..LinkParams::default()
        };
        assert!(
            policy.passes_whole(&at(0), &shape, &fifo, KINDS),
            "unlimited"
        );
        assert!(policy.passes_whole(&at(125_000_000), &shape, &fifo, KINDS));
        assert!(!policy.passes_whole(&at(124_999_999), &shape, &fifo, KINDS));
        assert!(
            !policy.passes_whole(&at(12_500_000), &shape, &fifo, KINDS),
            "100 Mbit/s"
        );
        let htb = QdiscDump {
            kind: "htb".into(),
            ..QdiscDump::default()
        };
        let nested = QdiscDump {
            kind: "mq".into(),
            children: vec![htb.clone()],
            ..QdiscDump::default()
        };
        assert!(!policy.passes_whole(&at(0), &shape, &htb, KINDS));
        assert!(!policy.passes_whole(&at(0), &shape, &nested, KINDS));
        let mut lossy = LinkShape::default();
        lossy.impairments.loss = crate::link::impair::Loss::Random {
            percent: 1.0,
            correlation: 0.0,
        };
        assert!(!policy.passes_whole(&at(0), &lossy, &fifo, KINDS));
    }
}
