//! `RemoteControl`: the TUI's `Control` over a running daemon's control
//! socket, for `bloatbox top`. Link changes go as `set` arguments and tc
//! lines as `tc` requests, exactly as `bloatbox set` and `bloatbox tc` send
//! them; snapshots are the daemon's `snapshot` replies.

use std::path::Path;

use super::{Action, Control, ControlError, Snapshot};
use crate::control::field::set_arg;
use crate::control::{decode, restore_drops_by_reason, Client, DecodeError, Request, TcReply};
use crate::datapath::LiveSnapshot;
use crate::time::Instant;

/// The TUI's view of a daemon it reaches over the control socket.
pub struct RemoteControl {
    path: std::path::PathBuf,
    client: Client,
    /// Time of the last snapshot handed to the TUI.
    last: Option<Instant>,
    /// Whether the last snapshot request reached a daemon.
    connected: bool,
}

impl RemoteControl {
    /// A control over the daemon's socket at `path` (connects at once, so a
    /// wrong path fails here).
    pub fn connect(path: &Path) -> anyhow::Result<RemoteControl> {
        Ok(RemoteControl {
            path: path.to_path_buf(),
            client: Client::connect(path)?,
            last: None,
            connected: true,
        })
    }

    /// One request; after a connection error (the server closes idle
    /// connections, the daemon may have restarted) reconnects once.
    fn call(&mut self, req: &Request) -> Result<serde_json::Value, ControlError> {
        let first = self.client.call(req);
        let reply = match first {
            Ok(r) => r,
            Err(_) => Client::connect(&self.path)
                .and_then(|mut c| {
                    let r = c.call(req);
                    self.client = c;
                    r
                })
                .map_err(ControlError::Socket)?,
        };
        Ok(reply?)
    }
}

/// The TUI snapshot in a `snapshot` reply.
fn tui_snapshot(reply: serde_json::Value) -> Result<Snapshot, DecodeError> {
    let mut live: LiveSnapshot = decode(reply)?;
    restore_drops_by_reason(&mut live.bridge);
    Ok(Snapshot::of(&live))
}

impl Control for RemoteControl {
    fn send(&mut self, action: &Action) -> Result<String, ControlError> {
        let mut call = |req: Request| self.call(&req);
        match action {
            Action::Quit => Ok(String::new()),
            Action::Probes(_) => Err(ControlError::ProbesElsewhere),
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
                    out.push_str(&decode::<TcReply>(reply)?.output);
                }
                Ok(out)
            }
        }
    }

    fn snapshot(&mut self) -> Option<Snapshot> {
        let reply = self.call(&Request::Snapshot);
        self.connected = reply.is_ok();
        let s = tui_snapshot(reply.ok()?).ok()?;
        if self.last == Some(s.taken_at) {
            return None;
        }
        self.last = Some(s.taken_at);
        Some(s)
    }

    fn connected(&self) -> bool {
        self.connected
    }
}
