//! `bloatbox run`: a scripted bad link for any test suite. Brings a link up
//! under a name of its own, starts the right-side command (a server) in its
//! own process group, waits until it listens on a port or a readiness
//! command succeeds, runs the left-side command, and exits with that
//! command's exit code. Everything is torn down on every path (success,
//! failure, SIGINT, SIGTERM, SIGHUP): both commands' process groups, then
//! anything else left in the namespaces, the datapath and the namespaces.
//! Optionally writes a JSON report. The right command's output (stdout and
//! stderr) goes to bloatbox's, each line led by `[right] ` so that it does
//! not pass for the left command's, which is left as it is.
//!
//! With a terminal on stdin the left command stays in bloatbox's process
//! group (the terminal's foreground), so that a shell works as under
//! mahimahi: Ctrl-C then reaches the command, which decides whether to end.
//!
//! Exit codes: the left command's own; 128 + N when it died of signal N, or
//! when `bloatbox run` itself got signal N; 124 when the right side never
//! became ready; 127 when the left command does not exist and 126 when it
//! is not executable (as a shell, and `bloatbox exec`, say); 125 when
//! bloatbox could not run (configuration, set-up).

use std::io::{self, BufRead, BufReader, IsTerminal, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::process::{self, Signal};
use anyhow::Context;
use serde_json::{json, Value};

use super::{Link, LinkBuilder, Proto, Side, KILL_GRACE};
use crate::datapath::LiveSnapshot;
use crate::dir::Dir;
use crate::netns::TerminationSignals;

/// The left command died or bloatbox was stopped by a signal: 128 + N.
const EXIT_SIGNAL_BASE: u8 = 128;
/// The right side never became ready (as `timeout` exits).
pub const EXIT_NOT_READY: u8 = 124;
/// bloatbox itself failed (configuration, set-up), as `env` does.
pub const EXIT_FAILED: u8 = 125;
/// How often the run checks its children, signals and readiness.
const POLL: Duration = Duration::from_millis(50);
/// What leads each line of the right command's output.
const RIGHT_PREFIX: &str = "[right] ";
/// Longest line relayed whole; a longer one is cut into lines this long.
const RELAY_LINE: usize = 64 * 1024;
/// How long the run waits, once its commands are gone, for the relays to
/// write their last lines (a process that escaped the teardown may keep
/// the pipes open).
const RELAY_DRAIN: Duration = Duration::from_secs(1);

/// `bloatbox run`'s arguments.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RunArgs {
    /// Configuration file (default: the embedded default). Its namespace,
    /// TAP and control socket names are replaced by the run's own.
    #[arg(short, long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override a configuration value, e.g. --set link.delay=20ms (repeatable;
    /// applied after the run's names, so --set left.namespace=X wins).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Base name of the namespaces and TAPs (NAMEl, NAMEr) and of the control
    /// socket; default bb<pid in base 36>-0.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Shell command run first, in the right namespace (e.g. a server).
    #[arg(long, value_name = "CMD")]
    pub right: Option<String>,
    /// Shell command run in the left namespace once the right side is ready.
    #[arg(long, value_name = "CMD", conflicts_with = "cmd")]
    pub left: Option<String>,
    /// Wait until a socket listens on this port in the right namespace:
    /// PORT (TCP), PORT/tcp or PORT/udp.
    #[arg(long, value_name = "PORT[/udp]", value_parser = parse_port, conflicts_with = "wait_cmd")]
    pub wait_port: Option<(u16, Proto)>,
    /// Wait until this shell command, run in the left namespace (through the
    /// link) with the left side's environment, exits 0; retried every 100 ms.
    #[arg(long, value_name = "CMD")]
    pub wait_cmd: Option<String>,
    /// Longest wait for readiness: 30s, 500ms (tc time units, as in the
    /// configuration: a bare number is µs, with a warning).
    #[arg(long, value_name = "D", default_value = "10s", value_parser = crate::flags::DurationFlag)]
    pub timeout: Duration,
    /// Write a JSON report here: exit codes, timings, link counters, drops
    /// by reason, ring/BQL, the transit-time histogram of each direction,
    /// wake-up lateness and qdisc sojourn.
    #[arg(long, value_name = "FILE.json")]
    pub report: Option<PathBuf>,
    /// Run the datapath thread under SCHED_FIFO at this priority (1..=99):
    /// keeps pacing exact on a busy CI runner.
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99))]
    pub realtime: Option<u8>,
    /// The capture flags (`--pcap DIR`, `--pcap-left`, `--pcap-right`); clap
    /// leaves a flattened field's doc comment out of the help.
    #[command(flatten)]
    pub capture: crate::capture::CaptureArgs,
    /// Run without root: in a user namespace of its own, with anonymous
    /// namespaces and TAPs (needs /dev/net/tun open to the user) or veth
    /// pairs read through AF_PACKET; auto picks TAP when it can. Nothing is
    /// named in /run/netns: `bloatbox exec` cannot reach the link.
    #[arg(long, value_name = "BACKEND", num_args = 0..=1, require_equals = true, default_missing_value = "auto")]
    pub rootless: Option<super::Backend>,
    /// Join two existing interfaces instead of making namespaces, as
    /// `bloatbox up --wire LEFT RIGHT`: the commands then run in this
    /// namespace (reach the wired hosts with `ip netns exec`).
    #[arg(long, num_args = 2, value_names = ["LEFT", "RIGHT"], conflicts_with = "rootless",
          value_parser = clap::value_parser!(crate::wire::WireEnd))]
    pub wire: Option<Vec<crate::wire::WireEnd>>,
    /// The left command and its arguments, run without a shell (default:
    /// --left, else $SHELL).
    #[arg(last = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

/// Why a `--wait-port` value was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PortError {
    /// A protocol other than tcp or udp.
    #[error("protocol {0:?}: use PORT, PORT/tcp or PORT/udp")]
    Protocol(String),
    /// A port that is not a number in 1..=65535.
    #[error("port {0:?}: use a number 1..=65535")]
    Number(String),
}

/// `PORT`, `PORT/tcp` or `PORT/udp`.
pub fn parse_port(s: &str) -> Result<(u16, Proto), PortError> {
    let (num, proto) = match s.split_once('/') {
        None => (s, Proto::Tcp),
        Some((n, "tcp")) => (n, Proto::Tcp),
        Some((n, "udp")) => (n, Proto::Udp),
        Some((_, other)) => return Err(PortError::Protocol(other.to_string())),
    };
    match num.parse::<u16>() {
        Ok(p) if p > 0 => Ok((p, proto)),
        _ => Err(PortError::Number(num.to_string())),
    }
}

/// An exit status as a shell reports it: the code, or 128 + the signal.
pub fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(sig)) => EXIT_SIGNAL_BASE.wrapping_add(sig as u8),
        (None, None) => 1,
    }
}

/// One command of the run, for the report.
#[derive(Debug, Default)]
struct Record {
    command: Vec<String>,
    started_s: Option<f64>,
    ended_s: Option<f64>,
    status: Option<ExitStatus>,
    /// Still running when bloatbox's teardown signalled it (SIGTERM to its
    /// group): it did not end by itself.
    stopped: bool,
    /// Still running after the grace period: bloatbox had to SIGKILL it.
    killed: bool,
}

impl Record {
    fn json(&self) -> Value {
        let duration = match (self.started_s, self.ended_s) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        };
        json!({
            "command": self.command,
            "started_s": self.started_s,
            "ended_s": self.ended_s,
            "duration_s": duration,
            "exit_code": self.status.and_then(|s| s.code()),
            "signal": self.status.and_then(|s| s.signal()),
            "stopped_by_bloatbox": self.stopped,
            "killed_by_bloatbox": self.killed,
        })
    }
}

/// A child running in its own process group (or, for an interactive left
/// command, in ours), with its record.
struct Proc {
    child: Child,
    own_group: bool,
    record: Record,
    /// The threads relaying its output with a prefix, if it has one.
    relays: Vec<JoinHandle<()>>,
}

/// `relay` on a thread of its own.
fn spawn_relay(
    from: impl Read + Send + 'static,
    to: impl Write + Send + 'static,
    prefix: &'static str,
) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("bloatbox-relay".into())
        .spawn(move || relay(from, to, prefix))
}

/// Copies `from` to `to` line by line, each line led by `prefix` and
/// written in one piece; a last line without a newline gets one. Reads on
/// when `to` fails (e.g. a closed pipe), so that the writer never blocks.
fn relay(from: impl Read, mut to: impl Write, prefix: &str) {
    let mut from = BufReader::new(from);
    let mut line = Vec::with_capacity(prefix.len() + 128);
    loop {
        line.clear();
        line.extend_from_slice(prefix.as_bytes());
        match (&mut from)
            .take(RELAY_LINE as u64)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        let _ = to.write_all(&line).and_then(|()| to.flush());
    }
}

impl Proc {
    /// Starts `cmd`; with a `prefix`, its stdout and stderr are relayed to
    /// ours line by line, each line led by it.
    fn spawn(
        mut cmd: std::process::Command,
        own_group: bool,
        rootless: bool,
        prefix: Option<&'static str>,
        record: Record,
        t0: Instant,
    ) -> anyhow::Result<Proc> {
        if own_group {
            cmd.process_group(0);
        }
        if prefix.is_some() {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        if rootless {
            // Nothing named outlives the run: the commands die with it even
            // when it is SIGKILLed, and with them the last namespace users.
            process::dies_with_parent(&mut cmd);
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {:?}", record.command.join(" ")))?;
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let mut proc = Proc {
            child,
            own_group,
            record: Record {
                started_s: Some(t0.elapsed().as_secs_f64()),
                ..record
            },
            relays: Vec::new(),
        };
        if let Some(prefix) = prefix {
            let relays = [
                stdout.map(|from| spawn_relay(from, io::stdout(), prefix)),
                stderr.map(|from| spawn_relay(from, io::stderr(), prefix)),
            ];
            for r in relays.into_iter().flatten() {
                match r {
                    Ok(r) => proc.relays.push(r),
                    Err(e) => {
                        // Undrained pipes would block it: it does not run.
                        proc.stop(t0);
                        return Err(e).context("starting a thread to relay the output");
                    }
                }
            }
        }
        Ok(proc)
    }

    /// Its status, if it has ended (reaped and recorded once).
    fn poll(&mut self, t0: Instant) -> Option<ExitStatus> {
        if self.record.status.is_none() {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.record.status = Some(status);
                self.record.ended_s = Some(t0.elapsed().as_secs_f64());
            }
        }
        self.record.status
    }

    fn signal(&self, sig: Signal) {
        let _ = process::signal(self.child.id(), self.own_group, sig);
    }

    /// Waits (at most `RELAY_DRAIN`) for its output to be relayed to the
    /// end; a relay still blocked then is left to end with the process.
    fn finish_relays(&mut self) {
        let deadline = Instant::now() + RELAY_DRAIN;
        while self.relays.iter().any(|r| !r.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        for r in self.relays.drain(..).filter(|r| r.is_finished()) {
            let _ = r.join();
        }
    }

    /// SIGTERM to it (its whole group if it has one), SIGKILL after the
    /// grace period; returns once it is reaped.
    fn stop(&mut self, t0: Instant) {
        let ended = self.poll(t0).is_some();
        if ended && !self.own_group {
            return;
        }
        self.record.stopped = !ended;
        // Even when the leader has exited, its group may live on.
        self.signal(Signal::SIGTERM);
        let deadline = Instant::now() + KILL_GRACE;
        while self.poll(t0).is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.signal(Signal::SIGKILL);
        if self.record.status.is_none() {
            self.record.killed = true;
            if let Ok(status) = self.child.wait() {
                self.record.status = Some(status);
                self.record.ended_s = Some(t0.elapsed().as_secs_f64());
            }
        }
    }
}

/// How the run ended.
enum Outcome {
    LeftExited(ExitStatus),
    Signal(i32),
    NotReady(String),
    /// The left command could not be started: 127 (no such command) or 126
    /// (not executable), as a shell and `bloatbox exec` say.
    CannotRun(u8, anyhow::Error),
    Failed(anyhow::Error),
}

/// The shell's exit code for a command that could not be started.
fn cannot_run_code(e: &anyhow::Error) -> Option<u8> {
    match e.root_cause().downcast_ref::<io::Error>()?.kind() {
        io::ErrorKind::NotFound => Some(127),
        io::ErrorKind::PermissionDenied => Some(126),
        _ => None,
    }
}

/// `bloatbox run`: returns the process exit code; errors are printed.
pub fn run(args: &RunArgs) -> u8 {
    match run_inner(args) {
        Ok(code) => code,
        Err(e) => {
            crate::errln!("bloatbox run: error: {e:#}");
            if let Some(path) = &args.report {
                // A CI job still finds out why, from the report alone.
                let report = json!({
                    "exit_code": EXIT_FAILED,
                    "outcome": format!("failed: {e:#}"),
                });
                if let Err(w) = std::fs::write(path, format!("{report:#}\n")) {
                    crate::errln!("bloatbox run: writing the report {}: {w}", path.display());
                }
            }
            EXIT_FAILED
        }
    }
}

fn run_inner(args: &RunArgs) -> anyhow::Result<u8> {
    if args.rootless.is_some() {
        // While this process still has a single thread.
        crate::rootless::ensure_namespace_admin()?;
    }
    // Before any thread exists, so that all inherit the blocked mask.
    let mut signals = TerminationSignals::block()?;
    let mut builder = LinkBuilder::default().config(crate::live::load(args.config.as_deref())?);
    if let Some(name) = &args.name {
        builder = builder.name(name);
    }
    for s in &args.sets {
        builder = builder.set(s);
    }
    if let Some(prio) = args.realtime {
        builder = builder.realtime(prio);
    }
    if let Some(spec) = args.capture.spec() {
        builder = builder.capture(spec);
    }
    if let Some(backend) = args.rootless {
        builder = builder.rootless(backend);
    }
    if let Some([left, right]) = args.wire.as_deref() {
        builder = builder.wire(crate::wire::Wire {
            left: left.clone(),
            right: right.clone(),
        });
    }
    let t0 = Instant::now();
    let link = builder.up()?;
    let mut right: Option<Proc> = None;
    let mut left: Option<Proc> = None;
    let mut ready_after_s = None;
    let outcome = drive(
        &link,
        args,
        &mut signals,
        t0,
        &mut right,
        &mut left,
        &mut ready_after_s,
    );
    // Teardown, whatever happened: the commands, then the link.
    for p in [left.as_mut(), right.as_mut()].into_iter().flatten() {
        p.stop(t0);
    }
    let name = link.name().to_string();
    let endpoints = json!({
        "left": endpoint_json(&link, Side::Left),
        "right": endpoint_json(&link, Side::Right),
    });
    let rootless = link.rootless().map(|r| r.backend());
    let last = link.shutdown();
    // Nothing is left in the namespaces to hold the pipes open.
    if let Some(r) = right.as_mut() {
        r.finish_relays();
    }
    let code = match &outcome {
        Outcome::LeftExited(status) => exit_code(*status),
        Outcome::Signal(sig) => EXIT_SIGNAL_BASE.wrapping_add(*sig as u8),
        Outcome::NotReady(why) => {
            crate::errln!("bloatbox run: {why}");
            EXIT_NOT_READY
        }
        Outcome::CannotRun(code, e) => {
            crate::errln!("bloatbox run: {e:#}");
            *code
        }
        Outcome::Failed(e) => {
            crate::errln!("bloatbox run: error: {e:#}");
            EXIT_FAILED
        }
    };
    if let Some(path) = &args.report {
        let outcome_text = match &outcome {
            Outcome::LeftExited(_) => "left command exited".to_string(),
            Outcome::Signal(sig) => format!("stopped by signal {sig}"),
            Outcome::NotReady(why) => format!("not ready: {why}"),
            Outcome::CannotRun(_, e) => format!("left command not started: {e:#}"),
            Outcome::Failed(e) => format!("failed: {e:#}"),
        };
        let report = json!({
            "name": name,
            "exit_code": code,
            "outcome": outcome_text,
            "duration_s": t0.elapsed().as_secs_f64(),
            "ready_after_s": ready_after_s,
            "left": left.as_ref().map(|p| p.record.json()),
            "right": right.as_ref().map(|p| p.record.json()),
            "endpoints": endpoints,
            "rootless": rootless,
            "link": last.as_ref().ok().map(link_report),
            "error": last.as_ref().err().map(|e| e.to_string()),
        });
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("writing the report {}", path.display()))?;
    }
    if let Err(e) = last {
        crate::errln!("bloatbox run: the datapath: {e}");
    }
    Ok(code)
}

/// Starts the commands and waits for the left one, a signal or a failure.
fn drive(
    link: &Link,
    args: &RunArgs,
    signals: &mut TerminationSignals,
    t0: Instant,
    right: &mut Option<Proc>,
    left: &mut Option<Proc>,
    ready_after_s: &mut Option<f64>,
) -> Outcome {
    if let Some(script) = &args.right {
        let mut cmd = link.shell(Side::Right, script);
        cmd.stdin(Stdio::null());
        let record = Record {
            command: vec!["sh".into(), "-c".into(), script.clone()],
            ..Record::default()
        };
        let rootless = link.rootless().is_some();
        match Proc::spawn(cmd, true, rootless, Some(RIGHT_PREFIX), record, t0) {
            Ok(p) => *right = Some(p),
            Err(e) => return Outcome::Failed(e),
        }
    }
    match wait_ready(link, args, signals, right.as_mut(), t0) {
        Ok(None) => *ready_after_s = Some(t0.elapsed().as_secs_f64()),
        Ok(Some(outcome)) => return outcome,
        Err(e) => return Outcome::Failed(e),
    }
    let (cmd, command) = if !args.cmd.is_empty() {
        let mut cmd = link.command(Side::Left, &args.cmd[0]);
        cmd.args(&args.cmd[1..]);
        (cmd, args.cmd.clone())
    } else {
        let script = args
            .left
            .clone()
            .unwrap_or_else(|| std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".to_string()));
        let command = if args.left.is_some() {
            vec!["sh".into(), "-c".into(), script.clone()]
        } else {
            vec![script.clone()]
        };
        let cmd = if args.left.is_some() {
            link.shell(Side::Left, &script)
        } else {
            link.command(Side::Left, &script)
        };
        (cmd, command)
    };
    // An interactive left command stays in our (the terminal's foreground)
    // process group, so that it can read the terminal and gets Ctrl-C.
    let own_group = !std::io::stdin().is_terminal();
    let record = Record {
        command,
        ..Record::default()
    };
    let mut proc = match Proc::spawn(cmd, own_group, link.rootless().is_some(), None, record, t0) {
        Ok(p) => p,
        Err(e) => {
            return match cannot_run_code(&e) {
                Some(code) => Outcome::CannotRun(code, e),
                None => Outcome::Failed(e),
            }
        }
    };
    let outcome = loop {
        if let Some(status) = proc.poll(t0) {
            break Outcome::LeftExited(status);
        }
        match signals.wait(POLL.as_millis() as u16) {
            // Ctrl-C at the terminal reaches an interactive left command too
            // (it shares our process group): it decides whether to end.
            Some(sig) if !own_group && sig == Signal::SIGINT as i32 => {}
            Some(sig) => break Outcome::Signal(sig),
            None => {}
        }
        if let Some(r) = right.as_mut() {
            r.poll(t0);
        }
    };
    *left = Some(proc);
    outcome
}

/// Waits for the readiness condition, bounded by `--timeout`. `Ok(None)`:
/// ready (or nothing to wait for).
fn wait_ready(
    link: &Link,
    args: &RunArgs,
    signals: &mut TerminationSignals,
    mut right: Option<&mut Proc>,
    t0: Instant,
) -> anyhow::Result<Option<Outcome>> {
    if args.wait_port.is_none() && args.wait_cmd.is_none() {
        return Ok(None);
    }
    let deadline = Instant::now() + args.timeout;
    let mut probe: Option<Child> = None;
    loop {
        let ready = match (args.wait_port, &args.wait_cmd) {
            (Some((port, proto)), _) => link.is_listening(Side::Right, port, proto)?,
            (None, Some(script)) => match probe.as_mut().map(|c| c.try_wait()) {
                Some(Ok(Some(status))) => {
                    probe = None;
                    status.success()
                }
                Some(Ok(None)) => false,
                Some(Err(e)) => return Err(e).context("waiting for the --wait-cmd command"),
                None => {
                    let mut cmd = link.shell(Side::Left, script);
                    cmd.stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .process_group(0);
                    probe = Some(cmd.spawn().context("starting the --wait-cmd command")?);
                    false
                }
            },
            (None, None) => true,
        };
        if ready {
            return Ok(None);
        }
        if let Some(r) = right.as_deref_mut() {
            if let Some(status) = r.poll(t0) {
                kill_probe(probe);
                return Ok(Some(Outcome::NotReady(format!(
                    "the right command exited (code {}) before it was ready",
                    exit_code(status)
                ))));
            }
        }
        if Instant::now() >= deadline {
            kill_probe(probe);
            let what = match args.wait_port {
                Some((port, proto)) => format!(
                    "nothing listens on {port}/{} in the right namespace",
                    serde_json::to_value(proto)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default()
                ),
                None => "the --wait-cmd command never succeeded".to_string(),
            };
            return Ok(Some(Outcome::NotReady(format!(
                "{what} after {:?} (raise --timeout?)",
                args.timeout
            ))));
        }
        if let Some(sig) = signals.wait(if probe.is_some() { 10 } else { 100 }) {
            kill_probe(probe);
            return Ok(Some(Outcome::Signal(sig)));
        }
    }
}

fn kill_probe(probe: Option<Child>) {
    if let Some(mut c) = probe {
        let _ = process::signal(c.id(), true, Signal::SIGKILL);
        let _ = c.wait();
    }
}

fn endpoint_json(link: &Link, side: Side) -> Value {
    let e = link.endpoint(side);
    // No IPv6 address below its least MTU (`Config::ipv6_on_taps`).
    let ipv6 = link.config().ipv6_on_taps().then(|| e.ipv6.to_string());
    json!({
        "namespace": e.namespace,
        "tap": e.tap,
        "ipv4": e.ipv4.to_string(),
        "ipv6": ipv6,
    })
}

/// The link part of the report: the final snapshot, then latency figures
/// pulled out of it: per direction the histogram of frames' transit times
/// through the link (ingress to delivery), the datapath's wake-up lateness
/// and the qdiscs' head sojourn at the end.
fn link_report(last: &LiveSnapshot) -> Value {
    let sojourn: serde_json::Map<String, Value> = Dir::ALL
        .iter()
        .map(|&d| {
            let q = &last.bridge.path(d).qdisc;
            // Listed flows and the ones the bounded snapshot summed up.
            let head = |q: &crate::qdisc::QdiscDump| {
                let rest = &q.other_flows;
                q.flows
                    .iter()
                    .map(|f| f.head_sojourn_ns)
                    .chain((rest.flows > 0).then_some(rest.max_head_sojourn_ns))
                    .max()
            };
            let max_head = head(q).or_else(|| q.children.iter().filter_map(head).max());
            (
                d.name().to_string(),
                json!({
                    "qdisc": q.kind,
                    "max_head_sojourn_ns": max_head,
                    "xstats": q.xstats.as_ref().map(|x| crate::tc::xstats::json(&q.kind, x)).unwrap_or_default(),
                }),
            )
        })
        .collect();
    let transit: serde_json::Map<String, Value> = Dir::ALL
        .iter()
        .map(|&d| (d.name().to_string(), json!(last.bridge.path(d).transit)))
        .collect();
    json!({
        "snapshot": last,
        "latency": {
            "transit_ns": transit,
            "wakeup_lateness_ns": last.lateness,
            "release_lateness_ns": last.release_lateness,
            "qdisc_sojourn_at_end": sojourn,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_parse_with_protocol_and_refuse_nonsense() {
        assert_eq!(parse_port("5201"), Ok((5201, Proto::Tcp)));
        assert_eq!(parse_port("53/udp"), Ok((53, Proto::Udp)));
        assert_eq!(parse_port("80/tcp"), Ok((80, Proto::Tcp)));
        assert_eq!(parse_port("0"), Err(PortError::Number("0".into())));
        assert_eq!(
            parse_port("0").unwrap_err().to_string(),
            "port \"0\": use a number 1..=65535"
        );
        assert_eq!(parse_port("70000"), Err(PortError::Number("70000".into())));
        assert_eq!(
            parse_port("80/sctp").unwrap_err().to_string(),
            "protocol \"sctp\": use PORT, PORT/tcp or PORT/udp"
        );
    }

    /// `--timeout` reads a text as the configuration reads a delay: the
    /// same duration, or an error for both (a bare number is µs, as in tc).
    #[test]
    fn the_timeout_flag_reads_a_time_as_the_configuration_does() {
        use crate::config::values::{DelayUnit, UnitKind};
        use crate::config::Config;
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            run: RunArgs,
        }
        let flag = |text: &str| {
            Cli::try_parse_from(["run".to_string(), format!("--timeout={text}")])
                .map(|c| c.run.timeout)
                .map_err(|e| e.to_string())
        };
        let config = |text: &str| {
            Config::from_str(&format!("[link]\ndelay = \"{text}\"\n"), "t.toml")
                .map(|c| Duration::from_nanos(c.link_params(Dir::LeftToRight).delay_ns))
                .map_err(|e| e.to_string())
        };
        for text in ["10", "1.5s", "500ms", "20us", "250ns", "0", " 3s"] {
            assert_eq!(flag(text), Ok(config(text).unwrap()), "{text:?}");
        }
        assert_eq!(flag("10"), Ok(Duration::from_micros(10)));
        for text in ["2m", "5parsecs", "", "1e999", "-1s"] {
            let (flag, config) = (flag(text).unwrap_err(), config(text).unwrap_err());
            let help = DelayUnit::HELP;
            assert!(flag.contains(help), "{text:?}: {flag}");
            assert!(config.contains(help), "{text:?}: {config}");
        }
    }

    #[test]
    fn exit_codes_follow_the_shell() {
        assert_eq!(exit_code(ExitStatus::from_raw(7 << 8)), 7);
        assert_eq!(exit_code(ExitStatus::from_raw(0)), 0);
        assert_eq!(exit_code(ExitStatus::from_raw(Signal::SIGKILL as i32)), 137);
    }
}
