//! `fastprep._core.Tokenizer` and `Encoding`. The Python facade (`fastprep/tokenizer.py`) adds
//! loading from disk and the HF cache, `AddedToken`, argument checks and docs.
use super::buffer::OwnedBuffer;
use super::encoding::{Body, Lazy, LazyBatch, PyEncoding, Settings};
use super::ints::IntCache;
use super::lines::{lines_ids, spans_of};
use super::text::PyText;
use super::threads;
use crate::records::LineFormat;
use crate::tokenize::added::AddedToken;
use crate::tokenize::{
    Direction, EncodeOptions, Input, Offsets, Padding, PaddingStrategy, Tokenizer, Truncation,
    TruncationStrategy,
};
use crate::TokenizeError;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyString, PyTuple};
use std::sync::{Arc, PoisonError, RwLock};

/// Batches smaller than this run on the calling thread: the pool's hand-off costs more.
pub(super) const MIN_PARALLEL: usize = 8;

/// Tokens from which `encode_batch` builds the batch's `ids` lists up front (`IntCache::lists`,
/// whose use counts take a pass over one slot per vocabulary id: too much for a small batch).
const PREBUILT_LISTS_MIN: usize = 1 << 15;

#[pyclass(name = "Tokenizer", module = "fastprep._core", frozen)]
pub struct PyTokenizer {
    /// Copy-on-write: calls take a snapshot, so a concurrent `add_tokens` or `enable_padding`
    /// never disturbs them. One lock for the three parts: a short call took three (six atomic
    /// operations, ~2% of a ~100-byte call).
    state: RwLock<State>,
    ints: Arc<IntCache>,
}

/// The tokenizer and its padding and truncation settings, as one call sees them.
struct State {
    core: Arc<Tokenizer>,
    /// Arc'd so that a call's snapshot is a reference count, not a copy of the pad token.
    padding: Option<Arc<Padding>>,
    truncation: Option<Arc<Truncation>>,
}

/// One input of encode/encode_batch, converted to owned Rust data before the GIL is released.
enum Owned {
    Text(PyText),
    Words(Vec<String>),
}

impl Owned {
    fn as_input(&self) -> Input<'_> {
        match self {
            Self::Text(s) => Input::Text(s.as_str()),
            Self::Words(w) => Input::Words(w),
        }
    }

    /// `what` names the argument in errors (only formatted when one is raised). The messages
    /// start as tokenizers' do (its tests match them).
    fn extract(
        obj: &Bound<'_, PyAny>,
        pretokenized: bool,
        what: &dyn std::fmt::Display,
    ) -> PyResult<Self> {
        if pretokenized {
            return pretokenized_words(obj)?.map(Self::Words).ok_or_else(|| {
                PyTypeError::new_err(format!(
                    "PreTokenizedInputSequence must be Union[List[str], Tuple[str]] ({what} is {} \
                     while is_pretokenized=True: pass a list of words)",
                    type_name(obj)
                ))
            });
        }
        let text = obj.cast::<PyString>().map(PyText::new);
        text.map_err(|_| {
            PyTypeError::new_err(format!(
                "TextInputSequence must be str ({what} is {}; for pre-split words pass \
                 is_pretokenized=True)",
                type_name(obj)
            ))
        })?
        .map(Self::Text)
        // A str that is not text holds lone surrogates (e.g. from surrogateescape).
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "{what} holds lone surrogates, which are not text; encode it with \
                 errors='replace' (or fix its source) first"
            ))
        })
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".into(), |n| n.to_string())
}

/// The words of a pre-tokenized sequence as tokenizers accepts one (a list or tuple of str, or a
/// 1-D numpy array of str or of objects that are str), or None when `obj` is none of these.
fn pretokenized_words(obj: &Bound<'_, PyAny>) -> PyResult<Option<Vec<String>>> {
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        return Ok(obj.extract::<Vec<String>>().ok());
    }
    if obj.is_instance_of::<PyString>() || !obj.hasattr("dtype")? || !obj.hasattr("tobytes")? {
        return Ok(None);
    }
    // A numpy array.
    let dtype = obj.getattr("dtype")?;
    let kind: String = dtype.getattr("kind")?.extract()?;
    let ndim: usize = obj.getattr("ndim")?.extract()?;
    if ndim != 1 {
        return Ok(None);
    }
    match kind.as_str() {
        "U" => {
            let flags = obj.getattr("flags")?;
            let contiguous = flags.getattr("c_contiguous")?.is_truthy()?
                || flags.getattr("f_contiguous")?.is_truthy()?;
            if !contiguous {
                return Ok(None);
            }
            // tokenizers reads a `<U` array's buffer, UCS-4 code units padded with NULs to the
            // item size, as UTF-8 (bindings/python/src/tokenizer.rs, `PyArrayUnicode`): an ASCII
            // word "ab" in a `<U3` array becomes "a\0\0\0b\0\0\0\0\0\0\0", which shifts offsets,
            // and an array with a char in 0x80..=0xFF is refused. fastprep matches it (the words
            // and so the offsets are the same); a list of str has none of this.
            let size: usize = dtype.getattr("itemsize")?.extract()?;
            let raw = obj.call_method0("tobytes")?;
            let raw = raw.cast::<PyBytes>()?.as_bytes();
            if size == 0 {
                return Ok(Some(vec![String::new(); obj.len()?]));
            }
            Ok(raw
                .chunks(size)
                .map(|c| std::str::from_utf8(c).map(str::to_owned))
                .collect::<Result<Vec<_>, _>>()
                .ok())
        }
        "O" => Ok(obj.extract::<Vec<String>>().ok()),
        _ => Ok(None),
    }
}

fn direction(s: &str, what: &str) -> PyResult<Direction> {
    match s {
        "right" => Ok(Direction::Right),
        "left" => Ok(Direction::Left),
        _ => Err(PyValueError::new_err(format!(
            "{what} must be 'left' or 'right', got {s:?}"
        ))),
    }
}

fn dir_name(d: Direction) -> &'static str {
    match d {
        Direction::Left => "left",
        Direction::Right => "right",
    }
}

impl PyTokenizer {
    fn snapshot(
        &self,
    ) -> (
        Arc<Tokenizer>,
        Option<Arc<Padding>>,
        Option<Arc<Truncation>>,
    ) {
        let s = self.state.read().unwrap_or_else(PoisonError::into_inner);
        (s.core.clone(), s.padding.clone(), s.truncation.clone())
    }

    /// The tokenizer as it is now.
    fn core(&self) -> Arc<Tokenizer> {
        let s = self.state.read().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(&s.core)
    }

    /// Changes the state under its lock.
    fn update<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut self.state.write().unwrap_or_else(PoisonError::into_inner))
    }

    /// Ids (and offsets) of each text for the array outputs: truncated to `max_length` per call
    /// (the tokenizer's own truncation and padding settings do not apply), GIL released.
    fn array_rows(
        &self,
        py: Python<'_>,
        texts: &[PyText],
        add_special_tokens: bool,
        max_length: Option<usize>,
        return_offsets: bool,
        num_threads: Option<usize>,
    ) -> PyResult<Vec<IdRow>> {
        let (tok, _, truncation) = self.snapshot();
        let trunc = max_length.map(|m| Truncation {
            max_length: m,
            stride: 0,
            strategy: TruncationStrategy::LongestFirst,
            direction: truncation
                .as_ref()
                .map_or(Direction::Right, |t| t.direction),
        });
        let n = threads::resolve(num_threads);
        Ok(py.detach(|| {
            ids_batch(
                &tok,
                texts,
                add_special_tokens,
                trunc.as_ref(),
                return_offsets,
                n,
            )
        })?)
    }

    fn new_from(tok: Tokenizer) -> Self {
        let padding = tok.padding.clone();
        let truncation = tok.truncation.clone();
        // Room for ids of tokens added later too; ids past the end are made on the fly.
        let ints = Arc::new(IntCache::new(tok.vocab_size(true) + 1024));
        Self {
            state: RwLock::new(State {
                core: Arc::new(tok),
                padding: padding.map(Arc::new),
                truncation: truncation.map(Arc::new),
            }),
            ints,
        }
    }
}

#[pymethods]
impl PyTokenizer {
    #[staticmethod]
    fn from_str(py: Python<'_>, json: &str) -> PyResult<Self> {
        let json = json.to_owned();
        Ok(Self::new_from(py.detach(move || {
            loaded(Tokenizer::from_json_str(&json), json)
        })?))
    }

    /// A tokenizer from the bytes of a SentencePiece `.model` file.
    #[staticmethod]
    fn from_sentencepiece(py: Python<'_>, model: &[u8]) -> PyResult<Self> {
        let model = model.to_owned();
        Ok(Self::new_from(py.detach(move || {
            loaded(Tokenizer::from_sentencepiece(&model), model)
        })?))
    }

    /// A tokenizer from the text of a `.tiktoken` file; `pattern` None means cl100k's.
    #[staticmethod]
    #[pyo3(signature = (text, pattern = None, special_tokens = Vec::new()))]
    fn from_tiktoken(
        py: Python<'_>,
        text: &str,
        pattern: Option<&str>,
        special_tokens: Vec<(String, u32)>,
    ) -> PyResult<Self> {
        let pattern = pattern
            .unwrap_or(crate::tokenize::tiktoken::CL100K_PATTERN)
            .to_owned();
        let text = text.to_owned();
        Ok(Self::new_from(py.detach(move || {
            loaded(
                Tokenizer::from_tiktoken(&text, &pattern, &special_tokens),
                text,
            )
        })?))
    }

    /// A tokenizer from the text of a Mistral Tekken file (`tekken_*.json`).
    #[staticmethod]
    fn from_tekken(py: Python<'_>, text: &str) -> PyResult<Self> {
        let text = text.to_owned();
        Ok(Self::new_from(py.detach(move || {
            loaded(Tokenizer::from_tekken(&text), text)
        })?))
    }

    /// The encode loop and each pre-tokenizer with the engine that runs it.
    fn describe(&self) -> (&'static str, Vec<(String, String)>) {
        let tok = self.core();
        (tok.encode_path(), tok.describe_pre_tokenizers())
    }

    #[pyo3(signature = (pretty = false))]
    fn to_str(&self, pretty: bool) -> String {
        let (tok, padding, truncation) = self.snapshot();
        tok.to_json(pretty, truncation.as_deref(), padding.as_deref())
    }

    #[pyo3(signature = (sequence, pair = None, is_pretokenized = false, add_special_tokens = true, *, offsets = true, lazy = true))]
    // Python keyword arguments, mirrored one to one.
    #[allow(clippy::too_many_arguments, clippy::fn_params_excessive_bools)]
    fn encode(
        &self,
        py: Python<'_>,
        sequence: &Bound<'_, PyAny>,
        pair: Option<&Bound<'_, PyAny>>,
        is_pretokenized: bool,
        add_special_tokens: bool,
        offsets: bool,
        lazy: bool,
    ) -> PyResult<PyEncoding> {
        let (tok, padding, truncation) = self.snapshot();
        let offsets = if offsets {
            Offsets::Char
        } else {
            Offsets::None
        };
        // A single text with no padding: the lean ids path, on the str's own UTF-8 (no copy),
        // the rest built if asked for (see `encoding::Lazy`). A str that is not valid text
        // (lone surrogates) goes on to the general path, which explains the error.
        if let (true, false, None, None) = (lazy, is_pretokenized, pair, &padding) {
            if let Ok(s) = sequence.cast::<PyString>() {
                if let Ok(text) = s.to_str() {
                    // A long text is cut into parts encoded on the pool (see
                    // `tokenize::long_text`); a short one stays on this thread.
                    let threads_n = if tok.parallel_text(text.len()) {
                        threads::resolve(None)
                    } else {
                        1
                    };
                    let ids = py.detach(|| {
                        let t = truncation.as_deref();
                        if threads_n > 1 {
                            threads::run(threads_n, || {
                                tok.encode_ids_parallel(text, add_special_tokens, t)
                            })
                        } else {
                            tok.encode_ids(text, add_special_tokens, t)
                        }
                    })?;
                    if let Some(ids) = ids {
                        let settings = Settings {
                            add_special_tokens,
                            offsets,
                            truncation,
                        };
                        let lazy = Lazy::new(ids, s.clone().unbind(), settings);
                        return Ok(PyEncoding::new(
                            Body::Lazy(lazy),
                            tok,
                            Arc::clone(&self.ints),
                        ));
                    }
                }
            }
        }
        let a = Owned::extract(sequence, is_pretokenized, &"sequence")?;
        let b = pair
            .map(|p| Owned::extract(p, is_pretokenized, &"pair"))
            .transpose()?;
        let opts = EncodeOptions {
            add_special_tokens,
            offsets,
            truncation: truncation.as_deref(),
            padding: padding.as_deref(),
        };
        let enc = py.detach(|| {
            tok.encode(
                &a.as_input(),
                b.as_ref().map(Owned::as_input).as_ref(),
                &opts,
            )
        })?;
        Ok(PyEncoding::new(
            Body::Full(enc),
            tok,
            Arc::clone(&self.ints),
        ))
    }

    #[pyo3(signature = (inputs, is_pretokenized = false, add_special_tokens = true, num_threads = None, offsets = true, lazy = true))]
    // Python keyword arguments, mirrored one to one.
    #[allow(clippy::too_many_arguments, clippy::fn_params_excessive_bools)]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'_, PyAny>,
        is_pretokenized: bool,
        add_special_tokens: bool,
        num_threads: Option<usize>,
        offsets: bool,
        lazy: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let owned = extract_batch(inputs, is_pretokenized)?;
        let (tok, padding, truncation) = self.snapshot();
        let n = threads::resolve(num_threads);
        let offsets = if offsets {
            Offsets::Char
        } else {
            Offsets::None
        };
        // Single texts, no padding: ids through the lean path, the rest built (for the whole
        // batch at once) if asked for; see `encoding::LazyBatch`.
        if lazy
            && padding.is_none()
            && owned
                .iter()
                .all(|(a, b)| b.is_none() && matches!(a, Owned::Text(_)))
        {
            let texts: Vec<PyText> = owned
                .into_iter()
                .map(|(a, _)| match a {
                    Owned::Text(t) => t,
                    Owned::Words(_) => unreachable!("checked above"),
                })
                .collect();
            let ids = py.detach(|| {
                ids_batch(
                    &tok,
                    &texts,
                    add_special_tokens,
                    truncation.as_deref(),
                    false,
                    n,
                )
            })?;
            let settings = Settings {
                add_special_tokens,
                offsets,
                truncation,
            };
            let batch = Arc::new(LazyBatch::new(texts, settings, n));
            // The `ids` lists that nearly every caller reads next, built now for a large batch,
            // all at once (see `IntCache::fill`): made empty, handed to their Encodings, and
            // filled once every Python object of the call is made.
            let total: usize = ids.iter().map(|r| r.0.len()).sum();
            let lists = if total >= PREBUILT_LISTS_MIN {
                IntCache::empty_lists(py, ids.iter().map(|r| r.0.len()))?
            } else {
                Vec::new()
            };
            // Where each row's ids are: a Vec's buffer stays where it is when the Vec moves
            // into its Encoding's body below, and nothing changes it while `out` holds them.
            let rows: Vec<(*const u32, usize)> =
                ids.iter().map(|r| (r.0.as_ptr(), r.0.len())).collect();
            let mut prebuilt = lists.iter();
            let encodings = ids
                .into_iter()
                .enumerate()
                .map(|(index, (ids, _))| {
                    let body = Body::Batch {
                        ids,
                        batch: Arc::clone(&batch),
                        index,
                    };
                    let (tok, ints) = (Arc::clone(&tok), Arc::clone(&self.ints));
                    let enc = match prebuilt.next() {
                        Some(list) => {
                            PyEncoding::with_ids_list(body, tok, ints, list.clone_ref(py))
                        }
                        None => PyEncoding::new(body, tok, ints),
                    };
                    Py::new(py, enc)
                })
                .collect::<PyResult<Vec<_>>>()?;
            let out = PyList::new(py, encodings)?;
            if !lists.is_empty() {
                // SAFETY: each pointer and length is a row's ids, kept alive and unchanged by
                // its Encoding in `out` (see `rows`).
                let rows: Vec<&[u32]> = rows
                    .iter()
                    .map(|&(p, n)| unsafe { std::slice::from_raw_parts(p, n) })
                    .collect();
                self.ints.fill(py, &lists, &rows, n);
            }
            return Ok(out);
        }
        let opts = EncodeOptions {
            add_special_tokens,
            offsets,
            truncation: truncation.as_deref(),
            padding: padding.as_deref(),
        };
        let encs = py.detach(|| {
            let inputs: Vec<_> = owned
                .iter()
                .map(|(a, b)| (a.as_input(), b.as_ref().map(Owned::as_input)))
                .collect();
            if n > 1 && inputs.len() >= MIN_PARALLEL {
                threads::run(n, || tok.encode_batch(&inputs, &opts, true))
            } else {
                tok.encode_batch(&inputs, &opts, false)
            }
        })?;
        PyList::new(
            py,
            encs.into_iter().map(|enc| {
                PyEncoding::new(Body::Full(enc), Arc::clone(&tok), Arc::clone(&self.ints))
            }),
        )
    }

    /// Ids of many texts as flat arrays: (ids as little-endian u32 bytes, lengths as u64
    /// bytes, offsets as u32 pairs bytes or None). No per-token Python objects.
    #[pyo3(signature = (texts, add_special_tokens = true, max_length = None, return_offsets = false, num_threads = None))]
    fn encode_batch_flat<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'_, PyAny>,
        add_special_tokens: bool,
        max_length: Option<usize>,
        return_offsets: bool,
        num_threads: Option<usize>,
    ) -> PyResult<(OwnedBuffer, OwnedBuffer, Option<Bound<'py, PyBytes>>)> {
        let texts = texts_of(texts, "encode_batch_arrays")?;
        let rows = self.array_rows(
            py,
            &texts,
            add_special_tokens,
            max_length,
            return_offsets,
            num_threads,
        )?;
        let (ids, lens) = flat_ids(py, &rows);
        let offs = if return_offsets {
            let n: usize = rows.iter().map(|r| r.1.len()).sum();
            Some(PyBytes::new_with(py, n * 8, |buf| {
                let values = rows.iter().flat_map(|r| &r.1);
                for (dst, &(a, b)) in buf.chunks_exact_mut(8).zip(values) {
                    dst[..4].copy_from_slice(&a.to_le_bytes());
                    dst[4..].copy_from_slice(&b.to_le_bytes());
                }
                Ok(())
            })?)
        } else {
            None
        };
        Ok((ids, lens, offs))
    }

    /// The number of tokens of each text (ids only: no offsets, no flat copy of the ids).
    #[pyo3(signature = (texts, add_special_tokens = false, num_threads = None))]
    fn count_tokens(
        &self,
        py: Python<'_>,
        texts: &Bound<'_, PyAny>,
        add_special_tokens: bool,
        num_threads: Option<usize>,
    ) -> PyResult<Vec<usize>> {
        let texts = texts_of(texts, "count_tokens")?;
        let rows = self.array_rows(py, &texts, add_special_tokens, None, false, num_threads)?;
        Ok(rows.iter().map(|r| r.0.len()).collect())
    }

    /// Ids of the records of a block of a JSONL (`field` given) or text file (`line_spans`
    /// found them: `starts`, `ends`), read from the block's bytes with no Python str made
    /// (`records::line_text`): `(ids u32 bytes, lengths u64 bytes, indices of the records left
    /// to Python)`, those having no ids. No truncation: the jobs window.
    #[pyo3(signature = (block, starts, ends, field = None, add_special_tokens = false, num_threads = None))]
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    fn encode_lines_flat(
        &self,
        py: Python<'_>,
        block: &Bound<'_, PyBytes>,
        starts: PyBuffer<u64>,
        ends: PyBuffer<u64>,
        field: Option<String>,
        add_special_tokens: bool,
        num_threads: Option<usize>,
    ) -> PyResult<(OwnedBuffer, OwnedBuffer, Vec<usize>)> {
        let format = field.map_or(LineFormat::Text, |field| LineFormat::Json { field });
        // Copies (8 bytes a record): the caller's arrays may change while the GIL is released.
        let (starts, ends) = (starts.to_vec(py)?, ends.to_vec(py)?);
        let bytes = block.as_bytes(); // immutable, held by the caller for the whole call
        let views = spans_of(bytes, &starts, &ends)?;
        let tok = self.core();
        let n = threads::resolve(num_threads);
        let (rows, left) = py.detach(|| lines_ids(&tok, &views, &format, add_special_tokens, n))?;
        let (ids, lens) = flat_ids(py, &rows);
        Ok((ids, lens, left))
    }

    /// A padded batch written straight into bytearrays: `(input_ids, attention_mask, offsets or
    /// None, rows, width)`, each little-endian int64, row-major (offsets: (rows, width, 2)).
    /// `width` is `max_length` when given with `fixed`, else the longest row; either is rounded
    /// up to `pad_to_multiple_of`.
    #[pyo3(signature = (texts, add_special_tokens, max_length, fixed, pad_to_multiple_of, pad_id, left, return_offsets, num_threads))]
    #[allow(
        clippy::too_many_arguments,
        clippy::type_complexity,
        clippy::fn_params_excessive_bools
    )]
    fn encode_batch_padded<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'_, PyAny>,
        add_special_tokens: bool,
        max_length: Option<usize>,
        fixed: bool,
        pad_to_multiple_of: Option<usize>,
        pad_id: i64,
        left: bool,
        return_offsets: bool,
        num_threads: Option<usize>,
    ) -> PyResult<(
        Bound<'py, PyByteArray>,
        Bound<'py, PyByteArray>,
        Option<Bound<'py, PyByteArray>>,
        usize,
        usize,
    )> {
        let texts = texts_of(texts, "encode_batch_arrays")?;
        let encs = self.array_rows(
            py,
            &texts,
            add_special_tokens,
            max_length,
            return_offsets,
            num_threads,
        )?;
        let longest = encs.iter().map(|e| e.0.len()).max().unwrap_or(0);
        let mut width = if fixed {
            max_length.unwrap_or(longest).max(longest)
        } else {
            longest
        };
        if let Some(m) = pad_to_multiple_of.filter(|&m| m > 0) {
            width = width.div_ceil(m) * m;
        }
        let rows = encs.len();
        let row_start = |e: &(Vec<u32>, Vec<(u32, u32)>)| if left { width - e.0.len() } else { 0 };
        let ids = PyByteArray::new_with(py, rows * width * 8, |buf| {
            for (r, e) in encs.iter().enumerate() {
                let row = &mut buf[r * width * 8..(r + 1) * width * 8];
                for chunk in row.chunks_exact_mut(8) {
                    chunk.copy_from_slice(&pad_id.to_le_bytes());
                }
                let s = row_start(e);
                for (i, &id) in e.0.iter().enumerate() {
                    row[(s + i) * 8..(s + i + 1) * 8].copy_from_slice(&i64::from(id).to_le_bytes());
                }
            }
            Ok(())
        })?;
        let mask = PyByteArray::new_with(py, rows * width * 8, |buf| {
            buf.fill(0);
            for (r, e) in encs.iter().enumerate() {
                let s = row_start(e);
                for i in 0..e.0.len() {
                    buf[(r * width + s + i) * 8] = 1;
                }
            }
            Ok(())
        })?;
        let offsets = if return_offsets {
            Some(PyByteArray::new_with(py, rows * width * 16, |buf| {
                buf.fill(0);
                for (r, e) in encs.iter().enumerate() {
                    let s = row_start(e);
                    for (i, &(a, b)) in e.1.iter().enumerate() {
                        let at = (r * width + s + i) * 16;
                        buf[at..at + 8].copy_from_slice(&i64::from(a).to_le_bytes());
                        buf[at + 8..at + 16].copy_from_slice(&i64::from(b).to_le_bytes());
                    }
                }
                Ok(())
            })?)
        } else {
            None
        };
        Ok((ids, mask, offsets, rows, width))
    }

    /// Truncates, post-processes and pads `encoding` (and `pair`) with this tokenizer's
    /// settings, as `tokenizers.Tokenizer.post_process`.
    #[pyo3(signature = (encoding, pair = None, add_special_tokens = true))]
    fn post_process(
        &self,
        py: Python<'_>,
        encoding: PyRef<'_, PyEncoding>,
        pair: Option<PyRef<'_, PyEncoding>>,
        add_special_tokens: bool,
    ) -> PyResult<PyEncoding> {
        let (tok, padding, truncation) = self.snapshot();
        let a = encoding.resolved()?;
        let b = pair.map(|p| p.resolved()).transpose()?;
        let opts = EncodeOptions {
            add_special_tokens,
            offsets: Offsets::Char,
            truncation: truncation.as_deref(),
            padding: padding.as_deref(),
        };
        let out = py.detach(|| tok.post_process(a, b, &opts))?;
        Ok(PyEncoding::standalone(out))
    }

    #[pyo3(signature = (ids, skip_special_tokens = true))]
    fn decode(&self, py: Python<'_>, ids: Vec<u32>, skip_special_tokens: bool) -> String {
        let tok = self.core();
        py.detach(|| tok.decode(&ids, skip_special_tokens))
    }

    #[pyo3(signature = (sequences, skip_special_tokens = true))]
    fn decode_batch(
        &self,
        py: Python<'_>,
        sequences: Vec<Vec<u32>>,
        skip_special_tokens: bool,
    ) -> Vec<String> {
        let tok = self.core();
        py.detach(|| {
            sequences
                .iter()
                .map(|ids| tok.decode(ids, skip_special_tokens))
                .collect()
        })
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.core().token_to_id(token)
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        self.core().id_to_token(id).map(str::to_owned)
    }

    #[pyo3(signature = (with_added_tokens = true))]
    fn get_vocab<'py>(
        &self,
        py: Python<'py>,
        with_added_tokens: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let tok = self.core();
        let d = PyDict::new(py);
        for (t, id) in tok.model.vocab() {
            d.set_item(t, id)?;
        }
        if with_added_tokens {
            for t in &tok.added.tokens {
                d.set_item(&t.content, t.id)?;
            }
        }
        Ok(d)
    }

    #[pyo3(signature = (with_added_tokens = true))]
    fn get_vocab_size(&self, with_added_tokens: bool) -> usize {
        self.core().vocab_size(with_added_tokens)
    }

    fn num_special_tokens_to_add(&self, is_pair: bool) -> usize {
        self.core().num_special_tokens_to_add(is_pair)
    }

    /// Adds tokens given as (content, single_word, lstrip, rstrip, normalized, special) tuples.
    fn add_tokens(&self, tokens: Vec<(String, bool, bool, bool, bool, bool)>) -> usize {
        self.update(|state| {
            let mut tok = (*state.core).clone();
            let n = tok.add_tokens(
                tokens
                    .into_iter()
                    .map(
                        |(content, single_word, lstrip, rstrip, normalized, special)| AddedToken {
                            id: 0,
                            content,
                            single_word,
                            lstrip,
                            rstrip,
                            normalized,
                            special,
                        },
                    )
                    .collect(),
            );
            state.core = Arc::new(tok);
            n
        })
    }

    /// Added tokens as (id, content, single_word, lstrip, rstrip, normalized, special).
    fn added_tokens(&self) -> Vec<(u32, String, bool, bool, bool, bool, bool)> {
        self.core()
            .added
            .tokens
            .iter()
            .map(|t| {
                (
                    t.id,
                    t.content.clone(),
                    t.single_word,
                    t.lstrip,
                    t.rstrip,
                    t.normalized,
                    t.special,
                )
            })
            .collect()
    }

    #[pyo3(signature = (direction = "right", pad_id = 0, pad_type_id = 0, pad_token = "[PAD]", length = None, pad_to_multiple_of = None))]
    fn enable_padding(
        &self,
        direction: &str,
        pad_id: u32,
        pad_type_id: u32,
        pad_token: &str,
        length: Option<usize>,
        pad_to_multiple_of: Option<usize>,
    ) -> PyResult<()> {
        let padding = Some(Arc::new(Padding {
            strategy: length.map_or(PaddingStrategy::BatchLongest, PaddingStrategy::Fixed),
            direction: self::direction(direction, "direction")?,
            pad_to_multiple_of,
            pad_id,
            pad_type_id,
            pad_token: pad_token.to_owned(),
        }));
        self.update(|state| state.padding = padding);
        Ok(())
    }

    fn no_padding(&self) {
        self.update(|state| state.padding = None);
    }

    #[getter]
    fn padding<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(p) = self.snapshot().1 else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item(
            "length",
            match p.strategy {
                PaddingStrategy::Fixed(n) => Some(n),
                PaddingStrategy::BatchLongest => None,
            },
        )?;
        d.set_item("pad_to_multiple_of", p.pad_to_multiple_of)?;
        d.set_item("pad_id", p.pad_id)?;
        d.set_item("pad_token", &p.pad_token)?;
        d.set_item("pad_type_id", p.pad_type_id)?;
        d.set_item("direction", dir_name(p.direction))?;
        Ok(Some(d))
    }

    #[pyo3(signature = (max_length, stride = 0, strategy = "longest_first", direction = "right"))]
    fn enable_truncation(
        &self,
        max_length: usize,
        stride: usize,
        strategy: &str,
        direction: &str,
    ) -> PyResult<()> {
        let strategy = match strategy {
            "longest_first" => TruncationStrategy::LongestFirst,
            "only_first" => TruncationStrategy::OnlyFirst,
            "only_second" => TruncationStrategy::OnlySecond,
            other => {
                return Err(PyValueError::new_err(format!(
                    "strategy must be 'longest_first', 'only_first' or 'only_second', got {other:?}"
                )))
            }
        };
        // Checked here, as HF does, so that a bad setting fails when it is made.
        let n_added = self.core().num_special_tokens_to_add(false);
        // HF subtracts with wrap-around: a max_length below the special tokens disables the check.
        let effective = max_length.wrapping_sub(n_added);
        if effective < stride {
            return Err(PyValueError::new_err(format!(
                "tokenizer stride set to {stride}, which is greater than or equal to its effective max length of \
                 {effective} (= {max_length} original max length - {n_added} added special tokens), "
            )));
        }
        let truncation = Some(Arc::new(Truncation {
            max_length,
            stride,
            strategy,
            direction: self::direction(direction, "direction")?,
        }));
        self.update(|state| state.truncation = truncation);
        Ok(())
    }

    /// HF's `encode_special_tokens`: when true, special tokens in the input are not cut out.
    #[getter]
    fn encode_special_tokens(&self) -> bool {
        self.core().added.encode_special_tokens
    }

    #[setter]
    fn set_encode_special_tokens(&self, value: bool) {
        self.update(|state| {
            let mut tok = (*state.core).clone();
            tok.added.encode_special_tokens = value;
            state.core = Arc::new(tok);
        });
    }

    fn no_truncation(&self) {
        self.update(|state| state.truncation = None);
    }

    #[getter]
    fn truncation<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(t) = self.snapshot().2 else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("max_length", t.max_length)?;
        d.set_item("stride", t.stride)?;
        d.set_item(
            "strategy",
            match t.strategy {
                TruncationStrategy::LongestFirst => "longest_first",
                TruncationStrategy::OnlyFirst => "only_first",
                TruncationStrategy::OnlySecond => "only_second",
            },
        )?;
        d.set_item("direction", dir_name(t.direction))?;
        Ok(Some(d))
    }
}

/// Ids (and, when `offsets`, char offsets) of each text, for the array outputs.
fn ids_batch<T: AsRef<str> + Sync>(
    tok: &Tokenizer,
    texts: &[T],
    add_special_tokens: bool,
    truncation: Option<&Truncation>,
    offsets: bool,
    threads_n: usize,
) -> Result<Vec<IdRow>, TokenizeError> {
    use rayon::prelude::*;
    let one = |t: &T| ids_of(tok, t.as_ref(), add_special_tokens, truncation, offsets);
    if threads_n > 1 && texts.len() >= MIN_PARALLEL {
        threads::run(threads_n, || texts.par_iter().map(one).collect())
    } else {
        texts.iter().map(one).collect()
    }
}

/// One text's ids and char offsets (empty unless `offsets`).
pub(super) type IdRow = (Vec<u32>, Vec<(u32, u32)>);

/// The ids of one text; without offsets the lean `encode_ids` path runs (no `Encoding` built).
pub(super) fn ids_of(
    tok: &Tokenizer,
    t: &str,
    add_special_tokens: bool,
    truncation: Option<&Truncation>,
    offsets: bool,
) -> Result<IdRow, TokenizeError> {
    if !offsets {
        if let Some(ids) = tok.encode_ids(t, add_special_tokens, truncation)? {
            return Ok((ids, Vec::new()));
        }
    }
    let opts = EncodeOptions {
        add_special_tokens,
        offsets: if offsets {
            Offsets::Char
        } else {
            Offsets::None
        },
        truncation,
        padding: None,
    };
    let e = tok.encode(&Input::Text(t), None, &opts)?;
    Ok((e.ids, e.offsets))
}

/// Rows' ids as one little-endian u32 bytes object and their lengths as u64 bytes, written
/// straight into the bytes objects (one pass, no staging Vec). Row by row: a loop over one
/// row's slice compiles to vector moves, where one iterator over all rows' ids (`flat_map`)
/// went an id at a time (2.5x the time, with the GIL held, for the tokenize job's 30 MB of ids
/// per 20 MB of text).
pub(super) fn flat_ids(py: Python<'_>, rows: &[IdRow]) -> (OwnedBuffer, OwnedBuffer) {
    // Off the GIL, and handed to Python with no second copy: a job's reading and writing
    // threads run Python while a batch's ids (30 MB per 20 MB of text) are gathered.
    py.detach(|| {
        let total: usize = rows.iter().map(|r| r.0.len()).sum();
        let mut ids = Vec::with_capacity(total);
        for (row, _) in rows {
            ids.extend_from_slice(row);
        }
        let lens = rows
            .iter()
            .flat_map(|r| (r.0.len() as u64).to_le_bytes())
            .collect();
        (OwnedBuffer::flat_words(ids), OwnedBuffer::flat(lens))
    })
}

/// A load's result, after dropping its input and handing the heap the load freed back to the
/// system. Reading a vocabulary builds JSON trees and tables that it then drops (cl100k ~12 MB,
/// o200k ~55 MB, Tekken more); glibc keeps such memory in its arenas, where it stays in the RSS
/// of every process that loaded a tokenizer (16 DataLoader workers: most of a GB).
/// `malloc_trim` returns it (a few ms).
fn loaded<T, I>(result: T, input: I) -> T {
    drop(input);
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; no pointer the program holds is affected.
    unsafe {
        libc::malloc_trim(0);
    }
    result
}

/// "input {i}" in a batch's errors, formatted only when one is raised (a `format!` per item
/// was an allocation per text of every batch).
struct InputIndex(usize);

impl std::fmt::Display for InputIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "input {}", self.0)
    }
}

/// The texts of a list of str, read in place (see `PyText`); `call` names the method in errors.
fn texts_of(texts: &Bound<'_, PyAny>, call: &str) -> PyResult<Vec<PyText>> {
    if texts.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{call}() takes a list of str; for one text call encode()"
        )));
    }
    let mut out = Vec::with_capacity(texts.len().unwrap_or(0));
    for (i, item) in texts.try_iter()?.enumerate() {
        let item = item?;
        let s = item.cast::<PyString>().map_err(|_| {
            PyTypeError::new_err(format!(
                "{call}() takes a list of str; item {i} is {}",
                item.get_type()
                    .name()
                    .map_or_else(|_| "not a str".to_owned(), |n| n.to_string())
            ))
        })?;
        out.push(PyText::new(s)?);
    }
    Ok(out)
}

/// The inputs of `encode_batch`, read as tokenizers reads them (`TextEncodeInput`,
/// `PreTokenizedEncodeInput`): a text is a str, a pair any 2-item sequence of str (a tuple, a
/// list, a numpy row); a pre-tokenized sequence is a list, tuple or 1-D numpy array of str (so a
/// tuple of two str is one sequence of two words), a pre-tokenized pair a 2-item sequence of those.
fn extract_batch(
    inputs: &Bound<'_, PyAny>,
    pretokenized: bool,
) -> PyResult<Vec<(Owned, Option<Owned>)>> {
    if inputs.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(
            "encode_batch() takes a list of inputs; for one text call encode()",
        ));
    }
    let mut out = Vec::with_capacity(inputs.len().unwrap_or(0));
    for (i, item) in inputs.try_iter()?.enumerate() {
        let item = item?;
        let what = InputIndex(i);
        if pretokenized {
            if let Some(words) = pretokenized_words(&item)? {
                out.push((Owned::Words(words), None));
                continue;
            }
        } else if let Ok(s) = item.cast::<PyString>() {
            out.push((Owned::Text(text_of(s, &what)?), None));
            continue;
        }
        let two = if item.is_instance_of::<PyString>() {
            None
        } else if let Ok(t) = item.cast::<PyTuple>() {
            (t.len() == 2).then(|| (t.get_item(0), t.get_item(1)))
        } else if let Ok(l) = item.cast::<PyList>() {
            (l.len() == 2).then(|| (l.get_item(0), l.get_item(1)))
        } else if item.hasattr("__len__")? && item.hasattr("__getitem__")? {
            (item.len()? == 2).then(|| (item.get_item(0), item.get_item(1)))
        } else {
            None
        };
        let Some((a, b)) = two else {
            return Err(PyTypeError::new_err(if pretokenized {
                format!(
                    "PreTokenizedEncodeInput must be Union[PreTokenizedInputSequence, \
                     Tuple[PreTokenizedInputSequence, PreTokenizedInputSequence]] ({what} is {})",
                    type_name(&item)
                )
            } else {
                format!(
                    "TextEncodeInput must be Union[TextInputSequence, Tuple[InputSequence, \
                     InputSequence]] ({what} is {})",
                    type_name(&item)
                )
            }));
        };
        out.push((
            Owned::extract(&a?, pretokenized, &what)?,
            Some(Owned::extract(&b?, pretokenized, &what)?),
        ));
    }
    Ok(out)
}

fn text_of(s: &Bound<'_, PyString>, what: &dyn std::fmt::Display) -> PyResult<PyText> {
    PyText::new(s).map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} holds lone surrogates, which are not text; encode it with \
             errors='replace' (or fix its source) first"
        ))
    })
}

impl From<TokenizeError> for PyErr {
    fn from(e: TokenizeError) -> Self {
        let msg = e.to_string();
        match e {
            TokenizeError::Unsupported { .. } => {
                super::errors::UnsupportedTokenizerError::new_err(msg)
            }
            TokenizeError::Invalid { .. } => super::errors::TokenizerFileError::new_err(msg),
            TokenizeError::Io(_) => pyo3::exceptions::PyOSError::new_err(msg),
            TokenizeError::Encode(_) => super::errors::TokenizeError::new_err(msg),
        }
    }
}
