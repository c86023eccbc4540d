//! Simulated frames per second of wall time: 1024 UDP flows (about 1.2x the
//! line rate in total) through fq_codel (and pfifo_fast) on a 1 Gbit/s
//! link, 0.5 s of simulated time per iteration; the TCP bufferbloat
//! scenario (8 CUBIC flows and a ping, 20 s at 100 Mbit/s); and seed 3's
//! link (pfifo_fast, 256-descriptor ring with BQL, TX completions coalesced
//! at 500 µs / 32 frames, 200 Mbit/s) overloaded 1.5x, with qdisc bulk
//! dequeue on and off: the core's CPU per frame in both modes, side by side
//! in one run. Traced to the hash only. Throughput is frames handed to
//! either path. Run: `cargo bench --bench sim`.

// `criterion_group!` makes a public `fn` no doc comment can reach.
#![allow(missing_docs)]

use bloatbox::sim::{self, Scenario};
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};

fn scenario(qdisc: &str) -> Scenario {
    Scenario::from_toml(&format!(
        r#"
seed = 1
duration = "500ms"
[link.left_to_right]
rate = "1gbit"
delay = "1ms"
tc = ["tc qdisc add dev left root {qdisc}"]
[[udp]]
count = 1024
rate = "1200kbit"
size = 1514
poisson = true
"#
    ))
    .expect("bench scenario is valid")
}

/// Seed 3's link (configs/bulk-dequeue-on.toml and -off.toml) with 300
/// Mbit/s of 1514-byte UDP frames offered for 0.5 s.
fn bulk_dequeue_scenario(bulk: bool) -> Scenario {
    Scenario::from_toml(&format!(
        r#"
seed = 1
duration = "500ms"
[link.left_to_right]
rate = "200mbit"
delay = "1ms"
tx_ring = 256
bql = true
tx_usecs = 500
tx_frames = 32
bulk_dequeue = {bulk}
qdisc = "pfifo_fast"
[[udp]]
count = 16
rate = "18750kbit"
size = 1514
poisson = true
"#
    ))
    .expect("bench scenario is valid")
}

/// Benchmarks `sc` under `name`, its throughput the frames one run hands
/// to either path.
fn bench_scenario(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, sc: &Scenario) {
    let r = sim::run(sc).expect("bench scenario runs");
    g.throughput(Throughput::Elements(
        r.directions.iter().map(|d| d.frames_in).sum(),
    ));
    g.bench_function(name, |b| {
        b.iter(|| sim::run(sc).expect("bench scenario runs"))
    });
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("sim");
    g.sample_size(10);
    for qdisc in ["fq_codel", "pfifo_fast"] {
        bench_scenario(&mut g, &format!("{qdisc}_1024_udp_flows"), &scenario(qdisc));
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios/bloat_fq_codel.toml");
    let sc = Scenario::from_file(&path).expect("scenario file is valid");
    bench_scenario(&mut g, "fq_codel_8_cubic_20s", &sc);
    for (bulk, name) in [(true, "on"), (false, "off")] {
        let sc = bulk_dequeue_scenario(bulk);
        bench_scenario(&mut g, &format!("seed3_bulk_dequeue_{name}"), &sc);
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
