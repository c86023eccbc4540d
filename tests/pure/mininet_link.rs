//! examples/mininet/bloatbox_link.py, the Mininet `BloatboxLink`, against
//! a stub of Mininet's `Link` (Mininet need not be installed): its Python
//! unittest checks the commands the class issues (the link's namespace and
//! two veth pairs, `bloatbox up --wire` on their ends in it, the readiness
//! probe, the cleanup); tests/root/mininet.rs runs it in a real Mininet. It
//! needs python3, so a plain `cargo test` leaves it out as ignored, saying
//! so; run (`--include-ignored`, as `.ci/run` does) without python3, it
//! fails with the install hint. The `bloatbox` command line the class
//! builds is also parsed here with the binary's own clap definitions.

use std::process::Command;

#[test]
#[ignore = "needs python3 (apt-get install python3)"]
fn the_mininet_link_class_issues_the_expected_commands() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/mininet");
    let out = Command::new("python3")
        .args(["-m", "unittest", "-v", "test_bloatbox_link"])
        .current_dir(dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("this test cannot run here: python3 is not installed (apt-get install python3)");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("Ran 5 tests"), "{log}");
}

#[test]
fn the_command_the_mininet_link_starts_parses() {
    use clap::Parser;
    let words = [
        "bloatbox",
        "up",
        "--headless",
        "--wire",
        "bbm4194304_0:left",
        "bbm4194304_0:right",
        "--set",
        "daemon.control_socket=/run/bloatbox/bbm4194304_0.sock",
        "--set",
        "link.rate=10mbit",
    ];
    if let Err(e) = crate::bloatbox_main::Cli::try_parse_from(words) {
        panic!("{e}");
    }
}
