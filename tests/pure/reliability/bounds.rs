//! Memory bounds under a flood: every qdisc holds at most its limit
//! (packets, bytes, or fq_codel's memory_limit in truesize) while 10^5
//! frames of many flows arrive much faster than they leave, every frame
//! refused is in `Drops` with a reason, and the datapath's bounded
//! `PacketPool` never hands out more than its cap: frames beyond it are
//! dropped and counted as `PoolExhausted` in their direction, as the live
//! datapath's read loop does.

use bloatbox::bridge::Bridge;
use bloatbox::dir::Dir;
use bloatbox::link::{LinkParams, Path};
use bloatbox::packet::pool::PacketPool;
use bloatbox::packet::truesize;
use bloatbox::packet::{DropReason, Drops, Packet};
use bloatbox::qdisc::fq_codel::{FqCodel, FqCodelOptions};
use bloatbox::qdisc::tree::{DevSpec, QdiscTree};
use bloatbox::qdisc::{Qdisc, QdiscCtx};
use bloatbox::time::Instant;
use etherparse::PacketBuilder;

const FLOOD: u64 = 100_000;

/// A UDP frame of flow `i % 997`, 64..1514 bytes.
fn frame(i: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(1514);
    let len = 64 + (i * 7919 % 1451) as usize;
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4([10, 0, (i % 7) as u8, 1], [10, 0, 0, 2], 64)
        .udp(1024 + (i % 997) as u16, 5001)
        .write(&mut out, &vec![0u8; len - 42])
        .unwrap();
    out
}

/// Floods `q`: one dequeue per `ratio` enqueues, a frame every 10 µs.
/// `bound(q)` is checked after every step. Returns (sent, dropped).
fn flood<Q: Qdisc>(q: &mut Q, ratio: u64, bound: &dyn Fn(&Q) -> Result<(), String>) -> (u64, u64) {
    let mut drops = Drops::new();
    let (mut sent, mut dropped) = (0u64, 0u64);
    let mut by_reason = [0u64; DropReason::ALL.len()];
    for i in 0..FLOOD {
        let now = Instant::from_micros(i * 10);
        let mut p = Packet::from_frame(frame(i), now);
        p.meta.queue_mapping = (i % 2) as u16;
        q.enqueue(p, now, &mut drops);
        if i % ratio == 0 && q.dequeue(now, &mut drops).is_some() {
            sent += 1;
        }
        for (_, reason) in drops.drain() {
            by_reason[reason.index()] += 1;
            dropped += 1;
        }
        if let Err(e) = bound(q) {
            panic!("{} after {i} frames: {e}", q.kind());
        }
    }
    // Drain what is left, at most a simulated minute later.
    let mut now = Instant::from_micros(FLOOD * 10);
    while q.qlen() > 0 {
        match q.dequeue(now, &mut drops) {
            Some(_) => sent += 1,
            None => {
                now = q
                    .next_wakeup(now)
                    .map_or(now + 1_000_000, |w| w.max(now + 1))
            }
        }
        assert!(
            now < Instant::from_millis(FLOOD / 100 + 600_000),
            "{} never drains",
            q.kind()
        );
    }
    dropped += drops.drain().count() as u64;
    assert_eq!(
        sent + dropped,
        FLOOD,
        "{}: every frame sent or dropped",
        q.kind()
    );
    assert!(
        dropped > FLOOD / 2,
        "{}: the flood overran the queue",
        q.kind()
    );
    println!(
        "{:>10}: {sent} sent, {dropped} dropped {:?}",
        q.kind(),
        DropReason::ALL
            .iter()
            .filter(|r| by_reason[r.index()] > 0)
            .map(|r| (r.name(), by_reason[r.index()]))
            .collect::<Vec<_>>()
    );
    (sent, dropped)
}

fn tree(lines: &[&str], queues: u16) -> QdiscTree {
    let spec = DevSpec {
        tx_queues: queues,
        ..DevSpec::new(Dir::LeftToRight, bloatbox::qdisc::kinds::BUILTIN)
    };
    bloatbox::tc::build_tree(spec, lines).unwrap_or_else(|e| panic!("{e}"))
}

fn max_qlen(n: u32) -> impl Fn(&QdiscTree) -> Result<(), String> {
    move |q: &QdiscTree| {
        if q.qlen() <= n {
            Ok(())
        } else {
            Err(format!("qlen {} > {n}", q.qlen()))
        }
    }
}

fn max_backlog(n: u64) -> impl Fn(&QdiscTree) -> Result<(), String> {
    move |q: &QdiscTree| {
        if q.backlog() <= n {
            Ok(())
        } else {
            Err(format!("backlog {} > {n}", q.backlog()))
        }
    }
}

#[test]
fn fq_codel_respects_limit_and_memory_limit() {
    // memory_limit 256kb: 256 KiB of truesize (~113 full frames). Like the
    // kernel, fq_codel checks the limit after queueing a frame and then
    // drops one batch from the fattest flow, so usage may exceed the limit
    // by at most the frame just queued.
    let mut q = FqCodel::with_options(
        QdiscCtx::default(),
        &FqCodelOptions {
            limit: Some(10000),
            memory_limit: Some(256 * 1024),
            ..FqCodelOptions::default()
        },
    )
    .unwrap();
    let cap = 256 * 1024 + truesize(1514) as u64;
    let (_, dropped) = flood(&mut q, 4, &|q: &FqCodel| {
        let usage = q.memory_usage();
        if usage <= cap {
            Ok(())
        } else {
            Err(format!("memory {usage} > {cap}"))
        }
    });
    assert!(dropped > 0);
    assert!(q.memory_usage() <= cap);
    assert_eq!(q.memory_usage(), 0, "all memory returned once drained");
    // limit: packets.
    let mut q = tree(&["tc qdisc add dev left root fq_codel limit 300"], 1);
    flood(&mut q, 4, &max_qlen(300));
    // Truesize is what memory_limit counts, and it exceeds the frame.
    assert!(truesize(1514) > 1514);
}

#[test]
fn fifo_sfq_codel_tbf_pfifo_fast_respect_their_limits() {
    flood(
        &mut tree(&["tc qdisc add dev left root pfifo limit 100"], 1),
        3,
        &max_qlen(100),
    );
    flood(
        &mut tree(&["tc qdisc add dev left root bfifo limit 50kb"], 1),
        3,
        &max_backlog(50 * 1024),
    );
    flood(
        &mut tree(&["tc qdisc add dev left root sfq limit 50"], 1),
        3,
        &max_qlen(50),
    );
    flood(
        &mut tree(&["tc qdisc add dev left root codel limit 200"], 1),
        3,
        &max_qlen(200),
    );
    flood(
        &mut tree(
            &["tc qdisc add dev left root tbf rate 10mbit burst 10kb limit 30kb"],
            1,
        ),
        1,
        &max_backlog(30 * 1024),
    );
    // pfifo_fast: txqueuelen (1000) frames in all.
    flood(&mut tree(&[], 1), 3, &max_qlen(1000));
}

#[test]
fn classful_leaves_respect_their_limits() {
    let htb = tree(
        &[
            "tc qdisc add dev left root handle 1: htb default 20",
            "tc class add dev left parent 1: classid 1:1 htb rate 10mbit",
            "tc class add dev left parent 1:1 classid 1:10 htb rate 5mbit ceil 10mbit",
            "tc class add dev left parent 1:1 classid 1:20 htb rate 5mbit ceil 10mbit",
            "tc qdisc add dev left parent 1:10 sfq limit 40",
            "tc qdisc add dev left parent 1:20 pfifo limit 60",
            "tc filter add dev left parent 1: protocol all prio 1 u32 match ip src 10.0.1.1/32 flowid 1:10",
        ],
        1,
    );
    let mut htb = htb;
    flood(&mut htb, 2, &max_qlen(100));
    let mut qfq = tree(
        &[
            "tc qdisc add dev left root handle 1: qfq",
            "tc class add dev left parent 1: classid 1:1 qfq weight 1",
            "tc class add dev left parent 1: classid 1:2 qfq weight 9",
            "tc qdisc add dev left parent 1:1 pfifo limit 30",
            "tc qdisc add dev left parent 1:2 pfifo limit 30",
            "tc filter add dev left parent 1: protocol all prio 1 u32 match ip src 10.0.1.1/32 flowid 1:1",
            "tc filter add dev left parent 1: protocol all prio 2 matchall flowid 1:2",
        ],
        1,
    );
    flood(&mut qfq, 3, &max_qlen(60));
    let mut mq = tree(
        &[
            "tc qdisc add dev left root handle 1: mq",
            "tc qdisc add dev left parent 1:1 fq_codel limit 100",
            "tc qdisc add dev left parent 1:2 fq_codel limit 100 memory_limit 64kb",
        ],
        2,
    );
    flood(&mut mq, 3, &max_qlen(200));
}

#[test]
fn pool_hard_cap_drops_the_excess_as_pool_exhausted() {
    let mut pool = PacketPool::new(2048, 64);
    // Straight past the cap: no allocation beyond it, every miss counted.
    let held: Vec<Vec<u8>> = (0..1000).filter_map(|_| pool.get()).collect();
    assert_eq!(held.len(), 64);
    assert_eq!(pool.exhausted(), 1000 - 64);
    // Foreign buffers do not grow the pool past its cap.
    for b in held {
        pool.put(b);
    }
    for _ in 0..100 {
        pool.put(vec![0u8; 4096]);
    }
    assert_eq!(pool.in_use(), 0);
    let again: Vec<Vec<u8>> = (0..1000).filter_map(|_| pool.get()).collect();
    assert_eq!(again.len(), 64, "the cap holds after foreign puts");
}

/// The datapath's read loop in miniature: a 1 Mbit/s link flooded at
/// 10^5 frames; a frame for which the pool has no buffer is counted as
/// `PoolExhausted` in its direction; buffers come back from `poll`.
#[test]
fn pool_and_bridge_together_stay_bounded_and_conserve() {
    const CAP: usize = 256;
    let path = || {
        let params = LinkParams {
            rate_bytes_ps: 125_000,
            ..LinkParams::default()
        };
        let lines = ["tc qdisc add dev left root fq_codel limit 10000"];
        Path::new(params, tree(&lines, 1))
    };
    let mut bridge = Bridge::new(path(), path());
    let mut pool = PacketPool::new(2048, CAP);
    let (mut out, mut freed) = (Vec::new(), Vec::new());
    let mut delivered = 0u64;
    for i in 0..FLOOD {
        let now = Instant::from_micros(i * 20);
        let dir = if i % 4 == 0 {
            Dir::RightToLeft
        } else {
            Dir::LeftToRight
        };
        let f = frame(i);
        match pool.get() {
            Some(mut buf) => {
                buf.clear();
                buf.extend_from_slice(&f);
                bridge.ingress(dir, buf, now);
            }
            None => bridge
                .path_mut(dir)
                .count_rejected(f.len() as u32, DropReason::PoolExhausted),
        }
        bridge.poll(now, &mut out, &mut freed);
        delivered += out.len() as u64;
        for (_, p) in out.drain(..) {
            pool.put(p.data);
        }
        for b in freed.drain(..) {
            pool.put(b);
        }
        let held: u64 = Dir::ALL.iter().map(|d| bridge.path(*d).held()).sum();
        assert!(pool.in_use() <= CAP);
        assert_eq!(
            pool.in_use() as u64,
            held,
            "every buffer in use is a frame inside the link"
        );
    }
    let mut exhausted = 0;
    for dir in Dir::ALL {
        let c = bridge.path(dir).counters();
        assert_eq!(
            c.frames_in,
            c.frames_out + c.total_drops() + bridge.path(dir).held()
        );
        exhausted += c.drops[DropReason::PoolExhausted.index()];
    }
    assert_eq!(exhausted, pool.exhausted());
    assert!(
        exhausted > FLOOD / 2,
        "the pool cap was reached: {exhausted}"
    );
    println!("pool cap {CAP}: {delivered} delivered, {exhausted} pool_exhausted of {FLOOD}");
}
