//! `bloatbox test` and `bloatbox demo`: for each configuration bring the
//! link up in fresh namespaces, run the RRUL-like test (`load::rrul`), take
//! the daemon's drop and ECN-mark counters, tear the link down; then print a
//! comparison table (`table`), and optionally write the report as JSON
//! (`json`), plots (`plot`) and flent data files (`flent`). With `--tui` the same runs are a lesson on
//! the terminal UI (`lesson`).

pub mod flent;
pub mod json;
pub mod lesson;
pub mod plot;
pub mod table;
#[cfg(test)]
mod testdata;

use std::io::IsTerminal;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::Context;

use crate::config::Config;
use crate::dir::Dir;
use crate::link::transit::TransitSummary;
use crate::live::LiveLink;
use crate::load::feed::ProbeFeed;
use crate::load::rrul::{self, RrulRaw, RrulSpec, RrulSummary, Steer};
use crate::load::tcp::CongestionControl;
use crate::qdisc::dump::QdiscDump;

/// The classic comparison `bloatbox demo` runs, embedded.
pub const DEMO_CONFIGS: [(&str, &str); 3] = [
    (
        "pfifo-fast-deep-ring",
        include_str!("../../configs/pfifo-fast-deep-ring.toml"),
    ),
    ("fq-codel", include_str!("../../configs/fq-codel.toml")),
    (
        "htb-sfq-100mbit",
        include_str!("../../configs/htb-sfq-100mbit.toml"),
    ),
];

/// How each configuration is tested.
#[derive(Clone, Debug)]
pub struct TestOptions {
    /// TCP flows per direction (0 = idle link, probes only).
    pub flows: usize,
    /// Both directions (RRUL) or left→right only.
    pub bidirectional: bool,
    /// Length of each configuration's run, warm-up included.
    pub duration: Duration,
    /// Leading part of each run left out of the numbers.
    pub warmup: Duration,
    /// Congestion control of the TCP flows.
    pub cc: CongestionControl,
    /// `None`: no ICMP ping.
    pub ping_interval: Option<Duration>,
    /// Run a UDP_RR probe alongside.
    pub udp_rr: bool,
    /// Also run the probes marked ECT(1) (L4S), reported apart.
    pub l4s: bool,
    /// Run the scalable (L4S) UDP sender left→right.
    pub scalable: bool,
    /// Let the TCP flows negotiate ECN (net.ipv4.tcp_ecn = 1 in both
    /// namespaces).
    pub ecn: bool,
    /// SCHED_FIFO priority of the datapath thread (as `up --realtime`).
    pub realtime: Option<u8>,
}

impl Default for TestOptions {
    /// RRUL's shape: 4 flows each way, ping every 100 ms, UDP_RR, cubic.
    fn default() -> TestOptions {
        TestOptions {
            flows: 4,
            bidirectional: true,
            duration: Duration::from_secs(12),
            warmup: Duration::from_secs(2),
            cc: CongestionControl::Cubic,
            ping_interval: Some(Duration::from_millis(100)),
            udp_rr: true,
            l4s: false,
            scalable: false,
            ecn: false,
            realtime: None,
        }
    }
}

/// A configuration to test, the name it goes by in the table and the file
/// it was read from (`None`: embedded or made in code).
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Its name in the table: the file's stem, or the embedded config's name.
    pub name: String,
    /// The configuration.
    pub config: Config,
    /// The file it was read from (`None`: embedded or made in code).
    pub file: Option<PathBuf>,
}

impl Candidate {
    /// The configuration in `path`, named by the file's stem.
    pub fn from_file(path: &Path) -> anyhow::Result<Candidate> {
        let config = Config::load(path).map_err(|e| anyhow::anyhow!("{e}"))?;
        let name = path.file_stem().map_or_else(
            || path.display().to_string(),
            |s| s.to_string_lossy().into(),
        );
        Ok(Candidate {
            name,
            config,
            file: Some(path.to_path_buf()),
        })
    }

    /// `cands` with `--set KEY=VALUE` overrides applied in order to each
    /// (as `up` and `run` apply theirs after loading the file).
    pub fn with_overrides(
        mut cands: Vec<Candidate>,
        sets: &[String],
    ) -> anyhow::Result<Vec<Candidate>> {
        for cand in &mut cands {
            for set in sets {
                cand.config
                    .apply_override(set)
                    .with_context(|| format!("--set {set} on configuration {}", cand.name))?;
            }
        }
        Ok(cands)
    }

    /// The embedded demo configurations.
    pub fn demo() -> anyhow::Result<Vec<Candidate>> {
        DEMO_CONFIGS
            .iter()
            .map(|(name, text)| {
                let config = Config::from_str(text, &format!("configs/{name}.toml"))
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                Ok(Candidate {
                    name: name.to_string(),
                    config,
                    file: None,
                })
            })
            .collect()
    }
}

/// The daemon's counters of one direction at the end of a run.
#[derive(Clone, Debug, Default)]
pub struct PathTotals {
    /// Root qdisc kind actually running.
    pub qdisc: String,
    /// Frames the emulated link dropped, every reason.
    pub drops: u64,
    /// ECN CE marks by CoDel-based qdiscs anywhere in the tree.
    pub marks: u64,
    /// Frames lost outside the emulated link: dropped by the sending TAP's
    /// own kernel queue (the daemon did not read in time) plus those the
    /// receiving TAP refused.
    pub tap_drops: u64,
    /// Frames that entered this direction of the link.
    pub frames: u64,
    /// Batches the qdisc handed to the emulated NIC (TX doorbells).
    pub xmit_batches: u64,
    /// The BQL limit at the end, bytes (`None` without BQL): how much the
    /// ring may hold ahead of the qdisc, i.e. queueing no qdisc controls.
    pub bql_limit: Option<u32>,
    /// Transit through this direction (ingress to delivery), all frames:
    /// the one-way delay the link added, queues and propagation.
    pub transit: TransitSummary,
}

impl PathTotals {
    /// TX doorbells per frame: 1 without bulk dequeue, less with it when a
    /// backlog forms.
    pub fn doorbells_per_frame(&self) -> f64 {
        self.xmit_batches as f64 / self.frames.max(1) as f64
    }
}

/// What the datapath thread spent on the whole run (link up to link
/// down, warm-up included).
#[derive(Clone, Copy, Debug, Default)]
pub struct DatapathTotals {
    /// Frames that entered the emulated link, both directions.
    pub frames: u64,
    /// Times `epoll_wait` returned with events.
    pub wakeups: u64,
    /// CPU time of the datapath thread, ns.
    pub cpu_ns: u64,
}

impl DatapathTotals {
    /// Wake-ups of the datapath per frame that entered the link.
    pub fn wakeups_per_frame(&self) -> f64 {
        self.wakeups as f64 / self.frames.max(1) as f64
    }
    /// Datapath CPU time per frame that entered the link, ns.
    pub fn cpu_ns_per_frame(&self) -> f64 {
        self.cpu_ns as f64 / self.frames.max(1) as f64
    }
}

/// One configuration's result.
#[derive(Clone, Debug)]
pub struct ConfigResult {
    /// The configuration's name in the table.
    pub name: String,
    /// The configuration as loaded (the run used private namespace and TAP
    /// names, see `private_names`).
    pub config: Config,
    /// The file it was read from (`None`: embedded or made in code).
    pub config_file: Option<PathBuf>,
    /// What the probes and flows measured after the warm-up.
    pub summary: RrulSummary,
    /// left→right, right→left.
    pub paths: [PathTotals; 2],
    /// The datapath's wake-ups, CPU time and frames over the run.
    pub datapath: DatapathTotals,
    /// Each direction's qdisc tree at the end of the run (left→right,
    /// right→left), with per-queue / per-class counters.
    pub final_qdiscs: [QdiscDump; 2],
    /// Every sample, for the JSON report and the plots.
    pub raw: RrulRaw,
}

/// A whole `bloatbox test` run.
#[derive(Clone, Debug)]
pub struct Report {
    /// How each configuration was tested.
    pub options: TestOptions,
    /// One result per configuration, in the order given.
    pub results: Vec<ConfigResult>,
    /// When the run started.
    pub started: SystemTime,
    /// The host's kernel release (`uname -r`).
    pub kernel_release: String,
}

/// A phase that failed: its configuration's name, its place, and why. The
/// phases after it did not run; those before it ended with their rows.
#[derive(Debug)]
pub struct PhaseFailure {
    /// The configuration's name in the table.
    pub phase: String,
    /// Its place among the phases, from 0.
    pub index: usize,
    /// How many phases there were.
    pub of: usize,
    /// Why it failed.
    pub error: anyhow::Error,
}

impl PhaseFailure {
    /// The error to print after the table of the phases that ended: it
    /// names the phase that failed and says what was kept.
    pub fn into_error(self) -> anyhow::Error {
        let kept = match self.index {
            0 => "no phase ended before it".to_string(),
            1 => "the table above is the one phase that ended before it".to_string(),
            n => format!("the table above is the {n} phases that ended before it"),
        };
        self.error.context(format!(
            "phase {}/{} ({}) failed; {kept}, the phases after it did not run",
            self.index + 1,
            self.of,
            self.phase
        ))
    }
}

/// What a run of phases ended with: the report of the phases that ended
/// (all of them, or those before the one that failed), and the failure.
#[derive(Debug)]
pub struct Outcome {
    /// The phases that ended.
    pub report: Report,
    /// The phase that failed, if one did.
    pub failure: Option<PhaseFailure>,
}

/// `cfg` with namespace and TAP names no other run uses: `tag` makes them
/// unique within this process, the pid across processes.
pub fn private_names(cfg: &Config, tag: usize) -> Config {
    let mut c = cfg.clone();
    let pid = std::process::id() % 100_000;
    c.left.namespace = format!("bbt-{pid}-{tag}-l");
    c.right.namespace = format!("bbt-{pid}-{tag}-r");
    c.left.tap = format!("bt{pid}x{tag}l");
    c.right.tap = format!("bt{pid}x{tag}r");
    c
}

fn ipv4(addr: IpAddr, side: &str) -> anyhow::Result<std::net::Ipv4Addr> {
    match addr {
        IpAddr::V4(a) => Ok(a),
        IpAddr::V6(a) => anyhow::bail!("{side}.ipv4 is {a}: the load test needs an IPv4 address"),
    }
}

/// Why a live test cannot run here (not root), or `None`.
pub fn skip_reason() -> Option<String> {
    crate::netns::require_privileges()
        .err()
        .map(|e| format!("skipped: {e}"))
}

/// Brings `cand` up under private names, runs the test, tears down (also on
/// error). `progress` is called about every 100 ms with the seconds since
/// the load started and the running link (whose control socket a caller may
/// use to change the link mid-run); it stops the run by returning false.
pub fn run_one(
    cand: &Candidate,
    tag: usize,
    opts: &TestOptions,
    progress: &mut dyn FnMut(f64, &LiveLink) -> bool,
) -> anyhow::Result<ConfigResult> {
    run_one_steered(cand, tag, opts, None, &mut |t, link| {
        if progress(t, link) {
            Steer::Continue
        } else {
            Steer::Abort
        }
    })
}

/// `run_one` with the probes' samples also pushed into `feed` as they are
/// taken, and a `progress` that may also end the run early keeping what
/// was measured (`Steer::EndNow`: the result covers the load up to then).
pub fn run_one_steered(
    cand: &Candidate,
    tag: usize,
    opts: &TestOptions,
    feed: Option<ProbeFeed>,
    progress: &mut dyn FnMut(f64, &LiveLink) -> Steer,
) -> anyhow::Result<ConfigResult> {
    let cfg = private_names(&cand.config, tag);
    let spec = RrulSpec {
        left_ns: cfg.left.namespace.clone(),
        right_ns: cfg.right.namespace.clone(),
        left_ip: ipv4(cfg.left.ipv4.addr, "left")?,
        right_ip: ipv4(cfg.right.ipv4.addr, "right")?,
        flows_up: opts.flows,
        flows_down: if opts.bidirectional { opts.flows } else { 0 },
        cc: opts.cc,
        duration: opts.duration,
        warmup: opts.warmup,
        ping_interval: opts.ping_interval,
        udp_rr: opts.udp_rr,
        l4s: opts.l4s,
        scalable: opts.scalable,
        ecn: opts.ecn,
        feed,
    };
    let link = LiveLink::start(&cfg, opts.realtime)
        .with_context(|| format!("bringing up {}", cand.name))?;
    let raw = rrul::run(&spec, &mut |t| progress(t, &link));
    // Before teardown: the sending TAPs' queue drops (left TAP sends L→R).
    let sender_drops = [&cfg.left, &cfg.right]
        .map(|e| crate::netns::tap_tx_dropped(&e.namespace, &e.tap).unwrap_or(0));
    let last = link.stop();
    let raw = raw.with_context(|| format!("testing {}", cand.name))?;
    let last = last?;
    let paths = Dir::ALL.map(|d| {
        let p = last.bridge.path(d);
        PathTotals {
            qdisc: p.qdisc.kind.clone(),
            drops: p.counters.total_drops(),
            marks: p.qdisc.tree_ecn_marks(),
            tap_drops: sender_drops[d.index()]
                + match d {
                    Dir::LeftToRight => last.right_port.tx_full_drops,
                    Dir::RightToLeft => last.left_port.tx_full_drops,
                },
            frames: p.counters.frames_in,
            xmit_batches: p.counters.xmit_batches,
            bql_limit: p.bql_limit,
            transit: p.transit.clone(),
        }
    });
    let datapath = DatapathTotals {
        frames: paths.iter().map(|p| p.frames).sum(),
        wakeups: last.wakeups.total,
        cpu_ns: last.wakeups.cpu_ns,
    };
    Ok(ConfigResult {
        name: cand.name.clone(),
        config: cand.config.clone(),
        config_file: cand.file.clone(),
        summary: raw.summary(opts.warmup.as_secs_f64()),
        paths,
        datapath,
        final_qdiscs: Dir::ALL.map(|d| last.bridge.path(d).qdisc.clone()),
        raw,
    })
}

/// The release as `uname -r` prints it (proc(5): the same string).
fn kernel_release() -> anyhow::Result<String> {
    Ok(std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .context("reading /proc/sys/kernel/osrelease")?
        .trim()
        .to_string())
}

/// Runs every candidate in turn, with a progress line on a terminal. A
/// phase that fails ends the run: the outcome holds the phases that ended
/// before it, and the failure. SIGINT, SIGTERM and SIGHUP stop the run
/// cleanly (threads joined, link torn down) as a failure of the phase
/// they interrupt.
pub fn run_all(cands: &[Candidate], opts: &TestOptions) -> anyhow::Result<Outcome> {
    // Before any thread exists, so that all inherit the blocked mask.
    let mut signals = crate::netns::TerminationSignals::block()?;
    let started = SystemTime::now();
    let kernel_release = kernel_release()?;
    let tty = std::io::stderr().is_terminal();
    let total = opts.duration.as_secs_f64();
    let mut results = Vec::new();
    let mut failure = None;
    for (i, c) in cands.iter().enumerate() {
        let head = format!("[{}/{}] {}", i + 1, cands.len(), c.name);
        if !tty {
            crate::errln!("{head}: {total:.0} s");
        }
        let bar = tty.then(|| crate::progress::start(&head, total));
        let mut progress = |t: f64, _: &LiveLink| {
            if let Some(sig) = signals.wait(0) {
                tracing::warn!(
                    "stopping after signal {}",
                    crate::netns::TerminationSignals::name(sig)
                );
                return false;
            }
            if let Some(bar) = &bar {
                bar.set(t);
            }
            true
        };
        let r = run_one(c, i, opts, &mut progress);
        if let Some(bar) = bar {
            bar.finish();
        }
        match r {
            Ok(r) => results.push(r),
            Err(error) => {
                failure = Some(PhaseFailure {
                    phase: c.name.clone(),
                    index: i,
                    of: cands.len(),
                    error,
                });
                break;
            }
        }
    }
    Ok(Outcome {
        report: Report {
            options: opts.clone(),
            results,
            started,
            kernel_release,
        },
        failure,
    })
}

impl Report {
    /// Writes the report as JSON (`json`; docs/report.schema.json).
    pub fn write_json(&self, path: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(&json::ReportJson::of(self)?)?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
    }

    /// Writes the plots (`plot::charts`) into `dir`, each as SVG and PNG;
    /// returns their paths.
    pub fn write_plots(&self, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut written = Vec::new();
        for chart in plot::charts(self) {
            written.extend(chart.write(dir)?);
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_its_phase_and_what_was_kept() {
        let f = |index| PhaseFailure {
            phase: "fq-codel".into(),
            index,
            of: 3,
            error: anyhow::anyhow!("no route"),
        };
        assert_eq!(
            format!("{:#}", f(1).into_error()),
            "phase 2/3 (fq-codel) failed; the table above is the one phase that ended \
             before it, the phases after it did not run: no route"
        );
        assert!(format!("{:#}", f(2).into_error()).contains("the 2 phases that ended"));
        assert!(format!("{:#}", f(0).into_error()).contains("no phase ended before it"));
    }

    #[test]
    fn demo_configs_parse_and_private_names_are_unique_and_fit_a_tap() {
        let demo = Candidate::demo().unwrap();
        assert_eq!(demo.len(), 3);
        let a = private_names(&demo[0].config, 0);
        let b = private_names(&demo[0].config, 11);
        assert_ne!(a.left.namespace, b.left.namespace);
        assert_ne!(a.left.namespace, a.right.namespace);
        for t in [&a.left.tap, &a.right.tap, &b.left.tap, &b.right.tap] {
            assert!(t.len() <= 15, "{t}");
        }
        assert_ne!(a.left.tap, b.left.tap);
    }
}
