//! What Split, Replace and the char-class pre-tokenizers split on, with HF tokenizers' contract:
//! the result covers the whole input with contiguous `((start, end), is_match)` slices.
//!
//! Regexes match what Oniguruma (the engine HF tokenizers' Python wheels use) matches: the
//! common byte-level ones by hand-written matchers (`fastsplit`), any other that translates
//! (`onig_to_pcre`) on PCRE2's JIT (`pcre`), and the rest on Oniguruma itself.
use std::fmt;
use std::sync::Arc;

pub type Slices = Vec<((usize, usize), bool)>;

thread_local! {
    /// The buffer of a PCRE2 search's matches, kept between calls (one allocation, grown a
    /// few times, per thread instead of per text).
    static MATCHES: std::cell::Cell<Vec<(usize, usize)>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Most matches a kept buffer holds (1 MiB); a longer text's buffer is freed after its call.
const MATCHES_KEPT: usize = 1 << 16;

#[derive(Clone)]
pub enum Pattern {
    /// An Oniguruma regex (Oniguruma syntax, as `onig::Regex::new` compiles it); the source is
    /// kept for error messages and serialization, and why PCRE2 could not take it for
    /// `describe`.
    Onig(Arc<onig::Regex>, Arc<str>, Arc<str>),
    /// A regex translated to PCRE2 (run on its JIT); the Oniguruma regex runs a text whose match
    /// fails for lack of JIT stack (a pathological backtrack), so the result stays Oniguruma's.
    Pcre(Arc<super::pcre::Regex>, Arc<onig::Regex>, Arc<str>),
    /// A Rust `regex` (the Whitespace pre-tokenizer's `\w+|[^\w\s]+` is one in HF tokenizers).
    Rust(Arc<regex::Regex>),
    /// Each char for which the function is true is a match of its own.
    Char(fn(char) -> bool),
    /// Never matches (HF's empty literal).
    Nothing,
    /// A literal string (what an escaped regex matches: leftmost, non-overlapping), found by a
    /// substring search instead of the regex engine.
    Literal(Arc<str>),
    /// `\A` followed by literal text: one match at the start at most (SentencePiece's dummy
    /// prefix rule `\A▁`).
    Prefix(Arc<str>),
    /// ` {n,}`: every run of at least `n` spaces (SentencePiece's extra whitespace rule).
    SpaceRuns(usize),
    /// `\A +| +\z`: the leading and the trailing run of spaces.
    EdgeSpaces,
    /// A well-known regex run by a hand-written matcher (see `fastsplit`); the Oniguruma regex is
    /// kept for serialization and as the reference in tests.
    Known(super::fastsplit::Known, Arc<str>),
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Onig(_, src, _) => write!(f, "Onig({src:?})"),
            Self::Pcre(_, _, src) => write!(f, "Pcre({src:?})"),
            Self::Rust(re) => write!(f, "Rust({:?})", re.as_str()),
            Self::Char(_) => write!(f, "Char(..)"),
            Self::Nothing => write!(f, "Nothing"),
            Self::Literal(s) => write!(f, "Literal({s:?})"),
            Self::Prefix(s) => write!(f, "Prefix({s:?})"),
            Self::SpaceRuns(n) => write!(f, "SpaceRuns({n})"),
            Self::EdgeSpaces => write!(f, "EdgeSpaces"),
            Self::Known(k, src) => write!(f, "Known({k:?}, {src:?})"),
        }
    }
}

impl Pattern {
    pub fn regex(src: &str) -> Result<Self, String> {
        if let Some(k) = super::fastsplit::Known::recognize(src) {
            return Ok(Self::Known(k, src.into()));
        }
        // The SentencePiece converter's regexes, matched by hand (same matches as Oniguruma's;
        // `tests::hand_matchers_equal_oniguruma` compares them).
        match src {
            r"\A +| +\z" => return Ok(Self::EdgeSpaces),
            " {2,}" => return Ok(Self::SpaceRuns(2)),
            _ => {}
        }
        if let Some(rest) = src.strip_prefix(r"\A") {
            if !rest.is_empty() && !rest.contains(|c: char| r"\.^$|?*+()[]{}".contains(c)) {
                return Ok(Self::Prefix(rest.into()));
            }
        }
        let onig = Arc::new(onig::Regex::new(src).map_err(|e| e.to_string())?);
        match super::onig_to_pcre::translate(src).and_then(|p| super::pcre::Regex::new(&p)) {
            Ok(re) => Ok(Self::Pcre(Arc::new(re), onig, src.into())),
            Err(why) => Ok(Self::Onig(onig, src.into(), why.into())),
        }
    }

    /// Oniguruma only (the reference the tests compare the other engines with).
    pub fn onig(src: &str) -> Result<Self, String> {
        let re = onig::Regex::new(src).map_err(|e| e.to_string())?;
        Ok(Self::Onig(Arc::new(re), src.into(), "asked for".into()))
    }

    /// Which engine runs this pattern, in words (`Tokenizer::describe`).
    #[must_use]
    pub fn engine(&self) -> String {
        match self {
            Self::Known(super::fastsplit::Known::Gpt2, _) => "hand-written gpt2".into(),
            Self::Known(super::fastsplit::Known::Cl100k { max_digits: 1 }, _) => {
                "hand-written cl100k (qwen2 digits)".into()
            }
            Self::Known(..) => "hand-written cl100k".into(),
            Self::Pcre(re, ..) if re.dfa() => "dfa, class bytes".into(),
            Self::Pcre(re, ..) if re.jit() && re.class_bytes() => "pcre2-jit, class bytes".into(),
            Self::Pcre(re, ..) if re.jit() => "pcre2-jit".into(),
            Self::Pcre(..) => "pcre2".into(),
            Self::Onig(_, _, why) => format!("onig fallback ({why})"),
            Self::Rust(_) => "rust regex".into(),
            Self::Char(_) => "char class".into(),
            Self::Nothing => "nothing".into(),
            Self::Literal(_) => "literal".into(),
            Self::Prefix(_) => "hand-written prefix".into(),
            Self::SpaceRuns(_) | Self::EdgeSpaces => "hand-written spaces".into(),
        }
    }

    /// The regex source of a regex pattern.
    #[must_use]
    pub fn source(&self) -> Option<&str> {
        match self {
            Self::Onig(_, s, _) | Self::Pcre(_, _, s) | Self::Known(_, s) => Some(s),
            _ => None,
        }
    }

    /// Calls `f(start, end)` for every match, in order.
    #[inline]
    pub fn for_each_match(&self, inside: &str, mut f: impl FnMut(usize, usize)) {
        match self {
            Self::Pcre(re, onig, _) => {
                if re.dfa_matches(inside, &mut f) {
                    return;
                }
                // Matches go to a buffer first only when they could be taken back: a text
                // whose match fails part-way is matched again by Oniguruma. The thread's
                // buffer (a nested call finds it taken and starts its own).
                let mut got = MATCHES.take();
                got.clear();
                if re.for_each_match(inside, |s, e| got.push((s, e))).is_ok() {
                    got.iter().for_each(|&(s, e)| f(s, e));
                } else {
                    onig.find_iter(inside).for_each(|(s, e)| f(s, e));
                }
                if got.capacity() <= MATCHES_KEPT {
                    MATCHES.set(got);
                }
            }
            Self::Onig(re, ..) => re.find_iter(inside).for_each(|(s, e)| f(s, e)),
            other => {
                for ((s, e), m) in other.find_matches(inside) {
                    if m {
                        f(s, e);
                    }
                }
            }
        }
    }

    /// A literal string, matched as HF does it (an escaped regex).
    pub fn literal(s: &str) -> Result<Self, String> {
        if s.is_empty() {
            return Ok(Self::Nothing);
        }
        Ok(Self::Literal(s.into()))
    }

    #[must_use]
    pub fn find_matches(&self, inside: &str) -> Slices {
        if inside.is_empty() {
            return vec![((0, 0), false)];
        }
        let mut out = Vec::new();
        let mut prev = 0;
        let mut push = |start: usize, end: usize, out: &mut Slices| {
            if prev != start {
                out.push(((prev, start), false));
            }
            out.push(((start, end), true));
            prev = end;
        };
        match self {
            Self::Onig(..) | Self::Pcre(..) => {
                let mut m = Vec::new();
                self.for_each_match(inside, |s, e| m.push((s, e)));
                for (s, e) in m {
                    push(s, e, &mut out);
                }
            }
            Self::Rust(re) => {
                for m in re.find_iter(inside) {
                    push(m.start(), m.end(), &mut out);
                }
            }
            Self::Char(f) => {
                for (b, c) in inside.char_indices() {
                    if f(c) {
                        push(b, b + c.len_utf8(), &mut out);
                    }
                }
            }
            Self::Nothing => {}
            Self::Literal(lit) => {
                for (s, m) in inside.match_indices(&**lit) {
                    push(s, s + m.len(), &mut out);
                }
            }
            Self::Prefix(lit) => {
                if inside.starts_with(&**lit) {
                    push(0, lit.len(), &mut out);
                }
            }
            Self::SpaceRuns(min) => {
                let b = inside.as_bytes();
                let mut i = 0;
                while i < b.len() {
                    if b[i] == b' ' {
                        let start = i;
                        while i < b.len() && b[i] == b' ' {
                            i += 1;
                        }
                        if i - start >= *min {
                            push(start, i, &mut out);
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            Self::EdgeSpaces => {
                let lead = inside.len() - inside.trim_start_matches(' ').len();
                let trail = inside.trim_end_matches(' ').len();
                if lead > 0 {
                    push(0, lead, &mut out);
                }
                if trail > lead && trail < inside.len() {
                    push(trail, inside.len(), &mut out);
                }
            }
            Self::Known(k, _) => {
                let mut m = Vec::new();
                k.find_iter(inside, &mut m);
                for (s, e) in m {
                    push(s, e, &mut out);
                }
            }
        }
        if prev != inside.len() {
            out.push(((prev, inside.len()), false));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_matchers_equal_oniguruma() {
        let texts = [
            "",
            " ",
            "  ",
            "a",
            " a",
            "  a  ",
            "a b  c   d ",
            "▁a",
            "a▁",
            "▁▁x",
            "   ",
            "x  ",
            "\u{3000} a",
        ];
        for src in [r"\A +| +\z", " {2,}", r"\A▁", r"\Aab"] {
            let hand = Pattern::regex(src).unwrap();
            assert!(!matches!(hand, Pattern::Onig(..)), "{src}");
            let onig = Pattern::onig(src).unwrap();
            for t in texts {
                assert_eq!(hand.find_matches(t), onig.find_matches(t), "{src} on {t:?}");
            }
        }
        for lit in [" ", "▁", "ab", "aa", "-"] {
            let onig = Pattern::onig(&regex::escape(lit)).unwrap();
            for t in ["aaa", "a b-c▁d", "abab aa", "", "▁▁"] {
                assert_eq!(
                    Pattern::literal(lit).unwrap().find_matches(t),
                    onig.find_matches(t),
                    "{lit:?} on {t:?}"
                );
            }
        }
    }

    #[test]
    fn covers_the_input() {
        let p = Pattern::regex(r"\s+(?!\S)|\s+").unwrap();
        assert_eq!(
            p.find_matches("a  b"),
            vec![
                ((0, 1), false),
                ((1, 2), true),
                ((2, 3), true),
                ((3, 4), false)
            ]
        );
        let c = Pattern::Char(char::is_numeric);
        assert_eq!(
            c.find_matches("ab12"),
            vec![((0, 2), false), ((2, 3), true), ((3, 4), true)]
        );
        assert_eq!(
            Pattern::literal("").unwrap().find_matches("xy"),
            vec![((0, 2), false)]
        );
    }
}
