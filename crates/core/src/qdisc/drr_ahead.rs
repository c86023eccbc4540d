//! What a deficit round robin scheduler (fq_codel, SFQ) sends before each
//! flow queue's newest frame, worked out when the dump is taken from the
//! queued frames alone: the scheduler is run on a copy of its state (the
//! lists in serving order, each queue's deficit and frame lengths, the
//! quantum) until every listed queue's newest frame is out, as if nothing
//! arrived meanwhile and the AQM dropped nothing. fq_codel's rules
//! (`fq_codel_dequeue`): the head of the new-flows list is served before
//! the old list; a queue with no credit left gets a quantum and goes to
//! the back of the old list; a queue that empties leaves. SFQ
//! (`sfq_dequeue`) is the same round with only an old list, in ring order
//! from `tail->next`. The packet path pays nothing. The dump pays O(1) per
//! turn of the scheduler (a frame sent or a quantum given) and per queue
//! the run reaches, for at most `AHEAD_TURNS` turns: a queue is copied
//! only when the run comes to it, and where the run stops short of a
//! listed queue's newest frame, that queue's figures are marked as a lower
//! bound (`Ahead::at_least`). So a snapshot of 10,000 one-frame queues
//! costs the turns, not the queues.

use super::dump::{Ahead, AheadFlow, DrrTurn, AHEAD_FLOWS};
use crate::packet::{FlowKey, Packet};
use std::collections::{HashMap, VecDeque};

/// The most turns of the scheduler (a frame sent, or a queue given a
/// quantum) one run takes: past them, what is still ahead of a listed
/// queue's newest frame is reported as a lower bound. 4096 covers every
/// frame of a default SFQ (limit 127) and of an fq_codel whose queues hold
/// a few thousand frames, at a bounded cost per snapshot.
pub const AHEAD_TURNS: u32 = 4096;

/// One flow queue as the scheduler holds it at the dump.
pub struct DrrQueue<'a> {
    /// The discipline's number for the queue (its bucket), the key of the
    /// result.
    pub id: u32,
    /// Its credit: fq_codel's `deficit`, SFQ's `allot`, bytes.
    pub deficit: i64,
    /// Its frames, head first.
    pub frames: &'a VecDeque<Packet>,
}

/// One queue during the run.
struct Run<'a> {
    id: u32,
    deficit: i64,
    /// Its frames; `sent.0` of them have been sent.
    frames: &'a VecDeque<Packet>,
    new: bool,
    sent: (u32, u64),
    rounds: u32,
}

impl Run<'_> {
    fn left(&self) -> usize {
        self.frames.len().saturating_sub(self.sent.0 as usize)
    }
}

/// The scheduler's two lists during the run, read from the dump's lists
/// as the run reaches them. New list: the dump's new list (nothing joins
/// it during a run). Old list: the dump's old list, then the queues sent
/// to its back during the run. A queue is copied into `runs` when it first
/// comes to the front.
struct Lists<'a, N, O> {
    runs: Vec<Run<'a>>,
    new: std::iter::Fuse<N>,
    old: std::iter::Fuse<O>,
    /// Each list's front queue taken from the dump's list, if reached and
    /// not yet moved on.
    front: [Option<usize>; 2],
    /// The queues sent to the back of the old list.
    back: VecDeque<usize>,
    /// Both dump lists are read to the end.
    all_read: bool,
}

impl<'a, N, O> Lists<'a, N, O>
where
    N: Iterator<Item = DrrQueue<'a>>,
    O: Iterator<Item = DrrQueue<'a>>,
{
    /// The queue served next and its list (0 new, 1 old).
    fn head(&mut self) -> Option<(usize, usize)> {
        for l in 0..2 {
            if self.front[l].is_none() {
                let from = match l {
                    0 => self.new.by_ref().find(|dq| !dq.frames.is_empty()),
                    _ => self.old.by_ref().find(|dq| !dq.frames.is_empty()),
                };
                self.front[l] = from.map(|dq| {
                    self.runs.push(Run {
                        id: dq.id,
                        deficit: dq.deficit,
                        frames: dq.frames,
                        new: l == 0,
                        sent: (0, 0),
                        rounds: 0,
                    });
                    self.runs.len() - 1
                });
            }
            if let Some(i) = self.front[l] {
                return Some((i, l));
            }
            if l == 1 {
                self.all_read = true;
                return self.back.front().map(|&i| (i, 1));
            }
        }
        None
    }

    /// Takes list `l`'s head off it.
    fn pop(&mut self, l: usize) {
        if self.front[l].take().is_none() {
            self.back.pop_front();
        }
    }
}

/// The `AHEAD_FLOWS` entries with the most bytes sent so far. Sent bytes
/// only grow, so an entry outside the set never holds more than one inside
/// it: comparing a growing entry with the set's smallest keeps it exact.
struct Top(Vec<usize>);

impl Top {
    /// Entry `i` sent more; `sent(j)` is entry j's bytes sent and hash.
    fn grew(&mut self, i: usize, sent: impl Fn(usize) -> (u64, u32)) {
        if self.0.contains(&i) {
            return;
        }
        if self.0.len() < AHEAD_FLOWS {
            self.0.push(i);
            return;
        }
        let key = |j: usize| {
            let (bytes, hash) = sent(j);
            (bytes, std::cmp::Reverse(hash))
        };
        if let Some(min) = (0..self.0.len()).min_by_key(|&k| key(self.0[k])) {
            if key(i) > key(self.0[min]) {
                self.0[min] = i;
            }
        }
    }
}

/// What a run found: the `Ahead` of each listed queue it reached, and the
/// lower bound for those it did not reach before its last turn.
#[derive(Debug, Default)]
pub struct DrrAhead {
    /// By queue id: exact for a queue whose newest frame the run reached,
    /// `at_least` for one the run reached but stopped in.
    by_queue: HashMap<u32, Ahead>,
    /// For a listed queue the run never came to (it stopped first): every
    /// frame sent so far is ahead of it, and more. `None` when the run
    /// finished.
    unreached: Option<Ahead>,
}

impl DrrAhead {
    /// What stands before the newest frame of queue `id`, which holds
    /// `frames` frames (`None` for an empty queue, or one not listed).
    pub fn take(&mut self, id: u32, frames: u32) -> Option<Ahead> {
        if frames == 0 {
            return None;
        }
        self.by_queue.remove(&id).or_else(|| self.unreached.clone())
    }
}

/// `Ahead` of the newest frame of every non-empty queue whose id is in
/// `wanted` (sorted: the listed ones; the run serves every queue in turn
/// until those are done or `AHEAD_TURNS` turns are taken). `first` is a
/// frame sent before any queue (one a peek parked); `new` and `old` are
/// the lists in serving order (SFQ: `old` only); `quantum` the credit a
/// queue gets per round (a zero counts as 1).
pub fn drr_ahead<'a>(
    quantum: u32,
    first: Option<&'a Packet>,
    new: impl Iterator<Item = DrrQueue<'a>>,
    old: impl Iterator<Item = DrrQueue<'a>>,
    wanted: &[u32],
) -> DrrAhead {
    drr_ahead_within(AHEAD_TURNS, quantum, first, new, old, wanted)
}

/// `drr_ahead` with at most `turns` turns.
fn drr_ahead_within<'a>(
    turns: u32,
    quantum: u32,
    first: Option<&'a Packet>,
    new: impl Iterator<Item = DrrQueue<'a>>,
    old: impl Iterator<Item = DrrQueue<'a>>,
    wanted: &[u32],
) -> DrrAhead {
    let q = i64::from(quantum.max(1));
    let mut lists = Lists {
        runs: Vec::new(),
        new: new.fuse(),
        old: old.fuse(),
        front: [None, None],
        back: VecDeque::new(),
        all_read: false,
    };
    let mut out = HashMap::with_capacity(wanted.len());
    // The parked frame, if any, counts as one more entry, sent first; it
    // is named by `usize::MAX`.
    const PARKED: usize = usize::MAX;
    let mut total = (0u32, 0u64);
    let mut started = 0u32;
    let mut top = Top(Vec::with_capacity(AHEAD_FLOWS));
    let mut parked_sent = (0u32, 0u64, FlowKey::default(), 0u32);
    if let Some(p) = first {
        parked_sent = (1, u64::from(p.len), p.meta.flow, p.meta.hash);
        total = (1, u64::from(p.len));
        top.0.push(PARKED);
    }
    // Entry j's bytes sent and hash.
    let sent = |runs: &[Run], j: usize| -> (u64, u32) {
        match runs.get(j) {
            Some(r) => (r.sent.1, r.frames.front().map_or(0, |p| p.meta.hash)),
            None => (parked_sent.1, parked_sent.3),
        }
    };
    // A queue is named by its head frame's flow.
    let entry = |runs: &[Run], j: usize| -> AheadFlow {
        let (flow, hash, packets, bytes) = match runs.get(j) {
            Some(r) => {
                let (flow, hash) = r
                    .frames
                    .front()
                    .map_or_else(Default::default, |p| (p.meta.flow, p.meta.hash));
                (flow, hash, r.sent.0, r.sent.1)
            }
            None => (parked_sent.2, parked_sent.3, parked_sent.0, parked_sent.1),
        };
        AheadFlow {
            flow,
            hash,
            packets,
            bytes,
        }
    };
    // How the scheduler has reached queue `r` so far, with `started`
    // queues sent from.
    let turn = |r: &Run, started: u32| DrrTurn {
        new_flow: r.new,
        queues: started - u32::from(r.sent.0 > 0),
        rounds: r.rounds,
        quantum: quantum.max(1),
    };
    // The flows named so far, most bytes first.
    let named = |runs: &[Run], top: &Top| -> Vec<AheadFlow> {
        let mut named = top.0.clone();
        named.sort_unstable_by_key(|&j| {
            let (bytes, hash) = sent(runs, j);
            (std::cmp::Reverse(bytes), hash)
        });
        named.into_iter().map(|j| entry(runs, j)).collect()
    };
    // Refills in a row without a frame sent: a whole round of them means
    // every queue is short of credit; the rounds until the first has some
    // again are then taken at once.
    let mut dry = 0usize;
    let mut taken = 0u32;
    let finished = loop {
        if out.len() == wanted.len() {
            break true;
        }
        let Some((i, l)) = lists.head() else {
            break true;
        };
        if taken == turns {
            break false;
        }
        taken += 1;
        let r = &mut lists.runs[i];
        let left = r.left();
        if left == 0 {
            lists.pop(l);
            continue;
        }
        if r.deficit <= 0 {
            r.deficit += q;
            r.rounds += 1;
            lists.pop(l);
            lists.back.push_back(i);
            dry += 1;
            // Every queue is on the back of the old list only once both
            // dump lists are read and no front is left from them.
            if lists.all_read && lists.front == [None, None] && dry >= lists.back.len() {
                let runs = &mut lists.runs;
                let skip = lists
                    .back
                    .iter()
                    .map(|&j| (1 - runs[j].deficit).max(0) / q)
                    .min()
                    .unwrap_or(0);
                for &j in &lists.back {
                    runs[j].deficit += skip * q;
                    runs[j].rounds = runs[j].rounds.saturating_add(skip as u32);
                }
                dry = 0;
            }
            continue;
        }
        dry = 0;
        let Some(p) = r.frames.get(r.sent.0 as usize) else {
            lists.pop(l);
            continue;
        };
        let len = u64::from(p.len);
        if left == 1 && wanted.binary_search(&r.id).is_ok() {
            let r = &lists.runs[i];
            out.insert(
                r.id,
                Ahead {
                    packets: total.0,
                    bytes: total.1,
                    flows: named(&lists.runs, &top),
                    own_packets: r.sent.0,
                    own_bytes: r.sent.1,
                    drr: Some(turn(r, started)),
                    at_least: false,
                },
            );
        }
        let r = &mut lists.runs[i];
        if r.sent.0 == 0 {
            started += 1;
        }
        r.sent.0 += 1;
        r.sent.1 += len;
        r.deficit -= len as i64;
        total.0 += 1;
        total.1 += len;
        if left == 1 {
            lists.pop(l);
        }
        top.grew(i, |j| sent(&lists.runs, j));
    };
    if finished {
        return DrrAhead {
            by_queue: out,
            unreached: None,
        };
    }
    // Stopped: what was sent is ahead of every listed frame still queued.
    let bound = |own: (u32, u64), drr: Option<DrrTurn>| Ahead {
        packets: total.0,
        bytes: total.1,
        flows: named(&lists.runs, &top),
        own_packets: own.0,
        own_bytes: own.1,
        drr,
        at_least: true,
    };
    for r in &lists.runs {
        if r.left() > 0 && wanted.binary_search(&r.id).is_ok() {
            out.insert(r.id, bound(r.sent, Some(turn(r, started))));
        }
    }
    DrrAhead {
        unreached: Some(bound((0, 0), None)),
        by_queue: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::flow_pkt;

    fn queue(flow: u16, lens: &[u32]) -> VecDeque<Packet> {
        lens.iter()
            .enumerate()
            .map(|(i, &len)| flow_pkt(i as u64, len, flow))
            .collect()
    }

    fn dq(id: u32, deficit: i64, frames: &VecDeque<Packet>) -> DrrQueue<'_> {
        DrrQueue {
            id,
            deficit,
            frames,
        }
    }

    /// Two bulk queues on the old list, a ping on the new list: the ping
    /// goes first; each bulk queue's newest frame waits for the other's
    /// quantum per round.
    #[test]
    fn new_flow_first_then_a_quantum_per_round() {
        let a = queue(1, &[1000; 4]);
        let b = queue(2, &[1500; 3]);
        let ping = queue(9, &[100]);
        let got = drr_ahead(
            1514,
            None,
            [dq(9, 1514, &ping)].into_iter(),
            [dq(1, 500, &a), dq(2, 1514, &b)].into_iter(),
            &[1, 2, 9],
        )
        .by_queue;
        let p = &got[&9];
        assert_eq!((p.packets, p.bytes, p.own_packets), (0, 0, 0));
        assert_eq!(
            p.drr,
            Some(DrrTurn {
                new_flow: true,
                queues: 0,
                rounds: 0,
                quantum: 1514
            })
        );
        // The run: ping 100; A 1000 (500 → -500); A refilled (1014), to
        // the back; B 1500 (1514 → 14), 1500 (→ -1486); B refilled (28);
        // A 1000 (→ 14), 1000 (→ -986); A refilled (528); B's newest 1500;
        // A's newest.
        let a_got = &got[&1];
        assert_eq!((a_got.packets, a_got.bytes), (7, 100 + 3000 + 4500));
        assert_eq!((a_got.own_packets, a_got.own_bytes), (3, 3000));
        let a_turn = a_got.drr.unwrap();
        assert_eq!(
            (a_turn.queues, a_turn.rounds, a_turn.new_flow),
            (2, 2, false)
        );
        let b_got = &got[&2];
        assert_eq!((b_got.packets, b_got.bytes), (6, 100 + 3000 + 3000));
        assert_eq!((b_got.own_packets, b_got.drr.unwrap().rounds), (2, 1));
        // Named by bytes sent before it, most first (A and B tie: the lower
        // hash, B's, first): itself, A, the ping.
        let names: Vec<(u16, u64)> = b_got
            .flows
            .iter()
            .map(|f| (f.flow.src_port - 10_000, f.bytes))
            .collect();
        assert_eq!(names, vec![(2, 3000), (1, 3000), (9, 100)]);
    }

    /// A parked frame goes before everything; empty queues send nothing.
    #[test]
    fn parked_frame_first_and_empty_queues_skipped() {
        let a = queue(1, &[600, 600]);
        let empty = VecDeque::new();
        let parked = flow_pkt(99, 1500, 5);
        let got = drr_ahead(
            1514,
            Some(&parked),
            std::iter::empty(),
            [dq(7, 0, &empty), dq(1, 1514, &a)].into_iter(),
            &[1, 7],
        )
        .by_queue;
        assert_eq!(got.len(), 1);
        let a_got = &got[&1];
        assert_eq!((a_got.packets, a_got.bytes), (2, 2100));
        assert_eq!(a_got.flows[0].flow.src_port, 10_005);
        assert_eq!(a_got.drr.unwrap().queues, 0, "the parked frame is no queue");
    }

    /// The dump's prediction against the discipline itself: flows of
    /// random frame sizes, some served already (so queues sit on both of
    /// fq_codel's lists with various credits), more frames queued, the
    /// dump taken, then everything dequeued at the same instant (CoDel
    /// sees no sojourn and drops nothing): each queue's newest frame
    /// leaves after exactly the frames and bytes its `ahead` says.
    #[test]
    fn the_prediction_is_the_order_fq_codel_and_sfq_serve() {
        use crate::packet::Drops;
        use crate::qdisc::fq_codel::{FqCodel, FqCodelOptions};
        use crate::qdisc::sfq::{Sfq, SfqOptions};
        use crate::qdisc::{FlowListing, Qdisc, QdiscCtx};
        use crate::time::Instant;

        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..40 {
            let quantum = [300, 1514, 4000][round % 3];
            let mut q: Box<dyn Qdisc> = if round % 2 == 0 {
                let o = FqCodelOptions {
                    quantum: Some(quantum),
                    ..FqCodelOptions::default()
                };
                Box::new(FqCodel::with_options(QdiscCtx::default(), &o).unwrap())
            } else {
                let o = SfqOptions {
                    quantum,
                    ..SfqOptions::default()
                };
                Box::new(Sfq::with_options(QdiscCtx::default(), &o).unwrap())
            };
            let (mut d, now) = (Drops::new(), Instant::from_millis(1));
            let mut id = 0;
            let mut offer = |q: &mut dyn Qdisc, d: &mut Drops, next: &mut dyn FnMut(u64) -> u64| {
                for _ in 0..next(30) + 1 {
                    let flow = next(6) as u16;
                    let len = 60 + next(1455) as u32;
                    q.enqueue(flow_pkt(id, len, flow), now, d);
                    id += 1;
                }
            };
            offer(&mut *q, &mut d, &mut next);
            for _ in 0..next(12) {
                q.dequeue(now, &mut d);
            }
            offer(&mut *q, &mut d, &mut next);
            let dump = q.dump_listing(now, FlowListing::All);
            // The newest frame of each queue, by its flow's hash (distinct
            // flows of this test never share a queue: checked below).
            let mut newest: HashMap<u32, u64> = HashMap::new();
            let mut order = Vec::new();
            while let Some(p) = q.dequeue(now, &mut d) {
                newest.insert(p.meta.hash, p.meta.id);
                order.push(p);
            }
            assert!(d.is_empty(), "nothing dropped");
            assert!(!dump.flows.is_empty());
            for f in &dump.flows {
                let a = f.ahead.as_ref().expect("a queue with frames");
                let last = newest[&f.hash];
                let at = order.iter().position(|p| p.meta.id == last).unwrap();
                let before = &order[..at];
                let bytes: u64 = before.iter().map(|p| u64::from(p.len)).sum();
                assert_eq!(
                    (a.packets as usize, a.bytes),
                    (at, bytes),
                    "round {round}, queue {}",
                    f.bucket
                );
                let own = before.iter().filter(|p| p.meta.hash == f.hash).count();
                assert_eq!(a.own_packets as usize, own, "round {round}");
                assert_eq!(u64::from(f.qlen), own as u64 + 1, "one flow per queue");
            }
        }
    }

    /// Every queue short of credit by many quanta: whole rounds are taken
    /// at once; the rounds counted are those of one refill per visit.
    #[test]
    fn deep_deficits_skip_whole_rounds() {
        let a = queue(1, &[100, 100]);
        let b = queue(2, &[100]);
        let got = drr_ahead(
            10,
            None,
            std::iter::empty(),
            [dq(1, -1000, &a), dq(2, -995, &b)].into_iter(),
            &[1, 2],
        )
        .by_queue;
        // A needs 101 refills (to 10), B 100 (to 5); A is visited first
        // each round, so in round 101 A is refilled and B sends. A sends
        // its first frame (10 → -90), then needs 10 more refills.
        assert_eq!(got[&2].packets, 0);
        assert_eq!(got[&2].drr.unwrap().rounds, 100);
        assert_eq!((got[&1].packets, got[&1].own_packets), (2, 1));
        assert_eq!(got[&1].drr.unwrap().rounds, 111);
    }

    /// A run cut short: each listed queue's figures are the exact ones
    /// where the run reached its newest frame, and otherwise no more than
    /// the exact ones, marked `at_least`; a queue the run never came to
    /// gets what was sent by the stop.
    #[test]
    fn a_run_cut_short_gives_lower_bounds() {
        let queues: Vec<VecDeque<Packet>> = (0..40u16)
            .map(|f| queue(f, &vec![200 + 37 * u32::from(f); 1 + usize::from(f % 7)]))
            .collect();
        let lists = |k: usize| {
            let dqs = queues.iter().enumerate().map(|(i, q)| dq(i as u32, 300, q));
            (dqs.clone().take(k), dqs.skip(k))
        };
        let wanted: Vec<u32> = (0..40).collect();
        let (new, old) = lists(5);
        let exact = drr_ahead_within(u32::MAX, 500, None, new, old, &wanted);
        assert!(exact.unreached.is_none());
        assert_eq!(exact.by_queue.len(), 40);
        let (mut seen_exact, mut seen_short, mut seen_unreached) = (0, 0, 0);
        for turns in [1, 30, 60, 100] {
            let (new, old) = lists(5);
            let mut cut = drr_ahead_within(turns, 500, None, new, old, &wanted);
            let bound = cut.unreached.clone().expect("the run stopped");
            assert!(bound.at_least && bound.drr.is_none());
            assert_eq!(bound.own_packets, 0);
            for id in 0..40u32 {
                let want = &exact.by_queue[&id];
                let reached = cut.by_queue.contains_key(&id);
                let got = cut.take(id, 1).expect("a queue with frames");
                if !got.at_least {
                    assert_eq!(&got, want, "{turns} turns, queue {id}");
                    seen_exact += 1;
                    continue;
                }
                assert!(got.packets <= want.packets && got.bytes <= want.bytes);
                assert!(got.own_packets <= want.own_packets);
                assert!(got.packets < turns + 1, "no more frames than turns");
                if reached {
                    let (g, w) = (got.drr.unwrap(), want.drr.unwrap());
                    assert!(g.rounds <= w.rounds && g.queues <= w.queues);
                    assert_eq!(g.new_flow, w.new_flow);
                    seen_short += 1;
                } else {
                    assert_eq!(got, bound);
                    seen_unreached += 1;
                }
            }
            assert_eq!(cut.take(3, 0), None, "an empty queue has no head of line");
        }
        assert!(seen_exact > 0 && seen_short > 0 && seen_unreached > 0);
    }

    /// The run reads the dump's lists only as far as it gets: with
    /// 100,000 one-frame queues and the listed one last, it reads the
    /// queues of its `AHEAD_TURNS` turns and stops.
    #[test]
    fn queues_past_the_last_turn_are_never_read() {
        let one = queue(1, &[1500]);
        let read = std::cell::Cell::new(0u32);
        let old = (0..100_000u32).map(|id| {
            read.set(read.get() + 1);
            dq(id, 1514, &one)
        });
        let mut got = drr_ahead(1514, None, std::iter::empty(), old, &[99_999]);
        assert!(read.get() <= AHEAD_TURNS + 1, "read {} queues", read.get());
        let a = got.take(99_999, 1).expect("a lower bound");
        assert!(a.at_least);
        assert_eq!(
            (a.packets, a.bytes),
            (AHEAD_TURNS, 1500 * u64::from(AHEAD_TURNS))
        );
    }
}
