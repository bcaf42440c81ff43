//! `_core.resize_u8`: the binding of the Pillow-exact resize (facade in `fastprep/image.py`).
use crate::error::ImageError;
use crate::image::{resize_u8 as resize, Filter};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyByteArray;

impl From<ImageError> for PyErr {
    fn from(e: ImageError) -> Self {
        PyValueError::new_err(e.to_string())
    }
}

/// Resizes an 8-bit image held in any buffer (a C-contiguous numpy array): returns the new
/// pixels as a bytearray, row-major, `channels` interleaved. The GIL is released while resizing.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn resize_u8<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    height: usize,
    width: usize,
    channels: usize,
    out_width: usize,
    out_height: usize,
    filter: &str,
) -> PyResult<Bound<'py, PyByteArray>> {
    let filter = Filter::parse(filter).ok_or_else(|| {
        PyValueError::new_err(format!(
            "filter must be 'box', 'bilinear', 'hamming', 'bicubic' or 'lanczos', got {filter:?}"
        ))
    })?;
    let buf = PyBuffer::<u8>::get(data)?;
    let src = buf.to_vec(py)?;
    let out = py.detach(|| resize(&src, width, height, channels, out_width, out_height, filter))?;
    Ok(PyByteArray::new(py, &out))
}
