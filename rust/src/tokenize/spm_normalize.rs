//! SentencePiece's own normalization, for models loaded from a `.model` file, so that their ids
//! are `SentencePieceProcessor.encode`'s: the charsmap applied by longest match over the bytes
//! (HF's Precompiled reads it per grapheme cluster), leading spaces dropped, space runs
//! collapsed, trailing spaces dropped, the dummy prefix, spaces to `▁`.
//!
//! Where the converter's pipeline (which HF runs on the same tokenizer.json) normalizes a text
//! to the same string, its result and alignments are kept, so that offsets equal HF's; only a
//! text the two normalize differently takes SentencePiece's string, each of its bytes aligned
//! to the input span it came from.
use super::normalize::{Normalized, Normalizer};
use super::precompiled::Precompiled;
use std::sync::Arc;

const MARK: &str = "\u{2581}";

#[derive(Debug, Clone)]
pub struct SentencePieceNormalizer {
    pub converter: Option<Box<Normalizer>>,
    pub charsmap: Option<Arc<Precompiled>>,
    pub remove_extra_whitespaces: bool,
    pub add_dummy_prefix: bool,
    pub escape_whitespaces: bool,
}

impl SentencePieceNormalizer {
    /// SentencePiece's `NormalizePrefix`: the replacement of the longest rule at `b[i..]`, or
    /// the char there unchanged, and how many bytes it covers.
    fn prefix<'a>(&'a self, text: &'a str, i: usize) -> (&'a str, usize) {
        if let Some(m) = self
            .charsmap
            .as_ref()
            .and_then(|c| c.longest_match(&text.as_bytes()[i..]))
        {
            return (m.1, m.0);
        }
        let n = text[i..].chars().next().map_or(1, char::len_utf8);
        (&text[i..i + n], n)
    }

    /// SentencePiece's `Normalize`: the text, and per output byte the input span (in `n`'s
    /// bytes) it came from.
    fn spm(&self, text: &str) -> (String, Vec<(usize, usize)>) {
        let space = if self.escape_whitespaces { MARK } else { " " };
        let mut out = String::with_capacity(text.len() + 3);
        let mut spans = Vec::with_capacity(text.len() + 3);
        let mut i = 0;
        if self.remove_extra_whitespaces {
            while i < text.len() {
                let (r, c) = self.prefix(text, i);
                if r != " " {
                    break;
                }
                i += c;
            }
        }
        if i >= text.len() {
            return (out, spans);
        }
        if self.add_dummy_prefix {
            let first = self.prefix(text, i).1;
            out.push_str(space);
            spans.extend(std::iter::repeat_n((i, i + first), space.len()));
        }
        let mut prev_space = self.remove_extra_whitespaces;
        while i < text.len() {
            let (r, c) = self.prefix(text, i);
            let mut sp = r;
            while prev_space && sp.starts_with(' ') {
                sp = &sp[1..];
            }
            if !sp.is_empty() {
                for ch in sp.chars() {
                    let s = if ch == ' ' && self.escape_whitespaces {
                        MARK
                    } else {
                        &sp[0..0]
                    };
                    if s.is_empty() {
                        out.push(ch);
                        spans.extend(std::iter::repeat_n((i, i + c), ch.len_utf8()));
                    } else {
                        out.push_str(s);
                        spans.extend(std::iter::repeat_n((i, i + c), s.len()));
                    }
                }
                prev_space = sp.ends_with(' ');
            }
            i += c;
            if !self.remove_extra_whitespaces {
                prev_space = false;
            }
        }
        if self.remove_extra_whitespaces {
            while out.ends_with(space) {
                out.truncate(out.len() - space.len());
                spans.truncate(out.len());
            }
        }
        (out, spans)
    }

    #[must_use]
    pub fn apply(&self, n: &Normalized) -> Option<Normalized> {
        let (text, spans) = self.spm(&n.text);
        let converted = self.converter.as_ref().and_then(|c| c.apply(n));
        let conv_text = converted
            .as_ref()
            .map_or(n.text.as_str(), |c| c.text.as_str());
        // The converter's text as the Metaspace pre-tokenizer after it will see it: with the
        // dummy prefix unless it starts with one.
        let same = if self.add_dummy_prefix && !conv_text.is_empty() && !conv_text.starts_with(MARK)
        {
            text.strip_prefix(MARK) == Some(conv_text)
        } else {
            text == conv_text
        };
        if same {
            return converted;
        }
        let align = spans
            .iter()
            .map(|&(a, b)| (n.align[a].0, n.align[b - 1].1))
            .collect();
        Some(Normalized { text, align })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(rews: bool, dummy: bool) -> SentencePieceNormalizer {
        SentencePieceNormalizer {
            converter: None,
            charsmap: None,
            remove_extra_whitespaces: rews,
            add_dummy_prefix: dummy,
            escape_whitespaces: true,
        }
    }

    #[test]
    fn whitespace_as_sentencepiece_handles_it() {
        assert_eq!(norm(true, true).spm("  a  b \n ").0, "▁a▁b▁\n");
        assert_eq!(norm(true, true).spm("   ").0, "");
        assert_eq!(norm(false, true).spm(" a  b").0, "▁▁a▁▁b");
        assert_eq!(norm(false, false).spm("a b").0, "a▁b");
        // Every output byte points at the input span it came from.
        let (text, spans) = norm(true, true).spm(" é  x");
        assert_eq!(text, "▁é▁x");
        assert_eq!(spans[0], (1, 3));
        assert_eq!(spans[3], (1, 3));
        assert_eq!(spans[5], (3, 4));
    }
}
