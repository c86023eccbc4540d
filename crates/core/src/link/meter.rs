//! The per-direction flow meter: what each flow had delivered, dropped (by
//! reason) and CE-marked, and its delivered rate over the last second, for
//! the per-flow views (the TUI's flow table, `stats --json`, OpenMetrics).
//! The kernel keeps no such table; bloatbox can, because the classifier
//! already hashed every frame's 5-tuple at admission (`PacketMeta::hash`).
//!
//! The table is fixed-capacity open addressing allocated once (`FLOWS`
//! entries, linear probing over at most `PROBES` of them), so counting a
//! frame is O(1) and never allocates. What a probe reads (the hash and the
//! second last seen) is kept apart from the counters, 8 bytes an entry, so
//! a lookup reads one or two cache lines however many entries it probes. A flow that finds no free entry is
//! counted in the `others` entry; an entry idle for `STALE_SECS` is handed
//! to the next new flow that probes it, its counts folded into `others`
//! first, so totals are never lost: the entries plus `others` always sum
//! to every frame the meter saw.

use crate::packet::{DropCounts, DropReason, FlowKey, Packet};
use crate::qdisc::dump::FlowTraffic;
use crate::time::{Instant, NS_PER_SEC};
use std::cmp::Reverse;

/// Entries of the table (a power of two).
pub const FLOWS: usize = 1024;
/// Entries probed from a hash's home slot before the flow counts as
/// `others`.
pub const PROBES: usize = 8;
/// Seconds without a frame after which an entry may be reused.
pub const STALE_SECS: u64 = 10;

/// What a probe reads of an entry.
#[derive(Clone, Copy, Debug, Default)]
struct Key {
    /// The flow's hash.
    hash: u32,
    /// 1 + the last second (of `Instant`) the entry counted a frame in;
    /// 0: the entry is unused.
    seen: u32,
}

impl Key {
    /// `Key::seen` for second `sec`.
    fn seen_at(sec: u64) -> u32 {
        (sec.min(u64::from(u32::MAX - 1)) + 1) as u32
    }
}

/// One flow's counters.
#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    flow: FlowKey,
    packets: u64,
    bytes: u64,
    marks: u64,
    drops: DropCounts,
    /// Bytes delivered in second `win_sec` and in the second before it.
    win_sec: u64,
    win_bytes: u64,
    prev_bytes: u64,
}

impl Entry {
    fn deliver(&mut self, pkt: &Packet, sec: u64) {
        self.packets += 1;
        self.bytes += u64::from(pkt.len);
        self.marks += u64::from(pkt.meta.ce_marked);
        if sec != self.win_sec {
            self.prev_bytes = if sec == self.win_sec + 1 {
                self.win_bytes
            } else {
                0
            };
            self.win_sec = sec;
            self.win_bytes = 0;
        }
        self.win_bytes += u64::from(pkt.len);
    }

    /// Bytes delivered in the second before `now`: this second's so far
    /// and the part of the previous second's that the window still covers
    /// (counted as spread evenly over that second).
    fn rate_bps(&self, now: Instant) -> u64 {
        let (sec, into) = (now.nanos() / NS_PER_SEC, now.nanos() % NS_PER_SEC);
        let part = |bytes: u64| (u128::from(bytes) * u128::from(NS_PER_SEC - into)) / 1_000_000_000;
        let bytes = if self.win_sec == sec {
            u128::from(self.win_bytes) + part(self.prev_bytes)
        } else if self.win_sec + 1 == sec {
            part(self.win_bytes)
        } else {
            0
        };
        (bytes * 8).min(u128::from(u64::MAX)) as u64
    }

    /// Adds `o`'s counters (not its window) into this entry.
    fn fold(&mut self, o: &Entry) {
        self.packets += o.packets;
        self.bytes += o.bytes;
        self.marks += o.marks;
        for (d, n) in self.drops.iter_mut().zip(o.drops) {
            *d += n;
        }
    }

    fn traffic(&self, hash: u32, now: Instant) -> FlowTraffic {
        FlowTraffic {
            flow: self.flow,
            hash,
            packets: self.packets,
            bytes: self.bytes,
            rate_bps: self.rate_bps(now),
            ecn_marks: self.marks,
            drops: DropReason::ALL
                .iter()
                .zip(self.drops)
                .filter(|(_, n)| *n > 0)
                .map(|(r, n)| (*r, n))
                .collect(),
        }
    }
}

/// A bounded table of per-flow counters, keyed by the classifier's flow
/// hash.
#[derive(Clone, Debug)]
pub struct FlowMeter {
    /// What probes read, entry by entry.
    keys: Box<[Key]>,
    entries: Box<[Entry]>,
    /// Flows with no entry, and the counts of reused entries.
    others: Entry,
    /// Entries in use.
    tracked: u32,
}

impl Default for FlowMeter {
    fn default() -> Self {
        FlowMeter::new()
    }
}

impl FlowMeter {
    /// An empty meter with its table allocated (no allocation later).
    pub fn new() -> FlowMeter {
        FlowMeter {
            keys: vec![Key::default(); FLOWS].into_boxed_slice(),
            entries: vec![Entry::default(); FLOWS].into_boxed_slice(),
            others: Entry::default(),
            tracked: 0,
        }
    }

    /// The entry counting `pkt`'s flow at second `sec`: its own, a free or
    /// stale one it takes over, else `others`.
    fn entry(&mut self, pkt: &Packet, sec: u64) -> &mut Entry {
        let hash = pkt.meta.hash;
        let seen = Key::seen_at(sec);
        let home = hash as usize & (FLOWS - 1);
        let mut free = None;
        for i in 0..PROBES {
            let at = (home + i) & (FLOWS - 1);
            let k = self.keys[at];
            if k.seen == 0 {
                free = free.or(Some(at));
                break;
            }
            if k.hash == hash {
                self.keys[at].seen = seen;
                return &mut self.entries[at];
            }
            if free.is_none() && u64::from(seen.saturating_sub(k.seen)) > STALE_SECS {
                free = Some(at);
            }
        }
        let Some(at) = free else {
            return &mut self.others;
        };
        let old = std::mem::take(&mut self.entries[at]);
        if self.keys[at].seen != 0 {
            self.others.fold(&old);
        } else {
            self.tracked += 1;
        }
        self.keys[at] = Key { hash, seen };
        self.entries[at] = Entry {
            flow: pkt.meta.flow,
            win_sec: sec,
            ..Entry::default()
        };
        &mut self.entries[at]
    }

    /// `pkt` reached the far end at `now`.
    #[inline]
    pub fn delivered(&mut self, pkt: &Packet, now: Instant) {
        let sec = now.nanos() / NS_PER_SEC;
        self.entry(pkt, sec).deliver(pkt, sec);
    }

    /// The path dropped `pkt` for `reason` at `now`.
    #[inline]
    pub fn dropped(&mut self, pkt: &Packet, reason: DropReason, now: Instant) {
        let sec = now.nanos() / NS_PER_SEC;
        self.entry(pkt, sec).drops[reason.index()] += 1;
    }

    /// What the meter counted for the flow of hash `hash` (`None`: not
    /// tracked, counted in `others`).
    pub fn lookup(&self, hash: u32, now: Instant) -> Option<FlowTraffic> {
        let home = hash as usize & (FLOWS - 1);
        (0..PROBES)
            .map(|i| (home + i) & (FLOWS - 1))
            .take_while(|&at| self.keys[at].seen != 0)
            .find(|&at| self.keys[at].hash == hash)
            .map(|at| self.entries[at].traffic(hash, now))
    }

    /// The `n` tracked flows with the highest rate over the last second
    /// (then the most bytes, then the lowest hash), and everything else
    /// summed up (the untracked flows and the tracked ones left out).
    pub fn top(&self, n: usize, now: Instant) -> (Vec<FlowTraffic>, FlowTraffic) {
        let mut used: Vec<(u32, &Entry)> = self
            .keys
            .iter()
            .zip(self.entries.iter())
            .filter(|(k, _)| k.seen != 0)
            .map(|(k, e)| (k.hash, e))
            .collect();
        used.sort_unstable_by_key(|(hash, e)| (Reverse(e.rate_bps(now)), Reverse(e.bytes), *hash));
        let mut rest = self.others;
        let mut rest_rate = self.others.rate_bps(now);
        for (_, e) in used.iter().skip(n) {
            rest.fold(e);
            rest_rate += e.rate_bps(now);
        }
        let mut others = rest.traffic(0, now);
        others.flow = FlowKey::default();
        others.rate_bps = rest_rate;
        let listed = used
            .iter()
            .take(n)
            .map(|(hash, e)| e.traffic(*hash, now))
            .collect();
        (listed, others)
    }

    /// Entries in use.
    pub fn tracked(&self) -> u32 {
        self.tracked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::flow_pkt;

    fn at_ms(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn counts_per_flow_and_rate_over_the_last_second() {
        let mut m = FlowMeter::new();
        // Flow 1: 1000 B every 10 ms from t = 1 s to 2 s (100 frames).
        for i in 0..100 {
            m.delivered(&flow_pkt(i, 1000, 1), at_ms(1000 + 10 * i));
        }
        m.dropped(&flow_pkt(200, 1000, 1), DropReason::QueueFull, at_ms(1500));
        m.dropped(&flow_pkt(201, 1000, 2), DropReason::Codel, at_ms(1500));
        let h1 = flow_pkt(0, 1, 1).meta.hash;
        let t = m.lookup(h1, at_ms(1999)).expect("flow 1 tracked");
        assert_eq!((t.packets, t.bytes), (100, 100_000));
        assert_eq!(t.drops.get(&DropReason::QueueFull), Some(&1));
        assert_eq!(t.total_drops(), 1);
        // 100,000 B in the last second: 800 kbit/s.
        assert_eq!(t.rate_bps, 800_000);
        // Half a second later half of that second is still in the window.
        assert_eq!(m.lookup(h1, at_ms(2500)).unwrap().rate_bps, 400_000);
        assert_eq!(m.lookup(h1, at_ms(3000)).unwrap().rate_bps, 0);
        let (top, others) = m.top(1, at_ms(1999));
        assert_eq!(top.len(), 1);
        assert_eq!(top[0].hash, h1);
        assert_eq!(others.drops.get(&DropReason::Codel), Some(&1));
        assert_eq!(m.tracked(), 2);
    }

    #[test]
    fn past_its_capacity_flows_count_as_others_and_nothing_is_lost() {
        let mut m = FlowMeter::new();
        let n = 3 * FLOWS as u64;
        for f in 0..n {
            m.delivered(&flow_pkt(f, 100, f as u16), at_ms(10));
        }
        assert!(m.tracked() as usize <= FLOWS);
        let (top, others) = m.top(usize::MAX, at_ms(10));
        let total: u64 = top.iter().map(|t| t.packets).sum::<u64>() + others.packets;
        assert_eq!(total, n);
        assert!(others.packets > 0, "a full table sends flows to others");
        // Stale entries are reused, their counts moved to others.
        let later = at_ms((STALE_SECS + 2) * 1000);
        for f in n..n + 64 {
            m.delivered(&flow_pkt(f, 100, f as u16), later);
        }
        let (top, others) = m.top(usize::MAX, later);
        let total: u64 = top.iter().map(|t| t.packets).sum::<u64>() + others.packets;
        assert_eq!(total, n + 64);
        let fresh = top.iter().filter(|t| t.rate_bps > 0).count();
        assert_eq!(fresh, 64, "the new flows took over stale entries");
    }
}
