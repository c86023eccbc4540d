//! The library guard in a test suite's shoes: bring a 20 ms, 10 Mbit/s link
//! up, run a TCP server in the right namespace and a client in the left one,
//! ping across, slow the link down mid-run, read the counters, and let the
//! guard tear everything down.
//!
//! Run as root: `cargo run --example guard`. Without root it prints why and
//! exits 0.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

use bloatbox::dir::Dir;
use bloatbox::harness::{Link, Side};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if !nix::unistd::geteuid().is_root() {
        println!("skipped: this example creates network namespaces and TAPs, run it as root");
        return Ok(());
    }
    // Unique names (bb<pid>-<n>l / r): parallel tests never collide.
    let link = Link::builder()
        .set("link.delay=20ms")
        .set("link.rate=10mbit")
        .up()?;
    println!(
        "link {} up: {} <-> {}",
        link.name(),
        link.endpoint(Side::Left).namespace,
        link.endpoint(Side::Right).namespace
    );

    // A closure runs on a thread inside the namespace; the socket it makes
    // stays in that namespace after it returns.
    let server = link.run_in(Side::Right, || TcpListener::bind("0.0.0.0:7000"))??;
    let peer = link.endpoint(Side::Right).ipv4.addr;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut conn, _) = server.accept()?;
        let mut buf = [0u8; 5];
        conn.read_exact(&mut buf)?;
        conn.write_all(&buf)
    });
    let rtt = link.run_in(Side::Left, move || -> std::io::Result<_> {
        let mut c = TcpStream::connect((peer, 7000))?;
        let t = Instant::now();
        c.write_all(b"hello")?;
        let mut buf = [0u8; 5];
        c.read_exact(&mut buf)?;
        Ok(t.elapsed())
    })??;
    echo.join().expect("echo thread")?;
    println!("TCP echo across the link: {rtt:?} (two 20 ms delays)");

    // Commands get BLOATBOX_PEER_V4 and friends.
    let status = link
        .shell(Side::Left, "ping -c 2 -i 0.2 -q $BLOATBOX_PEER_V4")
        .status()?;
    println!("ping exited with {status}");

    // Slow the left→right direction to 1 Mbit/s mid-run.
    link.set_link(Dir::LeftToRight, |p| p.rate_bytes_ps = 125_000)?;
    let stats = link.fresh_stats()?;
    let l2r = stats.bridge.path(Dir::LeftToRight);
    println!(
        "left→right: rate {} B/s, frames in {} out {}, drops {:?}, wake-up lateness p99 {} ns",
        l2r.params.rate_bytes_ps,
        l2r.counters.frames_in,
        l2r.counters.frames_out,
        l2r.drops_by_reason,
        stats.lateness.p99_ns
    );
    // Each delivered frame's time through the link (queue + wire + delay).
    let t = &l2r.transit;
    println!(
        "left→right transit: {} frames, min {} us, p50 {} us, p99 {} us, max {} us",
        t.count,
        t.min_ns / 1000,
        t.p50_ns / 1000,
        t.p99_ns / 1000,
        t.max_ns / 1000
    );
    // Dropping `link` (here, or while a test unwinds from a panic) kills
    // what still runs in the namespaces and removes them and the TAPs.
    Ok(())
}
