//! Resize bit-exact with Pillow's `Image.resize` (libImaging/Resample.c) for 8-bit images.
//!
//! Our own code rather than a resize crate: bit-exactness needs Pillow's exact arithmetic. Its
//! filter weights are computed in f64 per output pixel, normalized, then rounded to 22-bit fixed
//! point (`PRECISION_BITS = 32 - 8 - 2`); each pass accumulates in i32 from a half-unit bias and
//! clips. The horizontal pass runs first, over only the rows the vertical pass will read, unless
//! Pillow's rule for the pass order says vertical first (`vertical_first`).
use super::resize_kernels::{self as kernels, Taps};
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
struct Coeffs {
    ksize: usize,
    bounds: Vec<(usize, usize)>,
    kk: Vec<i32>,
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
) -> Weights {
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
) -> Weights {
    let scale = f64::from(in1 - in0) / out_size as f64;
    let filterscale = if antialias { scale.max(1.0) } else { 1.0 };
    let support = filter.support() * filterscale;
    let ksize = support.ceil() as usize * 2 + 1;
    let inv = 1.0 / filterscale;
    let mut bounds = Vec::with_capacity(out_size);
    let mut kk = vec![0f64; out_size * ksize];
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
    Weights { ksize, bounds, kk }
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

pub fn axis_tables(in_size: usize, out_size: usize, filter: Filter, antialias: bool) -> AxisTables {
    if filter == Filter::Nearest {
        let idx = nearest_table(in_size, out_size);
        return AxisTables {
            ksize: 1,
            bounds: idx.iter().map(|&i| (i as i32, 1)).collect(),
            fixed: vec![1 << PRECISION_BITS; out_size],
            float: vec![1.0; out_size],
        };
    }
    let w = weights_aa(in_size, 0.0, in_size as f32, out_size, filter, antialias);
    AxisTables {
        ksize: w.ksize,
        bounds: w
            .bounds
            .iter()
            .map(|&(a, n)| (a as i32, n as i32))
            .collect(),
        fixed: w.kk.iter().map(|&v| to_fixed(v)).collect(),
        float: w.kk,
    }
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
fn coeffs(in_size: usize, in0: f32, in1: f32, out_size: usize, filter: Filter) -> Coeffs {
    let w = weights(in_size, in0, in1, out_size, filter);
    let kk =
        w.kk.iter()
            .map(|&w| {
                let scaled = w * f64::from(1u32 << PRECISION_BITS);
                if w < 0.0 {
                    (-0.5 + scaled) as i32
                } else {
                    (0.5 + scaled) as i32
                }
            })
            .collect();
    Coeffs {
        ksize: w.ksize,
        bounds: w.bounds,
        kk,
    }
}

/// Pillow's NEAREST resize (`ImagingScaleAffine`): source index `(int)(x0)` with `x0` starting at
/// half a step and advanced by repeated f64 addition, exactly as Pillow accumulates it (the
/// rounding of that sum decides ties, so a closed form would differ).
pub(super) fn nearest_table(in_size: usize, out_size: usize) -> Vec<usize> {
    // Pillow: a = (double)(float)(box width) / size, xo = a * 0.5, then xo += a.
    let a = f64::from(in_size as f32) / out_size as f64;
    let mut xo = a * 0.5;
    let mut out = Vec::with_capacity(out_size);
    for _ in 0..out_size {
        out.push((xo as usize).min(in_size - 1));
        xo += a;
    }
    out
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
) -> (usize, usize) {
    if in_size == out_size || len == 0 {
        return (start, start + len);
    }
    if filter == Filter::Nearest {
        let t = nearest_table(in_size, out_size);
        let s = &t[start..start + len];
        let lo = s.iter().copied().min().unwrap_or(0);
        return (lo, s.iter().copied().max().unwrap_or(0) + 1);
    }
    let c = coeffs(in_size, 0.0, in_size as f32, out_size, filter);
    let lo = c.bounds[start..start + len].iter().map(|b| b.0).min();
    let hi = c.bounds[start..start + len].iter().map(|b| b.0 + b.1).max();
    (lo.unwrap_or(0), hi.unwrap_or(0))
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
    let (width, height) = (full_width, full_height);
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
    if src.len() != region.width * region.height * channels {
        return Err(ImageError::InvalidSize(format!(
            "buffer of {} bytes is not {}x{}x{channels}",
            src.len(),
            region.width,
            region.height
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
    let covers =
        |(lo, hi): (usize, usize), start: usize, len: usize| lo >= start && hi <= start + len;
    let partial = region.width != width || region.height != height;
    if partial
        && (!covers(
            source_span(width, out_width, filter, window.x, window.width),
            region.x,
            region.width,
        ) || !covers(
            source_span(height, out_height, filter, window.y, window.height),
            region.y,
            region.height,
        ))
    {
        return Err(ImageError::InvalidSize(format!(
            "region {region:?} of the {width}x{height} source does not cover what window {window:?} reads"
        )));
    }
    let origin = Origin {
        x: region.x,
        y: region.y,
        width: region.width,
    };
    if out_width == width && out_height == height {
        // Pillow returns a copy (no premultiplication round trip either).
        let shifted = Window {
            x: window.x - region.x,
            y: window.y - region.y,
            ..window
        };
        return Ok(crop(src, region.width, channels, shifted));
    }
    if filter == Filter::Nearest {
        // Pillow's NEAREST copies whole pixels, RGBA included (no premultiplication).
        let xs = nearest_table(width, out_width);
        let ys = nearest_table(height, out_height);
        let row_len = region.width * channels;
        let mut out = Vec::with_capacity(window.width * window.height * channels);
        for &sy in &ys[window.y..window.y + window.height] {
            let row = &src[(sy - region.y) * row_len..(sy - region.y + 1) * row_len];
            for &sx in &xs[window.x..window.x + window.width] {
                let at = (sx - region.x) * channels;
                out.extend_from_slice(&row[at..at + channels]);
            }
        }
        return Ok(out);
    }
    if channels == 4 {
        // Pillow resizes RGBA as premultiplied RGBa and converts back.
        let pre = premultiply(src);
        let mut out = convolve(
            &pre, origin, width, height, channels, out_width, out_height, filter, window,
        );
        unpremultiply(&mut out);
        return Ok(out);
    }
    Ok(convolve(
        src, origin, width, height, channels, out_width, out_height, filter, window,
    ))
}

/// Where a partial source sits in the whole image: its top-left corner and its width (its
/// row length in pixels).
#[derive(Debug, Clone, Copy)]
struct Origin {
    x: usize,
    y: usize,
    width: usize,
}

fn crop(src: &[u8], width: usize, channels: usize, w: Window) -> Vec<u8> {
    let mut out = Vec::with_capacity(w.width * w.height * channels);
    for y in w.y..w.y + w.height {
        let at = (y * width + w.x) * channels;
        out.extend_from_slice(&src[at..at + w.width * channels]);
    }
    out
}

/// Pillow's RGBA -> RGBa: each colour times alpha / 255, rounded (`MULDIV255`).
fn premultiply(src: &[u8]) -> Vec<u8> {
    let mut out = src.to_vec();
    for px in out.chunks_exact_mut(4) {
        let a = u32::from(px[3]);
        for v in &mut px[..3] {
            let t = u32::from(*v) * a + 128;
            *v = (((t >> 8) + t) >> 8) as u8;
        }
    }
    out
}

/// Pillow's RGBa -> RGBA: colours times 255 / alpha, truncated and clipped; alpha 0 and 255 are
/// left as they are.
fn unpremultiply(px: &mut [u8]) {
    for p in px.chunks_exact_mut(4) {
        let a = u32::from(p[3]);
        if a != 0 && a != 255 {
            for v in &mut p[..3] {
                *v = ((255 * u32::from(*v)) / a).min(255) as u8;
            }
        }
    }
}

/// The convolution passes: horizontally first, over only the source rows the vertical pass
/// reads, or vertically first where Pillow does that (`vertical_first`), over only the columns
/// the partial source holds.
#[allow(clippy::too_many_arguments)]
fn convolve(
    src: &[u8],
    origin: Origin,
    width: usize,
    height: usize,
    channels: usize,
    out_width: usize,
    out_height: usize,
    filter: Filter,
    window: Window,
) -> Vec<u8> {
    if out_width != width && vertical_first(width, height, out_width, out_height) {
        let rows = Window {
            x: origin.x,
            y: window.y,
            width: origin.width,
            height: window.height,
        };
        let tall = passes(
            src, origin, width, height, channels, width, out_height, filter, rows,
        );
        // `tall` holds the window's rows, over the source's columns.
        let cols = Window {
            x: window.x,
            y: 0,
            width: window.width,
            height: window.height,
        };
        let part = Origin {
            x: origin.x,
            y: 0,
            width: origin.width,
        };
        return passes(
            &tall,
            part,
            width,
            window.height,
            channels,
            out_width,
            window.height,
            filter,
            cols,
        );
    }
    passes(
        src, origin, width, height, channels, out_width, out_height, filter, window,
    )
}

/// Horizontal pass (where the width changes), then vertical (where the height does).
#[allow(clippy::too_many_arguments)]
fn passes(
    src: &[u8],
    origin: Origin,
    width: usize,
    height: usize,
    channels: usize,
    out_width: usize,
    out_height: usize,
    filter: Filter,
    window: Window,
) -> Vec<u8> {
    let need_h = out_width != width;
    let need_v = out_height != height;
    let win_rows = window.y..window.y + window.height;
    let win_cols = window.x..window.x + window.width;

    // Horizontal pass, over only the source rows the vertical pass (or the window) reads.
    let vert = need_v.then(|| coeffs(height, 0.0, height as f32, out_height, filter));
    let (first, last) = match &vert {
        Some(v) => {
            let (f, _) = v.bounds[window.y];
            let (l, n) = v.bounds[window.y + window.height - 1];
            (f, l + n)
        }
        None => (window.y, window.y + window.height),
    };
    let row_bytes = window.width * channels;
    let (img, stride, rows_offset): (std::borrow::Cow<'_, [u8]>, usize, usize) = if need_h {
        let horiz = coeffs(width, 0.0, width as f32, out_width, filter);
        // Taps relative to the partial source's first column.
        let bounds: Vec<(usize, usize)> = horiz.bounds[win_cols.clone()]
            .iter()
            .map(|&(first, n)| (first - origin.x, n))
            .collect();
        let taps = Taps {
            ksize: horiz.ksize,
            bounds: &bounds,
            kk: &horiz.kk[window.x * horiz.ksize..],
        };
        let packed = kernels::Packed::new(&taps, channels);
        let mut tmp = vec![0u8; row_bytes * (last - first)];
        for (y, out) in tmp.chunks_exact_mut(row_bytes).enumerate() {
            let r = y + first - origin.y;
            let line = &src[r * origin.width * channels..(r + 1) * origin.width * channels];
            kernels::horizontal(line, out, channels, &taps, &packed);
        }
        (std::borrow::Cow::Owned(tmp), row_bytes, first)
    } else {
        // No horizontal resize: the window's columns of the source rows, in place.
        (
            std::borrow::Cow::Borrowed(src),
            origin.width * channels,
            origin.y,
        )
    };
    let col0 = if need_h {
        0
    } else {
        (window.x - origin.x) * channels
    };
    let mut out = vec![0u8; row_bytes * window.height];
    match &vert {
        Some(v) => {
            let taps = Taps {
                ksize: v.ksize,
                bounds: &v.bounds,
                kk: &v.kk,
            };
            for (yy, line) in win_rows.zip(out.chunks_exact_mut(row_bytes)) {
                kernels::vertical(&img[col0..], stride, yy, &taps, rows_offset, line);
            }
        }
        None => {
            for (yy, line) in win_rows.zip(out.chunks_exact_mut(row_bytes)) {
                let at = (yy - rows_offset) * stride + col0;
                line.copy_from_slice(&img[at..at + row_bytes]);
            }
        }
    }
    out
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
