//! The mailboxes between the datapath threads and their readers: one slot
//! per direction, into which that direction's thread offers each
//! `LaneSnapshot` with `try_lock` and skips it if a reader holds the slot
//! (only for as long as cloning an `Arc` takes), so no reader can ever hold
//! up a hot path. A reader takes both and merges them into one
//! `LiveSnapshot`; the merge is kept until either direction publishes
//! again, so readers that ask more often than the threads publish share it.

use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use crate::dir::Dir;

use super::snapshot::{LaneSnapshot, LiveSnapshot};

/// A slot of the mailbox.
type Slot<T> = Mutex<Option<Arc<T>>>;

/// The last merge: the two lane snapshots it was made of, and the result.
type Merged = (Arc<LaneSnapshot>, Arc<LaneSnapshot>, Arc<LiveSnapshot>);

/// The mailbox snapshots are published into, one slot per direction.
#[derive(Clone, Debug, Default)]
pub struct SnapshotReader {
    slots: Arc<[Slot<LaneSnapshot>; 2]>,
    merged: Arc<Mutex<Option<Merged>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SnapshotReader {
    /// The link as of both directions' most recent snapshots, once each
    /// has published one.
    pub fn latest(&self) -> Option<Arc<LiveSnapshot>> {
        let l2r = lock(&self.slots[0]).clone()?;
        let r2l = lock(&self.slots[1]).clone()?;
        let mut merged = lock(&self.merged);
        if let Some((a, b, m)) = merged.as_ref() {
            if Arc::ptr_eq(a, &l2r) && Arc::ptr_eq(b, &r2l) {
                return Some(m.clone());
            }
        }
        let m = Arc::new(LiveSnapshot::merge([&*l2r, &*r2l]));
        *merged = Some((l2r, r2l, m.clone()));
        Some(m)
    }

    /// Offers direction `dir`'s snapshot without ever waiting: skipped if
    /// a reader holds its slot right now.
    pub(crate) fn offer(&self, dir: Dir, snap: LaneSnapshot) {
        match self.slots[dir.index()].try_lock() {
            Ok(mut g) => *g = Some(Arc::new(snap)),
            Err(TryLockError::Poisoned(p)) => *p.into_inner() = Some(Arc::new(snap)),
            Err(TryLockError::WouldBlock) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::Bridge;
    use crate::datapath::snapshot::RecordedLateness;
    use crate::datapath::{PoolCounters, Wakeups};
    use crate::port::PortCounters;
    use crate::time::Instant;

    fn idle_bridge() -> Bridge {
        use crate::link::{LinkParams, Path};
        use crate::qdisc::tree::{DevSpec, QdiscTree};
        use crate::qdisc::{pfifo_fast::PfifoFast, QdiscCtx};
        let path = |dir| {
            let root = Box::new(PfifoFast::new(QdiscCtx::default()));
            let dev = DevSpec::new(dir, crate::qdisc::kinds::BUILTIN);
            Path::new(LinkParams::default(), QdiscTree::with_root(dev, root))
        };
        Bridge::new(path(Dir::LeftToRight), path(Dir::RightToLeft))
    }

    /// Direction `dir`'s snapshot at `ms`, its lateness samples `late` ns,
    /// having read `rx` frames and written `tx`.
    fn lane(dir: Dir, ms: u64, late: &[u64], rx: u64, tx: u64) -> LaneSnapshot {
        let at = Instant::from_millis(ms);
        let mut recorded = RecordedLateness::new("test").unwrap();
        for &ns in late {
            recorded.record(ns);
        }
        let lateness = recorded.share();
        LaneSnapshot {
            at,
            path: idle_bridge().lane(dir).path().snapshot(at),
            capture: None,
            release_lateness: lateness.clone(),
            lateness,
            wakeups: Wakeups {
                total: 1,
                cpu_ns: 1000,
                ..Wakeups::default()
            },
            rx_port: PortCounters {
                rx_frames: rx,
                ..PortCounters::default()
            },
            tx_port: PortCounters {
                tx_frames: tx,
                ..PortCounters::default()
            },
            pool: PoolCounters {
                in_use: 2,
                refused: 1,
            },
            gro: Default::default(),
            stages: crate::datapath::StageBreakdown {
                untracked: rx,
                ..Default::default()
            },
        }
    }

    #[test]
    fn snapshot_slot_skips_instead_of_waiting() {
        let reader = SnapshotReader::default();
        assert!(reader.latest().is_none());
        let held = reader.slots[0].lock().unwrap();
        // With the slot held, offering must return at once (and skip).
        let snap = lane(Dir::LeftToRight, 1, &[], 0, 0);
        reader.offer(Dir::LeftToRight, snap.clone());
        drop(held);
        reader.offer(Dir::RightToLeft, lane(Dir::RightToLeft, 1, &[], 0, 0));
        assert!(reader.latest().is_none(), "left to right was skipped");
        reader.offer(Dir::LeftToRight, snap);
        assert_eq!(reader.latest().unwrap().at, Instant::from_millis(1));
    }

    #[test]
    fn readers_see_both_directions_merged_and_share_the_merge() {
        let reader = SnapshotReader::default();
        reader.offer(Dir::LeftToRight, lane(Dir::LeftToRight, 7, &[10, 20], 5, 3));
        assert!(reader.latest().is_none(), "one direction is not the link");
        // Two samples of 10 and 20 ns on one side, 98 of 1 µs on the
        // other: percentiles of the 100 together.
        let r2l_late = vec![1000; 98];
        reader.offer(Dir::RightToLeft, lane(Dir::RightToLeft, 5, &r2l_late, 9, 4));
        let m = reader.latest().unwrap();
        assert_eq!(m.at, Instant::from_millis(5), "the older of the two");
        assert_eq!(m.bridge.at, m.at);
        assert_eq!(
            (m.left_port.rx_frames, m.left_port.tx_frames),
            (5, 4),
            "left is read by left→right and written by right→left"
        );
        assert_eq!((m.right_port.rx_frames, m.right_port.tx_frames), (9, 3));
        assert_eq!(m.lateness.samples, 100);
        assert_eq!(m.lateness.p50_ns, 1000);
        assert_eq!(m.lateness.max_ns, 1000);
        assert_eq!(m.release_lateness, m.lateness);
        assert_eq!((m.wakeups.total, m.wakeups.cpu_ns), (2, 2000));
        assert_eq!(
            m.stages.map(|s| s.untracked),
            [5, 9],
            "each direction's stages apart, left→right first"
        );
        assert_eq!(
            m.pool,
            PoolCounters {
                in_use: 4,
                refused: 2
            }
        );
        assert!(m.bridge.capture.is_none());
        assert!(
            Arc::ptr_eq(&m, &reader.latest().unwrap()),
            "one merge shared"
        );
        reader.offer(Dir::LeftToRight, lane(Dir::LeftToRight, 9, &[], 6, 3));
        let again = reader.latest().unwrap();
        assert!(!Arc::ptr_eq(&m, &again), "a new snapshot is merged anew");
        assert_eq!(again.left_port.rx_frames, 6);
        assert_eq!(again.at, Instant::from_millis(5));
    }
}
