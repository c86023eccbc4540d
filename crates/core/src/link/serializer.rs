//! The line-rate serializer: frames posted to the TX ring go onto the wire
//! one at a time at `rate_bytes_ps`, each occupying `len + overhead` bytes
//! (preamble, FCS, inter-frame gap), adjusted by the link-layer `Framing`
//! (extra overhead, mpu, ATM cells: `PschedRate::wire_len`). Times are
//! logical: a frame starts at `max(posted, previous departure)` and departs
//! `wire_len / rate` later, carried as an exact rational (ns plus a
//! remainder), so late polls and non-integer frame times never accumulate
//! drift. With a schedule installed, the schedule's `Timeline` gives the
//! departure instead (rate steps or trace delivery opportunities).
//!
//! A multi-queue NIC has one TX ring per queue and one wire: when the wire
//! frees, it takes the next frame round robin over the queues with frames
//! posted (`set_queues`; a frame's queue is `queue_mapping % queues`, as mq
//! maps it), starting after the queue it served last. Round robin is the
//! usual arbitration of a NIC's TX scheduler between its queues (the
//! datasheets' default "round robin between TX queues" without DCB); the
//! kernel does not see it. With one queue this is the ring's FIFO order.

use super::schedule::{Schedule, Timeline};
use super::Framing;
use crate::packet::Packet;
use crate::time::{Instant, NS_PER_SEC};
use crate::units::PschedRate;
use std::collections::VecDeque;

/// The line: sends one frame at a time at the line rate (or the schedule's), so
/// a frame leaves `wire_len / rate` after the one before it; frames posted
/// while it is busy wait in order.
#[derive(Debug)]
pub struct Serializer {
    /// The link's overhead (`LinkParams::overhead`) and framing.
    link_overhead: u32,
    framing: Framing,
    /// Line rate and the wire length arithmetic.
    wire: PschedRate,
    /// The schedule in force, replacing the line rate.
    timeline: Option<Timeline>,
    /// Frames posted but not yet on the wire, per TX queue, with the time
    /// the NIC was told of them (at least 1 queue).
    waiting: Vec<VecDeque<(Packet, Instant)>>,
    /// Frames in `waiting`, over every queue.
    waiting_len: usize,
    /// The queue the wire serves first next time (round robin).
    next_queue: usize,
    /// The frame on the wire and when its last bit leaves.
    on_wire: Option<(Packet, Instant)>,
    /// When the frame on the wire was posted.
    on_wire_posted: Instant,
    /// When the wire is free, and the fraction of a ns beyond it, in units
    /// of 1/rate ns (always < rate).
    busy_until: Instant,
    busy_rem: u64,
}

impl Serializer {
    /// A wire of `rate_bytes_ps` (0 = unlimited) and `overhead` bytes/frame.
    pub fn new(rate_bytes_ps: u64, overhead: u32) -> Serializer {
        let framing = Framing::default();
        Serializer {
            link_overhead: overhead,
            framing,
            wire: wire(rate_bytes_ps, overhead, framing),
            timeline: None,
            waiting: vec![VecDeque::new()],
            waiting_len: 0,
            next_queue: 0,
            on_wire: None,
            on_wire_posted: Instant::ZERO,
            busy_until: Instant::ZERO,
            busy_rem: 0,
        }
    }

    /// Changes rate and overhead at `now`. The overhead counts for frames
    /// not started yet; a new rate also carries the rest of the frame on
    /// the wire: its bits not yet sent at `now` go at the new rate, so a
    /// rate set by mistake (100 bit/s for 100 Mbit/s) is undone at once by
    /// setting the right one. Under a schedule the schedule times the wire.
    pub fn set_rate(&mut self, rate_bytes_ps: u64, overhead: u32, now: Instant) {
        let old = self.wire.rate_bytes_ps;
        self.link_overhead = overhead;
        self.wire = wire(rate_bytes_ps, overhead, self.framing);
        if rate_bytes_ps == old {
            return;
        }
        if self.timeline.is_some() {
            // The schedule times the wire; its remainder restarts, as
            // before any rate change.
            self.busy_rem = 0;
            return;
        }
        match &mut self.on_wire {
            Some((_, departs)) if *departs > now && old > 0 => {
                // What is left, in bytes × 1e9: (departure - now) ns at the
                // old rate plus the remainder (in units of 1/old ns).
                let left =
                    departs.saturating_since(now) as u128 * old as u128 + self.busy_rem as u128;
                let (ns, rem) = if rate_bytes_ps == 0 {
                    (0, 0)
                } else {
                    let rate = rate_bytes_ps as u128;
                    (
                        (left / rate).min(u64::MAX as u128) as u64,
                        (left % rate) as u64,
                    )
                };
                *departs = now + ns;
                self.busy_until = *departs;
                self.busy_rem = rem;
            }
            _ => self.busy_rem = 0,
        }
    }

    /// Changes the link-layer framing for frames not started yet.
    pub fn set_framing(&mut self, framing: Framing) {
        self.framing = framing;
        self.wire = wire(self.wire.rate_bytes_ps, self.link_overhead, framing);
    }

    /// Installs (or removes) a schedule starting at `now`, for frames not
    /// started yet; a valid schedule is expected.
    pub fn set_schedule(&mut self, schedule: Option<Schedule>, now: Instant) {
        self.busy_rem = 0;
        self.timeline = schedule.map(|s| Timeline::new(s, now));
    }

    /// The propagation delay the schedule sets for a frame departing at
    /// `t`, if any.
    pub fn scheduled_delay(&self, t: Instant) -> Option<u64> {
        self.timeline.as_ref().and_then(|tl| tl.delay_at(t))
    }

    /// The wire spaces frames out: it has a line rate, or a schedule
    /// times it. An unlimited wire without one sends each frame the moment
    /// it is posted.
    pub fn spaces_frames(&self) -> bool {
        self.timeline.is_some() || self.wire.rate_bytes_ps != 0
    }

    /// Frames posted and not departed (waiting plus on the wire).
    pub fn len(&self) -> usize {
        self.waiting_len + self.on_wire.is_some() as usize
    }

    /// The TX queues the wire arbitrates between (at least 1); waiting
    /// frames move to their queue under the new count, in order.
    pub fn set_queues(&mut self, n: usize) {
        let n = n.max(1);
        if n == self.waiting.len() {
            return;
        }
        let old = std::mem::replace(&mut self.waiting, (0..n).map(|_| VecDeque::new()).collect());
        for (pkt, at) in old.into_iter().flatten() {
            let q = queue_of(&pkt, n);
            self.waiting[q].push_back((pkt, at));
        }
        self.next_queue %= n;
    }

    /// Whether no frame is on the wire (then none waits either).
    pub fn is_empty(&self) -> bool {
        self.on_wire.is_none()
    }

    /// The driver hands a frame to the NIC at `now` (into the ring of its
    /// TX queue).
    pub fn post(&mut self, pkt: Packet, now: Instant) {
        let n = self.waiting.len();
        let q = queue_of(&pkt, n);
        if self.on_wire.is_none() {
            self.next_queue = next_of(q, n);
            self.start(pkt, now);
        } else {
            self.waiting[q].push_back((pkt, now));
            self.waiting_len += 1;
        }
    }

    /// The next frame for the wire when it frees at `busy_until`: round
    /// robin from `next_queue` over the queues whose head the NIC knows of
    /// by then, else the head it learns of first.
    fn take_next(&mut self) -> Option<(Packet, Instant)> {
        let n = self.waiting.len();
        if n == 1 {
            // One queue: its head, whenever the NIC learns of it.
            let next = self.waiting[0].pop_front()?;
            self.waiting_len -= 1;
            return Some(next);
        }
        let free = self.busy_until;
        let q = (0..n)
            .map(|k| (self.next_queue + k) % n)
            .find(|&q| self.waiting[q].front().is_some_and(|(_, at)| *at <= free))
            .or_else(|| {
                (0..n)
                    .filter_map(|q| self.waiting[q].front().map(|(_, at)| (*at, q)))
                    .min()
                    .map(|(_, q)| q)
            })?;
        let next = self.waiting[q].pop_front()?;
        self.waiting_len -= 1;
        self.next_queue = next_of(q, n);
        Some(next)
    }

    fn start(&mut self, pkt: Packet, posted: Instant) {
        if posted > self.busy_until {
            self.busy_until = posted;
            self.busy_rem = 0;
        }
        let bytes = self.wire.wire_len(pkt.len as u64);
        if let Some(tl) = &mut self.timeline {
            (self.busy_until, self.busy_rem) =
                tl.finish(self.busy_until, self.busy_rem, pkt.len, bytes);
        } else if self.wire.rate_bytes_ps > 0 {
            let total = self.busy_rem as u128 + bytes as u128 * NS_PER_SEC as u128;
            let rate = self.wire.rate_bytes_ps as u128;
            let ns = (total / rate).min(u64::MAX as u128) as u64;
            self.busy_until += ns;
            self.busy_rem = (total % rate) as u64;
        }
        self.on_wire = Some((pkt, self.busy_until));
        self.on_wire_posted = posted;
    }

    /// The frames posted and not departed (the one on the wire first),
    /// each with the instant it was posted.
    pub fn queued(&self) -> impl Iterator<Item = (&Packet, Instant)> + Clone {
        let wire = self.on_wire.as_ref().map(|(p, _)| (p, self.on_wire_posted));
        wire.into_iter()
            .chain(self.waiting.iter().flatten().map(|(p, at)| (p, *at)))
    }

    /// When the frame on the wire departs.
    pub fn next_event(&self) -> Option<Instant> {
        self.on_wire.as_ref().map(|(_, t)| *t)
    }

    /// The frame whose last bit left by `now`, with its departure time; the
    /// next waiting frame goes onto the wire at that departure.
    pub fn pop(&mut self, now: Instant) -> Option<(Packet, Instant)> {
        if self.next_event()? > now {
            return None;
        }
        let (pkt, departed) = self.on_wire.take()?;
        if let Some((next, posted)) = self.take_next() {
            self.start(next, posted);
        }
        Some((pkt, departed))
    }
}

/// The TX queue of `pkt` among `n` (mq's `queue_mapping % n`).
pub(crate) fn queue_of(pkt: &Packet, n: usize) -> usize {
    queue_index(pkt.meta.queue_mapping, n)
}

/// The TX queue of a frame mapped to `mapping`, among `n`.
pub(crate) fn queue_index(mapping: u16, n: usize) -> usize {
    // A division per frame is worth skipping in the common single-queue case.
    if n <= 1 {
        0
    } else {
        usize::from(mapping) % n
    }
}

/// The queue after `q` of `n`, round robin (`q < n`).
fn next_of(q: usize, n: usize) -> usize {
    if q + 1 >= n {
        0
    } else {
        q + 1
    }
}

/// The wire arithmetic for a rate, the link's overhead and a framing.
fn wire(rate_bytes_ps: u64, overhead: u32, framing: Framing) -> PschedRate {
    let overhead =
        (overhead as i64 + framing.overhead as i64).clamp(i32::MIN as i64, i32::MAX as i64);
    PschedRate::new(rate_bytes_ps).with_framing(overhead as i32, framing.mpu, framing.linklayer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::pkt;
    use crate::units::LinkLayer;

    fn departures(s: &mut Serializer, until: Instant) -> Vec<u64> {
        let mut v = Vec::new();
        while let Some((_, t)) = s.pop(until) {
            v.push(t.nanos());
        }
        v
    }

    #[test]
    fn exact_departures_at_12_mbit_with_overhead() {
        // 12 Mbit/s = 1.5 MB/s; 1538 B on the wire = 1025333.33 ns.
        let mut s = Serializer::new(1_500_000, 24);
        for id in 0..6 {
            s.post(pkt(id, 1514), Instant::ZERO);
        }
        assert_eq!(s.len(), 6);
        let d = departures(&mut s, Instant::MAX);
        assert_eq!(
            d,
            vec![1_025_333, 2_050_666, 3_076_000, 4_101_333, 5_126_666, 6_152_000]
        );
    }

    #[test]
    fn exact_departures_at_1_2_gbit_with_overhead() {
        // 1.2 Gbit/s = 150 MB/s; 1538 B = 10253.33 ns.
        let mut s = Serializer::new(150_000_000, 24);
        for id in 0..300 {
            s.post(pkt(id, 1514), Instant::ZERO);
        }
        let d = departures(&mut s, Instant::MAX);
        assert_eq!(&d[..3], &[10_253, 20_506, 30_760]);
        // 300 frames = 300 * 1538 / 150e6 s = 3.076 ms exactly.
        assert_eq!(d[299], 3_076_000);
    }

    #[test]
    fn late_polls_add_no_drift() {
        let mut a = Serializer::new(1_500_000, 24);
        let mut b = Serializer::new(1_500_000, 24);
        for id in 0..50 {
            a.post(pkt(id, 1514), Instant::ZERO);
            b.post(pkt(id, 1514), Instant::ZERO);
        }
        let exact = departures(&mut a, Instant::MAX);
        // Poll b at irregular, late instants.
        let mut late = Vec::new();
        let mut t = 0;
        while late.len() < 50 {
            t += 3_333_333;
            late.extend(departures(&mut b, Instant::from_nanos(t)));
        }
        assert_eq!(exact, late);
    }

    #[test]
    fn idle_gap_restarts_from_arrival() {
        let mut s = Serializer::new(1_000_000, 0); // 1 B/us
        s.post(pkt(1, 100), Instant::ZERO);
        assert_eq!(s.next_event(), Some(Instant::from_micros(100)));
        assert!(s.pop(Instant::from_micros(99)).is_none());
        assert!(s.pop(Instant::from_micros(100)).is_some());
        s.post(pkt(2, 100), Instant::from_micros(500));
        assert_eq!(s.next_event(), Some(Instant::from_micros(600)));
        // Posted while busy: starts at the previous departure.
        s.post(pkt(3, 50), Instant::from_micros(510));
        assert_eq!(s.pop(Instant::MAX).unwrap().1, Instant::from_micros(600));
        assert_eq!(s.pop(Instant::MAX).unwrap().1, Instant::from_micros(650));
        assert!(s.is_empty());
    }

    /// Two TX queues share the wire round robin, starting after the queue
    /// served last; a queue's own frames stay in order.
    #[test]
    fn queues_share_the_wire_round_robin() {
        let mut s = Serializer::new(1_000_000, 0); // 100 B = 100 us
        s.set_queues(2);
        let on = |id: u64, q: u16| {
            let mut p = pkt(id, 100);
            p.meta.queue_mapping = q;
            p
        };
        for id in 0..3 {
            s.post(on(id, 0), Instant::ZERO);
        }
        s.post(on(10, 1), Instant::ZERO);
        s.post(on(11, 3), Instant::ZERO); // 3 % 2: queue 1
        let mut order = Vec::new();
        while let Some((p, t)) = s.pop(Instant::MAX) {
            order.push((p.meta.id, t.nanos() / 1_000));
        }
        assert_eq!(
            order,
            vec![(0, 100), (10, 200), (1, 300), (11, 400), (2, 500)]
        );
        // One queue: the ring's FIFO order, as before.
        s.set_queues(1);
        s.post(on(20, 1), Instant::from_millis(1));
        s.post(on(21, 0), Instant::from_millis(1));
        s.post(on(22, 1), Instant::from_millis(1));
        let ids: Vec<u64> = std::iter::from_fn(|| s.pop(Instant::MAX))
            .map(|(p, _)| p.meta.id)
            .collect();
        assert_eq!(ids, vec![20, 21, 22]);
    }

    #[test]
    fn unlimited_rate_departs_at_post() {
        let mut s = Serializer::new(0, 24);
        s.post(pkt(1, 1514), Instant::from_micros(3));
        s.post(pkt(2, 1514), Instant::from_micros(4));
        assert_eq!(departures(&mut s, Instant::MAX), vec![3_000, 4_000]);
    }

    #[test]
    fn a_rate_change_carries_the_rest_of_the_frame_on_the_wire() {
        // 1 MB/s: the first 100-byte frame would leave at 100 µs; at 40 µs
        // 60 bytes are left, which take 30 µs at 2 MB/s.
        let mut s = Serializer::new(1_000_000, 0);
        s.post(pkt(1, 100), Instant::ZERO);
        s.post(pkt(2, 100), Instant::ZERO);
        s.set_rate(2_000_000, 0, Instant::from_micros(40));
        assert_eq!(s.next_event(), Some(Instant::from_micros(70)));
        assert_eq!(departures(&mut s, Instant::MAX), vec![70_000, 120_000]);
        // A typo (100 bit/s) puts the frame 8 s away; the right rate a
        // second later sends what is left of it at once.
        let mut s = Serializer::new(12_500_000, 0);
        s.post(pkt(1, 1000), Instant::ZERO);
        s.set_rate(12, 0, Instant::ZERO);
        assert!(s.next_event().unwrap() > Instant::from_millis(80_000));
        s.set_rate(12_500_000, 0, Instant::from_millis(1_000));
        // 12 bytes went in that second; 988 are left: 79.04 µs.
        assert_eq!(departures(&mut s, Instant::MAX), vec![NS_PER_SEC + 79_040]);
        // Uneven rates keep the exact remainder: 3 B/s for 10 bytes, then
        // 7 B/s after 1 s: 7 bytes left = 1 s exactly.
        let mut s = Serializer::new(3, 0);
        s.post(pkt(1, 10), Instant::ZERO);
        s.set_rate(7, 0, Instant::from_millis(1_000));
        assert_eq!(departures(&mut s, Instant::MAX), vec![2 * NS_PER_SEC]);
        // Unlimited: what is left leaves now; overhead alone retimes nothing.
        let mut s = Serializer::new(1_000_000, 0);
        s.post(pkt(1, 100), Instant::ZERO);
        s.set_rate(1_000_000, 50, Instant::from_micros(10));
        assert_eq!(s.next_event(), Some(Instant::from_micros(100)));
        s.set_rate(0, 0, Instant::from_micros(10));
        assert_eq!(departures(&mut s, Instant::MAX), vec![10_000]);
    }

    /// tc stab's ATM framing: a 1514-byte frame takes 32 cells = 1696
    /// bytes, exactly 1 ms at 1.696 MB/s.
    #[test]
    fn atm_framing_changes_serialization_exactly() {
        use crate::units::LinkLayer;
        let mut s = Serializer::new(1_696_000, 0);
        s.post(pkt(1, 1514), Instant::ZERO);
        // Ethernet: 1514 B = 892688.67 ns.
        assert_eq!(s.pop(Instant::MAX).unwrap().1.nanos(), 892_688);
        s.set_framing(Framing {
            linklayer: LinkLayer::Atm,
            ..Framing::default()
        });
        s.post(pkt(2, 1514), Instant::from_millis(10));
        s.post(pkt(3, 1514), Instant::from_millis(10));
        assert_eq!(s.pop(Instant::MAX).unwrap().1, Instant::from_millis(11));
        assert_eq!(s.pop(Instant::MAX).unwrap().1, Instant::from_millis(12));
        // 49 B is two cells (106 B); the link overhead counts before cells.
        s.set_rate(1_696_000, 0, Instant::from_millis(20));
        s.post(pkt(4, 49), Instant::from_millis(20));
        assert_eq!(s.pop(Instant::MAX).unwrap().1.nanos(), 20_000_000 + 62_500);
        s.set_rate(1_696_000, 47, Instant::from_millis(30));
        s.post(pkt(5, 1), Instant::from_millis(30));
        assert_eq!(s.pop(Instant::MAX).unwrap().1.nanos(), 30_000_000 + 31_250);
    }

    #[test]
    fn presets_mpu_and_negative_overhead() {
        let framing = |overhead, mpu, linklayer| Framing {
            overhead,
            mpu,
            linklayer,
        };
        // pppoe-llcsnap: +40 B on ATM: 1554 B = 33 cells = 1749 B.
        let f = framing(40, 0, LinkLayer::Atm);
        let mut s = Serializer::new(1_749_000, 0);
        s.set_framing(f);
        s.post(pkt(1, 1514), Instant::ZERO);
        assert_eq!(s.pop(Instant::MAX).unwrap().1, Instant::from_millis(1));
        // mpu 100 on Ethernet: a 60-byte frame counts 100 B.
        s.set_framing(framing(0, 100, LinkLayer::Ethernet));
        s.set_rate(100_000, 0, Instant::from_millis(5));
        s.post(pkt(2, 60), Instant::from_millis(5));
        assert_eq!(s.pop(Instant::MAX).unwrap().1, Instant::from_millis(6));
        // A negative overhead cannot make a frame shorter than nothing.
        s.set_framing(framing(-1000, 0, LinkLayer::Ethernet));
        s.post(pkt(3, 60), Instant::from_millis(7));
        assert_eq!(s.pop(Instant::MAX).unwrap().1, Instant::from_millis(7));
    }
}
