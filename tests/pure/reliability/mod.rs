//! Reliability tests without threads or sockets: frames fuzzed through the
//! real Bridge (`frames`), parser and ECN fuzzing (`parsers`), and memory
//! bounds under a flood (`bounds`). The control socket and datapath under
//! faults and hostile requests are the socketpair tier's `reliability`
//! module; the simulated soak is the alloc tier's, since it counts the heap
//! with a global allocator.

mod bounds;
mod frames;
mod parsers;
