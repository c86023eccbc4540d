//! The noop qdisc (`noop_qdisc`, net/sched/sch_generic.c): what a class
//! holds after its qdisc is deleted where the kernel grafts nothing in its
//! place (TBF's `tbf_graft` and mq's `dev_graft_qdisc` put `&noop_qdisc`
//! there). It drops every frame (`noop_enqueue`), holds nothing and keeps
//! no counters of its own; tc does not list it (it is built in, handle 0),
//! and a class over it shows no `leaf`. Adding a qdisc under the class
//! replaces it. Not a kind users can add: the kernel does not register it.

use super::{QdiscDump, QdiscStats, Verdict};
use crate::handle::Handle;
use crate::packet::{DropReason, Drops, Packet};
use crate::time::Instant;

/// The kind name the tree and the tc front end recognise it by.
pub const KIND: &str = "noop";

/// A class's empty place: drops everything (reason `NoQdisc`).
#[derive(Debug)]
pub struct Noop {
    parent: Handle,
}

impl Noop {
    /// The noop qdisc left in a class under `parent` when its qdisc is deleted.
    pub fn new(parent: Handle) -> Noop {
        Noop { parent }
    }
}

impl super::Qdisc for Noop {
    fn kind(&self) -> &'static str {
        KIND
    }

    fn enqueue(&mut self, pkt: Packet, _now: Instant, drops: &mut Drops) -> Verdict {
        drops.push(pkt, DropReason::NoQdisc);
        Verdict::Dropped
    }

    fn dequeue(&mut self, _now: Instant, _drops: &mut Drops) -> Option<Packet> {
        None
    }

    fn peek(&mut self, _now: Instant, _drops: &mut Drops) -> Option<&Packet> {
        None
    }

    fn qlen(&self) -> u32 {
        0
    }

    fn backlog(&self) -> u64 {
        0
    }

    fn counters(&self) -> QdiscStats {
        QdiscStats::default()
    }

    fn reset(&mut self, _drops: &mut Drops) {}

    fn dump(&self, _now: Instant) -> QdiscDump {
        QdiscDump {
            kind: KIND.into(),
            handle: 0,
            parent: self.parent,
            ..QdiscDump::default()
        }
    }

    fn drain_all(&mut self) -> Vec<Packet> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::Qdisc;

    #[test]
    fn drops_everything_and_holds_nothing() {
        let mut q = Noop::new(0x0001_0001);
        let mut drops = Drops::new();
        for i in 0..3 {
            assert_eq!(
                q.enqueue(pkt(i, 100), Instant::ZERO, &mut drops),
                Verdict::Dropped
            );
        }
        assert_eq!(drops.len(), 3);
        assert!(drops.drain().all(|(_, r)| r == DropReason::NoQdisc));
        assert_eq!((q.qlen(), q.backlog()), (0, 0));
        assert!(q.dequeue(Instant::ZERO, &mut drops).is_none());
        assert_eq!(q.stats(), QdiscStats::default());
        assert_eq!(q.dump(Instant::ZERO).handle, 0);
    }
}
