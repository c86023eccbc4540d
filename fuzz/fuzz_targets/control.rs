//! The `control` fuzz target: `bloatbox::fuzzing::control` (its doc comment lists
//! the invariants it asserts).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| bloatbox::fuzzing::control(data));
