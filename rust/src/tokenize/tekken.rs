//! Loading Mistral's Tekken files (`tekken_*.json`, as mistral-common's `Tekkenizer.from_file`
//! reads them) as a byte-level BPE tokenizer.json, on the `.tiktoken` conversion: Tekken is a
//! tiktoken vocabulary (base64 token bytes by rank) behind a block of special tokens.
//!
//! mistral-common's semantics, kept here:
//! - ids `0..num_special_tokens` are the special tokens, and a vocabulary token of rank `r` has
//!   id `r + num_special_tokens`;
//! - the vocabulary is cut to its first `default_vocab_size - num_special_tokens` ranks;
//! - the special tokens are the file's `special_tokens` (older files have none and get
//!   `DEPRECATED_SPECIALS`), then `<SPECIAL_{id}>` up to `num_special_tokens`;
//! - `encode(s, bos, eos)` reads special strings in `s` as text (its tiktoken encoding has no
//!   special tokens), so the tokenizer is built with `encode_special_tokens` on;
//! - `bos` prepends `<s>`: the post-processor does, as HF's Mistral tokenizer.json files do.
use super::tiktoken;
use super::Tokenizer;
use crate::error::TokenizeError;
use base64::Engine;
use serde_json::{json, Value};

/// mistral-common's `Tekkenizer.DEPRECATED_SPECIAL_TOKENS`: the special tokens of files of
/// version v7 and older, which do not list them.
const DEPRECATED_SPECIALS: [&str; 20] = [
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
];

fn invalid(at: &str, why: impl Into<String>) -> TokenizeError {
    TokenizeError::invalid(at.to_owned(), why.into())
}

fn field<'a>(v: &'a Value, key: &str, at: &str) -> Result<&'a Value, TokenizeError> {
    v.get(key)
        .ok_or_else(|| invalid(at, format!("missing `{key}`")))
}

fn uint(v: &Value, key: &str, at: &str) -> Result<u32, TokenizeError> {
    field(v, key, at)?
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| invalid(at, format!("`{key}` is not a 32-bit unsigned integer")))
}

/// A parsed Tekken file: the vocabulary's (token bytes, id) pairs with ids already shifted past
/// the special tokens, the special tokens' (content, id) pairs, and the split pattern.
pub struct Tekken {
    pub ranks: Vec<(Vec<u8>, u32)>,
    pub specials: Vec<(String, u32)>,
    pub pattern: String,
}

/// Reads a Tekken file's JSON.
pub fn parse(json: &Value) -> Result<Tekken, TokenizeError> {
    let config = field(json, "config", "tekken")?;
    let pattern = field(config, "pattern", "config")?
        .as_str()
        .ok_or_else(|| invalid("config", "`pattern` is not a string"))?
        .to_owned();
    let vocab_size = uint(config, "default_vocab_size", "config")?;
    let num_special = uint(config, "default_num_special_tokens", "config")?;
    let vocab = field(json, "vocab", "tekken")?
        .as_array()
        .ok_or_else(|| invalid("vocab", "not a list"))?;
    let inner = vocab_size
        .checked_sub(num_special)
        .filter(|&n| n as usize <= vocab.len())
        .ok_or_else(|| {
            invalid(
                "config",
                format!(
                    "default_vocab_size {vocab_size} is not within default_num_special_tokens \
                     {num_special} plus the {} vocabulary tokens",
                    vocab.len()
                ),
            )
        })?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut ranks = Vec::with_capacity(inner as usize);
    for (i, tok) in vocab.iter().take(inner as usize).enumerate() {
        let at = format!("vocab[{i}]");
        if uint(tok, "rank", &at)? as usize != i {
            return Err(invalid(&at, "`rank` is not the entry's index"));
        }
        let bytes = field(tok, "token_bytes", &at)?
            .as_str()
            .and_then(|s| b64.decode(s).ok())
            .ok_or_else(|| invalid(&at, "`token_bytes` is not base64"))?;
        ranks.push((bytes, i as u32 + num_special));
    }
    let specials = specials(json, config, num_special)?;
    Ok(Tekken {
        ranks,
        specials,
        pattern,
    })
}

/// The special tokens, as `Tekkenizer.__init__` completes them.
fn specials(
    json: &Value,
    config: &Value,
    num_special: u32,
) -> Result<Vec<(String, u32)>, TokenizeError> {
    let mut out: Vec<(String, u32)> = match json.get("special_tokens") {
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let at = format!("special_tokens[{i}]");
                let content = field(t, "token_str", &at)?
                    .as_str()
                    .ok_or_else(|| invalid(&at, "`token_str` is not a string"))?;
                Ok((content.to_owned(), uint(t, "rank", &at)?))
            })
            .collect::<Result<_, TokenizeError>>()?,
        None | Some(Value::Null) => {
            // Files past v7 must list their special tokens (mistral-common refuses them too).
            let version = config.get("version").and_then(Value::as_str).unwrap_or("");
            let newer = version
                .strip_prefix('v')
                .and_then(|n| n.parse::<u32>().ok())
                .is_some_and(|n| n > 7);
            if newer {
                return Err(invalid(
                    "special_tokens",
                    format!("missing, and version {version} must list them"),
                ));
            }
            (0u32..)
                .zip(DEPRECATED_SPECIALS)
                .map(|(id, s)| (s.to_owned(), id))
                .collect()
        }
        Some(_) => return Err(invalid("special_tokens", "not a list")),
    };
    if out.len() > num_special as usize {
        return Err(invalid(
            "special_tokens",
            format!("more than default_num_special_tokens ({num_special})"),
        ));
    }
    for id in out.len() as u32..num_special {
        out.push((format!("<SPECIAL_{id}>"), id));
    }
    let mut contents: Vec<&str> = out.iter().map(|(c, _)| c.as_str()).collect();
    contents.sort_unstable();
    if contents.windows(2).any(|w| w[0] == w[1]) {
        return Err(invalid("special_tokens", "not unique"));
    }
    if out.iter().any(|&(_, id)| id >= num_special) {
        return Err(invalid(
            "special_tokens",
            format!("a rank is not below default_num_special_tokens ({num_special})"),
        ));
    }
    Ok(out)
}

/// The tokenizer.json text of a Tekken file's JSON.
pub fn to_json(json: &Value) -> Result<String, TokenizeError> {
    let tekken = parse(json)?;
    let bos = tekken.specials.iter().find(|(c, _)| c == "<s>");
    let post_processor = match bos {
        // `encode(..., bos=True)`: `<s>` first, as HF's Tekken tokenizer.json files have it.
        Some((content, id)) => {
            let special = json!({"SpecialToken": {"id": content, "type_id": 0}});
            let seq = |s: &str, t: u32| json!({"Sequence": {"id": s, "type_id": t}});
            json!({
                "type": "TemplateProcessing",
                "single": [special, seq("A", 0)],
                "pair": [special, seq("A", 0), special, seq("B", 1)],
                "special_tokens": {content.as_str(): {"id": content, "ids": [id], "tokens": [content]}}
            })
        }
        None => Value::Null,
    };
    tiktoken::to_json(
        &tekken.ranks,
        &tekken.pattern,
        &tekken.specials,
        Some(&post_processor),
    )
}

impl Tokenizer {
    /// A tokenizer from the text of a Tekken file, encoding as mistral-common's
    /// `Tekkenizer.encode(s, bos=add_special_tokens, eos=False)` does.
    pub fn from_tekken(text: &str) -> Result<Self, TokenizeError> {
        let json: Value =
            serde_json::from_str(text).map_err(|e| invalid("tekken", e.to_string()))?;
        let mut tok = Self::from_json_str(&to_json(&json)?)?;
        tok.added.encode_special_tokens = true;
        Ok(tok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(specials: Option<Value>, version: &str) -> Value {
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut vocab: Vec<Value> = (0..=255u8)
            .map(|b| json!({"rank": b, "token_bytes": b64.encode([b]), "token_str": null}))
            .collect();
        for (r, t) in [(256, "ab"), (257, "abc"), (258, "cut")] {
            vocab.push(json!({"rank": r, "token_bytes": b64.encode(t), "token_str": t}));
        }
        let mut f = json!({
            "config": {"pattern": tiktoken::CL100K_PATTERN, "num_vocab_tokens": 259,
                       "default_vocab_size": 258 + 30, "default_num_special_tokens": 30,
                       "version": version},
            "vocab": vocab,
        });
        if let Some(s) = specials {
            f["special_tokens"] = s;
        }
        f
    }

    #[test]
    fn ids_shift_past_the_specials_and_the_vocabulary_is_cut() {
        let tok = Tokenizer::from_json_str(&to_json(&file(None, "v3")).unwrap()).unwrap();
        assert_eq!(tok.token_to_id("<s>"), Some(1));
        assert_eq!(tok.token_to_id("[TOOL_CONTENT]"), Some(19));
        assert_eq!(tok.token_to_id("<SPECIAL_29>"), Some(29));
        assert_eq!(tok.token_to_id("abc"), Some(257 + 30));
        assert_eq!(tok.token_to_id("a"), Some(u32::from(b'a') + 30));
        // Rank 258 is past default_vocab_size.
        assert_eq!(tok.token_to_id("cut"), None);
    }

    #[test]
    fn listed_specials_and_versions() {
        let listed = json!([{"rank": 0, "token_str": "<unk>", "is_control": true},
                            {"rank": 1, "token_str": "<s>", "is_control": true}]);
        let json = to_json(&file(Some(listed), "v13")).unwrap();
        let tok = Tokenizer::from_json_str(&json).unwrap();
        assert_eq!(tok.token_to_id("<SPECIAL_2>"), Some(2));
        assert_eq!(tok.token_to_id("[INST]"), None);
        // Past v7 the list is required.
        assert!(to_json(&file(None, "v13")).is_err());
        let twice = json!([{"rank": 0, "token_str": "<s>"}, {"rank": 1, "token_str": "<s>"}]);
        assert!(to_json(&file(Some(twice), "v13")).is_err());
    }
}
