//! SentencePiece's lattice over a whole text, a word at a time, each word's result cached.
//!
//! Why: `from_sentencepiece` gives SentencePiece's ids by running its one float32 lattice over
//! each whole text; caching per word in float64, as HF's pipeline does, could break its exact
//! ties another way (the running sum's rounding decides them), so every text paid the full
//! lattice (0.8-1.0x `sentencepiece` on one thread). Where no token spans the start of a `▁`
//! (`Trie::mark_words`: models trained with whitespace splitting), every path passes through each
//! `▁`, and the lattice of a text is the lattices of its words chained by the running sum S. A
//! word's best path depends on S only through float32 rounding: each comparison its lattice makes
//! is decided alike for every S as long as the comparison's margin (computed once, in float64,
//! from S = 0) exceeds the error the float32 sums can carry, at most 2^-24 (|S| + L) per addition
//! (L the largest partial sum in the word). So a word keeps in the per-thread cache its tokens,
//! the float32 scores its path adds (S goes on exactly as SentencePiece's sum does), its smallest
//! margin and L. A word whose margin is too small for the S at hand runs SentencePiece's float32
//! lattice itself from S, and so does the rest of a text once |S| + L nears 1e5, where
//! SentencePiece re-centres its sums.
use super::{utf8_len, Unigram, MARK, NONE};
use crate::error::TokenizeError;
use crate::tokenize::bpe::Scratch;

/// Past this |S| + L the rest of a text runs SentencePiece's own lattice (it re-centres at 1e5).
const RECENTRE_GUARD: f64 = 90_000.0;

impl Unigram {
    /// The tokens of the whole normalized text `s` (see the module's doc).
    pub(super) fn encode_words(
        &self,
        s: &str,
        out: &mut Vec<(u32, u32)>,
        scratch: &mut Scratch,
    ) -> Result<(), TokenizeError> {
        let bytes = s.as_bytes();
        let mut run = 0f32;
        let mut a = 0;
        while a < bytes.len() {
            let b = next_mark(bytes, a + 1);
            let w = &s[a..b];
            // One lookup; a word not seen yet gets its entry made (and kept, unless too long).
            let (big, taken) = match scratch.cached_tokens(&self.words_id, w.as_bytes()) {
                Some(e) => take(e, w, &mut run, out),
                None => {
                    let entry = self.word_entry(w, &mut scratch.lattice)?;
                    let r = take(&entry, w, &mut run, out);
                    scratch.cache_tokens(&self.words_id, w.as_bytes(), &entry);
                    r
                }
            };
            if !taken {
                let mut lattice = std::mem::take(&mut scratch.lattice32);
                // A word whose margin does not hold at this S: SentencePiece's lattice over it,
                // from S. Near the re-centring: over the rest of the text, exactly as its loop
                // goes on there.
                let rest = f64::from(run.abs()) + big >= RECENTRE_GUARD;
                let end = if rest { bytes.len() } else { b };
                let r = self.encode::<f32>(&s[a..end], out, &mut lattice, run);
                scratch.lattice32 = lattice;
                run = r?;
                if rest {
                    return Ok(());
                }
            }
            a = b;
        }
        Ok(())
    }

    /// A word's cache entry: `(tokens, steps)`, its tokens, the float32 score each step of its
    /// path adds (bits), then its smallest margin and its largest |partial sum| (f64 bits).
    fn word_entry(
        &self,
        w: &str,
        best: &mut Vec<(f64, u32, u32)>,
    ) -> Result<Vec<(u32, u32)>, TokenizeError> {
        let bytes = w.as_bytes();
        let size = bytes.len();
        best.clear();
        best.resize(size + 1, (0.0, NONE, 0));
        let mut sigma = vec![0f32; size + 1];
        let mut second = vec![f64::NEG_INFINITY; size + 1];
        let unk = self.unk_score::<f32>();
        let (mut margin, mut big) = (f64::INFINITY, 0f64);
        let mut at = 0;
        while at < size {
            let here = best[at].0;
            if at > 0 {
                margin = margin.min(here - second[at]);
            }
            let mblen = utf8_len(bytes[at]);
            let mut single = false;
            let mut offer = |t: usize, sg: f32, id: u32| {
                let cand = f64::from(sg) + here;
                big = big.max(cand.abs());
                let node = &mut best[t];
                if node.1 == NONE {
                    *node = (cand, at as u32, id);
                    sigma[t] = sg;
                } else if cand > node.0 {
                    second[t] = second[t].max(node.0);
                    *node = (cand, at as u32, id);
                    sigma[t] = sg;
                } else {
                    second[t] = second[t].max(cand);
                }
            };
            self.trie.prefixes(&bytes[at..], |len, id, score| {
                offer(at + len, score as f32, id);
                single |= len == mblen;
            });
            if !single {
                let Some(u) = self.unk_id else {
                    return Err(TokenizeError::Encode(super::UNK_MISSING.into()));
                };
                offer(at + mblen, unk, u);
            }
            at += mblen;
        }
        margin = margin.min(best[size].0 - second[size]);
        let mut steps = Vec::new();
        let mut end = size;
        while end > 0 {
            steps.push(sigma[end]);
            end = best[end].1 as usize;
        }
        let mut entry = vec![(0, 0)];
        self.backtrack(w, best, &mut entry)?;
        let n = entry.len() - 1;
        entry[0] = (n as u32, steps.len() as u32);
        entry.extend(steps.iter().rev().map(|s| (s.to_bits(), 0)));
        for x in [margin, big] {
            let bits = x.to_bits();
            entry.push(((bits >> 32) as u32, bits as u32));
        }
        Ok(entry)
    }
}

/// A word's tokens from its entry `e` into `out`, and S carried over its path, where its margin
/// holds at this S (and S stays clear of the re-centring); returns (L, whether it did).
fn take(e: &[(u32, u32)], w: &str, run: &mut f32, out: &mut Vec<(u32, u32)>) -> (f64, bool) {
    let (margin, big) = (f64_at(e, e.len() - 2), f64_at(e, e.len() - 1));
    let reach = f64::from(run.abs()) + big;
    let bound = 4.0 * (w.len() + 1) as f64 * f64::powi(2.0, -24) * reach + 1e-9;
    if reach >= RECENTRE_GUARD || margin <= bound {
        return (big, false);
    }
    let (n, steps) = (e[0].0 as usize, e[0].1 as usize);
    out.extend_from_slice(&e[1..=n]);
    for &(bits, _) in &e[1 + n..1 + n + steps] {
        *run += f32::from_bits(bits);
    }
    (big, true)
}

fn f64_at(e: &[(u32, u32)], i: usize) -> f64 {
    f64::from_bits(u64::from(e[i].0) << 32 | u64::from(e[i].1))
}

/// The first `▁` at or after `from`, or the end.
fn next_mark(b: &[u8], from: usize) -> usize {
    let m = MARK.as_bytes();
    let mut i = from;
    while i + m.len() <= b.len() {
        if b[i] == m[0] && b[i + 1] == m[1] && b[i + 2] == m[2] {
            return i;
        }
        i += 1;
    }
    b.len()
}
