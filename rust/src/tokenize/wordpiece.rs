//! The WordPiece model (BERT): each word is cut greedily into the longest vocabulary token at its
//! start, then the longest continuation token (`##...`) after that, as HF tokenizers'
//! `WordPiece::tokenize` does; a word with no full cut, or longer than `max_input_chars_per_word`
//! chars, becomes one unk token.
//!
//! Performance notes: HF builds `format!("##{substr}")` for every candidate. Here continuation
//! tokens live in their own map keyed by the text after the prefix, so a candidate is a slice of
//! the word and no lookup allocates. Candidates longer than the vocabulary's longest token
//! cannot match, so the search starts there instead of at the word's end: the same answer, with
//! O(longest token) lookups per sub-token instead of O(word).
use super::bpe::Scratch;
use super::bytesmap::BytesMap;
use crate::error::TokenizeError;
use rustc_hash::FxHashMap;

#[derive(Debug, Clone)]
pub struct WordPiece {
    pub vocab: FxHashMap<String, u32>,
    pub vocab_r: FxHashMap<u32, String>,
    pub unk_token: String,
    pub continuing_subword_prefix: String,
    pub max_input_chars_per_word: usize,
    unk_id: Option<u32>,
    /// Every token, for the first piece of a word.
    head: BytesMap<u32>,
    /// Tokens that start with the prefix, keyed by what follows it.
    tail: BytesMap<u32>,
    /// Longest key of `head` / `tail`, in bytes.
    head_max: usize,
    tail_max: usize,
    model_id: super::bpe::ModelId,
}

impl WordPiece {
    #[must_use]
    pub fn new(
        vocab: FxHashMap<String, u32>,
        unk_token: String,
        continuing_subword_prefix: String,
        max_input_chars_per_word: usize,
    ) -> Self {
        let mut head = BytesMap::default();
        let mut tail = BytesMap::default();
        let (mut head_max, mut tail_max) = (0, 0);
        for (t, &id) in &vocab {
            head.insert(t.as_bytes(), id);
            head_max = head_max.max(t.len());
            if let Some(rest) = t.strip_prefix(continuing_subword_prefix.as_str()) {
                tail.insert(rest.as_bytes(), id);
                tail_max = tail_max.max(rest.len());
            }
        }
        let vocab_r = vocab.iter().map(|(t, &id)| (id, t.clone())).collect();
        let unk_id = vocab.get(&unk_token).copied();
        Self {
            vocab,
            vocab_r,
            unk_token,
            continuing_subword_prefix,
            max_input_chars_per_word,
            unk_id,
            head,
            tail,
            head_max,
            tail_max,
            model_id: super::bpe::ModelId::new(),
        }
    }

    fn unk(&self, word: &str, out: &mut Vec<(u32, u32)>) -> Result<(), TokenizeError> {
        let id = self.unk_id.ok_or_else(|| {
            TokenizeError::Encode(format!(
                "WordPiece error: Missing {} token from the vocabulary (the word {:?} needs it)",
                self.unk_token,
                word.chars().take(40).collect::<String>()
            ))
        })?;
        out.push((id, word.len() as u32));
        Ok(())
    }

    /// `tokenize`, with words that are not one vocabulary token memoized in the thread's cache
    /// (words repeat: a hit is one lookup instead of one per candidate sub-token).
    #[inline]
    pub fn tokenize_cached(
        &self,
        word: &str,
        out: &mut Vec<(u32, u32)>,
        scratch: &mut Scratch,
    ) -> Result<(), TokenizeError> {
        if word.len() <= self.head_max && word.len() <= self.max_input_chars_per_word {
            if let Some(&id) = self.head.get(word.as_bytes()) {
                out.push((id, word.len() as u32));
                return Ok(());
            }
        }
        if let Some(hit) = scratch.cached_tokens(&self.model_id, word.as_bytes()) {
            out.extend_from_slice(hit);
            return Ok(());
        }
        let start = out.len();
        self.tokenize(word, out)?;
        scratch.cache_tokens(&self.model_id, word.as_bytes(), &out[start..]);
        Ok(())
    }

    /// Pushes `(id, byte length)` for each sub-token of `word`.
    pub fn tokenize(&self, word: &str, out: &mut Vec<(u32, u32)>) -> Result<(), TokenizeError> {
        // A word of at most max bytes has at most max chars; only longer ones need counting.
        if word.len() > self.max_input_chars_per_word
            && word.chars().count() > self.max_input_chars_per_word
        {
            return self.unk(word, out);
        }
        let first = out.len();
        let mut start = 0;
        while start < word.len() {
            let (map, longest) = if start == 0 {
                (&self.head, self.head_max)
            } else {
                (&self.tail, self.tail_max)
            };
            let mut end = floor_char(word, word.len().min(start + longest));
            let mut found = None;
            while end > start {
                if let Some(&id) = map.get(&word.as_bytes()[start..end]) {
                    found = Some(id);
                    break;
                }
                end = floor_char(word, end - 1);
            }
            let Some(id) = found else {
                out.truncate(first);
                return self.unk(word, out);
            };
            out.push((id, (end - start) as u32));
            start = end;
        }
        Ok(())
    }

    #[must_use]
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.vocab.get(token).copied()
    }

    #[must_use]
    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        self.vocab_r.get(&id).map(String::as_str)
    }
}

#[inline]
fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// HF's `decoders::wordpiece::cleanup`: spaces before punctuation and in contractions removed,
/// in this order (the order matters: " ' " goes before " 's").
#[must_use]
pub fn cleanup(s: &str) -> String {
    s.replace(" .", ".")
        .replace(" ?", "?")
        .replace(" !", "!")
        .replace(" ,", ",")
        .replace(" ' ", "'")
        .replace(" n't", "n't")
        .replace(" 'm", "'m")
        .replace(" do not", " don't")
        .replace(" 's", "'s")
        .replace(" 've", "'ve")
        .replace(" 're", "'re")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(tokens: &[&str], max_chars: usize) -> WordPiece {
        let vocab = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| ((*t).to_string(), i as u32))
            .collect();
        WordPiece::new(vocab, "[UNK]".into(), "##".into(), max_chars)
    }

    fn run(m: &WordPiece, w: &str) -> Result<Vec<(u32, u32)>, TokenizeError> {
        let mut out = vec![];
        m.tokenize(w, &mut out)?;
        Ok(out)
    }

    #[test]
    fn greedy_longest_match_first() {
        let m = model(
            &["[UNK]", "un", "##aff", "##able", "una", "##ff", "##a"],
            100,
        );
        // "una" is the longest head; then "##ff", then "##able".
        assert_eq!(run(&m, "unaffable").unwrap(), vec![(4, 3), (5, 2), (3, 4)]);
        assert_eq!(run(&m, "un").unwrap(), vec![(1, 2)]);
        assert_eq!(run(&m, "").unwrap(), vec![]);
    }

    #[test]
    fn no_full_cut_is_one_unk_over_the_word() {
        let m = model(&["[UNK]", "un", "##aff"], 100);
        // "un" + "##aff" match, but "able" has no continuation: the whole word is unk.
        assert_eq!(run(&m, "unaffable").unwrap(), vec![(0, 9)]);
        assert_eq!(run(&m, "xyz").unwrap(), vec![(0, 3)]);
    }

    #[test]
    fn max_input_chars_counts_chars_not_bytes() {
        let m = model(&["[UNK]", "é", "##é"], 3);
        assert_eq!(run(&m, "ééé").unwrap(), vec![(1, 2), (2, 2), (2, 2)]);
        assert_eq!(run(&m, "éééé").unwrap(), vec![(0, 8)]);
    }

    #[test]
    fn multibyte_candidates_shrink_by_whole_chars() {
        let m = model(&["[UNK]", "日", "##本", "##本語"], 100);
        assert_eq!(run(&m, "日本語").unwrap(), vec![(1, 3), (3, 6)]);
        assert_eq!(run(&m, "日本").unwrap(), vec![(1, 3), (2, 3)]);
    }

    #[test]
    fn missing_unk_is_an_error_not_a_panic() {
        let m = model(&["a"], 100);
        assert!(run(&m, "b").is_err());
        assert_eq!(run(&m, "a").unwrap(), vec![(0, 1)]);
    }

    #[test]
    fn empty_prefix_and_prefix_tokens_at_word_start() {
        let vocab: FxHashMap<String, u32> = [("[UNK]", 0), ("ab", 1), ("c", 2), ("##c", 3)]
            .iter()
            .map(|(t, i)| ((*t).to_string(), *i))
            .collect();
        let m = WordPiece::new(vocab.clone(), "[UNK]".into(), String::new(), 100);
        assert_eq!(run(&m, "abc").unwrap(), vec![(1, 2), (2, 1)]);
        let m = WordPiece::new(vocab, "[UNK]".into(), "##".into(), 100);
        // A word that itself starts with the prefix matches a continuation token as a head.
        assert_eq!(run(&m, "##c").unwrap(), vec![(3, 3)]);
        assert_eq!(run(&m, "abc").unwrap(), vec![(1, 2), (3, 1)]);
    }

    #[test]
    fn cleanup_matches_hf_order() {
        assert_eq!(
            cleanup("i do not know , he ' s here . isn ' t it ?"),
            "i don't know, he's here. isn't it?"
        );
    }
}
