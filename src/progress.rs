//! The one progress bar a run shows on a terminal (`test`, `demo`), and the
//! writer the logs go through: a log line printed while the bar is drawn
//! suspends the bar (`indicatif::ProgressBar::suspend`: clear, print,
//! redraw), so log lines never land on it. A module of its own, below the
//! subcommands, so that the logger (set up in `main`) and the experiment
//! runner share the bar without knowing each other.

use std::io::{self, Write};
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};

/// The bar being drawn, if any.
static BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// A bar over `len_s` seconds headed `head`, drawn on stderr (hidden when
/// stderr is not a terminal); it stays the active one until `finish`.
pub fn start(head: &str, len_s: f64) -> Bar {
    let bar = ProgressBar::new((len_s * 10.0).round() as u64);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("#."),
    );
    bar.set_prefix(head.to_string());
    *BAR.lock().unwrap_or_else(|e| e.into_inner()) = Some(bar.clone());
    Bar { bar, len_s }
}

/// The active bar (see `start`).
pub struct Bar {
    bar: ProgressBar,
    len_s: f64,
}

impl Bar {
    /// `t` seconds of the run are done.
    pub fn set(&self, t: f64) {
        self.bar
            .set_position((t.clamp(0.0, self.len_s) * 10.0) as u64);
        self.bar.set_message(format!("{t:4.1}/{:.0} s", self.len_s));
    }

    /// Leaves the bar as drawn, and no longer active.
    pub fn finish(self) {
        self.bar.finish();
        *BAR.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// Where logs go on stderr: around the active bar. A line that cannot be
/// written (the terminal hung up: EIO) is lost rather than reported:
/// tracing-subscriber would report it with `eprintln!` to the same dead
/// terminal, whose panic in the middle of logging aborts the process
/// before its guards remove the link.
pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let bar = BAR.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let _ = match bar {
            Some(bar) => bar.suspend(|| io::stderr().write_all(buf)),
            None => io::stderr().write_all(buf),
        };
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let _ = io::stderr().flush();
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;
    fn make_writer(&'a self) -> LogWriter {
        LogWriter
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log line while a bar is active is written whole, and the bar stays
    /// active until finished.
    #[test]
    fn logs_pass_around_the_bar() {
        let bar = start("[1/1] x", 12.0);
        bar.set(3.0);
        assert!(BAR.lock().unwrap().is_some());
        let line = b"a log line\n";
        assert_eq!(LogWriter.write(line).unwrap(), line.len());
        bar.finish();
        assert!(BAR.lock().unwrap().is_none());
    }
}
