//! bloatbox's terminal UI: the live view of both directions' queues and
//! flows, its keys, the lessons of `demo --tui`, over a running link (the
//! datapath's snapshots and the control socket of the live crate). The
//! modules below it are re-exported under their names.

pub mod tui;

pub use bloatbox_live::{bridge, dir, handle, link, packet, qdisc, refusal, time, units};
pub use bloatbox_live::{
    capture, clock, config, control, control_server, datapath, fuzzing, load, metrics, netns, out,
    outln, output, port, privilege, release, rootless, tc,
};
