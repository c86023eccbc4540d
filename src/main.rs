//! The `bloatbox` command line: parses arguments with clap and hands over to
//! `bloatbox::app`, which implements each subcommand.

use std::io::IsTerminal;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::ExitCode;

use bloatbox::app::daemon;
use bloatbox::app::target::Target;
use bloatbox::app::{self, Side};
use bloatbox::experiment;
use clap::{Parser, Subcommand};

/// The command line (also compiled into tests/pure, which parses the
/// documents' commands with it).
#[derive(Parser)]
#[command(name = "bloatbox", version, about = "A bufferbloat emulator appliance")]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Create the namespaces and TAPs and run the emulated link until
    /// SIGINT/SIGTERM (needs root).
    Up {
        /// Configuration file (default: the embedded default).
        #[arg(short, long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Override a configuration value, e.g. --set link.rate=10mbit or
        /// --set left.delay=20ms (repeatable; applied in order after the file).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Run the datapath thread under SCHED_FIFO at this priority
        /// (1..=99): keeps pacing exact on a busy machine.
        #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99))]
        realtime: Option<u8>,
        /// Show the terminal UI even where it would not open by itself; it
        /// opens when standard input and output are the terminal of a
        /// foreground process. Quitting it stops the daemon. Logs go to
        /// the --log file meanwhile.
        #[arg(long, conflicts_with = "headless")]
        tui: bool,
        /// Never show the terminal UI, even on a terminal: log to stderr.
        #[arg(long)]
        headless: bool,
        /// Where logs go while the TUI owns the terminal.
        #[arg(long, value_name = "FILE", default_value = "/tmp/bloatbox.log")]
        log: PathBuf,
        /// Attach to the namespaces and persistent TAPs of the configuration
        /// made beforehand (netns/up.sh) instead of creating them; they are
        /// left in place on exit (netns/down.sh removes them).
        #[arg(long)]
        attach: bool,
        /// Bridge two existing interfaces instead, each NETNS:IFNAME (a
        /// namespace of `ip netns`) or IFNAME (this namespace): frames read
        /// on LEFT cross the left→right direction and leave on RIGHT, and
        /// back. Both must be up, without addresses and not in a bridge;
        /// nothing is created, and they are left as found.
        #[arg(long, num_args = 2, value_names = ["LEFT", "RIGHT"], conflicts_with = "attach",
              value_parser = clap::value_parser!(bloatbox::wire::WireEnd))]
        wire: Option<Vec<bloatbox::wire::WireEnd>>,
        #[command(flatten)]
        capture: bloatbox::capture::CaptureArgs,
        #[command(flatten)]
        metrics: MetricsArgs,
    },
    /// Remove namespaces and TAPs a killed run left behind (needs root).
    Down {
        /// Configuration naming the namespaces, TAPs and control socket
        /// (default: the embedded default).
        #[arg(short, long, value_name = "FILE", conflicts_with = "runs")]
        config: Option<PathBuf>,
        /// Instead: clean up after every `bloatbox run` (or library guard)
        /// whose process is dead, e.g. SIGKILLed (records in
        /// /run/bloatbox/runs).
        #[arg(long)]
        runs: bool,
    },
    /// Run a command inside the left or right namespace; its exit code is
    /// passed through.
    Exec {
        /// The namespace: left or right.
        side: Side,
        /// Configuration naming the namespaces (default: $BLOATBOX_CONFIG,
        /// else the embedded default).
        #[arg(short, long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required = true, value_name = "CMD")]
        cmd: Vec<String>,
    },
    /// Validate a configuration file and print what it sets up.
    Check {
        /// The configuration file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Bring up a link of its own (unique names), run a server on the right,
    /// wait until it is ready, run a command on the left, exit with its code
    /// and tear everything down (needs root, or --rootless).
    Run(Box<bloatbox::harness::run::RunArgs>),
    /// Latency under load: for each config, bring the link up, run the
    /// RRUL-like test (TCP flows each way, ping and UDP_RR throughout), tear
    /// it down; then print a comparison table (needs root).
    Test {
        /// Configuration files to compare (default: the embedded default).
        #[arg(short, long = "config", value_name = "FILE", num_args = 1..)]
        configs: Vec<PathBuf>,
        /// Override a configuration value in every compared configuration,
        /// e.g. --set link.rate=10mbit (repeatable; applied in order after
        /// each file, as in `up` and `run`).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// The classic comparison on a 100 Mbit/s link: pfifo_fast behind a
    /// deep TX ring without BQL, fq_codel, HTB+SFQ (needs root).
    Demo {
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Run a simulation scenario (no root, no namespaces) and print its
    /// report.
    Sim {
        /// The scenario file (tests/scenarios/*.toml, configs/sim/*.toml).
        #[arg(value_name = "SCENARIO")]
        scenario: PathBuf,
        /// Also write summary.json (the report, qdisc dumps included) and
        /// tc.txt (the final tc statistics) here.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// With --out, also write trace.jsonl: every packet event as a JSON
        /// line, about 93 bytes each (the 20 s scenario of eight CUBIC flows
        /// at 100 Mbit/s, tests/scenarios/bloat_pfifo_fast.toml, writes
        /// 184 MB).
        #[arg(long, requires = "out")]
        trace: bool,
    },
    /// Print every counter of the running daemon as OpenMetrics text
    /// (what `up --metrics-listen` serves).
    Metrics {
        /// Which daemon (in `tc` and `set` also after the command's words).
        #[command(flatten)]
        target: Target,
    },
    /// Print the running daemon's counters.
    Stats {
        /// The raw snapshot as JSON.
        #[arg(long)]
        json: bool,
        /// Which daemon (in `tc` and `set` also after the command's words).
        #[command(flatten)]
        target: Target,
    },
    /// Run a tc command on the running daemon (`bloatbox tc -s qdisc show
    /// dev left`); exit 2 with tc's error text on failure.
    Tc {
        /// Which daemon (in `tc` and `set` also after the command's words).
        #[command(flatten)]
        target: Target,
        /// tc's words, as after `tc` (`-s qdisc show dev left`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        args: Vec<String>,
    },
    /// Change the running link: `left.rate=10mbit right.delay=20ms ...`,
    /// shape keys (`left.loss=1% left.jitter=2ms left.trace=FILE
    /// left.netem="..."`, see docs/configuration.md) or `ethtool -C left rx-usecs 20`;
    /// all or nothing; prints the effective parameters and shapes, and
    /// what ethtool prints for ethtool lines.
    Set {
        /// Print the effective parameters, shapes and ethtool replies as
        /// JSON (also accepted after the arguments).
        #[arg(long)]
        json: bool,
        /// Which daemon (in `tc` and `set` also after the command's words).
        #[command(flatten)]
        target: Target,
        /// Settings (`left.rate=10mbit`, `right.loss=1%`) and whole ethtool
        /// lines (`ethtool -C left rx-usecs 20`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        args: Vec<String>,
    },
    /// Run an ethtool command on the running daemon's emulated devices
    /// (`bloatbox ethtool -K left tso off gso off`, `-k`, `-c`, `-g`, `-C`,
    /// `-G`): ethtool's text and exit code; the same as `bloatbox set
    /// ethtool ...`.
    ///
    /// The daemon's options go among the words, as in `tc`: `-c FILE`
    /// (except right after `ethtool`, where `-c` is ethtool's),
    /// `--config FILE`, `--socket PATH`; `--json` prints JSON.
    Ethtool {
        /// ethtool's words, as after `ethtool` (`-K left tso off`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        args: Vec<String>,
    },
    /// Attach the terminal UI to the running daemon (quitting leaves it
    /// running).
    Top {
        /// Which daemon (in `tc` and `set` also after the command's words).
        #[command(flatten)]
        target: Target,
        /// Where logs go while the TUI owns the terminal.
        #[arg(long, value_name = "FILE", default_value = "/tmp/bloatbox.log")]
        log: PathBuf,
    },
}

/// Where `up` exports its counters (see `bloatbox::metrics`).
#[derive(clap::Args)]
struct MetricsArgs {
    /// Serve GET /metrics (OpenMetrics text) on this address, e.g.
    /// 127.0.0.1:9464; loopback only unless --metrics-allow-remote.
    #[arg(long, value_name = "ADDR:PORT")]
    metrics_listen: Option<std::net::SocketAddr>,
    /// Let --metrics-listen bind a non-loopback address.
    #[arg(long, requires = "metrics_listen")]
    metrics_allow_remote: bool,
    /// Rewrite this file with the metrics every --metrics-period
    /// (atomically: a temporary file renamed over it).
    #[arg(long, value_name = "FILE")]
    metrics_file: Option<PathBuf>,
    /// How often --metrics-file is rewritten.
    #[arg(long, default_value = "1s", value_parser = bloatbox::flags::DurationFlag, requires = "metrics_file")]
    metrics_period: std::time::Duration,
}

/// How `test` and `demo` load the link and where they write results.
#[derive(clap::Args)]
struct LoadArgs {
    /// TCP flows per direction (0 = idle link: probes only), at most 1000.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(0..=bloatbox::load::rrul::MAX_FLOWS as i64))]
    flows: u16,
    /// Flows left->right only (default: both directions, like RRUL).
    #[arg(long)]
    upload_only: bool,
    /// Length of each config's run, warm-up included (tc time units: 10s, 500ms).
    #[arg(long, default_value = "12s", value_parser = bloatbox::flags::DurationFlag)]
    duration: std::time::Duration,
    /// Leading part of each run left out of the numbers.
    #[arg(long, default_value = "2s", value_parser = bloatbox::flags::DurationFlag)]
    warmup: std::time::Duration,
    /// TCP congestion control of the flows.
    #[arg(long, value_enum, default_value = "cubic")]
    cc: bloatbox::load::tcp::CongestionControl,
    /// ICMP ping interval; 0 = no ping.
    #[arg(long, default_value = "100ms", value_parser = bloatbox::flags::DurationFlag)]
    ping_interval: std::time::Duration,
    /// No UDP_RR probe.
    #[arg(long)]
    no_udp_rr: bool,
    /// Let the TCP flows negotiate ECN (net.ipv4.tcp_ecn = 1 in both namespaces).
    #[arg(long)]
    ecn: bool,
    /// Also run the ping and UDP_RR probes marked ECT(1), the L4S
    /// identifier, and report their latency (L) apart from the classic
    /// probes' (C).
    #[arg(long)]
    l4s: bool,
    /// Run a scalable (L4S) UDP sender left to right beside the TCP flows:
    /// ECT(1), Prague's reaction to the CE marks its receiver counts back;
    /// its rate and marks are reported.
    #[arg(long)]
    scalable_udp: bool,
    /// SCHED_FIFO priority of the datapath thread (0 = normal scheduling).
    /// On a busy machine a normally scheduled datapath reads the TAPs late,
    /// their kernel queues (`[tap] txqueuelen`) overflow and TCP backs off
    /// before any emulated queue fills.
    #[arg(long, value_name = "PRIO", default_value_t = 50, value_parser = clap::value_parser!(u8).range(0..=99))]
    realtime: u8,
    /// Write the report as JSON (docs/report.schema.json): options, each
    /// config's link, results, final qdisc trees and every sample.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the plots here, each as SVG and PNG: latency (ping),
    /// udp-rr, latency-cdf and throughput (goodput).
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
    /// Write one flent data file per config here (flent's rrul_be_nflows
    /// series: each flow's goodput, their sums and Jain's fairness index,
    /// ping and UDP_RR), for `flent -i FILE -p all_scaled`, `-f summary`
    /// and flent's GUI.
    #[arg(long, value_name = "DIR")]
    flent: Option<PathBuf>,
    /// Every column of the table (ping's min/max/mdev, UDP_RR's p50 and
    /// rate, Jain's fairness index of the flows each way, marks, the
    /// datapath's cost); the default fits 100 columns.
    #[arg(long)]
    wide: bool,
    /// Run the phases as a lesson on the terminal UI: each configuration's
    /// caption, the probes' round trips live beside the link's queue
    /// delay, each phase's row when it ends; keys p pause, n next phase,
    /// r repeat phase, q quit. The table (and --json, --plots, --flent) follow on
    /// exit, for the phases that ended.
    #[arg(long)]
    tui: bool,
    /// Where logs go while the lesson owns the terminal (with --tui).
    #[arg(long, value_name = "FILE", default_value = "/tmp/bloatbox.log")]
    log: PathBuf,
}

impl LoadArgs {
    fn options(&self) -> anyhow::Result<experiment::TestOptions> {
        anyhow::ensure!(
            self.warmup < self.duration,
            "--warmup {:?} must be shorter than --duration {:?}",
            self.warmup,
            self.duration
        );
        Ok(experiment::TestOptions {
            flows: self.flows.into(),
            bidirectional: !self.upload_only,
            duration: self.duration,
            warmup: self.warmup,
            cc: self.cc,
            ping_interval: (!self.ping_interval.is_zero()).then_some(self.ping_interval),
            udp_rr: !self.no_udp_rr,
            l4s: self.l4s,
            scalable: self.scalable_udp,
            ecn: self.ecn,
            realtime: (self.realtime > 0).then_some(self.realtime),
        })
    }
}

/// `test` and `demo`: run, print the table, write JSON, plots and flent
/// data files.
fn run_test(cands: &[experiment::Candidate], load: &LoadArgs) -> anyhow::Result<u8> {
    bloatbox::netns::require_privileges()?;
    let outcome = if load.tui {
        experiment::lesson::run(cands, &load.options()?)?
    } else {
        experiment::run_all(cands, &load.options()?)?
    };
    // The phases that ended are printed and written even when a later one
    // failed; the failure, naming its phase, comes last.
    let report = &outcome.report;
    if report.results.is_empty() {
        bloatbox::errln!("no phase ended: no table, JSON, plots or flent files");
    } else {
        bloatbox::out!("{}", experiment::table::render(report, load.wide))?;
        if let Some(path) = &load.json {
            report.write_json(path)?;
            bloatbox::outln!("JSON written to {}", path.display())?;
        }
        if let Some(dir) = &load.plots {
            for p in report.write_plots(dir)? {
                bloatbox::outln!("plot written to {}", p.display())?;
            }
        }
        if let Some(dir) = &load.flent {
            for p in experiment::flent::write(report, dir)? {
                bloatbox::outln!("flent data written to {}", p.display())?;
            }
        }
    }
    match outcome.failure {
        Some(f) => Err(f.into_error()),
        None => Ok(0),
    }
}

/// Logs to stderr, or to `file` while the TUI owns the terminal; at
/// `default` level unless RUST_LOG says otherwise.
fn init_logs(file: Option<&std::path::Path>, default: &str) -> std::io::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let logs = tracing_subscriber::fmt().with_env_filter(filter);
    match file {
        Some(path) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            logs.with_writer(std::sync::Mutex::new(f))
                .with_ansi(false)
                .init()
        }
        None => logs
            .with_writer(bloatbox::progress::LogWriter)
            .with_ansi(std::io::stderr().is_terminal())
            .init(),
    }
    Ok(())
}

/// Whether `up` opens the TUI by itself: standard input and output are a
/// terminal and this process is in its foreground (not `bloatbox up &`).
fn foreground_terminal() -> bool {
    let stdin = std::io::stdin();
    stdin.is_terminal()
        && std::io::stdout().is_terminal()
        && bloatbox::process::in_foreground(stdin.as_fd())
}

fn main() -> ExitCode {
    let mut cli = Cli::parse();
    if let Cmd::Up { tui, headless, .. } = &mut cli.command {
        *tui = *tui || (!*headless && foreground_terminal());
    }
    let log_file = match &cli.command {
        Cmd::Up { tui: true, log, .. } | Cmd::Top { log, .. } => Some(log.as_path()),
        Cmd::Test { load, .. } | Cmd::Demo { load } if load.tui => Some(load.log.as_path()),
        _ => None,
    };
    // `run` shares stderr with the commands it runs: only warnings.
    let level = match &cli.command {
        Cmd::Run(_) => "warn",
        _ => "info",
    };
    if let Err(e) = init_logs(log_file, level) {
        bloatbox::errln!("error: cannot open the log file: {e}");
        return ExitCode::FAILURE;
    }
    let result = match cli.command {
        Cmd::Up {
            config,
            sets,
            realtime,
            tui,
            headless: _,
            log: _,
            attach,
            wire,
            capture,
            metrics: m,
        } => {
            let opts = app::UpOptions {
                overrides: sets,
                realtime,
                tui,
                capture: capture.spec(),
                metrics_listen: m.metrics_listen.map(|a| (a, m.metrics_allow_remote)),
                metrics_file: m.metrics_file.map(|f| (f, m.metrics_period)),
                attach,
                wire: wire.map(|ends| bloatbox::wire::Wire {
                    left: ends[0].clone(),
                    right: ends[1].clone(),
                }),
            };
            app::up(config.as_deref(), &opts).map(|()| 0)
        }
        Cmd::Down { config, runs } => app::down(config.as_deref(), runs).map(|()| 0),
        Cmd::Exec { side, config, cmd } => app::exec(side, config.as_deref(), &cmd),
        Cmd::Check { file } => app::check(&file).map(|()| 0),
        Cmd::Test {
            configs,
            sets,
            load,
        } => {
            let cands = if configs.is_empty() {
                Ok(vec![experiment::Candidate {
                    name: "default".into(),
                    config: bloatbox::config::Config::embedded_default(),
                    file: None,
                }])
            } else {
                configs
                    .iter()
                    .map(|p| experiment::Candidate::from_file(p))
                    .collect()
            };
            cands
                .and_then(|c| experiment::Candidate::with_overrides(c, &sets))
                .and_then(|c| run_test(&c, &load))
        }
        Cmd::Demo { load } => experiment::Candidate::demo().and_then(|c| run_test(&c, &load)),
        Cmd::Sim {
            scenario,
            out,
            trace,
        } => bloatbox::sim::run_cli(&scenario, out.as_deref(), trace).map(|()| 0),
        Cmd::Metrics { target } => daemon::metrics(&target),
        Cmd::Stats { json, target } => app::stats(&target, json).map(|()| 0),
        Cmd::Run(args) => Ok(bloatbox::harness::run::run(&args)),
        Cmd::Tc { target, args } => target
            .take_from(args)
            .and_then(|(target, args)| daemon::tc(&target, &args)),
        Cmd::Set { json, target, args } => target
            .take_from(args)
            .and_then(|(target, args)| daemon::set(&target, &args, json)),
        Cmd::Ethtool { args } => Target::default()
            .take_from(std::iter::once("ethtool".to_string()).chain(args).collect())
            .and_then(|(target, args)| daemon::ethtool(&target, &args)),
        Cmd::Top { target, log: _ } => daemon::top(&target),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            bloatbox::errln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
