//! PNG decoding with the image-rs `png` crate. PNG is lossless, so any correct decoder gives the
//! file's samples; what must match Pillow is how they become 8-bit channels, done here per
//! Pillow's PngImagePlugin modes: 16-bit RGB/RGBA/LA keep the high byte ("RGB;16B"), 16-bit gray
//! opens as "I;16" and is clamped to 255 when converted to 8-bit (Pillow's I;16 -> L), gray of
//! 1, 2 and 4 bits is scaled to 0..255, palettes are expanded, and tRNS becomes an alpha channel.
use super::decode::{check_pixels, DecodeError, Raw, RawKind};
use png::{BitDepth, ColorType, Transformations};
use std::io::Cursor;

fn map_err(e: png::DecodingError) -> DecodeError {
    match e {
        png::DecodingError::IoError(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => {
            DecodeError::Truncated("PNG", err.to_string())
        }
        png::DecodingError::IoError(err) => DecodeError::Truncated("PNG", err.to_string()),
        png::DecodingError::Format(f) => DecodeError::Corrupt("PNG", f.to_string()),
        png::DecodingError::Parameter(p) => DecodeError::Corrupt("PNG", p.to_string()),
        png::DecodingError::LimitsExceeded => DecodeError::Resources(
            "the PNG needs more memory than its declared size allows; it is corrupt".into(),
        ),
    }
}

/// The EXIF block of an eXIf chunk, if any (for the orientation).
pub struct PngOut {
    pub raw: Raw,
    pub exif: Option<Vec<u8>>,
}

pub fn decode(data: &[u8], max_pixels: Option<u64>) -> Result<PngOut, DecodeError> {
    // The size is checked from IHDR (always the first chunk) before the decoder reads further.
    if let Some(ihdr) = data.get(16..24) {
        let w = u32::from_be_bytes([ihdr[0], ihdr[1], ihdr[2], ihdr[3]]) as usize;
        let h = u32::from_be_bytes([ihdr[4], ihdr[5], ihdr[6], ihdr[7]]) as usize;
        if w > 0 && h > 0 {
            check_pixels(w, h, max_pixels)?;
        }
    }
    let mut decoder = png::Decoder::new(Cursor::new(data));
    decoder.set_transformations(Transformations::EXPAND);
    // The crate's default cap (64 MiB) would refuse large legitimate images; the pixel limit
    // below is the real guard, so allow what that many 16-bit RGBA pixels take.
    let cap = max_pixels.map_or(usize::MAX, |m| {
        usize::try_from(m.saturating_mul(8).saturating_add(1 << 20)).unwrap_or(usize::MAX)
    });
    decoder.set_limits(png::Limits { bytes: cap });
    let mut reader = decoder.read_info().map_err(map_err)?;
    let info = reader.info();
    let (width, height) = (info.width as usize, info.height as usize);
    check_pixels(width, height, max_pixels)?;
    let gray16 = info.color_type == ColorType::Grayscale && info.bit_depth == BitDepth::Sixteen;
    let exif = info.exif_metadata.as_ref().map(|e| e.to_vec());
    let (color, depth) = reader.output_color_type();
    let size = reader.output_buffer_size().ok_or_else(|| {
        DecodeError::Resources(format!("a {width}x{height} PNG does not fit in memory"))
    })?;
    let mut buf = vec![0u8; size];
    reader.next_frame(&mut buf).map_err(map_err)?;
    let mut kind = match color {
        ColorType::Grayscale => RawKind::L,
        ColorType::GrayscaleAlpha => RawKind::La,
        ColorType::Rgb => RawKind::Rgb,
        ColorType::Rgba => RawKind::Rgba,
        ColorType::Indexed => {
            return Err(DecodeError::Corrupt(
                "PNG",
                "palette image left unexpanded (missing PLTE chunk)".into(),
            ))
        }
    };
    let pixels = if depth == BitDepth::Sixteen {
        let samples = buf.chunks_exact(2);
        if gray16 {
            // Pillow: "I;16" -> "L" clamps (values above 255 become 255). The tRNS alpha, if the
            // expansion added one, is a 16-bit sample: its high byte like Pillow's "LA;16B".
            let per = kind.channels();
            samples
                .enumerate()
                .map(|(i, s)| {
                    let v = u16::from_be_bytes([s[0], s[1]]);
                    if per == 2 && i % 2 == 1 {
                        s[0]
                    } else {
                        v.min(255) as u8
                    }
                })
                .collect()
        } else if kind == RawKind::La {
            // Pillow opens 16-bit gray+alpha as RGBA ("LA;16B" unpacks to L, L, L, A).
            let hi: Vec<u8> = samples.map(|s| s[0]).collect();
            let mut rgba = Vec::with_capacity(hi.len() * 2);
            for p in hi.chunks_exact(2) {
                rgba.extend_from_slice(&[p[0], p[0], p[0], p[1]]);
            }
            kind = RawKind::Rgba;
            rgba
        } else {
            samples.map(|s| s[0]).collect()
        }
    } else {
        buf.truncate(width * height * kind.channels());
        buf
    };
    Ok(PngOut {
        raw: Raw {
            width,
            height,
            kind,
            pixels,
        },
        exif,
    })
}
