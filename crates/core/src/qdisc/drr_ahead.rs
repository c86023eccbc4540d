//! What a deficit round robin scheduler (fq_codel, SFQ) sends before each
//! flow queue's newest frame, worked out when the dump is taken from the
//! queued frames alone: the scheduler is run on a copy of its state (the
//! lists in serving order, each queue's deficit and frame lengths, the
//! quantum) until every queue is empty, as if nothing arrived meanwhile
//! and the AQM dropped nothing. fq_codel's rules (`fq_codel_dequeue`): the
//! head of the new-flows list is served before the old list; a queue with
//! no credit left gets a quantum and goes to the back of the old list; a
//! queue that empties leaves. SFQ (`sfq_dequeue`) is the same round with
//! only an old list, in ring order from `tail->next`. The packet path pays
//! nothing: this is O(frames + queues · rounds) at dump time, with O(1)
//! work per frame served.

use super::dump::{Ahead, AheadFlow, DrrTurn, AHEAD_FLOWS};
use crate::packet::{FlowKey, Packet};
use std::collections::{HashMap, VecDeque};

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

/// `Ahead` of the newest frame of every non-empty queue whose id is in
/// `wanted` (sorted: the listed ones; the run covers every queue until
/// those are done, the result only them), by queue id. `first` is a frame sent before any queue (one a
/// peek parked); `new` and `old` are the lists in serving order (SFQ:
/// `old` only); `quantum` the credit a queue gets per round (a zero counts
/// as 1).
pub fn drr_ahead<'a>(
    quantum: u32,
    first: Option<&'a Packet>,
    new: impl Iterator<Item = DrrQueue<'a>>,
    old: impl Iterator<Item = DrrQueue<'a>>,
    wanted: &[u32],
) -> HashMap<u32, Ahead> {
    let q = i64::from(quantum.max(1));
    let mut runs: Vec<Run> = Vec::new();
    let mut lists: [VecDeque<usize>; 2] = [VecDeque::new(), VecDeque::new()];
    let mut add = |list: usize, dq: DrrQueue<'a>| {
        if !dq.frames.is_empty() {
            lists[list].push_back(runs.len());
            runs.push(Run {
                id: dq.id,
                deficit: dq.deficit,
                frames: dq.frames,
                new: list == 0,
                sent: (0, 0),
                rounds: 0,
            });
        }
    };
    new.for_each(|dq| add(0, dq));
    old.for_each(|dq| add(1, dq));
    let mut out = HashMap::with_capacity(wanted.len());
    // The parked frame, if any, counts as one more entry, sent first.
    let parked = runs.len();
    let mut total = (0u32, 0u64);
    let mut started = 0u32;
    let mut top = Top(Vec::with_capacity(AHEAD_FLOWS));
    let mut parked_sent = (0u32, 0u64, FlowKey::default(), 0u32);
    if let Some(p) = first {
        parked_sent = (1, u64::from(p.len), p.meta.flow, p.meta.hash);
        total = (1, u64::from(p.len));
        top.0.push(parked);
    }
    // Entry j's bytes sent and hash (the parked frame is entry
    // `runs.len()`).
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
    // Refills in a row without a frame sent: a whole round of them means
    // every queue is short of credit; the rounds until the first has some
    // again are then taken at once.
    let mut dry = 0usize;
    loop {
        let (i, l) = match (lists[0].front(), lists[1].front()) {
            (Some(&i), _) => (i, 0),
            (None, Some(&i)) => (i, 1),
            (None, None) => break,
        };
        if out.len() == wanted.len() {
            break;
        }
        let r = &mut runs[i];
        let left = r.left();
        if left == 0 {
            lists[l].pop_front();
            continue;
        }
        if r.deficit <= 0 {
            r.deficit += q;
            r.rounds += 1;
            lists[l].pop_front();
            lists[1].push_back(i);
            dry += 1;
            if lists[0].is_empty() && dry >= lists[1].len() {
                let skip = lists[1]
                    .iter()
                    .map(|&j| (1 - runs[j].deficit).max(0) / q)
                    .min()
                    .unwrap_or(0);
                for &j in &lists[1] {
                    runs[j].deficit += skip * q;
                    runs[j].rounds = runs[j].rounds.saturating_add(skip as u32);
                }
                dry = 0;
            }
            continue;
        }
        dry = 0;
        let Some(p) = r.frames.get(r.sent.0 as usize) else {
            lists[l].pop_front();
            continue;
        };
        let len = u64::from(p.len);
        if left == 1 && wanted.binary_search(&r.id).is_ok() {
            let mut named = top.0.clone();
            named.sort_unstable_by_key(|&j| {
                let (bytes, hash) = sent(&runs, j);
                (std::cmp::Reverse(bytes), hash)
            });
            let r = &runs[i];
            out.insert(
                r.id,
                Ahead {
                    packets: total.0,
                    bytes: total.1,
                    flows: named.into_iter().map(|j| entry(&runs, j)).collect(),
                    own_packets: r.sent.0,
                    own_bytes: r.sent.1,
                    drr: Some(DrrTurn {
                        new_flow: r.new,
                        queues: started - u32::from(r.sent.0 > 0),
                        rounds: r.rounds,
                        quantum: quantum.max(1),
                    }),
                },
            );
        }
        let r = &mut runs[i];
        if r.sent.0 == 0 {
            started += 1;
        }
        r.sent.0 += 1;
        r.sent.1 += len;
        r.deficit -= len as i64;
        total.0 += 1;
        total.1 += len;
        if left == 1 {
            lists[l].pop_front();
        }
        top.grew(i, |j| sent(&runs, j));
    }
    out
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
        );
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
        );
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
        );
        // A needs 101 refills (to 10), B 100 (to 5); A is visited first
        // each round, so in round 101 A is refilled and B sends. A sends
        // its first frame (10 → -90), then needs 10 more refills.
        assert_eq!(got[&2].packets, 0);
        assert_eq!(got[&2].drr.unwrap().rounds, 100);
        assert_eq!((got[&1].packets, got[&1].own_packets), (2, 1));
        assert_eq!(got[&1].drr.unwrap().rounds, 111);
    }
}
