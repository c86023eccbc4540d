//! The `bloatbox` command line: parses arguments with clap and hands over to
//! `bloatbox::app`, which implements each subcommand.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use bloatbox::app::{self, Side};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "bloatbox", version, about = "A bufferbloat emulator appliance")]
struct Cli {
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
        /// Run the datapath thread under SCHED_FIFO at this priority
        /// (1..=99): keeps pacing exact on a busy machine.
        #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99))]
        realtime: Option<u8>,
        /// Show the terminal UI; quitting it stops the daemon. Logs go to
        /// the --log file meanwhile.
        #[arg(long)]
        tui: bool,
        /// Where logs go while the TUI owns the terminal.
        #[arg(long, value_name = "FILE", default_value = "/tmp/bloatbox.log")]
        log: PathBuf,
    },
    /// Remove namespaces and TAPs a killed run left behind (needs root).
    Down {
        #[arg(short, long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Run a command inside the left or right namespace; its exit code is
    /// passed through.
    Exec {
        side: Side,
        #[arg(short, long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required = true, value_name = "CMD")]
        cmd: Vec<String>,
    },
    /// Validate a configuration file and print what it sets up.
    Check {
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Bring up a link of its own (unique names), run a server on the right,
    /// wait until it is ready, run a command on the left, exit with its code
    /// and tear everything down (needs root).
    Run(Box<bloatbox::harness::run::RunArgs>),
    /// Run a simulation scenario (no root, no namespaces) and print its
    /// report.
    Sim {
        #[arg(value_name = "SCENARIO")]
        scenario: PathBuf,
        /// Also write trace.jsonl, summary.json and qdisc.json here.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Print the running daemon's counters.
    Stats {
        /// The raw snapshot as JSON.
        #[arg(long)]
        json: bool,
        #[arg(short, long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
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
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .init(),
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let log_file = match &cli.command {
        Cmd::Up { tui: true, log, .. } => Some(log.as_path()),
        _ => None,
    };
    // `run` shares stderr with the commands it runs: only warnings.
    let level = match &cli.command {
        Cmd::Run(_) => "warn",
        _ => "info",
    };
    if let Err(e) = init_logs(log_file, level) {
        eprintln!("error: cannot open the log file: {e}");
        return ExitCode::FAILURE;
    }
    let result = match cli.command {
        Cmd::Up {
            config,
            realtime,
            tui,
            log: _,
        } => app::up(config.as_deref(), &app::UpOptions { realtime, tui }).map(|()| 0),
        Cmd::Down { config } => app::down(config.as_deref()).map(|()| 0),
        Cmd::Exec { side, config, cmd } => app::exec(side, config.as_deref(), &cmd),
        Cmd::Check { file } => app::check(&file).map(|()| 0),
        Cmd::Sim { scenario, out } => bloatbox::sim::run_cli(&scenario, out.as_deref()).map(|()| 0),
        Cmd::Stats { json, config } => app::stats(config.as_deref(), json).map(|()| 0),
        Cmd::Run(args) => Ok(bloatbox::harness::run::run(&args)),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
