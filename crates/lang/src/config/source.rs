//! Where things are in a TOML text: an index from dotted field paths
//! (`link.left_to_right.rate`, `link.tc[2]`) to byte spans, built once per
//! parse with `toml::Spanned`, and the conversion of a byte offset into a
//! 1-based line and column. Errors use it to point at the offending value.

use std::ops::Range;
use toml_edit::{ImDocument, Item, TableLike, Value};

/// A 1-based line and column in a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    /// Line number, from 1.
    pub line: usize,
    /// Column, from 1 (characters).
    pub column: usize,
}

impl Position {
    /// The position of byte `offset` in `text` (columns count characters).
    pub fn of_offset(text: &str, offset: usize) -> Position {
        let offset = offset.min(text.len());
        let before = text.get(..offset).unwrap_or(text);
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        let column = before[line_start..].chars().count() + 1;
        Position { line, column }
    }
}

/// Spans of every key's value in a TOML document, by dotted path.
#[derive(Debug, Default)]
pub struct SpanIndex {
    entries: Vec<Entry>,
}

#[derive(Debug)]
struct Entry {
    path: String,
    span: Range<usize>,
    /// False for `[table]` headers and implicit tables: their text is no value.
    is_value: bool,
}

impl SpanIndex {
    /// Indexes `text`; a text that does not parse gives an empty index (the
    /// parse error itself is reported by the typed pass).
    pub fn build(text: &str) -> SpanIndex {
        let mut index = SpanIndex::default();
        if let Ok(doc) = ImDocument::parse(text) {
            index.table("", doc.as_table());
        }
        index
    }

    fn push(&mut self, path: &str, span: Range<usize>, is_value: bool) {
        self.entries.push(Entry {
            path: path.to_string(),
            span,
            is_value,
        });
    }

    fn table(&mut self, prefix: &str, table: &dyn TableLike) {
        for (key, item) in table.iter() {
            let path = if prefix.is_empty() {
                key.to_string()
            } else {
                format!("{prefix}.{key}")
            };
            // Implicit tables (`[a.b]` without `[a]`) have no span of their own.
            let is_value = item.is_value();
            let span = item
                .span()
                .or_else(|| table.key(key).and_then(|k| k.span()));
            if let Some(span) = span {
                self.push(&path, span, is_value);
            }
            self.item(&path, item);
        }
    }

    fn item(&mut self, path: &str, item: &Item) {
        match item {
            Item::Table(t) => self.table(path, t),
            Item::ArrayOfTables(tables) => {
                for (i, t) in tables.iter().enumerate() {
                    let element = format!("{path}[{i}]");
                    if let Some(span) = t.span() {
                        self.push(&element, span, false);
                    }
                    self.table(&element, t);
                }
            }
            Item::Value(v) => self.value(path, v),
            Item::None => {}
        }
    }

    fn value(&mut self, path: &str, value: &Value) {
        match value {
            Value::InlineTable(t) => self.table(path, t),
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    let element = format!("{path}[{i}]");
                    if let Some(span) = v.span() {
                        self.push(&element, span, true);
                    }
                    self.value(&element, v);
                }
            }
            _ => {}
        }
    }

    /// The span of the value at `path` (of the header for a `[table]`),
    /// and whether that text is a value.
    pub fn span_of(&self, path: &str) -> Option<(Range<usize>, bool)> {
        self.entries
            .iter()
            .find(|e| e.path == path)
            .map(|e| (e.span.clone(), e.is_value))
    }

    /// The path of key `key` written at byte `offset`: the first indexed
    /// entry with that last segment whose value starts at or after it.
    pub fn key_path_at(&self, key: &str, offset: usize) -> Option<&str> {
        let dotted = format!(".{key}");
        self.entries
            .iter()
            .filter(|e| e.span.start >= offset && (e.path == key || e.path.ends_with(&dotted)))
            .min_by_key(|e| e.span.start)
            .map(|e| e.path.as_str())
    }

    /// The innermost path whose value contains byte `offset`.
    pub fn path_at(&self, offset: usize) -> Option<&str> {
        self.entries
            .iter()
            .filter(|e| e.span.start <= offset && offset < e.span.end.max(e.span.start + 1))
            .min_by_key(|e| e.span.end - e.span.start)
            .map(|e| e.path.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "top = 1\n[link]\nrate = \"100mbit\"\ntc = [\"a\", \"tc b\"]\n[link.left_to_right]\ndelay = \"5ms\"\n";

    #[test]
    fn paths_map_to_value_spans() {
        let index = SpanIndex::build(TEXT);
        let (span, is_value) = index.span_of("link.rate").unwrap();
        assert!(is_value);
        assert_eq!(&TEXT[span.clone()], "\"100mbit\"");
        assert_eq!(
            Position::of_offset(TEXT, span.start),
            Position { line: 3, column: 8 }
        );
        let (tc1, _) = index.span_of("link.tc[1]").unwrap();
        assert_eq!(&TEXT[tc1.clone()], "\"tc b\"");
        assert_eq!(index.path_at(tc1.start + 2), Some("link.tc[1]"));
        let (delay, _) = index.span_of("link.left_to_right.delay").unwrap();
        assert!(!index.span_of("link.left_to_right").unwrap().1);
        assert_eq!(&TEXT[delay], "\"5ms\"");
        let implicit = SpanIndex::build("[a.b]\nc = [{ d = 1 }]\n[[e]]\nf = 2\n");
        assert_eq!(implicit.span_of("a.b.c[0].d"), Some((17..18, true)));
        assert_eq!(implicit.span_of("a"), Some((1..2, false)));
        assert!(implicit.span_of("e[0].f").is_some());
        let dotted = SpanIndex::build("x = 1\na.b.c = 2\n");
        assert_eq!(dotted.key_path_at("c", 10), Some("a.b.c"));
        assert_eq!(dotted.key_path_at("x", 0), Some("x"));
        assert!(index.span_of("link.nope").is_none());
    }

    #[test]
    fn unparsable_text_gives_empty_index() {
        let index = SpanIndex::build("[link\nrate=");
        assert!(index.path_at(0).is_none());
    }

    #[test]
    fn positions_count_lines_and_characters() {
        assert_eq!(
            Position::of_offset("ab\ncé=x", 6),
            Position { line: 2, column: 3 }
        );
        assert_eq!(Position::of_offset("", 10), Position { line: 1, column: 1 });
    }
}
