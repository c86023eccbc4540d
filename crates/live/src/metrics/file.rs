//! The metrics file: the text rewritten atomically (a temporary file,
//! then a rename) every period on its own thread, and once more when it
//! stops.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::datapath::SnapshotReader;

use super::render::current;

/// Rewrites a file with the text every period on its own thread (write to
/// `PATH.tmp`, then rename: a reader never sees half a file). Dropping it
/// writes a last time and stops the thread.
pub struct MetricsFile {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsFile {
    /// Writes the metrics of `snapshots` to `path` every `period` on a
    /// thread of its own; a zero period or a place that cannot be written
    /// is refused at once.
    pub fn start(
        path: &Path,
        period: Duration,
        snapshots: SnapshotReader,
    ) -> io::Result<MetricsFile> {
        if period.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "--metrics-period 0: expected a period above zero, e.g. 1s",
            ));
        }
        let path = path.to_path_buf();
        // Fail now, not on the thread, if the place is not writable.
        write_atomically(&path, "# EOF\n")?;
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("bloatbox-metrics-file".into())
            .spawn(move || {
                crate::privilege::drop_all_in_helper("metrics file");
                file_loop(&path, period, &snapshots, &rx)
            })?;
        Ok(MetricsFile {
            stop: Some(tx),
            thread: Some(thread),
        })
    }
}

impl Drop for MetricsFile {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Writes `text` to `path` through a temporary file and a rename.
pub fn write_atomically(path: &Path, text: &str) -> io::Result<()> {
    let tmp = tmp_path(path);
    let named = |e: io::Error| {
        io::Error::new(
            e.kind(),
            format!(
                "--metrics-file {}: {e}; fix: choose a writable path",
                path.display()
            ),
        )
    };
    std::fs::write(&tmp, text).map_err(named)?;
    std::fs::rename(&tmp, path).map_err(named)
}

fn file_loop(path: &Path, period: Duration, snapshots: &SnapshotReader, stop: &Receiver<()>) {
    let mut failed = false;
    loop {
        let stopping = !matches!(stop.recv_timeout(period), Err(RecvTimeoutError::Timeout));
        if let Some(text) = current(snapshots) {
            match write_atomically(path, &text) {
                Ok(()) => failed = false,
                // Said once per run of failures.
                Err(e) if !failed => {
                    tracing::error!("{e}");
                    failed = true;
                }
                Err(_) => {}
            }
        }
        if stopping {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::fixture::publish;
    use crate::metrics::render;

    #[test]
    fn the_file_is_rewritten_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.prom");
        let reader = SnapshotReader::default();
        let file = MetricsFile::start(&path, Duration::from_secs(3600), reader.clone()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "# EOF\n");
        let snapshot = publish(&reader);
        // Dropping writes the last snapshot.
        drop(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, render(&snapshot));
        assert!(!tmp_path(&path).exists());
        let e = MetricsFile::start(
            Path::new("/proc/nope/m.prom"),
            Duration::from_secs(1),
            reader,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("/proc/nope/m.prom") && e.contains("fix"), "{e}");
    }
}
