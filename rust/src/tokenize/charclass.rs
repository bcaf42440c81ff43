//! Unicode properties the BERT steps ask of every char (category C*, Mn, P*, whether lowercasing
//! or NFD changes it), from the same tables HF tokenizers reads (`unicode_categories`,
//! `unicode_normalization_alignments`, std's lowercase), answered from a table for the BMP.
//!
//! Performance notes: each `unicode_categories` call is a binary search (C* alone is five of
//! them); profiling showed them as most of the BERT normalizer's time on non-ASCII text. The
//! table is 64 KiB, built once on first use from the crate's own answers, so it cannot differ.
use std::sync::LazyLock;
use unicode_categories::UnicodeCategories;

/// Unicode category C* (`is_other`: control, format, unassigned, private use, surrogate).
pub const OTHER: u8 = 1;
/// Unicode category Mn (nonspacing mark).
pub const MARK_NONSPACING: u8 = 2;
/// Unicode category P* (punctuation).
pub const PUNCTUATION: u8 = 4;
/// `char::to_lowercase` gives something else than the char itself.
pub const LOWER_CHANGES: u8 = 8;
/// NFD leaves the char alone and never reorders across it: combining class 0 and no
/// canonical decomposition.
pub const NFD_STABLE: u8 = 16;

fn compute(c: char) -> u8 {
    let mut f = 0;
    if c.is_other() {
        f |= OTHER;
    }
    if c.is_mark_nonspacing() {
        f |= MARK_NONSPACING;
    }
    if c.is_punctuation() {
        f |= PUNCTUATION;
    }
    if !c.to_lowercase().eq([c]) {
        f |= LOWER_CHANGES;
    }
    if nfd_stable(c) {
        f |= NFD_STABLE;
    }
    f
}

fn nfd_stable(c: char) -> bool {
    use unicode_normalization_alignments::char::{canonical_combining_class, decompose_canonical};
    if canonical_combining_class(c) != 0 {
        return false;
    }
    let (mut same, mut count) = (true, 0);
    decompose_canonical(c, |d| {
        count += 1;
        same &= d == c;
    });
    same && count == 1
}

static BMP: LazyLock<Box<[u8]>> = LazyLock::new(|| {
    (0..0x1_0000u32)
        // Surrogates are not chars; `is_other` holds for them, and no str contains one.
        .map(|u| char::from_u32(u).map_or(OTHER, compute))
        .collect()
});

/// The flags table, fetched once per call site loop (a `LazyLock` read costs a check each time).
#[inline]
pub fn table() -> &'static [u8] {
    &BMP
}

/// The flags of `c`.
#[inline]
pub fn flags(table: &[u8], c: char) -> u8 {
    table.get(c as usize).copied().unwrap_or_else(|| compute(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_the_crate() {
        let t = table();
        for u in (0..0x11_0000u32)
            .step_by(7)
            .chain([0x85, 0xAD, 0x300, 0x3000, 0xE0001])
        {
            if let Some(c) = char::from_u32(u) {
                assert_eq!(flags(t, c), compute(c), "U+{u:04X}");
            }
        }
        assert_eq!(flags(t, '\u{301}'), MARK_NONSPACING);
        assert_eq!(flags(t, '、'), PUNCTUATION | NFD_STABLE);
        assert_eq!(flags(t, '\u{200B}'), OTHER | NFD_STABLE);
        assert_eq!(flags(t, 'É'), LOWER_CHANGES);
        assert_eq!(flags(t, 'a'), NFD_STABLE);
    }
}
