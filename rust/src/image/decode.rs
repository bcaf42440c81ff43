//! Decoding JPEG and PNG bytes to 8-bit pixels identical to Pillow's
//! `ImageOps.exif_transpose(Image.open(f)).convert(mode)`.
//!
//! The decoders give the file's own channels (`Raw`); the mode conversions here are Pillow's
//! (libImaging/Convert.c) so that, e.g., `mode="L"` of a colour JPEG is Pillow's ITU-R 601 luma of
//! the decoded RGB, not libjpeg's Y channel, which differs by rounding.
use super::alloc::{self, AllocError};
pub use crate::error::DecodeError;

/// The error of an image whose buffers could not be allocated.
pub fn no_memory(width: usize, height: usize, e: AllocError) -> DecodeError {
    DecodeError::NoMemory(format!(
        "a {width}x{height} image needs buffers that failed ({e})"
    ))
}

/// Pillow's default `Image.MAX_IMAGE_PIXELS` (1024 * 1024 * 1024 // 4 // 3).
pub const DEFAULT_MAX_PIXELS: u64 = 89_478_485;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawKind {
    L,
    La,
    Rgb,
    Rgba,
    Cmyk,
}

impl RawKind {
    pub fn channels(self) -> usize {
        match self {
            Self::L => 1,
            Self::La => 2,
            Self::Rgb => 3,
            Self::Rgba | Self::Cmyk => 4,
        }
    }
}

/// A decoded image in the file's own channel layout.
#[derive(Debug, Clone)]
pub struct Raw {
    pub width: usize,
    pub height: usize,
    pub kind: RawKind,
    pub pixels: Vec<u8>,
    /// The file's header size is over `DEFAULT_MAX_PIXELS` (`check_pixels`).
    pub over_default_max_pixels: bool,
}

/// The channels asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    L,
    Rgb,
    Rgba,
    /// The file's own channels: L, LA, RGB, RGBA or CMYK (palettes expanded to RGB or RGBA).
    Unchanged,
}

impl Mode {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "L" => Self::L,
            "RGB" => Self::Rgb,
            "RGBA" => Self::Rgba,
            "unchanged" => Self::Unchanged,
            _ => return None,
        })
    }
}

/// A decoded image: `height` rows of `width` pixels of `channels` interleaved bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub width: usize,
    pub height: usize,
    pub channels: usize,
    pub pixels: Vec<u8>,
    /// The whole file's header size (whatever region or draft scale was decoded) is over
    /// `DEFAULT_MAX_PIXELS` and within the caller's limit: Pillow's default pair of limits decodes
    /// such an image with a `DecompressionBombWarning`. The flag travels with the image so that
    /// a caller warns for its own images only (`check_pixels`).
    pub over_default_max_pixels: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Jpeg,
    Png,
}

#[derive(Debug, Clone, Copy)]
pub struct DecodeOptions {
    pub mode: Mode,
    pub apply_exif_orientation: bool,
    pub max_pixels: Option<u64>,
    /// JPEG only: DCT-domain downscale by 1, 2, 4 or 8 (Pillow's `draft`).
    pub scale_denom: u32,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        Self {
            mode: Mode::Rgb,
            apply_exif_orientation: true,
            max_pixels: Some(DEFAULT_MAX_PIXELS),
            scale_denom: 1,
        }
    }
}

/// Refuses an empty image and one over `max`; else says whether it is over `DEFAULT_MAX_PIXELS`
/// (the image's `over_default_max_pixels`). A comparison on the header's size, made once per
/// image where the size is checked anyway.
pub fn check_pixels(width: usize, height: usize, max: Option<u64>) -> Result<bool, DecodeError> {
    let pixels = width as u64 * height as u64;
    if width == 0 || height == 0 {
        return Err(DecodeError::Corrupt(
            "image",
            format!("header declares an empty {width}x{height} image"),
        ));
    }
    match max {
        Some(limit) if pixels > limit => Err(DecodeError::TooLarge {
            width,
            height,
            pixels,
            limit,
        }),
        _ => Ok(pixels > DEFAULT_MAX_PIXELS),
    }
}

pub fn sniff(data: &[u8]) -> Result<Format, DecodeError> {
    if data.is_empty() {
        return Err(DecodeError::Empty);
    }
    if data.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Ok(Format::Jpeg)
    } else if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        Ok(Format::Png)
    } else {
        let head: Vec<String> = data.iter().take(8).map(|b| format!("{b:02x}")).collect();
        Err(DecodeError::UnknownFormat(format!(
            "bytes {}",
            head.join(" ")
        )))
    }
}

/// Width and height as stored in the header, before any EXIF rotation (cheap: no pixel decoding).
pub fn stored_size(data: &[u8]) -> Result<(usize, usize, Format), DecodeError> {
    match sniff(data)? {
        Format::Jpeg => {
            let info = super::jpeg::read_info(data)?;
            Ok((info.width, info.height, Format::Jpeg))
        }
        Format::Png => {
            let reader = png::Decoder::new(std::io::Cursor::new(data))
                .read_info()
                .map_err(|e| DecodeError::Corrupt("PNG", e.to_string()))?;
            let info = reader.info();
            Ok((info.width as usize, info.height as usize, Format::Png))
        }
    }
}

/// A rough relative cost of decoding `data`, so that a batch can start its slowest images
/// first: the encoded size, four times over for a progressive JPEG, whose passes over the
/// coefficients make each byte about four times as slow (1080p photos: 5 and 8 ms for baseline
/// 4:2:0 and 4:4:4 files of 410 and 520 kB, 15 and 21 ms for progressive ones of 316 and 350 kB).
pub fn cost_estimate(data: &[u8]) -> usize {
    if progressive_jpeg(data) {
        data.len() * 4
    } else {
        data.len()
    }
}

/// Whether `data` is a JPEG whose frame header (SOFn) is progressive; walks only the marker
/// segments before it.
fn progressive_jpeg(data: &[u8]) -> bool {
    if !data.starts_with(&[0xFF, 0xD8]) {
        return false;
    }
    let mut i = 2;
    while i + 4 <= data.len() {
        if data[i] != 0xFF {
            return false;
        }
        match data[i + 1] {
            // Fill bytes before a marker code.
            0xFF => i += 1,
            0xC2 | 0xC6 | 0xCA | 0xCE => return true,
            0xC0 | 0xC1 | 0xC3 | 0xC5 | 0xC7 | 0xC9 | 0xCB | 0xCD | 0xCF | 0xD9 | 0xDA => {
                return false
            }
            0x01 | 0xD0..=0xD7 => i += 2,
            _ => i += 2 + usize::from(u16::from_be_bytes([data[i + 2], data[i + 3]])),
        }
    }
    false
}

/// EXIF orientation (1-8) of the file as Pillow's `ImageOps.exif_transpose` finds it, 1 when
/// absent or unreadable (`orientation.rs`).
pub fn orientation(data: &[u8], format: Format) -> u32 {
    match format {
        Format::Jpeg => super::orientation::jpeg(data),
        Format::Png => super::orientation::png(data).unwrap_or(1),
    }
}

/// Decodes one JPEG or PNG file.
pub fn decode(data: &[u8], opts: &DecodeOptions) -> Result<Image, DecodeError> {
    let format = sniff(data)?;
    let (raw, png_orientation) = match format {
        Format::Jpeg => (
            super::jpeg::decode(data, opts.max_pixels, opts.scale_denom)?,
            None,
        ),
        Format::Png => {
            let out = super::png::decode(data, opts.max_pixels)?;
            (out.raw, Some(out.orientation))
        }
    };
    let mut img = convert(raw, opts.mode)?;
    if opts.apply_exif_orientation {
        let o = png_orientation.unwrap_or_else(|| orientation(data, format));
        if o != 1 {
            img = orient(&img, o)?;
        }
    }
    Ok(img)
}

/// Pillow's `L24`: ITU-R 601-2 luma in 16-bit fixed point, rounded.
#[inline]
fn luma(r: u8, g: u8, b: u8) -> u8 {
    ((u32::from(r) * 19595 + u32::from(g) * 38470 + u32::from(b) * 7471 + 0x8000) >> 16) as u8
}

/// Pillow's `MULDIV255`: a * b / 255 rounded, in integers.
#[inline]
fn muldiv255(a: u8, b: u8) -> u8 {
    let t = u32::from(a) * u32::from(b) + 128;
    (((t >> 8) + t) >> 8) as u8
}

/// Pillow's `cmyk2rgb`.
#[inline]
fn cmyk_to_rgb(p: &[u8]) -> [u8; 3] {
    let nk = 255 - p[3];
    [
        nk.saturating_sub(muldiv255(p[0], nk)),
        nk.saturating_sub(muldiv255(p[1], nk)),
        nk.saturating_sub(muldiv255(p[2], nk)),
    ]
}

/// Converts to `mode` with Pillow's conversions (alpha dropped, not composited, as Pillow does).
pub fn convert(raw: Raw, mode: Mode) -> Result<Image, DecodeError> {
    use RawKind as K;
    let (w, h, over_default_max_pixels) = (raw.width, raw.height, raw.over_default_max_pixels);
    let src = &raw.pixels;
    let out_channels = match (mode, raw.kind) {
        (Mode::Unchanged, k) => k.channels(),
        (Mode::L, _) => 1,
        (Mode::Rgb, _) => 3,
        (Mode::Rgba, _) => 4,
    };
    let keep = matches!(
        (mode, raw.kind),
        (Mode::Unchanged, _) | (Mode::L, K::L) | (Mode::Rgb, K::Rgb) | (Mode::Rgba, K::Rgba)
    );
    if keep {
        return Ok(Image {
            width: w,
            height: h,
            channels: out_channels,
            pixels: raw.pixels,
            over_default_max_pixels,
        });
    }
    let mut out = alloc::product(&[w, h, out_channels])
        .and_then(alloc::with_capacity)
        .map_err(|e| no_memory(w, h, e))?;
    let cin = raw.kind.channels();
    for p in src.chunks_exact(cin) {
        let (rgb, a) = match raw.kind {
            K::L => ([p[0]; 3], 255),
            K::La => ([p[0]; 3], p[1]),
            K::Rgb => ([p[0], p[1], p[2]], 255),
            K::Rgba => ([p[0], p[1], p[2]], p[3]),
            K::Cmyk => (cmyk_to_rgb(p), 255),
        };
        match mode {
            // L from gray keeps the sample itself (luma of r=g=b is exact anyway).
            Mode::L => out.push(if matches!(raw.kind, K::L | K::La) {
                p[0]
            } else {
                luma(rgb[0], rgb[1], rgb[2])
            }),
            Mode::Rgb => out.extend_from_slice(&rgb),
            Mode::Rgba => out.extend_from_slice(&[rgb[0], rgb[1], rgb[2], a]),
            Mode::Unchanged => unreachable!("handled above"),
        }
    }
    Ok(Image {
        width: w,
        height: h,
        channels: out_channels,
        pixels: out,
        over_default_max_pixels,
    })
}

/// An EXIF orientation as (swap axes, flip x, flip y) of the output relative to the source,
/// the flips being of the source's axes. Pillow's methods: 2 FLIP_LEFT_RIGHT, 3 ROTATE_180,
/// 4 FLIP_TOP_BOTTOM, 5 TRANSPOSE, 6 ROTATE_270, 7 TRANSVERSE, 8 ROTATE_90.
pub fn orientation_axes(orientation: u32) -> (bool, bool, bool) {
    match orientation {
        2 => (false, true, false),
        3 => (false, true, true),
        4 => (false, false, true),
        5 => (true, false, false),
        6 => (true, false, true),
        7 => (true, true, true),
        8 => (true, true, false),
        _ => (false, false, false),
    }
}

/// Applies an EXIF orientation (2-8) like Pillow's `ImageOps.exif_transpose`.
pub fn orient(img: &Image, orientation: u32) -> Result<Image, DecodeError> {
    let (w, h, c) = (img.width, img.height, img.channels);
    let mut out = alloc::zeroed(img.pixels.len()).map_err(|e| no_memory(w, h, e))?;
    if !(2..=8).contains(&orientation) {
        out.copy_from_slice(&img.pixels);
        return Ok(Image {
            pixels: out,
            ..*img
        });
    }
    let (swap, fx, fy) = orientation_axes(orientation);
    let (ow, oh) = if swap { (h, w) } else { (w, h) };
    for oy in 0..oh {
        for ox in 0..ow {
            // Output (ox, oy) reads source (sx, sy).
            let (mut sx, mut sy) = if swap { (oy, ox) } else { (ox, oy) };
            // The flips are of the source's axes (for a swap, fx flips what becomes the
            // output's y).
            if fx {
                sx = w - 1 - sx;
            }
            if fy {
                sy = h - 1 - sy;
            }
            let s = (sy * w + sx) * c;
            let d = (oy * ow + ox) * c;
            out[d..d + c].copy_from_slice(&img.pixels[s..s + c]);
        }
    }
    Ok(Image {
        width: ow,
        height: oh,
        channels: c,
        pixels: out,
        over_default_max_pixels: img.over_default_max_pixels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_pixels_flags_images_over_the_default_limit() {
        let m = DEFAULT_MAX_PIXELS as usize;
        assert_eq!(check_pixels(m, 1, None), Ok(false));
        assert_eq!(check_pixels(m + 1, 1, None), Ok(true));
        assert_eq!(check_pixels(9000, 10_000, Some(2 * m as u64)), Ok(true));
        assert_eq!(
            check_pixels(640, 480, Some(1000)).unwrap_err().reason(),
            "too_large"
        );
        assert_eq!(check_pixels(0, 480, None).unwrap_err().reason(), "corrupt");
    }

    #[test]
    fn progressive_jpegs_cost_more_per_byte() {
        // SOI, an APP0 segment, fill bytes, then the frame header's marker.
        let file = |sof: u8| [0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 1, 2, 0xFF, 0xFF, sof, 0, 0].to_vec();
        assert_eq!(cost_estimate(&file(0xC0)), 13);
        assert_eq!(cost_estimate(&file(0xC2)), 52);
        assert_eq!(cost_estimate(&file(0xC1)), 13);
        assert_eq!(cost_estimate(b"\x89PNG rest"), 9);
        // A length running past the end stops the walk.
        assert_eq!(
            cost_estimate(&[0xFF, 0xD8, 0xFF, 0xE1, 0xFF, 0xFF, 0xFF, 0xC2]),
            8
        );
    }
}
