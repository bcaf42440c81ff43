//! BERT's text steps: the BertNormalizer (clean text, space around CJK ideographs, strip
//! accents, lowercase), StripAccents, Nmt, and the BertPreTokenizer's split.
//!
//! Every HF step here (`filter`, `map`, `lowercase`, the CJK `transform`) changes one char at a
//! time, and every byte of a char carries the same alignment, so each step is written as a
//! per-char rewrite that copies the char's alignment to what replaces it: the alignments HF's
//! `NormalizedString::transform` produces, without its (char, change) lists. Only NFD (inside
//! strip_accents) reorders marks across chars, and it runs through the shared `transform`.
use super::charclass;
use super::normalize::{Normalized, Outcome};
use super::pretokenize::{Piece, Sources};
use unicode_normalization_alignments::UnicodeNormalization;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BertNormalizer {
    pub clean_text: bool,
    pub handle_chinese_chars: bool,
    /// Already resolved: a null `strip_accents` in the file follows `lowercase`, as in HF.
    pub strip_accents: bool,
    pub lowercase: bool,
}

/// ASCII bytes the clean_text step removes: controls other than \t \n \r (NUL among them).
#[inline]
fn is_dropped(b: u8) -> bool {
    (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b == 0x7F
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

/// Where a per-char rewrite writes: each char pushed takes the alignment of the old char being
/// rewritten.
struct Emit {
    text: String,
    align: Vec<(u32, u32)>,
    at: (u32, u32),
}

impl Emit {
    #[inline]
    fn push(&mut self, c: char) {
        self.text.push(c);
        for _ in 0..c.len_utf8() {
            self.align.push(self.at);
        }
    }
}

/// Rebuilds `n` char by char: `f` emits each char's replacement (zero or more chars).
fn per_char(n: &Normalized, f: impl FnMut(char, &mut Emit)) -> Normalized {
    per_char_of(&n.text, Some(&n.align), f)
}

/// `per_char` on a text with the given alignments, or the identity's (an input text: no
/// alignment table to build first).
fn per_char_of(
    text: &str,
    align: Option<&[(u32, u32)]>,
    mut f: impl FnMut(char, &mut Emit),
) -> Normalized {
    let mut e = Emit {
        text: String::with_capacity(text.len() + 8),
        align: Vec::with_capacity(text.len() + 8),
        at: (0, 0),
    };
    for (i, c) in text.char_indices() {
        e.at = match align {
            Some(a) => a[i],
            None => (i as u32, (i + c.len_utf8()) as u32),
        };
        f(c, &mut e);
    }
    Normalized {
        text: e.text,
        align: e.align,
    }
}

impl BertNormalizer {
    /// `None` when the text is unchanged.
    #[must_use]
    pub fn apply(self, n: &Normalized) -> Option<Normalized> {
        if n.text.is_ascii() {
            return self.apply_ascii(n);
        }
        Some(self.apply_unicode(&n.text, Some(&n.align)))
    }

    /// An input text (alignment the identity).
    pub(crate) fn apply_str(self, s: &str) -> Outcome {
        if s.is_ascii() {
            self.apply_ascii_str(s)
        } else {
            Outcome::Changed(self.apply_unicode(s, None))
        }
    }

    fn apply_unicode(self, text: &str, align: Option<&[(u32, u32)]>) -> Normalized {
        let (clean, chinese, lower) = (self.clean_text, self.handle_chinese_chars, self.lowercase);
        // Lowercasing comes after NFD and the mark filter, so it joins the first pass only when
        // accents stay.
        let lower_first = lower && !self.strip_accents;
        let table = charclass::table();
        let mut out = per_char_of(text, align, |c, e| {
            if c.is_ascii() {
                if !(clean && is_dropped(c as u8)) {
                    e.push(self.map_byte(c as u8) as char);
                }
                return;
            }
            // HF's is_control: category C* (as the unicode_categories tables have it) but for
            // \t \n \r, which are ASCII.
            let f = charclass::flags(table, c);
            if clean && (c == '\u{FFFD}' || f & charclass::OTHER != 0) {
                return;
            }
            // HF's is_whitespace adds \t \n \r to White_Space, which has them already.
            if clean && c.is_whitespace() {
                e.push(' ');
            } else if chinese && is_chinese_char(c) {
                e.push(' ');
                e.push(c);
                e.push(' ');
            } else if lower_first && f & charclass::LOWER_CHANGES != 0 {
                c.to_lowercase().for_each(|l| e.push(l));
            } else {
                e.push(c);
            }
        });
        if self.strip_accents {
            if !out.text.is_ascii() {
                out = nfd(&out);
            }
            out = per_char(&out, |c, e| {
                let f = charclass::flags(table, c);
                if f & charclass::MARK_NONSPACING != 0 {
                } else if lower && f & charclass::LOWER_CHANGES != 0 {
                    c.to_lowercase().for_each(|l| e.push(l));
                } else {
                    e.push(c);
                }
            });
        }
        out
    }

    /// ASCII input text: `Bytewise` unless control bytes are dropped.
    fn apply_ascii_str(self, s: &str) -> Outcome {
        let bytes = s.as_bytes();
        if self.clean_text && bytes.iter().any(|&b| is_dropped(b)) {
            return self
                .apply_ascii(&Normalized::identity(s))
                .map_or(Outcome::Unchanged, Outcome::Changed);
        }
        if !bytes.iter().any(|&b| self.changes(b)) {
            return Outcome::Unchanged;
        }
        let text = bytes.iter().map(|&b| self.map_byte(b)).collect();
        // SAFETY: ASCII bytes map to ASCII bytes.
        Outcome::Bytewise(unsafe { String::from_utf8_unchecked(text) })
    }

    #[inline]
    fn changes(self, b: u8) -> bool {
        (self.clean_text && (is_dropped(b) || matches!(b, b'\t' | b'\n' | b'\r')))
            || (self.lowercase && b.is_ascii_uppercase())
    }

    /// A kept byte's replacement.
    #[inline]
    fn map_byte(self, b: u8) -> u8 {
        let b = if self.clean_text && matches!(b, b'\t' | b'\n' | b'\r') {
            b' '
        } else {
            b
        };
        if self.lowercase {
            b.to_ascii_lowercase()
        } else {
            b
        }
    }

    /// ASCII input: no CJK, nothing for NFD to decompose and no marks, so only control bytes
    /// go, \t \n \r become spaces, and uppercase letters are lowered, all one byte for one byte.
    fn apply_ascii(self, n: &Normalized) -> Option<Normalized> {
        let bytes = n.text.as_bytes();
        if !bytes.iter().any(|&b| self.changes(b)) {
            return None;
        }
        let mut text = Vec::with_capacity(bytes.len());
        let mut align = Vec::with_capacity(bytes.len());
        for (i, &b) in bytes.iter().enumerate() {
            if self.clean_text && is_dropped(b) {
                continue;
            }
            text.push(self.map_byte(b));
            align.push(n.align[i]);
        }
        // SAFETY: only ASCII bytes were pushed.
        let text = unsafe { String::from_utf8_unchecked(text) };
        Some(Normalized { text, align })
    }
}

/// NFD with HF's alignments: the same as `n.transform(n.text.nfd(), 0)`, faster.
///
/// A char with combining class 0 that decomposes to itself ("stable": ASCII, CJK, most letters)
/// is emitted as it is, and nothing is ever reordered across it: the decomposer sorts the marks
/// pending before it and then passes it through with change 0. So the text splits, before each
/// stable char, into segments that NFD independently; only segments holding another char go
/// through the decomposer and `transform` (each starts with a stable char or the text's start,
/// so the alignment `transform` gives an added char is the one it would get in the whole text).
#[must_use]
pub fn nfd(n: &Normalized) -> Normalized {
    let table = charclass::table();
    let stable = |c: char| charclass::flags(table, c) & charclass::NFD_STABLE != 0;
    let text = &n.text;
    let mut out = Normalized {
        text: String::with_capacity(text.len() + text.len() / 4),
        align: Vec::with_capacity(n.align.len() + n.align.len() / 4),
    };
    let flush = |out: &mut Normalized, a: usize, b: usize, dirty: bool| {
        if dirty {
            let seg = Normalized {
                text: text[a..b].to_owned(),
                align: n.align[a..b].to_vec(),
            };
            let done = seg.transform(seg.text.nfd(), 0);
            out.text.push_str(&done.text);
            out.align.extend_from_slice(&done.align);
        } else {
            out.text.push_str(&text[a..b]);
            out.align.extend_from_slice(&n.align[a..b]);
        }
    };
    let (mut seg, mut dirty) = (0, false);
    for (i, c) in text.char_indices() {
        if stable(c) {
            if dirty {
                flush(&mut out, seg, i, true);
                seg = i;
                dirty = false;
            }
        } else {
            if !dirty {
                // The clean stretch before the stable char that starts this segment goes as is.
                let start = text[..i].char_indices().next_back().map_or(0, |(j, _)| j);
                if start > seg {
                    flush(&mut out, seg, start, false);
                    seg = start;
                }
            }
            dirty = true;
        }
    }
    flush(&mut out, seg, text.len(), dirty);
    out
}

/// HF's StripAccents normalizer: combining marks removed (no NFD of its own).
#[must_use]
pub fn strip_accents(n: &Normalized) -> Option<Normalized> {
    use unicode_normalization_alignments::char::is_combining_mark;
    if !n.text.chars().any(is_combining_mark) {
        return None;
    }
    Some(per_char(n, |c, e| {
        if !is_combining_mark(c) {
            e.push(c);
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
    Some(per_char(n, |c, e| {
        if !drop(c) {
            e.push(if space(c) { ' ' } else { c });
        }
    }))
}

const WORD: u8 = 0;
const SPACE: u8 = 1;
const PUNC: u8 = 2;

/// The pre-tokenizer's class of each ASCII byte: White_Space (\t..\r and space), ASCII
/// punctuation, or part of a word.
static ASCII_CLASS: [u8; 128] = {
    let mut t = [WORD; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        if c == b' ' || (c >= b'\t' && c <= b'\r') {
            t[b] = SPACE;
        } else if c.is_ascii_punctuation() {
            t[b] = PUNC;
        }
        b += 1;
    }
    t
};

/// The BertPreTokenizer: whitespace removed, each punctuation char a piece of its own (HF's
/// `is_bert_punc`: ASCII punctuation, which includes symbols like `$+<=>^|~`, or category P*).
/// HF runs the two as successive splits; one scan gives the same pieces.
pub fn split_pieces(sources: &Sources<'_>, pieces: &mut Vec<Piece>) {
    let table = charclass::table();
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
            let (len, class) = if b < 0x80 {
                if ASCII_CLASS[b as usize] == WORD {
                    // The common case: a run of ASCII word bytes, scanned in a tight loop.
                    word.get_or_insert(i);
                    i += 1;
                    while i < bytes.len()
                        && bytes[i] < 0x80
                        && ASCII_CLASS[bytes[i] as usize] == WORD
                    {
                        i += 1;
                    }
                    continue;
                }
                (1, ASCII_CLASS[b as usize])
            } else {
                let c = text[i..].chars().next().unwrap_or(' ');
                let class = if c.is_whitespace() {
                    SPACE
                } else if charclass::flags(table, c) & charclass::PUNCTUATION != 0 {
                    PUNC
                } else {
                    WORD
                };
                (c.len_utf8(), class)
            };
            if class == WORD {
                word.get_or_insert(i);
            } else {
                if let Some(s) = word.take() {
                    out.push(piece(s, i));
                }
                if class == PUNC {
                    out.push(piece(i, i + len));
                }
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
    fn segmented_nfd_equals_whole_text_nfd() {
        let pieces = [
            "a",
            "é",
            "e\u{301}",
            "\u{301}",
            "\u{323}",
            "\u{344}",
            "한",
            "\u{1100}",
            "日",
            " ",
            "ḍ\u{307}",
            "\u{0F73}",
            "ö",
            "\u{0958}",
            "ﬁ",
            "Å",
            "\u{1D15E}",
            "x\u{35C}",
            "\u{F900}",
        ];
        let mut seed = 11u64;
        for len in 0..40 {
            for _ in 0..40 {
                let mut t = String::new();
                for _ in 0..len {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    t.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
                }
                let n = Normalized::identity(&t);
                assert_eq!(nfd(&n), n.transform(n.text.nfd(), 0), "{t:?}");
            }
        }
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
