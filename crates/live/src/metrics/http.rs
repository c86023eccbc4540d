//! `GET /metrics` over HTTP/1.x, served by hyper on a small current-thread
//! tokio runtime of its own thread (the datapath stays on plain threads and
//! never waits for it): a loopback address unless remote scrapers are
//! explicitly allowed, at most `MAX_CONNECTIONS` connections at once, each
//! bounded in head size and in time, answered from the snapshot slot.

use std::convert::Infallible;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE as CONTENT_TYPE_HEADER};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::{oneshot, Semaphore};

use crate::datapath::SnapshotReader;

use super::render::current;

/// The HTTP Content-Type of the text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Longest request head read, bytes (hyper's read buffer; a longer head
/// gets 431). Also hyper's smallest allowed buffer.
const MAX_HEAD: usize = 8192;

/// How long a client may take to send its request and read the reply.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// Connections served at once; more wait in the listen backlog until one
/// ends (each ends within `CLIENT_TIMEOUT`).
const MAX_CONNECTIONS: usize = 8;

/// `GET /metrics` over HTTP/1.x on its own thread. Dropping it stops the
/// runtime (open connections are dropped) and joins the thread.
pub struct MetricsServer {
    addr: SocketAddr,
    /// Dropped to stop the server.
    stop: Option<oneshot::Sender<()>>,
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
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("bloatbox-metrics".into())
            .spawn(move || {
                crate::privilege::drop_all_in_helper("metrics");
                if let Err(e) = runtime.block_on(serve(listener, snapshots, stopped)) {
                    tracing::warn!("metrics server stopped: {e}");
                }
                // Dropping the runtime drops the connections still open.
            })?;
        Ok(MetricsServer {
            addr,
            stop: Some(stop),
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
        // The accept loop sees the sender gone at once.
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Accepts connections until `stopped` resolves (its sender dropped), each
/// served on a task of its own while a slot is free.
async fn serve(
    listener: TcpListener,
    snapshots: SnapshotReader,
    mut stopped: oneshot::Receiver<()>,
) -> io::Result<()> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let slot = tokio::select! {
            _ = &mut stopped => return Ok(()),
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
        };
        let stream = tokio::select! {
            _ = &mut stopped => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // e.g. EMFILE: give the other connections time to end.
                    tracing::debug!("metrics accept: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let snapshots = snapshots.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                std::future::ready(Ok::<_, Infallible>(respond(&request, &snapshots)))
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .keep_alive(false)
                .max_buf_size(MAX_HEAD)
                .serve_connection(TokioIo::new(stream), service);
            match tokio::time::timeout(CLIENT_TIMEOUT, connection).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::debug!("metrics client: {e}"),
                Err(_) => tracing::debug!(
                    "metrics client: no request and reply within {CLIENT_TIMEOUT:?}"
                ),
            }
            drop(slot);
        });
    }
}

/// The reply to a request: the text at `/metrics`, a pointer to it at `/`,
/// 404 elsewhere, 405 for methods other than GET and HEAD (hyper leaves out
/// a HEAD reply's body).
fn respond(request: &Request<Incoming>, snapshots: &SnapshotReader) -> Response<Full<Bytes>> {
    const TEXT: &str = "text/plain; charset=utf-8";
    let path = request.uri().path();
    let (status, ctype, body) = match (request.method(), path) {
        (&Method::GET | &Method::HEAD, "/metrics") => match current(snapshots) {
            Some(text) => (StatusCode::OK, CONTENT_TYPE, text),
            None => (
                StatusCode::SERVICE_UNAVAILABLE,
                TEXT,
                "no snapshot yet: the datapath is starting, retry in a moment\n".into(),
            ),
        },
        (&Method::GET | &Method::HEAD, "/") => (
            StatusCode::OK,
            TEXT,
            "bloatbox: the counters are at /metrics\n".into(),
        ),
        (&Method::GET | &Method::HEAD, _) => (
            StatusCode::NOT_FOUND,
            TEXT,
            format!("{path}: not found; the counters are at /metrics\n"),
        ),
        _ => (
            StatusCode::METHOD_NOT_ALLOWED,
            TEXT,
            "only GET /metrics is served\n".into(),
        ),
    };
    let mut reply = Response::new(Full::new(Bytes::from(body)));
    *reply.status_mut() = status;
    reply
        .headers_mut()
        .insert(CONTENT_TYPE_HEADER, HeaderValue::from_static(ctype));
    reply
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::fixture::publish;
    use crate::metrics::parse_samples;
    use std::io::Write;
    use std::net::TcpStream;

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
        // hyper answers an HTTP/1.0 client in HTTP/1.0.
        assert!(get(addr, "GET /nope HTTP/1.0\r\n\r\n").starts_with("HTTP/1.0 404"));
        assert!(get(addr, "POST /metrics HTTP/1.0\r\n\r\n").starts_with("HTTP/1.0 405"));
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

    /// A client that connects and sends nothing holds a connection slot,
    /// not the server: another client is answered while it is still open.
    #[test]
    fn a_silent_client_does_not_hold_up_a_scrape() {
        let reader = SnapshotReader::default();
        publish(&reader);
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), false, reader).unwrap();
        let addr = server.local_addr();
        let silent: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let r = get(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK"), "{r}");
        // Still open (not answered, not closed for its timeout): the scrape
        // did not wait for it.
        for s in &silent {
            s.set_nonblocking(true).unwrap();
            let e = s.peek(&mut [0; 1]).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
        }
        // Past its timeout the server closes it.
        let s = &silent[0];
        s.set_nonblocking(false).unwrap();
        s.set_read_timeout(Some(CLIENT_TIMEOUT * 5)).unwrap();
        assert_eq!(
            s.peek(&mut [0; 1]).unwrap(),
            0,
            "closed after {CLIENT_TIMEOUT:?}"
        );
        // Dropping the server does not wait for an open connection, and
        // closes it.
        let open = TcpStream::connect(addr).unwrap();
        let t0 = std::time::Instant::now();
        drop(server);
        assert!(t0.elapsed() < CLIENT_TIMEOUT / 2, "{:?}", t0.elapsed());
        open.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
        // Closed if it was accepted, reset if still in the backlog.
        match open.peek(&mut [0; 1]) {
            Ok(0) => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
            other => panic!("still open after the drop: {other:?}"),
        }
    }
}
