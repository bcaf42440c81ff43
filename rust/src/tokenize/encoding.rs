//! `Encoding`: the result of encoding one input (ids, offsets, masks...), with truncation,
//! padding and merging as HF tokenizers define them (overflowing windows included).
use std::ops::Range;

/// `Encoding::token_refs` value for "the vocabulary's string of the id".
pub const VOCAB: u32 = u32::MAX;
/// `Encoding::words` value for "no word" (special and padding tokens).
pub const NO_WORD: u32 = u32::MAX;

/// Per token: 26 bytes (ids, type ids, a 4-byte token reference, offsets, word, two u8 masks),
/// about half of a struct-of-Options layout; memory traffic is most of an encode's cost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Encoding {
    pub ids: Vec<u32>,
    pub type_ids: Vec<u32>,
    /// Index into `strings` of the token's text, or `VOCAB` (most tokens: the vocabulary's
    /// string for the id, looked up only when asked for).
    pub token_refs: Vec<u32>,
    pub strings: Vec<Box<str>>,
    /// Char offsets into the original input (byte offsets where asked for).
    pub offsets: Vec<(u32, u32)>,
    /// Word index, or `NO_WORD`.
    pub words: Vec<u32>,
    pub special_tokens_mask: Vec<u8>,
    pub attention_mask: Vec<u8>,
    pub overflowing: Vec<Encoding>,
    /// Which token range belongs to which input sequence (0 or 1).
    pub sequence_ranges: Vec<(usize, Range<usize>)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Left,
    Right,
}

impl Encoding {
    /// What HF's encodings without offsets hold beside the ids: empty token strings, no words,
    /// type id 0, offsets (0, 0).
    pub fn keep_ids_only(&mut self) {
        self.strings.clear();
        self.strings.push("".into());
        self.token_refs.iter_mut().for_each(|r| *r = 0);
        self.words.iter_mut().for_each(|w| *w = NO_WORD);
        self.type_ids.iter_mut().for_each(|t| *t = 0);
        self.offsets.iter_mut().for_each(|o| *o = (0, 0));
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// An empty encoding with room for `n` tokens.
    #[must_use]
    pub fn with_capacity(n: usize) -> Self {
        Self {
            ids: Vec::with_capacity(n),
            type_ids: Vec::with_capacity(n),
            token_refs: Vec::with_capacity(n),
            strings: Vec::new(),
            offsets: Vec::with_capacity(n),
            words: Vec::with_capacity(n),
            special_tokens_mask: Vec::with_capacity(n),
            attention_mask: Vec::with_capacity(n),
            overflowing: vec![],
            sequence_ranges: vec![],
        }
    }

    /// Appends a token; `token` is its text when it is not the vocabulary's string of `id`.
    pub fn push(
        &mut self,
        id: u32,
        token: Option<&str>,
        offsets: (u32, u32),
        word: Option<u32>,
        type_id: u32,
    ) {
        self.ids.push(id);
        self.token_refs.push(match token {
            Some(t) => {
                self.strings.push(t.into());
                (self.strings.len() - 1) as u32
            }
            None => VOCAB,
        });
        self.offsets.push(offsets);
        self.words.push(word.unwrap_or(NO_WORD));
        self.type_ids.push(type_id);
        self.special_tokens_mask.push(0);
        self.attention_mask.push(1);
    }

    /// The token's own text, or `None` when it is the vocabulary's string of its id.
    #[must_use]
    pub fn token(&self, i: usize) -> Option<&str> {
        match self.token_refs[i] {
            VOCAB => None,
            k => Some(&self.strings[k as usize]),
        }
    }

    #[must_use]
    pub fn word(&self, i: usize) -> Option<u32> {
        match self.words[i] {
            NO_WORD => None,
            w => Some(w),
        }
    }

    /// Special tokens (from a post-processor): no word, (0, 0) offsets, special mask 1.
    #[must_use]
    pub fn special(ids: &[u32], tokens: &[String], type_id: u32) -> Self {
        let n = ids.len();
        Self {
            ids: ids.to_vec(),
            type_ids: vec![type_id; n],
            token_refs: (0..n as u32).collect(),
            strings: tokens.iter().map(|t| t.as_str().into()).collect(),
            offsets: vec![(0, 0); n],
            words: vec![NO_WORD; n],
            special_tokens_mask: vec![1; n],
            attention_mask: vec![1; n],
            overflowing: vec![],
            sequence_ranges: vec![],
        }
    }

    pub fn set_sequence_id(&mut self, seq: usize) {
        self.sequence_ranges = vec![(seq, 0..self.len())];
    }

    pub fn set_type_ids(&mut self, type_id: u32) {
        self.type_ids = vec![type_id; self.len()];
    }

    /// The input sequence of each token (`None` for special and padding tokens), as HF computes
    /// it: for each sequence id below `n_sequences`, its recorded range, or the whole encoding
    /// when that id has none (so an overflowing window that only records the pair's range reads
    /// as sequence 0 throughout, as in HF).
    #[must_use]
    pub fn sequence_ids(&self) -> Vec<Option<u32>> {
        let mut out = vec![None; self.len()];
        for seq in 0..self.n_sequences() {
            // HF keeps the ranges in a map: a later entry for an id replaces an earlier one.
            let r = self
                .sequence_ranges
                .iter()
                .rev()
                .find(|(s, _)| *s == seq)
                .map_or(0..self.len(), |(_, r)| r.clone());
            for slot in &mut out[r] {
                *slot = Some(seq as u32);
            }
        }
        out
    }

    #[must_use]
    pub fn n_sequences(&self) -> usize {
        if self.sequence_ranges.is_empty() {
            1
        } else {
            let mut ids: Vec<usize> = self.sequence_ranges.iter().map(|r| r.0).collect();
            ids.sort_unstable();
            ids.dedup();
            ids.len()
        }
    }

    fn slice(&self, r: Range<usize>) -> Self {
        Self {
            ids: self.ids[r.clone()].to_vec(),
            type_ids: self.type_ids[r.clone()].to_vec(),
            token_refs: self.token_refs[r.clone()].to_vec(),
            strings: self.strings.clone(),
            offsets: self.offsets[r.clone()].to_vec(),
            words: self.words[r.clone()].to_vec(),
            special_tokens_mask: self.special_tokens_mask[r.clone()].to_vec(),
            attention_mask: self.attention_mask[r].to_vec(),
            overflowing: vec![],
            sequence_ranges: vec![],
        }
    }

    /// Keeps `max_len` tokens; the rest become overflowing windows that overlap by `stride`.
    /// Fails (changing nothing) when `stride >= max_len` and there is something to cut.
    pub fn truncate(
        &mut self,
        max_len: usize,
        stride: usize,
        direction: Direction,
    ) -> Result<(), String> {
        let n = self.len();
        if max_len >= n {
            return Ok(());
        }
        if max_len == 0 {
            let whole = std::mem::take(self);
            self.overflowing.push(whole);
            return Ok(());
        }
        if stride >= max_len {
            return Err(format!(
                "truncation stride ({stride}) must be smaller than the length a sequence is cut to ({max_len}, \
                 after the special tokens are subtracted); lower the stride or raise max_length"
            ));
        }
        let step = max_len - stride;
        let mut parts = Vec::new();
        match direction {
            Direction::Right => {
                let mut start = 0;
                loop {
                    let stop = (start + max_len).min(n);
                    parts.push(start..stop);
                    if stop == n {
                        break;
                    }
                    start += step;
                }
            }
            Direction::Left => {
                let mut stop = n;
                loop {
                    let start = stop.saturating_sub(max_len);
                    parts.push(start..stop);
                    if start == 0 || stop <= step {
                        break;
                    }
                    stop -= step;
                }
            }
        }
        let mut first = self.slice(parts[0].clone());
        first.overflowing = parts[1..].iter().map(|r| self.slice(r.clone())).collect();
        *self = first;
        Ok(())
    }

    /// Appends `pair`; overflowing windows combine as HF's `merge_with` does.
    pub fn merge_with(&mut self, pair: Encoding, growing_offsets: bool) {
        let mut overflowing = Vec::new();
        for mine in &self.overflowing {
            let mut e = mine.clone();
            e.merge_with(pair.clone(), growing_offsets);
            overflowing.push(e);
            for theirs in &pair.overflowing {
                let mut e = mine.clone();
                e.merge_with(theirs.clone(), growing_offsets);
                overflowing.push(e);
            }
        }
        for theirs in &pair.overflowing {
            let mut e = self.clone();
            e.merge_with(theirs.clone(), growing_offsets);
            overflowing.push(e);
        }
        let base = self.len();
        self.sequence_ranges.extend(
            pair.sequence_ranges
                .into_iter()
                .map(|(s, r)| (s, r.start + base..r.end + base)),
        );
        self.ids.extend(pair.ids);
        self.type_ids.extend(pair.type_ids);
        let shift = self.strings.len() as u32;
        self.token_refs.extend(pair.token_refs.into_iter().map(|k| {
            if k == VOCAB {
                VOCAB
            } else {
                k + shift
            }
        }));
        self.strings.extend(pair.strings);
        self.words.extend(pair.words);
        let shift = if growing_offsets {
            self.offsets.last().map_or(0, |o| o.1)
        } else {
            0
        };
        self.offsets.extend(
            pair.offsets
                .into_iter()
                .map(|(a, b)| (a + shift, b + shift)),
        );
        self.special_tokens_mask.extend(pair.special_tokens_mask);
        self.attention_mask.extend(pair.attention_mask);
        self.overflowing = overflowing;
    }

    #[must_use]
    pub fn merge(encodings: Vec<Encoding>, growing_offsets: bool) -> Self {
        let mut out = Encoding::default();
        for e in encodings {
            out.merge_with(e, growing_offsets);
        }
        out
    }

    /// Pads to `target` tokens (overflowing windows too).
    pub fn pad(
        &mut self,
        target: usize,
        pad_id: u32,
        pad_type_id: u32,
        pad_token: &str,
        direction: Direction,
    ) {
        for o in &mut self.overflowing {
            o.pad(target, pad_id, pad_type_id, pad_token, direction);
        }
        let n = self.len();
        if n >= target {
            return;
        }
        let k = target - n;
        fn fill<T: Clone>(v: &mut Vec<T>, k: usize, x: T, left: bool) {
            if left {
                v.splice(0..0, std::iter::repeat_n(x, k));
            } else {
                v.extend(std::iter::repeat_n(x, k));
            }
        }
        let left = direction == Direction::Left;
        fill(&mut self.ids, k, pad_id, left);
        fill(&mut self.type_ids, k, pad_type_id, left);
        self.strings.push(pad_token.into());
        let pad_ref = (self.strings.len() - 1) as u32;
        fill(&mut self.token_refs, k, pad_ref, left);
        fill(&mut self.words, k, NO_WORD, left);
        fill(&mut self.attention_mask, k, 0, left);
        fill(&mut self.special_tokens_mask, k, 1, left);
        fill(&mut self.offsets, k, (0, 0), left);
        if left {
            for (_, r) in &mut self.sequence_ranges {
                *r = r.start + k..r.end + k;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(n: u32) -> Encoding {
        let mut e = Encoding::default();
        for i in 0..n {
            e.push(i, None, (i, i + 1), Some(i), 0);
        }
        e
    }

    #[test]
    fn truncate_right_with_stride() {
        let mut e = enc(10);
        e.truncate(4, 1, Direction::Right).unwrap();
        assert_eq!(e.ids, vec![0, 1, 2, 3]);
        let o: Vec<_> = e.overflowing.iter().map(|o| o.ids.clone()).collect();
        assert_eq!(o, vec![vec![3, 4, 5, 6], vec![6, 7, 8, 9]]);
    }

    #[test]
    fn truncate_left() {
        let mut e = enc(5);
        e.truncate(2, 0, Direction::Left).unwrap();
        assert_eq!(e.ids, vec![3, 4]);
        let o: Vec<_> = e.overflowing.iter().map(|o| o.ids.clone()).collect();
        assert_eq!(o, vec![vec![1, 2], vec![0]]);
    }

    #[test]
    fn pad_left_shifts_sequence_ranges() {
        let mut e = enc(2);
        e.set_sequence_id(0);
        e.pad(4, 9, 0, "<pad>", Direction::Left);
        assert_eq!(e.ids, vec![9, 9, 0, 1]);
        assert_eq!(e.attention_mask, vec![0, 0, 1, 1]);
        assert_eq!(e.sequence_ids(), vec![None, None, Some(0), Some(0)]);
    }
}
