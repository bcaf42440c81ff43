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

    /// Whether normalizing `s` to this form would leave it unchanged.
    pub fn holds(self, s: &str) -> bool {
        if s.is_ascii() {
            return true;
        }
        let map = self.starters();
        let starter = |c: char| {
            let cp = c as u32;
            cp < 0x1_0000 && map[(cp >> 6) as usize] >> (cp & 63) & 1 == 1
        };
        // A run of other chars, from the starter before it: the quick check on the run, and
        // where that says "maybe" (a char that may compose with the one before) the full check
        // on the starter and the run. The starters around them are boundaries: nothing before
        // one composes or reorders with what follows it.
        let segment_holds = |seg: usize, start: usize, end: usize| match self.quick(&s[start..end])
        {
            un::IsNormalized::Yes => true,
            un::IsNormalized::No => false,
            un::IsNormalized::Maybe => self.full(&s[seg..end]),
        };
        let mut seg = 0;
        let mut run: Option<usize> = None;
        for (i, c) in s.char_indices() {
            if starter(c) {
                if let Some(start) = run.take() {
                    if !segment_holds(seg, start, i) {
                        return false;
                    }
                }
                seg = i;
            } else if run.is_none() {
                run = Some(i);
            }
        }
        run.is_none_or(|start| segment_holds(seg, start, s.len()))
    }
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
