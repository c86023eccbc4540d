//! The two directions of the emulated link, left→right and right→left, and
//! the ingress checks in front of them: frames shorter than an Ethernet
//! header (runts) and frames longer than the MTU allows (14 bytes of header
//! plus 4 per VLAN tag) are dropped and counted in their direction; the rest
//! are numbered, classified once and handed to that direction's `Path`. A
//! GSO super-frame passing whole (`ingress_whole`) is checked by its largest
//! segment; a super-frame read with its offload header
//! (`ingress_offloaded`) passes whole or is segmented first, as the lane's
//! GSO bound (`set_gso`, from `link::offload::GsoPolicy`) says.
//!
//! Each direction is a `Lane` that owns everything it needs (its path, its
//! frame numbers, its refused buffers, its tap), so whoever drives a
//! direction owns it whole: the live datapath runs each lane on a thread of
//! its own (`Bridge::into_lanes`), the simulator drives each lane itself. With a `FrameTap` installed (the
//! packet capture, `crate::capture`, implements it), a lane shows it every
//! frame it takes in, every frame it hands out and every frame it frees
//! (with the reason). What happens inside, between those edges (qdisc
//! enqueue, dequeue or bypass, drops), a `PathObserver` installed in the
//! lane's path sees (the simulator's, `crate::sim::observe`); the live
//! datapath installs none.

use crate::dir::Dir;
use crate::link::offload::GsoPolicy;
use crate::link::path::{ConservationError, PathObserver, PathSnapshot};
use crate::link::Path;
use crate::packet::gso::{self, Segmenter, VnetHdr};
use crate::packet::pool::Buffers;
use crate::packet::{DropReason, Packet, PacketMeta};
use crate::qdisc::{FlowListing, Qdisc};
use crate::time::{earliest, Instant};

/// Ethernet header without FCS.
const ETH_HLEN: usize = 14;
const VLAN_HLEN: usize = 4;
/// 802.1Q and 802.1ad (QinQ) tag protocol identifiers.
const ETH_P_8021Q: u16 = 0x8100;
const ETH_P_8021AD: u16 = 0x88A8;

/// The offload state a frame enters the path with: a plain frame's is
/// all zero.
#[derive(Clone, Copy, Default)]
struct Gso {
    /// The header it is written out with.
    offload: VnetHdr,
    /// Its segments if it is a super-frame, else 0.
    segments: u32,
}

/// Where in a lane a tap saw a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    /// The frame entered the lane: read from the sending namespace's TAP,
    /// before the path's qdisc.
    In,
    /// The frame left the lane: released by the path, to be written to the
    /// receiving namespace's TAP.
    Out,
    /// The frame was dropped in the lane (refused at ingress, or dropped by the
    /// path), with the reason it is counted under.
    Dropped(DropReason),
}

/// Counters of one direction's tap (in the stats and the metrics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CaptureCounters {
    /// Records written to the file.
    pub captured: u64,
    /// Records lost because the writer fell behind (channel full).
    pub dropped: u64,
    /// Records lost to write errors (disk full...).
    pub write_errors: u64,
}

/// What a lane shows the frames at its edges to, on the per-frame path: it
/// must neither block nor allocate once warmed up.
pub trait FrameTap: Send {
    /// `frame` seen at `point` at `at`.
    fn frame(&mut self, point: Point, frame: &[u8], at: Instant);
    /// What the tap has written and lost so far (for `bloatbox stats` and the
    /// metrics).
    fn counters(&self) -> CaptureCounters;
}

/// Both directions at one instant, indexed by `Dir::index()`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct BridgeSnapshot {
    /// When the snapshot was taken, on the driver's clock.
    pub at: Instant,
    /// Both directions' path snapshots, by `Dir::index()`.
    pub paths: [PathSnapshot; 2],
    /// Capture counters by `Dir::index()`, while a capture runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<[CaptureCounters; 2]>,
}

impl BridgeSnapshot {
    /// The snapshot of direction `dir`'s path.
    pub fn path(&self, dir: Dir) -> &PathSnapshot {
        &self.paths[dir.index()]
    }
}

/// One direction of the bridge: its ingress checks, its path and its tap.
pub struct Lane {
    path: Path,
    /// Sequence number given to the next admitted frame.
    next_id: u64,
    /// Frames refused at ingress, returned by the next `poll`.
    rejected: Vec<Packet>,
    now: Instant,
    tap: Option<Box<dyn FrameTap>>,
    /// Super-frames whose length is at most this pass whole (others are
    /// segmented); None: all are segmented (`GsoPolicy::whole_up_to`).
    whole_up_to: Option<u64>,
}

/// Bytes of VLAN tags after the MAC addresses (nested tags allowed).
fn vlan_tag_bytes(frame: &[u8]) -> usize {
    let mut off = 12;
    while let Some(tpid) = frame.get(off..off + 2) {
        let tpid = u16::from_be_bytes([tpid[0], tpid[1]]);
        if tpid != ETH_P_8021Q && tpid != ETH_P_8021AD {
            break;
        }
        off += VLAN_HLEN;
    }
    off - 12
}

impl Lane {
    /// A lane around `path`, with no tap and its clock at `Instant::ZERO` until
    /// the first frame.
    pub fn new(path: Path) -> Lane {
        Lane {
            path,
            next_id: 0,
            rejected: Vec::new(),
            now: Instant::ZERO,
            tap: None,
            whole_up_to: None,
        }
    }

    /// Decides which super-frames pass whole from now on, for the path as
    /// it is at `now`: `policy` None when the ports carry no offload
    /// headers (all are segmented), else `GsoPolicy::whole_up_to` for the
    /// path's parameters, shape and qdisc tree (its device's table of
    /// kinds says which kinds shape). Called again whenever any of those
    /// changes.
    pub fn set_gso(&mut self, policy: Option<&GsoPolicy>, now: Instant) {
        let path = &self.path;
        let tree = path.qdisc();
        self.whole_up_to = policy.and_then(|p| {
            p.whole_up_to(
                path.params(),
                path.shape(),
                &tree.dump(now),
                tree.dev().kinds,
            )
        });
    }

    /// Shows every frame from now on to `tap`.
    pub fn set_tap(&mut self, tap: Box<dyn FrameTap>) {
        self.tap = Some(tap);
    }

    /// Shows what happens inside the lane's path from now on to
    /// `observer` (see `Path::set_observer`).
    pub fn set_observer(&mut self, observer: Box<dyn PathObserver>) {
        self.path.set_observer(observer);
    }

    /// The lane's path (qdisc tree, ring, link stages), to read its counters.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The lane's path, to change it at run time (tc and ethtool requests).
    pub fn path_mut(&mut self) -> &mut Path {
        &mut self.path
    }

    /// A frame refused before the lane could take it (no buffer for it):
    /// counted in and dropped, and shown to the tap as such.
    pub fn reject(&mut self, frame: &[u8], reason: DropReason, now: Instant) {
        let len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        self.path.count_rejected(len, reason);
        if let Some(tap) = &mut self.tap {
            tap.frame(Point::In, frame, now);
            tap.frame(Point::Dropped(reason), frame, now);
        }
    }

    /// A frame read from the sending side at `now`.
    pub fn ingress(&mut self, frame: Vec<u8>, now: Instant) {
        let len = frame.len() as u32;
        self.ingress_accounted(frame, len, len as usize, Gso::default(), now);
    }

    /// A frame of which `frame` holds only the headers (the simulator's,
    /// see `crate::sim::frame`), accounted and checked as `len` bytes.
    pub fn ingress_headers(&mut self, frame: Vec<u8>, len: u32, now: Instant) {
        self.ingress_accounted(frame, len, len as usize, Gso::default(), now);
    }

    /// A GSO super-frame that passes the link whole (see `packet::gso`):
    /// one frame accounted with `wire_len` (what its segments occupy) and
    /// written out with its `offload` header. Its largest segment,
    /// `segment_len` bytes, must fit the MTU like any frame, else the
    /// super-frame is dropped as `Oversize`. It counts as its `segments`
    /// in the qdiscs' Sent packets.
    pub fn ingress_whole(
        &mut self,
        frame: Vec<u8>,
        offload: VnetHdr,
        wire_len: u32,
        segment_len: usize,
        segments: u32,
        now: Instant,
    ) {
        let gso = Gso { offload, segments };
        self.ingress_accounted(frame, wire_len, segment_len, gso, now);
    }

    /// The frame in `rx` (read at `now` into a buffer of
    /// `bufs.super_frames`, up to its size) with its offload header `hdr`:
    /// a plain frame is copied into a frame buffer (its checksum completed
    /// if the header asks); a super-frame within the bound passes whole
    /// (`rx` is handed to the lane and replaced by a fresh super-frame
    /// buffer), any other is segmented into frame buffers
    /// (`packet::gso::Segmenter`, the kernel's `skb_segment`). What cannot
    /// be taken is counted in and dropped: a read that filled the buffer's
    /// size or a header that does not match the frame as `BadOffload`, a
    /// frame or segment larger than a frame buffer as `Oversize`, one with
    /// no buffer left as `PoolExhausted`.
    pub fn ingress_offloaded(
        &mut self,
        rx: &mut Vec<u8>,
        hdr: VnetHdr,
        now: Instant,
        bufs: &mut Buffers,
    ) {
        let n = rx.len();
        let len = u32::try_from(n).unwrap_or(u32::MAX);
        if n >= bufs.super_frames.buf_size() {
            // Filled the buffer: cut short, so its headers cannot be trusted.
            return self.path.count_rejected(len, DropReason::BadOffload);
        }
        if !hdr.is_gso() {
            if n > bufs.frames.buf_size() {
                return self.path.count_rejected(len, DropReason::Oversize);
            }
            let Some(mut buf) = bufs.frames.get() else {
                return self.path.count_rejected(len, DropReason::PoolExhausted);
            };
            buf.extend_from_slice(rx);
            if gso::complete_checksum(&mut buf, &hdr).is_err() {
                bufs.frames.put(buf);
                return self.path.count_rejected(len, DropReason::BadOffload);
            }
            return self.ingress(buf, now);
        }
        let Ok(mut seg) = Segmenter::new(rx, &hdr) else {
            return self.path.count_rejected(len, DropReason::BadOffload);
        };
        if self
            .whole_up_to
            .is_some_and(|bound| seg.wire_len() <= bound)
        {
            let (wire, seg_len, segs) = (seg.wire_len(), seg.max_segment_len(), seg.segments());
            if let Some(fresh) = bufs.super_frames.get() {
                let frame = std::mem::replace(rx, fresh);
                let wire = u32::try_from(wire).unwrap_or(u32::MAX);
                return self.ingress_whole(frame, hdr, wire, seg_len, segs, now);
            }
            // No super-frame buffer left: segment instead.
        }
        // Segments larger than a frame buffer could never pass the MTU.
        let too_big = seg.max_segment_len() > bufs.frames.buf_size();
        loop {
            let buf = if too_big { None } else { bufs.frames.get() };
            match buf {
                Some(mut buf) => {
                    if !seg.next_into(&mut buf) {
                        bufs.frames.put(buf);
                        return;
                    }
                    self.ingress(buf, now);
                }
                None => {
                    let Some(seg_len) = seg.skip() else { return };
                    let reason = if too_big {
                        DropReason::Oversize
                    } else {
                        DropReason::PoolExhausted
                    };
                    self.path.count_rejected(seg_len as u32, reason);
                }
            }
        }
    }

    /// The runt and MTU checks on a frame accounted as `len` bytes whose
    /// largest frame on the wire is `frame_len`; an admitted frame is
    /// numbered and handed to the path, a refused one counted and kept for
    /// recycling.
    fn ingress_accounted(
        &mut self,
        frame: Vec<u8>,
        len: u32,
        frame_len: usize,
        gso: Gso,
        now: Instant,
    ) {
        self.now = self.now.max(now);
        if let Some(tap) = &mut self.tap {
            tap.frame(Point::In, &frame, now);
        }
        let max_len = self.path.params().mtu as usize + ETH_HLEN + vlan_tag_bytes(&frame);
        let reject = if frame.len() < ETH_HLEN {
            Some(DropReason::Runt)
        } else if frame_len > max_len {
            Some(DropReason::Oversize)
        } else {
            None
        };
        if let Some(reason) = reject {
            self.path.count_rejected(len, reason);
            if let Some(tap) = &mut self.tap {
                tap.frame(Point::Dropped(reason), &frame, now);
            }
            self.rejected.push(Packet {
                data: frame,
                len,
                meta: PacketMeta {
                    dropped: Some(reason),
                    ..PacketMeta::default()
                },
            });
            return;
        }
        let mut pkt = Packet::from_frame(frame, now);
        pkt.len = len;
        pkt.meta.offload = gso.offload;
        pkt.meta.gso_segs = gso.segments;
        pkt.meta.id = self.next_id;
        self.next_id += 1;
        self.path.ingress(pkt, now);
    }

    /// Advances the lane to `now`: frames to write to the receiving side
    /// are appended to `out`, freed frames (refused at ingress or dropped
    /// by the path, `meta.dropped` saying why) to `freed`.
    pub fn poll(&mut self, now: Instant, out: &mut Vec<Packet>, freed: &mut Vec<Packet>) {
        self.now = self.now.max(now);
        freed.append(&mut self.rejected);
        let (out_from, freed_from) = (out.len(), freed.len());
        self.path.poll(now, out, freed);
        if let Some(tap) = &mut self.tap {
            for p in &out[out_from..] {
                tap.frame(Point::Out, &p.data, now);
            }
            for p in &freed[freed_from..] {
                // Frames freed by a path always carry their reason.
                let reason = p.meta.dropped.unwrap_or(DropReason::QdiscReset);
                tap.frame(Point::Dropped(reason), &p.data, now);
            }
        }
    }

    /// The next time `poll` has something to do.
    pub fn poll_at(&self) -> Option<Instant> {
        let pending = (!self.rejected.is_empty()).then_some(self.now);
        earliest(pending, self.path.poll_at())
    }

    /// The earliest time `poll` may hand out a frame (`Path::deliver_at`):
    /// when a driver that waits for nothing else needs to poll next.
    pub fn deliver_at(&self) -> Option<Instant> {
        let pending = (!self.rejected.is_empty()).then_some(self.now);
        earliest(pending, self.path.deliver_at())
    }

    /// The tap's counters, while one is installed.
    pub fn tap_counters(&self) -> Option<CaptureCounters> {
        self.tap.as_ref().map(|t| t.counters())
    }
}

/// A direction whose counters break conservation, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {broken}", dir.name())]
pub struct LaneConservationError {
    /// The direction whose path broke it.
    pub dir: Dir,
    /// Its counters.
    pub broken: ConservationError,
}

/// Both lanes, driven together (the live datapath's view).
pub struct Bridge {
    lanes: [Lane; 2],
    /// Scratch lists reused by `poll`.
    out_scratch: Vec<Packet>,
    freed_scratch: Vec<Packet>,
}

impl Bridge {
    /// A bridge of two lanes: `l2r` carries left→right (egress of `left`),
    /// `r2l` right→left.
    pub fn new(l2r: Path, r2l: Path) -> Bridge {
        Bridge {
            lanes: [Lane::new(l2r), Lane::new(r2l)],
            out_scratch: Vec::new(),
            freed_scratch: Vec::new(),
        }
    }

    /// Shows every frame from now on to a tap per direction, by
    /// `Dir::index()` (see `crate::capture`).
    pub fn set_capture<T: FrameTap + 'static>(&mut self, taps: impl Into<[T; 2]>) {
        for (lane, tap) in self.lanes.iter_mut().zip(taps.into()) {
            lane.set_tap(Box::new(tap));
        }
    }

    /// The lane of direction `dir`.
    pub fn lane(&self, dir: Dir) -> &Lane {
        &self.lanes[dir.index()]
    }

    /// The two lanes, by `Dir::index()`, for a driver per direction (the
    /// live datapath runs each on a thread of its own).
    pub fn into_lanes(self) -> [Lane; 2] {
        self.lanes
    }

    /// The lane of direction `dir`, to feed it frames or change its path.
    pub fn lane_mut(&mut self, dir: Dir) -> &mut Lane {
        &mut self.lanes[dir.index()]
    }

    /// See `Lane::reject`.
    pub fn reject(&mut self, dir: Dir, frame: &[u8], reason: DropReason, now: Instant) {
        self.lane_mut(dir).reject(frame, reason, now);
    }

    /// The path of direction `dir`.
    pub fn path(&self, dir: Dir) -> &Path {
        self.lane(dir).path()
    }

    /// The path of direction `dir`, to change it (tc and ethtool requests).
    pub fn path_mut(&mut self, dir: Dir) -> &mut Path {
        self.lane_mut(dir).path_mut()
    }

    /// `Path::check_conservation` of both directions; the error names the
    /// direction.
    pub fn check_conservation(&self) -> Result<(), LaneConservationError> {
        Dir::ALL.into_iter().try_for_each(|dir| {
            self.path(dir)
                .check_conservation()
                .map_err(|broken| LaneConservationError { dir, broken })
        })
    }

    /// A frame read from the `dir` sending side at `now`.
    pub fn ingress(&mut self, dir: Dir, frame: Vec<u8>, now: Instant) {
        self.lane_mut(dir).ingress(frame, now);
    }

    /// Advances both directions to `now`: frames to write to the receiving
    /// side go to `out` with their direction, buffers to recycle to `freed`.
    pub fn poll(&mut self, now: Instant, out: &mut Vec<(Dir, Packet)>, freed: &mut Vec<Vec<u8>>) {
        for (dir, lane) in Dir::ALL.into_iter().zip(&mut self.lanes) {
            lane.poll(now, &mut self.out_scratch, &mut self.freed_scratch);
            out.extend(self.out_scratch.drain(..).map(|p| (dir, p)));
            freed.extend(self.freed_scratch.drain(..).map(|p| p.data));
        }
    }

    /// The next time `poll` has something to do.
    pub fn poll_at(&self) -> Option<Instant> {
        self.lanes.iter().map(Lane::poll_at).fold(None, earliest)
    }

    /// Both directions at `now`, every flow queue listed.
    pub fn snapshot(&self, now: Instant) -> BridgeSnapshot {
        self.snapshot_listing(now, FlowListing::All)
    }

    /// Both directions at `now`, flow queues listed as `listing` says: the
    /// live datapath publishes `FlowListing::Top(n)`, whose cost does not
    /// grow with the number of flows beyond one pass over them.
    pub fn snapshot_listing(&self, now: Instant, listing: FlowListing) -> BridgeSnapshot {
        let taps = self.lanes.each_ref().map(Lane::tap_counters);
        BridgeSnapshot {
            at: now,
            paths: self
                .lanes
                .each_ref()
                .map(|l| l.path.snapshot_listing(now, listing)),
            capture: taps
                .iter()
                .any(Option::is_some)
                .then(|| taps.map(Option::unwrap_or_default)),
        }
    }
}

/// Bridges, frames and a run to the end, for the bridge's tests and those of
/// the layers above (capture).
#[cfg(any(test, feature = "testutil"))]
pub mod testutil {
    use super::*;
    use crate::link::LinkParams;
    use crate::qdisc::fifo::{Fifo, FifoKind};
    use crate::qdisc::tree::{DevSpec, QdiscTree};
    use crate::qdisc::QdiscCtx;

    /// Two paths at 12.5 MB/s with pfifo and 10 ms (left→right) and 20 ms
    /// (right→left) of delay.
    pub fn bridge() -> Bridge {
        let path = |dir, delay_ms| {
            let pfifo = Fifo::new(FifoKind::Pfifo, QdiscCtx::default());
            Path::new(
                LinkParams {
                    delay_ns: delay_ms * crate::time::NS_PER_MS,
                    ..LinkParams::default()
                },
                QdiscTree::with_root(DevSpec::new(dir, &[]), Box::new(pfifo)),
            )
        };
        Bridge::new(path(Dir::LeftToRight, 10), path(Dir::RightToLeft, 20))
    }

    /// An IPv4 Ethernet frame of `len` bytes, VLAN-tagged with TPID `tag`.
    pub fn frame(len: usize, tag: Option<u16>) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[12..14].copy_from_slice(&tag.unwrap_or(0x0800).to_be_bytes());
        if tag.is_some() {
            f[16..18].copy_from_slice(&0x0800u16.to_be_bytes());
        }
        f
    }

    /// (direction, frame id, delivery time) of every delivered frame.
    pub type Delivered = Vec<(Dir, u64, Instant)>;

    /// Polls `b` until nothing is left: what was delivered, and the buffers
    /// freed.
    pub fn run(b: &mut Bridge) -> (Delivered, Vec<Vec<u8>>) {
        let (mut out, mut freed, mut got) = (Vec::new(), Vec::new(), Vec::new());
        while let Some(t) = b.poll_at() {
            b.poll(t, &mut out, &mut freed);
            got.extend(out.drain(..).map(|(d, p): (Dir, Packet)| (d, p.meta.id, t)));
        }
        (got, freed)
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::{bridge, frame, run};
    use super::*;
    use crate::link::LinkParams;
    use crate::packet::pool::{PacketPool, FRAME_OVERHEAD, GSO_FRAME_BUF};
    use crate::qdisc::tree::DevSpec;
    use crate::qdisc::QdiscCtx;

    #[test]
    fn directions_are_independent_and_numbered() {
        let mut b = bridge();
        b.ingress(Dir::LeftToRight, frame(100, None), Instant::ZERO);
        b.ingress(Dir::RightToLeft, frame(100, None), Instant::ZERO);
        b.ingress(Dir::LeftToRight, frame(100, None), Instant::ZERO);
        let (got, freed) = run(&mut b);
        assert!(freed.is_empty());
        let l2r: Vec<u64> = got
            .iter()
            .filter(|g| g.0 == Dir::LeftToRight)
            .map(|g| g.1)
            .collect();
        assert_eq!(l2r, vec![0, 1]);
        let r2l: Vec<_> = got.iter().filter(|g| g.0 == Dir::RightToLeft).collect();
        assert_eq!(r2l.len(), 1);
        assert_eq!(r2l[0].1, 0);
        // 100 B at 12.5 MB/s = 8 us, then 20 ms of delay.
        assert_eq!(r2l[0].2, Instant::from_nanos(8_000 + 20_000_000));
        let s = b.snapshot(Instant::from_millis(1000));
        assert_eq!(s.path(Dir::LeftToRight).counters.frames_out, 2);
        assert_eq!(s.path(Dir::RightToLeft).counters.frames_out, 1);
    }

    /// A TCP super-frame of `segs` segments of 1000 bytes of payload (1054
    /// on the wire each), as a TAP with offload hands it over, and its
    /// header.
    fn super_frame(segs: usize) -> (Vec<u8>, VnetHdr) {
        let mut f = Vec::new();
        etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(40000, 5201, 1, 512)
            .write(&mut f, &vec![7u8; segs * 1000])
            .unwrap();
        let hdr = gso::make_super_frame(&mut f, 1000).unwrap();
        (f, hdr)
    }

    #[test]
    fn a_lane_passes_super_frames_whole_or_segments_them_as_set() {
        let policy = GsoPolicy {
            whole_min_rate_bytes_ps: 0,
            forward_gro: false,
        };
        // (policy, super-frame buffers, frames the path takes in)
        for (policy, supers, frames_in) in [
            (Some(&policy), 4, 1),
            (None, 4, 5),
            // No buffer to keep it whole in: segmented.
            (Some(&policy), 0, 5),
        ] {
            let mut b = bridge();
            let mut bufs = Buffers {
                frames: PacketPool::new(1500 + FRAME_OVERHEAD, 64),
                super_frames: PacketPool::new(GSO_FRAME_BUF, supers),
            };
            let lane = b.lane_mut(Dir::LeftToRight);
            lane.set_gso(policy, Instant::ZERO);
            let (mut rx, hdr) = super_frame(5);
            let read = rx.clone();
            lane.ingress_offloaded(&mut rx, hdr, Instant::ZERO, &mut bufs);
            if frames_in == 1 {
                assert!(rx.is_empty(), "a fresh receive buffer is left");
                assert!(rx.capacity() >= GSO_FRAME_BUF);
            } else {
                assert_eq!(rx, read, "the receive buffer is left as read");
            }
            let (got, freed) = run(&mut b);
            assert_eq!((got.len(), freed.len()), (frames_in, 0));
            let s = b.snapshot(Instant::from_millis(1000));
            let p = s.path(Dir::LeftToRight);
            assert_eq!(
                (p.counters.frames_in, p.counters.bytes_in),
                (frames_in as u64, 5270)
            );
            // Sent counts the segments, whole or not (`bstats_update`).
            let q = &p.qdisc.stats;
            assert_eq!((q.packets, q.bytes), (5, 5270));
        }
        // A read that filled its buffer, and a header that does not match
        // the frame, are counted in and dropped as BadOffload.
        let mut b = bridge();
        let mut bufs = Buffers {
            frames: PacketPool::new(1500 + FRAME_OVERHEAD, 64),
            super_frames: PacketPool::new(GSO_FRAME_BUF, 4),
        };
        let lane = b.lane_mut(Dir::LeftToRight);
        let (mut rx, mut hdr) = super_frame(2);
        let mut filled = rx.clone();
        filled.resize(GSO_FRAME_BUF, 0);
        lane.ingress_offloaded(&mut filled, hdr, Instant::ZERO, &mut bufs);
        hdr.gso_type = gso::GSO_TCPV6;
        lane.ingress_offloaded(&mut rx, hdr, Instant::ZERO, &mut bufs);
        let s = b.snapshot(Instant::ZERO);
        let c = &s.path(Dir::LeftToRight).counters;
        assert_eq!(c.frames_in, 2);
        assert_eq!(c.drops[DropReason::BadOffload.index()], 2);
    }

    #[test]
    fn runts_and_oversize_frames_are_dropped_and_returned() {
        let mut b = bridge();
        b.ingress(Dir::LeftToRight, vec![0u8; 13], Instant::ZERO);
        b.ingress(Dir::LeftToRight, frame(1515, None), Instant::ZERO);
        b.ingress(Dir::LeftToRight, frame(1514, None), Instant::ZERO);
        b.ingress(Dir::RightToLeft, frame(1518, Some(0x8100)), Instant::ZERO);
        b.ingress(Dir::RightToLeft, frame(1519, Some(0x8100)), Instant::ZERO);
        b.ingress(Dir::RightToLeft, Vec::new(), Instant::ZERO);
        assert_eq!(
            b.poll_at(),
            Some(Instant::ZERO),
            "rejected buffers are pending"
        );
        let (got, freed) = run(&mut b);
        assert_eq!(got.len(), 2);
        assert_eq!(freed.len(), 4);
        let s = b.snapshot(Instant::ZERO);
        let l2r = &s.path(Dir::LeftToRight).counters;
        assert_eq!(l2r.drops[DropReason::Runt.index()], 1);
        assert_eq!(l2r.drops[DropReason::Oversize.index()], 1);
        assert_eq!(l2r.frames_in, 3);
        let r2l = &s.path(Dir::RightToLeft).counters;
        assert_eq!(r2l.drops[DropReason::Runt.index()], 1);
        assert_eq!(r2l.drops[DropReason::Oversize.index()], 1);
        for dir in Dir::ALL {
            let p = s.path(dir);
            assert_eq!(
                p.counters.frames_in,
                p.counters.frames_out + p.counters.total_drops()
            );
        }
        assert!(serde_json::to_string(&s).is_ok());
    }

    #[test]
    fn each_lane_can_move_to_a_thread_of_its_own() {
        fn send<T: Send>() {}
        send::<Lane>();
    }

    #[test]
    fn a_lane_driven_alone_accounts_header_only_frames_and_says_why_it_freed() {
        let mut b = bridge();
        let lane = b.lane_mut(Dir::LeftToRight);
        // 60 bytes of headers accounted as a full 1514-byte frame: admitted.
        lane.ingress_headers(frame(60, None), 1514, Instant::ZERO);
        // Accounted beyond the MTU, or shorter than an Ethernet header.
        lane.ingress_headers(frame(60, None), 1515, Instant::ZERO);
        lane.ingress_headers(vec![0u8; 13], 100, Instant::ZERO);
        assert_eq!(lane.poll_at(), Some(Instant::ZERO));
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        while let Some(t) = lane.poll_at() {
            lane.poll(t, &mut out, &mut freed);
        }
        let freed: Vec<_> = freed.iter().map(|p| (p.len, p.meta.dropped)).collect();
        assert_eq!(
            freed,
            vec![
                (1515, Some(DropReason::Oversize)),
                (100, Some(DropReason::Runt))
            ]
        );
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].len, out[0].data.len(), out[0].meta.id),
            (1514, 60, 0)
        );
        // 1514 B at 12.5 MB/s = 121.12 us, then 10 ms of delay.
        assert_eq!(
            out[0].meta.delivered(),
            Instant::from_nanos(121_120 + 10_000_000)
        );
        let c = b.path(Dir::LeftToRight).counters();
        assert_eq!((c.frames_in, c.bytes_in), (3, 1514 + 1515 + 100));
        assert_eq!(b.path(Dir::RightToLeft).counters().frames_in, 0);
        assert_eq!(b.poll_at(), None);
    }

    /// An IPv4/UDP frame of flow `src_port` → 9.
    fn udp(src_port: u16) -> Vec<u8> {
        let b = etherparse::PacketBuilder::ethernet2([2; 6], [4; 6])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(src_port, 9);
        let mut v = Vec::with_capacity(b.size(100));
        b.write(&mut v, &[0u8; 100]).unwrap();
        v
    }

    #[test]
    fn bounded_snapshots_list_the_top_flows_and_sum_up_the_rest() {
        let fq = |dir| {
            let ctx = QdiscCtx {
                handle: 0x8001_0000,
                ..QdiscCtx::default()
            };
            let root = Box::new(crate::qdisc::fq_codel::FqCodel::new(ctx));
            crate::qdisc::tree::QdiscTree::with_root(DevSpec::new(dir, &[]), root)
        };
        let slow = LinkParams {
            rate_bytes_ps: 1000,
            ..LinkParams::default()
        };
        let mut b = Bridge::new(
            Path::new(slow, fq(Dir::LeftToRight)),
            Path::new(slow, fq(Dir::RightToLeft)),
        );
        // Flow i sends i % 7 + 1 frames: backlogs differ.
        for i in 0..300u16 {
            for _ in 0..(i % 7 + 1) {
                b.ingress(Dir::LeftToRight, udp(1000 + i), Instant::ZERO);
            }
        }
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        b.poll(Instant::ZERO, &mut out, &mut freed);
        let t = Instant::from_millis(1);
        let full = b.snapshot(t);
        let top = b.snapshot_listing(t, FlowListing::Top(8));
        let (fq_all, fq_top) = (
            &full.path(Dir::LeftToRight).qdisc,
            &top.path(Dir::LeftToRight).qdisc,
        );
        assert!(fq_all.flows.len() > 100, "{}", fq_all.flows.len());
        assert_eq!(fq_all.other_flows, Default::default());
        assert_eq!(fq_top.flows.len(), 8);
        assert_eq!(
            fq_top.classes.len(),
            8,
            "pseudo-classes of the listed flows"
        );
        let mut backlogs: Vec<u64> = fq_all.flows.iter().map(|f| f.backlog).collect();
        backlogs.sort_unstable_by(|a, b| b.cmp(a));
        let listed: Vec<u64> = fq_top.flows.iter().map(|f| f.backlog).collect();
        assert_eq!(listed, backlogs[..8], "the largest backlogs, largest first");
        let rest = fq_top.other_flows;
        assert_eq!(rest.flows as usize + 8, fq_all.flows.len());
        // The root counts the requeued frames too, as tc shows them.
        let requeued = top.path(Dir::LeftToRight).requeued_flows.bytes;
        assert_eq!(
            rest.backlog + listed.iter().sum::<u64>() + requeued,
            fq_top.stats.backlog,
            "listed + summed up + requeued = the qdisc's backlog"
        );
        // Everything else is the same as the full snapshot.
        assert_eq!(fq_top.stats, fq_all.stats);
        assert_eq!(fq_top.xstats, fq_all.xstats);
        assert_eq!(
            top.path(Dir::LeftToRight).counters.frames_in,
            full.path(Dir::LeftToRight).counters.frames_in
        );
    }

    #[test]
    fn vlan_tags_are_counted() {
        assert_eq!(vlan_tag_bytes(&frame(100, None)), 0);
        assert_eq!(vlan_tag_bytes(&frame(100, Some(0x8100))), 4);
        let mut qinq = frame(100, Some(0x88A8));
        qinq[16..18].copy_from_slice(&0x8100u16.to_be_bytes());
        assert_eq!(vlan_tag_bytes(&qinq), 8);
        // A tag cut short by the end of the frame does not panic.
        assert_eq!(vlan_tag_bytes(&[0x81; 13]), 0);
        let mut short = [0u8; 14];
        short[12] = 0x81;
        assert_eq!(vlan_tag_bytes(&short), 4);
    }

    #[test]
    fn dir_names_and_indices() {
        assert_eq!(Dir::LeftToRight.index(), 0);
        assert_eq!(Dir::RightToLeft.index(), 1);
        assert_eq!(Dir::LeftToRight.reverse(), Dir::RightToLeft);
        assert_ne!(Dir::LeftToRight.name(), Dir::RightToLeft.name());
    }
}
