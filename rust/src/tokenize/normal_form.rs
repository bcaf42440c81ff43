//! Whether a text is already in a Unicode normal form, so that its normalizer leaves it as it is
//! (Qwen2's files normalize with NFC, and text almost always is NFC already).
//!
//! The crate's quick check (UAX #15, with the tables HF normalizes by) looks up two tables for
//! every non-ASCII char: on a multilingual corpus that cost a third of the tokenizer's time. Most
//! chars of real text are starters whose quick-check value is Yes (Latin, Cyrillic, CJK, Hangul
//! syllables, kana, Arabic letters...): a bitmap of the BMP's such chars, made once from the
//! same tables, skips them. Each such char is a normalization boundary (nothing before it
//! composes or reorders with it or what follows), so the text holds when each run of other
//! chars does, checked with the starter before it.
use std::sync::OnceLock;
use unicode_normalization_alignments as un;
use unicode_normalization_alignments::UnicodeNormalization;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Nfc,
    Nfd,
    Nfkc,
    Nfkd,
}

type Bitmap = [u64; 1024];

impl Form {
    fn quick(self, s: &str) -> un::IsNormalized {
        match self {
            Self::Nfc => un::is_nfc_quick(s.chars()),
            Self::Nfd => un::is_nfd_quick(s.chars()),
            Self::Nfkc => un::is_nfkc_quick(s.chars()),
            Self::Nfkd => un::is_nfkd_quick(s.chars()),
        }
    }

    fn full(self, s: &str) -> bool {
        match self {
            Self::Nfc => un::is_nfc(s),
            Self::Nfd => un::is_nfd(s),
            Self::Nfkc => un::is_nfkc(s),
            Self::Nfkd => un::is_nfkd(s),
        }
    }

    /// The BMP chars that are starters with quick-check value Yes in this form.
    fn starters(self) -> &'static Bitmap {
        static MAPS: [OnceLock<Box<Bitmap>>; 4] = [const { OnceLock::new() }; 4];
        MAPS[self as usize].get_or_init(|| {
            let mut m = Box::new([0u64; 1024]);
            for cp in 0u32..0x1_0000 {
                let Some(c) = char::from_u32(cp) else {
                    continue;
                };
                let mut buf = [0u8; 4];
                if un::char::canonical_combining_class(c) == 0
                    && self.quick(c.encode_utf8(&mut buf)) == un::IsNormalized::Yes
                {
                    m[(cp >> 6) as usize] |= 1 << (cp & 63);
                }
            }
            m
        })
    }

    /// `s` itself in this form (the crate's transformation, chars only).
    fn transform(self, s: &str, out: &mut String) {
        match self {
            Self::Nfc => out.extend(s.nfc().map(|(c, _)| c)),
            Self::Nfd => out.extend(s.nfd().map(|(c, _)| c)),
            Self::Nfkc => out.extend(s.nfkc().map(|(c, _)| c)),
            Self::Nfkd => out.extend(s.nfkd().map(|(c, _)| c)),
        }
    }

    /// Whether normalizing `s` to this form would leave it unchanged.
    pub fn holds(self, s: &str) -> bool {
        self.segments(s, |_, _| false)
    }

    /// `s` in this form, or `None` where it already is (`holds`): the segments that change are
    /// normalized and the rest copied, with no alignment. For the ids-only path, where a text
    /// that is not in the form (combining marks written apart) took 4x the time of one that is
    /// when it went through the aligned transformation of the whole text.
    ///
    /// Exact because each kept starter is a boundary (see `segments`): the form of a text is
    /// the forms of its segments one after another.
    pub fn normalized(self, s: &str) -> Option<String> {
        let mut out = String::new();
        let mut copied = 0;
        let holds = self.segments(s, |seg, end| {
            if out.capacity() == 0 {
                out.reserve(s.len() + s.len() / 8);
            }
            out.push_str(&s[copied..seg]);
            self.transform(&s[seg..end], &mut out);
            copied = end;
            true
        });
        (!holds).then(|| {
            out.push_str(&s[copied..]);
            out
        })
    }

    /// Walks the segments of `s`: a starter whose quick-check value is Yes (the bitmap) and the
    /// run of other chars after it. Nothing before such a starter composes or reorders with it
    /// or what follows it, so the text is in the form when each segment is. For each segment
    /// that is not, `changed(start, end)` is called: returning false stops the walk. Returns
    /// whether every segment held.
    fn segments(self, s: &str, mut changed: impl FnMut(usize, usize) -> bool) -> bool {
        if s.is_ascii() {
            return true;
        }
        let map = self.starters();
        // A run of other chars, from the starter before it: the quick check on the run, and
        // where that says "maybe" (a char that may compose with the one before) the full check
        // on the starter and the run.
        let segment_holds = |seg: usize, start: usize, end: usize| match self.quick(&s[start..end])
        {
            un::IsNormalized::Yes => true,
            un::IsNormalized::No => false,
            un::IsNormalized::Maybe => self.full(&s[seg..end]),
        };
        let mut all = true;
        let mut seg = 0;
        let mut run: Option<usize> = None;
        // A byte loop rather than `char_indices`: most text the check sees is mostly ASCII
        // (English with curly quotes) or two- and three-byte letters, and the char iterator
        // with a closure per char cost ~3 ns a byte, a third of a Qwen encode of such text.
        // An ASCII run is skipped a word at a time (every ASCII char is a starter whose value
        // is Yes, in every form); other chars are decoded here (`s` is valid UTF-8).
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let x = b[i];
            let (starter, width) = if x < 0x80 {
                let end = ascii_run_end(b, i + 1);
                // The run's last char is the starter of what follows.
                (true, end - i)
            } else {
                let (cp, width) = if x < 0xE0 {
                    ((u32::from(x & 0x1F) << 6) | u32::from(b[i + 1] & 0x3F), 2)
                } else if x < 0xF0 {
                    (
                        (u32::from(x & 0x0F) << 12)
                            | (u32::from(b[i + 1] & 0x3F) << 6)
                            | u32::from(b[i + 2] & 0x3F),
                        3,
                    )
                } else {
                    // Past the BMP: never in the bitmap, so the exact value does not matter.
                    (0x1_0000, 4)
                };
                (
                    cp < 0x1_0000 && map[(cp >> 6) as usize] >> (cp & 63) & 1 == 1,
                    width,
                )
            };
            if starter {
                if let Some(start) = run.take() {
                    if !segment_holds(seg, start, i) {
                        all = false;
                        if !changed(seg, i) {
                            return false;
                        }
                    }
                }
                // The segment starts at the last char of this step (one char, or an ASCII run).
                seg = if x < 0x80 { i + width - 1 } else { i };
            } else if run.is_none() {
                run = Some(i);
            }
            i += width;
        }
        if let Some(start) = run {
            if !segment_holds(seg, start, s.len()) {
                changed(seg, s.len());
                return false;
            }
        }
        all
    }
}

/// The end of the run of ASCII bytes of `b` from `i` on (8 bytes at a time).
#[inline]
fn ascii_run_end(b: &[u8], mut i: usize) -> usize {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(w) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        let high = w & HIGH;
        if high != 0 {
            return i + high.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    while i < b.len() && b[i] < 0x80 {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::Form;
    use unicode_normalization_alignments as un;

    const FORMS: [Form; 4] = [Form::Nfc, Form::Nfd, Form::Nfkc, Form::Nfkd];

    fn crate_says(f: Form, s: &str) -> bool {
        match f {
            Form::Nfc => un::is_nfc(s),
            Form::Nfd => un::is_nfd(s),
            Form::Nfkc => un::is_nfkc(s),
            Form::Nfkd => un::is_nfkd(s),
        }
    }

    #[test]
    fn agrees_with_the_full_check() {
        let texts = [
            "plain ascii",
            "café",
            "cafe\u{301}",
            "e\u{301}\u{300}x",
            "a\u{300}\u{301}",
            "a\u{316}\u{301}",
            "a\u{301}\u{316}",
            "\u{212b}ngstr\u{f6}m",
            "한국어 \u{1100}\u{1161}\u{11a8}",
            "日本語のテキスト\u{30ab}\u{3099}",
            "\u{fb01}ve \u{2460} \u{ff21}",
            "Ελληνικά ΐ \u{3b9}\u{308}\u{301}",
            "Русский й и\u{306}",
            "\u{1d15e}\u{1f600}\u{1f468}\u{200d}\u{1f469}",
            "\u{f900}\u{2f800}",
            "\u{0958}\u{0915}\u{093c}",
            "x\u{345}\u{301}",
            "",
        ];
        for f in FORMS {
            for t in texts {
                assert_eq!(f.holds(t), crate_says(f, t), "{t:?}");
            }
        }
    }

    fn crate_form(f: Form, s: &str) -> String {
        use unicode_normalization_alignments::UnicodeNormalization;
        match f {
            Form::Nfc => s.nfc().map(|(c, _)| c).collect(),
            Form::Nfd => s.nfd().map(|(c, _)| c).collect(),
            Form::Nfkc => s.nfkc().map(|(c, _)| c).collect(),
            Form::Nfkd => s.nfkd().map(|(c, _)| c).collect(),
        }
    }

    /// `normalized` (changed segments only) against the crate's transformation of the whole
    /// text: every BMP char in a few contexts, then random texts of chars that compose,
    /// decompose, reorder or are Hangul jamo, among random BMP chars.
    #[test]
    fn segment_forms_equal_the_whole_texts_form() {
        let check = |f: Form, t: &str| {
            let want = crate_form(f, t);
            let got = f.normalized(t);
            assert_eq!(got.is_none(), want == t, "{t:?}");
            assert_eq!(got.as_deref().unwrap_or(t), want, "{t:?}");
        };
        let tricky: Vec<char> =
            "e\u{301}\u{300}\u{316}\u{345}\u{308}\u{327}\u{1100}\u{1161}\u{11a8}\
             \u{ac00}\u{212b}\u{3099}\u{30ab}\u{fb01}\u{f900}\u{0958}\u{093c}\u{0344}\u{0f73}\
             \u{1d15e}\u{05b0}\u{0e38}\u{0e48}A\u{c5}\u{e9} "
                .chars()
                .collect();
        for f in FORMS {
            for cp in 0x80u32..0x1_0000 {
                let Some(c) = char::from_u32(cp) else {
                    continue;
                };
                for t in [
                    format!("a{c}\u{301}{c}b"),
                    format!("{c}\u{316}\u{301}x{c}{c}"),
                    format!("abcdefghijklm\u{301}{c}nopqrstuvwxyz{c}\u{316}"),
                ] {
                    check(f, &t);
                }
            }
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            for _ in 0..100_000 {
                let n = 1 + next() % 8;
                let t: String = (0..n)
                    .map(|_| {
                        let r = next();
                        if r % 3 == 0 {
                            char::from_u32(0x80 + (r >> 8) as u32 % 0xff80).unwrap_or('x')
                        } else {
                            tricky[(r >> 8) as usize % tricky.len()]
                        }
                    })
                    .collect();
                check(f, &t);
            }
        }
    }

    #[test]
    fn every_bmp_char_after_a_starter_agrees() {
        // Each BMP char alone, after a letter and before a combining mark: the bitmap's runs
        // against the crate's check of the whole text.
        for f in FORMS {
            for cp in 0x80u32..0x1_0000 {
                let Some(c) = char::from_u32(cp) else {
                    continue;
                };
                for t in [
                    format!("{c}"),
                    format!("a{c}"),
                    format!("{c}\u{301}"),
                    format!("\u{301}{c}é"),
                ] {
                    assert_eq!(f.holds(&t), crate_says(f, &t), "U+{cp:04X} in {t:?}");
                }
            }
        }
    }
}
