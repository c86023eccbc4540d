//! bloatbox: a bufferbloat emulator appliance.
//!
//! A daemon bridges two TAP interfaces, each in its own network namespace, and
//! makes the path between them behave like a real bottleneck link: line rate,
//! propagation delay, NIC interrupt coalescing, a driver TX ring with or
//! without BQL, and Linux's queueing disciplines run in userspace.
//!
//! ```text
//! TAP(left ns) -read-> classify -> qdisc tree -> TX ring (+BQL) -> serializer (rate)
//!    -> propagation delay -> RX coalescing (usecs/frames) -write-> TAP(right ns)
//! ```
//!
//! The core (`packet`, `qdisc`, `link`, `bridge`) is pure: it takes `now` as an
//! argument, never reads a clock and does no I/O. Two drivers run it: the live
//! `datapath` thread (TAP fds, CLOCK_MONOTONIC, an absolute timerfd deadline)
//! and the `sim` discrete-event simulator (simulated clock, seeded sources).
//!
//! | thread   | owns                                         | runtime |
//! |----------|----------------------------------------------|---------|
//! | datapath | the Bridge, both ports, buffer pool, timerfd | plain thread, timer slack 1 ns, optional SCHED_FIFO, no capabilities |
//! | control  | the Unix socket                              | blocking threads, no capabilities |
//! | capture  | the pcapng files (optional)                  | blocking thread fed by a bounded channel; a full channel drops and counts; no capabilities |
//! | metrics  | the HTTP listener or metrics file (optional) | blocking thread reading the snapshot slot, no capabilities |
//! | main     | config, set-up, signals (signalfd), then the TUI or a headless wait, tear-down | synchronous; after set-up only what `ip netns del` needs |
//!
//! The datapath shares no lock with anyone in its hot path: it drains a
//! bounded command queue (eventfd) at the top of each loop and publishes a
//! snapshot at a fixed rate into a one-slot mailbox it only `try_lock`s.
//! Qdisc trees are edited only by typed tc requests applied by the datapath
//! (`QdiscTree::apply` inside `Path::edit_qdisc`; the commander's `tc::talk`
//! reads the tc line into the request and prints the answer on the caller's
//! thread), so an edit is atomic with respect to packets.
//!
//! The workspace is one crate per layer, lowest first, each depending only
//! on those below it, so cargo refuses an upward import
//! (docs/architecture.md): `bloatbox-core` (crates/core: `time`, `units`,
//! `dir`, `handle`, `refusal`, `packet`, `qdisc`, `link`, `bridge`), `bloatbox-lang`
//! (crates/lang: `tc`, `config`, `output`), `bloatbox-sim` (crates/sim:
//! `sim`), `bloatbox-live` (crates/live: `clock`, `port`, `netns`,
//! `rootless`, `privilege`, `process`, `datapath`, `release`, `control`,
//! `control_server`, `capture`, `metrics`, `load`, `fuzzing`, `wire`),
//! `bloatbox-tui` (crates/tui: `tui`), and this crate, the application:
//! `app` (the command-line subcommands), `live` (a configuration's link
//! brought up: namespaces, datapath, control socket), `experiment`
//! (`bloatbox test`/`demo`: runs over configs, comparison table, JSON, SVG
//! plots), `flags` (the command line's value parsers of duration flags),
//! `harness` (the `Link` guard for test suites and `bloatbox
//! run`), `progress` (the run's bar and the log writer around it). Every
//! module of the crates below is re-exported here under its name.

pub mod app;
pub mod experiment;
pub mod flags;
pub mod harness;
pub mod live;
pub mod progress;

pub use bloatbox_core::{bridge, dir, handle, link, packet, qdisc, refusal, time, units};
pub use bloatbox_lang::{config, errln, out, outln, output, tc};
pub use bloatbox_live::{
    capture, clock, control, control_server, datapath, fuzzing, load, metrics, netns, port,
    privilege, process, release, rootless, wire,
};
pub use bloatbox_sim::sim;
pub use bloatbox_tui::tui;
