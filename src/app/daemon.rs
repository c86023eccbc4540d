//! The subcommands that talk to a running daemon over its control socket:
//! `bloatbox tc`, `bloatbox set`, `bloatbox metrics` and `bloatbox top`
//! (`bloatbox stats` has its own module). Each finds the socket from the
//! configuration, like `up` does.

use std::path::Path;

use crate::control::set::{group_ethtool_words, inline_files};
use crate::control::{decode, Client, Request, TcReply};
use crate::tui::RemoteControl;

/// Exit code of `tc` (and `bloatbox tc`) when the command fails.
pub const TC_FAILED: u8 = 2;

fn socket(config: Option<&Path>) -> anyhow::Result<std::path::PathBuf> {
    Ok(crate::live::load(config)?.control_socket())
}

/// `bloatbox tc ARGS...`: prints what the daemon returns; on tc's error
/// prints its text to stderr and returns exit code 2.
pub fn tc(config: Option<&Path>, args: &[String]) -> anyhow::Result<u8> {
    let line = format!("tc {}", args.join(" "));
    match Client::connect(&socket(config)?)?.call(&Request::Tc { line })? {
        Ok(reply) => {
            crate::out!(
                "{}",
                decode::<TcReply>(reply).map_err(anyhow::Error::msg)?.output
            )?;
            Ok(0)
        }
        Err(e) => {
            eprintln!("{}", e.trim_end());
            Ok(TC_FAILED)
        }
    }
}

/// `bloatbox set left.rate=10mbit left.loss=1% ...` or `bloatbox set
/// ethtool -C left rx-usecs 20`: prints the effective link parameters and
/// shapes of both directions.
pub fn set(config: Option<&Path>, args: &[String]) -> anyhow::Result<u8> {
    let args = group_ethtool_words(args);
    let args = match inline_files(&args, &std::env::current_dir()?) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(TC_FAILED);
        }
    };
    for warning in crate::control::set::warnings(&args) {
        eprintln!("warning: {warning}");
    }
    match Client::connect(&socket(config)?)?.call(&Request::Set { args })? {
        Ok(reply) => {
            crate::outln!("{}", serde_json::to_string_pretty(&reply)?)?;
            Ok(0)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(TC_FAILED)
        }
    }
}

/// `bloatbox metrics`: prints every counter as OpenMetrics text.
pub fn metrics(config: Option<&Path>) -> anyhow::Result<u8> {
    let text: String = Client::connect(&socket(config)?)?.request(&Request::Metrics)?;
    crate::out!("{text}")?;
    Ok(0)
}

/// `bloatbox top`: the TUI attached to a running daemon; quitting it leaves
/// the daemon running.
pub fn top(config: Option<&Path>) -> anyhow::Result<u8> {
    let cfg = crate::live::load(config)?;
    let mut control = RemoteControl::connect(&cfg.control_socket())?;
    crate::tui::run(&mut control, cfg.daemon.snapshot_hz)?;
    Ok(0)
}
