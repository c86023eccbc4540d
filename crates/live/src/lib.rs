//! bloatbox's live driver and OS glue: `clock` (CLOCK_MONOTONIC), `port`
//! (TAP with or without offload, socketpair), `netns` (namespaces and
//! cleanup), `rootless` (links in a user namespace), `privilege`
//! (per-thread capabilities), `process` (what the application asks of
//! the OS for the processes it starts), `datapath` (the threads, one per direction),
//! `release` (pacing frames that fell due while the datapath was late),
//! `control` (the daemon's socket protocol, `set` language and client),
//! `control_server` (its server), `wire` (the link between two existing
//! interfaces, `up --wire`), `capture` (pcapng), `metrics`
//! (OpenMetrics), `load` (TCP/UDP_RR/ICMP generators and the RRUL-like
//! test) and `fuzzing` (the fuzz targets' bodies and the reliability
//! set-ups). The only crate that depends on nix, libc or tokio. The
//! modules below it are re-exported under their names.

pub mod capture;
pub mod clock;
pub mod control;
pub mod control_server;
pub mod datapath;
pub mod fuzzing;
pub mod load;
pub mod metrics;
pub mod netns;
pub mod port;
pub mod privilege;
pub mod process;
pub mod release;
pub mod rootless;
pub mod wire;

pub use bloatbox_lang::{bridge, dir, handle, link, packet, qdisc, refusal, time, units};
pub use bloatbox_lang::{config, out, outln, output, tc};
