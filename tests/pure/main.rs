//! The pure tier, one binary: what needs nothing but the build. The
//! library's code called in-process at explicit times (no threads of its
//! own, no sockets, no clock), the `bloatbox` binary run as a command
//! without a daemon, and the repository's files read from the package
//! root: configuration, tc and control parsing, every discipline's
//! properties, reliability fuzzing, the documents against the code, the
//! fuzz corpus, user-visible text against the insta snapshots in
//! `tests/pure/snapshots/` (named `pure__MODULE__NAME.snap`). No root;
//! `capture_tshark` needs tshark and `mininet_link`'s Python test python3:
//! ignored by a plain `cargo test`, run by `--include-ignored`, where a
//! missing tool fails it.

#[path = "../common/mod.rs"]
mod common;

/// The `bloatbox` binary's command line (src/main.rs), compiled in here
/// so that `docs` parses the documents' commands with its clap definitions.
#[allow(dead_code)]
#[path = "../../src/main.rs"]
mod bloatbox_main;
mod capture_tshark;
mod cli;
mod config;
mod control_proto;
mod core_crate;
mod custom_kind;
mod docs;
mod fuzz_corpus;
mod mininet_link;
mod qdisc_props;
mod reliability;
mod user_text;
