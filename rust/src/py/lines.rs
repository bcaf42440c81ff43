//! The tokenize job's lines: parsed and tokenized in one parallel pass, GIL released.
use super::threads;
use super::tokenize::{ids_of, IdRow, MIN_PARALLEL};
use crate::records::{line_text, LineFormat};
use crate::tokenize::Tokenizer;
use crate::TokenizeError;

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
