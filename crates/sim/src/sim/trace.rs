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
    /// Its last bit left the sending NIC (on the wire from now).
    Depart,
    /// A TX completion interrupt (a `DriverTrace` line).
    TxCompletion,
    /// An RX interrupt (a `DriverTrace` line).
    RxInterrupt,
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
    /// For an enqueue, the qdisc's verdict: `success`, `drop` or `cn`
    /// (NET_XMIT_SUCCESS, _DROP, _CN; a frame that bypasses the empty
    /// qdisc is a success).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<&'static str>,
}

/// One trace line of the driver, for a batch of frames.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct DriverTrace {
    /// Simulated time, ns.
    pub t: u64,
    /// `tx_completion` or `rx_interrupt`.
    pub ev: EventKind,
    /// The direction.
    pub dir: Dir,
    /// The TX queue of a TX completion under mq (`None` with one queue).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<u16>,
    /// Frames the interrupt handled.
    pub frames: u32,
    /// Their bytes (TX completions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// BQL's limit after a TX completion, bytes (with BQL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bql_limit: Option<u32>,
    /// Bytes BQL counts in the ring after a TX completion (with BQL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bql_inflight: Option<u32>,
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
        let mut h = fx(self.hash, ev.t);
        h = fx(h, ev.pkt);
        h = fx(h, (ev.flow as u64) << 32 | ev.size as u64);
        h = fx(h, ev.ev as u64 | (ev.dir as u64) << 8);
        for b in ev.reason.or(ev.verdict).unwrap_or("").bytes() {
            h = fx(h, b as u64);
        }
        self.hash = h;
        self.write(&ev);
    }

    /// `record` for a driver line.
    pub fn record_driver(&mut self, ev: DriverTrace) {
        let mut h = fx(self.hash, ev.t);
        h = fx(
            h,
            ev.ev as u64 | (ev.dir as u64) << 8 | (ev.frames as u64) << 16,
        );
        h = fx(h, ev.bytes.unwrap_or(0));
        let bql = |v: Option<u32>| v.map_or(u64::MAX, u64::from);
        h = fx(h, bql(ev.bql_limit) << 32 ^ bql(ev.bql_inflight));
        if let Some(q) = ev.queue {
            h = fx(h, u64::from(q));
        }
        self.hash = h;
        self.write(&ev);
    }

    /// Counts a line and writes it if the trace has a sink.
    fn write(&mut self, line: &impl Serialize) {
        self.events += 1;
        if let Some(w) = self.sink.as_mut() {
            let r = serde_json::to_writer(&mut *w, line)
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
            verdict: (kind == EventKind::Enqueue).then_some("success"),
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
            "{\"t\":5,\"ev\":\"enqueue\",\"dir\":\"left_to_right\",\"flow\":1,\"pkt\":2,\"size\":1514,\"verdict\":\"success\"}\n\
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
        // A driver line: its own fields, counted and hashed.
        let line = DriverTrace {
            t: 12,
            ev: EventKind::TxCompletion,
            dir: Dir::RightToLeft,
            queue: None,
            frames: 2,
            bytes: Some(3028),
            bql_limit: Some(6056),
            bql_inflight: Some(0),
        };
        let mut with = Trace::to_writer(Box::new(buf.clone()));
        with.record_driver(line);
        with.record_driver(DriverTrace {
            ev: EventKind::RxInterrupt,
            bytes: None,
            bql_limit: None,
            bql_inflight: None,
            ..line
        });
        with.finish().unwrap();
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert!(text.ends_with(
            "{\"t\":12,\"ev\":\"tx_completion\",\"dir\":\"right_to_left\",\"frames\":2,\"bytes\":3028,\"bql_limit\":6056,\"bql_inflight\":0}\n\
             {\"t\":12,\"ev\":\"rx_interrupt\",\"dir\":\"right_to_left\",\"frames\":2}\n"
        ), "{text}");
        assert_eq!(with.events(), 2);
        let mut once = Trace::hash_only();
        once.record_driver(line);
        assert_ne!(once.hash(), 0);
        let mut fewer = Trace::hash_only();
        fewer.record_driver(DriverTrace { frames: 1, ..line });
        assert_ne!(once.hash(), fewer.hash());
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
