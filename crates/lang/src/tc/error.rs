//! What tc prints when a command fails, and the exit code it gives with it:
//! `TcError`. iproute2's own refusals (a word it cannot parse, a missing
//! argument) are written here in the front end with their exit codes 1 or
//! 255; a refusal of the kernel's comes from the core as a typed
//! `crate::refusal::Refusal` and reads as iproute2 prints it
//! (lib/libnetlink.c): "Error: " and the extack message when the kernel
//! set one, else "RTNETLINK answers: " and the errno's `strerror`, then
//! bloatbox's hint, with tc's exit code 2.

use crate::refusal::{Errno, Hint, Refusal};

/// A tc-style error: the message tc would print, naming the bad token, and
/// the exit code tc gives with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TcError(pub String, pub u8);

impl TcError {
    /// tc's exit code when the kernel refused the request (`rtnl_talk`
    /// failed: iproute2's tc_qdisc.c `tc_qdisc_modify` returns 2).
    pub const KERNEL: u8 = 2;
    /// tc's exit code when a kind's own parser refused its options
    /// (`tc_qdisc_modify` returns 1 when `parse_qopt` fails).
    pub const PARSE: u8 = 1;
    /// tc's exit code when iproute2 gave up on the command line itself:
    /// `invarg`, `duparg`, `incomplete_command` and the usages `exit(-1)`.
    pub const ARGS: u8 = 255;

    /// A refusal of the kernel's whose message is `msg`, printed as is
    /// (its wording, e.g. "Error: Specified qdisc kind is unknown.").
    pub fn new(msg: impl Into<String>) -> Self {
        TcError(msg.into(), Self::KERNEL)
    }

    /// The same message with tc's exit code `code`.
    pub fn exit(self, code: u8) -> Self {
        TcError(self.0, code)
    }

    /// The exit code tc gives with this error.
    pub fn code(&self) -> u8 {
        self.1
    }
}

/// glibc's `strerror` of the errnos the core refuses with, which iproute2
/// prints after "RTNETLINK answers: ".
fn strerror(errno: Errno) -> &'static str {
    match errno {
        Errno::EBUSY => "Device or resource busy",
        Errno::EEXIST => "File exists",
        Errno::EINVAL => "Invalid argument",
        Errno::ENOENT => "No such file or directory",
        Errno::ENOSPC => "No space left on device",
        Errno::EOPNOTSUPP => "Operation not supported",
        Errno::ERANGE => "Numerical result out of range",
    }
}

impl From<Refusal> for TcError {
    /// The kernel's refusal as tc prints it: the extack message, as the
    /// kernel (here, the core) wrote it, or the errno; then the hint.
    fn from(r: Refusal) -> TcError {
        let mut text = match r.message {
            Some(message) => format!("Error: {message}"),
            None => format!("RTNETLINK answers: {}", strerror(r.errno)),
        };
        match r.hint {
            Some(Hint::Below(hint)) => text.push_str(&format!("\n({hint})")),
            Some(Hint::Beside(hint)) => text.push_str(&format!(" ({hint})")),
            Some(Hint::BesideStop(hint)) => text.push_str(&format!(" ({hint}).")),
            None => {}
        }
        TcError::new(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(r: Refusal) -> String {
        TcError::from(r).0
    }

    /// Each form a refusal takes, byte for byte, with the kernel's exit code.
    #[test]
    fn refusals_read_as_iproute2_prints_them() {
        let e = TcError::from(Refusal::new(Errno::ENOENT, "Specified qdisc not found."));
        assert_eq!(e.0, "Error: Specified qdisc not found.");
        assert_eq!(e.code(), TcError::KERNEL);
        assert_eq!(
            said(Refusal::new(Errno::ENOENT, "Specified qdisc not found.").below("no qdisc 5:")),
            "Error: Specified qdisc not found.\n(no qdisc 5:)"
        );
        assert_eq!(
            said(Refusal::new(Errno::EINVAL, "Invalid quantum.").beside("quantum 9")),
            "Error: Invalid quantum. (quantum 9)"
        );
        assert_eq!(
            said(Refusal::bare(Errno::EINVAL).below("why")),
            "RTNETLINK answers: Invalid argument\n(why)"
        );
        assert_eq!(
            said(Refusal::bare(Errno::ENOENT).beside_stop("class 1:5 does not exist")),
            "RTNETLINK answers: No such file or directory (class 1:5 does not exist)."
        );
        assert_eq!(
            said(Refusal::bare(Errno::EOPNOTSUPP)),
            "RTNETLINK answers: Operation not supported"
        );
        assert_eq!(
            said(Refusal::bare(Errno::EEXIST)),
            "RTNETLINK answers: File exists"
        );
        assert_eq!(
            said(Refusal::bare(Errno::EBUSY)),
            "RTNETLINK answers: Device or resource busy"
        );
        assert_eq!(
            said(Refusal::bare(Errno::ENOSPC)),
            "RTNETLINK answers: No space left on device"
        );
    }
}
