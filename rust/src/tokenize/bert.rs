//! BERT's text steps: the BertNormalizer (clean text, space around CJK ideographs, strip
//! accents, lowercase), StripAccents, Nmt, and the BertPreTokenizer's split.
//!
//! Every HF step here (`filter`, `map`, `lowercase`, the CJK `transform`) changes one char at a
//! time, and every byte of a char carries the same alignment, so each step is written as a
//! per-char rewrite that copies the char's alignment to what replaces it: the alignments HF's
//! `NormalizedString::transform` produces, without its (char, change) lists. Only NFD (inside
//! strip_accents) reorders marks across chars, and it runs through the shared `transform`.
use super::normalize::Normalized;
use super::pretokenize::{Piece, Sources};
use unicode_categories::UnicodeCategories;
use unicode_normalization_alignments::UnicodeNormalization;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BertNormalizer {
    pub clean_text: bool,
    pub handle_chinese_chars: bool,
    /// Already resolved: a null `strip_accents` in the file follows `lowercase`, as in HF.
    pub strip_accents: bool,
    pub lowercase: bool,
}

/// HF's `is_control`: Unicode category C* (as the `unicode_categories` crate tables have it),
/// except \t \n \r which count as whitespace.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

/// The CJK Unified Ideographs blocks BERT puts spaces around (not Hangul, Hiragana, Katakana).
fn is_chinese_char(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x2_0000..=0x2_A6DF
            | 0x2_A700..=0x2_B73F
            | 0x2_B740..=0x2_B81F
            | 0x2_B920..=0x2_CEAF
            | 0xF900..=0xFAFF
            | 0x2_F800..=0x2_FA1F
    )
}

/// Rebuilds `n` char by char: `f` pushes each char's replacement (zero or more chars) into the
/// buffer; every replacement char takes the old char's alignment.
fn per_char(n: &Normalized, mut f: impl FnMut(char, &mut Vec<char>)) -> Normalized {
    let mut text = String::with_capacity(n.text.len() + 8);
    let mut align = Vec::with_capacity(n.align.len() + 8);
    let mut buf = Vec::with_capacity(4);
    for (i, c) in n.text.char_indices() {
        buf.clear();
        f(c, &mut buf);
        let a = n.align[i];
        for &d in &buf {
            text.push(d);
            align.extend(std::iter::repeat_n(a, d.len_utf8()));
        }
    }
    Normalized { text, align }
}

impl BertNormalizer {
    /// `None` when the text is unchanged.
    #[must_use]
    pub fn apply(self, n: &Normalized) -> Option<Normalized> {
        if n.text.is_ascii() {
            return self.apply_ascii(n);
        }
        let (clean, chinese, lower) = (self.clean_text, self.handle_chinese_chars, self.lowercase);
        // Lowercasing comes after NFD and the mark filter, so it joins the first pass only when
        // accents stay.
        let lower_first = lower && !self.strip_accents;
        let mut out = per_char(n, |c, buf| {
            if clean && (c == '\0' || c == '\u{FFFD}' || is_control(c)) {
                return;
            }
            // HF's is_whitespace adds \t \n \r to White_Space, which has them already.
            let c = if clean && c.is_whitespace() { ' ' } else { c };
            if chinese && is_chinese_char(c) {
                buf.extend([' ', c, ' ']);
            } else if lower_first {
                buf.extend(c.to_lowercase());
            } else {
                buf.push(c);
            }
        });
        if self.strip_accents {
            if !out.text.is_ascii() {
                out = out.transform(out.text.nfd(), 0);
            }
            out = per_char(&out, |c, buf| {
                if c.is_mark_nonspacing() {
                } else if lower {
                    buf.extend(c.to_lowercase());
                } else {
                    buf.push(c);
                }
            });
        }
        Some(out)
    }

    /// ASCII input: no CJK, nothing for NFD to decompose and no marks, so only control bytes
    /// go, \t \n \r become spaces, and uppercase letters are lowered, all one byte for one byte.
    fn apply_ascii(self, n: &Normalized) -> Option<Normalized> {
        let bytes = n.text.as_bytes();
        let dropped = |b: u8| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b == 0x7F;
        let changes = |b: u8| {
            (self.clean_text && (dropped(b) || matches!(b, b'\t' | b'\n' | b'\r')))
                || (self.lowercase && b.is_ascii_uppercase())
        };
        if !bytes.iter().any(|&b| changes(b)) {
            return None;
        }
        let mut text = Vec::with_capacity(bytes.len());
        let mut align = Vec::with_capacity(bytes.len());
        for (i, &b) in bytes.iter().enumerate() {
            let mut b = b;
            if self.clean_text {
                if dropped(b) {
                    continue;
                }
                if matches!(b, b'\t' | b'\n' | b'\r') {
                    b = b' ';
                }
            }
            if self.lowercase {
                b = b.to_ascii_lowercase();
            }
            text.push(b);
            align.push(n.align[i]);
        }
        // SAFETY: only ASCII bytes were pushed.
        let text = unsafe { String::from_utf8_unchecked(text) };
        Some(Normalized { text, align })
    }
}

/// HF's StripAccents normalizer: combining marks removed (no NFD of its own).
#[must_use]
pub fn strip_accents(n: &Normalized) -> Option<Normalized> {
    use unicode_normalization_alignments::char::is_combining_mark;
    if !n.text.chars().any(is_combining_mark) {
        return None;
    }
    Some(per_char(n, |c, buf| {
        if !is_combining_mark(c) {
            buf.push(c);
        }
    }))
}

/// HF's Nmt normalizer: some control chars removed, some spacing chars made spaces.
#[must_use]
pub fn nmt(n: &Normalized) -> Option<Normalized> {
    let drop = |c: char| {
        matches!(
            c as u32,
            0x0001..=0x0008 | 0x000B | 0x000E..=0x001F | 0x007F | 0x008F | 0x009F
        )
    };
    let space = |c: char| {
        matches!(
            c as u32,
            0x0009 | 0x000A | 0x000C | 0x000D | 0x1680 | 0x200B
                ..=0x200F | 0x2028 | 0x2029 | 0x2581 | 0xFEFF | 0xFFFD
        )
    };
    if !n.text.chars().any(|c| drop(c) || space(c)) {
        return None;
    }
    Some(per_char(n, |c, buf| {
        if !drop(c) {
            buf.push(if space(c) { ' ' } else { c });
        }
    }))
}

/// HF's `is_bert_punc`: ASCII punctuation (which includes symbols like `$+<=>^`|~`) or Unicode
/// category P*.
#[inline]
pub fn is_bert_punc(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

/// The BertPreTokenizer: whitespace removed, each punctuation char a piece of its own (HF runs
/// the two as successive splits; one scan gives the same pieces).
pub fn split_pieces(sources: &Sources<'_>, pieces: &mut Vec<Piece>) {
    let mut out = Vec::with_capacity(pieces.len() * 8);
    for p in pieces.iter() {
        let text = sources.text(*p);
        let bytes = text.as_bytes();
        let piece = |s: usize, e: usize| Piece {
            src: p.src,
            start: p.start + s as u32,
            end: p.start + e as u32,
        };
        let mut word: Option<usize> = None;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            let (len, space, punc) = if b < 0x80 {
                (
                    1,
                    matches!(b, b' ' | b'\t'..=b'\r'),
                    b.is_ascii_punctuation(),
                )
            } else {
                let c = text[i..].chars().next().unwrap_or(' ');
                (c.len_utf8(), c.is_whitespace(), c.is_punctuation())
            };
            if space || punc {
                if let Some(s) = word.take() {
                    out.push(piece(s, i));
                }
                if punc {
                    out.push(piece(i, i + len));
                }
            } else if word.is_none() {
                word = Some(i);
            }
            i += len;
        }
        if let Some(s) = word {
            out.push(piece(s, bytes.len()));
        }
    }
    *pieces = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    const BERT: BertNormalizer = BertNormalizer {
        clean_text: true,
        handle_chinese_chars: true,
        strip_accents: true,
        lowercase: true,
    };

    #[test]
    fn cjk_gets_spaces_aligned_to_the_ideograph() {
        let n = BERT.apply(&Normalized::identity("a野b")).unwrap();
        assert_eq!(n.text, "a 野 b");
        assert_eq!(n.align[1], (1, 4));
        assert!(n.align[2..5].iter().all(|&a| a == (1, 4)));
        assert_eq!(n.align[5], (1, 4));
        assert_eq!(n.align[6], (4, 5));
    }

    #[test]
    fn accents_stripped_and_controls_removed() {
        let n = BERT.apply(&Normalized::identity("É\u{0}x\tY")).unwrap();
        assert_eq!(n.text, "ex y");
        assert_eq!(n.align, vec![(0, 2), (3, 4), (4, 5), (5, 6)]);
        let ascii = BERT.apply(&Normalized::identity("A\u{7}b\r")).unwrap();
        assert_eq!(ascii.text, "ab ");
        assert_eq!(ascii.align, vec![(0, 1), (2, 3), (3, 4)]);
        assert!(BERT.apply(&Normalized::identity("plain text")).is_none());
    }

    #[test]
    fn pre_tokenizer_splits_like_hf() {
        let s = "Hey friend!     How are you?!?";
        let sources = Sources::new(s);
        let mut pieces = vec![Piece {
            src: 0,
            start: 0,
            end: s.len() as u32,
        }];
        split_pieces(&sources, &mut pieces);
        let got: Vec<&str> = pieces.iter().map(|p| sources.text(*p)).collect();
        assert_eq!(
            got,
            ["Hey", "friend", "!", "How", "are", "you", "?", "!", "?"]
        );
    }
}
