//! The daemon's control socket: a Unix stream socket (mode 0600, only the
//! daemon's user or root may connect) speaking line-delimited JSON. This
//! module is what both ends share and what the datapath executes, so it
//! sits below the datapath; the server, which reaches the datapath, is
//! `crate::control_server`.
//! - `proto`: the requests, `parse_request` (pure), the reply lines and
//!   `TcReply`;
//! - `set`: the `set` arguments (`left.rate=10mbit`, ethtool lines), parsed
//!   into the `SetPlan` the datapath applies;
//! - `field`: `LinkField`, one link setting as `set` and the TUI name it;
//! - `client`: `Client` for the `tc`, `set`, `stats` and `top` subcommands
//!   (`crate::app`) and the TUI (`crate::tui::RemoteControl`).

pub mod client;
pub mod field;
pub mod proto;
pub mod set;

pub use client::{
    decode, parse_reply, request_stats, restore_drops_by_reason, Client, DaemonRefusal, DecodeError,
};
pub use proto::{parse_request, ProtoError, Request, TcReply, MAX_LINE};
