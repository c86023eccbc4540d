//! `bloatbox test --flent DIR` read by flent itself (from PyPI; `.ci/run`
//! installs it in a virtual environment and names it in `BLOATBOX_FLENT`):
//! a live run of the fq-codel configuration writes its flent data file and
//! its JSON report; the file carries the rrul_be_nflows series with data,
//! `flent -f summary` prints the goodput, Jain's index and ping's mean the
//! JSON report has, and `flent -p all_scaled` and `-p ping_cdf` draw PNGs.
//! The JSON report's per-flow series and one-way delays are checked on the
//! same run. Root only; the link is torn down by `bloatbox test` itself,
//! the files live in a temporary directory.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{self, BIN};
use crate::turn;

/// The flent to run: `BLOATBOX_FLENT`, else `flent` on the PATH; fails,
/// saying how to install it, where neither runs.
fn flent() -> String {
    let flent = std::env::var("BLOATBOX_FLENT").unwrap_or_else(|_| "flent".into());
    let runs = Command::new(&flent)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        runs,
        "{flent:?} does not run: install flent 2.3 and matplotlib from PyPI \
         (python3 -m venv /tmp/bloatbox-flent && /tmp/bloatbox-flent/bin/pip install flent matplotlib) \
         and set BLOATBOX_FLENT=/tmp/bloatbox-flent/bin/flent, as .ci/run does"
    );
    flent
}

/// `flent ARGS`, which must succeed; its stdout.
fn run_flent(flent: &str, args: &[&str]) -> String {
    let out = Command::new(flent).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "flent {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The mean flent's summary prints for `series` (its first number).
fn summary_mean(summary: &str, series: &str) -> f64 {
    summary
        .lines()
        .find_map(|l| {
            let (name, rest) = l.split_once(" : ")?;
            (name.trim() == series).then(|| rest.split_whitespace().next()?.parse().ok())?
        })
        .unwrap_or_else(|| panic!("no mean of {series:?} in flent's summary:\n{summary}"))
}

fn read_gz_json(path: &Path) -> Value {
    let file = std::fs::File::open(path).unwrap();
    serde_json::from_reader(flate2::read::GzDecoder::new(file)).unwrap()
}

/// A PNG of some size (not an empty figure's few KiB).
fn assert_png(path: &Path) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        bytes.starts_with(b"\x89PNG"),
        "{} is no PNG",
        path.display()
    );
    assert!(
        bytes.len() > 20_000,
        "{}: {} bytes",
        path.display(),
        bytes.len()
    );
}

#[test]
#[ignore = "needs root"]
fn a_flent_data_file_opens_in_flent_and_agrees_with_the_json_report() {
    common::require_root();
    let _turn = turn();
    let flent = flent();
    let dir = tempfile::tempdir().unwrap();
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/fq-codel.toml");
    let json_path = dir.path().join("report.json");
    let out = Command::new(BIN)
        .args(["test", "-c", config.to_str().unwrap()])
        .args(["--duration", "12s", "--warmup", "2s", "--flent"])
        .arg(dir.path())
        .arg("--json")
        .arg(&json_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bloatbox test: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".flent.gz"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let file = &files[0];
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let result = &report["results"][0];
    let summary = &result["summary"];

    // The JSON report: each flow's goodput, Jain's index, the per-flow
    // counters of every sample, each direction's one-way delay.
    for dir in ["left_to_right", "right_to_left"] {
        let flows = &summary["tcp_flows"][dir];
        let goodput: Vec<f64> = flows["goodput_mbit"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_f64().unwrap())
            .collect();
        assert_eq!(goodput.len(), 4, "{flows}");
        let total = summary["goodput_mbit"][dir].as_f64().unwrap();
        assert!(total > 1.0, "{summary}");
        assert!(
            (goodput.iter().sum::<f64>() - total).abs() < 0.05,
            "{flows} vs {total}"
        );
        let jain = flows["jain_index"].as_f64().unwrap();
        assert!(jain > 0.25 && jain <= 1.0, "{flows}");
        let last = result["samples"]["throughput"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()[dir]
            .clone();
        let per_flow: u64 = last["flows_read_bytes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap())
            .sum();
        assert_eq!(per_flow, last["read_bytes"].as_u64().unwrap());
        let delay = &result["counters"][dir]["one_way_delay"];
        assert!(delay["frames"].as_u64().unwrap() > 1000, "{delay}");
        // At least the link's propagation delay, at most the longest.
        let link_delay = result["link"][dir]["delay_ms"].as_f64().unwrap();
        let p50 = delay["p50_ms"].as_f64().unwrap();
        assert!(p50 >= link_delay * 0.99, "{delay} under {link_delay} ms");
        assert!(p50 <= delay["max_ms"].as_f64().unwrap(), "{delay}");
    }

    // The data file: flent's keys, the series named as rrul_be_nflows
    // names them, with data.
    let data = read_gz_json(file);
    assert_eq!(data["version"], 4);
    assert_eq!(data["metadata"]["NAME"], "rrul_be_nflows");
    assert_eq!(data["metadata"]["TITLE"], "fq-codel");
    let x = data["x_values"].as_array().unwrap().len();
    assert!(x > 100, "{x} x values");
    for series in [
        "TCP upload BE::1",
        "TCP upload BE::4",
        "TCP download BE::2",
        "TCP upload sum",
        "TCP download fairness",
        "Ping (ms) ICMP",
        "Ping (ms) UDP BE",
    ] {
        let values = data["results"][series]
            .as_array()
            .unwrap_or_else(|| panic!("no {series:?}"));
        assert_eq!(values.len(), x, "{series}");
        let positive = values
            .iter()
            .filter(|v| v.as_f64().is_some_and(|v| v > 0.0))
            .count();
        assert!(
            positive > x / 2,
            "{series}: {positive} of {x} values above 0"
        );
    }
    assert!(!data["raw_values"]["Ping (ms) ICMP"]
        .as_array()
        .unwrap()
        .is_empty());

    // flent's summary prints the report's figures (its avg column is the
    // series' MEAN_VALUE; two decimals).
    let file = file.to_str().unwrap();
    let text = run_flent(&flent, &["-i", file, "-f", "summary"]);
    let close = |series: &str, want: f64, within: f64| {
        let got = summary_mean(&text, series);
        assert!(
            (got - want).abs() <= within,
            "{series}: flent says {got}, the report {want}\n{text}"
        );
    };
    let flows = &summary["tcp_flows"];
    close(
        "TCP upload sum",
        summary["goodput_mbit"]["left_to_right"].as_f64().unwrap(),
        0.011,
    );
    close(
        "TCP download sum",
        summary["goodput_mbit"]["right_to_left"].as_f64().unwrap(),
        0.011,
    );
    close(
        "TCP upload fairness",
        flows["left_to_right"]["jain_index"].as_f64().unwrap(),
        0.0051,
    );
    close(
        "TCP download fairness",
        flows["right_to_left"]["jain_index"].as_f64().unwrap(),
        0.0051,
    );
    close(
        "TCP upload BE::3",
        flows["left_to_right"]["goodput_mbit"][2].as_f64().unwrap(),
        0.011,
    );
    close(
        "Ping (ms) ICMP",
        summary["ping"]["rtt"]["avg_ms"].as_f64().unwrap(),
        0.0051,
    );
    close(
        "Ping (ms) UDP BE",
        summary["udp_rr"]["rtt"]["avg_ms"].as_f64().unwrap(),
        0.0051,
    );

    // flent draws them.
    for plot in ["all_scaled", "ping_cdf"] {
        let png = dir.path().join(format!("{plot}.png"));
        run_flent(
            &flent,
            &["-i", file, "-p", plot, "-o", png.to_str().unwrap()],
        );
        assert_png(&png);
    }
}
