//! The driver's transmit side: writing what the lane released to the port
//! its direction leads to, spaced out by the release pacer when the loop
//! was late, and returning every sent buffer to the pool it came from.

use crate::time::Clock;

use super::super::error::port_gone;
use super::{recycle, Driver};

impl Driver {
    /// Writes what the lane released, in the order the link delivered it,
    /// and returns every buffer to its pool. With `pace`, an overdue frame
    /// waits as long as the `ReleasePacer` says (held with the rest;
    /// `release_at` says until when); without, everything held is written
    /// now. A write error is counted by the port and loses that frame; one
    /// saying the port is gone ends the loop (the frames after it are still
    /// tried, and counted as errors by the gone port).
    pub(super) fn write_out(&mut self, pace: bool) {
        self.held.extend(self.out.drain(..));
        let mut gone = None;
        self.release_at = None;
        while let Some(delivered) = self.held.front().map(|p| p.meta.delivered) {
            let now = self.clock.now();
            if pace {
                let at = self.pacer.earliest(delivered, now);
                if at > now {
                    self.release_at = Some(at);
                    break;
                }
            }
            let Some(pkt) = self.held.pop_front() else {
                break;
            };
            self.last_frame = now;
            self.pacer.written(delivered, now);
            self.release_lateness
                .saturating_record(now.saturating_since(delivered).max(1));
            if let Err(e) = self.ports.tx.send_offload(&pkt.data, &pkt.meta.offload) {
                if port_gone(&e) && gone.is_none() {
                    gone = Some(e);
                }
            }
            recycle(&mut self.pool, &mut self.gso_pool, pkt.data);
        }
        if let Some(e) = gone {
            let port = self.tx_port();
            self.fail(port, "writing frames", e);
        }
    }
}
