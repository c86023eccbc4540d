//! What a simulation run produces besides the trace: per-flow throughput,
//! latency percentiles (ping RTT, one-way delay), drops by reason, ECN
//! marks, and each direction's final qdisc statistics with the flows in
//! each of its queues (qdisc, TX ring, wire) and its flow meter's per-flow
//! counts; plus a small text table for people and tests.

use super::sources::{Flow, FlowCounters, Source};
use super::tcp::TcpStats;
use crate::link::path::{PathSnapshot, TxQueueStats};
use crate::qdisc::dump::{FlowTraffic, QueueOccupancy};
use crate::qdisc::QdiscDump;
use crate::time::{Instant, NS_PER_SEC};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Latency percentiles in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Values recorded.
    pub count: u64,
    /// Smallest, ns.
    pub min: u64,
    /// Median, ns.
    pub p50: u64,
    /// 90th percentile, ns.
    pub p90: u64,
    /// 99th percentile, ns.
    pub p99: u64,
    /// Largest, ns.
    pub max: u64,
    /// Mean, ns.
    pub mean: f64,
    /// Population standard deviation (what ping prints as mdev).
    pub stdev: f64,
}

impl Percentiles {
    /// The summary of `h` (None when it is empty).
    pub fn of(h: &Histogram<u64>) -> Option<Percentiles> {
        (!h.is_empty()).then(|| Percentiles {
            count: h.len(),
            min: h.min(),
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
            mean: h.mean(),
            stdev: h.stdev(),
        })
    }
}

/// TCP sender state at the end of the run.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TcpReport {
    /// The sender's congestion control.
    pub cc: super::scenario::CcAlgo,
    /// The sender's counters.
    pub stats: TcpStats,
    /// Payload bytes acknowledged.
    pub acked_bytes: u64,
    /// Congestion window at the end, segments.
    pub cwnd: f64,
    /// Smoothed RTT at the end, ns (None without a sample).
    pub srtt_ns: Option<u64>,
}

/// One flow's results.
#[derive(Clone, Debug, Serialize)]
pub struct FlowReport {
    /// The flow's name in the scenario.
    pub name: String,
    /// The source's kind (`tcp`, `udp`, `ping`, ...).
    pub kind: &'static str,
    /// The direction its data travels (`left_to_right` or `right_to_left`).
    pub dir: &'static str,
    /// Data / requests.
    pub forward: FlowCounters,
    /// ACKs / replies.
    pub reverse: FlowCounters,
    /// Delivered forward frame bytes per second of the flow's life, bit/s.
    pub throughput_bps: f64,
    /// TCP: acknowledged payload per second, bit/s.
    pub goodput_bps: Option<f64>,
    /// Forward one-way delay, mean and max (ns).
    pub owd_mean_ns: Option<f64>,
    /// Forward one-way delay, max (ns).
    pub owd_max_ns: u64,
    /// Ping round-trip times.
    pub rtt: Option<Percentiles>,
    /// Ping one-way delays: requests, replies.
    pub ping_owd: Option<[Option<Percentiles>; 2]>,
    /// TCP flows: the sender's state at the end.
    pub tcp: Option<TcpReport>,
}

impl FlowReport {
    /// The results of flow `f` at the end of the run, `end`.
    pub fn new(f: &Flow, end: Instant) -> FlowReport {
        let life_s = end.saturating_since(f.start.min(end)) as f64 / NS_PER_SEC as f64;
        let per_s = |bytes: u64| {
            if life_s > 0.0 {
                bytes as f64 * 8.0 / life_s
            } else {
                0.0
            }
        };
        let fwd = f.counters[0];
        let tcp = match &f.source {
            Source::Tcp(t) => {
                let sent = t.sender.snd_una() * t.mss as u64;
                let acked = t.total.map_or(sent, |total| sent.min(total));
                Some(TcpReport {
                    cc: t.cc,
                    stats: t.sender.stats,
                    acked_bytes: acked,
                    cwnd: t.sender.cwnd(),
                    srtt_ns: t.sender.srtt_ns(),
                })
            }
            _ => None,
        };
        FlowReport {
            name: f.name.clone(),
            kind: f.source.kind(),
            dir: crate::dir::Dir::ALL[f.dir].name(),
            forward: fwd,
            reverse: f.counters[1],
            throughput_bps: per_s(fwd.delivered_bytes),
            goodput_bps: tcp.map(|t| per_s(t.acked_bytes)),
            owd_mean_ns: (fwd.delivered_pkts > 0)
                .then(|| fwd.owd_sum_ns as f64 / fwd.delivered_pkts as f64),
            owd_max_ns: fwd.owd_max_ns,
            rtt: match &f.source {
                Source::Ping(p) => Percentiles::of(&p.rtt),
                _ => None,
            },
            ping_owd: match &f.source {
                Source::Ping(p) => Some([Percentiles::of(&p.owd[0]), Percentiles::of(&p.owd[1])]),
                _ => None,
            },
            tcp,
        }
    }
}

/// One direction's results.
#[derive(Clone, Debug, Serialize)]
pub struct DirReport {
    /// `l2r` or `r2l`.
    pub name: &'static str,
    /// The tc device: `left` (left→right) or `right`.
    pub dev: &'static str,
    /// Line rate, bytes/s (0: unlimited).
    pub rate_bytes_ps: u64,
    /// Frames that entered the path.
    pub frames_in: u64,
    /// Frames delivered.
    pub frames_out: u64,
    /// Bytes delivered.
    pub bytes_out: u64,
    /// Delivered bytes over line rate × duration.
    pub utilisation: f64,
    /// Drops by `DropReason::name`, the non-zero ones.
    pub drops: BTreeMap<&'static str, u64>,
    /// Frames freed without a counted reason (should stay 0).
    pub unexplained_drops: u64,
    /// Frames the link corrupted, discarded by the receiving host.
    pub corrupt_discarded: u64,
    /// Frames that arrived with CE set although sent without it.
    pub ce_marks: u64,
    /// One-way delay of every delivered frame.
    pub owd: Option<Percentiles>,
    /// Frames still inside the path at the end.
    pub held: u64,
    /// The qdisc tree at the end, with its counters, each queue with the
    /// flows it holds.
    pub qdisc: QdiscDump,
    /// The flows of the frames in the TX ring at the end.
    pub ring_flows: QueueOccupancy,
    /// The flows of the frames on the wire (the delay line) at the end.
    pub wire_flows: QueueOccupancy,
    /// The flows of the frames in the driver's requeue slot at the end.
    pub requeued_flows: QueueOccupancy,
    /// The flows of the frames held by RX coalescing at the end.
    pub rx_flows: QueueOccupancy,
    /// What the path's flow meter counted per flow (every tracked flow,
    /// highest rate over the last second first) and for the others.
    pub link_flows: Vec<FlowTraffic>,
    /// What the meter counted for the flows it does not track.
    pub other_flows: FlowTraffic,
    /// `tc -s -d qdisc show` and `class show` of the direction's device.
    pub tc: String,
    /// BQL's limit at the end, bytes (`dql.limit`; `None` without BQL).
    pub bql_limit_bytes: Option<u32>,
    /// Bytes in the ring BQL counts at the end (`dql.num_queued -
    /// num_completed`).
    pub bql_inflight_bytes: Option<u32>,
    /// Each TX queue's ring, BQL and stops at the end (under mq the two
    /// fields above are their sums).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tx_queues: Vec<TxQueueStats>,
}

/// Both directions' qdisc statistics at one instant (`[[snapshot]]`).
#[derive(Clone, Debug, Serialize)]
pub struct SnapshotReport {
    /// The instant, ns of the run.
    pub at_ns: u64,
    /// Each direction, by `Dir::index()`.
    pub directions: [SnapshotDir; 2],
}

/// One direction in a `SnapshotReport`.
#[derive(Clone, Debug, Serialize)]
pub struct SnapshotDir {
    /// `l2r` or `r2l`.
    pub name: &'static str,
    /// The tc device.
    pub dev: &'static str,
    /// The qdisc tree then, with its counters.
    pub qdisc: QdiscDump,
    /// `tc -s -d qdisc show` and `class show` of the device then.
    pub tc: String,
    /// BQL's limit then, bytes (`None` without BQL).
    pub bql_limit_bytes: Option<u32>,
    /// Bytes in the ring BQL counted then.
    pub bql_inflight_bytes: Option<u32>,
    /// Each TX queue's ring, BQL and stops then.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tx_queues: Vec<TxQueueStats>,
}

/// Each TX queue's ring, BQL and stops in `snap` (one entry per queue).
pub fn per_queue(snap: &PathSnapshot) -> Vec<TxQueueStats> {
    snap.tx_queues.clone()
}

impl SnapshotReport {
    /// Both directions' tc statistics under a heading with the instant.
    pub fn tc_text(&self) -> String {
        let at = crate::units::sprint_time(self.at_ns / 1_000);
        self.directions
            .iter()
            .map(|d| format!("# {} ({}) at {at}\n{}", d.name, d.dev, d.tc))
            .collect()
    }
}

/// What the simulator itself counted for one direction.
#[derive(Clone, Copy, Debug, Default)]
pub struct DirTally {
    /// Frames that arrived with CE set although sent without it.
    pub ce_marks: u64,
    /// Frames freed without a counted reason (should stay 0).
    pub unexplained_drops: u64,
    /// Frames the link corrupted, discarded by the receiving host.
    pub corrupt_discarded: u64,
}

impl DirReport {
    /// `name` l2r/r2l, `dev` its tc device, `tc` the rendered statistics.
    pub fn new(
        (name, dev): (&'static str, &'static str),
        snap: &PathSnapshot,
        owd: &Histogram<u64>,
        tally: DirTally,
        end: Instant,
        tc: String,
    ) -> DirReport {
        let secs = end.nanos() as f64 / NS_PER_SEC as f64;
        let rate = snap.params.rate_bytes_ps;
        DirReport {
            name,
            dev,
            rate_bytes_ps: rate,
            frames_in: snap.counters.frames_in,
            frames_out: snap.counters.frames_out,
            bytes_out: snap.counters.bytes_out,
            utilisation: if rate > 0 && secs > 0.0 {
                snap.counters.bytes_out as f64 / (rate as f64 * secs)
            } else {
                0.0
            },
            drops: snap.drops_by_reason.clone(),
            unexplained_drops: tally.unexplained_drops,
            corrupt_discarded: tally.corrupt_discarded,
            ce_marks: tally.ce_marks,
            owd: Percentiles::of(owd),
            held: snap.held,
            qdisc: snap.qdisc.clone(),
            ring_flows: snap.ring_flows.clone(),
            wire_flows: snap.wire_flows.clone(),
            requeued_flows: snap.requeued_flows.clone(),
            rx_flows: snap.rx_flows.clone(),
            link_flows: snap.flows.clone(),
            other_flows: snap.other_flows.clone(),
            tc,
            bql_limit_bytes: snap.bql_limit,
            bql_inflight_bytes: snap.bql_inflight,
            tx_queues: per_queue(snap),
        }
    }
}

/// Everything a run produces except the trace lines.
#[derive(Clone, Debug, Serialize)]
pub struct SimReport {
    /// The scenario's seed.
    pub seed: u64,
    /// Simulated time the run covered, ns.
    pub duration_ns: u64,
    /// Events in the trace.
    pub trace_events: u64,
    /// Hash of the whole event trace (equal runs, equal hash).
    pub trace_hash: u64,
    /// Frames the simulator could not attribute: the second copy of a
    /// duplicated frame, or one whose tag the link corrupted (0 without
    /// netem duplication or corruption).
    pub unmatched_frames: u64,
    /// Every flow's results, in the scenario's order.
    pub flows: Vec<FlowReport>,
    /// Both directions' results, by `Dir::index()`.
    pub directions: [DirReport; 2],
    /// The `[[snapshot]]`s, in time order.
    pub snapshots: Vec<SnapshotReport>,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl SimReport {
    /// The flow of this name.
    pub fn flow(&self, name: &str) -> Option<&FlowReport> {
        self.flows.iter().find(|f| f.name == name)
    }

    /// Both directions' tc statistics, each under a `# dev` heading.
    pub fn tc_text(&self) -> String {
        self.directions
            .iter()
            .map(|d| format!("# {} ({})\n{}", d.name, d.dev, d.tc))
            .collect()
    }

    /// The flows as a table (comfy-table, columns sized to their cells,
    /// numbers right-aligned), then one line per direction.
    pub fn table(&self) -> String {
        use comfy_table::{CellAlignment, Table};
        let mut table = Table::new();
        table.load_style(comfy_table::presets::NOTHING);
        table.set_header([
            "flow", "kind", "dir", "sent", "deliv", "drop", "ce", "Mbit/s", "owd ms", "rtt p50",
            "rtt p99",
        ]);
        for f in &self.flows {
            let (p50, p99) = f.rtt.map_or(("-".into(), "-".into()), |r| {
                (format!("{:.2}", ms(r.p50)), format!("{:.2}", ms(r.p99)))
            });
            table.add_row([
                f.name.clone(),
                f.kind.to_string(),
                f.dir.to_string(),
                f.forward.sent_pkts.to_string(),
                f.forward.delivered_pkts.to_string(),
                (f.forward.dropped_pkts + f.reverse.dropped_pkts).to_string(),
                f.forward.ce_marks.to_string(),
                format!("{:.3}", f.goodput_bps.unwrap_or(f.throughput_bps) / 1e6),
                f.owd_mean_ns
                    .map_or("-".into(), |o| format!("{:.2}", o / 1e6)),
                p50,
                p99,
            ]);
        }
        for (i, column) in table.column_iter_mut().enumerate() {
            column.set_padding((0, 2));
            if i >= 3 {
                column.set_cell_alignment(CellAlignment::Right);
            }
        }
        let mut s: String = table
            .lines()
            .map(|l| format!("{}\n", l.trim_end()))
            .collect();
        for d in &self.directions {
            let drops: Vec<String> = d.drops.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(
                s,
                "{}: {} util {:.1}%  in {} out {}  drops [{}]  ce {}  owd p50 {} p99 {}",
                d.name,
                d.qdisc.kind,
                d.utilisation * 100.0,
                d.frames_in,
                d.frames_out,
                drops.join(" "),
                d.ce_marks,
                d.owd.map_or("-".into(), |o| format!("{:.2}ms", ms(o.p50))),
                d.owd.map_or("-".into(), |o| format!("{:.2}ms", ms(o.p99))),
            );
        }
        s
    }
}
