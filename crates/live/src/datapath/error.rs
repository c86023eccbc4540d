//! How the datapath fails: `DatapathError`, and which port errors end the
//! thread (a device that is gone) rather than lose one frame (a device that
//! is merely down), with a hint for the message saying what the errno most
//! likely means.

use std::io;

use crate::privilege::PrivilegeError;

use super::command::COMMAND_QUEUE;

/// Why the datapath refused a command or stopped.
#[derive(Debug, thiserror::Error)]
pub enum DatapathError {
    /// The bounded command queue holds `COMMAND_QUEUE` commands already: the
    /// caller may retry.
    #[error("the datapath command queue is full ({COMMAND_QUEUE} pending): retry")]
    QueueFull,
    /// The datapath threads have returned: no command can be served.
    #[error("the datapath thread has stopped")]
    Stopped,
    /// A datapath thread panicked, with the panic's message.
    #[error("datapath thread panicked: {0}")]
    Panicked(String),
    /// A system call of the datapath failed (epoll, timerfd, eventfd, thread
    /// spawn).
    #[error("datapath I/O: {0}")]
    Io(#[from] io::Error),
    /// A port stopped working; the datapath cannot go on without it.
    #[error("the {port} port failed while {op}: {source}{}", port_failure_hint(.source))]
    PortFailed {
        /// `left` or `right`.
        port: &'static str,
        /// What the datapath was doing: reading, writing, waiting.
        op: &'static str,
        /// The errno of the failed read, write or wait.
        #[source]
        source: io::Error,
    },
    /// The datapath thread could not drop its capabilities after set-up.
    #[error("the datapath thread could not drop its capabilities: {0}")]
    Privilege(#[from] PrivilegeError),
}

/// Port names by index, as in the configuration.
pub const PORT_NAMES: [&str; 2] = ["left", "right"];

/// A write error that means the port's device or peer is gone for good
/// (rather than down for a while, or refusing one frame).
pub(super) fn port_gone(e: &io::Error) -> bool {
    use nix::errno::Errno;
    e.raw_os_error().is_some_and(|n| {
        [
            Errno::EBADFD,
            Errno::ENODEV,
            Errno::ENXIO,
            Errno::EPIPE,
            Errno::ECONNRESET,
            Errno::ENOTCONN,
        ]
        .contains(&Errno::from_raw(n))
    })
}

/// What a port error most likely means, for the message.
fn port_failure_hint(e: &io::Error) -> &'static str {
    use nix::errno::Errno;
    match e.raw_os_error().map(Errno::from_raw) {
        Some(Errno::EBADFD) | Some(Errno::ENODEV) | Some(Errno::ENXIO) => {
            " (its device is gone: the TAP was deleted, or its network namespace removed)"
        }
        Some(Errno::EPIPE) | Some(Errno::ECONNRESET) | Some(Errno::ENOTCONN) => {
            " (the other end closed it)"
        }
        _ if e.kind() == io::ErrorKind::BrokenPipe => " (the other end closed it)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_errors_saying_the_port_is_gone_end_the_loop_on_write() {
        use nix::errno::Errno;
        let err = |e: Errno| io::Error::from_raw_os_error(e as i32);
        for gone in [
            Errno::EBADFD,
            Errno::ENODEV,
            Errno::EPIPE,
            Errno::ECONNRESET,
        ] {
            assert!(port_gone(&err(gone)), "{gone}");
        }
        // A TAP that is down refuses writes with EIO; a bad frame, EINVAL.
        for transient in [Errno::EIO, Errno::EINVAL, Errno::EMSGSIZE] {
            assert!(!port_gone(&err(transient)), "{transient}");
        }
        let failed = DatapathError::PortFailed {
            port: "right",
            op: "reading frames",
            source: err(Errno::EBADFD),
        };
        let msg = failed.to_string();
        assert!(
            msg.starts_with("the right port failed while reading frames"),
            "{msg}"
        );
        assert!(msg.contains("the TAP was deleted"), "{msg}");
        let closed = DatapathError::PortFailed {
            port: "left",
            op: "waiting for frames",
            source: io::ErrorKind::BrokenPipe.into(),
        };
        assert!(closed.to_string().contains("the other end closed it"));
    }
}
