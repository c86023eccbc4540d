//! Peeking by dequeuing, the kernel's `qdisc_peek_dequeued`: codel, fq_codel,
//! sfq, tbf, pie and fq_pie only know their next frame by running their
//! dequeue logic (CoDel drops, DRR rounds, perturbation, token checks, PIE's
//! delay and rate measurement), so `peek` takes the
//! frame out and parks it until `dequeue` hands it out; a parked frame still
//! counts in qlen/backlog. `ParkOnPeek` writes that plumbing once, and
//! `drop_all_held` the emptying half of `Qdisc::reset`.

use super::{Qdisc, QdiscStats};
use crate::packet::{DropReason, Drops, Packet};
use crate::time::Instant;

/// A qdisc whose `peek` parks the frame its own dequeue logic returned.
/// Implementors name the slot, the counters and that dequeue; the provided
/// methods are their `Qdisc::dequeue` and `Qdisc::peek`.
pub(crate) trait ParkOnPeek {
    /// The frame `peek` took out, if any.
    fn parked_slot(&mut self) -> &mut Option<Packet>;
    /// The counters a handed-out frame is counted Sent in.
    fn sent_stats(&mut self) -> &mut QdiscStats;
    /// The discipline's own dequeue, without counting Sent.
    fn dequeue_next(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet>;

    /// `Qdisc::dequeue`: the parked frame, else the next one; counted Sent.
    fn dequeue_parked_first(&mut self, now: Instant, drops: &mut Drops) -> Option<Packet> {
        let p = match self.parked_slot().take() {
            Some(p) => p,
            None => self.dequeue_next(now, drops)?,
        };
        self.sent_stats().count_sent(&p);
        Some(p)
    }

    /// `Qdisc::peek`: parks the next frame unless one is parked already.
    fn peek_parking(&mut self, now: Instant, drops: &mut Drops) -> Option<&Packet> {
        if self.parked_slot().is_none() {
            let next = self.dequeue_next(now, drops);
            *self.parked_slot() = next;
        }
        self.parked_slot().as_ref()
    }

    /// The trim of a `change` that lowered a limit (`fq_codel_change`,
    /// `fq_pie_change`): while `over`, the parked frame, else the next one
    /// of the discipline's dequeue, dropped as `QdiscReset`.
    fn drop_while(&mut self, now: Instant, drops: &mut Drops, over: impl Fn(&Self) -> bool)
    where
        Self: Sized,
    {
        while over(self) {
            let Some(p) = self
                .parked_slot()
                .take()
                .or_else(|| self.dequeue_next(now, drops))
            else {
                break;
            };
            self.sent_stats()
                .count_drop(p, DropReason::QdiscReset, drops);
        }
    }
}

/// Hands every frame `q` holds (its `drain_all`, parked one included) to
/// `drops` as `QdiscReset`: what `Qdisc::reset` drops, before a qdisc clears
/// its own scheduling state.
pub(crate) fn drop_all_held<Q: Qdisc + ?Sized>(q: &mut Q, drops: &mut Drops) {
    for p in q.drain_all() {
        drops.push(p, DropReason::QdiscReset);
    }
}
