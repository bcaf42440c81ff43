//! The tokenize job's lines: parsed and tokenized in one parallel pass, GIL released.
use super::buffer::OwnedBuffer;
use super::threads;
use super::tokenize::{ids_of, IdRow, MIN_PARALLEL};
use crate::records::{line_text, record_spans, LineFormat};
use crate::tokenize::Tokenizer;
use crate::TokenizeError;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The records of a block of whole lines (`records::record_spans`): `(starts, ends, lines)` as
/// little-endian u64 bytes, and the block's line count. `jsonl` picks JSONL's blank lines.
#[pyfunction]
pub fn line_spans(
    py: Python<'_>,
    block: &Bound<'_, PyBytes>,
    jsonl: bool,
) -> (OwnedBuffer, OwnedBuffer, OwnedBuffer, u64) {
    let bytes = block.as_bytes();
    let format = if jsonl {
        LineFormat::Json {
            field: String::new(),
        }
    } else {
        LineFormat::Text
    };
    let spans = py.detach(|| record_spans(bytes, &format));
    let le = |v: Vec<u64>| OwnedBuffer::flat(v.into_iter().flat_map(u64::to_le_bytes).collect());
    (
        le(spans.starts),
        le(spans.ends),
        le(spans.lines),
        spans.line_count,
    )
}

/// The slices of `block` that `starts` and `ends` name, checked.
pub(super) fn spans_of<'a>(
    block: &'a [u8],
    starts: &[u64],
    ends: &[u64],
) -> PyResult<Vec<&'a [u8]>> {
    if starts.len() != ends.len() {
        return Err(PyValueError::new_err("starts and ends differ in length"));
    }
    starts
        .iter()
        .zip(ends)
        .map(|(&s, &e)| {
            let (s, e) = (usize::try_from(s).ok(), usize::try_from(e).ok());
            match (s, e) {
                (Some(s), Some(e)) if s <= e && e <= block.len() => Ok(&block[s..e]),
                _ => Err(PyValueError::new_err(format!(
                    "span {s:?}..{e:?} is outside the block of {} bytes",
                    block.len()
                ))),
            }
        })
        .collect()
}

/// Each line's ids (empty for a line `line_text` leaves to Python) and the indices of those lines.
pub(super) fn lines_ids(
    tok: &Tokenizer,
    lines: &[&[u8]],
    format: &LineFormat,
    add_special_tokens: bool,
    threads_n: usize,
) -> Result<(Vec<IdRow>, Vec<usize>), TokenizeError> {
    use rayon::prelude::*;
    let one = |line: &&[u8]| -> Result<Option<IdRow>, TokenizeError> {
        line_text(line, format)
            .map(|t| ids_of(tok, &t, add_special_tokens, None, false))
            .transpose()
    };
    let rows: Vec<Option<IdRow>> = if threads_n > 1 && lines.len() >= MIN_PARALLEL {
        threads::run(threads_n, || {
            lines.par_iter().map(one).collect::<Result<Vec<_>, _>>()
        })?
    } else {
        lines.iter().map(one).collect::<Result<_, _>>()?
    };
    let left = rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.is_none().then_some(i))
        .collect();
    Ok((
        rows.into_iter().map(Option::unwrap_or_default).collect(),
        left,
    ))
}
