//! The driver's transmit side: writing what the lane released to the port
//! its direction leads to, spaced out by the release pacer when the loop
//! was late, and returning every sent buffer to the pool it came from.
//! With GRO on (`DatapathConfig::gro`, offload ports only), plain TCP
//! segments written in one pass are merged into super-frames
//! (`packet::gro`) first. A batching port (`FramePort::flush`) sends what
//! a pass wrote at the end of it; the receive side's passes leave theirs
//! for the loop's own pass after the batch read.

use std::collections::VecDeque;
use std::io;

use crate::packet::gso::VnetHdr;
use crate::packet::Packet;
use crate::time::{Clock, Instant};

use super::super::error::port_gone;
use super::super::stages::Wall;
use super::Driver;

impl Driver {
    /// Writes what the lane released, in the order the link delivered it,
    /// and returns every buffer to its pool. With `pace`, an overdue frame
    /// waits as long as the `ReleasePacer` says (held with the rest;
    /// `release_at` says until when); without, everything held is written
    /// now. A write error is counted by the port and loses that frame; one
    /// saying the port is gone ends the loop (the frames after it are still
    /// tried, and counted as errors by the gone port). `now` is the time
    /// the pass starts (the caller has just read the clock): the first
    /// frame is written at it, each later one at a fresh reading, since a
    /// write takes as long as the receiving side's stack does with it.
    pub(super) fn write_out(&mut self, pace: bool, now: Instant) {
        self.write_unflushed(pace, now);
        if let Err(e) = self.ports.tx.flush() {
            if port_gone(&e) && self.failure.is_none() {
                let port = self.tx_port();
                self.fail(port, "writing frames", e);
            }
        }
    }

    /// `write_out` without the flush: a batching port may still hold the
    /// frames. Returns the last clock reading: when the last write ended,
    /// or `now` if nothing was written.
    pub(super) fn write_unflushed(&mut self, pace: bool, mut now: Instant) -> Instant {
        if self.held.is_empty() {
            // Take the released frames as they lie (the two lists swap
            // buffers) rather than moving each one.
            let out = VecDeque::from(std::mem::take(&mut self.out));
            self.out = Vec::from(std::mem::replace(&mut self.held, out));
        } else {
            self.held.extend(self.out.drain(..));
        }
        let mut gone = None;
        self.release_at = None;
        while let Some(delivered) = self.held.front().map(|p| p.meta.delivered()) {
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
            self.written(delivered, now);
            let sent = if self.gro_on && self.next_is_due(pace, now) {
                self.send_merged(pkt, pace, now)
            } else {
                let sent = self.ports.tx.send_offload(&pkt.data, &pkt.meta.offload);
                self.bufs.put(pkt.data);
                sent
            };
            // The next frame is written at this fresh reading.
            let done = self.clock.now();
            self.stages.span(Wall::Write, now, done);
            now = done;
            if let Err(e) = sent {
                if port_gone(&e) && gone.is_none() {
                    gone = Some(e);
                }
            }
        }
        if let Some(e) = gone {
            let port = self.tx_port();
            self.fail(port, "writing frames", e);
        }
        now
    }

    /// Records a frame delivered at `delivered` as written `now`.
    fn written(&mut self, delivered: Instant, now: Instant) {
        self.last_frame = now;
        self.pacer.written(delivered, now);
        self.release_lateness
            .record(now.saturating_since(delivered));
    }

    /// The first held frame may be written now too.
    fn next_is_due(&self, pace: bool, now: Instant) -> bool {
        self.held.front().is_some_and(|p| {
            let at = p.meta.delivered();
            at <= now && (!pace || self.pacer.earliest(at, now) <= now)
        })
    }

    /// Writes `first` merged with the plain TCP segments after it that are
    /// due now and continue it (`packet::gro`), as one super-frame; alone
    /// if none does.
    fn send_merged(&mut self, first: Packet, pace: bool, now: Instant) -> io::Result<()> {
        let plain = |p: &Packet| p.meta.offload == VnetHdr::default();
        if plain(&first) && self.gro.start(&first.data) {
            while self.next_is_due(pace, now) {
                match self.held.pop_front() {
                    Some(next) if plain(&next) && self.gro.push(&next.data) => {
                        self.written(next.meta.delivered(), now);
                        self.bufs.put(next.data);
                    }
                    Some(next) => {
                        self.held.push_front(next);
                        break;
                    }
                    None => break,
                }
            }
        }
        let segments = self.gro.segments();
        let sent = match self.gro.finish() {
            Some((frame, hdr)) if segments > 1 => {
                self.gro_counts.super_frames += 1;
                self.gro_counts.segments += u64::from(segments);
                self.ports.tx.send_offload(frame, &hdr)
            }
            _ => self.ports.tx.send_offload(&first.data, &first.meta.offload),
        };
        self.bufs.put(first.data);
        sent
    }
}
