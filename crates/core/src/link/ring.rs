//! The driver's TX ring and its byte queue limit (BQL: include/linux/netdevice.h
//! `netdev_tx_sent_queue`, `netdev_tx_completed_queue`).
//!
//! `Dql` is the kernel's dynamic queue limit (lib/dynamic_queue_limits.c
//! `dql_completed`): u32 byte counters that wrap, a limit that grows when the
//! queue starves and shrinks by the lowest slack seen after a hold time of
//! continuously busy operation. `TxRing` is N descriptors (one per frame)
//! whose slots stay busy until their completion is reaped, with BQL on or off.
//! `BulkBudget` is the qdisc's bulk-dequeue rule (`try_bulk_dequeue_skb`).

use crate::time::{Instant, NS_PER_SEC};

/// `DQL_MAX_LIMIT`: the largest limit DQL allows.
pub const DQL_MAX_LIMIT: u32 = 0x7FFF_FFFF - 0x0FFF_FFFF;
/// `dev_tx_weight`: packets one `__qdisc_run` may send before it yields.
pub const DEV_TX_WEIGHT: u32 = 64;

/// `POSDIFF(a, b)`: `a - b` if positive as a signed 32-bit difference, else 0.
fn posdiff(a: u32, b: u32) -> u32 {
    let d = a.wrapping_sub(b);
    if (d as i32) > 0 {
        d
    } else {
        0
    }
}

/// `AFTER_EQ(a, b)` on wrapping u32 counters.
fn after_eq(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

/// The kernel's dynamic queue limit for one TX queue.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Dql {
    num_queued: u32,
    num_completed: u32,
    limit: u32,
    adj_limit: u32,
    last_obj_cnt: u32,
    prev_num_queued: u32,
    prev_ovlimit: u32,
    prev_last_obj_cnt: u32,
    lowest_slack: u32,
    slack_start_time: Instant,
    min_limit: u32,
    max_limit: u32,
    /// Nanoseconds of continuously busy operation before the limit may shrink.
    slack_hold_time: u64,
}

impl Dql {
    /// `dql_init` at `now`: limit 0, hold time 1 s, no min, `DQL_MAX_LIMIT` max.
    pub fn new(now: Instant) -> Dql {
        Dql {
            num_queued: 0,
            num_completed: 0,
            limit: 0,
            adj_limit: 0,
            last_obj_cnt: 0,
            prev_num_queued: 0,
            prev_ovlimit: 0,
            prev_last_obj_cnt: 0,
            lowest_slack: u32::MAX,
            slack_start_time: now,
            min_limit: 0,
            max_limit: DQL_MAX_LIMIT,
            slack_hold_time: NS_PER_SEC,
        }
    }

    /// `dql_avail`: bytes that may still be queued before the limit
    /// (negative once a packet crossed it).
    pub fn avail(&self) -> i64 {
        self.adj_limit.wrapping_sub(self.num_queued) as i32 as i64
    }

    /// STACK_XOFF: the stack may not hand the queue more until completions.
    pub fn is_stopped(&self) -> bool {
        self.avail() < 0
    }

    /// `dql.limit`: the current limit in bytes
    /// (include/linux/dynamic_queue_limits.h `struct dql`), moved by
    /// `dql_completed` (lib/dynamic_queue_limits.c) between `min_limit` and
    /// `max_limit`.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Bytes queued and not yet completed (sysfs `inflight`).
    pub fn inflight(&self) -> u32 {
        self.num_queued.wrapping_sub(self.num_completed)
    }

    /// Pins the bounds (sysfs `limit_min`/`limit_max`); min above max is
    /// raised to max.
    pub fn set_bounds(&mut self, min_limit: u32, max_limit: u32) {
        self.max_limit = max_limit.min(DQL_MAX_LIMIT);
        self.min_limit = min_limit.min(self.max_limit);
    }

    /// `dql_queued` (from `netdev_tx_sent_queue`): the driver posted `bytes`.
    /// The queue stops after the packet that crosses the limit.
    pub fn queued(&mut self, bytes: u32) {
        self.last_obj_cnt = bytes;
        self.num_queued = self.num_queued.wrapping_add(bytes);
    }

    /// `dql_completed` (from `netdev_tx_completed_queue`, once per TX clean
    /// pass): `bytes` finished transmitting. A completion of 0 bytes is
    /// ignored, as by the kernel; more than is in flight is clamped.
    pub fn completed(&mut self, bytes: u32, now: Instant) {
        let count = bytes.min(self.inflight());
        if count == 0 {
            return;
        }
        let num_queued = self.num_queued;
        let completed = self.num_completed.wrapping_add(count);
        let mut limit = self.limit;
        let mut ovlimit = posdiff(num_queued.wrapping_sub(self.num_completed), limit);
        let inprogress = num_queued.wrapping_sub(completed);
        let prev_inprogress = self.prev_num_queued.wrapping_sub(self.num_completed);
        let all_prev_completed = after_eq(completed, self.prev_num_queued);

        if (ovlimit != 0 && inprogress == 0) || (self.prev_ovlimit != 0 && all_prev_completed) {
            // Starved: the queue ran dry while the stack was held back.
            limit = limit
                .wrapping_add(posdiff(completed, self.prev_num_queued))
                .wrapping_add(self.prev_ovlimit);
            self.slack_start_time = now;
            self.lowest_slack = u32::MAX;
        } else if inprogress != 0 && prev_inprogress != 0 && !all_prev_completed {
            // Busy for the whole interval: maybe more is queued than needed.
            let mut slack = posdiff(limit.wrapping_add(self.prev_ovlimit), count.wrapping_mul(2));
            if self.prev_ovlimit != 0 {
                slack = slack.max(posdiff(self.prev_last_obj_cnt, self.prev_ovlimit));
            }
            self.lowest_slack = self.lowest_slack.min(slack);
            if now > self.slack_start_time + self.slack_hold_time {
                limit = posdiff(limit, self.lowest_slack);
                self.slack_start_time = now;
                self.lowest_slack = u32::MAX;
            }
        }

        limit = limit.clamp(self.min_limit, self.max_limit);
        if limit != self.limit {
            self.limit = limit;
            ovlimit = 0;
        }
        self.adj_limit = limit.wrapping_add(completed);
        self.prev_ovlimit = ovlimit;
        self.prev_last_obj_cnt = self.last_obj_cnt;
        self.num_completed = completed;
        self.prev_num_queued = num_queued;
    }
}

/// N TX descriptors, one per frame; a slot is busy from the moment the driver
/// posts the frame until its completion is reaped. The driver stops the
/// queue (DRV_XOFF, `netif_tx_stop_queue`) after a post leaves fewer than
/// `stop_threshold` descriptors free, and wakes it when completions free
/// that many again (drivers/net/virtio_net.c `check_sq_full_and_disable`
/// stops below `2 + MAX_SKB_FRAGS`, room for a fully fragmented skb;
/// `virtnet_poll_tx` wakes at `>=`): the queue is stopped exactly while
/// fewer are free. A threshold of 0 or 1 stops on a full ring. With BQL the
/// DQL limit also stops the queue (STACK_XOFF); without it only the ring
/// does.
#[derive(Clone, Debug)]
pub struct TxRing {
    size: u32,
    busy: u32,
    busy_bytes: u64,
    bql: Option<Dql>,
    stop_threshold: u32,
    stops: u64,
}

impl TxRing {
    /// A ring of `size` descriptors (0 is treated as 1 so frames can move).
    pub fn new(size: u32, bql: bool, now: Instant) -> TxRing {
        TxRing {
            size: size.max(1),
            busy: 0,
            busy_bytes: 0,
            bql: bql.then(|| Dql::new(now)),
            stop_threshold: 0,
            stops: 0,
        }
    }

    /// The driver's early stop: stop when fewer than `threshold`
    /// descriptors are free (at most the ring's size counts).
    pub fn set_stop_threshold(&mut self, threshold: u32) {
        self.stop_threshold = threshold;
    }

    /// Times a post stopped the queue (DRV_XOFF: the ring full, or below
    /// the stop threshold).
    pub fn stops(&self) -> u64 {
        self.stops
    }

    /// The ring's depth in descriptors (ethtool -G `tx`), at least 1.
    pub fn size(&self) -> u32 {
        self.size
    }
    /// Descriptors in use (posted, completion not yet reaped).
    pub fn busy(&self) -> u32 {
        self.busy
    }
    /// Bytes of the frames in `busy` descriptors.
    pub fn busy_bytes(&self) -> u64 {
        self.busy_bytes
    }
    /// Whether the driver has the queue running (no DRV_XOFF): at least
    /// the stop threshold (and at least one) descriptors are free.
    pub fn has_free_slot(&self) -> bool {
        self.size.saturating_sub(self.busy) >= self.stop_threshold.clamp(1, self.size)
    }
    /// The ring's byte queue limits, when BQL is on.
    pub fn dql(&self) -> Option<&Dql> {
        self.bql.as_ref()
    }
    /// The DQL for sysfs-style tuning (`limit_min`, `limit_max`, `hold_time`).
    pub fn dql_mut(&mut self) -> Option<&mut Dql> {
        self.bql.as_mut()
    }

    /// The TX queue is not stopped: a free slot (no DRV_XOFF) and, with BQL,
    /// no STACK_XOFF.
    pub fn can_post(&self) -> bool {
        self.has_free_slot() && !self.bql.as_ref().is_some_and(Dql::is_stopped)
    }

    /// What `qdisc_avail_bulklimit` reports: `dql_avail` with BQL, 0 without.
    pub fn dql_avail(&self) -> i64 {
        self.bql.as_ref().map_or(0, Dql::avail)
    }

    /// Posts a frame of `bytes` into a slot. The caller checks
    /// `has_free_slot` first; a post into a stopped queue is refused
    /// (false: `dev_hard_start_xmit` returns NETDEV_TX_BUSY for the rest of
    /// a batch once `netif_tx_queue_stopped`).
    pub fn post(&mut self, bytes: u32) -> bool {
        if !self.has_free_slot() {
            return false;
        }
        self.busy += 1;
        self.busy_bytes += bytes as u64;
        if let Some(dql) = &mut self.bql {
            dql.queued(bytes);
        }
        if !self.has_free_slot() {
            self.stops += 1;
        }
        true
    }

    /// Counts a frame of `bytes` already in flight (posted to the NIC, its
    /// completion not reaped) into a ring made afresh, even past its size;
    /// BQL counts it queued.
    pub fn adopt(&mut self, bytes: u32) {
        self.busy += 1;
        self.busy_bytes += u64::from(bytes);
        if let Some(dql) = &mut self.bql {
            dql.queued(bytes);
        }
    }

    /// A TX clean pass at `now` reaped `frames` completions of `bytes` in
    /// total: their slots are freed and BQL learns of them.
    pub fn reap(&mut self, frames: u32, bytes: u64, now: Instant) {
        self.busy = self.busy.saturating_sub(frames);
        self.busy_bytes = self.busy_bytes.saturating_sub(bytes);
        if let Some(dql) = &mut self.bql {
            dql.completed(bytes.min(u32::MAX as u64) as u32, now);
        }
    }

    /// Resizes the ring (a smaller ring stops posting until enough slots
    /// are reaped) and switches BQL. Turning BQL on starts a fresh DQL that
    /// counts the bytes already in flight as queued.
    pub fn reconfigure(&mut self, size: u32, bql: bool, now: Instant) {
        self.size = size.max(1);
        match (bql, self.bql.is_some()) {
            (true, false) => {
                let mut dql = Dql::new(now);
                if self.busy_bytes > 0 {
                    dql.queued(self.busy_bytes.min(u32::MAX as u64) as u32);
                }
                self.bql = Some(dql);
            }
            (false, true) => self.bql = None,
            _ => {}
        }
    }
}

/// The bulk-dequeue rule of net/sched/sch_generic.c `try_bulk_dequeue_skb`
/// (called from `dequeue_skb`): after a first packet, keep dequeuing while
/// `bytelimit = dql_avail - first_len - (lengths taken since)` is positive and
/// at most `quota` extra packets have been taken (the quota cap is upstream
/// commit 0345552a653c, "net_sched: limit try_bulk_dequeue_skb() batches").
/// Without BQL `dql_avail` (include/linux/dynamic_queue_limits.h) is 0: no
/// bulking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkBudget {
    bytelimit: i64,
    extra_left: u32,
}

impl BulkBudget {
    /// The budget after the first packet of `first_len` bytes.
    pub fn new(dql_avail: i64, first_len: u32, quota: u32) -> BulkBudget {
        BulkBudget {
            bytelimit: dql_avail - first_len as i64,
            extra_left: quota,
        }
    }
    /// Whether to dequeue one more packet into the batch.
    pub fn wants_more(&self) -> bool {
        self.bytelimit > 0 && self.extra_left > 0
    }
    /// Charges an extra packet of `len` bytes to the batch.
    pub fn take(&mut self, len: u32) {
        self.bytelimit -= len as i64;
        self.extra_left = self.extra_left.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;

    /// Size of the batch the rule forms from a backlog of `lens`.
    fn batch(dql_avail: i64, lens: &[u32], quota: u32) -> usize {
        let mut b = BulkBudget::new(dql_avail, lens[0], quota);
        let mut n = 1;
        while b.wants_more() && n < lens.len() {
            b.take(lens[n]);
            n += 1;
        }
        n
    }

    #[test]
    fn b4_bulk_batch_of_seven() {
        let lens = [1514; 100];
        assert_eq!(batch(10_000, &lens, DEV_TX_WEIGHT), 7);
        let bytes: u32 = lens[..7].iter().sum();
        assert_eq!(bytes, 10_598);
        // No BQL: dql_avail 0 means one packet per qdisc_restart.
        assert_eq!(batch(0, &lens, DEV_TX_WEIGHT), 1);
        // Exact fit: bytelimit reaches 0 and stops without overshoot.
        assert_eq!(batch(3028, &lens, DEV_TX_WEIGHT), 2);
        // Negative avail (over the limit already).
        assert_eq!(batch(-5, &lens, DEV_TX_WEIGHT), 1);
    }

    #[test]
    fn bulk_batch_capped_by_quota() {
        let lens = [64; 1000];
        assert_eq!(batch(1_000_000, &lens, 64), 65);
        assert_eq!(batch(1_000_000, &lens, 3), 4);
        assert_eq!(batch(1_000_000, &lens, 0), 1);
    }

    #[test]
    fn dql_stops_after_the_packet_that_crosses() {
        let mut d = Dql::new(Instant::ZERO);
        d.set_bounds(3000, 3000);
        // Bounds take effect at the next completion, as in the kernel.
        d.queued(100);
        d.completed(100, Instant::ZERO);
        assert_eq!(d.limit(), 3000);
        assert_eq!(d.avail(), 3000);
        d.queued(1514);
        assert!(!d.is_stopped());
        d.queued(1486);
        assert_eq!(d.avail(), 0);
        assert!(!d.is_stopped(), "exactly at the limit is not over it");
        d.queued(1);
        assert!(d.is_stopped());
        assert_eq!(d.inflight(), 3001);
    }

    /// One frame in flight per completion, each completion finds the queue
    /// empty and stopped: the starved branch grows the limit.
    #[test]
    fn dql_grows_from_zero_when_starved() {
        let mut d = Dql::new(Instant::ZERO);
        let mut t = Instant::ZERO;
        assert_eq!(d.avail(), 0);
        // Post until stopped, complete everything, repeat.
        let mut limits = Vec::new();
        for _ in 0..6 {
            while !d.is_stopped() {
                d.queued(1514);
            }
            let inflight = d.inflight();
            t += 1_000;
            d.completed(inflight, t);
            limits.push(d.limit());
        }
        // 1st: 1 pkt over limit 0 -> limit 1514. Then the limit grows by the
        // bytes completed since the previous completion plus prev_ovlimit.
        assert_eq!(limits[0], 1514);
        assert!(limits.windows(2).all(|w| w[1] > w[0]), "{limits:?}");
        assert_eq!(limits[1], 1514 + 2 * 1514);
    }

    /// Busy completions with slack only shrink the limit after the hold time,
    /// and then by the lowest slack seen.
    #[test]
    fn dql_shrinks_after_hold_time() {
        let mut d = Dql::new(Instant::ZERO);
        d.set_bounds(30_000, DQL_MAX_LIMIT);
        d.queued(1000);
        d.completed(1000, Instant::ZERO);
        assert_eq!(d.limit(), 30_000);
        d.set_bounds(0, DQL_MAX_LIMIT);
        // Keep 10 frames of 1000 B queued; complete 2 per event every 1 ms:
        // never starved, slack = 30000 - 2*2000 = 26000.
        for _ in 0..10 {
            d.queued(1000);
        }
        let mut t = Instant::ZERO;
        let mut shrunk_at = None;
        for _ in 0..1_500 {
            t += NS_PER_MS;
            d.completed(2000, t);
            d.queued(1000);
            d.queued(1000);
            if d.limit() < 30_000 && shrunk_at.is_none() {
                shrunk_at = Some(t);
            }
        }
        let at = shrunk_at.expect("limit shrinks");
        assert!(at.nanos() > NS_PER_SEC, "not before the hold time: {at:?}");
        assert!(at.nanos() <= NS_PER_SEC + 2 * NS_PER_MS, "{at:?}");
        // 30000 - 26000 = 4000 after the first shrink.
        assert!(d.limit() <= 4_000, "limit {}", d.limit());
    }

    /// A hand-computed trace through both starvation rules and the slack
    /// rule (one 1514 B frame per completion, refilled to XOFF each time).
    #[test]
    fn dql_exact_trace() {
        let ms = Instant::from_millis;
        let mut d = Dql::new(Instant::ZERO);
        d.queued(1514);
        // Over the limit and empty after: starved, limit 0 -> 1514.
        d.completed(1514, ms(1));
        assert_eq!((d.limit(), d.avail()), (1514, 1514));
        d.queued(1514);
        d.queued(1514);
        assert!(d.is_stopped());
        // Over the limit but not empty, nothing in flight before: no change.
        d.completed(1514, ms(2));
        assert_eq!((d.limit(), d.prev_ovlimit, d.avail()), (1514, 1514, 0));
        d.queued(1514);
        // Over the limit last time and everything queued then is done:
        // starved, limit += prev_ovlimit.
        d.completed(1514, ms(3));
        assert_eq!(
            (d.limit(), d.prev_ovlimit, d.slack_start_time),
            (3028, 0, ms(3))
        );
        d.queued(1514);
        d.queued(1514);
        // All previously queued completed, no prev_ovlimit: neither branch.
        d.completed(1514, ms(4));
        assert_eq!((d.limit(), d.prev_ovlimit), (3028, 1514));
        d.queued(1514);
        // Busy all interval: slack = max(3028 + 1514 - 2 * 1514,
        // 1514 - 1514) = 1514; the limit shrinks only strictly after the
        // 1 s hold time since the last starvation (3 ms).
        let mut at_hold = d.clone();
        at_hold.completed(1514, ms(3) + NS_PER_SEC);
        assert_eq!((at_hold.limit(), at_hold.lowest_slack), (3028, 1514));
        d.completed(1514, ms(3) + NS_PER_SEC + 1);
        assert_eq!((d.limit(), d.lowest_slack), (1514, u32::MAX));
    }

    #[test]
    fn dql_counters_wrap() {
        let mut d = Dql::new(Instant::ZERO);
        d.num_queued = u32::MAX - 1000;
        d.num_completed = u32::MAX - 1000;
        d.prev_num_queued = u32::MAX - 1000;
        d.adj_limit = u32::MAX - 1000;
        for _ in 0..4 {
            d.queued(1514);
            d.completed(1514, Instant::from_micros(1));
        }
        assert_eq!(d.inflight(), 0);
        assert!(d.limit() >= 1514);
        assert!(d.avail() > 0);
    }

    #[test]
    fn dql_ignores_zero_and_excess_completions() {
        let mut d = Dql::new(Instant::ZERO);
        d.completed(0, Instant::ZERO);
        d.completed(500, Instant::ZERO);
        assert_eq!((d.limit(), d.inflight()), (0, 0));
        d.queued(100);
        d.completed(10_000, Instant::ZERO);
        assert_eq!(d.inflight(), 0);
    }

    #[test]
    fn ring_bounds_inflight_without_bql() {
        let mut r = TxRing::new(4, false, Instant::ZERO);
        assert_eq!(r.dql_avail(), 0);
        for _ in 0..4 {
            assert!(r.can_post());
            assert!(r.post(1514));
        }
        assert!(!r.can_post());
        assert!(!r.post(1514));
        assert_eq!((r.busy(), r.busy_bytes()), (4, 4 * 1514));
        r.reap(3, 3 * 1514, Instant::ZERO);
        assert_eq!(r.busy(), 1);
        assert!(r.can_post());
    }

    /// virtio_net's rule with MAX_SKB_FRAGS 17: stop after a post leaves
    /// fewer than 19 of 20 descriptors free, wake when 19 are free again.
    #[test]
    fn early_stop_below_the_threshold_and_wake_at_it() {
        let mut r = TxRing::new(20, false, Instant::ZERO);
        r.set_stop_threshold(19);
        assert!(r.post(1000), "20 free");
        assert!(r.can_post(), "19 free: still running");
        assert_eq!(r.stops(), 0);
        assert!(r.post(1000));
        assert!(!r.can_post(), "18 free: stopped");
        assert_eq!(r.stops(), 1);
        assert!(!r.post(1000), "a stopped queue takes nothing");
        r.reap(1, 1000, Instant::ZERO);
        assert!(r.can_post(), "19 free: woken");
        // The threshold counts at most the ring's size; 0 and 1 stop on
        // a full ring.
        r.set_stop_threshold(500);
        assert!(!r.can_post());
        r.reap(1, 1000, Instant::ZERO);
        assert!(
            r.can_post(),
            "empty: a threshold past the size waits for all"
        );
        for t in [0, 1] {
            let mut r = TxRing::new(2, false, Instant::ZERO);
            r.set_stop_threshold(t);
            assert!(r.post(1) && r.post(1) && !r.post(1));
            assert_eq!(r.stops(), 1);
        }
    }

    #[test]
    fn ring_with_bql_stops_on_xoff_and_reconfigures() {
        let mut r = TxRing::new(256, true, Instant::ZERO);
        assert!(r.can_post());
        r.post(1514);
        assert!(!r.can_post(), "limit 0: stop after the first packet");
        r.reap(1, 1514, Instant::from_micros(10));
        assert!(r.can_post());
        assert_eq!(r.dql().unwrap().limit(), 1514);
        r.reconfigure(256, false, Instant::from_micros(10));
        assert!(r.dql().is_none());
        r.post(1000);
        r.post(1000);
        r.reconfigure(1, true, Instant::from_micros(20));
        assert_eq!(r.dql().unwrap().inflight(), 2000);
        assert!(!r.can_post(), "shrunk ring below occupancy");
        r.reap(2, 2000, Instant::from_micros(30));
        assert_eq!(r.dql().unwrap().inflight(), 0);
        assert!(r.can_post());
        let r0 = TxRing::new(0, false, Instant::ZERO);
        assert_eq!(r0.size(), 1);
    }

    proptest::proptest! {
        /// `Path::xmit` keeps the frames a ring takes at the head of the
        /// batch: once a ring refuses a frame it refuses every later one
        /// until a completion is reaped, whatever the sizes, stop
        /// threshold and BQL, and a refusal changes nothing.
        #[test]
        fn a_refusing_ring_refuses_every_later_frame(
            size in 0u32..12,
            threshold in 0u32..14,
            bql: bool,
            lens in proptest::collection::vec(60u32..70_000, 1..40),
        ) {
            let mut ring = TxRing::new(size, bql, Instant::ZERO);
            ring.set_stop_threshold(threshold);
            let mut refused = false;
            for len in lens {
                let before = (ring.busy(), ring.busy_bytes(), ring.stops());
                let took = ring.post(len);
                proptest::prop_assert!(!(refused && took), "took a frame after refusing one");
                if !took {
                    proptest::prop_assert_eq!(before, (ring.busy(), ring.busy_bytes(), ring.stops()));
                }
                refused |= !took;
            }
        }
    }
}
