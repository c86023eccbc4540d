//! Enqueue + dequeue cost per packet for each discipline at 1, 100 and 10,000
//! flows, with a standing queue (the qdisc is kept about half full, as under
//! load). Run: `cargo bench --bench qdisc`. Results go to BENCHMARKS.md.

use bloatbox::packet::{Drops, FlowKey, Packet, PacketMeta};
use bloatbox::qdisc::{Qdisc, QdiscCtx};
use bloatbox::time::Instant;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

const BATCH: u64 = 4096;

fn frames(flows: u32, n: u64) -> Vec<Packet> {
    (0..n)
        .map(|i| {
            let f = (i % flows as u64) as u32;
            let mut key = FlowKey {
                proto: 6,
                src_port: (f & 0xffff) as u16,
                dst_port: (f >> 16) as u16 + 80,
                ..FlowKey::default()
            };
            key.src[15] = 1;
            key.dst[15] = 2;
            Packet {
                data: Vec::new(),
                len: 1514,
                meta: PacketMeta {
                    id: i,
                    // Selects HTB leaf 1:(f % 1000 + 1); the others' handles
                    // differ, so they ignore it.
                    priority: 0x0001_0000 | (f % 1000 + 1),
                    flow: key,
                    hash: bloatbox::packet::classify::flow_hash(&key, 0),
                    ..PacketMeta::default()
                },
            }
        })
        .collect()
}

/// Builds a qdisc from the tc tokens after the kind.
type Build = fn(QdiscCtx) -> Box<dyn Qdisc>;

fn disciplines() -> Vec<(&'static str, Build)> {
    use bloatbox::qdisc::codel_qdisc::CodelQdisc;
    use bloatbox::qdisc::fifo::{Fifo, FifoKind};
    use bloatbox::qdisc::fq_codel::FqCodel;
    use bloatbox::qdisc::pfifo_fast::PfifoFast;
    use bloatbox::qdisc::sfq::Sfq;
    use bloatbox::qdisc::tbf::Tbf;
    vec![
        ("pfifo", |c| {
            Box::new(Fifo::with_limit(FifoKind::Pfifo, c, 100_000))
        }),
        ("pfifo_fast", |c| Box::new(PfifoFast::new(c))),
        ("codel", |c| {
            Box::new(CodelQdisc::from_args(c, &["limit", "100000"]).unwrap())
        }),
        ("fq_codel", |c| {
            Box::new(FqCodel::from_args(c, &[]).unwrap())
        }),
        ("sfq", |c| {
            Box::new(
                Sfq::from_args(c, &["limit", "65535", "flows", "65535", "divisor", "65536"])
                    .unwrap(),
            )
        }),
        ("tbf", |c| {
            Box::new(
                Tbf::from_args(c, &["rate", "10gbit", "burst", "1mb", "limit", "100mb"]).unwrap(),
            )
        }),
        ("htb_1000_classes", htb_1000_classes),
    ]
}

/// HTB 1: with a 10 Gbit/s root class and 1000 leaves of 10 Mbit/s (ceil
/// 10 Gbit/s); frames pick their leaf through skb->priority (classid).
fn htb_1000_classes(c: QdiscCtx) -> Box<dyn Qdisc> {
    use bloatbox::qdisc::htb::Htb;
    let c = QdiscCtx {
        handle: 0x0001_0000,
        ..c
    };
    let mut q = Htb::from_args(c, &["default", "1"]).unwrap();
    let classful = q.as_classful().unwrap();
    let major = c.handle & 0xFFFF_0000;
    classful
        .add_class(major | 0xFFFF, major, &["rate", "10gbit"])
        .unwrap();
    for minor in 1..=1000 {
        classful
            .add_class(
                major | minor,
                major | 0xFFFF,
                &["rate", "10mbit", "ceil", "10gbit"],
            )
            .unwrap();
    }
    Box::new(q)
}

fn bench(c: &mut Criterion) {
    let ctx = QdiscCtx {
        txqueuelen: 100_000,
        ..QdiscCtx::default()
    };
    for (name, build) in disciplines() {
        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Elements(BATCH));
        for flows in [1u32, 100, 10_000] {
            group.bench_function(format!("{flows}_flows"), |b| {
                let mut q = build(ctx);
                let mut drops = Drops::new();
                let mut now = Instant::from_millis(1);
                // A standing queue: one frame per flow (at least 64) held.
                for p in frames(flows, (flows as u64).max(64)) {
                    q.enqueue(p, now, &mut drops);
                }
                b.iter_batched(
                    || frames(flows, BATCH),
                    |batch| {
                        for p in batch {
                            now += 121_120; // 1514 B at 100 Mbit/s
                            q.enqueue(p, now, &mut drops);
                            if let Some(out) = q.dequeue(now, &mut drops) {
                                std::hint::black_box(out);
                            }
                        }
                        drops.drain().for_each(drop);
                    },
                    BatchSize::LargeInput,
                );
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
