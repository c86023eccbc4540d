//! A strict OpenMetrics text checker (`parse_samples`), for the tests and
//! for anyone checking what a scrape returned: every line must be a
//! comment the format defines or a sample of a declared family, and the
//! text must end with `# EOF`.

/// Why OpenMetrics text was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MetricsTextError {
    /// A line that breaks the format: its number (from 1), what is wrong
    /// and the line itself.
    #[error("line {number}: {problem}: {line:?}")]
    Line {
        /// The line's number, from 1.
        number: usize,
        /// What is wrong with it.
        problem: LineProblem,
        /// The line as written.
        line: String,
    },
    /// The text does not end with `# EOF`.
    #[error("no # EOF at the end")]
    NoEof,
}

/// What is wrong with a line of OpenMetrics text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LineProblem {
    /// Anything after the final `# EOF`.
    #[error("text after # EOF")]
    AfterEof,
    /// A `# TYPE` line without exactly a name and a kind.
    #[error("expected # TYPE NAME KIND")]
    TypeLine,
    /// A `# TYPE` line of a kind the format does not have.
    #[error("unknown metric type")]
    UnknownType,
    /// A sample without a value.
    #[error("expected NAME VALUE")]
    NoValue,
    /// A metric name with characters the format does not allow.
    #[error("invalid metric name")]
    Name,
    /// A label set without its closing brace.
    #[error("unterminated label set")]
    Labels,
    /// A sample of no family a `# TYPE` line declared before it.
    #[error("sample of an undeclared metric")]
    Undeclared,
    /// A value that is not a number.
    #[error("value is not a number")]
    Value,
}

/// Parses OpenMetrics text strictly: every line is `# HELP`, `# TYPE`,
/// `# UNIT`, the final `# EOF`, or `NAME{LABELS} VALUE` with a name declared
/// by a `# TYPE` line before it. Returns each sample (`NAME{LABELS}` as
/// written) with its value; the error names the line.
pub fn parse_samples(text: &str) -> Result<Vec<(String, f64)>, MetricsTextError> {
    let mut declared: Vec<String> = Vec::new();
    let mut samples = Vec::new();
    let mut eof = false;
    for (n, line) in text.lines().enumerate() {
        let bad = |problem| MetricsTextError::Line {
            number: n + 1,
            problem,
            line: line.to_string(),
        };
        if eof {
            return Err(bad(LineProblem::AfterEof));
        }
        if line == "# EOF" {
            eof = true;
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split(' ');
            let (Some(name), Some(kind), None) = (it.next(), it.next(), it.next()) else {
                return Err(bad(LineProblem::TypeLine));
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
                return Err(bad(LineProblem::UnknownType));
            }
            declared.push(name.to_string());
            continue;
        }
        if line.starts_with("# HELP ") || line.starts_with("# UNIT ") {
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .ok_or_else(|| bad(LineProblem::NoValue))?;
        let name = series.split('{').next().unwrap_or("");
        let valid_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
        if !valid_name {
            return Err(bad(LineProblem::Name));
        }
        if series.contains('{') && !series.ends_with('}') {
            return Err(bad(LineProblem::Labels));
        }
        let family_declared = declared.iter().any(|d| {
            name == d
                || ["_total", "_created", "_info"]
                    .iter()
                    .any(|s| name == format!("{d}{s}"))
        });
        if !family_declared {
            return Err(bad(LineProblem::Undeclared));
        }
        let v: f64 = value.parse().map_err(|_| bad(LineProblem::Value))?;
        samples.push((series.to_string(), v));
    }
    if !eof {
        return Err(MetricsTextError::NoEof);
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
        assert_eq!(
            parse_samples("# TYPE a counter\na_total one\n# EOF\n")
                .unwrap_err()
                .to_string(),
            "line 2: value is not a number: \"a_total one\""
        );
    }
}
