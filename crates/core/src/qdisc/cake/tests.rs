//! CAKE's unit tests at explicit times, each value worked out by hand from
//! the kernel's formulas (net/sched/sch_cake.c): the overhead and ATM/PTM
//! cell arithmetic, `cake_set_rate`'s rates, targets and quanta, the
//! diffserv4 thresholds, COBALT's cache, drop schedule and BLUE steps, the
//! host-fair quantum, the set-associative ways, the shaper's schedule, the
//! memory limit's overflow drop and the ACK filter.

use super::cobalt::{control, inv_sqrt_cache, CobaltParams, CobaltVars};
use super::*;
use crate::packet::classify::flow_hash;

fn cake(o: CakeOptions) -> Cake {
    Cake::build(QdiscCtx::default(), &QdiscOptions::Cake(o)).unwrap()
}

/// A UDP frame of `len` bytes from 10.0.0.`src` port `sport` to
/// 10.0.1.1, its metadata as the classifier would fill it.
fn host_pkt(id: u64, len: u32, src: u8, sport: u16) -> Packet {
    to_host(id, len, src, sport, 1)
}

/// The same to 10.0.1.`dst`.
fn to_host(id: u64, len: u32, src: u8, sport: u16, dst: u8) -> Packet {
    let mut key = FlowKey {
        proto: 17,
        src_port: sport,
        dst_port: 5001,
        ..FlowKey::default()
    };
    key.src[10..].copy_from_slice(&[0xff, 0xff, 10, 0, 0, src]);
    key.dst[10..].copy_from_slice(&[0xff, 0xff, 10, 0, 1, dst]);
    let mut p = crate::qdisc::testutil::pkt(id, len);
    p.meta.l3 = L3::Ipv4 { offset: 14 };
    p.meta.flow = key;
    p.meta.hash = flow_hash(&key, 0);
    p
}

#[test]
fn overhead_and_cell_arithmetic() {
    // raw (the default): the frame's length, untouched.
    let mut q = cake(CakeOptions::default());
    assert_eq!(q.calc_overhead(1514, 14), 1514);
    // docsis: overhead 18, mpu 64; 60 - 14 + 18 = 64, and 40 - 14 + 18 =
    // 44 raised to the mpu.
    let mut q = cake(CakeOptions {
        overhead: Some(18),
        mpu: Some(64),
        atm: Some(atm_mode::NONE),
        ..CakeOptions::default()
    });
    assert_eq!(q.calc_overhead(100, 14), 104);
    assert_eq!(q.calc_overhead(40, 14), 64);
    // pppoe-llcsnap over ATM: 1500 + 40 = 1540 bytes, ceil(1540 / 48) = 33
    // cells of 53 bytes = 1749.
    let mut q = cake(CakeOptions {
        overhead: Some(40),
        atm: Some(atm_mode::ATM),
        ..CakeOptions::default()
    });
    assert_eq!(q.calc_overhead(1514, 14), 1749);
    // pppoe-ptm: 1500 + 30 = 1530, plus one byte per started 64: 24.
    let mut q = cake(CakeOptions {
        overhead: Some(30),
        atm: Some(atm_mode::PTM),
        ..CakeOptions::default()
    });
    assert_eq!(q.calc_overhead(1514, 14), 1554);
    let x = q.xstats();
    assert_eq!((x.min_netlen, x.max_netlen), (1500, 1500));
    assert_eq!((x.min_adjlen, x.max_adjlen), (1554, 1554));
    // A negative overhead larger than the frame wraps the kernel's u32
    // (46 - 64 = 2^32 - 18), which no mpu raises: the frame is charged
    // as huge, as the kernel charges it.
    let mut q = cake(CakeOptions {
        overhead: Some(-64),
        mpu: Some(20),
        ..CakeOptions::default()
    });
    assert_eq!(q.calc_overhead(60, 14), u32::MAX - 17);
    assert_eq!(q.calc_overhead(100, 14), 22);
}

#[test]
fn set_rate_targets_and_quanta() {
    // 20 Mbit/s = 2 500 000 B/s: (1e9 << 34) / 2.5e6 = 6 871 947 673 600
    // is shifted down to 13 421 772 800 >> 25; an MTU takes
    // 1514 * 13421772800 >> 25 = 605 600 ns, so target stays 5 ms and
    // interval 100 ms; the quantum 2.5e6 >> 12 = 610.
    let q = cake(CakeOptions {
        base_rate: Some(2_500_000),
        diffserv_mode: Some(diffserv::BESTEFFORT),
        ..CakeOptions::default()
    });
    let t = &q.xstats().tins[0];
    assert_eq!(
        (t.threshold_rate, t.target_us, t.interval_us),
        (2_500_000, 5000, 100_000)
    );
    assert_eq!(t.flow_quantum, 610);
    assert_eq!(q.tins[0].cparams.mtu_time, 605_600);
    assert_eq!((q.rate_ns, q.rate_shft), (13_421_772_800, 25));
    // 1 Mbit/s: an MTU takes 12.112 ms; target 1.5 x = 18.168 ms, interval
    // 100 + 18.168 - 5 = 113.168 ms; the quantum at its floor, 300.
    let q = cake(CakeOptions {
        base_rate: Some(125_000),
        diffserv_mode: Some(diffserv::BESTEFFORT),
        ..CakeOptions::default()
    });
    let t = &q.xstats().tins[0];
    assert_eq!(
        (t.target_us, t.interval_us, t.flow_quantum),
        (18_168, 113_168, 300)
    );
    // Unlimited: quantum 1514, target and interval as given (rtt 50 ms).
    let q = cake(CakeOptions {
        rtt: Some(50_000),
        target: Some(2_500),
        diffserv_mode: Some(diffserv::BESTEFFORT),
        ..CakeOptions::default()
    });
    let t = &q.xstats().tins[0];
    assert_eq!(
        (t.target_us, t.interval_us, t.flow_quantum),
        (2_500, 50_000, 1514)
    );
    // The memory limit from the rate: 2.5e6 * 100000 / 250000 = 1 000 000
    // is raised to 4 MiB.
    let q = cake(CakeOptions {
        base_rate: Some(2_500_000),
        ..CakeOptions::default()
    });
    assert_eq!(q.xstats().memory_limit, 4 << 20);
}

#[test]
fn diffserv_thresholds_and_tin_order() {
    // diffserv4: tins at rate, rate >> 4, >> 1, >> 2, dumped bulk first.
    let q = cake(CakeOptions {
        base_rate: Some(2_500_000),
        diffserv_mode: Some(diffserv::DIFFSERV4),
        ..CakeOptions::default()
    });
    let rates: Vec<u64> = q.xstats().tins.iter().map(|t| t.threshold_rate).collect();
    assert_eq!(rates, [156_250, 2_500_000, 1_250_000, 625_000]);
    let quanta: Vec<u16> = q.tins[..4].iter().map(|t| t.tin_quantum).collect();
    assert_eq!(quanta, [1024, 64, 512, 256]);
    // precedence: each tin 7/8 of the one before, quantum 256 * 7/8 ...
    let q = cake(CakeOptions {
        base_rate: Some(8_000_000),
        diffserv_mode: Some(diffserv::PRECEDENCE),
        ..CakeOptions::default()
    });
    let rates: Vec<u64> = q.xstats().tins.iter().map(|t| t.threshold_rate).collect();
    assert_eq!(rates[..3], [8_000_000, 7_000_000, 6_125_000]);
    let quanta: Vec<u16> = q.tins.iter().map(|t| t.tin_quantum).collect();
    assert_eq!(quanta, [256, 224, 196, 171, 149, 130, 113, 98]);
}

#[test]
fn dscp_selects_the_tin() {
    let q = cake(CakeOptions {
        diffserv_mode: Some(diffserv::DIFFSERV4),
        ..CakeOptions::default()
    });
    let tin = |dscp: u8| {
        let mut p = host_pkt(0, 100, 1, 1);
        p.meta.dsfield = dscp << 2;
        q.select_tin(&mut p)
    };
    // EF (46) is voice, CS1 (8) bulk, AF41 (34) video, CS0 best effort.
    assert_eq!([tin(46), tin(8), tin(34), tin(0)], [3, 1, 2, 0]);
    // wash clears the DSCP but selects by it first.
    let q = cake(CakeOptions {
        diffserv_mode: Some(diffserv::DIFFSERV3),
        wash: Some(1),
        ..CakeOptions::default()
    });
    let mut p = host_pkt(0, 100, 1, 1);
    p.meta.dsfield = (46 << 2) | 2;
    assert_eq!(q.select_tin(&mut p), 2);
}

#[test]
fn cobalt_cache_schedule_and_blue() {
    let cache = inv_sqrt_cache();
    assert_eq!(
        cache[..4],
        [0xFFFF_FFFF, 0xFFFF_FFFF, 0xB4EA_D8A0, 0x93CD_39E7]
    );
    // 100 ms / sqrt(2), in the kernel's fixed point.
    assert_eq!(control(0, 100_000_000, cache[2]), 70_670_846);
    let p = CobaltParams {
        target: 5_000_000,
        interval: 100_000_000,
        mtu_time: 0,
        p_inc: 1 << 24,
        p_dec: 1 << 20,
    };
    let mut v = CobaltVars::default();
    let never = || panic!("BLUE is quiet");
    // Over target first at 0: dropping, count 1, due at once (the fresh
    // state's rec_inv_sqrt is 0), no drop yet.
    assert!(!v.should_drop(&p, 0, 6_000_000, 0, &cache, || false, never));
    assert_eq!((v.count, v.dropping, v.drop_next), (1, true, 0));
    // At 1 ms the drop is due: dropped (not ECN-capable), count 2, next
    // 70.670846 ms later.
    assert!(v.should_drop(&p, 1_000_000, 6_000_000, 0, &cache, || false, never));
    assert_eq!((v.count, v.drop_next), (2, 70_670_846));
    // Not due at 2 ms; at 71 ms marked instead (ECT), count 3.
    assert!(!v.should_drop(&p, 2_000_000, 6_000_000, 0, &cache, || false, never));
    assert!(!v.should_drop(&p, 71_000_000, 6_000_000, 0, &cache, || true, never));
    assert!(v.ecn_marked);
    assert_eq!(v.count, 3);
    assert_eq!(
        v.drop_next,
        70_670_846 + ((100_000_000u64 * 0x93CD_39E7) >> 32) as i64
    );
    // BLUE: up by 1/256 when the queue overflows more than a target after
    // the last step, down by 1/4096 when found empty likewise.
    let mut b = CobaltVars::default();
    assert!(b.queue_full(&p, 10_000_000));
    assert_eq!(b.p_drop, 1 << 24);
    assert!(!b.queue_full(&p, 12_000_000));
    assert_eq!(b.p_drop, 1 << 24);
    assert!(!b.queue_full(&p, 16_000_000));
    assert_eq!(b.p_drop, 2 << 24);
    assert!(!b.queue_empty(&p, 22_000_000, &cache));
    assert_eq!(b.p_drop, (2 << 24) - (1 << 20));
}

/// Bytes each source host sends when host 1 runs one flow and host 2
/// `n` flows, each flow to a server of its own and kept backlogged (8
/// frames queued), unlimited, over 4000 dequeues.
fn host_shares(mode: u32, n: u16) -> (u64, u64) {
    let mut q = cake(CakeOptions {
        flow_mode: Some(mode),
        diffserv_mode: Some(diffserv::BESTEFFORT),
        ..CakeOptions::default()
    });
    let mut d = Drops::new();
    // (source host, port, destination host, frames queued)
    let mut flows: Vec<(u8, u16, u8, u32)> = vec![(1, 1, 1, 0)];
    flows.extend((0..n).map(|f| (2, 100 + f, 10 + f as u8, 0)));
    let (mut a, mut b) = (0, 0);
    for round in 0..4000u64 {
        for (src, sport, dst, queued) in &mut flows {
            while *queued < 8 {
                q.enqueue(
                    to_host(round, 1000, *src, *sport, *dst),
                    Instant::ZERO,
                    &mut d,
                );
                *queued += 1;
            }
        }
        let p = q.dequeue(Instant::from_nanos(round), &mut d).unwrap();
        let f = flows
            .iter_mut()
            .find(|f| f.1 == p.meta.flow.src_port)
            .unwrap();
        f.3 -= 1;
        if p.meta.flow.src[15] == 1 {
            a += u64::from(p.len);
        } else {
            b += u64::from(p.len);
        }
    }
    assert!(d.is_empty());
    (a, b)
}

#[test]
fn hosts_share_before_flows() {
    // triple-isolate takes the larger of the source's and the
    // destination's bulk flows: flows all to one server share it per flow.
    let mut q = cake(CakeOptions {
        diffserv_mode: Some(diffserv::BESTEFFORT),
        ..CakeOptions::default()
    });
    let mut d = Drops::new();
    for (id, (src, sport)) in [(1, 1), (2, 100), (2, 101), (2, 102), (2, 103)]
        .into_iter()
        .enumerate()
    {
        q.enqueue(host_pkt(id as u64, 1000, src, sport), Instant::ZERO, &mut d);
    }
    assert_eq!(
        q.tins[0]
            .flows
            .iter()
            .filter(|f| !f.queue.is_empty())
            .count(),
        5
    );
    // triple-isolate and dual-srchost: two source hosts share the link
    // equally however many flows each runs (quantum / bulk flows of the
    // host: 1514 * (65535 / 4) >> 16 = 378 for the host of four).
    for mode in [flow_mode::TRIPLE, flow_mode::DUAL_SRC] {
        let (a, b) = host_shares(u32::from(mode), 4);
        let ratio = a as f64 / b as f64;
        assert!((0.95..1.05).contains(&ratio), "mode {mode}: {a} vs {b}");
    }
    // flows: every flow its share, 1:4.
    let (a, b) = host_shares(u32::from(flow_mode::FLOWS), 4);
    let ratio = b as f64 / a as f64;
    assert!((3.8..4.2).contains(&ratio), "flows: {a} vs {b}");
}

#[test]
fn set_associative_ways() {
    let mut q = cake(CakeOptions {
        flow_mode: Some(u32::from(flow_mode::FLOWS)),
        diffserv_mode: Some(diffserv::BESTEFFORT),
        ..CakeOptions::default()
    });
    // Two flows whose hashes differ but reduce to the same queue.
    let reduced =
        |q: &Cake, p: &Packet| keyed_flow_hash(p.meta.hash, q.hash_key) as usize % CAKE_QUEUES;
    let first = host_pkt(0, 100, 1, 1);
    let r0 = reduced(&q, &first);
    let second = (2..u16::MAX)
        .map(|s| host_pkt(0, 100, 1, s))
        .find(|p| reduced(&q, p) == r0)
        .expect("a colliding port");
    let sport = second.meta.flow.src_port;
    let mut d = Drops::new();
    q.enqueue(first, Instant::ZERO, &mut d);
    q.enqueue(second, Instant::ZERO, &mut d);
    // Each new flow misses; the second takes the next way of the set.
    let x = q.xstats();
    assert_eq!((x.tins[0].way_misses, x.tins[0].way_indirect_hits), (2, 0));
    let way = r0 - r0 % CAKE_SET_WAYS + (r0 % CAKE_SET_WAYS + 1) % CAKE_SET_WAYS;
    assert_eq!(q.tins[0].flows[way].queue.len(), 1);
    // Again: the first found directly, the second one way along.
    q.enqueue(host_pkt(1, 100, 1, 1), Instant::ZERO, &mut d);
    q.enqueue(host_pkt(1, 100, 1, sport), Instant::ZERO, &mut d);
    let x = q.xstats();
    assert_eq!((x.tins[0].way_misses, x.tins[0].way_indirect_hits), (2, 1));
    assert_eq!(q.tins[0].way_directs, 1);
    assert_eq!(q.tins[0].flows[way].queue.len(), 2);
}

#[test]
fn shaper_schedules_by_adjusted_length() {
    // 1 Mbit/s: a 1514-byte frame holds the shaper 12.112 ms, the failsafe
    // 18.168 ms.
    let mut q = cake(CakeOptions {
        base_rate: Some(125_000),
        ..CakeOptions::default()
    });
    let mut d = Drops::new();
    for id in 0..3 {
        q.enqueue(host_pkt(id, 1514, 1, 1), Instant::ZERO, &mut d);
    }
    assert!(q.dequeue(Instant::ZERO, &mut d).is_some());
    assert!(q.dequeue(Instant::ZERO, &mut d).is_none());
    assert_eq!(q.stats().overlimits, 1);
    assert_eq!(
        q.next_wakeup(Instant::ZERO),
        Some(Instant::from_nanos(12_112_000))
    );
    assert_eq!(q.failsafe_next_packet, 18_168_000);
    assert!(q.dequeue(Instant::from_nanos(12_111_999), &mut d).is_none());
    assert!(q.dequeue(Instant::from_nanos(12_112_000), &mut d).is_some());
    assert_eq!(
        q.next_wakeup(Instant::ZERO),
        Some(Instant::from_nanos(24_224_000))
    );
}

#[test]
fn memlimit_drops_from_the_fattest_flow() {
    // memlimit 10000: five 1514-byte frames hold 5 * 2304 = 11520 bytes of
    // truesize; one is dropped from the head of the fattest flow.
    let mut q = cake(CakeOptions {
        memory: Some(10_000),
        ..CakeOptions::default()
    });
    let mut d = Drops::new();
    q.enqueue(host_pkt(100, 1514, 2, 9), Instant::ZERO, &mut d);
    for id in 0..4 {
        q.enqueue(host_pkt(id, 1514, 1, 1), Instant::ZERO, &mut d);
    }
    assert_eq!(q.xstats().memory_limit, 10_000);
    assert_eq!(d.len(), 1);
    let (p, reason) = &d.since(0)[0];
    assert_eq!((p.meta.id, *reason), (0, DropReason::CakeOverlimit));
    assert_eq!((q.qlen(), q.stats().drops), (4, 1));
    assert_eq!(q.xstats().memory_used, 5 * 2304);
}

/// An IPv4 TCP segment from 10.0.0.2:5201 to 10.0.0.1:40000 with
/// `flags`, cumulative ACK `ack`, `payload` bytes and TCP options `opts`.
fn tcp(ack: u32, flags: u8, payload: usize, opts: &[u8]) -> Packet {
    let tcp_len = 20 + opts.len();
    let mut f = vec![0u8; 14 + 20 + tcp_len + payload];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((20 + tcp_len + payload) as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&[10, 0, 0, 2]);
    ip[16..20].copy_from_slice(&[10, 0, 0, 1]);
    let t = &mut f[34..34 + tcp_len];
    t[0..2].copy_from_slice(&5201u16.to_be_bytes());
    t[2..4].copy_from_slice(&40000u16.to_be_bytes());
    t[8..12].copy_from_slice(&ack.to_be_bytes());
    t[12] = ((tcp_len / 4) as u8) << 4;
    t[13] = flags;
    t[20..].copy_from_slice(opts);
    Packet::from_frame(f, Instant::ZERO)
}

fn ack_cake(mode: u32) -> Cake {
    cake(CakeOptions {
        ack_filter: Some(mode),
        ..CakeOptions::default()
    })
}

fn offer(q: &mut Cake, pkts: Vec<Packet>) -> Drops {
    let mut d = Drops::new();
    for p in pkts {
        q.enqueue(p, Instant::ZERO, &mut d);
    }
    d
}

#[test]
fn ack_filter_drops_the_oldest_redundant_ack() {
    // Three pure ACKs: at the third, two older ones are eligible and the
    // one nearest the head goes.
    let mut q = ack_cake(ack_mode::FILTER);
    let d = offer(
        &mut q,
        (1..=3).map(|i| tcp(i * 1000, 0x10, 0, &[])).collect(),
    );
    assert_eq!(d.len(), 1);
    let (p, r) = &d.since(0)[0];
    assert_eq!(*r, DropReason::CakeAckFilter);
    assert_eq!(u32::from_be_bytes(p.data[42..46].try_into().unwrap()), 1000);
    assert_eq!(q.qlen(), 2);
    assert_eq!(q.xstats().tins[1].acks_dropped_packets, 1);
    // Two: only the aggressive filter drops the one just before.
    let mut q = ack_cake(ack_mode::FILTER);
    assert!(offer(
        &mut q,
        vec![tcp(1000, 0x10, 0, &[]), tcp(2000, 0x10, 0, &[])]
    )
    .is_empty());
    let mut q = ack_cake(ack_mode::AGGRESSIVE);
    let d = offer(
        &mut q,
        vec![tcp(1000, 0x10, 0, &[]), tcp(2000, 0x10, 0, &[])],
    );
    assert_eq!(d.len(), 1);
}

#[test]
fn ack_filter_keeps_what_carries_information() {
    // Data, a PSH, an ECE change, a higher cumulative ACK, an unknown
    // option: none is dropped.
    let keep = |older: Packet| {
        let mut q = ack_cake(ack_mode::AGGRESSIVE);
        offer(&mut q, vec![older, tcp(2000, 0x10, 0, &[])]).is_empty()
    };
    assert!(keep(tcp(1000, 0x10, 100, &[])));
    assert!(keep(tcp(1000, 0x18, 0, &[])));
    assert!(keep(tcp(1000, 0x50, 0, &[])));
    assert!(keep(tcp(3000, 0x10, 0, &[])));
    assert!(keep(tcp(1000, 0x10, 0, &[3, 3, 7, 0])));
    // The same ACK number with the same (no) SACK is not redundant; with
    // a SACK block the newer one covers, it is.
    assert!(keep(tcp(2000, 0x10, 0, &[])));
    let sack = |s: u32, e: u32| {
        let mut o = vec![1, 1, 5, 10];
        o.extend_from_slice(&s.to_be_bytes());
        o.extend_from_slice(&e.to_be_bytes());
        o
    };
    let mut q = ack_cake(ack_mode::AGGRESSIVE);
    let d = offer(
        &mut q,
        vec![
            tcp(2000, 0x10, 0, &sack(3000, 4000)),
            tcp(2000, 0x10, 0, &sack(3000, 5000)),
        ],
    );
    assert_eq!(d.len(), 1);
    // An older SACK the newer does not cover stays.
    assert!(keep(tcp(1000, 0x10, 0, &sack(6000, 7000))));
}

#[test]
fn autorate_ingress_estimates_from_the_first_gap() {
    // The first frame, 1000 bytes at 1 s: the gap (capped at 1 s) is
    // above the average (0), which moves a quarter of the way: 250 ms; a
    // window of 1 s held 1000 bytes, so the peak moves a quarter of the
    // way to 1000 B/s: 250; past 250 ms the rate becomes 250 x 15/16 =
    // 234 B/s, and the tins are reconfigured from it.
    let mut q = cake(CakeOptions {
        autorate: Some(1),
        diffserv_mode: Some(diffserv::BESTEFFORT),
        ..CakeOptions::default()
    });
    let mut d = Drops::new();
    q.enqueue(host_pkt(0, 1000, 1, 1), Instant::from_millis(1000), &mut d);
    assert_eq!(q.avg_packet_interval, 250_000_000);
    let x = q.xstats();
    assert_eq!((x.capacity_estimate, x.tins[0].threshold_rate), (250, 234));
    // 1 ms later: a gap below the average moves it by 1/256 only, and
    // the estimate stays.
    q.enqueue(host_pkt(1, 1000, 1, 1), Instant::from_millis(1001), &mut d);
    assert_eq!(q.avg_packet_interval, 250_000_000 - 976_562 + 3_906);
    assert_eq!(q.xstats().capacity_estimate, 250);
}

#[test]
fn extreme_lengths_and_options_do_not_panic() {
    // Lengths near 2^32 wrap in the cell arithmetic as the kernel's u32:
    // 2^32 - 1 - 64 = 4294967231 bytes, (that + 47) / 48 = 89478484 cells
    // of 53 = 4742359652, which is 447392356 modulo 2^32.
    let mut q = cake(CakeOptions {
        overhead: Some(-64),
        atm: Some(atm_mode::ATM),
        ..CakeOptions::default()
    });
    assert_eq!(q.calc_overhead(u32::MAX, 0), 447_392_356);
    // Every mode number, rates at both ends, a 1 us rtt.
    for mode in [0, 1, 2, 3, 4, 5, 255, u32::MAX] {
        for rate in [1, 64, u64::MAX] {
            let mut q = cake(CakeOptions {
                base_rate: Some(rate),
                diffserv_mode: Some(mode),
                flow_mode: Some(mode),
                atm: Some(mode),
                ack_filter: Some(mode),
                rtt: Some(0),
                target: Some(0),
                autorate: Some(1),
                ingress: Some(1),
                ..CakeOptions::default()
            });
            let mut d = Drops::new();
            for id in 0..20 {
                let t = Instant::from_micros(id * 300);
                q.enqueue(
                    host_pkt(id, 1 + id as u32 * 97, (id % 3) as u8, id as u16),
                    t,
                    &mut d,
                );
                q.dequeue(t, &mut d);
            }
            let _ = q.dump(Instant::from_millis(10));
        }
    }
}

/// A matchall filter sending every frame to `classid`, with an skbedit
/// priority `prio` if given.
fn matchall(classid: Handle, prio: Option<u32>) -> crate::packet::filter::Filter {
    use crate::packet::filter::{Filter, FilterKind, FilterProtocol};
    Filter {
        skbedit_priority: prio,
        ..Filter::new(FilterProtocol::All, FilterKind::Matchall, vec![], classid)
    }
}

/// (class id, tin place, qlen) of each flow row of a dump, by class id.
fn rows(q: &Cake) -> Vec<(Handle, u8, u32)> {
    let d = q.dump(Instant::ZERO);
    let mut rows: Vec<(Handle, u8, u32)> = d
        .flows
        .iter()
        .map(|f| (d.handle | (f.bucket + 1), f.cake.unwrap().tin, f.qlen))
        .collect();
    rows.sort_unstable();
    rows
}

#[test]
fn a_filter_minor_pins_flows_into_one_queue() {
    // besteffort, flows: without filters two flows take two queues.
    let opts = CakeOptions {
        diffserv_mode: Some(diffserv::BESTEFFORT),
        flow_mode: Some(u32::from(flow_mode::FLOWS)),
        ..CakeOptions::default()
    };
    let mut q = cake(opts.clone());
    let mut d = Drops::new();
    q.enqueue(host_pkt(1, 500, 2, 1000), Instant::ZERO, &mut d);
    q.enqueue(host_pkt(2, 700, 3, 2000), Instant::ZERO, &mut d);
    let free = rows(&q);
    assert_eq!(free.len(), 2, "{free:?}");
    // A filter's flowid 8001:5 stands for flow hash 4: queue 4, class
    // 8001:5, both flows in it (the major, above 1024, is no host).
    let mut q = cake(opts.clone());
    q.add_filter(matchall(0x8001_0005, None)).unwrap();
    q.enqueue(host_pkt(1, 500, 2, 1000), Instant::ZERO, &mut d);
    q.enqueue(host_pkt(2, 700, 3, 2000), Instant::ZERO, &mut d);
    assert_eq!(rows(&q), vec![(0x8001_0005, 0, 2)]);
    let c = &q.dump(Instant::ZERO).classes;
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].classid, c[0].queue.backlog), (0x8001_0005, 1200));
    // In triple-isolate (flows and hosts) the override is the flow hash
    // alone: the host hashes are not mixed in (`cake_hash` mixes them only
    // without `CAKE_FLOW_FLOWS`).
    let mut q = cake(CakeOptions {
        flow_mode: Some(u32::from(flow_mode::TRIPLE)),
        ..opts.clone()
    });
    q.add_filter(matchall(0x8001_0005, None)).unwrap();
    q.enqueue(host_pkt(1, 500, 2, 1000), Instant::ZERO, &mut d);
    q.enqueue(host_pkt(2, 700, 3, 2000), Instant::ZERO, &mut d);
    assert_eq!(rows(&q), vec![(0x8001_0005, 0, 2)]);
    // A minor above 1024 overrides nothing: the hash places them again.
    let mut q = cake(opts);
    q.add_filter(matchall(0x8001_0401, None)).unwrap();
    q.enqueue(host_pkt(1, 500, 2, 1000), Instant::ZERO, &mut d);
    q.enqueue(host_pkt(2, 700, 3, 2000), Instant::ZERO, &mut d);
    assert_eq!(rows(&q), free);
    assert!(d.is_empty(), "nothing dropped");
}

#[test]
fn a_filter_major_up_to_1024_stands_for_the_host() {
    // dual-srchost: two flows of two source hosts get two host slots; a
    // classid 3:0 (host override 3, no flow override) puts both hosts in
    // the slot of host hash 2 while their flows keep their queues.
    let opts = CakeOptions {
        diffserv_mode: Some(diffserv::BESTEFFORT),
        flow_mode: Some(u32::from(flow_mode::DUAL_SRC)),
        ..CakeOptions::default()
    };
    let hosts = |q: &Cake| -> Vec<u16> {
        let mut h: Vec<u16> = q
            .dump(Instant::ZERO)
            .flows
            .iter()
            .map(|f| f.cake.unwrap().srchost)
            .collect();
        h.sort_unstable();
        h
    };
    let mut d = Drops::new();
    let mut q = cake(opts.clone());
    q.enqueue(host_pkt(1, 500, 2, 1000), Instant::ZERO, &mut d);
    q.enqueue(host_pkt(2, 700, 3, 2000), Instant::ZERO, &mut d);
    let h = hosts(&q);
    assert_eq!(h.len(), 2);
    assert_ne!(h[0], h[1], "two hosts, two slots");
    let mut q = cake(opts);
    q.add_filter(matchall(0x0003_0000, None)).unwrap();
    q.enqueue(host_pkt(1, 500, 2, 1000), Instant::ZERO, &mut d);
    q.enqueue(host_pkt(2, 700, 3, 2000), Instant::ZERO, &mut d);
    assert_eq!(hosts(&q), vec![2, 2], "host hash 3 - 1 = 2, slot 2");
    assert_eq!(rows(&q).len(), 2, "the flows keep their own queues");
}

#[test]
fn a_filter_skbedit_priority_picks_the_tin() {
    // diffserv4 on 8001:: priority 8001:4 is the fourth tin tc prints
    // (Voice, tin 3); 8001:5 is past the four tins and the DSCP (0: Best
    // Effort, printed second) decides.
    let opts = CakeOptions {
        diffserv_mode: Some(diffserv::DIFFSERV4),
        ..CakeOptions::default()
    };
    let mut d = Drops::new();
    for (prio, place, tin) in [(0x8001_0004, 3u8, 3usize), (0x8001_0005, 1, 0)] {
        let mut q = cake(opts.clone());
        q.add_filter(matchall(0, Some(prio))).unwrap();
        q.enqueue(host_pkt(1, 500, 2, 1000), Instant::ZERO, &mut d);
        let r = rows(&q);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].1, place, "priority {prio:x}");
        assert_eq!(q.tins[tin].tin_backlog, 500, "priority {prio:x}");
        let x = q.xstats();
        assert_eq!(x.tins[usize::from(place)].backlog_bytes, 500);
    }
}

#[test]
fn flow_rows_carry_tin_hosts_and_cobalt_state() {
    // diffserv3 (Bulk, Best Effort, Voice): an unmarked frame goes to
    // Best Effort, tin 0, printed second: class 8001:(1024 + j + 1).
    let mut q = cake(CakeOptions::default());
    let mut d = Drops::new();
    q.enqueue(host_pkt(1, 500, 2, 1000), Instant::ZERO, &mut d);
    q.enqueue(host_pkt(2, 500, 2, 1000), Instant::from_millis(1), &mut d);
    let dump = q.dump(Instant::from_millis(3));
    assert_eq!(dump.flows.len(), 1);
    let f = &dump.flows[0];
    let c = f.cake.unwrap();
    assert_eq!((c.tin, c.tins, c.flow_mode), (1, 3, flow_mode::TRIPLE));
    assert_eq!(c.set, CakeFlowSet::Sparse);
    assert!(f.bucket >= 1024 && f.bucket < 2048, "{}", f.bucket);
    assert_eq!((f.qlen, f.backlog), (2, 1000));
    assert_eq!(f.head_sojourn_ns, 3_000_000);
    assert_eq!(f.flow, Some(host_pkt(1, 500, 2, 1000).meta.flow));
    // The row and the class are the same queue.
    assert_eq!(dump.classes.len(), 1);
    assert_eq!(dump.classes[0].classid, dump.handle | (f.bucket + 1));
    assert_eq!(dump.classes[0].queue.backlog, f.backlog);
    // Dequeued: the frame's bytes are counted sent; bounded listings sum
    // the rest.
    let p = q.dequeue(Instant::from_millis(3), &mut d).unwrap();
    let dump = q.dump_listing(Instant::from_millis(3), FlowListing::Top(0));
    assert!(dump.flows.is_empty() && dump.classes.is_empty());
    assert_eq!(dump.other_flows.flows, 1);
    assert_eq!(dump.other_flows.sent_bytes, u64::from(p.len));
    assert_eq!(dump.other_flows.backlog, 500);
}
