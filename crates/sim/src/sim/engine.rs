//! The discrete-event loop: the live link's `Bridge`, driven lane by lane
//! (left→right, right→left) exactly as the datapath drives it, under a
//! simulated clock that jumps to the next event (a source timer, a TCP
//! timer, or `Lane::poll_at`). Frames enter through the lane's ingress
//! (admission checks, numbering, tap) and leave through `Lane::poll`; each
//! lane's path tells a `DequeueLog` (its `PathObserver`) when frames leave
//! its qdisc. Timers sit in a min-heap ordered by time then insertion
//! sequence, so equal-time events run in a fixed order; all randomness comes
//! from one `SmallRng` seeded by the scenario. Frames carry real headers; a
//! side table (slot = the frame's tag) remembers what each frame is, and
//! header buffers are recycled. A `[[packet]]` source with `segments > 1`
//! sends whole TCP super-frames (real bytes) through the lane's offload
//! ingress, which passes them whole or segments them as the live driver's
//! does; their segments share the super-frame's tag and entry.

use super::frame::{self, Endpoints, Proto, Tag, L4};
use super::observe::{DequeueLog, Logged};
use super::qdiscs::{build_qdisc, tc_show};
use super::report::{
    per_queue, DirReport, DirTally, FlowReport, SimReport, SnapshotDir, SnapshotReport,
};
use super::scenario::{CcAlgo, Scenario};
use super::sources::{build_flows, latency_histogram, seg_bytes, Flow, Source};
use super::trace::{DriverTrace, EventKind, Trace, TraceEvent};
use super::SimError;
use crate::bridge::Bridge;
use crate::dir::Dir;
use crate::link::path::DriverEvent;
use crate::link::Path;
use crate::packet::pool::{Buffers, PacketPool, FRAME_OVERHEAD, GSO_FRAME_BUF};
use crate::packet::{gro, gso, Packet};
use crate::qdisc::tree::AutoHandles;
use crate::qdisc::Verdict;
use crate::tc::TcCommand;
use crate::time::{earliest, Instant};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Iterations at one instant after which the loop declares a stall.
const STALL_LIMIT: u64 = 10_000_000;
/// Frames sent at one instant after which the loop declares a stall: TCP
/// over a link that takes no time sends its whole window, gets it acked
/// and sends again without the clock moving.
const STALL_FRAMES: u64 = 1_000_000;

/// What a timer does when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TimerKind {
    /// Start a flow, or the next departure of a UDP/ping/packet source.
    Source,
    Rto,
    DelayedAck,
}

/// A queued timer. Ordered by `key` alone: the time in the high 64 bits,
/// the insertion sequence in the low ones (unique, so ties are impossible).
#[derive(Clone, Copy, Debug)]
struct Timer {
    key: u128,
    flow: u32,
    kind: TimerKind,
}

impl Timer {
    fn at(&self) -> Instant {
        Instant::from_nanos((self.key >> 64) as u64)
    }
}

impl PartialEq for Timer {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Timer {}
impl PartialOrd for Timer {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timer {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// What a frame in flight is, kept in the side table.
#[derive(Clone, Copy, Debug)]
enum What {
    Data { seg: u64, cwr: bool },
    Ack(super::tcp::AckInfo),
    Datagram,
    PingRequest,
    PingReply { request_sent: Instant },
}

#[derive(Clone, Copy, Debug)]
struct PktInfo {
    trace_id: u64,
    /// `digest` of the frame as sent.
    digest: u64,
    flow: u32,
    /// Path index the frame travels on.
    dir: u8,
    /// True for ACKs and ping replies (the flow's reverse direction).
    reverse: bool,
    sent: Instant,
    /// Accounted frame length.
    len: u32,
    ecn_sent: u8,
    what: What,
    /// Segments it was sent as: 1 for a plain frame, more for a
    /// super-frame.
    segments: u32,
    /// Of those, the ones not yet delivered or dropped (a segmented
    /// super-frame's entry stays until the last).
    segments_left: u32,
}

impl PktInfo {
    /// The trace line of `ev` happening to this frame at `at` in its own
    /// direction, with its length as sent.
    fn event(&self, at: Instant, ev: EventKind) -> TraceEvent {
        TraceEvent {
            t: at.nanos(),
            ev,
            dir: Dir::ALL[usize::from(self.dir)],
            flow: self.flow,
            pkt: self.trace_id,
            size: self.len,
            reason: None,
            verdict: None,
        }
    }
}

/// Side table of frames in flight; the slot index and the serial (the low
/// bits of the trace id) form the frame's tag, so a duplicate arriving after
/// its slot was reused is not mistaken for the new frame.
#[derive(Default)]
struct Slab {
    slots: Vec<Option<PktInfo>>,
    free: Vec<u32>,
}

impl Slab {
    fn insert(&mut self, info: PktInfo) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(info);
                i
            }
            None => {
                self.slots.push(Some(info));
                (self.slots.len() - 1) as u32
            }
        }
    }
    fn get(&self, tag: Tag) -> Option<&PktInfo> {
        self.slots
            .get(tag.slot as usize)?
            .as_ref()
            .filter(|i| i.trace_id as u32 == tag.serial)
    }
    fn get_mut(&mut self, slot: u32) -> Option<&mut PktInfo> {
        self.slots.get_mut(slot as usize)?.as_mut()
    }
    fn take(&mut self, tag: Tag) -> Option<PktInfo> {
        self.get(tag)?;
        let info = self.slots.get_mut(tag.slot as usize)?.take()?;
        self.free.push(tag.slot);
        Some(info)
    }
    /// The entry of a frame that left the link carrying `segs` of its
    /// segments (a segment 1, a whole super-frame all): removed with the
    /// last of them.
    fn take_segments(&mut self, tag: Tag, segs: u32) -> Option<PktInfo> {
        let slot = tag.slot;
        let left = self.get(tag)?.segments_left;
        if segs >= left {
            return self.take(tag);
        }
        let info = self.get_mut(slot)?;
        info.segments_left = left - segs;
        Some(*info)
    }
}

/// Per-direction results beyond the path's own counters.
struct DirState {
    owd: Histogram<u64>,
    /// CE marks, unexplained drops, corrupted frames discarded.
    tally: DirTally,
}

/// The simulator state.
pub struct Sim {
    now: Instant,
    end: Instant,
    bridge: Bridge,
    timers: BinaryHeap<Reverse<Timer>>,
    timer_seq: u64,
    flows: Vec<Flow>,
    slab: Slab,
    pool: Vec<Vec<u8>>,
    rng: SmallRng,
    out: Vec<Packet>,
    freed: Vec<Packet>,
    segs: Vec<super::tcp::Segment>,
    departures: Vec<Logged>,
    dirs: [DirState; 2],
    trace: Trace,
    next_trace_id: u64,
    /// Frames sent since the clock last moved (see `STALL_FRAMES`).
    emitted_this_instant: u64,
    unmatched_frames: u64,
    /// The `[[snapshot]]` instants not taken yet, earliest last.
    snapshot_at: Vec<Instant>,
    /// The `[[tc]]` lines not run yet (instant, entry, command), earliest
    /// last (at one instant, the file's first last).
    tc_at: Vec<(Instant, usize, TcCommand)>,
    /// Each direction's TX queues (for the snapshots' tc text).
    tx_queues: [u32; 2],
    snapshots: Vec<SnapshotReport>,
    /// Super-frames and their segments, for scenarios that send them.
    bufs: Option<Buffers>,
}

impl Sim {
    /// Builds the paths, qdiscs and flows of a scenario.
    pub fn new(sc: &Scenario, trace: Trace) -> Result<Sim, SimError> {
        let mut rng = SmallRng::seed_from_u64(sc.seed);
        let cfg = sc.config();
        let autohandles = AutoHandles::default();
        let mut make_path = |dir: Dir| {
            let params = cfg.link_params(dir);
            let steps = cfg.tc_steps(dir);
            let qdisc = build_qdisc(
                dir,
                &steps,
                &params,
                cfg.tx_queues(dir),
                rng.next_u64(),
                sc.kinds,
                &autohandles,
            )?;
            let mut path = Path::new(params, qdisc);
            let shape = sc.link_shape(dir, &mut || rng.next_u64())?;
            let shaped = sc.impairments(dir)?.is_some()
                || !shape.impairments.is_none()
                || shape.schedule.is_some()
                || shape.framing != crate::link::Framing::default();
            if shaped {
                path.set_shape(shape, Instant::ZERO).map_err(|e| {
                    SimError::Scenario(format!("link shape of {}: {e}", dir.arrow()))
                })?;
            }
            Ok::<_, SimError>(path)
        };
        let l2r = make_path(Dir::LeftToRight)?;
        let r2l = make_path(Dir::RightToLeft)?;
        let mut bridge = Bridge::new(l2r, r2l);
        let gso = sc.tap.gso_policy();
        for dir in Dir::ALL {
            let lane = bridge.lane_mut(dir);
            lane.set_observer(Box::new(DequeueLog::default()));
            lane.set_gso(gso.as_ref(), Instant::ZERO);
        }
        let flows = build_flows(sc, &mut rng)?;
        let dir_state = || DirState {
            owd: latency_histogram(),
            tally: DirTally::default(),
        };
        let mut sim = Sim {
            now: Instant::ZERO,
            end: Instant::from_nanos(sc.duration.0),
            bridge,
            timers: BinaryHeap::new(),
            timer_seq: 0,
            flows,
            slab: Slab::default(),
            pool: Vec::new(),
            rng,
            out: Vec::new(),
            freed: Vec::new(),
            segs: Vec::new(),
            departures: Vec::new(),
            dirs: [dir_state(), dir_state()],
            trace,
            next_trace_id: 0,
            emitted_this_instant: 0,
            unmatched_frames: 0,
            snapshot_at: {
                let mut at: Vec<Instant> = sc
                    .snapshot
                    .iter()
                    .map(|s| Instant::from_nanos(s.get_ref().at.0))
                    .collect();
                at.sort_unstable_by(|a, b| b.cmp(a));
                at
            },
            tc_at: {
                let mut at = Vec::with_capacity(sc.tc.len());
                for (i, c) in sc.tc.iter().enumerate() {
                    let spec = c.get_ref();
                    let cmd = TcCommand::parse(&spec.line)
                        .map_err(|e| SimError::Scenario(format!("tc[{i}].line: {}", e.0)))?;
                    at.push((Instant::from_nanos(spec.at.0), i, cmd));
                }
                at.sort_by_key(|(t, i, _)| Reverse((*t, *i)));
                at
            },
            tx_queues: Dir::ALL.map(|d| cfg.tx_queues(d)),
            snapshots: Vec::new(),
            bufs: super_frame_buffers(sc),
        };
        for i in 0..sim.flows.len() {
            let start = sim.flows[i].start;
            sim.schedule(start, i as u32, TimerKind::Source);
        }
        Ok(sim)
    }

    fn schedule(&mut self, at: Instant, flow: u32, kind: TimerKind) {
        self.timer_seq += 1;
        self.timers.push(Reverse(Timer {
            key: (at.nanos() as u128) << 64 | self.timer_seq as u128,
            flow,
            kind,
        }));
    }

    /// Runs to the scenario's end.
    pub fn run(&mut self) -> Result<(), SimError> {
        let mut same_instant = 0u64;
        loop {
            let next_timer = self.timers.peek().map(|t| t.0.at());
            let path_due = Dir::ALL.map(|d| self.bridge.lane(d).poll_at());
            let next_tc = self.tc_at.last().map(|c| c.0);
            let Some(t) = earliest(
                earliest(next_timer, next_tc),
                earliest(path_due[0], path_due[1]),
            ) else {
                break;
            };
            // Everything up to a snapshot's instant has happened.
            self.take_snapshots(|at| at < t);
            if t > self.end {
                break;
            }
            if t <= self.now {
                same_instant += 1;
                if same_instant > STALL_LIMIT || self.emitted_this_instant > STALL_FRAMES {
                    return Err(SimError::Stalled {
                        at_ns: self.now.nanos(),
                    });
                }
            } else {
                same_instant = 0;
                self.emitted_this_instant = 0;
                self.now = t;
            }
            // `[[tc]]` lines due run before the instant's other events.
            while let Some((_, i, cmd)) = self.tc_at.pop_if(|c| c.0 <= self.now) {
                self.run_tc(i, &cmd)?;
            }
            while let Some(timer) = self
                .timers
                .peek()
                .filter(|t| t.0.at() <= self.now)
                .map(|t| t.0)
            {
                self.timers.pop();
                self.fire(timer);
            }
            // A path that became due through an ingress above is polled in
            // the next round, at the same instant.
            for (dir, due) in path_due.into_iter().enumerate() {
                if due.is_some_and(|t| t <= self.now) {
                    self.poll(dir);
                }
            }
        }
        self.now = self.end;
        for dir in 0..2 {
            self.poll(dir);
        }
        self.take_snapshots(|_| true);
        self.trace.finish().map_err(SimError::Io)
    }

    /// Runs the `[[tc]]` line `i` now on its device; a refusal ends the
    /// run with tc's message.
    fn run_tc(&mut self, i: usize, cmd: &TcCommand) -> Result<(), SimError> {
        let dir = cmd.dev.unwrap_or(Dir::LeftToRight);
        let now = self.now;
        self.bridge
            .path_mut(dir)
            .edit_qdisc(now, |tree, t, drops| crate::tc::run(tree, cmd, t, drops))
            .map(|_| ())
            .map_err(|e| {
                SimError::Scenario(format!(
                    "tc[{i}] at {}: {}",
                    crate::units::sprint_time(now.nanos() / 1_000),
                    e.0
                ))
            })
    }

    /// Takes the snapshots due by `due`, earliest first.
    fn take_snapshots(&mut self, due: impl Fn(Instant) -> bool) {
        while let Some(at) = self.snapshot_at.last().copied().filter(|at| due(*at)) {
            self.snapshot_at.pop();
            let directions = [0, 1].map(|d| {
                let dir = Dir::ALL[d];
                let snap = self.bridge.path(dir).snapshot(at);
                let tx_queues = per_queue(&snap);
                SnapshotDir {
                    name: dir.name(),
                    dev: dir.dev(),
                    tc: tc_show(dir, &snap.qdisc, self.tx_queues[d]),
                    qdisc: snap.qdisc,
                    bql_limit_bytes: snap.bql_limit,
                    bql_inflight_bytes: snap.bql_inflight,
                    tx_queues,
                }
            });
            self.snapshots.push(SnapshotReport {
                at_ns: at.nanos(),
                directions,
            });
        }
    }

    fn fire(&mut self, timer: Timer) {
        let i = timer.flow as usize;
        let now = self.now;
        match timer.kind {
            TimerKind::Source => self.source_due(i),
            TimerKind::Rto => {
                let Source::Tcp(tcp) = &mut self.flows[i].source else {
                    return;
                };
                if tcp.rto_event == Some(timer.at()) {
                    tcp.rto_event = None;
                }
                if tcp.sender.rto_at().is_some_and(|t| t <= now) {
                    tcp.sender.on_rto(now);
                }
                self.tcp_transmit(i);
            }
            TimerKind::DelayedAck => {
                let Source::Tcp(tcp) = &mut self.flows[i].source else {
                    return;
                };
                if tcp.delack_event == Some(timer.at()) {
                    tcp.delack_event = None;
                }
                if tcp.receiver.delack_at().is_some_and(|t| t <= now) {
                    self.send_ack(i);
                }
            }
        }
    }

    /// A source's start or next departure.
    fn source_due(&mut self, i: usize) {
        let now = self.now;
        if !self.flows[i].active(now) {
            return;
        }
        let flow = &mut self.flows[i];
        let (ep, tos, dir, start) = (flow.ep, flow.tos, flow.dir, flow.start);
        match &mut flow.source {
            Source::Tcp(tcp) => {
                tcp.started = true;
                self.tcp_transmit(i);
            }
            Source::Udp(udp) => {
                let size = udp.size;
                let next = udp.next_after(now, start, &mut self.rng);
                self.emit(i, dir, false, &ep, tos, size, L4::Udp, What::Datagram);
                self.schedule(next, i as u32, TimerKind::Source);
            }
            Source::Ping(ping) => {
                let (size, next) = (ping.size, now + ping.interval_ns);
                self.emit(i, dir, false, &ep, tos, size, L4::Udp, What::PingRequest);
                self.schedule(next, i as u32, TimerKind::Source);
            }
            Source::Packets(p) => {
                if p.left == 0 {
                    return;
                }
                p.left -= 1;
                let (size, proto, more, next) = (p.size, p.proto, p.left > 0, now + p.interval_ns);
                let segments = p.segments;
                if segments > 1 {
                    self.emit_super(i, dir, &ep, tos, size, segments);
                    if more {
                        self.schedule(next, i as u32, TimerKind::Source);
                    }
                    return;
                }
                let l4 = match proto {
                    Proto::Udp => L4::Udp,
                    Proto::Tcp => L4::Tcp {
                        seq: 0,
                        ack: None,
                        ae: false,
                        ece: false,
                        cwr: false,
                        sack: [None; 3],
                    },
                };
                self.emit(i, dir, false, &ep, tos, size, l4, What::Datagram);
                if more {
                    self.schedule(next, i as u32, TimerKind::Source);
                }
            }
        }
    }

    /// Sends what the TCP sender's window allows and keeps its RTO timer
    /// queued.
    fn tcp_transmit(&mut self, i: usize) {
        let now = self.now;
        let active = self.flows[i].active(now);
        let flow = &mut self.flows[i];
        let (ep, tos, dir) = (flow.ep, flow.tos, flow.dir);
        let Source::Tcp(tcp) = &mut flow.source else {
            return;
        };
        if !tcp.started {
            return;
        }
        let mut segs = std::mem::take(&mut self.segs);
        if active {
            segs.extend(std::iter::from_fn(|| tcp.sender.next_segment(now)));
        }
        let (isn, mss, ecn, total) = (tcp.isn, tcp.mss, tcp.ecn, tcp.total);
        let scalable = tcp.cc == CcAlgo::Prague;
        for s in segs.drain(..) {
            let payload = seg_bytes(total, mss, s.seg);
            // ECT(1) for the scalable sender, retransmissions included (RFC
            // 9331 §4.1 identifier; RFC 8311 §4.3 lifts the ban on ECT on
            // retransmissions); ECT(0) on new data otherwise (RFC 3168).
            let ds = if scalable {
                tos & !3 | 1
            } else if ecn && !s.retransmit {
                tos & !3 | 2
            } else {
                tos & !3
            };
            let l4 = L4::Tcp {
                seq: isn.wrapping_add((s.seg * mss as u64) as u32),
                ack: Some(1),
                ae: false,
                ece: false,
                cwr: s.cwr,
                sack: [None; 3],
            };
            let size = ep.min_frame(Proto::Tcp) as u32 + payload;
            self.emit(
                i,
                dir,
                false,
                &ep,
                ds,
                size,
                l4,
                What::Data {
                    seg: s.seg,
                    cwr: s.cwr,
                },
            );
        }
        self.segs = segs;
        let Source::Tcp(tcp) = &mut self.flows[i].source else {
            return;
        };
        if let Some(at) = tcp.sender.rto_at() {
            if tcp.rto_event.is_none_or(|q| q > at) {
                tcp.rto_event = Some(at);
                self.schedule(at, i as u32, TimerKind::Rto);
            }
        }
    }

    /// The receiver of TCP flow `i` sends its ACK now.
    fn send_ack(&mut self, i: usize) {
        let flow = &mut self.flows[i];
        let (ep, tos, dir) = (flow.ep.reversed(), flow.tos & !3, 1 - flow.dir);
        let Source::Tcp(tcp) = &mut flow.source else {
            return;
        };
        let info = tcp.receiver.make_ack();
        let mss = tcp.mss as u64;
        let to_seq = |seg: u64| tcp.isn.wrapping_add((seg * mss) as u32);
        let mut sack = [None; 3];
        for (k, b) in info.sack_blocks().iter().enumerate() {
            sack[k] = Some((to_seq(b.0), to_seq(b.1)));
        }
        let (ae, cwr, ece) = info.flags();
        let l4 = L4::Tcp {
            seq: 1,
            ack: Some(to_seq(info.ack)),
            ae,
            ece,
            cwr,
            sack,
        };
        self.emit(i, dir, true, &ep, tos, 0, l4, What::Ack(info));
    }

    /// Builds a frame and hands it to lane `dir` of the bridge.
    #[allow(clippy::too_many_arguments)]
    fn emit(
        &mut self,
        flow: usize,
        dir: usize,
        reverse: bool,
        ep: &Endpoints,
        dsfield: u8,
        size: u32,
        l4: L4,
        what: What,
    ) {
        let now = self.now;
        self.emitted_this_instant += 1;
        let trace_id = self.next_trace_id;
        self.next_trace_id += 1;
        let slot = self.slab.insert(PktInfo {
            trace_id,
            digest: 0,
            flow: flow as u32,
            dir: dir as u8,
            reverse,
            sent: now,
            len: 0,
            ecn_sent: dsfield & 3,
            what,
            segments: 1,
            segments_left: 1,
        });
        let mut buf = self.pool.pop().unwrap_or_else(|| Vec::with_capacity(128));
        let tag = Tag {
            slot,
            serial: trace_id as u32,
        };
        let len = frame::write_frame(&mut buf, ep, dsfield, size as usize, tag, &l4) as u32;
        if let Some(info) = self.slab.get_mut(slot) {
            info.len = len;
            info.digest = frame::digest(&buf);
        }
        let c = &mut self.flows[flow].counters[reverse as usize];
        c.sent_pkts += 1;
        c.sent_bytes += len as u64;
        self.bridge
            .lane_mut(Dir::ALL[dir])
            .ingress_headers(buf, len, now);
        self.trace_enqueue(flow, dir, trace_id, len);
    }

    /// Builds a TCP super-frame of `segments` segments of `size` bytes
    /// (real bytes, zero payload) and hands it with its offload header to
    /// lane `dir`, as a TAP with offload hands one to the live driver
    /// (`Lane::ingress_offloaded`): it passes whole or is segmented there.
    /// Its flow counts it as its segments.
    fn emit_super(
        &mut self,
        flow: usize,
        dir: usize,
        ep: &Endpoints,
        dsfield: u8,
        size: u32,
        segments: u32,
    ) {
        let now = self.now;
        let Some(bufs) = self.bufs.as_mut() else {
            return;
        };
        self.emitted_this_instant += 1;
        let trace_id = self.next_trace_id;
        self.next_trace_id += 1;
        let hdr_len = ep.min_frame(Proto::Tcp);
        let mss = size as usize - hdr_len;
        let total = hdr_len + segments as usize * mss;
        // What its segments occupy on the wire (`qdisc_pkt_len`).
        let wire = segments * size;
        let slot = self.slab.insert(PktInfo {
            trace_id,
            digest: 0,
            flow: flow as u32,
            dir: dir as u8,
            reverse: false,
            sent: now,
            len: wire,
            ecn_sent: dsfield & 3,
            what: What::Datagram,
            segments,
            segments_left: segments,
        });
        let tag = Tag {
            slot,
            serial: trace_id as u32,
        };
        let l4 = L4::Tcp {
            seq: 0,
            ack: Some(1),
            ae: false,
            ece: false,
            cwr: false,
            sack: [None; 3],
        };
        let mut rx = bufs.super_frames.get().unwrap_or_default();
        frame::write_frame(&mut rx, ep, dsfield, total, tag, &l4);
        rx.resize(total, 0);
        // The scenario's check keeps the segments within 65,535 bytes of IP
        // and with a payload, so the frame is a valid super-frame.
        let Ok(hdr) = gso::make_super_frame(&mut rx, mss as u16) else {
            self.dirs[dir].tally.unexplained_drops += 1;
            self.slab.take(tag);
            bufs.put(rx);
            return;
        };
        if let Some(info) = self.slab.get_mut(slot) {
            info.digest = frame::digest(&rx);
        }
        let c = &mut self.flows[flow].counters[0];
        c.sent_pkts += segments as u64;
        c.sent_bytes += wire as u64;
        self.bridge
            .lane_mut(Dir::ALL[dir])
            .ingress_offloaded(&mut rx, hdr, now, bufs);
        bufs.put(rx);
        self.trace_enqueue(flow, dir, trace_id, wire);
    }

    /// Traces the enqueue of frame `trace_id` into lane `dir` with the
    /// qdisc's verdict (a segmented super-frame's is its last segment's),
    /// and the departures it caused.
    fn trace_enqueue(&mut self, flow: usize, dir: usize, trace_id: u64, len: u32) {
        let verdict = self
            .bridge
            .lane_mut(Dir::ALL[dir])
            .path_mut()
            .observer_mut::<DequeueLog>()
            .and_then(DequeueLog::take_verdict);
        self.trace.record(TraceEvent {
            t: self.now.nanos(),
            ev: EventKind::Enqueue,
            dir: Dir::ALL[dir],
            flow: flow as u32,
            pkt: trace_id,
            size: len,
            reason: None,
            verdict: Some(match verdict {
                None | Some(Verdict::Queued) => "success",
                Some(Verdict::Dropped) => "drop",
                Some(Verdict::Congested) => "cn",
            }),
        });
        self.trace_dequeues(dir);
    }

    /// Returns a delivered or dropped frame's buffer: to the super-frame
    /// buffers if it was (part of) a super-frame, else to the header pool.
    fn recycle(&mut self, data: Vec<u8>, super_frame: bool) {
        match (&mut self.bufs, super_frame) {
            (Some(bufs), true) => bufs.put(data),
            _ => self.pool.push(data),
        }
    }

    /// Traces the departures lane `dir`'s qdisc logged (a frame bypassing
    /// the empty qdisc departs as it is ingressed, its ECN bits as sent).
    fn trace_dequeues(&mut self, dir: usize) {
        let mut deps = std::mem::take(&mut self.departures);
        if let Some(log) = self
            .bridge
            .lane_mut(Dir::ALL[dir])
            .path_mut()
            .observer_mut::<DequeueLog>()
        {
            log.drain_into(&mut deps);
        }
        for logged in deps.drain(..) {
            let d = match logged {
                Logged::Dequeued(d) => d,
                Logged::Departed { at, tag } => {
                    if let Some(info) = self.slab.get(tag) {
                        let ev = info.event(at, EventKind::Depart);
                        self.trace.record(ev);
                    }
                    continue;
                }
                Logged::Driver { at, event } => {
                    self.trace
                        .record_driver(driver_trace(at, Dir::ALL[dir], event));
                    continue;
                }
            };
            let Some(info) = self.slab.get(d.tag) else {
                continue;
            };
            let ev = info.event(d.at, EventKind::Dequeue);
            if d.ce && info.ecn_sent != 3 {
                self.trace.record(TraceEvent {
                    ev: EventKind::EcnMark,
                    ..ev
                });
            }
            self.trace.record(ev);
        }
        self.departures = deps;
    }

    /// Collects what path `dir` delivered and freed up to now.
    fn poll(&mut self, dir: usize) {
        let now = self.now;
        self.bridge
            .lane_mut(Dir::ALL[dir])
            .poll(now, &mut self.out, &mut self.freed);
        self.trace_dequeues(dir);
        let mut freed = std::mem::take(&mut self.freed);
        for pkt in freed.drain(..) {
            self.dropped(dir, pkt);
        }
        self.freed = freed;
        let mut out = std::mem::take(&mut self.out);
        for pkt in out.drain(..) {
            self.deliver(dir, pkt);
        }
        self.out = out;
    }

    /// Traces a frame the lane freed, with the reason it carries.
    fn dropped(&mut self, dir: usize, pkt: Packet) {
        let reason = match pkt.meta.dropped {
            Some(r) => r.name(),
            None => {
                self.dirs[dir].tally.unexplained_drops += 1;
                "unknown"
            }
        };
        let segs = pkt.segs();
        let Some(info) = frame::read_tag(&pkt.data).and_then(|t| self.slab.take_segments(t, segs))
        else {
            self.unmatched_frames += 1;
            self.pool.push(pkt.data);
            return;
        };
        self.flows[info.flow as usize].counters[info.reverse as usize].dropped_pkts += segs as u64;
        self.trace.record(TraceEvent {
            t: self.now.nanos(),
            ev: EventKind::Drop,
            dir: Dir::ALL[dir],
            flow: info.flow,
            pkt: info.trace_id,
            size: pkt.len,
            reason: Some(reason),
            verdict: None,
        });
        self.recycle(pkt.data, info.segments > 1);
    }

    fn deliver(&mut self, dir: usize, pkt: Packet) {
        let now = self.now;
        let segs = pkt.segs();
        let Some(info) = frame::read_tag(&pkt.data).and_then(|t| self.slab.take_segments(t, segs))
        else {
            self.unmatched_frames += 1;
            self.pool.push(pkt.data);
            return;
        };
        debug_assert_eq!(info.dir as usize, dir);
        let i = info.flow as usize;
        // A super-frame's segment was rewritten by the segmentation: the
        // receiver's checks are its IPv4 header and TCP checksums.
        let intact = if info.segments > 1 && pkt.meta.gso_segs == 0 {
            gro::is_intact_tcp_segment(&pkt.data)
        } else {
            frame::digest(&pkt.data) == info.digest
        };
        if !intact {
            // Corrupted on the wire: the receiver's checksum check drops it.
            self.flows[i].counters[info.reverse as usize].discarded_pkts += segs as u64;
            self.dirs[dir].tally.corrupt_discarded += segs as u64;
            self.trace.record(TraceEvent {
                t: now.nanos(),
                ev: EventKind::Drop,
                dir: Dir::ALL[dir],
                flow: info.flow,
                pkt: info.trace_id,
                size: pkt.len,
                reason: Some("corrupt"),
                verdict: None,
            });
            self.recycle(pkt.data, info.segments > 1);
            return;
        }
        let ce = frame::read_ecn(&pkt.data) == Some(3);
        let marked = ce && info.ecn_sent != 3;
        let len = pkt.len;
        self.recycle(pkt.data, info.segments > 1);
        let owd = now.saturating_since(info.sent);
        self.dirs[dir].owd.saturating_record(owd.max(1));
        let c = &mut self.flows[i].counters[info.reverse as usize];
        c.delivered_pkts += segs as u64;
        c.delivered_bytes += len as u64;
        c.owd_sum_ns += owd;
        c.owd_max_ns = c.owd_max_ns.max(owd);
        c.first_delivery.get_or_insert(now);
        c.last_delivery = Some(now);
        self.trace.record(TraceEvent {
            t: now.nanos(),
            ev: EventKind::Deliver,
            dir: Dir::ALL[dir],
            flow: info.flow,
            pkt: info.trace_id,
            size: len,
            reason: None,
            verdict: None,
        });
        if marked {
            // Traced when it left the qdisc marked.
            c.ce_marks += 1;
            self.dirs[dir].tally.ce_marks += 1;
        }
        match info.what {
            What::Data { seg, cwr } => {
                let Source::Tcp(tcp) = &mut self.flows[i].source else {
                    return;
                };
                match tcp.receiver.on_data(seg, ce, cwr, now) {
                    super::tcp::AckNow::Now => self.send_ack(i),
                    super::tcp::AckNow::Delayed(at) => {
                        if tcp.delack_event.is_none_or(|q| q > at) {
                            tcp.delack_event = Some(at);
                            self.schedule(at, i as u32, TimerKind::DelayedAck);
                        }
                    }
                }
            }
            What::Ack(ack) => {
                let Source::Tcp(tcp) = &mut self.flows[i].source else {
                    return;
                };
                tcp.sender
                    .on_ack(ack.ack, ack.sack_blocks(), ack.echo(), now);
                self.tcp_transmit(i);
            }
            What::Datagram => {}
            What::PingRequest => {
                if let Source::Ping(p) = &mut self.flows[i].source {
                    p.owd[0].saturating_record(owd.max(1));
                }
                let flow = &self.flows[i];
                let (ep, tos, back) = (flow.ep.reversed(), flow.tos, 1 - flow.dir);
                let size = match &flow.source {
                    Source::Ping(p) => p.size,
                    _ => len,
                };
                self.emit(
                    i,
                    back,
                    true,
                    &ep,
                    tos,
                    size,
                    L4::Udp,
                    What::PingReply {
                        request_sent: info.sent,
                    },
                );
            }
            What::PingReply { request_sent } => {
                if let Source::Ping(p) = &mut self.flows[i].source {
                    p.rtt
                        .saturating_record(now.saturating_since(request_sent).max(1));
                    p.owd[1].saturating_record(owd.max(1));
                }
            }
        }
    }

    /// The results, with the qdisc statistics of both directions.
    pub fn report(&self, sc: &Scenario) -> SimReport {
        let end = self.end;
        let cfg = sc.config();
        let flows = self.flows.iter().map(|f| FlowReport::new(f, end)).collect();
        let directions = [0, 1].map(|d| {
            let dir = Dir::ALL[d];
            let snap = self.bridge.path(dir).snapshot(end);
            let tc = tc_show(dir, &snap.qdisc, cfg.tx_queues(dir));
            DirReport::new(
                (Dir::ALL[d].name(), dir.dev()),
                &snap,
                &self.dirs[d].owd,
                self.dirs[d].tally,
                end,
                tc,
            )
        });
        SimReport {
            seed: sc.seed,
            duration_ns: end.nanos(),
            trace_events: self.trace.events(),
            trace_hash: self.trace.hash(),
            unmatched_frames: self.unmatched_frames,
            flows,
            directions,
            snapshots: self.snapshots.clone(),
        }
    }
}

/// Buffers for the super-frames of a scenario's `[[packet]]` sources with
/// `segments > 1` (None if it has none): enough for every one of them and
/// their segments to be in flight at once, up to 2^20 segments (beyond
/// that the lane drops a segment with no buffer as `PoolExhausted`).
fn super_frame_buffers(sc: &Scenario) -> Option<Buffers> {
    let (supers, segments) = sc
        .packet
        .iter()
        .map(|p| p.get_ref())
        .filter(|p| p.segments > 1)
        .fold((0u64, 0u64), |(f, s), p| {
            (f + p.count as u64, s + p.count as u64 * p.segments as u64)
        });
    (supers > 0).then(|| Buffers {
        frames: PacketPool::new(
            sc.tap.mtu as usize + FRAME_OVERHEAD,
            segments.min(1 << 20) as usize,
        ),
        super_frames: PacketPool::new(GSO_FRAME_BUF, supers.min(1 << 20) as usize + 1),
    })
}

/// The trace line of a driver event.
fn driver_trace(at: Instant, dir: Dir, event: DriverEvent) -> DriverTrace {
    let line = |ev, frames| DriverTrace {
        t: at.nanos(),
        ev,
        dir,
        queue: None,
        frames,
        bytes: None,
        bql_limit: None,
        bql_inflight: None,
    };
    match event {
        DriverEvent::TxCompletion {
            queue,
            frames,
            bytes,
            bql_limit,
            bql_inflight,
        } => DriverTrace {
            queue,
            bytes: Some(bytes),
            bql_limit,
            bql_inflight,
            ..line(EventKind::TxCompletion, frames)
        },
        DriverEvent::RxInterrupt { frames } => line(EventKind::RxInterrupt, frames),
    }
}
