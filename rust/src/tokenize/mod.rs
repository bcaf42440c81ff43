//! The tokenizer: HF tokenizer.json files run through the same pipeline as HF tokenizers
//! (added tokens, normalizer, pre-tokenizer, model, post-processor, truncation, padding) with
//! identical ids, tokens and offsets.

pub mod added;
pub mod bert;
mod blockmasks;
pub mod bpe;
pub mod bytelevel;
pub mod bytesmap;
pub mod cache_cap;
pub mod charclass;
mod class_bytes;
mod class_dfa;
mod config;
pub mod decode;
pub mod encoding;
pub mod fastsplit;
mod huge_table;
mod json_sections;
mod load_thread;
mod long_text;
pub mod model;
mod normal_form;
pub mod normalize;
mod onig_to_pcre;
pub mod pattern;
pub mod pcre;
mod piece_cache;
pub mod postprocess;
pub mod precompiled;
pub mod pretokenize;
pub mod sentencepiece;
pub mod spm_normalize;
mod startmap;
pub mod tekken;
pub mod tiktoken;
pub mod unicode_scripts;
pub mod unigram;
pub mod wordlevel;
pub mod wordpiece;

use crate::error::TokenizeError;
use added::AddedVocab;
use decode::Decoder;
pub use encoding::{Direction, Encoding};

use model::Model;
use normalize::{Normalizer, Outcome};
use postprocess::PostProcessor;
use pretokenize::{Piece, PreTokenizer, Sources};
use serde_json::Value;
use std::sync::Arc;

/// Pieces whose cache lookups the ids-only path prefetches together (32 ran a few percent faster
/// than 16 in alternating runs, once the hits went through `HotCache::hits`; 64 no faster then,
/// but 2.5% faster once the faster splitter left less time between a prefetch and its use;
/// 128 no faster again).
pub(crate) const PREFETCH_RUN: usize = 64;

/// A text cut at its added tokens: (added token id or None, piece), nearly always a few.
type Splits = smallvec::SmallVec<[(Option<u32>, Piece); 4]>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TruncationStrategy {
    LongestFirst,
    OnlyFirst,
    OnlySecond,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    pub max_length: usize,
    pub stride: usize,
    pub strategy: TruncationStrategy,
    pub direction: Direction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaddingStrategy {
    BatchLongest,
    Fixed(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Padding {
    pub strategy: PaddingStrategy,
    pub direction: Direction,
    pub pad_to_multiple_of: Option<usize>,
    pub pad_id: u32,
    pub pad_type_id: u32,
    pub pad_token: String,
}

/// How offsets are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offsets {
    /// Unicode code points of the input (what HF's Python API returns).
    Char,
    Byte,
    /// Not computed (ids only: faster).
    None,
}

/// What one call asks for beyond the pipeline itself.
#[derive(Debug, Clone, Copy)]
pub struct EncodeOptions<'a> {
    pub add_special_tokens: bool,
    pub offsets: Offsets,
    pub truncation: Option<&'a Truncation>,
    pub padding: Option<&'a Padding>,
}

#[derive(Debug, Clone)]
pub struct Tokenizer {
    pub normalizer: Option<Normalizer>,
    pub pre_tokenizer: Option<PreTokenizer>,
    pub model: Model,
    pub post_processor: Option<PostProcessor>,
    pub decoder: Option<Decoder>,
    pub added: AddedVocab,
    pub truncation: Option<Truncation>,
    pub padding: Option<Padding>,
    byte_level: bool,
    /// What it was built from, for `to_json`.
    json: Source,
}

/// A tokenizer's tokenizer.json, for `to_json`: the text it was read from, parsed again by the
/// rare `save` (cl100k's parsed tree, 100k vocabulary entries and 100k merges as JSON values,
/// held ~23 MB), or the tree it was built from (converted from another format; kept as it is, as
/// a float's text read back by `serde_json` can be one ulp off).
#[derive(Debug, Clone)]
enum Source {
    Text(Arc<str>),
    Tree(Arc<Value>),
}

/// Input of one sequence: a string, or words already split.
pub enum Input<'a> {
    Text(&'a str),
    Words(&'a [String]),
}

impl Tokenizer {
    pub fn from_json_str(s: &str) -> Result<Self, TokenizeError> {
        let sections = json_sections::sections(s).map_err(|e| json_sections::invalid(&e))?;
        let mut top = serde_json::Map::new();
        let mut model = None;
        for (key, raw) in sections {
            // A repeated key: the last one holds, as in a `Value` object.
            top.remove(&key);
            if key == "model" {
                model = Some(raw);
            } else {
                let v = serde_json::from_str(raw.get()).map_err(|e| json_sections::invalid(&e))?;
                top.insert(key, v);
            }
        }
        let model = match model.map(|raw| (raw, json_sections::ModelSection::read(raw))) {
            Some((_, Ok(m))) => Some(config::model_of(&m.fields, m.vocab, m.merges)?),
            // Not an object: `config` says what is wrong with it, as for any other section.
            Some((raw, Err(_))) => {
                let v: Value =
                    serde_json::from_str(raw.get()).map_err(|e| json_sections::invalid(&e))?;
                Some(config::model(&v)?)
            }
            None => None,
        };
        Self::build(&Value::Object(top), model, Source::Text(s.into()))
    }

    pub fn from_json(json: Value) -> Result<Self, TokenizeError> {
        // Built from the tree, which it then keeps (an empty text meanwhile).
        let mut tok = Self::build(&json, None, Source::Text("".into()))?;
        tok.json = Source::Tree(Arc::new(json));
        Ok(tok)
    }

    /// The tokenizer of `json` (with its model, if that was read apart), from `source`.
    fn build(json: &Value, model: Option<Model>, source: Source) -> Result<Self, TokenizeError> {
        let null = Value::Null;
        let get = |k: &str| json.get(k).unwrap_or(&null);
        let normalizer = config::normalizer(get("normalizer"), "normalizer")?;
        let pre_tokenizer = config::pre_tokenizer(get("pre_tokenizer"), "pre_tokenizer")?;
        let model = match model {
            Some(model) => model,
            None => config::model(get("model"))?,
        };
        let post_processor = config::post_processor(get("post_processor"), "post_processor")?;
        let decoder = config::decoder(get("decoder"), "decoder")?;
        let added = AddedVocab::new(
            config::added_tokens(get("added_tokens"))?,
            normalizer.as_ref(),
        );
        let truncation = config::truncation(get("truncation"))?;
        let padding = config::padding(get("padding"))?;
        let byte_level = pre_tokenizer
            .as_ref()
            .is_some_and(PreTokenizer::is_byte_level);
        Ok(Self {
            normalizer,
            pre_tokenizer,
            model,
            post_processor,
            decoder,
            added,
            truncation,
            padding,
            byte_level,
            json: source,
        })
    }

    /// A tokenizer from the bytes of a SentencePiece `.model` file: the pipeline transformers'
    /// converter builds from it (see `sentencepiece`).
    pub fn from_sentencepiece(bytes: &[u8]) -> Result<Self, TokenizeError> {
        let mut tok = Self::from_json(sentencepiece::tokenizer_json(bytes)?)?;
        if let Model::Unigram(u) = &mut tok.model {
            // SentencePiece's own float32 sums, so that near-ties fall its way, and its pieces
            // that text never matches (the converter's vocabulary lets text spell them).
            u.float32 = true;
            // User-defined pieces: SentencePiece runs one lattice over the whole text, where
            // their score makes it always take them; the converter isolates them with a Split
            // first, which restarts the float32 sums at each and breaks exact ties another way
            // (AI21's J2 model: whitespace pieces whose scores are multiples of one another).
            let user = sentencepiece::user_defined_scores(bytes)?;
            if !user.is_empty() {
                u.set_scores(&user);
                if let Some(PreTokenizer::Sequence(items)) = &mut tok.pre_tokenizer {
                    items.retain(|p| !matches!(p, PreTokenizer::Split { .. }));
                    if items.is_empty() {
                        tok.pre_tokenizer = None;
                    }
                }
            }
            u.hide_from_text(&sentencepiece::invisible_ids(bytes)?);
        }
        // SentencePiece's own normalization where the converter's differs (see spm_normalize).
        let mut sp = sentencepiece::normalizer(bytes)?;
        sp.converter = tok.normalizer.take().map(Box::new);
        tok.normalizer = Some(Normalizer::SentencePiece(std::sync::Arc::new(sp)));
        Ok(tok)
    }

    /// The tokenizer.json text, with the current padding, truncation and added tokens.
    #[must_use]
    pub fn to_json(
        &self,
        pretty: bool,
        truncation: Option<&Truncation>,
        padding: Option<&Padding>,
    ) -> String {
        let mut json: Value = match &self.json {
            // Parsed when the tokenizer was made, so it parses again.
            Source::Text(text) => serde_json::from_str(text).unwrap_or(Value::Null),
            Source::Tree(tree) => Value::clone(tree),
        };
        if let Some(obj) = json.as_object_mut() {
            obj.insert("truncation".into(), truncation_json(truncation));
            obj.insert("padding".into(), padding_json(padding));
            obj.insert(
                "added_tokens".into(),
                Value::Array(
                    self.added
                        .tokens
                        .iter()
                        .map(|t| {
                            serde_json::json!({
                                "id": t.id, "content": t.content, "single_word": t.single_word,
                                "lstrip": t.lstrip, "rstrip": t.rstrip, "normalized": t.normalized,
                                "special": t.special,
                            })
                        })
                        .collect(),
                ),
            );
        }
        if pretty {
            serde_json::to_string_pretty(&json).unwrap_or_default()
        } else {
            serde_json::to_string(&json).unwrap_or_default()
        }
    }

    #[must_use]
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.added
            .id_of(token)
            .or_else(|| self.model.token_to_id(token))
    }

    #[must_use]
    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        self.added
            .get(id)
            .map(|t| t.content.as_str())
            .or_else(|| self.model.id_to_token(id))
    }

    /// Vocabulary size, with added tokens unless `with_added` is false (HF's definition: the
    /// model's size plus the added tokens not in the model).
    #[must_use]
    pub fn vocab_size(&self, with_added: bool) -> usize {
        let base = self.model.vocab_len();
        if !with_added {
            return base;
        }
        base + self
            .added
            .tokens
            .iter()
            .filter(|t| self.model.token_to_id(&t.content).is_none())
            .count()
    }

    #[must_use]
    pub fn num_special_tokens_to_add(&self, is_pair: bool) -> usize {
        self.post_processor
            .as_ref()
            .map_or(0, |p| p.added_tokens(is_pair))
    }

    /// Adds tokens (HF's `add_tokens`): returns how many were new.
    pub fn add_tokens(&mut self, tokens: Vec<added::AddedToken>) -> usize {
        let mut next = self
            .added
            .tokens
            .iter()
            .map(|t| t.id)
            .max()
            .map_or(self.model.vocab_len() as u32, |m| {
                (m + 1).max(self.model.vocab_len() as u32)
            });
        let mut added = 0;
        for mut t in tokens {
            if t.content.is_empty() {
                continue;
            }
            if let Some(i) = self
                .added
                .tokens
                .iter()
                .position(|x| x.content == t.content)
            {
                if self.added.tokens[i].special == t.special
                    && self.added.tokens[i].normalized == t.normalized
                    && self.added.tokens[i].lstrip == t.lstrip
                    && self.added.tokens[i].rstrip == t.rstrip
                    && self.added.tokens[i].single_word == t.single_word
                {
                    continue;
                }
                t.id = self.added.tokens[i].id;
                self.added.tokens[i] = t;
                continue;
            }
            t.id = if let Some(id) = self.model.token_to_id(&t.content) {
                id
            } else {
                let id = next;
                next += 1;
                id
            };
            self.added.tokens.push(t);
            added += 1;
        }
        self.added.refresh(self.normalizer.as_ref());
        added
    }

    /// One sequence through added tokens, normalizer, pre-tokenizer and model (HF's
    /// `encode_single_sequence`), before post-processing.
    fn encode_sequence(
        &self,
        input: &Input<'_>,
        type_id: u32,
        offsets: Offsets,
    ) -> Result<Encoding, TokenizeError> {
        let mut enc = match input {
            Input::Text(text) => self.encode_text(text, None, type_id, offsets)?,
            Input::Words(words) => {
                let parts = words
                    .iter()
                    .enumerate()
                    .map(|(i, w)| self.encode_text(w, Some(i as u32), type_id, offsets))
                    .collect::<Result<Vec<_>, _>>()?;
                Encoding::merge(parts, false)
            }
        };
        if offsets == Offsets::None {
            // HF's `OffsetType::None` (`encode_batch_fast`) keeps only the ids of the sequence:
            // every token string empty, no word, type id 0 (the post-processor may set it).
            enc.keep_ids_only();
        }
        Ok(enc)
    }

    /// Added tokens cut out (raw ones, then normalized ones after normalization): the input as
    /// (added token id or None, piece) in order, empty pieces dropped as HF drops them.
    /// `aligned`: whether the caller maps pieces back to the input (offsets, or pre-tokenizers
    /// that read alignments); without, normalized texts carry none.
    fn splits(&self, text: &str, sources: &mut Sources<'_>, aligned: bool) -> Splits {
        let mut splits = Splits::new();
        for (id, (s, e)) in self.added.find(text, false) {
            if s == e {
                continue;
            }
            let raw = Piece {
                src: 0,
                start: s as u32,
                end: e as u32,
            };
            if id.is_some() {
                splits.push((id, raw));
                continue;
            }
            let piece = match &self.normalizer {
                Some(n) => {
                    let out = if aligned {
                        n.apply_str(&text[s..e])
                    } else {
                        n.apply_str_unaligned(&text[s..e])
                    };
                    match out {
                        Outcome::Changed(norm) => sources.add(s, norm),
                        Outcome::Bytewise(norm) => sources.add_bytewise(s, norm),
                        Outcome::Unaligned(norm) => sources.add_unaligned(s, norm),
                        Outcome::Unchanged => raw,
                    }
                }
                None => raw,
            };
            if self.added.has_normalized() {
                for (id, (a, b)) in self.added.find(sources.text(piece), true) {
                    if a < b {
                        splits.push((
                            id,
                            Piece {
                                src: piece.src,
                                start: piece.start + a as u32,
                                end: piece.start + b as u32,
                            },
                        ));
                    }
                }
            } else if piece.start < piece.end {
                splits.push((None, piece));
            }
        }
        splits
    }

    /// The pre-tokenizer's pieces of one text split, into `pieces`.
    #[inline]
    fn pre_tokenize(&self, sources: &mut Sources<'_>, piece: Piece, pieces: &mut Vec<Piece>) {
        pieces.clear();
        pieces.push(piece);
        if let Some(pt) = &self.pre_tokenizer {
            pt.run(sources, pieces);
        }
    }

    /// Prefetches the model's cache entry of the piece `PREFETCH_RUN` after piece `i` (and at
    /// `i == 0`, of the first ones), so that cache misses of consecutive pieces overlap (see
    /// `Bpe::prefetch`).
    #[inline]
    fn prefetch(
        &self,
        sources: &Sources<'_>,
        pieces: &[Piece],
        i: usize,
        scratch: &mut bpe::Scratch,
    ) {
        let (Model::Bpe(bpe), true) = (&self.model, self.byte_level) else {
            return;
        };
        let first = if i == 0 { 0 } else { i + PREFETCH_RUN };
        for q in pieces.iter().take(i + PREFETCH_RUN + 1).skip(first) {
            let bytes = sources.text(*q).as_bytes();
            if bytes.len() >= 2 {
                bpe.prefetch(bytes, scratch);
            }
        }
    }

    /// Pre-tokenizes `piece` (into `pieces`) and runs the model on each resulting piece, with
    /// the cache sets of the pieces ahead prefetched: `f(sources, piece, tokens)` gets each
    /// piece's (id, byte length) tokens. The general loop of both `encode_ids` and the full
    /// encode, which differ only in what they keep of each token.
    #[inline]
    fn piece_tokens(
        &self,
        sources: &mut Sources<'_>,
        piece: Piece,
        pieces: &mut Vec<Piece>,
        tokens: &mut Vec<(u32, u32)>,
        scratch: &mut bpe::Scratch,
        mut f: impl FnMut(&Sources<'_>, Piece, &[(u32, u32)]),
    ) -> Result<(), TokenizeError> {
        self.pre_tokenize(sources, piece, pieces);
        for (i, p) in pieces.iter().enumerate() {
            self.prefetch(sources, pieces, i, scratch);
            tokens.clear();
            self.model_tokens(sources, *p, tokens, scratch)?;
            f(sources, *p, tokens);
        }
        Ok(())
    }

    /// The model's tokens of one piece, as (id, byte length) into `tokens`.
    #[inline]
    fn model_tokens(
        &self,
        sources: &Sources<'_>,
        p: Piece,
        tokens: &mut Vec<(u32, u32)>,
        scratch: &mut bpe::Scratch,
    ) -> Result<(), TokenizeError> {
        self.model
            .tokenize(sources.text(p), self.byte_level, tokens, scratch)
    }

    /// The known split and byte-level BPE of a tokenizer that the fused ids-only loop runs
    /// (no normalizer, a plain known split, BPE), if it is one.
    fn fused(&self) -> Option<(fastsplit::Known, &bpe::Bpe)> {
        self.normalizer
            .is_none()
            .then(|| self.fused_split())
            .flatten()
    }

    /// `fused` whatever the normalizer: `encode_ids` runs the loop on the units `splits` gives,
    /// already normalized (Qwen2's NFC is the common case: without this, Qwen files took the
    /// general loop at a third of the speed). The long-text path cuts the raw text, so it
    /// needs no normalizer at all (`fused`).
    fn fused_split(&self) -> Option<(fastsplit::Known, &bpe::Bpe)> {
        match (&self.pre_tokenizer, &self.model) {
            (Some(pt), Model::Bpe(bpe)) => pt.plain_known_split().map(|k| (k, bpe)),
            _ => None,
        }
    }

    /// Each pre-tokenizer (as written in the file) with the engine that runs it: "hand-written
    /// cl100k", "pcre2-jit", "onig fallback (why)", ...
    pub fn describe_pre_tokenizers(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(pt) = &self.pre_tokenizer {
            pt.describe(&mut out);
        }
        out
    }

    /// Which loop `encode_ids` runs: one scan that tokenizes each piece as it is found
    /// ("fused"), or pre-tokenize then tokenize ("general").
    pub fn encode_path(&self) -> &'static str {
        if self.fused_split().is_some() {
            "fused, hand-written split"
        } else if self.fused_pattern().is_some() {
            "fused, regex split"
        } else {
            "general"
        }
    }

    /// The regex splits and byte-level BPE of a tokenizer whose pre-tokenizer is fused
    /// regex Splits (on PCRE2 or Oniguruma) and the plain byte-level step (o200k, Tekken,
    /// DeepSeek and most byte-level files): the fused loop runs them as it runs the known
    /// patterns, on the units `splits` has normalized.
    fn fused_pattern(&self) -> Option<(RegexSplits<'_>, &bpe::Bpe)> {
        match (&self.pre_tokenizer, &self.model) {
            (Some(pt), Model::Bpe(bpe)) => pt.plain_regex_splits().map(|s| (RegexSplits(s), bpe)),
            _ => None,
        }
    }

    /// Ids alone of one text, post-processed and truncated like `encode` does it, without
    /// building an `Encoding` (no offsets, words or token strings: a fraction of the memory).
    /// `None` when the post-processor is one this lean path does not know (callers then use
    /// `encode`).
    pub fn encode_ids(
        &self,
        text: &str,
        add_special_tokens: bool,
        truncation: Option<&Truncation>,
    ) -> Result<Option<Vec<u32>>, TokenizeError> {
        let Some((head, tail)) = self.single_specials(add_special_tokens) else {
            return Ok(None);
        };
        let mut sources = Sources::new(text);
        // The fused loops read the normalized texts alone; the general one may pre-tokenize
        // with alignments (a Metaspace prepend).
        let fused = self.fused_split().is_some() || self.fused_pattern().is_some();
        let splits = self.splits(text, &mut sources, !fused);
        // Room for one token per 3 bytes: a multilingual corpus averages 3.2 (CJK less), and
        // growing the vector mid-text copied it (memmove was 4% of the profile). Plus the room
        // `HotCache::hits` reserves past the end for a run's ids, or a short text's first run
        // would grow it every call.
        let mut ids =
            Vec::with_capacity(text.len() / 3 + 8 + PREFETCH_RUN * piece_cache::HOT_TOKENS);
        ids.extend_from_slice(&head);
        // Scratch for the pieces past the small caches (none, in most short texts).
        let mut tokens: Vec<(u32, u32)> = Vec::new();
        if let Some((known, bpe)) = self.fused_split() {
            let units = splits
                .into_iter()
                .map(|(id, piece)| (id, sources.text(piece)));
            fused_ids(known, bpe, units, &mut ids, &mut tokens)?;
        } else if let Some((pattern, bpe)) = self.fused_pattern() {
            let units = splits
                .into_iter()
                .map(|(id, piece)| (id, sources.text(piece)));
            fused_ids(pattern, bpe, units, &mut ids, &mut tokens)?;
        } else {
            bpe::with_scratch(|scratch| -> Result<(), TokenizeError> {
                // The thread's piece buffer, so long texts do not allocate (and fault in) a new one
                // per call.
                let mut pieces = std::mem::take(&mut scratch.pieces);
                let run = || -> Result<(), TokenizeError> {
                    for (id, piece) in splits {
                        if let Some(id) = id {
                            ids.push(id);
                            continue;
                        }
                        self.piece_tokens(
                            &mut sources,
                            piece,
                            &mut pieces,
                            &mut tokens,
                            scratch,
                            |_, _, tokens| ids.extend(tokens.iter().map(|t| t.0)),
                        )?;
                    }
                    Ok(())
                };
                let result = run();
                pieces.clear();
                scratch.pieces = pieces;
                result
            })?;
        }
        finish_ids(ids, head.len(), &tail, truncation).map(Some)
    }

    /// The special ids the post-processor puts before and after a single sequence, if it is one
    /// that only adds ids (no offset trimming matters for ids).
    fn single_specials(&self, add_special_tokens: bool) -> Option<(Vec<u32>, Vec<u32>)> {
        fn walk(p: &PostProcessor, add: bool, head: &mut Vec<u32>, tail: &mut Vec<u32>) -> bool {
            match p {
                PostProcessor::ByteLevel { .. } => true,
                PostProcessor::Template {
                    single, special, ..
                } => {
                    if !add {
                        return true;
                    }
                    let mut seen_seq = false;
                    for piece in single {
                        match piece {
                            postprocess::TemplatePiece::Sequence { .. } => seen_seq = true,
                            postprocess::TemplatePiece::Special { id, .. } => {
                                let ids = &special[id].ids;
                                if seen_seq {
                                    tail.extend(ids);
                                } else {
                                    head.extend(ids);
                                }
                            }
                        }
                    }
                    true
                }
                PostProcessor::Bert { sep, cls } | PostProcessor::Roberta { sep, cls, .. } => {
                    if add {
                        head.push(cls.1);
                        tail.push(sep.1);
                    }
                    true
                }
                PostProcessor::Sequence(items) => {
                    // Only ids-neutral processors may precede one that adds specials.
                    items.iter().all(|i| walk(i, add, head, tail))
                        && items
                            .iter()
                            .filter(|i| !matches!(i, PostProcessor::ByteLevel { .. }))
                            .count()
                            <= 1
                }
            }
        }
        let (mut head, mut tail) = (Vec::new(), Vec::new());
        match &self.post_processor {
            None => Some((head, tail)),
            Some(p) => walk(p, add_special_tokens, &mut head, &mut tail).then_some((head, tail)),
        }
    }

    fn encode_text(
        &self,
        text: &str,
        word: Option<u32>,
        type_id: u32,
        offsets: Offsets,
    ) -> Result<Encoding, TokenizeError> {
        let mut sources = Sources::new(text);
        let splits = self.splits(text, &mut sources, true);

        // Byte-level BPE averages 3-4 bytes a token on text; a quarter of the length avoids most
        // regrowth of the seven vectors.
        let mut enc = Encoding::with_capacity(text.len() / 4 + 4);
        // Scratch for the pieces past the small caches (none, in most short texts).
        let mut tokens: Vec<(u32, u32)> = Vec::new();
        let mut pieces: Vec<Piece> = Vec::with_capacity(text.len() / 4 + 1);
        let mut word_idx = 0u32;
        let conv = CharOffsets::new(text, offsets);
        bpe::with_scratch(|scratch| -> Result<(), TokenizeError> {
            for (id, piece) in splits {
                if let Some(id) = id {
                    let o = conv.convert(sources.original(
                        piece,
                        0,
                        (piece.end - piece.start) as usize,
                    ));
                    let value = sources.text(piece);
                    enc.push(id, Some(value), o, Some(word.unwrap_or(word_idx)), type_id);
                    word_idx += 1;
                    continue;
                }
                self.piece_tokens(
                    &mut sources,
                    piece,
                    &mut pieces,
                    &mut tokens,
                    scratch,
                    |sources, p, tokens| {
                        let mut at = 0usize;
                        for &(tid, len) in tokens {
                            let span = (len & !unigram::FLAGS) as usize;
                            let o = if offsets == Offsets::None {
                                (0, 0)
                            } else {
                                conv.convert(sources.original(p, at, at + span))
                            };
                            let value = (len & unigram::RAW_TEXT != 0)
                                .then(|| &sources.text(p)[at..at + span]);
                            if len & unigram::SAME_SPAN == 0 {
                                at += span;
                            }
                            enc.push(tid, value, o, Some(word.unwrap_or(word_idx)), type_id);
                        }
                        word_idx += 1;
                    },
                )?;
            }
            Ok(())
        })?;
        Ok(enc)
    }

    /// Encodes one input or a pair, then truncates, post-processes and pads (HF's `encode`).
    pub fn encode(
        &self,
        a: &Input<'_>,
        b: Option<&Input<'_>>,
        opts: &EncodeOptions<'_>,
    ) -> Result<Encoding, TokenizeError> {
        let enc = self.encode_sequence(a, 0, opts.offsets)?;
        let pair = b
            .map(|b| self.encode_sequence(b, 1, opts.offsets))
            .transpose()?;
        self.post_process(enc, pair, opts)
    }

    /// Truncates, post-processes and pads encoded sequences (HF's `post_process`).
    pub fn post_process(
        &self,
        enc: Encoding,
        pair: Option<Encoding>,
        opts: &EncodeOptions<'_>,
    ) -> Result<Encoding, TokenizeError> {
        let (enc, pair) = match opts.truncation {
            Some(t) => {
                let n_added = if opts.add_special_tokens {
                    self.num_special_tokens_to_add(pair.is_some())
                } else {
                    0
                };
                // HF subtracts with wrap-around (its release builds do not check): a max_length
                // below the special tokens' count then means no truncation at all. Kept for parity.
                let max_length = t.max_length.wrapping_sub(n_added);
                truncate_encodings(
                    enc,
                    pair,
                    &Truncation {
                        max_length,
                        ..t.clone()
                    },
                )?
            }
            None => (enc, pair),
        };
        let vocab = |id: u32| self.model.id_to_token(id);
        let mut out = match &self.post_processor {
            Some(p) => p.process(enc, pair, opts.add_special_tokens, &vocab)?,
            None => match pair {
                Some(mut p) => {
                    let mut e = enc;
                    e.set_sequence_id(0);
                    p.set_sequence_id(1);
                    Encoding::merge(vec![e, p], false)
                }
                None => enc,
            },
        };
        if let Some(p) = opts.padding {
            pad_encodings(std::slice::from_mut(&mut out), p);
        }
        Ok(out)
    }

    /// Encodes many inputs (in parallel on the rayon pool when `parallel`), then pads as a batch.
    pub fn encode_batch(
        &self,
        inputs: &[(Input<'_>, Option<Input<'_>>)],
        opts: &EncodeOptions<'_>,
        parallel: bool,
    ) -> Result<Vec<Encoding>, TokenizeError> {
        use rayon::prelude::*;
        let one = |(a, b): &(Input<'_>, Option<Input<'_>>)| self.encode(a, b.as_ref(), opts);
        let mut out: Vec<Encoding> = if parallel {
            inputs.par_iter().map(one).collect::<Result<_, _>>()?
        } else {
            inputs.iter().map(one).collect::<Result<_, _>>()?
        };
        if let Some(p) = opts.padding {
            pad_encodings(&mut out, p);
        }
        Ok(out)
    }

    /// Ids back to text (HF's `decode`).
    #[must_use]
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> String {
        let tokens: Vec<String> = ids
            .iter()
            .filter_map(|&id| match self.added.decode_str(id) {
                Some((_, true)) if skip_special_tokens => None,
                Some((s, _)) => Some(s.to_owned()),
                None => self.model.id_to_token(id).map(str::to_owned),
            })
            .collect();
        match &self.decoder {
            Some(d) => d.decode(tokens),
            None => tokens.join(" "),
        }
    }

    /// The string of token `i` of `enc`.
    #[must_use]
    pub fn token_str<'a>(&'a self, enc: &'a Encoding, i: usize) -> &'a str {
        enc.token(i)
            .or_else(|| self.model.id_to_token(enc.ids[i]))
            .unwrap_or("")
    }
}

/// Byte offsets of the input to char offsets (or left as bytes).
/// Byte offsets of the input to char offsets (or left as bytes). Offsets arrive nearly in
/// order, so a cursor that counts chars between consecutive positions does the conversion in one
/// pass over the text, with no per-byte table.
struct CharOffsets<'a> {
    text: &'a str,
    chars: bool,
    /// (byte position, its char index), always on a char boundary.
    cursor: std::cell::Cell<(usize, u32)>,
}

impl<'a> CharOffsets<'a> {
    fn new(text: &'a str, kind: Offsets) -> Self {
        Self {
            text,
            chars: kind == Offsets::Char && !text.is_ascii(),
            cursor: std::cell::Cell::new((0, 0)),
        }
    }

    fn char_index(&self, byte: usize) -> u32 {
        let (at, n) = self.cursor.get();
        let n = if byte >= at {
            n + self.text[at..byte].chars().count() as u32
        } else {
            n - self.text[byte..at].chars().count() as u32
        };
        self.cursor.set((byte, n));
        n
    }

    fn convert(&self, (s, e): (usize, usize)) -> (u32, u32) {
        if !self.chars {
            return (s as u32, e as u32);
        }
        (self.char_index(s), self.char_index(e))
    }
}

/// The ids of text units (an added token's id, or text to split and tokenize) through the fused
/// loop: one scan per text, each match tokenized as the splitter finds it, with no piece list
/// and no pre-tokenizer or model dispatch per piece. `tokens` is scratch space.
fn fused_ids<'t>(
    known: impl PieceSplit,
    bpe: &bpe::Bpe,
    units: impl Iterator<Item = (Option<u32>, &'t str)>,
    ids: &mut Vec<u32>,
    tokens: &mut Vec<(u32, u32)>,
) -> Result<(), TokenizeError> {
    bpe::with_scratch(|scratch| -> Result<(), TokenizeError> {
        let mut failed = Ok(());
        // Matches go through in runs: the run's hot-cache sets are prefetched first, so their
        // memory latencies overlap (see `Bpe::prefetch`). The thread's buffer, so a call does
        // not zero a fresh one (a short call's memset showed).
        let mut run = scratch
            .run
            .take()
            .unwrap_or_else(|| Box::new([bpe::Pending::default(); PREFETCH_RUN]));
        for (id, text) in units {
            if let Some(id) = id {
                ids.push(id);
                continue;
            }
            let bytes = text.as_bytes();
            let mut n = 0;
            known.pieces(text, |s, e| {
                run[n] = bpe.pending(bytes, s, e, scratch);
                n += 1;
                if n == PREFETCH_RUN {
                    if failed.is_ok() {
                        failed = bpe.ids_run(bytes, &run[..], ids, tokens, scratch);
                    }
                    n = 0;
                }
            });
            if failed.is_ok() {
                failed = bpe.ids_run(bytes, &run[..n], ids, tokens, scratch);
            }
            if failed.is_err() {
                break;
            }
        }
        scratch.run = Some(run);
        failed
    })
}

/// What the fused loop splits a text with: pieces that tile it, in order.
trait PieceSplit: Copy {
    fn pieces(self, text: &str, f: impl FnMut(usize, usize));
}

impl PieceSplit for fastsplit::Known {
    #[inline]
    fn pieces(self, text: &str, f: impl FnMut(usize, usize)) {
        self.for_each(text, f);
    }
}

/// Regex Splits (`PreTokenizer::plain_regex_splits`), each splitting the pieces of the one
/// before, as HF's Sequence runs them.
#[derive(Clone, Copy)]
struct RegexSplits<'a>(&'a [pretokenize::PreTokenizer]);

impl PieceSplit for RegexSplits<'_> {
    #[inline]
    fn pieces(self, text: &str, mut f: impl FnMut(usize, usize)) {
        let Some((first, rest)) = self.0.split_first() else {
            return;
        };
        if rest.is_empty() {
            first.fused_pieces(text, f);
        } else {
            first.fused_pieces(text, |s, e| nested_pieces(rest, text, s, e, &mut f));
        }
    }
}

/// The pieces of `text[s..e]` by `splits` one after another, as offsets in `text`.
fn nested_pieces(
    splits: &[pretokenize::PreTokenizer],
    text: &str,
    s: usize,
    e: usize,
    f: &mut dyn FnMut(usize, usize),
) {
    match splits.split_first() {
        None => f(s, e),
        Some((first, rest)) => first.fused_pieces(&text[s..e], |a, b| {
            nested_pieces(rest, text, s + a, s + b, f);
        }),
    }
}

/// `encode_ids`' last step: the body (`ids` past the `head` special ids) truncated, then the
/// `tail` special ids.
fn finish_ids(
    mut ids: Vec<u32>,
    head: usize,
    tail: &[u32],
    truncation: Option<&Truncation>,
) -> Result<Vec<u32>, TokenizeError> {
    let body = head..ids.len();
    if let Some(t) = truncation {
        let n_added = head + tail.len();
        let keep = t.max_length.wrapping_sub(n_added);
        if body.len() > keep {
            if keep > 0 && t.stride >= keep {
                return Err(TokenizeError::Encode(format!(
                    "truncation stride ({}) must be smaller than the length a sequence is cut to ({keep})",
                    t.stride
                )));
            }
            match t.direction {
                Direction::Right => ids.truncate(head + keep),
                Direction::Left => {
                    ids.drain(head..body.end - keep);
                }
            }
        }
    }
    ids.extend_from_slice(tail);
    Ok(ids)
}

fn truncate_encodings(
    mut enc: Encoding,
    mut pair: Option<Encoding>,
    t: &Truncation,
) -> Result<(Encoding, Option<Encoding>), TokenizeError> {
    let cut = |e: &mut Encoding, n: usize| {
        e.truncate(n, t.stride, t.direction)
            .map_err(TokenizeError::Encode)
    };
    if t.max_length == 0 {
        cut(&mut enc, 0)?;
        if let Some(p) = pair.as_mut() {
            cut(p, 0)?;
        }
        return Ok((enc, pair));
    }
    let total = enc.len() + pair.as_ref().map_or(0, Encoding::len);
    if total <= t.max_length {
        return Ok((enc, pair));
    }
    let to_remove = total - t.max_length;
    match t.strategy {
        TruncationStrategy::LongestFirst => {
            if let Some(p) = pair.as_mut() {
                let (mut n1, mut n2) = (enc.len(), p.len());
                let swap = n1 > n2;
                if swap {
                    std::mem::swap(&mut n1, &mut n2);
                }
                if n1 > t.max_length {
                    n2 = n1;
                } else {
                    n2 = n1.max(t.max_length - n1);
                }
                if n1 + n2 > t.max_length {
                    n1 = t.max_length / 2;
                    n2 = n1 + t.max_length % 2;
                }
                if swap {
                    std::mem::swap(&mut n1, &mut n2);
                }
                cut(&mut enc, n1)?;
                cut(p, n2)?;
            } else {
                cut(&mut enc, total - to_remove)?;
            }
        }
        TruncationStrategy::OnlyFirst | TruncationStrategy::OnlySecond => {
            let target = if t.strategy == TruncationStrategy::OnlyFirst {
                &mut enc
            } else {
                pair.as_mut().ok_or_else(|| {
                    TokenizeError::Encode(
                        "truncation strategy only_second needs a pair of sequences".into(),
                    )
                })?
            };
            let n = target.len();
            if n > to_remove {
                cut(target, n - to_remove)?;
            } else {
                return Err(TokenizeError::Encode(
                    "the sequence to truncate is too short to respect max_length; raise max_length or use \
                     strategy longest_first"
                        .into(),
                ));
            }
        }
    }
    Ok((enc, pair))
}

fn pad_encodings(encs: &mut [Encoding], p: &Padding) {
    if encs.is_empty() {
        return;
    }
    let mut target = match p.strategy {
        PaddingStrategy::Fixed(n) => n,
        PaddingStrategy::BatchLongest => encs.iter().map(Encoding::len).max().unwrap_or(0),
    };
    if let Some(m) = p.pad_to_multiple_of {
        if m > 0 && target % m > 0 {
            target += m - target % m;
        }
    }
    for e in encs {
        e.pad(target, p.pad_id, p.pad_type_id, &p.pad_token, p.direction);
    }
}

fn dir_str(d: Direction) -> &'static str {
    match d {
        Direction::Left => "Left",
        Direction::Right => "Right",
    }
}

fn truncation_json(t: Option<&Truncation>) -> Value {
    t.map_or(Value::Null, |t| {
        serde_json::json!({
            "direction": dir_str(t.direction),
            "max_length": t.max_length,
            "strategy": match t.strategy {
                TruncationStrategy::LongestFirst => "LongestFirst",
                TruncationStrategy::OnlyFirst => "OnlyFirst",
                TruncationStrategy::OnlySecond => "OnlySecond",
            },
            "stride": t.stride,
        })
    })
}

fn padding_json(p: Option<&Padding>) -> Value {
    p.map_or(Value::Null, |p| {
        serde_json::json!({
            "strategy": match p.strategy {
                PaddingStrategy::BatchLongest => serde_json::json!("BatchLongest"),
                PaddingStrategy::Fixed(n) => serde_json::json!({"Fixed": n}),
            },
            "direction": dir_str(p.direction),
            "pad_to_multiple_of": p.pad_to_multiple_of,
            "pad_id": p.pad_id,
            "pad_type_id": p.pad_type_id,
            "pad_token": p.pad_token,
        })
    })
}
