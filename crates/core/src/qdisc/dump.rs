//! The data behind `tc -s -d qdisc show` and `tc -s -d class show`: a plain,
//! thread-safe snapshot of a qdisc tree. Each discipline hands back its
//! options as the kernel dumps them (`QdiscOptions`, `ClassOptions`, the
//! kernel's `TCA_OPTIONS`) and its extended statistics as typed values
//! (`Xstats`, the kernel's `TCA_STATS_APP` structs); the tc front end prints
//! both (`crate::tc::show` lays the lines out, each kind's printer in
//! `crate::tc::opts` writes its options, `crate::tc::xstats` the xstats). The TUI and the control socket read
//! these snapshots and never the live qdiscs.
//!
//! Live snapshots are bounded (`FlowListing::Top`): a flow-queueing
//! discipline lists its N flows with the most backlog and folds the others
//! into one `FlowSummary`, picked in one pass with a heap of N entries
//! (`top_flows`): publishing costs one pass over the active flows plus N
//! rows, instead of a row, a pseudo-class and its text for every flow.

use super::{ClassOptions, Handle, QdiscOptions, QdiscStats};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// How many flow queues a dump lists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlowListing {
    /// Every flow and its pseudo-class (what `tc class show` prints).
    #[default]
    All,
    /// The N flows with the most backlog (and their pseudo-classes), the
    /// rest summed up in `QdiscDump::other_flows` (live snapshots).
    Top(usize),
}

/// One qdisc, its classes and its child qdiscs.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct QdiscDump {
    /// The qdisc's kind as tc prints it (`TCA_KIND`: `fq_codel`, `htb`, ...).
    pub kind: String,
    /// The qdisc's handle (`tcm_handle`; `major:0`).
    pub handle: Handle,
    /// The handle of its parent: `TC_H_ROOT` or a class id (`tcm_parent`).
    pub parent: Handle,
    /// The options as the kernel dumps them in `TCA_OPTIONS` (the tc front
    /// end's `crate::tc::show` prints them with the kind's printer).
    #[serde(default)]
    pub options: QdiscOptions,
    /// The generic counters (`TCA_STATS2`: `gnet_stats_basic` and
    /// `gnet_stats_queue`).
    pub stats: QdiscStats,
    /// The discipline's extended statistics (`None`: the kind has none).
    pub xstats: Option<Xstats>,
    /// Its classes, in the order `tc class show` lists them.
    pub classes: Vec<ClassDump>,
    /// The qdiscs attached below its classes, in class order.
    pub children: Vec<QdiscDump>,
    /// Per-flow rows for the TUI (flow-queueing disciplines only): every
    /// active flow in bucket order, or under `FlowListing::Top` the
    /// largest backlogs first.
    pub flows: Vec<FlowDump>,
    /// The active flows a `FlowListing::Top` dump left out of `flows` (and
    /// out of `classes`), summed up.
    #[serde(default)]
    pub other_flows: FlowSummary,
}

impl QdiscDump {
    /// ECN marks counted by this qdisc and every qdisc below it (the
    /// `ecn_mark` of fq_codel's and codel's xstats).
    pub fn tree_ecn_marks(&self) -> u64 {
        let own = match self.xstats {
            Some(Xstats::FqCodel(x)) => x.ecn_mark,
            Some(Xstats::Codel(x)) => x.ecn_mark,
            _ => 0,
        };
        own + self
            .children
            .iter()
            .map(QdiscDump::tree_ecn_marks)
            .sum::<u64>()
    }
}

/// One class (HTB/QFQ/TBF/mq classes, SFQ/fq_codel per-flow pseudo-classes).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ClassDump {
    /// The class's qdisc kind as tc prints it (`htb`, `qfq`, ...).
    pub kind: String,
    /// The class id (`tcm_handle`; `major:minor`).
    pub classid: Handle,
    /// The parent: the qdisc's handle or another class's id (`tcm_parent`).
    pub parent: Handle,
    /// `leaf H:` is printed when the attached qdisc has a non-zero handle.
    pub leaf: Option<Handle>,
    /// The class's options as the kernel dumps them.
    #[serde(default)]
    pub options: ClassOptions,
    /// `None` for pseudo-classes that report no byte counters (their block
    /// starts with ` (dropped 0, overlimits 0 requeues 0) `).
    pub stats: Option<QdiscStats>,
    /// Queue stats for pseudo-classes (backlog/qlen/drops of the flow).
    pub queue: QdiscStats,
    /// The class's extended statistics (`None`: the kind has none).
    pub xstats: Option<Xstats>,
}

/// Extended statistics as the kernel hands them to tc in `TCA_STATS_APP`
/// (include/uapi/linux/pkt_sched.h): one variant per struct, qdisc-level or
/// class-level as the kernel dumps them (`Qdisc_ops::dump_stats`,
/// `Qdisc_class_ops::dump_stats`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Xstats {
    /// `struct tc_fq_codel_xstats` of type `TCA_FQ_CODEL_XSTATS_QDISC`
    /// (net/sched/sch_fq_codel.c `fq_codel_dump_stats`).
    FqCodel(FqCodelXstats),
    /// `struct tc_fq_codel_xstats` of type `TCA_FQ_CODEL_XSTATS_CLASS`, a
    /// flow queue's (`fq_codel_dump_class_stats`).
    FqCodelClass(FqCodelClassXstats),
    /// `struct tc_codel_xstats` (net/sched/sch_codel.c `codel_dump_stats`).
    Codel(CodelXstats),
    /// `struct tc_sfq_xstats`, a flow queue's (net/sched/sch_sfq.c
    /// `sfq_dump_class_stats`).
    SfqClass(SfqXstats),
    /// `struct tc_htb_xstats`, a class's (net/sched/sch_htb.c
    /// `htb_dump_class_stats`).
    HtbClass(HtbXstats),
}

/// `struct tc_fq_codel_qd_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FqCodelXstats {
    /// Largest frame seen so far, bytes.
    pub maxpacket: u32,
    /// Frames dropped because the qdisc was over its limit.
    pub drop_overlimit: u64,
    /// Frames CE-marked by CoDel instead of dropped.
    pub ecn_mark: u64,
    /// Flows that went onto the new list.
    pub new_flow_count: u64,
    /// Flows on the new list now (`tc_fq_codel_qd_stats.new_flows_len`).
    pub new_flows_len: u32,
    /// Flows on the old list now (`tc_fq_codel_qd_stats.old_flows_len`).
    pub old_flows_len: u32,
    /// Frames CE-marked over `ce_threshold`.
    pub ce_mark: u64,
    /// Memory held by queued frames, bytes.
    pub memory_usage: u64,
    /// Frames dropped because the qdisc was over its `memory_limit`.
    pub drop_overmemory: u64,
}

/// `struct tc_fq_codel_cl_stats` (the flow's backlog and qlen ride in the
/// class's `queue`, as the kernel's `gnet_stats_copy_queue`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FqCodelClassXstats {
    /// The flow's DRR deficit, bytes (`tc_fq_codel_cl_stats.deficit`).
    pub deficit: i32,
    /// In-queue delay of the last dequeued frame, µs.
    pub ldelay_us: u64,
    /// CoDel's `count` of the flow (`tc_fq_codel_cl_stats.count`).
    pub count: u32,
    /// CoDel's `lastcount` of the flow (`tc_fq_codel_cl_stats.lastcount`).
    pub lastcount: u32,
    /// Whether the flow's CoDel is dropping (`tc_fq_codel_cl_stats.dropping`).
    pub dropping: bool,
    /// Time to the next drop, µs (negative: overdue); 0 unless dropping.
    pub drop_next_us: i64,
}

/// `struct tc_codel_xstats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CodelXstats {
    /// Largest frame seen so far, bytes.
    pub maxpacket: u32,
    /// CoDel's `count` (`tc_codel_xstats.count`): drops since the dropping
    /// state began.
    pub count: u32,
    /// CoDel's `lastcount` (`tc_codel_xstats.lastcount`).
    pub lastcount: u32,
    /// In-queue delay of the last dequeued frame, µs.
    pub ldelay_us: u64,
    /// Time to the next drop, µs (negative: overdue).
    pub drop_next_us: i64,
    /// Frames dropped because the qdisc was over its limit.
    pub drop_overlimit: u64,
    /// Frames CE-marked by CoDel instead of dropped.
    pub ecn_mark: u64,
    /// Whether CoDel is in the dropping state (`tc_codel_xstats.dropping`).
    pub dropping: bool,
    /// Frames CE-marked over `ce_threshold`.
    pub ce_mark: u64,
}

/// `struct tc_sfq_xstats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SfqXstats {
    /// The slot's remaining allotment, bytes.
    pub allot: i32,
}

/// `struct tc_htb_xstats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HtbXstats {
    /// `lends` (tc prints `lended:`).
    pub lends: u64,
    /// `borrows` (tc prints `borrowed:`).
    pub borrows: u64,
    /// Always 0: unused since the kernel's "Make HTB scheduler work with
    /// TSO" change, kept because tc prints it.
    pub giants: u32,
    /// Tokens of the rate bucket, psched ticks (negative: over rate).
    pub tokens: i32,
    /// Tokens of the ceil bucket, psched ticks (negative: over ceil).
    pub ctokens: i32,
}

/// A flow queue as the TUI shows it.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct FlowDump {
    /// The hash bucket (fq_codel) or slot (SFQ) of the flow.
    pub bucket: u32,
    /// The 5-tuple of a frame of the flow: the last one queued (fq_codel) or
    /// the head one (SFQ); None when none tells it.
    pub flow: Option<crate::packet::FlowKey>,
    /// Bytes queued in the flow.
    pub backlog: u64,
    /// Frames queued in the flow.
    pub qlen: u32,
    /// Sojourn time of the head frame, ns.
    pub head_sojourn_ns: u64,
    /// DRR deficit or SFQ allot.
    pub deficit: i64,
    /// CoDel's `count` of the flow (0 for SFQ).
    pub codel_count: u32,
    /// Whether the flow's CoDel is dropping (false for SFQ).
    pub codel_dropping: bool,
    /// Frames dropped from the flow.
    pub drops: u64,
    /// Frames of the flow CE-marked instead of dropped.
    pub ecn_marks: u64,
    /// Bytes dequeued from the flow.
    pub sent_bytes: u64,
}

/// Flow queues summed up: the rows a bounded dump does not list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FlowSummary {
    /// How many flow queues.
    pub flows: u64,
    /// Bytes queued in them.
    pub backlog: u64,
    /// Frames queued in them.
    pub qlen: u64,
    /// The largest head-of-queue sojourn among them, ns.
    pub max_head_sojourn_ns: u64,
    /// Frames dropped from them.
    pub drops: u64,
    /// Frames of theirs CE-marked instead of dropped.
    pub ecn_marks: u64,
    /// Bytes dequeued from them.
    pub sent_bytes: u64,
}

impl FlowSummary {
    /// Counts `f` in the summary (its largest sojourn kept as the maximum).
    pub fn add(&mut self, f: &FlowDump) {
        self.merge(&FlowSummary {
            flows: 1,
            backlog: f.backlog,
            qlen: u64::from(f.qlen),
            max_head_sojourn_ns: f.head_sojourn_ns,
            drops: f.drops,
            ecn_marks: f.ecn_marks,
            sent_bytes: f.sent_bytes,
        });
    }

    /// Both summed up together.
    pub fn merge(&mut self, o: &FlowSummary) {
        self.flows += o.flows;
        self.backlog += o.backlog;
        self.qlen += o.qlen;
        self.max_head_sojourn_ns = self.max_head_sojourn_ns.max(o.max_head_sojourn_ns);
        self.drops += o.drops;
        self.ecn_marks += o.ecn_marks;
        self.sent_bytes += o.sent_bytes;
    }
}

/// A flow ordered by backlog; on equal backlog the lower bucket ranks
/// higher, so the selection is deterministic.
struct ByBacklog(FlowDump);

impl ByBacklog {
    fn key(&self) -> (u64, Reverse<u32>) {
        (self.0.backlog, Reverse(self.0.bucket))
    }
}

impl PartialEq for ByBacklog {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for ByBacklog {}
impl PartialOrd for ByBacklog {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for ByBacklog {
    fn cmp(&self, o: &Self) -> Ordering {
        self.key().cmp(&o.key())
    }
}

/// The `n` flows of `flows` with the most backlog, largest first (equal
/// backlogs: lower bucket first), and the others summed up. One pass with
/// a min-heap of at most `n` entries: O(flows · log n) time, O(n) memory.
pub fn top_flows(flows: impl Iterator<Item = FlowDump>, n: usize) -> (Vec<FlowDump>, FlowSummary) {
    let mut heap: BinaryHeap<Reverse<ByBacklog>> = BinaryHeap::with_capacity(n.min(4096));
    let mut rest = FlowSummary::default();
    for f in flows {
        if heap.len() < n {
            heap.push(Reverse(ByBacklog(f)));
            continue;
        }
        let candidate = ByBacklog(f);
        match heap.peek_mut() {
            Some(mut smallest) if candidate > smallest.0 => {
                let out = std::mem::replace(&mut smallest.0, candidate);
                rest.add(&out.0);
            }
            _ => rest.add(&candidate.0),
        }
    }
    // Ascending order of `Reverse` is descending backlog.
    let top = heap.into_sorted_vec().into_iter().map(|r| r.0 .0).collect();
    (top, rest)
}

/// A flow-queueing discipline's `flows`, `classes` and `other_flows` under
/// `listing`: `flows` yields every active flow (in any order; `All` lists
/// them by bucket), and `class_of` the pseudo-class of one listed bucket.
pub fn list_flows(
    listing: FlowListing,
    flows: impl Iterator<Item = FlowDump>,
    class_of: impl Fn(u32) -> ClassDump,
) -> (Vec<FlowDump>, Vec<ClassDump>, FlowSummary) {
    let (listed, rest) = match listing {
        FlowListing::All => {
            let mut all: Vec<FlowDump> = flows.collect();
            all.sort_unstable_by_key(|f| f.bucket);
            (all, FlowSummary::default())
        }
        FlowListing::Top(n) => top_flows(flows, n),
    };
    let mut classes: Vec<ClassDump> = listed.iter().map(|f| class_of(f.bucket)).collect();
    // tc lists classes by class id whatever order the flows come in.
    classes.sort_unstable_by_key(|c| c.classid);
    (listed, classes, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(bucket: u32, backlog: u64) -> FlowDump {
        FlowDump {
            bucket,
            backlog,
            qlen: (backlog / 100) as u32,
            head_sojourn_ns: backlog * 10,
            drops: 1,
            ..FlowDump::default()
        }
    }

    #[test]
    fn top_flows_keeps_the_largest_backlogs_and_sums_the_rest() {
        // Backlogs in a scrambled order, with ties.
        let backlogs = [300u64, 100, 900, 0, 500, 900, 200, 700, 100, 0];
        let flows = || backlogs.iter().enumerate().map(|(i, b)| flow(i as u32, *b));
        let (top, rest) = top_flows(flows(), 4);
        let got: Vec<(u32, u64)> = top.iter().map(|f| (f.bucket, f.backlog)).collect();
        assert_eq!(got, vec![(2, 900), (5, 900), (7, 700), (4, 500)]);
        assert_eq!(rest.flows, 6);
        assert_eq!(rest.backlog, 300 + 100 + 200 + 100);
        assert_eq!(rest.qlen, 3 + 1 + 2 + 1);
        assert_eq!(rest.max_head_sojourn_ns, 3000);
        assert_eq!(rest.drops, 6);
        // Nothing is lost or counted twice.
        let mut all = rest;
        top.iter().for_each(|f| all.add(f));
        let mut expect = FlowSummary::default();
        flows().for_each(|f| expect.add(&f));
        assert_eq!(all, expect);
    }

    #[test]
    fn top_flows_with_fewer_flows_than_the_bound_lists_all() {
        let (top, rest) = top_flows((0..3).map(|i| flow(i, 10 * u64::from(i))), 64);
        assert_eq!(top.len(), 3);
        assert_eq!(top[0].bucket, 2);
        assert_eq!(rest, FlowSummary::default());
        let (none, rest) = top_flows((0..3).map(|i| flow(i, 1)), 0);
        assert!(none.is_empty());
        assert_eq!(rest.flows, 3);
    }

    #[test]
    fn list_flows_orders_classes_by_id_and_all_lists_every_flow() {
        let class_of = |b: u32| ClassDump {
            classid: 0x8001_0000 | (b + 1),
            ..ClassDump::default()
        };
        let flows = || (0..10).rev().map(|i| flow(i, u64::from(i % 4) * 100));
        let (listed, classes, rest) = list_flows(FlowListing::Top(3), flows(), class_of);
        assert_eq!(listed.len(), 3);
        assert!(classes.windows(2).all(|w| w[0].classid < w[1].classid));
        assert_eq!(rest.flows, 7);
        let (listed, classes, rest) = list_flows(FlowListing::All, flows(), class_of);
        assert_eq!(listed.len(), 10);
        assert_eq!(classes.len(), 10);
        assert_eq!(listed[3].bucket, 3, "bucket order");
        assert_eq!(rest, FlowSummary::default());
    }
}
