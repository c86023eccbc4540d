//! Changing a path while frames flow: its link parameters (`set_params`),
//! its impairments, schedule and framing (`set_shape`), BQL's bounds, the
//! device's TX queue count, and its qdisc tree (replaced, edited by tc
//! requests, or read by dumps without being run). Each change is made at
//! an instant: the path first advances to it, so what happened before
//! happened under the old settings, and runs on under the new ones.

use super::super::impair::{Impair, Impairments};
use super::super::{LinkParams, LinkShape, ShapeError};
use super::Path;
use crate::packet::{Drops, Packet};
use crate::qdisc::tree::QdiscTree;
use crate::qdisc::Qdisc;
use crate::refusal::Refusal;
use crate::time::Instant;

impl Path {
    /// Installs impairments, schedule and framing at `now`. Frames on the
    /// wire keep their departure, frames in propagation their arrival; the
    /// random generator restarts from the seed; a new schedule starts at
    /// `now` (one equal to the running schedule keeps running, with its
    /// start and trace position).
    pub fn set_shape(&mut self, shape: LinkShape, now: Instant) -> Result<(), ShapeError> {
        shape.validate()?;
        self.advance(now);
        let t = self.now;
        self.serializer.set_framing(shape.framing);
        if shape.schedule != self.shape.schedule {
            self.serializer.set_schedule(shape.schedule.clone(), t);
        }
        self.impair = Impair::new(shape.impairments.clone());
        self.delay.set_reorder(self.impair.reorders());
        self.shape = shape;
        self.kick();
        self.advance(t);
        Ok(())
    }

    /// Replaces only the impairments (schedule and framing stay).
    pub fn set_impairments(&mut self, imp: Impairments, now: Instant) -> Result<(), ShapeError> {
        let shape = LinkShape {
            impairments: imp,
            ..self.shape.clone()
        };
        self.set_shape(shape, now)
    }

    /// BQL's `limit_min`/`limit_max` (sysfs) of every TX queue; effective
    /// from the next completion. False when BQL is off.
    pub fn set_bql_bounds(&mut self, min_limit: u32, max_limit: u32) -> bool {
        (0..self.queues.len()).fold(false, |set, q| {
            self.set_queue_bql_bounds(q, min_limit, max_limit) | set
        })
    }

    /// BQL's `limit_min`/`limit_max` of TX queue `queue` alone (sysfs
    /// `queues/tx-N/byte_queue_limits`). False when BQL is off or there is
    /// no such queue.
    pub fn set_queue_bql_bounds(&mut self, queue: usize, min_limit: u32, max_limit: u32) -> bool {
        self.unsettle();
        self.queues
            .get_mut(queue)
            .and_then(|q| q.ring.dql_mut())
            .map(|d| d.set_bounds(min_limit, max_limit))
            .is_some()
    }

    /// Changes rate, overhead, delay, ring, BQL and coalescing at `now`
    /// without losing frames: the rest of the frame on the wire goes at the
    /// new rate, frames in propagation keep their arrival, held completions and RX
    /// frames fall under the new coalescing rule.
    pub fn set_params(&mut self, mut params: LinkParams, now: Instant) {
        // The device's queues change only through `set_tx_queues`.
        params.tx_queues = self.params.tx_queues;
        self.advance(now);
        let t = self.now;
        for q in &mut self.queues {
            q.ring.reconfigure(params.tx_ring, params.bql, t);
            q.ring.set_stop_threshold(params.tx_stop_threshold);
        }
        self.serializer
            .set_rate(params.rate_bytes_ps, params.overhead, t);
        self.delay.set_delay(params.delay_ns);
        self.tx_done.configure(params.tx_coalescing());
        self.rx.configure(params.rx_coalescing());
        self.params = params;
        self.kick();
        self.advance(t);
    }

    /// Changes the device's TX queue count at `now` (`QdiscTree::
    /// change_tx_queues`: a default root is rebuilt for it). On a refusal
    /// nothing changes.
    pub fn set_tx_queues(&mut self, n: u16, now: Instant) -> Result<(), Refusal> {
        if n == self.params.tx_queues {
            return Ok(());
        }
        self.edit_qdisc(now, |tree, t, drops| tree.change_tx_queues(n, t, drops))?;
        self.params.tx_queues = n;
        Ok(())
    }

    /// Swaps the qdisc tree at `now`: the frames the old one holds (and
    /// requeued ones) are enqueued into the new one, which may refuse some
    /// (counted as drops). Returns the old, empty tree.
    pub fn replace_qdisc(&mut self, new: QdiscTree, now: Instant) -> QdiscTree {
        self.advance(now);
        let t = self.now;
        let mut old = std::mem::replace(&mut self.qdisc, new);
        let requeued = self.queues.iter_mut().flat_map(|q| q.requeued.drain(..));
        let moved: Vec<Packet> = requeued.chain(old.drain_all()).collect();
        for pkt in moved {
            self.enqueue_counting_copies(pkt, t);
        }
        self.absorb();
        self.sync_queues();
        self.kick();
        self.advance(t);
        old
    }

    /// Runs `edit` on the qdisc tree at `now` (tc change, class and filter
    /// edits); whatever it drops is counted. Only an edit that succeeded
    /// runs the qdisc afterwards: as in the kernel, a command that fails
    /// makes no dequeue, so it cannot tick a throttled qdisc's counters
    /// (`tbf_dequeue`'s overlimits, net/sched/sch_tbf.c).
    pub fn edit_qdisc<T, E>(
        &mut self,
        now: Instant,
        edit: impl FnOnce(&mut QdiscTree, Instant, &mut Drops) -> Result<T, E>,
    ) -> Result<T, E> {
        self.advance(now);
        let t = self.now;
        let r = edit(&mut self.qdisc, t, &mut self.drops);
        self.unsettle();
        self.absorb();
        self.sync_queues();
        if r.is_ok() {
            self.kick();
            self.advance(t);
        }
        r
    }

    /// Reads the qdisc tree at `now` (a dump, `tc ... show`) without running
    /// it: the kernel's dumps make no dequeue, so reading changes no
    /// counter. `read` gets the tree mutably only because
    /// `QdiscTree::filters` reaches a qdisc's filters through it; it must
    /// not change it.
    pub fn inspect_qdisc<R>(
        &mut self,
        now: Instant,
        read: impl FnOnce(&mut QdiscTree, Instant) -> R,
    ) -> R {
        self.advance(now);
        let r = read(&mut self.qdisc, self.now);
        self.unsettle();
        r
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{assert_conserved, drain, fifo, path, tree};
    use super::super::Path;
    use crate::link::{Impairments, LinkParams, LinkShape, Schedule};
    use crate::packet::DropReason;
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::{Qdisc, QdiscCtx};
    use crate::time::{Instant, NS_PER_MS};

    /// `set left.rate=100` (100 bit/s, tc's meaning) with frames queued,
    /// then the intended 100mbit a second later: the frame that was on the
    /// wire leaves at once, not 100 s later, and the backlog drains at the
    /// new rate.
    #[test]
    fn a_rate_typo_is_undone_by_setting_the_right_rate() {
        let fast = LinkParams {
            rate_bytes_ps: 12_500_000,
            delay_ns: 0,
            ..LinkParams::default()
        };
        let mut p = path(fast);
        for i in 0..20 {
            p.ingress(pkt(i, 1500), Instant::ZERO);
        }
        p.set_params(
            LinkParams {
                rate_bytes_ps: 12,
                ..fast
            },
            Instant::ZERO,
        );
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        let second = Instant::from_millis(1_000);
        p.poll(second, &mut out, &mut freed);
        assert!(out.is_empty(), "nothing leaves in the typo's second");
        assert!(p.poll_at().unwrap() > Instant::from_millis(100_000));
        p.set_params(fast, second);
        let got = drain(&mut p);
        assert_eq!(got.len(), 20);
        // 20 frames of 1538 wire bytes at 100 Mbit/s: under 2.5 ms.
        let last = got.last().unwrap().1;
        assert!(
            last.saturating_since(second) < 2_500_000,
            "drained {} ns after the fix",
            last.saturating_since(second)
        );
        assert_conserved(&p);
    }

    #[test]
    fn set_params_keeps_every_frame() {
        let mut p = path(LinkParams {
            rate_bytes_ps: 1_000_000,
            delay_ns: NS_PER_MS,
            ..LinkParams::default()
        });
        for i in 0..50 {
            p.ingress(pkt(i, 1000), Instant::ZERO);
        }
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        p.poll(Instant::from_micros(5_500), &mut out, &mut freed);
        let before = out.len() as u64;
        p.set_params(
            LinkParams {
                rate_bytes_ps: 10_000_000,
                delay_ns: 0,
                tx_ring: 2,
                bql: false,
                rx_usecs: 100,
                rx_frames: 8,
                tx_usecs: 30,
                tx_frames: 3,
                ..LinkParams::default()
            },
            Instant::from_micros(5_500),
        );
        assert_conserved(&p);
        let rest = drain(&mut p);
        assert_eq!(before + rest.len() as u64, 50);
        let mut ids: Vec<u64> = out.iter().map(|p| p.meta.id).collect();
        ids.extend(rest.iter().map(|(id, _)| *id));
        assert_eq!(ids, (0..50).collect::<Vec<_>>(), "FIFO order kept");
    }

    #[test]
    fn replace_qdisc_moves_frames_and_counts_refusals() {
        let mut p = path(LinkParams {
            rate_bytes_ps: 1_000_000,
            bql: false,
            tx_ring: 2,
            ..LinkParams::default()
        });
        for i in 0..10 {
            p.ingress(pkt(i, 1000), Instant::ZERO);
        }
        // Two on the ring, one requeued at the bypass, seven in the pfifo.
        assert_eq!(
            (p.qdisc().qlen(), p.snapshot(Instant::ZERO).requeued),
            (7, 1)
        );
        let old = p.replace_qdisc(fifo(5), Instant::from_micros(10));
        assert_eq!(old.qlen(), 0);
        assert_eq!(p.qdisc().qlen(), 5);
        assert_eq!(p.counters().drops[DropReason::QueueFull.index()], 3);
        assert_conserved(&p);
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        p.poll(Instant::from_micros(10), &mut out, &mut freed);
        assert_eq!(freed.len(), 3, "refused frames are handed back");
        let ids: Vec<u64> = drain(&mut p).into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, vec![0, 1, 2, 3, 4, 5, 6]);
        let snap = p.snapshot(Instant::from_millis(20));
        assert_eq!(snap.drops_by_reason.get("queue_full"), Some(&3));
        assert!(serde_json::to_string(&snap).is_ok());
    }

    #[test]
    fn edit_qdisc_counts_drops_of_a_lowered_limit() {
        let mut p = path(LinkParams {
            rate_bytes_ps: 1_000,
            tx_ring: 1,
            bql: false,
            ..LinkParams::default()
        });
        for i in 0..10 {
            p.ingress(pkt(i, 100), Instant::ZERO);
        }
        let r = p.edit_qdisc(Instant::ZERO, |q, now, drops| {
            let limit = crate::qdisc::fifo::FifoOptions { limit: 4 };
            q.change(&crate::qdisc::QdiscOptions::Fifo(limit), now, drops)
        });
        assert!(r.is_ok());
        // One on the ring, one requeued, eight in the pfifo: four dropped.
        assert_eq!(p.snapshot(Instant::ZERO).requeued, 1);
        assert_eq!(p.counters().total_drops(), 4);
        assert_conserved(&p);
    }

    /// The fuzz finding "a failed command ticks a throttled TBF's
    /// overlimits" (docs/fuzzing.md): neither a failed edit nor a read runs
    /// the qdisc, so a throttled TBF counts no overlimit for them; a
    /// successful edit runs it once, and then it does.
    #[test]
    fn a_failed_edit_or_a_read_does_not_run_a_throttled_qdisc() {
        use crate::qdisc::options::{QdiscOptions, RateSpec};
        use crate::qdisc::tbf::{Tbf, TbfOptions};
        // tbf rate 8kbit burst 1600b limit 10000b on a fast link: the
        // first frame takes the bucket, the rest wait for tokens.
        let opts = TbfOptions {
            rate: RateSpec::new(1_000),
            limit: 10_000,
            burst: Some(1_600),
            ..TbfOptions::default()
        };
        let tbf = Tbf::build(QdiscCtx::default(), &QdiscOptions::Tbf(opts)).unwrap();
        let mut p = Path::new(LinkParams::default(), tree(Box::new(tbf)));
        for i in 0..5 {
            p.ingress(pkt(i, 1000), Instant::ZERO);
        }
        let t = Instant::from_millis(1);
        let overlimits = |p: &mut Path| p.inspect_qdisc(t, |q, t| q.dump(t).stats.overlimits);
        let before = overlimits(&mut p);
        assert!(before > 0, "the TBF is throttled");
        assert_eq!(overlimits(&mut p), before, "a read ran the qdisc");
        let failed: Result<(), &str> = p.edit_qdisc(t, |_, _, _| Err("refused"));
        assert!(failed.is_err());
        assert_eq!(overlimits(&mut p), before, "a failed edit ran the qdisc");
        let done: Result<(), &str> = p.edit_qdisc(t, |_, _, _| Ok(()));
        assert!(done.is_ok());
        assert_eq!(overlimits(&mut p), before + 1, "a successful edit runs it");
        assert_conserved(&p);
    }

    /// Changing impairments keeps the running trace's grid; a new trace
    /// starts when installed.
    #[test]
    fn set_impairments_keeps_the_running_schedule() {
        let mut p = path(LinkParams::default());
        let trace = || Schedule::parse_mahimahi("2\n4\n").unwrap();
        let shape = LinkShape {
            schedule: Some(trace()),
            ..LinkShape::default()
        };
        p.set_shape(shape, Instant::ZERO).unwrap();
        p.set_impairments(
            Impairments {
                seed: 3,
                ..Impairments::default()
            },
            Instant::from_millis(5),
        )
        .unwrap();
        p.ingress(pkt(0, 1514), Instant::from_millis(5));
        assert_eq!(drain(&mut p), vec![(0, Instant::from_millis(6))]);
        p.set_shape(
            LinkShape {
                schedule: Some(Schedule::parse_mahimahi("2\n5\n").unwrap()),
                ..p.shape().clone()
            },
            Instant::from_millis(10),
        )
        .unwrap();
        p.ingress(pkt(1, 1514), Instant::from_millis(10));
        assert_eq!(drain(&mut p), vec![(1, Instant::from_millis(12))]);
        assert_eq!(p.snapshot(Instant::from_millis(20)).seed, 3);
    }

    #[test]
    fn atm_framing_through_the_path_and_invalid_shapes_change_nothing() {
        let mut p = path(LinkParams {
            rate_bytes_ps: 1_696_000,
            ..LinkParams::default()
        });
        let shape = LinkShape {
            framing: crate::link::Framing {
                linklayer: crate::units::LinkLayer::Atm,
                ..crate::link::Framing::default()
            },
            ..LinkShape::default()
        };
        p.set_shape(shape.clone(), Instant::ZERO).unwrap();
        p.ingress(pkt(0, 1514), Instant::ZERO);
        assert_eq!(drain(&mut p), vec![(0, Instant::from_millis(1))]);
        let bad = LinkShape {
            impairments: Impairments {
                corrupt: -1.0,
                ..Impairments::default()
            },
            ..LinkShape::default()
        };
        let e = p.set_shape(bad, Instant::from_millis(2)).unwrap_err();
        assert_eq!(e.field, "corrupt");
        let e = p
            .set_impairments(
                Impairments {
                    loss: crate::link::impair::Loss::Random {
                        percent: 200.0,
                        correlation: 0.0,
                    },
                    ..Impairments::default()
                },
                Instant::from_millis(2),
            )
            .unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.value.as_str()),
            ("loss.percent", "200")
        );
        assert_eq!(p.shape(), &shape);
    }
}
