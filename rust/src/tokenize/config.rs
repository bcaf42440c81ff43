//! Reading tokenizer.json: every component is checked against what fastprep implements, and
//! anything else is refused with its name and its place in the JSON.
use super::added::AddedToken;
use super::bert::BertNormalizer;
use super::bpe::{Bpe, BpeOptions};
use super::decode::Decoder;
use super::model::Model;
use super::normalize::Normalizer;
use super::pattern::Pattern;
use super::postprocess::{PostProcessor, SpecialToken, TemplatePiece};
use super::pretokenize::{Behavior, PreTokenizer, PrependScheme};
use super::unigram::Unigram;
use super::wordlevel::WordLevel;
use super::wordpiece::WordPiece;
use super::{Padding, PaddingStrategy, Truncation, TruncationStrategy};
use crate::error::TokenizeError;
use crate::tokenize::encoding::Direction;
use rustc_hash::FxHashMap;
use serde_json::{Map, Value};

type R<T> = Result<T, TokenizeError>;

fn obj<'a>(v: &'a Value, path: &str) -> R<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| TokenizeError::invalid(path, "expected an object"))
}

fn type_of<'a>(m: &'a Map<String, Value>, path: &str) -> R<&'a str> {
    m.get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| TokenizeError::invalid(path, "missing \"type\""))
}

fn bool_or(m: &Map<String, Value>, key: &str, default: bool) -> bool {
    m.get(key).and_then(Value::as_bool).unwrap_or(default)
}

fn str_at<'a>(m: &'a Map<String, Value>, key: &str, path: &str) -> R<&'a str> {
    m.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| TokenizeError::invalid(format!("{path}.{key}"), "expected a string"))
}

fn uint_at(m: &Map<String, Value>, key: &str, path: &str) -> R<u64> {
    m.get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| TokenizeError::invalid(format!("{path}.{key}"), "expected an integer"))
}

fn opt_str(m: &Map<String, Value>, key: &str) -> Option<String> {
    m.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// The components listed under `key` (a Sequence), each parsed by `parse` at its own path.
fn items<T>(
    m: &Map<String, Value>,
    key: &str,
    path: &str,
    parse: fn(&Value, &str) -> R<Option<T>>,
) -> R<Vec<T>> {
    let list = m
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| TokenizeError::invalid(format!("{path}.{key}"), "expected a list"))?;
    let mut out = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        out.extend(parse(item, &format!("{path}.{key}[{i}]"))?);
    }
    Ok(out)
}

fn pattern(m: &Map<String, Value>, path: &str) -> R<Pattern> {
    let p = obj(
        m.get("pattern").unwrap_or(&Value::Null),
        &format!("{path}.pattern"),
    )?;
    let bad = |e: String| TokenizeError::invalid(format!("{path}.pattern"), e);
    if let Some(s) = p.get("String").and_then(Value::as_str) {
        Pattern::literal(s).map_err(bad)
    } else if let Some(s) = p.get("Regex").and_then(Value::as_str) {
        Pattern::regex(s).map_err(bad)
    } else {
        Err(bad("expected {\"String\": ...} or {\"Regex\": ...}".into()))
    }
}

/// Metaspace's fields (the pre-tokenizer and the decoder share them in HF): the replacement
/// char, the prepend scheme (files from before it existed say `add_prefix_space`) and split.
fn metaspace(m: &Map<String, Value>, path: &str) -> R<(char, PrependScheme, bool)> {
    let rep = str_at(m, "replacement", path)?;
    let mut chars = rep.chars();
    let (Some(replacement), None) = (chars.next(), chars.next()) else {
        return Err(TokenizeError::invalid(
            format!("{path}.replacement"),
            "expected one char",
        ));
    };
    let prepend = match m.get("prepend_scheme").and_then(Value::as_str) {
        None | Some("always") => PrependScheme::Always,
        Some("first") => PrependScheme::First,
        Some("never") => PrependScheme::Never,
        Some(other) => {
            return Err(TokenizeError::invalid(
                format!("{path}.prepend_scheme"),
                format!("unknown prepend scheme {other:?}"),
            ))
        }
    };
    // As HF: a missing scheme is "always", and add_prefix_space false must say "never" too.
    if m.get("add_prefix_space").and_then(Value::as_bool) == Some(false)
        && prepend != PrependScheme::Never
    {
        return Err(TokenizeError::invalid(
            format!("{path}.add_prefix_space"),
            "add_prefix_space false does not match prepend_scheme (HF refuses it too)",
        ));
    }
    Ok((replacement, prepend, bool_or(m, "split", true)))
}

fn behavior(m: &Map<String, Value>, path: &str) -> R<Behavior> {
    Ok(
        match m
            .get("behavior")
            .and_then(Value::as_str)
            .unwrap_or("Isolated")
        {
            "Removed" => Behavior::Removed,
            "Isolated" => Behavior::Isolated,
            "MergedWithPrevious" => Behavior::MergedWithPrevious,
            "MergedWithNext" => Behavior::MergedWithNext,
            "Contiguous" => Behavior::Contiguous,
            other => {
                return Err(TokenizeError::invalid(
                    format!("{path}.behavior"),
                    format!("unknown behavior {other:?}"),
                ))
            }
        },
    )
}

pub fn normalizer(v: &Value, path: &str) -> R<Option<Normalizer>> {
    if v.is_null() {
        return Ok(None);
    }
    let m = obj(v, path)?;
    let t = type_of(m, path)?;
    Ok(Some(match t {
        "NFC" => Normalizer::Nfc,
        "NFD" => Normalizer::Nfd,
        "NFKC" => Normalizer::Nfkc,
        "NFKD" => Normalizer::Nfkd,
        "Lowercase" => Normalizer::Lowercase,
        "Strip" => Normalizer::Strip {
            left: bool_or(m, "strip_left", true),
            right: bool_or(m, "strip_right", true),
        },
        "Replace" => Normalizer::Replace {
            pattern: pattern(m, path)?,
            content: str_at(m, "content", path)?.into(),
        },
        "Prepend" => Normalizer::Prepend(str_at(m, "prepend", path)?.into()),
        // Files spell it "BertNormalizer"; HF also reads "Bert".
        "BertNormalizer" | "Bert" => {
            let lowercase = bool_or(m, "lowercase", true);
            Normalizer::Bert(BertNormalizer {
                clean_text: bool_or(m, "clean_text", true),
                handle_chinese_chars: bool_or(m, "handle_chinese_chars", true),
                strip_accents: m
                    .get("strip_accents")
                    .and_then(Value::as_bool)
                    .unwrap_or(lowercase),
                lowercase,
            })
        }
        "StripAccents" => Normalizer::StripAccents,
        "Precompiled" => {
            use base64::Engine as _;
            let p = format!("{path}.precompiled_charsmap");
            let b64 = str_at(m, "precompiled_charsmap", path)?;
            // HF writes an empty charsmap as "" (an identity normalizer).
            if b64.is_empty() {
                return Ok(None);
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| TokenizeError::invalid(&p, format!("not base64: {e}")))?;
            Normalizer::Precompiled(std::sync::Arc::new(
                super::precompiled::Precompiled::from_bytes(&bytes)
                    .map_err(|e| TokenizeError::invalid(&p, e))?,
            ))
        }
        "Nmt" => Normalizer::Nmt,
        "ByteLevel" => Normalizer::ByteLevel,
        "Sequence" => {
            // An empty Sequence is the identity (DeepSeek-V4's file has one), and a Sequence of
            // one is that one: either then takes the loops of a file without it (the fused ids
            // loop runs only without a normalizer). The file's own JSON is kept for `to_str`.
            let mut list = items(m, "normalizers", path, normalizer)?;
            match list.len() {
                0 => return Ok(None),
                1 => list.swap_remove(0),
                _ => Normalizer::Sequence(list),
            }
        }
        other => {
            return Err(TokenizeError::unsupported(
                format!("normalizer {other:?}"),
                path,
            ))
        }
    }))
}

pub fn pre_tokenizer(v: &Value, path: &str) -> R<Option<PreTokenizer>> {
    if v.is_null() {
        return Ok(None);
    }
    let m = obj(v, path)?;
    let t = type_of(m, path)?;
    Ok(Some(match t {
        "FixedLength" => {
            let n = m
                .get("length")
                .map_or(Ok(5), |_| uint_at(m, "length", path))?;
            if n == 0 {
                return Err(TokenizeError::invalid(
                    format!("{path}.length"),
                    "must be at least 1",
                ));
            }
            PreTokenizer::FixedLength(n as usize)
        }
        "ByteLevel" => PreTokenizer::ByteLevel {
            add_prefix_space: bool_or(m, "add_prefix_space", true),
            use_regex: bool_or(m, "use_regex", true),
        },
        "Split" => PreTokenizer::Split {
            pattern: pattern(m, path)?,
            behavior: behavior(m, path)?,
            invert: bool_or(m, "invert", false),
        },
        "Digits" => PreTokenizer::Digits {
            individual: bool_or(m, "individual_digits", false),
        },
        "Punctuation" => PreTokenizer::Punctuation(behavior(m, path)?),
        "Whitespace" => PreTokenizer::Whitespace,
        "WhitespaceSplit" => PreTokenizer::WhitespaceSplit,
        "BertPreTokenizer" => PreTokenizer::Bert,
        "CharDelimiterSplit" => {
            let d = str_at(m, "delimiter", path)?;
            let mut chars = d.chars();
            let (Some(_), None) = (chars.next(), chars.next()) else {
                return Err(TokenizeError::invalid(
                    format!("{path}.delimiter"),
                    "expected one char",
                ));
            };
            PreTokenizer::CharDelimiterSplit(
                Pattern::literal(d).map_err(|e| TokenizeError::invalid(path, e))?,
            )
        }
        "UnicodeScripts" => PreTokenizer::UnicodeScripts,
        "Metaspace" => {
            let (replacement, prepend, split) = metaspace(m, path)?;
            PreTokenizer::Metaspace {
                replacement,
                prepend,
                split,
            }
        }
        "Sequence" => {
            let items = m
                .get("pretokenizers")
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    TokenizeError::invalid(format!("{path}.pretokenizers"), "expected a list")
                })?;
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let p = format!("{path}.pretokenizers[{i}]");
                if let Some(pt) = pre_tokenizer(item, &p)? {
                    // The byte-level mapping happens in the model, so nothing may follow it.
                    if out.iter().any(PreTokenizer::is_byte_level) {
                        return Err(TokenizeError::unsupported(
                            "a pre-tokenizer after ByteLevel",
                            p,
                        ));
                    }
                    out.push(pt);
                }
            }
            PreTokenizer::Sequence(out)
        }
        other => {
            return Err(TokenizeError::unsupported(
                format!("pre-tokenizer {other:?}"),
                path,
            ))
        }
    }))
}

fn pair_at(m: &Map<String, Value>, key: &str, path: &str) -> R<(String, u32)> {
    let a = m
        .get(key)
        .and_then(Value::as_array)
        .filter(|a| a.len() == 2);
    let bad = || TokenizeError::invalid(format!("{path}.{key}"), "expected [token, id]");
    let a = a.ok_or_else(bad)?;
    Ok((
        a[0].as_str().ok_or_else(bad)?.into(),
        a[1].as_u64().ok_or_else(bad)? as u32,
    ))
}

fn template(v: Option<&Value>, path: &str) -> R<Vec<TemplatePiece>> {
    let items = v
        .and_then(Value::as_array)
        .ok_or_else(|| TokenizeError::invalid(path, "expected a list"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let p = format!("{path}[{i}]");
            let m = obj(item, &p)?;
            if let Some(s) = m.get("Sequence").and_then(Value::as_object) {
                let id = str_at(s, "id", &p)?;
                Ok(TemplatePiece::Sequence {
                    second: id == "B",
                    type_id: uint_at(s, "type_id", &p)? as u32,
                })
            } else if let Some(s) = m.get("SpecialToken").and_then(Value::as_object) {
                Ok(TemplatePiece::Special {
                    id: str_at(s, "id", &p)?.into(),
                    type_id: uint_at(s, "type_id", &p)? as u32,
                })
            } else {
                Err(TokenizeError::invalid(
                    p,
                    "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}",
                ))
            }
        })
        .collect()
}

pub fn post_processor(v: &Value, path: &str) -> R<Option<PostProcessor>> {
    if v.is_null() {
        return Ok(None);
    }
    let m = obj(v, path)?;
    let t = type_of(m, path)?;
    Ok(Some(match t {
        "ByteLevel" => PostProcessor::ByteLevel {
            add_prefix_space: bool_or(m, "add_prefix_space", true),
            trim_offsets: bool_or(m, "trim_offsets", true),
        },
        "TemplateProcessing" => {
            let single = template(m.get("single"), &format!("{path}.single"))?;
            let pair = template(m.get("pair"), &format!("{path}.pair"))?;
            let mut special = FxHashMap::default();
            if let Some(st) = m.get("special_tokens").and_then(Value::as_object) {
                for (k, s) in st {
                    let p = format!("{path}.special_tokens.{k}");
                    let s = obj(s, &p)?;
                    let ids = s.get("ids").and_then(Value::as_array).map(|a| {
                        a.iter()
                            .filter_map(Value::as_u64)
                            .map(|x| x as u32)
                            .collect()
                    });
                    let tokens = s.get("tokens").and_then(Value::as_array).map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    });
                    let (Some(ids), Some(tokens)) = (ids, tokens) else {
                        return Err(TokenizeError::invalid(p, "expected ids and tokens"));
                    };
                    special.insert(k.clone(), SpecialToken { ids, tokens });
                }
            }
            for piece in single.iter().chain(&pair) {
                if let TemplatePiece::Special { id, .. } = piece {
                    if !special.contains_key(id) {
                        return Err(TokenizeError::invalid(
                            path,
                            format!("template uses {id:?}, missing from special_tokens"),
                        ));
                    }
                }
            }
            PostProcessor::Template {
                single,
                pair,
                special,
            }
        }
        "RobertaProcessing" => PostProcessor::Roberta {
            sep: pair_at(m, "sep", path)?,
            cls: pair_at(m, "cls", path)?,
            trim_offsets: bool_or(m, "trim_offsets", true),
            add_prefix_space: bool_or(m, "add_prefix_space", true),
        },
        "BertProcessing" => PostProcessor::Bert {
            sep: pair_at(m, "sep", path)?,
            cls: pair_at(m, "cls", path)?,
        },
        "Sequence" => PostProcessor::Sequence(items(m, "processors", path, post_processor)?),
        other => {
            return Err(TokenizeError::unsupported(
                format!("post-processor {other:?}"),
                path,
            ))
        }
    }))
}

pub fn decoder(v: &Value, path: &str) -> R<Option<Decoder>> {
    if v.is_null() {
        return Ok(None);
    }
    let m = obj(v, path)?;
    let t = type_of(m, path)?;
    Ok(Some(match t {
        "ByteLevel" => Decoder::ByteLevel,
        "Replace" => Decoder::Replace {
            pattern: pattern(m, path)?,
            content: str_at(m, "content", path)?.into(),
        },
        "Strip" => {
            let content = str_at(m, "content", path)?;
            let mut chars = content.chars();
            let (Some(c), None) = (chars.next(), chars.next()) else {
                return Err(TokenizeError::invalid(
                    format!("{path}.content"),
                    "expected one char",
                ));
            };
            Decoder::Strip {
                content: c,
                start: uint_at(m, "start", path)? as usize,
                stop: uint_at(m, "stop", path)? as usize,
            }
        }
        "Fuse" => Decoder::Fuse,
        "WordPiece" => Decoder::WordPiece {
            prefix: opt_str(m, "prefix").unwrap_or_else(|| "##".into()),
            cleanup: bool_or(m, "cleanup", true),
        },
        "ByteFallback" => Decoder::ByteFallback,
        "BPEDecoder" => Decoder::Bpe {
            suffix: opt_str(m, "suffix").unwrap_or_else(|| "</w>".into()),
        },
        "Metaspace" => {
            let (replacement, prepend, _) = metaspace(m, path)?;
            Decoder::Metaspace {
                replacement,
                prepend: prepend != PrependScheme::Never,
            }
        }
        "CTC" => Decoder::Ctc {
            pad_token: opt_str(m, "pad_token").unwrap_or_else(|| "<pad>".into()),
            word_delimiter_token: opt_str(m, "word_delimiter_token").unwrap_or_else(|| "|".into()),
            cleanup: bool_or(m, "cleanup", true),
        },
        "Sequence" => Decoder::Sequence(items(m, "decoders", path, decoder)?),
        other => {
            return Err(TokenizeError::unsupported(
                format!("decoder {other:?}"),
                path,
            ))
        }
    }))
}

/// The vocabulary object at `model.vocab` (token -> id).
fn vocab_map(
    m: &Map<String, Value>,
    read: Option<FxHashMap<String, u32>>,
) -> R<FxHashMap<String, u32>> {
    if let Some(vocab) = read {
        return Ok(vocab);
    }
    let vocab_v = obj(m.get("vocab").unwrap_or(&Value::Null), "model.vocab")?;
    let mut vocab = FxHashMap::with_capacity_and_hasher(vocab_v.len(), Default::default());
    for (k, id) in vocab_v {
        let id = id
            .as_u64()
            .and_then(|id| u32::try_from(id).ok())
            .ok_or_else(|| TokenizeError::invalid(format!("model.vocab.{k}"), "expected an id"))?;
        vocab.insert(k.clone(), id);
    }
    Ok(vocab)
}

pub fn model(v: &Value) -> R<Model> {
    model_of(obj(v, "model")?, None, None)
}

/// The model of the fields `m`, with its vocabulary and merges given if they were read apart
/// (`json_sections`; then they are not in `m`).
pub fn model_of(
    m: &Map<String, Value>,
    vocab: Option<FxHashMap<String, u32>>,
    merges: Option<Vec<(String, String)>>,
) -> R<Model> {
    let path = "model";
    let has_vocab = vocab.is_some() || m.contains_key("vocab");
    // Files written before the "type" field existed are told apart by their fields, as HF does.
    let t = m.get("type").and_then(Value::as_str).unwrap_or(
        if merges.is_some() || m.contains_key("merges") {
            "BPE"
        } else if m.contains_key("continuing_subword_prefix") {
            "WordPiece"
        } else if m.contains_key("unk_token") && has_vocab {
            "WordLevel"
        } else {
            "?"
        },
    );
    match t {
        "BPE" => bpe(m, vocab, merges).map(Model::Bpe),
        "WordPiece" => Ok(Model::WordPiece(WordPiece::new(
            vocab_map(m, vocab)?,
            str_at(m, "unk_token", path)?.into(),
            str_at(m, "continuing_subword_prefix", path)?.into(),
            uint_at(m, "max_input_chars_per_word", path)? as usize,
        ))),
        "WordLevel" => Ok(Model::WordLevel(WordLevel::new(
            vocab_map(m, vocab)?,
            str_at(m, "unk_token", path)?.into(),
        ))),
        "Unigram" => unigram(m).map(Model::Unigram),
        _ => Err(TokenizeError::unsupported(format!("model {t:?}"), path)),
    }
}

fn bpe(
    m: &Map<String, Value>,
    vocab: Option<FxHashMap<String, u32>>,
    merges: Option<Vec<(String, String)>>,
) -> R<Bpe> {
    if let Some(d) = m.get("dropout").and_then(Value::as_f64) {
        if d != 0.0 {
            return Err(TokenizeError::unsupported(
                format!("BPE dropout {d} (random tokenization, never identical across runs)"),
                "model.dropout",
            ));
        }
    }
    let vocab = vocab_map(m, vocab)?;
    let merges = match merges {
        Some(merges) => merges,
        None => merges_list(m)?,
    };
    let opts = BpeOptions {
        unk_token: opt_str(m, "unk_token"),
        continuing_subword_prefix: opt_str(m, "continuing_subword_prefix"),
        end_of_word_suffix: opt_str(m, "end_of_word_suffix"),
        fuse_unk: bool_or(m, "fuse_unk", false),
        byte_fallback: bool_or(m, "byte_fallback", false),
        ignore_merges: bool_or(m, "ignore_merges", false),
    };
    Bpe::new(vocab, &merges, opts)
}

fn merges_list(m: &Map<String, Value>) -> R<Vec<(String, String)>> {
    let merges_v = m
        .get("merges")
        .and_then(Value::as_array)
        .ok_or_else(|| TokenizeError::invalid("model.merges", "expected a list"))?;
    let mut merges = Vec::with_capacity(merges_v.len());
    for (i, mv) in merges_v.iter().enumerate() {
        let bad =
            || TokenizeError::invalid(format!("model.merges[{i}]"), "expected \"a b\" or [a, b]");
        let pair = match mv {
            Value::String(s) => {
                let (a, b) = s.split_once(' ').ok_or_else(bad)?;
                (a.to_owned(), b.to_owned())
            }
            Value::Array(a) if a.len() == 2 => (
                a[0].as_str().ok_or_else(bad)?.to_owned(),
                a[1].as_str().ok_or_else(bad)?.to_owned(),
            ),
            _ => return Err(bad()),
        };
        merges.push(pair);
    }
    Ok(merges)
}

fn unigram(m: &Map<String, Value>) -> R<Unigram> {
    let list = m.get("vocab").and_then(Value::as_array).ok_or_else(|| {
        TokenizeError::invalid("model.vocab", "expected a list of [token, score]")
    })?;
    let mut pieces = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let bad = || TokenizeError::invalid(format!("model.vocab[{i}]"), "expected [token, score]");
        let a = item.as_array().filter(|a| a.len() == 2).ok_or_else(bad)?;
        pieces.push((
            a[0].as_str().ok_or_else(bad)?.to_owned(),
            a[1].as_f64().ok_or_else(bad)?,
        ));
    }
    let unk_id = match m.get("unk_id") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .ok_or_else(|| TokenizeError::invalid("model.unk_id", "expected an id"))?
                as usize,
        ),
    };
    Unigram::new(pieces, unk_id, bool_or(m, "byte_fallback", false))
}

pub fn added_tokens(v: &Value) -> R<Vec<AddedToken>> {
    let Some(items) = v.as_array() else {
        return if v.is_null() {
            Ok(vec![])
        } else {
            Err(TokenizeError::invalid("added_tokens", "expected a list"))
        };
    };
    items
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let p = format!("added_tokens[{i}]");
            let m = obj(t, &p)?;
            let special = bool_or(m, "special", false);
            Ok(AddedToken {
                id: uint_at(m, "id", &p)? as u32,
                content: str_at(m, "content", &p)?.into(),
                single_word: bool_or(m, "single_word", false),
                lstrip: bool_or(m, "lstrip", false),
                rstrip: bool_or(m, "rstrip", false),
                normalized: bool_or(m, "normalized", !special),
                special,
            })
        })
        .collect()
}

fn direction(m: &Map<String, Value>, path: &str) -> R<Direction> {
    match m
        .get("direction")
        .and_then(Value::as_str)
        .unwrap_or("Right")
    {
        "Right" => Ok(Direction::Right),
        "Left" => Ok(Direction::Left),
        other => Err(TokenizeError::invalid(
            format!("{path}.direction"),
            format!("unknown direction {other:?}"),
        )),
    }
}

pub fn truncation(v: &Value) -> R<Option<Truncation>> {
    if v.is_null() {
        return Ok(None);
    }
    let m = obj(v, "truncation")?;
    let strategy = match m
        .get("strategy")
        .and_then(Value::as_str)
        .unwrap_or("LongestFirst")
    {
        "LongestFirst" => TruncationStrategy::LongestFirst,
        "OnlyFirst" => TruncationStrategy::OnlyFirst,
        "OnlySecond" => TruncationStrategy::OnlySecond,
        other => {
            return Err(TokenizeError::invalid(
                "truncation.strategy",
                format!("unknown strategy {other:?}"),
            ))
        }
    };
    Ok(Some(Truncation {
        max_length: uint_at(m, "max_length", "truncation")? as usize,
        stride: m.get("stride").and_then(Value::as_u64).unwrap_or(0) as usize,
        strategy,
        direction: direction(m, "truncation")?,
    }))
}

pub fn padding(v: &Value) -> R<Option<Padding>> {
    if v.is_null() {
        return Ok(None);
    }
    let m = obj(v, "padding")?;
    let strategy = match m.get("strategy") {
        Some(Value::String(s)) if s == "BatchLongest" => PaddingStrategy::BatchLongest,
        Some(Value::Object(o)) if o.contains_key("Fixed") => {
            PaddingStrategy::Fixed(o["Fixed"].as_u64().unwrap_or(0) as usize)
        }
        _ => {
            return Err(TokenizeError::invalid(
                "padding.strategy",
                "expected \"BatchLongest\" or {\"Fixed\": n}",
            ))
        }
    };
    Ok(Some(Padding {
        strategy,
        direction: direction(m, "padding")?,
        pad_to_multiple_of: m
            .get("pad_to_multiple_of")
            .and_then(Value::as_u64)
            .map(|x| x as usize),
        pad_id: m.get("pad_id").and_then(Value::as_u64).unwrap_or(0) as u32,
        pad_type_id: m.get("pad_type_id").and_then(Value::as_u64).unwrap_or(0) as u32,
        pad_token: opt_str(m, "pad_token").unwrap_or_else(|| "[PAD]".into()),
    }))
}
