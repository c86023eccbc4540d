//! The subcommands that talk to a running daemon over its control socket:
//! `bloatbox tc`, `bloatbox set`, `bloatbox metrics` and `bloatbox top`
//! (`bloatbox stats` has its own module). Each finds the daemon through
//! its `Target` (`super::target`).

use super::target::Target;
use crate::control::set::{group_ethtool_words, inline_files, Effective};
use crate::control::{decode, Client, Request, TcReply};
use crate::tui::RemoteControl;

/// Exit code of `bloatbox set` when the daemon refuses.
pub const TC_FAILED: u8 = crate::tc::FAILED;

/// The daemon's socket, or an error naming which one did not answer.
fn client(target: &Target) -> anyhow::Result<Client> {
    let (_, socket) = target.resolve()?;
    Client::connect(&socket)
}

/// `bloatbox tc ARGS...`: prints what the daemon returns and exits as tc
/// would (`crate::tc::Printed`). With `-c FILE` and no daemon at that
/// configuration's socket, answers from the configuration alone
/// (`super::offline`), and says so on stderr.
pub fn tc(target: &Target, args: &[String]) -> anyhow::Result<u8> {
    let line = format!("tc {}", args.join(" "));
    let request = Request::Tc { line: line.clone() };
    let (cfg, socket) = target.resolve()?;
    let no_daemon = std::os::unix::net::UnixStream::connect(&socket).is_err_and(|e| {
        matches!(
            e.kind(),
            std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
        )
    });
    let answer = match &target.config {
        Some(file) if no_daemon => {
            crate::errln!(
                "bloatbox tc: no daemon at {}: answering from {} as the link would start (offline; a change is not kept)",
                socket.display(),
                file.display()
            );
            super::offline::answer(&cfg, &request)?
        }
        _ => Client::connect(&socket)?.call(&request)?,
    };
    let (show, result) = match answer {
        Ok(reply) => {
            let reply = decode::<TcReply>(reply)?;
            // The daemon sends the device's tree back for a change only.
            (reply.config.is_none(), Ok(reply.output))
        }
        Err(e) => (false, Err(e)),
    };
    let printed = crate::tc::Printed::of(&line, show, result);
    crate::out!("{}", printed.stdout)?;
    eprint!("{}", printed.stderr);
    Ok(printed.code)
}

/// `bloatbox set left.rate=10mbit left.loss=1% ...` or `bloatbox set
/// ethtool -K left tso off`: prints what each ethtool line answers, in
/// ethtool's text, then the effective link of both directions; with `json` (or a `--json` among the
/// arguments) all of it as JSON. Exits 1 when an ethtool line failed as
/// ethtool would (a `-K` that could change nothing), 2 when the daemon
/// refused.
pub fn set(target: &Target, args: &[String], json: bool) -> anyhow::Result<u8> {
    set_or_ethtool(target, args, json, false)
}

/// `bloatbox ethtool ...`: what ethtool prints, and nothing else (`set
/// ethtool ...` adds the effective link).
pub fn ethtool(target: &Target, args: &[String]) -> anyhow::Result<u8> {
    set_or_ethtool(target, args, false, true)
}

fn set_or_ethtool(
    target: &Target,
    args: &[String],
    json: bool,
    as_ethtool: bool,
) -> anyhow::Result<u8> {
    let json = json || args.iter().any(|a| a == "--json");
    let args: Vec<String> = args.iter().filter(|a| *a != "--json").cloned().collect();
    let args = group_ethtool_words(&args);
    let args = match inline_files(&args, &std::env::current_dir()?) {
        Ok(args) => args,
        Err(e) => {
            crate::errln!("error: {e}");
            return Ok(TC_FAILED);
        }
    };
    for warning in crate::control::set::warnings(&args) {
        crate::errln!("warning: {warning}");
    }
    match client(target)?.call(&Request::Set { args })? {
        Ok(reply) if json => {
            crate::outln!("{}", serde_json::to_string_pretty(&reply)?)?;
            Ok(0)
        }
        Ok(reply) => {
            let effective: Effective = decode(reply)?;
            let mut code = 0;
            for r in &effective.ethtool {
                crate::out!("{}", r.stdout)?;
                if let Some(e) = &r.error {
                    crate::errln!("{e}");
                    code = 1;
                }
            }
            if !as_ethtool {
                crate::out!("{}", effective.text())?;
            }
            Ok(code)
        }
        Err(e) => {
            crate::errln!("error: {e}");
            Ok(TC_FAILED)
        }
    }
}

/// `bloatbox metrics`: prints every counter as OpenMetrics text.
pub fn metrics(target: &Target) -> anyhow::Result<u8> {
    let text: String = client(target)?.request(&Request::Metrics)?;
    crate::out!("{text}")?;
    Ok(0)
}

/// `bloatbox top`: the TUI attached to a running daemon; quitting it leaves
/// the daemon running.
pub fn top(target: &Target) -> anyhow::Result<u8> {
    let (cfg, socket) = target.resolve()?;
    let mut control = RemoteControl::connect(&socket)?;
    crate::tui::run(&mut control, cfg.daemon.snapshot_hz)?;
    Ok(0)
}
