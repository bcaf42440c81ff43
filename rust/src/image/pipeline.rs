//! The preprocessing pipeline: encoded bytes -> decode -> resize (only the crop window) ->
//! normalize into a slot of the caller's batch buffer, timing each stage.
//!
//! Semantics are torchvision's ImageNet evaluation transform on Pillow images, so that a model
//! sees exactly what it was trained with: `Resize(shorter)` (the long side is
//! `int(shorter * long / short)`), `CenterCrop(crop)` (offsets `int(round((size - crop) / 2))`,
//! Python's round half to even), `ToTensor` (`x / 255` in float32) and `Normalize`
//! (`(x - mean) / std` in float32). Resize is Pillow's, bit-exact; normalization is a 256-entry
//! table per channel holding those float32 results, so it is exact too.
use super::decode::{self, DecodeError, DecodeOptions, Format, Image, Mode};
use super::jpeg::{self, Rect};
use super::resize::{resize_region_u8, source_span, Filter, Window};
use crate::error::ImageError;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resize {
    /// Scale so that the shorter side has this length, keeping the aspect ratio.
    Shorter(usize),
    /// Scale to exactly (width, height).
    Exact(usize, usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Nchw,
    Nhwc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    F32,
    F16,
    U8,
}

impl DType {
    pub fn size(self) -> usize {
        match self {
            Self::F32 => 4,
            Self::F16 => 2,
            Self::U8 => 1,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Spec {
    pub resize: Resize,
    /// (width, height) of the center crop; None keeps the whole resized image, which needs
    /// `Resize::Exact` so that every image of a batch has one size.
    pub crop: Option<(usize, usize)>,
    pub filter: Filter,
    pub mean: [f32; 3],
    pub std: [f32; 3],
    pub layout: Layout,
    pub dtype: DType,
    /// JPEG DCT-domain downscaling (Pillow's `draft`) when the target is at most half the source.
    pub draft: bool,
    pub max_pixels: Option<u64>,
    pub apply_exif_orientation: bool,
}

impl Spec {
    /// (width, height) of every output image.
    pub fn out_size(&self) -> Result<(usize, usize), String> {
        match (self.crop, self.resize) {
            (Some((w, h)), Resize::Shorter(s)) if w > s || h > s => Err(format!(
                "crop {w}x{h} is larger than the resized shorter side {s}; crop at most the resize size"
            )),
            (Some((cw, ch)), Resize::Exact(w, h)) if cw > w || ch > h => Err(format!(
                "crop {cw}x{ch} is larger than the resize size {w}x{h}"
            )),
            (Some(c), _) => Ok(c),
            (None, Resize::Exact(w, h)) => Ok((w, h)),
            (None, Resize::Shorter(_)) => Err(
                "images of different shapes cannot share a batch: give crop=..., or an exact \
                 size=(width, height)"
                    .into(),
            ),
        }
    }

    /// Bytes of one output image.
    pub fn image_bytes(&self) -> Result<usize, String> {
        let (w, h) = self.out_size()?;
        Ok(w * h * 3 * self.dtype.size())
    }
}

/// Nanoseconds spent in each stage for one image.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StageTimes {
    pub decode: u64,
    pub resize: u64,
    pub normalize: u64,
}

/// What `process_one` reports of one image besides its pixels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Processed {
    pub times: StageTimes,
    /// The (oriented, full-size) image's (width, height) when it is over `DEFAULT_MAX_PIXELS`
    /// (`Image::over_default_max_pixels`): the caller warns for it, as Pillow's default does.
    pub over_default_max_pixels: Option<(usize, usize)>,
}

/// torchvision's `Resize(int)` target size for an image of (w, h).
pub fn resized_size(resize: Resize, w: usize, h: usize) -> (usize, usize) {
    match resize {
        Resize::Exact(rw, rh) => (rw, rh),
        Resize::Shorter(s) => {
            // int(size * long / short) in Python: a float64 product and division, truncated.
            let long_of =
                |long: usize, short: usize| (s as f64 * long as f64 / short as f64) as usize;
            if w <= h {
                (s, long_of(h, w).max(1))
            } else {
                (long_of(w, h).max(1), s)
            }
        }
    }
}

/// torchvision's center-crop offset: `int(round((size - crop) / 2.0))`, halves to even.
pub fn center_offset(size: usize, crop: usize) -> usize {
    let d = size - crop;
    let half = d / 2;
    if d % 2 == 1 && half % 2 == 1 {
        half + 1
    } else {
        half
    }
}

/// Pillow's `draft` scale: the largest of 8, 4, 2, 1 not above `min(w // tw, h // th)`.
pub fn draft_denominator(w: usize, h: usize, tw: usize, th: usize) -> u32 {
    let scale = (w / tw.max(1)).min(h / th.max(1));
    [8u32, 4, 2, 1]
        .into_iter()
        .find(|&a| scale >= a as usize)
        .unwrap_or(1)
}

/// Per channel, the 256 possible outputs of a byte, as stored bytes of the output dtype.
pub struct Tables {
    f32: [[f32; 256]; 3],
    f16: [[u16; 256]; 3],
}

impl Tables {
    /// `ToTensor` (`x / 255`) then `Normalize`, each a float32 operation, as torch does them.
    pub fn new(mean: [f32; 3], std: [f32; 3]) -> Self {
        Self::build(mean, std, |v| v / 255.0)
    }

    /// torchvision v2's `ToDtype(float32, scale=True)` then `Normalize`: v2 scales by
    /// multiplying with `1 / 255` rounded to float32, which differs from `ToTensor`'s division
    /// for 126 of the 256 bytes.
    pub fn v2(mean: [f32; 3], std: [f32; 3]) -> Self {
        Self::build(mean, std, |v| v * (1.0f64 / 255.0) as f32)
    }

    fn build(mean: [f32; 3], std: [f32; 3], scale: impl Fn(f32) -> f32) -> Self {
        let mut f32t = [[0f32; 256]; 3];
        let mut f16t = [[0u16; 256]; 3];
        for c in 0..3 {
            for v in 0..256 {
                let x = (scale(v as f32) - mean[c]) / std[c];
                f32t[c][v] = x;
                f16t[c][v] = half::f16::from_f32(x).to_bits();
            }
        }
        Self {
            f32: f32t,
            f16: f16t,
        }
    }

    /// The float32 table, channel-major (3 x 256), native-endian bytes.
    pub fn f32_bytes(&self) -> Vec<u8> {
        self.f32
            .iter()
            .flatten()
            .flat_map(|v| v.to_ne_bytes())
            .collect()
    }

    /// The float16 table as IEEE bits, channel-major (3 x 256), native-endian bytes.
    pub fn f16_bytes(&self) -> Vec<u8> {
        self.f16
            .iter()
            .flatten()
            .flat_map(|v| v.to_ne_bytes())
            .collect()
    }
}

/// Writes the RGB `pixels` (w x h) into `out` as the output dtype and layout: a table lookup
/// per byte, plane by plane for NCHW, into a typed view of `out` (the batch slots are aligned
/// for their dtype; a misaligned buffer goes through a typed scratch copy).
pub(super) fn write_output(
    pixels: &[u8],
    w: usize,
    h: usize,
    (layout, dtype): (Layout, DType),
    tables: &Tables,
    out: &mut [u8],
) {
    debug_assert_eq!(pixels.len(), w * h * 3);
    match dtype {
        DType::U8 if layout == Layout::Nhwc => out.copy_from_slice(pixels),
        DType::U8 => lookup(pixels, layout, out, |_, v| v),
        DType::F32 => write_typed(pixels, layout, out, |c, v| tables.f32[c][usize::from(v)]),
        DType::F16 => write_typed(pixels, layout, out, |c, v| tables.f16[c][usize::from(v)]),
    }
}

/// `lookup` into `out` seen as `T`s (f32 or u16 bit patterns), whose bytes are native-endian.
fn write_typed<T: Copy + Default + NeBytes>(
    pixels: &[u8],
    layout: Layout,
    out: &mut [u8],
    f: impl Fn(usize, u8) -> T,
) {
    // SAFETY: f32 and u16 have no invalid bit patterns, so viewing initialized bytes as them is
    // sound; `align_to_mut` puts only whole, aligned elements in the middle part.
    let (head, typed, tail) = unsafe { out.align_to_mut::<T>() };
    if head.is_empty() && tail.is_empty() {
        lookup(pixels, layout, typed, f);
    } else {
        let mut scratch = vec![T::default(); pixels.len()];
        lookup(pixels, layout, &mut scratch, f);
        for (o, v) in out.chunks_exact_mut(std::mem::size_of::<T>()).zip(scratch) {
            v.put(o);
        }
    }
}

trait NeBytes {
    fn put(self, out: &mut [u8]);
}

impl NeBytes for f32 {
    fn put(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_ne_bytes());
    }
}

impl NeBytes for u16 {
    fn put(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_ne_bytes());
    }
}

/// `out[...] = f(channel, byte)` for every byte of the interleaved RGB `pixels`, in `layout`.
fn lookup<T: Copy>(pixels: &[u8], layout: Layout, out: &mut [T], f: impl Fn(usize, u8) -> T) {
    match layout {
        Layout::Nhwc => {
            for (o, px) in out.chunks_exact_mut(3).zip(pixels.chunks_exact(3)) {
                o[0] = f(0, px[0]);
                o[1] = f(1, px[1]);
                o[2] = f(2, px[2]);
            }
        }
        Layout::Nchw => {
            let plane = pixels.len() / 3;
            let (r, rest) = out.split_at_mut(plane);
            let (g, b) = rest.split_at_mut(plane);
            let planes = r.iter_mut().zip(g.iter_mut()).zip(b.iter_mut());
            for (((r, g), b), px) in planes.zip(pixels.chunks_exact(3)) {
                *r = f(0, px[0]);
                *g = f(1, px[1]);
                *b = f(2, px[2]);
            }
        }
    }
}

fn nanos(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// A decoded image, or the part of it the resize reads, placed in the whole (oriented, possibly
/// draft-scaled) image.
struct Decoded {
    img: Image,
    /// Where `img` sits in the whole decoded image.
    region: Window,
    /// The whole decoded image's (width, height).
    size: (usize, usize),
    /// The (width, height) the target size is computed from: the full-size image's, even after
    /// a draft decode, so that draft and exact mode crop the same region (Pillow: draft, then
    /// resize to the size computed before).
    full: (usize, usize),
}

/// Maps a rectangle between stored and oriented coordinates of a `w` x `h` stored image (the
/// flips are involutions, so one function serves both ways given the direction).
pub(super) fn map_rect(r: Window, o: u32, w: usize, h: usize, to_stored: bool) -> Window {
    let (swap, fx, fy) = decode::orientation_axes(o);
    let flip = |start: usize, len: usize, size: usize| size - start - len;
    let (mut x, mut y, mut rw, mut rh) = (r.x, r.y, r.width, r.height);
    if to_stored && swap {
        (x, y, rw, rh) = (y, x, rh, rw);
    }
    // Now in stored axes.
    if fx {
        x = flip(x, rw, w);
    }
    if fy {
        y = flip(y, rh, h);
    }
    if !to_stored && swap {
        (x, y, rw, rh) = (y, x, rh, rw);
    }
    Window {
        x,
        y,
        width: rw,
        height: rh,
    }
}

/// Decodes a JPEG, only the part that the crop window reads when that saves work
/// (libjpeg-turbo's partial decoding: the entropy decoding still runs over the whole file, but
/// IDCT, upsampling and colour conversion only over the region).
fn decode_jpeg(data: &[u8], spec: &Spec, crop: (usize, usize)) -> Result<Decoded, DecodeError> {
    let (sw, sh, _) = decode::stored_size(data)?;
    let o = if spec.apply_exif_orientation {
        decode::orientation(data, Format::Jpeg)
    } else {
        1
    };
    let swapped = decode::orientation_axes(o).0;
    let full = if swapped { (sh, sw) } else { (sw, sh) };
    let (rw, rh) = resized_size(spec.resize, full.0, full.1);
    let d = if spec.draft {
        let (tw, th) = if swapped { (rh, rw) } else { (rw, rh) };
        draft_denominator(sw, sh, tw, th)
    } else {
        1
    };
    let dd = d as usize;
    // The decoded image: stored (scaled) and oriented sizes.
    let (sdw, sdh) = (sw.div_ceil(dd), sh.div_ceil(dd));
    let size = if swapped { (sdh, sdw) } else { (sdw, sdh) };
    // A header without a size (a file cut short) gets no region: the decode reports it.
    let sane = sw > 0 && sh > 0 && rw >= crop.0 && rh >= crop.1;
    let want = sane.then(|| -> Result<Rect, DecodeError> {
        let window = crop_window((rw, rh), crop);
        let no_memory = |e| decode::no_memory(rw, rh, e);
        let (x0, x1) =
            source_span(size.0, rw, spec.filter, window.x, window.width).map_err(no_memory)?;
        let (y0, y1) =
            source_span(size.1, rh, spec.filter, window.y, window.height).map_err(no_memory)?;
        let r = Window {
            x: x0,
            y: y0,
            width: x1 - x0,
            height: y1 - y0,
        };
        let s = map_rect(r, o, sdw, sdh, true);
        Ok(Rect {
            x0: s.x,
            y0: s.y,
            x1: s.x + s.width,
            y1: s.y + s.height,
        })
    });
    let want = want.transpose()?;
    let (raw, got) = jpeg::decode_region(data, spec.max_pixels, d, want, spare_pixels())?;
    let mut img = decode::convert(raw, Mode::Rgb)?;
    if o != 1 {
        img = decode::orient(&img, o)?;
    }
    let got = Window {
        x: got.x0,
        y: got.y0,
        width: got.x1 - got.x0,
        height: got.y1 - got.y0,
    };
    Ok(Decoded {
        img,
        region: map_rect(got, o, sdw, sdh, false),
        size,
        full,
    })
}

fn crop_window((rw, rh): (usize, usize), (cw, ch): (usize, usize)) -> Window {
    Window {
        x: center_offset(rw, cw),
        y: center_offset(rh, ch),
        width: cw,
        height: ch,
    }
}

thread_local! {
    /// The last decoded image's pixel buffer on this thread, for the next JPEG decode.
    static SPARE_PIXELS: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

pub(super) fn spare_pixels() -> Vec<u8> {
    SPARE_PIXELS.with(|s| std::mem::take(&mut *s.borrow_mut()))
}

/// Keeps `pixels` for the next image unless it is larger than `KEEP_AT_MOST` (a 12-megapixel
/// RGB photo fits): what each pipeline thread may hold between batches.
pub(super) fn recycle_pixels(pixels: Vec<u8>) {
    const KEEP_AT_MOST: usize = 48 << 20;
    SPARE_PIXELS.with(|s| {
        let mut spare = s.borrow_mut();
        if pixels.capacity() > spare.capacity() && pixels.capacity() <= KEEP_AT_MOST {
            *spare = pixels;
        }
    });
}

/// Runs the pipeline on one encoded image, writing `spec.image_bytes()` bytes into `out`.
pub fn process_one(
    data: &[u8],
    spec: &Spec,
    tables: &Tables,
    out: &mut [u8],
) -> Result<Processed, DecodeError> {
    let (cw, ch) = spec
        .out_size()
        .map_err(|e| DecodeError::Unsupported("pipeline", e))?;
    let t0 = Instant::now();
    let dec = if decode::sniff(data)? == Format::Jpeg {
        decode_jpeg(data, spec, (cw, ch))?
    } else {
        let opts = DecodeOptions {
            mode: Mode::Rgb,
            apply_exif_orientation: spec.apply_exif_orientation,
            max_pixels: spec.max_pixels,
            scale_denom: 1,
        };
        let img = decode::decode(data, &opts)?;
        let size = (img.width, img.height);
        Decoded {
            img,
            region: Window {
                x: 0,
                y: 0,
                width: size.0,
                height: size.1,
            },
            size,
            full: size,
        }
    };
    let decode_ns = nanos(t0);
    let over_default_max_pixels = dec.img.over_default_max_pixels.then_some(dec.full);

    let t1 = Instant::now();
    let (rw, rh) = resized_size(spec.resize, dec.full.0, dec.full.1);
    let pixels = resize_region_u8(
        &dec.img.pixels,
        dec.region,
        dec.size.0,
        dec.size.1,
        3,
        rw,
        rh,
        spec.filter,
        crop_window((rw, rh), (cw, ch)),
    )
    .map_err(|e| match e {
        ImageError::NoMemory(m) => DecodeError::NoMemory(m),
        e => DecodeError::Unsupported("resize", e.to_string()),
    })?;
    let resize_ns = nanos(t1);
    recycle_pixels(dec.img.pixels);

    let t2 = Instant::now();
    write_output(&pixels, cw, ch, (spec.layout, spec.dtype), tables, out);
    Ok(Processed {
        times: StageTimes {
            decode: decode_ns,
            resize: resize_ns,
            normalize: nanos(t2),
        },
        over_default_max_pixels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torchvision_sizes_and_offsets() {
        assert_eq!(resized_size(Resize::Shorter(256), 640, 480), (341, 256));
        assert_eq!(resized_size(Resize::Shorter(256), 480, 640), (256, 341));
        assert_eq!(resized_size(Resize::Shorter(256), 1920, 1080), (455, 256));
        assert_eq!(resized_size(Resize::Shorter(256), 500, 500), (256, 256));
        // round half to even: (257 - 224) / 2 = 16.5 -> 16; (259 - 224) / 2 = 17.5 -> 18
        assert_eq!(center_offset(257, 224), 16);
        assert_eq!(center_offset(259, 224), 18);
        assert_eq!(center_offset(256, 224), 16);
        assert_eq!(center_offset(224, 224), 0);
        assert_eq!(draft_denominator(4032, 3024, 341, 256), 8);
        assert_eq!(draft_denominator(1920, 1080, 455, 256), 4);
        assert_eq!(draft_denominator(640, 480, 341, 256), 1);
    }
}
