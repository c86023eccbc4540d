//! The per-flow meter's cost per frame, for counting instructions: the
//! workload of the qdisc benchmark's `path_meter_on`/`path_meter_off`
//! (a whole `Path`, pfifo root, 100 Mbit/s, a 256-descriptor ring with
//! BQL, no delay; one 1514-byte frame offered every 121.12 µs and polled,
//! so each is delivered) with the meter on or off, in batches of 4096
//! frames of FLOWS flows in turn. Only `run_batch` does the frames' work:
//! under `valgrind --tool=callgrind --toggle-collect='*run_batch*'` the
//! instructions counted are those of BATCHES batches, without building the
//! frames; two runs with different BATCHES give the instructions per frame
//! in the steady state (docs/benchmarking.md).
//!
//! usage: meter_cost on|off FLOWS BATCHES

#[path = "../benches/common/disciplines.rs"]
#[allow(dead_code)]
mod disciplines;

use bloatbox::link::{LinkParams, Path};
use bloatbox::packet::Packet;
use bloatbox::time::Instant;

/// Frames per batch, as in the benchmark.
const BATCH: u64 = 4096;
/// 1514 bytes at 100 Mbit/s, ns.
const SPACING_NS: u64 = 121_120;

/// Offers and delivers every frame of `batch`: the measured work.
#[inline(never)]
fn run_batch(path: &mut Path, batch: &mut Vec<Packet>, now: &mut Instant) {
    let (mut out, mut freed) = (Vec::with_capacity(4), Vec::with_capacity(4));
    for p in batch.drain(..) {
        *now += SPACING_NS;
        path.ingress(p, *now);
        path.poll(*now, &mut out, &mut freed);
        out.drain(..).for_each(|p| drop(std::hint::black_box(p)));
        freed.drain(..).for_each(drop);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: meter_cost on|off FLOWS BATCHES";
    let (Some(on), Some(flows), Some(batches)) = (
        args.first().and_then(|a| match a.as_str() {
            "on" => Some(true),
            "off" => Some(false),
            _ => None,
        }),
        args.get(1).and_then(|a| a.parse::<u32>().ok()),
        args.get(2).and_then(|a| a.parse::<u64>().ok()),
    ) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let pfifo = disciplines::all()
        .into_iter()
        .find(|d| d.name == "pfifo")
        .expect("the pfifo discipline");
    let params = LinkParams {
        rate_bytes_ps: 12_500_000,
        delay_ns: 0,
        ..LinkParams::default()
    };
    let mut path = Path::new(params, pfifo.build());
    path.set_flow_meter(on);
    let mut now = Instant::from_millis(1);
    for b in 0..batches {
        let mut batch = pfifo.frames(flows.max(1), b * BATCH, BATCH);
        run_batch(&mut path, &mut batch, &mut now);
    }
    let c = path.counters();
    println!(
        "meter {} flows {flows} frames in {} out {}",
        if on { "on" } else { "off" },
        c.frames_in,
        c.frames_out
    );
}
