//! Normalizers, with the alignment bookkeeping that lets every token map back to the original
//! text: each byte of the normalized text remembers the range of original bytes it came from.
//!
//! The alignment rules follow HF tokenizers' `NormalizedString::transform` exactly (they decide the
//! offsets users see): a char that replaces an old one takes the old char's range, a char that is
//! added takes the range of the byte just before it, or (0, 0) at the very start.
use super::normal_form::Form;
use super::pattern::Pattern;
use unicode_normalization_alignments::UnicodeNormalization;

/// A normalized text: `text`, and for each of its bytes the original byte range (relative to the
/// start of the text that was normalized).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    pub text: String,
    pub align: Vec<(u32, u32)>,
}

impl Normalized {
    /// The identity: every byte maps to the range of the char it belongs to.
    #[must_use]
    pub fn identity(s: &str) -> Self {
        let mut align = Vec::with_capacity(s.len());
        for (i, c) in s.char_indices() {
            let r = (i as u32, (i + c.len_utf8()) as u32);
            align.extend(std::iter::repeat_n(r, c.len_utf8()));
        }
        Self {
            text: s.to_owned(),
            align,
        }
    }

    /// Rebuilds the text from `(char, change)` pairs: change 0 replaces the next old char, a
    /// positive change adds a char, a negative change replaces the next old char and drops that
    /// many following ones. `initial_offset` old chars are dropped before the first pair.
    #[must_use]
    pub fn transform(
        &self,
        dest: impl IntoIterator<Item = (char, isize)>,
        initial_offset: usize,
    ) -> Self {
        let mut old = self.text.chars();
        let mut offset: usize = (&mut old).take(initial_offset).map(char::len_utf8).sum();
        let mut text = String::with_capacity(self.text.len());
        let mut align = Vec::with_capacity(self.align.len());
        let at = |i: usize| {
            self.align
                .get(i)
                .or(self.align.last())
                .copied()
                .unwrap_or((0, 0))
        };
        for (c, change) in dest {
            let a = if change > 0 {
                if offset < 1 {
                    (0, 0)
                } else {
                    at(offset - 1)
                }
            } else {
                at(offset)
            };
            if change <= 0 {
                offset += old.next().map_or(0, char::len_utf8);
            }
            if change < 0 {
                offset += (&mut old)
                    .take(change.unsigned_abs())
                    .map(char::len_utf8)
                    .sum::<usize>();
            }
            text.push(c);
            align.extend(std::iter::repeat_n(a, c.len_utf8()));
        }
        Self { text, align }
    }

    /// `s` added in front, every char of it (and the old first char) aligned to the first char.
    #[must_use]
    pub fn prepend(&self, s: &str) -> Self {
        let Some(first) = self.text.chars().next() else {
            return self.clone();
        };
        let dest = s
            .chars()
            .enumerate()
            .map(|(i, c)| (c, isize::from(i != 0)))
            .chain([(first, 1)]);
        let head = Self {
            text: first.to_string(),
            align: self.align[..first.len_utf8()].to_vec(),
        };
        let mut out = head.transform(dest, 0);
        out.text.push_str(&self.text[first.len_utf8()..]);
        out.align.extend_from_slice(&self.align[first.len_utf8()..]);
        out
    }
}

/// What normalizing an input text gave (see `Normalizer::apply_str`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Unchanged,
    /// ASCII in, ASCII out, byte `i` from byte `i`: no alignments needed.
    Bytewise(String),
    Changed(Normalized),
    /// The normalized text without alignments (`apply_str_ids`: the ids-only path reads none).
    Unaligned(String),
}

#[derive(Debug, Clone)]
pub enum Normalizer {
    Nfc,
    Nfd,
    Nfkc,
    Nfkd,
    Lowercase,
    Strip {
        left: bool,
        right: bool,
    },
    Replace {
        pattern: Pattern,
        content: String,
    },
    Prepend(String),
    Bert(super::bert::BertNormalizer),
    StripAccents,
    Nmt,
    Precompiled(std::sync::Arc<super::precompiled::Precompiled>),
    /// Models loaded from a `.model` file (see `spm_normalize`).
    SentencePiece(std::sync::Arc<super::spm_normalize::SentencePieceNormalizer>),
    /// Each byte of the UTF-8 text as its byte-level char (GPT-2's table); the chars of a
    /// multi-byte char after the first count as added (HF's `normalizers::ByteLevel`).
    ByteLevel,
    Sequence(Vec<Normalizer>),
}

impl Normalizer {
    /// Applies the normalizer. Returns `None` when the text is unchanged (the common case for
    /// ASCII input), so callers can keep the cheap identity mapping.
    #[must_use]
    pub fn apply(&self, n: &Normalized) -> Option<Normalized> {
        match self {
            // Text already in the form maps char for char to itself (see `normal_form`).
            Self::Nfc | Self::Nfd | Self::Nfkc | Self::Nfkd => {
                (!self.already_normal(&n.text)).then(|| self.to_form(n))
            }
            Self::Lowercase => {
                if n.text.is_ascii() && !n.text.bytes().any(|b| b.is_ascii_uppercase()) {
                    return None;
                }
                let dest: Vec<_> = n
                    .text
                    .chars()
                    .flat_map(|c| {
                        c.to_lowercase()
                            .enumerate()
                            .map(|(i, l)| (l, isize::from(i > 0)))
                    })
                    .collect();
                Some(n.transform(dest, 0))
            }
            Self::Strip { left, right } => strip(n, *left, *right),
            Self::Replace { pattern, content } => replace(n, pattern, content),
            Self::Prepend(s) => (!n.text.is_empty()).then(|| n.prepend(s)),
            Self::Bert(b) => b.apply(n),
            Self::StripAccents => super::bert::strip_accents(n),
            Self::Nmt => super::bert::nmt(n),
            Self::Precompiled(p) => p.apply(n),
            Self::SentencePiece(p) => p.apply(n),
            Self::ByteLevel => (!n.text.is_empty()).then(|| {
                let table = &*super::bytelevel::BYTE_CHAR;
                let dest = n.text.char_indices().flat_map(|(i, c)| {
                    n.text.as_bytes()[i..i + c.len_utf8()]
                        .iter()
                        .enumerate()
                        .map(|(k, &b)| (table[usize::from(b)], isize::from(k > 0)))
                });
                n.transform(dest.collect::<Vec<_>>(), 0)
            }),
            Self::Sequence(items) => {
                let mut cur: Option<Normalized> = None;
                for item in items {
                    if let Some(next) = item.apply(cur.as_ref().unwrap_or(n)) {
                        cur = Some(next);
                    }
                }
                cur
            }
        }
    }

    /// Normalizes an input text (whose alignment is the identity), without building
    /// alignments where the result maps byte for byte.
    #[must_use]
    pub fn apply_str(&self, s: &str) -> Outcome {
        match self {
            Self::Bert(b) => b.apply_str(s),
            // Most text is already in the form (Qwen2's NFC on any corpus): the check says so
            // without the alignment of every byte that an identity `Normalized` holds.
            Self::Nfc | Self::Nfd | Self::Nfkc | Self::Nfkd => {
                if self.already_normal(s) {
                    Outcome::Unchanged
                } else {
                    Outcome::Changed(self.to_form(&Normalized::identity(s)))
                }
            }
            Self::Lowercase if s.is_ascii() => {
                if s.bytes().any(|b| b.is_ascii_uppercase()) {
                    Outcome::Bytewise(s.to_ascii_lowercase())
                } else {
                    Outcome::Unchanged
                }
            }
            _ => self
                .apply(&Normalized::identity(s))
                .map_or(Outcome::Unchanged, Outcome::Changed),
        }
    }

    /// `apply_str` for a caller that reads no alignment (the fused ids-only loops): a Unicode
    /// normal form transforms only the segments of the text that change (see
    /// `normal_form::Form::normalized`).
    #[must_use]
    pub fn apply_str_unaligned(&self, s: &str) -> Outcome {
        match self.form() {
            Some(form) => form
                .normalized(s)
                .map_or(Outcome::Unchanged, Outcome::Unaligned),
            None => self.apply_str(s),
        }
    }

    /// The Unicode normal form this normalizer is, if it is one.
    fn form(&self) -> Option<Form> {
        match self {
            Self::Nfc => Some(Form::Nfc),
            Self::Nfd => Some(Form::Nfd),
            Self::Nfkc => Some(Form::Nfkc),
            Self::Nfkd => Some(Form::Nfkd),
            _ => None,
        }
    }

    /// `n` in this Unicode normal form (one of the four only).
    fn to_form(&self, n: &Normalized) -> Normalized {
        match self {
            Self::Nfc => n.transform(n.text.nfc(), 0),
            Self::Nfd => n.transform(n.text.nfd(), 0),
            Self::Nfkc => n.transform(n.text.nfkc(), 0),
            _ => n.transform(n.text.nfkd(), 0),
        }
    }

    /// Whether `s` is already in this Unicode normal form, so that normalizing changes nothing
    /// (see `normal_form`).
    fn already_normal(&self, s: &str) -> bool {
        self.form().is_some_and(|form| form.holds(s))
    }

    /// The normalized text alone (for added tokens' normalized forms).
    #[must_use]
    pub fn normalize_str(&self, s: &str) -> String {
        self.apply(&Normalized::identity(s))
            .map_or_else(|| s.to_owned(), |n| n.text)
    }
}

fn strip(n: &Normalized, left: bool, right: bool) -> Option<Normalized> {
    let leading = if left {
        n.text.chars().take_while(|c| c.is_whitespace()).count()
    } else {
        0
    };
    let trailing = if right {
        n.text
            .chars()
            .rev()
            .take_while(|c| c.is_whitespace())
            .count()
    } else {
        0
    };
    if leading == 0 && trailing == 0 {
        return None;
    }
    let count = n.text.chars().count();
    let keep_end = count.saturating_sub(trailing).max(leading);
    let dest: Vec<_> = n
        .text
        .chars()
        .enumerate()
        .filter(|(i, _)| *i >= leading && *i < keep_end)
        .map(|(_, c)| (c, 0))
        .collect();
    Some(n.transform(dest, leading))
}

/// Every `from` char replaced by `to` (HF's `NormalizedString::replace` with a char pattern): the
/// new chars take the range of the char they replace.
#[must_use]
pub fn replace_char(n: &Normalized, from: char, to: &str) -> Normalized {
    let mut text = String::with_capacity(n.text.len() + to.len() * 4);
    let mut align = Vec::with_capacity(n.align.len() + to.len() * 4);
    for (i, c) in n.text.char_indices() {
        let w = c.len_utf8();
        if c == from {
            text.push_str(to);
            align.extend(std::iter::repeat_n(n.align[i + w - 1], to.len()));
        } else {
            text.push(c);
            align.extend_from_slice(&n.align[i..i + w]);
        }
    }
    Normalized { text, align }
}

fn replace(n: &Normalized, pattern: &Pattern, content: &str) -> Option<Normalized> {
    let matches = pattern.find_matches(&n.text);
    if !matches.iter().any(|m| m.1) {
        return None;
    }
    let mut text = String::with_capacity(n.text.len());
    let mut align = Vec::with_capacity(n.align.len());
    for ((start, end), is_match) in matches {
        if is_match {
            // Replacement chars are "added" after the match's chars are removed: each takes the
            // range of the match's last byte.
            let a = if end >= 1 { n.align[end - 1] } else { (0, 0) };
            text.push_str(content);
            align.extend(std::iter::repeat_n(a, content.len()));
        } else {
            text.push_str(&n.text[start..end]);
            align.extend_from_slice(&n.align[start..end]);
        }
    }
    Some(Normalized { text, align })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nfkc_and_lowercase_keep_alignments() {
        let n = Normalized::identity("ﬁÉ");
        let out = Normalizer::Sequence(vec![Normalizer::Nfkc, Normalizer::Lowercase])
            .apply(&n)
            .unwrap();
        assert_eq!(out.text, "fié");
        assert_eq!(out.align[0], (0, 3));
        assert_eq!(out.align[1], (0, 3));
        assert_eq!(out.align[2], (3, 5));
    }

    #[test]
    fn byte_level_maps_every_byte() {
        // HF's own example (normalizers/byte_level.rs).
        let n = Normalizer::ByteLevel
            .apply(&Normalized::identity("Hello 我今天能为你做什么"))
            .unwrap();
        assert_eq!(n.text, "HelloĠæĪĳä»Ĭå¤©èĥ½ä¸ºä½łåģļä»Ģä¹Ī");
        // The three chars of "我" all map back to it.
        let i = "HelloĠ".len();
        assert!(n.align[i..i + "æĪĳ".len()].iter().all(|&a| a == (6, 9)));
        assert!(Normalizer::ByteLevel
            .apply(&Normalized::identity(""))
            .is_none());
    }

    #[test]
    fn prepend_aligns_to_first_char() {
        let n = Normalized::identity("héllo").prepend("▁");
        assert_eq!(n.text, "▁héllo");
        assert!(n.align[..4].iter().all(|&a| a == (0, 1)));
        assert_eq!(n.align[4], (1, 3));
    }

    #[test]
    fn strip_both_sides() {
        let n = Normalizer::Strip {
            left: true,
            right: true,
        }
        .apply(&Normalized::identity("  ab "))
        .unwrap();
        assert_eq!(n.text, "ab");
        assert_eq!(n.align, vec![(2, 3), (3, 4)]);
    }

    #[test]
    fn replace_aligns_to_the_match() {
        let p = Pattern::literal(" ").unwrap();
        let n = Normalizer::Replace {
            pattern: p,
            content: "▁".into(),
        }
        .apply(&Normalized::identity("a b"))
        .unwrap();
        assert_eq!(n.text, "a▁b");
        assert_eq!(n.align, vec![(0, 1), (1, 2), (1, 2), (1, 2), (2, 3)]);
    }
}
