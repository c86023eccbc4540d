//! Client side of the control socket: `Client` (one connection, any number
//! of requests), `request_stats` for `bloatbox stats` and `down`, and
//! `decode`, which reads a reply as the type the server serialized (a
//! missing or mistyped field is an error, never a default).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use super::proto::Request;
use crate::bridge::BridgeSnapshot;
use crate::packet::DropReason;

/// How long the client waits for a reply (a `tc` request may take up to the
/// server's 2 s datapath timeout).
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// The daemon's answer `{"error": ...}`: its refusal of a request, in the
/// words it sent (the socket carries the daemon's typed error as text).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DaemonRefusal {
    /// What the daemon said.
    pub message: String,
}

/// A reply that is not of the type the request's answer has: serde's
/// error (in the message, not a source, so a chain does not repeat it).
#[derive(Debug, thiserror::Error)]
#[error("unexpected reply from the daemon: {0}")]
pub struct DecodeError(pub serde_json::Error);

/// One reply line read: the daemon's value (`{"ok": ...}`, inner `Ok`),
/// its refusal (`{"error": ...}`, inner `Err`), or an error for a line
/// that is neither.
pub fn parse_reply(reply: &str) -> anyhow::Result<Result<serde_json::Value, DaemonRefusal>> {
    let mut value: serde_json::Value = serde_json::from_str(reply.trim())
        .map_err(|e| anyhow::anyhow!("the daemon's reply is not JSON ({e}): {reply:?}"))?;
    if let Some(err) = value.get("error") {
        return Ok(Err(DaemonRefusal {
            message: err.as_str().unwrap_or_default().to_string(),
        }));
    }
    match value.get_mut("ok") {
        Some(ok) => Ok(Ok(ok.take())),
        None => anyhow::bail!("the daemon's reply has neither ok nor error: {reply:?}"),
    }
}

/// One connection to the daemon.
pub struct Client {
    reader: BufReader<UnixStream>,
}

impl Client {
    /// Connects to the daemon's control socket at `path`; the error says
    /// whether no daemon runs there or the socket refused this user.
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
    pub fn call(
        &mut self,
        req: &Request,
    ) -> anyhow::Result<Result<serde_json::Value, DaemonRefusal>> {
        let mut line = serde_json::to_string(req)?;
        line.push('\n');
        self.reader.get_mut().write_all(line.as_bytes())?;
        let mut reply = String::new();
        if self.reader.read_line(&mut reply)? == 0 {
            anyhow::bail!("the daemon closed the connection without replying");
        }
        parse_reply(&reply)
    }

    /// `call`, with the daemon's error as an error too.
    pub fn call_ok(&mut self, req: &Request) -> anyhow::Result<serde_json::Value> {
        self.call(req)?
            .map_err(|e| anyhow::anyhow!("the daemon answered: {e}"))
    }

    /// `call_ok`, with the reply read as `T` (`decode`).
    pub fn request<T: serde::de::DeserializeOwned>(&mut self, req: &Request) -> anyhow::Result<T> {
        Ok(decode(self.call_ok(req)?)?)
    }
}

/// A reply read as the type the server serialized it from: `LiveSnapshot`
/// for `snapshot` and `stats` (then `restore_drops_by_reason`), `TcReply`
/// for `tc`, a `String` for `metrics`.
pub fn decode<T: serde::de::DeserializeOwned>(reply: serde_json::Value) -> Result<T, DecodeError> {
    serde_json::from_value(reply).map_err(DecodeError)
}

/// Rebuilds each path's `drops_by_reason` of a snapshot read from a reply,
/// which JSON does not carry back (`PathSnapshot`), from its counters, as
/// the daemon built it: the non-zero reasons, by name.
pub fn restore_drops_by_reason(bridge: &mut BridgeSnapshot) {
    for path in &mut bridge.paths {
        path.drops_by_reason = DropReason::ALL
            .into_iter()
            .map(|r| (r.name(), path.counters.drops[r.index()]))
            .filter(|(_, n)| *n > 0)
            .collect();
    }
}

/// The daemon's stats (path counters since the last `reset_stats`).
pub fn request_stats(path: &Path) -> anyhow::Result<serde_json::Value> {
    Client::connect(path)?.call_ok(&Request::Stats)
}
