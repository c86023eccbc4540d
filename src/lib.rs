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
//! Qdisc trees are edited only through tc commands applied by the datapath
//! (`tc::run` turning each into a typed request for `QdiscTree::apply`,
//! inside `Path::edit_qdisc`), so an edit is atomic with respect to packets.
//!
//! The core is its own crate, `bloatbox-core` (crates/core), re-exported
//! here under its module names: `time`, `units`, `dir`, `handle`,
//! `refusal`, `packet`, `qdisc`, `link`, `bridge`. It depends on nothing of
//! this crate, so the build keeps the layers apart.
//!
//! Modules of this crate: `clock` (CLOCK_MONOTONIC, the live clock), `tc`
//! (the tc language: commands, each kind's option syntax and printer, the
//! table of kinds, netem, framing, filters, `tc -s -d [-j] show`), `config`
//! (TOML schema and validation), `sim` (simulator), `port` (FramePort: TAP
//! with or without offload, AF_PACKET socket, or socketpair), `netns`
//! (namespaces and cleanup), `rootless` (links in a user namespace, for
//! unprivileged users), `privilege` (per-thread capabilities: what each
//! thread keeps after set-up), `datapath` (the live driver thread),
//! `release` (how the datapath spaces out frames that fell due while it was
//! late), `control` (the daemon's socket: protocol, `set` language, client),
//! `control_server` (its server), `capture` (pcapng capture of both
//! directions), `metrics` (OpenMetrics export of every counter), `live` (a
//! configuration's link brought up: namespaces, datapath, control socket),
//! `app` (the command-line subcommands), `output` (their `out!`/`outln!`),
//! `progress` (the run's bar and the log writer around it),
//! `fuzzing` (the fuzz targets' bodies and the reliability set-ups they
//! share with the tests), `harness` (the `Link` guard for test suites and `bloatbox run`), `load`
//! (TCP/UDP_RR/ICMP generators and the RRUL-like test), `experiment`
//! (`bloatbox test`/`demo`: runs over configs, comparison table, JSON, SVG
//! plots), `tui` (terminal UI).

pub mod app;
pub mod capture;
pub mod clock;
pub mod config;
pub mod control;
pub mod control_server;
pub mod datapath;
pub mod experiment;
pub mod fuzzing;
pub mod harness;
pub mod live;
pub mod load;
pub mod metrics;
pub mod netns;
pub mod output;
pub mod port;
pub mod privilege;
pub mod progress;
pub mod release;
pub mod rootless;
pub mod sim;
pub mod tc;
pub mod tui;

pub use bloatbox_core::{bridge, dir, handle, link, packet, qdisc, refusal, time, units};
