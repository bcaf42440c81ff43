//! `reduce`: shrinking by integer factors, bit-exact with Pillow's `Image.reduce`
//! (libImaging/Reduce.c). Each output pixel averages one `fx` x `fy` block of the source box;
//! the last column and row average the partial blocks left over (Pillow's `ReduceCorners`).
//!
//! Reduce.c special-cases 1xN, Nx1, 2x2, 3x3, 4x4 and 5x5 only for speed: every 8-bit path
//! computes `((sum + n / 2) * multiplier) >> 24` with Pillow's float-derived `multiplier` (the
//! power-of-two cases shift instead, which is the same number), so one formula reproduces all.
//! The 32bpc path (modes F and I) sums in Pillow's order, pairs and quads in the sample type
//! first (f32 rounds, int32 wraps), since that order shows in the result.
use super::alloc;
use super::resize::no_memory;
use super::resize_wide::Wide;
use crate::error::ImageError;

/// The source rectangle reduced, `(x0, y0, x1, y1)` in whole pixels.
pub type IntBox = [usize; 4];

/// Pillow's `division_UINT32(divider, 8)`: 2^32 / (256 * n), computed in C float and
/// truncated, overflow of the int product included.
fn multiplier(n: usize) -> u32 {
    let dividend = 256i32.wrapping_mul(n as i32) as u32;
    (4_294_967_296.0f32 / dividend as f32) as u32
}

/// The checks of Pillow's `_reduce`, with its messages.
fn check(
    width: usize,
    height: usize,
    (fx, fy): (usize, usize),
    bx: IntBox,
) -> Result<(usize, usize), ImageError> {
    if fx < 1 || fy < 1 {
        return Err(ImageError::InvalidSize("scale must be > 0".into()));
    }
    if bx[2] > width || bx[3] > height {
        return Err(ImageError::InvalidSize(format!(
            "box can't exceed original image size ({width}x{height}), got {bx:?}"
        )));
    }
    if bx[2] <= bx[0] || bx[3] <= bx[1] {
        return Err(ImageError::InvalidSize(format!(
            "box can't be empty, got {bx:?}"
        )));
    }
    let (bw, bh) = (bx[2] - bx[0], bx[3] - bx[1]);
    Ok((bw.div_ceil(fx), bh.div_ceil(fy)))
}

fn check_len(len: usize, width: usize, height: usize, channels: usize) -> Result<(), ImageError> {
    if channels == 0 || Ok(len) != alloc::product(&[width, height, channels]) {
        return Err(ImageError::InvalidSize(format!(
            "buffer of {len} values is not {width}x{height}x{channels}"
        )));
    }
    Ok(())
}

/// Reduces an 8-bit image of `channels` interleaved channels (each reduced on its own) by
/// `factor` over `bx`; returns the result and its width and height.
pub fn reduce_u8(
    src: &[u8],
    width: usize,
    height: usize,
    channels: usize,
    factor: (usize, usize),
    bx: IntBox,
) -> Result<(Vec<u8>, usize, usize), ImageError> {
    check_len(src.len(), width, height, channels)?;
    let (ow, oh) = check(width, height, factor, bx)?;
    let (fx, fy) = factor;
    let mut out = alloc::zeroed(alloc::product(&[ow, oh, channels]).map_err(no_memory)?)
        .map_err(no_memory)?;
    let mut sums = alloc::zeroed::<u32>(channels).map_err(no_memory)?;
    let stride = width * channels;
    for y in 0..oh {
        let rows = bx[1] + y * fy..(bx[1] + (y + 1) * fy).min(bx[3]);
        for x in 0..ow {
            let cols = bx[0] + x * fx..(bx[0] + (x + 1) * fx).min(bx[2]);
            // Partial blocks at the right and bottom edge average what they hold.
            let n = rows.len() * cols.len();
            let amend = (n / 2) as u32;
            sums.fill(amend);
            for r in rows.clone() {
                let line =
                    &src[r * stride + cols.start * channels..r * stride + cols.end * channels];
                for px in line.chunks_exact(channels) {
                    for (s, &v) in sums.iter_mut().zip(px) {
                        *s = s.wrapping_add(u32::from(v));
                    }
                }
            }
            let m = multiplier(n);
            let at = (y * ow + x) * channels;
            for (o, &s) in out[at..at + channels].iter_mut().zip(&sums) {
                *o = (s.wrapping_mul(m) >> 24) as u8;
            }
        }
    }
    Ok((out, ow, oh))
}

/// `reduce_u8` for float32 and int32 images (each channel a Pillow mode "F" or "I" image).
pub fn reduce_wide<T: Wide>(
    src: &[T],
    width: usize,
    height: usize,
    channels: usize,
    factor: (usize, usize),
    bx: IntBox,
) -> Result<(Vec<T>, usize, usize), ImageError> {
    check_len(src.len(), width, height, channels)?;
    let (ow, oh) = check(width, height, factor, bx)?;
    let (fx, fy) = factor;
    let mut out = alloc::zeroed(alloc::product(&[ow, oh, channels]).map_err(no_memory)?)
        .map_err(no_memory)?;
    let at = |r: usize, c: usize, ch: usize| src[(r * width + c) * channels + ch];
    for y in 0..oh {
        let y0 = bx[1] + y * fy;
        for x in 0..ow {
            let x0 = bx[0] + x * fx;
            let full = x0 + fx <= bx[2] && y0 + fy <= bx[3];
            for ch in 0..channels {
                let p = |r: usize, c: usize| at(r, c, ch);
                let ss = if full {
                    block_sum(&p, x0, y0, fx, fy) * (1.0 / (fy * fx) as f64)
                } else {
                    // ReduceCorners_32bpc: a plain f64 sum, row by row.
                    let (x1, y1) = ((x0 + fx).min(bx[2]), (y0 + fy).min(bx[3]));
                    let mut ss = 0.0f64;
                    for r in y0..y1 {
                        for c in x0..x1 {
                            ss += p(r, c).wide();
                        }
                    }
                    ss * (1.0 / ((x1 - x0) * (y1 - y0)) as f64)
                };
                out[(y * ow + x) * channels + ch] = T::store(ss);
            }
        }
    }
    Ok((out, ow, oh))
}

/// Pillow's `ReduceNxN_32bpc` sum of one full block: two rows and two columns at a time, the
/// four (or two) values added in the sample type before the f64 total, then the odd column
/// and row.
fn block_sum<T: Wide>(
    p: &impl Fn(usize, usize) -> T,
    x0: usize,
    y0: usize,
    fx: usize,
    fy: usize,
) -> f64 {
    let mut ss = 0.0f64;
    let mut yy = y0;
    while yy + 1 < y0 + fy {
        let mut xx = x0;
        while xx + 1 < x0 + fx {
            ss += p(yy, xx)
                .add(p(yy, xx + 1))
                .add(p(yy + 1, xx))
                .add(p(yy + 1, xx + 1))
                .wide();
            xx += 2;
        }
        if fx & 1 == 1 {
            ss += p(yy, xx).add(p(yy + 1, xx)).wide();
        }
        yy += 2;
    }
    if fy & 1 == 1 {
        let mut xx = x0;
        while xx + 1 < x0 + fx {
            ss += p(yy, xx).add(p(yy, xx + 1)).wide();
            xx += 2;
        }
        if fx & 1 == 1 {
            ss += p(yy, xx).wide();
        }
    }
    ss
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn averages_blocks_and_partial_edges() {
        // 3x1 -> factor 2: one full block (1, 3) and the partial last pixel (7).
        let (out, w, h) = reduce_u8(&[1, 3, 7], 3, 1, 1, (2, 1), [0, 0, 3, 1]).unwrap();
        assert_eq!((out, w, h), (vec![2, 7], 2, 1));
        assert_eq!(multiplier(4), 1 << 22);
        assert!(reduce_u8(&[0; 4], 2, 2, 1, (0, 1), [0, 0, 2, 2]).is_err());
        assert!(reduce_u8(&[0; 4], 2, 2, 1, (1, 1), [1, 0, 1, 2]).is_err());
    }
}
