//! Traffic sources and their per-flow state: TCP bulk flows (a sender on
//! one host, a receiver on the other), constant-rate / on-off / Poisson UDP,
//! a ping-like request/response probe, and explicit packets. `Flow` is what
//! the simulator keeps per flow: addresses, the source, and counters for
//! both directions (data and ACKs / requests and replies).

use super::frame::{Endpoints, Proto};
use super::scenario::{CcAlgo, Scenario, SimTime};
use super::tcp::{TcpReceiver, TcpSender};
use super::SimError;
use crate::dir::Dir;
use crate::time::{Instant, NS_PER_SEC};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::Rng;

/// Latency histograms record nanoseconds, 1 ns to 1000 s, 3 significant
/// figures.
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 1_000 * NS_PER_SEC, 3).expect("static bounds are valid")
}

/// A TCP bulk flow: both ends and their timers.
#[derive(Debug)]
pub struct TcpFlow {
    /// The congestion control of the sender.
    pub cc: CcAlgo,
    /// The sending end.
    pub sender: TcpSender,
    /// The receiving end.
    pub receiver: TcpReceiver,
    /// Payload bytes per full segment.
    pub mss: u32,
    /// Total payload bytes, `None` for unlimited.
    pub total: Option<u64>,
    /// The flow uses ECN: its data is ECN-capable (ECT(1) for Prague,
    /// ECT(0) otherwise) and CE is echoed back.
    pub ecn: bool,
    /// Initial sequence number (byte sequence in headers).
    pub isn: u32,
    /// The time an RTO event is queued for, if any.
    pub rto_event: Option<Instant>,
    /// The time a delayed-ACK event is queued for, if any.
    pub delack_event: Option<Instant>,
    /// The first segment has been sent.
    pub started: bool,
}

/// Payload bytes of segment `seg` of a transfer of `total` bytes
/// (unlimited: `None`) in segments of `mss`.
pub fn seg_bytes(total: Option<u64>, mss: u32, seg: u64) -> u32 {
    match total {
        Some(total) => total.saturating_sub(seg * mss as u64).min(mss as u64) as u32,
        None => mss,
    }
}

/// UDP at a constant (or Poisson) rate, optionally on/off.
#[derive(Debug)]
pub struct UdpSource {
    /// Mean gap between frames, ns.
    pub gap_ns: f64,
    /// Frame size, bytes.
    pub size: u32,
    /// On and off durations, ns: sends only during the first part of each
    /// period.
    pub on_off: Option<(u64, u64)>,
    /// Exponential gaps (a Poisson process) instead of constant ones.
    pub poisson: bool,
}

impl UdpSource {
    /// The departure after one at `t` (flow started at `start`).
    pub fn next_after(&self, t: Instant, start: Instant, rng: &mut SmallRng) -> Instant {
        let gap = if self.poisson {
            // Inverse-CDF exponential; 1 - u is in (0, 1].
            let u: f64 = rng.gen();
            -(1.0 - u).ln() * self.gap_ns
        } else {
            self.gap_ns
        };
        let next = t + gap.max(1.0) as u64;
        match self.on_off {
            Some((on, off)) => {
                let period = on + off;
                let phase = next.saturating_since(start) % period;
                if phase >= on {
                    next + (period - phase)
                } else {
                    next
                }
            }
            None => next,
        }
    }
}

/// The ping-like probe: requests every `interval`; RTT and one-way delay
/// histograms.
#[derive(Debug)]
pub struct PingSource {
    /// Time between requests, ns.
    pub interval_ns: u64,
    /// Frame size, bytes.
    pub size: u32,
    /// Round-trip times, ns.
    pub rtt: Histogram<u64>,
    /// One-way delays of requests and of replies.
    pub owd: [Histogram<u64>; 2],
}

/// Explicit packets: `left` more, every `interval_ns`.
#[derive(Debug)]
pub struct PacketSource {
    /// TCP or UDP headers.
    pub proto: Proto,
    /// Frame size, bytes.
    pub size: u32,
    /// Packets still to send.
    pub left: u32,
    /// Segments per packet: more than 1 makes each a TCP super-frame of
    /// that many `size`-byte segments.
    pub segments: u32,
    /// Time between packets, ns.
    pub interval_ns: u64,
}

/// What generates a flow's traffic.
#[derive(Debug)]
pub enum Source {
    /// A TCP bulk flow.
    Tcp(Box<TcpFlow>),
    /// Constant-rate, on/off or Poisson UDP.
    Udp(UdpSource),
    /// The ping-like probe.
    Ping(Box<PingSource>),
    /// Explicit packets.
    Packets(PacketSource),
}

impl Source {
    /// The kind's name in reports: `tcp`, `udp`, `ping` or `packet`.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Tcp(_) => "tcp",
            Source::Udp(_) => "udp",
            Source::Ping(_) => "ping",
            Source::Packets(_) => "packet",
        }
    }
}

/// Counters of one direction of one flow.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct FlowCounters {
    /// Frames sent.
    pub sent_pkts: u64,
    /// Bytes sent (accounted lengths).
    pub sent_bytes: u64,
    /// Frames delivered to the receiving host.
    pub delivered_pkts: u64,
    /// Bytes delivered.
    pub delivered_bytes: u64,
    /// Frames dropped in the link.
    pub dropped_pkts: u64,
    /// Delivered corrupted and discarded by the receiver.
    pub discarded_pkts: u64,
    /// Frames that arrived with CE set although sent without it.
    pub ce_marks: u64,
    /// Sum of the one-way delays of the delivered frames, ns.
    pub owd_sum_ns: u64,
    /// Longest one-way delay, ns.
    pub owd_max_ns: u64,
    /// When the first frame was delivered.
    pub first_delivery: Option<Instant>,
    /// When the last frame was delivered.
    pub last_delivery: Option<Instant>,
}

/// One flow of the scenario.
#[derive(Debug)]
pub struct Flow {
    /// The flow's name in the scenario.
    pub name: String,
    /// Path index of the forward packets (0: left→right).
    pub dir: usize,
    /// Forward (sender → receiver) addresses.
    pub ep: Endpoints,
    /// DS field of forward packets (ECT bits added by ECN-capable TCP).
    pub tos: u8,
    /// When the flow starts sending.
    pub start: Instant,
    /// When it stops sending (None: at the end of the run).
    pub stop: Option<Instant>,
    /// What generates its traffic.
    pub source: Source,
    /// `[forward, reverse]`: data / requests, and ACKs / replies.
    pub counters: [FlowCounters; 2],
}

impl Flow {
    /// True while the source may still send at `now`.
    pub fn active(&self, now: Instant) -> bool {
        self.stop.is_none_or(|s| now < s)
    }
}

fn name_of(name: &Option<String>, kind: &str, index: usize, copy: u32, count: u32) -> String {
    let base = name.clone().unwrap_or_else(|| format!("{kind}{index}"));
    if count > 1 {
        format!("{base}.{copy}")
    } else {
        base
    }
}

fn time(t: SimTime) -> Instant {
    Instant::from_nanos(t.0)
}

/// Expands the scenario's traffic entries into flows (each `count` copy is
/// one flow with its own source port), in file order: tcp, udp, ping,
/// packet.
pub fn build_flows(sc: &Scenario, rng: &mut SmallRng) -> Result<Vec<Flow>, SimError> {
    let mut flows = Vec::new();
    let push = |flows: &mut Vec<Flow>,
                name: String,
                dir: Dir,
                ep: Endpoints,
                tos: u8,
                start: Instant,
                stop: Option<SimTime>,
                source: Source| {
        flows.push(Flow {
            name,
            dir: dir.index(),
            ep,
            tos,
            start,
            stop: stop.map(time),
            source,
            counters: Default::default(),
        });
    };
    for (i, spec) in sc.tcp.iter().map(|s| s.get_ref()).enumerate() {
        for copy in 0..spec.count {
            let ep = sc
                .endpoints(&spec.addr(), spec.direction, Proto::Tcp, flows.len() as u32)?
                .copy(copy, spec.src.is_some());
            let max_mss = sc.tap.mtu + 14 - ep.min_frame(Proto::Tcp) as u32;
            let mss = spec.mss.unwrap_or(max_mss);
            let total = spec.bytes.map(|b| b.0);
            let limit = total.map(|t| t.div_ceil(mss as u64));
            let jitter = if spec.start_jitter.0 > 0 {
                rng.gen_range(0..spec.start_jitter.0)
            } else {
                0
            };
            let tcp = TcpFlow {
                cc: spec.cc,
                sender: TcpSender::new(
                    spec.cc,
                    limit,
                    spec.init_cwnd,
                    spec.rwnd.0 / mss as u64,
                    spec.min_rto.0,
                    spec.ecn,
                ),
                receiver: match spec.cc {
                    CcAlgo::Prague => {
                        TcpReceiver::new(spec.delayed_ack, spec.delack_timeout.0).accurate_ecn()
                    }
                    _ => TcpReceiver::new(spec.delayed_ack, spec.delack_timeout.0),
                },
                mss,
                total,
                ecn: spec.ecn || spec.cc == CcAlgo::Prague,
                isn: rng.gen(),
                rto_event: None,
                delack_event: None,
                started: false,
            };
            push(
                &mut flows,
                name_of(&spec.name, "tcp", i, copy, spec.count),
                spec.direction,
                ep,
                spec.tos,
                time(spec.start) + jitter,
                spec.stop,
                Source::Tcp(Box::new(tcp)),
            );
        }
    }
    for (i, spec) in sc.udp.iter().map(|s| s.get_ref()).enumerate() {
        for copy in 0..spec.count {
            let ep = sc
                .endpoints(&spec.addr(), spec.direction, Proto::Udp, flows.len() as u32)?
                .copy(copy, spec.src.is_some());
            let src = UdpSource {
                gap_ns: spec.size as f64 * NS_PER_SEC as f64 / spec.rate.value() as f64,
                size: spec.size,
                on_off: spec.on.zip(spec.off).map(|(a, b)| (a.0, b.0)),
                poisson: spec.poisson,
            };
            push(
                &mut flows,
                name_of(&spec.name, "udp", i, copy, spec.count),
                spec.direction,
                ep,
                spec.tos,
                time(spec.start),
                spec.stop,
                Source::Udp(src),
            );
        }
    }
    for (i, spec) in sc.ping.iter().map(|s| s.get_ref()).enumerate() {
        let mut ep = sc.endpoints(&spec.addr(), spec.direction, Proto::Udp, flows.len() as u32)?;
        if spec.addr().dst.is_none() {
            ep.dst.set_port(7);
        }
        let src = PingSource {
            interval_ns: spec.interval.0,
            size: spec.size,
            rtt: latency_histogram(),
            owd: [latency_histogram(), latency_histogram()],
        };
        push(
            &mut flows,
            name_of(&spec.name, "ping", i, 0, 1),
            spec.direction,
            ep,
            spec.tos,
            time(spec.start),
            spec.stop,
            Source::Ping(Box::new(src)),
        );
    }
    for (i, spec) in sc.packet.iter().map(|s| s.get_ref()).enumerate() {
        let ep = sc.endpoints(&spec.addr(), spec.direction, spec.proto, flows.len() as u32)?;
        let src = PacketSource {
            proto: spec.proto,
            size: spec.size,
            left: spec.count,
            segments: spec.segments,
            interval_ns: spec.interval.0,
        };
        push(
            &mut flows,
            name_of(&spec.name, "packet", i, 0, 1),
            spec.direction,
            ep,
            spec.tos,
            time(spec.time),
            None,
            Source::Packets(src),
        );
    }
    Ok(flows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn cbr(on_off: Option<(u64, u64)>, poisson: bool) -> UdpSource {
        UdpSource {
            gap_ns: 1_000_000.0,
            size: 1250,
            on_off,
            poisson,
        }
    }

    #[test]
    fn constant_rate_gaps() {
        let mut rng = SmallRng::seed_from_u64(1);
        let s = cbr(None, false);
        let t = s.next_after(Instant::from_millis(5), Instant::ZERO, &mut rng);
        assert_eq!(t, Instant::from_millis(6));
    }

    #[test]
    fn on_off_skips_the_off_period() {
        let mut rng = SmallRng::seed_from_u64(1);
        // On 3 ms, off 7 ms: after 2 ms comes 10 ms (the next on period).
        let s = cbr(Some((3_000_000, 7_000_000)), false);
        let start = Instant::ZERO;
        assert_eq!(
            s.next_after(Instant::from_millis(1), start, &mut rng),
            Instant::from_millis(2)
        );
        assert_eq!(
            s.next_after(Instant::from_millis(2), start, &mut rng),
            Instant::from_millis(10)
        );
    }

    #[test]
    fn poisson_keeps_the_mean_and_depends_on_the_seed() {
        let s = cbr(None, true);
        let run = |seed| {
            let mut rng = SmallRng::seed_from_u64(seed);
            let mut t = Instant::ZERO;
            for _ in 0..20_000 {
                t = s.next_after(t, Instant::ZERO, &mut rng);
            }
            t
        };
        let mean = run(3).nanos() as f64 / 20_000.0;
        assert!((mean - 1e6).abs() < 3e4, "{mean}");
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    #[test]
    fn flows_expand_with_unique_ports() {
        let sc = Scenario::from_toml(
            "seed = 1\nduration = \"1s\"\n[[tcp]]\ncount = 3\nbytes = 3000\nmss = 1000\n[[ping]]\n[[packet]]\ntime = \"1ms\"\nsize = 100\n",
        )
        .unwrap();
        let mut rng = SmallRng::seed_from_u64(1);
        let flows = build_flows(&sc, &mut rng).unwrap();
        assert_eq!(flows.len(), 5);
        assert_eq!(flows[1].name, "tcp0.1");
        assert_ne!(flows[0].ep.src.port(), flows[1].ep.src.port());
        assert_eq!(flows[3].ep.dst.port(), 7);
        assert_eq!(flows[4].start, Instant::from_millis(1));
        match &flows[0].source {
            Source::Tcp(t) => {
                assert_eq!(seg_bytes(t.total, t.mss, 0), 1000);
                assert_eq!(seg_bytes(t.total, t.mss, 2), 1000);
                assert_eq!(seg_bytes(t.total, t.mss, 3), 0);
                assert_eq!(seg_bytes(Some(2500), 1000, 2), 500);
            }
            other => panic!("{other:?}"),
        }
    }
}
