//! The `mahimahi` fuzz target: `bloatbox::fuzzing::mahimahi` (its doc comment lists
//! the invariants it asserts).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| bloatbox::fuzzing::mahimahi(data));
