//! The tc command front end: what a user types after `tc` (with or without the
//! leading `tc`, global flags `-s -d -j -p`) becomes a `TcCommand`
//! (`command`), the kind named in it becomes a qdisc through the `registry`,
//! `crate::qdisc::tree::QdiscTree::apply` carries the command out with the
//! kernel's rules, and `show` prints `tc [-s] [-d] [-j] qdisc|class show`
//! exactly as iproute2 does (LINUX-TC.md 0.3–0.5, 1.5, 13).
//!
//! The emulated link has two devices: `left` is the egress of the left→right
//! direction, `right` its mirror. Errors read like tc's and name the bad token.

pub mod command;
pub mod registry;
pub mod show;

pub use command::{Dev, Flags, Object, TcCommand, Verb};
pub use registry::new_qdisc;

#[cfg(test)]
mod session_tests;
