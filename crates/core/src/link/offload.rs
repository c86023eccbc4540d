//! Whether a direction lets the GSO super-frames a TAP hands over
//! (`packet::gso`) through whole or segments them first: a link fast enough
//! and free of anything that acts per frame at a finer timescale (a shaping
//! qdisc, a rate schedule, impairments, link-layer framing) behaves like a
//! NIC with TSO, and the qdisc sees one GSO packet per super-frame as the
//! kernel's does on such a device; everywhere else it sees per-MTU segments.
//! With `forward_gro` the shaping qdiscs see super-frames too, as on a
//! forwarding Linux router with GRO on its ingress NIC: HTB queues and
//! shapes GRO packets whole, and TBF segments one its buckets cannot pass
//! (`tbf_segment`, net/sched/sch_tbf.c), which here means segmenting, before
//! the qdisc, a super-frame larger than the smallest TBF `max_size` in the
//! tree. A DualPI2 with `split_gso` (its default) in the tree makes the
//! direction segment too, as `dualpi2_qdisc_enqueue` splits GSO packets.

use super::{LinkParams, LinkShape};
use crate::qdisc::kinds::{self, KindEntry};
use crate::qdisc::{QdiscDump, QdiscOptions};

/// When super-frames may pass a direction whole: the emulated device then
/// behaves like a NIC with TSO, and the qdisc sees one GSO packet per
/// super-frame (as the kernel's does on such a device). Everywhere else the
/// qdisc sees per-MTU segments ("GSO/TSO off").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GsoPolicy {
    /// Link rates at or above this (bytes/s), and unlimited links, let
    /// super-frames through whole.
    pub whole_min_rate_bytes_ps: u64,
    /// Shaping qdiscs (HTB, TBF) see super-frames whole too, as on a
    /// forwarding router with GRO on (`tap.forward_gro`).
    pub forward_gro: bool,
}

impl Default for GsoPolicy {
    /// 1 Gbit/s: a 64 KB super-frame then takes at most 0.5 ms of line time.
    fn default() -> Self {
        GsoPolicy {
            whole_min_rate_bytes_ps: 125_000_000,
            forward_gro: false,
        }
    }
}

/// A kind that shapes to a configured rate (the `shapes` of its entry in
/// `kinds`): below one a super-frame would leave as one burst, so a tree
/// holding one segments. A kind outside the table counts as not shaping.
fn shapes(kinds: &[KindEntry], kind: &str) -> bool {
    kinds::lookup(kinds, kind).is_some_and(|k| k.shapes)
}

fn has_shaper(kinds: &[KindEntry], d: &QdiscDump) -> bool {
    shapes(kinds, &d.kind)
        || d.classes.iter().any(|c| shapes(kinds, &c.kind))
        || d.children.iter().any(|c| has_shaper(kinds, c))
}

/// The smallest `max_size` of the TBFs in a tree (None: no TBF).
fn tbf_max_size(d: &QdiscDump) -> Option<u64> {
    let own = match &d.options {
        QdiscOptions::Tbf(o) => Some(o.max_size()),
        _ => None,
    };
    d.children.iter().filter_map(tbf_max_size).chain(own).min()
}

/// A DualPI2 with `split_gso` in the tree: `dualpi2_qdisc_enqueue`
/// segments a GSO packet and queues each segment on its own (own mark or
/// drop, finer WRR), which segmenting before the qdisc gives here.
fn splits_gso(d: &QdiscDump) -> bool {
    matches!(&d.options, QdiscOptions::Dualpi2(o) if o.split_gso != Some(false))
        || d.children.iter().any(splits_gso)
}

impl GsoPolicy {
    /// Which super-frames pass this direction whole: None, none of them;
    /// otherwise those whose length (`Segmenter::wire_len`, what the qdisc
    /// accounts) is at most the bound. They pass when the link rate is
    /// unlimited or at least `whole_min_rate_bytes_ps`, nothing acts per
    /// frame at a lower timescale (no rate/delay schedule, no impairments,
    /// no link-layer framing, and, unless `forward_gro`, no shaping qdisc
    /// in the tree), and the device's features let the sender build
    /// super-packets (TSO or GSO on, `Features::passes_super_frames`). With
    /// `forward_gro` the bound is the smallest TBF `max_size` in the tree
    /// (a larger one is segmented, as `tbf_segment` would). `kinds` is the
    /// device's table (which kinds shape).
    pub fn whole_up_to(
        &self,
        params: &LinkParams,
        shape: &LinkShape,
        qdisc: &QdiscDump,
        kinds: &[KindEntry],
    ) -> Option<u64> {
        let fast =
            params.rate_bytes_ps == 0 || params.rate_bytes_ps >= self.whole_min_rate_bytes_ps;
        let passes = fast
            && params.features.passes_super_frames()
            && shape.schedule.is_none()
            && shape.impairments.is_none()
            && shape.framing == Default::default();
        if !passes || splits_gso(qdisc) {
            None
        } else if self.forward_gro {
            Some(tbf_max_size(qdisc).unwrap_or(u64::MAX))
        } else {
            (!has_shaper(kinds, qdisc)).then_some(u64::MAX)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::features::Group;
    use crate::qdisc::fifo;

    /// A table where only htb shapes.
    static KINDS: &[KindEntry] = &[
        KindEntry {
            name: "htb",
            default_leaf: false,
            configurable: true,
            shapes: true,
            build: |c, _, _| Ok(Box::new(fifo::Fifo::new(fifo::FifoKind::Pfifo, c))),
            class_stats: true,
        },
        KindEntry {
            name: "pfifo_fast",
            default_leaf: true,
            configurable: true,
            shapes: false,
            build: |c, _, _| Ok(Box::new(fifo::Fifo::new(fifo::FifoKind::Pfifo, c))),
            class_stats: true,
        },
    ];

    /// `whole_up_to` as a yes or no.
    fn passes(
        policy: &GsoPolicy,
        params: &LinkParams,
        shape: &LinkShape,
        qdisc: &QdiscDump,
    ) -> bool {
        policy.whole_up_to(params, shape, qdisc, KINDS).is_some()
    }

    fn at(rate: u64) -> LinkParams {
        LinkParams {
            rate_bytes_ps: rate,
            ..LinkParams::default()
        }
    }

    fn dump(kind: &str) -> QdiscDump {
        QdiscDump {
            kind: kind.into(),
            ..QdiscDump::default()
        }
    }

    #[test]
    fn policy_segments_slow_shaped_or_impaired_directions() {
        let policy = GsoPolicy::default();
        let fifo = dump("pfifo_fast");
        let shape = LinkShape::default();
        assert!(passes(&policy, &at(0), &shape, &fifo), "unlimited");
        assert_eq!(
            policy.whole_up_to(&at(0), &shape, &fifo, KINDS),
            Some(u64::MAX)
        );
        assert!(passes(&policy, &at(125_000_000), &shape, &fifo));
        assert!(!passes(&policy, &at(124_999_999), &shape, &fifo));
        assert!(
            !passes(&policy, &at(12_500_000), &shape, &fifo),
            "100 Mbit/s"
        );
        let htb = dump("htb");
        let nested = QdiscDump {
            children: vec![htb.clone()],
            ..dump("mq")
        };
        assert!(!passes(&policy, &at(0), &shape, &htb));
        assert!(!passes(&policy, &at(0), &shape, &nested));
        let mut lossy = LinkShape::default();
        lossy.impairments.loss = crate::link::impair::Loss::Random {
            percent: 1.0,
            correlation: 0.0,
        };
        assert!(!passes(&policy, &at(0), &lossy, &fifo));
    }

    #[test]
    fn dualpi2_with_split_gso_segments_before_the_qdisc() {
        use crate::qdisc::dualpi2::Dualpi2Options;
        let policy = GsoPolicy::default();
        let shape = LinkShape::default();
        let dualpi2 = |split_gso| QdiscDump {
            options: QdiscOptions::Dualpi2(Dualpi2Options {
                split_gso,
                ..Dualpi2Options::default()
            }),
            ..dump("dualpi2")
        };
        assert!(!passes(&policy, &at(0), &shape, &dualpi2(Some(true))));
        assert!(passes(&policy, &at(0), &shape, &dualpi2(Some(false))));
        let under_mq = QdiscDump {
            children: vec![dualpi2(Some(true))],
            ..dump("mq")
        };
        assert!(!passes(&policy, &at(0), &shape, &under_mq));
    }

    /// A TBF dump with a `burst`-byte bucket at 100 Mbit/s.
    fn tbf(burst: u32) -> QdiscDump {
        let opts = crate::qdisc::tbf::TbfOptions {
            rate: crate::qdisc::options::RateSpec::new(12_500_000),
            peakrate: None,
            limit: 100_000,
            buffer: 0,
            mtu: 0,
            burst: Some(burst),
            pburst: None,
        };
        QdiscDump {
            options: QdiscOptions::Tbf(opts),
            ..dump("tbf")
        }
    }

    #[test]
    fn forward_gro_lets_shapers_see_super_frames_up_to_the_smallest_tbf_bucket() {
        let policy = GsoPolicy {
            forward_gro: true,
            ..GsoPolicy::default()
        };
        let shape = LinkShape::default();
        // HTB shapes GRO packets whole.
        assert_eq!(
            policy.whole_up_to(&at(0), &shape, &dump("htb"), KINDS),
            Some(u64::MAX)
        );
        // TBF passes what its bucket holds; tbf_segment cuts the rest.
        assert_eq!(
            policy.whole_up_to(&at(0), &shape, &tbf(20_280), KINDS),
            Some(20_280)
        );
        let htb_over_tbfs = QdiscDump {
            children: vec![tbf(64_000), tbf(10_000)],
            ..dump("htb")
        };
        assert_eq!(
            policy.whole_up_to(&at(0), &shape, &htb_over_tbfs, KINDS),
            Some(10_000)
        );
        // The link rate, the device's features and impairments still rule.
        assert!(!passes(&policy, &at(12_500_000), &shape, &dump("htb")));
        let no_tso = LinkParams {
            features: crate::link::features::Features::default().request(
                &[Group::Tso, Group::Gso]
                    .into_iter()
                    .flat_map(Group::members)
                    .map(|i| (i, false))
                    .collect::<Vec<_>>(),
            ),
            ..at(0)
        };
        assert!(!passes(&policy, &no_tso, &shape, &dump("htb")));
        // Without forward_gro a shaper segments everything.
        assert!(!passes(
            &GsoPolicy::default(),
            &at(0),
            &shape,
            &htb_over_tbfs
        ));
    }
}
