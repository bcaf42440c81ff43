//! A tokenizer.json read section by section, its model's vocabulary and merges straight into
//! the tables the model is built from. Parsed into one `serde_json::Value` tree, cl100k's file
//! (100k vocabulary entries, 100k merges) took ~64 MB of short-lived allocations that the
//! allocator kept as the process's own afterwards (the load grew RSS by 95 MB against 30 for
//! the tokenizer itself), and a third of the load's time. Every other section, and any
//! vocabulary or merges of a shape these readers do not take, still go through a `Value`, so
//! what is accepted and the errors for what is not stay `config`'s.
use super::load_thread::side_by_side;
use crate::error::TokenizeError;
use rustc_hash::FxHashMap;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::fmt;

/// The sections of a JSON object, in order, each left as its raw text.
pub(super) fn sections(text: &str) -> Result<Vec<(String, &RawValue)>, serde_json::Error> {
    struct Sections;
    impl<'de> Visitor<'de> for Sections {
        type Value = Vec<(String, &'de RawValue)>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                out.push(entry);
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let out = (&mut de).deserialize_map(Sections)?;
    de.end()?;
    Ok(out)
}

/// A model section: its vocabulary (an object of ids) and merges read into tables where they
/// have the usual shapes, every other field (and those two otherwise) as a `Value`.
pub(super) struct ModelSection {
    pub fields: Map<String, Value>,
    pub vocab: Option<FxHashMap<String, u32>>,
    pub merges: Option<Vec<(String, String)>>,
}

/// Vocabulary and merges sections from this many bytes of JSON on are read on two threads.
const PARALLEL_READ_MIN: usize = 1 << 20;

impl ModelSection {
    pub(super) fn read(raw: &RawValue) -> Result<Self, serde_json::Error> {
        let mut out = Self {
            fields: Map::new(),
            vocab: None,
            merges: None,
        };
        let (mut vocab, mut merges) = (None, None);
        for (key, raw) in sections(raw.get())? {
            // A repeated key: the last one holds, as in a `Value` object.
            out.fields.remove(&key);
            match key.as_str() {
                "vocab" => vocab = Some(raw),
                "merges" => merges = Some(raw),
                _ => {
                    out.fields.insert(key, serde_json::from_str(raw.get())?);
                }
            }
        }
        let read_vocab = || vocab.and_then(|raw| read_with(raw, VocabIds));
        let read_merges = || merges.and_then(|raw| read_with(raw, MergePairs));
        // The two each took ~13% of a large vocabulary's load.
        let large =
            |raw: Option<&RawValue>| raw.is_some_and(|r| r.get().len() >= PARALLEL_READ_MIN);
        // The vocabulary on the other thread: it is kept, while the merges' strings are freed
        // after the build, and freed into this thread's heap they go back to the system (the
        // other way round the load's RSS was +5 MB).
        (out.vocab, out.merges) =
            side_by_side(large(vocab) && large(merges), read_vocab, read_merges);
        // Shapes the readers do not take go to `config` as values, which explains them.
        if let (Some(raw), None) = (vocab, &out.vocab) {
            out.fields
                .insert("vocab".into(), serde_json::from_str(raw.get())?);
        }
        if let (Some(raw), None) = (merges, &out.merges) {
            out.fields
                .insert("merges".into(), serde_json::from_str(raw.get())?);
        }
        Ok(out)
    }
}

/// `raw` read by `visitor`, or `None` where it has another shape.
fn read_with<'de, V: Visitor<'de>>(raw: &'de RawValue, visitor: V) -> Option<V::Value> {
    let mut de = serde_json::Deserializer::from_str(raw.get());
    let value = de.deserialize_any(visitor).ok()?;
    de.end().ok().map(|()| value)
}

/// An object of token -> id (each id a u32).
struct VocabIds;

impl<'de> Visitor<'de> for VocabIds {
    type Value = FxHashMap<String, u32>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of token ids")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut vocab =
            FxHashMap::with_capacity_and_hasher(map.size_hint().unwrap_or(0), Default::default());
        while let Some((token, id)) = map.next_entry::<String, u32>()? {
            vocab.insert(token, id);
        }
        Ok(vocab)
    }
}

/// A list of merges, each `"a b"` or `["a", "b"]`.
struct MergePairs;

impl<'de> Visitor<'de> for MergePairs {
    type Value = Vec<(String, String)>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of merges")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut merges = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(pair) = seq.next_element::<Merge>()? {
            merges.push(pair.0);
        }
        Ok(merges)
    }
}

/// One merge: `"a b"` (split at its first space) or `["a", "b"]`.
struct Merge((String, String));

impl<'de> serde::Deserialize<'de> for Merge {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct One;
        impl<'de> Visitor<'de> for One {
            type Value = Merge;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"a b\" or [a, b]")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Merge, E> {
                let (a, b) = s
                    .split_once(' ')
                    .ok_or_else(|| E::custom("a merge without a space"))?;
                Ok(Merge((a.to_owned(), b.to_owned())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Merge, A::Error> {
                use serde::de::Error;
                let a: String = seq
                    .next_element()?
                    .ok_or_else(|| A::Error::custom("[a, b]"))?;
                let b: String = seq
                    .next_element()?
                    .ok_or_else(|| A::Error::custom("[a, b]"))?;
                if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(A::Error::custom("[a, b]"));
                }
                Ok(Merge((a, b)))
            }
        }
        d.deserialize_any(One)
    }
}

/// The error of a tokenizer.json that is not JSON (or not an object).
pub(super) fn invalid(e: &serde_json::Error) -> TokenizeError {
    TokenizeError::invalid("(file)", e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usual_shapes_are_read_into_tables_and_others_left_as_values() {
        let text = r#"{"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "a": 3},
            "merges": ["a b", ["b", "a"]], "dropout": null}"#;
        let raw: &RawValue = serde_json::from_str(text).unwrap();
        let m = ModelSection::read(raw).unwrap();
        let vocab = m.vocab.unwrap();
        assert_eq!((vocab.len(), vocab["a"], vocab["ab"]), (3, 3, 2));
        let want = [("a", "b"), ("b", "a")].map(|(a, b)| (a.to_owned(), b.to_owned()));
        assert_eq!(m.merges.unwrap(), want);
        assert_eq!(
            m.fields.keys().collect::<Vec<_>>(),
            ["type", "dropout"],
            "vocab and merges taken out"
        );
        // Unigram's vocabulary (a list), an id past u32, a merge without a space or of three:
        // left to `config`, as values.
        for text in [
            r#"{"vocab": [["a", -1.0]], "merges": ["a b"]}"#,
            r#"{"vocab": {"a": 4294967296}, "merges": ["ab"]}"#,
            r#"{"vocab": {"a": -1}, "merges": [["a", "b", "c"]]}"#,
        ] {
            let raw: &RawValue = serde_json::from_str(text).unwrap();
            let m = ModelSection::read(raw).unwrap();
            assert!(
                m.vocab.is_none() && m.fields.contains_key("vocab"),
                "{text}"
            );
            if text.contains("[\"a b\"]") {
                assert!(m.merges.is_some());
            } else {
                assert!(
                    m.merges.is_none() && m.fields.contains_key("merges"),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn sections_keep_their_order_and_reject_what_is_not_an_object() {
        let s = sections(r#"{"b": 1, "a": {"x": [1, 2]}, "c": "z"}"#).unwrap();
        let keys: Vec<&str> = s.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a", "c"]);
        assert_eq!(s[1].1.get(), r#"{"x": [1, 2]}"#);
        for bad in ["[1]", "{", r#"{"a": 1} x"#, ""] {
            assert!(sections(bad).is_err(), "{bad}");
        }
    }
}

#[cfg(test)]
mod loading {
    use crate::tokenize::Tokenizer;

    /// What is wrong with a model section is reported at its place, as when the whole file
    /// went through a `Value`: the readers here only take the usual shapes faster.
    #[test]
    fn a_bad_model_section_is_reported_where_it_is() {
        let file = |model: &str| format!(r#"{{"version": "1.0", "model": {model}}}"#);
        let err = |model: &str| {
            Tokenizer::from_json_str(&file(model))
                .unwrap_err()
                .to_string()
        };
        assert!(err("5").contains("model"), "{}", err("5"));
        assert!(err("5").contains("expected an object"), "{}", err("5"));
        let bad_id = r#"{"type": "BPE", "vocab": {"a": -1}, "merges": []}"#;
        assert!(err(bad_id).contains("model.vocab.a"), "{}", err(bad_id));
        let bad_merge = r#"{"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]}"#;
        assert!(
            err(bad_merge).contains("model.merges[0]"),
            "{}",
            err(bad_merge)
        );
        assert!(Tokenizer::from_json_str("{").is_err());
        // A usual one loads, and `to_json` gives its own text back as JSON.
        let ok = r#"{"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}"#;
        let tok = Tokenizer::from_json_str(&file(ok)).unwrap();
        let back: serde_json::Value =
            serde_json::from_str(&tok.to_json(false, None, None)).unwrap();
        assert_eq!(back["model"]["vocab"]["ab"], 2);
        assert_eq!(back["model"]["merges"][0], "a b");
    }
}
