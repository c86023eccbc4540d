//! Every counter of a `LiveSnapshot` as OpenMetrics text (which Prometheus
//! scrapes as is), and the two ways to export it while `bloatbox up` runs:
//! - `MetricsServer`: `GET /metrics` over HTTP on a loopback address (a
//!   non-loopback one only when explicitly allowed);
//! - `MetricsFile`: a file rewritten atomically (temporary file + rename)
//!   every period.
//!
//! Both read the datapath's snapshot slot, never the datapath itself, so a
//! slow scraper cannot hold it up. `bloatbox metrics` prints the same text
//! through the control socket.
//!
//! Names carry the `bloatbox_` prefix; counters end in `_total`. Labels:
//! `direction` (`left_to_right`, `right_to_left`), `reason` (the
//! `DropReason` names), `handle`/`parent`/`kind` for qdiscs, `classid`/
//! `parent`/`kind` for classes, `port` (`left`, `right`), `quantile`.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::datapath::{LiveSnapshot, SnapshotReader};
use crate::dir::Dir;
use crate::packet::DropReason;
use crate::qdisc::dump::QdiscDump;
use crate::qdisc::QdiscStats;
use crate::tc::show::tc_handle;

/// The HTTP Content-Type of the text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

type Labels = Vec<(String, String)>;

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A family with its name and help text.
type Named<M> = (&'static str, &'static str, Family<Labels, M>);

/// Gauges hold floats (seconds, and counts too large for an i64).
type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// The family called `name` in `list`, added on first use.
fn family<'a, M: Default>(
    list: &'a mut Vec<Named<M>>,
    name: &'static str,
    help: &'static str,
) -> &'a Family<Labels, M> {
    let at = match list.iter().position(|c| c.0 == name) {
        Some(i) => i,
        None => {
            list.push((name, help, Family::default()));
            list.len() - 1
        }
    };
    &list[at].2
}

/// Registers families by name as their rows come.
struct Families {
    registry: Registry,
    counters: Vec<Named<Counter>>,
    gauges: Vec<Named<FloatGauge>>,
}

impl Families {
    fn counter(&mut self, name: &'static str, help: &'static str, l: Labels, v: u64) {
        family(&mut self.counters, name, help)
            .get_or_create(&l)
            .inc_by(v);
    }

    fn gauge(&mut self, name: &'static str, help: &'static str, l: Labels, v: f64) {
        family(&mut self.gauges, name, help)
            .get_or_create(&l)
            .set(v);
    }

    /// One counter per `(name, help, value)` row, all labelled `l`.
    fn counters(&mut self, l: &Labels, rows: &[(&'static str, &'static str, u64)]) {
        for &(name, help, v) in rows {
            self.counter(name, help, l.clone(), v);
        }
    }

    /// One gauge per `(name, help, value)` row, all labelled `l`.
    fn gauges(&mut self, l: &Labels, rows: &[(&'static str, &'static str, f64)]) {
        for &(name, help, v) in rows {
            self.gauge(name, help, l.clone(), v);
        }
    }

    fn qdisc_stats(&mut self, what: &'static str, l: &Labels, s: &QdiscStats) {
        let (bytes, packets, drops, overlimits, requeues, backlog, qlen) = match what {
            "qdisc" => QDISC_NAMES,
            _ => CLASS_NAMES,
        };
        self.counter(bytes.0, bytes.1, l.clone(), s.bytes);
        self.counter(packets.0, packets.1, l.clone(), s.packets);
        self.counter(drops.0, drops.1, l.clone(), s.drops);
        self.counter(overlimits.0, overlimits.1, l.clone(), s.overlimits);
        self.counter(requeues.0, requeues.1, l.clone(), s.requeues);
        self.gauge(backlog.0, backlog.1, l.clone(), s.backlog as f64);
        self.gauge(qlen.0, qlen.1, l.clone(), f64::from(s.qlen));
    }

    fn qdisc_tree(&mut self, dir: Dir, q: &QdiscDump) {
        let (handle, parent) = (tc_handle(q.handle), parent_name(q.parent));
        let l = labels(&[
            ("direction", dir.name()),
            ("handle", &handle),
            ("parent", &parent),
            ("kind", &q.kind),
        ]);
        self.qdisc_stats("qdisc", &l, &q.stats);
        for c in &q.classes {
            // Pseudo-classes (per-flow rows) have no counters of their own.
            let Some(stats) = &c.stats else { continue };
            let (classid, parent) = (tc_handle(c.classid), parent_name(c.parent));
            let l = labels(&[
                ("direction", dir.name()),
                ("classid", &classid),
                ("parent", &parent),
                ("kind", &c.kind),
            ]);
            self.qdisc_stats("class", &l, stats);
        }
        for child in &q.children {
            self.qdisc_tree(dir, child);
        }
    }

    fn encode(mut self) -> String {
        for (name, help, fam) in self.counters.drain(..) {
            self.registry.register(name, help, fam);
        }
        for (name, help, fam) in self.gauges.drain(..) {
            self.registry.register(name, help, fam);
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        sort_samples(&text)
    }
}

/// The text with the samples of each family in label order (the encoder
/// writes them in hash order), so that equal counters give equal text.
fn sort_samples(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut samples: Vec<&str> = Vec::new();
    let flush = |samples: &mut Vec<&str>, out: &mut String| {
        samples.sort_unstable();
        for s in samples.drain(..) {
            out.push_str(s);
            out.push('\n');
        }
    };
    for line in text.lines() {
        if line.starts_with('#') {
            flush(&mut samples, &mut out);
            out.push_str(line);
            out.push('\n');
        } else {
            samples.push(line);
        }
    }
    flush(&mut samples, &mut out);
    out
}

type Names = (&'static str, &'static str);
const QDISC_NAMES: (Names, Names, Names, Names, Names, Names, Names) = (
    (
        "qdisc_sent_bytes",
        "Bytes a qdisc sent (tc -s: Sent N bytes)",
    ),
    ("qdisc_sent_packets", "Packets a qdisc sent"),
    ("qdisc_dropped", "Packets a qdisc dropped"),
    (
        "qdisc_overlimits",
        "Times a qdisc was over its limit (throttled)",
    ),
    ("qdisc_requeues", "Packets requeued to a qdisc"),
    ("qdisc_backlog_bytes", "Bytes queued in a qdisc"),
    ("qdisc_backlog_packets", "Packets queued in a qdisc"),
);
const CLASS_NAMES: (Names, Names, Names, Names, Names, Names, Names) = (
    ("class_sent_bytes", "Bytes a class sent"),
    ("class_sent_packets", "Packets a class sent"),
    ("class_dropped", "Packets a class dropped"),
    ("class_overlimits", "Times a class was over its rate"),
    ("class_requeues", "Packets requeued to a class"),
    ("class_backlog_bytes", "Bytes queued in a class"),
    ("class_backlog_packets", "Packets queued in a class"),
);

fn parent_name(h: crate::qdisc::Handle) -> String {
    if h == crate::qdisc::TC_H_ROOT {
        "root".into()
    } else {
        tc_handle(h)
    }
}

/// The snapshot as OpenMetrics text (ends with `# EOF`).
pub fn render(snap: &LiveSnapshot) -> String {
    let mut f = Families {
        registry: Registry::with_prefix("bloatbox"),
        counters: Vec::new(),
        gauges: Vec::new(),
    };
    for dir in Dir::ALL {
        let p = snap.bridge.path(dir);
        let (c, t) = (&p.counters, &p.transit);
        let d = labels(&[("direction", dir.name())]);
        f.counters(
            &d,
            &[
                ("frames_in", "Frames that entered the link", c.frames_in),
                ("bytes_in", "Bytes that entered the link", c.bytes_in),
                ("frames_out", "Frames the link delivered", c.frames_out),
                ("bytes_out", "Bytes the link delivered", c.bytes_out),
                (
                    "duplicated",
                    "Extra copies made by the duplication impairment",
                    c.duplicated,
                ),
                (
                    "corrupted",
                    "Frames delivered with a flipped bit",
                    c.corrupted,
                ),
                (
                    "transit_frames",
                    "Delivered frames whose transit time was recorded",
                    t.count,
                ),
                (
                    "xmit_batches",
                    "Batches the qdisc handed to the emulated NIC (doorbells)",
                    c.xmit_batches,
                ),
            ],
        );
        for (q, v) in [
            ("0", t.min_ns),
            ("0.5", t.p50_ns),
            ("0.9", t.p90_ns),
            ("0.99", t.p99_ns),
            ("0.999", t.p999_ns),
            ("1", t.max_ns),
        ] {
            f.gauge(
                "transit_seconds",
                "Transit time of delivered frames through the link, ingress to delivery",
                labels(&[("direction", dir.name()), ("quantile", q)]),
                v as f64 / 1e9,
            );
        }
        for r in DropReason::ALL {
            let l = labels(&[("direction", dir.name()), ("reason", r.name())]);
            f.counter(
                "drops",
                "Frames the link dropped, by reason",
                l,
                c.drops[r.index()],
            );
        }
        f.counter(
            "requeues",
            "Times the driver put frames back (NETDEV_TX_BUSY)",
            d.clone(),
            p.requeues,
        );
        f.gauges(
            &d,
            &[
                (
                    "held_frames",
                    "Frames inside the link (qdisc, ring, wire, delay, RX)",
                    p.held as f64,
                ),
                (
                    "requeued_frames",
                    "Frames the driver put back, waiting to be resent",
                    f64::from(p.requeued),
                ),
                (
                    "ring_used_descriptors",
                    "TX ring descriptors in use",
                    f64::from(p.ring_used),
                ),
                (
                    "ring_size_descriptors",
                    "TX ring size",
                    f64::from(p.ring_size),
                ),
                ("ring_bytes", "Bytes in the TX ring", p.ring_bytes as f64),
            ],
        );
        if let (Some(limit), Some(inflight)) = (p.bql_limit, p.bql_inflight) {
            f.gauges(
                &d,
                &[
                    ("bql_limit_bytes", "BQL limit", f64::from(limit)),
                    (
                        "bql_inflight_bytes",
                        "BQL bytes in flight",
                        f64::from(inflight),
                    ),
                ],
            );
        }
        f.gauges(
            &d,
            &[
                (
                    "on_wire_frames",
                    "Frames posted to the NIC, not yet departed",
                    f64::from(p.on_wire),
                ),
                (
                    "in_flight_frames",
                    "Frames in propagation",
                    f64::from(p.in_flight),
                ),
                (
                    "rx_held_frames",
                    "Frames held by RX coalescing",
                    f64::from(p.rx_held),
                ),
                (
                    "link_rate_bytes_per_second",
                    "Line rate (0: unlimited)",
                    p.params.rate_bytes_ps as f64,
                ),
                (
                    "link_delay_seconds",
                    "Propagation delay",
                    p.params.delay_ns as f64 / 1e9,
                ),
            ],
        );
        f.qdisc_tree(dir, &p.qdisc);
        if let Some(cap) = &snap.bridge.capture {
            let cap = cap[dir.index()];
            f.counters(
                &d,
                &[
                    (
                        "capture_records",
                        "Records written to the capture file",
                        cap.captured,
                    ),
                    (
                        "capture_drops",
                        "Capture records lost because the writer fell behind",
                        cap.dropped,
                    ),
                    (
                        "capture_write_errors",
                        "Capture records lost to write errors",
                        cap.write_errors,
                    ),
                ],
            );
        }
    }
    for (l, [seconds, samples], help, samples_help) in [
        (
            &snap.lateness,
            ["wakeup_lateness_seconds", "wakeup_lateness_samples"],
            "Datapath timer wake-up lateness (time woken minus deadline)",
            "Timer wake-ups measured for lateness",
        ),
        (
            &snap.release_lateness,
            ["release_lateness_seconds", "release_lateness_samples"],
            "How late frames were written (write time minus the link's delivery time)",
            "Frames measured for release lateness",
        ),
    ] {
        for (q, v) in [
            ("0.5", l.p50_ns),
            ("0.99", l.p99_ns),
            ("0.999", l.p999_ns),
            ("1", l.max_ns),
        ] {
            let lab = labels(&[("quantile", q)]);
            f.gauge(seconds, help, lab, v as f64 / 1e9);
        }
        f.counter(samples, samples_help, Vec::new(), l.samples);
    }
    let none = Vec::new();
    let w = &snap.wakeups;
    f.counters(
        &none,
        &[
            ("wakeups", "Datapath wake-ups", w.total),
            (
                "timer_wakeups",
                "Datapath wake-ups by the deadline timer",
                w.timer,
            ),
            ("io_wakeups", "Datapath wake-ups by a readable port", w.io),
            (
                "spun_deadlines",
                "Deadlines within spin_us met by spinning, without the timer",
                w.spun,
            ),
            (
                "busy_polls",
                "Datapath loop iterations that polled instead of sleeping (busy_poll_us)",
                w.polls,
            ),
        ],
    );
    for (port, c) in [("left", &snap.left_port), ("right", &snap.right_port)] {
        f.counters(
            &labels(&[("port", port)]),
            &[
                ("port_rx_frames", "Frames read from a TAP", c.rx_frames),
                ("port_rx_bytes", "Bytes read from a TAP", c.rx_bytes),
                ("port_tx_frames", "Frames written to a TAP", c.tx_frames),
                ("port_tx_bytes", "Bytes written to a TAP", c.tx_bytes),
                (
                    "port_tx_full_drops",
                    "Frames dropped because the TAP was full",
                    c.tx_full_drops,
                ),
                ("port_rx_errors", "TAP read errors", c.rx_errors),
                ("port_tx_errors", "TAP write errors", c.tx_errors),
            ],
        );
    }
    f.counter(
        "pool_refused",
        "Buffer requests refused at the pool's cap",
        Vec::new(),
        snap.pool.refused,
    );
    f.gauges(
        &none,
        &[
            (
                "datapath_cpu_seconds",
                "CPU time the datapath thread has used",
                w.cpu_ns as f64 / 1e9,
            ),
            (
                "snapshot_time_seconds",
                "CLOCK_MONOTONIC time the counters were taken at",
                snap.at.nanos() as f64 / 1e9,
            ),
            (
                "pool_buffers_in_use",
                "Frame buffers in use",
                snap.pool.in_use as f64,
            ),
        ],
    );
    f.encode()
}

/// The latest snapshot's text, or why there is none yet.
fn current(snapshots: &SnapshotReader) -> Option<String> {
    snapshots.latest().map(|s| render(&s))
}

/// Longest request head read, bytes.
const MAX_HEAD: u64 = 8192;

/// How long a client may take to send its request or read the reply.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// `GET /metrics` over HTTP/1.x, one connection at a time (each bounded by
/// `CLIENT_TIMEOUT`), on its own thread. Dropping it stops the thread.
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// A loopback address, or any with `allow_remote` (the counters show the
/// link's traffic to whoever connects).
pub fn check_listen_addr(addr: SocketAddr, allow_remote: bool) -> io::Result<()> {
    if !addr.ip().is_loopback() && !allow_remote {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "--metrics-listen {addr}: not a loopback address; expected e.g. 127.0.0.1:9464 or [::1]:9464; fix: use a loopback address, or add --metrics-allow-remote to serve other hosts"
            ),
        ));
    }
    Ok(())
}

impl MetricsServer {
    /// Binds `addr` (see `check_listen_addr`).
    pub fn start(
        addr: SocketAddr,
        allow_remote: bool,
        snapshots: SnapshotReader,
    ) -> io::Result<MetricsServer> {
        check_listen_addr(addr, allow_remote)?;
        let listener = TcpListener::bind(addr)
            .map_err(|e| io::Error::new(e.kind(), format!("--metrics-listen {addr}: {e}")))?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("bloatbox-metrics".into())
                .spawn(move || {
                    crate::privilege::drop_all_in_helper("metrics");
                    for conn in listener.incoming() {
                        if stop.load(Ordering::SeqCst) {
                            return;
                        }
                        if let Ok(stream) = conn {
                            if let Err(e) = serve(stream, &snapshots) {
                                tracing::debug!("metrics client: {e}");
                            }
                        }
                    }
                })?
        };
        Ok(MetricsServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The address bound (the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept.
        let _ = TcpStream::connect_timeout(&self.addr, CLIENT_TIMEOUT);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a request line asks for: (status line, content type, body).
fn respond(request_line: &str, snapshots: &SnapshotReader) -> (&'static str, &'static str, String) {
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    const TEXT: &str = "text/plain; charset=utf-8";
    match (method, path) {
        ("GET" | "HEAD", "/metrics") => match current(snapshots) {
            Some(text) => ("200 OK", CONTENT_TYPE, text),
            None => (
                "503 Service Unavailable",
                TEXT,
                "no snapshot yet: the datapath is starting, retry in a moment\n".into(),
            ),
        },
        ("GET" | "HEAD", "/") => (
            "200 OK",
            TEXT,
            "bloatbox: the counters are at /metrics\n".into(),
        ),
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            TEXT,
            format!("{path}: not found; the counters are at /metrics\n"),
        ),
        _ => (
            "405 Method Not Allowed",
            TEXT,
            "only GET /metrics is served\n".into(),
        ),
    }
}

fn serve(stream: TcpStream, snapshots: &SnapshotReader) -> io::Result<()> {
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let mut reader = BufReader::new(io::Read::take(&stream, MAX_HEAD));
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // The rest of the head (headers) is read and ignored.
    let mut line = String::new();
    while reader.read_line(&mut line)? > 0 && line.trim_end() != "" {
        line.clear();
    }
    let (status, ctype, body) = respond(&request_line, snapshots);
    let head_only = request_line.starts_with("HEAD ");
    let mut out = &stream;
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    if !head_only {
        out.write_all(body.as_bytes())?;
    }
    out.flush()
}

/// Rewrites a file with the text every period on its own thread (write to
/// `PATH.tmp`, then rename: a reader never sees half a file). Dropping it
/// writes a last time and stops the thread.
pub struct MetricsFile {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsFile {
    pub fn start(
        path: &Path,
        period: Duration,
        snapshots: SnapshotReader,
    ) -> io::Result<MetricsFile> {
        if period.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "--metrics-period 0: expected a period above zero, e.g. 1s",
            ));
        }
        let path = path.to_path_buf();
        // Fail now, not on the thread, if the place is not writable.
        write_atomically(&path, "# EOF\n")?;
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("bloatbox-metrics-file".into())
            .spawn(move || {
                crate::privilege::drop_all_in_helper("metrics file");
                file_loop(&path, period, &snapshots, &rx)
            })?;
        Ok(MetricsFile {
            stop: Some(tx),
            thread: Some(thread),
        })
    }
}

impl Drop for MetricsFile {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Writes `text` to `path` through a temporary file and a rename.
pub fn write_atomically(path: &Path, text: &str) -> io::Result<()> {
    let tmp = tmp_path(path);
    let named = |e: io::Error| {
        io::Error::new(
            e.kind(),
            format!(
                "--metrics-file {}: {e}; fix: choose a writable path",
                path.display()
            ),
        )
    };
    std::fs::write(&tmp, text).map_err(named)?;
    std::fs::rename(&tmp, path).map_err(named)
}

fn file_loop(path: &Path, period: Duration, snapshots: &SnapshotReader, stop: &Receiver<()>) {
    let mut failed = false;
    loop {
        let stopping = !matches!(stop.recv_timeout(period), Err(RecvTimeoutError::Timeout));
        if let Some(text) = current(snapshots) {
            match write_atomically(path, &text) {
                Ok(()) => failed = false,
                // Said once per run of failures.
                Err(e) if !failed => {
                    tracing::error!("{e}");
                    failed = true;
                }
                Err(_) => {}
            }
        }
        if stopping {
            return;
        }
    }
}

/// Parses OpenMetrics text strictly: every line is `# HELP`, `# TYPE`,
/// `# UNIT`, the final `# EOF`, or `NAME{LABELS} VALUE` with a name declared
/// by a `# TYPE` line before it. Returns each sample (`NAME{LABELS}` as
/// written) with its value; the error names the line.
pub fn parse_samples(text: &str) -> Result<Vec<(String, f64)>, String> {
    let mut declared: Vec<String> = Vec::new();
    let mut samples = Vec::new();
    let mut eof = false;
    for (n, line) in text.lines().enumerate() {
        let bad = |why: &str| format!("line {}: {why}: {line:?}", n + 1);
        if eof {
            return Err(bad("text after # EOF"));
        }
        if line == "# EOF" {
            eof = true;
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split(' ');
            let (Some(name), Some(kind), None) = (it.next(), it.next(), it.next()) else {
                return Err(bad("expected # TYPE NAME KIND"));
            };
            if ![
                "counter",
                "gauge",
                "info",
                "histogram",
                "summary",
                "unknown",
            ]
            .contains(&kind)
            {
                return Err(bad("unknown metric type"));
            }
            declared.push(name.to_string());
            continue;
        }
        if line.starts_with("# HELP ") || line.starts_with("# UNIT ") {
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .ok_or_else(|| bad("expected NAME VALUE"))?;
        let name = series.split('{').next().unwrap_or("");
        let valid_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
        if !valid_name {
            return Err(bad("invalid metric name"));
        }
        if series.contains('{') && !series.ends_with('}') {
            return Err(bad("unterminated label set"));
        }
        let family_declared = declared.iter().any(|d| {
            name == d
                || ["_total", "_created", "_info"]
                    .iter()
                    .any(|s| name == format!("{d}{s}"))
        });
        if !family_declared {
            return Err(bad("sample of an undeclared metric"));
        }
        let v: f64 = value.parse().map_err(|_| bad("value is not a number"))?;
        samples.push((series.to_string(), v));
    }
    if !eof {
        return Err("no # EOF at the end".into());
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::Bridge;
    use crate::datapath::{LatenessSummary, PoolCounters, Wakeups};
    use crate::link::{LinkParams, Path as LinkPath};
    use crate::port::PortCounters;
    use crate::qdisc::fifo::{Fifo, FifoKind};
    use crate::qdisc::QdiscCtx;
    use crate::time::Instant;

    /// A bridge whose left→right pfifo (limit 2) took a burst of 5 frames,
    /// polled until the first of them is delivered.
    fn snapshot() -> LiveSnapshot {
        let path = || {
            let fifo = Fifo::with_limit(FifoKind::Pfifo, QdiscCtx::default(), 2);
            LinkPath::new(
                LinkParams {
                    tx_ring: 1,
                    bql: false,
                    ..LinkParams::default()
                },
                Box::new(fifo),
            )
        };
        let mut b = Bridge::new(path(), path());
        for _ in 0..5 {
            let mut f = vec![0u8; 1000];
            f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
            b.ingress(Dir::LeftToRight, f, Instant::ZERO);
        }
        let (mut out, mut freed) = (Vec::new(), Vec::new());
        b.poll(Instant::ZERO, &mut out, &mut freed);
        // Deliver one frame, so that the transit histogram has a sample.
        let now = b.poll_at().expect("frames are in flight");
        b.poll(now, &mut out, &mut freed);
        LiveSnapshot {
            at: now,
            bridge: b.snapshot(now),
            lateness: LatenessSummary {
                samples: 3,
                p50_ns: 1_000,
                p99_ns: 2_000,
                p999_ns: 3_000,
                max_ns: 4_000,
            },
            release_lateness: LatenessSummary {
                samples: 5,
                p50_ns: 6_000,
                p99_ns: 7_000,
                p999_ns: 8_000,
                max_ns: 9_000,
            },
            wakeups: Wakeups {
                total: 7,
                timer: 3,
                io: 4,
                spun: 2,
                polls: 1,
                cpu_ns: 5_000_000,
            },
            left_port: PortCounters {
                rx_frames: 5,
                ..PortCounters::default()
            },
            right_port: PortCounters::default(),
            pool: PoolCounters {
                in_use: 2,
                refused: 1,
            },
        }
    }

    fn value(samples: &[(String, f64)], series: &str) -> f64 {
        samples
            .iter()
            .find(|(s, _)| s == series)
            .unwrap_or_else(|| panic!("{series} missing"))
            .1
    }

    #[test]
    fn the_text_parses_and_matches_the_snapshot() {
        let snap = snapshot();
        let text = render(&snap);
        let s = parse_samples(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(text, render(&snap), "equal counters, equal text");
        let c = &snap.bridge.path(Dir::LeftToRight).counters;
        assert_eq!(c.frames_in, 5);
        let l2r = "direction=\"left_to_right\"";
        assert_eq!(
            value(&s, &format!("bloatbox_frames_in_total{{{l2r}}}")),
            5.0
        );
        let queue_full = c.drops[DropReason::QueueFull.index()];
        assert!(queue_full > 0);
        assert_eq!(
            value(
                &s,
                &format!("bloatbox_drops_total{{{l2r},reason=\"queue_full\"}}")
            ),
            queue_full as f64
        );
        // Every reason is exported, zero or not.
        let reasons = s
            .iter()
            .filter(|(n, _)| n.starts_with("bloatbox_drops_total{direction=\"right_to_left\""))
            .count();
        assert_eq!(reasons, DropReason::ALL.len());
        let held = snap.bridge.path(Dir::LeftToRight).held;
        assert_eq!(
            value(&s, &format!("bloatbox_held_frames{{{l2r}}}")),
            held as f64
        );
        let q = &snap.bridge.path(Dir::LeftToRight).qdisc;
        let qlabels = format!(
            "{l2r},handle=\"{}\",parent=\"root\",kind=\"pfifo\"",
            tc_handle(q.handle)
        );
        assert_eq!(
            value(&s, &format!("bloatbox_qdisc_dropped_total{{{qlabels}}}")),
            q.stats.drops as f64
        );
        assert_eq!(
            value(&s, &format!("bloatbox_qdisc_backlog_packets{{{qlabels}}}")),
            f64::from(q.stats.qlen)
        );
        assert_eq!(
            value(&s, "bloatbox_wakeup_lateness_seconds{quantile=\"0.99\"}"),
            2e-6
        );
        assert_eq!(
            value(&s, "bloatbox_release_lateness_seconds{quantile=\"0.999\"}"),
            8e-6
        );
        assert_eq!(value(&s, "bloatbox_release_lateness_samples_total"), 5.0);
        let t = &snap.bridge.path(Dir::LeftToRight).transit;
        assert!(t.count > 0, "frames were delivered");
        assert_eq!(t.count, c.frames_out);
        assert_eq!(
            value(&s, &format!("bloatbox_transit_frames_total{{{l2r}}}")),
            t.count as f64
        );
        assert_eq!(
            value(
                &s,
                &format!("bloatbox_transit_seconds{{{l2r},quantile=\"1\"}}")
            ),
            t.max_ns as f64 / 1e9
        );
        assert_eq!(value(&s, "bloatbox_timer_wakeups_total"), 3.0);
        assert_eq!(value(&s, "bloatbox_datapath_cpu_seconds"), 0.005);
        assert_eq!(
            value(&s, "bloatbox_port_rx_frames_total{port=\"left\"}"),
            5.0
        );
        assert_eq!(value(&s, "bloatbox_pool_refused_total"), 1.0);
        assert!(!text.contains("capture"), "no capture, no capture counters");
    }

    #[test]
    fn the_strict_check_refuses_broken_text() {
        let good = "# TYPE a counter\na_total 1\n# EOF\n";
        assert!(parse_samples(good).is_ok());
        for bad in [
            "# TYPE a counter\na_total 1\n",
            "a_total 1\n# EOF\n",
            "# TYPE a counter\na_total one\n# EOF\n",
            "# TYPE a counter\na_total{x=\"1\" 1\n# EOF\n",
            "# TYPE a counter\n# EOF\na_total 1\n",
            "# TYPE a bogus\n# EOF\n",
        ] {
            assert!(parse_samples(bad).is_err(), "{bad:?}");
        }
    }

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut reply = String::new();
        io::Read::read_to_string(&mut s, &mut reply).unwrap();
        reply
    }

    #[test]
    fn serves_get_metrics_on_loopback_only() {
        let reader = SnapshotReader::default();
        let server =
            MetricsServer::start("127.0.0.1:0".parse().unwrap(), false, reader.clone()).unwrap();
        let addr = server.local_addr();
        let r = get(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 503"), "{r}");
        reader.offer(snapshot());
        let r = get(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK"), "{r}");
        assert!(r.contains(CONTENT_TYPE));
        let body = r.split_once("\r\n\r\n").unwrap().1;
        parse_samples(body).unwrap();
        assert!(get(addr, "GET /nope HTTP/1.0\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(addr, "POST /metrics HTTP/1.0\r\n\r\n").starts_with("HTTP/1.1 405"));
        drop(server);

        let e = MetricsServer::start("0.0.0.0:0".parse().unwrap(), false, reader)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("loopback") && e.contains("--metrics-allow-remote"),
            "{e}"
        );
    }

    #[test]
    fn the_file_is_rewritten_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.prom");
        let reader = SnapshotReader::default();
        let file = MetricsFile::start(&path, Duration::from_secs(3600), reader.clone()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "# EOF\n");
        reader.offer(snapshot());
        // Dropping writes the last snapshot.
        drop(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, render(&snapshot()));
        assert!(!tmp_path(&path).exists());
        let e = MetricsFile::start(
            Path::new("/proc/nope/m.prom"),
            Duration::from_secs(1),
            reader,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("/proc/nope/m.prom") && e.contains("fix"), "{e}");
    }
}
