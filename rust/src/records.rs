//! The text of one record of a job's input file (a JSONL line's field, a text line), read
//! straight from the file's bytes so that the tokenize job never builds a Python str per
//! document (`json.loads` and the str it makes cost as much CPU as a third of the tokenizing).
//!
//! This is a fast path, not a second JSON parser to keep in step with Python's: it accepts only
//! lines whose text is certain to be what `json.loads(line)[field]` gives, and answers `None` for
//! everything else (bad JSON, invalid UTF-8, a missing or non-string field, lone surrogates,
//! NaN, a byte-order mark), which the caller hands to Python's own parser for the text or the
//! reason. So the job's output and errors stay exactly Python's.
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// How a file's lines hold their text.
#[derive(Clone, Debug)]
pub enum LineFormat {
    /// The whole line, without its line break (`raw.rstrip(b"\r\n")`), as UTF-8.
    Text,
    /// One JSON object per line; the text is this string field.
    Json { field: String },
}

/// The text of `line` (a file's line, its line break included), or `None` when Python must
/// read it (see the module's note).
#[must_use]
pub fn line_text<'a>(line: &'a [u8], format: &LineFormat) -> Option<Cow<'a, str>> {
    match format {
        LineFormat::Text => {
            let end = line
                .iter()
                .rposition(|&b| b != b'\n' && b != b'\r')
                .map_or(0, |i| i + 1);
            simdutf8::basic::from_utf8(&line[..end])
                .ok()
                .map(Cow::Borrowed)
        }
        LineFormat::Json { field } => json_field(simdutf8::basic::from_utf8(line).ok()?, field),
    }
}

/// The records of a block of whole lines of an input file, found as the job's Python line loop
/// found them: a line ends after its b'\n' (or at the block's end), and a blank line is no record
/// (JSONL: a line of ASCII white space only, as `bytes.isspace()` counts it; text: a line of line
/// breaks only). Python cuts the file into blocks and shards with these, with no object per line.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Spans {
    /// Each record's first byte in the block.
    pub starts: Vec<u64>,
    /// Each record's end (its line break included).
    pub ends: Vec<u64>,
    /// Each record's line, 0-based, counting blank lines.
    pub lines: Vec<u64>,
    /// The block's lines, blank ones included.
    pub line_count: u64,
}

#[must_use]
pub fn record_spans(block: &[u8], format: &LineFormat) -> Spans {
    let mut spans = Spans::default();
    let mut start = 0;
    while start < block.len() {
        let end = memchr::memchr(b'\n', &block[start..]).map_or(block.len(), |i| start + i + 1);
        let line = &block[start..end];
        let blank = match format {
            LineFormat::Json { .. } => line
                .iter()
                .all(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)),
            LineFormat::Text => line.iter().all(|&b| b == b'\n' || b == b'\r'),
        };
        if !blank {
            spans.starts.push(start as u64);
            spans.ends.push(end as u64);
            spans.lines.push(spans.line_count);
        }
        spans.line_count += 1;
        start = end;
    }
    spans
}

fn json_field<'a>(line: &'a str, field: &str) -> Option<Cow<'a, str>> {
    let mut de = serde_json::Deserializer::from_str(line);
    let found = de::Deserializer::deserialize_map(&mut de, FieldOf(field)).ok()?;
    de.end().ok()?;
    found
}

/// Visits an object for the last value of one key (Python's dict keeps the last of duplicates).
struct FieldOf<'f>(&'f str);

impl<'de> Visitor<'de> for FieldOf<'_> {
    type Value = Option<Cow<'de, str>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(is_field) = map.next_key_seed(KeyIs(self.0))? {
            if is_field {
                found = Some(map.next_value_seed(Text)?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// Whether a key (escapes decoded) is the field's name, without allocating it.
struct KeyIs<'f>(&'f str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<bool, E> {
        Ok(key == self.0)
    }
}

/// A string value, borrowed from the line where it has no escapes; any other type is an error
/// (Python then names the type in its reason).
struct Text;

impl<'de> DeserializeSeed<'de> for Text {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Text {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(line: &str) -> Option<String> {
        line_text(
            line.as_bytes(),
            &LineFormat::Json {
                field: "text".into(),
            },
        )
        .map(Cow::into_owned)
    }

    #[test]
    fn takes_the_field_borrowed_or_unescaped() {
        assert_eq!(
            json("{\"id\": 1, \"text\": \"héllo\"}\n").as_deref(),
            Some("héllo")
        );
        assert_eq!(
            json(r#"{"text": "a\nb\u00e9\"", "x": [1, {"y": null}]}"#).as_deref(),
            Some("a\nb\u{e9}\"")
        );
        // A key written with escapes is the same key; the last of duplicates wins, as in Python.
        assert_eq!(
            json(r#"{"te\u0078t": "a", "text": "b"}"#).as_deref(),
            Some("b")
        );
        assert!(matches!(
            line_text(
                b"{\"text\": \"plain\"}",
                &LineFormat::Json {
                    field: "text".into()
                }
            ),
            Some(Cow::Borrowed("plain"))
        ));
    }

    #[test]
    fn leaves_to_python_what_it_does_not_certainly_read_alike() {
        for line in [
            "",
            "[1]",
            "\"text\"",
            "{\"text\": 3}",
            "{\"other\": \"x\"}",
            "{\"text\": \"x\"} trailing",
            "{\"text\": \"\\ud800\"}",
            "{\"text\": \"x\", \"n\": NaN}",
            "\u{feff}{\"text\": \"x\"}",
            "{\"text\": \"x\",}",
            "{\"text\": \"tab\there\"}",
        ] {
            assert_eq!(json(line), None, "{line:?}");
        }
        let bad_utf8 = b"{\"text\": \"\xff\"}";
        assert!(line_text(
            bad_utf8,
            &LineFormat::Json {
                field: "text".into()
            }
        )
        .is_none());
    }

    #[test]
    fn blank_lines_are_no_records() {
        let json = LineFormat::Json { field: "t".into() };
        let block = b"{}\n \t\x0b\x0c\r\n\n{}\r\n\r\n{}";
        let s = record_spans(block, &json);
        assert_eq!(s.starts, [0, 10, 16]);
        assert_eq!(s.ends, [3, 14, 18]);
        assert_eq!(s.lines, [0, 3, 5]);
        assert_eq!(s.line_count, 6);
        // In a text file a line of spaces is a document; only line breaks make a blank line.
        let s = record_spans(b" \n\r\n\nx", &LineFormat::Text);
        assert_eq!(
            (s.starts, s.ends, s.lines, s.line_count),
            (vec![0, 5], vec![2, 6], vec![0, 3], 4)
        );
        assert_eq!(record_spans(b"", &LineFormat::Text), Spans::default());
    }

    #[test]
    fn text_lines_lose_their_line_break_only() {
        let t = |b: &[u8]| line_text(b, &LineFormat::Text).map(Cow::into_owned);
        assert_eq!(t(b"  one two \r\n").as_deref(), Some("  one two "));
        assert_eq!(t(b"x\n\r\n").as_deref(), Some("x"));
        assert_eq!(t(b"last").as_deref(), Some("last"));
        assert_eq!(t(b"\xe9t\xe9\n"), None);
    }
}
