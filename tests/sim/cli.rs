//! `run_cli`: writes the summary and `tc -s -d` statistics, and the trace
//! when asked; reports scenario errors with their position.

use bloatbox::sim;

fn scenario_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(name)
}

#[test]
fn writes_trace_summary_and_qdisc_stats() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    sim::run_cli(&scenario_path("mixed_sources.toml"), Some(&out), true).unwrap();
    let trace = std::fs::read_to_string(out.join("trace.jsonl")).unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        trace.lines().count() as u64,
        summary["trace_events"].as_u64().unwrap()
    );
    assert_eq!(summary["flows"].as_array().unwrap().len(), 6);
    assert_eq!(summary["directions"][0]["qdisc"]["kind"], "pfifo");
    let tc = std::fs::read_to_string(out.join("tc.txt")).unwrap();
    println!("{tc}");
    assert!(
        tc.contains("# left_to_right (left)\nqdisc pfifo 8001: root refcnt 2 limit 200p"),
        "{tc}"
    );
    // Both devices take automatic handles from one counter, as a
    // machine's do: the right's root, added second, is 8002:.
    assert!(
        tc.contains("# right_to_left (right)\nqdisc pfifo_fast 8002: root refcnt 2 bands 3"),
        "{tc}"
    );
    // The counters tc prints are the path's.
    let sent = summary["directions"][0]["frames_out"].as_u64().unwrap();
    let dropped: u64 = summary["directions"][0]["drops"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert!(tc.contains(&format!("pkt (dropped {dropped}, ")), "{tc}");
    assert!(sent > 0);
}

#[test]
fn the_trace_is_written_only_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    sim::run_cli(&scenario_path("mixed_sources.toml"), Some(&out), false).unwrap();
    assert!(out.join("summary.json").exists() && out.join("tc.txt").exists());
    assert!(
        !out.join("trace.jsonl").exists(),
        "--out without --trace writes no trace"
    );
}

#[test]
fn scenario_errors_carry_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        "seed = 1\nduration = \"1s\"\n[[tcp]]\ncc = \"vegas\"\n",
    )
    .unwrap();
    let e = sim::run_cli(&path, None, false).unwrap_err().to_string();
    assert!(
        e.contains("bad.toml") && e.contains("line 4") && e.contains("vegas"),
        "{e}"
    );
    // A bad [link] field is named at its own line and column.
    std::fs::write(
        &path,
        "seed = 1\nduration = \"1s\"\n\n[link]\nrate = \"10mbit\"\n\ntx_ring = 0\n",
    )
    .unwrap();
    let e = sim::run_cli(&path, None, false).unwrap_err().to_string();
    assert!(
        e.contains("bad.toml: line 7, column 11: link.tx_ring = 0: out of range"),
        "{e}"
    );
    let e = sim::run_cli(&dir.path().join("missing.toml"), None, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.toml"), "{e}");
}

#[test]
fn a_reader_that_goes_away_ends_the_output_without_a_panic() {
    use std::process::Stdio;
    // `bloatbox sim ... | head -1`: the reader closes its end at once.
    let mut child = crate::common::bloatbox()
        .arg("sim")
        .arg(scenario_path("mixed_sources.toml"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
}
