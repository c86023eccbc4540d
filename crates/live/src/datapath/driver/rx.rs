//! The driver's receive side: reading a batch of frames (NAPI's budget of
//! 64 by default) from the port into buffers of the bounded pool (or a
//! scratch buffer, counted as a `PoolExhausted` drop, once it runs out),
//! each stamped with the time it was read, and writing whatever falls due
//! meanwhile without returning to epoll; for ports with offload headers,
//! the lane takes each frame with its header (`Lane::ingress_offloaded`:
//! plain frames, whole GSO super-frames or their segments). A frame a
//! receive ring cut short (`port::is_truncated`) is an `Oversize` drop.

use std::io;

use crate::packet::DropReason;
use crate::time::{Clock, Instant};

use super::Driver;

/// What one read from the port gave.
enum Read {
    /// A frame, handed to the lane.
    Frame,
    /// Nothing is waiting.
    Empty,
    /// The port failed (recorded in `failure`).
    Failed,
}

impl Driver {
    /// Reads up to `batch` frames from the port into the lane, each stamped
    /// with the time its read began; whenever the lane (or the release
    /// pacer) has something due, it is written before the next read, so
    /// reading a batch never delays a departure by more than one read. One
    /// clock reading per frame serves the due check and, when nothing was
    /// written, the next read's start; after writes, the read starts at the
    /// reading that ended the last one, so neither the read stage nor the
    /// frame's time includes them. Returns true if it stopped at the batch
    /// limit, with frames possibly still waiting.
    pub(super) fn read_port(&mut self) -> bool {
        let offload = self.ports.rx.offload();
        for i in 0..self.cfg.batch {
            let now = self.clock.now();
            self.stages.ingressed(now);
            let start = if i == 0 {
                now
            } else if let Some(done) = self.write_due(now) {
                done
            } else {
                // The port written to is gone: the loop ends.
                return false;
            };
            let read = if offload {
                self.read_offloaded(start)
            } else {
                self.read_plain(start)
            };
            match read {
                Read::Frame => self.last_frame = start,
                Read::Empty | Read::Failed => return false,
            }
        }
        let now = self.clock.now();
        self.stages.ingressed(now);
        self.write_due(now).is_some()
    }

    /// Writes what the lane (or the release pacer) has due by `now`.
    /// Returns the latest clock reading (when the last write ended, or
    /// `now`), or None if the port written to is gone.
    fn write_due(&mut self, now: Instant) -> Option<Instant> {
        let mut latest = now;
        if crate::time::earliest(self.lane.poll_at(), self.release_at).is_some_and(|due| due <= now)
        {
            let released = self.poll_lane(now);
            // A batching port sends these with the loop's pass after the
            // batch read (`Driver::run_loop`).
            latest = self.write_unflushed(true, released);
        }
        self.failure.is_none().then_some(latest)
    }

    /// Reads one frame from a port without offload.
    fn read_plain(&mut self, now: Instant) -> Read {
        let Some(mut buf) = self.bufs.frames.get() else {
            return match self.ports.rx.recv(&mut self.discard) {
                Ok(Some(n)) => {
                    let frame = &self.discard[..n.min(self.discard.len())];
                    self.lane.reject(frame, DropReason::PoolExhausted, now);
                    Read::Frame
                }
                Ok(None) => Read::Empty,
                Err(e) => self.read_failed(e),
            };
        };
        match self
            .ports
            .rx
            .recv_vec(&mut buf, self.bufs.frames.buf_size())
        {
            Ok(Some(_)) => {
                self.stages.read(now, self.clock.now());
                self.lane.ingress(buf, now);
                Read::Frame
            }
            Ok(None) => {
                self.bufs.frames.put(buf);
                Read::Empty
            }
            Err(e) => {
                self.bufs.frames.put(buf);
                self.read_failed(e)
            }
        }
    }

    /// A read error: a frame cut short is dropped (and counted), any other
    /// error ends the loop.
    fn read_failed(&mut self, e: io::Error) -> Read {
        if crate::port::is_truncated(&e) {
            self.lane.path_mut().count_rejected(0, DropReason::Oversize);
            return Read::Frame;
        }
        let port = self.rx_port();
        self.fail(port, "reading frames", e);
        Read::Failed
    }

    /// Reads one frame from a port with offload headers.
    fn read_offloaded(&mut self, now: Instant) -> Read {
        let limit = self.bufs.super_frames.buf_size();
        match self.ports.rx.recv_vec(&mut self.rx_gso, limit) {
            Ok(Some((_, hdr))) => {
                self.stages.read(now, self.clock.now());
                self.lane
                    .ingress_offloaded(&mut self.rx_gso, hdr, now, &mut self.bufs);
                Read::Frame
            }
            Ok(None) => Read::Empty,
            // A read shorter than its header: that frame is lost.
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                self.lane
                    .path_mut()
                    .count_rejected(0, DropReason::BadOffload);
                Read::Frame
            }
            Err(e) => self.read_failed(e),
        }
    }
}
