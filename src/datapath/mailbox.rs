//! The one-slot mailbox between the datapath and its readers: the thread
//! offers each snapshot with `try_lock` and skips it if a reader holds the
//! slot (only for as long as cloning an `Arc` takes), so no reader can ever
//! hold up the hot path.

use std::sync::{Arc, Mutex, TryLockError};

use super::snapshot::LiveSnapshot;

/// The one-slot mailbox snapshots are published into.
#[derive(Clone, Debug, Default)]
pub struct SnapshotReader {
    slot: Arc<Mutex<Option<Arc<LiveSnapshot>>>>,
}

impl SnapshotReader {
    /// The most recent snapshot, if one was published yet.
    pub fn latest(&self) -> Option<Arc<LiveSnapshot>> {
        match self.slot.lock() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Offers a snapshot without ever waiting: skipped if a reader holds the
    /// slot right now.
    pub(crate) fn offer(&self, snap: LiveSnapshot) {
        match self.slot.try_lock() {
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
    use crate::datapath::{LatenessSummary, PoolCounters, Wakeups};
    use crate::port::PortCounters;
    use crate::time::Instant;

    fn idle_bridge() -> Bridge {
        use crate::link::{LinkParams, Path};
        use crate::qdisc::{pfifo_fast::PfifoFast, QdiscCtx};
        let path = || {
            Path::new(
                LinkParams::default(),
                Box::new(PfifoFast::new(QdiscCtx::default())),
            )
        };
        Bridge::new(path(), path())
    }

    #[test]
    fn snapshot_slot_skips_instead_of_waiting() {
        let reader = SnapshotReader::default();
        assert!(reader.latest().is_none());
        let held = reader.slot.lock().unwrap();
        // With the slot held, offering must return at once (and skip).
        let snap = LiveSnapshot {
            at: Instant::from_millis(1),
            bridge: idle_bridge().snapshot(Instant::from_millis(1)),
            lateness: LatenessSummary::default(),
            release_lateness: LatenessSummary::default(),
            wakeups: Wakeups::default(),
            left_port: PortCounters::default(),
            right_port: PortCounters::default(),
            pool: PoolCounters::default(),
        };
        reader.offer(snap.clone());
        drop(held);
        assert!(reader.latest().is_none());
        reader.offer(snap);
        assert_eq!(reader.latest().unwrap().at, Instant::from_millis(1));
    }
}
