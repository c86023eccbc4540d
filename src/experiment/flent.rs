//! flent data files (`bloatbox test --flent DIR`): one `.flent.gz` per
//! configuration, in the format flent 2.x writes (flent/resultset.py,
//! `FILEFORMAT_VERSION` 4: gzip-compressed JSON with `metadata`, `version`,
//! `x_values`, `results` and `raw_values`), so that flent's plots, its
//! summary and its GUI read a bloatbox run as one of its own. The series
//! are named as flent's `rrul_be_nflows` test names them
//! (flent/tests/rrul_be_nflows.conf: N best-effort flows each way, a UDP
//! round-trip probe and ICMP ping; `TEST_PARAMETERS` `upload_streams` and
//! `download_streams` give N): `TCP upload BE::1` .. `::N`, `TCP download
//! BE::i`, their `avg` and `sum`, `TCP totals`, `Ping (ms) ICMP`, `Ping (ms)
//! UDP BE`, `Ping (ms) avg`; plus `TCP upload fairness` and `TCP download
//! fairness`, Jain's index of the flows at each step, as flent's
//! `rtt_fair.inc` names and computes them (`FairnessRunner` in
//! flent/runners.py). Left→right is the upload (the left namespace runs the
//! probes, as flent's client does). `x_values` are steps of the sampling
//! interval from the start of the load; a flow's value at a step is its
//! goodput over the step before it (its byte counter interpolated linearly
//! between samples), ping's the round trips interpolated as flent's
//! `TimeseriesAggregator` (flent/aggregators.py) does, UDP_RR's likewise
//! from the mean round trip of the transactions sent in each step (what
//! netperf's demo mode reports). Each series' `MEAN_VALUE` in `SERIES_META` is bloatbox's
//! figure over the measured part (after the warm-up), the computed series'
//! as flent's `ComputingRunner` derives it from those of the series it
//! combines (Jain's index of the flows' goodput for the fairness series).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::Context;
use serde_json::{json, Map, Value};

use super::{ConfigResult, Report};
use crate::load::rrul::{self, jain_index, ThroughputSample};
use crate::load::stats::Sample;

/// flent/resultset.py's `FILEFORMAT_VERSION`.
const FILEFORMAT_VERSION: u32 = 4;
/// The flent test whose series names and plots the files use.
pub const TEST_NAME: &str = "rrul_be_nflows";
/// flent/resultset.py's `SUFFIX`.
pub const SUFFIX: &str = ".flent.gz";

/// One direction of the flows, as flent names it.
#[derive(Clone, Copy)]
enum Way {
    Upload,
    Download,
}

impl Way {
    fn name(self) -> &'static str {
        match self {
            Way::Upload => "upload",
            Way::Download => "download",
        }
    }

    fn flows(self, s: &ThroughputSample) -> &[u64] {
        match self {
            Way::Upload => &s.up_flows,
            Way::Download => &s.down_flows,
        }
    }
}

/// A time as flent serialises it (`format_date(..., utc=True)`:
/// `%Y-%m-%dT%H:%M:%S.%fZ`).
fn iso(t: SystemTime) -> String {
    let t = time::OffsetDateTime::from(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}

/// Seconds since the Unix epoch (flent's raw `t`).
fn unix(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `v` rounded to `decimals` places.
fn round(v: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (v * scale).round() / scale
}

/// The series of one data file, in the order flent's test defines them.
struct Series {
    name: String,
    /// One value per x value (`None`: no data at that step).
    values: Vec<Option<f64>>,
    /// The raw measurements (`[]` for a computed series, as flent writes).
    raw: Vec<Value>,
    /// Its `SERIES_META` entry.
    meta: Value,
}

/// `points` (time, value) interpolated at `x` as flent's
/// `TimeseriesAggregator.aggregate` does: linearly between the last point
/// at or before `x` and the first after it, if that one is within five
/// steps (half a step before the first point); the nearest point at the
/// ends; `None` farther away.
fn interpolate(points: &[(f64, f64)], x: &[f64], step: f64) -> Vec<Option<f64>> {
    let mut out: Vec<Option<f64>> = Vec::with_capacity(x.len());
    for &t in x {
        let next = points.iter().position(|&(pt, _)| pt > t);
        let (prev, next, max_dist, last) = match next {
            Some(0) => (None, points[0], step * 0.5, false),
            Some(i) => (Some(points[i - 1]), points[i], step * 5.0, false),
            None => match points.last() {
                Some(&p) => (None, p, step * 5.0, true),
                None => {
                    out.push(None);
                    continue;
                }
            },
        };
        let v = if (t - next.0).abs() > max_dist {
            None
        } else {
            match prev {
                // flent does not repeat the last value past the end.
                None if last && out.last().copied().flatten() == Some(next.1) => None,
                None => Some(next.1),
                Some((pt, pv)) => Some(pv + (next.1 - pv) / (next.0 - pt) * (t - pt)),
            }
        };
        out.push(v);
    }
    out
}

/// A cumulative counter's value at `t`, linear between samples (0 before
/// the first, the last after it).
fn counter_at(samples: &[(f64, f64)], t: f64) -> f64 {
    match samples.iter().position(|&(st, _)| st >= t) {
        Some(0) if samples[0].0 <= t => samples[0].1,
        Some(0) => 0.0,
        Some(i) => {
            let (t0, v0) = samples[i - 1];
            let (t1, v1) = samples[i];
            v0 + (v1 - v0) * (t - t0) / (t1 - t0)
        }
        None => samples.last().map_or(0.0, |s| s.1),
    }
}

/// The per-step values of a computed series: `f` of the values of `of` at
/// each step where all of them have one.
fn computed(of: &[&Series], steps: usize, f: impl Fn(&[f64]) -> Option<f64>) -> Vec<Option<f64>> {
    (0..steps)
        .map(|k| {
            let v: Option<Vec<f64>> = of.iter().map(|s| s.values[k]).collect();
            v.filter(|v| !v.is_empty()).and_then(|v| f(&v))
        })
        .collect()
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// A computed series' entry: flent's `ComputingRunner` metadata.
fn computed_meta(units: &str, mean_value: Option<f64>) -> Value {
    json!({
        "COMPUTED_LATE": false,
        "MEAN_VALUE": mean_value,
        "UNITS": units,
    })
}

/// The flows of one direction (`flows` per direction), each with its
/// goodput over each step, then their avg, sum and fairness.
fn tcp_series(
    r: &ConfigResult,
    way: Way,
    flows: usize,
    x: &[f64],
    t0: f64,
) -> (Vec<Series>, Vec<Series>) {
    let samples = &r.raw.throughput;
    let step = rrul::SAMPLE_INTERVAL.as_secs_f64();
    let measured = match way {
        Way::Upload => &r.summary.up_flows_mbit,
        Way::Download => &r.summary.down_flows_mbit,
    };
    let mut per_flow = Vec::new();
    for i in 0..flows {
        let counter: Vec<(f64, f64)> = samples
            .iter()
            .map(|s| (s.t, way.flows(s).get(i).copied().unwrap_or(0) as f64))
            .collect();
        let last_t = samples.last().map_or(0.0, |s| s.t);
        let values = x
            .iter()
            .map(|&t| {
                (t > 0.0 && t <= last_t + 1e-9).then(|| {
                    let bytes = counter_at(&counter, t) - counter_at(&counter, t - step);
                    round(bytes * 8.0 / step / 1e6, 4)
                })
            })
            .collect();
        let raw = counter
            .windows(2)
            .map(|w| {
                let dur = w[1].0 - w[0].0;
                json!({
                    "t": round(t0 + w[1].0, 6),
                    "val": round((w[1].1 - w[0].1) * 8.0 / dur.max(1e-9) / 1e6, 4),
                    "dur": round(dur, 6),
                })
            })
            .collect();
        per_flow.push(Series {
            name: format!("TCP {} BE::{}", way.name(), i + 1),
            values,
            raw,
            meta: json!({
                "MEAN_VALUE": measured.get(i).map(|&m| round(m, 4)),
                "RUNNER": "bloatbox",
                "UNITS": "Mbits/s",
            }),
        });
    }
    let refs: Vec<&Series> = per_flow.iter().collect();
    let name = |what: &str| format!("TCP {} {what}", way.name());
    let total: f64 = measured.iter().sum();
    let computed_series = vec![
        Series {
            name: name("avg"),
            values: computed(&refs, x.len(), |v| mean(v).map(|m| round(m, 4))),
            raw: Vec::new(),
            meta: computed_meta("Mbits/s", mean(measured).map(|m| round(m, 4))),
        },
        Series {
            name: name("sum"),
            values: computed(&refs, x.len(), |v| Some(round(v.iter().sum(), 4))),
            raw: Vec::new(),
            meta: computed_meta("Mbits/s", (!measured.is_empty()).then(|| round(total, 4))),
        },
        Series {
            name: name("fairness"),
            values: computed(&refs, x.len(), |v| jain_index(v).map(|j| round(j, 4))),
            raw: Vec::new(),
            meta: computed_meta("", jain_index(measured).map(|j| round(j, 4))),
        },
    ];
    (per_flow, computed_series)
}

/// The x values: steps of the sampling interval from 0 up to the last
/// throughput sample.
fn x_values(r: &ConfigResult) -> Vec<f64> {
    let step = rrul::SAMPLE_INTERVAL.as_secs_f64();
    let end = r.raw.throughput.last().map_or(0.0, |s| s.t);
    let steps = (end / step + 1e-6).floor() as usize;
    (0..=steps).map(|k| round(k as f64 * step, 6)).collect()
}

/// The probes' series: ICMP ping, UDP_RR, and their average.
fn probe_series(r: &ConfigResult, x: &[f64], t0: f64) -> Vec<Series> {
    let step = rrul::SAMPLE_INTERVAL.as_secs_f64();
    let mut out = Vec::new();
    let rtt_ms = |s: &Sample| round(s.rtt_us / 1e3, 3);
    if let (Some(raw), Some(summary)) = (&r.raw.ping, &r.summary.ping) {
        let points: Vec<(f64, f64)> = raw.samples.iter().map(|s| (s.t, rtt_ms(s))).collect();
        let l = &summary.latency;
        out.push(Series {
            name: "Ping (ms) ICMP".into(),
            values: interpolate(&points, x, step)
                .into_iter()
                .map(|v| v.map(|v| round(v, 3)))
                .collect(),
            raw: raw
                .samples
                .iter()
                .map(|s| json!({"t": round(t0 + s.t, 6), "val": rtt_ms(s)}))
                .collect(),
            meta: json!({
                "MEAN_VALUE": (l.samples > 0).then_some(round(l.avg_ms, 3)),
                "MIN_VALUE": (l.samples > 0).then_some(round(l.min_ms, 3)),
                "MAX_VALUE": (l.samples > 0).then_some(round(l.max_ms, 3)),
                "RUNNER": "bloatbox",
                "UNITS": "ms",
            }),
        });
    }
    if let (Some(raw), Some(summary)) = (&r.raw.udp_rr, &r.summary.udp_rr) {
        // The mean round trip of the transactions sent in each step.
        let mut sums = vec![(0.0, 0u32); x.len()];
        for s in &raw.samples {
            let k = (s.t / step).ceil().max(0.0) as usize;
            if let Some(slot) = sums.get_mut(k) {
                slot.0 += s.rtt_us / 1e3;
                slot.1 += 1;
            }
        }
        // One raw point per step with transactions, at its end; the steps
        // interpolated between them as ping's.
        let points: Vec<(f64, f64)> = x
            .iter()
            .zip(&sums)
            .filter(|(_, &(_, n))| n > 0)
            .map(|(&t, &(sum, n))| (t, round(sum / f64::from(n), 3)))
            .collect();
        let l = &summary.latency;
        out.push(Series {
            name: "Ping (ms) UDP BE".into(),
            values: interpolate(&points, x, step)
                .into_iter()
                .map(|v| v.map(|v| round(v, 3)))
                .collect(),
            raw: points
                .iter()
                .map(|&(t, v)| json!({"t": round(t0 + t, 6), "val": v, "dur": round(step, 6)}))
                .collect(),
            meta: json!({
                "MEAN_VALUE": (l.samples > 0).then_some(round(l.avg_ms, 3)),
                "RUNNER": "bloatbox",
                "UNITS": "ms",
            }),
        });
    }
    if !out.is_empty() {
        let refs: Vec<&Series> = out.iter().collect();
        // flent's AverageRunner: the mean of the series that have a value.
        let values = (0..x.len())
            .map(|k| {
                let v: Vec<f64> = refs.iter().filter_map(|s| s.values[k]).collect();
                mean(&v).map(|m| round(m, 3))
            })
            .collect();
        let means: Vec<f64> = refs
            .iter()
            .filter_map(|s| s.meta["MEAN_VALUE"].as_f64())
            .collect();
        out.push(Series {
            name: "Ping (ms) avg".into(),
            values,
            raw: Vec::new(),
            meta: computed_meta("ms", mean(&means).map(|m| round(m, 3))),
        });
    }
    out
}

/// The local host's name (flent's `LOCAL_HOST`, `hostname`).
fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
}

/// flent's name for a data file: `NAME-TIME.TITLE.flent.gz`
/// (`ResultSet._gen_filename`: the time without colons, the title with
/// all but letters, digits and '-' made '_').
pub fn file_name(r: &ConfigResult, time: &str) -> String {
    let title: String = r
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let time = time.trim_end_matches('Z').replace(':', "");
    format!("{TEST_NAME}-{time}.{title}{SUFFIX}")
}

/// One configuration's data file, as the JSON flent serialises
/// (`ResultSet.serialise`), and its file name.
pub fn data_file(report: &Report, r: &ConfigResult) -> anyhow::Result<(String, Value)> {
    let o = &report.options;
    let started = r.raw.t0.unwrap_or(report.started);
    let time = iso(started);
    let t0 = unix(started);
    let x = x_values(r);
    let up_flows = o.flows;
    let down_flows = if o.bidirectional { o.flows } else { 0 };
    let mut series = Vec::new();
    let mut computed_tcp = Vec::new();
    for (way, n) in [(Way::Upload, up_flows), (Way::Download, down_flows)] {
        if n > 0 {
            let (flows, computed) = tcp_series(r, way, n, &x, t0);
            series.extend(flows);
            computed_tcp.extend(computed);
        }
    }
    // flent's `TCP totals`: the sum of every flow, both ways.
    if !series.is_empty() {
        let refs: Vec<&Series> = series.iter().collect();
        let total = r
            .summary
            .up_flows_mbit
            .iter()
            .chain(&r.summary.down_flows_mbit)
            .sum::<f64>();
        computed_tcp.push(Series {
            name: "TCP totals".into(),
            values: computed(&refs, x.len(), |v| Some(round(v.iter().sum(), 4))),
            raw: Vec::new(),
            meta: computed_meta("Mbits/s", Some(round(total, 4))),
        });
    }
    series.extend(computed_tcp);
    series.extend(probe_series(r, &x, t0));

    let name = file_name(r, &time);
    let host = r.config.right.ipv4.addr.to_string();
    let length = round(o.duration.as_secs_f64(), 6);
    let mut results = Map::new();
    let mut raw_values = Map::new();
    let mut series_meta = Map::new();
    for s in series {
        results.insert(s.name.clone(), json!(s.values));
        raw_values.insert(s.name.clone(), Value::Array(s.raw));
        series_meta.insert(s.name, s.meta);
    }
    let metadata = json!({
        "NAME": TEST_NAME,
        "TITLE": r.name,
        "NOTE": format!(
            "bloatbox {} test of {}: {} flow(s) {} ({}), {} s, first {} s warm-up",
            env!("CARGO_PKG_VERSION"),
            r.name,
            o.flows,
            if o.bidirectional { "each way" } else { "left->right" },
            o.cc.name(),
            length,
            round(o.warmup.as_secs_f64(), 6),
        ),
        "TIME": time,
        "T0": time,
        "LENGTH": length,
        "TOTAL_LENGTH": length,
        "STEP_SIZE": round(rrul::SAMPLE_INTERVAL.as_secs_f64(), 6),
        "HOST": host,
        "HOSTS": [host],
        "LOCAL_HOST": hostname(),
        "IP_VERSION": 4,
        "TEST_PARAMETERS": {
            "upload_streams": up_flows.to_string(),
            "download_streams": down_flows.to_string(),
        },
        "FLENT_VERSION": format!("bloatbox {}", env!("CARGO_PKG_VERSION")),
        "BATCH_NAME": null,
        "BATCH_TIME": null,
        "BATCH_TITLE": null,
        "BATCH_UUID": null,
        "DATA_FILENAME": name,
        "HTTP_GETTER_URLLIST": null,
        "HTTP_GETTER_DNS": null,
        "HTTP_GETTER_WORKERS": null,
        "KERNEL_NAME": "Linux",
        "KERNEL_RELEASE": report.kernel_release,
        "MODULE_VERSIONS": {},
        "SYSCTLS": {
            "net.ipv4.tcp_ecn": u8::from(o.ecn),
        },
        "EGRESS_INFO": null,
        "REMOTE_METADATA": {},
        "FAILED_RUNNERS": 0,
        "SERIES_META": series_meta,
        "BLOATBOX": {
            "version": env!("CARGO_PKG_VERSION"),
            "config": r.name,
            "config_file": r.config_file.as_ref().map(|p| p.display().to_string()),
            "qdisc": [r.paths[0].qdisc, r.paths[1].qdisc],
            "congestion_control": o.cc.name(),
            "warmup_s": round(o.warmup.as_secs_f64(), 6),
        },
    });
    Ok((
        name,
        json!({
            "metadata": metadata,
            "version": FILEFORMAT_VERSION,
            "x_values": x,
            "results": results,
            "raw_values": raw_values,
        }),
    ))
}

/// Writes one data file per configuration into `dir` (created if need
/// be), gzip-compressed as flent writes them; returns their paths.
pub fn write(report: &Report, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    for r in &report.results {
        let (name, data) = data_file(report, r)?;
        let path = dir.join(name);
        let file =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        serde_json::to_writer_pretty(&mut gz, &data)
            .map_err(anyhow::Error::from)
            .and_then(|()| Ok(gz.finish()?.flush()?))
            .with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::testdata;

    fn fq_codel() -> (String, Value) {
        let report = testdata::report();
        data_file(&report, &report.results[0]).unwrap()
    }

    fn series(data: &Value, name: &str) -> Vec<Option<f64>> {
        data["results"][name]
            .as_array()
            .unwrap_or_else(|| panic!("no series {name:?}"))
            .iter()
            .map(Value::as_f64)
            .collect()
    }

    #[test]
    fn the_file_has_flents_keys_and_rrul_be_nflows_series_names() {
        let (name, data) = fq_codel();
        assert_eq!(
            name,
            "rrul_be_nflows-2026-01-01T000000.000000.fq-codel.flent.gz"
        );
        assert_eq!(data["version"], 4);
        let m = &data["metadata"];
        assert_eq!(m["NAME"], "rrul_be_nflows");
        assert_eq!(m["TITLE"], "fq-codel");
        assert_eq!(m["TIME"], "2026-01-01T00:00:00.000000Z");
        assert_eq!(m["LENGTH"], 12.0);
        assert_eq!(m["STEP_SIZE"], 0.1);
        assert_eq!(m["KERNEL_RELEASE"], "6.12.0-test");
        assert_eq!(m["DATA_FILENAME"], name.as_str());
        assert_eq!(m["TEST_PARAMETERS"]["upload_streams"], "4");
        let mut names: Vec<&str> = data["results"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        let mut want = vec![
            "Ping (ms) ICMP",
            "Ping (ms) UDP BE",
            "Ping (ms) avg",
            "TCP totals",
        ];
        let flows: Vec<String> = ["upload", "download"]
            .iter()
            .flat_map(|w| {
                (1..=4)
                    .map(move |i| format!("TCP {w} BE::{i}"))
                    .chain(["avg", "sum", "fairness"].map(|s| format!("TCP {w} {s}")))
            })
            .collect();
        want.extend(flows.iter().map(String::as_str));
        want.sort_unstable();
        assert_eq!(names, want);
        // Every series has a value slot per x value, and its metadata.
        let x = data["x_values"].as_array().unwrap();
        assert_eq!(x.len(), 121);
        for n in &names {
            assert_eq!(series(&data, n).len(), x.len(), "{n}");
            assert!(m["SERIES_META"][n].is_object(), "{n}");
        }
    }

    #[test]
    fn flows_sums_and_fairness_agree_with_the_report() {
        let report = testdata::report();
        let r = &report.results[0];
        let (_, data) = data_file(&report, r).unwrap();
        let meta = &data["metadata"]["SERIES_META"];
        // Over the steps after the warm-up the flows' sum is the goodput.
        let sum = series(&data, "TCP upload sum");
        let measured: Vec<f64> = sum[21..].iter().map(|v| v.unwrap()).collect();
        let avg = measured.iter().sum::<f64>() / measured.len() as f64;
        assert!(
            (avg - r.summary.up_mbit).abs() < 0.01 * r.summary.up_mbit,
            "{avg}"
        );
        assert_eq!(
            meta["TCP upload sum"]["MEAN_VALUE"],
            round(r.summary.up_mbit, 4)
        );
        // Flow 1 gets half, the others a sixth each: Jain 0.75 at every
        // step where they read, as over the run.
        let fairness = series(&data, "TCP download fairness");
        assert_eq!(fairness[20], Some(0.75));
        assert_eq!(meta["TCP download fairness"]["MEAN_VALUE"], 0.75);
        assert_eq!(meta["TCP download fairness"]["COMPUTED_LATE"], false);
        let flow1 = meta["TCP upload BE::1"]["MEAN_VALUE"].as_f64().unwrap();
        let flow2 = meta["TCP upload BE::2"]["MEAN_VALUE"].as_f64().unwrap();
        assert!((flow1 - 3.0 * flow2).abs() < 0.01, "{flow1} {flow2}");
        // The raw values are netperf-like intervals at absolute times.
        let raw = &data["raw_values"]["TCP upload BE::1"][0];
        assert_eq!(raw["t"], 1_767_225_600.1);
        assert_eq!(raw["dur"], 0.1);
        assert_eq!(data["raw_values"]["TCP upload sum"], json!([]));
    }

    #[test]
    fn ping_is_interpolated_and_udp_rr_averaged_per_step() {
        let report = testdata::report();
        let r = &report.results[0];
        let (_, data) = data_file(&report, r).unwrap();
        let icmp = series(&data, "Ping (ms) ICMP");
        // Ping every 100 ms from t = 0: the samples fall on the steps.
        let samples = &r.raw.ping.as_ref().unwrap().samples;
        assert_eq!(icmp[30], Some(round(samples[30].rtt_us / 1e3, 3)));
        let udp = series(&data, "Ping (ms) UDP BE");
        // Round trips of 10.6 ms plus up to 0.3 ms of jitter.
        assert!(
            udp[50].unwrap() >= 10.6 && udp[50].unwrap() <= 10.9,
            "{:?}",
            udp[50]
        );
        let avg = series(&data, "Ping (ms) avg");
        assert_eq!(
            avg[50],
            Some(round((icmp[50].unwrap() + udp[50].unwrap()) / 2.0, 3))
        );
        let meta = &data["metadata"]["SERIES_META"]["Ping (ms) ICMP"];
        let ping = r.summary.ping.as_ref().unwrap();
        assert_eq!(meta["MEAN_VALUE"], round(ping.latency.avg_ms, 3));
        assert_eq!(meta["UNITS"], "ms");
    }

    #[test]
    fn interpolation_follows_flents_aggregator() {
        let points = [(0.05, 10.0), (0.15, 20.0), (1.5, 30.0)];
        let x = [0.0, 0.1, 0.2, 1.0, 1.6, 1.7];
        let v = interpolate(&points, &x, 0.1);
        // Half a step before the first point; between points; too far
        // (over five steps) from the next; within five steps of it; the
        // last value once past it.
        assert_eq!(v[0], Some(10.0));
        assert!((v[1].unwrap() - 15.0).abs() < 1e-9);
        assert_eq!(v[2], None);
        assert!((v[3].unwrap() - 20.0 - 10.0 * 0.85 / 1.35).abs() < 1e-9);
        assert_eq!(v[4], Some(30.0));
        assert_eq!(v[5], None, "not repeated");
    }

    #[test]
    fn the_written_file_is_gzipped_json() {
        let dir = tempfile::tempdir().unwrap();
        let report = testdata::report();
        let paths = write(&report, dir.path()).unwrap();
        assert_eq!(paths.len(), 2);
        let file = std::fs::File::open(&paths[1]).unwrap();
        let data: Value = serde_json::from_reader(flate2::read::GzDecoder::new(file)).unwrap();
        assert_eq!(data["metadata"]["TITLE"], "pfifo-fast-deep-ring");
        assert!(paths[1]
            .to_str()
            .unwrap()
            .ends_with(".pfifo-fast-deep-ring.flent.gz"));
    }
}
