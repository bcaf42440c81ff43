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
use unicode_segmentation::GraphemeCursor;

#[derive(Debug, Clone)]
pub struct Precompiled {
    trie: Vec<u32>,
    normalized: String,
    /// The rule of each ASCII char looked up alone (its string's range), computed once: an ASCII
    /// char followed by another one (or the end) is a grapheme cluster of its own (only CR LF
    /// joins two ASCII chars), so most text skips the cluster segmentation and the trie.
    ascii: [Option<(u32, u32)>; 128],
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
        let mut p = Self {
            trie,
            normalized,
            ascii: [None; 128],
        };
        for b in 0..128u8 {
            let range = p.transform_range(&[b]);
            p.ascii[b as usize] = range.map(|(s, e)| (s as u32, e as u32));
        }
        Ok(p)
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

    /// SentencePiece's own lookup: the longest rule matching a prefix of `key` (NUL included),
    /// as (bytes it covers, its replacement).
    pub fn longest_match(&self, key: &[u8]) -> Option<(usize, &str)> {
        let at = |i: usize| self.trie.get(i).copied();
        let mut pos = offset(at(0)?) as usize;
        let mut best = None;
        for (i, &c) in key.iter().enumerate() {
            pos ^= c as usize;
            let Some(unit) = at(pos) else { break };
            if label(unit) != u32::from(c) {
                break;
            }
            pos ^= offset(unit) as usize;
            if has_leaf(unit) {
                if let Some(v) = at(pos) {
                    best = Some((i + 1, value(v) as usize));
                }
            }
        }
        let (len, start) = best?;
        let rest = self.normalized.as_bytes().get(start..)?;
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        Some((len, self.normalized.get(start..start + end)?))
    }

    /// The replacement of `chunk`, if a rule matches a prefix of it: its range in the strings.
    fn transform_range(&self, chunk: &[u8]) -> Option<(usize, usize)> {
        let start = self.first_match(chunk)?;
        let rest = self.normalized.as_bytes().get(start..)?;
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        self.normalized.get(start..start + end)?;
        Some((start, start + end))
    }

    /// The replacement of `chunk`, if a rule matches a prefix of it.
    fn transform(&self, chunk: &str) -> Option<&str> {
        self.transform_range(chunk.as_bytes())
            .map(|(s, e)| &self.normalized[s..e])
    }

    /// Applies the rules; `None` when nothing matched (HF leaves the string untouched then).
    #[must_use]
    pub fn apply(&self, n: &Normalized) -> Option<Normalized> {
        let mut dest: Vec<(char, isize)> = Vec::with_capacity(n.text.len());
        let mut modified = false;
        let text = n.text.as_str();
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c < 0x80 && c != b'\r' && b.get(i + 1).is_none_or(|&x| x < 0x80) {
                match self.ascii[c as usize] {
                    None => dest.push((char::from(c), 0)),
                    Some((s, e)) => {
                        modified = true;
                        replace(
                            &mut dest,
                            &text[i..=i],
                            &self.normalized[s as usize..e as usize],
                        );
                    }
                }
                i += 1;
                continue;
            }
            // The cluster starting here, with the whole text as context.
            let end = GraphemeCursor::new(i, b.len(), true)
                .next_boundary(text, 0)
                .ok()
                .flatten()
                .unwrap_or(b.len());
            let grapheme = &text[i..end];
            i = end;
            if grapheme.len() < 6 {
                if let Some(norm) = self.transform(grapheme) {
                    modified = true;
                    replace(&mut dest, grapheme, norm);
                    continue;
                }
            }
            for (j, ch) in grapheme.char_indices() {
                let part = &grapheme[j..j + ch.len_utf8()];
                if let Some(norm) = self.transform(part) {
                    modified = true;
                    replace(&mut dest, part, norm);
                } else {
                    dest.push((ch, 0));
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
