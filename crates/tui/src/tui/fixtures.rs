//! Realistic TUI input made by driving the real pure core: a `Bridge` of two
//! `Path`s with real qdiscs, fed real Ethernet/IPv4/TCP/UDP frames (built
//! with etherparse, so flows are classified like live traffic) at explicit
//! times, then snapshotted. `SimControl` is a `Control` over such a bridge:
//! each `snapshot()` advances it by a fixed step, `send` applies link
//! changes and the qdisc presets the core has. Used by the TUI tests and for
//! screenshots for the documents; everything is deterministic.

use super::{Action, Control, ControlError, Preset, Snapshot};
use crate::bridge::Bridge;
use crate::dir::Dir;
use crate::link::{LinkParams, Path};
use crate::load::feed::Probe;
use crate::load::stats::Sample;
use crate::packet::Packet;
use crate::qdisc::fq_codel::FqCodel;
use crate::qdisc::pfifo_fast::PfifoFast;
use crate::qdisc::qfq::Qfq;
use crate::qdisc::sfq::{Sfq, SfqOptions};
use crate::qdisc::tree::{DevSpec, QdiscTree};
use crate::qdisc::FilterHost;
use crate::qdisc::{tc_h_make, Classful, FlowListing, Qdisc, QdiscCtx, TC_H_ROOT};
use crate::refusal::Refusal;
use crate::time::{Instant, NS_PER_MS, NS_PER_SEC};
use etherparse::{IpHeaders, IpNumber, Ipv4Ecn, Ipv4Header, PacketBuilder};

/// Tc lines `SimControl` does not carry out: it applies the presets only.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FixtureError {
    /// Lines that name neither device.
    #[error("no device left or right in {0:?}")]
    NoDevice(String),
    /// Lines that are not a preset's.
    #[error("the fixture applies only preset lines, not {0:?}")]
    NotPreset(String),
    /// A preset whose qdisc the fixture does not build.
    #[error("{0}: not available in the fixture")]
    Unavailable(String),
    /// The preset's qdisc refused its options.
    #[error("{0}")]
    Refused(Refusal),
}

const LEFT_IP: [u8; 4] = [10, 77, 0, 1];
const RIGHT_IP: [u8; 4] = [10, 77, 0, 2];
const LEFT_MAC: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 1];
const RIGHT_MAC: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 2];

/// Transport of a traffic source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// TCP headers (no handshake: data segments only).
    Tcp,
    /// UDP headers.
    Udp,
}

/// A constant-rate source of `flows` flows sending round robin: flow `i`
/// uses source port `first_port + i` and destination port `dst_port`.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    /// The direction the frames travel.
    pub dir: Dir,
    /// Their transport.
    pub proto: Proto,
    /// Flows, sent round robin.
    pub flows: u32,
    /// Source port of flow 0 (flow i uses `first_port + i`).
    pub first_port: u16,
    /// Destination port of every flow.
    pub dst_port: u16,
    /// Whole Ethernet frame length, bytes.
    pub frame_len: usize,
    /// Rate of the whole source, bytes/s of frames.
    pub bytes_per_sec: u64,
    /// Frames carry ECT(0).
    pub ecn: bool,
}

/// An Ethernet/IPv4 frame of exactly `frame_len` bytes (at least the
/// headers) from the sending side of `dir`.
pub fn frame(
    dir: Dir,
    proto: Proto,
    src_port: u16,
    dst_port: u16,
    frame_len: usize,
    ecn: bool,
) -> Vec<u8> {
    let (smac, dmac, sip, dip) = match dir {
        Dir::LeftToRight => (LEFT_MAC, RIGHT_MAC, LEFT_IP, RIGHT_IP),
        Dir::RightToLeft => (RIGHT_MAC, LEFT_MAC, RIGHT_IP, LEFT_IP),
    };
    let l4 = match proto {
        Proto::Tcp => 20,
        Proto::Udp => 8,
    };
    let payload = vec![0u8; frame_len.saturating_sub(14 + 20 + l4)];
    let number = match proto {
        Proto::Tcp => IpNumber::TCP,
        Proto::Udp => IpNumber::UDP,
    };
    let mut ip = Ipv4Header::new(0, 64, number, sip, dip).expect("an empty payload fits");
    if ecn {
        ip.ecn = Ipv4Ecn::TWO;
    }
    let step = PacketBuilder::ethernet2(smac, dmac).ip(IpHeaders::Ipv4(ip, Default::default()));
    let mut out = Vec::with_capacity(frame_len);
    let written = match proto {
        Proto::Tcp => {
            let b = step.tcp(src_port, dst_port, 1, 65535).ack(1);
            b.write(&mut out, &payload)
        }
        Proto::Udp => step.udp(src_port, dst_port).write(&mut out, &payload),
    };
    written.expect("writing into a Vec cannot fail");
    out
}

/// The ctx of a root qdisc with handle `major:`.
pub fn root_ctx(major: u16) -> QdiscCtx {
    QdiscCtx {
        handle: tc_h_make(major, 0),
        parent: TC_H_ROOT,
        ..QdiscCtx::default()
    }
}

/// The link of the fixtures: 10 Mbit/s, 10 ms, a 256-descriptor ring with
/// BQL.
pub fn link_params() -> LinkParams {
    LinkParams {
        rate_bytes_ps: 1_250_000,
        delay_ns: 10 * NS_PER_MS,
        ..LinkParams::default()
    }
}

/// A bridge, its traffic and its clock.
pub struct Scenario {
    bridge: Bridge,
    now: Instant,
    loads: Vec<Load>,
    /// Next send time and next flow index of each load.
    next: Vec<(Instant, u32)>,
    out: Vec<(Dir, Packet)>,
    freed: Vec<Vec<u8>>,
}

impl Scenario {
    /// A scenario over a bridge whose left→right path runs `l2r` and right→left
    /// `r2l` (each the root of its device's tree), both with `params`, at
    /// time 0 with no load.
    pub fn new(l2r: Box<dyn Qdisc>, r2l: Box<dyn Qdisc>, params: LinkParams) -> Scenario {
        let path = |dir, root| {
            let dev = DevSpec::new(dir, crate::qdisc::kinds::BUILTIN);
            Path::new(params, QdiscTree::with_root(dev, root))
        };
        Scenario {
            bridge: Bridge::new(path(Dir::LeftToRight, l2r), path(Dir::RightToLeft, r2l)),
            now: Instant::ZERO,
            loads: Vec::new(),
            next: Vec::new(),
            out: Vec::new(),
            freed: Vec::new(),
        }
    }

    /// Both directions on pfifo_fast: left→right 4 bulk TCP flows offering
    /// the line rate, an ECN-capable one offering a quarter of it, and a
    /// sparse UDP "ping" flow; ACK-sized TCP frames right→left.
    pub fn pfifo_fast_under_load() -> Scenario {
        let mut s = Scenario::new(
            Box::new(PfifoFast::new(root_ctx(0))),
            Box::new(PfifoFast::new(root_ctx(0))),
            link_params(),
        );
        s.add_standard_loads();
        s
    }

    /// The same traffic through fq_codel in both directions.
    pub fn fq_codel_under_load() -> Scenario {
        let mut s = Scenario::new(
            Box::new(FqCodel::new(root_ctx(0x8001))),
            Box::new(FqCodel::new(root_ctx(0x8002))),
            link_params(),
        );
        s.add_standard_loads();
        s
    }

    /// A class tree under the same traffic left→right: QFQ root `1:` with
    /// classes 1:1 (weight 3, fq_codel `10:` attached) and 1:2 (weight 1,
    /// default pfifo), a u32 filter sending destination port 5202 to 1:2
    /// and matchall the rest to 1:1; pfifo_fast right→left.
    pub fn qfq_under_load() -> Scenario {
        let class = |minor| tc_h_make(1, minor);
        let weight = |w| {
            crate::qdisc::ClassOptions::Qfq(crate::qdisc::qfq::QfqClassOptions {
                weight: Some(w),
                lmax: None,
            })
        };
        let mut q = Qfq::new(root_ctx(1));
        let filter = |s: &str| {
            crate::tc::filter::parse(&s.split_whitespace().collect::<Vec<_>>())
                .expect("a valid filter")
        };
        let built = q
            .add_class(class(1), class(0), &weight(3))
            .and_then(|()| q.add_class(class(2), class(0), &weight(1)))
            .and_then(|()| {
                q.add_filter(filter(
                    "parent 1: protocol all prio 1 u32 match ip dport 5202 0xffff flowid 1:2",
                ))
            })
            .and_then(|()| {
                q.add_filter(filter("parent 1: protocol all prio 2 matchall flowid 1:1"))
            });
        built.expect("a valid class set-up");
        let child = QdiscCtx {
            handle: tc_h_make(0x10, 0),
            parent: class(1),
            ..QdiscCtx::default()
        };
        q.graft(class(1), Box::new(FqCodel::new(child)))
            .expect("class 1:1 exists");
        let mut s = Scenario::new(
            Box::new(q),
            Box::new(PfifoFast::new(root_ctx(0))),
            link_params(),
        );
        s.add_standard_loads();
        s
    }

    /// An HTB tree with SFQ leaves under the same traffic left→right, built
    /// by tc lines: root `1:` (default 1:20), class 1:1 at the line rate
    /// over 1:10 (6 Mbit/s, ceil the line rate) and 1:20 (4 Mbit/s, ceil
    /// the line rate), SFQ `10:` and `20:` on them (limit 64 each, so they
    /// drop), destination port 5202 and the UDP ping to 1:10; pfifo_fast
    /// right→left.
    pub fn htb_sfq_under_load() -> Scenario {
        let lines = [
            "tc qdisc add dev left root handle 1: htb default 20",
            "tc class add dev left parent 1: classid 1:1 htb rate 10mbit",
            "tc class add dev left parent 1:1 classid 1:10 htb rate 6mbit ceil 10mbit",
            "tc class add dev left parent 1:1 classid 1:20 htb rate 4mbit ceil 10mbit",
            "tc qdisc add dev left parent 1:10 handle 10: sfq limit 64",
            "tc qdisc add dev left parent 1:20 handle 20: sfq limit 64",
            "tc filter add dev left parent 1: protocol ip prio 1 u32 match ip dport 5202 0xffff flowid 1:10",
            "tc filter add dev left parent 1: protocol ip prio 1 u32 match ip dport 7 0xffff flowid 1:10",
        ];
        let dev = crate::qdisc::tree::DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN);
        let tree = crate::tc::build_tree(dev, &lines).expect("a valid HTB tree");
        let mut s = Scenario::new(
            Box::new(tree),
            Box::new(PfifoFast::new(root_ctx(0))),
            link_params(),
        );
        s.add_standard_loads();
        s
    }

    /// CAKE `1:` diffserv4 left→right under the same traffic, built by tc
    /// lines: a filter sends the UDP ping (destination port 7) to the
    /// Voice tin (skbedit priority 1:4, the fourth tin tc prints); the
    /// bulk flows share Best Effort. pfifo_fast right→left.
    pub fn cake_under_load() -> Scenario {
        let lines = [
            "tc qdisc add dev left root handle 1: cake diffserv4",
            "tc filter add dev left parent 1: protocol ip prio 1 u32 match ip dport 7 0xffff action skbedit priority 1:4",
        ];
        let dev = crate::qdisc::tree::DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN);
        let tree = crate::tc::build_tree(dev, &lines).expect("a valid CAKE set-up");
        let mut s = Scenario::new(
            Box::new(tree),
            Box::new(PfifoFast::new(root_ctx(0))),
            link_params(),
        );
        s.add_standard_loads();
        s
    }

    /// The loads of `pfifo_fast_under_load`.
    pub fn add_standard_loads(&mut self) {
        let rate = link_params().rate_bytes_ps;
        self.add_load(Load {
            dir: Dir::LeftToRight,
            proto: Proto::Tcp,
            flows: 4,
            first_port: 40000,
            dst_port: 5201,
            frame_len: 1514,
            bytes_per_sec: rate,
            ecn: false,
        });
        self.add_load(Load {
            dir: Dir::LeftToRight,
            proto: Proto::Tcp,
            flows: 1,
            first_port: 40100,
            dst_port: 5202,
            frame_len: 1514,
            bytes_per_sec: rate / 4,
            ecn: true,
        });
        self.add_load(Load {
            dir: Dir::LeftToRight,
            proto: Proto::Udp,
            flows: 1,
            first_port: 33000,
            dst_port: 7,
            frame_len: 100,
            bytes_per_sec: 1000,
            ecn: false,
        });
        self.add_load(Load {
            dir: Dir::RightToLeft,
            proto: Proto::Tcp,
            flows: 5,
            first_port: 5201,
            dst_port: 40000,
            frame_len: 66,
            bytes_per_sec: 60_000,
            ecn: false,
        });
    }

    /// Adds a source, sending from now on.
    pub fn add_load(&mut self, load: Load) {
        self.loads.push(load);
        self.next.push((self.now, 0));
    }

    /// Removes every source.
    pub fn clear_loads(&mut self) {
        self.loads.clear();
        self.next.clear();
    }

    /// The scenario's current time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The bridge, to change its paths.
    pub fn bridge_mut(&mut self) -> &mut Bridge {
        &mut self.bridge
    }

    /// One frame from each of `n` distinct flows at `now` (UDP, source
    /// ports and addresses varied so that every flow is different).
    pub fn burst_of_flows(&mut self, dir: Dir, n: u32, frame_len: usize) {
        for i in 0..n {
            let mut f = frame(
                dir,
                Proto::Udp,
                1024 + (i % 60000) as u16,
                9000,
                frame_len,
                false,
            );
            // Vary the last octet of the source address past 60,000 flows.
            f[14 + 15] = (i / 60000) as u8 + 1;
            self.bridge.ingress(dir, f, self.now);
        }
    }

    /// Runs the loads and the link until `until`.
    pub fn run_until(&mut self, until: Instant) {
        loop {
            let due = self
                .next
                .iter()
                .enumerate()
                .filter(|(_, (t, _))| *t <= until)
                .min_by_key(|(i, (t, _))| (*t, *i))
                .map(|(i, (t, _))| (i, *t));
            let Some((i, t)) = due else { break };
            self.advance(t);
            let load = self.loads[i];
            let (_, flow) = &mut self.next[i];
            let port = load.first_port.wrapping_add(*flow as u16);
            *flow = (*flow + 1) % load.flows.max(1);
            let f = frame(
                load.dir,
                load.proto,
                port,
                load.dst_port,
                load.frame_len,
                load.ecn,
            );
            self.bridge.ingress(load.dir, f, t);
            let gap = (load.frame_len as u64 * NS_PER_SEC / load.bytes_per_sec.max(1)).max(1);
            self.next[i].0 = t + gap;
        }
        self.advance(until);
    }

    fn advance(&mut self, to: Instant) {
        while let Some(t) = self.bridge.poll_at().filter(|t| *t <= to) {
            self.bridge.poll(t, &mut self.out, &mut self.freed);
            self.out.clear();
            self.freed.clear();
        }
        self.bridge.poll(to, &mut self.out, &mut self.freed);
        self.out.clear();
        self.freed.clear();
        self.now = self.now.max(to);
    }

    /// The TUI snapshot at the current time, bounded like the live
    /// datapath's (`DEFAULT_SNAPSHOT_FLOWS` flows per qdisc), with fixed
    /// datapath health figures (the pure core has no wake-ups).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            bridge: self.bridge.snapshot_listing(
                self.now,
                FlowListing::Top(crate::datapath::DEFAULT_SNAPSHOT_FLOWS),
            ),
            lateness_us: [14, 92, 350],
            wakeups: self.now.nanos() / (100 * crate::time::NS_PER_US),
            taken_at: self.now,
        }
    }

    /// Runs `steps` steps of `step_ns` and returns the snapshot after each.
    pub fn snapshots(&mut self, steps: usize, step_ns: u64) -> Vec<Snapshot> {
        (0..steps)
            .map(|_| {
                self.run_until(self.now + step_ns);
                self.snapshot()
            })
            .collect()
    }
}

/// A `Control` over a `Scenario`: every `snapshot()` runs it `step_ns`
/// further. Link changes go to `Path::set_params`; the pfifo_fast, fq_codel
/// and sfq presets replace the root qdisc (other tc lines are refused, as
/// the fixture has no tc front end). Every action sent is kept in `sent`.
pub struct SimControl {
    /// The scenario driven.
    pub scenario: Scenario,
    /// How far each `snapshot()` advances it, ns.
    pub step_ns: u64,
    /// Every action sent, in order.
    pub sent: Vec<Action>,
    /// Whether the probes run (`Action::Probes`).
    pub probes: bool,
    /// The probe samples modelled at the snapshots since the last
    /// `probe_samples`.
    probe_samples: Vec<(Probe, Sample)>,
}

impl SimControl {
    /// A control over `scenario` that advances it `step_ns` per snapshot.
    pub fn new(scenario: Scenario, step_ns: u64) -> SimControl {
        SimControl {
            scenario,
            step_ns,
            sent: Vec::new(),
            probes: false,
            probe_samples: Vec::new(),
        }
    }

    /// The probes' samples at snapshot `snap`, modelled as frames that wait
    /// behind each direction's whole qdisc backlog (a FIFO's behaviour) on
    /// top of its propagation delay: a ping, and UDP_RR transactions every
    /// 20 ms of the step, with jitter so that percentiles differ.
    fn model_probes(&mut self, snap: &Snapshot) {
        let one_way_us = |d: Dir, k: usize| {
            let p = snap.bridge.path(d);
            let wait_ns = p.qdisc.stats.backlog as f64 * 1e9 / p.params.rate_bytes_ps.max(1) as f64;
            (p.params.delay_ns as f64 + wait_ns) / 1e3 + (k % 5) as f64 * 40.0
        };
        let end = snap.taken_at.nanos() as f64 / 1e9;
        let step = self.step_ns as f64 / 1e9;
        let ping = one_way_us(Dir::LeftToRight, 0) + one_way_us(Dir::RightToLeft, 0);
        self.probe_samples
            .push((Probe::Ping, Sample::rtt(end - step / 2.0, ping)));
        let n = ((step / 0.02) as usize).max(1);
        for k in 0..n {
            let way = [
                one_way_us(Dir::LeftToRight, k),
                one_way_us(Dir::RightToLeft, 0),
            ];
            self.probe_samples.push((
                Probe::UdpRr,
                Sample {
                    t: end - step + k as f64 * step / n as f64,
                    rtt_us: way[0] + way[1] + 50.0,
                    one_way_us: Some(way),
                },
            ));
        }
    }

    fn apply_tc(&mut self, lines: &str) -> Result<String, FixtureError> {
        let dir = if lines.contains(" dev left ") {
            Dir::LeftToRight
        } else if lines.contains(" dev right ") {
            Dir::RightToLeft
        } else {
            return Err(FixtureError::NoDevice(lines.to_string()));
        };
        let rate = self.scenario.bridge.path(dir).params().rate_bytes_ps;
        let preset = Preset::all()
            .iter()
            .find(|p| p.tc_lines(dir, rate).join("\n") == lines)
            .ok_or_else(|| FixtureError::NotPreset(lines.to_string()))?;
        let major = 0x8001 + dir.index() as u16;
        let ctx = root_ctx(major);
        let q: Box<dyn Qdisc> = match preset.name() {
            "pfifo_fast" => Box::new(PfifoFast::new(root_ctx(0))),
            "fq_codel" => Box::new(FqCodel::new(ctx)),
            "sfq" => {
                let perturb = SfqOptions {
                    perturb_period: 10,
                    ..SfqOptions::default()
                };
                Box::new(Sfq::with_options(ctx, &perturb).map_err(FixtureError::Refused)?)
            }
            other => return Err(FixtureError::Unavailable(other.to_string())),
        };
        let now = self.scenario.now();
        let path = self.scenario.bridge.path_mut(dir);
        let tree = QdiscTree::with_root(path.qdisc().dev().clone(), q);
        path.replace_qdisc(tree, now);
        Ok(String::new())
    }
}

impl Control for SimControl {
    fn send(&mut self, action: &Action) -> Result<String, ControlError> {
        self.sent.push(action.clone());
        match action {
            Action::Quit => Ok(String::new()),
            Action::Probes(on) => {
                self.probes = *on;
                Ok(String::new())
            }
            Action::Tc(lines) => Ok(self.apply_tc(lines)?),
            Action::SetLink { dir, field, value } => {
                let now = self.scenario.now();
                let path = self.scenario.bridge.path_mut(*dir);
                let mut p = *path.params();
                field.apply(&mut p, *value)?;
                path.set_params(p, now);
                Ok(String::new())
            }
        }
    }

    fn snapshot(&mut self) -> Option<Snapshot> {
        let until = self.scenario.now() + self.step_ns;
        self.scenario.run_until(until);
        let snap = self.scenario.snapshot();
        if self.probes {
            self.model_probes(&snap);
        }
        Some(snap)
    }

    fn probe_samples(&mut self) -> (Vec<(Probe, Sample)>, u64) {
        (std::mem::take(&mut self.probe_samples), 0)
    }
}

/// An `App` that took `steps` snapshots of `scenario`, `step_ns` apart.
pub fn app_after(scenario: &mut Scenario, steps: usize, step_ns: u64) -> super::App {
    let mut app = super::App::new();
    for s in scenario.snapshots(steps, step_ns) {
        app.on_snapshot(s);
    }
    app
}
