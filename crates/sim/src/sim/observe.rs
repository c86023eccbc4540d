//! The simulator's `PathObserver`: `DequeueLog` keeps, in the order the
//! path reports them, each frame leaving a direction's qdisc (dequeued, or
//! bypassing it empty) with its simulator tag, time and CE mark, each
//! frame leaving the NIC, the driver's TX completion and RX interrupts, and
//! the qdisc's verdict on the frame last offered, none of which `Path`
//! hands out; the engine installs one in each lane and drains it into the
//! trace after every call into that lane.

use super::frame::{read_ecn, read_tag, Tag};
use crate::link::path::{DriverEvent, PathEvent, PathObserver};
use crate::packet::Packet;
use crate::qdisc::Verdict;
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

/// One entry of the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Logged {
    /// A frame left the qdisc.
    Dequeued(Departure),
    /// A frame's last bit left the NIC, at `at`.
    Departed {
        /// When.
        at: Instant,
        /// Which frame.
        tag: Tag,
    },
    /// The driver did `event` at `at`.
    Driver {
        /// When.
        at: Instant,
        /// What.
        event: DriverEvent,
    },
}

/// What one direction reported and the engine has not drained yet (a frame
/// without a tag is none of the simulator's and not kept).
#[derive(Default)]
pub struct DequeueLog {
    entries: Vec<Logged>,
    verdict: Option<Verdict>,
}

impl DequeueLog {
    /// Moves every logged entry into `into` (in order).
    pub fn drain_into(&mut self, into: &mut Vec<Logged>) {
        into.append(&mut self.entries);
    }

    /// The verdict on the frame last offered to the qdisc, once (`None`
    /// for a frame that bypassed it).
    pub fn take_verdict(&mut self) -> Option<Verdict> {
        self.verdict.take()
    }
}

impl PathObserver for DequeueLog {
    fn event(&mut self, event: PathEvent, pkt: &Packet, at: Instant) {
        let Some(tag) = read_tag(&pkt.data) else {
            return;
        };
        match event {
            PathEvent::Dequeued | PathEvent::Bypassed => {
                self.entries.push(Logged::Dequeued(Departure {
                    at,
                    tag,
                    ce: read_ecn(&pkt.data) == Some(3),
                }))
            }
            PathEvent::Departed => self.entries.push(Logged::Departed { at, tag }),
            PathEvent::Enqueued | PathEvent::Dropped(_) | PathEvent::Delivered => {}
        }
    }

    fn verdict(&mut self, verdict: Verdict, _at: Instant) {
        self.verdict = Some(verdict);
    }

    fn driver(&mut self, event: DriverEvent, at: Instant) {
        self.entries.push(Logged::Driver { at, event });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dir::Dir;
    use crate::link::{LinkParams, Path};
    use crate::qdisc::fifo::{Fifo, FifoKind};
    use crate::qdisc::tree::{DevSpec, QdiscTree};
    use crate::qdisc::{Qdisc, QdiscCtx};
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

    /// A device tree whose root is `root`.
    fn tree(root: Fifo) -> QdiscTree {
        let dev = DevSpec::new(Dir::LeftToRight, crate::qdisc::kinds::BUILTIN);
        QdiscTree::with_root(dev, Box::new(root))
    }

    fn pfifo() -> QdiscTree {
        tree(Fifo::new(FifoKind::Pfifo, QdiscCtx::default()))
    }

    /// The frames that left the qdisc since the last drain (the other
    /// entries are dropped: `logs_departures_interrupts_and_verdicts`).
    fn drain(path: &mut Path) -> Vec<(Instant, u32, bool)> {
        let mut got = Vec::new();
        path.observer_mut::<DequeueLog>()
            .expect("a DequeueLog is installed")
            .drain_into(&mut got);
        got.iter()
            .filter_map(|l| match l {
                Logged::Dequeued(d) => Some((d.at, d.tag.slot, d.ce)),
                _ => None,
            })
            .collect()
    }

    /// One frame through a 1 MB/s link with BQL: it bypasses the empty
    /// pfifo (no verdict), leaves the NIC after 100 us, its completion
    /// reaps it at once (tx-usecs 0) with BQL's state, and the RX
    /// interrupt delivers it. Then, behind a 1-slot ring and a pfifo of
    /// limit 1: two frames bypass (the second into the requeue slot), the
    /// third is queued (NET_XMIT_SUCCESS), the fourth dropped
    /// (NET_XMIT_DROP).
    #[test]
    fn logs_departures_interrupts_and_verdicts() {
        let params = LinkParams {
            rate_bytes_ps: 1_000_000,
            ..LinkParams::default()
        };
        let mut path = Path::new(params, pfifo());
        path.set_observer(Box::new(DequeueLog::default()));
        path.ingress(frame(1), Instant::from_micros(0));
        fn log(path: &mut Path) -> &mut DequeueLog {
            path.observer_mut::<DequeueLog>().unwrap()
        }
        assert_eq!(log(&mut path).take_verdict(), None, "bypassed");
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        while let Some(t) = path.poll_at() {
            path.poll(t, &mut out, &mut freed);
        }
        let mut got = Vec::new();
        log(&mut path).drain_into(&mut got);
        let at = Instant::from_micros(100);
        let tag = Tag { slot: 1, serial: 0 };
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(matches!(got[0], Logged::Dequeued(d) if d.tag == tag));
        assert_eq!(got[1], Logged::Departed { at, tag });
        let Logged::Driver {
            at: done,
            event:
                DriverEvent::TxCompletion {
                    queue: None,
                    frames: 1,
                    bytes: 100,
                    bql_limit: Some(_),
                    bql_inflight: Some(0),
                },
        } = got[2]
        else {
            panic!("{got:?}");
        };
        assert_eq!(done, at);
        assert_eq!(
            got[3],
            Logged::Driver {
                at,
                event: DriverEvent::RxInterrupt { frames: 1 }
            }
        );
        // A full qdisc: the frame offered is dropped. Its two places: the
        // frame in the requeue slot takes one (dev_requeue_skb), the third
        // frame the other.
        let mut full = Path::new(
            LinkParams {
                rate_bytes_ps: 1_000,
                tx_ring: 1,
                bql: false,
                ..params
            },
            tree(Fifo::with_limit(FifoKind::Pfifo, QdiscCtx::default(), 2)),
        );
        full.set_observer(Box::new(DequeueLog::default()));
        let verdicts = [
            (1, None),
            (2, None),
            (3, Some(Verdict::Queued)),
            (4, Some(Verdict::Dropped)),
        ];
        for (i, want) in verdicts {
            full.ingress(frame(i), Instant::from_micros(0));
            assert_eq!(log(&mut full).take_verdict(), want, "frame {i}");
        }
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
