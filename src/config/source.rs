//! Where things are in a TOML text: an index from dotted field paths
//! (`link.left_to_right.rate`, `link.tc[2]`) to byte spans, built once per
//! parse with `toml::Spanned`, and the conversion of a byte offset into a
//! 1-based line and column. Errors use it to point at the offending value.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::ops::Range;
use toml::Spanned;

/// A 1-based line and column in a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
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
    entries: Vec<(String, Range<usize>)>,
}

impl SpanIndex {
    /// Indexes `text`; a text that does not parse gives an empty index (the
    /// parse error itself is reported by the typed pass).
    pub fn build(text: &str) -> SpanIndex {
        let mut index = SpanIndex::default();
        if let Ok(root) = toml::from_str::<Node>(text) {
            index.walk("", &root);
        }
        index
    }

    fn walk(&mut self, prefix: &str, node: &Node) {
        match node {
            Node::Table(items) => {
                for (key, value) in items {
                    let path = if prefix.is_empty() {
                        key.clone()
                    } else {
                        format!("{prefix}.{key}")
                    };
                    self.entries.push((path.clone(), value.span()));
                    self.walk(&path, value.get_ref());
                }
            }
            Node::Array(items) => {
                for (i, value) in items.iter().enumerate() {
                    let path = format!("{prefix}[{i}]");
                    self.entries.push((path.clone(), value.span()));
                    self.walk(&path, value.get_ref());
                }
            }
            Node::Leaf => {}
        }
    }

    /// The span of the value at `path`, if the text has it.
    pub fn span_of(&self, path: &str) -> Option<Range<usize>> {
        self.entries
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, s)| s.clone())
    }

    /// The innermost path whose value contains byte `offset`.
    pub fn path_at(&self, offset: usize) -> Option<&str> {
        self.entries
            .iter()
            .filter(|(_, s)| s.start <= offset && offset < s.end.max(s.start + 1))
            .min_by_key(|(_, s)| s.end - s.start)
            .map(|(p, _)| p.as_str())
    }
}

/// A TOML value reduced to its shape, with spans on every child.
enum Node {
    Table(Vec<(String, Spanned<Node>)>),
    Array(Vec<Spanned<Node>>),
    Leaf,
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any TOML value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_str<E>(self, _: &str) -> Result<Node, E> {
        Ok(Node::Leaf)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Node>>()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value::<Spanned<Node>>()?;
            items.push((key, value));
        }
        Ok(Node::Table(items))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "top = 1\n[link]\nrate = \"100mbit\"\ntc = [\"a\", \"tc b\"]\n[link.left_to_right]\ndelay = \"5ms\"\n";

    #[test]
    fn paths_map_to_value_spans() {
        let index = SpanIndex::build(TEXT);
        let span = index.span_of("link.rate").unwrap();
        assert_eq!(&TEXT[span.clone()], "\"100mbit\"");
        assert_eq!(
            Position::of_offset(TEXT, span.start),
            Position { line: 3, column: 8 }
        );
        let tc1 = index.span_of("link.tc[1]").unwrap();
        assert_eq!(&TEXT[tc1.clone()], "\"tc b\"");
        assert_eq!(index.path_at(tc1.start + 2), Some("link.tc[1]"));
        let delay = index.span_of("link.left_to_right.delay").unwrap();
        assert_eq!(&TEXT[delay], "\"5ms\"");
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
