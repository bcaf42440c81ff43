//! Resize bit-exact with Pillow's `Image.resize` (libImaging/Resample.c) for 8-bit images.
//!
//! Our own code rather than a resize crate: bit-exactness needs Pillow's exact arithmetic. Its
//! filter weights are computed in f64 per output pixel, normalized, then rounded to 22-bit fixed
//! point (`PRECISION_BITS = 32 - 8 - 2`); each pass accumulates in i32 from a half-unit bias and
//! clips. The horizontal pass runs first, over only the rows the vertical pass will read.
use super::resize_kernels::{self as kernels, Taps};
use crate::error::ImageError;

pub(super) const PRECISION_BITS: u32 = 32 - 8 - 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    Box,
    Bilinear,
    Hamming,
    Bicubic,
    Lanczos,
}

impl Filter {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
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
            Self::Box => 0.5,
            Self::Bilinear | Self::Hamming => 1.0,
            Self::Bicubic => 2.0,
            Self::Lanczos => 3.0,
        }
    }

    fn weight(self, x: f64) -> f64 {
        match self {
            Self::Box => {
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

/// Pillow's `precompute_coeffs` + `normalize_coeffs_8bpc`, over the input span `in0..in1`.
fn coeffs(in_size: usize, in0: f32, in1: f32, out_size: usize, filter: Filter) -> Coeffs {
    let scale = f64::from(in1 - in0) / out_size as f64;
    let filterscale = scale.max(1.0);
    let support = filter.support() * filterscale;
    let ksize = support.ceil() as usize * 2 + 1;
    let inv = 1.0 / filterscale;
    let mut bounds = Vec::with_capacity(out_size);
    let mut kk = vec![0i32; out_size * ksize];
    let mut k = vec![0f64; ksize];
    for xx in 0..out_size {
        let center = f64::from(in0) + (xx as f64 + 0.5) * scale;
        // C's (int) truncates toward zero, as `as i64` does.
        let xmin = ((center - support + 0.5) as i64).max(0);
        let xmax = ((center + support + 0.5) as i64).min(in_size as i64) - xmin;
        let xmax = xmax.max(0) as usize;
        let xmin = xmin as usize;
        let mut ww = 0.0;
        for (x, slot) in k.iter_mut().enumerate().take(xmax) {
            let w = filter.weight((x as f64 + xmin as f64 - center + 0.5) * inv);
            *slot = w;
            ww += w;
        }
        for (x, &w) in k.iter().enumerate().take(xmax) {
            let w = if ww == 0.0 { w } else { w / ww };
            let scaled = w * f64::from(1u32 << PRECISION_BITS);
            kk[xx * ksize + x] = if w < 0.0 {
                (-0.5 + scaled) as i32
            } else {
                (0.5 + scaled) as i32
            };
        }
        bounds.push((xmin, xmax));
    }
    Coeffs { ksize, bounds, kk }
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

/// Resizes an 8-bit image of `channels` interleaved channels (1: L, 3: RGB; Pillow's RGBA path
/// premultiplies alpha first, so 4 channels are refused until that is implemented).
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
    if !matches!(channels, 1 | 3) {
        return Err(ImageError::Unsupported(format!(
            "resize takes 1 (L) or 3 (RGB) channels, got {channels}; RGBA needs Pillow's alpha \
             premultiplication, not implemented yet: resize the RGB and alpha planes separately"
        )));
    }
    if width == 0 || height == 0 || out_width == 0 || out_height == 0 {
        return Err(ImageError::InvalidSize(format!(
            "sizes must be positive: input {width}x{height}, output {out_width}x{out_height}"
        )));
    }
    if src.len() != width * height * channels {
        return Err(ImageError::InvalidSize(format!(
            "buffer of {} bytes is not {width}x{height}x{channels}",
            src.len()
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
        let taps = Taps {
            ksize: horiz.ksize,
            bounds: &horiz.bounds[win_cols.clone()],
            kk: &horiz.kk[window.x * horiz.ksize..],
        };
        let packed = kernels::Packed::new(&taps, channels);
        let mut tmp = vec![0u8; row_bytes * (last - first)];
        for (y, out) in tmp.chunks_exact_mut(row_bytes).enumerate() {
            let line = &src[(y + first) * width * channels..(y + first + 1) * width * channels];
            kernels::horizontal(line, out, channels, &taps, &packed);
        }
        (std::borrow::Cow::Owned(tmp), row_bytes, first)
    } else {
        // No horizontal resize: the window's columns of the source rows, in place.
        (std::borrow::Cow::Borrowed(src), width * channels, 0)
    };
    let col0 = if need_h { 0 } else { window.x * channels };
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
    Ok(out)
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
        let e = resize_u8(&[0; 16], 2, 2, 4, 1, 1, Filter::Box)
            .unwrap_err()
            .to_string();
        assert!(e.contains("RGBA"), "{e}");
        assert!(resize_u8(&[0; 3], 2, 2, 1, 1, 1, Filter::Box).is_err());
        assert!(resize_u8(&[0; 4], 2, 2, 1, 0, 1, Filter::Box).is_err());
    }
}
