//! The identifiers of the kernel's tc interface, shared by the classifiers
//! in `packet`, the qdiscs and the tc front end: a handle or class id is
//! `major:minor` in one u32 (`TC_H_MAKE`, `TC_H_MAJ`, `TC_H_MIN` of
//! include/uapi/linux/pkt_sched.h). A refused request answers with a
//! `crate::refusal::Refusal`.

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

/// A qdisc's handle as iproute2 prints it (`tc qdisc show`'s `"%x:"` of the
/// major number, as `print_qdisc` in tc/tc_qdisc.c does): `0:` for the
/// handle 0 of a default qdisc, where a class id would print `none`.
pub fn qdisc_handle(h: Handle) -> String {
    format!("{:x}:", tc_h_major(h))
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
