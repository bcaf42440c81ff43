//! Translation of a Split regex from Oniguruma's syntax (what HF tokenizers compiles it with:
//! `onig::Regex::new`, the Oniguruma syntax, no options) into a PCRE2 pattern that matches the
//! same text at every position, or the reason it cannot be.
//!
//! The translation keeps the pattern's structure and rewrites what the two engines read
//! differently:
//!
//! - the class escapes `\s`, `\d`, `\w` (and their negations) become explicit code point ranges
//!   read off Oniguruma's own tables, so the Unicode data cannot differ (PCRE2's `\s` and `\w`
//!   are other sets: `\w` takes `\p{No}`, Oniguruma's does not);
//! - `\p{..}` of a general category stays a PCRE2 property (both libraries carry Unicode 16.0
//!   tables; `tests::general_categories_agree` compares every code point); other properties
//!   (scripts, binary properties, POSIX names) become ranges from Oniguruma's tables;
//! - Oniguruma's `\h` (hex digit), `\v` (vertical tab) and `\uHHHH` become PCRE2's spelling, and
//!   `{,n}` becomes `{0,n}`.
//!
//! Anything else that either engine reads differently stays on Oniguruma: back references,
//! look-behind other than alternatives of single chars and classes, `\b`/`\B` (their word
//! set), `\G`, `\K`, `\R`, `\X`, nested or intersected classes, POSIX brackets, options other
//! than `i`, possessive intervals (`{n,m}+` is a repeat in Oniguruma), and case-insensitive text
//! that Unicode folds to several chars (`ss`, `st`, `ff`, `fi`, `fl`: Oniguruma matches `ß` for
//! `(?i)ss`, PCRE2 does not) or that is not ASCII.
use super::fastsplit::{onig_property_ctype, onig_ranges};

/// Why a pattern stays on Oniguruma (shown by `Tokenizer::describe`).
pub type Unsupported = String;

/// General categories whose PCRE2 property is the same set as Oniguruma's.
pub(super) const NATIVE_CATEGORIES: &[&str] = &[
    "L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No", "P", "Pc",
    "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So", "Z", "Zs", "Zl", "Zp", "Cc",
    "Cf", "Co",
];

/// Code point ranges (inclusive) of one of Oniguruma's ctypes: the `\s`, `\d`, `\w` sets and
/// named properties.
fn ctype_ranges(ctype: onig_sys::OnigCtype) -> Result<Vec<(u32, u32)>, Unsupported> {
    onig_ranges(ctype).ok_or_else(|| "Oniguruma gives no range table for a class".to_owned())
}

/// The code points Oniguruma's `\w` matches, as ranges: one pass of the regex over every
/// scalar value, paid once per process by the first pattern with a `\w`.
static WORD: std::sync::LazyLock<Vec<(u32, u32)>> = std::sync::LazyLock::new(|| {
    let all: String = (0..=0x10_FFFFu32).filter_map(char::from_u32).collect();
    let re = onig::Regex::new(r"\w+").expect("\\w");
    re.find_iter(&all)
        .map(|(s, e)| {
            let first = all[s..].chars().next().map_or(0, |c| c as u32);
            let last = all[..e].chars().next_back().map_or(0, |c| c as u32);
            (first, last)
        })
        .collect()
});

/// Ranges of `ranges`' complement over the Unicode scalar values.
pub(super) fn complement(ranges: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut next = 0u32;
    for &(a, b) in ranges {
        if a > next {
            out.push((next, a - 1));
        }
        next = next.max(b + 1);
    }
    if next <= 0x10_FFFF {
        out.push((next, 0x10_FFFF));
    }
    out
}

/// Class items (no brackets) for `ranges`, surrogates left out (PCRE2 refuses them in UTF mode,
/// and a Rust `&str` never holds one).
fn push_ranges(out: &mut String, ranges: &[(u32, u32)]) {
    use std::fmt::Write;
    for &(a, b) in ranges {
        for (a, b) in [(a, b.min(0xD7FF)), (a.max(0xE000), b)] {
            if a > b {
                continue;
            }
            if a == b {
                let _ = write!(out, "\\x{{{a:X}}}");
            } else {
                let _ = write!(out, "\\x{{{a:X}}}-\\x{{{b:X}}}");
            }
        }
    }
}

/// What an escape stands for.
enum Escape {
    /// One char (written as PCRE2 reads it).
    Char(char),
    /// A set of chars: class items to put inside brackets, and whether it holds non-ASCII chars
    /// or a property (which case folding must not touch).
    Set(String),
    /// An anchor or other zero-width or non-class item, emitted as is outside classes.
    Verbatim(&'static str),
}

struct Translator<'a> {
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
    src: &'a str,
    out: String,
    /// Case-insensitive flag of each open group (the last is the current scope).
    ci: Vec<bool>,
    /// The previous atom, when it was a case-insensitive ASCII letter (for the fold check).
    prev_ci_letter: Option<char>,
    /// Nothing has been written since the current group (or the pattern) opened.
    at_group_start: bool,
    /// Where the last atom (a group: its `(`) starts in `out`, and where each open group does.
    atom_start: usize,
    group_starts: Vec<usize>,
}

fn unsupported<T>(what: &str) -> Result<T, Unsupported> {
    Err(what.to_owned())
}

/// ASCII letter pairs that a Unicode full case folding makes of one char (`ß` -> `ss`, the
/// `ﬀ`..`ﬆ` ligatures): Oniguruma matches the one char for the pair under `(?i)`, PCRE2 does not.
fn folds_from_one_char(a: char, b: char) -> bool {
    matches!(
        (a.to_ascii_lowercase(), b.to_ascii_lowercase()),
        ('s', 's' | 't') | ('f', 'f' | 'i' | 'l')
    )
}

impl<'a> Translator<'a> {
    fn ci(&self) -> bool {
        *self.ci.last().unwrap_or(&false)
    }

    fn next(&mut self) -> Option<char> {
        self.chars.next().map(|(_, c)| c)
    }

    fn peek(&mut self) -> Option<char> {
        self.chars.peek().map(|&(_, c)| c)
    }

    fn rest(&mut self) -> &'a str {
        let at = self.chars.peek().map_or(self.src.len(), |&(i, _)| i);
        &self.src[at..]
    }

    /// Reads the escape after a `\` (outside or inside a class).
    fn escape(&mut self, in_class: bool) -> Result<Escape, Unsupported> {
        let Some(c) = self.next() else {
            return unsupported("a trailing backslash");
        };
        let set = |ctype, negate: bool| -> Result<Escape, Unsupported> {
            let r = ctype_ranges(ctype)?;
            let r = if negate { complement(&r) } else { r };
            let mut s = String::new();
            push_ranges(&mut s, &r);
            Ok(Escape::Set(s))
        };
        match c {
            's' | 'S' => set(onig_sys::OnigEncCtype_ONIGENC_CTYPE_SPACE, c == 'S'),
            'd' | 'D' => set(onig_sys::OnigEncCtype_ONIGENC_CTYPE_DIGIT, c == 'D'),
            // Inside a class Oniguruma's `\w` is its word range table; outside it is another
            // set (without `²`, `Ⅰ`, ...), read off the regex itself.
            'w' | 'W' if in_class => set(onig_sys::OnigEncCtype_ONIGENC_CTYPE_WORD, c == 'W'),
            'w' | 'W' => {
                let r = &*WORD;
                let r = if c == 'W' { complement(r) } else { r.clone() };
                let mut s = String::new();
                push_ranges(&mut s, &r);
                Ok(Escape::Set(s))
            }
            'h' => Ok(Escape::Set("0-9a-fA-F".into())),
            'H' => Ok(Escape::Set(
                "\\x{0}-/:-@G-`g-\\x{D7FF}\\x{E000}-\\x{10FFFF}".into(),
            )),
            'p' | 'P' => self.property(c == 'P'),
            't' => Ok(Escape::Char('\t')),
            'n' => Ok(Escape::Char('\n')),
            'r' => Ok(Escape::Char('\r')),
            'f' => Ok(Escape::Char('\x0C')),
            'v' => Ok(Escape::Char('\x0B')),
            'a' => Ok(Escape::Char('\x07')),
            'e' => Ok(Escape::Char('\x1B')),
            'x' => self.hex_escape(),
            'u' => {
                let digits: String = self.rest().chars().take(4).collect();
                if digits.len() == 4 && digits.chars().all(|d| d.is_ascii_hexdigit()) {
                    for _ in 0..4 {
                        self.next();
                    }
                    let v = u32::from_str_radix(&digits, 16).unwrap_or(0);
                    char::from_u32(v)
                        .map(Escape::Char)
                        .ok_or_else(|| "a surrogate code point".to_owned())
                } else {
                    unsupported("a \\u escape without four hex digits")
                }
            }
            'A' => Ok(Escape::Verbatim("\\A")),
            'z' => Ok(Escape::Verbatim("\\z")),
            'Z' => Ok(Escape::Verbatim("\\Z")),
            c if c.is_ascii_alphanumeric() => Err(format!(
                "the escape \\{c} (Oniguruma and PCRE2 read it differently, or it is a back \
                 reference, a word boundary or a search anchor)"
            )),
            c if c.is_ascii() => Ok(Escape::Char(c)),
            _ => unsupported("an escaped non-ASCII char"),
        }
    }

    /// `\xHH` or `\x{H..}` (the `x` read).
    fn hex_escape(&mut self) -> Result<Escape, Unsupported> {
        let v = if self.peek() == Some('{') {
            self.next();
            let mut digits = String::new();
            loop {
                match self.next() {
                    Some('}') => break,
                    Some(d) if d.is_ascii_hexdigit() && digits.len() < 8 => digits.push(d),
                    _ => return unsupported("a malformed \\x{..} escape"),
                }
            }
            u32::from_str_radix(&digits, 16).map_err(|e| e.to_string())?
        } else {
            let mut digits = String::new();
            while digits.len() < 2 && self.peek().is_some_and(|d| d.is_ascii_hexdigit()) {
                digits.push(self.next().unwrap_or('0'));
            }
            if digits.is_empty() {
                return unsupported("a \\x escape without hex digits");
            }
            let v = u32::from_str_radix(&digits, 16).map_err(|e| e.to_string())?;
            if v >= 0x80 {
                // Oniguruma reads `\xHH` past 0x7F as a raw byte of the UTF-8 encoding.
                return unsupported("a \\xHH escape of a non-ASCII byte");
            }
            v
        };
        char::from_u32(v)
            .map(Escape::Char)
            .ok_or_else(|| "an escape of no Unicode scalar value".to_owned())
    }

    /// `\p{..}` or `\P{..}` (the `p`/`P` read).
    fn property(&mut self, mut negate: bool) -> Result<Escape, Unsupported> {
        if self.next() != Some('{') {
            return unsupported("a \\p without braces");
        }
        let mut name = String::new();
        loop {
            match self.next() {
                Some('}') => break,
                Some(c) => name.push(c),
                None => return unsupported("an unclosed \\p{"),
            }
        }
        if let Some(rest) = name.strip_prefix('^') {
            negate = !negate;
            name = rest.to_owned();
        }
        if NATIVE_CATEGORIES.contains(&name.as_str()) {
            let p = if negate { 'P' } else { 'p' };
            return Ok(Escape::Set(format!("\\{p}{{{name}}}")));
        }
        if name.eq_ignore_ascii_case("word") {
            return unsupported("\\p{Word} (Oniguruma's range table differs from its \\w)");
        }
        let ctype = onig_property_ctype(&name)
            .ok_or_else(|| format!("the property {name:?}, which Oniguruma does not know"))?;
        let r = ctype_ranges(ctype)?;
        let r = if negate { complement(&r) } else { r };
        let mut s = String::new();
        push_ranges(&mut s, &r);
        Ok(Escape::Set(s))
    }

    /// Writes `c` as a literal outside a class.
    fn literal(&mut self, c: char) -> Result<(), Unsupported> {
        if self.ci() {
            if !c.is_ascii() {
                return unsupported("non-ASCII text under (?i) (Unicode folding differs)");
            }
            if let Some(p) = self.prev_ci_letter {
                if folds_from_one_char(p, c) {
                    return Err(format!(
                        "{p}{c} under (?i) (one char folds to it; Oniguruma matches that char)"
                    ));
                }
            }
        }
        push_literal(&mut self.out, c);
        self.prev_ci_letter = (self.ci() && c.is_ascii_alphabetic()).then_some(c);
        Ok(())
    }

    fn class(&mut self) -> Result<(), Unsupported> {
        let mut body = String::new();
        let mut negated = false;
        if self.peek() == Some('^') {
            self.next();
            negated = true;
        }
        let mut unicode = false;
        self.class_items(&mut body, &mut unicode)?;
        if self.ci() && unicode {
            return unsupported("a Unicode class under (?i) (Oniguruma folds classes)");
        }
        if body.is_empty() {
            return unsupported("an empty class");
        }
        self.out.push('[');
        if negated {
            self.out.push('^');
        }
        self.out.push_str(&body);
        self.out.push(']');
        Ok(())
    }

    /// A class's items up to its `]` (read), into `body`. A nested class that is not negated
    /// (BLOOM's `[^(\s|[.,!?])]`) is a union in Oniguruma: its items join the outer ones.
    fn class_items(&mut self, body: &mut String, unicode: &mut bool) -> Result<(), Unsupported> {
        if self.peek() == Some(']') {
            return unsupported("a class that starts with ]");
        }
        // Whether the last item was a set (no range may touch it) or a single char (a `-`
        // after it makes a range); `unicode`: whether the class holds a property or non-ASCII
        // chars (case folding must not touch it).
        let mut last_set = false;
        let mut last_char = false;
        loop {
            let Some(c) = self.next() else {
                return unsupported("an unclosed class");
            };
            match c {
                ']' => break,
                '[' => {
                    if matches!(self.peek(), Some('^' | ':')) {
                        return unsupported("a negated nested class or a POSIX bracket");
                    }
                    self.class_items(body, unicode)?;
                    (last_set, last_char) = (true, false);
                }
                '&' if self.peek() == Some('&') => return unsupported("a class intersection (&&)"),
                '-' => {
                    let at_end = self.peek() == Some(']');
                    let set_next = self.rest().starts_with('\\')
                        && self
                            .rest()
                            .chars()
                            .nth(1)
                            .is_some_and(|e| "sSdDwWhHpP".contains(e));
                    if !at_end && (last_set || set_next || self.peek() == Some('[')) {
                        return unsupported("a range next to a class escape");
                    }
                    if last_char && !at_end {
                        body.push('-');
                        last_char = false;
                    } else {
                        // A literal `-` (first, last, or after a range), escaped so that the
                        // items around it (from a nested class too) never make a range.
                        body.push_str("\\-");
                        last_char = true;
                    }
                    last_set = false;
                }
                '\\' => match self.escape(true)? {
                    Escape::Char(ch) => {
                        *unicode |= !ch.is_ascii();
                        push_class_char(body, ch);
                        (last_set, last_char) = (false, true);
                    }
                    Escape::Set(s) => {
                        *unicode = true;
                        body.push_str(&s);
                        (last_set, last_char) = (true, false);
                    }
                    Escape::Verbatim(_) => return unsupported("an anchor inside a class"),
                },
                c => {
                    *unicode |= !c.is_ascii();
                    push_class_char(body, c);
                    (last_set, last_char) = (false, true);
                }
            }
        }
        Ok(())
    }

    /// After `(`: the group's kind.
    fn group(&mut self) -> Result<(), Unsupported> {
        let outer = self.ci();
        if self.peek() != Some('?') {
            self.out.push('(');
            self.ci.push(outer);
            return Ok(());
        }
        self.next();
        match self.next() {
            Some(':') => {
                self.out.push_str("(?:");
                self.ci.push(outer);
            }
            Some('=') => {
                self.out.push_str("(?=");
                self.ci.push(outer);
            }
            Some('!') => {
                self.out.push_str("(?!");
                self.ci.push(outer);
            }
            Some('>') => {
                self.out.push_str("(?>");
                self.ci.push(outer);
            }
            Some(c @ ('i' | '-')) => {
                let on = c == 'i';
                if !on && self.next() != Some('i') {
                    return unsupported("an option other than i");
                }
                match self.next() {
                    Some(':') => {
                        self.out.push_str(if on { "(?i:" } else { "(?-i:" });
                        self.ci.push(on);
                    }
                    Some(')') => {
                        // Applies to the rest of the enclosing group. Oniguruma reads
                        // `a(?i)b|c` as `a(?i:b|c)`, PCRE2 as `a(?i)b|(?i)c`: the same only
                        // where nothing precedes the option in its group.
                        if !self.at_group_start {
                            return unsupported("(?i) after the start of its group");
                        }
                        self.out.push_str(if on { "(?i)" } else { "(?-i)" });
                        if let Some(last) = self.ci.last_mut() {
                            *last = on;
                        }
                    }
                    _ => return unsupported("an option other than i"),
                }
            }
            Some('<') if matches!(self.peek(), Some('=' | '!')) => {
                let negative = self.next() == Some('!');
                look_behind_body(self.rest())?;
                self.out.push_str(if negative { "(?<!" } else { "(?<=" });
                self.ci.push(outer);
            }
            _ => return unsupported("a group kind other than (?:, (?=, (?!, (?>, (?i"),
        }
        Ok(())
    }

    /// After a quantifier's `{`: copies a valid interval; true when it wrapped the quantified
    /// atom in a group for a `+` that follows (Oniguruma reads `x{1,3}+` as `(?:x{1,3})+`,
    /// PCRE2 as a possessive interval).
    fn interval(&mut self) -> Result<bool, Unsupported> {
        let rest = self.rest();
        let Some(close) = rest.find('}') else {
            return unsupported("a { that is not an interval");
        };
        let inner = &rest[..close];
        let valid = {
            let mut parts = inner.splitn(2, ',');
            let lo = parts.next().unwrap_or("");
            let hi = parts.next();
            let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
            match hi {
                None => !lo.is_empty() && digits(lo),
                Some(hi) => digits(lo) && digits(hi) && !(lo.is_empty() && hi.is_empty()),
            }
        };
        if !valid {
            return unsupported("a { that is not an interval");
        }
        for _ in 0..=close {
            self.next();
        }
        let inner = if inner.starts_with(',') {
            format!("0{inner}")
        } else {
            inner.to_owned()
        };
        self.out.push('{');
        self.out.push_str(&inner);
        self.out.push('}');
        if self.peek() == Some('?') && !inner.contains(',') {
            return unsupported("{n}? (Oniguruma's reading differs)");
        }
        if self.peek() == Some('+') {
            self.out.insert_str(self.atom_start, "(?:");
            self.out.push(')');
            return Ok(true);
        }
        Ok(false)
    }

    // One match over the pattern syntax, a case per construct: reads best in one piece.
    #[allow(clippy::too_many_lines)]
    fn run(mut self) -> Result<String, Unsupported> {
        // Whether the previous item can take a quantifier (and had none yet).
        let mut quantifiable = false;
        let mut quantified = false;
        while let Some(c) = self.next() {
            let opens = c == '(';
            let start = self.out.len();
            let mut atom = true;
            match c {
                '\\' => match self.escape(false)? {
                    Escape::Char(ch) => self.literal(ch)?,
                    Escape::Set(s) => {
                        if self.ci() {
                            return unsupported("a class escape under (?i)");
                        }
                        // One property needs no brackets (PCRE2 matches it directly).
                        let single = (s.starts_with("\\p{") || s.starts_with("\\P{"))
                            && s.find('}') == Some(s.len() - 1);
                        if single {
                            self.out.push_str(&s);
                        } else {
                            self.out.push('[');
                            self.out.push_str(&s);
                            self.out.push(']');
                        }
                        self.prev_ci_letter = None;
                    }
                    Escape::Verbatim(v) => {
                        self.out.push_str(v);
                        self.prev_ci_letter = None;
                        atom = false;
                    }
                },
                '[' => {
                    self.class()?;
                    self.prev_ci_letter = None;
                }
                '(' => {
                    let depth = self.ci.len();
                    self.group()?;
                    if self.ci.len() > depth {
                        self.group_starts.push(start);
                    }
                    self.prev_ci_letter = None;
                    atom = false;
                }
                ')' => {
                    if self.ci.pop().is_none() || self.ci.is_empty() {
                        return unsupported("an unmatched )");
                    }
                    self.out.push(')');
                    self.prev_ci_letter = None;
                    self.atom_start = self.group_starts.pop().unwrap_or(0);
                }
                '|' | '^' | '$' => {
                    self.out.push(c);
                    self.prev_ci_letter = None;
                    atom = false;
                }
                '.' => {
                    self.out.push('.');
                    self.prev_ci_letter = None;
                }
                '*' | '+' | '?' | '{' => {
                    if c == '{' && !quantifiable {
                        self.literal('{')?;
                        quantifiable = true;
                        quantified = false;
                        continue;
                    }
                    if !quantifiable || quantified {
                        return unsupported("a quantifier on a quantifier or on nothing");
                    }
                    if c == '{' {
                        if self.interval()? {
                            // The `+` after it quantifies the new group.
                            quantified = false;
                            self.prev_ci_letter = None;
                            continue;
                        }
                    } else {
                        self.out.push(c);
                    }
                    // A lazy or possessive mark: both engines read `*?`, `*+` (and `+`, `?`)
                    // the same.
                    if matches!(self.peek(), Some('?' | '+')) {
                        let m = self.next().unwrap_or('?');
                        self.out.push(m);
                    }
                    quantified = true;
                    // A quantified letter is no longer a plain neighbour of the next one.
                    self.prev_ci_letter = None;
                    continue;
                }
                c => self.literal(c)?,
            }
            if c != ')' {
                self.atom_start = start;
            }
            quantifiable = atom;
            quantified = false;
            // An option group `(?i)` leaves the group's start where it was.
            self.at_group_start = opens && (self.out.ends_with('(') || self.out.ends_with(':'))
                || (self.at_group_start && self.out.ends_with("(?i)"));
        }
        if self.ci.len() != 1 {
            return unsupported("an unclosed group");
        }
        Ok(self.out)
    }
}

fn push_literal(out: &mut String, c: char) {
    if r"\.^$|?*+()[]{}".contains(c) {
        out.push('\\');
    }
    push_char(out, c);
}

fn push_class_char(out: &mut String, c: char) {
    if r"\]^-[".contains(c) {
        out.push('\\');
    }
    push_char(out, c);
}

/// A char as PCRE2 reads it unambiguously: control chars as escapes.
fn push_char(out: &mut String, c: char) {
    use std::fmt::Write;
    if c.is_control() || c == ' ' || c == '#' {
        let _ = write!(out, "\\x{{{:X}}}", c as u32);
    } else {
        out.push(c);
    }
}

/// The PCRE2 pattern that matches what Oniguruma matches for `src`, or why there is none.
pub fn translate(src: &str) -> Result<String, Unsupported> {
    Translator {
        chars: src.char_indices().peekable(),
        src,
        out: String::with_capacity(src.len() * 2),
        ci: vec![false],
        prev_ci_letter: None,
        at_group_start: true,
        atom_start: 0,
        group_starts: Vec::new(),
    }
    .run()
}

/// Checks a look-behind's body (`rest` starts after `(?<=` or `(?<!`): alternatives of
/// single-char atoms (a char, an escape of one char or a class, `\p{..}`, a bracket class, `.`),
/// no quantifier, group or anchor. Each alternative then has a fixed width, and both engines test
/// it at that distance back from the position: the same matches. Oniguruma's look-behind also
/// takes bodies that PCRE2 reads otherwise or refuses (variable widths, nested groups); those
/// stay on Oniguruma.
fn look_behind_body(rest: &str) -> Result<(), Unsupported> {
    let other = || unsupported("a look-behind other than alternatives of single chars and classes");
    let mut chars = rest.chars().peekable();
    let mut width = 0usize;
    loop {
        let Some(c) = chars.next() else {
            return unsupported("an unclosed look-behind");
        };
        match c {
            ')' | '|' => {
                if width == 0 {
                    return other();
                }
                if c == ')' {
                    return Ok(());
                }
                width = 0;
                continue;
            }
            '\\' => match chars.next() {
                Some('p' | 'P' | 'x') if chars.peek() == Some(&'{') => {
                    if !chars.by_ref().any(|d| d == '}') {
                        return other();
                    }
                }
                // `\xHH` and `\uHHHH`: the translator reads the digits.
                Some(e) if e.is_ascii_alphanumeric() && !"sSdDwWhHtnrfvaexu".contains(e) => {
                    return other(); // anchors, back references, \b, \K, \R, \X ...
                }
                Some(_) => {}
                None => return other(),
            },
            '[' => {
                let mut depth = 1;
                while depth > 0 {
                    match chars.next() {
                        Some('\\') => {
                            chars.next();
                        }
                        Some('[') => depth += 1,
                        Some(']') => depth -= 1,
                        Some(_) => {}
                        None => return other(),
                    }
                }
            }
            '(' | '*' | '+' | '?' | '{' | '^' | '$' => return other(),
            _ => {}
        }
        if matches!(chars.peek(), Some('*' | '+' | '?' | '{')) {
            return other();
        }
        width += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translates_the_common_patterns() {
        for src in [
            super::super::fastsplit::GPT2_PATTERN,
            r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
            r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}",
            r"\p{N}",
            r"[0-9]{,3}",
            r"\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+",
            r"(?<=\p{L})\s+(?!\S)",
            r"(?<![a-z\d])x|(?<=ab|\x{41}|\u00e9|[\p{L}\]])y",
        ] {
            translate(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        }
    }

    #[test]
    fn refuses_what_differs() {
        for src in [
            r"(a)\1",
            r"(?<=a+)b",
            r"(?<=(a))b",
            r"(?<=a|)b",
            r"(?<=\ba)b",
            r"(?<!a{2})b",
            r"(?<=a",
            r"\bfoo",
            r"(?i:ss)",
            r"(?i:é)",
            r"[[:alpha:]]",
            r"[a-z&&[^aeiou]]",
            r"(?m:.)",
            r"\R",
            r"\K",
            r"\G",
            r"a(?i)b|c",
        ] {
            assert!(translate(src).is_err(), "{src}");
        }
    }
}

#[cfg(test)]
mod interval_tests {
    #[test]
    fn a_plus_after_an_interval_repeats_it() {
        assert_eq!(
            super::translate(r"\p{N}{1,3}+|(ab){2,}+?").unwrap(),
            r"(?:\p{N}{1,3})+|(?:(ab){2,})+?"
        );
    }
}
