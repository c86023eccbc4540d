//! The JSON form of a test report (`bloatbox test --json`), shaped for its
//! readers rather than by the Rust types it is made from, and described by
//! the JSON Schema in docs/report.schema.json (`SCHEMA_VERSION`). A header
//! says which bloatbox ran it, when (RFC 3339, UTC), on which kernel, with
//! which options; each configuration carries its name and file, the link it
//! set up per direction (effective parameters, shape and the tc lines of its
//! qdisc tree), the summary, the daemon's counters with the final qdisc and
//! class trees as `tc -s -j` prints them, the one-way delay each direction
//! added, each TCP flow's goodput with Jain's fairness index per direction,
//! and the raw samples (each flow's byte counter among them). Directions
//! are named objects (`left_to_right`, `right_to_left`), every number with
//! a unit has it in its key (`_s`, `_ms`, `_bytes`, `_mbit`, `_bit_s`), and
//! floats are rounded: times in ms to the µs, in s to the µs, rates to
//! 0.01 Mbit/s.

use anyhow::Context;
use serde::Serialize;
use serde_json::Value;

use super::{ConfigResult, DatapathTotals, PathTotals, Report, TestOptions};
use crate::config::Config;
use crate::dir::Dir;
use crate::link::transit::TransitSummary;
use crate::load::icmp::PingResult;
use crate::load::rrul::{Received, RrulSummary};
use crate::load::stats::{DecadeHistogram, LatencyStats, Sample};
use crate::load::udp_rr::UdpRrResult;
use crate::qdisc::dump::QdiscDump;
use crate::tc::command::TcCommand;
use crate::tc::show::{render, DevDump};
use crate::units::print_rate;

/// The version of the report's shape; docs/report.schema.json describes
/// this one. Raised on any change a reader could trip over (2: per-flow
/// goodput, Jain's index, one-way delays).
pub const SCHEMA_VERSION: u32 = 3;

/// `v` rounded to `decimals` decimal places.
fn round(v: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (v * scale).round() / scale
}

/// Milliseconds to the µs.
fn ms(v: f64) -> f64 {
    round(v, 3)
}

/// Seconds to the µs.
fn secs(v: f64) -> f64 {
    round(v, 6)
}

/// One value per direction.
#[derive(Serialize)]
pub struct PerDir<T> {
    /// The value of left→right.
    pub left_to_right: T,
    /// The value of right→left.
    pub right_to_left: T,
}

impl<T> PerDir<T> {
    fn of(mut f: impl FnMut(Dir) -> T) -> PerDir<T> {
        PerDir {
            left_to_right: f(Dir::LeftToRight),
            right_to_left: f(Dir::RightToLeft),
        }
    }
}

/// The whole report.
#[derive(Serialize)]
pub struct ReportJson {
    /// The version of docs/report.schema.json the report follows.
    pub schema_version: u32,
    /// The bloatbox version that wrote it (the crate's version).
    pub bloatbox_version: &'static str,
    /// When the run started, RFC 3339 in UTC.
    pub started_at: String,
    /// The host's kernel release (`uname -r`).
    pub kernel_release: String,
    /// How each configuration was tested.
    pub options: OptionsJson,
    /// One result per configuration, in the order given.
    pub results: Vec<ResultJson>,
}

/// The test's options (`options` of the schema).
#[derive(Serialize)]
pub struct OptionsJson {
    /// TCP flows per direction (0: probes only).
    pub flows_per_direction: usize,
    /// Flows both ways (RRUL) or left→right only.
    pub bidirectional: bool,
    /// Each configuration's run, warm-up included.
    pub duration_s: f64,
    /// The leading part of each run left out of the summary, s.
    pub warmup_s: f64,
    /// The TCP flows' congestion control (`cubic` or `reno`).
    pub congestion_control: &'static str,
    /// `null`: no ping.
    pub ping_interval_ms: Option<f64>,
    /// Whether a UDP_RR probe ran.
    pub udp_rr: bool,
    /// Whether the L4S probes (ECT(1)) ran beside the classic ones.
    pub l4s: bool,
    /// Whether the scalable (L4S) UDP sender ran.
    pub scalable_udp: bool,
    /// Whether the TCP flows negotiated ECN.
    pub ecn: bool,
    /// SCHED_FIFO priority of the datapath; `null`: normal scheduling.
    pub realtime_priority: Option<u8>,
}

/// One configuration's result (`results[]` of the schema).
#[derive(Serialize)]
pub struct ResultJson {
    /// The configuration's name in the table.
    pub name: String,
    /// The file the configuration was read from; `null` for an embedded one.
    pub config_file: Option<String>,
    /// How the TAPs were opened.
    pub taps: TapsJson,
    /// The link as configured, per direction.
    pub link: PerDir<LinkJson>,
    /// What was measured after the warm-up.
    pub summary: SummaryJson,
    /// The daemon's counters at the end of the run, per direction.
    pub counters: PerDir<CountersJson>,
    /// The datapath's cost over the run.
    pub datapath: DatapathJson,
    /// Every sample, warm-up included.
    pub samples: SamplesJson,
}

/// The TAPs' settings (`taps` of the schema).
#[derive(Serialize)]
pub struct TapsJson {
    /// The TAPs' MTU, bytes.
    pub mtu_bytes: u32,
    /// The TAPs' kernel queue, packets.
    pub txqueuelen_packets: u32,
    /// Whether the TAPs pass GSO super-frames (`tap.offload`).
    pub offload: bool,
}

/// One direction's effective link, ethtool lines applied.
#[derive(Serialize)]
pub struct LinkJson {
    /// The emulated device (`tc ... dev left` is left→right).
    pub dev: &'static str,
    /// Line rate as tc prints it (`100Mbit`), or `unlimited`.
    pub rate: String,
    /// `null`: unlimited.
    pub rate_bit_s: Option<u64>,
    /// One-way propagation delay, ms.
    pub delay_ms: f64,
    /// Extra bytes per frame on the wire.
    pub overhead_bytes: u32,
    /// The device's MTU, bytes.
    pub mtu_bytes: u32,
    /// TX ring depth, descriptors.
    pub tx_ring_frames: u32,
    /// Byte queue limits on the ring.
    pub bql: bool,
    /// Qdisc bulk dequeue.
    pub bulk_dequeue: bool,
    /// The device's txqueuelen, packets.
    pub txqueuelen_packets: u32,
    /// TX queues of the device.
    pub tx_queues: u32,
    /// RX interrupt delay, µs (ethtool -C rx-usecs).
    pub rx_usecs: u32,
    /// Frames per RX interrupt (ethtool -C rx-frames).
    pub rx_frames: u32,
    /// TX completion delay, µs (ethtool -C tx-usecs).
    pub tx_usecs: u32,
    /// Completions per TX interrupt (ethtool -C tx-frames).
    pub tx_frames: u32,
    /// RX coalescing in CQE mode (ethtool -C cqe-mode-rx).
    pub cqe_mode_rx: bool,
    /// TX completion coalescing in CQE mode (ethtool -C cqe-mode-tx).
    pub cqe_mode_tx: bool,
    /// Adaptive RX moderation, net_dim (ethtool -C adaptive-rx).
    pub adaptive_rx: bool,
    /// Adaptive TX completion moderation (ethtool -C adaptive-tx).
    pub adaptive_tx: bool,
    /// Wire impairments as tc-netem(8) options; `null`: none.
    pub netem: Option<String>,
    /// A trace or schedule driving the rate; `null`: none.
    pub schedule: Option<String>,
    /// Link-layer framing as tc-stab(8) options; `null`: none.
    pub framing: Option<String>,
    /// The tc command lines that build the qdisc tree.
    pub tc: Vec<String>,
}

impl LinkJson {
    fn of(config: &Config, dir: Dir) -> LinkJson {
        let p = config.link_params(dir);
        let shape = config.link_shape(dir);
        let report = crate::control::set::ShapeReport::of(&shape);
        let f = shape.framing;
        LinkJson {
            dev: dir.dev(),
            rate: match p.rate_bytes_ps {
                0 => "unlimited".into(),
                r => print_rate(r),
            },
            rate_bit_s: (p.rate_bytes_ps > 0).then_some(p.rate_bytes_ps * 8),
            delay_ms: ms(p.delay_ns as f64 / 1e6),
            overhead_bytes: p.overhead,
            mtu_bytes: p.mtu,
            tx_ring_frames: p.tx_ring,
            bql: p.bql,
            bulk_dequeue: p.bulk_dequeue,
            txqueuelen_packets: p.txqueuelen,
            tx_queues: config.tx_queues(dir),
            rx_usecs: p.rx_usecs,
            rx_frames: p.rx_frames,
            tx_usecs: p.tx_usecs,
            tx_frames: p.tx_frames,
            cqe_mode_rx: p.rx_cqe,
            cqe_mode_tx: p.tx_cqe,
            adaptive_rx: p.rx_adaptive,
            adaptive_tx: p.tx_adaptive,
            netem: (!shape.impairments.is_none()).then_some(report.netem),
            schedule: shape.schedule.is_some().then_some(report.schedule),
            framing: (f != Default::default()).then(|| {
                let layer = match f.linklayer {
                    crate::units::LinkLayer::Ethernet => "ethernet",
                    crate::units::LinkLayer::Atm => "atm",
                };
                format!("overhead {} mpu {} linklayer {layer}", f.overhead, f.mpu)
            }),
            tc: config.tc_lines(dir),
        }
    }
}

/// The measured part's numbers (`summary` of the schema).
#[derive(Serialize)]
pub struct SummaryJson {
    /// The measured part: the run less its warm-up.
    pub measured_s: f64,
    /// Bytes the receivers read over the measured part.
    pub goodput_mbit: PerDir<f64>,
    /// Each TCP flow's goodput and their fairness, per direction.
    pub tcp_flows: PerDir<FlowsJson>,
    /// ping's summary; `null`: no ping.
    pub ping: Option<PingJson>,
    /// UDP_RR's summary; `null`: not run.
    pub udp_rr: Option<UdpRrJson>,
    /// The L4S (ECT(1)) ping's summary; absent without `--l4s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ping_l4s: Option<PingJson>,
    /// The L4S (ECT(1)) UDP_RR's summary; absent without `--l4s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp_rr_l4s: Option<UdpRrJson>,
    /// The scalable UDP sender's rate and marks; absent without
    /// `--scalable-udp`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scalable_udp: Option<ScalableJson>,
}

/// The scalable UDP sender over the measured part.
#[derive(Serialize)]
pub struct ScalableJson {
    /// Payload delivered, Mbit/s.
    pub goodput_mbit: f64,
    /// Datagrams delivered.
    pub delivered: u64,
    /// CE-marked among them.
    pub ce_marks: u64,
    /// Window reductions on marks over the whole run.
    pub mark_reductions: u64,
    /// Window reductions on losses over the whole run.
    pub loss_reductions: u64,
    /// Its estimate of the marked fraction at the end.
    pub alpha: f64,
}

impl ScalableJson {
    fn of(s: &crate::load::scalable::ScalableResult) -> ScalableJson {
        ScalableJson {
            goodput_mbit: round(s.mbit, 2),
            delivered: s.delivered,
            ce_marks: s.ce_marks,
            mark_reductions: s.mark_reductions,
            loss_reductions: s.loss_reductions,
            alpha: round(s.alpha, 4),
        }
    }
}

impl SummaryJson {
    fn of(s: &RrulSummary) -> SummaryJson {
        SummaryJson {
            measured_s: secs(s.measured_s),
            goodput_mbit: PerDir {
                left_to_right: round(s.up_mbit, 2),
                right_to_left: round(s.down_mbit, 2),
            },
            tcp_flows: PerDir {
                left_to_right: FlowsJson::of(&s.up_flows_mbit, s.up_fairness()),
                right_to_left: FlowsJson::of(&s.down_flows_mbit, s.down_fairness()),
            },
            ping: s.ping.as_ref().map(PingJson::of),
            udp_rr: s.udp_rr.as_ref().map(UdpRrJson::of),
            ping_l4s: s.ping_l4s.as_ref().map(PingJson::of),
            udp_rr_l4s: s.udp_rr_l4s.as_ref().map(UdpRrJson::of),
            scalable_udp: s.scalable.as_ref().map(ScalableJson::of),
        }
    }
}

/// A direction's TCP flows over the measured part.
#[derive(Serialize)]
pub struct FlowsJson {
    /// Each flow's goodput (bytes its receiver read), Mbit/s, flow 0 first.
    pub goodput_mbit: Vec<f64>,
    /// Jain's fairness index of those goodputs, (Σx)² / (n·Σx²): 1 when
    /// all are equal, 1/n when one has everything; `null`: no flow moved
    /// data.
    pub jain_index: Option<f64>,
}

impl FlowsJson {
    fn of(goodput: &[f64], jain: Option<f64>) -> FlowsJson {
        FlowsJson {
            goodput_mbit: goodput.iter().map(|&g| round(g, 2)).collect(),
            jain_index: jain.map(|j| round(j, 4)),
        }
    }
}

/// Round-trip times, as ping summarises them, and percentiles.
#[derive(Serialize)]
pub struct LatencyJson {
    /// Replies (or transactions) summarised.
    pub samples: u64,
    /// Shortest round trip, ms.
    pub min_ms: f64,
    /// Mean round trip, ms.
    pub avg_ms: f64,
    /// Longest round trip, ms.
    pub max_ms: f64,
    /// ping's mdev: the standard deviation of the round trips, ms.
    pub mdev_ms: f64,
    /// Median round trip, ms.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
}

impl LatencyJson {
    fn of(l: &LatencyStats) -> LatencyJson {
        LatencyJson {
            samples: l.samples,
            min_ms: ms(l.min_ms),
            avg_ms: ms(l.avg_ms),
            max_ms: ms(l.max_ms),
            mdev_ms: ms(l.mdev_ms),
            p50_ms: ms(l.p50_ms),
            p90_ms: ms(l.p90_ms),
            p99_ms: ms(l.p99_ms),
        }
    }
}

/// ping's counts and round trips over the measured part.
#[derive(Serialize)]
pub struct PingJson {
    /// Echo requests sent.
    pub transmitted: u64,
    /// Replies received.
    pub received: u64,
    /// The replies' round trips.
    pub rtt: LatencyJson,
}

impl PingJson {
    fn of(p: &PingResult) -> PingJson {
        PingJson {
            transmitted: p.transmitted,
            received: p.received,
            rtt: LatencyJson::of(&p.latency),
        }
    }
}

/// UDP_RR's rate and round trips over the measured part.
#[derive(Serialize)]
pub struct UdpRrJson {
    /// Completed transactions per second.
    pub transactions_per_s: f64,
    /// Requests whose response did not arrive within 500 ms.
    pub lost: u64,
    /// The transactions' round trips.
    pub rtt: LatencyJson,
    /// netperf's histogram of the round-trip times.
    pub histogram: Vec<BucketJson>,
}

impl UdpRrJson {
    fn of(u: &UdpRrResult) -> UdpRrJson {
        UdpRrJson {
            transactions_per_s: round(u.transactions_per_s, 1),
            lost: u.lost,
            rtt: LatencyJson::of(&u.latency),
            histogram: BucketJson::of(&u.histogram),
        }
    }
}

/// A bucket of the decade histogram that holds samples: round-trip times
/// from `from_us` up to, not including, `to_us` (`null`: no bound).
#[derive(Serialize)]
pub struct BucketJson {
    /// Lower bound of the bucket, µs (inclusive).
    pub from_us: u64,
    /// Upper bound, µs (exclusive); `null`: none.
    pub to_us: Option<u64>,
    /// Samples in the bucket.
    pub count: u64,
}

impl BucketJson {
    /// The non-empty buckets, shortest times first.
    fn of(h: &DecadeHistogram) -> Vec<BucketJson> {
        let mut unit = 1u64;
        let mut buckets = Vec::new();
        for row in &h.rows {
            for (digit, &count) in (0u64..).zip(row) {
                if count > 0 {
                    buckets.push(BucketJson {
                        from_us: digit * unit,
                        to_us: Some((digit + 1) * unit),
                        count,
                    });
                }
            }
            unit *= 10;
        }
        if h.over_100s > 0 {
            buckets.push(BucketJson {
                from_us: unit,
                to_us: None,
                count: h.over_100s,
            });
        }
        buckets
    }
}

/// One direction's counters at the end (`counters` of the schema).
#[derive(Serialize)]
pub struct CountersJson {
    /// Root qdisc kind.
    pub qdisc: String,
    /// Drops in the emulated link (qdiscs, ring, impairments).
    pub drops: u64,
    /// ECN CE marks by CoDel-based qdiscs anywhere in the tree.
    pub ecn_marks: u64,
    /// Frames lost outside the emulated link: the sending TAP's queue plus
    /// those the receiving TAP refused.
    pub tap_drops: u64,
    /// Frames that entered the emulated link.
    pub frames: u64,
    /// Batches the qdisc handed to the emulated NIC (TX doorbells).
    pub xmit_batches: u64,
    /// The BQL limit at the end; `null`: no BQL.
    pub bql_limit_bytes: Option<u32>,
    /// Median transit through the direction, all frames.
    pub transit_p50_ms: f64,
    /// The one-way delay the direction added (transit from ingress to
    /// delivery, queues and propagation), all frames of the run.
    pub one_way_delay: OneWayDelayJson,
    /// `tc -s -j qdisc show dev DEV` at the end of the run.
    pub qdiscs: Value,
    /// `tc -s -j class show dev DEV` at the end of the run.
    pub classes: Value,
}

impl CountersJson {
    fn of(
        p: &PathTotals,
        dir: Dir,
        root: &QdiscDump,
        tx_queues: u32,
    ) -> anyhow::Result<CountersJson> {
        let show = |object: &str| -> anyhow::Result<Value> {
            let dev = [DevDump {
                dev: dir,
                root,
                tx_queues: tx_queues.clamp(1, u16::MAX as u32) as u16,
            }];
            let line = format!("tc -s -j {object} show dev {}", dir.dev());
            let text = TcCommand::parse(&line)
                .and_then(|cmd| render(&cmd, &dev))
                .map_err(|e| anyhow::anyhow!("{line}: {e}"))?;
            serde_json::from_str(&text).with_context(|| format!("{line} printed {text}"))
        };
        Ok(CountersJson {
            qdisc: p.qdisc.clone(),
            drops: p.drops,
            ecn_marks: p.marks,
            tap_drops: p.tap_drops,
            frames: p.frames,
            xmit_batches: p.xmit_batches,
            bql_limit_bytes: p.bql_limit,
            transit_p50_ms: ms(p.transit.p50_ns as f64 / 1e6),
            one_way_delay: OneWayDelayJson::of(&p.transit),
            qdiscs: show("qdisc")?,
            classes: show("class")?,
        })
    }
}

/// A direction's transit times (`TransitSummary`): min, mean and max
/// exact, percentiles within 1 %.
#[derive(Serialize)]
pub struct OneWayDelayJson {
    /// Frames delivered (and timed).
    pub frames: u64,
    /// Shortest, ms.
    pub min_ms: f64,
    /// Mean, ms.
    pub mean_ms: f64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p999_ms: f64,
    /// Longest, ms.
    pub max_ms: f64,
}

impl OneWayDelayJson {
    fn of(t: &TransitSummary) -> OneWayDelayJson {
        let of_ns = |ns: u64| ms(ns as f64 / 1e6);
        OneWayDelayJson {
            frames: t.count,
            min_ms: of_ns(t.min_ns),
            mean_ms: ms(t.mean_ns / 1e6),
            p50_ms: of_ns(t.p50_ns),
            p90_ms: of_ns(t.p90_ns),
            p99_ms: of_ns(t.p99_ns),
            p999_ms: of_ns(t.p999_ns),
            max_ms: of_ns(t.max_ns),
        }
    }
}

/// The datapath thread's cost over the whole run (warm-up included).
#[derive(Serialize)]
pub struct DatapathJson {
    /// Frames that entered the emulated link, both directions.
    pub frames: u64,
    /// Returns of `epoll_wait` with events.
    pub wakeups: u64,
    /// CPU time of the datapath threads, ms.
    pub cpu_ms: f64,
    /// Wake-ups per frame.
    pub wakeups_per_frame: f64,
    /// CPU time per frame, µs.
    pub cpu_us_per_frame: f64,
}

impl DatapathJson {
    fn of(d: &DatapathTotals) -> DatapathJson {
        DatapathJson {
            frames: d.frames,
            wakeups: d.wakeups,
            cpu_ms: ms(d.cpu_ns as f64 / 1e6),
            wakeups_per_frame: round(d.wakeups_per_frame(), 4),
            cpu_us_per_frame: round(d.cpu_ns_per_frame() / 1e3, 3),
        }
    }
}

/// Everything measured, warm-up included (the plots draw it).
#[derive(Serialize)]
pub struct SamplesJson {
    /// The receivers' counters about every 100 ms.
    pub throughput: Vec<ThroughputJson>,
    /// ping's samples; `null`: no ping.
    pub ping: Option<PingSamplesJson>,
    /// UDP_RR's samples; `null`: not run.
    pub udp_rr: Option<UdpRrSamplesJson>,
}

/// The receivers' counters at one moment.
#[derive(Serialize)]
pub struct ThroughputJson {
    /// Seconds since the load started.
    pub t_s: f64,
    /// Left→right receivers.
    pub left_to_right: ReceivedJson,
    /// Right→left receivers.
    pub right_to_left: ReceivedJson,
}

/// A direction's receivers' byte counters so far.
#[derive(Serialize)]
pub struct ReceivedJson {
    /// Read by the receivers, in order, all flows together.
    pub read_bytes: u64,
    /// Reached the receiving TCP, in order or not, all flows together.
    pub arrived_bytes: u64,
    /// Read by each flow's receiver, flow 0 first.
    pub flows_read_bytes: Vec<u64>,
}

impl ReceivedJson {
    fn of(r: Received, flows: &[u64]) -> ReceivedJson {
        ReceivedJson {
            read_bytes: r.read,
            arrived_bytes: r.arrived,
            flows_read_bytes: flows.to_vec(),
        }
    }
}

/// One probe's round trip, by the time it was sent.
#[derive(Serialize)]
pub struct RttJson {
    /// When the probe was sent, s since the load started.
    pub t_s: f64,
    /// Its round trip, ms.
    pub rtt_ms: f64,
}

fn rtts(samples: &[Sample]) -> Vec<RttJson> {
    samples
        .iter()
        .map(|s| RttJson {
            t_s: secs(s.t),
            rtt_ms: ms(s.rtt_us / 1e3),
        })
        .collect()
}

fn times(t: &[f64]) -> Vec<f64> {
    t.iter().map(|&t| secs(t)).collect()
}

/// ping's raw samples.
#[derive(Serialize)]
pub struct PingSamplesJson {
    /// Replies received.
    pub replies: Vec<RttJson>,
    /// When each echo request was sent, s.
    pub sent_s: Vec<f64>,
}

/// UDP_RR's raw samples.
#[derive(Serialize)]
pub struct UdpRrSamplesJson {
    /// Completed transactions.
    pub transactions: Vec<RttJson>,
    /// When each lost request was sent, s.
    pub lost_s: Vec<f64>,
}

impl OptionsJson {
    fn of(o: &TestOptions) -> OptionsJson {
        OptionsJson {
            flows_per_direction: o.flows,
            bidirectional: o.bidirectional,
            duration_s: secs(o.duration.as_secs_f64()),
            warmup_s: secs(o.warmup.as_secs_f64()),
            congestion_control: o.cc.name(),
            ping_interval_ms: o.ping_interval.map(|i| ms(i.as_secs_f64() * 1e3)),
            udp_rr: o.udp_rr,
            l4s: o.l4s,
            scalable_udp: o.scalable,
            ecn: o.ecn,
            realtime_priority: o.realtime,
        }
    }
}

impl ResultJson {
    fn of(r: &ConfigResult) -> anyhow::Result<ResultJson> {
        let c = &r.config;
        let counters = |d: Dir| {
            CountersJson::of(
                &r.paths[d.index()],
                d,
                &r.final_qdiscs[d.index()],
                c.tx_queues(d),
            )
        };
        Ok(ResultJson {
            name: r.name.clone(),
            config_file: r.config_file.as_ref().map(|p| p.display().to_string()),
            taps: TapsJson {
                mtu_bytes: c.tap.mtu,
                txqueuelen_packets: c.tap.txqueuelen,
                offload: c.tap.offload,
            },
            link: PerDir::of(|d| LinkJson::of(c, d)),
            summary: SummaryJson::of(&r.summary),
            counters: PerDir {
                left_to_right: counters(Dir::LeftToRight)?,
                right_to_left: counters(Dir::RightToLeft)?,
            },
            datapath: DatapathJson::of(&r.datapath),
            samples: SamplesJson {
                throughput: r
                    .raw
                    .throughput
                    .iter()
                    .map(|s| ThroughputJson {
                        t_s: secs(s.t),
                        left_to_right: ReceivedJson::of(s.up, &s.up_flows),
                        right_to_left: ReceivedJson::of(s.down, &s.down_flows),
                    })
                    .collect(),
                ping: r.raw.ping.as_ref().map(|p| PingSamplesJson {
                    replies: rtts(&p.samples),
                    sent_s: times(&p.sent),
                }),
                udp_rr: r.raw.udp_rr.as_ref().map(|u| UdpRrSamplesJson {
                    transactions: rtts(&u.samples),
                    lost_s: times(&u.lost),
                }),
            },
        })
    }
}

impl ReportJson {
    /// The report of `report` in the published shape; fails only if a final
    /// qdisc tree cannot be printed as `tc -j`.
    pub fn of(report: &Report) -> anyhow::Result<ReportJson> {
        let started = time::OffsetDateTime::from(report.started)
            .format(&time::format_description::well_known::Rfc3339)
            .context("formatting the start time")?;
        Ok(ReportJson {
            schema_version: SCHEMA_VERSION,
            bloatbox_version: env!("CARGO_PKG_VERSION"),
            started_at: started,
            kernel_release: report.kernel_release.clone(),
            options: OptionsJson::of(&report.options),
            results: report
                .results
                .iter()
                .map(ResultJson::of)
                .collect::<anyhow::Result<_>>()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::testdata;

    /// The published schema.
    fn validator() -> jsonschema::Validator {
        let schema: Value =
            serde_json::from_str(include_str!("../../docs/report.schema.json")).unwrap();
        jsonschema::draft202012::new(&schema).unwrap()
    }

    fn report_value() -> Value {
        serde_json::to_value(ReportJson::of(&testdata::report()).unwrap()).unwrap()
    }

    fn errors(v: &jsonschema::Validator, report: &Value) -> Vec<String> {
        v.iter_errors(report)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect()
    }

    #[test]
    fn the_report_validates_against_its_published_schema() {
        let report = report_value();
        let errors = errors(&validator(), &report);
        assert!(errors.is_empty(), "{errors:#?}");
    }

    #[test]
    fn l4s_probes_are_reported_apart_and_validate() {
        let mut report = testdata::report();
        report.options.l4s = true;
        let s = &mut report.results[0].summary;
        let mut ping = s.ping.clone().unwrap();
        ping.latency.p99_ms = 1.25;
        s.ping_l4s = Some(ping);
        s.udp_rr_l4s = s.udp_rr.clone();
        report.options.scalable = true;
        s.scalable = Some(crate::load::scalable::ScalableResult {
            mbit: 12.345,
            delivered: 100,
            ce_marks: 7,
            mark_reductions: 3,
            loss_reductions: 0,
            alpha: 0.25,
        });
        let r = serde_json::to_value(ReportJson::of(&report).unwrap()).unwrap();
        let errors = errors(&validator(), &r);
        assert!(errors.is_empty(), "{errors:#?}");
        assert_eq!(r["options"]["l4s"], true);
        let summary = &r["results"][0]["summary"];
        assert_eq!(summary["ping_l4s"]["rtt"]["p99_ms"], 1.25);
        assert!(summary["udp_rr_l4s"]["transactions_per_s"].is_number());
        assert_eq!(summary["scalable_udp"]["goodput_mbit"], 12.35);
        assert_eq!(summary["scalable_udp"]["ce_marks"], 7);
        // Without them the keys are absent, not null.
        let plain = report_value();
        assert_eq!(plain["options"]["l4s"], false);
        assert!(plain["results"][0]["summary"].get("ping_l4s").is_none());
        // The table shows the L columns with --l4s only.
        let table = crate::experiment::table::render(&report, false);
        assert!(
            table.contains("L ping") && table.contains("L udp_rr"),
            "{table}"
        );
        assert!(table.contains(" 1.25 "), "{table}");
        let table = crate::experiment::table::render(&testdata::report(), false);
        assert!(!table.contains("L ping"), "{table}");
    }

    #[test]
    fn the_schema_rejects_reports_shaped_by_the_rust_types() {
        let v = validator();
        type Breaks = fn(&mut Value);
        let broken: [(&str, Breaks); 7] = [
            ("a Duration as serde writes it", |r| {
                r["options"]["duration_s"] = serde_json::json!({"secs": 8, "nanos": 0})
            }),
            ("the enum variant's name", |r| {
                r["options"]["congestion_control"] = "Cubic".into()
            }),
            ("a handle as a number", |r| {
                r["results"][0]["counters"]["left_to_right"]["qdiscs"][0]["handle"] = 65536.into()
            }),
            ("directions as an unnamed pair", |r| {
                let pair = serde_json::json!([
                    r["results"][0]["link"]["left_to_right"],
                    r["results"][0]["link"]["right_to_left"]
                ]);
                r["results"][0]["link"] = pair;
            }),
            ("an unlabelled histogram row", |r| {
                r["results"][0]["summary"]["udp_rr"]["histogram"][0] =
                    serde_json::json!([0, 3, 5, 0, 0, 0, 0, 0, 0, 0])
            }),
            ("no version", |r| {
                r.as_object_mut().unwrap().remove("schema_version");
            }),
            ("a key the schema does not know", |r| {
                r["results"][1]["summary"]["up_mbit"] = 93.5.into()
            }),
        ];
        for (what, breaks) in broken {
            let mut report = report_value();
            breaks(&mut report);
            assert!(!v.is_valid(&report), "the schema took {what}");
        }
    }

    #[test]
    fn the_report_says_what_ran_in_the_readers_units() {
        let r = report_value();
        assert_eq!(r["schema_version"], SCHEMA_VERSION);
        assert_eq!(r["started_at"], "2026-01-01T00:00:00Z");
        assert_eq!(r["kernel_release"], "6.12.0-test");
        let o = &r["options"];
        assert_eq!(o["duration_s"], 12.0);
        assert_eq!(o["warmup_s"], 2.0);
        assert_eq!(o["ping_interval_ms"], 100.0);
        assert_eq!(o["congestion_control"], "cubic");
        assert_eq!(o["realtime_priority"], 50);
        let fq = &r["results"][0];
        assert_eq!(fq["name"], "fq-codel");
        assert_eq!(fq["config_file"], "configs/fq-codel.toml");
        let link = &fq["link"]["right_to_left"];
        assert_eq!(link["dev"], "right");
        assert_eq!(link["rate"], "100Mbit");
        assert_eq!(link["rate_bit_s"], 100_000_000);
        assert_eq!(link["delay_ms"], 5.0);
        assert_eq!(link["netem"], Value::Null);
        assert!(
            link["tc"][0]
                .as_str()
                .unwrap()
                .starts_with("tc qdisc add dev right root fq_codel limit 10240"),
            "{}",
            link["tc"]
        );
        let qdisc = &fq["counters"]["right_to_left"]["qdiscs"][0];
        assert_eq!(qdisc["kind"], "fq_codel");
        assert!(qdisc["handle"].as_str().unwrap().ends_with(':'), "{qdisc}");
        // The histogram's buckets hold every transaction of the summary.
        let rr = &fq["summary"]["udp_rr"];
        let total: u64 = rr["histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["count"].as_u64().unwrap())
            .sum();
        assert_eq!(total, rr["rtt"]["samples"].as_u64().unwrap());
        assert!(total > 0);
        // Round trips of 10.1 to 10.9 ms: netperf's TEN_MSEC row, digit 1.
        assert_eq!(
            rr["histogram"],
            serde_json::json!([{"from_us": 10000, "to_us": 20000, "count": total}])
        );
        let sample = &fq["samples"]["throughput"][1];
        assert_eq!(sample["t_s"], 0.1);
        assert_eq!(
            sample["left_to_right"]["arrived_bytes"],
            (testdata::ARRIVED_MBIT * 1e6 / 8.0 * 0.1) as u64
        );
    }

    #[test]
    fn the_report_has_each_flows_goodput_their_fairness_and_one_way_delays() {
        let r = report_value();
        let fq = &r["results"][0];
        let flows = &fq["summary"]["tcp_flows"]["left_to_right"];
        let goodput: Vec<f64> = flows["goodput_mbit"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_f64().unwrap())
            .collect();
        assert_eq!(goodput.len(), testdata::FLOWS);
        // Flow 0 reads half of the direction's bytes, the other three a
        // sixth each: (1/2 + 3/6)² / (4 · (1/4 + 3/36)) = 0.75.
        assert!((goodput[0] - 3.0 * goodput[1]).abs() < 0.02, "{goodput:?}");
        let total = fq["summary"]["goodput_mbit"]["left_to_right"]
            .as_f64()
            .unwrap();
        assert!((goodput.iter().sum::<f64>() - total).abs() < 0.05);
        assert_eq!(flows["jain_index"], 0.75);
        // The per-flow counters of a sample add up to the direction's.
        let sample = &fq["samples"]["throughput"][8]["right_to_left"];
        let per_flow: u64 = sample["flows_read_bytes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap())
            .sum();
        assert_eq!(per_flow, sample["read_bytes"].as_u64().unwrap());
        assert!(per_flow > 0);
        let delay = &fq["counters"]["left_to_right"]["one_way_delay"];
        assert_eq!(delay["frames"], 98_000);
        assert_eq!(delay["min_ms"], 5.0);
        assert_eq!(delay["p50_ms"], 5.3);
        assert_eq!(delay["max_ms"], 7.95);
        assert_eq!(fq["counters"]["left_to_right"]["transit_p50_ms"], 5.3);
    }

    #[test]
    fn floats_are_rounded_to_the_microsecond_or_finer_units() {
        fn walk(key: &str, v: &Value, bad: &mut Vec<String>) {
            match v {
                Value::Object(m) => m.iter().for_each(|(k, v)| walk(k, v, bad)),
                Value::Array(a) => a.iter().for_each(|v| walk(key, v, bad)),
                Value::Number(n) if n.is_f64() => {
                    let text = n.to_string();
                    let decimals = text.split_once('.').map_or(0, |(_, d)| d.len());
                    let most = if key.ends_with("_s") { 6 } else { 4 };
                    if decimals > most {
                        bad.push(format!("{key}: {text}"));
                    }
                }
                _ => {}
            }
        }
        let mut bad = Vec::new();
        walk("", &report_value(), &mut bad);
        assert!(bad.is_empty(), "{bad:?}");
    }
}
