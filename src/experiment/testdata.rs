//! A synthetic but realistic report for the tests of the table, the JSON
//! and the plots, made without root: two of the demo's configurations on
//! their 100 Mbit/s link under the default RRUL options, with the samples a
//! run takes (throughput every 100 ms, ping every 100 ms, UDP_RR back to
//! back), their qdisc trees built by the tc front end, and receivers that
//! read in bursts (as after a loss) while data arrives at the line rate.

use std::time::{Duration, SystemTime};

use super::{Candidate, ConfigResult, DatapathTotals, PathTotals, Report, TestOptions};
use crate::dir::Dir;
use crate::link::transit::TransitSummary;
use crate::load::icmp::PingRaw;
use crate::load::rrul::{Received, RrulRaw, ThroughputSample};
use crate::load::stats::Sample;
use crate::load::udp_rr::UdpRrRaw;
use crate::qdisc::Qdisc;
use crate::time::Instant;

/// Mbit/s of data arriving in each direction.
pub const ARRIVED_MBIT: f64 = 94.0;

/// TCP flows per direction (`TestOptions::default`).
pub const FLOWS: usize = 4;

/// The receivers read nothing for this many samples, then all at once.
const READ_EVERY: usize = 4;

/// `read` split among `FLOWS` flows, the first getting half of it (a flow
/// the others crowd out less).
fn shares(read: u64) -> Vec<u64> {
    let rest = read / 2 / (FLOWS as u64 - 1);
    let mut flows = vec![rest; FLOWS];
    flows[0] = read - rest * (FLOWS as u64 - 1);
    flows
}

/// Samples 100 ms apart over `secs`: data arrives at `ARRIVED_MBIT`; the
/// receivers read it every `READ_EVERY` samples.
fn throughput(secs: f64) -> Vec<ThroughputSample> {
    let per_sample = (ARRIVED_MBIT * 1e6 / 8.0 * 0.1) as u64;
    let n = (secs / 0.1).round() as usize;
    (0..=n)
        .map(|i| {
            let arrived = per_sample * i as u64;
            let read = per_sample * (i - i % READ_EVERY) as u64;
            let r = Received { read, arrived };
            ThroughputSample {
                t: i as f64 * 0.1,
                up: r,
                down: r,
                up_flows: shares(read),
                down_flows: shares(read),
            }
        })
        .collect()
}

/// A probe's samples every `every` s over `secs`, with round trips
/// growing from `idle_ms` to `loaded_ms` over the first two seconds.
fn probe(secs: f64, every: f64, idle_ms: f64, loaded_ms: f64) -> Vec<Sample> {
    let n = (secs / every) as usize;
    (0..n)
        .map(|i| {
            let t = i as f64 * every;
            let ramp = (t / 2.0).min(1.0);
            // A little jitter so that percentiles differ.
            let jitter = (i % 7) as f64 * 0.05;
            Sample::rtt(t, (idle_ms + (loaded_ms - idle_ms) * ramp + jitter) * 1e3)
        })
        .collect()
}

/// Transit times of 98 000 frames around `p50_ms`.
fn transit(p50_ms: f64) -> TransitSummary {
    let ns = |ms: f64| (ms * 1e6) as u64;
    TransitSummary {
        count: 98_000,
        min_ns: ns(5.0),
        mean_ns: p50_ms * 1e6,
        p50_ns: ns(p50_ms),
        p90_ns: ns(p50_ms * 1.1),
        p99_ns: ns(p50_ms * 1.2),
        p999_ns: ns(p50_ms * 1.3),
        max_ns: ns(p50_ms * 1.5),
        buckets: Vec::new(),
    }
}

fn result(name: &str, loaded_ms: f64, opts: &TestOptions) -> ConfigResult {
    let cand = Candidate::demo()
        .unwrap()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap();
    let secs = opts.duration.as_secs_f64();
    let ping = probe(secs, 0.1, 10.1, loaded_ms);
    let raw = RrulRaw {
        t0: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600)),
        ping: Some(PingRaw {
            sent: ping.iter().map(|s| s.t).collect(),
            samples: ping,
        }),
        udp_rr: Some(UdpRrRaw {
            samples: probe(secs, loaded_ms / 1e3, 10.1, loaded_ms),
            lost: vec![3.25, 7.5],
        }),
        throughput: throughput(secs),
        ..RrulRaw::default()
    };
    let final_qdiscs = Dir::ALL.map(|d| {
        crate::tc::build_tree(cand.config.dev_spec(d), &cand.config.tc_lines(d))
            .unwrap()
            .dump(Instant::ZERO)
    });
    let paths = Dir::ALL.map(|d| PathTotals {
        qdisc: final_qdiscs[d.index()].kind.clone(),
        drops: 128,
        marks: 0,
        tap_drops: 2,
        frames: 98_765,
        xmit_batches: 97_000,
        bql_limit: None,
        transit: transit(loaded_ms / 2.0),
    });
    ConfigResult {
        name: cand.name.clone(),
        config: cand.config.clone(),
        config_file: Some(format!("configs/{name}.toml").into()),
        summary: raw.summary(opts.warmup.as_secs_f64()),
        paths,
        datapath: DatapathTotals {
            frames: 197_530,
            wakeups: 260_000,
            cpu_ns: 4_400_000_000,
        },
        final_qdiscs,
        raw,
    }
}

/// fq_codel (ping 10.6 ms under load) and pfifo_fast behind a deep ring
/// (166 ms), each way at 100 Mbit/s.
pub fn report() -> Report {
    let options = TestOptions {
        realtime: Some(50),
        ..TestOptions::default()
    };
    Report {
        results: vec![
            result("fq-codel", 10.6, &options),
            result("pfifo-fast-deep-ring", 166.0, &options),
        ],
        options,
        started: SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600),
        kernel_release: "6.12.0-test".into(),
    }
}
