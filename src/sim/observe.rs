//! The simulator's `PathObserver`: `DequeueLog` keeps each frame leaving a
//! direction's qdisc (dequeued, or bypassing it empty) with its simulator
//! tag, time and CE mark, which `Path` does not hand out; the engine
//! installs one in each lane and drains it into the trace after every call
//! into that lane.

use super::frame::{read_ecn, read_tag, Tag};
use crate::link::path::{PathEvent, PathObserver};
use crate::packet::Packet;
use crate::time::Instant;

/// One frame leaving the qdisc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    /// When the frame left the qdisc (simulated time).
    pub at: Instant,
    /// Which frame it was (its side-table slot and serial).
    pub tag: Tag,
    /// It carries CE (set by the qdisc, or already when sent).
    pub ce: bool,
}

/// The departures of one direction not yet drained (a frame without a tag
/// is none of the simulator's and not kept).
#[derive(Default)]
pub struct DequeueLog {
    entries: Vec<Departure>,
}

impl DequeueLog {
    /// Moves every logged departure into `into` (in order).
    pub fn drain_into(&mut self, into: &mut Vec<Departure>) {
        into.append(&mut self.entries);
    }
}

impl PathObserver for DequeueLog {
    fn event(&mut self, event: PathEvent, pkt: &Packet, at: Instant) {
        if !matches!(event, PathEvent::Dequeued | PathEvent::Bypassed) {
            return;
        }
        if let Some(tag) = read_tag(&pkt.data) {
            self.entries.push(Departure {
                at,
                tag,
                ce: read_ecn(&pkt.data) == Some(3),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{LinkParams, Path};
    use crate::qdisc::fifo::{Fifo, FifoKind};
    use crate::qdisc::QdiscCtx;
    use crate::sim::frame::{write_frame, Endpoints, L4};

    fn frame(tag: u32) -> Packet {
        frame_tos(tag, 0)
    }

    fn frame_tos(slot: u32, tos: u8) -> Packet {
        let tag = Tag { slot, serial: 0 };
        let ep = Endpoints {
            src: "10.0.0.1:1".parse().unwrap(),
            dst: "10.0.0.2:2".parse().unwrap(),
            from_left: true,
        };
        let mut buf = Vec::new();
        let len = write_frame(&mut buf, &ep, tos, 100, tag, &L4::Udp) as u32;
        let mut p = Packet::from_frame(buf, Instant::ZERO);
        p.len = len;
        p
    }

    fn pfifo() -> Box<Fifo> {
        Box::new(Fifo::new(FifoKind::Pfifo, QdiscCtx::default()))
    }

    fn drain(path: &mut Path) -> Vec<(Instant, u32, bool)> {
        let mut got = Vec::new();
        path.observer_mut::<DequeueLog>()
            .expect("a DequeueLog is installed")
            .drain_into(&mut got);
        got.iter().map(|d| (d.at, d.tag.slot, d.ce)).collect()
    }

    #[test]
    fn logs_dequeues_and_bypasses_and_nothing_else() {
        // One frame on the ring at a time: the first bypasses the empty
        // qdisc; the second bypasses it too (it leaves the qdisc, counted
        // Sent) but waits in the requeue slot for the ring; the third waits
        // in the qdisc. 100 B at 1 MB/s = 100 us.
        let params = LinkParams {
            rate_bytes_ps: 1_000_000,
            tx_ring: 1,
            bql: false,
            ..LinkParams::default()
        };
        let mut path = Path::new(params, pfifo());
        path.set_observer(Box::new(DequeueLog::default()));
        path.ingress(frame(7), Instant::from_micros(1));
        path.ingress(frame(8), Instant::from_micros(1));
        path.ingress(frame_tos(9, 3), Instant::from_micros(2));
        assert_eq!(
            drain(&mut path),
            vec![
                (Instant::from_micros(1), 7, false),
                (Instant::from_micros(1), 8, false)
            ]
        );
        assert_eq!((path.qdisc().qlen(), path.qdisc().backlog()), (1, 100));
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        // Frame 8 goes from the slot to the ring: no second departure.
        path.poll(Instant::from_micros(101), &mut out, &mut freed);
        assert_eq!(drain(&mut path), vec![]);
        assert_eq!(path.snapshot(Instant::from_micros(101)).requeued, 0);
        assert_eq!(path.qdisc().stats().packets, 2);
        // Moving frames into a new qdisc (`drain_all`) is no departure.
        path.replace_qdisc(pfifo(), Instant::from_micros(102));
        assert_eq!(drain(&mut path), vec![]);
        path.poll(Instant::from_micros(201), &mut out, &mut freed);
        assert_eq!(drain(&mut path), vec![(Instant::from_micros(201), 9, true)]);
        while let Some(t) = path.poll_at() {
            path.poll(t, &mut out, &mut freed);
        }
        assert_eq!((out.len(), freed.len()), (3, 0));
        assert_eq!(drain(&mut path), vec![], "deliveries are not departures");
    }
}
