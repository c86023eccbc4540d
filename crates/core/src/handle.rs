//! The identifiers and the error of the kernel's tc interface, shared by the
//! classifiers in `packet`, the qdiscs and the tc front end: a handle or
//! class id is `major:minor` in one u32 (`TC_H_MAKE`, `TC_H_MAJ`, `TC_H_MIN`
//! of include/uapi/linux/pkt_sched.h), and a refused request answers with
//! the text tc prints (the kernel's extack message or the errno iproute2
//! reports as "RTNETLINK answers: ...").

/// A tc handle or class id: major in the high 16 bits, minor in the low 16.
pub type Handle = u32;
/// `TC_H_ROOT`: the parent of a root qdisc.
pub const TC_H_ROOT: Handle = 0xFFFF_FFFF;

/// `TC_H_MAKE(maj, min)` of include/uapi/linux/pkt_sched.h with the major as a
/// 16-bit number: `major:minor` as one handle.
#[inline]
pub const fn tc_h_make(major: u16, minor: u16) -> Handle {
    ((major as u32) << 16) | minor as u32
}
/// `TC_H_MAJ(h) >> 16`: the major number of a handle (the qdisc part of a class
/// id).
#[inline]
pub const fn tc_h_major(h: Handle) -> u16 {
    (h >> 16) as u16
}
/// `TC_H_MIN(h)`: the minor number of a handle (0 for a qdisc, the class number
/// of a class id).
#[inline]
pub const fn tc_h_minor(h: Handle) -> u16 {
    (h & 0xFFFF) as u16
}

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

/// iproute2 `print_tc_classid`: `root`, `none`, `:m`, `M:`, `M:m` in hex.
pub fn tc_handle(h: Handle) -> String {
    if h == TC_H_ROOT {
        "root".into()
    } else if h == 0 {
        "none".into()
    } else if tc_h_major(h) == 0 {
        format!(":{:x}", tc_h_minor(h))
    } else if tc_h_minor(h) == 0 {
        format!("{:x}:", tc_h_major(h))
    } else {
        format!("{:x}:{:x}", tc_h_major(h), tc_h_minor(h))
    }
}
