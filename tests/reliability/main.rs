//! Reliability tests, one binary: frames fuzzed through the real Bridge
//! (`frames`), parser and ECN fuzzing (`parsers`), and memory bounds under a
//! flood (`bounds`). The control socket and datapath under faults and
//! hostile requests are the socketpair tier's `reliability` module; the
//! simulated soak (`tests/reliability_soak_sim.rs`) stays a binary of its
//! own because it installs a counting allocator.

mod bounds;
#[path = "../common/mod.rs"]
mod common;
mod frames;
mod parsers;
