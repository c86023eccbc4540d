//! Client side of the control socket: `Client` (one connection, any number
//! of requests), `request_stats` for `bloatbox stats` and `down`, and
//! `RemoteControl`, the TUI's `Control` for `bloatbox top`.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use super::proto::Request;
use crate::bridge::BridgeSnapshot;
use crate::dir::Dir;
use crate::packet::DropReason;
use crate::time::{Instant, NS_PER_US};
use crate::tui::{Action, LinkField};

/// How long the client waits for a reply (a `tc` request may take up to the
/// server's 2 s datapath timeout).
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// One connection to the daemon.
pub struct Client {
    reader: BufReader<UnixStream>,
}

impl Client {
    pub fn connect(path: &Path) -> anyhow::Result<Client> {
        let stream = UnixStream::connect(path).map_err(|e| {
            let hint = if e.kind() == std::io::ErrorKind::PermissionDenied {
                "only the daemon's user or root may use it"
            } else {
                "is `bloatbox up` running with the same config?"
            };
            anyhow::anyhow!(
                "cannot connect to the control socket {}: {e} ({hint})",
                path.display()
            )
        })?;
        stream.set_read_timeout(Some(REPLY_TIMEOUT))?;
        stream.set_write_timeout(Some(REPLY_TIMEOUT))?;
        Ok(Client {
            reader: BufReader::new(stream),
        })
    }

    /// Sends one request. The outer error is the connection's; the inner
    /// one is the daemon's answer `{"error": ...}`.
    pub fn call(&mut self, req: &Request) -> anyhow::Result<Result<serde_json::Value, String>> {
        let mut line = serde_json::to_string(req)?;
        line.push('\n');
        self.reader.get_mut().write_all(line.as_bytes())?;
        let mut reply = String::new();
        if self.reader.read_line(&mut reply)? == 0 {
            anyhow::bail!("the daemon closed the connection without replying");
        }
        let mut value: serde_json::Value = serde_json::from_str(reply.trim())
            .map_err(|e| anyhow::anyhow!("the daemon's reply is not JSON ({e}): {reply:?}"))?;
        if let Some(err) = value.get("error") {
            return Ok(Err(err.as_str().unwrap_or_default().to_string()));
        }
        match value.get_mut("ok") {
            Some(ok) => Ok(Ok(ok.take())),
            None => anyhow::bail!("the daemon's reply has neither ok nor error: {reply:?}"),
        }
    }

    /// `call`, with the daemon's error as an error too.
    pub fn call_ok(&mut self, req: &Request) -> anyhow::Result<serde_json::Value> {
        self.call(req)?
            .map_err(|e| anyhow::anyhow!("the daemon answered: {e}"))
    }
}

/// The daemon's stats (path counters since the last `reset_stats`).
pub fn request_stats(path: &Path) -> anyhow::Result<serde_json::Value> {
    Client::connect(path)?.call_ok(&Request::Stats)
}

/// The TUI's view of a daemon it reaches over the control socket.
pub struct RemoteControl {
    path: std::path::PathBuf,
    client: Client,
    /// Time of the last snapshot handed to the TUI.
    last: Option<Instant>,
}

impl RemoteControl {
    pub fn connect(path: &Path) -> anyhow::Result<RemoteControl> {
        Ok(RemoteControl {
            path: path.to_path_buf(),
            client: Client::connect(path)?,
            last: None,
        })
    }

    /// One request; after a connection error (the server closes idle
    /// connections, the daemon may have restarted) reconnects once.
    fn call(&mut self, req: &Request) -> Result<serde_json::Value, String> {
        let first = self.client.call(req);
        let reply = match first {
            Ok(r) => r,
            Err(_) => Client::connect(&self.path)
                .and_then(|mut c| {
                    let r = c.call(req);
                    self.client = c;
                    r
                })
                .map_err(|e| format!("control socket: {e:#}"))?,
        };
        reply
    }
}

/// A `set` argument that `LinkField::parse` reads back as exactly `value`
/// (core units: bytes/s, ns). The TUI sends its link changes as these, in
/// the daemon as over the socket, so they go through the same field edit
/// as `bloatbox set`.
pub(crate) fn set_arg(dir: Dir, field: LinkField, value: u64) -> String {
    let dev = dir.dev();
    let text = match field {
        LinkField::Rate => format!("{value}bps"),
        LinkField::Delay => format!("{value}ns"),
        _ => value.to_string(),
    };
    format!("{dev}.{}={text}", field.name())
}

/// The TUI snapshot in a `snapshot` reply.
fn tui_snapshot(v: &serde_json::Value) -> Result<crate::tui::Snapshot, String> {
    let mut bridge: BridgeSnapshot = serde_json::from_value(v["bridge"].clone())
        .map_err(|e| format!("snapshot from the daemon: {e}"))?;
    for path in &mut bridge.paths {
        path.drops_by_reason = DropReason::ALL
            .into_iter()
            .map(|r| (r.name(), path.counters.drops[r.index()]))
            .filter(|(_, n)| *n > 0)
            .collect();
    }
    let n = |p: &str| v.pointer(p).and_then(|x| x.as_u64()).unwrap_or(0);
    Ok(crate::tui::Snapshot {
        bridge,
        lateness_us: [
            n("/lateness/p50_ns") / NS_PER_US,
            n("/lateness/p99_ns") / NS_PER_US,
            n("/lateness/p999_ns") / NS_PER_US,
        ],
        wakeups: n("/wakeups/total"),
        taken_at: Instant::from_nanos(n("/at")),
    })
}

impl crate::tui::Control for RemoteControl {
    fn send(&mut self, action: &Action) -> Result<String, String> {
        let mut call = |req: Request| self.call(&req);
        match action {
            Action::Quit => Ok(String::new()),
            Action::SetLink { dir, field, value } => {
                call(Request::Set {
                    args: vec![set_arg(*dir, *field, *value)],
                })?;
                Ok(format!("{} {}", field.name(), field.show(*value)))
            }
            Action::Tc(lines) => {
                let mut out = String::new();
                for line in lines.lines().filter(|l| !l.trim().is_empty()) {
                    let reply = call(Request::Tc {
                        line: line.to_string(),
                    })?;
                    out.push_str(reply["output"].as_str().unwrap_or_default());
                }
                Ok(out)
            }
        }
    }

    fn snapshot(&mut self) -> Option<crate::tui::Snapshot> {
        let v = self.call(&Request::Snapshot).ok()?;
        let s = tui_snapshot(&v).ok()?;
        if self.last == Some(s.taken_at) {
            return None;
        }
        self.last = Some(s.taken_at);
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::LinkParams;

    #[test]
    fn tui_values_round_trip_through_set_arguments() {
        for (field, value) in [
            (LinkField::Rate, 1_250_000),
            (LinkField::Rate, 0),
            (LinkField::Delay, 20_000_123),
            (LinkField::TxRing, 64),
            (LinkField::Bql, 0),
            (LinkField::RxUsecs, 20),
        ] {
            let mut p = [LinkParams::default(); 2];
            let arg = set_arg(Dir::RightToLeft, field, value);
            super::super::set::apply_set(std::slice::from_ref(&arg), &mut p).unwrap();
            let got = match field {
                LinkField::Rate => p[1].rate_bytes_ps,
                LinkField::Delay => p[1].delay_ns,
                LinkField::TxRing => u64::from(p[1].tx_ring),
                LinkField::Bql => u64::from(p[1].bql),
                _ => u64::from(p[1].rx_usecs),
            };
            assert_eq!(got, value, "{arg}");
        }
    }
}
