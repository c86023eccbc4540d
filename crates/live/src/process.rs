//! What the application asks of the OS for the processes it starts and for
//! its own terminal: a command that enters a namespace (or fails at exec,
//! saying why) and can be stopped although its parent reads the
//! termination signals from a signalfd, a command that dies with its
//! parent, signals to a child or its process group, whether this process
//! runs in its terminal's foreground, and whether that terminal has input
//! or hung up (`TerminalWatch`). Each is a thin wrapper of
//! the system call, so that the application crate needs no OS bindings.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::sched::CloneFlags;
use nix::sys::signal::{SigSet, SigmaskHow};
use nix::unistd::Pid;

pub use nix::sys::signal::Signal;

/// Makes `cmd` run in the network namespace `netns` (setns(2) between fork
/// and exec), with the termination signals unblocked.
#[allow(unsafe_code)]
pub fn in_netns(cmd: &mut Command, netns: File) {
    // SAFETY: only async-signal-safe calls (setns, sigprocmask) between
    // fork and exec; the descriptor is close-on-exec.
    unsafe {
        cmd.pre_exec(move || {
            nix::sched::setns(&netns, CloneFlags::CLONE_NEWNET)?;
            unblock_termination_signals().map_err(io::Error::from)
        });
    }
}

/// Makes `cmd` fail to start with the OS error `errno` (the reason its
/// namespace could not be opened), from the `spawn` that starts it.
#[allow(unsafe_code)]
pub fn fail_at_exec(cmd: &mut Command, errno: i32) {
    // SAFETY: no allocation or lock between fork and exec.
    unsafe {
        cmd.pre_exec(move || Err(io::Error::from_raw_os_error(errno)));
    }
}

/// The errno of `e`, or ENOENT.
pub fn errno_of(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(nix::libc::ENOENT)
}

/// Makes `cmd` die with this process, even when it is SIGKILLed
/// (PR_SET_PDEATHSIG with SIGKILL); it does not start if this process
/// died before the signal was armed.
#[allow(unsafe_code)]
pub fn dies_with_parent(cmd: &mut Command) {
    let parent = nix::unistd::getpid();
    // SAFETY: prctl and getppid only, async-signal-safe, between fork and
    // exec.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
            if nix::unistd::getppid() != parent {
                return Err(io::Error::from_raw_os_error(nix::libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Sends `sig` to process `pid`, or to its process group with `group`
/// (kill(2), killpg(2)).
pub fn signal(pid: u32, group: bool, sig: Signal) -> io::Result<()> {
    let pid = Pid::from_raw(pid as i32);
    if group {
        nix::sys::signal::killpg(pid, sig)?;
    } else {
        nix::sys::signal::kill(pid, sig)?;
    }
    Ok(())
}

/// Unblocks what `netns::TerminationSignals` blocks, so that children of a
/// process that reads signals from a signalfd can be stopped.
fn unblock_termination_signals() -> nix::Result<()> {
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGINT);
    mask.add(Signal::SIGTERM);
    mask.add(Signal::SIGHUP);
    nix::sys::signal::sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&mask), None)
}

/// Whether this process is in the foreground of the terminal on `tty`
/// (tcgetpgrp(3) is its process group).
pub fn in_foreground(tty: impl AsFd) -> bool {
    nix::unistd::tcgetpgrp(tty.as_fd()).is_ok_and(|pg| pg == nix::unistd::getpgrp())
}

/// The terminal a TUI reads its keys from (standard input when it is a
/// terminal, else /dev/tty, as crossterm chooses), watched with poll(2):
/// whether it has input, and an error where it hung up (a closed tmux pane
/// or SSH session; also without a SIGHUP, under `setsid` or `nohup`),
/// which crossterm's reader would read for ever.
pub struct TerminalWatch {
    tty: Option<std::os::fd::OwnedFd>,
}

impl TerminalWatch {
    /// Watches this process's terminal; none found: `wait` answers that
    /// input may be there, and the reader finds out.
    pub fn new() -> TerminalWatch {
        use std::io::IsTerminal;
        let stdin = io::stdin();
        let tty = if stdin.is_terminal() {
            stdin.as_fd().try_clone_to_owned().ok()
        } else {
            File::open("/dev/tty").ok().map(std::os::fd::OwnedFd::from)
        };
        TerminalWatch { tty }
    }

    /// Waits up to `timeout` for input on the terminal: whether some is
    /// there; an error (BrokenPipe, "the terminal hung up") where it hung
    /// up or failed.
    pub fn wait(&self, timeout: std::time::Duration) -> io::Result<bool> {
        use nix::errno::Errno;
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let Some(tty) = &self.tty else {
            return Ok(true);
        };
        let mut fds = [PollFd::new(tty.as_fd(), PollFlags::POLLIN)];
        let ms = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
        match poll(&mut fds, ms) {
            Ok(0) | Err(Errno::EINTR) => return Ok(false),
            Ok(_) => {}
            Err(e) => return Err(e.into()),
        }
        let revents = fds[0].revents().unwrap_or(PollFlags::empty());
        if revents.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL) {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the terminal hung up",
            ));
        }
        Ok(revents.contains(PollFlags::POLLIN))
    }
}

impl Default for TerminalWatch {
    fn default() -> Self {
        TerminalWatch::new()
    }
}
