//! The root tier, one binary: end to end on this machine. Real TAPs in
//! network namespaces, the live daemon (`bloatbox up`), `bloatbox run` and
//! its rootless mode, the Rust guard `harness::Link`, the wire between
//! existing interfaces (`up --wire`) and in a real Mininet, faults and
//! privileges under the daemon, the TUI in tmux, and the live halves of
//! the seed experiments. Every test here that needs root is
//! `#[ignore = "needs root"]`: a plain `cargo test` reports it as ignored,
//! `cargo test -- --include-ignored` runs it and it fails, saying so, when
//! not root. Each fails, naming the package to install, where a tool it
//! runs (`ip`, `ping`, `iperf3`, `tmux`, `setpriv`, ...) is missing: none
//! passes without checking (`.ci/run` installs them). Each test's names
//! are its own, so they could run side by side, but they share the
//! machine's cores and clock: a bulk transfer, a SIGSTOPped daemon or a
//! SCHED_FIFO hog of one test would disturb another's timing. So, as when
//! each file was a binary of its own, root tests of one file may run side
//! by side but never beside another file's (every root test holds
//! `turn()`), and the files whose tests must not overlap at all hold
//! `serial()`.

use std::panic::Location;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod faults;
mod flent_export;
mod hangup;
mod live_estimator;
mod live_export;
mod live_gso;
mod live_netem;
mod live_netns;
mod live_tui;
mod mininet;
mod reliability;
mod rootless;
mod run_cli;
mod run_guard;
mod seed_bufferbloat;
mod seed_bulk_dequeue;
mod seed_mq_fq_codel;
mod seed_rx_usecs;
mod seed_udp_rr_coalesce;
mod wire;

/// Which file's root tests run now, and how many of them.
struct Gate {
    file: Option<&'static str>,
    running: usize,
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    file: None,
    running: 0,
});
static GATE_OPENED: Condvar = Condvar::new();

/// A root test's turn: while it is held, only root tests of the same file
/// run (it is given back when dropped, also by a test that panicked).
pub struct Turn;

/// Waits until no root test of another file runs, then holds the turn of
/// the caller's file.
#[track_caller]
pub fn turn() -> Turn {
    let file = Location::caller().file();
    let mut gate = GATE.lock().unwrap_or_else(PoisonError::into_inner);
    while gate.file.is_some_and(|f| f != file) {
        gate = GATE_OPENED
            .wait(gate)
            .unwrap_or_else(PoisonError::into_inner);
    }
    gate.file = Some(file);
    gate.running += 1;
    Turn
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut gate = GATE.lock().unwrap_or_else(PoisonError::into_inner);
        gate.running -= 1;
        if gate.running == 0 {
            gate.file = None;
            GATE_OPENED.notify_all();
        }
    }
}

/// The caller's file's turn, and no other root test beside it: for the
/// files whose tests must not overlap each other either.
#[track_caller]
pub fn serial() -> (Turn, MutexGuard<'static, ()>) {
    static SERIAL: Mutex<()> = Mutex::new(());
    let turn = turn();
    (turn, SERIAL.lock().unwrap_or_else(PoisonError::into_inner))
}

/// A missing tool fails a test with the package to install, never a pass
/// that checked nothing (`require!`).
#[test]
#[ignore = "needs root"]
#[should_panic(expected = "apt-get install bb-no-such-tool")]
fn a_missing_tool_fails_the_test_naming_its_package() {
    require!("bb-no-such-tool");
}
