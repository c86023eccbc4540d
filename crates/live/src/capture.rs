//! Packet capture of the emulated link, one pcapng file per direction.
//!
//! Each file has three interfaces, so that Wireshark shows (and filters on
//! `frame.interface_id`) where a frame was seen:
//! - 0 `left→right in`: every frame entering the link from the sender's TAP;
//! - 1 `left→right out`: every frame the link hands to the receiver's TAP
//!   (duplicates included);
//! - 2 `left→right dropped`: every frame the link freed, at the time it
//!   was freed, with an `epb_comment` "dropped: REASON" (`DropReason::name`).
//!
//! So `in + duplicated = out + dropped + held` holds for the packets of a
//! file as for the counters. Timestamps have nanosecond resolution
//! (`if_tsresol` 9): CLOCK_MONOTONIC times shifted to the wall clock by the
//! offset measured when the capture started, so differences between
//! records are exact link times.
//!
//! The datapath side (`Tap`, one `DirTap` per direction, each the
//! `bridge::FrameTap` of its lane) never blocks and, after warm-up, never
//! allocates: it copies a frame into a recycled buffer and offers it to a
//! bounded channel shared by both directions. When the channel is full the record is
//! dropped and counted (`CaptureCounters::dropped`, in the stats). A writer
//! thread (`CaptureWriter`) drains the channel into the files and returns
//! the buffers; it finishes the files when the tap is gone (the datapath
//! stopped) and writes each interface's count of lost records in an
//! Interface Statistics Block (`isb_ifdrop`).

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::blocks::interface_statistics::{
    InterfaceStatisticsBlock, InterfaceStatisticsOption,
};
use pcap_file::pcapng::blocks::section_header::{SectionHeaderBlock, SectionHeaderOption};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::{DataLink, Endianness};

use crate::bridge::FrameTap;
pub use crate::bridge::{CaptureCounters, Point};
use crate::dir::Dir;
use crate::time::Instant;

/// Records in flight between the datapath and the writer, per capture.
pub const CHANNEL_DEPTH: usize = 8192;

/// Interface ids within each file.
pub const IF_IN: u32 = 0;
/// Interface id of the frames leaving the lane (written to the receiving TAP).
pub const IF_OUT: u32 = 1;
/// Interface id of the frames the lane dropped.
pub const IF_DROPPED: u32 = 2;

/// epb_flags direction bits: inbound, outbound.
const EPB_INBOUND: u32 = 0b01;
const EPB_OUTBOUND: u32 = 0b10;

/// Which files to write, indexed by `Dir::index`; None = that direction is
/// not captured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaptureSpec {
    /// The pcapng file of each direction, by `Dir::index()`; None: not
    /// captured.
    pub files: [Option<PathBuf>; 2],
}

impl CaptureSpec {
    /// Both directions in `dir`: `left_to_right.pcapng` and
    /// `right_to_left.pcapng` (the directory is created).
    pub fn in_dir(dir: &Path) -> CaptureSpec {
        CaptureSpec {
            files: Dir::ALL.map(|d| Some(dir.join(format!("{}.pcapng", d.name())))),
        }
    }
}

/// The capture flags of `bloatbox up` and `bloatbox run`.
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct CaptureArgs {
    /// Capture both directions into DIR/left_to_right.pcapng and
    /// DIR/right_to_left.pcapng (frames in, out and dropped; see docs/control.md).
    #[arg(long, value_name = "DIR")]
    pub pcap: Option<PathBuf>,
    /// Capture the left→right direction into this pcapng file.
    #[arg(long, value_name = "FILE")]
    pub pcap_left: Option<PathBuf>,
    /// Capture the right→left direction into this pcapng file.
    #[arg(long, value_name = "FILE")]
    pub pcap_right: Option<PathBuf>,
}

impl CaptureArgs {
    /// The files to write (a file flag beats the directory's file); None
    /// when nothing is captured.
    pub fn spec(&self) -> Option<CaptureSpec> {
        let mut spec = self
            .pcap
            .as_deref()
            .map(CaptureSpec::in_dir)
            .unwrap_or_default();
        for (d, file) in [
            (Dir::LeftToRight, &self.pcap_left),
            (Dir::RightToLeft, &self.pcap_right),
        ] {
            if let Some(f) = file {
                spec.files[d.index()] = Some(f.clone());
            }
        }
        spec.files.iter().any(Option::is_some).then_some(spec)
    }
}

struct Record {
    dir: Dir,
    point: Point,
    at: Instant,
    orig_len: u32,
    data: Vec<u8>,
}

#[derive(Default)]
struct Counters {
    captured: [AtomicU64; 2],
    dropped: [AtomicU64; 2],
    write_errors: [AtomicU64; 2],
    /// Lost records per direction and interface (for the ISBs).
    lost_per_if: [[AtomicU64; 3]; 2],
}

impl Counters {
    fn read(&self) -> [CaptureCounters; 2] {
        Dir::ALL.map(|d| {
            let i = d.index();
            CaptureCounters {
                captured: self.captured[i].load(Ordering::Relaxed),
                dropped: self.dropped[i].load(Ordering::Relaxed),
                write_errors: self.write_errors[i].load(Ordering::Relaxed),
            }
        })
    }
}

/// The datapath's end of a capture, one `DirTap` per direction (each
/// `Lane` of the bridge owns one: `Bridge::set_capture`).
pub struct Tap {
    dirs: [DirTap; 2],
}

impl Tap {
    /// The taps of both directions writing to `records`, each reusing the
    /// buffers its `spare` channel returns.
    fn new(
        records: SyncSender<Record>,
        spare: [Receiver<Vec<u8>>; 2],
        enabled: [bool; 2],
        counters: &Arc<Counters>,
    ) -> Tap {
        let [l2r, r2l] = spare;
        let tap = |dir: Dir, spare| DirTap {
            dir,
            records: records.clone(),
            spare,
            stash: None,
            enabled: enabled[dir.index()],
            counters: counters.clone(),
        };
        Tap {
            dirs: [tap(Dir::LeftToRight, l2r), tap(Dir::RightToLeft, r2l)],
        }
    }

    /// Records `frame`, seen at `point` of direction `dir` at `at`.
    pub fn frame(&mut self, dir: Dir, point: Point, frame: &[u8], at: Instant) {
        self.dirs[dir.index()].frame(point, frame, at);
    }

    /// Counters of both directions, by `Dir::index`.
    pub fn counters(&self) -> [CaptureCounters; 2] {
        self.dirs[0].counters.read()
    }
}

impl From<Tap> for [DirTap; 2] {
    fn from(tap: Tap) -> [DirTap; 2] {
        tap.dirs
    }
}

/// One direction's end of a capture: copies frames into the channel.
pub struct DirTap {
    dir: Dir,
    records: SyncSender<Record>,
    spare: Receiver<Vec<u8>>,
    /// A buffer whose record the full channel refused, reused next.
    stash: Option<Vec<u8>>,
    enabled: bool,
    counters: Arc<Counters>,
}

impl FrameTap for DirTap {
    /// Never blocks; a record the channel has no room for is counted as
    /// dropped.
    fn frame(&mut self, point: Point, frame: &[u8], at: Instant) {
        if !self.enabled {
            return;
        }
        let i = self.dir.index();
        let mut data = self
            .stash
            .take()
            .or_else(|| self.spare.try_recv().ok())
            .unwrap_or_default();
        data.clear();
        data.extend_from_slice(frame);
        let rec = Record {
            dir: self.dir,
            point,
            at,
            orig_len: u32::try_from(frame.len()).unwrap_or(u32::MAX),
            data,
        };
        match self.records.try_send(rec) {
            Ok(()) => {}
            Err(TrySendError::Full(rec) | TrySendError::Disconnected(rec)) => {
                self.counters.dropped[i].fetch_add(1, Ordering::Relaxed);
                self.counters.lost_per_if[i][interface(point) as usize]
                    .fetch_add(1, Ordering::Relaxed);
                self.stash = Some(rec.data);
            }
        }
    }

    fn counters(&self) -> CaptureCounters {
        self.counters.read()[self.dir.index()]
    }
}

/// The writer thread. `finish` (or drop) waits for it once the tap is gone.
pub struct CaptureWriter {
    thread: Option<JoinHandle<()>>,
    counters: Arc<Counters>,
}

impl CaptureWriter {
    /// Counters of both directions, by `Dir::index`.
    pub fn counters(&self) -> [CaptureCounters; 2] {
        self.counters.read()
    }

    /// Waits until every record is written and the files are closed (the
    /// tap must be dropped first, i.e. the datapath stopped). Returns the
    /// final counters.
    pub fn finish(mut self) -> [CaptureCounters; 2] {
        self.join();
        self.counters.read()
    }

    fn join(&mut self) {
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                tracing::error!("the capture writer thread panicked");
            }
        }
    }
}

impl Drop for CaptureWriter {
    fn drop(&mut self) {
        self.join();
    }
}

fn interface(point: Point) -> u32 {
    match point {
        Point::In => IF_IN,
        Point::Out => IF_OUT,
        Point::Dropped(_) => IF_DROPPED,
    }
}

/// The wall-clock time minus CLOCK_MONOTONIC, ns: added to link times.
fn wall_offset_ns() -> u64 {
    let mono = crate::time::Clock::now(&crate::clock::MonotonicClock).nanos();
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    wall.saturating_sub(mono)
}

/// Opens the files of `spec` (writing their headers) and starts the writer
/// thread; times are shifted by `offset_ns` (None: to the wall clock).
/// The error names the file.
pub fn start(spec: &CaptureSpec, offset_ns: Option<u64>) -> io::Result<(Tap, CaptureWriter)> {
    let mut files: [Option<PcapNgWriter<BufWriter<File>>>; 2] = [None, None];
    for dir in Dir::ALL {
        let Some(path) = &spec.files[dir.index()] else {
            continue;
        };
        let named = |e: io::Error| {
            io::Error::new(
                e.kind(),
                format!(
                    "capture file {} ({}): {e}; fix: choose a writable path",
                    path.display(),
                    dir.arrow()
                ),
            )
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(named)?;
        }
        let file = File::create(path).map_err(named)?;
        files[dir.index()] = Some(open_pcapng(BufWriter::new(file), dir).map_err(named)?);
    }
    let (tx, rx) = sync_channel(CHANNEL_DEPTH);
    // Each direction gets its used buffers back on its own channel.
    let [(l2r_tx, l2r_rx), (r2l_tx, r2l_rx)] = [(); 2].map(|()| sync_channel(CHANNEL_DEPTH));
    let counters = Arc::new(Counters::default());
    let enabled = [files[0].is_some(), files[1].is_some()];
    let tap = Tap::new(tx, [l2r_rx, r2l_rx], enabled, &counters);
    let spare_tx = [l2r_tx, r2l_tx];
    let offset = offset_ns.unwrap_or_else(wall_offset_ns);
    let thread = {
        let counters = counters.clone();
        std::thread::Builder::new()
            .name("bloatbox-capture".into())
            .spawn(move || {
                crate::privilege::drop_all_in_helper("capture");
                write_loop(files, rx, spare_tx, offset, &counters)
            })?
    };
    Ok((
        tap,
        CaptureWriter {
            thread: Some(thread),
            counters,
        },
    ))
}

/// The section header and the three interfaces of `dir`'s file.
fn open_pcapng<W: io::Write>(out: W, dir: Dir) -> io::Result<PcapNgWriter<W>> {
    let section = SectionHeaderBlock {
        endianness: Endianness::native(),
        options: vec![
            SectionHeaderOption::Comment(Cow::Owned(format!(
                "bloatbox capture of the {} direction: interface 0 = frames in, 1 = frames out, 2 = frames dropped (comment \"dropped: REASON\")",
                dir.arrow()
            ))),
            SectionHeaderOption::UserApplication(Cow::Owned(format!(
                "bloatbox {}",
                env!("CARGO_PKG_VERSION")
            ))),
        ],
        ..Default::default()
    };
    let mut w = PcapNgWriter::with_section_header(out, section).map_err(pcap_io)?;
    for (name, what) in [
        ("in", "frames entering the emulated link"),
        ("out", "frames leaving the emulated link"),
        ("dropped", "frames the emulated link dropped"),
    ] {
        let idb = InterfaceDescriptionBlock {
            linktype: DataLink::ETHERNET,
            snaplen: 0,
            options: vec![
                InterfaceDescriptionOption::IfName(Cow::Owned(format!("{} {name}", dir.arrow()))),
                InterfaceDescriptionOption::IfDescription(Cow::Owned(format!(
                    "{what}, {}",
                    dir.arrow()
                ))),
                InterfaceDescriptionOption::IfTsResol(9),
            ],
        };
        w.write_pcapng_block(idb).map_err(pcap_io)?;
    }
    Ok(w)
}

fn pcap_io(e: pcap_file::PcapError) -> io::Error {
    match e {
        pcap_file::PcapError::IoError(e) => e,
        other => io::Error::other(other.to_string()),
    }
}

/// One record as an Enhanced Packet Block.
fn write_record<W: io::Write>(
    w: &mut PcapNgWriter<W>,
    rec: &Record,
    offset_ns: u64,
) -> io::Result<()> {
    let mut options = vec![EnhancedPacketOption::Flags(match rec.point {
        Point::Out => EPB_OUTBOUND,
        Point::In | Point::Dropped(_) => EPB_INBOUND,
    })];
    if let Point::Dropped(reason) = rec.point {
        options.push(EnhancedPacketOption::Comment(Cow::Owned(format!(
            "dropped: {}",
            reason.name()
        ))));
    }
    let epb = EnhancedPacketBlock {
        interface_id: interface(rec.point),
        timestamp: Duration::from_nanos(rec.at.nanos().saturating_add(offset_ns)),
        original_len: rec.orig_len,
        data: Cow::Borrowed(&rec.data),
        options,
    };
    w.write_pcapng_block(epb).map(drop).map_err(pcap_io)
}

fn write_loop(
    mut files: [Option<PcapNgWriter<BufWriter<File>>>; 2],
    records: Receiver<Record>,
    spare: [SyncSender<Vec<u8>>; 2],
    offset_ns: u64,
    counters: &Counters,
) {
    let mut last = [0u64; 2];
    // Ends when the tap (the datapath's bridge) is dropped.
    for rec in records {
        let i = rec.dir.index();
        if let Some(w) = files[i].as_mut() {
            match write_record(w, &rec, offset_ns) {
                Ok(()) => counters.captured[i].fetch_add(1, Ordering::Relaxed),
                Err(e) => {
                    if counters.write_errors[i].fetch_add(1, Ordering::Relaxed) == 0 {
                        tracing::error!("capture of {}: {e}", rec.dir.arrow());
                    }
                    counters.lost_per_if[i][interface(rec.point) as usize]
                        .fetch_add(1, Ordering::Relaxed)
                }
            };
        }
        last[i] = last[i].max(rec.at.nanos());
        // A full return channel only costs a later allocation.
        let _ = spare[i].try_send(rec.data);
    }
    for dir in Dir::ALL {
        let i = dir.index();
        let Some(mut w) = files[i].take() else {
            continue;
        };
        let lost = [IF_IN, IF_OUT, IF_DROPPED]
            .map(|id| counters.lost_per_if[i][id as usize].load(Ordering::Relaxed));
        if let Err(e) = finish_file(&mut w, lost, last[i], offset_ns) {
            tracing::error!("finishing the capture of {}: {e}", dir.arrow());
        }
    }
}

/// Ends a file: each interface's lost records (`isb_ifdrop`, by interface
/// id) in an Interface Statistics Block stamped `last_ns`, then a flush.
fn finish_file<W: io::Write>(
    w: &mut PcapNgWriter<W>,
    lost: [u64; 3],
    last_ns: u64,
    offset_ns: u64,
) -> io::Result<()> {
    for (id, lost) in (IF_IN..=IF_DROPPED).zip(lost) {
        let isb = InterfaceStatisticsBlock {
            interface_id: id,
            timestamp: last_ns.saturating_add(offset_ns),
            options: vec![InterfaceStatisticsOption::IsbIfDrop(lost)],
        };
        w.write_pcapng_block(isb).map_err(pcap_io)?;
    }
    io::Write::flush(w.get_mut())
}

/// A whole capture file of `dir` written to `out` as the writer thread
/// writes one: the header and interfaces, one record per `(point, frame,
/// time)` the tap received (times shifted by `offset_ns`), and the
/// statistics (nothing lost). For tests and the `pcapng` fuzz target.
pub fn write_file<W: io::Write>(
    out: W,
    dir: Dir,
    records: &[(Point, &[u8], Instant)],
    offset_ns: u64,
) -> io::Result<W> {
    let mut w = open_pcapng(out, dir)?;
    let mut last = 0;
    for &(point, frame, at) in records {
        let rec = Record {
            dir,
            point,
            at,
            orig_len: u32::try_from(frame.len()).unwrap_or(u32::MAX),
            data: frame.to_vec(),
        };
        write_record(&mut w, &rec, offset_ns)?;
        last = at.nanos().max(last);
    }
    finish_file(&mut w, [0; 3], last, offset_ns)?;
    Ok(w.into_inner())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::packet::DropReason;
    use pcap_file::pcapng::{Block, PcapNgReader};

    /// (interface, timestamp ns, data, comment) of every packet in `path`,
    /// and the isb_ifdrop of each interface.
    pub(crate) type Packets = Vec<(u32, u64, Vec<u8>, Option<String>)>;

    pub(crate) fn read(path: &Path) -> (Packets, Vec<u64>) {
        let mut r = PcapNgReader::new(File::open(path).unwrap()).unwrap();
        let (mut pkts, mut isb) = (Vec::new(), Vec::new());
        while let Some(block) = r.next_block() {
            match block.unwrap() {
                Block::EnhancedPacket(p) => {
                    let comment = p.options.iter().find_map(|o| match o {
                        EnhancedPacketOption::Comment(c) => Some(c.to_string()),
                        _ => None,
                    });
                    pkts.push((
                        p.interface_id,
                        p.timestamp.as_nanos() as u64,
                        p.data.to_vec(),
                        comment,
                    ));
                }
                Block::InterfaceStatistics(s) => {
                    for o in &s.options {
                        if let InterfaceStatisticsOption::IsbIfDrop(n) = o {
                            isb.push(*n);
                        }
                    }
                }
                _ => {}
            }
        }
        assert_eq!(r.interfaces().len(), 3);
        (pkts, isb)
    }

    #[test]
    fn writes_in_out_and_dropped_with_ns_times_and_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let spec = CaptureSpec::in_dir(dir.path());
        let (mut tap, writer) = start(&spec, Some(1_000)).unwrap();
        let l2r = Dir::LeftToRight;
        tap.frame(l2r, Point::In, &[1; 60], Instant::from_nanos(5));
        tap.frame(
            l2r,
            Point::Dropped(DropReason::Codel),
            &[2; 61],
            Instant::from_nanos(7),
        );
        tap.frame(l2r, Point::Out, &[1; 60], Instant::from_nanos(10_000_123));
        tap.frame(
            Dir::RightToLeft,
            Point::In,
            &[3; 64],
            Instant::from_nanos(9),
        );
        drop(tap);
        let counters = writer.finish();
        assert_eq!(counters[0].captured, 3);
        assert_eq!(counters[1].captured, 1);
        assert_eq!(counters[0].dropped + counters[1].dropped, 0);

        let (pkts, isb) = read(&spec.files[0].clone().unwrap());
        assert_eq!(isb, vec![0, 0, 0]);
        assert_eq!(
            pkts,
            vec![
                (IF_IN, 1_005, vec![1; 60], None),
                (
                    IF_DROPPED,
                    1_007,
                    vec![2; 61],
                    Some("dropped: codel".into())
                ),
                (IF_OUT, 10_001_123, vec![1; 60], None),
            ]
        );
        let (pkts, _) = read(&spec.files[1].clone().unwrap());
        assert_eq!(pkts, vec![(IF_IN, 1_009, vec![3; 64], None)]);
    }

    #[test]
    fn a_full_channel_drops_and_counts_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let spec = CaptureSpec {
            files: [Some(dir.path().join("l.pcapng")), None],
        };
        // A writer that is not draining: the channel's receiver held here.
        let (tx, _rx) = sync_channel(2);
        let (_spare_tx, spare_rx) = sync_channel(2);
        let (_spare_tx_r2l, spare_rx_r2l) = sync_channel(2);
        let counters = Arc::new(Counters::default());
        let mut tap = Tap::new(tx, [spare_rx, spare_rx_r2l], [true, false], &counters);
        for n in 0..5 {
            tap.frame(
                Dir::LeftToRight,
                Point::Out,
                &[0; 20],
                Instant::from_nanos(n),
            );
        }
        // The disabled direction records nothing and counts nothing.
        tap.frame(Dir::RightToLeft, Point::In, &[0; 20], Instant::ZERO);
        let c = tap.counters();
        assert_eq!(c[0].dropped, 3);
        assert_eq!(c[1], CaptureCounters::default());
        assert_eq!(
            counters.lost_per_if[0][IF_OUT as usize].load(Ordering::Relaxed),
            3
        );
        assert!(
            tap.dirs[0].stash.is_some(),
            "the refused buffer is kept for reuse"
        );
        drop(spec);
    }

    #[test]
    fn records_lost_by_the_writer_show_in_the_interface_statistics() {
        let dir = tempfile::tempdir().unwrap();
        let spec = CaptureSpec {
            files: [None, Some(dir.path().join("sub/r.pcapng"))],
        };
        let (mut tap, writer) = start(&spec, Some(0)).unwrap();
        // Enough records to overflow the channel whatever the writer does.
        for n in 0..(3 * CHANNEL_DEPTH as u64) {
            tap.frame(
                Dir::RightToLeft,
                Point::In,
                &[0; 1500],
                Instant::from_nanos(n),
            );
        }
        drop(tap);
        let c = writer.finish()[1];
        assert_eq!(c.captured + c.dropped, 3 * CHANNEL_DEPTH as u64);
        let (pkts, isb) = read(&spec.files[1].clone().unwrap());
        assert_eq!(pkts.len() as u64, c.captured);
        assert_eq!(isb, vec![c.dropped, 0, 0]);
        // Times never go backwards within an interface.
        assert!(pkts.windows(2).all(|w| w[0].1 < w[1].1));
    }

    #[test]
    fn flags_combine_and_errors_name_the_file() {
        let d = Path::new("/tmp/caps");
        let args = CaptureArgs {
            pcap: Some(d.to_path_buf()),
            pcap_left: None,
            pcap_right: Some(PathBuf::from("/tmp/r.pcapng")),
        };
        let spec = args.spec().unwrap();
        assert_eq!(
            spec.files,
            [
                Some(d.join("left_to_right.pcapng")),
                Some(PathBuf::from("/tmp/r.pcapng"))
            ]
        );
        assert_eq!(CaptureArgs::default().spec(), None);
        let bad = CaptureSpec {
            files: [Some(PathBuf::from("/proc/no/such/dir/x.pcapng")), None],
        };
        let e = start(&bad, None).err().unwrap().to_string();
        assert!(
            e.contains("/proc/no/such/dir/x.pcapng") && e.contains("fix"),
            "{e}"
        );
    }

    /// The bridge driving a capture: what the taps see of admission,
    /// delivery and drops.
    mod with_bridge {
        use super::read;
        use crate::bridge::testutil::{bridge, frame, run};
        use crate::bridge::Bridge;
        use crate::capture::{start, CaptureSpec, DirTap, IF_DROPPED, IF_IN, IF_OUT};
        use crate::dir::Dir;
        use crate::link::{LinkParams, Path};
        use crate::packet::DropReason;
        use crate::qdisc::fifo::{Fifo, FifoKind};
        use crate::qdisc::tree::{DevSpec, QdiscTree};
        use crate::qdisc::QdiscCtx;
        use crate::time::Instant;

        #[test]
        fn a_direction_tap_can_move_to_its_lane_thread() {
            fn send<T: Send>() {}
            send::<DirTap>();
        }

        #[test]
        fn the_capture_sees_in_out_and_drops_with_reasons() {
            let dir = tempfile::tempdir().unwrap();
            let spec = CaptureSpec::in_dir(dir.path());
            let (tap, writer) = start(&spec, Some(0)).unwrap();
            let mut b = bridge();
            b.set_capture(tap);
            b.ingress(Dir::LeftToRight, frame(100, None), Instant::ZERO);
            b.ingress(Dir::LeftToRight, vec![0u8; 13], Instant::from_nanos(5));
            b.reject(
                Dir::RightToLeft,
                &frame(60, None),
                DropReason::PoolExhausted,
                Instant::from_nanos(7),
            );
            run(&mut b);
            let snap = b.snapshot(Instant::from_millis(100));
            assert!(snap.capture.is_some());
            drop(b);
            let counters = writer.finish();
            assert_eq!((counters[0].captured, counters[1].captured), (4, 2));
            let (l2r, _) = read(&spec.files[0].clone().unwrap());
            let seen: Vec<(u32, u64, usize, Option<String>)> = l2r
                .into_iter()
                .map(|(i, t, d, c)| (i, t, d.len(), c))
                .collect();
            assert_eq!(
                seen,
                vec![
                    (IF_IN, 0, 100, None),
                    (IF_IN, 5, 13, None),
                    (IF_DROPPED, 5, 13, Some("dropped: runt".into())),
                    // 100 B at 12.5 MB/s = 8 us, then 10 ms of delay.
                    (IF_OUT, 10_008_000, 100, None),
                ]
            );
            let (r2l, _) = read(&spec.files[1].clone().unwrap());
            assert_eq!(r2l.len(), 2);
            assert_eq!(r2l[1].3.as_deref(), Some("dropped: pool_exhausted"));
        }

        #[test]
        fn frames_a_qdisc_drops_are_captured_with_its_reason() {
            let dir = tempfile::tempdir().unwrap();
            let spec = CaptureSpec::in_dir(dir.path());
            let (tap, writer) = start(&spec, Some(0)).unwrap();
            let path = |dir| {
                // Two places: the requeued frame takes one (dev_requeue_skb).
                let pfifo = Fifo::with_limit(FifoKind::Pfifo, QdiscCtx::default(), 2);
                let dev = DevSpec::new(dir, crate::qdisc::kinds::BUILTIN);
                Path::new(
                    LinkParams {
                        tx_ring: 1,
                        bql: false,
                        ..LinkParams::default()
                    },
                    QdiscTree::with_root(dev, Box::new(pfifo)),
                )
            };
            let mut b = Bridge::new(path(Dir::LeftToRight), path(Dir::RightToLeft));
            b.set_capture(tap);
            for _ in 0..5 {
                b.ingress(Dir::LeftToRight, frame(1000, None), Instant::ZERO);
            }
            run(&mut b);
            let drops =
                b.snapshot(Instant::ZERO).paths[0].counters.drops[DropReason::QueueFull.index()];
            drop(b);
            writer.finish();
            let (pkts, _) = read(&spec.files[0].clone().unwrap());
            let dropped: Vec<_> = pkts.iter().filter(|p| p.0 == IF_DROPPED).collect();
            assert_eq!(dropped.len() as u64, drops);
            assert_eq!(
                drops, 2,
                "one on the wire, one requeued at the bypass, one queued, two dropped"
            );
            assert!(dropped
                .iter()
                .all(|p| p.3.as_deref() == Some("dropped: queue_full")));
        }
    }
}
