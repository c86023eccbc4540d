//! The `tc` fuzz target: `bloatbox::fuzzing::tc` (its doc comment lists
//! the invariants it asserts).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| bloatbox::fuzzing::tc(data));
