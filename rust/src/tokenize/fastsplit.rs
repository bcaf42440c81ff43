//! Hand-written matchers for the pre-tokenization regexes that nearly every byte-level tokenizer
//! uses (GPT-2's, and cl100k's, which Llama-3 and Qwen2 reuse). Oniguruma runs these at ~15 MB/s;
//! a direct scan of the same alternatives, in the same leftmost-first order, runs several times
//! faster. The char classes (`\p{L}`, `\p{N}`, `\s`) are read off Oniguruma itself once per
//! process, so both agree on every code point; `tests::agrees_with_oniguruma` checks the matchers
//! against the regex on random text built from the tricky characters.
use super::blockmasks::{ByteMasks, Kernel};
use std::sync::LazyLock;

const L: u8 = 1;
const N: u8 = 2;
const S: u8 = 4;
/// Code points past this have no letters, numbers or white space (planes 4-16 are unassigned,
/// tags or private use).
const TABLE_END: u32 = 0x4_0000;

/// Class bits of every code point below `TABLE_END`, as Oniguruma sees them: from the range
/// tables its `\p{L}`, `\p{N}` and `\s` match with (`onig_ranges`; the test
/// `classes_are_onig_regexes` checks the table against the regexes themselves). Matching the
/// three regexes over every code point took 15 ms, paid by a process's first encode; the
/// ranges take microseconds. Should Oniguruma not hand a table out, the regexes build it.
static CLASSES: LazyLock<Box<[u8]>> =
    LazyLock::new(|| classes_from_onig_ranges().unwrap_or_else(classes_by_regex));

/// The class table from Oniguruma's Unicode range tables (`None` if it reports none).
fn classes_from_onig_ranges() -> Option<Box<[u8]>> {
    let mut table = vec![0u8; TABLE_END as usize].into_boxed_slice();
    let space = onig_sys::OnigEncCtype_ONIGENC_CTYPE_SPACE;
    for (ctype, bit) in [
        (onig_property_ctype("L")?, L),
        (onig_property_ctype("N")?, N),
        (space, S),
    ] {
        for (from, to) in onig_ranges(ctype)? {
            let to = to.min(TABLE_END - 1);
            if from <= to {
                table[from as usize..=to as usize]
                    .iter_mut()
                    .for_each(|c| *c |= bit);
            }
        }
    }
    Some(table)
}

/// The ctype of a Unicode property name (`L`, `N`) in Oniguruma's UTF-8 encoding.
pub(super) fn onig_property_ctype(name: &str) -> Option<onig_sys::OnigCtype> {
    let mut name = name.as_bytes().to_vec();
    // SAFETY: the UTF-8 encoding is a static of the library, read only; the name is a live
    // buffer whose end pointer is one past its last byte.
    unsafe {
        let enc = &raw mut onig_sys::OnigEncodingUTF8;
        let lookup = (*enc).property_name_to_ctype?;
        let range = name.as_mut_ptr_range();
        let ctype = lookup(enc, range.start, range.end);
        onig_sys::OnigCtype::try_from(ctype).ok()
    }
}

/// The code point ranges (inclusive) of `ctype` in Oniguruma's UTF-8 encoding.
pub(super) fn onig_ranges(ctype: onig_sys::OnigCtype) -> Option<Vec<(u32, u32)>> {
    // SAFETY: as in `onig_property_ctype`; on success `ranges` points at a static table of the
    // library: its count, then that many (from, to) pairs.
    unsafe {
        let enc = &raw mut onig_sys::OnigEncodingUTF8;
        let get = (*enc).get_ctype_code_range?;
        let mut sb_out: onig_sys::OnigCodePoint = 0;
        let mut ranges: *const onig_sys::OnigCodePoint = std::ptr::null();
        if get(ctype, &raw mut sb_out, &raw mut ranges) != 0 || ranges.is_null() {
            return None;
        }
        let n = *ranges as usize;
        Some(
            (0..n)
                .map(|i| (*ranges.add(1 + 2 * i), *ranges.add(2 + 2 * i)))
                .collect(),
        )
    }
}

/// The class table by matching the class regexes over every code point (the reference).
fn classes_by_regex() -> Box<[u8]> {
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
}

static BMP_CODES: LazyLock<Box<[u8]>> = LazyLock::new(|| {
    let mut packed = vec![0u8; 0x1_0000 / 4].into_boxed_slice();
    for (u, &cls) in CLASSES[..0x1_0000].iter().enumerate() {
        packed[u / 4] |= code(cls) << (2 * (u % 4));
    }
    packed
});

/// The two-bit code of class bits (see `BMP_CODES`).
#[inline]
fn code(cls: u8) -> u8 {
    u8::from(cls & (L | S) != 0) | (u8::from(cls & (N | S) != 0) << 1)
}

/// Whether every code point behind the UTF-8 lead bytes E5-E9 (U+5000-U+9FFF: CJK ideographs)
/// and EB-EC (U+B000-U+CFFF: Hangul syllables) is a letter in Oniguruma's tables. Then a block
/// marks those chars letters from their lead bytes at once (`letter_leads`), instead of one
/// decode and table lookup each (`class_at` was 5% of a multilingual encode). Read off the same
/// tables, so an Oniguruma with other Unicode data only turns this off.
static LETTER_LEADS: LazyLock<bool> = LazyLock::new(|| {
    (0x5000..0xA000)
        .chain(0xB000..0xD000)
        .all(|u| CLASSES[u] == L)
});

#[cfg(test)]
fn class(c: char) -> u8 {
    let i = c as u32;
    if i < TABLE_END {
        CLASSES[i as usize]
    } else {
        0
    }
}

/// Texts shorter than this are split by the per-piece matcher, longer ones by `startmap` (whose
/// thread-local buffers and passes cost ~70 ns a call: a one-letter text took 206 ns against
/// 135, a ~100-byte one 545 against 508; no difference on the corpus with this bound).
const SHORT_TEXT: usize = 192;

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
    pub fn for_each(self, text: &str, f: impl FnMut(usize, usize)) {
        match self {
            Self::Gpt2 => self.for_each_scalar(text, f),
            // A short text's bitmap costs more to set up than its few pieces' branches.
            Self::Cl100k { .. } if text.len() < SHORT_TEXT => self.for_each_scalar(text, f),
            Self::Cl100k { max_digits } => super::startmap::for_each(text, max_digits, f),
        }
    }

    /// `find_iter` by the piece-at-a-time matcher (`for_each_scalar`).
    #[cfg(test)]
    pub(super) fn find_iter_scalar(self, text: &str, out: &mut Vec<(usize, usize)>) {
        self.for_each_scalar(text, |s, e| out.push((s, e)));
    }

    /// `for_each` a piece at a time: the matcher below, which `startmap`'s bit-parallel
    /// cl100k splitter is checked against.
    #[inline]
    pub fn for_each_scalar(self, text: &str, mut f: impl FnMut(usize, usize)) {
        let mut sc = Scanner::new(text);
        let len = text.len();
        let mut pos = 0;
        while pos < len {
            let end = match self {
                Self::Gpt2 => gpt2_at(&mut sc, pos),
                Self::Cl100k { max_digits } => cl100k_at(&mut sc, pos, max_digits),
            };
            debug_assert!(end > pos);
            f(pos, end);
            pos = end;
        }
    }
}

// The scanner classifies the text 64 bytes at a time into bit masks (one bit per byte, one mask
// per class), and finds where a run of a class ends with one `trailing_zeros` instead of a loop
// over chars. The char-by-char matcher took ~25 ns a piece on the test corpus, most of it
// walking runs and mispredicting their ends (now about 11 ns a piece on ASCII text, 20 on the
// rest); a block's masks cost a few SSE2 instructions per 16 ASCII bytes and one table lookup
// per non-ASCII char.

/// The class masks of any 64-byte block of a text (`startmap` builds on them).
pub(super) struct BlockClasses<'a>(Scanner<'a>);

impl<'a> BlockClasses<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Self(Scanner::unloaded(text))
    }

    /// The byte-mask kernel this text's blocks go through.
    pub(super) fn kernel(&self) -> Kernel {
        self.0.kernel
    }

    /// Letter, digit, white-space and other masks of the block at `base` (a multiple of 64
    /// below the text's length), and its byte masks: bit i for byte `base + i`, bytes past the
    /// text in none.
    #[inline]
    pub(super) fn block(&mut self, base: usize) -> ([u64; 4], ByteMasks) {
        self.0.fill(base);
        (self.0.m, self.0.bytes)
    }
}

/// Mask indices.
const KL: usize = 0;
const KN: usize = 1;
const KS: usize = 2;
const KO: usize = 3;

/// Class masks of the 64 bytes at `base`: `m[k]` has bit `i` set when byte `base + i` belongs to
/// a char of class `k` (every byte of a multi-byte char carries its char's class, so a run of a
/// class is a run of set bits). Bytes past the end of the text are in no class.
struct Scanner<'a> {
    text: &'a str,
    table: &'static [u8],
    /// `BMP_CODES`.
    codes: &'static [u8],
    /// `*LETTER_LEADS`, read once per text.
    letter_leads: bool,
    /// The byte-mask kernel, chosen once per text.
    kernel: Kernel,
    base: usize,
    m: [u64; 4],
    /// The block's byte masks (`startmap` reads some besides the classes).
    bytes: ByteMasks,
}

impl<'a> Scanner<'a> {
    /// A scanner with no block loaded yet.
    fn unloaded(text: &'a str) -> Self {
        Self {
            text,
            table: &CLASSES,
            codes: &BMP_CODES,
            letter_leads: *LETTER_LEADS,
            kernel: Kernel::detect(),
            base: usize::MAX,
            m: [0; 4],
            bytes: ByteMasks::default(),
        }
    }

    fn new(text: &'a str) -> Self {
        let mut sc = Self::unloaded(text);
        if !text.is_empty() {
            sc.load(0);
        }
        sc
    }

    /// Makes the block holding `pos` (< len) the current one.
    #[allow(clippy::inline_always)] // per-piece helpers: measured slower when left to the inliner
    #[inline(always)]
    fn at(&mut self, pos: usize) {
        if pos.wrapping_sub(self.base) >= 64 {
            self.load(pos & !63);
        }
    }

    /// The class (`KL`, `KN`, `KS` or `KO`) of the char holding byte `pos` (< len).
    #[allow(clippy::inline_always)] // per-piece helpers: measured slower when left to the inliner
    #[inline(always)]
    fn kind(&mut self, pos: usize) -> usize {
        self.at(pos);
        // The class number's two bits, read off two masks without a branch.
        let sh = pos - self.base;
        (((self.m[KN] | self.m[KO]) >> sh) & 1) as usize
            | ((((self.m[KS] | self.m[KO]) >> sh) & 1) << 1) as usize
    }

    /// End of the run of bytes of class `k` that starts at `pos` (< len).
    #[allow(clippy::inline_always)] // per-piece helpers: measured slower when left to the inliner
    #[inline(always)]
    fn run_end(&mut self, mut pos: usize, k: usize) -> usize {
        loop {
            self.at(pos);
            let sh = pos - self.base;
            let ones = (!(self.m[k] >> sh)).trailing_zeros() as usize;
            pos += ones;
            // Bits past the text's end are clear, so a run reaching bit 63 goes on only when
            // the text does.
            if sh + ones < 64 || pos >= self.text.len() {
                return pos;
            }
        }
    }

    /// End of at most `max` chars of class `k` from `pos` (< len).
    #[inline]
    fn count_end(&mut self, mut pos: usize, k: usize, max: usize) -> usize {
        let b = self.text.as_bytes();
        for _ in 0..max {
            if pos >= b.len() || self.kind(pos) != k {
                break;
            }
            pos += utf8_width(b[pos]);
        }
        pos
    }

    /// `fill`, out of line: the per-piece matcher loads a block once every few pieces.
    #[cold]
    #[inline(never)]
    fn load(&mut self, base: usize) {
        self.fill(base);
    }

    /// Loads the block at `base`. Inlined into `BlockClasses::block`, which loads every block:
    /// out of line, its masks came back through memory and were read with wider loads than
    /// their stores (a store-forwarding stall, a third of `startmap::segment`'s own time).
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn fill(&mut self, base: usize) {
        let b = self.text.as_bytes();
        let end = (base + 64).min(b.len());
        // The masks read 64 bytes. A text's last block, shorter, is read as the text's last 64
        // bytes, its masks shifted down to the block; a text shorter than that, zero-padded (a
        // zero byte is in no mask) once for both mask functions.
        let mut pad = [0u8; 64];
        let (block, shift) = if end - base == 64 {
            (&b[base..end], 0)
        } else if b.len() >= 64 {
            (&b[b.len() - 64..], base + 64 - b.len())
        } else {
            pad[..b.len()].copy_from_slice(b);
            (&pad[..], 0)
        };
        let block: &[u8; 64] = block.try_into().expect("64 bytes");
        let bm = self.kernel.masks(block).shifted(shift);
        let (mut l, mut n, mut s) = (bm.l, bm.n, bm.s);
        let valid = if end - base == 64 {
            u64::MAX
        } else {
            (1u64 << (end - base)) - 1
        };
        // Non-ASCII chars: one class lookup each, its bits set for all of its bytes in this
        // block (bits past 63 fall off the shift), but for the three-byte letters whose lead
        // byte tells (see `LETTER_LEADS`).
        let mut rest = bm.na;
        if self.letter_leads {
            let m = bm.han | (bm.han << 1) | (bm.han << 2);
            l |= m;
            rest &= !m;
        }
        if rest & 1 != 0 && b[base] & 0xC0 == 0x80 {
            // A char cut by the block's start: found from its lead byte before it.
            let mut start = base;
            while b[start] & 0xC0 == 0x80 {
                start -= 1;
            }
            let w = utf8_width(b[start]) - (base - start);
            rest &= !((1u64 << w) - 1);
            let cls = self.class_at(start);
            let m = (1u64 << w) - 1;
            l |= m & 0u64.wrapping_sub(u64::from(cls & L != 0));
            n |= m & 0u64.wrapping_sub(u64::from(cls & N != 0));
            s |= m & 0u64.wrapping_sub(u64::from(cls & S != 0));
        }
        // The rest: each char's class bits at its lead byte, then spread over its continuation
        // bytes for the whole block at once (a char's mask built one by one, from its width,
        // cost more than the lookup). The leads of each width in a loop of their own: one loop
        // that branched on the width mispredicted where widths mix (emoji with their joiners
        // and selectors, accented Latin beside CJK punctuation).
        let leads = rest & !bm.cont;
        // Each char's two code bits (see `BMP_CODES`), at its lead byte.
        let (mut c0, mut c1) = (0u64, 0u64);
        let mut deposit = |i: usize, code: u8| {
            c0 |= u64::from(code & 1) << i;
            c1 |= u64::from(code >> 1) << i;
        };
        let c = |i: usize| u32::from(b[i] & 0x3F);
        let codes = self.codes;
        let lookup = |u: u32| (codes[(u / 4) as usize] >> (2 * (u % 4))) & 3;
        let mut two = leads & !bm.ge_e0;
        while two != 0 {
            let i = two.trailing_zeros() as usize;
            two &= two - 1;
            let at = base + i;
            deposit(i, lookup((u32::from(b[at] & 0x1F) << 6) | c(at + 1)));
        }
        let mut three = leads & bm.ge_e0 & !bm.ge_f0;
        while three != 0 {
            let i = three.trailing_zeros() as usize;
            three &= three - 1;
            let at = base + i;
            deposit(
                i,
                lookup((u32::from(b[at] & 0x0F) << 12) | (c(at + 1) << 6) | c(at + 2)),
            );
        }
        let mut four = leads & bm.ge_f0;
        while four != 0 {
            let i = four.trailing_zeros() as usize;
            four &= four - 1;
            deposit(i, code(self.class_at(base + i)));
        }
        for _ in 0..3 {
            c0 |= (c0 << 1) & bm.cont;
            c1 |= (c1 << 1) & bm.cont;
        }
        let (cl, cn, cs) = (c0 & !c1, c1 & !c0, c0 & c1);
        l |= cl;
        n |= cn;
        s |= cs;
        self.base = base;
        self.m = [l, n, s, valid & !(l | n | s)];
        self.bytes = bm;
    }
}

impl Scanner<'_> {
    /// Class bits of the (non-ASCII) char whose lead byte is at `i`, decoded by hand: the text
    /// is valid UTF-8, and `chars().next()` showed in profiles of CJK text.
    #[inline]
    fn class_at(&self, i: usize) -> u8 {
        let b = self.text.as_bytes();
        let c = |k: usize| u32::from(b[i + k] & 0x3F);
        let lead = u32::from(b[i]);
        let u = match utf8_width(b[i]) {
            2 => ((lead & 0x1F) << 6) | c(1),
            3 => ((lead & 0x0F) << 12) | (c(1) << 6) | c(2),
            _ => ((lead & 0x07) << 18) | (c(1) << 12) | (c(2) << 6) | c(3),
        };
        if u < TABLE_END {
            self.table[u as usize]
        } else {
            0
        }
    }
}

/// Length of the UTF-8 sequence that starts with `lead`.
#[allow(clippy::inline_always)] // per-piece helpers: measured slower when left to the inliner
#[inline(always)]
pub(super) fn utf8_width(lead: u8) -> usize {
    match lead {
        0..0x80 => 1,
        0x80..0xE0 => 2,
        0xE0..0xF0 => 3,
        _ => 4,
    }
}

/// `'s|'t|'re|'ve|'m|'ll|'d` after the apostrophe at `pos`: the match length after it.
pub(super) fn contraction(text: &str, pos: usize, fold: bool) -> Option<usize> {
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
#[inline]
fn whitespace_at(sc: &mut Scanner, pos: usize, crlf: bool) -> usize {
    let end = sc.run_end(pos, KS);
    let b = sc.text.as_bytes();
    if crlf {
        // \s*[\r\n]+ : up to and including the last CR/LF of the run.
        if let Some(j) = b[pos..end].iter().rposition(|&c| c == b'\r' || c == b'\n') {
            return pos + j + 1;
        }
    }
    if end == b.len() {
        return end;
    }
    // \s+(?!\S) backs off one char when followed by non-space; needs two chars to do so.
    let mut last = end - 1;
    while b[last] & 0xC0 == 0x80 {
        last -= 1;
    }
    if last > pos {
        last
    } else {
        end
    }
}

#[inline]
fn gpt2_at(sc: &mut Scanner, pos: usize) -> usize {
    let b = sc.text.as_bytes();
    let c = b[pos];
    if c == b'\'' {
        if let Some(n) = contraction(sc.text, pos + 1, false) {
            return pos + 1 + n;
        }
    }
    let p = pos + usize::from(c == b' ');
    if p < b.len() {
        let k = sc.kind(p);
        if k != KS {
            return sc.run_end(p, k);
        }
    }
    whitespace_at(sc, pos, false)
}

#[allow(clippy::inline_always)] // once per piece: its call (and register saves) showed in profiles
#[inline(always)]
fn cl100k_at(sc: &mut Scanner, pos: usize, max_digits: usize) -> usize {
    let b = sc.text.as_bytes();
    let c = b[pos];
    if c == b'\'' {
        if let Some(n) = contraction(sc.text, pos + 1, true) {
            return pos + 1 + n;
        }
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    let k = sc.kind(pos);
    if k == KL {
        return sc.run_end(pos, KL);
    }
    if k != KN && c != b'\r' && c != b'\n' {
        let p = pos + utf8_width(c);
        if p < b.len() && sc.kind(p) == KL {
            return sc.run_end(p, KL);
        }
    }
    // \p{N}{1,n}
    if k == KN {
        return sc.count_end(pos, KN, max_digits);
    }
    // ' '?[^\s\p{L}\p{N}]+[\r\n]*
    let p = pos + usize::from(c == b' ');
    if p < b.len() && sc.kind(p) == KO {
        let mut e = sc.run_end(p, KO);
        while e < b.len() && (b[e] == b'\r' || b[e] == b'\n') {
            e += 1;
        }
        return e;
    }
    whitespace_at(sc, pos, true)
}

#[cfg(test)]
pub(super) mod tests {
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
        "\u{4dc0}",
        "\u{4dbf}",
        "\u{9fff}",
        "한",
        "\u{d7a3}",
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

    /// Up to `max_len` random picks from the palette (seeded).
    pub(in crate::tokenize) fn random_text(seed: u64, max_len: usize) -> String {
        let mut rng = Lcg(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed);
        let len = rng.next() % max_len;
        (0..len)
            .map(|_| PALETTE[rng.next() % PALETTE.len()])
            .collect()
    }

    fn check(pattern: &str, known: Known, cases: usize, max_len: usize) {
        let re = onig::Regex::new(pattern).unwrap();
        let mut rng = Lcg(0x5eed);
        for _ in 0..cases {
            let len = rng.next() % max_len;
            let text: String = (0..len)
                .map(|_| PALETTE[rng.next() % PALETTE.len()])
                .collect();
            let want: Vec<(usize, usize)> = re.find_iter(&text).collect();
            let mut got = Vec::new();
            known.find_iter(&text, &mut got);
            assert_eq!(got, want, "pattern {pattern:?} on {text:?}");
            got.clear();
            known.find_iter_scalar(&text, &mut got);
            assert_eq!(got, want, "pattern {pattern:?} on {text:?} (scalar)");
        }
    }

    #[test]
    fn agrees_with_oniguruma() {
        check(GPT2_PATTERN, Known::Gpt2, 20_000, 24);
        check(CL100K_PATTERN, Known::Cl100k { max_digits: 3 }, 20_000, 24);
        check(QWEN2_PATTERN, Known::Cl100k { max_digits: 1 }, 20_000, 24);
    }

    /// Texts past one 64-byte block: runs and multi-byte chars cut by block boundaries.
    #[test]
    fn agrees_with_oniguruma_across_blocks() {
        check(GPT2_PATTERN, Known::Gpt2, 3_000, 200);
        check(CL100K_PATTERN, Known::Cl100k { max_digits: 3 }, 3_000, 200);
        check(QWEN2_PATTERN, Known::Cl100k { max_digits: 1 }, 3_000, 200);
        let re = onig::Regex::new(CL100K_PATTERN).unwrap();
        // Long runs of one class, at every offset against the block grid.
        for unit in [
            "a", "é", "日", "1", "٣", " ", "\n", "\u{3000}", "!", "👍", "'s", " a", "\r\n",
        ] {
            for pad in 0..70 {
                for n in [1, 2, 3, 63, 64, 65, 130] {
                    let text = format!("{}{}x y", "b".repeat(pad), unit.repeat(n));
                    let want: Vec<(usize, usize)> = re.find_iter(&text).collect();
                    let mut got = Vec::new();
                    Known::Cl100k { max_digits: 3 }.find_iter(&text, &mut got);
                    assert_eq!(got, want, "{text:?}");
                }
            }
        }
    }

    /// Up to 64 bytes, zero-padded to a block (as `Scanner::load` pads a short text: a zero
    /// byte is in no mask).
    fn padded(chunk: &[u8]) -> [u8; 64] {
        let mut block = [0u8; 64];
        block[..chunk.len()].copy_from_slice(chunk);
        block
    }

    /// The lead-byte letters agree with the class table wherever the fast path is on (the
    /// masks themselves are checked against scalar ones in `blockmasks`).
    #[test]
    fn letter_leads_are_letters() {
        // On with the Oniguruma this crate builds (its Unicode data has U+5000-U+9FFF and
        // U+B000-U+CFFF all letters); the check below is what makes that safe.
        assert!(*LETTER_LEADS, "the lead-byte fast path is off");
        for u in (0x5000..0xA000).chain(0xB000..0xD000) {
            let c = char::from_u32(u).unwrap();
            let mut buf = [0u8; 4];
            let lead = c.encode_utf8(&mut buf).as_bytes()[0];
            assert_eq!(Kernel::detect().masks(&padded(&[lead])).han, 1, "{u:#x}");
            assert_eq!(class(c), L, "{u:#x}");
        }
    }

    /// The table read off Oniguruma's ranges is what its regexes match, code point by code point.
    #[test]
    fn classes_are_onig_regexes() {
        let by_regex = classes_by_regex();
        let by_ranges = classes_from_onig_ranges().expect("Oniguruma's range tables");
        let differ: Vec<usize> = (0..by_regex.len())
            .filter(|&u| by_regex[u] != by_ranges[u])
            .take(10)
            .collect();
        assert!(differ.is_empty(), "code points {differ:x?} differ");
        assert!(CLASSES[..] == by_regex[..]);
    }

    /// No code point is in two of the classes, so two bits a code point hold its class.
    #[test]
    fn classes_are_exclusive() {
        for (u, &cls) in CLASSES.iter().enumerate() {
            assert!(cls.count_ones() <= 1, "{u:#x}: {cls}");
        }
        for u in 0..0x1_0000 {
            assert_eq!(
                (BMP_CODES[u / 4] >> (2 * (u % 4))) & 3,
                code(CLASSES[u]),
                "{u:#x}"
            );
        }
    }

    /// The ASCII classes of the byte masks, of every kernel, are Oniguruma's.
    #[test]
    fn ascii_classes_match_oniguruma() {
        for kernel in [Kernel::Portable, Kernel::detect()] {
            for c in 0u8..0x80 {
                let m = kernel.masks(&padded(&[c]));
                let got = ((m.l as u8 & 1) * L) | ((m.n as u8 & 1) * N) | ((m.s as u8 & 1) * S);
                assert_eq!(got, class(c as char), "byte {c:#04x}");
            }
        }
    }
}
