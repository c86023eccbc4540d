//! The driver's transmit side: writing what the bridge released to the
//! port opposite each frame's direction, spaced out by the release pacer
//! when the loop was late, and returning every sent or dropped buffer to
//! the pool it came from.

use crate::dir::Dir;
use crate::packet::pool::PacketPool;
use crate::time::Clock;

use super::super::error::port_gone;
use super::{port_towards, Driver};

impl Driver {
    /// Returns a buffer to the pool it came from (by its size).
    fn recycle(pool: &mut PacketPool, gso_pool: &mut PacketPool, buf: Vec<u8>) {
        if buf.capacity() >= gso_pool.buf_size() {
            gso_pool.put(buf);
        } else {
            pool.put(buf);
        }
    }

    /// Writes what the bridge released, each frame to the port opposite its
    /// direction in the order the link delivered it, and returns every
    /// buffer to the pool. With `pace`, an overdue frame waits as long as
    /// the `ReleasePacer` says (held with the rest of its direction;
    /// `release_at` says until when); without, everything held is written
    /// now. A write error is counted by the port and loses that frame; one
    /// saying the port is gone ends the loop (the frames after it are still
    /// written: to the other port, or counted as errors by the gone one).
    pub(super) fn write_out(&mut self, pace: bool) {
        for (dir, pkt) in self.out.drain(..) {
            self.held[dir.index()].push_back(pkt);
        }
        let mut gone = None;
        self.release_at = None;
        for dir in Dir::ALL {
            let held = &mut self.held[dir.index()];
            while let Some(delivered) = held.front().map(|p| p.meta.delivered) {
                let now = self.clock.now();
                if pace {
                    let at = self.pacer.earliest(dir, delivered, now);
                    if at > now {
                        self.release_at = crate::time::earliest(self.release_at, Some(at));
                        break;
                    }
                }
                let Some(pkt) = held.pop_front() else { break };
                self.last_frame = now;
                self.pacer.written(dir, delivered, now);
                self.release_lateness
                    .saturating_record(now.saturating_since(delivered).max(1));
                let to = port_towards(dir);
                if let Err(e) = self.ports[to].send_offload(&pkt.data, &pkt.meta.offload) {
                    if port_gone(&e) && gone.is_none() {
                        gone = Some((to, e));
                    }
                }
                Self::recycle(&mut self.pool, &mut self.gso_pool, pkt.data);
            }
        }
        if let Some((to, e)) = gone {
            self.fail(to, "writing frames", e);
        }
        for buf in self.freed.drain(..) {
            Self::recycle(&mut self.pool, &mut self.gso_pool, buf);
        }
    }
}
