//! The socketpair tier, one binary: the real datapath threads and the real
//! control server, with socketpairs standing in for the TAPs and the
//! control socket on a temporary path. Threads, sockets and the clock are
//! real; no root, no namespace, no external tool. Timing is printed and
//! only checked loosely (never tighter than the physics allows on a loaded
//! 2-core machine).

#[path = "../common/mod.rs"]
mod common;

mod control_rig;
mod control_socket;
mod datapath;
mod datapath_gso;
mod reliability;
