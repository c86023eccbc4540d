//! bloatbox's simulator: the core's bridge driven by a discrete-event
//! engine with a simulated clock, seeded traffic sources and TCP senders,
//! scenarios read from TOML and traces of every frame. It sits on the core
//! and the languages (its scenarios are configurations and tc lines) and
//! on nothing live. The modules below it are re-exported under their names.

pub mod sim;

pub use bloatbox_lang::{bridge, dir, handle, link, packet, qdisc, refusal, time, units};
pub use bloatbox_lang::{config, out, outln, output, tc};
