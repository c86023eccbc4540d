//! The reference userspace forwarder: two TAP devices joined by threads that
//! each read a frame from one TAP and write it to the other at once, one
//! thread per direction (per queue with `--queues N`), nothing else: no
//! link, no qdisc, no clock. What it moves is what any userspace forwarder
//! can move on this machine, frame by frame (no offload), the yardstick for
//! bloatbox's own datapath in `scripts/bench-live.sh`.
//!
//! ```text
//! cargo build --release --example bare_forward
//! sudo target/release/examples/bare_forward --left bbbfl0 --right bbbfr0 [--queues 2] [--spin-ns 500]
//! ```
//!
//! Both TAPs are created (down) in the namespace it starts in; once they
//! exist it prints `ready` on stdout. Move them into namespaces of their own,
//! address them and bring them up; it forwards until SIGTERM or SIGINT and
//! exits 0, and the TAPs go away with its descriptors. With `--queues N`
//! each TAP is opened N times with `IFF_MULTI_QUEUE`, and queue i of one TAP
//! is forwarded to queue i of the other. `--spin-ns N` busy-waits N ns per
//! frame between the read and the write: a forwarder with that much work of
//! its own per frame, to calibrate what such work costs in throughput
//! (docs/benchmarking.md).

use std::io;
use std::os::fd::BorrowedFd;

use anyhow::{bail, Context};
use bloatbox::port::{FramePort, TapPort, TapSpec};
use clap::Parser;
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{SigSet, Signal};

/// The TAPs' own kernel txqueuelen, bloatbox's default (`tap.txqueuelen`).
const TXQUEUELEN: u32 = 128;

/// Forward frames between two fresh TAP devices, one thread per direction.
#[derive(Parser, Debug)]
#[command(about)]
struct Args {
    /// Name of the left TAP.
    #[arg(long)]
    left: String,
    /// Name of the right TAP.
    #[arg(long)]
    right: String,
    /// MTU of both TAPs.
    #[arg(long, default_value_t = 1500)]
    mtu: u16,
    /// The TAPs' kernel txqueuelen (bloatbox's default).
    #[arg(long, default_value_t = TXQUEUELEN)]
    txqueuelen: u32,
    /// Queues per TAP (IFF_MULTI_QUEUE when more than 1), one thread per
    /// queue per direction.
    #[arg(long, default_value_t = 1)]
    queues: usize,
    /// Busy-wait this many nanoseconds after reading each frame, before
    /// writing it: a stand-in for a forwarder's own work per frame, to see
    /// what a given cost per frame takes from the throughput (0: none, the
    /// reference).
    #[arg(long, default_value_t = 0)]
    spin_ns: u64,
}

/// A locally administered MAC address, distinct per side.
fn mac(side: u8) -> [u8; 6] {
    [0x02, 0xbb, 0xbf, 0x00, 0x00, side]
}

/// Opens the TAP `name` (created here, down) with `queues` queues.
fn open_tap(args: &Args, name: &str, side: u8) -> anyhow::Result<Vec<Box<dyn FramePort>>> {
    let spec = TapSpec {
        name: name.to_string(),
        mtu: args.mtu,
        mac: mac(side),
        txqueuelen: args.txqueuelen,
        offload: false,
    };
    let queues = TapPort::create_queues(&spec, args.queues)
        .with_context(|| format!("creating TAP {name:?} with {} queues", args.queues))?;
    Ok(queues
        .into_iter()
        .map(|q| Box::new(q) as Box<dyn FramePort>)
        .collect())
}

/// Busy-waits `ns` nanoseconds (nothing for 0).
fn spin(ns: u64) {
    if ns == 0 {
        return;
    }
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_nanos(ns) {
        std::hint::spin_loop();
    }
}

/// Waits for frames on `rx` and writes each one to `tx` as soon as it is
/// read (after `spin_ns` of busy-waiting), until reading fails. Write
/// errors (the other TAP still down, say) lose the frame and nothing more.
#[allow(unsafe_code)]
fn forward(mut rx: Box<dyn FramePort>, mut tx: Box<dyn FramePort>, spin_ns: u64) -> io::Result<()> {
    let mut buf = vec![0u8; 65536];
    // SAFETY: `rx` owns the descriptor and outlives every use of `fd`.
    let fd = unsafe { BorrowedFd::borrow_raw(rx.raw_fd()) };
    loop {
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        match nix::poll::poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
        while let Some(n) = rx.recv(&mut buf)? {
            spin(spin_ns);
            let _ = tx.send(&buf[..n]);
        }
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.queues == 0 {
        bail!("--queues must be at least 1");
    }
    // Block the signals that end the program before any thread starts, so
    // that every thread inherits the mask and only `wait` below takes them.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGTERM);
    signals.add(Signal::SIGINT);
    signals.thread_block()?;

    let left = open_tap(&args, &args.left, 1)?;
    let right = open_tap(&args, &args.right, 2)?;
    let spin_ns = args.spin_ns;
    let mut threads = Vec::new();
    for (i, (l, r)) in left.into_iter().zip(right).enumerate() {
        let l = l.split()?;
        let r = r.split()?;
        for (dir, rx, tx) in [("left->right", l.rx, r.tx), ("right->left", r.rx, l.tx)] {
            let name = format!("{dir} q{i}");
            threads.push(
                std::thread::Builder::new()
                    .name(name.clone())
                    .spawn(move || {
                        if let Err(e) = forward(rx, tx, spin_ns) {
                            eprintln!("bare_forward: {name}: reading failed: {e}");
                            std::process::exit(1);
                        }
                    })?,
            );
        }
    }
    {
        use std::io::Write;
        let mut out = io::stdout().lock();
        writeln!(out, "ready")?;
        out.flush()?;
    }
    let signal = signals.wait()?;
    eprintln!("bare_forward: {signal}, exiting");
    // The forwarding threads never return; exiting closes every descriptor,
    // which removes both TAPs.
    std::process::exit(0);
}
