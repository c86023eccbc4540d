//! Enqueue + dequeue cost per packet for every discipline (built from tc
//! lines, see `common/disciplines.rs`) at 1, 100 and 10,000 flows, with a
//! standing queue: one frame per flow (at least 64) is queued first (into
//! the tree, reset, of the previous flow count), then
//! each step enqueues one 1514-byte frame and dequeues one, 121.12 µs apart
//! (100 Mbit/s), so shapers never throttle and AQMs see the sojourn of that
//! queue. Groups run in the order listed; `reference_end` measures pfifo at
//! 1 flow again after all others, so that figures can be given as ratios to
//! a reference measured in the same run (the machine is shared and noisy).
//!
//! Run: `cargo bench --bench qdisc [-- --warm-up-time 1 --measurement-time 2]`.
//! Per-packet time = criterion's time per iteration / 4096. Results go to
//! BENCHMARKS.md.

#[path = "common/disciplines.rs"]
mod disciplines;

use bloatbox::packet::Drops;
use bloatbox::qdisc::Qdisc;
use bloatbox::time::Instant;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use disciplines::{Discipline, FLOW_COUNTS};

/// Frames per measured iteration.
const BATCH: u64 = 4096;
/// 1514 bytes at 100 Mbit/s, ns.
const SPACING_NS: u64 = 121_120;

/// Measures `d` at each flow count. The tree is built once (a 1000-class
/// tree takes seconds to build from tc lines) and reset between flow counts;
/// time goes on across them, as the shapers require.
fn bench_one(c: &mut Criterion, group_name: &str, d: &Discipline, flow_counts: &[u32]) {
    let mut group = c.benchmark_group(group_name);
    group.throughput(Throughput::Elements(BATCH));
    let mut q = d.build();
    let mut drops = Drops::new();
    let mut now = Instant::from_millis(1);
    for &flows in flow_counts {
        q.reset(&mut drops);
        drops.drain().for_each(drop);
        let standing = (flows as u64).max(64);
        for p in d.frames(flows, 0, standing) {
            q.enqueue(p, now, &mut drops);
        }
        let mut next_id = standing;
        group.bench_function(format!("{flows}_flows"), |b| {
            // `iter_batched_ref` + `drain`: the batch's buffer is freed
            // outside the timed routine (a 600 KB Vec freed inside it costs
            // an munmap per batch).
            b.iter_batched_ref(
                || {
                    let batch = d.frames(flows, next_id, BATCH);
                    next_id += BATCH;
                    batch
                },
                |batch| {
                    for p in batch.drain(..) {
                        now += SPACING_NS;
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

fn bench(c: &mut Criterion) {
    let all = disciplines::all();
    for d in &all {
        bench_one(c, d.name, d, &FLOW_COUNTS);
    }
    let pfifo = all.iter().find(|d| d.name == "pfifo").expect("pfifo");
    bench_one(c, "reference_end", pfifo, &[1]);
}

criterion_group!(benches, bench);
criterion_main!(benches);
