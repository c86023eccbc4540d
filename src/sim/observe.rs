//! Sees when frames leave the qdisc, which `Path` does not report: the
//! simulator wraps each direction's root qdisc in `Observed`, a transparent
//! adapter that forwards every call and logs each dequeue (the frame's
//! simulator tag and time) and each bypass into a shared `DequeueLog`,
//! drained by the engine after every call into the path.

use super::frame::{read_ecn, read_tag, Tag};
use crate::packet::{Drops, Packet};
use crate::qdisc::{Classful, Qdisc, QdiscDump, QdiscStats, TcError, Verdict};
use crate::time::Instant;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// One frame leaving the qdisc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    pub at: Instant,
    /// The frame's tag; `None` for a frame that bypassed the empty qdisc
    /// (the one being ingressed).
    pub tag: Option<Tag>,
    /// It carries CE (set by the qdisc, or already when sent).
    pub ce: bool,
}

/// The log shared by an `Observed` qdisc and the engine (the qdisc must be
/// `Send`, hence a mutex; `pending` lets the engine skip it when empty).
#[derive(Clone, Default)]
pub struct DequeueLog(Arc<LogInner>);

#[derive(Default)]
struct LogInner {
    pending: AtomicUsize,
    entries: Mutex<Vec<Departure>>,
}

impl DequeueLog {
    fn push(&self, d: Departure) {
        let mut entries = self
            .0
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        entries.push(d);
        self.0.pending.store(entries.len(), Ordering::Relaxed);
    }

    /// Moves every logged departure into `into` (in order).
    pub fn drain_into(&self, into: &mut Vec<Departure>) {
        if self.0.pending.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut entries = self
            .0
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        into.append(&mut entries);
        self.0.pending.store(0, Ordering::Relaxed);
    }
}

/// A qdisc that logs its departures and otherwise is `inner`.
pub struct Observed {
    inner: Box<dyn Qdisc>,
    log: DequeueLog,
}

impl Observed {
    pub fn new(inner: Box<dyn Qdisc>, log: DequeueLog) -> Self {
        Observed { inner, log }
    }
}

impl Qdisc for Observed {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
    fn enqueue(&mut self, pkt: Packet, now: Instant, drops: &mut Drops) -> Verdict {
        self.inner.enqueue(pkt, now, drops)
    }
    fn dequeue(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        let pkt = self.inner.dequeue(now, drops)?;
        self.log.push(Departure {
            at: now,
            tag: read_tag(&pkt.data),
            ce: read_ecn(&pkt.data) == Some(3),
        });
        Some(pkt)
    }
    fn peek(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        self.inner.peek(now, drops)
    }
    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        self.inner.next_wakeup(now)
    }
    fn qlen(&self) -> u32 {
        self.inner.qlen()
    }
    fn backlog(&self) -> u64 {
        self.inner.backlog()
    }
    fn counters(&self) -> QdiscStats {
        self.inner.counters()
    }
    fn stats(&self) -> QdiscStats {
        self.inner.stats()
    }
    fn can_bypass(&self) -> bool {
        self.inner.can_bypass()
    }
    fn count_bypass(&mut self, len: u32) {
        self.inner.count_bypass(len);
        // Bypass happens inside `Path::ingress`, for the frame being handed
        // over; the engine knows which one.
        self.log.push(Departure {
            at: Instant::ZERO,
            tag: None,
            ce: false,
        });
    }
    fn reset(&mut self, drops: &mut Drops) {
        self.inner.reset(drops)
    }
    fn change(&mut self, args: &[&str], now: Instant, drops: &mut Drops) -> Result<(), TcError> {
        self.inner.change(args, now, drops)
    }
    fn dump(&self, now: Instant) -> QdiscDump {
        self.inner.dump(now)
    }
    fn as_classful(&mut self) -> Option<&mut dyn Classful> {
        self.inner.as_classful()
    }
    fn drain_all(&mut self) -> Vec<Packet> {
        self.inner.drain_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn logs_dequeues_and_bypasses_and_forwards_the_rest() {
        let log = DequeueLog::default();
        let inner = Box::new(Fifo::new(FifoKind::Pfifo, QdiscCtx::default()));
        let mut q = Observed::new(inner, log.clone());
        let mut drops = Drops::new();
        assert_eq!(q.kind(), "pfifo");
        q.enqueue(frame(7), Instant::from_micros(1), &mut drops);
        q.enqueue(frame(8), Instant::from_micros(1), &mut drops);
        assert_eq!((q.qlen(), q.backlog()), (2, 200));
        assert!(q.dequeue(Instant::from_micros(5), &mut drops).is_some());
        q.count_bypass(100);
        let mut got = Vec::new();
        log.drain_into(&mut got);
        let seen: Vec<_> = got.iter().map(|d| (d.at, d.tag, d.ce)).collect();
        assert_eq!(
            seen,
            vec![
                (
                    Instant::from_micros(5),
                    Some(Tag { slot: 7, serial: 0 }),
                    false
                ),
                (Instant::ZERO, None, false)
            ]
        );
        assert_eq!(q.stats().packets, 2);
        assert_eq!(q.drain_all().len(), 1);
        log.drain_into(&mut got);
        assert_eq!(got.len(), 2, "drain_all is not a departure");
        q.enqueue(frame_tos(9, 3), Instant::from_micros(6), &mut drops);
        q.dequeue(Instant::from_micros(6), &mut drops);
        got.clear();
        log.drain_into(&mut got);
        assert_eq!((got[0].tag.map(|t| t.slot), got[0].ce), (Some(9), true));
    }
}
