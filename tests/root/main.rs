//! The root tier, one binary: end to end on this machine. Real TAPs in
//! network namespaces, the live daemon (`bloatbox up`), `bloatbox run` and
//! its rootless mode, the Rust guard `harness::Link`, faults and
//! privileges under the daemon, the TUI in tmux, and the live halves of
//! the seed experiments. Every test here that needs root is
//! `#[ignore = "needs root"]`: a plain `cargo test` reports it as ignored,
//! `cargo test -- --include-ignored` runs it and it fails, saying so, when
//! not root. Each skips, printing the reason, where a tool it runs (`ip`,
//! `ping`, `iperf3`, `tmux`, `setpriv`, ...) is missing. Each test's names
//! are its own, so they could run side by side, but they share the
//! machine's cores and clock: a bulk transfer, a SIGSTOPped daemon or a
//! SCHED_FIFO hog of one test would disturb another's timing. So every
//! root test holds `serial()` while it runs, one at a time.

use std::sync::{Mutex, MutexGuard, PoisonError};

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod faults;
mod live_export;
mod live_gso;
mod live_netem;
mod live_netns;
mod live_tui;
mod reliability;
mod rootless;
mod run_cli;
mod run_guard;
mod seed_bufferbloat;
mod seed_bulk_dequeue;
mod seed_mq_fq_codel;
mod seed_rx_usecs;
mod seed_udp_rr_coalesce;

/// The root tests' lock: whichever test holds it is the only root test
/// running (one that panicked releases it).
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}
