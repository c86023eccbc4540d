//! The daemon's side of the control socket (`crate::control` holds the
//! protocol and the client): an accept thread plus one thread per connection (at
//! most `MAX_CLIENTS`), so a slow or silent client never holds up another.
//! Only peers with the daemon's uid or root are served (SO_PEERCRED). Each
//! connection may send requests until it closes; each request line must be
//! complete within `LINE_TIMEOUT` of the server starting to wait for it
//! (a client silent that long is closed; one that dribbles a line slower
//! is told so and closed), so no client holds a thread for longer than
//! that without sending requests. The datapath is reached only through its
//! non-blocking command queue and its snapshot slot, so no client can
//! stall it.
//!
//! The socket is bound (mode 0600, owned by the daemon's user) before any
//! server thread runs; the accept thread then drops every capability
//! (`privilege::drop_all`), and the client threads it starts inherit that.
//! A file left at the socket's path is replaced only if it is a socket no
//! daemon answers on: any other file is an error, never removed. Missing
//! directories of the path are created, and removed again when the server
//! stops or fails to start, those still empty.

use nix::sys::socket::Shutdown;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::control::proto::{
    error_line, ok_line, parse_request, ProtoError, Request, TcReply, MAX_LINE,
};
use crate::control::set::SetError;
use crate::datapath::{
    Command, Commander, DatapathError, EditError, LiveSnapshot, SnapshotReader, TcFailure,
};
use crate::dir::Dir;
use crate::link::PathCounters;

/// How long one request line may take to arrive, counted from the
/// connection or the previous reply (however its bytes are spread out).
const LINE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a reply may take to be written.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a `tc` or `set` request waits for the datapath to apply it.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);

/// Most connections served at once (a thread each); more are refused with
/// an error line. Large enough that a thousand clients that connect and
/// stall do not lock out the others (each is closed after `LINE_TIMEOUT`).
const MAX_CLIENTS: usize = 1024;

/// How long the accept thread waits after a failed `accept` (e.g. EMFILE:
/// out of file descriptors) before trying again, rather than spinning on
/// the connection that is still pending.
const ACCEPT_RETRY: Duration = Duration::from_millis(10);

/// The running control socket; dropping it stops accepting, and removes the
/// socket file (connections already open finish their current request).
pub struct ControlServer {
    path: PathBuf,
    /// The bound socket file's (device, inode): removed on drop only while
    /// the path still names it (a later daemon may have bound the path).
    file_id: (u64, u64),
    /// The listening socket, shut down on drop to wake the blocking accept
    /// whatever became of the path.
    listener: UnixListener,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// Dropped after the socket file is removed (fields drop after `drop`).
    _dirs: CreatedDirs,
}

/// The directories one call created, innermost first; dropping it removes
/// those still empty (`rmdir` refuses the others, and then their parents).
struct CreatedDirs(Vec<PathBuf>);

impl CreatedDirs {
    /// Creates the missing directories of `dir`, outermost first, and keeps
    /// those this call made (not one that another process made meanwhile).
    fn create(dir: &Path) -> io::Result<CreatedDirs> {
        let missing: Vec<&Path> = dir
            .ancestors()
            .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
            .collect();
        let mut created = CreatedDirs(Vec::new());
        for d in missing.into_iter().rev() {
            match std::fs::create_dir(d) {
                Ok(()) => created.0.insert(0, d.to_path_buf()),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!(
                            "creating {} for the control socket: {e}; fix: create it, or set [daemon] control_socket to a path in a writable directory",
                            d.display()
                        ),
                    ))
                }
            }
        }
        Ok(created)
    }
}

impl Drop for CreatedDirs {
    fn drop(&mut self) {
        for d in &self.0 {
            if std::fs::remove_dir(d).is_err() {
                break;
            }
        }
    }
}

/// A file's (device, inode), if it exists.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// What every connection shares.
struct Shared {
    snapshots: SnapshotReader,
    /// None: a read-only server (no tc, set, shutdown).
    commander: Option<Commander>,
    /// Counters and held frames at the last `reset_stats`, per direction.
    baseline: Mutex<Option<[(PathCounters, u64); 2]>>,
    clients: AtomicUsize,
    /// Uid allowed besides root: the daemon's own.
    uid: u32,
}

impl ControlServer {
    /// Binds `path` (replacing a stale socket file no daemon listens on) with
    /// mode 0600 and starts serving. Without a `commander` only `snapshot`
    /// and `stats` are served.
    pub fn start(
        path: &Path,
        snapshots: SnapshotReader,
        commander: Option<Commander>,
    ) -> io::Result<ControlServer> {
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_socket() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "control socket path {} is taken by a file that is not a socket: \
                         set [daemon] control_socket to another path, or move that file away",
                        path.display()
                    ),
                ));
            }
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
        let dirs = CreatedDirs::create(path.parent().unwrap_or(Path::new("")))?;
        // Created with mode 0600 from the start (no window in which others
        // could connect).
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
        let file_id = file_id(path).unwrap_or_default();
        let waker = listener.try_clone()?;
        let shared = Arc::new(Shared::new(snapshots, commander));
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready) = std::sync::mpsc::sync_channel(1);
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("bloatbox-control".into())
                .spawn(move || {
                    // Serve nothing with a privilege.
                    let dropped = crate::privilege::drop_all().map_err(|e| e.to_string());
                    let ok = dropped.is_ok();
                    let _ = ready_tx.send(dropped);
                    if ok {
                        accept_loop(listener, &shared, &stop);
                    }
                })?
        };
        let dropped = ready
            .recv()
            .unwrap_or_else(|_| Err("the accept thread died at start".to_string()));
        if let Err(e) = dropped {
            let _ = thread.join();
            let _ = std::fs::remove_file(path);
            return Err(io::Error::other(format!(
                "control socket thread: dropping capabilities: {e}"
            )));
        }
        Ok(ControlServer {
            path: path.to_path_buf(),
            file_id,
            listener: waker,
            stop,
            thread: Some(thread),
            _dirs: dirs,
        })
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept (it fails from now on), even if the
        // socket file was removed or another daemon bound its path.
        let _ = nix::sys::socket::shutdown(self.listener.as_raw_fd(), Shutdown::Both);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if file_id(&self.path) == Some(self.file_id) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn accept_loop(listener: UnixListener, shared: &Arc<Shared>, stop: &AtomicBool) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("control socket accept: {e}");
                std::thread::sleep(ACCEPT_RETRY);
                continue;
            }
        };
        if shared.clients.fetch_add(1, Ordering::SeqCst) >= MAX_CLIENTS {
            shared.clients.fetch_sub(1, Ordering::SeqCst);
            let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
            let _ = writeln!(
                &stream,
                "{}",
                error_line(&format!("too many clients ({MAX_CLIENTS}): retry later"))
            );
            continue;
        }
        let shared2 = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("bloatbox-control-client".into())
            .spawn(move || {
                if let Err(e) = serve_client(stream, &shared2) {
                    tracing::debug!("control client: {e}");
                }
                shared2.clients.fetch_sub(1, Ordering::SeqCst);
            });
        if let Err(e) = spawned {
            shared.clients.fetch_sub(1, Ordering::SeqCst);
            tracing::warn!("control socket: cannot start a client thread: {e}");
        }
    }
}

/// The peer's uid is the daemon's or root's.
fn peer_allowed(stream: &UnixStream, uid: u32) -> io::Result<bool> {
    let cred = nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)
        .map_err(io::Error::from)?;
    Ok(uid_allowed(cred.uid(), uid))
}

/// Root and the daemon's own user may use the socket.
fn uid_allowed(peer: u32, daemon: u32) -> bool {
    peer == 0 || peer == daemon
}

/// Answers request lines until the client closes, sends nothing for
/// `LINE_TIMEOUT`, takes longer than that to finish a line, or sends a
/// line too long to resynchronise after.
fn serve_client(stream: UnixStream, shared: &Shared) -> io::Result<()> {
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let mut out = &stream;
    let mut lines = LineReader::new(&stream);
    if !peer_allowed(&stream, shared.uid)? {
        // The refusal is the reply to the first request, read (bounded) and
        // ignored: a reply sent before the client has written would make
        // its write fail (EPIPE) and hide the reason.
        let _ = lines.next_line(LINE_TIMEOUT)?;
        writeln!(
            out,
            "{}",
            error_line("permission denied: only the daemon's user or root may use this socket")
        )?;
        return Ok(());
    }
    loop {
        match lines.next_line(LINE_TIMEOUT)? {
            // Closed between requests or mid-line (nothing to answer), or
            // silent: a client that keeps a connection open between
            // requests reconnects.
            Line::Closed | Line::Silent => return Ok(()),
            Line::TooLong => {
                writeln!(out, "{}", error_line(&ProtoError::TooLong.to_string()))?;
                return Ok(());
            }
            Line::Unfinished(got) => {
                writeln!(
                    out,
                    "{}",
                    error_line(&format!(
                        "request line not finished within {LINE_TIMEOUT:?} ({got} bytes \
                         without a newline): send each request as one JSON object and a \
                         newline at once"
                    ))
                )?;
                return Ok(());
            }
            Line::Complete(line) => {
                if let Some(reply) = shared.reply(&line) {
                    writeln!(out, "{reply}")?;
                }
            }
        }
    }
}

/// What `LineReader::next_line` read.
#[derive(Debug, PartialEq)]
enum Line {
    /// A line, its newline included.
    Complete(Vec<u8>),
    /// The client closed (between requests, or mid-line).
    Closed,
    /// Nothing arrived in time.
    Silent,
    /// Part of a line (this many bytes) arrived in time, not its end.
    Unfinished(usize),
    /// More than `MAX_LINE` bytes without a newline.
    TooLong,
}

/// Request lines from a socket, each read against a deadline for the
/// whole line (a read timeout alone would let a client that sends a byte
/// now and then hold its thread forever), at most `MAX_LINE` bytes each.
struct LineReader<'a> {
    stream: &'a UnixStream,
    /// Bytes read after the last line returned.
    pending: Vec<u8>,
}

impl<'a> LineReader<'a> {
    fn new(stream: &'a UnixStream) -> LineReader<'a> {
        LineReader {
            stream,
            pending: Vec::new(),
        }
    }

    /// The next line, which must be complete within `limit` of this call.
    fn next_line(&mut self, limit: Duration) -> io::Result<Line> {
        let deadline = std::time::Instant::now() + limit;
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(i) = self.pending.iter().position(|&b| b == b'\n') {
                if i > MAX_LINE {
                    return Ok(Line::TooLong);
                }
                let rest = self.pending.split_off(i + 1);
                return Ok(Line::Complete(std::mem::replace(&mut self.pending, rest)));
            }
            if self.pending.len() > MAX_LINE {
                return Ok(Line::TooLong);
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Ok(self.late());
            }
            self.stream.set_read_timeout(Some(left))?;
            match (&mut &*self.stream).read(&mut chunk) {
                Ok(0) => return Ok(Line::Closed),
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(self.late())
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// What a deadline passed with `pending` unfinished means.
    fn late(&self) -> Line {
        match self.pending.len() {
            0 => Line::Silent,
            n => Line::Unfinished(n),
        }
    }
}

impl Shared {
    fn new(snapshots: SnapshotReader, commander: Option<Commander>) -> Shared {
        Shared {
            snapshots,
            commander,
            baseline: Mutex::new(None),
            clients: AtomicUsize::new(0),
            uid: nix::unistd::geteuid().as_raw(),
        }
    }

    /// The reply line (without newline) to one request line; None for a
    /// blank line, which gets no reply.
    fn reply(&self, line: &[u8]) -> Option<String> {
        Some(match std::str::from_utf8(line) {
            Ok(line) if line.trim().is_empty() => return None,
            Ok(line) => match parse_request(line) {
                Ok(req) => handle(req, self),
                Err(e) => error_line(&e.to_string()),
            },
            Err(_) => error_line("request is not UTF-8: send one JSON object per line"),
        })
    }
}

/// What the server does with a request line, without the socket (for
/// tests and the `control` fuzz target): the same handler the connection
/// threads call, with its own `reset_stats` baseline.
pub struct RequestHandler(Shared);

impl RequestHandler {
    /// A handler reading `snapshots`; without a `commander` only `snapshot`
    /// and `stats` are served, as by `ControlServer::start`.
    pub fn new(snapshots: SnapshotReader, commander: Option<Commander>) -> RequestHandler {
        RequestHandler(Shared::new(snapshots, commander))
    }

    /// The reply line (without newline) to one request line (newline
    /// optional); None for a blank line.
    pub fn reply(&self, line: &[u8]) -> Option<String> {
        self.0.reply(line)
    }
}

/// Answers one request (a reply line without newline).
fn handle(req: Request, shared: &Shared) -> String {
    answer(req, shared).unwrap_or_else(|e| error_line(&e.to_string()))
}

/// Why a request was not answered with `ok`: the reply's error says it.
#[derive(Debug, thiserror::Error)]
enum Unanswered {
    /// No snapshot published yet.
    #[error("no snapshot yet: the datapath is starting, retry in a moment")]
    NoSnapshot,
    /// A command on a socket without a commander.
    #[error("this control socket is read-only (no datapath commands)")]
    ReadOnly,
    /// The datapath did not take the command.
    #[error(transparent)]
    Datapath(#[from] DatapathError),
    /// The datapath did not answer within this long.
    #[error("the datapath did not answer within {0:?}")]
    Timeout(Duration),
    /// `set` arguments refused here (boxed, being large).
    #[error(transparent)]
    Set(Box<SetError>),
    /// A `set` plan refused by the datapath.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// A tc line that failed.
    #[error(transparent)]
    Tc(#[from] TcFailure),
}

impl From<SetError> for Unanswered {
    fn from(e: SetError) -> Unanswered {
        Unanswered::Set(Box::new(e))
    }
}

/// The `ok` reply line to `req`, or why it failed.
fn answer(req: Request, shared: &Shared) -> Result<String, Unanswered> {
    Ok(match req {
        Request::Snapshot => ok_line(&*latest(shared)?),
        Request::Metrics => ok_line(&crate::metrics::render(&*latest(shared)?)),
        Request::Stats => {
            let mut snap = (*latest(shared)?).clone();
            if let Some(base) = lock(&shared.baseline).as_ref() {
                subtract_baseline(&mut snap, base);
            }
            ok_line(&snap)
        }
        Request::ResetStats => {
            let snap = latest(shared)?;
            *lock(&shared.baseline) = Some(Dir::ALL.map(|d| {
                (
                    snap.bridge.path(d).counters.clone(),
                    snap.bridge.path(d).held,
                )
            }));
            ok_line(&"counters reset")
        }
        Request::Tc { line } => {
            use crate::tc::{TcCommand, Verb};
            let commander = commander(shared)?;
            let parsed = TcCommand::parse(&line);
            let (output, config) = match parsed {
                // A change replies with the device's effective qdisc tree.
                Ok(cmd) if cmd.verb != Verb::Show => {
                    let output = run_tc(commander, &line)?;
                    let dev = cmd.dev.unwrap_or(Dir::LeftToRight).dev();
                    let show = format!("tc qdisc show dev {dev}");
                    (output, Some(run_tc(commander, &show)?))
                }
                // Shows (`tc qdisc show` without a device lists both, like
                // tc), and lines tc refuses (the datapath gives the error).
                _ => (run_tc(commander, &line)?, None),
            };
            ok_line(&TcReply { output, config })
        }
        Request::Set { args } => {
            // Parsed (and trace files read) here, not on the datapath.
            let plan = crate::control::set::parse_set(&args)?;
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            commander(shared)?.send(Command::EditLink { plan, reply: tx })?;
            let effective = rx
                .recv_timeout(COMMAND_TIMEOUT)
                .map_err(|_| Unanswered::Timeout(COMMAND_TIMEOUT))??;
            ok_line(&effective)
        }
        Request::Shutdown => {
            commander(shared)?.send(Command::Shutdown)?;
            ok_line(&"shutting down")
        }
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn latest(shared: &Shared) -> Result<Arc<LiveSnapshot>, Unanswered> {
    shared.snapshots.latest().ok_or(Unanswered::NoSnapshot)
}

fn commander(shared: &Shared) -> Result<&Commander, Unanswered> {
    shared.commander.as_ref().ok_or(Unanswered::ReadOnly)
}

/// One tc line through the datapath's queue; its output or tc's error.
fn run_tc(commander: &Commander, line: &str) -> Result<String, Unanswered> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    commander.send(Command::Tc {
        line: line.to_string(),
        reply: tx,
    })?;
    Ok(rx
        .recv_timeout(COMMAND_TIMEOUT)
        .map_err(|_| Unanswered::Timeout(COMMAND_TIMEOUT))??)
}

/// Counters since the reset: the baseline's counters subtracted, and the
/// frames held at the reset counted as arrived after it, so that
/// `frames_in + duplicated = frames_out + drops + held` still holds.
fn subtract_baseline(snap: &mut LiveSnapshot, base: &[(PathCounters, u64); 2]) {
    for (path, (b, held)) in snap.bridge.paths.iter_mut().zip(base) {
        let c = &mut path.counters;
        c.frames_in = c.frames_in.saturating_sub(b.frames_in) + held;
        c.bytes_in = c.bytes_in.saturating_sub(b.bytes_in);
        c.frames_out = c.frames_out.saturating_sub(b.frames_out);
        c.bytes_out = c.bytes_out.saturating_sub(b.bytes_out);
        c.duplicated = c.duplicated.saturating_sub(b.duplicated);
        c.corrupted = c.corrupted.saturating_sub(b.corrupted);
        for (d, bd) in c.drops.iter_mut().zip(&b.drops) {
            *d = d.saturating_sub(*bd);
        }
        for reason in crate::packet::DropReason::ALL {
            let n = c.drops[reason.index()];
            if n == 0 {
                path.drops_by_reason.remove(reason.name());
            } else {
                path.drops_by_reason.insert(reason.name(), n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_root_and_the_daemons_user_are_served() {
        assert!(uid_allowed(0, 1000));
        assert!(uid_allowed(1000, 1000));
        assert!(!uid_allowed(1001, 1000));
        let (a, _b) = UnixStream::pair().unwrap();
        let me = nix::unistd::geteuid().as_raw();
        assert!(peer_allowed(&a, me).unwrap());
    }

    #[test]
    fn lines_are_split_bounded_and_read_against_one_deadline() {
        let (server, mut client) = UnixStream::pair().unwrap();
        let mut lines = LineReader::new(&server);
        let long = Duration::from_secs(10);
        // Two pipelined requests in one write, then one in two writes.
        client.write_all(b"{\"a\":1}\n{\"b\":2}\n{\"c\"").unwrap();
        assert_eq!(
            lines.next_line(long).unwrap(),
            Line::Complete(b"{\"a\":1}\n".to_vec())
        );
        assert_eq!(
            lines.next_line(long).unwrap(),
            Line::Complete(b"{\"b\":2}\n".to_vec())
        );
        client.write_all(b":3}\n").unwrap();
        assert_eq!(
            lines.next_line(long).unwrap(),
            Line::Complete(b"{\"c\":3}\n".to_vec())
        );
        // Nothing at all, then part of a line: the deadline passes.
        let short = Duration::from_millis(50);
        assert_eq!(lines.next_line(short).unwrap(), Line::Silent);
        client.write_all(b"{\"d\"").unwrap();
        assert_eq!(lines.next_line(short).unwrap(), Line::Unfinished(4));
        // MAX_LINE bytes and a newline is a line; one byte more is not.
        let mut exact = vec![b' '; MAX_LINE];
        exact.push(b'\n');
        let (server, mut client) = UnixStream::pair().unwrap();
        let writer = std::thread::spawn(move || {
            client.write_all(&exact).unwrap();
            client.write_all(&[b' '; MAX_LINE + 1]).unwrap();
            client
        });
        let mut lines = LineReader::new(&server);
        assert!(
            matches!(lines.next_line(long).unwrap(), Line::Complete(l) if l.len() == MAX_LINE + 1)
        );
        assert_eq!(lines.next_line(long).unwrap(), Line::TooLong);
        drop(writer.join().unwrap());
        assert_eq!(lines.next_line(long).unwrap(), Line::TooLong);
    }

    #[test]
    fn a_client_dribbling_a_line_is_cut_at_the_line_deadline() {
        let (server, mut client) = UnixStream::pair().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let dribbler = {
            let stop = stop.clone();
            // One byte every 10 ms, never a newline: each read alone would
            // beat any per-read timeout.
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) && client.write_all(b" ").is_ok() {
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        };
        let got = LineReader::new(&server).next_line(Duration::from_millis(300));
        stop.store(true, Ordering::SeqCst);
        dribbler.join().unwrap();
        assert!(matches!(got.unwrap(), Line::Unfinished(n) if n > 0));
    }

    #[test]
    fn a_client_closing_mid_line_is_closed() {
        let (server, mut client) = UnixStream::pair().unwrap();
        client.write_all(b"{\"half\"").unwrap();
        drop(client);
        let got = LineReader::new(&server).next_line(Duration::from_secs(10));
        assert_eq!(got.unwrap(), Line::Closed);
    }
}
