//! `_core.resize_box_*` and `_core.reduce_*`: bindings of Pillow's `resize(box=...,
//! reducing_gap=...)` and `reduce` (facade in `fastprep/image_box.py`). The source is read in
//! place (no copy) with the GIL released.
use super::buffer::PixelBuffer;
use crate::image::resize_box::{self, FloatBox, PreReduce};
use crate::image::{reduce, Filter};
use pyo3::buffer::{Element, PyBuffer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyByteArray;

type Box4 = (usize, usize, usize, usize);

fn parse_filter(name: &str) -> PyResult<Filter> {
    Filter::parse(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "filter must be 'nearest', 'box', 'bilinear', 'hamming', 'bicubic' or 'lanczos', got {name:?}"
        ))
    })
}

/// The exported, C-contiguous, aligned buffer of `data` as `(address, items)`.
fn source<T: Element>(data: &Bound<'_, PyAny>) -> PyResult<(PyBuffer<T>, usize, usize)> {
    let buf = PyBuffer::<T>::get(data)?;
    let ptr = buf.buf_ptr() as usize;
    if !buf.is_c_contiguous() || ptr % std::mem::align_of::<T>() != 0 {
        return Err(PyValueError::new_err(
            "the image must be an aligned C-contiguous array",
        ));
    }
    let n = buf.item_count();
    Ok((buf, ptr, n))
}

fn pre(reduce: Option<((usize, usize), Box4)>) -> Option<PreReduce> {
    reduce.map(|(factor, (a, b, c, d))| PreReduce {
        factor,
        bx: [a, b, c, d],
    })
}

fn f32_bytes<'py>(py: Python<'py>, v: &[f32]) -> Bound<'py, PyByteArray> {
    // SAFETY: f32 has no padding; the bytes of the slice are initialised.
    let bytes =
        unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) };
    PyByteArray::new(py, bytes)
}

/// Resizes the `bx` region (floats) of an 8-bit image, optionally after a `reduce`
/// (`((fx, fy), int box)`); `premultiply` resizes 4 channels as Pillow's RGBA.
#[pyfunction]
#[pyo3(signature = (data, height, width, channels, out_width, out_height, filter, bx, premultiply, reduce = None))]
#[allow(clippy::too_many_arguments)]
pub fn resize_box_u8(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    height: usize,
    width: usize,
    channels: usize,
    out_width: usize,
    out_height: usize,
    filter: &str,
    bx: FloatBox,
    premultiply: bool,
    reduce: Option<((usize, usize), Box4)>,
) -> PyResult<PixelBuffer> {
    let filter = parse_filter(filter)?;
    let (buf, ptr, len) = source::<u8>(data)?;
    let out = py.detach(|| {
        // SAFETY: `buf` keeps the export alive and in place until it drops after this closure.
        let src = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
        resize_box::resize_box_u8(
            src,
            width,
            height,
            channels,
            (out_width, out_height),
            filter,
            bx,
            premultiply,
            pre(reduce),
        )
    })?;
    drop(buf);
    Ok(PixelBuffer::new(out, out_height, out_width, channels))
}

/// `resize_box_u8` for float32 images; returns the result's bytes.
#[pyfunction]
#[pyo3(signature = (data, height, width, channels, out_width, out_height, filter, bx, reduce = None))]
#[allow(clippy::too_many_arguments)]
pub fn resize_box_f32<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    height: usize,
    width: usize,
    channels: usize,
    out_width: usize,
    out_height: usize,
    filter: &str,
    bx: FloatBox,
    reduce: Option<((usize, usize), Box4)>,
) -> PyResult<Bound<'py, PyByteArray>> {
    let filter = parse_filter(filter)?;
    let (buf, ptr, len) = source::<f32>(data)?;
    let out = py.detach(|| {
        // SAFETY: as in `resize_box_u8`; the pointer is aligned for f32 (checked).
        let src = unsafe { std::slice::from_raw_parts(ptr as *const f32, len) };
        resize_box::resize_box_f32(
            src,
            width,
            height,
            channels,
            (out_width, out_height),
            filter,
            bx,
            pre(reduce),
        )
    })?;
    drop(buf);
    Ok(f32_bytes(py, &out))
}

/// Pillow's `reduce` of an 8-bit image by `factor` over `bx`; `premultiply` reduces 4 channels
/// as Pillow's RGBA (through RGBa).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn reduce_u8(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    height: usize,
    width: usize,
    channels: usize,
    factor: (usize, usize),
    bx: Box4,
    premultiply: bool,
) -> PyResult<PixelBuffer> {
    let (buf, ptr, len) = source::<u8>(data)?;
    let (out, w, h) = py.detach(|| {
        // SAFETY: as in `resize_box_u8`.
        let src = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
        resize_box::reduce_u8_alpha(
            src,
            width,
            height,
            channels,
            factor,
            [bx.0, bx.1, bx.2, bx.3],
            premultiply,
        )
    })?;
    drop(buf);
    Ok(PixelBuffer::new(out, h, w, channels))
}

/// Pillow's `reduce` of a float32 image (each channel a mode "F" image); returns
/// `(bytes, width, height)`.
#[pyfunction]
pub fn reduce_f32<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    height: usize,
    width: usize,
    channels: usize,
    factor: (usize, usize),
    bx: Box4,
) -> PyResult<(Bound<'py, PyByteArray>, usize, usize)> {
    let (buf, ptr, len) = source::<f32>(data)?;
    let (out, w, h) = py.detach(|| {
        // SAFETY: as in `resize_box_f32`.
        let src = unsafe { std::slice::from_raw_parts(ptr as *const f32, len) };
        reduce::reduce_f32(
            src,
            width,
            height,
            channels,
            factor,
            [bx.0, bx.1, bx.2, bx.3],
        )
    })?;
    drop(buf);
    Ok((f32_bytes(py, &out), w, h))
}
