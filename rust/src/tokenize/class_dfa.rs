//! Split regexes as a DFA over class bytes: the fastest engine for a translated pattern that
//! has a DFA form (`ClassBytes::dfa`: o200k's, Tekken's, DeepSeek's and most byte-level
//! patterns).
//!
//! Why: PCRE2 backtracks through the pattern's alternatives at every match and pays a call (or
//! a callout) per match; the o200k split on PCRE2's byte mode still took ~45% of the encode.
//! A DFA reads each char once, with one table lookup, whatever the alternatives. Leftmost-first
//! matching (regex-automata's `MatchKind::LeftmostFirst`) gives the match a backtracking
//! engine gives, for patterns without look-around, atomic groups or repeats of what can match
//! empty (`ClassBytes::dfa` refuses those, and the pattern stays on PCRE2); each search is
//! anchored where the last match ended, and the DFA runs until it dies, the last match state
//! it passed being the match.
use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::nfa::thompson;
use regex_automata::util::primitives::StateID;
use regex_automata::util::{start, syntax};
use regex_automata::{Anchored, MatchKind};

use super::class_bytes::ClassBytes;

/// The most memory a pattern's DFA may take (o200k's: 11 KiB, 43 states of 39 byte classes,
/// copied into a 7 KiB table); past it, PCRE2 runs the pattern.
const DFA_SIZE_LIMIT: usize = 4 << 20;

pub struct ClassDfa {
    pub classes: ClassBytes,
    /// `next[s + class[b]]`: the state after state `s` (its index times `stride`) reads a char
    /// of class byte `b` (an ASCII char itself, another its `ClassBytes::atom`). States are
    /// numbered dead (0), then those entered right after a match (a DFA reports a match one
    /// char late), then the rest: one comparison a char tells the common case.
    /// (regex-automata's own `next_state` and state tests compiled to ~3 ns a byte here, its
    /// limits spilled to the stack; this loop is a lookup and a compare.)
    next: Box<[u32]>,
    /// The DFA's byte class of each class byte.
    class: [u8; 256],
    stride: usize,
    /// `next` values below this are dead or match states.
    special: u32,
    /// `next` values below this are dead, or match states no char can extend (every char leads
    /// to the dead state, the text's end to no match): the search ends there without reading
    /// the next char, which saves a step and the mispredicted exit it took after most matches.
    finals: u32,
    /// Whether the text's end, read in state `s / stride`, ends a match there.
    eoi_match: Box<[bool]>,
    /// The anchored start state after a char of each class byte, and at the text's start (256).
    starts: Box<[u32]>,
    /// The start state, when it does not depend on the char before (no look-behind).
    one_start: Option<u32>,
    /// The streaming form of the DFA, where the pattern allows one (see `Stream`).
    stream: Option<Stream>,
}

/// The DFA run over a whole text without stopping at each match: a transition into a final
/// state (a match that nothing extends, ending at the char just read) goes on as the start
/// state's transition on that char would, into a flagged copy of that state, which marks a
/// match boundary there.
///
/// Why: `match_at` returns at every match (4-5 chars of text on average), and the return is a
/// branch that mispredicts about once a match, plus a call and a fresh start; that was most of
/// the o200k split's time (216 MB/s, against 680 for cl100k's bit-parallel splitter). Here a
/// boundary is a store and a counter bump with no branch, and the loop only leaves for the
/// rare match that ends before the char the DFA died on (e.g. `\s+(?!\S)` backing off a space, a
/// cut contraction): that match is found again by `match_at` from its start.
///
/// Only for patterns whose start state does not depend on the char before and that match no
/// empty text (the start state's transitions never enter a match state).
struct Stream {
    /// Rows as in `ClassDfa::next`, then the same rows again as flagged copies from `flagged`
    /// on; 0 is dead.
    next: Box<[u32]>,
    /// Where the flagged copies start: a state at or past it was entered at a boundary.
    flagged: u32,
    /// The start state (as `one_start`).
    start: u32,
    /// Whether the text's end, read in row `s / stride`, ends a match there.
    eoi_match: Box<[bool]>,
}

/// Chars the streaming loop reads between looks at whether the DFA died: a dead state stays
/// dead and flags no boundary, so it is enough to notice it once a block.
const STREAM_BLOCK: usize = 64;

impl Stream {
    fn new(dfa: &ClassDfa) -> Option<Self> {
        let start = dfa.one_start?;
        let stride = dfa.stride;
        let rows = dfa.next.len() / stride;
        let start_next = &dfa.next[start as usize..start as usize + stride];
        // A start transition into a match state is an empty match.
        if start_next.iter().any(|&t| t != 0 && t < dfa.special) {
            return None;
        }
        let flagged = u32::try_from(rows * stride).ok()?;
        let mut next = vec![0u32; 2 * rows * stride];
        for r in 0..rows {
            for c in 0..stride {
                let t = dfa.next[r * stride + c];
                let entry = if t != 0 && t < dfa.finals {
                    // A match ends at this char, and the next one starts with it (in the flagged
                    // copy of the dead state where no match starts with it: the next char then
                    // kills it, past the boundary, and `next_match` skips the char).
                    start_next[c] + flagged
                } else {
                    t
                };
                next[r * stride + c] = entry;
                next[(rows + r) * stride + c] = entry;
            }
        }
        let eoi_match = (0..2 * rows).map(|r| dfa.eoi_match[r % rows]).collect();
        Some(Self {
            next: next.into_boxed_slice(),
            flagged,
            start,
            eoi_match,
        })
    }
}

impl ClassDfa {
    /// The DFA of a translated pattern (from `onig_to_pcre::translate`), or why there is none.
    pub fn new(translated: &str) -> Result<Self, String> {
        let (classes, remap) = ClassBytes::dfa(translated)?;
        let dfa = leftmost_first_dfa(&classes.pattern)?;
        let start_ids = (0..=256usize)
            .map(|b| {
                let behind = u8::try_from(b).ok().map(|b| remap[usize::from(b)]);
                dfa.start_state(
                    &start::Config::new()
                        .anchored(Anchored::Yes)
                        .look_behind(behind),
                )
                .map_err(|e| e.to_string())
            })
            .collect::<Result<Vec<StateID>, _>>()?;
        // Every state reachable from a start state, by the class bytes a text can hold.
        let mut seen: Vec<StateID> = Vec::new();
        let mut found: std::collections::HashSet<StateID> = std::collections::HashSet::new();
        let mut todo: Vec<StateID> = start_ids.clone();
        while let Some(id) = todo.pop() {
            if !found.insert(id) {
                continue;
            }
            seen.push(id);
            if seen.len() > 1 << 16 {
                return Err("too many DFA states".into());
            }
            todo.extend(remap.iter().map(|&b| dfa.next_state(id, b)));
        }
        // Index 0 is the dead state (reachable or not), then the match states.
        seen.retain(|&id| !dfa.is_dead_state(id));
        let is_final = |id: StateID| {
            dfa.is_match_state(id)
                && remap
                    .iter()
                    .all(|&b| dfa.is_dead_state(dfa.next_state(id, b)))
                && !dfa.is_match_state(dfa.next_eoi_state(id))
        };
        seen.sort_by_key(|&id| (!is_final(id), !dfa.is_match_state(id)));
        let numbers: std::collections::HashMap<StateID, usize> = seen
            .iter()
            .enumerate()
            .map(|(i, &id)| (id, i + 1))
            .collect();
        let index = |id: StateID| numbers.get(&id).copied().unwrap_or(0);
        let stride = dfa.byte_classes().alphabet_len();
        let mut class = [0u8; 256];
        for (v, c) in class.iter_mut().enumerate() {
            *c = dfa.byte_classes().get(remap[v]);
        }
        let mut next = vec![0u32; (seen.len() + 1) * stride];
        for (i, &id) in seen.iter().enumerate() {
            for v in 0..256 {
                next[(i + 1) * stride + usize::from(class[v])] =
                    (index(dfa.next_state(id, remap[v])) * stride) as u32;
            }
        }
        let special = (1 + seen.iter().filter(|&&id| dfa.is_match_state(id)).count()) * stride;
        let finals = (1 + seen.iter().filter(|&&id| is_final(id)).count()) * stride;
        let eoi_match = std::iter::once(false)
            .chain(
                seen.iter()
                    .map(|&id| dfa.is_match_state(dfa.next_eoi_state(id))),
            )
            .collect();
        let starts: Box<[u32]> = start_ids
            .iter()
            .map(|&id| (index(id) * stride) as u32)
            .collect();
        let one_start = starts.iter().all(|&s| s == starts[0]).then_some(starts[0]);
        let mut dfa = Self {
            classes,
            next: next.into_boxed_slice(),
            class,
            stride,
            special: special as u32,
            finals: finals as u32,
            eoi_match,
            starts,
            one_start,
            stream: None,
        };
        dfa.stream = Stream::new(&dfa);
        Ok(dfa)
    }

    /// The DFA byte class of the char at `i` of `text` (a char boundary), and its length.
    #[inline]
    fn class_at(&self, text: &[u8], i: usize) -> (usize, usize) {
        let b = text[i];
        if b < 0x80 {
            (usize::from(self.class[usize::from(b)]), 1)
        } else {
            self.class_of_char(text, i)
        }
    }

    /// The DFA byte class of the non-ASCII char at `i` of `text` (a char boundary), and its
    /// length.
    #[inline]
    fn class_of_char(&self, text: &[u8], i: usize) -> (usize, usize) {
        let b = text[i];
        // A lead byte of valid UTF-8 (a &str): its length, then its code point.
        let len = if b >= 0xF0 {
            4
        } else if b >= 0xE0 {
            3
        } else {
            2
        };
        let mut c = u32::from(b) & (0x7F >> len);
        for &cont in &text[i + 1..i + len] {
            c = (c << 6) | u32::from(cont & 0x3F);
        }
        let atom = self.classes.atom(c);
        (usize::from(self.class[usize::from(atom)]), len)
    }

    /// The anchored start state at `at` (after the char before it).
    #[inline]
    fn start(&self, text: &[u8], at: usize) -> u32 {
        if let Some(s) = self.one_start {
            return s;
        }
        if at == 0 {
            return self.starts[256];
        }
        let mut p = at - 1;
        while text[p] & 0xC0 == 0x80 {
            p -= 1;
        }
        let b = text[p];
        let byte = if b < 0x80 {
            b
        } else {
            let s = std::str::from_utf8(&text[p..at]).unwrap_or("\0");
            self.classes.atom(s.chars().next().map_or(0, |c| c as u32))
        };
        self.starts[usize::from(byte)]
    }

    /// The end of the match anchored at `at` (a char boundary) of `text`, if any. The DFA
    /// reads the UTF-8 text itself: an ASCII byte is its own class byte, and a non-ASCII char
    /// is looked up as it is met, so no transcoded copy is made.
    #[inline]
    fn match_at(&self, text: &[u8], at: usize) -> Option<usize> {
        let mut s = self.start(text, at);
        let mut end = None;
        let mut i = at;
        while let Some(&b) = text.get(i) {
            let (class, len) = if b < 0x80 {
                (usize::from(self.class[usize::from(b)]), 1)
            } else {
                self.class_of_char(text, i)
            };
            debug_assert!(s as usize + class < self.next.len());
            // SAFETY: every state is a row's start (a multiple of `stride` below the table's
            // length: `new` makes them so) and `class < stride` (the DFA's alphabet).
            s = unsafe { *self.next.get_unchecked(s as usize + class) };
            if s < self.special {
                // Entered one char after the match's end: the match ends at this char.
                if s < self.finals {
                    return if s == 0 { end } else { Some(i) };
                }
                end = Some(i);
            }
            i += len;
        }
        if self.eoi_match[s as usize / self.stride] {
            end = Some(text.len());
        }
        end
    }

    /// Calls `f(start, end)` for every match in `text`, as the onig crate's `find_iter` finds
    /// them (see `pcre::Regex::for_each_match`): the leftmost match from where the last one
    /// ended, an empty match there skipped.
    pub fn for_each_match(&self, text: &str, f: &mut impl FnMut(usize, usize)) {
        match &self.stream {
            Some(stream) => self.stream_matches(stream, text, f),
            None => self.anchored_matches(text, f),
        }
    }

    /// `for_each_match` by one anchored search a match.
    fn anchored_matches(&self, text: &str, f: &mut impl FnMut(usize, usize)) {
        let bytes = text.as_bytes();
        let char_len = |i: usize| text[i..].chars().next().map_or(1, char::len_utf8);
        let mut at = 0;
        let mut last_end: Option<usize> = None;
        while at <= bytes.len() {
            let mut start = at;
            let end = loop {
                if let Some(end) = self.match_at(bytes, start) {
                    break end;
                }
                if start == bytes.len() {
                    return;
                }
                start += char_len(start);
            };
            if start == end && last_end == Some(end) {
                if at == bytes.len() {
                    return;
                }
                at += char_len(at);
                continue;
            }
            f(start, end);
            at = end;
            last_end = Some(end);
        }
    }
}

impl ClassDfa {
    /// `for_each_match` through the streaming form (see `Stream`).
    fn stream_matches(&self, st: &Stream, text: &str, f: &mut impl FnMut(usize, usize)) {
        let bytes = text.as_bytes();
        let len = bytes.len();
        let mut boundaries = [0usize; STREAM_BLOCK];
        // Where the current match started (the DFA entered `st.start` there), and the end of
        // the longest match from there so far (a match state is entered one char late).
        let mut piece = 0;
        let mut end = 0;
        let mut s = st.start;
        let mut i = 0;
        loop {
            let stop = len.min(i + STREAM_BLOCK);
            let mut n = 0;
            while i < stop {
                let (class, w) = self.class_at(bytes, i);
                debug_assert!(s as usize + class < st.next.len());
                // SAFETY: as in `match_at`: rows start at multiples of `stride` below the
                // table's length, and `class < stride`.
                s = unsafe { *st.next.get_unchecked(s as usize + class) };
                // SAFETY: at most one boundary a char, and at most STREAM_BLOCK chars a block.
                unsafe { *boundaries.get_unchecked_mut(n) = i };
                n += usize::from(s >= st.flagged);
                if s == 0 {
                    break;
                }
                end = if s < self.special { i } else { end };
                i += w;
            }
            for &b in &boundaries[..n] {
                f(piece, b);
                piece = b;
            }
            if s != 0 {
                if i < len {
                    continue;
                }
                if st.eoi_match[s as usize / self.stride] {
                    f(piece, len);
                    return;
                }
            }
            // The DFA died (or the text ended) past the last boundary: the longest match from
            // there, as `match_at` finds it, then on from its end. (`end` is from an earlier
            // match when it is not past `piece`.)
            let (start, stop) = if end > piece {
                (piece, end)
            } else {
                match self.next_match(bytes, piece) {
                    Some(m) => m,
                    None => return,
                }
            };
            f(start, stop);
            if stop == len {
                return;
            }
            piece = stop;
            i = stop;
            s = st.start;
        }
    }

    /// The leftmost match at or after `at` (`for_each_match`'s step, for a pattern that
    /// matches no empty text).
    fn next_match(&self, bytes: &[u8], mut at: usize) -> Option<(usize, usize)> {
        loop {
            if let Some(end) = self.match_at(bytes, at) {
                return Some((at, end));
            }
            if at >= bytes.len() {
                return None;
            }
            at += self.class_at(bytes, at).1;
        }
    }
}

/// regex-automata's leftmost-first DFA of a class-byte pattern (bytes, no Unicode), anchored
/// searches only, or why there is none.
fn leftmost_first_dfa(pattern: &str) -> Result<dense::DFA<Vec<u32>>, String> {
    // Multi-line: `$` is a line end, as in PCRE2's MULTILINE (Oniguruma's reading).
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .multi_line(true)
        .build()
        .parse(pattern)
        .map_err(|e| e.to_string())?;
    if repeats_empty(&hir) {
        return Err("a repeat of what can match empty".into());
    }
    dense::Builder::new()
        .configure(
            dense::Config::new()
                .match_kind(MatchKind::LeftmostFirst)
                .start_kind(StartKind::Anchored)
                .accelerate(false)
                .dfa_size_limit(Some(DFA_SIZE_LIMIT))
                .determinize_size_limit(Some(2 * DFA_SIZE_LIMIT)),
        )
        .syntax(
            syntax::Config::new()
                .unicode(false)
                .utf8(false)
                .multi_line(true),
        )
        .thompson(thompson::Config::new().utf8(false))
        .build(pattern)
        .map_err(|e| e.to_string())
}

/// Whether `hir` repeats (more than once) something that can match empty.
fn repeats_empty(hir: &regex_syntax::hir::Hir) -> bool {
    use regex_syntax::hir::HirKind;
    match hir.kind() {
        HirKind::Repetition(r) => {
            (r.max != Some(1) && r.sub.properties().minimum_len() == Some(0))
                || repeats_empty(&r.sub)
        }
        HirKind::Capture(c) => repeats_empty(&c.sub),
        HirKind::Concat(hs) | HirKind::Alternation(hs) => hs.iter().any(repeats_empty),
        HirKind::Empty | HirKind::Literal(_) | HirKind::Class(_) | HirKind::Look(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::class_bytes::tests::PATTERNS;
    use super::super::onig_to_pcre::translate;
    use super::*;

    /// Chars at the patterns' edges: white space of each kind, cased and uncased letters,
    /// marks, digits of several scripts, apostrophes, punctuation, slashes, CJK and emoji.
    const CHARS: &[char] = &[
        ' ', ' ', ' ', '\n', '\r', '\t', '\u{a0}', '\u{3000}', 'a', 'e', 's', 't', 'l', 'd', 'S',
        'T', 'A', 'Z', 'k', 'ǅ', 'ʰ', 'ß', '\u{301}', '0', '7', '٣', '½', '\'', '’', '.', ',', '!',
        '"', '/', '-', '_', '(', '中', 'カ', 'ひ', '한', 'ع', 'ह', 'Ж', '😀', '\u{200d}', '#', '$',
    ];

    /// The streaming form finds exactly the anchored searches' matches, on random text over
    /// chars where the patterns' alternatives meet, long enough to cross blocks.
    #[test]
    fn streaming_equals_anchored() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut streamed = 0;
        for src in PATTERNS {
            let Ok(dfa) = translate(src).and_then(|t| ClassDfa::new(&t)) else {
                continue;
            };
            let Some(stream) = &dfa.stream else {
                continue;
            };
            streamed += 1;
            for round in 0..3000 {
                // Runs of one char now and then, as indentation and long words make.
                let len = (next() % if round % 10 == 0 { 600 } else { 40 }) as usize;
                let mut text = String::new();
                while text.chars().count() < len {
                    let c = CHARS[(next() % CHARS.len() as u64) as usize];
                    let run = if next() % 8 == 0 { next() % 12 } else { 1 };
                    text.extend(std::iter::repeat_n(c, run as usize));
                }
                let (mut want, mut got) = (Vec::new(), Vec::new());
                dfa.anchored_matches(&text, &mut |s, e| want.push((s, e)));
                dfa.stream_matches(stream, &text, &mut |s, e| got.push((s, e)));
                assert_eq!(got, want, "{src} on {text:?}");
            }
        }
        assert!(streamed >= 6, "only {streamed} patterns stream");
    }
}
