//! `_core.resize_box_*` and `_core.reduce_*`: bindings of Pillow's `resize(box=...,
//! reducing_gap=...)` and `reduce` (facade in `fastprep/image_box.py`). The source is read in
//! place (no copy) with the GIL released.
use super::buffer::OwnedBuffer;
use crate::error::ImageError;
use crate::image::resize_box::{self, FloatBox, PreReduce};
use crate::image::{reduce, Filter, Wide};
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
) -> PyResult<OwnedBuffer> {
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
    Ok(OwnedBuffer::new(out, out_height, out_width, channels))
}

/// The sample type of a double-precision mode: "F" f32, "I" i32, "I;16" u16 (the facade
/// passes I;16L, I;16B and I;16N as I;16, their byte order handled).
fn wide_mode(mode: &str) -> PyResult<&'static str> {
    match mode {
        "F" => Ok("F"),
        "I" => Ok("I"),
        "I;16" => Ok("I;16"),
        _ => Err(PyValueError::new_err(format!(
            "mode must be 'F', 'I' or 'I;16', got {mode:?}"
        ))),
    }
}

/// Runs `f` on the exported samples of `data` with the GIL released; returns the bytes of
/// its result (native order) and its extra value.
fn with_samples<'py, T: Element + Wide, R: Send>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    f: impl FnOnce(&[T]) -> Result<(Vec<T>, R), ImageError> + Send,
) -> PyResult<(Bound<'py, PyByteArray>, R)> {
    let (buf, ptr, len) = source::<T>(data)?;
    let (out, extra) = py.detach(|| {
        // SAFETY: `buf` keeps the export alive and in place until it drops after this
        // closure; the pointer is aligned for T (checked by `source`).
        let src = unsafe { std::slice::from_raw_parts(ptr as *const T, len) };
        f(src)
    })?;
    drop(buf);
    // SAFETY: the sample types have no padding; the bytes of the slice are initialised.
    let bytes = unsafe {
        std::slice::from_raw_parts(out.as_ptr().cast::<u8>(), std::mem::size_of_val(&out[..]))
    };
    Ok((PyByteArray::new(py, bytes), extra))
}

fn no_i16_reduce(mode: &str) -> PyResult<()> {
    if mode == "I;16" {
        return Err(PyValueError::new_err(
            "image has wrong mode: Pillow's reduce does not take I;16 images (nor resize with a \
             reducing_gap that reduces first)",
        ));
    }
    Ok(())
}

/// `resize_box_u8` for the double-precision modes ("F", "I", "I;16": float32, int32 or uint16
/// samples); returns the result's bytes.
#[pyfunction]
#[pyo3(signature = (data, mode, height, width, channels, out_width, out_height, filter, bx, reduce = None))]
#[allow(clippy::too_many_arguments)]
pub fn resize_box_wide<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    mode: &str,
    height: usize,
    width: usize,
    channels: usize,
    out_width: usize,
    out_height: usize,
    filter: &str,
    bx: FloatBox,
    reduce: Option<((usize, usize), Box4)>,
) -> PyResult<Bound<'py, PyByteArray>> {
    fn run<T: Wide>(
        src: &[T],
        size: (usize, usize, usize),
        out: (usize, usize),
        filter: Filter,
        bx: FloatBox,
        pre: Option<PreReduce>,
    ) -> Result<(Vec<T>, ()), ImageError> {
        let (width, height, channels) = size;
        resize_box::resize_box_wide(src, width, height, channels, out, filter, bx, pre)
            .map(|o| (o, ()))
    }
    let filter = parse_filter(filter)?;
    let mode = wide_mode(mode)?;
    if reduce.is_some() && filter != Filter::Nearest {
        no_i16_reduce(mode)?;
    }
    let (size, out, pre) = (
        (width, height, channels),
        (out_width, out_height),
        pre(reduce),
    );
    let bytes = match mode {
        "F" => with_samples(py, data, |s: &[f32]| run(s, size, out, filter, bx, pre))?,
        "I" => with_samples(py, data, |s: &[i32]| run(s, size, out, filter, bx, pre))?,
        _ => with_samples(py, data, |s: &[u16]| run(s, size, out, filter, bx, pre))?,
    };
    Ok(bytes.0)
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
) -> PyResult<OwnedBuffer> {
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
    Ok(OwnedBuffer::new(out, h, w, channels))
}

/// Pillow's `reduce` of a mode "F" or "I" image (float32 or int32 samples, each channel one
/// image); returns `(bytes, width, height)`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn reduce_wide<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    mode: &str,
    height: usize,
    width: usize,
    channels: usize,
    factor: (usize, usize),
    bx: Box4,
) -> PyResult<(Bound<'py, PyByteArray>, usize, usize)> {
    fn run<T: Wide>(
        src: &[T],
        size: (usize, usize, usize),
        factor: (usize, usize),
        bx: [usize; 4],
    ) -> Result<(Vec<T>, (usize, usize)), ImageError> {
        let (width, height, channels) = size;
        reduce::reduce_wide(src, width, height, channels, factor, bx).map(|(o, w, h)| (o, (w, h)))
    }
    let mode = wide_mode(mode)?;
    no_i16_reduce(mode)?;
    let (size, bx) = ((width, height, channels), [bx.0, bx.1, bx.2, bx.3]);
    let (bytes, (w, h)) = if mode == "F" {
        with_samples(py, data, |s: &[f32]| run(s, size, factor, bx))?
    } else {
        with_samples(py, data, |s: &[i32]| run(s, size, factor, bx))?
    };
    Ok((bytes, w, h))
}
