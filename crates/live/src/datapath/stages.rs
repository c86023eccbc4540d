//! Where a frame's time goes, stage by stage, per direction (issue 47): the
//! wall-clock time each processing step of the datapath thread takes (the
//! read system call, classifying and enqueueing it into the lane, the
//! lane's poll that releases it, the write system call), the emulated time
//! the link means to add (qdisc sojourn, TX ring and BQL, serializer,
//! delay line, RX coalescing: logical times, told by a `PathObserver`
//! installed on the lane's path, `StageObserver`), and the release
//! lateness (the write's time minus the logical delivery: what the link
//! adds by mistake; summed up from the driver's own `release_lateness`,
//! not recorded a second time). Each other stage is a histogram allocated once (1 ns to
//! 10 s, two significant digits, about 30 kB, and a table of counts as
//! large that a record increments: `Tally`), into which recording never
//! allocates; the wall-clock stages cost the datapath one clock read per
//! frame read and one per poll that releases frames, the writes reuse the
//! reading the next write needs anyway. A snapshot carries each stage as a
//! `LatenessSummary` (`StageBreakdown`), summed up only when something was
//! recorded since the last one.
//!
//! The emulated stages follow one frame through the path by its sequence
//! number (`PacketMeta::id`) in a fixed table of `TRACKED` slots: a frame
//! whose slot a later frame took before it was delivered (more than
//! `TRACKED` frames inside the path) is not recorded, but counted as
//! `untracked`. A frame starts on the wire when it has left the qdisc and
//! the previous frame has left the wire (`Serializer`'s own rule, so the
//! wire time includes a doorbell delay, `tx_post_ns`); the ring stage is
//! the wait before that.

use std::io;

use crate::link::path::{PathEvent, PathObserver};
use crate::link::transit::Tally;
use crate::packet::Packet;
use crate::time::{Instant, NS_PER_SEC};

use super::snapshot::LatenessSummary;

/// Frames of a path followed at once by the emulated stages.
pub(crate) const TRACKED: usize = 4096;

/// The stages the datapath thread times on the wall clock (indices into
/// its `Recorder`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wall {
    /// The read system call that returned the frame.
    Read = 0,
    /// Classifying the frame and enqueueing it into the lane
    /// (`Lane::ingress`, which advances the path to the read's time).
    Classify,
    /// A poll of the lane that released frames (once per poll).
    Release,
    /// The write system call of a frame (or of a GRO super-frame).
    Write,
}

/// The stages the link emulates (indices into `StageObserver`'s recorder).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Emulated {
    /// Offered to the qdisc until dequeued (0 for a bypass).
    Qdisc = 0,
    /// Out of the qdisc until the serializer starts it (TX ring, BQL, a
    /// full ring's requeue).
    Ring,
    /// On the wire: from its start to its last bit.
    Serializer,
    /// Propagation: off the wire until it reaches the receiving NIC.
    DelayLine,
    /// RX interrupt coalescing: reached the NIC until delivered.
    Coalescing,
}

/// `N` stage histograms and their last summaries; a record is a counter
/// increment (`Tally`).
pub(crate) struct Recorder<const N: usize> {
    hists: [Tally; N],
    summary: [LatenessSummary; N],
    /// Something was recorded since `summary` was computed.
    recorded: bool,
}

impl<const N: usize> Recorder<N> {
    /// `N` empty histograms (1 ns to 10 s, two significant digits).
    pub(crate) fn new() -> io::Result<Recorder<N>> {
        let one = Tally::new(10 * NS_PER_SEC, 2)
            .map_err(|e| io::Error::other(format!("stage histogram: {e}")))?;
        Ok(Recorder {
            hists: std::array::from_fn(|_| one.clone()),
            summary: [LatenessSummary::default(); N],
            recorded: false,
        })
    }

    /// Records `ns` in stage `i` (clamped to 1 ns–10 s; 0 counts as 1 ns).
    pub(crate) fn record(&mut self, i: usize, ns: u64) {
        if let Some(h) = self.hists.get_mut(i) {
            h.record(ns.max(1));
            self.recorded = true;
        }
    }

    /// Records the time from `from` to `to` in stage `i`.
    pub(crate) fn span(&mut self, i: usize, from: Instant, to: Instant) {
        self.record(i, to.saturating_since(from));
    }

    /// Every stage summed up (recomputed only after new records).
    pub(crate) fn summary(&mut self) -> [LatenessSummary; N] {
        if std::mem::take(&mut self.recorded) {
            for (s, h) in self.summary.iter_mut().zip(&mut self.hists) {
                *s = LatenessSummary::of_tally(h);
            }
        }
        self.summary
    }
}

/// The wall-clock stages of one direction's thread, with the frame read
/// whose classify and enqueue are being timed.
pub(crate) struct WallStages {
    rec: Recorder<4>,
    /// When the read system call of the frame being ingressed returned.
    read_done: Option<Instant>,
}

impl WallStages {
    pub(crate) fn new() -> io::Result<WallStages> {
        Ok(WallStages {
            rec: Recorder::new()?,
            read_done: None,
        })
    }

    /// A read started at `start` returned a frame at `done`; it is being
    /// handed to the lane, until `ingressed`.
    pub(crate) fn read(&mut self, start: Instant, done: Instant) {
        self.rec.span(Wall::Read as usize, start, done);
        self.read_done = Some(done);
    }

    /// The frame last read (if any) is in the lane at `now`.
    pub(crate) fn ingressed(&mut self, now: Instant) {
        if let Some(done) = self.read_done.take() {
            self.rec.span(Wall::Classify as usize, done, now);
        }
    }

    /// Records the time from `from` to `to` in stage `stage`.
    pub(crate) fn span(&mut self, stage: Wall, from: Instant, to: Instant) {
        self.rec.span(stage as usize, from, to);
    }

    /// The stages summed up.
    pub(crate) fn summary(&mut self) -> [LatenessSummary; 4] {
        self.rec.summary()
    }
}

/// What is known of a frame inside the path.
#[derive(Clone, Copy, Debug, Default)]
struct Track {
    /// `PacketMeta::id + 1` (0: a free slot).
    tag: u64,
    offered: Instant,
    dequeued: Instant,
    started: Instant,
    departed: Instant,
    received: Instant,
}

/// A `PathObserver` that times the emulated stages of every frame it can
/// follow (`TRACKED` at once) in logical time.
pub(crate) struct StageObserver {
    rec: Recorder<5>,
    slots: Box<[Track]>,
    /// When the last frame left the wire (the next one starts no earlier).
    wire_free: Instant,
    /// Frames delivered that could not be followed.
    untracked: u64,
}

impl StageObserver {
    pub(crate) fn new() -> io::Result<StageObserver> {
        Ok(StageObserver {
            rec: Recorder::new()?,
            slots: vec![Track::default(); TRACKED].into_boxed_slice(),
            wire_free: Instant::ZERO,
            untracked: 0,
        })
    }

    /// The slot of `pkt`, if it still holds that frame.
    fn slot(&mut self, pkt: &Packet) -> Option<&mut Track> {
        let tag = pkt.meta.id.wrapping_add(1);
        let t = &mut self.slots[(pkt.meta.id % TRACKED as u64) as usize];
        (t.tag == tag).then_some(t)
    }

    /// The stages summed up, and the frames delivered unfollowed.
    pub(crate) fn summary(&mut self) -> ([LatenessSummary; 5], u64) {
        (self.rec.summary(), self.untracked)
    }
}

impl PathObserver for StageObserver {
    fn event(&mut self, event: PathEvent, pkt: &Packet, at: Instant) {
        match event {
            PathEvent::Enqueued | PathEvent::Bypassed => {
                let i = (pkt.meta.id % TRACKED as u64) as usize;
                // A netem copy (same id) re-offered later keeps the first
                // offer's time only if it is the same frame still inside.
                if event == PathEvent::Enqueued && self.slots[i].tag == pkt.meta.id.wrapping_add(1)
                {
                    return;
                }
                self.slots[i] = Track {
                    tag: pkt.meta.id.wrapping_add(1),
                    offered: at,
                    dequeued: at,
                    ..Track::default()
                };
            }
            PathEvent::Dequeued => {
                if let Some(t) = self.slot(pkt) {
                    t.dequeued = at;
                }
            }
            PathEvent::Departed => {
                let free = self.wire_free;
                self.wire_free = at;
                if let Some(t) = self.slot(pkt) {
                    t.started = t.dequeued.max(free).min(at);
                    t.departed = at;
                }
            }
            PathEvent::Delivered => {
                let Some(t) = self.slot(pkt).map(std::mem::take) else {
                    self.untracked += 1;
                    return;
                };
                let spans = [
                    (Emulated::Qdisc, t.offered, t.dequeued),
                    (Emulated::Ring, t.dequeued, t.started),
                    (Emulated::Serializer, t.started, t.departed),
                    (Emulated::DelayLine, t.departed, t.received),
                    (Emulated::Coalescing, t.received, at),
                ];
                for (stage, from, to) in spans {
                    self.rec.span(stage as usize, from, to);
                }
            }
            PathEvent::Dropped(_) => {
                if let Some(t) = self.slot(pkt) {
                    *t = Track::default();
                }
            }
        }
    }

    fn received(&mut self, pkt: &Packet, at: Instant) {
        if let Some(t) = self.slot(pkt) {
            t.received = at;
        }
    }
}

/// Where a direction's frames spend their time, each stage summed up
/// (ns): wall-clock stages of the datapath thread, emulated stages of the
/// link, and the release lateness.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct StageBreakdown {
    /// The read system call that returned a frame (wall clock).
    pub read: LatenessSummary,
    /// Classifying a frame and enqueueing it into the lane (wall clock).
    pub classify: LatenessSummary,
    /// The qdisc sojourn (emulated: 0 when the frame bypassed it).
    pub qdisc: LatenessSummary,
    /// Out of the qdisc until the wire takes it: TX ring, BQL (emulated).
    pub ring: LatenessSummary,
    /// On the wire, at line rate with the per-frame overhead (emulated).
    pub serializer: LatenessSummary,
    /// Propagation delay, impairments' extra delay included (emulated).
    pub delay_line: LatenessSummary,
    /// RX interrupt coalescing (emulated).
    pub coalescing: LatenessSummary,
    /// A poll of the lane that released frames, once per poll (wall clock).
    pub release: LatenessSummary,
    /// The write system call of a frame (wall clock).
    pub write: LatenessSummary,
    /// Release lateness: the write's time minus the logical delivery
    /// (the driver's `release_lateness`, recorded once per frame).
    pub late: LatenessSummary,
    /// Frames delivered whose emulated stages were not followed (more
    /// than `TRACKED` inside the path at once).
    pub untracked: u64,
}

impl StageBreakdown {
    /// The breakdown from the thread's wall-clock stages, its release
    /// lateness `late` and the path's observer (an all-zero emulated part
    /// without one).
    pub(crate) fn of(
        wall: &mut WallStages,
        late: LatenessSummary,
        observer: Option<&mut StageObserver>,
    ) -> Self {
        let [read, classify, release, write] = wall.summary();
        let ([qdisc, ring, serializer, delay_line, coalescing], untracked) =
            observer.map_or(([LatenessSummary::default(); 5], 0), |o| o.summary());
        StageBreakdown {
            read,
            classify,
            qdisc,
            ring,
            serializer,
            delay_line,
            coalescing,
            release,
            write,
            late,
            untracked,
        }
    }

    /// The stages in the order a frame goes through them, with the names
    /// `bloatbox stats` prints: (name, summary, emulated).
    pub fn stages(&self) -> [(&'static str, &LatenessSummary, bool); 10] {
        [
            ("read", &self.read, false),
            ("classify", &self.classify, false),
            ("qdisc", &self.qdisc, true),
            ("ring", &self.ring, true),
            ("serializer", &self.serializer, true),
            ("delay line", &self.delay_line, true),
            ("coalescing", &self.coalescing, true),
            ("release", &self.release, false),
            ("write", &self.write, false),
            ("late", &self.late, false),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::Lane;
    use crate::link::{LinkParams, Path};
    use crate::qdisc::fifo::{Fifo, FifoKind};
    use crate::qdisc::tree::{DevSpec, QdiscTree};
    use crate::qdisc::QdiscCtx;

    /// `got` is `want` within the histograms' two significant digits.
    fn near(got: u64, want: u64) -> bool {
        got.abs_diff(want) * 100 <= want.max(1)
    }

    /// A lane on a pfifo with `params` and the stage observer.
    fn lane(params: LinkParams) -> Lane {
        let fifo = Fifo::new(FifoKind::Pfifo, QdiscCtx::default());
        let dev = DevSpec::new(crate::dir::Dir::LeftToRight, crate::qdisc::kinds::BUILTIN);
        let mut lane = Lane::new(Path::new(params, QdiscTree::with_root(dev, Box::new(fifo))));
        lane.set_observer(Box::new(StageObserver::new().unwrap()));
        lane
    }

    fn emulated(lane: &mut Lane) -> ([LatenessSummary; 5], u64) {
        lane.path_mut()
            .observer_mut::<StageObserver>()
            .unwrap()
            .summary()
    }

    /// The wall-clock stages with a fake clock: the read from its start to
    /// its return, classify from there to the next reading, nothing for a
    /// read that returned no frame; the summary is kept until new records.
    #[test]
    fn wall_stages_time_each_step_from_the_readings_given() {
        let t = Instant::from_nanos;
        let mut w = WallStages::new().unwrap();
        w.ingressed(t(50)); // no frame read yet: nothing
        w.read(t(1_000), t(3_500));
        w.ingressed(t(4_300));
        w.ingressed(t(9_000)); // an empty read's iteration: nothing more
        w.read(t(10_000), t(12_000));
        w.ingressed(t(12_700));
        w.span(Wall::Release, t(20_000), t(21_100));
        w.span(Wall::Write, t(21_100), t(33_100));
        let [read, classify, release, write] = w.summary();
        assert_eq!((read.samples, classify.samples), (2, 2));
        assert!(
            near(read.p50_ns, 2_000) && near(read.max_ns, 2_500),
            "{read:?}"
        );
        assert!(
            near(classify.p50_ns, 700) && near(classify.p99_ns, 800),
            "{classify:?}"
        );
        assert_eq!((release.samples, write.samples), (1, 1));
        assert!(near(release.p50_ns, 1_100), "{release:?}");
        assert!(near(write.p99_ns, 12_000), "{write:?}");
        assert_eq!(w.summary()[0], read, "unchanged without new records");
        w.read(t(40_000), t(40_000));
        let again = w.summary()[0];
        assert_eq!(
            (again.samples, again.p50_ns),
            (3, read.p50_ns),
            "recomputed"
        );
    }

    /// Two 214-byte frames 10 µs apart through 100 Mbit/s (24 bytes of
    /// overhead) and 5 ms: each is 238 × 8 / 10⁸ s = 19.04 µs on the wire;
    /// the second waits in the ring for the first's last 9.04 µs; both
    /// propagate 5 ms and are delivered on arrival (rx-frames 1).
    #[test]
    fn emulated_stages_follow_each_frame_in_logical_time() {
        let mut lane = lane(LinkParams {
            overhead: 24,
            delay_ns: 5_000_000,
            ..LinkParams::default()
        });
        lane.ingress(vec![0; 214], Instant::ZERO);
        lane.ingress(vec![0; 214], Instant::from_micros(10));
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        lane.poll(Instant::from_millis(10), &mut out, &mut freed);
        assert_eq!(out.len(), 2);
        let ([qdisc, ring, serializer, delay, coalescing], untracked) = emulated(&mut lane);
        assert_eq!(untracked, 0);
        for s in [qdisc, ring, serializer, delay, coalescing] {
            assert_eq!(s.samples, 2);
        }
        assert_eq!(
            (qdisc.max_ns, coalescing.max_ns),
            (1, 1),
            "bypassed, no coalescing"
        );
        assert_eq!(ring.p50_ns, 1, "the first found the wire free");
        // Exact, not the histogram's bucket bounds (9 040 would read 9 087,
        // 5 ms 5 013 503): quantiles lie within the exact extremes.
        assert_eq!(ring.max_ns, 9_040, "{ring:?}");
        assert_eq!((serializer.p50_ns, serializer.max_ns), (19_040, 19_040));
        assert_eq!(
            (delay.p50_ns, delay.p999_ns, delay.max_ns),
            (5_000_000, 5_000_000, 5_000_000)
        );
    }

    /// A ring of one descriptor without BQL, rx-usecs 100 and rx-frames 2,
    /// three 1000-byte frames at 0 (80 µs on the wire each): A goes on the
    /// wire, B bypasses the qdisc into the driver's requeue slot (the ring
    /// stage) until A's completion at 80 µs, C waits in the qdisc until
    /// B's at 160. They reach the NIC at 80, 160 and 240 µs: the second
    /// frame fires the interrupt for A and B (A waited 80 µs), C alone
    /// waits the 100 µs timer. Then a dropped frame is not followed, and
    /// frames whose slot was taken are counted as not followed.
    #[test]
    fn qdisc_ring_coalescing_drops_and_lost_slots() {
        let mut lane = lane(LinkParams {
            tx_ring: 1,
            bql: false,
            rx_usecs: 100,
            rx_frames: 2,
            ..LinkParams::default()
        });
        for _ in 0..3 {
            lane.ingress(vec![0; 1000], Instant::ZERO);
        }
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        lane.poll(Instant::from_millis(10), &mut out, &mut freed);
        assert_eq!(out.len(), 3);
        let ([qdisc, ring, serializer, delay, coalescing], _) = emulated(&mut lane);
        // p50 and max, µs (0 for the 1 ns a zero is recorded as).
        let check = |s: LatenessSummary, p50: u64, max: u64| {
            assert!(near(s.p50_ns, (p50 * 1000).max(1)), "{s:?}");
            assert!(near(s.max_ns, (max * 1000).max(1)), "{s:?}");
        };
        check(qdisc, 0, 160);
        check(ring, 0, 80);
        check(serializer, 80, 80);
        check(delay, 0, 0);
        check(coalescing, 80, 100);

        let mut obs = StageObserver::new().unwrap();
        let mut pkt = crate::packet::Packet::from_frame(vec![0; 64], Instant::ZERO);
        obs.event(PathEvent::Enqueued, &pkt, Instant::ZERO);
        obs.event(
            PathEvent::Dropped(crate::packet::DropReason::QueueFull),
            &pkt,
            Instant::ZERO,
        );
        obs.event(PathEvent::Delivered, &pkt, Instant::ZERO);
        pkt.meta.id = 1;
        obs.event(PathEvent::Bypassed, &pkt, Instant::ZERO);
        pkt.meta.id = 1 + TRACKED as u64;
        obs.event(PathEvent::Bypassed, &pkt, Instant::ZERO);
        pkt.meta.id = 1;
        obs.event(PathEvent::Delivered, &pkt, Instant::ZERO);
        let (stages, untracked) = obs.summary();
        assert_eq!(
            untracked, 2,
            "the dropped frame and the one whose slot was taken"
        );
        assert!(stages.iter().all(|s| s.samples == 0));
    }
}
