//! Hand-written SVG line charts of a test run: latency over time, latency
//! CDF and throughput over time, one line per configuration.

use std::fmt::Write;

/// One line of a chart.
pub struct Series {
    pub name: String,
    pub color: &'static str,
    pub dashed: bool,
    pub points: Vec<(f64, f64)>,
}

/// Line colours, one per configuration (cycled).
pub const PALETTE: [&str; 6] = [
    "#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

const W: f64 = 800.0;
const H: f64 = 480.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;

/// A "nice" tick step for a span: 1, 2 or 5 times a power of ten, giving
/// about five ticks.
fn tick_step(span: f64) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / 5.0;
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// An SVG line chart; axes start at 0 and end at the data's maximum.
pub fn line_chart(title: &str, xlabel: &str, ylabel: &str, series: &[Series]) -> String {
    let all = || series.iter().flat_map(|s| s.points.iter());
    let xmax = all().map(|p| p.0).fold(0.0, f64::max).max(1e-9);
    let ymax = all().map(|p| p.1).fold(0.0, f64::max).max(1e-9) * 1.05;
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let x = |v: f64| LEFT + v / xmax * pw;
    let y = |v: f64| TOP + ph - v / ymax * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
        W / 2.0,
        escape(title)
    );
    for (axis_max, horizontal) in [(xmax, true), (ymax, false)] {
        let step = tick_step(axis_max);
        let mut v = 0.0;
        while v <= axis_max + step * 1e-9 {
            let label = if step < 1.0 {
                format!("{v:.*}", (-step.log10().floor()) as usize)
            } else {
                format!("{v:.0}")
            };
            if horizontal {
                let _ = writeln!(
                    s,
                    r##"<line x1="{0:.1}" y1="{1}" x2="{0:.1}" y2="{2}" stroke="#ddd"/><text x="{0:.1}" y="{3}" text-anchor="middle">{label}</text>"##,
                    x(v),
                    TOP,
                    TOP + ph,
                    TOP + ph + 16.0
                );
            } else {
                let _ = writeln!(
                    s,
                    r##"<line x1="{1}" y1="{0:.1}" x2="{2}" y2="{0:.1}" stroke="#ddd"/><text x="{3}" y="{4:.1}" text-anchor="end">{label}</text>"##,
                    y(v),
                    LEFT,
                    LEFT + pw,
                    LEFT - 6.0,
                    y(v) + 4.0
                );
            }
            v += step;
        }
    }
    let _ = writeln!(
        s,
        r#"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        H - 12.0,
        escape(xlabel)
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(18 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + ph / 2.0,
        escape(ylabel)
    );
    for (i, ser) in series.iter().enumerate() {
        if !ser.points.is_empty() {
            let pts: Vec<String> = ser
                .points
                .iter()
                .map(|&(a, b)| format!("{:.1},{:.1}", x(a), y(b)))
                .collect();
            let dash = if ser.dashed {
                r#" stroke-dasharray="6 4""#
            } else {
                ""
            };
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{}" stroke-width="1.5"{dash} points="{}"/>"#,
                ser.color,
                pts.join(" ")
            );
        }
        let ly = TOP + 14.0 + 16.0 * i as f64;
        let dash = if ser.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = writeln!(
            s,
            r#"<line x1="{0}" y1="{1:.1}" x2="{2}" y2="{1:.1}" stroke="{3}" stroke-width="2"{dash}/><text x="{4}" y="{5:.1}">{6}</text>"#,
            LEFT + 10.0,
            ly,
            LEFT + 34.0,
            ser.color,
            LEFT + 40.0,
            ly + 4.0,
            escape(&ser.name)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// The empirical CDF of `values`: (value, fraction ≤ value) points.
pub fn cdf(values: &[f64]) -> Vec<(f64, f64)> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    v.iter()
        .enumerate()
        .map(|(i, &x)| (x, (i + 1) as f64 / n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_numbers() {
        assert_eq!(tick_step(10.0), 2.0);
        assert_eq!(tick_step(130.0), 50.0);
        assert!((tick_step(0.9) - 0.2).abs() < 1e-12);
        assert_eq!(tick_step(0.0), 1.0);
    }

    #[test]
    fn chart_has_a_polyline_per_series_and_escapes_names() {
        let s = line_chart(
            "t",
            "x",
            "y",
            &[
                Series {
                    name: "a<b".into(),
                    color: PALETTE[0],
                    dashed: false,
                    points: vec![(0.0, 1.0), (1.0, 2.0)],
                },
                Series {
                    name: "c".into(),
                    color: PALETTE[1],
                    dashed: true,
                    points: vec![(0.5, 0.5)],
                },
            ],
        );
        assert_eq!(s.matches("<polyline").count(), 2);
        assert!(s.contains("a&lt;b"));
        assert!(s.ends_with("</svg>\n"));
        // Empty input still renders a valid chart.
        assert!(line_chart("e", "x", "y", &[]).contains("</svg>"));
    }

    #[test]
    fn cdf_ends_at_one_and_is_sorted() {
        let c = cdf(&[3.0, 1.0, 2.0]);
        assert_eq!(c, vec![(1.0, 1.0 / 3.0), (2.0, 2.0 / 3.0), (3.0, 1.0)]);
        assert!(cdf(&[]).is_empty());
    }
}
