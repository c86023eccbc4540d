//! Every counter of a `LiveSnapshot` as OpenMetrics text (which Prometheus
//! scrapes as is), and the two ways to export it while `bloatbox up` runs:
//! - `MetricsServer`: `GET /metrics` over HTTP on a loopback address (a
//!   non-loopback one only when explicitly allowed);
//! - `MetricsFile`: a file rewritten atomically (temporary file + rename)
//!   every period.
//!
//! Both read the datapath's snapshot slot, never the datapath itself, so a
//! slow scraper cannot hold it up. `bloatbox metrics` prints the same text
//! through the control socket.
//!
//! Names carry the `bloatbox_` prefix; counters end in `_total`. Labels:
//! `direction` (`left_to_right`, `right_to_left`), `reason` (the
//! `DropReason` names), `handle`/`parent`/`kind` for qdiscs, `classid`/
//! `parent`/`kind` for classes, `port` (`left`, `right`), `quantile`.
//!
//! Submodules: `render` (which counters, named how), `families` (their
//! registration and encoding), `parse` (a strict checker of the text),
//! `http` (the server, hyper on tokio) and `file` (the file writer).

mod families;
mod file;
#[cfg(test)]
mod fixture;
mod http;
mod parse;
mod render;

pub use file::{write_atomically, MetricsFile};
pub use http::{check_listen_addr, MetricsServer, CONTENT_TYPE};
pub use parse::{parse_samples, LineProblem, MetricsTextError};
pub use render::render;
