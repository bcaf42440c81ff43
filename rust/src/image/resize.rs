//! Resize bit-exact with Pillow's `Image.resize` (libImaging/Resample.c) for 8-bit images.
//!
//! Our own code rather than a resize crate: bit-exactness needs Pillow's exact arithmetic. Its
//! filter weights are computed in f64 per output pixel, normalized, then rounded to 22-bit fixed
//! point (`PRECISION_BITS = 32 - 8 - 2`); each pass accumulates in i32 from a half-unit bias and
//! clips. The horizontal pass runs first, over only the rows the vertical pass will read, unless
//! Pillow's rule for the pass order says vertical first (`vertical_first`).
use super::alloc::{self, AllocError};
use super::resize_kernels as kernels;
use super::resize_passes::{convolve, Job, Origin};
use crate::error::ImageError;
use std::sync::atomic::{AtomicU32, Ordering};

/// The Pillow major version whose pass order resizes follow (12 or 13; see `vertical_first`).
static PILLOW_ORDER: AtomicU32 = AtomicU32::new(13);

/// Follow Pillow `major`'s choice of pass order: 12 (12.2 to 12.x) or 13 (13.0 and later).
pub fn set_pillow_order(major: u32) -> Result<(), ImageError> {
    if !matches!(major, 12 | 13) {
        return Err(ImageError::Unsupported(format!(
            "fastprep follows the resize of Pillow 12 (12.2 and later) or 13, not {major}"
        )));
    }
    PILLOW_ORDER.store(major, Ordering::Relaxed);
    Ok(())
}

pub fn pillow_order() -> u32 {
    PILLOW_ORDER.load(Ordering::Relaxed)
}

/// Whether Pillow resizes `width` x `height` -> `out_width` x `out_height` vertically first: the
/// order changes the bytes, since the intermediate image is rounded to 8 bits. Pillow 12.2-12.x
/// (Image.resize): images more than 100 times taller than wide that shrink vertically. Pillow 13
/// (libImaging/Resample.c, python-pillow/Pillow#9549): whenever the height shrinks by more than
/// twice as many pixels as the width does (measured against 13.0.0 at the boundary: `>`).
pub fn vertical_first(width: usize, height: usize, out_width: usize, out_height: usize) -> bool {
    if out_height >= height {
        return false;
    }
    if pillow_order() == 12 {
        return height > width * 100;
    }
    let shrink_h = (height - out_height) as i128;
    let shrink_w = width as i128 - out_width as i128;
    shrink_h > 2 * shrink_w
}

pub(super) const PRECISION_BITS: u32 = 32 - 8 - 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// Pillow's NEAREST: not a convolution but an affine nearest-pixel lookup (see `nearest`).
    Nearest,
    Box,
    Bilinear,
    Hamming,
    Bicubic,
    Lanczos,
}

impl Filter {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "nearest" => Self::Nearest,
            "box" => Self::Box,
            "bilinear" => Self::Bilinear,
            "hamming" => Self::Hamming,
            "bicubic" => Self::Bicubic,
            "lanczos" => Self::Lanczos,
            _ => return None,
        })
    }

    fn support(self) -> f64 {
        match self {
            Self::Nearest | Self::Box => 0.5,
            Self::Bilinear | Self::Hamming => 1.0,
            Self::Bicubic => 2.0,
            Self::Lanczos => 3.0,
        }
    }

    fn weight(self, x: f64) -> f64 {
        match self {
            Self::Nearest | Self::Box => {
                if x > -0.5 && x <= 0.5 {
                    1.0
                } else {
                    0.0
                }
            }
            Self::Bilinear => {
                let x = x.abs();
                if x < 1.0 {
                    1.0 - x
                } else {
                    0.0
                }
            }
            Self::Hamming => {
                let x = x.abs();
                if x == 0.0 {
                    1.0
                } else if x >= 1.0 {
                    0.0
                } else {
                    let x = x * std::f64::consts::PI;
                    // Pillow writes the constants as C floats (0.54f), promoted to double.
                    x.sin() / x * (f64::from(0.54f32) + f64::from(0.46f32) * x.cos())
                }
            }
            Self::Bicubic => {
                let a = -0.5;
                let x = x.abs();
                if x < 1.0 {
                    ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
                } else if x < 2.0 {
                    (((x - 5.0) * x + 8.0) * x - 4.0) * a
                } else {
                    0.0
                }
            }
            Self::Lanczos => {
                if (-3.0..3.0).contains(&x) {
                    sinc(x) * sinc(x / 3.0)
                } else {
                    0.0
                }
            }
        }
    }
}

fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let x = x * std::f64::consts::PI;
        x.sin() / x
    }
}

/// Fixed-point weights of one pass: for output `i`, `bounds[i] = (first input, count)` and the
/// weights at `kk[i * ksize ..]`.
pub(super) struct Coeffs {
    pub ksize: usize,
    pub bounds: Vec<(usize, usize)>,
    pub kk: Vec<i32>,
}

/// The normalized f64 weights of one pass (what Pillow's float path uses directly).
pub(super) struct Weights {
    pub ksize: usize,
    pub bounds: Vec<(usize, usize)>,
    pub kk: Vec<f64>,
}

/// Pillow's `precompute_coeffs`, over the input span `in0..in1`.
pub(super) fn weights(
    in_size: usize,
    in0: f32,
    in1: f32,
    out_size: usize,
    filter: Filter,
) -> Result<Weights, AllocError> {
    weights_aa(in_size, in0, in1, out_size, filter, true)
}

/// `weights`, or with `antialias` false the filter's support is not widened when shrinking
/// (plain interpolation, as torchvision's `antialias=False`; Pillow always widens it).
fn weights_aa(
    in_size: usize,
    in0: f32,
    in1: f32,
    out_size: usize,
    filter: Filter,
    antialias: bool,
) -> Result<Weights, AllocError> {
    let scale = f64::from(in1 - in0) / out_size as f64;
    let filterscale = if antialias { scale.max(1.0) } else { 1.0 };
    let support = filter.support() * filterscale;
    let ksize = support.ceil() as usize * 2 + 1;
    let inv = 1.0 / filterscale;
    let mut bounds = alloc::with_capacity(out_size)?;
    let mut kk = alloc::zeroed::<f64>(alloc::product(&[out_size, ksize])?)?;
    for xx in 0..out_size {
        let center = f64::from(in0) + (xx as f64 + 0.5) * scale;
        // C's (int) truncates toward zero, as `as i64` does.
        let xmin = ((center - support + 0.5) as i64).max(0);
        let xmax = ((center + support + 0.5) as i64).min(in_size as i64) - xmin;
        let xmax = xmax.max(0) as usize;
        let xmin = xmin as usize;
        let k = &mut kk[xx * ksize..xx * ksize + xmax];
        let mut ww = 0.0;
        for (x, slot) in k.iter_mut().enumerate() {
            let w = filter.weight((x as f64 + xmin as f64 - center + 0.5) * inv);
            *slot = w;
            ww += w;
        }
        if ww != 0.0 {
            for w in k.iter_mut() {
                *w /= ww;
            }
        }
        bounds.push((xmin, xmax));
    }
    Ok(Weights { ksize, bounds, kk })
}

/// One axis's tables for the GPU kernels (cuda/resize.cu), from the code the CPU path runs:
/// `(first, count)` per output index, and `ksize` weights per output index, either Pillow's 8-bit
/// fixed point (`fixed`) or its f64 weights. Nearest is one tap of weight 1 at Pillow's index.
pub struct AxisTables {
    pub ksize: usize,
    pub bounds: Vec<(i32, i32)>,
    pub fixed: Vec<i32>,
    pub float: Vec<f64>,
}

pub fn axis_tables(
    in_size: usize,
    out_size: usize,
    filter: Filter,
    antialias: bool,
) -> Result<AxisTables, AllocError> {
    fn collect<T, U>(src: &[T], f: impl Fn(&T) -> U) -> Result<Vec<U>, AllocError> {
        let mut v = alloc::with_capacity(src.len())?;
        v.extend(src.iter().map(f));
        Ok(v)
    }
    if filter == Filter::Nearest {
        let idx = nearest_table(in_size, out_size)?;
        let mut fixed = alloc::with_capacity(out_size)?;
        fixed.resize(out_size, 1 << PRECISION_BITS);
        let mut float = alloc::with_capacity(out_size)?;
        float.resize(out_size, 1.0);
        return Ok(AxisTables {
            ksize: 1,
            bounds: collect(&idx, |&i| (i as i32, 1))?,
            fixed,
            float,
        });
    }
    let w = weights_aa(in_size, 0.0, in_size as f32, out_size, filter, antialias)?;
    Ok(AxisTables {
        ksize: w.ksize,
        bounds: collect(&w.bounds, |&(a, n)| (a as i32, n as i32))?,
        fixed: collect(&w.kk, |&v| to_fixed(v))?,
        float: w.kk,
    })
}

fn to_fixed(w: f64) -> i32 {
    let scaled = w * f64::from(1u32 << PRECISION_BITS);
    if w < 0.0 {
        (-0.5 + scaled) as i32
    } else {
        (0.5 + scaled) as i32
    }
}

/// `weights` rounded to Pillow's 8-bit fixed point (`normalize_coeffs_8bpc`).
pub(super) fn coeffs(
    in_size: usize,
    in0: f32,
    in1: f32,
    out_size: usize,
    filter: Filter,
) -> Result<Coeffs, AllocError> {
    let w = weights(in_size, in0, in1, out_size, filter)?;
    let mut kk = alloc::with_capacity(w.kk.len())?;
    kk.extend(w.kk.iter().map(|&w| to_fixed(w)));
    Ok(Coeffs {
        ksize: w.ksize,
        bounds: w.bounds,
        kk,
    })
}

/// Pillow's NEAREST resize (`ImagingScaleAffine`): source index `(int)(x0)` with `x0` starting at
/// half a step and advanced by repeated f64 addition, exactly as Pillow accumulates it (the
/// rounding of that sum decides ties, so a closed form would differ).
pub(super) fn nearest_table(in_size: usize, out_size: usize) -> Result<Vec<usize>, AllocError> {
    // Pillow: a = (double)(float)(box width) / size, xo = a * 0.5, then xo += a.
    let a = f64::from(in_size as f32) / out_size as f64;
    let mut xo = a * 0.5;
    let mut out = alloc::with_capacity(out_size)?;
    for _ in 0..out_size {
        out.push((xo as usize).min(in_size - 1));
        xo += a;
    }
    Ok(out)
}

/// A rectangle of the output (`x`, `y`, `width`, `height`): a crop computed straight from the
/// source. Pillow's weights for an output pixel depend only on the two sizes, so computing only
/// the window gives exactly the bytes that resizing all and cropping would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub x: usize,
    pub y: usize,
    pub width: usize,
    pub height: usize,
}

/// Resizes an 8-bit image of `channels` interleaved channels (1: L, 3: RGB, 4: RGBA, which is
/// premultiplied by alpha around the resize as Pillow does).
pub fn resize_u8(
    src: &[u8],
    width: usize,
    height: usize,
    channels: usize,
    out_width: usize,
    out_height: usize,
    filter: Filter,
) -> Result<Vec<u8>, ImageError> {
    let all = Window {
        x: 0,
        y: 0,
        width: out_width,
        height: out_height,
    };
    resize_window_u8(
        src, width, height, channels, out_width, out_height, filter, all,
    )
}

/// `resize_u8` restricted to `window` of the `out_width` x `out_height` result.
#[allow(clippy::too_many_arguments)]
pub fn resize_window_u8(
    src: &[u8],
    width: usize,
    height: usize,
    channels: usize,
    out_width: usize,
    out_height: usize,
    filter: Filter,
    window: Window,
) -> Result<Vec<u8>, ImageError> {
    let all = Window {
        x: 0,
        y: 0,
        width,
        height,
    };
    resize_region_u8(
        src, all, width, height, channels, out_width, out_height, filter, window,
    )
}

/// The source pixels `[lo, hi)` along one axis (`in_size` -> `out_size`) that outputs
/// `start..start + len` read: what a partial decode must produce for `resize_region_u8`.
pub fn source_span(
    in_size: usize,
    out_size: usize,
    filter: Filter,
    start: usize,
    len: usize,
) -> Result<(usize, usize), AllocError> {
    if in_size == out_size || len == 0 {
        return Ok((start, start + len));
    }
    if filter == Filter::Nearest {
        let t = nearest_table(in_size, out_size)?;
        let s = &t[start..start + len];
        let lo = s.iter().copied().min().unwrap_or(0);
        return Ok((lo, s.iter().copied().max().unwrap_or(0) + 1));
    }
    let c = coeffs(in_size, 0.0, in_size as f32, out_size, filter)?;
    let lo = c.bounds[start..start + len].iter().map(|b| b.0).min();
    let hi = c.bounds[start..start + len].iter().map(|b| b.0 + b.1).max();
    Ok((lo.unwrap_or(0), hi.unwrap_or(0)))
}

/// `resize_window_u8` of a `full_width` x `full_height` image of which `src` holds only the
/// rectangle `region` (a partial decode): the bytes are those of resizing the whole image, as
/// long as `region` covers what the window reads (`source_span` on both axes).
#[allow(clippy::too_many_arguments)]
pub fn resize_region_u8(
    src: &[u8],
    region: Window,
    full_width: usize,
    full_height: usize,
    channels: usize,
    out_width: usize,
    out_height: usize,
    filter: Filter,
    window: Window,
) -> Result<Vec<u8>, ImageError> {
    let len = alloc::product(&[window.width, window.height, channels]).map_err(no_memory)?;
    let mut out = alloc::zeroed(len).map_err(no_memory)?;
    resize_region_into(
        src,
        region,
        full_width,
        full_height,
        channels,
        out_width,
        out_height,
        filter,
        window,
        &mut out,
    )?;
    Ok(out)
}

/// `resize_region_u8` into `out`, which holds exactly `window.width * window.height * channels`
/// bytes (a slot of a batch: no allocation or copy of the result).
#[allow(clippy::too_many_arguments)]
pub fn resize_region_into(
    src: &[u8],
    region: Window,
    full_width: usize,
    full_height: usize,
    channels: usize,
    out_width: usize,
    out_height: usize,
    filter: Filter,
    window: Window,
    out: &mut [u8],
) -> Result<(), ImageError> {
    let sizes = (full_width, full_height, out_width, out_height);
    resize_region_into_alpha(
        src,
        region,
        sizes,
        channels,
        filter,
        window,
        channels == 4,
        out,
    )
}

/// `resize_window_u8` with the alpha treatment chosen: `premultiply` true for 4 channels is
/// Pillow's RGBA (resized as RGBa), false its RGBX and CMYK (every channel on its own).
#[allow(clippy::too_many_arguments)]
pub fn resize_window_u8_alpha(
    src: &[u8],
    width: usize,
    height: usize,
    channels: usize,
    out_width: usize,
    out_height: usize,
    filter: Filter,
    window: Window,
    premultiply: bool,
) -> Result<Vec<u8>, ImageError> {
    let len = alloc::product(&[window.width, window.height, channels]).map_err(no_memory)?;
    let mut out = alloc::zeroed(len).map_err(no_memory)?;
    let all = Window {
        x: 0,
        y: 0,
        width,
        height,
    };
    resize_region_into_alpha(
        src,
        all,
        (width, height, out_width, out_height),
        channels,
        filter,
        window,
        premultiply,
        &mut out,
    )?;
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn resize_region_into_alpha(
    src: &[u8],
    region: Window,
    (full_width, full_height, out_width, out_height): (usize, usize, usize, usize),
    channels: usize,
    filter: Filter,
    window: Window,
    premultiply: bool,
    out: &mut [u8],
) -> Result<(), ImageError> {
    if premultiply && channels != 4 {
        return Err(ImageError::Unsupported(format!(
            "alpha premultiplication needs 4 channels (RGBA), got {channels}"
        )));
    }
    let (width, height) = (full_width, full_height);
    check_sizes(
        src.len(),
        region,
        (width, height),
        channels,
        (out_width, out_height),
        filter,
        window,
        out.len(),
    )?;
    let row_len = region.width * channels;
    let row_out = window.width * channels;
    if out_width == width && out_height == height {
        // Pillow returns a copy (no premultiplication round trip either).
        let at = (window.x - region.x) * channels;
        for (y, line) in (window.y..).zip(out.chunks_exact_mut(row_out)) {
            let r = (y - region.y) * row_len + at;
            line.copy_from_slice(&src[r..r + row_out]);
        }
        return Ok(());
    }
    if filter == Filter::Nearest {
        // Pillow's NEAREST copies whole pixels, RGBA included (no premultiplication).
        let xs = nearest_table(width, out_width).map_err(no_memory)?;
        let ys = nearest_table(height, out_height).map_err(no_memory)?;
        let lines = out.chunks_exact_mut(row_out);
        for (&sy, line) in ys[window.y..window.y + window.height].iter().zip(lines) {
            let row = &src[(sy - region.y) * row_len..(sy - region.y + 1) * row_len];
            let pixels = line.chunks_exact_mut(channels);
            for (&sx, px) in xs[window.x..window.x + window.width].iter().zip(pixels) {
                let at = (sx - region.x) * channels;
                px.copy_from_slice(&row[at..at + channels]);
            }
        }
        return Ok(());
    }
    let job = Job {
        src,
        origin: Origin {
            x: region.x,
            y: region.y,
            width: region.width,
        },
        width,
        height,
        channels,
        out_width,
        out_height,
        filter,
        window,
        // Pillow resizes RGBA as premultiplied RGBa and converts back.
        premultiply,
        bx: [0.0, 0.0, width as f32, height as f32],
    };
    convolve(&job, out).map_err(no_memory)?;
    if premultiply {
        kernels::unpremultiply(out);
    }
    Ok(())
}

/// A resize whose buffers cannot be allocated: Pillow raises `MemoryError` there (its
/// `test_overflow`), and so does the binding for this variant.
pub(super) fn no_memory(e: AllocError) -> ImageError {
    ImageError::NoMemory(format!(
        "the resize needs more memory than could be allocated ({e}); ask for a smaller size"
    ))
}

/// The argument checks of `resize_region_into`.
#[allow(clippy::too_many_arguments)]
fn check_sizes(
    src_len: usize,
    region: Window,
    (width, height): (usize, usize),
    channels: usize,
    (out_width, out_height): (usize, usize),
    filter: Filter,
    window: Window,
    out_len: usize,
) -> Result<(), ImageError> {
    if !matches!(channels, 1 | 3 | 4) {
        return Err(ImageError::Unsupported(format!(
            "resize takes 1 (L), 3 (RGB) or 4 (RGBA) channels, got {channels}"
        )));
    }
    if width == 0 || height == 0 || out_width == 0 || out_height == 0 {
        return Err(ImageError::InvalidSize(format!(
            "sizes must be positive: input {width}x{height}, output {out_width}x{out_height}"
        )));
    }
    if region.x + region.width > width || region.y + region.height > height {
        return Err(ImageError::InvalidSize(format!(
            "region {region:?} is not inside the {width}x{height} source"
        )));
    }
    if Ok(src_len) != alloc::product(&[region.width, region.height, channels]) {
        return Err(ImageError::InvalidSize(format!(
            "buffer of {} bytes is not {}x{}x{channels}",
            src_len, region.width, region.height
        )));
    }
    if window.width == 0
        || window.height == 0
        || window.x + window.width > out_width
        || window.y + window.height > out_height
    {
        return Err(ImageError::InvalidSize(format!(
            "window {window:?} is not inside the {out_width}x{out_height} output"
        )));
    }
    if Ok(out_len) != alloc::product(&[window.width, window.height, channels]) {
        return Err(ImageError::InvalidSize(format!(
            "output buffer of {} bytes is not {}x{}x{channels}",
            out_len, window.width, window.height
        )));
    }
    let covers =
        |(lo, hi): (usize, usize), start: usize, len: usize| lo >= start && hi <= start + len;
    let partial = region.width != width || region.height != height;
    if partial
        && (!covers(
            source_span(width, out_width, filter, window.x, window.width).map_err(no_memory)?,
            region.x,
            region.width,
        ) || !covers(
            source_span(height, out_height, filter, window.y, window.height).map_err(no_memory)?,
            region.y,
            region.height,
        ))
    {
        return Err(ImageError::InvalidSize(format!(
            "region {region:?} of the {width}x{height} source does not cover what window {window:?} reads"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_and_constant_images() {
        let src: Vec<u8> = (0..12u8).collect();
        assert_eq!(
            resize_u8(&src, 4, 3, 1, 4, 3, Filter::Bicubic).unwrap(),
            src
        );
        let flat = vec![77u8; 10 * 7 * 3];
        for f in [
            Filter::Box,
            Filter::Bilinear,
            Filter::Hamming,
            Filter::Bicubic,
            Filter::Lanczos,
        ] {
            let out = resize_u8(&flat, 10, 7, 3, 23, 4, f).unwrap();
            assert!(out.iter().all(|&v| v == 77), "{f:?}");
        }
    }

    #[test]
    fn errors_say_why() {
        let e = resize_u8(&[0; 20], 2, 2, 5, 1, 1, Filter::Box)
            .unwrap_err()
            .to_string();
        assert!(e.contains("RGBA") && e.contains("got 5"), "{e}");
        assert!(resize_u8(&[0; 3], 2, 2, 1, 1, 1, Filter::Box).is_err());
        assert!(resize_u8(&[0; 4], 2, 2, 1, 0, 1, Filter::Box).is_err());
    }
}
