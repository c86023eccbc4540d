//! The simulator's integration tests, one binary: scenarios from
//! `tests/scenarios/` run through the real link and qdisc code.

mod basic;
mod bufferbloat;
mod cli;
#[path = "../common/mod.rs"]
mod common;
mod determinism;
mod edges;
mod props;
mod tcp;

use bloatbox::sim::Scenario;

/// Loads `tests/scenarios/NAME`, panicking with the scenario error.
pub fn load(name: &str) -> Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(name);
    Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"))
}
