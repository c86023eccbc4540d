//! The daemon's control socket: a Unix stream socket (mode 0600, only the
//! daemon's user or root may connect) speaking line-delimited JSON.
//! - `proto`: the requests, `parse_request` (pure) and the reply lines;
//! - `set`: the `set` arguments (`left.rate=10mbit`, ethtool lines);
//! - `field`: `LinkField`, one link setting as `set` and the TUI name it;
//! - `server`: `ControlServer`, serving snapshots from the datapath's slot
//!   and passing tc lines, link changes and shutdown to its command queue;
//! - `client`: `Client` for the `tc`, `set`, `stats` and `top` subcommands
//!   (`crate::app`) and the TUI (`crate::tui::RemoteControl`).

pub mod client;
pub mod field;
pub mod proto;
pub mod server;
pub mod set;

pub use client::{request_stats, Client};
pub use proto::{parse_request, ProtoError, Request, MAX_LINE};
pub use server::ControlServer;
