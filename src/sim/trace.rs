//! The per-packet event trace: one JSON object per line (`t` in ns, `ev`,
//! `dir`, `flow`, `pkt`, `size`, and `reason` for drops), optionally written
//! to a sink, always folded into a hash so that runs can be compared for
//! determinism without keeping the trace. The hash is a word-wise
//! multiply-rotate fold (the FxHash step): fixed, fast and platform
//! independent, which is all a run fingerprint needs.

use crate::dir::Dir;
use serde::Serialize;
use std::io::Write;

/// The FxHash multiplier.
const FX_K: u64 = 0x517c_c1b7_2722_0a95;

/// One FxHash step (also used for frame digests).
pub fn fx(h: u64, word: u64) -> u64 {
    (h.rotate_left(5) ^ word).wrapping_mul(FX_K)
}

/// What happened to a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Handed to the path (enters the qdisc, or bypasses it).
    Enqueue,
    /// Left the qdisc for the TX ring (immediately for a bypass).
    Dequeue,
    /// Freed by the path; `reason` says why.
    Drop,
    /// Left the qdisc with CE set although sent without it.
    EcnMark,
    /// Handed to the receiving host.
    Deliver,
}

/// One trace line.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TraceEvent {
    /// Simulated time of the event, ns.
    pub t: u64,
    /// What happened.
    pub ev: EventKind,
    /// The direction the frame travels.
    pub dir: Dir,
    /// The flow's index in the scenario.
    pub flow: u32,
    /// The frame's serial number in the run.
    pub pkt: u64,
    /// The frame's accounted length, bytes.
    pub size: u32,
    /// For a drop, the reason's name (`DropReason::name`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
}

/// Where events go.
pub struct Trace {
    hash: u64,
    sink: Option<Box<dyn Write>>,
    events: u64,
    error: Option<std::io::Error>,
}

impl Trace {
    /// A trace that only hashes (and counts).
    pub fn hash_only() -> Self {
        Trace {
            hash: 0,
            sink: None,
            events: 0,
            error: None,
        }
    }

    /// A trace that also writes JSON lines to `sink`.
    pub fn to_writer(sink: Box<dyn Write>) -> Self {
        Trace {
            sink: Some(sink),
            ..Trace::hash_only()
        }
    }

    /// Hashes the event and writes it as a JSON line if the trace has a sink (a
    /// write error is kept and reported at the end).
    pub fn record(&mut self, ev: TraceEvent) {
        self.events += 1;
        let mut h = fx(self.hash, ev.t);
        h = fx(h, ev.pkt);
        h = fx(h, (ev.flow as u64) << 32 | ev.size as u64);
        h = fx(h, ev.ev as u64 | (ev.dir as u64) << 8);
        for b in ev.reason.unwrap_or("").bytes() {
            h = fx(h, b as u64);
        }
        self.hash = h;
        if let Some(w) = self.sink.as_mut() {
            let r = serde_json::to_writer(&mut *w, &ev)
                .map_err(std::io::Error::from)
                .and_then(|()| w.write_all(b"\n"));
            if let Err(e) = r {
                // Keep the first error, stop writing.
                self.error = Some(e);
                self.sink = None;
            }
        }
    }

    /// Events recorded so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Hash of every event so far.
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// Flushes the sink; returns the first write error, if any.
    pub fn finish(&mut self) -> std::io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        match self.sink.as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn ev(t: u64, kind: EventKind) -> TraceEvent {
        TraceEvent {
            t,
            ev: kind,
            dir: Dir::LeftToRight,
            flow: 1,
            pkt: 2,
            size: 1514,
            reason: (kind == EventKind::Drop).then_some("queue_full"),
        }
    }

    #[test]
    fn writes_json_lines_and_hashes() {
        let buf = Shared::default();
        let mut tr = Trace::to_writer(Box::new(buf.clone()));
        tr.record(ev(5, EventKind::Enqueue));
        tr.record(ev(9, EventKind::Drop));
        tr.finish().unwrap();
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "{\"t\":5,\"ev\":\"enqueue\",\"dir\":\"left_to_right\",\"flow\":1,\"pkt\":2,\"size\":1514}\n\
             {\"t\":9,\"ev\":\"drop\",\"dir\":\"left_to_right\",\"flow\":1,\"pkt\":2,\"size\":1514,\"reason\":\"queue_full\"}\n"
        );
        let mut other = Trace::hash_only();
        other.record(ev(5, EventKind::Enqueue));
        other.record(ev(9, EventKind::Drop));
        assert_eq!(tr.hash(), other.hash());
        assert_eq!(other.events(), 2);
        let mut third = Trace::hash_only();
        third.record(ev(5, EventKind::Enqueue));
        third.record(ev(10, EventKind::Drop));
        assert_ne!(third.hash(), other.hash());
    }

    struct Failing;
    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn write_errors_surface_at_finish() {
        let mut tr = Trace::to_writer(Box::new(Failing));
        tr.record(ev(1, EventKind::Deliver));
        tr.record(ev(2, EventKind::Deliver));
        assert_eq!(tr.events(), 2);
        assert!(tr.finish().unwrap_err().to_string().contains("disk full"));
    }
}
