//! `GET /metrics` over HTTP on its own thread: a loopback address unless
//! remote scrapers are explicitly allowed, one connection at a time, each
//! bounded in size and time, answered from the snapshot slot.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::datapath::SnapshotReader;

use super::render::current;

/// The HTTP Content-Type of the text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::fixture::publish;
    use crate::metrics::parse_samples;

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
        publish(&reader);
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
}
