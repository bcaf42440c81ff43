//! A translated Split pattern run on one byte per char ("class bytes"), for PCRE2's byte mode.
//!
//! Why: in UTF mode PCRE2's JIT decodes a char and looks its Unicode properties up at every
//! class test, and a tokenizer pattern tests each char against several classes while it tries
//! its alternatives (o200k: two letter-case runs, digits, a punctuation run, white space); that
//! was ~2/3 of o200k's encode. Here each class of the pattern becomes a set of bytes: an ASCII
//! char stands for itself, any other char for the byte (128..=255) of its *atom*, the set of
//! code points that belong to exactly the same classes of the pattern. The text is transcoded
//! to one byte per char (an ASCII text is its own transcoding) and the pattern, each class now
//! a byte class, runs in PCRE2's byte mode, where a class test is one bitmap lookup: the o200k
//! split ran ~2x faster. The pattern's structure (alternation, quantifiers, look-ahead, atomic
//! groups, anchors) is PCRE2's as before, so the matches are the UTF pattern's, their offsets
//! mapped back through the chars' byte offsets.
//!
//! A class's code points are read off the translated pattern: explicit ranges, and general
//! categories from Oniguruma's tables (PCRE2's are the same sets: `pcre::table_tests`);
//! under `(?i)` (ASCII only: the translator refuses the rest) an ASCII letter also matches its
//! other case and, as in PCRE2's Unicode case sets, `k` the Kelvin sign and `s` the long s.
//! A pattern whose classes cut the code points into more than 128 atoms keeps the UTF mode.
use super::fastsplit::{onig_property_ctype, onig_ranges};
use super::onig_to_pcre::{complement, NATIVE_CATEGORIES};
use std::collections::HashMap;
use std::fmt::Write;

/// Inclusive code point ranges, sorted and disjoint.
type Set = Vec<(u32, u32)>;

const MAX_CHAR: u32 = 0x10_FFFF;

/// A translated pattern's byte-mode form and the table that transcodes text for it.
pub struct ClassBytes {
    /// The pattern with every class (and literal char, and `.`) as a byte class.
    pub pattern: String,
    /// `blocks[stage1[c >> 8] * 256 + (c & 255)]` is the atom byte of a non-ASCII char `c`.
    stage1: Box<[u16]>,
    blocks: Box<[u8]>,
}

impl ClassBytes {
    /// The byte-mode form of `translated` (a pattern from `onig_to_pcre::translate`), or why
    /// there is none.
    pub fn new(translated: &str) -> Result<Self, String> {
        let parts = Parser::new(translated).parse()?;
        let mut sets: Vec<Set> = Vec::new();
        let mut index: HashMap<Set, usize> = HashMap::new();
        let parts: Vec<Part> = parts
            .into_iter()
            .map(|p| match p {
                Part::Class(set) => {
                    let n = sets.len();
                    let i = *index.entry(set.clone()).or_insert(n);
                    if i == n {
                        sets.push(set);
                    }
                    Part::Ref(i)
                }
                other => other,
            })
            .collect();
        let (atoms, flat) = atoms(&sets)?;
        let mut pattern = String::with_capacity(translated.len() * 2);
        for p in parts {
            match p {
                Part::Verbatim(v) => pattern.push_str(&v),
                Part::Ref(i) => byte_class(&mut pattern, &sets[i], &atoms, i),
                Part::Class(_) => unreachable!("classes were numbered above"),
            }
        }
        let (stage1, blocks) = two_stage(&flat);
        Ok(Self {
            pattern,
            stage1,
            blocks,
        })
    }

    /// The atom byte of a non-ASCII char.
    #[inline]
    fn atom(&self, c: u32) -> u8 {
        let block = self.stage1[(c >> 8) as usize] as usize;
        self.blocks[block * 256 + (c & 255) as usize]
    }

    /// Writes `text` as one byte per char to `out`, and a mark for each non-ASCII char: the
    /// index in `out` just past it, and how many bytes the chars up to it took beyond one
    /// each (`Offsets` maps a position of `out` back to `text`'s bytes with them).
    pub fn transcode(&self, text: &str, out: &mut Vec<u8>, marks: &mut Vec<(u32, u32)>) {
        let src = text.as_bytes();
        out.clear();
        marks.clear();
        out.reserve(src.len());
        let (mut i, mut extra) = (0, 0);
        loop {
            let run = ascii_run(&src[i..]);
            out.extend_from_slice(&src[i..i + run]);
            i += run;
            let Some(&b) = src.get(i) else {
                break;
            };
            // A lead byte of valid UTF-8 (a &str): its length, then its code point.
            let len = if b >= 0xF0 {
                4
            } else if b >= 0xE0 {
                3
            } else {
                2
            };
            let mut c = u32::from(b) & (0x7F >> len);
            for &cont in &src[i + 1..i + len] {
                c = (c << 6) | u32::from(cont & 0x3F);
            }
            out.push(self.atom(c));
            extra += len as u32 - 1;
            marks.push((out.len() as u32, extra));
            i += len;
        }
    }
}

/// Length of the run of ASCII bytes at the start of `b`, eight at a time.
#[inline]
fn ascii_run(b: &[u8]) -> usize {
    let mut n = 0;
    while let Some(word) = b.get(n..n + 8) {
        let w = u64::from_le_bytes(word.try_into().unwrap_or_default()) & 0x8080_8080_8080_8080;
        if w != 0 {
            return n + (w.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    n + b[n..]
        .iter()
        .position(|&x| x >= 0x80)
        .unwrap_or(b.len() - n)
}

/// Maps positions of a transcoded text back to byte offsets of the text, for positions that
/// never decrease (a search's matches, in order).
pub struct Offsets<'a> {
    marks: &'a [(u32, u32)],
    next: usize,
    extra: usize,
}

impl<'a> Offsets<'a> {
    pub fn new(marks: &'a [(u32, u32)]) -> Self {
        Self {
            marks,
            next: 0,
            extra: 0,
        }
    }

    #[inline]
    pub fn at(&mut self, pos: usize) -> usize {
        while let Some(&(p, x)) = self.marks.get(self.next) {
            if p as usize > pos {
                break;
            }
            self.extra = x as usize;
            self.next += 1;
        }
        pos + self.extra
    }
}

/// A piece of the translated pattern.
enum Part {
    /// Syntax copied as is (groups, alternation, quantifiers, anchors).
    Verbatim(String),
    /// What one char must be (a class, a literal char, `.`).
    Class(Set),
    /// A class by its number among the pattern's distinct classes.
    Ref(usize),
}

/// Reads the PCRE2 syntax that `onig_to_pcre` writes (and only that: anything else is an error,
/// and the pattern stays in UTF mode).
struct Parser<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    /// Case-insensitivity of each open group (the last is the current scope).
    ci: Vec<bool>,
    parts: Vec<Part>,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Self {
        Self {
            chars: src.chars().peekable(),
            ci: vec![false],
            parts: Vec::new(),
        }
    }

    fn ci(&self) -> bool {
        *self.ci.last().unwrap_or(&false)
    }

    fn verbatim(&mut self, s: &str) {
        if let Some(Part::Verbatim(v)) = self.parts.last_mut() {
            v.push_str(s);
        } else {
            self.parts.push(Part::Verbatim(s.to_owned()));
        }
    }

    fn class(&mut self, set: Set) {
        let set = if self.ci() { fold_ascii(&set) } else { set };
        self.parts.push(Part::Class(set));
    }

    fn parse(mut self) -> Result<Vec<Part>, String> {
        while let Some(c) = self.chars.next() {
            match c {
                '\\' => match self.escape()? {
                    Esc::Set(set) => self.class(set),
                    Esc::Anchor(a) => self.verbatim(&format!("\\{a}")),
                },
                '[' => {
                    let set = self.bracket()?;
                    self.class(set);
                }
                '.' => self.class(complement(&[(10, 10)])),
                '(' => self.group()?,
                ')' => {
                    self.ci.pop();
                    if self.ci.is_empty() {
                        return Err("an unmatched )".into());
                    }
                    self.verbatim(")");
                }
                '{' => {
                    let mut q = String::from("{");
                    loop {
                        let d = self.chars.next().ok_or("an unclosed interval")?;
                        q.push(d);
                        if d == '}' {
                            break;
                        }
                    }
                    self.verbatim(&q);
                }
                '|' | '^' | '$' | '*' | '+' | '?' => self.verbatim(&c.to_string()),
                c => self.class(vec![(c as u32, c as u32)]),
            }
        }
        Ok(self.parts)
    }

    /// After `(`: copies the group's kind; an option group's flag goes into `ci` only (the
    /// byte classes carry the folding).
    fn group(&mut self) -> Result<(), String> {
        let outer = self.ci();
        if self.chars.peek() != Some(&'?') {
            self.ci.push(outer);
            self.verbatim("(");
            return Ok(());
        }
        self.chars.next();
        let mut kind = String::new();
        while let Some(&c) = self.chars.peek() {
            self.chars.next();
            kind.push(c);
            if matches!(c, ':' | '=' | '!' | '>' | ')') {
                break;
            }
        }
        match kind.as_str() {
            ":" | "=" | "!" | ">" => {
                self.ci.push(outer);
                self.verbatim(&format!("(?{kind}"));
            }
            "i:" | "-i:" => {
                self.ci.push(kind == "i:");
                self.verbatim("(?:");
            }
            // `(?i)` at the start of a group (the translator allows no other place): the rest
            // of the group.
            "i)" | "-i)" => {
                if let Some(last) = self.ci.last_mut() {
                    *last = kind == "i)";
                }
            }
            _ => return Err(format!("the group (?{kind}")),
        }
        Ok(())
    }

    /// After a `\` outside a class.
    fn escape(&mut self) -> Result<Esc, String> {
        let c = self.chars.next().ok_or("a trailing backslash")?;
        Ok(match c {
            'A' | 'z' | 'Z' => Esc::Anchor(c),
            'x' => {
                let c = self.hex()?;
                Esc::Set(vec![(c, c)])
            }
            'p' | 'P' => Esc::Set(self.property(c == 'P')?),
            c if c.is_ascii_punctuation() => Esc::Set(vec![(c as u32, c as u32)]),
            c => return Err(format!("the escape \\{c}")),
        })
    }

    /// After `\x`: `{H..}`.
    fn hex(&mut self) -> Result<u32, String> {
        if self.chars.next() != Some('{') {
            return Err("a \\x without braces".into());
        }
        let mut digits = String::new();
        loop {
            match self.chars.next() {
                Some('}') => break,
                Some(d) => digits.push(d),
                None => return Err("an unclosed \\x{".into()),
            }
        }
        u32::from_str_radix(&digits, 16).map_err(|e| e.to_string())
    }

    /// After `\p` or `\P`: `{Name}`, a general category.
    fn property(&mut self, negate: bool) -> Result<Set, String> {
        if self.chars.next() != Some('{') {
            return Err("a \\p without braces".into());
        }
        let mut name = String::new();
        loop {
            match self.chars.next() {
                Some('}') => break,
                Some(c) => name.push(c),
                None => return Err("an unclosed \\p{".into()),
            }
        }
        if !NATIVE_CATEGORIES.contains(&name.as_str()) {
            return Err(format!("the property {name}"));
        }
        let ranges = onig_property_ctype(&name)
            .and_then(onig_ranges)
            .ok_or_else(|| format!("no table for \\p{{{name}}}"))?;
        let set = normalize(ranges);
        Ok(if negate { complement(&set) } else { set })
    }

    /// After `[`: the class up to its `]`.
    fn bracket(&mut self) -> Result<Set, String> {
        let negated = self.chars.peek() == Some(&'^');
        if negated {
            self.chars.next();
        }
        let mut ranges: Set = Vec::new();
        // The last single char, which a following `-` makes the start of a range.
        let mut last: Option<u32> = None;
        loop {
            let c = self.chars.next().ok_or("an unclosed class")?;
            match c {
                ']' => break,
                '-' if last.is_some() && self.chars.peek() != Some(&']') => {
                    let from = last.take().unwrap_or(0);
                    let to = match self.chars.next() {
                        Some('\\') => match self.class_escape()? {
                            Esc::Set(s) if s.len() == 1 && s[0].0 == s[0].1 => s[0].0,
                            _ => return Err("a range to a set".into()),
                        },
                        Some(c) => c as u32,
                        None => return Err("an unclosed class".into()),
                    };
                    if to < from {
                        return Err("a reversed range".into());
                    }
                    // `from` was pushed as a single char: widen it.
                    ranges.pop();
                    ranges.push((from, to));
                }
                '\\' => match self.class_escape()? {
                    Esc::Set(s) => {
                        last = (s.len() == 1 && s[0].0 == s[0].1).then_some(s[0].0);
                        ranges.extend(s);
                    }
                    Esc::Anchor(_) => return Err("an anchor in a class".into()),
                },
                c => {
                    last = Some(c as u32);
                    ranges.push((c as u32, c as u32));
                }
            }
        }
        let mut set = normalize(ranges);
        if self.ci() {
            // PCRE2 folds a caseless class's items, then negates.
            set = fold_ascii(&set);
        }
        Ok(if negated { complement(&set) } else { set })
    }

    /// After a `\` in a class (a `\p` of a single char class or an escaped char is a set of one).
    fn class_escape(&mut self) -> Result<Esc, String> {
        let c = self.chars.next().ok_or("a trailing backslash")?;
        Ok(match c {
            'x' => {
                let c = self.hex()?;
                Esc::Set(vec![(c, c)])
            }
            'p' | 'P' => Esc::Set(self.property(c == 'P')?),
            c if c.is_ascii_punctuation() => Esc::Set(vec![(c as u32, c as u32)]),
            c => return Err(format!("the escape \\{c} in a class")),
        })
    }
}

enum Esc {
    Set(Set),
    Anchor(char),
}

/// Sorted, merged ranges.
fn normalize(mut ranges: Set) -> Set {
    ranges.sort_unstable();
    let mut out: Set = Vec::with_capacity(ranges.len());
    for (a, b) in ranges {
        match out.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// `set` with PCRE2's caseless partners of its ASCII letters: the other case, and for `k` and
/// `s` the Kelvin sign (U+212A) and the long s (U+017F), which Unicode folds to them.
fn fold_ascii(set: &Set) -> Set {
    let mut out = set.clone();
    for c in (b'A'..=b'Z').chain(b'a'..=b'z') {
        if contains(set, u32::from(c)) {
            let other = u32::from(c ^ 0x20);
            out.push((other, other));
            match c.to_ascii_lowercase() {
                b'k' => out.push((0x212A, 0x212A)),
                b's' => out.push((0x17F, 0x17F)),
                _ => {}
            }
        }
    }
    normalize(out)
}

fn contains(set: &Set, c: u32) -> bool {
    let i = set.partition_point(|&(_, b)| b < c);
    set.get(i).is_some_and(|&(a, _)| a <= c)
}

/// The atoms of the non-ASCII code points: each atom's membership in `sets`, and the atom byte
/// of every code point (ASCII ones themselves).
fn atoms(sets: &[Set]) -> Result<(Vec<Vec<bool>>, Vec<u8>), String> {
    let mut cuts: Vec<u32> = vec![0x80, MAX_CHAR + 1];
    for set in sets {
        for &(a, b) in set {
            cuts.extend(
                [a, b + 1]
                    .into_iter()
                    .filter(|&c| c > 0x80 && c <= MAX_CHAR),
            );
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut flat = vec![0u8; MAX_CHAR as usize + 1];
    for (c, b) in flat.iter_mut().enumerate().take(0x80) {
        *b = c as u8;
    }
    let mut atoms: Vec<Vec<bool>> = Vec::new();
    let mut ids: HashMap<Vec<bool>, u8> = HashMap::new();
    for w in cuts.windows(2) {
        let member: Vec<bool> = sets.iter().map(|s| contains(s, w[0])).collect();
        let id = if let Some(&id) = ids.get(&member) {
            id
        } else {
            if atoms.len() == 128 {
                return Err("more than 128 atoms".into());
            }
            let id = 0x80 + atoms.len() as u8;
            atoms.push(member.clone());
            ids.insert(member, id);
            id
        };
        flat[w[0] as usize..w[1] as usize].fill(id);
    }
    Ok((atoms, flat))
}

/// Writes class `i` as a byte class: its ASCII members and the atoms in it.
fn byte_class(out: &mut String, set: &Set, atoms: &[Vec<bool>], i: usize) {
    let mut bytes = [false; 256];
    for c in 0..0x80u32 {
        bytes[c as usize] = contains(set, c);
    }
    for (k, member) in atoms.iter().enumerate() {
        bytes[0x80 + k] = member[i];
    }
    out.push('[');
    let mut b = 0;
    let mut any = false;
    while b < 256 {
        if !bytes[b] {
            b += 1;
            continue;
        }
        let start = b;
        while b < 256 && bytes[b] {
            b += 1;
        }
        any = true;
        let _ = write!(out, "\\x{{{start:x}}}");
        if b - 1 > start {
            let _ = write!(out, "-\\x{{{:x}}}", b - 1);
        }
    }
    if !any {
        // Matches no byte (PCRE2 has no empty class).
        out.push_str("^\\x{0}-\\x{ff}");
    }
    out.push(']');
}

/// `flat` (one byte a code point) as a two-stage table of 256-entry blocks, equal blocks shared.
fn two_stage(flat: &[u8]) -> (Box<[u16]>, Box<[u8]>) {
    let mut blocks: Vec<u8> = Vec::new();
    let mut seen: HashMap<&[u8], u16> = HashMap::new();
    let stage1 = flat
        .chunks(256)
        .map(|chunk| {
            *seen.entry(chunk).or_insert_with(|| {
                let id = (blocks.len() / 256) as u16;
                blocks.extend_from_slice(chunk);
                id
            })
        })
        .collect();
    (stage1, blocks.into_boxed_slice())
}

#[cfg(test)]
mod tests {
    use super::super::onig_to_pcre::translate;
    use super::super::pcre::Regex;
    use super::*;

    /// Patterns of public tokenizer.json files and others that exercise the syntax.
    const PATTERNS: &[&str] = &[
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        r"\p{N}{1,3}",
        r"[一-龥぀-ゟ゠-ヿ]+",
        r##"[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"##,
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
        r" ?[^(\s|[.,!?…。，、।۔،])]+",
        r"\w+|[^\w\s]+",
        r"(?i:[a-z]+|[^k])|\d+|\p{Han}+|\p{Greek}+|.|^\s|\s$",
        r"(?i:[^s]+)|\h+|\x{1F600}|\u00e9+",
        r"\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|(?>a|ab)c|x(?=y)|\Ay|z\z",
    ];

    /// Every Unicode scalar value, one after another, then text with each kind of boundary.
    fn texts() -> Vec<String> {
        let all: String = (0..=MAX_CHAR).filter_map(char::from_u32).collect();
        vec![
            all,
            "Hello WORLD's it'S ſ K kelvin  \n\n \r\n x\u{3000}y 123456 ١٢٣ ½ ²".into(),
            "中文字符 カタカナ ひらがな 한국어 العربية हिन्दी Ελληνικά Русский".into(),
            "  a\t\tb \u{a0}\u{a0}c\n/\n/usr e\u{301}\u{302} 👨‍👩‍👧 !!?? ...,,".into(),
        ]
    }

    /// The byte-mode engine finds exactly the UTF-mode engine's matches.
    #[test]
    fn matches_equal_utf_mode() {
        for src in PATTERNS {
            let translated = translate(src).unwrap_or_else(|e| panic!("{src}: {e}"));
            let utf = Regex::utf(&translated).unwrap();
            let bytes = Regex::new(&translated).unwrap();
            assert!(bytes.class_bytes(), "{src}: not in byte mode");
            for text in texts() {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                utf.for_each_match(&text, |s, e| a.push((s, e))).unwrap();
                bytes.for_each_match(&text, |s, e| b.push((s, e))).unwrap();
                if a != b {
                    let at = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(0);
                    panic!(
                        "{src}: first difference at match {at}: utf {:?}, bytes {:?}",
                        a.get(at),
                        b.get(at)
                    );
                }
            }
        }
    }

    /// Each ASCII letter's caseless partners are PCRE2's: no other code point matches it under
    /// `(?i)`.
    #[test]
    fn ascii_folding_is_pcre2s() {
        let all: String = (0x80..=MAX_CHAR).filter_map(char::from_u32).collect();
        for c in ('a'..='z').chain('A'..='Z') {
            let re = Regex::utf(&format!("(?i:{c})")).unwrap();
            let mut got = Vec::new();
            re.for_each_match(&all, |s, _| {
                got.push(all[s..].chars().next().unwrap() as u32);
            })
            .unwrap();
            let want: Vec<u32> = fold_ascii(&vec![(c as u32, c as u32)])
                .into_iter()
                .flat_map(|(a, b)| a..=b)
                .filter(|&u| u >= 0x80)
                .collect();
            assert_eq!(got, want, "{c}");
        }
    }
}
