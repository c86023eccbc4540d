//! Which counters the text holds and where each comes from: every counter
//! of a `LiveSnapshot` (per direction: the link, its transit times, drops
//! by reason, ring, BQL, each qdisc and class of its tree, capture; then
//! lateness, wake-ups, ports and the buffer pool), named and explained.
//! Per-flow families cover only the `METRIC_FLOWS` flows of each direction
//! with the highest rate and one `flow="others"` row, so the label set
//! stays bounded however many flows cross the link.

use crate::datapath::{LiveSnapshot, SnapshotReader};
use crate::dir::Dir;
use crate::link::PathSnapshot;
use crate::packet::DropReason;
use crate::qdisc::dualpi2::Dualpi2Xstats;
use crate::qdisc::dump::{FlowTraffic, QdiscDump, Xstats};
use crate::qdisc::QdiscStats;
use crate::tc::show::tc_handle;

use super::families::{labels, Families, Labels};

/// A family's name and help text.
type Names = (&'static str, &'static str);

/// The families of a qdisc's or a class's `tc -s` counters.
struct StatsNames {
    bytes: Names,
    packets: Names,
    drops: Names,
    overlimits: Names,
    requeues: Names,
    backlog: Names,
    qlen: Names,
}

const QDISC_NAMES: StatsNames = StatsNames {
    bytes: (
        "qdisc_sent_bytes",
        "Bytes a qdisc sent (tc -s: Sent N bytes)",
    ),
    packets: ("qdisc_sent_packets", "Packets a qdisc sent"),
    drops: ("qdisc_dropped", "Packets a qdisc dropped"),
    overlimits: (
        "qdisc_overlimits",
        "Times a qdisc was over its limit (throttled)",
    ),
    requeues: ("qdisc_requeues", "Packets requeued to a qdisc"),
    backlog: ("qdisc_backlog_bytes", "Bytes queued in a qdisc"),
    qlen: ("qdisc_backlog_packets", "Packets queued in a qdisc"),
};
const CLASS_NAMES: StatsNames = StatsNames {
    bytes: ("class_sent_bytes", "Bytes a class sent"),
    packets: ("class_sent_packets", "Packets a class sent"),
    drops: ("class_dropped", "Packets a class dropped"),
    overlimits: ("class_overlimits", "Times a class was over its rate"),
    requeues: ("class_requeues", "Packets requeued to a class"),
    backlog: ("class_backlog_bytes", "Bytes queued in a class"),
    qlen: ("class_backlog_packets", "Packets queued in a class"),
};

impl Families {
    /// A qdisc's or a class's `tc -s` counters, in the families `names`.
    fn qdisc_stats(&mut self, names: &StatsNames, l: &Labels, s: &QdiscStats) {
        let StatsNames {
            bytes,
            packets,
            drops,
            overlimits,
            requeues,
            backlog,
            qlen,
        } = names;
        self.counter(bytes.0, bytes.1, l.clone(), s.bytes);
        self.counter(packets.0, packets.1, l.clone(), s.packets);
        self.counter(drops.0, drops.1, l.clone(), s.drops);
        self.counter(overlimits.0, overlimits.1, l.clone(), s.overlimits);
        self.counter(requeues.0, requeues.1, l.clone(), s.requeues);
        self.gauge(backlog.0, backlog.1, l.clone(), s.backlog as f64);
        self.gauge(qlen.0, qlen.1, l.clone(), f64::from(s.qlen));
    }

    /// DualPI2's xstats (`tc_dualpi2_xstats`): the base probability, both
    /// queues' head delays, the WRR credit, and its counters.
    fn dualpi2(&mut self, l: &Labels, x: &Dualpi2Xstats) {
        self.gauges(
            l,
            &[
                (
                    "qdisc_dualpi2_prob",
                    "DualPI2's base PI probability p' (C-queue marks at p'^2, L at k*p')",
                    f64::from(x.prob) / f64::from(u32::MAX),
                ),
                (
                    "qdisc_dualpi2_delay_c_seconds",
                    "DualPI2's C-queue head delay",
                    f64::from(x.delay_c) / 1e6,
                ),
                (
                    "qdisc_dualpi2_delay_l_seconds",
                    "DualPI2's L-queue head delay",
                    f64::from(x.delay_l) / 1e6,
                ),
                (
                    "qdisc_dualpi2_credit",
                    "DualPI2's WRR credit (positive: the C-queue is served next)",
                    f64::from(x.credit),
                ),
            ],
        );
        self.counters(
            l,
            &[
                (
                    "qdisc_dualpi2_pkts_in_c",
                    "Packets DualPI2 queued in its C-queue",
                    u64::from(x.packets_in_c),
                ),
                (
                    "qdisc_dualpi2_pkts_in_l",
                    "Packets DualPI2 queued in its L-queue",
                    u64::from(x.packets_in_l),
                ),
                (
                    "qdisc_dualpi2_ecn_marks",
                    "Packets DualPI2 CE-marked",
                    u64::from(x.ecn_mark),
                ),
                (
                    "qdisc_dualpi2_step_marks",
                    "Packets DualPI2 CE-marked at its L-queue step threshold",
                    u64::from(x.step_marks),
                ),
            ],
        );
    }

    /// Every qdisc and class of the tree rooted at `q`, depth first.
    fn qdisc_tree(&mut self, dir: Dir, q: &QdiscDump) {
        let (handle, parent) = (tc_handle(q.handle), parent_name(q.parent));
        let l = labels(&[
            ("direction", dir.name()),
            ("handle", &handle),
            ("parent", &parent),
            ("kind", &q.kind),
        ]);
        self.qdisc_stats(&QDISC_NAMES, &l, &q.stats);
        if let Some(Xstats::Dualpi2(x)) = &q.xstats {
            self.dualpi2(&l, x);
        }
        for c in &q.classes {
            // Pseudo-classes (per-flow rows) have no counters of their own.
            let Some(stats) = &c.stats else { continue };
            let (classid, parent) = (tc_handle(c.classid), parent_name(c.parent));
            let l = labels(&[
                ("direction", dir.name()),
                ("classid", &classid),
                ("parent", &parent),
                ("kind", &c.kind),
            ]);
            self.qdisc_stats(&CLASS_NAMES, &l, stats);
        }
        for child in &q.children {
            self.qdisc_tree(dir, child);
        }
    }
}

/// Flows of each direction with their own label (the rest are `others`).
pub const METRIC_FLOWS: usize = 8;

/// Frames and bytes of the flow of `hash` in every queue of the path (the
/// qdisc tree, the requeue slot, the TX ring, the wire, RX held), as its
/// snapshot lists them.
fn queued(p: &PathSnapshot, hash: u32) -> (u64, u64) {
    let mut sum = (0u64, 0u64);
    let mut add = |packets: u64, bytes: u64| {
        sum.0 += packets;
        sum.1 += bytes;
    };
    let mut stack = vec![&p.qdisc];
    while let Some(q) = stack.pop() {
        for f in q.flows.iter().filter(|f| f.hash == hash) {
            add(u64::from(f.qlen), f.backlog);
        }
        for o in &q.occupancy {
            for f in o.flows.iter().filter(|f| f.hash == hash) {
                add(u64::from(f.packets), f.bytes);
            }
        }
        stack.extend(q.children.iter());
    }
    for o in p.link_queues() {
        for f in o.flows.iter().filter(|f| f.hash == hash) {
            add(u64::from(f.packets), f.bytes);
        }
    }
    sum
}

impl Families {
    /// The flow meter's top flows of `dir` and the others, one row each.
    fn flows(&mut self, dir: Dir, p: &PathSnapshot) {
        let mut others = p.other_flows.clone();
        for t in p.flows.iter().skip(METRIC_FLOWS) {
            others.packets += t.packets;
            others.bytes += t.bytes;
            others.rate_bps += t.rate_bps;
            others.ecn_marks += t.ecn_marks;
            for (r, n) in &t.drops {
                *others.drops.entry(*r).or_default() += n;
            }
        }
        let listed = p.flows.iter().take(METRIC_FLOWS);
        let rows = listed
            .map(|t| (t.flow.to_string(), t, Some(queued(p, t.hash))))
            .chain(std::iter::once(("others".to_string(), &others, None)));
        for (name, t, queued) in rows {
            self.flow(dir, &name, t, queued);
        }
    }

    fn flow(&mut self, dir: Dir, name: &str, t: &FlowTraffic, queued: Option<(u64, u64)>) {
        let l = labels(&[("direction", dir.name()), ("flow", name)]);
        self.counters(
            &l,
            &[
                (
                    "flow_frames_out",
                    "Frames of a flow the link delivered",
                    t.packets,
                ),
                (
                    "flow_bytes_out",
                    "Bytes of a flow the link delivered",
                    t.bytes,
                ),
                (
                    "flow_ecn_marks",
                    "Frames of a flow delivered CE-marked by an AQM of the link",
                    t.ecn_marks,
                ),
            ],
        );
        self.gauge(
            "flow_rate_bits_per_second",
            "A flow's delivered rate over the last second",
            l.clone(),
            t.rate_bps as f64,
        );
        if let Some((packets, bytes)) = queued {
            self.gauges(
                &l,
                &[
                    (
                        "flow_queued_packets",
                        "Frames of a flow in the link's queues (qdisc, TX ring, wire)",
                        packets as f64,
                    ),
                    (
                        "flow_queued_bytes",
                        "Bytes of a flow in the link's queues (qdisc, TX ring, wire)",
                        bytes as f64,
                    ),
                ],
            );
        }
        for (r, n) in &t.drops {
            let l = labels(&[
                ("direction", dir.name()),
                ("flow", name),
                ("reason", r.name()),
            ]);
            self.counter(
                "flow_drops",
                "Frames of a flow the link dropped, by reason",
                l,
                *n,
            );
        }
    }
}

fn parent_name(h: crate::qdisc::Handle) -> String {
    if h == crate::qdisc::TC_H_ROOT {
        "root".into()
    } else {
        tc_handle(h)
    }
}

/// The snapshot as OpenMetrics text (ends with `# EOF`).
pub fn render(snap: &LiveSnapshot) -> String {
    let mut f = Families::new();
    for dir in Dir::ALL {
        let p = snap.bridge.path(dir);
        let (c, t) = (&p.counters, &p.transit);
        let d = labels(&[("direction", dir.name())]);
        f.counters(
            &d,
            &[
                ("frames_in", "Frames that entered the link", c.frames_in),
                ("bytes_in", "Bytes that entered the link", c.bytes_in),
                ("frames_out", "Frames the link delivered", c.frames_out),
                ("bytes_out", "Bytes the link delivered", c.bytes_out),
                (
                    "duplicated",
                    "Extra copies made by the duplication impairment",
                    c.duplicated,
                ),
                (
                    "corrupted",
                    "Frames delivered with a flipped bit",
                    c.corrupted,
                ),
                (
                    "transit_frames",
                    "Delivered frames whose transit time was recorded",
                    t.count,
                ),
                (
                    "xmit_batches",
                    "Batches the qdisc handed to the emulated NIC (doorbells)",
                    c.xmit_batches,
                ),
            ],
        );
        for (q, v) in [
            ("0", t.min_ns),
            ("0.5", t.p50_ns),
            ("0.9", t.p90_ns),
            ("0.99", t.p99_ns),
            ("0.999", t.p999_ns),
            ("1", t.max_ns),
        ] {
            f.gauge(
                "transit_seconds",
                "Transit time of delivered frames through the link, ingress to delivery",
                labels(&[("direction", dir.name()), ("quantile", q)]),
                v as f64 / 1e9,
            );
        }
        for r in DropReason::ALL {
            let l = labels(&[("direction", dir.name()), ("reason", r.name())]);
            f.counter(
                "drops",
                "Frames the link dropped, by reason",
                l,
                c.drops[r.index()],
            );
        }
        f.counter(
            "requeues",
            "Times the driver put frames back (NETDEV_TX_BUSY)",
            d.clone(),
            p.requeues,
        );
        f.gauges(
            &d,
            &[
                (
                    "held_frames",
                    "Frames inside the link (qdisc, ring, wire, delay, RX)",
                    p.held as f64,
                ),
                (
                    "requeued_frames",
                    "Frames the driver put back, waiting to be resent",
                    f64::from(p.requeued),
                ),
                (
                    "ring_used_descriptors",
                    "TX ring descriptors in use",
                    f64::from(p.ring_used),
                ),
                (
                    "ring_size_descriptors",
                    "TX ring size",
                    f64::from(p.ring_size),
                ),
                ("ring_bytes", "Bytes in the TX ring", p.ring_bytes as f64),
            ],
        );
        if let (Some(limit), Some(inflight)) = (p.bql_limit, p.bql_inflight) {
            f.gauges(
                &d,
                &[
                    ("bql_limit_bytes", "BQL limit", f64::from(limit)),
                    (
                        "bql_inflight_bytes",
                        "BQL bytes in flight",
                        f64::from(inflight),
                    ),
                ],
            );
        }
        // Each TX queue's ring and DQL (sysfs queues/tx-N/byte_queue_limits).
        for (i, q) in p.tx_queues.iter().enumerate() {
            let queue = i.to_string();
            let l = labels(&[("direction", dir.name()), ("queue", &queue)]);
            f.gauges(
                &l,
                &[(
                    "tx_queue_ring_used_descriptors",
                    "TX ring descriptors in use, per TX queue",
                    f64::from(q.ring_used),
                )],
            );
            f.counter(
                "tx_queue_stops",
                "Times the driver stopped the TX queue (ring full or below tx_stop_threshold)",
                l.clone(),
                q.stops,
            );
            if let (Some(limit), Some(inflight)) = (q.bql_limit, q.bql_inflight) {
                f.gauges(
                    &l,
                    &[
                        (
                            "tx_queue_bql_limit_bytes",
                            "BQL limit, per TX queue",
                            f64::from(limit),
                        ),
                        (
                            "tx_queue_bql_inflight_bytes",
                            "BQL bytes in flight, per TX queue",
                            f64::from(inflight),
                        ),
                    ],
                );
            }
        }
        f.gauges(
            &d,
            &[
                (
                    "on_wire_frames",
                    "Frames posted to the NIC, not yet departed",
                    f64::from(p.on_wire),
                ),
                (
                    "in_flight_frames",
                    "Frames in propagation",
                    f64::from(p.in_flight),
                ),
                (
                    "rx_held_frames",
                    "Frames held by RX coalescing",
                    f64::from(p.rx_held),
                ),
                (
                    "link_rate_bytes_per_second",
                    "Line rate (0: unlimited)",
                    p.params.rate_bytes_ps as f64,
                ),
                (
                    "link_delay_seconds",
                    "Propagation delay",
                    p.params.delay_ns as f64 / 1e9,
                ),
            ],
        );
        f.qdisc_tree(dir, &p.qdisc);
        f.flows(dir, p);
        if let Some(cap) = &snap.bridge.capture {
            let cap = cap[dir.index()];
            f.counters(
                &d,
                &[
                    (
                        "capture_records",
                        "Records written to the capture file",
                        cap.captured,
                    ),
                    (
                        "capture_drops",
                        "Capture records lost because the writer fell behind",
                        cap.dropped,
                    ),
                    (
                        "capture_write_errors",
                        "Capture records lost to write errors",
                        cap.write_errors,
                    ),
                ],
            );
        }
    }
    for (l, [seconds, samples], help, samples_help) in [
        (
            &snap.lateness,
            ["wakeup_lateness_seconds", "wakeup_lateness_samples"],
            "Datapath wake-up lateness (time a frame's deadline was reached minus the deadline)",
            "Timer wake-ups measured for lateness",
        ),
        (
            &snap.release_lateness,
            ["release_lateness_seconds", "release_lateness_samples"],
            "How late frames were written (write time minus the link's delivery time)",
            "Frames measured for release lateness",
        ),
    ] {
        for (q, v) in [
            ("0.5", l.p50_ns),
            ("0.99", l.p99_ns),
            ("0.999", l.p999_ns),
            ("1", l.max_ns),
        ] {
            let lab = labels(&[("quantile", q)]);
            f.gauge(seconds, help, lab, v as f64 / 1e9);
        }
        f.counter(samples, samples_help, Vec::new(), l.samples);
    }
    let none = Vec::new();
    let w = &snap.wakeups;
    f.counters(
        &none,
        &[
            ("wakeups", "Datapath wake-ups", w.total),
            (
                "timer_wakeups",
                "Datapath wake-ups by the deadline timer",
                w.timer,
            ),
            ("io_wakeups", "Datapath wake-ups by a readable port", w.io),
            (
                "spun_deadlines",
                "Deadlines within spin_us met by spinning, without the timer",
                w.spun,
            ),
            (
                "busy_polls",
                "Datapath loop iterations that polled instead of sleeping (busy_poll_us)",
                w.polls,
            ),
        ],
    );
    for (port, c) in [("left", &snap.left_port), ("right", &snap.right_port)] {
        f.counters(
            &labels(&[("port", port)]),
            &[
                ("port_rx_frames", "Frames read from a TAP", c.rx_frames),
                ("port_rx_bytes", "Bytes read from a TAP", c.rx_bytes),
                ("port_tx_frames", "Frames written to a TAP", c.tx_frames),
                ("port_tx_bytes", "Bytes written to a TAP", c.tx_bytes),
                (
                    "port_tx_full_drops",
                    "Frames dropped because the TAP was full",
                    c.tx_full_drops,
                ),
                ("port_rx_errors", "TAP read errors", c.rx_errors),
                ("port_tx_errors", "TAP write errors", c.tx_errors),
            ],
        );
    }
    f.counter(
        "pool_refused",
        "Buffer requests refused at the pool's cap",
        Vec::new(),
        snap.pool.refused,
    );
    f.gauges(
        &none,
        &[
            (
                "datapath_cpu_seconds",
                "CPU time the datapath threads have used (both directions)",
                w.cpu_ns as f64 / 1e9,
            ),
            (
                "snapshot_time_seconds",
                "CLOCK_MONOTONIC time the counters were taken at",
                snap.at.nanos() as f64 / 1e9,
            ),
            (
                "pool_buffers_in_use",
                "Frame buffers in use",
                snap.pool.in_use as f64,
            ),
        ],
    );
    f.encode()
}

/// The latest snapshot's text, or why there is none yet.
pub(super) fn current(snapshots: &SnapshotReader) -> Option<String> {
    snapshots.latest().map(|s| render(&s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::fixture::snapshot;
    use crate::metrics::parse_samples;

    fn value(samples: &[(String, f64)], series: &str) -> f64 {
        samples
            .iter()
            .find(|(s, _)| s == series)
            .unwrap_or_else(|| panic!("{series} missing"))
            .1
    }

    #[test]
    fn the_text_parses_and_matches_the_snapshot() {
        let snap = snapshot();
        let text = render(&snap);
        let s = parse_samples(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(text, render(&snap), "equal counters, equal text");
        let c = &snap.bridge.path(Dir::LeftToRight).counters;
        assert_eq!(c.frames_in, 5);
        let l2r = "direction=\"left_to_right\"";
        assert_eq!(
            value(&s, &format!("bloatbox_frames_in_total{{{l2r}}}")),
            5.0
        );
        let queue_full = c.drops[DropReason::QueueFull.index()];
        assert!(queue_full > 0);
        assert_eq!(
            value(
                &s,
                &format!("bloatbox_drops_total{{{l2r},reason=\"queue_full\"}}")
            ),
            queue_full as f64
        );
        // Every reason is exported, zero or not.
        let reasons = s
            .iter()
            .filter(|(n, _)| n.starts_with("bloatbox_drops_total{direction=\"right_to_left\""))
            .count();
        assert_eq!(reasons, DropReason::ALL.len());
        let held = snap.bridge.path(Dir::LeftToRight).held;
        assert_eq!(
            value(&s, &format!("bloatbox_held_frames{{{l2r}}}")),
            held as f64
        );
        let q = &snap.bridge.path(Dir::LeftToRight).qdisc;
        let qlabels = format!(
            "{l2r},handle=\"{}\",parent=\"root\",kind=\"pfifo\"",
            tc_handle(q.handle)
        );
        assert_eq!(
            value(&s, &format!("bloatbox_qdisc_dropped_total{{{qlabels}}}")),
            q.stats.drops as f64
        );
        assert_eq!(
            value(&s, &format!("bloatbox_qdisc_backlog_packets{{{qlabels}}}")),
            f64::from(q.stats.qlen)
        );
        assert_eq!(
            value(&s, "bloatbox_wakeup_lateness_seconds{quantile=\"0.99\"}"),
            2e-6
        );
        assert_eq!(
            value(&s, "bloatbox_release_lateness_seconds{quantile=\"0.999\"}"),
            8e-6
        );
        assert_eq!(value(&s, "bloatbox_release_lateness_samples_total"), 5.0);
        let ring = &snap.bridge.path(Dir::LeftToRight).tx_queues;
        assert_eq!(ring.len(), 1);
        let q0 = format!("{l2r},queue=\"0\"");
        assert_eq!(
            value(
                &s,
                &format!("bloatbox_tx_queue_ring_used_descriptors{{{q0}}}")
            ),
            f64::from(ring[0].ring_used)
        );
        assert_eq!(
            value(&s, &format!("bloatbox_tx_queue_stops_total{{{q0}}}")),
            ring[0].stops as f64
        );
        let t = &snap.bridge.path(Dir::LeftToRight).transit;
        assert!(t.count > 0, "frames were delivered");
        assert_eq!(t.count, c.frames_out);
        assert_eq!(
            value(&s, &format!("bloatbox_transit_frames_total{{{l2r}}}")),
            t.count as f64
        );
        assert_eq!(
            value(
                &s,
                &format!("bloatbox_transit_seconds{{{l2r},quantile=\"1\"}}")
            ),
            t.max_ns as f64 / 1e9
        );
        assert_eq!(value(&s, "bloatbox_timer_wakeups_total"), 3.0);
        assert_eq!(value(&s, "bloatbox_datapath_cpu_seconds"), 0.005);
        assert_eq!(
            value(&s, "bloatbox_port_rx_frames_total{port=\"left\"}"),
            5.0
        );
        assert_eq!(value(&s, "bloatbox_pool_refused_total"), 1.0);
        assert!(!text.contains("capture"), "no capture, no capture counters");
    }
}
