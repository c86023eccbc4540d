//! Helpers of the live seed experiments (`mod seed;` in each
//! tests/seed_*.rs): a configuration of configs/ as a candidate, and the
//! idle run a loaded run is compared with.
//!
//! Each binary uses a part of this module.
#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use bloatbox::experiment::{Candidate, TestOptions};

/// configs/NAME.toml, named NAME.
pub fn candidate(name: &str) -> Candidate {
    Candidate::from_file(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("configs/{name}.toml")),
    )
    .unwrap()
}

/// `loaded` without flows: 2 s (0.5 s warm-up) of ping every 20 ms, the
/// idle latency a loaded run is compared with.
pub fn idle_options(loaded: &TestOptions) -> TestOptions {
    TestOptions {
        flows: 0,
        duration: Duration::from_secs(2),
        warmup: Duration::from_millis(500),
        ping_interval: Some(Duration::from_millis(20)),
        ..loaded.clone()
    }
}
