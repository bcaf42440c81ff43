//! Split regexes on PCRE2's JIT: the general fast path for patterns without a hand-written
//! matcher (o200k, Tekken, most open models' Splits).
//!
//! Why PCRE2: it is a backtracking engine with the same leftmost-first alternation, look-ahead,
//! atomic groups and possessive quantifiers as Oniguruma, so a pattern translated by
//! `onig_to_pcre` matches the same text; its JIT turns the pattern into machine code that ran
//! o200k's pattern ~10x faster than Oniguruma here. A DFA engine (regex-automata) cannot run the
//! `\s+(?!\S)` look-ahead that every byte-level pattern has.
//!
//! A compiled pattern is read-only and PCRE2 documents it as shareable between threads; what a
//! match writes (the match data, the JIT stack) is per thread (`Scratch`).
use pcre2_sys as ffi;
use std::cell::RefCell;
use std::ptr::NonNull;

use super::class_bytes::{ClassBytes, Offsets};
use super::class_dfa::ClassDfa;

/// The JIT stack a thread's matches may grow to (PCRE2's default is 32 KiB on the machine
/// stack; a long run of a look-ahead alternative can need more). Allocated as it is used.
const JIT_STACK_MAX: usize = 4 << 20;

/// A translated Split pattern, on the fastest engine that runs it exactly.
pub struct Regex {
    engine: Engine,
    /// The translated pattern, for `describe` and errors.
    pub translated: String,
}

enum Engine {
    /// The pattern's DFA over class bytes (`class_dfa`), where it has one.
    Dfa(Box<ClassDfa>),
    Pcre(Pcre),
}

/// A pattern compiled by PCRE2.
struct Pcre {
    code: NonNull<ffi::pcre2_code_8>,
    jit: bool,
    /// `(?:(?>P)(?C1))+` for a pattern P that never matches empty: one call finds a whole run
    /// of back-to-back matches, each end reported by the callout, instead of one call per match
    /// (a call's setup was most of a short match's cost). Each iteration is what a search from
    /// the last end finds first, and no later iteration can fail back into it (the pattern ends
    /// after the loop), so the ends are the matches `find_iter` gives.
    runs: Option<NonNull<ffi::pcre2_code_8>>,
    /// When set, the codes are the pattern's byte-mode form, run on text transcoded to one
    /// byte per char (see `class_bytes`); UTF mode otherwise.
    classes: Option<ClassBytes>,
}

// SAFETY: a compiled pattern is never written after `new`; PCRE2 (pcre2api, "Multithreading")
// allows one compiled pattern to be used by several threads at once, each with its own match data.
unsafe impl Send for Pcre {}
unsafe impl Sync for Pcre {}

impl Drop for Pcre {
    fn drop(&mut self) {
        // SAFETY: `code` and `runs` came from pcre2_compile and are freed once, here.
        unsafe {
            ffi::pcre2_code_free_8(self.code.as_ptr());
            if let Some(r) = self.runs {
                ffi::pcre2_code_free_8(r.as_ptr());
            }
        }
    }
}

/// PCRE2's callout block (pcre2.h, version 2), up to the fields read here.
#[repr(C)]
struct CalloutBlock {
    version: u32,
    callout_number: u32,
    capture_top: u32,
    capture_last: u32,
    offset_vector: *mut usize,
    mark: *const u8,
    subject: *const u8,
    subject_length: usize,
    start_match: usize,
    current_position: usize,
}

type Callout = unsafe extern "C" fn(*mut CalloutBlock, *mut std::ffi::c_void) -> i32;

unsafe extern "C" {
    // In the PCRE2 library pcre2-sys builds and links; its bindings leave it out.
    fn pcre2_set_callout_8(
        mctx: *mut ffi::pcre2_match_context_8,
        callout: Option<Callout>,
        data: *mut std::ffi::c_void,
    ) -> i32;
}

/// The run pattern's callout: the end of one match.
unsafe extern "C" fn record_end(block: *mut CalloutBlock, data: *mut std::ffi::c_void) -> i32 {
    // SAFETY: PCRE2 passes a valid block; `data` is the `Vec<usize>` that `for_each_match`
    // set for this very call.
    unsafe {
        (*data.cast::<Vec<usize>>()).push((*block).current_position);
    }
    0
}

fn compile(pattern: &str, utf: bool) -> Result<NonNull<ffi::pcre2_code_8>, String> {
    // MULTILINE: Oniguruma's `^` and `$` are line anchors (a `\n` before or after).
    // UCP leaves `\d`, `\s` and `\w` to the translator's explicit classes either way.
    let mut options = ffi::PCRE2_MULTILINE | ffi::PCRE2_NEVER_BACKSLASH_C;
    if utf {
        options |= ffi::PCRE2_UTF | ffi::PCRE2_UCP;
    }
    let mut err: i32 = 0;
    let mut offset: usize = 0;
    // SAFETY: the pattern pointer and length are a live &str; the error out-params are
    // locals; no compile context (defaults: newline is LF, as Oniguruma's).
    let code = unsafe {
        ffi::pcre2_compile_8(
            pattern.as_ptr(),
            pattern.len(),
            options,
            &raw mut err,
            &raw mut offset,
            std::ptr::null_mut(),
        )
    };
    NonNull::new(code).ok_or_else(|| format!("PCRE2: {} at {offset}", error_message(err)))
}

/// JIT-compiles `code`; false when this build or platform has no JIT.
fn jit_compile(code: NonNull<ffi::pcre2_code_8>) -> bool {
    // SAFETY: `code` is a valid compiled pattern, not yet shared.
    unsafe { ffi::pcre2_jit_compile_8(code.as_ptr(), ffi::PCRE2_JIT_COMPLETE) == 0 }
}

/// A match failed for a reason other than "no match" (the JIT stack or the match limit ran
/// out): the caller runs Oniguruma on that text instead.
#[derive(Debug)]
pub struct MatchError(pub i32);

fn error_message(code: i32) -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer and its length are valid; PCRE2 writes a NUL-terminated message.
    let n = unsafe { ffi::pcre2_get_error_message_8(code, buf.as_mut_ptr(), buf.len()) };
    if n < 0 {
        return format!("PCRE2 error {code}");
    }
    String::from_utf8_lossy(&buf[..n as usize]).into_owned()
}

impl Regex {
    /// The engine for a translated pattern: its DFA where it has one, else PCRE2 (see `pcre`).
    pub fn new(pattern: &str) -> Result<Self, String> {
        match ClassDfa::new(pattern) {
            Ok(dfa) => Ok(Self {
                engine: Engine::Dfa(Box::new(dfa)),
                translated: pattern.to_owned(),
            }),
            Err(_) => Self::pcre(pattern),
        }
    }

    /// PCRE2 with Oniguruma's line anchors: in byte mode on class bytes where the pattern's
    /// classes allow it, in UTF mode otherwise.
    pub fn pcre(pattern: &str) -> Result<Self, String> {
        if let Ok(classes) = ClassBytes::pcre(pattern) {
            if let Ok(mut p) = Pcre::compiled(&classes.pattern, false) {
                p.classes = Some(classes);
                return Ok(Self {
                    engine: Engine::Pcre(p),
                    translated: pattern.to_owned(),
                });
            }
        }
        Self::utf(pattern)
    }

    /// PCRE2 in UTF mode.
    pub fn utf(pattern: &str) -> Result<Self, String> {
        Ok(Self {
            engine: Engine::Pcre(Pcre::compiled(pattern, true)?),
            translated: pattern.to_owned(),
        })
    }

    /// Whether the pattern runs on PCRE2 in byte mode on class bytes.
    pub fn class_bytes(&self) -> bool {
        matches!(&self.engine, Engine::Pcre(p) if p.classes.is_some())
    }

    /// Whether the pattern runs as a DFA over class bytes.
    pub fn dfa(&self) -> bool {
        matches!(self.engine, Engine::Dfa(_))
    }

    /// Whether the pattern runs as PCRE2's JIT code (its interpreter otherwise, or a DFA).
    pub fn jit(&self) -> bool {
        matches!(&self.engine, Engine::Pcre(p) if p.jit)
    }

    /// Calls `f(start, end)` for every match, as `for_each_match`, if the pattern runs as a
    /// DFA (a search that cannot fail part-way, so callers need not buffer the matches), and
    /// says whether it did.
    #[inline]
    pub fn dfa_matches(&self, text: &str, f: &mut impl FnMut(usize, usize)) -> bool {
        let Engine::Dfa(dfa) = &self.engine else {
            return false;
        };
        dfa.for_each_match(text, f);
        true
    }

    /// Calls `f(start, end)` for every match, as the onig crate's `find_iter` finds them (what
    /// HF tokenizers uses): each search starts where the last match ended, and an empty match
    /// right where the last one ended is skipped by moving one char on.
    pub fn for_each_match(
        &self,
        text: &str,
        mut f: impl FnMut(usize, usize),
    ) -> Result<(), MatchError> {
        match &self.engine {
            Engine::Dfa(dfa) => {
                dfa.for_each_match(text, &mut f);
                Ok(())
            }
            Engine::Pcre(p) => p.for_each_match(text, f),
        }
    }
}

impl Pcre {
    fn compiled(pattern: &str, utf: bool) -> Result<Self, String> {
        let code = compile(pattern, utf)?;
        let jit = jit_compile(code);
        let mut min_len: u32 = 0;
        // SAFETY: MINLENGTH writes a u32.
        let info = unsafe {
            ffi::pcre2_pattern_info_8(
                code.as_ptr(),
                ffi::PCRE2_INFO_MINLENGTH,
                (&raw mut min_len).cast(),
            )
        };
        let runs = if jit && info == 0 && min_len > 0 {
            compile(&format!("(?:(?>{pattern})(?C1))+"), utf)
                .ok()
                .filter(|r| {
                    jit_compile(*r) || {
                        // SAFETY: not JIT-compiled, so unused: freed here, once.
                        unsafe { ffi::pcre2_code_free_8(r.as_ptr()) };
                        false
                    }
                })
        } else {
            None
        };
        Ok(Self {
            code,
            jit,
            runs,
            classes: None,
        })
    }

    fn for_each_match(
        &self,
        text: &str,
        mut f: impl FnMut(usize, usize),
    ) -> Result<(), MatchError> {
        with_scratch(|s| match &self.classes {
            None => self.matches(s, text.as_bytes(), Some(text), &mut f),
            // An ASCII text is its own transcoding.
            Some(_) if text.is_ascii() => self.matches(s, text.as_bytes(), None, &mut f),
            Some(classes) => {
                let mut bytes = std::mem::take(&mut *s.bytes.borrow_mut());
                let mut marks = std::mem::take(&mut *s.marks.borrow_mut());
                classes.transcode(text, &mut bytes, &mut marks);
                let mut offsets = Offsets::new(&marks);
                let result = self.matches(s, &bytes, None, &mut |a, b| {
                    let a = offsets.at(a);
                    f(a, offsets.at(b));
                });
                *s.bytes.borrow_mut() = bytes;
                *s.marks.borrow_mut() = marks;
                result
            }
        })
    }

    /// Every match in `bytes`: the text itself in UTF mode (`utf`, to step over a char after
    /// an empty match), or one byte per char.
    fn matches(
        &self,
        s: &Scratch,
        bytes: &[u8],
        utf: Option<&str>,
        f: &mut impl FnMut(usize, usize),
    ) -> Result<(), MatchError> {
        let mut at = 0;
        let mut last_end: Option<usize> = None;
        if let Some(runs) = self.runs {
            match Self::runs_from(s, runs, bytes, f) {
                Ok(()) => return Ok(()),
                // A run too long for the JIT stack: the rest goes one match per call.
                Err(done) => {
                    at = done;
                    last_end = (done > 0).then_some(done);
                }
            }
        }
        while at <= bytes.len() {
            let Some((ms, me)) = self.find_at(s, bytes, at)? else {
                break;
            };
            if ms == me && last_end == Some(me) {
                at += utf.map_or(1, |t| t[at..].chars().next().map_or(1, char::len_utf8));
                continue;
            }
            f(ms, me);
            at = me;
            last_end = Some(me);
        }
        Ok(())
    }

    /// Every match by runs (see `runs`); `Err(at)`: a run failed for lack of stack, the
    /// matches before `at` were given.
    fn runs_from(
        s: &Scratch,
        runs: NonNull<ffi::pcre2_code_8>,
        bytes: &[u8],
        f: &mut impl FnMut(usize, usize),
    ) -> Result<(), usize> {
        let mut ends = std::mem::take(&mut *s.ends.borrow_mut());
        let mut at = 0;
        let result = loop {
            if at >= bytes.len() {
                break Ok(());
            }
            ends.clear();
            // SAFETY: the callout data is `ends`, alive for the whole call, and is cleared from
            // the context before this function returns; as in `find_at` otherwise.
            let rc = unsafe {
                pcre2_set_callout_8(s.mctx.as_ptr(), Some(record_end), (&raw mut ends).cast());
                ffi::pcre2_jit_match_8(
                    runs.as_ptr(),
                    bytes.as_ptr(),
                    bytes.len(),
                    at,
                    0,
                    s.md.as_ptr(),
                    s.mctx.as_ptr(),
                )
            };
            if rc == ffi::PCRE2_ERROR_NOMATCH {
                break Ok(());
            }
            if rc < 0 {
                break Err(at);
            }
            // SAFETY: as in `find_at`.
            let (ms, me) = unsafe {
                let ov = ffi::pcre2_get_ovector_pointer_8(s.md.as_ptr());
                (*ov, *ov.add(1))
            };
            // MINLENGTH bounds the subject a match needs, not the match: `(?=b)` has 1 and
            // can match empty. From an empty piece on, the one-match loop takes over (it skips
            // an empty match where the last one ended, as onig does; a run would not move on).
            let mut prev = ms;
            let mut given = at;
            let mut empty = false;
            for &e in &ends {
                if e == prev {
                    empty = true;
                    break;
                }
                f(prev, e);
                prev = e;
                given = e;
            }
            if empty {
                break Err(given);
            }
            debug_assert_eq!(prev, me);
            at = me;
        };
        // SAFETY: the context is this thread's; no callout is left pointing at `ends`.
        unsafe {
            pcre2_set_callout_8(s.mctx.as_ptr(), None, std::ptr::null_mut());
        }
        *s.ends.borrow_mut() = ends;
        result
    }

    #[inline]
    fn find_at(
        &self,
        s: &Scratch,
        bytes: &[u8],
        at: usize,
    ) -> Result<Option<(usize, usize)>, MatchError> {
        // SAFETY: the subject is a live &str (valid UTF-8, so no UTF check is needed), `at` is
        // a char boundary within it, and the match data and context are this thread's.
        let rc = unsafe {
            if self.jit {
                ffi::pcre2_jit_match_8(
                    self.code.as_ptr(),
                    bytes.as_ptr(),
                    bytes.len(),
                    at,
                    0,
                    s.md.as_ptr(),
                    s.mctx.as_ptr(),
                )
            } else {
                ffi::pcre2_match_8(
                    self.code.as_ptr(),
                    bytes.as_ptr(),
                    bytes.len(),
                    at,
                    ffi::PCRE2_NO_UTF_CHECK,
                    s.md.as_ptr(),
                    s.mctx.as_ptr(),
                )
            }
        };
        if rc == ffi::PCRE2_ERROR_NOMATCH {
            return Ok(None);
        }
        // 0: the match data holds fewer groups than the pattern has; group 0 is still set.
        if rc < 0 {
            return Err(MatchError(rc));
        }
        // SAFETY: the ovector has at least one pair, set by the successful match.
        let (ms, me) = unsafe {
            let ov = ffi::pcre2_get_ovector_pointer_8(s.md.as_ptr());
            (*ov, *ov.add(1))
        };
        Ok(Some((ms, me)))
    }
}

/// A thread's match data (one pair: only the whole match is read) and match context with its
/// JIT stack.
struct Scratch {
    /// The run pattern's match ends (kept to reuse its allocation).
    ends: RefCell<Vec<usize>>,
    /// A text transcoded to class bytes, and its marks (`ClassBytes::transcode`).
    bytes: RefCell<Vec<u8>>,
    marks: RefCell<Vec<(u32, u32)>>,
    md: NonNull<ffi::pcre2_match_data_8>,
    mctx: NonNull<ffi::pcre2_match_context_8>,
    stack: Option<NonNull<ffi::pcre2_jit_stack_8>>,
}

impl Scratch {
    fn new() -> Self {
        // SAFETY: plain constructors with the default allocator; a null result (out of memory)
        // is turned into a panic below rather than used.
        unsafe {
            let md = NonNull::new(ffi::pcre2_match_data_create_8(1, std::ptr::null_mut()))
                .expect("PCRE2 match data");
            let mctx = NonNull::new(ffi::pcre2_match_context_create_8(std::ptr::null_mut()))
                .expect("PCRE2 match context");
            let stack = NonNull::new(ffi::pcre2_jit_stack_create_8(
                32 << 10,
                JIT_STACK_MAX,
                std::ptr::null_mut(),
            ));
            if let Some(st) = stack {
                ffi::pcre2_jit_stack_assign_8(mctx.as_ptr(), None, st.as_ptr().cast());
            }
            Self {
                ends: RefCell::new(Vec::new()),
                bytes: RefCell::new(Vec::new()),
                marks: RefCell::new(Vec::new()),
                md,
                mctx,
                stack,
            }
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // SAFETY: each was created in `new` and is freed once, here.
        unsafe {
            ffi::pcre2_match_data_free_8(self.md.as_ptr());
            ffi::pcre2_match_context_free_8(self.mctx.as_ptr());
            if let Some(st) = self.stack {
                ffi::pcre2_jit_stack_free_8(st.as_ptr());
            }
        }
    }
}

thread_local! {
    static SCRATCH: RefCell<Option<Scratch>> = const { RefCell::new(None) };
}

fn with_scratch<R>(f: impl FnOnce(&Scratch) -> R) -> R {
    SCRATCH.with(|cell| {
        // A nested call (none today) would find the cell borrowed: it gets its own scratch.
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return f(&Scratch::new());
        };
        f(slot.get_or_insert_with(Scratch::new))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn onig_matches(src: &str, text: &str) -> Vec<(usize, usize)> {
        onig::Regex::new(src).unwrap().find_iter(text).collect()
    }

    /// The matches of each engine: the best (a DFA where there is one), PCRE2 on class
    /// bytes, PCRE2 in UTF mode.
    fn engines_matches(src: &str, text: &str) -> [Vec<(usize, usize)>; 3] {
        let translated = super::super::onig_to_pcre::translate(src).unwrap();
        [Regex::new, Regex::pcre, Regex::utf].map(|make| {
            let mut out = Vec::new();
            make(&translated)
                .unwrap()
                .for_each_match(text, |s, e| out.push((s, e)))
                .unwrap();
            out
        })
    }

    #[test]
    fn empty_matches_follow_onig() {
        for src in [
            "", "a*", "x?", r"\s*", "(?=b)", "a|(?=b)", "a|(?=c)", "$", "^", r"\s+$|a",
        ] {
            for text in ["", "abc", "aabac", "ba b\n", "é\nb", "\n\n"] {
                let want = onig_matches(src, text);
                for got in engines_matches(src, text) {
                    assert_eq!(got, want, "{src:?} on {text:?}");
                }
            }
        }
    }

    /// Look-behinds of single chars and classes (the ones PCRE2 takes) find Oniguruma's
    /// matches on every engine, at the text's start, after a previous match, across
    /// multi-byte chars and where alternatives of two widths look back.
    #[test]
    fn look_behinds_follow_onig() {
        for src in [
            r"(?<=\p{L})\s+(?!\S)|\s+",
            r"(?<![\p{N}a-z])\p{N}+|.",
            r"(?<=ab|é|\p{Lu})x|(?<!\n)\n",
            r"(?<=\s)\S+|(?<!\x{41})\u00e9|(?<=\t|\r\n).",
            r"(?<=[^\s\p{L}])\p{L}+|\p{L}|\s",
            // Under (?i): one-char folds of other lengths in UTF-8 (the Kelvin sign, the
            // long s) behind.
            r"(?i)(?<=k)x|(?i:(?<=s|ab)y)|(?i:(?<![a-z])z)",
        ] {
            for text in [
                "",
                "x",
                "abx Cx éx  dx",
                "1a2 3b4 ٣5",
                "A\u{e9} b\u{e9}\n\n\nz",
                "Hello  world\n\n  x\t",
                "a.b,c!dé-fß",
                "\u{1F600}x \u{10D4A}é",
                "Kx kx \u{212A}x \u{17F}y sy ABy aBy Z 1z \u{212A}z",
            ] {
                let want = onig_matches(src, text);
                for got in engines_matches(src, text) {
                    assert_eq!(got, want, "{src:?} on {text:?}");
                }
            }
        }
    }

    #[test]
    fn jit_is_available() {
        assert!(Regex::pcre("a+").unwrap().jit());
    }
}

#[cfg(test)]
mod table_tests {
    use super::super::onig_to_pcre::translate;
    use super::Regex;

    /// Every Unicode scalar value, one after another.
    fn all_chars() -> String {
        (0..=0x10_FFFFu32).filter_map(char::from_u32).collect()
    }

    /// Each single-char class matches the same code points on both engines: the general
    /// categories PCRE2 runs natively (same Unicode 16.0 data as Oniguruma's) and the escapes
    /// and properties translated to Oniguruma's own ranges.
    #[test]
    fn classes_agree_on_every_code_point() {
        let all = all_chars();
        let mut classes: Vec<String> = super::super::onig_to_pcre::NATIVE_CATEGORIES
            .iter()
            .flat_map(|c| {
                [
                    format!(r"\p{{{c}}}"),
                    format!(r"\P{{{c}}}"),
                    format!(r"\p{{^{c}}}"),
                ]
            })
            .collect();
        for c in [
            r"\s",
            r"\S",
            r"\d",
            r"\D",
            r"\w",
            r"[^\w]",
            r"[\w]",
            r"\W",
            r"[\W]",
            r"\h",
            r"\H",
            r"\p{Han}",
            r"\p{Latin}",
            r"\p{Alpha}",
            r"\p{Emoji}",
            r"\p{Hiragana}",
            r"[^\s\p{L}\p{N}]",
            r"[\s\d]",
            ".",
            r"[^\r\n\p{L}\p{N}]",
            r"\p{Greek}",
        ] {
            classes.push(c.to_owned());
        }
        let mut failed = Vec::new();
        for class in classes {
            // Runs, not single chars: the same runs mean the same members, in far fewer
            // matches.
            let class = format!("{class}+");
            let onig: std::collections::HashSet<(usize, usize)> =
                onig::Regex::new(&class).unwrap().find_iter(&all).collect();
            let re = Regex::new(&translate(&class).unwrap()).unwrap();
            let mut pcre = std::collections::HashSet::new();
            re.for_each_match(&all, |s, e| {
                pcre.insert((s, e));
            })
            .unwrap();
            if pcre != onig {
                let mut diff: Vec<u32> = pcre
                    .symmetric_difference(&onig)
                    .flat_map(|&(s, e)| [s, e])
                    .filter_map(|s| all[s..].chars().next().map(|c| c as u32))
                    .collect();
                diff.sort_unstable();
                let shown: Vec<String> =
                    diff.iter().take(12).map(|u| format!("U+{u:04X}")).collect();
                failed.push(format!("{class}: runs differ near {shown:?}"));
            }
        }
        assert!(failed.is_empty(), "{failed:#?}");
    }
}
