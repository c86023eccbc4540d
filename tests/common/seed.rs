//! Helpers of the seed experiments (`common::seed`), whose deterministic
//! halves are the simulator tier's and whose live halves are the root
//! tier's: a file under the package root, a configuration of configs/ as a
//! candidate, the idle run a loaded run is compared with, and seed 6's
//! check of an mq root's per-queue layout, which both of its halves make.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bloatbox::experiment::{Candidate, TestOptions};
use bloatbox::qdisc::{QdiscDump, QdiscStats};

/// `rel`, a path under the package root.
pub fn manifest(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// configs/NAME.toml, named NAME.
pub fn candidate(name: &str) -> Candidate {
    Candidate::from_file(&manifest(&format!("configs/{name}.toml"))).unwrap()
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

/// The children's counters added up (what mq reports as its own).
fn sum_children(root: &QdiscDump) -> QdiscStats {
    let mut s = QdiscStats::default();
    for c in &root.children {
        s.bytes += c.stats.bytes;
        s.packets += c.stats.packets;
        s.drops += c.stats.drops;
        s.overlimits += c.stats.overlimits;
        s.requeues += c.stats.requeues;
        s.backlog += c.stats.backlog;
        s.qlen += c.stats.qlen;
    }
    s
}

/// Checks the per-queue layout of an mq root of `n` fq_codel children that
/// carried traffic; returns each queue's share of the packets.
pub fn check_mq(root: &QdiscDump, n: usize) -> Vec<f64> {
    assert_eq!(root.kind, "mq");
    assert_eq!(root.children.len(), n, "one child per TX queue");
    assert!(root.children.iter().all(|c| c.kind == "fq_codel"));
    let sum = sum_children(root);
    let s = &root.stats;
    assert_eq!(
        (s.bytes, s.packets, s.drops, s.backlog, s.qlen),
        (sum.bytes, sum.packets, sum.drops, sum.backlog, sum.qlen),
        "mq's counters are its children's sum"
    );
    // Class 1:i reports child i.
    assert_eq!(root.classes.len(), n);
    for class in &root.classes {
        let leaf = class.leaf.expect("mq classes have a leaf");
        let child = root
            .children
            .iter()
            .find(|c| c.handle == leaf)
            .expect("the leaf is a child");
        let cs = class.stats.as_ref().expect("mq classes have counters");
        assert_eq!(
            (cs.bytes, cs.packets, cs.drops),
            (child.stats.bytes, child.stats.packets, child.stats.drops)
        );
    }
    root.children
        .iter()
        .map(|c| c.stats.packets as f64 / s.packets.max(1) as f64)
        .collect()
}
