//! The deterministic discrete-event simulator behind `bloatbox sim
//! SCENARIO.toml`. It drives the same `Bridge` as the live daemon (ingress
//! checks, numbering, one `link::Path` per direction), lane by lane, under
//! a simulated clock that jumps from event to event, with every random
//! choice drawn from the scenario's seed: the same scenario gives the same
//! trace, bit for bit.
//!
//! Data of a flow goes through one path, its ACKs or probe replies through
//! the other, so ACK clocking and bufferbloat emerge instead of being
//! modelled.
//!
//! The qdiscs are built by the tc front end (`QdiscTree`) from the same
//! `[link]` section the daemon's configuration uses; optional netem-style
//! impairments act on each path's wire. The outputs are a per-packet trace
//! (JSON lines: enqueue, dequeue, drop with reason, ECN mark, delivery), a
//! summary (`SimReport`: throughput, latency percentiles, drops, marks) and
//! the final `tc -s -d qdisc|class show` of both devices.
//!
//! Submodules: `scenario` (the TOML file), `frame` (real header bytes),
//! `tcp` (Reno/CUBIC sender, SACK receiver), `sources` (flows and their
//! sources), `qdiscs` (qdisc tree from tc lines, tc show), `observe` (the
//! path observer that sees frames leave the qdisc), `engine` (the event
//! loop), `trace` (JSON-lines events and their hash), `report` (summary and
//! table).

pub mod engine;
pub mod frame;
pub mod observe;
pub mod qdiscs;
pub mod report;
pub mod scenario;
pub mod sources;
pub mod tcp;
pub mod trace;

pub use report::{SimReport, SnapshotDir, SnapshotReport};
pub use scenario::Scenario;

use std::io::Write;

/// Why a simulation could not run.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The scenario file is invalid (the message names field and position).
    #[error("scenario: {0}")]
    Scenario(String),
    /// A tc line of a direction could not be applied (the message quotes
    /// the line and tc's error).
    #[error("{dir}: {msg}")]
    Qdisc {
        /// The direction (`left_to_right` or `right_to_left`).
        dir: String,
        /// The line and tc's error.
        msg: String,
    },
    /// The event loop made no progress at one instant.
    #[error(
        "simulation stalled at {at_ns} ns: events keep coming at that instant and time never \
         advances (TCP over a link with no rate limit and no delay does this: its data and \
         acks take no time); fix: give the link a rate or a delay"
    )]
    Stalled {
        /// The simulated time it stalled at, ns.
        at_ns: u64,
    },
    /// The trace could not be written.
    #[error("writing the trace: {0}")]
    Io(#[from] std::io::Error),
}

/// Runs a scenario, hashing (not keeping) the event trace.
pub fn run(scenario: &Scenario) -> Result<SimReport, SimError> {
    run_traced(scenario, trace::Trace::hash_only())
}

/// Runs a scenario, writing every trace event as a JSON line to `sink`.
pub fn run_with_trace(scenario: &Scenario, sink: Box<dyn Write>) -> Result<SimReport, SimError> {
    run_traced(scenario, trace::Trace::to_writer(sink))
}

fn run_traced(scenario: &Scenario, trace: trace::Trace) -> Result<SimReport, SimError> {
    let mut sim = engine::Sim::new(scenario, trace)?;
    sim.run()?;
    Ok(sim.report(scenario))
}

/// `bloatbox sim SCENARIO [--out DIR [--trace]]`: runs the scenario and
/// prints the table and both directions' `tc -s -d qdisc|class show`, after
/// a warning for each source that sends nothing
/// (`Scenario::silent_sources`). With `out_dir`, also writes `summary.json`
/// (the `SimReport`, qdisc dumps included) and `tc.txt` (the tc
/// statistics) there, and with `trace` `trace.jsonl` too: every packet
/// event, about 93 bytes each (9 MB per simulated second of eight CUBIC
/// flows at 100 Mbit/s), so only when asked for.
pub fn run_cli(
    path: &std::path::Path,
    out_dir: Option<&std::path::Path>,
    trace: bool,
) -> anyhow::Result<()> {
    use anyhow::Context;
    let scenario = Scenario::from_file(path)?;
    for silent in scenario.silent_sources() {
        tracing::warn!("{}: {silent}", path.display());
    }
    let report = match out_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create output directory {}", dir.display()))?;
            let report = if trace {
                let trace_path = dir.join("trace.jsonl");
                let file = std::fs::File::create(&trace_path)
                    .with_context(|| format!("cannot create {}", trace_path.display()))?;
                run_with_trace(&scenario, Box::new(std::io::BufWriter::new(file)))?
            } else {
                run(&scenario)?
            };
            write_json(&dir.join("summary.json"), &report)?;
            let tc_path = dir.join("tc.txt");
            std::fs::write(&tc_path, report.tc_text())
                .with_context(|| format!("cannot write {}", tc_path.display()))?;
            report
        }
        None => run(&scenario)?,
    };
    crate::out!("{}\n{}", report.table(), report.tc_text())?;
    for snapshot in &report.snapshots {
        crate::out!("\n{}", snapshot.tc_text())?;
    }
    Ok(())
}

fn write_json(path: &std::path::Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    use anyhow::Context;
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
