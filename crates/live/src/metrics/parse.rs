//! A strict OpenMetrics text checker (`parse_samples`), for the tests and
//! for anyone checking what a scrape returned: every line must be a
//! comment the format defines or a sample of a declared family, and the
//! text must end with `# EOF`.

/// Parses OpenMetrics text strictly: every line is `# HELP`, `# TYPE`,
/// `# UNIT`, the final `# EOF`, or `NAME{LABELS} VALUE` with a name declared
/// by a `# TYPE` line before it. Returns each sample (`NAME{LABELS}` as
/// written) with its value; the error names the line.
pub fn parse_samples(text: &str) -> Result<Vec<(String, f64)>, String> {
    let mut declared: Vec<String> = Vec::new();
    let mut samples = Vec::new();
    let mut eof = false;
    for (n, line) in text.lines().enumerate() {
        let bad = |why: &str| format!("line {}: {why}: {line:?}", n + 1);
        if eof {
            return Err(bad("text after # EOF"));
        }
        if line == "# EOF" {
            eof = true;
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split(' ');
            let (Some(name), Some(kind), None) = (it.next(), it.next(), it.next()) else {
                return Err(bad("expected # TYPE NAME KIND"));
            };
            if ![
                "counter",
                "gauge",
                "info",
                "histogram",
                "summary",
                "unknown",
            ]
            .contains(&kind)
            {
                return Err(bad("unknown metric type"));
            }
            declared.push(name.to_string());
            continue;
        }
        if line.starts_with("# HELP ") || line.starts_with("# UNIT ") {
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .ok_or_else(|| bad("expected NAME VALUE"))?;
        let name = series.split('{').next().unwrap_or("");
        let valid_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
        if !valid_name {
            return Err(bad("invalid metric name"));
        }
        if series.contains('{') && !series.ends_with('}') {
            return Err(bad("unterminated label set"));
        }
        let family_declared = declared.iter().any(|d| {
            name == d
                || ["_total", "_created", "_info"]
                    .iter()
                    .any(|s| name == format!("{d}{s}"))
        });
        if !family_declared {
            return Err(bad("sample of an undeclared metric"));
        }
        let v: f64 = value.parse().map_err(|_| bad("value is not a number"))?;
        samples.push((series.to_string(), v));
    }
    if !eof {
        return Err("no # EOF at the end".into());
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strict_check_refuses_broken_text() {
        let good = "# TYPE a counter\na_total 1\n# EOF\n";
        assert!(parse_samples(good).is_ok());
        for bad in [
            "# TYPE a counter\na_total 1\n",
            "a_total 1\n# EOF\n",
            "# TYPE a counter\na_total one\n# EOF\n",
            "# TYPE a counter\na_total{x=\"1\" 1\n# EOF\n",
            "# TYPE a counter\n# EOF\na_total 1\n",
            "# TYPE a bogus\n# EOF\n",
        ] {
            assert!(parse_samples(bad).is_err(), "{bad:?}");
        }
    }
}
