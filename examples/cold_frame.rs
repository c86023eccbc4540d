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
//! p90 wall time of a frame (`one_frame`). `EVICT` chooses what the
//! sweep between frames empties: `all` (the default: 64 MB on 4 KB pages,
//! so the caches and the TLB), `caches` (the same bytes on 2 MB pages,
//! which leave the TLB's 4 KB entries mostly in place), `tlb` (one line
//! of each 4 KB page of the 64 MB: the TLB, with 1 MB of lines, which the
//! last-level cache keeps the lane beside) or `none`. With `PRINT_ENTRY`
//! set it first prints `one_frame`'s address on stderr, where
//! `scripts/cold-frame.sh` cuts a trace into frames.
//!
//! usage: [EVICT=all|caches|tlb|none] cold_frame [FRAMES] [CONFIG]

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

/// A huge page (x86-64's 2 MB).
const HUGE: usize = 2 << 20;

/// What the sweep between two frames empties (`EVICT`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Evict {
    All,
    Caches,
    Tlb,
    Nothing,
}

impl Evict {
    fn from_env() -> Evict {
        match std::env::var("EVICT").as_deref() {
            Ok("caches") => Evict::Caches,
            Ok("tlb") => Evict::Tlb,
            Ok("none") => Evict::Nothing,
            Ok("all") | Err(_) => Evict::All,
            Ok(other) => {
                eprintln!("cold_frame: EVICT={other}: expected all, caches, tlb or none");
                std::process::exit(2);
            }
        }
    }
}

/// The sweep's buffer: `EVICT` bytes aligned to a huge page (`range`),
/// backed by huge pages for `Evict::Caches` and by 4 KB pages otherwise,
/// whatever the system's transparent huge page default; none for
/// `Evict::Nothing`.
struct Sweep {
    buf: Vec<u8>,
    range: std::ops::Range<usize>,
    stride: usize,
}

impl Sweep {
    fn new(evict: Evict) -> Sweep {
        let stride = if evict == Evict::Tlb { 4096 } else { 64 };
        if evict == Evict::Nothing {
            return Sweep {
                buf: Vec::new(),
                range: 0..0,
                stride,
            };
        }
        let mut buf = vec![0u8; EVICT + HUGE];
        let start = buf.as_ptr().align_offset(HUGE);
        let range = start..start + EVICT;
        if evict == Evict::Caches {
            if let Err(e) = advise(&mut buf[range.clone()], libc::MADV_HUGEPAGE) {
                eprintln!("cold_frame: EVICT=caches needs transparent huge pages: {e}");
                std::process::exit(2);
            }
        } else {
            // Without transparent huge pages (EINVAL) the pages are 4 KB anyway.
            let _ = advise(&mut buf[range.clone()], libc::MADV_NOHUGEPAGE);
        }
        Sweep { buf, range, stride }
    }

    /// Writes one byte in each stride of the range.
    fn run(&mut self, round: u8) {
        for line in self.buf[self.range.clone()].chunks_mut(self.stride) {
            line[0] = line[0].wrapping_add(round);
        }
    }
}

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

/// `madvise(2)` on `buf`, which starts on a page boundary.
#[allow(unsafe_code)]
fn advise(buf: &mut [u8], advice: libc::c_int) -> std::io::Result<()> {
    // SAFETY: the range is `buf`'s own memory, borrowed for the call;
    // the advice changes no byte of it.
    let r = unsafe { libc::madvise(buf.as_mut_ptr().cast(), buf.len(), advice) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
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
    let mut sweep = Sweep::new(Evict::from_env());
    if std::env::var_os("PRINT_ENTRY").is_some() {
        eprintln!("one_frame at {:#x}", one_frame as *const () as usize);
    }
    let mut now = Instant::from_millis(1);
    let mut took = Vec::with_capacity(frames);
    for i in 0..frames {
        sweep.run(i as u8);
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
