//! bloatbox's core: the emulated link with no clock, no I/O and no globals.
//! Every function that needs the time takes `now`; the drivers above (the
//! live datapath thread and the discrete-event simulator, in the `bloatbox`
//! crate) own the clocks, the file descriptors and the threads. This crate
//! depends on nothing of bloatbox above it, so the build itself keeps the
//! layers apart.
//!
//! Modules, lowest first: `time` (Instant, the clock trait, the simulated
//! clock), `units` (tc's units), `dir` (the two directions), `handle` (tc
//! handles), `refusal` (a refused tc request: errno, extack message and
//! bloatbox's hint, as data), `packet` (frames, classification, ECN, the
//! buffer pool, drop reasons, TAP offload and segmentation, tc filters),
//! `qdisc` (the disciplines, their typed options and dumps, a device's tree
//! and the requests it takes), `link` (TX ring and BQL, serializer, delay,
//! impairments, coalescing, the per-direction `Path`), `bridge` (the two
//! directions and their admission).

pub mod bridge;
pub mod dir;
pub mod handle;
pub mod link;
pub mod packet;
pub mod qdisc;
pub mod refusal;
pub mod time;
pub mod units;
