//! The `pcapng` fuzz target: `bloatbox::fuzzing::pcapng` (its doc comment lists
//! the invariants it asserts).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| bloatbox::fuzzing::pcapng(data));
