//! PNGs rewritten for the `png` crate so that it reads what Pillow reads.
//!
//! IHDR: Pillow ignores the compression method and takes any interlace method but 0 as Adam7.
//!
//! A palette image's colours are the last PLTE before the image data (all black without one) and
//! its transparency the last tRNS Pillow read (also after the image data), where the crate
//! refuses a second PLTE or none and takes the first tRNS: the rewrite keeps Pillow's, just
//! before the image data.
//!
//! An APNG whose first frame is only part of the image (its fcTL before the image data smaller
//! than IHDR, or offset), or whose image data is fdAT chunks with no IDAT: the APNG spec allows
//! neither; Pillow decodes the frame into its place on a zero-filled image. The frame's chunks
//! are rewritten as a PNG of the frame's size and decoded as any PNG, and the rest of the image
//! is the zero sample, decoded from a 1x1 PNG with the same chunks (so a palette's first colour
//! or a tRNS applies to it as Pillow's conversion applies it).
use super::alloc::{self, AllocError};
use super::decode::{no_memory, DecodeError, Raw};

fn be32(b: &[u8], at: usize) -> usize {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as usize
}

fn push_chunk(out: &mut Vec<u8>, kind: &[u8], body: &[u8]) {
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(body);
    let crc = super::png::crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// A zlib stream holding `raw` (a few bytes) in one stored (uncompressed) block.
fn stored_zlib(raw: &[u8]) -> Vec<u8> {
    let (mut a, mut b) = (1u32, 0u32);
    for &v in raw {
        a = (a + u32::from(v)) % 65521;
        b = (b + a) % 65521;
    }
    let len = raw.len() as u16;
    let mut z = vec![0x78, 0x01, 0x01];
    z.extend_from_slice(&len.to_le_bytes());
    z.extend_from_slice(&(!len).to_le_bytes());
    z.extend_from_slice(raw);
    z.extend_from_slice(&((b << 16) | a).to_be_bytes());
    z
}

/// How `rewrite` changes a PNG.
#[derive(Default, Clone, Copy)]
pub(super) struct Rewrite<'a> {
    /// IHDR's width and height.
    pub size: Option<[u32; 2]>,
    /// The image data replaced by this one row (a filter byte and one pixel's zero samples)
    /// of a 1x1 non-interlaced image.
    pub zero_row: Option<&'a [u8]>,
    /// The image data replaced by this zlib stream (`png_idat`: the rows Pillow decodes).
    pub idat: Option<&'a [u8]>,
    /// The one PLTE and the one tRNS, in place of every PLTE and tRNS, just before the image
    /// data.
    pub plte: Option<&'a [u8]>,
    pub trns: Option<&'a [u8]>,
}

/// The chunks up to `end` (all whole, but for a last image data chunk that the file cuts short)
/// as a PNG of the first frame only: acTL and fcTL left out, the first run of image data chunks
/// as IDAT (fdAT without its sequence number) and later ones left out (Pillow skips them), IEND
/// at the end; with the changes of `how`.
pub(super) fn rewrite(data: &[u8], end: usize, how: Rewrite<'_>) -> Result<Vec<u8>, AllocError> {
    // No longer than the chunks it rewrites, but for the IDAT, tRNS and IEND it may add.
    let extra = [how.zero_row, how.plte, how.trns, how.idat]
        .map(|c| c.map_or(0, <[u8]>::len))
        .iter()
        .sum::<usize>();
    let mut out = alloc::with_capacity(end + extra + 64 + how.idat.map_or(0, |z| z.len() >> 28))?;
    out.extend_from_slice(&data[..8]);
    let mut i = 8;
    // 0: before the image data, 1: in its first run of chunks, 2: after it
    let mut run = 0;
    let mut pushed = false;
    while let Some(head) = data[..end].get(i..i + 8) {
        let (len, kind) = (be32(head, 0), &head[4..]);
        let image_data = kind == b"IDAT" || kind == b"fdAT";
        // Pillow reads what there is of a cut image data chunk (`png_idat` decides whether
        // that is enough), and nothing after it.
        let Some(body) = data[..end]
            .get(i + 8..i + 8 + len)
            .or_else(|| data[..end].get(i + 8..).filter(|_| image_data && run < 2))
        else {
            break;
        };
        if run == 0 && image_data {
            if let Some(p) = how.plte {
                push_chunk(&mut out, b"PLTE", p);
            }
            if let Some(t) = how.trns {
                push_chunk(&mut out, b"tRNS", t);
            }
        }
        let first_of_run = run == 0 && image_data;
        run = match (run, image_data) {
            (0, true) => 1,
            (1, false) => 2,
            (r, _) => r,
        };
        match kind {
            b"IHDR" => {
                let mut ihdr = body.to_vec();
                if let Some([w, h]) = how.size {
                    ihdr[..4].copy_from_slice(&w.to_be_bytes());
                    ihdr[4..8].copy_from_slice(&h.to_be_bytes());
                }
                ihdr[10] = 0;
                ihdr[12] = u8::from(how.zero_row.is_none() && ihdr[12] != 0);
                push_chunk(&mut out, kind, &ihdr);
            }
            b"acTL" | b"fcTL" => {}
            b"PLTE" if how.plte.is_some() => {}
            b"tRNS" if how.trns.is_some() => {}
            b"IDAT" | b"fdAT" => match (how.zero_row, how.idat) {
                (Some(row), _) if first_of_run => {
                    push_chunk(&mut out, b"IDAT", &stored_zlib(row));
                }
                (None, Some(z)) if first_of_run => {
                    push_idat(&mut out, z);
                    pushed = true;
                }
                (None, None) if run == 1 => {
                    let skip = if kind == b"fdAT" { 4 } else { 0 };
                    push_chunk(&mut out, b"IDAT", body.get(skip..).unwrap_or_default());
                }
                _ => {}
            },
            _ => push_chunk(&mut out, kind, body),
        }
        i += 12 + len;
    }
    if let (Some(z), false) = (how.idat, pushed) {
        push_idat(&mut out, z);
    }
    push_chunk(&mut out, b"IEND", &[]);
    Ok(out)
}

/// A zlib stream as IDAT chunks of at most 1 GiB (a chunk's length is under 2^31).
fn push_idat(out: &mut Vec<u8>, zlib: &[u8]) {
    for part in zlib.chunks(1 << 30) {
        push_chunk(out, b"IDAT", part);
    }
}

/// Decodes the first frame `[x, y, width, height]` of the PNG `data` (its chunks whole up to
/// `end`) onto a `width` x `height` image of IHDR's `depth`, `color` type and interlacing, as
/// Pillow does;
/// `palette` is a palette image's PLTE and tRNS as Pillow takes them.
#[allow(clippy::too_many_arguments)]
pub(super) fn partial_frame(
    data: &[u8],
    end: usize,
    frame: [u32; 4],
    (width, height): (usize, usize),
    (depth, color, interlaced): (u8, u8, bool),
    palette: Rewrite<'_>,
    max_pixels: Option<u64>,
) -> Result<Raw, DecodeError> {
    let [x, y, w, h] = frame.map(|v| v as usize);
    if interlaced {
        // Pillow's Adam7 decoding into a tile that is not the whole image does not put every
        // pass where the spec would, and that is not reproduced: refuse rather than differ.
        return Err(DecodeError::Unsupported(
            "PNG",
            "an interlaced APNG first frame that covers only part of the image".into(),
        ));
    }
    if x + w > width || y + h > height {
        // Only where an IHDR between the fcTL and the image data changed the size.
        return Err(DecodeError::Corrupt(
            "PNG",
            format!("APNG contains invalid frames: {w}x{h} at ({x}, {y}) in {width}x{height}"),
        ));
    }
    let samples = match color {
        2 => 3,
        4 => 2,
        6 => 4,
        _ => 1,
    };
    let zero_row = vec![0; 1 + (samples * usize::from(depth)).div_ceil(8)];
    let no_memory = |e| no_memory(width, height, e);
    let how = Rewrite {
        size: Some([frame[2], frame[3]]),
        ..palette
    };
    let part = rewrite(data, end, how).map_err(no_memory)?;
    let part = super::png::decode(&part, max_pixels)?;
    let how = Rewrite {
        size: Some([1, 1]),
        zero_row: Some(&zero_row),
        ..palette
    };
    let zero = rewrite(data, end, how).map_err(no_memory)?;
    let zero = super::png::decode(&zero, max_pixels)?;
    let (part, zero) = (part.raw, zero.raw);
    let c = part.kind.channels();
    if (part.width, part.height) != (w, h) || zero.kind != part.kind {
        return Err(DecodeError::Corrupt(
            "PNG",
            "the APNG's first frame does not decode to its fcTL's size".into(),
        ));
    }
    let len = alloc::product(&[width, height, c]).map_err(no_memory)?;
    let mut pixels = alloc::with_capacity(len).map_err(no_memory)?;
    for _ in 0..width * height {
        pixels.extend_from_slice(&zero.pixels);
    }
    for (row, src) in part.pixels.chunks_exact(w * c).enumerate() {
        let at = ((y + row) * width + x) * c;
        pixels[at..at + w * c].copy_from_slice(src);
    }
    Ok(Raw {
        width,
        height,
        kind: part.kind,
        pixels,
        // Set by `png::decode` from the file's own IHDR (the decodes here see rewritten ones).
        over_default_max_pixels: false,
    })
}
