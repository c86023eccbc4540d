//! The `bridge` fuzz target: `bloatbox::fuzzing::bridge` (its doc comment lists
//! the invariants it asserts).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| bloatbox::fuzzing::bridge(data));
