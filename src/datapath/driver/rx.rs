//! The driver's receive side: reading a batch of frames from a port into
//! buffers of the bounded pool (or a scratch buffer, counted as a
//! `PoolExhausted` drop, once it runs out), each stamped with the time it
//! was read; and, for ports with offload headers, handing plain frames,
//! whole GSO super-frames or their segments to the bridge.

use std::io;

use crate::bridge::Bridge;
use crate::dir::Dir;
use crate::packet::gso::{self, Segmenter, VnetHdr};
use crate::packet::DropReason;
use crate::time::{Clock, Instant};

use super::{dir_from, Driver};

impl Driver {
    /// Reads up to `batch` frames from port `i` into the bridge, each
    /// stamped with the time it was read. Returns true if it stopped with
    /// frames possibly still waiting: at the batch limit, or early because
    /// the bridge has a departure due (see `read_time`).
    pub(super) fn read_port(&mut self, i: usize) -> bool {
        if self.ports[i].offload() {
            return self.read_offload_port(i);
        }
        for k in 0..self.cfg.batch {
            let Some(now) = self.read_time(k) else {
                return true;
            };
            let Some(mut buf) = self.pool.get() else {
                match self.ports[i].recv(&mut self.discard) {
                    Ok(Some(n)) => {
                        self.last_frame = now;
                        let frame = &self.discard[..n.min(self.discard.len())];
                        self.bridge
                            .reject(dir_from(i), frame, DropReason::PoolExhausted, now);
                        continue;
                    }
                    Ok(None) => return false,
                    Err(e) => {
                        self.fail(i, "reading frames", e);
                        return false;
                    }
                }
            };
            match self.ports[i].recv(&mut buf) {
                Ok(Some(n)) => {
                    self.last_frame = now;
                    buf.truncate(n);
                    self.bridge.ingress(dir_from(i), buf, now);
                }
                Ok(None) => {
                    self.pool.put(buf);
                    return false;
                }
                Err(e) => {
                    self.pool.put(buf);
                    self.fail(i, "reading frames", e);
                    return false;
                }
            }
        }
        true
    }

    /// `read_port` for a port with offload headers.
    fn read_offload_port(&mut self, i: usize) -> bool {
        let dir = dir_from(i);
        for k in 0..self.cfg.batch {
            let Some(now) = self.read_time(k) else {
                return true;
            };
            match self.ports[i].recv_offload(&mut self.rx_gso) {
                Ok(Some((n, hdr))) => {
                    self.last_frame = now;
                    self.ingress_offloaded(dir, n, hdr, now);
                }
                Ok(None) => return false,
                // A read shorter than its header: that frame is lost.
                Err(e) if e.kind() == io::ErrorKind::InvalidData => self
                    .bridge
                    .path_mut(dir)
                    .count_rejected(0, DropReason::BadOffload),
                Err(e) => {
                    self.fail(i, "reading frames", e);
                    return false;
                }
            }
        }
        true
    }

    /// The arrival time for the `k`-th frame of a read batch, or `None` if
    /// the bridge (or the release pacer) has something due by now: reading
    /// then stops so that the departure is written on time rather than
    /// after the rest of the batch (which, at 1.2 Gbit/s, would send frames
    /// out back to back). The first frame of a batch is always read, so a
    /// deadline that stays due cannot starve the ports.
    fn read_time(&self, k: usize) -> Option<Instant> {
        let now = self.clock.now();
        match crate::time::earliest(self.bridge.poll_at(), self.release_at) {
            Some(due) if k > 0 && due <= now => None,
            _ => Some(now),
        }
    }

    /// Hands the `n`-byte frame in `rx_gso` to the bridge: copied if plain,
    /// whole or segmented if a super-frame.
    fn ingress_offloaded(&mut self, dir: Dir, n: usize, hdr: VnetHdr, now: Instant) {
        let len = u32::try_from(n).unwrap_or(u32::MAX);
        let reject = |bridge: &mut Bridge, len: u32, reason| {
            bridge.path_mut(dir).count_rejected(len, reason)
        };
        if n >= self.rx_gso.len() {
            // Filled the buffer: cut short, so its headers cannot be trusted.
            return reject(&mut self.bridge, len, DropReason::BadOffload);
        }
        if !hdr.is_gso() {
            if n > self.pool.buf_size() {
                return reject(&mut self.bridge, len, DropReason::Oversize);
            }
            let Some(mut buf) = self.pool.get() else {
                return reject(&mut self.bridge, len, DropReason::PoolExhausted);
            };
            buf.clear();
            buf.extend_from_slice(&self.rx_gso[..n]);
            if gso::complete_checksum(&mut buf, &hdr).is_err() {
                self.pool.put(buf);
                return reject(&mut self.bridge, len, DropReason::BadOffload);
            }
            return self.bridge.ingress(dir, buf, now);
        }
        let mut seg = match Segmenter::new(&self.rx_gso[..n], &hdr) {
            Ok(seg) => seg,
            Err(_) => return reject(&mut self.bridge, len, DropReason::BadOffload),
        };
        if self.pass_whole[dir.index()] {
            let (wire, seg_len) = (seg.wire_len(), seg.max_segment_len());
            if let Some(fresh) = self.gso_pool.get() {
                let mut frame = std::mem::replace(&mut self.rx_gso, fresh);
                frame.truncate(n);
                let wire = u32::try_from(wire).unwrap_or(u32::MAX);
                return self
                    .bridge
                    .ingress_whole(dir, frame, hdr, wire, seg_len, now);
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
                    self.bridge.ingress(dir, buf, now);
                }
                None => {
                    let Some(seg_len) = seg.skip() else { return };
                    let reason = if too_big {
                        DropReason::Oversize
                    } else {
                        DropReason::PoolExhausted
                    };
                    reject(&mut self.bridge, seg_len as u32, reason);
                }
            }
        }
    }
}
