//! The RRUL-like test ("Realtime Response Under Load"): bulk TCP flows in
//! both directions with an ICMP ping and a UDP_RR probe running throughout.
//! A warm-up at the start (slow start, queues filling) is left out of every
//! number; the time series keep it, for the plots. Each flow's bytes are
//! sampled too: the summary has each flow's goodput and Jain's fairness
//! index over the flows of each direction (`jain_index`). With `l4s` a
//! second ping and UDP_RR mark their packets ECT(1), so that a dual-queue
//! AQM puts them in its L queue: their latency is kept and summarised
//! apart from the classic (C) probes'; with `scalable` a scalable UDP
//! sender (`scalable`) runs left→right beside the TCP flows.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use super::feed::{Probe, ProbeFeed};
use super::icmp::{Ping, PingRaw, PingResult, PingSpec};
use super::scalable::{Scalable, ScalableRaw, ScalableResult, ScalableSpec};
use super::tcp::{Bulk, BulkSpec, CongestionControl};
use super::udp_rr::{UdpRr, UdpRrRaw, UdpRrResult, UdpRrSpec};
use super::{join, set_net_sysctl, spawn_in, Run, ECT_1};

/// Ports of the flows (left→right, right→left) and of the UDP_RR server.
const PORT_UP: u16 = 5201;
const PORT_DOWN: u16 = 5202;
const PORT_UDP_RR: u16 = 5203;
/// The L4S (ECT(1)) UDP_RR probe's server.
const PORT_UDP_RR_L4S: u16 = 5204;
/// The scalable UDP sender's receiver.
const PORT_SCALABLE: u16 = 5205;
/// The flows' own (source) ports: flow i of the left→right flows binds
/// `FIRST_SRC_PORT_UP + i`, of the right→left ones `FIRST_SRC_PORT_DOWN + i`.
/// Fixed ports make every run hash its flows into the same fq_codel/SFQ
/// buckets (the qdiscs' perturbation seed is fixed too), so that a hash
/// collision with a probe is the same in every run, not a 1-in-20 surprise.
const FIRST_SRC_PORT_UP: u16 = 40000;
const FIRST_SRC_PORT_DOWN: u16 = 42000;
/// Most flows per direction (`FIRST_SRC_PORT_UP + MAX_FLOWS` stays below
/// `FIRST_SRC_PORT_DOWN`).
pub const MAX_FLOWS: usize = 1000;

/// How often the throughput counters are sampled.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

/// What to run. "Up" is left→right (the left namespace sends), "down"
/// right→left.
#[derive(Clone, Debug)]
pub struct RrulSpec {
    /// The left namespace (the upload's senders).
    pub left_ns: String,
    /// The right namespace (the download's senders).
    pub right_ns: String,
    /// The left TAP's IPv4 address.
    pub left_ip: Ipv4Addr,
    /// The right TAP's IPv4 address.
    pub right_ip: Ipv4Addr,
    /// TCP flows left→right.
    pub flows_up: usize,
    /// TCP flows right→left.
    pub flows_down: usize,
    /// Congestion control of every flow.
    pub cc: CongestionControl,
    /// Total length, warm-up included.
    pub duration: Duration,
    /// Leading part left out of the summary.
    pub warmup: Duration,
    /// Ping interval; `None` = no ping.
    pub ping_interval: Option<Duration>,
    /// Run a UDP_RR probe from left to right.
    pub udp_rr: bool,
    /// Let TCP negotiate ECN (net.ipv4.tcp_ecn = 1 in both namespaces).
    pub ecn: bool,
    /// Also run each probe (ping, UDP_RR) a second time marked ECT(1): the
    /// L4S probes, whose latency is reported apart from the classic ones'.
    pub l4s: bool,
    /// Run the scalable (L4S) UDP sender left→right beside the TCP flows.
    pub scalable: bool,
    /// Where the probes also push each sample as they take it (a live
    /// view); `None`: only the raw record.
    pub feed: Option<ProbeFeed>,
}

/// What the caller of `run` wants after a progress report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Steer {
    /// Go on to the full duration.
    Continue,
    /// Stop now and keep what was measured (a run cut short).
    EndNow,
    /// Stop now with an error ("interrupted").
    Abort,
}

/// What one direction's receivers had received at one moment, all flows
/// together.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Received {
    /// Bytes read, in order (goodput as the application sees it).
    pub read: u64,
    /// Bytes that reached the receiving TCP, in order or not
    /// (`tcp::Bulk::arrived`): never faster than the link.
    pub arrived: u64,
}

/// The receivers' counters per direction at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThroughputSample {
    /// Seconds since the load started.
    pub t: f64,
    /// The left→right receivers' counters.
    pub up: Received,
    /// The right→left receivers' counters.
    pub down: Received,
    /// Bytes read by each left→right flow's receiver, flow 0 first (they
    /// add up to `up.read`).
    pub up_flows: Vec<u64>,
    /// Bytes read by each right→left flow's receiver.
    pub down_flows: Vec<u64>,
}

/// Everything measured, unsummarised.
#[derive(Clone, Debug, Default)]
pub struct RrulRaw {
    /// The wall-clock time of t = 0, when the load started (`None`: not
    /// run).
    pub t0: Option<std::time::SystemTime>,
    /// The ICMP probe's samples (None: no ping).
    pub ping: Option<PingRaw>,
    /// The UDP_RR probe's samples (None: not run).
    pub udp_rr: Option<UdpRrRaw>,
    /// The L4S (ECT(1)) ICMP probe's samples (None: not run).
    pub ping_l4s: Option<PingRaw>,
    /// The L4S (ECT(1)) UDP_RR probe's samples (None: not run).
    pub udp_rr_l4s: Option<UdpRrRaw>,
    /// The scalable UDP sender's record (None: not run).
    pub scalable: Option<ScalableRaw>,
    /// The receivers' counters every 100 ms.
    pub throughput: Vec<ThroughputSample>,
}

/// The numbers of the measured part (after the warm-up).
#[derive(Clone, Debug, Default)]
pub struct RrulSummary {
    /// Length of the measured part, s.
    pub measured_s: f64,
    /// ping's summary (None: no ping).
    pub ping: Option<PingResult>,
    /// UDP_RR's summary (None: not run).
    pub udp_rr: Option<UdpRrResult>,
    /// The L4S ping's summary (None: not run).
    pub ping_l4s: Option<PingResult>,
    /// The L4S UDP_RR's summary (None: not run).
    pub udp_rr_l4s: Option<UdpRrResult>,
    /// The scalable UDP sender's rate and marks (None: not run).
    pub scalable: Option<ScalableResult>,
    /// Goodput left→right, Mbit/s (bytes read by the receivers).
    pub up_mbit: f64,
    /// Goodput right→left, Mbit/s.
    pub down_mbit: f64,
    /// Each left→right flow's goodput, Mbit/s, flow 0 first.
    pub up_flows_mbit: Vec<f64>,
    /// Each right→left flow's goodput, Mbit/s.
    pub down_flows_mbit: Vec<f64>,
}

impl RrulSummary {
    /// Jain's fairness index of the left→right flows' goodput.
    pub fn up_fairness(&self) -> Option<f64> {
        jain_index(&self.up_flows_mbit)
    }

    /// Jain's fairness index of the right→left flows' goodput.
    pub fn down_fairness(&self) -> Option<f64> {
        jain_index(&self.down_flows_mbit)
    }
}

/// Jain's fairness index of `x` (R. Jain, D. Chiu, W. Hawe, "A Quantitative
/// Measure of Fairness and Discrimination for Resource Allocation in Shared
/// Computer Systems", DEC-TR-301, 1984): (Σx)² / (n·Σx²), 1 when all are
/// equal, 1/n when one has everything. `None` for no values or all zero
/// (as flent's `FairnessRunner` in flent/runners.py).
pub fn jain_index(x: &[f64]) -> Option<f64> {
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    (!x.is_empty() && squares > 0.0).then(|| sum * sum / (x.len() as f64 * squares))
}

impl RrulRaw {
    /// The numbers after `warmup` seconds.
    pub fn summary(&self, warmup: f64) -> RrulSummary {
        let end = self.throughput.last().map_or(warmup, |s| s.t);
        let none = ThroughputSample {
            t: warmup,
            ..ThroughputSample::default()
        };
        let at_warmup = self
            .throughput
            .iter()
            .find(|s| s.t >= warmup)
            .unwrap_or(&none);
        let last = self.throughput.last().unwrap_or(at_warmup);
        let span = (last.t - at_warmup.t).max(1e-9);
        let mbit = |a: u64, b: u64| b.saturating_sub(a) as f64 * 8.0 / span / 1e6;
        // A flow missing from the first sample had read nothing yet.
        let flows = |a: &[u64], b: &[u64]| -> Vec<f64> {
            (0..b.len())
                .map(|i| mbit(a.get(i).copied().unwrap_or(0), b[i]))
                .collect()
        };
        RrulSummary {
            measured_s: end - warmup,
            ping: self.ping.as_ref().map(|p| p.summary(warmup)),
            udp_rr: self.udp_rr.as_ref().map(|u| u.summary(warmup, end)),
            ping_l4s: self.ping_l4s.as_ref().map(|p| p.summary(warmup)),
            udp_rr_l4s: self.udp_rr_l4s.as_ref().map(|u| u.summary(warmup, end)),
            scalable: self.scalable.as_ref().map(|s| s.summary(warmup)),
            up_mbit: mbit(at_warmup.up.read, last.up.read),
            down_mbit: mbit(at_warmup.down.read, last.down.read),
            up_flows_mbit: flows(&at_warmup.up_flows, &last.up_flows),
            down_flows_mbit: flows(&at_warmup.down_flows, &last.down_flows),
        }
    }
}

/// Runs the test; `progress` gets the elapsed seconds about ten times a
/// second and steers: go on, end now keeping the samples, or abort (an
/// error). Every thread is stopped and joined on every path.
pub fn run(spec: &RrulSpec, progress: &mut dyn FnMut(f64) -> Steer) -> anyhow::Result<RrulRaw> {
    if spec.ecn {
        for ns in [&spec.left_ns, &spec.right_ns] {
            join(spawn_in(ns, "sysctl", || {
                set_net_sysctl("ipv4.tcp_ecn", "1")
            })?)?;
        }
    }
    let run = Run::with_feed(spec.feed.clone());
    let result = run_started(spec, &run, progress);
    run.stop();
    result
}

fn run_started(
    spec: &RrulSpec,
    run: &Run,
    progress: &mut dyn FnMut(f64) -> Steer,
) -> anyhow::Result<RrulRaw> {
    // Each part sets up and waits at the gate; if a later one fails to
    // start, `run.stop()` in `run` releases the others, whose threads end on
    // their own within a poll interval.
    anyhow::ensure!(
        spec.flows_up <= MAX_FLOWS && spec.flows_down <= MAX_FLOWS,
        "at most {MAX_FLOWS} flows per direction (asked for {} and {})",
        spec.flows_up,
        spec.flows_down
    );
    let bulk =
        |src: &str, dst: &str, ip: Ipv4Addr, port: u16, flows: usize, first_src_port: u16| {
            (flows > 0)
                .then(|| {
                    Bulk::start(
                        &BulkSpec {
                            src_ns: src.into(),
                            dst_ns: dst.into(),
                            dst: SocketAddr::from((ip, port)),
                            flows,
                            first_src_port,
                            cc: spec.cc,
                        },
                        run,
                    )
                })
                .transpose()
        };
    let up = bulk(
        &spec.left_ns,
        &spec.right_ns,
        spec.right_ip,
        PORT_UP,
        spec.flows_up,
        FIRST_SRC_PORT_UP,
    )?;
    let down = bulk(
        &spec.right_ns,
        &spec.left_ns,
        spec.left_ip,
        PORT_DOWN,
        spec.flows_down,
        FIRST_SRC_PORT_DOWN,
    )?;
    // Every probe feeds the live view, the L4S ones (ECT(1), another echo
    // id and port) as their own series.
    let id = (std::process::id() as u16) ^ (spec.left_ns.len() as u16).rotate_left(8);
    let ping_probe = |tos: u8, id: u16, feed_as: Option<Probe>| {
        spec.ping_interval
            .map(|interval| {
                let ping = PingSpec {
                    ns: spec.left_ns.clone(),
                    dst: spec.right_ip,
                    interval,
                    tos,
                    feed_as,
                };
                Ping::start(&ping, run, id)
            })
            .transpose()
    };
    let rr_probe = |tos: u8, port: u16, feed_as: Option<Probe>| {
        let rr = UdpRrSpec {
            client_ns: spec.left_ns.clone(),
            server_ns: spec.right_ns.clone(),
            server: SocketAddr::from((spec.right_ip, port)),
            tos,
            feed_as,
        };
        spec.udp_rr.then(|| UdpRr::start(&rr, run)).transpose()
    };
    let ping = ping_probe(0, id, Some(Probe::Ping))?;
    let udp = rr_probe(0, PORT_UDP_RR, Some(Probe::UdpRr))?;
    let (ping_l4s, udp_l4s) = if spec.l4s {
        (
            ping_probe(ECT_1, id ^ 0x8000, Some(Probe::PingL4s))?,
            rr_probe(ECT_1, PORT_UDP_RR_L4S, Some(Probe::UdpRrL4s))?,
        )
    } else {
        (None, None)
    };
    let scalable = spec
        .scalable
        .then(|| {
            let s = ScalableSpec {
                client_ns: spec.left_ns.clone(),
                server_ns: spec.right_ns.clone(),
                server: SocketAddr::from((spec.right_ip, PORT_SCALABLE)),
            };
            Scalable::start(&s, run)
        })
        .transpose()?;
    // Everything is connected and bound: the load and the clock start now.
    run.go();
    let t0 = std::time::SystemTime::now();
    let count = |b: &Option<Bulk>| -> anyhow::Result<(Received, Vec<u64>)> {
        Ok(match b {
            Some(b) => {
                let flows = b.read_per_flow();
                let received = Received {
                    read: flows.iter().sum(),
                    arrived: b.arrived()?,
                };
                (received, flows)
            }
            None => (Received::default(), Vec::new()),
        })
    };
    let mut raw = RrulRaw {
        t0: Some(t0),
        ..RrulRaw::default()
    };
    let total = spec.duration.as_secs_f64();
    let sampled = loop {
        let t = run.elapsed();
        let sample = count(&up).and_then(|u| Ok((u, count(&down)?)));
        let ((up, up_flows), (down, down_flows)) = match sample {
            Ok(s) => s,
            Err(e) => break Err(e),
        };
        raw.throughput.push(ThroughputSample {
            t,
            up,
            down,
            up_flows,
            down_flows,
        });
        match progress(t) {
            Steer::Continue => {}
            Steer::EndNow => break Ok(()),
            Steer::Abort => break Err(anyhow::anyhow!("interrupted")),
        }
        if t >= total {
            break Ok(());
        }
        std::thread::sleep(SAMPLE_INTERVAL.min(Duration::from_secs_f64(total - t)));
    };
    run.stop();
    // Join everything before reporting the first error.
    let ping = ping.map(Ping::finish).transpose();
    let udp = udp.map(UdpRr::finish).transpose();
    let ping_l4s = ping_l4s.map(Ping::finish).transpose();
    let udp_l4s = udp_l4s.map(UdpRr::finish).transpose();
    let scalable = scalable.map(Scalable::finish).transpose();
    let up = up.map(Bulk::finish).transpose();
    let down = down.map(Bulk::finish).transpose();
    raw.ping = ping?;
    raw.udp_rr = udp?;
    raw.ping_l4s = ping_l4s?;
    raw.udp_rr_l4s = udp_l4s?;
    raw.scalable = scalable?;
    up?;
    down?;
    sampled?;
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jains_index_is_one_for_equal_flows_and_one_over_n_for_a_hog() {
        assert_eq!(jain_index(&[25.0, 25.0, 25.0, 25.0]), Some(1.0));
        assert_eq!(jain_index(&[90.0, 0.0, 0.0]), Some(1.0 / 3.0));
        // (10 + 30)² / (2 · (100 + 900)) = 1600 / 2000.
        assert_eq!(jain_index(&[10.0, 30.0]), Some(0.8));
        assert_eq!(jain_index(&[]), None);
        assert_eq!(jain_index(&[0.0, 0.0]), None);
    }

    #[test]
    fn the_summary_has_each_flows_goodput_after_the_warmup() {
        let sample = |t: f64, up_flows: Vec<u64>| ThroughputSample {
            t,
            up: Received {
                read: up_flows.iter().sum(),
                arrived: 0,
            },
            up_flows,
            ..ThroughputSample::default()
        };
        let raw = RrulRaw {
            throughput: vec![
                sample(0.0, vec![0, 0]),
                sample(1.0, vec![1_000_000, 0]),
                sample(3.0, vec![3_500_000, 250_000]),
            ],
            ..RrulRaw::default()
        };
        let s = raw.summary(1.0);
        // 2.5 MB and 0.25 MB over 2 s.
        assert_eq!(s.up_flows_mbit, vec![10.0, 1.0]);
        assert_eq!(s.up_mbit, 11.0);
        assert_eq!(s.up_fairness(), jain_index(&[10.0, 1.0]));
        assert!(s.down_flows_mbit.is_empty());
        assert_eq!(s.down_fairness(), None);
    }
}
