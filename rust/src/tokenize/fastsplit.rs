//! Hand-written matchers for the pre-tokenization regexes that nearly every byte-level tokenizer
//! uses (GPT-2's, and cl100k's, which Llama-3 and Qwen2 reuse). Oniguruma runs these at ~15 MB/s;
//! a direct scan of the same alternatives, in the same leftmost-first order, runs several times
//! faster. The char classes (`\p{L}`, `\p{N}`, `\s`) are read off Oniguruma itself once per
//! process, so both agree on every code point; `tests::agrees_with_oniguruma` checks the matchers
//! against the regex on random text built from the tricky characters.
use std::sync::LazyLock;

const L: u8 = 1;
const N: u8 = 2;
const S: u8 = 4;
/// Code points past this have no letters, numbers or white space (planes 4-16 are unassigned,
/// tags or private use).
const TABLE_END: u32 = 0x4_0000;

/// Class bits of every code point below `TABLE_END`, as Oniguruma sees them.
static CLASSES: LazyLock<Box<[u8]>> = LazyLock::new(|| {
    let mut table = vec![0u8; TABLE_END as usize].into_boxed_slice();
    let all: String = (0..TABLE_END).filter_map(char::from_u32).collect();
    for (class, bit) in [(r"\p{L}+", L), (r"\p{N}+", N), (r"\s+", S)] {
        let re = onig::Regex::new(class).expect("class regex");
        for (s, e) in re.find_iter(&all) {
            for c in all[s..e].chars() {
                table[c as usize] |= bit;
            }
        }
    }
    table
});

#[inline]
fn class(c: char) -> u8 {
    let i = c as u32;
    if i < TABLE_END {
        CLASSES[i as usize]
    } else {
        0
    }
}

/// Which known pattern a Split regex is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    /// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
    Gpt2,
    /// cl100k's (HF's spelling); `max_digits` is 3 (cl100k, Llama-3) or 1 (Qwen2).
    Cl100k { max_digits: usize },
}

pub const GPT2_PATTERN: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
const CL100K_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const QWEN2_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

impl Known {
    #[must_use]
    pub fn recognize(pattern: &str) -> Option<Self> {
        match pattern {
            GPT2_PATTERN => Some(Self::Gpt2),
            CL100K_PATTERN => Some(Self::Cl100k { max_digits: 3 }),
            QWEN2_PATTERN => Some(Self::Cl100k { max_digits: 1 }),
            _ => None,
        }
    }

    /// Pushes the `(start, end)` of every match in `text`, in order. The patterns match at every
    /// position, so the matches tile the text.
    pub fn find_iter(self, text: &str, out: &mut Vec<(usize, usize)>) {
        self.for_each(text, |s, e| out.push((s, e)));
    }

    /// Calls `f(start, end)` for every match in `text`, in order (no intermediate vector).
    #[inline]
    pub fn for_each(self, text: &str, mut f: impl FnMut(usize, usize)) {
        LazyLock::force(&CLASSES);
        let b = text.as_bytes();
        let mut pos = 0;
        while pos < b.len() {
            let end = match self {
                Self::Gpt2 => gpt2_at(text, pos),
                Self::Cl100k { max_digits } => cl100k_at(text, pos, max_digits),
            };
            debug_assert!(end > pos);
            f(pos, end);
            pos = end;
        }
    }
}

#[inline]
fn char_at(text: &str, pos: usize) -> Option<char> {
    let b = text.as_bytes();
    let first = *b.get(pos)?;
    if first < 0x80 {
        return Some(first as char);
    }
    text[pos..].chars().next()
}

/// End of the run of chars starting at `pos` for which `f` holds (at most `max` chars).
#[inline]
fn run(text: &str, mut pos: usize, max: usize, f: impl Fn(char) -> bool) -> usize {
    let mut n = 0;
    while n < max {
        match char_at(text, pos) {
            Some(c) if f(c) => {
                pos += c.len_utf8();
                n += 1;
            }
            _ => break,
        }
    }
    pos
}

#[inline]
fn is_l(c: char) -> bool {
    class(c) & L != 0
}
#[inline]
fn is_n(c: char) -> bool {
    class(c) & N != 0
}
#[inline]
fn is_s(c: char) -> bool {
    class(c) & S != 0
}
#[inline]
fn is_other(c: char) -> bool {
    class(c) == 0
}

/// `'s|'t|'re|'ve|'m|'ll|'d` after the apostrophe at `pos`: the match length after it.
fn contraction(text: &str, pos: usize, fold: bool) -> Option<usize> {
    let rest = &text[pos..];
    let mut it = rest.chars();
    let c1 = it.next()?;
    let lower = |c: char| -> char {
        if !fold {
            return c;
        }
        // Oniguruma's case folding maps these onto the ASCII letters of the pattern.
        match c {
            'ſ' => 's',
            _ => c.to_ascii_lowercase(),
        }
    };
    match lower(c1) {
        's' | 't' | 'm' | 'd' => Some(c1.len_utf8()),
        'r' | 'v' | 'l' => {
            let c2 = it.next()?;
            let want = match lower(c1) {
                'r' | 'v' => 'e',
                _ => 'l',
            };
            (lower(c2) == want).then(|| c1.len_utf8() + c2.len_utf8())
        }
        _ => None,
    }
}

/// `\s*[\r\n]+|\s+(?!\S)|\s+` from `pos` (a white-space char); `crlf` enables the first.
fn whitespace_at(text: &str, pos: usize, crlf: bool) -> usize {
    let end = run(text, pos, usize::MAX, is_s);
    if crlf {
        // \s*[\r\n]+ : up to and including the last CR/LF of the run.
        if let Some(j) = text[pos..end].rfind(['\r', '\n']) {
            return pos + j + 1;
        }
    }
    if end == text.len() {
        return end;
    }
    // \s+(?!\S) backs off one char when followed by non-space; needs two chars to do so.
    let last = text[pos..end].chars().next_back().map_or(0, char::len_utf8);
    if end - last > pos {
        end - last
    } else {
        end
    }
}

fn gpt2_at(text: &str, pos: usize) -> usize {
    let c = char_at(text, pos).expect("pos < len");
    if c == '\'' {
        if let Some(n) = contraction(text, pos + 1, false) {
            return pos + 1 + n;
        }
    }
    let p = if c == ' ' { pos + 1 } else { pos };
    if let Some(d) = char_at(text, p) {
        if is_l(d) {
            return run(text, p, usize::MAX, is_l);
        }
        if is_n(d) {
            return run(text, p, usize::MAX, is_n);
        }
        if is_other(d) {
            return run(text, p, usize::MAX, is_other);
        }
    }
    whitespace_at(text, pos, false)
}

fn cl100k_at(text: &str, pos: usize, max_digits: usize) -> usize {
    let c = char_at(text, pos).expect("pos < len");
    if c == '\'' {
        if let Some(n) = contraction(text, pos + 1, true) {
            return pos + 1 + n;
        }
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if is_l(c) {
        return run(text, pos, usize::MAX, is_l);
    }
    if c != '\r' && c != '\n' && !is_n(c) {
        let p = pos + c.len_utf8();
        if char_at(text, p).is_some_and(is_l) {
            return run(text, p, usize::MAX, is_l);
        }
    }
    // \p{N}{1,n}
    if is_n(c) {
        return run(text, pos, max_digits, is_n);
    }
    // ' '?[^\s\p{L}\p{N}]+[\r\n]*
    let p = if c == ' ' { pos + 1 } else { pos };
    if char_at(text, p).is_some_and(is_other) {
        let e = run(text, p, usize::MAX, is_other);
        return run(text, e, usize::MAX, |c| c == '\r' || c == '\n');
    }
    whitespace_at(text, pos, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PALETTE: &[&str] = &[
        "a",
        "Z",
        "é",
        "ß",
        "ſ",
        "K",
        "日",
        "ー",
        "ا",
        "ה",
        "ก",
        "\u{0301}",
        "\u{200d}",
        "👍",
        "🏽",
        "👨",
        "1",
        "٣",
        "²",
        "½",
        "Ⅻ",
        "0",
        " ",
        "  ",
        "\t",
        "\n",
        "\r",
        "\r\n",
        "\u{a0}",
        "\u{3000}",
        "\u{2028}",
        "\u{85}",
        "\u{b}",
        "\u{c}",
        "'",
        "’",
        "s",
        "S",
        "t",
        "re",
        "RE",
        "ve",
        "m",
        "ll",
        "LL",
        "d",
        "D",
        ".",
        ",",
        "!",
        "?",
        "(",
        ")",
        "-",
        "_",
        "$",
        "\u{feff}",
        "\u{e000}",
        "\u{10ffff}",
        "𝔘",
        "\u{1d7ce}",
    ];

    /// A small deterministic generator (no dependency for one test).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) as usize
        }
    }

    fn check(pattern: &str, known: Known, cases: usize) {
        let re = onig::Regex::new(pattern).unwrap();
        let mut rng = Lcg(0x5eed);
        for _ in 0..cases {
            let len = rng.next() % 24;
            let text: String = (0..len)
                .map(|_| PALETTE[rng.next() % PALETTE.len()])
                .collect();
            let want: Vec<(usize, usize)> = re.find_iter(&text).collect();
            let mut got = Vec::new();
            known.find_iter(&text, &mut got);
            assert_eq!(got, want, "pattern {pattern:?} on {text:?}");
        }
    }

    #[test]
    fn agrees_with_oniguruma() {
        check(GPT2_PATTERN, Known::Gpt2, 20_000);
        check(CL100K_PATTERN, Known::Cl100k { max_digits: 3 }, 20_000);
        check(QWEN2_PATTERN, Known::Cl100k { max_digits: 1 }, 20_000);
    }
}
