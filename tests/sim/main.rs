//! The simulator tier, one binary: deterministic runs in simulated time.
//! Scenarios from `tests/scenarios/` run through the real link and qdisc
//! code on the simulator's clock, and so do the seed experiments' halves
//! that need no root (`seed_*`: seed 4 whole, seeds 3 and 6 without their
//! live halves, which are the root tier's). No root, no sockets; the
//! results do not depend on the machine or its load.

mod basic;
mod bufferbloat;
mod cake;
mod choke;
mod cli;
mod coalesce;
#[path = "../common/mod.rs"]
mod common;
mod determinism;
mod drr_ets;
mod dualpi2;
mod edges;
mod fq;
mod gso;
mod hfsc;
mod hhf;
mod l4s;
mod mq;
mod netem;
mod pie;
mod plug_skbprio_multiq;
mod props;
mod red;
mod ring;
mod seed_bulk_dequeue;
mod seed_mq_fq_codel;
mod seed_tbf_fq_codel;
mod sfb;
mod sfq_red;
mod tcp;

use bloatbox::sim::{self, Scenario, SimReport};
use std::io::Write;
use std::sync::{Arc, Mutex};

/// Loads `tests/scenarios/NAME`, panicking with the scenario error.
pub fn load(name: &str) -> Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(name);
    Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// A trace sink the test keeps a handle on.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);
impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The left-to-right lines of a trace whose event is one of `kinds`, each
/// with its time in µs after 1 ms (when the scenarios' packets start).
pub fn l2r_events(text: &str, kinds: &[&str]) -> Vec<(serde_json::Value, u64)> {
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["dir"] == "left_to_right" && kinds.iter().any(|k| v["ev"] == *k))
        .map(|v| {
            let us = (v["t"].as_u64().unwrap() - 1_000_000) / 1_000;
            (v, us)
        })
        .collect()
}

/// Runs a scenario with a written trace: the report and the trace's JSON
/// lines.
pub fn traced(sc: &Scenario) -> (SimReport, String) {
    let buf = Shared::default();
    let r = sim::run_with_trace(sc, Box::new(buf.clone())).unwrap();
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    (r, text)
}
