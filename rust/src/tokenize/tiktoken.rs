//! Loading tiktoken's `.tiktoken` files (base64 token, rank per line) as a byte-level BPE
//! tokenizer.json, the way transformers converts them: the vocabulary is the ranks, each token's
//! merges are its splits into two tokens, ranked by the token, and `ignore_merges` takes a piece
//! that is a token as it is (tiktoken's own rule).
use super::bytelevel::encode_bytes;
use super::Tokenizer;
use crate::error::TokenizeError;
use base64::Engine;
use rustc_hash::FxHashMap;
use serde_json::{json, Value};
use std::fmt::Write;

/// cl100k's split pattern as HF tokenizer.json files spell it (also Llama-3's).
pub const CL100K_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Parses `.tiktoken` text into (token bytes, rank) pairs.
pub fn parse(text: &str) -> Result<Vec<(Vec<u8>, u32)>, TokenizeError> {
    let b64 = base64::engine::general_purpose::STANDARD;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, line)| {
            let bad = |why: &str| TokenizeError::invalid(format!("line {}", i + 1), why.to_owned());
            let (tok, rank) = line
                .split_once(' ')
                .ok_or_else(|| bad("expected `<base64 token> <rank>`"))?;
            let bytes = b64
                .decode(tok.trim())
                .map_err(|_| bad("token is not base64"))?;
            let rank = rank
                .trim()
                .parse::<u32>()
                .map_err(|_| bad("rank is not an integer"))?;
            Ok((bytes, rank))
        })
        .collect()
}

/// The merges that make `token`: each split into two tokens of the vocabulary, in the order of
/// their parts' ranks (transformers' `TikTokenConverter`). Every split, not only the one BPE
/// reaches with lower ranks: tiktoken merges any adjacent pair whose bytes are a token, and a
/// token may be made of higher-ranked ones (Qwen3.5's vocabulary has such tokens).
fn splits_in_vocab<'a>(
    token: &'a [u8],
    ranks: &FxHashMap<&[u8], u32>,
) -> Vec<(&'a [u8], &'a [u8])> {
    let mut local: Vec<(u32, u32, &[u8], &[u8])> = (1..token.len())
        .filter_map(|i| {
            let (l, r) = token.split_at(i);
            Some((*ranks.get(l)?, *ranks.get(r)?, l, r))
        })
        .collect();
    local.sort_by_key(|&(rl, rr, _, _)| (rl, rr));
    local.into_iter().map(|(_, _, l, r)| (l, r)).collect()
}

/// The tokenizer.json text of a `.tiktoken` vocabulary with `pattern`, `special_tokens` and
/// `post_processor` (None: the byte-level one transformers' converter writes). Written as text
/// straight away, not as a `Value` tree: the tree of o200k (a `Value` per entry and merge)
/// took longer to build, serialize and drop than the tokenizer takes to load from the text.
pub fn to_json(
    ranks: &[(Vec<u8>, u32)],
    pattern: &str,
    special_tokens: &[(String, u32)],
    post_processor: Option<&Value>,
) -> Result<String, TokenizeError> {
    let by_bytes: FxHashMap<&[u8], u32> = ranks.iter().map(|(b, r)| (b.as_slice(), *r)).collect();
    let mut sorted: Vec<&(Vec<u8>, u32)> = ranks.iter().collect();
    sorted.sort_by_key(|(_, r)| *r);
    let mut vocab = String::with_capacity(ranks.len() * 20);
    let mut merges = String::with_capacity(ranks.len() * 24);
    for (bytes, rank) in &sorted {
        if !vocab.is_empty() {
            vocab.push(',');
        }
        push_json_str(&mut vocab, &encode_bytes(bytes));
        vocab.push(':');
        let _ = write!(vocab, "{rank}");
        if bytes.len() < 2 {
            continue;
        }
        for (l, r) in splits_in_vocab(bytes, &by_bytes) {
            if !merges.is_empty() {
                merges.push(',');
            }
            merges.push('[');
            push_json_str(&mut merges, &encode_bytes(l));
            merges.push(',');
            push_json_str(&mut merges, &encode_bytes(r));
            merges.push(']');
        }
    }
    let added: Vec<Value> = special_tokens
        .iter()
        .map(|(content, id)| {
            json!({"id": id, "content": content, "single_word": false, "lstrip": false, "rstrip": false,
                   "normalized": false, "special": true})
        })
        .collect();
    let byte_level = |add_prefix_space: bool, trim_offsets: bool, use_regex: bool| {
        json!({"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": trim_offsets,
               "use_regex": use_regex})
    };
    let head = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": null,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": false},
            byte_level(false, true, false)
        ]},
        "post_processor": post_processor.cloned().unwrap_or_else(|| byte_level(true, false, true)),
        "decoder": byte_level(true, true, true),
    });
    let head = serde_json::to_string(&head)
        .map_err(|e| TokenizeError::invalid("(file)", e.to_string()))?;
    // `head` is an object: its closing brace gives way to the model.
    Ok(format!(
        "{},\"model\":{{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\
         \"continuing_subword_prefix\":null,\"end_of_word_suffix\":null,\"fuse_unk\":false,\
         \"byte_fallback\":false,\"ignore_merges\":true,\"vocab\":{{{vocab}}},\"merges\":[{merges}]}}}}",
        &head[..head.len() - 1]
    ))
}

/// `s` as a JSON string. Byte-level tokens are printable chars, so only quotes and
/// backslashes need escaping; control chars are escaped all the same.
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                // Writing into a String cannot fail.
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl Tokenizer {
    /// A tokenizer from the text of a `.tiktoken` file.
    pub fn from_tiktoken(
        text: &str,
        pattern: &str,
        special_tokens: &[(String, u32)],
    ) -> Result<Self, TokenizeError> {
        Self::from_json_str(&to_json(&parse(text)?, pattern, special_tokens, None)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_follow_ranks() {
        let b64 = base64::engine::general_purpose::STANDARD;
        let toks: Vec<&[u8]> = vec![
            b"a", b"b", b"c", b"ab", b"abc", b"bc", b"\"", b"\\", b"\"\\",
        ];
        let mut text = String::new();
        for (r, t) in toks.iter().enumerate() {
            text.push_str(&b64.encode(t));
            text.push(' ');
            text.push_str(&r.to_string());
            text.push('\n');
        }
        let text = to_json(
            &parse(&text).unwrap(),
            CL100K_PATTERN,
            &[("<|end|>".into(), 9)],
            None,
        )
        .unwrap();
        let json: Value = serde_json::from_str(&text).unwrap();
        let merges = json["model"]["merges"].as_array().unwrap();
        // "abc" (rank 4) splits as "a" + "bc" and "ab" + "c": ranks (0, 5) before (3, 2).
        assert_eq!(merges[0], json!(["a", "b"]));
        assert_eq!(merges[1], json!(["a", "bc"]));
        assert_eq!(merges[2], json!(["ab", "c"]));
        assert_eq!(merges[3], json!(["b", "c"]));
        assert_eq!(merges[4], json!(["\"", "\\"]));
        assert_eq!(json["model"]["vocab"]["\"\\"], json!(8));
        assert_eq!(
            json["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"],
            json!(CL100K_PATTERN)
        );
        let tok = Tokenizer::from_json_str(&text).unwrap();
        assert_eq!(tok.token_to_id("<|end|>"), Some(9));
        assert_eq!(tok.token_to_id("\"\\"), Some(8));
    }
}
