//! The Unigram model: the best segmentation of a piece by Viterbi over the vocabulary's scores,
//! computed exactly as HF tokenizers' `Unigram::encode_optimized` does (itself SentencePiece's
//! `EncodeOptimized`), so that ties and unknown runs come out the same:
//!
//! - positions are visited left to right; at each, the vocabulary tokens that start there are
//!   tried shortest first, and a candidate replaces the best path to its end only if its score
//!   is strictly higher (the first one found wins ties);
//! - a char that no single-char token covers also gets an unknown candidate scoring
//!   `min_score - 10`;
//! - on the way back, runs of unknown tokens are fused into one string, which is then looked up
//!   in the vocabulary again, byte-fallen-back (`<0xAB>` tokens, all spanning the whole run, as HF
//!   gives them) or made the unk id.
/// The error of a char outside the vocabulary when the model has no unk token (HF's text).
const UNK_MISSING: &str = "Encountered an unknown token but `unk_id` is missing";
use super::bpe::{ModelId, Scratch};
use crate::error::TokenizeError;
use rustc_hash::FxHashMap;

/// SentencePiece's penalty of the unknown token below the lowest score.
const UNK_PENALTY: f64 = 10.0;

/// Set in a token's length: the token spans the same input bytes as the one after it (the
/// offsets of byte-fallback tokens of one unknown run all cover the run, as in HF).
pub const SAME_SPAN: u32 = 1 << 31;

/// Set in a token's length: the token's string is the input text it spans, not its vocabulary
/// entry (HF names an unknown token by the text it stands for).
pub const RAW_TEXT: u32 = 1 << 30;

/// The flags a token length may carry.
pub const FLAGS: u32 = SAME_SPAN | RAW_TEXT;

const NONE: u32 = u32::MAX;

/// A byte trie over the vocabulary, numbered breadth-first so that the children of a node are
/// consecutive nodes (sorted by byte): finding a child reads the node and the children's labels,
/// no separate edge table. The root's children are in a direct table.
#[derive(Debug, Clone, Default)]
struct Trie {
    root: Vec<u32>,
    /// Per node: its first child, child count, token id ending here (or NONE), and that token's
    /// score kept beside it (the best path reads it right after the node: one cache line).
    nodes: Vec<(u32, u32, u32, f64)>,
    /// Per node: the byte of the edge into it.
    labels: Vec<u8>,
    /// Per node with more than `WIDE` children: where its 256-entry child table starts in
    /// `tables` (NONE for the others).
    wide: Vec<u32>,
    tables: Vec<u32>,
}

/// Children past which a node gets a direct table.
const WIDE: usize = 24;

impl Trie {
    /// Built breadth-first from the tokens sorted by bytes: a node is a range of the sorted
    /// tokens that share its prefix (its own token, if any, first), its children the runs of
    /// that range with the same next byte, numbered in the order they are queued. The sort
    /// compares an 8-byte prefix first and the strings only on a tie, and the sorted tokens are
    /// copied into one buffer before the walk, so that the strings (scattered over the heap)
    /// are read about once each. 262k SentencePiece pieces (AI21's J2): ~0.7 s a build as a
    /// pointer trie whose nodes searched their children linearly, ~0.25 s sorting the scattered
    /// strings, ~0.06 s this way.
    fn build(tokens: &[(&[u8], u32)], scores: &[(String, f64)]) -> Self {
        let keys: Vec<(&[u8], u32)> = tokens.iter().filter(|t| !t.0.is_empty()).copied().collect();
        let prefix = |k: &[u8]| {
            let mut p = [0u8; 8];
            let n = k.len().min(8);
            p[..n].copy_from_slice(&k[..n]);
            u64::from_be_bytes(p)
        };
        let mut order: Vec<(u64, u32)> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (prefix(k.0), i as u32))
            .collect();
        // Of equal byte strings the last one listed gives the node its id (the input order breaks ties).
        order.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| keys[a.1 as usize].0.cmp(keys[b.1 as usize].0))
                .then(a.1.cmp(&b.1))
        });
        let mut arena: Vec<u8> = Vec::with_capacity(keys.iter().map(|k| k.0.len()).sum());
        // (start in arena, length, id) in sorted order, one entry per distinct string.
        let mut sorted: Vec<(u32, u32, u32)> = Vec::with_capacity(keys.len());
        for &(_, i) in &order {
            let (k, id) = keys[i as usize];
            if let Some(last) = sorted.last_mut() {
                let (s, n, _) = *last;
                if &arena[s as usize..(s + n) as usize] == k {
                    last.2 = id;
                    continue;
                }
            }
            sorted.push((arena.len() as u32, k.len() as u32, id));
            arena.extend_from_slice(k);
        }
        let len = |i: usize| sorted[i].1 as usize;
        let byte = |i: usize, depth: usize| arena[sorted[i].0 as usize + depth];
        let score = |id: u32| scores.get(id as usize).map_or(0.0, |p| p.1);
        let mut nodes: Vec<(u32, u32, u32, f64)> = Vec::with_capacity(arena.len() + 1);
        let mut labels: Vec<u8> = vec![0];
        // (first token, end of tokens, depth) of each node, in node order.
        let mut queue: std::collections::VecDeque<(usize, usize, usize)> =
            std::collections::VecDeque::new();
        queue.push_back((0, sorted.len(), 0));
        let mut next = 1u32;
        while let Some((lo, hi, depth)) = queue.pop_front() {
            let mut at = lo;
            let mut id = NONE;
            if at < hi && len(at) == depth {
                id = sorted[at].2;
                at += 1;
            }
            let first = next;
            while at < hi {
                let b = byte(at, depth);
                let mut end = at + 1;
                while end < hi && byte(end, depth) == b {
                    end += 1;
                }
                queue.push_back((at, end, depth + 1));
                labels.push(b);
                next += 1;
                at = end;
            }
            let s = if id == NONE { 0.0 } else { score(id) };
            nodes.push((first, next - first, id, s));
        }
        let mut root = vec![NONE; 256];
        let (first, n, _, _) = nodes[0];
        for k in first..first + n {
            root[labels[k as usize] as usize] = k;
        }
        // Nodes with many children get a direct table: `▁` (the start of most SentencePiece
        // pieces) has hundreds, which a binary search over took ~8 dependent steps per word.
        let mut wide = vec![NONE; nodes.len()];
        let mut tables = Vec::new();
        for (node, &(first, n, _, _)) in nodes.iter().enumerate().skip(1) {
            if n as usize > WIDE {
                wide[node] = tables.len() as u32;
                let at = tables.len();
                tables.resize(at + 256, NONE);
                for k in first..first + n {
                    tables[at + labels[k as usize] as usize] = k;
                }
            }
        }
        Self {
            root,
            nodes,
            labels,
            wide,
            tables,
        }
    }

    #[inline]
    fn child(&self, node: u32, b: u8) -> u32 {
        if node == 0 {
            return self.root[b as usize];
        }
        let (first, n, _, _) = self.nodes[node as usize];
        if n as usize > WIDE {
            return self.tables[self.wide[node as usize] as usize + b as usize];
        }
        let (first, n) = (first as usize, n as usize);
        let labels = &self.labels[first..first + n];
        if n <= 8 {
            for (i, &l) in labels.iter().enumerate() {
                if l == b {
                    return (first + i) as u32;
                }
            }
            NONE
        } else {
            labels
                .binary_search(&b)
                .map_or(NONE, |i| (first + i) as u32)
        }
    }

    /// Calls `f(length, id, score)` for every token that is a prefix of `bytes`, shortest first.
    #[inline]
    fn prefixes(&self, bytes: &[u8], mut f: impl FnMut(usize, u32, f64)) {
        let mut node = 0u32;
        for (i, &b) in bytes.iter().enumerate() {
            node = self.child(node, b);
            if node == NONE {
                return;
            }
            let (_, _, id, score) = self.nodes[node as usize];
            if id != NONE {
                f(i + 1, id, score);
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Unigram {
    /// Token -> id; for a token listed twice, the last id (HF's `token_to_ids`).
    pub vocab: FxHashMap<String, u32>,
    pub pieces: Vec<(String, f64)>,
    pub unk_id: Option<u32>,
    pub byte_fallback: bool,
    /// Sum the scores in float32, as SentencePiece's own Viterbi does (set for models loaded from
    /// a `.model` file; HF sums float64, which can break near-ties the other way).
    pub float32: bool,
    min_score: f64,
    trie: Trie,
    fallback_ids: [Option<u32>; 256],
    model_id: ModelId,
}

impl Unigram {
    pub fn new(
        pieces: Vec<(String, f64)>,
        unk_id: Option<usize>,
        byte_fallback: bool,
    ) -> Result<Self, TokenizeError> {
        if let Some(u) = unk_id {
            if pieces.is_empty() {
                return Err(TokenizeError::invalid(
                    "model.vocab",
                    "a Unigram model with unk_id needs a vocabulary",
                ));
            }
            if u >= pieces.len() {
                return Err(TokenizeError::invalid(
                    "model.unk_id",
                    format!("unk_id {u} is not in the vocabulary of {}", pieces.len()),
                ));
            }
        }
        let mut vocab = FxHashMap::with_capacity_and_hasher(pieces.len(), Default::default());
        let mut min_score = f64::INFINITY;
        for (id, (t, score)) in pieces.iter().enumerate() {
            vocab.insert(t.clone(), id as u32);
            if *score < min_score {
                min_score = *score;
            }
        }
        let tokens: Vec<(&[u8], u32)> = vocab.iter().map(|(t, &id)| (t.as_bytes(), id)).collect();
        let trie = Trie::build(&tokens, &pieces);
        let mut fallback_ids = [None; 256];
        for (b, slot) in fallback_ids.iter_mut().enumerate() {
            *slot = vocab.get(format!("<0x{b:02X}>").as_str()).copied();
        }
        Ok(Self {
            vocab,
            pieces,
            unk_id: unk_id.map(|u| u as u32),
            byte_fallback,
            float32: false,
            min_score,
            trie,
            fallback_ids,
            model_id: ModelId::new(),
        })
    }

    /// Gives the pieces `scores` (id, score) in the lattice; their vocabulary entries stay.
    pub fn set_scores(&mut self, scores: &[(u32, f64)]) {
        for &(id, score) in scores {
            if let Some(p) = self.pieces.get_mut(id as usize) {
                p.1 = score;
            }
        }
    }

    /// Takes `ids` out of the lattice: text never matches them (SentencePiece's control, unknown,
    /// unused and byte pieces, which it only ever emits itself); they stay in the vocabulary.
    pub fn hide_from_text(&mut self, ids: &[u32]) {
        let hidden: rustc_hash::FxHashSet<u32> = ids.iter().copied().collect();
        let tokens: Vec<(&[u8], u32)> = self
            .vocab
            .iter()
            .filter(|(_, id)| !hidden.contains(id))
            .map(|(t, &id)| (t.as_bytes(), id))
            .collect();
        self.trie = Trie::build(&tokens, &self.pieces);
        self.model_id = ModelId::new();
    }

    #[must_use]
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.vocab.get(token).copied()
    }

    #[must_use]
    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        self.pieces.get(id as usize).map(|p| p.0.as_str())
    }

    /// Tokens of one piece as `(id, byte length)` (see `SAME_SPAN`), cached per thread.
    pub fn tokenize(
        &self,
        piece: &str,
        out: &mut Vec<(u32, u32)>,
        scratch: &mut Scratch,
    ) -> Result<(), TokenizeError> {
        if piece.is_empty() {
            return Ok(());
        }
        if let Some(hit) = scratch.cached_tokens(&self.model_id, piece.as_bytes()) {
            out.extend_from_slice(hit);
            return Ok(());
        }
        let start = out.len();
        if self.float32 {
            self.encode::<f32>(piece, out, &mut scratch.lattice32)?;
        } else {
            self.encode::<f64>(piece, out, &mut scratch.lattice)?;
        }
        scratch.cache_tokens(&self.model_id, piece.as_bytes(), &out[start..]);
        Ok(())
    }

    fn encode<F: Score>(
        &self,
        s: &str,
        out: &mut Vec<(u32, u32)>,
        best: &mut Vec<(F, u32, u32)>,
    ) -> Result<(), TokenizeError> {
        let bytes = s.as_bytes();
        let size = bytes.len();
        let unk_score = F::from_f64(self.min_score) - F::from_f64(UNK_PENALTY);
        // Per end position: (best path score, start of its last token or NONE, that token's id).
        best.clear();
        best.resize(size + 1, (F::default(), NONE, 0));
        let mut at = 0usize;
        let mut frontier = 0usize;
        while at < size {
            let mut here = best[at].0;
            if let Some(limit) = F::RESET {
                // SentencePiece re-centres the float32 sums once they pass +-1e5 (to keep their
                // precision): every node from here to the furthest one reached moves by the
                // same offset.
                if here < F::default() - limit || here > limit {
                    for (i, node) in best
                        .iter_mut()
                        .enumerate()
                        .take(frontier.max(at) + 1)
                        .skip(at)
                    {
                        if i == at || node.1 != NONE {
                            node.0 = node.0 - here;
                        }
                    }
                    here = F::default();
                }
            }
            let mblen = utf8_len(bytes[at]);
            let mut single = false;
            self.trie.prefixes(&bytes[at..], |len, id, score| {
                frontier = frontier.max(at + len);
                let cand = F::from_f64(score) + here;
                let target = &mut best[at + len];
                if target.1 == NONE || cand > target.0 {
                    *target = (cand, at as u32, id);
                }
                single |= len == mblen;
            });
            if !single {
                let Some(unk) = self.unk_id else {
                    // HF's message, word for word (its tests compare it).
                    return Err(TokenizeError::Encode(UNK_MISSING.into()));
                };
                frontier = frontier.max(at + mblen);
                let cand = unk_score + here;
                let target = &mut best[at + mblen];
                if target.1 == NONE || cand > target.0 {
                    *target = (cand, at as u32, unk);
                }
            }
            at += mblen;
        }
        // Back from the end: (start, end, id or NONE for a fused unknown run), reversed.
        let first = out.len();
        let mut end = size;
        let mut run_end: Option<usize> = None;
        let mut spans: Vec<(usize, usize, u32)> = Vec::new();
        while end > 0 {
            let (_, start, id) = best[end];
            let start = start as usize;
            if self.unk_id == Some(id) {
                run_end.get_or_insert(end);
            } else {
                if let Some(e) = run_end.take() {
                    spans.push((end, e, NONE));
                }
                spans.push((start, end, id));
            }
            end = start;
        }
        if let Some(e) = run_end.take() {
            spans.push((0, e, NONE));
        }
        for &(a, b, id) in spans.iter().rev() {
            let len = (b - a) as u32;
            if id != NONE {
                out.push((id, len));
                continue;
            }
            self.unknown(&s[a..b], len, out)?;
        }
        debug_assert!(out[first..].iter().all(|t| t.1 & !FLAGS > 0));
        Ok(())
    }

    /// A fused unknown run: its own id if the run is a token, else its bytes' fallback tokens
    /// (each spanning the run), else unk.
    fn unknown(&self, run: &str, len: u32, out: &mut Vec<(u32, u32)>) -> Result<(), TokenizeError> {
        if let Some(&id) = self.vocab.get(run) {
            out.push((id, len));
            return Ok(());
        }
        if self.byte_fallback {
            let ids: Option<Vec<u32>> =
                run.bytes().map(|b| self.fallback_ids[b as usize]).collect();
            if let Some(ids) = ids {
                let n = ids.len();
                for (i, id) in ids.into_iter().enumerate() {
                    out.push((id, if i + 1 < n { len | SAME_SPAN } else { len }));
                }
                return Ok(());
            }
        }
        match self.unk_id {
            Some(u) => {
                out.push((u, len | RAW_TEXT));
                Ok(())
            }
            None => Err(TokenizeError::Encode(UNK_MISSING.into())),
        }
    }
}

/// The arithmetic of the best path: f64 (HF) or f32 (SentencePiece).
trait Score:
    Copy + Default + PartialOrd + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self>
{
    /// The magnitude past which the running sum is re-centred (SentencePiece's float32 path).
    const RESET: Option<Self>;
    fn from_f64(x: f64) -> Self;
}

impl Score for f64 {
    const RESET: Option<Self> = None;
    #[inline]
    fn from_f64(x: f64) -> Self {
        x
    }
}

impl Score for f32 {
    const RESET: Option<Self> = Some(100_000.0);
    #[inline]
    fn from_f64(x: f64) -> Self {
        x as f32
    }
}

#[inline]
fn utf8_len(b: u8) -> usize {
    match b {
        0..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(byte_fallback: bool) -> Unigram {
        let mut pieces: Vec<(String, f64)> = vec![
            ("<unk>".into(), 0.0),
            ("a".into(), -1.0),
            ("b".into(), -1.5),
            ("ab".into(), -2.0),
            ("abc".into(), -4.0),
            ("c".into(), -1.0),
        ];
        if byte_fallback {
            pieces.extend((0..=255u8).map(|b| (format!("<0x{b:02X}>"), -10.0)));
        }
        Unigram::new(pieces, Some(0), byte_fallback).unwrap()
    }

    fn run(m: &Unigram, s: &str) -> Vec<(u32, u32)> {
        let mut out = vec![];
        m.tokenize(s, &mut out, &mut Scratch::default()).unwrap();
        out
    }

    #[test]
    fn best_path() {
        let m = model(false);
        // "ab" (-2) beats "a" + "b" (-2.5); "abc" (-4) loses to "ab" + "c" (-3).
        assert_eq!(run(&m, "abc"), vec![(3, 2), (5, 1)]);
        assert_eq!(run(&m, "ba"), vec![(2, 1), (1, 1)]);
    }

    #[test]
    fn unknown_runs_fuse_and_fall_back() {
        let m = model(false);
        assert_eq!(run(&m, "axéyb"), vec![(1, 1), (0, 4 | RAW_TEXT), (2, 1)]);
        let m = model(true);
        let got = run(&m, "aéb");
        assert_eq!(
            got,
            vec![(1, 1), (6 + 0xC3, 2 | SAME_SPAN), (6 + 0xA9, 2), (2, 1)]
        );
    }
}
