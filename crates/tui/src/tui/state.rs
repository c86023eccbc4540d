//! The TUI's pure state: what the screen shows, derived from successive
//! snapshots (rates, per-flow throughput, bounded history rings, events
//! such as CoDel entering or leaving its dropping state), and the key
//! handling that turns key presses into state changes and `Action`s.
//! Nothing here reads a clock or the terminal.

use super::probes::{ProbeView, QueuePoint};
use super::{Action, ControlError, LinkField, Preset, Snapshot};
use crate::control::field::FieldError;
use crate::dir::Dir;
use crate::link::PathSnapshot;
use crate::load::feed::Probe;
use crate::packet::{addr_text, DropReason, FlowKey};
use crate::qdisc::cake::{flow_mode, CakeFlowInfo, CakeFlowSet, CakeTinXstats};
use crate::qdisc::codel::CodelXstats;
use crate::qdisc::dump::{Ahead, FlowSummary, FlowTraffic, QueueId, QueueOccupancy, Xstats};
use crate::qdisc::{ClassDump, Handle, QdiscDump, QdiscOptions, QdiscStats, TC_H_ROOT};
use crate::tc::opts::cake::{flow_mode_name, tin_name};
use crate::tc::show::{class_options, qdisc_options};
use crate::tc::xstats::trimmed_lines;
use crate::time::{Instant, NS_PER_SEC};
use crate::units::sprint_time;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::collections::{HashMap, HashSet, VecDeque};

/// Samples kept per direction for the time series.
pub const HISTORY_LEN: usize = 300;
/// How long `DirState::achieved_bps` averages over: one snapshot interval
/// holds a whole number of frames (41 or 42 of 1514 B in 50 ms at
/// 10 Mbit/s), so its rate alone swings by a frame's worth (2.4 % there).
pub const ACHIEVED_WINDOW_NS: u64 = NS_PER_SEC;
/// Events kept in the log.
pub const EVENTS_LEN: usize = 200;
/// Above this many CoDel state changes in one snapshot, one summary event
/// is logged instead of one per flow.
const CODEL_EVENTS_PER_SNAPSHOT: usize = 4;
/// Rows moved by PageUp/PageDown.
const PAGE: usize = 10;
/// The probes' percentiles cover this many seconds of the newest samples.
pub const PROBE_STATS_S: f64 = 10.0;
/// The probes' chart shows this many seconds.
pub const PROBE_CHART_S: f64 = 60.0;
/// How long a flow whose queue emptied stays in the table, dimmed.
pub const GONE_KEEP_NS: u64 = 3 * NS_PER_SEC;

/// What the flow table is sorted by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// Bytes queued.
    Backlog,
    /// Packets queued.
    Packets,
    /// Sojourn time of the head packet.
    Sojourn,
    /// Drops.
    Drops,
    /// ECN marks.
    Marks,
    /// Dequeued bits/s.
    Throughput,
    /// The bucket number (the flow's place in the qdisc).
    Flow,
}

impl SortKey {
    /// Every key, in the order `s` cycles through them.
    pub const ALL: [SortKey; 7] = [
        SortKey::Backlog,
        SortKey::Packets,
        SortKey::Sojourn,
        SortKey::Drops,
        SortKey::Marks,
        SortKey::Throughput,
        SortKey::Flow,
    ];

    /// The key's name in the table's header.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Backlog => "backlog",
            SortKey::Packets => "packets",
            SortKey::Sojourn => "sojourn",
            SortKey::Drops => "drops",
            SortKey::Marks => "ecn marks",
            SortKey::Throughput => "throughput",
            SortKey::Flow => "flow",
        }
    }

    fn next(self) -> SortKey {
        let i = SortKey::ALL.iter().position(|k| *k == self).unwrap_or(0);
        SortKey::ALL[(i + 1) % SortKey::ALL.len()]
    }

    fn value(self, r: &FlowRow) -> u64 {
        match self {
            SortKey::Backlog => r.backlog,
            SortKey::Packets => r.qlen as u64,
            SortKey::Sojourn => r.sojourn_ns,
            SortKey::Drops => r.drops,
            SortKey::Marks => r.ecn_marks,
            SortKey::Throughput => r.throughput_bps,
            SortKey::Flow => r.bucket as u64,
        }
    }
}

/// Which list the arrow keys move in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    /// The flow table.
    Flows,
    /// The qdisc tree.
    Tree,
}

/// What keys currently mean.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Keys are commands (the footer lists them).
    Normal,
    /// The help overlay is shown; any key closes it.
    Help,
    /// The `set` prompt: `rate 50mbit`, `bql off`, `rx-usecs 20`...
    Set {
        /// What has been typed so far.
        input: String,
    },
    /// The root qdisc preset menu, with the highlighted entry.
    Presets {
        /// The highlighted entry.
        selected: usize,
    },
    /// `q` in `bloatbox up`: stop the link and quit? (`y` confirms.)
    ConfirmQuit,
}

/// One flow in one queue as the table shows it: a flow queue of a
/// flow-queueing qdisc, or a flow's frames in a queue that keeps no
/// per-flow state (a FIFO, a band, a default leaf, or, for a flow with no
/// frame in the qdisc, the TX ring or the wire).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowRow {
    /// The qdisc holding the queue (0 for the ring and the wire).
    pub qdisc: Handle,
    /// Which queue: `None` for a flow queue (bucket `bucket` of `qdisc`).
    pub queue: Option<QueueId>,
    /// The flow queue's bucket; for other queues the flow's hash.
    pub bucket: u32,
    /// Where the flow sits, as the table's queue column says it: `1:b`
    /// (flow queue b-1 of qdisc 1:), `root band 1`, `leaf 1:10`, `ring`, ...
    pub queue_label: String,
    /// The same in at most 8 characters where it can be, for the narrow
    /// queue column of an 80-column screen: `band 1`, `1:10`, `8001:b1`.
    pub queue_short: String,
    /// The 5-tuple of one of its frames, if the dump tells it.
    pub flow: Option<FlowKey>,
    /// The classifier's flow hash (what the flow meter is keyed by).
    pub hash: u32,
    /// Bytes queued.
    pub backlog: u64,
    /// Packets queued.
    pub qlen: u32,
    /// The flow's share of its queue's bytes, per mille.
    pub share_permille: u32,
    /// The flow's frames in the TX ring.
    pub ring: u32,
    /// The flow's frames on the wire (the delay line).
    pub wire: u32,
    /// The flow's frames in the driver's requeue slot.
    pub requeued: u32,
    /// The flow's frames held by RX coalescing at the far end.
    pub rx_held: u32,
    /// Sojourn time of the head packet, ns.
    pub sojourn_ns: u64,
    /// DRR deficit or SFQ allot, bytes.
    pub deficit: i64,
    /// CoDel's `count` of the queue.
    pub codel_count: u32,
    /// Whether the queue's CoDel is dropping.
    pub dropping: bool,
    /// Packets dropped from the queue.
    pub drops: u64,
    /// Packets of the queue CE-marked.
    pub ecn_marks: u64,
    /// Delivered bits/s over the last second (the path's flow meter).
    pub throughput_bps: u64,
    /// What the flow meter counted for the flow (drops by reason).
    pub traffic: Option<FlowTraffic>,
    /// What is served before the flow's newest frame in its qdisc: the
    /// frames ahead of it in a queue served in order, or what the round
    /// robin sends first for a flow queue (`Ahead::drr`). None on the wire
    /// and in RX coalescing, where frames do not wait for each other.
    pub ahead: Option<Ahead>,
    /// The time `ahead`, with what the link sends before the qdisc's
    /// frames (the TX ring, the requeue slot), takes to drain at the
    /// direction's delivered rate (the line rate before there is one), ns.
    pub ahead_delay_ns: u64,
    /// When the queue was last seen holding the flow, for a row kept
    /// (dimmed) for `GONE_KEEP_NS` after its queue emptied.
    pub gone_since: Option<Instant>,
    /// A CAKE flow queue's tin, hosts and rotation (`FlowDump::cake`).
    pub cake: Option<CakeFlowInfo>,
}

impl FlowRow {
    /// Takes drops, marks and throughput from the flow meter's `traffic`
    /// (when it counts the flow; else the queue's own counters stay).
    fn set_traffic(&mut self, traffic: Option<FlowTraffic>) {
        if let Some(t) = &traffic {
            self.drops = t.total_drops();
            self.ecn_marks = t.ecn_marks;
            self.throughput_bps = t.rate_bps;
        }
        self.traffic = traffic;
    }

    /// What identifies the row from one snapshot to the next.
    pub fn key(&self) -> (Handle, Option<QueueId>, u32) {
        (self.qdisc, self.queue, self.bucket)
    }
}

/// One qdisc or class of the tree, flattened in display order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeNode {
    /// Nesting level (0 for the root qdisc).
    pub depth: usize,
    /// A class rather than a qdisc.
    pub is_class: bool,
    /// The qdisc kind (of the class's qdisc for a class).
    pub kind: String,
    /// `8001:` for a qdisc, `1:10` for a class (hex, as tc prints them).
    pub id: String,
    /// `root` or `parent 1:10`.
    pub parent: String,
    /// The options as `tc -d` prints them.
    pub options: String,
    /// The generic counters (`tc -s`).
    pub stats: QdiscStats,
    /// The xstats lines, trimmed.
    pub xstats: Vec<String>,
}

/// One point of a direction's time series.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// When the snapshot was taken.
    pub at: Instant,
    /// Highest head-of-queue sojourn among flows, or, for qdiscs without
    /// flow queues, the backlog (qdisc and ring) drained at the line rate.
    pub latency_us: u64,
    /// Frames in the qdisc and the TX ring.
    pub qlen: u64,
    /// Bits/s delivered.
    pub throughput_bps: u64,
    /// Drops and ECN marks during the interval.
    pub drops: u64,
    /// ECN marks during the interval.
    pub marks: u64,
}

/// What an event is about (its colour in the log).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// The link or the qdisc tree changed (rate, delay, ring, a new root...).
    Config,
    /// A CoDel queue entered or left the dropping state.
    Codel,
    /// Drops other than CoDel's, by reason.
    Overflow,
    /// A command typed in the TUI, and its answer.
    Command,
    /// A command that failed.
    Error,
}

/// One line of the event log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// When it happened (snapshot time).
    pub at: Instant,
    /// The direction it concerns, if one.
    pub dir: Option<Dir>,
    /// What it is about.
    pub kind: EventKind,
    /// The line's text.
    pub text: String,
}

/// One tin of a CAKE qdisc, for the flow table's tin lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TinSummary {
    /// The CAKE qdisc's handle.
    pub qdisc: Handle,
    /// The tin's name as tc prints it (`Bulk`, `Best Effort`, `Tin 3`).
    pub name: String,
    /// Its statistics (`TCA_CAKE_TIN_STATS_*`): delays, drops, marks.
    pub stats: CakeTinXstats,
}

/// What a CAKE flow row's detail line adds: its tin, its rotation and the
/// host(s) its isolation mode shares the link between, with the address
/// of the frame at its head and the host slot the dual modes keep
/// (`Bulk, bulk, dual-srchost 10.0.0.1 (host slot 17)`).
pub fn cake_detail(c: &CakeFlowInfo, flow: Option<&FlowKey>) -> String {
    let set = match c.set {
        CakeFlowSet::Sparse => "sparse",
        CakeFlowSet::Bulk => "bulk",
        CakeFlowSet::Decaying => "decaying",
    };
    let addr = |a: fn(&FlowKey) -> &[u8; 16]| flow.map_or_else(|| "?".into(), |k| addr_text(a(k)));
    let (src, dst) = (addr(|k| &k.src), addr(|k| &k.dst));
    let hosts = match c.flow_mode {
        flow_mode::SRC_IP => format!(" {src}"),
        flow_mode::DST_IP => format!(" {dst}"),
        flow_mode::HOSTS => format!(" {src}→{dst}"),
        flow_mode::DUAL_SRC => format!(" {src} (host slot {})", c.srchost),
        flow_mode::DUAL_DST => format!(" {dst} (host slot {})", c.dsthost),
        flow_mode::TRIPLE => format!(
            " src {src} (slot {}) dst {dst} (slot {})",
            c.srchost, c.dsthost
        ),
        _ => String::new(),
    };
    format!(
        "{}, {set}, {}{hosts}",
        tin_name(c.tins.into(), c.tin.into()),
        flow_mode_name(c.flow_mode).unwrap_or("?"),
    )
}

/// What one direction shows, derived from the latest snapshots.
#[derive(Clone, Debug, Default)]
pub struct DirState {
    /// The flow queues the snapshot lists (all of them, or the ones with
    /// the most backlog), sorted by the app's sort key.
    pub flows: Vec<FlowRow>,
    /// The flow queues the daemon's bounded snapshot left out, summed up.
    pub unlisted: FlowSummary,
    /// Their share of the delivered rate: what the listed flows do not
    /// account for, bits/s.
    pub unlisted_tput_bps: u64,
    /// The qdisc tree, flattened in display order.
    pub tree: Vec<TreeNode>,
    /// The time series of the charts, oldest first.
    pub history: VecDeque<Sample>,
    /// The tins of every CAKE qdisc in the tree, in the order tc prints
    /// them.
    pub tins: Vec<TinSummary>,
    /// Delivered bits/s over the last `ACHIEVED_WINDOW_NS`.
    pub achieved_bps: u64,
    /// Whether `Sample::latency_us` comes from flow sojourn times (else it
    /// is estimated from the backlog).
    pub latency_from_flows: bool,
    /// The flows the path's meter lists, and the others summed up.
    pub traffic: Vec<FlowTraffic>,
    /// What the meter counted for the flows it does not track.
    pub other_traffic: FlowTraffic,
    /// Flows (and codel qdiscs, bucket `u32::MAX`) in CoDel's dropping
    /// state, with the flow each queue last held (to name it in the event
    /// log once the queue is empty).
    dropping: HashMap<(Handle, u32), Option<FlowKey>>,
    /// ECN marks counted by the tree at the previous snapshot.
    marks: u64,
    /// Root qdisc and class layout, to notice tree changes.
    signature: String,
    /// The root qdisc's kind and handle, and the path's drops by reason
    /// when it was put in: the root's "dropped by reason" counts from then.
    root: (String, Handle),
    drops_base: Vec<u64>,
}

/// Why the set prompt's input was refused (shown in the status line).
#[derive(Debug, thiserror::Error)]
enum PromptError {
    /// Not two words.
    #[error("set \"{0}\": expected FIELD VALUE with FIELD one of {names}", names = field_names())]
    Usage(String),
    /// A field the prompt does not have.
    #[error("set: unknown field \"{0}\": expected one of {names}", names = field_names())]
    UnknownField(String),
    /// The value refused.
    #[error(transparent)]
    Value(#[from] FieldError),
}

/// The fields the set prompt takes, for its errors.
fn field_names() -> String {
    let names: Vec<&str> = LinkField::ALL.iter().map(|f| f.name()).collect();
    names.join(", ")
}

/// The whole TUI state.
#[derive(Clone, Debug)]
pub struct App {
    /// The latest snapshot (None before the first).
    pub latest: Option<Snapshot>,
    /// Both directions' derived state, by `Dir::index()`.
    pub dirs: [DirState; 2],
    /// The direction shown.
    pub dir: Dir,
    /// Which list the arrow keys move in.
    pub focus: Focus,
    /// What the flow table is sorted by.
    pub sort: SortKey,
    /// Largest first (the default) or smallest first.
    pub sort_desc: bool,
    /// Selected row of the flow table and node of the tree.
    pub flow_sel: usize,
    /// Selected node of the tree.
    pub tree_sel: usize,
    /// Frozen: snapshots are counted but not shown.
    pub paused: bool,
    /// Snapshots received while paused.
    pub skipped: u64,
    /// What keys mean now.
    pub mode: Mode,
    /// The event log, newest last.
    pub events: VecDeque<Event>,
    /// The footer message (errors of the set prompt, hints).
    pub status: Option<String>,
    /// Quitting stops the link (`bloatbox up`): `q` asks first.
    pub quit_stops_link: bool,
    /// The daemon could not be reached at the last attempt (`bloatbox
    /// top` after the daemon exited).
    pub disconnected: bool,
    /// The latency probes' view while they run (`t`), on the snapshots'
    /// clock in seconds; `None` while they are off.
    pub probes: Option<ProbeView>,
}

impl Default for App {
    fn default() -> Self {
        App::new()
    }
}

impl App {
    /// An empty state: nothing received yet, left→right shown, flows focused,
    /// sorted by backlog, largest first.
    pub fn new() -> App {
        App {
            latest: None,
            dirs: Default::default(),
            dir: Dir::LeftToRight,
            focus: Focus::Flows,
            sort: SortKey::Backlog,
            sort_desc: true,
            flow_sel: 0,
            tree_sel: 0,
            paused: false,
            skipped: 0,
            mode: Mode::Normal,
            events: VecDeque::with_capacity(EVENTS_LEN),
            status: None,
            quit_stops_link: false,
            disconnected: false,
            probes: None,
        }
    }

    /// Takes in whether the daemon answered: a change is logged (and the
    /// header says "disconnected" while it lasts).
    pub fn on_connection(&mut self, connected: bool) {
        if connected != self.disconnected {
            return;
        }
        self.disconnected = !connected;
        let at = self.latest.as_ref().map_or(Instant::ZERO, |s| s.bridge.at);
        let text = if connected {
            "re-attached to a daemon: showing its link"
        } else {
            "disconnected: the daemon does not answer (it may have exited); retrying"
        };
        self.log(at, None, EventKind::Error, text.into());
    }

    /// `q`: quit, or in `bloatbox up` ask first.
    fn quit(&mut self) -> Option<Action> {
        if self.quit_stops_link {
            self.mode = Mode::ConfirmQuit;
            None
        } else {
            Some(Action::Quit)
        }
    }

    /// The selected direction's derived state.
    pub fn view(&self) -> &DirState {
        &self.dirs[self.dir.index()]
    }

    /// The selected direction's latest path snapshot.
    pub fn path(&self) -> Option<&PathSnapshot> {
        self.latest.as_ref().map(|s| s.bridge.path(self.dir))
    }

    /// The xstats of the flow queue's pseudo-class (`handle | bucket+1`, as
    /// fq_codel and SFQ number them): fq_codel's `deficit count lastcount
    /// ldelay [dropping drop_next]`, SFQ's `allot`.
    pub fn flow_xstats(&self, row: &FlowRow) -> Option<String> {
        let mut stack = vec![&self.path()?.qdisc];
        while let Some(q) = stack.pop() {
            if q.handle == row.qdisc {
                let classid = row.qdisc | row.bucket.wrapping_add(1);
                let c = q.classes.iter().find(|c| c.classid == classid)?;
                let lines = c
                    .xstats
                    .as_ref()
                    .map(|x| trimmed_lines(&c.kind, x))
                    .unwrap_or_default();
                return Some(lines.join(" ")).filter(|x| !x.is_empty());
            }
            stack.extend(q.children.iter());
        }
        None
    }

    /// Takes in a new snapshot: rates over the interval since the previous
    /// one, history samples, flows, tree and events. Ignored (counted) while
    /// paused.
    pub fn on_snapshot(&mut self, snap: Snapshot) {
        if self.paused {
            self.skipped += 1;
            return;
        }
        for dir in Dir::ALL {
            let prev = self.latest.as_ref().map(|s| s.bridge.path(dir));
            let cur = snap.bridge.path(dir);
            let mut events = Vec::new();
            self.dirs[dir.index()].update(prev, cur, &mut events);
            for (kind, text) in events {
                self.log(cur.at, Some(dir), kind, text);
            }
        }
        let t = snap.taken_at.nanos() as f64 / 1e9;
        self.latest = Some(snap);
        self.resort();
        if self.probes.is_some() {
            let point = QueuePoint::of(t, self);
            if let Some(p) = &mut self.probes {
                p.queue.push(point);
                p.forget_before(t - PROBE_CHART_S);
            }
        }
    }

    /// Takes in the probes' samples (times on the snapshots' clock) and how
    /// many were dropped unread: the percentiles cover the last
    /// `PROBE_STATS_S`, the chart the last `PROBE_CHART_S`. Ignored while
    /// the probes are off or the display is paused.
    pub fn on_probe_samples(
        &mut self,
        samples: Vec<(Probe, crate::load::stats::Sample)>,
        missed: u64,
    ) {
        let Some(p) = self.probes.as_mut().filter(|_| !self.paused) else {
            return;
        };
        p.missed += missed;
        let newest = samples.iter().map(|(_, s)| s.t).fold(f64::MIN, f64::max);
        if newest > f64::MIN {
            p.add_samples(samples, newest - PROBE_STATS_S);
            p.forget_before(newest - PROBE_CHART_S);
        }
    }

    /// Records the daemon's answer to an action in the event log.
    pub fn on_reply(&mut self, action: &Action, reply: Result<String, ControlError>) {
        let at = self.latest.as_ref().map_or(Instant::ZERO, |s| s.bridge.at);
        let (what, dir) = (action.describe(), action.dir());
        if let (Action::Probes(on), Ok(_)) = (action, &reply) {
            self.probes = on.then(ProbeView::default);
        }
        match reply {
            Ok(r) if r.trim().is_empty() => self.log(at, dir, EventKind::Command, what),
            Ok(r) => self.log(at, dir, EventKind::Command, format!("{what}: {}", r.trim())),
            Err(e) => {
                self.status = Some(format!("error: {e}"));
                self.log(at, dir, EventKind::Error, format!("{what} failed: {e}"));
            }
        }
    }

    /// When the link came up (the earlier direction's start) by the latest
    /// snapshot: the zero of the header's `t` and of the event log's times.
    pub fn link_up(&self) -> Option<Instant> {
        let s = self.latest.as_ref()?;
        let up = Dir::ALL
            .iter()
            .filter_map(|d| s.bridge.path(*d).up_since)
            .min();
        Some(up.unwrap_or(s.bridge.at))
    }

    fn log(&mut self, at: Instant, dir: Option<Dir>, kind: EventKind, text: String) {
        if self.events.len() == EVENTS_LEN {
            self.events.pop_front();
        }
        self.events.push_back(Event {
            at,
            dir,
            kind,
            text,
        });
    }

    /// Sorts both directions' flows and keeps the selections in range.
    fn resort(&mut self) {
        let (key, desc) = (self.sort, self.sort_desc);
        for d in &mut self.dirs {
            d.flows.sort_unstable_by(|a, b| {
                let (x, y) = (key.value(a), key.value(b));
                let ord = if desc { y.cmp(&x) } else { x.cmp(&y) };
                ord.then(a.gone_since.is_some().cmp(&b.gone_since.is_some()))
                    .then(a.key().cmp(&b.key()))
            });
        }
        self.clamp_selection();
    }

    fn clamp_selection(&mut self) {
        let v = &self.dirs[self.dir.index()];
        self.flow_sel = self.flow_sel.min(v.flows.len().saturating_sub(1));
        self.tree_sel = self.tree_sel.min(v.tree.len().saturating_sub(1));
    }

    /// Handles one key press; returns what to send to the daemon, if
    /// anything.
    pub fn on_key(&mut self, key: KeyEvent) -> Option<Action> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Some(Action::Quit);
        }
        match std::mem::replace(&mut self.mode, Mode::Normal) {
            Mode::Normal => self.key_normal(key),
            Mode::Help => self.key_help(key),
            Mode::Set { input } => self.key_set(key, input),
            Mode::Presets { selected } => self.key_presets(key, selected),
            Mode::ConfirmQuit => match key.code {
                KeyCode::Char('y') | KeyCode::Char('Y') => Some(Action::Quit),
                _ => None,
            },
        }
    }

    fn key_normal(&mut self, key: KeyEvent) -> Option<Action> {
        self.status = None;
        match key.code {
            KeyCode::Char('q') => return self.quit(),
            KeyCode::Char('?') => self.mode = Mode::Help,
            KeyCode::Char('p') | KeyCode::Char(' ') => {
                self.paused = !self.paused;
                if !self.paused {
                    self.skipped = 0;
                }
            }
            KeyCode::Char('d') => self.select_dir(self.dir.reverse()),
            KeyCode::Char('1') => self.select_dir(Dir::LeftToRight),
            KeyCode::Char('2') => self.select_dir(Dir::RightToLeft),
            KeyCode::Tab | KeyCode::BackTab => {
                self.focus = match self.focus {
                    Focus::Flows => Focus::Tree,
                    Focus::Tree => Focus::Flows,
                }
            }
            KeyCode::Up | KeyCode::Char('k') => self.move_selection(-1),
            KeyCode::Down | KeyCode::Char('j') => self.move_selection(1),
            KeyCode::PageUp => self.move_selection(-(PAGE as i64)),
            KeyCode::PageDown => self.move_selection(PAGE as i64),
            KeyCode::Home => self.move_selection(i64::MIN),
            KeyCode::End => self.move_selection(i64::MAX),
            KeyCode::Char('s') => {
                self.sort = self.sort.next();
                self.resort();
            }
            KeyCode::Char('S') => {
                self.sort_desc = !self.sort_desc;
                self.resort();
            }
            KeyCode::Char('r') => self.prompt("rate "),
            KeyCode::Char('l') => self.prompt("delay "),
            KeyCode::Char('g') => self.prompt("ring "),
            KeyCode::Char('c') => self.prompt("rx-usecs "),
            KeyCode::Char('e') | KeyCode::Char(':') => self.prompt(""),
            KeyCode::Char('b') => {
                let Some(p) = self.path() else {
                    self.status = Some("no snapshot yet: BQL state unknown".into());
                    return None;
                };
                return Some(Action::SetLink {
                    dir: self.dir,
                    field: LinkField::Bql,
                    value: u64::from(!p.params.bql),
                });
            }
            KeyCode::Char('t') => return Some(Action::Probes(self.probes.is_none())),
            KeyCode::Char('m') => {
                let kind = self.path().map(|p| p.qdisc.kind.as_str()).unwrap_or("");
                let selected = self
                    .menu()
                    .iter()
                    .position(|p| p.name() == kind)
                    .unwrap_or(0);
                self.mode = Mode::Presets { selected };
            }
            _ => {}
        }
        None
    }

    fn key_help(&mut self, key: KeyEvent) -> Option<Action> {
        match key.code {
            KeyCode::Char('q') => return self.quit(),
            KeyCode::Char('?') | KeyCode::Esc | KeyCode::Enter => {}
            _ => self.mode = Mode::Help,
        }
        None
    }

    fn key_set(&mut self, key: KeyEvent, mut input: String) -> Option<Action> {
        match key.code {
            KeyCode::Esc => return None,
            KeyCode::Enter => match self.parse_set(&input) {
                Ok((action, hint)) => {
                    self.status = hint.map(|h| format!("warning: {h}"));
                    return Some(action);
                }
                Err(e) => {
                    self.status = Some(e.to_string());
                    return None;
                }
            },
            KeyCode::Backspace => {
                input.pop();
            }
            // Ctrl-U clears the line, as in a shell; other control keys
            // type nothing.
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => input.clear(),
            KeyCode::Char(_) if key.modifiers.contains(KeyModifiers::CONTROL) => {}
            KeyCode::Char(c) if input.len() < 64 => input.push(c),
            _ => {}
        }
        self.mode = Mode::Set { input };
        None
    }

    /// `FIELD VALUE` as typed at the set prompt, with the warning for a
    /// likely typo; or a tc line.
    fn parse_set(&self, input: &str) -> Result<(Action, Option<String>), PromptError> {
        // A tc line goes to the daemon as typed (`tc qdisc change dev
        // left root plug block`), as the qdisc menu's lines do.
        if input.split_whitespace().next() == Some("tc") {
            return Ok((Action::Tc(input.trim().to_string()), None));
        }
        let mut words = input.split_whitespace();
        let (Some(name), Some(text), None) = (words.next(), words.next(), words.next()) else {
            return Err(PromptError::Usage(input.to_string()));
        };
        let field = LinkField::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| PromptError::UnknownField(name.to_string()))?;
        let value = field.parse(text)?;
        let action = Action::SetLink {
            dir: self.dir,
            field,
            value,
        };
        Ok((action, field.hint(text)))
    }

    /// The qdisc menu of the selected direction's device (`Preset::menu`:
    /// multiq only on a multi-queue one).
    pub fn menu(&self) -> Vec<Preset> {
        Preset::menu(self.path().map_or(1, |p| p.params.tx_queues))
    }

    fn key_presets(&mut self, key: KeyEvent, selected: usize) -> Option<Action> {
        let menu = self.menu();
        let n = menu.len();
        let pick = match key.code {
            KeyCode::Esc | KeyCode::Char('m') | KeyCode::Char('q') => return None,
            KeyCode::Up | KeyCode::Char('k') => {
                self.mode = Mode::Presets {
                    selected: (selected + n - 1) % n,
                };
                return None;
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.mode = Mode::Presets {
                    selected: (selected + 1) % n,
                };
                return None;
            }
            KeyCode::Enter => selected,
            // Digits, then letters (`MENU_KEYS`), pick directly.
            KeyCode::Char(c) if Preset::index_of_key(c).is_some_and(|i| i < n) => {
                Preset::index_of_key(c).unwrap_or(selected)
            }
            _ => {
                self.mode = Mode::Presets { selected };
                return None;
            }
        };
        let rate = self.path().map_or(0, |p| p.params.rate_bytes_ps);
        let lines = menu[pick.min(n - 1)].tc_lines(self.dir, rate);
        Some(Action::Tc(lines.join("\n")))
    }

    fn prompt(&mut self, prefill: &str) {
        self.mode = Mode::Set {
            input: prefill.to_string(),
        };
    }

    fn select_dir(&mut self, dir: Dir) {
        if dir != self.dir {
            self.dir = dir;
            self.flow_sel = 0;
            self.tree_sel = 0;
        }
    }

    fn move_selection(&mut self, by: i64) {
        let v = &self.dirs[self.dir.index()];
        let (sel, len) = match self.focus {
            Focus::Flows => (&mut self.flow_sel, v.flows.len()),
            Focus::Tree => (&mut self.tree_sel, v.tree.len()),
        };
        let max = len.saturating_sub(1) as i64;
        *sel = (*sel as i64).saturating_add(by).clamp(0, max) as usize;
    }
}

/// Bits/s delivered over the samples of the last `ACHIEVED_WINDOW_NS`
/// before `now`, each interval's rate weighted by its length.
fn windowed_rate(history: &VecDeque<Sample>, now: Instant) -> u64 {
    let since = now.saturating_sub(ACHIEVED_WINDOW_NS);
    let (mut bits, mut span) = (0u128, 0u128);
    for (later, earlier) in history.iter().rev().zip(history.iter().rev().skip(1)) {
        if earlier.at < since {
            break;
        }
        let dt = later.at.saturating_since(earlier.at) as u128;
        bits += later.throughput_bps as u128 * dt;
        span += dt;
    }
    match (span, history.back()) {
        (0, Some(last)) => last.throughput_bps,
        (0, None) => 0,
        _ => (bits / span) as u64,
    }
}

impl DirState {
    /// Derives everything from the new snapshot `cur` and the previous one.
    fn update(
        &mut self,
        prev: Option<&PathSnapshot>,
        cur: &PathSnapshot,
        events: &mut Vec<(EventKind, String)>,
    ) {
        let dt = prev.map_or(0, |p| cur.at.saturating_since(p.at));
        let per_sec = |delta: u64| -> u64 {
            if dt == 0 {
                0
            } else {
                (delta as u128 * NS_PER_SEC as u128 / dt as u128) as u64
            }
        };
        if let Some(p) = prev {
            config_events(p, cur, events);
            overflow_events(p, cur, events);
        }
        let signature = tree_signature(&cur.qdisc);
        if prev.is_some() && signature != self.signature {
            events.push((
                EventKind::Config,
                format!(
                    "qdisc now {} {} {}",
                    cur.qdisc.kind,
                    handle_id(cur.qdisc.handle, false),
                    qdisc_options(&cur.qdisc).plain
                ),
            ));
        }
        self.signature = signature;
        let root = (cur.qdisc.kind.clone(), cur.qdisc.handle);
        if root != self.root || self.drops_base.len() != cur.counters.drops.len() {
            // A new root qdisc: its drops count from now (the path's
            // counters are the link's, since it came up).
            self.drops_base = match prev {
                Some(p) if !self.root.0.is_empty() => p.counters.drops.to_vec(),
                _ => vec![0; cur.counters.drops.len()],
            };
            self.root = root;
        }

        self.tree.clear();
        flatten(&cur.qdisc, 0, &mut self.tree);
        if let Some(root) = self.tree.first_mut() {
            let by_reason = qdisc_drops_by_reason(cur, &self.drops_base);
            if !by_reason.is_empty() {
                root.xstats
                    .insert(0, format!("dropped by reason: {by_reason}"));
            }
        }
        self.collect_flows(cur);
        self.codel_events(&cur.qdisc, events);

        let marks = cur.qdisc.tree_ecn_marks();
        let bytes_out = prev.map_or(0, |p| {
            cur.counters.bytes_out.saturating_sub(p.counters.bytes_out)
        });
        // This interval's rate, like the flows' (`achieved_bps` is the
        // longer window's).
        let interval_bps = per_sec(bytes_out * 8);
        self.unlisted_tput_bps = if self.unlisted.flows == 0 {
            0
        } else {
            let listed: u64 = self
                .flows
                .iter()
                .filter(|f| f.queue.is_none())
                .map(|f| f.throughput_bps)
                .sum();
            interval_bps.saturating_sub(listed)
        };
        if let Some(p) = prev.filter(|_| dt > 0) {
            let flow_queues = || self.flows.iter().filter(|f| f.queue.is_none());
            self.latency_from_flows = flow_queues().next().is_some() || self.unlisted.flows > 0;
            let latency_us = if self.latency_from_flows {
                let listed = flow_queues().map(|f| f.sojourn_ns).max().unwrap_or(0);
                listed.max(self.unlisted.max_head_sojourn_ns) / 1000
            } else {
                queue_delay_us(cur)
            };
            if self.history.len() == HISTORY_LEN {
                self.history.pop_front();
            }
            self.history.push_back(Sample {
                at: cur.at,
                latency_us,
                qlen: cur.qdisc.stats.qlen as u64 + cur.ring_used as u64,
                throughput_bps: interval_bps,
                drops: cur
                    .counters
                    .total_drops()
                    .saturating_sub(p.counters.total_drops()),
                marks: marks.saturating_sub(self.marks),
            });
        }
        self.achieved_bps = windowed_rate(&self.history, cur.at);
        self.marks = marks;
    }

    /// Rebuilds the flow rows: every flow queue the snapshot lists, every
    /// flow of a queue without per-flow state, each flow found only in the
    /// TX ring or on the wire, and the rows of the previous snapshot whose
    /// queue emptied less than `GONE_KEEP_NS` ago (dimmed). Drops, marks
    /// and throughput come from the path's flow meter where it counts the
    /// flow, else from the flow queue's own counters.
    fn collect_flows(&mut self, cur: &PathSnapshot) {
        let old = std::mem::take(&mut self.flows);
        self.unlisted = FlowSummary::default();
        self.tins.clear();
        self.traffic.clone_from(&cur.flows);
        self.other_traffic = cur.other_flows.clone();
        let mut stack = vec![&cur.qdisc];
        while let Some(q) = stack.pop() {
            self.unlisted.merge(&q.other_flows);
            if let Some(Xstats::Cake(x)) = &q.xstats {
                self.tins
                    .extend(x.tins.iter().enumerate().map(|(i, t)| TinSummary {
                        qdisc: q.handle,
                        name: tin_name(x.tins.len(), i),
                        stats: *t,
                    }));
            }
            for f in &q.flows {
                let class = handle_id(q.handle | f.bucket.wrapping_add(1), true);
                let mut row = FlowRow {
                    qdisc: q.handle,
                    queue: None,
                    bucket: f.bucket,
                    queue_label: match &f.cake {
                        Some(c) => format!("{class} {}", tin_name(c.tins.into(), c.tin.into())),
                        None => class.clone(),
                    },
                    queue_short: class,
                    flow: f.flow,
                    hash: f.hash,
                    backlog: f.backlog,
                    qlen: f.qlen,
                    share_permille: crate::qdisc::dump::permille(f.backlog, q.stats.backlog),
                    ring: 0,
                    wire: 0,
                    requeued: 0,
                    rx_held: 0,
                    sojourn_ns: f.head_sojourn_ns,
                    deficit: f.deficit,
                    codel_count: f.codel_count,
                    dropping: f.codel_dropping,
                    drops: f.drops,
                    ecn_marks: f.ecn_marks,
                    throughput_bps: 0,
                    traffic: None,
                    ahead: f.ahead.clone(),
                    ahead_delay_ns: 0,
                    gone_since: None,
                    cake: f.cake,
                };
                row.set_traffic(f.traffic.clone());
                self.flows.push(row);
            }
            let at = if q.handle == 0 {
                handle_id(q.parent, true)
            } else {
                handle_id(q.handle, false)
            };
            for o in &q.occupancy {
                self.unlisted.merge(&FlowSummary {
                    flows: u64::from(o.others.flows),
                    backlog: o.others.bytes,
                    qlen: u64::from(o.others.packets),
                    max_head_sojourn_ns: o.others.oldest_sojourn_ns,
                    ..FlowSummary::default()
                });
                let label = queue_labels(&at, o.queue);
                self.flows.extend(occupancy_rows(q.handle, o, &label));
            }
            stack.extend(q.children.iter());
        }
        // The link's queues (requeue slot, ring, wire, RX held): counts on
        // the flow's rows, and rows of their own for flows with no frame
        // in the qdisc.
        for o in cur.link_queues() {
            for f in &o.flows {
                let rows = self.flows.iter_mut().filter(|r| r.hash == f.hash);
                let mut found = false;
                for r in rows {
                    found = true;
                    let count = match o.queue {
                        QueueId::Requeued => &mut r.requeued,
                        QueueId::Ring => &mut r.ring,
                        QueueId::Wire => &mut r.wire,
                        _ => &mut r.rx_held,
                    };
                    *count += f.packets;
                }
                if !found {
                    let label = queue_labels("", o.queue);
                    let single = QueueOccupancy {
                        flows: vec![f.clone()],
                        ..o.clone()
                    };
                    self.flows.extend(occupancy_rows(0, &single, &label));
                }
            }
        }
        // Head of line: what is ahead in the queue, then the TX ring, at the
        // rate the direction delivers.
        let rate_bps = match self.achieved_bps {
            0 => cur.params.rate_bytes_ps * 8,
            r => r,
        };
        for r in &mut self.flows {
            // The ring goes before the requeue slot, which goes before the
            // qdisc.
            let before = match r.queue {
                Some(QueueId::Ring | QueueId::Wire | QueueId::RxHeld) => 0,
                Some(QueueId::Requeued) => cur.ring_bytes,
                _ => cur.ring_bytes.saturating_add(cur.requeued_flows.bytes),
            };
            r.ahead_delay_ns = match (&r.ahead, rate_bps) {
                (Some(a), rate) if rate > 0 => {
                    let bits = u128::from(a.bytes.saturating_add(before)) * 8;
                    (bits * u128::from(NS_PER_SEC) / u128::from(rate)) as u64
                }
                _ => 0,
            };
        }
        // Rows whose queue emptied: kept a while, dimmed, with the meter's
        // current rate (not a parked frame's: one frame that a peek took
        // out, a different flow's from one instant to the next).
        let seen: HashSet<_> = self.flows.iter().map(FlowRow::key).collect();
        let gone = old
            .into_iter()
            .filter(|r| !seen.contains(&r.key()) && r.queue != Some(QueueId::Parked));
        for mut r in gone {
            let since = r.gone_since.unwrap_or(cur.at);
            if cur.at.saturating_since(since) >= GONE_KEEP_NS {
                continue;
            }
            let traffic = cur.flows.iter().find(|t| t.hash == r.hash).cloned();
            r.gone_since = Some(since);
            r.backlog = 0;
            r.qlen = 0;
            r.share_permille = 0;
            r.ring = 0;
            r.wire = 0;
            r.requeued = 0;
            r.rx_held = 0;
            r.sojourn_ns = 0;
            r.ahead = None;
            r.ahead_delay_ns = 0;
            r.dropping = false;
            r.throughput_bps = 0;
            r.set_traffic(traffic);
            self.flows.push(r);
        }
    }

    /// Compares CoDel's dropping state with the previous snapshot. When the
    /// snapshot lists only some flows, a dropping flow that drops out of
    /// the listing keeps its state (unknown, not "left") until it is
    /// listed again.
    fn codel_events(&mut self, root: &QdiscDump, events: &mut Vec<(EventKind, String)>) {
        let mut now: HashMap<(Handle, u32), Option<FlowKey>> = self
            .flows
            .iter()
            .filter(|f| f.dropping)
            .map(|f| ((f.qdisc, f.bucket), f.flow))
            .collect();
        if self.unlisted.flows > 0 {
            let listed: HashSet<(Handle, u32)> = self
                .flows
                .iter()
                .filter(|f| f.queue.is_none() && f.gone_since.is_none())
                .map(|f| (f.qdisc, f.bucket))
                .collect();
            now.extend(
                self.dropping
                    .iter()
                    .filter(|(k, _)| k.1 != u32::MAX && !listed.contains(k)),
            );
        }
        let mut stack = vec![root];
        while let Some(q) = stack.pop() {
            if matches!(
                q.xstats,
                Some(Xstats::Codel(CodelXstats { dropping: true, .. }))
            ) {
                now.insert((q.handle, u32::MAX), None);
            }
            stack.extend(q.children.iter());
        }
        let mut entered: Vec<_> = now
            .keys()
            .filter(|k| !self.dropping.contains_key(k))
            .copied()
            .collect();
        let mut left: Vec<_> = self
            .dropping
            .keys()
            .filter(|k| !now.contains_key(k))
            .copied()
            .collect();
        entered.sort_unstable();
        left.sort_unstable();
        if entered.len() + left.len() > CODEL_EVENTS_PER_SNAPSHOT {
            events.push((
                EventKind::Codel,
                format!(
                    "codel: {} queues entered dropping, {} left",
                    entered.len(),
                    left.len()
                ),
            ));
        } else {
            let name = |k: &(Handle, u32), flow: Option<FlowKey>| -> String {
                match (k.1, flow) {
                    (u32::MAX, _) => format!("codel {}", handle_id(k.0, false)),
                    (_, Some(f)) => format!("flow {}", flow_label(&f)),
                    (bucket, None) => format!("{} bucket {bucket}", handle_id(k.0, false)),
                }
            };
            for k in &entered {
                let text = format!("{} entered dropping", name(k, now[k]));
                events.push((EventKind::Codel, text));
            }
            for k in &left {
                let text = format!("{} left dropping", name(k, self.dropping[k]));
                events.push((EventKind::Codel, text));
            }
        }
        self.dropping = now;
    }
}

/// The long and the short label of `queue` of the qdisc named `at`
/// (`root`, `8001:`, `1:10` for a hidden default qdisc; empty for the
/// link's own queues): `root band 1` and `band 1`, `8001: parked` and
/// `parked`, `leaf 1:10` and `1:10`, `ring` and `ring`.
fn queue_labels(at: &str, queue: QueueId) -> (String, String) {
    const SHORT: usize = 8;
    let word = queue.label();
    let long = if at.is_empty() {
        word.clone()
    } else {
        format!("{at} {word}")
    };
    let short = match queue {
        QueueId::Leaf(classid) => return (word, handle_id(classid, true)),
        // The root's queues and the link's go by their own name.
        _ if at.is_empty() || at == "root" => word,
        QueueId::Band(b) => format!("{at}b{b}"),
        _ => {
            let joined = format!("{at}{word}");
            if joined.chars().count() <= SHORT {
                joined
            } else {
                word
            }
        }
    };
    (long, short)
}

/// The rows of the flows in queue `o` of qdisc `qdisc` (the listed ones;
/// the others are added to no row: the table's aggregate row counts them
/// from the queue totals); `label` its long and short label.
fn occupancy_rows<'a>(
    qdisc: Handle,
    o: &'a QueueOccupancy,
    label: &'a (String, String),
) -> impl Iterator<Item = FlowRow> + 'a {
    o.flows.iter().map(move |f| {
        let mut row = FlowRow {
            qdisc,
            queue: Some(o.queue),
            bucket: f.hash,
            queue_label: label.0.clone(),
            queue_short: label.1.clone(),
            flow: Some(f.flow),
            hash: f.hash,
            backlog: f.bytes,
            qlen: f.packets,
            share_permille: f.share_permille,
            ring: 0,
            wire: 0,
            requeued: 0,
            rx_held: 0,
            sojourn_ns: f.oldest_sojourn_ns,
            deficit: 0,
            codel_count: 0,
            dropping: false,
            drops: 0,
            ecn_marks: 0,
            throughput_bps: 0,
            traffic: None,
            // Frames ahead on the wire do not delay it: they propagate
            // side by side; RX coalescing hands them over as one batch.
            ahead: (!matches!(o.queue, QueueId::Wire | QueueId::RxHeld)).then(|| f.ahead.clone()),
            ahead_delay_ns: 0,
            gone_since: None,
            cake: None,
        };
        row.set_traffic(f.traffic.clone());
        row
    })
}

/// Link parameter changes between two snapshots.
fn config_events(p: &PathSnapshot, c: &PathSnapshot, events: &mut Vec<(EventKind, String)>) {
    let (a, b) = (&p.params, &c.params);
    for f in LinkField::ALL {
        let (old, new) = (f.get(a), f.get(b));
        if old != new {
            events.push((
                EventKind::Config,
                format!("{} {} → {}", f.name(), f.show(old), f.show(new)),
            ));
        }
    }
}

/// Drops other than CoDel's during the interval, by reason.
fn overflow_events(p: &PathSnapshot, c: &PathSnapshot, events: &mut Vec<(EventKind, String)>) {
    let parts: Vec<String> = DropReason::ALL
        .iter()
        .filter(|r| **r != DropReason::Codel)
        .filter_map(|r| {
            let n = c.counters.drops[r.index()].saturating_sub(p.counters.drops[r.index()]);
            (n > 0).then(|| format!("{n} {}", r.name()))
        })
        .collect();
    if !parts.is_empty() {
        events.push((EventKind::Overflow, format!("dropped {}", parts.join(", "))));
    }
}

/// The path's drops whose reason lies in the qdisc tree (not the ingress
/// checks nor the buffer pool) since `base` (the counters when the root
/// qdisc was put in): `codel 12, queue_full 3`.
fn qdisc_drops_by_reason(p: &PathSnapshot, base: &[u64]) -> String {
    let outside = [
        DropReason::Runt,
        DropReason::Oversize,
        DropReason::PoolExhausted,
    ];
    DropReason::ALL
        .iter()
        .filter(|r| !outside.contains(r))
        .filter_map(|r| {
            let since = base.get(r.index()).copied().unwrap_or(0);
            let n = p.counters.drops[r.index()].saturating_sub(since);
            (n > 0).then(|| format!("{} {n}", r.name()))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Backlog of the qdisc and ring drained at the line rate, µs.
fn queue_delay_us(p: &PathSnapshot) -> u64 {
    let rate = p.params.rate_bytes_ps;
    if rate == 0 {
        return 0;
    }
    let bytes = p.qdisc.stats.backlog + p.ring_bytes;
    (bytes as u128 * 1_000_000 / rate as u128) as u64
}

/// The kinds, handles and options of the tree (not its counters).
fn tree_signature(q: &QdiscDump) -> String {
    let mut s = format!("{} {:x} {}|", q.kind, q.handle, qdisc_options(q).plain);
    for c in q.classes.iter().filter(|c| c.stats.is_some()) {
        s.push_str(&format!("{:x} {}|", c.classid, class_options(c).plain));
    }
    for ch in &q.children {
        s.push_str(&tree_signature(ch));
    }
    s
}

/// `8001:` for a qdisc handle, `1:10` for a class id (hex, as tc prints).
pub fn handle_id(h: Handle, class: bool) -> String {
    if h == TC_H_ROOT {
        return "root".into();
    }
    let (major, minor) = (h >> 16, h & 0xFFFF);
    if class || minor != 0 {
        format!("{major:x}:{minor:x}")
    } else {
        format!("{major:x}:")
    }
}

fn parent_label(h: Handle) -> String {
    if h == TC_H_ROOT {
        "root".into()
    } else {
        format!("parent {}", handle_id(h, false))
    }
}

/// Appends `q`, its real classes (pseudo-classes of flow queues are shown
/// in the flow table instead) and child qdiscs, depth first.
fn flatten(q: &QdiscDump, depth: usize, out: &mut Vec<TreeNode>) {
    let mut xstats = q
        .xstats
        .as_ref()
        .map(|x| trimmed_lines(&q.kind, x))
        .unwrap_or_default();
    xstats.extend(dualpi2_line(q));
    out.push(TreeNode {
        depth,
        is_class: false,
        kind: q.kind.clone(),
        id: handle_id(q.handle, false),
        parent: parent_label(q.parent),
        options: qdisc_options(q).plain,
        stats: q.stats,
        xstats,
    });
    let classes: Vec<&ClassDump> = q.classes.iter().filter(|c| c.stats.is_some()).collect();
    let mut placed = vec![false; q.children.len()];
    for c in &classes {
        let nested = classes.iter().any(|o| o.classid == c.parent);
        if !nested {
            flatten_class(q, &classes, c, depth + 1, &mut placed, out);
        }
    }
    for (ch, done) in q.children.iter().zip(placed) {
        if !done {
            flatten(ch, depth + 1, out);
        }
    }
}

/// DualPI2's two queues side by side: the probabilities its base one
/// gives each (net/sched/sch_dualpi2.c `must_drop`: the L-queue's k·p',
/// at most 1, the C-queue's p'^2) and their head delays.
fn dualpi2_line(q: &QdiscDump) -> Option<String> {
    let (Some(Xstats::Dualpi2(x)), QdiscOptions::Dualpi2(o)) = (&q.xstats, &q.options) else {
        return None;
    };
    let p = f64::from(x.prob) / f64::from(u32::MAX);
    let k = f64::from(o.coupling.unwrap_or(2));
    Some(format!(
        "L-queue p_L {:.4} delay {}  C-queue p_C {:.4} delay {}",
        (k * p).min(1.0),
        sprint_time(x.delay_l.into()),
        p * p,
        sprint_time(x.delay_c.into())
    ))
}

fn flatten_class(
    q: &QdiscDump,
    classes: &[&ClassDump],
    c: &ClassDump,
    depth: usize,
    placed: &mut [bool],
    out: &mut Vec<TreeNode>,
) {
    let mut xstats = c
        .xstats
        .as_ref()
        .map(|x| trimmed_lines(&c.kind, x))
        .unwrap_or_default();
    if let Some(mode) = htb_mode(c) {
        xstats.push(format!("mode {mode}"));
    }
    out.push(TreeNode {
        depth,
        is_class: true,
        kind: c.kind.clone(),
        id: handle_id(c.classid, true),
        parent: parent_label(c.parent),
        options: class_options(c).plain,
        stats: c.stats.unwrap_or(c.queue),
        xstats,
    });
    // Class ids are unique in a qdisc; the depth bound guards against a
    // malformed dump whose parents form a loop.
    if depth > 16 {
        return;
    }
    for sub in classes.iter().filter(|o| o.parent == c.classid) {
        flatten_class(q, classes, sub, depth + 1, placed, out);
    }
    for (i, ch) in q.children.iter().enumerate() {
        if !placed[i] && (ch.parent == c.classid || c.leaf == Some(ch.handle)) {
            placed[i] = true;
            flatten(ch, depth + 1, out);
        }
    }
}

/// An HTB class's mode as `htb_class_mode` derives it from the signs of
/// its tokens and ctokens (tc does not print it): `cant_send` when ctokens
/// are negative, else `may_borrow` when tokens are, else `can_send`.
fn htb_mode(c: &ClassDump) -> Option<&'static str> {
    let Some(Xstats::HtbClass(x)) = c.xstats else {
        return None;
    };
    Some(if x.ctokens < 0 {
        "cant_send"
    } else if x.tokens < 0 {
        "may_borrow"
    } else {
        "can_send"
    })
}

/// `10.0.0.1:5201→10.0.0.2:40000 tcp` (`FlowKey`'s `Display`).
pub fn flow_label(k: &FlowKey) -> String {
    k.to_string()
}
