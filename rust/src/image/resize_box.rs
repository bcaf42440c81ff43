//! Resize of a source region given in float pixel coordinates, Pillow's
//! `Image.resize(size, resample, box=..., reducing_gap=...)`: the box's edges go into the
//! filter weights as Pillow's `precompute_coeffs(in0, in1)` (C floats), NEAREST samples the
//! box as Pillow's affine transform does, and an integer box of the output's size is a crop.
//! With `reduce`, the source is first `reduce`d (the first step of Pillow's `reducing_gap`;
//! the facade computes the factor and boxes as Pillow's Python does).
use super::alloc;
use super::reduce::{self, IntBox};
use super::resize::{no_memory, Filter, Window};
use super::resize_kernels as kernels;
use super::resize_passes::{convolve, Job, Origin};
use super::resize_wide::{convolve_wide, Wide};
use crate::error::ImageError;

/// `(x0, y0, x1, y1)` of the source, as the C floats Pillow parses them into.
pub type FloatBox = [f32; 4];

/// A `reduce` by `(fx, fy)` over an integer box that runs before the resize.
#[derive(Debug, Clone, Copy)]
pub struct PreReduce {
    pub factor: (usize, usize),
    pub bx: IntBox,
}

/// The checks of Pillow's `_resize`, with its messages.
fn check_box(
    width: usize,
    height: usize,
    out: (usize, usize),
    bx: FloatBox,
) -> Result<(), ImageError> {
    let bad = |m: &str| {
        Err(ImageError::InvalidSize(format!(
            "{m}: box {bx:?}, image {width}x{height}"
        )))
    };
    if out.0 < 1 || out.1 < 1 {
        return Err(ImageError::InvalidSize(
            "height and width must be > 0".into(),
        ));
    }
    if bx.iter().any(|v| v.is_nan()) {
        return bad("box coordinates must be numbers");
    }
    if bx[0] < 0.0 || bx[1] < 0.0 {
        return bad("box offset can't be negative");
    }
    if bx[2] > width as f32 || bx[3] > height as f32 {
        return bad("box can't exceed original image size");
    }
    // Pillow refuses only negative sizes: a zero-width box samples one column.
    if bx[2] - bx[0] < 0.0 || bx[3] - bx[1] < 0.0 {
        return bad("box can't be empty");
    }
    Ok(())
}

/// Pillow's crop shortcut: an integer-offset box exactly the output's size is copied.
// Exact float comparisons: Pillow's C compares the box exactly.
#[allow(clippy::float_cmp)]
fn crop_origin(bx: FloatBox, (ow, oh): (usize, usize)) -> Option<(usize, usize)> {
    let whole = |v: f32| v.fract() == 0.0;
    (whole(bx[0]) && bx[2] - bx[0] == ow as f32 && whole(bx[1]) && bx[3] - bx[1] == oh as f32)
        .then_some((bx[0] as usize, bx[1] as usize))
}

/// Pillow's NEAREST (`ImagingScaleAffine`) over `[x0, x1)`: source index `COORD(xo)` with `xo`
/// from `x0 + a / 2` advanced by repeated f64 addition; None where it falls outside (Pillow
/// fills those pixels with 0).
fn nearest_box_table(
    in_size: usize,
    x0: f32,
    x1: f32,
    out: usize,
) -> Result<Vec<Option<usize>>, ImageError> {
    let a = f64::from(x1 - x0) / out as f64;
    let mut xo = f64::from(x0) + a * 0.5;
    let mut t = alloc::with_capacity(out).map_err(no_memory)?;
    for _ in 0..out {
        t.push((xo >= 0.0 && (xo as usize) < in_size).then_some(xo as usize));
        xo += a;
    }
    Ok(t)
}

/// Pillow's NEAREST for its "special" modes (I;16), which runs the generic transform: each
/// source index is `COORD(a * (x + 0.5) + x0)`, computed on its own rather than accumulated.
fn nearest_generic_table(
    in_size: usize,
    x0: f32,
    x1: f32,
    out: usize,
) -> Result<Vec<Option<usize>>, ImageError> {
    let a = f64::from(x1 - x0) / out as f64;
    let mut t = alloc::with_capacity(out).map_err(no_memory)?;
    for x in 0..out {
        let xo = a * (x as f64 + 0.5) + f64::from(x0);
        t.push((xo >= 0.0 && (xo as usize) < in_size).then_some(xo as usize));
    }
    Ok(t)
}

/// Copies pixels of `channels` values: `pick(x, y)` names the source pixel of output (x, y).
fn gather<T: alloc::Zeroable>(
    src: &[T],
    width: usize,
    channels: usize,
    (ow, oh): (usize, usize),
    xs: &[Option<usize>],
    ys: &[Option<usize>],
) -> Result<Vec<T>, ImageError> {
    let mut out = alloc::zeroed(alloc::product(&[ow, oh, channels]).map_err(no_memory)?)
        .map_err(no_memory)?;
    for (line, sy) in out.chunks_exact_mut(ow * channels).zip(ys) {
        let Some(sy) = sy else { continue };
        for (px, sx) in line.chunks_exact_mut(channels).zip(xs) {
            if let Some(sx) = sx {
                let at = (sy * width + sx) * channels;
                px.copy_from_slice(&src[at..at + channels]);
            }
        }
    }
    Ok(out)
}

/// Pillow resizes an image with no pixels to zeros (its weights are all 0), once the box passes
/// its checks.
fn empty_source<T: alloc::Zeroable>(
    width: usize,
    height: usize,
    channels: usize,
    out: (usize, usize),
    bx: FloatBox,
) -> Result<Vec<T>, ImageError> {
    check_box(width, height, out, bx)?;
    alloc::zeroed(alloc::product(&[out.0, out.1, channels]).map_err(no_memory)?).map_err(no_memory)
}

fn crop_table(start: usize, len: usize) -> Result<Vec<Option<usize>>, ImageError> {
    let mut t = alloc::with_capacity(len).map_err(no_memory)?;
    t.extend((start..start + len).map(Some));
    Ok(t)
}

/// Resizes the `bx` region of an 8-bit image (1, 3 or 4 channels) to `out_width` x
/// `out_height`. `premultiply` (4 channels) is Pillow's RGBA: the work runs on RGBa and the
/// result converts back (NEAREST excepted, as in Pillow).
#[allow(clippy::too_many_arguments)]
pub fn resize_box_u8(
    src: &[u8],
    width: usize,
    height: usize,
    channels: usize,
    (out_width, out_height): (usize, usize),
    filter: Filter,
    bx: FloatBox,
    premultiply: bool,
    pre: Option<PreReduce>,
) -> Result<Vec<u8>, ImageError> {
    if !matches!(channels, 1 | 3 | 4) || (premultiply && channels != 4) {
        return Err(ImageError::Unsupported(format!(
            "resize takes 1 (L), 3 (RGB) or 4 (RGBA) channels, got {channels}"
        )));
    }
    if Ok(src.len()) != alloc::product(&[width, height, channels]) {
        return Err(ImageError::InvalidSize(format!(
            "buffer of {} bytes is not {width}x{height}x{channels}",
            src.len()
        )));
    }
    if width == 0 || height == 0 {
        return empty_source(width, height, channels, (out_width, out_height), bx);
    }
    let premultiply = premultiply && filter != Filter::Nearest;
    let Some(pre) = pre.filter(|_| filter != Filter::Nearest) else {
        return resize_box_plain(
            src,
            width,
            height,
            channels,
            (out_width, out_height),
            filter,
            bx,
            premultiply,
        );
    };
    // Pillow converts RGBA to RGBa once, then reduces and resizes RGBa.
    let mut owned;
    let source = if premultiply {
        owned = alloc::zeroed(src.len()).map_err(no_memory)?;
        kernels::premultiply(src, &mut owned);
        &owned[..]
    } else {
        src
    };
    let (small, w, h) = reduce::reduce_u8(source, width, height, channels, pre.factor, pre.bx)?;
    owned = resize_box_plain(
        &small,
        w,
        h,
        channels,
        (out_width, out_height),
        filter,
        bx,
        false,
    )?;
    if premultiply {
        kernels::unpremultiply(&mut owned);
    }
    Ok(owned)
}

#[allow(clippy::too_many_arguments)]
fn resize_box_plain(
    src: &[u8],
    width: usize,
    height: usize,
    channels: usize,
    out: (usize, usize),
    filter: Filter,
    bx: FloatBox,
    premultiply: bool,
) -> Result<Vec<u8>, ImageError> {
    check_box(width, height, out, bx)?;
    if let Some((x, y)) = crop_origin(bx, out) {
        let mut o = gather(
            src,
            width,
            channels,
            out,
            &crop_table(x, out.0)?,
            &crop_table(y, out.1)?,
        )?;
        if premultiply {
            // Pillow crops the RGBa image: the round trip to RGBa and back is not lossless.
            let mut copy = alloc::zeroed(o.len()).map_err(no_memory)?;
            copy.copy_from_slice(&o);
            kernels::premultiply(&copy, &mut o);
            kernels::unpremultiply(&mut o);
        }
        return Ok(o);
    }
    if filter == Filter::Nearest {
        let xs = nearest_box_table(width, bx[0], bx[2], out.0)?;
        let ys = nearest_box_table(height, bx[1], bx[3], out.1)?;
        return gather(src, width, channels, out, &xs, &ys);
    }
    let window = Window {
        x: 0,
        y: 0,
        width: out.0,
        height: out.1,
    };
    let job = Job {
        src,
        origin: Origin { x: 0, y: 0, width },
        width,
        height,
        channels,
        out_width: out.0,
        out_height: out.1,
        filter,
        window,
        premultiply,
        bx,
    };
    let mut o = alloc::zeroed(alloc::product(&[out.0, out.1, channels]).map_err(no_memory)?)
        .map_err(no_memory)?;
    convolve(&job, &mut o).map_err(no_memory)?;
    if premultiply {
        kernels::unpremultiply(&mut o);
    }
    Ok(o)
}

/// `resize_box_u8` for Pillow's double-precision modes, each of `channels` a mode "F" (f32),
/// "I" (i32) or "I;16" (u16) image. Pillow's `reduce` refuses I;16, so `pre` must be None
/// for it (the binding checks).
#[allow(clippy::too_many_arguments)]
pub fn resize_box_wide<T: Wide>(
    src: &[T],
    width: usize,
    height: usize,
    channels: usize,
    out: (usize, usize),
    filter: Filter,
    bx: FloatBox,
    pre: Option<PreReduce>,
) -> Result<Vec<T>, ImageError> {
    if channels == 0 || Ok(src.len()) != alloc::product(&[width, height, channels]) {
        return Err(ImageError::InvalidSize(format!(
            "buffer of {} values is not {width}x{height}x{channels}",
            src.len()
        )));
    }
    if width == 0 || height == 0 {
        return empty_source(width, height, channels, out, bx);
    }
    if let Some(pre) = pre.filter(|_| filter != Filter::Nearest) {
        let (small, w, h) = reduce::reduce_wide(src, width, height, channels, pre.factor, pre.bx)?;
        return resize_box_wide(&small, w, h, channels, out, filter, bx, None);
    }
    check_box(width, height, out, bx)?;
    if let Some((x, y)) = crop_origin(bx, out) {
        return gather(
            src,
            width,
            channels,
            out,
            &crop_table(x, out.0)?,
            &crop_table(y, out.1)?,
        );
    }
    if filter == Filter::Nearest {
        let table = if T::SPECIAL {
            nearest_generic_table
        } else {
            nearest_box_table
        };
        let xs = table(width, bx[0], bx[2], out.0)?;
        let ys = table(height, bx[1], bx[3], out.1)?;
        return gather(src, width, channels, out, &xs, &ys);
    }
    convolve_wide(src, width, height, channels, out.0, out.1, filter, bx).map_err(no_memory)
}

/// Pillow's `reduce` of an 8-bit image; `premultiply` (4 channels) runs it on RGBa, as Pillow
/// does for RGBA, and converts the result back.
pub fn reduce_u8_alpha(
    src: &[u8],
    width: usize,
    height: usize,
    channels: usize,
    factor: (usize, usize),
    bx: IntBox,
    premultiply: bool,
) -> Result<(Vec<u8>, usize, usize), ImageError> {
    if !premultiply {
        return reduce::reduce_u8(src, width, height, channels, factor, bx);
    }
    if channels != 4 {
        return Err(ImageError::Unsupported(format!(
            "alpha premultiplication needs 4 channels (RGBA), got {channels}"
        )));
    }
    let mut owned = alloc::zeroed(src.len()).map_err(no_memory)?;
    kernels::premultiply(src, &mut owned);
    let (mut out, w, h) = reduce::reduce_u8(&owned, width, height, channels, factor, bx)?;
    kernels::unpremultiply(&mut out);
    Ok((out, w, h))
}
