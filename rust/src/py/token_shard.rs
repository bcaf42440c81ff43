//! `TokenShardWriter`: the tokenize job's Parquet shards (`crate::parquet`). Python keeps the
//! file (temporary name, syncs, rename); each call returns the bytes to append.
use super::buffer::OwnedBuffer;
use crate::parquet::{Codec, IdsEncoding, ShardError, TokenShard};
use pyo3::buffer::{Element, PyBuffer};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

#[pyclass(module = "fastprep._core")]
pub struct TokenShardWriter {
    inner: TokenShard,
}

/// A C-contiguous numpy array (or other buffer) of `T`, read in place.
fn values<'a, T: Element + Copy>(buf: &'a PyBuffer<T>, name: &str) -> PyResult<&'a [T]> {
    if !buf.is_c_contiguous() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a C-contiguous array"
        )));
    }
    // SAFETY: the export holds `item_count` contiguous, aligned `T`s at `buf_ptr` until `buf`
    // drops, which the returned borrow cannot outlive.
    Ok(unsafe { std::slice::from_raw_parts(buf.buf_ptr() as *const T, buf.item_count()) })
}

impl From<ShardError> for PyErr {
    fn from(err: ShardError) -> Self {
        PyValueError::new_err(err.to_string())
    }
}

#[pymethods]
impl TokenShardWriter {
    #[new]
    #[pyo3(signature = (source, codec, ids_encoding, key_value, created_by))]
    fn new(
        source: &str,
        codec: &str,
        ids_encoding: &str,
        key_value: Vec<(String, String)>,
        created_by: String,
    ) -> PyResult<Self> {
        let codec = match codec {
            "none" => Codec::Uncompressed,
            "snappy" => Codec::Snappy,
            other => {
                return Err(PyValueError::new_err(format!(
                    "codec must be 'none' or 'snappy', got {other:?}"
                )))
            }
        };
        let ids = match ids_encoding {
            "plain" => IdsEncoding::Plain,
            "delta" => IdsEncoding::DeltaBinaryPacked,
            other => {
                return Err(PyValueError::new_err(format!(
                    "ids_encoding must be 'plain' or 'delta', got {other:?}"
                )))
            }
        };
        Ok(Self {
            inner: TokenShard::new(codec, ids, source, key_value, created_by),
        })
    }

    /// The file's first bytes.
    fn start<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.start())
    }

    /// One row group: int64 `index`, int32 `window` and `num_tokens` (one per row), uint32 `ids`
    /// (`num_tokens[r]` for row r, in order). Returns the bytes to append.
    fn row_group(
        &mut self,
        py: Python<'_>,
        index: PyBuffer<i64>,
        window: PyBuffer<i32>,
        num_tokens: PyBuffer<i32>,
        ids: PyBuffer<u32>,
    ) -> PyResult<OwnedBuffer> {
        let (index, window) = (values(&index, "index")?, values(&window, "window")?);
        let (num_tokens, ids) = (values(&num_tokens, "num_tokens")?, values(&ids, "ids")?);
        let inner = &mut self.inner;
        let out = py.detach(|| inner.row_group(index, window, num_tokens, ids))?;
        Ok(OwnedBuffer::flat(out)) // ~17 MB per 20 MB of text: no copy into a bytes object
    }

    /// The file's last bytes.
    fn footer<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.footer())
    }
}
