//! What publishing one live snapshot costs the datapath thread with 10,000
//! flows queued: the full listing (every flow queue and its pseudo-class, as
//! snapshots were built before they were bounded) against the bounded one
//! the datapath publishes (`FlowListing::Top(64)`: the 64 flows with the
//! most backlog, the rest summed up). A bridge whose left→right fq_codel
//! (65536 buckets) holds one frame of each of 10,000 UDP flows, snapshotted
//! like `Datapath::snapshot`, then dropped. Run: `cargo bench --bench
//! snapshot`. Results go to BENCHMARKS.md.

// `criterion_group!` makes a public `fn` no doc comment can reach.
#![allow(missing_docs)]

use bloatbox::datapath::DEFAULT_SNAPSHOT_FLOWS;
use bloatbox::dir::Dir;
use bloatbox::link::LinkParams;
use bloatbox::qdisc::fq_codel::{FqCodel, FqCodelOptions};
use bloatbox::qdisc::{FlowListing, QdiscCtx, TC_H_ROOT};
use bloatbox::tui::fixtures::Scenario;
use criterion::{criterion_group, criterion_main, Criterion};

fn scenario(flows: u32) -> Scenario {
    let ctx = |major: u32| QdiscCtx {
        handle: major << 16,
        parent: TC_H_ROOT,
        ..QdiscCtx::default()
    };
    let big = FqCodel::with_options(
        ctx(0x8001),
        &FqCodelOptions {
            flows: Some(65536),
            limit: Some(20000),
            ..FqCodelOptions::default()
        },
    )
    .expect("valid fq_codel arguments");
    let params = LinkParams {
        rate_bytes_ps: 1_250_000,
        ..LinkParams::default()
    };
    let mut s = Scenario::new(Box::new(big), Box::new(FqCodel::new(ctx(0x8002))), params);
    s.burst_of_flows(Dir::LeftToRight, flows, 200);
    s
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("snapshot");
    for flows in [100u32, 10_000] {
        let mut s = scenario(flows);
        let now = s.now();
        let bridge = s.bridge_mut();
        let listed = |l| bridge.snapshot_listing(now, l).paths[0].qdisc.flows.len();
        assert_eq!(listed(FlowListing::Top(DEFAULT_SNAPSHOT_FLOWS)), 64);
        assert!(listed(FlowListing::All) > (flows as usize) * 9 / 10);
        group.bench_function(format!("{flows}_flows_all"), |b| {
            b.iter(|| bridge.snapshot_listing(now, FlowListing::All))
        });
        group.bench_function(format!("{flows}_flows_top{DEFAULT_SNAPSHOT_FLOWS}"), |b| {
            b.iter(|| bridge.snapshot_listing(now, FlowListing::Top(DEFAULT_SNAPSHOT_FLOWS)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
