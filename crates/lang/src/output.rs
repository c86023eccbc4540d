//! `out!` and `outln!`, the `print!` and `println!` of the subcommands'
//! output (`crate::app`, `bloatbox sim`): a reader that went away ends the
//! output quietly instead of panicking. A module of its own, below every
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

/// What `out!` and `outln!` call.
pub fn write_stdout(args: std::fmt::Arguments) -> std::io::Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_fmt(args) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}
