//! Plots of a test run, drawn with plotters as SVG and as PNG: ping's round
//! trips over time, UDP_RR's (the median of each 100 ms), the CDF of both
//! after the warm-up (log time axis), and the TCP data reaching the
//! receivers per 100 ms and direction. `charts` turns a report into chart
//! data, `Chart::write` draws one. The warm-up is shaded; above the plot a
//! header names each configuration in its line colour with its link per
//! direction (rate, delay, qdisc tree), so that no legend lies over a line.
//! Text is drawn with DejaVu Sans, embedded (assets/fonts), so a PNG needs
//! no font on the machine.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Once;

use anyhow::Context;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{ConfigResult, Report};
use crate::dir::Dir;
use crate::load::rrul::{Received, ThroughputSample};
use crate::load::stats::Sample;
use crate::qdisc::dump::QdiscDump;
use crate::units::{print_rate, sprint_time};

/// Size of every plot, pixels.
pub const WIDTH: u32 = 1000;
/// Height of every plot, pixels.
pub const HEIGHT: u32 = 640;

/// Line colours, one per configuration (cycled).
pub const PALETTE: [RGBColor; 6] = [
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];

/// The span over which UDP_RR's times are summarised into one point.
const BIN_S: f64 = 0.1;

const FONT: &str = "sans-serif";

/// Registers the embedded font under the family every text here names.
fn register_font() -> anyhow::Result<()> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            include_bytes!("../../assets/fonts/DejaVuSans.ttf"),
        )
        .map_err(|_| anyhow::anyhow!("the embedded DejaVu Sans is not a valid font"));
    });
    result
}

/// A line's points, (x, y).
pub type Points = Vec<(f64, f64)>;

/// One line of a chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The configuration's colour.
    pub color: RGBColor,
    /// Dashed: UDP_RR against ping, or right→left against left→right.
    pub dashed: bool,
    /// The points, in x order.
    pub points: Points,
}

/// A line of the header: a configuration's colour and its description.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The configuration's colour in the plots.
    pub color: RGBColor,
    /// The configuration's name and link.
    pub text: String,
}

/// One chart, ready to draw.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// File name without extension.
    pub stem: &'static str,
    /// The chart's title.
    pub title: String,
    /// One per configuration, under the title.
    pub entries: Vec<Entry>,
    /// What solid and dashed lines are, if both occur.
    pub styles: Option<&'static str>,
    /// The x axis's label, with its unit.
    pub x_label: &'static str,
    /// The y axis's label, with its unit.
    pub y_label: &'static str,
    /// A logarithmic x axis.
    pub log_x: bool,
    /// Shade 0..warm-up on the x axis.
    pub warmup_s: Option<f64>,
    /// The lines, one or two per configuration.
    pub series: Vec<Series>,
}

/// A tree's qdisc kinds, root first, each once (`htb/sfq`); default
/// children nobody attached (handle 0) are left out.
fn tree_kinds(root: &QdiscDump) -> String {
    fn walk(q: &QdiscDump, kinds: &mut Vec<String>) {
        if !kinds.contains(&q.kind) {
            kinds.push(q.kind.clone());
        }
        for c in q.children.iter().filter(|c| c.handle != 0) {
            walk(c, kinds);
        }
    }
    let mut kinds = Vec::new();
    walk(root, &mut kinds);
    kinds.join("/")
}

/// `100Mbit 5ms fq_codel`: a direction's rate, delay and qdisc tree.
fn link_text(r: &ConfigResult, dir: Dir) -> String {
    let p = r.config.link_params(dir);
    let rate = match p.rate_bytes_ps {
        0 => "unlimited".to_string(),
        b => print_rate(b),
    };
    let delay = sprint_time(p.delay_ns / 1000);
    let qdisc = tree_kinds(&r.final_qdiscs[dir.index()]);
    format!("{rate} {delay} {qdisc}")
}

/// A configuration's name and link, both directions.
fn entry(r: &ConfigResult, color: RGBColor) -> Entry {
    let [l2r, r2l] = Dir::ALL.map(|d| link_text(r, d));
    let text = if l2r == r2l {
        format!("{}: {l2r} each way", r.name)
    } else {
        format!("{}: left→right {l2r}, right→left {r2l}", r.name)
    };
    Entry { color, text }
}

/// Round trips in ms over time.
fn rtt_points(samples: &[Sample]) -> Points {
    samples.iter().map(|s| (s.t, s.rtt_us / 1e3)).collect()
}

/// The median round trip, in ms, of each `BIN_S` with samples, at the
/// bin's middle.
fn binned_median(samples: &[Sample]) -> Points {
    let mut bins: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
    for s in samples {
        bins.entry((s.t / BIN_S) as u64)
            .or_default()
            .push(s.rtt_us / 1e3);
    }
    bins.into_iter()
        .map(|(bin, mut v)| {
            v.sort_by(f64::total_cmp);
            ((bin as f64 + 0.5) * BIN_S, v[v.len() / 2])
        })
        .collect()
}

/// The empirical CDF of `values`: (value, fraction ≤ value) points.
pub fn cdf(values: &[f64]) -> Points {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    v.iter()
        .enumerate()
        .map(|(i, &x)| (x, (i + 1) as f64 / n))
        .collect()
}

/// Mbit/s of TCP data reaching the receivers of one direction in each
/// interval between samples, at the interval's end. Bytes read would not
/// do: after a loss, the bytes queued behind the hole are read at once.
pub fn goodput(samples: &[ThroughputSample], dir: fn(&ThroughputSample) -> Received) -> Points {
    samples
        .windows(2)
        .map(|w| {
            let dt = (w[1].t - w[0].t).max(1e-9);
            let bytes = dir(&w[1]).arrived.saturating_sub(dir(&w[0]).arrived);
            (w[1].t, bytes as f64 * 8.0 / dt / 1e6)
        })
        .collect()
}

/// The charts of a report: ping and UDP_RR over time where they ran, the
/// CDF where either ran, goodput where flows ran.
pub fn charts(report: &Report) -> Vec<Chart> {
    let o = &report.options;
    let warmup = o.warmup.as_secs_f64();
    let color = |i: usize| PALETTE[i % PALETTE.len()];
    let entries: Vec<Entry> = (report.results.iter().enumerate())
        .map(|(i, r)| entry(r, color(i)))
        .collect();
    let load = match (o.flows, o.bidirectional) {
        (0, _) => "idle link".to_string(),
        (n, true) => format!("{n} {} flow(s) each way", o.cc.name()),
        (n, false) => format!("{n} {} flow(s) left→right", o.cc.name()),
    };
    let chart = |stem, title: String, x_label, y_label, series| Chart {
        stem,
        title,
        entries: entries.clone(),
        styles: None,
        x_label,
        y_label,
        log_x: false,
        warmup_s: Some(warmup),
        series,
    };
    let per_config = |f: &dyn Fn(&ConfigResult) -> Option<Points>, dashed| {
        (report.results.iter().enumerate())
            .filter_map(|(i, r)| {
                f(r).map(|points| Series {
                    color: color(i),
                    dashed,
                    points,
                })
            })
            .collect::<Vec<_>>()
    };
    let mut charts = Vec::new();
    if o.ping_interval.is_some() {
        charts.push(chart(
            "latency",
            format!("ping round trips under load ({load})"),
            "time since the load started (s)",
            "RTT (ms)",
            per_config(
                &|r| r.raw.ping.as_ref().map(|p| rtt_points(&p.samples)),
                false,
            ),
        ));
    }
    if o.udp_rr {
        charts.push(chart(
            "udp-rr",
            format!("UDP_RR round trips under load, median of each 100 ms ({load})"),
            "time since the load started (s)",
            "RTT (ms)",
            per_config(
                &|r| r.raw.udp_rr.as_ref().map(|u| binned_median(&u.samples)),
                false,
            ),
        ));
    }
    if o.ping_interval.is_some() || o.udp_rr {
        let measured = |samples: &[Sample]| {
            let v: Vec<f64> = samples
                .iter()
                .filter(|s| s.t >= warmup)
                .map(|s| s.rtt_us / 1e3)
                .collect();
            cdf(&v)
        };
        let mut series = per_config(
            &|r| r.raw.ping.as_ref().map(|p| measured(&p.samples)),
            false,
        );
        series.extend(per_config(
            &|r| r.raw.udp_rr.as_ref().map(|u| measured(&u.samples)),
            true,
        ));
        charts.push(Chart {
            styles: Some("solid: ping, dashed: UDP_RR"),
            log_x: true,
            warmup_s: None,
            ..chart(
                "latency-cdf",
                format!("round-trip time CDF after the warm-up ({load})"),
                "RTT (ms)",
                "fraction of round trips",
                series,
            )
        });
    }
    if o.flows > 0 {
        let mut series = per_config(&|r| Some(goodput(&r.raw.throughput, |s| s.up)), false);
        if o.bidirectional {
            series.extend(per_config(
                &|r| Some(goodput(&r.raw.throughput, |s| s.down)),
                true,
            ));
        }
        charts.push(Chart {
            styles: o
                .bidirectional
                .then_some("solid: left→right, dashed: right→left"),
            ..chart(
                "throughput",
                format!("TCP goodput: data reaching the receivers per 100 ms ({load})"),
                "time since the load started (s)",
                "Mbit/s",
                series,
            )
        })
    }
    charts
}

/// An axis label: at most two decimals, no trailing zeros (90, 0.25).
fn tick(v: f64) -> String {
    let text = format!("{v:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `lo..hi` padded for a linear axis from 0.
fn linear_range(values: impl Iterator<Item = f64>) -> Range<f64> {
    let max = values.fold(0.0, f64::max);
    0.0..if max > 0.0 { max * 1.05 } else { 1.0 }
}

impl Chart {
    /// Height of the header: the title, an entry per configuration and
    /// the line on line styles.
    fn header_height(&self) -> u32 {
        36 + 20 * (self.entries.len() + usize::from(self.styles.is_some())) as u32 + 8
    }

    /// Draws the chart into `dir` as STEM.svg and STEM.png; returns both
    /// paths.
    pub fn write(&self, dir: &Path) -> anyhow::Result<[PathBuf; 2]> {
        register_font()?;
        let svg = dir.join(format!("{}.svg", self.stem));
        let png = dir.join(format!("{}.png", self.stem));
        self.render(SVGBackend::new(&svg, (WIDTH, HEIGHT)).into_drawing_area())
            .with_context(|| format!("drawing {}", svg.display()))?;
        self.render(BitMapBackend::new(&png, (WIDTH, HEIGHT)).into_drawing_area())
            .with_context(|| format!("drawing {}", png.display()))?;
        Ok([svg, png])
    }

    /// Draws the chart on `root` and writes it out.
    fn render<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        self.draw(&root)
            .and_then(|()| root.present())
            .map_err(|e| anyhow::anyhow!("{e}"))
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        root.fill(&WHITE)?;
        let (header, plot) = root.split_vertically(self.header_height());
        header.draw(&Text::new(
            self.title.clone(),
            (16, 10),
            (FONT, 20).into_font(),
        ))?;
        let lines = self.entries.iter().map(|e| (e.color, e.text.as_str()));
        let styles = self.styles.map(|s| (BLACK, s));
        for (i, (color, text)) in lines.chain(styles).enumerate() {
            let y = 40 + 20 * i as i32;
            if color != BLACK {
                header.draw(&Rectangle::new([(20, y + 3), (44, y + 11)], color.filled()))?;
            }
            header.draw(&Text::new(
                text.to_string(),
                (52, y),
                (FONT, 15).into_font(),
            ))?;
        }
        let points = || self.series.iter().flat_map(|s| s.points.iter());
        let y = linear_range(points().map(|p| p.1));
        if self.log_x {
            let positive = || points().map(|p| p.0).filter(|x| *x > 0.0);
            let lo = positive().fold(f64::INFINITY, f64::min);
            let hi = positive().fold(0.0, f64::max);
            let (lo, hi) = if lo <= hi {
                (lo / 1.2, hi * 1.2)
            } else {
                (0.1, 1.0)
            };
            self.draw_plot(&plot, (lo..hi).log_scale(), y)
        } else {
            let x = linear_range(points().map(|p| p.0).chain(self.warmup_s));
            self.draw_plot(&plot, x, y)
        }
    }

    fn draw_plot<DB, X>(
        &self,
        area: &DrawingArea<DB, Shift>,
        x: X,
        y: Range<f64>,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
    where
        DB: DrawingBackend,
        X: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
    {
        let (y_lo, y_hi) = (y.start, y.end);
        let mut chart = ChartBuilder::on(area)
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(x, y)?;
        // A log axis labels 1, 2 and 5 of each decade: its other key
        // points (3, 4, 6 ... 9) keep their grid lines but would crowd.
        let log_x = self.log_x;
        let x_tick = move |v: &f64| {
            let lead = *v / 10f64.powf(v.log10().floor());
            let labelled = !log_x || [1.0, 2.0, 5.0].iter().any(|d| (lead - d).abs() < 1e-6);
            if labelled {
                tick(*v)
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .x_desc(self.x_label)
            .y_desc(self.y_label)
            .x_label_formatter(&x_tick)
            .y_label_formatter(&|v| tick(*v))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        if let Some(w) = self.warmup_s.filter(|w| *w > 0.0) {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, y_lo), (w, y_hi)],
                BLACK.mix(0.08).filled(),
            )))?;
            chart.draw_series(std::iter::once(
                EmptyElement::at((0.0, y_hi))
                    + Text::new(
                        "warm-up",
                        (6, 6),
                        (FONT, 13).into_font().color(&BLACK.mix(0.6)),
                    ),
            ))?;
        }
        for s in &self.series {
            let style = s.color.stroke_width(2);
            if s.dashed {
                chart.draw_series(DashedLineSeries::new(s.points.iter().copied(), 8, 5, style))?;
            } else {
                chart.draw_series(LineSeries::new(s.points.iter().copied(), style))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::testdata;

    fn chart<'a>(charts: &'a [Chart], stem: &str) -> &'a Chart {
        charts
            .iter()
            .find(|c| c.stem == stem)
            .unwrap_or_else(|| panic!("no {stem} chart"))
    }

    #[test]
    fn goodput_is_the_data_reaching_the_receivers_not_the_bytes_read() {
        let report = testdata::report();
        let charts = charts(&report);
        let tput = chart(&charts, "throughput");
        // Both directions of both configurations.
        assert_eq!(tput.series.len(), 4);
        for s in &tput.series {
            assert_eq!(s.points.len(), report.results[0].raw.throughput.len() - 1);
            for &(t, mbit) in &s.points {
                assert!(
                    (mbit - testdata::ARRIVED_MBIT).abs() < 0.01,
                    "{mbit} Mbit/s at {t} s"
                );
            }
        }
        // The bytes read, in bursts, would have drawn 4 times the rate.
        let read: Points = report.results[0]
            .raw
            .throughput
            .windows(2)
            .map(|w| {
                (
                    w[1].t,
                    (w[1].up.read - w[0].up.read) as f64 * 8.0 / 0.1 / 1e6,
                )
            })
            .collect();
        let peak = read.iter().map(|p| p.1).fold(0.0, f64::max);
        assert!(peak > 3.0 * testdata::ARRIVED_MBIT, "{peak}");
        assert_ne!(tput.series[0].points, read);
    }

    #[test]
    fn charts_mark_the_warm_up_and_name_each_link() {
        let charts = charts(&testdata::report());
        let stems: Vec<&str> = charts.iter().map(|c| c.stem).collect();
        assert_eq!(stems, ["latency", "udp-rr", "latency-cdf", "throughput"]);
        for c in &charts {
            let over_time = c.stem != "latency-cdf";
            assert_eq!(c.warmup_s, over_time.then_some(2.0), "{}", c.stem);
            assert_eq!(
                c.entries
                    .iter()
                    .map(|e| e.text.as_str())
                    .collect::<Vec<_>>(),
                [
                    "fq-codel: 100Mbit 5ms fq_codel each way",
                    "pfifo-fast-deep-ring: 100Mbit 5ms pfifo_fast each way"
                ],
                "{}",
                c.stem
            );
        }
        // The CDF leaves the warm-up out: 2 of ping's 12 s.
        let cdf = chart(&charts, "latency-cdf");
        assert_eq!(cdf.series[0].points.len(), 100);
        assert!(cdf.log_x);
    }

    #[test]
    fn plots_are_written_as_svg_and_png() {
        let dir = tempfile::tempdir().unwrap();
        let written = testdata::report().write_plots(dir.path()).unwrap();
        assert_eq!(written.len(), 8, "{written:?}");
        for path in &written {
            let len = std::fs::metadata(path).unwrap().len();
            assert!(len > 1000, "{}: {len} bytes", path.display());
            if path.extension().is_some_and(|e| e == "png") {
                let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
                let mut reader = decoder.read_info().unwrap();
                let mut buf = vec![0; reader.output_buffer_size()];
                let frame = reader.next_frame(&mut buf).unwrap();
                assert_eq!((frame.width, frame.height), (WIDTH, HEIGHT));
                // Drawn on: not a blank white picture.
                assert!(buf.iter().any(|&b| b < 128), "{} is blank", path.display());
            }
        }
        let svg = std::fs::read_to_string(dir.path().join("throughput.svg")).unwrap();
        assert!(
            svg.contains("TCP goodput: data reaching the receivers"),
            "{svg}"
        );
        assert!(svg.contains("fq-codel: 100Mbit 5ms fq_codel each way"));
        assert!(svg.contains("warm-up"));
    }

    #[test]
    fn axis_labels_drop_needless_zeros() {
        assert_eq!(tick(90.0), "90");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(12.5), "12.5");
        assert_eq!(tick(0.0), "0");
    }

    #[test]
    fn cdf_ends_at_one_and_is_sorted() {
        let c = cdf(&[3.0, 1.0, 2.0]);
        assert_eq!(c, vec![(1.0, 1.0 / 3.0), (2.0, 2.0 / 3.0), (3.0, 1.0)]);
        assert!(cdf(&[]).is_empty());
    }

    #[test]
    fn udp_rr_points_are_the_median_of_each_100_ms() {
        let s = |t: f64, rtt_us: f64| Sample::rtt(t, rtt_us);
        let points = binned_median(&[
            s(0.01, 1000.0),
            s(0.02, 9000.0),
            s(0.03, 2000.0),
            s(0.25, 4000.0),
        ]);
        assert_eq!(points, vec![(0.05, 2.0), (0.25, 4.0)]);
    }
}
