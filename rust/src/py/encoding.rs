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
use crate::tokenize::{Direction, EncodeOptions, Encoding, Input, Offsets, Tokenizer, Truncation};
use pyo3::exceptions::{PyDeprecationWarning, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
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
#[pyclass(
    name = "Encoding",
    module = "fastprep._core",
    frozen,
    weakref,
    freelist = 4096
)]
pub struct PyEncoding {
    body: Body,
    tok: Arc<Tokenizer>,
    ints: Arc<IntCache>,
    /// The `ids` list, built with the rest of its batch (`IntCache::lists`): handed out by the
    /// first read of `ids`, so every read still gets a list of its own.
    ids_list: Mutex<Option<Py<PyList>>>,
    /// Set once `truncate`, `pad` or `set_sequence_id` changed the encoding (rare): every read
    /// then goes to `edit`. A flag first, so that the usual reads take no lock.
    edited: AtomicBool,
    edit: Mutex<Option<Arc<Encoding>>>,
}

/// The encoding a read sees: the body's own, or the edited copy.
pub enum View<'a> {
    Borrowed(&'a Encoding),
    Edited(Arc<Encoding>),
}

impl Deref for View<'_> {
    type Target = Encoding;
    fn deref(&self) -> &Encoding {
        match self {
            View::Borrowed(e) => e,
            View::Edited(e) => e,
        }
    }
}

/// The tokenizer of encodings made without one (`Encoding()`, unpickled, merged): their tokens
/// are all stored as strings, so its (empty) vocabulary is never read.
fn no_tokenizer() -> Arc<Tokenizer> {
    static EMPTY: OnceLock<Arc<Tokenizer>> = OnceLock::new();
    Arc::clone(EMPTY.get_or_init(|| {
        let json = r#"{"version":"1.0","added_tokens":[],"normalizer":null,"pre_tokenizer":null,"post_processor":null,"decoder":null,"model":{"type":"BPE","vocab":{},"merges":[]}}"#;
        Arc::new(Tokenizer::from_json_str(json).expect("an empty BPE tokenizer loads"))
    }))
}

/// `e` with every token's string stored in it (overflowing parts too), so that it no longer
/// needs `tok`'s vocabulary: for pickling and for merging encodings of several tokenizers.
fn resolved(tok: &Tokenizer, e: &Encoding) -> Encoding {
    let n = e.len();
    Encoding {
        token_refs: (0..n as u32).collect(),
        strings: (0..n).map(|i| tok.token_str(e, i).into()).collect(),
        overflowing: e.overflowing.iter().map(|o| resolved(tok, o)).collect(),
        ..e.clone()
    }
}

/// The pickled form: (ids, type_ids, tokens, offsets, words, special_tokens_mask,
/// attention_mask, [(sequence, start, end)], [overflowing states]).
type State = (
    Vec<u32>,
    Vec<u32>,
    Vec<String>,
    Vec<(u32, u32)>,
    Vec<Option<u32>>,
    Vec<u8>,
    Vec<u8>,
    Vec<(usize, usize, usize)>,
);

fn to_state<'py>(py: Python<'py>, tok: &Tokenizer, e: &Encoding) -> PyResult<Bound<'py, PyTuple>> {
    let state: State = (
        e.ids.clone(),
        e.type_ids.clone(),
        (0..e.len())
            .map(|i| tok.token_str(e, i).to_owned())
            .collect(),
        e.offsets.clone(),
        (0..e.len()).map(|i| e.word(i)).collect(),
        e.special_tokens_mask.clone(),
        e.attention_mask.clone(),
        e.sequence_ranges
            .iter()
            .map(|(s, r)| (*s, r.start, r.end))
            .collect(),
    );
    let over = e
        .overflowing
        .iter()
        .map(|o| to_state(py, tok, o))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(
        py,
        [
            state.into_pyobject(py)?.into_any(),
            PyList::new(py, over)?.into_any(),
        ],
    )
}

fn from_state(obj: &Bound<'_, PyAny>) -> PyResult<Encoding> {
    let bad = || PyTypeError::new_err("not a pickled fastprep Encoding state");
    let (state, over): (State, Vec<Bound<'_, PyAny>>) = obj.extract().map_err(|_| bad())?;
    let (ids, type_ids, tokens, offsets, words, special, attention, ranges) = state;
    let n = ids.len();
    let same = [
        type_ids.len(),
        tokens.len(),
        offsets.len(),
        words.len(),
        special.len(),
        attention.len(),
    ];
    if same.iter().any(|&k| k != n) || ranges.iter().any(|&(_, a, b)| a > b || b > n) {
        return Err(PyValueError::new_err(
            "pickled Encoding state has parts of different lengths; it was not made by fastprep",
        ));
    }
    Ok(Encoding {
        ids,
        type_ids,
        token_refs: (0..n as u32).collect(),
        strings: tokens.into_iter().map(String::into_boxed_str).collect(),
        offsets,
        words: words
            .into_iter()
            .map(|w| w.unwrap_or(crate::tokenize::encoding::NO_WORD))
            .collect(),
        special_tokens_mask: special,
        attention_mask: attention,
        overflowing: over.iter().map(from_state).collect::<PyResult<_>>()?,
        sequence_ranges: ranges.into_iter().map(|(s, a, b)| (s, a..b)).collect(),
    })
}

impl PyEncoding {
    #[must_use]
    pub fn new(body: Body, tok: Arc<Tokenizer>, ints: Arc<IntCache>) -> Self {
        Self {
            body,
            tok,
            ints,
            ids_list: Mutex::new(None),
            edited: AtomicBool::new(false),
            edit: Mutex::new(None),
        }
    }

    /// The encoding as it is now, with its token strings stored in it (see `resolved`).
    pub fn resolved(&self) -> PyResult<Encoding> {
        Ok(resolved(&self.tok, &*self.enc()?))
    }

    /// An encoding that owns all its token strings (see `resolved`).
    pub fn standalone(e: Encoding) -> Self {
        let ints = Arc::new(IntCache::new(0));
        Self::new(Body::Full(e), no_tokenizer(), ints)
    }

    /// The encoding as it is now, as an owned copy (for an edit).
    fn current(&self) -> PyResult<Encoding> {
        Ok(self.enc()?.clone())
    }

    /// Replaces the encoding by `e` (after `truncate`, `pad`...).
    fn set_edit(&self, e: Encoding) {
        *self.edit.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(e));
        self.ids_list
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        self.edited.store(true, Ordering::Release);
    }

    fn edited(&self) -> Option<Arc<Encoding>> {
        if !self.edited.load(Ordering::Acquire) {
            return None;
        }
        self.edit
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
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

    /// The encoding (the edited one if edited), built on first use for a lazy one.
    fn enc(&self) -> PyResult<View<'_>> {
        if let Some(e) = self.edited() {
            return Ok(View::Edited(e));
        }
        self.body_enc().map(View::Borrowed)
    }

    /// The body's full encoding, built on first use for a lazy one (GIL released meanwhile).
    fn body_enc(&self) -> PyResult<&Encoding> {
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
}

/// HF's `sequence_range`: the range recorded for `seq` (a later entry replaces an earlier one,
/// as in HF's map), or the whole encoding.
fn range_of(enc: &Encoding, seq: usize) -> std::ops::Range<usize> {
    enc.sequence_ranges
        .iter()
        .rev()
        .find(|(s, _)| *s == seq)
        .map_or(0..enc.len(), |(_, r)| r.clone())
}

/// HF's `token_to_sequence`, including its bound: an index equal to the length still reads as
/// sequence 0 when no range is recorded (HF compares with `>`), matched on purpose.
fn token_to_sequence(enc: &Encoding, token: usize) -> Option<usize> {
    if token > enc.len() {
        None
    } else if enc.sequence_ranges.is_empty() {
        Some(0)
    } else {
        enc.sequence_ranges
            .iter()
            .rev()
            .find(|(_, r)| r.contains(&token))
            .map(|(s, _)| *s)
    }
}

/// HF's `char_to_token`: None when the sequence's range lies past the end.
fn char_to_token(enc: &Encoding, pos: u32, seq: usize) -> Option<usize> {
    let r = range_of(enc, seq);
    let start = r.start;
    enc.offsets
        .get(r)?
        .iter()
        .position(|&(a, b)| pos >= a && pos < b)
        .map(|i| i + start)
}

/// HF's `word_to_tokens`: scans the sequence's words while they are not past `word`.
fn word_to_tokens(enc: &Encoding, word: u32, seq: usize) -> Option<(usize, usize)> {
    let r = range_of(enc, seq);
    let words = enc.words.get(r.clone())?;
    let (mut start, mut end) = (None, None);
    for (i, &w) in words.iter().enumerate() {
        let w = (w != crate::tokenize::encoding::NO_WORD).then_some(w);
        if w > Some(word) {
            break;
        }
        if w == Some(word) {
            start = Some(start.map_or(i, |s: usize| s.min(i)));
            end = Some(end.map_or(i + 1, |e: usize| e.max(i + 1)));
        }
    }
    Some((r.start + start?, r.start + end?))
}

#[pymethods]
impl PyEncoding {
    /// An empty encoding (as `tokenizers.Encoding()`).
    #[new]
    fn py_new() -> Self {
        Self::standalone(Encoding::default())
    }

    /// Pickling, `copy.copy` and `copy.deepcopy`: the token strings travel with the encoding,
    /// so it needs no tokenizer when unpickled.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let me = slf.get();
        let state = to_state(py, &me.tok, &*me.enc()?)?;
        let ctor = slf.get_type().getattr("_from_state")?;
        PyTuple::new(py, [ctor, PyTuple::new(py, [state])?.into_any()])
    }

    /// Rebuilds a pickled encoding (see `__reduce__`).
    #[staticmethod]
    fn _from_state(state: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Self::standalone(from_state(state)?))
    }

    /// Concatenates `encodings` into one; with `growing_offsets`, each one's offsets continue
    /// from the previous one's end (as `tokenizers.Encoding.merge`).
    #[staticmethod]
    #[pyo3(signature = (encodings, growing_offsets = true))]
    fn merge(encodings: Vec<PyRef<'_, PyEncoding>>, growing_offsets: bool) -> PyResult<Self> {
        let parts = encodings
            .iter()
            .map(|e| Ok(resolved(&e.tok, &*e.enc()?)))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Self::standalone(Encoding::merge(parts, growing_offsets)))
    }

    /// Cuts the encoding to `max_length` tokens in place; the rest become `overflowing`
    /// windows overlapping by `stride` (as `tokenizers.Encoding.truncate`).
    #[pyo3(signature = (max_length, stride = 0, direction = "right"))]
    fn truncate(&self, max_length: usize, stride: usize, direction: &str) -> PyResult<()> {
        let direction = match direction {
            "left" => Direction::Left,
            "right" => Direction::Right,
            other => {
                return Err(PyValueError::new_err(format!(
                    "Invalid truncation direction value : {other}"
                )))
            }
        };
        let mut e = resolved(&self.tok, &*self.enc()?);
        e.truncate(max_length, stride, direction)
            .map_err(PyValueError::new_err)?;
        self.set_edit(e);
        Ok(())
    }

    /// Pads in place to `length` tokens (as `tokenizers.Encoding.pad`).
    #[pyo3(signature = (length, direction = "right", pad_id = 0, pad_type_id = 0, pad_token = "[PAD]"))]
    fn pad(
        &self,
        length: usize,
        direction: &str,
        pad_id: u32,
        pad_type_id: u32,
        pad_token: &str,
    ) -> PyResult<()> {
        let direction = match direction {
            "left" => Direction::Left,
            "right" => Direction::Right,
            other => {
                return Err(PyValueError::new_err(format!(
                    "Unknown `direction`: `{other}`"
                )))
            }
        };
        let mut e = resolved(&self.tok, &*self.enc()?);
        e.pad(length, pad_id, pad_type_id, pad_token, direction);
        self.set_edit(e);
        Ok(())
    }

    /// Marks every token as belonging to sequence `sequence_id`.
    fn set_sequence_id(&self, sequence_id: usize) -> PyResult<()> {
        let mut e = self.current()?;
        // HF keeps a map: the id's range is replaced, the others stay.
        e.sequence_ranges.retain(|(s, _)| *s != sequence_id);
        e.sequence_ranges.push((sequence_id, 0..e.len()));
        self.set_edit(e);
        Ok(())
    }

    #[getter]
    fn ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        if let Some(e) = self.edited() {
            return self.ints.list(py, &e.ids);
        }
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
            .map(|i| self.tok.token_str(&enc, i).to_owned())
            .collect())
    }
    #[getter]
    fn offsets(&self) -> PyResult<Vec<(u32, u32)>> {
        Ok(self.enc()?.offsets.clone())
    }
    #[getter]
    fn attention_mask(&self) -> PyResult<Vec<u32>> {
        if !matches!(self.body, Body::Full(_)) && !self.edited.load(Ordering::Acquire) {
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
    /// Deprecated alias of `word_ids` (a DeprecationWarning, as in tokenizers).
    #[getter]
    fn words(&self, py: Python<'_>) -> PyResult<Vec<Option<u32>>> {
        PyErr::warn(
            py,
            &py.get_type::<PyDeprecationWarning>(),
            c"Encoding.words is deprecated, please use Encoding.word_ids instead.",
            1,
        )?;
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
        match self.edited() {
            Some(e) => e.len(),
            None => self.ids_slice().len(),
        }
    }
    fn __repr__(&self) -> String {
        format!(
            "Encoding(num_tokens={}, attributes=[ids, type_ids, tokens, offsets, attention_mask, special_tokens_mask, overflowing])",
            self.__len__()
        )
    }

    /// The token covering char `char_pos` of sequence `sequence_index`.
    #[pyo3(signature = (char_pos, sequence_index = 0))]
    fn char_to_token(&self, char_pos: u32, sequence_index: usize) -> PyResult<Option<usize>> {
        Ok(char_to_token(&*self.enc()?, char_pos, sequence_index))
    }

    /// The word of char `char_pos` of sequence `sequence_index`.
    #[pyo3(signature = (char_pos, sequence_index = 0))]
    fn char_to_word(&self, char_pos: u32, sequence_index: usize) -> PyResult<Option<u32>> {
        let enc = self.enc()?;
        Ok(char_to_token(&enc, char_pos, sequence_index)
            .filter(|&t| token_to_sequence(&enc, t).is_some())
            .and_then(|t| enc.words.get(t).copied())
            .filter(|&w| w != crate::tokenize::encoding::NO_WORD))
    }

    fn token_to_chars(&self, token_index: usize) -> PyResult<Option<(u32, u32)>> {
        let enc = self.enc()?;
        Ok(
            token_to_sequence(&enc, token_index)
                .and_then(|_| enc.offsets.get(token_index).copied()),
        )
    }

    fn token_to_word(&self, token_index: usize) -> PyResult<Option<u32>> {
        let enc = self.enc()?;
        Ok(token_to_sequence(&enc, token_index)
            .and_then(|_| enc.words.get(token_index).copied())
            .filter(|&w| w != crate::tokenize::encoding::NO_WORD))
    }

    fn token_to_sequence(&self, token_index: usize) -> PyResult<Option<usize>> {
        Ok(token_to_sequence(&*self.enc()?, token_index))
    }

    /// The first and one-past-last tokens of word `word_index` in sequence `sequence_index`.
    #[pyo3(signature = (word_index, sequence_index = 0))]
    fn word_to_tokens(
        &self,
        word_index: u32,
        sequence_index: usize,
    ) -> PyResult<Option<(usize, usize)>> {
        Ok(word_to_tokens(&*self.enc()?, word_index, sequence_index))
    }

    #[pyo3(signature = (word_index, sequence_index = 0))]
    fn word_to_chars(
        &self,
        word_index: u32,
        sequence_index: usize,
    ) -> PyResult<Option<(u32, u32)>> {
        let enc = self.enc()?;
        Ok(word_to_tokens(&enc, word_index, sequence_index)
            .filter(|&(_, end)| end > 0)
            .map(|(a, b)| (enc.offsets[a].0, enc.offsets[b - 1].1)))
    }
}
