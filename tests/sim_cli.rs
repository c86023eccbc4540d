//! `run_cli`: writes the trace, the summary and the qdisc dumps; reports
//! scenario errors with their position.

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
    sim::run_cli(&scenario_path("mixed_sources.toml"), Some(&out)).unwrap();
    let trace = std::fs::read_to_string(out.join("trace.jsonl")).unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        trace.lines().count() as u64,
        summary["trace_events"].as_u64().unwrap()
    );
    assert_eq!(summary["flows"].as_array().unwrap().len(), 6);
    let qdisc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("qdisc.json")).unwrap()).unwrap();
    assert_eq!(qdisc[0]["kind"], "pfifo");
    assert_eq!(qdisc[1]["kind"], "pfifo_fast");
    assert!(qdisc[0]["stats"]["drops"].as_u64().unwrap() > 0);
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
    let e = sim::run_cli(&path, None).unwrap_err().to_string();
    assert!(
        e.contains("bad.toml") && e.contains("line 4") && e.contains("vegas"),
        "{e}"
    );
    let e = sim::run_cli(&dir.path().join("missing.toml"), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.toml"), "{e}");
}
