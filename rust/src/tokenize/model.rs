//! The model step: one pre-tokenized piece to `(id, byte length)` tokens, for each model family.
use super::bpe::{Bpe, Scratch};
use super::bytelevel::BYTE_CHAR;
use super::unigram::{Unigram, FLAGS, SAME_SPAN};
use super::wordlevel::WordLevel;
use super::wordpiece::WordPiece;
use crate::error::TokenizeError;
use rustc_hash::FxHashMap;

// One per tokenizer and never moved on a hot path; boxing BPE (its byte tables make it large)
// would only add an indirection per piece.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Model {
    Bpe(Bpe),
    WordPiece(WordPiece),
    WordLevel(WordLevel),
    Unigram(Unigram),
}

impl Model {
    #[must_use]
    pub fn vocab(&self) -> &FxHashMap<String, u32> {
        match self {
            Self::Bpe(m) => &m.vocab,
            Self::WordPiece(m) => &m.vocab,
            Self::WordLevel(m) => &m.vocab,
            Self::Unigram(m) => &m.vocab,
        }
    }

    /// The model's vocabulary size (HF's `get_vocab_size`: a Unigram counts a token listed twice
    /// twice).
    #[must_use]
    pub fn vocab_len(&self) -> usize {
        match self {
            Self::Unigram(m) => m.pieces.len(),
            _ => self.vocab().len(),
        }
    }

    #[must_use]
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        match self {
            Self::Bpe(m) => m.token_to_id(token),
            Self::WordPiece(m) => m.token_to_id(token),
            Self::WordLevel(m) => m.token_to_id(token),
            Self::Unigram(m) => m.token_to_id(token),
        }
    }

    #[must_use]
    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        match self {
            Self::Bpe(m) => m.id_to_token(id),
            Self::WordPiece(m) => m.id_to_token(id),
            Self::WordLevel(m) => m.id_to_token(id),
            Self::Unigram(m) => m.id_to_token(id),
        }
    }

    /// Tokens of one piece. `byte_level`: the piece stands for its UTF-8 bytes.
    #[inline]
    pub fn tokenize(
        &self,
        piece: &str,
        byte_level: bool,
        out: &mut Vec<(u32, u32)>,
        scratch: &mut Scratch,
    ) -> Result<(), TokenizeError> {
        match self {
            Self::Bpe(m) if byte_level => m.tokenize_bytes(piece.as_bytes(), out, scratch),
            Self::Bpe(m) => m.tokenize_chars(piece, out, scratch),
            Self::WordPiece(m) if byte_level => byte_chars(piece, out, |s, o| m.tokenize(s, o)),
            Self::WordPiece(m) => m.tokenize_cached(piece, out, scratch),
            Self::WordLevel(m) if byte_level => byte_chars(piece, out, |s, o| m.tokenize(s, o)),
            Self::WordLevel(m) => m.tokenize(piece, out),
            Self::Unigram(m) if byte_level => byte_chars(piece, out, |s, o| {
                with_fresh_scratch(|sc| m.tokenize(s, o, sc))
            }),
            Self::Unigram(m) => m.tokenize(piece, out, scratch),
        }
    }
}

#[cold]
fn with_fresh_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    f(&mut Scratch::default())
}

/// A word model behind a ByteLevel pre-tokenizer sees the byte-level string (one char per byte
/// of the piece; BPE reads the bytes directly instead); its token lengths, counted in those
/// chars, are the piece's bytes.
#[cold]
fn byte_chars(
    piece: &str,
    out: &mut Vec<(u32, u32)>,
    tokenize: impl FnOnce(&str, &mut Vec<(u32, u32)>) -> Result<(), TokenizeError>,
) -> Result<(), TokenizeError> {
    let mapped: String = piece.bytes().map(|b| BYTE_CHAR[b as usize]).collect();
    let start = out.len();
    tokenize(&mapped, out)?;
    let mut at = 0usize;
    for t in &mut out[start..] {
        let flag = t.1 & FLAGS;
        let span = (t.1 & !FLAGS) as usize;
        let n = mapped[at..at + span].chars().count();
        if flag & SAME_SPAN == 0 {
            at += span;
        }
        t.1 = n as u32 | flag;
    }
    Ok(())
}
