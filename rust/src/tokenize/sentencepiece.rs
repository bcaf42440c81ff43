//! SentencePiece `.model` files loaded directly: the `ModelProto` protobuf is read here (a small
//! schema; a hand-written reader of the wire format avoids a protobuf code generator in the
//! build), and turned into the tokenizer.json that transformers'
//! `SpmConverter.build_tokenizer_from_spm_proto` builds from it, the converter that follows the
//! model's own normalizer spec so that ids equal `SentencePieceProcessor.encode`:
//!
//! - model: BPE (merges: every split of a normal piece into two normal pieces, ranked by the
//!   piece's score, highest first, then id, then the split's strings) or Unigram (pieces and
//!   scores, `unk_id`), with the trainer's byte fallback;
//! - normalizer: Precompiled (the charsmap), the extra-whitespace removal, spaces to `▁`, and the
//!   dummy prefix as a `\A▁ -> ▁▁` replace (Metaspace skips it when a text starts with `▁`,
//!   SentencePiece does not);
//! - pre-tokenizer: Metaspace (always, no split), user-defined pieces isolated by a Split;
//! - decoder: `▁` to space, byte fallback, fuse, strip the dummy prefix's space.
use crate::error::TokenizeError;
use serde_json::{json, Value};

type R<T> = Result<T, TokenizeError>;

fn bad(reason: impl Into<String>) -> TokenizeError {
    TokenizeError::invalid("(sentencepiece model)", reason)
}

/// Protobuf wire format: just what ModelProto needs.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

enum Field<'a> {
    Varint(u64),
    Fixed32(u32),
    Fixed64,
    Bytes(&'a [u8]),
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    fn varint(&mut self) -> R<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self
                .buf
                .get(self.pos)
                .ok_or_else(|| bad("truncated varint"))?;
            self.pos += 1;
            v |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(bad("varint longer than 10 bytes"))
    }

    fn take(&mut self, n: usize) -> R<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| bad("field runs past the end of the file"))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn next(&mut self) -> R<Option<(u64, Field<'a>)>> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let (num, wire) = (key >> 3, key & 7);
        let f = match wire {
            0 => Field::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Field::Fixed64
            }
            2 => {
                let n = self.varint()? as usize;
                Field::Bytes(self.take(n)?)
            }
            5 => {
                let b = self.take(4)?;
                Field::Fixed32(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            }
            w => return Err(bad(format!("unsupported protobuf wire type {w}"))),
        };
        Ok(Some((num, f)))
    }
}

fn utf8(b: &[u8], what: &str) -> R<String> {
    String::from_utf8(b.to_vec()).map_err(|_| bad(format!("{what} is not UTF-8")))
}

/// Piece types of sentencepiece_model.proto.
const NORMAL: u64 = 1;
const USER_DEFINED: u64 = 4;

struct Piece {
    text: String,
    score: f32,
    kind: u64,
}

/// The parts of a ModelProto the conversion reads, with the proto's defaults.
struct Proto {
    pieces: Vec<Piece>,
    kind: u64,
    byte_fallback: bool,
    unk_id: i64,
    unk_piece: String,
    treat_whitespace_as_suffix: bool,
    precompiled_charsmap: Vec<u8>,
    add_dummy_prefix: bool,
    remove_extra_whitespaces: bool,
    escape_whitespaces: bool,
}

fn parse(bytes: &[u8]) -> R<Proto> {
    let mut m = Proto {
        pieces: Vec::new(),
        kind: 1,
        byte_fallback: false,
        unk_id: 0,
        unk_piece: "<unk>".into(),
        treat_whitespace_as_suffix: false,
        precompiled_charsmap: Vec::new(),
        add_dummy_prefix: true,
        remove_extra_whitespaces: true,
        escape_whitespaces: true,
    };
    let mut top = Reader::new(bytes);
    while let Some((num, f)) = top.next()? {
        match (num, f) {
            (1, Field::Bytes(b)) => {
                let mut p = Piece {
                    text: String::new(),
                    score: 0.0,
                    kind: NORMAL,
                };
                let mut r = Reader::new(b);
                while let Some((n, f)) = r.next()? {
                    match (n, f) {
                        (1, Field::Bytes(s)) => p.text = utf8(s, "a piece")?,
                        (2, Field::Fixed32(x)) => p.score = f32::from_bits(x),
                        (3, Field::Varint(t)) => p.kind = t,
                        _ => {}
                    }
                }
                m.pieces.push(p);
            }
            (2, Field::Bytes(b)) => {
                let mut r = Reader::new(b);
                while let Some((n, f)) = r.next()? {
                    match (n, f) {
                        (3, Field::Varint(t)) => m.kind = t,
                        (24, Field::Varint(v)) => m.treat_whitespace_as_suffix = v != 0,
                        (35, Field::Varint(v)) => m.byte_fallback = v != 0,
                        // int32: negative values arrive as 64-bit two's complement.
                        (40, Field::Varint(v)) => m.unk_id = i64::from(v as i32),
                        (45, Field::Bytes(s)) => m.unk_piece = utf8(s, "unk_piece")?,
                        _ => {}
                    }
                }
            }
            (3, Field::Bytes(b)) => {
                let mut r = Reader::new(b);
                while let Some((n, f)) = r.next()? {
                    match (n, f) {
                        (2, Field::Bytes(s)) => m.precompiled_charsmap = s.to_vec(),
                        (3, Field::Varint(v)) => m.add_dummy_prefix = v != 0,
                        (4, Field::Varint(v)) => m.remove_extra_whitespaces = v != 0,
                        (5, Field::Varint(v)) => m.escape_whitespaces = v != 0,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    if m.pieces.is_empty() {
        return Err(bad("no pieces: not a SentencePiece model file"));
    }
    Ok(m)
}

fn unsupported(what: &str) -> TokenizeError {
    TokenizeError::unsupported(what, "(sentencepiece model)")
}

/// BPE merges as the converter derives them (see the module comment).
fn merges(m: &Proto) -> Vec<Value> {
    // piece -> (score, id) of normal pieces; a later duplicate wins, as in a Python dict.
    let mut normal: rustc_hash::FxHashMap<&str, (f64, usize)> = Default::default();
    let mut order: Vec<&str> = Vec::new();
    for (i, p) in m.pieces.iter().enumerate() {
        if p.kind == NORMAL && normal.insert(&p.text, (f64::from(p.score), i)).is_none() {
            order.push(&p.text);
        }
    }
    let mut ranked: Vec<(f64, usize, &str, &str)> = Vec::new();
    for token in order {
        let (score, id) = normal[token];
        for (at, _) in token.char_indices().skip(1) {
            let (l, r) = token.split_at(at);
            if normal.contains_key(l) && normal.contains_key(r) {
                ranked.push((-score, id, l, r));
            }
        }
    }
    ranked.sort_by(|a, b| {
        a.0.total_cmp(&b.0)
            .then(a.1.cmp(&b.1))
            .then(a.2.cmp(b.2))
            .then(a.3.cmp(b.3))
    });
    ranked
        .into_iter()
        .map(|(_, _, l, r)| json!([l, r]))
        .collect()
}

/// Python's `re.escape`, enough for Oniguruma: ASCII punctuation and whitespace backslashed.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if c.is_ascii() && !c.is_ascii_alphanumeric() && c != '_' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Ids of the pieces SentencePiece never matches in text: control, unknown, unused and byte
/// pieces (types 3, 2, 5 and 6).
pub fn invisible_ids(bytes: &[u8]) -> R<Vec<u32>> {
    Ok(parse(bytes)?
        .pieces
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.kind, 2 | 3 | 5 | 6))
        .map(|(i, _)| i as u32)
        .collect())
}

/// The ids of a Unigram model's user-defined pieces with the score SentencePiece's Viterbi gives
/// them so that it always takes them, in one lattice over the whole text: 0.2.3's
/// `GetUserDefinedScore`, `0.1 * (length - 1)` in double rounded to float (length in bytes, as
/// its optimized encoder counts), which prefers the longest match and is above every normal
/// piece's log probability. (0.2.1 gave `length * max_score - 0.1`; the float sums of the best
/// paths then differ, and so do ties between normal pieces later in the text.)
pub fn user_defined_scores(bytes: &[u8]) -> R<Vec<(u32, f64)>> {
    let m = parse(bytes)?;
    Ok(m.pieces
        .iter()
        .enumerate()
        .filter(|(_, p)| p.kind == USER_DEFINED)
        .map(|(i, p)| {
            (
                i as u32,
                f64::from((0.1 * (p.text.len() as f64 - 1.0)) as f32),
            )
        })
        .collect())
}

/// SentencePiece's own normalizer for the model (its `converter` left empty).
pub fn normalizer(bytes: &[u8]) -> R<super::spm_normalize::SentencePieceNormalizer> {
    let m = parse(bytes)?;
    let charsmap = if m.precompiled_charsmap.is_empty() {
        None
    } else {
        Some(std::sync::Arc::new(
            super::precompiled::Precompiled::from_bytes(&m.precompiled_charsmap)
                .map_err(|e| bad(format!("precompiled_charsmap: {e}")))?,
        ))
    };
    Ok(super::spm_normalize::SentencePieceNormalizer {
        converter: None,
        charsmap,
        remove_extra_whitespaces: m.remove_extra_whitespaces,
        add_dummy_prefix: m.add_dummy_prefix,
        escape_whitespaces: m.escape_whitespaces,
    })
}

/// The tokenizer.json of a SentencePiece model file's bytes.
pub fn tokenizer_json(bytes: &[u8]) -> R<Value> {
    use base64::Engine as _;
    let m = parse(bytes)?;
    if m.treat_whitespace_as_suffix {
        return Err(unsupported("treat_whitespace_as_suffix"));
    }
    let model = match m.kind {
        1 => {
            let unk_id =
                usize::try_from(m.unk_id).map_err(|_| bad("a Unigram model needs an unk_id"))?;
            let vocab: Vec<Value> = m
                .pieces
                .iter()
                .map(|p| json!([p.text, f64::from(p.score)]))
                .collect();
            json!({"type": "Unigram", "unk_id": unk_id, "vocab": vocab, "byte_fallback": m.byte_fallback})
        }
        2 => {
            let mut vocab = serde_json::Map::new();
            for (i, p) in m.pieces.iter().enumerate() {
                // A piece listed twice keeps its last id, as the converter's dict does.
                vocab.shift_remove(&p.text);
                vocab.insert(p.text.clone(), json!(i));
            }
            let user_defined = m.pieces.iter().any(|p| p.kind == USER_DEFINED);
            json!({
                "type": "BPE", "dropout": null, "unk_token": m.unk_piece,
                "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": true,
                "byte_fallback": m.byte_fallback, "ignore_merges": user_defined,
                "vocab": vocab, "merges": merges(&m),
            })
        }
        3 => return Err(unsupported("model_type WORD")),
        4 => return Err(unsupported("model_type CHAR")),
        t => return Err(bad(format!("unknown model_type {t}"))),
    };
    let mut normalizers = Vec::new();
    if !m.precompiled_charsmap.is_empty() {
        let b64 = base64::engine::general_purpose::STANDARD.encode(&m.precompiled_charsmap);
        normalizers.push(json!({"type": "Precompiled", "precompiled_charsmap": b64}));
    }
    let replace = |pattern: Value, content: &str| json!({"type": "Replace", "pattern": pattern, "content": content});
    if m.remove_extra_whitespaces {
        // Only spaces: SentencePiece leaves other whitespace (newlines) alone.
        normalizers.push(replace(json!({"Regex": r"\A +| +\z"}), ""));
        normalizers.push(replace(json!({"Regex": " {2,}"}), " "));
    }
    if m.escape_whitespaces {
        normalizers.push(replace(json!({"String": " "}), "▁"));
    }
    if m.add_dummy_prefix {
        normalizers.push(replace(json!({"Regex": r"\A▁"}), "▁▁"));
    }
    let mut pre = Vec::new();
    if m.add_dummy_prefix {
        pre.push(json!({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": false}));
    }
    let mut user: Vec<&str> = m
        .pieces
        .iter()
        .filter(|p| p.kind == USER_DEFINED)
        .map(|p| p.text.as_str())
        .collect();
    if !user.is_empty() {
        // Longest first (stable, by chars, as Python's sort by len).
        user.sort_by_key(|u| std::cmp::Reverse(u.chars().count()));
        let pattern: Vec<String> = user.iter().map(|u| escape(u)).collect();
        pre.push(json!({"type": "Split", "pattern": {"Regex": pattern.join("|")}, "behavior": "Isolated", "invert": false}));
    }
    let mut decoders = vec![json!({"type": "Replace", "pattern": {"String": "▁"}, "content": " "})];
    if m.byte_fallback {
        decoders.push(json!({"type": "ByteFallback"}));
    }
    if m.add_dummy_prefix {
        decoders.push(json!({"type": "Fuse"}));
        decoders.push(json!({"type": "Strip", "content": " ", "start": 1, "stop": 0}));
    } else if m.byte_fallback {
        decoders.push(json!({"type": "Fuse"}));
    }
    Ok(json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": if pre.is_empty() { Value::Null } else { json!({"type": "Sequence", "pretokenizers": pre}) },
        "post_processor": null,
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": model,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(num: u64, wire: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![(num << 3 | wire) as u8];
        if wire == 2 {
            out.push(payload.len() as u8);
        }
        out.extend_from_slice(payload);
        out
    }

    fn piece(s: &str, score: f32, kind: u8) -> Vec<u8> {
        let mut p = field(1, 2, s.as_bytes());
        p.extend(field(2, 5, &score.to_le_bytes()));
        p.extend(field(3, 0, &[kind]));
        field(1, 2, &p)
    }

    #[test]
    fn bpe_model_converts_like_transformers() {
        let mut file = Vec::new();
        for (s, score, kind) in [
            ("<unk>", 0.0, 2),
            ("▁", -1.0, 1),
            ("a", -2.0, 1),
            ("▁a", -0.5, 1),
        ] {
            file.extend(piece(s, score, kind));
        }
        file.extend(field(2, 2, &[3 << 3, 2])); // trainer_spec.model_type = BPE
        let js = tokenizer_json(&file).unwrap();
        assert_eq!(js["model"]["type"], "BPE");
        assert_eq!(js["model"]["merges"], json!([["▁", "a"]]));
        let tok = super::super::Tokenizer::from_json(js).unwrap();
        let enc = tok
            .encode(
                &super::super::Input::Text("a a"),
                None,
                &super::super::EncodeOptions {
                    add_special_tokens: false,
                    offsets: super::super::Offsets::Char,
                    truncation: None,
                    padding: None,
                },
            )
            .unwrap();
        assert_eq!(enc.ids, vec![3, 3]);
    }

    #[test]
    fn garbage_is_refused() {
        assert!(tokenizer_json(b"").is_err());
        assert!(tokenizer_json(&[0x0A, 0x50]).is_err());
    }
}
