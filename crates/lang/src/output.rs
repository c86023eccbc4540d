//! `out!` and `outln!`, the `print!` and `println!` of the subcommands'
//! output (`crate::app`, `bloatbox sim`): a reader that went away ends the
//! output quietly instead of panicking; `errln!`, an `eprintln!` that a
//! standard error gone (a hung-up terminal) cannot make panic. A module of its own, below every
//! other, so that any module may print through them.

/// `print!` for a subcommand's output: a reader that went away (`bloatbox
/// stats | head`) quietly ends the output, as in other Unix tools, instead
/// of panicking; any other write error is returned.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write_stdout(format_args!($($arg)*)) };
}

/// `println!` counterpart of `out!`.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => { $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprintln!` that never panics: a standard error that is gone (a terminal
/// that hung up answers EIO, a pipe with no reader EPIPE) loses the line,
/// where `eprintln!` would panic with the work done and the exit code to
/// give.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => { $crate::output::write_stderr(format_args!("{}\n", format_args!($($arg)*))) };
}

/// What `errln!` calls.
pub fn write_stderr(args: std::fmt::Arguments) {
    use std::io::Write;
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// What `out!` and `outln!` call.
pub fn write_stdout(args: std::fmt::Arguments) -> std::io::Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_fmt(args) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}
