//! The flow-queue machinery net/sched/sch_fq_codel.c and net/sched/sch_fq_pie.c
//! share: frames hashed into buckets (`fq_codel_classify`, `fq_pie_classify`),
//! an idle bucket joining the tail of `new_flows` with a quantum of deficit at
//! its first frame (`fq_codel_enqueue`, `fq_pie_qdisc_enqueue`), and the
//! deficit round robin of the dequeue (`fq_codel_dequeue`,
//! `fq_pie_qdisc_dequeue`): the head of new_flows, else of old_flows, is served
//! while it has deficit, moves to the tail of old_flows with another quantum
//! once it has spent it, and when empty moves from new_flows to old_flows
//! (while old_flows is not empty) or leaves the lists. Each kind keeps its own
//! bucket struct, its AQM per bucket (CoDel, PIE) and its accounting, in the
//! closure that takes a bucket's next frame.

use super::drr_ahead::{drr_ahead, DrrQueue};
use super::dump::FlowDump;
use super::{keyed_flow_hash, Handle};
use crate::packet::filter::FilterChain;
use crate::packet::Packet;
use std::collections::VecDeque;

/// Which list a bucket is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ListTag {
    None,
    New,
    Old,
}

/// A bucket's round-robin state: its frames, its deficit (bytes) and its
/// list.
pub(super) trait DrrFlow {
    /// The bucket's frames, head first.
    fn queue(&self) -> &VecDeque<Packet>;
    /// The bucket's frames, to take the head or drain.
    fn queue_mut(&mut self) -> &mut VecDeque<Packet>;
    /// The bucket's deficit (`flow->deficit`), bytes.
    fn deficit(&self) -> i32;
    /// The bucket's deficit, to spend or credit.
    fn deficit_mut(&mut self) -> &mut i32;
    /// The list the bucket is on.
    fn list_mut(&mut self) -> &mut ListTag;
}

/// `DrrFlow` for a bucket struct with fields `queue`, `deficit` and `list`.
macro_rules! drr_flow {
    ($flow:ty) => {
        impl $crate::qdisc::flow_queues::DrrFlow for $flow {
            fn queue(&self) -> &::std::collections::VecDeque<$crate::packet::Packet> {
                &self.queue
            }
            fn queue_mut(&mut self) -> &mut ::std::collections::VecDeque<$crate::packet::Packet> {
                &mut self.queue
            }
            fn deficit(&self) -> i32 {
                self.deficit
            }
            fn deficit_mut(&mut self) -> &mut i32 {
                &mut self.deficit
            }
            fn list_mut(&mut self) -> &mut $crate::qdisc::flow_queues::ListTag {
                &mut self.list
            }
        }
    };
}
pub(super) use drr_flow;

/// The bucket of a frame among `buckets` (`fq_codel_classify`,
/// `fq_pie_classify` through `super::flow_bucket`): without priority or
/// filters steering it, the flow hash keyed by `hash_key` scaled to the
/// bucket count (`reciprocal_scale`). `None`: unclassified.
pub(super) fn classify(
    handle: Handle,
    filters: &FilterChain,
    pkt: &mut Packet,
    buckets: u32,
    hash_key: u32,
) -> Option<usize> {
    super::flow_bucket(handle, filters, pkt, buckets, |pkt| {
        let hash = keyed_flow_hash(pkt.meta.hash, hash_key);
        ((u64::from(hash) * u64::from(buckets)) >> 32) as usize
    })
}

/// A quantum (at most 2^20 bytes) as a deficit.
fn credit(quantum: u32) -> i32 {
    quantum.min(i32::MAX as u32) as i32
}

/// An arrival at bucket `idx`: an idle bucket joins the tail of `new_flows`
/// with `quantum` of deficit. True when it did (the kinds count
/// `new_flow_count`).
pub(super) fn activate<F: DrrFlow>(
    flow: &mut F,
    idx: usize,
    quantum: u32,
    new_flows: &mut VecDeque<u32>,
) -> bool {
    if *flow.list_mut() != ListTag::None {
        return false;
    }
    *flow.list_mut() = ListTag::New;
    *flow.deficit_mut() = credit(quantum);
    new_flows.push_back(idx as u32);
    true
}

/// One dequeue's round robin over the lists: `take` gives the next frame of
/// a bucket with deficit (its AQM and accounting run there), or `None` when
/// the bucket is empty. The frame's length is taken off the deficit; a
/// bucket that has spent its deficit gets `quantum(idx)` more (the same
/// quantum for every bucket in fq_codel and fq_pie; hhf's weighted two,
/// `hhf_dequeue`).
pub(super) fn dequeue<F: DrrFlow>(
    flows: &mut [F],
    new_flows: &mut VecDeque<u32>,
    old_flows: &mut VecDeque<u32>,
    quantum: impl Fn(usize) -> u32,
    mut take: impl FnMut(usize, &mut F) -> Option<Packet>,
) -> Option<Packet> {
    loop {
        let (idx, from_new) = match (new_flows.front(), old_flows.front()) {
            (Some(&i), _) => (i as usize, true),
            (None, Some(&i)) => (i as usize, false),
            (None, None) => return None,
        };
        let flow = &mut flows[idx];
        if flow.deficit() <= 0 {
            let deficit = flow.deficit_mut();
            *deficit = deficit.saturating_add(credit(quantum(idx)));
            *flow.list_mut() = ListTag::Old;
            pop_head(new_flows, old_flows, from_new);
            old_flows.push_back(idx as u32);
            continue;
        }
        let Some(p) = take(idx, flow) else {
            pop_head(new_flows, old_flows, from_new);
            if from_new && !old_flows.is_empty() {
                *flow.list_mut() = ListTag::Old;
                old_flows.push_back(idx as u32);
            } else {
                *flow.list_mut() = ListTag::None;
            }
            continue;
        };
        let deficit = flow.deficit_mut();
        *deficit = deficit.saturating_sub(credit(p.len));
        return Some(p);
    }
}

/// Takes the head of new_flows (`from_new`) or of old_flows.
fn pop_head(new_flows: &mut VecDeque<u32>, old_flows: &mut VecDeque<u32>, from_new: bool) {
    if from_new {
        new_flows.pop_front();
    } else {
        old_flows.pop_front();
    }
}

/// The buckets on the lists, new_flows first: the flows a dump lists (walking
/// the lists costs the active flows, not all the buckets).
pub(super) fn active<'a>(
    buckets: usize,
    new_flows: &'a VecDeque<u32>,
    old_flows: &'a VecDeque<u32>,
) -> impl Iterator<Item = usize> + 'a {
    new_flows
        .iter()
        .chain(old_flows)
        .map(|&i| i as usize)
        .filter(move |&i| i < buckets)
}

/// The queues of `list` as `drr_ahead` runs them.
fn drr_queues<'a, F: DrrFlow>(
    flows: &'a [F],
    list: &'a VecDeque<u32>,
) -> impl Iterator<Item = DrrQueue<'a>> {
    list.iter()
        .filter_map(|&i| Some((i, flows.get(i as usize)?)))
        .map(|(i, f)| DrrQueue {
            id: i,
            deficit: i64::from(f.deficit()),
            frames: f.queue(),
        })
}

/// Fills `ahead` of the dumped flows: the frames the round robin sends
/// before each one's (`drr_ahead`, the `parked` frame first).
pub(super) fn fill_ahead<F: DrrFlow>(
    dumped: &mut [FlowDump],
    flows: &[F],
    lists: (&VecDeque<u32>, &VecDeque<u32>),
    quantum: u32,
    parked: Option<&Packet>,
) {
    let mut listed: Vec<u32> = dumped.iter().map(|f| f.bucket).collect();
    listed.sort_unstable();
    let mut ahead = drr_ahead(
        quantum,
        parked,
        drr_queues(flows, lists.0),
        drr_queues(flows, lists.1),
        &listed,
    );
    for f in dumped {
        f.ahead = ahead.take(f.bucket, f.qlen);
    }
}

/// `Qdisc::drain_all` of the lists and buckets: the `parked` frame, then
/// the listed buckets' frames in list order (new_flows, then old_flows),
/// then any other bucket's; the lists emptied.
pub(super) fn drain_all<F: DrrFlow>(
    parked: &mut Option<Packet>,
    flows: &mut [F],
    new_flows: &mut VecDeque<u32>,
    old_flows: &mut VecDeque<u32>,
) -> Vec<Packet> {
    let mut out: Vec<Packet> = parked.take().into_iter().collect();
    for idx in new_flows.drain(..).chain(old_flows.drain(..)) {
        let f = &mut flows[idx as usize];
        out.extend(f.queue_mut().drain(..));
        *f.list_mut() = ListTag::None;
    }
    // Frames can only sit in listed buckets, but be thorough.
    for f in flows {
        out.extend(f.queue_mut().drain(..));
    }
    out
}
