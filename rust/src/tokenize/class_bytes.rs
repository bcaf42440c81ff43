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

/// A translated pattern over class bytes and the table that transcodes text for it: ASCII
/// chars stand for themselves, other chars for bytes 128..=255 (their atom's, or for the DFA
/// form a stand-in of their atom's DFA byte); an ASCII text is its own transcoding.
pub struct ClassBytes {
    /// The pattern with every class (and literal char, and `.`) as a byte class: PCRE2 syntax
    /// (`ClassBytes::pcre`) or regex-automata's (`ClassBytes::dfa`).
    pub pattern: String,
    /// `blocks[stage1[c >> 8] * 256 + (c & 255)]` is the atom byte of a non-ASCII char `c`.
    stage1: Box<[u16]>,
    blocks: Box<[u8]>,
}

/// ASCII word bytes (regex-automata's `\b`): the DFA form gives them to the atoms of the
/// pattern's look-ahead class, so that `(?!C)` is `\b{end-half}`.
const WORD_BYTES: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";

impl ClassBytes {
    /// The PCRE2 byte-mode form of `translated` (a pattern from `onig_to_pcre::translate`):
    /// ASCII chars stand for themselves, atoms of other chars for bytes 128..=255.
    pub fn pcre(translated: &str) -> Result<Self, String> {
        let (parts, sets) = classes(translated)?;
        let (atoms, flat) = atoms(&sets, 0x80)?;
        if atoms.len() > 128 {
            return Err("more than 128 atoms".into());
        }
        let atom_bytes: Vec<u8> = (0..atoms.len()).map(|k| 0x80 + k as u8).collect();
        let mut pattern = String::with_capacity(translated.len() * 2);
        for p in &parts {
            match p {
                Part::Verbatim(v) => pattern.push_str(v),
                Part::Ref(i) => {
                    let mut bytes = [false; 256];
                    for c in 0..0x80u32 {
                        bytes[c as usize] = contains(&sets[*i], c);
                    }
                    for (k, member) in atoms.iter().enumerate() {
                        bytes[atom_bytes[k] as usize] = member[*i];
                    }
                    byte_class(&mut pattern, &bytes);
                }
            }
        }
        Ok(Self::with_table(pattern, &flat, &atom_bytes))
    }

    /// The form for a DFA (regex-automata's syntax, bytes only), or why there is none: every
    /// char, ASCII too, becomes its atom's byte. A DFA has no look-ahead, but a negative
    /// look-ahead of one class `C` (`\s+(?!\S)` in every byte-level pattern) asks only that
    /// the next char not be in `C`: with `C`'s atoms on the ASCII word bytes and every other
    /// atom off them, that is the DFA's `\b{end-half}`. The line feed keeps its byte (the
    /// DFA's `$` looks for it). Refused: other look-arounds, atomic groups and possessive
    /// quantifiers, `^` (PCRE2 reads it differently after a final newline), `\Z`, and a
    /// repeat of what can match empty (where a DFA and a backtracker may part ways).
    ///
    /// The class bytes stay those of the PCRE2 form (ASCII chars themselves, other chars bytes
    /// 128..=255 by `atom`, one per distinct DFA byte): the second value maps them to the DFA's
    /// bytes, for the walker's table to be read by them.
    pub fn dfa(translated: &str) -> Result<(Self, [u8; 256]), String> {
        let (parts, mut sets) = classes(translated)?;
        // The look-ahead class, and the parts with each `(?!C)` made `\b{end-half}`.
        let mut ahead: Option<usize> = None;
        let mut out: Vec<Part> = Vec::with_capacity(parts.len());
        let mut k = 0;
        while k < parts.len() {
            if let (Part::Verbatim(v), Some(Part::Ref(c)), Some(Part::Verbatim(next))) =
                (&parts[k], parts.get(k + 1), parts.get(k + 2))
            {
                if let (Some(before), Some(after)) = (v.strip_suffix("(?!"), next.strip_prefix(')'))
                {
                    if ahead.is_some_and(|a| a != *c) {
                        return Err("look-aheads of two classes".into());
                    }
                    ahead = Some(*c);
                    out.push(Part::Verbatim(format!("{before}(?-u:\\b{{end-half}})")));
                    out.push(Part::Verbatim(after.to_owned()));
                    k += 3;
                    continue;
                }
            }
            out.push(match &parts[k] {
                Part::Verbatim(v) => Part::Verbatim(v.clone()),
                Part::Ref(i) => Part::Ref(*i),
            });
            k += 1;
        }
        for p in &out {
            if let Part::Verbatim(v) = p {
                for bad in [
                    "(?=", "(?!", "(?<", "(?>", "++", "*+", "?+", "}+", "^", "\\Z",
                ] {
                    if v.contains(bad) {
                        return Err(format!("{bad} has no DFA form"));
                    }
                }
            }
        }
        // The line feed alone in its atom (`$`).
        sets.push(vec![(10, 10)]);
        let (atoms, flat) = atoms(&sets, 0)?;
        let mut word = WORD_BYTES.iter().copied();
        let mut other = (0..=255u8).filter(|b| !WORD_BYTES.contains(b) && *b != b'\n');
        let line_feed = flat[10];
        let mut atom_bytes = Vec::with_capacity(atoms.len());
        for (k, member) in atoms.iter().enumerate() {
            let b = if k == usize::from(line_feed) {
                if ahead.is_some_and(|a| member[a]) {
                    return Err("a look-ahead class with the line feed".into());
                }
                Some(b'\n')
            } else if ahead.is_some_and(|a| member[a]) {
                word.next()
            } else {
                other.next()
            };
            atom_bytes.push(b.ok_or("too many atoms for a DFA's bytes")?);
        }
        let mut pattern = String::with_capacity(translated.len() * 2);
        for p in &out {
            match p {
                Part::Verbatim(v) => pattern.push_str(v),
                Part::Ref(i) => {
                    let mut bytes = [false; 256];
                    for (k, member) in atoms.iter().enumerate() {
                        bytes[atom_bytes[k] as usize] = member[*i];
                    }
                    byte_class(&mut pattern, &bytes);
                }
            }
        }
        // Each DFA byte that non-ASCII chars take gets a byte from 128 on.
        let mut remap = [0u8; 256];
        let mut high: [Option<u8>; 256] = [None; 256];
        let mut n_high = 0usize;
        let mut kept = vec![0u8; flat.len()];
        for (c, (&a, k)) in flat.iter().zip(kept.iter_mut()).enumerate() {
            let b = atom_bytes[usize::from(a)];
            *k = if c < 0x80 {
                remap[c] = b;
                c as u8
            } else if let Some(h) = high[usize::from(b)] {
                h
            } else {
                if n_high == 128 {
                    return Err("more than 128 DFA bytes for non-ASCII chars".into());
                }
                let h = 0x80 + n_high as u8;
                n_high += 1;
                high[usize::from(b)] = Some(h);
                remap[usize::from(h)] = b;
                h
            };
        }
        let identity: Vec<u8> = (0..=255).collect();
        Ok((Self::with_table(pattern, &kept, &identity), remap))
    }

    /// `flat` holds each code point's atom (for ASCII, the char itself), `atom_bytes` each
    /// atom's byte.
    fn with_table(pattern: String, flat: &[u8], atom_bytes: &[u8]) -> Self {
        let bytes: Vec<u8> = flat
            .iter()
            .enumerate()
            .map(|(c, &a)| {
                if c < 0x80 {
                    c as u8
                } else {
                    atom_bytes[usize::from(a)]
                }
            })
            .collect();
        let (stage1, blocks) = two_stage(&bytes);
        Self {
            pattern,
            stage1,
            blocks,
        }
    }

    /// The atom byte of a non-ASCII char.
    #[inline]
    pub fn atom(&self, c: u32) -> u8 {
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
    /// A class (what one char must be: a class, a literal char, `.`) by its number among the
    /// pattern's distinct classes.
    Ref(usize),
}

/// The pattern's parts and its distinct classes (as code point sets).
fn classes(translated: &str) -> Result<(Vec<Part>, Vec<Set>), String> {
    let mut sets: Vec<Set> = Vec::new();
    let mut index: HashMap<Set, usize> = HashMap::new();
    let parts = Parser::new(translated)
        .parse()?
        .into_iter()
        .map(|p| match p {
            Parsed::Verbatim(v) => Part::Verbatim(v),
            Parsed::Class(set) => {
                let n = sets.len();
                let i = *index.entry(set.clone()).or_insert(n);
                if i == n {
                    sets.push(set);
                }
                Part::Ref(i)
            }
        })
        .collect();
    Ok((parts, sets))
}

/// A piece of the translated pattern as read.
enum Parsed {
    Verbatim(String),
    Class(Set),
}

/// Reads the PCRE2 syntax that `onig_to_pcre` writes (and only that: anything else is an error,
/// and the pattern stays in UTF mode).
struct Parser<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    /// Case-insensitivity of each open group (the last is the current scope).
    ci: Vec<bool>,
    parts: Vec<Parsed>,
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
        if let Some(Parsed::Verbatim(v)) = self.parts.last_mut() {
            v.push_str(s);
        } else {
            self.parts.push(Parsed::Verbatim(s.to_owned()));
        }
    }

    fn class(&mut self, set: Set) {
        let set = if self.ci() { fold_ascii(&set) } else { set };
        self.parts.push(Parsed::Class(set));
    }

    fn parse(mut self) -> Result<Vec<Parsed>, String> {
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
            ":" | "=" | "!" | ">" | "<=" | "<!" => {
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

/// The atoms of the code points from `from` on: each atom's membership in `sets`, and each
/// code point's atom (its index; below `from`, the code point itself).
fn atoms(sets: &[Set], from: u32) -> Result<(Vec<Vec<bool>>, Vec<u8>), String> {
    let mut cuts: Vec<u32> = vec![from, MAX_CHAR + 1];
    for set in sets {
        for &(a, b) in set {
            cuts.extend(
                [a, b + 1]
                    .into_iter()
                    .filter(|&c| c > from && c <= MAX_CHAR),
            );
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut flat = vec![0u8; MAX_CHAR as usize + 1];
    for (c, b) in flat.iter_mut().enumerate().take(from as usize) {
        *b = c as u8;
    }
    let mut atoms: Vec<Vec<bool>> = Vec::new();
    let mut ids: HashMap<Vec<bool>, u8> = HashMap::new();
    for w in cuts.windows(2) {
        let member: Vec<bool> = sets.iter().map(|s| contains(s, w[0])).collect();
        let id = if let Some(&id) = ids.get(&member) {
            id
        } else {
            if atoms.len() == 256 {
                return Err("more than 256 atoms".into());
            }
            let id = atoms.len() as u8;
            atoms.push(member.clone());
            ids.insert(member, id);
            id
        };
        flat[w[0] as usize..w[1] as usize].fill(id);
    }
    Ok((atoms, flat))
}

/// Writes a byte class of the bytes set in `bytes`.
fn byte_class(out: &mut String, bytes: &[bool; 256]) {
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
        let _ = write!(out, "\\x{start:02X}");
        if b - 1 > start {
            let _ = write!(out, "-\\x{:02X}", b - 1);
        }
    }
    if !any {
        // Matches no byte (neither syntax has an empty class).
        out.push_str("^\\x00-\\xFF");
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
pub(super) mod tests {
    use super::super::onig_to_pcre::translate;
    use super::super::pcre::Regex;
    use super::*;

    /// Patterns of public tokenizer.json files and others that exercise the syntax.
    pub(in crate::tokenize) const PATTERNS: &[&str] = &[
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
        r"\s+$|\p{L}+(?!\s)|\p{N}|.",
        r"(?<=\p{L})\s+(?!\S)|(?<![\p{N}a-z])\p{N}+|(?<=ab|é|\p{Lu})x|.",
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

    /// The byte-mode engine and the DFA find exactly the UTF-mode engine's matches; the
    /// patterns of real tokenizers (the first seven) have a DFA.
    #[test]
    fn matches_equal_utf_mode() {
        for (n, src) in PATTERNS.iter().enumerate() {
            let translated = translate(src).unwrap_or_else(|e| panic!("{src}: {e}"));
            let utf = Regex::utf(&translated).unwrap();
            let bytes = Regex::pcre(&translated).unwrap();
            let best = Regex::new(&translated).unwrap();
            assert!(bytes.class_bytes(), "{src}: not in byte mode");
            assert!(n >= 7 || best.dfa(), "{src}: no DFA");
            for text in texts() {
                let mut want = Vec::new();
                utf.for_each_match(&text, |s, e| want.push((s, e))).unwrap();
                for (engine, re) in [("pcre2 bytes", &bytes), ("best", &best)] {
                    let mut got = Vec::new();
                    re.for_each_match(&text, |s, e| got.push((s, e))).unwrap();
                    if got != want {
                        let at = got.iter().zip(&want).position(|(x, y)| x != y).unwrap_or(0);
                        panic!(
                            "{src} ({engine}): first difference at match {at}: utf {:?}, got {:?}",
                            want.get(at),
                            got.get(at)
                        );
                    }
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
