//! The data behind `tc -s -d qdisc show` and `tc -s -d class show`: a plain,
//! thread-safe snapshot of a qdisc tree. Each discipline renders its own option
//! and xstats text exactly as iproute2 prints it (plain and `-d`), plus the
//! same values as JSON for `-j`; `crate::tc::show` lays the lines out. The TUI
//! and the control socket read these snapshots and never the live qdiscs.

use super::{Handle, QdiscStats};
use serde_json::{Map, Value};

/// One qdisc, its classes and its child qdiscs.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct QdiscDump {
    pub kind: String,
    pub handle: Handle,
    pub parent: Handle,
    /// Option text after `refcnt N ` without `-d`, e.g.
    /// `limit 10240p flows 1024 quantum 1514 ...` (no trailing space).
    pub options: String,
    /// The same with `-d`.
    pub options_detail: String,
    /// The options as tc -j prints them under "options".
    pub options_json: Map<String, Value>,
    pub stats: QdiscStats,
    /// xstats lines as printed, each with its leading spaces, no newline.
    pub xstats: Vec<String>,
    /// xstats as tc -j prints them under "xstats" (empty: none).
    pub xstats_json: Map<String, Value>,
    pub classes: Vec<ClassDump>,
    pub children: Vec<QdiscDump>,
    /// Per-flow rows for the TUI (flow-queueing disciplines only).
    pub flows: Vec<FlowDump>,
}

/// One class (HTB/QFQ/TBF/mq classes, SFQ/fq_codel per-flow pseudo-classes).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ClassDump {
    pub kind: String,
    pub classid: Handle,
    pub parent: Handle,
    /// `leaf H:` is printed when the attached qdisc has a non-zero handle.
    pub leaf: Option<Handle>,
    pub options: String,
    pub options_detail: String,
    pub options_json: Map<String, Value>,
    /// `None` for pseudo-classes that report no byte counters (their block
    /// starts with ` (dropped 0, overlimits 0 requeues 0) `).
    pub stats: Option<QdiscStats>,
    /// Queue stats for pseudo-classes (backlog/qlen/drops of the flow).
    pub queue: QdiscStats,
    pub xstats: Vec<String>,
    pub xstats_json: Map<String, Value>,
}

/// A flow queue as the TUI shows it.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct FlowDump {
    pub bucket: u32,
    pub flow: Option<crate::packet::FlowKey>,
    pub backlog: u64,
    pub qlen: u32,
    /// Sojourn time of the head frame, ns.
    pub head_sojourn_ns: u64,
    /// DRR deficit or SFQ allot.
    pub deficit: i64,
    pub codel_count: u32,
    pub codel_dropping: bool,
    pub drops: u64,
    pub ecn_marks: u64,
    pub sent_bytes: u64,
}
