//! bloatbox's languages, the layer above the pure core: `tc` (commands,
//! each kind's option syntax and printers registered by the kind's name,
//! netem, framing, filters, `tc -s -d [-j] show`: words in, typed requests
//! out; typed dumps in, iproute2's text and JSON out), `config` (the TOML
//! configuration and its ethtool lines: schema, validation, errors with
//! file, line and column) and `output` (stdout helpers that end quietly
//! when the reader goes away). It depends on the core only, and on no OS
//! bindings: cargo refuses it an import from the crates above. The core's
//! modules are re-exported under their names.

pub mod config;
pub mod output;
pub mod tc;

pub use bloatbox_core::{bridge, dir, handle, link, packet, qdisc, refusal, time, units};
