//! Pre-tokenizers: they cut the (normalized) text into pieces that the model encodes one by one.
//!
//! A piece is a byte range of a source: the input itself (no normalizer changed it, the common
//! case, which costs no copy) or a normalized text with its alignments. Offsets of the model's
//! tokens map back to the input through the piece's source.
use super::fastsplit::Known;
use super::normalize::Normalized;
use super::pattern::{Pattern, Slices};
use std::sync::LazyLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behavior {
    Removed,
    Isolated,
    MergedWithPrevious,
    MergedWithNext,
    Contiguous,
}

#[derive(Debug, Clone)]
pub enum PreTokenizer {
    /// The byte-level step: optional prefix space, optional GPT-2 regex split. The byte-to-char
    /// mapping itself happens in the model, which reads each piece's bytes.
    ByteLevel {
        add_prefix_space: bool,
        use_regex: bool,
    },
    Split {
        pattern: Pattern,
        behavior: Behavior,
        invert: bool,
    },
    Digits {
        individual: bool,
    },
    Punctuation(Behavior),
    Whitespace,
    WhitespaceSplit,
    Bert,
    CharDelimiterSplit(Pattern),
    /// Cuts where the Unicode script changes (HF's table and rules, see `unicode_scripts`).
    UnicodeScripts,
    /// SentencePiece's whitespace marking: spaces become `replacement`, one is put in front
    /// (per `prepend`), and with `split` each piece is cut before every replacement char.
    Metaspace {
        replacement: char,
        prepend: PrependScheme,
        split: bool,
    },
    /// Pieces of `n` chars (the last one shorter), HF's `FixedLength`.
    FixedLength(usize),
    Sequence(Vec<PreTokenizer>),
}

/// When Metaspace puts a replacement char in front of a piece that does not start with one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrependScheme {
    Always,
    /// Only the piece that starts the input (not one after an added token).
    First,
    Never,
}

static WHITESPACE: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::Rust(std::sync::Arc::new(
        regex::Regex::new(r"\w+|[^\w\s]+").unwrap(),
    ))
});

fn is_punc(c: char) -> bool {
    c.is_ascii_punctuation() || unicode_categories::UnicodeCategories::is_punctuation(c)
}

/// A normalized source: its text and alignments, relative to `origin` in the input.
#[derive(Debug)]
pub struct Source {
    pub origin: usize,
    pub norm: Normalized,
    /// Byte `i` of the text came from input byte `origin + i` (ASCII mapped byte for byte, as
    /// lowercasing does); `norm.align` is then left empty, saving 8 bytes per byte.
    pub bytewise: bool,
}

/// The texts pieces point into: index 0 is the input, `k + 1` is `norm[k]`.
#[derive(Debug)]
pub struct Sources<'a> {
    pub input: &'a str,
    pub norm: Vec<Source>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub src: u32,
    pub start: u32,
    pub end: u32,
}

impl<'a> Sources<'a> {
    #[must_use]
    pub fn new(input: &'a str) -> Self {
        Self {
            input,
            norm: Vec::new(),
        }
    }

    #[must_use]
    pub fn text(&self, p: Piece) -> &str {
        let (s, e) = (p.start as usize, p.end as usize);
        if p.src == 0 {
            &self.input[s..e]
        } else {
            &self.norm[p.src as usize - 1].norm.text[s..e]
        }
    }

    pub fn add(&mut self, origin: usize, norm: Normalized) -> Piece {
        let end = norm.text.len() as u32;
        self.norm.push(Source {
            origin,
            norm,
            bytewise: false,
        });
        Piece {
            src: self.norm.len() as u32,
            start: 0,
            end,
        }
    }

    /// Adds a normalized text without alignments, for a caller that never maps its pieces back
    /// to the input (the fused ids-only loops): `original` and `normalized` must not be called
    /// on its pieces.
    pub fn add_unaligned(&mut self, origin: usize, text: String) -> Piece {
        self.add(
            origin,
            Normalized {
                text,
                align: Vec::new(),
            },
        )
    }

    /// Adds a text whose byte `i` came from input byte `origin + i`.
    pub fn add_bytewise(&mut self, origin: usize, text: String) -> Piece {
        let end = text.len() as u32;
        self.norm.push(Source {
            origin,
            norm: Normalized {
                text,
                align: Vec::new(),
            },
            bytewise: true,
        });
        Piece {
            src: self.norm.len() as u32,
            start: 0,
            end,
        }
    }

    /// Input byte range of bytes `a..b` of piece `p`, widened to whole chars (the byte-level
    /// model can cut a char; HF aligns every byte of a char to the whole char).
    #[must_use]
    pub fn original(&self, p: Piece, a: usize, b: usize) -> (usize, usize) {
        if p.src == 0 {
            let (s, e) = (p.start as usize + a, p.start as usize + b);
            (floor_char(self.input, s), ceil_char(self.input, e))
        } else {
            let src = &self.norm[p.src as usize - 1];
            let (s, e) = (p.start as usize + a, p.start as usize + b);
            if s == e || src.bytewise {
                return (src.origin + s, src.origin + e);
            }
            debug_assert!(
                !src.norm.align.is_empty(),
                "a piece of an unaligned text (`add_unaligned`) mapped back to the input"
            );
            (
                src.origin + src.norm.align[s].0 as usize,
                src.origin + src.norm.align[e - 1].1 as usize,
            )
        }
    }

    /// The input byte where piece `p` starts (HF's `offsets_original().0`).
    #[must_use]
    pub fn original_start(&self, p: Piece) -> usize {
        if p.src == 0 {
            return p.start as usize;
        }
        let src = &self.norm[p.src as usize - 1];
        if src.bytewise {
            return src.origin + p.start as usize;
        }
        src.origin
            + src
                .norm
                .align
                .get(p.start as usize)
                .map_or(0, |a| a.0 as usize)
    }

    /// The piece as a normalized text with input-relative alignments (for prepending).
    fn normalized(&self, p: Piece) -> (usize, Normalized) {
        let (s, e) = (p.start as usize, p.end as usize);
        if p.src == 0 {
            (s, Normalized::identity(&self.input[s..e]))
        } else {
            let src = &self.norm[p.src as usize - 1];
            let align = if src.bytewise {
                (s..e).map(|i| (i as u32, i as u32 + 1)).collect()
            } else {
                src.norm.align[s..e].to_vec()
            };
            (
                src.origin,
                Normalized {
                    text: src.norm.text[s..e].to_owned(),
                    align,
                },
            )
        }
    }
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Applies `behavior` to matches (HF's `NormalizedString::split`): returns the kept ranges.
fn apply_behavior(matches: Slices, behavior: Behavior) -> Vec<(usize, usize)> {
    let mut out: Vec<((usize, usize), bool)> = Vec::with_capacity(matches.len());
    match behavior {
        Behavior::Isolated => out = matches.into_iter().map(|(o, _)| (o, false)).collect(),
        Behavior::Removed => out = matches,
        Behavior::Contiguous => {
            let mut prev = false;
            for (o, m) in matches {
                match out.last_mut() {
                    Some((last, _)) if m == prev => last.1 = o.1,
                    _ => out.push((o, false)),
                }
                prev = m;
            }
        }
        Behavior::MergedWithPrevious => {
            let mut prev = false;
            for (o, m) in matches {
                match out.last_mut() {
                    Some((last, _)) if m && !prev => last.1 = o.1,
                    _ => out.push((o, false)),
                }
                prev = m;
            }
        }
        Behavior::MergedWithNext => {
            let mut prev = false;
            for (o, m) in matches.into_iter().rev() {
                match out.last_mut() {
                    Some((last, _)) if m && !prev => last.0 = o.0,
                    _ => out.push((o, false)),
                }
                prev = m;
            }
            out.reverse();
        }
    }
    out.into_iter()
        .filter(|&((s, e), remove)| !remove && s < e)
        .map(|(o, _)| o)
        .collect()
}

impl PreTokenizer {
    /// Whether this pre-tokenizer includes the byte-level step.
    #[must_use]
    pub fn is_byte_level(&self) -> bool {
        match self {
            Self::ByteLevel { .. } => true,
            Self::Sequence(items) => items.iter().any(Self::is_byte_level),
            _ => false,
        }
    }

    /// The known split pattern, when this pre-tokenizer is nothing but that split followed by
    /// the plain byte-level step (cl100k, Llama-3, Qwen2, GPT-2 style files): the ids-only path
    /// then scans each text once and tokenizes matches as it finds them.
    #[must_use]
    pub fn plain_known_split(&self) -> Option<Known> {
        match self {
            Self::ByteLevel {
                add_prefix_space: false,
                use_regex: true,
            } => Some(Known::Gpt2),
            Self::Sequence(items) => match &items[..] {
                [one] => one.plain_known_split(),
                [Self::Split {
                    pattern: Pattern::Known(k, _),
                    behavior: Behavior::Isolated,
                    invert: false,
                }, Self::ByteLevel {
                    add_prefix_space: false,
                    use_regex: false,
                }] => Some(*k),
                _ => None,
            },
            _ => None,
        }
    }

    /// The Splits of a pre-tokenizer that is one or more regex Splits the fused loop runs
    /// (`fused_regex`) followed by the plain byte-level step (the shape of o200k's, Tekken's,
    /// DeepSeek's three Splits, CLIP's and most byte-level files): the ids-only path splits
    /// each text by them, each Split the pieces of the one before, and tokenizes the pieces as
    /// it finds them.
    #[must_use]
    pub fn plain_regex_splits(&self) -> Option<&[PreTokenizer]> {
        match self {
            Self::Sequence(items) => match &items[..] {
                [one] => one.plain_regex_splits(),
                [splits @ .., Self::ByteLevel {
                    add_prefix_space: false,
                    use_regex: false,
                }] if !splits.is_empty() && splits.iter().all(|s| s.fused_regex().is_some()) => {
                    Some(splits)
                }
                // ByteLevel's own GPT-2 split as the last one (CLIP's files), then its byte map.
                [splits @ .., Self::ByteLevel {
                    add_prefix_space: false,
                    use_regex: true,
                }] if !splits.is_empty() && splits.iter().all(|s| s.fused_regex().is_some()) => {
                    Some(&items[..])
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// The pieces of `text` by one of `plain_regex_splits`' items, in order: a fused regex
    /// Split's (`fused_regex`), or the GPT-2 split of a ByteLevel with `use_regex`.
    #[inline]
    pub fn fused_pieces(&self, text: &str, mut f: impl FnMut(usize, usize)) {
        if let Some((re, keep_gaps)) = self.fused_regex() {
            if keep_gaps {
                let mut prev = 0;
                re.for_each_match(text, |s, e| {
                    if s > prev {
                        f(prev, s);
                    }
                    if e > s {
                        f(s, e);
                    }
                    prev = e;
                });
                if prev < text.len() {
                    f(prev, text.len());
                }
            } else {
                re.for_each_match(text, |s, e| {
                    if e > s {
                        f(s, e);
                    }
                });
            }
        } else if let Self::ByteLevel {
            use_regex: true, ..
        } = self
        {
            Known::Gpt2.for_each(text, f);
        }
    }

    /// The regex of a regex Split that the fused loop runs, and whether the pieces between its
    /// matches are kept: Isolated, not inverted (matches and gaps), or Removed and inverted
    /// (the matches alone: CLIP's Split).
    #[must_use]
    pub fn fused_regex(&self) -> Option<(&Pattern, bool)> {
        match self {
            Self::Split {
                pattern: p @ (Pattern::Pcre(..) | Pattern::Onig(..)),
                behavior,
                invert,
            } => match (behavior, invert) {
                (Behavior::Isolated, false) => Some((p, true)),
                (Behavior::Removed, true) => Some((p, false)),
                _ => None,
            },
            _ => None,
        }
    }

    /// Each pre-tokenizer with the engine that runs it, for `Tokenizer::describe`.
    pub fn describe(&self, out: &mut Vec<(String, String)>) {
        let regex = |p: &Pattern| {
            p.source()
                .map_or_else(|| format!("{p:?}"), |s| format!("{s:?}"))
        };
        match self {
            Self::Sequence(items) => items.iter().for_each(|i| i.describe(out)),
            Self::ByteLevel { use_regex, .. } => out.push((
                format!("ByteLevel(use_regex={use_regex})"),
                if *use_regex {
                    "hand-written gpt2"
                } else {
                    "byte map"
                }
                .into(),
            )),
            Self::Split {
                pattern,
                behavior,
                invert,
            } => out.push((
                format!("Split({}, {behavior:?}, invert={invert})", regex(pattern)),
                pattern.engine(),
            )),
            Self::CharDelimiterSplit(p) => {
                out.push((format!("CharDelimiterSplit({})", regex(p)), p.engine()));
            }
            Self::Whitespace => out.push(("Whitespace".into(), "rust regex".into())),
            other => out.push((
                format!("{other:?}")
                    .split([' ', '{', '('])
                    .next()
                    .unwrap_or("")
                    .to_owned(),
                "hand-written".into(),
            )),
        }
    }

    /// Splits every piece in `pieces` (in place).
    // One arm per pre-tokenizer kind: long because the kinds are many, not because an arm is.
    #[allow(clippy::too_many_lines)]
    pub fn run(&self, sources: &mut Sources<'_>, pieces: &mut Vec<Piece>) {
        match self {
            Self::Sequence(items) => {
                for item in items {
                    item.run(sources, pieces);
                }
            }
            Self::ByteLevel {
                add_prefix_space,
                use_regex,
            } => {
                if *add_prefix_space {
                    for p in pieces.iter_mut() {
                        if !sources.text(*p).starts_with(' ') {
                            let (origin, n) = sources.normalized(*p);
                            *p = sources.add(origin, n.prepend(" "));
                        }
                    }
                }
                if *use_regex {
                    split_known(sources, pieces, Known::Gpt2);
                }
            }
            Self::Split {
                pattern: Pattern::Known(k, _),
                behavior: Behavior::Isolated,
                invert: false,
            } => split_known(sources, pieces, *k),
            Self::Split {
                pattern,
                behavior,
                invert,
            } => {
                let inv = *invert;
                split_pieces(
                    sources,
                    pieces,
                    |t| {
                        let mut m = pattern.find_matches(t);
                        if inv {
                            m.iter_mut().for_each(|x| x.1 = !x.1);
                        }
                        m
                    },
                    *behavior,
                );
            }
            Self::Digits { individual } => {
                let b = if *individual {
                    Behavior::Isolated
                } else {
                    Behavior::Contiguous
                };
                split_pieces(
                    sources,
                    pieces,
                    |t| Pattern::Char(char::is_numeric).find_matches(t),
                    b,
                );
            }
            Self::Punctuation(b) => split_pieces(
                sources,
                pieces,
                |t| Pattern::Char(is_punc).find_matches(t),
                *b,
            ),
            Self::Whitespace => split_pieces(
                sources,
                pieces,
                |t| {
                    let mut m = WHITESPACE.find_matches(t);
                    m.iter_mut().for_each(|x| x.1 = !x.1);
                    m
                },
                Behavior::Removed,
            ),
            Self::WhitespaceSplit => split_pieces(
                sources,
                pieces,
                |t| Pattern::Char(char::is_whitespace).find_matches(t),
                Behavior::Removed,
            ),
            Self::Bert => super::bert::split_pieces(sources, pieces),
            Self::CharDelimiterSplit(delimiter) => split_pieces(
                sources,
                pieces,
                |t| delimiter.find_matches(t),
                Behavior::Removed,
            ),
            Self::UnicodeScripts => split_pieces(
                sources,
                pieces,
                super::unicode_scripts::slices,
                Behavior::Removed,
            ),
            Self::Metaspace {
                replacement,
                prepend,
                split,
            } => metaspace(sources, pieces, *replacement, *prepend, *split),
            Self::FixedLength(n) => fixed_length_pieces(sources, pieces, *n),
        }
    }
}

fn fixed_length_pieces(sources: &Sources<'_>, pieces: &mut Vec<Piece>, n: usize) {
    split_pieces(sources, pieces, |t| fixed_length(t, n), Behavior::Isolated);
}

/// Chunks of `n` chars of `t`, each a match (HF's `FixedLength`).
fn fixed_length(t: &str, n: usize) -> Slices {
    let starts: Vec<usize> = t.char_indices().map(|(i, _)| i).collect();
    starts
        .chunks(n)
        .enumerate()
        .map(|(k, c)| {
            let end = starts.get((k + 1) * n).copied().unwrap_or(t.len());
            ((c[0], end), true)
        })
        .collect()
}

/// HF's Metaspace on every piece: spaces replaced, the prefix added, then the optional split
/// (MergedWithNext on the replacement char). A piece with no space and no prefix to add keeps
/// pointing into its source (no copy, no alignments).
fn metaspace(
    sources: &mut Sources<'_>,
    pieces: &mut Vec<Piece>,
    replacement: char,
    prepend: PrependScheme,
    split: bool,
) {
    let mut rep_buf = [0u8; 4];
    let rep: &str = replacement.encode_utf8(&mut rep_buf);
    for p in pieces.iter_mut() {
        let text = sources.text(*p);
        let has_space = text.contains(' ');
        // Whether the text starts with the replacement once spaces are replaced.
        let starts = text.starts_with(' ') || text.starts_with(replacement);
        let add_prefix = !starts
            && match prepend {
                PrependScheme::Always => true,
                // HF asks whether the piece's original offset is 0: the start of the input.
                PrependScheme::First => sources.original_start(*p) == 0,
                PrependScheme::Never => false,
            };
        if !has_space && !add_prefix {
            continue;
        }
        let (origin, mut n) = sources.normalized(*p);
        if has_space {
            n = super::normalize::replace_char(&n, ' ', rep);
        }
        if add_prefix {
            n = n.prepend(rep);
        }
        *p = sources.add(origin, n);
    }
    if split {
        split_pieces(
            sources,
            pieces,
            |t| {
                let mut m: Slices = Vec::new();
                let mut last = 0;
                for (i, c) in t.char_indices().filter(|&(_, c)| c == replacement) {
                    if i > last {
                        m.push(((last, i), false));
                    }
                    last = i + c.len_utf8();
                    m.push(((i, last), true));
                }
                if last < t.len() {
                    m.push(((last, t.len()), false));
                }
                m
            },
            Behavior::MergedWithNext,
        );
    }
}

/// Isolated split on a known pattern: its matches tile the text, so they are the pieces.
fn split_known(sources: &Sources<'_>, pieces: &mut Vec<Piece>, known: Known) {
    let split = |p: Piece, out: &mut Vec<Piece>| {
        known.for_each(sources.text(p), |s, e| {
            out.push(Piece {
                src: p.src,
                start: p.start + s as u32,
                end: p.start + e as u32,
            });
        });
    };
    // One piece (a whole text, the common case): split it in place, reusing the vector.
    if let [p] = pieces[..] {
        pieces.clear();
        split(p, pieces);
        return;
    }
    let mut out = Vec::with_capacity(pieces.len() * 4);
    for &p in pieces.iter() {
        split(p, &mut out);
    }
    *pieces = out;
}

fn split_pieces(
    sources: &Sources<'_>,
    pieces: &mut Vec<Piece>,
    find: impl Fn(&str) -> Slices,
    behavior: Behavior,
) {
    let mut out = Vec::with_capacity(pieces.len() * 2);
    for p in pieces.iter() {
        let text = sources.text(*p);
        for (s, e) in apply_behavior(find(text), behavior) {
            out.push(Piece {
                src: p.src,
                start: p.start + s as u32,
                end: p.start + e as u32,
            });
        }
    }
    *pieces = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pt: &PreTokenizer, s: &str) -> Vec<(String, (usize, usize))> {
        let mut sources = Sources::new(s);
        let mut pieces = vec![Piece {
            src: 0,
            start: 0,
            end: s.len() as u32,
        }];
        pt.run(&mut sources, &mut pieces);
        pieces
            .iter()
            .map(|p| {
                (
                    sources.text(*p).to_owned(),
                    sources.original(*p, 0, sources.text(*p).len()),
                )
            })
            .collect()
    }

    #[test]
    fn fixed_length_cuts_every_n_chars() {
        let got = run(&PreTokenizer::FixedLength(2), "héllo");
        let want = [("hé", (0, 3)), ("ll", (3, 5)), ("o", (5, 6))];
        assert_eq!(got, want.map(|(t, o)| (t.to_owned(), o)).to_vec());
        assert!(run(&PreTokenizer::FixedLength(3), "").is_empty());
    }

    #[test]
    fn whitespace_and_punctuation() {
        let got = run(&PreTokenizer::Whitespace, "Hey man!");
        assert_eq!(
            got,
            vec![
                ("Hey".into(), (0, 3)),
                ("man".into(), (4, 7)),
                ("!".into(), (7, 8))
            ]
        );
        let got = run(
            &PreTokenizer::Punctuation(Behavior::Isolated),
            "Hey friend!?",
        );
        assert_eq!(
            got.iter().map(|g| g.0.as_str()).collect::<Vec<_>>(),
            vec!["Hey friend", "!", "?"]
        );
    }

    #[test]
    fn byte_level_prefix_space() {
        let pt = PreTokenizer::ByteLevel {
            add_prefix_space: true,
            use_regex: true,
        };
        let got = run(&pt, "Hello world");
        assert_eq!(
            got,
            vec![(" Hello".into(), (0, 5)), (" world".into(), (5, 11))]
        );
    }

    #[test]
    fn behaviors() {
        let p = Pattern::literal("-").unwrap();
        let cases = [
            (Behavior::Removed, vec!["the", "final", "countdown"]),
            (
                Behavior::Isolated,
                vec!["the", "-", "final", "-", "-", "countdown"],
            ),
            (
                Behavior::MergedWithPrevious,
                vec!["the-", "final-", "-", "countdown"],
            ),
            (
                Behavior::MergedWithNext,
                vec!["the", "-final", "-", "-countdown"],
            ),
            (
                Behavior::Contiguous,
                vec!["the", "-", "final", "--", "countdown"],
            ),
        ];
        for (behavior, want) in cases {
            let pt = PreTokenizer::Split {
                pattern: p.clone(),
                behavior,
                invert: false,
            };
            let got: Vec<String> = run(&pt, "the-final--countdown")
                .into_iter()
                .map(|g| g.0)
                .collect();
            assert_eq!(got, want, "{behavior:?}");
        }
    }
}
