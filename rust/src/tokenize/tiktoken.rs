//! Loading tiktoken's `.tiktoken` files (base64 token, rank per line) as a byte-level BPE
//! tokenizer.json, the way transformers converts them: the vocabulary is the ranks, and each
//! token's merge is found by running BPE on its bytes with the lower-ranked tokens only.
use super::bytelevel::encode_bytes;
use super::Tokenizer;
use crate::error::TokenizeError;
use base64::Engine;
use rustc_hash::FxHashMap;
use serde_json::{json, Map, Value};

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

/// The two parts that BPE with ranks below `max_rank` leaves of `token`.
fn split_by_lower_ranks<'a>(
    token: &'a [u8],
    ranks: &FxHashMap<&[u8], u32>,
    max_rank: u32,
) -> Vec<&'a [u8]> {
    let mut parts: Vec<&[u8]> = token.chunks(1).collect();
    loop {
        let mut best: Option<(u32, usize)> = None;
        for i in 0..parts.len().saturating_sub(1) {
            let joined =
                &token[offset(token, parts[i])..offset(token, parts[i + 1]) + parts[i + 1].len()];
            if let Some(&r) = ranks.get(joined) {
                if r < max_rank && best.is_none_or(|(br, _)| r < br) {
                    best = Some((r, i));
                }
            }
        }
        let Some((_, i)) = best else { break };
        let start = offset(token, parts[i]);
        let end = offset(token, parts[i + 1]) + parts[i + 1].len();
        parts[i] = &token[start..end];
        parts.remove(i + 1);
    }
    parts
}

fn offset(base: &[u8], part: &[u8]) -> usize {
    part.as_ptr() as usize - base.as_ptr() as usize
}

/// The tokenizer.json of a `.tiktoken` vocabulary with `pattern` and `special_tokens`.
pub fn to_json(
    ranks: &[(Vec<u8>, u32)],
    pattern: &str,
    special_tokens: &[(String, u32)],
) -> Result<Value, TokenizeError> {
    let by_bytes: FxHashMap<&[u8], u32> = ranks.iter().map(|(b, r)| (b.as_slice(), *r)).collect();
    let mut sorted: Vec<&(Vec<u8>, u32)> = ranks.iter().collect();
    sorted.sort_by_key(|(_, r)| *r);
    let mut vocab = Map::new();
    let mut merges = Vec::new();
    for (bytes, rank) in &sorted {
        vocab.insert(encode_bytes(bytes), json!(rank));
        if bytes.len() < 2 {
            continue;
        }
        let parts = split_by_lower_ranks(bytes, &by_bytes, *rank);
        if parts.len() != 2 {
            return Err(TokenizeError::invalid(
                format!("rank {rank}"),
                format!(
                    "token {:?} is not the merge of two lower-ranked tokens",
                    encode_bytes(bytes)
                ),
            ));
        }
        merges.push(json!([encode_bytes(parts[0]), encode_bytes(parts[1])]));
    }
    let added: Vec<Value> = special_tokens
        .iter()
        .map(|(content, id)| {
            json!({"id": id, "content": content, "single_word": false, "lstrip": false, "rstrip": false,
                   "normalized": false, "special": true})
        })
        .collect();
    Ok(json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": null,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": false},
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}
        ]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                  "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
                  "ignore_merges": true, "vocab": vocab, "merges": merges}
    }))
}

impl Tokenizer {
    /// A tokenizer from the text of a `.tiktoken` file.
    pub fn from_tiktoken(
        text: &str,
        pattern: &str,
        special_tokens: &[(String, u32)],
    ) -> Result<Self, TokenizeError> {
        Self::from_json_without_floats(to_json(&parse(text)?, pattern, special_tokens)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_follow_ranks() {
        let b64 = base64::engine::general_purpose::STANDARD;
        let toks: Vec<&[u8]> = vec![b"a", b"b", b"c", b"ab", b"abc", b"bc"];
        let mut text = String::new();
        for (r, t) in toks.iter().enumerate() {
            text.push_str(&b64.encode(t));
            text.push(' ');
            text.push_str(&r.to_string());
            text.push('\n');
        }
        let json = to_json(
            &parse(&text).unwrap(),
            CL100K_PATTERN,
            &[("<|end|>".into(), 6)],
        )
        .unwrap();
        let merges = json["model"]["merges"].as_array().unwrap();
        assert_eq!(merges[0], json!(["a", "b"]));
        assert_eq!(merges[1], json!(["ab", "c"]));
        assert_eq!(merges[2], json!(["b", "c"]));
        let tok = Tokenizer::from_json(json).unwrap();
        assert_eq!(tok.token_to_id("<|end|>"), Some(6));
    }
}
