//! `_core.resize_u8`: the binding of the Pillow-exact resize (facade in `fastprep/image.py`).
use super::buffer::OwnedBuffer;
use super::encoded::Encoded;
use super::threads;
use crate::error::{DecodeError as CoreDecodeError, ImageError};
use crate::image::jpeg_coeffs;
use crate::image::pipeline::{process_one, DType, Layout, Processed, Resize, Spec, Tables};
use crate::image::resize_box::FloatBox;
use crate::image::{
    decode, resize_box_u8, resize_region_into, resize_window_u8_alpha, DecodeOptions, Filter,
    Image, Mode, Window, DEFAULT_MAX_PIXELS,
};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

impl From<ImageError> for PyErr {
    fn from(e: ImageError) -> Self {
        match e {
            // As Pillow: a resize whose buffers cannot be allocated raises MemoryError.
            ImageError::NoMemory(m) => PyMemoryError::new_err(m),
            e => PyValueError::new_err(e.to_string()),
        }
    }
}

fn parse_filter(name: &str) -> PyResult<Filter> {
    Filter::parse(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "filter must be 'nearest', 'box', 'bilinear', 'hamming', 'bicubic' or 'lanczos', got {name:?}"
        ))
    })
}

/// Resizes a float32 image (any C-contiguous float32 buffer) to a new list of floats' bytes;
/// the GIL is released.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn resize_f32<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    height: usize,
    width: usize,
    channels: usize,
    out_width: usize,
    out_height: usize,
    filter: &str,
) -> PyResult<Bound<'py, pyo3::types::PyByteArray>> {
    let filter = parse_filter(filter)?;
    let buf = PyBuffer::<f32>::get(data)?;
    if !buf.is_c_contiguous() {
        return Err(PyValueError::new_err("resize needs a C-contiguous array"));
    }
    let src = buf.to_vec(py)?;
    let out = py.detach(|| {
        crate::image::resize_f32(&src, width, height, channels, out_width, out_height, filter)
    })?;
    // One copy into Python memory; float results are rarely on the hot path of a pipeline.
    let bytes: Vec<u8> = out.iter().flat_map(|v| v.to_ne_bytes()).collect();
    Ok(pyo3::types::PyByteArray::new(py, &bytes))
}

/// Resizes a batch of uint8 images (each a C-contiguous (h, w, channels) buffer, sizes may
/// differ) into `out`, a writable buffer of len(images) * out_h * out_w * channels bytes, in
/// parallel with the GIL released. `boxes` (one per image, None for the whole image) resizes
/// a region of each, as `resize(box=...)`.
#[pyfunction]
#[pyo3(signature = (images, shapes, out, out_width, out_height, filter, num_threads = None, boxes = None))]
#[allow(clippy::too_many_arguments)]
pub fn resize_batch_u8(
    py: Python<'_>,
    images: Vec<Bound<'_, PyAny>>,
    shapes: Vec<(usize, usize, usize)>,
    out: &Bound<'_, PyAny>,
    out_width: usize,
    out_height: usize,
    filter: &str,
    num_threads: Option<usize>,
    boxes: Option<Vec<Option<FloatBox>>>,
) -> PyResult<()> {
    let filter = parse_filter(filter)?;
    if boxes.as_ref().is_some_and(|b| b.len() != images.len()) {
        return Err(PyValueError::new_err(
            "boxes must hold one box (or None) per image",
        ));
    }
    let bufs: Vec<PyBuffer<u8>> = images
        .iter()
        .map(PyBuffer::<u8>::get)
        .collect::<PyResult<_>>()?;
    let channels = shapes.first().map_or(3, |s| s.2);
    let per = out_width * out_height * channels;
    let dst = PyBuffer::<u8>::get(out)?;
    if dst.readonly() || !dst.is_c_contiguous() || dst.item_count() < per * bufs.len() {
        return Err(PyValueError::new_err(
            "out must be a writable buffer for the whole batch",
        ));
    }
    let mut srcs = Vec::with_capacity(bufs.len());
    for (i, (b, &(h, w, c))) in bufs.iter().zip(&shapes).enumerate() {
        if !b.is_c_contiguous() || b.item_count() != h * w * c || c != channels {
            return Err(PyValueError::new_err(format!(
                "every image must be a C-contiguous ({h}, {w}, {channels}) uint8 array"
            )));
        }
        let bx = boxes.as_ref().and_then(|b| b[i]);
        srcs.push((b.buf_ptr() as usize, h, w, bx));
    }
    let dst_ptr = dst.buf_ptr() as usize;
    let n = srcs.len();
    let threads = threads::resolve(num_threads).min(n.max(1));
    let results: Vec<Result<(), ImageError>> = py.detach(|| {
        // SAFETY: the PyBuffers (`bufs`, `dst`) keep every source and the destination exported
        // and in place until they drop after this closure; slots of `per` bytes are disjoint.
        let all = unsafe { std::slice::from_raw_parts_mut(dst_ptr as *mut u8, per * n) };
        let cost = |&(_, h, w, _): &(usize, usize, usize, Option<FloatBox>)| h * w;
        threads::map_slots(threads, &srcs, all, per, cost, |&(ptr, h, w, bx), slot| {
            // SAFETY: see above; each source holds h * w * channels bytes (checked).
            let src = unsafe { std::slice::from_raw_parts(ptr as *const u8, h * w * channels) };
            if let Some(bx) = bx {
                let out = (out_width, out_height);
                let premultiply = channels == 4;
                let o = resize_box_u8(src, w, h, channels, out, filter, bx, premultiply, None)?;
                slot.copy_from_slice(&o);
                return Ok(());
            }
            let whole = Window {
                x: 0,
                y: 0,
                width: w,
                height: h,
            };
            let win = Window {
                x: 0,
                y: 0,
                width: out_width,
                height: out_height,
            };
            // Straight into the batch's slot: no result allocation or copy.
            resize_region_into(
                src, whole, w, h, channels, out_width, out_height, filter, win, slot,
            )
        })
    });
    drop(bufs);
    drop(dst);
    results.into_iter().collect::<Result<(), _>>()?;
    Ok(())
}

/// Resizes an 8-bit image held in any C-contiguous buffer (a numpy array) to an `OwnedBuffer`;
/// `window` = (x, y, width, height) computes only that part of the result; `premultiply`
/// (default: 4 channels) resizes 4 channels as Pillow's RGBA, else each channel on its own
/// (RGBX, CMYK). The GIL is released.
#[pyfunction]
#[pyo3(signature = (data, height, width, channels, out_width, out_height, filter, window = None, premultiply = None))]
#[allow(clippy::too_many_arguments)]
pub fn resize_u8(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    height: usize,
    width: usize,
    channels: usize,
    out_width: usize,
    out_height: usize,
    filter: &str,
    window: Option<(usize, usize, usize, usize)>,
    premultiply: Option<bool>,
) -> PyResult<OwnedBuffer> {
    let premultiply = premultiply.unwrap_or(channels == 4);
    let filter = parse_filter(filter)?;
    let buf = PyBuffer::<u8>::get(data)?;
    if !buf.is_c_contiguous() {
        return Err(PyValueError::new_err("resize needs a C-contiguous array"));
    }
    let win = window.map_or(
        Window {
            x: 0,
            y: 0,
            width: out_width,
            height: out_height,
        },
        |(x, y, w, h)| Window {
            x,
            y,
            width: w,
            height: h,
        },
    );
    let (ptr, len) = (buf.buf_ptr() as usize, buf.item_count());
    let out = py.detach(|| {
        // SAFETY: `buf` holds the export (the memory stays valid and in place) until it drops
        // after this closure; it is C-contiguous with `len` bytes.
        let src = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
        resize_window_u8_alpha(
            src,
            width,
            height,
            channels,
            out_width,
            out_height,
            filter,
            win,
            premultiply,
        )
    })?;
    drop(buf);
    Ok(OwnedBuffer::new(out, win.height, win.width, channels))
}

pyo3::import_exception!(fastprep.errors, DecodeError);

/// The Python `DecodeError` for one image (`index` None for a single decode).
pub fn decode_error(e: &CoreDecodeError, index: Option<usize>) -> PyErr {
    DecodeError::new_err((e.to_string(), index, e.reason()))
}

fn options(
    mode: &str,
    apply_exif_orientation: bool,
    max_pixels: Option<u64>,
    scale_denom: u32,
) -> PyResult<DecodeOptions> {
    let mode = Mode::parse(mode).ok_or_else(|| {
        PyValueError::new_err(format!(
            "mode must be 'RGB', 'L', 'RGBA' or 'unchanged', got {mode:?}"
        ))
    })?;
    if !matches!(scale_denom, 1 | 2 | 4 | 8) {
        return Err(PyValueError::new_err(format!(
            "scale_denom must be 1, 2, 4 or 8 (libjpeg's DCT scaling), got {scale_denom}"
        )));
    }
    Ok(DecodeOptions {
        mode,
        apply_exif_orientation,
        max_pixels,
        scale_denom,
    })
}

fn to_buffer(img: Image) -> OwnedBuffer {
    OwnedBuffer::new(img.pixels, img.height, img.width, img.channels)
}

/// `(index, width, height)` of an image of a batch over `DEFAULT_MAX_PIXELS` (Pillow's
/// `MAX_IMAGE_PIXELS`) and within its limit: the facade warns for the call's own such images.
pub type OverLimit = (usize, usize, usize);

/// Decodes one JPEG or PNG (bytes) to an `OwnedBuffer`, with whether the image is over
/// `DEFAULT_MAX_PIXELS` (the facade's warning); the GIL is released while decoding.
#[pyfunction]
#[pyo3(signature = (data, mode = "RGB", apply_exif_orientation = true, max_pixels = Some(DEFAULT_MAX_PIXELS), scale_denom = 1))]
pub fn decode_image(
    py: Python<'_>,
    data: &[u8],
    mode: &str,
    apply_exif_orientation: bool,
    max_pixels: Option<u64>,
    scale_denom: u32,
) -> PyResult<(OwnedBuffer, bool)> {
    let opts = options(mode, apply_exif_orientation, max_pixels, scale_denom)?;
    py.detach(|| decode(data, &opts))
        .map(|img| {
            let over = img.over_default_max_pixels;
            (to_buffer(img), over)
        })
        .map_err(|e| decode_error(&e, None))
}

/// Decodes a list of bytes on fastprep's thread pool. Each item is an `OwnedBuffer`, or for an
/// image that failed, a `(reason, message)` tuple; the facade raises or skips. With them, the
/// images over `DEFAULT_MAX_PIXELS`, in index order.
#[pyfunction]
#[pyo3(signature = (items, mode = "RGB", apply_exif_orientation = true, max_pixels = Some(DEFAULT_MAX_PIXELS), num_threads = None))]
pub fn decode_images<'py>(
    py: Python<'py>,
    items: Vec<Bound<'py, PyAny>>,
    mode: &str,
    apply_exif_orientation: bool,
    max_pixels: Option<u64>,
    num_threads: Option<usize>,
) -> PyResult<(Vec<Bound<'py, PyAny>>, Vec<OverLimit>)> {
    let opts = options(mode, apply_exif_orientation, max_pixels, 1)?;
    let items = Encoded::all(&items)?;
    let slices: Vec<&[u8]> = items.iter().map(Encoded::as_slice).collect();
    let threads = threads::resolve(num_threads).min(slices.len().max(1));
    let results: Vec<Result<Image, CoreDecodeError>> =
        py.detach(|| threads::map(threads, &slices, |d| decode(d, &opts)));
    let mut over = Vec::new();
    let items = results
        .into_iter()
        .enumerate()
        .map(|(i, r)| match r {
            Ok(img) => {
                if img.over_default_max_pixels {
                    over.push((i, img.width, img.height));
                }
                Ok(Bound::new(py, to_buffer(img))?.into_any())
            }
            Err(e) => Ok((e.reason(), e.to_string()).into_pyobject(py)?.into_any()),
        })
        .collect::<PyResult<_>>()?;
    Ok((items, over))
}

/// What `fastprep.ImagePipeline` passes for its settings: a dict with these keys.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct SpecArgs {
    shorter: Option<usize>,
    size: Option<(usize, usize)>,
    crop: Option<(usize, usize)>,
    filter: String,
    mean: [f32; 3],
    std: [f32; 3],
    layout: String,
    dtype: String,
    draft: bool,
    max_pixels: Option<u64>,
    apply_exif_orientation: bool,
}

fn spec(a: &SpecArgs) -> PyResult<Spec> {
    let resize = match (a.shorter, a.size) {
        (Some(s), None) if s > 0 => Resize::Shorter(s),
        (None, Some((w, h))) if w > 0 && h > 0 => Resize::Exact(w, h),
        _ => {
            return Err(PyValueError::new_err(
                "give exactly one of resize_shorter (a positive int) and size (width, height)",
            ))
        }
    };
    let bad = |what: &str, v: &str| PyValueError::new_err(format!("{what} {v:?} is not supported"));
    let spec = Spec {
        resize,
        crop: a.crop,
        filter: Filter::parse(&a.filter).ok_or_else(|| bad("filter", &a.filter))?,
        mean: a.mean,
        std: a.std,
        layout: match a.layout.as_str() {
            "NCHW" => Layout::Nchw,
            "NHWC" => Layout::Nhwc,
            v => return Err(bad("layout", v)),
        },
        dtype: match a.dtype.as_str() {
            "float32" => DType::F32,
            "float16" => DType::F16,
            "uint8" => DType::U8,
            v => return Err(bad("dtype", v)),
        },
        draft: a.draft,
        max_pixels: a.max_pixels,
        apply_exif_orientation: a.apply_exif_orientation,
    };
    spec.out_size().map_err(PyValueError::new_err)?;
    Ok(spec)
}

type StageTuple = (u64, u64, u64);

/// Decodes, resizes, crops and normalizes each encoded image into its slot of `out` (a writable
/// buffer, e.g. a pool Block), in parallel with the GIL released. Returns, per image, None or the
/// `(reason, message)` of its failure (its slot is zeroed), and the nanoseconds of each stage;
/// and the images over `DEFAULT_MAX_PIXELS` (`OverLimit`), in index order.
#[pyfunction]
#[pyo3(signature = (items, out, settings, num_threads = None))]
pub fn preprocess_into(
    py: Python<'_>,
    items: Vec<Bound<'_, PyAny>>,
    out: &Bound<'_, PyAny>,
    settings: SpecArgs,
    num_threads: Option<usize>,
) -> PyResult<(
    Vec<Option<(&'static str, String)>>,
    Vec<StageTuple>,
    Vec<OverLimit>,
)> {
    let spec = spec(&settings)?;
    let per = spec.image_bytes().map_err(PyValueError::new_err)?;
    let buf = PyBuffer::<u8>::get(out)?;
    if buf.readonly() || !buf.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "out must be a writable C-contiguous buffer",
        ));
    }
    let need = per * items.len();
    if buf.item_count() < need {
        return Err(PyValueError::new_err(format!(
            "out holds {} bytes; {} images need {need}",
            buf.item_count(),
            items.len()
        )));
    }
    let items = Encoded::all(&items)?;
    let slices: Vec<&[u8]> = items.iter().map(Encoded::as_slice).collect();
    let ptr = buf.buf_ptr() as usize;
    let threads = threads::resolve(num_threads).min(slices.len().max(1));
    let tables = Tables::new(spec.mean, spec.std);
    let results: Vec<Result<Processed, CoreDecodeError>> = py.detach(|| {
        // SAFETY: `buf` keeps the exported, writable, C-contiguous memory of at least `need`
        // bytes alive and in place until it drops after this closure; each image gets a
        // disjoint `per`-byte slot.
        let all = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, need) };
        let cost = |data: &&[u8]| decode::cost_estimate(data);
        threads::map_slots(threads, &slices, all, per, cost, |data, slot| {
            let r = process_one(data, &spec, &tables, slot);
            if r.is_err() {
                slot.fill(0);
            }
            r
        })
    });
    drop(buf);
    let mut errors = Vec::with_capacity(results.len());
    let mut times = Vec::with_capacity(results.len());
    let mut over = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok(Processed {
                times: t,
                over_default_max_pixels,
            }) => {
                errors.push(None);
                times.push((t.decode, t.resize, t.normalize));
                if let Some((w, h)) = over_default_max_pixels {
                    over.push((i, w, h));
                }
            }
            Err(e) => {
                errors.push(Some((e.reason(), e.to_string())));
                times.push((0, 0, 0));
            }
        }
    }
    Ok((errors, times, over))
}

/// The tables of one resize axis for the GPU kernels: `(ksize, bounds, weights)` as bytes
/// (int32 pairs; int32 fixed-point weights, or float64 with `fixed=False`).
#[pyfunction]
#[pyo3(signature = (in_size, out_size, filter, fixed = true, antialias = true))]
pub fn resize_tables<'py>(
    py: Python<'py>,
    in_size: usize,
    out_size: usize,
    filter: &str,
    fixed: bool,
    antialias: bool,
) -> PyResult<(usize, Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    if in_size == 0 || out_size == 0 {
        return Err(PyValueError::new_err("sizes must be positive"));
    }
    let t = crate::image::resize::axis_tables(in_size, out_size, parse_filter(filter)?, antialias)
        .map_err(|e| PyMemoryError::new_err(format!("resize tables: {e}")))?;
    let bounds: Vec<u8> = t
        .bounds
        .iter()
        .flat_map(|&(a, n)| a.to_ne_bytes().into_iter().chain(n.to_ne_bytes()))
        .collect();
    let weights: Vec<u8> = if fixed {
        t.fixed.iter().flat_map(|v| v.to_ne_bytes()).collect()
    } else {
        t.float.iter().flat_map(|v| v.to_ne_bytes()).collect()
    };
    Ok((
        t.ksize,
        PyBytes::new(py, &bounds),
        PyBytes::new(py, &weights),
    ))
}

/// The normalization table of the pipeline (`(v / 255 - mean[c]) / std[c]` for every byte `v`
/// and channel `c`, float32 or float16 bits), as bytes: what the GPU normalize kernel looks up.
#[pyfunction]
pub fn normalize_table<'py>(
    py: Python<'py>,
    mean: [f32; 3],
    std: [f32; 3],
    dtype: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let t = Tables::new(mean, std);
    let bytes = match dtype {
        "float32" => t.f32_bytes(),
        "float16" => t.f16_bytes(),
        v => {
            return Err(PyValueError::new_err(format!(
                "dtype must be float32 or float16, got {v:?}"
            )))
        }
    };
    Ok(PyBytes::new(py, &bytes))
}

/// Which Pillow's resize pass order to follow: 12 (12.2 to 12.x) or 13 (13.0 and later);
/// `None` only reads it.
#[pyfunction]
#[pyo3(signature = (major = None))]
pub fn pillow_order(major: Option<u32>) -> PyResult<u32> {
    if let Some(m) = major {
        crate::image::resize::set_pillow_order(m)?;
    }
    Ok(crate::image::resize::pillow_order())
}

/// Whether a resize of `width` x `height` to `out_width` x `out_height` runs its vertical pass
/// first under the Pillow order in force (the GPU launch plan asks here).
#[pyfunction]
pub fn resize_vertical_first(
    width: usize,
    height: usize,
    out_width: usize,
    out_height: usize,
) -> bool {
    out_width != width && crate::image::resize::vertical_first(width, height, out_width, out_height)
}

fn jpeg_layout_dict<'py>(
    py: Python<'py>,
    layout: &jpeg_coeffs::Layout,
    orientation: u32,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("width", layout.width)?;
    d.set_item("height", layout.height)?;
    d.set_item(
        "color_space",
        match layout.color_space {
            jpeg_coeffs::ColorSpace::Gray => "gray",
            jpeg_coeffs::ColorSpace::YCbCr => "ycbcr",
            jpeg_coeffs::ColorSpace::Other => "other",
        },
    )?;
    d.set_item("max_h", layout.max_h)?;
    d.set_item("max_v", layout.max_v)?;
    d.set_item("orientation", orientation)?;
    d.set_item("block_smoothing", layout.block_smoothing)?;
    d.set_item("over_default_max_pixels", layout.over_default_max_pixels)?;
    let comps = layout
        .components
        .iter()
        .map(|c| {
            let quant: Vec<u8> = c.quant.iter().flat_map(|v| v.to_ne_bytes()).collect();
            (
                c.id,
                c.h,
                c.v,
                c.width_in_blocks,
                c.height_in_blocks,
                PyBytes::new(py, &quant),
            )
        })
        .collect::<Vec<_>>();
    d.set_item("components", comps)?;
    Ok(d)
}

/// The layout of each JPEG for the GPU decoder: a dict (width, height, color_space "gray" /
/// "ycbcr" / "other", max_h, max_v, EXIF orientation, components as (id, h, v, width_in_blocks,
/// height_in_blocks, quantization table as 64 native uint16 bytes in natural order)), or for a
/// file that cannot be read, a `(reason, message)` tuple. Parallel, GIL released.
#[pyfunction]
#[pyo3(signature = (items, max_pixels = Some(DEFAULT_MAX_PIXELS), apply_exif_orientation = true, num_threads = None))]
pub fn jpeg_layouts<'py>(
    py: Python<'py>,
    items: Vec<Bound<'py, PyBytes>>,
    max_pixels: Option<u64>,
    apply_exif_orientation: bool,
    num_threads: Option<usize>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let slices: Vec<&[u8]> = items.iter().map(PyBytesMethods::as_bytes).collect();
    let threads = threads::resolve(num_threads).min(slices.len().max(1));
    let results = py.detach(|| {
        threads::map(threads, &slices, |d| {
            if !d.starts_with(&[0xFF, 0xD8, 0xFF]) {
                return Err(CoreDecodeError::Unsupported(
                    "JPEG",
                    "not a JPEG file".into(),
                ));
            }
            let layout = jpeg_coeffs::read_layout(d, max_pixels)?;
            let o = if apply_exif_orientation {
                crate::image::decode::orientation(d, crate::image::decode::Format::Jpeg)
            } else {
                1
            };
            Ok((layout, o))
        })
    });
    results
        .into_iter()
        .map(|r| match r {
            Ok((layout, o)) => Ok(jpeg_layout_dict(py, &layout, o)?.into_any()),
            Err(e) => Ok((e.reason(), e.to_string()).into_pyobject(py)?.into_any()),
        })
        .collect()
}

/// Entropy-decodes each JPEG into `out` (a writable C-contiguous buffer, e.g. a pinned pool
/// Block) at its byte offset: every component's quantized coefficients as int16, component after
/// component, blocks row-major, 64 per block in natural order (`jpeg_layouts` gives the sizes).
/// Parallel, GIL released. Returns, per image, None or the `(reason, message)` of its failure.
#[pyfunction]
#[pyo3(signature = (items, offsets, out, num_threads = None))]
pub fn jpeg_coefficients_into(
    py: Python<'_>,
    items: Vec<Bound<'_, PyBytes>>,
    offsets: Vec<usize>,
    out: &Bound<'_, PyAny>,
    num_threads: Option<usize>,
) -> PyResult<Vec<Option<(&'static str, String)>>> {
    if offsets.len() != items.len() {
        return Err(PyValueError::new_err(format!(
            "{} offsets for {} images",
            offsets.len(),
            items.len()
        )));
    }
    let buf = PyBuffer::<u8>::get(out)?;
    if buf.readonly() || !buf.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "out must be a writable C-contiguous buffer",
        ));
    }
    let base = buf.buf_ptr() as usize;
    let total = buf.item_count();
    if base % 2 != 0 || offsets.iter().any(|o| o % 2 != 0) {
        return Err(PyValueError::new_err(
            "out and every offset must be 2-byte aligned (int16 coefficients)",
        ));
    }
    let slices: Vec<&[u8]> = items.iter().map(PyBytesMethods::as_bytes).collect();
    let threads = threads::resolve(num_threads).min(slices.len().max(1));
    let jobs: Vec<(&[u8], usize)> = slices
        .iter()
        .copied()
        .zip(offsets.iter().copied())
        .collect();
    // Each image's region is [offset, offset + its size); sizes come from the layouts, so the
    // bounds and the disjointness are checked once those are known.
    let layouts: Vec<Result<jpeg_coeffs::Layout, CoreDecodeError>> =
        py.detach(|| threads::map(threads, &slices, |d| jpeg_coeffs::read_layout(d, None)));
    let mut regions: Vec<(usize, usize)> = jobs
        .iter()
        .zip(&layouts)
        .filter_map(|((_, off), l)| {
            l.as_ref()
                .ok()
                .map(|l| (*off, off + 2 * l.coefficient_count()))
        })
        .collect();
    regions.sort_unstable();
    if regions.iter().any(|&(_, end)| end > total) || regions.windows(2).any(|w| w[0].1 > w[1].0) {
        return Err(PyValueError::new_err(
            "the images' coefficient regions must fit in out without overlapping",
        ));
    }
    let work: Vec<(&[u8], usize, Option<&jpeg_coeffs::Layout>)> = jobs
        .iter()
        .zip(&layouts)
        .map(|(&(d, off), l)| (d, off, l.as_ref().ok()))
        .collect();
    let results: Vec<Result<(), CoreDecodeError>> = py.detach(|| {
        threads::map(threads, &work, |&(d, off, layout)| {
            let Some(layout) = layout else {
                return jpeg_coeffs::read_layout(d, None).map(|_| ());
            };
            let n = layout.coefficient_count();
            // SAFETY: `buf` keeps the writable memory alive and in place until it drops after
            // this closure; the regions were checked to lie inside it, 2-byte aligned and
            // pairwise disjoint, so each thread writes its own.
            let dst = unsafe { std::slice::from_raw_parts_mut((base + off) as *mut i16, n) };
            jpeg_coeffs::read_coefficients(d, layout, dst)
        })
    });
    drop(buf);
    Ok(results
        .into_iter()
        .map(|r| r.err().map(|e| (e.reason(), e.to_string())))
        .collect())
}
