//! `Encoding` for Python: the result of `encode`, with ids, tokens, offsets, masks and the
//! word/char/token mappings, as `tokenizers.Encoding` gives them.
//!
//! Texts encoded without padding are *lazy*: the call runs the lean ids-only path
//! (`Tokenizer::encode_ids`, no offsets, words or token strings), because most callers read
//! `.ids` alone and that path is about twice as fast. The first access to anything else
//! (offsets, tokens, words, overflowing...) encodes the text once more in full, with the same
//! tokenizer snapshot and options, and keeps the result, so every attribute equals what an eager
//! encode gives. For a batch, that first access encodes the whole batch in full, in parallel, so
//! a caller reading every encoding's offsets pays one parallel pass, not one serial pass each.
use super::ints::IntCache;
use super::text::PyText;
use super::threads;
use crate::tokenize::{EncodeOptions, Encoding, Input, Offsets, Tokenizer, Truncation};
use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The options of the call that made a lazy encoding, to build it in full on demand.
pub struct Settings {
    pub add_special_tokens: bool,
    pub offsets: Offsets,
    pub truncation: Option<Arc<Truncation>>,
}

impl Settings {
    /// The call's options (lazy encodings are never padded).
    fn options(&self) -> EncodeOptions<'_> {
        EncodeOptions {
            add_special_tokens: self.add_special_tokens,
            offsets: self.offsets,
            truncation: self.truncation.as_deref(),
            padding: None,
        }
    }
}

/// A single text whose full encoding is built on first use.
pub struct Lazy {
    ids: Vec<u32>,
    /// The caller's str itself (immutable), not a copy: copying every text cost a malloc and
    /// a memcpy per call, for a full encode that most callers never ask for.
    text: Py<PyString>,
    settings: Settings,
    full: OnceLock<Encoding>,
}

impl Lazy {
    #[must_use]
    pub fn new(ids: Vec<u32>, text: Py<PyString>, settings: Settings) -> Self {
        Self {
            ids,
            text,
            settings,
            full: OnceLock::new(),
        }
    }
}

/// A batch of single texts whose full encodings are built together on first use.
pub struct LazyBatch {
    texts: Vec<PyText>,
    settings: Settings,
    threads: usize,
    full: OnceLock<Vec<Encoding>>,
}

impl LazyBatch {
    #[must_use]
    pub fn new(texts: Vec<PyText>, settings: Settings, threads: usize) -> Self {
        Self {
            texts,
            settings,
            threads,
            full: OnceLock::new(),
        }
    }
}

pub enum Body {
    Full(Encoding),
    Lazy(Lazy),
    /// Item `index` of a lazy batch, with its ids.
    Batch {
        ids: Vec<u32>,
        batch: Arc<LazyBatch>,
        index: usize,
    },
}

/// The result of encoding: ids, tokens, offsets, masks, and the word/char/token mappings.
#[pyclass(name = "Encoding", module = "fastprep._core", frozen, freelist = 4096)]
pub struct PyEncoding {
    body: Body,
    tok: Arc<Tokenizer>,
    ints: Arc<IntCache>,
    /// The `ids` list, built with the rest of its batch (`IntCache::lists`): handed out by the
    /// first read of `ids`, so every read still gets a list of its own.
    ids_list: Mutex<Option<Py<PyList>>>,
}

impl PyEncoding {
    #[must_use]
    pub fn new(body: Body, tok: Arc<Tokenizer>, ints: Arc<IntCache>) -> Self {
        Self {
            body,
            tok,
            ints,
            ids_list: Mutex::new(None),
        }
    }

    /// As `new`, with its `ids` list already built.
    #[must_use]
    pub fn with_ids_list(
        body: Body,
        tok: Arc<Tokenizer>,
        ints: Arc<IntCache>,
        list: Py<PyList>,
    ) -> Self {
        Self {
            ids_list: Mutex::new(Some(list)),
            ..Self::new(body, tok, ints)
        }
    }

    /// The full encoding, built on first use for a lazy one (GIL released meanwhile).
    fn enc(&self) -> PyResult<&Encoding> {
        match &self.body {
            Body::Full(e) => Ok(e),
            Body::Lazy(lazy) => {
                if let Some(e) = lazy.full.get() {
                    return Ok(e);
                }
                let opts = lazy.settings.options();
                let tok = &self.tok;
                let e = Python::attach(|py| -> PyResult<Encoding> {
                    // It was read as UTF-8 when encoded, so this is the cached view.
                    let text = lazy.text.bind(py).to_str()?;
                    Ok(py.detach(|| tok.encode(&Input::Text(text), None, &opts))?)
                })?;
                debug_assert_eq!(e.ids, lazy.ids, "lean and full encodes disagree");
                // Another thread may have filled it meanwhile; both values are equal.
                let _ = lazy.full.set(e);
                Ok(lazy.full.get().expect("just set"))
            }
            Body::Batch { batch, index, .. } => {
                if let Some(all) = batch.full.get() {
                    return Ok(&all[*index]);
                }
                let opts = batch.settings.options();
                let tok = &self.tok;
                let all = Python::attach(|py| {
                    py.detach(|| {
                        let inputs: Vec<_> = batch
                            .texts
                            .iter()
                            .map(|t| (Input::Text(t.as_str()), None))
                            .collect();
                        let parallel = batch.threads > 1 && inputs.len() > 1;
                        threads::run(batch.threads, || tok.encode_batch(&inputs, &opts, parallel))
                    })
                })?;
                let _ = batch.full.set(all);
                Ok(&batch.full.get().expect("just set")[*index])
            }
        }
    }

    fn ids_slice(&self) -> &[u32] {
        match &self.body {
            Body::Full(e) => &e.ids,
            Body::Lazy(l) => &l.ids,
            Body::Batch { ids, .. } => ids,
        }
    }

    fn range_of(&self, seq: usize) -> PyResult<std::ops::Range<usize>> {
        let enc = self.enc()?;
        Ok(enc
            .sequence_ranges
            .iter()
            .find(|(s, _)| *s == seq)
            .map_or(0..enc.len(), |(_, r)| r.clone()))
    }
}

#[pymethods]
impl PyEncoding {
    #[getter]
    fn ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let built = self
            .ids_list
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match built {
            Some(list) => Ok(list.into_bound(py)),
            None => self.ints.list(py, self.ids_slice()),
        }
    }
    #[getter]
    fn type_ids(&self) -> PyResult<Vec<u32>> {
        Ok(self.enc()?.type_ids.clone())
    }
    #[getter]
    fn tokens(&self) -> PyResult<Vec<String>> {
        let enc = self.enc()?;
        Ok((0..enc.len())
            .map(|i| self.tok.token_str(enc, i).to_owned())
            .collect())
    }
    #[getter]
    fn offsets(&self) -> PyResult<Vec<(u32, u32)>> {
        Ok(self.enc()?.offsets.clone())
    }
    #[getter]
    fn attention_mask(&self) -> PyResult<Vec<u32>> {
        if !matches!(self.body, Body::Full(_)) {
            // Lazy encodings are never padded: every token is attended to.
            return Ok(vec![1; self.ids_slice().len()]);
        }
        Ok(self
            .enc()?
            .attention_mask
            .iter()
            .map(|&m| u32::from(m))
            .collect())
    }
    #[getter]
    fn special_tokens_mask(&self) -> PyResult<Vec<u32>> {
        Ok(self
            .enc()?
            .special_tokens_mask
            .iter()
            .map(|&m| u32::from(m))
            .collect())
    }
    #[getter]
    fn word_ids(&self) -> PyResult<Vec<Option<u32>>> {
        let enc = self.enc()?;
        Ok((0..enc.len()).map(|i| enc.word(i)).collect())
    }
    #[getter]
    fn words(&self) -> PyResult<Vec<Option<u32>>> {
        self.word_ids()
    }
    #[getter]
    fn sequence_ids(&self) -> PyResult<Vec<Option<u32>>> {
        Ok(self.enc()?.sequence_ids())
    }
    #[getter]
    fn n_sequences(&self) -> PyResult<usize> {
        Ok(self.enc()?.n_sequences())
    }
    #[getter]
    fn overflowing(&self) -> PyResult<Vec<PyEncoding>> {
        Ok(self
            .enc()?
            .overflowing
            .iter()
            .map(|e| {
                PyEncoding::new(
                    Body::Full(e.clone()),
                    Arc::clone(&self.tok),
                    Arc::clone(&self.ints),
                )
            })
            .collect())
    }
    fn __len__(&self) -> usize {
        self.ids_slice().len()
    }
    fn __repr__(&self) -> String {
        format!(
            "Encoding(num_tokens={}, attributes=[ids, type_ids, tokens, offsets, attention_mask, special_tokens_mask, overflowing])",
            self.ids_slice().len()
        )
    }

    /// The token covering char `char_pos` of sequence `sequence_index`.
    #[pyo3(signature = (char_pos, sequence_index = 0))]
    fn char_to_token(&self, char_pos: u32, sequence_index: usize) -> PyResult<Option<usize>> {
        let r = self.range_of(sequence_index)?;
        let start = r.start;
        Ok(self.enc()?.offsets[r]
            .iter()
            .position(|&(a, b)| char_pos >= a && char_pos < b)
            .map(|i| i + start))
    }

    /// The word of char `char_pos` of sequence `sequence_index`.
    #[pyo3(signature = (char_pos, sequence_index = 0))]
    fn char_to_word(&self, char_pos: u32, sequence_index: usize) -> PyResult<Option<u32>> {
        let enc = self.enc()?;
        Ok(self
            .char_to_token(char_pos, sequence_index)?
            .and_then(|t| enc.word(t)))
    }

    fn token_to_chars(&self, token_index: usize) -> PyResult<Option<(u32, u32)>> {
        let enc = self.enc()?;
        if token_index >= enc.len() {
            return Ok(None);
        }
        Ok(self
            .token_to_sequence(token_index)?
            .map(|_| enc.offsets[token_index]))
    }

    fn token_to_word(&self, token_index: usize) -> PyResult<Option<u32>> {
        let enc = self.enc()?;
        if token_index >= enc.len() {
            return Ok(None);
        }
        Ok(self
            .token_to_sequence(token_index)?
            .and(enc.word(token_index)))
    }

    fn token_to_sequence(&self, token_index: usize) -> PyResult<Option<u32>> {
        let enc = self.enc()?;
        if token_index >= enc.len() {
            return Err(PyIndexError::new_err(format!(
                "token index {token_index} out of range"
            )));
        }
        if enc.sequence_ranges.is_empty() {
            return Ok(Some(0));
        }
        Ok(enc
            .sequence_ranges
            .iter()
            .find(|(_, r)| r.contains(&token_index))
            .map(|(s, _)| *s as u32))
    }

    /// The first and one-past-last tokens of word `word_index` in sequence `sequence_index`.
    #[pyo3(signature = (word_index, sequence_index = 0))]
    fn word_to_tokens(
        &self,
        word_index: u32,
        sequence_index: usize,
    ) -> PyResult<Option<(usize, usize)>> {
        let r = self.range_of(sequence_index)?;
        let start = r.start;
        let idx: Vec<usize> = self.enc()?.words[r]
            .iter()
            .enumerate()
            .filter(|(_, w)| **w == word_index)
            .map(|(i, _)| i + start)
            .collect();
        Ok(idx.first().zip(idx.last()).map(|(&a, &b)| (a, b + 1)))
    }

    #[pyo3(signature = (word_index, sequence_index = 0))]
    fn word_to_chars(
        &self,
        word_index: u32,
        sequence_index: usize,
    ) -> PyResult<Option<(u32, u32)>> {
        let enc = self.enc()?;
        Ok(self
            .word_to_tokens(word_index, sequence_index)?
            .map(|(a, b)| (enc.offsets[a].0, enc.offsets[b - 1].1)))
    }
}
