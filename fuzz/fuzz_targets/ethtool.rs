//! The `ethtool` fuzz target: `bloatbox::fuzzing::ethtool` (its doc comment lists
//! the invariants it asserts).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| bloatbox::fuzzing::ethtool(data));
