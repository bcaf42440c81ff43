//! SentencePiece's precompiled normalizer (`precompiled_charsmap`): normalization rules compiled
//! into a Darts double-array trie whose values point into a blob of NUL-terminated replacement
//! strings. Our own reader of that format, applied exactly as HF tokenizers' `Precompiled`
//! normalizer applies it (which is not how SentencePiece applies it):
//!
//! - the text is walked grapheme cluster by grapheme cluster; a cluster under 6 bytes is looked
//!   up whole, and the *shortest* rule that is a prefix of it replaces the whole cluster;
//! - otherwise each char of the cluster is looked up on its own.
//!
//! The alignments follow HF's `replace` helper: chars of a replacement take the replaced chars'
//! places, extra chars count as added, and a shorter replacement charges the removed chars to
//! its last char (or, for an empty replacement, to the char before it).
//!
//! Layout (little-endian): u32 trie size in bytes, the trie's u32 units, then the strings.
use super::normalize::Normalized;
use unicode_segmentation::UnicodeSegmentation;

#[derive(Debug, Clone)]
pub struct Precompiled {
    trie: Vec<u32>,
    normalized: String,
}

#[inline]
fn has_leaf(unit: u32) -> bool {
    (unit >> 8) & 1 == 1
}

#[inline]
fn value(unit: u32) -> u32 {
    unit & ((1 << 31) - 1)
}

#[inline]
fn label(unit: u32) -> u32 {
    unit & ((1 << 31) | 0xFF)
}

#[inline]
fn offset(unit: u32) -> u32 {
    (unit >> 10) << ((unit & (1 << 9)) >> 6)
}

impl Precompiled {
    /// Parses the charsmap bytes (decoded from the file's base64).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        let Some((size, rest)) = bytes.split_first_chunk::<4>() else {
            return Err("precompiled_charsmap is shorter than its 4-byte header".into());
        };
        let size = u32::from_le_bytes(*size) as usize;
        if size % 4 != 0 || size > rest.len() {
            return Err(format!(
                "precompiled_charsmap declares a {size}-byte trie in {} bytes",
                rest.len()
            ));
        }
        let trie: Vec<u32> = rest[..size]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if trie.is_empty() {
            return Err("precompiled_charsmap has an empty trie".into());
        }
        let normalized = String::from_utf8(rest[size..].to_vec())
            .map_err(|e| format!("precompiled_charsmap strings are not UTF-8: {e}"))?;
        Ok(Self { trie, normalized })
    }

    /// The first (shortest) rule matching a prefix of `key`: its index into the strings.
    fn first_match(&self, key: &[u8]) -> Option<usize> {
        let at = |i: usize| self.trie.get(i).copied();
        let mut pos = 0usize;
        pos ^= offset(at(pos)?) as usize;
        for &c in key {
            if c == 0 {
                break;
            }
            pos ^= c as usize;
            let unit = at(pos)?;
            if label(unit) != u32::from(c) {
                return None;
            }
            pos ^= offset(unit) as usize;
            if has_leaf(unit) {
                return Some(value(at(pos)?) as usize);
            }
        }
        None
    }

    /// The replacement of `chunk`, if a rule matches a prefix of it.
    fn transform(&self, chunk: &str) -> Option<&str> {
        let start = self.first_match(chunk.as_bytes())?;
        let rest = self.normalized.as_bytes().get(start..)?;
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        self.normalized.get(start..start + end)
    }

    /// Applies the rules; `None` when nothing matched (HF leaves the string untouched then).
    #[must_use]
    pub fn apply(&self, n: &Normalized) -> Option<Normalized> {
        let mut dest: Vec<(char, isize)> = Vec::with_capacity(n.text.len());
        let mut modified = false;
        for grapheme in n.text.graphemes(true) {
            if grapheme.len() < 6 {
                if let Some(norm) = self.transform(grapheme) {
                    modified = true;
                    replace(&mut dest, grapheme, norm);
                    continue;
                }
            }
            for (i, c) in grapheme.char_indices() {
                let part = &grapheme[i..i + c.len_utf8()];
                if let Some(norm) = self.transform(part) {
                    modified = true;
                    replace(&mut dest, part, norm);
                } else {
                    dest.push((c, 0));
                }
            }
        }
        modified.then(|| n.transform(dest, 0))
    }
}

/// HF's `replace` helper of the Precompiled normalizer.
fn replace(dest: &mut Vec<(char, isize)>, old: &str, new: &str) {
    let diff = new.chars().count() as isize - old.chars().count() as isize;
    dest.extend(new.chars().map(|c| (c, 0)));
    match diff.cmp(&0) {
        std::cmp::Ordering::Greater => {
            for d in dest.iter_mut().rev().take(diff as usize) {
                d.1 = 1;
            }
        }
        std::cmp::Ordering::Less => {
            if let Some(d) = dest.last_mut() {
                d.1 += diff;
            }
        }
        std::cmp::Ordering::Equal => {}
    }
}
