//! `ConfigError`: one precise configuration problem — where (origin, line,
//! column), which field (dotted path), the value as written, what is allowed
//! and how to fix it — and its construction from toml's own errors.

use super::source::{Position, SpanIndex};
use std::fmt;

/// A configuration error. Rendered as
/// `ORIGIN:LINE:COL: PATH = VALUE: PROBLEM; expected ...; fix: ...`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// The file name, `--set`, `ethtool` or `<embedded default>`.
    pub origin: String,
    /// Where in the file, when the value came from a file.
    pub position: Option<Position>,
    /// Dotted field path (`link.left_to_right.rate`, `link.tc[2]`); may be empty.
    pub path: String,
    /// The offending value as written, when there is one.
    pub value: Option<String>,
    /// The problem, what is allowed and the fix.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.origin)?;
        if let Some(p) = self.position {
            write!(f, ":{}:{}", p.line, p.column)?;
        }
        f.write_str(": ")?;
        if !self.path.is_empty() {
            f.write_str(&self.path)?;
            if let Some(v) = &self.value {
                write!(f, " = {v}")?;
            }
            f.write_str(": ")?;
        } else if let Some(v) = &self.value {
            write!(f, "{v}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// A value rendered as it would be written in TOML, for error messages.
pub fn toml_text(value: impl Into<toml::Value>) -> String {
    let value: toml::Value = value.into();
    value.to_string()
}

impl ConfigError {
    /// An error about the field at `path` with the value `value` (TOML text).
    pub fn field(
        path: impl Into<String>,
        value: Option<String>,
        message: impl Into<String>,
    ) -> Self {
        ConfigError {
            origin: String::new(),
            position: None,
            path: path.into(),
            value,
            message: message.into(),
        }
    }

    /// The file could not be read.
    pub fn io(origin: &str, err: &std::io::Error) -> Self {
        ConfigError {
            origin: origin.to_string(),
            position: None,
            path: String::new(),
            value: None,
            message: format!("cannot read the configuration: {err}; fix: check the file name and its permissions"),
        }
    }

    /// Sets the origin (keeps one already set, e.g. by a nested ethtool line).
    pub fn with_origin(mut self, origin: &str) -> Self {
        if self.origin.is_empty() {
            self.origin = origin.to_string();
        }
        self
    }

    /// Fills in origin, line and column (and the value as written, if
    /// missing) from the source text the path points into.
    pub fn locate(mut self, origin: &str, text: &str, index: &SpanIndex) -> Self {
        self.origin = origin.to_string();
        if let Some((span, is_value)) = index.span_of(&self.path) {
            self.position = Some(Position::of_offset(text, span.start));
            if self.value.is_none() && is_value {
                self.value = text.get(span).map(excerpt);
            }
        }
        self
    }

    /// `locate` in a text that is not a whole configuration file (the
    /// `[link]` and `[tap]` tables of a simulator scenario), named by line
    /// and column only.
    pub fn locate_in(self, text: &str) -> Self {
        self.locate("", text, &SpanIndex::build(text))
    }

    /// Converts a toml parse or type error into a located `ConfigError`.
    pub fn from_toml(err: &toml::de::Error, origin: &str, text: &str, index: &SpanIndex) -> Self {
        let raw = err.message().trim();
        let mut path = String::new();
        let mut position = None;
        let mut value = None;
        if let Some(span) = err.span() {
            position = Some(Position::of_offset(text, span.start));
            if let Some(field) = backticked_after(raw, "unknown field ") {
                let found = index.key_path_at(field, span.start);
                path = found.map_or_else(|| field.to_string(), str::to_string);
                // Inside a buffered table (qdisc) toml points at the whole
                // table; the key's own line is more precise.
                let whole_table = text.get(span.clone()).is_some_and(|t| t.contains('\n'));
                if let (true, Some((key_span, _))) =
                    (whole_table, found.and_then(|p| index.span_of(p)))
                {
                    position = Some(Position::of_offset(text, key_span.start));
                }
            } else if let Some(found) = index.path_at(span.start) {
                path = found.to_string();
                value = text.get(span).map(excerpt).filter(|v| !v.is_empty());
            }
        }
        let message = explain_toml_message(raw);
        ConfigError {
            origin: origin.to_string(),
            position,
            path,
            value,
            message,
        }
    }
}

/// The text between backticks right after `prefix` in `msg`.
fn backticked_after<'a>(msg: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = msg.split(prefix).nth(1)?.strip_prefix('`')?;
    rest.split('`').next()
}

/// One line, at most 60 characters, of a value as written.
fn excerpt(s: &str) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    if line.chars().count() > 60 {
        let cut: String = line.chars().take(57).collect();
        format!("{cut}...")
    } else {
        line.to_string()
    }
}

/// toml's message on one line, with a fix for the common kinds.
fn explain_toml_message(raw: &str) -> String {
    let one_line = raw
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    if one_line.contains("fix:") {
        one_line
    } else if one_line.starts_with("unknown field") {
        format!("{one_line}; fix: remove the key or correct its spelling")
    } else if one_line.starts_with("unknown variant") {
        format!("{one_line}; fix: use one of the listed names")
    } else if one_line.starts_with("invalid value") {
        format!("{one_line}; fix: write a value of the expected type and range")
    } else if one_line.starts_with("invalid type") {
        format!("{one_line}; fix: write a value of the expected type")
    } else if one_line.starts_with("missing field") {
        format!("{one_line}; fix: add the key")
    } else if one_line.starts_with("duplicate key") {
        format!("{one_line}; fix: keep one definition of the key")
    } else {
        format!("{one_line}; fix: correct the TOML syntax")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_all_parts() {
        let e = ConfigError {
            origin: "configs/x.toml".into(),
            position: Some(Position {
                line: 12,
                column: 8,
            }),
            path: "link.left_to_right.rate".into(),
            value: Some("\"100mbps/s\"".into()),
            message: "invalid rate".into(),
        };
        assert_eq!(
            e.to_string(),
            "configs/x.toml:12:8: link.left_to_right.rate = \"100mbps/s\": invalid rate"
        );
        let bare = ConfigError::field("", None, "oops").with_origin("--set");
        assert_eq!(bare.to_string(), "--set: oops");
    }

    #[test]
    fn excerpts_are_short() {
        assert_eq!(excerpt("a\nb"), "a");
        assert_eq!(excerpt(&"x".repeat(100)).chars().count(), 60);
    }

    #[test]
    fn toml_values_render_as_toml() {
        assert_eq!(toml_text("5ms"), "\"5ms\"");
        assert_eq!(toml_text(7i64), "7");
        assert_eq!(toml_text(true), "true");
    }
}
