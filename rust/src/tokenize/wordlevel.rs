//! The WordLevel model: each word is one token, its vocabulary id or the unk token's (HF
//! tokenizers' `WordLevel::tokenize`).
use super::bytesmap::BytesMap;
use crate::error::TokenizeError;
use rustc_hash::FxHashMap;

#[derive(Debug, Clone)]
pub struct WordLevel {
    pub vocab: FxHashMap<String, u32>,
    pub vocab_r: FxHashMap<u32, String>,
    pub unk_token: String,
    unk_id: Option<u32>,
    lookup: BytesMap<u32>,
}

impl WordLevel {
    #[must_use]
    pub fn new(vocab: FxHashMap<String, u32>, unk_token: String) -> Self {
        let mut lookup = BytesMap::default();
        for (t, &id) in &vocab {
            lookup.insert(t.as_bytes(), id);
        }
        let vocab_r = vocab.iter().map(|(t, &id)| (id, t.clone())).collect();
        let unk_id = vocab.get(&unk_token).copied();
        Self {
            vocab,
            vocab_r,
            unk_token,
            unk_id,
            lookup,
        }
    }

    /// Pushes `(id, byte length)` of `word`'s one token.
    pub fn tokenize(&self, word: &str, out: &mut Vec<(u32, u32)>) -> Result<(), TokenizeError> {
        if word.is_empty() {
            return Ok(());
        }
        let id = match self.lookup.get(word.as_bytes()) {
            Some(&id) => id,
            None => self.unk_id.ok_or_else(|| {
                TokenizeError::Encode(format!(
                    "WordLevel error: Missing {} token from the vocabulary (the word {:?} needs it)",
                    self.unk_token,
                    word.chars().take(40).collect::<String>()
                ))
            })?,
        };
        out.push((id, word.len() as u32));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_unknown_and_missing_unk() {
        let vocab: FxHashMap<String, u32> = [("<unk>", 0), ("hello", 1)]
            .iter()
            .map(|(t, i)| ((*t).to_string(), *i))
            .collect();
        let m = WordLevel::new(vocab.clone(), "<unk>".into());
        let mut out = vec![];
        m.tokenize("hello", &mut out).unwrap();
        m.tokenize("héllo", &mut out).unwrap();
        assert_eq!(out, vec![(1, 5), (0, 6)]);
        let m = WordLevel::new(vocab, "[UNK]".into());
        assert!(m.tokenize("nope", &mut out).is_err());
    }
}
