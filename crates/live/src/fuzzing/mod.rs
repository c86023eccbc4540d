//! The bodies of the coverage-guided fuzz targets (`fuzz/`, run with
//! `scripts/fuzz.sh TARGET SECONDS`; see docs/fuzzing.md). Each takes the
//! fuzzer's bytes, drives one part of bloatbox with them and panics when an
//! invariant breaks, so libFuzzer reports it; `tests/pure/fuzz_corpus.rs` feeds
//! every seed of `fuzz/corpus/TARGET/` through the same function on stable.
//!
//! | target   | input                                | invariants |
//! |----------|--------------------------------------|------------|
//! | bridge   | a set-up, then frames and gaps       | conservation after every call; at the end every frame delivered or dropped with its buffer returned |
//! | tc       | a set-up, then tc lines              | a failed command leaves the tree (dump) and the drops as they were; conservation with frames in flight |
//! | config   | TOML text                            | a config or an error naming the origin and a position inside the text |
//! | control  | request lines                        | one JSON reply line, `ok` xor `error`; a failed tc leaves both trees as they were; stats conserve |
//! | netem    | netem words                          | what parses prints (`format_netem`) and re-parses equal |
//! | ethtool  | an ethtool line                      | what parses prints and re-parses equal; a refused line leaves the parameters |
//! | mahimahi | a trace file                         | what parses prints (`to_mahimahi`) and re-parses equal |
//! | pcapng   | records the capture tap receives     | the file reads back with every record (interface, time, data, length, drop reason) |

pub mod setups;

use crate::bridge::Point;
use crate::dir::Dir;
use crate::packet::DropReason;
use crate::qdisc::Qdisc;
use crate::time::Instant;

/// A target's body: the fuzzer's bytes in, a panic on a broken invariant.
pub type Target = fn(&[u8]);

/// Every target by name, for the fuzz crate and the corpus test.
pub const TARGETS: &[(&str, Target)] = &[
    ("bridge", bridge),
    ("tc", tc),
    ("config", config),
    ("control", control),
    ("netem", netem),
    ("ethtool", ethtool),
    ("mahimahi", mahimahi),
    ("pcapng", pcapng),
];

/// The fuzzer's bytes read front to back; past the end every read is 0.
struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        head
    }

    fn u8(&mut self) -> u8 {
        self.take(1).first().copied().unwrap_or(0)
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn u64(&mut self) -> u64 {
        let mut b = [0; 8];
        let head = self.take(8);
        b[..head.len()].copy_from_slice(head);
        u64::from_le_bytes(b)
    }
}

/// Most frames, lines or records one input drives (bounds the time of an
/// execution).
const MAX_ITEMS: usize = 256;

/// A set-up of `setups::setups()`, chosen by one byte.
fn pick_setup(b: &mut Bytes) -> &'static setups::Setup {
    let all = setups::setups();
    &all[b.u8() as usize % all.len()]
}

/// Frames at times into a bridge of each root qdisc set-up. Input: a
/// set-up byte, then per frame a control byte (bit 0: right to left; bits
/// 1-2: gap 0, µs, 100 µs or ms units of the next byte), a length (u16, at
/// most 9018) and that many bytes. Checks `setups::run`'s invariants.
pub fn bridge(data: &[u8]) {
    let mut b = Bytes(data);
    let setup = pick_setup(&mut b);
    let mut offers = Vec::new();
    while !b.is_empty() && offers.len() < MAX_ITEMS {
        let ctl = b.u8();
        let dir = if ctl & 1 == 0 {
            Dir::LeftToRight
        } else {
            Dir::RightToLeft
        };
        let unit = [0, 1_000, 100_000, 1_000_000][usize::from((ctl >> 1) & 3)];
        let gap_ns = u64::from(b.u8()) * unit;
        let len = usize::from(b.u16()) % 9019;
        offers.push(setups::Offer {
            dir,
            data: b.take(len).to_vec(),
            gap_ns,
        });
    }
    setups::run(setup, &offers);
}

/// A UDP/IPv4 frame to port `port` (so u32 and flow filters see a
/// header), `len` bytes long (at least the headers).
fn udp_frame(port: u16, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len.max(42)];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[23] = 17;
    f[36..38].copy_from_slice(&port.to_be_bytes());
    f
}

/// The tree of `dir` as its dump prints, and the drops so far.
fn tree_state(b: &mut crate::bridge::Bridge, dir: Dir, now: Instant) -> (String, u64) {
    let path = b.path_mut(dir);
    let dump = path.inspect_qdisc(now, |tree, t| format!("{:?}", Qdisc::dump(tree, t)));
    (dump, path.counters().total_drops())
}

/// tc lines, each parsed and then run against the live tree of a bridge
/// of a set-up while frames flow. Input: a set-up byte, then text whose
/// lines are tc commands. Before each line a frame enters one direction
/// and time moves on 100 µs; a line that parses and then fails must leave
/// the tree's dump and the drop counters as they were; conservation holds
/// after every line and at the end, when every frame has left or dropped.
pub fn tc(data: &[u8]) {
    let mut b = Bytes(data);
    let setup = pick_setup(&mut b);
    let mut bridge = setups::bridge(setup);
    let text = String::from_utf8_lossy(b.take(usize::MAX));
    let (mut out, mut freed) = (Vec::new(), Vec::new());
    let mut now = Instant::ZERO;
    for (i, line) in text.lines().take(MAX_ITEMS).enumerate() {
        now += 100_000;
        bridge.poll(now, &mut out, &mut freed);
        let dir = Dir::ALL[i % 2];
        bridge.ingress(dir, udp_frame(5000 + (i % 3) as u16, 60 + line.len()), now);
        let Ok(cmd) = crate::tc::TcCommand::parse(line) else {
            continue;
        };
        let dir = cmd.dev.unwrap_or(Dir::LeftToRight);
        let before = tree_state(&mut bridge, dir, now);
        let result = bridge
            .path_mut(dir)
            .edit_qdisc(now, |tree, t, drops| crate::tc::run(tree, &cmd, t, drops));
        if let Err(e) = result {
            let after = tree_state(&mut bridge, dir, now);
            assert_eq!(
                before.0, after.0,
                "{line:?} failed ({e}) but changed the tree"
            );
            assert_eq!(
                before.1, after.1,
                "{line:?} failed ({e}) but dropped frames"
            );
        }
        if let Err(e) = bridge.check_conservation() {
            panic!("after {line:?}: {e}");
        }
    }
    // Whatever the tree became, every frame leaves or is dropped, once
    // every plug has been told to let its frames go.
    for dir in Dir::ALL {
        release_plugs(&mut bridge, dir, now);
    }
    let mut polls = 0;
    while let Some(due) = bridge.poll_at() {
        now = due.max(now);
        bridge.poll(now, &mut out, &mut freed);
        polls += 1;
        assert!(polls < 100_000, "poll never finishes");
    }
    for dir in Dir::ALL {
        let p = bridge.path(dir);
        assert_eq!(p.held(), 0, "{}: frames held with no wake-up", dir.name());
    }
    if let Err(e) = bridge.check_conservation() {
        panic!("at the end: {e}");
    }
}

/// Lets every plug of `dir`'s tree go (`release_indefinite`), as its user
/// would: a plug holds its frames on purpose until told to, and starts
/// plugged (`plug_init` in net/sched/sch_plug.c), so only then must every
/// frame leave. A plug has no options in its dump, so it is known by its
/// kind.
fn release_plugs(b: &mut crate::bridge::Bridge, dir: Dir, now: Instant) {
    use crate::handle::Handle;
    fn plugs(d: &crate::qdisc::QdiscDump, out: &mut Vec<(Handle, Handle)>) {
        if d.kind == "plug" {
            out.push((d.parent, d.handle));
        }
        for c in &d.children {
            plugs(c, out);
        }
    }
    let mut found = Vec::new();
    let dump = b
        .path_mut(dir)
        .inspect_qdisc(now, |tree, t| Qdisc::dump(tree, t));
    plugs(&dump, &mut found);
    for (parent, handle) in found {
        let at = if parent == crate::handle::TC_H_ROOT {
            "root".to_string()
        } else {
            format!("parent {}", crate::handle::tc_handle(parent))
        };
        let line = format!(
            "tc qdisc change dev {} {at} handle {} plug release_indefinite",
            dir.dev(),
            crate::handle::qdisc_handle(handle)
        );
        let cmd = crate::tc::TcCommand::parse(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
        if let Err(e) = b
            .path_mut(dir)
            .edit_qdisc(now, |tree, t, drops| crate::tc::run(tree, &cmd, t, drops))
        {
            panic!("{line}: {e}");
        }
    }
}

/// Configuration text: loads, or fails with an error that names the origin
/// and, when it has a position, one inside the text.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let check = |dev, steps: &[crate::tc::Step]| crate::tc::check_steps(dev, steps);
    let Err(e) = crate::config::Config::from_str_with(text, "fuzz.toml", Some(&check)) else {
        return;
    };
    assert_eq!(e.origin, "fuzz.toml", "{e}");
    assert!(!e.message.is_empty(), "an error without a message: {e:?}");
    if let Some(p) = e.position {
        let lines: Vec<&str> = text.split('\n').collect();
        assert!(
            p.line >= 1 && p.line <= lines.len(),
            "{e}: line {} of {}",
            p.line,
            lines.len()
        );
        let width = lines[p.line - 1].chars().count();
        assert!(
            p.column >= 1 && p.column <= width + 1,
            "{e}: column {} of a line of {width}",
            p.column
        );
    }
}

/// A stepped datapath (socketpair ports, no root, no threads: see
/// `Datapath::stepped`) and a request handler on it, shared by every
/// execution of the `control` target.
struct ControlRig {
    handler: crate::control_server::RequestHandler,
    snapshots: crate::datapath::SnapshotReader,
    _datapath: crate::datapath::Datapath,
    _hosts: [crate::port::SocketPairPort; 2],
}

fn control_rig() -> &'static ControlRig {
    static RIG: std::sync::OnceLock<ControlRig> = std::sync::OnceLock::new();
    RIG.get_or_init(|| {
        use crate::port::SocketPairPort;
        let setup = setups::named("fq_codel ecn").expect("the fq_codel ecn sample");
        let bridge = setups::bridge(setup);
        let (dp_left, host_left) = SocketPairPort::pair().expect("socketpair");
        let (dp_right, host_right) = SocketPairPort::pair().expect("socketpair");
        let cfg = crate::datapath::DatapathConfig {
            publish_interval_ns: 1_000_000,
            ..Default::default()
        };
        // Stepped: each request is carried out on this thread, with no
        // thread wake-up per round trip (185 executions/s with threads).
        let datapath =
            crate::datapath::Datapath::stepped(bridge, Box::new(dp_left), Box::new(dp_right), cfg)
                .expect("datapath");
        let handler = crate::control_server::RequestHandler::new(
            datapath.snapshots(),
            Some(datapath.commander()),
        );
        while handler
            .reply(b"snapshot")
            .is_some_and(|r| r.starts_with("{\"error\""))
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        ControlRig {
            handler,
            snapshots: datapath.snapshots(),
            _datapath: datapath,
            _hosts: [host_left, host_right],
        }
    })
}

/// A reply line as the protocol defines it: an object with exactly one
/// of `ok` and `error`, its `ok` decoded as `T` (`IgnoredAny` checks only
/// that it is JSON; a `stats` reply's decodes as the client's snapshot).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Reply<T> {
    ok: Option<T>,
    error: Option<String>,
}

/// The reply line to `line`, checked to be one line of JSON with exactly
/// one of `ok` and `error`, and decoded in the same pass.
fn control_reply<T: serde::de::DeserializeOwned>(
    rig: &ControlRig,
    line: &[u8],
) -> Option<(String, Reply<T>)> {
    let reply = rig.handler.reply(line)?;
    assert!(
        !reply.contains('\n'),
        "a reply of more than one line: {reply}"
    );
    let parsed: Reply<T> = serde_json::from_str(&reply)
        .unwrap_or_else(|e| panic!("reply is not a JSON object with ok or error ({e}): {reply}"));
    assert!(
        parsed.ok.is_some() != parsed.error.is_some(),
        "ok xor error: {reply}"
    );
    Some((reply, parsed))
}

/// The reply line to `line`, its `ok` checked to be JSON but not kept.
fn control_line(rig: &ControlRig, line: &[u8]) -> Option<(String, Option<String>)> {
    control_reply::<serde::de::IgnoredAny>(rig, line).map(|(reply, r)| (reply, r.error))
}

/// Control-socket request lines against the request handler (the one
/// the socket's threads call) of a stepped datapath. Every line gets one JSON
/// reply line with `ok` or `error`; a `tc` request that fails leaves both
/// devices' trees as `tc qdisc show` printed them; `stats` conserve
/// frames. `shutdown` is not sent (it would stop the shared datapath);
/// each execution starts from the devices' default trees.
pub fn control(data: &[u8]) {
    let rig = control_rig();
    let show = br#"{"cmd":"tc","line":"tc qdisc show"}"#;
    for dev in ["left", "right"] {
        let del = format!(r#"{{"cmd":"tc","line":"tc qdisc del dev {dev} root"}}"#);
        control_line(rig, del.as_bytes());
    }
    for line in data.split(|&c| c == b'\n').take(MAX_ITEMS) {
        let parsed = std::str::from_utf8(line).map(crate::control::proto::parse_request);
        let (tc, stats) = match parsed {
            Ok(Ok(crate::control::Request::Shutdown)) => continue,
            Ok(Ok(crate::control::Request::Tc { .. })) => (true, false),
            Ok(Ok(crate::control::Request::Stats)) => (false, true),
            _ => (false, false),
        };
        // What a `stats` line got (counters less the `reset_stats`
        // baseline) decodes as a snapshot and conserves frames; after any
        // other request the snapshot the datapath published (the stepped
        // datapath publishes after every request) conserves them.
        if stats {
            let Some((_, got)) = control_reply::<crate::datapath::LiveSnapshot>(rig, line) else {
                continue;
            };
            if let Some(snap) = got.ok {
                check_conserved(&snap, line);
                continue;
            }
        } else {
            let before = tc.then(|| control_line(rig, show));
            let Some((_, error)) = control_line(rig, line) else {
                continue;
            };
            if let (Some(before), Some(e)) = (before, &error) {
                assert_eq!(
                    before,
                    control_line(rig, show),
                    "{} failed ({e}) but changed a tree",
                    String::from_utf8_lossy(line)
                );
            }
        }
        check_conserved(&rig.snapshots.latest().expect("a snapshot"), line);
    }
}

/// Both directions of `snap` conserve frames (the request `line` came
/// before it).
fn check_conserved(snap: &crate::datapath::LiveSnapshot, line: &[u8]) {
    for dir in Dir::ALL {
        let p = snap.bridge.path(dir);
        if let Err(e) = p.counters.check_conservation(p.held) {
            panic!("after {:?}: {e}", String::from_utf8_lossy(line));
        }
    }
}

/// netem words: what `parse_netem` accepts, `format_netem` prints as words
/// that parse to the same impairments.
pub fn netem(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let words: Vec<&str> = text.split_whitespace().take(MAX_ITEMS).collect();
    let Ok(imp) = crate::tc::netem::parse_netem(&words) else {
        return;
    };
    let printed = crate::tc::netem::format_netem(&imp);
    let again: Vec<&str> = printed.split_whitespace().collect();
    match crate::tc::netem::parse_netem(&again) {
        Ok(back) => assert_eq!(back, imp, "{words:?} printed as {printed:?}"),
        Err(e) => panic!("{words:?} printed as {printed:?}, which fails: {e}"),
    }
}

/// An ethtool line: what parses prints (`Display`) as a line that parses
/// equal; applied to the default parameters, a refused line changes
/// nothing.
pub fn ethtool(data: &[u8]) {
    let line = String::from_utf8_lossy(data);
    let mut params = crate::link::LinkParams::default();
    let before = params;
    if crate::config::apply_ethtool(&line, &mut params).is_err() {
        assert_eq!(
            params, before,
            "{line:?} was refused but changed the parameters"
        );
    }
    let Ok(cmd) = crate::config::parse_ethtool(&line) else {
        return;
    };
    let printed = cmd.to_string();
    match crate::config::parse_ethtool(&printed) {
        Ok(back) => assert_eq!(back, cmd, "{line:?} printed as {printed:?}"),
        Err(e) => panic!("{line:?} printed as {printed:?}, which fails: {e}"),
    }
}

/// A mahimahi trace file: what parses prints (`to_mahimahi`) as a file
/// that parses equal.
pub fn mahimahi(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(trace) = crate::link::Schedule::parse_mahimahi(&text) else {
        return;
    };
    let printed = trace.to_mahimahi().expect("a trace prints");
    match crate::link::Schedule::parse_mahimahi(&printed) {
        Ok(back) => assert_eq!(back, trace, "{text:?} printed as {printed:?}"),
        Err(e) => panic!("{text:?} printed as {printed:?}, which fails: {e}"),
    }
}

/// One record the capture hook receives: where, the frame, when.
pub type CaptureRecord = (Point, Vec<u8>, Instant);

/// What the capture hook of direction `.0` receives, decoded from the
/// fuzzer's bytes, and the time offset (ns) of the file.
pub fn capture_records(data: &[u8]) -> (Dir, u64, Vec<CaptureRecord>) {
    let mut b = Bytes(data);
    let dir = Dir::ALL[usize::from(b.u8() & 1)];
    let offset_ns = b.u64() >> (b.u8() % 64);
    let mut records = Vec::new();
    while !b.is_empty() && records.len() < MAX_ITEMS {
        let point = match b.u8() {
            0..=99 => Point::In,
            100..=199 => Point::Out,
            r => Point::Dropped(DropReason::ALL[usize::from(r) % DropReason::ALL.len()]),
        };
        let at = Instant::from_nanos(b.u64() >> (b.u8() % 64));
        let len = usize::from(b.u16()) % 9019;
        records.push((point, b.take(len).to_vec(), at));
    }
    (dir, offset_ns, records)
}

/// The pcapng writer fed what the capture hook receives: the file it
/// writes reads back (pcap-file's reader) with three interfaces, every
/// record on its point's interface with its time, bytes, length and drop
/// reason, and the statistics of each interface.
pub fn pcapng(data: &[u8]) {
    use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketOption;
    use pcap_file::pcapng::{Block, PcapNgReader};
    let (dir, offset_ns, records) = capture_records(data);
    let refs: Vec<(Point, &[u8], Instant)> =
        records.iter().map(|(p, d, t)| (*p, &d[..], *t)).collect();
    let file = crate::capture::write_file(Vec::new(), dir, &refs, offset_ns).expect("writes");
    let mut r = PcapNgReader::new(&file[..]).expect("reads the section header");
    let (mut seen, mut stats) = (0, 0);
    while let Some(block) = r.next_block() {
        match block.expect("reads every block") {
            Block::EnhancedPacket(p) => {
                let (point, frame, at) = &records[seen];
                let interface = match point {
                    Point::In => crate::capture::IF_IN,
                    Point::Out => crate::capture::IF_OUT,
                    Point::Dropped(_) => crate::capture::IF_DROPPED,
                };
                assert_eq!(p.interface_id, interface, "record {seen}");
                assert_eq!(&p.data[..], &frame[..], "record {seen}");
                assert_eq!(p.original_len as usize, frame.len(), "record {seen}");
                let ns = at.nanos().saturating_add(offset_ns);
                assert_eq!(p.timestamp.as_nanos(), u128::from(ns), "record {seen}");
                let comment = p.options.iter().find_map(|o| match o {
                    EnhancedPacketOption::Comment(c) => Some(c.to_string()),
                    _ => None,
                });
                let reason = match point {
                    Point::Dropped(reason) => Some(format!("dropped: {}", reason.name())),
                    _ => None,
                };
                assert_eq!(comment, reason, "record {seen}");
                seen += 1;
            }
            Block::InterfaceStatistics(_) => stats += 1,
            _ => {}
        }
    }
    assert_eq!(seen, records.len(), "records read back");
    assert_eq!(r.interfaces().len(), 3);
    assert_eq!(stats, 3, "one statistics block per interface");
}
