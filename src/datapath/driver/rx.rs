//! The driver's receive side: reading a batch of frames (NAPI's budget of
//! 64 by default) from the port into buffers of the bounded pool (or a
//! scratch buffer, counted as a `PoolExhausted` drop, once it runs out),
//! each stamped with the time it was read, and writing whatever falls due
//! meanwhile without returning to epoll; and, for ports with offload
//! headers, handing plain frames, whole GSO super-frames or their segments
//! to the lane.

use std::io;

use crate::bridge::Lane;
use crate::packet::gso::{self, Segmenter, VnetHdr};
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
    /// with the time it was read; whenever the lane (or the release pacer)
    /// has something due, it is written before the next read, so reading a
    /// batch never delays a departure by more than one read. Returns true
    /// if it stopped at the batch limit, with frames possibly still
    /// waiting.
    pub(super) fn read_port(&mut self) -> bool {
        let offload = self.ports.rx.offload();
        for _ in 0..self.cfg.batch {
            let now = self.clock.now();
            let read = if offload {
                self.read_offloaded(now)
            } else {
                self.read_plain(now)
            };
            match read {
                Read::Frame => self.last_frame = now,
                Read::Empty | Read::Failed => return false,
            }
            let now = self.clock.now();
            if crate::time::earliest(self.lane.poll_at(), self.release_at)
                .is_some_and(|due| due <= now)
            {
                self.poll_lane(now);
                self.write_out(true);
                if self.failure.is_some() {
                    // The port written to is gone: the loop ends.
                    return false;
                }
            }
        }
        true
    }

    /// Reads one frame from a port without offload.
    fn read_plain(&mut self, now: Instant) -> Read {
        let port = self.rx_port();
        let Some(mut buf) = self.pool.get() else {
            return match self.ports.rx.recv(&mut self.discard) {
                Ok(Some(n)) => {
                    let frame = &self.discard[..n.min(self.discard.len())];
                    self.lane.reject(frame, DropReason::PoolExhausted, now);
                    Read::Frame
                }
                Ok(None) => Read::Empty,
                Err(e) => {
                    self.fail(port, "reading frames", e);
                    Read::Failed
                }
            };
        };
        match self.ports.rx.recv(&mut buf) {
            Ok(Some(n)) => {
                buf.truncate(n);
                self.lane.ingress(buf, now);
                Read::Frame
            }
            Ok(None) => {
                self.pool.put(buf);
                Read::Empty
            }
            Err(e) => {
                self.pool.put(buf);
                self.fail(port, "reading frames", e);
                Read::Failed
            }
        }
    }

    /// Reads one frame from a port with offload headers.
    fn read_offloaded(&mut self, now: Instant) -> Read {
        match self.ports.rx.recv_offload(&mut self.rx_gso) {
            Ok(Some((n, hdr))) => {
                self.ingress_offloaded(n, hdr, now);
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
            Err(e) => {
                let port = self.rx_port();
                self.fail(port, "reading frames", e);
                Read::Failed
            }
        }
    }

    /// Hands the `n`-byte frame in `rx_gso` to the lane: copied if plain,
    /// whole or segmented if a super-frame.
    fn ingress_offloaded(&mut self, n: usize, hdr: VnetHdr, now: Instant) {
        let len = u32::try_from(n).unwrap_or(u32::MAX);
        let reject =
            |lane: &mut Lane, len: u32, reason| lane.path_mut().count_rejected(len, reason);
        if n >= self.rx_gso.len() {
            // Filled the buffer: cut short, so its headers cannot be trusted.
            return reject(&mut self.lane, len, DropReason::BadOffload);
        }
        if !hdr.is_gso() {
            if n > self.pool.buf_size() {
                return reject(&mut self.lane, len, DropReason::Oversize);
            }
            let Some(mut buf) = self.pool.get() else {
                return reject(&mut self.lane, len, DropReason::PoolExhausted);
            };
            buf.clear();
            buf.extend_from_slice(&self.rx_gso[..n]);
            if gso::complete_checksum(&mut buf, &hdr).is_err() {
                self.pool.put(buf);
                return reject(&mut self.lane, len, DropReason::BadOffload);
            }
            return self.lane.ingress(buf, now);
        }
        let Ok(mut seg) = Segmenter::new(&self.rx_gso[..n], &hdr) else {
            return reject(&mut self.lane, len, DropReason::BadOffload);
        };
        if self
            .whole_up_to
            .is_some_and(|bound| seg.wire_len() <= bound)
        {
            let (wire, seg_len) = (seg.wire_len(), seg.max_segment_len());
            if let Some(fresh) = self.gso_pool.get() {
                let mut frame = std::mem::replace(&mut self.rx_gso, fresh);
                frame.truncate(n);
                let wire = u32::try_from(wire).unwrap_or(u32::MAX);
                return self.lane.ingress_whole(frame, hdr, wire, seg_len, now);
            }
            // No 64 KB buffer left: segment instead.
        }
        // Segments larger than a pool buffer could never pass the MTU.
        let too_big = seg.max_segment_len() > self.pool.buf_size();
        loop {
            let buf = if too_big { None } else { self.pool.get() };
            match buf {
                Some(mut buf) => {
                    if !seg.next_into(&mut buf) {
                        self.pool.put(buf);
                        return;
                    }
                    self.lane.ingress(buf, now);
                }
                None => {
                    let Some(seg_len) = seg.skip() else { return };
                    let reason = if too_big {
                        DropReason::Oversize
                    } else {
                        DropReason::PoolExhausted
                    };
                    reject(&mut self.lane, seg_len as u32, reason);
                }
            }
        }
    }
}
