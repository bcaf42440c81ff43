//! Pillow's double-precision resample paths, channel by channel: mode "F" (float32), "I"
//! (int32, its 32bpc path) and "I;16" (uint16, its 16bpc path). The normalized weights stay
//! f64 (no fixed point), each output is an f64 sum in tap order stored as Pillow stores it, and
//! the intermediate image between the passes has the sample type, as Pillow's has.
use super::alloc::{self, AllocError};
use super::resize::{nearest_table, no_memory, vertical_first, weights, Filter};
use crate::error::ImageError;

/// A sample of the double-precision paths: read as f64, an f64 sum stored back as Pillow does.
pub trait Wide: alloc::Zeroable + Copy + Send + Sync {
    /// Pillow keeps the type of these modes "special" (I;16), which changes its NEAREST.
    const SPECIAL: bool = false;
    fn wide(self) -> f64;
    fn store(ss: f64) -> Self;
    /// The sample type's own addition, which Pillow's `reduce` uses for pairs and quads of
    /// samples before it adds them to its f64 sum (f32 rounds, int32 wraps).
    #[must_use]
    fn add(self, other: Self) -> Self;
}

impl Wide for f32 {
    fn wide(self) -> f64 {
        f64::from(self)
    }
    #[allow(clippy::cast_possible_truncation)] // Pillow stores the double sum as a float
    fn store(ss: f64) -> Self {
        ss as f32
    }
    fn add(self, other: Self) -> Self {
        self + other
    }
}

impl Wide for i32 {
    fn wide(self) -> f64 {
        f64::from(self)
    }
    fn store(ss: f64) -> Self {
        round_up(ss)
    }
    fn add(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
}

impl Wide for u16 {
    const SPECIAL: bool = true;
    fn wide(self) -> f64 {
        f64::from(self)
    }
    /// `CLIP16(ROUND_UP(ss))`.
    fn store(ss: f64) -> Self {
        round_up(ss).clamp(0, 0xFFFF) as u16
    }
    // Pillow's `reduce` refuses I;16 images, so no sum of it ever runs.
    fn add(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
}

/// Pillow's `ROUND_UP(f)`: `(int)(f + 0.5F)` (`f - 0.5F` below 0), truncated; a value outside
/// int's range (or NaN) converts as x86's `cvttsd2si` converts it, to `INT_MIN`.
fn round_up(ss: f64) -> i32 {
    let r = if ss >= 0.0 { ss + 0.5 } else { ss - 0.5 };
    if r > -2_147_483_649.0 && r < 2_147_483_648.0 {
        r as i32
    } else {
        i32::MIN
    }
}

/// Resizes a float32 image of `channels` interleaved channels to `out_width` x `out_height`.
pub fn resize_f32(
    src: &[f32],
    width: usize,
    height: usize,
    channels: usize,
    out_width: usize,
    out_height: usize,
    filter: Filter,
) -> Result<Vec<f32>, ImageError> {
    if channels == 0 || width == 0 || height == 0 || out_width == 0 || out_height == 0 {
        return Err(ImageError::InvalidSize(format!(
            "sizes must be positive: input {width}x{height}x{channels}, output {out_width}x{out_height}"
        )));
    }
    if Ok(src.len()) != alloc::product(&[width, height, channels]) {
        return Err(ImageError::InvalidSize(format!(
            "buffer of {} values is not {width}x{height}x{channels}",
            src.len()
        )));
    }
    if out_width == width && out_height == height {
        let mut out = alloc::with_capacity(src.len()).map_err(no_memory)?;
        out.extend_from_slice(src);
        return Ok(out);
    }
    if filter == Filter::Nearest {
        let xs = nearest_table(width, out_width).map_err(no_memory)?;
        let ys = nearest_table(height, out_height).map_err(no_memory)?;
        let len = alloc::product(&[out_width, out_height, channels]).map_err(no_memory)?;
        let mut out = alloc::with_capacity(len).map_err(no_memory)?;
        for &sy in &ys {
            let row = &src[sy * width * channels..(sy + 1) * width * channels];
            for &sx in &xs {
                out.extend_from_slice(&row[sx * channels..(sx + 1) * channels]);
            }
        }
        return Ok(out);
    }
    let full = [0.0, 0.0, width as f32, height as f32];
    convolve_wide(
        src, width, height, channels, out_width, out_height, filter, full,
    )
    .map_err(no_memory)
}

/// The convolution of `resize_f32` over the source region `bx` (Pillow's `box`), in Pillow's
/// pass order (as for 8 bits: the intermediate image has the sample type and rounds too).
#[allow(clippy::too_many_arguments, clippy::float_cmp)] // Pillow compares the box exactly
pub(super) fn convolve_wide<T: Wide>(
    src: &[T],
    width: usize,
    height: usize,
    channels: usize,
    out_width: usize,
    out_height: usize,
    filter: Filter,
    bx: [f32; 4],
) -> Result<Vec<T>, AllocError> {
    let need_h = out_width != width || bx[0] != 0.0 || bx[2] != width as f32;
    if need_h && vertical_first(width, height, out_width, out_height) {
        let tall_box = [0.0, bx[1], width as f32, bx[3]];
        let tall = passes(
            src, width, height, channels, width, out_height, filter, tall_box,
        )?;
        let wide_box = [bx[0], 0.0, bx[2], out_height as f32];
        return passes(
            &tall, width, out_height, channels, out_width, out_height, filter, wide_box,
        );
    }
    passes(
        src, width, height, channels, out_width, out_height, filter, bx,
    )
}

#[allow(clippy::too_many_arguments, clippy::float_cmp)]
fn passes<T: Wide>(
    src: &[T],
    width: usize,
    height: usize,
    channels: usize,
    out_width: usize,
    out_height: usize,
    filter: Filter,
    bx: [f32; 4],
) -> Result<Vec<T>, AllocError> {
    // Pillow's need_horizontal / need_vertical: a partial box needs the pass at the same size.
    let need_h = out_width != width || bx[0] != 0.0 || bx[2] != width as f32;
    let need_v = out_height != height || bx[1] != 0.0 || bx[3] != height as f32;
    let vert = weights(height, bx[1], bx[3], out_height, filter)?;
    let (first, last) = if need_v {
        let (l, n) = vert.bounds[out_height - 1];
        (vert.bounds[0].0, l + n)
    } else {
        (0, height)
    };
    let (img, w, offset): (std::borrow::Cow<'_, [T]>, usize, usize) = if need_h {
        let horiz = weights(width, bx[0], bx[2], out_width, filter)?;
        let mut tmp = alloc::zeroed(alloc::product(&[out_width, last - first, channels])?)?;
        for (y, out) in tmp.chunks_exact_mut(out_width * channels).enumerate() {
            let line = &src[(y + first) * width * channels..(y + first + 1) * width * channels];
            for (xx, &(xmin, n)) in horiz.bounds.iter().enumerate() {
                let k = &horiz.kk[xx * horiz.ksize..xx * horiz.ksize + n];
                for c in 0..channels {
                    let mut ss = 0.0f64;
                    for (x, &kx) in k.iter().enumerate() {
                        ss += line[(x + xmin) * channels + c].wide() * kx;
                    }
                    out[xx * channels + c] = T::store(ss);
                }
            }
        }
        (std::borrow::Cow::Owned(tmp), out_width, first)
    } else {
        (std::borrow::Cow::Borrowed(src), width, 0)
    };
    if !need_v {
        let mut out = alloc::with_capacity(w * height * channels)?;
        out.extend_from_slice(&img[..w * height * channels]);
        return Ok(out);
    }
    let stride = w * channels;
    let mut out = alloc::zeroed(alloc::product(&[stride, out_height])?)?;
    for (yy, line) in out.chunks_exact_mut(stride).enumerate() {
        let (ymin, n) = vert.bounds[yy];
        let k = &vert.kk[yy * vert.ksize..yy * vert.ksize + n];
        for (i, px) in line.iter_mut().enumerate() {
            let mut ss = 0.0f64;
            for (y, &ky) in k.iter().enumerate() {
                ss += img[(y + ymin - offset) * stride + i].wide() * ky;
            }
            *px = T::store(ss);
        }
    }
    Ok(out)
}
