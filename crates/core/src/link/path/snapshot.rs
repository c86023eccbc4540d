//! What a path looks like at one instant (`PathSnapshot`, for the TUI, the
//! control socket and reports) and the conservation counters it keeps
//! (`PathCounters`). A `FlowMeter` (on unless `Path::set_flow_meter(false)`)
//! counts each frame delivered or dropped against its flow, O(1) and
//! without allocating; snapshots add it to the occupancy of every queue (the
//! qdisc's, the TX ring's and the delay line's), which they work out by
//! walking the queued frames, so the per-frame path pays only the meter.

use super::super::ring::TxRing;
use super::super::transit::TransitSummary;
use super::super::LinkParams;
use super::Path;
use crate::packet::{DropCounts, DropReason, Packet};
use crate::qdisc::dump::{FlowTraffic, QueueId, QueueOccupancy};
use crate::qdisc::{FlowListing, Qdisc, QdiscDump};
use crate::time::Instant;
use std::collections::BTreeMap;

/// Per-direction conservation counters:
/// `frames_in + duplicated = frames_out + drops + held`.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct PathCounters {
    /// Frames that entered the path (admitted at ingress or refused there).
    pub frames_in: u64,
    /// Bytes of the frames that entered the path (accounted lengths).
    pub bytes_in: u64,
    /// Frames delivered to the receiving side.
    pub frames_out: u64,
    /// Bytes of the frames delivered to the receiving side.
    pub bytes_out: u64,
    /// Extra copies made by the duplication impairment.
    pub duplicated: u64,
    /// Frames delivered with a flipped bit by the corruption impairment.
    pub corrupted: u64,
    /// Indexed by `DropReason::index()`.
    pub drops: DropCounts,
    /// Batches handed to the NIC (`dev_hard_start_xmit` calls, one TX
    /// doorbell each): bulk dequeue makes them fewer per frame.
    #[serde(default)]
    pub xmit_batches: u64,
}

impl PathCounters {
    /// All drops, whatever the reason.
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }

    /// Checks `frames_in + duplicated = frames_out + drops + held`, with
    /// `held` the frames still inside the path; the error shows both sides.
    pub fn check_conservation(&self, held: u64) -> Result<(), ConservationError> {
        let broken = ConservationError {
            frames_in: self.frames_in,
            duplicated: self.duplicated,
            frames_out: self.frames_out,
            dropped: self.total_drops(),
            held,
        };
        if broken.arrived() == broken.left() {
            Ok(())
        } else {
            Err(broken)
        }
    }
}

/// Counters that break `frames_in + duplicated = frames_out + drops + held`:
/// the five terms, each as counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "conservation broken: in {frames_in} + duplicated {duplicated} = {} but out {frames_out} + dropped {dropped} + held {held} = {}",
    self.arrived(),
    self.left()
)]
pub struct ConservationError {
    /// Frames that entered the path.
    pub frames_in: u64,
    /// Extra copies made by the duplication impairment.
    pub duplicated: u64,
    /// Frames delivered to the receiving side.
    pub frames_out: u64,
    /// Frames dropped, whatever the reason.
    pub dropped: u64,
    /// Frames still inside the path.
    pub held: u64,
}

impl ConservationError {
    /// Frames that arrived: `frames_in + duplicated` (no overflow).
    pub fn arrived(&self) -> u128 {
        u128::from(self.frames_in) + u128::from(self.duplicated)
    }

    /// Frames accounted for: `frames_out + dropped + held` (no overflow).
    pub fn left(&self) -> u128 {
        u128::from(self.frames_out) + u128::from(self.dropped) + u128::from(self.held)
    }
}

/// What a path looks like at one instant (for the TUI, the control socket
/// and reports).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PathSnapshot {
    /// When the snapshot was taken.
    pub at: Instant,
    /// The link settings in force.
    pub params: LinkParams,
    /// Seed of the impairments' random generator.
    pub seed: u64,
    /// The conservation counters.
    pub counters: PathCounters,
    /// Drops by `DropReason::name()`, only the non-zero ones (not read back
    /// from JSON: rebuild it from `counters.drops`).
    #[serde(default, skip_deserializing)]
    pub drops_by_reason: BTreeMap<&'static str, u64>,
    /// Frames inside the path (qdisc, requeued, ring, wire, delay, RX).
    pub held: u64,
    /// Frames put back by the driver (`NETDEV_TX_BUSY`) waiting to be resent,
    /// and how often that happened.
    pub requeued: u32,
    /// Times the driver put a frame back (`NETDEV_TX_BUSY`; the qdisc's
    /// `requeues`).
    pub requeues: u64,
    /// TX ring: descriptors in use, of how many, and their bytes.
    pub ring_used: u32,
    /// The ring's depth in descriptors.
    pub ring_size: u32,
    /// Bytes of the frames in the used descriptors.
    pub ring_bytes: u64,
    /// BQL limit and in-flight bytes (None with BQL off).
    pub bql_limit: Option<u32>,
    /// Bytes queued to the ring and not yet completed, BQL's `inflight` (None
    /// with BQL off).
    pub bql_inflight: Option<u32>,
    /// Each TX queue's ring and BQL under mq (one entry per queue; the
    /// `ring_*` and `bql_*` fields above are their sums); a path with one
    /// ring lists it alone.
    #[serde(default)]
    pub tx_queues: Vec<TxQueueStats>,
    /// Frames posted to the NIC and not yet departed.
    pub on_wire: u32,
    /// When the frame on the wire leaves (none: the wire is idle).
    #[serde(default)]
    pub wire_departs: Option<Instant>,
    /// Frames in propagation.
    pub in_flight: u32,
    /// Frames held by RX coalescing.
    pub rx_held: u32,
    /// The interrupt moderation in force, `[tx, rx]` as (usecs, frames):
    /// the ethtool values, or net_dim's current profile under
    /// `adaptive-tx`/`adaptive-rx`.
    #[serde(default)]
    pub moderation: [(u32, u32); 2],
    /// The qdisc tree as `tc -s qdisc show` and `tc -s class show` dump it.
    pub qdisc: QdiscDump,
    /// Transit times (ingress to delivery) of the delivered frames.
    #[serde(default)]
    pub transit: TransitSummary,
    /// The flows of the frames in the TX ring (the one being serialized
    /// included), each waiting since it was posted.
    #[serde(default)]
    pub ring_flows: QueueOccupancy,
    /// The flows of the frames in propagation ("on the wire"), each
    /// waiting since it left the serializer.
    #[serde(default)]
    pub wire_flows: QueueOccupancy,
    /// The flows of the frames in the requeue slot, each waiting since it
    /// arrived at the path (they count in the root's qlen and backlog, as
    /// tc shows them, but are in no qdisc queue's `occupancy`).
    #[serde(default = "requeued_queue")]
    pub requeued_flows: QueueOccupancy,
    /// The flows of the frames held by RX coalescing, each waiting since
    /// it arrived at the far end.
    #[serde(default = "rx_queue")]
    pub rx_flows: QueueOccupancy,
    /// The flow meter's flows with the highest rate over the last second
    /// (as many as the listing's bound; all tracked ones for
    /// `FlowListing::All`), empty with the meter off.
    #[serde(default)]
    pub flows: Vec<FlowTraffic>,
    /// Every other flow the meter counted, summed up (its `flow` and
    /// `hash` are zero).
    #[serde(default)]
    pub other_flows: FlowTraffic,
    /// Flows the meter tracks by name (of `meter::FLOWS`).
    #[serde(default)]
    pub flows_tracked: u32,
    /// When the path first ran (the first instant its driver advanced it
    /// to: the link coming up), `None` before that.
    #[serde(default)]
    pub up_since: Option<Instant>,
}

/// A frame on the wire that leaves later than this has stalled the link
/// (a rate typed as 100 for 100mbit): reports say so.
pub const STALL_NS: u64 = crate::time::NS_PER_SEC;

/// One TX queue's ring and BQL in a `PathSnapshot` (sysfs
/// `/sys/class/net/DEV/queues/tx-N/byte_queue_limits/{limit,inflight}`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TxQueueStats {
    /// Descriptors in use.
    pub ring_used: u32,
    /// The ring's depth in descriptors.
    pub ring_size: u32,
    /// Bytes of the frames in the used descriptors.
    pub ring_bytes: u64,
    /// BQL's limit (None with BQL off).
    pub bql_limit: Option<u32>,
    /// BQL's in-flight bytes (None with BQL off).
    pub bql_inflight: Option<u32>,
    /// Times the driver stopped the queue (DRV_XOFF: the ring full, or
    /// fewer free descriptors than `tx_stop_threshold`).
    #[serde(default)]
    pub stops: u64,
}

impl TxQueueStats {
    fn of(ring: &TxRing) -> TxQueueStats {
        let dql = ring.dql();
        TxQueueStats {
            ring_used: ring.busy(),
            ring_size: ring.size(),
            ring_bytes: ring.busy_bytes(),
            bql_limit: dql.map(|d| d.limit()),
            bql_inflight: dql.map(|d| d.inflight()),
            stops: ring.stops(),
        }
    }
}

fn requeued_queue() -> QueueOccupancy {
    QueueOccupancy {
        queue: QueueId::Requeued,
        ..QueueOccupancy::default()
    }
}

fn rx_queue() -> QueueOccupancy {
    QueueOccupancy {
        queue: QueueId::RxHeld,
        ..QueueOccupancy::default()
    }
}

impl PathSnapshot {
    /// The link's own queues past the qdisc, in the order a frame goes
    /// through them: the requeue slot, the TX ring, the wire, RX held.
    /// With the qdisc tree's queues they hold every frame of `held`.
    pub fn link_queues(&self) -> [&QueueOccupancy; 4] {
        [
            &self.requeued_flows,
            &self.ring_flows,
            &self.wire_flows,
            &self.rx_flows,
        ]
    }

    /// How long until the frame on the wire leaves, when that is more
    /// than `STALL_NS`: everything behind it waits that long.
    pub fn stall_ns(&self) -> Option<u64> {
        let wait = self.wire_departs?.saturating_since(self.at);
        (wait > STALL_NS).then_some(wait)
    }
}

impl Path {
    /// The path at `now`, every flow of its flow-queueing qdiscs listed.
    pub fn snapshot(&self, now: Instant) -> PathSnapshot {
        self.snapshot_listing(now, FlowListing::All)
    }

    /// `snapshot` with the qdisc's flow queues listed as `listing` says
    /// (live snapshots are bounded: `FlowListing::Top`).
    pub fn snapshot_listing(&self, now: Instant, listing: FlowListing) -> PathSnapshot {
        let drops_by_reason = DropReason::ALL
            .iter()
            .map(|r| (r.name(), self.counters.drops[r.index()]))
            .filter(|(_, n)| *n > 0)
            .collect();
        let tx_queues: Vec<TxQueueStats> = self
            .queues
            .iter()
            .map(|q| TxQueueStats::of(&q.ring))
            .collect();
        let sum = |f: fn(&TxQueueStats) -> Option<u32>| {
            tx_queues
                .iter()
                .map(f)
                .try_fold(0u32, |acc, v| v.map(|v| acc.saturating_add(v)))
        };
        let (bql_limit, bql_inflight) = (sum(|q| q.bql_limit), sum(|q| q.bql_inflight));
        let mut qdisc = self.qdisc.dump_listing(now, listing);
        self.annotate(&mut qdisc, now);
        let ring_flows = self.occupancy(QueueId::Ring, self.serializer.queued(), now);
        let wire_flows = self.occupancy(QueueId::Wire, self.delay.queued(), now);
        let requeued = self
            .queues
            .iter()
            .flat_map(|q| q.requeued.iter())
            .map(|p| (p, p.meta.arrival));
        let requeued_flows = self.occupancy(QueueId::Requeued, requeued, now);
        let rx_flows = self.occupancy(QueueId::RxHeld, self.rx.queued(), now);
        let bound = match listing {
            FlowListing::All => usize::MAX,
            FlowListing::Top(n) => n,
        };
        let (flows, other_flows) = self
            .meter
            .as_ref()
            .map(|m| m.top(bound, now))
            .unwrap_or_default();
        PathSnapshot {
            at: now,
            params: self.params,
            seed: self.shape.impairments.seed,
            counters: self.counters.clone(),
            drops_by_reason,
            held: self.held(),
            requeued: self.requeued_len() as u32,
            requeues: self.requeues,
            ring_used: tx_queues.iter().map(|q| q.ring_used).sum(),
            ring_size: tx_queues.iter().map(|q| q.ring_size).sum(),
            ring_bytes: tx_queues.iter().map(|q| q.ring_bytes).sum(),
            bql_limit,
            bql_inflight,
            tx_queues,
            on_wire: self.serializer.len() as u32,
            wire_departs: self.serializer.next_event(),
            in_flight: self.delay.len() as u32,
            rx_held: self.rx.len() as u32,
            moderation: [self.tx_done.moderation(), self.rx.moderation()],
            qdisc,
            transit: self.transit.summary(),
            ring_flows,
            wire_flows,
            requeued_flows,
            rx_flows,
            flows,
            other_flows,
            flows_tracked: self.meter.as_ref().map_or(0, |m| m.tracked()),
            up_since: self.up_since,
        }
    }

    /// Fills in the meter's counts of every flow row of `dump` and below.
    fn annotate(&self, dump: &mut QdiscDump, now: Instant) {
        let Some(m) = &self.meter else {
            return;
        };
        for f in &mut dump.flows {
            f.traffic = m.lookup(f.hash, now);
        }
        for f in dump.occupancy.iter_mut().flat_map(|o| o.flows.iter_mut()) {
            f.traffic = m.lookup(f.hash, now);
        }
        for ch in &mut dump.children {
            self.annotate(ch, now);
        }
    }

    /// `QueueOccupancy::of` with the meter's counts filled in.
    fn occupancy<'a>(
        &self,
        queue: QueueId,
        queued: impl Iterator<Item = (&'a Packet, Instant)> + Clone,
        now: Instant,
    ) -> QueueOccupancy {
        let mut o = QueueOccupancy::of(queue, queued, now);
        if let Some(m) = &self.meter {
            for f in &mut o.flows {
                f.traffic = m.lookup(f.hash, now);
            }
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::path;
    use super::*;
    use crate::link::LinkParams;
    use crate::qdisc::testutil::pkt;
    use crate::time::NS_PER_SEC;

    #[test]
    fn conservation_check_accepts_balanced_counters_and_names_a_gap() {
        let mut c = PathCounters {
            frames_in: 5,
            duplicated: 1,
            frames_out: 3,
            ..PathCounters::default()
        };
        c.drops[0] = 2;
        assert_eq!(c.check_conservation(1), Ok(()));
        let e = c.check_conservation(0).unwrap_err();
        assert_eq!((e.arrived(), e.left()), (6, 5));
        assert_eq!(
            e.to_string(),
            "conservation broken: in 5 + duplicated 1 = 6 but out 3 + dropped 2 + held 0 = 5"
        );
        // Counters near u64::MAX do not overflow the sums.
        c.frames_in = u64::MAX;
        assert!(c.check_conservation(u64::MAX).is_err());
    }

    #[test]
    fn a_stalled_wire_is_seen_in_the_snapshot() {
        let fast = LinkParams {
            rate_bytes_ps: 12_500_000,
            ..LinkParams::default()
        };
        let mut p = path(fast);
        p.ingress(pkt(1, 1500), Instant::ZERO);
        assert_eq!(p.snapshot(Instant::ZERO).stall_ns(), None);
        p.set_params(
            LinkParams {
                rate_bytes_ps: 12,
                ..fast
            },
            Instant::ZERO,
        );
        let s = p.snapshot(Instant::from_millis(1_000));
        assert!(
            s.stall_ns().unwrap() > 100 * NS_PER_SEC,
            "{:?}",
            s.wire_departs
        );
        p.set_params(fast, Instant::from_millis(1_000));
        assert_eq!(p.snapshot(Instant::from_millis(1_000)).stall_ns(), None);
    }
}
