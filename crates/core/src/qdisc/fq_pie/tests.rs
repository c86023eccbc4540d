//! FQ-PIE's unit tests at explicit times: the defaults dumped, the kernel's
//! refusals, the DRR with new flows first, per-flow PIE state and the
//! timer's 2048-flow runs, the ECN threshold in percent, the packet limit
//! and the memory limit that only counts.

use super::*;
use crate::packet::ecn::{ECN_CE, ECN_ECT0};
use crate::qdisc::jiffies::JIFFY_NS;
use crate::qdisc::pie::algorithm::ns_to_ticks;
use crate::qdisc::testutil::{flow_pkt, pkt};
use crate::time::NS_PER_MS;

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

fn fq_pie(o: FqPieOptions) -> Result<FqPie, Refusal> {
    FqPie::build(QdiscCtx::default(), &QdiscOptions::FqPie(o))
}

fn xstats(q: &FqPie) -> FqPieXstats {
    match q.dump(ms(0)).xstats {
        Some(Xstats::FqPie(x)) => x,
        other => panic!("{other:?}"),
    }
}

/// A frame of `len` bytes in flow `flow`, ECN-capable.
fn ect_flow_pkt(id: u64, len: u32, flow: u16) -> Packet {
    let mut p = crate::qdisc::testutil::ect_pkt(id, len, ECN_ECT0);
    let f = flow_pkt(id, len, flow);
    p.meta.flow = f.meta.flow;
    p.meta.hash = f.meta.hash;
    p
}

#[test]
fn defaults_dump_as_fq_pie_init_sets_them() {
    let q = fq_pie(FqPieOptions::default()).unwrap();
    assert_eq!(
        q.options(),
        FqPieOptions {
            pie: PieOptions {
                target: Some(15_000),
                limit: Some(10_240),
                tupdate: Some(16_000),
                alpha: Some(2),
                beta: Some(20),
                ecn: Some(false),
                bytemode: Some(false),
                dq_rate_estimator: Some(false),
            },
            flows: Some(1024),
            quantum: Some(1514),
            memory_limit: Some(32 << 20),
            ecn_prob: Some(10),
        }
    );
}

#[test]
fn refusals_are_the_kernels() {
    let msg = |r: Refusal| r.message.unwrap();
    for f in [0, 65_537] {
        let e = fq_pie(FqPieOptions {
            flows: Some(f),
            ..FqPieOptions::default()
        })
        .err()
        .unwrap();
        assert_eq!(
            msg(e),
            "sch_fq_pie: Number of flows must range in [1..65536]."
        );
    }
    assert!(fq_pie(FqPieOptions {
        flows: Some(65_536),
        ..FqPieOptions::default()
    })
    .is_ok());
    for quantum in [0, (1 << 20) + 1] {
        let e = fq_pie(FqPieOptions {
            quantum: Some(quantum),
            ..FqPieOptions::default()
        })
        .err()
        .unwrap();
        assert_eq!(msg(e), "integer out of range.");
    }
    let mut q = fq_pie(FqPieOptions::default()).unwrap();
    let mut d = Drops::new();
    let o = QdiscOptions::FqPie(FqPieOptions {
        flows: Some(16),
        ecn_prob: Some(50),
        ..FqPieOptions::default()
    });
    let e = q.change(&o, ms(0), &mut d).err().unwrap();
    assert_eq!(msg(e), "sch_fq_pie: Number of flows cannot be changed.");
    assert_eq!(q.ecn_prob, 10, "a refused change changes nothing");
    assert_eq!(
        q.change(&QdiscOptions::None, ms(0), &mut d)
            .err()
            .unwrap()
            .errno,
        Errno::EINVAL
    );
}

#[test]
fn a_new_flow_is_served_once_the_current_one_spends_its_quantum() {
    let mut q = fq_pie(FqPieOptions {
        flows: Some(64),
        ..FqPieOptions::default()
    })
    .unwrap();
    let mut d = Drops::new();
    for id in 0..10 {
        q.enqueue(flow_pkt(id, 1000, 1), ms(0), &mut d);
    }
    let mut probe = flow_pkt(100, 1000, 2);
    let (a, b) = (
        q.classify(&mut flow_pkt(0, 1000, 1)).unwrap(),
        q.classify(&mut probe).unwrap(),
    );
    assert_ne!(a, b, "the test's two flows hash apart");
    let first = q.dequeue(ms(1), &mut d).unwrap();
    assert_eq!(first.meta.id, 0);
    q.enqueue(probe, ms(1), &mut d);
    // Flow 1 has 514 bytes of credit left: one more frame, then the new
    // flow, then flow 1 from the old list.
    let order: Vec<u64> = (0..3)
        .map(|i| q.dequeue(ms(2 + i), &mut d).unwrap().meta.id)
        .collect();
    assert_eq!(order, [1, 100, 2]);
    let x = xstats(&q);
    assert_eq!((x.new_flow_count, x.packets_in), (2, 11));
    // The emptied new flow went to the old list behind flow 1 (which
    // still had old flows to pass to), as `fq_pie_qdisc_dequeue` moves it.
    assert_eq!((x.new_flows_len, x.old_flows_len), (0, 2));
    // truesize(1000) = 2304 bytes for each of the 7 frames left.
    assert_eq!(x.memory_usage, 7 * 2304);
}

#[test]
fn each_flow_has_its_own_probability_and_the_timer_updates_2048_a_run() {
    let mut q = fq_pie(FqPieOptions {
        flows: Some(4096),
        ..FqPieOptions::default()
    })
    .unwrap();
    let delay = ns_to_ticks(40 * NS_PER_MS);
    for i in [0usize, 3000] {
        q.flows[i].vars.qdelay = delay;
        q.flows[i].backlog = 50_000;
    }
    // The first run (500 ms) takes flows 0..2048, the next, a jiffy later,
    // the rest; then tupdate (16 ms) after that.
    q.catch_up(ms(500));
    assert!(q.flows[0].vars.prob > 0);
    assert_eq!(q.flows[3000].vars.prob, 0);
    assert_eq!(q.flows[1].vars.prob, 0);
    assert_eq!(q.timer.next, Some(ms(500) + JIFFY_NS));
    q.catch_up(ms(504));
    assert_eq!(q.flows[3000].vars.prob, q.flows[0].vars.prob);
    assert_eq!(q.timer.next, Some(ms(520)));
}

#[test]
fn ecn_marks_up_to_ecn_prob_percent() {
    let mut q = fq_pie(FqPieOptions {
        pie: PieOptions {
            ecn: Some(true),
            ..PieOptions::default()
        },
        ecn_prob: Some(30),
        flows: Some(1),
        ..FqPieOptions::default()
    })
    .unwrap();
    let mut d = Drops::new();
    for id in 0..4 {
        q.enqueue(ect_flow_pkt(id, 1000, 1), ms(0), &mut d);
    }
    let v = &mut q.flows[0].vars;
    v.burst_time = 0;
    v.qdelay = ns_to_ticks(15 * NS_PER_MS);
    v.prob = (MAX_PROB / 100) * 30;
    v.accu_prob = (MAX_PROB / 2) * 17;
    assert_eq!(
        q.enqueue(ect_flow_pkt(10, 1000, 1), ms(0), &mut d),
        Verdict::Queued
    );
    assert_eq!(q.flows[0].queue.back().unwrap().meta.dsfield & 3, ECN_CE);
    let v = &mut q.flows[0].vars;
    v.prob = (MAX_PROB / 100) * 30 + 1;
    v.accu_prob = (MAX_PROB / 2) * 17;
    assert_eq!(
        q.enqueue(ect_flow_pkt(11, 1000, 1), ms(0), &mut d),
        Verdict::Dropped
    );
    assert_eq!(d.since(0)[0].1, DropReason::PieEarly);
    let x = xstats(&q);
    assert_eq!((x.ecn_mark, x.dropped, x.packets_in), (1, 1, 5));
}

#[test]
fn the_limit_drops_arrivals_and_the_memory_limit_only_counts() {
    let mut q = fq_pie(FqPieOptions {
        pie: PieOptions {
            limit: Some(4),
            ..PieOptions::default()
        },
        memory_limit: Some(1),
        ..FqPieOptions::default()
    })
    .unwrap();
    let mut d = Drops::new();
    for id in 0..6 {
        q.enqueue(pkt(id, 1000), ms(0), &mut d);
    }
    // Arrivals 3 and 4 find more than 1 + 2304 bytes charged: counted
    // over memory and queued; 5 and 6 find the limit.
    let x = xstats(&q);
    assert_eq!((x.overmemory, x.overlimit, x.dropped), (2, 2, 2));
    assert_eq!(q.qlen(), 4);
    assert!(d
        .since(0)
        .iter()
        .all(|(_, r)| *r == DropReason::PieOverlimit));
    // A lowered limit drops through the dequeue.
    let o = QdiscOptions::FqPie(FqPieOptions {
        pie: PieOptions {
            limit: Some(1),
            ..PieOptions::default()
        },
        ..FqPieOptions::default()
    });
    q.change(&o, ms(1), &mut d).unwrap();
    assert_eq!(q.qlen(), 1);
    assert_eq!(q.dequeue(ms(2), &mut d).unwrap().meta.id, 3);
    assert_eq!(q.stats().drops, 5);
}
