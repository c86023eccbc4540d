//! One direction of the emulated link (placeholder API; the link work fills
//! it in).

use super::LinkParams;
use crate::packet::{DropReason, Packet};
use crate::qdisc::Qdisc;
use crate::time::Instant;

/// Per-direction conservation counters: `frames_in = frames_out + drops + held`.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PathCounters {
    pub frames_in: u64,
    pub bytes_in: u64,
    pub frames_out: u64,
    pub bytes_out: u64,
    /// Indexed by `DropReason::index()`.
    pub drops: [u64; DropReason::ALL.len()],
}

pub struct Path {
    _params: LinkParams,
    _qdisc: Box<dyn Qdisc>,
}

impl Path {
    pub fn new(params: LinkParams, qdisc: Box<dyn Qdisc>) -> Path {
        Path {
            _params: params,
            _qdisc: qdisc,
        }
    }
    /// A frame arrives from the sending side at `now`.
    pub fn ingress(&mut self, _pkt: Packet, _now: Instant) {
        todo!("link work")
    }
    /// Advances every stage to `now`; frames handed to the receiving side are
    /// appended to `out`; freed frames (drops) are appended to `freed`.
    pub fn poll(&mut self, _now: Instant, _out: &mut Vec<Packet>, _freed: &mut Vec<Packet>) {
        todo!("link work")
    }
    /// The next time `poll` has something to do.
    pub fn poll_at(&self) -> Option<Instant> {
        todo!("link work")
    }
    pub fn counters(&self) -> &PathCounters {
        todo!("link work")
    }
}
