//! One long text encoded on several threads (a long prompt's time to first token): the text is
//! cut where a piece of the split pattern must end anyway, and the parts go through the fused
//! ids-only loop on the caller's rayon pool, each thread with its own caches.
//!
//! Where a cut is safe: the pieces of the known patterns (`fastsplit::Known`: GPT-2's, cl100k's,
//! Qwen2's) tile the text, and a match starting at a position reads nothing before it (no
//! look-behind). So a position that no match can span is where a piece ends in the whole text's
//! scan, and the scan from there on is the same as a scan of the rest alone. No match spans
//!
//! - an ASCII letter followed by white space: every alternative with a letter ends in letters
//!   (the contractions, `[^\r\n\p{L}\p{N}]?\p{L}+`, ` ?\p{L}+`);
//! - for cl100k's and Qwen2's patterns, a newline followed by an ASCII char that is not white
//!   space: white space only ever joins white space, or ends a run of other chars
//!   (` ?[^\s\p{L}\p{N}]+[\r\n]*`), and a letter's optional lead char is never a newline.
//!
//! The text before the cut is scanned on its own too, and ends where its last piece ends either
//! way: a letter run ends at the cut whatever follows, and cl100k's `\s*[\r\n]+` takes white
//! space through its last newline before `\s+(?!\S)` looks past it. GPT-2's pattern has no
//! such alternative: " \n" before a letter is " ", "\n", but at the end of a text " \n", so
//! it is cut after letters only (`tests::gpt2_is_not_cut_after_a_newline`).
//!
//! Added tokens are cut around, never into: they are found in the whole text first (their
//! `lstrip`/`rstrip`/`single_word` read their neighbours), and a cut only falls between two of
//! those splits or inside text.
use super::fastsplit::Known;
use super::{finish_ids, fused_ids, Sources, TokenizeError, Tokenizer, Truncation};

/// Texts from this many bytes on are cut into parts (fastokens, too, starts at 64 KB): below,
/// the parts' hand-off costs more than a second thread gains.
pub const PARALLEL_TEXT_MIN: usize = 64 * 1024;
/// Parts per thread: more than one, so a thread that finishes early takes another.
const PARTS_PER_THREAD: usize = 4;
/// A part is at least this long.
const PART_MIN: usize = 16 * 1024;
/// How far past its target a cut is looked for before the end of its split is taken instead.
const CUT_SEARCH: usize = 8 * 1024;

/// One split of a text: an added token's id, or a byte range of text to tokenize.
type Unit = (Option<u32>, usize, usize);

impl Tokenizer {
    /// Whether `encode_ids_parallel` would cut `text` (of `len` bytes) into parts: a caller
    /// asks this before handing the text to a pool, which gains nothing otherwise.
    pub fn parallel_text(&self, len: usize) -> bool {
        len >= PARALLEL_TEXT_MIN && self.fused().is_some()
    }

    /// `encode_ids` of `text`, on the threads of the rayon pool it is called in when the text is
    /// long (`PARALLEL_TEXT_MIN`), the tokenizer runs the fused ids-only loop, and the pool has
    /// more than one thread; `encode_ids` itself otherwise. The ids are the same either way.
    pub fn encode_ids_parallel(
        &self,
        text: &str,
        add_special_tokens: bool,
        truncation: Option<&Truncation>,
    ) -> Result<Option<Vec<u32>>, TokenizeError> {
        use rayon::prelude::*;
        let threads = rayon::current_num_threads();
        let fused = self.fused();
        let (Some((known, bpe)), true) = (fused, text.len() >= PARALLEL_TEXT_MIN && threads > 1)
        else {
            return self.encode_ids(text, add_special_tokens, truncation);
        };
        let Some((head, tail)) = self.single_specials(add_special_tokens) else {
            return Ok(None);
        };
        let mut sources = Sources::new(text);
        // With no normalizer (the fused loop's condition), every split is a range of `text`.
        let units: Vec<Unit> = self
            .splits(text, &mut sources, false)
            .into_iter()
            .map(|(id, p)| (id, p.start as usize, p.end as usize))
            .collect();
        let parts_n = (threads * PARTS_PER_THREAD)
            .min(text.len() / PART_MIN)
            .max(1);
        let newline = matches!(known, Known::Cl100k { .. });
        let (flat, bounds) = parts(text.as_bytes(), &units, parts_n, newline);
        let parts: Vec<Vec<u32>> = bounds
            .par_windows(2)
            .map(|w| {
                let part = &flat[w[0]..w[1]];
                let bytes: usize = part.iter().map(|u| u.2 - u.1).sum();
                let mut ids = Vec::with_capacity(bytes / 3 + 8);
                let mut tokens = Vec::new();
                let units = part.iter().map(|&(id, s, e)| (id, &text[s..e]));
                fused_ids(known, bpe, units, &mut ids, &mut tokens)?;
                Ok(ids)
            })
            .collect::<Result<_, TokenizeError>>()?;
        let total: usize = parts.iter().map(Vec::len).sum();
        let mut ids = Vec::with_capacity(head.len() + total + tail.len());
        ids.extend_from_slice(&head);
        for p in parts {
            ids.extend_from_slice(&p);
        }
        finish_ids(ids, head.len(), &tail, truncation).map(Some)
    }
}

/// Whether no match of a known pattern can span the bytes `b[p - 1]` and `b[p]` (see the
/// module doc); `newline` allows the cut after a newline (cl100k's and Qwen2's patterns).
pub(super) fn safe_cut(b: &[u8], p: usize, newline: bool) -> bool {
    let space = |c: u8| matches!(c, b'\t'..=b'\r' | b' ');
    let (x, y) = (b[p - 1], b[p]);
    (x.is_ascii_alphabetic() && space(y)) || (newline && x == b'\n' && y.is_ascii() && !space(y))
}

/// The units of the text cut into about `n` parts of similar length: the units (those with a
/// cut inside split in two there), and the bounds of the parts as indices into them (part `i`
/// is `units[bounds[i]..bounds[i + 1]]`).
fn parts(b: &[u8], units: &[Unit], n: usize, newline: bool) -> (Vec<Unit>, Vec<usize>) {
    let len = b.len();
    let mut cuts = Vec::with_capacity(n);
    let mut u = 0;
    for k in 1..n {
        let target = k * len / n;
        if cuts.last().is_some_and(|&c| c >= target) {
            continue;
        }
        while u < units.len() && units[u].2 <= target {
            u += 1;
        }
        let Some(&(id, s, e)) = units.get(u) else {
            break;
        };
        let inside = if id.is_none() {
            (target.max(s + 1)..e.min(target + CUT_SEARCH)).find(|&p| safe_cut(b, p, newline))
        } else {
            None
        };
        // A split's end is always safe: splits are encoded on their own.
        let cut = inside.unwrap_or(e);
        if cut < len {
            cuts.push(cut);
        }
    }
    let mut flat = Vec::with_capacity(units.len() + cuts.len());
    let mut bounds = vec![0];
    let mut cuts = cuts.into_iter().peekable();
    for &(id, mut s, e) in units {
        while let Some(&c) = cuts.peek() {
            if c <= s {
                if bounds.last() != Some(&flat.len()) {
                    bounds.push(flat.len());
                }
            } else if c < e && id.is_none() {
                flat.push((None, s, c));
                s = c;
                bounds.push(flat.len());
            } else {
                break;
            }
            cuts.next();
        }
        flat.push((id, s, e));
    }
    if bounds.last() != Some(&flat.len()) {
        bounds.push(flat.len());
    }
    (flat, bounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_after_a_letter_before_space_or_after_a_newline() {
        let b = b"abc def\nghi";
        assert!(safe_cut(b, 3, true)); // "c" | " "
        assert!(!safe_cut(b, 4, true)); // " " | "d": one piece " def"
        assert!(safe_cut(b, 8, true)); // "\n" | "g"
        assert!(!safe_cut(b, 8, false));
        assert!(!safe_cut(b"a\n\n", 2, true)); // newline | newline: one white-space run
        assert!(!safe_cut(b"1 2", 1, true)); // digit | space
    }

    #[test]
    fn parts_cover_the_units_in_order_and_keep_added_tokens_whole() {
        let text = "word ".repeat(2000) + "<tok>" + &"more text\n".repeat(1000);
        let b = text.as_bytes();
        let t = 10_000;
        let units = vec![(None, 0, t), (Some(7), t, t + 5), (None, t + 5, b.len())];
        for n in [1, 2, 3, 8, 50] {
            let (flat, bounds) = parts(b, &units, n, true);
            assert_eq!(bounds.first(), Some(&0));
            assert_eq!(bounds.last(), Some(&flat.len()));
            assert!(bounds.windows(2).all(|w| w[0] < w[1]), "{bounds:?}");
            // The units tile the text, and the added token is one of them, whole.
            let mut at = 0;
            for &(id, s, e) in &flat {
                assert_eq!(s, at);
                assert!(s < e);
                at = e;
                if id.is_some() {
                    assert_eq!((s, e), (t, t + 5));
                }
            }
            assert_eq!(at, b.len());
            // Every part starts at a split's start or a safe cut.
            for &i in &bounds[1..bounds.len() - 1] {
                let s = flat[i].1;
                assert!(s == t || s == t + 5 || safe_cut(b, s, true), "cut at {s}");
            }
            if n > 1 {
                assert!(bounds.len() > 2, "no cut for {n} parts");
            }
        }
    }

    /// The reason GPT-2's pattern is not cut after a newline: the end of a text changes how
    /// white space before it splits.
    #[test]
    fn gpt2_is_not_cut_after_a_newline() {
        let mut whole = Vec::new();
        Known::Gpt2.find_iter("x \nfoo", &mut whole);
        let mut left = Vec::new();
        Known::Gpt2.find_iter("x \n", &mut left);
        assert_eq!(whole, [(0, 1), (1, 2), (2, 3), (3, 6)]);
        assert_eq!(left, [(0, 1), (1, 3)]);
        // cl100k's takes the white space through the newline either way.
        let (mut whole, mut left) = (Vec::new(), Vec::new());
        Known::Cl100k { max_digits: 3 }.find_iter("x \nfoo", &mut whole);
        Known::Cl100k { max_digits: 3 }.find_iter("x \n", &mut left);
        assert_eq!(&whole[..2], &left[..]);
    }
}
