//! One idle frame's work on cold caches, for counting what it touches:
//! the embedded default link (or the config given), one 98-byte ICMP echo
//! request at a time through the left→right lane as the live datapath
//! takes it from a port with offload headers (`Lane::ingress_offloaded`,
//! then `Lane::poll` at once and at each `Lane::deliver_at`, where the
//! datapath would sleep to), with a 64 MB buffer written between frames,
//! so that each frame's data comes from memory, as after the 10 ms a ping
//! interval idles. `scripts/cold-frame.sh` runs it under cachegrind twice
//! (the frames' share is the difference) and gives the lines of data and
//! code and the instructions per frame; alone it prints the median and
//! p90 wall time of a frame (`one_frame`).
//!
//! usage: cold_frame [FRAMES] [CONFIG]

use bloatbox::bridge::Lane;
use bloatbox::config::Config;
use bloatbox::dir::Dir;
use bloatbox::link::Path;
use bloatbox::packet::gso::VnetHdr;
use bloatbox::packet::pool::{Buffers, PacketPool, FRAME_OVERHEAD, GSO_FRAME_BUF};
use bloatbox::packet::Packet;
use bloatbox::time::Instant;

/// Bytes written between frames to push the lane out of every cache level.
const EVICT: usize = 64 << 20;

/// An Ethernet + IPv4 + ICMP echo request of 98 bytes (ping's default).
fn echo_request() -> Vec<u8> {
    let mut f = vec![0u8; 98];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    f[14] = 0x45;
    f[16..18].copy_from_slice(&84u16.to_be_bytes());
    f[22] = 64;
    f[23] = 1;
    f[26..30].copy_from_slice(&[10, 84, 0, 1]);
    f[30..34].copy_from_slice(&[10, 84, 0, 2]);
    f[34] = 8;
    f
}

/// Takes `frame` in at `now` as the datapath reads it (copied out of the
/// receive buffer into a frame buffer) and hands it out at its delivery
/// time; returns that time.
#[inline(never)]
fn one_frame(
    lane: &mut Lane,
    rx: &mut Vec<u8>,
    now: Instant,
    bufs: &mut Buffers,
    out: &mut Vec<Packet>,
    freed: &mut Vec<Packet>,
) -> Instant {
    lane.ingress_offloaded(rx, VnetHdr::default(), now, bufs);
    lane.poll(now, out, freed);
    let mut at = now;
    while out.is_empty() {
        // The datapath sleeps until the lane can next hand a frame out.
        let Some(next) = lane.deliver_at() else { break };
        at = next;
        lane.poll(at, out, freed);
    }
    for p in out.drain(..).chain(freed.drain(..)) {
        bufs.put(p.data);
    }
    at
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let frames: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(200);
    let cfg = match args.get(1) {
        Some(file) => Config::load(file).unwrap_or_else(|e| panic!("{file}: {e}")),
        None => Config::embedded_default(),
    };
    let dir = Dir::LeftToRight;
    let tree =
        bloatbox::tc::build_tree_of(cfg.dev_specs()[dir.index()].clone(), &cfg.tc_steps(dir))
            .expect("the configuration's qdisc");
    let mut path = Path::new(cfg.link_params(dir), tree);
    path.set_shape(cfg.link_shape(dir), Instant::ZERO)
        .expect("the configuration's link shape");
    let mut lane = Lane::new(path);
    let mut bufs = Buffers {
        // Sized as the daemon sizes them (`live::setup`).
        frames: PacketPool::new(cfg.tap.mtu as usize + FRAME_OVERHEAD, 4096),
        super_frames: PacketPool::new(GSO_FRAME_BUF, 64),
    };
    let mut rx = bufs.super_frames.get().expect("a receive buffer");
    let frame = echo_request();
    let (mut out, mut freed) = (Vec::with_capacity(64), Vec::with_capacity(64));
    let warm = std::env::var_os("WARM").is_some();
    let mut evict = vec![0u8; if warm { 64 } else { EVICT }];
    let mut now = Instant::from_millis(1);
    let mut took = Vec::with_capacity(frames);
    for i in 0..frames {
        for line in evict.chunks_mut(64).take(if warm { 0 } else { EVICT }) {
            line[0] = line[0].wrapping_add(i as u8);
        }
        rx.clear();
        rx.extend_from_slice(&frame);
        let t0 = std::time::Instant::now();
        let at = one_frame(&mut lane, &mut rx, now, &mut bufs, &mut out, &mut freed);
        took.push(t0.elapsed().as_nanos() as u64);
        now = at + 10_000_000;
    }
    took.sort_unstable();
    let c = lane.path().counters();
    println!(
        "{} frames in, {} out; a cold frame took {} ns at the median, {} at p90",
        c.frames_in,
        c.frames_out,
        took[took.len() / 2],
        took[took.len() * 9 / 10]
    );
}
