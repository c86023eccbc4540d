//! The daemon's control socket (read-only for now): a Unix stream socket,
//! mode 0600, speaking JSON lines. A client writes one request line and reads
//! one reply line. The only request so far is `stats` (also accepted as
//! `{"cmd":"stats"}`), answered with the latest `LiveSnapshot` as JSON.
//!
//! The server is a plain blocking thread that reads snapshots from the
//! datapath's `SnapshotReader`; it never touches the datapath itself.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::datapath::SnapshotReader;

/// How long a client may take to send its request or read the reply.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// Longest request line accepted.
const MAX_REQUEST: u64 = 4096;

/// The running control socket; dropping it stops the thread and removes the
/// socket file.
pub struct ControlServer {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ControlServer {
    /// Binds `path` (replacing a stale socket file no daemon listens on) with
    /// mode 0600 and starts serving `snapshots`.
    pub fn start(path: &Path, snapshots: SnapshotReader) -> io::Result<ControlServer> {
        if path.exists() {
            if UnixStream::connect(path).is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!(
                        "control socket {} is in use: another bloatbox daemon is running",
                        path.display()
                    ),
                ));
            }
            std::fs::remove_file(path)?;
        }
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir)?;
            }
        }
        // The socket is created with mode 0600 from the start (no window in
        // which others could connect).
        let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o177));
        let bound = UnixListener::bind(path);
        nix::sys::stat::umask(old);
        let listener = bound.map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("binding control socket {}: {e}", path.display()),
            )
        })?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("bloatbox-control".into())
                .spawn(move || serve(listener, snapshots, &stop))?
        };
        Ok(ControlServer {
            path: path.to_path_buf(),
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept.
        let _ = UnixStream::connect(&self.path);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

fn serve(listener: UnixListener, snapshots: SnapshotReader, stop: &AtomicBool) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        match conn {
            Ok(stream) => {
                if let Err(e) = answer(stream, &snapshots) {
                    tracing::debug!("control client: {e}");
                }
            }
            Err(e) => tracing::warn!("control socket accept: {e}"),
        }
    }
}

/// Reads one request line and writes one reply line.
fn answer(stream: UnixStream, snapshots: &SnapshotReader) -> io::Result<()> {
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let mut line = String::new();
    BufReader::new((&stream).take(MAX_REQUEST)).read_line(&mut line)?;
    let reply = reply_to(line.trim(), snapshots);
    let mut w = &stream;
    w.write_all(reply.as_bytes())?;
    w.write_all(b"\n")
}

fn reply_to(request: &str, snapshots: &SnapshotReader) -> String {
    let cmd = match serde_json::from_str::<serde_json::Value>(request) {
        Ok(v) => v
            .get("cmd")
            .and_then(|c| c.as_str())
            .map(str::to_string)
            .unwrap_or_default(),
        Err(_) => request.to_string(),
    };
    match cmd.as_str() {
        "stats" => match snapshots.latest() {
            Some(snap) => serde_json::to_string(&*snap)
                .unwrap_or_else(|e| error_json(&format!("serializing stats: {e}"))),
            None => error_json("no snapshot yet: the datapath is starting, retry in a moment"),
        },
        other => error_json(&format!(
            "unknown request {other:?}: the only request is \"stats\""
        )),
    }
}

fn error_json(msg: &str) -> String {
    serde_json::json!({ "error": msg }).to_string()
}

/// Client side: asks the daemon at `path` for its stats.
pub fn request_stats(path: &Path) -> anyhow::Result<serde_json::Value> {
    let stream = UnixStream::connect(path).map_err(|e| {
        anyhow::anyhow!(
            "cannot connect to the control socket {}: {e} (is `bloatbox up` running with the same config?)",
            path.display()
        )
    })?;
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    (&stream).write_all(b"stats\n")?;
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line)?;
    let value: serde_json::Value = serde_json::from_str(line.trim())
        .map_err(|e| anyhow::anyhow!("the daemon's reply is not JSON ({e}): {line:?}"))?;
    if let Some(err) = value.get("error").and_then(|e| e.as_str()) {
        anyhow::bail!("the daemon answered: {err}");
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_errors_before_the_first_snapshot_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ctl.sock");
        let server = ControlServer::start(&path, SnapshotReader::default()).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let err = request_stats(&path).unwrap_err().to_string();
        assert!(err.contains("no snapshot yet"), "{err}");
        assert!(ControlServer::start(&path, SnapshotReader::default()).is_err());
        drop(server);
        assert!(!path.exists());
        let err = request_stats(&path).unwrap_err().to_string();
        assert!(err.contains("is `bloatbox up` running"), "{err}");
    }

    #[test]
    fn unknown_requests_are_answered_with_an_error() {
        let r = SnapshotReader::default();
        assert!(reply_to("frobnicate", &r).contains("unknown request"));
        let v: serde_json::Value = serde_json::from_str(&reply_to(r#"{"cmd":"x"}"#, &r)).unwrap();
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .contains("unknown request \"x\""),
            "{v}"
        );
    }
}
