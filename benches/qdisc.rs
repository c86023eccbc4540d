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
//! Times are the measuring thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), not
//! wall time: on a shared machine a wall clock also counts the time the
//! thread waited for a core. (Cache contention from other processes still
//! counts.)
//!
//! `path_meter_off` and `path_meter_on` measure a whole `Path` (pfifo
//! root, 100 Mbit/s, a 256-descriptor ring with BQL, no delay) per frame
//! offered and delivered at 1, 100 and 10,000 flows, without and with the
//! per-flow meter (`link::meter`), so the meter's cost per frame is the
//! difference of the two in the same run.
//!
//! Run: `cargo bench --bench qdisc [-- --warm-up-time 1 --measurement-time 2]`.
//! Per-packet time = criterion's time per iteration / 4096. Results go to
//! BENCHMARKS.md.

// `criterion_group!` makes a public `fn` no doc comment can reach.
#![allow(missing_docs)]

#[path = "common/disciplines.rs"]
mod disciplines;

use bloatbox::link::{LinkParams, Path};
use bloatbox::packet::Drops;
use bloatbox::qdisc::Qdisc;
use bloatbox::time::Instant;
use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use disciplines::{Discipline, FLOW_COUNTS};
use nix::time::{clock_gettime, ClockId};

/// Frames per measured iteration.
const BATCH: u64 = 4096;
/// 1514 bytes at 100 Mbit/s, ns.
const SPACING_NS: u64 = 121_120;

/// CPU time of the calling thread, ns.
fn thread_cpu_ns() -> u64 {
    let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).expect("thread CPU clock");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

/// Criterion measurement: CPU time of the benchmarking thread, in ns.
struct ThreadCpuTime;

impl Measurement for ThreadCpuTime {
    type Intermediate = u64;
    type Value = u64;
    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, started: u64) -> u64 {
        thread_cpu_ns().saturating_sub(started)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuNanos
    }
}

/// Prints CPU times in ns (per batch) and throughput in elements/s.
struct CpuNanos;

impl ValueFormatter for CpuNanos {
    fn scale_values(&self, _typical: f64, _values: &mut [f64]) -> &'static str {
        "ns (CPU)"
    }
    fn scale_throughputs(&self, _typical: f64, t: &Throughput, values: &mut [f64]) -> &'static str {
        let per = match *t {
            Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => n,
        } as f64;
        for v in values.iter_mut() {
            *v = per * 1e9 / *v;
        }
        "elem/s (CPU)"
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

/// Measures `d` at each flow count. Criterion calls the closure once per
/// sample, so the tree is built once, when first measured (a 1000-class
/// tree takes seconds to build from tc lines; flow counts filtered out never
/// build it), and reset only when the flow count changes; time goes on
/// throughout, as the shapers require.
fn bench_one(
    c: &mut Criterion<ThreadCpuTime>,
    group_name: &str,
    d: &Discipline,
    flow_counts: &[u32],
) {
    let mut group = c.benchmark_group(group_name);
    group.throughput(Throughput::Elements(BATCH));
    let mut tree = None;
    let mut loaded_with = None;
    let mut drops = Drops::new();
    let mut now = Instant::from_millis(1);
    let mut next_id = 0;
    for &flows in flow_counts {
        group.bench_function(format!("{flows}_flows"), |b| {
            let q = tree.get_or_insert_with(|| d.build());
            if loaded_with != Some(flows) {
                loaded_with = Some(flows);
                q.reset(&mut drops);
                let standing = (flows as u64).max(64);
                for p in d.frames(flows, 0, standing) {
                    q.enqueue(p, now, &mut drops);
                }
                drops.drain().for_each(drop);
                next_id = standing;
            }
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

/// A `Path` with the meter `on` or off, fed one frame every `SPACING_NS`
/// (the line rate) and polled at each: ingress, the qdisc, the ring, the
/// serializer and delivery, per frame.
fn bench_path(c: &mut Criterion<ThreadCpuTime>, d: &Discipline, on: bool) {
    let name = if on {
        "path_meter_on"
    } else {
        "path_meter_off"
    };
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(BATCH));
    let params = LinkParams {
        rate_bytes_ps: 12_500_000,
        delay_ns: 0,
        ..LinkParams::default()
    };
    for flows in FLOW_COUNTS {
        let mut path = Path::new(params, d.build());
        path.set_flow_meter(on);
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        let mut now = Instant::from_millis(1);
        let mut next_id = 0;
        group.bench_function(format!("{flows}_flows"), |b| {
            b.iter_batched_ref(
                || {
                    let batch = d.frames(flows, next_id, BATCH);
                    next_id += BATCH;
                    batch
                },
                |batch| {
                    for p in batch.drain(..) {
                        now += SPACING_NS;
                        path.ingress(p, now);
                        path.poll(now, &mut out, &mut freed);
                        out.drain(..).for_each(|p| drop(std::hint::black_box(p)));
                        freed.drain(..).for_each(drop);
                    }
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

fn bench(c: &mut Criterion<ThreadCpuTime>) {
    let all = disciplines::all();
    for d in &all {
        bench_one(c, d.name, d, &FLOW_COUNTS);
    }
    let pfifo = all.iter().find(|d| d.name == "pfifo").expect("pfifo");
    bench_path(c, pfifo, false);
    bench_path(c, pfifo, true);
    bench_one(c, "reference_end", pfifo, &[1]);
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = bench
}
criterion_main!(benches);
